"""Faults of ``ImputationGame``'s and ``estimate_shapley``'s input checks: clear errors
naming the argument instead of IndexError / AttributeError, or silently wrapped or
truncated column indices."""

import re

import numpy as np
import pytest

from sklearn_xai.shapley import ImputationGame, estimate_shapley

W = np.array([1.0, 2.0, -1.0, 0.5])
X = np.random.default_rng(0).normal(size=(8, 4))
ROWS, BG = X[:3], X[3:8]


def f(Z):
    return (np.asarray(Z, dtype=np.float64) @ W)[:, None]


@pytest.mark.parametrize("groups, bad", [([[0], [1], [2], [9]], "[9]"),
                                         ([[0], [1], [2], [-1]], "[-1]"),
                                         ([[9]], "[9]")])
def test_group_indices_out_of_range_are_refused(groups, bad):
    with pytest.raises(ValueError, match=re.escape(
            f"holds column indices outside [0, 4) (X has 4 columns); got {bad}")):
        ImputationGame(f, ROWS, BG, groups=groups)


@pytest.mark.parametrize("groups", [[[0.5], [1], [2], [3]], [["a"], ["b"]], [[0, 1.5]]])
def test_fractional_or_named_group_indices_are_refused(groups):
    with pytest.raises(TypeError, match=r"groups\[0\] must hold int column indices"):
        ImputationGame(f, ROWS, BG, groups=groups)


def test_no_player_is_refused():
    with pytest.raises(ValueError, match="The game needs at least one player: groups lists "
                                         "none"):
        ImputationGame(f, ROWS, BG, groups=[])


@pytest.mark.parametrize("bg", [BG[:0], np.zeros((3, 0, 4))])
def test_an_empty_background_is_refused(bg):
    with pytest.raises(ValueError, match=re.escape(
            "imputation (the background) must hold at least one row")):
        ImputationGame(f, ROWS, bg)


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, None, True])
def test_batch_size_must_be_a_positive_int(batch_size):
    with pytest.raises(ValueError, match=re.escape(
            f"batch_size (the most model rows per call of model_fn) must be a positive int; "
            f"got {batch_size!r}")):
        ImputationGame(f, ROWS, BG, batch_size=batch_size)


def test_valid_groups_give_the_same_values():
    ints = estimate_shapley(ImputationGame(f, ROWS, BG, groups=[[0, 1], [2], [3]]),
                            "exact").values
    floats = estimate_shapley(ImputationGame(f, ROWS, BG, groups=[[0.0, 1.0], [2], [3]],
                                             batch_size=np.int64(7)), "exact").values
    np.testing.assert_array_equal(ints, floats)
    # a linear model: player (0, 1) gets the sum of its columns' effects
    phi = (ROWS - BG.mean(0)) * W
    np.testing.assert_allclose(ints[:, :, 0], np.c_[phi[:, :2].sum(1), phi[:, 2:]])


@pytest.mark.parametrize("game", [None, np.zeros((3, 4)), "exact"])
def test_estimate_shapley_needs_a_game(game):
    with pytest.raises(TypeError, match=re.escape(
            f"game must be a Game (e.g. an ImputationGame); got {type(game).__name__}")):
        estimate_shapley(game, "exact")


@pytest.mark.parametrize("algorithm", ["permutation", "kernel", "frontier"])
@pytest.mark.parametrize("generators, got", [
    ([1, 2, 3], "got a list holding int"),
    (np.random.default_rng(0), "got Generator"),
    ([np.random.RandomState(0)] * 3, "got a list holding RandomState"),
    (7, "got int")])
def test_generators_must_be_a_list_of_generators(algorithm, generators, got):
    with pytest.raises(TypeError, match=re.escape(
            f"generators must be a list of numpy.random.Generator, one per explained row "
            f"(3); {got}")):
        estimate_shapley(ImputationGame(f, ROWS, BG), algorithm, 8, generators=generators)


@pytest.mark.parametrize("algorithm", ["permutation", "kernel", "frontier"])
def test_generators_one_per_row(algorithm):
    game = ImputationGame(f, ROWS, BG)
    with pytest.raises(ValueError, match=re.escape(
            "Pass one random generator per explained row: generators must be a list of "
            "numpy.random.Generator, one per explained row (3); got a list of 1")):
        estimate_shapley(game, algorithm, 8, generators=[np.random.default_rng(0)])
    with pytest.raises(ValueError, match="Pass one random generator per explained row"):
        estimate_shapley(game, algorithm, 8, generators=None)
    gens = [np.random.default_rng(i) for i in range(3)]
    a = estimate_shapley(ImputationGame(f, ROWS, BG), algorithm, 8, generators=gens).values
    gens = tuple(np.random.default_rng(i) for i in range(3))
    b = estimate_shapley(ImputationGame(f, ROWS, BG), algorithm, 8, generators=gens).values
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n_evals", [np.nan, np.inf, "8", 1.5])
def test_n_evals_that_is_not_an_integer_is_refused(n_evals):
    gens = [np.random.default_rng(i) for i in range(3)]
    with pytest.raises(ValueError, match=re.escape(
            f"n_evals (coalition evaluations per player and row) must be an integer >= 2; "
            f"got {n_evals!r}")):
        estimate_shapley(ImputationGame(f, ROWS, BG), "permutation", n_evals,
                         generators=gens)
