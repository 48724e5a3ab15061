"""Exact TreeSHAP for scikit-learn, XGBoost and LightGBM tree ensembles."""

from ._ensemble import FlatEnsemble, goes_left, predict_raw
from ._explainer import TreeShapExplainer, parse_model

__all__ = ["FlatEnsemble", "TreeShapExplainer", "goes_left", "parse_model", "predict_raw"]
