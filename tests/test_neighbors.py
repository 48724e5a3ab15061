import pickle

import numpy as np
import pytest

from sklearn_xai.neighbors import NeighborIndex


def _brute(X, Q, k):
    d = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    idx = np.argsort(d, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(d, idx, axis=1), idx


@pytest.mark.parametrize("method", ["hnsw", "exact"])
def test_matches_brute_force(method):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    Q = rng.normal(size=(25, 6))
    dist, idx = NeighborIndex(method).fit(X).kneighbors(Q, 8)
    bd, bi = _brute(X, Q, 8)
    # HNSW is approximate, but on 400 points with ef=64 the recall is essentially 1
    assert np.mean(idx == bi) >= 0.98
    np.testing.assert_allclose(dist[idx == bi], bd[idx == bi], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["hnsw", "exact"])
def test_k_larger_than_index(method):
    X = np.arange(6, dtype=float).reshape(3, 2)
    dist, idx = NeighborIndex(method).fit(X).kneighbors(X[:1], 30)
    assert idx.shape == (1, 3)
    np.testing.assert_array_equal(idx[0], [0, 1, 2])
    np.testing.assert_allclose(dist[0], [0, np.sqrt(8), np.sqrt(32)], rtol=1e-6)


def test_deterministic_and_picklable():
    X = np.random.default_rng(1).normal(size=(300, 4))
    a = NeighborIndex(M=8, ef_search=16).fit(X)
    b = NeighborIndex(M=8, ef_search=16).fit(X)
    c = pickle.loads(pickle.dumps(a))
    r = [m.kneighbors(X, 5)[1] for m in (a, b, c)]
    np.testing.assert_array_equal(r[0], r[1])
    np.testing.assert_array_equal(r[0], r[2])


def test_bad_input():
    idx = NeighborIndex().fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="n_neighbors"):
        idx.kneighbors(np.zeros((1, 2)), 0)
    with pytest.raises(ValueError, match="features"):
        idx.kneighbors(np.zeros((1, 3)), 1)
    with pytest.raises(ValueError, match="method"):
        NeighborIndex("annoy").fit(np.zeros((4, 2)))


@pytest.mark.parametrize("fitted, new", [("hnsw", "exact"), ("exact", "hnsw")])
def test_set_params_after_fit_leaves_the_fitted_index_alone(fitted, new):
    # kneighbors and pickling read the method parameter, not the fitted index's kind
    X = np.random.RandomState(0).randn(50, 3)
    index = NeighborIndex(fitted).fit(X)
    want = index.kneighbors(X[:4], 3)
    index.set_params(method=new)
    for got in (index.kneighbors(X[:4], 3),
                pickle.loads(pickle.dumps(index)).kneighbors(X[:4], 3)):
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=0)
    with pytest.raises(ValueError, match="positive integer"):
        index.kneighbors(X[:1], True)
    assert index.fit(X).method_ == new
