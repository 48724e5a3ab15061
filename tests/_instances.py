"""Instances of every public explainer for the common checks, and their expected failures.

Read from the registry (``sklearn_xai._registry``): each explainer class declares its
instances (``_test_instances``) and the scikit-learn checks it is expected to fail, each
with its reason (``_expected_failed_checks``, the imbalanced-learn pattern). The knockoff
samplers, which are estimators but not explainers, are listed here.
"""

from sklearn_xai._registry import all_explainers
from sklearn_xai.knockoffs import GaussianKnockoffs, SequentialKnockoffs

INSTANCES = {cls.__name__: cls._test_instances() for cls in all_explainers()}
EXPECTED_FAILED = {cls.__name__: dict(cls._expected_failed_checks) for cls in all_explainers()}

INSTANCES["GaussianKnockoffs"] = [lambda: GaussianKnockoffs(),
                                  lambda: GaussianKnockoffs(method="sdp")]
INSTANCES["SequentialKnockoffs"] = [lambda: SequentialKnockoffs(cv=2, Cs=2, random_state=0)]
