"""Faults of the command line: untrusted model files, mismatched columns, spreadsheet
formula injection in the CSV it writes, and argument validation."""

import csv
import os
import pickle
import re
import sys

import joblib
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator

from sklearn_xai import TreeShapExplainer
from sklearn_xai.__main__ import main
from tests._cli import one_line_error as _one_line_error
from tests._cli import run_cli as _run

FEATURES = ["age", "income", "debt"]


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def _frame(n=120, seed=0, columns=FEATURES):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, len(columns))), columns=columns)
    y = (X.iloc[:, 0] - 0.5 * X.iloc[:, 1] + 0.3 * X.iloc[:, 2] > 0).astype(int)
    return X, y


def _hgb():
    return HistGradientBoostingClassifier(max_iter=10, max_depth=3, random_state=0)


def _treeshap_margin(model, X, got):
    """The written matrix is TreeSHAP of ``model`` on ``X``, adding up to its margin."""
    ref = TreeShapExplainer(FrozenEstimator(model)).fit(X).explain(X.iloc[:len(got)])
    np.testing.assert_allclose(got.iloc[:, 1:].to_numpy(dtype=float), ref.values, atol=1e-12)
    np.testing.assert_allclose(got.to_numpy(dtype=float).sum(axis=1),
                               model.decision_function(X.iloc[:len(got)]), atol=1e-9)


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    X, y = _frame()
    model = _hgb().fit(X, y)
    joblib.dump(model, d / "model.joblib")
    X.to_csv(d / "data.csv", index=False)
    return {"dir": d, "X": X, "model": model}


# ------------------------------------------------------------------------------------------
# untrusted model files
# ------------------------------------------------------------------------------------------


