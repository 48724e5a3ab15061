"""The command line's progress (``--verbose``) and its model loading: skops.io imported
without torch or Dask, and the step that imports it says so."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import sklearn_xai._progress as progress_module
from sklearn_xai.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


def _mixed(n=80):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    X["k"] = pd.Categorical(np.where(rng.random(n) > 0.5, "u", "v"))
    y = (X["a"] + (X["k"] == "u") > 0.5).astype(int)
    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["k"]),
                                                  remainder="passthrough"),
                          LogisticRegression()).fit(X, y)
    return X, y, model


def test_skops_io_is_imported_without_torch_or_dask():
    pytest.importorskip("skops.io")
    code = """
import sys
from sklearn_xai._report import import_skops_io
sio = import_skops_io()
heavy = sorted(m for m in ("torch", "dask", "cupy") if m in sys.modules)
assert not heavy, heavy
# skops's list of trusted scikit-learn estimators is the one it computes without the hook
from skops.io._trusted_types import SKLEARN_ESTIMATOR_TYPE_NAMES as got
from skops.io._utils import get_type_name
from sklearn.utils import all_estimators
want = [get_type_name(c) for _, c in all_estimators()
        if get_type_name(c).startswith("sklearn.")]
assert got == want and len(got) > 100, (len(got), len(want))
assert import_skops_io() is sio
try:  # the adapters import as usual afterwards
    import sklearn.externals.array_api_compat.torch  # noqa: F401
except ImportError:
    assert "torch" not in sys.modules
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_load_step_says_it_imports_skops_and_no_torch_is_loaded(tmp_path):
    sio = pytest.importorskip("skops.io")
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    y = (X["a"] > 0).astype(int)
    model = HistGradientBoostingClassifier(max_iter=5, random_state=0).fit(X, y)
    sio.dump(model, tmp_path / "m.skops")
    X.to_csv(tmp_path / "d.csv", index=False)
    trust = [a for t in sio.get_untrusted_types(file=tmp_path / "m.skops")
             for a in ("--trust-type", t)]
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sklearn_xai", "explain", "--model",
         str(tmp_path / "m.skops"), *trust, "--data", str(tmp_path / "d.csv"), "--rows", "5",
         "--out", str(tmp_path / "v.csv")], capture_output=True, text=True, cwd=ROOT,
        check=False)
    assert out.returncode == 0, out.stderr
    steps = [line for line in out.stderr.splitlines() if line.startswith("[")]
    assert any(line.endswith(f"] import skops + load {tmp_path / 'm.skops'}")
               for line in steps), steps
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()
                if line.startswith("import time:")}
    assert "skops.io" in imported
    heavy = sorted(m for m in imported if m.split(".")[0] in ("torch", "dask"))
    assert not heavy, heavy[:5]


def test_the_knockoff_fit_shows_its_progress_by_default(monkeypatch, capfd):
    from sklearn_xai._report import Progress, explain_rows, make_explainer

    monkeypatch.setattr(progress_module, "_SHOW_AFTER_S", 0.0)
    X, _, model = _mixed()
    explainer = make_explainer("knockoff", model, X, seed=0, verbose=1)
    err = capfd.readouterr().err
    assert explainer.verbose == 1 and "SequentialKnockoffs.fit" in err and "4/4" in err
    make_explainer("knockoff", model, X, seed=0, verbose=0)
    assert capfd.readouterr().err == ""
    # the explain steps: the command's own bar (on its stream), the explainer silent
    import io

    stream = io.StringIO()
    explain_rows("knockoff", model, X, X.iloc[:4], Progress(stream, verbose=1), seed=0)
    err = capfd.readouterr().err
    assert "SequentialKnockoffs.fit" in err and "KnockoffSHAP:" not in err
    assert "4/4 rows" in stream.getvalue()


@pytest.mark.parametrize("value", ["3", "-1", "x"])
def test_verbose_takes_0_1_or_2(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["explain", "--out", "v.csv", "--verbose", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--verbose" in err[0], err


def test_a_running_step_is_named_on_a_terminal_only():
    import io

    from sklearn_xai._report import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, running in ((Terminal(), True), (io.StringIO(), False)):
        progress = Progress(stream)
        with progress.step("fit TreeSHAP on 300 rows"):
            shown = stream.getvalue()
        assert (shown == "  fit TreeSHAP on 300 rows ...\r") is running
        assert shown == "" or running
        # the timing line replaces it (the line is cleared first on a terminal)
        last = stream.getvalue()[len(shown):]
        assert last.endswith("] fit TreeSHAP on 300 rows\n")
        assert last.startswith("\r\033[K[") is running
