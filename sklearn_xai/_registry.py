"""The one list of the package's explainers.

Everything that iterates over "every explainer" reads it: the lazy imports of
``sklearn_xai``, the command line and the report (through each class's ``_cli_name``,
``_label`` and ``_report_params``), and the common, contract, fuzz and Dask tests (through
each class's ``_test_params`` and ``_test_instances``). Adding an explainer is writing its
class and adding one line here (and one to ``doc/api.rst``).
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
