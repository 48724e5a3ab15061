"""sklearn-xai: explainers that are ordinary scikit-learn estimators.

Public estimators are imported lazily, so ``import sklearn_xai`` stays cheap and an
optional dependency is only needed by the explainer that uses it.
"""

import importlib

from ._compile import use_user_cache_dir as _use_user_cache_dir

_use_user_cache_dir()  # numba's cache folder (unless NUMBA_CACHE_DIR is set), before numba loads

from ._registry import EXPLAINER_MODULES  # noqa: E402

__version__ = "0.1.0.dev0"

_LAZY = {
    "Attribution": "sklearn_xai._explanation",
    "Counterfactuals": "sklearn_xai._explanation",
    "GlobalImportance": "sklearn_xai._explanation",
    "AuditResult": "sklearn_xai.audit",
    "OffManifoldAudit": "sklearn_xai.audit",
    **EXPLAINER_MODULES,
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sklearn_xai' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
