"""Reliability faults of the knockoff samplers and of KnockoffSHAP / KnockoffSAGE.

One test per finding: singular covariances (whatever the BLAS kernel), a SAGE stop rule
that never stopped, knockoff memory that ignored ``batch_size``, and error messages that
named the wrong problem.
"""

import numpy as np
import pytest
from scipy import linalg
from sklearn.dummy import DummyRegressor
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, LogisticRegression

from sklearn_xai.knockoffs import GaussianKnockoffs
from sklearn_xai.knockoffs._smatrix import solve_equicorrelated, solve_s
from sklearn_xai.shapley import KnockoffSAGE, KnockoffSHAP, _knockoff

METHODS = ["mvr", "sdp", "equicorrelated"]


def _data(n=120, p=3, seed=0):
    rng = np.random.default_rng(seed)
    C = 0.3 * np.ones((p, p)) + 0.7 * np.eye(p)
    X = rng.multivariate_normal(np.zeros(p), C, size=n)
    y = X @ np.arange(1.0, p + 1) + 0.3 * rng.standard_normal(n)
    return X, y


def _corr(A):
    S = A @ A.T
    d = np.sqrt(np.diag(S))
    return S / np.outer(d, d)


# -------------------------------------------------------------- 0. singular covariance
@pytest.mark.parametrize("method", METHODS)
def test_collinear_columns_are_a_value_error_naming_them(method):
    # the third column is the sum of the first two: the sample covariance is singular in
    # exact arithmetic, and round-off may leave its smallest eigenvalue of either sign
    X, _ = _data(300, 4)
    Xs = np.hstack([X, X[:, :1] + X[:, 1:2]])
    with pytest.raises(ValueError, match="singular") as info:
        GaussianKnockoffs(method=method, shrinkage=None).fit(Xs)
    msg = str(info.value)
    assert "linearly dependent" in msg and "shrinkage='ledoit_wolf'" in msg
    assert "[0, 1, 4]" in msg  # the columns of the dependence
    # Ledoit-Wolf shrinkage makes the same data usable
    kn = GaussianKnockoffs(method=method).fit(Xs)
    assert np.all(np.isfinite(kn.sample(Xs[:5], random_state=0)))


@pytest.mark.parametrize("method", METHODS)
def test_solvers_use_a_relative_singularity_tolerance(method):
    # rank 16 of 20, then lifted by 5e-15: positive but at round-off level relative to
    # lambda_max (the tolerance is p * eps * lambda_max, about 1e-14 here)
    rng = np.random.default_rng(1)
    base = _corr(rng.standard_normal((20, 16)))
    C = (base + 5e-15 * np.eye(20)) / (1 + 5e-15)
    with pytest.raises(ValueError, match="singular"):
        solve_s(C, method)
    # a tiny but genuine smallest eigenvalue is accepted
    C = (1 - 1e-6) * base + 1e-6 * np.eye(20)
    s, _ = solve_s(C, method)
    assert np.all(s > 0) and np.linalg.eigvalsh(2 * C - np.diag(s)).min() > -1e-9
    if method == "equicorrelated":
        np.testing.assert_allclose(s, solve_equicorrelated(C))


def test_linalg_errors_become_value_errors(monkeypatch):
    X, _ = _data(60, 3)
    C = _corr(np.random.default_rng(2).standard_normal((3, 5)))

    def fail(*args, **kwargs):
        raise linalg.LinAlgError("3-th leading minor of the array is not positive definite")

    kn = GaussianKnockoffs().fit(X)
    with monkeypatch.context() as m:
        m.setattr(linalg, "inv", fail)
        with pytest.raises(ValueError, match="positive definite.*drop"):
            solve_s(C, "mvr")
    with monkeypatch.context() as m:
        m.setattr(linalg, "solve", fail)
        with pytest.raises(ValueError, match="positive definite.*drop"):
            solve_s(C, "sdp")
    with monkeypatch.context() as m:
        m.setattr(linalg, "cho_factor", fail)
        with pytest.raises(ValueError, match="shrinkage='ledoit_wolf'"):
            GaussianKnockoffs(method="equicorrelated", shrinkage=None).fit(X)
        with pytest.raises(ValueError, match="covariance"):
            kn.score(X)


