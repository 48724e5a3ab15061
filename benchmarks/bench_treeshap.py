"""Benchmark TreeShapExplainer against XGBoost ``pred_contribs``, LightGBM ``pred_contrib``
and shap's C++ TreeExplainer (when installed), on the Adult data.

Usage::

    NUMBA_CACHE_DIR=/tmp/numba python benchmarks/bench_treeshap.py --quick

Models: XGBoost 500 trees depth 6 and depth 8, LightGBM 500 trees 63 leaves,
RandomForest 100 trees unlimited depth (20 in --quick), HistGradientBoosting.
Ours and theirs are timed interleaved in the same process (ours, theirs, ours,
theirs; best of each), at one thread and at all threads. Reported: rows/s, the
ratio, the max abs difference to each reference, peak RSS increase of one call
(Linux ``VmHWM``), and numba compile / cache-load time (separately, in fresh
subprocesses).

``--interventional`` runs the interventional (background) comparison instead, side by
side in one process on one thread: ours (``fit`` on the background + ``explain``)
against woodelf-explainer's ``WoodelfExplainer(model, background).shap_values(rows)``
(which includes its own preprocessing), on an XGBoost regressor with 100 trees of
depth 6 on 20 synthetic features, at several background sizes; plus our path-dependent
values against XGBoost's ``pred_contribs`` on the same model. woodelf-explainer is not
one of our dependencies: install it in a separate benchmark-only environment::

    python3 -m venv /tmp/benchenv
    /tmp/benchenv/bin/pip install numpy numba scikit-learn scipy pandas joblib \
        xgboost-cpu woodelf-explainer==0.4.8
    /tmp/benchenv/bin/pip install -e . --no-deps
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        NUMBA_CACHE_DIR=/tmp/numba /tmp/benchenv/bin/python benchmarks/bench_treeshap.py \
        --interventional
"""

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _memory import reset_peak, status_mib  # noqa: E402


def measure(func):
    """(seconds, result, peak RSS increase in MiB) of one call."""
    ok = reset_peak()
    before = status_mib("VmRSS")
    t0 = time.perf_counter()
    out = func()
    dt = time.perf_counter() - t0
    peak = status_mib("VmHWM") - before if ok else float("nan")
    return dt, out, peak


def load_data(n_train):
    from sklearn_xai.datasets import load_adult

    X, y = load_adult(subset="all")
    Z = X.copy()
    for c in Z.columns:
        if str(Z[c].dtype) == "category":
            Z[c] = Z[c].cat.codes.astype(float).replace(-1, np.nan)
    Z = Z.to_numpy(np.float64)
    y = np.asarray(y)
    return Z[:n_train], y[:n_train], Z[32561:]  # explain rows from the test split


def compile_times():
    code = ("import numpy as np, time; t=time.perf_counter();"
            "from sklearn.ensemble import GradientBoostingRegressor as G;"
            "from sklearn.frozen import FrozenEstimator as F;"
            "from sklearn_xai.tree import TreeShapExplainer as T;"
            "X=np.random.rand(50,3); m=G(n_estimators=2).fit(X,X[:,0]);"
            "T(F(m)).fit(X).explain(X[:3]); print(time.perf_counter()-t)")
    root = os.path.join(os.path.dirname(__file__), "..")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=root)
        cold = float(subprocess.check_output([sys.executable, "-c", code], env=env))
        warm = float(subprocess.check_output([sys.executable, "-c", code], env=env))
    return cold, warm


