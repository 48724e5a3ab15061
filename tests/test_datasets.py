"""Tests of sklearn_xai.datasets.

Oracles: the counts in ``shared/data/README.md`` (checked there with Python's csv module), the
SHA-256 sums of the original files, an independent parse of the bundled files with ``csv``,
the UCI codebook ``german.doc``, and a row-by-row cross-check of the two German versions.
"""

import csv
import gzip
import hashlib
import io
import re
from importlib import resources

import numpy as np
import pandas as pd
import pytest

import sklearn_xai.datasets._loaders as loaders
from sklearn_xai.datasets import load_adult, load_german_credit, load_shared_dataset

ADULT_NUMERIC = ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"]


def _bundled_bytes(name):
    ref = resources.files("sklearn_xai.datasets").joinpath("data").joinpath(name)
    return gzip.decompress(ref.read_bytes())


def _shared_dir():
    """The shared/data folder, or None (tests that need it skip)."""
    try:
        path = loaders._find_shared_file("german/german.doc", None)
    except FileNotFoundError:
        return None
    return path.parent.parent


SHARED = _shared_dir()
needs_shared = pytest.mark.skipif(
    SHARED is None,
    reason="shared/data not found (set SKLEARN_XAI_SHARED_DATA to run the shared-data tests)",
)


@pytest.fixture(scope="module")
def adult_all():
    return load_adult(subset="all")


# ------------------------------------------------------------------------------- bundled files


@pytest.mark.parametrize(
    "gz, sha256",
    [
        ("adult.data.gz", "a6371542c4cd3528181b3dbe3fa10785f1d283cb365a740d539bc1dfd0754b47"),
        ("adult.test.gz", "ad8923b0d47796d077a097fc5c006a4663c98768863d378aa284eadae0eb871b"),
        ("german.data.gz", "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871"),
        (
            "german_processed.csv.gz",
            "d9b5f77d02823dea64aacf8edd3698e307d6ff11981edf63273c33d9dfe4d25c",
        ),
    ],
)
def test_bundled_files_are_the_originals(gz, sha256):
    # the README's SHA-256 of the copied originals: the bundled files were only gzipped
    assert hashlib.sha256(_bundled_bytes(gz)).hexdigest() == sha256
    attribution = (
        resources.files("sklearn_xai.datasets").joinpath("data").joinpath("ATTRIBUTION.txt")
    )
    text = attribution.read_text()
    assert sha256 in text and "CC BY 4.0" in text


# ------------------------------------------------------------------------------------- Adult


@pytest.mark.parametrize(
    "subset, n_rows, n_pos, n_complete",
    [("train", 32561, 7841, 30162), ("test", 16281, 3846, 15060), ("all", 48842, 11687, 45222)],
)
def test_adult_shapes_and_target(subset, n_rows, n_pos, n_complete):
    X, y = load_adult(subset=subset)
    assert X.shape == (n_rows, 14)
    assert y.shape == (n_rows,) and y.name == "income_gt_50k" and y.dtype == np.int64
    assert set(np.unique(y)) == {0, 1}
    assert int(y.sum()) == n_pos
    assert list(X.index) == list(range(n_rows))
    Xc, yc = load_adult(subset=subset, drop_missing=True)
    assert Xc.shape == (n_complete, 14) and len(yc) == n_complete
    assert not Xc.isna().any().any()
    assert Xc.index.equals(yc.index)


def test_adult_positive_rate(adult_all):
    _, y = adult_all
    assert round(100 * y.mean(), 2) == 23.93


def test_adult_dtypes_and_missing():
    for subset, missing in [
        ("train", {"workclass": 1836, "occupation": 1843, "native_country": 583}),
        ("test", {"workclass": 963, "occupation": 966, "native_country": 274}),
    ]:
        X, _ = load_adult(subset=subset)
        for col in X.columns:
            if col in ADULT_NUMERIC:
                assert X[col].dtype == np.int64, col
            else:
                assert isinstance(X[col].dtype, pd.CategoricalDtype), col
                assert "?" not in X[col].cat.categories
                # ", " separators: no level keeps a leading space
                assert not any(c.startswith(" ") for c in X[col].cat.categories)
        counts = X.isna().sum()
        assert counts[counts > 0].to_dict() == missing


def test_adult_subsets_share_categories(adult_all):
    Xtr, _ = load_adult(subset="train")
    Xte, _ = load_adult(subset="test")
    for col in Xtr.select_dtypes("category").columns:
        assert Xtr[col].dtype == Xte[col].dtype == adult_all[0][col].dtype
    # Holand-Netherlands occurs only in train, and is still a level of test
    assert "Holand-Netherlands" in Xte["native_country"].cat.categories
    assert (Xte["native_country"] == "Holand-Netherlands").sum() == 0


