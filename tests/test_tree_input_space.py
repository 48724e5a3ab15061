"""TreeShapExplainer on Pipelines, explained in their INPUT columns (feature_space="input").

Oracles: brute-force enumeration over the input columns of

* the interventional game ``v(S) = mean over background rows b of f(pipe(x_S, b_not S))``,
  with ``f`` the pipeline's own ``predict_proba`` / ``decision_function`` / ``predict``;
* the path-dependent game over input columns: the recursive conditional expectation with
  cover weights, where a split's column is "known" iff the input column it is computed
  from is in ``S`` (the column -> input map is built here from the encoder's categories,
  not by the code under test);

for Shapley values, Banzhaf values and the Shapley interaction index; and, for
``input_column_map``, a dependency oracle: an output column comes from input column ``j``
iff changing column ``j`` (and only it) changes it.
"""

import itertools
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.ensemble import (
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    KBinsDiscretizer,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    StandardScaler,
    TargetEncoder,
)
from sklearn.tree import DecisionTreeRegressor

from sklearn_xai._pipeline import input_column_map
from sklearn_xai.metrics import faithfulness_correlation
from sklearn_xai.tree import TreeShapExplainer
from sklearn_xai.tree._ensemble import goes_left, predict_raw, zero_fractions

from ._oracles import values_from_game

INPUTS = ["c1", "c2", "n1", "n2"]


# ---------------------------------------------------------------------------
# data, pipelines and oracles
# ---------------------------------------------------------------------------


def _frame(n=160, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"c1": rng.choice(["a", "b", "c"], n),
                      "c2": rng.choice(["p", "q", "r", "s"], n),
                      "n1": rng.normal(size=n), "n2": rng.normal(size=n)})
    # interactions between the categories and the numbers, and inside c2's categories
    y = (2.0 * (X.c1 == "a") * X.n1 + 1.5 * X.c2.isin(["p", "q"]) * (X.n2 > 0)
         - (X.c2 == "r") * (X.c1 == "b") + X.c2.map({"p": 0.0, "q": 1.5, "r": -1.0, "s": 0.7})
         + 0.5 * X.n1)
    return X, y.to_numpy()


def _ct():
    return ColumnTransformer([("oh", OneHotEncoder(sparse_output=False), ["c1", "c2"]),
                              ("sc", StandardScaler(), ["n1"]),
                              ("keep", "passthrough", ["n2"])])


def _column_owner(pipe):
    """Input column of every column the model receives, from the encoder's categories."""
    cats = pipe[0].named_transformers_["oh"].categories_
    return np.asarray([0] * len(cats[0]) + [1] * len(cats[1]) + [2, 3])


def _models():
    import lightgbm as lgb
    import xgboost as xgb

    return {
        "rf": (RandomForestClassifier(4, max_depth=5, random_state=0), "proba", 1e-10),
        "gb": (GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0),
               "decision", 1e-10),
        "hgb": (HistGradientBoostingClassifier(max_iter=6, max_depth=4, random_state=0),
                "decision", 1e-10),
        # XGBoost predicts in float32: its own predictions agree to float32 round-off only
        "xgb": (xgb.XGBRegressor(n_estimators=6, max_depth=4, n_jobs=1), "predict", 2e-5),
        "lgbm": (lgb.LGBMRegressor(n_estimators=6, num_leaves=8, min_child_samples=5,
                                   verbose=-1, n_jobs=1), "predict", 1e-10),
    }


def _fitted(name):
    X, y = _frame()
    model, kind, tol = _models()[name]
    target = y if kind == "predict" else (y > np.median(y)).astype(int)
    pipe = make_pipeline(_ct(), model).fit(X, target)
    return pipe, X, target, kind, tol


def _response(pipe, kind):
    def f(rows):
        if kind == "proba":
            return pipe.predict_proba(rows)[:, 1:]
        if kind == "decision":
            out = pipe.decision_function(rows)
            return out[:, None] if out.ndim == 1 else out
        return np.asarray(pipe.predict(rows), dtype=np.float64)[:, None]
    return f


