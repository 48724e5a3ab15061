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

from ._encoding import MissingAwareEncoder, robust_scales

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


class _Range(tuple):
    """A regressor's desired outcome, ``(low, high)``: a prediction in it counts."""


def _is_regressor(model):
    from sklearn.base import is_regressor

    from .._utils import unwrap_frozen

    if model is None:
        return False
    try:
        return is_regressor(unwrap_frozen(model))
    except (AttributeError, TypeError):  # a plain callable or object: no tags
        return False


def _desired(result, model=None):
    """Desired outcome of every counterfactual row, a 1-D object array.

    An entry is a class label, or a tuple of labels where a query has several desired
    classes and the result does not say which one a row reaches (P2CE with multi-class
    ``"opposite"``); for a regressor ``model``, the query's ``desired_range`` (a
    :class:`_Range`, from ``result.desired``)."""
    if _is_regressor(model):
        _, _, q = _frames(result)
        out = np.empty(len(q), dtype=object)
        for k, i in enumerate(q):
            low, high = result.desired[i]
            out[k] = _Range((float(low), float(high)))
        return out
    costs = getattr(result, "costs", None)
    if costs is not None and "desired_class" in getattr(costs, "columns", ()):
        return np.asarray(costs["desired_class"])
    _, _, q = _frames(result)
    out = np.empty(len(q), dtype=object)  # element-wise: a tuple must stay one entry
    for k, i in enumerate(q):
        out[k] = result.desired[i]
    return out


def _hits(pred, desired):
    """Whether ``pred[k]`` (a label, or a row of labels) is a desired class of row ``k``.

    ``desired[k]`` is a label, a tuple of labels, any of which counts, or a
    :class:`_Range` ``(low, high)`` that holds the prediction."""
    pred = np.asarray(pred)
    if any(isinstance(d, _Range) for d in desired):
        low = np.array([d[0] for d in desired], dtype=np.float64)
        high = np.array([d[1] for d in desired], dtype=np.float64)
        if pred.ndim > 1:
            low, high = low[:, None], high[:, None]
        values = pred.astype(np.float64)
        return (values >= low) & (values <= high)
    several = [isinstance(d, (tuple, list, set, frozenset)) for d in desired]
    if not any(several):
        d = np.asarray(desired)
        return np.asarray(pred == (d if pred.ndim == 1 else d[:, None]), dtype=bool)
    out = np.zeros(pred.shape, dtype=bool)
    for k, (d, multi) in enumerate(zip(desired, several)):
        for c in (d if multi else (d,)):
            out[k] |= np.asarray(pred[k] == c, dtype=bool)
    return out


def _as_reference(queries, X_ref):
    """``X_ref`` in the queries' columns: a DataFrame by name, an array by position."""
    if X_ref is None or not isinstance(queries, pd.DataFrame):
        return X_ref
    cols = list(queries.columns)
    if isinstance(X_ref, pd.DataFrame):
        absent = [c for c in cols if c not in X_ref.columns]
        if absent:
            raise ValueError(f"X_ref lacks the queries' columns {absent}.")
        return X_ref[cols]
    arr = np.asarray(X_ref)
    if arr.ndim != 2 or arr.shape[1] != len(cols):
        raise ValueError(
            f"X_ref must have shape (n_ref, {len(cols)}) (the queries' {len(cols)} features, "
            f"by position), got shape {arr.shape}.")
    frame = pd.DataFrame(arr, columns=cols)
    for c in cols:  # an object array (mixed columns) keeps numbers numeric
        dt = queries[c].dtype
        if (pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt)
                and not isinstance(dt, pd.CategoricalDtype)):
            frame[c] = pd.to_numeric(frame[c])
    return frame


def _observed_scales(enc, Z):
    """:func:`robust_scales` of each continuous column over its observed (non-NaN) values;
    1 for a column with none. Equal to ``robust_scales`` when nothing is missing."""
    scales = np.ones(enc.cont_.size)
    for k, j in enumerate(enc.cont_):
        col = Z[:, j]
        col = col[~np.isnan(col)]
        if col.size:
            scales[k] = robust_scales(col[:, None])[0]
    return scales


def _fill_all_missing(X):
    """``X`` with a placeholder in each column that has no observed value (e.g. a feature
    missing in every query that every counterfactual keeps missing), which the encoder
    cannot learn from; the metrics only ever see such a column as missing."""
    miss = MissingAwareEncoder._missing(X)
    empty = np.flatnonzero(miss.all(axis=0)) if len(miss) else []
    if not len(empty):
        return X
    X = X.copy()
    for j in empty:
        if isinstance(X, pd.DataFrame):
            col = X.iloc[:, j]
            numeric = (pd.api.types.is_numeric_dtype(col.dtype)
                       and not isinstance(col.dtype, pd.CategoricalDtype))
            X.isetitem(j, pd.Series(0.0 if numeric else "missing", index=X.index,
                                    dtype=np.float64 if numeric else object))
        else:
            X[:, j] = 0.0
    return X


