"""Attribution <-> shap.Explanation, shap's own plots on our values, and slicing."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402

from sklearn_xai import Attribution  # noqa: E402
from sklearn_xai.tree import TreeShapExplainer  # noqa: E402

shap = pytest.importorskip("shap")

NAMES = ["age", "sex", "bmi", "bp"]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 4)), columns=NAMES,
                     index=pd.Index([f"r{i}" for i in range(60)]))
    X["sex"] = (X["sex"] > 0).astype(float)
    y = 2 * X["age"] + X["sex"] - X["bmi"] * X["bp"] + 0.1 * rng.normal(size=60)
    return X, y


@pytest.fixture(scope="module")
def regressor(data):
    X, y = data
    return RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def att(data, regressor):
    X, _ = data
    explainer = TreeShapExplainer(FrozenEstimator(regressor), imputation="tree_path_dependent")
    return explainer.fit(X).explain(X)


@pytest.fixture(scope="module")
def multi(data):
    X, y = data
    clf = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0)
    clf.fit(X, pd.cut(y, 3, labels=False))
    return clf, TreeShapExplainer(FrozenEstimator(clf)).fit(X).explain(X.iloc[:20])


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def with_std(att):
    rng = np.random.default_rng(1)
    return Attribution(att.values, att.base_values, att.data, att.feature_names,
                       att.output_names, std=rng.uniform(0.01, 0.1, att.values.shape),
                       index=att.index)


def assert_same(a, b):
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.base_values, b.base_values)
    np.testing.assert_array_equal(np.asarray(a.data, dtype=float), np.asarray(b.data, dtype=float))
    assert list(a.feature_names) == list(b.feature_names)
    assert list(a.output_names) == list(b.output_names)
    if a.std is None:
        assert b.std is None
    else:
        np.testing.assert_array_equal(a.std, b.std)
    assert list(a.index) == list(b.index)


# ---- to_shap / from_shap ----------------------------------------------------------------

def test_to_shap_fields(att):
    e = att.to_shap()
    assert isinstance(e, shap.Explanation)
    np.testing.assert_array_equal(e.values, att.values)
    np.testing.assert_array_equal(e.base_values, att.base_values)
    np.testing.assert_array_equal(e.data, att.data.astype(float))
    assert list(e.feature_names) == NAMES


def test_to_shap_multi_output_axis(multi):
    _, m = multi
    e = m.to_shap()
    assert e.values.shape == (20, 4, m.n_outputs) and e.base_values.shape == (20, m.n_outputs)
    assert list(e.output_names) == list(m.output_names)


@pytest.mark.parametrize("kind", ["single", "single_std", "multi", "multi_std"])
def test_round_trip_lossless(att, multi, kind):
    a = att if kind.startswith("single") else multi[1]
    if kind.endswith("std"):
        a = with_std(a)
    back = Attribution.from_shap(a.to_shap())
    assert_same(a, back)
    if a.std is not None:
        np.testing.assert_array_equal(a.to_shap().error_std, a.std)


@pytest.mark.parametrize("which", ["regressor", "classifier"])
def test_from_shap_tree_explainer_matches_ours(data, regressor, multi, which):
    X, _ = data
    model = regressor if which == "regressor" else multi[0]
    explainer = TreeShapExplainer(FrozenEstimator(model), imputation="tree_path_dependent")
    ours = explainer.fit(X).explain(X)
    theirs = Attribution.from_shap(shap.TreeExplainer(model)(X))
    assert theirs.values.shape == ours.values.shape
    np.testing.assert_allclose(theirs.values, ours.values, atol=1e-6)
    np.testing.assert_allclose(theirs.base_values, ours.base_values, atol=1e-6)
    assert theirs.feature_names == NAMES
    theirs.check_additivity(ours.predicted(), atol=1e-6)
    out = None if theirs.n_outputs == 1 else 1
    for ax in (theirs.plot_waterfall(0, output=out), theirs.plot_bar(output=out),
               theirs.plot_beeswarm(output=out)):
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert any(name in lab for lab in labels for name in NAMES)


def test_from_shap_kernel_and_permutation(data, regressor):
    X, _ = data
    background = X.iloc[:10]
    perm = shap.explainers.Permutation(regressor.predict, background)(X.iloc[:5])
    a = Attribution.from_shap(perm)
    assert a.values.shape == (5, 4) and a.base_values.shape == (5,)
    a.check_additivity(regressor.predict(X.iloc[:5]), atol=1e-6)
    kernel = shap.KernelExplainer(regressor.predict, background.to_numpy())
    vals = kernel.shap_values(X.iloc[:2].to_numpy(), nsamples=50, silent=True)
    k = Attribution.from_shap(shap.Explanation(vals, np.full(2, kernel.expected_value)))
    assert k.feature_names == ["x0", "x1", "x2", "x3"] and k.output_names == ["output"]
    one = Attribution.from_shap(perm[0])
    assert one.values.shape == (1, 4)


def test_missing_shap_names_the_extra(att, monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == "shap":
            raise ImportError("no shap")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match="pip install shap"):
        att.to_shap()


# ---- shap's own plots on our converted values ------------------------------------------

def _ticks(fig):
    return {t.get_text() for ax in fig.axes for t in ax.get_yticklabels()}


def test_shap_waterfall(att):
    shap.plots.waterfall(att.to_shap()[0], show=False)
    fig = plt.gcf()
    assert any(name in t for t in _ticks(fig) for name in NAMES)
    assert fig.axes[0].patches or fig.axes[0].collections


def test_shap_beeswarm(att):
    shap.plots.beeswarm(att.to_shap(), show=False)
    fig = plt.gcf()
    assert set(NAMES) <= _ticks(fig)
    points = sum(len(c.get_offsets()) for c in fig.axes[0].collections)
    assert points == att.values.size


def test_shap_bar(att):
    shap.plots.bar(att.to_shap(), show=False)
    fig = plt.gcf()
    assert set(NAMES) <= _ticks(fig)
    assert len(fig.axes[0].patches) >= len(NAMES)


def test_shap_scatter(att):
    shap.plots.scatter(att.to_shap()[:, "age"], show=False)
    fig = plt.gcf()
    points = sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections)
    assert points == len(att)
    assert any("age" in ax.get_xlabel() for ax in fig.axes)


# ---- slicing -------------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [3, slice(2, 9, 2), np.arange(60) % 3 == 0, [5, 1, 40], -1])
def test_row_slicing(att, rows):
    a = with_std(att)
    a.extras["per_row"] = np.arange(60.0)
    s = a[rows]
    r = np.atleast_1d(np.arange(60)[rows])
    np.testing.assert_array_equal(s.values, a.values[r])
    np.testing.assert_array_equal(s.base_values, a.base_values[r])
    np.testing.assert_array_equal(s.std, a.std[r])
    np.testing.assert_array_equal(s.data, a.data[r])
    np.testing.assert_array_equal(s.extras["per_row"], r.astype(float))
    assert list(s.index) == [f"r{i}" for i in r]
    assert s.feature_names == NAMES and s.output_names == a.output_names


@pytest.mark.parametrize("cols,expect", [("age", [0]), (["age", "bp"], [0, 3]), (2, [2]),
                                         (slice(1, 3), [1, 2]), (np.array([3, 0]), [3, 0])])
def test_player_slicing(att, cols, expect):
    a = with_std(att)
    s = a[:, cols]
    np.testing.assert_array_equal(s.values, a.values[:, expect])
    np.testing.assert_array_equal(s.std, a.std[:, expect])
    np.testing.assert_array_equal(s.data, a.data[:, expect])
    np.testing.assert_array_equal(s.base_values, a.base_values)
    assert s.feature_names == [NAMES[j] for j in expect]
    both = a[[0, 2], cols]
    np.testing.assert_array_equal(both.values, a.values[[0, 2]][:, expect])


def test_slicing_errors(att):
    with pytest.raises(KeyError, match="Unknown player"):
        att[:, "height"]
    with pytest.raises(IndexError):
        att[100]
    with pytest.raises(IndexError):
        att[np.ones(3, dtype=bool)]


def test_for_output(multi):
    _, m = multi
    m = with_std(m)
    for key, k in [(1, 1), (m.output_names[2], 2)]:
        o = m.for_output(key)
        np.testing.assert_array_equal(o.values, m.values[:, :, k])
        np.testing.assert_array_equal(o.base_values, m.base_values[:, k])
        np.testing.assert_array_equal(o.std, m.std[:, :, k])
        assert o.output_names == [m.output_names[k]] and o.n_outputs == 1
    sliced = m[:4, ["age"]].for_output(0)
    np.testing.assert_array_equal(sliced.values, m.values[:4, [0], 0])


def test_cohorts(att):
    by_sex = att.cohorts("sex")
    assert set(by_sex) == {"0.0", "1.0"}
    mask = att.data[:, 1] == 1.0
    np.testing.assert_array_equal(by_sex["1.0"].values, att.values[mask])
    assert sum(len(c) for c in by_sex.values()) == len(att)
    by_mask = att.cohorts(att.data[:, 0] > 0)
    np.testing.assert_array_equal(by_mask["True"].values, att.values[att.data[:, 0] > 0])
    np.testing.assert_array_equal(by_mask["False"].base_values,
                                  att.base_values[att.data[:, 0] <= 0])
    with pytest.raises(ValueError):
        att.cohorts(np.zeros(3))


# ---- one row of a multi-output shap.Explanation ----------------------------------------

def multi_output(p, n_out, n=5, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(n, p, n_out))
    return Attribution(values, rng.normal(size=(n, n_out)), rng.normal(size=(n, p)),
                       [f"f{j}" for j in range(p)], [f"o{k}" for k in range(n_out)],
                       std=rng.uniform(0.01, 0.1, values.shape),
                       index=pd.Index([f"r{i}" for i in range(n)]))


@pytest.mark.parametrize("p, n_out", [(3, 3), (4, 2), (2, 4), (1, 3)])
def test_from_shap_one_row_of_a_multi_output_explanation(p, n_out):
    a = multi_output(p, n_out)
    for i in range(len(a)):
        row = a.to_shap()[i]  # shap's row: values (p, n_out), base_values (n_out,)
        assert row.values.shape == (p, n_out)
        back = Attribution.from_shap(row)
        assert back.values.shape == (1, p, n_out) and len(back) == 1
        assert_same(a[i:i + 1], back)
        assert_same(a[i:i + 1], Attribution.from_shap(a[i:i + 1].to_shap()[0]))
        # without data, names or row label: the base values (n_out,) still tell
        bare = shap.Explanation(values=row.values, base_values=row.base_values,
                                output_names=list(row.output_names))
        back = Attribution.from_shap(bare)
        np.testing.assert_array_equal(back.values, a.values[i:i + 1])
        np.testing.assert_array_equal(back.base_values, a.base_values[i:i + 1])


def test_from_shap_square_row_is_not_read_as_rows():
    # the tester's case: 3 features x 3 outputs, no output names
    vals = np.array([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]])
    e = shap.Explanation(values=vals, base_values=np.array([0.5, 0.3, 0.2]),
                         data=np.array([7.0, 8.0, 9.0]), feature_names=["a", "b", "c"])
    a = Attribution.from_shap(e)
    np.testing.assert_array_equal(a.values, vals[None])
    np.testing.assert_array_equal(a.base_values, [[0.5, 0.3, 0.2]])
    np.testing.assert_array_equal(a.data, [[7.0, 8.0, 9.0]])
    assert a.output_names == ["output0", "output1", "output2"]
    e2 = shap.Explanation(values=np.arange(8.0).reshape(4, 2), base_values=np.array([0.5, 0.6]),
                          data=np.arange(4.0), feature_names=list("abcd"),
                          output_names=["o0", "o1"])
    a2 = Attribution.from_shap(e2)
    np.testing.assert_array_equal(a2.values, np.arange(8.0).reshape(1, 4, 2))
    np.testing.assert_array_equal(a2.base_values, [[0.5, 0.6]])
    assert a2.output_names == ["o0", "o1"] and a2.feature_names == list("abcd")


def test_from_shap_batch_stays_a_batch():
    vals = np.arange(9.0).reshape(3, 3)
    for extra in ({"data": np.ones((3, 3))}, {"output_names": "predict"}):
        a = Attribution.from_shap(shap.Explanation(values=vals, base_values=np.zeros(3),
                                                   **extra))
        np.testing.assert_array_equal(a.values, vals)
        np.testing.assert_array_equal(a.base_values, np.zeros(3))


def test_from_shap_reads_undecided_values_as_a_batch_and_refuses_contradictions():
    # nothing tells 3 rows x 3 features from one row's 3 features x 3 outputs: shap's
    # own reading, a batch (values alone too)
    vals = np.arange(9.0).reshape(3, 3)
    for extra in ({"base_values": np.zeros(3)}, {}):
        a = Attribution.from_shap(shap.Explanation(values=vals, **extra))
        np.testing.assert_array_equal(a.values, vals)
    with pytest.raises(ValueError, match="fit neither a batch"):
        Attribution.from_shap(shap.Explanation(values=np.ones((4, 2)), base_values=np.zeros(4),
                                               data=np.ones(4)))
