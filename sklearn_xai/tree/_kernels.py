"""Numba kernels for TreeSHAP on a :class:`~sklearn_xai.tree._ensemble.FlatEnsemble`.

Nothing here knows which library a tree came from.

Features and players: a row's value at a split is read from the split's ``feature``
column, while everything combinatorial (unique path features, alive/one fractions,
pattern bits, the reference's side) is keyed by the split's *player*
(``FlatEnsemble.player``; the feature itself when unset). Every algorithm below is exact
for any labelling of splits by player: a player's factor on a path is the product over
its splits, whichever columns they read. So the columns computed from one input column
of a pipeline (its one-hot columns) form one player, and the values are the Shapley
values of the game over input columns. Below, "feature" means player.

Path-dependent values (quadrature form)
---------------------------------------
For a leaf with value ``v`` and unique path features ``U``, with ``Z_j`` the product
of the zero fractions of the path's edges on ``j`` and ``o_j`` whether ``x``
satisfies all of them, ``F_j(t) = Z_j (1 - t) + o_j t`` and

    phi_i = sum_leaves v (o_i - Z_i) int_0^1 prod_{j != i} F_j(t) dt.

The integrand is a polynomial of degree ``|U| - 1`` so Gauss-Legendre with
``Q = ceil(U_max / 2)`` points (``U_max``: the tree's largest number of unique
features on one path) is exact. Going down, each row carries
``C(t_q) = prod_j F_j(t_q)`` (per-edge factor tables, no divisions); at a leaf
``H_q = C_q v W_q``; going back up, an edge on ``f`` adds
``alive_old * sum_q H_q (g_after - g_before)(t_q)`` to ``phi_f`` with
``g = (o - Z) / F``, which telescopes repeated features. Rows are the innermost,
contiguous dimension of every work array, and threads share the row blocks.

Threads
-------
Every kernel is compiled serial, without the GIL (``nogil=True``), and takes a range of
tasks ``lo .. hi`` (row blocks, rows or trees) whose outputs do not overlap;
:func:`~sklearn_xai.tree._ensemble.run_in_threads` splits the tasks among numba's current
number of threads (Python threads, each calling the kernel on its ranges), so the split
never changes a result. Numba's own ``parallel=True`` would do the same at run time, but
compiling a kernel for it costs seconds more than a serial one (the pattern tables'
kernel: 12 s against 2 s), which every fresh installation (empty numba cache) pays on its
first explanation.

Hot loops take no helper with array arguments: in a serial kernel each call of an inlined
helper that takes arrays (or a slice, a new array) updates their reference counts with
atomic operations, a fixed cost per node comparable to routing a block of rows (numba's
parallel kernels do not count references, which is why they did not pay it). Routing
reads the node's scalars once: one value with
:func:`~sklearn_xai.tree._ensemble._goes_left_numeric`, a block of rows at the common
numeric split with NaN as missing with :func:`_left_nan_split` (scalars), the rarer splits
(other missing rules, categories) with :func:`_route_rows`; the break sets of a block on
entering a node are written in the kernel itself.

Interactions use the same pass: an edge on ``i`` adds
``1/2 sum_q H_q Delta g_i(t_q) g_j(t_q)`` to ``(i, j)`` and ``(j, i)`` for every other
feature ``j`` already on the path (its latest state); the diagonal is
``phi_i - sum_{j != i} Phi_ij``.

Interventional values use the leaf formula of Lundberg et al. (2020): for one
reference ``r``, a leaf reachable with features ``A`` taken from ``x`` and ``B``
from ``r`` gives ``v (|A|-1)! |B|! / (|A|+|B|)!`` to each ``i`` in ``A`` and minus
``v |A|! (|B|-1)! / (|A|+|B|)!`` to each ``j`` in ``B``. The pair's contribution
depends on ``x`` and ``r`` only through which of the leaf's path features each one
meets, so :class:`PatternTables` counts the background rows per leaf and
pattern once and turns the counts into lookup tables (WOODELF / PLTreeSHAP idea:
``O(n + m)`` per tree instead of ``O(n m)``); :func:`shap_interventional`, pair by
pair, remains for deep trees and rescaled probabilities. The path-dependent game is the
same game against a background whose features are independent and meet each path
condition with the cover's probability, so the tables also serve path-dependent values
of shallow trees (weights from the zero fractions instead of counts). Interaction values (the
pairwise Shapley interaction index) come from the same leaf games: two features of
``A`` get ``v (|A|-2)! |B|! / (2 (n-1)!)``, two of ``B`` ``v |A|! (|B|-2)! / (2 (n-1)!)``
and one of each ``-v (|A|-1)! (|B|-1)! / (2 (n-1)!)``, ``n = |A| + |B|``.
"""

import math
from fractions import Fraction

import numpy as np
from numba import njit

from ._ensemble import (
    MISSING_NAN,
    MODE_LE32,
    MODE_LE64,
    MODE_LT32,
    _go_left,
    _goes_left_numeric,
    _goes_left_value,
    _preorder_jit,
    run_in_threads,
    writeable_state,
)

_FLAGS = {"contract", "reassoc", "arcp"}


def _n_blocks(X, block):
    return (X.shape[0] + block - 1) // block


def _w(a, dtype=np.float64):
    """C-contiguous writeable array (read-only inputs would compile a second specialisation)."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.flags.writeable else a.copy()


# ---------------------------------------------------------------------------
# tables (fit time)
# ---------------------------------------------------------------------------


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _orders(tree_offsets, children_left, children_right):
    n = len(children_left)
    order = np.empty(n, dtype=np.int64)
    depth = np.empty(n, dtype=np.int64)
    starts = np.zeros(len(tree_offsets), dtype=np.int64)
    pos = 0
    for t in range(len(tree_offsets) - 1):
        size = tree_offsets[t + 1] - tree_offsets[t]
        k = _preorder_jit(children_left, children_right, tree_offsets[t],
                          order[pos:pos + size], depth[pos:pos + size])
        pos += k
        starts[t + 1] = pos
    return order[:pos], depth[:pos], starts


def _path_stats(order, depth, starts, children_left, feature, n_features):
    """Per tree: max number of distinct features on a root-leaf path, and max depth."""
    _, _, U = _leaf_positions(order, depth, starts, children_left, feature, n_features)
    leaf_depth = np.where(children_left[order] < 0, depth, 0)
    D = np.array([leaf_depth[starts[t]:starts[t + 1]].max(initial=0)
                  for t in range(len(starts) - 1)], dtype=np.int64)
    return U, D


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _restore_z(Z, saved, slot, cur, d):
    """Undo the factors of the path below depth ``d`` (a pre-order walk leaving depth
    ``cur``): ``Z[slot[c]] = saved[c]`` from ``c = cur`` up; the new depth."""
    while cur >= d and cur > 0:
        Z[slot[cur]] = saved[cur]
        cur -= 1
    return cur


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _scale_z(Z, saved, slot, d, j, factor):
    """Multiply ``Z[j]`` by the edge's factor on entering depth ``d``, saving the old value
    for :func:`_restore_z`; ``(old, new)``."""
    slot[d] = j
    zold = Z[j]
    znew = zold * factor
    saved[d] = zold
    Z[j] = znew
    return zold, znew


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _edge_tables(order, depth, starts, feature, zf, qt, Qt, n_features):
    """Per-node factor and return tables at each tree's quadrature nodes."""
    n = len(zf)
    Qmax = qt.shape[1]
    RH = np.zeros((n, Qmax))
    RC = np.zeros((n, Qmax))
    GH = np.zeros((n, Qmax))
    GC = np.zeros((n, Qmax))
    GA = np.zeros((n, Qmax))
    Zcur = np.ones(n_features)
    savedZ = np.ones(order.shape[0] + 1)
    featd = np.full(order.shape[0] + 1, -1, dtype=np.int64)
    nodes_at = np.empty(order.shape[0] + 1, dtype=np.int64)
    for t in range(len(starts) - 1):
        cur = 0
        for idx in range(starts[t], starts[t + 1]):
            node = order[idx]
            d = depth[idx]
            cur = _restore_z(Zcur, savedZ, featd, cur, d)
            if d > 0:
                f = feature[nodes_at[d - 1]]
                zold, znew = _scale_z(Zcur, savedZ, featd, d, f, zf[node])
                for q in range(Qt[t]):
                    tq = qt[t, q]
                    fo = zold + (1.0 - zold) * tq
                    fn = znew + (1.0 - znew) * tq
                    RH[node, q] = fn / fo
                    RC[node, q] = znew * (1.0 - tq) / fo
                    go = (1.0 - zold) / fo
                    ga = (1.0 - znew) / fn
                    GA[node, q] = ga
                    GH[node, q] = ga - go
                    GC[node, q] = -1.0 / (1.0 - tq) - go
            nodes_at[d] = node
            cur = d
        while cur > 0:
            Zcur[featd[cur]] = savedZ[cur]
            cur -= 1
    return RH, RC, GH, GC, GA


def gauss_legendre_01(Q):
    """Gauss-Legendre nodes and weights on [0, 1] (exact to degree 2Q - 1)."""
    x, w = np.polynomial.legendre.leggauss(Q)
    return (x + 1.0) / 2.0, w / 2.0


