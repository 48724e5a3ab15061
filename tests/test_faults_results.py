"""Result objects keep the row labels of the explained DataFrame (issue #24).

``Attribution.to_frame()`` and ``Counterfactuals.to_frame()`` are indexed by the labels of
``X`` when ``explain`` received a DataFrame, so that they join back to the input rows.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.frozen import FrozenEstimator

from sklearn_xai import TreeShapExplainer
from sklearn_xai._registry import all_explainers
from sklearn_xai.base import AttributionMixin
from sklearn_xai.recourse import MaceRecourse, P2CERecourse

from ._instances import fast_params


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 600
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"],
                     index=pd.Index([f"row{i}" for i in range(n)], name="id"))
    y = (X["a"] + 0.5 * X["b"] > 0).astype(int).to_numpy()
    model = GradientBoostingClassifier(n_estimators=20, max_depth=2, random_state=0)
    return X, model.fit(X, y)


def test_attribution_to_frame_keeps_the_index_of_x(data):
    X, model = data
    expl = TreeShapExplainer(FrozenEstimator(model)).fit(X.iloc[:200])
    rows = X.iloc[500:503]
    att = expl.explain(rows)
    frame = att.to_frame()
    assert frame.index.equals(rows.index)  # row500, row501, row502 -- not 0, 1, 2
    np.testing.assert_array_equal(frame.to_numpy(), att.values)
    # the rows join back to X: each labelled row is that row's own attribution, and
    # base + sum equals the model's margin on it
    for label in rows.index:
        alone = expl.explain(X.loc[[label]]).values[0]
        np.testing.assert_allclose(frame.loc[label].to_numpy(), alone, rtol=0, atol=1e-12)
    margin = model.decision_function(X.loc[frame.index])
    np.testing.assert_allclose(att.base_values + frame.sum(axis=1).to_numpy(), margin,
                               rtol=0, atol=1e-9)


def test_attribution_of_an_array_keeps_positions(data):
    X, model = data
    expl = TreeShapExplainer(FrozenEstimator(model)).fit(X.to_numpy()[:200])
    frame = expl.explain(X.to_numpy()[500:503]).to_frame()
    assert frame.index.equals(pd.RangeIndex(3))


@pytest.mark.parametrize("cls", [MaceRecourse, P2CERecourse])
def test_counterfactuals_to_frame_is_indexed_by_the_query_label(data, cls):
    X, model = data
    if cls is P2CERecourse:
        expl = cls(FrozenEstimator(model), grid_step=0.25, max_changes=2, n_estimators=10,
                   shap_samples=10, random_state=0)
    else:
        expl = cls(FrozenEstimator(model), n_counterfactuals=2, neighbors="exact",
                   random_state=0)
    expl.fit(X.iloc[:300])
    rows = X.iloc[500:505]
    res = expl.explain(rows)
    frame = res.to_frame()
    assert res.found.sum() >= 3
    pos = np.asarray(frame["query"])  # still the position among the queries
    assert frame.index.tolist() == rows.index[pos].tolist()
    # joined back to X, every counterfactual flips the prediction of its own query
    joined = frame.merge(X, left_index=True, right_index=True, suffixes=("", "_query"))
    np.testing.assert_array_equal(
        model.predict(joined[["a", "b", "c"]]),
        1 - model.predict(joined[["a_query", "b_query", "c_query"]].set_axis(
            ["a", "b", "c"], axis=1)))
    np.testing.assert_array_equal(joined[["a_query", "b_query", "c_query"]].to_numpy(),
                                  X.loc[frame.index].to_numpy())


@pytest.mark.parametrize("cls", [c for c in all_explainers() if issubclass(c, AttributionMixin)],
                         ids=lambda c: c.__name__)
def test_every_attribution_explainer_keeps_the_index_of_x(cls, data):
    X, model = data
    est = cls(FrozenEstimator(model), **fast_params(cls)).fit(X.iloc[:100])
    rows = X.iloc[[510, 3, 77]]
    frame = est.explain(rows).to_frame()
    assert list(frame.index) == ["row510", "row3", "row77"]


@pytest.mark.parametrize("how", ["feature", "labels"])
def test_cohorts_keep_rows_with_missing_values(how):
    from sklearn_xai import Attribution

    data = np.array([[1.0, 0.0], [np.nan, 1.0], [1.0, 2.0], [np.nan, 3.0], [2.0, 4.0]])
    att = Attribution(values=np.arange(10.0).reshape(5, 2), base_values=np.arange(5.0),
                      data=data, feature_names=["f", "g"], output_names=["predict"])
    parts = att.cohorts("f" if how == "feature" else data[:, 0].copy())
    assert list(parts) == ["1.0", "2.0", "nan"]
    expected = {"1.0": [0, 2], "2.0": [4], "nan": [1, 3]}
    for name, rows in expected.items():
        np.testing.assert_array_equal(parts[name].values, att.values[rows])
        np.testing.assert_array_equal(parts[name].base_values, att.base_values[rows])
        np.testing.assert_array_equal(parts[name].data, data[rows])
    # every row in exactly one cohort
    seen = np.sort(np.concatenate([c.base_values for c in parts.values()]))
    np.testing.assert_array_equal(seen, att.base_values)


def test_cohorts_of_object_labels_with_missing_values():
    from sklearn_xai import Attribution

    att = Attribution(values=np.zeros((5, 1)), base_values=np.arange(5.0), data=None,
                      feature_names=["f"], output_names=["predict"])
    parts = att.cohorts(np.array(["a", np.nan, "b", float("nan"), "a"], dtype=object))
    assert {k: v.base_values.tolist() for k, v in parts.items()} == {
        "a": [0.0, 4.0], "b": [2.0], "nan": [1.0, 3.0]}
    with pytest.raises(ValueError, match="distinct labels as text"):
        att.cohorts(np.array([1, "1", 2, 2, 2], dtype=object))


def test_additivity_gap_checks_the_output_shape_instead_of_reshaping():
    # an (n_outputs, n_samples) array was reshaped to (n_samples, n_outputs): scrambled
    from sklearn_xai import Attribution

    rng = np.random.default_rng(0)
    att = Attribution(values=rng.normal(size=(4, 3, 2)), base_values=rng.normal(size=(4, 2)),
                      data=np.zeros((4, 3)), feature_names=list("abc"),
                      output_names=["p", "q"])
    out = att.predicted()
    assert att.additivity_gap(out) == 0.0
    with pytest.raises(ValueError, match=r"shape \(4, 2\).*got shape \(2, 4\)"):
        att.additivity_gap(out.T)
    one = Attribution(values=rng.normal(size=(4, 3)), base_values=rng.normal(size=4),
                      data=np.zeros((4, 3)), feature_names=list("abc"), output_names=["p"])
    assert one.additivity_gap(one.predicted()[:, None]) == 0.0  # (n, 1) for one output
    with pytest.raises(ValueError, match=r"got shape \(8,\)"):
        one.additivity_gap(np.zeros(8))
