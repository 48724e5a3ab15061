"""Faults found in the black-box Shapley estimators and explainers (the second audit).

One test per finding; each failed before its fix.
"""

import numpy as np
import pytest

from sklearn_xai.shapley import ImputationGame, estimate_shapley

from ._oracles import baseline_shapley

pytestmark = pytest.mark.timeout(120)


def test_kernel_players_the_draw_leaves_undetermined_have_no_standard_error():
    # At a small budget the drawn pairs may not identify every player (a rank-deficient
    # design): lstsq's minimum-norm answer is wrong for them and every jackknife refit
    # agrees with it, so their standard error read 0, as if exact.
    P, rng = 9, np.random.default_rng(0)
    undetermined = 0
    for seed in range(40):
        W, X = rng.normal(size=P), rng.normal(size=(1, P))
        game = ImputationGame(lambda Z, W=W: Z @ W, X, np.zeros((1, P)))  # additive
        est = estimate_shapley(game, "kernel", 2, [np.random.default_rng(seed)])
        truth, std = X[0] * W, est.std[0, :, 0]
        determined = np.isfinite(std)
        # what the design determines is exact in an additive game; the rest has no
        # standard error (never 0 beside a wrong value)
        np.testing.assert_allclose(est.values[0, determined, 0], truth[determined],
                                   atol=1e-9)
        assert np.all(np.abs(est.values[0, ~determined, 0] - truth[~determined]) > 1e-9)
        np.testing.assert_allclose(est.values[0, :, 0].sum(), truth.sum(), atol=1e-9)
        undetermined += int((~determined).sum())
    assert undetermined > 0


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_knockoff_explainers_feed_a_float32_skorch_net_its_dtype(kind):
    # KnockoffSHAP / KnockoffSAGE called a float32 skorch net on float64 hybrid rows:
    # torch refused them ("mat1 and mat2 must have the same dtype").
    torch = pytest.importorskip("torch")
    skorch = pytest.importorskip("skorch")
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai import KnockoffSAGE, KnockoffSHAP

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 4)).astype(np.float32)
    out = 1 if kind == "regressor" else 2
    module = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                 torch.nn.Linear(8, out))
    if kind == "regressor":
        y = (X[:, 0] * X[:, 1] + X[:, 2])[:, None]
        net = skorch.NeuralNetRegressor(module, max_epochs=2, verbose=0, train_split=None)
    else:
        y = (X[:, 0] + X[:, 2] > 0).astype(np.int64)
        net = skorch.NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss,
                                         max_epochs=2, verbose=0, train_split=None)
    net.fit(X, y)
    model = FrozenEstimator(net)
    bg = X[:3]
    shap = KnockoffSHAP(model, imputation="marginal", background=bg, algorithm="exact",
                        random_state=0).fit(X)
    att = shap.explain(X[:5])
    # exact values against the marginal game's own enumeration (the net on float32 rows)
    def f(Z):  # the explained output, one per row
        Z = np.asarray(Z, dtype=np.float32)
        p = net.predict(Z) if kind == "regressor" else net.predict_proba(Z)[:, 1]
        return np.asarray(p, dtype=np.float64).reshape(len(Z))

    want = np.mean([baseline_shapley(f, X[:5], b) for b in bg], axis=0)
    np.testing.assert_allclose(att.values.reshape(want.shape), want, atol=1e-6)
    sage = KnockoffSAGE(model, n_knockoffs=2, n_permutations=2, tol=None,
                        random_state=0).fit(X)
    imp = sage.explain(X[:8], y[:8].ravel() if kind == "regressor" else y[:8])
    assert np.all(np.isfinite(imp.values))


