"""Reliability of the recourse explainers and the neighbour index on hostile inputs.

Each test pins one failure found by the reliability audit: a crash inside compiled code,
an unclear error, or a silently wrong result (infinite distances or costs, non-finite
model outputs reported as valid).
"""

import math
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, _fit_context
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import sklearn_xai.neighbors as neighbors_module
from sklearn_xai.neighbors import NeighborIndex
from sklearn_xai.recourse import MaceRecourse, P2CERecourse


def _data(n=80, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def linear():
    X, y = _data()
    return X, y, LogisticRegression().fit(X, y)


# --------------------------------------------------------------- hnsw_params (finding 4)
@pytest.fixture
def no_faiss(monkeypatch):
    """Make any use of faiss fail loudly, so a missing validation cannot crash pytest."""

    def _refuse():
        raise AssertionError("faiss was reached with unvalidated HNSW settings")

    monkeypatch.setattr(neighbors_module, "_import_faiss", _refuse)


BAD_HNSW = [
    {"M": 1},  # segfaults inside faiss
    {"M": -1},  # wraps to a huge degree: tens of GB
    {"M": 10**12},  # does not fit faiss's C int
    {"M": 2.5},
    {"M": "8"},
    {"ef_construction": 0},
    {"ef_construction": -3},
    {"ef_search": 0},
    {"ef_search": None},
]
UNKNOWN_HNSW = [{"m": 8}, {"efSearch": 16}]  # e.g. faiss's own spelling


@pytest.mark.parametrize("params", BAD_HNSW + UNKNOWN_HNSW)
def test_mace_validates_hnsw_params_before_faiss(linear, no_faiss, params):
    X, _, clf = linear
    (key,) = params
    mace = MaceRecourse(FrozenEstimator(clf), hnsw_params=params)
    expected = rf"unknown key.*{key!r}" if params in UNKNOWN_HNSW else \
        re.escape(f"hnsw_params[{key!r}]")
    with pytest.raises(ValueError, match=expected):
        mace.fit(X)
    assert not hasattr(mace, "indexes_")


class _Outer(BaseEstimator):
    """An estimator whose fit builds a NeighborIndex while skipping nested validation."""

    _parameter_constraints = {"params": [dict]}

    def __init__(self, params=None):
        self.params = params

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X):
        return NeighborIndex(**self.params).fit(X)


@pytest.mark.parametrize("params", BAD_HNSW)
def test_neighbor_index_validates_the_same_settings(no_faiss, params):
    # NeighborIndex's own rules are the ones MACE applies (one place), also when its fit
    # runs inside another estimator's fit that skips nested validation
    (key,) = params
    with pytest.raises(ValueError, match=f"'{key}' parameter of NeighborIndex"):
        NeighborIndex(**params).fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=f"'{key}' parameter of NeighborIndex"):
        _Outer(params).fit(np.zeros((4, 2)))


def test_mace_good_hnsw_params_are_used(linear):
    X, _, clf = linear
    mace = MaceRecourse(FrozenEstimator(clf), hnsw_params={"M": 4, "ef_search": 8},
                        random_state=0).fit(X)
    assert all(ix.M == 4 and ix.ef_search == 8 for ix in mace.indexes_.values())
    res = mace.explain(X[:4])
    cfs = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    np.testing.assert_array_equal(clf.predict(cfs), res.costs["desired_class"])


def _with_category(X, y):
    """A frame with a string column the model ignores, and the model."""
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": np.array(["u", "v"] * (len(X) // 2),
                                                                 dtype=object)})
    model = make_pipeline(FunctionTransformer(lambda f: f[["a", "b"]].to_numpy()),
                          LogisticRegression()).fit(df, y)
    return df, model


@pytest.mark.parametrize("settings, match", [
    ({"feature_ranges": {0: (0.0, "high")}}, r"feature_ranges\[0\]"),
    ({"feature_ranges": {0: (np.nan, 1.0)}}, r"feature_ranges\[0\]"),
    ({"feature_ranges": {"c": "u"}}, r"feature_ranges\['c'\]"),
    ({"class_quantiles": (0.1, 1.5)}, "class_quantiles"),
    ({"class_quantiles": (np.nan,)}, "class_quantiles"),
])
def test_mace_other_settings_checked(linear, settings, match):
    X, y, clf = linear
    model, data = FrozenEstimator(clf), X
    if "'c'" in match:
        data, frame_model = _with_category(X, y)
        model = FrozenEstimator(frame_model)
    with pytest.raises(ValueError, match=match):
        MaceRecourse(model, **settings).fit(data)


