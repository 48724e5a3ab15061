"""Row-invariant randomness: a row's random draws depend only on ``random_state`` and the
row's content, so splitting, reordering or duplicating rows never changes its result.

Oracles: the same explainer on the full block (a row's result must not change when it is
explained alone, in another order, next to a copy of itself, in other batches or workers),
and for :func:`sklearn_xai._random.row_keys` the equality of row contents (in this process,
after a pickle round-trip and in a fresh interpreter with another hash seed).
"""

import os
import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from joblib import parallel_config
from sklearn.ensemble import RandomForestRegressor

from sklearn_xai import ShearExplainer
from sklearn_xai._random import (
    mix_seed,
    row_keys,
    splitmix64_uniform,
    stream_seeds,
    stream_uniforms,
)
from sklearn_xai.base import RecourseMixin

# ----------------------------------------------------------------------------- row_keys


def _mixed_frame():
    return pd.DataFrame({
        "num": [1.0, -0.0, np.nan, 2.5, 1.0],
        "city": pd.Categorical(["Paris", "Lyon", "Paris", "Nice", "Paris"]),
        "name": ["a", "b", None, "d", "a"],
        "n": [1, 2, 3, 4, 1],
    })


def test_row_keys_equal_rows_equal_keys_and_different_rows_differ():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    keys = row_keys(X)
    assert keys.dtype == np.uint64 and keys.shape == (500,)
    assert np.unique(keys).size == 500
    # a copy, a float32-exact int array and a reordering give the same keys row by row
    np.testing.assert_array_equal(row_keys(X.copy(order="F")), keys)
    np.testing.assert_array_equal(row_keys(X[::-1]), keys[::-1])
    ints = rng.integers(-5, 5, size=(50, 3))
    np.testing.assert_array_equal(row_keys(ints), row_keys(ints.astype(np.float64)))
    # one ulp, swapped columns and a longer row all change the key
    Y = X[:1].copy()
    Y[0, 2] = np.nextafter(Y[0, 2], np.inf)
    assert row_keys(Y)[0] != keys[0]
    assert row_keys(X[:1, [1, 0, 2, 3]])[0] != keys[0]
    assert row_keys(np.hstack([X[:1], [[0.0]]]))[0] != keys[0]


def test_row_keys_normalise_signed_zero_and_nan_payloads():
    nan_a = np.float64("nan")
    nan_b = np.array([0x7FF8000000000123], dtype=np.uint64).view(np.float64)[0]
    nan_c = -np.float64("nan")
    assert np.isnan(nan_b) and np.isnan(nan_c)
    assert nan_b.tobytes() != nan_a.tobytes() != nan_c.tobytes()
    X = np.array([[0.0, nan_a], [-0.0, nan_b], [0.0, nan_c]])
    keys = row_keys(X)
    assert keys[0] == keys[1] == keys[2]
    assert row_keys(np.array([[1.0, 0.0]]))[0] != row_keys(np.array([[1.0, np.nan]]))[0]
    # the same in object rows
    obj = np.array([[-0.0, float("nan"), "s"], [0.0, nan_b, "s"]], dtype=object)
    k = row_keys(obj)
    assert k[0] == k[1]


def test_row_keys_object_rows_strings_categories_and_types():
    frame = _mixed_frame()
    keys = row_keys(frame)
    assert keys.shape == (5,)
    assert keys[0] == keys[4]  # equal rows
    assert np.unique(keys[:4]).size == 4
    # a category and the same string are the same content
    as_str = frame.assign(city=frame["city"].astype(str))
    np.testing.assert_array_equal(row_keys(as_str), keys)
    # type matters in object rows, and strings cannot run into each other
    one = row_keys(np.array([["a", 1]], dtype=object))[0]
    assert one != row_keys(np.array([["a", 1.0]], dtype=object))[0]
    assert one != row_keys(np.array([["a", "1"]], dtype=object))[0]
    assert row_keys(np.array([["ab", "c"]], dtype=object))[0] != \
        row_keys(np.array([["a", "bc"]], dtype=object))[0]
    assert row_keys(np.array([[None]], dtype=object))[0] != \
        row_keys(np.array([[np.nan]], dtype=object))[0]


