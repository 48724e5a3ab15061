"""The frontier with shared designs (``frontier_shared_shapley``, ``"frontier_shared"``).

Oracles: the closed-form Shapley values of dividend games (sklearn_xai.testing.DividendGame)
and exact enumeration of imputation games; the same rows explained alone, in other orders
and next to other rows (a row's result must not change, to the last bit).
"""

import pickle

import numpy as np
import pytest
from joblib import parallel_config

from sklearn_xai.shapley import (
    ALGORITHMS,
    ImputationGame,
    estimate_shapley,
    exact_shapley,
    frontier_shapley,
    frontier_shared_shapley,
)
from sklearn_xai.shapley import _frontier as F
from sklearn_xai.shapley._estimators import unit_std
from sklearn_xai.testing import DividendGame

from ._games import HIGH, dividend_game, game_rows


def _shared(game, n_evals, seed=0, **kw):
    return frontier_shared_shapley(game, n_evals, design_seed=seed, **kw)


def test_is_an_algorithm_of_the_engine_and_efficient_to_1e12():
    assert ALGORITHMS["frontier_shared"] is frontier_shared_shapley
    game = dividend_game(12, HIGH, n_rows=5)
    full = game.value(np.ones((1, 12), bool))[:, 0]
    for n_evals in (2, 5, 16):
        est = estimate_shapley(game, "frontier_shared", n_evals, design_seed=3)
        np.testing.assert_allclose(est.values.sum(axis=1) + est.base, full, rtol=0,
                                   atol=1e-12)
        assert est.n_evaluations <= 5 * (n_evals * 12 + 2)
        assert est.paths.shape == (5,)
        if est.std is not None:
            assert est.dof.shape == est.std.shape


