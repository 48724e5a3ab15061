"""Instances of every public explainer for the common checks, and their expected failures.

``INSTANCES`` maps a class name to factories of instances (several settings where useful);
``EXPECTED_FAILED`` maps a class name to ``{check_name: reason}`` (the imbalanced-learn
pattern): every entry must say why the check does not apply.
"""

INSTANCES = {}
EXPECTED_FAILED = {}

# --- TreeShapExplainer (branch tree) ---------------------------------------------------


def _treeshap_path():
    from sklearn.tree import DecisionTreeRegressor

    from sklearn_xai.tree import TreeShapExplainer

    return TreeShapExplainer(DecisionTreeRegressor(max_depth=3, random_state=0))


def _treeshap_interventional():
    from sklearn.tree import DecisionTreeRegressor

    from sklearn_xai.tree import TreeShapExplainer

    return TreeShapExplainer(DecisionTreeRegressor(max_depth=3, random_state=0),
                             feature_perturbation="interventional", max_background=500,
                             random_state=0)


INSTANCES["TreeShapExplainer"] = [_treeshap_path, _treeshap_interventional]
from sklearn.tree import DecisionTreeRegressor  # noqa: E402

from sklearn_xai.tree import TreeShapExplainer  # noqa: E402

INSTANCES["TreeShapExplainer"] = [
    lambda: TreeShapExplainer(DecisionTreeRegressor(max_depth=3, random_state=0)),
    lambda: TreeShapExplainer(DecisionTreeRegressor(max_depth=3, random_state=0),
                              feature_perturbation="interventional", max_background=20,
                              random_state=0),
]
EXPECTED_FAILED["TreeShapExplainer"] = {}
# --- end TreeShapExplainer ---------------------------------------------------------------
# --- ShearExplainer (issue 4) ---------------------------------------------------------------


def _shear_linear():
    from sklearn.linear_model import LinearRegression

    from sklearn_xai import ShearExplainer

    return ShearExplainer(LinearRegression(), n_evals=8, random_state=0)


def _shear_tree_random():
    from sklearn.tree import DecisionTreeRegressor

    from sklearn_xai import ShearExplainer

    return ShearExplainer(DecisionTreeRegressor(max_depth=3, random_state=0), n_evals=4,
                          cooperators="random", efficiency="redistribute", random_state=0)


def _shear_third_order():
    # a model with a three-way interaction and K = 1 < n_players - 1: the values are random,
    # so the subset / sample-order checks test that a row's draws follow its content
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures

    from sklearn_xai import ShearExplainer

    return ShearExplainer(
        make_pipeline(PolynomialFeatures(degree=3, interaction_only=True), Ridge(alpha=1e-3)),
        n_evals=4, random_state=0)


INSTANCES["ShearExplainer"] = [_shear_linear, _shear_tree_random, _shear_third_order]
EXPECTED_FAILED["ShearExplainer"] = {}
# --- end ShearExplainer ----------------------------------------------------------------------
# --- MaceRecourse (branch mace) ---------------------------------------------------------
def _mace_instances():
    from sklearn.linear_model import LogisticRegression

    from sklearn_xai.recourse import MaceRecourse

    return [
        lambda: MaceRecourse(
            LogisticRegression(), n_counterfactuals=1, refine=False, neighbors="exact",
            random_state=0,
        )
    ]


INSTANCES["MaceRecourse"] = _mace_instances()
EXPECTED_FAILED["MaceRecourse"] = {}
# --- end MaceRecourse -------------------------------------------------------------------

# --- P2CERecourse (branch p2ce) ---------------------------------------------------------
def _p2ce_instance():
    from sklearn.linear_model import LogisticRegression

    from sklearn_xai.recourse import P2CERecourse

    return P2CERecourse(LogisticRegression(), grid_step=0.25, max_changes=2, n_estimators=5,
                        shap_samples=5, random_state=0)


INSTANCES["P2CERecourse"] = [_p2ce_instance]
EXPECTED_FAILED["P2CERecourse"] = {}
# --- end P2CERecourse -------------------------------------------------------------------

# --- knockoffs: KnockoffSHAP, KnockoffSAGE (sklearn_xai.shapley), samplers (begin) ---
from sklearn.linear_model import LinearRegression as _KoLinear  # noqa: E402

from sklearn_xai.knockoffs import GaussianKnockoffs as _KoGaussian  # noqa: E402
from sklearn_xai.knockoffs import SequentialKnockoffs as _KoSequential  # noqa: E402
from sklearn_xai.shapley import KnockoffSAGE as _KoSAGE  # noqa: E402
from sklearn_xai.shapley import KnockoffSHAP as _KoSHAP  # noqa: E402

INSTANCES["KnockoffSHAP"] = [
    lambda: _KoSHAP(_KoLinear(), n_knockoffs=2, algorithm="permutation", n_evals=8,
                    random_state=0),
]
INSTANCES["KnockoffSAGE"] = [
    lambda: _KoSAGE(_KoLinear(), n_knockoffs=2, n_permutations=2, random_state=0),
]
INSTANCES["GaussianKnockoffs"] = [lambda: _KoGaussian(), lambda: _KoGaussian(method="sdp")]
INSTANCES["SequentialKnockoffs"] = [lambda: _KoSequential(cv=2, Cs=2, random_state=0)]
# --- knockoffs (end) ---
