"""Action grid and costs of P2CE.

Everything works on an internal float64 matrix: numeric columns hold their values and a
categorical column holds the index of its category in ``categories[j]``.

Grid (fitted per feature, from the training column)
----------------------------------------------------
* bounds: the ``grid_percentiles`` percentiles ``lb, ub`` of the column (linear
  interpolation, as :func:`numpy.percentile`);
* a column is *integer* when every training value is integral (binary columns are
  integer); then ``lb`` is floored, ``ub`` ceiled and the step ceiled (at least 1);
* step ``grid_step * (ub - lb)``; the grid is ``lb + k * step`` for ``k = 0..K`` with the
  last point clipped to ``ub`` (the reference implementation can overshoot ``ub`` by
  round-off; we do not);
* when ``lb == ub`` (e.g. a rare binary with ``p1 == p99 == 0``) the bounds become the
  column's observed minimum and maximum (the reference invents ``lb + 1`` instead); a
  constant column gets a one-point grid;
* a categorical column's grid is every category seen in training.

Candidates of a query ``x`` (at explain time): the grid values inside the feature's range
(``feature_ranges``), restricted to ``v >= x_j`` (``monotone[j] == +1``) or ``v <= x_j``
(``-1``), plus ``x_j`` itself (always, even outside the range: no change), ordered nearest
first by ``|v - x_j|`` (ties: smaller value first). A feature that may not change
(immutable, or outside ``features_to_vary``) has the single candidate ``x_j``. A
categorical feature lists ``x_j`` first, then the other allowed categories by decreasing
training frequency (with a ``monotone`` ordered categorical, only the codes on its side).
The constraints come resolved (:class:`~sklearn_xai.recourse._constraints.RecourseConstraints`).

Missing values (NaN) are values of their own: training statistics (percentiles, standard
deviation, CDF, categories) use the observed values only, a missing ``x_j`` is its own
first candidate followed by every grid value (numeric: nearest to the training median
first; categorical: by frequency), and NaN is never a candidate of a feature whose value
is present. A monotone feature whose value is missing stays missing (its direction cannot
be checked).

Costs (``sigma_j`` = training standard deviation, 0 replaced by 1, as the authors)
-----------------------------------------------------------------------------------
Per feature, ``delta_j = |x'_j - x_j| / sigma_j`` for a numeric feature and ``1`` for a
changed categorical feature or a changed missing value (the overlap distance of HEOM and
its rule for missing values). Then

* ``"max_distance"`` = ``max_j delta_j`` (the authors' c2);
* ``"mean_distance"`` = ``mean_j delta_j`` over all features, immutable ones included
  (the authors' c1 "average continuous distance");
* ``"l2"`` = ``sqrt(sum_j delta_j ** 2)``;
* ``"n_changes"`` = number of features with ``x'_j != x_j`` (c3);
* ``"percentile"`` = ``max_j |F_j(x'_j) - F_j(x_j)|`` with ``F_j`` the empirical CDF of
  the training column (mid-ranks: ``(#{< v} + #{<= v}) / 2n``); the authors smooth
  ``F_j`` with a Gaussian KDE, which we do not. A changed categorical feature or missing
  value counts 1.

Every cost is non-decreasing in each of ``delta_j``, ``[x'_j != x_j]`` and
``|F_j(x'_j) - F_j(x_j)|``, which the pruning relies on.
"""

import numpy as np

OBJECTIVES = ("max_distance", "n_changes", "mean_distance", "l2", "percentile")
_SAFE = 2.0**500  # magnitudes whose squares neither overflow nor underflow in float64


def _unsafe(m):
    return (m > _SAFE) | ((m > 0) & (m < 1.0 / _SAFE))


def _std(Z):
    """Column standard deviations of the observed values; columns of extreme magnitude
    are rescaled first, so their squares neither overflow nor vanish."""
    sigma = np.ones(Z.shape[1])
    for j in range(Z.shape[1]):
        col = Z[:, j][~np.isnan(Z[:, j])]
        if len(col) == 0:
            continue
        m = np.abs(col).max()
        if _unsafe(m):
            sigma[j] = np.std(col / m) * m
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                sigma[j] = col.std()
    return sigma


