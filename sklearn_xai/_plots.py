"""Matplotlib drawings of the result objects.

The public entry points are the ``plot_*`` methods of :class:`~sklearn_xai.Attribution`
and :class:`~sklearn_xai.Counterfactuals`, which document each figure; the functions here
take the result object as their first argument. Error bars are +-1.96 standard errors
(``Z95``) wherever the values carry ``std``. A bar of several values (a mean over rows,
the summed other players) combines their errors as independent; with ``std_dof`` each
one's Student-t widening is divided out first and the combination's applied once
(:func:`_sum_se`).
"""

from __future__ import annotations

import textwrap

import numpy as np

from ._explanation import format_cell, key_positions, same_cell
from ._stats import mean_se, t_factor, t_widened

POSITIVE = "#d62728"
NEGATIVE = "#1f77b4"
#: characters per line of a tick label before it is wrapped (two lines, then an ellipsis)
LABEL_WIDTH = 30
#: half-width of a 95 % normal interval, in standard errors
Z95 = 1.96
#: quantile bins of a numeric feature in the residual heuristic of the dependence plot
N_BINS = 10


# ---- shared helpers -----------------------------------------------------------------------


def shorten(text, width=LABEL_WIDTH, lines=2):
    """``text`` wrapped onto at most ``lines`` lines of ``width`` characters.

    When more text remains, the last kept line ends with an ellipsis. ``width=None``
    keeps the text whole.

    Parameters
    ----------
    text : object
        The label (converted with ``str``).
    width : int or None, default=LABEL_WIDTH
        Characters per line.
    lines : int, default=2
        Lines kept.

    Returns
    -------
    str
    """
    text = str(text)
    if width is None or len(text) <= width:
        return text
    if width < 2:
        raise ValueError(f"label_width must be at least 2 characters, got {width}.")
    parts = textwrap.wrap(text, width, break_on_hyphens=False) or [text[:width]]
    if len(parts) > lines:
        parts = parts[:lines]
        parts[-1] = parts[-1][:width - 1].rstrip() + "\u2026"
    return "\n".join(parts)


def _axes(ax, size):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=size)
    return ax


def _tidy(ax, own):
    """``ax``, its figure laid out tightly (labels, colour bars and inset axes inside the
    figure) when this module created it; a caller's axes are left as they were given."""
    if own:
        ax.figure.tight_layout()
    return ax


def check_max_display(max_display, plot):
    """``max_display``: a positive int (the number of players shown), or None (all)."""
    if max_display is None:
        return
    if (isinstance(max_display, (bool, np.bool_))
            or not isinstance(max_display, (int, np.integer)) or max_display < 1):
        raise ValueError(f"{plot}: max_display must be a positive int (the number of "
                         f"players shown); got {max_display!r}.")


def _output(att, output):
    """(k, values (n, P), std (n, P) or None, base (n,)) of one output
    (:meth:`Attribution.for_output`'s)."""
    k = att._output_index(output)
    one = att.for_output(k)
    return k, one.values, one.std, one.base_values


def _require_finite(att, k, plot, vals, base=None, rows=None):
    """Raise a ValueError naming the rows (positions among ``rows``, or all) of output
    ``k`` whose values ``vals`` (n, P) or base values ``base`` (n,) are NaN or infinite:
    an axis cannot be scaled to them, nor rows clustered, and leaving them out silently
    would misdraw sums and means."""
    rows = np.arange(len(vals)) if rows is None else np.asarray(rows)
    bad_values = ~np.isfinite(vals).all(axis=1)
    bad_base = np.zeros(len(vals), bool) if base is None else ~np.isfinite(base)
    if not (bad_values.any() or bad_base.any()):
        return
    parts = []
    for bad, what in ((bad_values, "values"), (bad_base, "base values")):
        if bad.any():
            where = rows[bad].tolist()
            listed = ", ".join(str(r) for r in where[:10])
            more = f" and {len(where) - 10} more" if len(where) > 10 else ""
            parts.append(f"{what} in row{'s' if len(where) > 1 else ''} {listed}{more}")
    players = np.flatnonzero(~np.isfinite(vals).all(axis=0))
    named = ", ".join(repr(str(att.feature_names[j])) for j in players[:10])
    more = f" and {len(players) - 10} more" if len(players) > 10 else ""
    players = f" (players {named}{more})" if len(players) else ""
    raise ValueError(
        f"{plot} cannot draw attributions that are not finite: output "
        f"{att.output_names[k]!r} has NaN or infinite {' and '.join(parts)}{players}. "
        "Plot the other rows, e.g. attribution[rows], or replace those values first.")


def _dof(att, k):
    """``std_dof`` (n, P) of output ``k``, or None."""
    dof = att._dof3d()
    return None if dof is None else dof[:, :, k]


def player_data(att):
    """``data`` as a 2-D array with one column per player, or None."""
    data = att.data
    if data is None or np.ndim(data) != 2 or np.shape(data)[1] != len(att.feature_names):
        return None
    return np.asarray(data)


