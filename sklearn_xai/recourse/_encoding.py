"""The tabular encoding shared by the recourse explainers (MACE and P2CE).

Three representations of a row are used:

* the **user space**: what the model takes (a DataFrame with the user's columns and dtypes,
  or a numeric array);
* the **internal space** ``Z``: a float64 array ``(n, d)``, one column per feature, where a
  categorical feature holds its integer code (index into ``categories_[j]``) and a continuous
  feature its raw value. Searches edit rows here; :meth:`TabularEncoder.to_user` rebuilds
  the user's rows exactly;
* the **embedding**: the space of the neighbour index, one-hot categoricals scaled by
  ``1/sqrt(2)`` and quantile-bin ordinals scaled to ``[0, 1]``, so a category change and a
  full-range bin change both add 1 to the squared distance.

Nothing here knows about a particular search method. The constraints are resolved in
:mod:`._constraints` and attached to a fitted encoder (:meth:`TabularEncoder.set_constraints`),
whose :meth:`TabularEncoder.allowed` the searches ask.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd
from sklearn.preprocessing import KBinsDiscretizer

from ._constraints import RecourseConstraints, feature_positions

__all__ = ["TabularEncoder", "MissingAwareEncoder", "robust_scales", "quantile_grid"]


def robust_scales(X):
    """Per-column spread for MAD-scaled distances, never zero.

    The median absolute deviation; where it is 0, the interquartile range; where that is 0,
    the range; where that is 0 (a constant column), 1.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float

    Returns
    -------
    scales : ndarray of shape (n_features,)
    """
    X = np.asarray(X, dtype=np.float64)
    med = np.median(X, axis=0)
    mad = np.median(np.abs(X - med), axis=0)
    q75, q25 = np.percentile(X, [75, 25], axis=0)
    iqr = q75 - q25
    rng = X.max(axis=0) - X.min(axis=0)
    return np.where(mad > 0, mad, np.where(iqr > 0, iqr, np.where(rng > 0, rng, 1.0)))


def _is_categorical_dtype(dtype):
    return (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or pd.api.types.is_bool_dtype(dtype)
    )


class TabularEncoder:
    """Maps rows between the user space, the internal space and the neighbour embedding.

    Parameters
    ----------
    categorical_features : "auto", array-like of str or int, or bool mask
        ``"auto"``: with a DataFrame, columns of categorical, object, string or bool dtype;
        with an array, none. Otherwise the names (DataFrame) or positions of the categorical
        features, or a boolean mask of length ``n_features``.
    n_bins : int, default=10
        Quantile bins per continuous feature for the embedding (``KBinsDiscretizer`` with
        ``strategy="quantile"``, ``quantile_method="averaged_inverted_cdf"``,
        ``subsample=None``: every option pinned so bins do not move between versions).
        Bins narrower than 1e-8 are merged by scikit-learn (its warning is silenced).

    Attributes
    ----------
    n_features_in_, feature_names_in_ (None for arrays), categorical_ (bool mask),
    categories_ (list, None for continuous), integer_ (continuous columns of integer dtype:
    counterfactual values are rounded), decimals_ (decimals kept per continuous column, at
    most 6: the precision of its training values), scales_ (MAD scale per feature, 1 for
    categoricals),
    low_, high_ (observed range), embed_dim_, ordered_ (categorical features with an order:
    ordered pandas categoricals and booleans), constraints_ (a
    :class:`~sklearn_xai.recourse._constraints.RecourseConstraints`, unconstrained until
    :meth:`set_constraints`).
    """

    def __init__(self, categorical_features="auto", n_bins=10):
        self.categorical_features = categorical_features
        self.n_bins = n_bins

    # ------------------------------------------------------------------ fitting
    def fit(self, X):
        """Learn categories, bins and scales from the rows ``X``."""
        X = self._fit_input(X)
        d = self.n_features_in_
        mask = self._fit_categorical_mask(d)
        self.categorical_ = mask
        self._fit_categories(X, mask)
        Z = self.to_internal(X, _fitting=True)

        cont = np.flatnonzero(~mask)
        self._fit_decimals(Z, cont)
        self.low_ = np.where(mask, 0.0, Z.min(axis=0))
        self.high_ = np.where(
            mask, np.array([len(c) - 1 if c is not None else 0 for c in self.categories_]),
            Z.max(axis=0),
        )
        self._fit_scales(Z, cont)
        self.cont_ = cont
        self.cat_ = np.flatnonzero(mask)
        self.embed_dim_ = int(
            sum(len(self.categories_[j]) for j in self.cat_) + cont.size
        )
        self.constraints_ = RecourseConstraints.unconstrained(d)
        # every column of one numpy int/float dtype, none categorical: to_user builds one
        # block of it
        dt = self.dtypes_[0] if self.dtypes_ else None
        self.block_dtype_ = dt if (
            isinstance(dt, np.dtype) and dt.kind in "fiu" and not self.categorical_.any()
            and all(t == dt for t in self.dtypes_)) else None
        return self

    def _fit_input(self, X):
        """Check ``X`` (a DataFrame, or a numeric 2-D array) and record its columns."""
        self.is_pandas_ = isinstance(X, pd.DataFrame)
        if self.is_pandas_:
            self.feature_names_in_ = [str(c) for c in X.columns]
            if len(set(self.feature_names_in_)) != X.shape[1]:
                raise ValueError("X has duplicated column names.")
            self.dtypes_ = list(X.dtypes)
            self.columns_ = list(X.columns)
        else:
            try:
                X = np.asarray(X, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(
                    "an array X must be numeric; pass a DataFrame for string categories."
                ) from None
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D, got shape {X.shape}.")
            self.feature_names_in_ = None
            self.dtypes_ = None
        n, d = X.shape
        self.n_features_in_ = d
        if n < 2:
            raise ValueError(f"at least 2 rows are needed to fit, got {n}.")
        return X

    def _fit_categorical_mask(self, d):
        """The boolean mask of the categorical features (``categorical_features``)."""
        cat = self.categorical_features
        if isinstance(cat, str) and cat == "auto":
            mask = (
                np.array([_is_categorical_dtype(t) for t in self.dtypes_])
                if self.is_pandas_
                else np.zeros(d, dtype=bool)
            )
        elif cat is None:
            mask = np.zeros(d, dtype=bool)
        else:  # names, positions or a boolean mask (a mapping is a TypeError)
            mask = np.zeros(d, dtype=bool)
            mask[feature_positions(cat, self.feature_names_in_, d,
                                   "categorical_features")] = True
        if self.is_pandas_:
            for j in np.flatnonzero(~mask):
                if not pd.api.types.is_numeric_dtype(self.dtypes_[j]) or pd.api.types.is_bool_dtype(
                    self.dtypes_[j]
                ):
                    raise ValueError(
                        f"feature {self.feature_names_in_[j]!r} has dtype {self.dtypes_[j]} but "
                        "is not declared categorical; list it in categorical_features."
                    )
        return mask

    def _fit_categories(self, X, mask):
        """``categories_``, ``ordered_`` and ``integer_`` of every feature."""
        d = len(mask)
        cols = [self._column(X, j) for j in range(d)]
        self.categories_ = []
        self.ordered_ = np.zeros(d, dtype=bool)
        self.integer_ = np.zeros(d, dtype=bool)
        for j in range(d):
            col = cols[j]
            if mask[j]:
                dt = self.dtypes_[j] if self.is_pandas_ else None
                if isinstance(dt, pd.CategoricalDtype):
                    cats = np.asarray(dt.categories, dtype=object)
                    self.ordered_[j] = bool(dt.ordered)
                else:
                    self.ordered_[j] = dt is not None and pd.api.types.is_bool_dtype(dt)
                    vals = pd.Series(col)
                    if vals.isna().any():
                        raise ValueError(self._nan_msg(j))
                    cats = np.asarray(self._sorted_categories(j, pd.unique(vals).tolist()),
                                      dtype=object)
                self.categories_.append(cats)
            else:
                self.categories_.append(None)
                if self.is_pandas_ and pd.api.types.is_integer_dtype(self.dtypes_[j]):
                    self.integer_[j] = True

    def _fit_decimals(self, Z, cont):
        """``decimals_``: the fewest decimals (up to 6) that hold each continuous column."""
        self.decimals_ = np.full(self.n_features_in_, 6, dtype=np.int64)
        for j in cont:
            col = Z[:, j]
            for k in range(7):
                if np.allclose(col, np.round(col, k), rtol=0, atol=1e-9 * max(1.0, 10.0**-k)):
                    self.decimals_[j] = k
                    break
            if self.integer_[j]:
                self.decimals_[j] = 0

    def _fit_scales(self, Z, cont):
        """``scales_`` (MAD of the continuous columns, 1 elsewhere) and ``kbins_``."""
        self.scales_ = np.ones(self.n_features_in_)
        if cont.size:
            self.scales_[cont] = robust_scales(Z[:, cont])
            self.kbins_ = KBinsDiscretizer(
                n_bins=self.n_bins,
                encode="ordinal",
                strategy="quantile",
                quantile_method="averaged_inverted_cdf",
                subsample=None,
                dtype=np.float64,
            )
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", category=UserWarning, module="sklearn")
                self.kbins_.fit(Z[:, cont])
        else:
            self.kbins_ = None

    def _sorted_categories(self, j, values):
        """Sorted categories of feature ``j``; mixed strings and numbers raise, as in
        scikit-learn's OneHotEncoder (they have no order, and ``1`` vs ``"1"`` is a trap)."""
        types = sorted({type(v).__name__ for v in values})
        if any(isinstance(v, str) for v in values) and any(
            isinstance(v, (numbers.Number, np.number)) for v in values
        ):
            raise TypeError(
                f"feature {self._name(j)!r} mixes strings and numbers (types {types}); a "
                "categorical feature must hold only strings or only numbers. Convert the "
                "column, e.g. with .astype(str)."
            )
        try:
            return sorted(values)
        except TypeError:
            raise TypeError(
                f"feature {self._name(j)!r} holds values that cannot be ordered (types "
                f"{types}); a categorical feature must hold only strings or only numbers."
            ) from None

    def _nan_msg(self, j):
        return (
            f"feature {self._name(j)!r} has missing values; impute them before explaining "
            "(the recourse search needs a value for every feature)."
        )

    def _name(self, j):
        return self.feature_names_in_[j] if self.feature_names_in_ is not None else f"x{j}"

    def set_constraints(self, constraints):
        """Use ``constraints`` (a :class:`RecourseConstraints` on this encoding)."""
        self.constraints_ = constraints
        return self

    # the constraints' per-feature arrays, as the searches read them
    @property
    def mutable_(self):
        return self.constraints_.mutable

    @property
    def range_low_(self):
        return self.constraints_.range_low

    @property
    def range_high_(self):
        return self.constraints_.range_high

    @property
    def allowed_codes_(self):
        return self.constraints_.allowed_codes

    @property
    def direction_(self):
        return self.constraints_.direction

    # ------------------------------------------------------------ conversions
    def _column(self, X, j):
        if self.is_pandas_:
            return X.iloc[:, j]
        return X[:, j]

    def _check_columns(self, X):
        if self.is_pandas_:
            if not isinstance(X, pd.DataFrame):
                raise TypeError(
                    "the explainer was fitted on a DataFrame; pass a DataFrame with columns "
                    f"{self.feature_names_in_}."
                )
            names = [str(c) for c in X.columns]
            if names != self.feature_names_in_:
                missing = [c for c in self.feature_names_in_ if c not in names]
                extra = [c for c in names if c not in self.feature_names_in_]
                raise ValueError(
                    "X has different columns from those seen in fit "
                    f"(missing {missing}, unexpected {extra}, order must match)."
                )
        else:
            if isinstance(X, pd.DataFrame):
                X = X.to_numpy()
            X = np.asarray(X)
            if X.ndim != 2 or X.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[-1] if X.ndim else 0} features, but the explainer was "
                    f"fitted with {self.n_features_in_} features."
                )
        return X

    def to_internal(self, X, *, _fitting=False):
        """User rows -> internal float array ``(n, d)``; unknown categories raise ValueError."""
        if not _fitting:
            X = self._check_columns(X)
        n = X.shape[0]
        Z = np.empty((n, self.n_features_in_), dtype=np.float64)
        for j in range(self.n_features_in_):
            col = self._column(X, j)
            if self.categorical_[j]:
                cats = self.categories_[j]
                if isinstance(getattr(col, "dtype", None), pd.CategoricalDtype) and list(
                    col.dtype.categories
                ) == list(cats):
                    codes = col.cat.codes.to_numpy().astype(np.int64)
                    if (codes < 0).any():
                        raise ValueError(self._nan_msg(j))
                else:
                    vals = pd.Series(np.asarray(col, dtype=object))
                    if vals.isna().any():
                        raise ValueError(self._nan_msg(j))
                    lookup = {c: k for k, c in enumerate(cats)}
                    codes = vals.map(lookup)
                    if codes.isna().any():
                        bad = vals[codes.isna()].iloc[0]
                        raise ValueError(
                            f"feature {self._name(j)!r}: unknown category {bad!r} (not seen in "
                            f"fit; known: {list(cats)[:20]})."
                        )
                    codes = codes.to_numpy(dtype=np.int64)
                Z[:, j] = codes
            else:
                try:
                    v = np.asarray(col, dtype=np.float64)
                except (TypeError, ValueError):
                    raise ValueError(
                        f"feature {self._name(j)!r} is continuous but holds non-numeric values."
                    ) from None
                if not np.isfinite(v).all():
                    raise ValueError(self._nan_msg(j))
                Z[:, j] = v
        return Z

    def snap(self, Z):
        """Round each continuous column to the precision of its training values (a copy).

        Integer dtypes and float columns holding whole numbers are rounded to integers, a
        column with at most k <= 6 decimals in the training data to k decimals, so a search
        never proposes 36.0037 years or a change that is invisible when printed.
        """
        Z = np.array(Z, dtype=np.float64, copy=True)
        for j in self.cont_:
            Z[:, j] = np.round(Z[:, j], int(self.decimals_[j]))
        return Z

    def to_user(self, Z):
        """Internal rows -> the user's space (DataFrame with original dtypes, or array)."""
        Z = np.asarray(Z, dtype=np.float64)
        if not self.is_pandas_:
            out = Z.copy()
            for j in self.cat_:
                out[:, j] = np.asarray(self.categories_[j], dtype=np.float64)[
                    Z[:, j].astype(np.int64)
                ]
            return out
        V = Z.copy()
        V[:, self.integer_] = np.round(V[:, self.integer_])      # continuous columns only
        if self.block_dtype_ is not None:
            # every column of one numpy dtype: one block, as the per-column frame below
            # holds it column by column (the same values and dtypes, built in a fifth of
            # the time, and a model validates a one-block frame faster)
            return pd.DataFrame(V.astype(self.block_dtype_), columns=self.columns_)
        data = {}
        for j, name in enumerate(self.columns_):
            dt = self.dtypes_[j]
            if self.categorical_[j]:
                codes = Z[:, j].astype(np.int64)
                if isinstance(dt, pd.CategoricalDtype):
                    data[name] = pd.Categorical.from_codes(codes, dtype=dt)
                else:
                    vals = self.categories_[j][codes]
                    data[name] = pd.array(vals, dtype=dt) if not pd.api.types.is_object_dtype(
                        dt
                    ) else vals
            else:
                data[name] = V[:, j].astype(dt)
        return pd.DataFrame(data, columns=self.columns_)

    # -------------------------------------------------------------- embedding
    def embed(self, Z, continuous="bins"):
        """Internal rows -> neighbour-index features ``(n, embed_dim_)``.

        Categorical features one-hot with entries ``1 / sqrt(2)`` (a change weighs 1 in
        Euclidean distance); continuous features as their quantile-bin index over the
        number of bins (``continuous="bins"``, MACE's index) or divided by their robust
        scale (``continuous="scaled"``, the yNN metric).
        """
        Z = np.asarray(Z, dtype=np.float64)
        parts = []
        for j in self.cat_:
            k = len(self.categories_[j])
            oh = np.zeros((Z.shape[0], k))
            oh[np.arange(Z.shape[0]), Z[:, j].astype(np.int64)] = 1.0 / np.sqrt(2.0)
            parts.append(oh)
        if self.cont_.size:
            if continuous == "bins":
                b = self.kbins_.transform(Z[:, self.cont_])
                parts.append(b / np.maximum(self.kbins_.n_bins_ - 1, 1))
            else:
                parts.append(Z[:, self.cont_] / self.scales_[self.cont_])
        return np.hstack(parts) if parts else np.zeros((Z.shape[0], 0))

    def cells(self, Z):
        """Internal rows with continuous values replaced by their quantile-bin index."""
        Z = np.array(Z, dtype=np.float64, copy=True)
        if self.cont_.size:
            Z[:, self.cont_] = self.kbins_.transform(Z[:, self.cont_])
        return Z

    # ------------------------------------------------------------ constraints
    def allowed(self, j, x_j, values):
        """Which of ``values`` (internal) may feature ``j`` take when the query has ``x_j``.

        Returns a bool array; the query's own value is never listed as a change.
        """
        return self.constraints_.allowed(j, x_j, values, self.categorical_[j])

    def cost(self, Z, x):
        """Paper proximity cost: categorical changes + sum of MAD-scaled continuous changes.

        Parameters
        ----------
        Z : ndarray of shape (n, d), internal rows
        x : ndarray of shape (d,) or (n, d), internal query (per row)

        Returns
        -------
        cost : ndarray of shape (n,)
        """
        diff = np.abs(np.asarray(Z, dtype=np.float64) - np.atleast_2d(x))
        c = (diff[:, self.cat_] > 0).sum(axis=1).astype(np.float64)
        if self.cont_.size:
            c += (diff[:, self.cont_] / self.scales_[self.cont_]).sum(axis=1)
        return c


