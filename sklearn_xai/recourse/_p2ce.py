"""P2CE: the Pareto front of plausible counterfactuals by branch and bound."""

import time
import warnings
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import _fit_context
from sklearn.ensemble import IsolationForest
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted

from .._explanation import Counterfactuals
from .._model import make_model_function
from .._random import row_keys
from .._utils import draw_base_seed, row_generators
from ..base import BaseExplainer, RecourseMixin, _is_frame
from ._p2ce_grid import OBJECTIVES, FeatureGrid, costs
from ._p2ce_models import (
    FlatIsolationForest,
    LinearBound,
    ModelSpace,
    ShapBound,
    SoftmaxTreeBound,
    TreeBound,
    candidate_rows,
    check_columnwise,
    final_linear,
    input_owner,
    linear_coefficients,
    parse_tree_model,
    split_pipeline,
    unwrap,
)
from ._p2ce_search import QueryProblem, search_query

_SHAP_BACKGROUND = 20  # background rows of the SHAP game (the first rows of the sample)
# permutation SHAP budget (coalition evaluations per player and row): about 10 permutations
_SHAP_N_EVALS = 10
_VERIFY_ROWS = 200  # training rows on which a bound's model reconstruction is checked
_FLOAT32_MAX = float(np.finfo(np.float32).max)  # the isolation forest works in float32


