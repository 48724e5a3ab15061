"""KnockoffSHAP / KnockoffSAGE on the base's fit template: ``feature_space``, the rows the
sampler and the background are fitted on, and missing values."""

import warnings
from itertools import combinations
from math import factorial

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.exceptions import DataConversionWarning
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from sklearn_xai.base import BaseExplainer
from sklearn_xai.knockoffs import GaussianKnockoffs
from sklearn_xai.shapley import KnockoffSAGE, KnockoffSHAP


def _shapley(value, P):
    """Shapley values of ``value(frozenset) -> float`` by enumerating every coalition."""
    phi = np.zeros(P)
    for i in range(P):
        others = [j for j in range(P) if j != i]
        for size in range(P):
            w = factorial(size) * factorial(P - size - 1) / factorial(P)
            for S in combinations(others, size):
                phi[i] += w * (value(frozenset(S) | {i}) - value(frozenset(S)))
    return phi


def _hybrids(z, R, S):
    """Rows ``R`` with the columns of ``S`` taken from ``z``."""
    Z = np.array(R, dtype=float, copy=True)
    Z[:, sorted(S)] = z[sorted(S)]
    return Z


def _pipeline_data(n=80, seed=0):
    """2 input columns; the model is linear in the 5 columns of a scaled quadratic
    expansion (so the two spaces give different games)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * [2.0, 0.5] + [1.0, -3.0]
    y = X[:, 0] - 2 * X[:, 1] + 0.5 * X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=n)
    pipe = make_pipeline(StandardScaler(), PolynomialFeatures(2, include_bias=False),
                         LinearRegression()).fit(X, y)
    return X, y, pipe


class _ShiftSampler(BaseEstimator):
    """A deterministic knockoff sampler: knockoff ``k`` of ``x`` is ``x + (k + 1) / 2``,
    recording the rows it was fitted on."""

    def fit(self, X, y=None):
        self.fitted_on_ = np.asarray(X, dtype=float).copy()
        return self

    def sample(self, X, n_knockoffs=1, random_state=None):
        X = np.asarray(X, dtype=float)
        return X[:, None, :] + (np.arange(n_knockoffs) + 1.0)[None, :, None] / 2


# ----------------------------------------------------------------------- fit template
@pytest.mark.parametrize("cls", [KnockoffSHAP, KnockoffSAGE])
def test_fit_is_the_base_template_and_feature_space_a_parameter(cls):
    assert cls.fit is BaseExplainer.fit
    assert cls().get_params()["feature_space"] == "input"
    with pytest.raises(ValueError, match="feature_space"):
        X, y, pipe = _pipeline_data()
        cls(FrozenEstimator(pipe), feature_space="columns").fit(X)


# ----------------------------------------------------------------------- feature_space
def test_shap_model_space_players_are_the_transformed_columns():
    X, _, pipe = _pipeline_data()
    Z = pipe[:-1].transform(X)
    bg = Z[:6]
    ex = KnockoffSHAP(FrozenEstimator(pipe), feature_space="model", imputation="marginal",
                      background=bg, algorithm="exact").fit(X)
    names = list(pipe[:-1].get_feature_names_out())
    assert ex.player_names_ == names and len(names) == 5
    assert ex.feature_space_ == "model" and ex.n_features_explained_ == 5
    att = ex.explain(X[:4])
    last = pipe[-1]
    for r in range(4):
        def v(S, z=Z[r]):
            return last.predict(_hybrids(z, bg, S)).mean()

        np.testing.assert_allclose(att.values[r], _shapley(v, 5), atol=1e-10)
        np.testing.assert_allclose(att.base_values[r], v(frozenset()), atol=1e-10)
    # the model-space reference of score: explained rows are mapped like explain's
    assert ex.reference_.shape == (1, 5)
    assert np.isfinite(ex.score(X[:10]))


def test_shap_input_space_players_are_the_input_columns():
    X, _, pipe = _pipeline_data()
    bg = X[:6]
    ex = KnockoffSHAP(FrozenEstimator(pipe), imputation="marginal", background=bg,
                      algorithm="exact").fit(X)
    assert ex.player_names_ == ["x0", "x1"] and ex.feature_space_ == "input"
    att = ex.explain(X[:4])
    for r in range(4):
        def v(S, x=X[r]):
            return pipe.predict(_hybrids(x, bg, S)).mean()

        np.testing.assert_allclose(att.values[r], _shapley(v, 2), atol=1e-10)


def test_shap_model_space_knockoffs_are_drawn_from_the_transformed_rows():
    X, _, pipe = _pipeline_data()
    Z = pipe[:-1].transform(X)
    ex = KnockoffSHAP(FrozenEstimator(pipe), feature_space="model", sampler=_ShiftSampler(),
                      n_knockoffs=3, algorithm="exact").fit(X)
    np.testing.assert_array_equal(ex.sampler_.fitted_on_, Z)
    att = ex.explain(X[:3])
    for r in range(3):
        ko = Z[r] + (np.arange(3) + 1.0)[:, None] / 2

        def v(S, z=Z[r], ko=ko):
            return pipe[-1].predict(_hybrids(z, ko, S)).mean()

        np.testing.assert_allclose(att.values[r], _shapley(v, 5), atol=1e-10)
    # the default Gaussian sampler models the transformed columns
    default = KnockoffSHAP(FrozenEstimator(pipe), feature_space="model", n_knockoffs=2,
                           random_state=0).fit(X)
    np.testing.assert_allclose(default.sampler_.mean_, Z.mean(axis=0), atol=1e-12)


def test_model_space_background_has_the_explained_columns():
    X, _, pipe = _pipeline_data()
    with pytest.raises(ValueError, match=r"background must have shape \(n_background, 5\)"):
        KnockoffSHAP(FrozenEstimator(pipe), feature_space="model", imputation="marginal",
                     background=X[:5]).fit(X)


def test_sage_model_space_matches_enumeration_and_maps_explain_and_score():
    X, y, pipe = _pipeline_data()
    Z = pipe[:-1].transform(X)
    bg = Z[:5]
    sage = KnockoffSAGE(FrozenEstimator(pipe), feature_space="model", imputation="marginal",
                        background=bg, algorithm="exact").fit(X)
    assert sage.player_names_ == list(pipe[:-1].get_feature_names_out())
    res = sage.explain(X[:12], y[:12])
    expected = np.zeros(5)
    for i in range(12):
        def v(S, z=Z[i], t=y[i]):
            return -(t - pipe[-1].predict(_hybrids(z, bg, S)).mean()) ** 2

        expected += _shapley(v, 5) / 12
    np.testing.assert_allclose(res.importances, expected, atol=1e-10)
    # "input" explains the two input columns through the whole pipeline
    inp = KnockoffSAGE(FrozenEstimator(pipe), imputation="marginal", background=X[:5],
                       algorithm="exact").fit(X)
    assert inp.player_names_ == ["x0", "x1"]
    expected = np.zeros(2)
    for i in range(12):
        def v(S, x=X[i], t=y[i]):
            return -(t - pipe.predict(_hybrids(x, X[:5], S)).mean()) ** 2

        expected += _shapley(v, 2) / 12
    np.testing.assert_allclose(inp.explain(X[:12], y[:12]).importances, expected, atol=1e-10)
    assert -1 <= sage.score(X[:20], y[:20]) <= 1


# ------------------------------------------------------------------ KnockoffSAGE.score
def test_sage_score_checks_X_and_y_once():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    y = frame.to_numpy() @ [1.0, 2.0, 0.0]
    sage = KnockoffSAGE(LinearRegression(), imputation="marginal", background=frame[:5],
                        algorithm="exact").fit(frame, y)
    ref = sage.score(frame[:20], y[:20])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = sage.score(frame.to_numpy()[:20], y[:20, None])
    names = [w for w in caught if "valid feature names" in str(w.message)]
    column = [w for w in caught if issubclass(w.category, DataConversionWarning)]
    assert len(names) == 1 and len(column) == 1
    assert got == pytest.approx(ref, rel=1e-12)


# --------------------------------------------------------------------- missing values
def _nan_data(frame):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ [1.0, -1.0, 2.0]
    Xn = X.copy()
    Xn[3, 1] = np.nan
    if frame:
        return (pd.DataFrame(X, columns=["a", "b", "c"]),
                pd.DataFrame(Xn, columns=["a", "b", "c"]), y, "'b'")
    return X, Xn, y, "'x1'"


def _explainer(cls, model, imputation, **kw):
    kw = {"n_knockoffs": 2, "imputation": imputation, "random_state": 0, **kw}
    if cls is KnockoffSAGE:
        kw.update(n_permutations=2, tol=None)
    return cls(model, **kw)


def _explain(ex, X, y):
    return ex.explain(X, y) if isinstance(ex, KnockoffSAGE) else ex.explain(X)


def _rows(X, rows):
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


@pytest.mark.parametrize("frame", [False, True])
@pytest.mark.parametrize("imputation", ["knockoff", "marginal"])
@pytest.mark.parametrize("cls", [KnockoffSHAP, KnockoffSAGE])
def test_nan_with_a_model_that_refuses_it_names_the_column_and_the_remedy(cls, imputation,
                                                                          frame):
    X, Xn, y, name = _nan_data(frame)
    model = FrozenEstimator(LinearRegression().fit(X, y))
    for fit_rows, explain_rows in [(Xn, None), (X, _rows(Xn, slice(0, 5)))]:
        ex = _explainer(cls, model, imputation)
        with pytest.raises(ValueError, match=rf"NaN in column 1 \({name}\)") as info:
            ex.fit(fit_rows)
            _explain(ex, explain_rows, y[:5])
        assert "impute" in str(info.value) and "drop those rows" in str(info.value)
    # an unfitted model is not trained on the rows first
    with pytest.raises(ValueError, match=rf"NaN in column 1 \({name}\).*impute"):
        _explainer(cls, LinearRegression(), imputation).fit(Xn, y)


@pytest.mark.parametrize("frame", [False, True])
@pytest.mark.parametrize("cls", [KnockoffSHAP, KnockoffSAGE])
def test_nan_with_knockoffs_and_a_model_that_takes_it_names_the_column(cls, frame):
    # the model takes NaN but no knockoff sampler models it: a clear error, in fit and
    # in explain (where it used to draw all-NaN knockoffs and explain them silently)
    X, Xn, y, name = _nan_data(frame)
    hgb = FrozenEstimator(HistGradientBoostingRegressor(max_iter=5).fit(X, y))
    for fit_rows, explain_rows in [(Xn, None), (X, _rows(Xn, slice(0, 5)))]:
        ex = _explainer(cls, hgb, "knockoff")
        with pytest.raises(ValueError, match=rf"NaN in column 1 \({name}\)") as info:
            ex.fit(fit_rows)
            _explain(ex, explain_rows, y[:5])
        msg = str(info.value)
        assert "knockoff" in msg and "impute" in msg and "imputation='marginal'" in msg
    assert not _explainer(cls, hgb, "knockoff").__sklearn_tags__().input_tags.allow_nan


@pytest.mark.parametrize("cls", [KnockoffSHAP, KnockoffSAGE])
def test_nan_with_marginal_imputation_and_a_model_that_takes_it(cls):
    # marginal imputation takes missing values as the model does: v(S) is the mean of
    # f over the background rows (NaN included) with the columns of S from x
    X, Xn, y, _ = _nan_data(False)
    hgb = HistGradientBoostingRegressor(max_iter=5).fit(Xn, y)
    bg = Xn[:6]
    kw = {"algorithm": "exact", "background": bg}
    ex = _explainer(cls, FrozenEstimator(hgb), "marginal", **kw).fit(Xn)
    assert ex.__sklearn_tags__().input_tags.allow_nan
    rows = Xn[[3, 4]]
    if cls is KnockoffSHAP:
        att = ex.explain(rows)
        for r in range(2):
            def v(S, x=rows[r]):
                return hgb.predict(_hybrids(x, bg, S)).mean()

            np.testing.assert_allclose(att.values[r], _shapley(v, 3), atol=1e-10)
    else:
        res = ex.explain(rows, y[[3, 4]])
        expected = np.zeros(3)
        for r in range(2):
            def v(S, x=rows[r], t=y[[3, 4]][r]):
                return -(t - hgb.predict(_hybrids(x, bg, S)).mean()) ** 2

            expected += _shapley(v, 3) / 2
        np.testing.assert_allclose(res.importances, expected, atol=1e-10)


@pytest.mark.parametrize("cls", [KnockoffSHAP, KnockoffSAGE])
def test_model_space_knockoffs_after_an_imputer(cls):
    # with feature_space="model" the pipeline's imputer fills the missing values before
    # the knockoffs are drawn, so NaN inputs are explained
    X, Xn, y, _ = _nan_data(False)
    pipe = make_pipeline(SimpleImputer(), LinearRegression()).fit(Xn, y)
    ex = _explainer(cls, FrozenEstimator(pipe), "knockoff", feature_space="model").fit(Xn)
    assert isinstance(ex.sampler_, GaussianKnockoffs)
    np.testing.assert_allclose(ex.sampler_.mean_, np.nanmean(Xn, axis=0), atol=1e-12)
    out = _explain(ex, Xn[:5], y[:5])
    assert np.all(np.isfinite(out.values if cls is KnockoffSHAP else out.importances))
    # a preprocessing that keeps NaN: the error names the explained column
    scaled = make_pipeline(StandardScaler(), HistGradientBoostingRegressor(max_iter=5))
    with pytest.raises(ValueError, match=r"NaN in column 1 \('x1'\).*imputation='marginal'"):
        _explainer(cls, scaled, "knockoff", feature_space="model").fit(Xn, y)


class _NoisySampler(BaseEstimator):
    """A third-party sampler (no ``sample_seeded``): ``x`` plus seeded noise."""

    def fit(self, X, y=None):
        return self

    def sample(self, X, n_knockoffs=1, random_state=None):
        X = np.asarray(X, dtype=float)
        noise = np.random.RandomState(random_state).normal(size=(len(X), n_knockoffs,
                                                                 X.shape[1]))
        return X[:, None, :] + noise


def test_third_party_sampler_rows_depend_only_on_the_row_and_the_seed():
    X, _, pipe = _pipeline_data()
    kw = {"sampler": _NoisySampler(), "n_knockoffs": 3, "algorithm": "exact"}
    ex = KnockoffSHAP(FrozenEstimator(pipe), random_state=0, **kw).fit(X)
    whole = ex.explain(X[:8]).values
    np.testing.assert_allclose(ex.explain(X[:8][::-1]).values, whole[::-1], rtol=1e-12)
    np.testing.assert_allclose(ex.explain(X[[5, 2, 5]]).values, whole[[5, 2, 5]],
                               rtol=1e-12)
    other = KnockoffSHAP(FrozenEstimator(pipe), random_state=1, **kw).fit(X)
    assert not np.allclose(other.explain(X[:8]).values, whole)


def test_missing_category_with_knockoffs_names_the_column():
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=40), "c": rng.choice(["u", "v"], size=40)})
    df["c"] = df["c"].astype(object)
    df.loc[7, "c"] = None
    y = (df["a"] > 0).astype(int)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["c"]),
                                                 remainder="passthrough"),
                         LogisticRegression()).fit(df, y)
    with pytest.raises(ValueError, match=r"NaN in column 1 \('c'\).*imputation='marginal'"):
        KnockoffSHAP(FrozenEstimator(pipe), n_knockoffs=2).fit(df)
