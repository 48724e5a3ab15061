"""Property-based testing of Shapley estimators and explainers against known values.

Two levels:

* **games.** Games here are defined by their Harsanyi dividends,
  ``v(S) = c + sum_T d_T [T subset of S]``, so their Shapley values are known in closed
  form (``phi_i = sum_{T containing i} d_T / |T|``). The hypothesis strategies draw
  additive games, games with pairwise and higher-order interactions, with dummy and
  symmetric players, and small tabular datasets. The checks take an *estimator* (any
  callable ``game -> (phi, base)``, e.g. ``sklearn_xai.shapley.exact_shapley``) and raise
  ``AssertionError`` with a message that names the axiom and the gap.
* **explainers.** :func:`check_explainer` fits clones of an attribution explainer on real
  fitted models whose attributions are known (:class:`KnownModel`, from
  :func:`make_known_model` or the strategy :func:`known_models`) and raises
  ``AssertionError`` naming the axiom, the model, the row, the feature and the gap.

Example
-------
>>> from hypothesis import given
>>> from sklearn_xai.shapley import exact_shapley
>>> from sklearn_xai.testing import games, check_efficiency
>>> @given(games(max_players=6))
... def test_efficiency(game):
...     check_efficiency(exact_shapley, game)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from .shapley._game import Game

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any, Literal

    import pandas as pd
    from hypothesis.strategies import SearchStrategy
    from numpy.typing import ArrayLike

    from sklearn_xai._typing import KnownFamily

__all__ = [
    "AXIOMS",
    "KnownModel",
    "make_known_model",
    "known_linear_combination",
    "known_models",
    "check_explainer",
    "CheckReport",
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
    """A :class:`~sklearn_xai.shapley.Game` given by its Harsanyi dividends.

    One value per explained row.

    Parameters
    ----------
    n_players : int
        Number of players, numbered ``0`` to ``n_players - 1``.
    terms : dict mapping tuple of int -> ndarray of shape (n_rows,) or float
        Dividend ``d_T`` of each coalition ``T`` (non-empty).
    n_rows : int, default=1
        Number of explained rows; each row is a game of its own, with its own dividends.
    constant : float or ndarray of shape (n_rows,), default=0.0
        ``v(empty)``.

    Attributes
    ----------
    dummy_players : list of int
        Players in no term with a non-zero dividend (their Shapley value is 0 in every
        row).
    symmetric_pairs : list of tuple
        Pairs of players that are interchangeable in the game.
    """

    def __init__(self, n_players: int, terms: Mapping[tuple[int, ...], ArrayLike | float],
                 n_rows: int = 1, constant: float | ArrayLike = 0.0) -> None:
        self._n_players = int(n_players)
        self.n_rows_ = int(n_rows)
        self.terms = {tuple(sorted(T)): np.broadcast_to(np.asarray(d, dtype=np.float64),
                                                        (self.n_rows_,)).copy()
                      for T, d in terms.items() if len(T)}
        self.constant = np.broadcast_to(np.asarray(constant, dtype=np.float64),
                                        (self.n_rows_,)).copy()
        self.n_evaluations = 0
        used = {p for T, d in self.terms.items() if np.any(d != 0) for p in T}
        self.dummy_players = [p for p in range(self.n_players) if p not in used]
        self.symmetric_pairs = [
            (i, j) for i, j in combinations(range(self.n_players), 2) if self._symmetric(i, j)]

    @property
    def n_players(self) -> int:
        """Number of players."""
        return self._n_players

    @property
    def n_rows(self) -> int:
        """Number of explained rows."""
        return self.n_rows_

    @property
    def n_outputs(self) -> int:
        """Number of values per coalition (always 1)."""
        return 1

    def _symmetric(self, i, j):
        def swap(T):
            return tuple(sorted(j if p == i else i if p == j else p for p in T))

        for T, d in self.terms.items():
            other = self.terms.get(swap(T), 0.0)   # no term: a zero dividend
            if not np.array_equal(np.broadcast_to(other, d.shape), d):
                return False
        return True

    def value(self, masks: ArrayLike, rows: slice | ArrayLike | None = None,
              count: bool = True) -> np.ndarray:
        """Evaluate coalitions, as :meth:`sklearn_xai.shapley.Game.value`.

        Parameters
        ----------
        masks : ndarray of bool, shape (C, P) or (n_rows, C, P)
            The coalitions, one row of ``P = n_players`` flags each: ``C`` coalitions shared
            by every selected row, or one block of ``C`` per selected row.
        rows : array-like of int or None
            Rows to evaluate; ``None``: every row.
        count : bool, default=True
            Whether to add to ``n_evaluations``.

        Returns
        -------
        ndarray of shape (n_rows, C, 1)
            ``v(S)`` of each coalition for each selected row.
        """
        masks, row_ids = self._check_masks(masks, rows)
        if masks.ndim == 2:
            masks = np.broadcast_to(masks, (row_ids.size,) + masks.shape)
        out = np.repeat(self.constant[row_ids, None], masks.shape[1], axis=1)
        for T, d in self.terms.items():
            out = out + masks[:, :, list(T)].all(axis=2) * d[row_ids, None]
        self._count(masks.shape[0], masks.shape[1], count)
        return out[:, :, None]

    def shapley_values(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact Shapley values in closed form.

        Returns
        -------
        phi : ndarray of shape (n_rows, n_players, 1)
            Shapley value of each player, ``phi_i = sum_{T containing i} d_T / |T|``.
        base : ndarray of shape (n_rows, 1)
            ``v(empty)``, the game's constant.
        """
        phi = np.zeros((self.n_rows, self.n_players))
        for T, d in self.terms.items():
            for p in T:
                phi[:, p] += d / len(T)
        return phi[:, :, None], self.constant[:, None].copy()

    @property
    def max_order(self) -> int:
        """Size of the largest coalition with a dividend (0 for a constant game)."""
        return max((len(T) for T in self.terms), default=0)


def sum_games(a: DividendGame, b: DividendGame) -> DividendGame:
    """The game ``v_a + v_b`` of two dividend games on the same players and rows.

    Parameters
    ----------
    a, b : DividendGame
        The games to add; they must have the same ``n_players`` and ``n_rows``.

    Returns
    -------
    DividendGame
        The game whose dividends and constant are the sums of those of ``a`` and ``b``.
    """
    if a.n_players != b.n_players or a.n_rows != b.n_rows:
        raise ValueError("Games must share players and rows.")
    terms = dict(a.terms)
    for T, d in b.terms.items():
        terms[T] = terms.get(T, 0.0) + d
    return DividendGame(a.n_players, terms, a.n_rows, a.constant + b.constant)


def _hypothesis():
    from ._utils import import_optional

    return import_optional("hypothesis")