def _numeric(col):
    """``col`` as float64, or None when it is not numeric."""
    try:
        return np.asarray(col, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def _categories(col):
    """(codes, categories) of a non-numeric column; categories in sorted text order."""
    text = np.asarray([str(v) for v in col], dtype=object)
    cats = sorted(set(text.tolist()))
    lookup = {c: i for i, c in enumerate(cats)}
    return np.array([lookup[v] for v in text], dtype=np.float64), cats


def _player(att, feature):
    pos = key_positions(feature, len(att.feature_names), "player", list(att.feature_names))
    if len(pos) != 1:
        raise ValueError(f"name one player, got {feature!r}.")
    return int(pos[0])


def _label(att, j, row, data):
    """``"name = value"`` of player ``j`` in ``row``; ``data`` is :func:`player_data`'s
    (computed once per plot: it converts the whole table)."""
    name = str(att.feature_names[j])
    return name if data is None else f"{name} = {format_cell(data[row, j])}"


def colour_values(att, j, data):
    """Feature ``j``'s values scaled to [0, 1] between its 5th and 95th percentiles.

    0.5 everywhere when the values are not numeric, constant or absent. ``data`` is
    :func:`player_data`'s, computed once per plot.
    """
    n = len(att)
    col = None if data is None else _numeric(data[:, j])
    if col is None or not np.isfinite(col).any():
        return np.full(n, 0.5)
    lo, hi = np.nanpercentile(col, [5, 95])
    if hi <= lo:
        return np.full(n, 0.5)
    return np.clip((col - lo) / (hi - lo), 0.0, 1.0)


def by_importance(vals):
    """Player indices, most important first: by ``|value|`` for one row (P,), by mean
    ``|value|`` over the rows for many (n, P); ties keep the players' order (a stable sort,
    so every plot orders equal players alike)."""
    imp = np.abs(vals) if vals.ndim == 1 else np.abs(vals).mean(axis=0)
    return np.argsort(-imp, kind="stable")


# ---- one row ------------------------------------------------------------------------------


def waterfall(att, row, output, max_display, ax, label_width):
    check_max_display(max_display, "plot_waterfall")
    k, vals, errors, base = _output(att, output)
    pos = range(len(vals))[row]  # the row's position (IndexError when out of range)
    _require_finite(att, k, "plot_waterfall", vals[[pos]], base[[pos]], [pos])
    dof = _dof(att, k)
    vals = vals[row]
    errs = None if errors is None else np.nan_to_num(errors[row])
    base = float(base[row])
    order = by_importance(vals)
    shown = order[:max_display]
    rest = vals[order[max_display:]].sum()
    data = player_data(att)
    labels = [_label(att, j, row, data) for j in shown]
    contrib = list(vals[shown])
    bars = None if errs is None else list(errs[shown])
    if len(order) > max_display:
        labels.append(f"{len(order) - max_display} other features")
        contrib.append(rest)
        if bars is not None:  # independent errors add in quadrature
            rest = order[max_display:]
            bars.append(float(_sum_se(errs[rest], None if dof is None else dof[row, rest],
                                      axis=0)[0]))
    own, ax = ax is None, _axes(ax, (7, 0.45 * len(labels) + 1.5))
    start = base
    for i, c in enumerate(contrib):
        y = len(labels) - 1 - i
        ax.barh(y, c, left=start, color=POSITIVE if c > 0 else NEGATIVE)
        if bars is not None and bars[i] > 0:
            ax.errorbar(start + c, y, xerr=Z95 * bars[i], color="black", capsize=3, lw=1)
        ax.text(start + c, y, f" {c:+.3g} ", va="center", fontsize=8,
                ha="left" if c >= 0 else "right")  # beyond the bar's end
        start += c
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels([shorten(lab, label_width) for lab in labels[::-1]], fontsize=9)
    ends = np.cumsum([base] + contrib)
    lo, hi = float(ends.min()), float(ends.max())
    pad = 0.25 * (hi - lo) if hi > lo else 1.0
    ax.set_xlim(lo - pad, hi + pad)  # room for the value labels
    ax.axvline(base, color="grey", lw=0.8, ls="--")
    ax.set_xlabel(f"{att.output_names[k]} (base {base:.3g} -> {start:.3g})")
    ax.set_title(f"Row {row}")
    return _tidy(ax, own)


def force(att, row, output, max_display, ax, label_width):
    check_max_display(max_display, "plot_force")
    k, vals, errors, base = _output(att, output)
    pos = range(len(vals))[row]  # the row's position (IndexError when out of range)
    _require_finite(att, k, "plot_force", vals[[pos]], base[[pos]], [pos])
    vals = vals[row]
    errs = np.zeros_like(vals) if errors is None else np.nan_to_num(errors[row])
    base = float(base[row])
    out = base + float(vals.sum())
    order = [j for j in by_importance(vals) if vals[j] != 0]
    shown, rest = order[:max_display], order[max_display:]
    # (label, value, standard error, summed others?); per sign, the largest nearest f(x)
    segments = {1: [], -1: []}
    data = player_data(att)
    for j in shown:
        segments[1 if vals[j] > 0 else -1].append(
            (_label(att, j, row, data), float(vals[j]), float(errs[j]), False))
    for sign in (1, -1):
        others = [j for j in rest if np.sign(vals[j]) == sign]
        if others:
            segments[sign].append((f"{len(others)} other features", float(vals[others].sum()),
                                   float(np.sqrt(np.sum(errs[others] ** 2))), True))
    own, ax = ax is None, _axes(ax, (10, 3.6))
    placed = []  # (centre, label, value)
    ends = [base, out]
    for sign, colour in ((1, POSITIVE), (-1, NEGATIVE)):
        cursor = out
        for label, value, err, other in segments[sign]:
            far = cursor - value  # positive pushes come from the left, negative from the right
            left = min(far, cursor)
            ax.barh(0, abs(value), left=left, height=0.36, color=colour, alpha=0.55 if other
                    else 1.0, edgecolor="white", lw=1.5, gid="force-segment")
            if err > 0:
                ax.errorbar(far, 0.26, xerr=Z95 * err, color="black", capsize=3, lw=1)
            placed.append((left + abs(value) / 2, label, value))
            ends.append(far)
            cursor = far
    lo, hi = min(ends), max(ends)
    pad = 0.08 * (hi - lo) if hi > lo else 1.0
    ax.set_xlim(lo - pad, hi + pad)
    levels = _label_levels(ax, [(c, f"{shorten(lab, label_width, 1)}\n{v:+.3g}")
                                for c, lab, v in sorted(placed)])
    for (centre, text), level in levels:
        ax.annotate(text, xy=(centre, -0.19), xytext=(centre, -0.42 - 0.45 * level),
                    ha="center", va="top", fontsize=7,
                    arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.6})
    ax.axvline(base, color="grey", lw=0.8, ls="--")
    ax.annotate(f"f(x) = {out:.3g}", xy=(out, 0.2), xytext=(out, 0.62), ha="center",
                fontweight="bold", fontsize=9,
                arrowprops={"arrowstyle": "-", "color": "black", "lw": 0.8})
    ax.text(base, 0.95, f"base value {base:.3g}", ha="center", fontsize=8, color="grey",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    deepest = max((level for _, level in levels), default=0)
    ax.set_ylim(-0.42 - 0.45 * deepest - 0.5, 1.15)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel(f"{att.output_names[k]}: red pushes up, blue pushes down")
    ax.set_title(f"Row {row}")
    return _tidy(ax, own)


def _label_levels(ax, labels, n_levels=4):
    """((centre, text), level) of labels sorted by centre: each on the first of
    ``n_levels`` rows where it does not overlap the previous label (its width estimated
    from the characters of its longest line at 7 pt), else on the least crowded row."""
    fig = ax.figure
    x0, x1 = ax.get_xlim()
    inches = fig.get_figwidth() * ax.get_position().width
    per_char = 0.075 * (x1 - x0) / inches  # data units per character at 7 pt
    right = [-np.inf] * n_levels
    out = []
    for centre, text in labels:
        half = 0.5 * per_char * max(len(line) for line in text.split("\n"))
        free = [lv for lv in range(n_levels) if right[lv] <= centre - half]
        level = free[0] if free else int(np.argmin(right))
        right[level] = centre + half
        out.append(((centre, text), level))
    return out


# ---- many rows ----------------------------------------------------------------------------


def _sum_se(errors, dof, axis):
    """The standard error of the sum over ``axis`` of values with independent errors of
    standard errors ``errors`` (NaN counted as 0), and its degrees of freedom (``None``
    without ``dof``): with their degrees of freedom ``dof`` (Student-t intervals) each
    one's widening is divided out and the sum's Welch-Satterthwaite one applied once,
    else ``sqrt(sum errors**2)``."""
    errors = np.nan_to_num(errors)
    if dof is None:
        return np.sqrt(np.sum(errors**2, axis=axis)), None
    se, df = mean_se(errors / t_factor(dof), dof, axis=axis)
    return t_widened(se * errors.shape[axis], df), df


def _mean_abs_se(errors, dof):
    """The standard error of the mean over rows (axis 0) of values with the standard
    errors ``errors`` (n, P) and degrees of freedom ``dof`` or None (:func:`_sum_se`)."""
    return _sum_se(errors, dof, axis=0)[0] / errors.shape[0]


def bar(att, output, max_display, ax, label_width):
    check_max_display(max_display, "plot_bar")
    k, vals, errors, _ = _output(att, output)
    _require_finite(att, k, "plot_bar", vals)
    imp = np.abs(vals).mean(axis=0)
    order = by_importance(vals)[:max_display]
    xerr = None
    if errors is not None:
        xerr = Z95 * _mean_abs_se(errors, _dof(att, k))[order]
    own, ax = ax is None, _axes(ax, (7, 0.4 * len(order) + 1.5))
    ax.barh(range(len(order))[::-1], imp[order], color=NEGATIVE, xerr=xerr,
            capsize=3 if xerr is not None else 0)
    ax.set_yticks(range(len(order))[::-1])
    ax.set_yticklabels([shorten(att.feature_names[j], label_width) for j in order])
    ax.set_xlabel(f"mean |attribution| ({att.output_names[k]})")
    return _tidy(ax, own)


def beeswarm(att, output, max_display, ax, random_state, label_width):
    check_max_display(max_display, "plot_beeswarm")
    import matplotlib.pyplot as plt

    k, vals, _, _ = _output(att, output)
    _require_finite(att, k, "plot_beeswarm", vals)
    order = by_importance(vals)[:max_display]
    rng = np.random.default_rng(random_state)
    data = player_data(att)
    own, ax = ax is None, _axes(ax, (7, 0.45 * len(order) + 1.5))
    scatter = None
    for pos, j in enumerate(order):
        y = len(order) - 1 - pos
        jitter = rng.uniform(-0.3, 0.3, size=vals.shape[0])
        scatter = ax.scatter(vals[:, j], y + jitter, c=colour_values(att, j, data),
                             cmap="coolwarm", s=8, vmin=0.0, vmax=1.0)
    ax.set_yticks(range(len(order))[::-1])
    ax.set_yticklabels([shorten(att.feature_names[j], label_width) for j in order])
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlabel(f"attribution ({att.output_names[k]})")
    if scatter is not None:
        plt.colorbar(scatter, ax=ax, label="feature value (low -> high)")
    return _tidy(ax, own)


def _bins(col, n_bins=N_BINS):
    """Integer group of each value: its category, its distinct value when there are at
    most ``n_bins``, else its quantile bin; missing values form a group of their own."""
    x = _numeric(col)
    if x is None:
        return _categories(col)[0].astype(np.int64)
    finite = np.isfinite(x)
    codes = np.full(len(x), -1, dtype=np.int64)
    if finite.any():
        distinct = np.unique(x[finite])
        if len(distinct) <= n_bins:
            codes[finite] = np.searchsorted(distinct, x[finite])
        else:
            edges = np.unique(np.quantile(x[finite], np.linspace(0, 1, n_bins + 1)))
            codes[finite] = np.searchsorted(edges[1:-1], x[finite], side="right")
    codes[~finite] = codes.max() + 1
    return codes


def _adjusted_eta2(y, groups):
    """Share of ``y``'s variance explained by its group means, adjusted for the number of
    groups (one-way ANOVA; 1 - within-group mean square / total mean square)."""
    n = len(y)
    _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    n_groups = len(counts)
    total = float(np.sum((y - y.mean()) ** 2))
    if n - n_groups <= 0 or total <= 0:
        return 0.0
    means = np.bincount(inverse, weights=y) / counts
    within = float(np.sum((y - means[inverse]) ** 2))
    return 1.0 - (within / (n - n_groups)) / (total / (n - 1))


def residual_partner(att, j, k):
    """The player whose values best explain the spread of player ``j``'s attribution
    around its mean per bin of ``j``'s own value (largest adjusted eta squared)."""
    data = player_data(att)
    phi = att._values3d()[:, j, k]
    own = _bins(data[:, j])
    _, inverse, counts = np.unique(own, return_inverse=True, return_counts=True)
    resid = phi - (np.bincount(inverse, weights=phi) / counts)[inverse]
    scores = np.full(len(att.feature_names), -np.inf)
    for m in range(len(att.feature_names)):
        if m != j:
            scores[m] = _adjusted_eta2(resid, _bins(data[:, m]))
    return int(np.argmax(scores))


def interaction_block(att, interactions, k):
    """(array (n, S, P), positions of the S interaction rows) of output ``k``, or None.

    ``interactions``: an :class:`Attribution` of ``explain_interactions``, an array of
    shape (n, P, P) or (n, P, P, n_outputs), or None (``att.extras``).
    """
    if interactions is None:
        if "interactions" not in att.extras:
            return None
        arr, rows, players = (att.extras["interactions"],
                              att.extras.get("interaction_features"), att.feature_names)
    elif hasattr(interactions, "extras"):
        if "interactions" not in interactions.extras:
            raise ValueError("interactions has no interaction values (extras['interactions']"
                             "): pass the result of explain_interactions.")
        arr, rows, players = (interactions.extras["interactions"],
                              interactions.extras.get("interaction_features"),
                              interactions.feature_names)
    else:
        arr, rows, players = interactions, None, att.feature_names
    arr = np.asarray(arr, dtype=np.float64)
    names = [str(v) for v in att.feature_names]
    if [str(v) for v in players] != names:
        raise ValueError("the interaction values describe the players "
                         f"{[str(v) for v in players]}, this attribution {names}; use the "
                         "attribution they were computed with (not sliced by players).")
    if arr.ndim in (3, 4) and arr.shape[0] != len(att):
        raise ValueError(f"the interaction values hold {arr.shape[0]} rows, this attribution "
                         f"{len(att)}: pass those of the same rows.")
    if arr.ndim not in (3, 4) or arr.shape[2] != len(names):
        raise ValueError(f"interaction values must have shape ({len(att)}, S, {len(names)}) "
                         f"or ({len(att)}, S, {len(names)}, n_outputs); got {arr.shape} (an "
                         "attribution sliced by players keeps the interaction values of "
                         "every player: plot from the unsliced one).")
    if arr.ndim == 4:
        if arr.shape[3] != att.n_outputs:
            raise ValueError(f"the interaction values have {arr.shape[3]} outputs, this "
                             f"attribution {att.n_outputs}: plot from the attribution of "
                             "every output and choose one with output=.")
        arr = arr[..., k]
    rows = (np.arange(len(names)) if rows is None else
            np.array([names.index(str(r)) for r in rows], dtype=np.int64))
    if arr.shape[1] != len(rows):
        raise ValueError(f"the interaction values have {arr.shape[1]} rows for "
                         f"{len(rows)} interaction features.")
    return arr, rows


def dependence(att, feature, output, color, interactions, ax, random_state, label_width):
    import matplotlib.pyplot as plt

    k, vals, errors, _ = _output(att, output)
    _require_finite(att, k, "plot_dependence", vals)
    j = _player(att, feature)
    data = player_data(att)
    if data is None:
        raise ValueError("plot_dependence needs the explained rows' values: data with one "
                         "column per player (this attribution has none, or grouped players).")
    x = _numeric(data[:, j])
    cats = None
    if x is None:
        x, cats = _categories(data[:, j])
        x = x + np.random.default_rng(random_state).uniform(-0.2, 0.2, len(x))
    y = vals[:, j]
    partner, how = None, ""
    if isinstance(color, str) and color == "auto":
        block = interaction_block(att, interactions, k) if len(att.feature_names) > 1 else None
        if block is not None and j in block[1]:
            strength = np.abs(block[0][:, int(np.flatnonzero(block[1] == j)[0]), :]).mean(0)
            strength[j] = -np.inf
            partner, how = int(np.argmax(strength)), "strongest interaction"
        elif len(att.feature_names) > 1:
            partner, how = residual_partner(att, j, k), "residual heuristic"
    elif color is not None:
        partner, how = _player(att, color), "colour"
    own, ax = ax is None, _axes(ax, (6.5, 4.5))
    if errors is not None:
        ax.errorbar(x, y, yerr=Z95 * np.nan_to_num(errors[:, j]), fmt="none", ecolor="0.65",
                    elinewidth=0.8, zorder=1)
    if partner is None:
        ax.scatter(x, y, s=14, color=NEGATIVE, zorder=2)
    else:
        c = _numeric(data[:, partner])
        pcats = None
        if c is None:
            c, pcats = _categories(data[:, partner])
        if pcats is None:
            cmap = plt.get_cmap("coolwarm")
        else:
            cmap = plt.get_cmap("tab10" if len(pcats) <= 10 else "viridis").resampled(
                max(len(pcats), 2))
        cmap = cmap.with_extremes(bad="0.6")
        finite = c[np.isfinite(c)]
        if pcats is not None:
            lo, hi = -0.5, max(len(pcats), 2) - 0.5
        else:
            lo, hi = np.percentile(finite, [5, 95]) if finite.size else (0.0, 1.0)
        points = ax.scatter(x, y, c=c, cmap=cmap, vmin=lo, vmax=hi if hi > lo else lo + 1,
                            s=14, zorder=2)
        bar = ax.figure.colorbar(points, ax=ax)
        bar.set_label(f"{shorten(att.feature_names[partner], 20, 1)} ({how})", fontsize=8)
        if pcats is not None and len(pcats) <= 12:
            bar.set_ticks(range(len(pcats)))
            bar.set_ticklabels([shorten(c, 18, 1) for c in pcats], fontsize=7)
    if cats is not None:
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels([shorten(c, 18) for c in cats], rotation=30, ha="right",
                           fontsize=8)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel(shorten(att.feature_names[j], label_width, 1))
    ax.set_ylabel(f"attribution of {shorten(att.feature_names[j], label_width, 1)}\n"
                  f"({att.output_names[k]})")
    return _tidy(ax, own)


def cluster_order(values):
    """Row order of the leaves of Ward's hierarchical clustering of ``values``."""
    if len(values) < 3:
        return np.arange(len(values))
    from scipy.cluster.hierarchy import leaves_list, linkage

    return leaves_list(linkage(values, method="ward"))


def _top_players(vals, errors, dof, max_display, names, label_width):
    """(matrix (n, m), std (n, m) or None, their degrees of freedom (n, m) or None,
    labels) of the players with the largest mean |value|, most important first, the
    others summed into a last column (:func:`_sum_se`)."""
    order = by_importance(vals)
    shown, rest = order[:max_display], order[max_display:]
    cols = [vals[:, shown]]
    errs = None if errors is None else [np.nan_to_num(errors[:, shown])]
    dofs = None if errors is None or dof is None else [dof[:, shown]]
    labels = [shorten(names[j], label_width) for j in shown]
    if len(rest):
        cols.append(vals[:, rest].sum(axis=1, keepdims=True))
        if errs is not None:
            se, df = _sum_se(errors[:, rest], None if dof is None else dof[:, rest], axis=1)
            errs.append(se[:, None])
            if dofs is not None:
                dofs.append(df[:, None])
        labels.append(f"{len(rest)} other features")
    return (np.hstack(cols), None if errs is None else np.hstack(errs),
            None if dofs is None else np.hstack(dofs), labels)


def heatmap(att, output, max_display, ax, label_width):
    check_max_display(max_display, "plot_heatmap")
    k, vals, errors, _ = _output(att, output)
    n = len(att)
    if n == 0:
        raise ValueError("plot_heatmap needs at least one explained row.")
    _require_finite(att, k, "plot_heatmap", vals)
    rows = cluster_order(vals)
    dof = _dof(att, k)
    matrix, errs, dofs, labels = _top_players(
        vals[rows], None if errors is None else errors[rows],
        None if dof is None else dof[rows], max_display, att.feature_names, label_width)
    m = matrix.shape[1]
    own, ax = ax is None, _axes(ax, (10, 0.4 * m + 2.5))
    lim = float(np.max(np.abs(matrix))) or 1.0
    image = ax.imshow(matrix.T, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim,
                      interpolation="nearest")
    if errs is not None:  # cells whose 95 % interval contains zero
        cells = np.argwhere(np.abs(matrix) < Z95 * errs)
        ax.scatter(cells[:, 0], cells[:, 1], s=4, color="black", marker=".",
                   gid="heatmap-not-significant")
    ax.set_yticks(range(m))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("explained rows (order: Ward clustering of their attributions)")
    top = ax.inset_axes([0.0, 1.03, 1.0, 0.15], sharex=ax)
    top.plot(np.arange(n), att.predicted()[rows] if att.n_outputs == 1
             else att.predicted()[rows, k], color="black", lw=1)
    top.set_ylabel("output", fontsize=8)
    top.tick_params(labelbottom=False, labelsize=7)
    side = ax.inset_axes([1.02, 0.0, 0.14, 1.0], sharey=ax)
    mean_abs = np.abs(matrix).mean(axis=0)
    xerr = None if errs is None else Z95 * _mean_abs_se(errs, dofs)
    side.barh(range(m), mean_abs, xerr=xerr, color=NEGATIVE,
              capsize=2 if xerr is not None else 0)
    side.tick_params(labelleft=False, labelsize=7)
    side.set_xlabel("mean |value|", fontsize=8)
    cax = ax.inset_axes([1.19, 0.0, 0.02, 1.0])
    ax.figure.colorbar(image, cax=cax, label=f"attribution ({att.output_names[k]})")
    return _tidy(ax, own)


def decision(att, rows, output, max_display, ax, label_width):
    check_max_display(max_display, "plot_decision")
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize

    k, vals, errors, base = _output(att, output)
    sel = np.arange(len(att)) if rows is None else key_positions(rows, len(att), "row")
    if len(sel) == 0:
        raise ValueError("plot_decision needs at least one row.")
    _require_finite(att, k, "plot_decision", vals[sel], base[sel], sel)
    dof = _dof(att, k)
    matrix, errs, _, labels = _top_players(
        vals[sel], None if errors is None else errors[sel],
        None if dof is None else dof[sel], max_display, att.feature_names, label_width)
    steps = matrix[:, ::-1]  # bottom to top: the summed others first, the largest last
    errs = None if errs is None else errs[:, ::-1]
    labels = labels[::-1]
    xs = np.hstack([base[sel, None], base[sel, None] + np.cumsum(steps, axis=1)])
    ys = np.arange(steps.shape[1] + 1)
    outputs = xs[:, -1]
    norm = Normalize(float(outputs.min()), float(outputs.max()) if np.ptp(outputs) > 0
                     else float(outputs.min()) + 1.0)
    cmap = plt.get_cmap("coolwarm")
    alpha = 1.0 if len(sel) <= 20 else max(0.15, 20.0 / len(sel))
    own, ax = ax is None, _axes(ax, (7, 0.4 * len(ys) + 2))
    ax.axvline(float(np.mean(base[sel])), color="grey", lw=0.8, ls="--")
    for i, pos in enumerate(sel):
        colour = cmap(norm(outputs[i]))
        ax.plot(xs[i], ys, color=colour, lw=1.2, alpha=alpha, gid=f"row {pos}",
                label=f"row {pos}: {outputs[i]:.3g}")
        if errs is not None and np.any(errs[i] > 0):
            ax.errorbar(xs[i, 1:], ys[1:], xerr=Z95 * errs[i], fmt="none", ecolor=colour,
                        elinewidth=0.7, capsize=2, alpha=alpha)
    ax.set_yticks(ys)
    ax.set_yticklabels(["base value"] + labels, fontsize=8)
    ax.set_ylim(-0.3, ys[-1] + 0.3)
    ax.grid(axis="y", color="0.9", lw=0.6)
    ax.set_xlabel(f"{att.output_names[k]}: base value -> output (each line a row)")
    if len(sel) <= 10:
        ax.legend(fontsize=7, loc="best", title="output", title_fontsize=7)
    if len(sel) > 1:
        from matplotlib.cm import ScalarMappable

        ax.figure.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="output")
    return _tidy(ax, own)


def interaction_matrix(att, output, max_display, interactions, ax, label_width):
    check_max_display(max_display, "plot_interactions")
    k, vals, _, _ = _output(att, output)
    _require_finite(att, k, "plot_interactions", vals)
    block = interaction_block(att, interactions, k)
    if block is None:
        raise ValueError("plot_interactions needs interaction values: use the result of "
                         "TreeShapExplainer.explain_interactions, or pass interactions=.")
    arr, players = block
    strength = np.abs(arr).mean(axis=0)[:, players]  # (S, S): rows and columns alike
    keep = by_importance(vals[:, players])[:max_display]
    matrix = strength[np.ix_(keep, keep)]
    names = [shorten(att.feature_names[players[s]], label_width) for s in keep]
    m = len(keep)
    own, ax = ax is None, _axes(ax, (0.55 * m + 3, 0.5 * m + 2))
    image = ax.imshow(matrix, cmap="Reds", vmin=0.0, interpolation="nearest")
    top = float(matrix.max()) if matrix.size else 0.0
    if m <= 12:
        for a in range(m):
            for b in range(m):
                ax.text(b, a, f"{matrix[a, b]:.2g}", ha="center", va="center", fontsize=7,
                        color="white" if matrix[a, b] > 0.6 * top else "black")
    ax.set_xticks(range(m))
    ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(m))
    ax.set_yticklabels(names, fontsize=8)
    ax.figure.colorbar(image, ax=ax, label="mean |interaction value|")
    ax.set_title(f"SHAP interaction values ({att.output_names[k]}); main effects on the "
                 "diagonal", fontsize=9)
    return _tidy(ax, own)


