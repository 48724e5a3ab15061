"""P2CE benchmark: German, Taiwan and Adult credit data with LightGBM, an MLP and a logistic
regression; P2CE (plausibility on) and a MAPOCAM-style run (plausibility off) side by side.

Categorical cells (``--datasets adult_cat,adult_cat_na --models hgb_cat,onehot_lr,onehot_hgb``):
the report's default workload (bundled Adult, 12 features of which 7 categorical, ``fnlwgt``
and ``education`` dropped, race / sex / native country / marital status / relationship
immutable) with the report's default model (``hgb_cat``: OrdinalEncoder ->
HistGradientBoostingClassifier with native categorical splits), and one-hot pipelines
(``onehot_lr``: OneHotEncoder + StandardScaler -> logistic regression; ``onehot_hgb``:
OneHotEncoder -> HistGradientBoosting). ``adult_cat`` drops the rows with a missing value,
as the report does; ``adult_cat_na`` keeps them (missing categories in workclass, occupation
and native country).

``--report-model N``: the report's own run of P2CE on its default model (model trained on the
complete rows of the train split, P2CE fitted on the first ``--background`` of them as the
report's ``--background`` default does, the first N rejected rows of the test split, one row
per call, ``time_limit`` 10 s), printing the time per person, the bound and whether every
front completed.

Protocol (after the authors' ``notebooks/experiment_*.py``): 50 % test split (seed 0),
models fitted on the training half, the explained individuals are test rows the model
rejects (sampled with seed 0), ``max_changes=3``, grid p1-p99 with step 0.05, costs
(max_distance, n_changes, mean_distance), contamination 0.05. Reported per individual:
search time (the fit, its isolation forest and SHAP order are excluded), nodes expanded,
the outlier rate judged by a *second* isolation forest fitted on the test half (an
individual counts as an outlier when any returned point is one), the hypervolume of the
(mean_distance, max_distance, n_changes) front normalised by the per-dataset maximum over
both methods with reference point (1.1, 1.1, 1.1) (the authors use (1, 1, 1), which
gives a zero volume to any front whose costs attain the maximum), and the front size.

Usage::

    python benchmarks/bench_p2ce.py --quick          # 5 individuals per cell
    python benchmarks/bench_p2ce.py --n 100          # the issue's setting
    python benchmarks/bench_p2ce.py --n 100 --datasets adult_cat,adult_cat_na \
        --models hgb_cat,onehot_lr,onehot_hgb
    python benchmarks/bench_p2ce.py --report-model 50
    python benchmarks/bench_p2ce.py --wide 120      # tree models on 120 features

Runs on one core (numba, LightGBM and BLAS threads set to 1 before import).
"""

import os

for _v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import platform
import sys
import time
import warnings
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import sklearn
from sklearn.ensemble import IsolationForest
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sklearn_xai.datasets import load_adult, load_shared_dataset
from sklearn_xai.recourse import P2CERecourse

SHARED = os.environ.get("SKLEARN_XAI_SHARED_DATA", "/work/shared/data")


# ----------------------------------------------------------------------------- data
def german():
    """The 27 numeric features of the authors' German preprocessing (sex kept immutable)."""
    df = pd.read_csv(os.path.join(SHARED, "german", "german_processed.csv"))
    y = (df.pop("GoodCustomer") == 1).astype(int).to_numpy()
    df = df.drop(columns="PurposeOfLoan")
    df["isMale"] = (df.pop("Gender") == "Male").astype(int)
    X = df.astype(float)
    immutable = ["Age", "OwnsHouse", "JobClassIsSkilled", "Single", "ForeignWorker",
                 "RentsHouse", "isMale"]
    return X, y, [c for c in immutable if c in X.columns]


def taiwan():
    """11 engineered features close to the authors' Taiwan preprocessing (see notes)."""
    raw, default = load_shared_dataset("taiwan_credit", data_home=SHARED)
    bill = raw[[f"BILL_AMT{k}" for k in range(1, 7)]].to_numpy(float)
    pay = raw[[f"PAY_AMT{k}" for k in range(1, 7)]].to_numpy(float)
    status = raw[["PAY_0"] + [f"PAY_{k}" for k in range(2, 7)]].to_numpy(float)
    limit = raw["LIMIT_BAL"].to_numpy(float)[:, None]
    X = pd.DataFrame({
        "Age": raw["AGE"].to_numpy(float),
        "MaxBillAmountOverLast6Months": bill.max(1),
        "MaxPaymentAmountOverLast6Months": pay.max(1),
        "MonthsWithZeroBalanceOverLast6Months": (bill <= 0).sum(1).astype(float),
        "MonthsWithLowSpendingOverLast6Months": (pay < 0.2 * limit / 6).sum(1).astype(float),
        "MonthsWithHighSpendingOverLast6Months": (pay > 0.8 * limit / 6).sum(1).astype(float),
        "MostRecentBillAmount": bill[:, 0],
        "MostRecentPaymentAmount": pay[:, 0],
        "TotalOverdueCounts": (status > 0).sum(1).astype(float),
        "TotalMonthsOverdue": np.clip(status, 0, None).sum(1),
        "HistoryOfOverduePayments": (status > 0).any(1).astype(float),
    })
    y = (1 - np.asarray(default)).astype(int)  # 1 = no default (the desired outcome)
    return X, y, ["Age"]


