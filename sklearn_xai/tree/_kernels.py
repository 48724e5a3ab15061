"""Numba kernels for TreeSHAP on a :class:`~sklearn_xai.tree._ensemble.FlatEnsemble`.

Nothing here knows which library a tree came from.

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
contiguous dimension of every work array, and ``prange`` runs over row blocks.

Interactions use the same pass: an edge on ``i`` adds
``1/2 sum_q H_q Delta g_i(t_q) g_j(t_q)`` to ``(i, j)`` and ``(j, i)`` for every other
feature ``j`` already on the path (its latest state); the diagonal is
``phi_i - sum_{j != i} Phi_ij``.

Interventional values use the leaf formula of Lundberg et al. (2020): for one
reference ``r``, a leaf reachable with features ``A`` taken from ``x`` and ``B``
from ``r`` gives ``v (|A|-1)! |B|! / (|A|+|B|)!`` to each ``i`` in ``A`` and minus
``v |A|! (|B|-1)! / (|A|+|B|)!`` to each ``j`` in ``B``.
"""

import math
from fractions import Fraction

import numpy as np
from numba import njit, prange

from ._ensemble import (
    MISSING_NAN,
    MODE_LE32,
    MODE_LE64,
    MODE_LT32,
    _go_left,
    _preorder_jit,
    writeable_state,
)

_FLAGS = {"contract", "reassoc", "arcp"}


