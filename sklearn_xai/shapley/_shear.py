"""SHEAR: Shapley values from contributive cooperators (Wang et al., ICML 2022).

For each player i, SHEAR picks the K players with the largest cross-contribution with i
(its cooperators S_i), enumerates all 2^K subsets T of S_i with the Shapley weights of a
(K+1)-player game, and fills the remaining players O_i = U \\ S_i \\ {i} with a random
subset R_T (the same R_T with and without i). With antithetic pairing, (T, R) is paired with
(S_i \\ T, O_i \\ R), which makes the estimate exact for every model whose interactions are at
most pairwise.

The functions in this module only choose coalitions and weights; they call a value function
``value(masks) -> (n_rows, n_coalitions, n_outputs)`` where ``masks`` is boolean, either
``(n_coalitions, n_players)`` shared by all rows or ``(n_rows, n_coalitions, n_players)``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import partial
from math import factorial
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._explanation import Attribution
from .._model import select_outputs
from .._model import shown_positions as _shown_positions
from .._random import row_keys, stream_seeds
from .._stats import t_factor, t_widened
from .._torch import TorchModelFunction, is_torch_model
from .._utils import draw_base_seed, is_frame, unwrap_frozen
from ..base import (
    AttributionExplainer,
    as_array,
    check_rows_columns,
    model_allows_nan,
    reference_row,
    resolve_feature_groups,
    split_pipeline,
)
from ._estimators import (
    MAX_AUTO_N_EVALS,
    algorithm_draws,
    auto_start_n_evals,
    estimate_shapley,
    tol_reached,
)
from ._game import Game, ImputationGame, _differing_players

if TYPE_CHECKING:
    from typing import Any, Literal

    import pandas as pd
    from numpy.random import RandomState
    from numpy.typing import ArrayLike

    from sklearn_xai._typing import FeatureGroups, ResponseMethod

# --------------------------------------------------------------------------- budget

# n_evals="auto": K = 3 cooperators, rounds of fresh fills 1, 16, 32, ... up to this many
# (n_evals = 16 * 64 = 1024 coalition evaluations per player and row)
AUTO_N_COOPERATORS = 3
MAX_AUTO_ROUNDS = 64


def _budget(n_evals: int, n_players: int, n_rounds: int = 1) -> tuple[int, int]:
    """Cooperators ``K`` and rounds ``R`` of a fixed budget, ``n_evals = 2^(K+1) R``.

    ``n_evals`` is the package's budget unit, coalition evaluations per player and row:
    player i's ``2^K`` subsets of its cooperators, each with and without i, are
    ``2^(K+1)`` coalitions per round of random fills, hence the powers of two. When
    ``n_evals >= 2^n_players`` the values are exact: ``K = n_players - 1``, one round.
    """
    if int(np.log2(n_evals)) - 1 >= n_players - 1:
        return n_players - 1, 1
    return int(np.log2(n_evals // n_rounds)) - 1, int(n_rounds)


def _cooperator_weights(n_cooperators: int) -> np.ndarray:
    """Shapley weights w(t) = t! (K - t)! / (K + 1)! of the 2^K subsets T of S_i.

    Returns an array of shape (2^K,), in the order of ``_subset_bits`` (subset number
    ``t`` holds cooperator ``k`` when bit ``k`` of ``t`` is set). They sum to 1.
    """
    K = n_cooperators
    size = _subset_bits(K).sum(axis=1)
    table = np.array([factorial(t) * factorial(K - t) / factorial(K + 1) for t in range(K + 1)])
    return table[size]


def _subset_bits(n_cooperators: int) -> np.ndarray:
    """(2^K, K) bool: row t holds the binary digits of t (bit k -> cooperator k)."""
    K = n_cooperators
    t = np.arange(2**K)
    return ((t[:, None] >> np.arange(K)) & 1).astype(bool)


# --------------------------------------------------------------------------- cross-contribution


def _mask_diagonal(eta: np.ndarray) -> np.ndarray:
    eta = np.array(eta, dtype=np.float64, copy=True)
    P = eta.shape[-1]
    eta[..., np.arange(P), np.arange(P)] = -np.inf
    return eta


# the grid the cooperators rank mixed differences on, as a share of the row's largest
# value (some hundred ulps of a float32 model's output)
_ROUND_OFF = 2.0**-16


def _cross_contribution_finite_difference(value, n_rows: int, n_players: int, *,
                                          return_grid: bool = False) -> np.ndarray:
    """eta_ij = |v(U) - v(U \\ i) - v(U \\ j) + v(U \\ {i, j})|, summed over outputs.

    The mixed difference of f between x and the reference r: exact for pairwise
    interactions, defined for any model. Cost: 1 + P + P(P-1)/2 coalitions per row, in
    one call of ``value``.

    Returns
    -------
    eta : ndarray of shape (n_rows, n_players, n_players); the diagonal is ``-inf``.
    grid : ndarray of shape (n_rows,)
        Only with ``return_grid``: ``_ROUND_OFF`` times the row's largest value (summed
        over outputs), the round-off scale :func:`_top_k_cooperators` ranks ``eta`` on.
    """
    P = n_players
    iu, ju = np.triu_indices(P, 1)
    masks = np.ones((1 + P + len(iu), P), dtype=bool)
    masks[1 + np.arange(P), np.arange(P)] = False
    rows = 1 + P + np.arange(len(iu))
    masks[rows, iu] = False
    masks[rows, ju] = False
    v = np.asarray(value(masks), dtype=np.float64)  # (n, C, O)
    full, single, pair = v[:, 0], v[:, 1 : 1 + P], v[:, 1 + P :]
    delta = full[:, None, :] - single[:, iu] - single[:, ju] + pair  # (n, n_pairs, O)
    eta = np.zeros((n_rows, P, P))
    mag = np.abs(delta).sum(axis=-1)
    eta[:, iu, ju] = mag
    eta[:, ju, iu] = mag
    if not return_grid:
        return _mask_diagonal(eta)
    # the round-off of a difference is that of its values, not of the (small) difference
    return _mask_diagonal(eta), _ROUND_OFF * np.abs(v).max(axis=1).sum(axis=-1)


def _cross_contribution_hessian(hessian_columns, X, reference, col_to_player, n_players, *,
                                model_name="the model", row_offset=0):
    """eta_ij = max over columns a of player i, b of player j of
    |d2 f / dx_a dx_b (x)| |x_a - r_a| |x_b - r_b|, summed over outputs.

    The Hessian is taken at the explained row x (as in the authors' code). Only the
    columns where x differs from r matter (the others get weight 0), and since H is
    symmetric and the entries within one player are not needed, the columns of the player
    with the most such columns are skipped too (every other pair keeps a computed member:
    a minimum vertex cover of the players' columns). One Hessian-vector product per
    remaining column; the result equals the block maximum over the full Hessian.

    Parameters
    ----------
    hessian_columns : callable ``(X (n, d), rows (k,), cols (k,)) -> (k, n_outputs, d)``
        ``H(x_rows[q]) e_cols[q]``, e.g.
        :meth:`~sklearn_xai._torch.TorchModelFunction.hessian_columns`.
    X : ndarray of shape (n, d), numeric
    reference : ndarray of shape (d,)
    col_to_player : ndarray of shape (d,), int
    n_players : int
    model_name : str, default="the model"
    row_offset : int, default=0
        Position of ``X[0]`` among the explained rows; both name the culprit when a used
        Hessian entry is NaN or infinite, which is a ValueError.

    Returns
    -------
    eta : ndarray of shape (n, n_players, n_players); the diagonal is ``-inf``.
    """
    from ._shear_kernels import block_max_cross_contribution

    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    dist = np.abs(X - np.asarray(reference, dtype=np.float64)[None, :])
    col_to_player = np.asarray(col_to_player, dtype=np.int64)
    pair_row, pair_col = np.nonzero(dist > 0)  # sorted by row
    pair_player = col_to_player[pair_col]
    counts = np.zeros((n, n_players), dtype=np.int64)
    np.add.at(counts, (pair_row, pair_player), 1)
    computed = pair_player != np.argmax(counts, axis=1)[pair_row]
    if not computed.any():
        return _mask_diagonal(np.zeros((n, n_players, n_players)))
    HC = np.asarray(hessian_columns(X, pair_row[computed], pair_col[computed]))
    if HC.dtype not in (np.float32, np.float64):
        HC = HC.astype(np.float64)
    if not np.isfinite(HC).all():
        # only entries against a column where x != r enter eta (the others weigh 0)
        used = dist[pair_row[computed]][:, None, :] > 0
        bad = np.unique(pair_row[computed][(~np.isfinite(HC) & used).any(axis=(1, 2))])
        if bad.size:
            raise ValueError(
                f"The input Hessian of the torch module {model_name} has NaN or infinite "
                f"entries at explained row(s) {_shown_positions(bad + row_offset)}, so it cannot "
                "rank the cooperators (a kink such as sqrt at 0 has no finite second "
                "derivative); use cooperators='finite_difference'.")
    return block_max_cross_contribution(
        np.ascontiguousarray(HC), pair_row.astype(np.int64), pair_col.astype(np.int64),
        computed, dist, col_to_player, n, int(n_players))


def _cross_contribution_from_full_hessian(H, X, reference, col_to_player, n_players):
    """Reference version of :func:`_cross_contribution_hessian` from full Hessians
    ``H`` of shape (n, n_outputs, d, d): block maximum of |H| |x - r| |x - r|^T."""
    dist = np.abs(np.asarray(X, float) - np.asarray(reference, float)[None, :])
    E = np.abs(H) * dist[:, None, :, None] * dist[:, None, None, :]
    n, n_out = E.shape[:2]
    eta = np.zeros((n, n_out, n_players, n_players))
    g = np.asarray(col_to_player)
    for i in range(n_players):
        for j in range(n_players):
            eta[:, :, i, j] = E[:, :, g == i][:, :, :, g == j].max(axis=(2, 3))
    return _mask_diagonal(eta.sum(axis=1))


# --------------------------------------------------------------------------- selection


def _top_k_cooperators(eta: np.ndarray, n_cooperators: int,
                       grid: np.ndarray | None = None) -> np.ndarray:
    """S_i = the K players j != i with the largest eta_ij, compared in multiples of the
    row's ``grid`` when given, else to 16 significant bits (ties: lowest index first).

    Values equal in exact arithmetic (a piecewise-linear model's zero or equal mixed
    differences) differ by round-off that changes with the other rows of a model call;
    rounded, they tie, so a row's cooperators do not depend on the rest of its call.

    Parameters
    ----------
    eta : ndarray of shape (n, P, P), diagonal ``-inf``

    Returns
    -------
    cooperators : ndarray of shape (n, P, K), int, sorted ascending within each S_i.
    """
    from ._shear_kernels import top_k_cooperators

    eta = np.asarray(eta, dtype=np.float64)
    if grid is not None:
        grid = np.asarray(grid, dtype=np.float64)[:, None, None]
        eta = np.round(np.divide(eta, grid, out=eta.copy(), where=grid > 0))
    else:
        mantissa, exponent = np.frexp(eta)
        eta = np.ldexp(np.round(mantissa * 2.0**16) / 2.0**16, exponent)
    # i never cooperates with itself, whatever the diagonal holds
    return top_k_cooperators(np.ascontiguousarray(eta),
                             int(n_cooperators)).astype(np.intp, copy=False)


# the random cooperators take their own streams, apart from the coalitions' random fill
_COOPERATOR_STREAM = 1


def _random_cooperators(n_players: int, n_cooperators: int, keys, seed) -> np.ndarray:
    """The authors' ablation: S_i uniformly random among the other players, per row.

    Parameters
    ----------
    n_players, n_cooperators : int
    keys : array-like of int, shape (n,)
        The rows' keys (:func:`~sklearn_xai._random.row_keys`): row ``k``'s cooperators
        depend only on ``(seed, keys[k])``.
    seed : int

    Returns
    -------
    cooperators : ndarray of shape (n, P, K), int, sorted ascending within each S_i.
    """
    from ._shear_kernels import random_cooperators

    seeds = stream_seeds(stream_seeds(seed, _COOPERATOR_STREAM), keys)
    return random_cooperators(np.atleast_1d(seeds), int(n_players),
                              int(n_cooperators)).astype(np.intp, copy=False)


# --------------------------------------------------------------------------- estimator


def _shear_masks(cooperators, keys, seed, *, antithetic=True, non_cooperators="shapley"):
    """Coalitions of SHEAR for every row and player.

    Parameters
    ----------
    cooperators : ndarray of shape (n, P, K), int
    keys : array-like of int, shape (n,)
        The rows' keys (:func:`~sklearn_xai._random.row_keys`): row ``k``'s random fill is
        drawn from the SplitMix64 stream of ``(seed, keys[k])``, so it depends on the row
        only, not on the other rows, their order or the batching.
    seed : int
    antithetic : bool
        Pair subset T with S_i \\ T and its random fill R with O_i \\ R (needs K >= 1).
    non_cooperators : {"shapley", "uniform"}
        How R_T is drawn. ``"uniform"``: every non-cooperator present with probability 1/2
        (the authors' estimator). ``"shapley"``: present with probability u drawn from
        Beta(|T| + 1, K - |T| + 1), the law of the Shapley "arrival time" given that
        exactly T of S_i is present; this makes the estimate unbiased for any model (the
        partner of (T, u) is (S_i \\ T, 1 - u)).

    Returns
    -------
    masks : ndarray of shape (n, P, 2^K, 2, P), bool
        ``masks[r, i, t, 0]`` is T_t u R_t u {i}, ``masks[r, i, t, 1]`` is T_t u R_t.
    """
    n, P, K = np.shape(cooperators)
    flat = _shear_coalitions(cooperators, keys, seed, antithetic=antithetic,
                             non_cooperators=non_cooperators)
    return flat[:, :-2].reshape(n, P, 2**K, 2, P)


def _shear_coalitions(cooperators, keys, seed, *, antithetic=True,
                      non_cooperators="shapley"):
    """The masks of :func:`_shear_masks` flattened to (n, P * 2^K * 2 + 2, P), followed by
    the empty and the full coalition (one array, ready for the value function)."""
    from ._shear_kernels import shear_coalitions

    cooperators = np.ascontiguousarray(cooperators, dtype=np.int64)
    seeds = stream_seeds(seed, keys)
    if np.shape(seeds) != cooperators.shape[:1]:
        raise ValueError(f"keys must have shape ({cooperators.shape[0]},); got "
                         f"{np.shape(keys)}.")
    return shear_coalitions(cooperators, seeds, bool(antithetic),
                            non_cooperators == "shapley")


def _make_efficient(phi, total, how, std=None, dof=None):
    """Values that add up to ``total`` and their standard errors.

    ``how="variance"`` (with ``std``): the generalised least-squares projection onto
    ``sum_i phi_i = total`` for independent errors of variances ``s**2``: player ``i``
    takes the share ``s_i^2 / sum_j s_j^2`` of the residual, and its standard error
    becomes ``sqrt(s_i^2 - s_i^4 / sum_j s_j^2)``, that of the constrained estimate.
    ``s`` is ``std`` without its Student-t widening by ``dof`` (the players' degrees of
    freedom differ: their widened variances would weigh them wrongly); the projected
    standard errors are widened again by each player's own ``dof``.
    Exact values (``std`` 0) stay as they are; a row/output whose standard errors are all
    0 or not all finite spreads its residual as ``"redistribute"`` does. The other
    choices (:func:`_redistribute`) leave ``std`` unchanged.
    """
    if how != "variance" or std is None:
        return _redistribute(phi, total, "redistribute" if how == "variance" else how), std
    widen = 1.0 if dof is None else t_factor(dof)
    var = (std / widen) ** 2
    tot = var.sum(axis=1, keepdims=True)                        # (n, 1, O)
    ok = np.isfinite(tot) & (tot > 0)
    safe = np.where(ok, tot, 1.0)
    fallback = _redistribute(phi, total, "redistribute")
    resid = (total - phi.sum(axis=1))[:, None, :]
    out = np.where(ok, phi + np.where(ok, var, 0.0) / safe * resid, fallback)
    new_std = np.where(ok, np.sqrt(np.maximum(var - np.where(ok, var, 0.0)**2 / safe, 0.0))
                       * widen, std)
    return out, new_std


def _redistribute(phi, total, how):
    """Spread the efficiency residual total - sum_i phi_i over the players.

    ``how="even"``: equally; ``how="redistribute"``: proportionally to |phi_i| (equally
    for a row/output whose phi are all zero).
    """
    resid = total - phi.sum(axis=1)  # (n, O)
    if how == "even":
        share = np.full_like(phi, 1.0 / phi.shape[1])
    else:
        mag = np.abs(phi)
        tot = mag.sum(axis=1, keepdims=True)
        share = np.where(tot > 0, mag / np.where(tot > 0, tot, 1.0), 1.0 / phi.shape[1])
    return phi + share * resid[:, None, :]


# the fills of round r >= 1 take their own streams (round 0 keeps the base seed's)
_ROUND_STREAM = 2


def _round_seed(seed, r):
    return seed if r == 0 else int(stream_seeds(stream_seeds(seed, _ROUND_STREAM), r))


def _shear_units(diff, n_cooperators, antithetic):
    """SHEAR's independent units: the antithetic pairs of subsets (each subset without
    pairing), their weights and their size classes.

    Parameters
    ----------
    diff : ndarray of shape (n, P, 2^K, O)
        ``v(T u R u {i}) - v(T u R)`` of every subset ``T``.

    Returns
    -------
    units : ndarray of shape (n, P, U, O)
        ``phi = sum_u weight_u units_u``.
    weight : ndarray of shape (U,)
    size_class : ndarray of shape (U,)
        Units of one class have the same weight and fill law (the subset size, or the
        pair's smaller size).
    """
    K = n_cooperators
    w = _cooperator_weights(K)
    size = _subset_bits(K).sum(axis=1)
    if antithetic and K >= 1:
        t = np.arange(2 ** (K - 1))
        partner = 2**K - 1 - t
        return diff[:, :, t] + diff[:, :, partner], w[t], np.minimum(size[t], size[partner])
    return diff, w, size


def _shear_std(rounds, weight, size_class):
    """Standard errors of SHEAR from its units over ``R`` rounds (n, R, P, U, O), and
    their degrees of freedom.

    Each unit is one draw of the random fill in its own stratum (a subset, or an
    antithetic pair of subsets). The standard error returned is ``sqrt(V) t(nu) / t(inf)``,
    with ``V`` the estimated variance of the estimate, ``nu`` its degrees of freedom and
    ``t(nu)`` the 97.5 % quantile of Student's t: ``phi +- 1.96 std`` is the 95 % Student
    interval, which a few degrees of freedom need (``1.96 sqrt(V)`` covers 66-88 % with
    two rounds on the games of ``benchmarks/bench_shear.py``).

    * ``R >= 2``: every stratum has ``R`` independent draws, ``V = sum_u a_u`` with
      ``a_u = weight_u^2 var_r(unit_u) / R``, and ``nu`` the Satterthwaite degrees of
      freedom ``V^2 / (sum_u a_u^2 / (R - 1))``, between ``R - 1`` and ``U (R - 1)``
      (``inf`` where ``V = 0``). Calibrated when a pair's fill takes many values (enough
      non-cooperators); two rounds that draw the same fill give a variance of 0.
    * ``R = 1``: each stratum has one draw, so the variance of a unit is pooled over the
      strata of one size class (same weight, same fill law), or over all strata when no
      class has two (collapsed strata), with ``nu`` the pooled degrees of freedom. It also
      counts the differences between the strata's means: exact for models without
      interactions of order three or more (then 0), an upper bound otherwise, i.e.
      conservative. ``NaN`` (``nu = 0``) with a single stratum.

    Returns
    -------
    std, dof : ndarray of shape (n, P, O)
    """
    n, R, P, U, O = rounds.shape
    w2 = weight**2
    if R >= 2:
        a = w2[None, None, :, None] * rounds.var(axis=1, ddof=1) / R  # (n, P, U, O)
        var = a.sum(axis=2)
        denom = (a**2).sum(axis=2) / (R - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            dof = np.where(denom > 0, var**2 / np.where(denom > 0, denom, 1.0), np.inf)
        # round-off can put nu a hair outside its bounds
        dof = np.clip(dof, R - 1, np.where(denom > 0, U * (R - 1), np.inf))
    else:
        if U < 2:
            return np.full((n, P, O), np.nan), np.zeros((n, P, O))
        units = rounds[:, 0]
        classes = [size_class == c for c in np.unique(size_class)]
        if all(sel.sum() < 2 for sel in classes):
            classes = [np.ones(U, dtype=bool)]
        ss, n_dof = np.zeros((n, P, O)), 0
        for sel in classes:
            block = units[:, :, sel]
            ss += ((block - block.mean(axis=2, keepdims=True)) ** 2).sum(axis=2)
            n_dof += int(sel.sum()) - 1
        var = ss / n_dof * w2.sum()
        dof = np.full((n, P, O), float(n_dof))
    return t_widened(np.sqrt(var), dof), dof


def _shear_estimate(value, cooperators, keys, seed, *, antithetic=True,
                    non_cooperators="shapley", efficiency="none", n_rounds=1,
                    return_std=False):
    """SHEAR estimates for a batch of rows from a value function.

    Evaluates ``R P 2^(K+1) + 2`` coalitions per row (the SHEAR coalitions of every
    round, the empty one for the base value and the full one for the efficiency
    residual) in one call of ``value``.

    Parameters
    ----------
    n_rounds : int, default=1
        Independent draws of the random fill (each round all ``2^K`` subsets of every
        player's cooperators with fresh fills; round 0 is the single-round estimate);
        the estimate is their mean.
    return_std : bool, default=False
        Also return the standard errors and their degrees of freedom (:func:`_shear_std`).

    Returns
    -------
    phi : ndarray of shape (n, P, n_outputs)
    base : ndarray of shape (n, n_outputs), v(empty)
    full : ndarray of shape (n, n_outputs), v(U)
    std, dof : ndarray of shape (n, P, n_outputs)
        Only with ``return_std=True``; standard errors of ``phi`` before any efficiency
        redistribution, and their degrees of freedom.
    """
    cooperators = np.asarray(cooperators, dtype=np.intp)
    n, P, K = cooperators.shape
    R = int(n_rounds)
    masks = [_shear_coalitions(cooperators, keys, _round_seed(seed, r), antithetic=antithetic,
                               non_cooperators=non_cooperators) for r in range(R)]
    if R > 1:  # one call of the model for every round; the empty and full coalition once
        masks = [np.concatenate([m[:, :-2] for m in masks] + [masks[0][:, -2:]], axis=1)]
    v = np.asarray(value(masks[0]), dtype=np.float64)
    base, full = v[:, -2], v[:, -1]
    pairs = v[:, :-2].reshape(n, R, P, 2**K, 2, v.shape[-1])
    rounds = [pairs[:, r, :, :, 0] - pairs[:, r, :, :, 1] for r in range(R)]
    mean = rounds[0] if R == 1 else np.mean(rounds, axis=0)
    phi = np.einsum("t,npto->npo", _cooperator_weights(K), mean)
    if return_std:
        units = [_shear_units(d, K, antithetic) for d in rounds]
        std, dof = _shear_std(np.stack([u[0] for u in units], axis=1), units[0][1],
                              units[0][2])
    if efficiency != "none":
        phi, std = _make_efficient(phi, full - base, efficiency,
                                   std if return_std else None, dof if return_std else None)
    if return_std:
        return phi, base, full, std, dof
    return phi, base, full


# --------------------------------------------------------------------------- reference row


def _group_reference(X, groups):
    """The reference row of SHEAR: numeric means and categorical modes (from
    :func:`~sklearn_xai.base.reference_row`), except that a multi-column group whose
    columns each take at most two distinct values (a one-hot or standardised one-hot block)
    gets its most frequent row pattern, a valid category, instead of the off-manifold mean.

    Returns
    -------
    ndarray of shape (1, n_features)
    """
    ref = reference_row(X)
    A = as_array(X)
    for cols in groups:
        if len(cols) < 2:
            continue
        block = A[:, cols]
        try:
            block = block.astype(np.float64)
        except (TypeError, ValueError):
            continue
        if any(np.unique(block[:, k][~np.isnan(block[:, k])]).size > 2 for k in
               range(block.shape[1])):
            continue
        patterns, counts = np.unique(block, axis=0, return_counts=True)
        ref[0, cols] = patterns[np.argmax(counts)]
    return ref


def _check_reference(ref, X, allow_nan):
    """Raise a ValueError naming ``background`` when a numeric column of ``ref`` (1, d) is
    not a number, or is NaN (unless the model takes NaN) or infinite."""
    if is_frame(X):
        import pandas as pd

        cols = np.array([j for j, t in enumerate(X.dtypes) if pd.api.types.is_numeric_dtype(t)
                         and not isinstance(t, pd.CategoricalDtype)], dtype=np.intp)
    else:
        cols = np.arange(ref.shape[1])
    try:
        values = ref[0, cols].astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"background must hold numbers in the numeric columns of X ({exc}).") from exc
    bad = np.isinf(values) if allow_nan else ~np.isfinite(values)
    if bad.any():
        kind = "infinite" if allow_nan else "NaN or infinite"
        raise ValueError(
            f"background has {kind} values in column(s) {cols[bad].tolist()}; pass a finite "
            "row, or background='mean'.")


# --------------------------------------------------------------------------- torch outputs


def _torch_model_function(model, response_method, target, device, batch_size):
    """A :class:`~sklearn_xai._torch.TorchModelFunction` selecting the explained output.

    * plain ``torch.nn.Module``: the module output (``response_method`` "auto" or
      "predict"); ``target`` is an output column index, ``None`` keeps all columns;
    * skorch classifier: ``"auto"``/``"predict_proba"`` explain ``predict_proba`` (the net's
      ``predict_nonlinearity`` applied to the module output); ``"decision_function"``
      explains the module's raw output, i.e. the logits of a net trained with
      ``CrossEntropyLoss`` (or the single logit of ``NeuralNetBinaryClassifier``).
      ``target`` is a class label; binary problems explain ``classes_[1]``;
    * skorch regressor: the module output, all columns.
    """
    from .._model import is_skorch_net
    from .._torch import TorchModelFunction

    net = unwrap_frozen(model)
    output = "raw"
    if not is_skorch_net(net):
        if response_method not in ("auto", "predict"):
            raise ValueError(
                f"response_method={response_method!r} is not defined for a torch module; use "
                "'auto' (the module output).")
        selection = select_outputs("predict", target)  # target: an output column
    elif not (hasattr(net, "predict_proba") and getattr(net, "classes_", None) is not None):
        if response_method not in ("auto", "predict"):
            raise ValueError(f"response_method={response_method!r} is not defined for "
                             f"{type(net).__name__}; use 'auto' or 'predict'.")
        if target is not None:
            raise ValueError("target can only be used with a classifier.")
        selection = select_outputs("predict", None)
    else:
        if response_method == "predict":
            raise ValueError("response_method='predict' returns labels; explain "
                             "'predict_proba' or 'decision_function' (the logits) of a "
                             "skorch classifier.")
        classes = list(np.asarray(net.classes_).tolist())
        if response_method == "decision_function" and \
                type(net).__name__ == "NeuralNetBinaryClassifier":  # one logit, classes[1]'s
            selection = replace(select_outputs("margin", target, labels=classes[1:],
                                               negative=classes[0], negate=False),
                                columns=[0])
        else:
            output = "raw" if response_method == "decision_function" else "proba"
            selection = select_outputs(
                "margin" if output == "raw" else "proba", target, labels=classes,
                default=[1] if len(classes) == 2 else range(len(classes)))
    return TorchModelFunction(net, output=output, output_columns=selection.columns,
                              output_names=selection.names, device=device,
                              batch_size=batch_size)


@dataclass
class _ShearBatch:
    """SHEAR's results for a batch of rows, with an output axis: values ``phi`` (n, P, O),
    ``base`` (n, O), ``coop`` (n, P, K) and, for sampled estimates, ``eta`` (the cross
    contributions, or None), ``std`` and ``dof`` (n, P, O) and ``rounds`` (n,); None for
    exact values; the frontier's ``paths`` and budget ``n_evals`` (n,)."""

    phi: np.ndarray
    base: np.ndarray
    coop: np.ndarray
    eta: np.ndarray = None
    std: np.ndarray = None
    rounds: np.ndarray = None
    dof: np.ndarray = None
    paths: np.ndarray = None
    n_evals: np.ndarray = None

    @classmethod
    def concatenate(cls, parts):
        """The batches' results, rows in order."""
        return cls(*(None if getattr(parts[0], f.name) is None else
                     np.concatenate([getattr(p, f.name) for p in parts])
                     for f in fields(cls)))


# --------------------------------------------------------------------------- torch game


class _TorchReferenceGame(Game):
    """``v(S) = f(x_S, r_~S)`` for a :class:`~sklearn_xai._torch.TorchModelFunction`, with
    the hybrid rows built in torch on the model's device: a :class:`Game`.

    Same values as :class:`~sklearn_xai.shapley.ImputationGame` with one reference row
    (tested), without the float64 numpy copy of every hybrid row: on CPU it saves about
    half of SHEAR's time, on a GPU it keeps the work on the device. For a plain
    ``nn.Sequential`` starting with ``nn.Linear`` the first layer is factored over the
    players instead (no hybrid row is built at all). Private to SHEAR.

    Parameters
    ----------
    model_fn : TorchModelFunction
    X : ndarray of shape (n_rows, n_features)
    reference : ndarray of shape (1, n_features)
    col_to_player : ndarray of shape (n_features,), int
    n_players : int
    max_rows : int, default=65536
        Largest number of model rows per forward pass.
    row_offset : int, default=0
        Position of ``X[0]`` among the explained rows, to name the rows of a NaN or
        infinite model output (a ValueError).
    """

    def __init__(self, model_fn, X, reference, col_to_player, n_players, max_rows=65536,
                 row_offset=0):
        self.model_fn = model_fn
        self.row_offset = int(row_offset)
        self.X = np.asarray(X)
        self.reference = np.asarray(reference).reshape(1, -1)
        self.col_to_player = np.asarray(col_to_player, dtype=np.intp)
        self._n_players = int(n_players)
        # the players' map of the columns (P, d): the active players and the first layer's
        # player sums (_tensors) read it
        d = self.col_to_player.size
        self._player_map = np.zeros((self._n_players, d), dtype=np.float32)
        self._player_map[self.col_to_player, np.arange(d)] = 1.0
        self.max_rows = int(max_rows)
        self.n_evaluations = 0
        self._prepared = None

    @property
    def n_rows(self):
        return self.X.shape[0]

    @property
    def n_players(self):
        return self._n_players

    def active_players(self):
        """Players whose columns differ from the reference in the row (the others are
        dummies of the row's game), (n_rows, n_players) bool."""
        return _differing_players(~(self.X == self.reference), self._player_map)  # NaN differs

    def _tensors(self):
        """The game's rows and reference as tensors, the player of each column, the
        module's first linear layer (:meth:`~TorchModelFunction.first_linear_layer`, or
        None) with the players' one-hot map of the columns (P, d) and ``W r + b`` (1, h):
        computed at the first value call and kept (the calls of one game share them)."""
        if self._prepared is None:
            import torch

            fn = self.model_fn
            Xt = fn._to_tensor(self.X)
            rt = fn._to_tensor(self.reference, name="reference")
            c2p = torch.as_tensor(self.col_to_player, device=Xt.device)
            split = fn.first_linear_layer()
            onehot = base = None
            if split is not None:
                W, b, _ = split
                with torch.inference_mode():
                    onehot = torch.as_tensor(self._player_map, dtype=Xt.dtype,
                                             device=Xt.device)
                    base = torch.nn.functional.linear(rt, W, b)
            self._prepared = (Xt, rt, c2p, split, onehot, base)
        return self._prepared

    def value(self, masks, rows=None, count=True):
        """``v(S) = f(x_S, r_~S)``; see :meth:`Game.value`."""
        import torch

        fn = self.model_fn
        masks, row_ids = self._check_masks(masks, rows)
        n, d = row_ids.size, self.X.shape[1]
        per_row = masks.ndim == 3
        C = masks.shape[-2]
        X_all, rt, c2p, split, onehot, base = self._tensors()
        Xt = X_all[torch.as_tensor(row_ids, device=X_all.device)]
        chunk = max(1, self.max_rows // max(C, 1))
        out = None
        with torch.inference_mode():
            if split is not None:
                # f(x_S, r_~S) = tail(W r + b + sum_{p in S} W_p (x - r)_p): the per-player
                # partial products A are computed once per row, and each coalition costs
                # one (P, h) combination instead of building and multiplying a d-wide row
                W, b, tail = split
                shared = None if per_row else torch.as_tensor(masks, device=Xt.device).to(
                    Xt.dtype)
            else:
                shared = None if per_row else torch.as_tensor(masks, device=Xt.device)[:, c2p]
            for r0 in range(0, n, chunk):
                r1 = min(n, r0 + chunk)
                if split is not None:
                    A = ((Xt[r0:r1] - rt)[:, None, :] * onehot[None]) @ W.T  # (m, P, h)
                    m = r1 - r0
                    Mf = (torch.as_tensor(masks[r0:r1], device=Xt.device).to(Xt.dtype)
                          if per_row else shared.expand(m, C, -1))
                    # baddbmm, not matmul + base: an order of magnitude faster on CPU here
                    Z = torch.baddbmm(base.expand(m, C, -1), Mf, A)  # (m, C, h)
                    y = tail(Z.reshape(-1, Z.shape[-1]))
                else:
                    colm = (torch.as_tensor(masks[r0:r1], device=Xt.device)[..., c2p]
                            if per_row else shared[None])
                    Z = torch.where(colm, Xt[r0:r1, None, :], rt)
                    y = fn._forward(Z.reshape(-1, d))
                y = y.to(torch.float64).cpu().numpy().reshape(r1 - r0, C, -1)
                if out is None:
                    out = np.empty((n, C, y.shape[-1]))
                out[r0:r1] = y
        if out is None:  # no row or no coalition
            out = np.empty((n, C, self.n_outputs if self.n_rows else 0))
        if not np.isfinite(out).all():
            bad = row_ids[np.flatnonzero(~np.isfinite(out).reshape(n, -1).all(axis=1))]
            raise fn.non_finite_error(
                f"on coalitions of explained row(s) {_shown_positions(bad + self.row_offset)}")
        self._count(n, C, count)
        return out


# --------------------------------------------------------------------------- explainer



class ShearExplainer(AttributionExplainer):
    """SHEAR: Shapley values from a few contributive cooperators per feature.

    Wang et al., "Accelerating Shapley Explanation via Contributive Cooperator Selection",
    ICML 2022. The game is the single-reference (baseline Shapley) game
    ``v(S) = f(x_S, r_{~S})``. For each player ``i`` SHEAR

    1. scores every other player ``j`` by its cross-contribution with ``i``,
       ``eta_ij = |d2f / dx_i dx_j (x)| |x_i - r_i| |x_j - r_j|`` (block maximum over the
       columns of feature groups) or its model-agnostic mixed-difference counterpart;
    2. keeps the ``K`` players with the largest ``eta_ij`` as the cooperators ``S_i``
       (``K`` is set by ``n_evals`` and ``n_rounds``);
    3. enumerates the ``2^K`` subsets ``T`` of ``S_i`` with the Shapley weights of a
       ``(K+1)``-player game, ``w(|T|) = |T|! (K-|T|)! / (K+1)!``, and fills the other
       players with a random subset ``R_T``; the same ``R_T`` is used with and without
       ``i``, and (``antithetic=True``) ``(T, R_T)`` is paired with
       ``(S_i \\ T, O_i \\ R_T)``. A round draws every fill once; the values average
       the rounds.

    Parameters
    ----------
    model : estimator, skorch net, torch.nn.Module or FrozenEstimator
        The model to explain. A ``FrozenEstimator`` (or a torch module) is used as is;
        any other estimator is cloned and fitted on ``fit``'s ``(X, y)``.
    n_evals : int or "auto", default=16
        Coalition evaluations per player and row ``N``, the budget unit of every explainer
        of the package (:class:`KnockoffSHAP` included): a row costs ``N * n_players + 2``
        coalition evaluations. A power of two, at least 2, because SHEAR spends them on
        ``R = n_rounds`` rounds of the ``2^K`` subsets of ``K`` cooperators, each with and
        without the player: ``N = 2^(K+1) R``, i.e. ``K = log2(N / R) - 1`` (with the
        default ``n_rounds=1``, ``N = 4, 8, 16, 32`` buy ``K = 1, 2, 3, 4``; with
        ``n_rounds=2``, ``K = 0, 1, 2, 3``). When ``N >= 2^n_players`` the values are
        exact (computed by enumerating the ``2^n_players`` coalitions once, which gives
        the numbers of the SHEAR coalitions with ``K = n_players - 1`` at a lower cost).
        ``"auto"``: ``K = 3`` cooperators and rounds of fresh
        random fills, 1, then 16, 32, 64 (each ``16 * n_players`` coalition evaluations),
        per row until every standard error of the row is at most ``tol`` times the row's
        range of attributions (one round stops only a row whose values are exact; from
        16 rounds on each pair of subsets has enough draws for a calibrated standard
        error), or ``MAX_AUTO_ROUNDS = 64`` rounds (``n_evals = 1024``;
        a ``ConvergenceWarning`` names the rows stopped there). A step whose ``n_evals``
        would reach ``2^n_players`` enumerates the row's coalitions instead (exact
        values, standard errors 0, ``extras["n_rounds"]`` 0). A step recomputes the
        rows still running with the rounds so far (drawn again, identically), so a row
        costs at most twice its final budget; ``extras["n_evals"]`` records the budget
        each row used. The result depends only on ``random_state`` and the row.
    algorithm : {"shear", "frontier"}, default="shear"
        ``"shear"``: the SHEAR estimator above (cooperator selection, the settings below).
        ``"frontier"``: :func:`~sklearn_xai.shapley.frontier_shapley` on the same game
        (the same model function, reference row and hybrid rows built in torch): a
        player equal to the reference is exactly 0, a row whose reduced game fits the
        budget is enumerated exactly, the others are fitted by a regression-adjusted odd
        surrogate; efficient by construction; ``extras["paths"]`` says which, per row.
        ``n_evals`` may then be any integer >= 2, or ``"auto"``: each row starts at 16
        (or the least power of two giving 32 pairs) and doubles its budget until every
        standard error is at most ``tol`` times its range of attributions, or
        ``MAX_AUTO_N_EVALS = 1024`` (a ``ConvergenceWarning`` counts the rows stopped
        there), as :class:`KnockoffSHAP`'s ``"auto"`` does; ``n_rounds``, ``cooperators``,
        ``antithetic``, ``non_cooperators`` and ``efficiency`` are not used. Measured on
        the Adult MLP of ``benchmarks/bench_shear.py`` (13 players, exact truth): at
        ``n_evals`` 8 / 16 / 32 its absolute error is about 0.1x / 0.03x / 0.01x SHEAR's
        and antithetic permutation sampling's, at several times SHEAR's time per row
        (the surrogate fits run per row in numpy; ``doc/benchmarks.md``). SHEAR's
        cooperator selection is the cheaper per row; the frontier is the more accurate
        per model evaluation.
        ``"frontier_shared"``: the same with shared designs
        (:func:`~sklearn_xai.shapley.frontier_shared_shapley`): every row with as many
        players unequal to the reference takes one design drawn from ``random_state``,
        fitted with a flat order-3 prior, so each estimate is one cached matrix applied
        to the row's coalition values (no per-row fit). Measured on the same benchmark:
        0.16x / 0.04x / 0.013x the error of shap's permutation sampler at ``n_evals``
        8 / 16 / 32 (about 1.5x the frontier's), at 1.4x / 1.1x / 0.8x the bare forward
        passes once its designs are cached for the ``random_state`` (the first call
        computes them: 1.4-2.8x; with ``random_state=None`` every call is a first call).
        A row's values still depend only on the row and ``random_state``. At less than
        SHEAR's own cost (1.7x / 1.3x / 1.1x the bare forwards) that is 0.13x / 0.04x /
        0.016x SHEAR's error: on this benchmark the cooperator selection does not pay
        against it. ``"shear"`` stays the default as the method this explainer is
        named for (and for its per-player cooperators in ``extras``); for the most
        accurate values at this cost, pass ``algorithm="frontier_shared"`` with a fixed
        ``random_state``.
    n_rounds : int, default=1
        Rounds of random fills a fixed ``n_evals`` is split into: a power of two, at most
        ``n_evals / 2``; ignored by ``n_evals="auto"``. ``1``: the most cooperators the
        budget affords and the most accurate values; each pair of subsets has one fill, so
        the standard errors can only be conservative. ``2`` or more: one cooperator less
        per doubling, and each pair of subsets gets ``n_rounds`` independent fills, hence
        its own variance: calibrated standard errors when the players have enough
        non-cooperators, at a cost in accuracy. See "Standard errors" below.
    tol : float > 0, default=0.05
        Tolerance of ``n_evals="auto"``, relative to each row's range of attributions
        (``max - min`` over players); ignored otherwise. The stopping rule of ``tol`` in
        :class:`KnockoffSHAP` and :class:`KnockoffSAGE` too.
    background : "mean" or array-like of shape (n_features,) or (1, n_features), \
            default="mean"
        The one background row ``r`` that fills the absent features (SHEAR's imputation is
        always ``"marginal"`` with this single row, the baseline Shapley game; see
        :ref:`imputation`), in the explained space (with ``feature_space="model"``, one
        value per column the Pipeline's last step receives). ``"mean"``: numeric
        column means of ``fit``'s rows, the most frequent value of non-numeric columns,
        and for a feature group made of two-valued columns (one-hot blocks) the group's
        most frequent pattern, i.e. a valid category rather than the off-manifold mean
        one-hot vector.
    cooperators : {"auto", "hessian", "finite_difference", "random"}, default="auto"
        How the cross-contribution is computed.

        * ``"hessian"``: input Hessian at ``x`` by torch autograd, on the model's device
          (the explained model must be a torch module or skorch net: the model, or with
          ``feature_space="model"`` the Pipeline's last step; otherwise a ValueError),
          vectorised over rows with batched Hessian-vector products; only the Hessian
          columns where ``x != r`` are computed (at most two per one-hot group when the
          reference is a valid category), which gives the same block maximum as the full
          Hessian.
        * ``"finite_difference"``: the mixed difference
          ``v(U) - v(U - i) - v(U - j) + v(U - {i, j})`` of the game itself; any model
          (scikit-learn models included, in either ``feature_space``), and ReLU nets whose
          Hessian is zero. Costs ``1 + P + P (P - 1) / 2`` extra
          model evaluations per row.
        * ``"random"``: uniformly random cooperators (the paper's ablation).
        * ``"auto"``: ``"hessian"`` for torch/skorch models whose activation modules are all
          smooth, else ``"finite_difference"``.
    antithetic : bool, default=True
        Pair each subset and random fill with their complements. With pairing the values
        are exact for every model whose interactions are at most pairwise.
    non_cooperators : {"shapley", "uniform"}, default="shapley"
        How the non-cooperators are filled. ``"uniform"``: each is present with probability
        1/2, the authors' estimator (biased once interactions of order three or more link
        ``i`` to a non-cooperator). ``"shapley"``: present with a probability ``u`` drawn
        from ``Beta(|T| + 1, K - |T| + 1)``, which makes every estimate unbiased at the
        same cost (the antithetic partner uses ``1 - u``).
    efficiency : {"variance", "none", "redistribute", "even"}, default="variance"
        SHEAR's raw estimates need not add up to ``f(x) - f(r)``. ``"variance"`` (the
        default) projects them onto ``sum(phi) = f(x) - f(r)`` by generalised least
        squares: each player takes the share ``std_i^2 / sum_j std_j^2`` of the residual,
        so exact values stay as they are and the noisiest absorb the most, and ``std``
        becomes the standard error of the projected estimate,
        ``sqrt(std_i^2 - std_i^4 / sum_j std_j^2)`` (rows whose errors are all 0, or
        unknown, spread the residual as ``"redistribute"``). ``"none"`` returns the raw
        estimates; ``"redistribute"`` adds the residual to the players in proportion to
        ``|phi_i|``; ``"even"`` splits it equally (these two leave ``std`` as estimated).
        For models with at most pairwise interactions, and for exact budgets, the
        residual is already zero and nothing changes.
    feature_groups : None, list of lists or dict name -> list, default=None
        Players made of several columns (e.g. one-hot blocks), masked together. The
        columns are those of the explained space: with ``feature_space="model"``, names
        from the preprocessing's ``get_feature_names_out`` or positions in its output
        (:func:`~sklearn_xai.base.groups_from_transformer` gives one group per input
        column).
    response_method : {"auto", "predict_proba", "decision_function", "predict"}, default="auto"
        Which model output is explained. For skorch classifiers ``"decision_function"``
        explains the module's raw output (the logits of a net trained with
        ``CrossEntropyLoss``), ``"auto"`` the probabilities; for torch modules the module
        output.
    target : class label, int or None, default=None
        For classifiers the class explained (binary default: ``classes_[1]``); for torch
        modules an output column.
    feature_space : {"input", "model"}, default="input"
        Explain a Pipeline in the columns given to fit (``"input"``) or in the columns its
        last step receives (``"model"``): the rows are sent through the preprocessing
        steps, the players are its output columns, and the cooperators are selected on
        the last step (its Hessian when it is a torch module or skorch net).
    device : str or None, default=None
        Torch device for torch/skorch models; ``None`` uses the net's (or module's). The
        model itself is never moved: when it is elsewhere, a copy is moved to ``device``.
        A device not usable here (``"meta"``, ``"cuda"`` without CUDA) is a ValueError.
    batch_size : int, default=128
        Explained rows per task: ``explain`` handles the rows in batches of this many, one
        joblib task each under ``n_jobs`` (see :ref:`batch-sizes`).
    max_model_rows : int, default=65536
        Most rows per model call (forward pass): a batch's ``P * n_evals`` coalitions per
        row go through the model in calls of at most this many rows (see
        :ref:`batch-sizes`).
    n_jobs : int or None, default=None
        Parallel workers over row batches.
    random_state : int, RandomState instance or None, default=None
        Seeds the per-row random streams: each :meth:`explain` draws one seed from it,
        and a row's coalitions (and random cooperators) depend only on that seed and the
        row's content, so a row's values do not depend on the other rows explained with
        it, their order, ``n_jobs`` or ``batch_size``, and equal rows get equal values
        (see :mod:`sklearn_xai._random`). An int gives the same values at every call; a
        ``RandomState`` a reproducible sequence of calls; ``None`` fresh values. A
        ``numpy.random.Generator`` is not accepted.
    verbose : int, default=0
        Progress on stderr: ``0`` nothing; ``1`` a progress bar (rows done, rate, time
        left; tqdm's when it is installed) for calls that run longer than about 2 s; ``2``
        also the time of each batch of ``batch_size`` rows. The results do not depend on it.

    Attributes
    ----------
    model_ : the explained (fitted) model
    model_fn_ : callable ``f(X) -> (n, n_outputs)``
    reference_ : ndarray of shape (1, n_features_explained)
        The background row ``r`` (from ``background``), also the reference of
        :meth:`score`.
    groups_ : list of ndarray of int
    player_names_, output_names_ : list of str
    n_cooperators_ : int
        ``K``.
    n_rounds_ : int or None
        ``R`` of a fixed ``n_evals``; ``None`` for ``"auto"`` (rounds per row).
    feature_space_ : str
        The space explained: ``"model"`` only for a Pipeline with ``feature_space="model"``.
    preprocessor_, explained_model_ : the preprocessing steps (or ``None``) and the model
        whose inputs are the players.
    n_features_explained_ : int
    cross_contribution_ : str
        The resolved ``cooperators`` method.
    n_features_in_, feature_names_in_ : see scikit-learn.

    Notes
    -----
    Cost per explained row: ``P * 2^(K+1) + 2`` coalition evaluations (``P * n_evals``
    below the exact regime, plus ``f(r)`` and ``f(x)``), plus the cross-contribution
    (``"hessian"``: one Hessian-vector product per column where ``x != r``, batched, about
    three forwards each; ``"finite_difference"``:
    ``1 + P(P+1)/2`` evaluations, already counting ``f(x)``; ``"random"``: none).

    For a torch model that is a plain ``nn.Sequential`` starting with ``nn.Linear`` (the
    usual tabular MLP), the first layer is factored over the players: its output for a
    coalition is ``W r + b + sum_{p in S} W_p (x - r)_p``, with the per-player products
    computed once per row, so no hybrid row is built; the Hessian columns are taken through
    the layers after it (``H_x = W^T H_z W``), and for a chain of ``Linear`` layers and
    element-wise activations by a written-out R-operator. All are exact; other modules are
    evaluated on hybrid rows built on the model's device.

    Standard errors (``Attribution.std``; ``None`` in the exact regime) come from SHEAR's
    independent units, the random fills: one per antithetic pair of subsets (per subset
    without pairing) and per round. The variance ``V`` they give has ``nu`` degrees of
    freedom (``Attribution.std_dof``), and ``std = sqrt(V) t(nu) / 1.96`` with ``t(nu)`` the
    97.5 % quantile of Student's t, so that ``values +- 1.96 std`` is a 95 % interval even
    with few degrees of freedom (``t(1) / 1.96 = 6.5``, ``t(2) / 1.96 = 2.2``,
    ``t(15) / 1.96 = 1.09``).

    * ``n_rounds=1`` (a fixed ``n_evals``, the default): each pair has a single fill, so
      the variance is pooled over the pairs of one subset size (over all pairs when no
      two share one, ``n_evals=8``), which also counts the differences between their
      means: an upper bound, i.e. conservative intervals. Measured coverage of the exact
      values: 96-100 % for ``n_evals`` 8 to 128 (MLP on Adult, dense three-way
      polynomials of 8 and 10 players; ``benchmarks/bench_shear.py``). ``NaN`` for
      ``n_evals`` 2 and 4 (a single pair).
    * ``n_rounds >= 2``: each pair has its own variance from its ``n_rounds`` fills, and
      ``nu`` is their Satterthwaite degrees of freedom (between ``n_rounds - 1`` and the
      number of pairs times that). With two rounds the coverage was 94-97 % from
      ``n_evals=16`` on when the players have five non-cooperators or more (Adult, 13
      players; the polynomials), 86-90 % at ``n_evals=8``, and too low with fewer
      non-cooperators (62-93 % for 4 to 7 players), whose fills take few values that two
      rounds often repeat (a variance of 0). Calibrated on average, these intervals are
      erratic (1 to 4 degrees of freedom; on Adult twice as wide on average as the
      one-round ones), and the lost cooperator costs accuracy: absolute error +9 % to
      +57 % on Adult (+21 % at ``n_evals=16``), +26 % to +42 % on the polynomials. More
      rounds give steadier intervals and fewer cooperators.
    * ``n_evals="auto"``: rounds of 16 to 64 fills of each pair; calibrated (95-97 % on
      the same models). A row stopped after its first round (its values exact up to
      round-off) reports the one-round estimate.

    The standard errors are 0 for models without interactions of order three or more (the
    values are then exact); with ``efficiency="variance"`` they are those of the
    efficient (projected) values, with the other choices those of the raw estimates.

    With the default ``efficiency="variance"`` the values add up to ``f(x) - f(r)``; they
    are not guaranteed symmetric (each player uses its own cooperators). :meth:`explain` returns an
    :class:`~sklearn_xai.Attribution` whose ``extras`` hold ``"cooperators"`` (int array
    of shape (n_samples, n_players, K), the players selected for each player) and
    ``"cross_contribution"`` ((n_samples, n_players, n_players), ``-inf`` on the diagonal;
    ``None`` for random or exact selection), ``"n_evals"`` (int array (n_samples,), the
    coalition evaluations per player each row used: ``2^(K+1)`` times its rounds, or
    ``2^n_players`` in the exact regime) and ``"n_rounds"`` (0 in the exact regime); its
    ``std_dof`` holds the degrees of freedom of ``std`` (same shape; ``inf`` where the
    standard error is 0 or its interval normal; with the frontier's algorithms the
    frontier's, whose standard errors are widened the same way; ``None`` in the exact
    regime).
    """

    _parameter_constraints: dict = {
        **AttributionExplainer._parameter_constraints,
        "n_evals": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "algorithm": [StrOptions({"shear", "frontier", "frontier_shared"})],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "background": [StrOptions({"mean"}), "array-like"],
        "max_model_rows": [Interval(Integral, 1, None, closed="left")],
        "cooperators": [StrOptions({"auto", "hessian", "finite_difference", "random"})],
        "antithetic": ["boolean"],
        "non_cooperators": [StrOptions({"shapley", "uniform"})],
        "efficiency": [StrOptions({"variance", "none", "redistribute", "even"})],
        "feature_groups": [None, list, dict],
        "device": "no_validation",
        "random_state": ["random_state"],
    }

    #: old parameter name -> new name (passing the old one is an error naming the new one)
    _renamed_parameters = {"reference": "background"}
    _cli_name = "shear"
    _label = "SHEAR"
    _in_default_report = True
    _report_chunk = 8
    _report_note = ("SHEAR compares the row with one reference row (column means, most "
                    "frequent categories): a feature at its reference value gets 0; its "
                    "estimates are projected to add up to the model's output minus the "
                    "reference's (efficiency='variance').")

    @classmethod
    def _report_params(cls, model, *, seed, immutable=None, time_limit=None):
        return {"n_evals": 16, "random_state": seed}

    def __init__(self, model: Any = None, *, n_evals: int | Literal["auto"] = 16,
                 algorithm: Literal["shear", "frontier", "frontier_shared"] = "shear",
                 n_rounds: int = 1,
                 tol: float = 0.05, background: Literal["mean"] | ArrayLike = "mean",
                 cooperators: Literal["auto", "hessian", "finite_difference", "random"] = "auto",
                 antithetic: bool = True,
                 non_cooperators: Literal["shapley", "uniform"] = "shapley",
                 efficiency: Literal["variance", "none", "redistribute", "even"] = "variance",
                 feature_groups: FeatureGroups = None, response_method: ResponseMethod = "auto",
                 target: Any = None, feature_space: Literal["input", "model"] = "input",
                 device: str | None = None, batch_size: int = 128, max_model_rows: int = 65536,
                 n_jobs: int | None = None, random_state: int | RandomState | None = None,
                 verbose: int = 0) -> None:
        self.model = model
        self.n_evals = n_evals
        self.algorithm = algorithm
        self.n_rounds = n_rounds
        self.tol = tol
        self.background = background
        self.cooperators = cooperators
        self.antithetic = antithetic
        self.non_cooperators = non_cooperators
        self.efficiency = efficiency
        self.feature_groups = feature_groups
        self.response_method = response_method
        self.target = target
        self.feature_space = feature_space
        self.device = device
        self.batch_size = batch_size
        self.max_model_rows = max_model_rows
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _fit_model(self, X, y=None, **fit_params):
        # a plain torch module has no fit: it is explained as it is (frozen or not)
        inner = unwrap_frozen(self.model)
        if is_torch_model(inner) and not hasattr(inner, "module_") and not hasattr(inner, "fit"):
            self.model_ = self.model
            return self.model_
        return super()._fit_model(X, y, **fit_params)

    def _setup_outputs(self, X):
        """``model_fn_`` and ``output_names_``; a torch module or skorch net (the model, or
        with ``feature_space="model"`` the Pipeline's last step) gets the torch adapter,
        which SHEAR's Hessian cooperators need."""
        if not is_torch_model(self.explained_model_):
            return super()._setup_outputs(X)
        if as_array(X).dtype == object:
            raise ValueError(
                f"The torch model {type(unwrap_frozen(self.explained_model_)).__name__} "
                "takes numeric input; X has non-numeric columns. Encode them first (or pass "
                "a Pipeline that does, with feature_space='model').")
        self.model_fn_ = _torch_model_function(
            self.explained_model_, self.response_method, self.target, self.device, None)
        self.model_fn_.set_output_names_from(as_array(X)[:1])
        self.output_names_ = list(self.model_fn_.output_names)
        return self.model_fn_

    def _fit(self, X, y):
        """Learn the players, the reference row, the cooperator method and the budget.

        ``X`` is in the explained space (see ``feature_space``).
        """
        auto = isinstance(self.n_evals, str)
        frontier = self.algorithm != "shear"
        n = 2 ** (AUTO_N_COOPERATORS + 1) if auto else int(self.n_evals)
        if not frontier and n & (n - 1):
            raise ValueError(f"n_evals must be a power of two (2, 4, 8, ...) or 'auto'; got "
                             f"{n}.")
        R = int(self.n_rounds)
        if not auto and not frontier and (R & (R - 1) or 2 * R > n):
            raise ValueError(
                f"n_rounds must be a power of two of at most n_evals / 2 = {n // 2} (each "
                f"round takes 2^(K+1) >= 2 of the n_evals); got n_rounds={R}.")
        self.groups_, self.player_names_ = resolve_feature_groups(
            self.feature_groups, self._feature_names())
        P = len(self.groups_)
        d = self.n_features_explained_
        self.col_to_player_ = np.empty(d, dtype=np.intp)
        for p, cols in enumerate(self.groups_):
            self.col_to_player_[cols] = p
        is_torch_fn = isinstance(self.model_fn_, TorchModelFunction)
        if isinstance(self.background, str):
            self.reference_ = _group_reference(X, self.groups_)
        else:
            check_rows_columns(self.background, X, "background")
            ref = np.asarray(self.background)
            if ref.ndim == 1:
                ref = ref[None, :]
            if ref.shape != (1, d):
                where = (" (the columns the Pipeline's last step receives, "
                         "feature_space='model')" if self.feature_space_ == "model" else "")
                raise ValueError(
                    f"background must be one row, of shape ({d},) or (1, {d}){where}; got "
                    f"{np.shape(self.background)}.")
            _check_reference(ref, X, allow_nan=not is_torch_fn and model_allows_nan(
                self.explained_model_))
            self.reference_ = ref
        if is_torch_fn:  # the reference in the module's dtype, and f(r) finite
            self.model_fn_.probe(self.reference_.astype(np.float64), name="background")
        method = self.cooperators
        if method == "auto":
            method = "hessian" if is_torch_fn and self.model_fn_.is_smooth() else \
                "finite_difference"
        if method == "hessian" and not is_torch_fn:
            todo = "use 'finite_difference' (or 'auto'), which works for any model."
            if self.feature_space_ == "input" and is_torch_model(split_pipeline(self.model_)[1]):
                todo = ("pass feature_space='model' to take the Hessian of the Pipeline's "
                        "last step, or " + todo)
            raise ValueError(
                "cooperators='hessian' needs the explained model to be a torch module or "
                "skorch net taking the explained columns; got "
                f"{type(unwrap_frozen(self.explained_model_)).__name__}: {todo}")
        self.cross_contribution_ = method
        if frontier:
            self.n_cooperators_, self.n_rounds_ = 0, None
        elif auto:
            self.n_cooperators_, self.n_rounds_ = min(AUTO_N_COOPERATORS, P - 1), None
        else:
            self.n_cooperators_, self.n_rounds_ = _budget(n, P, R)

    def _exact_regime(self):
        return self.algorithm == "shear" and self.n_cooperators_ == len(self.groups_) - 1

    def _game(self, Xb, positions):
        """The reference game of the rows ``Xb`` (``positions`` among the explained rows,
        for error messages)."""
        if isinstance(self.model_fn_, TorchModelFunction):
            offset = int(np.min(positions)) if len(positions) else 0
            return _TorchReferenceGame(self.model_fn_, Xb, self.reference_,
                                       self.col_to_player_, len(self.groups_),
                                       max_rows=self.max_model_rows, row_offset=offset)
        return ImputationGame(self.model_fn_, Xb, self.reference_, groups=self.groups_,
                              batch_size=self.max_model_rows)

    def _explain_batch(self, rows, Xa, keys, base_seed):
        P, K = len(self.groups_), self.n_cooperators_
        Xb = Xa[rows]
        game = self._game(Xb, np.arange(rows.start, rows.stop))
        n = Xb.shape[0]
        if self.algorithm != "shear":
            if self.n_evals == "auto":
                phi, base, std, dof, paths, budget = self._auto_frontier(
                    game, Xb, rows, None if keys is None else keys[rows], base_seed)
            else:
                est = self._frontier_estimate(game, int(self.n_evals),
                                              None if keys is None else keys[rows], base_seed)
                phi, base, paths = est.values, est.base, est.paths
                std, dof = est.std_and_dof()
                budget = np.full(n, int(self.n_evals), dtype=np.int64)
            return _ShearBatch(phi, base, np.zeros((n, P, 0), dtype=np.intp), None, std,
                               np.zeros(n, dtype=np.int64), dof, paths, budget)
        if self._exact_regime():
            est = estimate_shapley(game, "exact", with_std=False)
            phi, base = est.values, est.base
            coop = np.broadcast_to(
                np.array([np.delete(np.arange(P), i) for i in range(P)], dtype=np.intp
                         ).reshape(P, K), (n, P, K)).copy()
            full = game.value(np.ones((1, P), dtype=bool))[:, 0]
            if self.efficiency != "none":
                phi = _make_efficient(phi, full - base, self.efficiency)[0]
            return _ShearBatch(phi, base, coop)
        keys = keys[rows]
        eta = None
        if self.cross_contribution_ == "random":
            coop = _random_cooperators(P, K, keys, base_seed)
        else:
            grid = None  # the Hessian's entries rank to 16 significant bits
            if self.cross_contribution_ == "hessian":
                eta = _cross_contribution_hessian(
                    partial(self.model_fn_.hessian_columns, float64=False), Xb.astype(np.float64),
                    self.reference_[0].astype(np.float64), self.col_to_player_, P,
                    model_name=self.model_fn_.model_name, row_offset=rows.start)
            else:
                eta, grid = _cross_contribution_finite_difference(game.value, n, P,
                                                                  return_grid=True)
            coop = _top_k_cooperators(eta, K, grid)
        kw = {"antithetic": self.antithetic, "non_cooperators": self.non_cooperators}
        if self.n_evals != "auto":
            phi, base, full, std, dof = _shear_estimate(
                game.value, coop, keys, base_seed, n_rounds=self.n_rounds_, return_std=True,
                **kw)
            rounds = np.full(n, self.n_rounds_, dtype=np.int64)
        else:
            phi, base, full, std, dof, rounds = self._auto_rounds(game, Xb, rows, coop, keys,
                                                                  base_seed, kw)
        if self.efficiency != "none":
            phi, std = _make_efficient(phi, full - base, self.efficiency, std, dof)
        return _ShearBatch(phi, base, coop, eta, std, rounds, dof)

    def _frontier_estimate(self, game, n_evals, keys, base_seed):
        """The frontier's estimate of ``game`` (rows keyed by ``keys``): per-row designs
        from the rows' generators, or (``"frontier_shared"``) the designs shared by the
        rows, drawn from the call's seed."""
        return estimate_shapley(game, self.algorithm, n_evals,
                                **algorithm_draws(self.algorithm, base_seed, keys))

    def _auto_frontier(self, game, Xb, rows, keys, base_seed):
        """``n_evals="auto"`` with the frontier: every row starts at
        :func:`~sklearn_xai.shapley._estimators.auto_start_n_evals` and doubles its budget
        until every standard error is at most ``tol`` times its range of attributions, or
        ``MAX_AUTO_N_EVALS``. Each step recomputes the rows still running from scratch
        (their draws are keyed by the row): a row's result depends only on it and the
        seed, and costs at most twice its final budget. Returns ``(phi, base, std, dof,
        paths, n_evals)``."""
        n = Xb.shape[0]
        budget = np.full(n, auto_start_n_evals("frontier", len(self.groups_)), dtype=np.int64)
        todo = np.ones(n, dtype=bool)
        phi = base = std = dof = None
        paths = np.empty(n, dtype=object)
        while todo.any():
            idx = np.flatnonzero(todo)
            b = int(budget[idx[0]])                    # the rows still running share it
            sub = game if idx.size == n else self._game(Xb[idx], rows.start + idx)
            est = self._frontier_estimate(sub, b, None if keys is None else keys[idx],
                                          base_seed)
            s, d = est.std_and_dof()
            if phi is None:
                phi = np.zeros((n,) + est.values.shape[1:])
                base, std = np.zeros((n,) + est.base.shape[1:]), np.zeros_like(phi)
                dof = np.full_like(phi, np.inf)
            phi[idx], base[idx], std[idx], dof[idx], paths[idx] = (est.values, est.base, s, d,
                                                                   est.paths)
            ok = tol_reached(est.values, s, est.base, est.base + est.values.sum(axis=1),
                             self.tol)
            todo[idx[ok]] = False
            if b >= MAX_AUTO_N_EVALS:
                todo[idx] = False
            else:
                budget[idx[~ok]] = min(2 * b, MAX_AUTO_N_EVALS)
        return phi, base, std, dof, paths, budget

    def _auto_rounds(self, game, Xb, rows, coop, keys, base_seed, kw):
        """Rounds of fresh fills (1, then 16, 32, ... up to ``MAX_AUTO_ROUNDS``) per row
        until every standard error of the row is at most ``tol`` times the row's range of
        attributions. One round stops only rows whose errors are round-off (exact values,
        e.g. no interactions of order three); from 16 rounds on every antithetic pair's
        own variance has 15 degrees of freedom at least. Each step
        recomputes the rows still running with more rounds (the rounds' draws are keyed
        by the row, so the first ones repeat): at most twice the final cost, and a row's
        result depends only on the row and the seed."""
        phi, base, full, std, dof = _shear_estimate(game.value, coop, keys, base_seed,
                                                    return_std=True, **kw)
        rounds = np.ones(len(keys), dtype=np.int64)
        # one round stops only rows whose values are exact (errors at round-off): its
        # pooled standard errors are too rough to stop on
        todo = ~tol_reached(phi, std, base, full, 0.0)
        R = 1
        while todo.any() and R < MAX_AUTO_ROUNDS:
            R = min(max(16, 2 * R), MAX_AUTO_ROUNDS)
            idx = np.flatnonzero(todo)
            sub = self._game(Xb[idx], rows.start + idx) if idx.size < len(keys) else game
            if R * 2 ** (self.n_cooperators_ + 1) >= 2 ** len(self.groups_):
                # this step's n_evals would buy every coalition: enumerate them once
                # (exact values; n_rounds 0, as in the exact regime)
                phi[idx] = estimate_shapley(sub, "exact", with_std=False).values
                std[idx], dof[idx], rounds[idx] = 0.0, np.inf, 0
                break
            p, _, _, s, nu = _shear_estimate(sub.value, coop[idx], keys[idx], base_seed,
                                             n_rounds=R, return_std=True, **kw)
            phi[idx], std[idx], dof[idx], rounds[idx] = p, s, nu, R
            todo[idx] = ~tol_reached(p, s, base[idx], full[idx], self.tol)
        return phi, base, full, std, dof, rounds

    def _explain(self, X):
        Xa = as_array(X)
        if isinstance(self.model_fn_, TorchModelFunction):
            Xa = np.ascontiguousarray(Xa)  # torch.as_tensor rejects negative strides (X[::-1])
        base_seed = draw_base_seed(self.random_state)
        # a row's draws follow its content, not its position (see sklearn_xai._random)
        # the shared designs draw from the seed alone (algorithm_draws): no row keys
        keys = (None if self._exact_regime() or self.algorithm == "frontier_shared"
                else row_keys(Xa))
        parts = self._map_batches(self._explain_batch, Xa.shape[0], Xa, keys, base_seed)
        res = _ShearBatch.concatenate(parts)
        phi, base, coop, eta, std, dof = res.phi, res.base, res.coop, res.eta, res.std, res.dof
        K = self.n_cooperators_
        if self.algorithm != "shear":
            rounds, n_evals = res.rounds, res.n_evals
            coop = None
            if self.n_evals == "auto":
                capped = int(np.sum((n_evals >= MAX_AUTO_N_EVALS) & ~tol_reached(
                    phi, std, base, base + phi.sum(axis=1), self.tol)))
                if capped:  # once per fitted explainer (score explains again)
                    self._warn_once(
                        f"ShearExplainer(algorithm={self.algorithm!r}, n_evals='auto') stopped "
                        f"{capped} row(s) at the cap of MAX_AUTO_N_EVALS = "
                        f"{MAX_AUTO_N_EVALS}; their standard errors may exceed tol="
                        f"{self.tol} times their range of attributions. Pass a larger tol.",
                        ConvergenceWarning, key="n_evals='auto' cap", stacklevel=3)
        elif res.rounds is None:  # exact: 2^P coalitions per row
            rounds = np.zeros(Xa.shape[0], dtype=np.int64)
            n_evals = np.full(Xa.shape[0], 2 ** len(self.groups_), dtype=np.int64)
        else:  # rows that "auto" enumerated have 0 rounds and 2^P coalitions
            rounds = res.rounds
            n_evals = np.where(rounds == 0, 2 ** len(self.groups_), rounds * 2 ** (K + 1))
        if self.n_evals == "auto" and self.algorithm == "shear" and res.rounds is not None:
            capped = int(np.sum(rounds >= MAX_AUTO_ROUNDS))
            if capped:  # once per fitted explainer (score explains again)
                self._warn_once(
                    f"ShearExplainer(n_evals='auto') stopped {capped} row(s) at the cap of "
                    f"MAX_AUTO_ROUNDS = {MAX_AUTO_ROUNDS} rounds (n_evals = "
                    f"{MAX_AUTO_ROUNDS * 2 ** (K + 1)}); their standard errors may exceed "
                    f"tol={self.tol} times their range of attributions. Pass a larger tol.",
                    ConvergenceWarning, key="n_evals='auto' cap", stacklevel=3)
        return Attribution(
            values=phi, base_values=base, data=Xa, feature_names=list(self.player_names_),
            output_names=list(self.output_names_),
            extras={"cooperators": coop, "cross_contribution": eta,
                    "n_cooperators": self.n_cooperators_,
                    "cross_contribution_method": self.cross_contribution_,
                    "n_evals": n_evals, "n_rounds": rounds,
                    "algorithm": self.algorithm,
                    **({"paths": res.paths} if res.paths is not None else {})},
            std=std, std_dof=dof)

    def explain(self, X: ArrayLike | pd.DataFrame) -> Attribution:
        """SHEAR attributions of the rows of ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The rows to explain, with the columns given to ``fit``.

        Returns
        -------
        Attribution
            ``values`` (n_samples, n_players) for one output, else
            (n_samples, n_players, n_outputs); ``base_values`` ``f(r)``; ``extras`` with
            ``"cooperators"`` (n_samples, n_players, K) and ``"cross_contribution"``.
        """
        check_is_fitted(self)
        return super().explain(X)
