"""The command line: ``python -m sklearn_xai report`` / ``explain``, its errors, and the
report opened in a real browser (headless Chromium)."""

import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

from sklearn_xai.__main__ import main
from sklearn_xai._report import SECTION_IDS
from tests._cli import run_cli as _run

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
FEATURES = ["colour", "age", "income", "debt", "years"]


# ------------------------------------------------------------------------------------------
# a small user model and data, saved as a user would
# ------------------------------------------------------------------------------------------


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "colour": rng.choice(["red", "green", "blue"], size=n),
        "age": rng.integers(18, 70, size=n),
        "income": np.round(rng.normal(50, 15, size=n), 1),
        "debt": np.round(rng.gamma(2.0, 5.0, size=n), 1),
        "years": rng.integers(0, 30, size=n),
    })
    score = (0.08 * (frame["income"] - 50) - 0.15 * (frame["debt"] - 10)
             + 0.05 * (frame["years"] - 15) + 0.8 * (frame["colour"] == "green"))
    frame["approved"] = (score + rng.normal(0, 0.5, size=n) > 0).astype(int)
    return frame


def _model():
    encode = ColumnTransformer(
        [("cat", OrdinalEncoder(), ["colour"])], remainder="passthrough",
        verbose_feature_names_out=False)
    return Pipeline([("encode", encode),
                     ("gbm", HistGradientBoostingClassifier(
                         max_iter=30, max_depth=3, categorical_features=[True] + [False] * 4,
                         random_state=0))])


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """One OpenMP thread, as the command uses by default: on a shared machine, HGB's
    threads otherwise make every small predict call slow."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("user")
    frame = _frame(300, 0)
    model = _model().fit(frame[FEATURES], frame["approved"])
    joblib.dump(model, d / "model.joblib")
    frame.to_csv(d / "data.csv", index=False)
    return {"dir": d, "model": model, "frame": frame, "model_path": d / "model.joblib",
            "data_path": d / "data.csv"}


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.srcs, self.ids = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.srcs.append(attrs.get("src") or "")
        if "id" in attrs:
            self.ids.append(attrs["id"])


def _check_html(text):
    """Every section id once, every image an inline non-empty PNG, no external asset."""
    parser = _Images()
    parser.feed(text)
    for sid in SECTION_IDS:
        assert parser.ids.count(sid) == 1, sid
    assert parser.srcs, "no image in the report"
    for src in parser.srcs:
        assert src.startswith("data:image/png;base64,") and len(src) > 200, src[:60]
    assert not re.search(r'(src|href)="(https?:|//|file:)', text)
    return parser


@pytest.fixture(scope="module")
def user_report(files, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    argv = ["report", "--model", files["model_path"], "--trust-model", "--data",
            files["data_path"], "--target", "approved", "--rows", "2", "--global-rows", "60",
            "--out", out, "--seed", "3", "--time-limit", "3"]
    import io
    from contextlib import redirect_stderr, redirect_stdout

    err, std = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(std), _recorded_figures() as figures:
        code = main([str(a) for a in argv])
    return {"code": code, "out": out, "stdout": std.getvalue(), "stderr": err.getvalue(),
            "figures": figures}


@contextmanager
def _recorded_figures():
    """What each figure of the report shows, per axes, read just before it is saved:
    dicts with the title, x label, x ticks, y tick labels and the colour bar's label."""
    from sklearn_xai import _report

    figures, real = [], _report._png

    def record(fig, title=None):
        figures.append([{"title": ax.get_title(), "xlabel": ax.get_xlabel(),
                         "ylabel": ax.get_ylabel(), "xticks": list(ax.get_xticks()),
                         "yticklabels": [t.get_text() for t in ax.get_yticklabels()]}
                        for ax in fig.axes])
        return real(fig, title)

    _report._png = record
    try:
        yield figures
    finally:
        _report._png = real


