"""The flat tree-ensemble format shared by the parsers and the kernels.

Every parser (scikit-learn, XGBoost, LightGBM, CatBoost) turns a fitted model into one
:class:`FlatEnsemble`; the TreeSHAP kernels and the P2CE bound computations read
only this format. The parsers know nothing of Shapley values and the kernels
know nothing of libraries.

Format (stable; other modules rely on it)
------------------------------------------
All per-node arrays are concatenated over the trees and indexed by **global node
index**. Tree ``t`` owns nodes ``tree_offsets[t]:tree_offsets[t + 1]`` and its
root is node ``tree_offsets[t]``. Children indices are global too. Every field is
described in the ``Parameters`` section of :class:`FlatEnsemble`.

Helpers
-------
``goes_left(ens, nodes, values)`` (vectorised routing of one value per node),
``with_players(ens, feature_player, n_players)``,
``apply(ens, X)`` (global leaf per row and tree), ``predict_raw(ens, X)``
(margins), ``apply_link(link, raw)``, ``zero_fractions(ens)``, ``preorder(ens, t)``,
``subset_outputs(ens, outputs)`` and ``make_ensemble(trees, ...)`` (what the parsers
call). Parsers: ``_parse_sklearn.parse_sklearn``, ``_parse_xgboost.parse_xgboost``,
``_parse_lightgbm.parse_lightgbm``, ``_parse_catboost.parse_catboost`` or
``sklearn_xai.tree.parse_model`` (any of them); each returns
``(ens, input_transform)`` where ``input_transform`` (or None) maps model inputs to the
ensemble's numeric columns (HistGradientBoosting's categorical encoding).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

MODE_LE64 = 0
MODE_LE32 = 1
MODE_LT32 = 2
MODE_CAT = 3
MODE_CAT32 = 4

MISSING_NAN = 0
MISSING_NONE = 1
MISSING_ZERO = 2


@dataclass
class FlatEnsemble:
    """A fitted tree ensemble as flat arrays, the input of the TreeSHAP kernels.

    The per-node arrays are concatenated over the trees and indexed by *global node
    index*: tree ``t`` owns nodes ``tree_offsets[t]:tree_offsets[t + 1]``, its root is
    node ``tree_offsets[t]`` and children indices are global too. The parsers build it
    (see :func:`parse_model`); every parameter is stored as the attribute of the same
    name.

    Parameters
    ----------
    tree_offsets : ndarray of shape (n_trees + 1,), dtype int64
        First global node of each tree, then the total number of nodes.
    children_left : ndarray of shape (n_nodes,), dtype int64
        Global index of the left child of each node; ``-1`` at leaves.
    children_right : ndarray of shape (n_nodes,), dtype int64
        Global index of the right child of each node; ``-1`` at leaves.
    feature : ndarray of shape (n_nodes,), dtype int64
        Split column of the explained input (after any reordering); ``-1`` at leaves.
    threshold : ndarray of shape (n_nodes,), dtype float64
        Numeric threshold of each split; for ``MODE_LT32`` it is already the float32
        threshold widened to float64. Unused (0) at categorical nodes and leaves.
    mode : ndarray of shape (n_nodes,), dtype int8
        How a present (non-missing) value is compared:

        * ``MODE_LE64`` (0): left iff ``x <= threshold`` in float64 (LightGBM, HGB);
        * ``MODE_LE32`` (1): left iff ``float32(x) <= threshold`` (scikit-learn trees);
        * ``MODE_LT32`` (2): left iff ``float32(x) < float32(threshold)`` (XGBoost);
        * ``MODE_CAT`` (3): left iff ``int(x)`` (truncated toward zero, so ``-0.5`` is
          0) is one of the node's categories
          ``cat_values[cat_offsets[i]:cat_offsets[i + 1]]``; every other present value
          (``x <= -1``, unknown, not listed) goes right (LightGBM, HGB);
        * ``MODE_CAT32`` (4): the same after rounding ``x`` to float32, and every
          negative ``float32(x)`` goes right (XGBoost: ``-0.5`` is no category,
          ``1.99999999999`` is 2).

        Parsers swap children where the library lists the categories that go right.
    missing : ndarray of shape (n_nodes,), dtype int8
        What counts as missing and how it is routed:

        * ``MISSING_NAN`` (0): NaN is missing and follows ``default_left``;
        * ``MISSING_NONE`` (1): NaN is replaced by 0.0, then compared (LightGBM
          "None");
        * ``MISSING_ZERO`` (2): NaN is replaced by 0.0; values with ``|x| <= 1e-35``
          are missing and follow ``default_left`` (LightGBM "Zero").
    default_left : ndarray of shape (n_nodes,), dtype bool
        Whether missing values go left at each node.
    cat_offsets : ndarray of shape (n_nodes + 1,), dtype int64
        Row pointers (CSR) into ``cat_values``: the categories that go left at node
        ``i`` are ``cat_values[cat_offsets[i]:cat_offsets[i + 1]]``, an empty segment
        at numeric nodes and leaves.
    cat_values : ndarray of shape (n_cat_total,), dtype int64
        The categories that go left at each categorical node, sorted within a node.
    cover : ndarray of shape (n_nodes,), dtype float64
        The library's node weight (sample weights, hessian sums or counts) used for the
        path-dependent expectation. The zero fraction of edge ``p -> c`` is
        ``cover[c] / cover[p]`` (``0.5`` when ``cover[p] <= 0``).
    value : ndarray of shape (n_nodes, n_value_outputs), dtype float64
        Leaf values in margin space, already multiplied by the learning rate, DART
        weight or forest averaging ``1 / n_trees``. Internal rows hold the cover-weighted
        means of their leaves (informational only).
    tree_output : ndarray of shape (n_trees,), dtype int64
        The output each tree adds to; ``-1`` means the leaf vector ``value[i, :]``
        covers all outputs (then ``n_value_outputs == n_outputs``). When every tree has
        an index, ``n_value_outputs == 1``.
    base_score : ndarray of shape (n_outputs,), dtype float64
        Constant added to the sum of the trees in margin space.
    n_features : int
        Number of columns of the ensemble's numeric input.
    n_outputs : int
        Number of outputs (margins) the trees add to.
    link : {"identity", "logistic", "softmax", "logistic2x", "exp", "softplus", \
            "signed_square"}, default="identity"
        Maps the margin to the model's prediction (probability for classifiers;
        ``"logistic2x"`` is ``1 / (1 + exp(-2 m))``, ``"exp"`` is for log-link
        regressors, ``"softplus"`` ``log(1 + exp(m))`` and ``"signed_square"``
        ``sign(m) m^2`` for LightGBM's ``cross_entropy_lambda`` and ``reg_sqrt``).
    link_scale : float, default=1.0
        The logistic link's slope: ``1 / (1 + exp(-link_scale * m))`` (LightGBM's
        ``sigmoid`` parameter); the margins stay the model's raw scores.
    output_names : list of str, default=[]
        One name per output (class labels or target names).
    feature_names : list of str or None, default=None
        Names of the ``n_features`` input columns, when the model knows them.
    missing_value : float, default=nan
        Input values equal to it are missing (XGBoost's ``missing=``).
    model_name : str, default=""
        Name of the parsed model's class, used in messages.
    raw_space : {"margin", "probability", "path_length"}, default="margin"
        What the margin is: ``"margin"`` (log-odds, logits or regression value),
        ``"probability"`` (forest classifiers average probabilities) or
        ``"path_length"`` (IsolationForest's expected path length).
    player : ndarray of shape (n_nodes,), dtype int64, default=None
        The player of each split (``-1`` at leaves), in ``range(n_players)``: the SHAP
        kernels look a row's value up by ``feature`` and do the combinatorics (unique
        path, pattern bits) by ``player``, so several columns computed from one input
        column (its one-hot columns) are one player. None (what the parsers give): the
        player is the feature.
    n_players : int, default=None
        Number of players when ``player`` is set, else None.

    Attributes
    ----------
    n_trees : int
        Number of trees, ``len(tree_offsets) - 1``.
    n_nodes : int
        Total number of nodes, ``len(feature)``.
    """

    tree_offsets: np.ndarray
    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    mode: np.ndarray
    missing: np.ndarray
    default_left: np.ndarray
    cat_offsets: np.ndarray
    cat_values: np.ndarray
    cover: np.ndarray
    value: np.ndarray
    tree_output: np.ndarray
    base_score: np.ndarray
    n_features: int
    n_outputs: int
    link: str = "identity"
    link_scale: float = 1.0
    output_names: list = field(default_factory=list)
    feature_names: list | None = None
    missing_value: float = float("nan")
    model_name: str = ""
    raw_space: str = "margin"
    player: np.ndarray | None = None
    n_players: int | None = None

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return len(self.tree_offsets) - 1

    def __setstate__(self, state):
        self.__dict__.update(writeable_state(state))

    @property
    def n_nodes(self) -> int:
        """Total number of nodes over all trees."""
        return len(self.feature)

    def validate(self) -> FlatEnsemble:
        """Check shapes and index ranges; raise ValueError naming the problem.

        Returns
        -------
        FlatEnsemble
            The ensemble itself (unchanged), so that calls chain.
        """
        n = self.n_nodes
        for name in ("children_left", "children_right", "threshold", "mode", "missing",
                     "default_left", "cover"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"FlatEnsemble.{name} has length {len(getattr(self, name))}, "
                                 f"expected {n}")
        if self.value.ndim != 2 or self.value.shape[0] != n:
            raise ValueError("FlatEnsemble.value must be (n_nodes, n_value_outputs)")
        if len(self.cat_offsets) != n + 1:
            raise ValueError("FlatEnsemble.cat_offsets must have n_nodes + 1 entries")
        if self.tree_offsets[0] != 0 or self.tree_offsets[-1] != n:
            raise ValueError("FlatEnsemble.tree_offsets must start at 0 and end at n_nodes")
        leaf = self.children_left < 0
        if np.any(self.children_right[leaf] >= 0) or np.any(self.feature[leaf] >= 0):
            raise ValueError("FlatEnsemble leaves must have children -1 and feature -1")
        if np.any(self.feature[~leaf] >= self.n_features):
            raise ValueError("FlatEnsemble.feature out of range")
        if np.any(self.tree_output >= self.n_outputs):
            raise ValueError("FlatEnsemble.tree_output out of range")
        if np.any(self.tree_output < 0) and self.value.shape[1] != self.n_outputs:
            raise ValueError("vector-leaf trees need value.shape[1] == n_outputs")
        if len(self.base_score) != self.n_outputs:
            raise ValueError("FlatEnsemble.base_score must have n_outputs entries")
        if self.player is not None:
            if len(self.player) != n or self.n_players is None:
                raise ValueError("FlatEnsemble.player must have n_nodes entries and "
                                 "n_players must be set")
            if np.any(self.player[leaf] >= 0) or np.any(self.player[~leaf] < 0) or \
                    np.any(self.player >= self.n_players):
                raise ValueError("FlatEnsemble.player out of range")
        return self

    def players(self) -> tuple[np.ndarray, int]:
        """The player of every node and the number of players.

        Returns
        -------
        player : ndarray of shape (n_nodes,), dtype int64
            The player of each split, ``-1`` at leaves; ``feature`` when ``player`` is
            None.
        n_players : int
            Number of players; ``n_features`` when ``player`` is None.
        """
        if self.player is None:
            return self.feature, self.n_features
        return self.player, self.n_players

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The routing arrays in the order the numba helpers take them.

        Returns
        -------
        tuple of ndarray
            ``(children_left, children_right, feature, threshold, mode, missing,
            default_left, cat_offsets, cat_values)``, the arrays themselves (no copy).
        """
        return (self.children_left, self.children_right, self.feature, self.threshold,
                self.mode, self.missing, self.default_left, self.cat_offsets, self.cat_values)

    def prepare_X(self, X: ArrayLike) -> np.ndarray:
        """``X`` as C-contiguous float64 with ``missing_value`` entries set to NaN.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows in the ensemble's numeric input space.

        Returns
        -------
        ndarray of shape (n_samples, n_features), dtype float64
            A writeable C-contiguous array (a copy unless ``X`` already is one and
            ``missing_value`` is NaN), NaN wherever ``X`` equals ``missing_value``.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        if not X.flags.writeable:  # one numba specialisation: writeable C arrays only
            X = X.copy()
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must be 2-D with {self.n_features} columns, got shape {X.shape}")
        if not np.isnan(self.missing_value):
            X = np.where(X == self.missing_value, np.nan, X)
        return X


def writeable_state(state):
    """Copy read-only arrays of an unpickled state (e.g. joblib memory maps).

    The numba kernels are compiled for writeable arrays; a read-only array would
    trigger a second compilation.
    """
    return {k: (v.copy() if isinstance(v, np.ndarray) and not v.flags.writeable else v)
            for k, v in state.items()}


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _go_left(node, x, threshold, mode, missing, default_left, cat_offsets, cat_values):
    """Routing of one present-or-missing value ``x`` at ``node``."""
    return _goes_left_value(x, mode[node], missing[node], threshold[node], default_left[node],
                            cat_values, cat_offsets[node], cat_offsets[node + 1])


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _goes_left_numeric(x, m, miss, threshold, default_left):
    """:func:`_goes_left_value` at a numeric split (``m <= MODE_LT32``): no array."""
    if np.isnan(x):
        if miss == MISSING_NAN:
            return default_left
        x = 0.0
    if miss == MISSING_ZERO and abs(x) <= 1e-35:
        return default_left
    if m == MODE_LE64:
        return x <= threshold
    if m == MODE_LE32:
        return np.float64(np.float32(x)) <= threshold
    return np.float64(np.float32(x)) < threshold


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _goes_left_value(x, m, miss, threshold, default_left, cat_values, lo, hi):
    """Routing of ``x`` at a split of mode ``m``, missing rule ``miss``, threshold,
    default direction and (categorical) sorted left categories ``cat_values[lo:hi]``."""
    if m <= MODE_LT32:
        return _goes_left_numeric(x, m, miss, threshold, default_left)
    # categorical; the missing rule as in _goes_left_numeric
    if np.isnan(x):
        if miss == MISSING_NAN:
            return default_left
        x = 0.0
    if miss == MISSING_ZERO and abs(x) <= 1e-35:
        return default_left
    if m == MODE_CAT32:
        x = np.float64(np.float32(x))
        if x < 0.0:
            return False
    elif x <= -1.0:
        return False
    if x >= 9.0e18:
        return False
    c = np.int64(x)
    while lo < hi:  # binary search in the sorted segment
        mid = (lo + hi) // 2
        v = cat_values[mid]
        if v == c:
            return True
        if v < c:
            lo = mid + 1
        else:
            hi = mid
    return False


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _goes_left_many(nodes, xs, children_left, children_right, feature, threshold, mode,
                    missing, default_left, cat_offsets, cat_values):
    out = np.empty(len(nodes), dtype=np.bool_)
    for i in range(len(nodes)):
        out[i] = _go_left(nodes[i], xs[i], threshold, mode, missing, default_left,
                          cat_offsets, cat_values)
    return out


def goes_left(ens: FlatEnsemble, node_indices: ArrayLike, x_values: ArrayLike) -> np.ndarray:
    """Vectorised routing: does value ``x_values[i]`` go left at ``node_indices[i]``?

    Parameters
    ----------
    ens : FlatEnsemble
        The ensemble the nodes belong to.
    node_indices : array-like of int, shape (n,)
        Global indices of internal nodes.
    x_values : array-like of float, shape (n,)
        The value of the node's split feature (NaN for missing). Broadcast against
        ``node_indices``.

    Returns
    -------
    ndarray of bool, shape (n,)
        True where the value goes to the left child, with the node's missing-value
        and categorical rules; the broadcast shape of the two inputs.
    """
    nodes, xs = np.broadcast_arrays(np.asarray(node_indices, dtype=np.int64),
                                    np.asarray(x_values, dtype=np.float64))
    shape = nodes.shape
    nodes = np.array(nodes.ravel(), dtype=np.int64, order="C")
    xs = np.array(xs.ravel(), dtype=np.float64, order="C")
    if not np.isnan(ens.missing_value):
        xs = np.where(xs == ens.missing_value, np.nan, xs)
    return _goes_left_many(nodes, xs, *ens.arrays()).reshape(shape)


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _predict_leaves(lo, hi, X, tree_offsets, children_left, children_right, feature, threshold,
                    mode, missing, default_left, cat_offsets, cat_values, out):
    """Rows ``lo .. hi - 1`` of :func:`apply` into ``out``."""
    T = len(tree_offsets) - 1
    for i in range(lo, hi):
        for t in range(T):
            node = tree_offsets[t]
            while children_left[node] >= 0:
                m = mode[node]
                x = X[i, feature[node]]
                if m <= MODE_LT32:
                    left = _goes_left_numeric(x, m, missing[node], threshold[node],
                                              default_left[node])
                else:
                    left = _goes_left_value(x, m, missing[node], threshold[node],
                                            default_left[node], cat_values, cat_offsets[node],
                                            cat_offsets[node + 1])
                if left:
                    node = children_left[node]
                else:
                    node = children_right[node]
            out[i, t] = node


def run_in_threads(kernel, n_tasks, *args):
    """``kernel(lo, hi, *args)`` over the tasks ``0 .. n_tasks - 1``, on numba's current
    number of threads (:func:`numba.get_num_threads`, which ``n_jobs`` sets).

    ``kernel`` is a serial numba kernel compiled with ``nogil=True`` that does tasks
    ``lo .. hi - 1`` (row blocks, rows or trees) and writes only their part of its
    outputs, so the split never changes the result. With one thread (or one task) it is
    one call; else each thread takes contiguous ranges of about a quarter of its share,
    so that uneven tasks balance out. This replaces numba's ``parallel=True``, whose
    compilation costs seconds per kernel on a fresh installation.

    Parameters
    ----------
    kernel : numba dispatcher
        Called as ``kernel(lo, hi, *args)`` with Python ints ``lo`` and ``hi``.
    n_tasks : int
        Number of tasks.
    *args
        The kernel's other arguments.
    """
    import numba

    n_tasks = int(n_tasks)
    n_threads = min(numba.get_num_threads(), n_tasks)
    if n_threads <= 1:
        if n_tasks > 0:
            kernel(0, n_tasks, *args)
        return
    from concurrent.futures import ThreadPoolExecutor

    n_chunks = min(n_tasks, 4 * n_threads)
    bounds = [n_tasks * i // n_chunks for i in range(n_chunks + 1)]
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        for future in [pool.submit(kernel, bounds[i], bounds[i + 1], *args)
                       for i in range(n_chunks)]:
            future.result()


def apply(ens, X):
    """Global leaf index reached by each row in each tree, shape (n, T)."""
    X = ens.prepare_X(X)
    out = np.empty((X.shape[0], ens.n_trees), dtype=np.int64)
    run_in_threads(_predict_leaves, X.shape[0], X, ens.tree_offsets, *ens.arrays(), out)
    return out


def predict_raw(ens: FlatEnsemble, X: ArrayLike) -> np.ndarray:
    """Margin-space prediction ``base_score + sum of leaf values``.

    Trees are summed in order in float64.

    Parameters
    ----------
    ens : FlatEnsemble
        The ensemble to evaluate.
    X : array-like of shape (n_samples, n_features)
        Rows in the ensemble's numeric input space; entries equal to
        ``ens.missing_value`` are missing.

    Returns
    -------
    ndarray of shape (n_samples, n_outputs)
        The margin of every row and output, before the link function.
    """
    leaves = apply(ens, X)
    n = leaves.shape[0]
    out = np.tile(ens.base_score.astype(np.float64), (n, 1))
    for t in range(ens.n_trees):
        k = ens.tree_output[t]
        v = ens.value[leaves[:, t]]
        if k < 0:
            out += v
        else:
            out[:, k] += v[:, 0]
    return out


def apply_link(link, raw, scale=1.0):
    """Map margins (n, K) to predictions with ``link`` (a logistic link's margins
    multiplied by ``scale`` first: :attr:`FlatEnsemble.link_scale`)."""
    if link == "identity":
        return raw
    if link == "logistic":
        return 1.0 / (1.0 + np.exp(-(raw if scale == 1.0 else scale * raw)))
    if link == "logistic2x":  # scikit-learn's exponential loss (AdaBoost)
        return 1.0 / (1.0 + np.exp(-2.0 * raw))
    if link == "exp":
        return np.exp(raw)
    if link == "softplus":  # LightGBM's cross_entropy_lambda
        return np.logaddexp(0.0, raw)
    if link == "signed_square":  # LightGBM's reg_sqrt
        return np.sign(raw) * raw * raw
    if link == "softmax":
        z = raw - raw.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)
    raise ValueError(f"unknown link {link!r}")


def zero_fractions(ens):
    """Zero fraction ``cover[n] / cover[parent(n)]`` of the edge into every node.

    Roots get 1. A parent with ``cover <= 0`` gives ``0.5`` to each child.
    """
    z = np.ones(ens.n_nodes)
    internal = np.flatnonzero(ens.children_left >= 0)
    pc = ens.cover[internal]
    for child in (ens.children_left[internal], ens.children_right[internal]):
        with np.errstate(divide="ignore", invalid="ignore"):
            z[child] = np.where(pc > 0, ens.cover[child] / np.where(pc > 0, pc, 1.0), 0.5)
    return z


def class_output_names(classes, n_outputs, single):
    """Output names of a boosted model: its classes (the last one alone when it boosts one
    margin, a binary classifier), else ``output0, output1, ...`` or ``[single]`` for one
    output."""
    if classes is not None and n_outputs > 1:
        return [str(c) for c in classes]
    if classes is not None:
        return [str(classes[-1])]
    return [f"output{k}" for k in range(n_outputs)] if n_outputs > 1 else [single]


def make_ensemble(trees, *, n_features, n_outputs, base_score, link="identity",
                  link_scale=1.0, output_names=None, feature_names=None,
                  missing_value=float("nan"), model_name="", raw_space="margin"):
    """Concatenate per-tree dicts (local indices) into a :class:`FlatEnsemble`.

    Each tree dict has local ``children_left``, ``children_right``, ``feature``,
    ``threshold``, ``mode``, ``missing``, ``default_left``, ``cover``, ``value``
    (n_nodes, n_value_outputs), ``output`` (int) and optionally ``cats``
    (dict node -> sorted categories going left).
    """
    offs = [0]
    cl, cr, ft, th, md, ms, dl, cv, vals, outs = ([] for _ in range(10))
    cat_cnt = []
    cat_vals = []
    for tr in trees:
        n = len(tr["feature"])
        base = offs[-1]
        left = np.asarray(tr["children_left"], dtype=np.int64)
        right = np.asarray(tr["children_right"], dtype=np.int64)
        cl.append(np.where(left >= 0, left + base, -1))
        cr.append(np.where(right >= 0, right + base, -1))
        f = np.asarray(tr["feature"], dtype=np.int64)
        ft.append(np.where(left >= 0, f, -1))
        th.append(np.where(left >= 0, np.asarray(tr["threshold"], dtype=np.float64), 0.0))
        md.append(np.asarray(tr["mode"], dtype=np.int8) * np.ones(n, dtype=np.int8))
        ms.append(np.asarray(tr["missing"], dtype=np.int8) * np.ones(n, dtype=np.int8))
        dl.append(np.asarray(tr["default_left"], dtype=bool) & np.ones(n, dtype=bool))
        cv.append(np.asarray(tr["cover"], dtype=np.float64))
        v = np.asarray(tr["value"], dtype=np.float64)
        vals.append(v.reshape(n, -1))
        outs.append(int(tr["output"]))
        cats = tr.get("cats") or {}
        cnt = np.zeros(n, dtype=np.int64)
        for i in sorted(cats):
            c = np.unique(np.asarray(cats[i], dtype=np.int64))
            cat_vals.append(c)
            cnt[i] = len(c)
        cat_cnt.append(cnt)
        offs.append(base + n)
    cat_off = np.zeros(offs[-1] + 1, dtype=np.int64)
    if cat_cnt:
        np.cumsum(np.concatenate(cat_cnt), out=cat_off[1:])
    widths = {v.shape[1] for v in vals}
    if len(widths) != 1:
        raise ValueError(f"trees disagree on the leaf value width: {sorted(widths)}")
    ens = FlatEnsemble(
        tree_offsets=np.asarray(offs, dtype=np.int64),
        children_left=np.concatenate(cl),
        children_right=np.concatenate(cr),
        feature=np.concatenate(ft),
        threshold=np.concatenate(th),
        mode=np.concatenate(md),
        missing=np.concatenate(ms),
        default_left=np.concatenate(dl),
        cat_offsets=cat_off,
        cat_values=(np.concatenate(cat_vals) if cat_vals else np.zeros(0, dtype=np.int64)),
        cover=np.concatenate(cv),
        value=np.ascontiguousarray(np.concatenate(vals, axis=0)),
        tree_output=np.asarray(outs, dtype=np.int64),
        base_score=np.asarray(base_score, dtype=np.float64).reshape(-1),
        n_features=int(n_features),
        n_outputs=int(n_outputs),
        link=link,
        link_scale=float(link_scale),
        output_names=list(output_names) if output_names is not None else
        [str(k) for k in range(n_outputs)],
        feature_names=list(feature_names) if feature_names is not None else None,
        missing_value=float(missing_value),
        model_name=model_name,
        raw_space=raw_space,
    )
    _fill_internal_values(ens)
    return ens.validate()


def _fill_internal_values(ens):
    """Set internal-node values to cover-weighted means of their children (in place).

    Level by level from the deepest internal nodes up (every tree at once), each node's
    ``z[left] * value[left] + z[right] * value[right]``: plain numpy, so a fresh
    installation compiles no numba kernel for it (it ran in one, 0.3 s to compile).
    """
    z = zero_fractions(ens)
    cl, cr, value = ens.children_left, ens.children_right, ens.value
    levels = []  # internal nodes by depth, from the roots down
    frontier = np.asarray(ens.tree_offsets[:-1], dtype=np.int64)
    while frontier.size:
        frontier = frontier[cl[frontier] >= 0]
        if frontier.size:
            levels.append(frontier)
            frontier = np.concatenate([cl[frontier], cr[frontier]])
    for nodes in reversed(levels):
        left, right = cl[nodes], cr[nodes]
        value[nodes] = z[left][:, None] * value[left] + z[right][:, None] * value[right]


@njit(cache=True, no_cfunc_wrapper=True, nogil=True)
def _preorder_jit(children_left, children_right, root, nodes, depths):
    """Write the pre-order (left first) of the tree at ``root``; return the count.

    ``nodes`` must hold at least the tree's node count (the stack is sized by it).
    """
    stack = np.empty(len(nodes) + 1, dtype=np.int64)
    sdep = np.empty(len(nodes) + 1, dtype=np.int64)
    top = 0
    stack[0] = root
    sdep[0] = 0
    k = 0
    while top >= 0:
        node = stack[top]
        d = sdep[top]
        top -= 1
        nodes[k] = node
        depths[k] = d
        k += 1
        if children_left[node] >= 0:
            top += 1
            stack[top] = children_right[node]
            sdep[top] = d + 1
            top += 1
            stack[top] = children_left[node]
            sdep[top] = d + 1
    return k


def preorder(ens, t):
    """Nodes of tree ``t`` in pre-order (left first) and their depths."""
    size = int(ens.tree_offsets[t + 1] - ens.tree_offsets[t])
    nodes = np.empty(size, dtype=np.int64)
    depths = np.empty(size, dtype=np.int64)
    k = _preorder_jit(ens.children_left, ens.children_right, ens.tree_offsets[t], nodes, depths)
    return nodes[:k], depths[:k]


def subset_outputs(ens, outputs):
    """A FlatEnsemble that keeps only ``outputs`` (list of output indices), in that order.

    Trees of other outputs are dropped and vector leaves keep only those columns.
    """
    outputs = [int(k) for k in outputs]
    pos = {k: i for i, k in enumerate(outputs)}
    keep = [t for t in range(ens.n_trees)
            if ens.tree_output[t] < 0 or int(ens.tree_output[t]) in pos]
    lo = ens.tree_offsets[:-1][keep]
    hi = ens.tree_offsets[1:][keep]
    sizes = hi - lo
    idx = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi, strict=True)]) if keep else \
        np.zeros(0, dtype=np.int64)
    new_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    shift = np.repeat(new_offsets[:-1] - lo, sizes)

    def remap(ch):
        c = ch[idx]
        return np.where(c >= 0, c + shift, -1)

    seg_lo = ens.cat_offsets[idx]
    lengths = ens.cat_offsets[idx + 1] - seg_lo
    cat_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # positions of the kept segments' entries, in order
    take = np.repeat(seg_lo - cat_off[:-1], lengths) + np.arange(cat_off[-1])
    vector = ens.tree_output < 0
    if np.any(vector[keep]):
        value = ens.value[idx][:, outputs]
    else:
        value = ens.value[idx][:, :1]
    tree_output = np.asarray([-1 if ens.tree_output[t] < 0 else pos[int(ens.tree_output[t])]
                              for t in keep], dtype=np.int64)
    return FlatEnsemble(
        tree_offsets=new_offsets,
        children_left=remap(ens.children_left),
        children_right=remap(ens.children_right),
        feature=ens.feature[idx],
        threshold=ens.threshold[idx],
        mode=ens.mode[idx],
        missing=ens.missing[idx],
        default_left=ens.default_left[idx],
        cat_offsets=cat_off,
        cat_values=ens.cat_values[take].astype(np.int64),
        cover=ens.cover[idx],
        value=np.ascontiguousarray(value),
        tree_output=tree_output,
        base_score=ens.base_score[outputs],
        n_features=ens.n_features,
        n_outputs=len(outputs),
        link=ens.link,
        link_scale=ens.link_scale,
        output_names=[ens.output_names[k] for k in outputs],
        feature_names=ens.feature_names,
        missing_value=ens.missing_value,
        model_name=ens.model_name,
        raw_space=ens.raw_space,
        player=None if ens.player is None else ens.player[idx],
        n_players=ens.n_players,
    ).validate()


def with_players(ens, feature_player, n_players):
    """A copy of ``ens`` whose splits on feature ``j`` belong to player ``feature_player[j]``.

    Parameters
    ----------
    ens : FlatEnsemble
    feature_player : array-like of int, shape (n_features,)
        The player (e.g. the input column of a pipeline) of every feature.
    n_players : int

    Returns
    -------
    FlatEnsemble
        Sharing the arrays of ``ens``, with ``player`` and ``n_players`` set.
    """
    from dataclasses import replace

    fp = np.asarray(feature_player, dtype=np.int64)
    if fp.shape != (ens.n_features,):
        raise ValueError(f"feature_player must have one entry per feature "
                         f"({ens.n_features}), got shape {fp.shape}")
    player = np.where(ens.feature >= 0, fp[np.maximum(ens.feature, 0)], -1)
    return replace(ens, player=np.ascontiguousarray(player, dtype=np.int64),
                   n_players=int(n_players)).validate()
