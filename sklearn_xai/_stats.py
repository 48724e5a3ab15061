"""The statistics the package's standard errors share: exact power-of-two scaling of values
far from 1, Student-t widening by degrees of freedom, and the standard error of a mean of
independent estimates (Welch-Satterthwaite). One owner: the Shapley engine, KnockoffSAGE
and the plots combine standard errors through these."""

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


def t_factor(df):
    """``t(0.975, df) / z(0.975)``; 1 where ``df`` is not finite and positive (the normal
    interval)."""
    # scipy.special's quantile functions themselves (what scipy.stats' t.ppf and norm.ppf
    # call: the same numbers), once per distinct df: 5 us instead of 114 us for a few
    # values, where the frontier's standard errors of a batch have thousands
    from scipy.special import ndtri, stdtrit
    df = np.asarray(df, dtype=np.float64)
    ok = np.isfinite(df) & (df > 0)
    out = np.ones(df.shape)
    if ok.any():
        u, inv = np.unique(df[ok], return_inverse=True)
        out[ok] = (stdtrit(u, 0.975) / ndtri(0.975))[inv.ravel()]
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