def quadrature_points(U, index="shapley", min_points=None):
    """Gauss-Legendre points per tree: ``max(1, (U + 1) // 2)`` for trees with at most ``U``
    distinct features on a root-leaf path (exact for the degree-``U - 1`` integrand), at
    least ``min_points``; one point (``t = 1/2``) for Banzhaf values."""
    Qt = np.maximum(1, (np.asarray(U, dtype=np.int64) + 1) // 2)
    if min_points is not None:
        Qt = np.maximum(Qt, int(min_points))
    if index == "banzhaf":
        Qt = np.ones_like(Qt)
    return Qt


class PathTables:
    """Everything the path-dependent kernels need, computed once per ensemble.

    ``index="banzhaf"`` gives Banzhaf values instead: they are the integrand at
    ``t = 1/2`` (every coalition weighs the same), i.e. one point of weight 1.

    Attributes are plain arrays, so the object pickles.
    """

    def __init__(self, ens, zf, min_points=None, index="shapley"):
        order, depth, starts = _orders(ens.tree_offsets, ens.children_left, ens.children_right)
        player, n_players = ens.players()
        U, D = _path_stats(order, depth, starts, ens.children_left, player, n_players)
        Qt = quadrature_points(U, index, min_points)
        Qmax = int(Qt.max()) if len(Qt) else 1
        qt = np.full((len(Qt), Qmax), 0.5)
        qw = np.zeros((len(Qt), Qmax))
        cache = {}
        for t, q in enumerate(Qt):
            if q not in cache:
                cache[q] = gauss_legendre_01(int(q)) if index == "shapley" else \
                    (np.array([0.5]), np.array([1.0]))
            qt[t, :q], qw[t, :q] = cache[q]
        RH, RC, GH, GC, GA = _edge_tables(order, depth, starts, player, zf, qt, Qt,
                                          n_players)
        self.order, self.depth, self.starts = order, depth, starts
        self.U, self.max_depth, self.Qt, self.qt, self.qw = U, D, Qt, qt, qw
        self.RH, self.RC, self.GH, self.GC, self.GA = RH, RC, GH, GC, GA
        self.zf = zf
        is_left = np.zeros(ens.n_nodes, dtype=np.bool_)
        internal = ens.children_left >= 0
        is_left[ens.children_left[internal]] = True
        self.is_left = is_left

    def __setstate__(self, state):
        self.__dict__.update(writeable_state(state))

    @property
    def nbytes(self):
        return sum(a.nbytes for a in (self.RH, self.RC, self.GH, self.GC, self.GA))


# ---------------------------------------------------------------------------
# path-dependent values
# ---------------------------------------------------------------------------


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _left_nan_split(x, x32, m, t, dl):
    """1.0 where value ``x`` (``x32``: rounded to float32) goes left at a numeric split of
    mode ``m`` whose missing values are NaN (they go to ``dl``, 1.0 for left), else 0.0.

    The common split, routed a block of rows at a time in the kernels' loops. Scalars
    only: an inlined helper that takes arrays costs a serial kernel an atomic update of
    each array's reference count on every call (numba's parallel kernels do not count
    references), comparable to the routing of a block itself.
    """
    if m == MODE_LE64:
        g = 1.0 if x <= t else 0.0
    elif m == MODE_LE32:
        g = 1.0 if x32 <= t else 0.0
    else:
        g = 1.0 if x32 < t else 0.0
    return dl if np.isnan(x) else g


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _route_rows(node, fn, d, c0, bn, XT, XT32, gl, threshold, mode, missing, default_left,
                cat_offsets, cat_values):
    """``gl[d, b] = 1.0`` where row ``b`` (column ``c0 + b`` of ``XT``'s row ``fn``) goes
    left at ``node``, for the splits :func:`_left_nan_split` does not take (other missing
    rules, categorical splits); the kernels route those (rarer) nodes through this
    array-taking helper."""
    m = mode[node]
    miss = missing[node]
    t = threshold[node]
    dl = default_left[node]
    if m <= MODE_LT32:
        for b in range(bn):
            gl[d, b] = 1.0 if _goes_left_numeric(XT[fn, c0 + b], m, miss, t, dl) else 0.0
    else:
        lo = cat_offsets[node]
        hi = cat_offsets[node + 1]
        for b in range(bn):
            gl[d, b] = 1.0 if _goes_left_value(XT[fn, c0 + b], m, miss, t, dl, cat_values,
                                               lo, hi) else 0.0


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _fill_columns(X, r0, bn, M, XT, XT32):
    """Rows ``r0 .. r0 + bn`` of ``X`` column-major into ``XT`` (M, block), and rounded to
    float32 into ``XT32`` (for XGBoost's float32 split comparisons)."""
    for b in range(bn):
        for j in range(M):
            XT[j, b] = X[r0 + b, j]
            XT32[j, b] = np.float64(np.float32(X[r0 + b, j]))


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, fastmath=_FLAGS)
def _shap_path(lo, hi, X, block, order, depth, starts, use_tree, Qt, qw, RH, RC, GH, GC, zf,
               is_left, value, tree_output, max_depth, children_left, children_right, feature,
               player, threshold, mode, missing, default_left, cat_offsets, cat_values, phi):
    """Row blocks ``lo .. hi - 1`` (of ``block`` rows) of :func:`shap_path_dependent`."""
    n, M = X.shape
    P = phi.shape[1]
    Kv = value.shape[1]
    Qmax = qw.shape[1]
    T = len(starts) - 1
    for blk in range(lo, hi):
        r0 = blk * block
        bn = min(block, n - r0)
        Dm = max_depth + 2
        C = np.ones((Dm, Qmax, block))
        Hs = np.zeros((Dm, Kv, Qmax, block))
        alive = np.ones((P, block))
        saved = np.zeros((Dm, block))
        hot = np.zeros((Dm, block))
        gl = np.zeros((Dm, block))
        node_at = np.zeros(Dm, dtype=np.int64)
        featd = np.zeros(Dm, dtype=np.int64)
        sacc = np.zeros(block)
        XT = np.empty((M, block))
        XT32 = np.empty((M, block))
        _fill_columns(X, r0, bn, M, XT, XT32)
        for t in range(T):
            if not use_tree[t]:
                continue
            Q = Qt[t]
            tout = tree_output[t]
            kv = Kv if tout < 0 else 1
            cur = 0
            end = starts[t + 1]
            for idx in range(starts[t], end + 1):
                # idx == end: depth 0, which pops every edge still open
                d = depth[idx] if idx < end else 0
                while cur >= d and cur > 0:
                    # pop the edge into node_at[cur]: its feature's term over the rows'
                    # H sums, H passed up, the feature's alive state restored
                    pn = node_at[cur]
                    pfe = featd[cur]
                    first = is_left[pn]
                    for kk in range(kv):
                        k = tout if tout >= 0 else kk
                        for b in range(bn):
                            sacc[b] = 0.0
                        for q in range(Q):
                            gc = GC[pn, q]
                            dg = GH[pn, q] - gc
                            if first:
                                for b in range(bn):
                                    hv = Hs[cur, kk, q, b]
                                    sacc[b] += hv * (gc + hot[cur, b] * dg)
                                    Hs[cur - 1, kk, q, b] = hv
                            else:
                                for b in range(bn):
                                    hv = Hs[cur, kk, q, b]
                                    sacc[b] += hv * (gc + hot[cur, b] * dg)
                                    Hs[cur - 1, kk, q, b] += hv
                        for b in range(bn):
                            phi[r0 + b, pfe, k] += saved[cur, b] * sacc[b]
                    for b in range(bn):
                        alive[pfe, b] = saved[cur, b]
                    cur -= 1
                if idx == end:
                    break
                node = order[idx]
                if d > 0:
                    p = node_at[d - 1]
                    f = player[p]
                    featd[d] = f
                    if is_left[node]:
                        for b in range(bn):
                            hot[d, b] = gl[d - 1, b]
                            saved[d, b] = alive[f, b]
                    else:
                        for b in range(bn):
                            hot[d, b] = 1.0 - gl[d - 1, b]
                            saved[d, b] = alive[f, b]
                    zc = zf[node]
                    if children_left[node] < 0:
                        # leaf: fused edge, leaf value and pop (no C / H stores)
                        first = is_left[node]
                        for kk in range(kv):
                            k = tout if tout >= 0 else kk
                            for b in range(bn):
                                sacc[b] = 0.0
                            vk = value[node, kk]
                            for q in range(Q):
                                rh = RH[node, q]
                                rc = RC[node, q]
                                gc = GC[node, q]
                                dg = GH[node, q] - gc
                                w = vk * qw[t, q]
                                for b in range(bn):
                                    a = saved[d, b]
                                    h = hot[d, b]
                                    fac = a * (rc + h * (rh - rc)) + (1.0 - a) * zc
                                    hv = C[d - 1, q, b] * fac * w
                                    sacc[b] += hv * (gc + h * dg)
                                    if first:
                                        Hs[d - 1, kk, q, b] = hv
                                    else:
                                        Hs[d - 1, kk, q, b] += hv
                            for b in range(bn):
                                phi[r0 + b, f, k] += saved[d, b] * sacc[b]
                        cur = d - 1
                        continue
                    for q in range(Q):
                        rh = RH[node, q]
                        rc = RC[node, q]
                        for b in range(bn):
                            a = saved[d, b]
                            fac = a * (rc + hot[d, b] * (rh - rc)) + (1.0 - a) * zc
                            C[d, q, b] = C[d - 1, q, b] * fac
                    for b in range(bn):
                        alive[f, b] = saved[d, b] * hot[d, b]
                else:
                    for q in range(Q):
                        for b in range(bn):
                            C[0, q, b] = 1.0
                node_at[d] = node
                cur = d
                if children_left[node] >= 0:
                    fn = feature[node]
                    sm = mode[node]
                    if missing[node] == MISSING_NAN and sm <= MODE_LT32:
                        th = threshold[node]
                        dl = 1.0 if default_left[node] else 0.0
                        for b in range(bn):
                            gl[d, b] = _left_nan_split(XT[fn, b], XT32[fn, b], sm, th, dl)
                    else:
                        _route_rows(node, fn, d, np.int64(0), bn, XT, XT32, gl, threshold, mode,
                                    missing, default_left, cat_offsets, cat_values)
                else:
                    for kk in range(kv):
                        for q in range(Q):
                            w = value[node, kk] * qw[t, q]
                            for b in range(bn):
                                Hs[d, kk, q, b] = C[d, q, b] * w


