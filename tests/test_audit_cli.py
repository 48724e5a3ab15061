"""``python -m sklearn_xai audit`` and the report's off-manifold audit section: the same
safe model loading as ``explain``, the library's own verdict, one-line errors."""

import re
from html.parser import HTMLParser

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from sklearn_xai import OffManifoldAudit
from sklearn_xai.__main__ import main
from tests._attack import OODAdversaryClassifier, german_attack_data
from tests._cli import one_line_error as _one_line_error
from tests._cli import run_cli as _run


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit")
    X_train, _, y_train, _, names, _ = german_attack_data()
    X = pd.DataFrame(X_train, columns=names)
    attack = OODAdversaryClassifier(names.index("Gender"),
                                    names.index("LoanRateAsPercentOfIncome"), background=10,
                                    n_hybrids=20000, repeat_real=5, random_state=0).fit(X_train)
    honest = LogisticRegression(max_iter=1000).fit(X, y_train)
    joblib.dump(attack, d / "attack.joblib")
    joblib.dump(honest, d / "honest.joblib")
    X.to_csv(d / "data.csv", index=False)
    return {"dir": d, "X": X, "attack": attack, "honest": honest}


def test_audit_flags_the_attack_as_the_library_does(files, capsys):
    d = files["dir"]
    out = d / "features.csv"
    code, stdout, _ = _run(["audit", "--model", d / "attack.joblib", "--trust-model",
                            "--data", d / "data.csv", "--rows", "120", "--background", "600",
                            "--seed", "4", "--out", out, "--fail-on-flag"], capsys)
    assert code == 3  # flagged, with --fail-on-flag
    assert "audit fitted on the first 600 rows of the data; 120 rows audited" in stdout
    assert "FLAGGED" in stdout and "Gender is 1st with knockoff imputation" in stdout
    # the table is the library's own result on the same rows and seed
    X = files["X"]
    ref = OffManifoldAudit(random_state=4).fit(X.iloc[:600]).audit(files["attack"],
                                                                   X.iloc[:120])
    got = pd.read_csv(out, index_col=0)
    assert list(got.index) == list(ref.features.index)
    np.testing.assert_allclose(got["p_adjusted"].to_numpy(),
                               ref.features["p_adjusted"].to_numpy(), rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(got["knockoff_importance"].to_numpy(),
                               ref.features["knockoff_importance"].to_numpy(), rtol=1e-9)
    assert f"p = {ref.p_value:.3g}" in stdout


def test_audit_passes_an_honest_model(files, capsys):
    d = files["dir"]
    code, stdout, _ = _run(["audit", "--model", d / "honest.joblib", "--trust-model",
                            "--data", d / "data.csv", "--rows", "120", "--fail-on-flag"],
                           capsys)
    assert code == 0
    assert "not flagged" in stdout


@pytest.mark.parametrize("case", ["untrusted", "no_model", "no_data", "out_extension"])
def test_audit_errors_are_one_line(files, capsys, case):
    d = files["dir"]
    argv, fragments = {
        "untrusted": (["--model", d / "attack.joblib", "--data", d / "data.csv"],
                      ["--trust-model"]),
        "no_model": (["--data", d / "data.csv"], ["audit needs --model"]),
        "no_data": (["--model", d / "attack.joblib", "--trust-model"],
                    ["audit needs --model"]),
        "out_extension": (["--model", d / "attack.joblib", "--trust-model", "--data",
                           d / "data.csv", "--out", d / "f.xlsx"], ["expected a .csv"]),
    }[case]
    code, _, err = _run(["audit", *argv], capsys)
    _one_line_error(code, err, *fragments)


def test_audit_alpha_is_checked(capsys):
    with pytest.raises(SystemExit) as info:
        main(["audit", "--alpha", "1.5"])
    assert info.value.code == 2
    assert "expected a number between 0 and 1" in capsys.readouterr().err


class _Sections(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = []

    def handle_starttag(self, tag, attrs):
        if "id" in dict(attrs):
            self.ids.append(dict(attrs)["id"])


def _audit_section(html):
    match = re.search(r'<section id="offmanifold-audit">(.*?)</section>', html, re.S)
    assert match, "no audit section"
    return match.group(1)


def test_report_audit_section_is_opt_in(files, tmp_path, capsys):
    d = files["dir"]
    base = ["report", "--model", d / "honest.joblib", "--trust-model", "--data",
            d / "data.csv", "--explainer", "tree", "--rows", "1", "--global-rows", "80",
            "--background", "400"]
    # TreeSHAP cannot explain a logistic regression: skipped when named? use shear
    base[base.index("tree")] = "shear"
    plain, audited = tmp_path / "plain.html", tmp_path / "audited.html"
    assert _run([*base, "--out", plain], capsys)[0] == 0
    assert "Not run: pass --audit" in _audit_section(plain.read_text())
    assert _run([*base, "--audit", "--out", audited], capsys)[0] == 0
    html = audited.read_text()
    section = _audit_section(html)
    parser = _Sections()
    parser.feed(html)
    assert parser.ids.count("offmanifold-audit") == 1
    assert "not flagged" in section and "data:image/png;base64," in section
    assert "fitted on the first 400 background rows" in section
    assert "auditing the first 80 rows" in section
    # the verdict is the library's on the same rows and seed
    X = files["X"]
    ref = OffManifoldAudit(random_state=0).fit(X.iloc[:400]).audit(files["honest"],
                                                                   X.iloc[:80])
    assert f"p = {ref.p_value:.3g}" in section
