"""TreeShapExplainer on real models: routing vs each library's prediction, SHAP values vs
LightGBM ``pred_contrib`` and XGBoost ``pred_contribs``, API, errors, pickling."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from sklearn_xai.tree import TreeShapExplainer, parse_model, predict_raw
from sklearn_xai.tree._ensemble import apply, apply_link

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({
        "a": rng.normal(size=n),
        "c": pd.Categorical(rng.choice(list("uvwxyz"), n)),
        "b": rng.normal(size=n).round(1),  # many ties on thresholds
        "d": rng.choice([0.0, 1.0, 2.0], n),
    })
    df.loc[::7, "c"] = np.nan
    df.loc[::5, "a"] = np.nan
    df.loc[::3, "d"] = np.nan
    signal = df.a.fillna(0) + 1.5 * df.c.isin(["x", "z"]) + df.b + df.d.fillna(-1)
    return df, (signal > 0.5).astype(int).to_numpy(), np.digitize(signal, [0, 1.5]), signal


def _codes(df):
    out = df.copy()
    out["c"] = out.c.cat.codes.astype(float).replace(-1, np.nan)
    return out.to_numpy(float)


def _numeric(rng, n=400, m=5, nan=0.1):
    X = rng.normal(size=(n, m)).round(2)
    X[rng.random(X.shape) < nan] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 - np.nan_to_num(X[:, 2])
    return X, y


# ---------------------------------------------------------------------------
# routing reproduces each library's prediction
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: DecisionTreeRegressor(max_depth=8, random_state=0),
    lambda: DecisionTreeClassifier(random_state=0),
    lambda: RandomForestRegressor(8, random_state=0),
    lambda: RandomForestClassifier(8, random_state=0),
    lambda: ExtraTreesRegressor(8, random_state=0),
    lambda: HistGradientBoostingRegressor(max_iter=20),
    lambda: HistGradientBoostingClassifier(max_iter=10),
])
def test_sklearn_routing_with_nan(make):
    X, y = _numeric(np.random.default_rng(1))
    model = make()
    yy = np.digitize(y, [0, 1]) if hasattr(model, "predict_proba") else y
    model.fit(X, yy)
    ens, _ = parse_model(model)
    ours = predict_raw(ens, X)
    if hasattr(model, "_raw_predict"):
        ref = model._raw_predict(X)
    elif hasattr(model, "predict_proba"):
        ref = model.predict_proba(X)
    else:
        ref = model.predict(X)[:, None]
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    # same leaves as the library
    if hasattr(model, "apply") and not hasattr(model, "_raw_predict"):
        leaves = model.apply(X.astype(np.float32)).reshape(len(X), -1)
        np.testing.assert_array_equal(apply(ens, X) - ens.tree_offsets[:-1], leaves)


@pytest.mark.parametrize("make", [lambda: GradientBoostingRegressor(n_estimators=20),
                                  lambda: GradientBoostingClassifier(n_estimators=10)])
def test_gradient_boosting_routing(make):
    X, y = _numeric(np.random.default_rng(2), nan=0.0)
    model = make().fit(X, y if "Regressor" in type(make()).__name__ else np.digitize(y, [0, 1]))
    ens, _ = parse_model(model)
    ref = model._raw_predict(X.astype(np.float32))
    np.testing.assert_allclose(predict_raw(ens, X), ref, rtol=1e-12, atol=1e-12)


def test_hgb_native_categorical_and_unknown(frame):
    df, _, _, signal = frame
    model = HistGradientBoostingRegressor(max_iter=30, categorical_features="from_dtype")
    model.fit(df, signal)
    ens, transform = parse_model(model)
    test = df.copy()
    test["c"] = test["c"].cat.add_categories(["new"])
    test.loc[[1, 2], "c"] = "new"  # unknown categories are routed as missing
    np.testing.assert_allclose(predict_raw(ens, transform(test))[:, 0], model.predict(test),
                               rtol=1e-12, atol=1e-12)
    assert np.any(ens.mode == 3)


@pytest.mark.parametrize("params", [
    {"n_estimators": 20, "max_depth": 5, "max_cat_to_onehot": 1},
    {"n_estimators": 10, "max_depth": 4, "booster": "dart", "rate_drop": 0.3},
    {"n_estimators": 10, "missing": 0.0},
])
def test_xgboost_routing(frame, params):
    df, y, _, _ = frame
    model = xgb.XGBClassifier(enable_categorical=True, n_jobs=1, **params).fit(df, y)
    ens, _ = parse_model(model)
    dm = xgb.DMatrix(df, enable_categorical=True, missing=model.missing)
    leaves = model.get_booster().predict(dm, pred_leaf=True)
    np.testing.assert_array_equal(apply(ens, _codes(df)) - ens.tree_offsets[:-1], leaves)
    margin = model.get_booster().predict(dm, output_margin=True)
    # XGBoost sums leaves in float32; ours in float64
    np.testing.assert_allclose(predict_raw(ens, _codes(df))[:, 0], margin, rtol=0,
                               atol=1e-5 * np.abs(margin).max())


@pytest.mark.parametrize("params", [
    {"n_estimators": 20, "min_data_per_group": 5, "cat_smooth": 1},
    {"n_estimators": 10, "zero_as_missing": True},
    {"n_estimators": 10, "use_missing": False},
])
def test_lightgbm_routing(frame, params):
    df, y, _, _ = frame
    model = lgb.LGBMClassifier(verbose=-1, **params).fit(df, y)
    ens, _ = parse_model(model)
    ref = model.predict(df, raw_score=True)
    np.testing.assert_allclose(predict_raw(ens, _codes(df))[:, 0], ref, rtol=1e-12,
                               atol=1e-12 * np.abs(ref).max())
    assert np.any(ens.mode == 3)


def test_lightgbm_rf_is_averaged(frame):
    df, _, _, signal = frame
    model = lgb.LGBMRegressor(boosting_type="rf", n_estimators=10, bagging_freq=1,
                              bagging_fraction=0.5, verbose=-1).fit(df, signal)
    ens, _ = parse_model(model)
    np.testing.assert_allclose(predict_raw(ens, _codes(df))[:, 0], model.predict(df),
                               rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# SHAP values against the libraries
# ---------------------------------------------------------------------------


def test_lightgbm_pred_contrib_binary_and_multiclass(frame):
    df, y, y3, _ = frame
    for target in (y, y3):
        model = lgb.LGBMClassifier(n_estimators=25, num_leaves=15, verbose=-1,
                                   min_data_per_group=5).fit(df, target)
        exp = TreeShapExplainer(FrozenEstimator(model)).fit(df)
        att = exp.explain(df.iloc[:80])
        contrib = model.predict(df.iloc[:80], pred_contrib=True)
        K = len(model.classes_) if len(model.classes_) > 2 else 1
        contrib = contrib.reshape(80, K, 5)
        vals = att.values if att.values.ndim == 3 else att.values[:, :, None]
        base = att.base_values.reshape(80, -1)
        np.testing.assert_allclose(vals, np.transpose(contrib[:, :, :4], (0, 2, 1)),
                                   rtol=0, atol=1e-10)
        np.testing.assert_allclose(base, contrib[:, :, 4], rtol=0, atol=1e-10)
        raw = model.predict(df.iloc[:80], raw_score=True).reshape(80, -1)
        np.testing.assert_allclose(att.predicted().reshape(80, -1), raw, rtol=0, atol=1e-10)


def test_xgboost_pred_contribs_multiclass(frame):
    df, _, y3, _ = frame
    model = xgb.XGBClassifier(n_estimators=15, max_depth=5, enable_categorical=True, n_jobs=1)
    model.fit(df, y3)
    exp = TreeShapExplainer(FrozenEstimator(model)).fit(df)
    att = exp.explain(df.iloc[:60])
    contrib = model.get_booster().predict(xgb.DMatrix(df.iloc[:60], enable_categorical=True),
                                          pred_contribs=True)  # (n, K, M + 1)
    scale = np.abs(contrib).max()
    np.testing.assert_allclose(att.values, np.transpose(contrib[:, :, :4], (0, 2, 1)),
                               rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(att.base_values, contrib[:, :, 4], rtol=0, atol=1e-5 * scale)
    # additivity against our own float64 prediction
    ens = exp.ensemble_
    np.testing.assert_allclose(att.predicted(), predict_raw(ens, _codes(df.iloc[:60])),
                               rtol=0, atol=1e-10)


@pytest.mark.parametrize("make", [
    lambda: RandomForestClassifier(10, random_state=0),
    lambda: GradientBoostingRegressor(n_estimators=30, max_depth=4),
    lambda: HistGradientBoostingClassifier(max_iter=15),
])
def test_sklearn_additivity(make):
    X, y = _numeric(np.random.default_rng(3), nan=0.0)
    model = make()
    yy = (y > 0).astype(int) if hasattr(model, "predict_proba") else y
    exp = TreeShapExplainer(make()).fit(X, yy)
    att = exp.explain(X[:50])
    m = exp.model_
    if hasattr(m, "_raw_predict") and not isinstance(m, HistGradientBoostingClassifier):
        ref = m._raw_predict(X[:50].astype(np.float32))[:, 0]
    elif hasattr(m, "_raw_predict"):
        ref = m._raw_predict(X[:50])[:, 0]
    else:
        ref = m.predict_proba(X[:50])[:, 1]
    np.testing.assert_allclose(att.predicted(), ref, rtol=0, atol=1e-10)


def test_interventional_probability_additivity(frame):
    df, y, _, _ = frame
    model = lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(df, y)
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            model_output="probability").fit(df.iloc[:40])
    att = exp.explain(df.iloc[:20])
    assert att.output_names == ["proba(1)"]
    np.testing.assert_allclose(att.predicted(), model.predict_proba(df.iloc[:20])[:, 1],
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(att.base_values,
                               model.predict_proba(df.iloc[:40])[:, 1].mean(), atol=1e-12)


def test_interventional_raw_matches_brute_force_on_lightgbm(frame):
    import itertools
    import math

    df, y, _, _ = frame
    model = lgb.LGBMClassifier(n_estimators=5, num_leaves=8, verbose=-1).fit(df, y)
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            max_background=6, random_state=0)
    with pytest.warns(UserWarning, match="max_background=6 of 30"):
        exp.fit(df.iloc[:30])
    bg = exp.background_
    Z = _codes(df.iloc[40:42])
    att = exp.explain(df.iloc[40:42])
    ens = exp.ensemble_
    for i in range(2):
        ref = np.zeros(4)
        for S in itertools.product([0, 1], repeat=4):
            S = np.array(S, bool)
            for j in np.flatnonzero(~S):
                S2 = S.copy()
                S2[j] = True
                w = math.factorial(S.sum()) * math.factorial(3 - S.sum()) / 24
                ref[j] += w * (predict_raw(ens, np.where(S2, Z[i], bg)).mean()
                               - predict_raw(ens, np.where(S, Z[i], bg)).mean())
        np.testing.assert_allclose(att.values[i], ref, rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------
# API: outputs, pipelines, interactions, n_jobs, pickle, errors
# ---------------------------------------------------------------------------


def test_targets_and_negative_class(frame):
    df, y, y3, _ = frame
    model = lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(df, y)
    pos = TreeShapExplainer(FrozenEstimator(model)).fit(df).explain(df.iloc[:10])
    neg = TreeShapExplainer(FrozenEstimator(model), target=0).fit(df).explain(df.iloc[:10])
    np.testing.assert_allclose(neg.values, -pos.values)
    m3 = lgb.LGBMClassifier(n_estimators=10, verbose=-1).fit(df, y3)
    full = TreeShapExplainer(FrozenEstimator(m3)).fit(df).explain(df.iloc[:10])
    one = TreeShapExplainer(FrozenEstimator(m3), target=2).fit(df).explain(df.iloc[:10])
    assert one.values.shape == (10, 4) and one.output_names == ["margin(2)"]
    np.testing.assert_allclose(one.values, full.values[:, :, 2], atol=1e-12)
    with pytest.raises(ValueError, match="target=7"):
        TreeShapExplainer(FrozenEstimator(m3), target=7).fit(df)


def test_pipeline_is_explained_in_transformed_space():
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["p", "q", "r"])
    y = (X.p + X.q > 0).astype(int)
    pipe = make_pipeline(StandardScaler(), RandomForestClassifier(10, random_state=0))
    exp = TreeShapExplainer(pipe, feature_space="model").fit(X, y)
    att = exp.explain(X.iloc[:20])
    assert att.feature_names == ["p", "q", "r"]
    np.testing.assert_allclose(att.data, exp.model_[:-1].transform(X.iloc[:20]))
    # a column-wise scaler: the input columns are the same players, shown as given
    inputs = TreeShapExplainer(pipe).fit(X, y).explain(X.iloc[:20])
    np.testing.assert_allclose(inputs.values, att.values, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(inputs.data, X.iloc[:20].to_numpy())
    np.testing.assert_allclose(att.predicted(), exp.model_.predict_proba(X.iloc[:20])[:, 1],
                               atol=1e-10)
    assert list(exp.get_feature_names_out()) == ["phi__p", "phi__q", "phi__r"]


def test_interactions_rows_sum_to_values(frame):
    df, _, y3, _ = frame
    model = xgb.XGBClassifier(n_estimators=8, max_depth=4, enable_categorical=True, n_jobs=1)
    model.fit(df, y3)
    exp = TreeShapExplainer(FrozenEstimator(model)).fit(df)
    att = exp.explain_interactions(df.iloc[:10])
    inter = att.extras["interactions"]
    assert inter.shape == (10, 4, 4, 3)
    np.testing.assert_allclose(inter.sum(axis=2), att.values, atol=1e-12)
    np.testing.assert_allclose(inter, np.transpose(inter, (0, 2, 1, 3)), atol=1e-12)
    sub = exp.explain_interactions(df.iloc[:10], features=["b"]).extras["interactions"]
    np.testing.assert_allclose(sub[:, 0], inter[:, 2], atol=1e-12)
    with pytest.raises(ValueError, match="unknown feature"):
        exp.explain_interactions(df.iloc[:3], features=["nope"])
    # batches written into one output, serially or through joblib: the same arrays
    for kw in ({"batch_size": 3}, {"batch_size": 4, "n_jobs": 2}):
        other = TreeShapExplainer(FrozenEstimator(model), **kw).fit(df)
        att2 = other.explain_interactions(df.iloc[:10])
        np.testing.assert_array_equal(att2.extras["interactions"], inter)
        np.testing.assert_array_equal(att2.values, att.values)


def test_n_jobs_and_batch_size_invariance_and_pickle():
    X, y = _numeric(np.random.default_rng(5))
    model = RandomForestRegressor(10, random_state=0).fit(X, y)
    a = TreeShapExplainer(FrozenEstimator(model), n_jobs=1, batch_size=7).fit(X)
    b = TreeShapExplainer(FrozenEstimator(model), n_jobs=2, batch_size=1000).fit(X)
    c = TreeShapExplainer(FrozenEstimator(model), n_jobs=2, batch_size=9).fit(X)  # joblib
    va = a.transform(X[:60])
    np.testing.assert_array_equal(va, b.transform(X[:60]))
    np.testing.assert_array_equal(va, c.transform(X[:60]))
    again = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(again.transform(X[:60]), va)
    booster = xgb.train({"max_depth": 3}, xgb.DMatrix(X, y), 5)
    exp = TreeShapExplainer(booster).fit(X)
    assert exp.explain(X[:5]).values.shape == (5, 5)
    assert pickle.loads(pickle.dumps(exp)).explain(X[:5]).values.shape == (5, 5)


def test_errors(frame):
    X, y = _numeric(np.random.default_rng(6), nan=0.0)
    yc = (y > 0).astype(int)
    with pytest.raises(TypeError, match="cannot explain LogisticRegression"):
        TreeShapExplainer(LogisticRegression()).fit(X, yc)
    gb = GradientBoostingClassifier(n_estimators=3, init=LogisticRegression()).fit(X, yc)
    with pytest.raises(ValueError, match="non-constant init"):
        TreeShapExplainer(FrozenEstimator(gb)).fit(X)
    lin = lgb.LGBMRegressor(n_estimators=3, linear_tree=True, verbose=-1).fit(X, y)
    with pytest.raises(ValueError, match="linear_tree"):
        TreeShapExplainer(FrozenEstimator(lin)).fit(X)
    vec = xgb.XGBRegressor(n_estimators=3, tree_method="hist",
                           multi_strategy="multi_output_tree").fit(X, np.c_[y, -y])
    with pytest.raises(ValueError, match="vector-leaf"):
        TreeShapExplainer(FrozenEstimator(vec)).fit(X)
    model = lgb.LGBMClassifier(n_estimators=3, verbose=-1).fit(X, yc)
    with pytest.raises(ValueError, match="only available with"):
        TreeShapExplainer(FrozenEstimator(model), model_output="probability").fit(X)
    reg = lgb.LGBMRegressor(n_estimators=3, verbose=-1).fit(X, y)
    with pytest.raises(ValueError, match="needs a classifier"):
        TreeShapExplainer(FrozenEstimator(reg), model_output="probability",
                          imputation="marginal").fit(X)
    with pytest.raises(ValueError, match="imputation"):
        TreeShapExplainer(FrozenEstimator(reg), imputation="exact").fit(X)
    exp = TreeShapExplainer(FrozenEstimator(reg)).fit(X)
    with pytest.raises(ValueError, match="features"):
        exp.explain(X[:, :3])


def test_hgb_categorical_through_the_explainer(frame):
    df, _, y3, _ = frame
    model = HistGradientBoostingClassifier(max_iter=10, categorical_features="from_dtype")
    exp = TreeShapExplainer(model).fit(df, y3)
    att = exp.explain(df.iloc[:30])
    assert att.values.shape == (30, 4, 3)
    assert att.data[1, 1] == df.iloc[1, 1]  # categories shown as labels
    np.testing.assert_allclose(att.predicted(), exp.model_._raw_predict(df.iloc[:30]),
                               rtol=0, atol=1e-10)


def test_interventional_softmax_probability_additivity(frame):
    df, _, y3, _ = frame
    model = xgb.XGBClassifier(n_estimators=5, max_depth=3, enable_categorical=True, n_jobs=1)
    model.fit(df, y3)
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            model_output="probability").fit(df.iloc[:25])
    att = exp.explain(df.iloc[:10])
    assert att.output_names == ["proba(0)", "proba(1)", "proba(2)"]
    proba = apply_link("softmax", predict_raw(exp.ensemble_, _codes(df.iloc[:10])))
    np.testing.assert_allclose(att.predicted(), proba, rtol=0, atol=1e-12)
    np.testing.assert_allclose(proba, model.predict_proba(df.iloc[:10]), atol=1e-6)


def test_path_dependent_against_shap_for_sklearn_forest():
    shap = pytest.importorskip("shap")  # test-only comparison (double precision C++)
    X, y = _numeric(np.random.default_rng(7), n=300, nan=0.0)
    model = RandomForestRegressor(5, max_depth=12, random_state=0).fit(X, y)
    ours = TreeShapExplainer(FrozenEstimator(model)).fit(X[:50]).explain(X[100:130])
    ref = shap.TreeExplainer(model)
    theirs = ref.shap_values(X[100:130], check_additivity=False)
    np.testing.assert_allclose(ours.values, theirs, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.base_values, np.ravel(ref.expected_value)[0], atol=1e-10)


def test_interventional_sklearn_forest_against_brute_force_on_predict():
    import itertools
    import math

    X, y = _numeric(np.random.default_rng(7), n=300, nan=0.0)
    model = RandomForestRegressor(5, max_depth=12, random_state=0).fit(X, y)
    bg = X[:50]
    att = TreeShapExplainer(FrozenEstimator(model), imputation="marginal")
    vals = att.fit(bg).explain(X[100:102]).values
    for i, x in enumerate(X[100:102]):
        ref = np.zeros(5)
        for S in itertools.product([0, 1], repeat=5):
            S = np.array(S, bool)
            for j in np.flatnonzero(~S):
                S2 = S.copy()
                S2[j] = True
                w = math.factorial(S.sum()) * math.factorial(4 - S.sum()) / 120
                ref[j] += w * (model.predict(np.where(S2, x, bg)).mean()
                               - model.predict(np.where(S, x, bg)).mean())
        np.testing.assert_allclose(vals[i], ref, rtol=0, atol=1e-10)


def test_ranker_and_regressor_output_names():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(200, 4))
    ranker = lgb.LGBMRanker(n_estimators=5, verbose=-1, min_child_samples=5)
    ranker.fit(X, rng.integers(0, 3, 200), group=[20] * 10)
    att = TreeShapExplainer(FrozenEstimator(ranker)).fit(X).explain(X[:5])
    assert att.output_names == ["predict"]
    contrib = ranker.predict(X[:5], pred_contrib=True)
    np.testing.assert_allclose(att.values, contrib[:, :4], rtol=0, atol=1e-10)
    reg = RandomForestRegressor(3, random_state=0).fit(X, np.c_[X[:, 0], X[:, 1]])
    att = TreeShapExplainer(FrozenEstimator(reg)).fit(X).explain(X[:5])
    assert att.output_names == ["predict[0]", "predict[1]"] and att.values.shape == (5, 4, 2)
    np.testing.assert_allclose(att.predicted(), reg.predict(X[:5]), rtol=0, atol=1e-10)