class _Crafted:
    """Unpickling this object creates the directory ``marker`` (a stand-in for any code)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


@pytest.mark.parametrize("name", ["evil.joblib", "evil.pkl"])
def test_pickle_is_not_loaded_without_trust_model(name, user, tmp_path, capsys):
    marker = tmp_path / "pwned"
    path = tmp_path / name
    path.write_bytes(pickle.dumps(_Crafted(marker)))
    code, out, err = _run(["explain", "--model", path, "--data", user["dir"] / "data.csv",
                           "--out", tmp_path / "phi.csv"], capsys)
    _one_line_error(code, err, "--trust-model", "skops", name)
    assert not marker.exists(), "the model file was unpickled without --trust-model"
    assert not (tmp_path / "phi.csv").exists()
    # a model saved with joblib is refused the same way, before it is read
    code, _, err = _run(["report", "--model", user["dir"] / "model.joblib", "--data",
                         user["dir"] / "data.csv", "--out", tmp_path / "r.html"], capsys)
    _one_line_error(code, err, "--trust-model", "skops.io.dump")


def test_trust_model_loads_pickles(user, tmp_path, capsys):
    """With --trust-model a pickle is unpickled (its code runs: the flag says so)."""
    marker = tmp_path / "ran"
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps(_Crafted(marker)))
    code, _, err = _run(["explain", "--model", tmp_path / "evil.pkl", "--trust-model",
                         "--data", user["dir"] / "data.csv", "--out", tmp_path / "a.csv"],
                        capsys)
    _one_line_error(code, err, "not a fitted model")
    assert marker.exists()
    out = tmp_path / "phi.csv"
    code, _, err = _run(["explain", "--model", user["dir"] / "model.joblib", "--trust-model",
                         "--data", user["dir"] / "data.csv", "--rows", "7", "--out", out],
                        capsys)
    assert code == 0, err
    _treeshap_margin(user["model"], user["X"], pd.read_csv(out, index_col="row"))


def test_trust_model_help_says_why(capsys):
    for command in ("report", "explain"):
        with pytest.raises(SystemExit) as info:
            main([command, "--help"])
        assert info.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "--trust-model" in text and "--trust-type TYPE" in text
        assert "runs code from the file" in text and "skops" in text


@pytest.fixture(scope="module")
def skops_model(user):
    sio = pytest.importorskip("skops.io")
    path = user["dir"] / "model.skops"
    sio.dump(user["model"], path)
    untrusted = sio.get_untrusted_types(file=path)
    assert untrusted  # skops does not trust HGB's tree nodes by default
    return path, untrusted


def test_skops_untrusted_types_are_listed_and_refused(user, skops_model, tmp_path, capsys):
    path, untrusted = skops_model
    out = tmp_path / "phi.csv"
    code, _, err = _run(["explain", "--model", path, "--data", user["dir"] / "data.csv",
                         "--out", out], capsys)
    _one_line_error(code, err, "--trust-type", *untrusted)
    assert not out.exists()
    # trusting only some of the listed types is not enough
    if len(untrusted) > 1:
        code, _, err = _run(["explain", "--model", path, "--trust-type", untrusted[0],
                             "--data", user["dir"] / "data.csv", "--out", out], capsys)
        _one_line_error(code, err, untrusted[1])


@pytest.mark.parametrize("how", ["trust_type", "trust_model"])
def test_skops_model_is_explained(how, user, skops_model, tmp_path, capsys):
    path, untrusted = skops_model
    flags = (["--trust-model"] if how == "trust_model"
             else [a for t in untrusted for a in ("--trust-type", t)])
    out = tmp_path / "phi.csv"
    code, stdout, err = _run(["explain", "--model", path, *flags, "--data",
                              user["dir"] / "data.csv", "--rows", "9", "--out", out], capsys)
    assert code == 0, err
    _treeshap_margin(user["model"], user["X"], pd.read_csv(out, index_col="row"))


def test_trust_type_is_for_skops_files(user, tmp_path, capsys):
    code, _, err = _run(["explain", "--model", user["dir"] / "model.joblib", "--trust-model",
                         "--trust-type", "builtins.dict", "--data", user["dir"] / "data.csv",
                         "--out", tmp_path / "a.csv"], capsys)
    _one_line_error(code, err, "--trust-type", ".skops")
    for flag in (["--trust-model"], ["--trust-type", "builtins.dict"]):
        code, _, err = _run(["explain", *flag, "--out", tmp_path / "a.csv"], capsys)
        _one_line_error(code, err, flag[0], "--model")


def test_skops_missing_says_pip_install(user, tmp_path, capsys, monkeypatch):
    (tmp_path / "m.skops").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    monkeypatch.setitem(sys.modules, "skops", None)
    monkeypatch.setitem(sys.modules, "skops.io", None)
    code, _, err = _run(["explain", "--model", tmp_path / "m.skops", "--data",
                         user["dir"] / "data.csv", "--out", tmp_path / "a.csv"], capsys)
    _one_line_error(code, err, "pip install skops")


def test_skops_garbage_is_one_line(user, tmp_path, capsys):
    pytest.importorskip("skops.io")
    marker = tmp_path / "pwned"
    # a pickle named .skops is not unpickled either
    (tmp_path / "m.skops").write_bytes(pickle.dumps(_Crafted(marker)))
    code, _, err = _run(["explain", "--model", tmp_path / "m.skops", "--trust-model",
                         "--data", user["dir"] / "data.csv", "--out", tmp_path / "a.csv"],
                        capsys)
    _one_line_error(code, err, "cannot load model from", "m.skops")
    assert not marker.exists()


def _rewrite_skops(src, dst, edit_schema=None, extra=None):
    """Copy the skops archive ``src`` to ``dst``, editing its schema and adding members."""
    import json
    import zipfile

    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    if edit_schema is not None:
        schema = json.loads(members["schema.json"])
        edit_schema(schema)
        members["schema.json"] = json.dumps(schema).encode()
    with zipfile.ZipFile(dst, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
        for name, data, method in extra or ():
            z.writestr(name, data, compress_type=method)
    return dst


def test_skops_type_names_are_escaped_and_shell_quoted(user, skops_model, tmp_path, capsys):
    """A type name from the file cannot drive the terminal, nor the suggested command."""
    path, untrusted = skops_model
    hostile = "HistGradientBoostingClassifier\x1b[2K\r\x1b[1Asklearn-xai: all good"

    def rename(schema):
        schema["__module__"], schema["__class__"] = "evil", hostile

    crafted = _rewrite_skops(path, tmp_path / "crafted.skops", rename)
    code, _, err = _run(["explain", "--model", crafted, "--data", user["dir"] / "data.csv",
                         "--out", tmp_path / "phi.csv"], capsys)
    line = _one_line_error(code, err, "control characters", "do not trust it")
    assert "\x1b" not in err and "\r" not in err
    assert repr("evil." + hostile) in line  # shown escaped, as a Python string
    assert "--trust-type evil." not in line  # and never offered as a command
    for t in untrusted:  # the genuine types are still listed, and offered
        assert f"--trust-type {t}" in line
    assert not (tmp_path / "phi.csv").exists()

    # a printable name with shell syntax is offered shell-quoted
    def shell(schema):
        schema["__module__"], schema["__class__"] = "evil", "X; touch pwned $(id)"

    crafted = _rewrite_skops(path, tmp_path / "shell.skops", shell)
    code, _, err = _run(["explain", "--model", crafted, "--data", user["dir"] / "data.csv",
                         "--out", tmp_path / "phi.csv"], capsys)
    line = _one_line_error(code, err)
    assert "--trust-type 'evil.X; touch pwned $(id)'" in line
    assert "control characters" not in line


def _declare_size(path, member, size):
    """Make the central directory of the zip ``path`` declare ``size`` bytes for ``member``
    (a lying header)."""
    import struct

    data = bytearray(path.read_bytes())
    name = member.encode()
    at = 0
    while True:
        at = data.index(b"PK\x01\x02", at)
        (name_len,) = struct.unpack("<H", data[at + 28:at + 30])
        if bytes(data[at + 46:at + 46 + name_len]) == name:
            break
        at += 4
    data[at + 24:at + 28] = struct.pack("<L", size)
    path.write_bytes(bytes(data))


def test_skops_zip_bomb_is_refused_before_decompressing(user, skops_model, tmp_path,
                                                        capsys):
    import zipfile

    path, untrusted = skops_model
    trust = [a for t in untrusted for a in ("--trust-type", t)]
    zeros = bytes(50 * 2**20)  # 50 MiB of zeros deflate to about 50 KiB
    bomb = _rewrite_skops(path, tmp_path / "bomb.skops",
                          extra=[("zeros.npy", zeros, zipfile.ZIP_DEFLATED)])
    assert bomb.stat().st_size < 2**20
    argv = ["explain", "--model", bomb, *trust, "--data", user["dir"] / "data.csv",
            "--rows", "3", "--out", tmp_path / "phi.csv"]
    code, _, err = _run(argv, capsys)
    _one_line_error(code, err, "ratio", "above the limit of 200:1", "--max-model-ratio")
    # a declared total above --max-model-size is refused whatever the ratio
    code, _, err = _run(argv + ["--max-model-ratio", "1e6", "--max-model-size", "10M"],
                        capsys)
    _one_line_error(code, err, "declares 50.", "above the limit of 10 MiB",
                    "--max-model-size")
    assert not (tmp_path / "phi.csv").exists()
    # raised limits load it (the extra member is not read by skops)
    code, _, err = _run(argv + ["--max-model-ratio", "1e6"], capsys)
    assert code == 0, err
    _treeshap_margin(user["model"], user["X"], pd.read_csv(tmp_path / "phi.csv",
                                                           index_col="row"))
    # a bzip2 member that declares less than it holds: zipfile would decompress it all
    liar = _rewrite_skops(path, tmp_path / "liar.skops",
                          extra=[("zeros.npy", zeros, zipfile.ZIP_BZIP2)])
    _declare_size(liar, "zeros.npy", 1000)
    assert zipfile.ZipFile(liar).getinfo("zeros.npy").file_size == 1000
    code, _, err = _run(argv[:2] + [liar] + argv[3:] + ["--max-model-ratio", "1e6"], capsys)
    _one_line_error(code, err, "zeros.npy", "more than the 1000 bytes it declares")
    # the options are checked
    with pytest.raises(SystemExit):
        main(["explain", "--max-model-size", "lots", "--out", str(tmp_path / "a.csv")])
    assert "--max-model-size" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------
# columns
# ------------------------------------------------------------------------------------------


def test_reordered_columns_are_an_error(user, tmp_path, capsys):
    X = user["X"]
    data = tmp_path / "swapped.csv"
    X[["income", "age", "debt"]].to_csv(data, index=False)
    out = tmp_path / "phi.csv"
    code, _, err = _run(["explain", "--model", user["dir"] / "model.joblib", "--trust-model",
                         "--data", data, "--out", out], capsys)
    _one_line_error(code, err, "order", "age, income, debt", "income, age, debt")
    assert not out.exists()
    # an extra column (dropped with a note) does not count as a reordering
    X.assign(id=np.arange(len(X)))[["id", *FEATURES]].to_csv(data, index=False)
    code, _, err = _run(["explain", "--model", user["dir"] / "model.joblib", "--trust-model",
                         "--data", data, "--rows", "4", "--out", out], capsys)
    assert code == 0, err
    assert "not used by the model were left out: id" in err
    _treeshap_margin(user["model"], X, pd.read_csv(out, index_col="row"))


def test_duplicated_csv_header_is_refused(user, tmp_path, capsys):
    """pandas would rename the second 'debt' to 'debt.1' and the first would be used."""
    X = user["X"]
    data = tmp_path / "dup.csv"
    X.assign(other=-X["debt"]).to_csv(data, index=False, header=[*FEATURES, "debt"])
    assert data.read_text().splitlines()[0] == "age,income,debt,debt"
    out = tmp_path / "phi.csv"
    for argv in (["explain", "--model", user["dir"] / "model.joblib", "--trust-model"],
                 ["explain", "--target", "age"]):
        code, _, err = _run([*argv, "--data", data, "--out", out], capsys)
        line = _one_line_error(code, err, "dup.csv", "more than once: 'debt'")
        assert "debt.1" not in line
    assert not out.exists()


def test_model_without_feature_names_takes_columns_by_position(tmp_path, capsys):
    X, y = _frame()
    model = _hgb().fit(X.to_numpy(), y)  # no feature names
    joblib.dump(model, tmp_path / "np.joblib")
    data = tmp_path / "data.csv"
    X[["debt", "age", "income"]].to_csv(data, index=False)
    out = tmp_path / "phi.csv"
    code, _, err = _run(["explain", "--model", tmp_path / "np.joblib", "--trust-model",
                         "--data", data, "--rows", "6", "--out", out], capsys)
    assert code == 0, err
    # the user is told how the columns were matched, in the file's order
    assert "no feature names" in err and "by position" in err
    assert "debt, age, income" in err
    got = pd.read_csv(out, index_col="row")
    assert list(got.columns) == ["base_value:margin(1)", "debt", "age", "income"]
    ref = TreeShapExplainer(FrozenEstimator(model)).fit(X[["debt", "age", "income"]].to_numpy())
    ref = ref.explain(X[["debt", "age", "income"]].to_numpy()[:6])
    np.testing.assert_allclose(got.iloc[:, 1:].to_numpy(), ref.values, atol=1e-12)
    # the report states it too
    report = tmp_path / "r.html"
    code, _, err = _run(["report", "--model", tmp_path / "np.joblib", "--trust-model",
                         "--data", data, "--explainer", "tree", "--rows", "1",
                         "--global-rows", "10", "--out", report], capsys)
    assert code == 0, err
    assert "by position" in report.read_text(encoding="utf-8")
    # the count must match
    X[["debt", "age"]].to_csv(data, index=False)
    code, _, err = _run(["explain", "--model", tmp_path / "np.joblib", "--trust-model",
                         "--data", data, "--out", out], capsys)
    _one_line_error(code, err, "takes 3 features", "has 2 columns")


def _ensembles():
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import (
        AdaBoostClassifier,
        BaggingClassifier,
        RandomForestClassifier,
    )

    return [RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0),
            BaggingClassifier(n_estimators=3, random_state=0),
            AdaBoostClassifier(n_estimators=3, random_state=0),
            CalibratedClassifierCV(_hgb(), cv=2)]


@pytest.mark.parametrize("model", _ensembles(), ids=lambda m: type(m).__name__)
def test_an_ensemble_with_an_estimator_attribute_keeps_its_feature_names(model):
    """``model.estimator`` of an ensemble is its unfitted template, not a FrozenEstimator's
    model: the names are the fitted ensemble's own (a FrozenEstimator is still unwrapped)."""
    from sklearn_xai._report import _model_columns

    X, y = _frame()
    model.fit(X, y)
    assert _model_columns(model) == (FEATURES, 3)
    assert _model_columns(FrozenEstimator(model)) == (FEATURES, 3)


