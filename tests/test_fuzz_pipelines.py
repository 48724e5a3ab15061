"""Generated pipelines thrown at TreeSHAP's input-column map (issue #24).

Each case nests a column-wise step (a StandardScaler, or a subclass of it) at a random depth
of Pipelines, ending in a tree model. A step trusted as column-wise must give the exact
Shapley values of the input-column game (checked against brute-force enumeration through the
pipeline's own ``decision_function``); a subclass, whatever its ``transform`` does, is never
trusted: a ``UserWarning`` names it and the model's columns are explained instead.
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_xai import TreeShapExplainer

from ._fuzz_counter import CASES, OUTCOMES
from ._oracles import values_from_game


class _SameScaler(StandardScaler):
    """A subclass that behaves exactly like its parent: still not trusted by type."""


class _MixingScaler(StandardScaler):
    """A subclass whose transform mixes two columns."""

    def transform(self, X, copy=None):
        Z = super().transform(X, copy=copy)
        Z = np.array(Z, dtype=np.float64)
        Z[:, 0] = Z[:, 0] + Z[:, 1]
        return Z


_STEPS = {"plain": StandardScaler, "same_subclass": _SameScaler, "mixing": _MixingScaler}
_DATA = np.random.default_rng(0).normal(size=(200, 3))
_Y = (_DATA[:, 0] + _DATA[:, 1] * _DATA[:, 2] > 0).astype(int)


def _nest(step, depth, tree):
    """``depth`` levels of Pipeline around (step, tree); the tree always last."""
    model = Pipeline([("scale", step), ("tree", tree)])
    for level in range(depth - 1):
        model = Pipeline([(f"level{level}", model)])
    return model


def _input_game_values(model, x, background):
    """Interventional Shapley values of the margin game over input columns, by enumeration."""
    from itertools import product

    table = {}
    for coalition in product((0, 1), repeat=x.size):
        rows = np.where(np.array(coalition, bool)[None, :], x[None, :], background)
        table[coalition] = np.array([model.decision_function(rows).mean()])
    return values_from_game(table, x.size)[0][:, 0]


@settings(max_examples=12, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(sorted(_STEPS)), depth=st.integers(1, 3),
       frozen_step=st.booleans(), row=st.integers(0, 199))
def test_generated_pipelines(kind, depth, frozen_step, row):
    tree = GradientBoostingClassifier(n_estimators=8, max_depth=2, random_state=0)
    model = _nest(_STEPS[kind](), depth, tree).fit(_DATA, _Y)
    if frozen_step:  # a fitted step wrapped in FrozenEstimator is the step it wraps
        inner = model
        while isinstance(inner.steps[-1][1], Pipeline):
            inner = inner.steps[-1][1]
        inner.steps[0] = ("scale", FrozenEstimator(inner.steps[0][1]))
    background = _DATA[:16]
    CASES[("TreeShapExplainer", "generated-pipeline")] += 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        explainer = TreeShapExplainer(FrozenEstimator(model), imputation="marginal",
                                      model_output="raw").fit(background)
    mixing_warned = [w for w in caught if issubclass(w.category, UserWarning)
                     and "scale" in str(w.message)]
    if kind == "plain":
        assert explainer.feature_space_ == "input" and not mixing_warned
        att = explainer.explain(_DATA[row:row + 1])
        expected = _input_game_values(model, _DATA[row], background)
        np.testing.assert_allclose(att.values[0], expected, rtol=0, atol=1e-9)
        OUTCOMES[("TreeShapExplainer", "worked (exact in input columns)")] += 1
    else:
        assert explainer.feature_space_ == "model" and mixing_warned, \
            f"a {kind} step was trusted as column-wise"
        OUTCOMES[("TreeShapExplainer", "warned: subclass not trusted")] += 1


@pytest.mark.parametrize("kind", sorted(_STEPS))
def test_every_pipeline_kind_once(kind):
    test_generated_pipelines.hypothesis.inner_test(kind=kind, depth=2, frozen_step=False, row=7)