def shap_path_dependent(ens, tables, X, values, tree_output, n_outputs, block=128,
                        trees=None):
    """Path-dependent SHAP values.

    Parameters
    ----------
    ens : FlatEnsemble
        Routing arrays.
    tables : PathTables
    X : ndarray (n, M) float64, prepared by ``ens.prepare_X``
    values : ndarray (n_nodes, Kv)
        Leaf values to explain (columns of ``ens.value``, possibly a subset).
    tree_output : ndarray (T,)
        Output slot of each tree (``-1``: columns of ``values`` are the outputs;
        a tree whose output is not explained carries zero leaves).
    n_outputs : int
    trees : bool array (T,) or None
        Trees to include (all when None).

    Returns
    -------
    phi : ndarray (n, n_players, n_outputs)
        Cost ``O(n * nodes * Q)``.
    """
    X = _w(X, dtype=np.float64)
    player, n_players = ens.players()
    phi = np.zeros((X.shape[0], n_players, n_outputs))
    if X.shape[0] == 0:
        return phi
    use = np.ones(ens.n_trees, dtype=np.bool_) if trees is None else \
        np.ascontiguousarray(trees, dtype=np.bool_)
    block = int(block)
    run_in_threads(_shap_path, _n_blocks(X, block), X, block, tables.order, tables.depth,
                   tables.starts, use, tables.Qt, tables.qw, tables.RH, tables.RC, tables.GH,
                   tables.GC, tables.zf, tables.is_left, _w(values, dtype=np.float64),
                   np.asarray(tree_output, dtype=np.int64), int(tables.max_depth.max()),
                   ens.children_left, ens.children_right, ens.feature, player, ens.threshold,
                   ens.mode, ens.missing, ens.default_left, ens.cat_offsets, ens.cat_values,
                   phi)
    return phi


# ---------------------------------------------------------------------------
# interaction values (path-dependent)
# ---------------------------------------------------------------------------


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, fastmath=_FLAGS)
def _shap_inter(lo, hi, X, order, depth, starts, Qt, qt, qw, RH, RC, GH, GC, GA, zf, is_left, value,
                tree_output, max_depth, slot, n_slots, children_left, children_right,
                feature, player, threshold, mode, missing, default_left, cat_offsets,
                cat_values, phi, inter):
    """Rows ``lo .. hi - 1``, one at a time (interactions are O(D) per edge anyway)."""
    M = phi.shape[1]
    Kv = value.shape[1]
    Qmax = qw.shape[1]
    T = len(starts) - 1
    for i in range(lo, hi):
        Dm = max_depth + 2
        C = np.ones((Dm, Qmax))
        Hs = np.zeros((Dm, Kv, Qmax))
        gstate = np.zeros((Dm, Qmax))  # g of the edge's feature after the edge
        alive = np.ones(M)
        saved = np.zeros(Dm)
        hot = np.zeros(Dm)
        gl = np.zeros(Dm)
        node_at = np.zeros(Dm, dtype=np.int64)
        featd = np.zeros(Dm, dtype=np.int64)
        seen = np.zeros(M, dtype=np.int64)
        stamp = 0
        delta = np.zeros(Qmax)
        for t in range(T):
            Q = Qt[t]
            tout = tree_output[t]
            kv = Kv if tout < 0 else 1
            cur = 0
            for idx in range(starts[t], starts[t + 1] + 1):
                if idx < starts[t + 1]:
                    node = order[idx]
                    d = depth[idx]
                else:
                    node = -1
                    d = 0
                while cur >= d and cur > 0:
                    # pop edge at depth cur
                    pn = node_at[cur]
                    f = featd[cur]
                    a = saved[cur]
                    h = hot[cur]
                    for q in range(Q):
                        delta[q] = a * (GC[pn, q] + h * (GH[pn, q] - GC[pn, q]))
                    for kk in range(kv):
                        k = tout if tout >= 0 else kk
                        s = 0.0
                        for q in range(Q):
                            s += Hs[cur, kk, q] * delta[q]
                        phi[i, f, k] += s
                    if a != 0.0:
                        stamp += 1
                        seen[f] = stamp
                        for dk in range(cur - 1, 0, -1):
                            g = featd[dk]
                            if seen[g] == stamp:
                                continue
                            seen[g] = stamp
                            if slot[f] < 0 and slot[g] < 0:
                                continue
                            for kk in range(kv):
                                k = tout if tout >= 0 else kk
                                s = 0.0
                                for q in range(Q):
                                    s += Hs[cur, kk, q] * delta[q] * gstate[dk, q]
                                s *= 0.5
                                if slot[f] >= 0:
                                    inter[i, slot[f], g, k] += s
                                if slot[g] >= 0:
                                    inter[i, slot[g], f, k] += s
                    for kk in range(kv):
                        for q in range(Q):
                            Hs[cur - 1, kk, q] += Hs[cur, kk, q]
                    alive[f] = a
                    cur -= 1
                if node < 0:
                    break
                if d > 0:
                    p = node_at[d - 1]
                    f = player[p]
                    featd[d] = f
                    h = gl[d - 1] if is_left[node] else 1.0 - gl[d - 1]
                    a = alive[f]
                    hot[d] = h
                    saved[d] = a
                    zc = zf[node]
                    an = a * h
                    for q in range(Q):
                        fac = a * (RC[node, q] + h * (RH[node, q] - RC[node, q])) + (1.0 - a) * zc
                        C[d, q] = C[d - 1, q] * fac
                        gstate[d, q] = GA[node, q] if an != 0.0 else -1.0 / (1.0 - qt[t, q])
                    alive[f] = an
                else:
                    for q in range(Q):
                        C[0, q] = 1.0
                node_at[d] = node
                cur = d
                if children_left[node] >= 0:
                    m = mode[node]
                    x = X[i, feature[node]]
                    if m <= MODE_LT32:
                        left = _goes_left_numeric(x, m, missing[node], threshold[node],
                                                  default_left[node])
                    else:
                        left = _go_left(node, x, threshold, mode, missing, default_left,
                                        cat_offsets, cat_values)
                    gl[d] = 1.0 if left else 0.0
                    for kk in range(kv):
                        for q in range(Q):
                            Hs[d, kk, q] = 0.0
                else:
                    for kk in range(kv):
                        for q in range(Q):
                            Hs[d, kk, q] = C[d, q] * value[node, kk] * qw[t, q]


def shap_interactions(ens, tables, X, values, tree_output, n_outputs, features=None):
    """Path-dependent SHAP interaction values.

    Returns
    -------
    phi : ndarray (n, M, n_outputs)
    inter : ndarray (n, S, M, n_outputs)
        Rows ``features`` (all M when None) of the symmetric interaction matrix,
        diagonal = main effects, each row sums to ``phi`` of that feature. Memory
        ``n * S * M * n_outputs`` floats; cost ``O(n * nodes * Q * D)``. ``M`` is the
        number of players.
    """
    X = _w(X, dtype=np.float64)
    n = X.shape[0]
    player, M = ens.players()
    feats = np.arange(M) if features is None else np.asarray(features, dtype=np.int64)
    slot = np.full(M, -1, dtype=np.int64)
    slot[feats] = np.arange(len(feats))
    phi = np.zeros((n, M, n_outputs))
    inter = np.zeros((n, len(feats), M, n_outputs))
    if n:
        run_in_threads(_shap_inter, n, X, tables.order, tables.depth, tables.starts, tables.Qt,
                       tables.qt, tables.qw, tables.RH, tables.RC, tables.GH, tables.GC,
                       tables.GA, tables.zf, tables.is_left, _w(values, dtype=np.float64),
                       np.asarray(tree_output, dtype=np.int64), int(tables.max_depth.max()),
                       slot, len(feats), ens.children_left, ens.children_right, ens.feature,
                       player, ens.threshold, ens.mode, ens.missing, ens.default_left,
                       ens.cat_offsets, ens.cat_values, phi, inter)
    for s, f in enumerate(feats):
        off = inter[:, s].sum(axis=1) - inter[:, s, f]
        inter[:, s, f] = phi[:, f] - off
    return phi, inter


# ---------------------------------------------------------------------------
# interventional values: weights
# ---------------------------------------------------------------------------

# weight kinds of the pattern tables (first index |A|, second |B|; see the module doc)
_W_POS, _W_NEG, _W_BB, _W_AB, _W_AA = range(5)


def _fr(n):
    return math.factorial(n)


def interventional_weights(max_n, index="shapley"):
    """Exact leaf-game weights ``W[kind, a, b]`` for ``a = |A|``, ``b = |B|`` up to ``max_n``.

    ``POS``: what each feature of ``A`` gets, ``(a-1)! b! / (a+b)!``; ``NEG``: what each
    feature of ``B`` loses, ``a! (b-1)! / (a+b)!``; ``BB``, ``AB``, ``AA``: the pairwise
    Shapley interaction index (halved, as for path-dependent interactions) of two features
    of ``B``, of one of ``A`` and one of ``B`` (a loss), of two of ``A``. Banzhaf values
    (``index="banzhaf"``) give ``1 / 2^(a+b-1)`` to ``POS`` and ``NEG``.
    """
    W = np.zeros((5, max_n + 1, max_n + 1))
    for a in range(max_n + 1):
        for b in range(max_n + 1 - a):
            n = a + b
            if index == "banzhaf":
                if n >= 1:
                    w = float(Fraction(1, 2 ** (n - 1)))
                    W[_W_POS, a, b] = w if a >= 1 else 0.0
                    W[_W_NEG, a, b] = w if b >= 1 else 0.0
                continue
            if a >= 1:
                W[_W_POS, a, b] = float(Fraction(_fr(a - 1) * _fr(b), _fr(n)))
            if b >= 1:
                W[_W_NEG, a, b] = float(Fraction(_fr(a) * _fr(b - 1), _fr(n)))
            if b >= 2:
                W[_W_BB, a, b] = float(Fraction(_fr(a) * _fr(b - 2), 2 * _fr(n - 1)))
            if a >= 1 and b >= 1:
                W[_W_AB, a, b] = float(Fraction(_fr(a - 1) * _fr(b - 1), 2 * _fr(n - 1)))
            if a >= 2:
                W[_W_AA, a, b] = float(Fraction(_fr(a - 2) * _fr(b), 2 * _fr(n - 1)))
    return W


