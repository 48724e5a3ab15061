"""Quality measures of explanations, and scorers for ``GridSearchCV``.

Attribution measures compare estimated values with a reference (absolute error, ranking
accuracy), check an axiom (efficiency gap) or ask the model: the faithfulness correlation of
Bhatt, Weller and Moura (IJCAI 2020) over random player subsets, which attribution
explainers' ``score`` returns, the signed deletion-order faithfulness and the
monotonicity.
Recourse measures (validity, sparsity, proximity, diversity, yNN, redundancy) take a
:class:`~sklearn_xai.Counterfactuals` result.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import numpy as np

from ._faithfulness import (
    as_values,
    check_groups,
    check_reference,
    check_rows,
    faithfulness_correlation,
    pearson_over_axis1,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    import pandas as pd
    from numpy.typing import ArrayLike

    from sklearn_xai._explanation import Attribution

#: the recourse measures, defined in ``sklearn_xai.recourse._metrics`` and loaded on first
#: use (module ``__getattr__``), so that importing this module (or scoring an attribution)
#: loads no recourse module
_RECOURSE = ("validity", "found_rate", "sparsity", "proximity", "diversity", "ynn",
             "redundancy")

__all__ = [
    "absolute_error",
    "ranking_accuracy",
    "top_k_accuracy",
    "efficiency_gap",
    "deletion_curve",
    "faithfulness",
    "faithfulness_correlation",
    "monotonicity",
    "faithfulness_scorer",
    # recourse measures (defined in sklearn_xai.recourse._metrics, loaded lazily)
    *_RECOURSE,
]


def __getattr__(name):
    if name in _RECOURSE:
        value = getattr(importlib.import_module("sklearn_xai.recourse._metrics"), name)
        globals()[name] = value  # later look-ups skip __getattr__
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_RECOURSE))


def absolute_error(values: Attribution | ArrayLike, reference: Attribution | ArrayLike) -> float:
    """Sum over players of ``|values - reference|``, averaged over rows (and outputs).

    This is the SHEAR paper's AE.

    Parameters
    ----------
    values, reference : Attribution or ndarray of shape (n_samples, n_players[, n_outputs])
        The estimated attributions and the reference ones (e.g. exact Shapley values),
        of the same shape.

    Returns
    -------
    float
        The mean over rows (and outputs) of the summed absolute differences; 0 when the
        two agree.
    """
    a, b = _same_shape(values, reference)
    return float(np.abs(a - b).sum(axis=1).mean())


def ranking_accuracy(values: Attribution | ArrayLike, reference: Attribution | ArrayLike) -> float:
    """The SHEAR paper's weighted ranking accuracy of signed values.

    Both rows are sorted ascending by signed value; position ``k`` (0-based, of ``M``)
    counts ``w_k = 1 / (M - k)`` when the two orders hold the same player there, so the
    top-ranked position weighs 1. The score is ``sum_k w_k [match_k] / sum_k w_k``,
    averaged over rows.

    Parameters
    ----------
    values, reference : Attribution or ndarray of shape (n_samples, n_players[, n_outputs])
        The estimated attributions and the reference ones, of the same shape. With
        several outputs every (row, output) pair is ranked separately.

    Returns
    -------
    float
        The mean weighted accuracy, in [0, 1]; 1 when every row's order matches.
    """
    a, b = _paired_rows(values, reference)
    M = a.shape[1]
    w = 1.0 / (M - np.arange(M))
    match = np.argsort(a, axis=1, kind="stable") == np.argsort(b, axis=1, kind="stable")
    return float((match * w).sum(axis=1).mean() / w.sum())


def top_k_accuracy(values: Attribution | ArrayLike, reference: Attribution | ArrayLike,
                   k: int = 3) -> float:
    """Mean overlap of the top-``k`` players by ``|value|`` (as a fraction of ``k``).

    Parameters
    ----------
    values, reference : Attribution or ndarray of shape (n_samples, n_players[, n_outputs])
        The estimated attributions and the reference ones, of the same shape. With
        several outputs every (row, output) pair is compared separately.
    k : int, default=3
        Number of top players compared, a positive int; at most ``n_players`` are used.

    Returns
    -------
    float
        The mean fraction of the reference's top ``k`` players that are also among the
        estimate's, in [0, 1].
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}.")
    a, b = _paired_rows(values, reference)
    a, b = np.abs(a), np.abs(b)
    k = min(int(k), a.shape[1])
    ta = np.argsort(-a, axis=1, kind="stable")[:, :k]
    tb = np.argsort(-b, axis=1, kind="stable")[:, :k]
    return float(np.mean([len(set(x) & set(y)) / k for x, y in zip(ta, tb)]))


