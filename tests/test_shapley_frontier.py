"""frontier_shapley: efficiency, exactness where it is free, error, intervals, row splits."""

import numpy as np
import pytest

from sklearn_xai.shapley import ImputationGame, exact_shapley
from sklearn_xai.shapley._estimators import frontier_shared_shapley, unit_std
from sklearn_xai.shapley._frontier import frontier_shapley
from sklearn_xai.testing import DividendGame

from ._games import HIGH, dividend_game, game_rows


def _gens(n, seed=0):
    return [np.random.default_rng([seed, r]) for r in range(n)]






def test_efficiency_to_1e12():
    game = dividend_game(12, HIGH)
    for n_evals in (2, 5, 16):
        phi, base = frontier_shapley(game, n_evals, _gens(3))
        full = game.value(np.ones((1, 12), bool))[:, 0]
        np.testing.assert_allclose(phi.sum(axis=1) + base, full, rtol=0, atol=1e-12)


def test_budget_is_honest():
    game = dividend_game(11, HIGH)
    for n_evals in (2, 3, 8):
        game.n_evaluations = 0
        frontier_shapley(game, n_evals, _gens(3))
        assert game.n_evaluations <= 3 * (n_evals * 11 + 2)


def test_pairwise_game_is_exact():
    # the odd part of a game with at most pairwise interactions is linear: the fit is exact
    game = dividend_game(14, ((1, 14), (2, 30)))
    truth = game.shapley_values()[0]
    phi, _ = frontier_shapley(game, 2, _gens(3))
    np.testing.assert_allclose(phi, truth, rtol=0, atol=1e-10)


def test_error_falls_with_budget():
    game = dividend_game(14, HIGH, n_rows=4)
    truth = game.shapley_values()[0]

    def err(n_evals):
        return np.mean([np.abs(frontier_shapley(game, n_evals, _gens(4, s))[0] - truth).mean()
                        for s in range(4)])

    e4, e16, e64 = err(4), err(16), err(64)
    assert e16 < 0.7 * e4
    assert e64 < 0.7 * e16


def test_exact_when_reduced_game_fits():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(10, 10))

    def f(Z):
        return np.tanh(Z @ W[:, :1] + (Z[:, :3] ** 2).sum(axis=1, keepdims=True) * 0.3
                       + Z[:, 1:2] * Z[:, 4:5] * Z[:, 6:7])

    ref = rng.normal(size=(1, 10))
    X = np.repeat(ref, 4, axis=0)
    # rows differ from the reference on 2, 3, 4 and 5 columns
    for r, k in enumerate((2, 3, 4, 5)):
        cols = rng.choice(10, k, replace=False)
        X[r, cols] = rng.normal(size=k)
    game = ImputationGame(f, X, ref)
    truth = exact_shapley(game)[0]
    game.n_evaluations = 0
    phi, _, units = frontier_shapley(game, 3, _gens(4), return_units=True)   # 30 >= 2**5 - 2
    np.testing.assert_allclose(phi, truth, rtol=0, atol=1e-12)
    assert units is None
    assert game.n_evaluations == 4 * 2 + sum(2**k - 2 for k in (2, 3, 4, 5))
    dummy = ~game.active_players()
    assert np.all(phi[dummy] == 0.0)


def test_intervals_cover():
    # 12 players, odd structure up to order 5 (beyond the order-3 surrogate); fixed seeds.
    # The interval is phi_fit +- 1.96 max(se_xfit, |phi_xfit - phi_fit|), Student-t
    # widened: measured 0.956 (0.938 with se_mode="pooled", whose k2 scales se_xfit by the
    # fold surrogates' estimated error).
    game = dividend_game(12, HIGH, n_rows=1, seed=5)
    truth = game.shapley_values()[0][0, :, 0]
    hits = total = 0
    for seed in range(40):
        phi, _, units = frontier_shapley(game, 8, _gens(1, seed), return_units=True)
        se = unit_std(units)[0, :, 0]
        hits += int((np.abs(phi[0, :, 0] - truth) <= 1.96 * se).sum())
        total += truth.size
    assert total == 480
    assert 0.90 <= hits / total <= 0.98, hits / total


def test_units_do_not_change_phi():
    game = dividend_game(12, HIGH, n_rows=2, seed=5)
    for n_evals in (4, 8, 16):
        a = frontier_shapley(game, n_evals, _gens(2))[0]
        b = frontier_shapley(game, n_evals, _gens(2), return_units=True)[0]
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("units", [False, True])
def test_rows_split_invariance(units):
    game = dividend_game(11, HIGH, n_rows=4, seed=7)
    whole = frontier_shapley(game, 4, _gens(4), return_units=units)

    parts = []
    for lo, hi in ((0, 2), (2, 4)):
        sub = game_rows(game, range(lo, hi))
        gens = [np.random.default_rng([0, r]) for r in range(lo, hi)]
        parts.append(frontier_shapley(sub, 4, gens, return_units=units))
    # same coalitions and same arithmetic per row; a tolerance only for BLAS blocking
    np.testing.assert_allclose(whole[0], np.concatenate([p[0] for p in parts]),
                               rtol=1e-12, atol=1e-14)
    if units:
        np.testing.assert_allclose(whole[2], np.concatenate([p[2] for p in parts]),
                                   rtol=1e-12, atol=1e-14)


def test_frontier_is_an_algorithm_of_the_explainers_multi_output():
    # registered in ALGORITHMS: KnockoffSHAP(algorithm="frontier") on a 3-class model is exact
    # once the budget covers every coalition, and efficient on every output below that
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    from sklearn_xai import KnockoffSHAP
    from sklearn_xai.shapley import ALGORITHMS, frontier_shapley

    assert ALGORITHMS["frontier"] is frontier_shapley
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 5))
    y = np.digitize(X[:, 0] * X[:, 1] + X[:, 2], [-0.5, 0.5])
    model = FrozenEstimator(LogisticRegression(max_iter=500).fit(X, y))
    common = {"imputation": "marginal", "background": X[:6], "random_state": 0}
    exact = KnockoffSHAP(model, algorithm="exact", **common).fit(X).explain(X[:4])
    full = KnockoffSHAP(model, algorithm="frontier", n_evals=7, **common).fit(X).explain(X[:4])
    np.testing.assert_allclose(full.values, exact.values, rtol=0, atol=1e-10)
    low = KnockoffSHAP(model, algorithm="frontier", n_evals=2, **common).fit(X).explain(X[:4])
    assert low.values.shape == (4, 5, 3)
    out = model.predict_proba(X[:4])
    np.testing.assert_allclose(low.base_values + low.values.sum(axis=1), out, rtol=0, atol=1e-10)


# ------------------------------------------------------------------ imputation components

