"""Faults of ``sklearn_xai.metrics``: integer rows keep a fractional reference, and the
ranking measures and the efficiency gap check their inputs' shapes."""

import re

import numpy as np
import pytest

from sklearn_xai import Attribution, metrics

W = np.array([1.0, -2.0, 0.5])


def _linear(Z):
    return (np.asarray(Z, dtype=np.float64) @ W)[:, None]


def _int_rows():
    return np.array([[0, 0, 0], [1, 3, 2], [2, 0, 5], [4, 1, 1]])


REF = np.array([[0.4, 0.6, 2.5]])     # e.g. the column means: not integers


def test_deletion_curve_of_integer_rows_uses_the_fractional_reference():
    X = _int_rows()
    phi = (X - REF) * W                # exact attributions of the linear model
    order, curve = metrics.deletion_curve(_linear, X, phi, REF)
    # oracle: removing player j moves the output by -phi_j, in the deletion order
    expected = _linear(X)[:, 0][:, None] - np.concatenate(
        [np.zeros((4, 1)), np.cumsum(np.take_along_axis(phi, order, axis=1), axis=1)],
        axis=1)
    np.testing.assert_allclose(curve, expected, atol=1e-12)
    np.testing.assert_allclose(curve[:, -1], _linear(REF)[0, 0], atol=1e-12)
    # the same as with float rows
    order_f, curve_f = metrics.deletion_curve(_linear, X.astype(float), phi, REF)
    np.testing.assert_array_equal(order, order_f)
    np.testing.assert_array_equal(curve, curve_f)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, bool])
def test_exact_linear_attributions_are_perfectly_faithful_on_integer_rows(dtype):
    X = (_int_rows() % 2).astype(dtype) if dtype is bool else _int_rows().astype(dtype)
    phi = (X.astype(float) - REF) * W
    assert metrics.faithfulness(_linear, X, phi, REF) == pytest.approx(1.0, abs=1e-12)
    assert metrics.faithfulness(_linear, X, -phi, REF) == pytest.approx(-1.0, abs=1e-12)
    assert metrics.monotonicity(_linear, X, phi, REF) == metrics.monotonicity(
        _linear, X.astype(float), phi, REF)
    # the faithfulness correlation agrees: attributions that add up to the drops score 1
    assert metrics.faithfulness_correlation(_linear, X, phi, REF) == pytest.approx(1.0)


def test_monotonicity_of_integer_rows_sees_the_true_drops():
    # drops |phi| sorted decreasingly: monotone (1.0) unless the reference is truncated
    X = np.array([[3, 3, 3]])
    ref = np.array([[0.5, 2.9, 2.1]])
    phi = (X - ref) * W                # |phi| = 2.5, 0.2, 0.45: order 0, 2, 1
    # (a reference truncated to [0, 2, 2] would give the drops 3, 0.5, 2)
    assert metrics.monotonicity(_linear, X, phi, ref) == 1.0


def test_deletion_curve_checks_shapes():
    X = _int_rows()
    with pytest.raises(ValueError, match=r"same rows; got X of shape \(4, 3\) and values "
                                         r"of shape \(2, 3\)"):
        metrics.deletion_curve(_linear, X, np.ones((2, 3)), REF)
    with pytest.raises(ValueError, match="values has 2 players but groups lists 3"):
        metrics.deletion_curve(_linear, X, np.ones((4, 2)), REF)


def _pair(seed=0, shape=(5, 4)):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape), rng.normal(size=shape)


@pytest.mark.parametrize("metric", [metrics.top_k_accuracy, metrics.ranking_accuracy])
def test_ranking_measures_refuse_mismatched_shapes(metric):
    a, b = _pair()
    for x, y in [(a, a[:2]), (a[:1], b), (a, b[:, :3]), (a[:, :, None], a)]:
        with pytest.raises(ValueError, match=re.escape(
                f"values of shape {x.shape} and reference of shape {y.shape}")):
            metric(x, y)
    with pytest.raises(ValueError, match="2-D .* or 3-D"):
        metric(a[0], b[0])
    with pytest.raises(ValueError, match="at least one row"):
        metric(a[:0], b[:0])
    # same shapes still work, with the exact answers
    assert metric(a, a) == 1.0
    three = np.stack([a, -a], axis=2)
    assert metric(three, three) == 1.0


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "2", None])
def test_top_k_accuracy_refuses_a_k_that_is_not_a_positive_int(k):
    a, b = _pair()
    with pytest.raises(ValueError, match=re.escape(f"k must be a positive int, got {k!r}")):
        metrics.top_k_accuracy(a, b, k=k)