def _w(a, dtype=np.float64):
    """C-contiguous writeable array (read-only inputs would compile a second specialisation)."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.flags.writeable else a.copy()


# ---------------------------------------------------------------------------
# tables (fit time)
# ---------------------------------------------------------------------------


@njit(cache=True)
def _orders(tree_offsets, children_left, children_right):
    n = len(children_left)
    order = np.empty(n, dtype=np.int64)
    depth = np.empty(n, dtype=np.int64)
    starts = np.zeros(len(tree_offsets), dtype=np.int64)
    pos = 0
    for t in range(len(tree_offsets) - 1):
        k = _preorder_jit(children_left, children_right, tree_offsets[t], order[pos:],
                          depth[pos:])
        pos += k
        starts[t + 1] = pos
    return order[:pos], depth[:pos], starts


@njit(cache=True)
def _path_stats(order, depth, starts, children_left, feature, n_features):
    """Per tree: max depth and max number of unique features on a root-leaf path."""
    T = len(starts) - 1
    U = np.zeros(T, dtype=np.int64)
    D = np.zeros(T, dtype=np.int64)
    cnt = np.zeros(n_features, dtype=np.int64)
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
                    uniq += 1
                cnt[f] += 1
            nodes_at[d] = node
            cur = d
            if children_left[node] < 0:
                if uniq > U[t]:
                    U[t] = uniq
                if d > D[t]:
                    D[t] = d
        while cur > 0:
            f = featd[cur]
            cnt[f] -= 1
            if cnt[f] == 0:
                uniq -= 1
            cur -= 1
    return U, D


@njit(cache=True)
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
            while cur >= d and cur > 0:
                Zcur[featd[cur]] = savedZ[cur]
                cur -= 1
            if d > 0:
                f = feature[nodes_at[d - 1]]
                featd[d] = f
                zold = Zcur[f]
                znew = zold * zf[node]
                savedZ[d] = zold
                Zcur[f] = znew
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


class PathTables:
    """Everything the path-dependent kernels need, computed once per ensemble.

    Attributes are plain arrays, so the object pickles.
    """

    def __init__(self, ens, zf, min_points=None):
        order, depth, starts = _orders(ens.tree_offsets, ens.children_left, ens.children_right)
        U, D = _path_stats(order, depth, starts, ens.children_left, ens.feature,
                           ens.n_features)
        Qt = np.maximum(1, (U + 1) // 2)
        if min_points is not None:
            Qt = np.maximum(Qt, int(min_points))
        Qmax = int(Qt.max()) if len(Qt) else 1
        qt = np.full((len(Qt), Qmax), 0.5)
        qw = np.zeros((len(Qt), Qmax))
        cache = {}
        for t, q in enumerate(Qt):
            if q not in cache:
                cache[q] = gauss_legendre_01(int(q))
            qt[t, :q], qw[t, :q] = cache[q]
        RH, RC, GH, GC, GA = _edge_tables(order, depth, starts, ens.feature, zf, qt, Qt,
                                          ens.n_features)
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


@njit(cache=True, inline="always")
def _route_block(node, xr, xr32, bn, gl, threshold, mode, missing, default_left, cat_offsets,
                 cat_values):
    """``gl[b] = 1.0`` where row ``b`` goes left at ``node`` (vectorisable per mode)."""
    m = mode[node]
    if missing[node] == MISSING_NAN and m <= MODE_LT32:  # numeric split
        t = threshold[node]
        dl = 1.0 if default_left[node] else 0.0
        if m == MODE_LE64:
            for b in range(bn):
                x = xr[b]
                g = 1.0 if x <= t else 0.0
                gl[b] = dl if np.isnan(x) else g
        elif m == MODE_LE32:
            for b in range(bn):
                x = xr32[b]
                g = 1.0 if x <= t else 0.0
                gl[b] = dl if np.isnan(x) else g
        else:
            for b in range(bn):
                x = xr32[b]
                g = 1.0 if x < t else 0.0
                gl[b] = dl if np.isnan(x) else g
    else:
        for b in range(bn):
            gl[b] = 1.0 if _go_left(node, xr[b], threshold, mode, missing, default_left,
                                    cat_offsets, cat_values) else 0.0


@njit(cache=True, inline="always")
def _pop_edge(d, b_n, node_at, featd, saved, hot, alive, Hs, GH, GC, Q, Kv, phi, rows0,
              tree_out, sacc, first):
    node = node_at[d]
    f = featd[d]
    for kk in range(Kv):
        k = tree_out if tree_out >= 0 else kk
        for b in range(b_n):
            sacc[b] = 0.0
        for q in range(Q):
            gc = GC[node, q]
            dg = GH[node, q] - gc
            if first:
                for b in range(b_n):
                    hv = Hs[d, kk, q, b]
                    sacc[b] += hv * (gc + hot[d, b] * dg)
                    Hs[d - 1, kk, q, b] = hv
            else:
                for b in range(b_n):
                    hv = Hs[d, kk, q, b]
                    sacc[b] += hv * (gc + hot[d, b] * dg)
                    Hs[d - 1, kk, q, b] += hv
        for b in range(b_n):
            phi[rows0 + b, f, k] += saved[d, b] * sacc[b]
    for b in range(b_n):
        alive[f, b] = saved[d, b]


@njit(cache=True, parallel=True, nogil=True, fastmath=_FLAGS)
def _shap_path(X, block, order, depth, starts, Qt, qw, RH, RC, GH, GC, zf, is_left, value,
               tree_output, max_depth, children_left, children_right, feature, threshold,
               mode, missing, default_left, cat_offsets, cat_values, phi):
    n, M = X.shape
    Kv = value.shape[1]
    Qmax = qw.shape[1]
    n_blocks = (n + block - 1) // block
    T = len(starts) - 1
    for blk in prange(n_blocks):
        r0 = blk * block
        bn = min(block, n - r0)
        Dm = max_depth + 2
        C = np.ones((Dm, Qmax, block))
        Hs = np.zeros((Dm, Kv, Qmax, block))
        alive = np.ones((M, block))
        saved = np.zeros((Dm, block))
        hot = np.zeros((Dm, block))
        gl = np.zeros((Dm, block))
        node_at = np.zeros(Dm, dtype=np.int64)
        featd = np.zeros(Dm, dtype=np.int64)
        sacc = np.zeros(block)
        XT = np.empty((M, block))
        XT32 = np.empty((M, block))
        for b in range(bn):
            for j in range(M):
                XT[j, b] = X[r0 + b, j]
                XT32[j, b] = np.float64(np.float32(X[r0 + b, j]))
        for t in range(T):
            Q = Qt[t]
            tout = tree_output[t]
            kv = Kv if tout < 0 else 1
            cur = 0
            for idx in range(starts[t], starts[t + 1]):
                node = order[idx]
                d = depth[idx]
                while cur >= d and cur > 0:
                    _pop_edge(cur, bn, node_at, featd, saved, hot, alive, Hs, GH, GC, Q, kv,
                              phi, r0, tout, sacc, is_left[node_at[cur]])
                    cur -= 1
                if d > 0:
                    p = node_at[d - 1]
                    f = feature[p]
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
                    _route_block(node, XT[fn], XT32[fn], bn, gl[d], threshold, mode, missing,
                                 default_left, cat_offsets, cat_values)
                else:
                    for kk in range(kv):
                        for q in range(Q):
                            w = value[node, kk] * qw[t, q]
                            for b in range(bn):
                                Hs[d, kk, q, b] = C[d, q, b] * w
            while cur > 0:
                _pop_edge(cur, bn, node_at, featd, saved, hot, alive, Hs, GH, GC, Q, kv,
                          phi, r0, tout, sacc, is_left[node_at[cur]])
                cur -= 1


def shap_path_dependent(ens, tables, X, values, tree_output, n_outputs, block=128):
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

    Returns
    -------
    phi : ndarray (n, M, n_outputs)
        Cost ``O(n * nodes * Q)``.
    """
    X = _w(X, dtype=np.float64)
    phi = np.zeros((X.shape[0], X.shape[1], n_outputs))
    if X.shape[0] == 0:
        return phi
    _shap_path(X, int(block), tables.order, tables.depth, tables.starts, tables.Qt,
               tables.qw, tables.RH, tables.RC, tables.GH, tables.GC, tables.zf,
               tables.is_left, _w(values, dtype=np.float64),
               np.asarray(tree_output, dtype=np.int64), int(tables.max_depth.max()),
               ens.children_left, ens.children_right, ens.feature, ens.threshold, ens.mode,
               ens.missing, ens.default_left, ens.cat_offsets, ens.cat_values, phi)
    return phi


