"""Instances of every public explainer for the common checks, and their expected failures.

``INSTANCES`` maps a class name to factories of instances (several settings where useful);
``EXPECTED_FAILED`` maps a class name to ``{check_name: reason}`` (the imbalanced-learn
pattern): every entry must say why the check does not apply.
"""

INSTANCES = {}
EXPECTED_FAILED = {}

# --- TreeShapExplainer (branch tree) ---------------------------------------------------
from sklearn.tree import DecisionTreeRegressor  # noqa: E402

from sklearn_xai.tree import TreeShapExplainer  # noqa: E402

INSTANCES["TreeShapExplainer"] = [
    lambda: TreeShapExplainer(DecisionTreeRegressor(max_depth=3, random_state=0)),
    lambda: TreeShapExplainer(DecisionTreeRegressor(max_depth=3, random_state=0),
                              feature_perturbation="interventional", max_background=20,
                              random_state=0),
]
EXPECTED_FAILED["TreeShapExplainer"] = {}
# --- end TreeShapExplainer ---------------------------------------------------------------
