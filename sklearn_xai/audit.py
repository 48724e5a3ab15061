"""Off-manifold audit: does a model treat real rows and explainer-made rows differently?

A marginal (interventional) Shapley explainer asks the model about hybrid rows: the
explained row's features in a coalition, the rest copied from background rows. Such rows
can lie far from the data, and a model can be built to recognise them and behave
innocuously there while using a protected feature on real rows (Slack et al., "Fooling
LIME and SHAP", AIES 2020). Knockoff imputation asks only about rows distributed like the
data. :class:`OffManifoldAudit` puts the two side by side, with a detector of the hybrid
rows, and tests whether the model's explanation changes because of what it does off the
data manifold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import ndtr, ndtri
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._utils import draw_base_seed, is_frame, unwrap_frozen
from .base import as_array

if TYPE_CHECKING:
    from typing import Any, Self

    import pandas as pd
    from numpy.typing import ArrayLike

    from ._typing import RandomStateLike, ResponseMethod

__all__ = ["AuditResult", "OffManifoldAudit"]

# fewest rows fit() accepts: the detector is trained on half of them and scored on the
# other half
MIN_FIT_ROWS = 10
# features listed by AuditResult.summary() as rank changes, besides the flagged ones
_SUMMARY_RANK_SHIFT = 3
_SUMMARY_MAX_FEATURES = 5
# ... when they rank at least this high with one of the imputations
_SUMMARY_TOP = 3


def _ordinal(k):
    k = int(k)
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _is_numeric(X):
    """Whether every column of ``X`` (array or DataFrame) is numeric (not categorical)."""
    if is_frame(X):
        import pandas as pd

        return all(pd.api.types.is_numeric_dtype(t) and not isinstance(t, pd.CategoricalDtype)
                   for t in X.dtypes)
    return np.asarray(X).dtype.kind in "biuf"


class _CopulaKnockoffs(BaseEstimator):
    """Gaussian knockoffs of the columns' normal scores, mapped back to observed values.

    ``fit`` turns each column into normal scores by its empirical distribution (a value
    ``v`` becomes ``Phi^-1(u)`` with ``u`` its mid-rank share, ``(#{x < v} + #{x <= v}) /
    (2 n)``), and fits :class:`~sklearn_xai.knockoffs.GaussianKnockoffs` (``support=None``)
    on the scores. A knockoff score ``t`` of column ``j`` is mapped back by
    ``u = Phi((t - mean_j) / sd_j)`` and the ``u``-quantile of the column's ``fit`` values.
    Knockoffs thus have each column's observed marginal distribution (a skewed column,
    such as a capital gain that is mostly 0, keeps its mass at 0) and the dependence of a
    Gaussian copula.
    """

    def fit(self, X, y=None):
        from .knockoffs import GaussianKnockoffs

        X = np.asarray(X, dtype=np.float64)
        self.values_ = [np.sort(X[:, j]) for j in range(X.shape[1])]
        self.gaussian_ = GaussianKnockoffs(support=None).fit(self._scores(X))
        self.n_features_in_ = X.shape[1]
        return self

    def _scores(self, X):
        Z = np.empty(X.shape, dtype=np.float64)
        for j, v in enumerate(self.values_):
            lo = np.searchsorted(v, X[:, j], side="left")
            hi = np.searchsorted(v, X[:, j], side="right")
            n = v.size
            Z[:, j] = ndtri(np.clip((lo + hi) / (2.0 * n), 0.5 / n, 1 - 0.5 / n))
        return Z

    def sample_seeded(self, X, n_knockoffs, base_seed, row_indices):
        """Knockoffs of rows already validated; as
        :meth:`~sklearn_xai.knockoffs.GaussianKnockoffs.sample_seeded`."""
        X = np.asarray(X, dtype=np.float64)
        out = self.gaussian_.sample_seeded(self._scores(X), n_knockoffs, base_seed,
                                           row_indices)
        mean = self.gaussian_.mean_
        sd = np.sqrt(np.diag(self.gaussian_.covariance_))
        for j, v in enumerate(self.values_):
            if sd[j] == 0:  # a constant column: its knockoff is the row's value
                out[:, :, j] = X[:, None, j]  # (out holds the row's normal score)
                continue
            u = ndtr((out[:, :, j] - mean[j]) / sd[j])
            k = np.ceil(u * v.size).astype(np.int64) - 1
            out[:, :, j] = v[np.clip(k, 0, v.size - 1)]
        return out

    def sample(self, X, n_knockoffs=1, random_state=None):
        """``(n_samples, n_knockoffs, n_features)`` knockoffs of the rows of ``X``."""
        check_is_fitted(self)
        return self.sample_seeded(X, n_knockoffs, draw_base_seed(random_state), None)


class _FittedSampler(BaseEstimator):
    """A fitted knockoff sampler handed to an explainer as it is: cloning returns it and
    ``fit`` does nothing, so the audit's sampler is fitted once, in ``fit``."""

    def __init__(self, sampler=None):
        self.sampler = sampler

    def __sklearn_clone__(self):
        return self

    def __sklearn_tags__(self):
        return self.sampler.__sklearn_tags__()

    def fit(self, X, y=None):
        return self

    def sample(self, X, n_knockoffs=1, random_state=None):
        return self.sampler.sample(X, n_knockoffs, random_state=random_state)

    def __getattr__(self, name):
        # sample_seeded only where the wrapped sampler has it
        if name == "sample_seeded" and "sampler" in self.__dict__:
            return getattr(self.sampler, name)
        raise AttributeError(name)