# ------------------------------------------------------------------- 1. SAGE stop rule
@pytest.mark.timeout(60)
def test_sage_default_stop_rule_ends_with_one_feature():
    X, y = _data(80, 1)
    lr = LinearRegression().fit(X, y)
    bg = X[:5]
    res = KnockoffSAGE(FrozenEstimator(lr), imputation="marginal", background=bg,
                       random_state=0).fit(X).explain(X[:20], y[:20])
    assert res.converged
    # one player: its Shapley value is exactly loss(empty) - loss(full), per row
    per_row = (y[:20] - lr.predict(bg).mean()) ** 2 - (y[:20] - lr.predict(X[:20])) ** 2
    np.testing.assert_allclose(res.importances, per_row.mean(), rtol=1e-10)
    np.testing.assert_allclose(res.std, per_row.std(ddof=1) / np.sqrt(20), rtol=1e-10)


@pytest.mark.timeout(60)
def test_sage_default_stop_rule_ends_with_one_feature_group():
    X, y = _data(80, 3)
    model = FrozenEstimator(LinearRegression().fit(X, y))
    kw = {"n_knockoffs": 3, "feature_groups": [[0, 1, 2]], "random_state": 0}
    res = KnockoffSAGE(model, **kw).fit(X).explain(X[:20], y[:20])
    assert res.converged and res.importances.shape == (1,)
    exact = KnockoffSAGE(model, algorithm="exact", **kw).fit(X).explain(X[:20], y[:20])
    np.testing.assert_allclose(res.importances, exact.importances, rtol=1e-12)


@pytest.mark.timeout(60)
def test_sage_default_stop_rule_ends_for_a_constant_model():
    X, y = _data(60, 3)
    model = FrozenEstimator(DummyRegressor().fit(X, y))
    res = KnockoffSAGE(model, n_knockoffs=2, random_state=0).fit(X).explain(X[:15], y[:15])
    assert res.converged
    np.testing.assert_array_equal(res.importances, 0.0)
    np.testing.assert_array_equal(res.std, 0.0)


@pytest.mark.timeout(60)
def test_sage_permutation_cap_warns(monkeypatch):
    X, y = _data(60, 3)
    model = FrozenEstimator(LinearRegression().fit(X, y))
    monkeypatch.setattr(_knockoff, "MAX_PERMUTATION_ROUNDS", 3)
    sage = KnockoffSAGE(model, n_knockoffs=2, convergence_tol=1e-9, random_state=0).fit(X)
    with pytest.warns(ConvergenceWarning, match="MAX_PERMUTATION_ROUNDS"):
        res = sage.explain(X[:10], y[:10])
    assert res.n_permutations == 3 and not res.converged
    # an explicit n_permutations is the cap, without a warning
    res = sage.set_params(n_permutations=2).explain(X[:10], y[:10])
    assert res.n_permutations == 2


# -------------------------------------------------------------------- 11. SAGE memory
@pytest.mark.parametrize("algorithm", ["permutation", "exact"])
def test_sage_draws_knockoffs_per_batch(monkeypatch, algorithm):
    X, y = _data(100, 3)
    model = FrozenEstimator(LinearRegression().fit(X, y))
    kw = {"n_knockoffs": 3, "algorithm": algorithm, "n_permutations": 3,
          "convergence_tol": None, "random_state": 5}
    sizes, pending = [], []  # rows per sampler call; rows sampled before each model call
    sample, predict = GaussianKnockoffs._sample_seeded, LinearRegression.predict

    def recording_sample(self, X_rows, *args, **kwargs):
        sizes.append(len(X_rows))
        return sample(self, X_rows, *args, **kwargs)

    def recording_predict(self, Z):
        pending.append(sum(sizes))
        sizes.clear()
        return predict(self, Z)

    monkeypatch.setattr(GaussianKnockoffs, "_sample_seeded", recording_sample)
    monkeypatch.setattr(LinearRegression, "predict", recording_predict)
    small = KnockoffSAGE(model, batch_size=7, **kw).fit(X).explain(X[:30], y[:30])
    # knockoffs of at most one batch of rows exist when the model is called
    assert pending and max(pending) == 7
    large = KnockoffSAGE(model, batch_size=64, **kw).fit(X).explain(X[:30], y[:30])
    np.testing.assert_allclose(small.importances, large.importances, rtol=1e-12)
    np.testing.assert_allclose(small.std, large.std, rtol=1e-12)