def test_a_random_forest_fitted_on_a_frame_is_matched_by_name(tmp_path, capsys):
    """An ``id`` column is left out with a note (it used to reach the forest, which refused
    it), no note says "no feature names", and a reordered file is an error."""
    from sklearn.ensemble import RandomForestClassifier

    X, y = _frame()
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    joblib.dump(model, tmp_path / "rf.joblib")
    data, out = tmp_path / "data.csv", tmp_path / "phi.csv"
    X.assign(id=np.arange(len(X)))[["id", *FEATURES]].to_csv(data, index=False)
    argv = ["--model", tmp_path / "rf.joblib", "--trust-model", "--data", data]
    code, _, err = _run(["explain", *argv, "--rows", "5", "--out", out], capsys)
    assert code == 0, err
    assert "not used by the model were left out: id" in err
    assert "no feature names" not in err
    got = pd.read_csv(out, index_col="row")
    assert list(got.index) == [0, 1, 2, 3, 4] and list(got.columns[1:]) == FEATURES
    ref = TreeShapExplainer(FrozenEstimator(model)).fit(X).explain(X.iloc[:5])
    np.testing.assert_allclose(got[FEATURES].to_numpy(dtype=float), ref.values, atol=1e-12)
    np.testing.assert_allclose(got.iloc[:, 0].to_numpy(dtype=float), ref.base_values,
                               atol=1e-12)
    code, stdout, err = _run(["audit", *argv, "--rows", "40", "--background", "80"], capsys)
    assert code == 0, err
    assert "left out: id" in err and "Off-manifold audit of 40 rows and 3 features" in stdout
    X[["income", "age", "debt"]].to_csv(data, index=False)
    code, _, err = _run(["report", *argv, "--out", tmp_path / "r.html"], capsys)
    _one_line_error(code, err, "not in the order", "age, income, debt", "income, age, debt")


