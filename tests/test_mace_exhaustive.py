"""MaceRecourse answers what can be answered: the exhaustive stage against enumeration.

Oracle: brute-force enumeration, over the same grid of allowed values of the mutable
features (the training values at 21 quantiles per continuous feature, every category), of
every row changing at most ``max_changes`` features; whenever it finds a row the model
predicts as the desired class, MACE must return a counterfactual (found rate 1.0), and
every counterfactual must be re-predicted as the desired class and respect the
constraints. Also: the stage that answered each query, missing values, the settings
dataclass and row-invariant seeding.
"""

import dataclasses
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from sklearn_xai.recourse import MaceRecourse
from sklearn_xai.recourse._search import MaceSettings, _level_chunks, _level_size

N_POINTS = 21  # 2 * n_bins + 1 quantiles for the default n_bins=10


# ----------------------------------------------------------------------------- oracle
def _grid(train):
    """Allowed values per column: 21 quantiles (observed values) or every category."""
    grid = {}
    for c in train.columns:
        col = train[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            grid[c] = list(col.cat.categories)
        else:
            v = np.quantile(col.dropna(), np.linspace(0, 1, N_POINTS), method="inverted_cdf")
            grid[c] = list(np.unique(v))
    return grid


def _enumerate(model, train, queries, desired, immutable=(), monotone=None, max_changes=8):
    """Per query: does any row of the grid (at most ``max_changes`` changes) flip it?"""
    monotone = monotone or {}
    grid = _grid(train)
    found = []
    for _, x in queries.iterrows():
        options = []
        for c in train.columns:
            v = [] if c in immutable else [g for g in grid[c] if g != x[c]]
            if monotone.get(c) == "increase":
                v = [g for g in v if g > x[c]]
            options.append([x[c]] + v)
        rows = pd.DataFrame(list(itertools.product(*options)), columns=train.columns)
        rows = rows.astype(train.dtypes.to_dict())
        n_changed = (rows.to_numpy(dtype=object) != x.to_numpy(dtype=object)).sum(axis=1)
        rows = rows[(n_changed >= 1) & (n_changed <= max_changes)]
        found.append(bool((model.predict(rows) == desired).any()))
    return np.asarray(found)


def _check_counterfactuals(model, res, queries, immutable=(), monotone=None):
    cfs = res.counterfactuals.drop(columns="query")
    q = queries.reset_index(drop=True).iloc[res.counterfactuals["query"]].reset_index(drop=True)
    np.testing.assert_array_equal(model.predict(cfs), np.asarray(res.costs["desired_class"]))
    for c in immutable:
        assert (cfs[c].astype(str).to_numpy() == q[c].astype(str).to_numpy()).all()
    for c, how in (monotone or {}).items():
        sign = 1 if how == "increase" else -1
        assert (sign * (cfs[c].to_numpy() - q[c].to_numpy()) >= 0).all()


# -------------------------------------------------------------------------- problems
def _bands(seed=1, n=800):
    """x0 immutable; class 1 needs x1 in two narrow bands when x0 > 0.5, or x1 in a middle
    band *and* x2 > 0.8 when x0 <= 0.5: the desired-class neighbours of a query with
    x0 <= 0.5 are mostly of the other branch, and no single change helps it."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(np.round(rng.random((n, 3)), 3), columns=["x0", "x1", "x2"])
    a = ((X.x1 > 0.05) & (X.x1 < 0.15)) | ((X.x1 > 0.85) & (X.x1 < 0.95))
    b = (X.x1 > 0.45) & (X.x1 < 0.55) & (X.x2 > 0.8)
    y = (((X.x0 > 0.5) & a) | ((X.x0 <= 0.5) & b)).astype(int).to_numpy()
    return X, y, {"immutable": ["x0"], "monotone": None}


def _mixed_bands(seed, n=800):
    """The same idea with a categorical feature and a monotone one (x1 may only rise)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x0": np.round(rng.random(n), 3), "x1": np.round(rng.random(n), 3),
                      "c": pd.Categorical(rng.choice(list("pqrs"), n)),
                      "x2": np.round(rng.random(n), 3)})
    a = ((X.x1 > 0.05) & (X.x1 < 0.15)) | ((X.x1 > 0.85) & (X.x1 < 0.95))
    b = (X.c == "s") & (X.x2 > 0.45) & (X.x2 < 0.55) & (X.x1 > 0.6)
    y = (((X.x0 > 0.5) & a) | ((X.x0 <= 0.5) & b)).astype(int).to_numpy()
    return X, y, {"immutable": ["x0"], "monotone": {"x1": "increase"}}


