"""cross_explain: explanations refitted across folds or bootstrap resamples."""

import re

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeRegressor

from sklearn_xai import Attribution, KnockoffSAGE, KnockoffSHAP, TreeShapExplainer
from sklearn_xai.model_selection import CrossExplanation, cross_explain


def _linear(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * np.array([1.0, 2.0, 0.5])
    y = X @ np.array([1.0, -0.5, 2.0]) + 0.3 + rng.normal(scale=1.0, size=n)
    return X, y


def _exact_shap(X):
    return KnockoffSHAP(LinearRegression(), imputation="marginal", algorithm="exact",
                        background=X[:30])


def test_bootstrap_refit_variance_matches_coefficient_covariance():
    X, y = _linear()
    rows = X[:6]
    R = 300
    res = cross_explain(_exact_shap(X), X, y, explain_X=rows, n_resamples=R,
                        random_state=0)
    assert isinstance(res, CrossExplanation)
    assert res.per_refit.shape == (R, 6, 3)
    # linear model, fixed background: phi_ij = beta_j (x_ij - mean_bg_j)
    Xc = X - X.mean(axis=0)
    resid = y - LinearRegression().fit(X, y).predict(X)
    sigma2 = resid @ resid / (len(y) - 4)                  # true sigma**2 is 1
    var_beta = sigma2 * np.diag(np.linalg.inv(Xc.T @ Xc))
    closed = var_beta * (rows - X[:30].mean(axis=0)) ** 2  # (6, 3)
    refit_var = (res.std_refit * np.sqrt(R)) ** 2
    np.testing.assert_allclose(refit_var, res.per_refit.var(axis=0, ddof=1))
    ratio = refit_var.sum(axis=0) / closed.sum(axis=0)
    assert np.all((ratio > 0.6) & (ratio < 1.6)), ratio
    # the exact explainer has no sampling error
    np.testing.assert_array_equal(res.std_sampling, 0.0)
    # the mean attribution is near the true coefficients' attribution
    true = np.array([1.0, -0.5, 2.0]) * (rows - X[:30].mean(axis=0))
    assert np.all(np.abs(res.values - true) < 5 * res.std_refit * np.sqrt(R) + 1e-9)


def test_same_result_for_any_n_jobs_and_stability_measures():
    X, y = _linear(n=80)
    kw = {"cv": 4, "explain_X": X[:5], "k": 2, "random_state": 1}
    a = cross_explain(_exact_shap(X), X, y, n_jobs=1, **kw)
    b = cross_explain(_exact_shap(X), X, y, n_jobs=2, **kw)
    np.testing.assert_array_equal(a.per_refit, b.per_refit)
    for name in ("values", "std_sampling", "std_refit", "top_k_share", "sign_agreement"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.n_refits == 4 and a.values.shape == (5, 3) and a.k == 2
    # direct numpy computation from per_refit
    R, n, P = a.per_refit.shape
    top = np.zeros((n, P))
    for r in range(R):
        for i in range(n):
            mag = np.abs(a.per_refit[r, i])
            for j in range(P):
                top[i, j] += np.sum(mag > mag[j]) < 2
    np.testing.assert_allclose(a.top_k_share, top / R)
    np.testing.assert_allclose(
        a.sign_agreement, (np.sign(a.per_refit) == np.sign(a.values)).mean(axis=0))
    for name in ("top_k_share", "sign_agreement"):
        v = getattr(a, name)
        assert np.all((v >= 0) & (v <= 1))
    np.testing.assert_allclose(a.values, a.per_refit.mean(axis=0))
    frame = a.to_frame()
    assert len(frame) == 15
    assert list(frame.columns) == ["row", "feature", "value", "std_sampling", "std_refit",
                                   "top_k_share", "sign_agreement"]


def test_tree_shap_with_a_splitter():
    from sklearn.model_selection import KFold

    X, y = _linear(n=90)
    res = cross_explain(TreeShapExplainer(DecisionTreeRegressor(max_depth=3,
                                                                random_state=0)),
                        X, y, cv=KFold(3, shuffle=True, random_state=0), explain_X=X[:4])
    assert res.per_refit.shape == (3, 4, 3)
    assert res.feature_names == ["x0", "x1", "x2"] or len(res.feature_names) == 3
    assert np.all(np.isfinite(res.std_refit))
    np.testing.assert_array_equal(res.std_sampling, 0.0)


def test_knockoff_sage_global():
    X, y = _linear(n=60)
    sage = KnockoffSAGE(LinearRegression(), imputation="marginal", background=X[:10],
                        algorithm="exact")
    res = cross_explain(sage, X, y, cv=3, k=1)
    assert res.is_global and res.values.shape == (3,) and res.per_refit.shape == (3, 3)
    assert res.output_names == []
    assert np.all(res.std_sampling > 0)        # the spread over the explained rows
    # feature 2 (coefficient 2, sd 0.5) vs feature 1 (coefficient -0.5, sd 2): both matter
    assert np.all((res.top_k_share >= 0) & (res.top_k_share <= 1))
    np.testing.assert_allclose(res.top_k_share.sum(), 1.0)   # no ties: one top-1 per refit
    assert list(res.to_frame().columns)[:2] == ["feature", "value"]


def test_frozen_model_refused_and_y_required():
    X, y = _linear(n=40)
    frozen = FrozenEstimator(LinearRegression().fit(X, y))
    with pytest.raises(ValueError, match="nothing to refit"):
        cross_explain(KnockoffSHAP(frozen, imputation="marginal", algorithm="exact",
                                   background=X[:10]), X, y)
    with pytest.raises(ValueError, match="needs y"):
        cross_explain(_exact_shap(X), X, None)
    with pytest.raises(ValueError, match="k must"):
        cross_explain(_exact_shap(X), X, y, k=0)


def test_sampled_explainer_dataframe_and_several_outputs():
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(90, 3)), columns=["a", "b", "c"],
                     index=np.arange(100, 190))
    y = np.digitize(X["a"] + 0.5 * rng.normal(size=90), [-0.5, 0.5])   # 3 classes
    est = KnockoffSHAP(LogisticRegression(), imputation="marginal",
                       algorithm="permutation", background=X.iloc[:10], n_evals=8)
    res = cross_explain(est, X, y, cv=3, explain_X=X.iloc[:4], k=1, random_state=0)
    assert res.values.shape == (4, 3, 3) and res.per_refit.shape == (3, 4, 3, 3)
    assert res.feature_names == ["a", "b", "c"] and len(res.output_names) == 3
    stds = res.extras["per_refit_std"]
    assert stds.shape == res.per_refit.shape and np.nanmax(stds) > 0
    np.testing.assert_allclose(res.std_sampling, np.sqrt((stds ** 2).mean(axis=0) / 3))
    # each refit's plain standard error: its std without the Student-t widening
    from sklearn.base import clone

    from sklearn_xai._stats import t_factor
    train = res.extras["splits"][0]
    seeded = clone(est).set_params(random_state=0)
    res = cross_explain(seeded, X, y, cv=3, explain_X=X.iloc[:4], k=1, random_state=0)
    stds = res.extras["per_refit_std"]
    att = clone(seeded).fit(X.iloc[train], y[train]).explain(X.iloc[:4])
    assert np.all(att.std_dof == att.extras["n_units"] - 1)
    np.testing.assert_allclose(stds[0], att.std / t_factor(att.std_dof), rtol=1e-12)
    # top-1 per row and output: ties aside, exactly one player per refit
    assert np.all(res.top_k_share.sum(axis=1) >= 1 - 1e-12)
    frame = res.to_frame()
    assert len(frame) == 36 and list(frame["row"].unique()) == [100, 101, 102, 103]
    assert "output" in frame.columns