def test_rows_dropped_for_a_missing_value_keep_their_row_in_the_file(tmp_path, capsys):
    """``--data --target`` trains on the complete rows; ``row`` is still the file's row."""
    from sklearn_xai._report import _gbm_pipeline

    X, y = _frame()
    X.loc[[1, 2], "income"] = np.nan
    X.loc[5, "debt"] = np.nan
    data, out = tmp_path / "data.csv", tmp_path / "phi.csv"
    X.assign(label=y).to_csv(data, index=False)
    code, _, err = _run(["explain", "--data", data, "--target", "label", "--rows", "5",
                         "--out", out], capsys)
    assert code == 0, err
    assert "3 of 120 rows with a missing value dropped" in err
    got = pd.read_csv(out, index_col="row")
    assert list(got.index) == [0, 3, 4, 6, 7]
    # the same values as the default model, trained here, explaining the file's rows
    file = pd.read_csv(data)
    complete = file.notna().all(axis=1)
    model, _ = _gbm_pipeline([], FEATURES, "hgb", 0)
    model.fit(file.loc[complete, FEATURES], file.loc[complete, "label"])
    rows = file.loc[got.index, FEATURES]
    ref = TreeShapExplainer(FrozenEstimator(model)).fit(rows).explain(rows)
    np.testing.assert_allclose(got[FEATURES].to_numpy(dtype=float), ref.values, atol=1e-12)
    np.testing.assert_allclose(got.to_numpy(dtype=float).sum(axis=1),
                               model.decision_function(rows), atol=1e-9)


