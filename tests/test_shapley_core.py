"""The game and the estimators against closed-form Shapley values."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sklearn_xai.shapley import (
    ALGORITHMS,
    ImputationGame,
    estimate_shapley,
    exact_shapley,
    kernel_shapley,
    permutation_shapley,
)
from sklearn_xai.shapley._estimators import all_masks, unit_std
from sklearn_xai.testing import (
    DividendGame,
    check_dummy,
    check_efficiency,
    check_linearity,
    check_matches_exact,
    check_symmetry,
    games,
    pairwise_games,
)


def test_exact_two_feature_tree_example():
    # v({}) = 10.5, v({1}) = 22, v({2}) = 10, v({1,2}) = 20 (the worked tree example), as
    # dividends: 10.5 + 11.5 [1] - 0.5 [2] - 1.5 [1, 2]
    game = DividendGame(2, {(0,): 11.5, (1,): -0.5, (0, 1): -1.5}, constant=10.5)
    masks = np.array([[False, False], [True, False], [False, True], [True, True]])
    np.testing.assert_allclose(game.value(masks)[0, :, 0], [10.5, 22.0, 10.0, 20.0],
                               atol=1e-12)
    phi, base = exact_shapley(game)
    np.testing.assert_allclose(phi[0, :, 0], [10.75, -1.25], atol=1e-12)
    np.testing.assert_allclose(base[0, 0], 10.5, atol=1e-12)


def _gens(n, seed=0):
    from sklearn_xai._utils import keyed_generators

    return keyed_generators(seed, range(n))


def exact(game):
    return exact_shapley(game)


@given(games(max_players=7, n_rows=2))
def test_exact_satisfies_axioms(game):
    check_matches_exact(exact, game, atol=1e-9)
    check_efficiency(exact, game, atol=1e-9)
    check_symmetry(exact, game, atol=1e-9)
    check_dummy(exact, game, atol=1e-10)


@given(games(max_players=6, n_rows=1), games(max_players=6, n_rows=1))
def test_exact_linearity(a, b):
    if a.n_players != b.n_players:
        b = DividendGame(a.n_players, {T: d for T, d in b.terms.items()
                                       if max(T) < a.n_players}, 1, b.constant)
    check_linearity(exact, a, b, atol=1e-9)


@given(pairwise_games(min_players=2, max_players=8, n_rows=2), st.integers(0, 2**31 - 1))
def test_antithetic_permutation_exact_on_pairwise_games(game, seed):
    def est(g):
        # n_evals=2 per player: one antithetic pair of permutations (two for P = 2)
        return permutation_shapley(g, n_evals=2, generators=_gens(g.n_rows, seed),
                                   antithetic=True)

    check_matches_exact(est, game, atol=1e-9)
    check_efficiency(est, game, atol=1e-9)


@given(games(min_players=2, max_players=6, n_rows=1), st.integers(0, 2**31 - 1))
def test_permutation_efficient_always(game, seed):
    def est(g):
        return permutation_shapley(g, 4, _gens(g.n_rows, seed))

    check_efficiency(est, game, atol=1e-9)


@given(games(min_players=2, max_players=6, n_rows=1), st.integers(0, 2**31 - 1))
def test_kernel_efficient_and_exact_with_full_budget(game, seed):
    def small(g):
        return kernel_shapley(g, 2, _gens(g.n_rows, seed))

    def full(g):  # n_evals * P >= 2**P - 2: every coalition, exact
        n_evals = max(2, -(-(2**g.n_players - 2) // g.n_players))
        return kernel_shapley(g, n_evals, _gens(g.n_rows, seed))

    check_efficiency(small, game, atol=1e-8)
    check_matches_exact(full, game, atol=1e-8)


def _third_order_game():
    terms = {(0,): 1.0, (1,): -2.0, (2, 3): 1.5, (0, 4, 5): 2.0, (1, 6, 7): -1.0, (3, 5): 0.5,
             (8, 9): 1.0}
    return DividendGame(10, terms, n_rows=1, constant=0.3)


# Stated tolerances (summed absolute error over the 10 players, mean of 5 seeds):
# antithetic permutation <= 0.15 at n_evals=1600 (16,002 coalitions per row), KernelSHAP
# <= 0.4 at n_evals=100 (1,002 coalitions).
@pytest.mark.parametrize("algorithm, budgets, tol", [
    ("permutation", (6, 100, 1600), 0.15),
    ("kernel", (3, 13, 100), 0.4),
])
def test_samplers_converge(algorithm, budgets, tol):
    game = _third_order_game()
    ref, _ = game.shapley_values()
    fn = ALGORITHMS[algorithm]
    errors = [np.mean([np.abs(fn(game, b, _gens(1, seed))[0] - ref).sum() for seed in range(5)])
              for b in budgets]
    assert errors[-1] <= tol, errors
    assert errors[-1] < errors[1] < errors[0], errors


def test_imputation_game_matches_hand_computation():
    def f(Z):
        Z = Z.astype(float)
        return (Z[:, 0] * 2 + Z[:, 1] * Z[:, 2])[:, None]

    X = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
    R = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    game = ImputationGame(f, X, R, batch_size=3)
    masks = np.array([[True, False, False], [False, True, True]])
    v = game.value(masks)
    # row 0, S={0}: mean(f(1,0,0), f(1,1,1)) = mean(2, 3) = 2.5
    assert v[0, 0, 0] == pytest.approx(2.5)
    # row 1, S={1,2}: mean(f(0,-1,4), f(1,-1,4)) = mean(-4, -2) = -3
    assert v[1, 1, 0] == pytest.approx(-3.0)
    assert game.n_evaluations == 4
    phi, base = exact_shapley(game)
    np.testing.assert_allclose(phi.sum(axis=1)[:, 0] + base[:, 0], f(X)[:, 0])


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_imputation_game_names_a_plain_callables_bad_outputs(algorithm):
    # a plain callable is not behind an explainer's model adapter: the game checks it
    X = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
    R = np.zeros((2, 3))

    def nan_when_first_kept(Z):
        return np.where(Z[:, 0] == 1.0, np.nan, Z.sum(axis=1))

    game = ImputationGame(nan_when_first_kept, X, R)
    kw = {"design_seed": 0} if algorithm == "frontier_shared" else {
        "generators": [np.random.default_rng(r) for r in range(2)]}
    with pytest.raises(ValueError, match="model_fn returned NaN or infinite values"):
        estimate_shapley(game, algorithm, 2, **kw)
    short = ImputationGame(lambda Z: Z.sum(axis=1)[:-1], X, R)
    with pytest.raises(ValueError, match=r"shape \(3,\) for 4 input row\(s\)"):
        short.value(np.ones((2, 3), dtype=bool), rows=slice(0, 1))
    with pytest.raises(ValueError, match="one row per input row"):
        short.value_each([np.ones((1, 3), dtype=bool)] * 2)


def test_imputation_game_groups_and_per_row_imputation():
    def f(Z):
        return Z.astype(float).sum(axis=1, keepdims=True)

    X = np.array([[1.0, 2.0, 3.0]])
    R = np.zeros((1, 2, 3))
    game = ImputationGame(f, X, R, groups=[[0, 2], [1]])
    phi, base = exact_shapley(game)
    np.testing.assert_allclose(phi[0, :, 0], [4.0, 2.0])
    assert base[0, 0] == 0.0


@pytest.mark.parametrize("groups", [[[0, 3], [1]], [[0, 1], [1, 2], [3]]])
def test_imputation_game_columns_follow_any_groups(groups):
    # a column is the row's when any player holding it is in the coalition (columns of
    # two players: the product path; one player or none: the gather), every hybrid row
    # against a brute-force construction; a player is active when a column of it differs
    def f(Z):
        return (Z * np.array([1.0, 10.0, 100.0, 1000.0])).sum(axis=1, keepdims=True)

    X = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 4.0]])
    R = np.array([[0.0, 2.0, 0.0, 4.0], [9.0, 9.0, 9.0, 9.0]])
    game = ImputationGame(f, X, R, groups=groups)
    masks = np.array(list(itertools.product([False, True], repeat=len(groups))))
    got = game.value(masks)
    for r in range(2):
        for c, m in enumerate(masks):
            keep = np.zeros(4, bool)
            for p in np.flatnonzero(m):
                keep[groups[p]] = True
            want = np.mean([f(np.where(keep, X[r], b)[None])[0, 0] for b in R])
            assert got[r, c, 0] == pytest.approx(want, rel=1e-12)
    held = [np.any(X[:, g][:, None] != R[None][:, :, g], axis=(1, 2)) for g in groups]
    np.testing.assert_array_equal(game.active_players(), np.column_stack(held))


def test_a_player_of_256_unequal_columns_is_active():
    # the counts of a player's unequal columns were uint8 (256 -> 0): such a player was a
    # dummy and the frontier gave it 0 and its value to the others
    def f(Z):
        return Z.sum(axis=1, keepdims=True)

    X, R = np.ones((1, 257)), np.zeros((1, 257))
    game = ImputationGame(f, X, R, groups=[list(range(256)), [256]])
    assert game.active_players().tolist() == [[True, True]]
    est = ALGORITHMS["frontier"](game, 4, [np.random.default_rng(0)])
    np.testing.assert_allclose(est[0][0, :, 0], exact_shapley(game)[0][0, :, 0], atol=1e-9)
    np.testing.assert_allclose(est[0][0, :, 0], [256.0, 1.0], atol=1e-9)


def test_exact_refuses_too_many_players():
    game = DividendGame(21, {(0,): 1.0})
    with pytest.raises(ValueError, match="limited to 20 players"):
        exact_shapley(game)


def test_checks_fail_with_clear_message():
    game = DividendGame(3, {(0,): 1.0, (1,): 1.0})

    def wrong(g):
        phi, base = g.shapley_values()
        phi = phi.copy()
        phi[:, 0] += 0.5
        return phi, base

    with pytest.raises(AssertionError, match="Efficiency violated"):
        check_efficiency(wrong, game)
    with pytest.raises(AssertionError, match="Symmetry violated"):
        check_symmetry(wrong, game, 0, 1)


def test_kernel_enumerates_a_row_whose_active_players_fit_the_budget():
    # 12 players, one reference row: rows with 3 and 5 active players have 6 and 30
    # coalitions, within n_evals * P = 48: exact values, those coalitions only; the row of
    # 8 active players (254) is sampled
    rng = np.random.default_rng(3)
    ref = rng.normal(size=(1, 12))
    X = np.repeat(ref, 3, axis=0)
    for r, k in enumerate((3, 5, 8)):
        X[r, :k] = rng.normal(size=k)

    def f(Z):
        return np.tanh(Z[:, 0] * Z[:, 1] * Z[:, 2]) + np.sin(Z[:, 3] * Z[:, 4]) + Z[:, 7]

    game = ImputationGame(f, X, ref)
    truth = exact_shapley(game)[0]
    game.n_evaluations = 0
    phi, _, units = kernel_shapley(game, 4, _gens(3), return_units=True)
    np.testing.assert_allclose(phi[:2], truth[:2], atol=1e-12)
    assert np.abs(phi[2] - truth[2]).max() > 1e-6
    assert game.n_evaluations == 3 * 2 + 6 + 30 + 48        # ends, exact, exact, sampled
    std = unit_std(units)
    assert (std[:2] == 0).all() and (std[2] > 0).any()


def test_kernel_gives_exact_zero_to_players_equal_to_the_reference():
    def f(Z):
        Z = Z.astype(float)
        return (Z[:, 0] * Z[:, 1] + Z[:, 2] ** 2 - Z[:, 3])[:, None]

    X = np.array([[1.0, 2.0, 0.0, 3.0], [0.0, 1.0, 2.0, 0.0]])
    R = np.zeros((1, 4))
    game = ImputationGame(f, X, R)
    np.testing.assert_array_equal(game.active_players(),
                                  [[True, True, False, True], [False, True, True, False]])
    phi, base = kernel_shapley(game, 2, _gens(2, 0))
    assert phi[0, 2, 0] == 0.0 and phi[1, 0, 0] == 0.0 and phi[1, 3, 0] == 0.0
    ref, _ = exact_shapley(game)
    # row 1 has two active players: paired sampling over them is exact
    np.testing.assert_allclose(phi[1], ref[1], atol=1e-12)
    np.testing.assert_allclose(phi.sum(axis=1)[:, 0] + base[:, 0], f(X)[:, 0], atol=1e-12)


# ---------------------------------------------------------------------- the Game protocol
# Every game of the package is a ``Game``: ``n_players``, ``n_rows``, ``n_outputs``,
# ``n_evaluations`` and ``value(masks, rows=None, count=True)``. Each case below builds a
# game of 3 players on 5 rows with 2 outputs and states v(all players) and v(no player) from
# direct calls of the model (or of the table / dividends that define the game).

_GROUPS = [[0, 2], [1], [3]]


def _model(Z):
    Z = np.asarray(Z, dtype=np.float64)
    return np.column_stack([Z[:, 0] * Z[:, 1] + Z[:, 2], np.sin(Z[:, 3]) - Z[:, 0]])


def _imputation_game_shared():
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(5, 4)), rng.normal(size=(3, 4))
    empty = np.broadcast_to(_model(R).mean(axis=0), (5, 2))
    return ImputationGame(_model, X, R, groups=_GROUPS, batch_size=7), _model(X), empty


def _imputation_game_per_row():
    rng = np.random.default_rng(1)
    X, R = rng.normal(size=(5, 4)), rng.normal(size=(5, 3, 4))
    empty = np.array([_model(R[i]).mean(axis=0) for i in range(5)])
    return ImputationGame(_model, X, R, groups=_GROUPS), _model(X), empty


def _torch_game(factored):
    torch = pytest.importorskip("torch")
    from sklearn_xai._torch import TorchModelFunction
    from sklearn_xai.shapley._shear import _TorchReferenceGame

    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Softplus(),
                              torch.nn.Linear(8, 2)).double()

    class Wrapped(torch.nn.Module):  # not a Sequential: the game builds hybrid rows
        def __init__(self):
            super().__init__()
            self.inner = mlp

        def forward(self, x):
            return self.inner(x)

    fn = TorchModelFunction(mlp if factored else Wrapped())
    assert (fn.first_linear_layer() is None) == (not factored)
    rng = np.random.default_rng(2)
    X, r = rng.normal(size=(5, 4)), rng.normal(size=(1, 4))
    c2p = np.array([0, 1, 0, 2])
    with torch.no_grad():
        full = mlp(torch.as_tensor(X)).numpy()
        empty = np.broadcast_to(mlp(torch.as_tensor(r)).numpy(), (5, 2))
    return _TorchReferenceGame(fn, X, r, c2p, 3, max_rows=4), full, empty


def _loss_game():
    # KnockoffSAGE's game of rows 1-5 of 7: minus each row's squared loss
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LinearRegression

    from sklearn_xai.shapley import KnockoffSAGE
    from sklearn_xai.shapley._knockoff import _LossGame

    rng = np.random.default_rng(4)
    X, R = rng.normal(size=(7, 3)), rng.normal(size=(2, 3))
    y = X @ [1.0, -2.0, 0.5] + X[:, 0] * X[:, 1]
    model = LinearRegression().fit(X, y)
    sage = KnockoffSAGE(FrozenEstimator(model), imputation="marginal", background=R,
                        loss="mse").fit(X)
    losses, _ = sage._loss_function(*sage._check_rows(X, y), 0)
    full = -(y[1:6] - model.predict(X[1:6])) ** 2
    empty = -(y[1:6] - model.predict(R).mean()) ** 2
    return _LossGame(losses, slice(1, 6), 7, 3), full[:, None], empty[:, None]


def _dividend_game():
    d01, d2 = np.arange(5.0), -np.ones(5)
    game = DividendGame(3, {(0, 1): d01, (2,): d2}, n_rows=5, constant=0.5)
    return game, (0.5 + d01 + d2)[:, None], np.full((5, 1), 0.5)


_GAME_CASES = {
    "ImputationGame-shared": _imputation_game_shared,
    "ImputationGame-per-row": _imputation_game_per_row,
    "_TorchReferenceGame-factored-first-layer": lambda: _torch_game(True),
    "_TorchReferenceGame-hybrid-rows": lambda: _torch_game(False),
    "_LossGame": _loss_game,
    "DividendGame": _dividend_game,
}


@pytest.mark.parametrize("case", list(_GAME_CASES))
def test_game_protocol(case):
    from sklearn_xai.shapley import Game

    game, full, empty = _GAME_CASES[case]()
    assert isinstance(game, Game)
    n, P, O = game.n_rows, game.n_players, game.n_outputs
    assert (n, P, O) == (5, 3, full.shape[1])
    assert game.n_evaluations == 0  # n_outputs is free
    masks = all_masks(P)
    v = game.value(masks)
    assert v.shape == (n, 2**P, O) and v.dtype == np.float64
    assert game.n_evaluations == n * 2**P
    np.testing.assert_allclose(v[:, -1], full, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v[:, 0], empty, rtol=0, atol=1e-12)
    # per-row masks: each row its own coalitions
    order = np.random.default_rng(0).permuted(np.tile(np.arange(2**P), (n, 1)), axis=1)
    per_row = game.value(masks[order])
    assert game.n_evaluations == 2 * n * 2**P
    np.testing.assert_allclose(per_row, np.take_along_axis(v, order[:, :, None], axis=1),
                               rtol=0, atol=1e-12)
    # a slice of the rows, and an evaluation that is not counted
    part = game.value(masks[[0, 5]], rows=slice(1, 3))
    np.testing.assert_allclose(part, v[1:3][:, [0, 5]], rtol=0, atol=1e-12)
    assert game.n_evaluations == 2 * n * 2**P + 2 * 2
    game.value(masks, count=False)
    assert game.n_evaluations == 2 * n * 2**P + 2 * 2
    with pytest.raises(ValueError, match="3 player"):
        game.value(np.ones((2, 4), dtype=bool))
    with pytest.raises(ValueError, match="one block per"):
        game.value(np.ones((4, 2, 3), dtype=bool))
    with pytest.raises(ValueError, match="2-D .* or 3-D"):
        game.value(np.ones(3, dtype=bool))


def test_every_game_of_the_package_is_covered():
    import sklearn_xai.shapley._knockoff  # noqa: F401
    import sklearn_xai.shapley._shear  # noqa: F401
    import sklearn_xai.testing  # noqa: F401
    from sklearn_xai.shapley import Game

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    ours = {c.__name__ for c in subclasses(Game) if c.__module__.startswith("sklearn_xai")}
    covered = {name.split("-")[0] for name in _GAME_CASES}
    assert ours == covered


def test_game_is_abstract():
    from sklearn_xai.shapley import Game

    class NoValue(Game):
        n_players = 2
        n_rows = 1

    with pytest.raises(TypeError, match="abstract"):
        NoValue()


def test_one_table_of_algorithms_used_by_knockoff_shap(monkeypatch):
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LinearRegression

    from sklearn_xai.shapley import KnockoffSAGE, KnockoffSHAP

    assert set(ALGORITHMS) == {"exact", "permutation", "kernel", "frontier", "frontier_shared"}
    options = KnockoffSHAP._parameter_constraints["algorithm"][0].options
    assert options == {"auto"} | set(ALGORITHMS)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    model = FrozenEstimator(LinearRegression().fit(X, X @ [1.0, 2.0, 3.0]))
    calls = []
    for name, fn in list(ALGORITHMS.items()):
        def spy(game, n_evals=None, generators=None, _fn=fn, _name=name, **kwargs):
            calls.append((_name, n_evals))
            return _fn(game, n_evals, generators, **kwargs)

        monkeypatch.setitem(ALGORITHMS, name, spy)
    for algorithm in ["exact", "permutation", "kernel"]:
        att = KnockoffSHAP(model, n_knockoffs=2, algorithm=algorithm,
                           n_evals=None if algorithm == "exact" else 4,
                           random_state=0).fit(X).explain(X[:3])
        assert att.extras["algorithm"] == algorithm
    assert calls == [("exact", None), ("permutation", 4), ("kernel", 4)]
    KnockoffSAGE(model, n_knockoffs=2, algorithm="exact").fit(X).explain(X[:5], X[:5, 0])
    assert calls[-1][0] == "exact"
    for cls in (KnockoffSHAP, KnockoffSAGE):
        assert "algorithm" in cls().get_params() and "estimator" not in cls().get_params()


def _counting_model(X):
    """A frozen regressor ``x0 x1 + x2 + x3 + ...`` that counts the rows it predicts."""
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.frozen import FrozenEstimator

    class CountingRegressor(RegressorMixin, BaseEstimator):
        def fit(self, X, y=None):
            self.n_features_in_ = X.shape[1]
            self.n_rows_ = 0
            return self

        def predict(self, X):
            X = np.asarray(X, dtype=np.float64)
            self.n_rows_ += X.shape[0]
            return X[:, 0] * X[:, 1] + X[:, 2:].sum(axis=1)

    model = CountingRegressor().fit(X)
    return FrozenEstimator(model), model


@pytest.mark.parametrize("explainer", ["shear", "permutation", "kernel"])
def test_n_evals_is_one_budget_unit(explainer):
    """``n_evals`` = coalition evaluations per player and row in every explainer: a row
    costs ``n_evals * n_players`` coalitions besides the empty and the full one."""
    from sklearn_xai.shapley import KnockoffSHAP, ShearExplainer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 6))
    model, counter = _counting_model(X)
    n, P, n_evals = 4, 6, 4
    if explainer == "shear":
        e = ShearExplainer(model, n_evals=n_evals, cooperators="random", random_state=0)
    else:
        # one background row: one model row per coalition
        e = KnockoffSHAP(model, algorithm=explainer, n_evals=n_evals, imputation="marginal",
                         background=X[:1], random_state=0)
    e.fit(X)
    before = counter.n_rows_
    att = e.explain(X[1:1 + n])
    per_row = (counter.n_rows_ - before) / n
    budget = n_evals * P + 2
    if explainer == "permutation":
        # whole antithetic pairs of permutations of P - 1 new coalitions each
        assert budget - 2 * (P - 1) < per_row <= budget
    else:
        assert per_row == budget
    if explainer != "shear":
        assert att.extras["n_evaluations"] == n * per_row


# ------------------------------------------------------------------- units and per-draw games
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_algorithm_returns_its_units(name):
    """``return_units=True`` adds the independent units (None when exact) and changes
    nothing else; the units of a sampling estimate average to it (KernelSHAP's
    pseudo-values to about it)."""
    game = DividendGame(5, {(0,): 1.0, (1, 2): 2.0, (0, 3, 4): -1.5}, n_rows=3)
    # below full enumeration: KernelSHAP and the frontier estimator at 4 (at 2 KernelSHAP's
    # pairs may leave players undetermined, and the frontier's budget is exactly the size-1
    # stratum: deterministic but not exact; both give NaN units there)
    budget = {"kernel": 4, "frontier": 4, "frontier_shared": 4}.get(name, 8)
    # frontier_shared draws its designs from one seed instead of per-row generators
    kw = {"design_seed": 0} if name == "frontier_shared" else {}

    def gens():
        return None if name == "exact" or kw else _gens(3)

    plain = ALGORITHMS[name](game, budget, gens(), **kw)
    phi, base, units = ALGORITHMS[name](game, budget, gens(), return_units=True, **kw)
    np.testing.assert_array_equal(phi, plain[0])
    np.testing.assert_array_equal(base, plain[1])
    if name == "exact":
        assert units is None
        return
    assert units.ndim == 4 and units.shape[0] == 3 and units.shape[2:] == phi.shape[1:]
    if name in ("permutation", "frontier", "frontier_shared"):
        np.testing.assert_allclose(units.mean(axis=1), phi, atol=1e-12)
        assert np.isfinite(units).all()
    else:  # jackknife pseudo-values (checked against refits in test_error_bars.py)
        assert units.shape[1] == 10 and np.isfinite(units).all()  # G = n_pairs = 10


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_a_game_without_rows_gives_empty_estimates(name):
    # every algorithm of the table on a game of 0 rows: empty arrays of the players' shape,
    # no evaluation (the permutation sampler reshaped its empty values and raised)
    rng = np.random.default_rng(0)
    game = ImputationGame(lambda Z: Z.sum(axis=1), rng.normal(size=(0, 4)),
                          rng.normal(size=(3, 4)))
    kw = ({"design_seed": 0} if name == "frontier_shared" else
          {"generators": None if name == "exact" else []})
    est = estimate_shapley(game, name, None if name == "exact" else 4, **kw)
    assert est.values.shape[:2] == (0, 4) and est.base.shape[0] == 0
    assert est.n_evaluations == 0


def test_per_imputation_game_averages_to_the_mean_game():
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(4, 3)), rng.normal(size=(4, 5, 3))

    def model(Z):
        return np.column_stack([Z[:, 0] * Z[:, 1] + Z[:, 2], np.sin(Z[:, 0])])

    mean_game = ImputationGame(model, X, R)
    per_draw = ImputationGame(model, X, R, per_imputation=True)
    assert per_draw.n_outputs == 5 * 2
    masks = all_masks(3)
    v = per_draw.value(masks).reshape(4, 8, 5, 2)
    np.testing.assert_allclose(v.mean(axis=2), mean_game.value(masks), atol=1e-12)
    # imputation row k alone is the game of that row
    single = ImputationGame(model, X, R[:, 2:3]).value(masks)
    np.testing.assert_allclose(v[:, :, 2], single, atol=1e-12)
    phi = exact_shapley(per_draw)[0].reshape(4, 3, 5, 2).mean(axis=2)
    np.testing.assert_allclose(phi, exact_shapley(mean_game)[0], atol=1e-12)


def test_value_each_groups_rows_by_their_number_of_coalitions():
    # rows with as many coalitions share one value call, adjacent or not; each row gets
    # the values of its own coalitions
    class Counted(DividendGame):
        calls = 0

        def value(self, masks, rows=None, count=True):
            Counted.calls += 1
            return super().value(masks, rows=rows, count=count)

    rng = np.random.default_rng(0)
    P = 5
    game = Counted(P, {(0, 1): rng.normal(size=6), (2,): rng.normal(size=6)}, n_rows=6)
    masks = [rng.random((c, P)) < 0.5 for c in (3, 1, 3, 0, 1, 3)]
    out = game.value_each(masks)
    assert Counted.calls == 2                       # C = 3 and C = 1; C = 0 needs no call
    assert game.n_evaluations == 11
    for r, m in enumerate(masks):
        assert out[r].shape == (m.shape[0], 1)
        if m.shape[0]:
            np.testing.assert_array_equal(out[r], game.value(m, rows=[r], count=False)[0])


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("batch_size", [1, 7, 4096])
def test_imputation_game_value_each_is_each_rows_value(per_row, batch_size):
    # value_each packs the rows' own coalitions into calls of at most batch_size model rows
    # (a row's coalitions may be split across calls, a call may hold several rows): each
    # row must get exactly the values of its own coalitions, as value() gives them
    rng = np.random.default_rng(1)
    n, M, K = 5, 4, 3
    X = rng.normal(size=(n, M))
    R = rng.normal(size=(n, K, M)) if per_row else rng.normal(size=(K, M))

    def model(Z):
        return np.column_stack([Z[:, 0] * Z[:, 1] - Z[:, 2], np.tanh(Z[:, 3])])

    game = ImputationGame(model, X, R, groups=[[0], [1, 2], [3]], batch_size=batch_size)
    masks = [rng.random((c, 3)) < 0.5 for c in (4, 0, 2, 5, 1)]
    out = game.value_each(masks)
    assert game.n_evaluations == 12
    for r, m in enumerate(masks):
        assert out[r].shape == (m.shape[0], 2)
        if m.shape[0]:
            np.testing.assert_array_equal(out[r], game.value(m, rows=[r], count=False)[0])


def _recorded_game(seed, n, P, K, batch_size):
    """An ImputationGame of ``n`` rows, ``K`` shared imputation rows and a small nonlinear
    model of two outputs whose calls' inputs are recorded; the recording list and the
    generator that drew the rows."""
    rng = np.random.default_rng(seed)
    X, R = rng.normal(size=(n, P)), rng.normal(size=(K, P))
    calls = []

    def model(Z):
        calls.append(Z.copy())
        return np.column_stack([np.tanh(Z[:, 0] * Z[:, 1]) + Z[:, 2], Z[:, 3]])

    return ImputationGame(model, X, R, batch_size=batch_size), calls, rng


@pytest.mark.parametrize("per_row_masks", [False, True])
@pytest.mark.parametrize("batch_size", [1, 4, 7, 9, 64])
def test_imputation_game_value_packs_its_calls_as_value_each(per_row_masks, batch_size):
    # one packing rule for every model call: value() on selected rows (shared or per-row
    # masks) makes the calls value_each makes for the same rows' coalitions, also where a
    # row alone exceeds batch_size and is cut into pieces
    P, K = 4, 2
    game, calls, rng = _recorded_game(3, 6, P, K, batch_size)
    game._n_outputs = 2                                   # no probe call in the record
    rows = np.array([4, 1, 1, 3])
    masks = (rng.random((rows.size, 5, P)) < 0.5 if per_row_masks
             else rng.random((5, P)) < 0.5)
    v = game.value(masks, rows=rows)
    by_value, calls[:] = list(calls), []
    # value_each takes one block per row: the selected rows as a game of their own
    sub = ImputationGame(game.model_fn, game.X[rows], game.imputation[0], batch_size=batch_size)
    sub._n_outputs = 2
    each = [masks[i] if per_row_masks else masks for i in range(rows.size)]
    v_each = sub.value_each(each)
    assert len(by_value) == len(calls)
    for a, b in zip(by_value, calls):
        np.testing.assert_array_equal(a, b)
    assert max(c.shape[0] for c in by_value) <= max(batch_size, K)
    assert game.n_evaluations == rows.size * 5
    np.testing.assert_array_equal(v, np.stack(v_each))
    # no coalitions: an empty block per row, no call (this raised before one rule)
    calls.clear()
    empty = game.value(np.zeros((rows.size, 0, P) if per_row_masks else (0, P), bool), rows=rows)
    assert empty.shape == (rows.size, 0, 2) and not calls


@pytest.mark.parametrize("batch_size", [3, 4096])
def test_imputation_game_value_blocks_is_each_rows_value(batch_size):
    # the frontier's blocks of rows (not in row order, one of no coalitions) evaluated in
    # one model call when they fit in batch_size model rows, else packed as value_each
    # packs them: each row gets its own coalitions' values and the count is theirs
    n, P, K = 5, 4, 2
    game, calls, rng = _recorded_game(2, n, P, K, batch_size)
    blocks = [(np.array([3, 0]), rng.random((2, 2, P)) < 0.5),
              (np.array([1]), np.zeros((1, 0, P), bool)),
              (np.array([4, 2]), rng.random((2, 3, P)) < 0.5)]
    out = game._value_blocks(blocks)
    assert game.n_evaluations == 10
    sizes = [c.shape[0] for c in calls]
    assert sizes == [10 * K] if batch_size == 4096 else max(sizes) <= batch_size
    for (rows, masks), vals in zip(blocks, out):
        assert vals.shape == (rows.size, masks.shape[1], 2)
        for i, r in enumerate(rows):
            if masks.shape[1]:
                np.testing.assert_array_equal(
                    vals[i], game.value(masks[i], rows=[r], count=False)[0])
    # rows without coalitions: no model call but the one-coalition probe of n_outputs
    calls.clear()
    empty = game.value_each([np.zeros((0, P), bool)] * n)
    assert [c.shape[0] for c in calls] in ([], [K]) and all(v.shape == (0, 2) for v in empty)
