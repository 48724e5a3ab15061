"""The numba cache folder (user cache by default, NUMBA_CACHE_DIR wins) and the one-line
note on stderr while numba compiles (verbose >= 1 only)."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest

from sklearn_xai import _compile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, env_update, drop=("NUMBA_CACHE_DIR",)):
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_update, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return out.stdout.strip().splitlines()[-1].split(" ")


def test_default_cache_dir_is_in_the_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _compile.default_cache_dir() == str(tmp_path / "xdg" / "sklearn_xai" / "numba")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _compile.default_cache_dir() == str(
        tmp_path / "home" / ".cache" / "sklearn_xai" / "numba")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert _compile.default_cache_dir() == str(
        tmp_path / "home" / "Library" / "Caches" / "sklearn_xai" / "numba")
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert _compile.default_cache_dir() == str(tmp_path / "local" / "sklearn_xai" / "numba")


def test_use_user_cache_dir_keeps_a_users_setting(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert _compile.use_user_cache_dir() == str(tmp_path / "mine")
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "mine")


# a cached kernel of the package, compiled in a fresh process: where numba put its cache
_WHERE = ("import sklearn_xai, numba\n"
          "from sklearn_xai.tree._ensemble import _preorder_jit\n"
          "import numpy as np\n"
          "n = np.empty(3, dtype=np.int64)\n"
          "_preorder_jit(np.array([1, -1, -1]), np.array([2, -1, -1]), 0, n, n.copy())\n"
          "print(numba.config.CACHE_DIR, _preorder_jit._cache._cache_path)")


def test_import_points_numba_at_a_writable_user_cache(tmp_path):
    xdg = tmp_path / "xdg"
    config_dir, cache_path = _run(_WHERE, {"XDG_CACHE_HOME": str(xdg)})
    expected = xdg / "sklearn_xai" / "numba"
    assert config_dir == str(expected)
    assert cache_path.startswith(str(expected))
    # the kernel's machine code was written there, not into the package
    written = [f for _, _, files in os.walk(expected) for f in files]
    assert any(f.startswith("_ensemble._preorder_jit") and f.endswith(".nbi")
               for f in written), written


def test_numba_cache_dir_overrides_the_default(tmp_path):
    mine = tmp_path / "mine"
    config_dir, cache_path = _run(_WHERE, {"XDG_CACHE_HOME": str(tmp_path / "xdg"),
                                           "NUMBA_CACHE_DIR": str(mine)}, drop=())
    assert config_dir == str(mine)
    assert cache_path.startswith(str(mine))
    assert not (tmp_path / "xdg").exists()


@pytest.fixture
def fresh_notice(monkeypatch):
    """A process where the note has not been written yet, and a threshold of 0 s."""
    monkeypatch.setattr(_compile, "_noted", False)
    monkeypatch.setattr(_compile, "_NOTE_AFTER_S", 0.0)


def _compile_something():
    from numba import njit

    @njit  # a new function: numba compiles it now
    def add_one(x):
        return x + 1.0

    return add_one(np.float64(1.0))


def test_compile_notice_once_and_only_when_verbose(fresh_notice):
    quiet = io.StringIO()
    with _compile.compile_notice(0, stream=quiet):
        _compile_something()
    assert quiet.getvalue() == ""
    loud = io.StringIO()
    with _compile.compile_notice(1, stream=loud):
        assert _compile_something() == 2.0
    lines = loud.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("sklearn_xai: compiling numba kernels for their first use")
    assert os.environ.get("NUMBA_CACHE_DIR", "numba's default") in lines[0]
    again = io.StringIO()
    with _compile.compile_notice(2, stream=again):  # once per process
        _compile_something()
    assert again.getvalue() == ""


def test_compile_notice_is_silent_without_compilation(monkeypatch):
    monkeypatch.setattr(_compile, "_noted", False)
    monkeypatch.setattr(_compile, "_NOTE_AFTER_S", 0.5)
    out = io.StringIO()
    with _compile.compile_notice(1, stream=out):
        np.ones(3).sum()  # no numba
    assert out.getvalue() == ""


def test_explainers_say_so_on_stderr_with_verbose(fresh_notice, capfd):
    from sklearn.frozen import FrozenEstimator
    from sklearn.tree import DecisionTreeRegressor

    from sklearn_xai.tree import TreeShapExplainer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    model = FrozenEstimator(DecisionTreeRegressor(max_depth=2).fit(X, X[:, 0]))
    TreeShapExplainer(model, verbose=0).fit(X).explain(X[:2])
    _compile_something()
    assert capfd.readouterr().err == ""
    # the package's kernels are already compiled (cached): a throwaway function compiled
    # inside the explainer's fit stands for them
    import sklearn_xai.tree._explainer as tree_explainer

    original = tree_explainer.TreeShapExplainer._fit

    def fit_that_compiles(self, X, y):
        _compile_something()
        return original(self, X, y)

    mp = pytest.MonkeyPatch()
    mp.setattr(tree_explainer.TreeShapExplainer, "_fit", fit_that_compiles)
    try:
        TreeShapExplainer(model, verbose=1).fit(X)
    finally:
        mp.undo()
    err = capfd.readouterr().err
    assert err.count("sklearn_xai: compiling numba kernels") == 1
