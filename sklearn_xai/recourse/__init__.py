"""Counterfactual recourse explainers."""

from ._mace import MaceRecourse  # noqa: F401
from ._p2ce import P2CERecourse  # noqa: F401
