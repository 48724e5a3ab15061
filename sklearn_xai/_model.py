"""Model adapters: one batched ``f(X) -> (n, n_outputs)`` float64 function per explainer.

`ModelFunction` turns any fitted scikit-learn-compatible model (estimator, pipeline,
xgboost/lightgbm wrapper, skorch net, ``FrozenEstimator``) into a picklable callable that
selects the explained outputs. Torch modules and skorch nets also get gradient access
through :class:`sklearn_xai._torch.TorchModelFunction`.
"""

import sys
from dataclasses import dataclass, replace

import numpy as np
from sklearn.base import is_classifier

from ._utils import unwrap_frozen

RESPONSE_METHODS = ("auto", "predict_proba", "decision_function", "predict")


def _has_method(model, name):
    try:
        return callable(getattr(model, name))
    except AttributeError:
        return False


def resolve_response_method(model, response_method):
    """The name of the model method that is explained.

    ``"auto"`` picks ``predict_proba`` for classifiers that have it, then
    ``decision_function``, then ``predict``.
    """
    if response_method == "auto":
        if is_classifier(model):
            for name in ("predict_proba", "decision_function", "predict"):
                if _has_method(model, name):
                    return name
        return "predict"
    if not _has_method(model, response_method):
        raise ValueError(
            f"response_method={response_method!r} was requested but the model "
            f"{type(model).__name__} has no {response_method} method."
        )
    return response_method


def output_names(quantity, labels=None, columns=None, width=None):
    """Names of explained outputs, the same in every explainer.

    * ``proba(c)``: the probability of class ``c`` (``predict_proba``, a network's
      softmax/sigmoid, TreeSHAP's ``model_output="probability"``);
    * ``margin(c)``: the raw score of class ``c`` (``decision_function``, a network's logit,
      a boosted model's margin);
    * ``predict`` / ``predict[k]``: a regressor's (or an unlabelled network's) output ``k``;
      ``margin`` / ``margin[k]`` when the raw score is not the prediction (a link
      function, a ``decision_function`` without classes).

    Parameters
    ----------
    quantity : {"proba", "margin", "predict"}
    labels : list or None
        Class labels of the explained outputs (class outputs).
    columns : list of int or None
        Output positions of the explained outputs (other outputs).
    width : int or None
        Number of outputs of the model (other outputs; 1 gives the bare name).

    Returns
    -------
    list of str
    """
    if labels is not None:
        return [f"{quantity}({c})" for c in labels]
    if columns is None:
        columns = range(width)
        if width == 1:
            return [quantity]
    return [f"{quantity}[{k}]" for k in columns]


@dataclass(frozen=True)
class OutputSelection:
    """The explained outputs of a model: ``offset + sign * out[:, columns]``, named.

    Built once per explainer by :func:`select_outputs` and applied by every adapter (the
    model function, the torch adapter, TreeSHAP's ensemble function and kernels).

    Attributes
    ----------
    quantity : str
        What the outputs are (``"proba"``, ``"margin"``, ``"predict"``, ``"path_length"``).
    columns : list of int or None
        Columns of the model's 2-D output explained; ``None``: every column.
    names : list of str or None
        One name per explained output; ``None`` until the output width is known
        (:meth:`named`).
    sign, offset : float
        ``-1`` and ``0`` (a margin) or ``1`` (a probability) explain a binary model's other
        class from its single column; else ``1`` and ``0``.
    """

    quantity: str
    columns: list = None
    names: list = None
    sign: float = 1.0
    offset: float = 0.0

    @property
    def n_outputs(self):
        return len(self.names)

    def positions(self, width):
        """The explained columns as a list, ``width`` the model's number of columns."""
        return list(range(width)) if self.columns is None else list(self.columns)

    def named(self, width):
        """This selection, named ``quantity[k]`` (``quantity`` for one column) when it had
        no names, ``width`` the model's number of output columns."""
        if self.names is not None:
            return self
        return replace(self, names=output_names(self.quantity, columns=self.columns,
                                                width=width))

    def apply(self, out):
        """The explained outputs of the model's 2-D output ``out`` (numpy or torch)."""
        if self.columns is not None:
            out = out[:, self.columns]
        if self.sign != 1.0 or self.offset != 0.0:
            out = self.offset + self.sign * out
        return out