def games(min_players: int = 1, max_players: int = 8, max_order: int | None = None, n_rows: int = 1,
          dummy: bool | None = None, symmetric: bool | None = None) -> SearchStrategy[DividendGame]:
    """Hypothesis strategy of :class:`DividendGame`.

    Every player that is not drawn as a dummy is in at least one dividend term, and every
    dividend is non-zero in every row, so ``dummy_players`` lists exactly the game's dummy
    players (in every row) and a forced symmetric pair is a pair of non-dummy players.

    Parameters
    ----------
    min_players : int, default=1
        Fewest players of a drawn game; raised to what ``dummy`` and ``symmetric`` need
        (2 with either forced, 3 with both).
    max_players : int, default=8
        Most players of a drawn game.
    max_order : int or None, default=None
        Largest interaction order (1 additive, 2 pairwise, ...); ``None`` up to all players.
    n_rows : int, default=1
        Number of explained rows of each game (each row draws its own dividends).
    dummy : bool or None, default=None
        Force at least one dummy player besides at least one non-dummy player (True), no
        dummy player (False) or either (None).
    symmetric : bool or None, default=None
        Force a symmetric pair of non-dummy players (True) or either (None); ``False`` is
        treated as ``None`` (a drawn game may have a symmetric pair).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy that draws :class:`DividendGame` instances. The dividend terms cover
        every non-dummy player (in terms of at most ``max_order`` players), with up to 5
        more terms; each dividend is in ``[-10, -0.01]`` or ``[0.01, 10]``, and the
        constant in ``[-10, 10]``.

    Raises
    ------
    ValueError
        If ``max_players`` is below the players the flags need, or below ``min_players``.
    """
    _hypothesis()
    from hypothesis import strategies as st

    need = (2 if symmetric else 1) + (1 if dummy else 0)
    lo = max(int(min_players), need, 1)
    if int(max_players) < lo:
        flags = ", ".join(f"{name}=True" for name, flag in
                          (("dummy", dummy), ("symmetric", symmetric)) if flag)
        raise ValueError(
            f"games(min_players={min_players}, max_players={max_players}"
            f"{', ' + flags if flags else ''}) can draw no game: it needs max_players >= "
            f"{lo}.")
    if max_order is not None and int(max_order) < 1:
        raise ValueError(f"max_order must be a positive int or None, got {max_order!r}.")

    coef = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64)
    # non-zero dividends: a player in a term is never a dummy, and a pair's dividends are
    # never averaged to zero
    dividend = st.builds(lambda negative, m: -m if negative else m, st.booleans(),
                         st.floats(0.01, 10, allow_nan=False, allow_infinity=False, width=64))

    def dividends(draw):
        return np.array([draw(dividend) for _ in range(n_rows)])

    @st.composite
    def build(draw):
        P = draw(st.integers(lo, max(lo, int(max_players))))
        order = P if max_order is None else min(int(max_order), P)
        if symmetric:
            want_sym = True
        else:   # a pair of non-dummy players, besides a forced dummy
            want_sym = draw(st.booleans()) if P - (1 if dummy else 0) >= 2 else False
        n_active_min = 2 if want_sym else 1
        if dummy is None:
            want_dummy = draw(st.booleans()) if P > n_active_min else False
        else:
            want_dummy = dummy
        n_dummy = draw(st.integers(1, P - n_active_min)) if want_dummy else 0
        players = draw(st.permutations(range(P)))
        active = sorted(players[n_dummy:])
        # terms covering every active player: consecutive chunks of a permutation
        terms = {}
        cover = draw(st.permutations(active))
        start = 0
        while start < len(cover):
            size = draw(st.integers(1, min(order, len(cover) - start)))
            terms[tuple(sorted(cover[start:start + size]))] = dividends(draw)
            start += size
        for _ in range(draw(st.integers(0, 5))):
            k = draw(st.integers(1, min(order, len(active))))
            T = tuple(sorted(draw(st.permutations(active))[:k]))
            terms.setdefault(T, dividends(draw))   # a drawn term keeps its dividend
        if want_sym:
            i, j = draw(st.permutations(active))[:2]

            def swap(T):
                return tuple(sorted(j if p == i else i if p == j else p for p in T))

            sym = {}
            for T, d in terms.items():
                if T not in sym:    # T and its swap share T's dividend
                    sym[T] = d
                    sym[swap(T)] = d.copy()
            terms = sym
        constant = np.array([draw(coef) for _ in range(n_rows)])
        return DividendGame(P, terms, n_rows, constant)

    return build()


def additive_games(**kwargs: Any) -> SearchStrategy[DividendGame]:
    """Strategy of games without interactions.

    Parameters
    ----------
    **kwargs : dict
        Other arguments of :func:`games` (all but ``max_order``).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy that draws :class:`DividendGame` instances.
    """
    return games(max_order=1, **kwargs)


def pairwise_games(**kwargs: Any) -> SearchStrategy[DividendGame]:
    """Strategy of games with at most pairwise interactions.

    Parameters
    ----------
    **kwargs : dict
        Other arguments of :func:`games` (all but ``max_order``).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy that draws :class:`DividendGame` instances.
    """
    return games(max_order=2, **kwargs)


