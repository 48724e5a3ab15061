"""TreeShapExplainer: exact TreeSHAP for scikit-learn, XGBoost, LightGBM and CatBoost trees."""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import replace
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._explanation import Attribution, squeeze_single_output
from .._model import frame_like, select_outputs
from .._pipeline import input_column_map
from .._utils import batch_slices, booster_feature_names, is_frame
from ..base import (
    AttributionMixin,
    BaseExplainer,
    SpaceExplainer,
    as_array,
    keep_index,
    reference_row,
)
from ..shapley._estimators import shapley_weights
from ._ensemble import apply_link, predict_raw, subset_outputs, with_players, zero_fractions

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Literal

    import pandas as pd
    from numpy.typing import ArrayLike

    from sklearn_xai._typing import RandomStateLike
    from sklearn_xai.tree._ensemble import FlatEnsemble

__all__ = ["TreeShapExplainer", "parse_model"]


# ---------------------------------------------------------------------------
# model dispatch
# ---------------------------------------------------------------------------


_LIBRARIES = ("sklearn", "xgboost", "lightgbm", "catboost")


def _module(model):
    """The library a model comes from, by its class or the nearest supported base class.

    A subclass defined elsewhere (imbalanced-learn's ``BalancedRandomForestClassifier``,
    a user's ``class MyForest(RandomForestClassifier)``) is its library's model.
    """
    for cls in type(model).__mro__:
        lib = cls.__module__.split(".")[0]
        if lib in _LIBRARIES:
            return lib
    return type(model).__module__.split(".")[0]


def _label_key(value):
    """A class label's identity by value: numbers (not bools) by their float value."""
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, Real):
        return ("number", float(value))
    return ("text", str(value))


def _is_booster(model):
    """An XGBoost or LightGBM ``Booster`` (used as is, never cloned)."""
    for cls in type(model).__mro__:
        if cls.__name__ == "Booster" and cls.__module__.split(".")[0] in ("xgboost",
                                                                         "lightgbm"):
            return True
    return False


def parse_model(model: Any) -> tuple[FlatEnsemble, Callable[[Any], np.ndarray] | None]:
    """Parse a fitted tree model into a FlatEnsemble.

    Parameters
    ----------
    model : estimator
        A fitted tree model of scikit-learn, XGBoost (``XGB*`` or ``Booster``),
        LightGBM (``LGBM*`` or ``Booster``) or CatBoost, or a ``FrozenEstimator`` of
        one; the models :class:`~sklearn_xai.TreeShapExplainer` supports, not a
        ``Pipeline`` (pass its last step).

    Returns
    -------
    ens : FlatEnsemble
        The model's trees, leaf values in margin space.
    input_transform : callable or None
        Maps the model's inputs to the ensemble's numeric columns (HistGradientBoosting
        with categorical features); None when the inputs already are those columns.
    """
    if isinstance(model, FrozenEstimator):
        model = model.estimator
    mod = _module(model)
    if mod == "sklearn":
        from ._parse_sklearn import parse_sklearn

        return parse_sklearn(model)
    if mod == "xgboost":
        from ._parse_xgboost import parse_xgboost

        return parse_xgboost(model)
    if mod == "lightgbm":
        from ._parse_lightgbm import parse_lightgbm

        return parse_lightgbm(model)
    if mod == "catboost":
        from ._parse_catboost import parse_catboost

        return parse_catboost(model)
    raise TypeError(
        f"TreeShapExplainer cannot explain {type(model).__name__}: supported models are "
        "scikit-learn DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*, "
        "HistGradientBoosting*, IsolationForest (and their subclasses), XGBoost (XGB* / "
        "Booster), LightGBM (LGBM* / Booster) and CatBoost (oblivious trees on numeric "
        "features), or a Pipeline ending in one of them.")


