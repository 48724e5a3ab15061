"""TreeShapExplainer on more models: subclasses of supported ensembles, multi-output
scikit-learn trees, IsolationForest and CatBoost.

Oracles: exact enumeration of the path-dependent game (cover-weighted recursion of the
parsed trees, after checking that the parsed trees reproduce the model's own prediction)
and of the interventional game through the model's own prediction; shap's TreeExplainer
(IsolationForest) and CatBoost's own ``ShapValues``.
"""

import numpy as np
import pytest
from sklearn.ensemble import (
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    IsolationForest,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.frozen import FrozenEstimator
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from sklearn_xai.tree import TreeShapExplainer, parse_model, predict_raw
from sklearn_xai.tree._ensemble import apply_link

from .test_tree_interventional import enumerate_game
from .test_tree_kernels import brute_force


def _data(seed=0, n=200, m=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).round(1)
    y = X[:, 0] * X[:, 1] + X[:, 2] ** 2 - X[:, 3]
    return X, y


def _values(att):
    return att.values if att.values.ndim == 3 else att.values[..., None]


def _check_path_dependent(exp, rows, f):
    """Parsed trees reproduce ``f``; values equal enumeration of the path-dependent game."""
    ens = exp.ensemble_
    np.testing.assert_allclose(predict_raw(ens, rows), f(rows), rtol=0, atol=1e-12)
    values = _values(exp.explain(rows))
    for i, x in enumerate(rows):
        for k in range(ens.n_outputs):
            ref, _, v0 = brute_force(ens, x, k)
            np.testing.assert_allclose(values[i, :, k], ref, rtol=0, atol=1e-12)
            assert abs(exp.expected_value_[k] - v0) < 1e-12


def _check_interventional(model, f, bg, rows):
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal")
    values = _values(exp.fit(bg).explain(rows))
    for i, x in enumerate(rows):
        ref, _ = enumerate_game(f, x, bg)
        np.testing.assert_allclose(values[i], ref, rtol=0, atol=1e-12)
    return exp


# ---------------------------------------------------------------------------
# 1. subclasses of supported scikit-learn ensembles
# ---------------------------------------------------------------------------


class MyForest(RandomForestClassifier):
    pass


class MyTree(DecisionTreeRegressor):
    pass


class MyBoosting(GradientBoostingClassifier):
    pass


@pytest.mark.parametrize("child, parent", [
    (MyForest(5, max_depth=4, random_state=0), RandomForestClassifier(5, max_depth=4,
                                                                      random_state=0)),
    (MyTree(max_depth=4, random_state=0), DecisionTreeRegressor(max_depth=4, random_state=0)),
    (MyBoosting(n_estimators=5, max_depth=3, random_state=0),
     GradientBoostingClassifier(n_estimators=5, max_depth=3, random_state=0)),
])
def test_subclass_is_explained_like_its_parent(child, parent):
    X, y = _data()
    yy = (y > 0.5).astype(int) if hasattr(parent, "predict_proba") else y
    child.fit(X, yy)
    parent.fit(X, yy)
    a = TreeShapExplainer(FrozenEstimator(child)).fit(X).explain(X[:10])
    b = TreeShapExplainer(FrozenEstimator(parent)).fit(X).explain(X[:10])
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.base_values, b.base_values)
    assert a.output_names == b.output_names
    # and through clone-and-fit
    c = TreeShapExplainer(child).fit(X, yy).explain(X[:10])
    np.testing.assert_array_equal(c.values, b.values)


def test_negative_class_is_named_after_itself():
    X, y = _data()
    model = GradientBoostingClassifier(n_estimators=3, random_state=0).fit(X, y > 0.5)
    pos = TreeShapExplainer(FrozenEstimator(model)).fit(X).explain(X[:5])
    neg = TreeShapExplainer(FrozenEstimator(model), target=False).fit(X).explain(X[:5])
    assert pos.output_names == ["margin(True)"] and neg.output_names == ["margin(False)"]
    np.testing.assert_array_equal(neg.values, -pos.values)


def test_unsupported_model_is_refused_by_type():
    from sklearn.linear_model import LinearRegression

    X, y = _data()
    with pytest.raises(TypeError, match="LinearRegression"):
        TreeShapExplainer(FrozenEstimator(LinearRegression().fit(X, y))).fit(X)


# ---------------------------------------------------------------------------
# 2. multi-output scikit-learn trees and forests
# ---------------------------------------------------------------------------


