"""Shared pieces of the knockoff samplers: per-row random draws.

Every row gets its own counter-based stream: the SplitMix64 stream of
:mod:`sklearn_xai._random` whose seed mixes the call's base seed with the row's key (a
hash of its values, :func:`sklearn_xai._random.row_keys`). A row's draws
therefore depend only on the base seed and that key, never on which other rows are
sampled in the same call, and the whole block is drawn with a few vectorised numpy
operations (one ``np.random.Generator`` per row costs about 100 us in Python, more than
the sampling itself).
"""

from numbers import Integral

import numpy as np
from scipy.special import ndtr, ndtri
from sklearn.utils.validation import check_is_fitted

from .._random import stream_seeds, stream_uniforms
from .._utils import draw_base_seed


def _row_uniforms(base_seed, row_keys, n_draws):
    """Uniforms in (0, 1), shape ``(n_rows, n_draws)``; row ``i`` depends only on
    ``base_seed`` and ``row_keys[i]`` (the keyed streams of :mod:`sklearn_xai._random`)."""
    return stream_uniforms(stream_seeds(base_seed, row_keys), n_draws)


def _sample(sampler, X, n_knockoffs, random_state, check_rows):
    """A fitted sampler's ``sample``: check ``n_knockoffs`` and the rows (``check_rows``),
    draw one base seed from ``random_state`` and call ``sampler.sample_seeded``."""
    check_is_fitted(sampler)
    if (not isinstance(n_knockoffs, Integral) or isinstance(n_knockoffs, bool)
            or n_knockoffs < 1):
        raise ValueError(f"n_knockoffs must be a positive integer, got {n_knockoffs!r}.")
    rows = check_rows(X)
    return sampler.sample_seeded(rows, n_knockoffs, draw_base_seed(random_state), None)


def _row_draws(base_seed, row_keys, n_normal, n_uniform=0):
    """Per-row standard normals ``(n_rows, n_normal)`` and uniforms
    ``(n_rows, n_uniform)`` from one stream per row (normals by the inverse CDF)."""
    u = _row_uniforms(base_seed, row_keys, n_normal + n_uniform)
    return ndtri(u[:, :n_normal]), u[:, n_normal:]


# A numeric column counts as discrete when it takes between 2 and this many distinct
# values in ``fit``, each seen twice on average (at most half as many values as rows):
# binary indicators, counts, ratings, integer-coded categories. Its knockoffs are then
# mapped onto those values. The rule looks at the distinct values only, so it does not
# change when a column is rescaled.
MAX_DISCRETE_LEVELS = 20


def _discrete_support(values):
    """``(levels, cumulative counts)`` of a 1-D column that counts as discrete (2 to
    ``MAX_DISCRETE_LEVELS`` distinct values, at most half as many as rows), else None."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0 or not np.all(np.isfinite(v)):
        return None
    levels, counts = np.unique(v, return_counts=True)
    if not 2 <= levels.size <= min(MAX_DISCRETE_LEVELS, v.size // 2):
        return None
    return levels, np.cumsum(counts).astype(np.float64)


def _to_support(draws, center, scale, support):
    """Map Gaussian knockoff draws of a discrete column onto its observed levels by the
    marginal quantile transform: ``u = Phi((draw - center) / scale)`` (the draw's
    probability under the column's fitted marginal ``N(center, scale^2)``), then the
    ``u``-quantile of the values seen in ``fit``, ``min{v : F_n(v) >= u}``. A draw
    distributed like the fitted marginal becomes a value distributed like the observed
    column, and the map is monotone, so the knockoff keeps its dependence on the row."""
    levels, cum = support
    u = ndtr((np.asarray(draws, dtype=np.float64) - center) / scale)
    k = np.searchsorted(cum, u * cum[-1], side="left")
    return levels[np.clip(k, 0, levels.size - 1)]