def tabular_datasets(min_rows: int = 5, max_rows: int = 40, min_features: int = 1,
                     max_features: int = 6) -> SearchStrategy[Any]:
    """Hypothesis strategy of small finite float64 datasets ``(X, y)``.

    ``y`` is a binary label with both classes present.

    Parameters
    ----------
    min_rows : int, default=5
        Fewest rows (at least 2 are drawn, one per class).
    max_rows : int, default=40
        Most rows.
    min_features : int, default=1
        Fewest columns.
    max_features : int, default=6
        Most columns.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy that draws ``(X, y)``: ``X`` a float64 ndarray of shape
        ``(n_samples, n_features)`` with values in ``[-1000, 1000]``, ``y`` an int ndarray
        of shape ``(n_samples,)`` of 0 and 1.
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


def _assert_gap(gap, atol, what):
    """An AssertionError ``"<what> <gap> > <atol>."`` unless ``gap <= atol`` (NaN fails)."""
    if not gap <= atol:
        raise AssertionError(f"{what} {gap:.3g} > {atol:g}.")


def check_efficiency(estimator: Callable[[Game], tuple[np.ndarray | None, ...]], game: Game,
                     atol: float = 1e-10) -> None:
    """Assert ``base + sum(phi) == v(all players)`` for every row and output.

    Parameters
    ----------
    estimator : callable
        ``estimator(game) -> (phi, base)``, with ``phi`` of shape
        ``(n_rows, n_players, n_outputs)`` and ``base`` of shape ``(n_rows, n_outputs)``,
        e.g. :func:`sklearn_xai.shapley.exact_shapley`.
    game : Game
        The game to estimate, e.g. drawn by :func:`games`.
    atol : float, default=1e-10
        Largest accepted absolute gap.

    Raises
    ------
    AssertionError
        If the axiom is violated; the message gives the gap.
    """
    phi, base = _run(estimator, game)
    full = game.value(np.ones((1, game.n_players), dtype=bool), count=False)[:, 0]
    gap = np.max(np.abs(base + phi.sum(axis=1) - full))
    _assert_gap(gap, atol, "Efficiency violated: |base + sum(phi) - v(N)| =")


def check_symmetry(estimator: Callable[[Game], tuple[np.ndarray | None, ...]], game: Game,
                   i: int | None = None, j: int | None = None, atol: float = 1e-10) -> None:
    """Assert ``phi_i == phi_j`` for interchangeable players (default: every such pair).

    Parameters
    ----------
    estimator : callable
        ``estimator(game) -> (phi, base)``, with ``phi`` of shape
        ``(n_rows, n_players, n_outputs)`` and ``base`` of shape ``(n_rows, n_outputs)``,
        e.g. :func:`sklearn_xai.shapley.exact_shapley`.
    game : Game
        The game to estimate; without ``i``, its ``symmetric_pairs`` attribute (as a
        :class:`DividendGame` has) lists the pairs to check.
    i : int or None, default=None
        First player of the pair to check; ``None`` checks every symmetric pair.
    j : int or None, default=None
        Second player of the pair (used with ``i``).
    atol : float, default=1e-10
        Largest accepted absolute gap.

    Raises
    ------
    AssertionError
        If the axiom is violated; the message gives the gap.
    """
    phi, _ = _run(estimator, game)
    pairs = [(i, j)] if i is not None else list(getattr(game, "symmetric_pairs", []))
    for a, b in pairs:
        gap = np.max(np.abs(phi[:, a] - phi[:, b]))
        _assert_gap(gap, atol, f"Symmetry violated for players {a} and {b}: |phi_a - phi_b| =")


def check_dummy(estimator: Callable[[Game], tuple[np.ndarray | None, ...]], game: Game,
                i: int | None = None, atol: float = 1e-10) -> None:
    """Assert ``phi_i == 0`` for dummy players (default: every dummy of the game).

    Parameters
    ----------
    estimator : callable
        ``estimator(game) -> (phi, base)``, with ``phi`` of shape
        ``(n_rows, n_players, n_outputs)`` and ``base`` of shape ``(n_rows, n_outputs)``,
        e.g. :func:`sklearn_xai.shapley.exact_shapley`.
    game : Game
        The game to estimate; without ``i``, its ``dummy_players`` attribute (as a
        :class:`DividendGame` has) lists the players to check.
    i : int or None, default=None
        The dummy player to check; ``None`` checks every dummy player.
    atol : float, default=1e-10
        Largest accepted absolute gap.

    Raises
    ------
    AssertionError
        If the axiom is violated; the message gives the gap.
    """
    phi, _ = _run(estimator, game)
    players = [i] if i is not None else list(getattr(game, "dummy_players", []))
    for p in players:
        gap = np.max(np.abs(phi[:, p]))
        _assert_gap(gap, atol, f"Dummy violated: player {p} has |phi| =")


def check_linearity(estimator: Callable[[Game], tuple[np.ndarray | None, ...]],
                    game_a: DividendGame, game_b: DividendGame, atol: float = 1e-10) -> None:
    """Assert ``phi(v_a + v_b) == phi(v_a) + phi(v_b)``.

    The base values must add up too.

    Parameters
    ----------
    estimator : callable
        ``estimator(game) -> (phi, base)``, with ``phi`` of shape
        ``(n_rows, n_players, n_outputs)`` and ``base`` of shape ``(n_rows, n_outputs)``,
        e.g. :func:`sklearn_xai.shapley.exact_shapley`.
    game_a, game_b : DividendGame
        Two games on the same players and rows (their sum is built by
        :func:`sum_games`).
    atol : float, default=1e-10
        Largest accepted absolute gap.

    Raises
    ------
    AssertionError
        If the axiom is violated; the message gives the gap.
    """
    pa, ba = _run(estimator, game_a)
    pb, bb = _run(estimator, game_b)
    ps, bs = _run(estimator, sum_games(game_a, game_b))
    gap = max(np.max(np.abs(ps - pa - pb)), np.max(np.abs(bs - ba - bb)))
    _assert_gap(gap, atol, "Linearity violated: |phi(a+b) - phi(a) - phi(b)| =")


def check_matches_exact(estimator: Callable[[Game], tuple[np.ndarray | None, ...]],
                        game: DividendGame, atol: float = 1e-10) -> None:
    """Assert the estimator equals the game's closed-form Shapley values.

    Parameters
    ----------
    estimator : callable
        ``estimator(game) -> (phi, base)``, with ``phi`` of shape
        ``(n_rows, n_players, n_outputs)`` and ``base`` of shape ``(n_rows, n_outputs)``,
        e.g. :func:`sklearn_xai.shapley.exact_shapley`.
    game : DividendGame
        The game to estimate; its :meth:`~DividendGame.shapley_values` are the reference.
    atol : float, default=1e-10
        Largest accepted absolute gap.

    Raises
    ------
    AssertionError
        If an attribution or base value differs from the closed form; the message gives
        the gap.
    """
    phi, base = _run(estimator, game)
    ref_phi, ref_base = game.shapley_values()
    gap = max(np.max(np.abs(phi - ref_phi)), np.max(np.abs(base - ref_base)))
    _assert_gap(gap, atol, "Estimate differs from the exact Shapley values by")


# =========================================================================== explainers
#
# Known models: real fitted regressors that are additive over known components (single
# features or one planted pair), with dummy features and interchangeable features where
# asked. For an explainer whose 'missing' features do not depend on the explained row (a
# reference row, a background sample, tree covers), the attributions of a component G then
# satisfy sum_{j in G} phi_j(x) = g_G(x_G) + c_G for a constant c_G: the closed form,
# whatever the explainer's baseline.

#: The axioms :func:`check_explainer` can check.
AXIOMS = ("efficiency", "dummy", "symmetry", "linearity", "closed_form")
_FAMILIES = ("linear", "forest", "hist_gradient_boosting", "xgboost", "lightgbm")
_STRUCTURES = ("additive", "dummy", "symmetric", "pair")
_SUPPORTED = {
    "linear": ("additive", "dummy", "symmetric"),
    "forest": _STRUCTURES,
    "hist_gradient_boosting": ("additive", "dummy", "pair"),
    "xgboost": ("additive", "dummy", "pair"),
    "lightgbm": ("additive", "dummy", "pair"),
}
_COMBINABLE = ("linear", "forest")
# a sampled value may miss an exact relation by this many of its standard errors
_Z = 6.0
# ... but neither the standard errors nor atol may excuse this fraction of the model's
# output range on its data: a negated (or zero) explanation misses efficiency by at least
# the whole range at some row, so it always fails
_MAX_EXCUSE = 0.1
_MIN_DRAWN_ROWS = 12


@dataclass(eq=False)
class KnownModel:
    """A fitted regressor whose attributions are known, with the data it was built for.

    The model is additive over ``components``, ``f(x) = c + sum_G g_G(x_G)``, each
    component one feature or the planted pair; a feature in no component is a dummy (the
    model never reads it). For every explainer whose 'missing' features do not depend on
    the explained row (a reference row, a background sample, tree covers), the
    attributions of a component then equal ``g_G(x_G)`` up to a constant,
    ``sum_{j in G} phi_j(x) = g_G(x_G) + c_G``, whatever the explainer's baseline.

    Build one with :func:`make_known_model`, :func:`known_linear_combination` or the
    hypothesis strategy :func:`known_models`. Every parameter is stored as the attribute
    of the same name.

    Parameters
    ----------
    model : fitted regressor
        A scikit-learn ``LinearRegression``, a ``RandomForestRegressor`` whose trees each
        read one component, a ``HistGradientBoostingRegressor``, ``XGBRegressor`` or
        ``LGBMRegressor`` trained under interaction constraints.
    X : ndarray or DataFrame of shape (n_samples, n_features)
        The data the model was built for (and that the explainers are fitted on and
        explain). For ``structure="symmetric"`` the second feature of the pair is a copy of
        the first.
    family : str
        ``"linear"``, ``"forest"``, ``"hist_gradient_boosting"``, ``"xgboost"`` or
        ``"lightgbm"``.
    structure : str
        ``"additive"``, ``"dummy"`` (additive, one feature unused), ``"symmetric"``
        (additive, two interchangeable features) or ``"pair"`` (one planted pair).
    components : list of tuple of int
        The columns of each component ``G``: one feature, or the planted pair.
    dummy_features : list of int, default=[]
        Features in no component (the model never reads them).
    symmetric_pairs : list of tuple of int, default=[]
        Pairs ``(a, b)`` with ``g_a = g_b`` and ``x_a = x_b`` in every row of ``X``.
    parts : list of (float, KnownModel), default=[]
        For a linear combination, ``model = sum coef * part.model`` (in exact arithmetic);
        empty otherwise.

    Attributes
    ----------
    description : str
        A short text naming the model, used in the messages of :func:`check_explainer`.
    output_eps : float
        Machine epsilon of the model's own predictions.
    """

    model: object
    X: object
    family: str
    structure: str
    components: list
    dummy_features: list = field(default_factory=list)
    symmetric_pairs: list = field(default_factory=list)
    parts: list = field(default_factory=list)

    @property
    def description(self) -> str:
        """A short text naming the model, e.g. ``"pair forest model (pair (0, 1))"``."""
        detail = ""
        if self.structure == "pair":
            detail = f" (pair {tuple(self.components[0])})"
        elif self.structure == "dummy":
            detail = f" (dummy feature {self.dummy_features[0]})"
        elif self.structure == "symmetric":
            detail = f" (interchangeable features {self.symmetric_pairs[0]})"
        if self.parts:
            (a, _), (b, _) = self.parts
            return (f"linear combination {a:.4g} f + {b:.4g} g of two {self.structure} "
                    f"{self.family} models{detail}")
        return f"{self.structure} {self.family} model{detail}"

    def __repr__(self):
        return f"KnownModel({self.description}, n_samples={_n_rows(self.X)})"

    def predict(self, X: ArrayLike | pd.DataFrame | None = None) -> np.ndarray:
        """The model's output on ``X`` (default: its own data).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features) or None, default=None
            Rows to predict, with the columns of ``self.X``; ``None``: ``self.X``.

        Returns
        -------
        ndarray of shape (n_samples,)
            The model's predictions, float64.
        """
        X = self.X if X is None else X
        return np.asarray(self.model.predict(X), dtype=np.float64).reshape(-1)

    @property
    def output_eps(self) -> float:
        """Machine epsilon of the model's own predictions (XGBoost predicts in float32)."""
        pred = np.asarray(self.model.predict(_like(self.X, _float_array(self.X)[:1])))
        return float(np.finfo(pred.dtype if pred.dtype.kind == "f" else np.float64).eps)

    def component_effects(self, X: ArrayLike | pd.DataFrame | None = None) -> np.ndarray:
        """``g_G(x_G) - g_G(z_G)`` of every component, ``z`` the column means of ``X``.

        Computed from the model itself, ``f(x_G, z_{-G}) - f(z)``, which is exact because
        the model is additive over its components.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features) or None, default=None
            Rows to evaluate, with the columns of ``self.X``; ``None``: ``self.X``.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            Column ``k`` is the effect of ``components[k]`` on each row, relative to the
            column means.
        """
        X = self.X if X is None else X
        A = _float_array(X)
        z = A.mean(axis=0)
        n = A.shape[0]
        rows = [z[None, :]]
        for G in self.components:
            hybrid = np.repeat(z[None, :], n, axis=0)
            hybrid[:, list(G)] = A[:, list(G)]
            rows.append(hybrid)
        pred = self.predict(_like(X, np.vstack(rows)))
        return (pred[1:].reshape(len(self.components), n) - pred[0]).T


