"""P2CERecourse: exact bounds on native categoricals, through column-wise pipelines, and
missing values. Oracle: every grid point with at most ``max_changes`` changes, predicted by
the model's own ``predict_proba``; the fronts with ``bound="exact"`` must equal it and the
unpruned search (``bound="none"``)."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer, make_column_transformer
from sklearn.decomposition import PCA
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
)

from sklearn_xai.recourse import P2CERecourse
from sklearn_xai.recourse._p2ce_models import FlatIsolationForest, candidate_rows


# ----------------------------------------------------------------------------- oracle
def _grid_query(expl, x):
    """The fitted explainer's tree bound fixed to query ``x`` (internal encoding), with
    its candidate table (d, most candidates) and candidate counts (d,)."""
    values, _ = expl.grid_.candidates(x)
    n_cand = np.array([len(v) for v in values])
    cand = np.zeros((len(values), n_cand.max()))
    for j, v in enumerate(values):
        cand[j, : len(v)] = v
    query = expl._recon_[1].for_query(expl._to_space(candidate_rows(cand, n_cand)), n_cand)
    return query, cand, n_cand


def _internal(frame):
    """DataFrame -> float matrix: category columns as codes (NaN missing)."""
    cols = []
    for c in frame.columns:
        col = frame[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy().astype(float)
            codes[codes < 0] = np.nan
            cols.append(codes)
        else:
            cols.append(col.to_numpy(dtype=float, na_value=np.nan))
    return np.column_stack(cols)


def _to_frame(Z, template):
    """Inverse of :func:`_internal` with the template's columns and dtypes."""
    out = {}
    for j, c in enumerate(template.columns):
        dt = template[c].dtype
        if isinstance(dt, pd.CategoricalDtype):
            codes = np.where(np.isnan(Z[:, j]), -1, Z[:, j]).astype(int)
            out[c] = pd.Categorical.from_codes(codes, dtype=dt)
        else:
            out[c] = Z[:, j]
    return pd.DataFrame(out)


def _costs(Ztrain, x, P, categorical, objectives):
    """Costs from their definitions: std-scaled change, overlap distance for categories
    and for a changed missing value, mid-rank CDF over the observed training values."""
    n_feat = len(x)
    both = np.isnan(P) & np.isnan(x)
    changed = (P != x) & ~both
    delta = np.zeros(P.shape)
    pct = np.zeros(P.shape)
    for j in range(n_feat):
        col = Ztrain[:, j][~np.isnan(Ztrain[:, j])]
        if j in categorical or np.isnan(x[j]):
            delta[:, j] = pct[:, j] = changed[:, j]
            continue
        sd = col.std()
        delta[:, j] = np.abs(P[:, j] - x[j]) / (sd if sd > 0 else 1.0)

        def F(v, col=col):
            return ((col < v).sum() + (col <= v).sum()) / (2 * len(col))

        pct[:, j] = [abs(F(v) - F(x[j])) for v in P[:, j]]
    allc = {"max_distance": delta.max(axis=1), "n_changes": changed.sum(axis=1) * 1.0,
            "mean_distance": delta.mean(axis=1), "l2": np.sqrt((delta**2).sum(axis=1)),
            "percentile": pct.max(axis=1)}
    return np.column_stack([allc[o] for o in objectives])


def _pareto(C):
    keep = [i for i, c in enumerate(C)
            if not np.any(np.all(C <= c, axis=1) & np.any(C < c, axis=1))]
    return {tuple(np.round(c, 9)) for c in C[keep]}