def _same_shape(values, reference):
    """``values`` and ``reference`` as float arrays of one 2-D (n_samples, n_players) or
    3-D (n_samples, n_players, n_outputs) shape with at least one entry; else a
    ValueError giving the shapes."""
    a, b = as_values(values), as_values(reference)
    if a.shape != b.shape:
        raise ValueError(
            f"values and reference must have the same shape; got values of shape "
            f"{a.shape} and reference of shape {b.shape}.")
    if a.ndim not in (2, 3):
        raise ValueError(
            "values and reference must be 2-D (n_samples, n_players) or 3-D (n_samples, "
            f"n_players, n_outputs); got shape {a.shape}.")
    if a.size == 0:
        raise ValueError(
            f"values and reference must have at least one row, player and output; got "
            f"shape {a.shape}.")
    return a, b


def _paired_rows(values, reference):
    """``values`` and ``reference`` as float arrays of shape (n_rows, n_players), with
    one row per (row, output) pair; a ValueError unless both have the same 2-D or 3-D
    shape with at least one row and one player, and no NaN."""
    a, b = _same_shape(values, reference)
    for name, v in (("values", a), ("reference", b)):
        if np.isnan(v).any():
            raise ValueError(f"{name} holds NaN ({int(np.isnan(v).sum())} of {v.size} "
                             f"entries); a ranking needs numbers.")
    if a.ndim == 3:
        a = a.transpose(0, 2, 1).reshape(-1, a.shape[1])
        b = b.transpose(0, 2, 1).reshape(-1, b.shape[1])
    return a, b


def efficiency_gap(attribution: Attribution, output: ArrayLike) -> float:
    """Largest ``|base + sum(values) - output|`` (0 for an efficient method).

    Parameters
    ----------
    attribution : Attribution
        The explained rows' attributions and base values.
    output : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        The model's output for the explained rows (in the explained space).

    Returns
    -------
    float
        The largest absolute gap over rows and outputs, 0.0 when no row is explained.

    Raises
    ------
    ValueError
        If ``output`` does not have the shape of ``attribution.predicted()``
        (``(n_samples,)`` or ``(n_samples, 1)`` for one output).
    TypeError
        If ``attribution`` is not an Attribution (an array has no base values).
    """
    if not callable(getattr(attribution, "additivity_gap", None)):
        raise TypeError(f"attribution must be an Attribution (values with their base "
                        f"values, as explain returns); got {type(attribution).__name__}.")
    return attribution.additivity_gap(output)  # it checks the shape


