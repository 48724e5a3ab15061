"""Interventional TreeSHAP with per-leaf pattern tables (O(rows + background) per tree).

Oracles: exact enumeration of the interventional game
``v(S) = mean over background rows z of f(x_S, z_not S)``, with ``f`` the model's own
prediction (margin) on the hybrid rows, for the Shapley values and the pairwise Shapley
interaction index; and the pairwise (O(rows x background)) kernel, kept as the fallback.
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import (
    GradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestRegressor,
)
from sklearn.frozen import FrozenEstimator
from sklearn.tree import DecisionTreeRegressor

from sklearn_xai.metrics import faithfulness_correlation
from sklearn_xai.tree import TreeShapExplainer
from sklearn_xai.tree._ensemble import make_ensemble, predict_raw, zero_fractions
from sklearn_xai.tree._kernels import (
    PathTables,
    PatternTables,
    interactions_interventional,
    interactions_pattern_tables,
    interventional_weights,
    shap_interventional,
    shap_path_dependent,
    shap_pattern_tables,
)

from ._oracles import values_from_game
from .test_tree_kernels import _game, brute_force, random_ensemble, random_tree, random_X

# ---------------------------------------------------------------------------
# enumeration oracle
# ---------------------------------------------------------------------------


def enumerate_game(f, x, background, index="shapley"):
    """Shapley (or Banzhaf) values and Shapley interaction index of
    ``v(S) = mean_z f(x_S, z_not S)``; ``f`` maps a DataFrame / array of rows to (rows, K).

    ``x`` is one row (1-row DataFrame or 1-D array), ``background`` rows of the same kind.
    """
    frame = isinstance(background, pd.DataFrame)
    M = background.shape[1]
    m = background.shape[0]
    subsets = list(itertools.product([0, 1], repeat=M))
    parts = []
    for S in subsets:
        if frame:
            h = background.copy()
            for j in np.flatnonzero(S):
                c = h.columns[j]
                h[c] = pd.Series([x[c].iloc[0]] * m, index=h.index, dtype=background[c].dtype)
            parts.append(h)
        else:
            parts.append(np.where(np.asarray(S, bool), x, background))
    rows = pd.concat(parts, ignore_index=True) if frame else np.concatenate(parts)
    out = np.asarray(f(rows), dtype=np.float64).reshape(len(subsets), m, -1).mean(axis=1)
    return values_from_game(dict(zip(subsets, out, strict=True)), M, index)


def _with_outputs(values):
    return values if values.ndim == 3 else values[..., None]


# ---------------------------------------------------------------------------
# kernels: tables against enumeration and against the pairwise kernel
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_tables_match_enumeration_on_random_trees(seed):
    # every routing mode, NaN / zero-missing rules, categorical splits, repeated features
    ens, rng = random_ensemble(500 + seed, M=5, n_trees=3, depth=5, n_out=2)
    X = random_X(rng, 3, 5)
    R = random_X(rng, 9, 5)
    tables = PatternTables(ens, R)
    assert tables.use_tree.all()
    phi = shap_pattern_tables(ens, tables, X, 2)
    phi_i, inter = interactions_pattern_tables(
        ens, tables, tables.interaction_table(ens, R), X, ens.value, ens.tree_output, 2)

    def value(ens_, zf, x, S, k):
        return predict_raw(ens_, np.where(S, x, R))[:, k].mean()

    for i in range(3):
        for k in range(2):
            ref, ref_inter, _ = brute_force(ens, X[i], k, value=value)
            np.testing.assert_allclose(phi[i, :, k], ref, rtol=0, atol=1e-12)
            np.testing.assert_allclose(phi_i[i, :, k], ref, rtol=0, atol=1e-12)
            np.testing.assert_allclose(inter[i, :, :, k], ref_inter, rtol=0, atol=1e-12)


def test_tables_vector_leaves_match_enumeration():
    ens, rng = random_ensemble(77, M=4, n_trees=2, depth=4, n_out=3, vector=True)
    X = random_X(rng, 3, 4)
    R = random_X(rng, 6, 4)
    tables = PatternTables(ens, R)
    phi = shap_pattern_tables(ens, tables, X, 3)
    for i in range(3):
        ref, _ = enumerate_game(lambda Z: predict_raw(ens, Z), X[i], R)
        np.testing.assert_allclose(phi[i], ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_tables_equal_pairwise_kernel(seed):
    # deeper trees, more features and background rows than enumeration allows
    ens, rng = random_ensemble(600 + seed, M=9, n_trees=4, depth=7, n_out=2)
    X = random_X(rng, 20, 9)
    R = random_X(rng, 150, 9)
    tables = PatternTables(ens, R)
    assert tables.use_tree.all()
    phi_t = shap_pattern_tables(ens, tables, X, 2)
    phi_p = shap_interventional(ens, X, R, ens.value, ens.tree_output, 2, max_depth=7)
    np.testing.assert_allclose(phi_t, phi_p, rtol=0, atol=1e-12)
    feats = [4, 0, 7]
    _, it_t = interactions_pattern_tables(
        ens, tables, tables.interaction_table(ens, R), X, ens.value, ens.tree_output, 2,
        features=feats)
    _, it_p = interactions_interventional(ens, X, R, ens.value, ens.tree_output, 2,
                                          max_depth=7, features=feats)
    np.testing.assert_allclose(it_t, it_p, rtol=0, atol=1e-12)
    np.testing.assert_allclose(it_t.sum(2), phi_t[:, feats], rtol=0, atol=1e-12)


def test_weights_are_exact_rationals():
    W = interventional_weights(6)
    # (a-1)! b! / (a+b)! for a = 3, b = 2 is 2 * 2 / 120
    assert W[0, 3, 2] == 4 / 120
    # a feature of B loses a! (b-1)! / (a+b)!: a = 1, b = 1 -> 1/2
    assert W[1, 1, 1] == 0.5
    # efficiency of one leaf game v(S) = [A in S, B outside S]: the values add up to
    # v(all) - v(none) = [B empty] - [A empty]
    for a in range(0, 7):
        for b in range(0, 7 - a):
            if a + b:
                total = a * W[0, a, b] - b * W[1, a, b]
                assert abs(total - ((b == 0) - (a == 0))) < 1e-15


def test_depth_limit_and_memory_budget_select_trees():
    rng = np.random.default_rng(5)
    shallow = random_tree(rng, 4, 3, p_leaf=0.0, zero_cover=0.0)
    # a chain over 12 distinct features: deeper than the table limit
    n = 25
    cl, cr, ft = [-1] * n, [-1] * n, [-1] * n
    for d in range(12):
        cl[2 * d], cr[2 * d], ft[2 * d] = 2 * d + 1, 2 * d + 2, d
    chain = {"children_left": cl, "children_right": cr, "feature": ft, "threshold": [0.0] * n,
             "mode": 0, "missing": 0, "default_left": False, "cover": [1.0] * n,
             "value": rng.normal(size=(n, 1)), "output": 0}
    ens = make_ensemble([shallow, chain], n_features=12, n_outputs=1, base_score=[0.0])
    X = rng.normal(size=(4, 12))
    R = rng.normal(size=(30, 12))
    tables = PatternTables(ens, R)
    assert tables.U.tolist()[1] == 12
    assert tables.use_tree.tolist() == [True, False]
    # a unit's table: 2^bits keys x its features, float64; at most 8 (d+1) 2^(d+1) bytes
    # per leaf of d distinct path features
    units = tables.unit_of[tables.unit_of >= 0]
    dims = np.diff(tables.u_foff)[units]
    assert tables.nbytes == 8 * np.sum(2 ** tables.u_bits[units] * dims) > 0
    leaves = np.flatnonzero(ens.children_left[:ens.tree_offsets[1]] < 0)
    d = tables.nu[leaves]
    assert tables.nbytes <= np.sum(8 * (d + 1) * 2.0 ** (d + 1))
    none = PatternTables(ens, R, max_bytes=tables.nbytes - 1)
    assert not none.use_tree.any() and none.nbytes == 0
    ref = shap_interventional(ens, X, R, ens.value, ens.tree_output, 1, max_depth=12)
    both = (shap_pattern_tables(ens, tables, X, 1)
            + shap_interventional(ens, X, R, ens.value, ens.tree_output, 1, max_depth=12,
                                  trees=~tables.use_tree))
    np.testing.assert_allclose(both, ref, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------
# real models, against enumeration on the model's own predictions
# ---------------------------------------------------------------------------


def _numeric(seed, n=300, m=4, nan=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).round(1)
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    y = np.nan_to_num(X[:, 0]) * np.nan_to_num(X[:, 1]) + np.nan_to_num(X[:, 2]) ** 2 \
        - np.nan_to_num(X[:, 3], nan=1.0)
    return X, y


def _check(model, f, bg, rows, atol=1e-12, interactions=True, data=None):
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal")
    exp.fit(bg)
    assert exp.algorithm_ == "tables"
    att = exp.explain_interactions(rows) if interactions else exp.explain(rows)
    assert att.extras["algorithm"] == "tables"
    values = _with_outputs(att.values)
    for i in range(len(rows)):
        x = rows.iloc[[i]] if isinstance(rows, pd.DataFrame) else rows[i]
        ref, ref_inter = enumerate_game(f, x, bg)
        np.testing.assert_allclose(values[i], ref, rtol=0, atol=atol)
        if interactions:
            inter = att.extras["interactions"]
            inter = inter if inter.ndim == 4 else inter[..., None]
            np.testing.assert_allclose(inter[i], ref_inter, rtol=0, atol=atol)
    return exp, att


def test_sklearn_tree_forest_and_gbm_match_enumeration():
    X, y = _numeric(0)
    bg, rows = X[:25], X[200:203]
    tree = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)
    _check(tree, lambda Z: tree.predict(Z)[:, None], bg, rows)
    forest = RandomForestRegressor(4, max_depth=6, random_state=0).fit(X, y)
    _check(forest, lambda Z: forest.predict(Z)[:, None], bg, rows, interactions=False)
    gb = GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0)
    gb.fit(X, y > 0)
    _check(gb, lambda Z: gb.decision_function(Z)[:, None], bg, rows)


def test_hist_gradient_boosting_with_nan_matches_enumeration():
    X, y = _numeric(1, nan=0.15)
    model = HistGradientBoostingRegressor(max_iter=8, max_depth=4, random_state=0).fit(X, y)
    _check(model, lambda Z: model.predict(Z)[:, None], X[:20], X[100:103], interactions=False)


@pytest.fixture(scope="module")
def mixed_frame():
    rng = np.random.default_rng(2)
    n = 500
    df = pd.DataFrame({
        "a": rng.normal(size=n).round(1),
        "c": pd.Categorical(rng.choice(list("uvwxyz"), n)),
        "b": rng.normal(size=n),
        "d": rng.choice([0.0, 1.0, 2.0], n),
    })
    df.loc[::6, "a"] = np.nan
    df.loc[::7, "c"] = np.nan
    df.loc[::4, "d"] = np.nan
    y = (df.a.fillna(-1) + 1.5 * df.c.isin(["x", "z"]) - df.b * df.d.fillna(0.5)).to_numpy()
    return df, y


def test_lightgbm_nan_and_categorical_match_enumeration(mixed_frame):
    lgb = pytest.importorskip("lightgbm")
    df, y = mixed_frame
    model = lgb.LGBMRegressor(n_estimators=8, num_leaves=10, min_child_samples=5,
                              verbose=-1).fit(df, y)
    _check(model, lambda Z: model.predict(Z, raw_score=True)[:, None], df.iloc[:20],
           df.iloc[100:103])


def test_xgboost_nan_and_categorical_match_enumeration(mixed_frame):
    xgb = pytest.importorskip("xgboost")
    df, y = mixed_frame
    model = xgb.XGBClassifier(n_estimators=8, max_depth=4, enable_categorical=True,
                              tree_method="hist", n_jobs=1).fit(df, y > 0.5)
    bg, rows = df.iloc[:20], df.iloc[100:103]
    # XGBoost sums its margins in float32: compare with it to float32 precision, and
    # exactly with the same trees summed in float64 (our routing is checked to agree)
    exp, att = _check(model, lambda Z: model.predict(Z, output_margin=True)[:, None], bg, rows,
                      atol=2e-6, interactions=False)
    codes = exp._numeric(bg)
    np.testing.assert_allclose(predict_raw(exp.ensemble_, codes)[:, 0],
                               model.predict(bg, output_margin=True), rtol=0, atol=2e-6)
    att = exp.explain_interactions(rows)
    Zr = exp._numeric(rows)
    for i in range(len(rows)):
        ref, ref_inter = enumerate_game(lambda Z: predict_raw(exp.ensemble_, Z), Zr[i], codes)
        np.testing.assert_allclose(att.values[i], ref[:, 0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(att.extras["interactions"][i], ref_inter[..., 0], rtol=0,
                                   atol=1e-12)


# ---------------------------------------------------------------------------
# the explainer: which algorithm ran, fallback, memory, score
# ---------------------------------------------------------------------------


def test_fallback_gives_the_same_values_and_says_so():
    X, y = _numeric(3, m=5)
    model = GradientBoostingClassifier(n_estimators=5, max_depth=3, random_state=0)
    model.fit(X, y > 0)
    kw = {"imputation": "marginal"}
    tab = TreeShapExplainer(FrozenEstimator(model), **kw).fit(X[:40])
    pair = TreeShapExplainer(FrozenEstimator(model), max_table_mib=0, **kw).fit(X[:40])
    assert tab.algorithm_ == "tables" and tab.table_nbytes_ > 0
    assert pair.algorithm_ == "pairwise" and pair.table_nbytes_ == 0
    a, b = tab.explain(X[100:120]), pair.explain(X[100:120])
    assert b.extras["algorithm"] == "pairwise"
    np.testing.assert_allclose(a.values, b.values, rtol=0, atol=1e-12)
    ia = tab.explain_interactions(X[100:105], features=[2, 0])
    ib = pair.explain_interactions(X[100:105], features=[2, 0])
    np.testing.assert_allclose(ia.extras["interactions"], ib.extras["interactions"], rtol=0,
                               atol=1e-12)
    np.testing.assert_allclose(ia.extras["interactions"].sum(2), a.values[:5, [2, 0]],
                               rtol=0, atol=1e-12)


def test_deep_trees_use_the_pairwise_fallback():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 14))
    y = rng.normal(size=400)
    deep = DecisionTreeRegressor(random_state=0).fit(X, y)  # unlimited depth
    shallow = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    kw = {"imputation": "marginal"}
    exp = TreeShapExplainer(FrozenEstimator(deep), **kw).fit(X[:30])
    assert exp.algorithm_ == "pairwise"
    assert TreeShapExplainer(FrozenEstimator(shallow), **kw).fit(X[:30]).algorithm_ == \
        "tables"
    att = exp.explain(X[50:53])
    np.testing.assert_allclose(att.values.sum(1) + att.base_values, deep.predict(X[50:53]),
                               rtol=0, atol=1e-10)


def test_mixed_tables_and_pairwise_within_one_forest():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 12))
    y = X[:, 0] + rng.normal(size=300)
    forest = RandomForestRegressor(3, random_state=0).fit(X, y)  # deep trees
    forest.estimators_[1] = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    kw = {"imputation": "marginal"}
    exp = TreeShapExplainer(FrozenEstimator(forest), **kw).fit(X[:25])
    assert exp.algorithm_ == "tables+pairwise"
    att = exp.explain(X[40:45])
    assert att.extras["algorithm"] == "tables+pairwise"
    ref = TreeShapExplainer(FrozenEstimator(forest), max_table_mib=0, **kw).fit(X[:25])
    np.testing.assert_allclose(att.values, ref.explain(X[40:45]).values, rtol=0, atol=1e-12)
    ia = exp.explain_interactions(X[40:43], features=[0, 5])
    ib = ref.explain_interactions(X[40:43], features=[0, 5])
    assert ia.extras["algorithm"] == "tables+pairwise"
    np.testing.assert_allclose(ia.extras["interactions"], ib.extras["interactions"], rtol=0,
                               atol=1e-12)


def test_probability_output_uses_pairwise_and_refuses_interactions():
    X, y = _numeric(8)
    model = GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0)
    model.fit(X, y > 0)
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            model_output="probability").fit(X[:20])
    assert exp.algorithm_ == "pairwise"
    with pytest.raises(ValueError, match="model_output='raw'"):
        exp.explain_interactions(X[:3])


def test_background_size_does_not_change_the_row_cost_structure():
    # the tables hold 3 * 2^d numbers per leaf whatever the background size
    X, y = _numeric(9)
    model = GradientBoostingClassifier(n_estimators=3, max_depth=3, random_state=0)
    model.fit(X, y > 0)
    kw = {"imputation": "marginal"}
    small = TreeShapExplainer(FrozenEstimator(model), **kw).fit(X[:10])
    large = TreeShapExplainer(FrozenEstimator(model), **kw).fit(X[:300])
    assert small.table_nbytes_ == large.table_nbytes_ > 0


def test_score_is_faithfulness_correlation():
    X, y = _numeric(10)
    model = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0)
    model.fit(X, y > 0)
    for fp in ("tree_path_dependent", "marginal"):
        exp = TreeShapExplainer(FrozenEstimator(model), imputation=fp).fit(X[:50])
        rows = X[100:130]
        ref = faithfulness_correlation(exp.model_fn_, rows, exp.explain(rows),
                                       np.nan_to_num(exp.reference_))
        assert exp.score(rows) == pytest.approx(ref, abs=1e-12)


def test_single_leaf_trees_and_vector_leaves_through_units():
    rng = np.random.default_rng(11)
    stump = {"children_left": [-1], "children_right": [-1], "feature": [-1],
             "threshold": [0.0], "mode": 0, "missing": 0, "default_left": False,
             "cover": [3.0], "value": [[0.7, -0.2]], "output": -1}
    trees = [stump, random_tree(rng, 4, 4, n_out=2, output=-1), stump]
    ens = make_ensemble(trees, n_features=4, n_outputs=2, base_score=[0.1, 0.2])
    X = random_X(rng, 3, 4)
    R = random_X(rng, 8, 4)
    tables = PatternTables(ens, R)
    assert tables.use_tree.all()
    phi = shap_pattern_tables(ens, tables, X, 2)
    mean = ens.base_score + tables.background_mean(ens)
    np.testing.assert_allclose(mean, predict_raw(ens, R).mean(axis=0), rtol=0, atol=1e-12)
    for i in range(3):
        ref, _ = enumerate_game(lambda Z: predict_raw(ens, Z), X[i], R)
        np.testing.assert_allclose(phi[i], ref, rtol=0, atol=1e-12)


def test_pickle_batches_and_threads_give_the_same_values():
    import pickle

    X, y = _numeric(12, m=5, nan=0.1)
    model = HistGradientBoostingRegressor(max_iter=10, max_depth=4, random_state=0).fit(X, y)
    kw = {"imputation": "marginal"}
    exp = TreeShapExplainer(FrozenEstimator(model), **kw).fit(X[:60])
    ref = exp.explain(X[100:140])
    np.testing.assert_allclose(ref.predicted(), model.predict(X[100:140]), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ref.base_values, model.predict(X[:60]).mean(), rtol=0,
                               atol=1e-12)
    again = pickle.loads(pickle.dumps(exp)).explain(X[100:140])
    np.testing.assert_array_equal(again.values, ref.values)
    for params in ({"batch_size": 7}, {"batch_size": 9, "n_jobs": 2}):
        other = TreeShapExplainer(FrozenEstimator(model), **params, **kw).fit(X[:60])
        np.testing.assert_array_equal(other.explain(X[100:140]).values, ref.values)


# ---------------------------------------------------------------------------
# Banzhaf values (index="banzhaf")
# ---------------------------------------------------------------------------


def test_banzhaf_kernels_match_enumeration():
    ens, rng = random_ensemble(900, M=5, n_trees=3, depth=5, n_out=2)
    X = random_X(rng, 3, 5)
    R = random_X(rng, 7, 5)
    tables = PatternTables(ens, R, index="banzhaf")
    phi_t = shap_pattern_tables(ens, tables, X, 2)
    phi_p = shap_interventional(ens, X, R, ens.value, ens.tree_output, 2, max_depth=6,
                                index="banzhaf")
    zf = zero_fractions(ens)
    path = shap_path_dependent(ens, PathTables(ens, zf, index="banzhaf"), X, ens.value,
                               ens.tree_output, 2)
    for i in range(3):
        ref, _ = enumerate_game(lambda Z: predict_raw(ens, Z), X[i], R, index="banzhaf")
        np.testing.assert_allclose(phi_t[i], ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(phi_p[i], ref, rtol=0, atol=1e-12)
        for k in range(2):
            v = {S: _game(ens, zf, X[i], np.array(S, bool), k)
                 for S in itertools.product([0, 1], repeat=5)}
            ref_path = np.zeros(5)
            for S, vS in v.items():
                for j in np.flatnonzero(np.array(S) == 0):
                    Sj = tuple(1 if q == j else S[q] for q in range(5))
                    ref_path[j] += (v[Sj] - vS) / 2 ** 4
            np.testing.assert_allclose(path[i, :, k], ref_path, rtol=0, atol=1e-12)


def test_banzhaf_through_the_explainer(mixed_frame):
    lgb = pytest.importorskip("lightgbm")
    df, y = mixed_frame
    model = lgb.LGBMRegressor(n_estimators=6, num_leaves=8, min_child_samples=5,
                              verbose=-1).fit(df, y)
    bg, rows = df.iloc[:15], df.iloc[200:202]
    exp = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                            index="banzhaf").fit(bg)
    att = exp.explain(rows)
    assert att.extras["index"] == "banzhaf" and exp.algorithm_ == "tables"
    for i in range(len(rows)):
        ref, _ = enumerate_game(lambda Z: model.predict(Z, raw_score=True)[:, None],
                                rows.iloc[[i]], bg, index="banzhaf")
        np.testing.assert_allclose(att.values[i], ref[:, 0], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="index='banzhaf'"):
        exp.explain_interactions(rows)
    with pytest.raises(ValueError, match="index='banzhaf'"):
        TreeShapExplainer(FrozenEstimator(lgb.LGBMClassifier(n_estimators=2, verbose=-1)
                                          .fit(df, y > 0)),
                          imputation="marginal", model_output="probability",
                          index="banzhaf").fit(bg)
    path = TreeShapExplainer(FrozenEstimator(model), index="banzhaf").fit(bg)
    assert path.explain(rows).extras["index"] == "banzhaf"
    assert TreeShapExplainer(FrozenEstimator(model)).fit(bg).explain(rows).extras["index"] \
        == "shapley"


# ---------------------------------------------------------------------------
# path-dependent values from pattern tables (shallow trees)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_path_dependent_tables_match_enumeration(seed):
    # the path-dependent game as tables: zero covers, NaN, categorical splits, repeats
    ens, rng = random_ensemble(950 + seed, M=5, n_trees=3, depth=5, n_out=2)
    X = random_X(rng, 4, 5)
    zf = zero_fractions(ens)
    tables = PatternTables(ens, None, zero_fractions=zf)
    assert tables.use_tree.all()
    phi = shap_pattern_tables(ens, tables, X, 2)
    quad = shap_path_dependent(ens, PathTables(ens, zf), X, ens.value, ens.tree_output, 2)
    np.testing.assert_allclose(phi, quad, rtol=0, atol=1e-12)
    for i in range(4):
        for k in range(2):
            ref, _, _ = brute_force(ens, X[i], k)
            np.testing.assert_allclose(phi[i, :, k], ref, rtol=0, atol=1e-12)


def test_path_dependent_uses_tables_for_shallow_trees_only():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(400, 9))
    y = X[:, 0] * X[:, 1] + rng.normal(size=400)
    forest = RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, y)
    forest.estimators_[2] = DecisionTreeRegressor(random_state=0).fit(X, y)  # deep
    exp = TreeShapExplainer(FrozenEstimator(forest)).fit(X[:50])
    assert exp.algorithm_ == "tables+quadrature" and exp.table_nbytes_ > 0
    quad = TreeShapExplainer(FrozenEstimator(forest), max_table_mib=0).fit(X[:50])
    assert quad.algorithm_ == "quadrature" and quad.table_nbytes_ == 0
    a, b = exp.explain(X[100:130]), quad.explain(X[100:130])
    assert a.extras["algorithm"] == "tables+quadrature"
    np.testing.assert_allclose(a.values, b.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.predicted(), forest.predict(X[100:130]), rtol=0, atol=1e-10)
    shallow = TreeShapExplainer(FrozenEstimator(forest.estimators_[0])).fit(X[:50])
    assert shallow.algorithm_ == "tables"
