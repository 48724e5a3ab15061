"""Tests for KnockoffSHAP and KnockoffSAGE (sklearn_xai.shapley._knockoff)."""

import pickle
import re
import warnings
from itertools import combinations
from math import factorial

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.compose import make_column_transformer
from sklearn.datasets import make_regression
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from sklearn_xai.knockoffs import GaussianKnockoffs, SequentialKnockoffs
from sklearn_xai.shapley import KnockoffSAGE, KnockoffSHAP

from ._attack import (
    OODAdversaryClassifier,
    german_attack_data,
    sage_simulation,
)


def _brute_shapley(value, P):
    """Shapley values of ``value(frozenset) -> float`` by enumerating every coalition."""
    phi = np.zeros(P)
    for i in range(P):
        others = [j for j in range(P) if j != i]
        for size in range(P):
            w = factorial(size) * factorial(P - size - 1) / factorial(P)
            for S in combinations(others, size):
                phi[i] += w * (value(frozenset(S) | {i}) - value(frozenset(S)))
    return phi


class ShiftKnockoffs(BaseEstimator):
    """A deterministic test sampler: knockoff k of x is x + (k + 1) * offset."""

    def __init__(self, offset=0.5):
        self.offset = offset

    def fit(self, X, y=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def sample(self, X, n_knockoffs=1, random_state=None):
        X = np.asarray(X, dtype=float)
        steps = (np.arange(n_knockoffs) + 1.0)[None, :, None]
        return X[:, None, :] + steps * self.offset * np.arange(1, X.shape[1] + 1)


def _nonlinear_model(seed=0, n=300, p=4):
    rng = np.random.default_rng(seed)
    X = rng.multivariate_normal(np.zeros(p), 0.4 * np.ones((p, p)) + 0.6 * np.eye(p), size=n)
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + X[:, p - 1] ** 2
    from sklearn.ensemble import RandomForestRegressor

    model = RandomForestRegressor(n_estimators=10, max_depth=5, random_state=0).fit(X, y)
    return X, y, model


# ------------------------------------------------------------------------- KnockoffSHAP
def test_exact_matches_brute_force_with_deterministic_sampler():
    X, _, model = _nonlinear_model()
    K = 3
    ex = KnockoffSHAP(FrozenEstimator(model), sampler=ShiftKnockoffs(), n_knockoffs=K,
                      algorithm="exact").fit(X)
    att = ex.explain(X[:4])
    P = X.shape[1]
    for r in range(4):
        x = X[r]
        ko = x[None] + (np.arange(K) + 1.0)[:, None] * 0.5 * np.arange(1, P + 1)

        def v(S):
            Z = ko.copy()
            idx = list(S)
            Z[:, idx] = x[idx]
            return model.predict(Z).mean()

        np.testing.assert_allclose(att.values[r], _brute_shapley(v, P), atol=1e-10)
        np.testing.assert_allclose(att.base_values[r], v(frozenset()), atol=1e-12)
    # efficiency
    np.testing.assert_allclose(att.predicted(), model.predict(X[:4]), atol=1e-10)


def test_linear_model_matches_knockoff_mean_formula():
    # f(x) = w.x: phi_j = w_j (x_j - mean_k x~_kj), and E[x~ | x] = x - D Sigma^-1 (x - mu)
    X, y = make_regression(n_samples=2000, n_features=4, noise=1.0, random_state=0)
    X = X @ np.array([[1, 0.5, 0, 0], [0, 1, 0.3, 0], [0, 0, 1, 0.4], [0, 0, 0, 1.0]])
    model = LinearRegression().fit(X, y)
    K = 4000
    ex = KnockoffSHAP(FrozenEstimator(model), sampler=GaussianKnockoffs(), n_knockoffs=K,
                      algorithm="exact", random_state=0).fit(X)
    x = X[:3] + 0.7
    att = ex.explain(x)
    s = ex.sampler_
    D = np.diag(s.s_ * np.diag(s.covariance_))
    shift = (D @ np.linalg.solve(s.covariance_, (x - s.mean_).T)).T
    expected = model.coef_ * shift
    sd = np.sqrt(np.diag(s.knockoff_covariance_))
    tol = 5 * np.abs(model.coef_) * sd / np.sqrt(K)
    assert np.all(np.abs(att.values - expected) <= tol)


@pytest.mark.parametrize("algorithm", ["kernel", "permutation"])
def test_sampling_algorithms_converge_to_exact(algorithm):
    X, _, model = _nonlinear_model(1)
    kw = {"sampler": GaussianKnockoffs(), "n_knockoffs": 5, "random_state": 3}
    exact = KnockoffSHAP(FrozenEstimator(model), algorithm="exact", **kw).fit(X).explain(X[:5])
    # 150 coalitions per player and row: 200 permutations of the 4 players; KernelSHAP
    # covers all 14 non-trivial coalitions and is exact
    approx = KnockoffSHAP(FrozenEstimator(model), algorithm=algorithm, n_evals=150,
                          **kw).fit(X).explain(X[:5])
    # the same seed gives the same knockoffs, so only the coalition sampling differs
    np.testing.assert_allclose(approx.base_values, exact.base_values, atol=1e-12)
    np.testing.assert_allclose(approx.values, exact.values, atol=0.05)
    np.testing.assert_allclose(approx.predicted(), model.predict(X[:5]), atol=1e-8)


def test_seeds_batches_jobs_and_pickle():
    X, _, model = _nonlinear_model(2)
    base = KnockoffSHAP(FrozenEstimator(model), algorithm="permutation", n_evals=5,
                        n_knockoffs=4, random_state=11).fit(X)
    a = base.explain(X[:12]).values
    np.testing.assert_array_equal(a, base.explain(X[:12]).values)
    # the same bits for any batch size, model-call size, n_jobs, order or neighbours (the
    # forest's predictions are row by row; so are the knockoffs)
    small = clone(base).set_params(batch_size=5).fit(X)
    np.testing.assert_array_equal(small.explain(X[:12]).values, a)
    # model calls of at most 7 rows (less than one row's coalitions): the same values
    calls = clone(base).set_params(max_model_rows=7).fit(X)
    np.testing.assert_array_equal(calls.explain(X[:12]).values, a)
    jobs = clone(base).set_params(batch_size=5, n_jobs=2).fit(X)
    np.testing.assert_array_equal(jobs.explain(X[:12]).values, a)
    # a row's draws depend on the row, not on its position or its neighbours
    np.testing.assert_array_equal(base.explain(X[:12][::-1]).values, a[::-1])
    np.testing.assert_array_equal(base.explain(X[5:8]).values, a[5:8])
    again = pickle.loads(pickle.dumps(base))
    np.testing.assert_array_equal(again.explain(X[:12]).values, a)
    other = clone(base).set_params(random_state=12).fit(X).explain(X[:12]).values
    assert not np.allclose(other, a)
    assert base.transform(X[:3]).shape == (3, 4)
    assert list(base.get_feature_names_out()) == [f"phi__x{j}" for j in range(4)]


def test_mixed_dataframe_uses_sequential_knockoffs():
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({
        "a": rng.normal(size=n),
        "b": rng.normal(size=n),
        "c": pd.Categorical(rng.choice(["u", "v", "w"], size=n)),
    })
    y = (df["a"] + (df["c"] == "u") * 1.5 + rng.normal(size=n) > 0.5).astype(int)
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["c"]), remainder="passthrough"),
        LogisticRegression(),
    ).fit(df, y)
    ex = KnockoffSHAP(FrozenEstimator(pipe), sampler=SequentialKnockoffs(cv=3, Cs=3,
                      random_state=0), n_knockoffs=5, random_state=0).fit(df)
    assert isinstance(ex.sampler_, SequentialKnockoffs)
    att = ex.explain(df.iloc[:10])
    assert att.values.shape == (10, 3)
    np.testing.assert_allclose(att.predicted(), pipe.predict_proba(df.iloc[:10])[:, 1],
                               atol=1e-10)
    default = KnockoffSHAP(FrozenEstimator(pipe), n_knockoffs=2).fit(df)
    assert isinstance(default.sampler_, SequentialKnockoffs)