def test_row_keys_reject_non_2d_input():
    with pytest.raises(ValueError, match="2-D"):
        row_keys(np.zeros(3))
    with pytest.raises(ValueError, match="2-D"):
        row_keys(pd.Series([1.0, 2.0]))


_SUBPROCESS = """
import numpy as np, pandas as pd
from sklearn_xai._random import row_keys
frame = pd.DataFrame({
    "num": [1.0, -0.0, np.nan, 2.5, 1.0],
    "city": pd.Categorical(["Paris", "Lyon", "Paris", "Nice", "Paris"]),
    "name": ["a", "b", None, "d", "a"],
    "n": [1, 2, 3, 4, 1],
})
X = np.random.default_rng(0).normal(size=(5, 3))
print(",".join(str(int(k)) for k in np.concatenate([row_keys(frame), row_keys(X)])))
"""


def test_row_keys_stable_across_pickle_and_processes():
    frame = _mixed_frame()
    X = np.random.default_rng(0).normal(size=(5, 3))
    here = np.concatenate([row_keys(frame), row_keys(X)])
    again = pickle.loads(pickle.dumps((frame, frame.to_numpy(dtype=object), X)))
    np.testing.assert_array_equal(row_keys(again[0]), here[:5])
    np.testing.assert_array_equal(row_keys(again[1]), here[:5])
    np.testing.assert_array_equal(row_keys(again[2]), here[5:])
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # Python's hash() would change
    out = subprocess.run([sys.executable, "-c", _SUBPROCESS], capture_output=True, text=True,
                         env=env, check=True, timeout=60)
    there = np.array([int(v) for v in out.stdout.strip().split(",")], dtype=np.uint64)
    np.testing.assert_array_equal(there, here)


# ----------------------------------------------------------------------------- streams


def test_numba_and_numpy_streams_agree():
    from numba import njit

    @njit
    def draw(seeds, n):
        out = np.empty((seeds.shape[0], n))
        state = np.zeros(1, dtype=np.uint64)
        for r in range(seeds.shape[0]):
            state[0] = seeds[r]
            for k in range(n):
                out[r, k] = splitmix64_uniform(state)
        return out

    keys = row_keys(np.arange(12.0).reshape(4, 3))
    seeds = stream_seeds(7, keys)
    np.testing.assert_array_equal([mix_seed(np.uint64(7), k) for k in keys], seeds)
    assert stream_seeds(7, keys[1]) == seeds[1]
    u = stream_uniforms(seeds, 1000)
    np.testing.assert_array_equal(draw(seeds, 1000), u)
    assert (u > 0).all() and (u < 1).all()
    # uniform: mean and a Kolmogorov-Smirnov distance within sampling error
    flat = np.sort(u.ravel())
    assert abs(flat.mean() - 0.5) < 4 * np.sqrt(1 / 12 / flat.size)
    ks = np.abs(flat - np.arange(1, flat.size + 1) / flat.size).max()
    assert ks < 1.63 / np.sqrt(flat.size)  # 1% level
    # the seed and the key both change the stream
    assert not np.array_equal(stream_uniforms(stream_seeds(8, [5]), 4),
                              stream_uniforms(stream_seeds(7, [5]), 4))
    assert not np.array_equal(stream_uniforms(stream_seeds(7, [6]), 4),
                              stream_uniforms(stream_seeds(7, [5]), 4))


# ----------------------------------------------------------------------------- SHEAR


@pytest.fixture(scope="module")
def forest_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 6))
    y = X[:, 0] * X[:, 1] * X[:, 2] + X[:, 3] * X[:, 4] + np.sin(X[:, 5])
    model = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0).fit(X, y)
    return X, model


def _shear(model, X, **kw):
    from sklearn.frozen import FrozenEstimator

    params = {"n_evals": 8, "random_state": 0, **kw}
    return ShearExplainer(FrozenEstimator(model), **params).fit(X)