def interventional_oracle(f, x, background, index="shapley"):
    """Enumerate ``v(S) = mean_b f(x_S, b_not S)`` over the INPUT columns of a frame."""
    M, m = background.shape[1], background.shape[0]
    subsets = list(itertools.product([0, 1], repeat=M))
    parts = []
    for S in subsets:
        h = background.copy()
        for j in np.flatnonzero(S):
            c = h.columns[j]
            h[c] = pd.Series([x[c].iloc[0]] * m, index=h.index, dtype=background[c].dtype)
        parts.append(h)
    out = np.asarray(f(pd.concat(parts, ignore_index=True)), dtype=np.float64)
    out = out.reshape(len(subsets), m, -1).mean(axis=1)
    return values_from_game(dict(zip(subsets, out, strict=True)), M, index)


def path_dependent_oracle(ens, z, owner, M, index="shapley"):
    """Enumerate the path-dependent game over input columns.

    ``v(S)``: each tree's expectation where a split on column ``c`` follows ``z`` iff
    ``owner[c]`` is in ``S``, else both children weighted by their covers. A binary
    forest classifier's outputs are both probabilities: the positive class is kept (what
    the explainer explains by default).
    """
    zf = zero_fractions(ens)
    keep = [1] if ens.raw_space == "probability" and ens.n_outputs == 2 else \
        list(range(ens.n_outputs))

    def value(S):
        known = np.asarray(S, bool)[owner]
        total = ens.base_score.astype(np.float64).copy()
        for t in range(ens.n_trees):
            def rec(n):
                if ens.children_left[n] < 0:
                    return ens.value[n]
                c = ens.feature[n]
                left, right = ens.children_left[n], ens.children_right[n]
                if known[c]:
                    return rec(left) if goes_left(ens, [n], [z[c]])[0] else rec(right)
                return zf[left] * rec(left) + zf[right] * rec(right)

            leaf = rec(ens.tree_offsets[t])
            k = ens.tree_output[t]
            if k < 0:
                total += leaf
            else:
                total[k] += leaf[0]
        return total[keep]

    v = {S: value(S) for S in itertools.product([0, 1], repeat=M)}
    return values_from_game(v, M, index) + (v[(0,) * M],)


def _as3(values):
    return values if values.ndim == 3 else values[..., None]


# ---------------------------------------------------------------------------
# interventional values over input columns
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["rf", "gb", "hgb", "xgb", "lgbm"])
def test_interventional_values_are_the_input_column_game(name):
    pipe, X, _, kind, tol = _fitted(name)
    f = _response(pipe, kind)
    bg, rows = X.iloc[:10], X.iloc[40:44]
    exp = TreeShapExplainer(FrozenEstimator(pipe), imputation="marginal")
    att = exp.fit(bg).explain(rows)
    assert exp.feature_space_ == "input"
    assert exp.player_names_ == INPUTS and att.feature_names == INPUTS
    values = _as3(att.values)
    assert values.shape == (4, 4, 1)
    for i in range(len(rows)):
        phi, _ = interventional_oracle(f, rows.iloc[[i]], bg)
        np.testing.assert_allclose(values[i], phi, rtol=0, atol=tol)
    # efficiency: the values add up to f(x) - mean over the background of f
    np.testing.assert_allclose(values.sum(axis=1) + f(bg).mean(axis=0), f(rows),
                               rtol=0, atol=tol)