def test_games_in_the_surrogates_class():
    # pairwise interactions: the odd part is linear, the fit exact at any budget
    pairwise = dividend_game(14, ((1, 14), (2, 30)))
    np.testing.assert_allclose(_shared(pairwise, 2)[0], pairwise.shapley_values()[0],
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(_shared(pairwise, 8)[0], pairwise.shapley_values()[0],
                               rtol=0, atol=1e-10)
    # dividends up to order 3: the error is the prior's shrinkage, falling as 1 / ratio
    inside = dividend_game(10, ((1, 10), (2, 10), (3, 8)), seed=1)
    truth = inside.shapley_values()[0]

    def err(ratio):
        return np.abs(_shared(inside, 64, ratio=ratio)[0] - truth).max()

    assert err(1e2) > 30 * err(1e4) > 30 * 30 * err(1e6)
    assert err(1e8) < 1e-8


def test_error_falls_with_budget_and_exact_when_the_reduced_game_fits():
    game = dividend_game(14, HIGH, n_rows=6)
    truth = game.shapley_values()[0]

    def err(n_evals):
        return np.mean([np.abs(_shared(game, n_evals, s)[0] - truth).mean() for s in range(4)])

    e4, e16, e64 = err(4), err(16), err(64)
    assert e16 < 0.7 * e4 and e64 < 0.7 * e16
    # rows with 2..5 players unequal to the reference: every coalition fits in 3 * 10
    rng = np.random.default_rng(3)
    W = rng.normal(size=(10, 2))

    def f(Z):
        return np.tanh(Z @ W[:, :1]) * np.cos(Z @ W[:, 1:])

    ref = rng.normal(size=(1, 10))
    X = np.repeat(ref, 4, axis=0)
    for r, k in enumerate((2, 3, 4, 5)):
        X[r, rng.choice(10, k, replace=False)] = rng.normal(size=k)
    g = ImputationGame(f, X, ref)
    paths = []
    phi, _, units = _shared(g, 3, return_units=True, paths=paths)
    np.testing.assert_allclose(phi, exact_shapley(g)[0], rtol=0, atol=1e-12)
    assert units is None and paths == ["exact"] * 4


def test_a_rows_result_depends_only_on_the_row_and_the_seed():
    game = dividend_game(11, HIGH, n_rows=9, seed=7)
    # some rows get dummies (fewer active players): several designs in one call
    for T in list(game.terms):
        if 10 in T:
            game.terms[T][:4] = 0.0
    for n_evals in (2, 4, 16):
        whole = _shared(game, n_evals, 5, return_units=True)
        se = unit_std(whole[2]) if whole[2] is not None else None
        for rows in ([3], [8, 0, 4], list(range(8, -1, -1))):
            part = _shared(game_rows(game, rows), n_evals, 5, return_units=True)
            np.testing.assert_array_equal(part[0], whole[0][rows])
            # and without standard errors (a lone row's own path, _shared_solve)
            np.testing.assert_array_equal(_shared(game_rows(game, rows), n_evals, 5)[0],
                                          whole[0][rows])
            if se is not None:
                np.testing.assert_array_equal(unit_std(part[2]), se[rows])
        # the cached maps and freshly computed ones give the same bits
        F._shared_cache.clear()
        np.testing.assert_array_equal(_shared(game, n_evals, 5)[0], whole[0])
    other = _shared(game, 16, 6)[0]
    assert np.abs(other - whole[0]).max() > 1e-6


def test_intervals_cover():
    # 12 players, odd structure up to order 5 (beyond the order-3 surrogate); one design per
    # seed, shared by the 8 rows: coverage over 20 seeds (measured 0.97)
    game = dividend_game(12, HIGH, n_rows=8, seed=5)
    truth = game.shapley_values()[0]
    hits = []
    for seed in range(20):
        phi, _, units = _shared(game, 8, seed, return_units=True)
        hits.append(np.abs(phi - truth) <= 1.96 * unit_std(units))
    assert 0.90 <= np.mean(hits) <= 0.995, np.mean(hits)


def test_mean_games_components_draw_independent_designs():
    # a background of 6 rows: a mean of 6 one-reference games; each component has its own
    # stream, so their errors are independent and the standard error of the mean holds
    rng = np.random.default_rng(2)
    W = rng.normal(size=(7, 3))

    def f(Z):
        return np.tanh(Z @ W[:, :1]) + Z[:, :1] * Z[:, 1:2] * Z[:, 2:3] * np.cos(Z @ W[:, 1:2])

    X, bg = rng.normal(size=(6, 7)), rng.normal(size=(6, 7))
    game = ImputationGame(f, X, bg)
    truth = exact_shapley(game)[0]
    hits, errs = [], []
    for seed in range(12):
        est = estimate_shapley(game, "frontier_shared", 4, design_seed=seed)
        errs.append(np.abs(est.values - truth).mean())
        hits.append(np.abs(est.values - truth) <= 1.96 * est.std)
        np.testing.assert_allclose(est.values.sum(axis=1) + est.base,
                                   game.value(np.ones((1, 7), bool))[:, 0], atol=1e-12)
    row = estimate_shapley(game, "frontier", 4, [np.random.default_rng(r) for r in range(6)])
    assert np.mean(errs) < 3 * np.abs(row.values - truth).mean()
    assert 0.9 <= np.mean(hits) <= 1.0, np.mean(hits)


def test_values_far_from_one_scale_exactly():
    game = dividend_game(12, HIGH, n_rows=3, seed=4)
    big = DividendGame(12, {T: d * 2.0**600 for T, d in game.terms.items()}, n_rows=3,
                       constant=game.constant * 2.0**600)
    a, _, ua = _shared(game, 8, 1, return_units=True)
    b, _, ub = _shared(big, 8, 1, return_units=True)
    np.testing.assert_array_equal(b, a * 2.0**600)
    np.testing.assert_allclose(unit_std(ub), unit_std(ua) * 2.0**600, rtol=1e-12)


def test_bad_seeds_and_algorithm_mixups_are_named():
    game = dividend_game(6, HIGH[:2], n_rows=2)
    with pytest.raises(ValueError, match="design_seed"):
        estimate_shapley(game, "frontier_shared", 8)
    with pytest.raises(ValueError, match="not from per-row generators"):
        estimate_shapley(game, "frontier_shared", 8, [np.random.default_rng(0)] * 2,
                         design_seed=1)
    with pytest.raises(ValueError, match="design_seed is for algorithm='frontier_shared'"):
        estimate_shapley(game, "frontier", 8, [np.random.default_rng(0)] * 2, design_seed=1)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="design_seed must be a non-negative integer"):
            frontier_shapley(game, 8, None, design_seed=bad)
    with pytest.raises(ValueError, match="mode='hybrid'"):
        frontier_shapley(game, 8, None, design_seed=0, mode="xfit")