# ------------------------------------------------------------------------------------------
# the report on a user's model and data
# ------------------------------------------------------------------------------------------


def test_report_on_user_model(files, user_report):
    assert user_report["code"] == 0, user_report["stderr"]
    out = user_report["out"]
    assert f"wrote {out.resolve()}" in user_report["stdout"]
    text = out.read_text(encoding="utf-8")
    parser = _check_html(text)
    # bar, beeswarm and dependence plot; two waterfalls and a decision plot; one Pareto
    # scatter
    assert len(parser.srcs) == 7
    err = user_report["stderr"]
    for step in ("fit TreeSHAP", "TreeSHAP on 60 rows", "SHEAR on 2 rows", "MACE on",
                 "P2CE on", "draw figures and write HTML"):
        assert re.search(r"\[\s*\d+\.\d\d s\] " + re.escape(step), err), step
    assert re.search(r"\[#+\] 60/60 rows", err)  # the progress bar, finished
    # the row counts are stated in the report
    assert "the first 60 of 300 rows" in text and "the first 2" in text


def test_report_figures_read_well(user_report):
    """Whole-number ticks on the Pareto plot's count axis; the new plots are drawn."""
    figures = user_report["figures"]
    titles = [fig[0]["title"] for fig in figures]
    assert titles == ["mean |TreeSHAP|", "TreeSHAP per row",
                      "TreeSHAP of income, the most important feature", "row 0", "row 1",
                      "rows 0, 1: from the base value (bottom) to the output (top)",
                      "Counterfactual costs (lower-left is better)"]
    pareto = figures[-1][0]
    assert pareto["xlabel"] == "number of changed features"
    assert pareto["xticks"] and all(float(t).is_integer() for t in pareto["xticks"])
    dependence = figures[2]
    assert dependence[0]["xlabel"] == "income"
    assert dependence[1]["ylabel"].endswith("(residual heuristic)")  # the colour bar
    decision = figures[5][0]
    assert decision["yticklabels"][0] == "base value" and len(decision["yticklabels"]) == 6


def test_report_cuts_long_category_labels_and_keeps_them_in_full(files, tmp_path, capsys):
    """A category label of 77 characters (German credit's) is wrapped and ellipsized in the
    waterfall's ticks and given in full in a table and in the figure's tooltip."""
    long = "critical account / other credits existing (not at this bank)"
    frame = files["frame"].copy()
    frame["colour"] = frame["colour"].replace({"green": long})
    data = tmp_path / "long.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "r.html"
    with _recorded_figures() as figures:
        code, _, err = _run(["report", "--data", data, "--target", "approved",
                             "--explainer", "tree", "--rows", "3", "--global-rows", "30",
                             "--out", out], capsys)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    _check_html(text)
    rows = [k for k in range(3) if frame["colour"].iloc[k] == long]
    assert rows, "the first rows hold the long label"
    full = f"colour = {long}"
    table = text[text.index("Labels longer than two lines"):text.index("</table>",
                                                                       text.index("Labels"))]
    for k in rows:
        assert f"<tr><td>{k}</td><td>{html.escape(full)}</td></tr>" in table
    assert f'title="{html.escape(full)}' in text
    for fig in figures:
        if fig[0]["title"].startswith("row "):
            labels = fig[0]["yticklabels"]
            assert all(len(line) <= 30 for lab in labels for line in lab.split("\n"))
            if int(fig[0]["title"][4:]) in rows:
                assert "colour = critical account /\nother credits existing (not a\u2026" \
                    in labels


