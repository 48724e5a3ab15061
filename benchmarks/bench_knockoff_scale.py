"""Issue #24: scale invariance and discrete support of the default knockoff sampler.

German Credit (UCI original), its 7 numeric columns. Prints, for ``GaussianKnockoffs()``
fitted on all 1,000 rows:

* per column: the sample variance, the fitted variance (``covariance_``), the ratio of the
  knockoffs' variance (5 knockoffs per row, ``random_state=0``) to the sample variance,
  and the knockoffs' range;
* ``KnockoffSHAP.score`` with its defaults (knockoff imputation) and with
  ``imputation="marginal"`` on ``make_pipeline(StandardScaler(), MLPClassifier((16,)))``
  trained on rows 0-699, explaining rows 700-759 (the setup of
  ``tests/test_faults_knockoffs.py::test_knockoff_shap_default_scores_like_marginal_on_an_mlp``).

Run ``python benchmarks/bench_knockoff_scale.py`` (about 5 s). Threads are limited to one.
"""

import os
import sys
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

if os.environ.get("BENCH_NO_SYS_PATH") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import sklearn_xai  # noqa: E402
from sklearn_xai.datasets import load_german_credit  # noqa: E402
from sklearn_xai.knockoffs import GaussianKnockoffs  # noqa: E402
from sklearn_xai.shapley import KnockoffSHAP  # noqa: E402

NUMERIC = ["duration_months", "credit_amount", "installment_rate", "residence_since", "age",
           "existing_credits", "num_dependents"]


def main():
    print(f"sklearn_xai from {Path(sklearn_xai.__file__).parent}")
    X, y = load_german_credit()
    X, y = X[NUMERIC].to_numpy(dtype=np.float64), y.to_numpy()
    kn = GaussianKnockoffs().fit(X)
    ko = kn.sample(X, n_knockoffs=5, random_state=0).reshape(-1, X.shape[1])
    print("| column | sample variance | fitted variance | knockoff / sample variance | "
          "knockoff range |")
    print("|---|---|---|---|---|")
    for j, name in enumerate(NUMERIC):
        var = X[:, j].var()
        print(f"| {name} | {var:.4g} | {kn.covariance_[j, j]:.4g} | "
              f"{ko[:, j].var() / var:.4g} | [{ko[:, j].min():.4g}, {ko[:, j].max():.4g}] |")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make_pipeline(StandardScaler(), MLPClassifier(
            hidden_layer_sizes=(16,), max_iter=300, random_state=0)).fit(X[:700], y[:700])
    frozen, rows = FrozenEstimator(model), X[700:760]
    for imputation in ("knockoff", "marginal"):
        explainer = KnockoffSHAP(frozen, imputation=imputation, random_state=0).fit(X[:700])
        print(f"KnockoffSHAP(imputation={imputation!r}).score: {explainer.score(rows):.3f}")


if __name__ == "__main__":
    main()
