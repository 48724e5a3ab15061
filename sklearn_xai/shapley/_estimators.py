"""Shapley value estimators on a game: exact enumeration, permutation sampling, KernelSHAP.

Each estimator only chooses coalitions and weights and calls ``game.value``; it works on any
:class:`~sklearn_xai.shapley.Game`. :data:`ALGORITHMS` is the one table of them, by name;
every explainer that lets the user pick one (``algorithm=``) looks it up there.

One budget unit, ``n_evals``, shared with SHEAR: coalition evaluations **per player and
row**. A sampling estimator evaluates at most ``n_evals * n_players`` coalitions per row
besides the empty and the full one (evaluated once per row), so ``n_evals * n_players + 2``
in all; one coalition evaluation costs ``n_imputations`` model rows in an
:class:`~sklearn_xai.shapley.ImputationGame`.

Standard errors. Called with ``return_units=True`` an estimator also returns its
*independent units*, ``(n_rows, n_units, n_players, n_outputs)`` estimates whose spread
gives the standard error of the estimate (:func:`unit_std`): the antithetic pairs of
permutations (one unit per pair), or the jackknife pseudo-values of KernelSHAP over
groups of complementary pairs; ``None`` when the estimate is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from math import ceil, comb, factorial
from typing import TYPE_CHECKING

import numpy as np

from .._stats import pow2_scale, t_widened
from .._utils import keyed_generators

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from sklearn_xai.shapley._game import Game

__all__ = ["exact_shapley", "permutation_shapley", "kernel_shapley", "frontier_shapley",
           "frontier_shared_shapley",
           "estimate_shapley", "ShapleyEstimate", "all_masks",
           "ALGORITHMS", "default_n_evals", "unit_std", "crossed_std", "MAX_EXACT_PLAYERS"]

# jackknife groups of KernelSHAP's complementary pairs (at most)
MAX_JACKKNIFE_GROUPS = 64


def unit_std(units, axis=1):
    """Standard error of the mean of independent units: ``sd(units) / sqrt(n_units)``.

    Parameters
    ----------
    units : ndarray
        Unit estimates along ``axis``.
    axis : int, default=1
        The axis of the units.

    Returns
    -------
    ndarray
        The standard errors, of the shape of ``units`` without ``axis``; NaN where there
        are fewer than two units.
    """
    units = np.asarray(units, dtype=np.float64)
    U = units.shape[axis]
    if U < 2:
        return np.full(np.delete(units.shape, axis), np.nan)
    # deviations from the first unit: the same spread, and exactly 0 for equal units (an
    # exact value), where the mean's round-off would leave about 1e-18
    shifted = units - np.take(units, [0], axis=axis)
    # squared in a power-of-two scale: exact, and no overflow from |units| ~ 1e154 on
    c = pow2_scale(shifted, axis=axis)
    return (shifted / c).std(axis=axis, ddof=1) * np.squeeze(c, axis) / np.sqrt(U)


def _root_sum_squares(a, axis):
    """``sqrt(sum(a**2, axis))`` taken in a power-of-two scale (:func:`pow2_scale`, exact):
    the squares of entries far from 1 (about 1e154 and beyond, or tiny) would overflow or
    underflow."""
    c = pow2_scale(a, axis=axis)
    return np.sqrt(((a / c) ** 2).sum(axis=axis)) * np.squeeze(c, axis)


# values beyond 2**+-60 are fitted in a power-of-two scale (_far_scale)
FAR_BOUND = 2.0**60


def _far_scale(*arrays, bound=FAR_BOUND):
    """1 when the largest ``|value|`` of ``arrays`` lies within ``[1 / bound, bound]``,
    else :func:`pow2_scale` of them all: the scale in which a row's values far from 1
    are fitted (exactly), so that their squares neither overflow nor underflow."""
    values = np.concatenate([np.ravel(a) for a in arrays])
    top = float(np.abs(values).max(initial=0.0))
    if 1.0 / bound <= top <= bound or top == 0.0:
        return 1.0                                      # the common case, checked cheaply
    return float(pow2_scale(values))


def crossed_std(units, return_dof=False):
    """Standard error of the grand mean of a crossed design of two independent sources.

    ``units[:, u, k]`` is the estimate from algorithm unit ``u`` (e.g. an antithetic pair
    of permutations) and imputation draw ``k`` (e.g. one knockoff), every unit crossed with
    every draw. With the two-way random-effects decomposition, the variance of the grand
    mean is ``(MS_u + MS_k - MS_e) / (U K)``, bounded below by each one-way term (each is
    at most the true variance in expectation). One source alone is :func:`unit_std`.

    Parameters
    ----------
    units : ndarray of shape (n_rows, U, K, ...)
        Estimates of every (unit, draw) cell.
    return_dof : bool, default=False
        Also return the degrees of freedom of the standard errors: Satterthwaite's for the
        two-way combination (at least ``min(U, K) - 1``), ``U - 1`` or ``K - 1`` where a
        one-way term is taken.

    Returns
    -------
    std : ndarray of shape (n_rows, ...)
        The standard errors (not widened); NaN with a single unit and a single draw.
    dof : ndarray of shape (n_rows, ...)
        Only with ``return_dof=True``; ``inf`` where the standard error is 0.
    """
    units = np.asarray(units, dtype=np.float64)
    U, K = units.shape[1], units.shape[2]
    if U == 1 or K == 1:
        std = unit_std(units[:, 0] if U == 1 else units[:, :, 0], axis=1)
        dof = np.where(std > 0, float(max(U, K) - 1), np.inf)
        return (std, dof) if return_dof else std
    by_unit, by_draw = units.mean(axis=2), units.mean(axis=1)
    va = by_unit.var(axis=1, ddof=1) / U
    vb = by_draw.var(axis=1, ddof=1) / K
    grand = by_unit.mean(axis=1)
    resid = units - by_unit[:, :, None] - by_draw[:, None, :] + grand[:, None, None]
    ve = (resid**2).sum(axis=(1, 2)) / ((U - 1) * (K - 1)) / (U * K)
    two_way = va + vb - ve
    std = np.sqrt(np.maximum(two_way, np.maximum(va, vb)))
    if not return_dof:
        return std
    # in a power-of-two scale (exact): the squares of variances far from 1 over/underflow
    a, b, e = np.stack([va, vb, ve]) / pow2_scale(np.stack([va, vb, ve]), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = (a + b - e) ** 2 / (a**2 / (U - 1) + b**2 / (K - 1) + e**2 / ((U - 1) * (K - 1)))
    # at least the smaller one-way term's: with the negative term, Satterthwaite's formula
    # can fall below both (0.3 with two units and two draws, a 1,300x wider interval)
    dof = np.where(two_way >= np.maximum(va, vb), np.maximum(sat, float(min(U, K) - 1)),
                   np.where(va >= vb, float(U - 1), float(K - 1)))
    return std, np.where(std > 0, dof, np.inf)

MAX_EXACT_PLAYERS = 20


def all_masks(n_players):
    """Every coalition as a boolean mask; row ``c`` is the binary expansion of ``c``.

    Parameters
    ----------
    n_players : int
        Number of players.

    Returns
    -------
    ndarray of bool, shape (2**n_players, n_players)
        ``masks[c, p]`` is bit ``p`` of ``c``.
    """
    codes = np.arange(2**n_players, dtype=np.int64)
    return ((codes[:, None] >> np.arange(n_players)) & 1).astype(bool)


def _read_only(*arrays):
    """The arrays, made read-only (they are cached and shared)."""
    for a in arrays:
        a.setflags(write=False)
    return arrays


@lru_cache(maxsize=64)
def _pair_strata(Pa):
    """Pair strata k = 1..Pa//2: number of complementary pairs and kernel weight per pair.

    A pair {S, complement} with ``min(|S|, Pa - |S|) = k``; the Shapley kernel weight of a
    coalition of size ``s`` is ``(Pa - 1) / (C(Pa, s) s (Pa - s))``, the same for both
    members of a pair, so a pair weighs twice that in the odd-part regression.
    """
    ks = np.arange(1, Pa // 2 + 1)
    # Python integers throughout: C(Pa, k) k (Pa - k) passes 2**63 from Pa = 61 on
    m = np.array([comb(Pa, k) // (2 if 2 * k == Pa else 1) for k in range(1, Pa // 2 + 1)],
                 dtype=np.float64)
    w = np.array([2.0 * (Pa - 1) / (comb(Pa, k) * k * (Pa - k)) for k in range(1, Pa // 2 + 1)])
    return _read_only(ks, m, w)


@lru_cache(maxsize=256)
def _stratum_masks(Pa, k, middle):
    """Every pair of stratum k as the mask of one member (the one holding player 0 in
    the middle stratum), read-only."""
    reps = [c for c in combinations(range(Pa), k) if not middle or c[0] == 0]
    out = np.zeros((len(reps), Pa), dtype=bool)
    out[np.repeat(np.arange(len(reps)), k), np.array(reps, dtype=np.intp).ravel()] = True
    return _read_only(out)[0]


def shapley_weights(n_players):
    """w[s] = s! (P - s - 1)! / P! for s = 0..P-1."""
    P = n_players
    return np.array([factorial(s) * factorial(P - s - 1) / factorial(P) for s in range(P)])


def exact_shapley(game: Game, n_evals: int | None = None,
                  generators: Sequence[np.random.Generator] | None = None, *,
                  return_units: bool = False) -> tuple[np.ndarray | None, ...]:
    """Exact Shapley values by evaluating all ``2**P`` coalitions once.

    Every coalition value is shared by all players:
    ``phi_i = sum_S w(|S|) (v(S + i) - v(S))``.

    Parameters
    ----------
    game : Game
        The game to explain, with ``n_players <= 20`` (``MAX_EXACT_PLAYERS``).
    n_evals, generators : ignored
        Accepted so that every entry of :data:`ALGORITHMS` is called the same way.
    return_units : bool, default=False
        Also return ``None`` (an exact estimate has no sampling units).

    Returns
    -------
    phi : ndarray of shape (n_rows, n_players, n_outputs)
        The Shapley values of each row's game.
    base : ndarray of shape (n_rows, n_outputs)
        ``v(empty)``.
    units : None
        Only with ``return_units=True``.

    Notes
    -----
    Cost: ``2**P`` coalition evaluations per row.
    """
    P = game.n_players
    if P > MAX_EXACT_PLAYERS:
        raise ValueError(
            f"Exact enumeration needs 2**{P} coalitions; it is limited to "
            f"{MAX_EXACT_PLAYERS} players. Use a sampling estimator or feature groups.")
    masks = all_masks(P)
    v = game.value(masks)                                   # (n, 2^P, O)
    sizes = masks.sum(axis=1)
    w = np.append(shapley_weights(P), 0.0)                 # w[P] unused (no S with i absent)
    phi = np.empty((v.shape[0], P, v.shape[2]))
    for i in range(P):
        has_i = masks[:, i]
        coef = np.where(has_i, w[np.maximum(sizes - 1, 0)], -w[sizes])
        phi[:, i, :] = np.einsum("c,nco->no", coef, v)
    if return_units:
        return phi, v[:, 0, :].copy(), None
    return phi, v[:, 0, :].copy()


def _check_generators(generators, n_rows):
    expected = (f"generators must be a list of numpy.random.Generator, one per explained "
                f"row ({n_rows})")
    if generators is None:
        raise ValueError(f"Pass one random generator per explained row: {expected}; got "
                         f"None.")
    if isinstance(generators, (np.random.Generator, str, bytes)) or not hasattr(
            generators, "__len__"):
        raise TypeError(f"{expected}; got {type(generators).__name__}.")
    bad = [type(g).__name__ for g in generators if not isinstance(g, np.random.Generator)]
    if bad:
        raise TypeError(f"{expected}; got a list holding {bad[0]}.")
    if len(generators) != n_rows:
        raise ValueError(f"Pass one random generator per explained row: {expected}; got a "
                         f"list of {len(generators)}.")


def _check_n_evals(n_evals):
    if isinstance(n_evals, np.ndarray) and n_evals.ndim == 0:
        n_evals = n_evals.item()
    number = isinstance(n_evals, (int, np.integer)) or (
        isinstance(n_evals, (float, np.floating)) and np.isfinite(n_evals))
    if (isinstance(n_evals, (bool, np.bool_)) or not number or int(n_evals) != n_evals
            or n_evals < 2):
        raise ValueError(f"n_evals (coalition evaluations per player and row) must be an "
                         f"integer >= 2; got {n_evals!r}.")
    return int(n_evals)


def permutation_shapley(game: Game, n_evals: int, generators: Sequence[np.random.Generator],
                        antithetic: bool = True, *,
                        return_units: bool = False) -> tuple[np.ndarray | None, ...]:
    """Permutation sampling with a cached prefix walk, optionally antithetic.

    Each permutation walks its prefixes ``{}, {p1}, {p1, p2}, ..., all``; the empty and full
    coalitions are evaluated once per row and shared, so a permutation costs ``P - 1``
    coalition evaluations. With ``antithetic=True`` every permutation is paired with its
    reverse, which makes the estimate exact for games with at most pairwise interactions.

    Parameters
    ----------
    game : Game
        The game to explain: ``game.value`` gives each row's coalition values.
    n_evals : int >= 2
        Coalition evaluations per player and row:
        ``n_permutations = n_evals * P // (P - 1)`` (rounded down to an even number when
        antithetic), so at most ``n_evals * P`` coalitions besides the empty and the full
        one. ``n_evals >= 2`` always affords one antithetic pair.
    generators : list of numpy.random.Generator
        One random generator per row of the game; row ``r``'s permutations are drawn
        from ``generators[r]`` only.
    antithetic : bool, default=True
        Pair every permutation with its reverse.
    return_units : bool, default=False
        Also return the independent units: the mean marginal contributions of each
        antithetic pair of permutations (of each permutation without pairing).

    Returns
    -------
    phi : ndarray of shape (n_rows, n_players, n_outputs)
        The estimated Shapley values of each row's game.
    base : ndarray of shape (n_rows, n_outputs)
        ``v(empty)``.
    units : ndarray of shape (n_rows, n_units, n_players, n_outputs) or None
        Only with ``return_units=True``; ``phi`` is their mean. ``None`` for one player
        (exact).
    """
    P, n = game.n_players, game.n_rows
    n_evals = _check_n_evals(n_evals)
    _check_generators(generators, n)
    ends = game.value(np.array([np.zeros(P, bool), np.ones(P, bool)]))  # (n, 2, O)
    if P == 1:
        phi = (ends[:, 1] - ends[:, 0])[:, None, :]
        return (phi, ends[:, 0].copy(), None) if return_units else (phi, ends[:, 0].copy())
    n_perm = n_evals * P // (P - 1)
    if antithetic:
        n_perm -= n_perm % 2
    perms = np.empty((n, n_perm, P), dtype=np.intp)
    for r, rng in enumerate(generators):
        if antithetic:
            half = np.array([rng.permutation(P) for _ in range(n_perm // 2)])
            perms[r, 0::2] = half
            perms[r, 1::2] = half[:, ::-1]
        else:
            perms[r] = np.array([rng.permutation(P) for _ in range(n_perm)])
    pos = np.argsort(perms, axis=2)                                   # position of each player
    t = np.arange(1, P)
    masks = pos[:, :, None, :] < t[None, None, :, None]               # (n, T, P-1, P)
    O = ends.shape[-1]
    inner = game.value(masks.reshape(n, n_perm * (P - 1), P)).reshape(n, n_perm, P - 1, O)
    V = np.empty((n, n_perm, P + 1, O))
    V[:, :, 0] = ends[:, None, 0]
    V[:, :, P] = ends[:, None, 1]
    V[:, :, 1:P] = inner
    after = np.take_along_axis(V, (pos + 1)[..., None], axis=2)       # v(prefix with i)
    before = np.take_along_axis(V, pos[..., None], axis=2)            # v(prefix before i)
    contrib = after - before                                          # (n, T, P, O)
    phi = contrib.mean(axis=1)
    if not return_units:
        return phi, ends[:, 0].copy()
    units = contrib.reshape(n, n_perm // 2, 2, P, O).mean(axis=2) if antithetic else contrib
    return phi, ends[:, 0].copy(), units


@lru_cache(maxsize=64)
def _kernel_size_mass(P):
    """Coalition sizes ``s = 1..P-1`` and the Shapley kernel's mass of each size over all
    its subsets, ``(P - 1) / (s (P - s))`` (read-only, cached)."""
    s = np.arange(1, P)
    return _read_only(s, (P - 1) / (s * (P - s)))


@lru_cache(maxsize=64)
def _kernel_size_probs(P):
    """The sizes and their probabilities under the Shapley kernel (read-only, cached)."""
    s, w = _kernel_size_mass(P)
    return _read_only(s, w / w.sum())


def kernel_shapley(game: Game, n_evals: int, generators: Sequence[np.random.Generator], *,
                   return_units: bool = False) -> tuple[np.ndarray | None, ...]:
    """KernelSHAP: paired coalition sampling and least squares with exact efficiency.

    Coalition sizes are drawn from the Shapley kernel distribution ``p(s) ~ (P-1)/(s(P-s))``
    and every sampled coalition is paired with its complement. The weighted least-squares
    problem is solved with the efficiency constraint ``sum(phi) = v(all) - v(empty)``
    imposed exactly (by eliminating one variable). Players that cannot change a row's value
    (for an :class:`ImputationGame`, ``x`` equals every imputation row on their columns) get
    exactly 0 and coalitions are drawn over the other players. When the budget covers every
    non-trivial coalition of a row's active players (``2 * (n_evals * P // 2) >= 2**Pa -
    2``; of all players: ``n_evals * P >= 2**P - 2``) all of them are used with their
    exact kernel weights, which gives the exact Shapley values, and the row spends only
    those. Otherwise the paired size strata ``{s, Pa - s}`` from ``s = 1`` on are
    enumerated while the draws would be expected to cover them (shap's KernelExplainer's
    rule) and at least ``G`` pairs (the jackknife's groups, below) are left to draw; the
    drawn pairs take the other sizes, the enumerated coalitions weigh their kernel weight
    on the drawn ones' scale. With ``G`` pairs reserved nothing is enumerated below 65
    pairs per row (``n_evals * P <= 129``); measured on dense 12- and 16-player games at
    ``n_evals`` 16-64: 0.59-0.85x the error of drawing every pair.

    Parameters
    ----------
    game : Game
        The game to explain: ``game.value`` gives each row's coalition values.
    n_evals : int >= 2
        Coalition evaluations per player and row: ``n_evals * P`` sampled coalitions
        (rounded down to an even number: they come in complementary pairs) besides the
        empty and the full one.
    generators : list of numpy.random.Generator
        One random generator per row of the game; row ``r``'s coalitions are drawn
        from ``generators[r]`` only.
    return_units : bool, default=False
        Also return the jackknife pseudo-values over ``G = min(n_pairs, 64)`` groups of
        the drawn complementary pairs (drawn pair ``k`` in group ``k mod G``; the
        enumerated coalitions in every fit): ``G phi - (G - 1) phi_(-g)``, with
        ``phi_(-g)`` the constrained fit without group ``g``; the spread of the
        pseudo-values gives the jackknife standard error (0 for a row computed exactly:
        its units are copies of ``phi``). Players the drawn pairs leave undetermined
        (a design of lower rank than the row's active players, common at ``n_evals=2``:
        a complementary pair spans one direction) have NaN units, so no standard error:
        their values are least squares' minimum-norm choice.

    Returns
    -------
    phi : ndarray of shape (n_rows, n_players, n_outputs)
        The estimated Shapley values of each row's game; efficiency,
        ``phi.sum(axis=1) == v(all) - v(empty)``, holds up to round-off.
    base : ndarray of shape (n_rows, n_outputs)
        ``v(empty)``.
    units : ndarray of shape (n_rows, G, n_players, n_outputs) or None
        Only with ``return_units=True``; ``None`` when the budget enumerates every
        coalition of every row (exact).
    """
    P, n = game.n_players, game.n_rows
    n_evals = _check_n_evals(n_evals)
    _check_generators(generators, n)
    ends = game.value(np.array([np.zeros(P, bool), np.ones(P, bool)]))
    v0, v1 = ends[:, 0], ends[:, 1]
    if P == 1:
        phi = (v1 - v0)[:, None, :]
        return (phi, v0.copy(), None) if return_units else (phi, v0.copy())
    n_sample = n_evals * P
    # Players that cannot change a row's value (x equals every imputation row there) are
    # dummies with phi = 0 exactly; coalitions are drawn (or enumerated) over the others.
    active = game.active_players() if hasattr(game, "active_players") else np.ones(
        (n, P), dtype=bool)
    n_pairs = n_sample // 2
    # the jackknife's groups of sampled pairs: a number set by the budget alone, so that
    # every row has as many units (the enumerated strata leave at least G pairs)
    G = max(1, min(n_pairs, MAX_JACKKNIFE_GROUPS))
    plans = [_kernel_row_plan(np.flatnonzero(active[r]), P, n_pairs, G, rng)
             for r, rng in enumerate(generators)]
    vals = game.value_each([m for m, _, _ in plans])
    phi = np.zeros((n, P, v0.shape[-1]))
    units = np.zeros((n, G) + phi.shape[1:]) if return_units else None
    for r, (m, w, grp) in enumerate(plans):
        exact_row = not np.any(grp >= 0)
        fit, u = _constrained_wls(m[None], vals[r][None], w[None], v0[r:r + 1],
                                  v1[r:r + 1], active[r:r + 1],
                                  grp if return_units and not exact_row else None)
        phi[r] = fit[0]
        if return_units:
            units[r] = fit[0][None] if exact_row else u[0]
    if return_units and not any(np.any(g >= 0) for _, _, g in plans):
        units = None                                             # every row exact
    return (phi, v0.copy(), units) if return_units else (phi, v0.copy())


@lru_cache(maxsize=32)
def _kernel_exact_design(Pa):
    """Every non-trivial coalition of ``Pa`` players (``2**Pa - 2``, Pa) and its kernel
    weight, read-only (the rows with as many active players share them)."""
    sub = all_masks(Pa)[1:-1]
    sizes = sub.sum(axis=1)
    return _read_only(sub, (Pa - 1) / (comb_array(Pa, sizes) * sizes * (Pa - sizes)))


def _kernel_row_plan(players, P, n_pairs, G, rng):
    """One row's KernelSHAP design over its active ``players``: ``(masks (C, P), weights
    (C,), groups (C,))``.

    When every coalition of the active players fits in ``2 n_pairs`` (``2**Pa - 2``), all
    of them with their exact kernel weights (the exact values; group -1, ``C < 2
    n_pairs`` possibly). Otherwise the paired size strata ``{s, Pa - s}`` from the
    smallest on are enumerated while the draws would be expected to cover them (as
    shap's KernelExplainer does) and at least ``G`` pairs are left to draw; the rest are
    complementary pairs, sizes drawn by the kernel's mass among the other strata, weight
    1 each (the enumerated coalitions weighted by their kernel weight on that scale),
    pair ``k`` in jackknife group ``k mod G`` (the enumerated ones in none, -1). Without
    an enumerated stratum the draws are those of the sampler before enumeration existed.
    """
    Pa = players.size
    C = 2 * n_pairs
    if Pa < 2:                   # phi is v(all) - v(empty) or nothing: no coalition needed
        return np.zeros((0, P), dtype=bool), np.ones(0), np.full(0, -1)
    if 2**Pa - 2 <= C:
        sub, weights = _kernel_exact_design(Pa)
        masks = np.zeros((sub.shape[0], P), dtype=bool)
        masks[:, players] = sub
        return masks, weights, np.full(sub.shape[0], -1)
    sizes_support, probs = _kernel_size_probs(Pa)
    mass = _kernel_size_mass(Pa)[1]                              # of each size, all subsets
    _, n_stratum, w_pair = _pair_strata(Pa)
    left, m_left, enumerated = n_pairs, mass.sum(), []
    for s in range(1, Pa // 2 + 1):
        paired = mass[s - 1] + (mass[Pa - s - 1] if 2 * s != Pa else 0.0)
        pairs = int(n_stratum[s - 1])
        if pairs > left - G or left * paired / m_left < pairs:
            break
        enumerated.append(s)
        left -= pairs
        m_left -= paired
    if enumerated:
        keep = ~np.isin(np.minimum(sizes_support, Pa - sizes_support), enumerated)
        draw_sizes, draw_probs = sizes_support[keep], probs[keep] / probs[keep].sum()
    else:
        draw_sizes, draw_probs = sizes_support, probs
    done = 0
    masks = np.zeros((C, P), dtype=bool)
    weights = np.ones(C)
    groups = np.full(C, -1)
    for s in enumerated:
        # each pair once, as the member holding player 0 in the middle stratum
        reps = _stratum_masks(Pa, s, 2 * s == Pa)
        k = reps.shape[0]
        block = np.zeros((k, P), dtype=bool)
        block[:, players] = reps
        masks[done:done + 2 * k:2] = block
        masks[done + 1:done + 2 * k:2] = ~block
        # kernel weight per coalition (half a pair's), on the scale where a drawn one
        # weighs 1
        weights[done:done + 2 * k] = w_pair[s - 1] / 2 * (2 * left / m_left)
        done += 2 * k
    for k, s in enumerate(rng.choice(draw_sizes, size=left, p=draw_probs)):
        masks[done + 2 * k, rng.choice(players, size=s, replace=False)] = True
    masks[done + 1::2] = ~masks[done::2]
    groups[done:] = (np.arange(C - done) // 2) % G
    return masks, weights, groups


def comb_array(P, sizes):
    return np.array([comb(P, int(s)) for s in sizes], dtype=np.float64)


def _constrained_wls(masks, vals, weights, v0, v1, active=None, groups=None):
    """Solve min sum_c w_c (v_c - v0 - z_c.phi)^2 subject to sum(phi) = v1 - v0, per row.

    Players outside ``active`` (n, P) get phi = 0 and are left out of the regression.
    With ``groups`` (the jackknife group of each coalition, shape (C,)), also return the
    jackknife pseudo-values (n, G, P, O) of deleting one group at a time (from the normal
    equations less the group's share); else ``None``.
    """
    n, _, P = masks.shape
    O = vals.shape[-1]
    phi = np.zeros((n, P, O))
    G = 0 if groups is None else int(groups.max()) + 1
    units = None if groups is None else np.zeros((n, G, P, O))
    for r in range(n):
        cols = np.arange(P) if active is None else np.flatnonzero(active[r])
        delta = v1[r] - v0[r]                                 # (O,)
        if cols.size == 0:
            continue
        if cols.size == 1:
            phi[r, cols[0]] = delta
            if units is not None:
                units[r, :, cols[0]] = delta
            continue
        # values far from 1 in a power-of-two scale (exact): their products underflow or
        # overflow in the normal equations
        c = _far_scale(vals[r], v0[r], v1[r])
        delta = delta / c
        Z = masks[r][:, cols].astype(np.float64)
        y = (vals[r] - v0[r]) / c                             # (C, O)
        A = Z[:, :-1] - Z[:, -1:]                             # eliminate the last player
        b = y - Z[:, -1:] * delta[None, :]
        sw = np.sqrt(weights[r])[:, None]
        Aw, bw = A * sw, b * sw
        sol, _, rank, _ = np.linalg.lstsq(Aw, bw, rcond=None)
        phi[r, cols[:-1]] = sol * c
        phi[r, cols[-1]] = (delta - sol.sum(axis=0)) * c
        if units is None:
            continue
        # each group's share of the normal equations (one product per group: an einsum
        # over all groups at once loops in C over G C P^2 terms, 19 s at 300 players)
        M_out = np.empty((G, Aw.shape[1], Aw.shape[1]))
        rhs_out = np.empty((G, Aw.shape[1], O))
        for g in range(G):
            in_g = groups == g
            Ag = Aw[in_g]
            M_out[g], rhs_out[g] = Ag.T @ Ag, Ag.T @ bw[in_g]
        # the fit without group g, from the normal equations less the group's share (a
        # pseudo-inverse: a group may leave too few coalitions to pin every player)
        leave = np.linalg.pinv((Aw.T @ Aw)[None] - M_out) @ ((Aw.T @ bw)[None] - rhs_out)
        pseudo = G * sol[None] - (G - 1) * leave                     # (G, p, O)
        units[r][:, cols[:-1]] = pseudo * c
        units[r][:, cols[-1]] = (delta[None, :] - pseudo.sum(axis=1)) * c
        if rank < Aw.shape[1]:
            # the drawn coalitions leave these players' values undetermined (lstsq's
            # minimum norm picks one, and every pseudo-value agrees with it): no error
            # estimate, rather than a standard error of 0
            units[r][:, cols[_undetermined(Aw, rank)]] = np.nan
    return phi, units


def _undetermined(Aw, rank):
    """Which of the ``p + 1`` players of a reduced design ``Aw`` (C, p) of numerical
    ``rank`` (the last player eliminated by efficiency) the null space of ``Aw`` moves;
    returns a boolean array of length ``p + 1``."""
    null = np.linalg.svd(Aw, full_matrices=True)[2][rank:]             # (p - rank, p)
    tol = 1e-8 * max(1.0, np.abs(null).max())
    return np.append(np.any(np.abs(null) > tol, axis=0),
                     np.any(np.abs(null.sum(axis=1)) > tol))


# The one table of Shapley algorithms: name -> ``fn(game, n_evals, generators) -> (phi, base)``
# with ``n_evals`` in coalition evaluations per player and row (ignored by "exact") and one
# random generator per row (``None`` for "exact"); ``fn(..., return_units=True)`` also
# returns the independent units of the estimate (``None`` when exact). SHEAR is its own
# algorithm (it chooses cooperators before coalitions) and is not an entry.
#: The Shapley algorithms by name ("exact", "permutation", "kernel", "frontier",
#: "frontier_shared"), each called as ``fn(game, n_evals, generators)`` with ``n_evals`` in
#: coalition evaluations per player and row ("frontier_shared" takes ``design_seed``
#: instead of ``generators``).
ALGORITHMS = {
    "exact": exact_shapley,
    "permutation": permutation_shapley,
    "kernel": kernel_shapley,
}

# the frontier estimator builds on the helpers above (imported last: no cycle at import)
from ._frontier import _frontier_estimate, frontier_shapley  # noqa: E402

ALGORITHMS["frontier"] = frontier_shapley


def frontier_shared_shapley(game: Game, n_evals: int, generators: None = None, *,
                            design_seed: int, **kw: Any) -> tuple[np.ndarray | None, ...]:
    """:func:`~sklearn_xai.shapley.frontier_shapley` with shared designs.

    Every row with as many active players (and the same budget) takes the same design of
    complementary pairs, drawn from ``design_seed`` and that number alone, and the fit has
    a flat order-3 prior without ARD: each estimate (and the linear parts of its standard
    error) is a fixed matrix applied to the row's coalition values, computed once per
    design and cached. A row's values depend only on the row and ``design_seed``. Cheaper
    than the frontier by the per-row fits (on the SHEAR benchmark's Adult MLP, 0.8-1.4x
    the bare forward passes at ``n_evals`` 32-8 once cached, against 7-20x), at 1.0-2.3x
    its error on the benchmark games (``doc/benchmarks.md``; 2.7x on a game of 32
    players at ``n_evals=64``, where the frontier's ARD pays). A mean game's components
    with as many active players and pairs in one row draw from distinct streams, so
    their errors stay independent.

    Parameters
    ----------
    game : Game
        The game to explain.
    n_evals : int >= 2
        Coalition evaluations per player and row.
    generators : None
        Must be None (the designs come from ``design_seed``); in the signature so that
        every entry of :data:`ALGORITHMS` is called the same way.
    design_seed : int >= 0
        The seed of the shared designs.
    **kw
        As :func:`~sklearn_xai.shapley.frontier_shapley` (``return_units``, ``paths``,
        ``dof``, its knobs).

    Returns
    -------
    tuple
        As :func:`~sklearn_xai.shapley.frontier_shapley`.
    """
    _check_no_generators(generators)
    return frontier_shapley(game, n_evals, None, design_seed=design_seed, **kw)


def _check_no_generators(generators):
    if generators is not None:
        raise ValueError("frontier_shared draws its designs from design_seed, not from per-row "
                         "generators: pass generators=None.")


ALGORITHMS["frontier_shared"] = frontier_shared_shapley


def algorithm_draws(algorithm: str, base_seed: int,
                    keys: np.ndarray | None = None) -> dict[str, Any]:
    """What ``algorithm`` of :data:`ALGORITHMS` draws from, as keyword arguments of
    :func:`estimate_shapley`: one generator per row, keyed by the rows' ``keys`` and the
    call's ``base_seed`` (a row's draws follow its content), the shared designs'
    ``design_seed`` (``"frontier_shared"``: the seed alone, no row keys), or nothing
    (``"exact"``). The one place an explainer learns how an algorithm is seeded."""
    if algorithm == "exact":
        return {"generators": None}
    if algorithm == "frontier_shared":
        return {"generators": None, "design_seed": base_seed}
    return {"generators": keyed_generators(base_seed, keys)}


@dataclass(frozen=True)
class ShapleyEstimate:
    """What :func:`estimate_shapley` returns for a game's rows.

    Parameters
    ----------
    values : ndarray of shape (n_rows, n_players, n_outputs)
        The Shapley values (they add up to ``v(all) - v(empty)`` for every algorithm).
    base : ndarray of shape (n_rows, n_outputs)
        ``v(empty)``.
    std : ndarray of shape (n_rows, n_players, n_outputs) or None
        Standard errors from the algorithm's independent units (0 where a value is exact,
        NaN where the algorithm has no estimate of its error), **Student-t widened**: each
        is multiplied by ``t(0.975, dof) / z(0.975)``, so that ``values +- 1.96 std`` is a
        95 % Student-t interval; ``None`` when every value is exact or
        ``with_std=False``.
    n_evaluations : int
        Coalition evaluations spent, summed over rows (the budget unit: at most
        ``n_rows * (n_evals * n_players + 2)`` for the sampling algorithms).
    paths : ndarray of str, shape (n_rows,), or None
        How each row was computed (the frontier's algorithms only; see
        :func:`~sklearn_xai.shapley.frontier_shapley`).
    units : ndarray of shape (n_rows, n_units, n_players, n_outputs) or None
        The independent units ``std`` comes from (permutation, kernel), for callers that
        combine them with another source of error (KnockoffSHAP crosses them with the
        knockoff draws); their spread (:func:`unit_std`) is the unwidened standard error.
        ``None`` for the frontier's algorithms, whose standard errors come from a
        cross-fit, not from units.
    dof : ndarray of shape (n_rows, n_players, n_outputs) or None
        The degrees of freedom of ``std`` (``None`` with ``std``): ``n_units - 1`` for the
        permutation and kernel units (antithetic pairs, jackknife groups), the
        frontier's Welch-Satterthwaite degrees of freedom of its sampled strata; ``inf``
        where the interval is normal or the standard error 0. A caller that combines
        several estimates divides ``t(0.975, dof) / z(0.975)`` out first and widens the
        combination once (KnockoffSAGE's mean over rows).
    """

    values: np.ndarray
    base: np.ndarray
    std: np.ndarray | None
    n_evaluations: int
    paths: np.ndarray | None = None
    units: np.ndarray | None = None
    dof: np.ndarray | None = None

    def std_and_dof(self) -> tuple[np.ndarray, np.ndarray]:
        """The standard errors and their degrees of freedom, also when every value is exact.

        Returns
        -------
        std : ndarray of the shape of ``values``
            ``std``, or 0 when it is None (every value exact).
        dof : ndarray of the shape of ``values``
            ``dof``, or ``inf`` (a normal interval) when ``std`` is None.
        """
        if self.std is None:
            return np.zeros_like(self.values), np.full(self.values.shape, np.inf)
        return self.std, self.dof


def estimate_shapley(game: Game, algorithm: str = "frontier", n_evals: int | None = None,
                     generators: Sequence[np.random.Generator] | None = None, *,
                     with_std: bool = True, design_seed: int | None = None) -> ShapleyEstimate:
    """Shapley values of every row of ``game`` by one algorithm of :data:`ALGORITHMS`.

    The one entry point of the table: it runs the algorithm within the budget, and
    returns the values with their standard errors (Student-t widened by their degrees of
    freedom, also returned), the evaluations spent and (for the frontier) each row's path.

    Parameters
    ----------
    game : Game
        The game to explain.
    algorithm : str, default="frontier"
        A key of :data:`ALGORITHMS`.
    n_evals : int or None, default=None
        Coalition evaluations per player and row; ``None``: :func:`default_n_evals`.
        Ignored by ``"exact"``.
    generators : list of numpy.random.Generator or None
        One per row (row ``r`` draws from ``generators[r]`` only, so its values do not
        depend on the other rows); ``None`` for ``"exact"``.
    with_std : bool, default=True
        Compute the standard errors (the frontier's cross-fit costs four more surrogate
        fits per sampled row).
    design_seed : int or None, default=None
        The seed of ``"frontier_shared"``'s designs (required there, instead of
        ``generators``); the other algorithms take none.

    Returns
    -------
    ShapleyEstimate
        The values, base values, standard errors, evaluations spent and (frontier) paths.
    """
    from ._game import Game

    if not isinstance(game, Game):
        raise TypeError(f"game must be a Game (e.g. an ImputationGame); got "
                        f"{type(game).__name__}.")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {sorted(ALGORITHMS)}; got {algorithm!r}.")
    shared = algorithm == "frontier_shared"
    if shared and design_seed is None:
        raise ValueError("algorithm='frontier_shared' draws one design per number of active "
                         "players, shared by the rows: pass design_seed (an int), not "
                         "per-row generators.")
    if not shared and design_seed is not None:
        raise ValueError(f"design_seed is for algorithm='frontier_shared' only; got "
                         f"algorithm={algorithm!r}.")
    if algorithm != "exact" and n_evals is None:
        n_evals = default_n_evals(algorithm, game.n_players)
    start = game.n_evaluations
    if algorithm in ("frontier", "frontier_shared"):
        # its standard errors come from its cross-fit (no units), already widened
        if shared:
            _check_no_generators(generators)
        phi, base, std, df, paths = _frontier_estimate(game, n_evals, generators, with_std,
                                                       design_seed)
        return ShapleyEstimate(
            values=phi, base=base, std=std, n_evaluations=int(game.n_evaluations - start),
            paths=np.array(paths, dtype=object), dof=None if std is None else df)
    out = ALGORITHMS[algorithm](game, n_evals, generators, return_units=with_std)
    units = out[2] if with_std else None
    std = df = None
    if units is not None:
        std = unit_std(units)
        # the mean of U independent units: a Student-t interval with U - 1 degrees of
        # freedom (the normal one covered 0.67-0.91 with 2-8 antithetic pairs,
        # doc/benchmarks.md)
        df = np.where(std > 0, float(units.shape[1] - 1), np.inf)
        std = t_widened(std, df)
    return ShapleyEstimate(values=out[0], base=out[1], std=std,
                           n_evaluations=int(game.n_evaluations - start), units=units, dof=df)


# n_evals="auto" (KnockoffSHAP, ShearExplainer's frontier): at least this many units
# (antithetic pairs of permutations, KernelSHAP's jackknife groups, the frontier's pairs)
# before a row may stop, so that the standard errors it stops on are calibrated; the cap
# on the budget
AUTO_MIN_UNITS = 32
MAX_AUTO_N_EVALS = 1024


def auto_start_n_evals(algorithm, n_players):
    """The first budget of ``n_evals="auto"``: the smallest power of two, at least 16,
    that gives ``AUTO_MIN_UNITS`` units (antithetic pairs of ``n_evals * P // (P - 1)``
    permutations, or ``n_evals * P / 2`` complementary pairs)."""
    P = max(int(n_players), 2)
    n_evals = 16
    while n_evals < MAX_AUTO_N_EVALS:
        units = n_evals * P // (P - 1) // 2 if algorithm == "permutation" else \
            n_evals * P // 2
        if units >= AUTO_MIN_UNITS:
            break
        n_evals *= 2
    return n_evals


def tol_reached(phi, std, base, full, tol, floor=64):
    """The stopping rule of ``tol``: rows whose every standard error is at most ``tol``
    times the row's range of attributions (over players, the widest output), or
    round-off (``floor * eps`` of the row's largest value: equal attributions would
    otherwise never stop). NaN is not small. The one rule of every explainer's ``tol``
    (KnockoffSAGE's global importances are one row, with a floor of ``1024 eps`` of the
    largest loss: its sums over rows gather more round-off).

    Parameters
    ----------
    phi, std : ndarray of shape (n, P, O)
    base, full : ndarray of shape (n, O)
        ``v(empty)`` and ``v(all)`` (or any values the round-off is relative to).
    tol : float
    floor : float, default=64
        The round-off floor in units of ``eps``.

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    spread = np.max(np.ptp(phi, axis=1), axis=1)
    scale = np.maximum.reduce([np.max(np.abs(phi), axis=(1, 2)),
                               np.max(np.abs(base), axis=1), np.max(np.abs(full), axis=1)])
    worst = np.max(np.where(np.isnan(std), np.inf, std), axis=(1, 2))
    return worst <= np.maximum(tol * spread, floor * np.finfo(np.float64).eps * scale)


def default_n_evals(algorithm, n_players):
    """The budget of a sampling algorithm when the user gives none.

    ``"frontier"``: 16 (its error at 16 is half KernelSHAP's at its default, in a quarter
    of the time, on the German credit knockoff game, ``doc/benchmarks.md``); ``"kernel"``:
    ``2 + ceil(2048 / P)``, about
    shap's ``2 P + 2048`` coalitions per row;
    ``"permutation"``: 32 (at least 32 permutations); ``"exact"``: ``None`` (no budget).
    """
    if algorithm in ("frontier", "frontier_shared"):
        return 16
    if algorithm == "kernel":
        return 2 + ceil(2048 / max(int(n_players), 1))
    if algorithm == "permutation":
        return 32
    return None