def adult():
    """The authors' 8 Adult features (age, capital gain/loss, hours, sex, degree,
    married, government job)."""
    df = load_adult(subset="all")
    if isinstance(df, tuple):
        df, y = df
    else:  # pragma: no cover
        y = df.pop("income_gt_50k")
    edu = df["education_num"].to_numpy(float)
    X = pd.DataFrame({
        "age": df["age"].to_numpy(float),
        "capital_gain": df["capital_gain"].to_numpy(float),
        "capital_loss": df["capital_loss"].to_numpy(float),
        "hours_per_week": df["hours_per_week"].to_numpy(float),
        "is_male": (df["sex"].astype(str) == "Male").to_numpy(float),
        "has_degree": (edu >= 13).astype(float),
        "is_married": df["marital_status"].astype(str).str.startswith("Married").to_numpy(float),
        "gov_job": df["workclass"].astype(str).str.contains("gov").to_numpy(float),
    })
    return X, np.asarray(y).astype(int), ["age", "is_male"]


REPORT_IMMUTABLE = ["race", "sex", "native_country", "marital_status", "relationship"]


def _adult_cat(keep_missing):
    X, y = load_adult(subset="all")
    if not keep_missing:
        keep = X.notna().all(axis=1).to_numpy()
        X, y = X[keep], y[keep]
    X = X.drop(columns=["fnlwgt", "education"]).reset_index(drop=True)
    cat = list(X.select_dtypes("category").columns)
    X = X[cat + [c for c in X.columns if c not in cat]]
    return X, np.asarray(y).astype(int), REPORT_IMMUTABLE


def adult_cat():
    """The report's default workload: 12 Adult features (7 categorical), complete rows."""
    return _adult_cat(False)


def adult_cat_na():
    """As ``adult_cat``, rows with missing categories kept."""
    return _adult_cat(True)


DATASETS = {"german": german, "taiwan": taiwan, "adult": adult, "adult_cat": adult_cat,
            "adult_cat_na": adult_cat_na}
CATEGORICAL_MODELS = ("hgb_cat", "onehot_lr", "onehot_hgb")


