"""P2CERecourse: the front equals brute-force enumeration of the grid; constraints hold."""

import itertools
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_xai.recourse import P2CERecourse
from sklearn_xai.recourse._p2ce_models import (
    FlatIsolationForest,
    TreeBound,
    candidate_rows,
    parse_tree_model,
)


# ----------------------------------------------------------------------------- oracle
def _oracle_costs(Xtrain, x, P, categorical=()):
    """Costs written from their definitions, independently of the package."""
    sigma = Xtrain.std(axis=0)
    sigma[sigma == 0] = 1.0
    changed = P != x
    delta = np.abs(P - x) / sigma
    for j in categorical:
        delta[:, j] = changed[:, j]
    pct = np.zeros_like(delta)
    n = len(Xtrain)
    for j in range(x.shape[0]):
        col = Xtrain[:, j]
        if j in categorical:
            pct[:, j] = changed[:, j]
            continue

        def F(v):
            return ((col < v).sum() + (col <= v).sum()) / (2 * n)

        pct[:, j] = [abs(F(v) - F(x[j])) for v in P[:, j]]
    return {
        "max_distance": delta.max(axis=1),
        "n_changes": changed.sum(axis=1).astype(float),
        "mean_distance": delta.mean(axis=1),
        "l2": np.sqrt((delta**2).sum(axis=1)),
        "percentile": pct.max(axis=1),
    }


def _nondominated(C):
    keep = []
    for i, c in enumerate(C):
        dominated = np.any(np.all(C <= c, axis=1) & np.any(C < c, axis=1))
        if not dominated:
            keep.append(i)
    return keep


def _brute_front(expl, Xtrain, x, categorical=()):
    """Every grid point with <= max_changes changes: valid, inlier -> Pareto cost vectors."""
    grid = expl.grid_
    d = len(x)
    lists = []
    for j in range(d):
        if grid.immutable[j]:
            lists.append([x[j]])
            continue
        g = np.union1d(grid.grids[j], [x[j]])
        if grid.monotone[j] > 0:
            g = g[g >= x[j]]
        elif grid.monotone[j] < 0:
            g = g[g <= x[j]]
        lists.append(list(g))
    P = np.array(list(itertools.product(*lists)), dtype=float)
    P = P[(P != x).sum(axis=1) <= expl.max_changes]
    classes = list(expl.classes_)
    if expl.desired_class == "opposite":  # binary: the class the query is not predicted
        k = 1 - int(np.argmax(expl.model_.predict_proba(x[None, :])[0]))
    else:
        k = classes.index(expl.desired_class)
    proba = expl.model_.predict_proba(P)[:, k]
    ok = proba >= expl.threshold
    if expl.plausibility:
        ok &= expl.isolation_forest_.predict(P) == 1
    P = P[ok]
    if len(P) == 0:
        return set(), P
    allc = _oracle_costs(Xtrain, x, P, categorical)
    C = np.column_stack([allc[o] for o in expl.objectives])
    keep = _nondominated(C)
    return {tuple(np.round(c, 9)) for c in C[keep]}, P


def _returned(expl, res, i):
    rows = res.for_query(i).to_numpy(dtype=float)
    C = res.costs.loc[np.asarray(res.counterfactuals["query"]) == i, list(expl.objectives)]
    return rows, C.to_numpy()


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=300, n_features=4, n_informative=3, n_redundant=0,
                               random_state=1)
    X[:, 3] = np.round(X[:, 3] * 2)  # an integer column
    return X, y


MODELS = {
    "gbm": lambda: GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0),
    "forest": lambda: RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0),
    "logistic": lambda: make_pipeline(StandardScaler(), LogisticRegression()),
    "mlp": lambda: MLPClassifier(hidden_layer_sizes=(8,), max_iter=300, random_state=0),
    "lightgbm": lambda: pytest.importorskip("lightgbm").LGBMClassifier(
        n_estimators=15, num_leaves=7, min_child_samples=5, n_jobs=1, verbose=-1,
        random_state=0),
    "xgboost": lambda: pytest.importorskip("xgboost").XGBClassifier(
        n_estimators=15, max_depth=3, n_jobs=1, random_state=0),
}


