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
from ._instances import CLASSES, fast_params, model_for
from ._oracles import baseline_shapley

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
    lambda m: KnockoffSAGE(m, n_knockoffs=2, n_permutations=2, tol=None,
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
    sage = {"n_knockoffs": 2, "n_permutations": 2, "tol": None, "random_state": 0}
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


# ---------------------------------------------- issue #24: the NaN rule and passthrough
def test_passthrough_branch_hands_nan_to_the_step_that_decides():
    # a passthrough branch or remainder made the whole pipeline "cannot take NaN": SHEAR
    # refused a pipeline that imputes the NaN column (or ends in a NaN-native model),
    # advising a SimpleImputer it already had; TreeSHAP took the same rows
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import StandardScaler

    X, y = _data(n=120)
    X[::5, 0] = np.nan
    imputing = make_pipeline(
        ColumnTransformer([("imp", SimpleImputer(), [0])], remainder="passthrough"),
        LogisticRegression()).fit(X, y)
    native = make_pipeline(
        ColumnTransformer([("keep", "passthrough", [0]), ("s", StandardScaler(), [1, 2])]),
        HistGradientBoostingClassifier(max_iter=10, random_state=0)).fit(X, y)
    rows = X[:10]  # rows 0 and 5 have NaN in column 0
    for pipe in (imputing, native):
        exp = ShearExplainer(FrozenEstimator(pipe), n_evals=8, random_state=0).fit(X)
        att = exp.explain(rows)
        assert att.std is None  # 8 evaluations of 3 players: every coalition
        truth = baseline_shapley(lambda Z, p=pipe: p.predict_proba(Z)[:, 1], rows,
                                  exp.reference_)
        np.testing.assert_allclose(att.values, truth, rtol=0, atol=1e-12)
        np.testing.assert_allclose(att.values.sum(axis=1) + att.base_values,
                                   pipe.predict_proba(rows)[:, 1], rtol=0, atol=1e-12)
    # NaN in a column that reaches a model that cannot take it is still refused
    leaky = make_pipeline(
        ColumnTransformer([("imp", SimpleImputer(), [1])], remainder="passthrough"),
        LogisticRegression()).fit(np.nan_to_num(X), y)
    with pytest.raises(ValueError, match=r"NaN in column 0.*cannot take missing values"):
        ShearExplainer(FrozenEstimator(leaky), n_evals=8, random_state=0).fit(X)


# ------------------------------------------------------------ issue #24: messages
@pytest.mark.parametrize("cls", [ShearExplainer, KnockoffSHAP, KnockoffSAGE,
                                 TreeShapExplainer, MaceRecourse, P2CERecourse])
def test_series_and_unfitted_pipeline_step_get_clear_messages(cls):
    # explain(X.iloc[0]) said "could not convert string to float" (mixed data) or
    # scikit-learn's "Expected a 2-dimensional container"; an unfitted step inside a
    # FrozenEstimator(Pipeline) was a TypeError with a hint about column types
    from sklearn.exceptions import NotFittedError
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    X, y = _data()
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": np.where(X[:, 2] > 0, "u", "v")})
    make = (lambda: DecisionTreeClassifier(max_depth=3, random_state=0)) \
        if cls is TreeShapExplainer else LogisticRegression
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["c"]),
                                                 remainder="passthrough"), make()).fit(df, y)
    hint = r"pandas Series.*X\.iloc\[\[0\]\].*series\.to_frame\(\)\.T"
    with pytest.raises(ValueError, match=hint):
        cls(FrozenEstimator(pipe)).fit(df.iloc[0])
    if cls in (ShearExplainer, TreeShapExplainer):  # explain of a fitted explainer too
        kw = {"n_evals": 4} if cls is ShearExplainer else {}
        exp = cls(FrozenEstimator(pipe), **kw).fit(df)
        for row in (df.iloc[0], df[["a", "b"]].iloc[0]):  # mixed and numeric data
            with pytest.raises(ValueError, match=hint):
                exp.explain(row)
    # a step that was never fitted, in front of a fitted model
    model = make().fit(X[:, :2], y)
    unfitted = make_pipeline(StandardScaler(), model)
    with pytest.raises(NotFittedError, match=r"'standardscaler' \(StandardScaler\).*not fitted"):
        cls(FrozenEstimator(unfitted)).fit(X[:, :2])