def select_outputs(quantity, target, *, labels=None, width=None, default=None,
                   negative=None, negate=True, aliases=None, by_name=False):
    """Resolve ``target`` to the explained output columns and their names, for every adapter.

    Parameters
    ----------
    quantity : str
        What the outputs are; the names' prefix (see :func:`output_names`).
    target : object or None
        The explained output; ``None`` explains the ``default`` columns.
    labels : list or None
        The class label of each output column (names ``quantity(label)``); ``None``:
        unlabelled columns (names ``quantity[k]``, ``width`` of them).
    width : int or None
        Number of output columns when they are unlabelled; ``None``: not known yet (the
        names are set once the model is probed, :meth:`OutputSelection.named`).
    default : list of int or None
        Columns explained when ``target`` is None (``[1]``: the positive class of a binary
        classifier's two columns); ``None``: every column.
    negative : object or None
        A binary classifier's first class when its output is one column (the score of
        ``labels[0]``); ``target=negative`` explains the negated column (``1 - p`` for a
        probability).
    negate : bool, default=True
        Whether ``negative`` may be explained; ``False`` makes it a ValueError.
    aliases : list of str or None
        Other names of the output columns a ``target`` may take (``by_name``).
    by_name : bool, default=False
        Match ``target`` by its text against the labels, the aliases and the output names
        (TreeSHAP); else ``target`` is a class label (by equality) or, for unlabelled
        columns, a column index.

    Returns
    -------
    OutputSelection
    """
    if labels is not None:
        labels = list(labels)
        names = output_names(quantity, labels)
    else:
        names = None if width is None else output_names(quantity, width=width)

    def pick(cols):
        if names is not None:
            return OutputSelection(quantity, cols, [names[k] for k in cols])
        return OutputSelection(quantity, cols, output_names(quantity, columns=cols))

    if target is None:
        if default is None:
            return OutputSelection(quantity, None, names)
        return pick(list(default))
    column = _target_column(target, labels, aliases, names, by_name)
    if column is not None:
        return pick([column])
    if negative is not None and (str(target) in (str(negative), f"{quantity}({negative})")
                                 if by_name else target == negative):
        if not negate:
            raise ValueError(
                f"The model has one {quantity} column, that of the class {labels[0]!r}; "
                f"target={target!r} cannot be explained with it.")
        return OutputSelection(quantity, [0], output_names(quantity, [negative]), sign=-1.0,
                               offset=1.0 if quantity == "proba" else 0.0)
    if not by_name:
        classes = ([negative] if negative is not None else []) + labels
        raise ValueError(f"target={target!r} is not one of the model's classes {classes}.")
    offered = list(dict.fromkeys(list(names or ()) + (
        [f"{quantity}({negative})"] if negative is not None else [])))
    raise ValueError(f"target={target!r} is not one of the model's outputs; target takes "
                     f"one of {offered}.")


def _target_column(target, labels, aliases, names, by_name):
    """The output column ``target`` names (see :func:`select_outputs`), or None."""
    if by_name:
        text = str(target)
        for candidates in ([str(c) for c in labels or ()], list(aliases or ()),
                           list(names or ())):
            if text in candidates:
                return candidates.index(text)
        return None
    if labels is not None:
        return labels.index(target) if target in labels else None
    return int(target)  # a column index of unlabelled outputs


def shown_positions(idx):
    """The first few of the integer positions ``idx``, as text."""
    return ", ".join(str(int(i)) for i in idx[:5]) + (", ..." if len(idx) > 5 else "")


def model_name(model):
    """The class name of a model, looking through ``FrozenEstimator``."""
    return type(unwrap_frozen(model)).__name__


