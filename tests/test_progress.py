"""``verbose`` of every explainer: silent at 0, a progress bar at 1, per-batch timings at 2,
the same results whatever it is; and the thread limits of the explainers' own workers."""

import os
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LinearRegression, LogisticRegression

import sklearn_xai._progress as progress_module
from sklearn_xai._progress import Progress
from sklearn_xai.base import RecourseMixin

from ._instances import CLASSES, fast_params, model_for


@pytest.fixture
def show_at_once(monkeypatch):
    """Bars appear from the first update (the 2-s threshold patched to 0)."""
    monkeypatch.setattr(progress_module, "_SHOW_AFTER_S", 0.0)


@pytest.fixture
def without_tqdm(monkeypatch):
    monkeypatch.setattr(progress_module, "_tqdm", lambda: None)


def _data(n=40):
    return make_classification(n_samples=n, n_features=4, n_informative=3, n_redundant=0,
                               random_state=1)


def _case(cls, verbose):
    """A fitted ``cls`` (fast settings, batches of 8 rows where it has them), the rows it
    explains and the targets a global explainer needs."""
    X, y = _data()
    params = fast_params(cls)
    if "batch_size" in cls._get_param_names():
        params["batch_size"] = 8
    if "time_limit" in params:  # a search cut by the clock would differ between runs
        params["time_limit"] = None
    exp = cls(model_for(cls), verbose=verbose, **params).fit(X, y)
    if issubclass(cls, RecourseMixin):
        rejected = X[model_for(cls).fit(X, y).predict(X) == 0][:3]
        return exp, rejected, None
    return exp, X[:20], (None if hasattr(cls, "transform") else y[:20])


def _result(exp, X, y):
    """What the explainer computes, as arrays (NaN where a recourse search found none)."""
    if y is not None:
        out = exp.explain(X, y)
        return np.concatenate([np.asarray(out["values"]), np.asarray(out["std"])])
    return np.asarray(exp.transform(X), dtype=float)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_explainer_documents_and_takes_verbose(name):
    cls = CLASSES[name]
    assert cls().get_params()["verbose"] == 0
    assert re.search(r"^    verbose : int, default=0$", cls.__doc__, re.MULTILINE), name
    with pytest.raises(ValueError, match="verbose"):
        cls(model_for(cls), verbose="loud").fit(*_data())


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_verbose_shows_progress_and_never_changes_the_results(name, show_at_once, capfd):
    cls = CLASSES[name]
    results, errs = {}, {}
    for verbose in (0, 1, 2):
        exp, X, y = _case(cls, verbose)
        capfd.readouterr()  # the fit's output is not what is checked here
        results[verbose] = _result(exp, X, y)
        out, errs[verbose] = capfd.readouterr()
        assert out == ""
    assert errs[0] == "", "verbose=0 wrote to stderr"
    n = len(X)
    total = f"{2}/{2}" if y is not None else f"{n}/{n}"  # KnockoffSAGE: its 2 rounds
    for verbose in (1, 2):
        assert name in errs[verbose] and total in errs[verbose], errs[verbose]
    timing = r" in \d+\.\d{3} s"
    assert not re.search(timing, errs[1])
    assert re.search(r"(rows? [\d-]+|round \d|\d+ rows)" + timing, errs[2]), errs[2]
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_array_equal(results[2], results[0])


def test_a_short_call_shows_no_bar(capfd):
    from sklearn_xai.shapley import ShearExplainer

    X, y = _data()
    exp = ShearExplainer(LogisticRegression(), n_evals=4, batch_size=8, random_state=0,
                         verbose=1).fit(X, y)
    original = progress_module._SHOW_AFTER_S
    try:
        progress_module._SHOW_AFTER_S = 1e9  # "longer than the threshold" never happens
        exp.explain(X)
    finally:
        progress_module._SHOW_AFTER_S = original
    assert capfd.readouterr().err == ""


def test_the_plain_line_without_tqdm(show_at_once, without_tqdm, capsys):
    from sklearn_xai.shapley import ShearExplainer

    X, y = _data()
    exp = ShearExplainer(LogisticRegression(), n_evals=4, batch_size=8, random_state=0,
                         verbose=2).fit(X, y)
    capsys.readouterr()
    exp.explain(X)
    lines = capsys.readouterr().err.splitlines()
    # one line per batch (verbose=2), the bar once at the first update and once at the end
    # (stderr is not a terminal here: no redrawing)
    batches = [f"ShearExplainer: rows {a}-{min(a + 8, 40) - 1} in" for a in range(0, 40, 8)]
    assert [line[:len(b)] for line, b in zip(
        [li for li in lines if " in " in li], batches, strict=True)] == batches
    bars = [li for li in lines if li.startswith("ShearExplainer: ") and "%" in li]
    assert bars[0].startswith("ShearExplainer:  20% 8/40 rows [")
    assert bars[-1].startswith("ShearExplainer: 100% 40/40 rows [00:00<00:00, ")
    assert bars[-1].endswith(" rows/s]")
    assert len(bars) == 2


def test_a_bar_inside_an_open_bar_is_silent(show_at_once, capsys):
    with Progress(3, verbose=1, desc="outer", unit="rounds") as outer:
        with Progress(10, verbose=2, desc="inner") as inner:
            inner.update(10, seconds=0.5, what="rows 0-9")
        assert inner.silent and not outer.silent
        outer.update(3)
    err = capsys.readouterr().err
    assert "outer" in err and "3/3" in err and "inner" not in err