def test_report_treeshap_adds_up_to_the_model_margin(files, user_report):
    """The comparison table's TreeSHAP 'base -> output' is the model's own margin."""
    text = user_report["out"].read_text(encoding="utf-8")
    model, frame = files["model"], files["frame"]
    margin = model.decision_function(frame[FEATURES].iloc[:2])
    section = text[text.index('id="attribution-comparison"'):text.index('id="counterfactuals"')]
    outputs = re.findall(r"<td>base value -&gt; base \+ sum</td><td></td><td>"
                         r"(-?\d+\.\d+) -&gt; (-?\d+\.\d+)</td>", section)
    assert len(outputs) == 2
    np.testing.assert_allclose([float(o[1]) for o in outputs], margin, atol=1e-4)
    # the SHEAR column is in probability units, beside the model's own probability
    assert "SHEAR (proba(1))" in section
    shown = re.findall(r"<td>model output</td><td></td><td>= base \+ sum \(exact\)</td>"
                       r"<td>(\d+\.\d+)</td>", section)
    proba = model.predict_proba(frame[FEATURES].iloc[:2])[:, 1]
    np.testing.assert_allclose([float(v) for v in shown], proba, atol=1e-4)


def test_report_counterfactuals_flip_the_model(files, user_report):
    """Apply every listed diff to its query row: the model must predict the desired class."""
    text = user_report["out"].read_text(encoding="utf-8")
    model, frame = files["model"], files["frame"]
    X = frame[FEATURES]
    section = text[text.index('id="counterfactuals"'):text.index('id="pareto-scatter"')]
    positions = [int(p) for p in re.findall(r"<h3>row (\d+)</h3>", section)]
    pred = model.predict(X)
    expected = list(np.flatnonzero(pred != 1)[:2])
    assert positions == expected
    blocks = re.split(r"<h3>row \d+</h3>", section)[1:]
    n_checked = 0
    for pos, block in zip(positions, blocks):
        for method in ("MACE", "P2CE"):
            assert f"<h4>{method}" in block
        for diff, p in re.findall(r"<code>(.*?)</code> <span class=\"tag\">valid, "
                                  r"p=([\d.]+)</span>", block):
            row = X.iloc[[pos]].copy()
            for change in html.unescape(diff).split("; "):
                name, values = change.split(": ", 1)
                new = values.split(" -> ")[1]
                row[name] = new if name == "colour" else float(new)
            proba = model.predict_proba(row)[0, 1]
            if abs(proba - 0.5) > 1e-3:  # diffs print 6 significant digits
                assert proba > 0.5, (pos, diff, proba)
                assert abs(proba - float(p)) < 5e-3
                n_checked += 1
    assert n_checked >= 2


def test_report_explainer_subset_and_skips(files, tmp_path, capsys):
    out = tmp_path / "r.html"
    code, stdout, err = _run(["report", "--model", files["model_path"], "--trust-model",
                              "--data", files["data_path"], "--target", "approved",
                              "--explainer", "tree", "--rows", "1", "--global-rows", "20",
                              "--out", out], capsys)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    _check_html(text)
    section = text[text.index('id="attribution-comparison"'):text.index('id="counterfactuals"')]
    assert "TreeSHAP (margin(1)) [rank]" in section and "SHEAR (" not in section
    assert "MACE: not requested (--explainer)" in text
    assert "P2CE: not requested (--explainer)" in text
    assert "P2CE on" not in err and "MACE on" not in err


