"""ShearExplainer and its torch adapter against brute-force oracles.

Oracles: Shapley values by enumerating every coalition with the factorial weights (written
here, independently of the package's estimators), closed-form values of dividend games,
central finite differences for gradients and Hessians.
"""

import itertools
import pickle
from math import factorial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joblib import parallel_config
from scipy import stats
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_xai import ShearExplainer
from sklearn_xai._random import row_keys
from sklearn_xai._utils import draw_base_seed, keyed_generators
from sklearn_xai.shapley import _shear as S
from sklearn_xai.shapley import estimate_shapley
from sklearn_xai.testing import DividendGame, pairwise_games

torch = pytest.importorskip("torch")


# ----------------------------------------------------------------------------- oracles


def brute_force_shapley(f, X, r, groups=None):
    """phi[n, i, o] by enumerating all coalitions of players with Shapley weights."""
    X = np.asarray(X, float)
    r = np.asarray(r, float).reshape(-1)
    groups = [[j] for j in range(X.shape[1])] if groups is None else groups
    P = len(groups)
    out = None
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
                d = np.asarray(f(z1), float).reshape(len(X), -1) - np.asarray(
                    f(z0), float).reshape(len(X), -1)
                if out is None:
                    out = np.zeros((len(X), P, d.shape[1]))
                out[:, i] += w * d
    return out


def value_fn_of(f, X, r):
    """The single-reference game v(S) = f(x_S, r_~S) as a value callback."""
    X = np.asarray(X, float)

    def value(masks):
        masks = np.asarray(masks, bool)
        if masks.ndim == 2:
            masks = np.broadcast_to(masks, (len(X),) + masks.shape)
        Z = np.where(masks, X[:, None, :], r[None, None, :])
        return np.asarray(f(Z.reshape(-1, X.shape[1])), float).reshape(len(X), masks.shape[1], -1)

    return value


def shear_on_game(game, coop, seed=0, **kw):
    phi, base, _ = S._shear_estimate(game.value, coop, np.arange(game.n_rows), seed, **kw)
    return phi, base


class Quadratic(torch.nn.Module):
    """f(x) = x A x^T + b x + c x0 x1 x2 (smooth; Hessian A + A^T plus the cubic part)."""

    def __init__(self, d, cubic=0.0, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.A = torch.nn.Parameter(torch.randn(d, d, generator=g, dtype=torch.float64))
        self.b = torch.nn.Parameter(torch.randn(d, generator=g, dtype=torch.float64))
        self.cubic = cubic

    def forward(self, x):
        out = ((x @ self.A) * x).sum(-1) + x @ self.b
        out = out + self.cubic * x[:, 0] * x[:, 1] * x[:, 2]
        return out[:, None]


def softplus_mlp(d, n_out=1, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(d, 16), torch.nn.Softplus(), torch.nn.Linear(16, 16),
        torch.nn.Softplus(), torch.nn.Linear(16, n_out)).to(dtype)


def torch_f(module):
    def f(Z):
        with torch.no_grad():
            return module(torch.as_tensor(np.asarray(Z, float), dtype=torch.float64)).numpy()

    return f


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 6))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(np.int64)
    return X, y


# ----------------------------------------------------------------------------- core estimator


@settings(max_examples=40)
@given(pairwise_games(min_players=2, max_players=7, n_rows=2), st.integers(0, 10**6),
       st.sampled_from(["shapley", "uniform"]))
def test_pairwise_games_exact_whatever_the_cooperators(game, seed, fill):
    P = game.n_players
    for K in range(1, P):
        coop = S._random_cooperators(P, K, [K, -K], seed)
        phi, base = shear_on_game(game, coop, seed, non_cooperators=fill)
        ref_phi, ref_base = game.shapley_values()
        np.testing.assert_allclose(phi, ref_phi, atol=1e-9)
        np.testing.assert_allclose(base, ref_base, atol=1e-12)


def test_without_pairing_pairwise_is_not_exact():
    # control for the test above: the exactness comes from the antithetic pairing
    game = DividendGame(6, {(0, 3): 2.0, (0, 4): -1.5, (1, 5): 1.0, (2,): 0.5}, n_rows=3)
    coop = S._random_cooperators(6, 2, np.arange(3), 0)
    phi, _ = shear_on_game(game, coop, antithetic=False)
    assert np.abs(phi - game.shapley_values()[0]).max() > 1e-3


@given(st.integers(2, 6), st.integers(0, 10**6))
@settings(max_examples=15)
def test_all_others_cooperators_is_exact_enumeration(P, seed):
    # K = P - 1: no random fill; the (K+1)-player weights must give the exact values
    rng = np.random.default_rng(seed)
    terms = {tuple(sorted(rng.choice(P, size=k, replace=False))): rng.normal()
             for k in range(1, P + 1) for _ in range(2)}
    game = DividendGame(P, terms, n_rows=1)
    coop = np.array([[np.delete(np.arange(P), i) for i in range(P)]])
    phi, _ = shear_on_game(game, coop, seed)
    np.testing.assert_allclose(phi, game.shapley_values()[0], atol=1e-10)