def test_the_knockoff_sampler_fit_shows_its_columns(show_at_once, capfd):
    from sklearn_xai.shapley import KnockoffSHAP

    X, y = _data(60)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["k"] = pd.Categorical(np.where(X[:, 0] > 0, "u", "v"))
    model = LogisticRegression()
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["k"]),
                                                  remainder="passthrough"), model)
    values = {}
    for verbose in (0, 1):
        exp = KnockoffSHAP(model, n_knockoffs=2, algorithm="permutation", n_evals=4,
                           random_state=0, verbose=verbose).fit(frame, y)
        err = capfd.readouterr().err
        assert type(exp.sampler_).__name__ == "SequentialKnockoffs"
        assert exp.sampler_.verbose == verbose
        if verbose:
            assert "SequentialKnockoffs.fit" in err and "5/5" in err
        else:
            assert err == ""
        values[verbose] = exp.explain(frame.iloc[:5]).values
    np.testing.assert_array_equal(values[1], values[0])


# -- threads ------------------------------------------------------------------------------


class _ThreadRecorder(LinearRegression):
    """A linear model whose ``predict`` appends where it runs (the main thread of the
    test's process or a worker) and the OpenMP and BLAS thread counts it runs with to a
    file (one line per call, from any process)."""

    def __init__(self, log=None):
        self.log = log
        super().__init__()

    def predict(self, X):
        import os
        import threading

        from threadpoolctl import threadpool_info

        where = "main" if os.getpid() == self.pid_ and \
            threading.current_thread() is threading.main_thread() else "worker"
        counts = {}
        for lib in threadpool_info():
            counts.setdefault(lib["user_api"], set()).add(lib["num_threads"])
        with open(self.log, "a") as fh:
            fh.write(f"{where} {sorted(counts.get('openmp', []))} "
                     f"{sorted(counts.get('blas', []))}\n")
        return super().predict(X)


def _recorded(path):
    lines = path.read_text().splitlines()
    path.write_text("")
    return set(lines)


@pytest.mark.parametrize("backend", ["loky", "threading"])
def test_workers_run_the_model_on_one_thread_and_n_jobs_none_leaves_the_settings(
        tmp_path, backend):
    import joblib
    import sklearn.ensemble  # noqa: F401  (loads scikit-learn's OpenMP runtime)
    from sklearn.frozen import FrozenEstimator
    from threadpoolctl import threadpool_info, threadpool_limits

    from sklearn_xai.shapley import ShearExplainer

    X, _ = _data()
    log = tmp_path / "threads.txt"
    model = _ThreadRecorder(str(log)).fit(X, X[:, 0] - X[:, 1])
    model.pid_ = os.getpid()
    exp = ShearExplainer(FrozenEstimator(model), n_evals=4, batch_size=8,
                         random_state=0).fit(X)
    _recorded(log)
    with threadpool_limits(limits=3):
        before = threadpool_info()
        exp.explain(X)  # n_jobs=None: the user's settings as they are
        assert _recorded(log) == {"main [3] [3]"}
        serial = exp.transform(X)
        exp.set_params(n_jobs=2)
        with joblib.parallel_config(backend=backend):
            parallel = exp.transform(X)
        # the batches' model calls on one thread in the workers; the calls made before
        # the batches (in the caller's thread) with the caller's settings
        assert {line for line in _recorded(log) if line.startswith("worker")} == \
            {"worker [1] [1]"}
        # and the caller's limits are back
        assert [lib["num_threads"] for lib in threadpool_info()] == \
            [lib["num_threads"] for lib in before]
    np.testing.assert_allclose(parallel, serial, rtol=1e-12, atol=1e-15)


def test_map_tasks_streams_results_and_enters_the_contexts():
    # _map_tasks' on_result gets every result once (workers finish in any order) and the
    # returned list keeps none; serial_context wraps the loop without workers and
    # worker_context each task in a worker; limit_threads=False leaves the thread limits
    import contextlib
    import threading

    from sklearn_xai.shapley import ShearExplainer

    state = threading.local()
    entered = []

    @contextlib.contextmanager
    def tag(name):
        entered.append(name)
        state.name = name
        try:
            yield
        finally:
            state.name = None

    def task(rows, scale):
        return rows.start * scale, getattr(state, "name", None)

    items = [slice(i, i + 3) for i in range(0, 30, 3)]
    for n_jobs, expect in ((None, "serial"), (2, "worker")):
        exp = ShearExplainer(n_jobs=n_jobs)
        entered.clear()
        got = {}
        out = exp._map_tasks(task, items, (10,), on_result=got.__setitem__,
                             serial_context=lambda: tag("serial"),
                             worker_context=lambda: tag("worker"),
                             limit_threads=False, prefer="threads")
        assert out == [None] * len(items)
        assert got == {i: (s.start * 10, expect) for i, s in enumerate(items)}
        assert entered == (["serial"] if n_jobs is None else ["worker"] * len(items))
        # without on_result the list keeps the results, in order
        assert exp._map_tasks(task, items, (1,), prefer="threads")[3] == (9, None)
