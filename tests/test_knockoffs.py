"""Tests for the model-X knockoff samplers (sklearn_xai.knockoffs)."""

import pickle
from itertools import product

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV

from sklearn_xai.knockoffs import GaussianKnockoffs, SequentialKnockoffs
from sklearn_xai.knockoffs._smatrix import (
    mvr_loss,
    solve_equicorrelated,
    solve_mvr,
    solve_sdp,
)


def _equicorr(p, rho):
    return rho * np.ones((p, p)) + (1 - rho) * np.eye(p)


def _random_corr(p, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((p, p + 2))
    S = A @ A.T
    d = np.sqrt(np.diag(S))
    return S / np.outer(d, d)


def _feasible(C, s, tol=1e-7):
    return np.linalg.eigvalsh(2 * C - np.diag(s)).min() >= -tol and np.all(s >= -tol)


# ----------------------------------------------------------------------------- s solvers
@pytest.mark.parametrize("rho", [0.0, 0.3, 0.5, 0.7, 0.9])
def test_equicorrelated_and_sdp_closed_form(rho):
    # For an equicorrelated C with rho >= 0, lambda_min = 1 - rho and, by symmetry and
    # concavity, the SDP optimum is the equicorrelated point min(1, 2(1 - rho)).
    C = _equicorr(5, rho)
    expected = min(1.0, 2 * (1 - rho))
    np.testing.assert_allclose(solve_equicorrelated(C), expected, atol=1e-12)
    s, _ = solve_sdp(C)
    np.testing.assert_allclose(s, expected, atol=1e-5)
    assert _feasible(C, s)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sdp_matches_grid_search(seed):
    # Brute force over a grid of s in [0, 1]^3: the best feasible grid point is a lower
    # bound of the optimum, and the optimum is at most one grid step per coordinate above.
    C = _random_corr(3, seed)
    s, _ = solve_sdp(C)
    assert _feasible(C, s)
    step = 1 / 80
    g = np.arange(0, 1 + step / 2, step)
    S = np.array(list(product(g, g, g)))
    M = 2 * C[None] - S[:, :, None] * np.eye(3)[None]
    ok = np.linalg.eigvalsh(M)[:, 0] >= 0
    best = S[ok].sum(axis=1).max()
    assert best - 1e-6 <= s.sum() <= best + 3 * step


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mvr_matches_generic_optimizer(seed):
    C = _random_corr(4, seed)
    s, _ = solve_mvr(C)
    assert _feasible(C, s)
    ours = mvr_loss(C, s)
    best = np.inf
    lam = np.linalg.eigvalsh(C)[0]
    for start in [lam / 2, lam, 0.9 * min(1, 2 * lam)]:
        res = optimize.minimize(
            lambda v: mvr_loss(C, np.clip(v, None, 1.0)) if np.all(v <= 1) else np.inf,
            np.full(4, start), method="Nelder-Mead",
            options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000, "maxfev": 20000},
        )
        best = min(best, res.fun)
    assert ours <= best * (1 + 1e-5)


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_mvr_equicorrelated_matches_scalar_minimisation(rho):
    p = 4
    C = _equicorr(p, rho)
    # eigenvalues of 2C - s I: 2(1 + (p-1) rho) - s once, 2(1 - rho) - s (p-1 times)
    def loss(s):
        return 1 / (2 * (1 + (p - 1) * rho) - s) + (p - 1) / (2 * (1 - rho) - s) + p / s

    res = optimize.minimize_scalar(loss, bounds=(1e-9, min(1, 2 * (1 - rho)) - 1e-12),
                                   method="bounded", options={"xatol": 1e-12})
    s, _ = solve_mvr(C)
    np.testing.assert_allclose(s, res.x, atol=1e-4)


# ----------------------------------------------------------------------- Gaussian sampler
def _gaussian_data(n, seed, p=4):
    rng = np.random.default_rng(seed)
    C = _random_corr(p, seed + 100)
    sd = rng.uniform(0.5, 3.0, size=p)
    Sigma = C * np.outer(sd, sd)
    mu = rng.normal(size=p) * 3
    return rng.multivariate_normal(mu, Sigma, size=n), mu, Sigma


