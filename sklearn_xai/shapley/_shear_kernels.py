"""Compiled kernels of SHEAR: coalition masks, random cooperators and the block maximum of
the cross-contribution.

The random draws come from one SplitMix64 stream per row (:mod:`sklearn_xai._random`),
seeded from the call's base seed and the row's content key, so a row's coalitions depend on
``random_state`` and the row itself only, never on the other rows, their order, the batch
or ``n_jobs``; a batch of rows is drawn in one compiled pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._random import splitmix64_uniform


@njit(cache=True, inline="always")
def _sort_in_place(a):
    """Insertion sort of a short 1-D integer array (K chosen cooperators)."""
    for k in range(1, a.shape[0]):
        v = a[k]
        q = k
        while q > 0 and a[q - 1] > v:
            a[q] = a[q - 1]
            q -= 1
        a[q] = v


@njit(cache=True)
def random_cooperators(seeds, n_players, n_cooperators):
    """K players drawn uniformly without replacement among the P - 1 others, per row and
    player (the authors' ablation), sorted ascending.

    Parameters
    ----------
    seeds : uint64 array of shape (n,)
        The rows' stream seeds.
    n_players, n_cooperators : int

    Returns
    -------
    cooperators : int64 array of shape (n, P, K)
    """
    n = seeds.shape[0]
    P, K = n_players, n_cooperators
    out = np.empty((n, P, K), dtype=np.int64)
    pool = np.empty(max(P - 1, 1), dtype=np.int64)
    state = np.zeros(1, dtype=np.uint64)
    for r in range(n):
        state[0] = seeds[r]
        for i in range(P):
            m = 0
            for j in range(P):
                if j != i:
                    pool[m] = j
                    m += 1
            for k in range(K):  # partial Fisher-Yates shuffle
                # u < 1, but u * (m - k) can round up to m - k
                q = k + min(int(splitmix64_uniform(state) * (m - k)), m - k - 1)
                v = pool[q]
                pool[q] = pool[k]
                pool[k] = v
            out[r, i, :K] = pool[:K]
            _sort_in_place(out[r, i, :K])
    return out


@njit(cache=True, inline="always")
def _place(masks, r, c, cp, j, present, paired):
    """Player ``j`` in (or out of) coalitions ``c`` and ``c + 1`` of row ``r``; the other
    way round in the antithetic partners ``cp`` and ``cp + 1`` when ``paired``."""
    masks[r, c, j] = present
    masks[r, c + 1, j] = present
    if paired:
        masks[r, cp, j] = not present
        masks[r, cp + 1, j] = not present


@njit(cache=True)
def shear_coalitions(cooperators, seeds, antithetic, shapley_fill):
    """SHEAR coalitions of a batch of rows, plus the empty and the full coalition.

    Parameters
    ----------
    cooperators : int64 array of shape (n, P, K)
    seeds : uint64 array of shape (n,)
        The rows' stream seeds (:func:`sklearn_xai._random.stream_seeds`).
    antithetic : bool
        Pair subset t with 2^K - 1 - t (the complement of T in S_i) and the complement of
        its random fill of the non-cooperators (needs K >= 1).
    shapley_fill : bool
        Non-cooperators present with probability u ~ Beta(|T| + 1, K - |T| + 1), drawn as
        the (|T| + 1)-th smallest of K + 1 uniforms (the partner gets 1 - u through the
        complement); else with probability 1/2 (the authors' fill).

    Returns
    -------
    masks : bool array of shape (n, P * 2^K * 2 + 2, P)
        Coalition ``(i * 2^K + t) * 2 + 0`` is T_t u R_t u {i}, ``... + 1`` is T_t u R_t;
        the last two are the empty and the full coalition.
    """
    n, P, K = cooperators.shape
    n_sub = 1 << K
    paired = antithetic and K >= 1
    n_draw = n_sub // 2 if paired else n_sub
    C = P * n_sub * 2
    masks = np.zeros((n, C + 2, P), dtype=np.bool_)
    is_coop = np.zeros(P, dtype=np.bool_)
    order = np.empty(K + 1)
    state = np.zeros(1, dtype=np.uint64)
    for r in range(n):
        state[0] = seeds[r]
        for i in range(P):
            is_coop[:] = False
            for k in range(K):
                is_coop[cooperators[r, i, k]] = True
            for t in range(n_draw):
                size = 0
                for k in range(K):
                    size += (t >> k) & 1
                if shapley_fill:
                    for k in range(K + 1):  # insertion sort of K + 1 uniforms
                        v = splitmix64_uniform(state)
                        q = k
                        while q > 0 and order[q - 1] > v:
                            order[q] = order[q - 1]
                            q -= 1
                        order[q] = v
                    u = order[size]
                else:
                    u = 0.5
                c = (i * n_sub + t) * 2
                cp = (i * n_sub + n_sub - 1 - t) * 2
                for k in range(K):
                    _place(masks, r, c, cp, cooperators[r, i, k], ((t >> k) & 1) == 1, paired)
                for j in range(P):
                    if j == i or is_coop[j]:
                        continue
                    _place(masks, r, c, cp, j, splitmix64_uniform(state) < u, paired)
            for t in range(n_sub):
                masks[r, (i * n_sub + t) * 2, i] = True
        for j in range(P):
            masks[r, C + 1, j] = True
    return masks


@njit(cache=True)
def block_max_cross_contribution(HC, pair_row, pair_col, computed, dist, col_to_player,
                                 n_rows, n_players):
    """eta[r, i, j] = sum over outputs of the maximum over the columns a of player i and b
    of player j (i != j) where row r differs from the reference of
    |H_ab| |x_a - r_a| |x_b - r_b|.

    Parameters
    ----------
    HC : float array of shape (k_computed, O, d)
        Hessian columns ``H(x_r) e_a`` of the computed pairs, in pair order.
    pair_row, pair_col : int64 arrays of shape (k,)
        Every (row, column) pair with ``dist[r, a] > 0``, sorted by row.
    computed : bool array of shape (k,)
        Pairs whose Hessian column is in ``HC``. Every pair of columns of different
        players of a row must have at least one computed member (H is symmetric).
    dist : float64 array of shape (n, d), |x - r|
    col_to_player : int64 array of shape (d,)
    n_rows, n_players : int

    Returns
    -------
    eta : float64 array of shape (n, P, P), diagonal ``-inf``
    """
    k = pair_row.shape[0]
    O = HC.shape[1]
    P = n_players
    eta = np.zeros((n_rows, P, P))
    best = np.zeros((O, P, P))
    start = 0
    m = 0  # index into HC
    while start < k:
        r = pair_row[start]
        stop = start
        while stop < k and pair_row[stop] == r:
            stop += 1
        best[:, :, :] = 0.0
        for q in range(start, stop):
            if not computed[q]:
                continue
            a = pair_col[q]
            pa = col_to_player[a]
            wa = dist[r, a]
            for q2 in range(start, stop):
                b = pair_col[q2]
                pb = col_to_player[b]
                if pb == pa:
                    continue
                w = wa * dist[r, b]
                for o in range(O):
                    e = abs(np.float64(HC[m, o, b])) * w
                    if e > best[o, pa, pb]:
                        best[o, pa, pb] = e
                        best[o, pb, pa] = e
                    elif e > best[o, pb, pa]:
                        best[o, pb, pa] = e
            m += 1
        for o in range(O):
            for i in range(P):
                for j in range(P):
                    eta[r, i, j] += best[o, i, j]
        start = stop
    for r in range(n_rows):
        for i in range(P):
            eta[r, i, i] = -np.inf
    return eta


@njit(cache=True)
def top_k_cooperators(eta, n_cooperators):
    """The K players j != i with the largest eta[r, i, j] (ties and NaN: as a stable
    descending sort, i.e. lowest index first, NaN last), sorted ascending.

    Parameters
    ----------
    eta : float64 array of shape (n, P, P)
    n_cooperators : int

    Returns
    -------
    cooperators : int64 array of shape (n, P, K)
    """
    n, P, _ = eta.shape
    K = n_cooperators
    out = np.empty((n, P, K), dtype=np.int64)
    taken = np.zeros(P, dtype=np.bool_)
    for r in range(n):
        for i in range(P):
            taken[:] = False
            taken[i] = True
            for k in range(K):
                best = -1
                best_val = 0.0
                for j in range(P):
                    if taken[j]:
                        continue
                    e = eta[r, i, j]
                    if best == -1:
                        best, best_val = j, e
                    elif np.isnan(best_val):
                        if not np.isnan(e):
                            best, best_val = j, e
                    elif e > best_val:
                        best, best_val = j, e
                taken[best] = True
                out[r, i, k] = best
            _sort_in_place(out[r, i, :K])
    return out
