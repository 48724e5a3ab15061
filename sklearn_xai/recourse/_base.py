"""The base of the counterfactual explainers: the desired outcome and the constraints."""

from __future__ import annotations

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils._param_validation import StrOptions

from .._model import model_name
from ..base import BaseExplainer, RecourseMixin
from ._constraints import resolve_constraints

__all__ = ["RecourseExplainer"]


def _is_opposite(desired_class):
    return isinstance(desired_class, str) and desired_class == "opposite"


class RecourseExplainer(RecourseMixin, BaseExplainer):
    """Base of the recourse explainers, ``MaceRecourse`` and ``P2CERecourse``.

    It holds the parameters every recourse method shares -- the desired outcome
    (``desired_class``, ``desired_range``) and the constraint vocabulary
    (``categorical_features``, ``immutable_features``, ``features_to_vary``,
    ``feature_ranges``, ``monotone``; see :ref:`recourse-constraints`) -- and resolves
    them in one place: ``_resolve_outcome(model)`` checks the desired outcome against the
    model, ``_resolve_constraints(encoder)`` turns the constraints into per-feature masks
    and bounds on the encoded columns (a frozen ``RecourseConstraints``), and
    ``_desired_positions(pred)`` gives each query's desired classes. Subclasses use
    :meth:`~sklearn_xai.base.BaseExplainer.fit` (no ``fit`` of their own) and implement
    ``_fit(X, y)`` and ``_explain(X)``.
    """

    _parameter_constraints: dict = {
        **BaseExplainer._parameter_constraints,
        "desired_class": "no_validation",
        "desired_range": [None, "array-like"],
        "categorical_features": [StrOptions({"auto"}), None, "array-like"],
        "immutable_features": [None, "array-like"],
        "features_to_vary": [StrOptions({"all"}), "array-like"],
        "feature_ranges": [None, dict],
        "monotone": [None, dict],
    }

    # -- desired outcome --------------------------------------------------------------------

    def _resolve_outcome(self, model):
        """Check ``desired_class`` / ``desired_range`` against ``model``.

        Sets ``desired_range_`` (``(low, high)`` or None) and, for a classifier,
        ``classes_``.
        """
        name = type(self).__name__
        if self.desired_range is not None:
            if hasattr(model, "predict_proba") or is_classifier(model):
                raise ValueError(
                    f"desired_range is for regressors; {model_name(model)} is a classifier: "
                    "use desired_class.")
            if not _is_opposite(self.desired_class):
                raise ValueError(
                    "With desired_range the desired outcome is the range; leave "
                    "desired_class at its default ('opposite').")
            if not hasattr(model, "predict"):
                raise TypeError(f"{model_name(model)} has no predict method.")
            self.desired_range_ = _check_range(self.desired_range)
            return self.desired_range_
        self.desired_range_ = None
        if not hasattr(model, "predict_proba"):
            raise TypeError(
                f"{name} needs a classifier with predict_proba, or a regressor with "
                f"desired_range=(low, high); {model_name(model)} has no predict_proba.")
        classes = np.asarray(getattr(model, "classes_", None))
        if classes.ndim != 1 or classes.size < 2:
            raise ValueError("the model must be a fitted classifier with at least 2 classes_.")
        if not _is_opposite(self.desired_class) and self.desired_class not in classes.tolist():
            raise ValueError(
                f"desired_class={self.desired_class!r} is not one of the model's classes "
                f"{classes.tolist()}; name one of them, or use 'opposite'.")
        self.classes_ = classes
        return None

    def _desired_positions(self, pred, *, skip_predicted=True):
        """Positions in ``classes_`` of each query's desired classes.

        Parameters
        ----------
        pred : array-like of int
            Position of each query's predicted class.
        skip_predicted : bool
            With a named ``desired_class``, give a query already predicted as it no
            desired class (else that class).

        Returns
        -------
        list of list of int
            ``"opposite"``: every class but the predicted one (the other class of a binary
            model).
        """
        n_classes = len(self.classes_)
        if _is_opposite(self.desired_class):
            return [[c for c in range(n_classes) if c != p] for p in pred]
        t = self.classes_.tolist().index(self.desired_class)
        return [[t] if (p != t or not skip_predicted) else [] for p in pred]

    # -- constraints ------------------------------------------------------------------------

    def _resolve_constraints(self, encoder):
        """The constraints on ``encoder``'s columns, set on it and returned."""
        constraints = resolve_constraints(
            encoder.feature_names_in_, encoder.n_features_in_, encoder.categorical_,
            encoder.categories_, encoder.ordered_,
            immutable_features=self.immutable_features,
            features_to_vary=self.features_to_vary, feature_ranges=self.feature_ranges,
            monotone=self.monotone, aliases=self._feature_names())
        encoder.set_constraints(constraints)
        return constraints


def _check_range(rng):
    try:
        lo, hi = (float(v) for v in rng)
    except (TypeError, ValueError):
        raise ValueError(
            f"desired_range must be a pair (low, high) of numbers; got {rng!r}.") from None
    if np.isnan(lo) or np.isnan(hi) or lo > hi:
        raise ValueError(f"desired_range must satisfy low <= high; got {rng!r}.")
    return lo, hi
