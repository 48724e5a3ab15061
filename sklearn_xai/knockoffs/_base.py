"""Shared pieces of the knockoff samplers: per-row random generators."""

import numpy as np
from sklearn.utils import check_random_state


def _draw_base_seed(random_state):
    """One integer drawn from ``random_state``; per-row seeds derive from it."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def _row_generators(base_seed, row_indices):
    """One ``np.random.Generator`` per row, depending only on ``base_seed`` and the row."""
    return [
        np.random.default_rng(np.random.SeedSequence(entropy=base_seed, spawn_key=(int(i),)))
        for i in row_indices
    ]
