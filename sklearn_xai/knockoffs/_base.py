"""Shared pieces of the knockoff samplers: per-row random draws.

Every row gets its own counter-based stream: the SplitMix64 stream of
:mod:`sklearn_xai._random` whose seed mixes the call's base seed with the row's key (a
hash of its values, :func:`sklearn_xai._random.row_keys`). A row's draws
therefore depend only on the base seed and that key, never on which other rows are
sampled in the same call, and the whole block is drawn with a few vectorised numpy
operations (one ``np.random.Generator`` per row costs about 100 us in Python, more than
the sampling itself).
"""

from scipy.special import ndtri

from .._random import stream_seeds, stream_uniforms


def _row_uniforms(base_seed, row_keys, n_draws):
    """Uniforms in (0, 1), shape ``(n_rows, n_draws)``; row ``i`` depends only on
    ``base_seed`` and ``row_keys[i]`` (the keyed streams of :mod:`sklearn_xai._random`)."""
    return stream_uniforms(stream_seeds(base_seed, row_keys), n_draws)


def _row_draws(base_seed, row_keys, n_normal, n_uniform=0):
    """Per-row standard normals ``(n_rows, n_normal)`` and uniforms
    ``(n_rows, n_uniform)`` from one stream per row (normals by the inverse CDF)."""
    u = _row_uniforms(base_seed, row_keys, n_normal + n_uniform)
    return ndtri(u[:, :n_normal]), u[:, n_normal:]