@pytest.mark.parametrize("plausibility", [True, False])
@pytest.mark.parametrize("name", list(MODELS))
def test_front_equals_enumeration(data, name, plausibility):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MODELS[name]().fit(X, y)
    expl = P2CERecourse(FrozenEstimator(model), grid_step=0.25, max_changes=2,
                        plausibility=plausibility, contamination=0.15, n_estimators=25,
                        random_state=0, shap_samples=20).fit(X)
    expected_bound = {"gbm": "tree", "forest": "tree", "logistic": "linear", "mlp": "none",
                      "lightgbm": "tree", "xgboost": "tree"}
    assert expl.bound_ == expected_bound[name]
    queries = X[model.predict(X) == 0][:6]
    res = expl.explain(queries)
    n_nonempty = 0
    for i, x in enumerate(queries):
        front, _ = _brute_front(expl, X, x)
        rows, C = _returned(expl, res, i)
        got = {tuple(np.round(c, 9)) for c in C}
        assert got == front, (name, i)
        assert len(got) == len(C)  # one point per cost vector
        n_nonempty += bool(front)
        # returned costs are the oracle's costs of the returned points
        oc = _oracle_costs(X, x, rows)
        np.testing.assert_allclose(C, np.column_stack([oc[o] for o in expl.objectives]),
                                   rtol=1e-12, atol=1e-12)
    assert n_nonempty >= 2


@pytest.mark.parametrize("plausibility", [True, False])
def test_scoring_ahead_changes_the_model_calls_only(data, monkeypatch, plausibility):
    # on a model without a reconstruction the search scores the children of open nodes
    # ahead, in the model calls it makes anyway: the same fronts, costs and counters (but
    # model_rows) as without, in fewer calls of the model
    import sklearn_xai.recourse._p2ce as p2ce_module

    X, y = data
    model = MODELS["mlp"]().fit(X, y)
    queries = X[model.predict(X) == 0][:4]
    out = {}
    for ahead in (0, 64):
        monkeypatch.setattr(p2ce_module, "_MODEL_SCORE_AHEAD", ahead)
        expl = P2CERecourse(FrozenEstimator(model), grid_step=0.1, max_changes=3,
                            plausibility=plausibility, contamination=0.15, n_estimators=25,
                            random_state=0).fit(X)
        calls = []
        fn = expl.model_fn_

        def counted(Z, fn=fn, calls=calls):
            calls.append(len(Z))
            return fn(Z)

        monkeypatch.setattr(expl, "model_fn_", counted)
        res = expl.explain(queries)
        out[ahead] = (res, len(calls))
    (res0, calls0), (res1, calls1) = out[0], out[64]
    pd.testing.assert_frame_equal(res0.counterfactuals, res1.counterfactuals)
    pd.testing.assert_frame_equal(res0.costs, res1.costs)
    strip = [{k: v for k, v in c.items() if k != "model_rows"} for c in res0.extras["counters"]]
    assert strip == [{k: v for k, v in c.items() if k != "model_rows"}
                     for c in res1.extras["counters"]]
    assert res0.extras["nodes_expanded"].sum() > 50
    assert calls1 < 0.8 * calls0


def test_returned_points_respect_constraints(data):
    X, y = data
    model = GradientBoostingClassifier(n_estimators=15, random_state=0).fit(X, y)
    expl = P2CERecourse(FrozenEstimator(model), grid_step=0.2, max_changes=2,
                        immutable_features=[0], monotone={1: 1, 3: -1},
                        contamination=0.1, n_estimators=25, random_state=0,
                        shap_samples=20).fit(X)
    queries = X[model.predict(X) == 0][:6]
    res = expl.explain(queries)
    assert res.found.sum() >= 3
    q = np.asarray(res.counterfactuals["query"])
    P = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    x = queries[q]
    assert np.all(model.predict_proba(P)[:, 1] >= 0.5)
    np.testing.assert_allclose(res.predictions, model.predict_proba(P)[:, 1])
    assert np.all(expl.isolation_forest_.predict(P) == 1)
    assert np.all(P[:, 0] == x[:, 0])
    assert np.all(P[:, 1] >= x[:, 1]) and np.all(P[:, 3] <= x[:, 3])
    assert np.all((P != x).sum(axis=1) <= 2)
    for i in range(len(queries)):
        C = res.costs.loc[q == i, list(expl.objectives)].to_numpy()
        for a in range(len(C)):
            for b in range(len(C)):
                if a != b:
                    assert not np.all(C[a] <= C[b])  # no weak domination inside a front
    # with the monotone constraint the brute force over the one-sided grid agrees
    for i, xq in enumerate(queries):
        front, _ = _brute_front(expl, X, xq)
        got = {tuple(np.round(c, 9)) for c in
               res.costs.loc[q == i, list(expl.objectives)].to_numpy()}
        assert got == front


