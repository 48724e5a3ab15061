"""Explanations across refits: the explanation counterpart of ``cross_validate``.

:func:`cross_explain` refits an explainer's model on each training fold of a
cross-validation splitter (or on bootstrap resamples), explains the same rows with each
refit, and returns a :class:`CrossExplanation`: the mean attribution over the refits with
its standard error split into the estimator's own sampling error and the spread across
refits, plus how stable each row's top features and signs are.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ._stats import t_factor

if TYPE_CHECKING:
    from typing import Any

    import pandas as pd
    from numpy.typing import ArrayLike

__all__ = ["CrossExplanation", "cross_explain"]


@dataclass
class CrossExplanation:
    """Attributions (or global importances) of one explainer refitted ``R`` times.

    Every parameter is stored as the attribute of the same name. ``R`` is the number of
    refits (folds or bootstrap resamples); the value shape is ``(n_samples, n_players)``
    or ``(n_samples, n_players, n_outputs)`` for attribution explainers, ``(n_players,)``
    or ``(n_players, n_outputs)`` for global importances.

    Parameters
    ----------
    values : ndarray of the value shape
        Mean over the refits, ``per_refit.mean(axis=0)``.
    std_sampling : ndarray of the value shape
        The estimator's own sampling error of ``values``: with ``s_r`` the ``std`` of
        refit ``r``'s result (0 where the result has none, i.e. an exact explainer; its
        Student-t widening divided out where the result has ``std_dof``),
        ``sqrt(mean_r(s_r**2) / R)``, the standard error of a mean of ``R`` independent
        estimates.
    std_refit : ndarray of the value shape
        The spread across refits as the standard error of the mean:
        ``per_refit.std(axis=0, ddof=1) / sqrt(R)`` (``NaN`` when ``R == 1``). The
        spread of one refit's values (e.g. the bootstrap standard deviation of a single
        fit) is ``std_refit * sqrt(R)``. It contains the sampling error too: refits are
        explained with the same per-row random draws, so for a sampled explainer it also
        reflects how the draws interact with each refit's model.
    top_k_share : ndarray of the value shape
        For each row (and output) and player, the share of refits in which the player is
        among the row's top ``k`` by ``|value|``: fewer than ``k`` players of that row
        have a strictly larger ``|value|`` in that refit (ties are all counted in).
    sign_agreement : ndarray of the value shape
        Share of refits with ``sign(per_refit) == sign(values)``.
    per_refit : ndarray of shape (R,) + the value shape
        Each refit's values.
    feature_names : list of str, length n_players
        Names of the players.
    output_names : list of str
        Names of the outputs (empty for global importances).
    k : int
        The ``k`` of ``top_k_share`` (at most ``n_players``).
    is_global : bool, default=False
        Whether the values are global importances (no row axis).
    index : pandas.Index or None, default=None
        Row labels of the explained rows when they were a DataFrame.
    extras : dict, default={}
        ``"splits"``: the training indices of each refit; ``"per_refit_std"``: each
        refit's standard error (its ``std`` without the Student-t widening of its
        ``std_dof``; zeros where it had none), of the shape of ``per_refit``.

    Attributes
    ----------
    n_refits : int
        ``R``, the number of refits.
    """

    values: np.ndarray
    std_sampling: np.ndarray
    std_refit: np.ndarray
    top_k_share: np.ndarray
    sign_agreement: np.ndarray
    per_refit: np.ndarray
    feature_names: list
    output_names: list
    k: int
    is_global: bool = False
    index: object = None
    extras: dict = field(default_factory=dict)

    @property
    def n_refits(self) -> int:
        """Number of refits ``R``."""
        return int(self.per_refit.shape[0])

    def to_frame(self) -> pd.DataFrame:
        """One row per (explained row,) player (and output) with every statistic.

        Returns
        -------
        pandas.DataFrame
            Columns ``row`` (local results only: the row label, or position), ``feature``,
            ``output`` (multi-output values only), ``value``, ``std_sampling``,
            ``std_refit``, ``top_k_share`` and ``sign_agreement``.
        """
        import pandas as pd

        shape = self.values.shape
        idx = np.indices(shape).reshape(len(shape), -1)
        columns = {}
        axis = 0
        if not self.is_global:
            labels = (np.asarray(self.index) if self.index is not None
                      else np.arange(shape[0]))
            columns["row"] = labels[idx[0]]
            axis = 1
        columns["feature"] = np.asarray(self.feature_names, dtype=object)[idx[axis]]
        if len(shape) > axis + 1:
            names = list(self.output_names) or [str(o) for o in range(shape[-1])]
            columns["output"] = np.asarray(names, dtype=object)[idx[axis + 1]]
        for name in ("values", "std_sampling", "std_refit", "top_k_share",
                     "sign_agreement"):
            columns["value" if name == "values" else name] = getattr(self, name).ravel()
        return pd.DataFrame(columns)


def _refit_explain(explainer, X, y, train, explain_X, explain_y, pass_y):
    """Clone ``explainer``, fit it on the training rows, explain ``explain_X``."""
    from sklearn.base import clone
    from sklearn.utils import _safe_indexing

    est = clone(explainer)
    est.fit(_safe_indexing(X, train), _safe_indexing(y, train))
    result = est.explain(explain_X, explain_y) if pass_y else est.explain(explain_X)
    values = np.asarray(result.values, dtype=float)
    std = getattr(result, "std", None)
    std = np.zeros_like(values) if std is None else np.asarray(std, dtype=float)
    dof = getattr(result, "std_dof", None)
    if dof is not None:   # the plain standard error, without its Student-t widening
        std = std / t_factor(np.asarray(dof, dtype=float))
    return {
        "values": values,
        "std": np.broadcast_to(std, values.shape),
        "feature_names": list(result.feature_names),
        "output_names": list(getattr(result, "output_names", None) or []),
        "index": getattr(result, "index", None),
        "global": not hasattr(result, "base_values"),
    }


def _refit_name(r, bootstrap):
    return f"refit {r} ({'bootstrap resample' if bootstrap else 'training fold'} {r})"


def _missing_classes(y, train):
    """Classes of a 1-D ``y`` absent from its ``train`` rows (empty for other targets)."""
    from sklearn.utils import _safe_indexing

    y_all = np.asarray(y)
    if y_all.ndim != 1:
        return []
    y_train = np.asarray(_safe_indexing(y, train))
    return [c.item() if isinstance(c, np.generic) else c
            for c in np.setdiff1d(np.unique(y_all), np.unique(y_train))]


def _align_outputs(results, trains, y, bootstrap):
    """Put every refit's outputs in the first refit's order, matched by name, in place.

    Raises a ValueError naming the refit when the refits do not explain the same outputs
    (a classifier refitted on rows without a class has no output for it) or the same
    players, or when their values differ in shape: averaging them position by position
    would mix different outputs.
    """
    first = results[0]
    names0 = first["output_names"]
    for r, res in enumerate(results[1:], start=1):
        if res["feature_names"] != first["feature_names"]:
            raise ValueError(
                f"cross_explain: {_refit_name(r, bootstrap)} explains the players "
                f"{res['feature_names']}, refit 0 explains {first['feature_names']}; "
                "every refit must explain the same players.")
    union = list(dict.fromkeys(o for res in results for o in res["output_names"]))
    lacking = [(r, [o for o in union if o not in res["output_names"]])
               for r, res in enumerate(results)]
    lacking = [(r, missing) for r, missing in lacking if missing]
    if lacking:
        parts = []
        for r, missing in lacking[:3]:
            classes = _missing_classes(y, trains[r])
            part = (f"{_refit_name(r, bootstrap)} explains {results[r]['output_names']} "
                    f"and lacks {missing}")
            if classes:
                part += f" (its training rows miss the classes {classes})"
            parts.append(part)
        more = f" ({len(lacking) - 3} more refits too)" if len(lacking) > 3 else ""
        raise ValueError(
            "cross_explain: the refits explain different outputs, so their attributions "
            "cannot be averaged output by output: " + "; ".join(parts) + more + ". Use "
            "folds whose training rows hold every class (e.g. StratifiedKFold with at "
            "most as many splits as the smallest class has rows), explain one output that "
            "every refit has (the explainer's target), or drop the rarest classes.")
    for res in results[1:]:
        names = res["output_names"]
        if names != names0:   # the same outputs in another order: reorder by name
            pos = [names.index(o) for o in names0]
            res["values"] = res["values"][..., pos]
            res["std"] = res["std"][..., pos]
            res["output_names"] = list(names0)
    for r, res in enumerate(results[1:], start=1):
        if res["values"].shape != first["values"].shape:
            raise ValueError(
                f"cross_explain: {_refit_name(r, bootstrap)} returned values of shape "
                f"{res['values'].shape}, refit 0 of shape {first['values'].shape}; every "
                "refit must explain the same rows, players and outputs.")


def _top_k_share(per_refit, k, player_axis):
    """Share of refits where fewer than ``k`` players have a strictly larger ``|value|``."""
    a = np.abs(per_refit)
    a_i = np.expand_dims(a, player_axis + 1)   # player i
    a_j = np.expand_dims(a, player_axis)       # player j
    larger = (a_j > a_i).sum(axis=player_axis + 1)
    return (larger < k).mean(axis=0)


def cross_explain(explainer: Any, X: ArrayLike | pd.DataFrame, y: ArrayLike, *,
                  groups: ArrayLike | None = None, cv: Any = 5,
                  explain_X: ArrayLike | pd.DataFrame | None = None,
                  explain_y: ArrayLike | None = None, k: int = 3,
                  n_resamples: int | None = None, n_jobs: int | None = None,
                  random_state: int | np.random.RandomState | None = None,
                  ) -> CrossExplanation:
    """Refit an explainer's model on each training fold and explain the same rows.

    The explanation counterpart of :func:`sklearn.model_selection.cross_validate`: the
    explainer is cloned and fitted (refitting a clone of its ``model``) on each training
    fold of ``cv`` (or on each of ``n_resamples`` bootstrap resamples of the rows), and
    every refit explains the same rows ``explain_X`` with the same ``random_state``, so
    with the same per-row random draws. The refits run on joblib; the result is the same
    for any ``n_jobs``.

    Outputs are matched across refits by name (``proba(c)``, ``margin(c)``,
    ``predict[k]``, ...), not by position. A classifier refitted on rows that miss a class
    has no output for that class, and its other outputs may sit at other positions, so
    its attributions cannot be averaged with the other refits': ``cross_explain`` then
    raises a ValueError that names the refit, the outputs it lacks and the classes its
    training rows miss, rather than averaging different classes together or filling in a
    made-up value. Use folds that hold every class (the default stratified folds with
    ``cv`` at most the smallest class count), explain one output that every refit has
    (the explainer's ``target``), or drop the rarest classes; a bootstrap resample
    (``n_resamples``) misses a class of ``m`` rows with probability about ``exp(-m)``.

    Parameters
    ----------
    explainer : explainer
        An unfitted explainer (attribution explainers, or :class:`~sklearn_xai.KnockoffSAGE`
        for global importances) whose ``model`` is an unfitted estimator. A
        :class:`~sklearn.frozen.FrozenEstimator` model is refused: there is nothing to
        refit.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Rows the model and the explainer are fitted on (split into folds).
    y : array-like of shape (n_samples,) or (n_samples, n_targets)
        Targets of ``X`` (required).
    groups : array-like of shape (n_samples,) or None, default=None
        Group labels of the rows, passed to the splitter's ``split`` (e.g.
        :class:`~sklearn.model_selection.GroupKFold`), as in
        :func:`~sklearn.model_selection.cross_validate`. Not accepted with
        ``n_resamples``, whose bootstrap resamples draw rows, not groups.
    cv : int, cross-validation generator or iterable, default=5
        As in :func:`sklearn.model_selection.check_cv` (stratified folds for classifiers
        given an int). Ignored when ``n_resamples`` is given.
    explain_X : array-like or DataFrame or None, default=None
        Rows every refit explains; ``None``: ``X``.
    explain_y : array-like or None, default=None
        Targets of ``explain_X`` for explainers whose ``explain`` takes them (KnockoffSAGE);
        ``None``: ``y`` when ``explain_X`` is ``None``.
    k : int, default=3
        The ``k`` of ``top_k_share`` (clipped to the number of players).
    n_resamples : int or None, default=None
        If given, refit on this many bootstrap resamples (``n_samples`` rows drawn with
        replacement) instead of the folds of ``cv``.
    n_jobs : int or None, default=None
        Refits run in parallel (joblib); ``None``: 1 unless in a joblib context.
    random_state : int, RandomState instance or None, default=None
        Draws the bootstrap resamples and, when the explainer's own ``random_state`` is
        ``None``, one seed set on every refit (so that all refits share their draws).

    Returns
    -------
    CrossExplanation
        Mean values over the refits, their sampling and refit standard errors, the top-k
        and sign stability, and each refit's values.

    Raises
    ------
    ValueError
        If the refits explain different outputs (a refit whose training rows miss a
        class), with the refit, its missing outputs and classes in the message; or if
        ``groups`` is given with ``n_resamples``.
    """
    from joblib import Parallel, delayed
    from sklearn.base import clone, is_classifier
    from sklearn.frozen import FrozenEstimator
    from sklearn.model_selection import check_cv
    from sklearn.utils import check_random_state

    model = getattr(explainer, "model", None)
    if model is None:
        raise ValueError("explainer has no model to refit; pass an explainer with a model.")
    if isinstance(model, FrozenEstimator):
        raise ValueError(
            "The explainer's model is a FrozenEstimator: there is nothing to refit. "
            "Pass the unfitted (or unfrozen) estimator as the explainer's model.")
    if y is None:
        raise ValueError("cross_explain needs y to refit the model on each fold.")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}.")
    if n_resamples is not None and (isinstance(n_resamples, bool)
                                    or not isinstance(n_resamples, (int, np.integer))
                                    or n_resamples < 1):
        raise ValueError(f"n_resamples must be a positive int or None, got {n_resamples!r}.")
    if n_resamples is not None and groups is not None:
        raise ValueError(
            "groups is passed to the cv splitter; with n_resamples the bootstrap draws rows "
            "and would ignore it. Pass groups with a group splitter as cv (e.g. GroupKFold), "
            "or drop groups.")

    rng = check_random_state(random_state)
    n = len(X)
    if n_resamples is not None:
        trains = [rng.randint(0, n, size=n) for _ in range(int(n_resamples))]
    else:
        splitter = check_cv(cv, y, classifier=is_classifier(model))
        trains = [np.asarray(train) for train, _ in splitter.split(X, y, groups)]
    explainer = clone(explainer)
    params = explainer.get_params(deep=False)
    if "random_state" in params and params["random_state"] is None:
        explainer.set_params(random_state=int(rng.randint(np.iinfo(np.int32).max)))

    y_param = inspect.signature(explainer.explain).parameters.get("y")
    # targets are passed to an explain that requires them (KnockoffSAGE)
    pass_y = y_param is not None and y_param.default is inspect.Parameter.empty
    if explain_X is None:
        explain_X = X
        if explain_y is None:
            explain_y = y
    if pass_y and explain_y is None:
        raise ValueError(
            f"{type(explainer).__name__}.explain needs targets: pass explain_y with "
            "explain_X.")

    results = Parallel(n_jobs=n_jobs)(
        delayed(_refit_explain)(explainer, X, y, train, explain_X, explain_y, pass_y)
        for train in trains)

    _align_outputs(results, trains, y, bootstrap=n_resamples is not None)
    per_refit = np.stack([r["values"] for r in results])
    stds = np.stack([r["std"] for r in results])
    R = per_refit.shape[0]
    values = per_refit.mean(axis=0)
    std_sampling = np.sqrt(np.mean(stds ** 2, axis=0) / R)
    if R > 1:
        std_refit = per_refit.std(axis=0, ddof=1) / np.sqrt(R)
    else:
        std_refit = np.full_like(values, np.nan)
    first = results[0]
    is_global = first["global"]
    player_axis = 1 if is_global else 2   # in per_refit
    n_players = per_refit.shape[player_axis]
    k = int(min(k, n_players))
    top_k_share = _top_k_share(per_refit, k, player_axis)
    sign_agreement = (np.sign(per_refit) == np.sign(values)).mean(axis=0)
    return CrossExplanation(
        values=values, std_sampling=std_sampling, std_refit=std_refit,
        top_k_share=top_k_share, sign_agreement=sign_agreement, per_refit=per_refit,
        feature_names=first["feature_names"],
        output_names=[] if is_global else first["output_names"], k=k,
        is_global=is_global, index=None if is_global else first["index"],
        extras={"splits": trains, "per_refit_std": stds})
