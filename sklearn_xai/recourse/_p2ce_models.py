"""Model-side pieces of P2CE: the plausibility forest and the probability bounds.

Bounds answer: given a partial counterfactual (some features fixed, the open ones free
to take any value of their candidate lists), how large can the predicted probability of
the desired class become?

* :class:`TreeBound` (exact over the grid): per tree the largest reachable leaf value,
  summed, the link applied; built on :class:`sklearn_xai.tree._ensemble.FlatEnsemble`.
* :class:`LinearBound` (exact over the grid): ``b + sum_fixed w_j x_j + sum_open max_v w_j v``
  through the logistic link, for linear classifiers, also behind affine preprocessing
  (scalers) in a :class:`~sklearn.pipeline.Pipeline`.
* :class:`ShapBound` (**heuristic**, the paper's SHAP estimate): ``f(s) - sum_T phi_j(x) +
  sum_T phi^max_j`` with ``T`` the ``k - c`` open features of largest ``phi^max``; it can
  cut off real solutions.

The plausibility forest (:class:`FlatIsolationForest`) reproduces scikit-learn's
``IsolationForest.score_samples`` bit for bit and adds the look-ahead: the largest mean
path length reachable with the open features anywhere on their grids.
"""

import numpy as np
from scipy.special import expit

from ..tree._ensemble import MISSING_NAN, MODE_LE32, make_ensemble
from ._p2ce_kernels import (
    forest_max_reach,
    forest_sum_points,
    iso_max_reach,
    iso_sum_points,
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


class _Forest:
    """A flat forest with one leaf value per node, and its reachability kernels."""

    def __init__(self, ens, leaf_value):
        self.ens = ens
        self.leaf_value = np.ascontiguousarray(leaf_value, dtype=np.float64)
        self.sub_max = subtree_max(ens.tree_offsets, ens.children_left, ens.children_right,
                                   self.leaf_value)
        roots = self.sub_max[ens.tree_offsets[:-1]]
        self.root_suffix = np.concatenate([np.cumsum(roots[::-1])[::-1], [0.0]])
        self.max_depth = int(tree_depth(ens.tree_offsets, ens.children_left,
                                        ens.children_right))

    def sum_points(self, X):
        e = self.ens
        X = np.ascontiguousarray(X, dtype=np.float64)
        return forest_sum_points(X, e.tree_offsets, *e.arrays(), self.leaf_value)

    def max_reach(self, point, is_open, cand, n_cand, cutoff=-np.inf, stop_above=np.inf):
        """Exact reachable sum, or a value on the same side of the cut-offs (see kernel)."""
        e = self.ens
        return forest_max_reach(e.tree_offsets, *e.arrays(), self.leaf_value, self.sub_max,
                                self.root_suffix, is_open, point, cand, n_cand,
                                float(cutoff), float(stop_above), self.max_depth)


def _packable(ens):
    """``"le64"``/``"le32"`` when every split is numeric ``<=`` in one precision and no
    split treats 0 as missing (so a compact numeric layout routes finite values exactly)."""
    from ..tree._ensemble import MISSING_ZERO, MODE_LE64

    internal = ens.children_left >= 0
    modes = np.unique(ens.mode[internal])
    if np.any(ens.missing[internal] == MISSING_ZERO) or len(modes) > 1:
        return None
    if len(modes) == 0 or modes[0] == MODE_LE64:
        return "le64"
    if modes[0] == MODE_LE32:
        return "le32"
    return None


class _PackedForest:
    """A numeric ``<=`` forest in one (n_nodes, 4) array: threshold or leaf value,
    feature, left, right; inputs rounded to float32 first for ``"le32"`` splits."""

    def __init__(self, forest, precision):
        ens = forest.ens
        leaf = ens.children_left < 0
        self.forest = forest
        self.cast32 = precision == "le32"
        self.packed = np.ascontiguousarray(np.column_stack([
            np.where(leaf, forest.leaf_value, ens.threshold), ens.feature.astype(np.float64),
            ens.children_left.astype(np.float64), ens.children_right.astype(np.float64)]))
        self.roots = np.ascontiguousarray(ens.tree_offsets[:-1])

    def _cast(self, X):
        X = np.asarray(X, dtype=np.float64)
        if self.cast32:
            X = X.astype(np.float32).astype(np.float64)
        return np.ascontiguousarray(X)

    def sum_points(self, X):
        return iso_sum_points(self._cast(X), self.roots, self.packed)

    def prepare(self, cand, n_cand):
        d, m = cand.shape
        sv = np.zeros((d, m))
        n_sv = np.zeros(d, dtype=np.int64)
        for j in range(d):
            u = np.unique(self._cast(cand[j, : n_cand[j]]))
            sv[j, : len(u)] = u
            n_sv[j] = len(u)
        return sv, n_sv

    def max_reach(self, point, is_open, prepared, cutoff=-np.inf, stop_above=np.inf):
        sv, n_sv = prepared
        f = self.forest
        return iso_max_reach(self.roots, self.packed, f.sub_max, f.root_suffix, is_open,
                             self._cast(point), sv, n_sv, float(cutoff), float(stop_above),
                             f.max_depth)


class FlatIsolationForest:
    """A fitted :class:`~sklearn.ensemble.IsolationForest` as a flat forest.

    ``score_samples`` equals scikit-learn's (same leaf values, same summation order); a
    row is an inlier iff ``score_samples >= offset_`` (scikit-learn's ``predict``).
    """

    def __init__(self, iso):
        d = int(iso.n_features_in_)
        subsample = iso._max_features != d
        trees = []
        leaf_vals = []
        for est, feats in zip(iso.estimators_, iso.estimators_features_):
            tr = est.tree_
            left = tr.children_left.astype(np.int64)
            feat = tr.feature.astype(np.int64)
            if subsample:
                feat = np.where(left >= 0, np.asarray(feats)[np.maximum(feat, 0)], -1)
            depths = np.asarray(tr.compute_node_depths(), dtype=np.float64)
            lv = depths + _apl(tr.n_node_samples) - 1.0
            leaf_vals.append(lv)
            trees.append({"children_left": left, "children_right": tr.children_right,
                              "feature": feat, "threshold": tr.threshold, "mode": MODE_LE32,
                              "missing": MISSING_NAN, "default_left": True,
                              "cover": tr.n_node_samples.astype(np.float64),
                              "value": lv.reshape(-1, 1), "output": 0})
        ens = make_ensemble(trees, n_features=d, n_outputs=1, base_score=[0.0])
        self.forest = _Forest(ens, np.concatenate(leaf_vals))
        # compact layout for the numeric-only kernels (one row per node)
        self.fast = _PackedForest(self.forest, "le32")
        self.packed, self.roots = self.fast.packed, self.fast.roots
        self.denominator = len(iso.estimators_) * float(_apl([iso._max_samples])[0])
        self.offset_ = float(iso.offset_)
        # mean path-length sum a point needs to be an inlier: -2**(-H/den) >= offset
        if self.denominator > 0 and -1.0 < self.offset_ < 0.0:
            self.cutoff = -self.denominator * np.log2(-self.offset_) - 1e-7
        else:
            self.cutoff = -np.inf

    def _score(self, H):
        H = np.asarray(H, dtype=np.float64)
        den = self.denominator
        ratio = np.divide(H, den, out=np.ones_like(H), where=den != 0)
        return -(2.0 ** (-ratio))

    def score_samples(self, X):
        """scikit-learn's ``score_samples`` (higher = more normal), shape (n,)."""
        return self._score(self.fast.sum_points(X))

    def prepare(self, cand, n_cand):
        """Sorted float32-rounded candidates per feature for :meth:`may_have_inlier`."""
        return self.fast.prepare(cand, n_cand)

    def is_inlier(self, X):
        return self.score_samples(X) >= self.offset_

    def may_have_inlier(self, point, is_open, prepared):
        """False only when every completion of the partial point is an outlier.

        Parameters
        ----------
        point : ndarray (d,)
        is_open : ndarray of bool (d,)
        prepared : tuple
            :meth:`prepare` of the query's candidates.

        Returns
        -------
        possible : bool
        score_bound : float
            ``score_samples`` of the largest reachable path-length sum, or of a value on
            the same side of the inlier boundary (the kernel exits early both ways).
        """
        H = self.fast.max_reach(point, is_open, prepared, self.cutoff, self.cutoff + 2e-7)
        s = float(self._score(np.array([H]))[0])
        return s >= self.offset_, s


class TreeBound:
    """Exact reachable maximum of a tree ensemble's desired-class probability.

    Parameters
    ----------
    ens : FlatEnsemble
    column : int
        The output (value column) of the desired class, or ``-1`` with ``sign=-1`` for a
        binary logistic model explained for its first class.
    """

    kind = "exact"

    def __init__(self, ens, column, sign, link):
        if ens.value.shape[1] == 1:
            vals = ens.value[:, 0]
            out = ens.tree_output
            if np.any((out != 0) & (out != -1)):
                raise ValueError("tree bound needs a single-output ensemble")
        else:
            vals = ens.value[:, column]
        self.sign = float(sign)
        self.base = self.sign * float(ens.base_score[0 if ens.value.shape[1] == 1 else column])
        self.link = link
        self.forest = _Forest(ens, self.sign * vals)
        precision = _packable(ens)
        self.fast = _PackedForest(self.forest, precision) if precision else None

    def _to_prob(self, m):
        return expit(m) if self.link == "logistic" else m

    def _cutoff(self, threshold):
        if self.link == "logistic":
            t = np.log(threshold) - np.log1p(-threshold) if 0 < threshold < 1 else -np.inf
        else:
            t = threshold
        return t - self.base - _BOUND_SLACK

    def predict(self, Z):
        forest = self.fast if self.fast is not None else self.forest
        return self._to_prob(self.base + forest.sum_points(Z))

    def prepare(self, cand, n_cand):
        return self.fast.prepare(cand, n_cand) if self.fast is not None else None

    def upper(self, point, is_open, cand, n_cand, threshold, exact=False, prepared=None, **_):
        """Upper bound of the probability; with ``exact=False`` it may stop early at a
        value that is only guaranteed to fall on the same side of ``threshold``."""
        c = self._cutoff(threshold)
        lo, hi = (-np.inf, np.inf) if exact else (c, c + 2 * _BOUND_SLACK)
        if self.fast is not None:
            if prepared is None:
                prepared = self.fast.prepare(cand, n_cand)
            m = self.fast.max_reach(point, is_open, prepared, lo, hi)
        else:
            m = self.forest.max_reach(point, is_open, cand, n_cand, lo, hi)
        return float(self._to_prob(self.base + m + _BOUND_SLACK))


class SoftmaxTreeBound:
    """Upper bound of a multi-class boosted ensemble's desired-class probability.

    The probability ``exp(f_k) / sum_j exp(f_j)`` grows with the desired class's margin
    ``f_k`` and falls with every other margin, so with ``hi_k`` the largest reachable
    ``f_k`` and ``lo_j`` the smallest reachable ``f_j`` (each exact over the grid, per tree
    summed) ``1 / (1 + sum_{j != k} exp(lo_j - hi_k))`` is never below any completion's
    probability: no solution is lost. It is not tight (the extremes may need different
    completions), so it prunes less than the binary bound.

    Parameters
    ----------
    ens : FlatEnsemble with ``link="softmax"`` and one tree per class and round
    column : int
        The desired class's output.
    """

    kind = "exact"

    def __init__(self, ens, column):
        from ..tree._ensemble import subset_outputs

        self.column = int(column)
        self.base = np.asarray(ens.base_score, dtype=np.float64)
        self.parts = []  # per class: (forest for the max, forest for the max of -f)
        for j in range(ens.n_outputs):
            sub = subset_outputs(ens, [j])
            vals = sub.value[:, 0]
            signs = (1.0,) if j == self.column else (1.0, -1.0)
            forests = []
            for sgn in signs:
                forest = _Forest(sub, sgn * vals)
                precision = _packable(sub)
                forests.append(_PackedForest(forest, precision) if precision else forest)
            self.parts.append(forests)

    def predict(self, Z):
        raw = np.column_stack([self.base[j] + forests[0].sum_points(Z)
                               for j, forests in enumerate(self.parts)])
        raw -= raw.max(axis=1, keepdims=True)
        e = np.exp(raw)
        return e[:, self.column] / e.sum(axis=1)

    def prepare(self, cand, n_cand):
        return [[f.prepare(cand, n_cand) if isinstance(f, _PackedForest) else None
                 for f in forests] for forests in self.parts]

    def _reach(self, forest, point, is_open, cand, n_cand, prepared):
        if isinstance(forest, _PackedForest):
            if prepared is None:
                prepared = forest.prepare(cand, n_cand)
            return forest.max_reach(point, is_open, prepared)
        return forest.max_reach(point, is_open, cand, n_cand)

    def upper(self, point, is_open, cand, n_cand, threshold, prepared=None, **_):
        k = self.column
        pk = None if prepared is None else prepared[k][0]
        hi_k = self.base[k] + self._reach(self.parts[k][0], point, is_open, cand, n_cand, pk)
        hi_k += _BOUND_SLACK
        total = 1.0
        for j, forests in enumerate(self.parts):
            if j == k:
                continue
            pj = None if prepared is None else prepared[j][1]
            lo_j = self.base[j] - self._reach(forests[1], point, is_open, cand, n_cand, pj)
            total += np.exp(min(lo_j - _BOUND_SLACK - hi_k, 700.0))
        return float(1.0 / total)


class LinearBound:
    """Exact maximum of ``sigmoid(w . x + b)`` over the grid (``w``, ``b`` signed)."""

    kind = "exact"

    def __init__(self, w, b):
        self.w = np.asarray(w, dtype=np.float64)
        self.b = float(b)

    def predict(self, Z):
        return expit(Z @ self.w + self.b)

    def upper(self, point, is_open, cand, n_cand, threshold, **_):
        w = self.w
        m = self.b + float(np.dot(np.where(is_open, 0.0, point), np.where(is_open, 0.0, w)))
        for j in np.flatnonzero(is_open):
            if w[j] != 0.0:
                m += float(np.max(w[j] * cand[j, : n_cand[j]]))
        return float(expit(m + _BOUND_SLACK))


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

    def upper(self, point, is_open, cand, n_cand, threshold, *, f_value, phi_x, budget, **_):
        if budget <= 0:
            return f_value
        T = [j for j in self.order if is_open[j]][:budget]
        return float(f_value - phi_x[T].sum() + self.phi_max[T].sum())


def unwrap(model):
    """The estimator inside a FrozenEstimator (else the model itself)."""
    return getattr(model, "estimator", model) if type(model).__name__ == "FrozenEstimator" \
        else model


def parse_tree_model(model):
    """FlatEnsemble of a supported tree model, or None."""
    from importlib import import_module

    candidates = [
        ("sklearn_xai.tree._parse_sklearn", "parse_sklearn"),
        ("sklearn_xai.tree._parse_lightgbm", "parse_lightgbm"),
        ("sklearn_xai.tree._parse_xgboost", "parse_xgboost"),
    ]
    for mod_name, fn_name in candidates:
        try:
            fn = getattr(import_module(mod_name), fn_name)
        except (ImportError, AttributeError):
            continue
        try:
            res = fn(model)
        except (TypeError, ValueError, ImportError):
            continue
        if isinstance(res, tuple):
            ens, transform = res[0], (res[1] if len(res) > 1 else None)
            if transform is not None:
                return None
            return ens
        return res
    return None


def linear_coefficients(model, Z_sample, to_input=None):
    """``(w, b)`` with ``decision_function(x) == x @ w + b`` on the raw input, or None.

    The model is a binary linear classifier (``coef_`` of shape (1, p)), possibly the last
    step of a Pipeline whose other steps are affine maps (checked numerically on
    ``Z_sample``).
    """
    from sklearn.pipeline import Pipeline

    steps = []
    final = model
    if isinstance(model, Pipeline):
        steps = [s for _, s in model.steps[:-1] if s is not None and s != "passthrough"]
        final = model.steps[-1][1]
    coef = getattr(final, "coef_", None)
    icpt = getattr(final, "intercept_", None)
    if coef is None or icpt is None:
        return None
    coef = np.asarray(coef, dtype=np.float64)
    if coef.ndim == 2:
        if coef.shape[0] != 1:
            return None
        coef = coef[0]
    icpt = float(np.ravel(icpt)[0])
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