def test_isolation_forest_and_tree_bound_match_oracles(data):
    X, y = data
    expl = P2CERecourse(FrozenEstimator(GradientBoostingClassifier(
        n_estimators=10, random_state=0).fit(X, y)), n_estimators=30, random_state=3,
        shap_samples=10).fit(X)
    flat = FlatIsolationForest(expl.isolation_forest_)
    # bit-identical scores
    np.testing.assert_array_equal(flat.score_samples(X),
                                  expl.isolation_forest_.score_samples(X))
    # look-ahead = exact max over the completions (no budget): compare with enumeration
    x = X[0]
    values, _ = expl.grid_.candidates(x)
    n_cand = np.array([len(v) for v in values])
    cand = np.zeros((4, n_cand.max()))
    for j in range(4):
        cand[j, : n_cand[j]] = values[j]
    from sklearn.ensemble._iforest import _average_path_length

    gbm = expl.model_.estimator
    ens, _ = parse_tree_model(gbm)
    query = TreeBound(ens, 0, 1.0, "logistic", np.arange(4)).for_query(
        candidate_rows(cand, n_cand), n_cand)
    prepared = flat.prepare(cand, n_cand)
    for open_set in [(1, 2), (0, 3), (0, 1, 2)]:
        is_open = np.zeros(4, dtype=bool)
        is_open[list(open_set)] = True
        lists = [values[j] if is_open[j] else [x[j]] for j in range(4)]
        P = np.array(list(itertools.product(*lists)))
        # per tree, the longest path over the completions (scikit-learn's own trees)
        per_tree = []
        for est in expl.isolation_forest_.estimators_:
            leaves = est.apply(P.astype(np.float32))
            depth = np.asarray(est.decision_path(P.astype(np.float32)).sum(axis=1)).ravel() - 1
            apl = _average_path_length(est.tree_.n_node_samples[leaves])
            per_tree.append((depth + apl).max())
        H = flat.max_reach(x, is_open, prepared)
        assert H == pytest.approx(sum(per_tree), rel=1e-12)
        assert H >= flat.path_sums(P).max()
        # and may_have_inlier agrees with the exact decision
        possible, _ = flat.may_have_inlier(x, is_open, prepared)
        exact_best = flat._score(np.array([sum(per_tree)]))[0]
        assert possible == (exact_best >= flat.offset_)
        # tree bound: sum over trees of each tree's largest output over the completions
        raw = gbm._raw_predict_init(P[:1])[0, 0] + sum(
            gbm.learning_rate * est[0].predict(P).max() for est in gbm.estimators_)
        index = np.zeros(4, dtype=np.int64)
        ub = query.upper(x, index, is_open, 0.5, exact=True)
        assert ub == pytest.approx(1 / (1 + np.exp(-raw)), abs=1e-8)
        assert ub >= gbm.predict_proba(P)[:, 1].max()


