"""Knockoff-imputed Shapley values: KnockoffSHAP (local) and KnockoffSAGE (global).

Blesch, Wright & Watson, "Unfooling SHAP and SAGE: Knockoff Imputation for Shapley
Values" (xAI 2023). Features outside a coalition are filled from model-X knockoffs of
the explained row, so every row the model is asked about is distributed like real data
and a model that detects off-manifold queries cannot steer the explanation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._explanation import Attribution, GlobalImportance
from .._random import row_keys, stream_seeds
from .._stats import mean_se, t_factor, t_widened
from .._utils import draw_base_seed, is_frame, keyed_generators, take_rows, unwrap_frozen
from ..base import (
    AttributionExplainer,
    BaseExplainer,
    OutputExplainer,
    as_array,
    check_rows_columns,
    model_allows_nan,
    reference_row,
    resolve_feature_groups,
    split_pipeline,
)
from ..knockoffs import GaussianKnockoffs, SequentialKnockoffs
from ._estimators import (
    ALGORITHMS,
    AUTO_MIN_UNITS,
    MAX_AUTO_N_EVALS,
    MAX_EXACT_PLAYERS,
    algorithm_draws,
    auto_start_n_evals,
    crossed_std,
    default_n_evals,
    estimate_shapley,
    tol_reached,
    unit_std,
)
from ._frontier import frontier_components, row_path
from ._game import Game, ImputationGame

if TYPE_CHECKING:
    from typing import Any, Literal

    import pandas as pd
    from numpy.random import RandomState
    from numpy.typing import ArrayLike

    from sklearn_xai._typing import FeatureGroups, ResponseMethod

__all__ = ["KnockoffSHAP", "KnockoffSAGE"]

MAX_AUTO_EXACT = 12
# n_evals="auto": at least AUTO_MIN_UNITS knockoffs before a row may stop (as units, see
# sklearn_xai.shapley._estimators), and the cap on the knockoffs (times n_knockoffs)
MAX_AUTO_KNOCKOFF_FACTOR = 16
# permutation rounds of KnockoffSAGE when n_permutations=None (a ConvergenceWarning if hit)
MAX_PERMUTATION_ROUNDS = 1000
# standard errors below this many eps of the largest loss count as 0 (round-off) in the
# SAGE stop rule
_SE_FLOOR = 1024
# tag of the knockoff draws' stream (stream_seeds(base_seed, tag)); the coalition sampling
# and the SAGE permutations use the base seed itself
_KNOCKOFF_STREAM = 1


def _has_categorical(X):
    if is_frame(X):
        import pandas as pd

        return any(not pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t)
                   or isinstance(t, pd.CategoricalDtype) for t in X.dtypes)
    return np.asarray(X).dtype == object


def _fit_sampler(sampler, X, random_state, verbose=0):
    if sampler is None:
        sampler = SequentialKnockoffs(random_state=draw_base_seed(random_state),
                                      verbose=verbose) \
            if _has_categorical(X) else GaussianKnockoffs()
    return clone(sampler).fit(X)


def _draw_knockoffs(sampler, X_rows, n_knockoffs, seed, keys):
    """(n_rows, K, M) knockoffs of ``X_rows``; row ``i`` seeded by ``(seed, keys[i])``."""
    if hasattr(sampler, "sample_seeded"):
        return sampler.sample_seeded(X_rows, n_knockoffs, seed, keys)
    # a third-party sampler: one call per row, seeded from the row's keyed stream (the top
    # 32 bits: a RandomState seed), keeps each row's draws independent of batching
    row_seeds = stream_seeds(seed, keys) >> np.uint64(32)
    return np.stack([
        np.asarray(sampler.sample(take_rows(X_rows, slice(i, i + 1)), n_knockoffs,
                                  random_state=int(s)))[0]
        for i, s in enumerate(row_seeds)
    ])


def _missing(A):
    """Boolean masks of the missing entries of a 2-D array or DataFrame, and of those in
    its numeric columns (the NaN the base's validation refuses for a model)."""
    import pandas as pd

    if is_frame(A):
        numeric = np.array([pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t)
                            and not isinstance(t, pd.CategoricalDtype) for t in A.dtypes])
    else:
        numeric = np.full(np.shape(A)[1], np.asarray(A).dtype.kind in "biuf")
    A = as_array(A)
    nan = np.isnan(A.astype(np.float64, copy=False)) if A.dtype.kind in "biuf" else \
        np.asarray(pd.isna(A), dtype=bool)
    return nan, nan & numeric


def _first_column(mask):
    return int(np.flatnonzero(mask.any(axis=0))[0])


def _check_background(background, X, feature_names, allow_nan):
    """The marginal imputation rows: ``X`` (already validated) or the checked
    ``background``, whose NaN / infinity errors name it."""
    if background is None:
        return as_array(X)
    check_rows_columns(background, X, "background")
    bg = as_array(background)
    n_features = len(feature_names)
    if bg.ndim != 2 or bg.shape[1] != n_features or bg.shape[0] == 0:
        raise ValueError(f"background must have shape (n_background, {n_features}) with at "
                         f"least one row, got {bg.shape}.")
    nan, _ = _missing(bg)
    if bg.dtype.kind in "biuf":
        inf = np.isinf(bg.astype(np.float64, copy=False))
    else:
        inf = np.vectorize(lambda v: isinstance(v, float | np.floating) and np.isinf(v),
                           otypes=[bool])(bg)
    for bad, what, remedy in [
        (inf, "infinity", "replace or drop those rows"),
        (nan if not allow_nan else np.zeros_like(nan), "NaN",
         "the model does not accept missing values; impute them or drop those rows"),
    ]:
        if bad.any():
            j = _first_column(bad)
            raise ValueError(f"background contains {what} in column {j} "
                             f"({feature_names[j]!r}); {remedy} of background.")
    return bg


#: ``imputation="marginal"`` without ``background`` warns above this many rows passed to fit
LARGE_BACKGROUND = 100


class _KnockoffMixin:
    """What KnockoffSHAP and KnockoffSAGE share: players, imputation, missing values.

    Missing values are checked on the explained rows, where the error can name the column
    and the remedy of the imputation: the input rows in the input space (before the model
    is fitted on them), the preprocessing's output in the model space (a pipeline's
    imputer may fill them).
    """

    def _fit_players(self):
        """Players of the explained space's columns."""
        self.groups_, self.player_names_ = resolve_feature_groups(
            self.feature_groups, self._feature_names())

    def _warn_unused_n_evals(self, algorithm, chosen_by=""):
        """A ``UserWarning`` when an integer ``n_evals`` was given to an ``algorithm``
        that has no budget (it would be ignored without a word); ``chosen_by``: how the
        algorithm was chosen, for the message."""
        if isinstance(self.n_evals, Integral) and not isinstance(self.n_evals, bool):
            self._warn_once(
                f"{type(self).__name__}(n_evals={self.n_evals}) is ignored by "
                f"algorithm={algorithm!r}{chosen_by}, which takes no n_evals. Pass "
                "algorithm='frontier' to spend n_evals per player and row, or leave "
                "n_evals=None.", key="unused n_evals", stacklevel=5)

    def _fit_imputation(self, X):
        """Fit the knockoff sampler, or check the background, on the explained rows."""
        if self.imputation == "knockoff":
            if self.background is not None:
                self._warn_once(
                    f"{type(self).__name__}(imputation='knockoff') does not use background "
                    "(the knockoff sampler fills absent features); pass "
                    "imputation='marginal' to fill them from background.",
                    key="unused background", stacklevel=5)
            self.sampler_ = _fit_sampler(self.sampler, X, self.random_state,
                                         getattr(self, "verbose", 0))
        else:
            self.background_ = _check_background(
                self.background, X, self._feature_names(),
                model_allows_nan(self.explained_model_))
            if self.background is None and len(self.background_) > LARGE_BACKGROUND:
                self._warn_once(
                    f"{type(self).__name__}(imputation='marginal') uses the "
                    f"{len(self.background_)} rows passed to fit as its background: the "
                    "cost of every explained row grows linearly with their number. Pass "
                    f"background= a sample or k-means centres of at most {LARGE_BACKGROUND} "
                    "rows to explain faster.", key="large background", stacklevel=5)

    def _allow_nan(self):
        # the package's samplers model complete rows only; marginal imputation passes
        # missing values to the model as they are
        if self.imputation == "knockoff" and not model_allows_nan(self.sampler):
            return False
        return super()._allow_nan()

    def _validate_X(self, X, *, reset, allow_nan=None):
        X = super()._validate_X(X, reset=reset, allow_nan=True)
        if reset:
            model_space = (self.feature_space == "model"
                           and split_pipeline(self.model)[0] is not None)
        else:
            model_space = getattr(self, "preprocessor_", None) is not None
        if not model_space and self.model is not None:
            self._check_missing(X, self.model if reset else self.model_)
        return X

    def _explained_rows(self, X):
        Xt = super()._explained_rows(X)
        if getattr(self, "preprocessor_", None) is not None:
            self._check_missing(Xt, self.explained_model_, model_space=True)
        return Xt

    def _check_missing(self, X, model, model_space=False):
        """ValueError naming the first column of the explained rows ``X`` with a missing
        value that the model (numeric NaN, as the base's validation) or the imputation
        does not take."""
        missing, numeric_nan = _missing(X)
        if not missing.any():
            return
        if model_space:  # also during fit, before n_features_explained_ is set
            try:
                names = [str(n) for n in self.preprocessor_.get_feature_names_out()]
            except (AttributeError, ValueError, TypeError):
                names = [f"x{j}" for j in range(X.shape[1])]
        else:
            names = BaseExplainer._feature_names(self)
        if numeric_nan.any() and not model_allows_nan(model):
            j = _first_column(numeric_nan)
            inner = unwrap_frozen(model)
            raise ValueError(
                f"X contains NaN in column {j} ({names[j]!r}) and the model "
                f"({type(inner).__name__}) does not accept missing values; impute them (for "
                "example with a SimpleImputer step in a Pipeline) or drop those rows.")
        if missing.any() and self.imputation == "knockoff" \
                and not model_allows_nan(self.sampler):
            j = _first_column(missing)
            raise ValueError(
                f"X contains NaN in column {j} ({names[j]!r}), and knockoffs cannot be drawn "
                "for rows with missing values; impute them (for example with a "
                "SimpleImputer as the first step of a Pipeline model, explained with "
                "feature_space='model'), drop those rows, or use imputation='marginal', "
                "which passes them to the model.")