def test_grid_search_over_sampler_method():
    X, _, model = _nonlinear_model(3, n=120)
    gs = GridSearchCV(
        KnockoffSHAP(FrozenEstimator(model), sampler=GaussianKnockoffs(), n_knockoffs=3,
                     random_state=0),
        {"sampler__method": ["mvr", "sdp", "equicorrelated"]}, cv=2,
    ).fit(X)
    assert gs.best_params_["sampler__method"] in {"mvr", "sdp", "equicorrelated"}
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))


def test_shap_errors():
    X, _, model = _nonlinear_model(4, n=60)
    with pytest.raises(ValueError, match="FrozenEstimator"):
        KnockoffSHAP(model).fit(X)
    with pytest.raises(ValueError, match="n_evals"):
        KnockoffSHAP(FrozenEstimator(model), algorithm="permutation", n_evals=1).fit(X)
    with pytest.raises(TypeError, match="estimator"):
        KnockoffSHAP(FrozenEstimator(model), estimator="kernel")
    with pytest.raises(ValueError, match="sampler"):
        KnockoffSHAP(FrozenEstimator(model), sampler=LinearRegression()).fit(X)
    with pytest.raises(ValueError, match="background"):
        KnockoffSHAP(FrozenEstimator(model), imputation="marginal",
                     background=np.zeros((3, 2))).fit(X)
    ex = KnockoffSHAP(FrozenEstimator(model), n_knockoffs=2).fit(X)
    with pytest.raises(ValueError, match="features"):
        ex.explain(X[:, :2])
    wide = np.hstack([X] * 6)
    with pytest.raises(ValueError, match="exact"):
        KnockoffSHAP(FrozenEstimator(LinearRegression().fit(wide, wide[:, 0])),
                     algorithm="exact").fit(wide)


