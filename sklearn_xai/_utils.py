"""Small shared helpers: optional imports, per-row seeds, row batching and row-wise products."""

import importlib
import numbers
from functools import lru_cache

import numpy as np
from sklearn.utils import check_random_state

_EXTRAS = {
    "torch": "torch",
    "skorch": "torch",
    "xgboost": "gbm",
    "lightgbm": "gbm",
    "catboost": "gbm",
    "dask": "dask",
    "distributed": "dask",
    "faiss": "core (faiss-cpu)",
    "hypothesis": "test",
    "skops": "cli",
}


def import_optional(name):
    """Import an optional dependency or raise an ImportError naming the extra.

    Parameters
    ----------
    name : str
        Module name, e.g. ``"torch"``.

    Returns
    -------
    module
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        extra = _EXTRAS.get(name.split(".")[0], "all")
        raise ImportError(
            f"{name!r} is required for this feature but is not installed; "
            f"install it with `pip install sklearn-xai[{extra}]`."
        ) from exc


def draw_base_seed(random_state):
    """Draw one integer from ``random_state``; per-row seeds derive from it.

    ``None`` gives fresh entropy, an int or ``RandomState`` gives a reproducible draw.
    """
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return _seed_of_int(int(random_state))
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


@lru_cache(maxsize=256)
def _seed_of_int(seed):
    # what check_random_state(seed).randint draws, kept: seeding a RandomState costs
    # about 0.1 ms, once per explain call otherwise
    return int(check_random_state(seed).randint(0, 2**31 - 1))


def keyed_generators(base_seed, row_indices):
    """One independent ``np.random.Generator`` per explained row.

    The generator of row ``i`` depends only on ``base_seed`` and ``i``, so results do
    not depend on how rows are split into batches or workers. The one implementation of
    per-row generators: :func:`sklearn_xai.base.row_generators` (public, for explainers
    written outside the package) is this function applied to a seed drawn from a
    ``random_state`` and to the rows' content keys.

    Parameters
    ----------
    base_seed : int
    row_indices : array-like of int, shape (n_rows,)
        One key per row: its content key (:func:`sklearn_xai._random.row_keys`) or its
        global position in the explained ``X``.

    Returns
    -------
    list of numpy.random.Generator, length n_rows
    """
    return [
        np.random.default_rng(np.random.SeedSequence(entropy=base_seed, spawn_key=(int(i),)))
        for i in row_indices
    ]


def row_matmul(A, B):
    """``A @ B`` with each row's product computed on its own.

    BLAS blocks the rows of one product (in fours or eights, with other kernels for the
    remainder), so a row's round-off in ``A @ B`` depends on how many rows share the call
    and on its position among them; one stacked product per row keeps every row's bits
    its own, whatever rows are explained with it (at 1.4-2x the time of one product).

    Parameters
    ----------
    A : ndarray of shape (n, k)
    B : ndarray of shape (k, m)

    Returns
    -------
    ndarray of shape (n, m)
    """
    return np.matmul(A[:, None, :], B)[:, 0, :]


def batch_slices(n_rows, batch_size):
    """Contiguous slices of at most ``batch_size`` rows covering ``range(n_rows)``."""
    batch_size = max(1, int(batch_size))
    return [slice(start, min(start + batch_size, n_rows)) for start in range(0, n_rows, batch_size)]


def is_frame(X):
    """Whether ``X`` is a pandas DataFrame (or a DataFrame-like: ``iloc`` and ``columns``)."""
    return hasattr(X, "iloc") and hasattr(X, "columns")


def take_rows(X, rows):
    """Row subset of a DataFrame or an array."""
    if hasattr(X, "iloc"):
        return X.iloc[rows]
    return X[rows]


def unwrap_frozen(model):
    """The estimator inside a ``FrozenEstimator`` (any depth), else ``model`` itself.

    Checked by class name, so that it never imports scikit-learn's frozen module.
    """
    while type(model).__name__ == "FrozenEstimator" and hasattr(model, "estimator"):
        model = model.estimator
    return model


def front_estimator(model):
    """The estimator that takes the frame the model is given: the model, or the first step
    of a Pipeline (a ``FrozenEstimator`` unwrapped)."""
    inner = unwrap_frozen(model)
    steps = getattr(inner, "steps", None)
    if isinstance(steps, list) and steps and isinstance(steps[0], tuple):
        inner = unwrap_frozen(steps[0][-1])
    return inner


def is_lightgbm(model):
    """Whether ``model`` (or its Pipeline's first step) is a LightGBM estimator, whose
    feature names are the frame's columns as :func:`lightgbm_feature_name` makes them."""
    return type(front_estimator(model)).__module__.split(".")[0] == "lightgbm"


def booster_feature_names(booster):
    """A raw XGBoost or LightGBM Booster's feature names, or None when it was trained
    without (LightGBM then names them ``Column_0, Column_1, ...``)."""
    if hasattr(booster, "feature_name"):  # LightGBM
        names = list(booster.feature_name())
        return None if names == [f"Column_{j}" for j in range(len(names))] else names
    names = getattr(booster, "feature_names", None)  # XGBoost
    return None if names is None else list(names)


def lightgbm_feature_name(column):
    """The feature name LightGBM gives a DataFrame column: each space becomes ``_`` (the
    only change LightGBM 4 makes; names it cannot keep are refused when it is fitted)."""
    return str(column).replace(" ", "_")
