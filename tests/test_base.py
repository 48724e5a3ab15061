"""The explainer contract: model handling, outputs, validation, batching, results."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_xai import Attribution, Counterfactuals
from sklearn_xai._model import make_model_function
from sklearn_xai.base import groups_from_transformer, reference_row, resolve_feature_groups

from ._toy_explainer import ToyBaselineShapley


@pytest.fixture
def clf_data():
    return make_classification(n_samples=80, n_features=4, n_informative=3, n_redundant=0,
                               random_state=0)


def test_linear_model_baseline_shapley_closed_form():
    X, y = make_regression(n_samples=50, n_features=3, random_state=0)
    exp = ToyBaselineShapley(LinearRegression()).fit(X, y)
    att = exp.explain(X[:5])
    coef = exp.model_.coef_
    expected = (X[:5] - X.mean(axis=0)) * coef
    np.testing.assert_allclose(att.values, expected, atol=1e-10)
    att.check_additivity(exp.model_.predict(X[:5]), atol=1e-10)


def test_frozen_model_used_as_is_and_survives_clone(clf_data):
    from sklearn.base import clone

    X, y = clf_data
    model = LogisticRegression().fit(X, y)
    exp = ToyBaselineShapley(FrozenEstimator(model))
    cloned = clone(exp)
    assert cloned.model.estimator is model
    cloned.fit(X)  # y=None works for a frozen model
    assert cloned.model_.estimator is model


def test_unfrozen_model_without_y_is_a_clear_error(clf_data):
    X, _ = clf_data
    with pytest.raises(ValueError, match="FrozenEstimator"):
        ToyBaselineShapley(LogisticRegression()).fit(X)


def test_unfitted_frozen_model_is_a_clear_error(clf_data):
    X, _ = clf_data
    with pytest.raises(NotFittedError, match="unfitted model"):
        ToyBaselineShapley(FrozenEstimator(LogisticRegression())).fit(X)


def test_explain_before_fit(clf_data):
    X, _ = clf_data
    with pytest.raises(NotFittedError):
        ToyBaselineShapley(LogisticRegression()).explain(X)


@pytest.mark.parametrize("bad, match", [
    (np.zeros((0, 4)), "0 sample"),
    (np.zeros((3, 5)), "features"),
    (np.array([[np.nan, 0, 0, 0]]), "NaN"),
    (np.array([[np.inf, 0, 0, 0]]), "infinity"),
    (np.array([["a", "b", "c", "d"]], dtype=object), "could not convert|string"),
])
def test_bad_input_messages(clf_data, bad, match):
    X, y = clf_data
    exp = ToyBaselineShapley(LogisticRegression()).fit(X, y)
    with pytest.raises(ValueError, match=match):
        exp.explain(bad)


def test_missing_response_method(clf_data):
    X, y = clf_data
    exp = ToyBaselineShapley(Ridge(), response_method="predict_proba")
    with pytest.raises(ValueError, match="has no predict_proba"):
        exp.fit(X, y.astype(float))


def test_output_selection_shapes(clf_data):
    X, y = clf_data
    binary = ToyBaselineShapley(LogisticRegression()).fit(X, y)
    assert binary.output_names_ == ["proba(1)"]
    assert binary.explain(X[:3]).values.shape == (3, 4)
    assert binary.transform(X[:3]).shape == (3, 4)
    neg = ToyBaselineShapley(LogisticRegression(), target=0).fit(X, y)
    assert neg.output_names_ == ["proba(0)"]
    # P(0) = 1 - P(1): attributions are exact negatives
    np.testing.assert_allclose(neg.explain(X[:3]).values, -binary.explain(X[:3]).values,
                               atol=1e-12)
    dec = ToyBaselineShapley(LogisticRegression(), response_method="decision_function",
                             target=0).fit(X, y)
    np.testing.assert_allclose(dec.model_fn_(X[:3])[:, 0], -dec.model_.decision_function(X[:3]))
    y3 = np.arange(len(y)) % 3
    multi = ToyBaselineShapley(LogisticRegression()).fit(X, y3)
    att = multi.explain(X[:3])
    assert att.values.shape == (3, 4, 3) and att.base_values.shape == (3, 3)
    assert multi.transform(X[:3]).shape == (3, 12)
    assert len(multi.get_feature_names_out()) == 12
    with pytest.raises(ValueError, match="not one of the model's classes"):
        ToyBaselineShapley(LogisticRegression(), target=7).fit(X, y)


def test_regressor_outputs():
    X, y = make_regression(n_samples=40, n_features=3, n_targets=2, random_state=0)
    exp = ToyBaselineShapley(LinearRegression()).fit(X, y)
    assert exp.output_names_ == ["predict[0]", "predict[1]"]
    assert exp.explain(X[:2]).values.shape == (2, 3, 2)


def test_same_seed_same_output_any_n_jobs_and_batch(clf_data):
    X, y = clf_data
    ref = ToyBaselineShapley(LogisticRegression(), algorithm="permutation", n_evals=8,
                             random_state=3, batch_size=80).fit(X, y).explain(X[:20]).values
    for n_jobs, batch in [(1, 1), (2, 7), (2, 3)]:
        other = ToyBaselineShapley(LogisticRegression(), algorithm="permutation", n_evals=8,
                                   random_state=3, batch_size=batch, n_jobs=n_jobs)
        # the random draws are identical; only BLAS rounding of different batch shapes differs
        np.testing.assert_allclose(other.fit(X, y).explain(X[:20]).values, ref, rtol=1e-12,
                                   atol=1e-15)


def test_pickle_reproduces(clf_data):
    X, y = clf_data
    exp = ToyBaselineShapley(LogisticRegression(), algorithm="permutation",
                             random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(exp))
    np.testing.assert_array_equal(again.transform(X[:5]), exp.transform(X[:5]))


def test_pipeline_gridsearch_and_set_output(clf_data):
    X, y = clf_data
    model = LogisticRegression().fit(X, y)
    pipe = Pipeline([("explain", ToyBaselineShapley(FrozenEstimator(model))),
                     ("clf", LogisticRegression())])
    pipe.fit(X, y)
    assert pipe.predict(X[:3]).shape == (3,)
    search = GridSearchCV(ToyBaselineShapley(FrozenEstimator(model), algorithm="permutation",
                                             random_state=0),
                          {"n_evals": [4, 16]}, cv=2)
    search.fit(X)
    assert set(search.cv_results_["param_n_evals"]) == {4, 16}
    assert model.coef_ is search.best_estimator_.model_.estimator.coef_
    exp = ToyBaselineShapley(FrozenEstimator(model)).set_output(transform="pandas").fit(X)
    out = exp.transform(X[:2])
    assert list(out.columns) == [f"phi__x{j}" for j in range(4)]


def test_pandas_categorical_pipeline_keeps_dtypes():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.normal(40, 10, 120),
                       "colour": pd.Categorical(rng.choice(["red", "blue", "green"], 120))})
    y = (df["age"] > 40).astype(int) ^ (df["colour"] == "red").astype(int)
    pre = ColumnTransformer([("num", StandardScaler(), ["age"]),
                             ("cat", OneHotEncoder(), ["colour"])])
    pipe = make_pipeline(pre, LogisticRegression()).fit(df, y)
    exp = ToyBaselineShapley(FrozenEstimator(pipe)).fit(df)
    att = exp.explain(df.iloc[:4])
    assert att.values.shape == (4, 2)
    att.check_additivity(pipe.predict_proba(df.iloc[:4])[:, 1], atol=1e-10)
    assert exp.reference_[0, 1] in {"red", "blue", "green"}
    frame = att.to_frame()
    assert list(frame.columns) == ["age", "colour"]
    with pytest.raises(ValueError, match="feature names"):
        exp.explain(df[["colour", "age"]].rename(columns={"age": "years"}))
    groups = groups_from_transformer(pipe[0])
    assert groups == {"age": [0], "colour": [1, 2, 3]}


def test_reference_row_and_groups():
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": pd.Categorical(["x", "y", "y"])})
    ref = reference_row(df)
    assert ref[0, 0] == 2.0 and ref[0, 1] == "y"
    groups, names = resolve_feature_groups([["a"], ["b"]], ["a", "b"])
    assert names == ["a", "b"] and [g.tolist() for g in groups] == [[0], [1]]
    with pytest.raises(ValueError, match="exactly one group"):
        resolve_feature_groups([["a"]], ["a", "b"])
    with pytest.raises(ValueError, match="unknown feature"):
        resolve_feature_groups([["a"], ["zzz"]], ["a", "b"])


def test_model_function_batches_match():
    X, y = make_classification(n_samples=30, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    model = LogisticRegression().fit(X, y)
    whole = make_model_function(model, "auto", None, X[:1])(X)
    batched = make_model_function(model, "auto", None, X[:1], batch_size=7)(X)
    np.testing.assert_array_equal(whole, batched)
    np.testing.assert_allclose(whole[:, 0], model.predict_proba(X)[:, 1])


def test_attribution_object_and_plots():
    rng = np.random.default_rng(0)
    vals = rng.normal(size=(6, 3))
    att = Attribution(vals, np.ones(6), rng.normal(size=(6, 3)), ["a", "b", "c"], ["out"])
    np.testing.assert_allclose(att.predicted(), 1 + vals.sum(axis=1))
    assert att.additivity_gap(att.predicted()) == 0.0
    with pytest.raises(AssertionError, match="not additive"):
        att.check_additivity(att.predicted() + 1)
    assert att.plot_waterfall(0) is not None
    assert att.plot_bar() is not None
    assert att.plot_beeswarm() is not None
    multi = Attribution(rng.normal(size=(2, 3, 2)), np.zeros((2, 2)), None, ["a", "b", "c"],
                        ["p0", "p1"])
    assert multi.to_frame().shape == (2, 6)
    assert multi.to_frame("p1").shape == (2, 3)
    with pytest.raises(ValueError, match="Choose an output"):
        multi.plot_bar()
    with pytest.raises(ValueError, match="one name per"):
        Attribution(vals, np.ones(6), None, ["a"], ["out"])


def test_counterfactuals_object():
    queries = pd.DataFrame({"age": [37, 50], "job": ["a", "b"]})
    cfs = pd.DataFrame({"age": [45, 37], "job": ["a", "c"], "query": [0, 0]})
    result = Counterfactuals(queries, cfs, np.array([0.7, 0.6]), np.array([True, True]),
                             pd.DataFrame({"l0": [1, 1]}), np.array([True, False]),
                             np.array([1, 1]))
    assert result.diff(0) == [["age: 37 -> 45"], ["job: a -> c"]]
    text = result.summary()
    assert "query 1: no counterfactual found" in text
    frame = result.to_frame()
    assert list(frame.columns) == ["age", "job", "query", "valid", "prediction", "l0"]


def test_object_columns_the_model_cannot_take():
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": ["x", "y", "x", "y"]})
    model = LogisticRegression().fit(np.array([[1.0, 0], [2, 1], [3, 0], [4, 1]]), [0, 1, 0, 1])
    with pytest.raises(TypeError, match="cannot evaluate rows of X"):
        ToyBaselineShapley(FrozenEstimator(model)).fit(df)


def test_hypothesis_bad_shapes_raise_clear_errors():
    from hypothesis import given
    from hypothesis import strategies as st

    X, y = make_classification(n_samples=40, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    exp = ToyBaselineShapley(LogisticRegression()).fit(X, y)

    @given(st.integers(0, 6), st.integers(0, 6), st.sampled_from([0.0, np.nan, np.inf, -np.inf]))
    def run(n_rows, n_cols, fill):
        bad = np.full((n_rows, n_cols), fill)
        if n_cols == 3 and n_rows > 0 and np.isfinite(fill):
            assert exp.explain(bad).values.shape == (n_rows, 3)
            return
        with pytest.raises(ValueError) as info:
            exp.explain(bad)
        assert any(word in str(info.value) for word in
                   ("sample", "feature", "NaN", "infinity", "2D", "dimension"))

    run()


def test_global_importance_object():
    from sklearn_xai import GlobalImportance

    res = GlobalImportance(np.array([0.1, 0.5, -0.02]), np.array([0.01, 0.02, 0.0]),
                           ["a", "b", "c"], n_permutations=4, converged=False, loss="mse",
                           imputation="knockoff")
    np.testing.assert_array_equal(res.values, res.importances)
    assert res["std"][1] == 0.02 and res["values"][0] == 0.1
    assert list(res.to_frame().index) == ["b", "a", "c"]
    assert res.plot_bar() is not None
    with pytest.raises(KeyError):
        res["nope"]


def test_object_rows_reach_a_frame_model_with_none_kept():
    # an encoder that learned None as a category must see None, not NaN (pandas would
    # infer a string dtype for the rebuilt frame)
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    X = pd.DataFrame({"c": pd.Series(["a", None, "b", "a", None, "b"] * 5, dtype=object),
                      "x": np.arange(30, dtype=float)})
    y = (X["x"] % 2).to_numpy()
    model = make_pipeline(make_column_transformer(
        (OneHotEncoder(handle_unknown="error"), ["c"]), remainder="passthrough"),
        LinearRegression()).fit(X, y)
    from sklearn_xai._model import make_model_function

    fn = make_model_function(model, "predict", None, X.to_numpy(dtype=object)[:2],
                             X.iloc[:0], None)
    np.testing.assert_allclose(fn(X.to_numpy(dtype=object))[:, 0], model.predict(X))


def test_nan_in_an_array_names_the_column_and_the_remedy():
    X, y = make_regression(40, 4, random_state=0)
    explainer = ToyBaselineShapley(LinearRegression()).fit(X, y)
    bad = X[:3].copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN in column 2.*impute"):
        explainer.explain(bad)
    with pytest.raises(ValueError, match=r"NaN in column 2.*impute"):
        ToyBaselineShapley(LinearRegression()).fit(np.vstack([X, bad]), np.r_[y, y[:3]])


@pytest.mark.parametrize("steps, allows", [
    (lambda: [SimpleImputer(), Ridge()], True),
    (lambda: [StandardScaler(), Ridge()], False),
    (lambda: [ColumnTransformer([("imp", SimpleImputer(), [0, 1]),
                                 ("oh", OneHotEncoder(handle_unknown="ignore"), [2])]),
              Ridge()], True),
    (lambda: [ColumnTransformer([("imp", SimpleImputer(), [0, 1])],
                                remainder="passthrough"), Ridge()], False),
])
def test_a_pipeline_that_imputes_its_input_takes_nan(steps, allows):
    # the Pipeline's own allow_nan tag is False even when its first step imputes
    from sklearn_xai.base import model_allows_nan

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    X[:, 2] = rng.integers(0, 3, 60)
    y = X[:, 0] + X[:, 1]
    Xn = X.copy()
    Xn[::7, 0] = np.nan
    model = make_pipeline(*steps())
    assert model_allows_nan(model) is allows
    explainer = ToyBaselineShapley(model)
    if allows:
        explainer.fit(Xn, y)
        values = explainer.explain(Xn[:3]).values
        assert np.isfinite(values).all()
    else:
        with pytest.raises(ValueError, match="NaN in column 0"):
            explainer.fit(Xn, y)


# -- one output selector, one squeeze, honest bases (issue #20 items 2-3) -------------------


def test_attribution_squeezes_a_single_output_itself():
    rng = np.random.default_rng(0)
    values, base, std = rng.normal(size=(4, 3, 1)), rng.normal(size=(4, 1)), np.ones((4, 3, 1))
    att = Attribution(values, base, np.zeros((4, 3)), ["a", "b", "c"], ["y"], std=std)
    assert att.values.shape == (4, 3) and att.base_values.shape == (4,)
    assert att.std.shape == (4, 3) and att.n_outputs == 1
    np.testing.assert_array_equal(att.values_by_output(), values)
    two = Attribution(rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 2)), np.zeros((4, 3)),
                      ["a", "b", "c"], ["y0", "y1"])
    assert two.values.shape == (4, 3, 2) and two.values_by_output() is two.values


def test_select_outputs_is_the_one_resolution_of_target():
    from sklearn_xai._model import select_outputs

    # a binary classifier's two columns: the positive class unless target names one
    sel = select_outputs("proba", None, labels=["no", "yes"], default=[1])
    assert sel.columns == [1] and sel.names == ["proba(yes)"]
    assert select_outputs("proba", "no", labels=["no", "yes"], default=[1]).columns == [0]
    # one margin column (classes[1]'s): the other class is its negation (1 - p: offset 1)
    neg = select_outputs("margin", "no", labels=["yes"], negative="no")
    assert (neg.columns, neg.sign, neg.offset, neg.names) == ([0], -1.0, 0.0, ["margin(no)"])
    np.testing.assert_array_equal(neg.apply(np.array([[2.0], [-1.0]])), [[-2.0], [1.0]])
    p = select_outputs("proba", "no", labels=["yes"], negative="no")
    np.testing.assert_allclose(p.apply(np.array([[0.25]])), [[0.75]])
    with pytest.raises(ValueError, match="cannot be explained"):
        select_outputs("margin", "no", labels=["yes"], negative="no", negate=False)
    with pytest.raises(ValueError, match="not one of the model's classes"):
        select_outputs("proba", "maybe", labels=["no", "yes"])
    # by name (TreeSHAP): a label, an alias or an output name; the error offers the names
    assert select_outputs("proba", "proba(yes)", labels=["no", "yes"], by_name=True
                          ).columns == [1]
    with pytest.raises(ValueError, match=r"takes one of \['predict\[0\]', 'predict\[1\]'\]"):
        select_outputs("predict", "z", width=2, aliases=["a", "b"], by_name=True)
    # unlabelled outputs: all of them (named once the width is known), or a column index
    assert select_outputs("predict", None).named(1).names == ["predict"]
    assert select_outputs("predict", 2).names == ["predict[2]"]


def test_no_explainer_removes_an_inherited_parameter():
    from sklearn_xai.base import OutputExplainer, SpaceExplainer
    from sklearn_xai.tree import TreeShapExplainer

    assert "response_method" not in SpaceExplainer._parameter_constraints
    assert "response_method" in OutputExplainer._parameter_constraints
    assert issubclass(TreeShapExplainer, SpaceExplainer)
    assert not issubclass(TreeShapExplainer, OutputExplainer)
    for cls in (TreeShapExplainer, OutputExplainer):
        for base in cls.__mro__[1:]:
            inherited = set(getattr(base, "_parameter_constraints", {}))
            assert inherited <= set(cls._parameter_constraints), (cls, base)
