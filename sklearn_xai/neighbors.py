"""One nearest-neighbour wrapper: approximate HNSW search (faiss) with an exact fallback.

The recourse explainers only ever talk to :class:`NeighborIndex`; nothing else in the
package imports faiss.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions, validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted, validate_data

if TYPE_CHECKING:
    from typing import Literal, Self

    from numpy.typing import ArrayLike

__all__ = ["NeighborIndex", "check_hnsw_params"]

_HNSW_KEYS = ("M", "ef_construction", "ef_search")
_MAX_M = 1024
# queries whose normalised coordinates exceed this are searched exactly in float64: far
# from the data float32 can no longer order the neighbours (and its squares overflow)
_FAR = 2.0**16


def _import_faiss():
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - faiss-cpu is a core dependency
        raise ImportError(
            "NeighborIndex(method='hnsw') needs faiss: `pip install faiss-cpu`, "
            "or use method='exact'."
        ) from exc
    return faiss


def _pow2_at_least(v):
    """The smallest power of two ``>= v`` (at most ``2**1023``); 1 for ``v <= 0``."""
    if not v > 0:
        return 1.0
    return float(np.ldexp(1.0, min(int(np.frexp(v)[1]), 1023)))


def check_hnsw_params(params: Mapping[str, int] | None, *, param_name: str = "hnsw_params",
                      caller: str = "NeighborIndex") -> dict[str, int]:
    """Validate a dict of HNSW settings with :class:`NeighborIndex`'s own rules.

    Meant for estimators that build a :class:`NeighborIndex` from a settings dict: the
    settings are checked before anything reaches faiss (a degree ``M < 2`` crashes it,
    a negative one allocates without bound).

    Parameters
    ----------
    params : dict or None
        Keys among ``"M"``, ``"ef_construction"``, ``"ef_search"``.
    param_name : str, default="hnsw_params"
        The caller's name of the dict, used in error messages.
    caller : str, default="NeighborIndex"
        The caller's class name, used in error messages.

    Returns
    -------
    dict
        A copy of ``params`` (empty for ``None``).

    Raises
    ------
    ValueError
        For an unknown key, or a value of the wrong type or out of range; the message
        names ``param_name`` and the key.
    """
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ValueError(
            f"{param_name} must be a dict with keys among {list(_HNSW_KEYS)} or None, got "
            f"{type(params).__name__}."
        )
    unknown = [k for k in params if k not in _HNSW_KEYS]
    if unknown:
        raise ValueError(
            f"{param_name} has unknown key(s) {unknown}; the accepted keys are "
            f"{list(_HNSW_KEYS)} (the parameters of NeighborIndex)."
        )
    for key, value in params.items():
        label = f"{param_name}[{key!r}]"
        validate_parameter_constraints(
            {label: NeighborIndex._parameter_constraints[key]}, {label: value},
            caller_name=caller,
        )
    return dict(params)


class NeighborIndex(BaseEstimator):
    """k-nearest-neighbour search in Euclidean distance, approximate (HNSW) or exact.

    Parameters
    ----------
    method : {"hnsw", "exact"}, default="hnsw"
        ``"hnsw"`` builds a faiss ``IndexHNSWFlat`` (Malkov & Yashunin, 2020): the build costs
        about ``O(n log n * M * ef_construction)`` distance evaluations and a query
        ``O(log n * M * ef_search)``; results are approximate. ``"exact"`` uses
        scikit-learn's brute-force :class:`~sklearn.neighbors.NearestNeighbors`
        (``O(n d)`` per query, exact).
    M : int in [2, 1024], default=32
        HNSW graph degree (faiss ``M``).
    ef_construction : int >= 1, default=200
        Size of the dynamic candidate list while building the graph (values above the
        number of indexed rows act as that number).
    ef_search : int >= 1, default=64
        Size of the candidate list at query time; raised to ``k`` for a query of ``k``
        neighbours so that ``k`` results can always be returned (and, like
        ``ef_construction``, capped at the number of indexed rows).

    Attributes
    ----------
    method_ : {"hnsw", "exact"}
        The kind of the fitted index (``method`` at the last ``fit``).
    n_indexed_ : int
        Number of indexed rows.
    n_features_in_ : int
        Width of the indexed rows.
    center_ : ndarray of shape (n_features,)
        Midpoint of each column's range.
    scale_ : float
        A power of two at least the largest half-range of a column.

    Notes
    -----
    ``kneighbors(X, k)`` returns ``min(k, n_indexed_)`` neighbours, so a small index never
    fails. The HNSW graph is built with one thread, which makes it (and hence every query)
    deterministic; faiss draws the graph levels from its own fixed seed. Fitted indexes
    pickle (the faiss index is serialised to bytes).

    Both methods search the rows ``(X - center_) / scale_``, which lie in ``[-1, 1]``
    (moving and scaling every row alike keeps the neighbour order), and return distances
    in the original units. So faiss's float32 storage and squared distances can neither
    overflow nor lose an offset column's precision, whatever the magnitude of the data
    (up to the largest float64). A query further than ``2**16`` normalised units from
    the data's box is searched exactly by a float64 scan rescaled per query (float32
    cannot order neighbours that far away); so are the rare HNSW queries that come back
    with empty slots. A distance is infinite only when the true distance exceeds the
    largest float64.
    """

    _parameter_constraints = {
        "method": [StrOptions({"hnsw", "exact"})],
        "M": [Interval(numbers.Integral, 2, _MAX_M, closed="both")],
        "ef_construction": [Interval(numbers.Integral, 1, None, closed="left")],
        "ef_search": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, method: Literal["hnsw", "exact"] = "hnsw", *, M: int = 32,
                 ef_construction: int = 200, ef_search: int = 64) -> None:
        self.method = method
        self.M = M
        self.ef_construction = ef_construction
        self.ef_search = ef_search

    def fit(self, X: ArrayLike, y: None = None) -> Self:
        """Index the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to index (normalised, then converted to float32 for faiss).
        y : None
            Ignored.

        Returns
        -------
        NeighborIndex
            The fitted index (``self``).
        """
        # always, also inside another estimator's fit that skips nested validation:
        # invalid settings crash faiss or exhaust memory
        self._validate_params()
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=1)
        n = X.shape[0]
        self.n_indexed_ = n
        lo, hi = X.min(axis=0), X.max(axis=0)
        self.center_ = lo / 2 + hi / 2  # halves first: no overflow near the largest float
        self.scale_ = _pow2_at_least(float(np.max(hi / 2 - lo / 2)))
        Xs = (X - self.center_) / self.scale_
        # the fitted index's kind: set_params(method=...) after fit changes nothing until
        # the next fit
        self.method_ = self.method
        if self.method_ == "exact":
            from sklearn.neighbors import NearestNeighbors

            self._Xs = Xs
            self.index_ = NearestNeighbors(algorithm="brute", metric="euclidean").fit(Xs)
        else:
            faiss = _import_faiss()
            index = faiss.IndexHNSWFlat(X.shape[1], int(self.M))
            index.hnsw.efConstruction = int(min(self.ef_construction, n))
            n_threads = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(1)  # a single-threaded build is deterministic
            try:
                index.add(np.ascontiguousarray(Xs, dtype=np.float32))
            finally:
                faiss.omp_set_num_threads(n_threads)
            self.index_ = index
        return self

    def _indexed(self):
        """The normalised indexed rows, float64."""
        if self.method_ == "exact":
            return self._Xs
        return self.index_.reconstruct_n(0, self.n_indexed_).astype(np.float64)

    def _scan(self, Q, k):
        """Exact k nearest rows of each query by a float64 scan, rescaled per query."""
        data = self._indexed()
        dist = np.empty((Q.shape[0], k))
        idx = np.empty((Q.shape[0], k), dtype=np.int64)
        index_size = max(np.abs(self.center_).max(), 2.0 * self.scale_)
        for r, q in enumerate(Q):
            # work in units of a power of two above every magnitude involved, so no
            # difference or square overflows
            f = _pow2_at_least(max(np.abs(q).max(), index_size))
            diff = (q / f - self.center_ / f) - data * (self.scale_ / f)
            d = f * np.sqrt((diff**2).sum(axis=1))
            order = np.argsort(d, kind="stable")[:k]
            dist[r], idx[r] = d[order], order
        return dist, idx

    def kneighbors(self, X: ArrayLike, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """Find the nearest indexed rows.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows, in the units of the indexed data.
        n_neighbors : int
            Requested number of neighbours; ``min(n_neighbors, n_indexed_)`` are returned.

        Returns
        -------
        distances : ndarray of shape (n_queries, k)
            Euclidean distances, ascending.
        indices : ndarray of shape (n_queries, k), int64
            Row numbers into the indexed data.
        """
        check_is_fitted(self, "index_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if (not isinstance(n_neighbors, numbers.Integral) or isinstance(n_neighbors, bool)
                or n_neighbors < 1):
            raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}.")
        k = int(min(n_neighbors, self.n_indexed_))
        with np.errstate(over="ignore", invalid="ignore"):
            Xs = (X - self.center_) / self.scale_
        far = ~(np.abs(Xs) <= _FAR).all(axis=1)
        near = np.flatnonzero(~far)
        dist = np.empty((X.shape[0], k))
        idx = np.empty((X.shape[0], k), dtype=np.int64)
        if near.size and self.method_ == "exact":
            d, i = self.index_.kneighbors(Xs[near], n_neighbors=k)
            dist[near], idx[near] = d * self.scale_, i
        elif near.size:
            faiss = _import_faiss()
            ef = int(min(max(self.ef_search, k), self.n_indexed_))
            params = faiss.SearchParametersHNSW()
            params.efSearch = ef
            dist2, i = self.index_.search(np.ascontiguousarray(Xs[near], dtype=np.float32), k,
                                          params=params)
            dist[near] = np.sqrt(np.maximum(dist2.astype(np.float64), 0.0)) * self.scale_
            idx[near] = i
            # HNSW can leave slots empty (-1) on pathological graphs: those rows are
            # searched exactly rather than returning fewer neighbours than promised
            far[near[(i < 0).any(axis=1)]] = True
        if far.any():
            dist[far], idx[far] = self._scan(X[far], k)
        return dist, idx

    def __getstate__(self):
        state = dict(super().__getstate__())
        if state.get("method_") == "hnsw" and "index_" in state:
            faiss = _import_faiss()
            state["index_"] = faiss.serialize_index(state["index_"])
        return state

    def __setstate__(self, state):
        if state.get("method_") == "hnsw" and isinstance(state.get("index_"), np.ndarray):
            faiss = _import_faiss()
            state = dict(state)
            state["index_"] = faiss.deserialize_index(state["index_"])
        super().__setstate__(state)