def _interaction_model(P, seed=0):
    """A smooth model with interactions up to order four (no game of it is additive)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(P, 3))

    def f(Z):
        Z = np.asarray(Z, dtype=np.float64)
        return np.column_stack([
            np.tanh(Z @ W[:, 0]) + Z[:, 0] * Z[:, 1] * Z[:, 2] + 0.5 * Z[:, 3] * Z[:, 4]
            * Z[:, 5] * Z[:, 6],
            np.sin(Z @ W[:, 1]) * np.cos(Z @ W[:, 2])])
    return f


class _CountingModel:
    def __init__(self, f):
        self.f, self.rows = f, 0

    def __call__(self, Z):
        self.rows += len(Z)
        return self.f(Z)


def test_components_are_exact_when_each_fits_the_budget():
    # every background row differs from the explained rows on at most 4 of 10 columns, so
    # each component game has at most 4 active players (14 coalitions <= the budget of 20);
    # the mean game has all 10 active and would need 1022 coalitions to be exact
    from sklearn_xai.shapley import frontier_components

    P, K = 10, 6
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3, P))
    R = np.empty((3, K, P))
    for r in range(3):
        for k in range(K):
            R[r, k] = X[r]
            cols = rng.choice(P, rng.integers(1, 5), replace=False)
            R[r, k, cols] = rng.normal(size=cols.size)
    model = _CountingModel(_interaction_model(P))
    game = ImputationGame(model, X, R)
    assert game.active_players().sum(axis=1).min() > 4
    truth = exact_shapley(game)[0]
    model.rows = 0
    phi, base, units = frontier_shapley(game, 2, _gens(3), return_units=True)
    np.testing.assert_allclose(phi, truth, rtol=0, atol=1e-12)
    assert units is None                                    # exact: no sampling error
    assert model.rows <= 3 * K * (2 * P + 2)                # the budget, in model rows
    _, _, se, path = frontier_components(game, 2, _gens(3))
    assert set(np.unique(path)) <= {"exact", "dummy"}
    assert np.all(se == 0)
    paths = []
    frontier_shapley(game, 2, _gens(3), paths=paths)
    assert len(paths) == 3 and all(p.startswith("exact") for p in paths)


def test_row_path_names_the_mix():
    from sklearn_xai.shapley._frontier import row_path

    assert row_path(["exact"] * 4) == "exact"
    assert row_path(["exact", "sampled", "dummy", "exact"]) == \
        "sampled (1 of 4 components; 2 exact; 1 dummy)"


def test_components_efficiency_budget_and_error():
    P, K = 14, 8
    rng = np.random.default_rng(2)
    X, bg = rng.normal(size=(3, P)), rng.normal(size=(K, P))
    model = _CountingModel(_interaction_model(P, seed=3))
    game = ImputationGame(model, X, bg)
    full = model.f(X)
    for n_evals in (2, 4, 16):
        model.rows = game.n_evaluations = 0
        phi, base = frontier_shapley(game, n_evals, _gens(3))
        np.testing.assert_allclose(base + phi.sum(axis=1), full, rtol=0, atol=1e-12)
        assert model.rows <= 3 * K * (n_evals * P + 2)
        assert game.n_evaluations <= 3 * (n_evals * P + 2)
    # one design per background row estimates the mean game better than one shared design
    truth = exact_shapley(ImputationGame(model.f, X, bg))[0]

    def err(by_component, n_evals):
        return np.mean([np.abs(frontier_shapley(game, n_evals, _gens(3, s),
                                                by_component=by_component)[0] - truth).mean()
                        for s in range(3)])

    assert err(True, 8) < err(False, 8)
    assert err(True, 32) < 0.6 * err(True, 4)


def test_every_row_of_a_mean_game_has_standard_errors_from_three_evals():
    # components with 4-12 active players share a row's budget; a share that left a
    # component fewer than 4 pairs (one per fold) beyond its enumerated strata made it
    # deterministic and the row's standard errors NaN (2-6 of 6 rows here at each budget)
    P, K, n = 12, 16, 6
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, P))
    R = np.repeat(X[:, None, :], K, axis=1)
    for r in range(n):
        for k in range(K):
            cols = rng.choice(P, rng.integers(4, P + 1), replace=False)
            R[r, k, cols] = rng.normal(size=cols.size)
    model = _CountingModel(_interaction_model(P, seed=3))
    game = ImputationGame(model, X, R)
    full = model.f(X)
    for n_evals in (3, 4, 6, 8, 12, 16):
        model.rows = 0
        phi, base, units = frontier_shapley(game, n_evals, _gens(n), return_units=True)
        assert np.all(np.isfinite(unit_std(units)))
        assert model.rows <= n * K * (n_evals * P + 2)          # the budget is kept
        np.testing.assert_allclose(base + phi.sum(axis=1), full, rtol=0, atol=1e-12)


def test_component_intervals_cover():
    # the mean of 4 components with 12 players each, dividends up to order 5 in the model
    # (a game beyond the order-3 surrogate); fixed seeds
    P, K = 12, 4
    rng = np.random.default_rng(4)
    X, bg = rng.normal(size=(2, P)), rng.normal(size=(K, P))
    game = ImputationGame(_interaction_model(P, seed=5), X, bg)
    truth = exact_shapley(game)[0]
    hits = total = 0
    for seed in range(12):
        phi, _, units = frontier_shapley(game, 8, _gens(2, seed), return_units=True)
        se = unit_std(units)
        ok = se > 0
        hits += int((np.abs(phi - truth) <= 1.96 * se)[ok].sum())
        total += int(ok.sum())
    assert total >= 500
    assert 0.90 <= hits / total <= 0.99, hits / total


def test_standard_error_rule_of_single_and_mean_games():
    # se_mode="auto": the max rule for a single game, the pooled (mean squared error)
    # estimate for each component of a mean game, whose sum averages their noise
    P, K = 10, 4
    rng = np.random.default_rng(13)
    X, bg = rng.normal(size=(2, P)), rng.normal(size=(K, P))
    f = _interaction_model(P, seed=14)

    def se(game, mode):
        return unit_std(frontier_shapley(game, 4, _gens(2), return_units=True,
                                         se_mode=mode)[2])

    mean_game = ImputationGame(f, X, bg)
    np.testing.assert_array_equal(se(mean_game, "auto"), se(mean_game, "pooled"))
    assert np.nanmean(se(mean_game, "auto")) < np.nanmean(se(mean_game, "max"))
    single = ImputationGame(f, X, bg[:1])
    np.testing.assert_array_equal(se(single, "auto"), se(single, "max"))
    assert not np.array_equal(se(single, "auto"), se(single, "pooled"), equal_nan=True)


def test_components_rows_split_invariance():
    P, K = 12, 5
    rng = np.random.default_rng(6)
    X, bg = rng.normal(size=(4, P)), rng.normal(size=(K, P))
    f = _interaction_model(P, seed=7)
    whole = frontier_shapley(ImputationGame(f, X, bg, batch_size=50), 4, _gens(4),
                             return_units=True)
    parts = [frontier_shapley(ImputationGame(f, X[lo:hi], bg, batch_size=977), 4,
                              [np.random.default_rng([0, r]) for r in range(lo, hi)],
                              return_units=True) for lo, hi in ((0, 1), (1, 4))]
    # the same draws and arithmetic per row; a tolerance for the round-off of BLAS, whose
    # kernel and thread count change the last bits of the surrogate's solves
    for i in (0, 1, 2):
        np.testing.assert_allclose(whole[i], np.concatenate([p[i] for p in parts]),
                                   rtol=1e-9, atol=1e-12)


def test_knockoff_shap_frontier_by_knockoff():
    # 14 players: "auto" is the frontier; the per-knockoff estimates give the standard
    # errors; values efficient and independent of n_jobs and batch_size
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai import KnockoffSHAP

    rng = np.random.default_rng(8)
    X = rng.normal(size=(400, 14))
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + X[:, 3] * X[:, 4] * X[:, 5]
    model = FrozenEstimator(HistGradientBoostingRegressor(max_iter=30, random_state=0)
                            .fit(X, y))
    ex = KnockoffSHAP(model, n_knockoffs=6, random_state=0).fit(X)
    assert ex.algorithm_ == "frontier" and ex.n_evals_ == 16
    att = ex.explain(X[:5])
    np.testing.assert_allclose(att.base_values + att.values.sum(axis=1),
                               model.predict(X[:5]), rtol=0, atol=1e-10)
    assert np.all(np.isfinite(att.std)) and np.all(att.std > 0)
    assert att.extras["paths"].shape == (5,)
    assert all(p.startswith("sampled") for p in att.extras["paths"])
    other = KnockoffSHAP(model, n_knockoffs=6, random_state=0, n_jobs=2, batch_size=2,
                         max_model_rows=333).fit(X).explain(X[:5])
    # BLAS round-off only (worker threads run BLAS on one thread): 6e-12 relative seen
    np.testing.assert_allclose(other.values, att.values, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(other.std, att.std, rtol=1e-9, atol=1e-12)
    # the spread of 6 knockoffs' estimates: a Student-t interval with 5 degrees of freedom
    np.testing.assert_array_equal(att.std_dof, 5.0)
    # one knockoff: the frontier's own standard errors and degrees of freedom (its units
    # carry them, and are not widened again)
    from sklearn_xai._random import row_keys, stream_seeds
    from sklearn_xai._utils import draw_base_seed, keyed_generators
    from sklearn_xai.shapley import ImputationGame, estimate_shapley
    from sklearn_xai.shapley._knockoff import _KNOCKOFF_STREAM, _draw_knockoffs

    one = KnockoffSHAP(model, n_knockoffs=1, random_state=0).fit(X)
    a1 = one.explain(X[:5])
    seed, keys = draw_base_seed(0), row_keys(X[:5])
    ko = _draw_knockoffs(one.sampler_, X[:5], 1, int(stream_seeds(seed, _KNOCKOFF_STREAM)),
                         keys)
    game = ImputationGame(one.model_fn_, X[:5], ko, groups=one.groups_, per_imputation=True)
    est = estimate_shapley(game, "frontier", one.n_evals_, keyed_generators(seed, keys))
    np.testing.assert_allclose(a1.values, est.values[:, :, 0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a1.std, est.std[:, :, 0], rtol=1e-12)
    np.testing.assert_array_equal(a1.std_dof, est.dof[:, :, 0])


def test_components_share_the_row_budget():
    # 4 background rows: three differ from the explained row on 2 columns (2 coalitions
    # each to enumerate), one on all 9 (510 coalitions). With n_evals=40 each component
    # alone affords 360: the pooled budget (4 * 360) makes all four exact, at no more
    # model rows than 4 * (40 * 9 + 2)
    P = 9
    rng = np.random.default_rng(9)
    x = rng.normal(size=(1, P))
    bg = np.repeat(x, 4, axis=0)
    for k in range(3):
        bg[k, rng.choice(P, 2, replace=False)] = rng.normal(size=2)
    bg[3] = rng.normal(size=P)
    model = _CountingModel(_interaction_model(P, seed=10))
    game = ImputationGame(model, x, bg)
    truth = exact_shapley(game)[0]
    model.rows = 0
    paths = []
    phi, _ = frontier_shapley(game, 40, _gens(1), paths=paths)
    np.testing.assert_allclose(phi, truth, rtol=0, atol=1e-12)
    assert paths == ["exact"]
    assert model.rows <= 4 * (40 * P + 2)
    paths = []
    unpooled, _ = frontier_shapley(game, 40, _gens(1), paths=paths, pool=False)
    assert paths == ["sampled (1 of 4 components; 3 exact)"]


def test_pooled_budget_follows_the_components_interactions():
    # two components of one row, 9 active players each (510 coalitions to enumerate):
    # each gets its border pairs (18 coalitions), and the rest of the row's 2 * 40 goes
    # to the component with interactions; with no activity anywhere, by Pa^2 (equally)
    from sklearn_xai.shapley._frontier import _pooled_budgets

    active = np.ones((2, 9), dtype=bool)
    np.testing.assert_array_equal(
        _pooled_budgets(active, 2, 40, lambda comps: np.array([0.0, 3.0])), [18, 62])
    np.testing.assert_array_equal(
        _pooled_budgets(active, 2, 40, lambda comps: np.zeros(2)), [40, 40])
    np.testing.assert_array_equal(_pooled_budgets(active, 2, 40), [40, 40])
    # a game with non-finite values gives no guide: Pa^2 alone (no NaN budget)
    np.testing.assert_array_equal(
        _pooled_budgets(active, 2, 40, lambda comps: np.full(2, np.nan)), [40, 40])


def test_components_evaluate_no_coalition_twice():
    # the border pairs evaluated first (for the allocation) are not evaluated again
    P, K = 10, 3
    rng = np.random.default_rng(11)
    x, bg = rng.normal(size=(1, P)), rng.normal(size=(K, P))
    f = _interaction_model(P, seed=12)
    seen = []

    def model(Z):
        seen.append(np.array(Z, dtype=np.float64))
        return f(Z)

    for alloc in ("greedy", "kernel"):       # "kernel" may leave border pairs out: no reuse
        seen.clear()
        game = ImputationGame(model, x, bg)
        phi, base = frontier_shapley(game, 4, _gens(1), alloc=alloc)
        np.testing.assert_allclose(base + phi.sum(axis=1), f(x), rtol=0, atol=1e-12)
        Z = np.concatenate(seen)
        Z = Z[~np.all(Z == x, axis=1)]              # v(all) is x for every component
        assert np.unique(Z, axis=0).shape[0] == Z.shape[0]
        assert Z.shape[0] + K <= K * (4 * P + 2)


def test_knockoff_shap_auto_budget_with_the_frontier():
    # n_evals="auto" grows the frontier's budget until every standard error is at most tol
    # times the row's range of values (marginal imputation: the knockoff draws' own error,
    # which only more knockoffs reduce, would dominate); the values stay efficient
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures

    from sklearn_xai import KnockoffSHAP

    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 13))
    y = X[:, 0] * X[:, 1] * X[:, 2] + X[:, 3] + 0.5 * X[:, 4] * X[:, 5]
    model = FrozenEstimator(make_pipeline(PolynomialFeatures(3), Ridge()).fit(X, y))
    ex = KnockoffSHAP(model, imputation="marginal", background=X[:8], algorithm="frontier",
                      n_evals="auto", tol=0.05, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        att = ex.explain(X[:3])
    np.testing.assert_allclose(att.base_values + att.values.sum(axis=1), model.predict(X[:3]),
                               rtol=0, atol=1e-9)
    spread = np.ptp(att.values, axis=1)
    assert np.all(np.nanmax(att.std, axis=1) <= 0.05 * spread + 1e-12)
    assert np.all(att.extras["n_evals"] >= 16)
    assert len(att.extras["paths"]) == 3


@pytest.mark.parametrize("Pa, n", [(6, 40), (8, 120), (9, 30)])
@pytest.mark.parametrize("ard", [0, 2])
def test_primal_and_kriging_forms_of_the_surrogate_agree(Pa, n, ard):
    # the surrogate fit has two routes (kriging, O(n^3); primal, O(n F^2)); each row takes
    # the cheaper, so both must give the same Shapley values and the same fitted function
    from sklearn_xai.shapley._frontier import _fit_row

    rng = np.random.default_rng(Pa + n)
    X = np.where(rng.random((n, Pa)) < 0.5, 1.0, -1.0)
    y, W, yN = rng.normal(size=(n, 2)), rng.random(n) + 0.5, rng.normal(size=2)
    Xq = np.where(rng.random((5, Pa)) < 0.5, 1.0, -1.0)
    fits = [_fit_row(X, y, W, yN, (3,), 100.0, predict=True, ard=ard, primal=p)
            for p in (False, True)]
    np.testing.assert_allclose(fits[0][0], fits[1][0], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(fits[0][1](Xq), fits[1][1](Xq), rtol=1e-9, atol=1e-11)


def test_auto_budget_stops_when_the_capped_source_alone_exceeds_tol():
    # knockoff imputation of a cubic model: the knockoff draws' error dominates and stays
    # above tol at the knockoff cap; more coalitions cannot make up for it, so the row stops
    # (with the ConvergenceWarning) instead of growing n_evals to its cap for nothing
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures

    from sklearn_xai import KnockoffSHAP

    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 13))
    y = X[:, 0] * X[:, 1] * X[:, 2] + X[:, 3] + 0.5 * X[:, 4] * X[:, 5]
    model = FrozenEstimator(make_pipeline(PolynomialFeatures(3), Ridge()).fit(X, y))
    ex = KnockoffSHAP(model, algorithm="frontier", n_evals="auto", n_knockoffs=4, tol=0.1,
                      random_state=0).fit(X)
    with pytest.warns(ConvergenceWarning, match="caps"):
        att = ex.explain(X[:1])
    assert att.extras["n_knockoffs"][0] == 64                   # the knockoff cap, 16 * 4
    assert att.extras["n_evals"][0] == 16                       # never grown
    np.testing.assert_allclose(att.base_values + att.values.sum(axis=1), model.predict(X[:1]),
                               rtol=0, atol=1e-9)


def test_estimate_shapley_is_the_one_entry_point():
    from sklearn_xai.shapley import ShapleyEstimate, estimate_shapley

    game = dividend_game(10, HIGH, n_rows=3, seed=12)
    truth = game.shapley_values()[0]
    exact = estimate_shapley(game, "exact")
    assert isinstance(exact, ShapleyEstimate)
    np.testing.assert_allclose(exact.values, truth, rtol=0, atol=1e-12)
    assert exact.std is None and exact.paths is None and exact.n_evaluations == 3 * 2**10
    est = estimate_shapley(game, "frontier", 8, _gens(3))
    assert est.n_evaluations <= 3 * (8 * 10 + 2)
    assert est.std.shape == truth.shape and np.all(est.std > 0)
    assert list(est.paths) == ["sampled"] * 3
    np.testing.assert_array_equal(est.values, frontier_shapley(game, 8, _gens(3))[0])
    assert estimate_shapley(game, "permutation", None, _gens(3)).n_evaluations <= \
        3 * (32 * 10 + 2)                                # default_n_evals: 32
    with pytest.raises(ValueError, match="algorithm must be one of"):
        estimate_shapley(game, "magic")


def test_t_widened():
    from scipy.stats import norm, t

    from sklearn_xai._stats import t_widened
    se = np.array([2.0, 2.0, 2.0, np.nan, 0.0])
    df = np.array([3.0, np.inf, 0.5, 3.0, 3.0])
    out = t_widened(se, df)
    np.testing.assert_allclose(out[:3], 2.0 * np.array([t.ppf(0.975, 3), norm.ppf(0.975),
                                                        t.ppf(0.975, 0.5)]) / norm.ppf(0.975))
    assert np.isnan(out[3]) and out[4] == 0.0


def test_few_pairs_intervals_cover(monkeypatch):
    # 6 players with dividends up to order 5, n_evals=4: 12 pairs, the 6 of the border
    # stratum, 4 sampled ones (one per fold) and 2 extra pairs of their stratum (in every
    # fold's fit), so the residual variance has 3 degrees of freedom and the intervals
    # are Student-t intervals. Measured: 0.966 with them, 0.894 with normal ones (6
    # games x 30 seeds)
    import sklearn_xai.shapley._frontier as frontier
    game0 = dividend_game(6, HIGH, n_rows=1, seed=0)
    df = frontier._frontier_rows(game0, 4, _gens(1), frontier.DEFAULTS, True)[3]
    np.testing.assert_array_equal(df, 3.0)

    def coverage():
        hits = total = 0
        for game_seed in range(6):
            game = dividend_game(6, HIGH, n_rows=1, seed=game_seed)
            truth = game.shapley_values()[0][0, :, 0]
            for seed in range(30):
                phi, _, units = frontier_shapley(game, 4, _gens(1, seed), return_units=True)
                se = unit_std(units)[0, :, 0]
                hits += int((np.abs(phi[0, :, 0] - truth) <= 1.96 * se).sum())
                total += 6
        return hits / total

    widened = coverage()
    assert 0.93 <= widened <= 0.995, widened
    monkeypatch.setattr(frontier, "t_widened", lambda se, df: se)
    assert coverage() < widened - 0.03


@pytest.mark.parametrize("Pa, n_pairs", [(10, 30), (10, 47), (13, 52), (20, 81), (6, 12)])
def test_design_uses_every_pair(Pa, n_pairs):
    # the pairs that do not make a whole unit of 4 are drawn too ("extra"), from the
    # strata that have units, without repeating a pair
    from sklearn_xai.shapley._frontier import _design
    S, W, strat, incl, extra = _design(Pa, n_pairs, np.random.default_rng(1), "greedy",
                                       True, unit=4)
    assert S.shape == (n_pairs, Pa)
    canon = np.where(S[:, :1], S, ~S)          # a pair and its complement are one pair
    assert np.unique(canon, axis=0).shape[0] == n_pairs
    units = (strat >= 0) & ~extra
    assert extra.sum() < 4 and units.sum() % 4 == 0
    assert set(strat[extra]) <= set(strat[units])


def test_order3_game_is_in_the_surrogates_class():
    # a game with dividends up to order 3 has an odd part of linear and order-3 terms: the
    # surrogate's class. Its error is the ridge's shrinkage alone, falling as 1 / ratio to
    # round-off; a game with order-4 and -5 dividends keeps an error the surrogate cannot
    # remove. (The default ratio=100 keeps that shrinkage for games outside the class:
    # there a larger ratio raised the error, 1.5e-2 -> 2.0e-2 at n_evals=32.)
    P = 10
    inside = dividend_game(P, ((1, P), (2, 10), (3, 8)), n_rows=3, seed=1)
    outside = dividend_game(P, HIGH, n_rows=3, seed=1)

    def err(game, ratio):
        truth = game.shapley_values()[0]
        return max(np.abs(frontier_shapley(game, 64, _gens(3, s), ratio=ratio)[0]
                          - truth).max() for s in range(2))

    assert err(inside, 1e2) > 30 * err(inside, 1e4) > 30 * 30 * err(inside, 1e6)
    assert err(inside, 1e8) < 1e-8
    assert err(outside, 1e8) > 1e-3


def test_size_one_and_two_pairs_identify_the_values_of_an_order_four_game():
    # with b the linear and beta the order-3 Walsh coefficients of the odd part, a size-1
    # pair gives b_i + s_i (s_i: the sum of beta over the triples holding i) and a size-2
    # pair b_i + b_j + s_i + s_j - 2 s_ij, so the two strata identify every s_ij, then
    # s_i = sum_j s_ij / 2 and b_i: the Shapley values of any game whose dividends have
    # order <= 4. At n_evals = P + 1 both strata fill the budget (nothing is sampled) and
    # the fit's error is its ridge's shrinkage alone, falling as 1 / ratio (to round-off
    # near ratio = 1e8); dividends of order 5 keep an error.
    P = 8
    inside = dividend_game(P, ((1, P), (2, 12), (3, 10), (4, 8)), n_rows=3, seed=2)
    outside = dividend_game(P, ((1, P), (2, 12), (3, 10), (4, 8), (5, 4)), n_rows=3, seed=2)

    def err(game, ratio):
        paths = []
        phi = frontier_shapley(game, P + 1, _gens(3), ratio=ratio, paths=paths)[0]
        assert paths == ["border"] * 3                  # whole sizes, nothing sampled
        return np.abs(phi - game.shapley_values()[0]).max()

    assert err(inside, 1e2) > 30 * err(inside, 1e4) > 30 * 30 * err(inside, 1e6)
    assert err(inside, 1e8) < 1e-6
    assert err(outside, 1e8) > 1e-2


def test_surrogate_prior_of_equal_variances_is_the_default_kernel():
    # the order-3 kernel e_3(x * x') / C(Pa, 3) is the sum of the triples' characters with
    # equal prior variance: prior=1 everywhere gives the default fit; a zero prior leaves
    # a triple out (a prior on the triples of a game with one triple recovers it better)
    from sklearn_xai.shapley._frontier import _design, _fit_row, _triples
    rng = np.random.default_rng(2)
    Pa = 9
    S, W, *_ = _design(Pa, 60, rng, "greedy", True, unit=4)
    X = np.where(S, 1.0, -1.0)
    y = (X[:, :1] + 0.5 * X[:, 1:2] * X[:, 2:3] * X[:, 3:4])
    yN = np.array([1.5])
    default = _fit_row(X, y, W, yN, (3,), 100.0, primal=False)
    ones = _fit_row(X, y, W, yN, (3,), 100.0, primal=False, prior=np.ones(84))
    np.testing.assert_allclose(ones, default, rtol=1e-9, atol=1e-12)
    T = _triples(Pa)
    only = np.where((T == [1, 2, 3]).all(axis=1), 84.0, 0.0)
    truth = np.zeros((Pa, 1))
    truth[0], truth[1:4] = 2.0, 1.0 / 3.0
    told = _fit_row(X, y, W, yN, (3,), 100.0, primal=False, prior=only)
    assert np.abs(told - truth).max() < 0.1 * np.abs(default - truth).max()


@pytest.mark.parametrize("Pa, n", [(6, 40), (8, 120), (9, 30)])
@pytest.mark.parametrize("ard", [0, 2])
def test_activity_prior_is_the_product_prior_in_both_forms(Pa, n, ard):
    # the activity kernel e_3(w x x') / e_3(w) is the sum of the triples' characters with
    # prior variances prod_T(w) / mean: the same as the explicit prior, and the kriging
    # and primal forms of the fit agree with it (values and fitted function)
    from sklearn_xai.shapley._frontier import (
        _chi3,
        _fit_row,
        _odd_kernel,
        _triple_prior,
        _triples,
    )

    rng = np.random.default_rng(Pa + n + ard)
    X = np.where(rng.random((n, Pa)) < 0.5, 1.0, -1.0)
    y, W, yN = rng.normal(size=(n, 2)), rng.random(n) + 0.5, rng.normal(size=2)
    Xq = np.where(rng.random((5, Pa)) < 0.5, 1.0, -1.0)
    a = rng.random(Pa) + 0.05
    T = _triples(Pa)
    tau = _triple_prior(a, Pa)
    np.testing.assert_allclose(tau.mean(), 1.0, rtol=1e-12)
    explicit = (_chi3(Xq, T) * (tau / T.shape[0])) @ _chi3(X, T).T
    np.testing.assert_allclose(_odd_kernel(Xq, X, (3,), a), explicit, rtol=1e-10,
                               atol=1e-12)
    fits = [_fit_row(X, y, W, yN, (3,), 100.0, predict=True, ard=ard, primal=p, activity=a)
            for p in (False, True)]
    np.testing.assert_allclose(fits[0][0], fits[1][0], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(fits[0][1](Xq), fits[1][1](Xq), rtol=1e-9, atol=1e-11)
    if not ard:
        told = _fit_row(X, y, W, yN, (3,), 100.0, primal=False, prior=tau)
        np.testing.assert_allclose(fits[0][0], told, rtol=1e-9, atol=1e-11)
    # equal activities are the flat prior
    np.testing.assert_allclose(
        _fit_row(X, y, W, yN, (3,), 100.0, ard=ard, activity=np.full(Pa, 0.3)),
        _fit_row(X, y, W, yN, (3,), 100.0, ard=ard), rtol=1e-9, atol=1e-11)


def test_row_activity_is_each_players_higher_order_dividends():
    # |A_i| = |v(all) - v(all - i) - v({i}) + v(empty)|: the sum of the dividends of order
    # two and more that hold player i, from the size-1 pairs alone
    from sklearn_xai.shapley._frontier import _row_activity

    P = 6
    game = DividendGame(P, {(0,): np.array([1.0]), (0, 1): np.array([2.0]),
                            (1, 2, 3): np.array([-1.0]), (2, 3): np.array([0.5]),
                            (4,): np.array([3.0])}, n_rows=1)
    S = np.eye(P, dtype=bool)[::-1]                       # the size-1 pairs, any order
    masks = np.empty((2 * P, P), bool)
    masks[0::2], masks[1::2] = S, ~S
    v = game.value(masks)[0]
    v0, v1 = game.value(np.array([np.zeros(P, bool), np.ones(P, bool)]))[0]
    a = _row_activity(S, v[0::2], v[1::2], v0, v1, 0.0)
    np.testing.assert_allclose(a, [2.0, 1.0, 0.5, 0.5, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(_row_activity(S, v[0::2], v[1::2], v0, v1, 0.05),
                               np.array([2.0, 1.0, 0.5, 0.5, 0.0, 0.0]) + 0.1, atol=1e-12)
    # without every size-1 pair, or in an additive game, there is nothing to go by
    assert _row_activity(S[1:], v[2::2], v[3::2], v0, v1, 0.05) is None
    additive = DividendGame(P, {(i,): np.array([float(i)]) for i in range(P)}, n_rows=1)
    w = additive.value(masks)[0]
    w0, w1 = additive.value(np.array([np.zeros(P, bool), np.ones(P, bool)]))[0]
    assert _row_activity(S, w[0::2], w[1::2], w0, w1, 0.05) is None


@pytest.mark.parametrize("n_evals", [4, 8])
def test_activity_prior_finds_the_interacting_players(n_evals):
    # one triple among 10 players: only its players have higher-order dividends, so the
    # activity prior puts the order-3 variance on its triples and the fit finds it from
    # 20-40 pairs, where the flat prior spreads it over all 120 (measured: 0.16x and 0.07x
    # the flat prior's error)
    P = 10
    rng = np.random.default_rng(0)
    terms = {(i,): rng.normal(size=3) for i in range(P)}
    terms[(2, 5, 7)] = np.array([1.5, -2.0, 1.0])
    game = DividendGame(P, terms, n_rows=3)
    truth = game.shapley_values()[0]

    def err(prior):
        return np.mean([np.abs(frontier_shapley(game, n_evals, _gens(3, s), prior=prior)[0]
                               - truth).mean() for s in range(5)])

    assert err("activity") < 0.3 * err("flat")


def test_frontier_knobs_are_checked():
    # a misspelt knob or value would otherwise be ignored silently
    game = dividend_game(6, ((1, 6), (2, 4), (3, 2)), n_rows=2)
    with pytest.raises(TypeError, match="unknown frontier knob.*'prior_floor'"):
        frontier_shapley(game, 4, _gens(2), prior_floor=0.1)
    with pytest.raises(ValueError, match="prior must be one of"):
        frontier_shapley(game, 4, _gens(2), prior="heredity")
    with pytest.raises(ValueError, match="se_mode must be one of"):
        frontier_shapley(game, 4, _gens(2), return_units=True, se_mode="pooled ")
    with pytest.raises(ValueError, match=r"ard_pool must be one of \['pairs', 'none'\]"):
        frontier_shapley(game, 4, _gens(2), ard_pool=False)
    flat = frontier_shapley(game, 4, _gens(2), prior="flat")[0]
    assert np.isfinite(flat).all()


def test_wide_pairwise_game_is_exact_and_efficient():
    # from 61 active players on, C(Pa, k) k (Pa - k) passes 2**63: the strata's weights
    # must stay exact (an OverflowError before); a pairwise game's odd part is linear, so
    # the fit is exact at any width, in the ARD regime (n_evals=16) past ard_max_players
    P = 70
    game = dividend_game(P, ((1, P), (2, 40)), n_rows=2)
    truth = game.shapley_values()[0]
    for n_evals in (2, 4, 16):
        phi, base = frontier_shapley(game, n_evals, _gens(2))
        np.testing.assert_allclose(phi, truth, rtol=0, atol=1e-9)


def test_more_ard_rounds_from_ard_long_min_pairs_per_player():
    # from 16 Pa pairs (ard_long_min) ARD runs 5 rounds (ard_long) instead of 2 where the
    # pairs are at most half the order-3 fit's unknowns (ard_long_share; here 320 pairs of
    # 20 players, 1,160 unknowns): on games with a sparse order-3 part the fit gets sparser
    # and closer; below that budget, and with either condition out of reach, the fit is
    # the two rounds' to the bit
    ratios = []
    for seed in range(4):
        game = dividend_game(20, ((1, 20), (3, 12), (5, 2)), n_rows=4, seed=seed)
        truth = game.shapley_values()[0]
        for n_evals in (16, 32):
            new = frontier_shapley(game, n_evals, _gens(4, seed), return_units=True)
            # two rounds without the pairs' pooling (which the regime also turns on)
            two = frontier_shapley(game, n_evals, _gens(4, seed), return_units=True,
                                   ard_long=2, ard_pool="none")
            for knob in ({"ard_long_min": 10**6}, {"ard_long_share": 0.25}):
                off = frontier_shapley(game, n_evals, _gens(4, seed), return_units=True,
                                       **knob)
                for a, b in zip(two, off):
                    np.testing.assert_array_equal(a, b)
            if n_evals == 16:                    # 160 pairs: below 16 Pa, two rounds
                for a, b in zip(new, two):
                    np.testing.assert_array_equal(a, b)
            else:
                ratios.append(np.abs(new[0] - truth).mean() / np.abs(two[0] - truth).mean())
    assert max(ratios) < 1.0 and np.mean(ratios) < 0.97


def test_triples_pooled_with_their_pairs_in_the_sparse_recovery_regime():
    # in ARD's sparse-recovery regime (from 16 Pa pairs, at most half the unknowns) a
    # triple's relevance is pooled with its pairs' (heredity): on planted games of
    # clustered (orders 4-5) or isolated (order 3) interactions the fit gets closer;
    # below the regime (n_evals=16: 160 pairs of 20 players) it is unchanged to the bit
    ratios = []
    for orders in (((1, 20), (4, 6), (5, 3)), ((1, 20), (3, 20))):
        for seed in range(3):
            game = dividend_game(20, orders, n_rows=4, seed=seed)
            truth = game.shapley_values()[0]
            for n_evals in (16, 32):
                pooled = frontier_shapley(game, n_evals, _gens(4, seed), return_units=True)
                alone = frontier_shapley(game, n_evals, _gens(4, seed), return_units=True,
                                         ard_pool="none")
                if n_evals == 16:
                    for a, b in zip(pooled, alone):
                        np.testing.assert_array_equal(a, b)
                else:
                    np.testing.assert_allclose(pooled[0].sum(axis=1), alone[0].sum(axis=1),
                                               rtol=0, atol=1e-12)
                    ratios.append(np.abs(pooled[0] - truth).mean()
                                  / np.abs(alone[0] - truth).mean())
    assert np.mean(ratios) < 0.95 and max(ratios) < 1.02


def test_pair_pooled_relevance_is_the_geometric_mean_with_the_pairs_totals():
    # _pair_pooled against a loop over the triples: sqrt(e_T * cbrt(t_ij t_ik t_jk)), t a
    # pair's total of e over the triples that hold it; scale-equivariant, and no underflow
    # from three tiny totals
    from itertools import combinations

    from sklearn_xai.shapley._frontier import _pair_pooled, _triples
    Pa = 7
    T = _triples(Pa)
    e = np.random.default_rng(0).random(T.shape[0]) ** 4
    total = {}
    for t, v in zip(map(tuple, T.tolist()), e):
        for pair in combinations(t, 2):
            total[pair] = total.get(pair, 0.0) + v
    expect = [np.sqrt(v * np.cbrt(np.prod([total[p] for p in combinations(t, 2)])))
              for t, v in zip(map(tuple, T.tolist()), e)]
    np.testing.assert_allclose(_pair_pooled(e, Pa), expect, rtol=1e-12)
    np.testing.assert_allclose(_pair_pooled(e * 1e-200, Pa), np.array(expect) * 1e-200,
                               rtol=1e-12)


@pytest.mark.parametrize("knob, same", [({"ard_max_players": 11}, {"ard_min": 10**6}),
                                        ({"max_unknowns": 40}, {"orders": ()})])
def test_wide_fits_are_capped_as_documented(knob, same):
    # ARD weighs all C(Pa, 3) triples (O(n Pa^3)): above ard_max_players the fit is the one
    # below ARD's budget (activity prior, no ARD); the order-3 fit solves min(n + 1, Pa +
    # C(Pa, 3)) unknowns: above max_unknowns the linear fit alone
    game = dividend_game(12, HIGH)
    for n_evals in (8, 16):
        capped = frontier_shapley(game, n_evals, _gens(3), return_units=True, **knob)
        ref = frontier_shapley(game, n_evals, _gens(3), return_units=True, **same)
        plain = frontier_shapley(game, n_evals, _gens(3), return_units=True)
        for a, b in zip(capped, ref):
            np.testing.assert_array_equal(a, b)
        if n_evals == 16:
            assert not np.allclose(capped[0], plain[0], rtol=0, atol=1e-9)
        paths = []
        frontier_shapley(game, n_evals, _gens(3), paths=paths, **knob)
        # the linear fit of a row too wide for the order-3 term is named in its path
        assert paths == ["linear" if "max_unknowns" in knob else "sampled"] * 3


@pytest.mark.parametrize("algorithm", ["frontier", "kernel", "permutation"])
@pytest.mark.parametrize("n_refs", [1, 6])
@pytest.mark.parametrize("exponent", [-1000, -300, 300, 1000])
def test_values_and_errors_scale_with_the_model_far_from_one(algorithm, n_refs, exponent):
    # a model's outputs times 2**k (exact) give values and standard errors times 2**k
    # (to round-off), from outputs near the smallest double to near the largest; the frontier's
    # squares of values and fourth powers of its errors once made them NaN (from ~1e150)
    # or changed them (the Welch-Satterthwaite degrees of freedom from ~1e77)
    from sklearn_xai.shapley import estimate_shapley
    rng = np.random.default_rng(0)
    P = 9
    Wt = rng.normal(size=(P, 3))
    X, R = rng.normal(size=(4, P)), rng.normal(size=(n_refs, P))

    def run(scale):
        def f(Z):
            return scale * np.c_[np.tanh(Z @ Wt).prod(axis=1) + Z[:, 0] * Z[:, 1] * Z[:, 2],
                                 np.sin(Z @ Wt[:, 0]) * Z[:, 3]]
        gens = [np.random.default_rng([3, r]) for r in range(X.shape[0])]
        with np.errstate(all="raise"):
            return estimate_shapley(ImputationGame(f, X, R), algorithm, 4, gens)

    one, far = run(1.0), run(2.0**exponent)
    assert np.isfinite(one.values).all() and np.nanmax(one.std) > 0
    np.testing.assert_allclose(far.values, one.values * 2.0**exponent, rtol=1e-12, atol=0)
    np.testing.assert_allclose(far.std, one.std * 2.0**exponent, rtol=1e-12, atol=0)


def test_symmetric_solves_read_the_lower_triangle():
    # the surrogate's Gram matrices are built as lower triangles (symmetric rank-k
    # updates); the Cholesky solve and its least-squares fallback (an indefinite matrix,
    # which Cholesky refuses) read that triangle only
    from sklearn_xai.shapley._frontier import _cholesky_solve, _spd_solve, _syrk_lower
    rng = np.random.default_rng(0)
    U = rng.normal(size=(5, 3))
    for shift in (1.0, -0.5):                         # positive definite, then indefinite
        full = U @ U.T + shift * np.eye(5)
        low = _syrk_lower(U) + shift * np.eye(5)
        assert np.allclose(np.tril(low), np.tril(full)) and not np.allclose(low, full)
        assert (_cholesky_solve(low, np.eye(5)) is None) == (shift < 0)
        B = rng.normal(size=(5, 2))
        np.testing.assert_allclose(full @ _spd_solve(low, B), B, atol=1e-9)


def test_systematic_rounding_keeps_the_total_and_the_expectations():
    from sklearn_xai.shapley._frontier import _systematic
    q = np.array([0.3, 1.45, 2.0, 0.25])                # sums to 4
    draws = np.array([_systematic(q, np.random.default_rng(s)) for s in range(4000)])
    assert draws.dtype == np.int64 and (draws.sum(axis=1) == 4).all()
    assert ((draws == np.floor(q)) | (draws == np.ceil(q))).all()
    np.testing.assert_allclose(draws.mean(axis=0), q, atol=0.03)
    assert _systematic(np.zeros(0), np.random.default_rng(0)).shape == (0,)


@pytest.mark.parametrize("Pa, n", [(6, 40), (8, 120), (9, 30)])
def test_triple_variances_prior_in_every_form(Pa, n):
    # a prior given triple by triple: its kernel is sum_T tau_T chi_T chi_T' / F, its
    # kernel functions' Shapley values (2/3) sum_{T ni i}, and the kriging, primal and
    # told-prior fits agree (values and fitted function)
    from sklearn_xai.shapley._frontier import (
        _chi3,
        _fit_row,
        _kernel_shapley,
        _odd_kernel,
        _triples,
        _TripleVariances,
    )

    rng = np.random.default_rng(Pa + n)
    X = np.where(rng.random((n, Pa)) < 0.5, 1.0, -1.0)
    y, W, yN = rng.normal(size=(n, 2)), rng.random(n) + 0.5, rng.normal(size=2)
    Xq = np.where(rng.random((5, Pa)) < 0.5, 1.0, -1.0)
    T = _triples(Pa)
    tau = rng.random(T.shape[0]) ** 3
    tau /= tau.mean()
    prior = _TripleVariances(tau)
    explicit = (_chi3(Xq, T) * (tau / T.shape[0])) @ _chi3(X, T).T
    np.testing.assert_allclose(_odd_kernel(Xq, X, (3,), prior), explicit, rtol=1e-12,
                               atol=1e-12)
    # Shapley values of k(x_j, .) by enumeration of the game v(S) = k(x_j, x_S)
    if Pa <= 8:
        from sklearn_xai.shapley._estimators import all_masks

        from ._oracles import values_from_game
        M = all_masks(Pa).astype(bool)
        for j in range(3):
            v = _odd_kernel(np.where(M, 1.0, -1.0), X[j:j + 1], (3,), prior)[:, 0]
            phi = values_from_game(dict(zip(map(tuple, M.astype(int).tolist()), v)), Pa)[0]
            np.testing.assert_allclose(_kernel_shapley(X[j:j + 1], (3,), prior)[0],
                                       phi[:, 0], rtol=1e-9, atol=1e-12)
    fits = [_fit_row(X, y, W, yN, (3,), 100.0, predict=True, primal=p, activity=prior)
            for p in (False, True)]
    np.testing.assert_allclose(fits[0][0], fits[1][0], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(fits[0][1](Xq), fits[1][1](Xq), rtol=1e-9, atol=1e-11)
    told = _fit_row(X, y, W, yN, (3,), 100.0, primal=False, prior=tau)
    np.testing.assert_allclose(fits[0][0], told, rtol=1e-9, atol=1e-11)


def test_pair_prior_tells_the_triples_from_the_even_part():
    # dividends on (2, 5, 7) and on the pairs (0, 1), (1, 3): players 0, 1, 3 are active
    # (the activity prior gives the triple (0, 1, 3) more variance than (2, 5, 7)), but
    # the pair (0, 3) does not interact: the even part's order-2 coefficients say so, and
    # the pair prior puts the order-3 variance on (2, 5, 7)
    from sklearn_xai.shapley._frontier import (
        _pair_magnitudes,
        _pair_prior,
        _row_activity,
        _stratum_masks,
        _triple_prior,
        _triples,
    )

    P = 10
    terms = {(i,): np.array([0.3 * i - 1.0]) for i in range(P)}
    terms[(2, 5, 7)] = np.array([1.5])
    terms[(0, 1)] = np.array([1.5])
    terms[(1, 3)] = np.array([1.5])
    game = DividendGame(P, terms, n_rows=1)
    S = np.vstack([_stratum_masks(P, 1, False), _stratum_masks(P, 2, False)])
    masks = np.empty((2 * S.shape[0], P), bool)
    masks[0::2], masks[1::2] = S, ~S
    v = game.value(masks)[0]
    v0, v1 = game.value(np.array([np.zeros(P, bool), np.ones(P, bool)]))[0]
    a = _row_activity(S, v[0::2], v[1::2], v0, v1, 0.05)
    X = np.where(S, 1.0, -1.0)
    mags = [_pair_magnitudes(X, v[0::2], v[1::2], v0, v1, a, 100.0, primal=p)
            for p in (False, True)]
    # the kriging and primal forms of the pairs' fit are the same posterior mean
    np.testing.assert_allclose(mags[0], mags[1], rtol=1e-8, atol=1e-12)
    tau = _pair_prior(mags[0], a, 0.0).tau
    T = [tuple(t) for t in _triples(P).tolist()]
    true, false = T.index((2, 5, 7)), T.index((0, 1, 3))
    assert np.argmax(tau) == true
    assert tau[false] < 0.1 * tau[true]
    by_activity = _triple_prior(a, P)
    assert by_activity[false] > by_activity[true]
    np.testing.assert_allclose(tau.mean(), 1.0, rtol=1e-12)
    # an additive game has no even part beyond its ends: nothing to go by
    additive = DividendGame(P, {(i,): np.array([float(i)]) for i in range(P)}, n_rows=1)
    w = additive.value(masks)[0]
    w0, w1 = additive.value(np.array([np.zeros(P, bool), np.ones(P, bool)]))[0]
    assert _pair_magnitudes(X, w[0::2], w[1::2], w0, w1, np.ones(P), 100.0) is None


@pytest.mark.parametrize("n_evals, ratio", [(4, 0.7), (6, 0.4)])
def test_pair_prior_beats_the_activities_when_pairs_do_not_interact(n_evals, ratio):
    # the game of the test above, three outputs: the pair prior's fit has lower error than
    # the activity prior's, which puts the order-3 variance on (0, 1, 3) (measured, 10
    # seeds: 0.79x / 0.52x / 0.23x / 0.056x at n_evals 3 / 4 / 6 / 8)
    P = 10
    rng = np.random.default_rng(1)
    terms = {(i,): rng.normal(size=3) for i in range(P)}
    terms[(2, 5, 7)] = np.array([1.5, -2.0, 1.0])
    terms[(0, 1)] = np.array([1.5, 2.0, -1.0])
    terms[(1, 3)] = np.array([1.5, 2.0, -1.0])
    game = DividendGame(P, terms, n_rows=3)
    truth = game.shapley_values()[0]

    def err(prior):
        return np.mean([np.abs(frontier_shapley(game, n_evals, _gens(3, s), prior=prior)[0]
                               - truth).mean() for s in range(5)])

    assert err("pairs") < ratio * err("activity")


def test_pair_prior_is_capped_as_documented():
    # rows with more than pair_prior_max triples keep the activity prior
    game = dividend_game(9, HIGH)
    for n_evals in (3, 5):
        capped = frontier_shapley(game, n_evals, _gens(3), return_units=True,
                                  pair_prior_max=83)
        ref = frontier_shapley(game, n_evals, _gens(3), return_units=True, prior="activity")
        for a, b in zip(capped, ref):
            np.testing.assert_array_equal(a, b)
        plain = frontier_shapley(game, n_evals, _gens(3), return_units=True)
        assert not np.allclose(plain[0], ref[0], rtol=0, atol=1e-9)


def test_cross_fit_folds_learn_the_pairs_prior_without_their_own_pairs():
    # a fold's surrogate must not see the pairs it is tested on: with the pairs' prior,
    # each of the K folds asks for the prior of exactly the pairs outside it (the
    # enumerated and extra pairs in every fold), and the plain fit for all pairs
    from sklearn_xai.shapley import _frontier as F

    P = 9
    game = dividend_game(P, HIGH, n_rows=1)
    rng = np.random.default_rng(0)
    S, W, strat, incl, extra = F._design(P, 40, rng, "greedy", True, unit=4)
    masks = F._pair_masks(S, np.arange(P), P)
    vals = game.value(masks)[0]
    v0, v1 = game.value(np.array([np.zeros(P, bool), np.ones(P, bool)]))[0]
    asked = []
    orig = F._pair_magnitudes

    def spy(X, *args, **kwargs):
        asked.append(X.copy())
        return orig(X, *args, **kwargs)

    F._pair_magnitudes = spy
    try:
        F._solve_fit_row((np.arange(P), S, W, strat, incl, extra), vals, v0, v1,
                         F.DEFAULTS, True, True)
    finally:
        F._pair_magnitudes = orig
    X = np.where(S, 1.0, -1.0)
    units = (strat >= 0) & ~extra
    assert asked[0].shape[0] == S.shape[0]                 # the plain fit: every pair
    folds = asked[1:]
    assert len(folds) == F.DEFAULTS["folds"]
    left_out = []
    for Xh in folds:
        seen = {row.tobytes() for row in Xh}
        out = [i for i in range(S.shape[0]) if X[i].tobytes() not in seen]
        assert Xh.shape[0] + len(out) == S.shape[0]
        assert all(units[i] for i in out)                    # only sampled unit pairs
        left_out.extend(out)
    # every unit pair is left out by exactly one fold
    assert sorted(left_out) == list(np.flatnonzero(units))


def test_dof_gives_the_widening_of_the_standard_errors():
    # frontier_shapley's dof: the degrees of freedom its standard errors were widened by
    # (t(0.975, dof) / 1.96; inf where exact or normal); estimate_shapley carries them
    from sklearn_xai._stats import t_factor
    from sklearn_xai.shapley import estimate_shapley
    from sklearn_xai.shapley._frontier import DEFAULTS, _frontier_rows

    game = dividend_game(9, HIGH, n_rows=3)
    exact_row = dividend_game(3, ((1, 3), (2, 2)), n_rows=1)
    for g in (game, exact_row):
        dof = []
        phi, _, units = frontier_shapley(g, 4, _gens(g.n_rows), return_units=True, dof=dof)
        _, _, se, df = _frontier_rows(g, 4, _gens(g.n_rows), DEFAULTS, True)
        if se is None:                          # every row exact
            assert units is None and np.isinf(dof[0]).all()
            continue
        np.testing.assert_array_equal(dof[0], df)
        assert np.isfinite(df).any()
        np.testing.assert_allclose(unit_std(units), se * t_factor(df), rtol=1e-12)
        est = estimate_shapley(g, "frontier", 4, _gens(g.n_rows))
        np.testing.assert_array_equal(est.dof, df)


def test_std_is_the_standard_error_of_the_units():
    # estimate_shapley's frontier standard errors (taken from the cross-fit, without
    # units) are what unit_std gives of frontier_shapley's units, up to round-off; it
    # returns no units of its own
    from sklearn_xai.shapley import estimate_shapley

    rng = np.random.default_rng(5)

    def f(Z):
        return np.tanh(Z[:, 0] * Z[:, 1] + Z[:, 2] * Z[:, 3] * Z[:, 4]) + Z[:, 5:].sum(axis=1)

    X, background = rng.normal(size=(4, 8)), rng.normal(size=(3, 8))
    for game in (dividend_game(9, HIGH, n_rows=3), ImputationGame(f, X, background)):
        phi, _, units = frontier_shapley(game, 4, _gens(game.n_rows), return_units=True)
        for algorithm, kw in (("frontier", {"generators": _gens(game.n_rows)}),
                              ("frontier_shared", {"design_seed": 3})):
            est = estimate_shapley(game, algorithm, 4, **kw)
            assert est.units is None and est.std.shape == est.values.shape
            if algorithm == "frontier":
                np.testing.assert_array_equal(est.values, phi)
                np.testing.assert_allclose(est.std, unit_std(units), rtol=1e-12, atol=1e-15)
            else:
                _, _, shared_units = frontier_shared_shapley(game, 4, design_seed=3,
                                                             return_units=True)
                np.testing.assert_allclose(est.std, unit_std(shared_units), rtol=1e-12,
                                           atol=1e-15)
    # every row exact: no units, no standard errors
    exact_row = dividend_game(3, ((1, 3), (2, 2)), n_rows=1)
    assert frontier_shapley(exact_row, 4, _gens(1), return_units=True)[2] is None
    est = estimate_shapley(exact_row, "frontier", 4, _gens(1))
    assert est.std is None and est.dof is None and est.units is None


@pytest.mark.parametrize("shared", [False, True])
def test_rows_with_as_many_coalitions_share_one_model_call(shared):
    # the rows' plans are evaluated by one value call per number of coalitions, each
    # row's empty and full coalitions among them (no call of their own); the counts of
    # evaluations are unchanged
    from sklearn_xai.shapley import estimate_shapley

    class Counting(DividendGame):
        calls = 0

        def value(self, masks, rows=None, count=True):
            type(self).calls += 1
            return super().value(masks, rows, count)

    base = dividend_game(9, HIGH, n_rows=5)
    game = Counting(base.n_players, base.terms, base.n_rows, base.constant)
    def run(g):
        kw = {"design_seed": 1} if shared else {"generators": _gens(g.n_rows)}
        return estimate_shapley(g, "frontier_shared" if shared else "frontier", 4, **kw)

    est = run(game)
    assert Counting.calls == 1                 # every row: 9 active players, 18 pairs
    assert est.n_evaluations == game.n_rows * (4 * 9 + 2)
    np.testing.assert_array_equal(est.values, run(base).values)