def test_categorical_and_pandas(data):
    X, y = data
    rng = np.random.default_rng(0)
    df = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    df["colour"] = pd.Categorical(rng.choice(["red", "green", "blue"], size=len(df)))
    yy = (y.astype(bool) | (df["colour"] == "red").to_numpy() & (df["a"] > 0)).astype(int)
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    model = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["colour"]), remainder="passthrough"),
        GradientBoostingClassifier(n_estimators=15, random_state=0)).fit(df, yy)
    expl = P2CERecourse(FrozenEstimator(model), grid_step=0.25, max_changes=2,
                        n_estimators=25, contamination=0.1, random_state=0,
                        shap_samples=20).fit(df)
    assert expl.grid_.categorical.tolist() == [False, False, False, True]
    queries = df[model.predict(df) == 0].iloc[:4]
    res = expl.explain(queries)
    assert isinstance(res.counterfactuals, pd.DataFrame)
    assert list(res.counterfactuals.columns) == ["a", "b", "c", "colour", "query"]
    assert isinstance(res.counterfactuals["colour"].dtype, pd.CategoricalDtype)
    cfs = res.counterfactuals.drop(columns="query")
    assert np.all(model.predict_proba(cfs)[:, 1] >= 0.5)
    # brute force over the categorical value set too
    cats = np.asarray(df["colour"].cat.categories)
    for i in range(len(queries)):
        xq = queries.iloc[i]
        lists = []
        for j, name in enumerate(["a", "b", "c"]):
            lists.append(list(np.union1d(expl.grid_.grids[j], [xq[name]])))
        lists.append(list(cats))
        rows = list(itertools.product(*lists))
        cand = pd.DataFrame(rows, columns=["a", "b", "c", "colour"])
        cand["colour"] = pd.Categorical(cand["colour"], categories=cats)
        base = queries.iloc[[i]]
        nchg = (cand[["a", "b", "c"]].to_numpy() != base[["a", "b", "c"]].to_numpy()).sum(1) \
            + (cand["colour"].astype(str).to_numpy() != str(xq["colour"]))
        cand = cand[nchg <= 2].reset_index(drop=True)
        ok = model.predict_proba(cand)[:, 1] >= 0.5
        Zc = cand[["a", "b", "c"]].to_numpy()
        codes = cand["colour"].cat.codes.to_numpy().astype(float)
        Zfull = np.column_stack([Zc, codes])
        ok &= expl.isolation_forest_.predict(Zfull) == 1
        Zq = np.r_[base[["a", "b", "c"]].to_numpy()[0],
                   float(list(cats).index(xq["colour"]))]
        Ztrain = np.column_stack([df[["a", "b", "c"]].to_numpy(),
                                  df["colour"].cat.codes.to_numpy().astype(float)])
        allc = _oracle_costs(Ztrain, Zq, Zfull[ok], categorical=(3,))
        C = np.column_stack([allc[o] for o in expl.objectives])
        front = {tuple(np.round(c, 9)) for c in C[_nondominated(C)]} if len(C) else set()
        got = {tuple(np.round(c, 9)) for c in res.costs.loc[
            np.asarray(res.counterfactuals["query"]) == i, list(expl.objectives)].to_numpy()}
        assert got == front
    out = expl.set_output(transform="pandas").transform(queries)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["a", "b", "c", "colour"]


def test_seeds_reproduce_and_pickle(data):
    X, y = data
    model = FrozenEstimator(LogisticRegression().fit(X, y))
    q = X[model.predict(X) == 0][:3]
    kw = {"grid_step": 0.2, "n_estimators": 20, "shap_samples": 15}
    a = P2CERecourse(model, random_state=7, **kw).fit(X).explain(q)
    b = P2CERecourse(model, random_state=7, **kw).fit(X).explain(q)
    pd.testing.assert_frame_equal(a.counterfactuals, b.counterfactuals)
    e = P2CERecourse(model, random_state=7, n_jobs=2, **kw).fit(X)
    c = e.explain(q)
    pd.testing.assert_frame_equal(a.counterfactuals, c.counterfactuals)
    # batch_size: queries per task under n_jobs (here three tasks of one query)
    d = P2CERecourse(model, random_state=7, n_jobs=2, batch_size=1, **kw).fit(X).explain(q)
    pd.testing.assert_frame_equal(a.counterfactuals, d.counterfactuals)
    e2 = pickle.loads(pickle.dumps(e))
    pd.testing.assert_frame_equal(e2.explain(q).counterfactuals, a.counterfactuals)
    t = e.transform(q)
    assert t.shape == q.shape
    s = e.score(q)
    assert -0.5 <= s <= 1.0


def test_transform_picks_fewest_changes(data):
    X, y = data
    model = FrozenEstimator(LogisticRegression().fit(X, y))
    e = P2CERecourse(model, grid_step=0.2, n_estimators=20, shap_samples=15,
                     random_state=0).fit(X)
    q = X[model.predict(X) == 0][:5]
    res = e.explain(q)
    t = e.transform(q)
    for i in range(len(q)):
        C = res.costs.loc[np.asarray(res.counterfactuals["query"]) == i]
        if len(C) == 0:
            assert np.isnan(t[i]).all()
            continue
        assert (t[i] != q[i]).sum() == C["n_changes"].min()