def test_report_trains_the_default_model_on_user_data(files, tmp_path, capsys):
    out = tmp_path / "r.html"
    code, _, err = _run(["report", "--data", files["data_path"], "--target", "approved",
                         "--explainer", "tree", "--rows", "1", "--global-rows", "10",
                         "--out", out], capsys)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    _check_html(text)
    assert "HistGradientBoostingClassifier (scikit-learn)), trained here on 300 rows" in text
    assert re.search(r"\[\s*\d+\.\d\d s\] train HistGradientBoostingClassifier", err)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_report_on_gbm_library_model(library, files, tmp_path, capsys):
    """XGBoost and LightGBM models saved with joblib; TreeSHAP adds up to their margin."""
    lib = pytest.importorskip(library)
    frame = files["frame"]
    num = ["age", "income", "debt", "years"]
    if library == "xgboost":
        model = lib.XGBClassifier(n_estimators=15, max_depth=3, random_state=0, n_jobs=1)
    else:
        model = lib.LGBMClassifier(n_estimators=15, num_leaves=7, random_state=0, n_jobs=1,
                                   verbose=-1)
    model.fit(frame[num], frame["approved"])
    joblib.dump(model, tmp_path / "m.joblib")
    frame[num + ["approved"]].to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "r.html"
    code, stdout, err = _run(["report", "--model", tmp_path / "m.joblib", "--trust-model",
                              "--data", tmp_path / "d.csv", "--target", "approved",
                              "--explainer", "tree", "--explainer", "p2ce", "--rows", "2",
                              "--global-rows", "30", "--out", out], capsys)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    _check_html(text)
    assert f"{type(model).__name__} loaded from m.joblib" in text
    outputs = re.findall(r"<td>base value -&gt; base \+ sum</td><td></td><td>"
                         r"(-?\d+\.\d+) -&gt; (-?\d+\.\d+)</td>", text)
    margin = model.predict(frame[num].iloc[:2], output_margin=True) if library == "xgboost" \
        else model.predict(frame[num].iloc[:2], raw_score=True)
    np.testing.assert_allclose([float(o[1]) for o in outputs], margin, atol=1e-4)
    assert "<h4>P2CE" in text and "MACE: not requested" in text


