"""Threads inside an explainer's workers: OpenMP/BLAS oversubscription, before and after.

A ``HistGradientBoostingClassifier`` (100 trees; its ``predict_proba`` runs on OpenMP
threads) is explained by ``ShearExplainer`` with ``max_model_rows=1``, so that every
coalition is a one-row model call, the case where thread start-up costs most. Measured
side by side in one process, repeats interleaved, medians:

1. one-row ``predict_proba``: the process default (one OpenMP thread per core) against
   one thread (``threadpoolctl.threadpool_limits(1)``);
2. ``ShearExplainer(n_jobs=2)``: "before", the batches on joblib workers as they ran
   before the explainers limited their workers (the model's threads as each worker finds
   them), against "after", each worker running the model with one OpenMP/BLAS thread (the
   base's ``_map_tasks``); with joblib's threading backend, its default loky backend, and
   loky with ``inner_max_num_threads=2`` (what loky gives each of two workers on a
   machine with four cores or more);
3. ``n_jobs=None``: the caller's settings (left alone by the explainers) against the same
   call under ``threadpool_limits(1)``, the advice of the scaling guide.

The values are checked equal in every configuration. Run
``python benchmarks/bench_threads.py --quick`` (about a minute on 2 cores) or without
``--quick`` (more rows and repeats). Unlike the other benchmarks it does not set
``OMP_NUM_THREADS``: the threads are what it measures (it refuses to run when the variable
is set, as the default would then not be the library's).
"""

import argparse
import contextlib
import datetime
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import joblib  # noqa: E402
import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.utils.parallel import Parallel, delayed  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

from sklearn_xai import ShearExplainer  # noqa: E402


class BeforeShear(ShearExplainer):
    """ShearExplainer with the batching as it was before the workers were limited: the
    batches through joblib, nothing about threads."""

    def _map_tasks(self, func, items, args=(), *, sizes=None, **parallel_params):
        items = list(items)
        if len(items) <= 1 or self.n_jobs in (None, 1):
            return [func(item, *args) for item in items]
        return Parallel(n_jobs=self.n_jobs, **parallel_params)(
            delayed(func)(item, *args) for item in items)


def _median_time(func, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        func()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _side_by_side(cases, repeats):
    """``{name: median seconds}`` of the callables ``cases``, run in turns."""
    times = {name: [] for name in cases}
    for _ in range(repeats):
        for name, func in cases.items():
            t0 = time.perf_counter()
            func()
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="16 explained rows, 3 repeats (default: 48 rows, 5 repeats)")
    args = parser.parse_args(argv)
    if any(os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")):
        sys.exit("unset OMP_NUM_THREADS / OPENBLAS_NUM_THREADS: this benchmark measures "
                 "the default threads against limited ones")
    n_rows, repeats = (16, 3) if args.quick else (48, 5)

    X, y = make_classification(n_samples=2000, n_features=6, n_informative=4,
                               random_state=0)
    model = HistGradientBoostingClassifier(max_iter=100, random_state=0).fit(X, y)
    openmp = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "openmp"]
    print(f"# Threads benchmark ({'quick' if args.quick else 'full'}), "
          f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC")
    print(f"# python {platform.python_version()}, numpy {np.__version__}, sklearn "
          f"{sklearn.__version__}, joblib {joblib.__version__}")
    print(f"# machine: {platform.machine()}, {os.cpu_count()} CPUs visible; default OpenMP "
          f"threads {openmp}; HistGradientBoostingClassifier 100 trees, 6 features")

    # 1. one-row model calls
    row = X[:1]
    one = {"default threads": lambda: model.predict_proba(row)}

    def limited():
        with threadpool_limits(limits=1):
            model.predict_proba(row)

    one["1 thread"] = limited
    for f in one.values():  # warm-up
        f()
    calls = 100 if args.quick else 300
    per_call = _side_by_side({k: (lambda f=f: [f() for _ in range(10)])
                              for k, f in one.items()}, calls // 10)
    print("\n## One-row predict_proba, median of blocks of 10 calls (ms per call)")
    for name, t in per_call.items():
        print(f"{name:>16}: {1e3 * t / 10:7.2f}")
    print(f"{'ratio':>16}: {per_call['default threads'] / per_call['1 thread']:7.2f}x")

    # 2. n_jobs=2, before and after
    params = {"n_evals": 8, "max_model_rows": 1, "batch_size": max(1, n_rows // 4),
              "random_state": 0}
    frozen = FrozenEstimator(model)
    rows = X[:n_rows]
    reference = ShearExplainer(frozen, **params).fit(X).explain(rows).values
    print(f"\n## ShearExplainer(n_evals=8, max_model_rows=1, n_jobs=2) on {n_rows} rows "
          f"(each coalition a one-row call; median of {repeats}, s)")
    print(f"{'backend':>34} {'before':>8} {'after':>8} {'ratio':>7}")
    backends = {"threading": {"backend": "threading"},
                "loky (default)": {"backend": "loky"},
                "loky, inner_max_num_threads=2": {"backend": "loky",
                                                  "inner_max_num_threads": 2}}
    for label, config in backends.items():
        explainers = {"before": BeforeShear(frozen, n_jobs=2, **params).fit(X),
                      "after": ShearExplainer(frozen, n_jobs=2, **params).fit(X)}

        def run(exp, config=config):
            with joblib.parallel_config(**config):
                values = exp.explain(rows).values
            np.testing.assert_allclose(values, reference, rtol=1e-12, atol=1e-15)

        for exp in explainers.values():
            run(exp)  # starts the workers
        t = _side_by_side({k: (lambda e=e: run(e)) for k, e in explainers.items()}, repeats)
        print(f"{label:>34} {t['before']:8.2f} {t['after']:8.2f} "
              f"{t['before'] / t['after']:6.2f}x")

    # 3. n_jobs=None: the caller's settings, or one thread as the guide advises
    exp = ShearExplainer(frozen, **params).fit(X)

    def under_limit():
        with threadpool_limits(limits=1):
            return exp.explain(rows)

    cases = {"caller's default": lambda: exp.explain(rows), "threadpool_limits(1)": under_limit}
    t = _side_by_side(cases, repeats)
    print(f"\n## ShearExplainer(n_jobs=None), same call (median of {repeats}, s)")
    for name, s in t.items():
        print(f"{name:>22}: {s:6.2f}")
    print(f"{'ratio':>22}: {t[next(iter(t))] / t['threadpool_limits(1)']:6.2f}x")
    with contextlib.suppress(Exception):
        joblib.externals.loky.get_reusable_executor().shutdown(wait=True)


if __name__ == "__main__":
    main()
