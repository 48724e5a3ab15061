"""ShearExplainer on the base's fit template: ``feature_space``, feature groups in either
space, and the cooperator selection on the explained model.

Oracles: Shapley values of the single-reference (baseline) game ``v(S) = f(x_S, r_~S)``
by enumerating every coalition with the factorial weights (written here), mixed
differences of the explained model computed by hand, and the input Hessian of a torch
module by ``torch.autograd.functional.hessian``.
"""

import itertools
from math import factorial

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from sklearn_xai import ShearExplainer
from sklearn_xai.base import groups_from_transformer


def brute_force_shapley(f, X, r, groups=None, frame=None):
    """phi[n, i] of the baseline game of ``f`` by enumerating every coalition of players.

    ``frame``: a DataFrame template whose columns and dtypes the hybrid rows take.
    """
    X = np.asarray(X, dtype=object if frame is not None else float)
    r = np.asarray(r, dtype=X.dtype).reshape(-1)
    groups = [[j] for j in range(X.shape[1])] if groups is None else groups
    P = len(groups)

    def call(Z):
        if frame is not None:
            Z = pd.DataFrame(Z, columns=frame.columns).astype(frame.dtypes.to_dict())
        return np.asarray(f(Z), dtype=float).reshape(len(X))

    phi = np.zeros((len(X), P))
    for i in range(P):
        others = [j for j in range(P) if j != i]
        for s in range(P):
            w = factorial(s) * factorial(P - s - 1) / factorial(P)
            for T in itertools.combinations(others, s):
                cols = [c for p in T for c in groups[p]]
                z0 = np.tile(r, (len(X), 1))
                z0[:, cols] = X[:, cols]
                z1 = z0.copy()
                z1[:, groups[i]] = X[:, groups[i]]
                phi[:, i] += w * (call(z1) - call(z0))
    return phi


@pytest.fixture(scope="module")
def mixed():
    """A frame with a categorical and two numeric columns, and a fitted
    Pipeline(ColumnTransformer(OneHotEncoder, StandardScaler), LogisticRegression)."""
    rng = np.random.default_rng(0)
    n = 120
    df = pd.DataFrame({"a": rng.normal(size=n),
                       "colour": rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2]),
                       "b": rng.normal(size=n) * 3 + 1})
    y = ((df["a"] + 0.3 * df["b"] > 0.2) ^ (df["colour"] == "green")).astype(int)
    pre = ColumnTransformer([("cat", OneHotEncoder(), ["colour"]),
                             ("num", StandardScaler(), ["a", "b"])])
    pipe = make_pipeline(pre, LogisticRegression(C=5.0)).fit(df, y)
    return df, y, pipe


def _proba(clf):
    return lambda Z: clf.predict_proba(np.asarray(Z, dtype=float))[:, 1]


def test_fit_is_the_base_template():
    # the base's fit (validate, model, family, _fit) is the only fit
    assert "fit" not in vars(ShearExplainer)
    assert "_fit" in vars(ShearExplainer)


def test_model_space_players_are_the_transformed_columns_exact(mixed):
    df, _, pipe = mixed
    pre, clf = pipe[:-1], pipe[-1]
    e = ShearExplainer(FrozenEstimator(pipe), feature_space="model", n_evals=32).fit(df)
    names = [str(c) for c in pre.get_feature_names_out()]
    assert e.feature_space_ == "model" and e.player_names_ == names and len(names) == 5
    Xt = pre.transform(df)
    np.testing.assert_allclose(e.reference_[0], Xt.mean(axis=0), atol=1e-12)
    a = e.explain(df.iloc[:6])
    assert a.feature_names == names and a.std is None  # 32 >= 2^5: exact
    np.testing.assert_allclose(a.data, Xt[:6])
    truth = brute_force_shapley(_proba(clf), Xt[:6], e.reference_)
    np.testing.assert_allclose(a.values, truth, atol=1e-12)
    np.testing.assert_allclose(a.base_values, _proba(clf)(e.reference_)[0], atol=1e-12)
    # transform and score run in the same space
    assert e.transform(df.iloc[:6]).shape == (6, 5)
    assert -1 <= e.score(df.iloc[:20]) <= 1


def test_input_space_players_are_the_input_columns_exact(mixed):
    df, _, pipe = mixed
    e = ShearExplainer(FrozenEstimator(pipe), n_evals=8).fit(df)
    assert e.feature_space_ == "input" and e.player_names_ == ["a", "colour", "b"]
    assert e.reference_[0, 1] == "red"  # the most frequent category
    a = e.explain(df.iloc[:6])
    truth = brute_force_shapley(lambda Z: pipe.predict_proba(Z)[:, 1],
                                df.iloc[:6].to_numpy(dtype=object), e.reference_,
                                frame=df.iloc[:0])
    np.testing.assert_allclose(a.values, truth, atol=1e-12)


