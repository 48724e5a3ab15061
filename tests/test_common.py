"""scikit-learn's estimator checks and our explainer contract over every public explainer."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from ._instances import CLASSES, EXPECTED_FAILED, INSTANCES, default_model, fast_params
from ._toy_explainer import ToyBaselineShapley

_TOY_EXPECTED = {}

ALL = [("ToyBaselineShapley", lambda: ToyBaselineShapley(LogisticRegression()))]
for _name, _factories in INSTANCES.items():
    ALL.extend((_name, f) for f in _factories)


def _expected_failed(estimator):
    name = type(estimator).__name__
    if name == "ToyBaselineShapley":
        return _TOY_EXPECTED
    return EXPECTED_FAILED.get(name, {})


@parametrize_with_checks([factory() for _, factory in ALL],
                         expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_every_expected_failure_has_a_reason():
    for name, table in EXPECTED_FAILED.items():
        for check, reason in table.items():
            assert isinstance(reason, str) and len(reason) > 10, (name, check)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=120, n_features=5, n_informative=3, n_redundant=0,
                               random_state=0)
    return X, y


#: per-class contract settings: (make(model), model, a parameter grid for GridSearchCV);
#: an explainer without an entry: its fast parameters on a LogisticRegression, searched over
#: ``batch_size``
_CONTRACT = {
    "TreeShapExplainer": (lambda cls: lambda m: cls(m), "forest", ("batch_size", [8, 64])),
    "ShearExplainer": (lambda cls: lambda m: cls(m, random_state=0), "lr",
                       ("n_evals", [8, 16])),
    "KnockoffSHAP": (lambda cls: lambda m: cls(m, n_knockoffs=3, random_state=0), "lr",
                     ("n_knockoffs", [2, 3])),
    "MaceRecourse": (lambda cls: lambda m: cls(m, random_state=0), "lr",
                     ("n_neighbors", [10, 20])),
    "P2CERecourse": (lambda cls: lambda m: cls(m, n_estimators=10, grid_step=0.25,
                                               max_changes=2, random_state=0), "lr",
                     ("max_changes", [1, 2])),
}


def _contract_cases():
    """Every registered explainer with a ``transform`` (attribution and recourse), from the
    registry, and the toy explainer of the contract's own tests."""
    from sklearn.ensemble import RandomForestClassifier

    models = {"lr": LogisticRegression(),
              "forest": RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0)}
    cases = [("ToyBaselineShapley", lambda m: ToyBaselineShapley(m), models["lr"],
              ("n_evals", [8, 16]))]
    for name, cls in CLASSES.items():
        if not hasattr(cls, "transform"):
            continue  # a global explainer (KnockoffSAGE): no per-row output to pipe on
        if name in _CONTRACT:
            make, model, grid = _CONTRACT[name]
            cases.append((name, make(cls), models[model], grid))
            continue
        params = fast_params(cls)
        grid = ("batch_size", [8, 64]) if "batch_size" in cls._get_param_names() else \
            ("n_jobs", [None, 1])
        cases.append((name, lambda m, cls=cls, params=params: cls(m, **params),
                      default_model(), grid))
    return cases


CONTRACT = _contract_cases()


@pytest.mark.parametrize("name, make, model, grid", CONTRACT, ids=[c[0] for c in CONTRACT])
def test_contract_clone_frozen_pickle_pipeline_search(name, make, model, grid, data):
    X, y = data
    model = clone(model).fit(X, y)
    explainer = make(FrozenEstimator(model))
    cloned = clone(explainer)
    assert cloned.model.estimator is model
    fitted = cloned.fit(X)
    out = fitted.transform(X[:4])
    assert out.ndim == 2 and out.shape[0] == 4
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(again.transform(X[:4]), out, equal_nan=True)
    step = make(FrozenEstimator(model))
    pipe = Pipeline([("explain", step), ("impute", SimpleImputer()),
                     ("clf", LogisticRegression())])
    assert pipe.fit(X, y).predict(X[:3]).shape == (3,)
    named = make(FrozenEstimator(model)).set_output(transform="pandas").fit(X).transform(X[:3])
    assert list(named.columns) == list(fitted.get_feature_names_out())
    param, values = grid
    search = GridSearchCV(make(FrozenEstimator(model)), {param: values}, cv=2).fit(X)
    assert np.isfinite(search.best_score_)
    assert search.best_estimator_.model_.estimator is model