# ---------------------------------------------------------- integer column names (8)
def test_p2ce_integer_column_names_like_an_array(linear):
    X, y, clf = linear
    frame_model = LogisticRegression().fit(pd.DataFrame(X), y)
    Q = X[y == 0][:3]
    from_array = P2CERecourse(FrozenEstimator(clf), random_state=0).fit(X).explain(Q)
    expl = P2CERecourse(FrozenEstimator(frame_model), random_state=0).fit(pd.DataFrame(X))
    # scikit-learn sets feature_names_in_ only for all-string column names
    assert not hasattr(expl, "feature_names_in_")
    assert expl.n_features_in_ == 3
    res = expl.explain(pd.DataFrame(Q))
    assert list(res.counterfactuals.columns[:3]) == [0, 1, 2]
    np.testing.assert_allclose(res.counterfactuals[[0, 1, 2]].to_numpy(dtype=float),
                               from_array.counterfactuals.iloc[:, :3].to_numpy(dtype=float))
    np.testing.assert_allclose(res.costs.to_numpy(dtype=float),
                               from_array.costs.to_numpy(dtype=float))
    assert res.valid.all() and res.found.any()
    on_array = P2CERecourse(FrozenEstimator(clf), random_state=0).fit(X)
    np.testing.assert_allclose(expl.transform(pd.DataFrame(Q)), on_array.transform(Q))
    # and, fitted on an array, such a frame is taken by position
    np.testing.assert_allclose(on_array.transform(pd.DataFrame(Q)), on_array.transform(Q))


def test_mace_integer_column_names_like_an_array(linear):
    X, y, clf = linear
    frame_model = LogisticRegression().fit(pd.DataFrame(X), y)
    Q = X[:5]
    a = MaceRecourse(FrozenEstimator(clf), random_state=0).fit(X).explain(Q)
    mace = MaceRecourse(FrozenEstimator(frame_model), random_state=0).fit(pd.DataFrame(X))
    assert not hasattr(mace, "feature_names_in_")
    b = mace.explain(pd.DataFrame(Q))
    assert list(b.counterfactuals.columns) == ["query", 0, 1, 2]
    np.testing.assert_allclose(b.counterfactuals[[0, 1, 2]].to_numpy(dtype=float),
                               a.counterfactuals.iloc[:, 1:].to_numpy(dtype=float))
    np.testing.assert_array_equal(frame_model.predict(b.counterfactuals[[0, 1, 2]]),
                                  b.costs["desired_class"])


# ------------------------------------------------------------ tiny / mixed data (12)
@pytest.mark.parametrize("n", [2, 3])
def test_p2ce_too_few_rows_for_the_isolation_forest(linear, n):
    X, _, clf = linear
    msg = rf"at least 4 rows.*max_samples=0\.25.*n_samples = {n}\."
    with pytest.raises(ValueError, match=msg):
        P2CERecourse(FrozenEstimator(clf), random_state=0).fit(X[:n])
    with pytest.raises(ValueError, match=r"at least 10 rows.*max_samples=0\.1"):
        P2CERecourse(FrozenEstimator(clf), max_samples=0.1).fit(X[:9])


def test_p2ce_smallest_fit_sets_work(linear):
    X, _, clf = linear
    # the boundary case of the message above, and a fraction that covers any row count
    for expl in (P2CERecourse(FrozenEstimator(clf), random_state=0).fit(X[:4]),
                 P2CERecourse(FrozenEstimator(clf), max_samples=1.0, random_state=0).fit(X[:2])):
        res = expl.explain(X[:3])
        # predictions: the probability of each query's desired class ("opposite")
        desired = 1 - clf.predict(X[:3])[res.counterfactuals["query"]]
        P = clf.predict_proba(res.counterfactuals.drop(columns="query").to_numpy(dtype=float))
        np.testing.assert_allclose(res.predictions, P[np.arange(len(P)), desired])


def test_mace_mixed_str_and_number_column_is_named():
    X, y = _data()
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1],
                       "mix": np.array(["u", 1, "v", 2.5] * 20, dtype=object)})
    model = make_pipeline(FunctionTransformer(lambda f: f[["a", "b"]].to_numpy()),
                          LogisticRegression()).fit(df, y)
    with pytest.raises(TypeError, match=r"'mix'.*strings and numbers"):
        MaceRecourse(FrozenEstimator(model)).fit(df)


