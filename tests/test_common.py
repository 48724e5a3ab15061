"""scikit-learn's estimator checks and our explainer contract over every public explainer."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from ._instances import EXPECTED_FAILED, INSTANCES
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


CONTRACT = [("ToyBaselineShapley", lambda m: ToyBaselineShapley(m))]


@pytest.mark.parametrize("name, make", CONTRACT, ids=[c[0] for c in CONTRACT])
def test_contract_clone_frozen_pickle_pipeline_search(name, make, data):
    X, y = data
    model = LogisticRegression().fit(X, y)
    explainer = make(FrozenEstimator(model))
    cloned = clone(explainer)
    assert cloned.model.estimator is model
    fitted = cloned.fit(X)
    out = fitted.transform(X[:4])
    assert out.ndim == 2 and out.shape[0] == 4
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(again.transform(X[:4]), out)
    pipe = Pipeline([("explain", make(FrozenEstimator(model))), ("clf", LogisticRegression())])
    assert pipe.fit(X, y).predict(X[:3]).shape == (3,)
    named = make(FrozenEstimator(model)).set_output(transform="pandas").fit(X).transform(X[:3])
    assert list(named.columns) == list(fitted.get_feature_names_out())
    param = "n_evals" if "n_evals" in explainer.get_params() else "batch_size"
    search = GridSearchCV(make(FrozenEstimator(model)), {param: [8, 16]}, cv=2).fit(X)
    assert np.isfinite(search.best_score_)