def test_top_k_accuracy_values():
    a = np.array([[3.0, -2.0, 1.0, 0.1], [0.1, 0.2, 0.3, 0.4]])
    b = np.array([[-3.0, 0.1, 2.0, 1.0], [0.4, 0.3, 0.2, 0.1]])
    # row 0: top-2 {0, 1} vs {0, 2}: 1/2; row 1: {3, 2} vs {0, 1}: 0
    assert metrics.top_k_accuracy(a, b, k=2) == 0.25
    assert metrics.top_k_accuracy(a, b, k=np.int64(10)) == 1.0   # clipped to 4 players
    assert metrics.top_k_accuracy(a, b, k=1) == 0.5


def _attribution(n=4, n_outputs=3):
    rng = np.random.default_rng(1)
    shape = (n, 2, n_outputs) if n_outputs > 1 else (n, 2)
    return Attribution(values=rng.normal(size=shape),
                       base_values=rng.normal(size=(n, n_outputs) if n_outputs > 1 else n),
                       data=rng.normal(size=(n, 2)), feature_names=["a", "b"],
                       output_names=[f"o{k}" for k in range(n_outputs)])


def test_efficiency_gap_checks_the_output_shape():
    att = _attribution()
    out = att.predicted()                     # (4, 3)
    assert metrics.efficiency_gap(att, out) == 0.0
    assert metrics.efficiency_gap(att, out + 0.5) == pytest.approx(0.5)
    # an (outputs, rows) array used to be reshaped into (rows, outputs) silently
    for wrong in (out.T, out.ravel(), out[:, :2], out[:3]):
        with pytest.raises(ValueError, match=re.escape(
                f"output must have the shape (4, 3) (n_samples, n_outputs) of the "
                f"attributions' predicted(); got shape {wrong.shape}")):
            metrics.efficiency_gap(att, wrong)
    one = _attribution(n_outputs=1)
    out = one.predicted()                     # (4,)
    assert metrics.efficiency_gap(one, out) == 0.0
    assert metrics.efficiency_gap(one, out[:, None] - 2.0) == pytest.approx(2.0)
    with pytest.raises(ValueError, match=re.escape("(4,) or (4, 1)")):
        metrics.efficiency_gap(one, np.tile(out, 2))



# --- input checks of the deletion measures, the faithfulness correlation and the
# --- attribution comparisons: clear errors instead of IndexError / AttributeError

X4 = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [3.0, 0.0, 1.0], [2.0, 2.0, 2.0]])
PHI4 = (X4 - REF) * W


def _two_outputs(Z):
    y = _linear(Z)[:, 0]
    return np.stack([y, -y], axis=1)


def _one_d(Z):
    return _linear(Z)[:, 0]


DELETION = [metrics.faithfulness, metrics.monotonicity]


@pytest.mark.parametrize("metric", DELETION + [metrics.deletion_curve,
                                                metrics.faithfulness_correlation])
def test_reference_of_the_wrong_width_is_refused(metric):
    with pytest.raises(ValueError, match=re.escape(
            "reference must be one row of shape (1, 3) or (3,), one value per column of X; "
            "got shape (2,)")):
        metric(_linear, X4, PHI4, REF[0, :2])


@pytest.mark.parametrize("metric", DELETION + [metrics.deletion_curve,
                                                metrics.faithfulness_correlation])
def test_a_reference_per_row_is_refused_not_cut_to_its_first_row(metric):
    with pytest.raises(ValueError, match=r"reference must be one row .* got shape \(4, 3\) "
                                         r"\(a reference per explained row is not supported"):
        metric(_linear, X4, PHI4, X4[::-1])
    # one row, as (n_features,) or (1, n_features): the same result
    a, b = metric(_linear, X4, PHI4, REF), metric(_linear, X4, PHI4, REF[0])
    if isinstance(a, tuple):  # deletion_curve: (order, curve)
        a, b = a[1], b[1]
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("metric", DELETION + [metrics.deletion_curve,
                                                metrics.faithfulness_correlation])
@pytest.mark.parametrize("groups", [[[0], [1], [3]], [[0], [1], [-1]], [[0], [1.5], [2]]])
def test_groups_out_of_range_or_fractional_are_refused(metric, groups):
    with pytest.raises((ValueError, TypeError), match=r"groups\[\d\] (holds column indices "
                                                      r"outside \[0, 3\)|must hold int)"):
        metric(_linear, X4, PHI4, REF, groups)


@pytest.mark.parametrize("metric", DELETION)
@pytest.mark.parametrize("output", [5, 2, 1.5, None, -1, True])
def test_output_out_of_range_or_not_an_int_is_refused(metric, output):
    with pytest.raises(ValueError, match=r"output must be (a non-negative int|an int in "
                                         r"\[0, 2\)).*got " + re.escape(repr(output))):
        metric(_two_outputs, X4, PHI4, REF, output=output)
    # 3-D attributions: the output also indexes them
    with pytest.raises(ValueError, match=re.escape(
            f"output must be an int in [0, 2): the attribution has 2 output(s); got "
            f"{output!r}")) if output in (5, 2) else pytest.raises(
                ValueError, match="output must be a non-negative int"):
        metric(_two_outputs, X4, np.stack([PHI4, -PHI4], axis=2), REF, output=output)


