"""The one list of the package's explainers.

Everything that iterates over "every explainer" reads it: the lazy imports of
``sklearn_xai``; the command line and the report, through each class's declarations
(``_cli_name``, ``_label``, ``_in_default_report``, ``_report_params``, ``_report_chunk``,
``_report_global``, ``_report_exact``, ``_report_note``; attribution or recourse from its base
class); and the common, contract, fuzz, row-invariance, Dask, result-index and command-line
tests, whose per-class settings live in ``tests/_instances.py`` (with a default for a class
that has none). Adding an explainer is writing its module (anywhere in the package), adding
one line here and one to ``doc/api.rst`` ("Writing an explainer" in the documentation;
``tests/test_registry_extension.py`` checks that this is enough).
"""

import importlib

#: class name -> module that defines it (imported only when asked for)
EXPLAINER_MODULES = {
    "TreeShapExplainer": "sklearn_xai.tree",
    "ShearExplainer": "sklearn_xai.shapley",
    "KnockoffSHAP": "sklearn_xai.shapley",
    "KnockoffSAGE": "sklearn_xai.shapley",
    "MaceRecourse": "sklearn_xai.recourse",
    "P2CERecourse": "sklearn_xai.recourse",
}


def all_explainers():
    """The explainer classes of the package, in registry order.

    Returns
    -------
    list of type
    """
    return [getattr(importlib.import_module(module), name)
            for name, module in EXPLAINER_MODULES.items()]


def explainers_by_cli_name():
    """Explainers offered on the command line and in the report, by ``_cli_name``.

    Returns
    -------
    dict of str -> type
    """
    return {cls._cli_name: cls for cls in all_explainers() if cls._cli_name is not None}