# ------------------------------------------------------------ huge magnitudes (14)
def _oracle_dist(q, X):
    """Euclidean distances of ``q`` to the rows of ``X`` in float64, rescaled so nothing
    overflows."""
    s = max(np.abs(q).max(), np.abs(X).max())
    return s * np.sqrt((((q - X) / s) ** 2).sum(axis=1)) if s > 0 else np.zeros(len(X))


def _oracle_knn(X, Q, k):
    dist = np.array([_oracle_dist(q, X) for q in Q])
    idx = np.argsort(dist, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(dist, idx, axis=1), idx


@pytest.mark.parametrize("method", ["hnsw", "exact"])
@pytest.mark.parametrize("scale", [1e20, 1e300])
def test_neighbor_index_huge_values(method, scale):
    X = np.random.default_rng(0).normal(size=(60, 3))
    dist, idx = NeighborIndex(method).fit(X * scale).kneighbors(X[:6] * scale, 4)
    ref_d, ref_i = _oracle_knn(X, X[:6], 4)  # distances scale with the data
    assert np.isfinite(dist).all()
    np.testing.assert_array_equal(idx, ref_i)
    # distances of order `scale`: a zero self-distance comes back as round-off of that
    # order (its size depends on the BLAS kernel), hence the absolute tolerance
    np.testing.assert_allclose(dist, ref_d * scale, rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize("method", ["hnsw", "exact"])
def test_neighbor_index_queries_far_outside_the_data(method):
    X = np.random.default_rng(1).normal(size=(60, 3))
    index = NeighborIndex(method).fit(X)
    # one coordinate far away: the order is decided by x0, resolvable in float64
    Q = np.array([[1e8, 0.0, 0.0], [-1e8, 0.5, -0.5]])
    dist, idx = index.kneighbors(Q, 5)
    ref_d, ref_i = _oracle_knn(X, Q, 5)
    np.testing.assert_array_equal(idx, ref_i)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12)
    # near the largest float every distance is about 1e300 * sqrt(3): finite, and those
    # of the returned rows
    Q = np.array([[1e300] * 3, [-1e300] * 3])
    dist, idx = index.kneighbors(Q, 5)
    assert np.isfinite(dist).all()
    ref = np.array([_oracle_dist(q, X[i]) for q, i in zip(Q, idx)])
    np.testing.assert_allclose(dist, ref, rtol=1e-12)


def _scaled_model(X, y, scale):
    """Logistic model of ``X`` with column 1 multiplied by ``scale``."""
    w = np.array([1.0, 1.0 / scale, 1.0])
    return make_pipeline(FunctionTransformer(lambda A: np.asarray(A) * w),
                         LogisticRegression()).fit(X / w, y)


def _robust_std(X):
    m = np.abs(X).max(axis=0)
    return np.std(X / m, axis=0) * m


def test_p2ce_valid_points_have_finite_costs_with_tiny_scales():
    X, _ = _data(n=120)
    y = (X[:, 1] > 0).astype(int)  # only the tiny-scale column matters
    Xs = X * [1.0, 1e-200, 1.0]
    model = _scaled_model(X, y, 1e-200)
    expl = P2CERecourse(FrozenEstimator(model), objectives=("l2", "n_changes"),
                        plausibility=False, random_state=0).fit(Xs)
    # queries 1e140 / 1e160 training standard deviations below the data: the squared
    # distances overflow float64, the distances do not
    q = Xs[y == 0][:2].copy()
    q[:, 1] = [-1e-60, -1e-40]
    res = expl.explain(q)
    assert res.valid.all() and res.found.all()
    cfs = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    delta = np.abs(cfs - q[np.asarray(res.counterfactuals["query"])]) / _robust_std(Xs)
    for name in ("l2", "max_distance", "mean_distance"):
        assert np.isfinite(res.costs[name]).all(), name
    np.testing.assert_allclose(res.costs["l2"], [math.hypot(*r) for r in delta], rtol=1e-9)
    np.testing.assert_allclose(res.costs["max_distance"], delta.max(axis=1), rtol=1e-9)
    np.testing.assert_allclose(res.costs["mean_distance"], delta.mean(axis=1), rtol=1e-9)


def test_p2ce_rejects_values_beyond_float32_naming_the_column():
    X, y = _data()
    model = _scaled_model(X, y, 1e200)
    with pytest.raises(ValueError, match=r"'x1'.*float32"):
        P2CERecourse(FrozenEstimator(model), random_state=0).fit(X * [1, 1e200, 1])
    frame = pd.DataFrame(X * [1, 1e200, 1], columns=["a", "big", "c"])
    with pytest.raises(ValueError, match=r"'big'.*float32"):
        P2CERecourse(FrozenEstimator(model), random_state=0).fit(frame)
    # a query beyond float32 is refused the same way at explain time
    expl = P2CERecourse(FrozenEstimator(_scaled_model(X, y, 1e30)),
                        random_state=0).fit(X * [1, 1e30, 1])
    q = X[:1] * [1, 1e60, 1]
    with pytest.raises(ValueError, match=r"'x1'.*float32"):
        expl.explain(q)


def test_p2ce_rejects_distances_beyond_float64_naming_the_column():
    X, y = _data()
    Xs = X * [1, 1e-300, 1]
    expl = P2CERecourse(FrozenEstimator(_scaled_model(X, y, 1e-300)),
                        random_state=0).fit(Xs)
    q = Xs[:1].copy()
    q[0, 1] = 1e10  # 1e310 standard deviations away
    with pytest.raises(ValueError, match=r"'x1'.*standard deviation"):
        expl.explain(q)


# ------------------------------------------------------ non-finite model outputs (5)
class _BadProba(LogisticRegression):
    """A logistic model whose probabilities are ``bad`` where ``x0 > cut``."""

    bad = np.nan
    cut = np.inf

    def predict_proba(self, X):
        P = super().predict_proba(X)
        rows = np.asarray(X, dtype=float)[:, 0] > self.cut
        P[rows] = self.bad
        return P


def _bad_model(X, y, bad, cut):
    model = _BadProba().fit(X, y)
    model.bad, model.cut = bad, cut
    return model


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_p2ce_refuses_non_finite_model_at_fit(linear, bad):
    X, y, _ = linear
    model = _bad_model(X, y, bad, cut=1.0)  # training rows hit the bad region
    with pytest.raises(ValueError, match=r"_BadProba.*(NaN|inf|finite)"):
        P2CERecourse(FrozenEstimator(model), random_state=0).fit(X)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_p2ce_never_reports_non_finite_outputs_valid(linear, bad):
    X, y, _ = linear
    model = _bad_model(X, y, bad, cut=np.inf)
    expl = P2CERecourse(FrozenEstimator(model), random_state=0).fit(X)
    q = X[y == 0][:3]
    assert expl.explain(q).found.any()  # with a finite model the queries have answers
    # the search runs on the verified reconstruction; the model itself now fails on every
    # counterfactual (none moves x0 down) and must not be reported valid
    model.cut = q[:, 0].min() - 1e-9
    with pytest.raises(ValueError, match=r"_BadProba.*(NaN|inf|finite)"):
        expl.explain(q)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_mace_refuses_non_finite_model(linear, bad):
    X, y, _ = linear
    with pytest.raises(ValueError, match=r"_BadProba.*(NaN|inf|finite)"):
        MaceRecourse(FrozenEstimator(_bad_model(X, y, bad, cut=1.0))).fit(X)
    model = _bad_model(X, y, bad, cut=np.inf)
    mace = MaceRecourse(FrozenEstimator(model), random_state=0).fit(X)
    q = X[(y == 0) & (X[:, 0] < 0.5)][:3]
    assert mace.explain(q).found.all()
    model.cut = 0.5
    with pytest.raises(ValueError, match=r"_BadProba.*(NaN|inf|finite)"):
        mace.explain(q)


def test_mace_refuses_probabilities_of_the_wrong_width(linear):
    X, y, _ = linear

    class ThreeColumns(LogisticRegression):
        def predict_proba(self, X):
            P = super().predict_proba(X)
            return np.hstack([P, P[:, :1]])

    with pytest.raises(ValueError, match=r"ThreeColumns.*3 column.*2 classes"):
        MaceRecourse(FrozenEstimator(ThreeColumns().fit(X, y))).fit(X)


def test_mace_refuses_non_finite_regressor():
    from sklearn.linear_model import LinearRegression

    class BadRegressor(LinearRegression):
        def predict(self, X):
            out = super().predict(X)
            out[np.asarray(X, dtype=float)[:, 0] > 1.0] = np.nan
            return out

    X, _ = _data()
    reg = BadRegressor().fit(X, X[:, 0] + X[:, 1])
    with pytest.raises(ValueError, match=r"BadRegressor.*(NaN|inf|finite)"):
        MaceRecourse(FrozenEstimator(reg), desired_range=(2.0, 3.0)).fit(X)


# ------------------------------------------- time_limit and numba compilation (issue #24)
_TIMED_P2CE = '''
import warnings

import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression

from sklearn_xai.recourse import P2CERecourse


def run():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    p2ce = P2CERecourse(FrozenEstimator(model), grid_step=0.2, max_changes=2,
                        n_estimators=10, shap_samples=10, time_limit=1.0,
                        random_state=0).fit(X)
    queries = X[np.flatnonzero(model.predict(X) == 0)[:3]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = p2ce.explain(queries)
    return (res.to_frame(), res.extras["complete"].tolist(),
            [str(w.message) for w in caught if "time_limit" in str(w.message)])
'''


def test_p2ce_time_limit_excludes_numba_compilation(tmp_path):
    """A fresh process with an empty numba cache gives the front of a warm process.

    The limit (1 s) is far above the warm search of these queries (a few milliseconds,
    a handful of nodes each); with the old code the first query's clock also counted the
    compilation of the search's kernels (seconds with an empty cache: the isolation
    forest's and the dominance check's), so the cold front came back partial.
    """
    import pickle
    import subprocess
    import sys
    from pathlib import Path

    import sklearn_xai

    namespace = {}
    exec(_TIMED_P2CE, namespace)  # noqa: S102 - the test's own source
    namespace["run"]()  # warms this process
    warm_frame, warm_complete, warm_warnings = namespace["run"]()
    assert warm_complete == [True, True, True] and not warm_warnings
    assert warm_frame["valid"].all() and set(warm_frame["query"]) == {0, 1, 2}

    out = tmp_path / "cold.pkl"
    script = _TIMED_P2CE + (f"\nimport pickle\nwith open({str(out)!r}, 'wb') as f:\n"
                            "    pickle.dump(run(), f)\n")
    cache = tmp_path / "empty_numba_cache"
    cache.mkdir()
    root = str(Path(sklearn_xai.__file__).resolve().parents[1])
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": root,
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-c", script], cwd=root, env=env, check=True,
                   timeout=900)
    with open(out, "rb") as f:
        cold_frame, cold_complete, cold_warnings = pickle.load(f)
    assert cold_complete == [True, True, True], cold_warnings
    assert not cold_warnings
    pd.testing.assert_frame_equal(cold_frame, warm_frame)