def check_model_output(raw, model, method, X):
    """The model's output as a 2-D float64 array, checked against its input.

    Every call of a model goes through this check, so a broken model is reported once,
    in the adapter, with the model's name: a non-numeric output is a ``TypeError``; an
    output with another number of rows than ``X`` or with NaN/inf values is a
    ``ValueError`` that names the first offending rows.

    Parameters
    ----------
    raw : array-like
        What ``getattr(model, method)(X)`` returned.
    model : estimator
    method : str
    X : array-like of shape (n_rows, n_features)
        The rows the model was called on.

    Returns
    -------
    ndarray of shape (n_rows, n_outputs), float64
    """
    return check_output(raw, X.shape[0], f"The model {model_name(model)}'s {method}",
                        "choose a response_method with a numeric output")


def check_output(raw, n_rows, who, remedy):
    """:func:`check_model_output` for any callable: ``who`` names it in the errors (e.g.
    ``"model_fn"``), ``remedy`` ends the non-numeric error; ``n_rows`` the rows it was
    called on. Returns (n_rows, n_outputs) float64."""
    try:
        out = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{who} returned non-numeric values (dtype {np.asarray(raw).dtype}); "
                        f"{remedy}.") from exc
    if out.ndim == 0 or out.shape[0] != n_rows:
        raise ValueError(
            f"{who} returned an output of shape {out.shape} for {n_rows} input row(s); it "
            "must return one row per input row.")
    if out.ndim == 1:
        out = out[:, None]
    elif out.ndim > 2:
        out = out.reshape(n_rows, -1)
    where = non_finite_rows(out)
    if where is not None:
        raise ValueError(f"{who} returned NaN or infinite values {where}; "
                         f"{NON_FINITE_ADVICE.format(what='model')}")
    return out


def frame_like(X, template):
    """Rows of a 2-D array as a DataFrame with the columns and dtypes of ``template``.

    Object rows stay object until each column is cast (pandas would infer a string dtype
    and turn ``None`` into NaN: an unknown category to an encoder that learned ``None``).

    Parameters
    ----------
    X : array-like of shape (n_rows, n_columns)
        The rows, columns in the template's order.
    template : pandas.DataFrame of shape (0, n_columns)
        The columns and dtypes to rebuild.

    Returns
    -------
    pandas.DataFrame of shape (n_rows, n_columns)
    """
    import pandas as pd

    X = np.asarray(X)
    frame = pd.DataFrame(X, columns=template.columns,
                         dtype=object if X.dtype == object else None)
    for name, dtype in template.dtypes.items():
        if frame[name].dtype != dtype:
            if dtype.kind in "iu" and not _integral(frame[name]):
                # a reference mean or a knockoff of an integer column: keep its value (a cast
                # to the fitted integer dtype would truncate 2.97 to 2 before the model sees it)
                frame[name] = frame[name].astype(np.float64)
                continue
            try:
                frame[name] = frame[name].astype(dtype)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"Column {name!r} of X cannot be converted to the dtype {dtype} it had "
                    f"in fit ({exc}); pass a DataFrame with the fitted columns.") from exc
    return frame


def _integral(column):
    """Whether every value of a numeric column is a whole number (NaN counts as not)."""
    try:
        values = np.asarray(column, dtype=np.float64)
    except (TypeError, ValueError):
        return True  # not numeric: the cast below decides
    return bool(np.all(np.isfinite(values) & (values == np.round(values))))


#: the end of every "non-finite output" error (``what``: "model" or "module")
NON_FINITE_ADVICE = ("explanations of a non-finite output would be meaningless. Check the "
                     "{what} on these inputs (for example input values outside the range "
                     "it was trained on).")


def non_finite_rows(out):
    """Which rows of ``out`` hold a NaN or inf, in words, or None when all are finite.

    Parameters
    ----------
    out : ndarray of shape (n_rows, ...)
        Model outputs (or gradients), one block per evaluated row.

    Returns
    -------
    str or None
        ``"for k of n evaluated row(s) (positions ... of the call)"``.
    """
    finite = np.isfinite(out)
    if finite.all():
        return None
    bad = np.flatnonzero(~finite.reshape(len(out), -1).all(axis=1))
    return (f"for {bad.size} of {len(out)} evaluated row(s) (positions "
            f"{shown_positions(bad)} of the call)")


