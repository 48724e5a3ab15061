"""MaceRecourse: validity, constraints, dtypes, determinism, errors (fast)."""

import itertools
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_iris, make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder
from sklearn.svm import LinearSVC

from sklearn_xai.recourse import MaceRecourse
from sklearn_xai.recourse import _metrics as M


def _mixed(n=400, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 70, n),
            "income": rng.gamma(2.0, 20.0, n),
            "color": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
            "city": rng.choice(["A", "B", "C", "D"], n).astype(object),
            "sex": pd.Categorical(rng.choice(["F", "M"], n)),
        }
    )
    score = (
        0.08 * (df["age"] - 40)
        + 0.04 * (df["income"] - 40)
        + 1.5 * (df["color"] == "red")
        - 1.0 * (df["city"] == "D")
        + 0.5 * (df["sex"] == "M")
    )
    y = (score + rng.normal(0, 0.3, n) > 0).astype(int).to_numpy()
    pre = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), ["color", "city", "sex"])],
        remainder="passthrough",
    )
    model = make_pipeline(pre, LogisticRegression(max_iter=2000)).fit(df, y)
    return df, y, model


@pytest.fixture(scope="module")
def mixed():
    return _mixed()


def _queries(df, model, cls=0, n=8):
    pred = model.predict(df)
    return df[pred == cls].iloc[:n]


def _check_valid(model, res, array=False):
    cfs = res.counterfactuals.drop(columns="query")
    if array:
        cfs = cfs.to_numpy(dtype=np.float64)
    desired = np.asarray(res.costs["desired_class"])
    if len(cfs):
        np.testing.assert_array_equal(model.predict(cfs), desired)
    assert res.valid.all()


@pytest.mark.parametrize("method", ["rl", "gld"])
def test_every_counterfactual_is_valid_and_dtypes_kept(mixed, method):
    df, _, model = mixed
    Q = _queries(df, model)
    mace = MaceRecourse(FrozenEstimator(model), method=method, random_state=0).fit(df)
    res = mace.explain(Q)
    _check_valid(model, res)
    assert res.found.all()
    cfs = res.counterfactuals.drop(columns="query")
    assert list(cfs.columns) == list(df.columns)
    assert (cfs.dtypes == df.dtypes).all()
    assert cfs["color"].cat.categories.tolist() == df["color"].cat.categories.tolist()
    # at most n_counterfactuals per query, distinct, each different from its query
    counts = res.counterfactuals["query"].value_counts()
    assert counts.max() <= 3
    assert counts.mean() >= 2
    for i in range(len(Q)):
        rows = res.for_query(i)
        assert not rows.duplicated().any()
        assert all(len(c) >= 1 for c in res.diff(i))
    # the costs the explainer reports agree with the metric functions
    assert res.costs["n_changed"].mean() == pytest.approx(M.sparsity(res))
    assert M.validity(res, model) == 1.0
    assert M.found_rate(res) == 1.0


def test_constraints_hold(mixed):
    df, _, model = mixed
    Q = _queries(df, model, n=10)
    mace = MaceRecourse(
        FrozenEstimator(model),
        immutable_features=["sex", "city"],
        monotone={"age": "increase"},
        feature_ranges={"income": (0.0, 60.0), "color": ["red", "blue"]},
        random_state=1,
    ).fit(df)
    res = mace.explain(Q)
    _check_valid(model, res)
    assert res.found.mean() >= 0.8
    cf = res.counterfactuals
    q = Q.reset_index(drop=True).iloc[cf["query"]].reset_index(drop=True)
    assert (cf["sex"].astype(str).to_numpy() == q["sex"].astype(str).to_numpy()).all()
    assert (cf["city"].to_numpy() == q["city"].to_numpy()).all()
    assert (cf["age"].to_numpy() >= q["age"].to_numpy()).all()
    inc_changed = cf["income"].to_numpy() != q["income"].to_numpy()
    assert (cf["income"].to_numpy()[inc_changed] <= 60.0).all()
    col_changed = cf["color"].astype(str).to_numpy() != q["color"].astype(str).to_numpy()
    assert set(cf["color"].astype(str).to_numpy()[col_changed]) <= {"red", "blue"}


