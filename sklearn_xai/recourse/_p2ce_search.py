"""Best-first branch and bound of P2CE for one query.

Levels are the searchable features (mutable, more than one candidate) in the fitted
order; a node assigns the first ``t`` of them, every later feature keeps the query's
value. The score of a point is the desired class's probability (the largest one with
several desired classes; ``-dist(prediction, desired_range)`` for a regressor, with
threshold 0), called "probability" below. Popping the node with the largest predicted
probability (ties: the newest), its children set level ``t`` to each candidate, nearest
first, and go through, in order:

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

A point is held twice: its values (internal encoding, for the isolation forest and the
model) and its candidate indices (``index[j]`` into feature ``j``'s candidate list, for
the per-query model reconstructions of :mod:`._p2ce_models`).
"""

import heapq
import time
from dataclasses import dataclass, field

import numpy as np

from ._p2ce_grid import costs_from_parts
from ._p2ce_kernels import weakly_dominated

COUNTERS = ("nodes_expanded", "model_rows", "pruned_dominance", "pruned_budget",
            "pruned_bound", "pruned_plausibility", "valid_outliers")


class QueryResult:
    """Front of one query (internal encoding) and the search counters."""

    def __init__(self, points, costs, proba, complete, counters):
        self.points = points
        self.costs = costs
        self.proba = proba
        self.complete = complete
        self.counters = counters
        self.seconds = 0.0


@dataclass(eq=False)
class SearchNode:
    """A partial counterfactual: the first ``level`` searched features are assigned
    (compared and hashed by identity)."""

    point: np.ndarray  # values, shape (d,)
    index: np.ndarray  # candidate index per feature, shape (d,)
    level: int
    n_changes: int
    parts: np.ndarray  # per-feature cost parts (delta, changed, percentile shift), (3, d)
    cost: np.ndarray  # cost vector under the objectives
    proba: float  # predicted probability of the desired class


class ParetoFront:
    """Kept solutions, one per non-dominated cost vector (ties: the first found)."""

    def __init__(self, n_objectives, n_features):
        self.version = 0  # changes whenever a solution is added
        self.costs = np.zeros((0, n_objectives))
        self.points = []
        self.proba = []
        self.n_features = n_features

    def dominates(self, C):
        """Whether each row of ``C`` is weakly dominated by a kept solution, (n,) bool."""
        C = np.ascontiguousarray(np.atleast_2d(C), dtype=np.float64)
        if self.costs.shape[0] == 0:
            return np.zeros(C.shape[0], dtype=bool)
        return weakly_dominated(self.costs, C)

    def add(self, point, cost, proba):
        """Keep ``point``; drop the kept solutions its costs strictly dominate."""
        if self.costs.shape[0]:
            beaten = (np.all(cost[None, :] <= self.costs, axis=1)
                      & np.any(cost[None, :] < self.costs, axis=1))
            keep = np.flatnonzero(~beaten)
            self.costs = self.costs[keep]
            self.points = [self.points[i] for i in keep]
            self.proba = [self.proba[i] for i in keep]
        self.costs = np.vstack([self.costs, cost[None, :]])
        self.version += 1
        self.points.append(point.copy())
        self.proba.append(float(proba))

    def sorted(self):
        """``(points, costs, proba)`` ordered lexicographically by cost."""
        if not self.points:
            return (np.zeros((0, self.n_features)), self.costs.copy(), np.zeros(0))
        idx = np.lexsort(self.costs.T[::-1])
        return (np.vstack(self.points)[idx], self.costs[idx],
                np.asarray(self.proba)[idx])


@dataclass(order=True)
class _Entry:
    """Open-list entry: the largest probability first, then the newest."""

    key: tuple
    node: SearchNode = field(compare=False)


@dataclass
class QueryProblem:
    """Everything the search needs about one query.

    Attributes
    ----------
    x : ndarray (d,)
    values, contrib : lists from :meth:`FeatureGrid.candidates`
    order : list of int
        Searchable features, level order.
    predict : callable
        ``(P, index) -> (n,)`` score (probability of the desired class) of points given
        by their values ``P`` and candidate indices ``index``.
    bound : object with ``upper(point, index, is_open, threshold, *, f_value, budget)``
        or None.
    iso : FlatIsolationForest or None
        None when plausibility is off.
    deadline : float or None
        ``time.perf_counter()`` value after which no further node is expanded (the
        search then returns what it found, marked incomplete); None: no limit.
    score_ahead : int
        With ``score_ahead > 0``, a model call made for a node's children also scores the
        children of up to ``score_ahead`` open nodes near the top of the open list, kept
        until those nodes are expanded (for a ``predict`` whose cost is mostly per call,
        such as a scikit-learn model on a DataFrame). The search's decisions, and so its
        front and counters other than ``model_rows``, are those without it: only the
        calls are fewer (see :meth:`_Search._scores`).
    """

    x: np.ndarray
    values: list
    contrib: list
    order: list
    objectives: tuple
    predict: object
    threshold: float
    max_changes: int
    bound: object = None
    iso: object = None
    deadline: float = None
    score_ahead: int = 0