# ---------------------------------------------------------- issue #24: renamed parameters
@pytest.mark.parametrize("cls,old,new", [
    (KnockoffSHAP, "estimator", "algorithm"),
    (KnockoffSAGE, "estimator", "algorithm"),
    (MaceRecourse, "sparsify", "posthoc_sparsity"),
    # issue #20: one meaning per name
    (KnockoffSAGE, "convergence_tol", "tol"),
    (ShearExplainer, "reference", "background"),
    (TreeShapExplainer, "feature_perturbation", "imputation"),
])
def test_old_parameter_names_say_the_new_name(cls, old, new):
    # an old name gave Python's plain "unexpected keyword argument" with no hint
    import inspect

    from sklearn.base import clone

    with pytest.raises(TypeError, match=rf"^{cls.__name__} got an unexpected keyword "
                                        rf"argument '{old}'; it was renamed to '{new}'"):
        cls(**{old: getattr(cls(), new)})
    with pytest.raises(ValueError, match=rf"'{old}'; it was renamed to '{new}'"):
        cls().set_params(**{old: getattr(cls(), new)})
    # scikit-learn reads the signature: it is the class's own, and clone still works
    assert set(inspect.signature(cls.__init__).parameters) - {"self"} == \
        set(cls._get_param_names())
    assert old not in cls._get_param_names() and new in cls._get_param_names()
    est = cls(**{new: getattr(cls(), new)})
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_name'"):
        cls(no_such_name=1)


# ---------------------------------------------------- issue #24: one warning, not two
def test_convergence_warning_is_given_once_per_fitted_explainer(monkeypatch):
    # n_evals="auto" warned in explain, and score (which explains again) warned again
    import pickle

    from sklearn.exceptions import ConvergenceWarning

    from sklearn_xai.shapley import _knockoff, _shear

    monkeypatch.setattr(_shear, "MAX_AUTO_ROUNDS", 16)  # small caps: a fast test
    monkeypatch.setattr(_knockoff, "MAX_AUTO_N_EVALS", 8)
    monkeypatch.setattr(_knockoff, "MAX_AUTO_KNOCKOFF_FACTOR", 1)
    monkeypatch.setattr(_knockoff, "MAX_PERMUTATION_ROUNDS", 3)
    X, y = _data(n=60)
    # 9 players: SHEAR's "auto" would enumerate 2^n_players coalitions once a step's
    # n_evals reached them (256 at the cap of 16 rounds here)
    X = np.c_[X, np.random.default_rng(5).normal(size=(len(X), 6))]
    model = FrozenEstimator(LogisticRegression().fit(X, y))

    def convergence_warnings(call):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            call()
        return [w for w in seen if issubclass(w.category, ConvergenceWarning)]

    shear = ShearExplainer(model, n_evals="auto", tol=1e-9, random_state=0)
    shap = KnockoffSHAP(model, n_knockoffs=2, n_evals="auto", tol=1e-9, random_state=0)
    for exp in (shear, shap):
        exp.fit(X)
        assert len(convergence_warnings(lambda e=exp: e.explain(X[:4]))) == 1
        assert convergence_warnings(lambda e=exp: e.score(X[:4])) == []
        assert convergence_warnings(lambda e=exp: e.explain(X[:4])) == []
        again = pickle.loads(pickle.dumps(exp))  # pickles, and remembers
        assert convergence_warnings(lambda e=again: e.explain(X[:4])) == []
        exp.fit(X)  # a new fit warns again
        assert len(convergence_warnings(lambda e=exp: e.explain(X[:4]))) == 1
    sage = KnockoffSAGE(model, n_knockoffs=2, tol=1e-12, random_state=0).fit(X)
    assert len(convergence_warnings(lambda: sage.explain(X, y))) == 1
    assert convergence_warnings(lambda: sage.explain(X, y)) == []


