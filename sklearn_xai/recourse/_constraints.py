"""The constraint vocabulary shared by the recourse explainers, resolved once.

:func:`resolve_constraints` turns the user's ``immutable_features``, ``features_to_vary``,
``feature_ranges`` and ``monotone`` into a :class:`RecourseConstraints`: per-feature masks
and bounds on the encoded columns (the internal space of
:class:`~sklearn_xai.recourse._encoding.TabularEncoder`, where a categorical feature holds
its category code). The vocabulary is documented in the "Constraints" section of the
recourse user guide.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["RecourseConstraints", "resolve_constraints", "feature_positions"]

#: accepted spellings of a monotone direction
_DIRECTIONS = {"increase": 1, "decrease": -1, 1: 1, -1: -1}


@dataclass(frozen=True)
class RecourseConstraints:
    """What a counterfactual may do with each feature (encoded columns).

    Attributes
    ----------
    mutable : ndarray of bool, shape (n_features,)
        False for an immutable feature and for one outside ``features_to_vary``.
    range_low, range_high : ndarray of float, shape (n_features,)
        Bounds of a changed continuous value (``-inf``/``inf`` when free).
    allowed_codes : tuple of (ndarray of bool or None)
        Per categorical feature, which category codes a changed value may take (None: any).
    direction : ndarray of int8, shape (n_features,)
        ``+1``: may only increase, ``-1``: only decrease, ``0``: either.
    """

    mutable: np.ndarray
    range_low: np.ndarray
    range_high: np.ndarray
    allowed_codes: tuple
    direction: np.ndarray

    @classmethod
    def unconstrained(cls, n_features):
        """Every feature free."""
        return cls(np.ones(n_features, dtype=bool), np.full(n_features, -np.inf),
                   np.full(n_features, np.inf), (None,) * n_features,
                   np.zeros(n_features, dtype=np.int8))

    def allowed(self, j, x_j, values, categorical):
        """Which of ``values`` (encoded) feature ``j`` may take when the query has ``x_j``.

        The query's own value is not listed as a change (it is always allowed).
        """
        values = np.asarray(values, dtype=np.float64)
        ok = values != x_j
        if not self.mutable[j]:
            return np.zeros_like(ok)
        if categorical:
            if self.allowed_codes[j] is not None:
                ok &= self.allowed_codes[j][values.astype(np.int64)]
        else:
            ok &= (values >= self.range_low[j]) & (values <= self.range_high[j])
        if self.direction[j] > 0:
            ok &= values > x_j
        elif self.direction[j] < 0:
            ok &= values < x_j
        return ok


def _name(names, j):
    return names[j] if names is not None else f"x{j}"


def _default_names(n_features):
    """The names an explainer fitted without column names reports: ``x0``, ``x1``, ..."""
    return [f"x{j}" for j in range(n_features)]


def feature_positions(spec, names, n_features, what, aliases=None):
    """Column positions of ``spec``: names, indices or a bool mask.

    Parameters
    ----------
    spec : array-like of str, int or bool
        A list (tuple, set, array, Index) of features. A mapping is a TypeError (it is not
        a list of features: ``{0: True, 1: False}`` would otherwise name both keys), and
        so is a single string (not iterated letter by letter).
    names : list of str or None
        The fitted column names (None for an array: then ``x0``, ``x1``, ... name the
        columns, as ``get_feature_names_out`` reports them).
    n_features : int
    what : str
        The parameter's name, for the error messages.
    aliases : list of str or None
        Other names of the columns, by position (the names the explainer reports, when
        they differ from ``names``).

    Returns
    -------
    list of int
    """
    from collections.abc import Mapping

    if isinstance(spec, Mapping):
        raise TypeError(
            f"{what} must be a list of features (names or positions), not a "
            f"{type(spec).__name__} ({spec!r}); pass the features themselves, e.g. "
            f"{[k for k, v in spec.items() if isinstance(v, bool | np.bool_) and v]!r}"
            " for the keys mapped to True.")
    spec = np.asarray(spec, dtype=object).tolist() if isinstance(spec, np.ndarray) else spec
    if isinstance(spec, str | bytes) or not np.iterable(spec):
        raise TypeError(f"{what} must be a list of features (names or positions), got "
                        f"{spec!r}" + (f"; for one feature pass [{spec!r}]."
                                       if isinstance(spec, str) else "."))
    spec = list(spec)
    if spec and all(isinstance(s, bool | np.bool_) for s in spec):
        if len(spec) != n_features:
            raise ValueError(f"{what} as a boolean mask needs {n_features} entries, got "
                             f"{len(spec)}.")
        return [j for j, s in enumerate(spec) if s]
    return [_position(s, names, n_features, what, aliases) for s in spec]


def _position(f, names, n_features, what, aliases=None):
    if isinstance(f, str | np.str_):
        f = str(f)
        if names is not None and f in names:
            return names.index(f)
        reported = aliases if aliases is not None else (
            _default_names(n_features) if names is None else None)
        if reported is not None and f in reported:
            return list(reported).index(f)
        known = names if names is not None else _default_names(n_features)
        also = ("" if aliases is None or list(aliases) == list(known)
                else f" (also {list(aliases)})")
        raise ValueError(f"{what}: unknown feature {f!r}; the features are {known}{also}"
                         " or their positions 0 to " f"{n_features - 1}.")
    if isinstance(f, numbers.Integral) and not isinstance(f, bool | np.bool_):
        if not 0 <= int(f) < n_features:
            raise ValueError(f"{what}: feature index {f} is out of range for {n_features} "
                             "features.")
        return int(f)
    raise ValueError(f"{what}: features are given by name or position; got {f!r}.")


def _categories_of(rng, key, name, categories):
    from collections.abc import Mapping

    if isinstance(rng, Mapping):
        raise TypeError(
            f"feature_ranges[{key!r}]: {name!r} is categorical and takes a list of allowed "
            f"categories, not a {type(rng).__name__} ({rng!r}); list the allowed ones.")
    if isinstance(rng, str | bytes) or not np.iterable(rng):
        raise ValueError(
            f"feature_ranges[{key!r}]: {name!r} is categorical and takes a list of allowed "
            f"categories, got {rng!r}.")
    allowed = np.zeros(len(categories), dtype=bool)
    for v in rng:
        hit = [k for k, c in enumerate(categories) if c == v]
        if not hit:
            raise ValueError(f"feature_ranges[{key!r}]: unknown category {v!r} of {name!r}; "
                             f"the categories are {list(categories)}.")
        allowed[hit[0]] = True
    return allowed


def _bounds_of(rng, key):
    if not (isinstance(rng, tuple | list | np.ndarray) and len(rng) == 2):
        raise ValueError(f"feature_ranges[{key!r}] must be a (low, high) pair for a numeric "
                         f"feature, got {rng!r}.")
    try:
        lo, hi = (default if v is None else float(v)
                  for v, default in zip(rng, (-np.inf, np.inf)))
    except (TypeError, ValueError):
        lo = hi = np.nan
    if np.isnan(lo) or np.isnan(hi):
        raise ValueError(f"feature_ranges[{key!r}] must be a (low, high) pair of numbers or "
                         f"None, got {rng!r}.")
    if lo > hi:
        raise ValueError(f"feature_ranges[{key!r}]: low {lo} > high {hi}.")
    return lo, hi


def resolve_constraints(names, n_features, categorical, categories, ordered, *,
                        immutable_features=None, features_to_vary="all", feature_ranges=None,
                        monotone=None, aliases=None):
    """The user's constraints as a :class:`RecourseConstraints` on the encoded columns.

    Parameters
    ----------
    names : list of str or None
        Fitted column names (None: fitted on an array, whose features are named ``x0``,
        ``x1``, ... or given by position).
    n_features : int
    categorical : ndarray of bool, shape (n_features,)
    categories : list of (ndarray or None)
        Categories of each categorical feature, in code order.
    ordered : ndarray of bool, shape (n_features,)
        Categorical features whose categories have an order (ordered pandas categoricals
        and booleans): they accept ``monotone`` (by code).
    immutable_features, features_to_vary, feature_ranges, monotone
        The explainer's parameters (see the recourse user guide, "Constraints").
    aliases : list of str or None
        The names the explainer reports for the columns (``get_feature_names_out``), also
        accepted when they differ from ``names``.

    Returns
    -------
    RecourseConstraints
    """
    d = n_features
    out = RecourseConstraints.unconstrained(d)
    mutable = out.mutable.copy()
    immutable = set()
    if immutable_features is not None:
        immutable = set(feature_positions(immutable_features, names, d, "immutable_features",
                                          aliases))
        mutable[list(immutable)] = False
    if not (isinstance(features_to_vary, str) and features_to_vary == "all"):
        vary = feature_positions(features_to_vary, names, d, "features_to_vary", aliases)
        both = sorted(immutable.intersection(vary))
        if both:
            raise ValueError(
                f"feature {_name(names, both[0])!r} is both in immutable_features and in "
                "features_to_vary; remove it from one of them.")
        allowed = np.zeros(d, dtype=bool)
        allowed[vary] = True
        mutable &= allowed
    if not mutable.any():
        raise ValueError(
            "No feature may change (features_to_vary and immutable_features leave none), so "
            "no query could ever get a counterfactual; let at least one feature vary.")
    low, high = out.range_low.copy(), out.range_high.copy()
    codes = list(out.allowed_codes)
    _check_once(feature_ranges, names, d, "feature_ranges", aliases)
    _check_once(monotone, names, d, "monotone", aliases)
    for key, rng in (feature_ranges or {}).items():
        j = _position(key, names, d, "feature_ranges", aliases)
        if categorical[j]:
            codes[j] = _categories_of(rng, key, _name(names, j), categories[j])
        else:
            low[j], high[j] = _bounds_of(rng, key)
    direction = out.direction.copy()
    for key, how in (monotone or {}).items():
        j = _position(key, names, d, "monotone", aliases)
        sign = None
        if isinstance(how, str) or (isinstance(how, numbers.Integral)
                                    and not isinstance(how, bool | np.bool_)):
            sign = _DIRECTIONS.get(how if isinstance(how, str) else int(how))
        if sign is None:
            raise ValueError(f"monotone[{key!r}] must be 'increase', 'decrease', +1 or -1, "
                             f"got {how!r}.")
        if categorical[j] and not ordered[j]:
            raise ValueError(
                f"monotone[{key!r}]: feature {_name(names, j)!r} is an unordered categorical "
                "feature, which has no direction; only numeric features, booleans and "
                "ordered pandas categoricals take a monotone constraint.")
        direction[j] = sign
    return RecourseConstraints(mutable, low, high, tuple(codes), direction)


def _check_once(mapping, names, d, what, aliases=None):
    """A feature named twice in ``mapping`` (by name and by index) is a ValueError."""
    seen = {}
    for key in (mapping or {}):
        j = _position(key, names, d, what, aliases)
        if j in seen:
            raise ValueError(
                f"{what} names feature {_name(names, j)!r} twice ({seen[j]!r} and {key!r}); "
                "give it once.")
        seen[j] = key