def test_shear_explainer_frontier_shared():
    torch = pytest.importorskip("torch")
    from sklearn_xai import ShearExplainer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Softplus(),
                              torch.nn.Linear(16, 16), torch.nn.Softplus(),
                              torch.nn.Linear(16, 1)).double()
    e = ShearExplainer(net, algorithm="frontier_shared", n_evals=4, random_state=0).fit(X)
    a = e.explain(X[:12])
    truth = exact_shapley(ImputationGame(e.model_fn_, X[:12], e.reference_))[0][:, :, 0]
    assert np.abs(a.values - truth).mean() < 0.2 * np.abs(truth).mean()
    np.testing.assert_allclose(a.values.sum(axis=1) + a.base_values,
                               e.model_fn_(X[:12])[:, 0], atol=1e-9)
    assert a.std is not None and a.std_dof.shape == a.std.shape
    assert set(a.extras["paths"]) <= {"sampled", "exact", "border", "dummy"}
    b = ShearExplainer(net, algorithm="frontier_shared", n_evals=4, random_state=0,
                       batch_size=5).fit(X).explain(X[:12][::-1])
    np.testing.assert_array_equal(b.values[::-1], a.values)
    np.testing.assert_array_equal(b.std[::-1], a.std)
    # batches in threads fill the designs' cache concurrently
    F._shared_cache.clear()
    with parallel_config(backend="threading"):
        c = ShearExplainer(net, algorithm="frontier_shared", n_evals=4, random_state=0,
                           batch_size=2, n_jobs=2).fit(X).explain(X[:12])
    np.testing.assert_array_equal(c.values, a.values)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(e)).explain(X[:12]).values,
                                  a.values)
    auto = ShearExplainer(net, algorithm="frontier_shared", n_evals="auto", tol=0.05,
                          random_state=0).fit(X).explain(X[:12])
    assert np.all(auto.extras["n_evals"] >= 16)
    assert np.abs(auto.values - truth).mean() <= np.abs(a.values - truth).mean()


@pytest.mark.parametrize("imputation", ["marginal", "knockoff"])
def test_knockoff_shap_frontier_shared(imputation):
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai import KnockoffSHAP

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 8))
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + X[:, 3] * X[:, 4] * X[:, 5]
    model = FrozenEstimator(GradientBoostingRegressor(n_estimators=30, random_state=0).fit(X, y))
    kw = {"imputation": imputation, "n_knockoffs": 3, "n_evals": 8, "random_state": 0}
    if imputation == "marginal":
        kw["background"] = X[:1]
    shared = KnockoffSHAP(model, algorithm="frontier_shared", **kw).fit(X)
    exact = KnockoffSHAP(model, algorithm="exact", **kw).fit(X)
    a, ex = shared.explain(X[:10]), exact.explain(X[:10])
    assert a.extras["algorithm"] == "frontier_shared" and a.extras["paths"].shape == (10,)
    np.testing.assert_allclose(a.values.sum(axis=1) + a.base_values,
                               ex.values.sum(axis=1) + ex.base_values, atol=1e-9)
    # the same knockoffs and background: only the sampling differs from the exact values
    assert np.abs(a.values - ex.values).mean() < 0.1 * np.abs(ex.values).mean()
    b = KnockoffSHAP(model, algorithm="frontier_shared", batch_size=3, **kw).fit(X).explain(
        X[:10][::-1])
    np.testing.assert_array_equal(b.values[::-1], a.values)


