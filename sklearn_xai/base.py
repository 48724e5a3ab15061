"""The explainer contract shared by every explainer of sklearn-xai.

An explainer is an ordinary scikit-learn estimator: ``__init__`` stores parameters,
``fit(X, y=None)`` learns what the method needs (and fits a clone of ``model`` unless it is a
:class:`sklearn.frozen.FrozenEstimator`), ``explain(X)`` returns a result object,
``transform(X)`` a 2-D array and ``score(X, y=None)`` a quality figure (higher is better).
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context, clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.utils import get_tags
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, validate_data

from ._compile import compile_notice
from ._model import RESPONSE_METHODS, frame_like, make_model_function
from ._pipeline import is_known_step
from ._progress import Progress, blas_limited, limited_threads
from ._utils import (
    batch_slices,
    is_frame,
    is_lightgbm,
    lightgbm_feature_name,
    take_rows,
    unwrap_frozen,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Self

    import pandas as pd
    from numpy.typing import ArrayLike
    from sklearn.pipeline import Pipeline

    from sklearn_xai._explanation import Attribution, Counterfactuals
    from sklearn_xai._typing import FeatureGroups

__all__ = ["BaseExplainer", "SpaceExplainer", "OutputExplainer", "AttributionExplainer",
           "AttributionMixin", "RecourseMixin", "reference_row", "resolve_feature_groups",
           "groups_from_transformer", "split_pipeline"]


def _renamed_message(cls, name, what):
    new = cls._renamed_parameters[name]
    return (f"{cls.__name__} got an unexpected {what} {name!r}; it was renamed to "
            f"{new!r} (see the changelog).")


def _is_series(X):
    """A pandas Series (or a Series-like: ``iloc`` and a 1-D shape, no ``columns``)."""
    return hasattr(X, "iloc") and not hasattr(X, "columns") and \
        len(getattr(X, "shape", ())) == 1


def model_allows_nan(model):
    """Whether ``model`` (a Pipeline too) takes rows with missing values in every column.

    A :class:`~sklearn.pipeline.Pipeline` does not carry an ``allow_nan`` tag of its own,
    so it is decided step by step: an imputer (or an encoder that makes NaN a category)
    removes the missing values, a ``ColumnTransformer`` needs every branch to (a
    ``"passthrough"`` branch or remainder hands them on to the next step, which decides),
    and any other step must accept NaN itself and pass it on to a model that accepts it.
    Steps are recognised by their exact class (:func:`sklearn_xai._pipeline.is_known_step`):
    a subclass of an imputer may not impute, so its own ``allow_nan`` tag decides.
    """
    if model is None:  # no model (or no sampler) given: nothing vouches for NaN
        return False
    return _step_allows_nan(model, then=True)


def _model_nan_columns(model, n_columns):
    """Which of the ``n_columns`` input columns of ``model`` may hold missing values.

    As :func:`model_allows_nan`, column by column where the pipeline's first step is a
    ``ColumnTransformer`` (or a Pipeline starting with one): a column takes NaN when every
    branch that reads it does (an imputer on it, or a ``"passthrough"`` to later steps
    that take NaN); a column no branch reads is dropped. Elsewhere one answer for all.

    Returns
    -------
    ndarray of bool of shape (n_columns,)
    """
    if model is None:
        return np.zeros(n_columns, dtype=bool)
    return np.broadcast_to(_step_nan_columns(model, n_columns, then=True),
                           (n_columns,)).copy()


def _nan_consuming_types():
    from sklearn.impute import KNNImputer, MissingIndicator, SimpleImputer
    from sklearn.preprocessing import OneHotEncoder, TargetEncoder

    types = (SimpleImputer, KNNImputer, MissingIndicator, OneHotEncoder, TargetEncoder)
    try:  # experimental in scikit-learn: only when the user enabled it
        from sklearn.impute import IterativeImputer
    except ImportError:
        return types
    return types + (IterativeImputer,)


def _is_passthrough(step):
    """``None``, ``"passthrough"`` or a fitted ColumnTransformer's identity transformer."""
    from sklearn.preprocessing import FunctionTransformer

    step = unwrap_frozen(step)
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return True
    return (is_known_step(step, FunctionTransformer) and step.func is None
            and step.inverse_func is None)


def _ct_branches(ct):
    """``(transformer, input indices or None)`` of every branch of a ColumnTransformer.

    A fitted ``"passthrough"`` branch or remainder is fitted as an identity
    ``FunctionTransformer``; it is given back as ``"passthrough"``.
    """
    fitted = hasattr(ct, "transformers_")
    specs = {name: trans for name, trans, _ in ct.transformers}
    known = getattr(ct, "_transformer_to_input_indices", None) if fitted else None
    out = []
    for name, trans, _ in (ct.transformers_ if fitted else ct.transformers):
        spec = ct.remainder if name == "remainder" else specs.get(name, trans)
        if isinstance(spec, str) and spec == "passthrough":
            trans = "passthrough"
        idx = None
        if known is not None and name in known:
            idx = np.asarray(known[name], dtype=np.int64)
        out.append((trans, idx))
    if not fitted:
        out.append((ct.remainder, None))
    return out


def _step_allows_nan(step, then):
    """NaN-tolerance of ``step`` followed by steps whose tolerance is ``then``."""
    return bool(np.all(_step_nan_columns(step, None, then)))