def test_model_space_feature_groups_exact(mixed):
    df, _, pipe = mixed
    pre, clf = pipe[:-1], pipe[-1]
    groups = groups_from_transformer(pre)  # {"colour": [0, 1, 2], "a": [3], "b": [4]}
    names = [str(c) for c in pre.get_feature_names_out()]
    by_name = {k: [names[j] for j in v] for k, v in groups.items()}
    Xt = pre.transform(df)
    for fg in (groups, by_name):
        e = ShearExplainer(FrozenEstimator(pipe), feature_space="model", n_evals=8,
                           feature_groups=fg).fit(df)
        assert e.player_names_ == ["colour", "a", "b"]
        # the one-hot group's reference is its most frequent pattern, a valid category
        np.testing.assert_array_equal(e.reference_[0, :3],
                                      pre.transform(df.iloc[[int(np.argmax(
                                          df["colour"] == "red"))]])[0, :3])
        a = e.explain(df.iloc[:5])
        truth = brute_force_shapley(_proba(clf), Xt[:5], e.reference_,
                                    [groups["colour"], groups["a"], groups["b"]])
        np.testing.assert_allclose(a.values, truth, atol=1e-12)
    # an input-space name does not name a column of the model space
    with pytest.raises(ValueError, match="unknown feature 'colour'"):
        ShearExplainer(FrozenEstimator(pipe), feature_space="model",
                       feature_groups=[["colour"], ["a"], ["b"]]).fit(df)
    # input space: groups of input columns
    e = ShearExplainer(FrozenEstimator(pipe), n_evals=4,
                       feature_groups={"num": ["a", "b"], "colour": ["colour"]}).fit(df)
    assert e.player_names_ == ["num", "colour"]
    a = e.explain(df.iloc[:5])
    truth = brute_force_shapley(lambda Z: pipe.predict_proba(Z)[:, 1],
                                df.iloc[:5].to_numpy(dtype=object), e.reference_,
                                [[0, 2], [1]], frame=df.iloc[:0])
    np.testing.assert_allclose(a.values, truth, atol=1e-12)


def test_model_space_sampled_selects_cooperators_on_the_last_step(mixed):
    df, _, pipe = mixed
    pre, clf = pipe[:-1], pipe[-1]
    e = ShearExplainer(FrozenEstimator(pipe), feature_space="model", n_evals=8,
                       random_state=0).fit(df)
    assert e.cross_contribution_ == "finite_difference" and e.n_cooperators_ == 2
    a = e.explain(df.iloc[:4])
    assert np.isfinite(a.values).all() and np.isfinite(a.std).all()
    # the cross-contribution: mixed differences of the last step between x and r
    X, r, f = pre.transform(df.iloc[:4]), e.reference_[0], _proba(clf)

    def with_ref(cols):
        Z = X.copy()
        Z[:, cols] = r[cols]
        return f(Z)

    eta = a.extras["cross_contribution"]
    for i, j in itertools.combinations(range(5), 2):
        expect = np.abs(f(X) - with_ref([i]) - with_ref([j]) + with_ref([i, j]))
        np.testing.assert_allclose(eta[:, i, j], expect, atol=1e-12)
        np.testing.assert_allclose(eta[:, j, i], expect, atol=1e-12)
    order = np.argsort(-np.where(np.isneginf(eta), -np.inf, eta), axis=2, kind="stable")
    np.testing.assert_array_equal(a.extras["cooperators"], np.sort(order[:, :, :2], axis=2))
    with pytest.raises(ValueError, match=r"hessian.*LogisticRegression.*finite_difference"):
        ShearExplainer(FrozenEstimator(pipe), feature_space="model",
                       cooperators="hessian").fit(df)


def test_model_space_reference_has_the_explained_width(mixed):
    df, _, pipe = mixed
    with pytest.raises(ValueError, match=r"background must be one row, of shape \(5,\).*model"):
        ShearExplainer(FrozenEstimator(pipe), feature_space="model",
                       background=np.zeros(3)).fit(df)
    e = ShearExplainer(FrozenEstimator(pipe), feature_space="model", n_evals=32,
                       background=np.zeros(5)).fit(df)
    a = e.explain(df.iloc[:3])
    truth = brute_force_shapley(_proba(pipe[-1]), pipe[:-1].transform(df.iloc[:3]),
                                np.zeros(5))
    np.testing.assert_allclose(a.values, truth, atol=1e-12)