def leaf_weights(max_d):
    """``W[a, b] = (a-1)! b! / (a+b)!`` for a >= 1 (exact rationals rounded once)."""
    W = np.zeros((max_d + 2, max_d + 2))
    for a in range(1, max_d + 2):
        for b in range(0, max_d + 2 - a):
            W[a, b] = float(Fraction(math.factorial(a - 1) * math.factorial(b),
                                     math.factorial(a + b)))
    return W


# ---------------------------------------------------------------------------
# interventional values: pattern tables, O(n + m) per tree
# ---------------------------------------------------------------------------

#: Largest number of distinct features on a root-leaf path that a tree may have to be
#: served by pattern tables; deeper trees use the pairwise algorithm.
MAX_TABLE_FEATURES = 10
#: The same for path-dependent values, where deeper trees use the quadrature kernel.
#: Measured (Adult, HistGradientBoosting 100 trees of 15 / 31 / 63 leaves, 2,000 rows, one
#: thread): 8 instead of 6 gave 1.18x / 1.12x / 1.03x the rows/s, 0.5 -> 1.1, 0.3 -> 3.0
#: and 0 -> 3.0 MiB of tables.
PATH_TABLE_FEATURES = 8

# leaf-table channels: (weight kind, shift of |B|); a leaf's entry for pattern beta is
# sum over y subset of beta of count[y] * W[kind, |y|, d - |beta| - shift] / m
_CH_VALUES = ((_W_POS, 0), (_W_POS, 1), (_W_NEG, 0))
_CH_INTER = _CH_VALUES + ((_W_BB, 0), (_W_AB, 0), (_W_AB, 1), (_W_AA, 0), (_W_AA, 1),
                          (_W_AA, 2))


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _leaf_positions(order, depth, starts, children_left, feature, n_features):
    """Bit positions of the path features.

    Returns ``pos`` (internal node -> position of its feature among the distinct
    features of its root path, in order of first appearance), ``nu`` (node -> number of
    distinct features above it; a leaf's pattern has ``nu`` bits) and ``U`` (per tree,
    the largest ``nu`` of a leaf).
    """
    n = len(children_left)
    pos = np.full(n, -1, dtype=np.int64)
    nu = np.zeros(n, dtype=np.int64)
    T = len(starts) - 1
    U = np.zeros(T, dtype=np.int64)
    cnt = np.zeros(n_features, dtype=np.int64)
    fpos = np.zeros(n_features, dtype=np.int64)
    featd = np.full(order.shape[0] + 1, -1, dtype=np.int64)
    nodes_at = np.empty(order.shape[0] + 1, dtype=np.int64)
    for t in range(T):
        cur = 0
        uniq = 0
        for idx in range(starts[t], starts[t + 1]):
            node = order[idx]
            d = depth[idx]
            while cur >= d and cur > 0:
                f = featd[cur]
                cnt[f] -= 1
                if cnt[f] == 0:
                    uniq -= 1
                cur -= 1
            if d > 0:
                f = feature[nodes_at[d - 1]]
                featd[d] = f
                if cnt[f] == 0:
                    fpos[f] = uniq  # positions in use are always 0 .. uniq - 1
                    uniq += 1
                cnt[f] += 1
            nodes_at[d] = node
            cur = d
            nu[node] = uniq
            if children_left[node] >= 0:
                f = feature[node]
                pos[node] = fpos[f] if cnt[f] > 0 else uniq
            elif uniq > U[t]:
                U[t] = uniq
        while cur > 0:
            f = featd[cur]
            cnt[f] -= 1
            if cnt[f] == 0:
                uniq -= 1
            cur -= 1
    return pos, nu, U


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _units(order, depth, starts, candidate, children_left, children_right, feature, pos, nu,
           n_features, max_depth, slack):
    """Cut each candidate tree into units: maximal subtrees whose key fits ``d + slack`` bits.

    A unit rooted at ``g`` with ``I`` internal nodes is keyed, for one row, by the row's
    breaks of the ``nu[g]`` path features above ``g`` and its direction at each of the
    ``I`` internal nodes (``nu[g] + I`` bits): that decides the row's pattern at every
    leaf of the unit. ``g`` is a unit root when ``nu[g] + I <= d + slack``, ``d`` the
    largest ``nu`` of its leaves (a leaf alone always is one; ``slack = 1`` keeps the
    tables about as large as per-leaf ones). The unit's features are the path
    features above ``g`` (in position order) then those first split on inside it.

    Returns ``unit_of`` (node -> unit, -1 elsewhere), per unit the pre-order index of its
    root, its tree, its pre-order size, its key bits, and its features in CSR form.
    """
    n = len(children_left)
    I = np.zeros(n, dtype=np.int64)
    size = np.zeros(n, dtype=np.int64)
    mx = np.zeros(n, dtype=np.int64)
    T = len(starts) - 1
    for t in range(T):
        if not candidate[t]:
            continue
        for idx in range(starts[t + 1] - 1, starts[t] - 1, -1):
            node = order[idx]
            left = children_left[node]
            if left < 0:
                size[node] = 1
                mx[node] = nu[node]
            else:
                right = children_right[node]
                I[node] = 1 + I[left] + I[right]
                size[node] = 1 + size[left] + size[right]
                mx[node] = max(mx[left], mx[right])
    unit_of = np.full(n, -1, dtype=np.int64)
    u_idx = np.empty(n, dtype=np.int64)
    u_tree = np.empty(n, dtype=np.int64)
    nun = 0
    bound = 0
    for t in range(T):
        if not candidate[t]:
            continue
        idx = starts[t]
        while idx < starts[t + 1]:
            node = order[idx]
            if nu[node] + I[node] <= mx[node] + slack:
                unit_of[node] = nun
                u_idx[nun] = idx
                u_tree[nun] = t
                nun += 1
                bound += nu[node] + I[node]
                idx += size[node]
            else:
                idx += 1
    u_size = np.empty(nun, dtype=np.int64)
    u_bits = np.empty(nun, dtype=np.int64)
    u_foff = np.zeros(nun + 1, dtype=np.int64)
    u_feat = np.empty(bound, dtype=np.int64)
    pf = np.zeros(max_depth + 2, dtype=np.int64)
    stamp = np.zeros(n_features, dtype=np.int64)
    k = 0
    for t in range(T):
        if not candidate[t]:
            continue
        idx = starts[t]
        while idx < starts[t + 1]:
            node = order[idx]
            u = unit_of[node]
            if u < 0:
                # a unit's path positions are last written by its own ancestors (pre-order)
                pf[pos[node]] = feature[node]
                idx += 1
                continue
            u_size[u] = size[node]
            u_bits[u] = nu[node] + I[node]
            for j in range(nu[node]):
                u_feat[k] = pf[j]
                stamp[pf[j]] = u + 1
                k += 1
            for idx2 in range(idx, idx + size[node]):
                n2 = order[idx2]
                if children_left[n2] >= 0 and stamp[feature[n2]] != u + 1:
                    stamp[feature[n2]] = u + 1
                    u_feat[k] = feature[n2]
                    k += 1
            u_foff[u + 1] = k
            idx += size[node]
    return unit_of, u_idx[:nun], u_tree[:nun], u_size, u_bits, u_foff, u_feat[:k]


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _popcount(v):
    c = 0
    while v:
        v &= v - 1
        c += 1
    return c


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _unit_walk(fill, key, c, idx0, size, g_nu, order, depth, children_left, player, pos, nu,
               is_left, ys, iidx, node_at, pf, lc_off, lcnt, ltab, value, kv, fdim, out, o):
    """Walk the unit for one key.

    ``fill`` False: add ``c`` to each leaf's count of its break set (background side).
    ``fill`` True: add each leaf's contributions, for an explained row of this key, to the
    unit's table row ``out[o:]`` (one slot per unit feature and value column), from the
    3-channel leaf tables ``ltab``.
    """
    d0 = depth[idx0]
    i = 0
    for idx in range(idx0, idx0 + size):
        node = order[idx]
        d = depth[idx] - d0
        if d == 0:
            ys[0] = key & ((np.int64(1) << g_nu) - 1)
        else:
            p = node_at[d - 1]
            went_left = (key >> (g_nu + iidx[d - 1])) & 1
            cold = np.int64(1) if (went_left == 1) != is_left[node] else np.int64(0)
            ys[d] = ys[d - 1] | (cold << pos[p])
        node_at[d] = node
        if children_left[node] >= 0:
            iidx[d] = i
            i += 1
            pf[pos[node]] = player[node]
            continue
        if not fill:
            lcnt[lc_off[node] + ys[d]] += c
            continue
        dl = nu[node]
        a = ~ys[d] & ((np.int64(1) << dl) - 1)
        base = lc_off[node] * 3
        t0 = ltab[base + 3 * a]
        tn = -ltab[base + 3 * a + 2]
        for j in range(dl):
            bit = np.int64(1) << j
            val = t0 - ltab[base + 3 * (a ^ bit) + 1] if a & bit else tn
            slot = o + fdim[pf[j]] * kv
            for kk in range(kv):
                out[slot + kk] += value[node, kk] * val


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _leaf_table(counts, off, d, W, ch_w, ch_s, scale, out, out_off):
    """Pattern table of one leaf from its background pattern counts.

    For every x-pattern ``beta`` (bit set: ``x`` meets the feature's conditions) and channel
    ``c``: ``scale * sum_{y subset of beta} counts[y] * W[kind_c, |y|, d - |beta| - shift_c]``,
    with a ranked subset-sum (zeta) transform, ``O(2^d d^2)``.
    """
    size = np.int64(1) << d
    nch = len(ch_w)
    Rk = np.zeros((size, d + 1))
    for y in range(size):
        Rk[y, _popcount(y)] = counts[off + y]
    for i in range(d):
        bit = np.int64(1) << i
        for b in range(size):
            if b & bit:
                for r in range(d + 1):
                    Rk[b, r] += Rk[b ^ bit, r]
    for b in range(size):
        k = _popcount(b)
        o = out_off + b * nch
        for c in range(nch):
            q = d - k - ch_s[c]
            s = 0.0
            if q >= 0:
                w = ch_w[c]
                for r in range(k + 1):
                    s += Rk[b, r] * W[w, r, q]
            out[o + c] = s * scale


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _build_path_tables(lo, hi, zf, order, depth, starts, use_tree, pos, nu, is_left, unit_of,
                       u_size, u_bits, u_foff, u_feat, u_off, lc_off, lc_size, leaf_start, W,
                       ch_w, ch_s, to_units, value, tree_kv, max_depth, children_left, player,
                       n_players, out, reach):
    """Tables of trees ``lo .. hi - 1`` under the path-dependent game (zero fractions
    ``zf``): a leaf's weight of break set ``y`` is ``prod_j (1 - Z_j if j in y else Z_j)``,
    ``Z_j`` the product of the zero fractions of its path's edges on feature ``j``: absent
    features follow the covers, independently of each other, which is the path-dependent
    game. See :func:`_tables_from_counts` for what is written."""
    for t in range(lo, hi):
        if not use_tree[t]:
            continue
        Dm = max_depth + 2
        lcnt = np.zeros(lc_size[t])
        _path_weights(t, order, depth, starts, pos, nu, children_left, zf, lc_off, lcnt, Dm)
        _tables_from_counts(t, lcnt, 1.0, order, depth, starts, pos, nu, is_left, unit_of,
                            u_size, u_bits, u_foff, u_feat, u_off, lc_off, lc_size,
                            leaf_start, W, ch_w, ch_s, to_units, value, tree_kv, max_depth,
                            children_left, player, n_players, out, reach)


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _build_background_tables(lo, hi, RT, RT32, order, depth, starts, use_tree, pos, nu,
                             is_left, unit_of, u_size, u_bits, u_foff, u_feat, u_off, uc_off,
                             uc_size, lc_off, lc_size, leaf_start, W, ch_w, ch_s, to_units,
                             value, tree_kv, max_depth, children_left, feature, player,
                             n_players, threshold, mode, missing, default_left, cat_offsets,
                             cat_values, out, reach):
    """Tables of trees ``lo .. hi - 1`` from the background rows ``RT`` (one column per
    row): each background row's key at each unit (``O(m * nodes)``), then spread to the
    leaves' break-set counts per distinct key. See :func:`_tables_from_counts` for what
    is written."""
    m = RT.shape[1]
    block = 1024  # background rows per pass (fewer passes over the tree structure)
    for t in range(lo, hi):
        if not use_tree[t]:
            continue
        Dm = max_depth + 2
        lcnt = np.zeros(lc_size[t])
        ys = np.zeros(Dm, dtype=np.int64)
        iidx = np.zeros(Dm, dtype=np.int64)
        pf = np.zeros(Dm, dtype=np.int64)
        fdim = np.zeros(n_players, dtype=np.int64)
        node_at = np.zeros(Dm, dtype=np.int64)
        _count_background(t, RT, RT32, m, block, order, depth, starts, pos, nu, is_left,
                          unit_of, u_size, u_bits, uc_off, uc_size, lc_off, lcnt, ys, iidx, pf,
                          node_at, fdim, value, children_left, feature, player, threshold,
                          mode, missing, default_left, cat_offsets, cat_values)
        _tables_from_counts(t, lcnt, 1.0 / m, order, depth, starts, pos, nu, is_left,
                            unit_of, u_size, u_bits, u_foff, u_feat, u_off, lc_off, lc_size,
                            leaf_start, W, ch_w, ch_s, to_units, value, tree_kv, max_depth,
                            children_left, player, n_players, out, reach)


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _tables_from_counts(t, lcnt, scale, order, depth, starts, pos, nu, is_left, unit_of,
                        u_size, u_bits, u_foff, u_feat, u_off, lc_off, lc_size, leaf_start, W,
                        ch_w, ch_s, to_units, value, tree_kv, max_depth, children_left,
                        player, n_players, out, reach):
    """Leaf tables and (``to_units``) unit tables of tree ``t`` from its leaves' break-set
    weights ``lcnt`` (times ``scale``).

    ``to_units`` False writes the leaf tables (``len(ch_w)`` channels) at
    ``leaf_start * len(ch_w)``; True turns 3-channel leaf tables into unit tables at
    ``u_off`` (leaf values folded in). ``reach``: the share of background rows (or of
    the cover) reaching each leaf.
    """
    nch = len(ch_w)
    Dm = max_depth + 2
    ys = np.zeros(Dm, dtype=np.int64)
    iidx = np.zeros(Dm, dtype=np.int64)
    pf = np.zeros(Dm, dtype=np.int64)
    fdim = np.zeros(n_players, dtype=np.int64)  # player -> slot in its unit's row
    node_at = np.zeros(Dm, dtype=np.int64)
    for idx in range(starts[t], starts[t + 1]):
        node = order[idx]
        if children_left[node] < 0:
            reach[node] = lcnt[lc_off[node]] * scale
    if not to_units:
        for idx in range(starts[t], starts[t + 1]):
            node = order[idx]
            if children_left[node] < 0:
                _leaf_table(lcnt, lc_off[node], nu[node], W, ch_w, ch_s, scale, out,
                            leaf_start[node] * nch)
        return
    ltab = np.zeros(lc_size[t] * nch)
    for idx in range(starts[t], starts[t + 1]):
        node = order[idx]
        if children_left[node] < 0:
            _leaf_table(lcnt, lc_off[node], nu[node], W, ch_w, ch_s, scale, ltab,
                        lc_off[node] * nch)
    kv = tree_kv[t]
    idx = starts[t]
    while idx < starts[t + 1]:
        node = order[idx]
        u = unit_of[node]
        if u < 0:
            pf[pos[node]] = player[node]
            idx += 1
            continue
        dims = u_foff[u + 1] - u_foff[u]
        for j in range(dims):
            fdim[u_feat[u_foff[u] + j]] = j
        row = dims * kv
        for kk in range(np.int64(1) << u_bits[u]):
            _unit_walk(True, kk, 0.0, idx, u_size[u], nu[node], order, depth,
                       children_left, player, pos, nu, is_left, ys, iidx, node_at, pf,
                       lc_off, lcnt, ltab, value, kv, fdim, out, u_off[u] + kk * row)
        idx += u_size[u]


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _path_weights(t, order, depth, starts, pos, nu, children_left, zf, lc_off, lcnt, Dm):
    """Leaf weights of every break set under the path-dependent game (see _build_tables)."""
    Zc = np.ones(Dm)
    saved = np.ones(Dm)
    savepos = np.zeros(Dm, dtype=np.int64)
    node_at = np.zeros(Dm, dtype=np.int64)
    cur = 0
    for idx in range(starts[t], starts[t + 1]):
        node = order[idx]
        d = depth[idx]
        cur = _restore_z(Zc, saved, savepos, cur, d)
        if d > 0:
            _scale_z(Zc, saved, savepos, d, pos[node_at[d - 1]], zf[node])
        node_at[d] = node
        cur = d
        if children_left[node] >= 0:
            continue
        dl = nu[node]
        off = lc_off[node]
        for y in range(np.int64(1) << dl):
            w = 1.0
            for j in range(dl):
                w *= (1.0 - Zc[j]) if (y >> j) & 1 else Zc[j]
            lcnt[off + y] = w


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _count_background(t, RT, RT32, m, block, order, depth, starts, pos, nu, is_left, unit_of,
                      u_size, u_bits, uc_off, uc_size, lc_off, lcnt, ys, iidx, pf, node_at,
                      fdim, value, children_left, feature, player, threshold, mode, missing,
                      default_left, cat_offsets, cat_values):
    """Each background row's key at each unit of tree ``t``, spread to leaf break sets."""
    Dm = len(ys)
    ucnt = np.zeros(uc_size[t])
    ux = np.zeros((Dm, block), dtype=np.int64)
    gl = np.zeros((Dm, block))
    key = np.zeros(block, dtype=np.int64)
    for r0 in range(0, m, block):
        bn = min(block, m - r0)
        u = -1  # as in _shap_tables: the unit being keyed, its last node, its next bit
        u_last = -1
        sh = 0
        for idx in range(starts[t], starts[t + 1]):
            node = order[idx]
            d = depth[idx]
            if idx > u_last:
                # break sets on entering node: bit pos[parent] where the row goes the
                # other way at the parent
                if d > 0:
                    bit = np.int64(1) << pos[node_at[d - 1]]
                    go = 1.0 if is_left[node] else 0.0
                    for b in range(bn):
                        ux[d, b] = ux[d - 1, b] | (np.int64(gl[d - 1, b] != go) * bit)
                else:
                    for b in range(bn):
                        ux[0, b] = 0
                node_at[d] = node
                u = unit_of[node]
                if u >= 0:
                    sh = nu[node]
                    u_last = idx + u_size[u] - 1
                    mask = (np.int64(1) << sh) - 1
                    for b in range(bn):
                        key[b] = ux[d, b] & mask
            if children_left[node] >= 0:
                fn = feature[node]
                sm = mode[node]
                if missing[node] == MISSING_NAN and sm <= MODE_LT32:
                    th = threshold[node]
                    dl = 1.0 if default_left[node] else 0.0
                    for b in range(bn):
                        gl[d, b] = _left_nan_split(RT[fn, r0 + b], RT32[fn, r0 + b], sm, th, dl)
                else:
                    _route_rows(node, fn, d, r0, bn, RT, RT32, gl, threshold, mode,
                                missing, default_left, cat_offsets, cat_values)
                if u >= 0:
                    for b in range(bn):
                        key[b] |= np.int64(gl[d, b]) << sh
                    sh += 1
            if idx == u_last:
                off = uc_off[u]
                for b in range(bn):
                    ucnt[off + key[b]] += 1.0
    dummy = np.zeros(1)
    for idx in range(starts[t], starts[t + 1]):
        node = order[idx]
        u = unit_of[node]
        if u < 0:
            continue
        off = uc_off[u]
        for kk in range(np.int64(1) << u_bits[u]):
            c = ucnt[off + kk]
            if c != 0.0:
                _unit_walk(False, kk, c, idx, u_size[u], nu[node], order, depth,
                           children_left, player, pos, nu, is_left, ys, iidx, node_at, pf,
                           lc_off, lcnt, dummy, value, 1, fdim, dummy, 0)


