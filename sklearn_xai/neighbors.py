"""One nearest-neighbour wrapper: approximate HNSW search (faiss) with an exact fallback.

The recourse explainers only ever talk to :class:`NeighborIndex`; nothing else in the
package imports faiss.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["NeighborIndex"]


def _import_faiss():
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - faiss-cpu is a core dependency
        raise ImportError(
            "NeighborIndex(method='hnsw') needs faiss: `pip install faiss-cpu`, "
            "or use method='exact'."
        ) from exc
    return faiss


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
    M : int, default=32
        HNSW graph degree (faiss ``M``).
    ef_construction : int, default=200
        Size of the dynamic candidate list while building the graph.
    ef_search : int, default=64
        Size of the candidate list at query time; raised to ``k`` for a query of ``k``
        neighbours so that ``k`` results can always be returned.

    Attributes
    ----------
    n_indexed_ : int
        Number of indexed rows.
    n_features_in_ : int
        Width of the indexed rows.

    Notes
    -----
    ``kneighbors(X, k)`` returns ``min(k, n_indexed_)`` neighbours, so a small index never
    fails. The HNSW graph is built with one thread, which makes it (and hence every query)
    deterministic; faiss draws the graph levels from its own fixed seed. Fitted indexes
    pickle (the faiss index is serialised to bytes).
    """

    _parameter_constraints = {
        "method": [StrOptions({"hnsw", "exact"})],
        "M": [Interval(numbers.Integral, 2, None, closed="left")],
        "ef_construction": [Interval(numbers.Integral, 1, None, closed="left")],
        "ef_search": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, method="hnsw", *, M=32, ef_construction=200, ef_search=64):
        self.method = method
        self.M = M
        self.ef_construction = ef_construction
        self.ef_search = ef_search

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Index the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to index (converted to float32 for faiss, float64 for the exact search).
        y : None
            Ignored.

        Returns
        -------
        self : NeighborIndex
        """
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=1)
        self.n_indexed_ = X.shape[0]
        if self.method == "exact":
            from sklearn.neighbors import NearestNeighbors

            self.index_ = NearestNeighbors(algorithm="brute", metric="euclidean").fit(X)
        else:
            faiss = _import_faiss()
            index = faiss.IndexHNSWFlat(X.shape[1], int(self.M))
            index.hnsw.efConstruction = int(self.ef_construction)
            n_threads = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(1)  # a single-threaded build is deterministic
            try:
                index.add(np.ascontiguousarray(X, dtype=np.float32))
            finally:
                faiss.omp_set_num_threads(n_threads)
            self.index_ = index
        return self

    def kneighbors(self, X, n_neighbors):
        """Find the nearest indexed rows.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
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
        if not isinstance(n_neighbors, numbers.Integral) or n_neighbors < 1:
            raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}.")
        k = int(min(n_neighbors, self.n_indexed_))
        if self.method == "exact":
            dist, idx = self.index_.kneighbors(X, n_neighbors=k)
            return dist, idx.astype(np.int64)
        faiss = _import_faiss()
        self.index_.hnsw.efSearch = int(max(self.ef_search, k))
        params = faiss.SearchParametersHNSW()
        params.efSearch = int(max(self.ef_search, k))
        dist2, idx = self.index_.search(np.ascontiguousarray(X, dtype=np.float32), k, params=params)
        # HNSW can leave slots empty (-1) on pathological graphs; fall back to exact search
        # for those rows rather than returning fewer neighbours than promised.
        bad = (idx < 0).any(axis=1)
        if bad.any():
            data = self.index_.reconstruct_n(0, self.n_indexed_).astype(np.float64)
            d2 = ((X[bad, None, :] - data[None, :, :]) ** 2).sum(-1)
            order = np.argsort(d2, axis=1, kind="stable")[:, :k]
            idx[bad] = order
            dist2[bad] = np.take_along_axis(d2, order, axis=1)
        return np.sqrt(np.maximum(dist2.astype(np.float64), 0.0)), idx.astype(np.int64)

    def __getstate__(self):
        state = dict(super().__getstate__())
        if self.method == "hnsw" and "index_" in state:
            faiss = _import_faiss()
            state["index_"] = faiss.serialize_index(state["index_"])
        return state

    def __setstate__(self, state):
        if state.get("method") == "hnsw" and isinstance(state.get("index_"), np.ndarray):
            faiss = _import_faiss()
            state = dict(state)
            state["index_"] = faiss.deserialize_index(state["index_"])
        super().__setstate__(state)