def test_third_order_exact_when_both_partners_selected():
    P = 7
    terms = {(0, 1, 2): 3.0, (0, 4): 0.7, (1, 5): -0.4, (3, 6): 0.9, (2,): 1.0, (5,): -2.0}
    game = DividendGame(P, terms, n_rows=4)
    exact = game.shapley_values()[0]
    # selection by the mixed difference picks the triple's partners (largest eta)
    eta = S._cross_contribution_finite_difference(game.value, 4, P)
    coop = S._top_k_cooperators(eta, 2)
    assert set(coop[0, 0]) == {1, 2} and set(coop[0, 1]) == {0, 2} and set(coop[0, 2]) == {0, 1}
    for fill in ("shapley", "uniform"):
        phi, _ = shear_on_game(game, coop, non_cooperators=fill)
        np.testing.assert_allclose(phi, exact, atol=1e-12)
    # control: with a partner of 0 left out, the uniform fill is off for player 0
    bad = coop.copy()
    bad[:, 0] = [3, 4]
    phi, _ = shear_on_game(game, bad, non_cooperators="uniform")
    assert np.abs(phi[:, 0] - exact[:, 0]).max() > 0.05


def test_shapley_fill_is_unbiased_and_uniform_fill_is_not():
    n = 3000
    terms = {(0, 1, 2): 3.0, (0, 1, 2, 3): -2.0, (1, 4): 1.0, (4, 5, 0): 1.5}
    game = DividendGame(6, terms, n_rows=n)
    exact = game.shapley_values()[0][0, :, 0]
    coop = np.broadcast_to(np.array([[(i + 1) % 6, (i + 2) % 6] for i in range(6)]), (n, 6, 2))
    res = {}
    for fill in ("shapley", "uniform"):
        phi = shear_on_game(game, coop, 1, non_cooperators=fill)[0][:, :, 0]
        se = phi.std(axis=0) / np.sqrt(n) + 1e-12
        res[fill] = np.abs(phi.mean(axis=0) - exact) / se
    assert res["shapley"].max() < 5.0, res["shapley"]
    assert res["uniform"].max() > 10.0, res["uniform"]


def test_masks_pair_subsets_and_fills_with_their_complements():
    coop = np.array([[[1, 2], [0, 3], [1, 3], [0, 1]]])
    masks = S._shear_masks(coop, [0], 0, antithetic=True)  # (1, P, 4, 2, P)
    P = 4
    for i in range(P):
        others = [j for j in range(P) if j != i and j not in coop[0, i]]
        without = masks[0, i, :, 1]
        assert not without[:, i].any() and masks[0, i, :, 0, i].all()
        for t in range(4):
            np.testing.assert_array_equal(without[t, others], ~without[3 - t, others])
            np.testing.assert_array_equal(without[t, coop[0, i]], ~without[3 - t, coop[0, i]])
        np.testing.assert_array_equal(np.delete(masks[0, i, :, 0], i, axis=1),
                                      np.delete(without, i, axis=1))


def test_weights_sum_to_one_and_match_factorial_formula():
    for K in range(6):
        w = S._cooperator_weights(K)
        assert w.shape == (2**K,)
        np.testing.assert_allclose(w.sum(), 1.0)
        bits = S._subset_bits(K).sum(axis=1)
        np.testing.assert_allclose(
            w, [factorial(t) * factorial(K - t) / factorial(K + 1) for t in bits])


# ----------------------------------------------------------------------------- cross-contribution


def test_finite_difference_eta_is_exact_hessian_term_for_quadratics():
    rng = np.random.default_rng(3)
    d = 5
    A = rng.normal(size=(d, d))
    X, r = rng.normal(size=(4, d)), rng.normal(size=d)

    def f(Z):
        return (np.einsum("ni,ij,nj->n", Z, A, Z))[:, None]

    eta = S._cross_contribution_finite_difference(value_fn_of(f, X, r), 4, d)
    H = A + A.T
    dist = np.abs(X - r)
    expect = np.abs(H)[None] * dist[:, :, None] * dist[:, None, :]
    off = ~np.eye(d, dtype=bool)
    np.testing.assert_allclose(eta[:, off], expect[:, off], rtol=1e-10, atol=1e-12)
    assert np.all(np.isneginf(eta[:, ~off]))


def test_hessian_eta_hvp_equals_full_hessian_block_max_with_groups():
    from sklearn_xai._torch import TorchModelFunction

    d = 8
    groups = [[0], [1, 2, 3], [4], [5, 6], [7]]
    col_to_player = np.empty(d, int)
    for p, g in enumerate(groups):
        col_to_player[g] = p
    fn = TorchModelFunction(softplus_mlp(d, n_out=2, seed=1))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, d))
    r = rng.normal(size=d)
    X[0, [1, 2]] = r[[1, 2]]  # some columns equal to the reference: skipped HVPs
    X[3] = r                  # a row equal to the reference: eta 0
    fast = S._cross_contribution_hessian(fn.hessian_columns, X, r, col_to_player, 5)
    full = S._cross_contribution_from_full_hessian(fn.hessian(X), X, r, col_to_player, 5)
    np.testing.assert_allclose(fast, full, rtol=1e-10, atol=1e-14)
    assert np.all(fast[3][~np.eye(5, dtype=bool)] == 0)


def test_hessian_and_fd_eta_agree_on_quadratic_torch_model():
    d = 5
    model = Quadratic(d)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, d))
    e_h = ShearExplainer(model, cooperators="hessian", n_evals=8).fit(X)
    e_f = ShearExplainer(model, cooperators="finite_difference", n_evals=8).fit(X)
    a_h, a_f = e_h.explain(X[:5]), e_f.explain(X[:5])
    np.testing.assert_allclose(a_h.extras["cross_contribution"],
                               a_f.extras["cross_contribution"], rtol=1e-8, atol=1e-10)