def _n_rows(X):
    return int(np.shape(X)[0])


def _float_array(X):
    if hasattr(X, "columns"):
        return X.to_numpy(dtype=np.float64)
    return np.asarray(X, dtype=np.float64)


def _like(template, A):
    """``A`` as a DataFrame with the columns of ``template`` when that is one."""
    if hasattr(template, "columns"):
        import pandas as pd

        return pd.DataFrame(A, columns=template.columns)
    return A


def _check_data(X, y, min_features):
    try:
        A = _float_array(X)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The known models need numeric X ({exc}).") from None
    if A.ndim != 2 or A.shape[0] < 3 or A.shape[1] < min_features:
        raise ValueError(f"The known models need X of shape (n_samples >= 3, n_features >= "
                         f"{min_features}); got shape {A.shape}.")
    if not np.all(np.isfinite(A)):
        raise ValueError("X must be finite to build the known models.")
    if y is not None:
        y = np.asarray(y)
        if y.shape != (A.shape[0],):
            raise ValueError(f"y must have shape ({A.shape[0]},); got {y.shape}.")
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError("y must be numeric: the known models are regressors.") from None
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite to build the known models.")
    return A, y


def _standardised(A):
    mean = A.mean(axis=0)
    sd = A.std(axis=0)
    live = sd > 1e-8 * (1.0 + np.abs(mean))  # numerically constant columns carry no signal
    Z = np.where(live, (A - mean) / np.where(live, sd, 1.0), 0.0)
    return Z, np.where(live, sd, np.inf)


def _special_features(structure, n_features, features, rng):
    if structure == "additive":
        return ()
    need = 1 if structure == "dummy" else 2
    if features is None:
        return tuple(int(j) for j in rng.permutation(n_features)[:need])
    features = tuple(int(j) for j in np.atleast_1d(features))
    if len(features) != need or len(set(features)) != need or not all(
            0 <= j < n_features for j in features):
        raise ValueError(f"structure={structure!r} needs features= {need} distinct column "
                         f"index(es) below {n_features}; got {features}.")
    return features


def make_known_model(X: ArrayLike | pd.DataFrame, y: ArrayLike | None = None, *,
                     family: KnownFamily = "forest",
                     structure: Literal["additive", "dummy", "symmetric", "pair"] = "additive",
                     features: int | tuple[int, int] | None = None,
                     random_state: int = 0) -> KnownModel:
    """Fit a regressor whose attributions are known in closed form.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features), numeric
        The data; a DataFrame keeps its column names (the models are fitted on a
        DataFrame too).
    y : array-like of shape (n_samples,) or None, default=None
        Targets the model is fitted to (a linear model, each tree of a forest on its own
        component's columns, or a boosted model under interaction constraints). ``None``:
        a smooth random target drawn from ``random_state`` (a sine and a slope per
        feature, and the product of the planted pair). Either way a constant is added
        (five times ``1 + std``) so that the base value is far from 0.
    family : {"linear", "forest", "hist_gradient_boosting", "xgboost", "lightgbm"}
        ``"forest"``: a ``RandomForestRegressor`` whose trees are each fitted on one
        component's columns (the other columns held constant), so each tree reads one
        feature or the planted pair. The boosted families use the libraries' interaction
        constraints (``"xgboost"`` and ``"lightgbm"`` need those packages).
    structure : {"additive", "dummy", "symmetric", "pair"}
        ``"dummy"``: one feature is never read; ``"symmetric"``: the second feature of a
        pair is made a copy of the first in the data and gets the same component
        (``"linear"`` and ``"forest"`` only); ``"pair"``: the two features interact
        (tree families only).
    features : int, pair of int or None, default=None
        The dummy feature, or the symmetric or planted pair; ``None`` draws them.
    random_state : int, default=0
        Seeds the synthetic target, the drawn features and the model's own randomness.

    Returns
    -------
    KnownModel
        The fitted model with its data (``X`` as float64, a DataFrame when ``X`` is one,
        the second column of a symmetric pair made a copy of the first), components,
        dummy features and symmetric pairs.
    """
    if family not in _FAMILIES:
        raise ValueError(f"family must be one of {_FAMILIES}; got {family!r}.")
    if structure not in _SUPPORTED[family]:
        raise ValueError(f"A {family} model supports the structures {_SUPPORTED[family]}; "
                         f"got structure={structure!r}.")
    A, y = _check_data(X, y, 1 if structure == "additive" else 2)
    A = A.copy()
    n, M = A.shape
    rng = np.random.default_rng(random_state)
    seed = int(rng.integers(0, 2**31 - 1))
    special = _special_features(structure, M, features, rng)
    if structure == "symmetric":
        A[:, special[1]] = A[:, special[0]]
    Z, sd = _standardised(A)
    # the synthetic components, one per feature, and the planted pair's interaction
    amp = rng.uniform(0.5, 2.0, M) * rng.choice([-1.0, 1.0], M)
    freq, phase = rng.uniform(0.5, 1.5, M), rng.uniform(0, 2 * np.pi, M)
    slope = rng.uniform(-1.0, 1.0, M)
    if structure == "symmetric":
        a, b = special
        amp[b], freq[b], phase[b], slope[b] = amp[a], freq[a], phase[a], slope[a]
    comps = amp * np.sin(freq * Z + phase) + slope * Z
    dummy = [special[0]] if structure == "dummy" else []
    comps[:, dummy] = 0.0
    if structure == "pair":
        comps[:, special[0]] += rng.uniform(1.0, 2.0) * Z[:, special[0]] * Z[:, special[1]]
    total = comps.sum(axis=1) if y is None else y
    shift = 5.0 * (1.0 + float(np.std(total)))
    if structure == "pair":
        components = [tuple(sorted(special))] + [(j,) for j in range(M) if j not in special]
    else:
        components = [(j,) for j in range(M) if j not in dummy]
    sym = [tuple(special)] if structure == "symmetric" else []
    Xk = _like(X, A)
    if family == "linear":
        model = _linear_model(Xk, A, y, amp, sd, slope, dummy, sym, shift)
    elif family == "forest":
        model = _forest_model(Xk, A, y, comps, components, shift, seed)
    else:
        train = A.copy()
        train[:, dummy] = 0.0  # a constant column is never split on
        model = _boosted_model(family, _like(X, train), total + shift, components, M, seed)
    return KnownModel(model, Xk, family, structure, components, dummy, sym)


def _linear_model(Xk, A, y, amp, sd, slope, dummy, sym, shift):
    from sklearn.linear_model import LinearRegression

    if y is None:
        coef = (amp + slope) / sd  # 0 for a constant column (sd = inf)
        model = LinearRegression().fit(Xk, A @ coef + shift)
        model.coef_, model.intercept_ = coef, shift
    else:
        model = LinearRegression().fit(Xk, y + shift)
        model.coef_ = np.array(model.coef_, dtype=np.float64)
    model.coef_[dummy] = 0.0
    for a, b in sym:
        model.coef_[a] = model.coef_[b] = 0.5 * (model.coef_[a] + model.coef_[b])
    return model


