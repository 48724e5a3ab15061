"""Faults of ``check_explainer`` and ``known_models`` (issue #24): nothing is skipped
silently, no argument or reported standard error lets a broken explainer pass, and wrong
inputs get errors that say what is wrong."""

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from sklearn_xai import MaceRecourse, ShearExplainer
from sklearn_xai.shapley import KnockoffSAGE, KnockoffSHAP
from sklearn_xai.testing import (
    AXIOMS,
    CheckReport,
    DividendGame,
    check_explainer,
    games,
    known_models,
    make_known_model,
)
from sklearn_xai.tree import TreeShapExplainer

from ._toy_explainer import ToyBaselineShapley

DOC = Path(__file__).resolve().parents[1] / "doc" / "testing.rst"


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(30, 4))


class NegatedShear(ShearExplainer):
    """SHEAR returning ``-phi``, optionally with a made-up standard error."""

    def __init__(self, model=None, *, n_evals=16, reported_std=None, random_state=None):
        super().__init__(model, n_evals=n_evals, random_state=random_state)
        self.reported_std = reported_std

    def _explain(self, X):
        att = super()._explain(X)
        att.values = -att.values
        if self.reported_std is not None:
            att.std = np.full_like(att.values, self.reported_std)
        return att


class ReturnsNone(ShearExplainer):
    def explain(self, X, y=None):
        return None


def test_report_lists_what_was_checked_and_what_was_skipped(X):
    """A SHEAR without antithetic pairing is not checked on the planted pair: the report
    says so and why, instead of skipping it silently."""
    report = check_explainer(ShearExplainer(n_evals=4, antithetic=False), X)
    assert isinstance(report, CheckReport)
    assert report.explainer == "ShearExplainer"
    assert report.axioms == AXIOMS
    described = [what for what, _ in report.checked]
    assert not any("pair" in d for d in described)
    assert "additive linear model" in described and "additive forest model" in described
    assert any(d.startswith("linear combination") for d in described)
    skipped = dict(report.skipped)
    assert "antithetic" in skipped["the pair forest model"]
    assert "in models=" in skipped["the hist_gradient_boosting models"]
    # the axioms that applied to each model: a dummy check only where there is a dummy
    for what, axioms in report.checked:
        assert ("dummy" in axioms) == what.startswith("dummy")
        assert ("linearity" in axioms) == what.startswith("linear combination")
    text = str(report)
    assert "skipped the pair forest model" in text
    # an antithetic SHEAR is checked on the pair, and knockoff imputation's axioms that do
    # not hold are listed as skipped with the reason
    report = check_explainer(ShearExplainer(n_evals=4, random_state=0), X)
    assert "pair forest model (pair" in " ".join(d for d, _ in report.checked)
    report = check_explainer(KnockoffSHAP(n_knockoffs=3), X)
    skipped = dict(report.skipped)
    assert "depend on the explained row" in skipped["the closed_form axiom"]


def _normalised(text):
    return " ".join(text.replace("``", "").split())


def test_family_list_of_the_error_is_the_doc_s(X):
    """One source: the families the error lists are the ones doc/testing.rst's table
    gives, for every row of the table."""
    from sklearn_xai.testing import _explainer_profile

    doc = _normalised(DOC.read_text(encoding="utf-8"))
    pair_hgb = make_known_model(X, family="hist_gradient_boosting", structure="pair")
    with pytest.raises(ValueError) as info:
        check_explainer(ShearExplainer(n_evals=4, antithetic=False), None,
                        models=[pair_hgb])
    message = str(info.value)
    families = _explainer_profile(ShearExplainer(), 4).families_text()
    assert families == ("linear, forest (by default) and hist_gradient_boosting, xgboost, "
                        "lightgbm (in models=)")
    assert f"the families {families} with the structures additive, dummy, symmetric" \
        in message
    assert "antithetic" in message
    for explainer in (TreeShapExplainer(), ShearExplainer(), KnockoffSHAP(),
                      KnockoffSHAP(imputation="marginal"), ToyBaselineShapley()):
        text = _explainer_profile(explainer, 4).families_text()
        assert text in doc, text
    with pytest.raises(ValueError, match=re.escape(
            "the families forest, hist_gradient_boosting (by default) and xgboost, "
            "lightgbm (in models=)")):
        check_explainer(TreeShapExplainer(), None,
                        models=[make_known_model(X, family="linear")])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(known_models())
