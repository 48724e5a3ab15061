"""The game and the estimators against closed-form Shapley values."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sklearn_xai.shapley import (
    ImputationGame,
    exact_shapley,
    kernel_shapley,
    permutation_shapley,
)
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


class TableGame:
    """A game given by a table of v(S) for every coalition code."""

    def __init__(self, table, n_players):
        self.table = np.asarray(table, dtype=float)
        self.n_players = n_players
        self.n_rows = 1

    def value(self, masks, rows=None, count=True):
        masks = np.asarray(masks)
        if masks.ndim == 3:
            masks = masks[0]
        codes = (masks * (1 << np.arange(self.n_players))).sum(axis=1)
        return self.table[codes][None, :, None]


def test_exact_two_feature_tree_example():
    # v({}) = 10.5, v({1}) = 22, v({2}) = 10, v({1,2}) = 20 (the worked tree example)
    game = TableGame([10.5, 22.0, 10.0, 20.0], 2)
    phi, base = exact_shapley(game)
    np.testing.assert_allclose(phi[0, :, 0], [10.75, -1.25], atol=1e-12)
    np.testing.assert_allclose(base[0, 0], 10.5, atol=1e-12)


def _gens(n, seed=0):
    from sklearn_xai._utils import row_generators

    return row_generators(seed, range(n))


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
        return permutation_shapley(g, n_evals=2 + 2 * (g.n_players - 1), generators=_gens(
            g.n_rows, seed), antithetic=True)

    check_matches_exact(est, game, atol=1e-9)
    check_efficiency(est, game, atol=1e-9)


@given(games(min_players=2, max_players=6, n_rows=1), st.integers(0, 2**31 - 1))
def test_permutation_efficient_always(game, seed):
    def est(g):
        return permutation_shapley(g, 20, _gens(g.n_rows, seed))

    check_efficiency(est, game, atol=1e-9)


@given(games(min_players=2, max_players=6, n_rows=1), st.integers(0, 2**31 - 1))
def test_kernel_efficient_and_exact_with_full_budget(game, seed):
    def small(g):
        return kernel_shapley(g, 12, _gens(g.n_rows, seed))

    def full(g):
        return kernel_shapley(g, 2**g.n_players, _gens(g.n_rows, seed))

    check_efficiency(small, game, atol=1e-8)
    check_matches_exact(full, game, atol=1e-8)


def _third_order_game():
    terms = {(0,): 1.0, (1,): -2.0, (2, 3): 1.5, (0, 4, 5): 2.0, (1, 6, 7): -1.0, (3, 5): 0.5,
             (8, 9): 1.0}
    return DividendGame(10, terms, n_rows=1, constant=0.3)


# Stated tolerances (summed absolute error over the 10 players, mean of 5 seeds):
# antithetic permutation <= 0.15 at 16,384 evaluations, KernelSHAP <= 0.4 at 1,000.
@pytest.mark.parametrize("estimator, budgets, tol", [
    ("permutation", (64, 1024, 16384), 0.15),
    ("kernel", (32, 128, 1000), 0.4),
])
def test_samplers_converge(estimator, budgets, tol):
    game = _third_order_game()
    ref, _ = game.shapley_values()
    fn = permutation_shapley if estimator == "permutation" else kernel_shapley
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


def test_imputation_game_groups_and_per_row_imputation():
    def f(Z):
        return Z.astype(float).sum(axis=1, keepdims=True)

    X = np.array([[1.0, 2.0, 3.0]])
    R = np.zeros((1, 2, 3))
    game = ImputationGame(f, X, R, groups=[[0, 2], [1]])
    phi, base = exact_shapley(game)
    np.testing.assert_allclose(phi[0, :, 0], [4.0, 2.0])
    assert base[0, 0] == 0.0


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


def test_kernel_gives_exact_zero_to_players_equal_to_the_reference():
    def f(Z):
        Z = Z.astype(float)
        return (Z[:, 0] * Z[:, 1] + Z[:, 2] ** 2 - Z[:, 3])[:, None]

    X = np.array([[1.0, 2.0, 0.0, 3.0], [0.0, 1.0, 2.0, 0.0]])
    R = np.zeros((1, 4))
    game = ImputationGame(f, X, R)
    np.testing.assert_array_equal(game.active_players(),
                                  [[True, True, False, True], [False, True, True, False]])
    phi, base = kernel_shapley(game, 10, _gens(2, 0))
    assert phi[0, 2, 0] == 0.0 and phi[1, 0, 0] == 0.0 and phi[1, 3, 0] == 0.0
    ref, _ = exact_shapley(game)
    # row 1 has two active players: paired sampling over them is exact
    np.testing.assert_allclose(phi[1], ref[1], atol=1e-12)
    np.testing.assert_allclose(phi.sum(axis=1)[:, 0] + base[:, 0], f(X)[:, 0], atol=1e-12)