class P2CERecourse(RecourseMixin, BaseExplainer):
    """Pareto-optimal plausible counterfactuals (P2CE) by best-first branch and bound.

    For each query ``x`` the search returns every Pareto-optimal point (one per cost
    vector, under ``objectives``) of a discrete action grid that (a) the model predicts in
    ``desired_class`` with probability ``>= threshold``, (b) changes at most
    ``max_changes`` features, and (c) with ``plausibility=True``, an isolation forest fitted
    on the training data calls an inlier. The search is the one of de Oliveira,
    Valdrighi and Raimundo (P2CE, 2026), with bounds that are exact where the model
    allows (see ``bound``), so that the front is the same as the one found by enumerating
    every grid point.

    Parameters
    ----------
    model : estimator
        A binary or multi-class classifier with ``predict_proba``. Cloned and fitted on
        ``fit(X, y)``, or used as is when wrapped in :class:`sklearn.frozen.FrozenEstimator`.
    objectives : tuple of str, default=("max_distance", "n_changes", "mean_distance")
        Costs to minimise, any of ``"max_distance"`` (largest change divided by the
        training standard deviation), ``"n_changes"``, ``"mean_distance"`` (mean over all
        features of the std-scaled change), ``"l2"`` (Euclidean norm of the std-scaled
        change) and ``"percentile"`` (largest shift of the empirical training CDF). A
        changed categorical feature counts 1 in every distance. All costs are reported.
    max_changes : int, default=3
        Largest number of changed features.
    threshold : float, default=0.5
        A point is valid when the desired class's probability is ``>= threshold``.
    desired_class : class label, default=1
    grid_percentiles : (float, float), default=(1, 99)
        Percentile bounds of each numeric feature's grid.
    grid_step : float, default=0.05
        Grid step as a fraction of the percentile range (ceiled to an integer, at least 1,
        for integer columns).
    categorical_features : "auto", None, or list of int / str / bool mask, default="auto"
        Features searched as value sets. ``"auto"``: DataFrame columns of object,
        string or category dtype. Integer-coded categories for a model that splits on
        them as categories (e.g. ``HistGradientBoostingClassifier(categorical_features=
        ...)``) should be listed here so that every category is a candidate.
    immutable_features : None or list of int / str, default=None
        Features that never change.
    monotone : None or dict {feature: +1 or -1}, default=None
        ``+1``: the feature may only increase; ``-1``: only decrease.
    plausibility : bool, default=True
        Require every returned point to be an isolation-forest inlier (with the exact
        look-ahead pruning). ``False`` gives a MAPOCAM-style search.
    contamination : float, default=0.05
        Fraction of training rows the isolation forest calls outliers (its threshold).
        Returned points are inliers of this forest, but a cost-minimal point tends to sit
        just inside its threshold, so a forest fitted on other data (or with another
        seed) calls some of them outliers. A contamination above the level at which
        plausibility will be judged leaves a margin: in ``benchmarks/bench_p2ce.py``,
        0.15 against a judging forest at 0.05 gave no judged outlier on any of nine
        dataset/model cells, where 0.05 gave 3 to 15 % of the individuals, at the price of
        fewer individuals with a plausible counterfactual within the change budget.
    n_estimators : int, default=100
        Trees of the isolation forest.
    max_samples : int or float, default=0.25
        Rows per isolation tree (a float is a fraction of the training rows; ``fit`` needs
        enough rows for one per tree, e.g. at least 4 with the default).
    bound : {"auto", "exact", "shap", "none"}, default="auto"
        Probability bound of a partial point. ``"exact"``: the largest probability any
        completion on the grid reaches, from the flat tree ensemble (scikit-learn,
        XGBoost, LightGBM; numeric, categorical and missing-value splits) or from the
        coefficients of a binary linear classifier (with the change budget), also as the
        last step of a Pipeline whose other steps are column-wise (a ColumnTransformer of
        OneHotEncoder, OrdinalEncoder, scalers, SimpleImputer, KBinsDiscretizer,
        passthrough) or, for a linear model, affine: the bound is then taken over the
        input columns' grid. An error if the model is none of these. For a multi-class
        boosted ensemble (softmax) it is a safe bound rather than the exact maximum: the
        largest reachable desired-class margin against the smallest reachable margin of
        every other class, which never loses a solution. ``"shap"``: the
        paper's SHAP estimate, a heuristic that can lose solutions. ``"none"``: no
        probability pruning (exact, slower). ``"auto"``: ``"exact"`` when available, else
        ``"none"``. ``bound_`` records the choice.
    time_limit : float or None, default=None
        Seconds per query; a query that runs out stops with a warning, and its front
        may be partial (``extras["complete"]``).
    shap_samples : int, default=100
        Training rows (seeded sample) whose mean ``|SHAP|`` orders the search levels. For a
        tree ensemble: path-dependent TreeSHAP of the margin
        (:class:`~sklearn_xai.TreeShapExplainer`); otherwise (and for the ``"shap"``
        bound's ``phi^max``) permutation SHAP of the desired-class probability with the
        first 20 sample rows as background and ``n_evals=10`` (about 10 antithetic
        permutations per row, :func:`sklearn_xai.shapley.permutation_shapley`).
    random_state : int, RandomState or None, default=None
        Seeds the isolation forest and the SHAP sample.
    n_jobs : int or None, default=None
        Workers over queries (the results do not depend on it).

    Attributes
    ----------
    model_ : fitted model
    grid_ : FeatureGrid
        Per-feature grids, scales (``grid_.sigma``) and CDFs.
    isolation_forest_ : IsolationForest
    feature_order_ : ndarray of int
        Searched features, in level order (decreasing mean ``|SHAP|``).
    feature_importances_ : ndarray of shape (n_features,)
        Mean ``|SHAP|`` on the sample (see ``shap_samples``).
    importance_method_ : str
        ``"tree_shap"`` or ``"permutation_shap"``.
    bound_ : str
        ``"tree"``, ``"linear"``, ``"shap"`` or ``"none"``.

    Notes
    -----
    For tree ensembles and linear classifiers the search evaluates the model through its
    flat reconstruction (checked at fit to match ``predict_proba`` within 1e-7 on up to
    200 training rows, and a pipeline's preprocessing checked to be column-wise, else not
    used); every returned point is re-predicted by the model itself
    (``Counterfactuals.predictions`` and ``valid``).

    Missing values (NaN) are accepted in ``X`` where the model accepts them (checked by
    calling it; otherwise a ValueError names the features). A missing value is a value of
    its own: a counterfactual keeps it or moves it to a grid value (a change that counts
    1 in every distance, like a changed category), and NaN never appears in a
    counterfactual where the query had a value. The grid, scales and CDFs use the
    observed values; the isolation forest routes missing values as scikit-learn's trees
    do.

    The isolation forest works in float32, so a feature with values beyond float32's range
    (about 3.4e38 in magnitude) is refused with a ValueError naming it, in ``fit`` and at
    explain time; so is a query whose distance to the grid, counted in training standard
    deviations, exceeds float64. Costs are computed without overflow otherwise (the
    standard deviation of a column of extreme magnitude and the ``"l2"`` and
    ``"mean_distance"`` of extreme changes are rescaled first), so every reported cost is
    finite.

    Cost: one model call (a batch of at most one feature's candidates) per expanded node;
    an exact tree bound costs one pruned traversal of the ensemble per child.
    """

    _parameter_constraints: dict = {
        "model": "no_validation",
        "objectives": [tuple, list],
        "max_changes": [Interval(Integral, 1, None, closed="left")],
        "threshold": [Interval(Real, 0, 1, closed="neither")],
        "desired_class": "no_validation",
        "grid_percentiles": [tuple, list],
        "grid_step": [Interval(Real, 0, 1, closed="right")],
        "categorical_features": [StrOptions({"auto"}), None, list, tuple, np.ndarray],
        "immutable_features": [None, list, tuple, np.ndarray],
        "monotone": [None, dict],
        "plausibility": ["boolean"],
        "contamination": [Interval(Real, 0, 0.5, closed="right")],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "max_samples": [Interval(Integral, 1, None, closed="left"),
                        Interval(Real, 0, 1, closed="right")],
        "bound": [StrOptions({"auto", "exact", "shap", "none"})],
        "time_limit": [None, Interval(Real, 0, None, closed="neither")],
        "shap_samples": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
    }

    _cli_name = "p2ce"
    _label = "P2CE"
    _in_default_report = True

    @classmethod
    def _report_params(cls, model, *, seed, immutable=None, time_limit=None):
        return {"desired_class": model.classes_[-1], "max_changes": 3,
                "immutable_features": immutable, "time_limit": time_limit,
                "random_state": seed}

    @classmethod
    def _test_params(cls):
        return {"grid_step": 0.25, "max_changes": 2, "n_estimators": 5, "shap_samples": 5,
                "time_limit": 5.0, "random_state": 0}

    @classmethod
    def _test_instances(cls):
        from sklearn.linear_model import LogisticRegression

        return [lambda: cls(LogisticRegression(), grid_step=0.25, max_changes=2,
                            n_estimators=5, shap_samples=5, random_state=0)]

    def __init__(self, model, *, objectives=("max_distance", "n_changes", "mean_distance"),
                 max_changes=3, threshold=0.5, desired_class=1, grid_percentiles=(1, 99),
                 grid_step=0.05, categorical_features="auto", immutable_features=None,
                 monotone=None, plausibility=True, contamination=0.05, n_estimators=100,
                 max_samples=0.25, bound="auto", time_limit=None, shap_samples=100,
                 random_state=None, n_jobs=None):
        self.model = model
        self.objectives = objectives
        self.max_changes = max_changes
        self.threshold = threshold
        self.desired_class = desired_class
        self.grid_percentiles = grid_percentiles
        self.grid_step = grid_step
        self.categorical_features = categorical_features
        self.immutable_features = immutable_features
        self.monotone = monotone
        self.plausibility = plausibility
        self.contamination = contamination
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.bound = bound
        self.time_limit = time_limit
        self.shap_samples = shap_samples
        self.random_state = random_state
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------ encoding
    def _feature_index(self, spec, what):
        names = self._feature_names()
        d = len(names)
        spec = list(np.asarray(spec).tolist()) if isinstance(spec, np.ndarray) else list(spec)
        if spec and all(isinstance(s, bool | np.bool_) for s in spec):
            if len(spec) != d:
                raise ValueError(f"{what} as a boolean mask needs {d} entries, got {len(spec)}.")
            return [j for j, s in enumerate(spec) if s]
        out = []
        for s in spec:
            if isinstance(s, str):
                if s not in names:
                    raise ValueError(f"{what} names an unknown feature {s!r}.")
                out.append(names.index(s))
            elif isinstance(s, Integral) and -d <= int(s) < d:
                out.append(int(s) % d)
            else:
                raise ValueError(f"{what} entry {s!r} is not a feature of X.")
        return out

    def _encode_fit(self, X):
        """Internal float matrix; categorical string columns become category indices."""
        import pandas as pd

        d = X.shape[1]
        self._frame_ = _is_frame(X)
        self._labels_ = list(X.columns) if self._frame_ else self._feature_names()
        cat = np.zeros(d, dtype=bool)
        self._categories_ = [None] * d
        self._string_cols_ = np.zeros(d, dtype=bool)
        if self._frame_:
            for j, name in enumerate(X.columns):
                dt = X[name].dtype
                is_num = (pd.api.types.is_numeric_dtype(dt) and not isinstance(
                    dt, pd.CategoricalDtype)) or pd.api.types.is_bool_dtype(dt)
                if not is_num:
                    self._string_cols_[j] = True
                    cat[j] = True
        if isinstance(self.categorical_features, str):
            pass
        elif self.categorical_features is not None:
            for j in self._feature_index(self.categorical_features, "categorical_features"):
                cat[j] = True
        Z = np.empty((X.shape[0], d))
        for j in range(d):
            col = X.iloc[:, j] if self._frame_ else X[:, j]
            if self._string_cols_[j]:
                dt = col.dtype
                if isinstance(dt, pd.CategoricalDtype):
                    cats = np.asarray(dt.categories, dtype=object)
                else:
                    cats = np.asarray(sorted(pd.unique(col.dropna()), key=str), dtype=object)
                self._categories_[j] = cats
                Z[:, j] = self._codes(j, col)
            else:
                Z[:, j] = self._numeric_column(col)
        self._check_magnitude(Z)
        return Z, cat

    def _numeric_column(self, col):
        if hasattr(col, "to_numpy"):
            return col.to_numpy(dtype=np.float64, na_value=np.nan)
        return np.asarray(col, dtype=np.float64)

    def _check_magnitude(self, Z):
        """Values beyond float32 would become infinite in the isolation forest."""
        big = np.abs(Z) > _FLOAT32_MAX
        if big.any():
            j = int(np.flatnonzero(big.any(axis=0))[0])
            raise ValueError(
                f"feature {self._labels_[j]!r} has values too large for the isolation forest "
                f"(the plausibility model), which works in float32: up to "
                f"{np.abs(Z[:, j]).max():.3g} in magnitude, above {_FLOAT32_MAX:.3g}. Rescale "
                "the feature.")

    def _check_distances(self, Z):
        """Every candidate's change, in training standard deviations, must be finite."""
        g = self.grid_
        for j in np.flatnonzero(~g.categorical & ~g.immutable):
            if len(g.grids[j]) == 0:
                continue
            lo, hi = g.grids[j][0], g.grids[j][-1]
            with np.errstate(over="ignore", invalid="ignore"):
                far = np.maximum(np.abs(Z[:, j] - lo), np.abs(Z[:, j] - hi)) / g.sigma[j]
            bad = np.flatnonzero(~np.isfinite(far) & ~np.isnan(Z[:, j]))
            if bad.size:
                i = int(bad[0])
                raise ValueError(
                    f"feature {self._labels_[j]!r}: query row {i} (value {Z[i, j]:.3g}) "
                    f"lies further from the training values than float64 can count in "
                    f"training standard deviations ({g.sigma[j]:.3g}); rescale the feature.")

    def _codes(self, j, col):
        import pandas as pd

        cats = self._categories_[j]
        lookup = {c: k for k, c in enumerate(cats)}
        vals = np.asarray(col, dtype=object)
        codes = np.empty(len(vals))
        for i, v in enumerate(vals):
            if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
                codes[i] = np.nan
                continue
            if v not in lookup:
                name = self._labels_[j]
                raise ValueError(f"Unknown category {v!r} in feature {name!r}.")
            codes[i] = lookup[v]
        return codes

    def _encode(self, X):
        if self._frame_ and not _is_frame(X):
            raise TypeError("X must be a DataFrame when P2CERecourse was fitted on one.")
        d = X.shape[1]
        Z = np.empty((X.shape[0], d))
        for j in range(d):
            col = X.iloc[:, j] if self._frame_ else X[:, j]
            if self._string_cols_[j]:
                Z[:, j] = self._codes(j, col)
            else:
                Z[:, j] = self._numeric_column(col)
        self._check_magnitude(Z)
        return Z

    def _decode(self, Z):
        """Internal rows to model input (object array when categories are strings)."""
        if not self._string_cols_.any():
            return Z
        out = Z.astype(object)
        for j in np.flatnonzero(self._string_cols_):
            codes = Z[:, j]
            miss = np.isnan(codes)
            col = np.empty(len(codes), dtype=object)
            col[~miss] = self._categories_[j][codes[~miss].astype(np.int64)]
            col[miss] = np.nan
            out[:, j] = col
        return out

    def _model_input(self, Z):
        """Internal rows as the model takes them: the fit frame's columns and dtypes
        (an integer or boolean column holding a missing value becomes float)."""
        if not self._frame_:
            return self._decode(Z)
        import pandas as pd

        template = self.model_fn_.template
        cols = {}
        for j, (name, dtype) in enumerate(template.dtypes.items()):
            v = Z[:, j]
            miss = np.isnan(v)
            if self._string_cols_[j]:
                if isinstance(dtype, pd.CategoricalDtype):  # codes index dtype.categories
                    codes = np.where(miss, -1, v).astype(np.int64)
                    cols[name] = pd.Categorical.from_codes(codes, dtype=dtype)
                    continue
                col = np.empty(len(v), dtype=object)
                col[~miss] = self._categories_[j][v[~miss].astype(np.int64)]
                col[miss] = np.nan
                cols[name] = pd.Series(col, dtype=dtype)
            elif miss.any() and (pd.api.types.is_integer_dtype(dtype)
                                 or pd.api.types.is_bool_dtype(dtype)):
                cols[name] = v  # a missing value in an integer column: float
            else:
                cols[name] = pd.Series(v).astype(dtype)
        return pd.DataFrame(cols, columns=template.columns)

    def _to_user(self, Z):
        import pandas as pd

        if self._frame_:  # the fit frame's columns and dtypes
            return self._model_input(Z)
        return pd.DataFrame(np.asarray(self._decode(Z)), columns=self._feature_names())

    def _predict(self, Z):
        """Probability of the desired class for internal rows, shape (n,)."""
        return self.model_fn_(self._model_input(Z))[:, 0]

    def _to_space(self, Z):
        """Internal rows in the columns the reconstruction reads."""
        space = getattr(self, "_space_", None)
        return Z if space is None else space(self._model_input(Z))

    def _predict_search(self, Z):
        """The probability the search uses: the verified reconstruction when there is one."""
        recon = getattr(self, "_recon_", None)
        return recon.predict(self._to_space(Z)) if recon is not None else self._predict(Z)

    def _check_missing(self, Z, where):
        """The model must accept the rows of ``Z`` holding missing values."""
        miss = np.isnan(Z)
        rows = np.flatnonzero(miss.any(axis=1))
        if rows.size == 0:
            return
        names = [self._labels_[j] for j in np.flatnonzero(miss.any(axis=0))]
        model = type(unwrap(self.model_)).__name__
        try:
            out = self._predict(Z[rows[:_VERIFY_ROWS]])
        except Exception as exc:  # noqa: BLE001 - any refusal of the model
            first = (str(exc).splitlines() or [""])[0]
            raise ValueError(
                f"{where} has missing values (NaN) in {names}, and the model {model} does "
                f"not accept them ({type(exc).__name__}: {first}). Impute them first (e.g. "
                "a SimpleImputer in the model's pipeline) or use a model that handles "
                "missing values.") from exc
        if not np.all(np.isfinite(out)):
            raise ValueError(
                f"{where} has missing values (NaN) in {names}, and the model {model} "
                "returns non-finite probabilities for them. Impute them first.")

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Fit the model (unless frozen), the grid, the isolation forest, order and bound.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Training rows; missing values only where the model accepts them.
        y : array-like of shape (n_samples,) or None
            Labels to fit a clone of ``model``; ``None`` needs a ``FrozenEstimator``.

        Returns
        -------
        self
        """
        objectives = tuple(self.objectives)
        if not objectives:
            raise ValueError("objectives must name at least one cost.")
        bad = [o for o in objectives if o not in OBJECTIVES]
        if bad or len(set(objectives)) != len(objectives):
            raise ValueError(f"objectives must be distinct names among {OBJECTIVES}; "
                             f"got {list(self.objectives)}.")
        lo, hi = (tuple(self.grid_percentiles) + (None, None))[:2]
        if (len(self.grid_percentiles) != 2 or not 0 <= lo < hi <= 100):
            raise ValueError("grid_percentiles must be (low, high) with 0 <= low < high <= "
                             f"100, got {self.grid_percentiles!r}.")
        X = self._validate_X(X, reset=True)
        self._check_n_rows(X.shape[0])
        self._fit_model(X, y)
        classes = getattr(unwrap(self.model_), "classes_", None)
        if classes is None or not hasattr(self.model_, "predict_proba"):
            raise TypeError("P2CERecourse needs a classifier with predict_proba and classes_.")
        classes = list(np.asarray(classes).tolist())
        if self.desired_class not in classes:
            raise ValueError(f"desired_class={self.desired_class!r} is not one of the "
                             f"model's classes {classes}.")
        Z, cat = self._encode_fit(X)
        d = Z.shape[1]
        immutable = np.zeros(d, dtype=bool)
        if self.immutable_features is not None:
            immutable[self._feature_index(self.immutable_features, "immutable_features")] = True
        mono = np.zeros(d, dtype=np.int64)
        if self.monotone is not None:
            idx = self._feature_index(list(self.monotone.keys()), "monotone")
            for j, direction in zip(idx, self.monotone.values()):
                if direction not in (-1, 1):
                    raise ValueError(f"monotone directions must be +1 or -1, got {direction!r}.")
                if cat[j]:
                    raise ValueError(f"monotone cannot apply to categorical feature "
                                     f"{self._labels_[j]!r}.")
                mono[j] = direction
        self.grid_ = FeatureGrid(Z, categorical=cat, immutable=immutable, monotone=mono,
                                 percentiles=(lo, hi), step=float(self.grid_step))
        self._objectives_ = objectives
        template = X.iloc[:0] if self._frame_ else None
        complete = np.flatnonzero(~np.isnan(Z).any(axis=1))
        first = int(complete[0]) if complete.size else 0  # missing values: _check_missing
        probe = X.iloc[first:first + 1] if self._frame_ else X[first:first + 1]
        self.model_fn_ = make_model_function(self.model_, "predict_proba", self.desired_class,
                                             probe, template, None)
        self.classes_ = np.asarray(classes)
        self._check_missing(Z, "X")

        base_seed = draw_base_seed(self.random_state)
        rng = np.random.default_rng(np.random.SeedSequence(entropy=base_seed, spawn_key=(0,)))
        self.isolation_forest_ = self._fit_isolation_forest(Z, rng)
        self._iso_ = FlatIsolationForest(self.isolation_forest_)

        # the model's verified reconstruction (tree ensemble or linear): exact bound and a
        # fast evaluator for the search; returned points are re-predicted by the model
        self._bound_obj_ = None
        self.bound_ = "none"
        exact, kind, owner = self._reconstruction(Z[: min(_VERIFY_ROWS, Z.shape[0])],
                                                  classes)
        self._recon_ = exact
        if self.bound in ("auto", "exact"):
            if exact is None and self.bound == "exact":
                raise ValueError(
                    f"bound='exact' needs a tree ensemble (scikit-learn, XGBoost, LightGBM) "
                    f"or a binary linear classifier, alone or after column-wise "
                    f"preprocessing in a Pipeline; {type(unwrap(self.model_)).__name__} is "
                    "neither (or its reconstruction did not match its predictions). Use "
                    "bound='none' (exact, slower) or bound='shap' (heuristic).")
            if exact is not None:
                self._bound_obj_, self.bound_ = exact, kind

        # feature order by mean |SHAP| on a seeded sample
        n_s = min(self.shap_samples, Z.shape[0])
        sample = Z[np.sort(rng.choice(Z.shape[0], size=n_s, replace=False))]
        self._shap_background_ = sample[: min(_SHAP_BACKGROUND, n_s)]
        self._shap_base_seed_ = base_seed
        imp = self._tree_importances(sample, classes, owner) if kind == "tree" else None
        self.importance_method_ = "tree_shap" if imp is not None else "permutation_shap"
        if imp is None or self.bound == "shap":
            phi = self._shap(sample)
            self._phi_max_ = phi.max(axis=0)
            if imp is None:
                imp = np.abs(phi).mean(axis=0)
        self.feature_importances_ = imp
        searchable = [j for j in range(d) if not immutable[j]]
        searchable.sort(key=lambda j: (-self.feature_importances_[j], j))
        self.feature_order_ = np.asarray(searchable, dtype=np.int64)
        if self.bound == "shap":
            self._bound_obj_, self.bound_ = ShapBound(self._phi_max_), "shap"

        return self

    def _fit_isolation_forest(self, Z, rng):
        iso = IsolationForest(n_estimators=self.n_estimators, max_samples=self.max_samples,
                              contamination=self.contamination,
                              random_state=int(rng.integers(0, 2**31 - 1)))
        if np.isnan(Z).any() and not iso.__sklearn_tags__().input_tags.allow_nan:
            names = [self._labels_[j] for j in np.flatnonzero(np.isnan(Z).any(axis=0))]
            raise ValueError(
                f"X has missing values (NaN) in {names}; this scikit-learn's "
                "IsolationForest (the plausibility model) cannot fit on them. Drop those "
                "rows from the training data or upgrade scikit-learn.")
        return iso.fit(Z)

    def _check_n_rows(self, n):
        """The isolation forest draws ``int(max_samples * n)`` rows per tree: at least 1."""
        ms = self.max_samples
        if isinstance(ms, Integral) or int(ms * n) >= 1:
            return
        n_min = int(np.ceil(1.0 / ms))
        while n_min > 1 and int(ms * (n_min - 1)) >= 1:  # round-off of 1 / ms
            n_min -= 1
        raise ValueError(
            f"P2CERecourse needs at least {n_min} rows to fit with max_samples={ms}: each "
            f"tree of the isolation forest (the plausibility model) draws int(max_samples "
            f"* n_samples) rows, which is 0 for n_samples = {n}. Pass more rows, or a "
            "larger max_samples (a fraction, or a number of rows).")

    def _tree_importances(self, sample, classes, owner):
        """Mean |path-dependent TreeSHAP| (margin) per input feature of the sample (the
        model columns of one input feature summed), or None if unavailable."""
        from sklearn.frozen import FrozenEstimator

        from ..tree import TreeShapExplainer

        try:
            rows = self._model_input(sample)
            expl = TreeShapExplainer(FrozenEstimator(unwrap(self.model_))).fit(rows)
            values = np.asarray(expl.explain(rows).values, dtype=np.float64)
        except (TypeError, ValueError, ImportError):
            return None
        if values.ndim == 3:
            k = classes.index(self.desired_class)
            values = values[:, :, k] if values.shape[2] == len(classes) else values.mean(2)
        if owner is None or values.shape[1] != len(owner):
            return None
        phi = np.zeros((values.shape[0], sample.shape[1]))
        np.add.at(phi.T, owner, values.T)
        return np.abs(phi).mean(axis=0)

    def _shap(self, rows):
        from ..shapley import ImputationGame, permutation_shapley

        def f(Zs):
            return self._predict_search(np.asarray(Zs, dtype=np.float64))[:, None]

        game = ImputationGame(f, rows, self._shap_background_)
        gens = row_generators(self._shap_base_seed_, row_keys(rows))  # keyed by content
        phi, _ = permutation_shapley(game, _SHAP_N_EVALS, gens)
        return phi[:, :, 0]

    def _reconstruction(self, verify, classes):
        """The model's verified flat reconstruction, or None.

        Returns
        -------
        model : TreeBound, SoftmaxTreeBound, LinearBound or None
        kind : {"tree", "linear", "none"}
        owner : ndarray of int or None
            Input feature of every column the model reads (None: unknown).
        """
        target = self._predict(verify)
        inner = unwrap(self.model_)
        k = classes.index(self.desired_class)
        d = verify.shape[1]
        prefix, final = split_pipeline(inner)
        parsed = parse_tree_model(final)
        owner = input_owner(prefix, d)
        self._space_ = None
        if owner is not None and (prefix is not None or (parsed and parsed[1] is not None)):
            space = ModelSpace(prefix, parsed[1] if parsed else None, owner)
            if check_columnwise(space, self._model_input, verify):
                self._space_ = space
            else:
                owner = None

        def verified(obj):
            try:
                pred = obj.predict(self._to_space(verify))
            except (TypeError, ValueError):
                return False
            return pred.shape == target.shape and np.allclose(pred, target, rtol=0,
                                                             atol=1e-7)

        if parsed is not None and owner is not None and parsed[0].n_features == len(owner):
            ens, obj = parsed[0], None
            if ens.link == "logistic" and ens.n_outputs == 1 and len(classes) == 2:
                obj = TreeBound(ens, 0, 1.0 if k == 1 else -1.0, "logistic", owner)
            elif ens.link == "identity" and ens.n_outputs == len(classes):
                obj = TreeBound(ens, k, 1.0, "identity", owner)
            elif (ens.link == "softmax" and ens.n_outputs == len(classes) > 2
                  and np.all(ens.tree_output >= 0)):
                obj = SoftmaxTreeBound(ens, k, owner)
            if obj is not None and verified(obj):
                return obj, "tree", owner
        s = 1.0 if k == 1 else -1.0
        lin = final_linear(final)
        if (lin is not None and owner is not None and len(classes) == 2
                and len(lin[0]) == len(owner)
                and (self._space_ is not None or not self._string_cols_.any())):
            obj = LinearBound(s * lin[0], s * lin[1], owner)
            if verified(obj):
                return obj, "linear", owner
        self._space_ = None
        coefs = linear_coefficients(inner, verify, self._model_input)
        if coefs is not None and len(classes) == 2 and not self._string_cols_.any():
            obj = LinearBound(s * coefs[0], s * coefs[1], np.arange(d))
            if verified(obj):
                return obj, "linear", None
        return None, "none", owner

    # ------------------------------------------------------------------ explain
    def _explain_rows(self, sl, Z):
        out = []
        for i in range(sl.start, sl.stop):
            out.append(self._explain_one(Z[i], i))
        return out

    def _explain_one(self, x, row_id):
        t0 = time.perf_counter()
        deadline = None if self.time_limit is None else t0 + self.time_limit
        values, contrib = self.grid_.candidates(x)
        order = [int(j) for j in self.feature_order_ if len(values[j]) > 1]
        query = None
        if self._recon_ is not None:
            n_cand = np.array([len(v) for v in values], dtype=np.int64)
            cand = np.zeros((len(values), int(n_cand.max())))
            for j, v in enumerate(values):
                cand[j, : len(v)] = v
            query = self._recon_.for_query(self._to_space(candidate_rows(cand, n_cand)),
                                           n_cand)
        if query is not None:
            predict = query.predict
        else:
            def predict(P, index):
                return self._predict(P)
        bound = None
        if self.bound_ == "shap":
            bound = self._bound_obj_.for_query(self._shap(x[None, :])[0])
        elif self._bound_obj_ is not None:
            bound = query
        problem = QueryProblem(x, values, contrib, order, self._objectives_, predict,
                               self.threshold, self.max_changes, bound=bound,
                               iso=self._iso_ if self.plausibility else None,
                               deadline=deadline)
        res = search_query(problem)
        res.seconds = time.perf_counter() - t0
        return res

    def _explain(self, X):
        import pandas as pd

        if _is_frame(X) and not self._frame_:
            # fitted on an array: a frame's columns are taken by position, as in scikit-learn
            try:
                X = X.to_numpy(dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError("P2CERecourse was fitted on a numeric array; X has "
                                "non-numeric columns.") from None
        Z = self._encode(X)
        self._check_distances(Z)
        self._check_missing(Z, "X")
        n = Z.shape[0]
        n_workers = 1 if self.n_jobs in (None, 1) else effective_n_jobs(self.n_jobs)
        if n_workers > 1 and n > 1:
            bounds = np.linspace(0, n, min(n, n_workers) + 1).astype(int)
            slices = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
            parts = Parallel(n_jobs=self.n_jobs)(
                delayed(self._explain_rows)(sl, Z) for sl in slices)
        else:
            parts = [self._explain_rows(slice(0, n), Z)]
        results = [r for p in parts for r in p]
        rows, qidx, pro, cost_rows = [], [], [], []
        for i, res in enumerate(results):
            if res.points.shape[0] == 0:
                continue
            allc = costs(self.grid_, OBJECTIVES, Z[i], res.points)
            # best first: fewest changes, then the objectives in order
            nch = allc[:, OBJECTIVES.index("n_changes")]
            order = np.lexsort(tuple(res.costs.T[::-1]) + (nch,))
            rows.append(res.points[order])
            qidx.append(np.full(len(order), i))
            cost_rows.append(allc[order])
        n_incomplete = sum(not r.complete for r in results)
        if n_incomplete:
            warnings.warn(f"time_limit={self.time_limit}s stopped the search for "
                          f"{n_incomplete} of {n} queries; their fronts may be partial "
                          "(extras['complete'] is False for them).", UserWarning, stacklevel=3)
        d = Z.shape[1]
        P = np.vstack(rows) if rows else np.zeros((0, d))
        q = np.concatenate(qidx).astype(np.int64) if qidx else np.zeros(0, dtype=np.int64)
        C = np.vstack(cost_rows) if cost_rows else np.zeros((0, len(OBJECTIVES)))
        pro = self._predict(P) if len(P) else np.zeros(0)
        score = self._iso_.score_samples(P) if len(P) else np.zeros(0)
        cf = self._to_user(P) if len(P) else self._to_user(np.zeros((0, d)))
        cf = cf.reset_index(drop=True)
        cf["query"] = q
        queries = X.reset_index(drop=True) if self._frame_ else pd.DataFrame(
            X, columns=self._feature_names())
        cost_frame = pd.DataFrame(C, columns=list(OBJECTIVES))
        cost_frame["outlier_score"] = score
        cost_frame["inlier"] = score >= self._iso_.offset_
        valid = pro >= self.threshold
        found = np.zeros(n, dtype=bool)
        found[np.unique(q[valid])] = True
        extras = {
            "pareto": np.ones(len(P), dtype=bool),
            "objectives": list(self._objectives_),
            "complete": np.array([r.complete for r in results]),
            "nodes_expanded": np.array([r.counters["nodes_expanded"] for r in results]),
            "counters": [dict(r.counters) for r in results],
            "seconds": np.array([r.seconds for r in results]),
            "bound": self.bound_,
        }
        return Counterfactuals(queries=queries, counterfactuals=cf, predictions=pro,
                               valid=valid, costs=cost_frame, found=found,
                               desired=np.full(n, self.desired_class, dtype=object),
                               extras=extras)

    def score(self, X, y=None):
        """Validity rate minus half the mean normalised cost of the best counterfactuals.

        For each row, the best counterfactual is the one :meth:`transform` returns (fewest
        changes, then least cost); its normalised cost is ``mean_distance / (1 +
        mean_distance)`` in ``[0, 1)``, counted as 1 when nothing was found. Higher is
        better; a setting that finds nothing scores at most ``-0.5``.

        Returns
        -------
        float
        """
        check_is_fitted(self)
        res = self.explain(X)
        n = res.n_queries
        q = np.asarray(res.counterfactuals["query"])
        md = res.costs["mean_distance"].to_numpy()
        norm = np.ones(n)
        for i in range(n):
            rows = np.flatnonzero((q == i) & res.valid)
            if rows.size:
                norm[i] = md[rows[0]] / (1.0 + md[rows[0]])
        return float(res.found.mean() - 0.5 * norm.mean())

    def _validate_X(self, X, *, reset, allow_nan=None):
        # missing values are checked against the model itself (_check_missing): a
        # pipeline's tags do not say whether its model accepts them
        return super()._validate_X(X, reset=reset, allow_nan=True)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