@pytest.mark.parametrize("make, named", [
    (lambda m: KnockoffSHAP(m, n_evals=8, n_knockoffs=2),
     "algorithm='exact' (chosen by algorithm='auto' for 4 <= 12 players)"),
    (lambda m: KnockoffSHAP(m, n_evals=8, algorithm="exact", n_knockoffs=2),
     "algorithm='exact', which"),
    (lambda m: KnockoffSAGE(m, n_evals=8, n_permutations=2), "algorithm='permutation'"),
    (lambda m: KnockoffSAGE(m, n_evals=8, algorithm="exact"), "algorithm='exact'"),
])
def test_an_n_evals_the_algorithm_ignores_is_named_at_fit(make, named):
    X, _, model = _nonlinear_model(4, n=60)
    ex = make(FrozenEstimator(model))
    with pytest.warns(UserWarning, match=re.escape(f"n_evals=8) is ignored by {named}")):
        ex.fit(X)
    # no budget given, or the algorithm that takes it: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clone(ex).set_params(n_evals=None).fit(X)
        clone(ex).set_params(algorithm="frontier").fit(X)
        if isinstance(ex, KnockoffSHAP):
            clone(ex).set_params(n_evals="auto").fit(X)


def test_german_attack_knockoffs_reveal_gender():
    """Slack et al.'s adversary fools marginal SHAP but not knockoff SHAP (fixed seed).

    A lighter detector than the paper's (4,000 hybrids, 4 copies of each real row,
    ``min_samples_leaf=5``) keeps this test fast; it still calls every test row real.
    """
    Xtr, Xte, _, _, names, _ = german_attack_data()
    g, lr = names.index("Gender"), names.index("LoanRateAsPercentOfIncome")
    adv = OODAdversaryClassifier(g, lr, background=10, n_hybrids=4000, repeat_real=4,
                                 min_samples_leaf=5, random_state=0).fit(Xtr)
    assert adv.fidelity(Xte) >= 0.95
    # 2 coalition evaluations per player and row: 2 * 28 // 27 = 2 permutations
    common = {"algorithm": "permutation", "n_evals": 2, "random_state": 0}
    marginal = KnockoffSHAP(FrozenEstimator(adv), imputation="marginal",
                            background=adv.background_, **common).fit(Xtr).explain(Xte)
    knockoff = KnockoffSHAP(FrozenEstimator(adv), n_knockoffs=30,
                            sampler=GaussianKnockoffs(support="observed"),
                            **common).fit(Xtr).explain(Xte)

    def first_share(values, j):
        # ranked first = strictly larger |phi| than every other feature (ties lose)
        a = np.abs(values)
        others = np.delete(a, j, axis=1).max(axis=1)
        return np.mean(a[:, j] > others)

    assert first_share(marginal.values, g) <= 0.05
    assert first_share(marginal.values, lr) >= 0.5
    assert first_share(knockoff.values, g) >= 0.8


# ------------------------------------------------------------------------- KnockoffSAGE
def _brute_sage(model_fn, X, y, imputation, loss):
    """SAGE by enumeration: per-row loss games, exact Shapley values, averaged over rows."""
    P = X.shape[1]
    out = np.zeros(P)
    for i in range(len(X)):
        R = imputation if imputation.ndim == 2 else imputation[i]

        def v(S, i=i, R=R):
            Z = R.copy()
            idx = list(S)
            Z[:, idx] = X[i, idx]
            return -loss(y[i], model_fn(Z).mean(axis=0))

        out += _brute_shapley(v, P)
    return out / len(X)