@pytest.mark.parametrize("cooperators", ["finite_difference", "random"])
def test_shear_forest_rows_do_not_depend_on_the_other_rows(forest_data, cooperators):
    X, model = forest_data
    exp = _shear(model, X, cooperators=cooperators)
    full = exp.explain(X[:40])
    # control: the values are random (another seed moves them), so the checks below bite
    other = _shear(model, X, cooperators=cooperators, random_state=1).explain(X[:40])
    assert np.abs(other.values - full.values).max() > 1e-3
    alone = exp.explain(X[10:40])
    np.testing.assert_array_equal(alone.values, full.values[10:40])
    np.testing.assert_array_equal(alone.base_values, full.base_values[10:40])
    np.testing.assert_array_equal(alone.extras["cooperators"],
                                  full.extras["cooperators"][10:40])
    backwards = exp.explain(X[:40][::-1])
    np.testing.assert_array_equal(backwards.values, full.values[::-1])
    np.testing.assert_array_equal(backwards.extras["cooperators"],
                                  full.extras["cooperators"][::-1])
    dup = exp.explain(np.vstack([X[:5], X[3:4], X[3:4]]))
    np.testing.assert_array_equal(dup.values[5], dup.values[3])
    np.testing.assert_array_equal(dup.values[6], dup.values[3])
    np.testing.assert_array_equal(dup.values[:5], full.values[:5])


def test_shear_forest_same_values_for_any_batch_size_and_n_jobs(forest_data):
    X, model = forest_data
    ref = _shear(model, X, batch_size=40).explain(X[:40]).values
    for bs in (1, 7):
        np.testing.assert_array_equal(_shear(model, X, batch_size=bs).explain(X[:40]).values,
                                      ref)
    with parallel_config(backend="threading"):
        par = _shear(model, X, batch_size=7, n_jobs=2).explain(X[:40]).values
    np.testing.assert_array_equal(par, ref)


def test_shear_forest_frame_with_categories_is_row_invariant():
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(1)
    n = 60
    frame = pd.DataFrame({
        "a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n),
        "city": pd.Categorical(rng.choice(["Paris", "Lyon", "Nice"], size=n)),
    })
    y = frame["a"] * frame["b"] * (frame["city"] == "Paris") + frame["c"] * frame["a"]
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["city"]), remainder="passthrough"),
        RandomForestRegressor(n_estimators=5, max_depth=5, random_state=0)).fit(frame, y)
    exp = _shear(model, frame, n_evals=4)
    full = exp.explain(frame.iloc[:30])
    rows = [4, 1, 1, 20]
    other = _shear(model, frame, n_evals=4, random_state=1).explain(frame.iloc[rows])
    assert np.abs(other.values - full.values[rows]).max() > 1e-3  # control: random values
    alone = exp.explain(frame.iloc[rows])
    np.testing.assert_array_equal(alone.values, full.values[rows])


def test_shear_torch_mlp_rows_do_not_depend_on_the_other_rows():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    d = 6
    net = torch.nn.Sequential(torch.nn.Linear(d, 16), torch.nn.Softplus(),
                              torch.nn.Linear(16, 16), torch.nn.Softplus(),
                              torch.nn.Linear(16, 1)).to(torch.float64)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, d))
    exp = ShearExplainer(net, n_evals=4, random_state=0).fit(X)
    assert exp.cross_contribution_ == "hessian"
    full = exp.explain(X[:40])
    other = ShearExplainer(net, n_evals=4, random_state=1).fit(X).explain(X[:40])
    assert np.abs(other.values - full.values).max() > 1e-4  # control: random values
    # the model sees other batch shapes: equal up to BLAS round-off
    alone = exp.explain(X[10:40])
    np.testing.assert_allclose(alone.values, full.values[10:40], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(alone.extras["cooperators"],
                                  full.extras["cooperators"][10:40])
    backwards = exp.explain(X[:40][::-1])
    np.testing.assert_allclose(backwards.values, full.values[::-1], rtol=0, atol=1e-12)
    dup = exp.explain(np.vstack([X[:3], X[1:2]]))
    np.testing.assert_allclose(dup.values[3], dup.values[1], rtol=0, atol=1e-12)
    for bs in (1, 7):
        e = ShearExplainer(net, n_evals=4, random_state=0, batch_size=bs).fit(X)
        np.testing.assert_allclose(e.explain(X[:40]).values, full.values, rtol=0, atol=1e-12)
    with parallel_config(backend="threading"):
        par = ShearExplainer(net, n_evals=4, random_state=0, batch_size=7,
                             n_jobs=2).fit(X).explain(X[:40]).values
    np.testing.assert_allclose(par, full.values, rtol=0, atol=1e-12)


def test_shear_dask_map_partitions_reproduces_a_serial_run(forest_data):
    dd = pytest.importorskip("dask.dataframe")
    X, model = forest_data
    exp = _shear(model, X)
    serial = exp.transform(X[:40])
    frame = pd.DataFrame(X[:40], columns=[f"x{j}" for j in range(X.shape[1])])
    meta = pd.DataFrame({c: pd.Series(dtype=float) for c in exp.get_feature_names_out()})
    parts = dd.from_pandas(frame, npartitions=3).map_partitions(
        lambda part: pd.DataFrame(exp.transform(part.to_numpy()), index=part.index,
                                  columns=meta.columns), meta=meta)
    np.testing.assert_array_equal(parts.compute(scheduler="sync").to_numpy(), serial)


@pytest.mark.parametrize("algorithm", ["permutation", "kernel"])
def test_knockoff_shap_rows_do_not_depend_on_the_other_rows(algorithm):
    from sklearn.linear_model import LogisticRegression

    from sklearn_xai import KnockoffSHAP

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).astype(int)
    explainer = KnockoffSHAP(LogisticRegression(), n_knockoffs=3, algorithm=algorithm,
                             n_evals=2, random_state=0).fit(X, y)
    whole = explainer.explain(X[:20]).values
    np.testing.assert_allclose(explainer.explain(X[5:15]).values, whole[5:15], rtol=1e-12)
    np.testing.assert_allclose(explainer.explain(X[:20][::-1]).values, whole[::-1],
                               rtol=1e-12)
    dup = explainer.explain(X[[3, 3, 7]]).values
    np.testing.assert_allclose(dup[0], dup[1], rtol=1e-12)
    np.testing.assert_allclose(dup[0], whole[3], rtol=1e-12)


