"""The runnable example of ``doc/testing.rst`` runs as written, and catches a broken copy."""

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

PAGE = Path(__file__).resolve().parents[1] / "doc" / "testing.rst"


def _example_namespace():
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", text)
    block = next(b for b in blocks if "class MedianShapley" in b)
    namespace = {}
    exec(compile(textwrap.dedent(block), str(PAGE), "exec"), namespace)
    return namespace


def test_the_page_example_passes_as_written():
    namespace = _example_namespace()
    namespace["test_median_shapley_passes_the_axioms"]()
    namespace["test_median_shapley_on_drawn_models"]()


def test_the_page_example_catches_a_sign_flip():
    namespace = _example_namespace()
    base = namespace["MedianShapley"]

    class Flipped(base):
        def _explain(self, X):
            att = super()._explain(X)
            att.values = -att.values
            return att

    X = np.random.default_rng(0).normal(size=(30, 4))
    with pytest.raises(AssertionError):
        namespace["check_explainer"](Flipped(n_evals=4), X)
