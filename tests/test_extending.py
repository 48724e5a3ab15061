"""The explainer of the "Writing an explainer" page passes the checks it claims to pass."""

import importlib.util
import pickle
import sys
from itertools import combinations
from math import factorial
from pathlib import Path

import numpy as np
import pytest
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

_PATH = Path(__file__).resolve().parents[1] / "doc" / "extending" / "baseline_shapley.py"
_SPEC = importlib.util.spec_from_file_location("baseline_shapley", _PATH)
_MODULE = importlib.util.module_from_spec(_SPEC)
sys.modules["baseline_shapley"] = _MODULE  # so that pickle finds the class
_SPEC.loader.exec_module(_MODULE)
BaselineShapley = _MODULE.BaselineShapley


@parametrize_with_checks([BaselineShapley(LogisticRegression())])
def test_page_explainer_passes_sklearn_checks(estimator, check):
    check(estimator)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    return X, y


def test_page_explainer_values_are_baseline_shapley_values():
    X, y = _data()
    model = LogisticRegression().fit(X, y)
    explainer = BaselineShapley(FrozenEstimator(model)).fit(X)
    att = explainer.explain(X[:4])
    r = X.mean(axis=0)

    def v(x, S):
        z = r.copy()
        z[list(S)] = x[list(S)]
        return model.predict_proba(z[None])[0, 1]

    P = 3
    for i, x in enumerate(X[:4]):
        for j in range(P):
            others = [k for k in range(P) if k != j]
            phi = sum(factorial(len(S)) * factorial(P - len(S) - 1) / factorial(P)
                      * (v(x, S + (j,)) - v(x, S))
                      for m in range(P) for S in combinations(others, m))
            assert att.values[i, j] == pytest.approx(phi, abs=1e-12)


def test_page_explainer_contract():
    X, y = _data()
    model = LogisticRegression().fit(X, y)
    explainer = BaselineShapley(FrozenEstimator(model)).fit(X)
    again = pickle.loads(pickle.dumps(explainer))
    np.testing.assert_allclose(again.transform(X[:3]), explainer.transform(X[:3]))
    pipe = Pipeline([("explain", BaselineShapley(FrozenEstimator(model))),
                     ("clf", LogisticRegression())]).fit(X, y)
    assert pipe.predict(X[:3]).shape == (3,)
    search = GridSearchCV(BaselineShapley(FrozenEstimator(model)),
                          {"response_method": ["predict_proba", "decision_function"]},
                          cv=2).fit(X)
    assert np.isfinite(search.best_score_)
    assert explainer.explain(X[:2]).output_names == ["proba(1)"]