# --- refits with different classes, groups ------------------------------------------------


def _rare_class_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    y[0], y[1] = 2, 3                       # two rare classes, one row each
    return X, y


def _tree_classifier_shap():
    from sklearn.tree import DecisionTreeClassifier

    return TreeShapExplainer(DecisionTreeClassifier(max_depth=3, random_state=0))


def test_refits_that_miss_a_class_are_an_error_naming_the_refit_and_class():
    """Refit 1 never saw class 2 (its proba(3) sat where refit 0 has proba(2)): no
    average of different classes, but an error that says which refit and class."""
    X, y = _rare_class_data()
    rows = np.arange(40)
    cv = [(np.delete(rows, 1), rows[:5]),   # classes 0, 1, 2
          (np.delete(rows, 0), rows[:5])]   # classes 0, 1, 3
    with pytest.raises(ValueError, match=re.escape(
            "refit 1 (training fold 1) explains ['proba(0)', 'proba(1)', 'proba(3)'] and "
            "lacks ['proba(2)'] (its training rows miss the classes [2])")) as info:
        cross_explain(_tree_classifier_shap(), X, y, cv=cv, explain_X=X[:2])
    assert "refit 0 (training fold 0)" in str(info.value)
    assert "StratifiedKFold" in str(info.value)
    # a bootstrap resample that misses a class: the same error, not numpy's
    y2 = (X[:, 0] > 0).astype(int)
    y2[0] = 2
    with pytest.raises(ValueError, match=r"bootstrap resample \d+\) explains \['proba\(1\)'\] "
                                         r"and lacks \['proba\(0\)', 'proba\(2\)'\] \(its "
                                         r"training rows miss the classes \[2\]\)"):
        cross_explain(_tree_classifier_shap(), X, y2, n_resamples=10, random_state=0,
                      explain_X=X[:2])
    # every refit with every class: per_refit stacks each refit's own explanation
    y3 = np.where(y > 1, 0, y)
    res = cross_explain(_tree_classifier_shap(), X, y3, cv=cv, explain_X=X[:2])
    assert res.output_names == ["proba(1)"]
    for r, (train, _) in enumerate(cv):
        from sklearn.base import clone

        alone = clone(_tree_classifier_shap()).fit(X[train], y3[train]).explain(X[:2])
        np.testing.assert_array_equal(res.per_refit[r], alone.values)