def test_torch_gradient_and_hessian_equal_finite_differences():
    from sklearn_xai._torch import TorchModelFunction

    d = 4
    fn = TorchModelFunction(softplus_mlp(d, n_out=2, seed=4))
    X = np.random.default_rng(4).normal(size=(5, d))
    h = 1e-4
    E = np.eye(d)
    fd_grad = np.stack([(fn(X + h * E[k]) - fn(X - h * E[k])) / (2 * h) for k in range(d)], -1)
    np.testing.assert_allclose(fn.gradient(X), fd_grad, atol=1e-7)
    h = 1e-3
    fd_hess = np.empty((5, 2, d, d))
    for a in range(d):
        for b in range(d):
            fd_hess[:, :, a, b] = (fn(X + h * (E[a] + E[b])) - fn(X + h * (E[a] - E[b]))
                                   - fn(X - h * (E[a] - E[b])) + fn(X - h * (E[a] + E[b]))
                                   ) / (4 * h * h)
    H = fn.hessian(X)
    np.testing.assert_allclose(H, fd_hess, atol=1e-6)
    np.testing.assert_allclose(H, np.swapaxes(H, 2, 3), atol=1e-12)
    V = np.random.default_rng(5).normal(size=(5, 3, d))
    for method in ("batched", "vmap"):
        np.testing.assert_allclose(fn.hessian_vector_product(X, V, method=method),
                                   np.einsum("noab,nlb->nloa", H, V), atol=1e-12)
    rows, cols = np.array([0, 0, 3, 4, 4]), np.array([1, 3, 0, 2, 3])
    np.testing.assert_allclose(fn.hessian_columns(X, rows, cols),
                               H[rows, :, :, cols], atol=1e-12)
    # a linear module: zero Hessian, no graph for the second derivative
    lin = TorchModelFunction(torch.nn.Linear(d, 1).double())
    np.testing.assert_array_equal(lin.hessian_vector_product(X, V), 0.0)
    np.testing.assert_array_equal(lin.hessian_columns(X, [0, 1], [2, 0]), 0.0)


# ----------------------------------------------------------------------------- explainer


def test_explainer_exact_for_pairwise_torch_model_any_cooperators():
    d = 6
    model = Quadratic(d, seed=7)
    X = np.random.default_rng(7).normal(size=(40, d))
    truth = None
    for coop in ("hessian", "finite_difference", "random"):
        e = ShearExplainer(model, n_evals=4, cooperators=coop, random_state=0).fit(X)
        a = e.explain(X[:6])
        if truth is None:
            truth = brute_force_shapley(torch_f(model), X[:6], e.reference_)[:, :, 0]
        np.testing.assert_allclose(a.values, truth, atol=1e-9)
        assert a.extras["cooperators"].shape == (6, d, 1)


def test_explainer_third_order_exact_when_selected():
    d = 6
    model = Quadratic(d, cubic=25.0, seed=8)
    with torch.no_grad():
        model.A.mul_(0.05)
    X = np.random.default_rng(8).normal(size=(40, d)) + 2.0
    e = ShearExplainer(model, n_evals=8, cooperators="hessian", random_state=0).fit(X)
    a = e.explain(X[:5])
    coop = a.extras["cooperators"]
    for i, partners in ((0, {1, 2}), (1, {0, 2}), (2, {0, 1})):
        assert all(set(c) == partners for c in coop[:, i])
    truth = brute_force_shapley(torch_f(model), X[:5], e.reference_)[:, :, 0]
    np.testing.assert_allclose(a.values, truth, atol=1e-9)


def test_explainer_equals_exact_enumeration_when_budget_covers_all(data):
    X, y = data
    model = softplus_mlp(6, seed=9)
    e = ShearExplainer(model, n_evals=64, random_state=0).fit(X)
    a = e.explain(X[:4])
    truth = brute_force_shapley(torch_f(model), X[:4], e.reference_)[:, :, 0]
    np.testing.assert_allclose(a.values, truth, atol=1e-10)
    f = torch_f(model)
    np.testing.assert_allclose(a.base_values, f(e.reference_)[0, 0] * np.ones(4), atol=1e-12)
    # small budget: close to exact but not equal on a network with all interaction orders
    a8 = ShearExplainer(model, n_evals=8, random_state=0).fit(X).explain(X[:4])
    assert 0 < np.abs(a8.values - truth).max() < 0.1 * np.abs(truth).max()