def test_all_immutable_is_refused_at_fit(mixed):
    # no feature may change: no query could be answered, so fit says so
    df, _, model = mixed
    with pytest.raises(ValueError, match="No feature may change"):
        MaceRecourse(FrozenEstimator(model), immutable_features=list(df.columns),
                     random_state=0).fit(df)


def test_minimal_change_matches_brute_force():
    # a rule model: class 1 iff x0 > 0.5 and x2 > 0.5; queries miss only one condition
    rng = np.random.default_rng(0)
    X = rng.random((500, 4))
    y = ((X[:, 0] > 0.5) & (X[:, 2] > 0.5)).astype(int)
    from sklearn.tree import DecisionTreeClassifier

    model = DecisionTreeClassifier(random_state=0).fit(X, y)
    pred = model.predict(X)
    Q = X[(pred == 0) & (X[:, 0] > 0.6)][:6]
    mace = MaceRecourse(FrozenEstimator(model), random_state=0).fit(X)
    res = mace.explain(Q)
    _check_valid(model, res, array=True)
    # brute force: the smallest set of features whose values from any class-1 training row
    # flips the query
    pos = X[pred == 1]
    for i, x in enumerate(Q):
        best = None
        for size in range(1, 5):
            for S in itertools.combinations(range(4), size):
                R = np.repeat(x[None], len(pos), axis=0)
                R[:, S] = pos[:, S]
                if (model.predict(R) == 1).any():
                    best = size
                    break
            if best:
                break
        first = res.for_query(i).to_numpy()[0]
        assert (first != x).sum() == best


def test_small_class_and_multiclass():
    X, y = load_iris(return_X_y=True)
    # a class with 4 rows, fewer than n_neighbors=30
    keep = np.r_[np.flatnonzero(y != 2), np.flatnonzero(y == 2)[:4]]
    Xs, ys = X[keep], y[keep]
    model = LogisticRegression(max_iter=2000).fit(Xs, ys)
    mace = MaceRecourse(FrozenEstimator(model), random_state=0).fit(Xs)
    pred = model.predict(Xs)
    assert min(len(mace.index_rows_[c]) for c in mace.index_rows_) < 30
    Q = Xs[pred == 0][:4]
    res = mace.explain(Q)
    _check_valid(model, res, array=True)
    # multi-class, "opposite": counterfactuals for each other class of each query
    got = set(zip(res.counterfactuals["query"], res.costs["desired_class"]))
    classes_found = {c for _, c in got}
    assert classes_found <= {1, 2}
    assert {1} <= classes_found
    assert all(isinstance(d, tuple) and set(d) == {1, 2} for d in res.desired)
    # one named class
    res1 = MaceRecourse(FrozenEstimator(model), desired_class=1, random_state=0).fit(Xs).explain(Q)
    _check_valid(model, res1, array=True)
    assert res1.found.all()
    assert set(res1.costs["desired_class"]) == {1}
    with pytest.raises(ValueError, match="desired_class"):
        MaceRecourse(FrozenEstimator(model), desired_class=7).fit(Xs).explain(Q)


def test_min_proba_margin(mixed):
    df, _, model = mixed
    Q = _queries(df, model, n=5)
    res = MaceRecourse(FrozenEstimator(model), min_proba=0.8, random_state=0).fit(df).explain(Q)
    _check_valid(model, res)
    cfs = res.counterfactuals.drop(columns="query")
    assert (model.predict_proba(cfs)[:, 1] >= 0.8).all()
    np.testing.assert_allclose(res.predictions, model.predict_proba(cfs)[:, 1])


def test_same_seed_same_output_any_n_jobs_and_batch(mixed):
    df, _, model = mixed
    Q = _queries(df, model, n=6)
    a = MaceRecourse(FrozenEstimator(model), random_state=3, batch_size=64).fit(df)
    b = MaceRecourse(FrozenEstimator(model), random_state=3, batch_size=2, n_jobs=2).fit(df)
    pd.testing.assert_frame_equal(a.explain(Q).to_frame(), b.explain(Q).to_frame())
    c = MaceRecourse(FrozenEstimator(model), random_state=4).fit(df)
    assert c.explain(Q).to_frame().shape[1] == a.explain(Q).to_frame().shape[1]