def _lightgbm_model(columns):
    lgb = pytest.importorskip("lightgbm")
    X, y = _frame(columns=columns)
    model = lgb.LGBMClassifier(n_estimators=10, num_leaves=4, verbose=-1, random_state=0)
    return model.fit(X, y), X


def test_lightgbm_takes_its_training_file_with_a_space_in_a_name(tmp_path, capsys):
    """LightGBM names the column "inc ome" "inc_ome"; its own training file is accepted,
    the column used under the model's name, with a note."""
    model, X = _lightgbm_model(["age", "inc ome", "debt"])
    assert list(model.feature_names_in_) == ["age", "inc_ome", "debt"]
    joblib.dump(model, tmp_path / "lgb.joblib")
    data, out = tmp_path / "data.csv", tmp_path / "phi.csv"
    X.assign(id=np.arange(len(X))).to_csv(data, index=False)
    argv = ["--model", tmp_path / "lgb.joblib", "--trust-model", "--data", data]
    code, _, err = _run(["explain", *argv, "--rows", "6", "--out", out], capsys)
    assert code == 0, err
    assert "'inc ome' as 'inc_ome'" in err and "left out: id" in err
    got = pd.read_csv(out, index_col="row")
    assert list(got.columns[1:]) == ["age", "inc_ome", "debt"] and len(got) == 6
    named = X.set_axis(["age", "inc_ome", "debt"], axis=1)
    ref = TreeShapExplainer(FrozenEstimator(model)).fit(named).explain(named.iloc[:6])
    np.testing.assert_allclose(got.iloc[:, 1:].to_numpy(dtype=float), ref.values,
                               atol=1e-12)
    np.testing.assert_allclose(got.to_numpy(dtype=float).sum(axis=1),
                               model.predict(X.iloc[:6], raw_score=True), atol=1e-9)
    # the order is still checked
    X[["inc ome", "age", "debt"]].to_csv(data, index=False)
    code, _, err = _run(["explain", *argv, "--out", out], capsys)
    _one_line_error(code, err, "not in the order", "age, inc_ome, debt")


def test_a_space_is_not_an_underscore_for_other_models(user, tmp_path, capsys):
    X, y = _frame(columns=["age", "inc_ome", "debt"])
    joblib.dump(_hgb().fit(X, y), tmp_path / "hgb.joblib")
    data = tmp_path / "data.csv"
    X.rename(columns={"inc_ome": "inc ome"}).to_csv(data, index=False)
    code, _, err = _run(["explain", "--model", tmp_path / "hgb.joblib", "--trust-model",
                         "--data", data, "--out", tmp_path / "phi.csv"], capsys)
    _one_line_error(code, err, "expects columns missing", "inc_ome")


