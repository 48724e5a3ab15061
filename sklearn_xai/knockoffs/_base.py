"""Shared pieces of the knockoff samplers: per-row random draws.

Every row gets its own counter-based stream: a SplitMix64 sequence whose seed mixes the
call's base seed with the row's key (its index, or a hash of its values). A row's draws
therefore depend only on the base seed and that key, never on which other rows are
sampled in the same call, and the whole block is drawn with a few vectorised numpy
operations (one ``np.random.Generator`` per row costs about 100 us in Python, more than
the sampling itself).
"""

import numpy as np
from scipy.special import ndtri

_GAMMA = np.uint64(0x9E3779B97F4A7C15)


def _mix(z):
    """SplitMix64 finaliser (Steele, Lea & Flood 2014) on uint64 arrays."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _row_uniforms(base_seed, row_keys, n_draws):
    """Uniforms in (0, 1), shape ``(n_rows, n_draws)``; row ``i`` depends only on
    ``base_seed`` and ``row_keys[i]``."""
    keys = np.asarray([int(k) & 0xFFFFFFFFFFFFFFFF for k in row_keys], dtype=np.uint64)
    with np.errstate(over="ignore"):
        base = _mix(np.uint64(int(base_seed) & 0xFFFFFFFFFFFFFFFF) + _GAMMA)
        seeds = _mix(_mix(keys + _GAMMA) ^ base)
        z = seeds[:, None] + (np.arange(1, n_draws + 1, dtype=np.uint64) * _GAMMA)[None, :]
        # SplitMix64 finaliser, in place (this loop is the sampler's hot spot)
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
        z >>= np.uint64(11)
    u = z.astype(np.float64)
    u += 0.5
    u *= 1.0 / 2.0**53
    return u


def _row_draws(base_seed, row_keys, n_normal, n_uniform=0):
    """Per-row standard normals ``(n_rows, n_normal)`` and uniforms
    ``(n_rows, n_uniform)`` from one stream per row (normals by the inverse CDF)."""
    u = _row_uniforms(base_seed, row_keys, n_normal + n_uniform)
    return ndtri(u[:, :n_normal]), u[:, n_normal:]