def deletion_curve(model_fn: Callable[[np.ndarray], np.ndarray], X: np.ndarray, values: np.ndarray,
                   reference: np.ndarray,
                   groups: Sequence[ArrayLike] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Output after removing players one at a time in order of decreasing ``|value|``.

    Removing a player replaces its columns by the reference row's. The model is called on
    float64 rows (object rows stay object), so the reference is never cast to the dtype of
    ``X``: an integer ``X`` keeps a fractional reference such as the column means.

    Parameters
    ----------
    model_fn : callable
        ``f(Z) -> ndarray of shape (m, n_outputs)`` (or ``(m,)`` for one output) on 2-D
        arrays of rows; the curve follows its first output.
    X : ndarray of shape (n_samples, n_features)
        The explained rows.
    values : ndarray of shape (n_samples, n_players)
        Attributions of one output, which set each row's deletion order.
    reference : ndarray of shape (1, n_features) or (n_features,)
        The values a removed player's columns take: one row for every explained row (a
        reference per row is refused).
    groups : list of array of int or None, default=None
        Columns of each player (indices in ``[0, n_features)``); ``None``: one player
        per column.

    Returns
    -------
    order : ndarray of int, shape (n_samples, n_players)
        Each row's players by decreasing ``|value|``.
    curve : ndarray of shape (n_samples, n_players + 1)
        ``curve[:, 0] = f(x)``; ``curve[:, k]`` after removing the first ``k`` players.
    """
    X, values = check_rows(X, values, "values", (2,))
    n, P = values.shape
    if groups is None:
        groups = [np.array([j]) for j in range(X.shape[1])]
    else:
        groups = check_groups(groups, X.shape[1])
    if len(groups) != P:
        raise ValueError(f"values has {P} players but groups lists {len(groups)}.")
    order = np.argsort(-np.abs(values), axis=1, kind="stable")
    reference = check_reference(reference, X.shape[1])
    # float64 (object columns stay object): an integer X must not truncate a fractional
    # reference (e.g. column means) when removed columns are set to it
    dtype = object if X.dtype == object else np.float64
    steps = np.empty((n, P + 1, X.shape[1]), dtype=dtype)
    current = X.astype(dtype)  # a copy
    steps[:, 0] = current
    for k in range(P):
        for r in range(n):
            cols = groups[order[r, k]]
            current[r, cols] = reference[0, cols]
        steps[:, k + 1] = current
    m = n * (P + 1)
    out = np.asarray(model_fn(steps.reshape(m, -1)), dtype=np.float64)
    if out.ndim not in (1, 2) or out.shape[0] != m or out.size == 0:
        raise ValueError(f"model_fn must return one row per input row, shape ({m},) or "
                         f"({m}, n_outputs); got shape {out.shape}.")
    if out.ndim == 1:  # one output
        out = out[:, None]
    return order, out[:, 0].reshape(n, P + 1)


def _check_output(output, n_outputs=None, what=""):
    """A ValueError unless ``output`` is a non-negative int, below ``n_outputs`` when
    given (``what`` says where that number comes from)."""
    if (isinstance(output, (bool, np.bool_)) or not isinstance(output, (int, np.integer))
            or output < 0):
        raise ValueError(f"output must be a non-negative int (the index of the scored "
                         f"output); got {output!r}.")
    if n_outputs is not None and output >= n_outputs:
        raise ValueError(f"output must be an int in [0, {n_outputs}): {what}; got "
                         f"{output!r}.")


def _first_output(attribution_values, output=0):
    values = as_values(attribution_values)
    if values.ndim == 3:
        _check_output(output, values.shape[2],
                      f"the attribution has {values.shape[2]} output(s)")
        return values[:, :, output]
    return values


def faithfulness(model_fn: Callable[[np.ndarray], np.ndarray], X: np.ndarray,
                 attribution: Attribution | ArrayLike, reference: np.ndarray,
                 groups: Sequence[ArrayLike] | None = None, output: int = 0) -> float:
    """Signed correlation of the values with the output drops along the deletion order.

    For each row, players are removed (set to the reference) one at a time in order of
    decreasing ``|value|``; the drop of the ``k``-th removal, ``Delta_k = f(before) -
    f(after)``, is correlated with the signed value of the player removed. Signs matter,
    as in :func:`faithfulness_correlation`: a player whose removal lowers the output should
    have a positive value, so values that match the drops score near 1 and the same values
    negated score exactly the negative. Rows whose drops or values are constant (up to
    round-off) count as 0. Averaged over rows.

    Parameters
    ----------
    model_fn : callable
        ``f(Z) -> ndarray of shape (m, n_outputs)`` on 2-D arrays of rows, e.g. an
        explainer's ``model_fn_``.
    X : ndarray of shape (n_samples, n_features)
        The explained rows.
    attribution : Attribution or ndarray of shape (n_samples, n_players[, n_outputs])
        The rows' attributions.
    reference : ndarray of shape (1, n_features) or (n_features,)
        The values a removed player's columns take: one row for every explained row (a
        reference per row is refused).
    groups : list of array of int or None, default=None
        Columns of each player (indices in ``[0, n_features)``); ``None``: one player
        per column.
    output : int, default=0
        Which explained output is scored (a column of ``model_fn``'s output and of the
        attributions), in ``[0, n_outputs)``; ``0`` when ``model_fn`` returns one output
        (shape ``(m,)`` or ``(m, 1)``).

    Returns
    -------
    float
        The mean correlation, in [-1, 1]; ``faithfulness(..., -phi, ...)`` is
        ``-faithfulness(..., phi, ...)``.
    """
    values, order, curve = _deletion_run(model_fn, X, attribution, reference, groups,
                                         output)
    drops = -np.diff(curve, axis=1)  # f(before) - f(after) of each removal
    sorted_values = np.take_along_axis(values, order, axis=1)
    return float(np.mean(pearson_over_axis1(sorted_values[:, :, None], drops[:, :, None])))


def monotonicity(model_fn: Callable[[np.ndarray], np.ndarray], X: np.ndarray,
                 attribution: Attribution | ArrayLike, reference: np.ndarray,
                 groups: Sequence[ArrayLike] | None = None, output: int = 0) -> float:
    """Fraction of deletion steps with ``|Delta_k| >= |Delta_{k+1}|``, averaged over rows.

    Players are removed (set to the reference) in order of decreasing ``|value|``, as in
    :func:`deletion_curve`; ``Delta_k`` is the output change of the ``k``-th removal.

    Parameters
    ----------
    model_fn : callable
        ``f(Z) -> ndarray of shape (m, n_outputs)`` on 2-D arrays of rows, e.g. an
        explainer's ``model_fn_``.
    X : ndarray of shape (n_samples, n_features)
        The explained rows.
    attribution : Attribution or ndarray of shape (n_samples, n_players[, n_outputs])
        The rows' attributions.
    reference : ndarray of shape (1, n_features) or (n_features,)
        The values a removed player's columns take: one row for every explained row (a
        reference per row is refused).
    groups : list of array of int or None, default=None
        Columns of each player (indices in ``[0, n_features)``); ``None``: one player
        per column.
    output : int, default=0
        Which explained output is scored, as in :func:`faithfulness`.

    Returns
    -------
    float
        The fraction in [0, 1]; 1.0 with fewer than two players.
    """
    _, _, curve = _deletion_run(model_fn, X, attribution, reference, groups, output)
    delta = np.abs(np.diff(curve, axis=1))
    if delta.shape[1] < 2:
        return 1.0
    return float((delta[:, :-1] >= delta[:, 1:] - 1e-12).mean())


def _deletion_run(model_fn, X, attribution, reference, groups, output):
    """``(values, order, curve)``: the scored output's values and its deletion curve."""
    _check_output(output)
    values = _first_output(attribution, output)
    fn = _single_output(model_fn, output)
    order, curve = deletion_curve(fn, X, values, reference, groups)
    return values, order, curve


def _single_output(model_fn, output):
    def fn(Z):
        out = np.asarray(model_fn(Z), dtype=np.float64)
        if out.ndim == 1:  # one output: output 0 only
            _check_output(output, 1, "model_fn returns one output (a 1-D array)")
            return out[:, None]
        if out.ndim == 2:
            _check_output(output, out.shape[1],
                          f"model_fn returns {out.shape[1]} output column(s)")
            return out[:, [output]]
        return out  # deletion_curve refuses its shape

    return fn


def faithfulness_scorer(explainer: Any, X: ArrayLike | pd.DataFrame,
                        y: ArrayLike | None = None) -> float:
    """``scoring=`` callable for ``GridSearchCV``: the explainer's own ``score``.

    Parameters
    ----------
    explainer : fitted explainer
        An explainer with a ``score(X, y)`` method.
    X : array-like or DataFrame of shape (n_samples, n_features)
        The rows scored.
    y : array-like of shape (n_samples,) or None, default=None
        Passed on to ``score``: the targets of :class:`~sklearn_xai.KnockoffSAGE`,
        ignored by attribution explainers.

    Returns
    -------
    float
        ``explainer.score(X, y)``.
    """
    return explainer.score(X, y)