def _oracle_front(expl, model, Ztrain, x, categorical, to_input):
    """Pareto cost vectors of every valid inlier grid point with <= max_changes changes."""
    grid = expl.grid_
    lists = []
    for j in range(len(x)):
        observed = Ztrain[:, j][~np.isnan(Ztrain[:, j])]
        values = list(np.unique(observed)) if j in categorical else list(grid.grids[j])
        if grid.immutable[j]:
            lists.append([x[j]])
        elif np.isnan(x[j]):
            lists.append([x[j]] + values)  # a missing value: kept or moved to a value
        else:
            lists.append(sorted(set(values) | {x[j]}))
    P = np.array(list(itertools.product(*lists)), dtype=float)
    changes = ((P != x) & ~(np.isnan(P) & np.isnan(x))).sum(axis=1)
    P = P[changes <= expl.max_changes]
    if expl.desired_class == "opposite":  # binary: the class the query is not predicted
        k = 1 - int(np.argmax(model.predict_proba(to_input(x[None, :]))[0]))
    else:
        k = list(model.classes_).index(expl.desired_class)
    ok = model.predict_proba(to_input(P))[:, k] >= expl.threshold
    if expl.plausibility:
        ok &= expl.isolation_forest_.predict(P) == 1
    if not ok.any():
        return set()
    return _pareto(_costs(Ztrain, x, P[ok], categorical, expl.objectives))


def _fronts(res, objectives):
    q = np.asarray(res.counterfactuals["query"])
    C = res.costs[list(objectives)].to_numpy()
    return [{tuple(np.round(c, 9)) for c in C[q == i]} for i in range(res.n_queries)]


def _check_exact(model, X, queries, categorical, to_input, Ztrain, Zq, **kw):
    """Fronts of bound='exact' == bound='none' == enumeration; returns the exact result."""
    params = {"grid_step": 0.25, "max_changes": 2, "contamination": 0.1,
              "n_estimators": 25, "random_state": 0, "shap_samples": 20}
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exact = P2CERecourse(FrozenEstimator(model), bound="exact", **params).fit(X)
        none = P2CERecourse(FrozenEstimator(model), bound="none", **params).fit(X)
        res_e, res_n = exact.explain(queries), none.explain(queries)
    fe, fn = _fronts(res_e, exact.objectives), _fronts(res_n, none.objectives)
    n_nonempty = 0
    for i in range(len(Zq)):
        oracle = _oracle_front(exact, model, Ztrain, Zq[i], categorical, to_input)
        assert fe[i] == oracle, i
        assert fn[i] == oracle, i
        n_nonempty += bool(oracle)
    assert n_nonempty >= 2
    assert np.all(res_e.valid)
    return exact, res_e


def _has_categorical_splits(model):
    from sklearn_xai.tree import parse_model

    ens, _ = parse_model(model[-1] if hasattr(model, "steps") else model)
    return bool(np.any(ens.mode[ens.children_left >= 0] == 3))  # MODE_CAT


def _no_new_missing(res, queries):
    cf = res.counterfactuals
    q = np.asarray(cf["query"])
    for c in queries.columns:
        cf_missing = cf[c].isna().to_numpy()
        query_missing = queries[c].isna().to_numpy()[q]
        assert not np.any(cf_missing & ~query_missing), c


# ----------------------------------------------------------------------------- data
@pytest.fixture(scope="module")
def mixed():
    """Two categorical columns (one with missing values) and three numeric ones."""
    rng = np.random.default_rng(0)
    n = 600
    colour = rng.choice(["red", "green", "blue", "grey"], size=n)
    shape = rng.choice(["round", "square", "flat"], size=n).astype(object)
    shape[rng.random(n) < 0.15] = np.nan
    a, b = rng.normal(size=n), rng.normal(size=n)
    c = np.round(rng.normal(size=n) * 2)
    score = a + 0.8 * b + 1.2 * (colour == "red") - (shape == "flat") + 0.3 * c
    y = (score + 0.5 * rng.normal(size=n) > 0.6).astype(int)
    X = pd.DataFrame({"colour": pd.Categorical(colour), "shape": pd.Categorical(shape),
                      "a": a, "b": b, "c": c})
    return X, y