def test_knockoff_sage_does_not_depend_on_row_order():
    from sklearn.linear_model import LogisticRegression

    from sklearn_xai import KnockoffSAGE

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    explainer = KnockoffSAGE(LogisticRegression(), n_knockoffs=2, n_permutations=4,
                             tol=None, random_state=0).fit(X, y)
    perm = rng.permutation(60)
    a = explainer.explain(X, y).values
    b = explainer.explain(X[perm], y[perm]).values
    np.testing.assert_allclose(b, a, rtol=1e-10)


# ------------------------------------------------------------- every registered explainer


def _registered():
    from ._instances import CLASSES

    return list(CLASSES.values())


def _per_row(result):
    """Each explained row's own result: its attributions, or its counterfactuals."""
    if hasattr(result, "counterfactuals"):
        return [result.for_query(i).reset_index(drop=True) for i in range(result.n_queries)]
    return list(np.asarray(result.values))


def _same_rows(got, want):
    for a, b in zip(got, want, strict=True):
        if isinstance(a, pd.DataFrame):
            pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-10, atol=1e-12)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls", _registered(), ids=lambda c: c.__name__)
def test_every_registered_explainer_is_row_invariant(cls):
    """Every explainer of the registry: a row's result does not depend on the other rows
    explained with it (a subset, the reverse order, a duplicate); a global explainer
    (``explain(X, y)``) does not depend on the order of the rows."""
    import warnings

    from sklearn.base import clone

    from ._instances import fast_params, model_for

    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 4))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    params = fast_params(cls)
    if "time_limit" in params:  # a search cut short by the clock would depend on the load
        params["time_limit"] = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp = cls(model_for(cls), **params).fit(X, y)
        if not hasattr(cls, "transform"):
            perm = rng.permutation(len(X))
            np.testing.assert_allclose(exp.explain(X[perm], y[perm]).values,
                                       exp.explain(X, y).values, rtol=1e-10)
            return
        rows = X[:12]
        if issubclass(cls, RecourseMixin):  # counterfactuals for rows the model rejects
            model = clone(model_for(cls)).fit(X, y)
            rows = X[model.predict(X) == 0][:4]
        full = _per_row(exp.explain(rows))
        n = len(rows)
        _same_rows(_per_row(exp.explain(rows[1:n - 1])), full[1:n - 1])
        _same_rows(_per_row(exp.explain(rows[::-1])), full[::-1])
        dup = _per_row(exp.explain(rows[[2, 2, 0]]))
        _same_rows(dup, [full[2], full[2], full[0]])
