"""Model-agnostic Shapley values: the game, its estimators and the explainers built on them."""

from ._estimators import ALGORITHMS, exact_shapley, kernel_shapley, permutation_shapley
from ._game import Game, ImputationGame

# knockoff imputation (KnockoffSHAP, KnockoffSAGE)
from ._knockoff import KnockoffSAGE, KnockoffSHAP  # noqa: E402

# SHEAR (issue 4)
from ._shear import ShearExplainer

__all__ = [
    "Game",
    "ImputationGame",
    "ALGORITHMS",
    "exact_shapley",
    "permutation_shapley",
    "kernel_shapley",
    # SHEAR (issue 4)
    "ShearExplainer",
    "KnockoffSHAP",
    "KnockoffSAGE",
]