def _median_time(func, repeats):
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = func()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def interventional(args):
    """Interventional TreeSHAP, ours against woodelf-explainer, one thread, one process."""
    import numba
    import pandas as pd
    import sklearn
    import xgboost as xgb
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai.tree import TreeShapExplainer

    try:
        import woodelf
        from woodelf.explainer import WoodelfExplainer
    except ImportError:
        woodelf = WoodelfExplainer = None
    numba.set_num_threads(1)
    n_rows = args.rows
    backgrounds = [int(b) for b in args.backgrounds.split(",")]
    rng = np.random.default_rng(0)
    M = 20
    X = rng.normal(size=(20_000 + n_rows + max(backgrounds), M))
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + np.abs(X[:, 4])
         + 0.1 * rng.normal(size=len(X)))
    model = xgb.XGBRegressor(n_estimators=100, max_depth=6, n_jobs=1, random_state=0)
    model.fit(X[:20_000], y[:20_000])
    rows = X[20_000:20_000 + n_rows]
    pool = X[20_000 + n_rows:]
    cols = [f"f{j}" for j in range(M)]
    wversion = getattr(woodelf, "__version__", None)
    if woodelf is not None and wversion is None:
        from importlib.metadata import version

        wversion = version("woodelf-explainer")
    load0 = os.getloadavg()
    print(f"# Interventional TreeSHAP, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"one thread (numba 1 thread, xgboost nthread=1, OMP/BLAS env)")
    print(f"# python {platform.python_version()}, numpy {np.__version__}, numba "
          f"{numba.__version__}, sklearn {sklearn.__version__}, xgboost {xgb.__version__}, "
          f"pandas {pd.__version__}, woodelf-explainer {wversion or 'not installed'}")
    print(f"# machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs "
          f"visible (shared with other jobs), load average at start "
          f"{load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} (1/5/15 min)")
    print(f"# model: XGBRegressor 100 trees, max_depth 6, {M} features; {n_rows:,} explained "
          f"rows; median of {args.repeats} rounds (each times every size, ours then "
          f"woodelf); ours = fit(background) + "
          "explain(rows), woodelf = WoodelfExplainer(model, background).shap_values(rows)")

    def ours(bg):
        exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                                n_jobs=1).fit(bg)
        return exp.explain(rows).values, exp

    def theirs(bg):
        w = WoodelfExplainer(model, pd.DataFrame(bg, columns=cols))
        return np.asarray(w.shap_values(pd.DataFrame(rows, columns=cols), verbose=False))

    ours(pool[:50])  # load the kernels
    if WoodelfExplainer is not None:
        theirs(pool[:50])
    print("| background rows | ours s | ours rows/s | woodelf s | woodelf rows/s | ratio "
          "| max abs diff | ours algorithm, tables MiB |")
    print("|" + "---|" * 8)
    # rounds outermost: every background size is timed once per round, so slow drifts of
    # the machine's load hit all sizes alike
    t_o = {m: [] for m in backgrounds}
    t_w = {m: [] for m in backgrounds}
    last = {}
    for _ in range(args.repeats):
        for m in backgrounds:
            bg = pool[:m]
            t0 = time.perf_counter()
            out_o, exp = ours(bg)
            t_o[m].append(time.perf_counter() - t0)
            out_w = None
            if WoodelfExplainer is not None:
                t0 = time.perf_counter()
                out_w = theirs(bg)
                t_w[m].append(time.perf_counter() - t0)
            last[m] = (out_o, out_w, exp)
    for m in backgrounds:
        out_o, out_w, exp = last[m]
        to = float(np.median(t_o[m]))
        tail = f"{exp.algorithm_}, {exp.table_nbytes_ / 2**20:.1f} |"
        if t_w[m]:
            tw = float(np.median(t_w[m]))
            diff = np.abs(out_o - out_w).max()
            line = (f"| {m:,} | {to:.3f} | {n_rows / to:,.0f} | {tw:.3f} | {n_rows / tw:,.0f} | "
                    f"**{tw / to:.1f}x** | {diff:.1e} | {tail}")
        else:
            line = f"| {m:,} | {to:.3f} | {n_rows / to:,.0f} | – | – | – | – | {tail}"
        print(line, flush=True)
    for a, b in zip(backgrounds, backgrounds[1:], strict=False):
        if b == 2 * a:
            per_round = np.asarray(t_o[b]) / np.asarray(t_o[a])
            print(f"# doubling the background {a:,} -> {b:,} at {n_rows:,} rows: ours "
                  f"{np.median(t_o[b]) / np.median(t_o[a]):.2f}x the time (ratio of "
                  f"medians; per round median {np.median(per_round):.2f}x, max "
                  f"{per_round.max():.2f}x)")
    # path-dependent against XGBoost's own TreeSHAP, same model
    booster = model.get_booster()
    booster.set_param({"nthread": 1})
    path = TreeShapExplainer(FrozenEstimator(model), n_jobs=1).fit(pool[:100])
    path.explain(rows[:10])
    n_ref = min(n_rows, 2_000)
    t_p, t_x = [], []
    for _ in range(args.repeats):
        dt, vals = _median_time(lambda: path.explain(rows).values, 1)
        t_p.append(dt)
        dt, ref = _median_time(lambda: booster.predict(xgb.DMatrix(rows[:n_ref]),
                                                       pred_contribs=True)[:, :-1], 1)
        t_x.append(dt)
    rp, rx = n_rows / np.median(t_p), n_ref / np.median(t_x)
    print(f"# path-dependent on the same model: ours {rp:,.0f} rows/s, xgboost "
          f"pred_contribs {rx:,.0f} rows/s, ratio {rp / rx:.1f}x, max abs diff "
          f"{np.abs(vals[:n_ref] - ref).max():.1e}")
    load1 = os.getloadavg()
    print(f"# load average at end {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f}")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer rows and forest trees")
    ap.add_argument("--models", default="xgb_d6,xgb_d8,lgbm,rf,hgb")
    ap.add_argument("--interventional", action="store_true",
                    help="interventional values against woodelf-explainer instead")
    ap.add_argument("--rows", type=int, default=5_000,
                    help="explained rows (--interventional)")
    ap.add_argument("--backgrounds", default="100,1000,2000,10000,20000",
                    help="background sizes (--interventional)")
    ap.add_argument("--repeats", type=int, default=7, help="repeats (--interventional)")
    args = ap.parse_args(argv)
    if args.interventional:
        return interventional(args)

    import lightgbm as lgb
    import numba
    import sklearn
    import xgboost as xgb
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai.tree import TreeShapExplainer

    try:
        import shap
    except ImportError:
        shap = None

    quick = args.quick
    n_train = 10_000 if quick else 20_000
    n_ours = 2_000 if quick else 10_000
    all_threads = numba.config.NUMBA_NUM_THREADS
    Xtr, ytr, Xte = load_data(n_train)
    Xtr_f = np.nan_to_num(Xtr, nan=-1.0)  # scikit-learn models get NaN-free data
    Xte_f = np.nan_to_num(Xte, nan=-1.0)

    print(f"# TreeSHAP benchmark ({'quick' if quick else 'full'}), "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# python {platform.python_version()}, numpy {np.__version__}, numba "
          f"{numba.__version__}, sklearn {sklearn.__version__}, xgboost {xgb.__version__}, "
          f"lightgbm {lgb.__version__}, shap {getattr(shap, '__version__', 'not installed')}")
    print(f"# machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs "
          f"visible (shared with other jobs); train rows {n_train}, explained rows {n_ours}")
    cold, warm = compile_times()
    print(f"# numba: first use with an empty cache {cold:.1f} s, with the cache {warm:.1f} s "
          "(process start + imports + kernels; not in the timings below)")

    specs = {
        "xgb_d6": ("XGBoost 500 x depth 6", lambda: xgb.XGBClassifier(
            n_estimators=500, max_depth=6, tree_method="hist", n_jobs=all_threads), "xgb"),
        "xgb_d8": ("XGBoost 500 x depth 8", lambda: xgb.XGBClassifier(
            n_estimators=500, max_depth=8, tree_method="hist", n_jobs=all_threads), "xgb"),
        "lgbm": ("LightGBM 500 x 63 leaves", lambda: lgb.LGBMClassifier(
            n_estimators=500, num_leaves=63, verbose=-1, n_jobs=all_threads), "lgb"),
        "rf": (f"RandomForest {20 if quick else 100} trees, unlimited depth",
               lambda: RandomForestClassifier(20 if quick else 100, n_jobs=all_threads,
                                              random_state=0), "shap"),
        "hgb": ("HistGradientBoosting 200 iter", lambda: HistGradientBoostingClassifier(
            max_iter=200, random_state=0), "shap"),
    }
    rows = []
    header = ("| model | threads | ours rows/s | reference | ref rows/s | ratio | max abs diff "
              "| ours peak MiB | ref peak MiB |")
    print(header)
    print("|" + "---|" * 9)
    for key in args.models.split(","):
        title, make, ref = specs[key]
        sk = ref == "shap"
        Xa, Xb = (Xtr_f, Xte_f) if sk else (Xtr, Xte)
        model = make().fit(Xa, ytr)
        exp = TreeShapExplainer(FrozenEstimator(model)).fit(Xa[:100])
        Q = int(exp.n_quadrature_points_.max())
        edge = ("none (every tree has pattern tables)" if exp._tables is None else
                f"{exp._tables.nbytes / 2**20:.1f} MiB")
        print(f"# {title}: {exp.ensemble_.n_nodes:,} nodes, per-edge tables {edge}, "
              f"algorithm {exp.algorithm_} "
              f"(pattern tables {exp.table_nbytes_ / 2**20:.1f} MiB)", flush=True)
        exp.set_params(n_jobs=1).explain(Xb[:5])  # load kernels
        for threads in (1, all_threads):
            exp.set_params(n_jobs=threads)
            if ref == "xgb":
                booster = model.get_booster()
                booster.set_param({"nthread": threads})
                n_ref = (200 if key == "xgb_d8" else 600) * (1 if quick else 5) * threads
                name = "xgboost pred_contribs"

                def theirs(n=n_ref, booster=booster):
                    return booster.predict(xgb.DMatrix(Xb[:n]), pred_contribs=True)[:, :-1]
            elif ref == "lgb":
                n_ref = (1000 if quick else 5000) * threads
                name = "lightgbm pred_contrib"

                def theirs(n=n_ref, threads=threads):
                    return model.predict(Xb[:n], pred_contrib=True,
                                         num_threads=threads)[:, :-1]
            else:
                if shap is None or threads != 1:
                    theirs = None
                    n_ref = 0
                else:
                    n_ref = (30 if key == "rf" else 300) * (1 if quick else 3)
                    name = "shap TreeExplainer (C++)"
                    sx = shap.TreeExplainer(model)

                    def theirs(n=n_ref, sx=sx):
                        v = sx.shap_values(Xb[:n], check_additivity=False)
                        v = np.asarray(v)
                        return v[..., 1] if v.ndim == 3 else v

            def ours(exp=exp):
                return exp.explain(Xb[:n_ours]).values

            best_o, best_t = np.inf, np.inf
            peak_o = peak_t = float("nan")
            out_o = out_t = None
            for _ in range(2):
                dt, out_o, peak_o = measure(ours)
                best_o = min(best_o, dt)
                if theirs is not None:
                    dt, out_t, peak_t = measure(theirs)
                    best_t = min(best_t, dt)
            r_o = n_ours / best_o
            if theirs is not None:
                r_t = n_ref / best_t
                diff = np.abs(out_o[:n_ref] - out_t).max()
                line = (f"| {title} (Q={Q}) | {threads} | {r_o:,.0f} | {name} | {r_t:,.1f} | "
                        f"{r_o / r_t:.1f}x | {diff:.2e} | {peak_o:.1f} | {peak_t:.1f} |")
            else:
                line = (f"| {title} (Q={Q}) | {threads} | {r_o:,.0f} | – | – | – | – | "
                        f"{peak_o:.1f} | – |")
            print(line, flush=True)
            rows.append(line)
    return rows


if __name__ == "__main__":
    main()