@pytest.mark.parametrize("method", ["mvr", "sdp", "equicorrelated"])
def test_gaussian_exchangeability(method):
    X, _, _ = _gaussian_data(20000, 0)
    Xnew, _, _ = _gaussian_data(20000, 1)  # same distribution, fresh rows
    Xnew = Xnew - Xnew.mean(0) + X.mean(0)
    kn = GaussianKnockoffs(method=method).fit(X)
    Xt = kn.sample(X, random_state=0)[:, 0, :]
    p = X.shape[1]
    joint = np.hstack([X, Xt])
    # theoretical joint covariance with the fitted Sigma and D
    Sig = kn.covariance_
    D = np.diag(kn.s_ * np.diag(Sig))
    G = np.block([[Sig, Sig - D], [Sig - D, Sig]])
    scale = np.sqrt(np.outer(np.diag(G), np.diag(G)))
    rng = np.random.default_rng(5)
    base_cov = np.cov(joint, rowvar=False)
    np.testing.assert_allclose(base_cov / scale, G / scale, atol=0.04)
    for _ in range(4):
        S = rng.random(p) < 0.5
        S[rng.integers(p)] = True
        swap = np.arange(2 * p)
        idx = np.flatnonzero(S)
        swap[idx], swap[idx + p] = idx + p, idx
        swapped = joint[:, swap]
        np.testing.assert_allclose(swapped.mean(0), joint.mean(0),
                                   atol=0.04 * np.sqrt(np.diag(G)).max())
        np.testing.assert_allclose(np.cov(swapped, rowvar=False) / scale, base_cov / scale,
                                   atol=0.04)


def test_gaussian_conditional_moments_match_formula():
    X, _, _ = _gaussian_data(3000, 2)
    kn = GaussianKnockoffs(method="mvr").fit(X)
    x = X[0] + 1.5  # a new row
    draws = kn.sample(x[None], n_knockoffs=40000, random_state=3)[0]
    Sig, mu = kn.covariance_, kn.mean_
    D = np.diag(kn.s_ * np.diag(Sig))
    mean = x - D @ np.linalg.solve(Sig, x - mu)
    cov = 2 * D - D @ np.linalg.solve(Sig, D)
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_allclose(draws.mean(0), mean, atol=5 * sd.max() / np.sqrt(40000))
    np.testing.assert_allclose(np.cov(draws, rowvar=False), cov, atol=0.03 * np.diag(cov).max())
    # the fitted moments are the data's (Ledoit-Wolf shrinks towards a scaled identity)
    np.testing.assert_allclose(mu, X.mean(0))


def test_gaussian_identity_covariance_gives_independent_knockoffs():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 3))
    kn = GaussianKnockoffs(method="sdp", shrinkage=None).fit(X)
    np.testing.assert_allclose(kn.s_, 1.0, atol=0.05)
    Xt = kn.sample(X, random_state=1)[:, 0]
    cross = np.cov(np.hstack([X, Xt]), rowvar=False)[:3, 3:]
    np.testing.assert_allclose(cross, np.diag(1 - kn.s_), atol=0.03)


def test_gaussian_seeds_and_batches():
    X, _, _ = _gaussian_data(500, 3)
    kn = GaussianKnockoffs().fit(X)
    a = kn.sample(X[:20], 4, random_state=7)
    np.testing.assert_array_equal(a, kn.sample(X[:20], 4, random_state=7))
    # fewer rows: the same bits (each row's products are its own)
    np.testing.assert_array_equal(a[:5], kn.sample(X[:5], 4, random_state=7))
    assert not np.allclose(a, kn.sample(X[:20], 4, random_state=8))
    # rows 10..19 alone, with their global indices, reproduce the full call
    from sklearn_xai._utils import draw_base_seed as _draw_base_seed

    base = _draw_base_seed(7)
    np.testing.assert_array_equal(a[10:], kn.sample_seeded(X[10:20], 4, base, range(10, 20)))
    # pickling keeps the sampler
    kn2 = pickle.loads(pickle.dumps(kn))
    np.testing.assert_array_equal(a, kn2.sample(X[:20], 4, random_state=7))


