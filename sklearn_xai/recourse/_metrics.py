"""Quality measures of counterfactual explanations.

Every function takes a :class:`~sklearn_xai.Counterfactuals` result (any recourse method,
or another library's output put into one). Definitions follow Mothilal et al. (2020, DiCE),
Yang et al. (2022, MACE) and the CARLA benchmark (Pawelczyk et al., 2021); each docstring
states the exact formula.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ._encoding import TabularEncoder, robust_scales

if TYPE_CHECKING:
    from typing import Any, Literal

    from numpy.typing import ArrayLike

    from sklearn_xai._explanation import Counterfactuals

__all__ = [
    "validity",
    "found_rate",
    "sparsity",
    "proximity",
    "diversity",
    "ynn",
    "redundancy",
]


def _frames(result):
    cfs = result.counterfactuals
    q = np.asarray(cfs["query"], dtype=np.int64)
    feats = cfs.drop(columns="query")
    queries = result.queries
    return queries, feats.reset_index(drop=True), q


def _desired(result, model=None):
    """Desired class of every counterfactual row."""
    costs = getattr(result, "costs", None)
    if costs is not None and "desired_class" in getattr(costs, "columns", ()):
        return np.asarray(costs["desired_class"])
    _, _, q = _frames(result)
    return np.asarray([result.desired[i] for i in q], dtype=object)


def _encoder(result, X_ref=None, categorical_features="auto"):
    """An encoder that knows every category of the queries, counterfactuals and ``X_ref``;
    continuous scales are the MAD of ``X_ref`` (of queries + counterfactuals without it)."""
    queries, feats, _ = _frames(result)
    if isinstance(queries, pd.DataFrame):
        cols = list(queries.columns)
        parts = [queries, feats[cols]] + ([X_ref[cols]] if X_ref is not None else [])
        everything = pd.concat(parts, ignore_index=True)
    else:
        parts = [np.asarray(queries), np.asarray(feats)]
        everything = np.vstack(parts + ([np.asarray(X_ref)] if X_ref is not None else []))
    enc = TabularEncoder(categorical_features=categorical_features).fit(everything)
    if X_ref is not None and enc.cont_.size:
        Zr = _internal(enc, X_ref[cols] if isinstance(X_ref, pd.DataFrame) else X_ref)
        enc.scales_[enc.cont_] = robust_scales(Zr[:, enc.cont_])
    return enc


def _internal(enc, frame):
    if not enc.is_pandas_:
        return enc.to_internal(np.asarray(frame, dtype=np.float64))
    return enc.to_internal(frame)


def _predict_labels(model, X):
    return np.asarray(model.predict(X))


def validity(result: Counterfactuals, model: Any = None) -> float:
    """Fraction of returned counterfactuals that reach their desired class.

    ``model=None`` uses the result's own ``valid`` flags; with a model, every counterfactual
    is re-predicted (``model.predict(cf) == desired``). 1.0 when no counterfactual was
    returned is avoided: the result is NaN then (see :func:`found_rate`).

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    model : classifier or None, default=None
        A fitted model whose ``predict`` re-checks the counterfactuals; ``None``: the
        result's ``valid`` flags.

    Returns
    -------
    float
        The fraction of valid counterfactuals, in [0, 1]; NaN when there is none.
    """
    _, feats, _ = _frames(result)
    if len(feats) == 0:
        return float("nan")
    if model is None:
        return float(np.mean(np.asarray(result.valid, dtype=bool)))
    pred = _predict_labels(model, feats)
    return float(np.mean(pred == _desired(result)))


def found_rate(result: Counterfactuals) -> float:
    """Fraction of queries with at least one counterfactual (CARLA's success rate).

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).

    Returns
    -------
    float
        The fraction of queries whose ``found`` flag is set, in [0, 1].
    """
    return float(np.mean(np.asarray(result.found, dtype=bool)))


def _changed(enc, result):
    queries, feats, q = _frames(result)
    Q = _internal(enc, queries)
    C = _internal(enc, feats)
    diff = np.abs(C - Q[q])
    cont = np.zeros(enc.n_features_in_, dtype=bool)
    cont[enc.cont_] = True
    changed = np.where(cont[None, :], diff > 1e-9 * (1 + np.abs(Q[q])), diff > 0)
    return changed, diff, q


def sparsity(result: Counterfactuals,
             categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Mean number of changed features (L0) per counterfactual.

    A feature counts once whatever its encoding (a category change is 1, unlike CARLA's
    one-hot L0 which counts 2). Continuous values equal up to a relative 1e-9 count as
    unchanged. NaN when no counterfactual was returned.

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    categorical_features : "auto", array-like of str or int, or bool mask, default="auto"
        Categorical features, as names (DataFrame) or positions, or a boolean mask.
        ``"auto"``: a DataFrame's columns of categorical, object, string or bool dtype;
        none for an array.

    Returns
    -------
    float
        The mean number of changed features; NaN when there is no counterfactual.
    """
    enc = _encoder(result, None, categorical_features)
    changed, _, _ = _changed(enc, result)
    return float(changed.sum(axis=1).mean()) if len(changed) else float("nan")