def test_feature_space_model_without_pipeline_is_the_input_space(mixed):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3))
    clf = LogisticRegression().fit(X, X[:, 0] > 0)
    a = ShearExplainer(FrozenEstimator(clf), feature_space="model", n_evals=8).fit(X)
    b = ShearExplainer(FrozenEstimator(clf), n_evals=8).fit(X)
    assert a.feature_space_ == "input" and a.player_names_ == ["x0", "x1", "x2"]
    np.testing.assert_array_equal(a.explain(X[:4]).values, b.explain(X[:4]).values)


# ----------------------------------------------------------------------------- torch


def test_plain_module_is_explained_as_is_without_y():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                                 torch.nn.Linear(4, 2)).double()
    X = np.random.default_rng(2).normal(size=(30, 3))
    e = ShearExplainer(module, n_evals=8).fit(X)
    assert e.model_ is module and e.explained_model_ is module
    assert e.output_names_ == ["predict[0]", "predict[1]"]
    assert e.cross_contribution_ == "hessian"

    def f(k):
        def fk(Z):
            with torch.no_grad():
                return module(torch.as_tensor(np.asarray(Z, float))).numpy()[:, k]
        return fk

    a = e.explain(X[:3])
    for k in range(2):
        np.testing.assert_allclose(a.values[:, :, k],
                                   brute_force_shapley(f(k), X[:3], e.reference_), atol=1e-10)
    frozen = ShearExplainer(FrozenEstimator(module), n_evals=8).fit(X)
    np.testing.assert_array_equal(frozen.explain(X[:3]).values, a.values)


def test_torch_module_with_non_numeric_columns_names_the_module():
    torch = pytest.importorskip("torch")
    df = pd.DataFrame({"a": [0.0, 1.0, 2.0], "s": ["x", "y", "x"]})
    with pytest.raises(ValueError, match=r"Linear takes numeric input.*non-numeric"):
        ShearExplainer(torch.nn.Linear(2, 1)).fit(df)


@pytest.fixture(scope="module")
def torch_pipe():
    torch = pytest.importorskip("torch")
    skorch = pytest.importorskip("skorch")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 4)) * [1.0, 5.0, 0.5, 2.0] + [0.0, 3.0, -1.0, 0.0]
    y = (X[:, 0] * X[:, 3] + X[:, 1] / 5 > 0.5).astype(np.int64)
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Softplus(),
                                 torch.nn.Linear(8, 2))
    net = skorch.NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss,
                                     max_epochs=5, lr=0.1, train_split=None, verbose=0)
    pipe = make_pipeline(StandardScaler(), FunctionTransformer(lambda Z: Z.astype(np.float32)),
                         net).fit(X, y)
    return X, pipe, net


def test_model_space_hessian_of_a_skorch_last_step(torch_pipe):
    import torch

    X, pipe, net = torch_pipe
    pre = pipe[:-1]
    e = ShearExplainer(FrozenEstimator(pipe), feature_space="model",
                       response_method="decision_function", n_evals=4, random_state=0).fit(X)
    assert e.cross_contribution_ == "hessian" and e.output_names_ == ["margin(1)"]
    Xt = np.asarray(pre.transform(X[:3]), dtype=np.float64)
    a = e.explain(X[:3])
    r = e.reference_[0]
    module = net.module_
    for k in range(3):
        H = torch.autograd.functional.hessian(
            lambda z: module(z[None].float())[0, 1].double(), torch.as_tensor(Xt[k])).numpy()
        expect = np.abs(H) * np.outer(np.abs(Xt[k] - r), np.abs(Xt[k] - r))
        off = ~np.eye(4, dtype=bool)
        np.testing.assert_allclose(a.extras["cross_contribution"][k][off], expect[off],
                                   rtol=1e-4, atol=1e-6)
    # exact regime: the values of the logit in the scaled columns
    ex = ShearExplainer(FrozenEstimator(pipe), feature_space="model",
                        response_method="decision_function", n_evals=16).fit(X)

    def logit(Z):
        with torch.no_grad():
            return module(torch.as_tensor(np.asarray(Z, np.float32))).numpy()[:, 1]

    np.testing.assert_allclose(ex.explain(X[:3]).values,
                               brute_force_shapley(logit, Xt, ex.reference_), atol=1e-5)
    # input space: the Pipeline is no torch module; the Hessian needs the model space
    inp = ShearExplainer(FrozenEstimator(pipe), n_evals=4, random_state=0).fit(X)
    assert inp.cross_contribution_ == "finite_difference"
    assert inp.output_names_ == ["proba(1)"]
    with pytest.raises(ValueError, match=r"feature_space='model'.*finite_difference"):
        ShearExplainer(FrozenEstimator(pipe), cooperators="hessian").fit(X)