class _ClassOrderExplainer(BaseEstimator):
    """Outputs ``proba(c)`` in the order the classes first appear in the training rows;
    every attribution of class ``c``'s output is ``c``."""

    def __init__(self, model=None):
        self.model = model

    def fit(self, X, y):
        self.classes_ = list(dict.fromkeys(np.asarray(y).tolist()))
        return self

    def explain(self, X):
        X = np.asarray(X, dtype=float)
        n, p = X.shape
        C = len(self.classes_)
        values = np.broadcast_to(np.asarray(self.classes_, dtype=float), (n, p, C))
        return Attribution(values=values.copy(), base_values=np.zeros((n, C)), data=X,
                           feature_names=[f"x{j}" for j in range(p)],
                           output_names=[f"proba({c})" for c in self.classes_])


def test_outputs_are_matched_by_name_not_position():
    from sklearn.linear_model import LogisticRegression

    X = np.random.default_rng(0).normal(size=(12, 2))
    y = np.tile([0, 1, 2], 4)
    rows = np.arange(12)
    cv = [(rows, rows[:3]), (rows[::-1], rows[:3]), (np.roll(rows, -1), rows[:3])]
    res = cross_explain(_ClassOrderExplainer(LogisticRegression()), X, y, cv=cv,
                        explain_X=X[:3])
    assert res.output_names == ["proba(0)", "proba(1)", "proba(2)"]
    # every refit's output proba(c) is c, whatever position the refit gave it
    expected = np.broadcast_to([0.0, 1.0, 2.0], (3, 2, 3))
    for r in range(3):
        np.testing.assert_array_equal(res.per_refit[r], expected)
    np.testing.assert_array_equal(res.values, expected)
    np.testing.assert_array_equal(res.std_refit, 0.0)
    np.testing.assert_array_equal(res.sign_agreement[..., 1:], 1.0)


def test_groups_are_passed_to_the_splitter():
    from sklearn.model_selection import GroupKFold

    X, y = _linear(n=60)
    groups = np.repeat(np.arange(6), 10)
    res = cross_explain(_exact_shap(X), X, y, groups=groups, cv=GroupKFold(3),
                        explain_X=X[:4])
    assert res.n_refits == 3
    for train in res.extras["splits"]:
        test = np.setdiff1d(np.arange(60), train)
        assert np.intersect1d(groups[train], groups[test]).size == 0   # whole groups
    same = cross_explain(_exact_shap(X), X, y, explain_X=X[:4],
                         cv=list(GroupKFold(3).split(X, y, groups)))
    np.testing.assert_array_equal(res.per_refit, same.per_refit)
    with pytest.raises(ValueError, match="groups is passed to the cv splitter"):
        cross_explain(_exact_shap(X), X, y, groups=groups, n_resamples=3)
