"""The statistics of standard errors (``sklearn_xai._stats``): exact power-of-two scaling,
Student-t widening and the standard error of a mean of independent estimates."""

import numpy as np
import pytest
from scipy import stats

from sklearn_xai._stats import mean_se, pow2_scale, t_factor, welch_satterthwaite


def test_t_factor_is_one_where_the_interval_is_normal():
    df = np.array([np.inf, 0.0, -1.0, np.nan, 1.0, 3.0, 30.0])
    out = t_factor(df)
    np.testing.assert_array_equal(out[:4], 1.0)
    np.testing.assert_allclose(out[4:], stats.t.ppf(0.975, df[4:]) / stats.norm.ppf(0.975),
                               rtol=1e-14)
    assert out[4] > out[5] > out[6] > 1.0


@pytest.mark.parametrize("exponent", [-300, 0, 300])
def test_mean_se_and_welch_satterthwaite_are_exact_at_any_scale(exponent):
    # the squares of standard errors near 1e+-300 over/underflow: the results must scale
    # exactly with them (a power-of-two scale), and match the written-out formulas at 1
    rng = np.random.default_rng(0)
    se, df = rng.uniform(0.5, 2.0, size=(4, 6)), rng.choice([2.0, 5.0, np.inf], size=(4, 6))
    c = 2.0 ** round(exponent * np.log2(10))
    got, nu = mean_se(se * c, df, axis=1)
    ref, ref_nu = mean_se(se, df, axis=1)
    np.testing.assert_array_equal(got, ref * c)
    np.testing.assert_array_equal(nu, ref_nu)
    v = se**2
    np.testing.assert_allclose(ref, np.sqrt(v.sum(axis=1)) / 6, rtol=1e-14)
    np.testing.assert_allclose(ref_nu, v.sum(axis=1) ** 2 / (v**2 / df).sum(axis=1),
                               rtol=1e-14)


def test_welch_satterthwaite_edge_cases():
    # an exact sum (every variance 0) has infinite degrees of freedom; zero terms count
    # for nothing; one term keeps its own degrees of freedom
    assert welch_satterthwaite(np.zeros((1, 3)), np.full((1, 3), 3.0))[0] == np.inf
    v, df = np.array([[0.0, 2.0, 0.0]]), np.array([[1.0, 7.0, 1.0]])
    assert welch_satterthwaite(v, df)[0] == pytest.approx(7.0)
    # equal variances and degrees of freedom: K times them
    assert welch_satterthwaite(np.ones((1, 4)), np.full((1, 4), 3.0))[0] == pytest.approx(12.0)


def test_pow2_scale_ignores_non_finite_and_zero():
    a = np.array([[3.0, -np.inf, np.nan], [0.0, 0.0, 0.0]])
    s = pow2_scale(a, axis=1)
    assert s.shape == (2, 1) and s[0, 0] == 4.0 and s[1, 0] == 1.0
    assert pow2_scale(np.array([1e-300]))[()] == 2.0 ** np.frexp(1e-300)[1]


def test_t_factor_is_scipy_stats_quantile_ratio():
    # the ratio t.ppf / norm.ppf: bit for bit below df = 2 (scipy.special once per
    # distinct df), within a few ulps from 2 on (the Chebyshev interpolant in 1 / df)
    rng = np.random.default_rng(0)
    for df in (rng.uniform(0.5, 50, (20, 13, 2)), np.full(12, 399.0),
               rng.integers(1, 5, 300).astype(float), np.float64(7.0),
               np.array([np.inf, 0.0, -1.0, np.nan, 3.0, 1.9999999, 2.0]),
               np.geomspace(2.0, 1e15, 20_000)):
        ok = np.isfinite(df) & (df > 0)
        ref = np.where(ok, stats.t.ppf(0.975, np.where(ok, df, 1.0)) / stats.norm.ppf(0.975),
                       1.0)
        out = t_factor(df)
        assert np.shape(out) == np.shape(ref)
        low = ~ok | (df < 2.0)
        np.testing.assert_array_equal(out[low], ref[low])
        np.testing.assert_allclose(out, ref, rtol=5e-15, atol=0)
