"""Sequential knockoffs for mixed numeric / categorical data (Kormaksson et al. 2021)."""

from __future__ import annotations

import time
import warnings
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.base import BaseEstimator, _fit_context
from sklearn.linear_model import LassoCV, LogisticRegressionCV
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.extmath import softmax
from sklearn.utils.validation import validate_data

from .._progress import Progress
from .._utils import draw_base_seed as _draw_base_seed
from .._utils import row_matmul
from ._base import _discrete_support, _row_draws, _sample, _to_support

if TYPE_CHECKING:
    from typing import Literal, Self

    from numpy.typing import ArrayLike

    from sklearn_xai._typing import RandomStateLike

# a lasso coefficient (standardised column on standardised predictors) at most this large
# is round-off, not a selected predictor
_COEF_ROUNDOFF = 1e-10


def _as_frame(X):
    if isinstance(X, pd.DataFrame):
        return X
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"Expected a 2-D array, got an array of shape {arr.shape}.")
    return pd.DataFrame(arr)


class SequentialKnockoffs(BaseEstimator):
    """Knockoffs for mixed-type data, one column at a time.

    ``fit`` draws a random column order. For each column ``j`` in that order it fits a
    model of ``X_j`` on all other original columns and on the knockoff columns drawn
    so far (one-hot encoded categories, standardised numbers):

    * numeric ``X_j``: a cross-validated lasso (``LassoCV``); a knockoff is the
      prediction plus Gaussian noise with the residual standard deviation
      ``sqrt(RSS / (n - nnz - 1))`` (mapped onto the column's observed values when it
      is discrete, see ``support``);
    * categorical ``X_j``: a cross-validated multinomial logistic regression
      (``LogisticRegressionCV``, L2 penalty); a knockoff is drawn from the predicted
      class probabilities, so it is always a level seen in training.

    The training rows' own knockoffs are drawn while fitting (they feed the later
    columns' models); ``sample`` then applies the fitted models to new rows.

    Edge cases, handled rather than crashed on: a constant column's knockoff is its
    constant; categorical levels seen fewer than ``cv`` times are pooled into one
    class for the model and, when that class is drawn, one of the pooled levels is
    drawn in proportion to its training frequency; a categorical column with a single
    model class is drawn from its training frequencies.

    Parameters
    ----------
    categorical_features : array-like of int, str or bool, or None, default=None
        Categorical columns, as indices, names or a boolean mask. ``None``: the
        columns of a DataFrame whose dtype is not numeric (object, category, string,
        bool); for an array, no column.
    cv : int, default=5
        Cross-validation folds of each column's model.
    Cs : int, default=10
        Number of inverse regularisation strengths tried by each logistic model.
    support : {"auto"} or None, default="auto"
        ``"auto"``: a discrete numeric column (2 to ``MAX_DISCRETE_LEVELS = 20``
        distinct values in ``fit``, and at most half as many as rows: binary indicators,
        counts, integer-coded categories that a pipeline may one-hot encode) gets knockoffs
        among the values it took in ``fit``, by the marginal quantile transform of
        :class:`~sklearn_xai.knockoffs.GaussianKnockoffs`: the Gaussian draw ``t``
        becomes ``u = Phi((t - mean_j) / std_j)`` (the column's mean and standard
        deviation in ``fit``), then the ``u``-quantile of the column's ``fit`` values,
        which keeps the column's observed frequencies. Other numeric columns keep the
        Gaussian draws; categorical columns are always drawn among their levels.
        ``None``: Gaussian draws for every numeric column.
    random_state : int, RandomState instance or None, default=None
        Seeds the column order and the training rows' knockoffs drawn during ``fit``
        (the cross-validation folds are deterministic).
    verbose : int, default=0
        Progress of ``fit`` on stderr: ``0`` nothing; ``1`` a progress bar over the columns
        (one model each; tqdm's when it is installed) once the fit has run about 2 s;
        ``2`` also the time of each column's model. The fit does not depend on it.

    Attributes
    ----------
    order_ : ndarray of shape (n_features,)
        Column order of the sequential construction.
    categorical_ : ndarray of bool, shape (n_features,)
        Which columns are modelled as categorical.
    levels_ : list
        Per column: the sorted training levels (categorical) or None.
    discrete_ : ndarray of bool, shape (n_features,)
        Numeric columns whose knockoffs ``support="auto"`` maps onto their observed
        values.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` is a DataFrame with string column names.

    Notes
    -----
    ``fit`` runs ``n_features`` cross-validated fits (``cv`` folds each, a lasso path
    or ``Cs`` logistic fits per fold) on ``n_samples`` rows with about twice as many
    encoded predictors as the data has. ``sample`` costs ``O(n K D^2)`` for ``K``
    knockoffs per row and ``D`` encoded predictors. Knockoffs are exchangeable only
    as far as the per-column models are right.

    :meth:`sample_seeded` is the same draw on rows already checked, seeded per row by a
    base seed and one key per row: the hook :class:`~sklearn_xai.shapley.KnockoffSHAP` and
    :class:`~sklearn_xai.shapley.KnockoffSAGE` call (a third-party sampler may offer it
    too); use ``sample`` otherwise.
    """

    _parameter_constraints: dict = {
        "categorical_features": ["array-like", None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "Cs": [Interval(Integral, 1, None, closed="left")],
        "support": [StrOptions({"auto"}), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, categorical_features: ArrayLike | None = None, cv: int = 5, Cs: int = 10,
                 support: Literal["auto"] | None = "auto",
                 random_state: RandomStateLike = None, verbose: int = 0) -> None:
        self.categorical_features = categorical_features
        self.cv = cv
        self.Cs = Cs
        self.support = support
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ helpers
    def _categorical_mask(self, frame):
        p = frame.shape[1]
        cf = self.categorical_features
        if cf is None:
            return np.array(
                [not pd.api.types.is_numeric_dtype(frame.dtypes.iloc[j])
                 or pd.api.types.is_bool_dtype(frame.dtypes.iloc[j]) for j in range(p)]
            )
        cf = np.asarray(cf)
        mask = np.zeros(p, dtype=bool)
        if cf.dtype == bool:
            if cf.shape != (p,):
                raise ValueError(
                    f"categorical_features as a boolean mask must have length {p}, "
                    f"got shape {cf.shape}."
                )
            return cf.copy()
        for item in cf.ravel():
            if isinstance(item, str | np.str_):
                names = [str(c) for c in frame.columns]
                if str(item) not in names:
                    raise ValueError(f"categorical_features names unknown column {item!r}.")
                mask[names.index(str(item))] = True
            elif isinstance(item, Integral | np.integer):
                if not -p <= int(item) < p:
                    raise ValueError(
                        f"categorical_features index {item} is out of range for {p} columns."
                    )
                mask[int(item)] = True
            else:
                raise TypeError(
                    "categorical_features must hold column indices, names or booleans, "
                    f"got {item!r}."
                )
        return mask

    def _encode_column(self, j, values):
        """Encode one column's values (1-D) into the predictor block ``(n, d_j)``."""
        if self.categorical_[j]:
            lv = self.levels_[j]
            codes = self._codes(j, values)
            out = np.zeros((len(values), len(lv)))
            out[np.arange(len(values)), codes] = 1.0
            return out
        v = np.asarray(values, dtype=float)
        return ((v - self._center[j]) / self._scale[j])[:, None]

    def _codes(self, j, values):
        lv = self.levels_[j]
        index = {level: k for k, level in enumerate(lv)}
        try:
            return np.array([index[v] for v in values], dtype=int)
        except KeyError as exc:
            raise ValueError(
                f"Column {j} has level {exc.args[0]!r} that was not seen in fit."
            ) from None

    def _check_frame(self, X, reset):
        """Validate ``X``; a DataFrame keeps its dtypes, an array becomes float64
        (object when ``categorical_features`` is given, its other columns numeric)."""
        min_samples = 2 if reset else 1
        if isinstance(X, pd.DataFrame):
            validate_data(self, X, reset=reset, skip_check_array=True)
            if X.shape[0] < min_samples:
                raise ValueError(f"Found array with {X.shape[0]} sample(s) (shape={X.shape}) "
                                 f"while a minimum of {min_samples} is required.")
            if X.shape[1] == 0:
                raise ValueError("X has 0 feature(s); a minimum of 1 is required.")
            frame = X
        else:
            dtype = np.float64 if self.categorical_features is None else None
            arr = validate_data(self, X, reset=reset, dtype=dtype,
                                ensure_all_finite=dtype is not None,
                                ensure_min_samples=min_samples)
            frame = pd.DataFrame(arr)
            if arr.dtype == object:  # a mixed array: its numeric columns are numbers
                for j in np.flatnonzero(~self._categorical_mask(frame)):
                    try:
                        frame[j] = pd.to_numeric(frame[j])
                    except (TypeError, ValueError):
                        pass  # fit names the column: not numeric, not listed
        for j in range(frame.shape[1]):
            col = frame.iloc[:, j]
            if col.isna().any():
                raise ValueError(
                    f"X contains missing values (NaN) in column {j} ({str(frame.columns[j])!r}); "
                    "knockoffs model complete rows: impute them or drop those rows.")
            if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(
                    col.dtype) and np.isinf(col.to_numpy(dtype=float)).any():
                raise ValueError(f"Column {j} of X contains infinity.")
        return frame

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike | pd.DataFrame, y: None = None) -> Self:
        """Fit one model per column, in a random order.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            At least ``2 * cv`` rows.
        y : None
            Ignored.

        Returns
        -------
        object
            The fitted sampler (``self``).
        """
        frame = self._check_frame(X, reset=True)
        n, p = frame.shape
        if n < 2 * self.cv:
            raise ValueError(f"SequentialKnockoffs needs at least 2 * cv = {2 * self.cv} rows.")
        self.categorical_ = self._categorical_mask(frame)
        for j in np.flatnonzero(~self.categorical_):
            if not pd.api.types.is_numeric_dtype(frame.dtypes.iloc[j]):
                raise ValueError(
                    f"Column {j} is not numeric; list it in categorical_features."
                )
        rng = check_random_state(self.random_state)
        self.order_ = rng.permutation(p)
        self.levels_ = [None] * p
        self._center = np.zeros(p)
        self._scale = np.ones(p)
        cols = [frame.iloc[:, j].to_numpy() for j in range(p)]
        self._supports = [None] * p
        for j in range(p):
            if self.categorical_[j]:
                self.levels_[j] = list(pd.unique(pd.Series(cols[j])))
                try:
                    self.levels_[j] = sorted(self.levels_[j])
                except TypeError:
                    pass
            else:
                v = cols[j].astype(float)
                with np.errstate(over="ignore", invalid="ignore"):
                    self._center[j] = v.mean()
                    sd = v.std()
                if not (np.isfinite(self._center[j]) and np.isfinite(sd)):
                    raise ValueError(
                        f"Column {j} has values too large to standardise in float64 (its "
                        "mean or standard deviation overflows to inf); rescale it."
                    )
                self._scale[j] = sd if sd > 0 else 1.0
                if self.support == "auto" and sd > 0:
                    self._supports[j] = _discrete_support(v)
        self.discrete_ = np.array([sup is not None for sup in self._supports], dtype=bool)
        enc_x = [self._encode_column(j, cols[j]) for j in range(p)]
        enc_ko = [None] * p
        self._models = [None] * p
        base = _draw_base_seed(rng)
        normals, unif = _row_draws(base, range(n), p, 2 * p)
        unif = unif.reshape(n, 2, p)
        with Progress(p, verbose=self.verbose, desc="SequentialKnockoffs.fit",
                      unit="columns") as progress:
            for t, j in enumerate(self.order_):
                t0 = time.perf_counter()
                Z = self._design(enc_x, enc_ko, j, t)
                self._models[j] = self._fit_column(j, Z, cols[j])
                values = self._draw_column(j, Z, normals[:, j], unif[:, 0, j], unif[:, 1, j])
                enc_ko[j] = self._encode_column(j, values)
                progress.update(1, seconds=time.perf_counter() - t0,
                                what=f"column {self._column_label(frame, j)}")
        return self

    @staticmethod
    def _column_label(frame, j):
        return f"{j} ({str(frame.columns[j])!r})"

    def _design(self, enc_x, enc_ko, j, t):
        blocks = [enc_x[k] for k in range(len(enc_x)) if k != j]
        blocks += [enc_ko[k] for k in self.order_[:t]]
        return np.hstack(blocks) if blocks else np.zeros((enc_x[0].shape[0], 0))

    def _fit_column(self, j, Z, values):
        n = len(values)
        if not self.categorical_[j]:
            v = values.astype(float)
            if np.ptp(v) == 0 or Z.shape[1] == 0:
                return {"kind": "constant" if np.ptp(v) == 0 else "gaussian_marginal",
                        "value": float(v[0]), "mean": float(v.mean()), "sigma": float(v.std())}
            # the lasso is fitted to the standardised column (the predictors are
            # standardised too) and mapped back, so a column's scale changes only the
            # scale of its knockoffs; coefficients below _COEF_ROUNDOFF (round-off left
            # by coordinate descent, whose appearance depends on the last bits of the
            # data) do not count as selected in the residual degrees of freedom
            t = (v - self._center[j]) / self._scale[j]
            model = LassoCV(cv=self.cv).fit(Z, t)
            resid = t - model.predict(Z)
            nnz = int(np.count_nonzero(np.abs(model.coef_) > _COEF_ROUNDOFF))
            dof = max(n - nnz - 1, 1)
            sigma = float(np.sqrt(resid @ resid / dof))
            return {"kind": "lasso", "model": model, "sigma": sigma}
        lv = self.levels_[j]
        codes = self._codes(j, values)
        counts = np.bincount(codes, minlength=len(lv))
        frequent = counts >= self.cv
        rare = np.flatnonzero(~frequent)
        # model classes: frequent level codes, plus -1 for the pooled rare levels
        target = np.where(frequent[codes], codes, -1)
        classes = np.unique(target)
        info = {
            "kind": "categorical",
            "freq": counts / counts.sum(),
            "rare": rare,
            "rare_p": counts[rare] / counts[rare].sum() if len(rare) else None,
        }
        if len(classes) < 2 or Z.shape[1] == 0:
            info["kind"] = "categorical_marginal"
            return info
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The least populated class")
            model = LogisticRegressionCV(
                Cs=self.Cs, cv=self.cv, l1_ratios=(0.0,), scoring="neg_log_loss",
                use_legacy_attributes=False, max_iter=1000,
            ).fit(Z, target)
        info["model"] = model
        return info

    def _draw_column(self, j, Z, normal, u1, u2):
        """Knockoff values of column ``j`` given the design ``Z`` and per-row draws."""
        info = self._models[j]
        kind = info["kind"]
        m = Z.shape[0]
        if kind == "constant":
            return np.full(m, info["value"])
        if kind in ("gaussian_marginal", "lasso"):
            if kind == "gaussian_marginal":
                values = info["mean"] + info["sigma"] * normal
            else:  # the lasso models the standardised column
                values = self._center[j] + self._scale[j] * (
                    _lasso_predict(info["model"], Z) + info["sigma"] * normal)
            if self._supports[j] is not None:
                values = _to_support(values, self._center[j], self._scale[j],
                                     self._supports[j])
            return values
        lv = self.levels_[j]
        if kind == "categorical_marginal":
            cdf = np.cumsum(info["freq"])
            codes = np.minimum(np.searchsorted(cdf, u1 * cdf[-1], side="right"), len(lv) - 1)
        else:
            model = info["model"]
            proba = _logistic_proba(model, Z)
            cdf = np.cumsum(proba, axis=1)
            pick = (u1[:, None] * cdf[:, -1:] >= cdf).sum(axis=1)
            pick = np.minimum(pick, proba.shape[1] - 1)
            codes = np.asarray(model.classes_)[pick].astype(int)
            pooled = codes == -1
            if pooled.any():
                rcdf = np.cumsum(info["rare_p"])
                r = np.searchsorted(rcdf, u2[pooled] * rcdf[-1], side="right")
                codes[pooled] = info["rare"][np.minimum(r, len(info["rare"]) - 1)]
        out = np.empty(m, dtype=object)
        for k, level in enumerate(lv):
            out[codes == k] = level
        return out

    # ------------------------------------------------------------------ sample
    def sample(self, X: ArrayLike | pd.DataFrame, n_knockoffs: int = 1,
               random_state: RandomStateLike = None) -> np.ndarray:
        """Draw knockoffs of (possibly new) rows with the fitted column models.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to draw knockoffs for, with the columns (and categorical levels) given
            to ``fit``; need not be the training rows.
        n_knockoffs : int, default=1
            Independent knockoffs per row.
        random_state : int, RandomState instance or None, default=None
            One integer is drawn from it; row ``i`` uses its own random stream seeded by
            that integer and ``i``, so results do not depend on batching.

        Returns
        -------
        ndarray of shape (n_samples, n_knockoffs, n_features)
            ``X_tilde[i, k]`` is the ``k``-th knockoff of row ``i``: float64 when every
            column is numeric (a numeric array with numeric categorical levels included),
            else object.
        """
        return _sample(self, X, n_knockoffs, random_state,
                       lambda X: self._check_frame(X, reset=False))

    def sample_seeded(self, X: np.ndarray, n_knockoffs: int, base_seed: int,
                      row_indices: ArrayLike | None) -> np.ndarray:
        """Knockoffs of rows already checked, seeded per row.

        The knockoff explainers call this (a package-internal hook, public so that a
        third-party sampler can offer it); ``sample`` checks ``X``, draws one base seed
        and calls it.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Rows already checked against ``fit`` (columns and levels) (no checks here).
        n_knockoffs : int
            Independent knockoffs per row.
        base_seed : int
            The call's seed.
        row_indices : array-like of int of shape (n_samples,) or None
            One key per row (its content key or its position); ``None``: ``0..n-1``.
            Row ``i``'s draws depend only on ``base_seed`` and ``row_indices[i]``.

        Returns
        -------
        ndarray of shape (n_samples, n_knockoffs, n_features)
            The knockoffs of each row; row ``i``'s depend only on ``X[i]`` and its key.
        """
        frame = _as_frame(X)
        n, p = frame.shape
        K = n_knockoffs
        if row_indices is None:
            row_indices = range(n)
        normals, unif = _row_draws(base_seed, row_indices, K * p, 2 * K * p)
        cols = [np.repeat(frame.iloc[:, j].to_numpy(), K) for j in range(p)]
        normals = normals.reshape(n * K, p)
        unif = unif.reshape(n * K, 2, p)
        enc_x = [self._encode_column(j, cols[j]) for j in range(p)]
        enc_ko = [None] * p
        out_cols = [None] * p
        for t, j in enumerate(self.order_):
            Z = self._design(enc_x, enc_ko, j, t)
            values = self._draw_column(j, Z, normals[:, j], unif[:, 0, j], unif[:, 1, j])
            out_cols[j] = values
            enc_ko[j] = self._encode_column(j, values)
        numeric = all(
            (not self.categorical_[j])
            or all(isinstance(v, int | float | np.integer | np.floating) and not
                   isinstance(v, bool | np.bool_) for v in self.levels_[j])
            for j in range(p)
        )
        dtype = np.float64 if numeric else object
        out = np.empty((n * K, p), dtype=dtype)
        for j in range(p):
            out[:, j] = out_cols[j]
        return out.reshape(n, K, p)


# the column models' predictions at sampling time, row by row (row_matmul): BLAS's
# blocking of one product over all rows would make a row's knockoffs depend, in their
# last bits, on the rows drawn with it

def _lasso_predict(model, Z):
    """``model.predict(Z)`` of a fitted linear regression, each row on its own."""
    return row_matmul(Z, model.coef_[:, None])[:, 0] + model.intercept_


def _logistic_proba(model, Z):
    """``model.predict_proba(Z)`` of a fitted logistic regression, each row's decision
    function on its own, then the model's link: the logistic function for two classes,
    the softmax for more."""
    d = row_matmul(Z, model.coef_.T) + model.intercept_
    if d.shape[1] == 1:
        p = expit(d[:, 0])
        return np.column_stack([1.0 - p, p])
    return softmax(d)
