import os

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

settings.register_profile(
    "ci", deadline=None, derandomize=True, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def pytest_terminal_summary(terminalreporter):
    """Report how many generated bad inputs the fuzz suite threw at the explainers."""
    import sys

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
