"""check_explainer: every attribution explainer passes in its exact regime, broken ones fail
with a message that names the axiom, the row, the feature and the gap."""

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

from sklearn_xai import ShearExplainer
from sklearn_xai.shapley import KnockoffSHAP
from sklearn_xai.testing import (
    AXIOMS,
    check_explainer,
    known_linear_combination,
    known_models,
    make_known_model,
)
from sklearn_xai.tree import TreeShapExplainer

from ._toy_explainer import ToyBaselineShapley


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(30, 4))


# --------------------------------------------------------------------------- the models


@pytest.mark.parametrize("family, structure", [
    ("linear", "additive"), ("linear", "dummy"), ("linear", "symmetric"),
    ("forest", "additive"), ("forest", "dummy"), ("forest", "symmetric"), ("forest", "pair"),
    ("hist_gradient_boosting", "pair"), ("xgboost", "pair"), ("lightgbm", "dummy"),
])
def test_known_models_have_the_structure_they_claim(X, family, structure):
    km = make_known_model(X, family=family, structure=structure, random_state=3)
    A = np.asarray(km.X)
    pred = km.predict()
    z = A.mean(axis=0)
    # additive over the components: f(x) = f(z) + sum_G (f(x_G, z_-G) - f(z))
    effects = km.component_effects()
    f_z = km.predict(z[None, :])[0]
    np.testing.assert_allclose(f_z + effects.sum(axis=1), pred,
                               atol=1e-5 * (1 + np.abs(pred).max()))
    assert np.ptp(pred) > 0.5  # a real signal, and a base value far from 0
    assert np.abs(pred).min() > 1.0
    for d in km.dummy_features:  # the model never reads a dummy feature
        moved = A.copy()
        moved[:, d] = A[::-1, d] + 7.0
        np.testing.assert_array_equal(km.predict(moved), pred)
    for a, b in km.symmetric_pairs:
        np.testing.assert_array_equal(A[:, a], A[:, b])
        moved = A.copy()
        moved[:, a] = A[::-1, a]
        swapped = moved.copy()
        swapped[:, [a, b]] = moved[:, [b, a]]
        np.testing.assert_allclose(km.predict(moved), km.predict(swapped), atol=1e-12)
    if family == "forest":  # each tree reads only its component's features
        for tree, G in zip(km.model.estimators_, km.components):
            used = set(tree.tree_.feature[tree.tree_.feature >= 0].tolist())
            assert used and used <= set(G)


@pytest.mark.parametrize("family, weights", [("linear", (2.0, -0.25)), ("forest", (2, 1))])
def test_linear_combination_predicts_the_combination(X, family, weights):
    structure = "pair" if family == "forest" else "additive"
    f, g = (make_known_model(X, family=family, structure=structure, features=(0, 2),
                             random_state=s) for s in (1, 2))
    h = known_linear_combination(f, g, weights)
    (a, _), (b, _) = h.parts
    np.testing.assert_allclose(h.predict(), a * f.predict() + b * g.predict(), atol=1e-12)
    with pytest.raises(ValueError, match="same data"):
        known_linear_combination(f, make_known_model(X, family=family, structure="dummy",
                                                     features=1))


def test_make_known_model_errors(X):
    with pytest.raises(ValueError, match="family must be"):
        make_known_model(X, family="svm")
    with pytest.raises(ValueError, match="supports the structures"):
        make_known_model(X, family="linear", structure="pair")
    with pytest.raises(ValueError, match="2 distinct"):
        make_known_model(X, structure="pair", features=(1, 1))
    with pytest.raises(ValueError, match="numeric"):
        make_known_model(np.array([["a", "b"]] * 5))
    with pytest.raises(ValueError, match="shape"):
        make_known_model(X, y=np.ones(3))


# --------------------------------------------------------------------------- passes