@pytest.fixture(scope="module")
def adult_small():
    """The report's default model (_gbm_pipeline) on a small Adult sample, missing
    categories kept."""
    from sklearn_xai._report import _gbm_pipeline
    from sklearn_xai.datasets import load_adult

    X, y = load_adult(subset="train")
    cat = ["workclass", "occupation", "sex"]
    num = ["age", "education_num", "hours_per_week"]
    X, y = X[cat + num].iloc[:2500].reset_index(drop=True), y.iloc[:2500].to_numpy()
    model, _ = _gbm_pipeline(cat, num, "hgb", 0)
    model.set_params(gbm__max_iter=40)
    return X, y, model.fit(X, y)


# ----------------------------------------------------------------------------- tests
def test_report_default_model_is_exact(adult_small):
    """Ordinal encoder -> HistGradientBoosting(categorical_features): exact bound over the
    input grid, fronts equal the unpruned search and enumeration; missing categories in
    the queries are answered and never introduced."""
    X, y, model = adult_small
    assert _has_categorical_splits(model)
    Ztrain = _internal(X)
    rejected = X[model.predict(X) == 0]
    with_missing = rejected[rejected["workclass"].isna()].iloc[:2]
    queries = pd.concat([rejected[rejected["workclass"].notna()].iloc[:4], with_missing])
    assert queries["workclass"].isna().sum() == 2
    expl, res = _check_exact(model, X, queries, {0, 1, 2},
                             lambda P: _to_frame(P, X), Ztrain, _internal(queries),
                             immutable_features=["sex"])
    assert expl.bound_ == "tree"
    assert res.found[-2:].any()  # a row with missing values gets recourse
    _no_new_missing(res, queries)
    assert sum(c["pruned_bound"] for c in res.extras["counters"]) > 0


def test_hgb_native_categorical_exact(mixed):
    """HistGradientBoosting's own categorical (bitset) splits, on a DataFrame."""
    X, y = mixed
    model = HistGradientBoostingClassifier(max_iter=30, categorical_features="from_dtype",
                                           random_state=0).fit(X, y)
    assert _has_categorical_splits(model)
    queries = X[model.predict(X) == 0].iloc[:5]
    expl, res = _check_exact(model, X, queries, {0, 1}, lambda P: _to_frame(P, X),
                             _internal(X), _internal(queries))
    assert expl.bound_ == "tree"
    assert sum(c["pruned_bound"] for c in res.extras["counters"]) > 0


def test_hgb_integer_coded_categorical_exact(mixed):
    """Integer codes in a numeric array, declared categorical to both the model and P2CE."""
    X, y = mixed
    Z = _internal(X)
    model = HistGradientBoostingClassifier(max_iter=30, categorical_features=[0, 1],
                                           random_state=0).fit(Z, y)
    Zq = Z[model.predict(Z) == 0][:5]
    expl, _ = _check_exact(model, Z, Zq, {0, 1}, lambda P: P, Z, Zq,
                           categorical_features=[0, 1])
    assert expl.bound_ == "tree"


@pytest.mark.parametrize("final", ["logistic", "gbm", "hgb"])
def test_one_hot_pipeline_exact(mixed, final):
    """OneHotEncoder and StandardScaler in a ColumnTransformer before the model: the bound
    is taken over the input columns' grid."""
    X, y = mixed
    Xc = X.assign(shape=X["shape"].cat.add_categories("none").fillna("none"))
    clf = {"logistic": LogisticRegression(),
           "gbm": GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0),
           "hgb": HistGradientBoostingClassifier(max_iter=20, random_state=0)}[final]
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["colour", "shape"]),
                                (StandardScaler(), ["a", "b"]), remainder="passthrough"),
        clf).fit(Xc, y)
    queries = Xc[model.predict(Xc) == 0].iloc[:5]
    expl, res = _check_exact(model, Xc, queries, {0, 1}, lambda P: _to_frame(P, Xc),
                             _internal(Xc), _internal(queries))
    assert expl.bound_ == ("linear" if final == "logistic" else "tree")
    assert sum(c["pruned_bound"] for c in res.extras["counters"]) > 0