def proximity(result: Counterfactuals, X_ref: ArrayLike | pd.DataFrame | None = None,
              categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Mean distance of a counterfactual to its query (lower is better).

    ``#changed categorical features + sum over continuous features |cf - x| / MAD``, with
    the MAD of ``X_ref`` (IQR, then range, where it is 0) -- the paper's proximity with a
    scale that is never 0; MACE's tables report its negative.

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    X_ref : DataFrame or array of shape (n_ref, n_features), default=None
        Rows that define the MAD scales (the training data); ``None``: the queries.
    categorical_features : "auto", array-like of str or int, or bool mask, default="auto"
        Categorical features, as names (DataFrame) or positions, or a boolean mask.
        ``"auto"``: a DataFrame's columns of categorical, object, string or bool dtype;
        none for an array.

    Returns
    -------
    float
        The mean distance; NaN when there is no counterfactual.
    """
    enc = _encoder(result, X_ref, categorical_features)
    changed, diff, _ = _changed(enc, result)
    if not len(changed):
        return float("nan")
    cost = changed[:, enc.cat_].sum(axis=1).astype(float)
    if enc.cont_.size:
        cost += (diff[:, enc.cont_] / enc.scales_[enc.cont_]).sum(axis=1)
    return float(cost.mean())


def diversity(result: Counterfactuals,
              categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Mean fraction of features that differ between two counterfactuals of one query.

    Averaged over all pairs of a query's counterfactuals, then over queries with at least
    two counterfactuals (DiCE's count-diversity, the MACE paper's diversity). NaN when no
    query has two.

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    categorical_features : "auto", array-like of str or int, or bool mask, default="auto"
        Categorical features, as names (DataFrame) or positions, or a boolean mask.
        ``"auto"``: a DataFrame's columns of categorical, object, string or bool dtype;
        none for an array.

    Returns
    -------
    float
        The mean fraction, in [0, 1]; NaN when no query has two counterfactuals.
    """
    enc = _encoder(result, None, categorical_features)
    _, feats, q = _frames(result)
    if not len(feats):
        return float("nan")
    C = _internal(enc, feats)
    per_query = []
    for i in np.unique(q):
        R = C[q == i]
        if len(R) < 2:
            continue
        iu = np.triu_indices(len(R), 1)
        frac = (R[:, None, :] != R[None, :, :]).mean(axis=2)[iu]
        per_query.append(frac.mean())
    return float(np.mean(per_query)) if per_query else float("nan")


def ynn(result: Counterfactuals, model: Any, X_ref: ArrayLike | pd.DataFrame, n_neighbors: int = 5,
        categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Share of a counterfactual's nearest reference rows that the model gives its class.

    CARLA's yNN generalised to any number of classes:
    ``1 - mean over counterfactuals and their n_neighbors nearest rows of X_ref of
    [model(neighbour) != desired]``. Distances: one-hot categoricals (a change weighs 1)
    and MAD-scaled continuous features. Higher means the counterfactual lies in a region
    the model consistently assigns the desired class.

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    model : classifier
        A fitted model whose ``predict`` labels the reference rows.
    X_ref : DataFrame or array of shape (n_ref, n_features)
        The reference rows searched for neighbours (e.g. the training data); they also
        define the MAD scales.
    n_neighbors : int, default=5
        Neighbours per counterfactual.
    categorical_features : "auto", array-like of str or int, or bool mask, default="auto"
        Categorical features, as names (DataFrame) or positions, or a boolean mask.
        ``"auto"``: a DataFrame's columns of categorical, object, string or bool dtype;
        none for an array.

    Returns
    -------
    float
        The share in [0, 1]; NaN when there is no counterfactual.
    """
    from ..neighbors import NeighborIndex

    enc = _encoder(result, X_ref, categorical_features)
    _, feats, _ = _frames(result)
    if not len(feats):
        return float("nan")
    Xr = X_ref[list(result.queries.columns)] if isinstance(X_ref, pd.DataFrame) else X_ref

    Zr = _internal(enc, Xr)
    index = NeighborIndex("exact").fit(enc.embed(Zr, continuous="scaled"))
    _, nb = index.kneighbors(enc.embed(_internal(enc, feats), continuous="scaled"),
                             n_neighbors)
    labels = _predict_labels(model, Xr)
    desired = _desired(result)
    return float(1.0 - np.mean(labels[nb] != desired[:, None]))


def redundancy(result: Counterfactuals, model: Any,
               categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Mean number of redundant changes per counterfactual (CARLA; lower is better).

    A change is redundant when reverting that one feature to the query's value keeps the
    desired class (``model.predict``). All reverts are predicted in one call.

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    model : classifier
        A fitted model whose ``predict`` labels the reverted rows.
    categorical_features : "auto", array-like of str or int, or bool mask, default="auto"
        Categorical features, as names (DataFrame) or positions, or a boolean mask.
        ``"auto"``: a DataFrame's columns of categorical, object, string or bool dtype;
        none for an array.

    Returns
    -------
    float
        The mean number of redundant changes; NaN when there is no counterfactual.
    """
    enc = _encoder(result, None, categorical_features)
    queries, feats, q = _frames(result)
    if not len(feats):
        return float("nan")
    changed, _, _ = _changed(enc, result)
    Q = _internal(enc, queries)
    C = _internal(enc, feats)
    rows, owner = [], []
    for k in range(len(C)):
        for j in np.flatnonzero(changed[k]):
            r = C[k].copy()
            r[j] = Q[q[k], j]
            rows.append(r)
            owner.append(k)
    if not rows:
        return 0.0
    X = enc.to_user(np.vstack(rows))
    pred = _predict_labels(model, X)
    desired = _desired(result)
    red = np.bincount(np.asarray(owner), weights=(pred == desired[owner]), minlength=len(C))
    return float(red.mean())