def probe_model(model, method, model_input, X):
    """Call the model once in ``fit``; an error of the model itself is a TypeError naming it.

    Returns
    -------
    ndarray of shape (n_rows, n_outputs), float64, checked by :func:`check_model_output`.
    """
    try:
        raw = getattr(model, method)(model_input)
    except (ValueError, TypeError, KeyError) as exc:
        raise TypeError(
            f"The model {model_name(model)} cannot evaluate rows of X as given "
            f"({type(exc).__name__}: {exc}). Check the column types it expects."
        ) from exc
    return check_model_output(raw, model, method, X)


def is_skorch_net(model) -> bool:
    """Whether ``model`` is a skorch net (never imports skorch)."""
    if "skorch" not in sys.modules:
        return False
    from skorch import NeuralNet

    return isinstance(model, NeuralNet)


def module_dtype(module):
    """The torch dtype a module computes in: that of its first floating parameter, or
    None when it has none."""
    return next((p.dtype for p in module.parameters() if p.is_floating_point()), None)


def net_input_dtype(model):
    """The numpy dtype a skorch net's module computes in (:func:`module_dtype`), or None
    for any other model: a skorch net hands numpy input to its module as it is, and a
    float32 module refuses float64 rows."""
    net = unwrap_frozen(model)
    if not is_skorch_net(net) or getattr(net, "module_", None) is None:
        return None
    dtype = module_dtype(net.module_)
    try:
        return None if dtype is None else np.dtype(str(dtype).removeprefix("torch."))
    except TypeError:  # bfloat16: numpy has no such dtype
        return None


class ModelFunction:
    """A picklable, batched ``f(X) -> ndarray (n_rows, n_outputs)`` of float64.

    Parameters
    ----------
    model : fitted estimator
    method : str
        Name of the model method called (``predict_proba``, ``decision_function``, ``predict``).
    output_columns : list of int or None
        Columns of the method's 2-D output that are explained; ``None`` keeps a 1-D output
        as one column (or all columns of a 2-D one).
    output_names : list of str
        One name per explained output.
    template : pandas.DataFrame of shape (0, n_features) or None
        When given, numpy input is rebuilt as a DataFrame with these column names and
        dtypes before the model is called (pipelines that select columns by name need it).
    sign : float, default=1.0
        Multiplies the output (``-1`` explains the negative class of a binary
        ``decision_function``).
    batch_size : int or None
        Rows per model call in :meth:`batched`; ``None`` calls once.
    """

    #: its outputs are checked (:func:`check_model_output`: one float64 row per input row,
    #: finite), so a caller that checks plain callables (``ImputationGame``) need not again
    checks_output = True

    def __init__(self, model, method, output_columns, output_names, template=None, sign=1.0,
                 batch_size=None):
        self.model = model
        self.method = method
        self.selection = OutputSelection(None, output_columns, list(output_names), float(sign))
        self.template = template
        self.batch_size = batch_size
        self.input_dtype = net_input_dtype(model)

    @classmethod
    def from_selection(cls, model, method, selection, template=None, batch_size=None):
        """The model function of the outputs an :class:`OutputSelection` chose."""
        fn = cls(model, method, selection.columns, selection.names, template, selection.sign,
                 batch_size)
        fn.selection = selection
        return fn

    @property
    def output_columns(self):
        return self.selection.columns

    @property
    def output_names(self):
        return list(self.selection.names)

    @property
    def sign(self):
        return self.selection.sign

    @property
    def n_outputs(self):
        return len(self.selection.names)

    def to_model_input(self, X):
        """Convert a 2-D array of explained-space rows to what the model takes (a skorch
        net's rows in its module's dtype)."""
        if hasattr(X, "iloc"):
            return X
        if self.template is not None:
            return frame_like(X, self.template)
        if self.input_dtype is not None:
            return np.asarray(X, dtype=self.input_dtype)
        return X

    def _call(self, X):
        raw = getattr(self.model, self.method)(self.to_model_input(X))
        out = check_model_output(raw, self.model, self.method, X)
        columns = self.selection.columns
        if columns is not None and out.shape[1] <= max(columns):
            raise ValueError(
                f"The model {model_name(self.model)}'s {self.method} returned "
                f"{out.shape[1]} column(s); the explained output needs column "
                f"{max(columns)} (one column per class in classes_).")
        return np.ascontiguousarray(self.selection.apply(out))

    def __call__(self, X):
        """Evaluate the explained outputs, in batches of ``batch_size`` rows.

        Parameters
        ----------
        X : ndarray or DataFrame of shape (n_rows, n_features)

        Returns
        -------
        ndarray of shape (n_rows, n_outputs), float64
        """
        n = X.shape[0]
        if n == 0:
            return np.zeros((0, self.n_outputs))
        if self.batch_size is None or n <= self.batch_size:
            return self._call(X)
        parts = []
        for start in range(0, n, self.batch_size):
            chunk = X.iloc[start:start + self.batch_size] if hasattr(X, "iloc") else X[
                start:start + self.batch_size]
            parts.append(self._call(chunk))
        return np.concatenate(parts, axis=0)