def test_lightgbm_categorical_with_missing_exact(mixed):
    """LightGBM's categorical splits and NaN routing in the search's kernel."""
    lgb = pytest.importorskip("lightgbm")
    X, y = mixed
    Z = _internal(X)
    Z[::9, 3] = np.nan  # missing values in a numeric column too
    model = lgb.LGBMClassifier(n_estimators=20, num_leaves=7, min_child_samples=5,
                               n_jobs=1, verbose=-1, random_state=0)
    model.fit(Z, y, categorical_feature=[0, 1])
    assert _has_categorical_splits(model)
    rej = np.flatnonzero(model.predict(Z) == 0)
    Zq = Z[np.r_[rej[:3], rej[np.isnan(Z[rej, 3]) | np.isnan(Z[rej, 1])][:3]]]
    assert np.isnan(Zq).any()
    expl, res = _check_exact(model, Z, Zq, {0, 1}, lambda P: P, Z, Zq,
                             categorical_features=[0, 1])
    assert expl.bound_ == "tree"
    P = res.counterfactuals.drop(columns="query").to_numpy(float)
    q = np.asarray(res.counterfactuals["query"])
    assert not np.any(np.isnan(P) & ~np.isnan(Zq[q]))


def test_missing_values_answered_and_kept_or_filled(mixed):
    """NaN in numeric and categorical query values, the model accepting them: answered;
    a counterfactual keeps each missing value or moves it to a grid value."""
    X, y = mixed
    Xn = X.copy()
    Xn.loc[::7, "a"] = np.nan
    model = HistGradientBoostingClassifier(max_iter=30, categorical_features="from_dtype",
                                           random_state=0).fit(Xn, y)
    rej = Xn[model.predict(Xn) == 0]
    queries = rej[rej["a"].isna() | rej["shape"].isna()].iloc[:5]
    assert queries["a"].isna().any() and queries["shape"].isna().any()
    expl, res = _check_exact(model, Xn, queries, {0, 1}, lambda P: _to_frame(P, Xn),
                             _internal(Xn), _internal(queries))
    assert res.found.sum() >= 3
    _no_new_missing(res, queries)
    # a filled missing value counts one change and distance 1 (overlap distance)
    cf = res.counterfactuals
    q = np.asarray(cf["query"])
    filled = cf["a"].notna().to_numpy() & queries["a"].isna().to_numpy()[q]
    if filled.any():
        assert np.all(res.costs["max_distance"].to_numpy()[filled] >= 1.0)