# ------------------------------------------------------------- model=None (issue #24)
def test_p2ce_model_defaults_to_none_and_fit_says_so(linear):
    X, y, model = linear
    expl = P2CERecourse()  # like every other explainer (and scikit-learn meta-estimators)
    assert expl.get_params()["model"] is None
    with pytest.raises(ValueError, match="model is None"):
        expl.fit(X, y)
    expl.set_params(model=FrozenEstimator(model), grid_step=0.25, max_changes=2,
                    n_estimators=10, shap_samples=10, random_state=0).fit(X)
    res = expl.explain(X[:3])
    P = res.counterfactuals.drop(columns="query").to_numpy(dtype=float)
    q = np.asarray(res.counterfactuals["query"])
    assert res.found.all()
    np.testing.assert_array_equal(model.predict(P), 1 - model.predict(X[:3])[q])


# ------------------------------------------------- mixed frames as arrays (issue #24)
@pytest.fixture(scope="module")
def mixed():
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    n = 120
    X = pd.DataFrame({"a": rng.normal(size=n), "colour": rng.choice(["red", "blue"], n),
                      "k": rng.integers(0, 5, size=n)}, index=np.arange(1000, 1000 + n))
    y = (X["a"].to_numpy() + (X["colour"] == "red").to_numpy() + 0.3 * X["k"].to_numpy()
         > 1.5).astype(int)
    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["colour"]),
                                                  remainder="passthrough"),
                          LogisticRegression()).fit(X, y)
    return X, model


