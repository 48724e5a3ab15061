"""Which input column every output column of a fitted preprocessing comes from.

An explainer that explains a :class:`~sklearn.pipeline.Pipeline` in its input columns
needs, for each column the final model receives, the one input column it is computed
from. That is known only for transformers whose every output column is a function of
one input column; it is decided here by the transformer's *exact* type (never by
comparing widths: a PCA with as many components as inputs mixes them all). A subclass of
a known transformer may override ``transform`` (and mix columns), so it is not trusted:
:func:`is_known_step` is the one rule, used by every consumer (this map, the feature
groups and the NaN rule of :mod:`sklearn_xai.base`, P2CE's input owners).
"""

from numbers import Integral

import numpy as np

from ._utils import unwrap_frozen

__all__ = ["input_column_map", "is_known_step"]


def is_known_step(step, types):
    """Whether ``step`` (a ``FrozenEstimator`` unwrapped) is exactly of one of ``types``.

    Exact types, not ``isinstance``: a subclass of a column-wise transformer may override
    ``transform`` and mix columns (or stop imputing), and nothing about its behaviour is
    known, so every consumer treats it as an unknown step.

    Parameters
    ----------
    step : object
        A pipeline step.
    types : type or tuple of type
        The known classes.

    Returns
    -------
    bool
    """
    if isinstance(types, type):
        types = (types,)
    return type(unwrap_frozen(step)) in tuple(types)


def _one_to_one_types():
    """Transformers whose output column ``j`` is a function of input column ``j``."""
    from sklearn.preprocessing import (
        Binarizer,
        MaxAbsScaler,
        MinMaxScaler,
        OrdinalEncoder,
        PowerTransformer,
        QuantileTransformer,
        RobustScaler,
        StandardScaler,
    )

    return (OrdinalEncoder, StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler,
            QuantileTransformer, PowerTransformer, Binarizer)


_SUPPORTED = ("OneHotEncoder (with drop or infrequent categories), OrdinalEncoder, "
              "TargetEncoder, StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler, "
              "QuantileTransformer, PowerTransformer, Binarizer, KBinsDiscretizer, "
              "SimpleImputer (also with add_indicator), MissingIndicator, 'passthrough', "
              "'drop', and Pipelines and ColumnTransformers of these")


def input_column_map(preprocessing, n_input_columns, input_names=None):
    """The input column behind every output column of a fitted preprocessing.

    Supported (each output column is computed from one input column):
    ``OneHotEncoder`` (also with ``drop`` or infrequent categories), ``OrdinalEncoder``,
    ``TargetEncoder`` (one column per class for a multi-class target),
    ``StandardScaler``, ``MinMaxScaler``, ``MaxAbsScaler``, ``RobustScaler``,
    ``QuantileTransformer``, ``PowerTransformer``, ``Binarizer``, ``KBinsDiscretizer``
    (ordinal or one-hot), ``SimpleImputer`` (an ``add_indicator`` column belongs to the
    column it flags), ``MissingIndicator``, ``"passthrough"``, ``"drop"``, and
    :class:`~sklearn.pipeline.Pipeline` / :class:`~sklearn.compose.ColumnTransformer`
    (with its ``remainder``) of these. Any other transformer (``PCA``,
    ``PolynomialFeatures``, ``FunctionTransformer``, one of your own) may mix columns
    and is refused, whatever its output width.

    Parameters
    ----------
    preprocessing : fitted transformer, Pipeline, "passthrough" or None
        The steps in front of the model (``None``: none).
    n_input_columns : int
        Number of columns given to ``preprocessing``.
    input_names : list of str or None
        Names of the input columns (used to resolve a ColumnTransformer's named columns
        when needed and in messages); ``None``: ``x0, x1, ...``.

    Returns
    -------
    list of int
        For each output column, the index of the input column it is computed from.

    Raises
    ------
    ValueError
        Naming the step that is not known to be column-wise, or whose output width does
        not match its columns.
    """
    n_input_columns = int(n_input_columns)
    if input_names is None:
        input_names = [f"x{j}" for j in range(n_input_columns)]
    input_names = [str(n) for n in input_names]
    if len(input_names) != n_input_columns:
        raise ValueError(f"input_names has {len(input_names)} names for "
                         f"{n_input_columns} input columns.")
    cols = step_map(preprocessing, n_input_columns, "preprocessing", input_names)
    return [int(c) for c in cols]


def _label(path, name):
    return f"{path} -> {name!r}" if path else repr(name)