def test_adult_matches_independent_csv_parse(adult_all):
    X, y = adult_all
    rows = []
    for gz in ("adult.data.gz", "adult.test.gz"):
        reader = csv.reader(io.StringIO(_bundled_bytes(gz).decode("ascii")))
        next(reader)  # header
        rows.extend([v.strip() for v in r] for r in reader if r)
    assert len(rows) == len(X) == 48842
    for j, col in enumerate(X.columns):
        expected = [r[j] for r in rows]
        if col in ADULT_NUMERIC:
            assert X[col].tolist() == [int(v) for v in expected], col
        else:
            got = X[col].astype(object).where(X[col].notna(), "?").tolist()
            assert got == expected, col
    labels = [r[14].rstrip(".") for r in rows]
    assert y.tolist() == [int(v == ">50K") for v in labels]


def test_adult_as_frame_false():
    X, y = load_adult(subset="test", as_frame=False)
    assert isinstance(X, np.ndarray) and X.dtype == object and X.shape == (16281, 14)
    assert isinstance(y, np.ndarray) and y.dtype == np.int64 and y.sum() == 3846
    assert int(pd.isna(X).sum()) == 963 + 966 + 274


def test_adult_bad_input():
    with pytest.raises(ValueError, match="subset"):
        load_adult(subset="validation")
    with pytest.raises(TypeError, match="drop_missing"):
        load_adult(drop_missing="yes")
    with pytest.raises(TypeError, match="as_frame"):
        load_adult(as_frame=None)


# ------------------------------------------------------------------------------------ German


def test_german_original():
    X, y = load_german_credit()
    assert X.shape == (1000, 20) and y.shape == (1000,)
    assert y.name == "good_credit" and y.dtype == np.int64 and int(y.sum()) == 700
    numeric = [
        "duration_months",
        "credit_amount",
        "installment_rate",
        "residence_since",
        "age",
        "existing_credits",
        "num_dependents",
    ]
    assert (X.dtypes == np.int64).sum() == 7
    assert all(X[c].dtype == np.int64 for c in numeric)
    cats = X.select_dtypes("category").columns
    assert len(cats) == 13 and not X.isna().any().any()
    # UCI's first row: A11 6 A34 A43 1169 A65 A75 4 A93 A101 4 A121 67 ... class 1 (good)
    row = X.iloc[0]
    assert row["checking_status"] == "< 0 DM" and row["credit_amount"] == 1169
    assert row["purpose"] == "radio/television" and row["age"] == 67 and y.iloc[0] == 1
    assert y.iloc[1] == 0  # second row has class 2 (bad)


def test_german_codes_and_labels_agree():
    Xc, yc = load_german_credit(labels=False)
    Xl, yl = load_german_credit(labels=True)
    raw = [line.split() for line in _bundled_bytes("german.data.gz").decode().splitlines()]
    assert len(raw) == 1000 and all(len(r) == 21 for r in raw)
    for j, col in enumerate(Xc.columns):
        expected = [r[j] for r in raw]
        if Xc[col].dtype == np.int64:
            assert Xc[col].tolist() == [int(v) for v in expected]
        else:
            assert Xc[col].astype(str).tolist() == expected
            # labels are a one-to-one relabelling of the codes
            pairs = set(zip(Xc[col].astype(str), Xl[col].astype(str)))
            assert len(pairs) == len({c for c, _ in pairs}) == len({lab for _, lab in pairs})
            assert len(Xc[col].cat.categories) == len(Xl[col].cat.categories)
    assert yc.tolist() == [int(r[20] == "1") for r in raw] == yl.tolist()


@needs_shared
def test_german_codebook_matches_german_doc():
    doc = (SHARED / "german" / "german.doc").read_text(errors="replace")
    codes = re.findall(r"^\s*(A\d+)\s*:", doc, flags=re.MULTILINE)
    ours = [code for _, book in loaders._GERMAN_ATTRIBUTES if book for code in book]
    assert ours == codes  # same codes, same order
    # attribute 1 of the doc is the first category column, attribute 20 the last
    assert loaders._GERMAN_ATTRIBUTES[0][1]["A14"] == "no checking account"
    assert loaders._GERMAN_ATTRIBUTES[-1][1] == {"A201": "yes", "A202": "no"}
    numeric_attrs = re.findall(r"Att?ribute (\d+):\s*\(numerical\)", doc)
    assert [int(a) for a in numeric_attrs] == [
        i + 1 for i, (_, book) in enumerate(loaders._GERMAN_ATTRIBUTES) if book is None
    ]


def test_german_processed():
    X, y = load_german_credit(processed=True)
    assert X.shape == (1000, 29) and "GoodCustomer" not in X.columns
    assert y.name == "GoodCustomer" and y.dtype == np.int64 and int(y.sum()) == 700
    assert X["Gender"].dtype == pd.CategoricalDtype(["Female", "Male"])
    assert X["Gender"].value_counts().to_dict() == {"Male": 690, "Female": 310}
    assert isinstance(X["PurposeOfLoan"].dtype, pd.CategoricalDtype)
    assert len(X["PurposeOfLoan"].cat.categories) == 10 and not X.isna().any().any()
    others = X.drop(columns=["Gender", "PurposeOfLoan"])
    assert (others.dtypes == np.int64).all()
    assert X["OtherLoansAtStore"].sum() == 0  # the documented quirk, kept as published