def test_integer_columns_of_a_frame_are_not_truncated_before_the_model():
    # The reference row of integer columns is their mean (2.97, not 2): a frame fitted with
    # int64 columns must hand it to the model as it is, exactly as the same rows as floats do.
    rng = np.random.default_rng(0)
    X = rng.integers(0, 7, size=(120, 3))
    y = (X[:, 0] + 2 * X[:, 1] - X[:, 2] + rng.normal(size=120) > 3).astype(int)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = LogisticRegression().fit(X.astype(float), y)
    model_frame = LogisticRegression().fit(frame, y)
    from_array = ShearExplainer(FrozenEstimator(model), n_evals=8).fit(X.astype(float))
    from_frame = ShearExplainer(FrozenEstimator(model_frame), n_evals=8).fit(frame)
    assert not np.all(from_array.reference_ == np.round(from_array.reference_))
    a = from_array.explain(X[:5].astype(float))
    f = from_frame.explain(frame.iloc[:5])
    np.testing.assert_allclose(f.base_values, a.base_values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(f.values, a.values, rtol=0, atol=1e-12)
    # the base value is the model's own output at the (fractional) reference row
    expected = model.predict_proba(from_array.reference_.reshape(1, -1).astype(float))[0, 1]
    assert f.base_values[0] == pytest.approx(expected, abs=1e-12)


# ------------------------------------- a frame whose columns are not the model's, in order
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_a_frame_in_another_order_than_the_models_is_refused(name):
    # A frozen model reads its columns by position: fitted on a frame in another order,
    # TreeSHAP explained the wrong columns under the frame's names, with no error.
    cls = CLASSES[name]
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    y = (frame["a"] + 0.5 * frame["b"] > 0).astype(int)
    model = FrozenEstimator(model_for(cls).fit(frame, y))
    with pytest.raises(ValueError, match="another order .column 0 is 'c', the model's is 'a'"):
        cls(model, **fast_params(cls)).fit(frame[["c", "b", "a"]])
    with pytest.raises(ValueError, match=r"missing \['c'\], unexpected \['d'\]"):
        cls(model, **fast_params(cls)).fit(frame.rename(columns={"c": "d"}))
    cls(model, **fast_params(cls)).fit(frame)  # the model's own order


def test_treeshap_says_it_takes_nan_in_fit_only_when_fit_trains_no_clone():
    # the tag said allow_nan for any tree model, but fit trains a clone of an unfrozen
    # model on X, and GradientBoosting refuses NaN (scikit-learn's pickle check failed)
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
    from sklearn.utils import get_tags

    X, y = _data()
    gb = GradientBoostingClassifier(n_estimators=5, random_state=0)
    assert not get_tags(TreeShapExplainer(gb)).input_tags.allow_nan
    assert get_tags(TreeShapExplainer(FrozenEstimator(gb.fit(X, y)))).input_tags.allow_nan
    assert get_tags(TreeShapExplainer(HistGradientBoostingClassifier())).input_tags.allow_nan
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TreeShapExplainer(GradientBoostingClassifier(n_estimators=5)).fit(X_nan, y)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_get_feature_names_out_checks_input_features(name):
    # input_features was ignored: wrong names or a wrong count gave the fitted names
    cls = CLASSES[name]
    if not hasattr(cls, "get_feature_names_out"):
        pytest.skip(f"{name} is no transformer")  # KnockoffSAGE: one global importance
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    y = (frame["a"] + 0.5 * frame["b"] > 0).astype(int)
    exp = cls(FrozenEstimator(model_for(cls).fit(frame, y)), **fast_params(cls)).fit(frame)
    want = exp.get_feature_names_out()
    np.testing.assert_array_equal(exp.get_feature_names_out(["a", "b", "c"]), want)
    with pytest.raises(ValueError, match="not equal to feature_names_in_"):
        exp.get_feature_names_out(["a", "c", "b"])
    with pytest.raises(ValueError, match="not equal to feature_names_in_"):
        exp.get_feature_names_out(["a", "b"])
    unnamed = cls(FrozenEstimator(model_for(cls).fit(frame.to_numpy(), y)),
                  **fast_params(cls)).fit(frame.to_numpy())
    unnamed.get_feature_names_out(["p", "q", "r"])  # any names of the right number
    with pytest.raises(ValueError, match="length equal to the number of features .3."):
        unnamed.get_feature_names_out(["p", "q"])


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_integer_column_labels_name_players_as_every_explainer_does(name):
    # TreeSHAP named the players of a frame with integer column labels by the labels
    # ('10'), every other explainer (and scikit-learn) x0, x1, ...
    cls = CLASSES[name]
    if not hasattr(cls, "get_feature_names_out"):
        pytest.skip(f"{name} is no transformer")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 3)), columns=[10, 11, 12])
    y = (frame[10] + 0.5 * frame[11] > 0).astype(int)
    exp = cls(FrozenEstimator(model_for(cls).fit(frame, y)), **fast_params(cls)).fit(frame)
    names = [str(n) for n in exp.get_feature_names_out()]
    assert all(n.endswith(("x0", "x1", "x2")) for n in names), names


def test_a_lightgbm_model_takes_its_own_frame_whose_names_it_changed():
    # LightGBM names the column "inc ome" "inc_ome" and predicts on the frame as it is;
    # the columns' check refused that frame
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 3)), columns=["inc ome", "b", "c"])
    model = lgb.LGBMRegressor(n_estimators=5, verbose=-1).fit(frame, frame["inc ome"])
    att = TreeShapExplainer(FrozenEstimator(model)).fit(frame).explain(frame.iloc[:5])
    np.testing.assert_allclose(att.values.sum(axis=1) + np.ravel(att.base_values),
                               model.predict(frame.iloc[:5]), atol=1e-10)
    with pytest.raises(ValueError, match="another order"):
        TreeShapExplainer(FrozenEstimator(model)).fit(frame[["b", "inc ome", "c"]])