def _recourse(cls, model):
    if cls is P2CERecourse:
        return cls(FrozenEstimator(model), grid_step=0.25, max_changes=2, n_estimators=10,
                   shap_samples=10, random_state=0)
    return cls(FrozenEstimator(model), n_counterfactuals=2, neighbors="exact",
               random_state=0)


@pytest.mark.parametrize("cls", [MaceRecourse, P2CERecourse])
def test_recourse_rebuilds_a_fitted_frame_from_an_object_array(mixed, cls):
    """One rule for all explainers: an array given to an explainer fitted on a DataFrame
    is that frame by position (with scikit-learn's feature-names warning)."""
    X, model = mixed
    expl = _recourse(cls, model).fit(X)
    rows = X.iloc[:4]
    with pytest.warns(UserWarning, match="feature names"):
        from_array = expl.explain(rows.to_numpy(dtype=object))
    from_frame = expl.explain(rows)
    pd.testing.assert_frame_equal(from_array.counterfactuals, from_frame.counterfactuals)
    cf = from_array.counterfactuals.drop(columns="query")
    q = np.asarray(from_array.counterfactuals["query"])
    assert from_array.found.any()
    np.testing.assert_array_equal(model.predict(cf), 1 - model.predict(rows)[q])


# --------------------------------------------- transform with pandas output (issue #24)
@pytest.mark.parametrize("cls", [MaceRecourse, P2CERecourse])
def test_recourse_pandas_transform_keeps_numeric_dtypes(mixed, cls):
    X, model = mixed
    expl = _recourse(cls, model).fit(X)
    rows = X.iloc[10:16]
    res = expl.explain(rows)
    default = expl.transform(rows)  # an array: object for mixed columns, as before
    assert isinstance(default, np.ndarray) and default.dtype == object
    out = expl.set_output(transform="pandas").transform(rows)
    assert list(out.columns) == ["a", "colour", "k"]
    assert out["a"].dtype == np.float64
    assert pd.api.types.is_numeric_dtype(out["k"].dtype)
    assert out.index.equals(rows.index)
    q = np.asarray(res.counterfactuals["query"])
    valid = np.asarray(res.valid, dtype=bool)
    for i in range(len(rows)):
        first = np.flatnonzero((q == i) & valid)
        if not first.size:
            assert out.iloc[i].isna().all()
            continue
        want = res.counterfactuals.drop(columns="query").iloc[first[0]]
        assert out.iloc[i].tolist() == want.tolist()
        assert list(default[i]) == want.tolist()
    found = out.dropna()
    assert len(found) >= 3
    np.testing.assert_array_equal(model.predict(found), 1 - model.predict(rows.loc[found.index]))


