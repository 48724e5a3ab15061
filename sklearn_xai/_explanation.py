"""Result objects: :class:`Attribution` (feature attributions) and :class:`Counterfactuals`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from numpy.typing import ArrayLike


def squeeze_single_output(array):
    """``array`` without its last (output) axis when that axis holds one output.

    The one place where a single explained output loses its axis: :class:`Attribution`
    applies it to ``values``, ``base_values``, ``std`` and ``std_dof`` (explainers build
    them with an output axis, ``(n, P, O)`` and ``(n, O)``), and explainers apply it to
    the extras that carry an output axis last (interaction values).

    Parameters
    ----------
    array : ndarray or None
        An array whose last axis holds the explained outputs.

    Returns
    -------
    ndarray or None
    """
    if array is None or np.ndim(array) < 2 or np.shape(array)[-1] != 1:
        return array
    return np.asarray(array)[..., 0]


@dataclass
class Attribution:
    """Feature attributions for a set of explained rows.

    Shapes depend only on how many outputs are explained (one, or ``n_outputs > 1``),
    never on the model's library. Every parameter is stored as the attribute of the same
    name.

    Parameters
    ----------
    values : ndarray of shape (n_samples, n_players) or (n_samples, n_players, n_outputs)
        Attribution of each player (a feature, or a feature group) to each explained output.
        2-D exactly when one output is explained: values given with one output on their
        last axis, ``(n_samples, n_players, 1)``, are stored without it (and so are
        ``base_values`` of shape ``(n_samples, 1)`` and ``std``).
    base_values : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        The value every attribution starts from (``v(empty)``: expected output under the
        method's imputation, or the tree's cover-weighted mean).
    data : ndarray of shape (n_samples, n_features)
        The explained rows (object dtype when the input had non-numeric columns).
    feature_names : list of str, length n_players
        Names of the players (group names when features were grouped).
    output_names : list of str, length n_outputs
        What each output is, e.g. ``"proba(>50K)"``, ``"margin(1)"`` or ``"predict"``: the
        same name for the same output in every explainer (see the quickstart).
    extras : dict, default={}
        Method-specific additions (interaction values, cooperators, budgets, ...),
        documented by each explainer.
    std : ndarray of the shape of ``values`` or None, default=None
        Standard error of each value of a sampled estimate, from the estimator's own
        independent units (``values +- 1.96 std`` is a 95 % interval around the value the
        method would give with an unlimited budget); ``None`` for exact methods. A value
        whose error cannot be estimated (fewer than two units) has ``NaN``.
    index : pandas.Index or None, default=None
        The row labels of the explained ``X`` when it was a DataFrame (``explain`` sets
        it), so that :meth:`to_frame` joins back to the input; ``None``: positions.
    std_dof : ndarray of the shape of ``values`` or None, default=None
        The degrees of freedom of ``std`` where it is Student-t widened: ``std`` is the
        standard error times ``t(0.975, std_dof) / z(0.975)``, so that ``values +- 1.96
        std`` is a 95 % Student-t interval (``inf``: the normal interval). ``None``: the
        intervals are normal. Combining rows (:meth:`plot_bar`) divides the factor out and
        widens the combination once.

    Attributes
    ----------
    n_outputs : int
        Number of explained outputs (1 when ``values`` is 2-D).

    Notes
    -----
    ``attribution[rows]`` and ``attribution[rows, players]`` select rows (int, slice,
    boolean mask, integer array) and players (name, list of names, position, slice,
    mask) as a new :class:`Attribution`; :meth:`for_output` keeps one output and
    :meth:`cohorts` splits the rows. :meth:`to_shap` and :meth:`from_shap` convert to and
    from ``shap.Explanation``. The ``plot_*`` methods raise a ``ValueError`` naming the
    rows whose values (or, for the plots that start from them, base values) of the
    plotted output are NaN or infinite.
    """

    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    feature_names: list
    output_names: list
    extras: dict = field(default_factory=dict)
    std: np.ndarray = None
    index: object = None
    std_dof: np.ndarray = None

    def __post_init__(self):
        self.values = np.asarray(self.values, dtype=np.float64)
        self.base_values = np.asarray(self.base_values, dtype=np.float64)
        if self.values.ndim not in (2, 3):
            raise ValueError(f"values must be 2-D or 3-D, got shape {self.values.shape}.")
        if self.values.ndim == 3 and self.values.shape[2] == 1:  # one output: no output axis
            self.values = squeeze_single_output(self.values)
            self.base_values = squeeze_single_output(self.base_values)
            self.std = squeeze_single_output(self.std)
            self.std_dof = squeeze_single_output(self.std_dof)
        if self.std is not None:
            self.std = np.asarray(self.std, dtype=np.float64)
            if self.std.shape != self.values.shape:
                raise ValueError(f"std must have the shape of values {self.values.shape}; "
                                 f"got {self.std.shape}.")
        if self.std_dof is not None:
            self.std_dof = np.asarray(self.std_dof, dtype=np.float64)
            if self.std is None or self.std_dof.shape != self.values.shape:
                raise ValueError("std_dof needs std and must have the shape of values "
                                 f"{self.values.shape}; got {self.std_dof.shape}.")
        if len(self.feature_names) != self.values.shape[1]:
            raise ValueError("feature_names must have one name per column of values.")
        n_out = 1 if self.values.ndim == 2 else self.values.shape[2]
        if len(self.output_names) != n_out:
            raise ValueError("output_names must have one name per explained output.")

    @property
    def n_outputs(self) -> int:
        """Number of explained outputs (1 when ``values`` is 2-D)."""
        return 1 if self.values.ndim == 2 else self.values.shape[2]

    def __len__(self):
        return self.values.shape[0]

    def values_by_output(self) -> np.ndarray:
        """``values`` with an output axis, whatever the number of outputs.

        Returns
        -------
        ndarray of shape (n_samples, n_players, n_outputs)
            ``values`` with the output axis kept (of length 1 for one explained output).
        """
        return self.values if self.values.ndim == 3 else self.values[:, :, None]

    _values3d = values_by_output

    def _base2d(self):
        return self.base_values if self.base_values.ndim == 2 else self.base_values[:, None]

    def predicted(self) -> np.ndarray:
        """``base_values + values.sum(players)``: the output the attributions add up to.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The base value plus the sum of the attributions of every player, per row (and
            output); equals the model's output when the attributions are efficient.
        """
        return self.base_values + self.values.sum(axis=1)

    def additivity_gap(self, output: ArrayLike) -> float:
        """Largest ``|base + sum(values) - output|`` over rows and outputs.

        Parameters
        ----------
        output : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The model's output for the explained rows (in the explained space).

        Returns
        -------
        float
            The largest absolute gap, 0.0 when no row is explained.

        Raises
        ------
        ValueError
            If ``output`` does not have the shape of :meth:`predicted` (``(n_samples,)``
            or ``(n_samples, 1)`` for one output); it was reshaped, so an
            ``(n_outputs, n_samples)`` array compared scrambled rows.
        """
        predicted = self.predicted()
        output = np.asarray(output, dtype=np.float64)
        if output.shape != predicted.shape and not (
                predicted.ndim == 1 and output.shape == (predicted.shape[0], 1)):
            expected = (f"{predicted.shape} or {(predicted.shape[0], 1)}"
                        if predicted.ndim == 1 else f"{predicted.shape}")
            raise ValueError(
                f"output must have the shape {expected} (n_samples, n_outputs) of the "
                f"attributions' predicted(); got shape {output.shape}.")
        output = output.reshape(predicted.shape)
        return float(np.max(np.abs(predicted - output))) if output.size else 0.0

    def check_additivity(self, output: ArrayLike, atol: float = 1e-8) -> None:
        """Raise ``AssertionError`` when the attributions do not add up to ``output``.

        Parameters
        ----------
        output : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The model's output for the explained rows (in the explained space).
        atol : float, default=1e-8
            Largest accepted :meth:`additivity_gap`.

        Raises
        ------
        AssertionError
            If the gap exceeds ``atol``; the message gives the gap.
        """
        gap = self.additivity_gap(output)
        if gap > atol:
            raise AssertionError(f"Attributions are not additive: max gap {gap:.3g} > {atol:g}.")

    def _std3d(self):
        return None if self.std is None else (
            self.std if self.std.ndim == 3 else self.std[:, :, None])

    def _dof3d(self):
        return None if self.std_dof is None else (
            self.std_dof if self.std_dof.ndim == 3 else self.std_dof[:, :, None])

    def to_frame(self, output: int | str | None = None, *, std: bool = False) -> pd.DataFrame:
        """Attributions as a DataFrame, one row per explained row.

        Parameters
        ----------
        output : int or str or None
            With several outputs: ``None`` gives MultiIndex columns (output, feature);
            an index or output name selects one output.
        std : bool, default=False
            Also carry the standard errors: a column ``std(<player>)`` after each player's
            column (NaN for an exact method, whose ``std`` is None).

        Returns
        -------
        pandas.DataFrame of shape (n_samples, n_players) or (n_samples, n_players * n_outputs)
            Twice as many columns with ``std=True``. Indexed like the explained ``X`` when
            it was a DataFrame (``index``), else by position.
        """
        import pandas as pd

        names = [str(n) for n in self.feature_names]
        errors = self._std3d()
        if errors is None:
            errors = np.full(self._values3d().shape, np.nan)

        def block(k):
            if not std:
                return self._values3d()[:, :, k], names
            both = np.stack([self._values3d()[:, :, k], errors[:, :, k]], axis=2)
            cols = [c for n in names for c in (n, f"std({n})")]
            return both.reshape(len(self), -1), cols

        if self.values.ndim == 2 or output is not None:
            k = 0 if self.values.ndim == 2 else self._output_index(output)
            vals, cols = block(k)
            return pd.DataFrame(vals, columns=cols, index=_row_index(self.index, len(self)))
        parts = [block(k) for k in range(self.n_outputs)]
        cols = pd.MultiIndex.from_tuples(
            [(o, c) for o, (_, names_k) in zip(self.output_names, parts) for c in names_k],
            names=["output", "feature"])
        return pd.DataFrame(np.hstack([p[0] for p in parts]), columns=cols,
                            index=_row_index(self.index, len(self)))

    def _output_index(self, output):
        if output is None:
            if self.n_outputs > 1:
                raise ValueError(f"Choose an output among {self.output_names}.")
            return 0
        if isinstance(output, str):
            if output not in self.output_names:
                raise ValueError(f"Unknown output {output!r}; outputs are {self.output_names}.")
            return self.output_names.index(output)
        if not 0 <= int(output) < self.n_outputs:
            raise ValueError(f"output index {output} out of range for {self.n_outputs} outputs.")
        return int(output)

    # ---- slicing ------------------------------------------------------------------------

    def __getitem__(self, key) -> Attribution:
        """Rows and/or players of the attribution, as a new :class:`Attribution`.

        ``attribution[rows]`` selects rows (an int, a slice, a boolean mask or an integer
        array); ``attribution[rows, players]`` also selects players, by name (a str or a
        list of str), by position (an int, a slice, an integer array) or by boolean mask,
        e.g. ``attribution[:, "age"]`` or ``attribution[:, ["age", "sex"]]``. An int keeps
        its axis (a one-row or one-player result: ``values`` stay 2-D or 3-D).

        ``values``, ``base_values``, ``std`` and ``index`` follow the rows; ``data``
        follows the rows, and the players too when its columns are the players (else all
        its columns are kept). ``extras`` is a shallow copy in which every array whose
        first axis has one entry per explained row is cut to the selected rows; all other
        extras (and every extra on a player selection) are kept unchanged, so per-player
        extras still describe all players.

        Parameters
        ----------
        key : int, slice, array-like, or tuple (rows, players)
            The rows, or the rows and the players, to keep.

        Returns
        -------
        Attribution
            The selected rows and players.
        """
        rows, players = (key if isinstance(key, tuple) else (key, slice(None)))
        if isinstance(key, tuple) and len(key) != 2:
            raise IndexError("index an Attribution with [rows] or [rows, players].")
        r = key_positions(rows, len(self), "row")
        cols = key_positions(players, self.values.shape[1], "player", list(self.feature_names))
        data = self.data
        if data is not None and np.ndim(data) == 2:
            data = np.asarray(data)[r]
            if data.shape[1] == self.values.shape[1]:
                data = data[:, cols]
        return Attribution(
            values=self.values[r][:, cols], base_values=self.base_values[r], data=data,
            feature_names=[self.feature_names[j] for j in cols],
            output_names=list(self.output_names), extras=self._rows_extras(r),
            std=None if self.std is None else self.std[r][:, cols],
            index=None if self.index is None else _row_index(self.index, len(self))[r],
            std_dof=None if self.std_dof is None else self.std_dof[r][:, cols])

    def _rows_extras(self, r):
        n = len(self)
        out = {}
        for name, value in self.extras.items():
            if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == n:
                value = value[r]
            out[name] = value
        return out

    def for_output(self, output: int | str) -> Attribution:
        """The attribution of one explained output, without an output axis.

        Parameters
        ----------
        output : int or str
            The output, by position or by name (one of ``output_names``).

        Returns
        -------
        Attribution
            ``values`` of shape (n_samples, n_players), ``base_values`` of shape
            (n_samples,) and ``std`` cut alike; the same rows, players, ``data``,
            ``index`` and ``extras`` (a shallow copy, unchanged: extras with an output axis
            keep every output).
        """
        k = self._output_index(output)
        errors, dof = self._std3d(), self._dof3d()
        return Attribution(
            values=self._values3d()[:, :, k], base_values=self._base2d()[:, k],
            data=self.data, feature_names=list(self.feature_names),
            output_names=[self.output_names[k]], extras=dict(self.extras),
            std=None if errors is None else errors[:, :, k], index=self.index,
            std_dof=None if dof is None else dof[:, :, k])

    def cohorts(self, by: ArrayLike | str | int) -> dict[str, Attribution]:
        """Split the rows into cohorts, one :class:`Attribution` per distinct value.

        Parameters
        ----------
        by : str, int or array-like of shape (n_samples,)
            A feature name or position (the rows are grouped by that column of ``data``),
            or one label (or boolean) per row.

        Returns
        -------
        dict of str to Attribution
            One entry per distinct value, named ``str(value)`` (``"True"``/``"False"``
            for a boolean mask), in sorted order of the values; each holds those rows as
            :meth:`__getitem__` selects them. Missing values (NaN, which is not equal to
            itself) form one cohort, ``"nan"``, after the others, so every row is in
            exactly one cohort.

        Raises
        ------
        ValueError
            If two different labels have the same text (e.g. ``1`` and ``"1"``), or
            ``by`` does not name a feature or hold one label per row.
        """
        if isinstance(by, str | int | np.integer):
            j = key_positions(by, self.values.shape[1], "player", list(self.feature_names))[0]
            if self.data is None or np.ndim(self.data) != 2:
                raise ValueError("cohorts by a feature need data with one column per feature.")
            labels = np.asarray(self.data)[:, j]
        else:
            labels = np.asarray(by)
            if labels.shape != (len(self),):
                raise ValueError(f"cohorts need one label per row ({len(self)}); "
                                 f"got shape {labels.shape}.")
        groups, missing = {}, {}  # value -> rows; missing values (NaN, NaT) by their text
        for i, v in enumerate(labels.tolist()):
            if _is_missing(v):  # NaN != NaN: all of a kind form one cohort, named "nan"
                missing.setdefault(str(v), []).append(i)
            else:
                groups.setdefault(v, []).append(i)
        try:
            keys = sorted(groups)
        except TypeError:  # mixed types: order by their text
            keys = sorted(groups, key=str)
        parts = [(str(k), groups[k]) for k in keys] + sorted(missing.items())
        names = [name for name, _ in parts]
        if len(set(names)) != len(names):
            clash = sorted({name for name in names if names.count(name) > 1})
            raise ValueError(f"cohorts need distinct labels as text; different values "
                             f"read {clash} (e.g. 1 and '1'): convert the labels first.")
        return {name: self[np.asarray(rows, dtype=np.intp)] for name, rows in parts}

    # ---- shap interoperability -----------------------------------------------------------

    def to_shap(self) -> Any:
        """The attribution as a ``shap.Explanation``, for shap's own plots.

        ``values`` (n_samples, n_players) or (n_samples, n_players, n_outputs),
        ``base_values`` (n_samples,) or (n_samples, n_outputs), ``data``,
        ``feature_names`` and ``output_names`` (a str for one output) map to the fields of
        the same name; the
        standard errors ``std`` to ``error_std`` (shap's plots do not draw them), the row
        labels ``index`` to ``instance_names``. ``extras`` are not carried. ``data`` is
        passed only when it has one column per player (grouped players have no single
        feature value).

        Returns
        -------
        shap.Explanation
            The same values, ready for ``shap.plots.waterfall(explanation[0])``,
            ``shap.plots.beeswarm``, ``shap.plots.bar`` or ``shap.plots.scatter``.

        Raises
        ------
        ImportError
            If shap is not installed.
        """
        shap = _import_shap()
        data = self.data
        if data is None or np.ndim(data) != 2 or np.shape(data)[1] != self.values.shape[1]:
            data = None
        else:
            data = np.asarray(data)
            try:
                data = data.astype(np.float64)
            except (TypeError, ValueError):
                pass
        kwargs = {}
        if self.index is not None:
            kwargs["instance_names"] = list(_row_index(self.index, len(self)))
        return shap.Explanation(
            values=self.values.copy(), base_values=self.base_values.copy(), data=data,
            feature_names=[str(n) for n in self.feature_names],
            output_names=(list(self.output_names) if self.n_outputs > 1
                          else str(self.output_names[0])),
            error_std=None if self.std is None else self.std.copy(), **kwargs)

    @classmethod
    def from_shap(cls, explanation: Any) -> Attribution:
        """Wrap one of shap's results so that this package's plots, metrics and checks run.

        Parameters
        ----------
        explanation : shap.Explanation
            A result of shap (``TreeExplainer``, ``KernelExplainer``, ``Permutation``,
            ...): ``values`` of shape (n_samples, n_features) or (n_samples, n_features,
            n_outputs), or a single row's explanation (``explanation[i]``), which
            becomes one row: values of shape (n_features,) with a scalar base value, or
            (n_features, n_outputs) with base values (n_outputs,). 2-D values are a
            batch or one multi-output row; shap's other fields tell which (``data``
            1-D: a row, 2-D: a batch; ``base_values`` of shape (n_samples,) or
            (n_outputs,); the number of ``feature_names``; a list of several
            ``output_names``; a single ``instance_names``).

        Returns
        -------
        Attribution
            ``values``, ``base_values`` (a scalar base value is repeated per row),
            ``data``, ``feature_names`` (``x0``, ``x1``, ... when shap has none),
            ``output_names`` (``output0``, ... when shap has none; ``"output"`` for one
            output), ``std`` from ``error_std``, ``index`` from ``instance_names``, and
            ``extras={"source": "shap"}``. Every other field of shap's result (clustering,
            lower and upper bounds, display data, ...) is dropped.

        Raises
        ------
        ValueError
            If the values are neither 1-, 2- nor 3-D; if 2-D values fit neither a
            batch nor one multi-output row (the fields contradict each other); or if
            ``output_names`` does not name every output. 2-D values that fit both
            (square values, e.g. 3 rows x 3 features or one row's 3 features x 3
            outputs, with nothing else to tell them apart) are a batch, as shap reads
            them: pass a row's ``data`` or slice it as ``explanation[i:i + 1]``.
        """
        values = np.asarray(explanation.values, dtype=np.float64)
        data = explanation.data
        error_std = getattr(explanation, "error_std", None)
        base = explanation.base_values
        names = explanation.feature_names
        outputs = getattr(explanation, "output_names", None)
        instances = getattr(explanation, "instance_names", None)
        one_row = values.ndim == 1 or (values.ndim == 2 and _shap_is_one_row(
            values.shape, data, base, names, outputs, instances))
        if one_row:  # (n_features,) or (n_features, n_outputs): one row of a batch
            values = values[None]
            data = None if data is None else np.asarray(data)[None]
            error_std = None if error_std is None else np.asarray(error_std)[None]
            if instances is not None and np.ndim(instances) == 0:
                instances = [instances]
        if values.ndim not in (2, 3):
            raise ValueError(f"shap values must be 1-, 2- or 3-D; got shape {values.shape}.")
        n, p = values.shape[:2]
        n_out = 1 if values.ndim == 2 else values.shape[2]
        base = np.zeros(n) if base is None else np.asarray(base, dtype=np.float64)
        if values.ndim == 2:
            base = np.broadcast_to(base.reshape(-1), (n,)).copy() if base.size in (1, n) \
                else base.reshape(n)
        else:
            base = np.broadcast_to(base.reshape(-1, n_out) if base.size != 1 else base,
                                   (n, n_out)).copy()
        names = [f"x{j}" for j in range(p)] if names is None else [str(v) for v in names]
        if outputs is None or isinstance(outputs, str):
            outputs = ([outputs] if isinstance(outputs, str) and n_out == 1 else
                       ["output"] if n_out == 1 else [f"output{k}" for k in range(n_out)])
        outputs = [str(v) for v in outputs]
        if len(outputs) != n_out:
            raise ValueError(f"shap's output_names has {len(outputs)} names for {n_out} "
                             f"outputs (values of shape {values.shape}).")
        if data is not None:
            data = np.asarray(data)
            if data.ndim == 1:
                data = data[None, :]
        index = None
        if instances is not None and np.ndim(instances) == 1 and len(instances) == n:
            import pandas as pd

            index = pd.Index(list(instances))
        return cls(values=values, base_values=base, data=data, feature_names=names,
                   output_names=outputs, extras={"source": "shap"},
                   std=None if error_std is None else np.asarray(error_std, dtype=np.float64),
                   index=index)

    # ---- plots (matplotlib; drawn by sklearn_xai._plots) ---------------------------------

    def plot_waterfall(self, row: int = 0, output: int | str | None = None, max_display: int = 10,
                       ax: Axes | None = None, label_width: int | None = 30) -> Axes:
        """Waterfall of one row: from the base value to the output, largest players first.

        With standard errors (``std``), each bar has a +-1.96 standard-error whisker at
        its end.

        Parameters
        ----------
        row : int, default=0
            Position of the explained row in ``values``.
        output : int or str or None, default=None
            The output to plot, by index or name; ``None`` only with one output.
        max_display : int, default=10
            Number of players shown (the largest first); the others are summed into one bar.
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.
        label_width : int or None, default=30
            Tick labels (``"feature = value"``) longer than this many characters are
            wrapped onto two lines of at most ``label_width`` characters, the second one
            ellipsized when text remains, so that long category values do not squeeze the
            plot; ``None`` keeps them whole. The full labels are ``"{name} = {value}"`` of
            ``feature_names`` and ``data``.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.
        """
        from . import _plots

        return _plots.waterfall(self, row, output, max_display, ax, label_width)

    def plot_force(self, row: int = 0, output: int | str | None = None, max_display: int = 10,
                   ax: Axes | None = None, label_width: int | None = 22) -> Axes:
        """Static force plot of one row: the players pushing the output up and down.

        One horizontal band that ends at the row's output ``f(x)``: the positive
        attributions (red) are stacked to its left, the largest nearest ``f(x)``, the
        negative ones (blue) to its right, so the red part pushes the output up from the
        base value (dashed line) and the blue part pushes it down. The ``max_display``
        largest players are drawn and labelled (``"feature = value"`` and the value,
        below the band on up to four staggered label rows); the others are summed into
        one paler segment per sign. Players with a zero attribution are not drawn. With
        standard errors (``std``), each segment has a +-1.96 standard-error whisker at its
        far end.

        Parameters
        ----------
        row : int, default=0
            Position of the explained row in ``values``.
        output : int or str or None, default=None
            The output to plot, by index or name; ``None`` only with one output.
        max_display : int, default=10
            Number of players drawn on their own.
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.
        label_width : int or None, default=22
            Labels (``"feature = value"``) longer than this many characters are cut to
            one line ending in an ellipsis; ``None`` keeps them whole.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.
        """
        from . import _plots

        return _plots.force(self, row, output, max_display, ax, label_width)

    def plot_bar(self, output: int | str | None = None, max_display: int = 10,
                 ax: Axes | None = None, label_width: int | None = 30) -> Axes:
        """Bar chart of the mean ``|value|`` per player over the explained rows.

        With standard errors (``std``), each bar has a +-1.96 standard-error whisker, the
        error of the mean ``|value|`` from the rows' independent errors,
        ``sqrt(sum_rows std**2) / n_rows``; with ``std_dof``, of the rows' standard errors
        without their Student-t widening, the mean widened once by its Welch-Satterthwaite
        degrees of freedom (summing widened ones made the whisker up to 1.6x too wide with
        3 degrees of freedom per row).

        Parameters
        ----------
        output : int or str or None, default=None
            The output to plot, by index or name; ``None`` only with one output.
        max_display : int, default=10
            Number of players shown (the largest first).
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.
        label_width : int or None, default=30
            Player names longer than this are wrapped onto two lines and ellipsized (see
            :meth:`plot_waterfall`); ``None`` keeps them whole.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.
        """
        from . import _plots

        return _plots.bar(self, output, max_display, ax, label_width)

    def plot_beeswarm(self, output: int | str | None = None, max_display: int = 10,
                      ax: Axes | None = None,
                      random_state: int | np.random.Generator | None = 0,
                      label_width: int | None = 30) -> Axes:
        """One row of points per player: attribution on x, coloured by the feature value.

        Parameters
        ----------
        output : int or str or None, default=None
            The output to plot, by index or name; ``None`` only with one output.
        max_display : int, default=10
            Number of players shown (the largest first).
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.
        random_state : int, numpy.random.Generator or None, default=0
            Seeds the vertical jitter of the points.
        label_width : int or None, default=30
            Player names longer than this are wrapped onto two lines and ellipsized (see
            :meth:`plot_waterfall`); ``None`` keeps them whole.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.
        """
        from . import _plots

        return _plots.beeswarm(self, output, max_display, ax, random_state, label_width)

    def plot_dependence(self, feature: int | str, output: int | str | None = None,
                        color: int | str | None = "auto",
                        interactions: Attribution | ArrayLike | None = None,
                        ax: Axes | None = None,
                        random_state: int | np.random.Generator | None = 0,
                        label_width: int | None = 30) -> Axes:
        """Dependence (scatter) plot: a feature's value against its attribution.

        One point per explained row: the feature's value on x (a non-numeric feature:
        one column per category, in sorted order, with a horizontal jitter of +-0.2),
        its attribution on y, coloured by the value of a second feature. With standard
        errors (``std``), each point has a vertical +-1.96 standard-error bar.

        With ``color="auto"`` the second feature is the one that interacts most:

        * with interaction values (``interactions``, or this attribution's own
          ``extras["interactions"]`` when it comes from
          :meth:`~sklearn_xai.TreeShapExplainer.explain_interactions`), the feature
          with the largest mean ``|interaction value|`` with this one over the rows;
        * otherwise a heuristic, the **residual heuristic**: the attribution minus its
          mean per bin of the feature's own value (its distinct values when it has at
          most 10, else 10 quantile bins; categories as they are) is the spread the
          feature's value does not explain, and the chosen feature is the one whose
          values (binned alike) explain the largest share of that spread (one-way
          analysis of variance, adjusted for the number of bins: ``1 - within-bin mean
          square / total mean square``). It is cheap (one pass per feature) and needs no
          interaction values, but it is a correlation, not an interaction effect.

        The colour bar names the chosen feature and how it was chosen
        (``"strongest interaction"``, ``"residual heuristic"`` or ``"colour"`` when
        given).

        Parameters
        ----------
        feature : int or str
            The player to plot, by position or name.
        output : int or str or None, default=None
            The output to plot, by index or name; ``None`` only with one output.
        color : "auto", int, str or None, default="auto"
            The colouring feature: ``"auto"`` (see above), a player's position or name,
            or ``None`` (one colour).
        interactions : Attribution or array-like or None, default=None
            Interaction values to choose the colouring feature with: the result of
            ``explain_interactions`` on the same rows, or an array of shape
            (n_samples, n_players, n_players) or (n_samples, n_players, n_players,
            n_outputs); ``None`` uses ``extras["interactions"]`` when present.
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.
        random_state : int, numpy.random.Generator or None, default=0
            Seeds the horizontal jitter of a non-numeric feature.
        label_width : int or None, default=30
            Longer names are ellipsized (see :meth:`plot_waterfall`).

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.

        Raises
        ------
        ValueError
            If ``data`` does not hold one column per player (no values to plot), or the
            interaction values do not match the rows, players or outputs.
        """
        from . import _plots

        return _plots.dependence(self, feature, output, color, interactions, ax,
                                 random_state, label_width)

    def plot_heatmap(self, output: int | str | None = None, max_display: int = 10,
                     ax: Axes | None = None, label_width: int | None = 30) -> Axes:
        """Heatmap of rows x players, the rows ordered by clustering their attributions.

        One column per explained row and one line per player (the ``max_display`` with
        the largest mean ``|value|``, most important at the top; the others summed into
        a last line), coloured by the attribution (red positive, blue negative, on a
        symmetric scale). The rows are in the leaf order of the dendrogram of Ward's
        hierarchical clustering (``scipy.cluster.hierarchy.linkage(values,
        method="ward")``, then ``leaves_list``) of the attributions of every player, so
        rows explained alike sit together; clustering all rows costs memory quadratic in
        their number (slice the attribution to plot fewer). Above: the output the
        attributions add up to (:meth:`predicted`), row by row; right: the mean
        ``|value|`` per line. With standard errors (``std``), the right-hand bars have
        +-1.96 standard-error whiskers (as in :meth:`plot_bar`) and cells whose
        +-1.96 standard-error interval contains zero are marked with a black dot.

        Parameters
        ----------
        output : int or str or None, default=None
            The output to plot, by index or name; ``None`` only with one output.
        max_display : int, default=10
            Number of players shown on their own.
        ax : matplotlib Axes or None, default=None
            The axes of the heatmap; the output line, bars and colour bar are drawn in
            inset axes around it. ``None`` creates a new figure.
        label_width : int or None, default=30
            Longer names are wrapped and ellipsized (see :meth:`plot_waterfall`).

        Returns
        -------
        matplotlib.axes.Axes
            The axes of the heatmap.
        """
        from . import _plots

        return _plots.heatmap(self, output, max_display, ax, label_width)

    def plot_decision(self, rows: ArrayLike | slice | None = None,
                      output: int | str | None = None, max_display: int = 20,
                      ax: Axes | None = None, label_width: int | None = 30) -> Axes:
        """Decision plot: each row's path from its base value to its output.

        One line per row, from its base value at the bottom to its output at the top,
        moving right or left by each player's attribution; the players are on the
        y-axis, the one with the largest mean ``|value|`` over the plotted rows at the
        top (the last step), the players beyond ``max_display`` summed into the first
        step. Lines are coloured by their output (a legend names the rows and their
        outputs when there are at most 10); with more than 20 rows they are drawn
        translucent. With standard errors (``std``), each step has a horizontal
        +-1.96 standard-error bar (of that step's value) at its end.

        Parameters
        ----------
        rows : int, slice, array-like or None, default=None
            The rows to plot (as in ``attribution[rows]``); ``None``: every row.
        output : int or str or None, default=None
            The output to plot, by index or name; ``None`` only with one output.
        max_display : int, default=20
            Number of players shown on their own.
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.
        label_width : int or None, default=30
            Longer names are wrapped and ellipsized (see :meth:`plot_waterfall`).

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on; each row's line has ``gid`` ``"row <position>"``.
        """
        from . import _plots

        return _plots.decision(self, rows, output, max_display, ax, label_width)

    def plot_interactions(self, output: int | str | None = None, max_display: int = 10,
                          interactions: Attribution | ArrayLike | None = None,
                          ax: Axes | None = None, label_width: int | None = 30) -> Axes:
        """Matrix of the mean ``|interaction value|`` of each pair of players.

        Cell ``(a, b)`` is the mean over the explained rows of ``|Phi_ab|``, the SHAP
        interaction value as :meth:`~sklearn_xai.TreeShapExplainer.explain_interactions`
        stores it (halved: the pair's whole interaction effect is ``Phi_ab + Phi_ba``),
        and the diagonal holds the main effects ``|Phi_aa|``. The players are those whose
        interaction rows were computed (``extras["interaction_features"]``), the
        ``max_display`` with the largest mean ``|value|`` first. TreeSHAP's interaction
        values are exact, so the matrix has no error bars.

        Parameters
        ----------
        output : int or str or None, default=None
            The output to plot, by index or name; ``None`` only with one output.
        max_display : int, default=10
            Number of players shown (cells are annotated with their value up to 12).
        interactions : Attribution or array-like or None, default=None
            The interaction values (see :meth:`plot_dependence`); ``None`` uses
            ``extras["interactions"]``.
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.
        label_width : int or None, default=30
            Longer names are wrapped and ellipsized (see :meth:`plot_waterfall`).

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.

        Raises
        ------
        ValueError
            If there are no interaction values, or they do not match the rows, players
            or outputs.
        """
        from . import _plots

        return _plots.interaction_matrix(self, output, max_display, interactions, ax,
                                         label_width)


@dataclass
class Counterfactuals:
    """Counterfactual rows for a set of queries.

    Every parameter is stored as the attribute of the same name.

    Parameters
    ----------
    queries : DataFrame of shape (n_queries, n_features)
        The explained rows, in the user's feature space and dtypes.
    counterfactuals : DataFrame of shape (n_counterfactuals, n_features + 1)
        All counterfactual rows, in the same columns and dtypes, plus an integer column
        ``query`` (the position of the query in ``queries``). Rows of one query are sorted
        best first.
    predictions : ndarray of shape (n_counterfactuals,) or (n_counterfactuals, n_outputs)
        The model's re-predicted output (probability of the desired class, or score).
    valid : ndarray of bool, shape (n_counterfactuals,)
        Whether each counterfactual reaches the desired outcome (re-checked on the model).
    costs : DataFrame of shape (n_counterfactuals, n_costs)
        Per-row costs (distance, sparsity, plausibility score, ...), method-specific columns.
    found : ndarray of bool, shape (n_queries,)
        Whether at least one valid counterfactual was found for each query.
    desired : ndarray of shape (n_queries,)
        The desired class (or outcome) per query.
    extras : dict, default={}
        Method-specific extras (e.g. P2CE's ``pareto`` flags and pruning counters).
    index : pandas.Index or None, default=None
        The row labels of the explained ``X`` when it was a DataFrame (one per query), so
        that :meth:`to_frame` joins back to the input; ``None``: positions.

    Attributes
    ----------
    n_queries : int
        Number of queries (rows of ``queries``).
    """

    queries: object
    counterfactuals: object
    predictions: np.ndarray
    valid: np.ndarray
    costs: object
    found: np.ndarray
    desired: np.ndarray
    extras: dict = field(default_factory=dict)
    index: object = None

    @property
    def n_queries(self) -> int:
        """Number of queries (rows of ``queries``)."""
        return len(self.queries)

    def to_frame(self) -> pd.DataFrame:
        """All counterfactuals with their query index, validity, prediction and costs.

        Returns
        -------
        pandas.DataFrame of shape (n_counterfactuals, n_features + 3 + n_costs)
            The rows of ``counterfactuals`` (with their ``query`` column: the query's
            position in ``queries``), then a boolean ``valid`` column, the prediction
            (``prediction``, or ``prediction_<k>`` per output) and the columns of
            ``costs``. Each row is indexed by its query's label in the explained ``X``
            when that was a DataFrame (``index``: ``X.loc[frame.index]`` are the
            queries, and a merge on the index puts them side by side), else by position
            among the counterfactuals.
        """
        import pandas as pd

        frame = self.counterfactuals.copy()
        frame["valid"] = np.asarray(self.valid, dtype=bool)
        pred = np.asarray(self.predictions)
        if pred.ndim == 1:
            frame["prediction"] = pred
        else:
            for k in range(pred.shape[1]):
                frame[f"prediction_{k}"] = pred[:, k]
        if self.costs is not None and len(self.costs.columns):
            frame = pd.concat([frame.reset_index(drop=True),
                               self.costs.reset_index(drop=True)], axis=1)
        if self.index is not None:
            labels = _row_index(self.index, self.n_queries)
            frame.index = labels[np.asarray(frame["query"], dtype=np.int64)]
        return frame

    def for_query(self, i: int) -> pd.DataFrame:
        """The counterfactual rows (features only) of query ``i``.

        Parameters
        ----------
        i : int
            Position of the query in ``queries``.

        Returns
        -------
        pandas.DataFrame of shape (n_counterfactuals_i, n_features)
            The query's counterfactuals, best first, without the ``query`` column; no rows
            when none was found.
        """
        mask = np.asarray(self.counterfactuals["query"]) == i
        return self.counterfactuals.loc[mask].drop(columns="query")

    def diff(self, i: int) -> list[list[str]]:
        """Readable changes for query ``i``: one list of ``"feature: a -> b"`` per counterfactual.

        Parameters
        ----------
        i : int
            Position of the query in ``queries``.

        Returns
        -------
        list of list of str
            One list per counterfactual of the query (best first), naming each changed
            feature with its old and new value; an empty list for an unchanged row.
        """
        query = self.queries.iloc[i]
        out = []
        for _, row in self.for_query(i).iterrows():
            changes = []
            for name in self.queries.columns:
                a, b = query[name], row[name]
                if not same_cell(a, b):
                    changes.append(f"{name}: {format_cell(a)} -> {format_cell(b)}")
            out.append(changes)
        return out

    def summary(self) -> str:
        """A multi-line text with each query's counterfactuals as diffs.

        Returns
        -------
        str
            One line per query (its desired outcome, or that none was found) followed by
            one line per counterfactual listing its changes.
        """
        lines = []
        for i in range(self.n_queries):
            if not self.found[i]:
                lines.append(f"query {i}: no counterfactual found")
                continue
            desired = self.desired[i]
            desired = desired.item() if hasattr(desired, "item") else desired
            lines.append(f"query {i}: desired {desired!r}")
            for j, changes in enumerate(self.diff(i)):
                lines.append(f"  cf {j}: " + ("; ".join(changes) if changes else "(no change)"))
        return "\n".join(lines)

    def plot_diff(self, query: int = 0, costs: list[str] | None = None,
                  ax: Axes | None = None, label_width: int | None = 30) -> Axes:
        """Table of one query's counterfactuals: what each one changes.

        One column for the query and one per counterfactual (best first, ``cf 0``,
        ``cf 1``, ...); one line per feature that at least one counterfactual changes (in
        the columns' order), showing the new value where it changes (green: a numeric
        increase, red: a decrease, yellow: another value of a non-numeric feature) and a
        blank where it does not; then the lines ``prediction`` (the largest output for
        several outputs), ``valid`` and the costs. A query without counterfactuals draws
        a one-line note instead.

        Parameters
        ----------
        query : int, default=0
            Position of the query in ``queries``.
        costs : list of str or None, default=None
            Columns of ``costs`` shown; ``None``: the optimised objectives
            (``extras["objectives"]``, P2CE) when present, else every numeric column.
        ax : matplotlib Axes or None, default=None
            The axes to draw on (its frame is hidden); ``None`` creates a new figure.
        label_width : int or None, default=30
            Feature names longer than this are ellipsized (one line); ``None`` keeps
            them whole.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on; ``ax.tables[0]`` is the table.
        """
        from . import _plots

        return _plots.counterfactual_diff(self, query, costs, ax, label_width)

    def plot_parallel_coordinates(self, query: int = 0, features: list[str] | None = None,
                                  costs: list[str] | None = None, ax: Axes | None = None,
                                  label_width: int | None = 30) -> Axes:
        """Parallel coordinates of one query's counterfactuals (e.g. a P2CE front).

        One vertical axis per feature, then one per cost (on a shaded background); each
        counterfactual is a line through its values (coloured in its order, best
        first), the query a dashed black line through its feature values (it has no
        costs). Each axis runs from the smallest value on it (bottom) to the largest
        (top), both written beside it; a non-numeric feature's values are spread evenly
        in the order they first appear (the query's first). Counterfactuals carry no
        standard errors, so there are no error bars.

        Parameters
        ----------
        query : int, default=0
            Position of the query in ``queries``.
        features : list of str or None, default=None
            The feature axes; ``None``: the features some counterfactual of the query
            changes (all features when none does).
        costs : list of str or None, default=None
            The cost axes (see :meth:`plot_diff`); ``[]`` for none.
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.
        label_width : int or None, default=30
            Axis names longer than this are wrapped and ellipsized; ``None`` keeps them
            whole.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on; the lines have ``gid`` ``"query"`` and ``"cf <k>"``.
        """
        from . import _plots

        return _plots.counterfactual_parallel(self, query, features, costs, ax, label_width)

    def __str__(self):
        return self.summary()


def _shap_is_one_row(shape, data, base, names, outputs, instances):
    """Whether 2-D shap values of ``shape`` are one row (n_features, n_outputs), as
    ``explanation[i]`` of a multi-output result gives them, rather than a batch
    (n_samples, n_features) of one output; decided from shap's other fields (a batch,
    shap's own reading, when none tells them apart), raising a ValueError when they fit
    neither layout."""
    a, b = shape
    batch, row = [], []  # why each layout does not fit
    if data is not None and np.ndim(data) in (1, 2):
        d = np.shape(data)
        if len(d) == 1:
            batch.append(f"data is 1-D (shape {d})")
            if d[0] != a:
                row.append(f"the row's data has {d[0]} values for {a} features")
        else:
            row.append(f"data is 2-D (shape {d})")
            if d[0] != a:
                batch.append(f"data has {d[0]} rows for {a} rows of values")
    if base is not None:
        size = np.size(base)
        if size not in (1, a):
            batch.append(f"base_values of shape {np.shape(base)} is neither one value nor "
                         f"one per row ({a})")
        if size != b:
            row.append(f"base_values of shape {np.shape(base)} does not hold one value per "
                       f"output ({b})")
    if names is not None:
        if len(names) != b:
            batch.append(f"{len(names)} feature_names for {b} columns")
        if len(names) != a:
            row.append(f"{len(names)} feature_names for {a} features")
    if outputs is not None:
        count = 1 if isinstance(outputs, str) else len(outputs)
        if count != 1:
            batch.append(f"{count} output_names for the one output of a batch")
        if count != b:
            row.append(f"{count} output_names for {b} outputs")
    if instances is not None and np.ndim(instances) == 0 and a != 1:
        batch.append(f"instance_names is one name ({instances!r})")
    if not batch and not row:
        return False  # nothing tells them apart: shap's own reading of 2-D values, a batch
    if batch and row:
        raise ValueError(
            f"Attribution.from_shap: shap values of shape {shape} fit neither a batch "
            f"(n_samples, n_features), as {'; '.join(batch)}, nor one row (n_features, "
            f"n_outputs), as {'; '.join(row)}.")
    return bool(batch)


def _import_shap():
    """shap, imported on demand: it is an optional dependency."""
    try:
        import shap
    except ImportError as exc:  # pragma: no cover - exercised when shap is missing
        raise ImportError("Attribution.to_shap needs shap: pip install shap (or "
                          "pip install 'sklearn-xai[test]', the extra that includes it)."
                          ) from exc
    return shap


def key_positions(key, n, what, names=None):
    """Integer positions selected by ``key`` along an axis of length ``n``."""
    if isinstance(key, slice):
        return np.arange(n)[key]
    if isinstance(key, str):
        key = [key]
    elif np.isscalar(key) or isinstance(key, np.integer):
        key = [key]
    arr = np.asarray(key)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise IndexError(f"a boolean {what} mask needs {n} entries, got shape {arr.shape}.")
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind in "US" or arr.dtype == object:
        if names is None:
            raise IndexError(f"{what}s cannot be selected by name.")
        out = []
        for v in arr.tolist():
            if isinstance(v, str):
                if v not in names:
                    raise KeyError(f"Unknown {what} {v!r}; known: {names}.")
                out.append(names.index(v))
            else:
                out.append(int(v))
        arr = np.asarray(out, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise IndexError(f"{what}s are selected by int, slice, boolean mask or integer array.")
    arr = arr.astype(np.int64).reshape(-1)
    if arr.size and (arr.max() >= n or arr.min() < -n):
        raise IndexError(f"{what} index out of range for {n} {what}s.")
    return np.where(arr < 0, arr + n, arr)


def _row_index(index, n):
    """``index`` as a pandas Index of ``n`` row labels (``None``: positions)."""
    import pandas as pd

    if index is None:
        return pd.RangeIndex(n)
    index = index if isinstance(index, pd.Index) else pd.Index(index)
    if len(index) != n:
        raise ValueError(f"index has {len(index)} labels for {n} explained rows.")
    return index


def _is_missing(v):
    """Whether ``v`` is a missing value that is not equal to itself (NaN, NaT, pandas.NA)."""
    try:
        return bool(v != v)
    except (TypeError, ValueError):  # pandas.NA: its comparisons are NA
        return True


def same_cell(a, b):
    try:
        if isinstance(a, float | np.floating) or isinstance(b, float | np.floating):
            fa, fb = float(a), float(b)
            return (np.isnan(fa) and np.isnan(fb)) or np.isclose(fa, fb, rtol=1e-12, atol=0)
    except (TypeError, ValueError):
        pass
    return a == b


def format_cell(v):
    if isinstance(v, float | np.floating):
        return f"{float(v):.6g}"
    return str(v)


@dataclass
class GlobalImportance:
    """Global feature importances (e.g. SAGE) with their standard errors.

    Every parameter is stored as the attribute of the same name; fields can also be read
    by name, ``result["std"]``.

    Parameters
    ----------
    importances : ndarray of shape (n_players,)
        Importance of each player (for SAGE: the loss reduction it accounts for; higher is
        more important). Also available as ``values``.
    std : ndarray of shape (n_players,)
        Standard errors of ``importances`` (0 for exact values), Student-t widened by
        their degrees of freedom, so that ``importances +- 1.96 std`` is a 95 % interval
        (KnockoffSAGE: the rows', or the rows' pairs of permutations, number less one).
    feature_names : list of str, length n_players
        Names of the players (group names when features were grouped).
    n_permutations : int, default=0
        Sampling rounds run (0 when computed exactly).
    converged : bool, default=True
        Whether the convergence criterion stopped the sampling.
    loss : str, default=""
        The loss whose reduction is attributed.
    imputation : str, default=""
        How features outside a coalition were filled (``"knockoff"`` or ``"marginal"``).
    extras : dict, default={}
        Method-specific additions, documented by each explainer.

    Attributes
    ----------
    values : ndarray of shape (n_players,)
        The same array as ``importances``.
    """

    importances: np.ndarray
    std: np.ndarray
    feature_names: list
    n_permutations: int = 0
    converged: bool = True
    loss: str = ""
    imputation: str = ""
    extras: dict = field(default_factory=dict)

    @property
    def values(self) -> np.ndarray:
        """The importances, shape (n_players,)."""
        return self.importances

    def __getitem__(self, key):
        """Dictionary-style access to the fields (``result["std"]``)."""
        if key == "values":
            return self.importances
        if key in self.__dataclass_fields__:
            return getattr(self, key)
        raise KeyError(key)

    def to_frame(self) -> pd.DataFrame:
        """Importances and standard errors, sorted by importance.

        Returns
        -------
        pandas.DataFrame of shape (n_players, 2)
            Columns ``importance`` and ``std``, indexed by feature name, most important
            first.
        """
        import pandas as pd

        frame = pd.DataFrame({"importance": self.importances, "std": self.std},
                             index=pd.Index([str(n) for n in self.feature_names],
                                            name="feature"))
        return frame.sort_values("importance", ascending=False)

    def plot_bar(self, max_display: int = 10, ax: Axes | None = None) -> Axes:
        """Horizontal bars of the importances with +-1.96 standard-error whiskers.

        Parameters
        ----------
        max_display : int, default=10
            Number of players shown (the most important first).
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.
        """
        import matplotlib.pyplot as plt

        from ._plots import check_max_display

        check_max_display(max_display, "plot_bar")
        order = np.argsort(-self.importances)[:max_display]
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 0.4 * len(order) + 1.5))
        pos = np.arange(len(order))[::-1]
        ax.barh(pos, self.importances[order], xerr=1.96 * np.nan_to_num(self.std[order]),
                color="#1f77b4")
        ax.set_yticks(pos)
        ax.set_yticklabels([str(self.feature_names[j]) for j in order])
        ax.set_xlabel(f"importance ({self.imputation} imputation, loss {self.loss})")
        return ax