def make_categorical_model(name, X):
    """Models on frames with category columns (see the module docstring)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.preprocessing import OneHotEncoder

    from sklearn_xai._report import _gbm_pipeline

    cat = list(X.select_dtypes("category").columns)
    num = [c for c in X.columns if c not in cat]
    if name == "hgb_cat":
        return _gbm_pipeline(cat, num, "hgb", 0)[0]
    onehot = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
    if name == "onehot_lr":
        encode = ColumnTransformer([("cat", onehot, cat), ("num", StandardScaler(), num)])
        return make_pipeline(encode, LogisticRegression(class_weight="balanced",
                                                        max_iter=1000))
    encode = ColumnTransformer([("cat", onehot, cat)], remainder="passthrough")
    return make_pipeline(encode, HistGradientBoostingClassifier(max_iter=100,
                                                                random_state=0))


def _codes(frame):
    """DataFrame -> float matrix (category columns as codes, missing as NaN)."""
    cols = []
    for c in frame.columns:
        col = frame[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy().astype(float)
            codes[codes < 0] = np.nan
            cols.append(codes)
        else:
            cols.append(col.to_numpy(dtype=float, na_value=np.nan))
    return np.column_stack(cols)


def make_model(name):
    if name == "lgbm":
        from lightgbm import LGBMClassifier

        return LGBMClassifier(n_estimators=100, num_leaves=15, learning_rate=0.1,
                              class_weight="balanced", n_jobs=1, verbose=-1, random_state=0)
    if name == "mlp":
        return make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(30,),
                                                             max_iter=300, random_state=0))
    return make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced",
                                                              max_iter=1000))


# ----------------------------------------------------------------------------- metrics
def hypervolume3(C, ref=(1.1, 1.1, 1.1)):
    """Exact 3-D hypervolume (minimisation) by slicing along the third objective."""
    C = np.asarray(C, dtype=float)
    C = C[np.all(C < np.asarray(ref), axis=1)]
    if len(C) == 0:
        return 0.0
    levels = np.unique(C[:, 2])
    hv = 0.0
    for k, z in enumerate(levels):
        z_next = levels[k + 1] if k + 1 < len(levels) else ref[2]
        pts = [tuple(p) for p in C[C[:, 2] <= z][:, :2]]
        hv += _area2d_union(pts, ref[:2]) * (z_next - z)
    return hv


def _area2d_union(points, ref):
    pts = sorted(points)
    area, best_y = 0.0, ref[1]
    for k, (x, y) in enumerate(pts):
        if y >= best_y:
            continue
        # strip from x to ref: handled incrementally by summing rectangles of new y-drops
        area += (ref[0] - x) * (best_y - y)
        best_y = y
    return area


def run_cell(ds, model_name, X, y, immut, n, time_limit, seed=0, contamination=0.05):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=seed, stratify=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = (make_categorical_model(model_name, X) if model_name in CATEGORICAL_MODELS
                 else make_model(model_name)).fit(Xtr, ytr)
    judge = IsolationForest(n_estimators=100, max_samples=0.25, contamination=0.05,
                            random_state=seed).fit(_codes(Xte))
    pred = model.predict(Xte)
    rejected = Xte[pred == 0]
    queries = rejected.sample(n=min(n, len(rejected)), random_state=seed)
    out = {}
    fronts = {}
    for method, plaus in (("P2CE", True), ("MAPOCAM-style", False)):
        t0 = time.perf_counter()
        expl = P2CERecourse(FrozenEstimator(model), max_changes=3, immutable_features=immut,
                            plausibility=plaus, time_limit=time_limit, random_state=seed,
                            contamination=contamination)
        expl.fit(Xtr)
        fit_s = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            res = expl.explain(queries)
        q = np.asarray(res.counterfactuals["query"])
        P = _codes(res.counterfactuals.drop(columns="query"))
        outl = judge.predict(P) == -1 if len(P) else np.zeros(0, bool)
        per_outlier = [bool(outl[q == i].any()) for i in range(len(queries)) if res.found[i]]
        C = res.costs[["mean_distance", "max_distance", "n_changes"]].to_numpy()
        fronts[method] = [C[q == i] for i in range(len(queries))]
        out[method] = {
            "bound": expl.bound_,
            "fit_s": fit_s,
            "time": float(np.mean(res.extras["seconds"])),
            "time_max": float(np.max(res.extras["seconds"])),
            "nodes": float(np.mean(res.extras["nodes_expanded"])),
            "found": float(res.found.mean()),
            "outlier": float(np.mean(per_outlier)) if per_outlier else float("nan"),
            "front": float(np.mean([len(f) for f in fronts[method]])),
            "complete": float(np.mean(res.extras["complete"])),
            "valid": bool(np.all(res.valid)),
        }
    allc = np.vstack([c for f in fronts.values() for c in f if len(c)] or [np.ones((1, 3))])
    scale = np.maximum(allc.max(axis=0), 1e-12)
    for method, fr in fronts.items():
        hv = [hypervolume3(c / scale) if len(c) else 0.0 for c in fr]
        out[method]["hv"] = float(np.mean(hv))
    return len(queries), out


def report_model(n, n_background=5000, time_limit=10.0, seed=0):
    """P2CE on the report's default model as the report runs it (see the docstring)."""
    from sklearn_xai._report import _gbm_pipeline

    X, y = load_adult(subset="train")
    X_test, _ = load_adult(subset="test")
    keep = X.notna().all(axis=1).to_numpy()
    X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    X_test = X_test[X_test.notna().all(axis=1).to_numpy()].reset_index(drop=True)
    X = X.drop(columns=["fnlwgt", "education"])
    cat = list(X.select_dtypes("category").columns)
    num = [c for c in X.columns if c not in cat]
    X = X[cat + num]
    X_test = X_test[X.columns]
    model = _gbm_pipeline(cat, num, "hgb", seed)[0].fit(X, y)
    t0 = time.perf_counter()
    expl = P2CERecourse(FrozenEstimator(model), desired_class=model.classes_[-1],
                        max_changes=3, immutable_features=REPORT_IMMUTABLE,
                        time_limit=time_limit, random_state=seed).fit(X.iloc[:n_background])
    fit_s = time.perf_counter() - t0
    pred = model.predict(X_test.iloc[:max(500, 4 * n)])
    rejected = np.flatnonzero(pred != model.classes_[-1])[:n]
    wall, cpu, complete, nodes, front = [], [], [], [], []
    for r in rejected:
        c0, w0 = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            res = expl.explain(X_test.iloc[[r]])
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        complete.append(bool(res.extras["complete"][0]))
        nodes.append(int(res.extras["nodes_expanded"][0]))
        front.append(len(res.counterfactuals))
    wall, cpu = np.array(wall), np.array(cpu)
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.2f}, "
          f"python {platform.python_version()}, scikit-learn {sklearn.__version__}")
    print(f"report default model: bound_={expl.bound_}, fit on {min(n_background, len(X))} "
          f"rows {fit_s:.1f} s, {len(rejected)} rejected test rows, time_limit {time_limit} s")
    print(f"seconds per person (whole explain call): wall mean {wall.mean():.3f} median "
          f"{np.median(wall):.3f} max {wall.max():.3f}; CPU mean {cpu.mean():.3f} median "
          f"{np.median(cpu):.3f} max {cpu.max():.3f}")
    print(f"complete fronts {sum(complete)}/{len(complete)}, nodes mean "
          f"{np.mean(nodes):.0f}, front size mean {np.mean(front):.2f}")