def _multi_targets(X, y):
    return np.c_[(y > 0.5).astype(int), np.digitize(X[:, 0], [-0.5, 0.5])]


def _proba(model):
    return lambda Z: np.hstack(model.predict_proba(Z))


@pytest.mark.parametrize("make", [
    lambda: DecisionTreeClassifier(max_depth=4, random_state=0),
    lambda: RandomForestClassifier(3, max_depth=3, random_state=0),
])
def test_multi_output_classifier_matches_enumeration(make):
    X, y = _data()
    Y = _multi_targets(X, y)
    model = make().fit(X, Y)
    exp = TreeShapExplainer(FrozenEstimator(model)).fit(X)
    assert exp.output_names_ == [
        "proba(target 0, class 0)", "proba(target 0, class 1)",
        "proba(target 1, class 0)", "proba(target 1, class 1)",
        "proba(target 1, class 2)"]
    rows = X[100:103]
    _check_path_dependent(exp, rows, _proba(model))
    att = exp.explain(rows)
    assert att.values.shape == (3, 4, 5)
    np.testing.assert_allclose(att.predicted(), _proba(model)(rows), rtol=0, atol=1e-12)
    _check_interventional(model, _proba(model), X[:15], rows)
    one = TreeShapExplainer(FrozenEstimator(model), target="target 1, class 2").fit(X)
    np.testing.assert_array_equal(one.explain(rows).values, att.values[:, :, 4])


@pytest.mark.parametrize("make", [
    lambda: DecisionTreeRegressor(max_depth=4, random_state=0),
    lambda: RandomForestRegressor(3, max_depth=4, random_state=0),
    lambda: ExtraTreesRegressor(3, max_depth=4, random_state=0),
])
def test_multi_output_regressor_matches_enumeration(make):
    X, y = _data()
    model = make().fit(X, np.c_[y, X[:, 1] - X[:, 2]])
    exp = TreeShapExplainer(FrozenEstimator(model)).fit(X)
    assert exp.output_names_ == ["predict[0]", "predict[1]"]
    rows = X[100:103]
    _check_path_dependent(exp, rows, model.predict)
    assert exp.explain(rows).values.shape == (3, 4, 2)
    _check_interventional(model, model.predict, X[:15], rows)


def test_multi_output_classifier_fit_through_the_explainer():
    X, y = _data()
    Y = _multi_targets(X, y)
    exp = TreeShapExplainer(DecisionTreeClassifier(max_depth=3, random_state=0)).fit(X, Y)
    att = exp.explain(X[:5])
    np.testing.assert_allclose(att.predicted(), _proba(exp.model_)(X[:5]), rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------
# 3. IsolationForest: the average path length
# ---------------------------------------------------------------------------


def _path_length(model):
    """Average path length E[h(x)] from the model's own ``score_samples``."""
    from sklearn.ensemble._iforest import _average_path_length

    c = _average_path_length([model._max_samples])[0]
    return lambda Z: (-np.log2(-model.score_samples(Z)) * c)[:, None]


@pytest.mark.parametrize("max_features", [1.0, 0.75])
def test_isolation_forest_matches_enumeration_and_score_samples(max_features):
    X, _ = _data(1, n=120)
    model = IsolationForest(n_estimators=4, max_samples=32, max_features=max_features,
                            random_state=0).fit(X)
    exp = TreeShapExplainer(FrozenEstimator(model)).fit(X)
    assert exp.output_names_ == ["path_length"]
    rows = X[:4]
    f = _path_length(model)
    np.testing.assert_allclose(predict_raw(exp.ensemble_, rows), f(rows), rtol=0, atol=1e-10)
    att = exp.explain(rows)
    # efficiency against the model's own score: score_samples = -2 ** (-E[h] / c(psi))
    from sklearn.ensemble._iforest import _average_path_length

    c = _average_path_length([model._max_samples])[0]
    total = att.values.sum(axis=1) + att.base_values
    np.testing.assert_allclose(-(2.0 ** (-total / c)), model.score_samples(rows), rtol=0,
                               atol=1e-10)
    ens = exp.ensemble_
    for i, x in enumerate(rows):
        ref, _, v0 = brute_force(ens, x, 0)
        np.testing.assert_allclose(att.values[i], ref, rtol=0, atol=1e-12)
    _check_interventional(model, lambda Z: predict_raw(ens, Z), X[:15], rows)
    # the ensemble is checked against score_samples above; enumeration through it too
    exp_i = TreeShapExplainer(FrozenEstimator(model), imputation="marginal")
    vals = exp_i.fit(X[:15]).explain(rows).values
    for i, x in enumerate(rows):
        ref, _ = enumerate_game(f, x, X[:15])
        np.testing.assert_allclose(vals[i], ref[:, 0], rtol=0, atol=1e-10)


def test_isolation_forest_against_shap():
    shap = pytest.importorskip("shap")
    X, _ = _data(2, n=300, m=5)
    model = IsolationForest(n_estimators=10, max_samples=64, max_features=0.8,
                            random_state=0).fit(X)
    ours = TreeShapExplainer(FrozenEstimator(model)).fit(X).explain(X[:20])
    ref = shap.TreeExplainer(model)
    theirs = ref.shap_values(X[:20], check_additivity=False)
    np.testing.assert_allclose(ours.values, theirs, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.base_values, np.ravel(ref.expected_value)[0], atol=1e-10)


def test_isolation_forest_refuses_probability():
    X, _ = _data(3, n=60)
    model = IsolationForest(n_estimators=2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="model_output='probability'"):
        TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                          model_output="probability").fit(X)
    ens, _ = parse_model(model)
    assert ens.model_name == "IsolationForest"