def test_bad_input(data):
    X, y = data
    model = FrozenEstimator(LogisticRegression().fit(X, y))
    with pytest.raises(ValueError, match="objectives"):
        P2CERecourse(model, objectives=("speed",)).fit(X)
    with pytest.raises(ValueError, match="desired_class"):
        P2CERecourse(model, desired_class=5).fit(X)
    with pytest.raises(ValueError, match="immutable_features"):
        P2CERecourse(model, immutable_features=[9]).fit(X)
    with pytest.raises(ValueError, match="monotone"):
        P2CERecourse(model, monotone={0: 2}).fit(X)
    with pytest.raises(ValueError, match="bound='exact'"):
        P2CERecourse(FrozenEstimator(MLPClassifier(max_iter=5).fit(X, y)),
                     bound="exact").fit(X)
    with pytest.raises(ValueError, match="grid_percentiles"):
        P2CERecourse(model, grid_percentiles=(50, 10)).fit(X)
    with pytest.raises(ValueError, match="trained model"):
        P2CERecourse(LogisticRegression()).fit(X)
    e = P2CERecourse(model, n_estimators=10, shap_samples=10).fit(X)
    with pytest.raises(ValueError, match="features"):
        e.explain(X[:2, :3])
    Xn = X[:2].copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        e.explain(Xn)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        P2CERecourse(model).explain(X[:2])


def test_time_limit_stops_cleanly(data):
    X, y = data
    model = FrozenEstimator(MLPClassifier(hidden_layer_sizes=(8,), max_iter=300,
                                          random_state=0).fit(X, y))
    e = P2CERecourse(model, grid_step=0.05, max_changes=4, n_estimators=10,
                     shap_samples=10, time_limit=1e-4, random_state=0).fit(X)
    q = X[model.predict(X) == 0][:2]
    with pytest.warns(UserWarning, match="may be partial"):
        res = e.explain(q)
    assert not res.extras["complete"].any()
    assert np.all(res.valid)


def test_shap_bound_is_labelled_heuristic(data):
    X, y = data
    model = FrozenEstimator(MLPClassifier(hidden_layer_sizes=(8,), max_iter=300,
                                          random_state=0).fit(X, y))
    e = P2CERecourse(model, bound="shap", grid_step=0.25, n_estimators=20, shap_samples=20,
                     random_state=0).fit(X)
    assert e.bound_ == "shap" and all(b.kind == "heuristic" for b in e._bound_obj_.values())
    q = X[model.predict(X) == 0][:2]
    res = e.explain(q)
    assert res.extras["bound"] == "shap"
    assert np.all(res.valid) and np.all(res.costs["inlier"])


@pytest.mark.parametrize("name", ["gbm", "logistic"])
def test_desired_first_class_matches_enumeration(data, name):
    X, y = data
    model = MODELS[name]().fit(X, y)
    expl = P2CERecourse(FrozenEstimator(model), desired_class=0, threshold=0.6,
                        grid_step=0.25, max_changes=2, contamination=0.1, n_estimators=20,
                        random_state=0, shap_samples=15).fit(X)
    assert expl.bound_ in ("tree", "linear")
    queries = X[model.predict_proba(X)[:, 0] < 0.6][:4]
    res = expl.explain(queries)
    assert np.all(model.predict_proba(
        res.counterfactuals.drop(columns="query").to_numpy(float))[:, 0] >= 0.6)
    for i, x in enumerate(queries):
        front, _ = _brute_front(expl, X, x)
        _, C = _returned(expl, res, i)
        assert {tuple(np.round(c, 9)) for c in C} == front


MULTICLASS = {
    "gbm": lambda: GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0),
    "lightgbm": lambda: pytest.importorskip("lightgbm").LGBMClassifier(
        n_estimators=10, num_leaves=7, min_child_samples=5, n_jobs=1, verbose=-1,
        random_state=0),
    "xgboost": lambda: pytest.importorskip("xgboost").XGBClassifier(
        n_estimators=10, max_depth=3, n_jobs=1, random_state=0),
}