def test_shear_cooperators_of_a_relu_net_do_not_depend_on_the_other_rows():
    # A ReLU net's mixed differences hold exact zeros and exact ties whose round-off
    # changed with the other rows of the model call, and ranked the cooperators: 5 of 100
    # rows had other cooperators alone than in a batch, values off by up to 10 %.
    torch = pytest.importorskip("torch")
    from sklearn.frozen import FrozenEstimator
    from sklearn.neural_network import MLPRegressor

    from sklearn_xai import ShearExplainer

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(),
                              torch.nn.Linear(8, 1)).double()
    mlp = MLPRegressor(hidden_layer_sizes=(16,), max_iter=300, random_state=0).fit(
        X, X[:, 0] * X[:, 1] + X[:, 2])
    for model in (net, FrozenEstimator(mlp)):
        exp = ShearExplainer(model, n_evals=16, random_state=0).fit(X)
        assert exp.cross_contribution_ == "finite_difference"
        together = exp.explain(X[:60])
        for r in range(60):
            alone = exp.explain(X[r:r + 1])
            np.testing.assert_array_equal(alone.extras["cooperators"][0],
                                          together.extras["cooperators"][r])
            np.testing.assert_allclose(alone.values[0], together.values[r], rtol=0,
                                       atol=1e-12)


def test_shear_auto_enumerates_once_its_budget_would_buy_every_coalition():
    # n_evals="auto" (K = 3) kept sampling to n_evals = 256 with 5 players, past the
    # 2^5 coalitions that give exact values, and returned values that were not exact.
    from sklearn.frozen import FrozenEstimator
    from sklearn.neural_network import MLPRegressor

    from sklearn_xai import ShearExplainer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = X[:, 0] * X[:, 1] * X[:, 2] + np.tanh(X[:, 3] + X[:, 4])
    model = FrozenEstimator(MLPRegressor(hidden_layer_sizes=(16,), activation="tanh",
                                         max_iter=500, random_state=0).fit(X, y))
    auto = ShearExplainer(model, n_evals="auto", random_state=0).fit(X).explain(X[:4])
    exact = ShearExplainer(model, n_evals=32).fit(X).explain(X[:4])
    ref = X.mean(axis=0)
    want = baseline_shapley(lambda Z: model.predict(Z), X[:4], ref)
    np.testing.assert_allclose(exact.values, want, atol=1e-10)
    np.testing.assert_allclose(auto.values, want, atol=1e-10)
    np.testing.assert_array_equal(auto.extras["n_evals"], 32)
    np.testing.assert_array_equal(auto.extras["n_rounds"], 0)
    assert np.all(auto.std == 0)


@pytest.mark.parametrize("make", ["knockoff_shap", "knockoff_sage", "shear"])
def test_a_background_frame_in_another_order_is_refused(make):
    # a background DataFrame was read by position: reordered (or renamed) columns gave
    # other values with no error
    import pandas as pd
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    from sklearn_xai import KnockoffSAGE, KnockoffSHAP, ShearExplainer

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 4)), columns=list("abcd"))
    y = (frame["a"] + frame["b"] > 0).astype(int)
    model = FrozenEstimator(LogisticRegression().fit(frame, y))
    rows = frame.iloc[:1] if make == "shear" else frame.iloc[:20]

    def build(background):
        if make == "shear":
            return ShearExplainer(model, n_evals=4, background=background, random_state=0)
        cls = KnockoffSHAP if make == "knockoff_shap" else KnockoffSAGE
        return cls(model, imputation="marginal", background=background, random_state=0)

    build(rows).fit(frame)
    with pytest.raises(ValueError, match="background's columns are X's in another order"):
        build(rows[list("dcba")]).fit(frame)
    with pytest.raises(ValueError, match="background's columns .* are not X's"):
        build(rows.rename(columns={"d": "e"})).fit(frame)


def test_knockoff_imputation_says_it_does_not_use_background():
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    from sklearn_xai import KnockoffSHAP

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    model = FrozenEstimator(LogisticRegression().fit(X, X[:, 0] > 0))
    with pytest.warns(UserWarning, match="does not use background"):
        KnockoffSHAP(model, background=X[:5], n_knockoffs=2, random_state=0).fit(X)
