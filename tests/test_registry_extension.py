"""Adding an explainer as "Writing an explainer" (doc/extending.rst) says is enough.

A copy of the package and its tests gets the page's explainer
(``doc/extending/baseline_shapley.py``) exactly as the page says -- the module placed in the
package with its ``_cli_name`` and ``_label`` declared on the class, one line in
``sklearn_xai/_registry.py``, one line in ``doc/api.rst``, nothing else -- and then, in
subprocesses with the copy first on ``sys.path``: every cross-cutting test (scikit-learn's
checks, the contract, the fuzz, row-invariance, Dask, result-index and command-line tests,
and the API page check) collects and passes tests for it, and ``python -m sklearn_xai
explain`` / ``report --explainer baseline`` run it and show its values.
"""

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "doc" / "extending.rst"

# what the page says to write (checked against the page below, so that they stay the same)
MODULE = "sklearn_xai/shapley/_baseline.py"
DECLARATIONS = '''    _cli_name = "baseline"
    _label = "Baseline Shapley"
'''
REGISTRY_LINE = '    "BaselineShapley": "sklearn_xai.shapley._baseline",\n'
API_LINE = "   BaselineShapley\n"

# the cross-cutting test files: each must pick the new explainer up from the registry
CROSS_CUTTING = ["test_common.py", "test_fuzz_inputs.py", "test_row_invariance.py",
                 "test_dask.py", "test_faults_results.py", "test_faults_cli.py"]


def _ignore(_, names):
    return [n for n in names if n in ("__pycache__", ".pytest_cache") or n.endswith(
        (".pyc", ".nbi", ".nbc"))]


def _copy_with_the_page_explainer(dest):
    """The package, its tests, pyproject.toml and the doc pages in ``dest``, plus the
    page's explainer added the page's way; returns the files that differ from the repo."""
    shutil.copytree(ROOT / "sklearn_xai", dest / "sklearn_xai", ignore=_ignore)
    shutil.copytree(ROOT / "tests", dest / "tests", ignore=_ignore)
    shutil.copytree(ROOT / "doc" / "extending", dest / "doc" / "extending", ignore=_ignore)
    shutil.copy2(ROOT / "doc" / "api.rst", dest / "doc" / "api.rst")
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    # 1. the module, in the package, with the class's command-line name and label
    source = (ROOT / "doc" / "extending" / "baseline_shapley.py").read_text()
    anchor = "    def __init__(self"
    assert source.count(anchor) == 1
    source = source.replace(anchor, DECLARATIONS + "\n" + anchor)
    (dest / MODULE).write_text(source)
    # 2. one line in the registry
    registry = dest / "sklearn_xai" / "_registry.py"
    text = registry.read_text()
    anchor = "EXPLAINER_MODULES = {\n"
    assert text.count(anchor) == 1
    end = text.index("\n}\n", text.index(anchor))
    registry.write_text(text[:end + 1] + REGISTRY_LINE + text[end + 1:])
    # 3. one line in the API page, in the explainers' autosummary
    api = dest / "doc" / "api.rst"
    text = api.read_text()
    anchor = "   P2CERecourse\n"
    assert text.count(anchor) == 1
    api.write_text(text.replace(anchor, anchor + API_LINE))
    changed = []
    for path in sorted(p for p in dest.rglob("*") if p.is_file()):
        rel = path.relative_to(dest)
        orig = ROOT / rel
        if not orig.exists() or orig.read_bytes() != path.read_bytes():
            changed.append(str(rel))
    return changed


def _env(copy):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    env["SKLEARN_XAI_WARMUP"] = "0"  # no TreeSHAP kernel is needed
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    return env


def _run(args, copy, timeout=600):
    return subprocess.run([sys.executable, *args], cwd=copy, env=_env(copy),
                          capture_output=True, text=True, timeout=timeout)


def _ours(name):
    """A test node of the page's explainer (not the contract's own ToyBaselineShapley)."""
    return ("BaselineShapley" in name and "ToyBaselineShapley" not in name) or \
        "[baseline]" in name


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    dest = tmp_path_factory.mktemp("extended")
    changed = _copy_with_the_page_explainer(dest)
    # the page's three places, nothing else
    assert sorted(changed) == sorted(["doc/api.rst", MODULE, "sklearn_xai/_registry.py"]), \
        changed
    proc = _run(["-c", "import sklearn_xai, sklearn_xai._registry as r; "
                       "print(sklearn_xai.__file__); print(list(r.EXPLAINER_MODULES))"], dest)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(str(dest)), proc.stdout  # the copy, not the repository
    assert "BaselineShapley" in proc.stdout
    return dest