def wide(n_features, n_queries=3, seed=0):
    """P2CE on wide rows: ``make_classification`` (2,000 rows, ``n_features`` features,
    10 informative), a HistGradientBoostingClassifier (50 iterations) and a random forest
    (30 trees, depth 6), P2CE's defaults; the first ``n_queries`` rows each model
    rejects, one explain call for them. Prints seconds per query, nodes expanded and the
    front sizes."""
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier

    X, y = make_classification(2000, n_features, n_informative=10, random_state=seed)
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.2f}, "
          f"python {platform.python_version()}, scikit-learn {sklearn.__version__}")
    for name, model in (("hgb", HistGradientBoostingClassifier(max_iter=50, random_state=seed)),
                        ("forest", RandomForestClassifier(30, max_depth=6,
                                                          random_state=seed))):
        model.fit(X, y)
        rows = X[model.predict(X) == 0][:n_queries]
        expl = P2CERecourse(FrozenEstimator(model), random_state=seed).fit(X, y)
        t0 = time.perf_counter()
        res = expl.explain(rows)
        s = (time.perf_counter() - t0) / len(rows)
        print(f"wide {n_features} features, {name:6s}: bound_={expl.bound_}, {s:.2f} s per "
              f"query, nodes {res.extras['nodes_expanded'].tolist()}, front sizes "
              f"{np.bincount(res.counterfactuals['query'], minlength=len(rows)).tolist()}",
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 individuals per cell")
    ap.add_argument("--n", type=int, default=100, help="individuals per cell")
    ap.add_argument("--datasets", default="german,taiwan,adult")
    ap.add_argument("--models", default="lgbm,mlp,lr")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds per individual (default: none; --quick uses 30)")
    ap.add_argument("--contamination", type=float, default=0.05,
                    help="contamination of the search's isolation forest (the judge "
                         "forest always uses 0.05)")
    ap.add_argument("--report-model", type=int, default=None, metavar="N",
                    help="time P2CE on the report's default model for N rejected rows")
    ap.add_argument("--background", type=int, default=5000,
                    help="--report-model: rows P2CE is fitted on (the report's default)")
    ap.add_argument("--wide", type=int, default=None, metavar="P",
                    help="time P2CE on P synthetic features (tree models, 3 queries)")
    args = ap.parse_args()
    if args.wide is not None:
        wide(args.wide)
        return
    if args.report_model is not None:
        report_model(args.report_model, args.background)
        return
    n = 5 if args.quick else args.n
    tl = args.time_limit if args.time_limit is not None else (30.0 if args.quick else None)
    rows = []
    for ds in args.datasets.split(","):
        X, y, immut = DATASETS[ds]()
        for mname in args.models.split(","):
            if (mname in CATEGORICAL_MODELS) != ds.startswith("adult_cat"):
                continue  # categorical models on the categorical workloads only
            n_q, res = run_cell(ds, mname, X, y, immut, n, tl,
                                contamination=args.contamination)
            for method, r in res.items():
                rows.append({"dataset": ds, "model": mname, "method": method, "n": n_q, **r})
                print(f"{ds:12s} {mname:10s} {method:14s} bound={r['bound']:6s} "
                      f"time={r['time']:.3f}s (max {r['time_max']:.2f}) nodes={r['nodes']:.0f} "
                      f"found={r['found']:.2f} outlier={r['outlier']:.3f} hv={r['hv']:.3f} "
                      f"front={r['front']:.1f} complete={r['complete']:.2f} "
                      f"valid={r['valid']}", flush=True)
    df = pd.DataFrame(rows)
    print()
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, python {platform.python_version()}, "
          f"scikit-learn {sklearn.__version__}, numpy {np.__version__}")
    cols = ["dataset", "model", "method", "n", "bound", "time", "nodes", "found", "outlier",
            "hv", "front", "complete"]
    print(df[cols].to_markdown(index=False, floatfmt=".3f"))


if __name__ == "__main__":
    main()
