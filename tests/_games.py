"""Random dividend games with closed-form Shapley values, for the estimators' tests."""

import numpy as np

from sklearn_xai.testing import DividendGame

# dividends of orders 1-5 (count per order): beyond the frontier's order-3 surrogate
HIGH = ((1, 10), (2, 10), (3, 6), (4, 4), (5, 3))


def dividend_game(P, orders, n_rows=3, seed=0):
    """A :class:`~sklearn_xai.testing.DividendGame` of ``P`` players with ``count`` random
    coalitions of each ``(order, count)`` in ``orders``, normal dividends per row."""
    rng = np.random.default_rng(seed)
    terms = {}
    for order, count in orders:
        for _ in range(count):
            T = tuple(sorted(rng.choice(P, order, replace=False).tolist()))
            terms[T] = rng.normal(size=n_rows)
    return DividendGame(P, terms, n_rows=n_rows, constant=rng.normal(size=n_rows))


def game_rows(game, rows):
    """The dividend game of some of ``game``'s rows (a DividendGame), in the given order."""
    rows = np.asarray(rows)
    return DividendGame(game.n_players, {T: d[rows] for T, d in game.terms.items()},
                        n_rows=rows.size, constant=game.constant[rows])