# ---------------------------------------------------------------------------
# 4. CatBoost: oblivious trees
# ---------------------------------------------------------------------------


def _catboost_data(seed=4, n=300):
    X, y = _data(seed, n=n)
    X[::7, 1] = np.nan
    X[::5, 3] = np.nan
    return X, np.nan_to_num(X[:, 0] * X[:, 1]) + X[:, 2]


def _catboost_models(cb):
    X, y = _catboost_data()
    kw = {"iterations": 6, "depth": 3, "verbose": 0, "random_seed": 0, "thread_count": 1,
          "allow_writing_files": False}
    return X, [
        cb.CatBoostRegressor(nan_mode="Min", **kw).fit(X, y),
        cb.CatBoostRegressor(nan_mode="Max", **kw).fit(X, y),
        cb.CatBoostClassifier(**kw).fit(X, (y > 0).astype(int)),
        cb.CatBoostClassifier(loss_function="MultiClass", **kw).fit(
            X, np.digitize(y, [-0.5, 0.5])),
    ]


def _catboost_raw(model):
    return lambda Z: np.asarray(model.predict(Z, prediction_type="RawFormulaVal")).reshape(
        len(Z), -1)


def test_catboost_routing_and_values_against_its_own_shap_values():
    cb = pytest.importorskip("catboost")
    X, models = _catboost_models(cb)
    rows = X[:40].copy()
    rows[::2, 0] = np.nan  # a column without NaN in training
    for model in models:
        exp = TreeShapExplainer(FrozenEstimator(model)).fit(X)
        np.testing.assert_allclose(predict_raw(exp.ensemble_, rows), _catboost_raw(model)(rows),
                                   rtol=0, atol=1e-12)
        att = exp.explain(rows)
        sv = model.get_feature_importance(cb.Pool(rows), type="ShapValues")
        if sv.ndim == 2:
            sv = sv[:, None, :]
        np.testing.assert_allclose(_values(att), sv[:, :, :4].transpose(0, 2, 1), rtol=0,
                                   atol=1e-10)
        base = att.base_values if att.base_values.ndim == 2 else att.base_values[:, None]
        np.testing.assert_allclose(base, sv[:, :, 4], rtol=0, atol=1e-10)
        np.testing.assert_allclose(_values(att).sum(axis=1) + base, _catboost_raw(model)(rows),
                                   rtol=0, atol=1e-12)
        if isinstance(model, cb.CatBoostClassifier):
            proba = apply_link(exp.ensemble_.link, predict_raw(exp.ensemble_, rows))
            ref = model.predict_proba(rows)
            np.testing.assert_allclose(proba, ref[:, 1:] if proba.shape[1] == 1 else ref,
                                       rtol=0, atol=1e-12)
            assert att.output_names == [f"margin({c})" for c in model.classes_[
                -exp.ensemble_.n_outputs:]]
        else:
            assert att.output_names == ["predict"]