# ------------------------------------------------ MACE-RL max_changes; recourse metrics
def _n_changed(result):
    """Changed features per counterfactual, from the frames (missing equals missing)."""
    cf = result.counterfactuals
    F = cf.drop(columns="query").to_numpy(dtype=float)
    Q = result.queries.to_numpy(dtype=float)[cf["query"].to_numpy()]
    return ((F != Q) & ~(np.isnan(F) & np.isnan(Q))).sum(axis=1)


@pytest.mark.parametrize("method", ["rl", "gld"])
def test_mace_every_counterfactual_respects_max_changes(method):
    # the RL training batches sample every column; their valid rows used to reach the
    # pool (and the answer) with more than max_changes changes
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=200, n_features=4, n_informative=3,
                               n_redundant=0, random_state=0)
    model = LogisticRegression().fit(X, y)
    res = MaceRecourse(FrozenEstimator(model), method=method, max_changes=1,
                       fallback="greedy", random_state=0).fit(X).explain(X[:40])
    assert len(res.counterfactuals) > 0
    n = _n_changed(res)
    assert n.max() <= 1
    np.testing.assert_array_equal(res.costs["n_changed"].to_numpy(), n)
    stages = {res.extras["stage"][i] for i in res.counterfactuals["query"]}
    assert method in stages  # the search itself answered, not only a fallback


@pytest.fixture(scope="module")
def mace_linear_result():
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    model = LogisticRegression().fit(X, y)
    res = MaceRecourse(FrozenEstimator(model), random_state=0).fit(X).explain(X[:5])
    return X, model, res


def test_metrics_accept_an_array_x_ref(mace_linear_result):
    from sklearn.neighbors import NearestNeighbors

    from sklearn_xai import metrics
    from sklearn_xai.recourse._encoding import robust_scales

    X, model, res = mace_linear_result
    frame = pd.DataFrame(X, columns=res.queries.columns)
    cf = res.counterfactuals
    F = cf.drop(columns="query").to_numpy(dtype=float)
    Q = res.queries.to_numpy(dtype=float)[cf["query"].to_numpy()]
    s = robust_scales(X)
    expected = np.mean((np.abs(F - Q) / s).sum(axis=1))
    assert metrics.proximity(res, X_ref=X) == pytest.approx(expected, rel=1e-12)
    assert metrics.proximity(res, X_ref=frame) == pytest.approx(expected, rel=1e-12)
    _, nb = NearestNeighbors(n_neighbors=5).fit(X / s).kneighbors(F / s)
    desired = res.costs["desired_class"].to_numpy()
    y_nn = np.mean(model.predict(X)[nb] == desired[:, None])
    assert metrics.ynn(res, model, X) == pytest.approx(y_nn)
    assert metrics.ynn(res, model, frame) == pytest.approx(y_nn)
    with pytest.raises(ValueError, match=r"X_ref must have shape \(n_ref, 4\)"):
        metrics.proximity(res, X_ref=X[:, :3])
    with pytest.raises(ValueError, match=r"X_ref must have shape \(n_ref, 4\)"):
        metrics.ynn(res, model, X[:, :3])


