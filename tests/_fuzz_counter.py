"""Session-wide count of the generated inputs of ``test_fuzz_inputs.py``.

``tests/conftest.py`` prints the totals in the terminal summary.
"""

from collections import Counter

CASES = Counter()  # (explainer, method) -> number of generated inputs tried
# (explainer, outcome) -> inputs that ended so: "worked", "raised ValueError", ...
OUTCOMES = Counter()
