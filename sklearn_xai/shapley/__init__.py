"""Model-agnostic Shapley values: the game, its estimators and the explainers built on them.

The game and its estimators are imported eagerly; the explainers built on them (SHEAR and the
knockoff explainers) only when asked for, so the game layer never loads the layers above it
(``import sklearn_xai.tree`` needs the estimators' weights, not SHEAR or the knockoffs).
"""

import importlib

from ._estimators import (
    ALGORITHMS,
    ShapleyEstimate,
    estimate_shapley,
    exact_shapley,
    frontier_shapley,
    frontier_shared_shapley,
    kernel_shapley,
    permutation_shapley,
)
from ._frontier import frontier_components
from ._game import Game, ImputationGame

_LAZY = {
    "ShearExplainer": "sklearn_xai.shapley._shear",
    "KnockoffSHAP": "sklearn_xai.shapley._knockoff",
    "KnockoffSAGE": "sklearn_xai.shapley._knockoff",
}

__all__ = [
    "Game",
    "ImputationGame",
    "ALGORITHMS",
    "estimate_shapley",
    "ShapleyEstimate",
    "exact_shapley",
    "permutation_shapley",
    "kernel_shapley",
    "frontier_shapley",
    "frontier_shared_shapley",
    "frontier_components",
    "ShearExplainer",
    "KnockoffSHAP",
    "KnockoffSAGE",
]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sklearn_xai.shapley' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
