"""Numba kernels of the P2CE search: point sums and exact reachable maxima over a forest.

Both the isolation forest (leaf value = path length) and a tree ensemble (leaf value =
margin contribution of the explained class) are held in the flat format of
:mod:`sklearn_xai.tree._ensemble` plus one leaf value per node. The routing of a value at
a node is the format's own (``_go_left``), so numeric (float32 / float64, ``<`` / ``<=``)
and categorical splits are all handled the same way.

Reachable maximum
-----------------
A partial counterfactual fixes some features (``is_open[j] == False``: the value
``point[j]``) and leaves the others open: each may take any value of its candidate list
``cand[j, :n_cand[j]]``. For one tree, the largest leaf value that some completion
reaches is found by a depth-first search that carries, per open feature, the set of its
candidates still consistent with the path (a boolean row), and skips every subtree whose
largest leaf value (``sub_max``) cannot beat the best leaf found so far. The result is
exact over the discrete grid (it ignores the change budget, so it is an upper bound of the
budgeted maximum). Trees are summed in order in float64, so with every feature fixed the
kernel returns exactly the sum of the reached leaf values in tree order.
"""

import numpy as np
from numba import njit

from ..tree._ensemble import _go_left


@njit(cache=True)
def subtree_max(tree_offsets, children_left, children_right, leaf_value):
    """Largest leaf value below every node, shape (n_nodes,)."""
    n = len(children_left)
    out = np.empty(n)
    # children have larger global indices than their parent in every parser's layout is
    # not guaranteed, so use an explicit post-order per tree.
    stack = np.empty(n + 1, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    for t in range(len(tree_offsets) - 1):
        top = 0
        stack[0] = tree_offsets[t]
        k = 0
        while top >= 0:
            node = stack[top]
            top -= 1
            order[k] = node
            k += 1
            if children_left[node] >= 0:
                top += 1
                stack[top] = children_left[node]
                top += 1
                stack[top] = children_right[node]
        for i in range(k - 1, -1, -1):
            node = order[i]
            if children_left[node] < 0:
                out[node] = leaf_value[node]
            else:
                a = out[children_left[node]]
                b = out[children_right[node]]
                out[node] = a if a > b else b
    return out


@njit(cache=True)
def tree_depth(tree_offsets, children_left, children_right):
    """Maximum depth (edges) over all trees."""
    n = len(children_left)
    stack = np.empty(n + 1, dtype=np.int64)
    dep = np.empty(n + 1, dtype=np.int64)
    best = 0
    for t in range(len(tree_offsets) - 1):
        top = 0
        stack[0] = tree_offsets[t]
        dep[0] = 0
        while top >= 0:
            node = stack[top]
            d = dep[top]
            top -= 1
            if d > best:
                best = d
            if children_left[node] >= 0:
                top += 1
                stack[top] = children_left[node]
                dep[top] = d + 1
                top += 1
                stack[top] = children_right[node]
                dep[top] = d + 1
    return best


@njit(cache=True)
def forest_sum_points(X, tree_offsets, children_left, children_right, feature, threshold,
                      mode, missing, default_left, cat_offsets, cat_values, leaf_value):
    """Sum over trees (in order, from 0.0) of the reached leaf value, shape (n,)."""
    n = X.shape[0]
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for t in range(len(tree_offsets) - 1):
            node = tree_offsets[t]
            while children_left[node] >= 0:
                if _go_left(node, X[i, feature[node]], threshold, mode, missing, default_left,
                            cat_offsets, cat_values):
                    node = children_left[node]
                else:
                    node = children_right[node]
            s += leaf_value[node]
        out[i] = s
    return out


@njit(cache=True)
def forest_max_reach(tree_offsets, children_left, children_right, feature, threshold, mode,
                     missing, default_left, cat_offsets, cat_values, leaf_value, sub_max,
                     root_suffix, is_open, point, cand, n_cand, cutoff, stop_above, max_depth):
    """Sum over trees of the largest leaf value reachable by some completion.

    Parameters
    ----------
    is_open : bool (d,)
    point : float64 (d,)
        Values of the fixed features; the open entries hold one admissible completion
        (used for the lower bound of ``stop_above``).
    cand : float64 (d, m)
        Candidate values of every open feature, ``n_cand[j]`` used.
    root_suffix : float64 (T + 1,)
        ``root_suffix[t] = sum of sub_max[root] over trees t..T-1``.
    cutoff : float
        Early exit: as soon as the running sum plus ``root_suffix`` of the remaining trees
        falls below ``cutoff``, that (still valid) upper bound is returned. Pass ``-inf``
        for the exact sum.
    stop_above : float
        Early exit the other way: as soon as the running sum plus the leaf values that
        ``point`` itself reaches in the remaining trees (a lower bound) is at least
        ``stop_above``, that lower bound is returned. Pass ``inf`` for the exact sum.
    max_depth : int
        Largest tree depth (sizes the explicit stack).

    Returns
    -------
    float
        The exact reachable maximum, or an upper bound of it that is below ``cutoff``, or a
        lower bound of it that is at least ``stop_above``.
    """
    d = len(is_open)
    m = cand.shape[1]
    allowed = np.ones((d, m), dtype=np.bool_)
    depth = max_depth + 2
    f_node = np.empty(depth, dtype=np.int64)
    f_phase = np.empty(depth, dtype=np.int64)
    f_first = np.empty(depth, dtype=np.int64)
    f_orig = np.empty((depth, m), dtype=np.bool_)
    f_gl = np.empty((depth, m), dtype=np.bool_)
    total = 0.0
    T = len(tree_offsets) - 1
    low_suffix = np.zeros(T + 1)
    if stop_above < np.inf:
        for t in range(T - 1, -1, -1):
            node = tree_offsets[t]
            while children_left[node] >= 0:
                if _go_left(node, point[feature[node]], threshold, mode, missing,
                            default_left, cat_offsets, cat_values):
                    node = children_left[node]
                else:
                    node = children_right[node]
            low_suffix[t] = low_suffix[t + 1] + leaf_value[node]
        if low_suffix[0] >= stop_above:
            return low_suffix[0]
    for t in range(T):
        best = -np.inf
        root = tree_offsets[t]
        top = 0
        f_node[0] = root
        f_phase[0] = 0
        while top >= 0:
            node = f_node[top]
            phase = f_phase[top]
            if phase == 0:
                if sub_max[node] <= best:
                    top -= 1
                    continue
                left = children_left[node]
                if left < 0:
                    best = leaf_value[node]
                    top -= 1
                    continue
                right = children_right[node]
                j = feature[node]
                if not is_open[j]:
                    if _go_left(node, point[j], threshold, mode, missing, default_left,
                                cat_offsets, cat_values):
                        f_node[top] = left
                    else:
                        f_node[top] = right
                    continue
                nl = 0
                nr = 0
                for i in range(n_cand[j]):
                    f_orig[top, i] = allowed[j, i]
                    g = _go_left(node, cand[j, i], threshold, mode, missing, default_left,
                                 cat_offsets, cat_values)
                    f_gl[top, i] = g
                    if allowed[j, i]:
                        if g:
                            nl += 1
                        else:
                            nr += 1
                if nl == 0 and nr == 0:
                    top -= 1
                    continue
                if nl == 0:
                    # only right is reachable: no state change needed
                    f_node[top] = right
                    continue
                if nr == 0:
                    f_node[top] = left
                    continue
                # both reachable: visit the child with the larger subtree max first
                f_first[top] = 0 if sub_max[left] >= sub_max[right] else 1
                f_phase[top] = 1
                phase = 1
            if phase == 1 or phase == 2:
                side = f_first[top] if phase == 1 else 1 - f_first[top]
                child = children_left[node] if side == 0 else children_right[node]
                f_phase[top] = phase + 1
                if sub_max[child] <= best:
                    continue
                j = feature[node]
                for i in range(n_cand[j]):
                    g = f_gl[top, i] if side == 0 else not f_gl[top, i]
                    allowed[j, i] = f_orig[top, i] and g
                top += 1
                f_node[top] = child
                f_phase[top] = 0
                continue
            # phase 3: restore and pop
            j = feature[node]
            for i in range(n_cand[j]):
                allowed[j, i] = f_orig[top, i]
            top -= 1
        total += best
        if total + root_suffix[t + 1] < cutoff:
            return total + root_suffix[t + 1]
        if total + low_suffix[t + 1] >= stop_above:
            return total + low_suffix[t + 1]
    return total


# ----------------------------------------------------------------------------------------
# Isolation forests: numeric float32 splits only, so a compact node layout (one 32-byte
# row per node: threshold or leaf value, feature, left, right) and intervals of sorted
# candidates replace the general routing. Values are compared as float32(x) <= threshold,
# like scikit-learn's trees; callers pass values already rounded to float32.
# ----------------------------------------------------------------------------------------
@njit(cache=True)
def iso_sum_points(X, roots, packed):
    """Sum over trees (in order, from 0.0) of the reached leaf value, shape (n,)."""
    n = X.shape[0]
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for t in range(len(roots)):
            node = roots[t]
            while packed[node, 2] >= 0:
                if X[i, np.int64(packed[node, 1])] <= packed[node, 0]:
                    node = np.int64(packed[node, 2])
                else:
                    node = np.int64(packed[node, 3])
            s += packed[node, 0]
        out[i] = s
    return out


@njit(cache=True)
def _count_le(sv, lo, hi, thr):
    """Number of sv[lo:hi] (sorted ascending) that are <= thr, as an index lo + k."""
    a = lo
    b = hi
    while a < b:
        mid = (a + b) // 2
        if sv[mid] <= thr:
            a = mid + 1
        else:
            b = mid
    return a


@njit(cache=True)
def iso_max_reach(roots, packed, sub_max, root_suffix, is_open, point, sv, n_sv, cutoff,
                  stop_above, max_depth):
    """:func:`forest_max_reach` for a packed numeric forest.

    ``sv[j, :n_sv[j]]`` are the open feature's candidates (float32-rounded), sorted
    ascending; the set still allowed on the path is an interval of them.
    """
    d = len(is_open)
    lo = np.zeros(d, dtype=np.int64)
    hi = n_sv.copy()
    depth = max_depth + 2
    f_node = np.empty(depth, dtype=np.int64)
    f_phase = np.empty(depth, dtype=np.int64)
    f_first = np.empty(depth, dtype=np.int64)
    f_lo = np.empty(depth, dtype=np.int64)
    f_hi = np.empty(depth, dtype=np.int64)
    f_k = np.empty(depth, dtype=np.int64)
    T = len(roots)
    low_suffix = np.zeros(T + 1)
    if stop_above < np.inf:
        for t in range(T - 1, -1, -1):
            node = roots[t]
            while packed[node, 2] >= 0:
                if point[np.int64(packed[node, 1])] <= packed[node, 0]:
                    node = np.int64(packed[node, 2])
                else:
                    node = np.int64(packed[node, 3])
            low_suffix[t] = low_suffix[t + 1] + packed[node, 0]
        if low_suffix[0] >= stop_above:
            return low_suffix[0]
    total = 0.0
    for t in range(T):
        best = -np.inf
        top = 0
        f_node[0] = roots[t]
        f_phase[0] = 0
        while top >= 0:
            node = f_node[top]
            phase = f_phase[top]
            if phase == 0:
                if sub_max[node] <= best:
                    top -= 1
                    continue
                if packed[node, 2] < 0:
                    best = packed[node, 0]
                    top -= 1
                    continue
                left = np.int64(packed[node, 2])
                right = np.int64(packed[node, 3])
                j = np.int64(packed[node, 1])
                thr = packed[node, 0]
                if not is_open[j]:
                    f_node[top] = left if point[j] <= thr else right
                    continue
                k = _count_le(sv[j], lo[j], hi[j], thr)
                if k == lo[j]:
                    f_node[top] = right
                    continue
                if k == hi[j]:
                    f_node[top] = left
                    continue
                f_lo[top] = lo[j]
                f_hi[top] = hi[j]
                f_k[top] = k
                f_first[top] = 0 if sub_max[left] >= sub_max[right] else 1
                f_phase[top] = 1
                phase = 1
            if phase == 1 or phase == 2:
                side = f_first[top] if phase == 1 else 1 - f_first[top]
                child = np.int64(packed[node, 2 + side])
                f_phase[top] = phase + 1
                if sub_max[child] <= best:
                    continue
                j = np.int64(packed[node, 1])
                if side == 0:
                    lo[j] = f_lo[top]
                    hi[j] = f_k[top]
                else:
                    lo[j] = f_k[top]
                    hi[j] = f_hi[top]
                top += 1
                f_node[top] = child
                f_phase[top] = 0
                continue
            j = np.int64(packed[node, 1])
            lo[j] = f_lo[top]
            hi[j] = f_hi[top]
            top -= 1
        total += best
        if total + root_suffix[t + 1] < cutoff:
            return total + root_suffix[t + 1]
        if total + low_suffix[t + 1] >= stop_above:
            return total + low_suffix[t + 1]
    return total


@njit(cache=True)
def weakly_dominated(F, C):
    """Row ``i`` of ``C`` is weakly dominated by some row of ``F`` (all <=), shape (n,)."""
    n, k = C.shape
    out = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        for r in range(F.shape[0]):
            ok = True
            for c in range(k):
                if F[r, c] > C[i, c]:
                    ok = False
                    break
            if ok:
                out[i] = True
                break
    return out
