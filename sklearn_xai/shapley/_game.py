"""Cooperative games on features: the object every model-agnostic Shapley estimator calls.

A game knows nothing of estimators: it evaluates coalitions (boolean masks over players)
for many explained rows at once. :class:`Game` states the protocol; the estimators of
:mod:`sklearn_xai.shapley._estimators` and SHEAR work on any object that follows it.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from typing import TYPE_CHECKING

import numpy as np

from .._faithfulness import check_groups
from .._model import check_output

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import ArrayLike

__all__ = ["Game", "ImputationGame", "group_matrix"]


def group_matrix(groups, n_features):
    """Boolean membership matrix of players over columns.

    Parameters
    ----------
    groups : list of array-like of int, length n_players
        Column indices of each player.
    n_features : int
        Number of columns.

    Returns
    -------
    ndarray of bool, shape (n_players, n_features)
        ``G[p, j]`` is True when column ``j`` belongs to player ``p``.
    """
    G = np.zeros((len(groups), n_features), dtype=bool)
    for p, cols in enumerate(groups):
        G[p, np.asarray(cols, dtype=np.intp)] = True
    return G


def _differing_players(differs, G):
    """The players holding a column that differs: ``differs`` (..., M) bool over the
    columns, ``G`` (P, M) the players' membership (bool or 0/1) -> (..., P) bool. The
    counts are taken in float32, exact below 2**24 columns (in uint8 they wrapped at 256:
    a player of 256 differing columns looked like a dummy)."""
    return differs.astype(np.float32) @ np.asarray(G, dtype=np.float32).T > 0


class Game(metaclass=ABCMeta):
    """A cooperative game per explained row: the protocol of every Shapley estimator.

    A game holds ``n_rows`` explained rows, each with its own game ``v_r`` over the same
    ``n_players`` players, with ``n_outputs`` values per coalition. Estimators only choose
    coalitions and weights and call :meth:`value`; every game of the package
    (:class:`ImputationGame`, SHEAR's torch reference game, KnockoffSAGE's table of loss
    values, :class:`sklearn_xai.testing.DividendGame`) is a subclass.

    Subclasses define the properties ``n_players`` and ``n_rows`` and the method
    :meth:`value`, which validates its masks with :meth:`_check_masks` and counts its
    evaluations with :meth:`_count`.

    Attributes
    ----------
    n_players : int
        Players of every row's game.
    n_rows : int
        Explained rows.
    n_outputs : int
        Values per coalition (e.g. one per explained model output). By default found by
        evaluating the full coalition of the first row, which is not counted.
    n_evaluations : int
        Coalition evaluations so far, summed over rows; evaluations with ``count=False``
        are left out. It is the unit of every estimator's budget.
    """

    n_evaluations = 0

    @property
    @abstractmethod
    def n_players(self) -> int:
        """Number of players."""

    @property
    @abstractmethod
    def n_rows(self) -> int:
        """Number of explained rows."""

    @property
    def n_outputs(self) -> int:
        """Number of values per coalition."""
        if getattr(self, "_n_outputs", None) is None:
            if self.n_rows == 0:
                raise ValueError("A game without rows has no output to probe.")
            self._n_outputs = self.value(np.ones((1, self.n_players), dtype=bool),
                                         rows=slice(0, 1), count=False).shape[-1]
        return self._n_outputs

    @abstractmethod
    def value(self, masks: ArrayLike, rows: slice | ArrayLike | None = None,
              count: bool = True) -> np.ndarray:
        """Evaluate coalitions.

        Parameters
        ----------
        masks : array-like of bool
            Shape (n_coalitions, n_players): coalitions shared by all selected rows; or
            shape (n_selected_rows, n_coalitions, n_players): one set per row.
        rows : slice or None, default=None
            Explained rows to evaluate (default all).
        count : bool, default=True
            Add the evaluations to ``n_evaluations``.

        Returns
        -------
        ndarray of shape (n_selected_rows, n_coalitions, n_outputs), float64
            ``out[r, c]`` is the value of coalition ``c`` in the game of the ``r``-th
            selected row.
        """

    def value_each(self, masks: Sequence[np.ndarray], count: bool = True) -> list[np.ndarray]:
        """Evaluate each row's own coalitions, rows with different numbers of coalitions.

        Parameters
        ----------
        masks : sequence of ndarray of bool, length n_rows
            ``masks[r]`` of shape (C_r, n_players): the coalitions of row ``r``.
        count : bool, default=True
            Add the evaluations to ``n_evaluations``.

        Returns
        -------
        list of ndarray, length n_rows
            ``out[r]`` of shape (C_r, n_outputs). The rows with as many coalitions share
            one :meth:`value` call (a subclass may pack them more tightly).
        """
        sizes = np.array([m.shape[0] for m in masks], dtype=np.int64)
        blocks = []
        for C in np.unique(sizes):
            rows = np.flatnonzero(sizes == C)
            blocks.append((rows, np.stack([masks[r] for r in rows]) if C else
                           np.zeros((rows.size, 0, self.n_players), bool)))
        out = [None] * len(masks)
        for (rows, _), vals in zip(blocks, _stacked_values(self, blocks, count)):
            for r, v in zip(rows, vals):
                out[r] = v
        return out

    def _value_blocks(self, blocks: Sequence[tuple[np.ndarray, np.ndarray]],
                      count: bool = True) -> list[np.ndarray]:
        """Evaluate blocks of rows, the rows of a block with the same number of coalitions.

        Parameters
        ----------
        blocks : sequence of (ndarray of int, ndarray of bool)
            ``(rows, masks)``: the rows (R,) and their coalitions (R, C, n_players); a row
            in one block at most.
        count : bool, default=True
            Add the evaluations to ``n_evaluations``.

        Returns
        -------
        list of ndarray
            One (R, C, n_outputs) array per block: what :meth:`value_each` gives, without
            splitting the rows and stacking them again. The blocks with as many coalitions
            share one :meth:`value` call; a subclass that packs its rows its own way (its
            own :meth:`value_each`) gets one call of that.
        """
        if type(self).value_each is Game.value_each:
            return _stacked_values(self, blocks, count)
        masks = [np.zeros((0, self.n_players), bool)] * self.n_rows
        for rows, m in blocks:
            for i, r in enumerate(rows):
                masks[r] = m[i]
        vals = self.value_each(masks, count=count)
        return [np.stack([vals[r] for r in rows]) if len(rows) else
                np.empty((0, m.shape[1], self.n_outputs)) for rows, m in blocks]

    def imputation_components(self) -> tuple[Game, int] | None:
        """The game as the mean of ``K`` component games, when it is one.

        An estimator that samples each component with its own design (and finds each
        component's dummy players) estimates the mean better than one design on the mean.

        Returns
        -------
        (Game, int) or None
            A game of ``n_rows * K`` rows, row ``r * K + k`` being component ``k`` of row
            ``r``, with ``v_r(S) = mean_k v_{r K + k}(S)``, and ``K``; ``None`` (the
            default) when the game is not such a mean. A coalition of a component costs
            ``1 / K`` of a coalition of the mean.
        """
        return None

    def _check_masks(self, masks, rows=None):
        """``masks`` as a bool array and the selected row indices, or a ValueError."""
        masks = np.asarray(masks, dtype=bool)
        row_ids = np.arange(self.n_rows)[slice(None) if rows is None else rows]
        if masks.ndim not in (2, 3):
            raise ValueError(f"masks must be 2-D (n_coalitions, n_players) or 3-D (n_rows, "
                             f"n_coalitions, n_players); got shape {masks.shape}.")
        self._check_players(masks)
        if masks.ndim == 3 and masks.shape[0] != row_ids.size:
            raise ValueError(f"Per-row masks must have one block per selected row "
                             f"({row_ids.size}); got shape {masks.shape}.")
        return masks, row_ids

    def _check_players(self, masks):
        """A ValueError unless ``masks`` has one column per player."""
        if masks.shape[-1] != self.n_players:
            raise ValueError(f"masks must have {self.n_players} player columns; got shape "
                             f"{masks.shape}.")

    def _count(self, n_rows, n_coalitions, count=True):
        if count:
            self.n_evaluations += int(n_rows) * int(n_coalitions)


def _stacked_values(game, blocks, count=True):
    """:meth:`Game._value_blocks` by :meth:`Game.value` itself: one call per number of
    coalitions, the rows of the blocks with that number stacked in row order."""
    out = [None] * len(blocks)
    by_count = {}
    for k, (_, m) in enumerate(blocks):
        by_count.setdefault(m.shape[1], []).append(k)
    for C, ks in by_count.items():
        if not C:
            for k in ks:
                out[k] = np.empty((len(blocks[k][0]), 0, game.n_outputs))
            continue
        rows = np.concatenate([blocks[k][0] for k in ks])
        order = np.argsort(rows, kind="stable")
        v = game.value(np.concatenate([blocks[k][1] for k in ks])[order], rows=rows[order],
                       count=count)
        vals = np.empty_like(v)
        vals[order] = v
        at = np.cumsum([0] + [len(blocks[k][0]) for k in ks])
        for k, a, b in zip(ks, at[:-1], at[1:]):
            out[k] = vals[a:b]
    return out


class ImputationGame(Game):
    """``v(S) = mean_k f(x_S, R_k[~S])`` for every explained row ``x``: a :class:`Game`.

    Parameters
    ----------
    model_fn : callable
        ``f(Z) -> ndarray (m, n_outputs)`` on 2-D arrays of rows. Its outputs are checked
        (one row per input row, numeric, finite: a ``ValueError`` or ``TypeError`` naming
        ``model_fn``) unless it has a true ``checks_output`` attribute, as the explainers'
        model functions do, which check their own.
    X : ndarray of shape (n_rows, n_features)
        The explained rows (object dtype allowed).
    imputation : ndarray of shape (n_imputations, n_features) or (n_rows, n_imputations, n_features)
        Rows that fill the features outside a coalition: one reference row, a background
        sample shared by all rows, or per-row rows (e.g. knockoffs of each ``x``); at
        least one row.
    groups : list of array-like of int or None
        Players as groups of columns (indices in ``[0, n_features)``), at least one
        player; ``None`` makes each column a player.
    batch_size : int, default=65536
        Largest number of model rows per call of ``model_fn``, a positive int.
    per_imputation : bool, default=False
        Return the value of every imputation row instead of their mean: ``n_outputs`` is
        then ``n_imputations * n_model_outputs``, output ``k * n_model_outputs + o`` the
        model output ``o`` with imputation row ``k``. Every estimator is linear in the
        game, so the Shapley values of the mean game are the mean of these, and their
        spread over ``k`` is the error from drawing the imputation rows (e.g. knockoffs).

    Attributes
    ----------
    n_rows, n_players, n_features, n_imputations, n_outputs : int
    n_evaluations : int
        Coalition evaluations so far, summed over rows (each costs ``n_imputations`` model
        rows).
    """

    def __init__(self, model_fn: Callable[[np.ndarray], np.ndarray], X: np.ndarray,
                 imputation: np.ndarray, groups: Sequence[ArrayLike] | None = None,
                 batch_size: int = 65536, per_imputation: bool = False) -> None:
        self.model_fn = model_fn
        self.X = np.asarray(X)
        if self.X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {self.X.shape}.")
        imputation = np.asarray(imputation)
        if imputation.ndim == 2:
            imputation = imputation[None]
            self._shared = True
        elif imputation.ndim == 3:
            if imputation.shape[0] != self.X.shape[0]:
                raise ValueError("Per-row imputation must have one block per explained row.")
            self._shared = False
        else:
            raise ValueError(f"imputation must be 2-D or 3-D, got shape {imputation.shape}.")
        if imputation.shape[-1] != self.X.shape[1]:
            raise ValueError("imputation rows must have as many columns as X.")
        if imputation.shape[1] == 0:
            raise ValueError(f"imputation (the background) must hold at least one row; got "
                             f"shape {imputation.shape[1:] if self._shared else imputation.shape}.")
        self.imputation = imputation
        n_features = self.X.shape[1]
        self.groups = ([np.array([j]) for j in range(n_features)] if groups is None else
                       check_groups(groups, n_features))
        if not self.groups:
            raise ValueError(f"The game needs at least one player: groups lists none (X has "
                             f"{n_features} columns).")
        self._G = group_matrix(self.groups, n_features)
        # each column's one player when no column has two (the usual case): coalitions map
        # to columns by a gather, not a product over the players
        # (and the columns of no player, never the row's; None when there are none)
        owners = self._G.sum(axis=0)
        self._col_player = (np.argmax(self._G, axis=0) if np.all(owners <= 1) else None)
        self._col_unowned = None if np.all(owners > 0) else owners == 0
        if (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                or batch_size < 1):
            raise ValueError(f"batch_size (the most model rows per call of model_fn) must be a "
                             f"positive int; got {batch_size!r}.")
        self.batch_size = int(batch_size)
        self.per_imputation = bool(per_imputation)
        self.n_evaluations = 0
        self._n_outputs = None

    @property
    def n_rows(self) -> int:
        """Number of explained rows."""
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        """Number of columns of the explained rows."""
        return self.X.shape[1]

    @property
    def n_players(self) -> int:
        """Number of players."""
        return len(self.groups)

    @property
    def n_imputations(self) -> int:
        """Number of imputation rows per explained row."""
        return self.imputation.shape[1]

    def active_players(self) -> np.ndarray:
        """Which players can change the game's value, per row.

        A player whose columns in ``x`` equal those of every imputation row is a dummy of
        that row's game (adding it changes no hybrid row), so its Shapley value is exactly 0.

        Returns
        -------
        ndarray of bool, shape (n_rows, n_players)
            False where the player is a dummy of the row's game (its Shapley value is 0).
        """
        R = self.imputation if not self._shared else np.broadcast_to(
            self.imputation, (self.n_rows,) + self.imputation.shape[1:])
        same = np.all(self.X[:, None, :] == R, axis=1)            # (n, M)
        return _differing_players(~same, self._G)

    def imputation_components(self) -> tuple[ImputationGame, int] | None:
        """The game of each imputation row: ``v_r(S) = mean_k f(x_S, R_k[~S])``.

        Returns
        -------
        (ImputationGame, int) or None
            The game of ``n_rows * K`` rows with one imputation row each (row ``r * K +
            k``: ``x_r`` filled from ``R_k``), and ``K``; ``None`` with one imputation row
            or ``per_imputation=True``.
        """
        K = self.n_imputations
        if K == 1 or self.per_imputation:
            return None
        n, M = self.X.shape
        R = np.broadcast_to(self.imputation, (n, K, M)) if self._shared else self.imputation
        game = ImputationGame(self.model_fn, np.repeat(self.X, K, axis=0),
                              R.reshape(n * K, 1, M), groups=self.groups,
                              batch_size=self.batch_size)
        game._n_outputs = self._n_outputs
        return game, K

    def value_each(self, masks: Sequence[np.ndarray], count: bool = True) -> list[np.ndarray]:
        """Evaluate each row's own coalitions, packed into calls of the model.

        The calls hold at most ``batch_size`` model rows, whatever each row's number of
        coalitions.

        Parameters
        ----------
        masks : sequence of ndarray of bool, length n_rows
            ``masks[r]`` of shape (C_r, n_players).
        count : bool, default=True
            Add the evaluations to ``n_evaluations``.

        Returns
        -------
        list of ndarray, length n_rows
            ``out[r]`` of shape (C_r, n_outputs).
        """
        if len(masks) != self.n_rows:
            raise ValueError(f"value_each needs one mask block per row ({self.n_rows}); got "
                             f"{len(masks)}.")
        masks = [self._mask_block(m) for m in masks]
        sizes = np.array([m.shape[0] for m in masks], dtype=np.int64)
        if not sizes.sum():
            return [np.empty((0, self.n_outputs)) for _ in masks]
        vals = self._packed_values(sizes, np.concatenate(masks), count)
        ends = np.cumsum(sizes).tolist()
        return [vals[a:b] for a, b in zip([0] + ends[:-1], ends)]

    def _value_blocks(self, blocks, count=True):
        # the blocks' coalitions placed in row order directly (value_each's order, so the
        # same model calls), without splitting the rows into a list and stacking them back
        n, P = self.n_rows, self.n_players
        sizes = np.zeros(n, dtype=np.int64)
        for rows, m in blocks:
            sizes[rows] = m.shape[1]
        if not sizes.sum():
            return [np.empty((len(rows), m.shape[1], self.n_outputs)) for rows, m in blocks]
        start = np.cumsum(sizes) - sizes
        at = [(start[np.asarray(rows)][:, None] + np.arange(m.shape[1])).ravel()
              for rows, m in blocks]
        flat = np.empty((int(sizes.sum()), P), dtype=bool)
        for (rows, m), a in zip(blocks, at):
            flat[a] = np.asarray(m, dtype=bool).reshape(-1, P)
        vals = self._packed_values(sizes, flat, count)
        O = vals.shape[1]
        return [vals[a].reshape(len(rows), m.shape[1], O) for (rows, m), a in zip(blocks, at)]

    def _mask_block(self, m):
        """One row's coalitions of :meth:`value_each` as a bool array (C_r, n_players), or
        a ValueError."""
        m = np.asarray(m, dtype=bool)
        if m.ndim != 2:
            raise ValueError("value_each takes one 2-D mask block (C_r, n_players) per row; "
                             f"got shape {m.shape}.")
        self._check_players(m)
        return m

    def _packed_values(self, sizes, masks, count=True):
        """The values (C, n_outputs) of every row's coalitions, ``masks`` (C, n_players)
        in row order, ``sizes[r]`` of them for row ``r``: in model calls of at most
        ``batch_size`` model rows, each row's coalitions cut into pieces of at most
        ``batch_size // n_imputations`` and whole pieces packed into a call while they
        fit (a call may hold several rows, a row span several calls). ``count``: add
        them to ``n_evaluations``."""
        rows = np.repeat(np.arange(self.n_rows), sizes)
        vals = [self._flat_values(rows[a:b], masks[a:b]) for a, b in self._call_bounds(sizes)]
        self._count(1, masks.shape[0], count)
        return vals[0] if len(vals) == 1 else np.concatenate(vals)

    def _call_bounds(self, sizes):
        """The model calls of :meth:`_packed_values`, as ranges ``(start, stop)`` of the
        coalitions in row order (``sizes[r]`` of them for row ``r``)."""
        K, cap = self.n_imputations, self.batch_size
        total = int(sizes.sum())
        if total * K <= cap:
            return [(0, total)]
        step = max(1, cap // K)
        bounds, start, at, size = [], 0, 0, 0
        for C in sizes.tolist():
            for c0 in range(0, C, step):
                c = min(step, C - c0)
                if size and size + c * K > cap:
                    bounds.append((start, at))
                    start, size = at, 0
                size += c * K
                at += c
        bounds.append((start, at))
        return bounds

    def _flat_values(self, rows, masks):
        """The values (C, n_outputs) of coalitions ``masks`` (C, n_players) of the
        explained ``rows`` (C,), in one model call."""
        fm = self._feature_masks(masks)                                    # (C, M)
        return self._outputs(self._hybrids(rows, fm[:, None])[:, 0][None])[0]

    def _feature_masks(self, masks):
        """The columns each coalition keeps: masks (..., C, P) -> (..., C, M) bool."""
        if self._col_player is None:
            return masks.astype(np.float32) @ self._G.astype(np.float32) > 0
        keep = masks[..., self._col_player]
        if self._col_unowned is not None:
            keep[..., self._col_unowned] = False
        return keep

    def _hybrids(self, rows, feature_masks):
        """Hybrid rows of the explained ``rows`` (r,): the row's columns where
        ``feature_masks`` (r or 1, C, M) holds, each imputation row's elsewhere:
        (r, C, K, M)."""
        x = self.X[rows][:, None, None, :]                                  # (r, 1, 1, M)
        R = self.imputation[0 if self._shared else rows]                    # (K, M) | (r, K, M)
        R = R[None, None] if self._shared else R[:, None]                   # (r|1, 1, K, M)
        return np.where(feature_masks[:, :, None, :], x, R)

    def _outputs(self, hybrid):
        """The model on hybrid rows (r, C, K, M): the mean over the ``K`` imputation rows
        (r, C, n_model_outputs), or with ``per_imputation`` every one (r, C, K *
        n_model_outputs)."""
        r, C, K = hybrid.shape[:3]
        y = self.model_fn(hybrid.reshape(-1, self.n_features))
        if not getattr(self.model_fn, "checks_output", False):
            # a plain callable is checked here as the explainers' model functions check
            # their own outputs: a short output would otherwise be reshaped into the wrong
            # coalitions, and a NaN would become NaN Shapley values without a word
            y = check_output(y, r * C * K, "model_fn", "it must return numbers")
        y = y.reshape(r, C, K, -1)
        return y.reshape(r, C, -1) if self.per_imputation else y.mean(axis=2)

    def value(self, masks: ArrayLike, rows: slice | ArrayLike | None = None,
              count: bool = True) -> np.ndarray:
        """Evaluate coalitions: ``v(S) = mean_k f(x_S, R_k[~S])``.

        Parameters
        ----------
        masks : array-like of bool
            Shape (n_coalitions, n_players): coalitions shared by all selected rows; or
            shape (n_selected_rows, n_coalitions, n_players): one set per row. Players
            in a coalition keep the explained row's columns, the others take those of
            the imputation rows.
        rows : slice or None, default=None
            Explained rows to evaluate (default all).
        count : bool, default=True
            Add the evaluations to ``n_evaluations``.

        Returns
        -------
        ndarray of shape (n_selected_rows, n_coalitions, n_outputs), float64
            The model outputs averaged over the imputation rows, or (with
            ``per_imputation``) one block of model outputs per imputation row.
        """
        masks, row_ids = self._check_masks(masks, rows)
        n_sel, n_coal = row_ids.size, masks.shape[-2]
        if not (n_sel and n_coal):  # no row or no coalition
            self._count(n_sel, n_coal, count)
            return np.empty((n_sel, n_coal, self.n_outputs if self.n_rows else 0))
        per_row = masks.ndim == 3
        feat_masks = self._feature_masks(masks)                            # (..., C, M)
        out = None
        # the calls of value_each's packing (_call_bounds); with as many coalitions per
        # row, each call holds whole rows or a run of one row's coalitions, so its hybrid
        # rows are built by broadcasting the row against its coalitions
        for a, b in self._call_bounds(np.full(n_sel, n_coal, dtype=np.int64)):
            r0, c0 = divmod(a, n_coal)
            r1, c1 = (r0 + 1, b - r0 * n_coal) if c0 or b - a < n_coal else (b // n_coal, n_coal)
            fm = feat_masks[r0:r1, c0:c1] if per_row else np.broadcast_to(
                feat_masks[None, c0:c1], (r1 - r0, c1 - c0, self.n_features))
            y = self._outputs(self._hybrids(row_ids[r0:r1], fm))
            if out is None:
                out = np.empty((n_sel, n_coal, y.shape[-1]))
            out[r0:r1, c0:c1] = y
        self._count(n_sel, n_coal, count)
        return out
