"""Counterfactual recourse explainers."""

from ._mace import MaceRecourse  # noqa: F401
