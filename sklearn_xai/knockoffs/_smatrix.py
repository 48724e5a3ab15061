"""Solvers for the diagonal ``s`` of Gaussian model-X knockoffs.

All solvers work on a correlation matrix ``C`` (unit diagonal). A vector ``s`` is
feasible when ``0 <= s`` and ``2 C - diag(s)`` is positive semidefinite; the joint
covariance of ``(X, X~)`` is then ``[[C, C - diag s], [C - diag s, C]]``.

* equicorrelated: ``s_j = min(1, 2 lambda_min(C))`` for every ``j`` (closed form);
* SDP: maximise ``sum(s)`` subject to ``0 <= s <= 1`` and ``diag(s) <= 2 C``, solved
  with a log-barrier interior-point method (Newton steps, numpy only);
* MVR (Spector & Janson 2022): minimise ``Tr((2C - diag s)^-1) + sum_j 1 / s_j`` by
  exact coordinate descent with Sherman-Morrison updates.

Each costs ``O(p^3)`` per iteration (one ``p x p`` inverse or Cholesky factorisation).

Every solver needs ``C`` positive definite. A computed eigenvalue of a symmetric matrix
is only accurate to about ``p * eps * lambda_max`` (the backward error of the
eigensolver), so ``C`` counts as singular when ``lambda_min <= p * eps * lambda_max``:
whether an exactly singular ``C`` then has a tiny positive or negative computed
``lambda_min`` depends on the BLAS kernel, and either way it is rejected with the same
ValueError. A ``LinAlgError`` inside a solver is turned into that ValueError too.
"""

from contextlib import contextmanager

import numpy as np
from scipy import linalg
from threadpoolctl import threadpool_limits

_REMEDY = ("drop linearly dependent columns, or shrink the covariance (e.g. "
           "GaussianKnockoffs(shrinkage='ledoit_wolf'))")


def singular_tolerance(eigenvalues, n_terms):
    """Largest ``lambda_min`` treated as 0: ``n_terms * eps * lambda_max``.

    ``n_terms`` is ``p`` for a given matrix (eigensolver round-off) and ``max(n, p)`` for
    a covariance computed from ``n`` rows (round-off of its ``n``-term sums as well), the
    rule of :func:`numpy.linalg.matrix_rank`.
    """
    return n_terms * np.finfo(np.float64).eps * max(float(np.max(eigenvalues)), 0.0)


def _positive_min_eigenvalue(C, method):
    """The smallest eigenvalue of ``C``; a ValueError naming ``method`` if ``C`` is
    singular up to round-off."""
    lam = linalg.eigvalsh(C)
    tol = singular_tolerance(lam, C.shape[0])
    if not lam[0] > tol:
        raise ValueError(
            f"The correlation matrix is singular (smallest eigenvalue {lam[0]:.3g}, not "
            f"above the round-off tolerance {tol:.3g}); {method} knockoffs need it "
            f"positive definite: {_REMEDY}."
        )
    return float(lam[0])


@contextmanager
def _linalg_errors_as_value_errors(method):
    """Report a ``LinAlgError`` of a solver as the singular-matrix ValueError."""
    try:
        yield
    except linalg.LinAlgError as exc:
        raise ValueError(
            f"The {method} knockoff solver failed on a numerically singular correlation "
            f"matrix ({exc}); it must be positive definite: {_REMEDY}."
        ) from exc


def solve_equicorrelated(C):
    """Equicorrelated ``s``: every entry ``min(1, 2 lambda_min(C))``.

    Parameters
    ----------
    C : ndarray of shape (p, p)
        Positive definite correlation matrix.

    Returns
    -------
    s : ndarray of shape (p,)
    """
    lam = _positive_min_eigenvalue(C, "equicorrelated")
    return np.full(C.shape[0], min(1.0, 2.0 * lam))


def mvr_loss(C, s):
    """MVR loss ``Tr((2C - diag s)^-1) + sum(1 / s)``; ``inf`` when infeasible."""
    s = np.asarray(s, dtype=float)
    if np.any(s <= 0):
        return np.inf
    M = 2.0 * C - np.diag(s)
    try:
        chol = linalg.cho_factor(M, lower=True)
    except linalg.LinAlgError:
        return np.inf
    Minv = linalg.cho_solve(chol, np.eye(C.shape[0]))
    return float(np.trace(Minv) + np.sum(1.0 / s))


def solve_mvr(C, *, max_iter=100, tol=1e-6):
    """Minimum-reconstructability ``s`` by exact coordinate descent.

    For coordinate ``j`` with ``M = 2C - diag(s)``, ``m = (M^-1)_jj`` and
    ``c = ||M^-1 e_j||^2``, changing ``s_j`` by ``delta`` changes the loss by
    ``delta c / (1 - delta m) + 1 / (s_j + delta) - 1 / s_j`` (Sherman-Morrison); its
    minimiser is ``delta = (1 - sqrt(c) s_j) / (sqrt(c) + m)``, clipped so that
    ``s_j <= 1``. ``M^-1`` is updated in ``O(p^2)`` per coordinate and recomputed from
    scratch after every sweep.

    Parameters
    ----------
    C : ndarray of shape (p, p)
        Positive definite correlation matrix.
    max_iter : int
        Maximum number of sweeps over the coordinates.
    tol : float
        Stop when a sweep lowers the loss by less than ``tol`` times its value.

    Returns
    -------
    s : ndarray of shape (p,)
    n_iter : int
        Number of sweeps run.
    """
    return _solve_checked(C, "MVR", _mvr_descent, max_iter, tol)


