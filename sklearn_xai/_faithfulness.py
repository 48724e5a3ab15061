"""The faithfulness correlation and its helpers, below every explainer.

Attribution explainers' ``score`` (:class:`sklearn_xai.base.AttributionMixin`, TreeSHAP's own
``score``) and KnockoffSAGE's ``score`` use these, so they live in a module that imports
nothing but numpy: scoring an explanation never loads :mod:`sklearn_xai.metrics` (nor the
recourse measures it re-exports). The public name is
:func:`sklearn_xai.metrics.faithfulness_correlation`; the other names are for the package's
own modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import ArrayLike

    from sklearn_xai._explanation import Attribution

__all__ = ["as_values", "check_groups", "check_reference", "faithfulness_correlation",
           "pearson_over_axis1", "random_subsets"]


def as_values(values):
    """The values of an Attribution (or an array) as a float64 array."""
    return np.asarray(getattr(values, "values", values), dtype=np.float64)


def check_groups(groups, n_features):
    """``groups`` as a list of int arrays of column indices in ``[0, n_features)``, or a
    TypeError / ValueError naming ``groups``."""
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__len__"):
        raise TypeError(f"groups must be a list of array-likes of int column indices, one "
                        f"per player, or None; got {type(groups).__name__}.")
    out = []
    for p, g in enumerate(groups):
        cols = np.asarray(g)
        if cols.ndim != 1:
            if cols.ndim == 0:
                raise TypeError(f"groups[{p}] must be an array-like of int column indices; "
                                f"got {g!r}.")
            raise ValueError(f"groups[{p}] must be 1-D (column indices); got shape "
                             f"{cols.shape}.")
        if cols.size and cols.dtype.kind == "f" and np.all(np.isfinite(cols)) and np.all(
                cols == np.round(cols)):
            cols = cols.astype(np.intp)
        elif cols.size and cols.dtype.kind not in "iu":
            raise TypeError(f"groups[{p}] must hold int column indices; got {g!r}.")
        cols = cols.astype(np.intp)
        if cols.size and (cols.min() < 0 or cols.max() >= n_features):
            raise ValueError(f"groups[{p}] holds column indices outside [0, {n_features}) "
                             f"(X has {n_features} columns); got {g!r}.")
        out.append(cols)
    return out


def check_rows(X, values, name, ndims):
    """``X`` (2-D, at least one row) and ``values`` (``ndim`` in ``ndims``, as many rows)
    as arrays; else a ValueError giving both shapes."""
    X = np.asarray(X)
    values = np.asarray(values, dtype=np.float64)
    if X.ndim != 2 or values.ndim not in ndims or values.shape[0] != X.shape[0]:
        shapes = " or ".join({2: "2-D (n_samples, n_players)",
                              3: "3-D (n_samples, n_players, n_outputs)"}[d] for d in ndims)
        raise ValueError(
            f"X must be 2-D (n_samples, n_features) and {name} {shapes} with the same "
            f"rows; got X of shape {X.shape} and {name} of shape {values.shape}.")
    if X.shape[0] == 0:
        raise ValueError(f"X must hold at least one row; got shape {X.shape}.")
    return X, values


def check_reference(reference, n_features):
    """``reference`` as one row of shape (1, n_features), or a ValueError naming it: one
    row of ``X``'s width, given as (n_features,) or (1, n_features). A reference per
    explained row (n_samples, n_features) is refused, not reduced to its first row."""
    ref = np.asarray(reference)
    if ref.ndim == 2 and ref.shape[0] != 1:
        raise ValueError(f"reference must be one row of shape (1, {n_features}) or "
                         f"({n_features},), the values every removed player takes; got shape "
                         f"{ref.shape} (a reference per explained row is not supported).")
    if ref.ndim > 2 or ref.size != n_features:
        raise ValueError(f"reference must be one row of shape (1, {n_features}) or "
                         f"({n_features},), one value per column of X; got shape "
                         f"{ref.shape}.")
    return ref.reshape(1, -1)


def faithfulness_correlation(model_fn: Callable[[np.ndarray], np.ndarray], X: np.ndarray,
                             attribution: Attribution | ArrayLike, reference: np.ndarray,
                             groups: Sequence[ArrayLike] | None = None, *, n_subsets: int = 64,
                             random_state: int = 0) -> float:
    """Signed faithfulness correlation (Bhatt, Weller and Moura, IJCAI 2020).

    For each row ``x`` and each of ``n_subsets`` random player subsets ``S`` (every player
    in ``S`` with probability 1/2, the same subsets for every row), the sum of the
    attributions of ``S`` is compared with the output drop ``f(x) - f(x with the players
    of S set to the reference)``. The score of a row and output is the Pearson correlation
    of the two over the subsets (0 when either is constant); the result is the mean over
    rows and over every explained output. Signs matter: attributions of the wrong sign
    score negative, random attributions near 0, and attributions that add up to the
    drops (Shapley values of an additive model) score 1.

    Parameters
    ----------
    model_fn : callable
        ``f(Z) -> ndarray of shape (m, n_outputs)`` on 2-D arrays of rows, e.g. an
        explainer's ``model_fn_``.
    X : ndarray of shape (n_samples, n_features)
        The explained rows.
    attribution : Attribution or ndarray of shape (n_samples, n_players[, n_outputs])
        The rows' attributions, one output per column of ``model_fn``'s output.
    reference : ndarray of shape (1, n_features) or (n_features,)
        The values a removed player takes: one row for every explained row.
    groups : list of array of int or None
        Columns of each player (indices in ``[0, n_features)``); ``None``: one player per
        column.
    n_subsets : int, default=64
        Random subsets per row (``n_samples * n_subsets`` model rows in all), at least 2.
    random_state : int, default=0
        Seed of the subsets. Fixed by default so that every explainer setting is scored on
        the same subsets, and a row's score never depends on the other rows.

    Returns
    -------
    float
        The mean correlation over rows and outputs, in [-1, 1].
    """
    X, values = check_rows(X, as_values(attribution), "attribution", (2, 3))
    if values.ndim == 2:
        values = values[:, :, None]
    n, P, O = values.shape
    if (isinstance(n_subsets, (bool, np.bool_)) or not isinstance(n_subsets, (int, np.integer))
            or n_subsets < 2):
        raise ValueError(f"n_subsets must be an int >= 2 (a correlation over the subsets "
                         f"needs two); got {n_subsets!r}.")
    if isinstance(random_state, (bool, np.bool_, float, str, bytes)) or (
            isinstance(random_state, (int, np.integer)) and random_state < 0):
        raise ValueError(f"random_state must be a non-negative int (the seed of the "
                         f"subsets); got {random_state!r}.")
    if groups is None:
        groups = [np.array([j]) for j in range(X.shape[1])]
    else:
        groups = check_groups(groups, X.shape[1])
    if len(groups) != P:
        raise ValueError(f"attribution has {P} players but groups lists {len(groups)}.")
    reference = check_reference(reference, X.shape[1]).reshape(1, 1, -1)
    masks = random_subsets(n_subsets, P, random_state)
    column_masks = np.zeros((masks.shape[0], X.shape[1]), dtype=bool)
    for p, cols in enumerate(groups):
        column_masks[:, cols] = masks[:, [p]]
    Z = np.where(column_masks[None], reference, X[:, None, :])
    m = n * (masks.shape[0] + 1)
    out = np.asarray(model_fn(np.concatenate([X, Z.reshape(n * masks.shape[0], -1)])),
                     dtype=np.float64)
    if out.ndim == 1:
        out = out[:, None]
    if out.shape != (m, O):
        raise ValueError(f"model_fn must return one row per input row and one column per "
                         f"output of the attribution, shape ({m}, {O}); got shape "
                         f"{out.shape}.")
    drops = out[:n, None, :] - out[n:].reshape(n, masks.shape[0], O)
    sums = np.einsum("sp,npo->nso", masks.astype(np.float64), values)
    return float(np.mean(pearson_over_axis1(sums, drops)))


def random_subsets(n_subsets, n_players, random_state=0):
    """Random player subsets of the faithfulness correlations, each player in with
    probability 1/2: boolean array of shape (n_subsets, n_players)."""
    return np.random.default_rng(random_state).random((int(n_subsets), n_players)) < 0.5


def pearson_over_axis1(a, b):
    """Pearson correlation along axis 1 of (n, S, O) arrays; 0 where either is constant.

    A spread within round-off of the entries' size counts as constant, so the result does
    not depend on the sign of round-off.
    """
    def centred(v):
        c = v - v.mean(axis=1, keepdims=True)
        norm = np.sqrt((c * c).sum(axis=1))
        tol = 1e-10 * np.sqrt(v.shape[1]) * np.abs(v).max(axis=1, initial=0.0)
        return c, norm, norm <= tol

    ca, na, flat_a = centred(a)
    cb, nb, flat_b = centred(b)
    flat = flat_a | flat_b
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (ca * cb).sum(axis=1) / (na * nb)
    return np.where(flat, 0.0, np.clip(r, -1.0, 1.0))