@pytest.fixture(scope="module")
def data3():
    X, y = make_classification(n_samples=300, n_features=4, n_informative=3, n_redundant=0,
                               n_classes=3, n_clusters_per_class=1, random_state=2)
    X[:, 3] = np.round(X[:, 3] * 2)
    return X, y


@pytest.mark.parametrize("name", list(MULTICLASS))
def test_multiclass_boosting_bound_never_loses_a_solution(data3, name):
    X, y = data3
    model = MULTICLASS[name]().fit(X, y)
    expl = P2CERecourse(FrozenEstimator(model), desired_class=2, threshold=0.5, grid_step=0.25,
                        max_changes=2, contamination=0.1, n_estimators=20, random_state=0,
                        shap_samples=15).fit(X)
    assert expl.bound_ == "tree"
    assert type(expl._bound_obj_[2]).__name__ == "SoftmaxTreeBound"
    queries = X[model.predict_proba(X)[:, 2] < 0.5][:5]
    res = expl.explain(queries)
    n_nonempty = 0
    for i, x in enumerate(queries):
        front, _ = _brute_front(expl, X, x)
        _, C = _returned(expl, res, i)
        assert {tuple(np.round(c, 9)) for c in C} == front, (name, i)
        n_nonempty += bool(front)
    assert n_nonempty >= 2
    assert sum(c["pruned_bound"] for c in res.extras["counters"]) > 0  # the bound prunes


def test_softmax_bound_is_an_upper_bound_of_every_completion(data3):
    X, y = data3
    model = MULTICLASS["gbm"]().fit(X, y)
    expl = P2CERecourse(FrozenEstimator(model), desired_class=1, grid_step=0.25,
                        random_state=0, shap_samples=15).fit(X)
    bound = expl._bound_obj_[1]
    rng = np.random.default_rng(0)
    grid = expl.grid_
    for x in X[:8]:
        values, _ = grid.candidates(x)
        n_cand = np.array([len(v) for v in values])
        cand = np.zeros((X.shape[1], n_cand.max()))
        for j, v in enumerate(values):
            cand[j, : len(v)] = v
        query = bound.for_query(candidate_rows(cand, n_cand), n_cand)
        for _ in range(3):
            is_open = rng.random(X.shape[1]) < 0.5
            ub = query.upper(x, np.zeros(X.shape[1], dtype=np.int64), is_open, 0.5)
            lists = [values[j] if is_open[j] else [x[j]] for j in range(X.shape[1])]
            P = np.array(list(itertools.product(*lists)), dtype=float)
            best = model.predict_proba(P)[:, 1].max()
            assert ub >= best - 1e-12


def test_one_hot_pipeline_orders_features_by_tree_shap():
    # TreeSHAP explains the pipeline in its input columns: one importance per input column
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], 300),
                      "a": rng.normal(size=300), "b": rng.normal(size=300)})
    y = ((X["colour"] == "red") ^ (X["a"] > 0)).astype(int)
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["colour"]), remainder="passthrough"),
        RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0)).fit(X, y)
    p2ce = P2CERecourse(FrozenEstimator(model), random_state=0, shap_samples=40).fit(X)
    assert p2ce.importance_method_ == "tree_shap"
    assert p2ce.feature_importances_.shape == (3,)
    assert p2ce.feature_importances_[2] < min(p2ce.feature_importances_[:2])


def test_the_tree_bound_of_a_lightgbm_sigmoid_slope_keeps_the_front():
    # sigmoid=2: the bound scales the margin by the slope; fronts equal the model's path
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + X[:, 1] - X[:, 2] > 0).astype(int)
    model = lgb.LGBMClassifier(n_estimators=20, sigmoid=2.0, verbose=-1).fit(X, y)
    rows = X[model.predict(X) == 0][:5]
    bounded = P2CERecourse(FrozenEstimator(model), max_changes=2, random_state=0).fit(X)
    plain = P2CERecourse(FrozenEstimator(model), max_changes=2, bound="none",
                         random_state=0).fit(X)
    assert bounded.bound_ == "tree"
    a, b = bounded.explain(rows), plain.explain(rows)
    pd.testing.assert_frame_equal(a.counterfactuals, b.counterfactuals)
    pd.testing.assert_frame_equal(a.costs, b.costs)