def test_german_processed_matches_original_row_by_row():
    Xo, yo = load_german_credit(labels=False)
    Xp, yp = load_german_credit(processed=True)
    assert yo.tolist() == yp.tolist()
    for p, o in [
        ("Age", "age"),
        ("LoanDuration", "duration_months"),
        ("LoanAmount", "credit_amount"),
        ("LoanRateAsPercentOfIncome", "installment_rate"),
    ]:
        assert Xp[p].tolist() == Xo[o].tolist(), p
    female = (Xo["personal_status_sex"] == "A92").to_numpy()
    assert ((Xp["Gender"] == "Female").to_numpy() == female).all()
    foreign_no = (Xo["foreign_worker"] == "A202").to_numpy()
    assert foreign_no.sum() == 37 and (Xp["ForeignWorker"].to_numpy() == foreign_no).all()


def test_german_bad_input():
    with pytest.raises(TypeError, match="processed"):
        load_german_credit(processed="yes")
    with pytest.raises(TypeError, match="labels"):
        load_german_credit(labels=1)
    X, y = load_german_credit(processed=True, as_frame=False)
    assert X.shape == (1000, 29) and X.dtype == object and y.sum() == 700


# ------------------------------------------------------------------------------ shared files


def _csv_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@needs_shared
def test_shared_compas():
    X, y = load_shared_dataset("compas")
    rows = _csv_rows(SHARED / "compas" / "compas-scores-two-years.csv")
    kept = [
        r
        for r in rows
        if -30 <= float(r["days_b_screening_arrest"] or "nan") <= 30
        and r["is_recid"] != "-1"
        and r["c_charge_degree"] != "O"
        and r["score_text"] != "N/A"
    ]
    assert len(kept) == 6172 == X.shape[0] and X.shape[1] == 10
    assert y.tolist() == [int(r["two_year_recid"]) for r in kept]
    assert X["priors_count"].tolist() == [int(r["priors_count"]) for r in kept]
    assert X["race"].astype(str).tolist() == [r["race"] for r in kept]
    for col in ["sex", "age_cat", "race", "c_charge_degree"]:
        assert isinstance(X[col].dtype, pd.CategoricalDtype)
    assert not X.isna().any().any()
    assert not {"decile_score", "score_text", "two_year_recid"} & set(X.columns)


@needs_shared
def test_shared_titanic():
    X, y = load_shared_dataset("titanic")
    assert X.shape == (891, 7) and int(y.sum()) == 342 and y.name == "Survived"
    assert not {"Name", "Ticket", "Cabin", "PassengerId"} & set(X.columns)
    assert X.isna().sum()[lambda s: s > 0].to_dict() == {"Age": 177, "Embarked": 2}
    for col in ["Pclass", "Sex", "Embarked"]:
        assert isinstance(X[col].dtype, pd.CategoricalDtype)


@needs_shared
def test_shared_australian():
    X, y = load_shared_dataset("australian", data_home=SHARED)
    assert X.shape == (690, 14) and y.name == "class" and int(y.sum()) == 307
    assert list(X.columns) == [f"A{i}" for i in range(1, 15)]
    cats = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    assert cats == ["A1", "A4", "A5", "A6", "A8", "A9", "A11", "A12"]


@needs_shared
def test_shared_taiwan(monkeypatch):
    monkeypatch.setenv("SKLEARN_XAI_SHARED_DATA", str(SHARED))
    X, y = load_shared_dataset("taiwan")
    assert X.shape == (30000, 23) and "ID" not in X.columns
    assert int(y.sum()) == 6636 and y.name == "default_next_month"
    assert set(X["EDUCATION"].cat.categories) == {0, 1, 2, 3, 4, 5, 6}
    assert (X.dtypes == np.int64).sum() == 20
    assert X["LIMIT_BAL"].iloc[[0, -1]].tolist() == [20000, 50000]


def test_shared_missing_raises(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="SKLEARN_XAI_SHARED_DATA"):
        load_shared_dataset("titanic", data_home=tmp_path)
    monkeypatch.setenv("SKLEARN_XAI_SHARED_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="SKLEARN_XAI_SHARED_DATA"):
        load_shared_dataset("titanic")
    # no env var, no shared/data above the working directory or the package
    monkeypatch.delenv("SKLEARN_XAI_SHARED_DATA")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(loaders, "__file__", str(tmp_path / "pkg" / "_loaders.py"))
    with pytest.raises(FileNotFoundError, match="SKLEARN_XAI_SHARED_DATA"):
        load_shared_dataset("titanic")
    with pytest.raises(ValueError, match="Unknown shared dataset"):
        load_shared_dataset("iris")
