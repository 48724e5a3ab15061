"""The statistics the package's standard errors share: exact power-of-two scaling of values
far from 1, Student-t widening by degrees of freedom, and the standard error of a mean of
independent estimates (Welch-Satterthwaite). One owner: the Shapley engine, KnockoffSAGE
and the plots combine standard errors through these."""

from functools import lru_cache

import numpy as np


def pow2_scale(a, axis=None):
    """A power of two near ``max |a|`` over ``axis`` (kept, size 1), ignoring non-finite
    entries; 1 where there is none or the maximum is 0.

    Dividing by it is exact, so arithmetic on ``a / pow2_scale(a)`` is that on ``a``
    scaled exactly, without the overflow or underflow of squares (or fourth powers) of
    values far from 1.
    """
    a = np.abs(np.asarray(a, dtype=np.float64))
    keep = axis is not None
    m = a.max(axis=axis, keepdims=keep, initial=0.0)
    if not np.isfinite(m).all():
        m = np.where(np.isfinite(a), a, 0.0).max(axis=axis, keepdims=keep, initial=0.0)
    return np.ldexp(1.0, np.frexp(m)[1])                  # frexp(0) = (0, 0): 1 for 0


def welch_satterthwaite(v, df, axis=1):
    """Degrees of freedom of a sum over ``axis`` of independent variance estimates ``v``
    with ``df`` degrees of freedom each: ``(sum v)^2 / sum(v^2 / df)``; inf where the sum
    is exact (every ``v`` 0)."""
    v = v / pow2_scale(v, axis=axis)     # exact; v**2 of se**2 far from 1 over/underflows
    den = np.where(v > 0, v**2 / df, 0.0).sum(axis=axis)
    tot = v.sum(axis=axis)
    return np.where(den > 0, tot**2 / np.where(den > 0, den, 1.0), np.inf)


# t(0.975, df) / z(0.975) for df >= _T_CHEB_MIN_DF by a Chebyshev interpolant in 1 / df
# (see _t_chebyshev): within 2.5e-15 relative of scipy's stdtrit on df in [2, inf), at a
# twentieth of its time (it inverts the t distribution value by value: about 0.4 us each,
# and a batch of frontier rows has thousands of distinct Welch-Satterthwaite df)
_T_CHEB_MIN_DF = 2.0
_T_CHEB_DEGREE = 24


@lru_cache(maxsize=1)
def _t_chebyshev():
    """The Chebyshev coefficients of ``x -> t(0.975, 1 / x) / z(0.975)`` on ``x`` in
    ``[0, 1 / _T_CHEB_MIN_DF]``, interpolated at the Chebyshev nodes (stdtrit's values
    there)."""
    from numpy.polynomial import chebyshev
    from scipy.special import ndtri, stdtrit
    k = np.arange(_T_CHEB_DEGREE + 1)
    u = np.cos(np.pi * (k + 0.5) / (_T_CHEB_DEGREE + 1))     # in (-1, 1): x > 0
    x = (u + 1.0) / (2.0 * _T_CHEB_MIN_DF)
    return chebyshev.chebfit(u, stdtrit(1.0 / x, 0.975) / ndtri(0.975), _T_CHEB_DEGREE)


def t_factor(df):
    """``t(0.975, df) / z(0.975)``; 1 where ``df`` is not finite and positive (the normal
    interval)."""
    # scipy.special's quantile functions themselves (what scipy.stats' t.ppf and norm.ppf
    # call: the same numbers) below _T_CHEB_MIN_DF, once per distinct df; above it the
    # interpolant, a few ulps from them
    from numpy.polynomial import chebyshev
    from scipy.special import ndtri, stdtrit
    df = np.asarray(df, dtype=np.float64)
    ok = np.isfinite(df) & (df > 0)
    out = np.ones(df.shape)
    cheb = ok & (df >= _T_CHEB_MIN_DF)
    if cheb.any():
        out[cheb] = chebyshev.chebval(2.0 * _T_CHEB_MIN_DF / df[cheb] - 1.0, _t_chebyshev())
    low = ok & ~cheb
    if low.any():
        u, inv = np.unique(df[low], return_inverse=True)
        out[low] = (stdtrit(u, 0.975) / ndtri(0.975))[inv.ravel()]
    return out


def t_widened(se, df):
    """``se * t(0.975, df) / z(0.975)``: ``+-1.96`` times it is the 95 % Student-t
    interval of an estimate whose standard error ``se`` has ``df`` degrees of freedom
    (``inf``: the normal interval, ``se`` unchanged; NaN stays NaN)."""
    return se * t_factor(df)


def mean_se(se, df, axis=1):
    """The standard error and degrees of freedom of the mean over ``axis`` of independent
    estimates with standard errors ``se`` (unwidened) and ``df`` degrees of freedom:
    ``sqrt(sum se**2) / K`` (in a power-of-two scale, exact: squares of ``se`` near 1e154
    would overflow) and Welch-Satterthwaite's degrees of freedom; NaN stays NaN."""
    c = pow2_scale(se, axis=axis)
    v = (se / c) ** 2
    return (np.sqrt(v.sum(axis=axis)) * np.squeeze(c, axis) / se.shape[axis],
            welch_satterthwaite(v, df, axis=axis))