def step_map(step, n_in, label, names):
    """Input column (in ``range(n_in)``) of each output column of ``step``."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    step = unwrap_frozen(step)
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return np.arange(n_in)
    if isinstance(step, str) and step == "drop":
        return np.zeros(0, dtype=np.int64)
    if is_known_step(step, Pipeline):
        cols = np.arange(n_in)
        for name, sub in step.steps:
            cols = cols[step_map(sub, len(cols), _label(label, name),
                                  [names[c] for c in cols])]
        return cols
    n_fitted = getattr(step, "n_features_in_", None)
    if n_fitted is not None and int(n_fitted) != n_in:
        raise ValueError(f"The step {label} ({type(step).__name__}) was fitted on "
                         f"{n_fitted} columns but receives {n_in}.")
    if is_known_step(step, ColumnTransformer):
        return _column_transformer_map(step, n_in, label, names)
    cols = _transformer_map(step, n_in, label)
    _check_width(step, cols, label)
    return cols


def _transformer_map(step, n_in, label):
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.preprocessing import KBinsDiscretizer, OneHotEncoder, TargetEncoder

    if is_known_step(step, _one_to_one_types()):
        return np.arange(n_in)
    if is_known_step(step, OneHotEncoder):
        widths = []
        drop = getattr(step, "drop_idx_", None)
        infrequent = getattr(step, "infrequent_categories_", None) \
            if getattr(step, "_infrequent_enabled", False) else None
        for j, cats in enumerate(step.categories_):
            w = len(cats)
            if infrequent is not None and infrequent[j] is not None:
                w -= len(infrequent[j]) - 1  # the infrequent ones share one column
            if drop is not None and drop[j] is not None:
                w -= 1
            widths.append(w)
        return np.repeat(np.arange(n_in), widths)
    if is_known_step(step, KBinsDiscretizer):
        if step.encode == "ordinal":
            return np.arange(n_in)
        return np.repeat(np.arange(n_in), np.asarray(step.n_bins_, dtype=np.int64))
    if is_known_step(step, TargetEncoder):
        if step.target_type_ == "multiclass":  # feature-major, one column per class
            return np.repeat(np.arange(n_in), len(step.classes_))
        return np.arange(n_in)
    if is_known_step(step, MissingIndicator):
        return np.asarray(step.features_, dtype=np.int64)
    if is_known_step(step, SimpleImputer):
        import pandas as pd

        if getattr(step, "keep_empty_features", False):
            kept = np.arange(n_in)
        else:  # columns with no observed value at fit are dropped
            kept = np.flatnonzero(~pd.isna(np.asarray(step.statistics_, dtype=object)))
        if step.add_indicator:
            kept = np.concatenate([kept, np.asarray(step.indicator_.features_,
                                                    dtype=np.int64)])
        return kept.astype(np.int64)
    known = next((t for t in _all_known_types() if isinstance(step, t)), None)
    why = (f" (a subclass of {known.__name__}: it may override transform, so only the "
           f"exact class is trusted)") if known is not None else ""
    raise ValueError(
        f"The step {label} ({type(step).__name__}) is not known to be column-wise{why}: "
        f"its output columns may mix input columns. Column-wise steps: {_SUPPORTED}.")


def _all_known_types():
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import KBinsDiscretizer, OneHotEncoder, TargetEncoder

    return _one_to_one_types() + (OneHotEncoder, KBinsDiscretizer, TargetEncoder,
                                  MissingIndicator, SimpleImputer, Pipeline,
                                  ColumnTransformer)


def _check_width(step, cols, label):
    """The map must have one entry per output column the step names."""
    try:
        n_out = len(step.get_feature_names_out())
    except (AttributeError, ValueError, TypeError):
        return
    if n_out != len(cols):
        raise ValueError(f"The step {label} ({type(step).__name__}) outputs {n_out} "
                         f"columns where {len(cols)} were expected from its fitted state.")


def _column_transformer_map(ct, n_in, label, names):
    slices = ct.output_indices_
    n_out = max((s.stop for s in slices.values()), default=0)
    out = np.full(n_out, -1, dtype=np.int64)
    specs = {name: trans for name, trans, _ in ct.transformers}
    for name, trans, columns in ct.transformers_:
        sl = slices.get(name)
        if sl is None or sl.stop == sl.start:
            continue
        ins = _ct_input_indices(ct, name, columns, names)
        spec = ct.remainder if name == "remainder" else specs.get(name, trans)
        if isinstance(spec, str) and spec == "passthrough":
            trans = "passthrough"  # fitted as an identity FunctionTransformer
        sub = step_map(trans, len(ins), _label(label, name), [names[i] for i in ins])
        if len(sub) != sl.stop - sl.start:
            raise ValueError(f"The step {_label(label, name)} outputs {sl.stop - sl.start} "
                             f"columns where {len(sub)} were expected.")
        out[sl] = ins[sub]
    if np.any(out < 0):
        raise ValueError(f"The step {label} (ColumnTransformer) has output columns that "
                         "come from none of its transformers.")
    return out


def _ct_input_indices(ct, name, columns, names):
    """Input indices of one ColumnTransformer entry."""
    known = getattr(ct, "_transformer_to_input_indices", None)
    if known is not None and name in known:
        return np.asarray(known[name], dtype=np.int64)
    idx = np.arange(len(names))
    if isinstance(columns, str):
        columns = [columns]
    if isinstance(columns, slice):
        return idx[columns]
    columns = np.atleast_1d(np.asarray(columns))
    if columns.dtype == bool:
        return idx[columns]
    if len(columns) and isinstance(columns[0], Integral | np.integer):
        return idx[columns.astype(np.int64)]
    pos = {n: i for i, n in enumerate(names)}
    try:
        return np.asarray([pos[str(c)] for c in columns], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"The ColumnTransformer entry {name!r} names the column {exc} "
                         "that is not an input column.") from None