def test_exact_neighbors_and_pickle(mixed):
    df, _, model = mixed
    Q = _queries(df, model, n=4)
    mace = MaceRecourse(FrozenEstimator(model), neighbors="exact", random_state=0).fit(df)
    res = mace.explain(Q)
    _check_valid(model, res)
    again = pickle.loads(pickle.dumps(mace))
    pd.testing.assert_frame_equal(again.explain(Q).to_frame(), res.to_frame())
    hnsw = pickle.loads(pickle.dumps(MaceRecourse(FrozenEstimator(model), random_state=0).fit(df)))
    _check_valid(model, hnsw.explain(Q))


def test_transform_and_score(mixed):
    df, _, model = mixed
    Q = _queries(df, model, n=5)
    mace = MaceRecourse(FrozenEstimator(model), random_state=0).fit(df)
    res = mace.explain(Q)
    T = mace.transform(Q)
    assert T.shape == Q.shape
    first = res.counterfactuals.groupby("query").head(1).drop(columns="query")
    cols = list(df.columns)
    assert (pd.DataFrame(T, columns=cols).astype(str).values == first.astype(str).values).all()
    s = mace.score(Q)
    q = np.asarray(res.counterfactuals["query"])
    _, idx = np.unique(q, return_index=True)
    expected = res.found.mean() - 0.1 * res.costs["proximity"].to_numpy()[idx].mean()
    assert s == pytest.approx(expected)
    assert s <= 1.0


def test_xgboost_model():
    xgb = pytest.importorskip("xgboost")
    X, y = make_classification(n_samples=300, n_features=6, random_state=0)
    model = xgb.XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1).fit(X, y)
    mace = MaceRecourse(FrozenEstimator(model), method="gld", random_state=0).fit(X)
    Q = X[model.predict(X) == 1][:5]
    res = mace.explain(Q)
    _check_valid(model, res, array=True)
    assert res.found.all()


def test_skorch_mlp():
    torch = pytest.importorskip("torch")
    skorch = pytest.importorskip("skorch")
    torch.manual_seed(0)
    X, y = make_classification(n_samples=300, n_features=5, random_state=1)

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
            )

        def forward(self, x):
            return self.net(x)

    net = skorch.NeuralNetClassifier(
        MLP, max_epochs=15, lr=0.1, criterion=torch.nn.CrossEntropyLoss, verbose=0,
        train_split=None,
    )
    model = make_pipeline(FunctionTransformer(lambda a: a.astype(np.float32)), net)
    model.fit(X, y.astype(np.int64))
    mace = MaceRecourse(FrozenEstimator(model), random_state=0).fit(X)
    Q = X[model.predict(X) == 0][:4]
    res = mace.explain(Q)
    _check_valid(model, res, array=True)
    assert res.found.all()


def test_bad_input(mixed):
    df, _, model = mixed
    mace = MaceRecourse(FrozenEstimator(model), random_state=0).fit(df)
    bad = df.iloc[:2].copy()
    bad["city"] = ["A", "Z"]
    with pytest.raises(ValueError, match="unknown category 'Z'"):
        mace.explain(bad)
    with pytest.raises(ValueError, match="columns|feature names"):
        mace.explain(df.iloc[:2, ::-1])
    with pytest.raises(ValueError):
        mace.explain(df.drop(columns="city").iloc[:2])
    X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    svc = LinearSVC().fit(X, y)
    with pytest.raises(TypeError, match="predict_proba"):
        MaceRecourse(FrozenEstimator(svc)).fit(X)
    with pytest.raises(ValueError, match="immutable_features.*'nope'"):
        MaceRecourse(FrozenEstimator(model), immutable_features=["nope"]).fit(df)
    with pytest.raises(ValueError, match="monotone"):
        MaceRecourse(FrozenEstimator(model), monotone={"city": "increase"}).fit(df)
    with pytest.raises(ValueError, match="FrozenEstimator"):
        MaceRecourse(model).fit(df)


