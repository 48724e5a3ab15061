"""A minimal attribution explainer on the foundation, used to test the contract itself."""

import numpy as np

from sklearn_xai._explanation import Attribution
from sklearn_xai._random import row_keys
from sklearn_xai._utils import draw_base_seed, keyed_generators
from sklearn_xai.base import AttributionExplainer, as_array, reference_row
from sklearn_xai.shapley import ALGORITHMS, ImputationGame


class ToyBaselineShapley(AttributionExplainer):
    """Baseline Shapley values against the mean reference row (exact or permutation)."""

    _parameter_constraints = {**AttributionExplainer._parameter_constraints,
                              "algorithm": "no_validation", "n_evals": "no_validation",
                              "random_state": ["random_state"]}

    def __init__(self, model=None, *, algorithm="exact", n_evals=32, response_method="auto",
                 target=None, feature_space="input", batch_size=64, n_jobs=None,
                 random_state=None):
        self.model = model
        self.algorithm = algorithm
        self.n_evals = n_evals
        self.response_method = response_method
        self.target = target
        self.feature_space = feature_space
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _fit(self, X, y):
        self.reference_ = reference_row(X)
        self.player_names_ = self._feature_names()

    def _explain(self, X):
        data = as_array(X)
        seed = draw_base_seed(self.random_state)

        def run(rows):
            game = ImputationGame(self.model_fn_, data[rows], self.reference_)
            gens = None if self.algorithm == "exact" else keyed_generators(
                seed, row_keys(data[rows]))
            return ALGORITHMS[self.algorithm](game, self.n_evals, gens)

        parts = self._map_batches(run, data.shape[0])
        phi = np.concatenate([p[0] for p in parts])
        base = np.concatenate([p[1] for p in parts])
        if phi.shape[2] == 1:
            phi, base = phi[:, :, 0], base[:, 0]
        return Attribution(phi, base, data, self.player_names_, self.output_names_)