def test_missing_values_refused_when_the_model_refuses(mixed):
    X, y = mixed
    num = X[["a", "b", "c"]].to_numpy()
    model = FrozenEstimator(LogisticRegression().fit(num, y))
    expl = P2CERecourse(model, n_estimators=10, shap_samples=10, random_state=0).fit(num)
    q = num[:3].copy()
    q[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN.*'x2'.*LogisticRegression"):
        expl.explain(q)
    complete = X[["a", "b"]]
    frozen = FrozenEstimator(LogisticRegression().fit(complete, y))
    with pytest.raises(ValueError, match=r"NaN.*'a'.*Impute"):
        P2CERecourse(frozen, n_estimators=10).fit(
            complete.assign(a=X["a"].where(np.arange(len(X)) % 5 != 0)))


def test_isolation_forest_with_missing_values_matches_scikit_learn():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    X[rng.random(300) < 0.1, 1] = np.nan
    from sklearn.ensemble import IsolationForest

    iso = IsolationForest(n_estimators=20, random_state=0).fit(X)
    flat = FlatIsolationForest(iso)
    Q = X[:40].copy()
    Q[::3, 0] = np.nan
    np.testing.assert_array_equal(flat.score_samples(Q), iso.score_samples(Q))
    # look-ahead with a missing candidate: the exact max over the completions
    x = Q[0]
    values = [np.r_[np.nan, -1.0, 0.0, 1.0], np.array([x[1], 0.5, -0.5]), np.array([x[2]])]
    n_cand = np.array([len(v) for v in values])
    cand = np.zeros((3, n_cand.max()))
    for j, v in enumerate(values):
        cand[j, : len(v)] = v
    prepared = flat.prepare(cand, n_cand)
    from sklearn.ensemble._iforest import _average_path_length

    for is_open in ([True, False, False], [True, True, False], [False, True, False]):
        lists = [values[j] if is_open[j] else [x[j]] for j in range(3)]
        P = np.array(list(itertools.product(*lists)), dtype=np.float32)
        # per tree, the longest path over the completions (scikit-learn's own trees)
        longest = 0.0
        for est in iso.estimators_:
            depth = np.asarray(est.decision_path(P).sum(axis=1)).ravel() - 1
            leaves = est.apply(P)
            longest += (depth + _average_path_length(est.tree_.n_node_samples[leaves])).max()
        H = flat.max_reach(x, np.array(is_open), prepared)
        assert H == pytest.approx(longest, rel=1e-12)
        assert H >= flat.path_sums(P).max()


def test_mask_kernel_reproduces_the_pipeline(mixed):
    """Per-query evaluation on candidate indices equals the pipeline's predict_proba on
    every grid point, and the tree bound is the exact maximum over the completions."""
    X, y = mixed
    model = make_pipeline(
        ColumnTransformer([("cat", OrdinalEncoder(), ["colour", "shape"])],
                          remainder="passthrough"),
        HistGradientBoostingClassifier(max_iter=20, categorical_features=[0, 1],
                                       random_state=0)).fit(X, y)
    expl = P2CERecourse(FrozenEstimator(model), grid_step=0.25, n_estimators=10,
                        shap_samples=10, random_state=0).fit(X)
    assert expl.bound_ == "tree"
    Zq = _internal(X.iloc[:3])
    for x in Zq:
        query, cand, n_cand = _grid_query(expl, x)
        index = np.array(list(itertools.product(*[range(n) for n in n_cand])))
        P = cand[np.arange(5)[None, :], index]
        want = model.predict_proba(_to_frame(P, X))[:, 1]
        np.testing.assert_allclose(query.predict(P, index), want, rtol=0, atol=1e-12)
        for open_set in ([0, 1], [2, 3], [0, 2, 4]):
            is_open = np.zeros(5, dtype=bool)
            is_open[open_set] = True
            reach = np.all(index[:, ~is_open] == 0, axis=1)
            ub = query.upper(x, np.zeros(5, dtype=np.int64), is_open, 0.5, exact=True)
            assert ub >= want[reach].max() - 1e-12


def test_tree_bound_of_one_tree_is_the_maximum(mixed):
    """With a single tree the bound is the largest probability any completion reaches
    (the per-tree maxima of a larger ensemble are summed, an upper bound)."""
    X, y = mixed
    model = HistGradientBoostingClassifier(max_iter=1, max_leaf_nodes=12,
                                           categorical_features="from_dtype",
                                           random_state=0).fit(X, y)
    expl = P2CERecourse(FrozenEstimator(model), grid_step=0.25, n_estimators=10,
                        shap_samples=10, random_state=0).fit(X)
    assert expl.bound_ == "tree"
    for x in _internal(X.iloc[:3]):
        query, cand, n_cand = _grid_query(expl, x)
        index = np.array(list(itertools.product(*[range(n) for n in n_cand])))
        want = model.predict_proba(_to_frame(cand[np.arange(5)[None, :], index], X))[:, 1]
        for open_set in ([0, 1], [1, 3], [0, 2, 4]):
            is_open = np.zeros(5, dtype=bool)
            is_open[open_set] = True
            reach = np.all(index[:, ~is_open] == 0, axis=1)
            ub = query.upper(x, np.zeros(5, dtype=np.int64), is_open, 0.5, exact=True)
            assert ub == pytest.approx(want[reach].max(), abs=1e-8)


def test_linear_bound_is_exact_with_the_budget(mixed):
    X, y = mixed
    Xc = X.assign(shape=X["shape"].cat.add_categories("none").fillna("none"))
    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["colour", "shape"]),
                                                  remainder=StandardScaler()),
                          LogisticRegression()).fit(Xc, y)
    expl = P2CERecourse(FrozenEstimator(model), grid_step=0.25, n_estimators=10,
                        shap_samples=10, random_state=0).fit(Xc)
    assert expl.bound_ == "linear"
    x = _internal(Xc.iloc[:1])[0]
    query, cand, n_cand = _grid_query(expl, x)
    index = np.array(list(itertools.product(*[range(n) for n in n_cand])))
    P = cand[np.arange(5)[None, :], index]
    proba = model.predict_proba(_to_frame(P, Xc))[:, 1]
    is_open = np.array([True, True, False, True, True])
    for budget in (1, 2, 4):
        reach = np.all(index[:, ~is_open] == 0, axis=1) & ((index > 0).sum(1) <= budget)
        ub = query.upper(x, np.zeros(5, dtype=np.int64), is_open, 0.5, budget=budget)
        assert ub == pytest.approx(proba[reach].max(), abs=1e-8)