def _forest_model(Xk, A, y, comps, components, shift, seed):
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    trees = []
    for G in components:
        masked = np.zeros_like(A)
        masked[:, list(G)] = A[:, list(G)]  # the tree can only split on G's columns
        target = (comps[:, list(G)].sum(axis=1) if y is None else y) + shift
        trees.append(DecisionTreeRegressor(max_depth=3 + (len(G) > 1), random_state=seed)
                     .fit(_like(Xk, masked), target))
    target = (comps.sum(axis=1) if y is None else y) + shift
    forest = RandomForestRegressor(n_estimators=len(trees), max_depth=1, bootstrap=False,
                                   random_state=seed).fit(Xk, target)
    forest.estimators_ = trees  # the forest averages the component trees
    return forest


def _boosted_model(family, Xtrain, target, components, n_features, seed):
    groups = [list(G) for G in components]
    groups += [[j] for j in range(n_features) if all(j not in G for G in components)]
    if family == "hist_gradient_boosting":
        from sklearn.ensemble import HistGradientBoostingRegressor

        model = HistGradientBoostingRegressor(
            max_iter=25, learning_rate=0.3, max_leaf_nodes=8, min_samples_leaf=3,
            interaction_cst=groups, early_stopping=False, random_state=seed)
    elif family == "xgboost":
        from ._utils import import_optional

        xgb = import_optional("xgboost")
        model = xgb.XGBRegressor(n_estimators=25, max_depth=3, learning_rate=0.3,
                                 interaction_constraints=str(groups), n_jobs=1,
                                 random_state=seed)
    else:
        from ._utils import import_optional

        lgb = import_optional("lightgbm")
        model = lgb.LGBMRegressor(n_estimators=25, num_leaves=8, min_child_samples=3,
                                  interaction_constraints=groups, verbose=-1, n_jobs=1,
                                  deterministic=True, force_row_wise=True,
                                  random_state=seed)
    return model.fit(Xtrain, target)


def known_linear_combination(f: KnownModel, g: KnownModel,
                             weights: tuple[float, float] | None = None) -> KnownModel:
    """The known model ``a f + b g`` of two known models built on the same data.

    Parameters
    ----------
    f, g : KnownModel
        Same family (``"linear"`` or ``"forest"``), data and components.
    weights : pair of numbers or None, default=None
        ``"linear"``: the coefficients ``(a, b)``, any floats (default ``(1.5, -0.5)``).
        ``"forest"``: positive integers ``(m_f, m_g)``; the forest repeats the trees of
        ``f`` ``m_f`` times and those of ``g`` ``m_g`` times, and since a forest averages
        its trees, ``a = m_f T_f / T`` and ``b = m_g T_g / T`` (default ``(1, 2)``).

    Returns
    -------
    KnownModel
        With ``parts = [(a, f), (b, g)]``.
    """
    from copy import deepcopy

    if f.family != g.family or f.family not in _COMBINABLE:
        raise ValueError(f"Linear combinations are built of two 'linear' or two 'forest' "
                         f"models; got {f.family!r} and {g.family!r}.")
    same_data = np.shape(f.X) == np.shape(g.X) and np.array_equal(_float_array(f.X),
                                                                   _float_array(g.X))
    if not same_data or f.components != g.components or f.dummy_features != g.dummy_features:
        raise ValueError("f and g must be built on the same data with the same components "
                         "(same structure and features).")
    model = deepcopy(f.model)
    if f.family == "linear":
        a, b = (1.5, -0.5) if weights is None else (float(weights[0]), float(weights[1]))
        model.coef_ = a * f.model.coef_ + b * g.model.coef_
        model.intercept_ = a * f.model.intercept_ + b * g.model.intercept_
    else:
        m_f, m_g = (1, 2) if weights is None else weights
        if int(m_f) != m_f or int(m_g) != m_g or m_f < 1 or m_g < 1:
            raise ValueError(f"A forest combination takes positive integer weights; got "
                             f"{weights!r}.")
        trees = list(f.model.estimators_) * int(m_f) + list(g.model.estimators_) * int(m_g)
        model.estimators_ = trees
        model.n_estimators = len(trees)
        a = int(m_f) * len(f.model.estimators_) / len(trees)
        b = int(m_g) * len(g.model.estimators_) / len(trees)
    return KnownModel(model, f.X, f.family, f.structure, list(f.components),
                      list(f.dummy_features), list(f.symmetric_pairs), [(a, f), (b, g)])


def known_models(X: ArrayLike | pd.DataFrame | None = None, y: ArrayLike | None = None, *,
                 families: Sequence[str] = ("linear", "forest"),
                 structures: Sequence[str] | None = None,
                 combinations: bool = True) -> SearchStrategy[KnownModel]:
    """Hypothesis strategy of :class:`KnownModel`.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features) or None, default=None
        The data the models are built on; ``None`` draws small data sets too (12 to 30
        rows, 2 to 5 features, every column taking distinct values: a shuffled ramp of a
        drawn step and offset, plus a drawn perturbation below half a step; never
        constant, so every drawn model varies on its data).
    y : array-like of shape (n_samples,) or None, default=None
        Targets (only with ``X``); see :func:`make_known_model`.
    families : sequence of str, default=("linear", "forest")
        Model families to draw from: ``("forest", "hist_gradient_boosting")`` for a tree
        explainer such as :class:`~sklearn_xai.tree.TreeShapExplainer`.
    structures : sequence of str or None, default=None
        Structures to draw from (``None``: every one the family supports).
    combinations : bool, default=True
        Also draw linear combinations of two models (:func:`known_linear_combination`)
        of the ``"linear"`` and ``"forest"`` families, which the linearity axiom needs.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy that draws :class:`KnownModel` instances, to pass to
        :func:`check_explainer` as ``models``.
    """
    _hypothesis()
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    families = list(families)
    for fam in families:
        if fam not in _FAMILIES:
            raise ValueError(f"Unknown family {fam!r}; choose among {_FAMILIES}.")
    if y is not None and X is None:
        raise ValueError("Pass X with y.")

    @st.composite
    def data(draw):
        # never degenerate: every column takes n distinct values (a drawn perturbation of
        # a shuffled ramp), so that every drawn model varies on its data and a broken
        # explainer cannot pass by a tie (all-zero X, a constant column)
        n = draw(st.integers(_MIN_DRAWN_ROWS, 30))
        m = draw(st.integers(2, 5))
        noise = draw(arrays(np.float64, (n, m), elements=st.floats(
            -0.4, 0.4, allow_nan=False, allow_subnormal=False, width=64)))
        cols = []
        for j in range(m):
            ramp = np.asarray(draw(st.permutations(range(n))), dtype=np.float64)
            step = draw(st.floats(0.05, 20.0, allow_nan=False))
            shift = draw(st.floats(-50.0, 50.0, allow_nan=False))
            cols.append(shift + step * (ramp + noise[:, j]))
        return np.column_stack(cols)

    @st.composite
    def build(draw):
        A = draw(data()) if X is None else X
        fam = draw(st.sampled_from(families))
        allowed = [s for s in _SUPPORTED[fam] if structures is None or s in structures]
        if not allowed:
            raise ValueError(f"No structure of {structures} is supported by {fam!r}.")
        if np.shape(A)[1] < 2:
            allowed = [s for s in allowed if s == "additive"]
        structure = draw(st.sampled_from(allowed))
        order = draw(st.permutations(range(np.shape(A)[1])))
        feats = None if structure == "additive" else (
            order[0] if structure == "dummy" else tuple(order[:2]))
        seed = draw(st.integers(0, 2**31 - 1))
        f = make_known_model(A, y, family=fam, structure=structure, features=feats,
                             random_state=seed)
        if combinations and fam in _COMBINABLE and draw(st.booleans()):
            g = make_known_model(A, y, family=fam, structure=structure, features=feats,
                                 random_state=(seed + 1) % 2**31)
            if fam == "linear":
                coef = st.floats(-3, 3, allow_nan=False).filter(lambda c: abs(c) > 0.1)
                weights = (draw(coef), draw(coef))
            else:
                weights = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
            return known_linear_combination(f, g, weights)
        return f

    return build()