def test_metrics_multiclass_p2ce_several_desired_classes():
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.neighbors import NearestNeighbors

    from sklearn_xai import metrics
    from sklearn_xai.recourse._encoding import robust_scales

    X, y = make_classification(n_samples=300, n_features=3, n_informative=3,
                               n_redundant=0, n_classes=3, n_clusters_per_class=1,
                               random_state=0)
    model = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, y)
    res = P2CERecourse(FrozenEstimator(model), grid_step=0.25, n_estimators=20,
                       random_state=0).fit(X).explain(X[:5])
    cf = res.counterfactuals
    q = cf["query"].to_numpy()
    assert any(isinstance(res.desired[i], tuple) for i in q)
    F = cf.drop(columns="query").to_numpy(dtype=float)
    pred = model.predict(F)
    hit = np.array([pred[k] in np.atleast_1d(res.desired[q[k]]) for k in range(len(q))])
    # valid = the desired classes' best probability >= 0.5, so the model predicts one
    np.testing.assert_array_equal(hit, res.valid)
    assert metrics.validity(res, model) == pytest.approx(hit.mean())
    assert metrics.validity(res, model) == pytest.approx(metrics.validity(res))
    # redundancy: reverts that keep one of the desired classes
    Q = res.queries.to_numpy(dtype=float)
    red = []
    for k in range(len(F)):
        count = 0
        for j in np.flatnonzero(F[k] != Q[q[k]]):
            r = F[k].copy()
            r[j] = Q[q[k], j]
            count += model.predict(r[None])[0] in np.atleast_1d(res.desired[q[k]])
        red.append(count)
    assert metrics.redundancy(res, model) == pytest.approx(np.mean(red))
    s = robust_scales(X)
    _, nb = NearestNeighbors(n_neighbors=5).fit(X / s).kneighbors(F / s)
    labels = model.predict(X)[nb]
    y_nn = np.mean([[v in np.atleast_1d(res.desired[q[k]]) for v in labels[k]]
                    for k in range(len(F))])
    assert metrics.ynn(res, model, X) == pytest.approx(y_nn)


def _handmade(queries, cfs, qidx):
    from sklearn_xai import Counterfactuals

    cf = pd.DataFrame(cfs, columns=queries.columns)
    cf.insert(0, "query", np.asarray(qidx, dtype=np.int64))
    n = len(cf)
    return Counterfactuals(queries=queries, counterfactuals=cf, predictions=np.ones(n),
                           valid=np.ones(n, dtype=bool), costs=pd.DataFrame(index=range(n)),
                           found=np.ones(len(queries), dtype=bool),
                           desired=np.ones(len(queries), dtype=object))


def test_metrics_missing_values_follow_the_explainers_rules():
    from sklearn_xai import metrics

    nan = np.nan
    queries = pd.DataFrame({"a": [nan, 1.0], "b": [1.0, 2.0],
                            "c": pd.Series(["u", None], dtype=object)})
    cfs = [[nan, 3.0, "u"],   # NaN -> NaN kept, b moved: 1 change
           [2.0, 1.0, "u"],   # NaN -> 2.0: 1 change
           [nan, 1.0, "v"],   # c changed: 1 change
           [1.0, 2.0, "u"]]   # query 1: c missing -> "u": 1 change
    res = _handmade(queries, cfs, [0, 0, 0, 1])
    assert metrics.sparsity(res) == pytest.approx(1.0)
    # scales of X_ref's observed values: a -> MAD of [0, 2, 4] = 2, b -> MAD = 1
    X_ref = pd.DataFrame({"a": [0.0, 2.0, 4.0, nan], "b": [0.0, 1.0, 2.0, 3.0],
                          "c": ["u", "v", "u", "v"]})
    # rows: b |3-1|/1 = 2; a missing -> value = 1; c changed = 1; c missing -> "u" = 1
    assert metrics.proximity(res, X_ref=X_ref) == pytest.approx((2 + 1 + 1 + 1) / 4)
    # query 0's pairs: (0,1) a, b -> 2/3; (0,2) b, c -> 2/3; (1,2) a, c -> 2/3
    assert metrics.diversity(res) == pytest.approx(2 / 3)