EXACT_REGIMES = {
    "shear exact (n_evals >= 2**P)": lambda: ShearExplainer(n_evals=16),
    "shear antithetic sampled": lambda: ShearExplainer(n_evals=4, random_state=3),
    "shear random cooperators, no pairing (additive only)": lambda: ShearExplainer(
        n_evals=4, cooperators="random", antithetic=False),
    "shear redistribute": lambda: ShearExplainer(n_evals=8, efficiency="redistribute"),
    "treeshap path-dependent": lambda: TreeShapExplainer(),
    "treeshap interventional": lambda: TreeShapExplainer(
        imputation="marginal"),
    "knockoff shap marginal exact": lambda: KnockoffSHAP(imputation="marginal"),
    "knockoff shap marginal permutation": lambda: KnockoffSHAP(
        imputation="marginal", algorithm="permutation", n_evals=4),
    "knockoff shap marginal kernel, full budget": lambda: KnockoffSHAP(
        imputation="marginal", algorithm="kernel", n_evals=4),
    "knockoff shap knockoffs exact": lambda: KnockoffSHAP(n_knockoffs=5),
    "knockoff shap knockoffs permutation": lambda: KnockoffSHAP(
        n_knockoffs=5, algorithm="permutation", n_evals=8),
    "shear n_evals='auto'": lambda: ShearExplainer(n_evals="auto"),
    "knockoff shap knockoffs n_evals='auto'": lambda: KnockoffSHAP(
        n_knockoffs=4, algorithm="permutation", n_evals="auto", tol=0.5),
    "user's explainer exact": lambda: ToyBaselineShapley(),
    "user's explainer permutation": lambda: ToyBaselineShapley(algorithm="permutation",
                                                               n_evals=4),
}


def test_numba_kernels_are_compiled_before_the_first_test():
    """The TreeSHAP kernels compile (minutes on a loaded machine with a cold cache) in
    pytest_sessionstart, outside the per-test timeout that covers fixtures too."""
    import os

    from . import conftest

    if os.environ.get("SKLEARN_XAI_WARMUP", "1") == "0":
        pytest.skip("SKLEARN_XAI_WARMUP=0")
    compiled = conftest._WARMUP["compiled"]
    # path-dependent (path / pattern tables), interventional (tables / pairwise), and the
    # interaction kernels of both
    for kernel in ("_shap_path", "_shap_inter", "_build_path_tables",
                   "_build_background_tables", "_shap_tables", "_inter_tables", "_shap_interv"):
        assert compiled.get(kernel, 0) >= 1, (kernel, compiled)


@pytest.mark.parametrize("name", list(EXACT_REGIMES))
def test_every_attribution_explainer_passes_in_its_exact_regime(X, name):
    check_explainer(EXACT_REGIMES[name](), X)


@pytest.mark.parametrize("make", [
    lambda: ShearExplainer(n_evals=4, algorithm="frontier", random_state=0),
    lambda: ShearExplainer(n_evals=4, algorithm="frontier_shared", random_state=0),
    lambda: KnockoffSHAP(n_knockoffs=3, algorithm="frontier", random_state=0),
    lambda: KnockoffSHAP(n_knockoffs=3, algorithm="frontier_shared", random_state=0),
], ids=["shear-frontier", "shear-frontier_shared", "knockoff-frontier",
        "knockoff-frontier_shared"])
def test_the_frontier_algorithms_pass_where_they_sample(make):
    # 14 players: at n_evals=4 the frontier samples (2**14 coalitions), so the axioms
    # are checked on estimates, not on an enumeration
    X = np.random.default_rng(0).normal(size=(80, 14))
    check_explainer(make(), X)


@pytest.mark.parametrize("family", ["xgboost", "lightgbm"])
@pytest.mark.parametrize("perturbation", ["tree_path_dependent", "marginal"])
def test_treeshap_passes_on_xgboost_and_lightgbm(X, family, perturbation):
    models = [make_known_model(X, family=family, structure=s, random_state=5)
              for s in ("additive", "dummy", "pair")]
    check_explainer(TreeShapExplainer(imputation=perturbation), None,
                    models=models)


def test_checked_axioms_follow_the_explainer(X, monkeypatch):
    import sklearn_xai.testing as testing

    seen = []
    original = testing._check_known

    def spy(explainer, km, axioms, *args):
        seen.append((km.structure, km.family, bool(km.parts), axioms))
        return original(explainer, km, axioms, *args)

    monkeypatch.setattr(testing, "_check_known", spy)
    check_explainer(KnockoffSHAP(n_knockoffs=3), X)
    assert {s[3] for s in seen} == {("efficiency", "dummy", "linearity")}
    assert "symmetric" not in {s[0] for s in seen} and any(s[2] for s in seen)
    seen.clear()
    check_explainer(ShearExplainer(n_evals=4, antithetic=False), X)
    assert {s[3] for s in seen} == {AXIOMS}
    assert "pair" not in {s[0] for s in seen}  # not exact on pairs without pairing
    seen.clear()
    check_explainer(TreeShapExplainer(), X)
    assert {s[1] for s in seen} == {"forest", "hist_gradient_boosting"}
    assert {s[0] for s in seen} == {"additive", "dummy", "symmetric", "pair"}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(known_models(families=("linear", "forest")))