class PatternTables:
    """Pattern tables for interventional (or path-dependent) values.

    For one tree, leaf ``l`` with value ``v`` and ``d`` distinct path features, an
    explained row ``x`` and a background row ``z``: the leaf is reached by the hybrid
    ``(x_S, z_not S)`` iff every path feature is taken from a row that meets all the
    path's conditions on it. With ``A`` the features only ``x`` meets and ``B`` those only
    ``z`` meets, the leaf gives ``v (|A|-1)! |B|! / (|A|+|B|)!`` to each feature of ``A``
    and ``-v |A|! (|B|-1)! / (|A|+|B|)!`` to each of ``B`` (nothing when a feature is met
    by neither). Both depend on ``x`` only through its pattern ``beta`` (bit ``j``: ``x``
    meets feature ``j``) and on ``z`` only through the set ``y`` of features it breaks;
    ``z`` counts iff ``y`` is a subset of ``beta``, and then ``A = y`` and ``B`` is the
    complement of ``beta``. So the background is counted per leaf and pattern ``y`` (one
    pass, ``O(m * nodes)``), and ranked subset sums (``O(2^d d^2)`` per leaf) give three
    numbers per ``beta``: feature ``j`` of ``beta`` gets ``S0(beta) - S1(beta - j)`` and
    every other path feature ``-N(beta)`` (times ``v``, over ``m``).

    To explain a row with few lookups, leaves are grouped into *units*: maximal subtrees
    whose key (the row's breaks above the unit root and its direction at each internal
    node of the unit, ``b`` bits) has ``b <= d + 1``, ``d`` the unit's largest leaf
    pattern width. A unit's table holds, for each of the ``2^b`` keys, the summed
    contributions of all its leaves (leaf values folded in) to each of its features. A row
    then costs ``O(nodes)`` routing plus one table row per unit and tree, whatever the
    background size.

    With ``zero_fractions`` (and ``R=None``) the tables are those of the path-dependent
    game instead: an absent feature follows the covers, which is the game above with a
    background whose features are independent and meet feature ``j`` of a leaf's path
    with probability ``Z_j`` (the product of the path's zero fractions on ``j``). The
    leaf weights of each break set are then products of ``Z_j`` and ``1 - Z_j`` instead
    of background counts.

    Memory: ``8 * 2^b * (unit features) * (value columns)`` bytes per unit, at most
    ``8 * (d + 1) * 2^(d + 1)`` bytes (times the value columns of vector-leaf trees) per
    leaf, ``d`` its number of distinct path features; the fit also holds, per tree being
    built, ``32 * 2^d`` bytes per leaf. A tree gets tables when its largest ``d`` is at
    most ``max_features``, and trees are taken from the smallest table up while the total
    stays within ``max_bytes``; the other trees (``use_tree`` False) are left to the
    pairwise algorithm (interventional) or the quadrature kernel (path-dependent).

    Attributes are plain arrays, so the object pickles.
    """

    def __init__(self, ens, R, *, values=None, max_features=MAX_TABLE_FEATURES,
                 max_bytes=np.inf, index="shapley", zero_fractions=None):
        values = ens.value if values is None else values
        self.zf = np.zeros(0) if zero_fractions is None else _w(zero_fractions)
        if zero_fractions is not None:
            R = np.zeros((0, ens.n_features))
        order, depth, starts = _orders(ens.tree_offsets, ens.children_left, ens.children_right)
        player, n_players = ens.players()
        pos, nu, U = _leaf_positions(order, depth, starts, ens.children_left, player,
                                     n_players)
        self.max_depth = int(depth.max()) if len(depth) else 0
        candidate = U <= max_features
        unit_of, u_idx, u_tree, u_size, u_bits, u_foff, u_feat = _units(
            order, depth, starts, candidate, ens.children_left, ens.children_right,
            player, pos, nu, n_players, self.max_depth, 1)
        T = ens.n_trees
        tree_kv = np.where(ens.tree_output < 0, values.shape[1], 1).astype(np.int64)
        u_keys = np.left_shift(np.int64(1), u_bits)
        u_len = u_keys * np.diff(u_foff) * tree_kv[u_tree]
        table_bytes = 8.0 * np.bincount(u_tree, weights=u_len, minlength=T)
        use = self._within_budget(candidate, table_bytes, max_bytes)
        keep = use[u_tree]
        unit_of[order[u_idx[~keep]]] = -1
        self.u_off = _exclusive_cumsum(np.where(keep, u_len, 0))
        self.uc_off = _local_offsets(np.where(keep, u_keys, 0), u_tree, T)
        self.uc_size = np.bincount(u_tree, weights=np.where(keep, u_keys, 0),
                                   minlength=T).astype(np.int64)
        leaf = ens.children_left < 0
        tree_of = np.repeat(np.arange(T), np.diff(ens.tree_offsets))
        lsize = np.where(leaf & use[tree_of], np.left_shift(np.int64(1), np.minimum(nu, 62)), 0)
        self.leaf_start = _exclusive_cumsum(lsize)[:-1]
        self.lc_off = self.leaf_start - self.leaf_start[ens.tree_offsets[:-1]][tree_of]
        self.lc_size = np.bincount(tree_of, weights=lsize, minlength=T).astype(np.int64)
        self.order, self.depth, self.starts = order, depth, starts
        self.pos, self.nu, self.U, self.use_tree = pos, nu, U, use
        self.unit_of, self.u_size, self.u_bits = unit_of, u_size, u_bits
        self.u_foff, self.u_feat, self.tree_kv = u_foff, u_feat, tree_kv
        self.index = index
        is_left = np.zeros(ens.n_nodes, dtype=np.bool_)
        internal = ens.children_left >= 0
        is_left[ens.children_left[internal]] = True
        self.is_left = is_left
        self.n_background = R.shape[0]
        self.table, self.reach = self._build(ens, R, _CH_VALUES, True, values)

    @staticmethod
    def _within_budget(candidate, table_bytes, max_bytes):
        use = np.zeros(len(candidate), dtype=bool)
        total = 0.0
        for t in np.argsort(np.where(candidate, table_bytes, np.inf), kind="stable"):
            if not candidate[t] or total + table_bytes[t] > max_bytes:
                break
            total += table_bytes[t]
            use[t] = True
        return use

    def _build(self, ens, R, channels, to_units, values):
        nch = len(channels)
        size = int(self.u_off[-1]) if to_units else int(self.lc_size.sum()) * nch
        out = np.zeros(size)
        reach = np.zeros(len(ens.children_left))
        if not self.use_tree.any() or (R.shape[0] == 0 and len(self.zf) == 0):
            return out, reach
        W = interventional_weights(int(self.U[self.use_tree].max()) + 2, self.index)
        ch_w = np.asarray([c[0] for c in channels], dtype=np.int64)
        ch_s = np.asarray([c[1] for c in channels], dtype=np.int64)
        values = _w(values, dtype=np.float64)
        player, n_players = ens.players()
        T = len(self.starts) - 1
        if len(self.zf):
            run_in_threads(_build_path_tables, T, self.zf, self.order, self.depth,
                           self.starts, self.use_tree, self.pos, self.nu, self.is_left,
                           self.unit_of, self.u_size, self.u_bits, self.u_foff, self.u_feat,
                           self.u_off, self.lc_off, self.lc_size, self.leaf_start, W, ch_w,
                           ch_s, to_units, values, self.tree_kv, self.max_depth,
                           ens.children_left, player, n_players, out, reach)
            return out, reach
        RT = np.ascontiguousarray(np.asarray(R, dtype=np.float64).T)
        RT32 = RT.astype(np.float32).astype(np.float64)
        run_in_threads(_build_background_tables, T, RT, RT32, self.order, self.depth,
                       self.starts, self.use_tree, self.pos, self.nu, self.is_left,
                       self.unit_of, self.u_size, self.u_bits, self.u_foff, self.u_feat,
                       self.u_off, self.uc_off, self.uc_size, self.lc_off, self.lc_size,
                       self.leaf_start, W, ch_w, ch_s, to_units, values, self.tree_kv,
                       self.max_depth, ens.children_left, ens.feature, player, n_players,
                       ens.threshold, ens.mode, ens.missing, ens.default_left,
                       ens.cat_offsets, ens.cat_values, out, reach)
        return out, reach

    def interaction_table(self, ens, R):
        """Leaf tables for interaction values: 9 numbers per leaf and pattern."""
        return self._build(ens, R, _CH_INTER, False, ens.value)[0]

    def background_mean(self, ens):
        """Mean raw output over the background of the trees with tables, (n_outputs,)."""
        tree_of = np.repeat(np.arange(ens.n_trees), np.diff(ens.tree_offsets))
        sel = (ens.children_left < 0) & self.use_tree[tree_of]
        share = self.reach[sel][:, None] * ens.value[sel]
        outs = ens.tree_output[tree_of[sel]]
        out = np.zeros(ens.n_outputs)
        vector = outs < 0
        if vector.any():
            out += share[vector].sum(axis=0)
        np.add.at(out, outs[~vector], share[~vector, 0])
        return out

    def __setstate__(self, state):
        self.__dict__.update(writeable_state(state))

    @property
    def nbytes(self):
        return self.table.nbytes