@pytest.mark.parametrize("step", [PCA(n_components=3),
                                  FunctionTransformer(lambda A: A[:, ::-1] * 1.0)])
def test_non_columnwise_preprocessing_gets_no_tree_bound(mixed, step):
    X, y = mixed
    num = X[["a", "b", "c"]].to_numpy()
    model = make_pipeline(step, GradientBoostingClassifier(n_estimators=10, random_state=0))
    model.fit(num, y)
    expl = P2CERecourse(FrozenEstimator(model), n_estimators=10, shap_samples=10,
                        random_state=0).fit(num)
    assert expl.bound_ == "none"
    with pytest.raises(ValueError, match="bound='exact'.*column-wise"):
        P2CERecourse(FrozenEstimator(model), bound="exact", n_estimators=10).fit(num)


def test_more_than_64_candidates(mixed):
    """A fine grid (over 64 candidates per feature: several mask words per node)."""
    X, y = mixed
    num = X[["a", "b", "c"]].to_numpy()
    model = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0)
    model.fit(num, y)
    Zq = num[model.predict(num) == 0][:3]
    expl, _ = _check_exact(model, num, Zq, set(), lambda P: P, num, Zq, grid_step=0.015)
    assert expl.bound_ == "tree"
    assert max(len(v) for v in expl.grid_.grids) > 64


@pytest.mark.parametrize("grid_step", [0.25, 0.015])
def test_single_feature_bound_is_the_largest_one_open_reach(mixed, grid_step):
    """With a budget of one change the tree bound is the largest over the open features
    of the exact reach with that feature alone open: equal to the bit to
    :func:`mask_max_reach` called once per feature, for any open set and starting
    candidates (one and several mask words per node), and its early stop at
    ``stop_above`` is on the same side."""
    X, y = mixed
    num = X[["a", "b", "c"]].to_numpy()
    model = GradientBoostingClassifier(n_estimators=15, max_depth=4, random_state=0)
    model.fit(num, y)
    expl = P2CERecourse(FrozenEstimator(model), grid_step=grid_step, n_estimators=10,
                        shap_samples=10, random_state=0).fit(num)
    assert expl.bound_ == "tree"
    rng = np.random.default_rng(0)
    for x in num[:4]:
        query, cand, n_cand = _grid_query(expl, x)
        forest, owner = query.model.forest, query.model.node_owner
        for _ in range(6):
            index = rng.integers(0, n_cand)
            is_open = rng.random(3) < 0.6
            each = []
            for j in np.flatnonzero(is_open):
                alone = np.zeros(3, dtype=bool)
                alone[j] = True
                each.append(forest.max_reach(index, alone, query.n_cand, owner, query.masks))
            want = max(each, default=-np.inf)
            got = forest.max_reach(index, is_open, query.n_cand, owner, query.masks,
                                   single=True)
            assert got == want
            if each:
                stop = want - 0.01 if rng.random() < 0.5 else want + 0.01
                early = forest.max_reach(index, is_open, query.n_cand, owner, query.masks,
                                         stop_above=stop, single=True)
                assert (early >= stop) == (want >= stop)
