import os

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

settings.register_profile(
    "ci", deadline=None, derandomize=True, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# ------------------------------------------------------------------------- numba warm-up
# TreeSHAP's numba kernels compile on first use: minutes on a loaded machine with an empty
# NUMBA_CACHE_DIR (a cold first explanation took 474 s at load 12). pytest-timeout's
# per-test timeout covers a test's setup, fixtures included (unless timeout_func_only), so
# the kernels are compiled here, in pytest_sessionstart, before any test and outside every
# per-test timeout, which is then left to catch hangs. The compiled kernels stay in this
# process, and in NUMBA_CACHE_DIR (cache=True) for the workers and the next run, which then
# only loads them. SKLEARN_XAI_WARMUP=0 skips it (a quick run that needs no tree kernel).

_WARMUP = {}


def warm_numba_kernels():
    """Explain tiny tree models with every TreeSHAP kernel: path-dependent and interventional
    (pattern tables, and the path / pairwise algorithms that max_table_mib=0 selects), SHAP
    values and interactions, float64 and float32 inputs, missing values and categorical
    splits, for scikit-learn, XGBoost and LightGBM. Returns the seconds it took and the
    kernels' compiled signature counts."""
    import time
    import warnings

    import numpy as np
    import pandas as pd
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai.tree import TreeShapExplainer

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4))
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=40)
    yc = (y > 0).astype(int)
    Xn = X.copy()
    Xn[::7, 1] = np.nan
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    frame["k"] = pd.Categorical(rng.choice(["u", "v", "w"], size=40))
    models = [
        (RandomForestRegressor(n_estimators=3, max_depth=4, random_state=0).fit(X, y), X),
        (RandomForestClassifier(n_estimators=3, max_depth=4, random_state=0).fit(X, yc), X),
        (HistGradientBoostingRegressor(max_iter=5, random_state=0).fit(Xn, y), Xn),
        (HistGradientBoostingClassifier(max_iter=5, categorical_features="from_dtype",
                                        random_state=0).fit(frame, yc), frame),
    ]
    try:
        import xgboost

        models.append((xgboost.XGBRegressor(n_estimators=5, max_depth=3, n_jobs=1)
                       .fit(Xn, y), Xn))
    except ImportError:
        pass
    try:
        import lightgbm

        models.append((lightgbm.LGBMClassifier(n_estimators=5, num_leaves=6, verbose=-1,
                                               n_jobs=1).fit(Xn, yc), Xn))
    except ImportError:
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model, data in models:
            rows = data[:5]
            for kw in ({}, {"max_table_mib": 0}, {"imputation": "marginal"},
                       {"imputation": "marginal", "max_table_mib": 0}):
                explainer = TreeShapExplainer(FrozenEstimator(model), **kw).fit(data)
                explainer.explain(rows)
                explainer.explain_interactions(rows)
                if not isinstance(rows, pd.DataFrame):
                    explainer.explain(rows.astype(np.float32))
    from sklearn_xai.tree import _kernels

    compiled = {name: len(f.signatures) for name, f in vars(_kernels).items()
                if hasattr(f, "signatures") and f.signatures}
    return time.perf_counter() - t0, compiled


def pytest_sessionstart(session):
    if os.environ.get("SKLEARN_XAI_WARMUP", "1") == "0":
        return
    seconds, compiled = warm_numba_kernels()
    _WARMUP.update(seconds=seconds, kernels=len(compiled),
                   signatures=sum(compiled.values()), compiled=compiled)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def pytest_terminal_summary(terminalreporter):
    """Report the numba warm-up, and how many generated bad inputs the fuzz suite threw at
    the explainers."""
    import sys

    if _WARMUP:
        terminalreporter.write_line(
            f"numba warm-up (before the tests, outside their timeouts): "
            f"{_WARMUP['seconds']:.1f} s, {_WARMUP['signatures']} signatures of "
            f"{_WARMUP['kernels']} TreeSHAP kernels (NUMBA_CACHE_DIR="
            f"{os.environ.get('NUMBA_CACHE_DIR', 'unset')})")

    counter = sys.modules.get("tests._fuzz_counter")
    if counter is None or not counter.CASES:
        return
    cases = counter.CASES
    terminalreporter.section("fuzzed inputs")
    by_explainer = {}
    for (name, method), k in sorted(cases.items()):
        by_explainer.setdefault(name, []).append(f"{method}={k}")
    for name, parts in by_explainer.items():
        terminalreporter.write_line(f"{name}: {', '.join(parts)}")
    terminalreporter.write_line(f"total generated inputs: {sum(cases.values())}")
    outcomes = {}
    for (name, outcome), k in sorted(counter.OUTCOMES.items()):
        outcomes.setdefault(name, []).append(f"{outcome}={k}")
    for name, parts in outcomes.items():
        terminalreporter.write_line(f"{name} ended: {', '.join(parts)}")
