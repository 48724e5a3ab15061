"""Benchmark of OffManifoldAudit: detection of fooling attacks, false flags, cost.

1. Detection: Slack et al.'s scaffolding attack (``tests/_attack.py``: a detector trained on
   real rows against k-means(10) hybrids; the biased rule on rows it calls real, the
   innocuous one elsewhere) on COMPAS (race hidden; innocuous: one or two random unrelated
   columns) and German credit (Gender hidden; innocuous: LoanRateAsPercentOfIncome, or it
   and YearsAtCurrentHome), with the attacker's detector a random forest, a
   HistGradientBoosting classifier or an MLP, over seeds. Reported: the share flagged at
   alpha = 0.05 and the share with the hidden feature among the audit's top 2 features
   (its features table, sorted by adjusted p-value).
2. False flags: honest models (logistic regression, random forest, gradient boosting,
   HistGradientBoosting, an MLP) on the six datasets (Adult and German credit bundled;
   COMPAS, Titanic, Australian and Taiwan credit from the shared data folder), several
   seeds. Categorical columns are integer codes (pandas category codes), missing values
   the column median; each model is trained on up to 2,000 random rows, the audit is
   fitted on the same rows and audits up to 500 other rows.
3. Cost: fit + audit of 1,000 COMPAS rows (an honest random forest and the attack).

Every audit uses the defaults of ``OffManifoldAudit`` except ``random_state``.

Run ``python benchmarks/bench_audit.py --quick`` (4 attacks, 1 seed of honest models) or
without ``--quick`` (24 attacks, 3 seeds: 90 honest audits).
"""

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sklearn
from sklearn.ensemble import (
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sklearn_xai
from sklearn_xai import OffManifoldAudit
from tests._attack import OODAdversaryClassifier, compas_attack_data, german_attack_data

ATTACK_DETECTORS = {
    "random forest": None,
    "hist gradient boosting": HistGradientBoostingClassifier(max_iter=100),
    "MLP": MLPClassifier((64, 64), max_iter=300),
}

HONEST_MODELS = {
    "logistic regression": lambda s: make_pipeline(StandardScaler(),
                                                   LogisticRegression(max_iter=2000)),
    "random forest": lambda s: RandomForestClassifier(100, min_samples_leaf=3, n_jobs=1,
                                                      random_state=s),
    "gradient boosting": lambda s: GradientBoostingClassifier(random_state=s),
    "hist gradient boosting": lambda s: HistGradientBoostingClassifier(random_state=s),
    "MLP": lambda s: make_pipeline(StandardScaler(), MLPClassifier((32,), max_iter=500,
                                                                   random_state=s)),
}

DATASETS = ("adult", "german", "compas", "titanic", "australian", "taiwan_credit")


def attack_case(dataset, n_innocuous, detector_name, seed):
    """One attack construction and its audit."""
    if dataset == "compas":
        X, _, names = compas_attack_data(random_state=seed)
        rng = np.random.default_rng(seed)
        idx = rng.permutation(len(X))
        X_train, X_audit = X[idx[:3000]], X[idx[3000:4000]]
        hidden = names.index("race")
        innocuous = [names.index("unrelated_column_one"), names.index("unrelated_column_two")]
    else:
        X_train, _, _, _, names, _ = german_attack_data(random_state=2022 + seed)
        X_audit = X_train
        hidden = names.index("Gender")
        innocuous = [names.index("LoanRateAsPercentOfIncome"),
                     names.index("YearsAtCurrentHome")]
    innocuous = innocuous[0] if n_innocuous == 1 else tuple(innocuous)
    adversary = OODAdversaryClassifier(hidden, innocuous, background=10,
                                       detector=ATTACK_DETECTORS[detector_name],
                                       random_state=seed).fit(X_train)
    t0 = time.perf_counter()
    result = OffManifoldAudit(random_state=seed).fit(X_train).audit(
        adversary, None if X_audit is X_train else X_audit)
    seconds = time.perf_counter() - t0
    order = [names[int(name[1:])] if name.startswith("x") else name
             for name in result.features.index]
    feats = result.features
    row = feats.iloc[order.index(names[hidden])]
    return {
        "dataset": dataset, "innocuous": n_innocuous, "attack_detector": detector_name,
        "seed": seed, "fidelity": adversary.fidelity(X_audit),
        "flagged": result.flagged, "p_value": result.p_value,
        "hidden_position": order.index(names[hidden]) + 1,
        "hidden_marginal_rank": int(row["marginal_rank"]),
        "hidden_knockoff_rank": int(row["knockoff_rank"]),
        "detector_auc": result.detector_auc, "n_rows": result.n_rows,
        "audit_s": seconds,
    }


def load_numeric(name):
    """Features as float (category codes, median-imputed), the 0/1 target."""
    import pandas as pd

    from sklearn_xai.datasets import load_adult, load_german_credit, load_shared_dataset

    if name == "adult":
        X, y = load_adult()  # 1 = income > 50K
    elif name == "german":
        X, y = load_german_credit()
    else:
        X, y = load_shared_dataset(name)
    X = X.copy()
    for c in X.columns:
        if isinstance(X[c].dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(
                X[c]):
            codes = X[c].astype("category").cat.codes.astype(np.float64)
            X[c] = codes.where(codes >= 0)
    X = X.astype(np.float64)
    X = X.fillna(X.median())
    return X.to_numpy(), np.asarray(y), [str(c) for c in X.columns]


def honest_case(dataset, data, model_name, seed):
    X, y, names = data
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(X))
    n_train = min(2000, len(X) // 2)
    train, audit = idx[:n_train], idx[n_train:n_train + 500]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLP convergence warnings
        model = HONEST_MODELS[model_name](seed).fit(X[train], y[train])
    t0 = time.perf_counter()
    result = OffManifoldAudit(random_state=seed).fit(X[train]).audit(model, X[audit])
    top = result.features.index[0]
    top = names[int(top[1:])] if top.startswith("x") else top
    return {"dataset": dataset, "model": model_name, "seed": seed,
            "flagged": result.flagged, "p_value": result.p_value, "top_feature": top,
            "detector_auc": result.detector_auc, "n_rows": result.n_rows,
            "audit_s": time.perf_counter() - t0}


def cost(repeats):
    X, y, names = compas_attack_data(random_state=0)
    idx = np.random.default_rng(0).permutation(len(X))
    train, audit = idx[:3000], idx[3000:4000]
    models = {
        "honest random forest": RandomForestClassifier(100, min_samples_leaf=3, n_jobs=1,
                                                       random_state=0).fit(X[train], y[train]),
        "attack (random forest detector)": OODAdversaryClassifier(
            names.index("race"), names.index("unrelated_column_one"), background=10,
            random_state=0).fit(X[train]),
    }
    out = []
    for name, model in models.items():
        for n_jobs in (None, 2):
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                OffManifoldAudit(random_state=0, n_jobs=n_jobs).fit(X[train]).audit(
                    model, X[audit])
                times.append(time.perf_counter() - t0)
            out.append({"model": name, "n_jobs": n_jobs, "rows": len(audit),
                        "fit_rows": len(train), "median_s": float(np.median(times)),
                        "repeats": repeats})
            print(json.dumps(out[-1]), flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("detection", "false_flags", "cost"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    report = {"python": platform.python_version(), "scikit-learn": sklearn.__version__,
              "numpy": np.__version__, "sklearn-xai": sklearn_xai.__version__,
              "machine": platform.platform(), "processor": platform.processor(),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "quick": args.quick}
    if args.only in (None, "detection"):
        detectors = ["random forest"] if args.quick else list(ATTACK_DETECTORS)
        seeds = [0] if args.quick else [0, 1]
        rows = []
        for dataset in ("compas", "german"):
            for n_innocuous in (1, 2):
                for det in detectors:
                    for seed in seeds:
                        rows.append(attack_case(dataset, n_innocuous, det, seed))
                        print(json.dumps(rows[-1]), flush=True)
        report["detection"] = rows
        flagged = np.mean([r["flagged"] for r in rows])
        top2 = np.mean([r["hidden_position"] <= 2 for r in rows])
        print(f"DETECTION: {len(rows)} attacks, flagged {flagged:.3f}, hidden feature in "
              f"top 2 {top2:.3f}", flush=True)
    if args.only in (None, "false_flags"):
        seeds = [0] if args.quick else [0, 1, 2]
        rows = []
        for dataset in DATASETS:
            data = load_numeric(dataset)
            for model_name in HONEST_MODELS:
                for seed in seeds:
                    rows.append(honest_case(dataset, data, model_name, seed))
                    print(json.dumps(rows[-1]), flush=True)
        report["false_flags"] = rows
        print(f"FALSE FLAGS: {sum(r['flagged'] for r in rows)} of {len(rows)} honest "
              f"audits ({np.mean([r['flagged'] for r in rows]):.3f})", flush=True)
    if args.only in (None, "cost"):
        report["cost"] = cost(1 if args.quick else 3)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1, default=float))


if __name__ == "__main__":
    main()
