"""Quality measures of explanations, and scorers for ``GridSearchCV``.

Attribution measures compare estimated values with a reference (absolute error, ranking
accuracy), check an axiom (efficiency gap) or ask the model (faithfulness and monotonicity
along the deletion order). Recourse measures (validity, sparsity, proximity, diversity, yNN,
redundancy) take a :class:`~sklearn_xai.Counterfactuals` result.
"""

import numpy as np

from .recourse._metrics import (
    diversity,
    found_rate,
    proximity,
    redundancy,
    sparsity,
    validity,
    ynn,
)

__all__ = [
    "absolute_error",
    "ranking_accuracy",
    "top_k_accuracy",
    "efficiency_gap",
    "deletion_curve",
    "faithfulness",
    "monotonicity",
    "faithfulness_scorer",
    # recourse measures (defined in sklearn_xai.recourse._metrics)
    "validity",
    "found_rate",
    "sparsity",
    "proximity",
    "diversity",
    "ynn",
    "redundancy",
]


def _as_values(values):
    return np.asarray(getattr(values, "values", values), dtype=np.float64)


def absolute_error(values, reference):
    """Sum over players of ``|values - reference|``, averaged over rows (and outputs).

    This is the SHEAR paper's AE.

    Parameters
    ----------
    values, reference : Attribution or ndarray of shape (n_samples, n_players[, n_outputs])

    Returns
    -------
    float
    """
    a, b = _as_values(values), _as_values(reference)
    if a.shape != b.shape:
        raise ValueError(f"Shapes differ: {a.shape} vs {b.shape}.")
    return float(np.abs(a - b).sum(axis=1).mean())


def ranking_accuracy(values, reference):
    """The SHEAR paper's weighted ranking accuracy of signed values.

    Both rows are sorted ascending by signed value; position ``k`` (0-based, of ``M``)
    counts ``w_k = 1 / (M - k)`` when the two orders hold the same player there, so the
    top-ranked position weighs 1. The score is ``sum_k w_k [match_k] / sum_k w_k``,
    averaged over rows.

    Parameters
    ----------
    values, reference : ndarray of shape (n_samples, n_players) (or Attribution)

    Returns
    -------
    float in [0, 1]
    """
    a, b = _as_values(values), _as_values(reference)
    if a.ndim == 3:
        a = a.transpose(0, 2, 1).reshape(-1, a.shape[1])
        b = b.transpose(0, 2, 1).reshape(-1, b.shape[1])
    M = a.shape[1]
    w = 1.0 / (M - np.arange(M))
    match = np.argsort(a, axis=1, kind="stable") == np.argsort(b, axis=1, kind="stable")
    return float((match * w).sum(axis=1).mean() / w.sum())


def top_k_accuracy(values, reference, k=3):
    """Mean overlap of the top-``k`` players by ``|value|`` (as a fraction of ``k``)."""
    a, b = np.abs(_as_values(values)), np.abs(_as_values(reference))
    if a.ndim == 3:
        a = a.transpose(0, 2, 1).reshape(-1, a.shape[1])
        b = b.transpose(0, 2, 1).reshape(-1, b.shape[1])
    k = min(int(k), a.shape[1])
    ta = np.argsort(-a, axis=1, kind="stable")[:, :k]
    tb = np.argsort(-b, axis=1, kind="stable")[:, :k]
    return float(np.mean([len(set(x) & set(y)) / k for x, y in zip(ta, tb)]))


def efficiency_gap(attribution, output):
    """Largest ``|base + sum(values) - output|`` (0 for an efficient method).

    Parameters
    ----------
    attribution : Attribution
    output : ndarray of shape (n_samples,) or (n_samples, n_outputs)
    """
    return attribution.additivity_gap(output)


def deletion_curve(model_fn, X, values, reference, groups=None):
    """Output after removing players one at a time in order of decreasing ``|value|``.

    Removing a player replaces its columns by the reference row's.

    Parameters
    ----------
    model_fn : callable ``f(Z) -> (m, n_outputs)``
    X : ndarray of shape (n_samples, n_features)
    values : ndarray of shape (n_samples, n_players) (one output)
    reference : ndarray of shape (1, n_features)
    groups : list of array of int or None

    Returns
    -------
    order : ndarray of int, shape (n_samples, n_players)
    curve : ndarray of shape (n_samples, n_players + 1)
        ``curve[:, 0] = f(x)``; ``curve[:, k]`` after removing the first ``k`` players.
    """
    X = np.asarray(X)
    values = np.asarray(values, dtype=np.float64)
    n, P = values.shape
    if groups is None:
        groups = [np.array([j]) for j in range(X.shape[1])]
    order = np.argsort(-np.abs(values), axis=1, kind="stable")
    reference = np.asarray(reference).reshape(1, -1)
    steps = np.empty((n, P + 1, X.shape[1]), dtype=X.dtype if X.dtype == object else np.float64)
    current = X.copy()
    steps[:, 0] = current
    for k in range(P):
        for r in range(n):
            cols = groups[order[r, k]]
            current[r, cols] = reference[0, cols]
        steps[:, k + 1] = current
    out = np.asarray(model_fn(steps.reshape(n * (P + 1), -1)), dtype=np.float64)
    return order, out[:, 0].reshape(n, P + 1)


def _first_output(attribution_values, output=0):
    values = _as_values(attribution_values)
    return values[:, :, output] if values.ndim == 3 else values


def faithfulness(model_fn, X, attribution, reference, groups=None, output=0):
    """Pearson correlation of ``|value|`` with the output change along the deletion order.

    For each row, players are removed (set to the reference) in order of decreasing
    ``|value|``; the step changes ``|Delta_k|`` are correlated with the sorted ``|value|``.
    Rows whose steps or values are constant count as 0. Averaged over rows.

    Parameters
    ----------
    model_fn : callable ``f(Z) -> (m, n_outputs)``
    X : ndarray of shape (n_samples, n_features)
    attribution : Attribution or ndarray of shape (n_samples, n_players[, n_outputs])
    reference : ndarray of shape (1, n_features)
    groups : list of array of int or None
    output : int
        Which explained output is scored.

    Returns
    -------
    float in [-1, 1]
    """
    values = _first_output(attribution, output)
    fn = _single_output(model_fn, output)
    order, curve = deletion_curve(fn, X, values, reference, groups)
    delta = np.abs(np.diff(curve, axis=1))
    sorted_abs = np.take_along_axis(np.abs(values), order, axis=1)
    scores = []
    for a, d in zip(sorted_abs, delta):
        if a.std() == 0 or d.std() == 0:
            scores.append(0.0)
        else:
            scores.append(float(np.corrcoef(a, d)[0, 1]))
    return float(np.mean(scores))


def monotonicity(model_fn, X, attribution, reference, groups=None, output=0):
    """Fraction of deletion steps with ``|Delta_k| >= |Delta_{k+1}|``, averaged over rows."""
    values = _first_output(attribution, output)
    fn = _single_output(model_fn, output)
    _, curve = deletion_curve(fn, X, values, reference, groups)
    delta = np.abs(np.diff(curve, axis=1))
    if delta.shape[1] < 2:
        return 1.0
    return float((delta[:, :-1] >= delta[:, 1:] - 1e-12).mean())


def _single_output(model_fn, output):
    def fn(Z):
        out = np.asarray(model_fn(Z), dtype=np.float64)
        return out[:, [output]] if out.ndim == 2 else out[:, None]

    return fn


def faithfulness_scorer(explainer, X, y=None):
    """``scoring=`` callable for ``GridSearchCV``: the explainer's deletion faithfulness."""
    return explainer.score(X, y)
