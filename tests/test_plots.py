"""The plots of Attribution and Counterfactuals, rendered to real PNG files (Agg).

Each test checks what was drawn against the numbers it should show: the data of the
artists (bar extents, line vertices, image arrays, table cells, error-bar lengths)
against the values computed independently here (numpy, scipy's clustering, TreeSHAP's
own interaction values).
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from sklearn_xai import Attribution, Counterfactuals  # noqa: E402
from sklearn_xai._plots import Z95, residual_partner, shorten  # noqa: E402

LONG = "critical account / other credits existing (not at this bank)"


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def render(ax, path):
    """Save the figure of ``ax`` as a PNG file and check that the file is one."""
    fig = ax.figure
    fig.savefig(path, format="png", dpi=60)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return fig


def whiskers(ax):
    """Half-lengths of the error-bar segments drawn on ``ax`` (x or y, whichever varies)."""
    out = []
    for coll in ax.collections:
        if isinstance(coll, LineCollection):
            for seg in coll.get_segments():
                out.append(float(np.max(np.ptp(seg, axis=0))) / 2)
    return np.sort(out)


def make_att(n=40, p=5, seed=0, std=False):
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(n, p))
    values = rng.normal(size=(n, p)) * np.linspace(2, 0.2, p)
    return Attribution(values, np.full(n, 0.5), data, [f"x{j}" for j in range(p)], ["y"],
                       std=rng.uniform(0.05, 0.3, size=(n, p)) if std else None)


# ---- labels -------------------------------------------------------------------------------


def test_shorten_wraps_then_ellipsizes():
    label = f"credit_history = {LONG}"
    assert shorten(label, 30) == "credit_history = critical\naccount / other credits\u2026"
    assert shorten("age = 49", 30) == "age = 49"
    assert shorten(label, None) == label
    assert shorten(label, 20, 1) == "credit_history =\u2026"
    with pytest.raises(ValueError, match="at least 2"):
        shorten(label, 1)


def test_waterfall_keeps_its_plot_area_with_long_category_labels(tmp_path):
    """A German-credit label of 77 characters once squeezed the bars to a strip."""
    values = np.array([[0.4, -0.6, 0.2, 0.1]])
    data = np.array([[LONG, "< 0 DM", 6, 1169]], dtype=object)
    att = Attribution(values, np.array([1.0]), data,
                      ["credit_history", "checking_status", "duration_months", "amount"],
                      ["margin(1)"])
    fig, ax = plt.subplots(figsize=(5.8, 4.2))
    att.plot_waterfall(0, ax=ax)
    fig.tight_layout()
    render(ax, tmp_path / "waterfall.png")
    labels = [t.get_text() for t in ax.get_yticklabels()]
    # bottom to top: the smallest |value| first
    assert labels[-1] == "checking_status = < 0 DM"
    assert labels[-2] == "credit_history = critical\naccount / other credits\u2026"
    assert all(len(line) <= 30 for lab in labels for line in lab.split("\n"))
    assert ax.get_position().width > 0.4  # the plot keeps most of the figure's width
    whole = att.plot_waterfall(0, label_width=None)
    assert f"credit_history = {LONG}" in [t.get_text() for t in whole.get_yticklabels()]
    # float data are written short
    assert "amount = 1169" in labels


# ---- one row ------------------------------------------------------------------------------


def test_force_plot_stacks_pushes_up_and_down_towards_the_output(tmp_path):
    values = np.array([[0.5, -0.2, 0.3, -0.1, 0.0, 0.05]])
    std = np.array([[0.1, 0.2, 0.0, 0.05, 0.1, 0.3]])
    att = Attribution(values, np.array([2.0]), np.arange(6.0)[None, :],
                      [f"f{j}" for j in range(6)], ["y"], std=std)
    ax = att.plot_force(0, max_display=3)
    render(ax, tmp_path / "force.png")
    out = 2.0 + values.sum()
    segs = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid() ==
            "force-segment"]
    spans = sorted((round(p.get_x(), 12), round(p.get_x() + p.get_width(), 12)) for p in segs)
    # f0 (0.5), f2 (0.3), f1 (-0.2) on their own; f5 (0.05) and f3 (-0.1) each summed
    # into 'other features'; f4 (0) not drawn. Positives end at f(x), negatives start there.
    assert spans == sorted([(round(out - 0.5, 12), round(out, 12)),
                            (round(out - 0.8, 12), round(out - 0.5, 12)),
                            (round(out - 0.85, 12), round(out - 0.8, 12)),
                            (round(out, 12), round(out + 0.2, 12)),
                            (round(out + 0.2, 12), round(out + 0.3, 12))])
    texts = [t.get_text() for t in ax.texts]
    assert f"f(x) = {out:.3g}" in texts and "base value 2" in texts
    assert "f0 = 0\n+0.5" in texts and "1 other features\n+0.05" in texts
    # whiskers: f0, f1 and the two summed segments (f2 has std 0)
    np.testing.assert_allclose(whiskers(ax), np.sort(Z95 * np.array([0.1, 0.2, 0.3, 0.05])))


# ---- dependence ---------------------------------------------------------------------------


def test_dependence_points_error_bars_and_residual_heuristic(tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    data = rng.normal(size=(n, 4))
    # x0's attribution: a function of x0 plus a spread that x2 explains
    values = np.column_stack([np.sin(data[:, 0]) + 0.8 * data[:, 2] * (data[:, 0] > 0),
                              0.1 * rng.normal(size=n), 0.5 * data[:, 2], data[:, 3]])
    std = np.full((n, 4), 0.05)
    att = Attribution(values, np.zeros(n), data, ["a", "b", "c", "d"], ["y"], std=std)
    assert residual_partner(att, 0, 0) == 2
    ax = att.plot_dependence("a")
    render(ax, tmp_path / "dependence.png")
    points = ax.collections[-1].get_offsets()
    np.testing.assert_allclose(points, np.column_stack([data[:, 0], values[:, 0]]))
    np.testing.assert_allclose(whiskers(ax), np.full(n, Z95 * 0.05))
    colour_axis = ax.figure.axes[-1]
    assert colour_axis.get_ylabel() == "c (residual heuristic)"
    assert ax.get_xlabel() == "a"
    plain = att.plot_dependence(1, color=None)
    assert len(plain.figure.axes) == 1  # no colour bar
    chosen = att.plot_dependence("a", color="d")
    assert chosen.figure.axes[-1].get_ylabel() == "d (colour)"


def test_dependence_uses_interaction_values_when_given():
    att = make_att(n=30, p=4)
    inter = np.zeros((30, 4, 4))
    inter[:, 1, 3] = inter[:, 3, 1] = 0.5  # x1 interacts most with x3
    inter[:, 1, 0] = inter[:, 0, 1] = 0.2
    ax = att.plot_dependence("x1", interactions=inter)
    assert ax.figure.axes[-1].get_ylabel() == "x3 (strongest interaction)"
    with pytest.raises(ValueError, match="interaction values hold 10 rows, this attribution 30"):
        att.plot_dependence("x1", interactions=inter[:10])
    with pytest.raises(ValueError, match="interaction values must have shape"):
        att.plot_dependence("x1", interactions=inter[:, :, :3])
    att.extras["interactions"] = inter
    with pytest.raises(ValueError, match="sliced by players"):
        att[:, ["x0", "x1"]].plot_dependence("x1")
    with pytest.raises(ValueError, match="not sliced by players"):
        att[:, ["x0", "x1"]].plot_dependence("x1", interactions=att)


def test_dependence_of_a_category_and_without_data():
    cats = np.array(["b", "a", "c", "a"] * 5, dtype=object)
    data = np.column_stack([cats, np.arange(20.0)]).astype(object)
    att = Attribution(np.arange(40.0).reshape(20, 2), np.zeros(20), data, ["kind", "n"], ["y"])
    ax = att.plot_dependence("kind", random_state=0)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    x = ax.collections[-1].get_offsets()[:, 0]
    codes = np.array([{"a": 0, "b": 1, "c": 2}[c] for c in cats])
    assert np.all(np.abs(x - codes) <= 0.2)  # jittered around the category's column
    bare = Attribution(np.ones((3, 2)), np.zeros(3), None, ["p", "q"], ["y"])
    with pytest.raises(ValueError, match="one column per player"):
        bare.plot_dependence("p")


# ---- many rows ----------------------------------------------------------------------------


def test_heatmap_orders_rows_by_ward_clustering(tmp_path):
    from scipy.cluster.hierarchy import leaves_list, linkage

    att = make_att(n=25, p=6, std=True)
    ax = att.plot_heatmap(max_display=4)
    render(ax, tmp_path / "heatmap.png")
    rows = leaves_list(linkage(att.values, method="ward"))
    order = np.argsort(-np.abs(att.values).mean(axis=0))
    shown = att.values[rows][:, order[:4]]
    others = att.values[rows][:, order[4:]].sum(axis=1, keepdims=True)
    expected = np.hstack([shown, others]).T
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), expected)
    assert [t.get_text() for t in ax.get_yticklabels()] == \
        [f"x{j}" for j in order[:4]] + ["2 other features"]
    # the output line above, in the same row order
    top, side = ax.child_axes[0], ax.child_axes[1]
    np.testing.assert_allclose(top.lines[0].get_ydata(), att.predicted()[rows])
    # one whisker per line of the heatmap on the mean |value| bars
    std = att.std[rows]
    errs = np.hstack([std[:, order[:4]],
                      np.sqrt((std[:, order[4:]] ** 2).sum(axis=1, keepdims=True))])
    np.testing.assert_allclose(whiskers(side),
                               np.sort(Z95 * np.sqrt((errs ** 2).sum(axis=0)) / 25))
    dots = next(c for c in ax.collections if c.get_gid() == "heatmap-not-significant")
    assert len(dots.get_offsets()) == int(np.sum(np.abs(expected) < Z95 * errs.T))
    # a figure the method made itself holds the heatmap, its insets and labels whole
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    for part in [ax, *ax.child_axes]:
        box = part.get_tightbbox(renderer)
        assert box.x0 >= -1 and box.y0 >= -1, part
        assert box.x1 <= fig.bbox.x1 + 1 and box.y1 <= fig.bbox.y1 + 1, part


def test_decision_lines_climb_from_base_to_output(tmp_path):
    att = make_att(n=12, p=5, std=True)
    att.base_values[:] = np.linspace(-1, 1, 12)
    ax = att.plot_decision(rows=[0, 3, 7], max_display=3)
    render(ax, tmp_path / "decision.png")
    order = np.argsort(-np.abs(att.values[[0, 3, 7]]).mean(axis=0))
    for pos in (0, 3, 7):
        line = next(line for line in ax.lines if line.get_gid() == f"row {pos}")
        steps = np.concatenate([[att.values[pos, order[3:]].sum()],
                                att.values[pos, order[:3]][::-1]])
        np.testing.assert_allclose(line.get_xdata(),
                                   att.base_values[pos] + np.concatenate([[0], np.cumsum(
                                       steps)]))
        assert line.get_xdata()[-1] == pytest.approx(att.predicted()[pos])
    assert len([line for line in ax.lines if line.get_gid()]) == 3
    assert [t.get_text() for t in ax.get_legend().get_texts()] == \
        [f"row {pos}: {att.predicted()[pos]:.3g}" for pos in (0, 3, 7)]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["base value", "2 other features"] + [f"x{j}" for j in order[:3][::-1]]
    assert len(whiskers(ax)) == 3 * 4  # one per row and step
    everyone = make_att(n=30, p=3).plot_decision()
    assert len([line for line in everyone.lines if line.get_gid()]) == 30


def test_interaction_matrix_is_the_mean_absolute_interaction(tmp_path):
    att = make_att(n=20, p=4)
    rng = np.random.default_rng(5)
    inter = rng.normal(size=(20, 4, 4))
    att.extras["interactions"] = inter
    att.extras["interaction_features"] = ["x0", "x1", "x2", "x3"]
    ax = att.plot_interactions(max_display=3)
    render(ax, tmp_path / "interactions.png")
    keep = np.argsort(-np.abs(att.values).mean(axis=0))[:3]
    expected = np.abs(inter).mean(axis=0)[np.ix_(keep, keep)]
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), expected)
    assert len(ax.texts) == 9
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"x{j}" for j in keep]
    with pytest.raises(ValueError, match="needs interaction values"):
        make_att().plot_interactions()


@pytest.fixture(scope="module")
def tree_interactions():
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai.tree import TreeShapExplainer

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 4)), columns=["a", "b", "c", "d"])
    y = 2 * X["a"] * X["b"] + X["c"]
    model = RandomForestRegressor(n_estimators=10, max_depth=5, random_state=0).fit(X, y)
    explainer = TreeShapExplainer(FrozenEstimator(model), imputation="tree_path_dependent")
    return explainer.fit(X).explain_interactions(X.iloc[:60])


def test_plots_with_treeshap_interaction_values(tree_interactions, tmp_path):
    att = tree_interactions
    inter = att.extras["interactions"]
    strength = np.abs(inter[:, 0, :]).mean(axis=0)
    strength[0] = -np.inf
    assert att.feature_names[int(np.argmax(strength))] == "b"  # a's partner in a*b
    ax = att.plot_dependence("a")
    render(ax, tmp_path / "dependence_tree.png")
    assert ax.figure.axes[-1].get_ylabel() == "b (strongest interaction)"
    ax = att.plot_interactions()
    render(ax, tmp_path / "interactions_tree.png")
    keep = np.argsort(-np.abs(att.values).mean(axis=0))
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()),
                               np.abs(inter).mean(axis=0)[np.ix_(keep, keep)])
    # a row slice keeps its rows of the interaction values
    part = att[:20]
    np.testing.assert_allclose(np.asarray(part.plot_interactions().images[0].get_array()),
                               np.abs(inter[:20]).mean(axis=0)[np.ix_(
                                   np.argsort(-np.abs(att.values[:20]).mean(axis=0)),
                                   np.argsort(-np.abs(att.values[:20]).mean(axis=0)))])


def test_every_attribution_plot_takes_an_output_of_a_multi_output_result(tmp_path):
    rng = np.random.default_rng(2)
    values = rng.normal(size=(10, 3, 2))
    att = Attribution(values, np.zeros((10, 2)), rng.normal(size=(10, 3)), ["a", "b", "c"],
                      ["p0", "p1"])
    for draw in (att.plot_heatmap, att.plot_decision, att.plot_force, att.plot_waterfall):
        ax = draw(output="p1")
        render(ax, tmp_path / "multi.png")
        with pytest.raises(ValueError, match="Choose an output"):
            draw()
    ax = att.plot_heatmap(output=1)
    np.testing.assert_allclose(np.sort(np.asarray(ax.images[0].get_array()).ravel()),
                               np.sort(values[:, :, 1].ravel()))


# ---- values that are not finite -------------------------------------------------------------


def nan_att():
    att = make_att(n=8, p=4)
    values = att.values.copy()
    values[2, 1] = np.nan
    values[5, 3] = np.inf
    return Attribution(values, att.base_values, att.data, att.feature_names, att.output_names)


@pytest.mark.parametrize("plot", ["plot_waterfall", "plot_force"])
def test_one_row_plot_names_the_non_finite_row(plot, tmp_path):
    att = nan_att()
    with pytest.raises(ValueError, match=rf"{plot} cannot draw .* output 'y' has NaN or "
                                         r"infinite values in row 2 \(players 'x1'\)"):
        getattr(att, plot)(2)
    with pytest.raises(ValueError, match=r"values in row 5 \(players 'x3'\)"):
        getattr(att, plot)(-3)
    render(getattr(att, plot)(0), tmp_path / "row0.png")  # a finite row is drawn


@pytest.mark.parametrize("plot", ["plot_heatmap", "plot_bar", "plot_beeswarm",
                                  "plot_decision"])
def test_many_row_plot_names_the_non_finite_rows(plot, tmp_path):
    att = nan_att()
    with pytest.raises(ValueError, match=rf"{plot} cannot draw .* values in rows 2, 5 "
                                         r"\(players 'x1', 'x3'\)"):
        getattr(att, plot)()
    finite = att[np.isfinite(att.values).all(axis=1)]
    render(getattr(finite, plot)(), tmp_path / "finite.png")


def test_waterfall_names_a_non_finite_base_value_of_its_output():
    values = np.ones((2, 3, 2))
    att = Attribution(values, np.array([[0.0, np.nan], [0.0, 0.0]]), None, ["a", "b", "c"],
                      ["o0", "o1"])
    att.plot_waterfall(0, output="o0")
    with pytest.raises(ValueError, match="output 'o1' has NaN or infinite base values in row 0"):
        att.plot_waterfall(0, output="o1")


# ---- counterfactuals ----------------------------------------------------------------------


@pytest.fixture
def counterfactuals():
    queries = pd.DataFrame({"age": [30.0, 50.0], "job": ["clerk", "manager"],
                            "hours": [40.0, 20.0]})
    cf = pd.DataFrame({"age": [30.0, 30.0, 30.0], "job": ["clerk", "engineer", "engineer"],
                       "hours": [45.0, 40.0, 35.0], "query": [0, 0, 0]})
    costs = pd.DataFrame({"max_distance": [0.5, 1.0, 1.2], "n_changes": [1, 1, 2],
                          "inlier": [True, True, False]})
    return Counterfactuals(queries=queries, counterfactuals=cf,
                           predictions=np.array([0.6, 0.7, 0.9]),
                           valid=np.array([True, True, True]), costs=costs,
                           found=np.array([True, False]), desired=np.array([1, 1]),
                           extras={"objectives": ["max_distance", "n_changes"]})


def test_counterfactual_diff_table(counterfactuals, tmp_path):
    ax = counterfactuals.plot_diff(0)
    render(ax, tmp_path / "diff.png")
    cells = ax.tables[0].get_celld()
    header = [cells[0, c].get_text().get_text() for c in range(4)]
    assert header == ["query", "cf 0", "cf 1", "cf 2"]
    labels = [cells[r, -1].get_text().get_text() for r in range(1, 7)]
    # 'age' is changed by none: not a line
    assert labels == ["job", "hours", "prediction", "valid", "max_distance", "n_changes"]
    text = [[cells[r, c].get_text().get_text() for c in range(4)] for r in range(1, 7)]
    assert text[0] == ["clerk", "", "engineer", "engineer"]
    assert text[1] == ["40", "45", "", "35"]
    assert text[2] == ["", "0.6", "0.7", "0.9"]
    assert text[3] == ["", "True", "True", "True"]
    assert text[5] == ["", "1", "1", "2"]
    from matplotlib.colors import to_rgba

    from sklearn_xai._plots import DIFF_COLOURS

    def colour(r, c):
        return cells[r, c].get_facecolor()

    assert colour(2, 1) == to_rgba(DIFF_COLOURS["up"])
    assert colour(2, 3) == to_rgba(DIFF_COLOURS["down"])
    assert colour(1, 2) == to_rgba(DIFF_COLOURS["changed"])
    assert colour(1, 1) == to_rgba(DIFF_COLOURS["same"])
    # as many coloured change cells as changes in diff()
    changes = sum(len(c) for c in counterfactuals.diff(0))
    tinted = sum(colour(r, c) in {to_rgba(DIFF_COLOURS[k]) for k in ("up", "down", "changed")}
                 for r in (1, 2) for c in (1, 2, 3))
    assert tinted == changes == 4
    none = counterfactuals.plot_diff(1)
    assert none.texts[0].get_text() == "query 1: no counterfactual found"
    with pytest.raises(ValueError, match="out of range"):
        counterfactuals.plot_diff(2)


def test_counterfactual_parallel_coordinates(counterfactuals, tmp_path):
    ax = counterfactuals.plot_parallel_coordinates(0)
    render(ax, tmp_path / "parallel.png")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["job", "hours", "max_distance",
                                                            "n_changes"]
    lines = {line.get_gid(): line for line in ax.lines if line.get_gid() != "parallel-axis"}
    assert sorted(lines) == ["cf 0", "cf 1", "cf 2", "query"]
    # job: categories in order of appearance (clerk, engineer); hours 35..45; costs min..max
    np.testing.assert_allclose(lines["cf 1"].get_ydata(), [1.0, 0.5, (1.0 - 0.5) / 0.7, 0.0])
    np.testing.assert_allclose(lines["cf 2"].get_ydata(), [1.0, 0.0, 1.0, 1.0])
    np.testing.assert_allclose(lines["query"].get_ydata(), [0.0, 0.5, np.nan, np.nan])
    assert len([line for line in ax.lines if line.get_gid() == "parallel-axis"]) == 4
    chosen = counterfactuals.plot_parallel_coordinates(0, features=["age"], costs=[])
    assert [t.get_text() for t in chosen.get_xticklabels()] == ["age"]
    with pytest.raises(ValueError, match="unknown features"):
        counterfactuals.plot_parallel_coordinates(0, features=["height"])
    with pytest.raises(ValueError, match="unknown cost columns"):
        counterfactuals.plot_parallel_coordinates(0, costs=["price"])


def test_interactions_of_a_multi_output_result():
    rng = np.random.default_rng(4)
    values = rng.normal(size=(10, 3, 2))
    inter = rng.normal(size=(10, 3, 3, 2))
    att = Attribution(values, np.zeros((10, 2)), rng.normal(size=(10, 3)), ["a", "b", "c"],
                      ["p0", "p1"], extras={"interactions": inter,
                                            "interaction_features": ["a", "b", "c"]})
    ax = att.plot_interactions(output="p1")
    keep = np.argsort(-np.abs(values[:, :, 1]).mean(axis=0))
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()),
                               np.abs(inter[..., 1]).mean(axis=0)[np.ix_(keep, keep)])
    strength = np.abs(inter[:, 0, :, 0]).mean(axis=0)
    partner = ["b", "c"][int(np.argmax(strength[1:]))]
    assert att.plot_dependence("a", output="p0").figure.axes[-1].get_ylabel() == \
        f"{partner} (strongest interaction)"
    with pytest.raises(ValueError, match="2 outputs, this attribution 1"):
        att.for_output("p1").plot_interactions()


def test_one_row_heatmap_and_decision(tmp_path):
    att = make_att(n=1, p=3)
    ax = att.plot_heatmap()
    render(ax, tmp_path / "one.png")
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()),
                               att.values[:, np.argsort(-np.abs(att.values[0]))].T)
    line = att.plot_decision().lines[-1]
    assert line.get_xdata()[-1] == pytest.approx(att.predicted()[0])


@pytest.mark.parametrize("plot", ["plot_waterfall", "plot_force", "plot_bar", "plot_beeswarm",
                                  "plot_heatmap", "plot_decision", "plot_interactions"])
@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_max_display_must_be_a_positive_int(plot, bad):
    # max_display=0 drew an empty image with matplotlib's "singular limits" warnings
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai import TreeShapExplainer

    X = np.random.default_rng(0).normal(size=(100, 4))
    model = GradientBoostingRegressor(n_estimators=3, random_state=0).fit(X, X[:, 0] * X[:, 1])
    att = TreeShapExplainer(FrozenEstimator(model)).fit(X).explain_interactions(X[:8])
    with pytest.raises(ValueError, match=f"{plot}: max_display must be a positive int"):
        getattr(att, plot)(max_display=bad)


def test_interactions_of_other_rows_are_named_as_such():
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai import TreeShapExplainer

    X = np.random.default_rng(0).normal(size=(100, 4))
    model = GradientBoostingRegressor(n_estimators=3, random_state=0).fit(X, X[:, 0] * X[:, 1])
    exp = TreeShapExplainer(FrozenEstimator(model)).fit(X)
    with pytest.raises(ValueError, match="hold 20 rows, this attribution 10"):
        exp.explain(X[:10]).plot_interactions(interactions=exp.explain_interactions(X[:20]))


def test_global_importance_bar_checks_max_display_as_every_plot():
    from sklearn_xai import GlobalImportance

    imp = GlobalImportance(importances=np.array([0.3, 0.1]), std=np.array([0.01, 0.02]),
                           feature_names=["a", "b"])
    with pytest.raises(ValueError, match="plot_bar: max_display must be a positive int"):
        imp.plot_bar(max_display=0)
    assert len(imp.plot_bar(max_display=1).patches) == 1
