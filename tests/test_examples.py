"""Smoke test: every script in ``examples/`` runs to completion, headless.

Each script runs in a fresh interpreter (``sys.executable``) with ``MPLBACKEND=Agg``,
the repository root on ``PYTHONPATH`` and a temporary working directory, under a
timeout. The documentation build (``make -C doc html``) runs the same scripts through
sphinx-gallery; this test keeps them working in CI when the docs are not built.

Scripts that take more than about a minute on a 2-core machine are listed in ``SLOW``
and only run with ``-m slow``.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

# Scripts over ~60 s, with what they took on the 2-vCPU development machine (shared by
# other jobs, so wall times are inflated; CPU time is user + system of the subprocess).
# "Slow" is judged by CPU time, which is what a dedicated runner would see.
# Measured 2026-11-30 on the merge of all method branches, warm numba cache:
#   plot_mace_adult.py        wall 304 s, CPU 78 s   (slow)
#   plot_treeshap_lightgbm.py wall  35 s, CPU 13 s   (+ ~1-2 min numba compile, cold cache)
#   plot_knockoff_attack.py   wall  71 s, CPU 11 s
#   plot_shear_skorch.py      wall  28 s, CPU  9 s
#   plot_p2ce_front.py        wall  15 s, CPU  5 s
#   quickstart_demo.py        wall 139 s, CPU 41 s   (43 s wall when the machine was quieter)
# Measured 2026-12-02, warm numba cache:
#   plot_attribution_plots.py wall  10 s, CPU  4 s
#   plot_frontier_shapley.py  wall   8 s, CPU  4 s
SLOW = {"plot_mace_adult.py"}

TIMEOUT = 900  # seconds per script; generous for shared CI machines


def _params():
    for path in EXAMPLES:
        marks = [pytest.mark.slow] if path.name in SLOW else []
        yield pytest.param(path, id=path.name, marks=marks)


def test_examples_found():
    names = [p.name for p in EXAMPLES]
    assert "quickstart_demo.py" in names, names


def test_gallery_executes_every_example():
    """The docs build (sphinx-gallery) must run the same scripts as this smoke test."""
    import ast
    import re

    conf = ast.parse((ROOT / "doc" / "conf.py").read_text())
    gallery = next(node.value for node in ast.walk(conf) if isinstance(node, ast.Assign)
                   and any(getattr(t, "id", None) == "sphinx_gallery_conf"
                           for t in node.targets))
    settings = ast.literal_eval(ast.unparse(gallery).replace("os.path.join(ROOT, 'examples')",
                                                              "'examples'"))
    pattern, ignore = settings["filename_pattern"], settings.get("ignore_pattern", r"^$")
    skipped = [p.name for p in EXAMPLES
               if not re.search(pattern, str(p)) or re.search(ignore, str(p))]
    assert not skipped, f"sphinx-gallery would not execute {skipped} ({pattern!r})"


@pytest.mark.parametrize("script", list(_params()))
def test_example_runs(script, tmp_path):
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script.name} did not finish within {TIMEOUT} s; output so far:\n"
                    f"{(exc.stdout or '')[-2000:]}\n{(exc.stderr or '')[-2000:]}")
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, (
        f"{script.name} exited with {proc.returncode} after {elapsed:.1f} s\n"
        f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-5000:]}")
    assert "Traceback (most recent call last)" not in proc.stderr, proc.stderr[-5000:]