# ---------------------------------------------------------------------------
# interaction values (path-dependent)
# ---------------------------------------------------------------------------


@njit(cache=True, parallel=True, nogil=True, fastmath=_FLAGS)
def _shap_inter(X, order, depth, starts, Qt, qt, qw, RH, RC, GH, GC, GA, zf, is_left, value,
                tree_output, max_depth, slot, n_slots, children_left, children_right,
                feature, threshold, mode, missing, default_left, cat_offsets, cat_values,
                phi, inter):
    """One row per parallel task (interactions are O(D) per edge anyway)."""
    n, M = X.shape
    Kv = value.shape[1]
    Qmax = qw.shape[1]
    T = len(starts) - 1
    for i in prange(n):
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
                    f = feature[p]
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
                    gl[d] = 1.0 if _go_left(node, X[i, feature[node]], threshold, mode,
                                            missing, default_left, cat_offsets,
                                            cat_values) else 0.0
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
        ``n * S * M * n_outputs`` floats; cost ``O(n * nodes * Q * D)``.
    """
    X = _w(X, dtype=np.float64)
    n, M = X.shape
    feats = np.arange(M) if features is None else np.asarray(features, dtype=np.int64)
    slot = np.full(M, -1, dtype=np.int64)
    slot[feats] = np.arange(len(feats))
    phi = np.zeros((n, M, n_outputs))
    inter = np.zeros((n, len(feats), M, n_outputs))
    if n:
        _shap_inter(X, tables.order, tables.depth, tables.starts, tables.Qt, tables.qt,
                    tables.qw, tables.RH, tables.RC, tables.GH, tables.GC, tables.GA,
                    tables.zf, tables.is_left, _w(values, dtype=np.float64),
                    np.asarray(tree_output, dtype=np.int64), int(tables.max_depth.max()), slot,
                    len(feats), ens.children_left, ens.children_right, ens.feature,
                    ens.threshold, ens.mode, ens.missing, ens.default_left, ens.cat_offsets,
                    ens.cat_values, phi, inter)
    for s, f in enumerate(feats):
        off = inter[:, s].sum(axis=1) - inter[:, s, f]
        inter[:, s, f] = phi[:, f] - off
    return phi, inter


# ---------------------------------------------------------------------------
# interventional values
# ---------------------------------------------------------------------------


def leaf_weights(max_d):
    """``W[a, b] = (a-1)! b! / (a+b)!`` for a >= 1 (exact rationals rounded once)."""
    W = np.zeros((max_d + 2, max_d + 2))
    for a in range(1, max_d + 2):
        for b in range(0, max_d + 2 - a):
            W[a, b] = float(Fraction(math.factorial(a - 1) * math.factorial(b),
                                     math.factorial(a + b)))
    return W


@njit(cache=True, parallel=True, nogil=True, fastmath=_FLAGS)
def _shap_interv(X, R, tree_offsets, value, tree_output, W, max_depth, fx, fr, px, pr,
                 rescale, children_left, children_right, feature, threshold, mode, missing,
                 default_left, cat_offsets, cat_values, phi):
    n, M = X.shape
    nR = R.shape[0]
    Kv = value.shape[1]
    K = phi.shape[2]
    T = len(tree_offsets) - 1
    for i in prange(n):
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
                        wa = W[na, nb] if na > 0 else 0.0
                        wb = W[nb, na] if nb > 0 else 0.0
                        for kk in range(kv):
                            k = tout if tout >= 0 else kk
                            v = value[node, kk]
                            for j in range(alen):
                                g = alist[j]
                                if side[g] == 1:
                                    tmp[g, k] += v * wa
                                else:
                                    tmp[g, k] -= v * wb
                        continue
                    f = feature[node]
                    gx = _go_left(node, X[i, f], threshold, mode, missing, default_left,
                                  cat_offsets, cat_values)
                    gr = _go_left(node, R[r, f], threshold, mode, missing, default_left,
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


def shap_interventional(ens, X, R, values, tree_output, n_outputs, *, max_depth,
                        rescale=None):
    """Interventional SHAP values against background rows ``R``.

    Parameters
    ----------
    rescale : tuple (fx, fr, px, pr) or None
        Margins and transformed outputs of the explained and background rows, for
        every output of ``values``; each (x, r) pair's attributions of output ``k``
        are scaled by ``(px - pr) / (fx - fr)`` so they add up to ``px - pr``. When
        ``fx == fr`` but ``px != pr`` (softmax), output ``k`` gets
        ``(px - pr) * <phi_m, fx - fr> / |fx - fr|^2``, which also adds up.

    Returns
    -------
    phi : ndarray (n, M, n_outputs)
        Cost ``O(n * R * sum of visited nodes)``, worst case ``O(n R T L)``.
    """
    X = _w(X, dtype=np.float64)
    R = _w(R, dtype=np.float64)
    n = X.shape[0]
    phi = np.zeros((n, X.shape[1], n_outputs))
    W = leaf_weights(max_depth + 1)
    if rescale is None:
        z1 = np.zeros((1, n_outputs))
        fx = fr = px = pr = z1
        flag = False
    else:
        fx, fr, px, pr = (_w(a, dtype=np.float64) for a in rescale)
        flag = True
    if n:
        _shap_interv(X, R, ens.tree_offsets, _w(values, dtype=np.float64),
                     np.asarray(tree_output, dtype=np.int64), W, int(max_depth), fx, fr, px, pr,
                     flag, ens.children_left, ens.children_right, ens.feature,
                     ens.threshold, ens.mode, ens.missing, ens.default_left, ens.cat_offsets,
                     ens.cat_values, phi)
    return phi
