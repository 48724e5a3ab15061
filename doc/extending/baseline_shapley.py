"""A complete explainer on sklearn-xai's base: exact baseline Shapley values.

The page "Writing an explainer" includes this file; ``tests/test_extending.py`` imports it
and runs scikit-learn's estimator checks and the package's contract tests on it.
"""

import numpy as np
from sklearn.utils._param_validation import StrOptions

from sklearn_xai import Attribution
from sklearn_xai.base import AttributionExplainer, reference_row
from sklearn_xai.shapley import ImputationGame, exact_shapley


class BaselineShapley(AttributionExplainer):
    """Exact Shapley values of ``v(S) = f(x_S, r_~S)`` against one reference row ``r``.

    Parameters
    ----------
    model : estimator
        The model to explain (a ``FrozenEstimator`` is explained as it is).
    reference : {"mean"}, default="mean"
        The reference row: column means (modes for categorical columns).
    response_method, target, feature_space, batch_size, n_jobs, verbose
        As in every attribution explainer of sklearn-xai.
    """

    _parameter_constraints = {**AttributionExplainer._parameter_constraints,
                              "reference": [StrOptions({"mean"})]}

    def __init__(self, model=None, *, reference="mean", response_method="auto", target=None,
                 feature_space="input", batch_size=256, n_jobs=None, verbose=0):
        self.model = model
        self.reference = reference
        self.response_method = response_method
        self.target = target
        self.feature_space = feature_space
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _fit(self, X, y):
        # the base has validated X, fitted or kept the model, put X in the explained
        # space and set model_fn_, output_names_ and player_names_ (one player per
        # column); learn what the method needs
        self.reference_ = reference_row(X)

    def _explain(self, X):
        data = np.asarray(X, dtype=object) if hasattr(X, "columns") else np.asarray(X)

        def run(rows):  # one batch of rows: (rows, P, outputs), (rows, outputs)
            return exact_shapley(ImputationGame(self.model_fn_, data[rows], self.reference_))

        # batch_size rows at a time, on n_jobs joblib workers (a Dask cluster too), with
        # the progress bar of verbose
        parts = self._map_batches(run, data.shape[0])
        values = np.concatenate([p[0] for p in parts])
        base = np.concatenate([p[1] for p in parts])
        if values.shape[2] == 1:
            values, base = values[:, :, 0], base[:, 0]
        return Attribution(values, base, data, self.player_names_, self.output_names_)