class MissingAwareEncoder(TabularEncoder):
    """:class:`TabularEncoder` that keeps missing values, for models that accept NaN.

    With ``allow_missing=False`` it is exactly a ``TabularEncoder``. With
    ``allow_missing=True`` a missing value (NaN, None, ``pd.NA``) is ``NaN`` in a continuous
    internal column and the code ``-1`` in a categorical one, and decodes back to a
    missing value. Categories, bins and scales are learned from the observed values (for
    fitting, the missing entries of a column are filled with evenly spaced quantiles of
    its observed values, or with its most frequent category). A counterfactual may keep a
    missing value or replace it by a real value (any allowed value: a missing value has no
    direction for ``monotone``); no allowed value is ever missing, so no search writes a
    new one. Moving between missing and a value costs 1, like a category change. In the
    neighbour embedding a missing category is an all-zero one-hot block, and a continuous
    column that had missing values in fit gets an indicator column.
    """

    def __init__(self, categorical_features="auto", n_bins=10, allow_missing=False):
        super().__init__(categorical_features=categorical_features, n_bins=n_bins)
        self.allow_missing = allow_missing

    @staticmethod
    def _missing(X):
        if isinstance(X, pd.DataFrame):
            return X.isna().to_numpy()
        return pd.isna(np.asarray(X))

    def fit(self, X):
        miss = self._missing(X) if self.allow_missing else None
        if miss is None or not miss.any():
            super().fit(X)
            self.missing_fit_ = np.zeros(self.n_features_in_, dtype=bool)
            return self
        X = X.copy()
        for j in np.flatnonzero(miss.any(axis=0)):
            m = miss[:, j]
            col = X.iloc[:, j] if isinstance(X, pd.DataFrame) else X[:, j]
            if m.all():
                name = X.columns[j] if isinstance(X, pd.DataFrame) else f"x{j}"
                raise ValueError(f"feature {name!r} has only missing values in fit; drop it or "
                                 "pass rows where it is observed.")
            seen = col[~m]
            if isinstance(X, pd.DataFrame) and not (
                    pd.api.types.is_numeric_dtype(col.dtype)
                    and not isinstance(col.dtype, pd.CategoricalDtype)):
                fill = seen.mode(dropna=True).iloc[0]
                X.isetitem(j, col.fillna(fill))
            else:
                q = (np.arange(m.sum()) + 0.5) / m.sum()
                v = np.quantile(np.asarray(seen, dtype=np.float64), q, method="inverted_cdf")
                if isinstance(X, pd.DataFrame):
                    col = col.copy()
                    col[m] = v
                    X.isetitem(j, col)
                else:
                    X[m, j] = v
        super().fit(X)
        self.missing_fit_ = miss.any(axis=0)
        return self

    def to_internal(self, X, *, _fitting=False):
        if _fitting or not self.allow_missing:
            return super().to_internal(X, _fitting=_fitting)
        X = self._check_columns(X)
        miss = self._missing(X)
        if not miss.any():
            return super().to_internal(X)
        X = X.copy()
        for j in np.flatnonzero(miss.any(axis=0)):
            fill = self.categories_[j][0] if self.categorical_[j] else 0.0
            if isinstance(X, pd.DataFrame):
                col = X.iloc[:, j]
                if self.categorical_[j]:  # the query's categories may lack ``fill``
                    col = col.astype(object)
                X.isetitem(j, col.where(~miss[:, j], fill))
            else:
                X[miss[:, j], j] = fill
        Z = super().to_internal(X)
        Z[miss] = np.where(self.categorical_, -1.0, np.nan)[np.nonzero(miss)[1]]
        return Z

    def _missing_internal(self, Z):
        miss = np.isnan(Z)
        miss[:, self.cat_] = Z[:, self.cat_] < 0
        return miss

    def _filled(self, Z, miss):
        return np.where(miss, np.where(self.categorical_, 0.0, self.low_)[None, :], Z)

    def to_user(self, Z):
        Z = np.asarray(Z, dtype=np.float64)
        if not self.allow_missing:
            return super().to_user(Z)
        miss = self._missing_internal(Z)
        if not miss.any():
            return super().to_user(Z)
        U = super().to_user(self._filled(Z, miss))
        for j in np.flatnonzero(miss.any(axis=0)):
            if isinstance(U, pd.DataFrame):
                U.isetitem(j, U.iloc[:, j].mask(miss[:, j]))
            else:
                U[miss[:, j], j] = np.nan
        return U

    def embed(self, Z, continuous="bins"):
        Z = np.asarray(Z, dtype=np.float64)
        if not self.allow_missing:
            return super().embed(Z, continuous)
        miss = self._missing_internal(Z)
        E = super().embed(self._filled(Z, miss), continuous)
        off = 0
        for j in self.cat_:
            k = len(self.categories_[j])
            E[miss[:, j], off : off + k] = 0.0
            off += k
        ind = self.cont_[self.missing_fit_[self.cont_]]
        return np.hstack([E, miss[:, ind].astype(np.float64)]) if ind.size else E

    def cells(self, Z):
        Z = np.asarray(Z, dtype=np.float64)
        if not self.allow_missing:
            return super().cells(Z)
        miss = self._missing_internal(Z)
        C = super().cells(self._filled(Z, miss))
        C[miss] = -1.0
        return C

    def allowed(self, j, x_j, values):
        values = np.asarray(values, dtype=np.float64)
        if not self.allow_missing:
            return super().allowed(j, x_j, values)
        real = ~np.isnan(values) & (values >= 0 if self.categorical_[j] else True)
        x_missing = np.isnan(x_j) or (self.categorical_[j] and x_j < 0)
        if not x_missing:
            return super().allowed(j, x_j, np.where(real, values, x_j)) & real
        if not self.mutable_[j]:
            return np.zeros(values.shape, dtype=bool)
        ok = real.copy()
        if self.categorical_[j]:
            if self.allowed_codes_[j] is not None:
                ok[real] &= self.allowed_codes_[j][values[real].astype(np.int64)]
        else:
            ok &= (values >= self.range_low_[j]) & (values <= self.range_high_[j])
        return ok

    def cost(self, Z, x):
        Z = np.asarray(Z, dtype=np.float64)
        X = np.broadcast_to(np.atleast_2d(np.asarray(x, dtype=np.float64)), Z.shape)
        if not self.allow_missing:
            return super().cost(Z, X)
        mz, mx = self._missing_internal(Z), self._missing_internal(X)
        if not (mz.any() or mx.any()):
            return super().cost(Z, X)
        either = mz | mx
        return super().cost(np.where(either, 0.0, Z), np.where(either, 0.0, X)) + (
            mz ^ mx).sum(axis=1)