def test_metrics_accept_results_on_missing_values():
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sklearn_xai import metrics

    X, y = make_classification(n_samples=300, n_features=3, n_informative=3,
                               n_redundant=0, random_state=0)
    X[::7, 0] = np.nan
    model = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, y)
    for expl in (MaceRecourse(FrozenEstimator(model), random_state=0),
                 P2CERecourse(FrozenEstimator(model), grid_step=0.25, n_estimators=20,
                              random_state=0)):
        res = expl.fit(X).explain(X[[0, 7, 14]])
        assert np.isnan(res.queries.to_numpy(dtype=float)).any()
        n = _n_changed(res)
        assert metrics.sparsity(res) == pytest.approx(n.mean())
        if "n_changed" in res.costs:
            np.testing.assert_array_equal(res.costs["n_changed"].to_numpy(), n)
        else:
            np.testing.assert_array_equal(res.costs["n_changes"].to_numpy(), n)
        assert metrics.validity(res, model) == pytest.approx(np.mean(res.valid))
        assert np.isfinite(metrics.proximity(res, X_ref=X))
        assert np.isfinite(metrics.proximity(res))
        assert 0.0 <= metrics.ynn(res, model, X) <= 1.0
        assert metrics.redundancy(res, model) >= 0.0
        d = metrics.diversity(res)
        assert np.isnan(d) or 0.0 <= d <= 1.0


@pytest.mark.parametrize("method", ["mace", "p2ce"])
def test_metrics_of_a_desired_range_use_the_range(method):
    # a regressor's result holds (low, high) per query: validity compared the predicted
    # value with the tuple, as if it were two classes
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LinearRegression

    from sklearn_xai import MaceRecourse, P2CERecourse
    from sklearn_xai.metrics import redundancy, validity

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    model = LinearRegression().fit(X, X @ np.array([1.0, 2.0, -1.0]))
    rows = X[model.predict(X) < 0][:4]
    if method == "mace":
        exp = MaceRecourse(FrozenEstimator(model), desired_range=(0.5, 3.0), refine=False,
                           neighbors="exact", random_state=0)
    else:
        exp = P2CERecourse(FrozenEstimator(model), desired_range=(0.5, 3.0), max_changes=2,
                           random_state=0)
    res = exp.fit(X).explain(rows)
    feats = res.counterfactuals.drop(columns="query")
    pred = model.predict(feats.to_numpy())
    assert len(pred) > 0
    want = float(np.mean((pred >= 0.5) & (pred <= 3.0)))
    assert validity(res, model) == pytest.approx(want)
    assert validity(res, model) == pytest.approx(float(np.mean(res.valid)))
    assert np.isfinite(redundancy(res, model))


def test_mace_takes_missing_values_in_the_columns_a_pipeline_imputes():
    # MACE asked the model for NaN in every column at once: a column transformer that
    # imputes the categorical columns (and scales the others) made it refuse NaN in the
    # imputed column, which P2CE and the model itself take
    from sklearn.compose import ColumnTransformer
    from sklearn.frozen import FrozenEstimator
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from sklearn_xai import MaceRecourse

    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "c": rng.choice(["u", "v", "w"], size=n).astype(object)})
    y = (X["a"] + X["b"] + (X["c"] == "u") > 0.5).astype(int)
    X.loc[rng.choice(n, 40, replace=False), "c"] = np.nan
    ct = ColumnTransformer([
        ("c", make_pipeline(SimpleImputer(strategy="most_frequent"),
                            OneHotEncoder(handle_unknown="ignore")), ["c"]),
        ("n", StandardScaler(), ["a", "b"])])
    model = make_pipeline(ct, LogisticRegression()).fit(X, y)
    queries = X[X["c"].isna() & (model.predict(X) == 0)].iloc[:3]
    exp = MaceRecourse(FrozenEstimator(model), n_counterfactuals=1, refine=False,
                       neighbors="exact", random_state=0).fit(X)
    res = exp.explain(queries)
    assert res.found.all()
    feats = res.counterfactuals.drop(columns="query")
    np.testing.assert_array_equal(model.predict(feats), 1)
    bad = X.copy()
    bad.loc[bad.index[0], "a"] = np.nan  # the scaled column does not take NaN
    with pytest.raises(ValueError, match="'a'"):
        MaceRecourse(FrozenEstimator(model), random_state=0).fit(bad)


def test_p2ce_refuses_a_grid_step_finer_than_its_bound():
    # grid_step=1e-9 passed (0, 1] and allocated gigabytes per feature in fit
    from sklearn.linear_model import LogisticRegression

    from sklearn_xai import P2CERecourse

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="grid_step"):
        P2CERecourse(LogisticRegression(), grid_step=1e-9).fit(X, y)
    P2CERecourse(LogisticRegression(), grid_step=1e-4, max_changes=1,
                 random_state=0).fit(X, y)
