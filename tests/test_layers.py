"""Layers in order: a lower layer never loads a higher one, and no module reaches into another
subpackage's private names."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sklearn_xai"


def _loaded_after(statement):
    """The package's modules (and whether torch) are loaded after ``statement`` in a fresh
    interpreter."""
    code = (f"import sys; {statement}; "
            "print(' '.join(sorted(m for m in sys.modules "
            "if m.startswith(('sklearn_xai', 'torch')) and '.' in m or m == 'torch')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=PACKAGE.parent)
    return out.stdout.split()


@pytest.mark.parametrize("statement, forbidden", [
    ("import sklearn_xai.tree", ("sklearn_xai.shapley._shear", "sklearn_xai.shapley._knockoff",
                                 "sklearn_xai.knockoffs", "sklearn_xai._torch",
                                 "sklearn_xai.recourse", "torch")),
    ("import sklearn_xai.shapley", ("sklearn_xai.shapley._shear",
                                    "sklearn_xai.shapley._knockoff", "sklearn_xai.knockoffs",
                                    "sklearn_xai.tree", "sklearn_xai.recourse", "torch")),
    ("import sklearn_xai.metrics", ("sklearn_xai.recourse", "sklearn_xai.tree",
                                    "sklearn_xai.shapley._shear", "torch")),
    ("import sklearn_xai", ("sklearn_xai.base", "sklearn_xai.tree", "sklearn_xai.shapley",
                            "sklearn_xai.recourse", "torch")),
    ("import sklearn_xai.audit", ("sklearn_xai.shapley", "sklearn_xai.knockoffs",
                                  "sklearn_xai.tree", "sklearn_xai.recourse", "torch")),
])
def test_lower_layers_do_not_load_higher_ones(statement, forbidden):
    loaded = _loaded_after(statement)
    bad = [m for m in loaded if m.startswith(forbidden)]
    assert not bad, f"{statement!r} loads {bad}"


_DATA = ("import numpy as np; X = np.random.default_rng(0).normal(size=(40, 3)); "
         "y = X[:, 0] + X[:, 1] * X[:, 2]")


@pytest.mark.parametrize("statement", [
    _DATA + "; from sklearn.tree import DecisionTreeRegressor; "
    "from sklearn_xai.tree import TreeShapExplainer; "
    "TreeShapExplainer(DecisionTreeRegressor(max_depth=3)).fit(X, y).score(X[:5])",
    _DATA + "; from sklearn.linear_model import LinearRegression; "
    "from sklearn_xai.shapley import ShearExplainer; "
    "ShearExplainer(LinearRegression(), random_state=0).fit(X, y).score(X[:5])",
], ids=["TreeShapExplainer", "ShearExplainer"])
def test_an_attribution_score_loads_no_metrics_or_recourse_module(statement):
    # score() is the faithfulness correlation of the low module _faithfulness
    loaded = _loaded_after(statement)
    assert "sklearn_xai._faithfulness" in loaded
    bad = [m for m in loaded
           if m.startswith(("sklearn_xai.recourse", "sklearn_xai.metrics", "torch"))]
    assert not bad, f"score() loads {bad}"


def test_recourse_metrics_load_on_first_use():
    loaded = _loaded_after("import sklearn_xai.metrics as m; "
                           "assert set(m._RECOURSE) <= set(m.__all__) <= set(dir(m)); "
                           "from sklearn_xai.metrics import validity, ynn; "
                           "assert m.validity is validity")
    assert "sklearn_xai.recourse._metrics" in loaded


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _subpackage(module):
    """'sklearn_xai.tree._explainer' -> 'tree'; a top-level module -> '' (the top layer)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else ""


def _private_imports():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("sklearn_xai"):
                continue
            home = _subpackage(target + ".name")
            for alias in node.names:
                if alias.name.startswith("_") and home != _subpackage(module):
                    found.append(f"{module}: from {target} import {alias.name}")
    return found


def test_no_module_imports_a_private_name_of_another_subpackage():
    assert _private_imports() == []


def test_the_private_import_walk_finds_a_planted_import(tmp_path, monkeypatch):
    # the walk itself can fail: a planted cross-subpackage private import is found
    import tests.test_layers as me

    fake = tmp_path / "sklearn_xai"
    (fake / "tree").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "tree" / "__init__.py").write_text("")
    (fake / "tree" / "_x.py").write_text("from ..base import _hidden\nfrom ..base import shown\n")
    monkeypatch.setattr(me, "PACKAGE", fake)
    assert me._private_imports() == ["sklearn_xai.tree._x: from sklearn_xai.base import _hidden"]