def _l2(delta):
    """Row norms of ``delta`` (>= 0); rows of extreme magnitude are rescaled first."""
    with np.errstate(over="ignore", under="ignore"):
        out = np.sqrt((delta**2).sum(axis=1))
    m = delta.max(axis=1) if delta.shape[1] else np.zeros(delta.shape[0])
    redo = np.flatnonzero(_unsafe(m))
    if redo.size:
        s = m[redo, None]
        out[redo] = m[redo] * np.sqrt(((delta[redo] / s) ** 2).sum(axis=1))
    return out


def _mean(delta):
    """Row means of ``delta`` (>= 0), without overflow of the sum."""
    with np.errstate(over="ignore"):
        # np.mean's arithmetic (a sum, then one division) without its wrapper's overhead
        out = np.add.reduce(delta, axis=1) / delta.shape[1]
    redo = ~np.isfinite(out)
    if redo.any():
        out[redo] = (delta[redo] / delta.shape[1]).sum(axis=1)
    return out


class FeatureGrid:
    """Fitted per-feature grids, scales and CDFs (see the module docstring)."""

    def __init__(self, Z, *, categorical, constraints, percentiles, step):
        n, d = Z.shape
        self.n_features = d
        self.categorical = np.asarray(categorical, dtype=bool)
        self.immutable = ~np.asarray(constraints.mutable, dtype=bool)
        self.monotone = np.asarray(constraints.direction, dtype=np.int64)
        self.range_low = np.asarray(constraints.range_low, dtype=np.float64)
        self.range_high = np.asarray(constraints.range_high, dtype=np.float64)
        self.allowed_codes = list(constraints.allowed_codes)
        self.grids = []
        self.is_integer = np.zeros(d, dtype=bool)
        self.sorted_train = []
        self.cat_order = []
        sigma = _std(Z)
        sigma[~np.isfinite(sigma) | (sigma <= 0)] = 1.0
        sigma[self.categorical] = 1.0
        self.sigma = sigma
        lo_p, hi_p = percentiles
        self.median = np.zeros(d)
        for j in range(d):
            col = Z[:, j][~np.isnan(Z[:, j])]
            if self.categorical[j]:
                codes, counts = np.unique(col.astype(np.int64), return_counts=True)
                order = codes[np.lexsort((codes, -counts))]
                self.cat_order.append(order.astype(np.float64))
                self.grids.append(np.sort(codes).astype(np.float64))
                self.sorted_train.append(None)
                continue
            self.cat_order.append(None)
            self.sorted_train.append(np.sort(col))
            if len(col) == 0:  # never observed: no grid value to move to
                self.grids.append(np.zeros(0))
                continue
            self.median[j] = np.median(col)
            is_int = bool(np.all(col == np.round(col)))
            self.is_integer[j] = is_int
            lb, ub = np.percentile(col, [lo_p, hi_p])
            if is_int:
                lb, ub = np.floor(lb), np.ceil(ub)
            if lb == ub:
                lb, ub = col.min(), col.max()
            if lb == ub:
                self.grids.append(np.array([lb], dtype=np.float64))
                continue
            width = ub - lb
            st = step * width
            if is_int:
                st = max(1.0, np.ceil(st))
            k = int(np.ceil(width / st - 1e-9))
            g = lb + st * np.arange(k + 1)
            g[-1] = min(g[-1], ub)
            g = np.unique(np.clip(g, lb, ub))
            self.grids.append(g.astype(np.float64))

    def cdf(self, j, v):
        """Mid-rank empirical CDF of training column ``j`` (observed values) at ``v``."""
        s = self.sorted_train[j]
        v = np.asarray(v, dtype=np.float64)
        if len(s) == 0:
            return np.zeros(v.shape)
        a = np.searchsorted(s, v, side="left")
        b = np.searchsorted(s, v, side="right")
        return (a + b) / (2.0 * len(s))

    def _in_range(self, j):
        g = self.grids[j]
        return g[(g >= self.range_low[j]) & (g <= self.range_high[j])]

    def candidates(self, x):
        """Candidate values per feature for query ``x``, nearest first.

        Returns
        -------
        values : list of ndarray
            ``values[j][0] == x[j]``.
        contrib : list of ndarray (n_j, 3)
            Per candidate: ``delta_j``, ``[changed]``, percentile shift.
        """
        values, contrib = [], []
        for j in range(self.n_features):
            xj = x[j]
            missing = bool(np.isnan(xj))
            if self.immutable[j] or (missing and self.monotone[j] != 0):
                v = np.array([xj])
            elif self.categorical[j]:
                order = self.cat_order[j]
                keep = order != xj
                if self.allowed_codes[j] is not None:
                    keep &= self.allowed_codes[j][order.astype(np.int64)]
                if self.monotone[j] > 0:
                    keep &= order > xj
                elif self.monotone[j] < 0:
                    keep &= order < xj
                v = np.concatenate([[xj], order[keep]])
            elif missing:
                g = self._in_range(j)
                v = np.concatenate([[xj], g[np.lexsort((g, np.abs(g - self.median[j])))]])
            else:
                g = self._in_range(j)
                if self.monotone[j] > 0:
                    g = g[g >= xj]
                elif self.monotone[j] < 0:
                    g = g[g <= xj]
                g = np.union1d(g, [xj])
                dist = np.abs(g - xj)
                v = g[np.lexsort((g, dist))]
            changed = np.ones(len(v))
            changed[0] = 0.0  # v[0] is x_j itself (missing or not)
            if self.categorical[j] or missing:
                c = np.column_stack([changed, changed, changed])
            else:
                delta = np.abs(v - xj) / self.sigma[j]
                pct = np.abs(self.cdf(j, v) - self.cdf(j, np.array([xj]))[0])
                c = np.column_stack([delta, changed, pct])
            values.append(np.asarray(v, dtype=np.float64))
            contrib.append(c)
        return values, contrib


