"""One constraint vocabulary for MaceRecourse and P2CERecourse, checked against enumeration.

Oracle: every row of the explainer's own candidate grid (``P2CERecourse.grid_.grids``,
``MaceRecourse.grid_``) that the constraints allow, written here from their definitions
(a feature outside ``features_to_vary`` or immutable keeps the query's value, a changed
value lies in its ``feature_ranges`` entry, a ``monotone`` feature moves only in its
direction), predicted by the model itself. P2CE's front must equal the Pareto front of the
valid inlier rows; MACE must answer every query for which a valid row exists, and no
counterfactual of either may break a constraint.
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from sklearn_xai.base import BaseExplainer
from sklearn_xai.recourse import MaceRecourse, P2CERecourse, RecourseExplainer
from sklearn_xai.recourse._encoding import TabularEncoder

OBJECTIVES = ("max_distance", "n_changes", "mean_distance")
DIRECTION = {"increase": 1, "decrease": -1, 1: 1, -1: -1}


# ----------------------------------------------------------------------------- data
@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=300, n_features=4, n_informative=3, n_redundant=0,
                               random_state=1)
    X[:, 3] = np.round(X[:, 3] * 2)  # an integer column
    return X, y


@pytest.fixture(scope="module")
def gbm(data):
    X, y = data
    return GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def string_labels(data):
    X, y = data
    labels = np.where(y == 1, "yes", "no")
    model = GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0)
    return X, labels, model.fit(X, labels)


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                       "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n))})
    y = ((df["a"] + df["b"] + (df["colour"] == "red")) > 0.5).astype(int).to_numpy()
    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["colour"]),
                                                  remainder="passthrough"),
                          LogisticRegression()).fit(df, y)
    return df, y, model


def _p2ce(model, **kw):
    params = {"grid_step": 0.25, "max_changes": 2, "contamination": 0.1, "n_estimators": 20,
              "shap_samples": 15, "random_state": 0}
    return P2CERecourse(FrozenEstimator(model), **{**params, **kw})


def _mace(model, **kw):
    params = {"n_counterfactuals": 2, "max_changes": 2, "neighbors": "exact",
              "random_state": 0}
    return MaceRecourse(FrozenEstimator(model), **{**params, **kw})


# ----------------------------------------------------------------------------- oracle
def _allowed(values, x, j, constraints):
    """The values feature ``j`` may take for query ``x`` (its own value first)."""
    vary = constraints.get("features_to_vary", "all")
    if j in constraints.get("immutable_features", ()) or (vary != "all" and j not in vary):
        return [x[j]]
    lo, hi = constraints.get("feature_ranges", {}).get(j, (-np.inf, np.inf))
    sign = DIRECTION.get(constraints.get("monotone", {}).get(j), 0)
    out = [v for v in values if v != x[j] and lo <= v <= hi and sign * (v - x[j]) >= 0]
    return [x[j]] + out


def _check_constraints(P, Xq, constraints):
    """No row of ``P`` (one per row of ``Xq``) breaks a constraint."""
    changed = P != Xq
    vary = constraints.get("features_to_vary", "all")
    for j in range(P.shape[1]):
        if j in constraints.get("immutable_features", ()) or (vary != "all" and j not in vary):
            assert not changed[:, j].any(), j
    for j, (lo, hi) in constraints.get("feature_ranges", {}).items():
        v = P[changed[:, j], j]
        assert np.all((v >= lo) & (v <= hi)), j
    for j, how in constraints.get("monotone", {}).items():
        assert np.all(DIRECTION[how] * (P[:, j] - Xq[:, j]) >= 0), j


def _costs(Xtrain, x, P):
    """The default objectives from their definitions (std-scaled changes)."""
    sigma = Xtrain.std(axis=0)
    sigma[sigma == 0] = 1.0
    delta = np.abs(P - x) / sigma
    return np.column_stack([delta.max(axis=1), (P != x).sum(axis=1).astype(float),
                            delta.mean(axis=1)])


def _pareto(C):
    keep = [i for i, c in enumerate(C)
            if not np.any(np.all(C <= c, axis=1) & np.any(C < c, axis=1))]
    return {tuple(np.round(c, 9)) for c in C[keep]}


def _grid_rows(expl, x, constraints):
    lists = [_allowed(expl.grid_.grids[j], x, j, constraints) for j in range(len(x))]
    P = np.array(list(itertools.product(*lists)), dtype=float)
    return P[(P != x).sum(axis=1) <= expl.max_changes]


def _front(expl, Xtrain, x, valid, constraints):
    """Pareto cost vectors of the allowed grid rows that are valid inliers."""
    P = _grid_rows(expl, x, constraints)
    ok = valid(P) & (expl.isolation_forest_.predict(P) == 1)
    return _pareto(_costs(Xtrain, x, P[ok])) if ok.any() else set()


def _returned(res, i):
    q = np.asarray(res.counterfactuals["query"])
    return {tuple(np.round(c, 9)) for c in res.costs.loc[q == i, list(OBJECTIVES)].to_numpy()}


# ----------------------------------------------------------------------------- the base
def test_both_explainers_share_the_recourse_base():
    shared = ["desired_class", "desired_range", "categorical_features", "immutable_features",
              "features_to_vary", "feature_ranges", "monotone"]
    for cls in (MaceRecourse, P2CERecourse):
        assert issubclass(cls, RecourseExplainer) and issubclass(cls, BaseExplainer)
        assert "fit" not in vars(cls)  # the base's fit template
        params = cls(None).get_params()
        assert {k: params[k] for k in shared} == {
            "desired_class": "opposite", "desired_range": None, "categorical_features": "auto",
            "immutable_features": None, "features_to_vary": "all", "feature_ranges": None,
            "monotone": None}
        assert not {"response_method", "target"} & set(params)


def test_p2ce_encodes_with_the_shared_encoder(frame):
    df, _, model = frame
    expl = _p2ce(model).fit(df)
    assert isinstance(expl.encoder_, TabularEncoder)
    assert expl.encoder_.categorical_.tolist() == [False, False, True]


# ------------------------------------------------------------ constraints vs enumeration
CONSTRAINTS = [
    {"features_to_vary": [0, 1, 3], "monotone": {0: "increase"}},
    {"immutable_features": [1], "feature_ranges": {0: (-1.0, 1.0), 2: (-0.5, 2.0)},
     "monotone": {3: "decrease"}},
    {"features_to_vary": [0, 2, 3], "feature_ranges": {2: (-np.inf, 0.5), 3: (-1.0, 3.0)},
     "monotone": {0: -1, 2: 1}},
]


@pytest.mark.parametrize("constraints", CONSTRAINTS)
def test_p2ce_front_equals_the_enumerated_constrained_grid(data, gbm, constraints):
    X, _ = data
    expl = _p2ce(gbm, **constraints).fit(X)
    queries = X[:8]  # both predicted classes: "opposite" flips either way
    pred = gbm.predict(queries)
    res = expl.explain(queries)
    P = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    q = np.asarray(res.counterfactuals["query"])
    _check_constraints(P, queries[q], constraints)
    np.testing.assert_array_equal(gbm.predict(P), 1 - pred[q])
    n_found = 0
    for i, x in enumerate(queries):
        want = _front(expl, X, x, lambda R, i=i: gbm.predict_proba(R)[:, 1 - pred[i]] >= 0.5,
                      constraints)
        assert _returned(res, i) == want, i
        n_found += bool(want)
    assert n_found >= 3


@pytest.mark.parametrize("constraints", CONSTRAINTS)
def test_mace_answers_what_the_constrained_grid_answers(data, gbm, constraints):
    X, _ = data
    mace = _mace(gbm, **constraints).fit(X)
    queries = X[:8]
    pred = gbm.predict(queries)
    res = mace.explain(queries)
    P = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    q = np.asarray(res.counterfactuals["query"])
    _check_constraints(P, queries[q], constraints)
    np.testing.assert_array_equal(gbm.predict(P), 1 - pred[q])
    n_answerable = 0
    for i, x in enumerate(queries):
        lists = [_allowed(mace.grid_[j], x, j, constraints) for j in range(len(x))]
        R = np.array(list(itertools.product(*lists)), dtype=float)
        R = R[(R != x).sum(axis=1) <= mace.max_changes]
        if (gbm.predict(R) != pred[i]).any():  # answerable on the grid: MACE answers it
            assert res.found[i], i
            n_answerable += 1
    assert n_answerable >= 3


@pytest.mark.parametrize("make", [_p2ce, _mace])
def test_monotone_spellings_give_identical_results(data, gbm, make):
    X, _ = data
    words = make(gbm, monotone={0: "increase", 3: "decrease"}).fit(X).explain(X[:5])
    signs = make(gbm, monotone={0: 1, 3: -1}).fit(X).explain(X[:5])
    assert len(words.counterfactuals) > 0
    pd.testing.assert_frame_equal(words.counterfactuals, signs.counterfactuals)
    pd.testing.assert_frame_equal(words.costs, signs.costs)


@pytest.mark.parametrize("make", [_p2ce, _mace])
def test_categorical_ranges_and_features_to_vary_by_name(frame, make):
    df, _, model = frame
    kw = {"features_to_vary": ["a", "colour"], "feature_ranges": {"colour": ["red"]}}
    expl = make(model, **kw).fit(df)
    queries = df[model.predict(df) == 0].iloc[:6]
    res = expl.explain(queries)
    assert res.found.sum() >= 3
    cf = res.counterfactuals
    q = queries.reset_index(drop=True).iloc[cf["query"]].reset_index(drop=True)
    np.testing.assert_array_equal(cf["b"].to_numpy(), q["b"].to_numpy())
    moved = cf["colour"].astype(str).to_numpy() != q["colour"].astype(str).to_numpy()
    assert set(cf["colour"].astype(str)[moved]) <= {"red"}
    assert np.all(model.predict(cf.drop(columns="query")) == 1)


@pytest.mark.parametrize("make", [_p2ce, _mace])
def test_monotone_on_booleans_and_ordered_categories(make):
    """Booleans (False < True) and ordered pandas categoricals take a direction."""
    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame({
        "a": rng.normal(size=n), "flag": rng.random(n) < 0.5,
        "level": pd.Categorical(rng.choice(["low", "mid", "high"], n),
                                categories=["low", "mid", "high"], ordered=True)})
    score = df["a"] - 1.5 * df["flag"] + 0.8 * df["level"].cat.codes
    y = (score > 0.3).astype(int).to_numpy()
    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["level"]),
                                                  remainder="passthrough"),
                          GradientBoostingClassifier(n_estimators=15, random_state=0))
    model.fit(df, y)
    expl = make(model, monotone={"flag": "decrease", "level": "increase"}).fit(df)
    queries = df[model.predict(df) == 0].iloc[:8]
    res = expl.explain(queries)
    assert res.found.sum() >= 4
    cf = res.counterfactuals
    q = queries.reset_index(drop=True).iloc[cf["query"]].reset_index(drop=True)
    assert np.all(cf["flag"].to_numpy() <= q["flag"].to_numpy())
    assert np.all(cf["level"].cat.codes.to_numpy() >= q["level"].cat.codes.to_numpy())
    assert np.all(model.predict(cf.drop(columns="query")) == 1)


# ----------------------------------------------------------------- desired outcomes
def test_p2ce_opposite_with_string_labels(string_labels):
    X, labels, model = string_labels
    expl = _p2ce(model).fit(X)
    queries = X[:6]
    pred = model.predict(queries)
    other = np.where(pred == "yes", "no", "yes")
    res = expl.explain(queries)
    assert list(res.desired) == list(other)
    q = np.asarray(res.counterfactuals["query"])
    P = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    np.testing.assert_array_equal(model.predict(P), other[q])
    cols = [list(model.classes_).index(o) for o in other]
    np.testing.assert_allclose(res.predictions,
                               model.predict_proba(P)[np.arange(len(P)), np.asarray(cols)[q]])
    for i, x in enumerate(queries):
        want = _front(expl, X, x, lambda R, i=i: model.predict_proba(R)[:, cols[i]] >= 0.5, {})
        assert _returned(res, i) == want, i
    assert res.found.sum() >= 3


def test_mace_opposite_with_string_labels(string_labels):
    X, labels, model = string_labels
    res = _mace(model).fit(X).explain(X[:6])
    pred = model.predict(X[:6])
    other = np.where(pred == "yes", "no", "yes")
    assert list(res.desired) == list(other)
    q = np.asarray(res.counterfactuals["query"])
    P = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    np.testing.assert_array_equal(model.predict(P), other[q])
    np.testing.assert_array_equal(res.costs["desired_class"], other[q])


def test_p2ce_multiclass_opposite_is_any_other_class():
    X, y = make_classification(n_samples=300, n_features=3, n_informative=3, n_redundant=0,
                               n_classes=3, n_clusters_per_class=1, random_state=2)
    model = GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(X, y)
    expl = _p2ce(model).fit(X)
    queries = X[:5]
    pred = model.predict(queries)
    res = expl.explain(queries)
    for i, x in enumerate(queries):
        others = [c for c in range(3) if c != pred[i]]
        assert res.desired[i] == tuple(others)
        want = _front(expl, X, x,
                      lambda R, o=others: model.predict_proba(R)[:, o].max(axis=1) >= 0.5, {})
        assert _returned(res, i) == want, i
    P = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    q = np.asarray(res.counterfactuals["query"])
    np.testing.assert_allclose(
        res.predictions,
        [np.delete(p, pred[k]).max() for p, k in zip(model.predict_proba(P), q)])


@pytest.mark.parametrize("bound", ["auto", "none"])
def test_p2ce_desired_range_front_equals_enumeration(bound):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(250, 3))
    y = X[:, 0] + 2 * X[:, 1] - X[:, 2] + rng.normal(0, 0.1, 250)
    model = GradientBoostingRegressor(n_estimators=12, max_depth=2, random_state=0).fit(X, y)
    pred = model.predict(X)
    lo, hi = np.quantile(pred, [0.7, 0.85])
    expl = _p2ce(model, desired_range=(lo, hi), bound=bound,
                 monotone={2: "decrease"}).fit(X)
    assert expl.bound_ == ("tree" if bound == "auto" else "none")
    queries = X[pred < lo][:6]
    res = expl.explain(queries)
    P = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    values = model.predict(P)
    assert np.all((values >= lo) & (values <= hi))
    np.testing.assert_allclose(res.predictions, values)
    assert res.valid.all() and list(res.desired) == [(lo, hi)] * len(queries)
    _check_constraints(P, queries[np.asarray(res.counterfactuals["query"])],
                       {"monotone": {2: "decrease"}})
    n_found = 0
    for i, x in enumerate(queries):
        want = _front(expl, X, x, lambda R: (model.predict(R) >= lo) & (model.predict(R) <= hi),
                      {"monotone": {2: "decrease"}})
        assert _returned(res, i) == want, i
        n_found += bool(want)
    assert n_found >= 3
    if bound == "auto":
        assert sum(c["pruned_bound"] for c in res.extras["counters"]) > 0


def test_p2ce_desired_range_without_a_tree_model():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    model = LinearRegression().fit(X, X @ [1.0, -1.0, 0.5])
    pred = model.predict(X)
    lo = np.quantile(pred, 0.8)
    expl = _p2ce(model, desired_range=(lo, np.inf)).fit(X)
    assert expl.bound_ == "none"
    queries = X[pred < lo][:4]
    res = expl.explain(queries)
    for i, x in enumerate(queries):
        assert _returned(res, i) == _front(expl, X, x, lambda R: model.predict(R) >= lo, {})
    assert res.found.sum() >= 2


# ----------------------------------------------------------------------------- errors
BAD = [
    ({"immutable_features": ["b"], "features_to_vary": ["a", "b"]}, r"'b'.*immutable"),
    ({"features_to_vary": ["a", "nope"]}, r"features_to_vary.*'nope'"),
    ({"monotone": {"colour": "increase"}}, r"monotone.*'colour'.*categorical"),
    ({"monotone": {"a": "up"}}, r"monotone\['a'\]"),
    ({"monotone": {"a": 2}}, r"monotone\['a'\]"),
    ({"monotone": {"a": True}}, r"monotone\['a'\]"),
    ({"feature_ranges": {"a": (2.0, 1.0)}}, r"feature_ranges\['a'\]"),
    ({"feature_ranges": {"a": [0, 1, 2]}}, r"feature_ranges\['a'\]"),
    ({"feature_ranges": {"colour": ["purple"]}}, r"feature_ranges\['colour'\].*'purple'"),
    ({"feature_ranges": {"colour": (0, 1)}}, r"feature_ranges\['colour'\]"),
    ({"immutable_features": ["nope"]}, r"immutable_features.*'nope'"),
    ({"desired_class": "maybe"}, r"desired_class='maybe'"),
    ({"desired_range": (0.0, 1.0)}, r"desired_range.*regressor"),
]


@pytest.mark.parametrize("make", [_p2ce, _mace])
@pytest.mark.parametrize("params, match", BAD)
def test_bad_constraint_values_name_the_feature(frame, make, params, match):
    df, _, model = frame
    with pytest.raises(ValueError, match=match):
        make(model, **params).fit(df)


@pytest.mark.parametrize("make", [_p2ce, _mace])
def test_regressor_needs_desired_range(make):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    model = LinearRegression().fit(X, X[:, 0])
    with pytest.raises(TypeError, match="desired_range"):
        make(model).fit(X)
    with pytest.raises(ValueError, match="low <= high"):
        make(model, desired_range=(1.0, 0.0)).fit(X)
    with pytest.raises(ValueError, match="desired_class"):
        make(model, desired_range=(0.0, 1.0), desired_class=1).fit(X)


@pytest.mark.parametrize("kw", [{"features_to_vary": []},
                                {"immutable_features": ["a", "b", "c"]}])
def test_no_feature_free_to_change_is_refused_at_fit(kw):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    model = FrozenEstimator(LogisticRegression().fit(X, X["a"] > 0))
    for cls in (MaceRecourse, P2CERecourse):
        with pytest.raises(ValueError, match="No feature may change"):
            cls(model, random_state=0, **kw).fit(X)


@pytest.mark.parametrize("what, value", [("feature_ranges", (-1.0, 1.0)),
                                         ("monotone", "increase")])
def test_a_feature_named_twice_in_a_constraint_is_refused(what, value):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    model = FrozenEstimator(LogisticRegression().fit(X, X["a"] > 0))
    for cls in (MaceRecourse, P2CERecourse):
        with pytest.raises(ValueError, match="names feature 'b' twice"):
            cls(model, random_state=0, **{what: {"b": value, 1: value}}).fit(X)


# ------------------------------------------------------- how features are named (issue #24)
_BY_NAME = [
    ({"features_to_vary": ["x0", "x1", "x3"], "monotone": {"x0": "increase"}}, 0),
    ({"immutable_features": ["x1"], "feature_ranges": {"x0": (-1.0, 1.0), "x2": (-0.5, 2.0)},
      "monotone": {"x3": "decrease"}}, 1),
]


@pytest.mark.parametrize("make", [_p2ce, _mace])
@pytest.mark.parametrize("by_name, k", _BY_NAME)
def test_array_fitted_explainers_take_the_names_they_report(data, gbm, make, by_name, k):
    """Fitted on an array, ``x0``, ``x1``, ... (the names ``get_feature_names_out``
    reports) name the features like their positions do."""
    X, _ = data
    positional = CONSTRAINTS[k]
    named = make(gbm, **by_name).fit(X)
    assert named.get_feature_names_out().tolist() == ["x0", "x1", "x2", "x3"]
    queries = X[:8]
    res = named.explain(queries)
    same = make(gbm, **positional).fit(X).explain(queries)
    pd.testing.assert_frame_equal(res.counterfactuals, same.counterfactuals)
    pd.testing.assert_frame_equal(res.costs, same.costs)
    P = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    q = np.asarray(res.counterfactuals["query"])
    assert res.found.sum() >= 3
    _check_constraints(P, queries[q], positional)
    np.testing.assert_array_equal(gbm.predict(P), 1 - gbm.predict(queries)[q])


@pytest.mark.parametrize("make", [_p2ce, _mace])
@pytest.mark.parametrize("params", [
    {"immutable_features": {"a": True, "b": False}},
    {"immutable_features": {0: True, 1: False}},
    {"features_to_vary": {"a": True, "colour": True}},
    {"feature_ranges": {"colour": {"red": True, "blue": False}}},
])
def test_a_mapping_is_not_a_list_of_features(frame, make, params):
    """``{feature: bool}`` is refused instead of being read as its keys (which froze, or
    allowed, the features mapped to False too)."""
    df, _, model = frame
    with pytest.raises(TypeError, match="list"):
        make(model, **params).fit(df)


@pytest.mark.parametrize("make", [_p2ce, _mace])
def test_a_set_of_features_is_a_list_of_features(frame, make):
    df, _, model = frame
    queries = df[model.predict(df) == 0].iloc[:4]
    as_set = make(model, immutable_features={"b", "colour"}).fit(df).explain(queries)
    as_list = make(model, immutable_features=["b", "colour"]).fit(df).explain(queries)
    pd.testing.assert_frame_equal(as_set.counterfactuals, as_list.counterfactuals)
    q = queries.reset_index(drop=True).iloc[as_set.counterfactuals["query"]]
    np.testing.assert_array_equal(as_set.counterfactuals["b"].to_numpy(), q["b"].to_numpy())
    assert as_set.found.any()


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_to_user_one_dtype_frame_equals_its_columns_one_by_one(dtype):
    # a frame whose columns share one numpy dtype comes back as one block; it must equal
    # the column-by-column frame in values, dtypes and columns (integers rounded)
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.integers(0, 50, size=(40, 4)), columns=["a", "b", 3, "d"]).astype(dtype)
    enc = TabularEncoder().fit(X)
    assert not enc.categorical_.any()
    Z = enc.to_internal(X) + rng.normal(0, 0.3, size=X.shape)
    out = enc.to_user(Z)
    ref = pd.DataFrame({c: (np.round(Z[:, j]) if enc.integer_[j] else Z[:, j]).astype(t)
                        for j, (c, t) in enumerate(X.dtypes.items())}, columns=X.columns)
    assert list(out.columns) == list(X.columns)
    assert list(out.dtypes) == list(X.dtypes)
    pd.testing.assert_frame_equal(out, ref)
