"""Cold start: the time from ``import sklearn_xai`` to the first finished explanation.

Every explainer (and shap's ``TreeExplainer`` for comparison) runs in fresh subprocesses
with one thread (``OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS=1``):

* ``cold``: a new process and an empty temporary ``NUMBA_CACHE_DIR``; the clock starts
  just before ``import sklearn_xai`` (the model is fitted before, so scikit-learn's own
  import is not counted) and stops when the first ``explain`` has returned (``fit``
  included);
* ``warm``: the same process, a second explainer fitted and explaining the same rows
  (everything compiled and imported);
* ``cached``: a second new process on the numba cache the cold one filled.

Each cell reports wall-clock seconds and the CPU seconds of the process (all its
threads). ``compiled`` counts the numba signatures compiled in the cold process
(cache misses of every numba dispatcher in a ``sklearn_xai`` module), ``loaded``
those the cached process took from the cache. shap's row times ``import shap``,
``shap.TreeExplainer(model)`` and its first call on the same rows and model as
TreeSHAP's.

Models (fitted before the clock starts, 300 rows x 10 features, binary target):
HistGradientBoostingClassifier(max_iter=20) for TreeSHAP (path-dependent, the default,
and ``imputation="marginal"``) and shap; LogisticRegression for the others. Each
explainer runs with its default parameters (``random_state=0``), on 5 rows.

Usage::

    python benchmarks/bench_cold_start.py --quick      # one round
    python benchmarks/bench_cold_start.py --repeats 3  # medians of 3 rounds
    python benchmarks/bench_cold_start.py --only TreeShapExplainer,shap

Rounds interleave the explainers (every explainer once, then again), so a change of
machine load spreads over all of them; medians are reported.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# name -> (module, class, model kind, extra parameters)
CASES = {
    "TreeShapExplainer": ("sklearn_xai.tree", "TreeShapExplainer", "hgb", {}),
    "TreeShapExplainer (marginal)": ("sklearn_xai.tree", "TreeShapExplainer", "hgb",
                                     {"imputation": "marginal"}),
    "ShearExplainer": ("sklearn_xai.shapley", "ShearExplainer", "logistic",
                       {"random_state": 0}),
    "KnockoffSHAP": ("sklearn_xai.shapley", "KnockoffSHAP", "logistic",
                     {"random_state": 0}),
    "KnockoffSAGE": ("sklearn_xai.shapley", "KnockoffSAGE", "logistic",
                     {"random_state": 0}),
    "MaceRecourse": ("sklearn_xai.recourse", "MaceRecourse", "logistic",
                     {"random_state": 0}),
    "P2CERecourse": ("sklearn_xai.recourse", "P2CERecourse", "logistic",
                     {"random_state": 0}),
    "shap": (None, None, "hgb", {}),
}

CHILD = r"""
import json, os, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
case = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 10))
y = (X[:, 0] + X[:, 1] * X[:, 2] - X[:, 3] > 0).astype(int)
if case["model"] == "hgb":
    from sklearn.ensemble import HistGradientBoostingClassifier
    model = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
else:
    from sklearn.linear_model import LogisticRegression
    model = LogisticRegression().fit(X, y)
rows = X[y == 0][:5]  # rejected rows: recourse has something to do
labels = y[y == 0][:5]


def wall_cpu():
    return time.perf_counter(), time.process_time()


def numba_counts():
    hits = misses = 0
    for name, mod in list(sys.modules.items()):
        if not name.startswith("sklearn_xai") or mod is None:
            continue
        for obj in vars(mod).values():
            if hasattr(obj, "_cache_misses") and hasattr(obj, "signatures"):
                misses += sum(obj._cache_misses.values())
                hits += sum(obj._cache_hits.values())
    return misses, hits


def run():
    if case["module"] is None:
        import shap
        return shap.TreeExplainer(model)(rows)
    import importlib
    import sklearn_xai  # noqa: F401
    cls = getattr(importlib.import_module(case["module"]), case["cls"])
    from sklearn.frozen import FrozenEstimator
    explainer = cls(FrozenEstimator(model), **case["params"]).fit(X)
    if case["cls"] == "KnockoffSAGE":  # global: the loss of the labelled rows
        return explainer.explain(rows, labels)
    return explainer.explain(rows)


w0, c0 = wall_cpu()
run()
w1, c1 = wall_cpu()
run()
w2, c2 = wall_cpu()
misses, hits = numba_counts()
print(json.dumps({"wall": w1 - w0, "cpu": c1 - c0, "warm_wall": w2 - w1,
                  "warm_cpu": c2 - c1, "misses": misses, "hits": hits}))
"""


def child(case, cache_dir):
    module, cls, model, params = case
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=ROOT,
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1")
    arg = json.dumps({"module": module, "cls": cls, "model": model, "params": params})
    out = subprocess.run([sys.executable, "-c", CHILD, arg], env=env, capture_output=True,
                         text=True, cwd=ROOT)
    if out.returncode:
        raise RuntimeError(f"{cls} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def one_round(name):
    with tempfile.TemporaryDirectory(prefix="numba_cold_") as cache:
        cold = child(CASES[name], cache)
        cached = child(CASES[name], cache)
    return cold, cached


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=None, help="comma-separated case names")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    names = list(CASES) if args.only is None else args.only.split(",")
    for name in names:
        if name not in CASES:
            parser.error(f"unknown case {name!r}; choose from {', '.join(CASES)}")

    import numba
    import sklearn

    try:
        import shap
        shap_version = shap.__version__
    except ImportError:
        shap_version = "not installed"
        names = [n for n in names if n != "shap"]
    load = os.getloadavg()
    print(f"# Cold start, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"{repeats} round(s), medians; one thread")
    print(f"# python {platform.python_version()}, numpy {np.__version__}, numba "
          f"{numba.__version__}, sklearn {sklearn.__version__}, shap {shap_version}")
    print(f"# machine: {platform.machine()}, {os.cpu_count()} CPUs visible, load average "
          f"at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    results = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            results[name].append(one_round(name))
    print("| explainer | cold wall s | cold CPU s | compiled | warm s | cached wall s "
          "| loaded |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        runs = results[name]

        def med(key, which=0, runs=runs):
            return float(np.median([r[which][key] for r in runs]))

        print(f"| {name} | {med('wall'):.1f} | {med('cpu'):.1f} | {med('misses'):.0f} | "
              f"{med('warm_wall'):.2f} | {med('wall', 1):.1f} | {med('hits', 1):.0f} |")
    load = os.getloadavg()
    print(f"# load average at end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")


if __name__ == "__main__":
    main()