def per_feature(grid, x, P):
    """Per-feature ``delta``, ``changed``, percentile shift of rows ``P`` against ``x``.

    Returns three arrays of shape (n, d).
    """
    P = np.atleast_2d(P)
    both = np.isnan(P) & np.isnan(x)[None, :]
    changed = ((P != x[None, :]) & ~both).astype(np.float64)
    with np.errstate(invalid="ignore"):
        delta = np.abs(P - x[None, :]) / grid.sigma[None, :]
    # categorical features and missing query values: overlap distance
    cat = grid.categorical | np.isnan(x)
    delta[:, cat] = changed[:, cat]
    pct = np.zeros_like(delta)
    for j in range(grid.n_features):
        if cat[j]:
            pct[:, j] = changed[:, j]
        elif np.any(changed[:, j]):
            pct[:, j] = np.abs(grid.cdf(j, P[:, j]) - grid.cdf(j, np.array([x[j]]))[0])
    return delta, changed, pct


def costs_from_parts(objectives, delta, changed, pct):
    """Cost matrix (n, n_objectives) from per-feature parts (see module docstring)."""
    cols = []
    for name in objectives:
        if name == "max_distance":
            cols.append(delta.max(axis=1))
        elif name == "mean_distance":
            cols.append(_mean(delta))
        elif name == "l2":
            cols.append(_l2(delta))
        elif name == "n_changes":
            cols.append(changed.sum(axis=1))
        elif name == "percentile":
            cols.append(pct.max(axis=1))
        else:  # pragma: no cover - validated in the estimator
            raise ValueError(f"unknown objective {name!r}")
    return np.column_stack(cols)


def costs(grid, objectives, x, P):
    """Cost matrix (n, n_objectives) of rows ``P`` (internal encoding) for query ``x``."""
    return costs_from_parts(objectives, *per_feature(grid, x, P))