# ---- counterfactuals ----------------------------------------------------------------------


def _query_rows(cf, query):
    if not 0 <= int(query) < cf.n_queries:
        raise ValueError(f"query {query} out of range for {cf.n_queries} queries.")
    return cf.queries.iloc[int(query)], cf.for_query(int(query))


def _changed(q, rows, columns):
    return [c for c in columns if any(not same_cell(q[c], r[c]) for _, r in rows.iterrows())]


def _none_found(ax, query):
    ax = _axes(ax, (6, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, f"query {query}: no counterfactual found", ha="center", va="center")
    return ax


#: cell colours of the diff table
DIFF_COLOURS = {"up": "#d4edda", "down": "#f8d7da", "changed": "#fff3cd", "same": "white",
                "query": "#eeeeee", "outcome": "#e8eef7"}


def _cost_columns(cf, costs):
    frame = cf.costs
    if frame is None or not len(frame.columns):
        return []
    if costs is not None:
        missing = [c for c in costs if c not in frame.columns]
        if missing:
            raise ValueError(f"unknown cost columns {missing}; known: {list(frame.columns)}.")
        return list(costs)
    wanted = cf.extras.get("objectives")
    if wanted:
        return [c for c in wanted if c in frame.columns]
    return [c for c in frame.columns
            if frame[c].dtype.kind in "iuf"]


def counterfactual_diff(cf, query, costs, ax, label_width):
    q, rows = _query_rows(cf, query)
    if not len(rows):
        return _none_found(ax, query)
    mask = np.asarray(cf.counterfactuals["query"]) == int(query)
    changed = _changed(q, rows, list(cf.queries.columns))
    text, colours = [], []
    for name in changed:
        line, tint = [format_cell(q[name])], [DIFF_COLOURS["query"]]
        for _, r in rows.iterrows():
            if same_cell(q[name], r[name]):
                line.append("")
                tint.append(DIFF_COLOURS["same"])
                continue
            line.append(format_cell(r[name]))
            a, b = _numeric([q[name]]), _numeric([r[name]])
            tint.append(DIFF_COLOURS["changed"] if a is None or b is None else
                        DIFF_COLOURS["up"] if b[0] > a[0] else DIFF_COLOURS["down"])
        text.append(line)
        colours.append(tint)
    labels = [shorten(c, label_width, 1) for c in changed]
    pred = np.asarray(cf.predictions)[mask]
    pred = pred if pred.ndim == 1 else pred.max(axis=1)
    extra = [("prediction", pred), ("valid", np.asarray(cf.valid, dtype=bool)[mask])]
    extra += [(c, np.asarray(cf.costs[c])[mask]) for c in _cost_columns(cf, costs)]
    for name, column in extra:
        text.append([""] + [str(bool(v)) if isinstance(v, np.bool_ | bool) else
                            _short_number(v) if isinstance(v, float | np.floating) else
                            format_cell(v) for v in column])
        colours.append([DIFF_COLOURS["query"]] + [DIFF_COLOURS["outcome"]] * len(column))
        labels.append(name)
    header = ["query"] + [f"cf {j}" for j in range(len(rows))]
    own, ax = ax is None, _axes(ax, (1.2 * len(header) + 2.5, 0.3 * len(text) + 1.2))
    ax.axis("off")
    table = ax.table(cellText=text, cellColours=colours, rowLabels=labels,
                     colLabels=header, loc="center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.scale(1.0, 1.3)
    ax.set_title(f"query {query}: changed features (blank: unchanged), then outcome and "
                 "costs", fontsize=9)
    return _tidy(ax, own)


def _scaled(column):
    """(values in [0, 1], tick positions, tick labels) of one parallel axis."""
    x = _numeric(column)
    if x is None:
        seen = list(dict.fromkeys(str(v) for v in column))
        codes = np.array([seen.index(str(v)) for v in column], dtype=np.float64)
        span = max(len(seen) - 1, 1)
        return (codes / span if len(seen) > 1 else np.full(len(codes), 0.5),
                list(np.arange(len(seen)) / span) if len(seen) > 1 else [0.5], seen)
    finite = x[np.isfinite(x)]
    if not finite.size:
        return np.full(len(x), np.nan), [], []
    lo, hi = float(finite.min()), float(finite.max())
    if hi <= lo:
        return np.where(np.isfinite(x), 0.5, np.nan), [0.5], [_short_number(lo)]
    return (x - lo) / (hi - lo), [0.0, 1.0], [_short_number(lo), _short_number(hi)]


def _short_number(v):
    """A whole number as it is, any other with four significant digits."""
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else f"{v:.4g}"


def counterfactual_parallel(cf, query, features, costs, ax, label_width):
    import matplotlib.pyplot as plt

    q, rows = _query_rows(cf, query)
    if not len(rows):
        return _none_found(ax, query)
    columns = list(cf.queries.columns)
    if features is None:
        features = _changed(q, rows, columns) or columns
    else:
        features = list(features)
        missing = [f for f in features if f not in columns]
        if missing:
            raise ValueError(f"unknown features {missing}; known: {columns}.")
    mask = np.asarray(cf.counterfactuals["query"]) == int(query)
    cost_names = _cost_columns(cf, costs)
    axes = [(f, [q[f]] + list(rows[f])) for f in features]
    axes += [(c, [np.nan] + list(np.asarray(cf.costs[c], dtype=np.float64)[mask]))
             for c in cost_names]
    n_axes, n_cf = len(axes), len(rows)
    ys = np.empty((n_cf + 1, n_axes))
    own, ax = ax is None, _axes(ax, (1.3 * n_axes + 2.5, 4.5))
    for a, (name, column) in enumerate(axes):
        ys[:, a], ticks, tick_labels = _scaled(np.asarray(column, dtype=object))
        ax.plot([a, a], [0, 1], color="0.7", lw=1, zorder=1, gid="parallel-axis")
        for t, lab in zip(ticks, tick_labels):
            ax.text(a + 0.07, t, shorten(lab, 14, 1), fontsize=7, va="center", color="0.25",
                    zorder=4, bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.75,
                                    "pad": 0.5})
    cmap = plt.get_cmap("viridis")
    for i in range(n_cf):
        ax.plot(range(n_axes), ys[i + 1], marker="o", ms=4, lw=1.4, zorder=2,
                color=cmap(i / max(n_cf - 1, 1)), label=f"cf {i}", gid=f"cf {i}")
    ax.plot(range(n_axes), ys[0], color="black", ls="--", lw=2, marker="s", ms=5, zorder=3,
            label="query", gid="query")
    if cost_names:
        ax.axvspan(len(features) - 0.5, n_axes - 0.5, color="0.95", zorder=0)
    ax.set_xticks(range(n_axes))
    ax.set_xticklabels([shorten(name, label_width) for name, _ in axes], rotation=20,
                       ha="right", fontsize=8)
    ax.set_yticks([])
    ax.set_ylim(-0.08, 1.08)
    ax.set_xlim(-0.3, n_axes - 0.4)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    if n_cf <= 10:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(f"query {query}: features (each axis min to max), then costs (shaded)",
                 fontsize=9)
    return _tidy(ax, own)
