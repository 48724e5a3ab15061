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
    applies it to ``values``, ``base_values`` and ``std`` (explainers build them with an
    output axis, ``(n, P, O)`` and ``(n, O)``), and explainers apply it to the extras
    that carry an output axis last (interaction values, degrees of freedom).

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
    from ``shap.Explanation``.
    """

    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    feature_names: list
    output_names: list
    extras: dict = field(default_factory=dict)
    std: np.ndarray = None
    index: object = None

    def __post_init__(self):
        self.values = np.asarray(self.values, dtype=np.float64)
        self.base_values = np.asarray(self.base_values, dtype=np.float64)
        if self.values.ndim not in (2, 3):
            raise ValueError(f"values must be 2-D or 3-D, got shape {self.values.shape}.")
        if self.values.ndim == 3 and self.values.shape[2] == 1:  # one output: no output axis
            self.values = squeeze_single_output(self.values)
            self.base_values = squeeze_single_output(self.base_values)
            self.std = squeeze_single_output(self.std)
        if self.std is not None:
            self.std = np.asarray(self.std, dtype=np.float64)
            if self.std.shape != self.values.shape:
                raise ValueError(f"std must have the shape of values {self.values.shape}; "
                                 f"got {self.std.shape}.")
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
        """
        output = np.asarray(output, dtype=np.float64).reshape(self.predicted().shape)
        return float(np.max(np.abs(self.predicted() - output))) if output.size else 0.0

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
        r = _positions(rows, len(self), "row")
        cols = _positions(players, self.values.shape[1], "player", list(self.feature_names))
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
            index=None if self.index is None else _row_index(self.index, len(self))[r])

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
        errors = self._std3d()
        return Attribution(
            values=self._values3d()[:, :, k], base_values=self._base2d()[:, k],
            data=self.data, feature_names=list(self.feature_names),
            output_names=[self.output_names[k]], extras=dict(self.extras),
            std=None if errors is None else errors[:, :, k], index=self.index)

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
            :meth:`__getitem__` selects them.
        """
        if isinstance(by, str | int | np.integer):
            j = _positions(by, self.values.shape[1], "player", list(self.feature_names))[0]
            if self.data is None or np.ndim(self.data) != 2:
                raise ValueError("cohorts by a feature need data with one column per feature.")
            labels = np.asarray(self.data)[:, j]
        else:
            labels = np.asarray(by)
            if labels.shape != (len(self),):
                raise ValueError(f"cohorts need one label per row ({len(self)}); "
                                 f"got shape {labels.shape}.")
        try:
            keys = sorted(set(labels.tolist()))
        except TypeError:  # mixed types: order by their text
            keys = sorted(set(labels.tolist()), key=str)
        return {str(k): self[np.flatnonzero(labels == k)] for k in keys}

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
            n_outputs); a single row's explanation (1-D values) becomes one row.

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
            If the values are neither 1-, 2- nor 3-D.
        """
        values = np.asarray(explanation.values, dtype=np.float64)
        data = explanation.data
        error_std = getattr(explanation, "error_std", None)
        if values.ndim == 1:  # one row
            values = values[None, :]
            data = None if data is None else np.asarray(data)[None, :]
            error_std = None if error_std is None else np.asarray(error_std)[None, :]
        if values.ndim not in (2, 3):
            raise ValueError(f"shap values must be 1-, 2- or 3-D; got shape {values.shape}.")
        n, p = values.shape[:2]
        n_out = 1 if values.ndim == 2 else values.shape[2]
        base = explanation.base_values
        base = np.zeros(n) if base is None else np.asarray(base, dtype=np.float64)
        if values.ndim == 2:
            base = np.broadcast_to(base.reshape(-1), (n,)).copy() if base.size in (1, n) \
                else base.reshape(n)
        else:
            base = np.broadcast_to(base.reshape(-1, n_out) if base.size != 1 else base,
                                   (n, n_out)).copy()
        names = explanation.feature_names
        names = [f"x{j}" for j in range(p)] if names is None else [str(v) for v in names]
        outputs = getattr(explanation, "output_names", None)
        if outputs is None or isinstance(outputs, str):
            outputs = ([outputs] if isinstance(outputs, str) and n_out == 1 else
                       ["output"] if n_out == 1 else [f"output{k}" for k in range(n_out)])
        outputs = [str(v) for v in outputs]
        if data is not None:
            data = np.asarray(data)
            if data.ndim == 1:
                data = data[None, :]
        instances = getattr(explanation, "instance_names", None)
        index = None
        if instances is not None and len(instances) == n:
            import pandas as pd

            index = pd.Index(list(instances))
        return cls(values=values, base_values=base, data=data, feature_names=names,
                   output_names=outputs, extras={"source": "shap"},
                   std=None if error_std is None else np.asarray(error_std, dtype=np.float64),
                   index=index)

    # ---- plots (matplotlib) -------------------------------------------------------------

    def plot_waterfall(self, row: int = 0, output: int | str | None = None, max_display: int = 10,
                       ax: Axes | None = None) -> Axes:
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

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.
        """
        import matplotlib.pyplot as plt

        k = self._output_index(output)
        vals = self._values3d()[row, :, k]
        errors = self._std3d()
        errs = None if errors is None else np.nan_to_num(errors[row, :, k])
        base = float(self._base2d()[row, k])
        order = np.argsort(-np.abs(vals))
        shown = order[:max_display]
        rest = vals[order[max_display:]].sum()
        labels = [self._label(j, row) for j in shown]
        contrib = list(vals[shown])
        bars = None if errs is None else list(errs[shown])
        if len(order) > max_display:
            labels.append(f"{len(order) - max_display} other features")
            contrib.append(rest)
            if bars is not None:  # independent errors add in quadrature
                bars.append(float(np.sqrt(np.sum(errs[order[max_display:]] ** 2))))
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 0.45 * len(labels) + 1.5))
        start = base
        for i, (lab, c) in enumerate(zip(labels, contrib)):
            y = len(labels) - 1 - i
            ax.barh(y, c, left=start, color="#d62728" if c > 0 else "#1f77b4")
            if bars is not None and bars[i] > 0:
                ax.errorbar(start + c, y, xerr=1.96 * bars[i], color="black", capsize=3,
                            lw=1)
            ax.text(start + c, y, f" {c:+.3g}", va="center", fontsize=8)
            start += c
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels[::-1])
        ends = np.cumsum([base] + contrib)
        lo, hi = float(ends.min()), float(ends.max())
        pad = 0.25 * (hi - lo) if hi > lo else 1.0
        ax.set_xlim(lo - pad, hi + pad)  # room for the value labels
        ax.axvline(base, color="grey", lw=0.8, ls="--")
        ax.set_xlabel(f"{self.output_names[k]} (base {base:.3g} -> {start:.3g})")
        ax.set_title(f"Row {row}")
        return ax

    def plot_bar(self, output: int | str | None = None, max_display: int = 10,
                 ax: Axes | None = None) -> Axes:
        """Bar chart of the mean ``|value|`` per player over the explained rows.

        With standard errors (``std``), each bar has a +-1.96 standard-error whisker, the
        error of the mean ``|value|`` from the rows' independent errors,
        ``sqrt(sum_rows std**2) / n_rows``.

        Parameters
        ----------
        output : int or str or None, default=None
            The output to plot, by index or name; ``None`` only with one output.
        max_display : int, default=10
            Number of players shown (the largest first).
        ax : matplotlib Axes or None, default=None
            The axes to draw on; ``None`` creates a new figure.

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.
        """
        import matplotlib.pyplot as plt

        k = self._output_index(output)
        imp = np.abs(self._values3d()[:, :, k]).mean(axis=0)
        order = np.argsort(-imp)[:max_display]
        errors = self._std3d()
        xerr = None
        if errors is not None:
            se = np.sqrt(np.sum(np.nan_to_num(errors[:, :, k]) ** 2, axis=0)) / len(self)
            xerr = 1.96 * se[order]
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 0.4 * len(order) + 1.5))
        ax.barh(range(len(order))[::-1], imp[order], color="#1f77b4", xerr=xerr,
                capsize=3 if xerr is not None else 0)
        ax.set_yticks(range(len(order))[::-1])
        ax.set_yticklabels([str(self.feature_names[j]) for j in order])
        ax.set_xlabel(f"mean |attribution| ({self.output_names[k]})")
        return ax

    def plot_beeswarm(self, output: int | str | None = None, max_display: int = 10,
                      ax: Axes | None = None,
                      random_state: int | np.random.Generator | None = 0) -> Axes:
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

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn on.
        """
        import matplotlib.pyplot as plt

        k = self._output_index(output)
        vals = self._values3d()[:, :, k]
        order = np.argsort(-np.abs(vals).mean(axis=0))[:max_display]
        rng = np.random.default_rng(random_state)
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 0.45 * len(order) + 1.5))
        scatter = None
        for pos, j in enumerate(order):
            y = len(order) - 1 - pos
            colour = self._colour_values(j)
            jitter = rng.uniform(-0.3, 0.3, size=vals.shape[0])
            scatter = ax.scatter(vals[:, j], y + jitter, c=colour, cmap="coolwarm", s=8,
                                 vmin=0.0, vmax=1.0)
        ax.set_yticks(range(len(order))[::-1])
        ax.set_yticklabels([str(self.feature_names[j]) for j in order])
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_xlabel(f"attribution ({self.output_names[k]})")
        if scatter is not None:
            plt.colorbar(scatter, ax=ax, label="feature value (low -> high)")
        return ax

    def _label(self, j, row):
        name = str(self.feature_names[j])
        if self.data is not None and self.data.ndim == 2 and self.data.shape[1] == len(
                self.feature_names):
            return f"{name} = {self.data[row, j]}"
        return name

    def _colour_values(self, j):
        n = self.values.shape[0]
        if self.data is None or self.data.ndim != 2 or self.data.shape[1] != len(
                self.feature_names):
            return np.full(n, 0.5)
        col = self.data[:, j]
        try:
            col = col.astype(np.float64)
        except (TypeError, ValueError):
            return np.full(n, 0.5)
        lo, hi = np.nanpercentile(col, [5, 95]) if np.isfinite(col).any() else (0.0, 1.0)
        if hi <= lo:
            return np.full(n, 0.5)
        return np.clip((col - lo) / (hi - lo), 0.0, 1.0)


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
                if not _same(a, b):
                    changes.append(f"{name}: {_fmt(a)} -> {_fmt(b)}")
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

    def __str__(self):
        return self.summary()


def _import_shap():
    """shap, imported on demand: it is an optional dependency."""
    try:
        import shap
    except ImportError as exc:  # pragma: no cover - exercised when shap is missing
        raise ImportError("Attribution.to_shap needs shap: pip install shap (or "
                          "pip install 'sklearn-xai[test]', the extra that includes it)."
                          ) from exc
    return shap


def _positions(key, n, what, names=None):
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


def _same(a, b):
    try:
        if isinstance(a, float | np.floating) or isinstance(b, float | np.floating):
            fa, fb = float(a), float(b)
            return (np.isnan(fa) and np.isnan(fb)) or np.isclose(fa, fb, rtol=1e-12, atol=0)
    except (TypeError, ValueError):
        pass
    return a == b


def _fmt(v):
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
        Standard errors of ``importances`` (0 for exact values).
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