def test_two_columns_lightgbm_names_alike_are_an_error(tmp_path, capsys):
    model, X = _lightgbm_model(["age", "a b c", "debt"])
    joblib.dump(model, tmp_path / "lgb.joblib")
    data = tmp_path / "data.csv"
    X.assign(**{"a_b c": X["a b c"]}).rename(columns={"a b c": "a b_c"}).to_csv(
        data, index=False)
    code, _, err = _run(["explain", "--model", tmp_path / "lgb.joblib", "--trust-model",
                         "--data", data, "--out", tmp_path / "phi.csv"], capsys)
    _one_line_error(code, err, "feature 'a_b_c'", "'a b_c', 'a_b c'")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_feature_named_row_leaves_the_index_column_as_underscore_row(suffix, tmp_path,
                                                                      capsys):
    """The matrix has one column per header: the index column is then ``_row``."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    columns = ["row", "income", "_row2"]
    X, y = _frame(columns=columns)
    model = _hgb().fit(X, y)
    joblib.dump(model, tmp_path / "m.joblib")
    X.to_csv(tmp_path / "data.csv", index=False)
    out = tmp_path / f"phi{suffix}"
    code, _, err = _run(["explain", "--model", tmp_path / "m.joblib", "--trust-model",
                         "--data", tmp_path / "data.csv", "--rows", "4", "--out", out],
                        capsys)
    assert code == 0, err
    assert "index column (the file's row) is named '_row'" in err
    if suffix == ".csv":
        with open(out, newline="", encoding="utf-8") as fh:
            assert next(csv.reader(fh)) == ["_row", "base_value:margin(1)", *columns]
        got = pd.read_csv(out, index_col="_row")
    else:
        got = pd.read_parquet(out)
        assert got.index.name == "_row"
    assert list(got.index) == [0, 1, 2, 3] and list(got.columns[1:]) == columns
    ref = TreeShapExplainer(FrozenEstimator(model)).fit(X).explain(X.iloc[:4])
    np.testing.assert_allclose(got[columns].to_numpy(dtype=float), ref.values, atol=1e-12)


def test_index_name_avoids_every_column():
    from sklearn_xai._report import index_name

    assert index_name(["a", "b"]) == "row"
    assert index_name(["row", "b"]) == "_row"
    assert index_name(["row", "_row"]) == "__row"


# ------------------------------------------------------------------------------------------
# spreadsheet formula injection
# ------------------------------------------------------------------------------------------


_DANGEROUS = ['=HYPERLINK("http://example.com","x")', "+plus", "-minus", "@at", "\ttab",
              "\rcr"]


def test_csv_headers_are_spreadsheet_safe(tmp_path, capsys):
    names = _DANGEROUS + ["plain"]
    X, y = _frame(columns=names)
    model = _hgb().fit(X, y)
    joblib.dump(model, tmp_path / "m.joblib")
    # quoted, so that the carriage return in a name survives the round trip
    X.to_csv(tmp_path / "data.csv", index=False, quoting=csv.QUOTE_NONNUMERIC)
    out = tmp_path / "phi.csv"
    code, _, err = _run(["explain", "--model", tmp_path / "m.joblib", "--trust-model",
                         "--data", tmp_path / "data.csv", "--rows", "20", "--out", out],
                        capsys)
    assert code == 0, err
    with open(out, newline="", encoding="utf-8") as fh:
        header, *body = list(csv.reader(fh))
    assert header == ["row", "base_value:margin(1)"] + ["'" + n for n in _DANGEROUS] + ["plain"]
    # numbers stay numbers, negative ones included
    values = np.array([[float(c) for c in r] for r in body])
    assert (values[:, 2:] < 0).any()
    assert not any(c.startswith("'") for r in body for c in r)
    ref = TreeShapExplainer(FrozenEstimator(model)).fit(X).explain(X.iloc[:20])
    np.testing.assert_allclose(values[:, 2:], ref.values, atol=1e-12)
    np.testing.assert_allclose(values[:, 1:].sum(axis=1), model.decision_function(X.iloc[:20]),
                               atol=1e-9)


def test_spreadsheet_safe_escapes_only_text():
    from sklearn_xai._report import _spreadsheet_safe

    frame = pd.DataFrame({"=a": ["=1+1", "-0.5", "ok", "@x"], "b": [-0.5, 1.0, -2.0, 3.0],
                          "c": [1, -2, 3, -4]},
                         index=pd.Index(["+r", "r", "\tr", "-1"], name="-i"))
    safe = _spreadsheet_safe(frame)
    assert list(safe.columns) == ["'=a", "b", "c"]
    assert safe.index.name == "'-i"
    assert list(safe.index) == ["'+r", "r", "'\tr", "'-1"]
    assert list(safe["'=a"]) == ["'=1+1", "'-0.5", "ok", "'@x"]
    np.testing.assert_array_equal(safe["b"], frame["b"])
    np.testing.assert_array_equal(safe["c"], frame["c"])
    assert safe["b"].dtype == np.float64 and safe["c"].dtype == frame["c"].dtype
    assert list(frame.columns) == ["=a", "b", "c"]  # the input is not changed


# ------------------------------------------------------------------------------------------
# arguments
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", ["-1", "1.5", "x", str(2**32)])
def test_seed_must_be_a_non_negative_integer(seed, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["explain", "--seed", seed, "--out", str(tmp_path / "a.csv")])
    err = capsys.readouterr().err
    line = _one_line_error(info.value.code, err, "--seed", "non-negative integer")
    assert "random_state" not in line
    assert not (tmp_path / "a.csv").exists()


def test_seed_zero_and_large_are_accepted():
    from sklearn_xai.__main__ import build_parser

    for seed in ("0", str(2**32 - 1)):
        args = build_parser().parse_args(["explain", "--seed", seed, "--out", "a.csv"])
        assert args.seed == int(seed)


# ------------------------------------------------------------------------------------------
# every registered explainer (sklearn_xai/_registry.py) on the command line
# ------------------------------------------------------------------------------------------


def _registered_cli_names():
    from sklearn_xai._report import EXPLAINERS

    return list(EXPLAINERS)


@pytest.mark.parametrize("name", _registered_cli_names())
def test_every_registered_explainer_runs_on_the_command_line(name, user, tmp_path, capsys):
    """``explain --explainer NAME`` (an attribution explainer) writes its matrix and
    ``report --explainer NAME`` shows its results: in the comparison table, or as
    counterfactuals of the rejected rows -- never a silent skip."""
    import html

    from sklearn_xai._report import _CLASSES, ATTRIBUTION_EXPLAINERS

    label = _CLASSES[name]._label or _CLASSES[name].__name__
    data = ["--model", user["dir"] / "model.joblib", "--trust-model", "--data",
            user["dir"] / "data.csv", "--background", "60"]
    if name in ATTRIBUTION_EXPLAINERS:
        out = tmp_path / "phi.csv"
        code, stdout, err = _run(["explain", *data, "--rows", "3", "--explainer", name,
                                  "--out", out], capsys)
        assert code == 0, err
        assert f"fit {label} on 60 rows" in err
        got = pd.read_csv(out, index_col="row")
        assert len(got) == 3 and list(got.columns[1:]) == FEATURES, got.columns
        assert got.columns[0].startswith("base_value:")
        assert np.all(np.isfinite(got.to_numpy(dtype=float)))
        assert not np.allclose(got[FEATURES].to_numpy(dtype=float), 0)
    page = tmp_path / "r.html"
    code, _, err = _run(["report", *data, "--explainer", name, "--rows", "2",
                         "--global-rows", "10", "--out", page], capsys)
    assert code == 0, err
    assert f"{label} on" in err and "skipped" not in err, err
    text = page.read_text(encoding="utf-8")
    summary = text[text.index('id="summary"'):text.index('id="treeshap-global"')]
    assert html.escape(label) in summary
    if name in ATTRIBUTION_EXPLAINERS:
        section = text[text.index('id="attribution-comparison"'):
                       text.index('id="counterfactuals"')]
        assert f"{html.escape(label)} (" in section, section[:500]
        assert re.search(r"<td>[+-]\d+\.\d{4} \[\d+\]</td>", section)
    else:
        section = text[text.index('id="counterfactuals"'):text.index('id="pareto-scatter"')]
        assert f"<h4>{html.escape(label)}" in section, section[:500]


def test_a_name_the_report_cannot_run_is_refused(monkeypatch, tmp_path, capsys):
    """A registered class with a ``_cli_name`` that is neither an attribution nor a
    recourse explainer is refused with a message naming it, never skipped."""
    from sklearn_xai import KnockoffSAGE, _report

    monkeypatch.setattr(_report, "_CLASSES", {**_report._CLASSES, "sage": KnockoffSAGE})
    monkeypatch.setattr(_report, "_UNRUNNABLE", ("sage",))
    out = tmp_path / "r.html"
    code, _, err = _run(["report", "--explainer", "sage", "--out", out], capsys)
    _one_line_error(code, err, "cannot run --explainer sage (KnockoffSAGE)")
    code, _, err = _run(["explain", "--explainer", "sage", "--out", tmp_path / "a.csv"],
                        capsys)
    _one_line_error(code, err, "cannot run --explainer sage (KnockoffSAGE)")
    assert not out.exists()


_HOSTILE_PIECES = ["\x1b[2K", "\r", "\x1b[1A", "\x07", "\x08", "\x7f", "\x9b31m", "\u202e",
                   "\x00", "\n", "\t", "$(id)", "; rm -rf x", "'", '"', "`", " ", "Classifier"]


@settings(max_examples=24, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(pieces=st.lists(st.sampled_from(_HOSTILE_PIECES), min_size=1, max_size=5))
def test_generated_hostile_skops_names_never_reach_the_terminal(pieces, user, skops_model,
                                                                 tmp_path_factory, capsys):
    """Generated type names (control characters, bidi overrides, shell syntax): stderr holds
    no raw non-printable character, and every offered ``--trust-type`` is one shell word
    naming a printable type."""
    import shlex

    from ._fuzz_counter import CASES

    path, _ = skops_model
    name = "X" + "".join(pieces)
    tmp = tmp_path_factory.mktemp("hostile")

    def rename(schema):
        schema["__module__"], schema["__class__"] = "evil", name

    crafted = _rewrite_skops(path, tmp / "crafted.skops", rename)
    CASES[("cli", "hostile-skops-name")] += 1
    code, _, err = _run(["explain", "--model", crafted, "--data", user["dir"] / "data.csv",
                         "--out", tmp / "phi.csv"], capsys)
    assert code == 2
    assert all(c.isprintable() or c == "\n" for c in err), repr(err)
    for quoted in re.findall(r"--trust-type ((?:'[^']*'|[^\s'])+)", err):
        (word,) = shlex.split(quoted)  # one shell word
        assert word.isprintable()  # a name with a control character is never offered
        assert not word.startswith("evil.") or word == "evil." + name  # nor cut short
    assert not (tmp / "phi.csv").exists()


def _category_frame(n=240, seed=0):
    """A frame with a text category, a category of the strings "1", "2", "3" (read back
    from a CSV as the numbers 1, 2, 3), a category of the integers 10, 20, 30, a number,
    and empty cells in two category columns."""
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], n)
    grade = rng.choice(["1", "2", "3"], n)
    size = rng.choice([10, 20, 30], n)
    X = pd.DataFrame({
        "colour": pd.Categorical(colour, categories=["red", "green", "blue"]),
        "grade": pd.Categorical(grade, categories=["3", "1", "2"]),
        "size": pd.Categorical(size, categories=[30, 10, 20]),
        "income": rng.normal(size=n),
    })
    y = ((colour == "red") ^ (grade == "2") ^ (size == 20)
         ^ (X["income"].to_numpy() > 0.5)).astype(int)
    X.loc[[3, 7], "colour"] = np.nan
    X.loc[[4], "grade"] = np.nan
    return X, pd.Series(y, name="label")


def _category_model(library):
    """A LightGBM or XGBoost classifier fitted on :func:`_category_frame`; its raw output."""
    X, y = _category_frame()
    if library == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        model = lgb.LGBMClassifier(n_estimators=15, num_leaves=6, min_child_samples=5,
                                   verbose=-1, random_state=0).fit(X, y)
        return model, X, y, lambda Z: model.predict(Z, raw_score=True)
    xgb = pytest.importorskip("xgboost")
    if not hasattr(xgb.Booster, "get_categories"):
        pytest.skip("XGBoost < 3.1 stores no categories")
    model = xgb.XGBClassifier(n_estimators=15, max_depth=3, enable_categorical=True,
                              n_jobs=1, random_state=0).fit(X, y)
    return model, X, y, lambda Z: model.predict(Z, output_margin=True)


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_category_columns_read_from_csv_get_the_models_categories(library, tmp_path, capsys):
    """A LightGBM or XGBoost model fitted on pandas category columns takes its CSV file:
    the columns (text, and numbers for the labels "1", "2", "3" or the categories 10, 20,
    30) are given the model's categories in its order. The rows written are TreeSHAP of the
    category frame in memory and add up to the model's own raw output; missing cells stay
    missing. ``audit`` takes the file as well. (Both libraries refused it: "categorical_feature
    do not match", "DataFrame.dtypes for data must be int, float, bool or category".)"""
    model, X, y, raw = _category_model(library)
    joblib.dump(model, tmp_path / "m.joblib")
    data, out = tmp_path / "data.csv", tmp_path / "phi.csv"
    X.assign(label=y).to_csv(data, index=False)
    assert pd.read_csv(data)["grade"].dtype.kind == "f"  # 1.0, 2.0, 3.0 and an empty cell
    argv = ["--model", tmp_path / "m.joblib", "--trust-model", "--data", data,
            "--target", "label"]
    code, _, err = _run(["explain", *argv, "--rows", "12", "--out", out], capsys)
    assert code == 0, err
    assert "given the categories the model was fitted on" in err
    assert "colour, grade, size" in err
    got = pd.read_csv(out, index_col="row")
    features = list(X.columns)
    assert list(got.index) == list(range(12)) and list(got.columns[1:]) == features
    ref = TreeShapExplainer(FrozenEstimator(model)).fit(X).explain(X.iloc[:12])
    values = got[features].to_numpy(dtype=float)
    base = got.iloc[:, 0].to_numpy(dtype=float)
    np.testing.assert_allclose(values, ref.values, atol=1e-9)
    np.testing.assert_allclose(base, ref.base_values, atol=1e-9)
    np.testing.assert_allclose(values.sum(axis=1) + base, raw(X.iloc[:12]), atol=1e-5)
    # rows 3, 4 and 7 hold an empty cell: their output is the model's on a missing value
    assert X.iloc[:12].isna().any(axis=1).sum() == 3
    # the audit's knockoff sampler takes complete rows only
    X.dropna().assign(label=y).to_csv(data, index=False)
    code, stdout, err = _run(["audit", *argv, "--rows", "40", "--background", "120"], capsys)
    assert code == 0, err
    assert "Off-manifold audit of 40 rows and 4 features" in stdout


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_a_value_not_among_the_models_categories_is_an_error(library, tmp_path, capsys):
    """A cell that is none of the model's categories is not guessed (LightGBM would take it
    as missing, XGBoost would not): one line names the column, the values and the rows."""
    model, X, y, _ = _category_model(library)
    joblib.dump(model, tmp_path / "m.joblib")
    data, out = tmp_path / "data.csv", tmp_path / "phi.csv"
    file = X.astype({"colour": object})
    file.loc[[0, 5], "colour"] = "purple"
    file.assign(label=y).to_csv(data, index=False)
    code, _, err = _run(["explain", "--model", tmp_path / "m.joblib", "--trust-model",
                         "--data", data, "--target", "label", "--out", out], capsys)
    _one_line_error(code, err, "column 'colour'", "'purple' (2 rows)",
                    "'red', 'green', 'blue'", "leave the cells empty")
    assert not out.exists()


def test_audit_help_names_no_default_model(capsys):
    """``audit`` needs --model and --data (doc/cli.rst): its help described the default
    model of report/explain (--gbm, "train the default model" in --target and --seed)."""
    def text(command):
        with pytest.raises(SystemExit) as info:
            main([command, "--help"])
        assert info.value.code == 0
        return " ".join(capsys.readouterr().out.split())

    audit = text("audit")
    assert "default model" not in audit and "--gbm" not in audit and "train" not in audit
    assert "(required, with --data)" in audit and "removed before auditing" in audit
    assert "random_state of the audit (OffManifoldAudit)" in audit
    for command in ("report", "explain"):
        other = text(command)
        assert "--gbm {hgb,lightgbm}" in other and "train the default model" in other
    code, _, err = _run(["audit", "--data", "x.csv"], capsys)
    _one_line_error(code, err, "audit needs --model")
    with pytest.raises(SystemExit) as info:
        main(["audit", "--gbm", "lightgbm"])
    assert info.value.code == 2
    assert "unrecognized arguments: --gbm" in capsys.readouterr().err
