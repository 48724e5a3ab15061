"""MaceRecourse: MACE counterfactual explanations (Yang et al. 2022, arXiv 2205.15540).

Not to be confused with Karimi et al.'s SMT-based MACE (AISTATS 2020).
"""

from __future__ import annotations

import numbers
import time
import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._explanation import Counterfactuals
from .._model import check_model_output, model_name
from .._random import row_keys, stream_seeds
from .._utils import draw_base_seed
from ..neighbors import NeighborIndex, check_hnsw_params
from ._base import RecourseExplainer
from ._encoding import MissingAwareEncoder, quantile_grid
from ._search import MaceSettings, _changed, candidates_from_neighbors, drive, mace_search

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, Literal

    from numpy.typing import ArrayLike

    from sklearn_xai._typing import RandomStateLike

__all__ = ["MaceRecourse"]


class MaceRecourse(RecourseExplainer):
    """MACE counterfactuals for any classifier, or a regressor with a ``desired_range``.

    The method of Yang, Feng, Li, Zhou and Hoi, "MACE: An Efficient Model-Agnostic Framework
    for Counterfactual Explanation" (arXiv 2205.15540, 2022) -- not the SMT-based MACE of
    Karimi et al. (2020). For each query and desired class:

    1. **Candidate features** (Algorithm 1): the ``n_neighbors`` nearest training rows that
       the model predicts as the desired class (an HNSW index per predicted class over
       one-hot categoricals and scaled quantile-bin ordinals) vote for the
       ``n_feature_columns`` columns and ``n_feature_values`` values per column that differ
       from the query (continuous columns also get quantiles of the desired class as
       values, ``class_quantiles``). The constraints (``immutable_features``,
       ``features_to_vary``, ``feature_ranges``, ``monotone``) are enforced here, so every
       later stage only combines allowed values.
    2. **Search** (Algorithm 2): ``method="rl"`` trains a Bernoulli (column) x softmax
       (value) policy with REINFORCE (Adam, lr 0.1, 15 epochs of 40 samples, median
       baseline, L1 and ``p log p`` regularisers of weight 2, in numpy), then decodes the
       greedy prefix counterfactual and 80 policy samples over the top ``max_changes``
       columns. ``method="gld"`` runs gradient-less descent over a relaxation of the same
       choice (radii 0.25 down to 0.0005, 20 epochs, 3 starts), keeping its incumbent.
       A greedy hill-climb is the fallback when neither finds a valid row.
    3. **Diverse selection** (Algorithm 3): valid rows sorted by proximity cost, each with
       a new set of changed columns and no column used more than ``diversity_cap`` times.
    4. **Refinement** (Algorithm 4): changed continuous features move back toward the query
       (bisection along the segment, then GLD-search per feature) while staying valid.

    When stage 2 and the fallbacks find no valid row, a final **exhaustive stage** (not in
    the paper) tries every change of one feature to a value of its grid, then of two
    features, and so on up to ``max_changes``, respecting every constraint, and stops at
    the first number of changes with a valid row; those rows then go through stages 3
    and 4. The grid of a continuous feature is its training values at the quantiles
    ``0, 1 / (2 n_bins), ..., 1`` (the edges and medians of its ``n_bins`` quantile bins:
    21 values by default), of a categorical feature its categories. One change costs
    ``sum_j m_j`` model rows (``m_j``: the allowed grid values of feature ``j``); the
    searches of two or more changes share a budget of 20,000 rows per query and desired
    class, and a number of changes that does not fit is not tried -- ``extras["stages"]``
    then says so and a warning is raised if the query stays unanswered. So a query is
    reported as not found only when no row of the grid changing at most ``max_changes``
    features is valid, or the budget stopped the search.

    All model calls are batched over the queries of a batch: a query costs about
    ``15 * 40 + 80 + max_changes`` rows with ``"rl"`` (``60 * 8`` with ``"gld"``), plus the
    single-edit batch of ``column_selection="effect"``, the post-hoc sparsity reverts and
    ``n_counterfactuals * (6 + 8 * 20)`` refinement rows, in a number of model calls per
    batch that does not grow with the number of queries (about 50-80 with ``"rl"``,
    100-130 with ``"gld"``; the exhaustive stage, for the queries that reach it, sends at
    most 4,096 rows per query per call, or the rows of one set of features if more).
    Every returned counterfactual is re-predicted in the user's feature space and is
    valid; a query for which none is found is reported as not found.
    ``explain(X).extras`` holds ``"stats"`` (``n_model_calls``, ``n_model_rows``,
    ``seconds``), ``"stage"`` (per query, the stage that answered it:
    ``"rl"``/``"gld"``, ``"greedy"``, ``"nearest_unlike"``, ``"exhaustive_<k>"`` for ``k``
    changed features, or ``"none"``; a tuple, one per desired class, when a query has
    several, like ``desired``) and ``"stages"`` (a DataFrame, one row per query and desired
    class: ``stage``, ``exhaustive_levels`` searched, ``exhaustive_skipped_level`` and
    ``exhaustive_skipped_rows``, 0 when the budget skipped nothing).

    Missing values: when the model accepts NaN (its ``allow_nan`` tag, e.g.
    ``HistGradientBoostingClassifier``, or, column by column, a pipeline whose column
    transformer imputes a column), ``fit`` and ``explain`` take rows with missing values
    there. A missing value is a value: a counterfactual keeps it or replaces it by a
    real value (a change of cost 1, like a category change, in any direction whatever
    ``monotone`` says), and never holds a missing value where the query had none.

    Parameters
    ----------
    model : classifier with ``predict_proba``
        A trained model wrapped in :class:`sklearn.frozen.FrozenEstimator`, or an
        unfitted one that ``fit(X, y)`` fits (a clone). Rows may hold missing values where
        the model accepts them (its ``allow_nan`` tag, or an imputing pipeline's columns).
    method : {"rl", "gld"}, default="rl"
        The stage-2 search.
    n_counterfactuals : int, default=3
        Counterfactuals returned per query and desired class (at most).
    desired_class : "opposite" or class label, default="opposite"
        ``"opposite"``: every class other than the query's predicted one (for a binary
        model the other class), each searched as a desired class of its own. A label: that
        class (a query already predicted as it is reported as not found). Leave it for a
        regressor. See :ref:`recourse-outcome`.
    desired_range : (low, high) or None, default=None
        Regressors only (and then required): a counterfactual is valid when the model's
        prediction lies in ``[low, high]`` (either end may be infinite). The search runs
        on two pseudo-classes, ``False`` (outside) and ``True`` (inside), with the
        "probability" of ``True`` equal to 1 inside and ``0.5 exp(-distance / scale)``
        outside (``scale``: the standard deviation of the model's predictions on the fit
        rows), so every stage works unchanged and validity is exact. Queries already
        inside get no counterfactual; ``predictions`` are the model's predicted values.
    categorical_features : "auto", None, list of names/indices or bool mask, default="auto"
        ``"auto"``: DataFrame columns of categorical, object, string or bool dtype.
    immutable_features : list of names/indices, default=None
        Features a counterfactual never changes.
    features_to_vary : "all" or list of names/indices, default="all"
        The only features a counterfactual may change (an allow-list); a feature both
        here and in ``immutable_features`` is a ValueError.
    feature_ranges : dict, default=None
        ``{feature: (low, high)}`` for a numeric feature (either end may be None) or
        ``{feature: [allowed categories]}`` for a categorical one: where a changed value
        may go (the query's own value is always kept allowed).
    monotone : dict, default=None
        ``{feature: "increase" | "decrease" | +1 | -1}``: the only direction a feature may
        move (numeric features, booleans and ordered pandas categoricals). The constraint
        vocabulary is the one of :class:`P2CERecourse`, documented once in
        :ref:`recourse-constraints`.
    n_neighbors : int, default=30
        ``K`` of Algorithm 1 (``min(K, class size)`` are used).
    n_feature_columns : int, default=10
        ``s`` of Algorithm 1.
    n_feature_values : int, default=3
        ``m`` of Algorithm 1.
    column_selection : {"effect", "votes"}, default="effect"
        How the ``n_feature_columns`` columns are chosen among those the neighbours vote
        for. ``"votes"``: the most votes (the paper). ``"effect"``: when more columns are
        voted for, every single (column, value) edit of the query is predicted in one batch
        and the columns with the highest desired-class probability are kept (OmniXAI's
        optional ``feature_column_top_k`` pruning); this matters when every neighbour differs
        in every column, as with many continuous features.
    max_changes : int, default=8
        ``w`` of Algorithm 2: at most this many features changed by one counterfactual.
        The default differs from :class:`P2CERecourse`'s 3 on purpose: MACE's search
        grows only linearly with it (``15 * 40 + 80 + max_changes`` model rows per query
        with ``"rl"``, above), and ``posthoc_sparsity`` reverts the
        changes a counterfactual does not need, so a larger budget costs little and finds
        counterfactuals for queries that need more changes; P2CE's exact Pareto front
        grows with the number of feature subsets (its docstring has the measured cost).
    n_bins : int, default=10
        Quantile bins per continuous feature for the neighbour index.
    class_quantiles : array-like of float in [0, 1] or None, default=(0.05, 0.95)
        Besides the neighbours' values, a continuous column selected by Algorithm 1 also
        gets these quantiles of the desired class (over the fit rows the model predicts
        as that class) as candidate values, so one larger move can replace several small
        ones (the neighbours of a query are, by construction, close to it). ``None``:
        neighbour values only, as in the paper.
    refine : bool or {"gld", "bisection"}, default=True
        Stage 4. ``True``: bisection then GLD-search; ``"gld"`` or ``"bisection"`` alone;
        ``False``: none.
    diversity_cap : int or None, default=3
        ``K`` of Algorithm 3 (uses of one column among the returned counterfactuals).
    fill : bool, default=True
        When fewer than ``n_counterfactuals`` rows pass the diversity rule, fill the list
        with the closest valid rows of a new change set (ignoring ``diversity_cap``), then
        with rows of a used change set but other categorical values (never with rows that
        differ only in continuous values). Selected rows are refined; when
        refinement makes two of them equal, up to two more rounds of selection follow, the
        last one without refinement. ``False`` reproduces Algorithm 3 (and may return
        fewer).
    sparsity_weight : float, default=1.0
        Algorithm 3 ranks valid rows by their proximity cost (categorical changes +
        MAD-scaled continuous changes) plus ``sparsity_weight`` times the number of changed
        features. ``0`` is the paper's ranking, which prefers two small continuous moves to
        one larger one; the default favours fewer changes.
    posthoc_sparsity : bool, default=True
        Before the diverse selection, the ``10 * n_counterfactuals`` closest valid rows are
        sparsified: changed features are reverted to the query one at a time (the revert
        that lowers the proximity cost most, all reverts of all rows in one batch per round)
        while the row stays valid; after refinement the same pass removes changes that
        refinement made unnecessary. ``False`` keeps the rows of stage 2 as they are.
    fallback : {"nearest_unlike", "greedy"}, default="nearest_unlike"
        When stage 2 finds no valid row, a greedy hill-climb over the candidates runs
        (the reference's fallback). With ``"nearest_unlike"``, if that fails too, the query
        with every allowed value copied from each of its desired-class neighbours is tried
        (then sparsified); such a counterfactual may change more than ``max_changes``
        features. With either, the exhaustive stage runs last.
    min_proba : float or None, default=None
        A counterfactual must also reach this probability of the desired class (a margin
        away from the decision boundary). ``None``: ``argmax`` only.
    neighbors : {"hnsw", "exact"}, default="hnsw"
        Neighbour search of stage 1 (:class:`sklearn_xai.neighbors.NeighborIndex`).
    hnsw_params : dict or None, default=None
        Settings of the HNSW index: ``"M"`` (int in [2, 1024]), ``"ef_construction"``
        and ``"ef_search"`` (ints >= 1); see :class:`sklearn_xai.neighbors.NeighborIndex`.
        Checked by ``fit`` before the index is built.
    batch_size : int, default=256
        Queries searched together; each model call then holds up to about
        ``batch_size * 600`` rows (a model call's fixed cost is shared by the batch).
        Results do not depend on it.
    n_jobs : int or None, default=None
        Batches searched in parallel (joblib, preferring threads: model calls on large
        batches mostly release the GIL, and the model is not copied). Results do not depend
        on it.
    random_state : int, RandomState or None, default=None
        One integer is drawn from it per ``explain`` call; each (query, desired class)
        gets a generator seeded from that integer and the query's content
        (:func:`sklearn_xai._random.row_keys`), so a query's counterfactuals do not depend
        on the other rows of the call, and equal rows get equal counterfactuals.
    verbose : int, default=0
        Progress on stderr: ``0`` nothing; ``1`` a progress bar (queries done, rate, time
        left; tqdm's when it is installed) for calls that run longer than about 2 s; ``2``
        also the time of each batch of ``batch_size`` queries. The results do not depend
        on it.

    Attributes
    ----------
    model_ : the explained model
    encoder_ : TabularEncoder (categories, bins, MAD scales, constraints)
    classes_ : ndarray, the model's classes
    indexes_ : dict class position -> NeighborIndex (classes never predicted on the fit
        data have none; their queries are searched by the exhaustive stage only)
    index_rows_ : dict class position -> ndarray of internal rows behind each index
    grid_ : list of ndarray, the internal values of each feature for the exhaustive stage
    n_features_in_, feature_names_in_

    Notes
    -----
    ``score(X)`` is the validity rate (queries with at least one counterfactual) minus
    ``0.1`` times the mean proximity cost of the best counterfactual of each found query
    (categorical changes + MAD-scaled continuous changes, the paper's proximity). Higher is
    better, so a setting that finds nothing never wins.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.frozen import FrozenEstimator
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_xai.recourse import MaceRecourse
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = LogisticRegression(max_iter=5000).fit(X, y)
    >>> mace = MaceRecourse(FrozenEstimator(clf), random_state=0).fit(X)
    >>> cf = mace.explain(X[:2])
    >>> bool(cf.valid.all())
    True
    """

    _parameter_constraints = {
        **RecourseExplainer._parameter_constraints,
        "method": [StrOptions({"rl", "gld"})],
        "n_counterfactuals": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_feature_columns": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_feature_values": [Interval(numbers.Integral, 1, None, closed="left")],
        "column_selection": [StrOptions({"votes", "effect"})],
        "max_changes": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_bins": [Interval(numbers.Integral, 2, None, closed="left")],
        "class_quantiles": [None, "array-like"],
        "refine": ["boolean", StrOptions({"gld", "bisection"})],
        "diversity_cap": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "fill": ["boolean"],
        "sparsity_weight": [Interval(numbers.Real, 0, None, closed="left")],
        "posthoc_sparsity": ["boolean"],
        "fallback": [StrOptions({"greedy", "nearest_unlike"})],
        "min_proba": [None, Interval(numbers.Real, 0, 1, closed="both")],
        "neighbors": [StrOptions({"hnsw", "exact"})],
        "hnsw_params": [None, dict],
        "random_state": ["random_state"],
    }

    #: old parameter name -> new name (passing the old one is an error naming the new one)
    _renamed_parameters = {"sparsify": "posthoc_sparsity"}
    _cli_name = "mace"
    _label = "MACE"
    _in_default_report = True
    # MACE batches its model calls over the queries of one call: it takes them all at once
    _report_chunk = None
    _report_note = "MACE returns up to 3 diverse, sparse counterfactuals per row."

    @classmethod
    def _report_params(cls, model, *, seed, immutable=None, time_limit=None):
        return {"n_counterfactuals": 3, "immutable_features": immutable, "random_state": seed}

    def __init__(
        self,
        model: Any = None,
        *,
        method: Literal["rl", "gld"] = "rl",
        n_counterfactuals: int = 3,
        desired_class: Any = "opposite",
        desired_range: tuple[float, float] | None = None,
        categorical_features: Literal["auto"] | ArrayLike | None = "auto",
        immutable_features: Sequence[int | str] | None = None,
        features_to_vary: Literal["all"] | Sequence[int | str] = "all",
        feature_ranges: Mapping[Any, Any] | None = None,
        monotone: Mapping[Any, Any] | None = None,
        n_neighbors: int = 30,
        n_feature_columns: int = 10,
        n_feature_values: int = 3,
        column_selection: Literal["effect", "votes"] = "effect",
        max_changes: int = 8,
        n_bins: int = 10,
        class_quantiles: ArrayLike | None = (0.05, 0.95),
        refine: bool | Literal["gld", "bisection"] = True,
        diversity_cap: int | None = 3,
        fill: bool = True,
        sparsity_weight: float = 1.0,
        posthoc_sparsity: bool = True,
        fallback: Literal["nearest_unlike", "greedy"] = "nearest_unlike",
        min_proba: float | None = None,
        neighbors: Literal["hnsw", "exact"] = "hnsw",
        hnsw_params: Mapping[str, int] | None = None,
        batch_size: int = 256,
        n_jobs: int | None = None,
        random_state: RandomStateLike = None,
        verbose: int = 0,
    ) -> None:
        self.model = model
        self.method = method
        self.n_counterfactuals = n_counterfactuals
        self.desired_class = desired_class
        self.desired_range = desired_range
        self.categorical_features = categorical_features
        self.immutable_features = immutable_features
        self.features_to_vary = features_to_vary
        self.feature_ranges = feature_ranges
        self.monotone = monotone
        self.n_neighbors = n_neighbors
        self.n_feature_columns = n_feature_columns
        self.n_feature_values = n_feature_values
        self.column_selection = column_selection
        self.max_changes = max_changes
        self.n_bins = n_bins
        self.class_quantiles = class_quantiles
        self.refine = refine
        self.diversity_cap = diversity_cap
        self.fill = fill
        self.sparsity_weight = sparsity_weight
        self.posthoc_sparsity = posthoc_sparsity
        self.fallback = fallback
        self.min_proba = min_proba
        self.neighbors = neighbors
        self.hnsw_params = hnsw_params
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ----------------------------------------------------------------------- fit
    def _fit(self, X, y):
        """Encode ``X``, predict it with the model and index it per predicted class.

        Cost: one batched ``predict_proba`` over ``X`` and one HNSW build per predicted
        class.
        """
        # nested settings are checked here, before any of them reaches compiled code
        hnsw_params = check_hnsw_params(self.hnsw_params, caller="MaceRecourse")
        quantiles = self._check_quantiles(self.class_quantiles)
        model = self.model_
        self._range_ = None
        if self._resolve_outcome(model) is not None:
            lo, hi = self.desired_range_
            pred = check_model_output(model.predict(X), model, "predict", X)
            if pred.shape[1] != 1:
                raise ValueError("desired_range needs a single-output regressor; the model "
                                 f"predicts {pred.shape[1]} outputs.")
            scale = float(np.std(pred))
            self._range_ = (lo, hi, scale if np.isfinite(scale) and scale > 0 else 1.0)
            self.classes_ = np.array([False, True])
        self.encoder_ = MissingAwareEncoder(
            categorical_features=self.categorical_features,
            n_bins=self.n_bins,
            # the model decides column by column (an imputing branch of a column
            # transformer); _validate_X has refused NaN in the other columns
            allow_missing=self._allow_nan() or bool(np.any(self._nan_columns(X.shape[1]))),
        ).fit(X)
        self._resolve_constraints(self.encoder_)
        Z = self.encoder_.to_internal(X)
        self.grid_ = quantile_grid(self.encoder_, Z)
        P = self._proba(Z)
        pred = P.argmax(axis=1)
        E = self.encoder_.embed(Z)
        self.indexes_, self.index_rows_, self.class_values_ = {}, {}, {}
        for c in range(self.classes_.size):
            rows = np.flatnonzero(pred == c)
            if rows.size == 0:
                continue
            # de-duplicate in the embedding, keep the first occurrence
            _, first = np.unique(E[rows], axis=0, return_index=True)
            rows = rows[np.sort(first)]
            self.indexes_[c] = NeighborIndex(self.neighbors, **hnsw_params).fit(E[rows])
            self.index_rows_[c] = Z[rows]
            if quantiles.size:
                members = Z[pred == c]
                with warnings.catch_warnings():  # a column missing in every member
                    warnings.simplefilter("ignore", RuntimeWarning)
                    values = np.nanquantile(members, quantiles, axis=0, method="inverted_cdf")
                self.class_values_[c] = self.encoder_.snap(values)
        return self

    # ----------------------------------------------------------------- internals
    @staticmethod
    def _check_quantiles(quantiles):
        if quantiles is None:
            return np.zeros(0)
        try:
            q = np.asarray(quantiles, dtype=np.float64)
        except (TypeError, ValueError):
            q = np.full(1, np.nan)
        if q.ndim != 1 or not np.all((q >= 0) & (q <= 1)):
            raise ValueError("class_quantiles must be None or a 1-D list of numbers in "
                             f"[0, 1]; got {quantiles!r}.")
        return q

    def _proba_user(self, U):
        """Class probabilities of user-space rows; for a regressor with ``desired_range``,
        the pseudo-probabilities of (outside, inside)."""
        if self._range_ is None:
            P = check_model_output(self.model_.predict_proba(U), self.model_, "predict_proba",
                                   U)
            if P.shape[1] != self.classes_.size:
                raise ValueError(
                    f"The model {model_name(self.model_)}'s predict_proba returned "
                    f"{P.shape[1]} column(s) for its {self.classes_.size} classes_; it must "
                    "return one probability per class.")
            return P
        y = check_model_output(self.model_.predict(U), self.model_, "predict", U)
        return self._range_proba(y[:, 0])

    def _range_proba(self, y):
        lo, hi, scale = self._range_
        dist = np.maximum(lo - y, 0.0) + np.maximum(y - hi, 0.0)
        inside = np.where(dist == 0.0, 1.0, 0.5 * np.exp(-dist / scale))
        return np.column_stack([1.0 - inside, inside])

    def _proba(self, Z):
        """Class probabilities of internal rows (decoded to the user space), batched."""
        enc = self.encoder_
        out = []
        step = 8192
        for a in range(0, Z.shape[0], step):
            U = enc.to_user(enc.snap(Z[a : a + step]))
            out.append(self._proba_user(U))
        return np.vstack(out) if out else np.zeros((0, self.classes_.size))

    def _targets(self, pred):
        """Desired class positions per query (list of lists)."""
        if self._range_ is not None:  # the range is the only desired outcome
            return [[1] if p != 1 else [] for p in pred]
        return self._desired_positions(pred)

    def _settings(self):
        refine = {True: "both", False: "none"}.get(self.refine, self.refine)
        return MaceSettings(
            method=self.method,
            n_counterfactuals=self.n_counterfactuals,
            max_changes=self.max_changes,
            n_feature_columns=self.n_feature_columns,
            column_selection=self.column_selection,
            refine=refine,
            diversity_cap=self.diversity_cap,
            fill=self.fill,
            sparsity_weight=float(self.sparsity_weight),
            sparsify=self.posthoc_sparsity,
            fallback=self.fallback == "nearest_unlike",
        )

    def _explain_chunk(self, Zq, Pq, jobs, seeds):
        """Search the (query, target) ``jobs`` of one batch; returns results and counts.

        ``seeds[i]`` seeds query ``i`` (from its content), so a query's result does not
        depend on the other queries of the call.
        """
        enc = self.encoder_
        settings = self._settings()
        gens = []
        # stage 1: one neighbour query per desired class for the whole batch
        by_t = {}
        for n, (i, t, _) in enumerate(jobs):
            by_t.setdefault(t, []).append(n)
        cands = [None] * len(jobs)
        for t, members in by_t.items():
            if t not in self.indexes_:
                for n in members:
                    cands[n] = (np.zeros(0, dtype=np.int64), [], None)
                continue
            qi = [jobs[n][0] for n in members]
            _, nb = self.indexes_[t].kneighbors(enc.embed(Zq[qi]), self.n_neighbors)
            for n, row in zip(members, nb):
                neigh = self.index_rows_[t][row]
                cands[n] = candidates_from_neighbors(
                    enc, Zq[jobs[n][0]], neigh,
                    self.n_feature_columns if self.column_selection == "votes" else None,
                    self.n_feature_values,
                    self.class_values_.get(t),
                ) + (neigh,)
        for n, (i, t, k) in enumerate(jobs):
            rng = np.random.default_rng(np.random.SeedSequence(entropy=int(seeds[i]),
                                                               spawn_key=(int(t),)))
            cols, vals, neigh = cands[n]
            gens.append(
                mace_search(
                    enc, Zq[i], t, Pq[i, t], cols, vals, rng, settings, self.min_proba,
                    neigh, self.grid_,
                )
            )
        results, n_calls, n_rows = drive(gens, self._proba)
        # compact per batch: one array of rows and one of (query, desired class) per batch,
        # not a Python object per counterfactual kept until the end
        d = Zq.shape[1]
        found = [(rows, i, t) for (i, t, _), (rows, _, _) in zip(jobs, results) if len(rows)]
        R = np.vstack([f[0] for f in found]) if found else np.zeros((0, d))
        meta = np.array([(i, t) for rows, i, t in found for _ in range(len(rows))],
                        dtype=np.int64).reshape(-1, 2)
        infos = [(i, t, info) for (i, t, _), (_, _, info) in zip(jobs, results)]
        return R, meta, n_calls, n_rows, infos

    def _explain(self, X):
        t0 = time.perf_counter()
        enc = self.encoder_
        Zq = enc.to_internal(X)
        Pq = self._proba(Zq)
        pred = Pq.argmax(axis=1)
        targets = self._targets(pred)
        jobs = [(i, t, k) for i in range(len(Zq)) for k, t in enumerate(targets[i])]
        # one stream per query, keyed by its content: the same row gets the same draws
        # alone, in any batch, next to any other rows or next to a copy of itself
        seeds = stream_seeds(draw_base_seed(self.random_state), row_keys(Zq))
        bs = max(1, int(self.batch_size))
        # batches by query, so one query's targets stay together
        by_chunk = {}
        for j in jobs:  # jobs are in query order; one pass, not one scan per chunk
            by_chunk.setdefault(j[0] // bs, []).append(j)
        job_chunks = [by_chunk[c] for c in sorted(by_chunk)]
        outs = self._map_tasks(
            lambda c: self._explain_chunk(Zq, Pq, c, seeds), job_chunks,
            sizes=[len({j[0] for j in c}) for c in job_chunks], prefer="threads")
        n_calls = 1 + sum(o[2] for o in outs)
        n_rows = len(Zq) + sum(o[3] for o in outs)
        d = Zq.shape[1]
        R = np.vstack([o[0] for o in outs]) if outs else np.zeros((0, d))
        meta = np.vstack([o[1] for o in outs]) if outs else np.zeros((0, 2), dtype=np.int64)
        infos = [info for o in outs for info in o[4]]
        del outs
        # grouped by query, then desired class, best first (a stable sort: the batches
        # already come in this order), so the frames below need no reordering
        if len(R):
            order = np.lexsort((np.arange(len(R)), meta[:, 1], meta[:, 0]))
            R, meta = R[order], meta[order]
        # every returned row is re-predicted on exactly what the user gets back
        cf_user = enc.to_user(R) if len(R) else None
        values = None
        if len(R):
            if self._range_ is None:
                P = self._proba_user(cf_user)
            else:
                values = check_model_output(self.model_.predict(cf_user), self.model_,
                                            "predict", cf_user)[:, 0]
                P = self._range_proba(values)
            n_calls += 1
            n_rows += len(R)
            ts = meta[:, 1]
            ok = P.argmax(axis=1) == ts
            if self.min_proba is not None:
                ok &= P[np.arange(len(R)), ts] >= self.min_proba
            keep = np.flatnonzero(ok)  # a row that fails re-prediction is dropped, not returned
        else:
            keep = np.zeros(0, dtype=np.int64)
        stats = {
            "n_model_calls": n_calls,
            "n_model_rows": n_rows,
            "seconds": time.perf_counter() - t0,
        }
        stages = self._stage_frame(infos, meta[keep])
        return self._assemble(X, Zq, R, keep, meta, P if len(R) else None, targets, stats,
                              values, cf_user, stages)

    def _stage_frame(self, infos, kept_meta):
        """One row per (query, desired class): the stage that answered it, and the
        exhaustive stage's levels; warns when its row cap left a query unanswered."""
        answered = {(int(i), int(t)) for i, t in kept_meta}
        rows = []
        for i, t, info in infos:
            # a job whose rows all failed the final re-prediction is not answered
            stage = info.stage if (int(i), int(t)) in answered else "none"
            skipped = info.exhaustive_skipped
            rows.append((int(i), self.classes_[t], stage, info.exhaustive_levels,
                         0 if skipped is None else skipped[0],
                         0 if skipped is None else skipped[1]))
        frame = pd.DataFrame(rows, columns=["query", "desired_class", "stage",
                                            "exhaustive_levels", "exhaustive_skipped_level",
                                            "exhaustive_skipped_rows"])
        frame = frame.sort_values(["query"], kind="stable").reset_index(drop=True)
        capped = frame[(frame["stage"] == "none") & (frame["exhaustive_skipped_level"] > 0)]
        if len(capped):
            first = capped.iloc[0]
            warnings.warn(
                f"MaceRecourse found no counterfactual for {capped['query'].nunique()} "
                "query(ies) although its exhaustive search did not try every number of "
                f"changes: e.g. for query {first['query']} it stopped before "
                f"{first['exhaustive_skipped_level']} changed features, which need "
                f"{first['exhaustive_skipped_rows']:,} model rows (the searches of two or "
                f"more changes share a budget of {MaceSettings.exhaustive_max_rows:,} rows "
                "per query and desired class). A counterfactual changing more features may "
                "exist; see extras['stages'] (exhaustive_skipped_*). immutable_features and "
                "feature_ranges shrink the search.", UserWarning, stacklevel=4)
        return frame

    def _assemble(self, X, Zq, R, keep, meta, P, targets, stats, values=None, cf_user=None,
                  stages=None):
        enc = self.encoder_
        n = len(Zq)
        queries = X.reset_index(drop=True) if isinstance(X, pd.DataFrame) else pd.DataFrame(
            np.asarray(X, dtype=np.float64), columns=self._feature_names()
        )
        names = list(queries.columns)
        all_kept = len(keep) == len(R)
        if not all_kept:
            R = R[keep]
            meta = meta[keep]
        if len(R):
            # the rows decoded for the re-prediction are the rows returned
            if isinstance(cf_user, pd.DataFrame):
                cf = cf_user if all_kept else cf_user.iloc[keep]
            else:
                cf = pd.DataFrame(cf_user if all_kept else cf_user[keep], columns=names,
                                  copy=False)
            P = P[keep]
        else:
            cf = queries.iloc[:0].copy()
            P = np.zeros((0, self.classes_.size))
        qidx = np.asarray(meta[:, 0], dtype=np.int64)
        tpos = np.asarray(meta[:, 1], dtype=np.int64)
        if not isinstance(cf.index, pd.RangeIndex) or cf.index.start != 0:
            cf = cf.reset_index(drop=True)
        cf.insert(0, "query", qidx)
        x_of = Zq[qidx] if len(R) else np.zeros((0, Zq.shape[1]))
        costs = pd.DataFrame(
            {
                "desired_class": self.classes_[tpos] if len(R) else self.classes_[:0],
                "proximity": enc.cost(R, x_of),
                "n_changed": _changed(R, x_of).sum(axis=1).astype(np.int64),
            }
        )
        pred_t = P[np.arange(len(R)), tpos] if len(R) else np.zeros(0)
        if self._range_ is not None:  # report the predicted values, not pseudo-probabilities
            pred_t = values[keep] if len(R) else np.zeros(0)
        found = np.zeros(n, dtype=bool)
        found[qidx] = True
        desired = np.empty(n, dtype=object)
        stage = np.empty(n, dtype=object)
        by_query = {}
        for q, s in zip(stages["query"], stages["stage"]):
            by_query.setdefault(int(q), []).append(s)
        for i in range(n):
            ts = [self.classes_.tolist()[t] for t in targets[i]]
            desired[i] = ts[0] if len(ts) == 1 else (tuple(ts) if ts else None)
            if self._range_ is not None:
                desired[i] = tuple(self._range_[:2]) if targets[i] else None
            st = by_query.get(i, [])
            stage[i] = st[0] if len(st) == 1 else (tuple(st) if st else None)
        # rows are already grouped by query, then desired class, best first (_explain)
        return Counterfactuals(
            queries=queries,
            counterfactuals=cf,
            predictions=pred_t,
            valid=np.ones(len(R), dtype=bool),
            costs=costs,
            found=found,
            desired=desired,
            index=X.index if isinstance(X, pd.DataFrame) else None,
            extras={
                "proba": P,
                "classes": self.classes_,
                "stats": stats,
                "stage": stage,
                "stages": stages,
            },
        )

    # ---------------------------------------------------------------- public API
    def score(self, X: ArrayLike | pd.DataFrame, y: None = None) -> float:
        """Validity rate minus 0.1 x mean proximity cost of the best counterfactuals.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Queries, with the columns given to ``fit``.
        y : None
            Ignored.

        Returns
        -------
        float
            ``found.mean() - 0.1 * mean(proximity of the first counterfactual of each found
            query)``; the proximity is categorical changes + MAD-scaled continuous changes.
        """
        check_is_fitted(self)
        res = self.explain(X)
        if not res.found.any():
            return 0.0
        q = np.asarray(res.counterfactuals["query"])
        _, first = np.unique(q, return_index=True)
        prox = np.asarray(res.costs["proximity"])[first]
        return float(res.found.mean() - 0.1 * prox.mean())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()  # allow_nan: the model's
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags

