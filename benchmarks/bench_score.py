"""``score`` of a correct, a negated and a random explainer on one model.

German credit (8 columns: 4 numeric, 4 categorical), a
``Pipeline(ColumnTransformer(OneHotEncoder, passthrough), GradientBoostingClassifier)``
trained on 700 rows; 100 held-out rows are explained in their input columns by each
attribution explainer. For each explainer the script scores (``explainer.score``, the
signed faithfulness correlation averaged over rows and outputs):

* the explainer itself;
* the same explainer with every attribution negated;
* the same explainer with its attributions replaced by Gaussian noise of the same scale
  (drawn from a fixed seed).

Run ``python benchmarks/bench_score.py`` (about a minute; ``--quick`` explains 30 rows).
Threads are limited to one (``OMP_NUM_THREADS`` and friends) before numpy is imported.
"""

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.ensemble import GradientBoostingClassifier  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder  # noqa: E402

from sklearn_xai import KnockoffSHAP, ShearExplainer, TreeShapExplainer  # noqa: E402
from sklearn_xai.datasets import load_german_credit  # noqa: E402

NUMERIC = ["duration_months", "credit_amount", "age", "installment_rate"]
CATEGORICAL = ["checking_status", "credit_history", "savings_status", "purpose"]


def _negated(cls):
    class Negated(cls):
        def _explain(self, X, **kwargs):
            out = super()._explain(X, **kwargs)
            att, *rest = out if isinstance(out, tuple) else (out,)
            att = dataclasses.replace(att, values=-att.values)
            return (att, *rest) if rest else att

    Negated.__name__ = f"Negated{cls.__name__}"
    return Negated


def _random(cls):
    class Random(cls):
        def _explain(self, X, **kwargs):
            out = super()._explain(X, **kwargs)
            att, *rest = out if isinstance(out, tuple) else (out,)
            rng = np.random.default_rng(12345)
            noise = rng.normal(size=att.values.shape) * np.std(att.values)
            att = dataclasses.replace(att, values=noise)
            return (att, *rest) if rest else att

    Random.__name__ = f"Random{cls.__name__}"
    return Random


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="explain 30 rows")
    args = parser.parse_args(argv)
    X, y = load_german_credit()
    X = X[NUMERIC + CATEGORICAL]
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), CATEGORICAL),
                                remainder="passthrough"),
        GradientBoostingClassifier(n_estimators=100, max_depth=3, random_state=0),
    ).fit(X.iloc[:700], y.iloc[:700])
    frozen = FrozenEstimator(model)
    rows = X.iloc[700:730] if args.quick else X.iloc[700:800]
    background = X.iloc[:200]
    settings = {
        "TreeShapExplainer (interventional)": (
            TreeShapExplainer, {"imputation": "marginal",
                                    "model_output": "probability"}),
        "ShearExplainer": (ShearExplainer, {"random_state": 0}),
        "KnockoffSHAP (marginal)": (KnockoffSHAP, {"imputation": "marginal",
                                                      "random_state": 0}),
    }
    print(f"German credit, {len(rows)} explained rows, model accuracy on them "
          f"{model.score(rows, y.loc[rows.index]):.3f}")
    print("| explainer | correct | negated | random | s (correct) |")
    print("|---|---|---|---|---|")
    for label, (cls, params) in settings.items():
        scores, seconds = [], None
        for make in (cls, _negated(cls), _random(cls)):
            explainer = make(frozen, **params).fit(background)
            t0 = time.perf_counter()
            scores.append(explainer.score(rows))
            seconds = seconds if seconds is not None else time.perf_counter() - t0
        print(f"| {label} | {scores[0]:.3f} | {scores[1]:.3f} | {scores[2]:.3f} | "
              f"{seconds:.1f} |")


if __name__ == "__main__":
    main()
