"""Property-based testing of Shapley estimators: games with known values, and axiom checks.

Games here are defined by their Harsanyi dividends, ``v(S) = c + sum_T d_T [T subset of S]``,
so their Shapley values are known in closed form (``phi_i = sum_{T containing i} d_T / |T|``).
The hypothesis strategies draw additive games, games with pairwise and higher-order
interactions, with dummy and symmetric players, and small tabular datasets. The checks take an
*estimator* (any callable ``game -> (phi, base)``, e.g. ``sklearn_xai.shapley.exact_shapley``)
and raise ``AssertionError`` with a message that names the axiom and the gap.

Example
-------
>>> from hypothesis import given
>>> from sklearn_xai.shapley import exact_shapley
>>> from sklearn_xai.testing import games, check_efficiency
>>> @given(games(max_players=6))
... def test_efficiency(game):
...     check_efficiency(exact_shapley, game)
"""

from itertools import combinations

import numpy as np

from .shapley._game import Game

__all__ = [
    "DividendGame",
    "sum_games",
    "games",
    "additive_games",
    "pairwise_games",
    "tabular_datasets",
    "check_efficiency",
    "check_symmetry",
    "check_dummy",
    "check_linearity",
    "check_matches_exact",
]


class DividendGame(Game):
    """A :class:`~sklearn_xai.shapley.Game` given by its Harsanyi dividends, one value per
    explained row.

    Parameters
    ----------
    n_players : int
    terms : dict mapping tuple of int -> ndarray of shape (n_rows,) or float
        Dividend ``d_T`` of each coalition ``T`` (non-empty).
    n_rows : int, default=1
    constant : float or ndarray of shape (n_rows,), default=0.0
        ``v(empty)``.

    Attributes
    ----------
    dummy_players : list of int
        Players in no term (their Shapley value is 0).
    symmetric_pairs : list of tuple
        Pairs of players that are interchangeable in the game.
    """

    def __init__(self, n_players, terms, n_rows=1, constant=0.0):
        self._n_players = int(n_players)
        self.n_rows_ = int(n_rows)
        self.terms = {tuple(sorted(T)): np.broadcast_to(np.asarray(d, dtype=np.float64),
                                                        (self.n_rows_,)).copy()
                      for T, d in terms.items() if len(T)}
        self.constant = np.broadcast_to(np.asarray(constant, dtype=np.float64),
                                        (self.n_rows_,)).copy()
        self.n_evaluations = 0
        used = {p for T in self.terms for p in T}
        self.dummy_players = [p for p in range(self.n_players) if p not in used]
        self.symmetric_pairs = [
            (i, j) for i, j in combinations(range(self.n_players), 2) if self._symmetric(i, j)]

    @property
    def n_players(self):
        return self._n_players

    @property
    def n_rows(self):
        return self.n_rows_

    @property
    def n_outputs(self):
        return 1

    def _symmetric(self, i, j):
        def swap(T):
            return tuple(sorted(j if p == i else i if p == j else p for p in T))

        for T, d in self.terms.items():
            other = self.terms.get(swap(T))
            if other is None or not np.allclose(other, d, rtol=0, atol=0):
                return False
        return True

    def value(self, masks, rows=None, count=True):
        """``v(S)`` for boolean masks (C, P) or (n_rows, C, P) -> (n_rows, C, 1); see
        :meth:`sklearn_xai.shapley.Game.value`."""
        masks, row_ids = self._check_masks(masks, rows)
        if masks.ndim == 2:
            masks = np.broadcast_to(masks, (row_ids.size,) + masks.shape)
        out = np.repeat(self.constant[row_ids, None], masks.shape[1], axis=1)
        for T, d in self.terms.items():
            out = out + masks[:, :, list(T)].all(axis=2) * d[row_ids, None]
        self._count(masks.shape[0], masks.shape[1], count)
        return out[:, :, None]

    def shapley_values(self):
        """Exact Shapley values in closed form.

        Returns
        -------
        phi : ndarray of shape (n_rows, n_players, 1)
        base : ndarray of shape (n_rows, 1)
        """
        phi = np.zeros((self.n_rows, self.n_players))
        for T, d in self.terms.items():
            for p in T:
                phi[:, p] += d / len(T)
        return phi[:, :, None], self.constant[:, None].copy()

    @property
    def max_order(self):
        return max((len(T) for T in self.terms), default=0)


def sum_games(a, b):
    """The game ``v_a + v_b`` of two dividend games on the same players and rows."""
    if a.n_players != b.n_players or a.n_rows != b.n_rows:
        raise ValueError("Games must share players and rows.")
    terms = dict(a.terms)
    for T, d in b.terms.items():
        terms[T] = terms.get(T, 0.0) + d
    return DividendGame(a.n_players, terms, a.n_rows, a.constant + b.constant)


def _hypothesis():
    from ._utils import import_optional

    return import_optional("hypothesis")