def _exclusive_cumsum(a):
    """Offsets of consecutive items of sizes ``a``, and the total last (``len(a) + 1``)."""
    out = np.zeros(len(a) + 1, dtype=np.int64)
    np.cumsum(a, out=out[1:])
    return out


def _local_offsets(sizes, group, n_groups):
    """Offsets of items within their group (items of a group are contiguous, in order)."""
    start = _exclusive_cumsum(sizes)[:-1]
    first = np.full(n_groups, 0, dtype=np.int64)
    if len(sizes):
        firsts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        first[group[firsts]] = start[firsts]
    return start - first[group]


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, fastmath=_FLAGS)
def _shap_tables(lo, hi, X, block, order, depth, starts, use_tree, pos, nu, is_left, unit_of,
                 u_size, u_foff, u_feat, u_off, tree_kv, table, tree_output, max_depth,
                 children_left, feature, threshold, mode, missing, default_left, cat_offsets,
                 cat_values, phi):
    """Row blocks ``lo .. hi - 1`` (of ``block`` rows) of :func:`shap_pattern_tables`.

    One pass over each tree in pre-order: outside units, a node's break sets come from
    its parent's routing; at a unit root the rows' keys start from those break sets, and
    each internal node of the unit adds the rows' direction as the next key bit; after
    the unit's last node the rows read their table rows. Every node is routed by the one
    :func:`_route_rows` call, so the routing is compiled once."""
    n, M = X.shape
    T = len(starts) - 1
    Dm = max_depth + 2
    ux = np.zeros((Dm, block), dtype=np.int64)
    gl = np.zeros((Dm, block))
    node_at = np.zeros(Dm, dtype=np.int64)
    key = np.zeros(block, dtype=np.int64)
    XT = np.empty((M, block))
    XT32 = np.empty((M, block))
    for blk in range(lo, hi):
        r0 = blk * block
        bn = min(block, n - r0)
        _fill_columns(X, r0, bn, M, XT, XT32)
        for t in range(T):
            if not use_tree[t]:
                continue
            tout = tree_output[t]
            kv = tree_kv[t]
            u = -1  # the unit being keyed (-1: none)
            u_last = -1  # pre-order index of its last node
            sh = 0  # its next key bit
            for idx in range(starts[t], starts[t + 1]):
                node = order[idx]
                d = depth[idx]
                if idx > u_last:  # outside a unit
                    # break sets on entering node: bit pos[parent] where the row goes the
                    # other way at the parent
                    if d > 0:
                        bit = np.int64(1) << pos[node_at[d - 1]]
                        go = 1.0 if is_left[node] else 0.0
                        for b in range(bn):
                            ux[d, b] = ux[d - 1, b] | (np.int64(gl[d - 1, b] != go) * bit)
                    else:
                        for b in range(bn):
                            ux[0, b] = 0
                    node_at[d] = node
                    u = unit_of[node]
                    if u >= 0:
                        sh = nu[node]
                        u_last = idx + u_size[u] - 1
                        mask = (np.int64(1) << sh) - 1
                        for b in range(bn):
                            key[b] = ux[d, b] & mask
                if children_left[node] >= 0:
                    fn = feature[node]
                    sm = mode[node]
                    if missing[node] == MISSING_NAN and sm <= MODE_LT32:
                        th = threshold[node]
                        dl = 1.0 if default_left[node] else 0.0
                        for b in range(bn):
                            gl[d, b] = _left_nan_split(XT[fn, b], XT32[fn, b], sm, th, dl)
                    else:
                        _route_rows(node, fn, d, np.int64(0), bn, XT, XT32, gl, threshold, mode,
                                    missing, default_left, cat_offsets, cat_values)
                    if u >= 0:
                        for b in range(bn):
                            key[b] |= np.int64(gl[d, b]) << sh
                        sh += 1
                if idx != u_last:
                    continue
                f0 = u_foff[u]
                dims = u_foff[u + 1] - f0
                row = dims * kv
                base = u_off[u]
                for b in range(bn):
                    o = base + key[b] * row
                    if kv == 1:
                        k = tout if tout >= 0 else 0
                        for j in range(dims):
                            phi[r0 + b, u_feat[f0 + j], k] += table[o + j]
                    else:
                        for j in range(dims):
                            f = u_feat[f0 + j]
                            for kk in range(kv):
                                phi[r0 + b, f, kk] += table[o + j * kv + kk]


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, fastmath=_FLAGS)
def _inter_tables(lo, hi, X, block, order, depth, starts, use_tree, pos, nu, is_left, leaf_start,
                  table, value, tree_output, max_depth, slot, children_left, feature,
                  player, threshold, mode, missing, default_left, cat_offsets, cat_values, phi,
                  inter):
    """Values and off-diagonal interactions from the 9-channel tables, row blocks
    ``lo .. hi - 1``."""
    n, M = X.shape
    Kv = value.shape[1]
    T = len(starts) - 1
    nch = 9
    for blk in range(lo, hi):
        r0 = blk * block
        bn = min(block, n - r0)
        Dm = max_depth + 2
        ux = np.zeros((Dm, block), dtype=np.int64)
        gl = np.zeros((Dm, block))
        node_at = np.zeros(Dm, dtype=np.int64)
        pf = np.zeros(Dm, dtype=np.int64)
        XT = np.empty((M, block))
        XT32 = np.empty((M, block))
        _fill_columns(X, r0, bn, M, XT, XT32)
        for t in range(T):
            if not use_tree[t]:
                continue
            tout = tree_output[t]
            kv = Kv if tout < 0 else 1
            for idx in range(starts[t], starts[t + 1]):
                node = order[idx]
                d = depth[idx]
                # break sets on entering node: bit pos[parent] where the row goes the
                # other way at the parent
                if d > 0:
                    bit = np.int64(1) << pos[node_at[d - 1]]
                    go = 1.0 if is_left[node] else 0.0
                    for b in range(bn):
                        ux[d, b] = ux[d - 1, b] | (np.int64(gl[d - 1, b] != go) * bit)
                else:
                    for b in range(bn):
                        ux[0, b] = 0
                node_at[d] = node
                if children_left[node] >= 0:
                    fn = feature[node]
                    pf[pos[node]] = player[node]
                    sm = mode[node]
                    if missing[node] == MISSING_NAN and sm <= MODE_LT32:
                        th = threshold[node]
                        dl = 1.0 if default_left[node] else 0.0
                        for b in range(bn):
                            gl[d, b] = _left_nan_split(XT[fn, b], XT32[fn, b], sm, th, dl)
                    else:
                        _route_rows(node, fn, d, np.int64(0), bn, XT, XT32, gl, threshold, mode,
                                    missing, default_left, cat_offsets, cat_values)
                    continue
                dl = nu[node]
                full = (np.int64(1) << dl) - 1
                base = leaf_start[node] * nch
                for b in range(bn):
                    a = ~ux[d, b] & full
                    o = base + nch * a
                    for j in range(dl):
                        bj = np.int64(1) << j
                        inj = (a & bj) != 0
                        oj = base + nch * (a ^ bj)
                        vj = table[o] - table[oj + 1] if inj else -table[o + 2]
                        fj = pf[j]
                        for kk in range(kv):
                            k = tout if tout >= 0 else kk
                            phi[r0 + b, fj, k] += value[node, kk] * vj
                        s = slot[fj]
                        if s < 0:
                            continue
                        for l in range(dl):
                            if l == j:
                                continue
                            bl = np.int64(1) << l
                            inl = (a & bl) != 0
                            if inj and inl:
                                w = (table[o + 6] - table[oj + 7] - table[base + nch * (a ^ bl) + 7]
                                     + table[base + nch * (a ^ bj ^ bl) + 8])
                            elif inj:
                                w = table[oj + 5] - table[o + 4]
                            elif inl:
                                w = table[base + nch * (a ^ bl) + 5] - table[o + 4]
                            else:
                                w = table[o + 3]
                            fl = pf[l]
                            for kk in range(kv):
                                k = tout if tout >= 0 else kk
                                inter[r0 + b, s, fl, k] += value[node, kk] * w