@pytest.mark.parametrize("name", ["rf", "gb", "hgb", "xgb", "lgbm"])
def test_path_dependent_values_are_the_input_column_game(name):
    pipe, X, _, kind, tol = _fitted(name)
    f = _response(pipe, kind)
    rows = X.iloc[40:44]
    exp = TreeShapExplainer(FrozenEstimator(pipe)).fit(X.iloc[:10])
    att = exp.explain(rows)
    ens, owner = exp.ensemble_, _column_owner(pipe)
    Z = np.asarray(pipe[0].transform(rows), dtype=np.float64)
    # the parsed trees are the pipeline's model
    np.testing.assert_allclose(predict_raw(ens, Z)[:, -1:], f(rows), rtol=0, atol=tol)
    values = _as3(att.values)
    for i in range(len(rows)):
        phi, _, base = path_dependent_oracle(ens, Z[i], owner, 4)
        np.testing.assert_allclose(values[i], phi, rtol=0, atol=1e-10)
        np.testing.assert_allclose(att.base_values[i], base[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(values.sum(axis=1)[:, 0] + att.base_values, f(rows)[:, 0],
                               rtol=0, atol=tol)


@pytest.mark.parametrize("perturbation", ["marginal", "tree_path_dependent"])
@pytest.mark.parametrize("name", ["gb", "lgbm"])
def test_interactions_are_the_input_column_game(name, perturbation):
    pipe, X, _, kind, tol = _fitted(name)
    f = _response(pipe, kind)
    bg, rows = X.iloc[:10], X.iloc[40:43]
    exp = TreeShapExplainer(FrozenEstimator(pipe), imputation=perturbation)
    att = exp.fit(bg).explain_interactions(rows)
    inter = att.extras["interactions"]
    assert inter.shape == (3, 4, 4)
    Z = np.asarray(pipe[0].transform(rows), dtype=np.float64)
    for i in range(len(rows)):
        if perturbation == "marginal":
            phi, ref = interventional_oracle(f, rows.iloc[[i]], bg)
        else:
            phi, ref, _ = path_dependent_oracle(exp.ensemble_, Z[i], _column_owner(pipe), 4)
        np.testing.assert_allclose(inter[i], ref[..., 0], rtol=0, atol=1e-10)
        np.testing.assert_allclose(att.values[i], phi[:, 0], rtol=0, atol=1e-10)


@pytest.mark.parametrize("max_table_mib", [1024, 0])
def test_banzhaf_values_are_the_input_column_game(max_table_mib):
    # max_table_mib=0: the quadrature kernel (path-dependent) and the pairwise kernel
    pipe, X, _, kind, _ = _fitted("rf")
    f = _response(pipe, kind)
    bg, rows = X.iloc[:10], X.iloc[40:43]
    Z = np.asarray(pipe[0].transform(rows), dtype=np.float64)
    for perturbation in ("marginal", "tree_path_dependent"):
        exp = TreeShapExplainer(FrozenEstimator(pipe), imputation=perturbation,
                                index="banzhaf", max_table_mib=max_table_mib).fit(bg)
        values = exp.explain(rows).values
        for i in range(len(rows)):
            if perturbation == "marginal":
                phi, _ = interventional_oracle(f, rows.iloc[[i]], bg, index="banzhaf")
            else:
                phi, _, _ = path_dependent_oracle(exp.ensemble_, Z[i], _column_owner(pipe),
                                                  4, index="banzhaf")
            np.testing.assert_allclose(values[i], phi[:, 0], rtol=0, atol=1e-10)


def test_deep_trees_through_the_fallback_kernels_are_the_input_column_game():
    # more than 10 input columns on a path is impossible here, so force the kernels
    # without tables: quadrature (path-dependent) and pairwise (interventional)
    pipe, X, _, kind, _ = _fitted("rf")
    f = _response(pipe, kind)
    bg, rows = X.iloc[:10], X.iloc[40:43]
    Z = np.asarray(pipe[0].transform(rows), dtype=np.float64)
    owner = _column_owner(pipe)
    for perturbation in ("marginal", "tree_path_dependent"):
        exp = TreeShapExplainer(FrozenEstimator(pipe), imputation=perturbation,
                                max_table_mib=0).fit(bg)
        assert exp.algorithm_ in ("pairwise", "quadrature")
        att = exp.explain_interactions(rows)
        for i in range(len(rows)):
            if perturbation == "marginal":
                phi, inter = interventional_oracle(f, rows.iloc[[i]], bg)
            else:
                phi, inter, _ = path_dependent_oracle(exp.ensemble_, Z[i], owner, 4)
            np.testing.assert_allclose(att.values[i], phi[:, 0], rtol=0, atol=1e-10)
            np.testing.assert_allclose(att.extras["interactions"][i], inter[..., 0],
                                       rtol=0, atol=1e-10)


def test_log_loss_is_the_input_column_game():
    pipe, X, y, _, _ = _fitted("gb")
    bg, rows, labels = X.iloc[:8], X.iloc[40:43], y[40:43]
    exp = TreeShapExplainer(FrozenEstimator(pipe), imputation="marginal",
                            model_output="log_loss").fit(bg)
    att = exp.explain(rows, labels)
    assert att.feature_names == INPUTS
    for i in range(len(rows)):
        def loss(hybrid, label=labels[i]):
            p = pipe.predict_proba(hybrid)[:, label]
            return -np.log(p)[:, None]

        phi, _ = interventional_oracle(loss, rows.iloc[[i]], bg)
        np.testing.assert_allclose(att.values[i], phi[:, 0], rtol=0, atol=1e-10)
        np.testing.assert_allclose(att.values[i].sum() + att.base_values[i],
                                   loss(rows.iloc[[i]])[0, 0], rtol=0, atol=1e-10)


def test_multiclass_outputs_are_the_input_column_game():
    X, y = _frame()
    y3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    pipe = make_pipeline(_ct(), HistGradientBoostingClassifier(
        max_iter=4, max_depth=3, random_state=0)).fit(X, y3)
    f = _response(pipe, "decision")
    bg, rows = X.iloc[:8], X.iloc[40:43]
    Z = np.asarray(pipe[0].transform(rows), dtype=np.float64)
    for perturbation in ("marginal", "tree_path_dependent"):
        exp = TreeShapExplainer(FrozenEstimator(pipe), imputation=perturbation)
        att = exp.fit(bg).explain(rows)
        assert att.values.shape == (3, 4, 3)
        assert list(exp.get_feature_names_out())[:5] == [
            "phi__c1__margin(0)", "phi__c2__margin(0)", "phi__n1__margin(0)",
            "phi__n2__margin(0)", "phi__c1__margin(1)"]
        for i in range(len(rows)):
            if perturbation == "marginal":
                phi, _ = interventional_oracle(f, rows.iloc[[i]], bg)
            else:
                phi, _, _ = path_dependent_oracle(exp.ensemble_, Z[i], _column_owner(pipe),
                                                  4)
            np.testing.assert_allclose(att.values[i], phi, rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------
# native categorical splits inside a pipeline
# ---------------------------------------------------------------------------


def test_ordinal_encoder_into_categorical_hgb():
    X, y = _frame()
    ct = ColumnTransformer([("ord", OrdinalEncoder(), ["c1", "c2"]),
                            ("sc", MinMaxScaler(), ["n1"])], remainder="passthrough")
    pipe = make_pipeline(ct, HistGradientBoostingClassifier(
        max_iter=5, max_depth=4, categorical_features=[0, 1], random_state=0))
    pipe.fit(X, (y > np.median(y)).astype(int))
    assert pipe[-1].is_categorical_[:2].all()
    f = _response(pipe, "decision")
    bg, rows = X.iloc[:10], X.iloc[40:44]
    exp = TreeShapExplainer(FrozenEstimator(pipe), imputation="marginal")
    att = exp.fit(bg).explain(rows)
    assert att.feature_names == INPUTS
    assert (exp.ensemble_.mode == 3).any()  # categorical splits were kept
    for i in range(len(rows)):
        phi, _ = interventional_oracle(f, rows.iloc[[i]], bg)
        np.testing.assert_allclose(att.values[i], phi[:, 0], rtol=0, atol=1e-10)
    path = TreeShapExplainer(FrozenEstimator(pipe)).fit(bg)
    values = path.explain(rows).values
    Z = path._transform_input(rows)
    for i in range(len(rows)):
        phi, _, _ = path_dependent_oracle(path.ensemble_, Z[i], np.arange(4), 4)
        np.testing.assert_allclose(values[i], phi[:, 0], rtol=0, atol=1e-10)


def test_ordinal_encoder_into_categorical_lightgbm():
    import lightgbm as lgb

    X, y = _frame()
    ct = ColumnTransformer([("ord", OrdinalEncoder(), ["c1", "c2"])],
                           remainder="passthrough")
    pipe = make_pipeline(ct, lgb.LGBMRegressor(n_estimators=5, num_leaves=8,
                                               min_child_samples=5, verbose=-1, n_jobs=1))
    pipe.fit(X, y, lgbmregressor__categorical_feature=[0, 1])
    f = _response(pipe, "predict")
    bg, rows = X.iloc[:10], X.iloc[40:44]
    exp = TreeShapExplainer(FrozenEstimator(pipe), imputation="marginal")
    att = exp.fit(bg).explain(rows)
    assert (exp.ensemble_.mode == 3).any()
    for i in range(len(rows)):
        phi, _ = interventional_oracle(f, rows.iloc[[i]], bg)
        np.testing.assert_allclose(att.values[i], phi[:, 0], rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------
# the two spaces
# ---------------------------------------------------------------------------


def test_sum_of_one_hot_values_is_not_the_input_column_value():
    pipe, X, _, kind, _ = _fitted("gb")
    f = _response(pipe, kind)
    bg, rows = X.iloc[:10], X.iloc[40:48]
    owner = _column_owner(pipe)
    for perturbation in ("marginal", "tree_path_dependent"):
        grouped = TreeShapExplainer(FrozenEstimator(pipe),
                                    imputation=perturbation).fit(bg)
        per_column = TreeShapExplainer(FrozenEstimator(pipe), feature_space="model",
                                       imputation=perturbation).fit(bg)
        g = grouped.explain(rows).values
        c = per_column.explain(rows).values
        summed = np.stack([c[:, owner == j].sum(axis=1) for j in range(4)], axis=1)
        # both add up to the same output, but the categorical columns' values differ
        np.testing.assert_allclose(g.sum(axis=1), summed.sum(axis=1), atol=1e-10)
        assert np.abs(g[:, :2] - summed[:, :2]).max() > 1e-3
        if perturbation == "marginal":  # and the grouped values are the game's
            for i in range(2):
                phi, _ = interventional_oracle(f, rows.iloc[[i]], bg)
                np.testing.assert_allclose(g[i], phi[:, 0], rtol=0, atol=1e-10)


@pytest.mark.parametrize("perturbation", ["marginal", "tree_path_dependent"])
def test_model_space_is_the_per_column_explanation(perturbation):
    pipe, X, _, _, _ = _fitted("rf")
    bg, rows = X.iloc[:10], X.iloc[40:45]
    exp = TreeShapExplainer(FrozenEstimator(pipe), feature_space="model",
                            imputation=perturbation).fit(bg)
    att = exp.explain(rows)
    assert exp.feature_space_ == "model"
    assert exp.preprocessor_ is not None and exp.explained_model_ is pipe[-1]
    names = list(pipe[0].get_feature_names_out())
    assert exp.player_names_ == names and exp.n_features_explained_ == len(names)
    final = TreeShapExplainer(FrozenEstimator(pipe[-1]), imputation=perturbation)
    ref = final.fit(pipe[0].transform(bg)).explain(pipe[0].transform(rows))
    np.testing.assert_array_equal(att.values, ref.values)
    np.testing.assert_array_equal(att.base_values, ref.base_values)


def test_no_preprocessing_both_spaces_are_the_input():
    X, y = _frame()
    Xn = X[["n1", "n2"]]
    model = RandomForestRegressor(4, max_depth=4, random_state=0).fit(Xn, y)
    for space in ("input", "model"):
        for m in (model, make_pipeline(model)):
            exp = TreeShapExplainer(FrozenEstimator(m), feature_space=space).fit(Xn)
            assert exp.feature_space_ == "input" and exp.preprocessor_ is None
            assert exp.player_names_ == ["n1", "n2"]


@pytest.mark.parametrize("mixer, name", [
    (PCA(n_components=2), "PCA"),  # as many components as inputs: the width says nothing
    (PolynomialFeatures(2, include_bias=False), "PolynomialFeatures"),
    (FunctionTransformer(np.tanh), "FunctionTransformer"),
])
def test_mixing_transformer_warns_and_explains_model_space(mixer, name):
    X, y = _frame()
    Xn = X[["n1", "n2"]]
    pipe = make_pipeline(StandardScaler(), mixer,
                         RandomForestRegressor(4, max_depth=4, random_state=0)).fit(Xn, y)
    with pytest.warns(UserWarning, match=rf"{name}.*feature_space='model'|"
                                         rf"feature_space_='model'.*{name}"):
        exp = TreeShapExplainer(FrozenEstimator(pipe)).fit(Xn.iloc[:20])
    assert exp.feature_space_ == "model"
    n_out = pipe[:-1].transform(Xn.iloc[:1]).shape[1]
    assert len(exp.player_names_) == n_out
    att = exp.explain(Xn.iloc[:5])
    ref = TreeShapExplainer(FrozenEstimator(pipe[-1])).fit(pipe[:-1].transform(Xn.iloc[:20]))
    np.testing.assert_array_equal(att.values, ref.explain(pipe[:-1].transform(
        Xn.iloc[:5])).values)
    np.testing.assert_allclose(att.values.sum(axis=1) + att.base_values,
                               pipe.predict(Xn.iloc[:5]), atol=1e-10)
    with warnings.catch_warnings():  # asked for: no warning
        warnings.simplefilter("error")
        TreeShapExplainer(FrozenEstimator(pipe), feature_space="model").fit(Xn.iloc[:20])


def test_names_transform_pickle_and_score_in_input_space():
    pipe, X, _, kind, _ = _fitted("gb")
    f = _response(pipe, kind)
    bg, rows = X.iloc[:20], X.iloc[40:50]
    exp = TreeShapExplainer(FrozenEstimator(pipe), imputation="marginal")
    att = exp.fit(bg).explain(rows)
    assert list(exp.get_feature_names_out()) == [f"phi__{c}" for c in INPUTS]
    np.testing.assert_array_equal(exp.transform(rows), att.values)
    # the attribution shows the input values (categories as labels)
    assert list(att.data[0]) == list(rows.iloc[0])
    # numpy rows are taken in the fitted columns' order
    with pytest.warns(UserWarning, match="valid feature names"):
        np.testing.assert_array_equal(exp.explain(rows.to_numpy(dtype=object)).values,
                                      att.values)
    # model_fn_ is the explained output on the input columns, arrays or frames
    np.testing.assert_allclose(exp.model_fn_(rows.to_numpy(dtype=object)), f(rows),
                               atol=1e-12)
    again = pickle.loads(pickle.dumps(exp))
    np.testing.assert_array_equal(again.explain(rows).values, att.values)
    np.testing.assert_allclose(again.explain_interactions(rows.iloc[:2]).values,
                               att.values[:2], rtol=0, atol=1e-12)
    # scored in the input columns: removed columns take the input reference row
    score = exp.score(rows)
    assert score == faithfulness_correlation(again.model_fn_, rows.to_numpy(dtype=object),
                                             att, exp.reference_)
    assert score > faithfulness_correlation(exp.model_fn_, rows.to_numpy(dtype=object),
                                            -att.values, exp.reference_)


def test_sparse_one_hot_output_is_densified_in_both_spaces():
    pipe, X, _, _, _ = _fitted("rf")
    sparse = make_pipeline(
        ColumnTransformer([("oh", OneHotEncoder(), ["c1", "c2"]),
                           ("sc", StandardScaler(), ["n1"]),
                           ("keep", "passthrough", ["n2"])], sparse_threshold=1.0),
        pipe[-1])
    sparse[0].fit(X)
    assert hasattr(sparse[0].transform(X.iloc[:3]), "toarray")
    bg, rows = X.iloc[:10], X.iloc[40:44]
    for space in ("input", "model"):
        for perturbation in ("marginal", "tree_path_dependent"):
            got = TreeShapExplainer(FrozenEstimator(sparse), feature_space=space,
                                    imputation=perturbation).fit(bg).explain(rows)
            ref = TreeShapExplainer(FrozenEstimator(pipe), feature_space=space,
                                    imputation=perturbation).fit(bg).explain(rows)
            np.testing.assert_allclose(got.values, ref.values, rtol=0, atol=1e-12)


def test_unfitted_pipeline_is_fitted_and_explained_in_input_columns():
    X, y = _frame()
    pipe = make_pipeline(_ct(), RandomForestRegressor(4, max_depth=4, random_state=0))
    exp = TreeShapExplainer(pipe, imputation="marginal").fit(X, y)
    assert exp.player_names_ == INPUTS
    f = _response(exp.model_, "predict")
    bg = X  # the background is the training X
    att = exp.explain(X.iloc[:2])
    np.testing.assert_allclose(att.values.sum(axis=1) + f(bg).mean(axis=0)[0],
                               f(X.iloc[:2])[:, 0], atol=1e-10)


# ---------------------------------------------------------------------------
# input_column_map
# ---------------------------------------------------------------------------


def _dense(A):
    A = A.toarray() if hasattr(A, "toarray") else A
    return np.asarray(A, dtype=np.float64)


def dependency_oracle(pre, X):
    """Input column behind each output column, found by changing one input column at a
    time (a cyclic shift of its values): the output columns that change are its."""
    base = _dense(pre.transform(X))
    owner = np.full(base.shape[1], -1)
    for j, col in enumerate(X.columns):
        Xs = X.copy()
        Xs[col] = np.roll(X[col].to_numpy(), 1)
        changed = ~np.all(np.isclose(_dense(pre.transform(Xs)), base, equal_nan=True), axis=0)
        assert np.all(owner[changed] == -1), "an output column depends on two inputs"
        owner[changed] = j
    return owner


def _messy_frame(n=120, seed=1):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "c1": rng.choice(["a", "b", "c"], n),
        "c2": rng.choice(["p", "q", "r", "s", "t"], n, p=[0.4, 0.3, 0.2, 0.06, 0.04]),
        "n1": rng.normal(size=n), "n2": rng.normal(size=n), "n3": rng.normal(size=n),
        "n4": rng.normal(size=n)})
    X.loc[rng.random(n) < 0.2, "n1"] = np.nan
    X.loc[rng.random(n) < 0.2, "n3"] = np.nan
    y = rng.integers(0, 3, n)
    return X, y


def test_input_column_map_matches_the_dependency_oracle():
    X, y = _messy_frame()
    cases = [
        ColumnTransformer([
            ("drop_first", OneHotEncoder(drop="first", sparse_output=False), ["c1"]),
            ("rare", OneHotEncoder(min_frequency=10, handle_unknown="infrequent_if_exist",
                                   sparse_output=False), ["c2"]),
            ("num", Pipeline([("imp", SimpleImputer(add_indicator=True)),
                              ("sc", StandardScaler())]), ["n1", "n2", "n3"]),
            ("gone", "drop", ["n4"]),
        ]),
        ColumnTransformer([
            ("te", TargetEncoder(), ["c1", "c2"]),
            ("bins", KBinsDiscretizer(n_bins=3, encode="onehot-dense",
                                      quantile_method="averaged_inverted_cdf"), ["n2"]),
        ], remainder=make_pipeline(SimpleImputer(), MinMaxScaler())),
        Pipeline([("ct", ColumnTransformer([("ord", OrdinalEncoder(), ["c1", "c2"])],
                                           remainder="passthrough")),
                  ("imp", SimpleImputer(add_indicator=True)),
                  ("sc", StandardScaler())]),
    ]
    for pre in cases:
        pre.fit(X, y)
        got = input_column_map(pre, X.shape[1], list(X.columns))
        np.testing.assert_array_equal(got, dependency_oracle(pre, X))
        # a frozen step is the step it wraps
        frozen = Pipeline([("frozen", FrozenEstimator(pre))])
        np.testing.assert_array_equal(
            input_column_map(frozen, X.shape[1], list(X.columns)), got)
    # with the indicator columns: n1 and n3 have missing values, each flagged column is
    # its own input column's
    assert got.count(2) == 2 and got.count(4) == 2


def test_input_column_map_refuses_mixing_steps_naming_them():
    X, y = _messy_frame()
    Xn = X[["n2", "n4"]]
    nested = ColumnTransformer([("num", Pipeline([("sc", StandardScaler()),
                                                  ("mix", PCA(n_components=2))]),
                                 ["n2", "n4"])]).fit(Xn)
    with pytest.raises(ValueError, match=r"'num' -> 'mix' \(PCA\).*column-wise"):
        input_column_map(nested, 2, ["n2", "n4"])
    with pytest.raises(ValueError, match=r"FunctionTransformer"):
        input_column_map(make_pipeline(FunctionTransformer(np.exp)).fit(Xn), 2)
    with pytest.raises(ValueError, match=r"fitted on 2 columns but receives 3"):
        input_column_map(make_pipeline(StandardScaler()).fit(Xn), 3)
    assert input_column_map(None, 3) == [0, 1, 2]
    assert input_column_map("passthrough", 2) == [0, 1]


# ---------------------------------------------------------------------------
# the kernels with players on random trees (every routing mode, NaN, zero covers)
# ---------------------------------------------------------------------------


def _numeric_interventional_oracle(ens, x, background, owner, P, index="shapley"):
    """Enumerate ``v(S) = mean_b raw(x_cols(S), b_other cols)`` over players."""
    v = {}
    for S in itertools.product([0, 1], repeat=P):
        take = np.asarray(S, bool)[owner]
        hybrid = np.where(take, x, background)
        v[S] = predict_raw(ens, hybrid).mean(axis=0)
    return values_from_game(v, P, index)


@pytest.mark.parametrize("seed", range(4))
def test_kernels_with_players_match_enumeration_on_random_trees(seed):
    from sklearn_xai.tree._ensemble import with_players
    from sklearn_xai.tree._kernels import (
        PATH_TABLE_FEATURES,
        PathTables,
        PatternTables,
        interactions_interventional,
        interactions_pattern_tables,
        shap_interactions,
        shap_interventional,
        shap_path_dependent,
        shap_pattern_tables,
    )

    from .test_tree_kernels import random_ensemble, random_X

    base, rng = random_ensemble(seed, M=6, n_trees=3, depth=5)
    owner = np.asarray([0, 0, 1, 2, 2, 2])  # 6 columns, 3 players
    P = 3
    ens = with_players(base, owner, P)
    X, R = random_X(rng, 3, 6), random_X(rng, 7, 6)
    K, value, tout = ens.n_outputs, ens.value, ens.tree_output
    depth = int(PatternTables(ens, R).max_depth)
    zf = zero_fractions(ens)
    path = PathTables(ens, zf)
    path_tables = PatternTables(ens, None, zero_fractions=zf, max_features=PATH_TABLE_FEATURES)
    tables = PatternTables(ens, R)
    assert tables.use_tree.all() and path_tables.use_tree.any()
    got = {
        "path": shap_path_dependent(ens, path, X, value, tout, K),
        "path_tables": shap_pattern_tables(ens, path_tables, X, K)
        + shap_path_dependent(ens, path, X, value, tout, K, trees=~path_tables.use_tree),
        "interv": shap_interventional(ens, X, R, value, tout, K, max_depth=depth),
        "interv_tables": shap_pattern_tables(ens, tables, X, K),
    }
    inter_path = shap_interactions(ens, path, X, value, tout, K)
    inter_pair = interactions_interventional(ens, X, R, value, tout, K, max_depth=depth)
    inter_tab = interactions_pattern_tables(ens, tables, tables.interaction_table(ens, R), X,
                                            value, tout, K)
    for i in range(X.shape[0]):
        phi_p, int_p, _ = path_dependent_oracle(ens, X[i], owner, P)
        phi_i, int_i = _numeric_interventional_oracle(ens, X[i], R, owner, P)
        for name, ref in (("path", phi_p), ("path_tables", phi_p), ("interv", phi_i),
                          ("interv_tables", phi_i)):
            np.testing.assert_allclose(got[name][i], ref, rtol=0, atol=1e-10, err_msg=name)
        for (phi, inter), (ref_phi, ref_inter) in ((inter_path, (phi_p, int_p)),
                                                   (inter_pair, (phi_i, int_i)),
                                                   (inter_tab, (phi_i, int_i))):
            np.testing.assert_allclose(phi[i], ref_phi, rtol=0, atol=1e-10)
            np.testing.assert_allclose(inter[i], ref_inter, rtol=0, atol=1e-10)


def test_a_none_category_survives_rows_rebuilt_as_a_frame():
    # the encoder learned None as a category: arrays rebuilt as frames must keep None
    rng = np.random.default_rng(0)
    n = 80
    c = rng.choice(np.array(["a", "b", None], dtype=object), n)
    X = pd.DataFrame({"c": pd.Series(c, dtype=object), "x": rng.normal(size=n)})
    y = X["c"].isna() * 3.0 + X["x"]
    pipe = make_pipeline(
        ColumnTransformer([("oh", OneHotEncoder(sparse_output=False), ["c"])],
                          remainder="passthrough"),
        DecisionTreeRegressor(max_depth=4, random_state=0))
    explainer = TreeShapExplainer(pipe, imputation="marginal").fit(X, y)
    rows = X.iloc[:10]
    np.testing.assert_allclose(explainer.model_fn_(rows.to_numpy(dtype=object))[:, 0],
                               explainer.model_.predict(rows))
    assert np.isfinite(explainer.score(rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no feature names: taken by position
        from_array = explainer.explain(rows.to_numpy(dtype=object)).values
    np.testing.assert_allclose(from_array, explainer.explain(rows).values, rtol=0, atol=1e-12)