def test_pipeline_model_finite_difference_and_groups(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    groups = [[0, 1], [2], [3, 4], [5]]
    e = ShearExplainer(FrozenEstimator(pipe), n_evals=16, feature_groups=groups,
                       random_state=0).fit(X)
    assert e.cross_contribution_ == "finite_difference"
    a = e.explain(X[:5])
    truth = brute_force_shapley(lambda Z: pipe.predict_proba(Z)[:, 1], X[:5], e.reference_,
                                groups)[:, :, 0]
    np.testing.assert_allclose(a.values, truth, atol=1e-12)  # 16 >= 2^4: exact
    with pytest.raises(ValueError, match="hessian"):
        ShearExplainer(FrozenEstimator(pipe), cooperators="hessian").fit(X)


def test_explainer_as_pipeline_step(data):
    X, y = data
    clf = LogisticRegression().fit(X, y)
    pipe = make_pipeline(ShearExplainer(FrozenEstimator(clf), n_evals=8, random_state=0),
                         LinearRegression())
    pipe.fit(X, y)
    phi = pipe[0].transform(X[:5])
    # the step's output is the explainer's values, and the next step consumes them
    np.testing.assert_array_equal(phi, pipe[0].explain(X[:5]).values)
    assert pipe.predict(X[:5]).shape == (5,)


def test_n_rounds_splits_the_budget(data):
    X, _ = data
    model = softplus_mlp(6, seed=17)
    one = ShearExplainer(model, n_evals=16, random_state=0).fit(X)
    two = ShearExplainer(model, n_evals=16, n_rounds=2, random_state=0).fit(X)
    four = ShearExplainer(model, n_evals=16, n_rounds=4, random_state=0).fit(X)
    assert (one.n_cooperators_, one.n_rounds_) == (3, 1)
    assert (two.n_cooperators_, two.n_rounds_) == (2, 2)
    assert (four.n_cooperators_, four.n_rounds_) == (1, 4)
    a = two.explain(X[:9])
    assert a.extras["cooperators"].shape == (9, 6, 2)
    np.testing.assert_array_equal(a.extras["n_rounds"], 2)
    np.testing.assert_array_equal(a.extras["n_evals"], 16)
    assert np.isfinite(a.std).all() and a.std.max() > 0  # all interaction orders
    # a row's rounds follow the row and the seed only
    b = ShearExplainer(model, n_evals=16, n_rounds=2, random_state=0,
                       batch_size=4).fit(X).explain(X[:9][::-1])
    np.testing.assert_allclose(b.values[::-1], a.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.std[::-1], a.std, rtol=0, atol=1e-12)
    # pairwise models stay exact with any split, with standard errors 0
    quad = Quadratic(6, seed=18)
    ref = ShearExplainer(quad, n_evals=64).fit(X).explain(X[:4]).values
    for R in (2, 4):
        att = ShearExplainer(quad, n_evals=16, n_rounds=R, random_state=0).fit(X).explain(
            X[:4])
        np.testing.assert_allclose(att.values, ref, atol=1e-9)
        np.testing.assert_allclose(att.std, 0.0, atol=1e-9)


def test_deterministic_for_random_state_n_jobs_and_batch_size(data):
    X, _ = data
    model = softplus_mlp(6, seed=10)
    ref = ShearExplainer(model, n_evals=8, random_state=3).fit(X).explain(X[:9]).values
    # the same draws for any batch; the values up to the round-off of torch's batched
    # forward passes, whose matrix kernels block the rows of a batch differently on other
    # CPUs (up to 5.9e-17 here on an AMD EPYC; equal bits on the earlier runs' Xeon)
    for n_jobs, bs in ((1, 1), (2, 4), (None, 100)):
        e = ShearExplainer(model, n_evals=8, random_state=3, n_jobs=n_jobs,
                           batch_size=bs).fit(X)
        with parallel_config(backend="threading"):  # processes would re-import torch (slow)
            np.testing.assert_allclose(e.explain(X[:9]).values, ref, rtol=0, atol=1e-12)
    other = ShearExplainer(model, n_evals=8, random_state=4).fit(X).explain(X[:9]).values
    assert np.abs(other - ref).max() > 0
    # random cooperators are per-row too
    r1 = ShearExplainer(model, n_evals=8, cooperators="random", random_state=5,
                        batch_size=2).fit(X).explain(X[:7])
    r2 = ShearExplainer(model, n_evals=8, cooperators="random", random_state=5,
                        batch_size=7).fit(X).explain(X[:7])
    np.testing.assert_array_equal(r1.extras["cooperators"], r2.extras["cooperators"])
    np.testing.assert_allclose(r1.values, r2.values, rtol=0, atol=1e-12)


def test_efficiency_options(data):
    X, _ = data
    model = softplus_mlp(6, seed=11)
    f = torch_f(model)
    gap = {}
    for eff in ("none", "redistribute", "even", "variance"):
        e = ShearExplainer(model, n_evals=4, efficiency=eff, random_state=0).fit(X)
        a = e.explain(X[:6])
        gap[eff] = a.additivity_gap(f(X[:6])[:, 0])
    assert gap["none"] > 1e-6
    assert gap["redistribute"] < 1e-10 and gap["even"] < 1e-10 and gap["variance"] < 1e-10
    assert ShearExplainer().efficiency == "variance"
    # the GLS projection: residual shared in proportion to the variances, standard errors
    # those of the projected estimate, sqrt(s^2 - s^4 / sum s^2)
    raw, proj = (ShearExplainer(model, n_evals=16, n_rounds=2, efficiency=eff, random_state=0)
                 .fit(X).explain(X[:6]) for eff in ("none", "variance"))
    assert np.all(np.isfinite(raw.std)) and np.all(raw.std.sum(axis=1) > 0)
    # the variances without the Student-t widening (the players' degrees of freedom
    # differ here), the projected standard errors widened again by each player's own
    widen = stats.t.ppf(0.975, raw.std_dof) / stats.norm.ppf(0.975)
    assert np.ptp(widen) > 0.1
    var = (raw.std / widen) ** 2
    resid = f(X[:6])[:, 0] - raw.base_values - raw.values.sum(axis=1)
    np.testing.assert_allclose(proj.values, raw.values + var / var.sum(axis=1, keepdims=True)
                               * resid[:, None], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(proj.std, widen * np.sqrt(
        var - var**2 / var.sum(axis=1, keepdims=True)), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(proj.std_dof, raw.std_dof)


def test_frontier_algorithm_on_the_torch_game(data):
    # the same game as SHEAR (torch hybrid rows, one reference row), estimated by
    # frontier_shapley: efficient, exact once the budget covers every coalition of the
    # row's active players, and far closer to the exact values than SHEAR at equal budget
    X, _ = data
    model = softplus_mlp(6, seed=12)
    f = torch_f(model)
    small = ShearExplainer(model, n_evals=5, algorithm="frontier", random_state=0).fit(X)
    rows = X[:8].copy()
    rows[:4, :3] = small.reference_[0, :3]       # three dummies: 2^3 - 2 <= 5 * 6 coalitions
    exact = ShearExplainer(model, n_evals=64, random_state=0).fit(X).explain(rows)
    a = small.explain(rows)
    assert a.extras["algorithm"] == "frontier" and a.extras["cooperators"] is None
    assert list(a.extras["paths"][:4]) == ["exact"] * 4
    # the degrees of freedom the frontier widened its standard errors by (inf where exact)
    dof = a.std_dof
    assert dof.shape == a.std.shape and np.all(np.isinf(dof[:4]))
    est = estimate_shapley(small._game(rows, np.arange(8)), "frontier", 5,
                           keyed_generators(draw_base_seed(0), row_keys(rows)))
    np.testing.assert_array_equal(dof, est.dof[:, :, 0])
    np.testing.assert_array_equal(a.std, est.std[:, :, 0])
    np.testing.assert_allclose(a.values[:4], exact.values[:4], rtol=0, atol=1e-10)
    np.testing.assert_array_equal(a.values[:4, :3], 0.0)
    np.testing.assert_allclose(a.base_values + a.values.sum(axis=1), f(rows)[:, 0], rtol=0,
                               atol=1e-10)
    shear = ShearExplainer(model, n_evals=8, random_state=0).fit(X).explain(rows[4:])
    front = ShearExplainer(model, n_evals=8, algorithm="frontier", random_state=0).fit(X)
    err_front = np.abs(front.explain(rows[4:]).values - exact.values[4:]).mean()
    assert err_front < 0.5 * np.abs(shear.values - exact.values[4:]).mean()


def test_one_hot_groups_reference_is_a_valid_category():
    rng = np.random.default_rng(12)
    cat = rng.choice(3, size=80, p=[0.2, 0.5, 0.3])
    onehot = np.eye(3)[cat]
    X = np.column_stack([rng.normal(size=80), onehot, rng.normal(size=80)])
    model = softplus_mlp(5, seed=12)
    e = ShearExplainer(model, feature_groups={"a": [0], "c": [1, 2, 3], "b": [4]},
                       n_evals=8).fit(X)
    np.testing.assert_array_equal(e.reference_[0, 1:4], [0, 1, 0])
    np.testing.assert_allclose(e.reference_[0, [0, 4]], X[:, [0, 4]].mean(axis=0))
    a = e.explain(X[:3])
    assert a.feature_names == ["a", "c", "b"]
    truth = brute_force_shapley(torch_f(model), X[:3], e.reference_,
                                [[0], [1, 2, 3], [4]])[:, :, 0]
    np.testing.assert_allclose(a.values, truth, atol=1e-10)


# ----------------------------------------------------------------------------- skorch


@pytest.fixture(scope="module")
def skorch_net(data):
    skorch = pytest.importorskip("skorch")
    X, y = data
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Softplus(),
                                 torch.nn.Linear(8, 2))
    net = skorch.NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss, max_epochs=3,
                                     lr=0.1, train_split=None, verbose=0)
    net.fit(X.astype(np.float32), y)
    return net


def test_skorch_logit_and_probability_outputs(data, skorch_net):
    X, _ = data
    X32 = X.astype(np.float32)
    e = ShearExplainer(FrozenEstimator(skorch_net), response_method="decision_function",
                       n_evals=64).fit(X32)
    assert e.output_names_ == ["margin(1)"]
    assert e.cross_contribution_ == "hessian"
    a = e.explain(X32[:4])
    with torch.no_grad():
        logits = skorch_net.module_(torch.as_tensor(X32[:4])).numpy()
    np.testing.assert_allclose(a.values.sum(1) + a.base_values, logits[:, 1], atol=1e-5)
    p = ShearExplainer(FrozenEstimator(skorch_net), n_evals=64).fit(X32)
    assert p.output_names_ == ["proba(1)"]
    ap = p.explain(X32[:4])
    np.testing.assert_allclose(ap.values.sum(1) + ap.base_values,
                               skorch_net.predict_proba(X32[:4])[:, 1], atol=1e-5)


def test_grid_search_over_n_evals_with_frozen_skorch(data, skorch_net):
    X, y = data
    X32 = X.astype(np.float32)
    grid = GridSearchCV(ShearExplainer(FrozenEstimator(skorch_net), random_state=0),
                        {"n_evals": [4, 8, 16]}, cv=2)
    grid.fit(X32, y)
    scores = grid.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(np.abs(scores) <= 1)
    assert grid.best_params_["n_evals"] in (4, 8, 16)
    direct = ShearExplainer(FrozenEstimator(skorch_net), random_state=0,
                            n_evals=grid.best_params_["n_evals"]).fit(X32, y)
    np.testing.assert_array_equal(grid.best_estimator_.explain(X32[:3]).values,
                                  direct.explain(X32[:3]).values)


def test_pickle_roundtrip(data, skorch_net):
    X, _ = data
    X32 = X.astype(np.float32)
    for model in (FrozenEstimator(skorch_net), softplus_mlp(6, seed=13)):
        Xm = X32 if model is not None and hasattr(model, "estimator") else X
        e = ShearExplainer(model, n_evals=8, random_state=0).fit(Xm)
        before = e.explain(Xm[:5]).values
        e2 = pickle.loads(pickle.dumps(e))
        np.testing.assert_array_equal(e2.explain(Xm[:5]).values, before)


def test_relu_net_auto_uses_finite_differences(data):
    X, _ = data
    torch.manual_seed(0)
    relu = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    e = ShearExplainer(relu, n_evals=8).fit(X.astype(np.float32))
    assert e.cross_contribution_ == "finite_difference"


# ----------------------------------------------------------------------------- errors


def test_bad_parameters_raise(data):
    X, y = data
    model = softplus_mlp(6)
    with pytest.raises(ValueError, match="power of two"):
        ShearExplainer(model, n_evals=12).fit(X)
    with pytest.raises(ValueError, match="n_evals"):
        ShearExplainer(model, n_evals=1).fit(X)
    with pytest.raises(ValueError, match="background"):
        ShearExplainer(model, background=np.zeros(5)).fit(X)
    with pytest.raises(ValueError, match="cooperators"):
        ShearExplainer(model, cooperators="gradient").fit(X)
    for n_rounds in (0, 3, 8):  # not a power of two, or more than n_evals / 2
        with pytest.raises(ValueError, match="n_rounds"):
            ShearExplainer(model, n_evals=8, n_rounds=n_rounds).fit(X)
    with pytest.raises(ValueError, match="response_method"):
        ShearExplainer(model, response_method="predict_proba").fit(X)
    with pytest.raises(NotFittedError):
        ShearExplainer(model).explain(X)
    with pytest.raises(ValueError, match="FrozenEstimator"):
        ShearExplainer(LogisticRegression()).fit(X)
    e = ShearExplainer(model).fit(X)
    with pytest.raises(ValueError, match="features"):
        e.explain(X[:, :5])


class _Wrapped(torch.nn.Module):
    """A custom module around an MLP: no first-layer factorisation (generic path)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


def _no_bias_mlp(d, seed):
    net = softplus_mlp(d, n_out=2, seed=seed)
    first = torch.nn.Linear(d, 16, bias=False).double()
    with torch.no_grad():
        first.weight.copy_(net[0].weight)
    return torch.nn.Sequential(first, *list(net)[1:])


@pytest.mark.parametrize("kind", ["sequential", "no_bias", "custom"])
def test_torch_reference_game_equals_imputation_game(kind):
    from sklearn_xai._torch import TorchModelFunction
    from sklearn_xai.shapley import ImputationGame

    rng = np.random.default_rng(14)
    X, r = rng.normal(size=(7, 6)), rng.normal(size=(1, 6))
    groups = [[0, 3], [1], [2, 4, 5]]
    c2p = np.array([0, 1, 2, 0, 2, 2])
    module = {"sequential": lambda: softplus_mlp(6, n_out=2, seed=14),
              "no_bias": lambda: _no_bias_mlp(6, 14),
              "custom": lambda: _Wrapped(softplus_mlp(6, n_out=2, seed=14))}[kind]()
    fn = TorchModelFunction(module)
    # the Sequential models take the factored first layer, the custom module does not
    assert (fn.first_linear_layer() is None) == (kind == "custom")
    V = rng.normal(size=(7, 3, 6))
    np.testing.assert_allclose(fn.hessian_vector_product(X, V),
                               fn.hessian_vector_product(X, V, method="vmap"), atol=1e-12)
    H = fn.hessian(X)
    rows, cols = np.array([0, 2, 2, 6]), np.array([5, 0, 3, 1])
    np.testing.assert_allclose(fn.hessian_columns(X, rows, cols),
                               H[rows, :, :, cols], atol=1e-12)
    fast = S._TorchReferenceGame(fn, X, r, c2p, 3, max_rows=10)
    slow = ImputationGame(fn, X, r, groups=groups)
    shared = rng.random((5, 3)) < 0.5
    per_row = rng.random((7, 5, 3)) < 0.5
    # equal up to the summation order of different batch shapes
    np.testing.assert_allclose(fast.value(shared), slow.value(shared), rtol=0, atol=1e-13)
    np.testing.assert_allclose(fast.value(per_row), slow.value(per_row), rtol=0, atol=1e-13)


def test_torch_adapter_errors(monkeypatch):
    import sys

    skorch = pytest.importorskip("skorch")
    from sklearn_xai._torch import TorchModelFunction, _import_torch

    with pytest.raises(TypeError, match="torch.nn.Module or a fitted skorch net"):
        TorchModelFunction(LogisticRegression())
    with pytest.raises(ValueError, match="not initialized"):
        TorchModelFunction(skorch.NeuralNetClassifier(torch.nn.Linear(3, 2)))
    with pytest.raises(ValueError, match="only defined for skorch classifiers"):
        TorchModelFunction(torch.nn.Linear(3, 2), output="proba")
    fn = TorchModelFunction(torch.nn.Linear(3, 2))
    with pytest.raises(ValueError, match="2-D"):
        fn(np.zeros(3))
    with pytest.raises(ValueError, match="n_directions"):
        fn.hessian_vector_product(np.zeros((2, 3)), np.zeros((2, 3)))
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"sklearn-xai\[torch\]"):
        _import_torch()


def test_multi_output_module_shapes_and_exactness(data):
    X, _ = data
    model = softplus_mlp(6, n_out=3, seed=15)
    e = ShearExplainer(model, n_evals=64).fit(X)
    a = e.explain(X[:3])
    assert a.values.shape == (3, 6, 3) and a.base_values.shape == (3, 3)
    assert e.output_names_ == ["predict[0]", "predict[1]", "predict[2]"]
    np.testing.assert_allclose(a.values, brute_force_shapley(torch_f(model), X[:3],
                                                             e.reference_), atol=1e-10)
    one = ShearExplainer(model, n_evals=8, target=2, random_state=0).fit(X).explain(X[:3])
    assert one.values.shape == (3, 6)
    assert ShearExplainer(model, n_evals=8).fit(X).transform(X[:3]).shape == (3, 18)


def test_dataframe_with_strings_through_a_pipeline():
    pd = pytest.importorskip("pandas")
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(16)
    df = pd.DataFrame({"a": rng.normal(size=80), "colour": rng.choice(["r", "g", "b"], 80),
                       "b": rng.normal(size=80)})
    y = ((df["a"] > 0) ^ (df["colour"] == "g")).astype(int)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["colour"]),
                                                 remainder="passthrough"),
                         LogisticRegression()).fit(df, y)
    e = ShearExplainer(FrozenEstimator(pipe), n_evals=8, random_state=0).fit(df)
    assert e.reference_[0, 1] == df["colour"].mode()[0]
    a = e.explain(df.iloc[:4])
    # brute force over the three columns, through the DataFrame
    X = df.iloc[:4].to_numpy(dtype=object)
    r = e.reference_[0]
    truth = np.zeros((4, 3))
    for i in range(3):
        others = [j for j in range(3) if j != i]
        for s in range(3):
            w = factorial(s) * factorial(2 - s) / factorial(3)
            for T in itertools.combinations(others, s):
                z0 = np.tile(r, (4, 1)).astype(object)
                z0[:, list(T)] = X[:, list(T)]
                z1 = z0.copy()
                z1[:, i] = X[:, i]
                f0 = pipe.predict_proba(pd.DataFrame(z0, columns=df.columns).astype(
                    {"a": float, "b": float}))[:, 1]
                f1 = pipe.predict_proba(pd.DataFrame(z1, columns=df.columns).astype(
                    {"a": float, "b": float}))[:, 1]
                truth[:, i] += w * (f1 - f0)
    np.testing.assert_allclose(a.values, truth, atol=1e-12)


def test_top_k_cooperators_equals_stable_sort_with_ties_and_nan():
    rng = np.random.default_rng(21)
    eta = rng.integers(0, 4, size=(30, 7, 7)).astype(float)  # many ties
    eta[rng.random(eta.shape) < 0.1] = np.nan
    eta[:, np.arange(7), np.arange(7)] = rng.normal(size=(30, 7)) * 100  # diagonal ignored
    for K in range(0, 7):
        masked = eta.copy()
        masked[:, np.arange(7), np.arange(7)] = -np.inf
        key = np.where(np.isnan(masked), np.inf, -masked)  # NaN last, then stable
        key[:, np.arange(7), np.arange(7)] = np.nan  # the diagonal after everything
        expected = np.sort(np.argsort(key, axis=-1, kind="stable")[..., :K], axis=-1)
        np.testing.assert_array_equal(S._top_k_cooperators(eta, K), expected)


@pytest.mark.parametrize("act", [torch.nn.Softplus, torch.nn.Tanh, torch.nn.GELU, torch.nn.SiLU,
                                 torch.nn.ReLU])
def test_mlp_chain_hessian_columns_equal_autograd(act, monkeypatch):
    from sklearn_xai._torch import TorchModelFunction

    torch.manual_seed(3)
    d = 7
    module = torch.nn.Sequential(
        torch.nn.Linear(d, 12), act(), torch.nn.Dropout(0.1), torch.nn.Linear(12, 9), act(),
        torch.nn.Linear(9, 3)).double()
    fn = TorchModelFunction(module, output_columns=[2, 0])
    assert fn._mlp_chain() is not None
    rng = np.random.default_rng(4)
    X = rng.normal(size=(6, d))
    rows = np.repeat(np.arange(6), 3)
    cols = rng.integers(0, d, size=rows.size)
    fast = fn.hessian_columns(X, rows, cols)
    H = fn.hessian(X)  # vmap(hessian), no chain involved
    np.testing.assert_allclose(fast, H[rows, :, :, cols], atol=1e-12)
    V = rng.normal(size=(6, 2, d))
    np.testing.assert_allclose(fn.hessian_vector_product(X, V),
                               np.einsum("noab,nlb->nloa", H, V), atol=1e-12)
    # the autograd path (first-layer split) gives the same numbers
    monkeypatch.setattr(TorchModelFunction, "_mlp_chain", lambda self: None)
    np.testing.assert_allclose(fn.hessian_columns(X, rows, cols), fast, atol=1e-12)


def test_mlp_chain_not_used_for_probabilities_or_other_layers():
    from sklearn_xai._torch import TorchModelFunction

    d = 4
    conv_like = torch.nn.Sequential(torch.nn.Linear(d, 5), torch.nn.Softplus(),
                                    torch.nn.LayerNorm(5), torch.nn.Linear(5, 1)).double()
    assert TorchModelFunction(conv_like)._mlp_chain() is None
    starts_with_act = torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Linear(d, 1)).double()
    assert TorchModelFunction(starts_with_act)._mlp_chain() is None
    X = np.random.default_rng(0).normal(size=(3, d))
    fn = TorchModelFunction(conv_like)
    np.testing.assert_allclose(fn.hessian_columns(X, [0, 2], [1, 3]),
                               fn.hessian(X)[[0, 2], :, :, [1, 3]], atol=1e-12)


def test_hessian_paths_accept_in_place_activations():
    from sklearn_xai._torch import TorchModelFunction

    torch.manual_seed(0)
    d = 4
    X = np.random.default_rng(0).normal(size=(3, d))
    V = np.random.default_rng(1).normal(size=(3, 2, d))
    for module in (  # the chain path, and the first-layer split (LayerNorm: not a chain)
        torch.nn.Sequential(torch.nn.Linear(d, 5), torch.nn.ELU(inplace=True),
                            torch.nn.Linear(5, 1)),
        torch.nn.Sequential(torch.nn.Linear(d, 5), torch.nn.ELU(inplace=True),
                            torch.nn.LayerNorm(5), torch.nn.Linear(5, 1)),
    ):
        fn = TorchModelFunction(module.double())
        H = fn.hessian(X)
        np.testing.assert_allclose(fn.hessian_columns(X, [0, 1, 2], [1, 2, 3]),
                                   H[[0, 1, 2], :, :, [1, 2, 3]], atol=1e-12)
        np.testing.assert_allclose(fn.hessian_vector_product(X, V),
                                   np.einsum("noab,nlb->nloa", H, V), atol=1e-12)


def test_torch_explains_reversed_and_strided_views(data):
    # a view with negative or non-unit strides (X[::-1], X[:, ::2] columns kept) is explained
    # like its contiguous copy; torch.as_tensor cannot take negative strides itself
    X, _ = data
    model = softplus_mlp(6, seed=16)
    e = ShearExplainer(model, n_evals=4, random_state=0).fit(X)
    ref = e.explain(np.ascontiguousarray(X[:9][::-1])).values
    np.testing.assert_allclose(e.explain(X[:9][::-1]).values, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(e.explain(X[8::-1]).values, ref, rtol=0, atol=1e-12)
    wide = np.repeat(X[:9], 2, axis=1)[:, ::2]
    np.testing.assert_allclose(e.explain(wide).values, e.explain(X[:9]).values, rtol=0,
                               atol=1e-12)


def test_random_cooperators_uniform_over_subsets_of_the_others():
    P, K, n = 5, 2, 6000
    coop = S._random_cooperators(P, K, np.arange(n), 3)
    assert coop.shape == (n, P, K)
    assert (np.diff(coop, axis=2) > 0).all()  # distinct and sorted
    assert not (coop == np.arange(P)[None, :, None]).any()  # never the player itself
    subsets = list(itertools.combinations(range(1, P), K))
    counts = np.array([np.all(coop[:, 0] == s, axis=1).sum() for s in subsets])
    assert counts.sum() == n
    chi2 = ((counts - n / len(subsets)) ** 2 / (n / len(subsets))).sum()
    assert chi2 < 20.5  # 0.1% quantile of chi2 with 5 degrees of freedom
    # the cooperators of a row depend on (seed, key) only, and K = P - 1 takes all others
    np.testing.assert_array_equal(S._random_cooperators(P, K, [7, 3], 3),
                                  coop[[7, 3]])
    full = S._random_cooperators(P, P - 1, [0], 3)[0]
    np.testing.assert_array_equal(full, [np.delete(np.arange(P), i) for i in range(P)])


def test_rounds_of_fresh_fills_and_their_standard_errors():
    """Round 0 is the one-round estimate; R rounds average R independent fills, and the
    standard error is sqrt(V) t(nu) / t(inf), V = sum_pairs w^2 var_rounds(pair) / R with
    the Satterthwaite degrees of freedom nu."""
    from scipy.stats import t as student_t

    rng = np.random.default_rng(0)
    terms = {T: rng.normal(size=2) for k in (1, 2, 3) for T in itertools.combinations(range(6), k)}
    game = DividendGame(6, terms, n_rows=2)
    coop = S._top_k_cooperators(S._cross_contribution_finite_difference(game.value, 2, 6), 3)
    keys = np.arange(2)
    one, base, _ = S._shear_estimate(game.value, coop, keys, 5)
    rounds = []
    for r in range(4):
        masks = S._shear_coalitions(coop, keys, S._round_seed(5, r))
        v = game.value(masks)[:, :-2].reshape(2, 6, 8, 2, 1)
        rounds.append(v[:, :, :, 0] - v[:, :, :, 1])            # (n, P, 2^K, O)
    w = S._cooperator_weights(3)
    np.testing.assert_allclose(np.einsum("t,npto->npo", w, rounds[0]), one, atol=1e-12)
    phi, base4, _, std, dof = S._shear_estimate(game.value, coop, keys, 5, n_rounds=4,
                                                return_std=True)
    np.testing.assert_allclose(base4, base)
    np.testing.assert_allclose(phi, np.einsum("t,npto->npo", w, np.mean(rounds, axis=0)),
                               atol=1e-12)
    t = np.arange(4)
    pairs = np.stack([d[:, :, t] + d[:, :, 7 - t] for d in rounds], axis=1)  # (n, R, P, 4, O)
    a = w[t][None, None, :, None] ** 2 * pairs.var(axis=1, ddof=1) / 4
    var = a.sum(axis=2)
    nu = var**2 / ((a**2).sum(axis=2) / 3)
    assert np.all((nu >= 3 - 1e-9) & (nu <= 12 + 1e-9))
    np.testing.assert_allclose(dof, nu, rtol=1e-10)
    np.testing.assert_allclose(
        std, np.sqrt(var) * student_t.ppf(0.975, nu) / student_t.ppf(0.975, np.inf),
        rtol=1e-10)
    assert np.all(std > np.sqrt(var))  # three-way terms with non-cooperators: fills matter
    # pairwise games are exact whatever the fill: standard errors 0, in one round or four
    pair_game = DividendGame(6, {T: rng.normal(size=2) for k in (1, 2)
                                 for T in itertools.combinations(range(6), k)}, n_rows=2)
    for R in (1, 4):
        *_, std, dof = S._shear_estimate(pair_game.value, coop, keys, 5, n_rounds=R,
                                         return_std=True)
        np.testing.assert_allclose(std, 0.0, atol=1e-12)


def test_draw_base_seed_of_an_int_is_its_random_state_draw():
    # an int's base seed is kept per int: the same draw as seeding a RandomState with it
    from sklearn.utils import check_random_state

    for seed in (0, 1, 12345, np.int64(7), 2**32 - 1):
        want = int(check_random_state(seed).randint(0, 2**31 - 1))
        assert draw_base_seed(seed) == want and draw_base_seed(seed) == want
    rs = np.random.RandomState(3)
    assert draw_base_seed(rs) != draw_base_seed(rs)          # a RandomState advances
    with pytest.raises(ValueError):
        draw_base_seed(-1)