# --------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class _Profile:
    """Which known models an explainer is checked on, and which axioms hold exactly."""

    name: str
    families: tuple  # checked by default
    structures: tuple
    axioms: tuple
    why_not: dict = field(default_factory=dict)  # axiom -> why it does not hold
    allowed: tuple = _FAMILIES  # that the explainer can explain
    structure_why: dict = field(default_factory=dict)  # structure -> why it is not checked

    def families_text(self):
        """The families, as the error messages and doc/testing.rst's table give them."""
        default = ", ".join(self.families)
        more = [f for f in self.allowed if f not in self.families]
        if not more:
            return default
        return f"{default} (by default) and {', '.join(more)} (in models=)"


_PAIR_WHY = {
    "ShearExplainer": "ShearExplainer without antithetic pairing is exact on the planted "
                      "pair only with n_evals >= 2**n_features",
    "KnockoffSHAP": "KnockoffSHAP is exact on the planted pair only with the exact or "
                    "permutation algorithm, or KernelSHAP enumerating every coalition",
}


def _explainer_profile(explainer, n_features):
    """The table of what holds for each attribution explainer of the package.

    * ``TreeShapExplainer`` (path-dependent and interventional): tree families; every
      axiom and the closed form (its 'missing' features follow the tree covers or the
      background, neither depends on the row).
    * ``ShearExplainer``: every axiom on additive models; on the planted pair only with
      ``antithetic=True`` or in its exact regime (``n_evals >= 2**n_features``).
    * ``KnockoffSHAP(imputation="marginal")``: every axiom; the planted pair only with the
      exact or permutation algorithm, or KernelSHAP when its budget enumerates every
      coalition. ``imputation="knockoff"``: the knockoffs depend on the row, so the
      closed form and symmetry do not hold; efficiency, dummy and linearity (same seed)
      do, linearity only for a fixed budget (``n_evals="auto"`` draws as many knockoffs
      per row as the model's errors ask for).
    * any other attribution explainer: every axiom on every model-agnostic model.
    """
    mro = {c.__name__ for c in type(explainer).__mro__}
    params = explainer.get_params(deep=False)
    name = type(explainer).__name__
    agnostic = ("linear", "forest")
    no_pair = ("additive", "dummy", "symmetric")
    if "TreeShapExplainer" in mro:
        return _Profile(name, ("forest", "hist_gradient_boosting"), _STRUCTURES, AXIOMS,
                        allowed=_FAMILIES[1:])
    if "ShearExplainer" in mro:
        n_evals = params.get("n_evals")
        exact = isinstance(n_evals, int | np.integer) and n_evals >= 2**n_features
        pair = exact or bool(params.get("antithetic", True))
        return _Profile(name, agnostic, _STRUCTURES if pair else no_pair, AXIOMS,
                        structure_why={} if pair else {"pair": _PAIR_WHY["ShearExplainer"]})
    if "KnockoffSHAP" in mro:
        from .shapley._estimators import default_n_evals

        algorithm = params.get("algorithm", "auto")
        if algorithm == "auto":
            algorithm = "exact" if n_features <= 12 else "kernel"
        n_evals = params.get("n_evals")
        if not isinstance(n_evals, int | np.integer):
            n_evals = default_n_evals(algorithm, n_features) or 0
        pair = algorithm in ("exact", "permutation") or (
            algorithm == "kernel" and n_evals * n_features >= 2**n_features - 2)
        structures = _STRUCTURES if pair else no_pair
        structure_why = {} if pair else {"pair": _PAIR_WHY["KnockoffSHAP"]}
        if params.get("imputation", "knockoff") == "knockoff":
            why = ("the knockoffs that fill the missing features depend on the explained "
                   "row, so the attributions of a component are not g(x) plus a constant")
            why_not = {"closed_form": why, "symmetry": why + " (nor equal for "
                       "interchangeable features: their knockoffs differ)"}
            axioms = ("efficiency", "dummy", "linearity")
            if isinstance(params.get("n_evals"), str):
                axioms = ("efficiency", "dummy")
                why_not["linearity"] = ("n_evals='auto' chooses each row's number of "
                                        "knockoffs from the model's own errors, so f, g and "
                                        "a f + b g are explained with different knockoffs")
            structure_why["symmetric"] = why_not["symmetry"]
            return _Profile(f"{name}(imputation='knockoff')", agnostic,
                            tuple(s for s in structures if s != "symmetric"), axioms,
                            why_not, structure_why=structure_why)
        return _Profile(name, agnostic, structures, AXIOMS, structure_why=structure_why)
    return _Profile(name, agnostic, _STRUCTURES, AXIOMS)


def _resolve_axioms(axioms, profile):
    if isinstance(axioms, str) and axioms == "all":
        return profile.axioms
    names = [axioms] if isinstance(axioms, str) else list(axioms)
    for a in names:
        if a not in AXIOMS:
            raise ValueError(f"Unknown axiom {a!r}; choose among {AXIOMS} or 'all'.")
        if a not in profile.axioms:
            raise ValueError(f"The {a} axiom does not hold exactly for {profile.name}: "
                             f"{profile.why_not.get(a, 'not applicable')}.")
    return tuple(a for a in AXIOMS if a in names)


def _default_models(X, y, profile, axioms, random_state, skipped):
    rng = np.random.default_rng(random_state)
    M = np.shape(X)[1]
    models = []
    for fam in profile.families:
        structures = []
        for s in _SUPPORTED[fam]:
            if s not in profile.structures:
                why = profile.structure_why.get(s, f"{profile.name} is not checked on it")
                skipped.append((f"the {s} {fam} model", why))
            elif s != "additive" and M < 2:
                skipped.append((f"the {s} {fam} model", "it needs at least 2 features"))
            else:
                structures.append(s)
        for structure in structures:
            feats = None if structure == "additive" else (
                int(rng.integers(M)) if structure == "dummy" else
                tuple(int(j) for j in rng.permutation(M)[:2]))
            models.append(make_known_model(X, y, family=fam, structure=structure,
                                           features=feats,
                                           random_state=int(rng.integers(2**31 - 1))))
        if "linearity" in axioms and fam in _COMBINABLE:
            structure = "pair" if "pair" in structures else "additive"
            feats = None if structure == "additive" else tuple(
                int(j) for j in rng.permutation(M)[:2])
            f, g = (make_known_model(X, y, family=fam, structure=structure, features=feats,
                                     random_state=int(rng.integers(2**31 - 1)))
                    for _ in range(2))
            models.append(known_linear_combination(f, g))
    for fam in profile.allowed:
        if fam not in profile.families:
            skipped.append((f"the {fam} models", f"{profile.name} is checked on them only "
                            "when given in models="))
    return models


# --------------------------------------------------------------------------- the check


def _explain_known(explainer, km, random_state, cache):
    from sklearn.base import clone
    from sklearn.frozen import FrozenEstimator

    if id(km) in cache:
        return cache[id(km)][1]
    est = clone(explainer)
    params = {"model": FrozenEstimator(km.model)}
    rs = est.get_params(deep=False).get("random_state", 0)
    if "random_state" in est.get_params(deep=False) and not isinstance(rs, int | np.integer):
        params["random_state"] = int(random_state)  # linearity compares runs of one seed
    est.set_params(**params)
    att = est.fit(km.X).explain(km.X)
    from ._explanation import Attribution

    if not isinstance(att, Attribution):
        raise TypeError(f"check_explainer needs explain to return an Attribution; "
                        f"{type(explainer).__name__}.explain returned "
                        f"{'None' if att is None else type(att).__name__}.")
    values = np.asarray(att.values, dtype=np.float64)
    base = np.asarray(att.base_values, dtype=np.float64)
    std = getattr(att, "std", None)
    std = None if std is None else np.asarray(std, dtype=np.float64)
    M = np.shape(km.X)[1]
    if values.shape != (_n_rows(km.X), M):
        raise ValueError(
            f"check_explainer needs one attribution per feature and row of one output; "
            f"{type(explainer).__name__} gave values of shape {np.shape(att.values)} for "
            f"{_n_rows(km.X)} rows of {M} features (remove feature_groups, explain one "
            "output).")
    if std is not None and std.shape != values.shape:
        raise ValueError(f"{type(explainer).__name__} gave std of shape {std.shape} for "
                         f"values of shape {values.shape}.")
    if std is not None and np.any(std < 0):
        r, j = np.argwhere(std < 0)[0]
        raise AssertionError(f"check_explainer: {type(explainer).__name__} reports a "
                             f"negative standard error ({std[r, j]:.3g}) on the "
                             f"{km.description}, at row {r}, feature {j}.")
    # no standard error (exact) or an unknown one (NaN): the relations must hold exactly;
    # an infinite one excuses no more than the cap of _check_known
    out = (values, base.reshape(-1), np.zeros_like(values) if std is None else
           np.nan_to_num(std, nan=0.0, posinf=np.inf), list(att.feature_names))
    cache[id(km)] = (km, out)  # keeps km alive, so its id is not reused
    return out


