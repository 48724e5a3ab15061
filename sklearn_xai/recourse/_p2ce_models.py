"""Model-side pieces of P2CE: the plausibility forest, the model's reconstruction and the
probability bounds.

A bound answers: given a partial counterfactual (some features fixed, the open ones free
to take any of their candidates), how large can the desired class's probability become?

* :class:`TreeBound` (exact over the grid): per tree the largest reachable leaf value,
  summed, the link applied, from the model's :class:`~sklearn_xai.tree.FlatEnsemble`
  (numeric, categorical bitset and missing-value splits alike).
* :class:`SoftmaxTreeBound` (safe, multi-class boosting): the largest reachable margin of
  the desired class against the smallest reachable margin of every other class.
* :class:`LinearBound` (exact over the grid, with the change budget): a binary linear
  classifier is additive over the input features, ``b + sum_j g_j(x_j)``, so the best
  completion changing at most ``k`` open features adds the ``k`` largest gains.
* :class:`ShapBound` (**heuristic**, the paper's SHAP estimate): it can cut off real
  solutions.

Preprocessing. A :class:`~sklearn.pipeline.Pipeline` whose steps before the model are
column-wise (each output column a function of one input column: a
:class:`~sklearn.compose.ColumnTransformer` of one-hot and ordinal encoders, scalers,
imputers, binning and passthrough; see :func:`input_owner`) maps every input feature's
candidates to the model's columns once per query (:class:`ModelSpace`); the bounds are
then taken over the *input* grid, so the one-hot columns of a feature move together.

Every exact model works per query (``for_query``) on candidate indices: the search's
points are vectors of indices into each feature's candidate list.

The plausibility forest (:class:`FlatIsolationForest`) reproduces scikit-learn's
``IsolationForest.score_samples`` bit for bit, missing values included, and adds the
look-ahead: the largest mean path length reachable with the open features anywhere on
their candidates.
"""

import numpy as np
from scipy.special import expit

from ..base import split_pipeline
from ._p2ce_kernels import (
    iso_max_reach,
    iso_sum_points,
    mask_max_reach,
    mask_max_reach_single,
    mask_sum_points,
    subtree_max,
    tree_depth,
)

_BOUND_SLACK = 1e-9  # margin-space safety for float summation-order differences


def _apl(n):
    """Average path length of an unsuccessful BST search, as scikit-learn computes it."""
    n = np.asarray(n, dtype=np.float64)
    out = np.zeros(n.shape)
    m2 = n == 2
    big = n > 2
    out[m2] = 1.0
    out[big] = 2.0 * (np.log(n[big] - 1.0) + np.euler_gamma) - 2.0 * (n[big] - 1.0) / n[big]
    return out


def _logit(p):
    return np.log(p) - np.log1p(-p) if 0 < p < 1 else -np.inf