def _fill_diagonal(phi, inter, feats):
    """Main effects: ``Phi_ii = phi_i - sum_{j != i} Phi_ij`` (in place)."""
    for s, f in enumerate(feats):
        inter[:, s, f] = 0.0
        inter[:, s, f] = phi[:, f] - inter[:, s].sum(axis=1)
    return inter


def _slots(M, features):
    feats = np.arange(M) if features is None else np.asarray(features, dtype=np.int64)
    slot = np.full(M, -1, dtype=np.int64)
    slot[feats] = np.arange(len(feats))
    return feats, slot


def shap_pattern_tables(ens, tables, X, n_outputs, block=128):
    """Interventional values of the trees that have tables (``tables.use_tree``).

    Parameters
    ----------
    ens : FlatEnsemble
        The ensemble the tables were built for (leaf values and outputs are in them).
    tables : PatternTables
    X : ndarray (n, M) float64, prepared by ``ens.prepare_X``
    n_outputs : int

    Returns
    -------
    phi : ndarray (n, n_players, n_outputs)
        Cost ``O(n * (nodes + features of each unit))`` per tree, whatever the background.
    """
    X = _w(X, dtype=np.float64)
    phi = np.zeros((X.shape[0], ens.players()[1], n_outputs))
    if X.shape[0] == 0 or not tables.use_tree.any():
        return phi
    block = int(block)
    run_in_threads(_shap_tables, _n_blocks(X, block), X, block, tables.order, tables.depth,
                   tables.starts, tables.use_tree, tables.pos, tables.nu, tables.is_left,
                   tables.unit_of, tables.u_size, tables.u_foff, tables.u_feat, tables.u_off,
                   tables.tree_kv, tables.table, np.asarray(ens.tree_output, dtype=np.int64),
                   tables.max_depth, ens.children_left, ens.feature, ens.threshold, ens.mode,
                   ens.missing, ens.default_left, ens.cat_offsets, ens.cat_values, phi)
    return phi


