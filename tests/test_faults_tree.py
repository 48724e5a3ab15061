"""Faults found by the reliability audit in TreeShapExplainer and the tree parsers.

The oracle is always the library's own prediction (``output_margin`` / ``raw_score``) or
its own SHAP values. The XGBoost tests and the LightGBM numeric-code test failed before
the fix; the LightGBM pandas, HistGradientBoosting and ``pred_contribs`` checks already
passed and pin the behaviour.

Categorical routing, as each library does it (measured with xgboost 3.2, lightgbm 4.7):

* XGBoost casts the input to float32; a code ``c`` goes to the split's listed side iff
  ``0 <= c < 2**24`` and ``int(c)`` is listed; every other present value (unlisted,
  never seen in training, beyond the largest seen, negative, ``inf``) goes to the other
  side; NaN follows the default direction. Pandas categories are re-coded by name with
  the categories stored in the model; a category the model does not know is refused.
* LightGBM truncates toward zero: ``-0.5`` is category 0, ``<= -1`` and NaN go right.
* HistGradientBoosting maps unknown categories to missing.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.tree import DecisionTreeRegressor

from sklearn_xai import TreeShapExplainer
from sklearn_xai.tree import parse_model, predict_raw

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

pytestmark = pytest.mark.timeout(120)

MODES = ["tree_path_dependent", "marginal"]
CATS = ["u", "v", "w", "x", "y", "z", "never"]  # "never" is in the dtype, not in the rows


def _frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.choice(CATS[:6], n)
    df = pd.DataFrame({"a": rng.normal(size=n),
                       "c": pd.Categorical(c, categories=CATS),
                       "b": rng.normal(size=n).round(1)})
    df.loc[::9, "c"] = np.nan
    effect = pd.Series(c).map({"u": 0.0, "v": 3.0, "w": -2.0, "x": 1.0, "y": 5.0, "z": -1.0})
    y = df.a + np.where(df.c.isna(), 2.5, effect) + 0.5 * df.b
    return df, y.to_numpy()


def _rows():
    """Seen categories, the never-seen one and NaN, as the model's own dtype."""
    return pd.DataFrame({"a": [0.1, -0.3, 0.5, 1.0, 0.0, -1.2, 0.7],
                         "c": pd.Categorical(["u", "never", None, "y", "never", "w", None],
                                             categories=CATS),
                         "b": [0.0, 0.5, -0.5, 1.0, 0.2, 0.0, 0.3]})


def _xgb_model(df, y, **kw):
    params = {"n_estimators": 15, "max_depth": 4, "enable_categorical": True, "n_jobs": 1,
              "max_cat_to_onehot": 1}
    return xgb.XGBRegressor(**{**params, **kw}).fit(df, y)