def _tree():
    return DecisionTreeClassifier(random_state=0)


def _gbm():
    return GradientBoostingClassifier(n_estimators=50, max_depth=3, random_state=0)


def _one_hot(est):
    return make_pipeline(
        ColumnTransformer([("oh", OneHotEncoder(), ["c"])], remainder="passthrough"), est)


CASES = {
    "bands-tree": (lambda: _bands(1), _tree),
    "bands-gbm": (lambda: _bands(1), _gbm),
    "mixed-tree": (lambda: _mixed_bands(1), lambda: _one_hot(_tree())),
    "mixed-gbm": (lambda: _mixed_bands(3), lambda: _one_hot(_gbm())),
}


@pytest.mark.parametrize("method", ["rl", "gld"])
@pytest.mark.parametrize("case", list(CASES))
def test_found_wherever_enumeration_finds(case, method):
    make_data, make_model = CASES[case]
    X, y, constraints = make_data()
    model = make_model().fit(X, y)
    queries = X[(model.predict(X) == 0) & (X.x0 <= 0.5)].iloc[:30]
    expected = _enumerate(model, X, queries, 1, **constraints)
    assert expected.sum() >= 20  # the oracle answers most queries on this grid
    mace = MaceRecourse(FrozenEstimator(model), method=method, random_state=0,
                        immutable_features=constraints["immutable"],
                        monotone=constraints["monotone"]).fit(X)
    res = mace.explain(queries)
    missed = np.flatnonzero(expected & ~res.found)
    assert missed.size == 0, f"enumeration answers queries {missed.tolist()}, MACE does not"
    _check_counterfactuals(model, res, queries, constraints["immutable"],
                           constraints["monotone"])
    # every query has its stage; "none" exactly for the unanswered ones
    stage = res.extras["stage"]
    assert ((stage == "none") == ~res.found).all()
    assert set(stage) <= {method, "greedy", "nearest_unlike", "none"} | {
        f"exhaustive_{k}" for k in range(1, 5)}