def test_metrics_against_hand_computation():
    from sklearn_xai._explanation import Counterfactuals

    queries = pd.DataFrame({"a": [0.0, 1.0], "c": pd.Categorical(["x", "y"])})
    cfs = pd.DataFrame(
        {"query": [0, 0, 1], "a": [2.0, 0.0, 1.0], "c": pd.Categorical(["x", "y", "x"])}
    )
    res = Counterfactuals(
        queries=queries,
        counterfactuals=cfs,
        predictions=np.ones(3),
        valid=np.array([True, True, False]),
        costs=None,
        found=np.array([True, True]),
        desired=np.array([1, 1], dtype=object),
    )
    assert M.sparsity(res) == pytest.approx((1 + 1 + 1) / 3)
    assert M.validity(res) == pytest.approx(2 / 3)
    assert M.found_rate(res) == 1.0
    # query 0's two CFs differ in both features -> 1.0; query 1 has one CF
    assert M.diversity(res) == pytest.approx(1.0)
    ref = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0, 4.0], "c": pd.Categorical(list("xyxyx"))})
    # MAD of a over ref = 1 -> costs 2, 1, 1 (a change of 2, two category changes)
    assert M.proximity(res, ref) == pytest.approx((2 + 1 + 1) / 3)

    class Rule:
        def predict(self, X):
            return (np.asarray(X["a"], dtype=float) >= 1).astype(int)

    # CF0 (a=2,c=x): changed a; revert gives a=0 -> 0: not redundant.
    # CF1 (a=0,c=y): changed c; revert keeps a=0 -> 0: not redundant (desired 1).
    # CF2 (a=1,c=x) of query 1: changed c; revert keeps a=1 -> 1: redundant.
    assert M.redundancy(res, Rule()) == pytest.approx(1 / 3)
    # yNN by brute force: distance^2 = (category mismatch) + (delta a / MAD)^2, MAD = 1
    lab = Rule().predict(ref)
    mism = []
    for _, row in cfs.iterrows():
        d2 = (ref["a"] - row["a"]) ** 2 + (ref["c"].astype(str) != row["c"]).astype(float)
        nn = np.argsort(d2.to_numpy(), kind="stable")[:2]
        mism.extend(lab[nn] != 1)
    assert M.ynn(res, Rule(), ref, n_neighbors=2) == pytest.approx(1 - np.mean(mism))


def test_grid_search_over_settings(mixed):
    from sklearn.model_selection import GridSearchCV

    df, _, model = mixed
    base = MaceRecourse(
        FrozenEstimator(model), refine=False, n_counterfactuals=1, random_state=0
    )
    # the train folds build the indexes, the test folds are explained and scored
    search = GridSearchCV(base, {"n_neighbors": [5, 30]}, cv=2).fit(df.iloc[:60])
    assert np.isfinite(search.best_score_)
    assert search.best_params_["n_neighbors"] in (5, 30)


def test_reinforce_gradient_matches_finite_differences():
    from sklearn_xai.recourse._search import _rl_loss_grad

    rng = np.random.default_rng(0)
    s, mmax, B = 4, 3, 7
    mask = np.ones((s, mmax), dtype=bool)
    mask[1, 2] = False
    mask[3, 1:] = False  # a column with a single value
    theta = rng.normal(size=s)
    phi = np.where(mask, rng.normal(size=(s, mmax)), 0.0)
    sel = rng.random((B, s)) < 0.5
    sel[:, 0] = False  # column 0 never selected in this batch
    ch = np.minimum(rng.integers(0, mmax, (B, s)), mask.sum(axis=1)[None, :] - 1)
    r = rng.normal(size=B)
    loss, g_theta, g_phi = _rl_loss_grad(theta, phi, mask, sel, ch, r, 2.0, 2.0)
    eps = 1e-6
    for i in range(s):
        d = np.zeros(s)
        d[i] = eps
        num = (
            _rl_loss_grad(theta + d, phi, mask, sel, ch, r, 2.0, 2.0)[0]
            - _rl_loss_grad(theta - d, phi, mask, sel, ch, r, 2.0, 2.0)[0]
        ) / (2 * eps)
        assert g_theta[i] == pytest.approx(num, rel=1e-5, abs=1e-7)
    for i, k in zip(*np.nonzero(mask)):
        d = np.zeros((s, mmax))
        d[i, k] = eps
        num = (
            _rl_loss_grad(theta, phi + d, mask, sel, ch, r, 2.0, 2.0)[0]
            - _rl_loss_grad(theta, phi - d, mask, sel, ch, r, 2.0, 2.0)[0]
        ) / (2 * eps)
        assert g_phi[i, k] == pytest.approx(num, rel=1e-5, abs=1e-7)
    # an unselected column's value logits get no gradient (masked log-probabilities)
    assert np.all(g_phi[0] == 0)