@pytest.mark.parametrize("kind", ["gaussian", "sequential"])
def test_a_rows_knockoffs_do_not_depend_on_the_rows_drawn_with_it(kind):
    # BLAS blocks the rows of one product (in fours or eights, the rest by other kernels),
    # so a row's knockoffs drawn with other rows differed in their last bits from the
    # row's drawn alone; each row's products are now its own
    if kind == "gaussian":
        X, _, _ = _gaussian_data(600, 9, p=12)
        sampler, rows = GaussianKnockoffs().fit(X), X[:23]
    else:
        # products long enough for BLAS's blocked kernels: eight more numeric columns
        df = _mixed_frame(400, 3)
        noise = np.random.default_rng(4).standard_normal((400, 8))
        for k in range(8):
            df[f"n{k}"] = df["x1"] * (k % 3 - 1) + noise[:, k]
        sampler = SequentialKnockoffs(random_state=0, cv=3, Cs=3).fit(df)
        rows = df.iloc[:23]

    def draw(idx):
        sub = rows[idx] if kind == "gaussian" else rows.iloc[idx]
        return sampler.sample_seeded(sub, 5, 17, idx)

    whole = draw(np.arange(23))
    for idx in (np.arange(5, 12), np.arange(3, 4), np.arange(22, -1, -1), np.arange(1, 23, 3)):
        np.testing.assert_array_equal(draw(idx), whole[idx])


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_sequential_row_wise_predictions_are_sklearns(n_classes):
    # the sampler's row-by-row stand-ins for predict / predict_proba (guards a change of
    # scikit-learn's link functions)
    from sklearn.linear_model import LassoCV, LogisticRegressionCV

    from sklearn_xai.knockoffs._sequential import _lasso_predict, _logistic_proba

    rng = np.random.default_rng(n_classes)
    Z = rng.standard_normal((200, 6))
    y = np.digitize(Z[:, 0] + 0.5 * rng.standard_normal(200),
                    np.quantile(Z[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))
    clf = LogisticRegressionCV(Cs=3, cv=3, l1_ratios=(0.0,), use_legacy_attributes=False,
                               max_iter=1000).fit(Z, y)
    np.testing.assert_allclose(_logistic_proba(clf, Z), clf.predict_proba(Z), rtol=0,
                               atol=1e-12)
    reg = LassoCV(cv=3).fit(Z, Z @ np.arange(6.0) + rng.standard_normal(200))
    np.testing.assert_allclose(_lasso_predict(reg, Z), reg.predict(Z), rtol=1e-12, atol=1e-12)


def test_gaussian_estimator_api_and_errors():
    X, _, _ = _gaussian_data(300, 4)
    kn = GaussianKnockoffs(method="sdp")
    assert clone(kn).get_params()["method"] == "sdp"
    with pytest.raises(NotFittedError):
        kn.sample(X)
    gs = GridSearchCV(GaussianKnockoffs(), {"method": ["mvr", "sdp", "equicorrelated"]}, cv=3)
    gs.fit(X)
    assert gs.best_params_["method"] in {"mvr", "sdp", "equicorrelated"}
    assert np.isfinite(gs.best_score_)
    kn.fit(X)
    with pytest.raises(ValueError, match="n_knockoffs"):
        kn.sample(X, n_knockoffs=0)
    with pytest.raises(ValueError, match="features"):
        kn.sample(X[:, :2])
    with pytest.raises(ValueError, match="method"):
        GaussianKnockoffs(method="nope").fit(X)
    Xc = X.copy()
    Xc[:, 1] = 3.0
    knc = GaussianKnockoffs().fit(Xc)  # a constant column is its own knockoff
    ko = knc.sample(Xc[:50], 3, random_state=0)
    np.testing.assert_array_equal(ko[:, :, 1], 3.0)
    assert np.isfinite(knc.score(Xc))
    with pytest.raises(ValueError, match="constant"):
        GaussianKnockoffs().fit(np.ones((10, 2)))
    Xs = np.hstack([X, X[:, :1] + X[:, 1:2]])
    # exactly singular: whatever the sign of the round-off in its smallest eigenvalue
    with pytest.raises(ValueError, match="singular.*linearly dependent"):
        GaussianKnockoffs(shrinkage=None).fit(Xs)
    GaussianKnockoffs().fit(Xs)  # Ledoit-Wolf makes it positive definite
    Xh = X.copy()
    Xh[:, 0] = np.where(np.arange(len(X)) % 2, 1e300, -1e300)
    with pytest.raises(ValueError, match="too large"), np.errstate(over="ignore"):
        GaussianKnockoffs().fit(Xh)
    with pytest.raises(ValueError, match="too large"), np.errstate(over="ignore"):
        SequentialKnockoffs(cv=2).fit(Xh)


def test_gaussian_score_is_loglikelihood():
    X, _, _ = _gaussian_data(400, 5)
    kn = GaussianKnockoffs(shrinkage=None).fit(X)
    from scipy.stats import multivariate_normal

    ref = multivariate_normal(kn.mean_, kn.covariance_).logpdf(X).mean()
    np.testing.assert_allclose(kn.score(X), ref)


# --------------------------------------------------------------------- sequential sampler
def _mixed_frame(n, seed):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(n)
    x1 = z + 0.5 * rng.standard_normal(n)
    x2 = 0.8 * z + 0.6 * rng.standard_normal(n)
    cat = np.where(z + 0.3 * rng.standard_normal(n) > 0.3, "hi", "lo").astype(object)
    three = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2]).astype(object)
    three[z > 1.0] = "c"
    return pd.DataFrame({"x1": x1, "x2": x2, "cat": cat, "three": three, "const": 1.0})