def interactions_pattern_tables(ens, tables, table, X, values, tree_output, n_outputs,
                                       features=None, block=64):
    """Interventional SHAP interaction values of the trees that have tables.

    ``table`` is ``tables.interaction_table(ens, R)`` (9 numbers per leaf pattern, built
    from the background ``R``; callers build it once per call and drop it afterwards).

    Returns
    -------
    phi : ndarray (n, M, n_outputs)
    inter : ndarray (n, S, M, n_outputs)
        Rows ``features`` of the interaction matrix, main effects on the diagonal.
    """
    X = _w(X, dtype=np.float64)
    n = X.shape[0]
    player, M = ens.players()
    feats, slot = _slots(M, features)
    phi = np.zeros((n, M, n_outputs))
    inter = np.zeros((n, len(feats), M, n_outputs))
    if n and tables.use_tree.any():
        block = int(block)
        run_in_threads(_inter_tables, _n_blocks(X, block), X, block, tables.order,
                       tables.depth, tables.starts, tables.use_tree, tables.pos, tables.nu,
                       tables.is_left, tables.leaf_start, table, _w(values, dtype=np.float64),
                       np.asarray(tree_output, dtype=np.int64), tables.max_depth, slot,
                       ens.children_left, ens.feature, player, ens.threshold, ens.mode,
                       ens.missing, ens.default_left, ens.cat_offsets, ens.cat_values, phi,
                       inter)
    return phi, _fill_diagonal(phi, inter, feats)


# ---------------------------------------------------------------------------
# interventional values: pairwise algorithm, O(n * m) per tree
# ---------------------------------------------------------------------------


@njit(cache=True, no_cfunc_wrapper=True, nogil=True, fastmath=_FLAGS)
def _shap_interv(lo, hi, X, R, tree_offsets, use_tree, value, tree_output, W, max_depth, fx, fr, px,
                 pr, rescale, slot, do_inter, children_left, children_right, feature, player,
                 threshold, mode, missing, default_left, cat_offsets, cat_values, phi, inter):
    M = phi.shape[1]  # players
    nR = R.shape[0]
    Kv = value.shape[1]
    K = phi.shape[2]
    T = len(tree_offsets) - 1
    for i in range(lo, hi):
        Dm = max_depth + 2
        side = np.zeros(M, dtype=np.int8)
        alist = np.zeros(Dm, dtype=np.int64)
        st_node = np.zeros(2 * Dm + 2, dtype=np.int64)
        st_len = np.zeros(2 * Dm + 2, dtype=np.int64)
        st_f = np.zeros(2 * Dm + 2, dtype=np.int64)
        st_side = np.zeros(2 * Dm + 2, dtype=np.int8)
        tmp = np.zeros((M, K))
        for r in range(nR):
            for m in range(M):
                for k in range(K):
                    tmp[m, k] = 0.0
            for t in range(T):
                if not use_tree[t]:
                    continue
                tout = tree_output[t]
                kv = Kv if tout < 0 else 1
                top = 0
                st_node[0] = tree_offsets[t]
                st_len[0] = 0
                st_f[0] = -1
                alen = 0
                while top >= 0:
                    node = st_node[top]
                    ln = st_len[top]
                    f0 = st_f[top]
                    s0 = st_side[top]
                    top -= 1
                    while alen > ln:
                        alen -= 1
                        side[alist[alen]] = 0
                    if f0 >= 0:
                        side[f0] = s0
                        alist[alen] = f0
                        alen += 1
                    if children_left[node] < 0:
                        if alen == 0:
                            continue
                        na = 0
                        for j in range(alen):
                            if side[alist[j]] == 1:
                                na += 1
                        nb = alen - na
                        wa = W[_W_POS, na, nb]
                        wb = W[_W_NEG, na, nb]
                        for kk in range(kv):
                            k = tout if tout >= 0 else kk
                            v = value[node, kk]
                            for j in range(alen):
                                g = alist[j]
                                if side[g] == 1:
                                    tmp[g, k] += v * wa
                                else:
                                    tmp[g, k] -= v * wb
                        if do_inter:
                            waa = W[_W_AA, na, nb] / nR
                            wbb = W[_W_BB, na, nb] / nR
                            wab = -W[_W_AB, na, nb] / nR
                            for j in range(alen):
                                g = alist[j]
                                s = slot[g]
                                if s < 0:
                                    continue
                                for j2 in range(alen):
                                    h = alist[j2]
                                    if j2 == j:
                                        continue
                                    if side[g] != side[h]:
                                        w = wab
                                    elif side[g] == 1:
                                        w = waa
                                    else:
                                        w = wbb
                                    for kk in range(kv):
                                        k = tout if tout >= 0 else kk
                                        inter[i, s, h, k] += value[node, kk] * w
                        continue
                    fc = feature[node]
                    f = player[node]
                    m = mode[node]
                    miss = missing[node]
                    thr = threshold[node]
                    dl = default_left[node]
                    if m <= MODE_LT32:
                        gx = _goes_left_numeric(X[i, fc], m, miss, thr, dl)
                        gr = _goes_left_numeric(R[r, fc], m, miss, thr, dl)
                    else:
                        gx = _go_left(node, X[i, fc], threshold, mode, missing, default_left,
                                      cat_offsets, cat_values)
                        gr = _go_left(node, R[r, fc], threshold, mode, missing, default_left,
                                      cat_offsets, cat_values)
                    cx = children_left[node] if gx else children_right[node]
                    cr = children_left[node] if gr else children_right[node]
                    if cx == cr or side[f] == 1:
                        top += 1
                        st_node[top] = cx
                        st_len[top] = alen
                        st_f[top] = -1
                    elif side[f] == 2:
                        top += 1
                        st_node[top] = cr
                        st_len[top] = alen
                        st_f[top] = -1
                    else:
                        top += 1
                        st_node[top] = cx
                        st_len[top] = alen
                        st_f[top] = f
                        st_side[top] = 1
                        top += 1
                        st_node[top] = cr
                        st_len[top] = alen
                        st_f[top] = f
                        st_side[top] = 2
                while alen > 0:
                    alen -= 1
                    side[alist[alen]] = 0
            for k in range(K):
                if not rescale:
                    for m in range(M):
                        phi[i, m, k] += tmp[m, k] / nR
                    continue
                df = fx[i, k] - fr[r, k]
                dp = px[i, k] - pr[r, k]
                if abs(df) > 1e-12 * (1.0 + abs(fx[i, k])):
                    sc = dp / df / nR
                    for m in range(M):
                        phi[i, m, k] += tmp[m, k] * sc
                elif dp != 0.0:
                    # this output's margin did not move but its probability did (softmax):
                    # project on the joint margin change, which still adds up to dp
                    nrm = 0.0
                    for j in range(K):
                        nrm += (fx[i, j] - fr[r, j]) ** 2
                    if nrm > 0.0:
                        for m in range(M):
                            s = 0.0
                            for j in range(K):
                                s += tmp[m, j] * (fx[i, j] - fr[r, j])
                            phi[i, m, k] += dp * s / nrm / nR


def _pairwise(ens, X, R, values, tree_output, n_outputs, max_depth, rescale, trees, index,
              features, do_inter):
    X = _w(X, dtype=np.float64)
    R = _w(R, dtype=np.float64)
    n = X.shape[0]
    player, M = ens.players()
    feats, slot = _slots(M, features)
    phi = np.zeros((n, M, n_outputs))
    inter = np.zeros((n, len(feats) if do_inter else 0, M, n_outputs))
    W = interventional_weights(int(max_depth) + 2, index)
    if rescale is None:
        z1 = np.zeros((1, n_outputs))
        fx = fr = px = pr = z1
        flag = False
    else:
        fx, fr, px, pr = (_w(a, dtype=np.float64) for a in rescale)
        flag = True
    use = np.ones(ens.n_trees, dtype=np.bool_) if trees is None else \
        np.ascontiguousarray(trees, dtype=np.bool_)
    if n and R.shape[0] and use.any():
        run_in_threads(_shap_interv, n, X, R, ens.tree_offsets, use,
                       _w(values, dtype=np.float64), np.asarray(tree_output, dtype=np.int64), W,
                       int(max_depth), fx, fr, px, pr, flag, slot, do_inter, ens.children_left,
                       ens.children_right, ens.feature, player, ens.threshold, ens.mode,
                       ens.missing, ens.default_left, ens.cat_offsets, ens.cat_values, phi,
                       inter)
    return phi, inter, feats


def shap_interventional(ens, X, R, values, tree_output, n_outputs, *, max_depth,
                        rescale=None, trees=None, index="shapley"):
    """Interventional values against background rows ``R``, pair by pair.

    Parameters
    ----------
    max_depth : int
        The ensemble's largest depth.
    rescale : tuple (fx, fr, px, pr) or None
        Margins and transformed outputs of the explained and background rows, for
        every output of ``values``; each (x, r) pair's attributions of output ``k``
        are scaled by ``(px - pr) / (fx - fr)`` so they add up to ``px - pr``. When
        ``fx == fr`` but ``px != pr`` (softmax), output ``k`` gets
        ``(px - pr) * <phi_m, fx - fr> / |fx - fr|^2``, which also adds up.
    trees : bool array (T,) or None
        Trees to include (all when None).
    index : {"shapley", "banzhaf"}

    Returns
    -------
    phi : ndarray (n, M, n_outputs)
        Cost ``O(n * R * sum of visited nodes)``, worst case ``O(n R T L)``.
    """
    return _pairwise(ens, X, R, values, tree_output, n_outputs, max_depth, rescale, trees,
                     index, None, False)[0]


def interactions_interventional(ens, X, R, values, tree_output, n_outputs, *, max_depth,
                                trees=None, features=None):
    """Interventional SHAP interaction values, pair by pair (``O(n * R)`` per tree).

    Returns
    -------
    phi : ndarray (n, M, n_outputs)
    inter : ndarray (n, S, M, n_outputs)
        Rows ``features`` of the interaction matrix, main effects on the diagonal.
    """
    phi, inter, feats = _pairwise(ens, X, R, values, tree_output, n_outputs, max_depth, None,
                                  trees, "shapley", features, True)
    return phi, _fill_diagonal(phi, inter, feats)
