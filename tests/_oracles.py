"""Oracles shared by the tests: values of a game given by all its coalitions."""

import math

import numpy as np


def values_from_game(v, M, index="shapley"):
    """Shapley (or Banzhaf) values and the Shapley interaction index of a game.

    Parameters
    ----------
    v : dict
        Coalition (tuple of M 0/1) -> value, an array of shape (K,) (or a scalar).
    M : int
        Number of players.
    index : {"shapley", "banzhaf"}
        Which value ``phi`` holds; the interactions are always Shapley's.

    Returns
    -------
    phi : ndarray of shape (M, K)
    inter : ndarray of shape (M, M, K)
        The diagonal holds ``phi_i`` minus the player's off-diagonal interactions.
    """
    v = {S: np.atleast_1d(np.asarray(val, dtype=np.float64)) for S, val in v.items()}
    K = len(next(iter(v.values())))
    phi = np.zeros((M, K))
    inter = np.zeros((M, M, K))
    for S, vS in v.items():
        s = sum(S)
        for i in range(M):
            if S[i]:
                continue
            Si = tuple(1 if q == i else S[q] for q in range(M))
            w = 1.0 / 2 ** (M - 1) if index == "banzhaf" else \
                math.factorial(s) * math.factorial(M - s - 1) / math.factorial(M)
            phi[i] += w * (v[Si] - vS)
            for j in range(M):
                if j == i or S[j]:
                    continue
                Sj = tuple(1 if q == j else S[q] for q in range(M))
                Sij = tuple(1 if q in (i, j) else S[q] for q in range(M))
                w2 = math.factorial(s) * math.factorial(M - s - 2) / (2 * math.factorial(M - 1))
                inter[i, j] += w2 * (v[Sij] - v[Si] - v[Sj] + vS)
    for i in range(M):
        inter[i, i] = phi[i] - inter[i].sum(axis=0)
    return phi, inter


def baseline_shapley(f, X, r):
    """phi[n, i] of the single-reference game ``v(S) = f(x_S, r_rest)`` of every row of ``X``,
    by enumerating every coalition (``f`` maps rows to one output per row)."""
    import itertools
    from math import factorial

    X, r = np.asarray(X, float), np.asarray(r, float).reshape(-1)
    P = X.shape[1]
    phi = np.zeros((len(X), P))
    for i in range(P):
        others = [j for j in range(P) if j != i]
        for s in range(P):
            w = factorial(s) * factorial(P - s - 1) / factorial(P)
            for T in itertools.combinations(others, s):
                z0 = np.tile(r, (len(X), 1))
                z0[:, list(T)] = X[:, list(T)]
                z1 = z0.copy()
                z1[:, i] = X[:, i]
                phi[:, i] += w * (np.asarray(f(z1)) - np.asarray(f(z0))).reshape(len(X))
    return phi