def _fail(axiom, profile, km, row, where, what, got, expected, gap, tol):
    raise AssertionError(
        f"check_explainer: {axiom} violated by {profile.name} on the {km.description}, at "
        f"row {row}, {where}: {what} = {got:.6g}, expected {expected:.6g} (gap {gap:.3g} > "
        f"tolerance {tol:.3g}).")


def _spread(km):
    """The model's output range on its data, and the most atol or standard errors may
    excuse on it."""
    pred = km.predict()
    spread = float(np.ptp(pred)) if pred.size else 0.0
    return pred, spread, _MAX_EXCUSE * spread


def _check_known(explainer, km, axioms, profile, atol, random_state, cache):
    """Check ``axioms`` on ``km``; return the axioms that applied to it."""
    with np.errstate(over="ignore"):  # a huge standard error squared is inf: capped
        return _check_known_axioms(explainer, km, axioms, profile, atol, random_state,
                                   cache)


def _check_known_axioms(explainer, km, axioms, profile, atol, random_state, cache):
    pred, spread, cap = _spread(km)
    phi, base, std, names = _explain_known(explainer, km, random_state, cache)
    scale = max(1.0, float(np.max(np.abs(pred))), float(np.max(np.abs(base))))
    # round-off: 1e-7 of the output, more for a model that predicts in float32
    tol0 = max(1e-7, 128 * km.output_eps) * scale if atol is None else float(atol)

    def excuse(sd):  # what standard errors may excuse: Z of them, at most the cap
        return np.minimum(_Z * sd, cap)

    applied = []
    if "efficiency" in axioms:
        applied.append("efficiency")
        got = base + phi.sum(axis=1)
        gap = np.abs(got - pred)
        tol = tol0 + excuse(np.sqrt((std**2).sum(axis=1)))
        r = int(np.argmax(gap - tol))
        if not gap[r] <= tol[r]:
            _fail("efficiency", profile, km, r, "all features", "base value + sum of "
                  "attributions", got[r], pred[r], gap[r], tol[r])
    if "dummy" in axioms and km.dummy_features:
        applied.append("dummy")
        for d in km.dummy_features:
            gap, tol = np.abs(phi[:, d]), tol0 + excuse(std[:, d])
            r = int(np.argmax(gap - tol))
            if not gap[r] <= tol[r]:
                _fail("dummy", profile, km, r, f"feature {names[d]!r} (never read by the "
                      "model)", "attribution", phi[r, d], 0.0, gap[r], tol[r])
    if "symmetry" in axioms and km.symmetric_pairs:
        applied.append("symmetry")
        for a, b in km.symmetric_pairs:
            gap = np.abs(phi[:, a] - phi[:, b])
            tol = tol0 + excuse(np.hypot(std[:, a], std[:, b]))
            r = int(np.argmax(gap - tol))
            if not gap[r] <= tol[r]:
                _fail("symmetry", profile, km, r, f"features {names[a]!r} and {names[b]!r} "
                      "(interchangeable)", f"attribution of {names[a]!r}", phi[r, a],
                      phi[r, b], gap[r], tol[r])
    if "closed_form" in axioms:
        applied.append("closed_form")
        effects = km.component_effects()
        for k, G in enumerate(km.components):
            G = list(G)
            joint = phi[:, G].sum(axis=1)
            resid = joint - effects[:, k]
            const = np.median(resid)  # a broken row does not move the constant
            gap = np.abs(resid - const)
            tol = tol0 + excuse(np.sqrt((std[:, G] ** 2).sum(axis=1)))
            r = int(np.argmax(gap - tol))
            if not gap[r] <= tol[r]:
                where = (f"feature {names[G[0]]!r}" if len(G) == 1 else
                         "features " + " + ".join(repr(names[j]) for j in G) +
                         " (the planted pair, jointly)")
                _fail("closed form", profile, km, r, where, "attribution",
                      joint[r], effects[r, k] + const, gap[r], tol[r])
    if "linearity" in axioms and km.parts:
        applied.append("linearity")
        expect_phi = np.zeros_like(phi)
        expect_base = np.zeros_like(base)
        var = std**2
        for coef, part in km.parts:
            p_phi, p_base, p_std, _ = _explain_known(explainer, part, random_state, cache)
            expect_phi += coef * p_phi
            expect_base += coef * p_base
            var = var + coef**2 * p_std**2
        weight = 1.0 + sum(abs(c) for c, _ in km.parts)
        gap = np.abs(phi - expect_phi)
        tol = weight * tol0 + excuse(np.sqrt(var))
        r, j = np.unravel_index(int(np.argmax(gap - tol)), gap.shape)
        if not gap[r, j] <= tol[r, j]:
            _fail("linearity", profile, km, r, f"feature {names[j]!r}", "attribution",
                  phi[r, j], expect_phi[r, j], gap[r, j], tol[r, j])
        gap = np.abs(base - expect_base)
        r = int(np.argmax(gap))
        if not gap[r] <= weight * tol0:
            _fail("linearity", profile, km, r, "the base value", "base value", base[r],
                  expect_base[r], gap[r], weight * tol0)
    return tuple(applied)


@dataclass
class CheckReport:
    """What :func:`check_explainer` checked, and what it skipped and why.

    Parameters
    ----------
    explainer : str
        The explainer as the table of :mod:`sklearn_xai.testing` names it (e.g.
        ``"KnockoffSHAP(imputation='knockoff')"``).
    checked : list of (str, tuple of str)
        Each known model checked (its description) with the axioms that applied to it (a
        model without a dummy feature has no dummy check, only a linear combination a
        linearity check).
    skipped : list of (str, str)
        What was not checked (a model, a family, an axiom) and why.
    axioms : tuple of str
        The axioms checked on at least one model.
    """

    explainer: str
    checked: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    axioms: tuple = ()

    def __str__(self):
        lines = [f"check_explainer({self.explainer}): {len(self.checked)} known models "
                 f"passed {', '.join(self.axioms)}"]
        lines += [f"  checked {what}: {', '.join(ax)}" for what, ax in self.checked]
        lines += [f"  skipped {what}: {why}" for what, why in self.skipped]
        return "\n".join(lines)


def _check_explainer_type(explainer):
    """A TypeError that says what is wrong, for anything but an attribution explainer."""
    from .base import AttributionMixin, BaseExplainer, RecourseMixin

    if isinstance(explainer, type):
        raise TypeError(f"check_explainer needs an explainer instance, not the class "
                        f"{explainer.__name__}: pass {explainer.__name__}(...) with the "
                        "parameters to check.")
    name = type(explainer).__name__
    if isinstance(explainer, RecourseMixin):
        raise TypeError(f"check_explainer checks attribution explainers; {name} is a "
                        "recourse explainer (it returns counterfactuals, not attributions).")
    if isinstance(explainer, BaseExplainer) and not isinstance(explainer, AttributionMixin):
        raise TypeError(f"check_explainer checks attribution explainers (one value per "
                        f"feature and row); {name} is not one (it does not return an "
                        "Attribution per row, e.g. a global importance).")
    if not (hasattr(explainer, "get_params") and hasattr(explainer, "explain")
            and "model" in explainer.get_params(deep=False)):
        raise TypeError(f"check_explainer needs an attribution explainer with a 'model' "
                        f"parameter and an explain method (a subclass of "
                        f"sklearn_xai.base.BaseExplainer); got {name}.")