def _encoder(result, X_ref=None, categorical_features="auto", return_reference=False):
    """An encoder that knows every category of the queries, counterfactuals and ``X_ref``;
    continuous scales are the MAD of ``X_ref`` (of queries + counterfactuals without it),
    over the observed values. Missing values are kept (NaN; code -1 for a category).
    ``return_reference``: also return ``X_ref`` in the queries' columns and its internal
    rows."""
    queries, feats, _ = _frames(result)
    X_ref = _as_reference(queries, X_ref)
    if isinstance(queries, pd.DataFrame):
        cols = list(queries.columns)
        parts = [queries, feats[cols]] + ([X_ref] if X_ref is not None else [])
        everything = pd.concat(parts, ignore_index=True)
    else:
        parts = [np.asarray(queries), np.asarray(feats)]
        everything = np.vstack(parts + ([np.asarray(X_ref)] if X_ref is not None else []))
    enc = MissingAwareEncoder(categorical_features=categorical_features,
                              allow_missing=True).fit(_fill_all_missing(everything))
    Zr = _internal(enc, X_ref) if X_ref is not None else None
    if enc.cont_.size and (X_ref is not None or enc.missing_fit_.any()):
        enc.scales_[enc.cont_] = _observed_scales(
            enc, Zr if Zr is not None else _internal(enc, everything))
    return (enc, X_ref, Zr) if return_reference else enc


def _internal(enc, frame):
    if not enc.is_pandas_:
        return enc.to_internal(np.asarray(frame, dtype=np.float64))
    return enc.to_internal(frame)


def _predict_labels(model, X):
    return np.asarray(model.predict(X))