def quantile_grid(enc, Z, n_bins=None):
    """Candidate values of every feature on the encoder's bins, for exhaustive searches.

    A continuous feature gets the training values at the quantiles ``0, 1 / (2 n_bins),
    ..., 1`` (``method="inverted_cdf"``: real observed values), i.e. the edges of its
    ``n_bins`` quantile bins and the median of each bin -- 21 values for ``n_bins=10`` --
    snapped to the column's precision and de-duplicated; missing values are ignored. A
    categorical feature gets all its category codes. Constraints are not applied here
    (see :meth:`TabularEncoder.allowed`).

    Parameters
    ----------
    enc : fitted TabularEncoder
    Z : ndarray of shape (n_samples, n_features)
        Internal training rows (:meth:`TabularEncoder.to_internal`).
    n_bins : int or None
        Defaults to ``enc.n_bins``.

    Returns
    -------
    grid : list of ``n_features`` sorted 1-D float arrays (internal values)
    """
    Z = np.asarray(Z, dtype=np.float64)
    n_bins = enc.n_bins if n_bins is None else int(n_bins)
    qs = np.linspace(0.0, 1.0, 2 * n_bins + 1)
    grid = []
    for j in range(enc.n_features_in_):
        if enc.categorical_[j]:
            grid.append(np.arange(len(enc.categories_[j]), dtype=np.float64))
            continue
        col = Z[:, j]
        col = col[np.isfinite(col)]
        if col.size == 0:
            grid.append(np.zeros(0))
            continue
        v = np.quantile(col, qs, method="inverted_cdf")
        v = np.round(v, int(enc.decimals_[j]))
        grid.append(np.unique(v))
    return grid