def _check_sum(att, margin):
    total = att.values.sum(axis=1) + att.base_values
    np.testing.assert_allclose(total, margin, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("background", ["unused_removed", "reordered"])
def test_xgboost_category_codes_come_from_the_model(mode, background):
    # The explainer coded pandas categories with the dtype of the frame given to fit: a
    # category the model knows but the background's dtype lacks became NaN (routed as
    # missing), and a reordered dtype gave other codes. XGBoost re-codes by name with the
    # categories stored in the model.
    df, y = _frame()
    model = _xgb_model(df, y)
    bg = df.iloc[:80].copy()
    if background == "unused_removed":
        bg["c"] = bg["c"].cat.remove_unused_categories()
    else:
        bg["c"] = bg["c"].cat.reorder_categories(CATS[::-1])
    exp = TreeShapExplainer(FrozenEstimator(model), imputation=mode).fit(bg)
    rows = _rows()
    _check_sum(exp.explain(rows), model.predict(rows, output_margin=True))
    # rows whose dtype has other categories are re-coded by name too
    other = rows.copy()
    other["c"] = other["c"].astype(str).replace("nan", np.nan).astype("category")
    _check_sum(exp.explain(other), model.predict(rows, output_margin=True))


def test_xgboost_pred_contribs_with_unseen_category_and_nan():
    df, y = _frame(seed=1)
    model = _xgb_model(df, y, max_cat_to_onehot=4)
    exp = TreeShapExplainer(FrozenEstimator(model)).fit(df)
    rows = _rows()
    att = exp.explain(rows)
    contrib = model.get_booster().predict(xgb.DMatrix(rows, enable_categorical=True),
                                          pred_contribs=True)
    scale = max(1.0, np.abs(contrib).max())
    np.testing.assert_allclose(att.values, contrib[:, :3], rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(att.base_values, contrib[:, 3], rtol=0, atol=1e-5 * scale)
    _check_sum(att, model.predict(rows, output_margin=True))
    inter = exp.explain_interactions(rows)
    np.testing.assert_allclose(inter.extras["interactions"].sum(axis=(1, 2)) + inter.base_values,
                               model.predict(rows, output_margin=True), rtol=0,
                               atol=1e-5 * scale)


def test_xgboost_unknown_category_name_is_refused_like_xgboost():
    df, y = _frame()
    model = _xgb_model(df, y, n_estimators=3)
    exp = TreeShapExplainer(FrozenEstimator(model)).fit(df)
    rows = _rows()
    rows["c"] = rows["c"].cat.add_categories(["zz_new", "brand_new"])
    rows.loc[2, "c"] = "zz_new"
    with pytest.raises(Exception, match="not in the training set"):
        model.predict(rows)
    with pytest.raises(ValueError, match=r"'c'.*zz_new"):
        exp.explain(rows)
    # XGBoost 3.2 maps this one to a neighbouring category (dmlc/xgboost#12189)
    rows.loc[2, "c"] = "brand_new"
    with pytest.raises(ValueError, match=r"'c'.*brand_new"):
        exp.explain(rows)
    # an unused extra category in the dtype is harmless
    rows.loc[2, "c"] = "u"
    _check_sum(exp.explain(rows), model.predict(rows.astype({"c": df.c.dtype}),
                                                output_margin=True))


def test_xgboost_model_without_stored_categories_takes_the_frames_codes():
    # trained on codes, the model stores no categories: XGBoost codes a DataFrame by its
    # own dtype, not by the dtype of the frame the explainer was fitted on
    booster, X = _code_booster(seed=1)
    booster.feature_names = ["c", "x"]
    names = np.array(list("pqrstuvw"))
    bg = pd.DataFrame({"c": pd.Categorical(names[np.nan_to_num(X[:60, 0], nan=0).astype(int)],
                                           categories=names), "x": X[:60, 1]})
    exp = TreeShapExplainer(booster).fit(bg)
    rows = pd.DataFrame({"c": pd.Categorical(["p", "q", "s", None, "w", "t"],
                                             categories=names[::-1]),
                         "x": np.linspace(-1, 1, 6)})
    _check_sum(exp.explain(rows), booster.inplace_predict(rows, predict_type="margin"))


# codes XGBoost routes: listed or not, never seen (3), beyond the largest (6, 40, 2**24),
# negative, fractional (truncated after the float32 cast: 1.99999999999 is 2), -0.0, NaN
CODES = np.array([0, 1, 2, 3, 4, 5, 6, 40, 2.0**24, 1e10, -1, -0.5, -1e-9, -0.0, 0.5, 1.5,
                  2.7, 1.99999999999, 4.9999999999, np.nan])


def _code_booster(seed=0):
    rng = np.random.default_rng(seed)
    n = 400
    c = rng.choice([0, 1, 2, 4, 5], n).astype(float)  # code 3 never seen
    c[::11] = np.nan
    x = rng.normal(size=n)
    y = np.where(np.isnan(c), 1.5, np.array([0, 3, -2, 0, 5, -1.0])[np.nan_to_num(c).astype(int)])
    X = np.c_[c, x]
    dm = xgb.DMatrix(X, y + x, feature_types=["c", "q"], enable_categorical=True)
    booster = xgb.train({"max_depth": 3, "max_cat_to_onehot": 1, "nthread": 1}, dm, 12)
    return booster, X


def test_xgboost_routing_of_crafted_codes():
    booster, _ = _code_booster()
    T = np.c_[np.r_[CODES, np.inf, -np.inf], np.zeros(len(CODES) + 2)]
    ens, _ = parse_model(booster)
    margin = booster.inplace_predict(T, predict_type="margin")
    np.testing.assert_allclose(predict_raw(ens, T)[:, 0], margin, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_xgboost_crafted_codes_values_add_up(mode):
    booster, X = _code_booster(seed=2)
    T = np.c_[CODES, np.linspace(-1, 1, len(CODES))]
    exp = TreeShapExplainer(booster, imputation=mode).fit(
        np.r_[X[:40], T[::3]])  # the background has the crafted codes too
    margin = booster.inplace_predict(T, predict_type="margin")
    _check_sum(exp.explain(T), margin)
    if mode == "tree_path_dependent":
        contrib = booster.predict(xgb.DMatrix(T, feature_types=["c", "q"],
                                              enable_categorical=True), pred_contribs=True)
        att = exp.explain(T)
        np.testing.assert_allclose(att.values, contrib[:, :2], rtol=0, atol=1e-5)
        inter = exp.explain_interactions(T).extras["interactions"]
        np.testing.assert_allclose(inter.sum(axis=(1, 2)) + att.base_values, margin,
                                   rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_lightgbm_unseen_category_and_negative_fraction(mode):
    # pandas: a category not in training is NaN for LightGBM (already right). Numeric
    # codes: LightGBM truncates toward zero, so -0.5 is category 0 (we sent it right).
    df, y = _frame(seed=3)
    model = lgb.LGBMRegressor(n_estimators=15, num_leaves=8, min_data_per_group=5,
                              cat_smooth=1, verbose=-1).fit(df, y)
    exp = TreeShapExplainer(FrozenEstimator(model), imputation=mode).fit(df.iloc[:80])
    rows = _rows()
    rows["c"] = rows["c"].cat.add_categories(["brand_new"])
    rows.loc[3, "c"] = "brand_new"
    _check_sum(exp.explain(rows), model.predict(rows, raw_score=True))

    codes = df.c.cat.codes.to_numpy().astype(float)
    X = np.c_[df.a, np.where(codes < 0, np.nan, codes), df.b]
    num = lgb.LGBMRegressor(n_estimators=15, num_leaves=8, min_data_per_group=5,
                            cat_smooth=1, verbose=-1).fit(X, y, categorical_feature=[1])
    T = np.c_[np.zeros(len(CODES)), CODES, np.linspace(-1, 1, len(CODES))]
    exp = TreeShapExplainer(FrozenEstimator(num), imputation=mode).fit(X[:60])
    att = exp.explain(T)
    _check_sum(att, num.predict(T, raw_score=True))
    if mode == "tree_path_dependent":
        contrib = num.predict(T, pred_contrib=True)
        np.testing.assert_allclose(att.values, contrib[:, :3], rtol=0, atol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_hgb_unseen_category(mode):
    # already right: HistGradientBoosting routes unknown categories as missing, and so do we
    df, y = _frame(seed=4)
    model = HistGradientBoostingRegressor(max_iter=15, categorical_features="from_dtype")
    model.fit(df, y)
    exp = TreeShapExplainer(FrozenEstimator(model), imputation=mode).fit(df.iloc[:80])
    rows = _rows()
    rows["c"] = rows["c"].cat.add_categories(["brand_new"])
    rows.loc[[0, 3], "c"] = "brand_new"
    att = exp.explain(rows)
    np.testing.assert_allclose(att.values.sum(axis=1) + att.base_values, model.predict(rows),
                               rtol=0, atol=1e-10)


# ------------------------------------------------- issue #24: pipelines and messages
class _MixingScaler(StandardScaler):
    """A StandardScaler subclass whose transform mixes two columns."""

    def transform(self, X, copy=None):
        Z = np.asarray(super().transform(X, copy=copy), dtype=np.float64).copy()
        Z[:, 0] = Z[:, 0] + Z[:, 1]
        return Z


class _NonImputer(SimpleImputer):
    """A SimpleImputer subclass that does not impute (NaN goes through)."""

    def transform(self, X):
        return np.asarray(X, dtype=np.float64)


def _two_column_data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.where(X[:, 0] > 0.3, 2.0, -1.0) + np.where(X[:, 1] > -0.2, 1.0, 0.0)


def test_a_subclass_of_a_column_wise_transformer_is_not_trusted():
    # a subclass of a whitelisted transformer was taken as column-wise (isinstance): its
    # mixed column was labelled as input column 0, so the values were not the Shapley
    # values of the input-column game, without a warning; the groups, the NaN rule and
    # P2CE's input owners trusted it the same way
    from sklearn_xai.base import groups_from_transformer, model_allows_nan
    from sklearn_xai.recourse._p2ce_models import input_owner

    X, y = _two_column_data()
    pipe = make_pipeline(_MixingScaler(), DecisionTreeRegressor(max_depth=3, random_state=0))
    pipe.fit(X, y)
    with pytest.warns(UserWarning, match=r"_MixingScaler.*not known to be column-wise"):
        exp = TreeShapExplainer(FrozenEstimator(pipe)).fit(X)
    assert exp.feature_space_ == "model"
    att = exp.explain(X[:5])
    np.testing.assert_allclose(att.values.sum(axis=1) + att.base_values,
                               pipe.predict(X[:5]), rtol=0, atol=1e-10)
    # the exact class is still trusted
    plain = make_pipeline(StandardScaler(), DecisionTreeRegressor(max_depth=3)).fit(X, y)
    assert TreeShapExplainer(FrozenEstimator(plain)).fit(X).feature_space_ == "input"
    # every consumer applies the same rule
    ct = ColumnTransformer([("mix", _MixingScaler(), [0, 1])]).fit(X)
    assert groups_from_transformer(ct) == {"mix": [0, 1]}
    assert groups_from_transformer(
        ColumnTransformer([("s", StandardScaler(), [0, 1])]).fit(X)) == {"x0": [0], "x1": [1]}
    assert input_owner(pipe[:-1], 2) is None
    assert input_owner(plain[:-1], 2).tolist() == [0, 1]
    not_imputing = make_pipeline(_NonImputer(), LinearRegression())
    assert not model_allows_nan(not_imputing)
    assert model_allows_nan(make_pipeline(SimpleImputer(), LinearRegression()))


def test_a_pipeline_ending_in_a_pipeline_is_explained_as_the_flat_pipeline():
    # Pipeline(..., Pipeline(..., tree)) was refused: "'Pipeline' is not a supported tree
    # model"; the same steps written flat were explained
    import itertools

    from sklearn.pipeline import Pipeline

    from ._oracles import values_from_game

    X, y = _two_column_data(n=150)
    X = np.c_[X, np.random.default_rng(1).normal(size=len(X))]
    y = y + np.where(X[:, 2] > 0.1, 0.5, 0.0)
    nested = Pipeline([("ct", ColumnTransformer([("s", StandardScaler(), [0, 1])],
                                                remainder="passthrough")),
                       ("model", Pipeline([("scale", MinMaxScaler()),
                                           ("tree", DecisionTreeRegressor(max_depth=4,
                                                                          random_state=0))]))])
    nested.fit(X, y)
    flat = Pipeline([("ct", nested[0]), ("scale", nested[1][0]), ("tree", nested[1][1])])
    bg, rows = X[:12], X[100:104]
    for mode in MODES:
        got = TreeShapExplainer(FrozenEstimator(nested), imputation=mode).fit(bg)
        ref = TreeShapExplainer(FrozenEstimator(flat), imputation=mode).fit(bg)
        assert got.feature_space_ == "input" == ref.feature_space_
        a, b = got.explain(rows), ref.explain(rows)
        np.testing.assert_allclose(a.values, b.values, rtol=0, atol=1e-10)
        np.testing.assert_allclose(a.base_values, b.base_values, rtol=0, atol=1e-10)
        np.testing.assert_allclose(a.values.sum(axis=1) + a.base_values,
                                   nested.predict(rows), rtol=0, atol=1e-10)
    # interventional: the game over the input columns, enumerated through nested.predict
    att = TreeShapExplainer(FrozenEstimator(nested),
                            imputation="marginal").fit(bg).explain(rows)
    for i, x in enumerate(rows):
        v = {}
        for S in itertools.product([0, 1], repeat=3):
            h = bg.copy()
            h[:, np.flatnonzero(S)] = x[np.flatnonzero(S)]
            v[S] = nested.predict(h).mean()
        phi, _ = values_from_game(v, 3)
        np.testing.assert_allclose(att.values[i], phi[:, 0], rtol=0, atol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_target_selects_an_output_of_a_multi_output_classifier(mode):
    # target="proba(target k, class c)" (the documented name) and the names the error
    # offered were refused; every name the error offers must select its output
    import ast

    from sklearn.ensemble import RandomForestClassifier

    X, _ = _two_column_data(n=160, seed=3)
    X = np.c_[X, np.random.default_rng(4).normal(size=len(X))]
    Y = np.c_[(X[:, 0] > 0).astype(int), np.digitize(X[:, 1] + 0.5 * X[:, 2], [-0.5, 0.5])]
    model = RandomForestClassifier(5, max_depth=4, random_state=0).fit(X, Y)
    bg, rows = X[:40], X[100:106]
    every = TreeShapExplainer(FrozenEstimator(model), imputation=mode).fit(bg)
    all_values = every.explain(rows).values  # (rows, players, outputs)
    with pytest.raises(ValueError, match="target takes one of") as info:
        TreeShapExplainer(FrozenEstimator(model), target="no such output").fit(bg)
    offered = ast.literal_eval(str(info.value).split("target takes one of ")[1].rstrip("."))
    assert offered == every.output_names_
    proba = model.predict_proba(rows)
    k = 0
    for t, classes in enumerate(model.classes_):
        for c in range(len(classes)):
            name = f"proba(target {t}, class {classes[c]})"
            assert offered[k] == name
            for target in (name, f"target {t}, class {classes[c]}"):
                exp = TreeShapExplainer(FrozenEstimator(model), imputation=mode,
                                        target=target).fit(bg)
                assert exp.output_names_ == [name]
                att = exp.explain(rows)
                assert att.values.shape == (len(rows), 3)
                np.testing.assert_allclose(att.values.sum(axis=1) + att.base_values,
                                           proba[t][:, c], rtol=0, atol=1e-10)
                np.testing.assert_allclose(att.values, all_values[:, :, k], rtol=0,
                                           atol=1e-12)
            k += 1


# -------------------------------------------------------- links the parsers did not read
def _three(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])


@pytest.mark.parametrize("objective", ["binary", "multiclassova"])
def test_lightgbm_sigmoid_is_the_slope_of_its_probability(objective):
    # LightGBM's sigmoid=2 gives p = 1 / (1 + exp(-2 m)): the parser dropped it (binary:
    # the margin explained as the probability; one-vs-all: the slope 1 used).
    X, y3 = _three()
    y = (y3 > 0).astype(int) if objective == "binary" else y3
    model = lgb.LGBMClassifier(n_estimators=10, objective=objective, sigmoid=2.0,
                               verbose=-1).fit(X, y)
    proba = model.predict_proba(X[:20])
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            model_output="probability").fit(X[:40])
    att = exp.explain(X[:20])
    total = att.values.sum(axis=1) + exp.expected_value_
    want = proba[:, 1:] if objective == "binary" else proba
    np.testing.assert_allclose(total.reshape(want.shape), want, atol=1e-10)
    # the margin stays LightGBM's raw score
    np.testing.assert_allclose(predict_raw(exp.ensemble_, X[:20]).ravel(),
                               model.predict(X[:20], raw_score=True).ravel(), atol=1e-10)
    if objective == "binary":
        loss = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                                 model_output="log_loss").fit(X[:10])
        a = loss.explain(X[:20], y[:20])
        np.testing.assert_allclose(a.values.sum(axis=1).ravel() + np.ravel(a.base_values),
                                   -np.log(proba[np.arange(20), y[:20]]), atol=1e-10)


def test_catboost_one_vs_all_is_one_sigmoid_per_class():
    cb = pytest.importorskip("catboost")
    X, y = _three()
    model = cb.CatBoostClassifier(iterations=10, depth=3, loss_function="MultiClassOneVsAll",
                                  verbose=0, thread_count=1).fit(X, y)
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            model_output="probability").fit(X[:30])
    att = exp.explain(X[:10])
    assert exp.output_names_ == ["proba(0)", "proba(1)", "proba(2)"]
    np.testing.assert_allclose(att.values.sum(axis=1) + exp.expected_value_,
                               model.predict_proba(X[:10]), atol=1e-10)


@pytest.mark.parametrize("params", [{"reg_sqrt": True},
                                    {"objective": "cross_entropy_lambda"}])
def test_lightgbm_regressors_whose_prediction_is_not_the_raw_score(params):
    # reg_sqrt squares the raw score, cross_entropy_lambda takes its softplus: the raw
    # score is explained (its name says margin, not predict) and the link maps it to the
    # model's prediction.
    from sklearn_xai.tree._ensemble import apply_link

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 3) ** 2 if "reg_sqrt" in params else 1 / (1 + np.exp(-X[:, 0]))
    model = lgb.LGBMRegressor(n_estimators=10, verbose=-1, **params).fit(X, y)
    exp = TreeShapExplainer(FrozenEstimator(model)).fit(X)
    att = exp.explain(X[:10])
    assert exp.output_names_ == ["margin"]
    raw = model.predict(X[:10], raw_score=True)
    np.testing.assert_allclose(att.values.sum(axis=1).ravel() + exp.expected_value_, raw,
                               atol=1e-10)
    ens = exp.ensemble_
    np.testing.assert_allclose(apply_link(ens.link, raw[:, None], ens.link_scale).ravel(),
                               model.predict(X[:10]), rtol=1e-12)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_a_raw_booster_refuses_a_frame_in_another_order(library):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    y = frame["a"] + frame["b"] ** 2
    booster = (xgb.train({}, xgb.DMatrix(frame, y), 5) if library == "xgboost" else
               lgb.train({"verbose": -1}, lgb.Dataset(frame, y), 5))
    with pytest.raises(ValueError, match="another order"):
        TreeShapExplainer(booster).fit(frame[["c", "b", "a"]])
    att = TreeShapExplainer(booster).fit(frame).explain(frame.iloc[:5])
    raw = (booster.predict(xgb.DMatrix(frame.iloc[:5]), output_margin=True)
           if library == "xgboost" else booster.predict(frame.iloc[:5], raw_score=True))
    np.testing.assert_allclose(att.values.sum(axis=1).ravel() + np.ravel(att.base_values),
                               raw, atol=1e-5)


def test_log_loss_matches_labels_to_classes_by_value():
    # labels were matched by their text: int labels of a model fitted on float ones were
    # "not classes of the model [0.0, 1.0]"
    from sklearn.ensemble import GradientBoostingClassifier

    rng = np.random.default_rng(11)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    model = GradientBoostingClassifier(n_estimators=3, max_depth=2,
                                       random_state=0).fit(X, y.astype(float))
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            model_output="log_loss").fit(X[:5])
    as_int, as_float = exp.explain(X[:6], y[:6]), exp.explain(X[:6], y[:6].astype(float))
    np.testing.assert_array_equal(as_int.values, as_float.values)
    want = -np.log(model.predict_proba(X[:6])[np.arange(6), y[:6]])
    np.testing.assert_allclose(as_int.values.sum(axis=1).ravel()
                               + np.ravel(as_int.base_values), want, atol=1e-10)


@pytest.mark.parametrize("model_output", ["probability", "log_loss"])
def test_a_raw_objective_has_no_probability_to_explain(model_output):
    # binary:logitraw's margin was explained as a probability (negative "probabilities",
    # a log loss near 708 through the clip)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    model = xgb.XGBClassifier(n_estimators=5, objective="binary:logitraw").fit(X, y)
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            model_output=model_output)
    with pytest.raises(ValueError, match="no link to probabilities.*model_output='raw'"):
        exp.fit(X[:20])