# ---------------------------------------------------------------------- the stage itself
def _rule_model(n_features=4, seed=0):
    """A tree for: class 1 iff x0 > 0.8 and x1 > 0.8 (4 uniform features)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((3000, n_features)), 3)
    y = ((X[:, 0] > 0.8) & (X[:, 1] > 0.8)).astype(int)
    return X, DecisionTreeClassifier(random_state=0).fit(X, y)


@pytest.mark.parametrize("x1_range", [None, (0.9, 0.95)])
def test_exhaustive_answers_when_no_neighbour_exists(x1_range):
    # MACE is fitted on rows the model never predicts as class 1: no desired-class
    # neighbour, no candidate, no fallback -- only the exhaustive stage can answer
    X, model = _rule_model()
    fit_rows = X[model.predict(X) == 0]
    queries = X[(X[:, 0] > 0.85) & (X[:, 1] < 0.5)][:5]  # one change (x1) suffices
    mace = MaceRecourse(FrozenEstimator(model), random_state=0,
                        feature_ranges=None if x1_range is None else {1: x1_range},
                        monotone={2: "decrease"}).fit(fit_rows)
    res = mace.explain(queries)
    assert res.found.all()
    assert (res.extras["stage"] == "exhaustive_1").all()
    stages = res.extras["stages"]
    assert (stages["exhaustive_levels"] == 1).all()
    assert (stages["exhaustive_skipped_level"] == 0).all()
    cf = res.counterfactuals.drop(columns="query").to_numpy(dtype=np.float64)
    np.testing.assert_array_equal(model.predict(cf), 1)
    # the best counterfactual changes only x1 and is at least as close as the closest
    # valid grid value in the range (refinement may bring it closer, not out of range)
    grid = np.unique(np.quantile(fit_rows[:, 1], np.linspace(0, 1, N_POINTS),
                                 method="inverted_cdf"))
    lo, hi = x1_range or (-np.inf, np.inf)
    grid = grid[(grid >= lo) & (grid <= hi)]
    first = np.unique(res.counterfactuals["query"], return_index=True)[1]
    for i, x in enumerate(queries):
        best = cf[first[i]]
        assert (best[[0, 2, 3]] == x[[0, 2, 3]]).all()
        rows = np.repeat(x[None, :], grid.size, axis=0)
        rows[:, 1] = grid
        ok = grid[model.predict(rows) == 1]
        assert max(lo, 0.8) < best[1] <= ok.min()
    assert (cf[:, 1] >= lo).all() and (cf[:, 1] <= hi).all()


def test_exhaustive_levels_enumerate_each_row_once():
    x = np.array([0.5, 1.0, 2.0, -1.0, 3.0])
    cols = [0, 2, 3, 4]
    values = [np.array([0.1, 0.2]), np.array([5.0, 6.0, 7.0]), np.array([9.0]),
              np.array([4.0, 8.0])]
    for k in range(1, 5):
        chunks = list(_level_chunks(x, cols, values, k, chunk_rows=5))
        rows = np.vstack([c[0] for c in chunks])
        expected = set()
        for subset in itertools.combinations(range(4), k):
            for vals in itertools.product(*[values[i] for i in subset]):
                r = x.copy()
                r[[cols[i] for i in subset]] = vals
                expected.add(tuple(r))
        assert len(rows) == len(expected) == _level_size([2, 3, 1, 2], k)
        assert {tuple(r) for r in rows} == expected
        assert ((rows != x).sum(axis=1) == k).all()
        biggest = max(np.prod([len(values[i]) for i in s])
                      for s in itertools.combinations(range(4), k))
        assert all(len(c[0]) <= max(5, biggest) for c in chunks)


def test_exhaustive_pairs_and_the_row_cap():
    X, model = _rule_model()
    fit_rows = X[model.predict(X) == 0]
    queries = X[(X[:, 0] < 0.5) & (X[:, 1] < 0.5)][:4]  # two changes needed
    res = MaceRecourse(FrozenEstimator(model), random_state=0).fit(fit_rows).explain(queries)
    assert res.found.all()
    assert (res.extras["stage"] == "exhaustive_2").all()
    assert (res.counterfactuals.drop(columns="query").to_numpy()[:, :2] > 0.8).all()

    # 30 features: the pairs level has C(30, 2) * 20**2 rows or so, above the cap -> the
    # query is reported unanswered, with a warning and the skipped level in extras
    X30, model30 = _rule_model(n_features=30)
    fit30 = X30[model30.predict(X30) == 0]
    q30 = X30[(X30[:, 0] < 0.5) & (X30[:, 1] < 0.5)][:1]
    mace = MaceRecourse(FrozenEstimator(model30), random_state=0).fit(fit30)
    with pytest.warns(UserWarning, match="stopped before 2 changed features"):
        res = mace.explain(q30)
    assert not res.found.any()
    assert res.extras["stage"][0] == "none"
    row = res.extras["stages"].iloc[0]
    assert row["exhaustive_levels"] == 1 and row["exhaustive_skipped_level"] == 2
    # the reported size is the number of rows changing exactly two features
    sizes = [np.sum(g != q30[0, j]) for j, g in enumerate(mace.grid_)]
    expected = sum(a * b for a, b in itertools.combinations(sizes, 2))
    assert row["exhaustive_skipped_rows"] == expected > MaceSettings().exhaustive_max_rows
    assert res.extras["stats"]["n_model_rows"] < 2000  # level 1 only, no pair evaluated


# ----------------------------------------------------------------------- missing values
def _nan_problem(seed=0, n=1500):
    """HistGradientBoosting on data with missing values: a missing ``income`` counts
    against class 1, so some queries need it replaced by a value."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.integers(20, 70, n).astype(np.float64),
                      "income": np.round(rng.gamma(2.0, 20.0, n), 1),
                      "city": pd.Categorical(rng.choice(["A", "B", "C"], n)),
                      "hours": np.round(rng.uniform(10, 60, n), 1)})
    X.loc[rng.random(n) < 0.25, "income"] = np.nan
    X.loc[rng.random(n) < 0.15, "hours"] = np.nan
    city = X["city"].astype(object).where(rng.random(n) > 0.1)  # 10% missing
    X["city"] = pd.Categorical(city, categories=["A", "B", "C"])
    score = (0.05 * (X.age - 45) + 0.04 * (X.income.fillna(0) - 30)
             + 1.0 * (X.city == "A") + 0.03 * (X.hours.fillna(20) - 35))
    y = (score + rng.normal(0, 0.2, n) > 0).astype(int).to_numpy()
    model = HistGradientBoostingClassifier(max_iter=60, random_state=0).fit(X, y)
    return X, y, model


