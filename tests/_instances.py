"""Instances of every public explainer for the common checks, and their expected failures.

``INSTANCES`` maps a class name to factories of instances (several settings where useful);
``EXPECTED_FAILED`` maps a class name to ``{check_name: reason}`` (the imbalanced-learn
pattern): every entry must say why the check does not apply.
"""

INSTANCES = {}
EXPECTED_FAILED = {}

# --- knockoffs: KnockoffSHAP, KnockoffSAGE (sklearn_xai.shapley), samplers (begin) ---
from sklearn.linear_model import LinearRegression as _KoLinear  # noqa: E402

from sklearn_xai.knockoffs import GaussianKnockoffs as _KoGaussian  # noqa: E402
from sklearn_xai.knockoffs import SequentialKnockoffs as _KoSequential  # noqa: E402
from sklearn_xai.shapley import KnockoffSAGE as _KoSAGE  # noqa: E402
from sklearn_xai.shapley import KnockoffSHAP as _KoSHAP  # noqa: E402

INSTANCES["KnockoffSHAP"] = [
    lambda: _KoSHAP(_KoLinear(), n_knockoffs=2, estimator="permutation", n_evals=40,
                    random_state=0),
]
INSTANCES["KnockoffSAGE"] = [
    lambda: _KoSAGE(_KoLinear(), n_knockoffs=2, n_permutations=2, random_state=0),
]
INSTANCES["GaussianKnockoffs"] = [lambda: _KoGaussian(), lambda: _KoGaussian(method="sdp")]
INSTANCES["SequentialKnockoffs"] = [lambda: _KoSequential(cv=2, Cs=2, random_state=0)]
# --- knockoffs (end) ---