def _step_nan_columns(step, n_in, then):
    """NaN-tolerance of ``step`` (then steps of tolerance ``then``) per input column.

    A bool for all columns, or (with ``n_in`` known and a ColumnTransformer first) one
    bool per input column.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    step = unwrap_frozen(step)
    if _is_passthrough(step):
        return then
    if isinstance(step, str):  # "drop"
        return True
    if is_known_step(step, _nan_consuming_types()):
        return True
    if is_known_step(step, Pipeline):
        if not step.steps:
            return then
        for _, inner in reversed(step.steps[1:]):
            then = _step_allows_nan(inner, then)
        return _step_nan_columns(step.steps[0][1], n_in, then)
    if is_known_step(step, ColumnTransformer):
        branches = _ct_branches(step)
        if n_in is None or any(idx is None for _, idx in branches):
            return all(_step_allows_nan(t, then) for t, _ in branches)
        ok = np.ones(n_in, dtype=bool)  # a column no branch reads is dropped
        for trans, idx in branches:
            if len(idx):
                ok[idx] &= _step_allows_nan(trans, then)
        return ok
    try:
        return bool(get_tags(step).input_tags.allow_nan) and then
    except Exception:  # models outside scikit-learn may not implement tags
        return False


def keep_index(result, index):
    """Give an explanation the index of the DataFrame it explains (so ``to_frame`` joins back).

    Parameters
    ----------
    result : Attribution or Counterfactuals
        The explanation of the rows.
    index : pandas.Index or None
        The index of ``X`` when it was a DataFrame; ``None`` keeps positions.

    Returns
    -------
    Attribution or Counterfactuals
        ``result``, with ``index`` set when one was given.
    """
    if index is not None:
        result.index = index
    return result


def as_array(X):
    """A 2-D numpy array of ``X``: float64 when every column is numeric, else object.

    Parameters
    ----------
    X : ndarray or DataFrame of shape (n_rows, n_features)

    Returns
    -------
    ndarray of shape (n_rows, n_features)
    """
    if is_frame(X):
        import pandas as pd

        if all(pd.api.types.is_numeric_dtype(t) and not isinstance(t, pd.CategoricalDtype)
               for t in X.dtypes):
            return X.to_numpy(dtype=np.float64)
        return X.to_numpy(dtype=object)
    return np.asarray(X)


def _plain_dtypes(X):
    """``X`` with pandas' nullable columns (``Int64``, ``Float64``, ``boolean``,
    ``string``) turned into numpy dtypes, so every method sees ordinary columns.

    A nullable numeric column with missing values becomes float64 with NaN (the NaN rules
    then apply); a nullable ``boolean`` or ``string`` column with missing values is a
    ValueError naming it, because no numpy dtype keeps both its values and ``pd.NA``.
    """
    import pandas as pd

    converted = {}
    for name in X.columns:
        dtype = X[name].dtype
        if isinstance(dtype, pd.CategoricalDtype) or getattr(dtype, "na_value", None) is not pd.NA:
            continue
        col = X[name]
        missing = bool(col.isna().any())
        if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            if missing:
                raise ValueError(
                    f"Column {name!r} of X has the nullable dtype {dtype} with missing values "
                    "(pd.NA); fill them, or use a categorical column.")
            converted[name] = col.to_numpy(dtype=bool if pd.api.types.is_bool_dtype(dtype)
                                           else object)
        elif pd.api.types.is_numeric_dtype(dtype):
            numpy_dtype = getattr(dtype, "numpy_dtype", np.dtype(np.float64))
            if missing or numpy_dtype.kind not in "iuf":
                converted[name] = col.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                converted[name] = col.to_numpy(dtype=numpy_dtype)
    if not converted:
        return X
    X = X.copy()
    for name, values in converted.items():
        X[name] = values
    return X


def check_rows_columns(rows, X, name):
    """Rows given beside ``X`` as a DataFrame (or one row as a Series) must have ``X``'s
    columns in ``X``'s order: they are read by position. Raises a ValueError naming
    ``name`` otherwise; arrays (and frames beside an array) are not checked."""
    if not is_frame(X) or not (is_frame(rows) or _is_series(rows)):
        return
    labels = list(rows.columns if is_frame(rows) else rows.index)
    columns = list(X.columns)
    mismatch = column_mismatch(labels, columns)
    if mismatch is None:
        return
    if isinstance(mismatch, int):
        raise ValueError(f"{name}'s columns are X's in another order; pass "
                         f"{name}[X.columns] (they are read by position).")
    raise ValueError(f"{name}'s columns {labels[:10]} are not X's {columns[:10]}.")


def column_mismatch(given, expected):
    """How the column names ``given`` differ from ``expected``: None when equal, the first
    position that differs when they are the same names in another order, else the pair
    ``(missing, unexpected)``."""
    given, expected = list(given), list(expected)
    if given == expected:
        return None
    if sorted(map(str, given)) == sorted(map(str, expected)):
        return next(j for j, (g, e) in enumerate(zip(given, expected)) if g != e)
    have, want = set(given), set(expected)
    return [e for e in expected if e not in have], [g for g in given if g not in want]


def reference_row(X: np.ndarray | pd.DataFrame) -> np.ndarray:
    """One reference row: the mean of numeric columns, the most frequent value of the others.

    Categorical columns use their mode rather than an off-manifold mean.

    Parameters
    ----------
    X : ndarray or DataFrame of shape (n_rows, n_features)
        Rows the reference summarises (missing values are skipped).

    Returns
    -------
    ndarray of shape (1, n_features)
        float64 when every column is numeric, else object.
    """
    import pandas as pd

    frame = X if is_frame(X) else pd.DataFrame(np.asarray(X))
    values = []
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_numeric_dtype(col.dtype) and not isinstance(
                col.dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(col.dtype):
            values.append(float(np.nanmean(col.to_numpy(dtype=np.float64))))
        else:
            mode = col.mode(dropna=True)
            values.append(mode.iloc[0] if len(mode) else col.iloc[0])
    dtype = np.float64 if all(isinstance(v, float) for v in values) else object
    return np.asarray(values, dtype=dtype).reshape(1, -1)


def resolve_feature_groups(feature_groups: FeatureGroups,
                           feature_names: Sequence[str]) -> tuple[list[np.ndarray], list[str]]:
    """Players as lists of column indices, and their names.

    Parameters
    ----------
    feature_groups : None, list of list of (int or str), or dict name -> list
        ``None``: one player per column. Otherwise every column must belong to exactly one
        group; names in a list are taken from ``feature_names``.
    feature_names : list of str, length n_features
        Names of the columns, used to resolve names in ``feature_groups``.

    Returns
    -------
    groups : list of ndarray of int
        Column indices of each player.
    group_names : list of str
        Name of each player: the dict key, the column's name for a single column, else
        the columns' names joined by ``+``.
    """
    names = [str(n) for n in feature_names]
    n_features = len(names)
    if feature_groups is None:
        return [np.array([j]) for j in range(n_features)], names
    if isinstance(feature_groups, dict):
        items = list(feature_groups.items())
    else:
        items = [(None, g) for g in feature_groups]
    groups, group_names, seen = [], [], np.zeros(n_features, dtype=int)
    for label, members in items:
        if isinstance(members, str | Integral):
            members = [members]
        idx = []
        for m in members:
            if isinstance(m, str):
                if m not in names:
                    raise ValueError(f"feature_groups names an unknown feature {m!r}.")
                idx.append(names.index(m))
            elif isinstance(m, Integral) and 0 <= int(m) < n_features:
                idx.append(int(m))
            else:
                raise ValueError(f"feature_groups entry {m!r} is not a column of X.")
        if not idx:
            raise ValueError("feature_groups contains an empty group.")
        seen[idx] += 1
        groups.append(np.asarray(idx, dtype=np.intp))
        group_names.append(str(label) if label is not None else
                           (names[idx[0]] if len(idx) == 1 else "+".join(names[i] for i in idx)))
    if np.any(seen != 1):
        bad = [names[j] for j in np.flatnonzero(seen != 1)]
        raise ValueError(f"Every feature must be in exactly one group; check {bad}.")
    return groups, group_names


def groups_from_transformer(transformer: Any) -> dict[str, list[int]]:
    """Feature groups of a fitted ``ColumnTransformer`` or ``OneHotEncoder`` output.

    Output columns that came from one input column (e.g. the one-hot columns of one
    category) form one group named after that input column. A branch is split by input
    column only when it is known to be column-wise, by the same rule as TreeSHAP's input
    columns (:func:`sklearn_xai._pipeline.input_column_map`: exact classes, a subclass may
    mix columns); any other branch is one group named after the branch.

    Parameters
    ----------
    transformer : fitted ColumnTransformer, OneHotEncoder or Pipeline ending in one
        The preprocessing whose output columns are grouped.

    Returns
    -------
    dict
        input feature name -> list of output column indices, in output order.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from ._pipeline import step_map

    transformer = unwrap_frozen(transformer)
    if is_known_step(transformer, Pipeline):
        transformer = unwrap_frozen(transformer.steps[-1][1])
    if is_known_step(transformer, OneHotEncoder):
        n_in = len(transformer.categories_)
        names = [str(n) for n in getattr(transformer, "feature_names_in_",
                                         [f"x{j}" for j in range(n_in)])]
        cols = step_map(transformer, n_in, "transformer", names)
        return {names[j]: [int(c) for c in np.flatnonzero(cols == j)] for j in range(n_in)}
    if not is_known_step(transformer, ColumnTransformer):
        raise TypeError(f"Cannot infer feature groups from {type(transformer).__name__} "
                        "(a ColumnTransformer, a OneHotEncoder or a Pipeline ending in one "
                        "is needed; a subclass of one is not trusted).")
    groups = {}
    specs = {name: trans for name, trans, _ in transformer.transformers}
    for name, trans, cols in transformer.transformers_:
        if name == "remainder" and trans == "drop":
            continue
        sl = transformer.output_indices_[name]
        if sl.stop == sl.start:
            continue
        spec = transformer.remainder if name == "remainder" else specs.get(name, trans)
        if isinstance(spec, str) and spec == "passthrough":
            trans = "passthrough"  # fitted as an identity FunctionTransformer
        in_names = _input_names(transformer, cols)
        try:
            owner = step_map(trans, len(in_names), repr(name), in_names)
        except ValueError:  # not known to be column-wise: one group for the branch
            owner = None
        if owner is None or len(owner) != sl.stop - sl.start:
            groups[str(name)] = list(range(sl.start, sl.stop))
            continue
        for k, in_name in enumerate(in_names):
            out = [sl.start + int(c) for c in np.flatnonzero(owner == k)]
            if out:
                groups[str(in_name)] = out
    return groups