def _holm(p):
    """Holm's step-down adjusted p-values (family-wise error rate)."""
    p = np.asarray(p, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, j in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[j]))
        adjusted[j] = running
    return adjusted


def _one_sided_p(d):
    """p-value of the one-sided t-test of ``mean(d) > 0`` over the finite entries of ``d``
    (1 when the mean is not positive or fewer than two entries are finite)."""
    from scipy.stats import t as student_t

    d = np.asarray(d, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size < 2 or d.mean() <= 0:
        return 1.0
    sd = d.std(ddof=1)
    if sd == 0:
        return 0.0
    return float(student_t.sf(d.mean() / (sd / np.sqrt(d.size)), d.size - 1))


@dataclass
class AuditResult:
    """What :meth:`OffManifoldAudit.audit` found. Every parameter is an attribute.

    Parameters
    ----------
    flagged : bool
        Whether at least one feature passed both tests after Holm's correction:
        ``p_value <= alpha``.
    p_value : float
        The overall p-value: the smallest Holm-adjusted per-feature p-value (Holm's
        step-down test of "no feature shifts").
    alpha : float
        The level the flag was decided at.
    features : pandas.DataFrame
        One row per feature (index: the feature names), sorted by ``p_adjusted``, with
        columns ``marginal_importance`` and ``knockoff_importance`` (mean ``|SHAP|`` over
        the audited rows, summed over the explained outputs), ``marginal_se`` and
        ``knockoff_se`` (their standard errors: the spread over rows over
        ``sqrt(n_rows)``, which includes the explainers' own sampling noise),
        ``marginal_share`` and ``knockoff_share`` (each importance over the sum of all
        features' importances),
        ``marginal_rank`` and ``knockoff_rank`` (1 = most important), ``real_effect``
        and ``hybrid_effect`` (mean absolute change of the model's output, on the
        log-odds scale for probabilities, when the feature is replaced by its knockoff
        value, on the real rows and on the hybrid rows the detector flags),
        ``importance_p`` and ``effect_p`` (the one-sided tests' p-values), ``p_value``
        (their maximum, the intersection-union test), ``p_adjusted`` (Holm over the
        features) and ``flagged``.
    detector_auc : float
        Held-out ROC AUC of the detector separating real rows from hybrid rows (0.5: the
        hybrids look real; 1: every hybrid is recognised).
    detected_share : float
        Share of the audit's hybrid rows the detector flags (probability of being real
        below 0.5).
    output_real : ndarray of shape (n_rows,) or (n_rows, n_outputs)
        The model's explained output on the audited rows.
    output_hybrid : ndarray of shape (n_detected,) or (n_detected, n_outputs)
        The model's explained output on the hybrid rows the detector flags.
    output_names : list of str
        Names of the explained outputs.
    marginal, knockoff : Attribution
        The marginal and knockoff SHAP values of the audited rows.
    min_ratio : float
        The ratio of the behaviour test.
    n_rows : int
        Rows audited.
    """

    flagged: bool
    p_value: float
    alpha: float
    features: Any
    detector_auc: float
    detected_share: float
    output_real: np.ndarray
    output_hybrid: np.ndarray
    output_names: list
    marginal: Any = field(repr=False)
    knockoff: Any = field(repr=False)
    min_ratio: float = 2.0
    n_rows: int = 0

    def summary(self) -> str:
        """A plain-text account of the verdict and of the evidence.

        Returns
        -------
        str
            Several lines: the verdict with its p-value, the detector's AUC, the model's
            output on real and detected-hybrid rows, the flagged features with their
            importances and effects, and the features whose rank changes most between
            knockoff and marginal imputation (e.g. "race is 1st with knockoff imputation
            and 9th with marginal imputation").
        """
        f = self.features
        verdict = "FLAGGED" if self.flagged else "not flagged"
        lines = [
            f"Off-manifold audit of {self.n_rows} rows and {len(f)} features: {verdict} "
            f"(p = {self.p_value:.3g}, Holm-corrected over {len(f)} features; "
            f"alpha = {self.alpha:g}).",
            f"Detector: held-out AUC {self.detector_auc:.3f} separating real rows from the "
            f"marginal explainer's hybrid rows; {100 * self.detected_share:.1f} % of the "
            "audit's hybrid rows detected.",
        ]
        real = np.reshape(self.output_real, (len(self.output_real), -1))
        hyb = np.reshape(self.output_hybrid, (len(self.output_hybrid), -1))
        for k, name in enumerate(self.output_names):
            hyb_mean = f"{hyb[:, k].mean():.4g}" if len(hyb) else "n/a (none detected)"
            lines.append(f"Model output {name}: mean {real[:, k].mean():.4g} on real rows, "
                         f"{hyb_mean} on detected hybrid rows.")
        flagged = f.index[f["flagged"].to_numpy()]
        for name in flagged:
            r = f.loc[name]
            lines.append(
                f"{name}: knockoff importance {r.knockoff_importance:.4g} "
                f"+- {r.knockoff_se:.2g} vs marginal {r.marginal_importance:.4g} "
                f"+- {r.marginal_se:.2g}; effect of replacing it {r.real_effect:.4g} on "
                f"real rows vs {r.hybrid_effect:.4g} on detected hybrid rows "
                f"(p = {r.p_adjusted:.3g}, adjusted).")
        shift = (f["marginal_rank"] - f["knockoff_rank"]).abs()
        best = f[["marginal_rank", "knockoff_rank"]].min(axis=1)
        moved = [n for n in shift.sort_values(ascending=False, kind="stable").index
                 if shift[n] >= _SUMMARY_RANK_SHIFT and best[n] <= _SUMMARY_TOP
                 and n not in flagged]
        listed = list(flagged) + moved
        if listed:
            lines.append("Rank changes: " + "; ".join(
                f"{n} is {_ordinal(f.loc[n, 'knockoff_rank'])} with knockoff imputation and "
                f"{_ordinal(f.loc[n, 'marginal_rank'])} with marginal imputation"
                for n in listed[:_SUMMARY_MAX_FEATURES]) + ".")
        else:
            lines.append(f"No feature among the top {_SUMMARY_TOP} of either imputation "
                         f"changes rank by {_SUMMARY_RANK_SHIFT} places or more.")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


class OffManifoldAudit(BaseEstimator):
    """Test whether a model behaves differently on and off the data manifold.

    ``fit(X)`` learns what the audit needs from the data: a knockoff sampler, the
    background rows a marginal SHAP explainer would impute from, and a detector that
    tells real rows from the hybrid rows such an explainer queries (its held-out AUC is
    reported). ``audit(model, X)`` then gathers two kinds of evidence on the rows ``X``
    and decides, per feature:

    1. **The explanations.** Mean ``|SHAP|`` per feature with marginal imputation
       (:class:`~sklearn_xai.shapley.KnockoffSHAP` with ``imputation="marginal"`` and the
       background rows) and with knockoff imputation, on the same rows, with standard
       errors. Test: the marginal explanation understates the feature: its share of
       the total importance is larger with knockoff imputation (a one-sided t-test over
       rows of the share difference's influence values, the delta method for a ratio
       of paired means; shares, because knockoff attributions of correlated features
       shrink as a whole).
    2. **The model's behaviour off the manifold.** For each row and feature, the
       change of the model's output when the feature is replaced by its knockoff value,
       on the real row and on ``n_hybrids`` hybrid rows of it (the feature kept, a random
       coalition of the others filled from a random background row, as a marginal
       explainer builds them) that the detector flags as not real. Test: the effect on
       real rows is more than ``min_ratio`` times the effect on detected hybrid rows
       (one-sided paired t-test of ``effect_real - min_ratio effect_hybrid``). Effects
       on probabilities (``predict_proba``) are measured on their log-odds, clipped to
       ``[1e-3, 1 - 1e-3]``: a probability near 0 or 1, as an honest model may give on
       many hybrid rows, would otherwise shrink every feature's effect there.

    A feature's p-value is the larger of the two (an intersection-union test: it is
    small only when the model both hides the feature from the marginal explanation and
    stops using it on the rows that explanation queries); Holm's step-down procedure
    corrects for the number of features, and the model is flagged when the smallest
    adjusted p-value is at most ``alpha``. A model that computes the same function on
    and off the manifold is not flagged, whatever it does; a flag is evidence that the
    marginal explanation understates a feature because of off-manifold behaviour, not
    proof of intent.

    Parameters
    ----------
    background : int or array-like of shape (n_background, n_features), default=10
        The marginal imputation's rows. An int ``k``: the k-means centres of the ``fit``
        rows (``KMeans(k, n_init=10)``, the background shap's documentation recommends
        and fooling attacks anticipate) when every column is numeric, else ``k`` rows
        of ``fit`` drawn at random without replacement. An array: those rows.
    sampler : knockoff sampler or None, default=None
        As in :class:`~sklearn_xai.shapley.KnockoffSHAP`, fitted (cloned) on the ``fit``
        rows. ``None``: for numeric data, Gaussian knockoffs of the columns' normal scores
        mapped back through each column's empirical quantiles (a Gaussian copula, so
        skewed or discrete columns keep their observed distribution); for data with
        non-numeric columns, :class:`~sklearn_xai.knockoffs.SequentialKnockoffs`.
    detector : classifier or None, default=None
        Any classifier with ``fit`` and ``predict_proba``, cloned and trained to tell
        real rows (label 1) from hybrid rows (label 0). It receives float arrays
        (non-numeric columns ordinal-encoded by the order of their values in ``fit``).
        ``None``: ``RandomForestClassifier(n_estimators=100, min_samples_leaf=5)``.
    n_knockoffs : int, default=5
        Knockoffs per audited row in the knockoff SHAP values.
    n_evals : int >= 2, default=8
        Budget of both SHAP explainers, in coalition evaluations per player and row
        (antithetic permutation sampling; exact enumeration when ``2**P`` coalitions
        cost no more).
    n_hybrids : int, default=4
        Hybrid rows per audited row and feature in the behaviour test.
    min_ratio : float >= 1, default=2.0
        The ratio of the behaviour test (see above): the effect on real rows must exceed
        ``min_ratio`` times the effect on detected hybrid rows. An honest model's effects
        differ somewhat between the two kinds of rows (its interactions meet other
        values there), so the test asks for more than a difference. Knockoff and marginal
        importances of an honest model differ too (knockoffs shrink correlated features'
        attributions; a k-means background puts binary columns at fractional values),
        which is why neither test alone decides.
    alpha : float in (0, 1), default=0.05
        Family-wise level of the flag.
    response_method : {"auto", "predict_proba", "decision_function", "predict"}, \
            default="auto"
        The model method whose output is explained, as in the explainers.
    target : class label or None, default=None
        The explained class, as in the explainers.
    n_jobs : int or None, default=None
        Joblib workers of the SHAP explainers (over row batches) and of the default
        detector. Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seeds the hybrid rows, the detector's split and trees, the knockoffs and the
        SHAP sampling.

    Attributes
    ----------
    sampler_ : fitted knockoff sampler
    background_ : ndarray of shape (n_background, n_features)
    detector_ : fitted classifier
        Trained on half of the real rows and as many hybrid rows.
    detector_auc_ : float
        Its ROC AUC on the other half.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    Notes
    -----
    ``audit`` costs two SHAP computations of the audited rows (about
    ``n_rows * (n_evals * P + 2) * (n_knockoffs + n_background)`` model rows) plus
    ``2 n_rows P (n_hybrids + 1)`` model rows and ``n_rows P n_hybrids`` detector rows for
    the behaviour test.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_xai import OffManifoldAudit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> model = LogisticRegression().fit(X, y)
    >>> result = OffManifoldAudit(random_state=0).fit(X).audit(model)
    >>> result.flagged
    False
    """

    _parameter_constraints: dict = {
        "background": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "sampler": [HasMethods(["fit", "sample"]), None],
        "detector": [HasMethods(["fit", "predict_proba"]), None],
        "n_knockoffs": [Interval(Integral, 1, None, closed="left")],
        "n_evals": [Interval(Integral, 2, None, closed="left")],
        "n_hybrids": [Interval(Integral, 1, None, closed="left")],
        "min_ratio": [Interval(Real, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "response_method": [StrOptions({"auto", "predict_proba", "decision_function",
                                        "predict"})],
        "target": "no_validation",
        "n_jobs": [None, Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, *, background: int | ArrayLike = 10, sampler: Any = None,
                 detector: Any = None, n_knockoffs: int = 5, n_evals: int = 8,
                 n_hybrids: int = 4, min_ratio: float = 2.0, alpha: float = 0.05,
                 response_method: ResponseMethod = "auto", target: Any = None,
                 n_jobs: int | None = None, random_state: RandomStateLike = None) -> None:
        self.background = background
        self.sampler = sampler
        self.detector = detector
        self.n_knockoffs = n_knockoffs
        self.n_evals = n_evals
        self.n_hybrids = n_hybrids
        self.min_ratio = min_ratio
        self.alpha = alpha
        self.response_method = response_method
        self.target = target
        self.n_jobs = n_jobs
        self.random_state = random_state

    # -- fit ------------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike | pd.DataFrame, y: None = None) -> Self:
        """Fit the knockoff sampler, choose the background and train the detector.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows distributed like the model's data (at least 10); a DataFrame keeps its
            column names and dtypes, which the model may need.
        y : None
            Ignored.

        Returns
        -------
        OffManifoldAudit
            The fitted audit (``self``).
        """
        X = self._check_X(X, reset=True)
        if X.shape[0] < MIN_FIT_ROWS:
            raise ValueError(f"fit needs at least {MIN_FIT_ROWS} rows (the detector is "
                             f"trained on half and scored on the other half); got "
                             f"{X.shape[0]}.")
        rng = np.random.default_rng(draw_base_seed(self.random_state))
        data = as_array(X)
        self._numeric = _is_numeric(X)
        self._X_fit = X
        self._fit_encoding(data)
        self.sampler_ = self._fit_sampler(X, rng)
        self.background_ = self._fit_background(data, rng)
        self._fit_detector(data, rng)
        return self

    def _check_X(self, X, *, reset):
        """``X`` as a DataFrame (kept) or a 2-D array, checked against ``fit``."""
        from sklearn.utils.validation import validate_data

        if is_frame(X):
            if X.shape[0] == 0 or X.ndim != 2 or X.shape[1] == 0:
                raise ValueError(f"X must be 2-D with at least one row and one column; got "
                                 f"shape {X.shape}.")
            names = np.asarray([str(c) for c in X.columns], dtype=object)
            if reset:
                self.n_features_in_ = X.shape[1]
                self.feature_names_in_ = names
            elif X.shape[1] != self.n_features_in_ or (
                    hasattr(self, "feature_names_in_")
                    and not np.array_equal(names, self.feature_names_in_)):
                raise ValueError(
                    f"X has columns {list(names)[:8]} but the audit was fitted on "
                    f"{list(getattr(self, 'feature_names_in_', []))[:8] or self.n_features_in_}"
                    "; pass the columns given to fit, in the same order.")
            return X
        dtype = "numeric"
        arr = np.asarray(X) if not hasattr(X, "toarray") else X
        if getattr(arr, "dtype", None) is not None and arr.dtype == object:
            dtype = None
        return validate_data(self, X, reset=reset, dtype=dtype,
                             ensure_all_finite="allow-nan" if dtype is None else True)

    def _fit_encoding(self, data):
        """Ordinal codes of the non-numeric columns (the detector's float input)."""
        self._codes = {}
        if data.dtype != object:
            return
        import pandas as pd

        for j in range(data.shape[1]):
            col = data[:, j]
            if all(isinstance(v, Real) and not isinstance(v, bool) for v in col):
                continue
            levels = pd.unique(pd.Series(col).dropna())
            self._codes[j] = {v: float(k) for k, v in enumerate(sorted(levels, key=str))}

    def _encode(self, data):
        """Float rows for the detector."""
        if not self._codes:
            return np.asarray(data, dtype=np.float64)
        out = np.empty(data.shape, dtype=np.float64)
        for j in range(data.shape[1]):
            col = data[:, j]
            if j in self._codes:
                codes = self._codes[j]
                out[:, j] = [codes.get(v, -1.0) if v == v else np.nan for v in col]
            else:
                out[:, j] = col.astype(np.float64)
        return out

    def _fit_sampler(self, X, rng):
        if self.sampler is not None:
            return clone(self.sampler).fit(X)
        if self._numeric:
            return _CopulaKnockoffs().fit(as_array(X))
        from .knockoffs import SequentialKnockoffs

        return SequentialKnockoffs(random_state=int(rng.integers(2**31 - 1))).fit(X)

    def _fit_background(self, data, rng):
        n, p = data.shape
        if not isinstance(self.background, Integral):
            bg = as_array(self.background)
            if bg.ndim != 2 or bg.shape[1] != p or bg.shape[0] == 0:
                raise ValueError(f"background must have shape (n_background, {p}) with at "
                                 f"least one row; got {bg.shape}.")
            return bg
        k = int(self.background)
        if not self._numeric:
            return data[rng.choice(n, size=min(k, n), replace=False)]
        from sklearn.cluster import KMeans
        from threadpoolctl import threadpool_limits

        k = min(k, len(np.unique(data, axis=0)))
        with threadpool_limits(limits=1):  # small k-means fits are slower threaded
            km = KMeans(n_clusters=k, n_init=10, random_state=int(rng.integers(2**31 - 1)))
            return km.fit(data).cluster_centers_

    def _hybrids(self, data, rows, rng, keep_feature=None):
        """Hybrid rows of ``data[rows]``: a random coalition (size uniform in 0..P-1) kept,
        the other features from a random background row; ``keep_feature`` is always
        kept. Returns the rows and the background rows used."""
        m, p = len(rows), data.shape[1]
        size = rng.integers(0, p, size=m)
        keep = np.argsort(rng.random((m, p)), axis=1) < size[:, None]
        if keep_feature is not None:
            keep[:, keep_feature] = True
        filler = self.background_[rng.integers(len(self.background_), size=m)]
        H = np.where(keep, data[rows], filler)
        return H.astype(data.dtype if data.dtype == object else np.float64)

    def _fit_detector(self, data, rng):
        from sklearn.metrics import roc_auc_score

        n = data.shape[0]
        H = self._hybrids(data, np.arange(n), rng)
        Z = self._encode(np.vstack([data, H]))
        label = np.r_[np.ones(n), np.zeros(n)]
        # a stratified half split: the same rows' real and hybrid versions on one side
        train = np.zeros(n, dtype=bool)
        train[rng.permutation(n)[: n // 2]] = True
        train = np.r_[train, train]
        if self.detector is None:
            from sklearn.ensemble import RandomForestClassifier

            detector = RandomForestClassifier(n_estimators=100, min_samples_leaf=5,
                                              n_jobs=self.n_jobs,
                                              random_state=int(rng.integers(2**31 - 1)))
        else:
            detector = clone(self.detector)
        self.detector_ = detector.fit(Z[train], label[train])
        self.detector_auc_ = float(roc_auc_score(label[~train],
                                                 self._real_proba(Z[~train])))

    def _real_proba(self, Z):
        proba = np.asarray(self.detector_.predict_proba(Z))
        classes = list(self.detector_.classes_)
        return proba[:, classes.index(1.0)]

    # -- audit ----------------------------------------------------------------------------

    def audit(self, model: Any, X: ArrayLike | pd.DataFrame | None = None) -> AuditResult:
        """Audit a fitted model on rows ``X``.

        Parameters
        ----------
        model : fitted estimator
            The model to audit (a :class:`sklearn.frozen.FrozenEstimator` is accepted).
            It is never refitted.
        X : array-like or DataFrame of shape (n_rows, n_features) or None, default=None
            Rows to audit, with the columns given to ``fit`` (at least two); ``None``:
            the ``fit`` rows.

        Returns
        -------
        AuditResult
            The verdict (``flagged``, ``p_value``), the per-feature evidence
            (``features``), the detector's AUC, the model's outputs on real and detected
            hybrid rows, and both explanations.
        """
        from sklearn.frozen import FrozenEstimator

        from .shapley import KnockoffSHAP

        check_is_fitted(self)
        X = self._X_fit if X is None else self._check_X(X, reset=False)
        if X.shape[0] < 2:
            raise ValueError(f"audit needs at least 2 rows to estimate standard errors; got "
                             f"{X.shape[0]}.")
        if model is None or not hasattr(model, "fit"):
            raise TypeError(f"model must be a fitted estimator; got {type(model).__name__}.")
        check_is_fitted(unwrap_frozen(model))
        frozen = model if isinstance(model, FrozenEstimator) else FrozenEstimator(model)
        seed = draw_base_seed(self.random_state)
        rng = np.random.default_rng(seed)
        p = X.shape[1]
        exact = 2**p <= self.n_evals * p + 2
        common = {"algorithm": "exact" if exact else "permutation",
                  "n_evals": None if exact else self.n_evals,
                  "response_method": self.response_method, "target": self.target,
                  "n_jobs": self.n_jobs, "random_state": int(rng.integers(2**31 - 1))}
        knockoff = KnockoffSHAP(frozen, sampler=_FittedSampler(self.sampler_),
                                n_knockoffs=self.n_knockoffs, **common).fit(X)
        marginal = KnockoffSHAP(frozen, imputation="marginal", background=self.background_,
                                **common).fit(X)
        att_k = knockoff.explain(X)
        att_m = marginal.explain(X)
        f = knockoff.model_fn_
        imp_k, imp_m = _abs_per_row(att_k), _abs_per_row(att_m)     # (n, P)
        real_effect, hybrid_effect, out_real, out_hyb, share = self._behaviour(
            f, X, rng)
        features = self._feature_table(list(att_k.feature_names), imp_k, imp_m,
                                       real_effect, hybrid_effect)
        p_value = float(features["p_adjusted"].min())
        squeeze = (lambda a: a[:, 0]) if out_real.shape[1] == 1 else (lambda a: a)
        return AuditResult(
            flagged=bool(p_value <= self.alpha), p_value=p_value, alpha=float(self.alpha),
            features=features, detector_auc=self.detector_auc_, detected_share=share,
            output_real=squeeze(out_real), output_hybrid=squeeze(out_hyb),
            output_names=list(f.output_names), marginal=att_m, knockoff=att_k,
            min_ratio=float(self.min_ratio), n_rows=int(X.shape[0]))

    def _behaviour(self, f, X, rng):
        """Per row and feature, the mean absolute output change of replacing the feature
        by its knockoff value, on the real row and on its detected hybrid rows (NaN when
        none of them is detected); the outputs on real and detected hybrid rows; the
        detected share of the hybrids."""
        data = as_array(X)
        n, p = data.shape
        m = self.n_hybrids
        ko = np.asarray(self.sampler_.sample(X, 1, random_state=int(rng.integers(2**31 - 1))))
        # the model sees the knockoffs the knockoff explanation uses: integer rows do not
        # truncate a continuous sampler's values
        ko = ko[:, 0, :].astype(np.result_type(data.dtype, ko.dtype))
        out_real = f(data)
        if f.method == "predict_proba":
            g, g_real = _log_odds(f), _clipped_logit(out_real)
        else:
            g, g_real = f, out_real
        rows = np.repeat(np.arange(n), m)
        base = self._hybrids(data, rows, rng)
        out_base = f(base)
        detected = self._real_proba(self._encode(base)) < 0.5
        real_effect = np.empty((n, p))
        hybrid_effect = np.empty((n, p))
        for j in range(p):
            H = self._hybrids(data, rows, rng, keep_feature=j)
            # one model call per feature: the real rows with feature j swapped for its
            # knockoff value, then the hybrid rows with and without that swap
            stacked = np.vstack([data, H, H]).astype(ko.dtype, copy=False)
            stacked[:n, j] = ko[:, j]
            stacked[n:n + H.shape[0], j] = ko[rows, j]
            out = g(stacked)
            real_effect[:, j] = np.abs(out[:n] - g_real).sum(axis=1)
            change = np.abs(out[n:n + H.shape[0]] - out[n + H.shape[0]:]).sum(axis=1)
            off = self._real_proba(self._encode(H)) < 0.5
            total = np.bincount(rows, weights=np.where(off, change, 0.0), minlength=n)
            count = np.bincount(rows, weights=off.astype(np.float64), minlength=n)
            with np.errstate(invalid="ignore", divide="ignore"):
                hybrid_effect[:, j] = np.where(count > 0, total / count, np.nan)
        return (real_effect, hybrid_effect, out_real, out_base[detected],
                float(detected.mean()))

    def _feature_table(self, names, imp_k, imp_m, real_effect, hybrid_effect):
        import pandas as pd

        n = imp_k.shape[0]
        c = float(self.min_ratio)
        mean_k, mean_m = imp_k.mean(axis=0), imp_m.mean(axis=0)
        se_k, se_m = imp_k.std(axis=0, ddof=1) / np.sqrt(n), imp_m.std(axis=0, ddof=1) / np.sqrt(n)
        share_k, share_m, shift_parts = _share_shift(imp_k, imp_m)
        p_imp = np.array([_one_sided_p(part) for part in shift_parts])
        seen = np.isfinite(hybrid_effect)
        with np.errstate(invalid="ignore", divide="ignore"):
            hybrid_mean = np.where(seen, hybrid_effect, 0.0).sum(axis=0) / seen.sum(axis=0)
        p_eff = np.array([_one_sided_p(real_effect[:, j] - c * hybrid_effect[:, j])
                          for j in range(len(names))])
        p_both = np.maximum(p_imp, p_eff)
        adjusted = _holm(p_both)
        table = pd.DataFrame({
            "marginal_importance": mean_m, "marginal_se": se_m,
            "knockoff_importance": mean_k, "knockoff_se": se_k,
            "marginal_share": share_m, "knockoff_share": share_k,
            "marginal_rank": _ranks(mean_m), "knockoff_rank": _ranks(mean_k),
            "real_effect": real_effect.mean(axis=0), "hybrid_effect": hybrid_mean,
            "importance_p": p_imp, "effect_p": p_eff, "p_value": p_both,
            "p_adjusted": adjusted, "flagged": adjusted <= self.alpha,
        }, index=pd.Index(names, name="feature"))
        return table.sort_values(["p_adjusted", "p_value"], kind="stable")


#: probabilities are clipped to [_LOGIT_CLIP, 1 - _LOGIT_CLIP] before their log-odds
_LOGIT_CLIP = 1e-3


def _clipped_logit(proba):
    """``logit(clip(proba))``: probabilities on the log-odds scale."""
    from scipy.special import logit

    return logit(np.clip(proba, _LOGIT_CLIP, 1 - _LOGIT_CLIP))


def _log_odds(f):
    """``X -> logit(clip(f(X)))``: the model's probabilities on the log-odds scale."""
    return lambda X: _clipped_logit(f(X))


def _share_shift(imp_k, imp_m):
    """Each feature's share of the total mean importance, knockoff and marginal, and per
    feature the rows' influence values of the share difference (their mean is the
    difference; their spread, by the delta method, its standard error, the totals'
    estimation included)."""
    t_k, t_m = imp_k.sum(axis=1), imp_m.sum(axis=1)
    T_k, T_m = max(t_k.mean(), np.finfo(float).tiny), max(t_m.mean(), np.finfo(float).tiny)
    share_k, share_m = imp_k.mean(axis=0) / T_k, imp_m.mean(axis=0) / T_m
    parts = [(imp_k[:, j] / T_k - imp_m[:, j] / T_m) - share_k[j] * (t_k / T_k - 1)
             + share_m[j] * (t_m / T_m - 1) for j in range(imp_k.shape[1])]
    return share_k, share_m, parts


def _abs_per_row(att):
    """``|values|`` summed over the explained outputs, shape (n_rows, n_players)."""
    v = np.abs(np.asarray(att.values, dtype=np.float64))
    return v.sum(axis=2) if v.ndim == 3 else v


def _ranks(importance):
    """1 for the largest importance; ties share the better rank."""
    from scipy.stats import rankdata

    return rankdata(-np.asarray(importance), method="min").astype(np.int64)