def _solve_checked(C, method, solver, max_iter, tol):
    """``solver(C, lambda_min, max_iter, tol)`` with ``C`` checked positive definite and
    its linear-algebra failures raised as ValueErrors naming ``method``."""
    lam = _positive_min_eigenvalue(C, method)
    with _linalg_errors_as_value_errors(method):
        return solver(C, lam, max_iter, tol)


def _mvr_descent(C, lam, max_iter, tol):
    p = C.shape[0]
    s = np.full(p, min(1.0, lam))
    loss = mvr_loss(C, s)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        Minv = linalg.inv(2.0 * C - np.diag(s))
        Minv = (Minv + Minv.T) / 2.0
        for j in range(p):
            col = Minv[:, j]
            m = col[j]
            c = float(col @ col)
            rc = np.sqrt(c)
            delta = (1.0 - rc * s[j]) / (rc + m)
            delta = min(delta, 1.0 - s[j])
            # keep strictly inside the feasible set (1 - delta m > 0, s_j > 0)
            delta = min(delta, (1.0 - 1e-10) / m)
            delta = max(delta, -s[j] * (1.0 - 1e-10))
            if delta == 0.0:
                continue
            s[j] += delta
            denom = 1.0 - delta * m
            Minv += (delta / denom) * np.outer(col, col)
        new_loss = mvr_loss(C, s)
        if not np.isfinite(new_loss):  # numerical trouble: step back to a safe point
            s *= 0.999
            new_loss = mvr_loss(C, s)
        converged = loss - new_loss <= tol * abs(loss)
        loss = new_loss
        if converged:
            break
    return s, n_iter


def solve_sdp(C, *, max_iter=100, tol=1e-6):
    """SDP ``s``: maximise ``sum(s)`` s.t. ``0 <= s <= 1`` and ``diag(s) <= 2C``.

    A log-barrier interior-point method: for increasing ``t`` it minimises
    ``-t sum(s) - log det(2C - diag s) - sum log s - sum log(1 - s)`` by damped Newton
    steps (gradient ``-t + diag(M^-1) - 1/s + 1/(1-s)``, Hessian
    ``M^-1 o M^-1 + diag(1/s^2 + 1/(1-s)^2)``), stopping when the duality-gap bound
    ``3 p / t`` falls below ``tol * p``. Each Newton step costs ``O(p^3)``.

    Parameters
    ----------
    C : ndarray of shape (p, p)
        Positive definite correlation matrix.
    max_iter : int
        Maximum number of Newton steps per barrier stage.
    tol : float
        Target duality gap per coordinate.

    Returns
    -------
    s : ndarray of shape (p,)
    n_iter : int
        Total number of Newton steps.
    """
    return _solve_checked(C, "SDP", _sdp_barrier, max_iter, tol)


def _sdp_barrier(C, lam, max_iter, tol):
    p = C.shape[0]
    # strictly feasible start
    s = np.full(p, min(0.5, lam))
    t = 1.0
    mu = 10.0
    total = 0

    def barrier(s, t):
        if np.any(s <= 0) or np.any(s >= 1):
            return np.inf, None
        try:
            chol = linalg.cholesky(2.0 * C - np.diag(s), lower=True)
        except linalg.LinAlgError:
            return np.inf, None
        logdet = 2.0 * np.sum(np.log(np.diag(chol)))
        val = -t * s.sum() - logdet - np.log(s).sum() - np.log1p(-s).sum()
        return val, chol

    while True:
        val, chol = barrier(s, t)
        for _ in range(max_iter):
            Minv = linalg.cho_solve((chol, True), np.eye(p))
            grad = -t + np.diag(Minv) - 1.0 / s + 1.0 / (1.0 - s)
            hess = Minv * Minv + np.diag(1.0 / s**2 + 1.0 / (1.0 - s) ** 2)
            step = -linalg.solve(hess, grad, assume_a="pos")
            decrement = -float(grad @ step)
            total += 1
            if decrement / 2.0 <= 1e-10:
                break
            alpha = 1.0
            while True:
                new_val, new_chol = barrier(s + alpha * step, t)
                if new_val <= val - 0.25 * alpha * decrement:
                    break
                alpha *= 0.5
                if alpha < 1e-12:
                    new_val, new_chol = val, chol
                    alpha = 0.0
                    break
            if alpha == 0.0:
                break
            s = s + alpha * step
            val, chol = new_val, new_chol
        if 3.0 * p / t < tol * p:
            break
        t *= mu
    return s, total


def solve_s(C, method, *, max_iter=100, tol=1e-6):
    """Dispatch to the solver for ``method`` ("mvr", "sdp" or "equicorrelated").

    The solvers make many small matrix operations, which multi-threaded BLAS slows
    down (30x measured on a busy 2-core machine at p = 200), so they run with one
    BLAS thread.

    Returns
    -------
    s : ndarray of shape (p,)
    n_iter : int

    Raises
    ------
    ValueError
        When ``C`` is singular up to round-off (see the module docstring).
    """
    with threadpool_limits(limits=1, user_api="blas"), \
            _linalg_errors_as_value_errors(method):
        return _solve_s(C, method, max_iter=max_iter, tol=tol)


def _solve_s(C, method, *, max_iter, tol):
    if method == "equicorrelated":
        return solve_equicorrelated(C), 0
    if method == "mvr":
        return solve_mvr(C, max_iter=max_iter, tol=tol)
    if method == "sdp":
        return solve_sdp(C, max_iter=max_iter, tol=tol)
    raise ValueError(f"Unknown knockoff method {method!r}.")