@pytest.mark.parametrize("method", ["rl", "gld"])
def test_missing_values_are_kept_or_filled_never_introduced(method):
    X, _, model = _nan_problem()
    pred = model.predict(X)
    has_nan = X.isna().any(axis=1).to_numpy()
    queries = X[(pred == 0) & has_nan].iloc[:25]
    assert queries["income"].isna().sum() >= 5 and queries["city"].isna().sum() >= 2
    mace = MaceRecourse(FrozenEstimator(model), method=method, random_state=0).fit(X)
    res = mace.explain(queries)
    assert res.found.all()
    cfs = res.counterfactuals.drop(columns="query")
    np.testing.assert_array_equal(model.predict(cfs), 1)
    assert (cfs.dtypes == X.dtypes).all()
    q = queries.reset_index(drop=True).iloc[res.counterfactuals["query"]].reset_index(drop=True)
    cf_nan, q_nan = cfs.isna().to_numpy(), q.isna().to_numpy()
    assert not (cf_nan & ~q_nan).any()  # never a new missing value
    assert (cf_nan & q_nan).any()  # kept where it was ...
    assert (~cf_nan & q_nan).any()  # ... or replaced by a value
    # n_changed counts a kept missing value as unchanged, a filled one as changed
    changed = (~cf_nan & q_nan) | ((cfs.astype(object).to_numpy() != q.astype(object)
                                    .to_numpy()) & ~cf_nan & ~q_nan)
    np.testing.assert_array_equal(res.costs["n_changed"], changed.sum(axis=1))


def test_missing_values_refused_for_a_model_without_nan_support():
    X, y, _ = _nan_problem()
    Xf = X.drop(columns="city").fillna(0.0)
    lr = LogisticRegression(max_iter=1000).fit(Xf, y)
    with pytest.raises(ValueError, match="NaN in column 'income'"):
        MaceRecourse(FrozenEstimator(lr)).fit(X.drop(columns="city"))
    mace = MaceRecourse(FrozenEstimator(lr), random_state=0).fit(Xf)
    with pytest.raises(ValueError, match="NaN in column 'income'"):
        mace.explain(X.drop(columns="city").iloc[:5].assign(income=np.nan))


# ----------------------------------------------------------------------------- settings
def test_settings_are_a_frozen_dataclass_built_from_the_parameters():
    mace = MaceRecourse(method="gld", n_counterfactuals=2, max_changes=3, refine="bisection",
                        diversity_cap=None, fill=False, sparsity_weight=0.5,
                        posthoc_sparsity=False, fallback="greedy", column_selection="votes",
                        n_feature_columns=4)
    s = mace._settings()
    assert isinstance(s, MaceSettings)
    assert (s.method, s.n_counterfactuals, s.max_changes, s.refine, s.diversity_cap,
            s.fill, s.sparsity_weight, s.sparsify, s.fallback, s.column_selection,
            s.n_feature_columns) == ("gld", 2, 3, "bisection", None, False, 0.5, False,
                                     False, "votes", 4)
    assert MaceRecourse(refine=True)._settings().refine == "both"
    assert MaceRecourse(refine=False)._settings().refine == "none"
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.method = "rl"
    with pytest.raises(ValueError, match="refine must be"):
        MaceSettings(refine="all")


# ------------------------------------------------------------------- row-invariant seeds
def test_a_row_does_not_depend_on_the_other_rows_of_the_call():
    X, y, _ = _mixed_bands(1)
    model = _one_hot(_gbm()).fit(X, y)
    queries = X[model.predict(X) == 0].iloc[:4].reset_index(drop=True)
    mace = MaceRecourse(FrozenEstimator(model), n_counterfactuals=2, random_state=3).fit(X)
    full = mace.explain(queries)

    def rows_of(res, i):
        return res.for_query(i).reset_index(drop=True)

    alone = mace.explain(queries.iloc[[3]])
    pd.testing.assert_frame_equal(rows_of(alone, 0), rows_of(full, 3))
    # reversed, and next to a copy of itself
    block = pd.concat([queries.iloc[::-1], queries.iloc[[2]]], ignore_index=True)
    other = mace.explain(block)
    for i in range(4):
        pd.testing.assert_frame_equal(rows_of(other, 3 - i), rows_of(full, i))
    pd.testing.assert_frame_equal(rows_of(other, 4), rows_of(full, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mace.set_params(batch_size=2).explain(queries).counterfactuals.equals(
            full.counterfactuals)