class _Search:
    """The branch and bound of one :class:`QueryProblem` (see the module docstring)."""

    def __init__(self, problem):
        self.pb = problem
        self.d = len(problem.x)
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.front = ParetoFront(len(problem.objectives), self.d)
        n_cand = np.array([len(v) for v in problem.values], dtype=np.int64)
        cand = np.zeros((self.d, int(n_cand.max())))
        for j, v in enumerate(problem.values):
            cand[j, : len(v)] = v
        self.iso_prepared = problem.iso.prepare(cand, n_cand) if problem.iso else None
        # the features still open below a node of each level (shared by its nodes)
        self.open_below = []
        is_open = np.zeros(self.d, dtype=bool)
        is_open[list(problem.order)] = True
        for j in problem.order:
            is_open = is_open.copy()
            is_open[j] = False
            self.open_below.append(is_open)
        # feature -> (cover, changes): cover[:, k] whether each candidate's parts are all
        # >= candidate k's; changes[i] whether candidate i changes the feature
        self.features = {}
        self.heap = []
        self.seq = 0
        # node -> its children's scores, NaN where not scored: scored ahead
        self.scored = {}

    def _push(self, node):
        self.seq += 1
        heapq.heappush(self.heap, _Entry((-node.proba, -self.seq), node))

    def _inlier(self, P):
        return self.pb.iso is None or bool(self.pb.iso.is_inlier(P[None, :])[0])

    def _root(self):
        pb = self.pb
        zeros = np.zeros((3, self.d))
        index = np.zeros(self.d, dtype=np.int64)
        f = float(pb.predict(pb.x[None, :], index[None, :])[0])
        self.counters["model_rows"] += 1
        cost = costs_from_parts(pb.objectives, *zeros[:, None, :])[0]
        return SearchNode(pb.x.copy(), index, 0, 0, zeros, cost, f)

    def run(self):
        pb = self.pb
        root = self._root()
        if root.proba >= pb.threshold and self._inlier(root.point):
            self.front.add(root.point, root.cost, root.proba)
        elif pb.order:
            self._push(root)
        complete = True
        while self.heap:
            if pb.deadline is not None and time.perf_counter() > pb.deadline:
                complete = False
                break
            node = heapq.heappop(self.heap).node
            if self.front.dominates(node.cost)[0]:
                self.counters["pruned_dominance"] += 1
                self.scored.pop(node, None)
                continue
            self.counters["nodes_expanded"] += 1
            self._expand(node)
        points, costs, proba = self.front.sorted()
        return QueryResult(points, costs, proba, complete, self.counters)

    def _children(self, node):
        """Values, indices, per-feature parts and costs of ``node``'s children (its
        level's feature ``j`` set to each candidate)."""
        pb = self.pb
        j = pb.order[node.level]
        vals, cj = pb.values[j], pb.contrib[j]
        n = len(vals)
        P = np.repeat(node.point[None, :], n, axis=0)
        P[:, j] = vals
        index = np.repeat(node.index[None, :], n, axis=0)
        index[:, j] = np.arange(n)
        parts = np.repeat(node.parts[:, None, :], n, axis=1)        # (3, n, d)
        parts[:, :, j] = cj.T
        return P, index, parts, costs_from_parts(pb.objectives, *parts)

    def _expand(self, node):
        pb = self.pb
        j = pb.order[node.level]
        if j not in self.features:
            cj = pb.contrib[j]
            self.features[j] = (np.all(cj[:, None, :] >= cj[None, :, :], axis=2),
                                (cj[:, 1] > 0).tolist())
        cover, changes = self.features[j]
        P, index, parts, C = self._children(node)
        n = len(P)
        dominated = self.front.dominates(C)
        checked_at = self.front.version
        proba = np.full(n, -np.inf)
        need = _unscored(dominated)
        proba[0] = node.proba
        ahead = self.scored.pop(node, None)
        if need.any():
            proba[need] = self._scores(P, index, need, ahead)
        valid = (proba >= pb.threshold) & ~dominated
        inlier = valid.copy()
        if pb.iso is not None and valid.any():
            inlier[valid] = pb.iso.is_inlier(P[valid])
        is_open = self.open_below[node.level]
        last_level = node.level + 1 >= len(pb.order)
        # covered[i]: a blocked candidate's parts are all <= candidate i's
        covered = np.zeros(n, dtype=bool)
        dominated_, valid_, inlier_ = dominated.tolist(), valid.tolist(), inlier.tolist()
        todo = []  # (child, its number of changes) for rules 4 and 5
        for i in range(n):
            if covered[i]:
                continue
            if dominated_[i] or (self.front.version != checked_at
                                 and self.front.dominates(C[i])[0]):
                self.counters["pruned_dominance"] += 1
                covered |= cover[:, i]
                continue
            if valid_[i]:
                if inlier_[i]:
                    self.front.add(P[i], C[i], proba[i])
                    covered |= cover[:, i]
                    continue
                self.counters["valid_outliers"] += 1
            if last_level:
                continue
            n_changes = node.n_changes + changes[i]
            if n_changes >= pb.max_changes:
                self.counters["pruned_budget"] += 1
                continue
            todo.append((i, n_changes))
        # the front no longer changes at this node: rules 4 and 5, and the pushes, in
        # the children's order as above
        for i, n_changes in todo:
            if not self._reachable(P[i], index[i], is_open, proba[i],
                                   pb.max_changes - n_changes, valid_[i]):
                continue
            self._push(SearchNode(P[i].copy(), index[i].copy(), node.level + 1, n_changes,
                                  parts[:, i].copy(), C[i].copy(), float(proba[i])))

    def _scores(self, P, index, need, ahead=None):
        """Scores of a node's children ``need`` (rows of ``P``, ``index``).

        From ``ahead`` (the node's children scored ahead, NaN where not scored) when it
        holds them all, else from one model call that, with ``score_ahead``, also scores
        the children of up to ``score_ahead`` open nodes near the top of the open list
        (those no found solution dominates: a child dominated now stays dominated, as the
        front only gains points that dominate what they replace, so a node's later
        ``need`` is among them). As long as a row's score does not depend on the other
        rows of its call, the search decides as without scoring ahead.
        """
        pb = self.pb
        if ahead is not None and not np.isnan(ahead[need]).any():
            return ahead[need]
        rows, idx, others = [P[need]], [index[need]], []
        for entry in self.heap[: pb.score_ahead]:
            other = entry.node
            if other in self.scored:
                continue
            P2, index2, _, C2 = self._children(other)
            need2 = _unscored(self.front.dominates(C2))
            rows.append(P2[need2])
            idx.append(index2[need2])
            others.append((other, need2))
        f = np.asarray(pb.predict(np.concatenate(rows), np.concatenate(idx)), dtype=np.float64)
        self.counters["model_rows"] += len(f)
        at = len(rows[0])
        for other, need2 in others:
            ahead = np.full(len(need2), np.nan)
            k = int(need2.sum())
            ahead[need2] = f[at : at + k]
            at += k
            self.scored[other] = ahead
        return f[: len(rows[0])]

    def _reachable(self, point, index, is_open, proba, budget, valid):
        """Rules 4 and 5: can some completion still be valid and plausible?

        A valid point is its own valid completion (no bound needed); the look-ahead
        answers at once for an inlier (its own path lengths are a lower bound).
        """
        pb = self.pb
        if pb.bound is not None and not valid:
            ub = pb.bound.upper(point, index, is_open, pb.threshold, f_value=proba,
                                budget=budget)
            if ub < pb.threshold:
                self.counters["pruned_bound"] += 1
                return False
        if pb.iso is not None:
            possible, _ = pb.iso.may_have_inlier(point, is_open, self.iso_prepared)
            if not possible:
                self.counters["pruned_plausibility"] += 1
                return False
        return True


def _unscored(dominated):
    """The children a node needs scores of: those no solution dominates, but the first
    (the query's own value: that child is the node itself, whose score is known)."""
    need = ~dominated
    need[0] = False
    return need


def search_query(problem):
    """Run the search of one :class:`QueryProblem`; returns a :class:`QueryResult`."""
    return _Search(problem).run()
