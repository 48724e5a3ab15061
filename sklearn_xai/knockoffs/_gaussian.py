"""Gaussian model-X knockoffs (Candes, Fan, Janson & Lv 2018)."""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, _fit_context
from sklearn.covariance import ledoit_wolf
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils import row_matmul
from ._base import _discrete_support, _row_draws, _sample, _to_support
from ._smatrix import singular_tolerance, solve_s

if TYPE_CHECKING:
    from typing import Literal, Self

    from numpy.typing import ArrayLike

    from sklearn_xai._typing import RandomStateLike

# eigenvalues of the (standardised) knockoff covariance below this times the largest are
# treated as 0 in its square root: the noise they would add is at most 1e-5 standard
# deviations
_ROOT_FLOOR = 1e-10


class GaussianKnockoffs(BaseEstimator):
    """Model-X knockoffs for data modelled as multivariate Gaussian.

    ``fit`` estimates the mean ``mu`` and covariance ``Sigma`` of ``X`` and solves for
    the knockoff diagonal ``s`` on the correlation scale; ``D = diag(s_j Sigma_jj)``.
    The covariance is estimated on standardised columns (Ledoit-Wolf shrinks their
    correlation matrix) and mapped back by the columns' standard deviations, so the
    sampler is scale-equivariant: rescaling a column rescales its mean, variance and
    knockoffs and changes nothing else.
    ``sample`` draws, for each given row ``x`` (new rows are allowed),

    ``X~ | X = x  ~  N(x - D Sigma^-1 (x - mu),  2 D - D Sigma^-1 D)``,

    so that ``(X, X~)`` is jointly Gaussian with covariance
    ``[[Sigma, Sigma - D], [Sigma - D, Sigma]]`` and swapping any subset of columns
    between ``X`` and ``X~`` leaves the joint distribution unchanged.

    Parameters
    ----------
    method : {"mvr", "sdp", "equicorrelated"}, default="mvr"
        How ``s`` is chosen. ``"mvr"`` minimises reconstructability
        ``Tr((2C - diag s)^-1) + sum 1/s_j`` by coordinate descent; ``"sdp"`` maximises
        ``sum s_j`` subject to ``s_j <= 1`` and ``diag(s) <= 2C`` (log-barrier
        interior point); ``"equicorrelated"`` uses ``s_j = min(1, 2 lambda_min(C))``.
        Smaller ``s_j`` means knockoffs closer to the original column: in knockoff
        imputation, attributions of strongly correlated features shrink.
    shrinkage : {"ledoit_wolf"} or None, default="ledoit_wolf"
        Covariance estimator: Ledoit-Wolf shrinkage of the correlation matrix towards
        the identity (every variance stays the column's sample variance), or the plain
        (maximum likelihood) sample covariance. The estimate must be positive definite: ``fit``
        raises a ValueError when the smallest eigenvalue of its correlation matrix is
        at most ``max(n_samples, n_features) * eps`` times its largest (the rank rule
        of :func:`numpy.linalg.matrix_rank`, which absorbs the round-off of the
        estimate), naming the cause: fewer rows than non-constant columns, or linearly
        dependent columns.
    max_iter : int, default=100
        Maximum iterations of the ``s`` solver (sweeps for MVR, Newton steps per
        barrier stage for SDP).
    tol : float, default=1e-8
        Relative convergence tolerance of the ``s`` solver.
    support : {"auto", "observed"} or None, default="auto"
        Where knockoff values may lie. ``"auto"``: a discrete column (2 to
        ``MAX_DISCRETE_LEVELS = 20`` distinct values in ``fit``, and at most half as
        many as rows: binary indicators, counts, ratings, integer-coded categories that
        a pipeline may one-hot encode; the rule looks only at the distinct values, so
        rescaling a column does not change it) gets knockoffs among the values it took
        in ``fit``, by the
        marginal quantile transform: the Gaussian draw ``t`` becomes
        ``u = Phi((t - mean_j) / sqrt(covariance_jj))``, its probability under the
        column's fitted marginal, and then the ``u``-quantile of the column's ``fit``
        values. A draw distributed like the fitted marginal thus becomes a value
        distributed like the observed column (rounding to the nearest value would
        distort the frequencies of skewed or unevenly spaced values), and the map is
        monotone, so the knockoff keeps its dependence on the row. Other columns keep
        the Gaussian draws. ``"observed"`` rounds every knockoff value, of every column,
        to the nearest value that column took in ``fit``. Either makes the knockoffs
        only approximately exchangeable; for data with many categorical columns prefer
        :class:`~sklearn_xai.knockoffs.SequentialKnockoffs`. ``None`` keeps the
        Gaussian draws everywhere.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    covariance_ : ndarray of shape (n_features, n_features)
    s_ : ndarray of shape (n_features,)
        Knockoff diagonal on the correlation scale; 0 for constant columns, whose
        knockoff is the row's own value.
    constant_ : ndarray of bool, shape (n_features,)
        Columns constant in ``fit`` (left out of the covariance model).
    knockoff_covariance_ : ndarray of shape (n_features, n_features)
        ``2 D - D Sigma^-1 D``, the conditional covariance of a knockoff.
    n_iter_ : int
        Iterations the ``s`` solver ran.
    discrete_ : ndarray of bool, shape (n_features,)
        Columns whose knockoffs ``support="auto"`` maps onto their observed values (all
        False for the other settings).
    support_values_ : list of ndarray or None, or None
        Sorted values of each column seen in ``fit``: every column with
        ``support="observed"``; the discrete columns with ``"auto"`` (None for the
        others); None with ``support=None``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    Notes
    -----
    ``fit`` costs ``O(n p^2)`` for the covariance plus ``O(p^3)`` per solver
    iteration; ``sample`` costs ``O(n K p^2)`` for ``K`` knockoffs per row.

    :meth:`sample_seeded` is the same draw on rows already checked, seeded per row by a
    base seed and one key per row: the hook :class:`~sklearn_xai.shapley.KnockoffSHAP` and
    :class:`~sklearn_xai.shapley.KnockoffSAGE` call (a third-party sampler may offer it
    too); use ``sample`` otherwise.
    """

    _parameter_constraints: dict = {
        "method": [StrOptions({"mvr", "sdp", "equicorrelated"})],
        "shrinkage": [StrOptions({"ledoit_wolf"}), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "support": [StrOptions({"auto", "observed"}), None],
    }

    def __init__(self, method: Literal["mvr", "sdp", "equicorrelated"] = "mvr",
                 shrinkage: Literal["ledoit_wolf"] | None = "ledoit_wolf", max_iter: int = 100,
                 tol: float = 1e-8, support: Literal["auto", "observed"] | None = "auto") -> None:
        self.method = method
        self.shrinkage = shrinkage
        self.max_iter = max_iter
        self.tol = tol
        self.support = support

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike, y: None = None) -> Self:
        """Estimate mean and covariance of ``X`` and solve for ``s``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric data, at least 2 rows; with ``shrinkage=None`` more rows than
            non-constant columns, none of them a linear combination of the others.
        y : None
            Ignored.

        Returns
        -------
        object
            The fitted sampler (``self``).
        """
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        mean = X.mean(axis=0)
        p = X.shape[1]
        constant = np.ptp(X, axis=0) == 0
        vary = np.flatnonzero(~constant)
        if vary.size == 0:
            raise ValueError("Every column of X is constant; there is nothing to model.")
        Xv = X[:, vary]
        with np.errstate(over="ignore", invalid="ignore"):
            spread = np.std(Xv, axis=0)
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(spread))):
            raise ValueError(
                "X has values too large for a covariance in float64 (it overflows to inf); "
                "rescale the columns."
            )
        if not np.all(spread > 0):
            j = int(vary[np.argmin(spread)])
            raise ValueError(
                f"Column {self._column_name(j)} of X varies too little for its variance "
                "to be represented in float64 (it underflows to 0); rescale it."
            )
        # the model is estimated on standardised columns (Ledoit-Wolf shrinks the
        # correlation matrix towards the identity) and mapped back: rescaling a column
        # rescales its mean, variance and knockoffs and changes nothing else. Shrinking
        # the raw covariance towards trace / p would let the largest column set every
        # other column's variance.
        Zv = (Xv - mean[vary]) / spread
        if self.shrinkage == "ledoit_wolf":
            C, _ = ledoit_wolf(Zv, assume_centered=True)
        else:
            C = np.cov(Zv, rowvar=False, bias=True).reshape(vary.size, vary.size)
        if not np.all(np.isfinite(C)):
            raise ValueError(
                "X has values too large for a covariance in float64 (it overflows to inf); "
                "rescale the columns."
            )
        # unit diagonal up to round-off: make it exact
        d = np.sqrt(np.diag(C))
        C = C / np.outer(d, d)
        C = (C + C.T) / 2.0
        np.fill_diagonal(C, 1.0)
        scale = spread
        cov_v = C * np.outer(scale, scale)
        self._check_positive_definite(C, X.shape[0], vary)
        s_v, n_iter = solve_s(C, self.method, max_iter=self.max_iter, tol=self.tol)
        cov = np.zeros((p, p))
        cov[np.ix_(vary, vary)] = cov_v
        s = np.zeros(p)
        s[vary] = s_v
        self.mean_ = mean
        self.covariance_ = cov
        self.constant_ = constant
        self.s_ = s
        self.n_iter_ = n_iter
        self._supports = [None] * p
        self._round = self.support == "observed"
        if self.support == "auto":
            self._supports = [None if constant[j] else _discrete_support(X[:, j])
                              for j in range(p)]
        self.discrete_ = np.array([sup is not None for sup in self._supports], dtype=bool)
        if self.support == "observed":
            self.support_values_ = [np.unique(X[:, j]) for j in range(p)]
        elif self.support == "auto":
            self.support_values_ = [None if sup is None else sup[0].copy()
                                    for sup in self._supports]
        else:
            self.support_values_ = None
        try:
            self._set_sampling_matrices()
        except linalg.LinAlgError as exc:
            raise ValueError(
                f"The fitted covariance of X is numerically singular ({exc}); "
                f"{self._singular_remedy()}."
            ) from exc
        return self

    def _column_name(self, j):
        names = getattr(self, "feature_names_in_", None)
        return repr(str(names[j])) if names is not None else str(j)

    def _singular_remedy(self):
        if self.shrinkage is None:
            return "drop linearly dependent columns, or use shrinkage='ledoit_wolf'"
        return "drop linearly dependent columns"

    def _check_positive_definite(self, C, n_samples, vary):
        """ValueError naming the cause when the correlation matrix ``C`` of the varying
        columns ``vary`` is singular up to the round-off of an ``n_samples``-row
        estimate."""
        lam, vecs = linalg.eigh(C)
        k = C.shape[0]
        tol = singular_tolerance(lam, max(n_samples, k))
        if lam[0] > tol:
            return
        head = (f"The covariance of X is singular (smallest eigenvalue of its correlation "
                f"matrix {lam[0]:.3g}, not above the round-off tolerance {tol:.3g})")
        if n_samples <= k:
            cause = (f"X has {n_samples} rows for {k} non-constant columns, and a "
                     f"covariance estimated from n rows has rank at most n - 1")
            if self.shrinkage is None and n_samples >= 3:
                remedy = f"fit on at least {k + 1} rows, or use shrinkage='ledoit_wolf'"
            elif self.shrinkage is None:
                remedy = f"fit on more rows (at least {k + 1})"
            else:
                remedy = (f"fit on more rows (at least {k + 1}); Ledoit-Wolf shrinkage "
                          f"found nothing to shrink with {n_samples} rows")
            raise ValueError(f"{head}: {cause}; {remedy}.")
        null = np.abs(vecs[:, lam <= tol])
        involved = np.flatnonzero(np.any(null > 1e-8 * null.max(axis=0), axis=1))
        names = [self._column_name(j) for j in vary[involved]]
        columns = "[" + ", ".join(names) + "]"
        raise ValueError(
            f"{head}: columns {columns} of X are linearly dependent (up to round-off, a "
            f"combination of them is constant); {self._singular_remedy()}."
        )

    def _set_sampling_matrices(self):
        """The knockoff mean and noise on the correlation scale: every matrix product
        of ``sample`` runs on standardised columns and is mapped back by the columns'
        scales, so that the knockoffs are equivariant to rescaling a column (an
        eigendecomposition of the raw-scale knockoff covariance would not be)."""
        vary = np.flatnonzero(~self.constant_)
        p = self.covariance_.shape[0]
        cov = self.covariance_[np.ix_(vary, vary)]
        sd = np.sqrt(np.diag(cov))
        C = cov / np.outer(sd, sd)
        C = (C + C.T) / 2.0
        s = self.s_[vary]
        chol = linalg.cho_factor(C, lower=True)
        Cinv_S = linalg.cho_solve(chol, np.diag(s))  # C^-1 diag(s)
        # knockoff mean (row form, standardised): z - z @ C^-1 diag(s); constant: s = 0
        self._scale = np.ones(p)
        self._scale[vary] = sd
        self._shift = np.zeros((p, p))
        self._shift[np.ix_(vary, vary)] = Cinv_S
        Vc = 2.0 * np.diag(s) - np.diag(s) @ Cinv_S
        Vc = (Vc + Vc.T) / 2.0
        V = np.zeros((p, p))
        V[np.ix_(vary, vary)] = Vc * np.outer(sd, sd)
        self.knockoff_covariance_ = V
        # the symmetric square root Q sqrt(w) Q^T: unlike (Q sqrt(w))^T it does not
        # depend on the basis eigh picks in a repeated eigenvalue's eigenspace (which
        # round-off can rotate), so equal models give equal draws. Eigenvalues below
        # _ROOT_FLOOR times the largest are set to 0: a singular Vc (equicorrelated
        # s = 2 lambda_min) computes them as round-off of either sign, whose square
        # roots (1e-8 for 1e-16) would otherwise make the draws depend on the last bits
        w, Q = linalg.eigh(Vc)
        w = np.where(w > _ROOT_FLOOR * max(float(w[-1]), 0.0), w, 0.0)
        self._root = np.zeros((p, p))  # z @ root has covariance Vc (standardised)
        self._root[np.ix_(vary, vary)] = (Q * np.sqrt(w)) @ Q.T

    def score(self, X: ArrayLike, y: None = None) -> float:
        """Mean Gaussian log-likelihood of the rows of ``X`` under the fitted model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric rows, with the columns given to ``fit``.
        y : None
            Ignored.

        Returns
        -------
        float
            The mean log-density of the rows under ``N(mean_, covariance_)``, over the
            columns that vary in ``fit`` (constant columns are left out).
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        vary = np.flatnonzero(~self.constant_)
        try:
            chol = linalg.cho_factor(self.covariance_[np.ix_(vary, vary)], lower=True)
        except linalg.LinAlgError as exc:
            raise ValueError(
                f"The fitted covariance is not positive definite ({exc}); refit with "
                f"shrinkage='ledoit_wolf' or without linearly dependent columns."
            ) from exc
        R = (X - self.mean_)[:, vary]
        maha = np.einsum("ij,ij->i", R, linalg.cho_solve(chol, R.T).T)
        logdet = 2.0 * np.sum(np.log(np.diag(chol[0])))
        p = vary.size
        return float(np.mean(-0.5 * (maha + logdet + p * np.log(2.0 * np.pi))))

    def sample(self, X: ArrayLike, n_knockoffs: int = 1,
               random_state: RandomStateLike = None) -> np.ndarray:
        """Draw knockoffs of the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to draw knockoffs for; need not be the training rows.
        n_knockoffs : int, default=1
            Independent knockoffs per row.
        random_state : int, RandomState instance or None, default=None
            One integer is drawn from it; row ``i`` then uses its own random stream,
            seeded by that integer and ``i``, so a row's knockoffs do not depend on
            which other rows are sampled in the same call.

        Returns
        -------
        ndarray of shape (n_samples, n_knockoffs, n_features)
            ``X_tilde[i, k]`` is the ``k``-th knockoff of row ``i``.
        """
        return _sample(self, X, n_knockoffs, random_state,
                       lambda X: validate_data(self, X, dtype=np.float64, reset=False))

    def sample_seeded(self, X: np.ndarray, n_knockoffs: int, base_seed: int,
                      row_indices: ArrayLike | None) -> np.ndarray:
        """Knockoffs of rows already validated, seeded per row.

        The knockoff explainers call this (a package-internal hook, public so that a
        third-party sampler can offer it); ``sample`` validates ``X``, draws one base seed
        and calls it.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Rows already validated against ``fit`` (no checks here).
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
        X = np.asarray(X, dtype=np.float64)
        n, p = X.shape
        if row_indices is None:
            row_indices = range(n)
        # row by row (row_matmul): a row's knockoffs do not depend on the rows drawn with it
        mean = X - row_matmul((X - self.mean_) / self._scale, self._shift) * self._scale
        Z, _ = _row_draws(base_seed, row_indices, n_knockoffs * p)
        out = row_matmul(Z.reshape(n * n_knockoffs, p), self._root).reshape(n, n_knockoffs, p)
        out *= self._scale
        out += mean[:, None, :]
        for j in np.flatnonzero(self.discrete_):
            out[:, :, j] = _to_support(out[:, :, j], self.mean_[j], self._scale[j],
                                       self._supports[j])
        if self._round:
            for j, values in enumerate(self.support_values_):
                col = out[:, :, j]
                k = np.clip(np.searchsorted(values, col), 1, max(len(values) - 1, 1))
                lo = values[k - 1]
                hi = values[np.minimum(k, len(values) - 1)]
                out[:, :, j] = np.where(np.abs(col - lo) <= np.abs(hi - col), lo, hi)
        return out