def test_catboost_matches_enumeration():
    cb = pytest.importorskip("catboost")
    X, models = _catboost_models(cb)
    rows = X[[1, 7, 10]]
    for model in models:
        exp = TreeShapExplainer(FrozenEstimator(model)).fit(X)
        _check_path_dependent(exp, rows, _catboost_raw(model))
        _check_interventional(model, _catboost_raw(model), X[:15], rows)


def test_catboost_categorical_features_are_refused():
    cb = pytest.importorskip("catboost")
    import pandas as pd

    rng = np.random.default_rng(5)
    df = pd.DataFrame({"a": rng.normal(size=100), "c": rng.choice(list("xyz"), 100)})
    model = cb.CatBoostRegressor(iterations=2, depth=2, verbose=0, cat_features=["c"],
                                 allow_writing_files=False)
    model.fit(df, rng.normal(size=100))
    with pytest.raises(ValueError, match="categorical"):
        parse_model(model)


# ---------------------------------------------------------------------------
# 5. model_output="log_loss" (interventional)
# ---------------------------------------------------------------------------


def _loss_of(model, label):
    tiny = np.finfo(np.float64).tiny
    return lambda Z: -np.log(np.clip(model.predict_proba(Z)[:, [label]], tiny, None))


@pytest.mark.parametrize("make, n_classes", [
    (lambda: GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0), 2),
    (lambda: GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0), 3),
    (lambda: RandomForestClassifier(3, max_depth=3, min_samples_leaf=20, random_state=0), 3),
])
def test_log_loss_matches_enumeration(make, n_classes):
    X, y = _data(6, n=150)
    labels = np.digitize(y, [0.5] if n_classes == 2 else [-0.5, 0.8])
    model = make().fit(X, labels)
    bg, rows, yr = X[:12], X[100:104], labels[100:104]
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            model_output="log_loss").fit(bg)
    att = exp.explain(rows, yr)
    assert att.output_names == ["log_loss"] and att.values.shape == (4, 4)
    for i in range(len(rows)):
        ref, _ = enumerate_game(_loss_of(model, yr[i]), rows[i], bg)
        np.testing.assert_allclose(att.values[i], ref[:, 0], rtol=0, atol=1e-12)
        base = _loss_of(model, yr[i])(bg).mean()
        assert abs(att.base_values[i] - base) < 1e-12
    np.testing.assert_allclose(att.values.sum(axis=1) + att.base_values,
                               [_loss_of(model, c)(r[None])[0, 0] for r, c in zip(rows, yr)],
                               rtol=0, atol=1e-12)
    # labels by value, not position
    named = TreeShapExplainer(FrozenEstimator(model.__class__(**model.get_params()).fit(
        X, np.array(list("abc"))[labels])), imputation="marginal",
        model_output="log_loss").fit(bg)
    np.testing.assert_allclose(named.explain(rows, np.array(list("abc"))[yr]).values,
                               att.values, rtol=0, atol=1e-12)


def test_log_loss_errors():
    X, y = _data(7, n=80)
    clf = GradientBoostingClassifier(n_estimators=2, random_state=0).fit(X, y > 0)
    exp = TreeShapExplainer(FrozenEstimator(clf), imputation="marginal",
                            model_output="log_loss").fit(X[:10])
    with pytest.raises(ValueError, match="explain\\(X, y\\)"):
        exp.explain(X[:3])
    with pytest.raises(ValueError, match="not classes of the model"):
        exp.explain(X[:3], [True, False, 7])
    with pytest.raises(ValueError, match="3 rows"):
        exp.explain(X[:3], [True, False])
    with pytest.raises(ValueError, match="log_loss"):
        exp.explain_interactions(X[:3])
    with pytest.raises(ValueError, match="imputation=.marginal."):
        TreeShapExplainer(FrozenEstimator(clf), model_output="log_loss").fit(X)
    rng = np.random.default_rng(8)
    W = rng.normal(size=(200, 14))
    wide = RandomForestClassifier(20, max_depth=3, max_features=1, random_state=0)
    wide.fit(W, W.sum(axis=1) > 0)
    assert len({f for t in wide.estimators_ for f in t.tree_.feature if f >= 0}) > 12
    loss = TreeShapExplainer(FrozenEstimator(wide), imputation="marginal",
                             model_output="log_loss").fit(W[:2])
    with pytest.raises(ValueError, match="at most 12"):
        loss.explain(W[5:6], [True])
    reg = DecisionTreeRegressor(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="classifier"):
        TreeShapExplainer(FrozenEstimator(reg), imputation="marginal",
                          model_output="log_loss").fit(X)