def test_sage_exact_and_permutation_match_brute_force_marginal():
    X, y, model = _nonlinear_model(5, n=200, p=3)
    bg = X[:6]
    sage = KnockoffSAGE(FrozenEstimator(model), imputation="marginal", background=bg,
                        algorithm="exact").fit(X)
    res = sage.explain(X[:30], y[:30])
    expected = _brute_sage(lambda Z: model.predict(Z), X[:30], y[:30], bg,
                           lambda t, p: float((t - p) ** 2))
    np.testing.assert_allclose(res.importances, expected, atol=1e-10)
    perm = KnockoffSAGE(FrozenEstimator(model), imputation="marginal", background=bg,
                        n_permutations=200, tol=None, random_state=0).fit(X)
    rp = perm.explain(X[:30], y[:30])
    assert rp.n_permutations == 200 and not rp.converged
    assert np.all(np.abs(rp.importances - expected) <= 4 * rp.std + 1e-12)
    # sum of importances = loss(empty) - loss(full), for every permutation
    L0 = np.mean((y[:30] - model.predict(bg).mean()) ** 2)
    L1 = np.mean((y[:30] - model.predict(X[:30])) ** 2)
    np.testing.assert_allclose(rp.importances.sum(), L0 - L1, rtol=1e-10)


def test_sage_knockoff_cross_entropy_matches_brute_force():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=300) > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    sage = KnockoffSAGE(FrozenEstimator(clf), sampler=ShiftKnockoffs(0.3), n_knockoffs=4,
                        algorithm="exact").fit(X)
    res = sage.explain(X[:20], y[:20])
    assert res.loss == "cross_entropy"
    K = 4
    ko = X[:20, None, :] + (np.arange(K) + 1.0)[None, :, None] * 0.3 * np.arange(1, 4)

    def logloss(t, p):
        return float(-np.log(p[1] if t == 1 else p[0]))

    expected = _brute_sage(lambda Z: clf.predict_proba(Z), X[:20], y[:20], ko, logloss)
    np.testing.assert_allclose(res.importances, expected, atol=1e-10)


def test_sage_convergence_seeds_and_errors():
    X, y, model = _nonlinear_model(6, n=200, p=3)
    sage = KnockoffSAGE(FrozenEstimator(model), n_knockoffs=3, tol=0.05,
                        random_state=1).fit(X)
    r1 = sage.explain(X[:40], y[:40])
    assert r1.converged and r1.n_permutations >= 1
    assert np.max(r1.std) <= 0.05 * np.ptp(r1.importances)
    r2 = clone(sage).set_params(batch_size=7).fit(X).explain(X[:40], y[:40])
    np.testing.assert_allclose(r1.importances, r2.importances, atol=1e-12)
    r3 = clone(sage).set_params(max_model_rows=5).fit(X).explain(X[:40], y[:40])
    np.testing.assert_allclose(r1.importances, r3.importances, atol=1e-12)
    with pytest.raises(ValueError, match="y"):
        sage.explain(X[:5], None)
    with pytest.raises(ValueError, match="rows"):
        sage.explain(X[:5], y[:4])
    with pytest.raises(ValueError, match="never stop"):
        KnockoffSAGE(FrozenEstimator(model), tol=None).fit(X)
    clf = LogisticRegression().fit(X, y > 0)
    with pytest.raises(ValueError, match="classes"):
        KnockoffSAGE(FrozenEstimator(clf), n_permutations=1).fit(X).explain(X[:5], y[:5] + 7)
    with pytest.raises(ValueError, match="cross_entropy"):
        KnockoffSAGE(FrozenEstimator(clf), loss="cross_entropy",
                     response_method="decision_function").fit(X)