# ------------------------------------------------------------------------- isolation forest
class FlatIsolationForest:
    """A fitted :class:`~sklearn.ensemble.IsolationForest` as one packed node array.

    ``score_samples`` equals scikit-learn's (same leaf values, same summation order, the
    trees' own routing of missing values); a row is an inlier iff ``score_samples >=
    offset_`` (scikit-learn's ``predict``).
    """

    def __init__(self, iso):
        d = int(iso.n_features_in_)
        subsample = iso._max_features != d
        rows, roots = [], []
        base = 0
        for est, feats in zip(iso.estimators_, iso.estimators_features_):
            tr = est.tree_
            left = tr.children_left.astype(np.int64)
            right = tr.children_right.astype(np.int64)
            leaf = left < 0
            feat = tr.feature.astype(np.int64)
            if subsample:
                feat = np.where(leaf, -1, np.asarray(feats)[np.maximum(feat, 0)])
            depths = np.asarray(tr.compute_node_depths(), dtype=np.float64)
            lv = depths + _apl(tr.n_node_samples) - 1.0
            miss = getattr(tr, "missing_go_to_left", None)
            miss = np.zeros(len(left)) if miss is None else np.asarray(miss, dtype=np.float64)
            rows.append(np.column_stack([
                np.where(leaf, lv, tr.threshold), np.where(leaf, -1, feat).astype(np.float64),
                np.where(leaf, -1, left + base).astype(np.float64),
                np.where(leaf, -1, right + base).astype(np.float64), miss]))
            roots.append(base)
            base += len(left)
        self.packed = np.ascontiguousarray(np.vstack(rows))
        self.roots = np.asarray(roots, dtype=np.int64)
        left = self.packed[:, 2].astype(np.int64)
        right = self.packed[:, 3].astype(np.int64)
        leaf_value = np.where(left < 0, self.packed[:, 0], 0.0)
        self.sub_max = subtree_max(self.roots, left, right, leaf_value)
        tops = self.sub_max[self.roots]
        self.root_suffix = np.concatenate([np.cumsum(tops[::-1])[::-1], [0.0]])
        self.max_depth = int(tree_depth(self.roots, left, right))
        self.denominator = len(iso.estimators_) * float(_apl([iso._max_samples])[0])
        self.offset_ = float(iso.offset_)
        # mean path-length sum a point needs to be an inlier: -2**(-H/den) >= offset
        if self.denominator > 0 and -1.0 < self.offset_ < 0.0:
            self.cutoff = -self.denominator * np.log2(-self.offset_) - 1e-7
        else:
            self.cutoff = -np.inf

    @staticmethod
    def _cast(X):
        """``X`` rounded to float32 as the forest compares it, in float64, C-contiguous (a
        copy)."""
        return np.asarray(X, dtype=np.float64).astype(np.float32, order="C").astype(np.float64)

    def _score(self, H):
        H = np.asarray(H, dtype=np.float64)
        ratio = H / self.denominator if self.denominator != 0 else np.ones_like(H)
        return -(2.0 ** (-ratio))

    def path_sums(self, X):
        """Sum over trees of the path length (depth + average path length of the leaf)."""
        return iso_sum_points(self._cast(np.atleast_2d(X)), self.roots, self.packed)

    def score_samples(self, X):
        """scikit-learn's ``score_samples`` (higher = more normal), shape (n,)."""
        return self._score(self.path_sums(X))

    def is_inlier(self, X):
        return self.score_samples(X) >= self.offset_

    def prepare(self, cand, n_cand):
        """Per feature: sorted float32-rounded non-missing candidates, their count and
        whether the missing value is a candidate."""
        d, m = cand.shape
        sv = np.zeros((d, max(m, 1)))
        n_sv = np.zeros(d, dtype=np.int64)
        has_nan = np.zeros(d, dtype=bool)
        for j in range(d):
            v = self._cast(cand[j, : n_cand[j]])
            has_nan[j] = bool(np.isnan(v).any())
            u = np.unique(v[~np.isnan(v)])
            sv[j, : len(u)] = u
            n_sv[j] = len(u)
        return sv, n_sv, has_nan

    def max_reach(self, point, is_open, prepared, cutoff=-np.inf, stop_above=np.inf):
        """Largest reachable path-length sum (see :func:`iso_max_reach`)."""
        sv, n_sv, has_nan = prepared
        return iso_max_reach(self.roots, self.packed, self.sub_max, self.root_suffix,
                             np.asarray(is_open, dtype=bool), self._cast(point), sv, n_sv,
                             has_nan,
                             float(cutoff), float(stop_above), self.max_depth)

    def may_have_inlier(self, point, is_open, prepared):
        """False only when every completion of the partial point is an outlier.

        Returns
        -------
        possible : bool
        score_bound : float
            ``score_samples`` of the largest reachable path-length sum, or of a value on
            the same side of the inlier boundary (the kernel exits early both ways).
        """
        H = self.max_reach(point, is_open, prepared, self.cutoff, self.cutoff + 2e-7)
        s = float(self._score(np.array([H]))[0])
        return s >= self.offset_, s


# ------------------------------------------------------------------------- preprocessing
def _one_to_one_types():
    from sklearn.preprocessing import (
        MaxAbsScaler,
        MinMaxScaler,
        OrdinalEncoder,
        RobustScaler,
        StandardScaler,
    )

    return (OrdinalEncoder, StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler)