def test_sequential_numeric_exchangeability():
    rng = np.random.default_rng(0)
    C = _equicorr(3, 0.5)
    X = rng.multivariate_normal(np.zeros(3), C, size=4000)
    sk = SequentialKnockoffs(random_state=0, cv=3).fit(X)
    Xt = sk.sample(X, random_state=1)[:, 0]
    assert Xt.dtype == np.float64
    joint = np.hstack([X, Xt])
    base = np.cov(joint, rowvar=False)
    for S in ([0], [1, 2], [0, 2]):
        swap = np.arange(6)
        for j in S:
            swap[j], swap[j + 3] = j + 3, j
        np.testing.assert_allclose(np.cov(joint[:, swap], rowvar=False), base, atol=0.08)
        np.testing.assert_allclose(joint[:, swap].mean(0), joint.mean(0), atol=0.08)
    # knockoffs are not copies: the original-knockoff correlation is clearly below 1
    assert np.corrcoef(X[:, 0], Xt[:, 0])[0, 1] < 0.9


def test_sequential_mixed_categorical_exchangeability():
    df = _mixed_frame(3000, 1)
    sk = SequentialKnockoffs(random_state=0, cv=3, Cs=5).fit(df)
    assert list(sk.categorical_) == [False, False, True, True, False]
    ko = sk.sample(df, random_state=2)[:, 0]
    assert ko.dtype == object
    kcat = ko[:, 2]
    assert set(kcat) <= {"hi", "lo"}
    assert set(ko[:, 3]) <= {"a", "b", "c"}
    np.testing.assert_array_equal(ko[:, 4].astype(float), 1.0)  # constant column kept
    orig = (df["cat"] == "hi").to_numpy()
    knock = kcat == "hi"
    # swap symmetry of the pair (X_cat, X~_cat) and of its link with x1
    p10 = np.mean(orig & ~knock)
    p01 = np.mean(~orig & knock)
    assert abs(p10 - p01) < 0.03
    assert abs(orig.mean() - knock.mean()) < 0.03
    x1 = df["x1"].to_numpy()
    assert abs(np.corrcoef(orig, x1)[0, 1] - np.corrcoef(knock, x1)[0, 1]) < 0.06
    # the knockoff of "three" carries the dependence on z (through x1, x2 and cat)
    assert abs(np.corrcoef(ko[:, 3] == "c", x1)[0, 1]
               - np.corrcoef(df["three"] == "c", x1)[0, 1]) < 0.06