def _input_names(column_transformer, cols):
    all_names = getattr(column_transformer, "feature_names_in_", None)
    if all_names is None:
        all_names = np.asarray([f"x{j}" for j in range(column_transformer.n_features_in_)])
    if isinstance(cols, str):
        return [cols]
    if callable(cols):
        cols = cols(None)
    idx = np.arange(len(all_names))[cols] if not (
        len(np.atleast_1d(cols)) and isinstance(np.atleast_1d(cols)[0], str)) else None
    return [str(c) for c in np.atleast_1d(cols)] if idx is None else [str(all_names[i])
                                                                      for i in idx]


class BaseExplainer(BaseEstimator):
    """Base class of every explainer: model handling, validation, outputs, batching.

    :meth:`fit` runs the steps every explainer shares -- validate ``X``, fit a clone of
    ``model`` or keep a frozen one, resolve the explained outputs (``model_fn_``,
    ``output_names_``) -- and then calls the subclass's ``_fit(X, y)`` for what its
    method learns; ``explain`` (from :class:`AttributionMixin` or :class:`RecourseMixin`)
    validates ``X`` and calls ``_explain(X)``. ``_fit`` and ``_explain`` are the extension
    points (see "Writing an explainer" in the documentation). :meth:`_map_batches` runs rows
    in parallel batches.
    """

    _parameter_constraints: dict = {
        "model": "no_validation",
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [None, Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left")],
        "verbose": ["verbose"],
    }

    # -- declarations read through the registry (sklearn_xai/_registry.py) -----------------
    #: name on the command line (``--explainer``) and in the report; None: not offered
    _cli_name = None
    #: name shown in the report and in its messages
    _label = None
    #: whether ``python -m sklearn_xai report`` runs it when no ``--explainer`` is given
    _in_default_report = False
    #: rows per ``explain`` call in the report and ``explain`` command (the progress bar
    #: moves once per call); None: all rows in one call
    _report_chunk = 32
    #: whether the report shows its values as the global importance and waterfalls (the
    #: first such explainer requested is run on ``--global-rows`` rows)
    _report_global = False
    #: whether its values add up exactly to the explained output (the report then says so
    #: rather than showing the model's output beside them)
    _report_exact = False
    #: a sentence the report shows about the method's results, or None
    _report_note = None
    #: parameters that were renamed, old name -> new name (inherited; see CHANGELOG.md):
    #: passing an old name to ``__init__`` or ``set_params`` is an error naming the new one
    _renamed_parameters: dict = {}

    def __init_subclass__(cls, **kwargs):
        """Declare the renamed parameters of ``cls`` and check them in its ``__init__``.

        ``__init__`` is wrapped with :func:`functools.wraps`, so ``inspect.signature``
        (which scikit-learn's ``get_params`` and ``clone`` read) is the original's.
        """
        super().__init_subclass__(**kwargs)
        renamed = {}  # the renames declared by the class and its bases, nearest last
        for klass in reversed(cls.__mro__):
            renamed.update(klass.__dict__.get("_renamed_parameters", {}))
        cls._renamed_parameters = renamed
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_checks_renamed_parameters", False):
            return

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            old = type(self)._renamed_parameters
            if old:
                for name in kwargs:
                    if name in old and name not in type(self)._get_param_names():
                        raise TypeError(_renamed_message(type(self), name, "keyword argument"))
            init(self, *args, **kwargs)

        __init__._checks_renamed_parameters = True
        cls.__init__ = __init__

    def set_params(self, **params: Any) -> Self:
        """Set the parameters of this explainer (an old, renamed name is an error naming
        the new one).

        Parameters
        ----------
        **params : dict
            Explainer parameters (``model__<name>`` for the model's own).

        Returns
        -------
        object
            The explainer (``self``).
        """
        old = type(self)._renamed_parameters
        valid = set(self._get_param_names())
        for key in params:
            name = key.split("__", 1)[0]
            if name in old and name not in valid:
                raise ValueError(_renamed_message(type(self), name, "parameter"))
        return super().set_params(**params)

    @classmethod
    def _report_params(cls, model, *, seed, immutable=None, time_limit=None):
        """Parameters of the instance the report and the ``explain`` command build.

        Parameters
        ----------
        model : fitted estimator
            The user's model (the instance gets it wrapped in ``FrozenEstimator``).
        seed : int
            The command line's ``--seed``.
        immutable : list of str or None
            Columns that recourse must not change.
        time_limit : float or None
            Seconds per query a search may take.

        Returns
        -------
        dict
        """
        return {"random_state": seed} if "random_state" in cls._get_param_names() else {}

    # -- the steps of fit -----------------------------------------------------------------

    # _fit_context validates the parameters (unless an enclosing fit skips nested
    # validation); the nested estimators (``model``, a sampler) are user-supplied, so their
    # own validation is not skipped
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X: ArrayLike | pd.DataFrame, y: ArrayLike | None = None,
            **fit_params: Any) -> Self:
        """Validate ``X``, fit or keep the model, prepare the family's state, then ``_fit``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows the method learns from (and trains a clone of an unfrozen model on).
        y : array-like of shape (n_samples,) or None
            Targets to fit a clone of ``model``; ``None`` needs a ``FrozenEstimator``.
        **fit_params : dict
            Passed to the model's ``fit``.

        Returns
        -------
        object
            The fitted explainer (``self``).
        """
        self._warned = set()  # conditions warned about since this fit (_warn_once)
        X = self._validate_X(X, reset=True)
        self._fit_model(X, y, **fit_params)
        self._check_model_columns(X)
        with compile_notice(getattr(self, "verbose", 0)):  # numba's first compilation
            X = self._fit_family(X)
            self._fit(X, y)
        return self

    def _fit_family(self, X):
        """What the explainer's family prepares between the model and ``_fit``.

        Returns the rows ``_fit`` receives. The base prepares nothing;
        :class:`AttributionExplainer` resolves the explained space and outputs.
        """
        return X

    def _fit(self, X, y):
        """What the method learns from validated rows (the extension point of ``fit``).

        Parameters
        ----------
        X : ndarray or DataFrame of shape (n_samples, n_features)
            Validated rows (a DataFrame stays a DataFrame), in the explained space.
        y : array-like or None
            The targets given to ``fit``.
        """

    def _warn_once(self, message, category=UserWarning, *, key=None, stacklevel=2):
        """Warn about a condition once per fitted explainer.

        ``explain`` and ``score`` (which explains again) may meet the same condition; it is
        reported the first time only. What was warned about is remembered in a private
        attribute that ``fit`` resets (a plain set: the explainer still pickles).

        Parameters
        ----------
        message : str
            The warning's text.
        category : type of Warning
            The warning's class.
        key : hashable or None
            The condition; ``None``: the message itself.
        stacklevel : int
            As for :func:`warnings.warn`, counted from the caller of this method.

        Returns
        -------
        bool
            Whether the warning was given now.
        """
        import warnings

        warned = getattr(self, "_warned", None)
        if warned is None:
            warned = self._warned = set()
        key = (category, message if key is None else key)
        if key in warned:
            return False
        warned.add(key)
        warnings.warn(message, category, stacklevel=stacklevel + 1)
        return True

    # -- model ----------------------------------------------------------------------------

    def _fit_model(self, X, y=None, **fit_params):
        """Set ``model_``: the model itself when frozen, else a fitted clone."""
        if self.model is None:
            raise ValueError("model is None; pass the estimator to explain.")
        if isinstance(self.model, FrozenEstimator):
            try:
                check_is_fitted(self.model)
            except NotFittedError as exc:
                raise NotFittedError(
                    "The FrozenEstimator wraps an unfitted model; fit it before freezing."
                ) from exc
            _check_steps_fitted(self.model)
            self.model_ = self.model
            self._check_classes(self.model_)
            return self.model_
        if not hasattr(self.model, "fit"):
            raise TypeError(
                f"model must be a scikit-learn compatible estimator with fit, got "
                f"{type(self.model).__name__}; wrap a trained model in FrozenEstimator."
            )
        if y is None:
            raise ValueError(
                "fit(X) without y needs a trained model: wrap it in "
                "sklearn.frozen.FrozenEstimator(model), or pass y to fit a clone of it."
            )
        self.model_ = clone(self.model).fit(X, y, **fit_params)
        self._check_classes(self.model_)
        return self.model_

    def _model_feature_names(self):
        """The column names the trained model was fitted on, or None."""
        return getattr(self.model_, "feature_names_in_", None)

    def _check_model_columns(self, X):
        """A DataFrame's columns must be the model's own, in the model's order.

        A model reads the columns it was trained on; a frame in another order would
        have its values explained under the wrong names (the model's ``predict`` refuses
        such a frame too).
        """
        names = self._model_feature_names()
        if names is None or not is_frame(X) or not all(isinstance(c, str) for c in X.columns):
            return
        names, columns = [str(n) for n in names], list(X.columns)
        if is_lightgbm(self.model_):  # LightGBM names a frame's "a b" column "a_b"
            columns = [lightgbm_feature_name(c) for c in columns]
        mismatch = column_mismatch(columns, names)
        if mismatch is None:
            return
        if isinstance(mismatch, int):
            j = mismatch
            raise ValueError(
                "X's columns are the model's features in another order (column "
                f"{j} is {columns[j]!r}, the model's is {names[j]!r}); reorder them as "
                "the model was trained, e.g. X[model.feature_names_in_].")
        missing, unexpected = mismatch
        raise ValueError(
            "X's columns are not those the model was trained on: missing "
            f"{missing[:10]}{' ...' if len(missing) > 10 else ''}, unexpected "
            f"{unexpected[:10]}{' ...' if len(unexpected) > 10 else ''}.")

    @staticmethod
    def _check_classes(model):
        classes = getattr(model, "classes_", None) if is_classifier(model) else None
        if isinstance(classes, list):  # multi-output: one array of classes per target
            if any(len(np.atleast_1d(c)) < 2 for c in classes):
                raise ValueError(
                    "A target of the multi-output classifier was trained on one class; "
                    "there is no decision to explain for it. Fit it on data with at least "
                    "two classes per target.")
            return
        if classes is not None and len(np.atleast_1d(classes)) < 2:
            raise ValueError(
                f"The classifier was trained on one class ({np.atleast_1d(classes).tolist()}); "
                "there is no decision to explain. Fit it on data with at least two classes.")

    # -- input validation -----------------------------------------------------------------

    #: whether the method itself takes missing values in every column, whatever the model
    #: (TreeSHAP routes them as each tree library does); else the model decides
    _takes_missing_values = False

    def _allow_nan(self):
        if self._takes_missing_values:
            return True
        model = getattr(self, "model_", self.model)
        return model_allows_nan(model)

    def _nan_columns(self, n_columns):
        """Which input columns may hold NaN when :meth:`_allow_nan` says not all may.

        An explainer whose ``_allow_nan`` is the base's (the model decides) asks the model
        column by column (:func:`_model_nan_columns`); one that overrides ``_allow_nan``
        decides for every column.
        """
        if type(self)._allow_nan is not BaseExplainer._allow_nan:
            return np.zeros(n_columns, dtype=bool)
        return _model_nan_columns(getattr(self, "model_", self.model), n_columns)

    def _validate_X(self, X, *, reset, allow_nan=None):
        """Check ``X`` and set/check ``n_features_in_`` and ``feature_names_in_``.

        A DataFrame stays a DataFrame (its dtypes matter to pipelines); anything else
        becomes a float64 array.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        reset : bool
            True in ``fit``, False afterwards.
        allow_nan : bool or None
            Whether NaN may appear; ``None`` asks the model (:meth:`_allow_nan`, then
            column by column, :meth:`_nan_columns`).

        Returns
        -------
        ndarray or DataFrame of shape (n_samples, n_features)
        """
        if reset and isinstance(self.model, type):
            raise TypeError(
                f"model is the class {self.model.__name__}, not an estimator; pass an "
                f"instance such as {self.model.__name__}() (or a trained one wrapped in "
                "sklearn.frozen.FrozenEstimator).")
        nan_columns = None  # which columns may hold NaN when not all may
        if allow_nan is None:
            allow_nan = self._allow_nan()
            if not allow_nan:
                nan_columns = self._nan_columns
        if X is None:
            raise ValueError("X is None; pass a 2-D array or DataFrame of rows.")
        if _is_series(X):
            raise ValueError(
                f"X is a pandas Series (shape {X.shape}); {type(self).__name__} takes 2-D "
                "rows. For one row of a DataFrame pass X.iloc[[0]] (a one-row DataFrame), "
                "or series.to_frame().T for a Series that holds one row.")
        if not reset and getattr(self, "_input_template", None) is not None and not (
                is_frame(X) and (all(isinstance(c, str) for c in X.columns)
                                  or list(X.columns) == list(self._input_template.columns))):
            # fitted on named columns, given an array or unnamed (integer) columns
            X = self._frame_from_array(X)
        if is_frame(X):
            import pandas as pd

            if X.columns.duplicated().any():
                dup = list(X.columns[X.columns.duplicated()])
                raise ValueError(f"X has duplicated column names: {dup}.")
            X = _plain_dtypes(X)
            X = validate_data(self, X, reset=reset, skip_check_array=True)
            if X.shape[0] == 0:
                raise ValueError("Found array with 0 sample(s) (shape=(0, "
                                 f"{X.shape[1]})) while a minimum of 1 is required.")
            if X.shape[1] == 0:
                raise ValueError("X has 0 feature(s); a minimum of 1 is required.")
            ok = nan_columns(X.shape[1]) if nan_columns is not None else \
                np.zeros(X.shape[1], dtype=bool)
            for j, name in enumerate(X.columns):
                dtype = X[name].dtype
                if pd.api.types.is_complex_dtype(dtype):
                    raise ValueError(f"Complex data not supported: column {name!r} of X.")
                if pd.api.types.is_numeric_dtype(dtype) and not isinstance(
                        dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(dtype):
                    col = X[name].to_numpy(dtype=np.float64, na_value=np.nan)
                    if np.isinf(col).any():
                        raise ValueError(f"Input X contains infinity in column {name!r}.")
                    if not allow_nan and not ok[j] and np.isnan(col).any():
                        raise ValueError(
                            f"Input X contains NaN in column {name!r}; this model/method "
                            "cannot take missing values: impute them (e.g. a SimpleImputer "
                            "in the model's pipeline) or drop those rows.")
            if reset:
                self._input_template = X.iloc[:0]
            return X
        if reset:
            self._input_template = None
        X = validate_data(self, X, reset=reset, dtype=np.float64, ensure_all_finite="allow-nan")
        if not allow_nan:
            bad = np.isnan(X).any(axis=0)
            if bad.any() and nan_columns is not None:
                bad &= ~nan_columns(X.shape[1])
            bad = np.flatnonzero(bad)
            if bad.size:
                raise ValueError(
                    f"Input X contains NaN in column {int(bad[0])}; this model/method cannot "
                    "take missing values: impute them (e.g. a SimpleImputer in the model's "
                    "pipeline) or drop those rows.")
        return X

    def _frame_from_array(self, X):
        """Rows given as an array to an explainer fitted on a DataFrame, as that frame.

        Columns are taken by position (as scikit-learn does, with its warning), and each is
        cast to the dtype it had in ``fit``; a column that cannot be cast is a ValueError
        naming it.
        """
        import warnings


        template = self._input_template
        arr = X.to_numpy(dtype=object) if is_frame(X) else np.asarray(X)
        if arr.ndim != 2:
            return X  # validate_data reports the dimension
        if arr.shape[1] != template.shape[1]:
            raise ValueError(
                f"X has {arr.shape[1]} features, but {type(self).__name__} is expecting "
                f"{template.shape[1]} features as input.")
        warnings.warn(
            f"X does not have valid feature names, but {type(self).__name__} was fitted "
            "with feature names; its columns are taken in the fitted order "
            f"{list(template.columns)}.", UserWarning, stacklevel=3)
        return frame_like(arr, template)

    def _feature_names(self):
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            return [f"x{j}" for j in range(self.n_features_in_)]
        return [str(n) for n in names]

    # -- batching -------------------------------------------------------------------------

    def _map_batches(self, func, n_rows, *args):
        """Run ``func(rows_slice, *args)`` over row batches with ``n_jobs`` workers.

        Returns the list of batch results in row order. See :meth:`_map_tasks`.
        """
        slices = batch_slices(n_rows, getattr(self, "batch_size", None) or n_rows)
        return self._map_tasks(func, slices, args)

    def _progress(self, total, unit="rows"):
        """A progress bar of ``total`` units on stderr, as ``verbose`` says (silent at 0,
        and inside another open bar); see :class:`sklearn_xai._progress.Progress`."""
        return Progress(total, verbose=getattr(self, "verbose", 0),
                        desc=type(self).__name__, unit=unit)

    def _map_tasks(self, func, items, args=(), *, sizes=None, on_result=None,
                   serial_context=None, worker_context=None, limit_threads=True,
                   **parallel_params):
        """``[func(item, *args) for item in items]``, with ``n_jobs`` workers when there
        are several items.

        ``items`` are row slices unless ``sizes`` gives the rows of each. Progress (with
        ``verbose``) counts the rows of the finished items. With workers (``n_jobs`` not
        None or 1), each item runs with OpenMP and BLAS limited to one thread
        (threadpoolctl), so that the model's own threads do not multiply the workers;
        with ``n_jobs=None`` the user's thread settings are left as they are.
        ``on_result(i, result)``, when given, receives each result as it finishes
        (workers finish in any order) instead of the returned list keeping it (whose
        entries are then None). ``serial_context`` and ``worker_context`` are context
        manager factories entered around the loop without workers and around each task
        in a worker (e.g. the numba thread count of each case). ``limit_threads=False``
        skips the OpenMP/BLAS limits, for tasks that call no model (setting them costs
        about a millisecond per task). ``parallel_params`` go to
        :class:`sklearn.utils.parallel.Parallel` (``prefer``, ``max_nbytes``).
        """
        items = list(items)
        if sizes is None:
            sizes = [s.stop - s.start for s in items]
        what = [_rows_text(s) for s in items]
        results = [None] * len(items)

        def done(i, result, seconds):
            if on_result is None:
                results[i] = result
            else:
                on_result(i, result)
            progress.update(sizes[i], seconds=seconds, what=what[i])

        with self._progress(sum(sizes)) as progress, \
                compile_notice(getattr(self, "verbose", 0)):
            if len(items) <= 1 or self.n_jobs in (None, 1):
                with (serial_context or contextlib.nullcontext)():
                    for i, item in enumerate(items):
                        t0 = time.perf_counter()
                        done(i, func(item, *args), time.perf_counter() - t0)
                return results
            parent = os.getpid() if limit_threads else None
            calls = (delayed(_limited_call)(parent, i, func, item, args, worker_context)
                     for i, item in enumerate(items))
            try:  # results as they finish, for the progress
                parallel = Parallel(n_jobs=self.n_jobs, return_as="generator_unordered",
                                    **parallel_params)
            except ValueError:  # a joblib backend that can only return the whole list
                parallel = Parallel(n_jobs=self.n_jobs, **parallel_params)
            with blas_limited() if limit_threads else contextlib.nullcontext():
                for i, seconds, result in parallel(calls):
                    done(i, result, seconds)
        return results

    def _uses_model_as_is(self):
        """Whether ``fit`` keeps ``model`` as it is (a ``FrozenEstimator``) rather than
        training a clone of it on ``X``."""
        return isinstance(self.model, FrozenEstimator)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if self.model is None:
            tags.input_tags.allow_nan = False
        elif self._takes_missing_values:
            # a method that takes missing values takes them in fit's rows only when fit
            # trains no clone of the model on them (the model's own tag decides that)
            tags.input_tags.allow_nan = (self._uses_model_as_is()
                                         or model_allows_nan(self.model))
        else:
            tags.input_tags.allow_nan = self._allow_nan()
        tags.non_deterministic = False
        return tags


def _rows_text(item):
    """``"rows 0-127"`` (``"row 5"``) for a slice of rows, else None."""
    if not isinstance(item, slice) or item.stop is None or item.stop <= item.start:
        return None
    if item.stop - item.start == 1:
        return f"row {item.start}"
    return f"rows {item.start}-{item.stop - 1}"


def _limited_call(parent_pid, index, func, item, args, context=None):
    """One task of :meth:`BaseExplainer._map_tasks` in a worker: ``(index, seconds,
    func(item, *args))``, run with one OpenMP/BLAS thread (none of that when
    ``parent_pid`` is None) and inside ``context()``."""
    limits = contextlib.nullcontext() if parent_pid is None else limited_threads(parent_pid)
    with limits, (context or contextlib.nullcontext)():
        t0 = time.perf_counter()
        result = func(item, *args)
    return index, time.perf_counter() - t0, result


class AttributionMixin(TransformerMixin):
    """``explain`` / ``transform`` / ``score`` of attribution explainers.

    Subclasses implement ``_explain(X) -> Attribution`` on validated ``X`` and set
    ``player_names_`` and ``output_names_`` in ``fit``.
    """

    def explain(self, X: ArrayLike | pd.DataFrame) -> Attribution:
        """Attributions of the rows of ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to explain, with the columns given to ``fit``.

        Returns
        -------
        Attribution
            ``values`` of shape (n_samples, n_players) for one explained output, else
            (n_samples, n_players, n_outputs).
        """
        check_is_fitted(self)
        index = X.index if is_frame(X) else None
        X = self._validate_X(X, reset=False)
        return keep_index(self._explain(self._explained_rows(X)), index)

    def transform(self, X: ArrayLike | pd.DataFrame) -> np.ndarray:
        """Attributions as a flat array.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to explain, with the columns given to ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_players * n_outputs)
            Output-major: columns ``k * n_players + j`` hold player ``j`` of output ``k``.
        """
        values = self.explain(X).values
        if values.ndim == 3:
            values = np.transpose(values, (0, 2, 1)).reshape(values.shape[0], -1)
        return values

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """Names of the :meth:`transform` columns: ``phi__<player>[__<output>]``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            The input columns' names, as scikit-learn transformers take them: checked
            against ``feature_names_in_`` (or their number against ``n_features_in_``);
            the names come from the fitted players and outputs.

        Returns
        -------
        ndarray of str of shape (n_players * n_outputs,)
            Output-major, as :meth:`transform`'s columns.
        """
        check_is_fitted(self)
        _check_input_features(self, input_features)
        players = list(self.player_names_)
        if len(self.output_names_) == 1:
            return np.asarray([f"phi__{p}" for p in players], dtype=object)
        return np.asarray([f"phi__{p}__{o}" for o in self.output_names_ for p in players],
                          dtype=object)

    def score(self, X: ArrayLike | pd.DataFrame, y: None = None) -> float:
        """Faithfulness correlation of the attributions on ``X`` (higher is better).

        For 64 random player subsets (each player in with probability 1/2; the same
        subsets for every row and every call), the Pearson correlation between the sum of
        a subset's attributions and the drop of the explained output when that subset is
        set to the reference row learned in ``fit`` (numeric mean, categorical mode);
        averaged over rows and over every explained output (Bhatt, Weller and Moura, IJCAI
        2020). Attributions of the wrong sign score below 0 and random ones near 0. See
        :func:`sklearn_xai.metrics.faithfulness_correlation`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows explained and scored.
        y : None
            Ignored.

        Returns
        -------
        float
            The mean correlation, in [-1, 1].
        """
        from ._faithfulness import faithfulness_correlation

        check_is_fitted(self)
        X = self._explained_rows(self._validate_X(X, reset=False))
        attribution = self._explain(X)
        return faithfulness_correlation(self.model_fn_, as_array(X), attribution,
                                        self.reference_, groups=getattr(self, "groups_", None))


class SpaceExplainer(BaseExplainer):
    """Base of the explainers of a model's outputs in an explained space.

    Parameters ``target`` and ``feature_space``. Its ``fit`` step (between the model and
    the subclass's ``_fit``) splits the model once (:func:`split_pipeline`) and runs two
    hooks: :meth:`_fit_space` resolves ``feature_space`` -- with ``"input"`` the players
    are the columns given to ``fit``; with ``"model"`` and a
    :class:`~sklearn.pipeline.Pipeline` model, the rows are sent through the pipeline's
    preprocessing steps and the players are the columns its last step receives -- and
    :meth:`_setup_outputs` sets ``model_fn_`` and ``output_names_``, which the subclass
    defines: :class:`OutputExplainer` calls a method of the model (``response_method``);
    ``TreeShapExplainer`` evaluates the parsed trees. ``_fit`` and ``_explain`` receive rows
    in the explained space.
    """

    _parameter_constraints: dict = {
        **BaseExplainer._parameter_constraints,
        "target": "no_validation",
        "feature_space": [StrOptions({"input", "model"})],
    }

    def _fit_family(self, X):
        pre, final = split_pipeline(self.model_)
        X = self._fit_space(X, pre, final)
        self.n_features_explained_ = X.shape[1]
        self.player_names_ = self._feature_names()  # one player per column, until _fit
        self._setup_outputs(X)
        return X

    def _fit_space(self, X, pre, final, space=None):
        """Resolve the explained space; return the rows in it.

        Sets ``feature_space_``, ``preprocessor_`` and ``explained_model_``.

        Parameters
        ----------
        X : ndarray or DataFrame
            Validated input rows.
        pre, final : Pipeline or None, estimator
            The model's preprocessing and last step (:func:`split_pipeline`).
        space : {"input", "model"} or None
            The space to explain; ``None``: ``feature_space``. ``"model"`` without a
            preprocessing is the input space.
        """
        space = getattr(self, "feature_space", "input") if space is None else space
        if space == "model" and pre is not None:
            self.preprocessor_, self.explained_model_ = pre, final
            self.feature_space_ = "model"
            return self._explained_rows(X)
        self.preprocessor_, self.explained_model_ = None, self.model_
        self.feature_space_ = "input"
        return X

    def _explained_rows(self, X):
        """Validated input rows in the explained space (the preprocessing's output)."""
        pre = getattr(self, "preprocessor_", None)
        if pre is None:
            return X
        Xt = pre.transform(X)
        if hasattr(Xt, "toarray"):  # a sparse one-hot block
            Xt = Xt.toarray()
        return Xt if is_frame(Xt) else np.asarray(Xt, dtype=np.float64)

    def _feature_names(self):
        pre = getattr(self, "preprocessor_", None)
        if pre is None:
            return super()._feature_names()
        try:
            return [str(n) for n in pre.get_feature_names_out()]
        except (AttributeError, ValueError, TypeError):
            return [f"x{j}" for j in range(self.n_features_explained_)]

    def _setup_outputs(self, X):
        """Set ``model_fn_`` (the explained function) and ``output_names_``; return
        ``model_fn_``. ``X``: the rows in the explained space."""
        raise NotImplementedError


class OutputExplainer(SpaceExplainer):
    """Base of the explainers of a model's outputs, as one of its methods computes them.

    Adds ``response_method`` to :class:`SpaceExplainer`: ``model_fn_`` and
    ``output_names_`` are set from ``response_method`` and ``target`` (see
    :func:`sklearn_xai._model.make_model_function` and
    :func:`sklearn_xai._model.output_names`). Local attribution explainers derive from
    :class:`AttributionExplainer`; global ones (such as ``KnockoffSAGE``) from this class.
    """

    _parameter_constraints: dict = {
        **SpaceExplainer._parameter_constraints,
        "response_method": [StrOptions(set(RESPONSE_METHODS))],
    }

    # -- outputs --------------------------------------------------------------------------

    def _setup_outputs(self, X):
        """Set ``model_fn_`` (the explained function) and ``output_names_``.

        ``batch_size`` of an explainer counts explained rows per task (see
        :meth:`_map_batches`); the model itself is called on whatever block a game builds
        (an :class:`~sklearn_xai.shapley.ImputationGame` bounds it by its own
        ``batch_size`` of model rows, which an explainer sets from its ``max_model_rows``),
        so the model function is not re-batched here.
        """
        template = X.iloc[:0] if is_frame(X) else None
        probe = take_rows(X, slice(0, 2))  # two rows: a per-row output shape is checkable
        # probed once, as an array rebuilt through the template like every later call; a
        # model that cannot take the rows is a TypeError naming it (_model.probe_model)
        self.model_fn_ = make_model_function(
            self.explained_model_, self.response_method, self.target,
            as_array(probe) if template is not None else probe, template, None)
        self.output_names_ = list(self.model_fn_.output_names)
        return self.model_fn_


class AttributionExplainer(AttributionMixin, OutputExplainer):
    """Base of the local attribution explainers (``explain``/``transform``/``score``).

    Subclasses implement ``_fit(X, y)`` and ``_explain(X) -> Attribution`` on rows in the
    explained space (see :class:`OutputExplainer`).
    """


class RecourseMixin(TransformerMixin):
    """``transform`` / ``score`` of counterfactual explainers.

    Subclasses implement ``_explain(X) -> Counterfactuals`` on validated ``X``.
    """

    def explain(self, X: ArrayLike | pd.DataFrame) -> Counterfactuals:
        """Counterfactuals of the rows of ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Queries, with the columns given to ``fit``.

        Returns
        -------
        Counterfactuals
            The counterfactuals found for each query (see its documentation).
        """
        check_is_fitted(self)
        index = X.index if is_frame(X) else None
        X = self._validate_X(X, reset=False)
        return keep_index(self._explain(X), index)

    def transform(self, X: ArrayLike | pd.DataFrame) -> np.ndarray | pd.DataFrame:
        """The best counterfactual per row, missing where none was found.

        The best counterfactual of a row is its first valid one in :meth:`explain`'s order
        (best first).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Queries, with the columns given to ``fit``.

        Returns
        -------
        ndarray or DataFrame of shape (n_samples, n_features)
            By default an array: float64 when every column is numeric, else object (as
            scikit-learn's transformers return mixed columns), NaN in the rows without a
            counterfactual. With ``set_output(transform="pandas")`` a DataFrame in the
            columns and dtypes of the counterfactuals (those seen in ``fit``: a numeric
            column stays numeric, a categorical one keeps its dtype), indexed like ``X``
            when it is a DataFrame; a row without a counterfactual is missing in every
            column, which turns an integer column into float64 and a boolean one into
            object.
        """
        from sklearn.utils._set_output import _get_output_config

        result = self.explain(X)
        n = result.n_queries
        cfs = result.counterfactuals
        query = np.asarray(cfs["query"], dtype=np.int64)
        best = {}  # query -> its first valid counterfactual's row
        for r in np.flatnonzero(np.asarray(result.valid, dtype=bool)):
            best.setdefault(int(query[r]), int(r))
        features = cfs.drop(columns="query")
        if _get_output_config("transform", self)["dense"] == "default":
            queries = as_array(result.queries)
            out = np.full(queries.shape, np.nan,
                          dtype=queries.dtype if queries.dtype != object else object)
            rows = as_array(features)
            for i, r in best.items():
                out[i] = rows[r]
            return out
        import pandas as pd

        order = sorted(best)
        frame = features.iloc[[best[i] for i in order]]
        frame.index = pd.Index(order)
        frame = frame.reindex(pd.RangeIndex(n))
        if is_frame(X) and len(X.index) == n:
            frame.index = X.index
        return frame

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """The input feature names (a counterfactual has the query's columns).

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            The input columns' names, as scikit-learn transformers take them: checked
            against ``feature_names_in_`` (or their number against ``n_features_in_``).

        Returns
        -------
        ndarray of str of shape (n_features,)
            The names of the columns given to ``fit`` (``x0``, ``x1``, ... for arrays).
        """
        check_is_fitted(self)
        _check_input_features(self, input_features)
        return np.asarray(self._feature_names(), dtype=object)


def _check_input_features(explainer, input_features):
    """``get_feature_names_out``'s ``input_features``, as scikit-learn's transformers check
    it: the fitted column names (or as many names as fitted columns)."""
    if input_features is None:
        return
    given = np.asarray(input_features, dtype=object).ravel()
    names = getattr(explainer, "feature_names_in_", None)
    if names is not None and not np.array_equal(given, np.asarray(names, dtype=object)):
        raise ValueError(
            f"input_features is not equal to feature_names_in_: got {list(given)[:10]}, "
            f"fitted on {list(names)[:10]}.")
    if len(given) != explainer.n_features_in_:
        raise ValueError(
            f"input_features should have length equal to the number of features "
            f"({explainer.n_features_in_}), got {len(given)}.")


def split_pipeline(model: Any) -> tuple[Pipeline | None, Any]:
    """``(preprocessing, final_step)`` of a (possibly frozen) model.

    Nested pipelines are flattened first (a step that is itself a Pipeline, frozen or not,
    contributes its own steps), so a Pipeline whose last step is a Pipeline ending in a
    model is split as the same pipeline written flat.

    Parameters
    ----------
    model : estimator
        A model, a :class:`~sklearn.pipeline.Pipeline` or either wrapped in
        :class:`~sklearn.frozen.FrozenEstimator`.

    Returns
    -------
    preprocessing : Pipeline or None
        The steps before the last one; ``None`` for a model that is not a Pipeline of two
        or more steps (once flattened).
    final_step : estimator
        The last step (the model itself when it is not a Pipeline).
    """
    from sklearn.pipeline import Pipeline

    inner = unwrap_frozen(model)
    if not isinstance(inner, Pipeline):
        return None, inner
    steps = _flat_steps(inner)
    final = unwrap_frozen(steps[-1][1])
    if len(steps) == 1:
        return None, final
    if len(steps) == len(inner.steps):  # nothing nested: the pipeline's own slice
        return inner[:-1], final
    return Pipeline(steps[:-1], memory=inner.memory, verbose=inner.verbose), final


def _check_steps_fitted(model):
    """NotFittedError naming the first unfitted step of a (frozen, nested) Pipeline.

    scikit-learn's ``check_is_fitted`` on a Pipeline looks at its last step only.
    """
    from sklearn.pipeline import Pipeline

    inner = unwrap_frozen(model)
    if not isinstance(inner, Pipeline):
        return
    for name, step in _flat_steps(inner):
        step = unwrap_frozen(step)
        if step is None or isinstance(step, str):  # "passthrough", "drop"
            continue
        try:
            check_is_fitted(step)
        except NotFittedError as exc:
            raise NotFittedError(
                f"The step {name!r} ({type(step).__name__}) of the model's Pipeline is not "
                "fitted; fit the whole pipeline before freezing it.") from exc
        except TypeError:  # not an estimator: the model's own calls will tell
            continue


def _flat_steps(pipeline, prefix=""):
    """``(name, step)`` of a Pipeline with every nested (or frozen) Pipeline expanded.

    A nested step is named ``outer__inner``, as in the nested parameter names.
    """
    from sklearn.pipeline import Pipeline

    steps = []
    for name, step in pipeline.steps:
        inner = unwrap_frozen(step)
        if isinstance(inner, Pipeline) and inner.steps:
            steps.extend(_flat_steps(inner, f"{prefix}{name}__"))
        else:
            steps.append((f"{prefix}{name}", step))
    return steps


def row_generators(random_state, X):
    """One random generator per row of ``X``, keyed by the row's content.

    The package's explainers draw a row's random numbers from a generator that depends
    only on one seed drawn from ``random_state`` and on the row's content, so splitting,
    reordering or duplicating rows never changes a row's result. Call it once per
    ``explain`` on all the rows (every call draws a fresh seed from a ``RandomState``).

    Parameters
    ----------
    random_state : int, RandomState instance or None
        The explainer's ``random_state``.
    X : array-like of shape (n_rows, n_features)
        The explained rows.

    Returns
    -------
    list of numpy.random.Generator
        One generator per row, in row order.

    Notes
    -----
    The package's explainers use the same generators through the layer below,
    ``sklearn_xai._utils.keyed_generators(base_seed, keys)``: they draw the base seed once
    per call (:func:`sklearn_xai._utils.draw_base_seed`) because other draws of the call
    derive from it too, and key rows by :func:`sklearn_xai._random.row_keys`. This function
    is exactly ``keyed_generators(draw_base_seed(random_state), row_keys(as_array(X)))``.
    """
    from ._random import row_keys
    from ._utils import draw_base_seed, keyed_generators

    return keyed_generators(draw_base_seed(random_state), row_keys(as_array(X)))