# ------------------------------------------------------------------ 12. error messages
def test_too_few_rows_is_named_instead_of_shrinkage():
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match="2 rows") as info:
        GaussianKnockoffs().fit(rng.standard_normal((2, 3)))  # default Ledoit-Wolf
    assert "more rows" in str(info.value)
    assert "shrinkage='ledoit_wolf'" not in str(info.value)
    with pytest.raises(ValueError, match="2 rows.*more rows"):
        GaussianKnockoffs(shrinkage=None).fit(rng.standard_normal((2, 2)))
    with pytest.raises(ValueError, match="3 rows.*shrinkage='ledoit_wolf'"):
        GaussianKnockoffs(shrinkage=None).fit(rng.standard_normal((3, 4)))
    # a constant column does not count: 2 rows, one varying column is fine
    X2 = np.column_stack([rng.standard_normal(2), np.ones(2)])
    assert np.all(np.isfinite(GaussianKnockoffs().fit(X2).sample(X2, random_state=0)))


@pytest.mark.parametrize("cls", [KnockoffSHAP, KnockoffSAGE])
def test_background_with_nan_names_background(cls):
    X, y = _data(60, 3)
    model = FrozenEstimator(LinearRegression().fit(X, y))
    bg = X[:5].copy()
    bg[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"background contains NaN.*column 1"):
        cls(model, imputation="marginal", background=bg).fit(X)
    bg[2, 1] = np.inf
    with pytest.raises(ValueError, match="background contains infinity"):
        cls(model, imputation="marginal", background=bg).fit(X)
    # a model that takes NaN takes it in the background too
    bg[2, 1] = np.nan
    hgb = FrozenEstimator(HistGradientBoostingRegressor(max_iter=5).fit(X, y))
    cls(hgb, imputation="marginal", background=bg).fit(X)


def test_sage_y_shapes():
    X, y = _data(80, 3)
    labels = (y > 0).astype(int)
    clf = FrozenEstimator(LogisticRegression().fit(X, labels))
    sage = KnockoffSAGE(clf, n_knockoffs=2, n_permutations=2, convergence_tol=None,
                        random_state=0).fit(X)
    ref = sage.explain(X[:10], labels[:10])
    with pytest.warns(DataConversionWarning):
        col = sage.explain(X[:10], labels[:10].reshape(-1, 1))
    np.testing.assert_array_equal(col.importances, ref.importances)
    with pytest.raises(ValueError, match=r"y .*shape \(10, 2\)"):
        sage.explain(X[:10], np.column_stack([labels[:10], labels[:10]]))
    with pytest.raises(ValueError, match="y has 9 rows but X has 10"):
        sage.explain(X[:10], labels[:9])
    with pytest.raises(ValueError, match=r"y must .*shape \(\)"):
        sage.explain(X[:10], 1)
    reg = FrozenEstimator(LinearRegression().fit(X, y))
    rsage = KnockoffSAGE(reg, n_knockoffs=2, n_permutations=2, convergence_tol=None,
                         random_state=0).fit(X)
    ref = rsage.explain(X[:10], y[:10])
    with pytest.warns(DataConversionWarning):
        col = rsage.explain(X[:10], y[:10].reshape(-1, 1))
    np.testing.assert_array_equal(col.importances, ref.importances)
    with pytest.raises(ValueError, match="y must be numeric"):
        rsage.explain(X[:10], np.array(["a"] * 10))
    with pytest.raises(ValueError, match="y contains NaN"):
        rsage.explain(X[:10], np.full(10, np.nan))