def test_sage_rounds_are_antithetic_pairs_exact_on_quadratic_loss_games():
    # a linear model, squared loss and one background row: every row's loss game is a
    # quadratic in the coalition's indicators, whose Shapley values an order and its
    # reverse give exactly (each pair of players is ordered both ways once); independent
    # orders would not
    X, y = make_regression(n_samples=200, n_features=5, noise=1.0, random_state=0)
    model = FrozenEstimator(LinearRegression().fit(X, y))
    common = {"imputation": "marginal", "background": X[:1], "random_state": 0}
    exact = KnockoffSAGE(model, algorithm="exact", **common).fit(X).explain(X[:40], y[:40])
    pairs = KnockoffSAGE(model, n_permutations=4, tol=None, **common).fit(X)
    res = pairs.explain(X[:40], y[:40])
    scale = np.abs(exact.importances).max()
    np.testing.assert_allclose(res.importances, exact.importances, atol=1e-10 * scale)
    # (the pairs' spread is round-off of losses up to ~1e8)
    assert res.n_permutations == 4 and np.all(res.std <= 1e-7 * scale)
    # the stop rule sees the zero spread of the pairs and stops after two of them
    stopped = clone(pairs).set_params(n_permutations=None, tol=0.01).fit(X)
    res = stopped.explain(X[:40], y[:40])
    assert res.converged and res.n_permutations == 4


def test_sage_frontier_is_exact_when_the_budget_covers_every_coalition():
    X, y, model = _nonlinear_model(5, n=200, p=3)
    bg = X[:6]
    sage = KnockoffSAGE(FrozenEstimator(model), imputation="marginal", background=bg,
                        algorithm="frontier", n_evals=2).fit(X)
    res = sage.explain(X[:30], y[:30])
    expected = _brute_sage(lambda Z: model.predict(Z), X[:30], y[:30], bg,
                           lambda t, p: float((t - p) ** 2))
    np.testing.assert_allclose(res.importances, expected, atol=1e-10)
    assert np.all(res.std == 0) and res.converged and res.n_permutations == 0
    assert set(res.extras["paths"]) == {"exact"} and res.extras["n_evals"] == 2
    assert res.extras["n_evaluations"] == 30 * 2**3