def _step_owner(step, n_in):
    """Input column of every output column of a fitted column-wise step, or None.

    Steps are recognised by their exact class (:func:`sklearn_xai._pipeline.is_known_step`,
    the rule TreeSHAP and the base share): a subclass may override ``transform`` and mix
    columns, so it is not known to be column-wise.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer, KBinsDiscretizer, OneHotEncoder

    from .._pipeline import is_known_step
    from .._utils import unwrap_frozen

    step = unwrap_frozen(step)
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return np.arange(n_in)
    if is_known_step(step, FunctionTransformer) and step.func is None:
        return np.arange(n_in)  # identity (a ColumnTransformer's fitted "passthrough")
    if is_known_step(step, Pipeline):
        return input_owner(step, n_in)
    if is_known_step(step, ColumnTransformer):
        to_in = getattr(step, "_transformer_to_input_indices", None)
        out_idx = getattr(step, "output_indices_", None)
        if to_in is None or out_idx is None:
            return None
        n_out = max((s.stop for s in out_idx.values()), default=0)
        owner = np.full(n_out, -1, dtype=np.int64)
        for name, trans, _ in step.transformers_:
            sl = out_idx.get(name)
            if sl is None or sl.stop == sl.start:
                continue
            ins = np.asarray(to_in[name], dtype=np.int64)
            sub = _step_owner(trans, len(ins))
            if sub is None or len(sub) != sl.stop - sl.start:
                return None
            owner[sl] = ins[sub]
        return owner if np.all(owner >= 0) else None
    if is_known_step(step, OneHotEncoder):
        counts = getattr(step, "_n_features_outs", None)
        if counts is None or len(counts) != n_in:
            return None
        return np.repeat(np.arange(n_in), np.asarray(counts, dtype=np.int64))
    if is_known_step(step, KBinsDiscretizer):
        if step.encode == "ordinal":
            return np.arange(n_in)
        return np.repeat(np.arange(n_in), np.asarray(step.n_bins_, dtype=np.int64))
    if is_known_step(step, SimpleImputer):
        if step.add_indicator:
            return None
        if getattr(step, "keep_empty_features", False):
            return np.arange(n_in)
        import pandas as pd

        return np.flatnonzero(~pd.isna(np.asarray(step.statistics_, dtype=object)))
    if is_known_step(step, _one_to_one_types()):
        return np.arange(n_in)
    return None


def input_owner(prefix, n_in):
    """Input feature behind every column a pipeline prefix outputs, or None.

    Parameters
    ----------
    prefix : Pipeline or None
        The steps in front of the model (``None``: the model takes the inputs as they are).
    n_in : int
        Input features.

    Returns
    -------
    ndarray of int64 or None
        ``None`` when some step is not known to be column-wise.
    """
    from sklearn.pipeline import Pipeline

    from .._pipeline import is_known_step
    from .._utils import unwrap_frozen

    owner = np.arange(n_in)
    prefix = unwrap_frozen(prefix)
    if prefix is None:
        return owner
    if not is_known_step(prefix, Pipeline):
        sub = _step_owner(prefix, n_in)
        return None if sub is None else owner[sub]
    for _, step in prefix.steps:
        sub = _step_owner(step, len(owner))
        if sub is None:
            return None
        owner = owner[sub]
    return owner


class ModelSpace:
    """Model inputs -> the numeric columns the model's trees or coefficients read: the
    pipeline's steps before the model, then the model's own input encoding (a
    HistGradientBoosting model's categorical encoder). ``owner[c]``: the input feature of
    column ``c``."""

    def __init__(self, prefix, final_transform, owner):
        self.prefix = prefix
        self.final_transform = final_transform
        self.owner = np.asarray(owner, dtype=np.int64)

    def __call__(self, model_input):
        X = model_input
        if self.prefix is not None:
            X = self.prefix.transform(X)
        if self.final_transform is not None:
            X = self.final_transform(X)
        if hasattr(X, "toarray"):
            X = X.toarray()
        return np.ascontiguousarray(np.asarray(X, dtype=np.float64))


def check_columnwise(space, to_input, Z, seed=0):
    """Whether ``space`` maps each column from its owner alone, checked numerically.

    The rows of ``Z`` are shuffled independently per column; every output column of the
    shuffled rows must equal the output column of the rows its owner's values came from.
    """
    rng = np.random.default_rng(seed)
    n, d = Z.shape
    perms = np.stack([rng.permutation(n) for _ in range(d)], axis=1)
    Zs = Z[perms, np.arange(d)[None, :]]
    try:
        T = space(to_input(Z))
        Ts = space(to_input(Zs))
    except Exception:  # noqa: BLE001 - a transform that fails is not usable
        return False
    if T.shape != (n, len(space.owner)) or Ts.shape != T.shape:
        return False
    expected = T[perms[:, space.owner], np.arange(T.shape[1])[None, :]]
    same = (Ts == expected) | (np.isnan(Ts) & np.isnan(expected))
    return bool(np.all(same))


def candidate_rows(cand, n_cand):
    """Rows ``i`` holding candidate ``i`` of every feature (candidate 0 past the end)."""
    d, m = cand.shape
    cols = np.minimum(np.arange(m)[None, :], np.asarray(n_cand)[:, None] - 1)
    return np.ascontiguousarray(cand[np.arange(d)[:, None], cols].T)


# ------------------------------------------------------------------------- tree bounds
def _tree_masks(ens, table):
    """Per node, the bitset of candidates (rows of ``table``) that go left, (n_nodes, W)."""
    from ..tree import goes_left

    m = table.shape[0]
    W = max(1, -(-m // 64))
    internal = np.flatnonzero(ens.children_left >= 0)
    masks = np.zeros((ens.n_nodes, W), dtype=np.uint64)
    if len(internal) == 0:
        return masks
    vals = table[:, ens.feature[internal]].T
    gl = goes_left(ens, internal[:, None], vals)
    bits = np.zeros((len(internal), W * 64), dtype=bool)
    bits[:, :m] = gl
    packed = np.packbits(bits, axis=1, bitorder="little")
    masks[internal] = np.ascontiguousarray(packed).view("<u8").astype(np.uint64)
    return masks


class _MaskForest:
    """The trees rooted at ``roots`` of an ensemble with one leaf value per node."""

    def __init__(self, ens, roots, leaf_value):
        self.roots = np.ascontiguousarray(roots, dtype=np.int64)
        self.left = ens.children_left
        self.right = ens.children_right
        self.leaf_value = np.ascontiguousarray(leaf_value, dtype=np.float64)
        self.sub_max = subtree_max(self.roots, self.left, self.right, self.leaf_value)
        tops = self.sub_max[self.roots]
        self.root_suffix = np.concatenate([np.cumsum(tops[::-1])[::-1], [0.0]])
        self.max_depth = int(tree_depth(self.roots, self.left, self.right))

    def sum_points(self, index, node_owner, masks):
        return mask_sum_points(np.ascontiguousarray(index, dtype=np.int64), self.roots,
                               self.left, self.right, node_owner, masks, self.leaf_value)

    def max_reach(self, index, is_open, n_cand, node_owner, masks, cutoff=-np.inf,
                  stop_above=np.inf, single=False):
        """Largest reachable sum of leaf values; ``single``: the largest over the open
        features of the sum with that feature alone open."""
        kernel = mask_max_reach_single if single else mask_max_reach
        return kernel(self.roots, self.left, self.right, node_owner, masks,
                      self.leaf_value, self.sub_max, self.root_suffix, is_open,
                      np.ascontiguousarray(index, dtype=np.int64), n_cand, float(cutoff),
                      float(stop_above), self.max_depth)


class _TreeModel:
    """Shared part of the tree reconstructions: the ensemble and its input owners."""

    kind = "exact"

    def __init__(self, ens, owner):
        self.ens = ens
        self.owner = np.asarray(owner, dtype=np.int64)
        internal = ens.children_left >= 0
        self.node_owner = np.where(internal, self.owner[np.maximum(ens.feature, 0)], 0)

    def _query_masks(self, table):
        return _tree_masks(self.ens, table)


class TreeBound(_TreeModel):
    """Exact reachable maximum of a tree ensemble's desired-class probability.

    Parameters
    ----------
    ens : FlatEnsemble
    column : int
        The output (value column) of the desired class; ignored for a single-output
        ensemble (``sign=-1`` then explains its first class).
    sign : float
    link : {"logistic", "identity"}
    owner : ndarray of int
        Input feature of every ensemble column.
    """

    def __init__(self, ens, column, sign, link, owner):
        super().__init__(ens, owner)
        single = ens.value.shape[1] == 1
        if single and np.any((ens.tree_output != 0) & (ens.tree_output != -1)):
            raise ValueError("tree bound needs a single-output ensemble")
        self.column = 0 if single else int(column)
        self.sign = float(sign)
        self.base = self.sign * float(ens.base_score[0 if single else column])
        self.link = link
        vals = ens.value[:, self.column]
        self.forest = _MaskForest(ens, ens.tree_offsets[:-1], self.sign * vals)

    def _to_prob(self, m):
        return expit(m) if self.link == "logistic" else m

    def predict(self, T):
        """Probability of the desired class for rows in the ensemble's columns."""
        from ..tree import predict_raw

        raw = predict_raw(self.ens, T)[:, self.column if self.ens.n_outputs > 1 else 0]
        return self._to_prob(self.sign * raw)

    def for_query(self, table, n_cand):
        return _TreeQuery(self, self._query_masks(table), n_cand)


class _EnsembleQuery:
    """A tree ensemble bound fixed to one query: its node masks and candidate counts."""

    def __init__(self, model, masks, n_cand):
        self.model = model
        self.masks = masks
        self.n_cand = np.ascontiguousarray(n_cand, dtype=np.int64)


class _TreeQuery(_EnsembleQuery):
    def __init__(self, model, masks, n_cand):
        super().__init__(model, masks, n_cand)
        self._cut = {}  # threshold -> margin cut-off

    def predict(self, P, index):
        m = self.model
        return m._to_prob(m.base + m.forest.sum_points(index, m.node_owner, self.masks))

    def max_margin(self, index, is_open, cutoff=-np.inf, stop_above=np.inf, single=False):
        """Largest reachable margin (without ``base``) over the open features' candidates."""
        m = self.model
        return m.forest.max_reach(index, np.asarray(is_open, dtype=bool), self.n_cand,
                                  m.node_owner, self.masks, cutoff, stop_above, single)

    def upper(self, point, index, is_open, threshold, *, exact=False, budget=None, **_):
        """Upper bound of the probability; with ``exact=False`` it may stop early at a
        value that is only guaranteed to fall on the same side of ``threshold``.

        With ``budget=1`` at most one open feature may change, so the bound is the
        largest of the single-feature bounds (each open feature alone), a tighter one.
        """
        m = self.model
        if threshold not in self._cut:
            t = _logit(threshold) if m.link == "logistic" else threshold
            self._cut[threshold] = t - m.base - _BOUND_SLACK
        c = self._cut[threshold]
        lo, hi = (-np.inf, np.inf) if exact else (c, c + 2 * _BOUND_SLACK)
        best = self.max_margin(index, is_open, lo, hi, single=budget == 1)
        return float(m._to_prob(m.base + best + _BOUND_SLACK))


class SoftmaxTreeBound(_TreeModel):
    """Upper bound of a multi-class boosted ensemble's desired-class probability.

    The probability ``exp(f_k) / sum_j exp(f_j)`` grows with the desired class's margin
    ``f_k`` and falls with every other margin, so with ``hi_k`` the largest reachable
    ``f_k`` and ``lo_j`` the smallest reachable ``f_j`` (each exact over the grid, per tree
    summed) ``1 / (1 + sum_{j != k} exp(lo_j - hi_k))`` is never below any completion's
    probability: no solution is lost. It is not tight (the extremes may need different
    completions), so it prunes less than the binary bound.
    """

    def __init__(self, ens, column, owner):
        super().__init__(ens, owner)
        self.column = int(column)
        self.base = np.asarray(ens.base_score, dtype=np.float64)
        roots = ens.tree_offsets[:-1]
        vals = ens.value[:, 0]
        self.parts = []  # per class: (forest of f_j, forest of -f_j or None)
        for j in range(ens.n_outputs):
            r = roots[ens.tree_output == j]
            up = _MaskForest(ens, r, vals)
            down = None if j == self.column else _MaskForest(ens, r, -vals)
            self.parts.append((up, down))

    def predict(self, T):
        from ..tree import predict_raw

        raw = predict_raw(self.ens, T)
        raw = raw - raw.max(axis=1, keepdims=True)
        e = np.exp(raw)
        return e[:, self.column] / e.sum(axis=1)

    def for_query(self, table, n_cand):
        return _SoftmaxQuery(self, self._query_masks(table), n_cand)


class _SoftmaxQuery(_EnsembleQuery):
    def predict(self, P, index):
        m = self.model
        raw = np.column_stack([m.base[j] + up.sum_points(index, m.node_owner, self.masks)
                               for j, (up, _) in enumerate(m.parts)])
        raw -= raw.max(axis=1, keepdims=True)
        e = np.exp(raw)
        return e[:, m.column] / e.sum(axis=1)

    def upper(self, point, index, is_open, threshold, **_):
        m = self.model
        is_open = np.asarray(is_open, dtype=bool)
        k = m.column
        hi_k = m.base[k] + m.parts[k][0].max_reach(index, is_open, self.n_cand,
                                                   m.node_owner, self.masks)
        hi_k += _BOUND_SLACK
        total = 1.0
        for j, (_, down) in enumerate(m.parts):
            if j == k:
                continue
            lo_j = m.base[j] - down.max_reach(index, is_open, self.n_cand, m.node_owner,
                                              self.masks)
            total += np.exp(min(lo_j - _BOUND_SLACK - hi_k, 700.0))
        return float(1.0 / total)


class RangeTreeBound:
    """A tree-ensemble regressor's distance to ``[low, high]``, with its exact bound.

    The search's score of a point is ``-dist(y, [low, high])`` (0 inside the range, so a
    point is valid when its score is ``>= 0``). Per query the reachable predictions lie in
    ``[min, max]``, each the sum over trees of the smallest / largest reachable leaf
    (exact per tree, over the grid), so ``-dist([min, max], [low, high])`` is never below
    any completion's score: no solution is lost, and a node whose interval misses the
    range is pruned.

    Parameters
    ----------
    ens : FlatEnsemble
        A single-output ensemble with the identity link.
    owner : ndarray of int
        Input feature of every ensemble column.
    low, high : float
    """

    kind = "exact"

    def __init__(self, ens, owner, low, high):
        self.up = TreeBound(ens, 0, 1.0, "identity", owner)
        self.down = TreeBound(ens, 0, -1.0, "identity", owner)
        self.low, self.high = float(low), float(high)

    def score(self, y):
        """``-dist(y, [low, high])``: 0 inside the range."""
        y = np.asarray(y, dtype=np.float64)
        return -(np.maximum(self.low - y, 0.0) + np.maximum(y - self.high, 0.0))

    def predict(self, T):
        return self.score(self.up.predict(T))

    def for_query(self, table, n_cand):
        masks = self.up._query_masks(table)
        return _RangeQuery(self, _TreeQuery(self.up, masks, n_cand),
                           _TreeQuery(self.down, masks, n_cand))


class _RangeQuery:
    def __init__(self, model, up, down):
        self.model = model
        self.up = up
        self.down = down

    def predict(self, P, index):
        return self.model.score(self.up.predict(P, index))

    def upper(self, point, index, is_open, threshold, *, budget=None, **_):
        single = budget == 1
        top = self.up.model.base + self.up.max_margin(index, is_open, single=single)
        bottom = -(self.down.model.base + self.down.max_margin(index, is_open, single=single))
        m = self.model
        gap = max(m.low - (top + _BOUND_SLACK), (bottom - _BOUND_SLACK) - m.high, 0.0)
        return -gap


class MaxQuery:
    """The largest of several per-query scores (e.g. of every class but the predicted
    one), and the largest of their bounds: an upper bound of the maximum whenever each
    is one of its own score."""

    def __init__(self, queries):
        self.queries = list(queries)

    def predict(self, P, index):
        return np.max([q.predict(P, index) for q in self.queries], axis=0)

    def upper(self, point, index, is_open, threshold, **kw):
        best = -np.inf
        for q in self.queries:
            best = max(best, q.upper(point, index, is_open, threshold, **kw))
            if best >= threshold:  # reachable: the others cannot change the answer
                break
        return best


# ------------------------------------------------------------------------- linear bound
class LinearBound:
    """Exact maximum of ``sigmoid(w . t(x) + b)`` over the grid, with the change budget.

    Parameters
    ----------
    w : ndarray (n_columns,)
        Signed coefficients on the model's columns.
    b : float
    owner : ndarray of int
        Input feature of every column.
    """

    kind = "exact"

    def __init__(self, w, b, owner):
        self.w = np.asarray(w, dtype=np.float64)
        self.b = float(b)
        self.owner = np.asarray(owner, dtype=np.int64)

    def predict(self, T):
        return expit(T @ self.w + self.b)

    def for_query(self, table, n_cand):
        d = len(n_cand)
        G = np.zeros((d, table.shape[0]))
        for c in np.flatnonzero(self.w != 0.0):
            G[self.owner[c]] += self.w[c] * table[:, c]
        return _LinearQuery(self.b, G, n_cand)


class _LinearQuery:
    """``G[j, i]``: feature ``j``'s contribution at its candidate ``i``."""

    def __init__(self, b, G, n_cand):
        self.b = b
        self.G = G
        self.rows = np.arange(G.shape[0])
        valid = np.arange(G.shape[1])[None, :] < np.asarray(n_cand)[:, None]
        self.best = np.where(valid, G, -np.inf).max(axis=1)

    def predict(self, P, index):
        return expit(self.b + self.G[self.rows[None, :], index].sum(axis=1))

    def upper(self, point, index, is_open, threshold, *, budget=None, **_):
        cur = self.G[self.rows, index]
        gains = (self.best - cur)[np.asarray(is_open, dtype=bool)]
        gains = gains[gains > 0]
        if budget is not None and budget < len(gains):
            gains = np.partition(gains, len(gains) - budget)[len(gains) - budget:]
        return float(expit(self.b + cur.sum() + gains.sum() + _BOUND_SLACK))


class ShapBound:
    """The paper's SHAP estimate of the reachable probability (a heuristic, not a bound).

    ``f(s) - sum_{j in T} phi_j(x) + sum_{j in T} phi^max_j`` where ``phi(x)`` is the
    query's SHAP vector (the authors' ``estimate_predict_max`` variant: one explanation
    per query instead of one per node), ``phi^max_j`` the largest SHAP value of feature
    ``j`` over the background sample and ``T`` the ``k - c`` open features with the
    largest ``phi^max``.
    """

    kind = "heuristic"

    def __init__(self, phi_max):
        self.phi_max = np.asarray(phi_max, dtype=np.float64)
        self.order = np.argsort(-self.phi_max, kind="stable")

    def for_query(self, phi_x):
        return _ShapQuery(self, phi_x)


class _ShapQuery:
    def __init__(self, bound, phi_x):
        self.bound = bound
        self.phi_x = phi_x

    def upper(self, point, index, is_open, threshold, *, f_value, budget, **_):
        if budget <= 0:
            return f_value
        b = self.bound
        T = [j for j in b.order if is_open[j]][:budget]
        return float(f_value - self.phi_x[T].sum() + b.phi_max[T].sum())


# ------------------------------------------------------------------------- model parsing
def parse_tree_model(model):
    """``(FlatEnsemble, input_transform or None)`` of a supported tree model, or None."""
    from ..tree import parse_model

    try:
        ens, transform = parse_model(model)
    except (TypeError, ValueError, ImportError, AttributeError):
        return None
    return ens, transform


def linear_coefficients(model, Z_sample, to_input=None):
    """``(w, b)`` with ``decision_function(x) == x @ w + b`` on the raw input, or None.

    The model is a binary linear classifier (``coef_`` of shape (1, p)), possibly the last
    step of a Pipeline whose other steps are affine maps (checked numerically on
    ``Z_sample``).
    """
    prefix, final = split_pipeline(model)
    steps = [] if prefix is None else [s for _, s in prefix.steps
                                       if s is not None and s != "passthrough"]
    linear = final_linear(final)
    if linear is None:
        return None
    coef, icpt = linear
    d = Z_sample.shape[1]

    def pre(X):
        if to_input is not None:
            X = to_input(X)
        for s in steps:
            X = s.transform(X)
        return np.asarray(X, dtype=np.float64)

    try:
        basis = np.vstack([np.zeros((1, d)), np.eye(d)])
        TB = pre(basis)
        c = TB[0]
        A = TB[1:] - c[None, :]
        TZ = pre(Z_sample)
    except Exception:  # noqa: BLE001 - any failing transform means "not affine"
        return None
    if TZ.shape[1] != coef.shape[0] or not np.allclose(TZ, Z_sample @ A + c, rtol=1e-9,
                                                       atol=1e-9):
        return None
    return A @ coef, float(c @ coef + icpt)


def final_linear(final):
    """``(coef, intercept)`` of a binary linear classifier (``coef_`` (1, p)), or None."""
    coef = getattr(final, "coef_", None)
    icpt = getattr(final, "intercept_", None)
    if coef is None or icpt is None:
        return None
    coef = np.asarray(coef, dtype=np.float64)
    if coef.ndim == 2:
        if coef.shape[0] != 1:
            return None
        coef = coef[0]
    return coef, float(np.ravel(icpt)[0])