def _regression(n=400, seed=0):
    df, _, _ = _mixed(n, seed)
    rng = np.random.default_rng(seed + 1)
    y = (0.05 * df["age"] + 0.03 * df["income"] + 1.5 * (df["color"] == "red")
         - 1.0 * (df["city"] == "D") + rng.normal(0, 0.2, n)).to_numpy()
    from sklearn.ensemble import HistGradientBoostingRegressor

    pre = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), ["color", "city", "sex"])],
        remainder="passthrough",
    )
    model = make_pipeline(pre, HistGradientBoostingRegressor(max_iter=60, random_state=0))
    return df, y, model.fit(df, y)


def test_regressor_with_desired_range():
    df, y, model = _regression()
    pred = model.predict(df)
    lo, hi = np.quantile(pred, [0.7, 0.9])
    mace = MaceRecourse(FrozenEstimator(model), desired_range=(lo, hi), immutable_features=["sex"],
                        random_state=0).fit(df)
    assert list(mace.classes_) == [False, True]
    Q = df[(pred < lo) | (pred > hi)].iloc[:8]
    inside = df[(pred >= lo) & (pred <= hi)].iloc[:2]
    res = mace.explain(pd.concat([Q, inside]))
    assert res.found[:8].mean() >= 0.75
    assert not res.found[8:].any()  # already inside: nothing to find
    assert list(res.desired[:8]) == [(lo, hi)] * 8 and res.desired[8] is None
    cfs = res.counterfactuals.drop(columns="query")
    values = model.predict(cfs)
    # every returned point re-predicted by the model lies in the range, and the reported
    # predictions are the model's own values
    assert np.all((values >= lo) & (values <= hi))
    np.testing.assert_allclose(res.predictions, values)
    q = res.counterfactuals["query"].to_numpy()
    np.testing.assert_array_equal(cfs["sex"].astype(str).to_numpy(),
                                  pd.concat([Q, inside])["sex"].astype(str).to_numpy()[q])
    # an open-ended range works too
    res2 = MaceRecourse(FrozenEstimator(model), desired_range=(hi, np.inf),
                        random_state=0).fit(df).explain(Q.iloc[:3])
    assert np.all(model.predict(res2.counterfactuals.drop(columns="query")) >= hi)


def test_regressor_errors():
    df, y, model = _regression(200)
    with pytest.raises(TypeError, match="desired_range"):
        MaceRecourse(FrozenEstimator(model)).fit(df)
    with pytest.raises(ValueError, match="low <= high"):
        MaceRecourse(FrozenEstimator(model), desired_range=(3.0, 1.0)).fit(df)
    with pytest.raises(ValueError, match="pair"):
        MaceRecourse(FrozenEstimator(model), desired_range=("a", "b")).fit(df)
    with pytest.raises(ValueError, match="desired_class"):
        MaceRecourse(FrozenEstimator(model), desired_range=(0, 1), desired_class=1).fit(df)
    dfc, yc, clf = _mixed(200)
    with pytest.raises(ValueError, match="for regressors"):
        MaceRecourse(FrozenEstimator(clf), desired_range=(0, 1)).fit(dfc)