@pytest.mark.parametrize("P, n_evals", [(12, 8), (20, 32)])
def test_designs_too_large_for_maps_are_solved_row_by_row(monkeypatch, P, n_evals):
    # beyond _MAP_MAX_BYTES a design's basis fits would take O(n^2 Pa) memory: the same
    # flat-prior fit and cross-fit, row by row (20 players at n_evals=32: 320 pairs, where
    # the frontier runs its longer ARD; the shared fit has no ARD either way)
    game = dividend_game(P, HIGH, n_rows=5, seed=3)
    F._shared_cache.clear()
    maps = _shared(game, n_evals, 2, return_units=True)
    monkeypatch.setattr(F, "_MAP_MAX_BYTES", 10_000)
    F._shared_cache.clear()
    paths = []
    rows = _shared(game, n_evals, 2, return_units=True, paths=paths)
    assert paths == ["sampled"] * 5
    # the same fit by two routes (basis maps, each row's own solve): equal to round-off,
    # which grows with the design (320 pairs: 4e-12 relative with BLAS threads)
    np.testing.assert_allclose(rows[0], maps[0], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(unit_std(rows[2]), unit_std(maps[2]), rtol=1e-9, atol=1e-14)
    part = _shared(game_rows(game, [4, 1]), n_evals, 2, return_units=True)
    np.testing.assert_array_equal(part[0], rows[0][[4, 1]])
    # a call's first row factors the design's matrices and the others reuse them: a row
    # alone (first) and within a call (not first) has the same bits
    F._shared_cache.clear()
    alone = _shared(game_rows(game, [3]), n_evals, 2, return_units=True)
    np.testing.assert_array_equal(alone[0], rows[0][[3]])
    np.testing.assert_array_equal(unit_std(alone[2]), unit_std(rows[2])[[3]])
    F._shared_cache.clear()


@pytest.mark.parametrize("set_totals_max", [0, 2**62])
def test_maps_built_set_by_set_or_by_one_product_equal_the_row_by_row_fit(
        monkeypatch, set_totals_max):
    # the cross-fit's stratum totals of a design's basis columns summed set by set (wide
    # bases) or as one product: the same maps, the same as the fit of each row
    game = dividend_game(12, HIGH, n_rows=5, seed=3)
    monkeypatch.setattr(F, "_SET_TOTALS_MAX", set_totals_max)
    F._shared_cache.clear()
    maps = _shared(game, 16, 2, return_units=True)
    assert F._shared_design(12, 12 * 16 // 2, 2, F._config({}), True).kind == "xfit"
    monkeypatch.setattr(F, "_MAP_MAX_BYTES", 10_000)
    F._shared_cache.clear()
    rows = _shared(game, 16, 2, return_units=True)
    np.testing.assert_allclose(rows[0], maps[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(unit_std(rows[2]), unit_std(maps[2]), rtol=1e-9, atol=1e-14)
    F._shared_cache.clear()


def test_several_outputs_and_a_rows_independence():
    # two outputs of a model computed row by row (no matrix product across rows), one
    # reference row: each output's values exact where the reduced game fits, else close
    def f(Z):
        return np.column_stack([np.tanh(Z[:, 0] * Z[:, 1] + Z[:, 2] * Z[:, 3] * Z[:, 4]),
                                np.sin(Z[:, 5:].sum(axis=1) * Z[:, 0])])

    rng = np.random.default_rng(4)
    X, ref = rng.normal(size=(10, 9)), rng.normal(size=(1, 9))
    X[:3, :5] = ref[0, :5]                       # rows with 4 active players: exact
    game = ImputationGame(f, X, ref)
    truth = exact_shapley(game)[0]
    est = estimate_shapley(game, "frontier_shared", 8, design_seed=3)
    assert est.values.shape == (10, 9, 2) and est.std.shape == (10, 9, 2)
    np.testing.assert_allclose(est.values[:3], truth[:3], rtol=0, atol=1e-12)
    # below permutation sampling's error at the same budget (measured 0.012-0.016 against
    # 0.026-0.036 over 4 seeds; the second output is a high-order interaction)
    perm = estimate_shapley(game, "permutation", 8, [np.random.default_rng(r) for r in range(10)])
    assert np.abs(est.values - truth).mean() < np.abs(perm.values - truth).mean()
    for rows in ([7], [9, 2, 5]):
        part = estimate_shapley(ImputationGame(f, X[rows], ref), "frontier_shared", 8,
                                design_seed=3)
        np.testing.assert_array_equal(part.values, est.values[rows])
        np.testing.assert_array_equal(part.std, est.std[rows])
