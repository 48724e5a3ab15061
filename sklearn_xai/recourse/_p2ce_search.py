"""Best-first branch and bound of P2CE for one query.

Levels are the searchable features (mutable, more than one candidate) in the fitted
order; a node assigns the first ``t`` of them, every later feature keeps the query's
value. Popping the node with the largest predicted probability (ties: the newest), its
children set level ``t`` to each candidate, nearest first, and go through, in order:

1. **dominance**: a child whose cost vector is weakly dominated by a found solution is
   dropped, and so is every later candidate of the same feature whose per-feature cost
   parts (distance, change flag, percentile shift) are all at least as large (its
   costs, and its descendants' costs, can only be larger);
2. **validity and plausibility**: a valid child (``f >= threshold``) that is an inlier
   (or any valid child when plausibility is off) joins the front, and blocks the later
   candidates like (1); a valid outlier is counted and expanded further;
3. **leaf** of the level order, and the **change budget** (a child with ``max_changes``
   changes is tested by (2) but never expanded);
4. **probability bound**: drop the child when the largest probability any completion
   can reach is below the threshold;
5. **plausibility look-ahead**: drop the child when even the largest reachable mean path
   length of the isolation forest scores as an outlier.

With an exact bound (or none) the returned front holds every Pareto-optimal cost vector
of the valid, plausible grid points with at most ``max_changes`` changes (one point per
cost vector): rules 1-5 only drop points whose costs are weakly dominated by a kept
solution or that cannot be valid plausible points.
"""

import heapq
import time

import numpy as np

from ._p2ce_grid import costs_from_parts
from ._p2ce_kernels import weakly_dominated


class QueryResult:
    """Front of one query (internal encoding) and the search counters."""

    def __init__(self, points, costs, proba, complete, counters):
        self.points = points
        self.costs = costs
        self.proba = proba
        self.complete = complete
        self.counters = counters


def _weakly_dominated(F, c):
    c = np.atleast_2d(c)
    if F.shape[0] == 0:
        return np.zeros(c.shape[0], dtype=bool)
    return weakly_dominated(F, np.ascontiguousarray(c, dtype=np.float64))


