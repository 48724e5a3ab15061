"""Numba kernels of the P2CE search: point sums and exact reachable maxima over forests.

Two layouts, both with one leaf value per node and ``sub_max`` (the largest leaf value
below each node):

* **Candidate masks** (the model's tree ensemble). For one query every feature ``j`` has
  a candidate list (``n_cand[j]`` values); a point of the search is a vector of candidate
  indices. Every internal node stores, as a bitset over the candidates of the input
  feature it reads (``node_owner``), which candidates go left. The bitsets are computed
  once per query by the ensemble's own routing (numeric, categorical bitset, missing
  values), through any column-wise preprocessing, so the kernels only test bits and a
  one-hot encoded feature (several tree columns, one input feature) is handled like any
  other.
* **Packed numeric** (the isolation forest, ``float32(x) <= threshold`` splits): one row
  per node ``(threshold or leaf value, feature, left, right, missing goes left)``, with
  the candidates of an open feature sorted so that the set still allowed on a path is an
  interval (plus, when the query's value is missing, the missing value itself).

Reachable maximum
-----------------
A partial point fixes some features and leaves the others open: each may take any of its
candidates. For one tree, the largest leaf value some completion reaches is found by a
depth-first search that carries the candidates of each open feature still consistent with
the path and skips every subtree whose ``sub_max`` cannot beat the best leaf found so
far. The result is exact over the grid (it ignores the change budget, so it bounds the
budgeted maximum from above). Trees are summed in order in float64, so with every feature
fixed the kernels return exactly the sum of the reached leaf values in tree order.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def subtree_max(roots, children_left, children_right, leaf_value):
    """Largest leaf value below every node, shape (n_nodes,)."""
    n = len(children_left)
    out = np.full(n, -np.inf)
    stack = np.empty(n + 1, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    for t in range(len(roots)):
        top = 0
        stack[0] = roots[t]
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
def tree_depth(roots, children_left, children_right):
    """Maximum depth (edges) over the trees rooted at ``roots``."""
    n = len(children_left)
    stack = np.empty(n + 1, dtype=np.int64)
    dep = np.empty(n + 1, dtype=np.int64)
    best = 0
    for t in range(len(roots)):
        top = 0
        stack[0] = roots[t]
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


# ----------------------------------------------------------------------------------------
# candidate masks
# ----------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _bit(masks, node, i):
    return (masks[node, i >> 6] >> np.uint64(i & 63)) & np.uint64(1) != np.uint64(0)


@njit(cache=True)
def mask_sum_points(index, roots, children_left, children_right, node_owner, masks,
                    leaf_value):
    """Sum over trees (in order, from 0.0) of the leaf each row of candidate indices
    ``index`` (n, d) reaches, shape (n,)."""
    n = index.shape[0]
    out = np.zeros(n)
    for r in range(n):
        s = 0.0
        for t in range(len(roots)):
            node = roots[t]
            while children_left[node] >= 0:
                if _bit(masks, node, index[r, node_owner[node]]):
                    node = children_left[node]
                else:
                    node = children_right[node]
            s += leaf_value[node]
        out[r] = s
    return out


@njit(cache=True)
def mask_max_reach_single(roots, children_left, children_right, node_owner, masks,
                          leaf_value, sub_max, root_suffix, is_open, index, n_cand, cutoff,
                          stop_above, max_depth):
    """Largest over the open features ``j`` of :func:`mask_max_reach` with ``j`` alone
    open: a bound of the completions that change at most one open feature.

    With one feature open, a tree whose path for ``index`` does not split on it reaches
    the same leaf as ``index``: each tree is walked once, and only the open features on
    its path are explored (:func:`_tree_reach`), instead of every tree once per open
    feature. Each feature's sum runs over the trees in order, as :func:`mask_max_reach`
    sums them, so the exact values are the same to the bit. ``cutoff`` is not needed (no
    early exit below it); stops at the first feature whose value is at least
    ``stop_above`` (signature of :func:`mask_max_reach`).
    """
    d = len(is_open)
    T = len(roots)
    allowed = _candidate_bits(n_cand, masks.shape[1])
    f_node, f_phase, f_first, f_save = _walk_stack(max_depth, masks.shape[1])
    fixed = np.empty(T)
    # the open features on each tree's path (distinct: at most its depth) and each one's
    # best leaf alone open
    on_path = np.empty((T, len(f_node)), dtype=np.int64)
    reach = np.empty((T, len(f_node)))
    count = np.zeros(T, dtype=np.int64)
    alone = np.zeros(d, dtype=np.bool_)
    for t in range(T):
        node = roots[t]
        while children_left[node] >= 0:
            j = node_owner[node]
            if is_open[j]:
                seen = False
                for k in range(count[t]):
                    if on_path[t, k] == j:
                        seen = True
                        break
                if not seen:
                    on_path[t, count[t]] = j
                    count[t] += 1
            node = children_left[node] if _bit(masks, node, index[j]) else children_right[node]
        fixed[t] = leaf_value[node]
        for k in range(count[t]):
            j = on_path[t, k]
            alone[j] = True
            reach[t, k] = _tree_reach(roots[t], children_left, children_right, node_owner,
                                      masks, leaf_value, sub_max, alone, index, allowed,
                                      f_node, f_phase, f_first, f_save)
            alone[j] = False
    best = -np.inf
    for j in range(d):
        if not is_open[j]:
            continue
        total = 0.0
        for t in range(T):
            v = fixed[t]
            for k in range(count[t]):
                if on_path[t, k] == j:
                    v = reach[t, k]
            total += v
        if total > best:
            best = total
        if best >= stop_above:
            break
    return best


@njit(cache=True)
def _candidate_bits(n_cand, W):
    """(d, W) uint64: bits ``0 .. n_cand[j] - 1`` of each feature ``j``."""
    allowed = np.zeros((len(n_cand), W), dtype=np.uint64)
    for j in range(len(n_cand)):
        for i in range(n_cand[j]):
            allowed[j, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    return allowed


@njit(cache=True)
def _walk_stack(max_depth, W):
    """The explicit stack of :func:`_tree_reach` for trees of depth ``max_depth``."""
    depth = max_depth + 2
    return (np.empty(depth, dtype=np.int64), np.empty(depth, dtype=np.int64),
            np.empty(depth, dtype=np.int64), np.empty((depth, W), dtype=np.uint64))


@njit(cache=True)
def _tree_reach(root, children_left, children_right, node_owner, masks, leaf_value, sub_max,
                is_open, index, allowed, f_node, f_phase, f_first, f_save):
    """The largest leaf value of the tree at ``root`` reachable by some completion: an
    open feature ``j`` takes any candidate of its bits ``allowed[j]`` (``allowed`` (d,
    W), narrowed along the walk and restored on return), the others their ``index``.
    Depth first, the child with the larger subtree maximum first, a subtree skipped when
    its maximum cannot beat the best leaf found; ``f_*``: the walk's stack
    (:func:`_walk_stack`)."""
    W = masks.shape[1]
    best = -np.inf
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
            j = node_owner[node]
            if not is_open[j]:
                f_node[top] = left if _bit(masks, node, index[j]) else right
                continue
            any_left = False
            any_right = False
            for w in range(W):
                a = allowed[j, w]
                m = masks[node, w]
                if a & m:
                    any_left = True
                if a & ~m:
                    any_right = True
            if not any_right:
                f_node[top] = left
                continue
            if not any_left:
                f_node[top] = right
                continue
            for w in range(W):
                f_save[top, w] = allowed[j, w]
            f_first[top] = 0 if sub_max[left] >= sub_max[right] else 1
            f_phase[top] = 1
            phase = 1
        if phase == 1 or phase == 2:
            side = f_first[top] if phase == 1 else 1 - f_first[top]
            child = children_left[node] if side == 0 else children_right[node]
            f_phase[top] = phase + 1
            if sub_max[child] <= best:
                continue
            j = node_owner[node]
            for w in range(W):
                m = masks[node, w]
                allowed[j, w] = f_save[top, w] & (m if side == 0 else ~m)
            top += 1
            f_node[top] = child
            f_phase[top] = 0
            continue
        # phase 3: restore and pop
        j = node_owner[node]
        for w in range(W):
            allowed[j, w] = f_save[top, w]
        top -= 1
    return best


@njit(cache=True)
def mask_max_reach(roots, children_left, children_right, node_owner, masks, leaf_value,
                   sub_max, root_suffix, is_open, index, n_cand, cutoff, stop_above,
                   max_depth):
    """Sum over trees of the largest leaf value reachable by some completion.

    Parameters
    ----------
    is_open : bool (d,)
    index : int64 (d,)
        Candidate index of every feature; an open feature's entry is one admissible
        completion (used for the lower bound of ``stop_above``).
    n_cand : int64 (d,)
        Candidates per feature (bits ``0 .. n_cand[j] - 1`` of feature ``j``).
    root_suffix : float64 (T + 1,)
        ``root_suffix[t] = sum of sub_max[root] over trees t..T-1``.
    cutoff : float
        Early exit: as soon as the running sum plus ``root_suffix`` of the remaining trees
        falls below ``cutoff``, that (still valid) upper bound is returned. ``-inf`` for
        the exact sum.
    stop_above : float
        Early exit the other way: as soon as the running sum plus the leaf values that
        ``index`` itself reaches in the remaining trees (a lower bound) is at least
        ``stop_above``, that lower bound is returned. ``inf`` for the exact sum.
    max_depth : int
        Largest tree depth (sizes the explicit stack).

    Returns
    -------
    float
        The exact reachable maximum, or an upper bound of it below ``cutoff``, or a lower
        bound of it at least ``stop_above``.
    """
    allowed = _candidate_bits(n_cand, masks.shape[1])
    f_node, f_phase, f_first, f_save = _walk_stack(max_depth, masks.shape[1])
    T = len(roots)
    low_suffix = np.zeros(T + 1)
    if stop_above < np.inf:
        for t in range(T - 1, -1, -1):
            node = roots[t]
            while children_left[node] >= 0:
                if _bit(masks, node, index[node_owner[node]]):
                    node = children_left[node]
                else:
                    node = children_right[node]
            low_suffix[t] = low_suffix[t + 1] + leaf_value[node]
        if low_suffix[0] >= stop_above:
            return low_suffix[0]
    total = 0.0
    for t in range(T):
        best = _tree_reach(roots[t], children_left, children_right, node_owner, masks,
                           leaf_value, sub_max, is_open, index, allowed, f_node, f_phase,
                           f_first, f_save)
        total += best
        if total + root_suffix[t + 1] < cutoff:
            return total + root_suffix[t + 1]
        if total + low_suffix[t + 1] >= stop_above:
            return total + low_suffix[t + 1]
    return total


# ----------------------------------------------------------------------------------------
# packed numeric forests (isolation forest): values are compared as float32(x) <=
# threshold, like scikit-learn's trees; callers pass values already rounded to float32.
# A missing value (NaN) follows column 4 (1.0: left).
# ----------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _packed_left(packed, node, v):
    if np.isnan(v):
        return packed[node, 4] != 0.0
    return v <= packed[node, 0]


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
                if _packed_left(packed, node, X[i, np.int64(packed[node, 1])]):
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
def iso_max_reach(roots, packed, sub_max, root_suffix, is_open, point, sv, n_sv, has_nan,
                  cutoff, stop_above, max_depth):
    """:func:`mask_max_reach` for a packed numeric forest on values.

    ``sv[j, :n_sv[j]]`` are the open feature's non-missing candidates (float32-rounded),
    sorted ascending; the set still allowed on a path is an interval of them, plus the
    missing value while ``has_nan[j]`` (the query's value is missing) and every split on
    the path sent missing values that way.
    """
    d = len(is_open)
    lo = np.zeros(d, dtype=np.int64)
    hi = n_sv.copy()
    nan_ok = has_nan.copy()
    depth = max_depth + 2
    f_node = np.empty(depth, dtype=np.int64)
    f_phase = np.empty(depth, dtype=np.int64)
    f_first = np.empty(depth, dtype=np.int64)
    f_lo = np.empty(depth, dtype=np.int64)
    f_hi = np.empty(depth, dtype=np.int64)
    f_k = np.empty(depth, dtype=np.int64)
    f_nan = np.empty(depth, dtype=np.bool_)
    T = len(roots)
    low_suffix = np.zeros(T + 1)
    if stop_above < np.inf:
        for t in range(T - 1, -1, -1):
            node = roots[t]
            while packed[node, 2] >= 0:
                if _packed_left(packed, node, point[np.int64(packed[node, 1])]):
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
                if not is_open[j]:
                    f_node[top] = left if _packed_left(packed, node, point[j]) else right
                    continue
                k = _count_le(sv[j], lo[j], hi[j], packed[node, 0])
                nan_left = packed[node, 4] != 0.0
                any_left = k > lo[j] or (nan_ok[j] and nan_left)
                any_right = hi[j] > k or (nan_ok[j] and not nan_left)
                if not any_left:
                    f_node[top] = right
                    continue
                if not any_right:
                    f_node[top] = left
                    continue
                f_lo[top] = lo[j]
                f_hi[top] = hi[j]
                f_k[top] = k
                f_nan[top] = nan_ok[j]
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
                nan_left = packed[node, 4] != 0.0
                if side == 0:
                    lo[j] = f_lo[top]
                    hi[j] = f_k[top]
                    nan_ok[j] = f_nan[top] and nan_left
                else:
                    lo[j] = f_k[top]
                    hi[j] = f_hi[top]
                    nan_ok[j] = f_nan[top] and not nan_left
                top += 1
                f_node[top] = child
                f_phase[top] = 0
                continue
            j = np.int64(packed[node, 1])
            lo[j] = f_lo[top]
            hi[j] = f_hi[top]
            nan_ok[j] = f_nan[top]
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


# ----------------------------------------------------------------------------------------
# warm-up
# ----------------------------------------------------------------------------------------
_WARM = False


def warm_up():
    """Compile (or load from numba's cache) every kernel above, once per process.

    P2CE calls this before a query's search clock starts, so that the compilation -- up to
    seconds per kernel with an empty numba cache, or the loading of a cached one -- never
    counts against ``time_limit``: a limit then stops a search only for its own work, and
    the results of a fresh process (a cold cache, a joblib worker, an unpickled explainer)
    are those of a warm one. The arguments have the types of the search's calls
    (C-contiguous, writable int64 / uint64 / float64 / bool arrays, float and int
    scalars), so no call of the search compiles anything afterwards.
    """
    global _WARM
    if _WARM:
        return
    i64 = np.int64
    # one tree: node 0 splits (candidate 0 / value 0.0 goes left) into leaves 1 and 2
    roots = np.zeros(1, dtype=i64)
    left = np.array([1, -1, -1], dtype=i64)
    right = np.array([2, -1, -1], dtype=i64)
    leaf = np.array([0.0, 1.0, 2.0])
    sub = subtree_max(roots, left, right, leaf)
    depth = int(tree_depth(roots, left, right))
    suffix = np.array([float(sub[0]), 0.0])
    owner = np.zeros(3, dtype=i64)
    masks = np.zeros((3, 1), dtype=np.uint64)
    masks[0, 0] = np.uint64(1)
    index = np.array([[0], [1]], dtype=i64)
    n_cand = np.array([2], dtype=i64)
    is_open = np.ones(1, dtype=np.bool_)
    mask_sum_points(index, roots, left, right, owner, masks, leaf)
    for kernel in (mask_max_reach, mask_max_reach_single):
        kernel(roots, left, right, owner, masks, leaf, sub, suffix, is_open,
               np.zeros(1, dtype=i64), n_cand, float(-np.inf), float(np.inf), depth)
    packed = np.array([[0.5, 0.0, 1.0, 2.0, 1.0],
                       [1.0, -1.0, -1.0, -1.0, 0.0],
                       [2.0, -1.0, -1.0, -1.0, 0.0]])
    X = np.array([[0.0], [1.0]])
    iso_sum_points(X, roots, packed)
    iso_max_reach(roots, packed, sub, suffix, is_open, np.zeros(1), np.array([[0.0, 1.0]]),
                  np.array([2], dtype=i64), np.zeros(1, dtype=np.bool_), float(-np.inf),
                  float(np.inf), depth)
    weakly_dominated(X, X)
    _WARM = True