def test_known_models_never_draw_degenerate_data(km):
    A = np.asarray(km.X, dtype=np.float64)
    assert A.shape[0] >= 12
    for j in range(A.shape[1]):  # a symmetric pair's copy is a copy of a varied column
        assert len(np.unique(A[:, j])) == A.shape[0]
    assert np.ptp(km.predict()) > 0.1
    # so a negated explainer fails on every drawn model
    with pytest.raises(AssertionError, match="violated by NegatedShear"):
        check_explainer(NegatedShear(n_evals=2 ** A.shape[1]), None, models=[km])


def test_constant_data_is_refused(X):
    with pytest.raises(ValueError, match="almost a constant"):
        check_explainer(NegatedShear(), np.zeros((8, 3)))


@pytest.mark.parametrize("std", [np.inf, 1e300, 1e3])
def test_standard_errors_cannot_excuse_a_negated_explanation(X, std):
    with pytest.raises(AssertionError, match="efficiency violated by NegatedShear"):
        check_explainer(NegatedShear(reported_std=std), X)
    # a small standard error still widens the tolerance (within its cap)
    check_explainer(ShearExplainer(n_evals=16), X)
    with pytest.raises(AssertionError, match="negative standard error"):
        check_explainer(NegatedShear(reported_std=-1.0), X)


@pytest.mark.parametrize("atol, match", [
    (np.inf, "finite"), (np.nan, "finite"), (-1e-9, ">= 0"), ("loose", "number"),
    (1e6, "lower atol below a tenth of the range"),
])
def test_atol_must_be_a_finite_small_number(X, atol, match):
    with pytest.raises((ValueError, TypeError), match=match):
        check_explainer(NegatedShear(), X, atol=atol)


def test_empty_axioms_is_an_error(X):
    with pytest.raises(ValueError, match="axioms is empty"):
        check_explainer(NegatedShear(), X, axioms=[])
    # an axiom that no model given can test is an error too
    additive = make_known_model(X, family="linear", structure="additive")
    with pytest.raises(ValueError, match="No model given has a dummy feature"):
        check_explainer(ShearExplainer(n_evals=16), None, models=[additive],
                        axioms=["dummy"])


def test_wrong_explainers_get_clear_type_errors(X):
    with pytest.raises(TypeError, match="instance, not the class ShearExplainer"):
        check_explainer(ShearExplainer, X)
    with pytest.raises(TypeError, match="ReturnsNone.explain returned None"):
        check_explainer(ReturnsNone(n_evals=16), X)
    with pytest.raises(TypeError, match="MaceRecourse is a recourse explainer"):
        check_explainer(MaceRecourse(), X)
    with pytest.raises(TypeError, match="KnockoffSAGE is not one"):
        check_explainer(KnockoffSAGE(), X)


# --- games(dummy=..., symmetric=...) force what they promise ----------------------------


def _coalition_values(game):
    """``v(S)`` of every coalition: array (n_rows, 2**P), coalition ``S`` at its bitmask."""
    P = game.n_players
    masks = ((np.arange(2 ** P)[:, None] >> np.arange(P)) & 1).astype(bool)
    return game.value(masks, count=False)[:, :, 0], masks


def _true_dummies(game):
    """Players with ``v(S + p) == v(S)`` for every S and row, from the game's values."""
    v, masks = _coalition_values(game)
    return [p for p in range(game.n_players)
            if np.array_equal(v[:, ~masks[:, p]], v[:, masks[:, p]])]


def _non_dummy_in_every_row(game, p):
    v, masks = _coalition_values(game)
    return bool(np.all(np.any(v[:, ~masks[:, p]] != v[:, masks[:, p]], axis=1)))


def _truly_symmetric(game, i, j):
    """``v(S + i) == v(S + j)`` for every S without i and j, in every row."""
    v, masks = _coalition_values(game)
    without = ~masks[:, i] & ~masks[:, j]
    S = np.flatnonzero(without)
    return np.array_equal(v[:, S + (1 << i)], v[:, S + (1 << j)])


