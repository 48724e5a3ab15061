"""Counterfactual recourse explainers."""

from ._p2ce import P2CERecourse  # noqa: F401