def make_model_function(model, response_method, target, X_probe, template=None, batch_size=None):
    """Build the :class:`ModelFunction` of a fitted model.

    Parameters
    ----------
    model : fitted estimator
    response_method : {"auto", "predict_proba", "decision_function", "predict"}
    target : class label or None
        ``None`` explains every output, except for binary classifiers where it explains the
        positive class ``classes_[1]``. A class label explains that class only.
    X_probe : array-like of shape (n, n_features), n >= 1
        Rows used once to discover the output width of regressors.
    template, batch_size : see :class:`ModelFunction`.

    Returns
    -------
    ModelFunction
    """
    method = resolve_response_method(model, response_method)
    classes = getattr(model, "classes_", None) if is_classifier(model) else None
    if classes is not None and method in ("predict_proba", "decision_function"):
        classes = list(np.asarray(classes).tolist())
        n_classes = len(classes)
        quantity = "proba" if method == "predict_proba" else "margin"
        if method == "decision_function" and n_classes == 2:  # one column, classes[1]'s
            selection = select_outputs(quantity, target, labels=classes[1:],
                                       negative=classes[0])
            fn = ModelFunction.from_selection(model, method, selection, template, batch_size)
            check_output_width(fn, X_probe, 1, "one column for a binary classifier")
            return fn
        selection = select_outputs(quantity, target, labels=classes,
                                   default=[1] if n_classes == 2 else range(n_classes))
        fn = ModelFunction.from_selection(model, method, selection, template, batch_size)
        check_output_width(fn, X_probe, n_classes,
                           f"one column per class of classes_ ({n_classes})")
        return fn
    if target is not None:
        raise ValueError(
            f"target={target!r} can only be used with a classifier's predict_proba or "
            f"decision_function; the model explains {method}."
        )
    probe = ModelFunction(model, method, None, ["y"], template, 1.0, None)
    width = probe_model(model, method, probe.to_model_input(X_probe), X_probe).shape[1]
    selection = select_outputs("predict" if method == "predict" else "margin", None,
                               width=width)
    return ModelFunction.from_selection(model, method, selection, template, batch_size)


def check_output_width(fn, X_probe, expected, what):
    """Raise a ValueError naming the model when its raw output is not ``expected`` wide."""
    out = probe_model(fn.model, fn.method, fn.to_model_input(X_probe), X_probe)
    if out.shape[1] != expected:
        raise ValueError(
            f"The model {model_name(fn.model)}'s {fn.method} returned {out.shape[1]} "
            f"column(s); a classifier's {fn.method} must return {what}.")