def test_sage_frontier_error_falls_with_the_budget_and_rows_are_independent():
    X, y, model = _nonlinear_model(3, n=300, p=8)
    common = {"imputation": "marginal", "background": X[:5], "random_state": 0}
    exact = KnockoffSAGE(FrozenEstimator(model), algorithm="exact",
                         **common).fit(X).explain(X[:40], y[:40])
    errors = {}
    for b in (4, 8, 16):
        res = KnockoffSAGE(FrozenEstimator(model), algorithm="frontier", n_evals=b,
                           **common).fit(X).explain(X[:40], y[:40])
        errors[b] = np.abs(res.importances - exact.importances).mean()
        # every row's values are efficient, so their mean is: loss(empty) - loss(full)
        np.testing.assert_allclose(res.importances.sum(), exact.importances.sum(),
                                   rtol=1e-10)
        assert res.extras["n_evaluations"] <= 40 * (b * 8 + 2)
        assert np.all(np.isfinite(res.std)) and np.all(res.std > 0)
    assert errors[16] < errors[8] < errors[4]
    # a row's values depend only on the seed and the row: batches, workers and the
    # order of the rows do not change the importances
    sage = KnockoffSAGE(FrozenEstimator(model), algorithm="frontier", n_evals=6,
                        **common).fit(X)
    ref = sage.explain(X[:40], y[:40])
    split = clone(sage).set_params(batch_size=7, n_jobs=2).fit(X).explain(X[:40], y[:40])
    np.testing.assert_array_equal(ref.importances, split.importances)
    np.testing.assert_array_equal(ref.std, split.std)
    order = np.random.default_rng(0).permutation(40)
    shuffled = sage.explain(X[:40][order], y[:40][order])
    np.testing.assert_allclose(shuffled.importances, ref.importances, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(shuffled.std, ref.std, rtol=1e-12)
    with pytest.raises(ValueError, match="n_evals"):
        KnockoffSAGE(FrozenEstimator(model), algorithm="frontier", n_evals=1).fit(X)
    # 8 players at n_evals = 9: the sizes 1 and 2 fill every row's budget; NaN, and said
    nine = clone(sage).set_params(n_evals=9).fit(X)
    with pytest.warns(UserWarning, match="no standard error"):
        res = nine.explain(X[:40], y[:40])
    assert np.all(np.isnan(res.std)) and np.all(np.isfinite(res.importances))


def test_sage_simulation_knockoffs_find_the_sensitive_feature():
    """Fast version of the SAGE simulation (rho = 0.5, 6 replicates, exact SAGE).

    With 300 explained rows a replicate is noisy: knockoff imputation ranks the sensitive
    feature first in most replicates and on average, marginal imputation in none.
    """
    ko_first = mg_first = 0
    ko_mean = np.zeros(4)
    for seed in range(6):
        res = sage_simulation(0.5, seed, n_train=600, n_explain=300, n_estimators=50)
        ko_first += int(np.argmax(res["knockoff"]) == 0)
        mg_first += int(np.argmax(res["marginal"]) == 0)
        ko_mean += np.asarray(res["knockoff"]) / 6
        assert res["fidelity"] >= 0.7
    assert ko_first >= 4
    assert np.argmax(ko_mean) == 0
    assert mg_first == 0


@pytest.mark.parametrize("target", [0, 2])
def test_sage_target_class_loss_is_about_that_class(target):
    # SAGE of P(target) must score it against the indicator of ``target``: enumerate
    # v_i(S) = -log_loss(y_i == target, mean_b P_target(x_S, b_~S)) over the 3 players
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = X[:, :3]
    model = LogisticRegression(max_iter=500).fit(X, y)
    bg, rows, labels = X[::15], X[1::7], y[1::7]
    sage = KnockoffSAGE(FrozenEstimator(model), imputation="marginal", background=bg,
                        target=target, algorithm="exact", random_state=0).fit(X)
    got = sage.explain(rows, labels).importances

    def value(S):
        hybrid = np.repeat(bg[None], len(rows), 0)
        hybrid[:, :, list(S)] = rows[:, None, list(S)]
        p = model.predict_proba(hybrid.reshape(-1, 3))[:, target].reshape(len(rows), -1)
        p = np.clip(p.mean(axis=1), 1e-12, 1 - 1e-12)
        t = (labels == target).astype(float)
        return -(t * np.log(p) + (1 - t) * np.log(1 - p))  # loss per row

    ref = np.zeros(3)
    for j in range(3):
        others = [k for k in range(3) if k != j]
        for size in range(3):
            for S in combinations(others, size):
                w = factorial(size) * factorial(3 - size - 1) / factorial(3)
                ref[j] += w * np.mean(value(S) - value(S + (j,)))
    np.testing.assert_allclose(np.ravel(got), ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("cls", [KnockoffSHAP, KnockoffSAGE])
def test_marginal_imputation_warns_of_a_large_default_background(cls):
    # background=None takes every row passed to fit; the cost of each explained row grows
    # with them: a warning above LARGE_BACKGROUND = 100 rows, none with a background given
    import warnings

    rng = np.random.default_rng(0)
    X = rng.normal(size=(101, 3))
    y = (X[:, 0] > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    with pytest.warns(UserWarning, match="uses the 101 rows passed to fit"):
        cls(model, imputation="marginal").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls(model, imputation="marginal").fit(X[:100], y[:100])
        cls(model, imputation="marginal", background=X).fit(X, y)


@pytest.mark.parametrize("algorithm", ["frontier", "frontier_shared"])
def test_batches_of_exact_rows_beside_sampled_ones(algorithm):
    # one reference row: rows equal to it on 4 of 8 columns are enumerated exactly (no
    # standard error); a batch of only such rows beside sampled batches used to raise (or,
    # first, drop every batch's standard errors)
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.frozen import FrozenEstimator

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 8))
    y = np.sin(X[:, 0] * X[:, 1] * X[:, 2] * X[:, 3]) + X[:, 4] * X[:, 5] * X[:, 6] * X[:, 7]
    # depth 5: interactions beyond the frontier's order-3 surrogate (a standard error > 0)
    model = FrozenEstimator(GradientBoostingRegressor(n_estimators=30, max_depth=5,
                                                      random_state=0).fit(X, y))
    Z = X[:9].copy()
    Z[3:6, :4] = X[100, :4]
    kw = {"algorithm": algorithm, "imputation": "marginal", "background": X[100:101],
          "n_evals": 8, "random_state": 0}
    whole = KnockoffSHAP(model, **kw).fit(X).explain(Z)
    for order in (slice(None), slice(None, None, -1)):
        batched = KnockoffSHAP(model, batch_size=3, **kw).fit(X).explain(Z[order])
        np.testing.assert_allclose(batched.values, whole.values[order], rtol=0, atol=1e-12)
        np.testing.assert_allclose(batched.std, whole.std[order], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(batched.std_dof, whole.std_dof[order])
    assert np.all(whole.std[3:6] == 0) and np.all(whole.std_dof[3:6] == np.inf)
    assert whole.std[[0, 1, 2, 6, 7, 8]].max() > 1e-6
