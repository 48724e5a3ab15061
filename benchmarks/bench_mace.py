"""MaceRecourse against DiCE (random, genetic) and a nearest-unlike-neighbour baseline.

Datasets: Adult (bundled), COMPAS and Titanic (the project's shared data), breast cancer
(scikit-learn). Models: an XGBoost and an MLP pipeline per dataset (one-hot categoricals;
the MLP also standardises). 80/20 split, seed 0. Queries: the first test rows predicted in
the undesired class (class 0 for Adult/Titanic, 1 for COMPAS (recidivism) and 0 (malignant)
for breast cancer), 3 counterfactuals each, no constraints, "opposite" class.

Every method's counterfactuals are re-predicted with the same model in this process and
scored with the same functions (``sklearn_xai.recourse._metrics``):
validity (valid / returned), found (queries with >= 1 valid), #CF (valid counterfactuals per
query, of 3), L0 (changed features per CF), proximity (categorical changes + MAD-scaled
continuous changes, lower is better), diversity (fraction of differing features between two
CFs of a query), time per query (wall clock of one call over all queries / #queries).

DiCE runs in a separate virtual environment (``--dice-python``, default
``/work/venv_dice/bin/python``) as a subprocess on the very same pickled models and queries;
it is skipped when that interpreter is missing or cannot load the models.

Coverage (found rate against enumeration), run in every mode: Titanic / XGBoost and MLP,
the first 50 rejected test passengers, ``Sex`` and ``Age`` immutable. Enumeration predicts
every row of the grid of the mutable features (21 quantiles, ``inverted_cdf``, of each
numeric training column, every category; any number of changes) and counts the queries with
a valid row; MACE (rl and gld, same constraints, defaults otherwise) is scored by the same
re-prediction. Per MACE run the stages that answered the queries are listed
(``extras["stage"]``).

Usage::

    python benchmarks/bench_mace.py --quick          # 10 queries, DiCE genetic on 3
    python benchmarks/bench_mace.py                  # 100 queries, genetic on 10
    python benchmarks/bench_mace.py --coverage-only  # the coverage cell alone
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

from sklearn_xai._explanation import Counterfactuals  # noqa: E402
from sklearn_xai.recourse import MaceRecourse  # noqa: E402
from sklearn_xai.recourse import _metrics as M  # noqa: E402
from sklearn_xai.recourse._encoding import TabularEncoder  # noqa: E402

SHARED = Path(os.environ.get("SKLEARN_XAI_SHARED_DATA", "/work/shared/data"))
N_CF = 3


# ----------------------------------------------------------------------------- data
def _as_object(X):
    """Categorical columns as plain strings (DiCE needs str categories, issue #222)."""
    X = X.copy()
    for c in X.columns:
        if not pd.api.types.is_numeric_dtype(X[c]) or isinstance(X[c].dtype, pd.CategoricalDtype):
            X[c] = X[c].astype(str).astype(object)
    return X


def load(name):
    from sklearn_xai.datasets import load_adult, load_shared_dataset

    if name == "adult":
        X, y = load_adult(subset="train", drop_missing=True)
        X = X.drop(columns=["fnlwgt", "education_num"])
        undesired = 0
    elif name in ("compas", "titanic"):
        X, y = load_shared_dataset(name, data_home=SHARED)
        if name == "titanic":
            X = X.copy()
            X["Age"] = X["Age"].fillna(X["Age"].median())
            X["Embarked"] = X["Embarked"].fillna("S")
        undesired = 1 if name == "compas" else 0
    else:
        data = load_breast_cancer(as_frame=True)
        X, y = data.data, data.target
        undesired = 0
    return _as_object(X), np.asarray(y).astype(int), undesired


def models(X):
    cat = [c for c in X.columns if X[c].dtype == object]
    num = [c for c in X.columns if c not in cat]

    def pre(scale):
        return ColumnTransformer(
            [("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), cat)]
            + ([("num", StandardScaler(), num)] if scale else [("num", "passthrough", num)])
        )

    from xgboost import XGBClassifier

    return {
        "xgb": make_pipeline(
            pre(False), XGBClassifier(n_estimators=100, max_depth=4, n_jobs=1, random_state=0)
        ),
        "mlp": make_pipeline(
            pre(True),
            MLPClassifier(hidden_layer_sizes=(32, 16), max_iter=400, random_state=0),
        ),
    }


# --------------------------------------------------------------------------- results
def to_result(queries, cf_frames, desired):
    """Build a Counterfactuals from per-query frames (rows in the queries' columns)."""
    parts = []
    for i, f in enumerate(cf_frames):
        if f is not None and len(f):
            f = f[list(queries.columns)].copy()
            f.insert(0, "query", i)
            parts.append(f)
    cfs = (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(columns=["query"] + list(queries.columns))
    )
    for c in queries.columns:
        cfs[c] = cfs[c].astype(queries[c].dtype)
    return Counterfactuals(
        queries=queries.reset_index(drop=True),
        counterfactuals=cfs,
        predictions=np.zeros(len(cfs)),
        valid=np.ones(len(cfs), dtype=bool),
        costs=None,
        found=np.zeros(len(queries), dtype=bool),
        desired=np.full(len(queries), desired, dtype=object),
    )


def keep_valid(res, model, desired):
    """Re-predict every counterfactual; drop invalid ones (counted in validity)."""
    cfs = res.counterfactuals
    n_ret = len(cfs)
    if n_ret:
        ok = model.predict(cfs.drop(columns="query")) == desired
        # a returned row equal to its query is not a counterfactual
        q = res.queries.iloc[np.asarray(cfs["query"])].reset_index(drop=True)
        same = (cfs.drop(columns="query").astype(str).values == q.astype(str).values).all(1)
        ok &= ~same
    else:
        ok = np.zeros(0, dtype=bool)
    kept = cfs.loc[ok].reset_index(drop=True)
    found = np.zeros(len(res.queries), dtype=bool)
    found[np.asarray(kept["query"], dtype=int)] = True
    out = Counterfactuals(
        queries=res.queries, counterfactuals=kept, predictions=np.zeros(len(kept)),
        valid=np.ones(len(kept), dtype=bool), costs=None, found=found,
        desired=res.desired,
    )
    validity = float(ok.mean()) if n_ret else float("nan")
    return out, validity


def scores(res, validity, X_train, seconds, n_queries):
    n_per = np.bincount(np.asarray(res.counterfactuals["query"], dtype=int), minlength=n_queries)
    return {
        "validity": validity,
        "found": float(res.found.mean()),
        "n_cf": float(np.minimum(n_per, N_CF).mean()),
        "L0": M.sparsity(res) if len(res.counterfactuals) else float("nan"),
        "proximity": M.proximity(res, X_train) if len(res.counterfactuals) else float("nan"),
        "diversity": M.diversity(res),
        "s_per_query": seconds / n_queries,
    }


# -------------------------------------------------------------------------- methods
def run_mace(model, X_train, Q, method, seed=0):
    mace = MaceRecourse(FrozenEstimator(model), method=method, n_counterfactuals=N_CF,
                        random_state=seed).fit(X_train)
    t0 = time.perf_counter()
    res = mace.explain(Q)
    sec = time.perf_counter() - t0
    frames = [res.for_query(i) for i in range(len(Q))]
    return frames, sec, res.extras["stats"]


def run_nun(model, X_train, Q, desired):
    """Nearest unlike neighbour: the 3 closest training rows predicted as the desired
    class (one-hot + MAD-scaled continuous distance), returned as they are."""
    from sklearn_xai.neighbors import NeighborIndex

    t0 = time.perf_counter()
    enc = TabularEncoder().fit(X_train)

    Zt = enc.to_internal(X_train)
    pool = np.flatnonzero(model.predict(X_train) == desired)
    index = NeighborIndex("exact").fit(enc.embed(Zt[pool], continuous="scaled"))
    _, nb = index.kneighbors(enc.embed(enc.to_internal(Q), continuous="scaled"), N_CF)
    frames = [X_train.iloc[pool[row]].reset_index(drop=True) for row in nb]
    return frames, time.perf_counter() - t0


def run_dice(dice_python, workdir, methods_queries, label):
    """Run DiCE in its own venv; returns {method: (frames, seconds)} or an error string."""
    script = Path(workdir) / "dice_job.py"
    script.write_text(DICE_JOB)
    out = Path(workdir) / f"dice_out_{label}.pkl"
    cmd = [dice_python, str(script), str(workdir), label, json.dumps(methods_queries), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"
    with open(out, "rb") as fh:
        return pickle.load(fh)


DICE_JOB = r'''
import json, pickle, sys, time, warnings
import pandas as pd
warnings.filterwarnings("ignore")
import dice_ml

workdir, label, mq, out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
with open(f"{workdir}/{label}.pkl", "rb") as fh:
    job = pickle.load(fh)
model, train, Q, cont, desired = job["model"], job["train"], job["Q"], job["cont"], job["desired"]
d = dice_ml.Data(dataframe=train, continuous_features=cont, outcome_name="__y__")
m = dice_ml.Model(model=model, backend="sklearn")
res = {}
for method, nq in mq.items():
    exp = dice_ml.Dice(d, m, method=method)
    q = Q.iloc[:nq]
    kw = {"random_seed": 0} if method == "random" else {}
    t0 = time.perf_counter()
    try:
        r = exp.generate_counterfactuals(q, total_CFs=3, desired_class="opposite",
                                         verbose=False, **kw)
        frames = [c.final_cfs_df.drop(columns="__y__") if c.final_cfs_df is not None else None
                  for c in r.cf_examples_list]
    except Exception as e:  # noqa: BLE001
        frames = None
        err = repr(e)[:200]
    sec = time.perf_counter() - t0
    res[method] = (frames, sec, nq) if frames is not None else err
with open(out, "wb") as fh:
    pickle.dump(res, fh)
'''


def markdown(table):
    def fmt(v):
        if isinstance(v, float):
            return "" if np.isnan(v) else f"{v:.3g}"
        return "" if v is None else str(v)

    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in table.iterrows():
        lines.append("| " + " | ".join(fmt(r[c]) for c in cols) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------------- coverage
COVERAGE_CELLS = [("titanic", "xgb", ("Sex", "Age"), 50),
                  ("titanic", "mlp", ("Sex", "Age"), 50)]
N_GRID = 21


def enumeration_found(model, X_train, Q, desired, immutable, n_points=N_GRID):
    """Per query: does any row of the grid of the mutable features (``n_points``
    quantiles of each numeric column, every category; any number of changes) reach
    ``desired``? Returns (found, grid rows per query)."""
    grid = {}
    for c in X_train.columns:
        if c in immutable:
            continue
        if X_train[c].dtype == object:
            grid[c] = sorted(X_train[c].unique())
        else:
            q = np.quantile(X_train[c], np.linspace(0, 1, n_points), method="inverted_cdf")
            grid[c] = np.unique(q)
    combos = pd.DataFrame(list(itertools.product(*grid.values())), columns=list(grid))
    m = len(combos)
    rows = Q.iloc[np.repeat(np.arange(len(Q)), m)].reset_index(drop=True)
    for c in grid:
        rows[c] = np.tile(combos[c].to_numpy(), len(Q))
    rows = rows.astype(Q.dtypes.to_dict())
    ok = np.asarray(model.predict(rows) == desired).reshape(len(Q), m)
    return ok.any(axis=1), m


def coverage(nq=None):
    """Found rate of MACE (rl, gld) next to enumeration's on the coverage cells."""
    rows = []
    for ds, mname, immutable, n_default in COVERAGE_CELLS:
        X, y, undesired = load(ds)
        Xtr, Xte, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
        Xtr, Xte = Xtr.reset_index(drop=True), Xte.reset_index(drop=True)
        model = models(X)[mname].fit(Xtr, ytr)
        desired = 1 - undesired
        Q = Xte[model.predict(Xte) == undesired].iloc[: nq or n_default].reset_index(drop=True)
        t0 = time.perf_counter()
        enum, n_grid = enumeration_found(model, Xtr, Q, desired, immutable)
        t_enum = time.perf_counter() - t0
        print(f"# coverage {ds}/{mname}, immutable {list(immutable)}: {len(Q)} queries; "
              f"enumeration {int(enum.sum())}/{len(Q)} ({n_grid} grid rows per query, "
              f"{t_enum:.1f} s)", flush=True)
        for method in ("rl", "gld"):
            mace = MaceRecourse(FrozenEstimator(model), method=method, n_counterfactuals=N_CF,
                                immutable_features=list(immutable), random_state=0).fit(Xtr)
            t0 = time.perf_counter()
            res = mace.explain(Q)
            sec = time.perf_counter() - t0
            kept, _ = keep_valid(to_result(Q, [res.for_query(i) for i in range(len(Q))],
                                           desired), model, desired)
            found = kept.found
            stage = res.extras.get("stage")
            stages = ("" if stage is None else ", ".join(
                f"{k} {v}" for k, v in pd.Series(stage).value_counts().items()))
            missed = np.flatnonzero(enum & ~found).tolist()
            r = {"dataset": ds, "model": mname, "immutable": "+".join(immutable),
                 "method": f"MACE-{method}", "queries": len(Q),
                 "found": f"{int(found.sum())}/{len(Q)}",
                 "enumeration": f"{int(enum.sum())}/{len(Q)}",
                 "missed (enumeration finds)": str(missed),
                 "stages": stages, "s_per_query": sec / len(Q),
                 "rows/q": res.extras["stats"]["n_model_rows"] / len(Q)}
            rows.append(r)
            print("  " + " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                  for k, v in r.items()), flush=True)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 queries, DiCE genetic on 3")
    ap.add_argument("--datasets", default="adult,compas,titanic,breast")
    ap.add_argument("--models", default="xgb,mlp")
    ap.add_argument("--dice-python", default="/work/venv_dice/bin/python")
    ap.add_argument("--no-dice", action="store_true")
    ap.add_argument("--out", default=None, help="write the table (markdown) here")
    ap.add_argument("--coverage-only", action="store_true",
                    help="only the found-rate-against-enumeration cell")
    args = ap.parse_args(argv)
    cov = coverage()
    cov_md = markdown(cov)
    if args.coverage_only:
        print(cov_md)
        if args.out:
            Path(args.out).write_text(cov_md + "\n")
        return cov
    nq = 10 if args.quick else 100
    ng = 3 if args.quick else 10
    have_dice = (not args.no_dice) and Path(args.dice_python).exists()
    rows = []
    workdir = tempfile.mkdtemp(prefix="bench_mace_")
    for ds in args.datasets.split(","):
        X, y, undesired = load(ds)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
        Xtr, Xte = Xtr.reset_index(drop=True), Xte.reset_index(drop=True)
        for mname, model in models(X).items():
            if mname not in args.models.split(","):
                continue
            model.fit(Xtr, ytr)
            acc = float((model.predict(Xte) == yte).mean())
            Q = Xte[model.predict(Xte) == undesired].iloc[:nq].reset_index(drop=True)
            desired = 1 - undesired
            n = len(Q)
            print(f"# {ds}/{mname}: test acc {acc:.3f}, {n} queries", flush=True)

            def add(method, frames, sec, nq_used=n, extra=""):
                Qm = Q.iloc[:nq_used]
                res, val = keep_valid(to_result(Qm, frames[:nq_used], desired), model, desired)
                r = {"dataset": ds, "model": mname, "acc": acc, "method": method,
                     "queries": nq_used, **scores(res, val, Xtr, sec, nq_used), "note": extra}
                rows.append(r)
                print("  " + " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                      for k, v in r.items()), flush=True)

            for method in ("rl", "gld"):
                frames, sec, st = run_mace(model, Xtr, Q, method)
                add(f"MACE-{method}", frames, sec,
                    extra=f"{st['n_model_calls']} calls, {st['n_model_rows'] / n:.0f} rows/q")
            frames, sec = run_nun(model, Xtr, Q, desired)
            add("nearest-unlike", frames, sec)
            if have_dice:
                label = f"{ds}_{mname}"
                train = Xtr.copy()
                train["__y__"] = ytr
                cont = [c for c in Xtr.columns if Xtr[c].dtype != object]
                with open(Path(workdir) / f"{label}.pkl", "wb") as fh:
                    pickle.dump({"model": model, "train": train, "Q": Q, "cont": cont,
                                 "desired": desired}, fh)
                out = run_dice(args.dice_python, workdir, {"random": n, "genetic": min(ng, n)},
                               label)
                if isinstance(out, str):
                    print("  DiCE failed:", out, flush=True)
                    rows.append({"dataset": ds, "model": mname, "method": "DiCE",
                                 "note": f"failed: {out}"})
                else:
                    for method, val in out.items():
                        if isinstance(val, str):
                            rows.append({"dataset": ds, "model": mname,
                                         "method": f"DiCE-{method}", "note": val})
                            print(f"  DiCE-{method} failed: {val}")
                            continue
                        frames, sec, nq_used = val
                        add(f"DiCE-{method}", frames, sec, nq_used)
    table = pd.DataFrame(rows)
    md = markdown(table) + "\n\nCoverage (found rate against enumeration):\n\n" + cov_md
    print(md)
    if args.out:
        Path(args.out).write_text(md + "\n")
    return table


if __name__ == "__main__":
    main()