def test_shear_passes_on_drawn_known_models(km):
    check_explainer(ShearExplainer(n_evals=4, random_state=0), None, models=[km])


def test_dataframe_names_reach_the_message(X):
    frame = pd.DataFrame(X, columns=["age", "income", "debt", "tenure"])

    class Flipped(ShearExplainer):
        def _explain(self, X):
            att = super()._explain(X)
            att.values = -att.values
            return att

    check_explainer(ShearExplainer(n_evals=16), frame)
    with pytest.raises(AssertionError, match=r"feature '(age|income|debt|tenure)'"):
        check_explainer(Flipped(n_evals=16), frame, axioms=["closed_form"])


# --------------------------------------------------------------------------- failures


def _broken(base, how):
    class Broken(base):
        def _explain(self, X):
            att = super()._explain(X)
            if how == "rolled":
                att.values = np.roll(att.values, 1, axis=1)
            elif how == "no_base":
                att.base_values = np.zeros_like(att.base_values)
            elif how == "sign":
                att.values = -att.values
            elif how == "one_cell":
                att.values = att.values.copy()
                att.values[5, 2] += 1.0
            elif how == "square":
                att.values = att.values + 0.05 * att.values**2
            return att

    Broken.__name__ = f"Broken{base.__name__}"
    return Broken


BASES = {
    "shear": (ShearExplainer, {"n_evals": 16}),
    "treeshap": (TreeShapExplainer, {}),
    "knockoff": (KnockoffSHAP, {"imputation": "marginal"}),
    "users": (ToyBaselineShapley, {}),
}


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize("how, axioms, message", [
    ("rolled", "all", r"closed form violated .* at row \d+, feature 'x\d'"),
    ("rolled", ["dummy"], r"dummy violated .* at row \d+, feature 'x\d' \(never read"),
    ("no_base", "all", r"efficiency violated .* at row \d+, all features: base value \+ sum"),
    ("sign", "all", r"efficiency violated .* at row \d+"),
    ("sign", ["closed_form"], r"closed form violated .* at row \d+, feature"),
    ("sign", ["symmetry", "dummy", "linearity"], None),  # a sign flip keeps these
    ("square", ["linearity"], r"linearity violated .* linear combination .* feature 'x\d'"),
])
def test_broken_explainers_fail_naming_the_axiom(X, base, how, axioms, message):
    cls, params = BASES[base]
    explainer = _broken(cls, how)(**params)
    if message is None:
        check_explainer(explainer, X, axioms=axioms)
        return
    with pytest.raises(AssertionError, match=message):
        check_explainer(explainer, X, axioms=axioms)
    check_explainer(cls(**params), X, axioms=axioms)  # the same check passes unbroken


def test_message_names_the_broken_row_feature_and_gap(X):
    explainer = _broken(ShearExplainer, "one_cell")(n_evals=16)
    with pytest.raises(AssertionError) as info:
        check_explainer(explainer, X, axioms=["closed_form"])
    text = str(info.value)
    assert "closed form violated by BrokenShearExplainer" in text
    assert "at row 5, feature 'x2'" in text
    gap = float(re.search(r"gap ([0-9.e+-]+) >", text).group(1))
    assert gap == pytest.approx(1.0, rel=1e-3)


def test_argument_errors(X):
    with pytest.raises(ValueError, match="Unknown axiom"):
        check_explainer(ShearExplainer(), X, axioms=["additivity"])
    with pytest.raises(ValueError, match="knockoffs .* depend on the explained row"):
        check_explainer(KnockoffSHAP(), X, axioms=["closed_form"])
    with pytest.raises(TypeError, match="attribution explainer"):
        check_explainer(object(), X)
    with pytest.raises(ValueError, match="one attribution per feature"):
        check_explainer(ShearExplainer(n_evals=16, feature_groups=[[0, 1], [2], [3]]), X)
    with pytest.raises(ValueError, match="is not checked on the additive linear model"):
        check_explainer(TreeShapExplainer(), None,
                        models=[make_known_model(X, family="linear")])
    with pytest.raises(ValueError, match="n_features >= 2"):
        check_explainer(ShearExplainer(), X[:, :1])