def test_report_multiclass_and_regressor(tmp_path, capsys):
    """A 3-class forest shows its last class (the counterfactuals' target); a regressor
    gets attributions and a note instead of counterfactuals."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(150, 4)), columns=list("abcd"))
    y3 = np.digitize(X["a"] + X["b"], [-0.7, 0.7])
    rf = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, y3)
    gbr = GradientBoostingRegressor(n_estimators=10, random_state=0).fit(X, 2 * X["a"] + X["c"])
    for name, model in (("rf", rf), ("gbr", gbr)):
        joblib.dump(model, tmp_path / f"{name}.joblib")
    X.to_csv(tmp_path / "X.csv", index=False)
    for name, model in (("rf", rf), ("gbr", gbr)):
        out = tmp_path / f"{name}.html"
        argv = ["report", "--model", tmp_path / f"{name}.joblib", "--trust-model", "--data",
                tmp_path / "X.csv", "--rows", "2", "--global-rows", "20", "--time-limit", "2",
                "--out", out]
        if name == "gbr":
            argv += ["--explainer", "tree", "--explainer", "shear"]
        code, _, err = _run(argv, capsys)
        assert code == 0, err
        text = out.read_text(encoding="utf-8")
        _check_html(text)
        outputs = re.findall(r"<td>base value -&gt; base \+ sum</td><td></td><td>"
                             r"(-?\d+\.\d+) -&gt; (-?\d+\.\d+)</td>", text)
        expected = (rf.predict_proba(X.iloc[:2])[:, 2] if name == "rf"
                    else gbr.predict(X.iloc[:2]))
        np.testing.assert_allclose([float(o[1]) for o in outputs], expected, atol=1e-4)
        if name == "rf":
            assert "does not predict as class 2" in text and "<h4>MACE" in text
        else:
            assert "MACE: not requested (--explainer)" in text
            assert "No counterfactual explainer was run." in text


# ------------------------------------------------------------------------------------------
# explain: the attribution matrix
# ------------------------------------------------------------------------------------------


def test_explain_csv_matches_treeshap(files, tmp_path, capsys):
    from sklearn_xai import TreeShapExplainer

    out = tmp_path / "phi.csv"
    code, stdout, err = _run(["explain", "--model", files["model_path"], "--trust-model",
                              "--data", files["data_path"], "--target", "approved", "--rows",
                              "40", "--out", out], capsys)
    assert code == 0, err
    assert "wrote" in stdout and "(40 rows x 6 columns)" in stdout
    got = pd.read_csv(out, index_col="row")
    model, X = files["model"], files["frame"][FEATURES]
    ref = TreeShapExplainer(FrozenEstimator(model)).fit(X).explain(X.iloc[:40])
    assert list(got.columns) == ["base_value:margin(1)"] + list(ref.feature_names)
    np.testing.assert_allclose(got[ref.feature_names].to_numpy(), ref.values, atol=1e-12)
    # the oracle: base + sum = the model's own margin
    total = got.to_numpy().sum(axis=1)
    np.testing.assert_allclose(total, model.decision_function(X.iloc[:40]), atol=1e-9)


def test_explain_parquet_shear(files, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from sklearn_xai import ShearExplainer

    parquet = tmp_path / "data.parquet"
    files["frame"].to_parquet(parquet)
    out = tmp_path / "phi.parquet"
    code, stdout, err = _run(["explain", "--model", files["model_path"], "--trust-model",
                              "--data", parquet, "--target", "approved", "--rows", "5",
                              "--explainer", "shear", "--seed", "7", "--out", out], capsys)
    assert code == 0, err
    got = pd.read_parquet(out)
    X = files["frame"][FEATURES]
    shear = ShearExplainer(FrozenEstimator(files["model"]), n_evals=16, random_state=7).fit(X)
    ref = shear.explain(X.iloc[:5])
    assert list(got.columns) == ["base_value:proba(1)"] + FEATURES
    np.testing.assert_allclose(got[FEATURES].to_numpy(), ref.values, atol=1e-12)
    np.testing.assert_allclose(got["base_value:proba(1)"], ref.base_values, atol=1e-12)


def test_explain_knockoff_is_efficient(files, tmp_path, capsys):
    """Knockoff SHAP (exact for 5 players): base + sum = P(approved) for every row."""
    out = tmp_path / "ko.csv"
    code, stdout, err = _run(["explain", "--model", files["model_path"], "--trust-model",
                              "--data", files["data_path"], "--target", "approved", "--rows",
                              "3", "--explainer", "knockoff", "--out", out], capsys)
    assert code == 0, err
    got = pd.read_csv(out, index_col="row")
    assert list(got.columns) == ["base_value:proba(1)"] + FEATURES
    proba = files["model"].predict_proba(files["frame"][FEATURES].iloc[:3])[:, 1]
    np.testing.assert_allclose(got.to_numpy().sum(axis=1), proba, atol=1e-9)
    assert not np.allclose(got[FEATURES].to_numpy(), 0)


# ------------------------------------------------------------------------------------------
# errors: one line on stderr, a non-zero exit, no traceback
# ------------------------------------------------------------------------------------------


def _assert_one_line_error(code, err, *fragments):
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sklearn-xai: error: "), err
    assert "Traceback" not in err
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])


@pytest.fixture(scope="module")
def bad_files(files):
    d = files["dir"]
    (d / "garbage.joblib").write_bytes(b"this is not a pickle")
    (d / "data.txt").write_text("a,b\n1,2\n")
    (d / "broken.parquet").write_bytes(b"PAR1 not really")
    (d / "empty.csv").write_text("")
    joblib.dump({"not": "a model"}, d / "dict.joblib")
    frame = files["frame"].drop(columns=["debt"])
    frame.to_csv(d / "no_debt.csv", index=False)
    numeric = HistGradientBoostingClassifier(max_iter=5).fit(
        files["frame"][["age", "income", "debt"]].to_numpy(), files["frame"]["approved"])
    joblib.dump(numeric, d / "numeric3.joblib")
    return d


@pytest.mark.parametrize("case", [
    "unknown_explainer", "unknown_explainer_explain", "model_missing", "model_garbage",
    "model_not_estimator", "data_missing", "data_extension", "data_broken_parquet",
    "data_empty", "columns_missing", "width_mismatch", "target_missing", "model_without_data",
    "explain_recourse", "out_extension", "rows_not_int",
])
def test_errors_are_one_line(case, files, bad_files, tmp_path, capsys):
    d = bad_files
    m, data = files["model_path"], files["data_path"]
    out = tmp_path / "r.html"
    argv, fragments = {
        "unknown_explainer": (["report", "--explainer", "tree", "--explainer", "lime"],
                              ["unknown explainer 'lime'", "tree, shear, knockoff"]),
        "unknown_explainer_explain": (["explain", "--explainer", "lime", "--out",
                                       tmp_path / "a.csv"], ["unknown explainer 'lime'"]),
        "model_missing": (["report", "--model", d / "nope.joblib", "--data", data],
                          ["model file not found", "nope.joblib"]),
        "model_garbage": (["report", "--model", d / "garbage.joblib", "--data", data],
                          ["cannot load model from", "garbage.joblib"]),
        "model_not_estimator": (["report", "--model", d / "dict.joblib", "--data", data],
                                ["holds a dict, not a fitted model"]),
        "data_missing": (["report", "--model", m, "--data", d / "nope.csv"],
                         ["data file not found", "nope.csv"]),
        "data_extension": (["report", "--model", m, "--data", d / "data.txt"],
                           ["expected a .csv or .parquet file"]),
        "data_broken_parquet": (["report", "--model", m, "--data", d / "broken.parquet"],
                                ["cannot read", "broken.parquet"]),
        "data_empty": (["report", "--model", m, "--data", d / "empty.csv"],
                       ["cannot read", "empty.csv"]),
        "columns_missing": (["report", "--model", m, "--data", d / "no_debt.csv",
                             "--target", "approved"],
                            ["expects columns missing from", "debt"]),
        "width_mismatch": (["report", "--model", d / "numeric3.joblib", "--data", data,
                            "--target", "approved"],
                           ["takes 3 features", "has 5 columns"]),
        "target_missing": (["report", "--model", m, "--data", data, "--target", "label"],
                           ["--target 'label' is not a column"]),
        "model_without_data": (["report", "--model", m], ["--model needs --data"]),
        "explain_recourse": (["explain", "--model", m, "--data", data, "--target",
                              "approved", "--explainer", "mace", "--out",
                              tmp_path / "a.csv"],
                             ["--explainer must be one of tree, shear, knockoff"]),
        "out_extension": (["explain", "--model", m, "--data", data, "--target", "approved",
                           "--out", tmp_path / "a.xlsx"], ["expected a .csv or .parquet"]),
        "rows_not_int": (["report", "--rows", "many"], ["expected a positive integer"]),
    }[case]
    if "--model" in argv:  # the joblib files here are the test's own
        argv = argv + ["--trust-model"]
    if case == "rows_not_int":
        with pytest.raises(SystemExit) as info:
            main([str(a) for a in argv])
        code, err = info.value.code, capsys.readouterr().err
    else:
        if argv[0] == "report":
            argv = argv + ["--out", out]
        code, _, err = _run(argv, capsys)
    _assert_one_line_error(code, err, *fragments)
    assert not out.exists()


def test_error_from_a_real_process(tmp_path):
    """The installed entry point (python -m) prints the same single line, status 2."""
    proc = subprocess.run([sys.executable, "-m", "sklearn_xai", "report", "--explainer", "shap",
                           "--out", str(tmp_path / "r.html")], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    _assert_one_line_error(proc.returncode, proc.stderr, "unknown explainer 'shap'")
    assert proc.returncode == 2 and proc.stdout == ""


# ------------------------------------------------------------------------------------------
# the default: Adult, every explainer of the default run
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_default_report_on_adult(tmp_path):
    out = tmp_path / "adult.html"
    proc = subprocess.run([sys.executable, "-m", "sklearn_xai", "report", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out.resolve()}" in proc.stdout
    text = out.read_text(encoding="utf-8")
    parser = _check_html(text)
    # bar, beeswarm, dependence; three waterfalls and a decision plot; Pareto
    assert len(parser.srcs) == 3 + 4 + 1
    assert "HistGradientBoostingClassifier" in text and "HistGradientBoostingClassifier" in \
        proc.stderr
    assert "the first 500 of" in text and "30162 of 32561 rows kept" in text
    for step in ("train HistGradientBoostingClassifier", "TreeSHAP on 500 rows",
                 "SHEAR on 3 rows", "MACE on 3 rows", "P2CE on 3 rows"):
        assert step in proc.stderr, step
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(out, ARTIFACTS / "report_default.html")


# ------------------------------------------------------------------------------------------
# a real browser
# ------------------------------------------------------------------------------------------


def _chromium():
    """Path of a Chromium binary; installed with apt-get only on CI as root, else skip."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.path.exists("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    if not os.environ.get("CI"):
        pytest.skip("Chromium is not installed (apt-get install chromium chromium-driver); "
                    "it is installed automatically only when CI is set")
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("Chromium is not installed and cannot be installed here "
                    "(needs root and apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True, env=env,
                       timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium", "chromium-driver"],
                       check=True, capture_output=True, env=env, timeout=1200)
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"Chromium could not be installed with apt-get: {exc}")
    found = shutil.which("chromium")
    if not found:
        pytest.skip("apt-get ran but no chromium binary was found")
    return found


_CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 "--hide-scrollbars", "--mute-audio"]


def _chrome(binary, *args, timeout=120):
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([binary, *_CHROME_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)


def test_report_in_headless_chromium(user_report):
    binary = _chromium()
    assert user_report["code"] == 0, user_report["stderr"]
    url = user_report["out"].resolve().as_uri()
    proc = _chrome(binary, "--dump-dom", url)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    # the DOM as the browser built it: every section, every image inline and non-empty
    parser = _check_html(dom)
    assert len(parser.srcs) == 7
    assert "<h1>sklearn-xai report</h1>" in dom
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report_chromium.png"
    if shot.exists():
        shot.unlink()
    proc = _chrome(binary, f"--screenshot={shot}", "--window-size=1200,6000", url)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_chromium_lookup_skips_with_a_reason_when_missing(monkeypatch):
    """Without a Chromium binary and outside CI, the browser test skips and says why."""
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(os.path, "exists", lambda path: False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Chromium is not installed"):
        _chromium()
    monkeypatch.setenv("CI", "1")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(pytest.skip.Exception, match="needs root and apt-get"):
        _chromium()


def test_report_one_hot_pipeline_side_by_side_has_no_dashes(files, tmp_path, capsys):
    """TreeSHAP, SHEAR and knockoff SHAP all explain a one-hot pipeline in its input
    columns, so every row of the side-by-side table has a value for each method."""
    from sklearn.ensemble import RandomForestClassifier

    frame = files["frame"]
    model = Pipeline([
        ("encode", ColumnTransformer([("cat", OneHotEncoder(), ["colour"])],
                                     remainder="passthrough")),
        ("forest", RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0))])
    model.fit(frame[FEATURES], frame["approved"])
    path = tmp_path / "onehot.joblib"
    joblib.dump(model, path)
    out = tmp_path / "r.html"
    code, _, err = _run(["report", "--model", path, "--trust-model", "--data",
                         files["data_path"], "--target", "approved", "--explainer", "tree",
                         "--explainer", "shear", "--explainer", "knockoff", "--rows", "1",
                         "--global-rows", "20", "--out", out], capsys)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    section = text[text.index('id="attribution-comparison"'):text.index('id="counterfactuals"')]
    rows = re.findall(r"<tr><td>([^<]*)</td>(.*?)</tr>", section)
    feature_rows = [(name, cells) for name, cells in rows if name in FEATURES]
    assert sorted(name for name, _ in feature_rows) == sorted(FEATURES)
    for name, cells in feature_rows:
        assert "<td>-</td>" not in cells, name