def _check_atol(atol):
    if atol is None:
        return None
    try:
        value = float(atol)
    except (TypeError, ValueError):
        raise TypeError(f"atol must be a number or None; got {atol!r}.") from None
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"atol must be a finite number >= 0 or None; got {atol!r} (an "
                         "infinite or NaN tolerance would pass any explanation).")
    return value


def check_explainer(explainer: Any, X: ArrayLike | pd.DataFrame, y: ArrayLike | None = None, *,
                    axioms: Literal["all"] | Iterable[str] = "all", atol: float | None = None,
                    models: Iterable[KnownModel] | None = None,
                    random_state: int = 0) -> CheckReport:
    """Check an attribution explainer on models whose attributions are known.

    A clone of ``explainer`` explains each known model (its ``model`` parameter set to
    the fitted model in a ``FrozenEstimator``; fitted on, and explaining, the model's
    data), and every axiom that the explainer promises on that model is checked:

    * ``"efficiency"``: ``base + sum(phi) == f(x)``;
    * ``"dummy"``: a feature the model never reads gets 0;
    * ``"symmetry"``: two interchangeable features (equal components, equal columns)
      get equal attributions;
    * ``"linearity"``: the attributions (and base values) of ``a f + b g`` equal ``a``
      times those of ``f`` plus ``b`` times those of ``g``, all explained with one seed;
    * ``"closed_form"``: the attributions of each component (a feature, or the planted
      pair jointly) equal ``g(x) - g(z)`` plus one constant over the rows (the explainer's
      baseline, whatever it is).

    Which models and axioms apply depends on the explainer (a table in
    :mod:`sklearn_xai.testing`): tree explainers get tree ensembles; knockoff imputation
    depends on the row, so it is not checked for the closed form or symmetry; SHEAR
    without antithetic pairing is not exact on the planted pair. Check an explainer in
    the regime where it is exact, or a sampled one whose result reports standard errors
    (``Attribution.std``): a value may then miss an exact relation by six of its
    standard errors (an unknown, ``NaN``, standard error counts as 0), but neither the
    standard errors (an infinite one included) nor ``atol`` may excuse a tenth of the
    model's output range on its data, so a negated or zero explanation always fails.
    Nothing is skipped silently: the returned :class:`CheckReport` lists every model
    checked with the axioms that applied to it, and every model, family or axiom that
    was not checked, with the reason.

    Parameters
    ----------
    explainer : attribution explainer
        An unfitted explainer with a ``model`` parameter, ``fit(X)`` and ``explain(X)``
        returning an :class:`~sklearn_xai.Attribution` with one player per feature (a
        subclass of :class:`sklearn_xai.base.BaseExplainer`, ours or yours). A
        ``random_state`` that is not an int is set to ``random_state``.
    X : array-like or DataFrame of shape (n_samples, n_features), numeric
        Data the default known models are built on (a few dozen rows suffice: every
        row is explained several times).
    y : array-like of shape (n_samples,) or None, default=None
        Targets of the known models (see :func:`make_known_model`); ``None``: synthetic.
    axioms : "all" or iterable of str, default="all"
        Among ``AXIOMS``; ``"all"``: every axiom the explainer promises. Asking for one it
        does not promise, none at all (``[]``), or one that no model given can test
        (``"dummy"`` without a dummy feature) is a ValueError that says why.
    atol : float or None, default=None
        Absolute tolerance, finite and ``>= 0`` (and below a tenth of each model's output
        range); ``None``: ``1e-7`` times the largest model output (at least 1), or
        ``128`` float32 epsilons of it for a model that predicts in float32 (XGBoost).
    models : iterable of KnownModel or None, default=None
        The known models (e.g. drawn by :func:`known_models`; each carries its own data,
        and ``X`` and ``y`` are then not used). ``None``: one model per family and
        structure the explainer fits, plus a linear combination per combinable family.
    random_state : int, default=0
        Seeds the default models and explainers whose ``random_state`` is not an int.

    Returns
    -------
    CheckReport
        What was checked (each model and the axioms that applied to it) and what was
        skipped, with the reason (e.g. the planted pair for SHEAR without antithetic
        pairing, the axioms that knockoff imputation does not promise).

    Raises
    ------
    AssertionError
        Naming the axiom, the explainer, the model, the row, the feature and the gap.
    TypeError
        For a class instead of an instance, an explainer that is not an attribution
        explainer (a recourse explainer, KnockoffSAGE), or one whose ``explain`` does not
        return an :class:`~sklearn_xai.Attribution`.
    ValueError
        For a non-finite or negative ``atol``, empty ``axioms``, or a known model that
        (nearly) predicts a constant on its data, on which a check could not fail.
    """
    _check_explainer_type(explainer)
    atol = _check_atol(atol)
    axioms = _check_axioms_arg(axioms)
    models, y, width = _check_models_arg(models, X, y)
    profile = _explainer_profile(explainer, width)
    wanted = _resolve_axioms(axioms, profile)
    report = CheckReport(profile.name)
    for a in AXIOMS:
        if a not in wanted:
            report.skipped.append((f"the {a} axiom", profile.why_not.get(a, "not asked for")
                                   if a not in profile.axioms else "not asked for"))
    if models is None:
        models = _default_models(X, y, profile, wanted, random_state, report.skipped)
    cache = {}
    for km in models:
        prof = _checkable_profile(explainer, km, atol)
        applied = _check_known(explainer, km, wanted, prof, atol, random_state, cache)
        report.checked.append((km.description, applied))
    report.axioms = tuple(a for a in AXIOMS if any(a in ax for _, ax in report.checked))
    _report_unchecked(report, wanted, asked_all=isinstance(axioms, str) and axioms == "all")
    return report


def _check_axioms_arg(axioms):
    """``axioms`` as given (a string) or as a list, which must not be empty."""
    if not isinstance(axioms, str):
        axioms = list(axioms)
        if not axioms:
            raise ValueError(f"axioms is empty, so nothing would be checked; pass 'all' or "
                             f"some of {AXIOMS}.")
    return axioms


def _check_models_arg(models, X, y):
    """``(models, y, width)``: the known models as a list (or None), the checked ``y``
    (when the default models are built from ``X``) and the number of features."""
    if models is None:
        A, y = _check_data(X, y, 2)
        return None, y, A.shape[1]
    models = list(models)
    if not models or not all(isinstance(m, KnownModel) for m in models):
        raise TypeError("models must be a non-empty iterable of KnownModel.")
    return models, y, np.shape(models[0].X)[1]


def _checkable_profile(explainer, km, atol):
    """The explainer's profile on ``km``; a ValueError when it is not checked on that
    model, or the model is too close to a constant on its data for a check to fail."""
    prof = _explainer_profile(explainer, np.shape(km.X)[1])
    if km.family not in prof.allowed or km.structure not in prof.structures:
        why = prof.structure_why.get(km.structure)
        raise ValueError(
            f"{prof.name} is not checked on the {km.description}: it is checked on "
            f"the families {prof.families_text()} with the structures "
            f"{', '.join(prof.structures)}" + (f" ({why})" if why else "") + ".")
    pred, spread, cap = _spread(km)
    floor = atol if atol is not None else (
        max(1e-7, 128 * km.output_eps) * max(1.0, float(np.max(np.abs(pred)))))
    if not cap > floor:
        raise ValueError(
            f"The {km.description} predicts almost a constant on its data (output "
            f"range {spread:.3g}), so a check on it could pass a broken explanation"
            + (f" within atol={atol:g}" if atol else "") + ": build the known models on "
            "data whose columns vary" + (f", or lower atol below a tenth of the range "
                                         f"({cap:.3g})" if atol else "") + ".")
    return prof


def _report_unchecked(report, wanted, asked_all):
    """Each wanted axiom that no model could test: skipped (for ``axioms="all"``) or a
    ValueError (asked for by name)."""
    for a in wanted:
        if a not in report.axioms:
            what = {"dummy": "a dummy feature", "symmetry": "interchangeable features",
                    "linearity": "a linear combination"}.get(a, "it")
            if not asked_all:
                raise ValueError(f"No model given has {what}, so the {a} axiom asked for "
                                 "was not checked.")
            report.skipped.append((f"the {a} axiom", f"no model checked has {what}"))