def test_sequential_rare_levels_seeds_and_pickle():
    df = _mixed_frame(400, 2)
    df.loc[0, "three"] = "rare"  # a level seen once
    df.loc[1, "three"] = "rarer"
    sk = SequentialKnockoffs(random_state=0, cv=3, Cs=3).fit(df)
    a = sk.sample(df.iloc[:30], 3, random_state=4)
    assert a.shape == (30, 3, 5)
    np.testing.assert_array_equal(a, sk.sample(df.iloc[:30], 3, random_state=4))
    # fewer rows: the same knockoffs to the bit
    np.testing.assert_array_equal(a[:7], sk.sample(df.iloc[:7], 3, random_state=4))
    assert set(a[:, :, 3].ravel()) <= {"a", "b", "c", "rare", "rarer"}
    big = sk.sample(df.iloc[:1], 4000, random_state=0)[0, :, 3]
    assert 0 < np.mean((big == "rare") | (big == "rarer")) < 0.1
    sk2 = pickle.loads(pickle.dumps(sk))
    np.testing.assert_array_equal(a, sk2.sample(df.iloc[:30], 3, random_state=4))
    # same random_state, same fit
    np.testing.assert_array_equal(
        a, clone(sk).fit(df).sample(df.iloc[:30], 3, random_state=4)
    )


def test_sequential_errors():
    df = _mixed_frame(200, 3)
    with pytest.raises(NotFittedError):
        SequentialKnockoffs().sample(df)
    with pytest.raises(ValueError, match="not numeric"):
        SequentialKnockoffs(categorical_features=["cat"]).fit(df)
    with pytest.raises(ValueError, match="unknown column"):
        SequentialKnockoffs(categorical_features=["nope"]).fit(df)
    sk = SequentialKnockoffs(cv=3, Cs=2, random_state=0).fit(df)
    bad = df.iloc[:3].copy()
    bad.loc[bad.index[0], "cat"] = "unseen"
    with pytest.raises(ValueError, match="not seen in fit"):
        sk.sample(bad)
    with pytest.raises(ValueError, match="feature"):
        sk.sample(df.iloc[:, :3])
    with pytest.raises(ValueError, match="n_knockoffs"):
        sk.sample(df, n_knockoffs=0)
    with pytest.raises(ValueError, match="rows"):
        SequentialKnockoffs(cv=5).fit(df.iloc[:6])


def test_sequential_missing_values_name_the_column_and_the_remedy():
    df = _mixed_frame(60, 3)
    df.loc[4, "three"] = None
    for fit, rows in [(df, None), (df.drop(index=4), df.iloc[:6])]:
        with pytest.raises(ValueError,
                           match=r"missing values \(NaN\) in column 3 \('three'\)") as info:
            sk = SequentialKnockoffs(cv=3, Cs=2, random_state=0).fit(fit)
            sk.sample(rows)
        assert "impute" in str(info.value)


def test_row_streams_are_uniform_independent_and_keyed():
    from scipy import stats

    from sklearn_xai.knockoffs._base import _row_draws, _row_uniforms

    u = _row_uniforms(7, range(4000), 64)
    assert stats.kstest(u.ravel(), "uniform").pvalue > 1e-3
    # no correlation along a row's stream nor between neighbouring rows
    assert abs(np.corrcoef(u[:, :-1].ravel(), u[:, 1:].ravel())[0, 1]) < 0.01
    assert abs(np.corrcoef(u[:-1].ravel(), u[1:].ravel())[0, 1]) < 0.01
    # a row depends only on (base seed, key)
    np.testing.assert_array_equal(_row_uniforms(7, [5, 2], 64), u[[5, 2]])
    assert not np.allclose(_row_uniforms(8, [5], 64), u[5])
    z, w = _row_draws(7, range(4000), 32, 8)
    assert z.shape == (4000, 32) and w.shape == (4000, 8)
    assert stats.kstest(z.ravel(), "norm").pvalue > 1e-3