def search_query(x, values, contrib, order, *, grid, objectives, predict, threshold,
                 max_changes, iso, plausibility, bound, phi_x, deadline):
    """Run the search for query ``x`` (see the module docstring).

    Parameters
    ----------
    x : ndarray (d,)
    values, contrib : lists from :meth:`FeatureGrid.candidates`
    order : list of int
        Searchable features, level order.
    predict : callable
        ``(n, d) -> (n,)`` probability of the desired class.
    iso : FlatIsolationForest
    bound : object with ``upper`` or None
    deadline : float or None
        ``time.perf_counter()`` value after which the search stops (front may be partial).
    """
    d = len(x)
    n_levels = len(order)
    counters = {"nodes_expanded": 0, "model_rows": 0, "pruned_dominance": 0, "pruned_budget": 0,
                    "pruned_bound": 0, "pruned_plausibility": 0, "valid_outliers": 0}
    n_cand = np.array([len(v) for v in values], dtype=np.int64)
    m = int(n_cand.max())
    cand = np.zeros((d, m))
    for j in range(d):
        cand[j, : n_cand[j]] = values[j]
    iso_prepared = iso.prepare(cand, n_cand) if plausibility else None
    bound_prepared = bound.prepare(cand, n_cand) if hasattr(bound, "prepare") else None
    # per-feature cost parts of the query's own value are 0; keep running parts per node
    F = np.zeros((0, len(objectives)))
    front_pts, front_f = [], []

    def parts_of(P, base_parts, j, cj):
        delta, changed, pct = (np.repeat(b[None, :], P.shape[0], axis=0) for b in base_parts)
        delta[:, j] = cj[:, 0]
        changed[:, j] = cj[:, 1]
        pct[:, j] = cj[:, 2]
        return delta, changed, pct

    def add_solution(p, c, fv):
        nonlocal F
        if F.shape[0]:
            strictly = np.all(c[None, :] <= F, axis=1) & np.any(c[None, :] < F, axis=1)
            keep = ~strictly
            F = F[keep]
            kept = np.flatnonzero(keep)
            front_pts[:] = [front_pts[i] for i in kept]
            front_f[:] = [front_f[i] for i in kept]
        F = np.vstack([F, c[None, :]])
        front_pts.append(p.copy())
        front_f.append(fv)

    zero_parts = (np.zeros(d), np.zeros(d), np.zeros(d))
    f_root = float(predict(x[None, :])[0])
    counters["model_rows"] += 1
    root_cost = costs_from_parts(objectives, *(p[None, :] for p in zero_parts))[0]
    complete = True
    if f_root >= threshold and (not plausibility or bool(iso.is_inlier(x[None, :])[0])):
        add_solution(x, root_cost, f_root)
        n_levels = 0
    is_open_base = np.zeros(d, dtype=bool)
    is_open_base[list(order)] = True
    heap = []
    counter = 0
    if n_levels:
        heap.append((-f_root, 0, x.copy(), 0, 0, zero_parts, root_cost))
    # covers[j][i, k]: candidate i's cost parts are all >= candidate k's, so blocking k
    # blocks i (computed once per feature)
    covers = {}
    while heap:
        if deadline is not None and time.perf_counter() > deadline:
            complete = False
            break
        neg_f, _, s, t, c, sparts, s_cost = heapq.heappop(heap)
        if _weakly_dominated(F, s_cost)[0]:
            counters["pruned_dominance"] += 1
            continue
        counters["nodes_expanded"] += 1
        j = order[t]
        vals = values[j]
        cj = contrib[j]
        if j not in covers:
            covers[j] = np.all(cj[:, None, :] >= cj[None, :, :], axis=2)
        cov = covers[j]
        P = np.repeat(s[None, :], len(vals), axis=0)
        P[:, j] = vals
        parts = parts_of(P, sparts, j, cj)
        C = costs_from_parts(objectives, *parts)
        dom = _weakly_dominated(F, C)
        fP = np.full(len(vals), np.nan)
        need = ~dom
        need[0] = False  # the query's own value: the child is the node itself
        fP[0] = -neg_f
        if need.any():
            fP[need] = predict(P[need])
            counters["model_rows"] += int(need.sum())
        inl_cache = {}

        def inlier(i):
            if not plausibility:
                return True
            if i not in inl_cache:
                inl_cache[i] = bool(iso.is_inlier(P[i : i + 1])[0])
            return inl_cache[i]

        is_open = is_open_base.copy()
        is_open[list(order[: t + 1])] = False
        blocked = np.zeros(len(vals), dtype=bool)
        any_blocked = False
        for i in range(len(vals)):
            cv = cj[i]
            if any_blocked and (cov[i] & blocked).any():
                continue
            if dom[i] or _weakly_dominated(F, C[i])[0]:
                counters["pruned_dominance"] += 1
                blocked[i] = any_blocked = True
                continue
            fv = fP[i]
            if fv >= threshold:
                if inlier(i):
                    add_solution(P[i], C[i], fv)
                    blocked[i] = any_blocked = True
                    continue
                counters["valid_outliers"] += 1
            if t + 1 >= n_levels:
                continue
            c2 = c + int(cv[1] > 0)
            if c2 >= max_changes:
                counters["pruned_budget"] += 1
                continue
            if bound is not None:
                ub = bound.upper(P[i], is_open, cand, n_cand, threshold, f_value=fv,
                                 phi_x=phi_x, budget=max_changes - c2,
                                 prepared=bound_prepared)
                if ub < threshold:
                    counters["pruned_bound"] += 1
                    continue
            if plausibility and not inlier(i):
                possible, _ = iso.may_have_inlier(P[i], is_open, iso_prepared)
                if not possible:
                    counters["pruned_plausibility"] += 1
                    continue
            counter += 1
            child_parts = tuple(p[i].copy() for p in parts)
            heapq.heappush(heap, (-fv, -counter, P[i].copy(), t + 1, c2, child_parts,
                                  C[i].copy()))
    if front_pts:
        pts = np.vstack(front_pts)
        pro = np.asarray(front_f)
        idx = np.lexsort(F.T[::-1])
        pts, costs_, pro = pts[idx], F[idx], pro[idx]
    else:
        pts = np.zeros((0, d))
        costs_ = np.zeros((0, len(objectives)))
        pro = np.zeros(0)
    return QueryResult(pts, costs_, pro, complete, counters)
