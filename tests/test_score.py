"""``score`` of attribution explainers: the signed faithfulness correlation tunes settings."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV

from sklearn_xai import KnockoffSAGE, ShearExplainer
from sklearn_xai.metrics import faithfulness, faithfulness_correlation


class _Interacting(RegressorMixin, BaseEstimator):
    """``f(x) = x0 + 2 x1 - x2 + 3 x0 x3 + 2 x1 x2`` (interactions on purpose)."""

    def fit(self, X, y=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        return X[:, 0] + 2 * X[:, 1] - X[:, 2] + 3 * X[:, 0] * X[:, 3] + 2 * X[:, 1] * X[:, 2]


def _data(n=80, p=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, p))


def _interacting_explainer(**kw):
    X = _data()
    model = FrozenEstimator(_Interacting().fit(X))
    return ShearExplainer(model, **kw).fit(X), X


def test_additive_model_scores_one():
    X = _data()
    y = X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0])
    explainer = ShearExplainer(LinearRegression(), n_evals=8, random_state=0).fit(X, y)
    assert explainer.score(X[:30]) == pytest.approx(1.0, abs=1e-9)


def test_negated_and_random_attributions_score_low():
    explainer, X = _interacting_explainer(n_evals=64, random_state=0)
    rows = X[:40]
    att = explainer.explain(rows)
    good = explainer.score(rows)
    negated = faithfulness_correlation(explainer.model_fn_, rows, -att.values,
                                       explainer.reference_)
    noise = np.random.default_rng(1).normal(size=att.values.shape)
    random = faithfulness_correlation(explainer.model_fn_, rows, noise, explainer.reference_)
    assert good > 0.8
    assert negated < -0.8
    assert good - negated > 1.5
    assert abs(random) < 0.15


def test_large_budget_scores_at_least_as_high_as_tiny_budget():
    rows = _data(seed=3)[:40]
    tiny, large = [], []
    for seed in range(4):
        explainer, _ = _interacting_explainer(n_evals=2, random_state=seed)
        tiny.append(explainer.score(rows))
        explainer, _ = _interacting_explainer(n_evals=128, random_state=seed)
        large.append(explainer.score(rows))
    assert np.mean(large) >= np.mean(tiny)


def test_grid_search_prefers_the_large_budget():
    X = _data()
    model = FrozenEstimator(_Interacting().fit(X))
    search = GridSearchCV(ShearExplainer(model, random_state=0), {"n_evals": [2, 256]},
                          cv=3).fit(X)
    assert search.best_params_ == {"n_evals": 256}


def test_multiclass_score_is_the_mean_of_per_class_scores():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    y = np.digitize(X[:, 0] + X[:, 1] * X[:, 2], [-0.5, 0.5])
    explainer = ShearExplainer(LogisticRegression(), n_evals=16, random_state=0).fit(X, y)
    rows = X[:30]
    att = explainer.explain(rows)
    assert att.values.shape == (30, 4, 3)
    per_class = []
    for k in range(3):
        def f(Z, k=k):
            return explainer.model_fn_(Z)[:, [k]]
        per_class.append(faithfulness_correlation(f, rows, att.values[:, :, k],
                                                  explainer.reference_))
    assert explainer.score(rows) == pytest.approx(np.mean(per_class), rel=1e-12)
    assert len(set(np.round(per_class, 6))) > 1  # the classes do differ


def test_a_rows_score_does_not_depend_on_the_other_rows():
    explainer, X = _interacting_explainer(n_evals=16, random_state=0)
    att = explainer.explain(X[:10]).values
    whole = [faithfulness_correlation(explainer.model_fn_, X[i:i + 1], att[i:i + 1],
                                      explainer.reference_) for i in range(10)]
    assert explainer.score(X[:10]) == pytest.approx(np.mean(whole), rel=1e-12)


class _NegatedSAGE(KnockoffSAGE):
    """SAGE whose importances are negated (a broken explainer for the score to catch)."""

    def _explain(self, X, y, classes):
        result = super()._explain(X, y, classes)
        result.importances = -np.asarray(result.importances)
        return result


@pytest.mark.parametrize("imputation", ["marginal", "knockoff"])
def test_knockoff_sage_score_rewards_the_right_sign(imputation):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = 3 * X[:, 0] + X[:, 1] + 0.5 * X[:, 2] + 0.1 * rng.normal(size=300)
    kw = {"n_knockoffs": 2, "algorithm": "exact", "imputation": imputation,
          "random_state": 0}
    if imputation == "marginal":
        kw["background"] = X[:50]
    good = KnockoffSAGE(LinearRegression(), **kw).fit(X, y)
    bad = _NegatedSAGE(LinearRegression(), **kw).fit(X, y)
    s_good, s_bad = good.score(X[:100], y[:100]), bad.score(X[:100], y[:100])
    assert s_good > 0.9
    assert s_bad < -0.9


def test_faithfulness_counts_steps_equal_up_to_round_off_as_constant():
    # every deletion step lowers f = 0.1 * sum(z) by 0.1 (in exact arithmetic): the steps
    # are constant, so the row scores 0 by the documented rule, whatever the round-off of
    # the sums makes of them
    def model_fn(Z):
        return 0.1 * np.asarray(Z, dtype=float).sum(axis=1, keepdims=True)

    X = np.ones((3, 6))
    values = np.tile(np.arange(6.0, 0.0, -1.0), (3, 1))
    assert faithfulness(model_fn, X, values, np.zeros((1, 6))) == 0.0
    # the Pearson correlation of the signed values with the signed drops, row by row
    rng = np.random.default_rng(0)
    values = rng.normal(size=(3, 6))
    X = rng.normal(size=(3, 6))
    order = np.argsort(-np.abs(values), axis=1, kind="stable")
    drops = 0.1 * np.take_along_axis(X, order, axis=1)  # f drops by 0.1 x_j removing j
    sorted_values = np.take_along_axis(values, order, axis=1)
    expected = np.mean([np.corrcoef(a, d)[0, 1] for a, d in zip(sorted_values, drops)])
    assert faithfulness(model_fn, X, values, np.zeros((1, 6))) == pytest.approx(expected,
                                                                                 rel=1e-9)


def test_faithfulness_is_signed():
    """A negated explanation scores the negative (the deletion order, by |value|, is the
    same), on a model with interactions explained by SHEAR."""
    explainer, X = _interacting_explainer(n_evals=8, random_state=0)
    rows = X[:40]
    att = explainer.explain(rows)
    phi = att.values
    reference = rows.mean(axis=0, keepdims=True)
    good = faithfulness(explainer.model_fn_, rows, phi, reference)
    bad = faithfulness(explainer.model_fn_, rows, -phi, reference)
    assert good > 0.5
    assert bad == pytest.approx(-good, abs=1e-12)
    # an additive model explained exactly against the same reference scores 1
    y = X @ np.array([1.0, -2.0, 0.5, 0.25, 3.0])
    linear = LinearRegression().fit(X, y)
    exact = linear.coef_ * (rows - reference)  # the drop of removing each feature
    fn = lambda Z: linear.predict(Z)[:, None]  # noqa: E731
    assert faithfulness(fn, rows, exact, reference) == pytest.approx(1.0, abs=1e-9)
    assert faithfulness(fn, rows, -exact, reference) == pytest.approx(-1.0, abs=1e-9)