def games(min_players=1, max_players=8, max_order=None, n_rows=1, dummy=None, symmetric=None):
    """Hypothesis strategy of :class:`DividendGame`.

    Parameters
    ----------
    min_players, max_players : int
    max_order : int or None
        Largest interaction order (1 additive, 2 pairwise, ...); ``None`` up to all players.
    n_rows : int
    dummy : bool or None
        Force at least one dummy player (True), none (False) or either (None).
    symmetric : bool or None
        Force a symmetric pair of players (True) or either (None).
    """
    _hypothesis()
    from hypothesis import strategies as st

    coef = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64)

    @st.composite
    def build(draw):
        P = draw(st.integers(min_players, max_players))
        order = P if max_order is None else min(max_order, P)
        want_dummy = draw(st.booleans()) if dummy is None else dummy
        active = list(range(P))
        if want_dummy and P >= 2:
            active.remove(draw(st.sampled_from(active)))
        n_terms = draw(st.integers(1, 6))
        terms = {}
        for _ in range(n_terms):
            k = draw(st.integers(1, max(1, min(order, len(active)))))
            T = tuple(sorted(draw(st.permutations(active))[:k]))
            terms[T] = terms.get(T, 0.0) + np.array(
                [draw(coef) for _ in range(n_rows)])
        want_sym = draw(st.booleans()) if symmetric is None else symmetric
        if want_sym and len(active) >= 2:
            i, j = draw(st.permutations(active))[:2]

            def swap(T):
                return tuple(sorted(j if p == i else i if p == j else p for p in T))

            sym = {}
            for T, d in terms.items():
                for U in (T, swap(T)):
                    sym[U] = sym.get(U, 0.0) + d / 2.0
            terms = sym
        constant = np.array([draw(coef) for _ in range(n_rows)])
        return DividendGame(P, terms, n_rows, constant)

    return build()


def additive_games(**kwargs):
    """Strategy of games without interactions."""
    return games(max_order=1, **kwargs)


def pairwise_games(**kwargs):
    """Strategy of games with at most pairwise interactions."""
    return games(max_order=2, **kwargs)


def tabular_datasets(min_rows=5, max_rows=40, min_features=1, max_features=6):
    """Hypothesis strategy of small finite float64 datasets ``(X, y)``.

    ``y`` is a binary label with both classes present.
    """
    _hypothesis()
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    @st.composite
    def build(draw):
        n = draw(st.integers(max(min_rows, 2), max_rows))
        m = draw(st.integers(min_features, max_features))
        X = draw(arrays(np.float64, (n, m), elements=st.floats(
            -1e3, 1e3, allow_nan=False, allow_infinity=False, width=64)))
        y = np.array([draw(st.integers(0, 1)) for _ in range(n)])
        y[0], y[1] = 0, 1
        return X, y

    return build()


def _run(estimator, game):
    phi, base = estimator(game)
    return np.asarray(phi, dtype=np.float64), np.asarray(base, dtype=np.float64)


def check_efficiency(estimator, game, atol=1e-10):
    """Assert ``base + sum(phi) == v(all players)`` for every row and output."""
    phi, base = _run(estimator, game)
    full = game.value(np.ones((1, game.n_players), dtype=bool), count=False)[:, 0]
    gap = np.max(np.abs(base + phi.sum(axis=1) - full))
    if not gap <= atol:
        raise AssertionError(f"Efficiency violated: |base + sum(phi) - v(N)| = {gap:.3g} > "
                             f"{atol:g}.")


def check_symmetry(estimator, game, i=None, j=None, atol=1e-10):
    """Assert ``phi_i == phi_j`` for interchangeable players (default: every such pair)."""
    phi, _ = _run(estimator, game)
    pairs = [(i, j)] if i is not None else list(getattr(game, "symmetric_pairs", []))
    for a, b in pairs:
        gap = np.max(np.abs(phi[:, a] - phi[:, b]))
        if not gap <= atol:
            raise AssertionError(f"Symmetry violated for players {a} and {b}: "
                                 f"|phi_a - phi_b| = {gap:.3g} > {atol:g}.")


def check_dummy(estimator, game, i=None, atol=1e-10):
    """Assert ``phi_i == 0`` for dummy players (default: every dummy of the game)."""
    phi, _ = _run(estimator, game)
    players = [i] if i is not None else list(getattr(game, "dummy_players", []))
    for p in players:
        gap = np.max(np.abs(phi[:, p]))
        if not gap <= atol:
            raise AssertionError(f"Dummy violated: player {p} has |phi| = {gap:.3g} > {atol:g}.")


def check_linearity(estimator, game_a, game_b, atol=1e-10):
    """Assert ``phi(v_a + v_b) == phi(v_a) + phi(v_b)``."""
    pa, ba = _run(estimator, game_a)
    pb, bb = _run(estimator, game_b)
    ps, bs = _run(estimator, sum_games(game_a, game_b))
    gap = max(np.max(np.abs(ps - pa - pb)), np.max(np.abs(bs - ba - bb)))
    if not gap <= atol:
        raise AssertionError(f"Linearity violated: |phi(a+b) - phi(a) - phi(b)| = {gap:.3g} > "
                             f"{atol:g}.")


def check_matches_exact(estimator, game, atol=1e-10):
    """Assert the estimator equals the game's closed-form Shapley values."""
    phi, base = _run(estimator, game)
    ref_phi, ref_base = game.shapley_values()
    gap = max(np.max(np.abs(phi - ref_phi)), np.max(np.abs(base - ref_base)))
    if not gap <= atol:
        raise AssertionError(f"Estimate differs from the exact Shapley values by {gap:.3g} > "
                             f"{atol:g}.")
