"""Faults found by the reliability audit in what every explainer shares (base and adapter).

One test per finding; each failed before its fix. The other findings have their own files
(``test_faults_knockoffs.py``, ``test_faults_tree.py``, ``test_faults_cli.py``,
``test_faults_recourse.py``, ``test_faults_torch.py``).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from sklearn_xai import (
    KnockoffSAGE,
    KnockoffSHAP,
    MaceRecourse,
    P2CERecourse,
    ShearExplainer,
    TreeShapExplainer,
)

from ._broken_models import BrokenClassifier

pytestmark = pytest.mark.timeout(120)


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y


# ---------------------------------------------------------------- 5: non-finite outputs
@pytest.mark.parametrize("fault", ["nan", "inf"])
@pytest.mark.parametrize("make", [
    lambda m: ShearExplainer(m, n_evals=4, random_state=0),
    lambda m: KnockoffSHAP(m, n_knockoffs=2, random_state=0),
    lambda m: KnockoffSAGE(m, n_knockoffs=2, n_permutations=2, convergence_tol=None,
                           random_state=0),
], ids=["shear", "knockoff_shap", "knockoff_sage"])
def test_non_finite_model_output_is_reported(make, fault):
    X, y = _data()
    model = FrozenEstimator(BrokenClassifier(fault).fit(X, y))
    X_ok = X[X[:, 0] < 0.0]
    with pytest.raises(ValueError, match=r"BrokenClassifier.*NaN or infinite"):
        explainer = make(model).fit(X_ok)
        X_bad = X[:5].copy()
        X_bad[:, 0] = 3.0
        if isinstance(explainer, KnockoffSAGE):
            explainer.explain(X_bad, y[:5])
        else:
            explainer.explain(X_bad)


def test_non_finite_output_in_fit_probe_names_the_model():
    X, y = _data()
    X_bad = X.copy()
    X_bad[:, 0] = 3.0
    with pytest.raises(ValueError, match=r"BrokenClassifier.*NaN or infinite"):
        ShearExplainer(FrozenEstimator(BrokenClassifier("nan").fit(X, y)), n_evals=4,
                       random_state=0).fit(X_bad)


# ------------------------------------------------------------ 9: pandas nullable dtypes
def _nullable_frames(n=60):
    X, y = _data(n)
    rng = np.random.default_rng(3)
    plain = pd.DataFrame({
        "a": X[:, 0],
        "b": (X[:, 1] * 10).round().astype(np.int64),
        "c": rng.choice(["u", "v", "w"], n).astype(object),
        "d": X[:, 2] > 0,
    })
    nullable = plain.astype({"a": "Float64", "b": "Int64", "c": "string", "d": "boolean"})
    return plain, nullable, y


def _frame_model():
    return make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["c"]),
                                remainder="passthrough"),
        LogisticRegression())


@pytest.mark.parametrize("make", [
    lambda m: ShearExplainer(m, n_evals=4, random_state=0),
    lambda m: KnockoffSHAP(m, n_knockoffs=2, random_state=0),
], ids=["shear", "knockoff_shap"])
def test_nullable_dtypes_without_missing_values_are_explained(make):
    plain, nullable, y = _nullable_frames()
    expected = make(_frame_model()).fit(plain, y).explain(plain.iloc[:4])
    got = make(_frame_model()).fit(nullable, y).explain(nullable.iloc[:4])
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.base_values, expected.base_values, rtol=1e-10)


def test_nullable_dtypes_in_knockoff_sage_and_mace():
    plain, nullable, y = _nullable_frames()
    sage = {"n_knockoffs": 2, "n_permutations": 2, "convergence_tol": None, "random_state": 0}
    a = KnockoffSAGE(_frame_model(), **sage).fit(plain, y).explain(plain, y)
    b = KnockoffSAGE(_frame_model(), **sage).fit(nullable, y).explain(nullable, y)
    np.testing.assert_allclose(b.values, a.values, rtol=1e-10)
    mace = {"n_counterfactuals": 1, "neighbors": "exact", "n_neighbors": 5, "refine": False,
                "random_state": 0}
    ra = MaceRecourse(_frame_model(), **mace).fit(plain, y).explain(plain.iloc[:3])
    rb = MaceRecourse(_frame_model(), **mace).fit(nullable, y).explain(nullable.iloc[:3])
    np.testing.assert_array_equal(np.asarray(rb.valid), np.asarray(ra.valid))
    pd.testing.assert_frame_equal(rb.counterfactuals.reset_index(drop=True),
                                  ra.counterfactuals.reset_index(drop=True),
                                  check_dtype=False)


def test_nullable_columns_with_missing_values():
    plain, nullable, y = _nullable_frames()
    with_na = nullable.copy()
    with_na.loc[3, "c"] = pd.NA
    with pytest.raises(ValueError, match=r"'c'.*nullable.*missing"):
        ShearExplainer(_frame_model(), n_evals=4, random_state=0).fit(with_na, y)
    numeric_na = nullable.copy()
    numeric_na.loc[3, "b"] = pd.NA  # becomes NaN: refused by a model without NaN support
    with pytest.raises(ValueError, match=r"NaN in column 'b'"):
        ShearExplainer(_frame_model(), n_evals=4, random_state=0).fit(numeric_na, y)


# -------------------------------------------------------------- 10: wrong output shape
@pytest.mark.parametrize("fault,pattern", [
    ("one_column", r"BrokenClassifier.*1 column.*one column per class"),
    ("too_few_rows", r"BrokenClassifier.*one row per input row"),
])
@pytest.mark.parametrize("make", [
    lambda m: ShearExplainer(m, n_evals=4, random_state=0),
    lambda m: KnockoffSHAP(m, n_knockoffs=2, random_state=0),
    lambda m: P2CERecourse(m, grid_step=0.5, max_changes=1, n_estimators=5,
                           shap_samples=5, random_state=0),
], ids=["shear", "knockoff_shap", "p2ce"])
def test_wrong_output_shape_is_reported_in_fit(make, fault, pattern):
    X, y = _data()
    with pytest.raises(ValueError, match=pattern):
        make(FrozenEstimator(BrokenClassifier(fault).fit(X, y))).fit(X)


# ------------------------------------------------------------------ 12: messages
@pytest.mark.parametrize("cls", [ShearExplainer, KnockoffSHAP, TreeShapExplainer,
                                 MaceRecourse])
def test_model_class_instead_of_instance(cls):
    from sklearn.tree import DecisionTreeClassifier

    X, y = _data()
    model = DecisionTreeClassifier if cls is TreeShapExplainer else LogisticRegression
    with pytest.raises(TypeError, match=rf"class {model.__name__}.*{model.__name__}\(\)"):
        cls(model).fit(X, y)


def test_object_array_after_fitting_on_a_frame():
    plain, _, y = _nullable_frames()
    explainer = ShearExplainer(_frame_model(), n_evals=4, random_state=0).fit(plain, y)
    expected = explainer.explain(plain.iloc[:3]).values
    with pytest.warns(UserWarning, match="valid feature names"):
        got = explainer.explain(plain.iloc[:3].to_numpy(dtype=object)).values
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    bad = plain.iloc[:3].to_numpy(dtype=object)
    bad[0, 0] = "not a number"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"Column 'a'.*dtype"):
            explainer.explain(bad)


@pytest.mark.parametrize("n_jobs", [0])
def test_n_jobs_zero_is_refused_in_fit(n_jobs):
    X, y = _data()
    with pytest.raises(ValueError, match="n_jobs"):
        ShearExplainer(LogisticRegression(), n_evals=4, n_jobs=n_jobs).fit(X, y)