@pytest.mark.parametrize("metric", DELETION)
def test_one_output_models_take_output_0_only(metric):
    with pytest.raises(ValueError, match=re.escape(
            "output must be an int in [0, 1): model_fn returns one output (a 1-D array); "
            "got 5")):
        metric(_one_d, X4, PHI4, REF, output=5)
    assert metric(_one_d, X4, PHI4, REF) == metric(_linear, X4, PHI4, REF)
    # a valid output of a two-output model still works
    assert metric(_two_outputs, X4, -PHI4, REF, output=1) == metric(_linear, X4, PHI4, REF)


def test_deletion_curve_takes_a_one_dimensional_model_output():
    order, curve = metrics.deletion_curve(_one_d, X4, PHI4, REF)
    order2, curve2 = metrics.deletion_curve(_linear, X4, PHI4, REF)
    np.testing.assert_array_equal(order, order2)
    np.testing.assert_array_equal(curve, curve2)
    with pytest.raises(ValueError, match=re.escape(
            "model_fn must return one row per input row, shape (16,) or (16, n_outputs); "
            "got shape (3,)")):
        metrics.deletion_curve(lambda Z: np.zeros(3), X4, PHI4, REF)


def test_faithfulness_correlation_checks_x_and_the_model_output():
    with pytest.raises(ValueError, match=re.escape(
            "X must be 2-D (n_samples, n_features) and attribution 2-D")):
        metrics.faithfulness_correlation(_linear, X4[0], PHI4, REF)
    with pytest.raises(ValueError, match="with the same rows; got X of shape \\(2, 3\\)"):
        metrics.faithfulness_correlation(_linear, X4[:2], PHI4, REF)
    with pytest.raises(ValueError, match=re.escape(
            "model_fn must return one row per input row and one column per output of the "
            "attribution, shape (260, 1); got shape (260, 2)")):
        metrics.faithfulness_correlation(_two_outputs, X4, PHI4, REF)
    # a 1-D output is one output
    assert metrics.faithfulness_correlation(_one_d, X4, PHI4, REF) == \
        metrics.faithfulness_correlation(_linear, X4, PHI4, REF)


@pytest.mark.parametrize("n_subsets", [0, -1, 1, 1.5, None, True, "8"])
def test_faithfulness_correlation_refuses_a_bad_n_subsets(n_subsets):
    with pytest.raises(ValueError, match=re.escape(
            f"n_subsets must be an int >= 2 (a correlation over the subsets needs two); got "
            f"{n_subsets!r}")):
        metrics.faithfulness_correlation(_linear, X4, PHI4, REF, n_subsets=n_subsets)


@pytest.mark.parametrize("seed", [-1, 1.5, "x", True])
def test_faithfulness_correlation_refuses_a_bad_random_state(seed):
    with pytest.raises(ValueError, match=re.escape(
            f"random_state must be a non-negative int (the seed of the subsets); got "
            f"{seed!r}")):
        metrics.faithfulness_correlation(_linear, X4, PHI4, REF, random_state=seed)


def test_faithfulness_correlation_valid_arguments_unchanged():
    a = metrics.faithfulness_correlation(_linear, X4, PHI4 + 0.3, REF, n_subsets=2,
                                         random_state=np.int64(3))
    b = metrics.faithfulness_correlation(_linear, X4, PHI4 + 0.3, REF, n_subsets=2,
                                         random_state=3)
    assert a == b


def test_efficiency_gap_needs_an_attribution():
    with pytest.raises(TypeError, match=re.escape(
            "attribution must be an Attribution (values with their base values, as explain "
            "returns); got ndarray")):
        metrics.efficiency_gap(np.zeros((4, 2)), np.zeros(4))


def test_absolute_error_checks_dimensions_and_emptiness():
    a, b = _pair()
    with pytest.raises(ValueError, match=re.escape(
            "must be 2-D (n_samples, n_players) or 3-D (n_samples, n_players, n_outputs); "
            "got shape (4,)")):
        metrics.absolute_error(a[0], b[0])
    with pytest.raises(ValueError, match=re.escape(
            "at least one row, player and output; got shape (0, 4)")):
        metrics.absolute_error(a[:0], b[:0])
    assert metrics.absolute_error(a, b) == float(np.abs(a - b).sum(axis=1).mean())


@pytest.mark.parametrize("metric", [metrics.top_k_accuracy, metrics.ranking_accuracy])
def test_ranking_measures_refuse_nan(metric):
    a, b = _pair()
    nan = np.full_like(a, np.nan)
    with pytest.raises(ValueError, match=re.escape("values holds NaN (20 of 20 entries)")):
        metric(nan, b)
    one = b.copy()
    one[2, 1] = np.nan
    with pytest.raises(ValueError, match=re.escape("reference holds NaN (1 of 20 entries)")):
        metric(a, one)
