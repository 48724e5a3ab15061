"""Test settings of every registered explainer (the scikit-learn / imbalanced-learn pattern
of ``sklearn/utils/_test_common/instance_generator.py``): instances for scikit-learn's
estimator checks, the checks each is expected to fail (with the reason), and small, fast
parameters for the fuzz, contract, Dask and row-invariance tests.

The library classes declare nothing for the tests. Each table below holds per-class
overrides; an explainer registered in ``sklearn_xai/_registry.py`` without an entry gets the
DEFAULT (a ``LogisticRegression``, ``random_state=0`` where the class has that parameter),
so that a newly registered explainer is tested without editing the tests. The knockoff
samplers, which are estimators but not explainers, are listed here too.
"""

from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from sklearn.tree import DecisionTreeRegressor

from sklearn_xai._registry import all_explainers
from sklearn_xai.knockoffs import GaussianKnockoffs, SequentialKnockoffs

#: every registered explainer class, by class name (registry order)
CLASSES = {cls.__name__: cls for cls in all_explainers()}


def _seeded(cls):
    return {"random_state": 0} if "random_state" in cls._get_param_names() else {}


# ----------------------------------------------------------------- small, fast parameters
#: per-class settings that keep fit and explain fast for any model; DEFAULT: ``_seeded``
PARAMS = {
    "TreeShapExplainer": {"batch_size": 8},
    "ShearExplainer": {"n_evals": 4, "batch_size": 8, "random_state": 0},
    "KnockoffSHAP": {"n_knockoffs": 2, "batch_size": 8, "max_model_rows": 64,
                     "random_state": 0},
    "KnockoffSAGE": {"n_knockoffs": 2, "n_permutations": 2, "tol": None, "batch_size": 8,
                     "max_model_rows": 64, "random_state": 0},
    "MaceRecourse": {"n_counterfactuals": 1, "refine": False, "neighbors": "exact",
                     "n_neighbors": 5, "posthoc_sparsity": False, "batch_size": 8,
                     "random_state": 0},
    "P2CERecourse": {"grid_step": 0.25, "max_changes": 2, "n_estimators": 5,
                     "shap_samples": 5, "time_limit": 5.0, "random_state": 0},
}


def fast_params(cls):
    """Small, fast settings of explainer class ``cls`` for any model (``PARAMS`` or the
    default: ``random_state=0`` where the class has it)."""
    return dict(PARAMS.get(cls.__name__, _seeded(cls)))


def default_model():
    """The model of an explainer without its own entry: a small classifier."""
    return LogisticRegression()


def model_for(cls):
    """An unfitted classifier ``cls`` can explain: a small forest for TreeSHAP, else
    ``default_model()``."""
    if cls.__name__ == "TreeShapExplainer":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0)
    return default_model()


# ------------------------------------------------------------ scikit-learn's estimator checks
def _tree(cls):
    def tree():
        return DecisionTreeRegressor(max_depth=3, random_state=0)

    return [lambda: cls(tree()),
            lambda: cls(tree(), imputation="marginal", max_background=20,
                        random_state=0),
            # a Pipeline explained in its input columns
            lambda: cls(make_pipeline(StandardScaler(), tree()),
                        imputation="marginal")]


def _shear(cls):
    def poly():
        return make_pipeline(PolynomialFeatures(degree=3, interaction_only=True),
                             Ridge(alpha=1e-3))

    return [
        lambda: cls(LinearRegression(), n_evals=8, random_state=0),
        lambda: cls(DecisionTreeRegressor(max_depth=3, random_state=0), n_evals=4,
                    cooperators="random", efficiency="redistribute", random_state=0),
        # a three-way interaction and K = 1 < n_players - 1: the values are random, so
        # the subset / sample-order checks test that a row's draws follow its content
        lambda: cls(poly(), n_evals=4, random_state=0),
        # the self-stopping budget: rounds per row, which must follow the row too
        lambda: cls(poly(), n_evals="auto", tol=0.3, random_state=0),
        # a fixed budget split into two rounds of fills
        lambda: cls(poly(), n_evals=8, n_rounds=2, random_state=0),
        # the players are the columns the last step receives
        lambda: cls(make_pipeline(StandardScaler(), Ridge(alpha=1e-3)),
                    feature_space="model", n_evals=4, random_state=0),
    ]


#: class name -> function(cls) -> list of factories of unfitted instances
_INSTANCE_MAKERS = {
    "TreeShapExplainer": _tree,
    "ShearExplainer": _shear,
    "KnockoffSHAP": lambda cls: [
        lambda: cls(LinearRegression(), n_knockoffs=2, algorithm="permutation", n_evals=8,
                    random_state=0),
        lambda: cls(LinearRegression(), n_knockoffs=2, algorithm="kernel", n_evals="auto",
                    tol=0.3, random_state=0)],
    "KnockoffSAGE": lambda cls: [
        lambda: cls(LinearRegression(), n_knockoffs=2, n_permutations=2, random_state=0),
        lambda: cls(LinearRegression(), n_knockoffs=2, algorithm="frontier", n_evals=4,
                    random_state=0)],
    "MaceRecourse": lambda cls: [
        lambda: cls(LogisticRegression(), n_counterfactuals=1, refine=False,
                    neighbors="exact", random_state=0)],
    "P2CERecourse": lambda cls: [
        lambda: cls(LogisticRegression(), grid_step=0.25, max_changes=2, n_estimators=5,
                    shap_samples=5, random_state=0)],
}


def instances(cls):
    """Factories of instances of ``cls`` (with their own models) for scikit-learn's checks;
    DEFAULT: one, on ``default_model()`` with ``fast_params(cls)``."""
    make = _INSTANCE_MAKERS.get(cls.__name__)
    if make is None:
        return [lambda: cls(default_model(), **fast_params(cls))]
    return make(cls)


#: class name -> {check name: reason} of the scikit-learn checks it is expected to fail
_EXPECTED_FAILED = {}


def expected_failed(cls):
    """The scikit-learn checks ``cls`` is expected to fail, each with its reason."""
    return dict(_EXPECTED_FAILED.get(cls.__name__, {}))


INSTANCES = {name: instances(cls) for name, cls in CLASSES.items()}
EXPECTED_FAILED = {name: expected_failed(cls) for name, cls in CLASSES.items()}

INSTANCES["GaussianKnockoffs"] = [lambda: GaussianKnockoffs(),
                                  lambda: GaussianKnockoffs(method="sdp")]
INSTANCES["SequentialKnockoffs"] = [lambda: SequentialKnockoffs(cv=2, Cs=2, random_state=0)]
