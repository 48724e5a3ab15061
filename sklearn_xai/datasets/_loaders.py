"""Loaders for the bundled tabular datasets and for the project's shared benchmark files.

Bundled (gzipped under ``sklearn_xai/datasets/data/``, see ``ATTRIBUTION.txt`` there):

* Adult / Census Income (UCI, CC BY 4.0): :func:`load_adult`.
* German Credit, UCI original and the processed version of "Fooling LIME and SHAP"
  (UCI, CC BY 4.0): :func:`load_german_credit`.

Not bundled, read from a ``shared/data`` folder when present (tests and benchmarks only):
COMPAS, Titanic, Australian credit and Taiwan credit default, see :func:`load_shared_dataset`.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from typing import Literal

__all__ = ["load_adult", "load_german_credit", "load_shared_dataset"]

_ENV_VAR = "SKLEARN_XAI_SHARED_DATA"


def _open_bundled(filename):
    """Return a binary file object for a gzipped file bundled under ``data/``."""
    return resources.files("sklearn_xai.datasets").joinpath("data").joinpath(filename).open("rb")


def _check_as_frame(as_frame):
    if not isinstance(as_frame, (bool, np.bool_)):
        raise TypeError(f"as_frame must be a bool, got {as_frame!r}.")


def _finish(X, y, as_frame):
    """Return ``(X, y)`` as pandas objects or as numpy arrays."""
    if as_frame:
        return X, y
    # Mixed-type frames become object arrays: no column is silently encoded.
    dtype = None if all(pd.api.types.is_numeric_dtype(t) for t in X.dtypes) else object
    X_arr = X.to_numpy(dtype=dtype)
    if dtype is object:
        X_arr[pd.isna(X).to_numpy()] = np.nan
    return X_arr, y.to_numpy()


# --------------------------------------------------------------------------------------------
# Adult
# --------------------------------------------------------------------------------------------

_ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
]
_ADULT_NUMERIC = [
    "age",
    "fnlwgt",
    "education_num",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
]
_ADULT_CATEGORICAL = [c for c in _ADULT_COLUMNS if c not in _ADULT_NUMERIC]
_ADULT_TARGET = "income_gt_50k"
_ADULT_FILES = {"train": "adult.data.gz", "test": "adult.test.gz"}


def _read_adult_file(filename):
    with _open_bundled(filename) as fh:
        df = pd.read_csv(
            fh,
            compression="gzip",
            sep=",",
            skipinitialspace=True,  # values are separated by ", "
            na_values=["?"],
            keep_default_na=False,  # only "?" marks a missing value
            skip_blank_lines=True,  # both files end with a blank line
            dtype=dict.fromkeys(_ADULT_NUMERIC, "int64"),
        )
    expected = [*_ADULT_COLUMNS, "ltgt50k"]
    if list(df.columns) != expected:  # pragma: no cover - guards the bundled file
        raise RuntimeError(f"Unexpected columns in bundled {filename}: {list(df.columns)}")
    # The test file writes its labels with a trailing period ("<=50K.", ">50K.").
    label = df.pop("ltgt50k").str.rstrip(".")
    unknown = set(label.unique()) - {"<=50K", ">50K"}
    if unknown:  # pragma: no cover - guards the bundled file
        raise RuntimeError(f"Unexpected labels in bundled {filename}: {sorted(unknown)}")
    y = (label == ">50K").astype("int64").rename(_ADULT_TARGET)
    return df, y


def load_adult(
        *,
        subset: Literal["train", "test", "all"] = "train",
        as_frame: bool = True,
        drop_missing: bool = False,
) -> tuple[pd.DataFrame | np.ndarray, pd.Series | np.ndarray]:
    """Load the Adult / Census Income dataset (UCI), bundled with the package.

    Predict whether a person's annual income exceeds $50K from 1994 US census data.

    ================  ===============================================
    subset            rows (``drop_missing=False`` / ``True``)
    ================  ===============================================
    ``"train"``       32,561 / 30,162  (``adult.data``)
    ``"test"``        16,281 / 15,060  (``adult.test``)
    ``"all"``         48,842 / 45,222  (train rows first, then test)
    ================  ===============================================

    Features (14): six integer columns ``age``, ``fnlwgt``, ``education_num`` (the ordinal
    code of ``education``), ``capital_gain``, ``capital_loss``, ``hours_per_week``
    (dtype ``int64``) and eight ``category`` columns ``workclass``, ``education``,
    ``marital_status``, ``occupation``, ``relationship``, ``race``, ``sex``,
    ``native_country``. The categories of each column are the sorted union of the
    values in train and test, so frames of different subsets share category levels.

    Missing values, written ``?`` in the files, are NaN (a missing category). They occur
    only in ``workclass`` (1,836 train / 963 test), ``occupation`` (1,843 / 966) and
    ``native_country`` (583 / 274).

    Target ``income_gt_50k`` (``int64``): 1 for ``>50K``, 0 for ``<=50K``. The trailing
    period of the test labels (``>50K.``) is removed. Positive rate: 7,841 of 32,561 in
    train, 3,846 of 16,281 in test, 23.93% overall.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Which UCI split to return.
    as_frame : bool, default=True
        If True, return a DataFrame and a Series. If False, return ``X`` as a numpy array
        of dtype ``object`` (the columns keep their values, missing values are
        ``np.nan``; nothing is encoded) and ``y`` as an ``int64`` array.
    drop_missing : bool, default=False
        If True, drop every row with at least one missing value. The row index keeps the
        0-based row number before dropping (with ``subset="all"``, test rows are numbered
        after the 32,561 train rows), so dropped rows leave gaps.

    Returns
    -------
    X : pandas.DataFrame of shape (n_samples, 14) or ndarray
        The features.
    y : pandas.Series of shape (n_samples,) or ndarray
        The target ``income_gt_50k``.

    Notes
    -----
    Source: UCI Machine Learning Repository, "Adult", Becker & Kohavi (1996),
    doi:10.24432/C5XW20. License: CC BY 4.0. The bundled files are the UCI data files with
    a header row; they were only gzipped (see ``data/ATTRIBUTION.txt``).
    """
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}.")
    _check_as_frame(as_frame)
    if not isinstance(drop_missing, (bool, np.bool_)):
        raise TypeError(f"drop_missing must be a bool, got {drop_missing!r}.")

    parts = {name: _read_adult_file(fname) for name, fname in _ADULT_FILES.items()}
    for col in _ADULT_CATEGORICAL:
        levels = sorted(set(parts["train"][0][col].dropna()) | set(parts["test"][0][col].dropna()))
        dtype = pd.CategoricalDtype(levels)
        for X_part, _ in parts.values():
            X_part[col] = X_part[col].astype(dtype)

    names = ["train", "test"] if subset == "all" else [subset]
    X = pd.concat([parts[n][0] for n in names], ignore_index=True)
    y = pd.concat([parts[n][1] for n in names], ignore_index=True)
    if drop_missing:
        keep = X.notna().all(axis=1)
        X, y = X[keep], y[keep]
    return _finish(X, y, as_frame)


# --------------------------------------------------------------------------------------------
# German credit
# --------------------------------------------------------------------------------------------

# (column name, {code: label}) for the 20 attributes of german.data, in file order. The names
# and the labels are transcribed from the UCI codebook german.doc; ``None`` marks a numeric
# attribute. A47 ("vacation - does not exist?") and A95 ("female : single") are listed in the
# codebook but never occur in the data; they are kept as (unused) categories.
_GERMAN_ATTRIBUTES = [
    (
        "checking_status",
        {
            "A11": "< 0 DM",
            "A12": "0 <= ... < 200 DM",
            "A13": ">= 200 DM / salary assignments for at least 1 year",
            "A14": "no checking account",
        },
    ),
    ("duration_months", None),
    (
        "credit_history",
        {
            "A30": "no credits taken / all credits paid back duly",
            "A31": "all credits at this bank paid back duly",
            "A32": "existing credits paid back duly till now",
            "A33": "delay in paying off in the past",
            "A34": "critical account / other credits existing (not at this bank)",
        },
    ),
    (
        "purpose",
        {
            "A40": "car (new)",
            "A41": "car (used)",
            "A42": "furniture/equipment",
            "A43": "radio/television",
            "A44": "domestic appliances",
            "A45": "repairs",
            "A46": "education",
            "A47": "vacation",
            "A48": "retraining",
            "A49": "business",
            "A410": "others",
        },
    ),
    ("credit_amount", None),
    (
        "savings_status",
        {
            "A61": "< 100 DM",
            "A62": "100 <= ... < 500 DM",
            "A63": "500 <= ... < 1000 DM",
            "A64": ">= 1000 DM",
            "A65": "unknown / no savings account",
        },
    ),
    (
        "employment_since",
        {
            "A71": "unemployed",
            "A72": "< 1 year",
            "A73": "1 <= ... < 4 years",
            "A74": "4 <= ... < 7 years",
            "A75": ">= 7 years",
        },
    ),
    ("installment_rate", None),
    (
        "personal_status_sex",
        {
            "A91": "male : divorced/separated",
            "A92": "female : divorced/separated/married",
            "A93": "male : single",
            "A94": "male : married/widowed",
            "A95": "female : single",
        },
    ),
    (
        "other_debtors",
        {"A101": "none", "A102": "co-applicant", "A103": "guarantor"},
    ),
    ("residence_since", None),
    (
        "property",
        {
            "A121": "real estate",
            "A122": "building society savings agreement / life insurance",
            "A123": "car or other",
            "A124": "unknown / no property",
        },
    ),
    ("age", None),
    (
        "other_installment_plans",
        {"A141": "bank", "A142": "stores", "A143": "none"},
    ),
    ("housing", {"A151": "rent", "A152": "own", "A153": "for free"}),
    ("existing_credits", None),
    (
        "job",
        {
            "A171": "unemployed / unskilled - non-resident",
            "A172": "unskilled - resident",
            "A173": "skilled employee / official",
            "A174": "management / self-employed / highly qualified employee / officer",
        },
    ),
    ("num_dependents", None),
    (
        "telephone",
        {"A191": "none", "A192": "yes, registered under the customer's name"},
    ),
    ("foreign_worker", {"A201": "yes", "A202": "no"}),
]
_GERMAN_TARGET = "good_credit"

_GERMAN_PROCESSED_CATEGORICAL = {
    "Gender": ["Female", "Male"],
    "PurposeOfLoan": [
        "Business",
        "Education",
        "Electronics",
        "Furniture",
        "HomeAppliances",
        "NewCar",
        "Other",
        "Repairs",
        "Retraining",
        "UsedCar",
    ],
}


def _load_german_original(labels):
    names = [name for name, _ in _GERMAN_ATTRIBUTES]
    with _open_bundled("german.data.gz") as fh:
        df = pd.read_csv(
            fh,
            compression="gzip",
            sep=" ",
            header=None,
            names=[*names, "class"],
            dtype=str,
            keep_default_na=False,
        )
    X = pd.DataFrame(index=df.index)
    for name, codebook in _GERMAN_ATTRIBUTES:
        col = df[name]
        if codebook is None:
            X[name] = col.astype("int64")
            continue
        unknown = set(col.unique()) - set(codebook)
        if unknown:  # pragma: no cover - guards the bundled file
            raise RuntimeError(f"Codes {sorted(unknown)} in german.data are not in german.doc.")
        if labels:
            X[name] = pd.Categorical(col.map(codebook), categories=list(codebook.values()))
        else:
            X[name] = pd.Categorical(col, categories=list(codebook))
    cls = df["class"].astype("int64")
    if not cls.isin([1, 2]).all():  # pragma: no cover - guards the bundled file
        raise RuntimeError("german.data has a class other than 1 (good) or 2 (bad).")
    y = (cls == 1).astype("int64").rename(_GERMAN_TARGET)
    return X, y


def _load_german_processed():
    with _open_bundled("german_processed.csv.gz") as fh:
        df = pd.read_csv(fh, compression="gzip", keep_default_na=False)
    target = df.pop("GoodCustomer").astype("int64")
    if not target.isin([1, -1]).all():  # pragma: no cover - guards the bundled file
        raise RuntimeError("german_processed.csv has a GoodCustomer other than 1 or -1.")
    y = (target == 1).astype("int64").rename("GoodCustomer")
    X = pd.DataFrame(index=df.index)
    for col in df.columns:
        if col in _GERMAN_PROCESSED_CATEGORICAL:
            X[col] = pd.Categorical(df[col], categories=_GERMAN_PROCESSED_CATEGORICAL[col])
            if X[col].isna().any():  # pragma: no cover - guards the bundled file
                raise RuntimeError(f"Unexpected level in german_processed.csv column {col}.")
        else:
            X[col] = df[col].astype("int64")
    return X, y


def load_german_credit(
        *,
        processed: bool = False,
        labels: bool = True,
        as_frame: bool = True,
) -> tuple[pd.DataFrame | np.ndarray, pd.Series | np.ndarray]:
    """Load the German Credit dataset (UCI Statlog), bundled with the package.

    Classify 1,000 loan applicants as good (700) or bad (300) credit risks.

    **Original** (``processed=False``, the UCI file ``german.data``): 20 features in file
    order, named from the codebook ``german.doc``:

    * 7 ``int64`` columns: ``duration_months``, ``credit_amount``, ``installment_rate``
      (installment in % of disposable income, 1-4), ``residence_since`` (1-4), ``age``,
      ``existing_credits`` (credits at this bank), ``num_dependents`` (people liable to
      provide maintenance for);
    * 13 ``category`` columns: ``checking_status``, ``credit_history``, ``purpose``,
      ``savings_status``, ``employment_since``, ``personal_status_sex``,
      ``other_debtors``, ``property``, ``other_installment_plans``, ``housing``, ``job``,
      ``telephone``, ``foreign_worker``. With ``labels=True`` the values are the codebook's
      descriptions (e.g. ``"no checking account"`` for ``A14``), else the UCI codes
      (``"A11"``...). The categories are every code of the codebook, in codebook order,
      including the two that never occur (``A47`` vacation, ``A95`` female single).

    Target ``good_credit`` (``int64``): **1 = good, 0 = bad** (UCI codes these 1 = good,
    2 = bad). UCI asks for a cost matrix: calling a bad customer good costs 5, calling a
    good customer bad costs 1.

    **Processed** (``processed=True``, ``german_processed.csv`` from "Fooling LIME and
    SHAP", preprocessing of Ustun, Spangher & Liu 2019): the same 1,000 rows in the same
    order, 29 features: ``Gender`` (``category``, Female/Male: ``A92`` is Female, the other
    codes of attribute 9 Male), ``PurposeOfLoan`` (``category``, 10 levels) and 27 ``int64``
    columns (``Age``, ``LoanDuration``, ``LoanAmount``, ``LoanRateAsPercentOfIncome``,
    ``YearsAtCurrentHome``, ``NumberOfOtherLoansAtBank``, ``NumberOfLiableIndividuals`` and
    20 binary 0/1 indicators). Target ``GoodCustomer`` (``int64``): **1 = good, 0 = bad**
    (the file codes these 1 / -1). Two quirks are kept as published: ``OtherLoansAtStore``
    is always 0 although 47 applicants have other installment plans at stores, and
    ``ForeignWorker`` is 1 on exactly the 37 rows that the codebook marks "foreign worker:
    no" (it looks inverted). ``labels`` has no effect here.

    Parameters
    ----------
    processed : bool, default=False
        Return the processed version instead of the UCI original.
    labels : bool, default=True
        Original version only: readable category values instead of the ``A..`` codes.
    as_frame : bool, default=True
        If True, return a DataFrame and a Series; if False, ``X`` as a numpy array of
        dtype ``object`` (nothing is encoded) and ``y`` as an ``int64`` array.

    Returns
    -------
    X : pandas.DataFrame of shape (1000, 20) or (1000, 29), or ndarray
        The features.
    y : pandas.Series of shape (1000,) or ndarray
        The target, 1 = good (700 rows), 0 = bad (300 rows).

    Notes
    -----
    Source: UCI Machine Learning Repository, "Statlog (German Credit Data)", Prof. Hans
    Hofmann, doi:10.24432/C5NC77. License: CC BY 4.0. The processed file is from
    github.com/dylan-slack/Fooling-LIME-SHAP (``data/german_processed.csv``). Both files
    were only gzipped (see ``data/ATTRIBUTION.txt``).
    """
    if not isinstance(processed, (bool, np.bool_)):
        raise TypeError(f"processed must be a bool, got {processed!r}.")
    if not isinstance(labels, (bool, np.bool_)):
        raise TypeError(f"labels must be a bool, got {labels!r}.")
    _check_as_frame(as_frame)
    X, y = _load_german_processed() if processed else _load_german_original(labels)
    return _finish(X, y, as_frame)


# --------------------------------------------------------------------------------------------
# Shared benchmark files (not bundled)
# --------------------------------------------------------------------------------------------

_SHARED_FILES = {
    "compas": "compas/compas-scores-two-years.csv",
    "titanic": "titanic/titanic.csv",
    "australian": "australian/australian.csv",
    "taiwan_credit": "taiwan_credit/default_of_credit_card_clients.csv",
}
_SHARED_ALIASES = {"taiwan": "taiwan_credit"}


def _file_under(folder, relpath, message):
    """``folder / relpath`` when it is a file; else FileNotFoundError(``message``)."""
    path = Path(folder) / relpath
    if path.is_file():
        return path
    raise FileNotFoundError(message)


def _find_shared_file(relpath, data_home):
    """Locate ``relpath`` under a ``shared/data`` folder; raise FileNotFoundError if absent."""
    if data_home is not None:
        return _file_under(
            data_home, relpath,
            f"{relpath} not found under data_home={str(data_home)!r}. Pass the folder that "
            f"holds 'compas/', 'titanic/', ... or set the environment variable {_ENV_VAR}."
        )
    env = os.environ.get(_ENV_VAR)
    if env:
        return _file_under(
            env, relpath,
            f"{relpath} not found under the environment variable {_ENV_VAR}={env!r}; it must "
            f"name the folder that holds 'compas/', 'titanic/', ..."
        )
    searched = []
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            candidate = folder / "shared" / "data"
            if candidate in searched:
                continue
            searched.append(candidate)
            if (candidate / relpath).is_file():
                return candidate / relpath
    raise FileNotFoundError(
        f"Shared dataset file {relpath} not found: no 'shared/data' folder holding it above "
        f"the working directory or the sklearn_xai package. Set the environment variable "
        f"{_ENV_VAR} to the folder (the one holding 'compas/', 'titanic/', ...) or pass "
        f"data_home."
    )


def _load_compas(path):
    df = pd.read_csv(path)
    # ProPublica's filter (their analysis notebook): 6,172 of 7,214 rows remain.
    keep = (
        df["days_b_screening_arrest"].between(-30, 30)
        & (df["is_recid"] != -1)
        & (df["c_charge_degree"] != "O")
        & df["score_text"].notna()  # pandas reads the literal "N/A" as NaN
        & (df["score_text"] != "N/A")
    )
    df = df[keep].reset_index(drop=True)
    jail_in = pd.to_datetime(df["c_jail_in"])
    jail_out = pd.to_datetime(df["c_jail_out"])
    X = pd.DataFrame(
        {
            "sex": pd.Categorical(df["sex"], categories=["Female", "Male"]),
            "age": df["age"].astype("int64"),
            "age_cat": pd.Categorical(
                df["age_cat"],
                categories=["Less than 25", "25 - 45", "Greater than 45"],
                ordered=True,
            ),
            "race": pd.Categorical(df["race"]),
            "juv_fel_count": df["juv_fel_count"].astype("int64"),
            "juv_misd_count": df["juv_misd_count"].astype("int64"),
            "juv_other_count": df["juv_other_count"].astype("int64"),
            "priors_count": df["priors_count"].astype("int64"),
            "c_charge_degree": pd.Categorical(df["c_charge_degree"], categories=["F", "M"]),
            "length_of_stay": (jail_out - jail_in).dt.total_seconds() / 86400.0,
        }
    )
    y = df["two_year_recid"].astype("int64")
    return X, y


def _load_titanic(path):
    df = pd.read_csv(path)
    y = df.pop("Survived").astype("int64")
    X = pd.DataFrame(
        {
            "Pclass": pd.Categorical(df["Pclass"], categories=[1, 2, 3], ordered=True),
            "Sex": pd.Categorical(df["Sex"], categories=["female", "male"]),
            "Age": df["Age"].astype("float64"),
            "SibSp": df["SibSp"].astype("int64"),
            "Parch": df["Parch"].astype("int64"),
            "Fare": df["Fare"].astype("float64"),
            "Embarked": pd.Categorical(df["Embarked"], categories=["C", "Q", "S"]),
        }
    )
    return X, y


_AUSTRALIAN_CATEGORICAL = ["A1", "A4", "A5", "A6", "A8", "A9", "A11", "A12"]


def _load_australian(path):
    df = pd.read_csv(path, skipinitialspace=True)
    df.columns = [c.strip() for c in df.columns]  # the header ends in "class "
    y = df.pop("class").astype("int64")
    X = pd.DataFrame(index=df.index)
    for col in df.columns:
        if col in _AUSTRALIAN_CATEGORICAL:
            X[col] = pd.Categorical(df[col].astype("int64"))
        else:
            X[col] = df[col].astype("float64")
    return X, y


def _load_taiwan(path):
    df = pd.read_csv(path)  # CRLF line endings are handled by the C parser
    df = df.drop(columns="ID")
    y = df.pop("default payment next month").astype("int64").rename("default_next_month")
    X = pd.DataFrame(index=df.index)
    for col in df.columns:
        if col in ("SEX", "EDUCATION", "MARRIAGE"):
            X[col] = pd.Categorical(df[col].astype("int64"))
        else:
            X[col] = df[col].astype("int64")
    return X, y


_SHARED_LOADERS = {
    "compas": _load_compas,
    "titanic": _load_titanic,
    "australian": _load_australian,
    "taiwan_credit": _load_taiwan,
}


def load_shared_dataset(
        name: Literal["compas", "titanic", "australian", "taiwan_credit"],
        data_home: str | os.PathLike[str] | None = None,
) -> tuple[pd.DataFrame, pd.Series]:
    """Load one of the project's shared benchmark datasets (not bundled with the package).

    These files are used by the tests and benchmarks only. They are read from a folder
    laid out like the project's ``shared/data`` (``compas/``, ``titanic/``,
    ``australian/``, ``taiwan_credit/``), found in this order: ``data_home``; the
    environment variable ``SKLEARN_XAI_SHARED_DATA``; a ``shared/data`` folder in the
    working directory or any parent of it; a ``shared/data`` folder above the installed
    ``sklearn_xai`` package.

    ===================  ==============  =====================================================
    name                 shape of X      target (positives)
    ===================  ==============  =====================================================
    ``"compas"``         (6172, 10)      ``two_year_recid`` (2,809)
    ``"titanic"``        (891, 7)        ``Survived`` (342)
    ``"australian"``     (690, 14)       ``class``, 1 = approved (307)
    ``"taiwan_credit"``  (30000, 23)     ``default_next_month`` (6,636)
    ===================  ==============  =====================================================

    * **compas** (ProPublica "Machine Bias", ``compas-scores-two-years.csv``): ProPublica's
      filter (``-30 <= days_b_screening_arrest <= 30``, ``is_recid != -1``,
      ``c_charge_degree != "O"``, a score present) keeps 6,172 of 7,214 rows. Features:
      ``sex``, ``age``, ``age_cat`` (ordered), ``race``, ``juv_fel_count``,
      ``juv_misd_count``, ``juv_other_count``, ``priors_count``, ``c_charge_degree``
      (F/M) and ``length_of_stay`` (days from ``c_jail_in`` to ``c_jail_out``, float). The
      COMPAS scores themselves (``decile_score``, ``score_text``) are not features. No
      licence file; the data are ProPublica's, do not redistribute or print rows.
    * **titanic** (Kaggle ``train.csv``): ``PassengerId``, ``Name``, ``Ticket`` and
      ``Cabin`` are dropped. ``Pclass`` (ordered 1 < 2 < 3), ``Sex`` and ``Embarked`` are
      ``category``; ``Age`` (177 NaN) and ``Fare`` float; ``SibSp`` and ``Parch`` int.
      ``Embarked`` has 2 missing values. Kaggle's competition terms apply.
    * **australian** (UCI Statlog, CC BY 4.0, anonymised attributes): ``A1``, ``A4``,
      ``A5``, ``A6``, ``A8``, ``A9``, ``A11``, ``A12`` are integer-coded ``category``;
      ``A2``, ``A3``, ``A7``, ``A10``, ``A13``, ``A14`` float. The trailing space of the
      file's ``"class "`` column name is removed.
    * **taiwan_credit** (UCI "Default of Credit Card Clients", Yeh & Lien 2009, CC BY 4.0):
      the ``ID`` column is dropped and the target renamed from ``default payment next
      month`` to ``default_next_month``. ``SEX``, ``EDUCATION`` and ``MARRIAGE`` are
      integer-coded ``category`` (the undocumented codes ``EDUCATION`` 0/5/6 and
      ``MARRIAGE`` 0 are kept); the other 20 columns (``LIMIT_BAL``, ``AGE``,
      ``PAY_0``, ``PAY_2``-``PAY_6``, ``BILL_AMT1``-``6``, ``PAY_AMT1``-``6``) are int.

    Parameters
    ----------
    name : {"compas", "titanic", "australian", "taiwan_credit"}
        The dataset (``"taiwan"`` is accepted for ``"taiwan_credit"``).
    data_home : str or path-like, default=None
        The folder holding the dataset sub-folders. Overrides the search above.

    Returns
    -------
    X : pandas.DataFrame of shape (n_samples, n_features)
        The features, with the dtypes listed above (``category`` for the categorical
        columns).
    y : pandas.Series of shape (n_samples,), dtype int64
        The binary target (1 = positive class of the table above), named after its
        column.

    Raises
    ------
    FileNotFoundError
        If the file is not found; the message names ``SKLEARN_XAI_SHARED_DATA``.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}.")
    key = _SHARED_ALIASES.get(name, name)
    if key not in _SHARED_FILES:
        raise ValueError(f"Unknown shared dataset {name!r}; choose from {sorted(_SHARED_FILES)}.")
    path = _find_shared_file(_SHARED_FILES[key], data_home)
    return _SHARED_LOADERS[key](path)
