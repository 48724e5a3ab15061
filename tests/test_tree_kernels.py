"""TreeSHAP kernels against brute-force Shapley values of the same games.

Oracles: exact enumeration of all coalitions of the path-dependent game
(absent features follow both children weighted by cover), of the pairwise
Shapley interaction index, and of the interventional game against a background.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sklearn_xai.tree._ensemble import (
    MISSING_NAN,
    MISSING_NONE,
    MISSING_ZERO,
    MODE_CAT,
    MODE_CAT32,
    MODE_LE32,
    MODE_LE64,
    MODE_LT32,
    goes_left,
    make_ensemble,
    predict_raw,
    zero_fractions,
)
from sklearn_xai.tree._kernels import (
    PathTables,
    shap_interactions,
    shap_interventional,
    shap_path_dependent,
)

from ._oracles import values_from_game


def random_tree(rng, M, depth, n_out=1, p_leaf=0.2, zero_cover=0.15, output=0):
    """A random tree: duplicate features on paths, categorical splits, zero covers."""
    cl, cr, ft, th, md, ms, dl, cv, val, cats = [], [], [], [], [], [], [], [], [], {}

    def new():
        for a in (cl, cr, ft, th, md, ms, dl, cv):
            a.append(0)
        val.append(np.zeros(n_out))
        return len(cl) - 1

    def build(d):
        i = new()
        if d == depth or (d > 0 and rng.random() < p_leaf):
            cl[i] = cr[i] = ft[i] = -1
            val[i] = rng.normal(size=n_out)
            cv[i] = 0.0 if rng.random() < zero_cover else float(rng.integers(1, 20))
            return i
        ft[i] = int(rng.integers(M))
        mode = int(rng.choice([MODE_LE64, MODE_LE32, MODE_LT32, MODE_CAT, MODE_CAT32]))
        md[i] = mode
        ms[i] = int(rng.choice([MISSING_NAN, MISSING_NAN, MISSING_NONE, MISSING_ZERO]))
        dl[i] = bool(rng.random() < 0.5)
        th[i] = float(np.float32(rng.normal()))
        if mode in (MODE_CAT, MODE_CAT32):
            cats[i] = sorted(rng.choice(6, size=int(rng.integers(1, 4)), replace=False))
        left = build(d + 1)
        right = build(d + 1)
        cl[i], cr[i] = left, right
        cv[i] = cv[left] + cv[right]
        return i

    build(0)
    return {"children_left": cl, "children_right": cr, "feature": ft, "threshold": th,
            "mode": md, "missing": ms, "default_left": dl, "cover": cv,
            "value": np.asarray(val), "output": output, "cats": cats}


def random_X(rng, n, M):
    X = rng.normal(size=(n, M))
    cat = rng.integers(-1, 7, size=(n, M)).astype(float)
    X = np.where(rng.random((n, M)) < 0.4, cat, X)
    X[rng.random((n, M)) < 0.15] = np.nan
    X[rng.random((n, M)) < 0.05] = 0.0
    return X


def random_ensemble(seed, M=5, n_trees=2, depth=4, n_out=1, vector=False):
    rng = np.random.default_rng(seed)
    trees = [random_tree(rng, M, depth, n_out if vector else 1,
                         output=-1 if vector else int(rng.integers(n_out)))
             for _ in range(n_trees)]
    return make_ensemble(trees, n_features=M, n_outputs=n_out,
                         base_score=rng.normal(size=n_out)), rng


def _game(ens, zf, x, S, k):
    total = ens.base_score[k]
    for t in range(ens.n_trees):
        out = ens.tree_output[t]
        if out >= 0 and out != k:
            continue
        col = 0 if out >= 0 else k

        def rec(n):
            if ens.children_left[n] < 0:
                return ens.value[n, col]
            f = ens.feature[n]
            left, right = ens.children_left[n], ens.children_right[n]
            if S[f]:
                return rec(left) if goes_left(ens, [n], [x[f]])[0] else rec(right)
            return zf[left] * rec(left) + zf[right] * rec(right)

        total += rec(ens.tree_offsets[t])
    return total


def brute_force(ens, x, k=0, value=None):
    """Exact Shapley values and interaction index of the path-dependent game."""
    M = ens.n_features
    zf = zero_fractions(ens)
    v = {S: (value or _game)(ens, zf, x, np.array(S, bool), k)
         for S in itertools.product([0, 1], repeat=M)}
    phi, inter = values_from_game(v, M)
    phi, inter = phi[:, 0], inter[:, :, 0]
    return phi, inter, v[tuple([0] * M)]


def _explain(ens, X):
    tables = PathTables(ens, zero_fractions(ens))
    return shap_path_dependent(ens, tables, X, ens.value, ens.tree_output, ens.n_outputs), tables


@pytest.mark.parametrize("seed", range(6))
def test_path_dependent_matches_brute_force(seed):
    ens, rng = random_ensemble(seed, M=5, n_trees=3, depth=5, n_out=2)
    X = random_X(rng, 4, 5)
    phi, tables = _explain(ens, X)
    base = ens.base_score.copy()
    for t in range(ens.n_trees):
        base[ens.tree_output[t]] += ens.value[ens.tree_offsets[t], 0]
    for i in range(len(X)):
        for k in range(2):
            ref, _, v0 = brute_force(ens, X[i], k)
            np.testing.assert_allclose(phi[i, :, k], ref, atol=1e-10, rtol=0)
            assert abs(base[k] - v0) < 1e-10
    # additivity against our own float64 prediction
    pred = predict_raw(ens, X)
    np.testing.assert_allclose(phi.sum(1) + base, pred, atol=1e-10, rtol=0)


def test_deep_path_ten_unique_features_is_exact():
    # a chain of depth 14 over 10 features (U = 10, Q = 5), with repeats
    rng = np.random.default_rng(3)
    M, D = 10, 14
    feats = list(range(M)) + [0, 3, 7, 9]
    n = 2 * D + 1
    cl, cr, ft, th, cv, val = ([-1] * n for _ in range(6))
    val = np.zeros((n, 1))
    cover = 1000.0
    for d in range(D):
        i, leaf, nxt = 2 * d, 2 * d + 1, 2 * d + 2
        cl[i], cr[i], ft[i], th[i], cv[i] = leaf, nxt, feats[d], 0.0, cover
        cv[leaf] = float(rng.integers(1, 30))
        cover -= cv[leaf]
        val[leaf] = rng.normal()
    cv[n - 1] = cover
    val[n - 1] = rng.normal()
    tree = {"children_left": cl, "children_right": cr, "feature": ft, "threshold": th,
            "mode": MODE_LE64, "missing": MISSING_NAN, "default_left": False, "cover": cv,
            "value": val, "output": 0}
    ens = make_ensemble([tree], n_features=M, n_outputs=1, base_score=[0.0])
    X = rng.normal(size=(2, M))
    phi, tables = _explain(ens, X)
    assert tables.U[0] == M and tables.Qt[0] == 5
    for i in range(2):
        ref, _, _ = brute_force(ens, X[i])
        np.testing.assert_allclose(phi[i, :, 0], ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("seed", range(3))
def test_vector_leaves_match_brute_force(seed):
    ens, rng = random_ensemble(100 + seed, M=4, n_trees=2, depth=4, n_out=3, vector=True)
    X = random_X(rng, 3, 4)
    phi, _ = _explain(ens, X)
    for i in range(3):
        for k in range(3):
            ref, _, _ = brute_force(ens, X[i], k)
            np.testing.assert_allclose(phi[i, :, k], ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("seed", range(4))
def test_interactions_match_brute_force(seed):
    ens, rng = random_ensemble(200 + seed, M=5, n_trees=2, depth=5, n_out=1)
    X = random_X(rng, 3, 5)
    tables = PathTables(ens, zero_fractions(ens))
    phi, inter = shap_interactions(ens, tables, X, ens.value, ens.tree_output, 1)
    sub_phi, sub = shap_interactions(ens, tables, X, ens.value, ens.tree_output, 1,
                                     features=[3, 1])
    for i in range(3):
        ref_phi, ref_inter, _ = brute_force(ens, X[i])
        np.testing.assert_allclose(phi[i, :, 0], ref_phi, atol=1e-10, rtol=0)
        np.testing.assert_allclose(inter[i, :, :, 0], ref_inter, atol=1e-10, rtol=0)
        np.testing.assert_allclose(sub[i, :, :, 0], ref_inter[[3, 1]], atol=1e-10, rtol=0)
    np.testing.assert_allclose(inter.sum(2), phi, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_interventional_matches_brute_force(seed):
    ens, rng = random_ensemble(300 + seed, M=5, n_trees=3, depth=5, n_out=2)
    X = random_X(rng, 3, 5)
    R = random_X(rng, 4, 5)
    phi = shap_interventional(ens, X, R, ens.value, ens.tree_output, 2, max_depth=6)

    def value(ens_, zf, x, S, k):
        return predict_raw(ens_, np.where(S, x, R))[:, k].mean()

    for i in range(3):
        for k in range(2):
            ref, _, v0 = brute_force(ens, X[i], k, value=value)
            np.testing.assert_allclose(phi[i, :, k], ref, atol=1e-10, rtol=0)


# ---------------------------------------------------------------------------
# Shapley axioms (hypothesis)
# ---------------------------------------------------------------------------


@given(seed=st.integers(0, 10_000))
def test_efficiency_and_dummy(seed):
    ens, rng = random_ensemble(seed, M=6, n_trees=3, depth=4, n_out=1)
    X = random_X(rng, 5, 6)
    phi, _ = _explain(ens, X)
    base = ens.base_score[0] + sum(ens.value[r, 0] for r in ens.tree_offsets[:-1])
    np.testing.assert_allclose(phi[:, :, 0].sum(1) + base, predict_raw(ens, X)[:, 0],
                               atol=1e-10, rtol=0)
    unused = np.setdiff1d(np.arange(6), ens.feature[ens.feature >= 0])
    assert np.all(phi[:, unused, 0] == 0.0)


@given(seed=st.integers(0, 10_000))
def test_linearity_across_trees(seed):
    ens_a, rng = random_ensemble(seed, M=5, n_trees=2, depth=4)
    ens_b, _ = random_ensemble(seed + 1, M=5, n_trees=3, depth=4)
    trees = []
    for e in (ens_a, ens_b):
        for t in range(e.n_trees):
            lo, hi = e.tree_offsets[t], e.tree_offsets[t + 1]
            sl = slice(lo, hi)
            cats = {i - lo: e.cat_values[e.cat_offsets[i]:e.cat_offsets[i + 1]]
                    for i in range(lo, hi) if e.mode[i] in (MODE_CAT, MODE_CAT32)}
            trees.append({"children_left": np.where(e.children_left[sl] >= 0,
                                                    e.children_left[sl] - lo, -1),
                          "children_right": np.where(e.children_right[sl] >= 0,
                                                     e.children_right[sl] - lo, -1),
                          "feature": e.feature[sl], "threshold": e.threshold[sl],
                          "mode": e.mode[sl], "missing": e.missing[sl],
                          "default_left": e.default_left[sl], "cover": e.cover[sl],
                          "value": e.value[sl], "output": 0, "cats": cats})
    both = make_ensemble(trees, n_features=5, n_outputs=1, base_score=[0.0])
    X = random_X(rng, 4, 5)
    pa, _ = _explain(ens_a, X)
    pb, _ = _explain(ens_b, X)
    pab, _ = _explain(both, X)
    np.testing.assert_allclose(pab, pa + pb, atol=1e-12, rtol=0)


@given(thr=st.floats(-2, 2), c1=st.integers(1, 50), c2=st.integers(1, 50),
       x=st.floats(-3, 3))
def test_symmetry_on_symmetric_tree(thr, c1, c2, x):
    # f(x) = 1[x0 <= t] + 1[x1 <= t] built as two mirrored subtrees: features 0 and 1
    # play symmetric roles, so equal inputs give equal values.
    cl = [1, 3, 5, -1, -1, -1, -1]
    cr = [2, 4, 6, -1, -1, -1, -1]
    ft = [0, 1, 1, -1, -1, -1, -1]
    a, b = float(c1), float(c2)
    cover = [(a + b) ** 2, a * (a + b), b * (a + b), a * a, a * b, b * a, b * b]
    val = np.array([[0], [0], [0], [2.0], [1.0], [1.0], [0.0]])
    tree = {"children_left": cl, "children_right": cr, "feature": ft, "threshold": [thr] * 7,
            "mode": MODE_LE64, "missing": MISSING_NAN, "default_left": False, "cover": cover,
            "value": val, "output": 0}
    ens = make_ensemble([tree], n_features=3, n_outputs=1, base_score=[0.0])
    phi, _ = _explain(ens, np.array([[x, x, 0.0]]))
    assert abs(phi[0, 0, 0] - phi[0, 1, 0]) < 1e-12
    assert phi[0, 2, 0] == 0.0


def test_zero_cover_gives_finite_values():
    tree = {"children_left": [1, -1, 3, -1, -1], "children_right": [2, -1, 4, -1, -1],
            "feature": [0, -1, 1, -1, -1], "threshold": [0.0] * 5, "mode": MODE_LE64,
            "missing": MISSING_NAN, "default_left": False, "cover": [5, 5, 0, 0, 0],
            "value": [[0], [1.0], [0], [2.0], [3.0]], "output": 0}
    ens = make_ensemble([tree], n_features=2, n_outputs=1, base_score=[0.0])
    X = np.array([[1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    phi, _ = _explain(ens, X)
    assert np.all(np.isfinite(phi))
    for i in range(3):
        ref, _, _ = brute_force(ens, X[i])
        np.testing.assert_allclose(phi[i, :, 0], ref, atol=1e-12, rtol=0)