def validity(result: Counterfactuals, model: Any = None) -> float:
    """Fraction of returned counterfactuals that reach their desired class.

    ``model=None`` uses the result's own ``valid`` flags; with a model, every counterfactual
    is re-predicted (``model.predict(cf) == desired``). Where a query has several desired
    classes and the result does not say which one a counterfactual reaches (P2CE with
    multi-class ``"opposite"``: ``desired`` holds a tuple of classes), a counterfactual is
    valid when the model predicts any of them. With a regressor (a ``desired_range``
    result), valid means a prediction within the query's ``(low, high)``. 1.0 when no
    counterfactual was returned is avoided: the result is NaN then (see
    :func:`found_rate`).

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    model : classifier, regressor or None, default=None
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
    return float(np.mean(_hits(pred, _desired(result, model))))


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
    """``changed`` (n_cf, d) bool, ``diff`` (|cf - x|, 0 where either is missing), ``q``,
    ``moved`` (missing in exactly one of cf and x: a change, like the explainers')."""
    queries, feats, q = _frames(result)
    Q = _internal(enc, queries)[q]
    C = _internal(enc, feats)
    mq, mc = enc._missing_internal(Q), enc._missing_internal(C)
    either = mq | mc
    Q, C = np.where(either, 0.0, Q), np.where(either, 0.0, C)  # no NaN in the arithmetic
    diff = np.abs(C - Q)
    cont = np.zeros(enc.n_features_in_, dtype=bool)
    cont[enc.cont_] = True
    changed = np.where(cont[None, :], diff > 1e-9 * (1 + np.abs(Q)), diff > 0)
    moved = mq ^ mc
    return changed | moved, diff, q, moved


def sparsity(result: Counterfactuals,
             categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Mean number of changed features (L0) per counterfactual.

    A feature counts once whatever its encoding (a category change is 1, unlike CARLA's
    one-hot L0 which counts 2). Continuous values equal up to a relative 1e-9 count as
    unchanged. A missing value (NaN, ``None``, ``pd.NA``) is a value of its own, as in the
    recourse explainers: missing in both the query and the counterfactual is unchanged,
    missing in exactly one of them is one change. NaN when no counterfactual was returned.

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
    changed = _changed(enc, result)[0]
    return float(changed.sum(axis=1).mean()) if len(changed) else float("nan")


def proximity(result: Counterfactuals, X_ref: ArrayLike | pd.DataFrame | None = None,
              categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Mean distance of a counterfactual to its query (lower is better).

    ``#changed categorical features + sum over continuous features |cf - x| / MAD``, with
    the MAD of ``X_ref`` (IQR, then range, where it is 0) -- the paper's proximity with a
    scale that is never 0; MACE's tables report its negative. A missing value adds 1 when
    it is missing in exactly one of the query and the counterfactual (the overlap
    distance HEOM uses for missing values, like a changed category, and the explainers'
    own cost) and 0 when missing in both; the MAD is taken over the observed values.

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    X_ref : DataFrame or array of shape (n_ref, n_features), default=None
        Rows that define the MAD scales (the training data); ``None``: the queries and
        the counterfactuals. A DataFrame's columns are matched by name, an array's by
        position (it must have one column per feature).
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
    changed, diff, _, moved = _changed(enc, result)
    if not len(changed):
        return float("nan")
    cost = changed[:, enc.cat_].sum(axis=1).astype(float)
    if enc.cont_.size:
        cost += (diff[:, enc.cont_] / enc.scales_[enc.cont_]).sum(axis=1)
        cost += moved[:, enc.cont_].sum(axis=1)
    return float(cost.mean())


def diversity(result: Counterfactuals,
              categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Mean fraction of features that differ between two counterfactuals of one query.

    Averaged over all pairs of a query's counterfactuals, then over queries with at least
    two counterfactuals (DiCE's count-diversity, the MACE paper's diversity). Two missing
    values are equal, a missing and an observed value differ. NaN when no query has two.

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
        a, b = R[:, None, :], R[None, :, :]
        differ = (a != b) & ~(np.isnan(a) & np.isnan(b))  # missing equals missing
        frac = differ.mean(axis=2)[iu]
        per_query.append(frac.mean())
    return float(np.mean(per_query)) if per_query else float("nan")


def ynn(result: Counterfactuals, model: Any, X_ref: ArrayLike | pd.DataFrame, n_neighbors: int = 5,
        categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Share of a counterfactual's nearest reference rows that the model gives its class.

    CARLA's yNN generalised to any number of classes:
    ``1 - mean over counterfactuals and their n_neighbors nearest rows of X_ref of
    [model(neighbour) != desired]`` (with several desired classes per counterfactual, any
    of them counts). Distances: Euclidean over one-hot categoricals (a change weighs 1)
    and MAD-scaled continuous features. A missing category is an all-zero one-hot block
    (weight 1/2 against an observed category, 0 against another missing one); a
    continuous feature with missing values gets a 0/1 missing-indicator coordinate, its
    missing entries sitting at the feature's lowest value (the explainers' neighbour
    embedding), so missing vs missing is 0 and missing vs observed at least 1. Higher
    means the counterfactual lies in a region the model consistently assigns the desired
    class.

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    model : classifier or regressor
        A fitted model whose ``predict`` labels the reference rows.
    X_ref : DataFrame or array of shape (n_ref, n_features)
        The reference rows searched for neighbours (e.g. the training data); they also
        define the MAD scales. A DataFrame's columns are matched by name, an array's by
        position (it must have one column per feature). The model predicts an array as
        given, or in the queries' columns if it was fitted on a DataFrame.
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

    enc, Xr, Zr = _encoder(result, X_ref, categorical_features, return_reference=True)
    queries, feats, _ = _frames(result)
    if not len(feats):
        return float("nan")
    index = NeighborIndex("exact").fit(enc.embed(Zr, continuous="scaled"))
    _, nb = index.kneighbors(enc.embed(_internal(enc, feats), continuous="scaled"),
                             n_neighbors)
    # an array stays an array, unless the model was fitted on named columns
    named = getattr(model, "feature_names_in_", None) is not None
    labels = _predict_labels(model, Xr if isinstance(X_ref, pd.DataFrame) or named else X_ref)
    return float(np.mean(_hits(labels[nb], _desired(result, model))))


def redundancy(result: Counterfactuals, model: Any,
               categorical_features: Literal["auto"] | ArrayLike | None = "auto") -> float:
    """Mean number of redundant changes per counterfactual (CARLA; lower is better).

    A change is redundant when reverting that one feature to the query's value keeps the
    desired class (``model.predict``; any of them where a row has several). All reverts
    are predicted in one call. Changes and reverts treat missing values as
    :func:`sparsity` does (reverting restores a missing value of the query).

    Parameters
    ----------
    result : Counterfactuals
        The counterfactuals of a recourse method (or another library's output put into
        one).
    model : classifier or regressor
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
    changed = _changed(enc, result)[0]
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
    desired = _desired(result, model)
    red = np.bincount(np.asarray(owner), weights=_hits(pred, desired[owner]),
                      minlength=len(C))
    return float(red.mean())