class KnockoffSHAP(_KnockoffMixin, AttributionExplainer):
    """Shapley values with knockoff imputation.

    For an explained row ``x`` with knockoffs ``x~_1..x~_K`` drawn from the fitted
    sampler, the game is ``v_x(S) = mean_k f(x_S, x~_k[not S])``. Its Shapley values are
    estimated exactly or by sampling. Because ``(x_S, x~_[not S])`` is distributed like a
    real row, a model that behaves differently off the data manifold cannot hide its
    behaviour on real rows from this explanation (unlike marginal SHAP).

    ``v_x`` depends on ``x`` outside ``S`` through the knockoffs, so it is neither the
    marginal nor the conditional game: with knockoffs close to ``x`` (small ``s`` for
    strongly correlated Gaussian features) every attribution shrinks towards 0.

    Parameters
    ----------
    model : estimator
        The model to explain: a fitted model wrapped in
        :class:`sklearn.frozen.FrozenEstimator`, or an unfitted one that ``fit(X, y)``
        trains (a clone).
    sampler : estimator with ``fit(X)`` and ``sample(X, n_knockoffs, random_state)``, \
            default=None
        Knockoff sampler, cloned and fitted on ``X`` in ``fit``. ``None``:
        :class:`~sklearn_xai.knockoffs.GaussianKnockoffs` when every column of ``X`` is
        numeric, else :class:`~sklearn_xai.knockoffs.SequentialKnockoffs` (its column
        order seeded from ``random_state``). Both keep the knockoffs of a discrete
        numeric column (2 to 20 distinct values, at most half as many as rows: binary
        indicators, integer codes a pipeline one-hot encodes) on the values it took in
        ``fit`` (their ``support="auto"``); both are scale-equivariant (rescaling a
        column rescales only its knockoffs). For mixed data encoded as numbers you can
        also pass ``SequentialKnockoffs(categorical_features=...)``, or
        ``GaussianKnockoffs(support="observed")`` to round every column to its observed
        values; see the German Credit example. A sampler with a
        ``sample_seeded(X, n_knockoffs, base_seed, row_keys)`` method (as these two have)
        is called once for all rows with the rows' content keys; any other once per row,
        with a ``random_state`` drawn from the row's keyed stream.
    n_knockoffs : int, default=10
        Knockoffs drawn per explained row (``K``). One coalition evaluation costs ``K``
        model rows.
    algorithm : {"auto", "exact", "frontier", "frontier_shared", "kernel", "permutation"}, \
            default="auto"
        The Shapley algorithm (an entry of :data:`sklearn_xai.shapley.ALGORITHMS`).
        ``"auto"``: exact enumeration up to 12 players, else ``"frontier"``. ``"exact"``
        evaluates all ``2**P`` coalitions; ``"frontier"``
        (:func:`~sklearn_xai.shapley.frontier_shapley`) estimates the game of each
        knockoff or background row with its own design (its dummy players exactly 0, the
        game enumerated when it fits the budget, else a regression-adjusted odd
        surrogate), with exact efficiency; ``"frontier_shared"``
        (:func:`~sklearn_xai.shapley.frontier_shared_shapley`) is the frontier with one
        design per number of active players shared by the rows (a row's knockoffs
        independent of each other), drawn from ``random_state``, and a flat prior:
        fixed, cached linear maps instead of per-row fits (cheaper where rows share
        designs, e.g. a reference row; with knockoffs the components' budgets vary, so
        fewer do: on German credit with 10 knockoffs the default's error at 2.0x its
        rows/s once a fixed ``random_state``'s designs are cached, 0.8-1.0x on a first
        call, which computes them, as every call with ``random_state=None`` does;
        ``doc/benchmarks.md``); ``"kernel"`` is paired KernelSHAP with exact efficiency;
        ``"permutation"`` is antithetic permutation sampling.
    n_evals : int >= 2 or None, default=None
        Budget of the sampling algorithms in coalition evaluations per player and row, the
        unit of every explainer of the package (:class:`ShearExplainer` included): a row
        costs at most ``n_evals * P + 2`` coalition evaluations (the ``+ 2`` are the empty
        and the full coalition). ``"permutation"`` runs ``n_evals * P // (P - 1)``
        permutations (rounded down to an even number), ``"kernel"`` samples
        ``n_evals * P`` coalitions (exact enumeration once that covers all of them).
        ``None``: 16 for ``"frontier"`` (measured on German credit with 10 knockoffs:
        about half KernelSHAP's error at ``2 + ceil(2048 / P)``, in a quarter of the time;
        ``doc/benchmarks.md``), ``2 + ceil(2048 / P)`` for KernelSHAP (about shap's
        ``2 P + 2048`` coalitions) and 32 for permutation sampling. An integer is ignored
        by ``"exact"`` (also when ``"auto"`` chose it), with a ``UserWarning`` at ``fit``.
        ``"auto"``: per row, start from 32 units at least (antithetic pairs of
        permutations, ``n_evals=64`` for many players; KernelSHAP's jackknife groups,
        ``n_evals=16`` from four players) and ``max(n_knockoffs, 32)`` knockoffs, so that
        the standard errors it stops on are calibrated, and double the budget of the
        larger error source, the sampling's ``n_evals`` or (knockoff imputation) the
        number of knockoffs, until every standard error of the row is at most ``tol``
        times the row's range of attributions, or both caps are reached
        (``n_evals <= MAX_AUTO_N_EVALS = 1024``; at most ``MAX_AUTO_KNOCKOFF_FACTOR = 16``
        times ``n_knockoffs``; a ``ConvergenceWarning`` counts the rows stopped there).
        With the exact algorithm only the knockoffs grow. Each step recomputes the rows
        still running from scratch (their draws are keyed by the row), so a row costs at
        most twice its final budget and its result depends only on ``random_state`` and
        the row; ``extras["n_evals"]`` and ``extras["n_knockoffs"]`` hold each row's
        final budget.
    tol : float > 0, default=0.05
        Tolerance of ``n_evals="auto"``, relative to each row's range of attributions
        (``max - min`` over players); ignored otherwise.
    imputation : {"knockoff", "marginal"}, default="knockoff"
        ``"marginal"`` fills absent features from the ``background`` rows instead
        (ordinary marginal SHAP with the same algorithm), for comparison. Missing values:
        knockoff samplers model complete rows, so a NaN in the explained rows is a
        ValueError naming its column (impute it, e.g. with a ``SimpleImputer`` first in a
        Pipeline explained with ``feature_space="model"``); marginal imputation passes
        NaN to a model that accepts it (its ``allow_nan`` tag).
    background : array-like of shape (n_background, n_features) or None, default=None
        Rows of ``imputation="marginal"``, in the explained space (with
        ``feature_space="model"``, the columns the pipeline's last step receives, e.g.
        ``model[:-1].transform(X_bg)``); ``None`` uses every row passed to ``fit``
        (cost grows linearly with its size, a ``UserWarning`` above ``LARGE_BACKGROUND =
        100`` rows; pass e.g. k-means centres).
    feature_groups : None, list of lists or dict, default=None
        Players as groups of columns (by index or name); ``None`` = one per column.
    response_method : {"auto", "predict_proba", "decision_function", "predict"}, \
            default="auto"
        The model method whose output is explained. ``"auto"``: ``predict_proba`` for a
        classifier that has it (then ``decision_function``, then ``predict``),
        ``predict`` for other models.
    target : class label or None, default=None
        For a classifier's ``predict_proba`` or ``decision_function``, the class whose
        output is explained. ``None``: the positive class ``classes_[1]`` of a binary
        classifier, every class of a multi-class one, every output of a regressor.
    feature_space : {"input", "model"}, default="input"
        Explain a Pipeline in the columns given to fit ("input") or in the columns its
        last step receives ("model"). With "model" the knockoff sampler (or the default
        background) is fitted on the preprocessing's output, the players are its columns,
        and a missing value the preprocessing imputes is no longer missing.
    batch_size : int, default=128
        Explained rows per task: ``explain`` handles the rows in batches of this many,
        one joblib task each under ``n_jobs`` (see :ref:`batch-sizes`).
    max_model_rows : int, default=8192
        Most rows per model call (a coalition of a row costs ``K`` model rows); bounds the
        memory of one call (see :ref:`batch-sizes`).
    n_jobs : int or None, default=None
        Parallel joblib workers over batches of ``batch_size`` explained rows. ``None``
        or ``1``: no parallelism; ``-1``: all processors. Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seeds the knockoff draws and the coalition sampling. Each row's generator is
        seeded by one draw from ``random_state`` and a hash of the row's values, so a
        row's explanation does not depend on ``batch_size``, ``n_jobs``, the row order or
        the other rows explained with it (identical rows get identical draws).
    verbose : int, default=0
        Progress on stderr: ``0`` nothing; ``1`` a progress bar (rows done, rate, time
        left; tqdm's when it is installed) for calls that run longer than about 2 s, and
        for the fit of the default sampler (``sampler=None``), that of
        :class:`~sklearn_xai.knockoffs.SequentialKnockoffs` over the columns; ``2`` also
        the time of each batch of ``batch_size`` rows. The results do not depend on it.

    Attributes
    ----------
    model_ : fitted model
    model_fn_ : ModelFunction
        The explained function (of the explained space's rows).
    feature_space_ : {"input", "model"}
        The space explained ("input" when the model has no preprocessing).
    preprocessor_ : Pipeline or None
        The preprocessing steps mapping input rows to the explained space (model space).
    explained_model_ : estimator
        The model (input space) or the pipeline's last step (model space).
    n_features_explained_ : int
        Columns of the explained space.
    sampler_ : fitted knockoff sampler (knockoff imputation)
    background_ : ndarray of shape (n_background, n_features_explained) \
            (marginal imputation)
    groups_ : list of ndarray of int
    player_names_ : list of str
    output_names_ : list of str
    algorithm_ : str
        The algorithm ``"auto"`` resolved to.
    n_evals_ : int, "auto" or None
        Coalition evaluations per player and row of the sampling algorithm (``None`` for
        exact).
    reference_ : ndarray of shape (1, n_features_explained)
        Reference row of :meth:`score`.
    n_features_in_, feature_names_in_

    Notes
    -----
    ``explain`` costs ``n_samples * K`` knockoff draws and at most
    ``n_samples * (n_evals * P + 2) * K`` model rows (``2**P`` coalitions per row for the
    exact algorithm). ``extras["n_evaluations"]`` of the result counts the coalition
    evaluations. With ``algorithm="frontier"``, ``extras["paths"]`` (object array of
    shape (n_samples,)) says how each row was computed: ``"exact"``, ``"dummy"``,
    ``"border"`` (whole coalition sizes only, nothing sampled: deterministic, not exact),
    ``"sampled"``, ``"linear"`` (sampled, fitted by the linear term alone: a
    row with too many active players for the order-3 term), or for the mean of several
    knockoff or background games
    e.g. ``"sampled (3 of 10 components; 7 exact)"``
    (:func:`~sklearn_xai.shapley.frontier_shapley`). With knockoffs and the frontier, each
    knockoff's game has its own design and the standard error is the spread of the
    per-knockoff estimates (sampling and knockoff draws together).

    Standard errors (``Attribution.std``) measure the distance to the values with an
    unlimited budget: of the sampling algorithm (its units: antithetic pairs of
    permutations, or KernelSHAP's jackknife groups of complementary pairs;
    ``extras["n_units"]`` of them; the frontier's come from its cross-fit, without units:
    0, or with knockoffs the ``K`` per-knockoff estimates) and, with knockoff imputation,
    of the ``K`` knockoff draws (the values are the mean of the Shapley values of the
    ``K`` one-knockoff games, so their spread over the knockoffs measures it; crossed
    with the sampling units in a two-way random-effects estimate). ``None`` for exact
    values with marginal imputation.
    They are Student-t widened: multiplied by ``t(0.975, nu) / z(0.975)`` with ``nu``
    their degrees of freedom (``Attribution.std_dof``, the shape of ``values``: the units'
    or the knockoffs' number less one, Satterthwaite's for the crossed estimate, the
    frontier's own), so ``values +- 1.96 std`` is a 95 % Student-t interval also with few
    units or knockoffs (with 10 knockoffs the normal interval covered 0.92-0.93).
    """

    _parameter_constraints: dict = {
        **AttributionExplainer._parameter_constraints,
        "sampler": [HasMethods(["fit", "sample"]), None],
        "n_knockoffs": [Interval(Integral, 1, None, closed="left")],
        "algorithm": [StrOptions({"auto", *ALGORITHMS})],
        "n_evals": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"}), None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_model_rows": [Interval(Integral, 1, None, closed="left")],
        "imputation": [StrOptions({"knockoff", "marginal"})],
        "background": ["array-like", None],
        "feature_groups": [None, list, dict],
        "random_state": ["random_state"],
    }

    #: old parameter name -> new name (passing the old one is an error naming the new one)
    _renamed_parameters = {"estimator": "algorithm"}
    _cli_name = "knockoff"
    _label = "Knockoff SHAP"
    # fitting a sequential knockoff sampler on mixed data and evaluating K knockoffs per
    # coalition takes minutes on Adult: left out of the default report
    _in_default_report = False
    _report_chunk = 2
    _report_note = "Knockoff SHAP replaces absent features by knockoff copies of the row."

    @classmethod
    def _report_params(cls, model, *, seed, immutable=None, time_limit=None):
        return {"n_knockoffs": 5, "random_state": seed}

    def __init__(self, model: Any = None, *, sampler: Any = None, n_knockoffs: int = 10,
                 algorithm: Literal["auto", "exact", "frontier", "frontier_shared", "kernel",
                                    "permutation"] = "auto",
                 n_evals: int | None = None, tol: float = 0.05,
                 imputation: Literal["knockoff", "marginal"] = "knockoff",
                 background: ArrayLike | None = None, feature_groups: FeatureGroups = None,
                 response_method: ResponseMethod = "auto", target: Any = None,
                 feature_space: Literal["input", "model"] = "input", batch_size: int = 128,
                 max_model_rows: int = 8192, n_jobs: int | None = None,
                 random_state: int | RandomState | None = None, verbose: int = 0) -> None:
        self.model = model
        self.sampler = sampler
        self.n_knockoffs = n_knockoffs
        self.imputation = imputation
        self.background = background
        self.algorithm = algorithm
        self.n_evals = n_evals
        self.tol = tol
        self.feature_groups = feature_groups
        self.response_method = response_method
        self.target = target
        self.feature_space = feature_space
        self.batch_size = batch_size
        self.max_model_rows = max_model_rows
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _fit(self, X, y):
        """Resolve the algorithm, fit the sampler (or check the background) on ``X``."""
        self._fit_players()
        P = len(self.groups_)
        algorithm = self.algorithm
        if algorithm == "auto":
            algorithm = "exact" if P <= MAX_AUTO_EXACT else "frontier"
        if algorithm == "exact" and P > MAX_EXACT_PLAYERS:
            raise ValueError(f"algorithm='exact' enumerates 2**{P} coalitions; use 'kernel' or "
                             "'permutation', or group features.")
        self.algorithm_ = algorithm
        if algorithm == "exact":
            self._warn_unused_n_evals(algorithm, "" if self.algorithm == "exact" else
                                      f" (chosen by algorithm='auto' for {P} <= "
                                      f"{MAX_AUTO_EXACT} players)")
            self.n_evals_ = None
        elif self.n_evals == "auto":
            self.n_evals_ = "auto"
        elif self.n_evals is not None:
            self.n_evals_ = int(self.n_evals)
        else:
            self.n_evals_ = default_n_evals(algorithm, P)
        self._fit_imputation(X)
        self.reference_ = reference_row(X)

    def _explain(self, X):
        data = as_array(X)
        seed = draw_base_seed(self.random_state)
        ko_seed = int(stream_seeds(seed, _KNOCKOFF_STREAM))
        keys = row_keys(data)
        auto = self.n_evals == "auto"

        def run(rows):
            idx = np.arange(rows.start, rows.stop)
            if not auto:
                return self._explain_rows(X, data, keys, idx, seed, ko_seed,
                                          self.n_evals_, self.n_knockoffs)
            return self._auto_rows(X, data, keys, idx, seed, ko_seed)

        res = _KnockoffRows.concatenate(self._map_batches(run, data.shape[0]))
        extras = {"algorithm": self.algorithm_, "imputation": self.imputation,
                  "n_knockoffs": self.n_knockoffs,
                  "n_evaluations": int(res.n_evaluations),
                  "n_units": int(res.n_units)}
        if res.paths is not None:
            extras["paths"] = res.paths
        if auto:
            if self.algorithm_ != "exact":
                extras["n_evals"] = res.budget[:, 0]
            if self.imputation == "knockoff":
                extras["n_knockoffs"] = res.budget[:, 1]
            capped = int(np.sum(~res.converged))
            if capped:  # once per fitted explainer (score explains again)
                self._warn_once(
                    f"KnockoffSHAP(n_evals='auto') stopped {capped} row(s) at the caps "
                    f"(n_evals <= MAX_AUTO_N_EVALS = {MAX_AUTO_N_EVALS}, n_knockoffs <= "
                    f"{MAX_AUTO_KNOCKOFF_FACTOR} * n_knockoffs); their standard errors may "
                    f"exceed tol={self.tol} times their range of attributions. Pass a "
                    "larger tol.", ConvergenceWarning, key="n_evals='auto' cap",
                    stacklevel=3)
        return Attribution(res.phi, res.base, data, list(self.player_names_),
                           list(self.output_names_), extras, res.std, std_dof=res.dof)

    def _explain_rows(self, X, data, keys, idx, seed, ko_seed, n_evals, n_knockoffs,
                      parts=False):
        """:class:`_KnockoffRows` of the rows ``idx`` (positions in ``data``), in
        sub-batches whose per-knockoff coalition values stay below about 16M floats (a
        row's result does not depend on its batch). With ``parts``, the variances of the
        sampling and of the knockoff draws are estimated (else the sampling's is 0 on the
        frontier's knockoff path)."""
        P = len(self.groups_)
        knockoffs = self.imputation == "knockoff"
        K = n_knockoffs if knockoffs else 1
        coalitions = 2**P if self.algorithm_ == "exact" else n_evals * P + 2
        step = max(1, 2**24 // max(coalitions * K * len(self.output_names_), 1))
        return _KnockoffRows.concatenate(
            [self._run_rows(X, data, keys, idx[a:a + step], seed, ko_seed, n_evals,
                            n_knockoffs, parts)
             for a in range(0, len(idx), step)])

    def _run_rows(self, X, data, keys, idx, seed, ko_seed, n_evals, n_knockoffs, parts=False):
        knockoffs = self.imputation == "knockoff"
        n_out = len(self.output_names_)
        if knockoffs:
            ko = _draw_knockoffs(self.sampler_, take_rows(X, idx), n_knockoffs, ko_seed,
                                 keys[idx])
        else:
            ko = self.background_
        draws = algorithm_draws(self.algorithm_, seed, keys[idx])
        if self.algorithm_ in ("frontier", "frontier_shared") and knockoffs and n_knockoffs > 1:
            game = ImputationGame(self.model_fn_, data[idx], ko, groups=self.groups_,
                                  batch_size=self.max_model_rows)
            return _frontier_by_knockoff(game, game.imputation_components(), n_evals, parts,
                                         **draws)
        # knockoffs: one output per knockoff, so that their spread gives the error of the
        # knockoff draws (the Shapley values of the mean game are their mean)
        game = ImputationGame(self.model_fn_, data[idx], ko, groups=self.groups_,
                              batch_size=self.max_model_rows, per_imputation=knockoffs)
        est = estimate_shapley(game, self.algorithm_, n_evals, **draws)
        phi, base, units, paths = est.values, est.base, est.units, est.paths
        n, P = phi.shape[:2]
        n_units = 0 if units is None else units.shape[1]
        worst = lambda v: np.nan_to_num(v, nan=np.inf).max(axis=(1, 2))  # noqa: E731
        # the sampling's variance, unwidened (with knockoffs and units: their spread, below)
        var_s = np.zeros(n) if est.std is None else worst((est.std / t_factor(est.dof)) ** 2)
        if not knockoffs:
            return _KnockoffRows(phi, base, est.std, game.n_evaluations, n_units, var_s,
                                 np.zeros(n), paths, dof=est.dof)
        K = game.n_imputations
        per_draw = phi.reshape(n, P, K, n_out)
        crossed = (per_draw[:, None] if units is None else
                   units.reshape(n, n_units, P, K, n_out)).transpose(0, 1, 3, 2, 4)
        if K == 1 and est.std is not None:
            # one knockoff: the sampling alone, whose Student-t interval the engine gives
            std, dof = est.std, est.dof
        else:
            std, dof = crossed_std(crossed, return_dof=True)        # (n, P, O)
            std = t_widened(std, dof)
        # which source dominates: the sampling (spread over units) or the knockoffs
        if units is not None:
            var_s = worst(unit_std(crossed.mean(axis=2)) ** 2)
        var_k = worst(unit_std(crossed.mean(axis=1)) ** 2)
        return _KnockoffRows(per_draw.mean(axis=2), base.reshape(n, K, n_out).mean(axis=1),
                             std, game.n_evaluations, n_units, var_s, var_k, paths, dof=dof)

    def _auto_rows(self, X, data, keys, idx, seed, ko_seed):
        """``n_evals="auto"``: per row, double the budget of the larger error source (the
        sampling's ``n_evals`` or, with knockoffs, the number of knockoffs) until every
        standard error is at most ``tol`` times the row's range of attributions, or both
        caps are reached. Each step recomputes the rows still running from scratch (their
        draws are keyed by the row), so a row's result depends only on it and the seed,
        and it costs at most twice its final budget."""
        sampled = self.algorithm_ != "exact"
        knockoffs = self.imputation == "knockoff"
        n, P = len(idx), len(self.groups_)
        budget = np.empty((n, 2), dtype=np.int64)
        budget[:, 0] = auto_start_n_evals(self.algorithm_, P) if sampled else 0
        budget[:, 1] = max(self.n_knockoffs, AUTO_MIN_UNITS) if knockoffs else 0
        cap = (MAX_AUTO_N_EVALS if sampled else 0,
               max(MAX_AUTO_KNOCKOFF_FACTOR * self.n_knockoffs, budget[0, 1])
               if knockoffs else 0)
        out = [None] * 4
        paths = None
        done = np.zeros(n, dtype=bool)
        converged = np.zeros(n, dtype=bool)
        evaluations = n_units = 0
        while not done.all():
            todo = np.flatnonzero(~done)
            for ne, K in np.unique(budget[todo], axis=0):
                sel = todo[(budget[todo, 0] == ne) & (budget[todo, 1] == K)]
                part = self._explain_rows(
                    X, data, keys, idx[sel], seed, ko_seed, int(ne) if sampled else None,
                    int(K) if knockoffs else self.n_knockoffs, parts=True)
                phi, base, std = part.phi, part.base, part.std
                var_s, var_k = part.var_sampling, part.var_knockoff
                if part.paths is not None:
                    paths = np.empty(n, dtype=object) if paths is None else paths
                    paths[sel] = part.paths
                evaluations += part.n_evaluations
                n_units = max(n_units, part.n_units)
                for i, values in enumerate((phi, base, std, part.dof)):
                    if values is None:
                        continue
                    if out[i] is None:
                        out[i] = np.zeros((n,) + values.shape[1:])
                    out[i][sel] = values
                if std is None:  # exact values
                    done[sel] = converged[sel] = True
                    continue
                full = base + phi.sum(axis=1)
                ok = tol_reached(phi, std, base, full, self.tol)
                converged[sel] |= ok
                # a source is worth growing while it has room and an error above round-off
                scale = np.maximum(np.max(np.abs(phi), axis=(1, 2)),
                                   np.max(np.abs(full), axis=1))
                floor = (1024 * np.finfo(np.float64).eps * scale) ** 2
                more_s = sampled & (budget[sel, 0] < cap[0]) & (var_s > floor)
                more_k = knockoffs & (budget[sel, 1] < cap[1]) & (var_k > floor)
                # a source whose own error already exceeds tol cannot be made up for by
                # the other: once it is capped, growing the other is futile
                thr = (self.tol * np.max(np.ptp(phi, axis=1), axis=1)) ** 2
                futile_s = knockoffs & ~more_k & (var_k >= thr)
                futile_k = sampled & ~more_s & (var_s >= thr)
                more_s, more_k = more_s & ~futile_s, more_k & ~futile_k
                grow_s = more_s & (~more_k | (var_s >= var_k))
                grow_k = more_k & ~grow_s
                up_s, up_k = sel[~ok & grow_s], sel[~ok & grow_k]
                budget[up_s, 0] = np.minimum(2 * budget[up_s, 0], cap[0])
                budget[up_k, 1] = np.minimum(2 * budget[up_k, 1], cap[1])
                done[sel] |= ok | ~(more_s | more_k)
        return _KnockoffRows(out[0], out[1], out[2], evaluations, n_units, None, None, paths,
                             budget, converged, out[3])


@dataclass
class _KnockoffRows:
    """KnockoffSHAP's results for a batch of rows: values ``phi`` (n, P, O), ``base`` (n,
    O), standard errors ``std`` (n, P, O; None for exact values; Student-t widened by
    their degrees of freedom ``dof``, same shape), the model evaluations
    and units (the most of any row) spent, each row's largest variance of the sampling
    and of the knockoff draws ``var_sampling`` / ``var_knockoff`` (n,; None where not
    kept), the frontier's ``paths`` (n,; None for other algorithms) and, for
    ``n_evals="auto"``, each row's final ``budget`` (n, 2: n_evals, n_knockoffs) and
    whether it ``converged`` (n,)."""

    phi: np.ndarray
    base: np.ndarray
    std: np.ndarray | None
    n_evaluations: int
    n_units: int
    var_sampling: np.ndarray | None
    var_knockoff: np.ndarray | None
    paths: np.ndarray | None
    budget: np.ndarray | None = None
    converged: np.ndarray | None = None
    dof: np.ndarray | None = None

    @classmethod
    def concatenate(cls, parts):
        """The batches' results, rows in order (evaluations summed, units the most)."""
        def cat(name, exact=None):
            # a batch whose rows are all exact has no std (dof): 0 (inf) for its rows
            vals = [getattr(p, name) for p in parts]
            if all(v is None for v in vals):
                return None
            return np.concatenate([np.full(p.phi.shape, exact) if v is None else v
                                   for p, v in zip(parts, vals)])
        return cls(cat("phi"), cat("base"), cat("std", 0.0),
                   sum(p.n_evaluations for p in parts), max(p.n_units for p in parts),
                   cat("var_sampling"), cat("var_knockoff"), cat("paths"), cat("budget"),
                   cat("converged"), cat("dof", np.inf))


def _frontier_by_knockoff(game, split, n_evals, parts, generators=None, design_seed=None):
    """KnockoffSHAP's frontier path: each knockoff's game estimated with its own design
    (:func:`~sklearn_xai.shapley.frontier_components`). The per-knockoff estimates are
    independent draws given the row, so their spread is the standard error of the mean,
    sampling and knockoff draws together. With ``parts`` (``n_evals="auto"``, which grows
    the larger source) the sampling part ``sum_k se_k^2 / K^2`` is estimated too (the
    cross-fits of the components); otherwise it is reported as 0. ``design_seed``: the
    knockoffs' designs shared by the rows (``"frontier_shared"``; a row's knockoffs with as
    many active players and pairs draw from distinct streams)."""
    phi_k, base_k, se_k, path_k = frontier_components(game, n_evals, generators,
                                                      components=split, with_se=parts,
                                                      design_seed=design_seed)
    paths = np.array([row_path(p) for p in path_k], dtype=object)
    K = phi_k.shape[1]
    std = unit_std(phi_k)                                           # (n, P, O)
    var_s = (se_k**2).sum(axis=1) / K**2 if parts else np.zeros_like(std)
    var_k = np.maximum(std**2 - var_s, 0.0)
    worst = lambda v: np.nan_to_num(v, nan=np.inf).max(axis=(1, 2))  # noqa: E731
    # the mean of K independent draws: a Student-t interval with K - 1 degrees of freedom
    # (the normal one covered 0.92-0.93 with 10 knockoffs, doc/benchmarks.md)
    dof = np.where(std > 0, float(K - 1), np.inf)
    return _KnockoffRows(phi_k.mean(axis=1), base_k.mean(axis=1), t_widened(std, dof),
                         game.n_evaluations, K, worst(var_s), worst(var_k), paths, dof=dof)


def _loss_values(loss, pred, y, classes, positive=None):
    """Per-row, per-coalition loss of mean predictions ``pred`` (n, C, O).

    ``positive``: the class whose probability a single output holds (the positive class
    of a binary model, or the ``target`` class); ``None`` with several outputs.
    """
    if classes is None:  # regression
        diff = pred - y.reshape(len(y), 1, -1)
        return np.mean(diff**2, axis=2)
    eps = 1e-12
    if pred.shape[2] == 1:  # one class's probability against its indicator
        t = (y == positive).astype(float)[:, None]
        p = pred[:, :, 0]
        if loss == "mse":
            return (p - t) ** 2
        p = np.clip(p, eps, 1 - eps)
        return -(t * np.log(p) + (1 - t) * np.log(1 - p))
    idx = np.searchsorted(classes, y)
    onehot = np.zeros((len(y), pred.shape[2]))
    onehot[np.arange(len(y)), idx] = 1.0
    if loss == "mse":
        return np.sum((pred - onehot[:, None, :]) ** 2, axis=2)
    p = np.clip(np.take_along_axis(pred, idx[:, None, None].repeat(pred.shape[1], 1), 2)[..., 0],
                eps, 1.0)
    return -np.log(p)


class KnockoffSAGE(_KnockoffMixin, OutputExplainer):
    """SAGE global feature importance with knockoff (or marginal) imputation.

    For each explained row ``(x_i, y_i)`` the prediction with coalition ``S`` known is the
    **mean** prediction over imputations, ``yhat_i(S) = mean_k f(x_{i,S}, r_{ik}[not S])``,
    and ``v_i(S) = -loss(y_i, yhat_i(S))``. With ``imputation="knockoff"`` the ``r_ik``
    are ``n_knockoffs`` knockoffs of ``x_i`` drawn once per row; with ``"marginal"`` they
    are the ``background`` rows, shared by all rows. The importance of a player is the
    mean over rows (and permutations) of its Shapley value in ``v_i``.

    Permutation sampling: in each round every row takes one order of the players and
    credits each player with the drop in loss when it joins. The rounds come in antithetic
    pairs: every other round draws a random order and the next one reverses it (measured
    on Adult, 12 players: 0.46-0.66x the error of independent orders at equal
    evaluations, ``doc/benchmarks.md``). Rounds continue until
    the largest standard error is at most ``tol`` times the range of the
    importances (or is round-off: at most ``1024 * eps`` times the largest loss, which
    ends the rounds when every importance is equal, e.g. for a constant model), or
    ``n_permutations`` rounds have run. With a single player the value is exact
    (``loss(empty) - loss(full)`` per row) and no rounds are run.

    The standard errors of the permutation algorithm measure the distance to the exact
    SAGE values of the explained rows (with their knockoffs, which are drawn once): each
    row's antithetic pairs are its independent units, so from two pairs on
    ``std = sqrt(mean_rows var_row / (n_pairs * n_samples))`` with ``var_row`` the
    variance of a row's mean credits per pair. After one pair the variance over every
    row's pair is used, which also counts the differences between rows (an upper bound).
    The stop rule is checked after each pair.
    Those of ``algorithm="exact"`` are the spread of the rows' exact values over
    ``sqrt(n_samples)``, the error of the mean over a sample of rows.

    Frontier: ``algorithm="frontier"`` estimates each row's Shapley values in its loss game
    with the frontier estimator (complementary pairs, the border strata enumerated, an
    odd surrogate fitted and efficiency imposed; a row whose game fits the budget is
    enumerated exactly) and averages them. Its standard errors, like the permutation
    rounds', measure the distance to the exact SAGE values of the explained rows:
    ``sqrt(sum_rows se_row**2) / n_samples`` from the rows' own standard errors, widened
    to a Student-t interval once, with the rows' Welch-Satterthwaite degrees of freedom
    (not each row's before the sum); NaN when a row has none (its budget is spent on
    whole coalition sizes, deterministic but not exact, as at ``n_evals=2`` with more
    than three players, or at ``n_evals = P + 1`` where the sizes 1 and 2 fill it; see
    the user guide's black-box page). It runs no rounds: ``tol`` and ``n_permutations``
    do not stop it, and ``converged`` says whether the largest standard error is within
    ``tol`` times the range of the importances. Measured on Adult (12 players, 200 rows,
    16 background rows, ``doc/benchmarks.md``), against the antithetic permutation
    rounds at equal model evaluations: 1.7x / 1.0x / 0.48x / 0.48x / 0.31x their error at
    ``n_evals`` 2 / 4 / 8 / 16 / 32, in 1.1-1.7x their time (the model's calls
    dominate): worth it from ``n_evals=8``; its 95 % intervals covered 0.94 / 0.96 /
    1.00 at ``n_evals`` 4 / 8 / 16 there (16 seeds).

    Parameters
    ----------
    model : estimator
        Fitted model in a ``FrozenEstimator``, or an unfitted one trained on ``fit(X, y)``.
    sampler : knockoff sampler or None, default=None
        As in :class:`KnockoffSHAP`; only used when ``imputation="knockoff"``.
    n_knockoffs : int, default=10
        Knockoffs per explained row.
    imputation : {"knockoff", "marginal"}, default="knockoff"
        As in :class:`KnockoffSHAP` (missing values included).
    background : array-like of shape (n_background, n_features) or None, default=None
        Imputation rows of ``imputation="marginal"``, in the explained space (as in
        :class:`KnockoffSHAP`); ``None`` uses every row passed to ``fit`` (cost grows
        linearly with its size, a ``UserWarning`` above ``LARGE_BACKGROUND = 100`` rows;
        pass e.g. k-means centres).
    loss : {"auto", "mse", "cross_entropy"}, default="auto"
        ``"auto"``: cross-entropy for classifiers (on ``predict_proba``), squared error
        for regressors.
    algorithm : {"permutation", "exact"}, default="permutation"
        ``"permutation"``: the SAGE permutation rounds below. ``"exact"`` evaluates all
        ``2**P`` coalitions of every row once and applies the ``"exact"`` entry of
        :data:`sklearn_xai.shapley.ALGORITHMS` to each row's loss game (exact SAGE of the
        rows; standard errors across rows); for small ``P`` only. ``"frontier"``
        estimates each row's loss game with :func:`~sklearn_xai.shapley.frontier_shapley`
        (``n_evals`` coalitions per player and row; see "Frontier" below).
    n_evals : int >= 2 or None, default=None
        Coalition evaluations per player and row of ``algorithm="frontier"`` (``None``:
        16); ignored by the other algorithms, with a ``UserWarning`` at ``fit`` when
        given.
    n_permutations : int or None, default=None
        Most permutation rounds (one permutation per row per round; an odd number is
        rounded up to whole antithetic pairs). ``None``: until
        convergence, but at most ``MAX_PERMUTATION_ROUNDS`` (1000, a constant of
        ``sklearn_xai.shapley._knockoff``) rounds, with a ``ConvergenceWarning`` when
        that cap stops them.
    tol : float > 0 or None, default=0.025
        The stopping rule of every self-stopping explainer (``tol`` of
        :class:`KnockoffSHAP` and :class:`ShearExplainer`): stop when the largest standard
        error is at most ``tol`` times the range of the values, here
        ``max(std_error) <= tol * (max(values) - min(values))``, or the standard errors are
        round-off (see above). ``None``: run all ``n_permutations`` rounds.
    feature_groups : None, list of lists or dict, default=None
        Players as groups of columns (by index or name), as in :class:`KnockoffSHAP`;
        ``None`` = one player per column.
    response_method : {"auto", "predict_proba", "decision_function", "predict"}, \
            default="auto"
        The model method whose output the loss is computed on, as in
        :class:`KnockoffSHAP`. ``loss="cross_entropy"`` needs ``predict_proba``.
    target : class label or None, default=None
        The explained class of a classifier, as in :class:`KnockoffSHAP`. ``None``: the
        positive class of a binary classifier, every class of a multi-class one, every
        output of a regressor.
    feature_space : {"input", "model"}, default="input"
        Explain a Pipeline in the columns given to fit ("input") or in the columns its
        last step receives ("model"). With "model" the knockoff sampler (or the default
        background) is fitted on the preprocessing's output, the players are its columns,
        and a missing value the preprocessing imputes is no longer missing.
    batch_size : int, default=1024
        Explained rows per task: ``explain`` handles the rows in batches of this many,
        one joblib task each under ``n_jobs`` (see :ref:`batch-sizes`).
    max_model_rows : int, default=8192
        Most rows per model call (a coalition of a row costs ``K`` model rows); bounds the
        memory of one call (see :ref:`batch-sizes`).
    n_jobs : int or None, default=None
        Parallel joblib workers over batches of ``batch_size`` explained rows. ``None``
        or ``1``: no parallelism; ``-1``: all processors. Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seeds knockoffs and permutations, per row.
    verbose : int, default=0
        Progress on stderr: ``0`` nothing; ``1`` a progress bar for calls that run longer
        than about 2 s (tqdm's when it is installed): the permutation rounds (at most
        ``n_permutations``, fewer when ``tol`` stops them), or the rows of
        ``algorithm="exact"``; and the fit of the default sampler (``sampler=None``),
        that of :class:`~sklearn_xai.knockoffs.SequentialKnockoffs` over the columns;
        ``2`` also the time of each round or batch. The results do not depend on it.

    Attributes
    ----------
    model_, model_fn_, feature_space_, preprocessor_, explained_model_, \
            n_features_explained_
        As in :class:`KnockoffSHAP`.
    sampler_, background_
        The fitted knockoff sampler (knockoff imputation) or the background rows
        (marginal imputation).
    loss_ : str
        The loss ``"auto"`` resolved to.
    groups_, player_names_, output_names_, n_features_in_, feature_names_in_

    Notes
    -----
    A round costs ``n_samples * (P - 1) * K`` model rows (``K`` = ``n_knockoffs`` or the
    background size), plus ``2 * n_samples * K`` once for the empty and full coalitions;
    ``algorithm="frontier"`` at most ``n_samples * (n_evals * P + 2) * K``.
    Knockoffs are drawn batch by batch (``batch_size`` explained rows at a time) and drawn
    again,
    identically, in every round, so memory does not grow with ``n_samples * K``; a round
    also costs ``n_samples * K`` knockoff draws.
    """

    _parameter_constraints: dict = {
        **OutputExplainer._parameter_constraints,
        "sampler": [HasMethods(["fit", "sample"]), None],
        "n_knockoffs": [Interval(Integral, 1, None, closed="left")],
        "imputation": [StrOptions({"knockoff", "marginal"})],
        "background": ["array-like", None],
        "loss": [StrOptions({"auto", "mse", "cross_entropy"})],
        "algorithm": [StrOptions({"permutation", "exact", "frontier"})],
        "n_evals": [Interval(Integral, 2, None, closed="left"), None],
        "n_permutations": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="neither"), None],
        "max_model_rows": [Interval(Integral, 1, None, closed="left")],
        "feature_groups": [None, list, dict],
        "random_state": ["random_state"],
    }

    #: old parameter name -> new name (passing the old one is an error naming the new one)
    _renamed_parameters = {"estimator": "algorithm", "convergence_tol": "tol"}

    def __init__(self, model: Any = None, *, sampler: Any = None, n_knockoffs: int = 10,
                 imputation: Literal["knockoff", "marginal"] = "knockoff",
                 background: ArrayLike | None = None,
                 loss: Literal["auto", "mse", "cross_entropy"] = "auto",
                 algorithm: Literal["permutation", "exact", "frontier"] = "permutation",
                 n_evals: int | None = None, n_permutations: int | None = None,
                 tol: float | None = 0.025,
                 feature_groups: FeatureGroups = None, response_method: ResponseMethod = "auto",
                 target: Any = None, feature_space: Literal["input", "model"] = "input",
                 batch_size: int = 1024, max_model_rows: int = 8192, n_jobs: int | None = None,
                 random_state: int | RandomState | None = None, verbose: int = 0) -> None:
        self.model = model
        self.sampler = sampler
        self.n_knockoffs = n_knockoffs
        self.imputation = imputation
        self.background = background
        self.loss = loss
        self.algorithm = algorithm
        self.n_evals = n_evals
        self.n_permutations = n_permutations
        self.tol = tol
        self.feature_groups = feature_groups
        self.response_method = response_method
        self.target = target
        self.feature_space = feature_space
        self.batch_size = batch_size
        self.max_model_rows = max_model_rows
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _fit(self, X, y):
        """Resolve the loss, fit the sampler (or check the background) on ``X``."""
        if self.algorithm == "permutation" and self.n_permutations is None \
                and self.tol is None:
            raise ValueError("Set n_permutations or tol: with neither, the "
                             "permutation algorithm would never stop.")
        self._fit_players()
        if self.algorithm == "exact" and len(self.groups_) > MAX_EXACT_PLAYERS:
            raise ValueError(f"algorithm='exact' is limited to {MAX_EXACT_PLAYERS} players; "
                             f"got {len(self.groups_)}. Use 'permutation' or group features.")
        loss = self.loss
        if loss == "auto":
            loss = "cross_entropy" if is_classifier(self.model_) else "mse"
        if loss == "cross_entropy" and self.model_fn_.method != "predict_proba":
            raise ValueError("loss='cross_entropy' needs probabilities: use "
                             "response_method='predict_proba' (or 'auto') on a classifier.")
        self.loss_ = loss
        if self.algorithm != "frontier":
            self._warn_unused_n_evals(self.algorithm)
        self._fit_imputation(X)

    def _check_y(self, y, n):
        """``y`` as the loss needs it: labels (n,) and the classes for a classifier, else
        float targets (n,) or (n, n_outputs)."""
        if y is None:
            raise ValueError("explain(X, y) needs the targets y of the explained rows.")
        y = np.asarray(y)
        n_outputs = len(self.output_names_)
        expected = f"({n},)" if n_outputs == 1 else f"({n}, {n_outputs})"
        if y.ndim not in (1, 2):
            raise ValueError(f"y must hold one target per row of X, of shape {expected}; got "
                             f"shape {y.shape}.")
        if y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} rows but X has {n}; pass one target per "
                             "explained row.")
        classifier = self.model_fn_.method in ("predict_proba", "decision_function") \
            and is_classifier(self.model_)
        if classifier or n_outputs == 1:
            if y.ndim == 2 and y.shape[1] != 1:
                raise ValueError(f"y must be 1-D of shape ({n},) (a column vector is "
                                 f"accepted), got shape {y.shape}.")
            y = column_or_1d(y, warn=True)
        if classifier:
            classes = np.asarray(self.model_.classes_)
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(f"y holds labels {unknown.tolist()} that are not among the "
                                 f"model's classes {classes.tolist()}.")
            return y, classes
        if (y.ndim == 1 and n_outputs > 1) or (y.ndim == 2 and y.shape[1] != n_outputs):
            raise ValueError(
                f"y has shape {y.shape} but the explained outputs are {self.output_names_}: "
                f"pass y of shape {expected}, or explain one output with target=.")
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y must be numeric for the {self.loss_} loss of a regression "
                             f"model; got dtype {y.dtype} ({exc}).") from None
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity; drop those rows from X and y.")
        return y, None

    def explain(self, X: ArrayLike | pd.DataFrame, y: ArrayLike) -> GlobalImportance:
        """Global importances of the players on the rows ``(X, y)``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows whose loss is explained, with the columns given to ``fit``.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets of the rows: class labels for a classifier, numbers for a regressor
            (``(n_samples, n_outputs)`` when several outputs are explained). A column
            vector is raveled with a ``DataConversionWarning``, as scikit-learn does.

        Returns
        -------
        GlobalImportance
            ``importances`` (n_players,) (also ``values``): loss reduction, higher =
            more important; ``std`` (n_players,): their standard errors;
            ``feature_names`` (list of str); ``n_permutations`` (rounds run, 0 for
            exact and frontier); ``converged`` (bool); ``loss`` (str); ``imputation``
            (str); with ``algorithm="frontier"``, ``extras``: ``n_evals``,
            ``n_evaluations`` (coalition evaluations, summed over rows) and ``paths``
            (per row, as in :class:`KnockoffSHAP`).
        """
        return self._explain(*self._check_rows(X, y))

    def _check_rows(self, X, y):
        """The explained rows of ``X`` (validated, in the explained space), the checked
        targets ``y`` and the classes of a classifier (else None)."""
        check_is_fitted(self)
        X = self._explained_rows(self._validate_X(X, reset=False))
        y, classes = self._check_y(y, X.shape[0])
        return X, y, classes

    def _explain(self, X, y, classes):
        """Global importances of checked rows (see :meth:`_check_rows`)."""
        n = X.shape[0]
        P = len(self.groups_)
        seed = draw_base_seed(self.random_state)
        losses, keys = self._loss_function(X, y, classes, seed)

        if self.algorithm == "exact" or P == 1:
            # one player: its Shapley value is exactly loss(empty) - loss(full); each
            # batch's rows enumerate their loss games (a batch's 2**P losses at a time)
            samples = np.concatenate(self._map_batches(
                lambda rows: estimate_shapley(_LossGame(losses, rows, n, P), "exact",
                                              with_std=False).values[:, :, 0], n))
            values = samples.mean(axis=0)
            # the rows are the units: a Student-t interval with n - 1 degrees of freedom
            std = (t_widened(samples.std(axis=0, ddof=1) / np.sqrt(n), n - 1.0) if n > 1
                   else np.zeros(P))
            return GlobalImportance(values, std, list(self.player_names_), 0, True,
                                    self.loss_, self.imputation)
        if self.algorithm == "frontier":
            return self._frontier_sage(losses, n, P, seed, keys)
        return self._permutation_sage(losses, n, P, seed, keys)

    def _explained_class(self, classes):
        """The class a single explained output is about (None: several outputs)."""
        if classes is None or len(self.output_names_) != 1:
            return None
        columns = self.model_fn_.output_columns
        if columns is not None:  # predict_proba: the column of the class
            return classes[columns[0]]
        return classes[1] if self.model_fn_.sign == 1 else classes[0]  # binary margin

    def _loss_function(self, X, y, classes, seed):
        """``losses(rows, masks)`` of validated rows, and the rows' content keys.

        ``losses`` gives the losses of the rows ``rows`` (a slice) for coalitions
        ``masks``, (C, P) shared or (n_rows, C, P) per row (or a callable of ``rows``
        returning them), shape (n_rows, C). Knockoffs are drawn inside, one batch at a
        time (row ``i`` from its own stream keyed by its content, so the draws depend on
        neither the batches nor the other rows).
        """
        data = as_array(X)
        ko_seed = int(stream_seeds(seed, _KNOCKOFF_STREAM))
        keys = row_keys(data)
        positive = self._explained_class(classes)

        def losses(rows, masks):
            if self.imputation == "knockoff":
                imputation = _draw_knockoffs(self.sampler_, take_rows(X, rows),
                                             self.n_knockoffs, ko_seed, keys[rows])
            else:
                imputation = self.background_
            game = ImputationGame(self.model_fn_, data[rows], imputation,
                                  groups=self.groups_, batch_size=self.max_model_rows)
            masks = masks(rows) if callable(masks) else masks
            return _loss_values(self.loss_, game.value(masks), y[rows], classes, positive)

        return losses, keys

    def score(self, X: ArrayLike | pd.DataFrame, y: ArrayLike | None = None) -> float:
        """Faithfulness correlation of the global importances on ``(X, y)``.

        Higher is better.

        For 64 random player subsets ``S`` (each player in with probability 1/2; the same
        subsets for every call), the Pearson correlation between the sum of the
        importances of ``S`` and the increase of the mean loss on ``(X, y)`` when the
        players of ``S`` are removed (imputed as in :meth:`explain`). Importances of the
        wrong sign score below 0, random ones near 0; SAGE values of a model whose loss is
        additive over players score 1.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows explained and scored, with the columns given to ``fit``.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets of the rows, as in :meth:`explain` (required: ``None`` is the
            ``ValueError`` that says so, e.g. a search fitted without ``y``).

        Returns
        -------
        float
            The correlation, in [-1, 1].
        """
        from .._faithfulness import pearson_over_axis1, random_subsets

        X, y, classes = self._check_rows(X, y)
        importances = self._explain(X, y, classes).importances
        n, P = X.shape[0], len(self.groups_)
        subsets = random_subsets(64, P)
        masks = np.vstack([np.ones((1, P), dtype=bool), ~subsets])  # kept players
        losses, _ = self._loss_function(X, y, classes, draw_base_seed(self.random_state))
        L = np.concatenate(self._map_batches(lambda rows: losses(rows, masks), n))
        increase = L[:, 1:].mean(axis=0) - L[:, 0].mean()
        sums = subsets.astype(np.float64) @ np.asarray(importances, dtype=np.float64)
        return float(pearson_over_axis1(sums[None, :, None], increase[None, :, None])[0, 0])

    def _tol_reached(self, values, std, scale):
        """:func:`tol_reached` of the importances (P,) as one row, round-off relative to
        ``scale``, the largest loss or credit seen (``_SE_FLOOR``)."""
        s = np.full((1, 1), float(scale))
        return bool(tol_reached(np.asarray(values, dtype=np.float64)[None, :, None],
                                np.asarray(std, dtype=np.float64)[None, :, None], s, s,
                                self.tol, floor=_SE_FLOOR)[0])

    def _frontier_sage(self, losses, n, P, seed, keys):
        """Each row's loss game by the frontier estimator, averaged over the rows."""
        n_evals = default_n_evals("frontier", P) if self.n_evals is None else self.n_evals

        def run(rows):
            game = _LossGame(losses, rows, n, P)
            est = estimate_shapley(game, "frontier", n_evals,
                                   **algorithm_draws("frontier", seed, keys[rows]))
            # each row's std is widened by its own t: the mean is widened once
            std, df = est.std_and_dof()
            se = std / t_factor(df)
            return est.values[:, :, 0], se[:, :, 0], df[:, :, 0], est.paths, game.n_evaluations

        parts = self._map_batches(run, n)
        phi = np.concatenate([p[0] for p in parts])
        se = np.concatenate([p[1] for p in parts])
        values = phi.mean(axis=0)
        # the rows' errors are independent: the mean's variance is their sum over n**2,
        # its degrees of freedom Welch-Satterthwaite's over the rows
        std, df = mean_se(se, np.concatenate([p[2] for p in parts]), axis=0)
        std = t_widened(std, df)
        converged = self.tol is None or self._tol_reached(values, std, np.max(np.abs(phi)))
        no_se = int(np.isnan(se).any(axis=1).sum())
        if no_se:  # once per fitted explainer (score explains again)
            self._warn_once(
                f"KnockoffSAGE(algorithm='frontier', n_evals={n_evals}): {no_se} of {n} rows "
                "spent their budget on whole coalition sizes (deterministic, not exact), so "
                "they have no standard error and std is NaN; pass another n_evals (not 2, "
                "nor P + 1 when every player is active).", UserWarning,
                key="frontier without standard errors", stacklevel=3)
        extras = {"n_evals": int(n_evals),
                  "n_evaluations": int(sum(p[4] for p in parts)),
                  "paths": np.concatenate([p[3] for p in parts])}
        return GlobalImportance(values, std, list(self.player_names_), 0, converged,
                                self.loss_, self.imputation, extras)

    def _permutation_sage(self, losses, n, P, seed, keys):
        """Antithetic pairs of permutation rounds until the stop rule of ``tol`` or the cap."""
        ends_masks = np.array([np.zeros(P, bool), np.ones(P, bool)])
        ends = np.concatenate(self._map_batches(lambda rows: losses(rows, ends_masks), n))
        cap = MAX_PERMUTATION_ROUNDS if self.n_permutations is None else self.n_permutations
        cap += cap % 2                                         # whole antithetic pairs
        gens = keyed_generators(seed, keys)  # keyed by content: row order does not matter
        steps = np.arange(1, P)[None, :, None]
        # each row's running sums of its pairs' mean credits minus the first pair's mean
        # (no cancellation in the variance when the credits are large and nearly equal)
        shift = None
        loss_scale = float(np.max(np.abs(ends)))
        rounds = 0
        converged = False
        values = np.zeros(P)
        std = np.full(P, np.inf)
        first = None
        progress = self._progress(cap, unit="rounds")
        with progress:  # one bar over the rounds (their batches show none)
            while rounds < cap:
                t0 = time.perf_counter()
                if rounds % 2 == 0:
                    pos = np.argsort(np.array([g.permutation(P) for g in gens]), axis=1)
                else:
                    pos = P - 1 - pos            # the previous order reversed: its antithesis
                inner = np.concatenate(self._map_batches(
                    lambda rows: losses(rows, lambda r: pos[r][:, None, :] < steps), n))
                L = np.concatenate([ends[:, :1], inner, ends[:, 1:]], axis=1)  # (n, P+1)
                loss_scale = max(loss_scale, float(np.max(np.abs(inner))))
                credit = np.take_along_axis(L, pos, axis=1) - np.take_along_axis(L, pos + 1, axis=1)
                rounds += 1
                progress.update(1, seconds=time.perf_counter() - t0, what=f"round {rounds}")
                if rounds % 2:
                    first = credit
                    continue
                unit = (first + credit) / 2.0                     # (n, P), one per pair
                if shift is None:
                    shift = unit.mean(axis=0)
                    row_total, row_sq = np.zeros((n, P)), np.zeros((n, P))
                unit -= shift
                row_total += unit
                row_sq += unit**2
                pairs = rounds // 2
                count = pairs * n                                  # units so far
                mean = row_total.sum(axis=0) / count
                values = shift + mean
                if pairs > 1:
                    # the error against the exact SAGE values of these rows (and
                    # knockoffs): a row's antithetic pairs are its independent units
                    var_rows = np.maximum(row_sq - row_total**2 / pairs, 0.0) / (pairs - 1)
                    std = t_widened(np.sqrt(var_rows.mean(axis=0) / (pairs * n)),
                                    n * (pairs - 1.0))
                elif count > 1:
                    # one pair: the spread over rows also counts the rows' differences (an
                    # upper bound)
                    var = np.maximum(row_sq.sum(axis=0) / count - mean**2, 0.0) * count / (
                        count - 1)
                    std = t_widened(np.sqrt(var / count), count - 1.0)
                if self.tol is not None and count > 1 and self._tol_reached(values, std,
                                                                            loss_scale):
                    converged = True
                    break
        if not converged and self.n_permutations is None:  # once per fitted explainer
            self._warn_once(
                f"KnockoffSAGE stopped after MAX_PERMUTATION_ROUNDS = {cap} permutation "
                f"rounds before the largest standard error ({np.max(std):.3g}) fell below "
                f"tol={self.tol} times the spread of the "
                f"importances ({np.ptp(values):.3g}); pass a larger tol, or "
                "n_permutations to choose the number of rounds.", ConvergenceWarning,
                key="permutation cap", stacklevel=3)
        return GlobalImportance(values, std, list(self.player_names_), rounds, converged,
                                self.loss_, self.imputation)


class _LossGame(Game):
    """Each explained row's SAGE game ``v_i(S) = -loss_i(S)`` (one output), for the rows
    ``rows`` of the ``n_all`` rows that ``losses`` (see
    :meth:`KnockoffSAGE._loss_function`) knows."""

    def __init__(self, losses, rows, n_all, n_players):
        self._losses = losses
        self._rows = np.arange(n_all)[rows]
        self._n_players = n_players
        self._n_outputs = 1
        self.n_evaluations = 0

    @property
    def n_rows(self):
        return self._rows.size

    @property
    def n_players(self):
        return self._n_players

    def value(self, masks, rows=None, count=True):
        """Minus the losses of the coalitions ``masks``; see :meth:`Game.value`."""
        masks, row_ids = self._check_masks(masks, rows)
        out = -self._losses(self._rows[row_ids], masks)[:, :, None]
        self._count(row_ids.size, masks.shape[-2], count)
        return out