_FLAG_SETTINGS = settings(max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])


@_FLAG_SETTINGS
@given(games(symmetric=True, n_rows=2), games(symmetric=True, dummy=True),
       games(symmetric=True, dummy=False, max_players=4))
def test_games_symmetric_true_always_has_a_true_symmetric_pair(g, g_dummy, g_no_dummy):
    for game in (g, g_dummy, g_no_dummy):
        assert game.symmetric_pairs
        dummies = _true_dummies(game)
        assert game.dummy_players == dummies
        # a pair of non-dummy players, interchangeable by the game's values
        assert any(i not in dummies and j not in dummies and _truly_symmetric(game, i, j)
                   for i, j in game.symmetric_pairs)
        for i, j in game.symmetric_pairs:
            assert _truly_symmetric(game, i, j)
    assert g_dummy.dummy_players and g_dummy.n_players >= 3
    assert not g_no_dummy.dummy_players


@_FLAG_SETTINGS
@given(games(dummy=True, n_rows=2), games(dummy=False, n_rows=3),
       games(dummy=False, max_order=1), games(min_players=1, max_players=1, dummy=False))
def test_games_dummy_flag_gives_dummies_exactly_as_asked(g_dummy, g_none, g_add, g_one):
    assert g_dummy.n_players >= 2 and g_dummy.dummy_players
    assert g_dummy.dummy_players == _true_dummies(g_dummy)
    assert len(g_dummy.dummy_players) < g_dummy.n_players   # some player matters
    for game in (g_none, g_add, g_one):
        assert game.dummy_players == [] == _true_dummies(game)
        # no player is a dummy in any row either
        assert all(_non_dummy_in_every_row(game, p) for p in range(game.n_players))
    assert g_add.max_order == 1


def _index_biased(game):
    """Exact Shapley values plus a small bias growing with the player's index: breaks
    symmetry (and dummy) while keeping everything else."""
    from sklearn_xai.shapley import exact_shapley

    phi, base = exact_shapley(game)
    return phi + 1e-3 * np.arange(game.n_players)[None, :, None], base


def _shifted(game):
    from sklearn_xai.shapley import exact_shapley

    phi, base = exact_shapley(game)
    return phi + 1e-3, base - 1e-3 * game.n_players


@_FLAG_SETTINGS
@given(games(symmetric=True, max_players=5), games(dummy=True, max_players=5))
def test_forced_games_catch_a_broken_estimator_every_time(g_sym, g_dummy):
    """check_symmetry / check_dummy on games drawn with the flag always check something."""
    from sklearn_xai.shapley import exact_shapley
    from sklearn_xai.testing import check_dummy, check_efficiency, check_symmetry

    check_symmetry(exact_shapley, g_sym)
    check_dummy(exact_shapley, g_dummy)
    with pytest.raises(AssertionError, match="Symmetry violated"):
        check_symmetry(_index_biased, g_sym)
    check_efficiency(_shifted, g_dummy)        # efficient, but not zero on the dummy
    with pytest.raises(AssertionError, match="Dummy violated"):
        check_dummy(_shifted, g_dummy)


@pytest.mark.parametrize("kwargs, need", [
    ({"max_players": 1, "symmetric": True}, 2),
    ({"max_players": 1, "dummy": True}, 2),
    ({"max_players": 2, "dummy": True, "symmetric": True}, 3),
    ({"min_players": 5, "max_players": 4}, 5),
])
def test_games_flags_that_cannot_be_honoured_are_an_error(kwargs, need):
    with pytest.raises(ValueError, match=f"needs max_players >= {need}"):
        games(**kwargs)


def test_dividend_game_zero_dividends_do_not_hide_dummies_or_symmetry():
    game = DividendGame(3, {(0,): 1.0, (1,): 0.0, (0, 2): np.array([2.0])})
    assert game.dummy_players == [1] == _true_dummies(game)
    sym = DividendGame(3, {(0,): 1.0, (1,): 1.0, (2,): 0.0})
    assert (0, 1) in sym.symmetric_pairs and (1, 2) not in sym.symmetric_pairs
