"""OffManifoldAudit: a fooling attack is flagged and its hidden feature named, honest models
are not, bad inputs are refused, results are reproducible and pickle."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_xai import AuditResult, OffManifoldAudit
from sklearn_xai.audit import _CopulaKnockoffs, _holm
from tests._attack import OODAdversaryClassifier, german_attack_data


@pytest.fixture(scope="module")
def german():
    X_train, X_test, y_train, y_test, names, _ = german_attack_data()
    return (pd.DataFrame(X_train, columns=names), y_train,
            pd.DataFrame(X_test, columns=names), names)


@pytest.fixture(scope="module")
def german_audit(german):
    X, _, _, _ = german
    return OffManifoldAudit(random_state=0).fit(X)


def test_scaffolding_attack_is_flagged_and_its_hidden_feature_named(german, german_audit):
    # Slack et al.'s attack: Gender on rows its detector calls real, the loan rate on
    # the hybrid rows of a k-means(10) marginal explainer
    X, _, _, names = german
    adversary = OODAdversaryClassifier(names.index("Gender"),
                                       names.index("LoanRateAsPercentOfIncome"),
                                       background=10, n_hybrids=20000, repeat_real=5,
                                       random_state=0).fit(X.to_numpy())
    result = german_audit.audit(adversary, X.iloc[:150])
    assert isinstance(result, AuditResult)
    assert result.flagged and result.p_value < 1e-4
    feats = result.features
    assert feats.index[0] == "Gender" and feats.loc["Gender", "flagged"]
    assert feats["flagged"].sum() == 1
    # the evidence: knockoff SHAP ranks Gender first and above its marginal importance,
    # which puts the innocuous loan rate first; the model uses Gender on real rows only
    assert feats.loc["Gender", "knockoff_rank"] == 1
    assert feats.loc["LoanRateAsPercentOfIncome", "marginal_rank"] == 1
    assert (feats.loc["Gender", "knockoff_importance"]
            > feats.loc["Gender", "marginal_importance"])
    assert (feats.loc["Gender", "real_effect"]
            > 10 * feats.loc["Gender", "hybrid_effect"])
    assert result.detector_auc > 0.9
    text = result.summary()
    assert "FLAGGED" in text
    assert "Gender is 1st with knockoff imputation and " in text
    assert "LoanRateAsPercentOfIncome is" in text and "1st with marginal imputation" in text
    # the adversary's output on the detected hybrid rows follows the loan rate rule, so it
    # is a share of 0/1 outputs, and the real rows' outputs are the Gender rule's
    np.testing.assert_array_equal(
        result.output_real, (X.iloc[:150]["Gender"].to_numpy() >= 0).astype(float))
    assert set(np.unique(result.output_hybrid)) <= {0.0, 1.0}
    assert result.features.shape == (len(names), 15)
    assert result.marginal.values.shape == result.knockoff.values.shape == (150, len(names))


@pytest.mark.parametrize("make_model", [
    lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
    lambda: RandomForestClassifier(n_estimators=50, min_samples_leaf=3, random_state=0),
], ids=["logistic regression", "random forest"])
def test_honest_models_on_german_credit_are_not_flagged(german, german_audit, make_model):
    X, y, X_test, _ = german
    model = make_model().fit(X, y)
    result = german_audit.audit(model, X_test)
    assert not result.flagged
    assert result.p_value > german_audit.alpha
    assert not result.features["flagged"].any()
    assert "not flagged" in result.summary()


def test_honest_model_on_adult_is_not_flagged():
    from sklearn_xai.datasets import load_adult

    X, y = load_adult()
    X = X.select_dtypes("number").iloc[:600]
    y = np.asarray(y)[:600]
    model = RandomForestClassifier(n_estimators=50, min_samples_leaf=3,
                                   random_state=0).fit(X.iloc[:400], y[:400])
    result = OffManifoldAudit(random_state=0).fit(X.iloc[:400]).audit(model, X.iloc[400:])
    assert not result.flagged
    assert list(result.features.index) != [] and set(result.features.index) == set(X.columns)


def test_holm_adjustment_by_hand():
    # sorted 0.01, 0.03, 0.04: 3 * 0.01, max(0.03, 2 * 0.03), max(0.06, 1 * 0.04)
    np.testing.assert_allclose(_holm([0.04, 0.01, 0.03]), [0.06, 0.03, 0.06])
    np.testing.assert_allclose(_holm([0.5, 0.9]), [1.0, 1.0])


def test_copula_knockoffs_keep_each_columns_observed_distribution():
    rng = np.random.default_rng(0)
    n = 2000
    skewed = np.where(rng.random(n) < 0.9, 0.0, rng.exponential(5000, n))  # mostly 0
    binary = (rng.random(n) < 0.3).astype(float)
    normal = rng.normal(size=n) + binary
    X = np.column_stack([skewed, binary, normal])
    ko = _CopulaKnockoffs().fit(X).sample(X, 2, random_state=0)
    assert ko.shape == (n, 2, 3)
    for j in range(3):
        # every knockoff value is a value of the column; the share at 0 / the mean match
        assert np.isin(ko[:, :, j], X[:, j]).all()
    assert abs(np.mean(ko[:, :, 0] == 0) - np.mean(skewed == 0)) < 0.03
    assert abs(ko[:, :, 1].mean() - binary.mean()) < 0.03
    assert abs(ko[:, :, 2].mean() - normal.mean()) < 0.1


def test_detector_auc_tells_how_visible_the_hybrids_are():
    rng = np.random.default_rng(0)
    n = 600
    # independent columns and background rows from the data: hybrids are distributed
    # like real rows, the detector cannot beat chance
    X = rng.normal(size=(n, 3))
    blind = OffManifoldAudit(background=X[rng.permutation(n)[:200]], random_state=0).fit(X)
    assert abs(blind.detector_auc_ - 0.5) < 0.1
    # a binary column copied twice: a hybrid that keeps one copy and takes the other from
    # a background row often breaks the equality no real row breaks
    b = (rng.random(n) < 0.5).astype(float)
    X2 = np.column_stack([b, b, rng.normal(size=n)])
    seen = OffManifoldAudit(random_state=0).fit(X2)
    assert seen.detector_auc_ > 0.8


def test_mixed_frame_custom_detector_and_multiclass():
    rng = np.random.default_rng(0)
    n = 200
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n))})
    y = rng.choice([0, 1, 2], n)
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["colour"]),
                                                  remainder="passthrough"),
                          LogisticRegression(max_iter=500)).fit(X, y)
    audit = OffManifoldAudit(background=5, detector=LogisticRegression(), n_evals=2,
                             random_state=0).fit(X)
    assert audit.background_.shape == (5, 3)
    # random rows of the data (k-means needs numbers): each one is a row of X
    assert all((X.to_numpy(dtype=object) == row).all(axis=1).any()
               for row in audit.background_)
    result = audit.audit(model, X.iloc[:20])
    assert set(result.features.index) == {"a", "b", "colour"}
    assert result.output_real.shape == (20, 3)
    assert result.output_names == ["proba(0)", "proba(1)", "proba(2)"]
    assert isinstance(result.p_value, float)


def _small():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] - X[:, 2] > 0).astype(int)
    return X, LogisticRegression().fit(X, y)


def test_same_random_state_same_result_for_any_n_jobs():
    X, model = _small()
    a = OffManifoldAudit(random_state=3).fit(X).audit(model)
    b = OffManifoldAudit(random_state=3).fit(X).audit(model)
    c = OffManifoldAudit(random_state=3, n_jobs=2).fit(X).audit(model)
    for other in (b, c):
        pd.testing.assert_frame_equal(a.features, other.features)
        np.testing.assert_array_equal(a.output_hybrid, other.output_hybrid)
        assert a.p_value == other.p_value and a.detector_auc == other.detector_auc


def test_fitted_audit_and_result_pickle():
    X, model = _small()
    audit = OffManifoldAudit(random_state=0).fit(X)
    again = pickle.loads(pickle.dumps(audit))
    a, b = audit.audit(model), again.audit(model)
    pd.testing.assert_frame_equal(a.features, b.features)
    result = pickle.loads(pickle.dumps(a))
    assert result.summary() == a.summary()


def test_bad_inputs():
    X, model = _small()
    with pytest.raises(NotFittedError):
        OffManifoldAudit().audit(model, X)
    audit = OffManifoldAudit(random_state=0).fit(X)
    with pytest.raises(NotFittedError):
        audit.audit(LogisticRegression(), X)
    with pytest.raises(TypeError, match="model must be a fitted estimator"):
        audit.audit("model.pkl", X)
    with pytest.raises(ValueError, match="4 features"):
        audit.audit(model, X[:, :3])
    with pytest.raises(ValueError, match="at least 2 rows"):
        audit.audit(model, X[:1])
    with pytest.raises(ValueError, match="at least 10 rows"):
        OffManifoldAudit().fit(X[:5])
    with pytest.raises(ValueError, match="min_ratio"):
        OffManifoldAudit(min_ratio=0.5).fit(X)
    with pytest.raises(ValueError, match="alpha"):
        OffManifoldAudit(alpha=1.5).fit(X)
    with pytest.raises(ValueError, match=r"background must have shape \(n_background, 4\)"):
        OffManifoldAudit(background=np.zeros((3, 2))).fit(X)
    with pytest.raises(ValueError, match="detector"):
        OffManifoldAudit(detector="forest").fit(X)
    with pytest.raises(ValueError, match="NaN"):
        OffManifoldAudit().fit(np.where(X > 2, np.nan, X))
    frame = pd.DataFrame(X, columns=list("abcd"))
    fitted = OffManifoldAudit(random_state=0).fit(frame)
    with pytest.raises(ValueError, match="same order"):
        fitted.audit(model, frame[list("bacd")])


def test_a_constant_columns_knockoff_is_its_value():
    # the copula sampler returned the column's normal score (0.0) as the knockoff of a
    # column constant in fit, so an audited linear model had an effect of 5.0 there
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(0)
    train = rng.normal(size=(300, 3))
    model = LinearRegression().fit(train, train.sum(axis=1))
    X = np.column_stack([rng.normal(size=300), np.full(300, 5.0), rng.normal(size=300)])
    audit = OffManifoldAudit(random_state=0).fit(X)
    np.testing.assert_array_equal(audit.sampler_.sample(X[:3], 2, random_state=0)[:, :, 1],
                                  5.0)
    table = audit.audit(model, X[:100]).features
    assert table.loc["x1", "marginal_importance"] == 0.0
    assert abs(table.loc["x1", "knockoff_importance"]) < 1e-12
    assert table.loc["x1", "real_effect"] == 0.0


def test_the_behaviour_test_does_not_round_knockoffs_to_integer_rows():
    # knockoffs of integer rows were cast to the rows' dtype (55.15 -> 55) before the
    # model saw them, while the knockoff explanation used them as drawn
    from sklearn.base import BaseEstimator, RegressorMixin

    from sklearn_xai.knockoffs import GaussianKnockoffs

    seen = []

    class Recorder(RegressorMixin, BaseEstimator):
        def fit(self, X, y):
            self.n_features_in_ = X.shape[1]
            return self

        def predict(self, X):
            seen.append(np.asarray(X, dtype=np.float64))
            return np.asarray(X, dtype=np.float64).sum(axis=1)

    X = np.random.default_rng(0).integers(0, 100, size=(300, 3))
    model = Recorder().fit(X, None)
    audit = OffManifoldAudit(sampler=GaussianKnockoffs(support=None), random_state=0).fit(X)
    audit.audit(model, X[:60])
    # the behaviour test's calls: the 60 rows with one feature swapped for its knockoff,
    # then the hybrid rows twice
    calls = [rows for rows in seen if len(rows) == 60 * (1 + 2 * audit.n_hybrids)]
    assert len(calls) == 3
    for rows in calls:
        assert np.any(rows[:60] != np.round(rows[:60]))  # the knockoffs as drawn


def test_n_jobs_zero_is_refused_by_the_audit_itself():
    with pytest.raises(ValueError, match="n_jobs"):
        OffManifoldAudit(n_jobs=0).fit(np.random.default_rng(0).normal(size=(50, 3)))
