"""Instances of every public explainer for the common checks, and their expected failures.

``INSTANCES`` maps a class name to factories of instances (several settings where useful);
``EXPECTED_FAILED`` maps a class name to ``{check_name: reason}`` (the imbalanced-learn
pattern): every entry must say why the check does not apply.
"""

INSTANCES = {}
EXPECTED_FAILED = {}