def test_the_page_says_what_this_test_does():
    page = PAGE.read_text()
    for line in (*DECLARATIONS.splitlines(), REGISTRY_LINE.rstrip("\n"),
                 API_LINE.rstrip("\n")):
        assert line.strip() in page, line
    assert MODULE in page


def test_every_cross_cutting_test_picks_up_the_new_explainer(copy):
    junit = copy / "junit.xml"
    files = [f"tests/{f}" for f in CROSS_CUTTING] + ["tests/test_api_docs.py"]
    proc = _run(["-m", "pytest", *files, "-q", "-p", "no:cacheprovider", "-k",
                 "(BaselineShapley or baseline) and not Toy or test_api_docs",
                 f"--junitxml={junit}"], copy)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    per_file = {f: [] for f in CROSS_CUTTING}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name, module = case.get("name"), case.get("classname", "")
        if any(case.find(tag) is not None for tag in ("failure", "error")):
            raise AssertionError(f"{module}::{name} failed")
        if case.find("skipped") is not None:  # e.g. scikit-learn's array API check
            continue
        for f in CROSS_CUTTING:
            if module.endswith(f.removesuffix(".py")) and _ours(name):
                per_file[f].append(name)
    assert all(per_file.values()), {f: len(v) for f, v in per_file.items()}
    # scikit-learn's checks, the contract (clone, pickle, Pipeline, GridSearchCV), the fuzz
    # of fit and of explain/transform/score, and the command line
    names = [n for v in per_file.values() for n in v]
    assert sum("test_sklearn_compatible" in n for n in names) > 20
    assert any("test_contract" in n for n in names)
    assert any("test_fuzz_fit[" in n for n in names)
    assert any("test_fuzz_fitted[" in n for n in names)
    assert any("runs_on_the_command_line[baseline]" in n for n in names)
    assert re.search(r"\d+ passed", proc.stdout)


def test_the_command_line_runs_the_new_explainer(copy):
    import joblib
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(80, 3)), columns=["age", "income", "debt"])
    y = (X["age"] - X["income"] + 0.3 * X["debt"] > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    joblib.dump(model, copy / "model.joblib")
    X.to_csv(copy / "data.csv", index=False)
    common = ["--model", "model.joblib", "--trust-model", "--data", "data.csv"]
    proc = _run(["-m", "sklearn_xai", "explain", *common, "--explainer", "baseline",
                 "--rows", "5", "--out", "phi.csv"], copy)
    assert proc.returncode == 0, proc.stderr
    assert "fit Baseline Shapley on 80 rows" in proc.stderr
    got = pd.read_csv(copy / "phi.csv", index_col="row")
    assert list(got.columns) == ["base_value:proba(1)", "age", "income", "debt"]
    # exact Shapley values: base + sum is the model's own probability
    np.testing.assert_allclose(got.to_numpy().sum(axis=1),
                               model.predict_proba(X.iloc[:5])[:, 1], atol=1e-12)
    assert not np.allclose(got[["age", "income", "debt"]].to_numpy(), 0)

    proc = _run(["-m", "sklearn_xai", "report", *common, "--explainer", "baseline",
                 "--rows", "2", "--global-rows", "10", "--out", "r.html"], copy)
    assert proc.returncode == 0, proc.stderr
    assert "Baseline Shapley on 2 rows" in proc.stderr
    text = (copy / "r.html").read_text(encoding="utf-8")
    summary = text[text.index('id="summary"'):text.index('id="treeshap-global"')]
    assert "Baseline Shapley" in summary
    section = text[text.index('id="attribution-comparison"'):text.index('id="counterfactuals"')]
    assert "Baseline Shapley (proba(1)) [rank]" in section
    # the values shown are the ones explain wrote
    shown = re.findall(r"<td>([+-]\d+\.\d{4}) \[\d\]</td>", section)
    assert len(shown) == 2 * 3
    first = sorted(got.iloc[0, 1:].to_numpy(), key=abs, reverse=True)
    np.testing.assert_allclose([float(v) for v in shown[:3]], first, atol=1e-4)