class _CategoryCodes:
    """DataFrame -> float array, category columns as integer codes (NaN missing).

    ``categories[c]`` is a list of categories (code = position; other categories become
    NaN, as LightGBM does) or, for XGBoost, a dict key -> code of the categories stored
    in the model (XGBoost re-codes by name and refuses other categories), empty when the
    model stored none (XGBoost then takes the frame's own codes).
    """

    def __init__(self, columns, categories):
        self.columns = list(columns)
        self.categories = categories  # dict column -> list or dict

    def __call__(self, X):
        import pandas as pd

        out = np.empty((X.shape[0], len(self.columns)))
        for j, c in enumerate(self.columns):
            col = X[c]
            cats = self.categories.get(c)
            if isinstance(cats, dict):
                codes = _xgboost_codes(col, cats, c)
            elif cats is not None:
                own = pd.Categorical(col)
                pos = pd.Index(cats).get_indexer(own.categories)  # -1: unknown
                codes = np.append(pos, -1)[own.codes]
            else:
                out[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
                continue
            out[:, j] = np.where(codes < 0, np.nan, codes)
        return out


def _xgboost_codes(col, table, name):
    """Codes of a column as XGBoost re-codes it with the model's categories ``table``."""
    import pandas as pd

    from ._parse_xgboost import category_keys

    cat = pd.Categorical(col)
    codes = np.asarray(cat.codes, dtype=np.int64)
    if not table:
        return codes
    mapped = np.asarray([table.get(k, -1) for k in category_keys(cat.categories)] + [-1],
                        dtype=np.int64)
    # XGBoost >= 3.1 refuses a category it was not trained with (3.2 raises only for some
    # and maps the others to a neighbouring category, dmlc/xgboost#12189)
    used = np.unique(codes[codes >= 0])
    unknown = used[mapped[used] < 0]
    if len(unknown):
        shown = [cat.categories[i] for i in unknown[:5]]
        raise ValueError(
            f"Column {name!r} has categories {shown} that the XGBoost model was not "
            "trained with; XGBoost refuses them too. Replace them by a known category or "
            "by NaN (missing).")
    return mapped[codes]


class _InputMap:
    """A Pipeline explained in its input columns (``feature_space_ == "input"``).

    ``pre``: its preprocessing steps; ``columns``: the input column behind every column
    ``pre`` outputs (:func:`sklearn_xai._pipeline.input_column_map`); ``template``: the
    empty DataFrame numpy rows are rebuilt into before ``pre`` (a pipeline fitted on a
    DataFrame), else None. Calling it maps input rows to the rows the trees' model takes.
    """

    def __init__(self, pre, columns, template=None):
        self.pre = pre
        self.columns = columns
        self.template = template

    def __call__(self, X):
        if self.template is not None and not is_frame(X):
            X = frame_like(X, self.template)
        return self.pre.transform(X)


class _TreeInput:
    """Picklable map of explained rows to the ensemble's numeric columns.

    ``input_map``: the :class:`_InputMap` of a Pipeline explained in its input columns,
    else None; ``transform``: the model's own input encoding (HistGradientBoosting's
    categorical encoder); ``codes``: pandas ``category`` columns to codes.
    """

    def __init__(self, ens, input_map=None, transform=None, codes=None):
        self.ens = ens
        self.input_map = input_map
        self.transform = transform
        self.codes = codes

    def __call__(self, X):
        return self.numeric(self.input_map(X) if self.input_map is not None else X)

    def numeric(self, Xt):
        """Rows the model takes -> C-contiguous float64 tree inputs."""
        if hasattr(Xt, "toarray"):  # a sparse one-hot block: absent entries are zeros
            Xt = Xt.toarray()
        if self.transform is not None:
            Z = self.transform(Xt)
        elif self.codes is not None:
            Z = self.codes(Xt)
        else:
            Z = np.asarray(Xt, dtype=np.float64)
        return self.ens.prepare_X(Z)


class _EnsembleFunction:
    """Picklable ``f(Z) -> (n, K)`` of the explained outputs.

    ``selection``: the explained outputs (:class:`sklearn_xai._model.OutputSelection`, its
    columns positions of the ensemble's outputs); ``probability``: the ensemble's link is
    applied first. ``Z`` are numeric tree inputs, or the explained rows when
    ``tree_input`` (a :class:`_TreeInput`) maps them.
    """

    def __init__(self, ens, selection, probability, tree_input=None):
        self.ens = ens
        self.selection = selection
        self.probability = probability
        self.tree_input = tree_input

    @property
    def output_names(self):
        return list(self.selection.names)

    @property
    def n_outputs(self):
        return len(self.selection.columns)

    def __call__(self, Z):
        if self.tree_input is not None:
            Z = self.tree_input(Z)
        raw = predict_raw(self.ens, np.asarray(Z, dtype=np.float64))
        if self.probability:
            raw = apply_link(self.ens.link, raw, self.ens.link_scale)
        return self.selection.apply(raw)


# ---------------------------------------------------------------------------
# the explainer
# ---------------------------------------------------------------------------


class TreeShapExplainer(AttributionMixin, SpaceExplainer):
    """Exact SHAP values of tree ensembles (path-dependent or marginal, i.e. interventional).

    Path-dependent values use the quadrature form of TreeSHAP: Gauss-Legendre with
    ``Q = ceil(U / 2)`` points per tree, ``U`` the tree's largest number of distinct
    features on a root-to-leaf path, which is exact (never fewer points). Work is
    ``O(n_rows * n_nodes * Q)``, in float64, in numba kernels that process blocks of
    rows with the rows innermost. Trees with at most 8 distinct features on a path use
    pattern tables instead (as interventional values do, with the covers in place of a
    background), which makes a row about 1.5x cheaper; the quadrature kernel's tables are
    then built only when some tree has more (or for interactions).

    Parameters
    ----------
    model : estimator
        A tree model: scikit-learn ``DecisionTree*``, ``RandomForest*``,
        ``ExtraTrees*`` (also multi-output), ``GradientBoosting*`` (constant init),
        ``HistGradientBoosting*``, ``IsolationForest`` (its average path length) or a
        subclass of one; XGBoost ``XGB*`` or ``Booster``; LightGBM ``LGBM*`` or
        ``Booster``; CatBoost (oblivious trees on numeric features); or a ``Pipeline``
        ending in one (see ``feature_space``). It is cloned
        and fitted on ``fit(X, y)`` unless it is a ``FrozenEstimator`` (or a Booster,
        which is used as is). Pandas ``category`` columns are coded as the model codes
        them: by HistGradientBoosting's encoder or LightGBM's stored categories (an
        unknown category is missing), by the categories stored in an XGBoost model (an
        unknown category raises ``ValueError``, as XGBoost refuses it).
    imputation : {"tree_path_dependent", "marginal"}, default="tree_path_dependent"
        How absent features are filled (the vocabulary of every explainer; see
        :ref:`imputation`). ``"tree_path_dependent"``: absent features follow both
        branches weighted by the training cover (the library's own: sample weights,
        hessian sums for XGBoost, counts for LightGBM). ``"marginal"`` (interventional
        TreeSHAP): absent features take the values of background rows (the ``X`` given
        to ``fit``), averaged over them.
        ``fit`` summarises the background once per leaf (how many background rows
        break each subset of the leaf's ``d`` distinct path features; ``O(n_background
        * nodes)`` plus ``O(2^d d^2)`` per leaf) into pattern tables, exact in float64;
        a row then costs ``O(nodes)`` plus one table row per small group of leaves, per
        tree, whatever the background size. Trees with more than 10 distinct features
        on a path, trees past ``max_table_mib``, and ``model_output="probability"``
        for boosted classifiers use the pairwise algorithm,
        ``O(n_rows * n_background * visited nodes)``; ``algorithm_`` says which ran.
    model_output : {"raw", "probability", "log_loss"}
        ``"raw"`` explains the margin (log-odds / logits for boosted classifiers, the
        averaged probability for forest classifiers, the prediction for regressors).
        ``"probability"`` needs ``imputation="marginal"`` for
        boosted classifiers: each (row, background) pair's attributions are rescaled
        by ``(p(x) - p(r)) / (f(x) - f(r))`` (a linearisation that stays additive;
        for a softmax output whose margin did not move, the pair's attributions are
        projected on the joint margin change instead). For forest classifiers the
        raw output already is the probability. ``"log_loss"`` (marginal, single-output
        classifiers): each feature's contribution to the loss ``-log p_y(x)`` of the row's
        true label, given to ``explain(X, y)``: exact Shapley values of ``v(S) = mean over
        background rows z of -log p_y(x_S, z_not S)`` (forest probabilities clipped at
        the smallest positive float), by enumerating, for each (row, background row)
        pair, the coalitions of the model's features in which they differ (at most 12,
        else ``ValueError``; cost ``O(n_rows * n_background * 2^u)`` predictions).
        The base value of a row is the mean background loss of its label
        (``expected_value_[c]`` for label ``c``).
    index : {"shapley", "banzhaf"}, default="shapley"
        ``"shapley"``: Shapley values (they add up: base value + sum = output).
        ``"banzhaf"``: Banzhaf values of the same game, every coalition weighing the
        same (``phi_i = mean over S of v(S + i) - v(S)``); they do **not** add up to
        the output, and are available for raw outputs only, without interactions.
    target : class label or None
        Explain only this class. ``None``: the positive class of a binary classifier,
        every class of a multi-class one, every output of a regressor.
    feature_space : {"input", "model"}, default="input"
        Explain a Pipeline in the columns given to fit ("input") or in the columns its
        last step receives ("model"). With ``"input"``, every input column is one player
        inside the tree algorithms (a split on any of its transformed columns, e.g. its
        one-hot columns, is a split on that player), so the values are the exact Shapley
        values of the game over input columns, for every ``imputation``,
        ``index`` and for interactions -- not sums of per-column values. This needs
        preprocessing steps that are column-wise (encoders, scalers, imputers,
        ``"passthrough"``, ``"drop"``, in Pipelines and ColumnTransformers; the list is in
        the TreeSHAP user guide); a step that
        may mix columns (``PCA``, ``PolynomialFeatures``, ``FunctionTransformer``, ...)
        gives a ``UserWarning`` naming it and the model's columns are explained instead
        (``feature_space_ == "model"``). Without preprocessing both are the same.
    max_background : int or None
        Largest number of background rows kept for marginal values; more rows
        are subsampled (seeded by ``random_state``) with a warning naming the counts.
        ``None`` (default) keeps all of them: the table algorithm does not slow down
        with the background size.
    max_table_mib : float, default=1024
        Memory budget (MiB) of the pattern tables, at most ``8 (d + 1) 2^(d + 1)``
        bytes per leaf and value column, ``d`` the leaf's number of distinct path
        features (``table_nbytes_`` has the exact figure). Trees are given tables from
        the smallest up while the total fits; the others use the pairwise algorithm
        (marginal) or the quadrature kernel (path-dependent). ``0``: no tables.
    batch_size : int
        Rows explained per kernel call (bounds memory, notably for interactions).
    n_jobs : int or None
        ``None``: one process, the kernels use numba's current thread count (all cores
        by default). ``1``: one thread. ``k > 1`` or ``-1``: row batches of
        ``batch_size`` run on ``k`` joblib workers (threads by default; any joblib
        backend set with ``joblib.parallel_config``, e.g. Dask), each kernel call on one
        numba thread. Results do not depend on it.
    random_state : int, RandomState or None
        Seeds the background subsample only.
    verbose : int, default=0
        Progress on stderr: ``0`` nothing; ``1`` a progress bar (rows done, rate, time
        left; tqdm's when it is installed) for calls that run longer than about 2 s; ``2``
        also the time of each batch. The results do not depend on it.

    Attributes
    ----------
    feature_space_ : {"input", "model"}
        The space explained: ``"model"`` with ``feature_space="model"`` and a Pipeline, or
        when its preprocessing mixes columns; else ``"input"``.
    preprocessor_ : Pipeline or None
        The preprocessing steps that map rows to the explained space (``"model"``), else
        None.
    explained_model_ : estimator
        The model explained on the explained space: the last step (``"model"``) or the
        whole model.
    n_features_explained_ : int
        Columns of the explained space.
    ensemble_ : FlatEnsemble
        The parsed model (all outputs); with a Pipeline explained in its input columns,
        ``ensemble_.player`` holds the input column of every split.
    n_quadrature_points_ : ndarray of int (n_trees,)
        Q per tree (path-dependent only).
    algorithm_ : str
        Which kernels run. Path-dependent: ``"tables"`` (every tree has pattern
        tables), ``"quadrature"`` (none has) or ``"tables+quadrature"``.
        Interventional: ``"tables"``, ``"pairwise"`` or ``"tables+pairwise"``. Also in
        every attribution's ``extras["algorithm"]``.
    table_nbytes_ : int
        Memory of the pattern tables (0 without tables).
    expected_value_ : ndarray (n_outputs,)
        The base value of every explained row.
    player_names_, output_names_ : list of str
    """

    _parameter_constraints = {
        **SpaceExplainer._parameter_constraints,
        "imputation": [StrOptions({"tree_path_dependent", "marginal"})],
        "model_output": [StrOptions({"raw", "probability", "log_loss"})],
        "index": [StrOptions({"shapley", "banzhaf"})],
        "max_background": [None, Interval(Integral, 1, None, closed="left")],
        "max_table_mib": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    #: old parameter name -> new name (passing the old one is an error naming the new one)
    _renamed_parameters = {"feature_perturbation": "imputation"}
    _cli_name = "tree"
    _label = "TreeSHAP"
    _in_default_report = True
    _report_chunk = 256
    _report_global = True
    _report_exact = True
    _report_note = ("TreeSHAP explains the model's raw margin (a regressor's prediction); "
                    "its values add up exactly to it.")

    @classmethod
    def _report_params(cls, model, *, seed, immutable=None, time_limit=None):
        return {}

    def __init__(self, model: Any = None, *,
                 imputation: Literal["tree_path_dependent", "marginal"] = "tree_path_dependent",
                 model_output: Literal["raw", "probability", "log_loss"] = "raw",
                 index: Literal["shapley", "banzhaf"] = "shapley", target: Any = None,
                 feature_space: Literal["input", "model"] = "input",
                 max_background: int | None = None, max_table_mib: float = 1024,
                 batch_size: int = 1024, n_jobs: int | None = None,
                 random_state: RandomStateLike = None, verbose: int = 0) -> None:
        self.model = model
        self.imputation = imputation
        self.model_output = model_output
        self.index = index
        self.target = target
        self.feature_space = feature_space
        self.max_background = max_background
        self.max_table_mib = max_table_mib
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # -- fit: the family's steps (SpaceExplainer), extended -------------------------------

    _takes_missing_values = True  # routing handles NaN as each library does

    def _check_classes(self, model):
        if isinstance(getattr(model, "classes_", None), list):
            return  # multi-output: a one-class target gives zeros
        super()._check_classes(model)

    def _fit_model(self, X, y=None, **fit_params):
        """Keep a raw XGBoost / LightGBM Booster as is (it is never cloned)."""
        if _is_booster(self.model):
            self.model_ = self.model
            return self.model_
        return super()._fit_model(X, y, **fit_params)

    def _uses_model_as_is(self):
        return _is_booster(self.model) or super()._uses_model_as_is()

    def _model_feature_names(self):
        """A raw Booster's own feature names (None when it was trained without)."""
        if not _is_booster(self.model_):
            return super()._model_feature_names()
        return booster_feature_names(self.model_)

    def _fit_space(self, X, pre, final, space=None):
        """The explained space, with the input columns of a Pipeline exact in the trees.

        With ``feature_space="input"`` and a Pipeline, the rows stay in the input columns
        and each split of the trees is labelled by the input column it reads (the players,
        ``_input_map``); a preprocessing that is not known to be column-wise falls back to
        the model's columns with a warning. ``_tree_model`` is the model the trees are
        parsed from (the Pipeline's last step).
        """
        self._tree_model, self._input_map = final, None
        space = self.feature_space if space is None else space
        if pre is not None and space == "input":
            try:
                columns = input_column_map(pre, X.shape[1], BaseExplainer._feature_names(self))
                self._input_map = _InputMap(pre, columns, self._input_template)
            except ValueError as exc:
                warnings.warn(
                    f"TreeShapExplainer explains the columns the model "
                    f"{type(final).__name__} receives instead of the Pipeline's input "
                    f"columns (feature_space_='model'): {exc} Pass feature_space='model' "
                    "to ask for this explicitly.", UserWarning, stacklevel=4)
                space = "model"
        return super()._fit_space(X, pre, final, space)

    def _setup_outputs(self, X):
        """Parse the trees (``ensemble_``, players) and set the explained outputs."""
        self._parse(X)
        self._set_outputs(self._tree_model, self.ensemble_)
        return self.model_fn_

    def _parse(self, X):
        """``ensemble_``, ``player_names_`` and the map of explained rows to tree inputs."""
        final, input_map = self._tree_model, self._input_map
        ens, transform = parse_model(final)
        Xt = input_map(X) if input_map is not None else X  # sparse: numeric()
        codes = None
        if is_frame(Xt) and transform is None:
            codes = self._category_coder(Xt, final)
        if input_map is not None:
            n_tree_inputs = Xt.shape[1]
            if len(input_map.columns) != n_tree_inputs or ens.n_features != n_tree_inputs:
                raise ValueError(
                    f"The model {ens.model_name} takes {ens.n_features} features but the "
                    f"Pipeline's preprocessing outputs {n_tree_inputs} columns.")
            ens = with_players(ens, input_map.columns, X.shape[1])
        self.ensemble_ = ens
        self._tree_input = _TreeInput(ens, input_map, transform, codes)
        Z = self._tree_input.numeric(Xt)
        if Z.shape[1] != ens.n_features:
            raise ValueError(f"The model takes {ens.n_features} features but X has "
                             f"{Z.shape[1]} columns after preprocessing.")
        self.player_names_ = self._player_names(Xt if codes is not None else None, ens)
        self._fit_tree_inputs = Z  # the fit rows as tree inputs, for _fit (which pops them)

    def _player_names(self, frame, ens):
        """The explained columns' names: the input columns' (a Pipeline explained in them,
        or no preprocessing), else the preprocessing's output names; then the columns of
        ``frame``, the model's own names, ``x0, x1, ...``."""
        names = None
        if self._input_map is not None:
            return BaseExplainer._feature_names(self)
        if self.preprocessor_ is None:
            names = getattr(self, "feature_names_in_", None)
        else:
            try:
                names = self.preprocessor_.get_feature_names_out()
            except (AttributeError, ValueError, TypeError):
                names = None
        if names is None and frame is not None and all(isinstance(c, str)
                                                       for c in frame.columns):
            names = frame.columns  # (integer labels are no names: x0, x1, ... as elsewhere)
        if names is None:
            names = ens.feature_names or [f"x{j}" for j in range(ens.n_features)]
        return [str(n) for n in names]

    def _set_outputs(self, final, ens):
        """The explained outputs (one :class:`~sklearn_xai._model.OutputSelection`), the
        ensemble the kernels run on and ``model_fn_``."""
        if self.model_output == "log_loss":
            self._check_log_loss(final, ens)
        self._probability = probability = self._applies_link(final, ens)
        selection = self._output_selection(final, ens, probability)
        self._selection = selection
        outputs = selection.columns
        # softmax probabilities depend on every margin: compute all, then select
        self._kernel_outputs = list(range(ens.n_outputs)) if (
            probability and ens.link == "softmax") else outputs
        self._select = [self._kernel_outputs.index(k) for k in outputs]
        self._sub = subset_outputs(ens, self._kernel_outputs)
        self.output_names_ = list(selection.names)
        # on the explained rows: the numeric tree inputs, or the input columns of a Pipeline
        self.model_fn_ = _EnsembleFunction(
            ens, selection, probability,
            tree_input=self._tree_input if self._input_map is not None else None)

    def _fit(self, X, y):
        """Precompute the tables (and the background) of the chosen game."""
        Z = self.__dict__.pop("_fit_tree_inputs")  # converted once, in _parse
        if self.imputation == "tree_path_dependent":
            self._fit_path_dependent()
        else:
            self._fit_marginal(Z)
        if self._input_map is not None:  # score() removes input columns, as model_fn_ takes
            self.reference_ = reference_row(X)
        else:
            self.reference_ = np.nanmean(Z, axis=0)[None, :] if Z.shape[0] else None
        if self.model_output == "log_loss":
            # loss of every class label on every background row, (n_background, C)
            # log_loss takes the pairwise path, so the background's margins are at hand
            self.expected_value_ = _class_losses(self.ensemble_, self._bg_raw[0]).mean(axis=0)
            self.output_names_ = ["log_loss"]
            self.algorithm_ = "enumeration"
            self.table_nbytes_ = 0
        return self

    def _explained_value(self, value):
        """``value`` of the kernels' outputs as the explained outputs: signed, offset."""
        return self._selection.offset + self._selection.sign * value

    def _path_tables(self, zf=None):
        """The quadrature kernel's tables, built on first use (fit builds them only when a
        tree needs them); ``zf``: the trees' :func:`zero_fractions` when at hand."""
        if self._tables is None:
            from ._kernels import PathTables
            zf = zero_fractions(self._sub) if zf is None else zf
            self._tables = PathTables(self._sub, zf, index=self.index)
        return self._tables

    def _fit_path_dependent(self):
        """Path tables (quadrature) and, for shallow trees, pattern tables of the covers."""
        from ._kernels import PATH_TABLE_FEATURES, PatternTables, quadrature_points

        sub = self._sub
        zf = zero_fractions(sub)
        # shallow trees: pattern tables of the path-dependent game (faster per row)
        self._ptables = None
        tables = None
        if self.max_table_mib > 0:
            with self._numba_threads():
                tables = PatternTables(sub, None, zero_fractions=zf,
                                       max_features=PATH_TABLE_FEATURES,
                                       max_bytes=self.max_table_mib * 2**20, index=self.index)
            if tables.use_tree.any():
                self._ptables = tables
        # the quadrature kernel's tables only when a tree needs them (a fresh installation
        # then compiles neither their builder nor that kernel); interactions build them
        # when asked (_path_tables)
        self._tables = None
        if self._ptables is None or not self._ptables.use_tree.all():
            self.n_quadrature_points_ = self._path_tables(zf).Qt
        else:
            self.n_quadrature_points_ = quadrature_points(self._ptables.U, self.index)
        base = sub.base_score.copy()
        for t, r in enumerate(sub.tree_offsets[:-1]):
            k = sub.tree_output[t]
            if k < 0:
                base += sub.value[r]
            else:
                base[k] += sub.value[r, 0]
        self.expected_value_ = self._explained_value(base)
        if self._ptables is None:
            self.algorithm_ = "quadrature"
        else:
            self.algorithm_ = "tables" if self._ptables.use_tree.all() else "tables+quadrature"
        self.table_nbytes_ = self._ptables.nbytes if self._ptables is not None else 0

    def _fit_marginal(self, Z):
        """The background (subsampled to ``max_background``), its pattern tables and the
        base values."""
        bg = Z
        if self.max_background is not None and bg.shape[0] > self.max_background:
            rng = check_random_state(self.random_state)
            idx = np.sort(rng.choice(bg.shape[0], self.max_background, replace=False))
            warnings.warn(f"Using max_background={self.max_background} of "
                          f"{bg.shape[0]} background rows for marginal values.",
                          UserWarning, stacklevel=4)
            bg = bg[idx]
        self.background_ = bg
        sub = self._sub
        self._depth = _max_depth(sub)
        self._itables = None
        use = np.zeros(sub.n_trees, dtype=bool)
        # model_output="probability" rescales each (row, background row) pair by its
        # total over all trees, which only the pairwise algorithm has
        if not self._probability and self.max_table_mib > 0 and \
                self.model_output != "log_loss":
            from ._kernels import PatternTables

            with self._numba_threads():
                self._itables = PatternTables(sub, bg, max_bytes=self.max_table_mib * 2**20,
                                              index=self.index)
            use = self._itables.use_tree
        self.algorithm_ = "tables" if use.all() and len(use) else (
            "tables+pairwise" if use.any() else "pairwise")
        self.table_nbytes_ = self._itables.nbytes if self._itables is not None else 0
        if self.algorithm_ == "tables":
            # the tables know how many background rows reach each leaf
            mean = sub.base_score + self._itables.background_mean(sub)
            self._bg_raw = None
            self.expected_value_ = self._explained_value(mean[self._select])
        else:
            fr = predict_raw(self.ensemble_, bg)
            ens = self.ensemble_
            pr = apply_link(ens.link, fr, ens.link_scale) if self._probability else fr
            self._bg_raw = (fr, pr)
            self.expected_value_ = self._explained_value(
                pr[:, self._selection.columns].mean(axis=0))

    def _check_log_loss(self, final, ens):
        if self.imputation != "marginal":
            raise ValueError("model_output='log_loss' needs imputation='marginal' (the loss "
                             "is averaged over background rows).")
        if not self._is_classifier(final, ens) or isinstance(
                getattr(final, "classes_", None), list):
            raise ValueError(f"model_output='log_loss' needs a single-output classifier; "
                             f"{ens.model_name} is not one.")
        if self.index != "shapley":
            raise ValueError("model_output='log_loss' is available with index='shapley' "
                             "only.")
        if ens.raw_space != "probability":
            self._check_probability_link(ens)
        if self.target is not None:
            raise ValueError("model_output='log_loss' explains the loss of each row's own "
                             "label; leave target=None.")

    def _category_coder(self, Xt, final):
        import pandas as pd

        cats = {}
        lgb_cats = xgb_cats = None
        if _module(final) == "lightgbm":
            from ._parse_lightgbm import lightgbm_categories

            lgb_cats = lightgbm_categories(final)
        elif _module(final) == "xgboost":
            from ._parse_xgboost import xgboost_categories

            xgb_cats = xgboost_categories(final)
        i = 0  # LightGBM lists the categories of the categorical columns in order
        for j, c in enumerate(Xt.columns):
            if not isinstance(Xt[c].dtype, pd.CategoricalDtype):
                continue
            if lgb_cats is not None and i < len(lgb_cats):
                cats[c] = list(lgb_cats[i])
            elif xgb_cats is not None and j < len(xgb_cats) and xgb_cats[j] is not None:
                cats[c] = xgb_cats[j]
            else:
                cats[c] = list(Xt[c].cat.categories)
            i += 1
        for c in Xt.columns:
            if c not in cats and not (pd.api.types.is_numeric_dtype(Xt[c].dtype) or
                                      pd.api.types.is_bool_dtype(Xt[c].dtype)):
                raise ValueError(
                    f"Column {c!r} has dtype {Xt[c].dtype}; tree models take numeric or "
                    "pandas 'category' columns.")
        return _CategoryCodes(Xt.columns, cats)

    def _numeric(self, Xt):
        """Preprocessed input -> float64 array in the ensemble's feature space."""
        return self._tree_input.numeric(Xt)

    @staticmethod
    def _is_classifier(final, ens):
        classes = getattr(final, "classes_", None)  # CatBoostRegressor has an empty one
        return (classes is not None and len(classes) > 0) or ens.link in (
            "logistic", "softmax", "logistic2x")

    def _check_probability_link(self, ens):
        """A classifier's margins must map to probabilities: a raw objective (XGBoost's
        binary:logitraw, a custom objective) has no link to apply."""
        if ens.link not in ("logistic", "softmax", "logistic2x"):
            raise ValueError(
                f"model_output={self.model_output!r} needs the model's probabilities, but "
                f"{ens.model_name}'s objective outputs raw scores with no link to "
                "probabilities (e.g. XGBoost's binary:logitraw, whose predict_proba returns "
                "the margin too); use model_output='raw'.")

    def _applies_link(self, final, ens):
        """Whether the explained outputs are the margins through the link
        (``model_output="probability"`` of a boosted classifier); checks the settings."""
        if self.model_output != "probability":
            return False
        if not self._is_classifier(final, ens):
            raise ValueError(
                f"model_output='probability' needs a classifier; {ens.model_name} "
                "is not one (use model_output='raw').")
        if ens.raw_space == "probability":
            return False  # forests already average probabilities
        self._check_probability_link(ens)
        if self.imputation == "tree_path_dependent":
            raise ValueError(
                "model_output='probability' is only available with "
                "imputation='marginal': path-dependent values of "
                "the probability are not additive. Use model_output='raw' (margin) "
                "or marginal values with a background.")
        if self.index != "shapley":
            raise ValueError(
                f"model_output='probability' rescales Shapley values; it is not "
                f"available with index={self.index!r}. Use model_output='raw' (the "
                "margin) or index='shapley'.")
        return True

    def _output_selection(self, final, ens, probability):
        """``target`` resolved on the ensemble's outputs (:func:`~sklearn_xai._model.
        select_outputs`, by name), with explicit columns.

        The package's output names: ``proba(c)`` for a probability, ``margin(c)`` for a
        raw class score (``proba(target k, class c)`` for a multi-output classifier),
        ``predict[k]`` for a regressor's prediction (identity link), ``margin[k]`` for a
        raw score under another link, ``path_length`` for an IsolationForest. The
        negative class of a binary model with one margin is the negated margin
        (``1 - p`` for a probability).
        """
        K = ens.n_outputs
        multi_output = isinstance(getattr(final, "classes_", None), list)
        default = [1] if (ens.raw_space == "probability" and K == 2 and not multi_output) \
            else range(K)
        selection = select_outputs(
            self._output_space(final, ens, probability), self.target,
            labels=ens.output_names if self._is_classifier(final, ens) else None, width=K,
            default=default, negative=self._negative_class(final) if K == 1 else None,
            aliases=ens.output_names, by_name=True)
        return replace(selection, columns=selection.positions(K))

    def _output_space(self, final, ens, probability):
        """The kind of output explained: proba, margin, predict or path_length."""
        space = "proba" if (probability or ens.raw_space == "probability") else "margin"
        if ens.raw_space == "path_length":  # IsolationForest
            return ens.raw_space
        if not self._is_classifier(final, ens) and ens.link == "identity":
            return "predict"
        return space

    @staticmethod
    def _negative_class(final):
        """The first class of a single-output binary classifier, else None."""
        classes = getattr(final, "classes_", None)
        if classes is None or isinstance(classes, list) or len(classes) != 2:
            return None
        return str(classes[0])

    # -- explain ------------------------------------------------------------------------

    def _transform_input(self, X, with_data=False):
        """Explained rows -> numeric tree inputs (and the values the attribution shows)."""
        Z = self._tree_input(X)
        if not with_data:
            return Z
        # what the attribution shows: the explained rows themselves (categories as labels)
        # when they are a DataFrame or a Pipeline's input columns, else the tree input
        shown = as_array(X) if (is_frame(X) or self._input_map is not None) else Z
        return Z, shown

    @contextlib.contextmanager
    def _numba_threads(self):
        """Context manager: numba's thread count as ``n_jobs`` says."""
        import numba

        old = numba.get_num_threads()
        numba.set_num_threads(self._threads())
        try:
            yield
        finally:
            numba.set_num_threads(old)

    def _threads(self):
        import numba

        if self.n_jobs is None:
            return numba.get_num_threads()
        n_max = numba.config.NUMBA_NUM_THREADS
        if self.n_jobs < 0:
            return max(1, n_max + 1 + self.n_jobs)
        return max(1, min(int(self.n_jobs), n_max))

    def _run(self, func, Z, out=None):
        """Apply a kernel to row batches of ``Z``.

        ``n_jobs=None`` (or 1, or a single batch): one process, the kernel's own numba
        threads. ``n_jobs > 1``: the batches go through joblib (threads by default, or
        any backend chosen with ``joblib.parallel_config``, e.g. Dask), each kernel call on
        one numba thread so workers do not oversubscribe the cores.

        With ``out`` (an array with one row per row of ``Z``), each batch's result is written
        into it as it arrives, so no second copy of the whole result is made; a callable
        ``out(rows, result)`` receives each batch instead; else the list of batch results is
        returned.
        """
        slices = batch_slices(Z.shape[0], self.batch_size)

        def write(i, part):
            if callable(out):
                out(slices[i], part)
            else:
                out[slices[i]] = part

        parts = self._map_tasks(_kernel_on_rows, slices, (func, Z),
                                on_result=None if out is None else write,
                                serial_context=self._numba_threads,
                                worker_context=_one_numba_thread, limit_threads=False,
                                prefer="threads")
        return parts if out is None else out

    def _phi(self, Z):
        sub = self._sub
        K = sub.n_outputs
        P = sub.players()[1]
        if self.imputation == "tree_path_dependent":
            from ._kernels import shap_path_dependent, shap_pattern_tables

            ptables = self._ptables
            quadrature = None if ptables is None else ~ptables.use_tree

            def func(B):
                if ptables is None:
                    return shap_path_dependent(sub, self._tables, B, sub.value,
                                               sub.tree_output, K)
                phi = shap_pattern_tables(sub, ptables, B, K)
                if quadrature.any():
                    phi += shap_path_dependent(sub, self._tables, B, sub.value,
                                               sub.tree_output, K, trees=quadrature)
                return phi
        else:
            from ._kernels import shap_interventional, shap_pattern_tables

            ens = self.ensemble_
            fr, pr = self._bg_raw if self._bg_raw is not None else (None, None)
            tables = self._itables
            pairwise = np.ones(sub.n_trees, dtype=bool) if tables is None else \
                ~tables.use_tree

            def func(B):
                resc = None
                if self._probability:
                    fx = predict_raw(ens, B)
                    px = apply_link(ens.link, fx, ens.link_scale)
                    cols = self._kernel_outputs
                    resc = (fx[:, cols], fr[:, cols], px[:, cols], pr[:, cols])
                phi = np.zeros((B.shape[0], P, K))
                if tables is not None and tables.use_tree.any():
                    phi += shap_pattern_tables(sub, tables, B, K)
                if pairwise.any():
                    phi += shap_interventional(sub, B, self.background_, sub.value,
                                               sub.tree_output, K, max_depth=self._depth,
                                               rescale=resc, trees=pairwise,
                                               index=self.index)
                return phi
        phi = self._run(func, Z, out=np.empty((Z.shape[0], P, K)))
        select = np.asarray(self._select)
        if not np.array_equal(select, np.arange(K)):
            phi = phi[:, :, select]
        if self._selection.sign != 1:
            phi *= self._selection.sign
        return phi

    def explain(self, X: ArrayLike | pd.DataFrame, y: ArrayLike | None = None) -> Attribution:
        """Attributions of the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows to explain, with the columns given to ``fit``.
        y : array-like of shape (n_samples,) or None
            The true labels; needed (and only used) with ``model_output="log_loss"``.

        Returns
        -------
        Attribution
            ``values`` of shape (n_samples, n_players) for one explained output, else
            (n_samples, n_players, n_outputs); ``base_values`` the base value of each
            row (the expected output; with ``model_output="log_loss"`` the mean
            background loss of the row's label). With ``index="shapley"``, base value
            plus the sum of a row's values is its explained output.
        """
        check_is_fitted(self)
        index = X.index if is_frame(X) else None
        X = self._explained_rows(self._validate_X(X, reset=False))
        if self.model_output == "log_loss":
            return keep_index(self._explain_log_loss(X, y), index)
        return keep_index(self._explain(X), index)

    def _explain_log_loss(self, X, y):
        if y is None:
            raise ValueError("model_output='log_loss' explains the loss of each row's true "
                             "label: pass the labels, explain(X, y).")
        Z, data = self._transform_input(X, with_data=True)
        labels = self._label_indices(y, Z.shape[0])
        ens, bg = self.ensemble_, self.background_
        phi = np.zeros((Z.shape[0], ens.players()[1]))
        for i in range(Z.shape[0]):
            phi[i] = _log_loss_shapley(ens, Z[i], bg, labels[i])
        base = self.expected_value_[labels]
        return Attribution(phi, base, data, list(self.player_names_), ["log_loss"],
                           extras={"imputation": self.imputation,
                                   "algorithm": self.algorithm_, "index": self.index})

    def _label_indices(self, y, n):
        from sklearn.utils.validation import column_or_1d

        y = column_or_1d(y, warn=True)
        if len(y) != n:
            raise ValueError(f"y has {len(y)} labels for {n} rows of X.")
        classes = getattr(self._tree_model, "classes_", None)
        if classes is None:  # a classifier Booster: labels are class indices
            classes = np.arange(max(2, self.ensemble_.n_outputs))
        classes = np.asarray(classes)
        # by value (a model fitted on float labels takes int ones, as log_loss does), then
        # by text (labels read from a file as strings)
        by_value = {_label_key(c): k for k, c in enumerate(classes)}
        by_text = {str(c): k for k, c in enumerate(classes)}
        idx = np.asarray([by_value.get(_label_key(v), by_text.get(str(v), -1)) for v in y],
                         dtype=np.int64)
        if np.any(idx < 0):
            bad = sorted({str(v) for v, k in zip(y, idx, strict=True) if k < 0})[:5]
            raise ValueError(f"y has labels {bad} that are not classes of the model "
                             f"{classes.tolist()}.")
        return idx

    def _explain(self, X, return_numeric=False):
        Z, data = self._transform_input(X, with_data=True)
        phi = self._phi(Z)
        base = np.tile(self.expected_value_, (Z.shape[0], 1))
        att = Attribution(phi, base, data, list(self.player_names_), list(self.output_names_),
                          extras={"imputation": self.imputation,
                                  "algorithm": self.algorithm_, "index": self.index})
        return (att, Z) if return_numeric else att

    def explain_interactions(self, X: ArrayLike | pd.DataFrame,
                             features: Sequence[int | str] | None = None) -> Attribution:
        """SHAP interaction values (pairwise Shapley interaction index, halved).

        Path-dependent, or marginal with ``model_output="raw"`` (the interaction
        index of ``v(S) = mean over background rows z of f(x_S, z_not S)``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows to explain, with the columns given to ``fit``.
        features : list of int or str, or None
            Rows of the interaction matrix to compute (all when None). Memory is
            ``n_samples * len(features) * n_players * n_outputs`` floats; cost
            ``O(n_samples * n_nodes * Q * depth)`` path-dependent,
            ``O(n_samples * sum over leaves of d^2)`` per tree with interventional
            tables (9 float64 per leaf and pattern, ``72 * 2^d`` bytes per leaf, built
            for the call), and pair by pair for trees without tables.

        Returns
        -------
        Attribution
            ``values`` are the SHAP values; ``extras["interactions"]`` has shape
            (n_samples, S, n_players[, n_outputs]) with the main effects on the
            diagonal (``[:, s, features[s]]``), each row summing to the SHAP value;
            ``extras["interaction_features"]`` lists the row features.
        """
        check_is_fitted(self)
        if self.model_output == "log_loss":
            raise ValueError("explain_interactions is not available with "
                             "model_output='log_loss'; use model_output='raw'.")
        if self.index != "shapley":
            raise ValueError(
                "explain_interactions computes the Shapley interaction index; it is not "
                f"available with index={self.index!r}. Use index='shapley'.")
        if self._probability:
            raise ValueError(
                "explain_interactions is not available with model_output='probability' "
                "(the rescaled pairs are no Shapley interaction index); use "
                "model_output='raw' (the margin).")
        X = self._explained_rows(self._validate_X(X, reset=False))
        Z, data = self._transform_input(X, with_data=True)
        feats = self._interaction_features(features)
        func = self._interaction_kernel(feats)

        n = Z.shape[0]
        result = {}

        def store(rows, part):
            # each batch goes straight into the preallocated outputs: no second copy of
            # the (n, S, M, K) interaction array
            if not result:
                result["phi"] = np.empty((n,) + part[0].shape[1:], dtype=np.float64)
                result["inter"] = np.empty((n,) + part[1].shape[1:], dtype=np.float64)
            result["phi"][rows] = part[0]
            result["inter"][rows] = part[1]

        self._run(func, Z, out=store)
        phi, inter = result["phi"], result["inter"]
        if self._selection.sign != 1:
            phi *= self._selection.sign
            inter *= self._selection.sign
        base = np.tile(self.expected_value_, (Z.shape[0], 1))
        return Attribution(phi, base, data, list(self.player_names_),
                           list(self.output_names_),
                           extras={"interactions": squeeze_single_output(inter),
                                   "interaction_features": [self.player_names_[f]
                                                            for f in feats],
                                   "imputation": self.imputation,
                                   "algorithm": self.algorithm_})

    def _interaction_features(self, features):
        """Player positions of ``features`` (names or indices; None: every player)."""
        M = len(self.player_names_)
        if features is None:
            return np.arange(M)
        feats = []
        for f in np.atleast_1d(features):
            if isinstance(f, str):
                if f not in self.player_names_:
                    raise ValueError(f"features names an unknown feature {f!r}.")
                feats.append(self.player_names_.index(f))
            elif isinstance(f, Integral | np.integer) and 0 <= int(f) < M:
                feats.append(int(f))
            else:
                raise ValueError(f"features entry {f!r} is not a feature index.")
        return np.asarray(feats, dtype=np.int64)

    def _interaction_kernel(self, feats):
        """``func(B) -> (phi, inter)`` for the fitted setting."""
        sub = self._sub
        K = sub.n_outputs
        if self.imputation == "tree_path_dependent":
            from ._kernels import shap_interactions

            path_tables = self._path_tables()

            def func(B):
                return shap_interactions(sub, path_tables, B, sub.value, sub.tree_output,
                                         K, feats)

            return func
        from ._kernels import interactions_interventional, interactions_pattern_tables

        tables = self._itables
        use = tables.use_tree if tables is not None else np.zeros(sub.n_trees, dtype=bool)
        table = None
        if use.any():
            with self._numba_threads():
                table = tables.interaction_table(sub, self.background_)

        P = sub.players()[1]

        def func(B):
            phi = np.zeros((B.shape[0], P, K))
            inter = np.zeros((B.shape[0], len(feats), P, K))
            if use.any():
                p, i = interactions_pattern_tables(sub, tables, table, B, sub.value,
                                                   sub.tree_output, K, feats)
                phi += p
                inter += i
            if not use.all():
                p, i = interactions_interventional(sub, B, self.background_, sub.value,
                                                   sub.tree_output, K, max_depth=self._depth,
                                                   trees=~use, features=feats)
                phi += p
                inter += i
            return phi, inter

        return func

    def score(self, X: ArrayLike | pd.DataFrame, y: None = None) -> float:
        """Faithfulness correlation in the explained space.

        As for every attribution explainer (see ``AttributionMixin.score`` and
        :func:`sklearn_xai.metrics.faithfulness_correlation`). A Pipeline explained in
        its input columns is scored there, a removed column taking the reference row
        learned in ``fit`` (numeric mean, categorical mode); otherwise on the numeric tree
        inputs with the column means (0 where a column is all missing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows explained and scored, with the columns given to ``fit``.
        y : None
            Ignored.

        Returns
        -------
        float
            The faithfulness correlation averaged over rows and outputs, in [-1, 1].
        """
        from .._faithfulness import faithfulness_correlation

        check_is_fitted(self)
        if self.model_output == "log_loss":
            raise ValueError("score is not available with model_output='log_loss' (the "
                             "explained loss needs the labels); use model_output='raw'.")
        X = self._explained_rows(self._validate_X(X, reset=False))
        attribution, Z = self._explain(X, return_numeric=True)
        if self._input_map is not None:  # model_fn_ takes the input columns
            return faithfulness_correlation(self.model_fn_, as_array(X), attribution,
                                            self.reference_)
        ref = np.nan_to_num(self.reference_)
        return faithfulness_correlation(self.model_fn_, Z, attribution, ref)

def _kernel_on_rows(rows, func, Z):
    """One batch of :meth:`TreeShapExplainer._run`: ``func(Z[rows])``."""
    return func(Z[rows])


@contextlib.contextmanager
def _one_numba_thread():
    """Numba's thread count at 1 for the current thread (a worker of ``n_jobs``: the
    workers, not numba's threads, share the cores)."""
    import numba

    old = numba.get_num_threads()
    numba.set_num_threads(1)  # thread-local in numba
    try:
        yield
    finally:
        numba.set_num_threads(old)


def _max_depth(ens):
    from ._kernels import _orders

    _, depth, _ = _orders(ens.tree_offsets, ens.children_left, ens.children_right)
    return int(depth.max()) if len(depth) else 0


_LOG_LOSS_MAX_FEATURES = 12


def _class_losses(ens, raw):
    """``-log p_c`` of every class ``c`` from margins ``raw`` (n, K) -> (n, C)."""
    if ens.raw_space == "probability":  # forests average probabilities
        p = raw
    else:
        p = apply_link(ens.link, raw, ens.link_scale)
        if p.shape[1] == 1:
            p = np.hstack([1.0 - p, p])
    return -np.log(np.clip(p, np.finfo(np.float64).tiny, None))


def _log_loss_shapley(ens, x, background, label):
    """Exact Shapley values of ``v(S) = mean_z loss(label, f(x_S, z_not S))``.

    The players are those of the ensemble (``ens.players()``: its features, or the input
    columns behind them); a player brings all the columns its splits read. For each
    background row ``z`` only the players whose columns differ between ``x`` and ``z``
    are players of the pair's game (the others are dummies); its ``2^u`` coalitions are
    enumerated.
    """
    node_player, n_players = ens.players()
    split = ens.feature >= 0
    cols = np.unique(ens.feature[split])  # the columns the trees read
    col_player = np.zeros(ens.n_features, dtype=np.int64)
    col_player[ens.feature[split]] = node_player[split]
    phi = np.zeros(n_players)
    same = (x[cols] == background[:, cols]) | (np.isnan(x[cols]) & np.isnan(background[:, cols]))
    for r, z in enumerate(background):
        players = np.unique(col_player[cols[~same[r]]])
        u = len(players)
        if u == 0:
            continue
        if u > _LOG_LOSS_MAX_FEATURES:
            raise ValueError(
                f"model_output='log_loss' enumerates the coalitions of the features in "
                f"which a row and a background row differ; a pair differs in {u} of the "
                f"model's features (at most {_LOG_LOSS_MAX_FEATURES}). Use fewer features or "
                "model_output='raw'.")
        masks = np.arange(2 ** u)
        bits = (masks[:, None] >> np.arange(u)) & 1
        rows = np.tile(z, (len(masks), 1))
        for i, p in enumerate(players):
            pc = cols[col_player[cols] == p]
            rows[:, pc] = np.where(bits[:, [i]] == 1, x[pc], z[pc])
        v = _class_losses(ens, predict_raw(ens, rows))[:, label]
        size = bits.sum(axis=1)
        w = shapley_weights(u)
        for i in range(u):
            without = masks[bits[:, i] == 0]
            phi[players[i]] += np.dot(w[size[without]], v[without | (1 << i)] - v[without])
    return phi / len(background)
