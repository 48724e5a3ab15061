"""Counterfactual recourse explainers."""

from ._base import RecourseExplainer
from ._mace import MaceRecourse
from ._p2ce import P2CERecourse

__all__ = ["MaceRecourse", "P2CERecourse", "RecourseExplainer"]
