"""Row batches of explainers run unchanged on a Dask cluster through joblib."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from ._toy_explainer import ToyBaselineShapley

distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def _explainer_and_data():
    X, y = make_classification(n_samples=60, n_features=4, n_informative=3, n_redundant=0,
                               random_state=0)
    exp = ToyBaselineShapley(LogisticRegression(), algorithm="permutation", n_evals=12,
                             batch_size=7, n_jobs=-1, random_state=0).fit(X, y)
    return exp, X


def test_dask_backend_matches_serial(client):
    import joblib

    exp, X = _explainer_and_data()
    serial = exp.set_params(n_jobs=None).explain(X).values
    exp.set_params(n_jobs=-1)
    with joblib.parallel_config(backend="dask"):
        remote = exp.explain(X).values
    np.testing.assert_allclose(remote, serial, rtol=1e-12, atol=1e-15)


@pytest.mark.slow
def test_dask_process_cluster_matches_serial():
    import joblib
    from distributed import Client, LocalCluster

    exp, X = _explainer_and_data()
    serial = exp.set_params(n_jobs=None).explain(X).values
    exp.set_params(n_jobs=-1)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster):
        with joblib.parallel_config(backend="dask"):
            remote = exp.explain(X).values
    np.testing.assert_allclose(remote, serial, rtol=1e-12, atol=1e-15)


# --- every public explainer ------------------------------------------------------------


def _numeric(n=60):
    X, y = make_classification(n_samples=n, n_features=4, n_informative=3, n_redundant=0,
                               random_state=1)
    return X, y


def _tree():
    from sklearn.ensemble import RandomForestClassifier

    from sklearn_xai import TreeShapExplainer

    X, y = _numeric()
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0)
    return TreeShapExplainer(model, batch_size=7).fit(X, y), X[:30], None


def _shear():
    from sklearn_xai import ShearExplainer

    X, y = _numeric()
    return ShearExplainer(LogisticRegression(), n_evals=4, cooperators="random", batch_size=7,
                          random_state=0).fit(X, y), X[:30], None


def _kshap():
    from sklearn_xai import KnockoffSHAP

    X, y = _numeric()
    return KnockoffSHAP(LogisticRegression(), n_knockoffs=3, algorithm="permutation",
                        n_evals=2, batch_size=7, random_state=0).fit(X, y), X[:30], None


def _ksage():
    from sklearn_xai import KnockoffSAGE

    X, y = _numeric()
    return KnockoffSAGE(LogisticRegression(), n_knockoffs=3, n_permutations=3,
                        tol=None, batch_size=7, random_state=0).fit(X, y), \
        X[:30], y[:30]


def _mace():
    from sklearn_xai.recourse import MaceRecourse

    X, y = _numeric()
    return MaceRecourse(LogisticRegression(), n_counterfactuals=2, neighbors="exact",
                        n_neighbors=8, batch_size=2, random_state=0).fit(X, y), X[:6], None


def _p2ce():
    from sklearn_xai.recourse import P2CERecourse

    X, y = _numeric()
    model = LogisticRegression().fit(X, y)
    rejected = X[model.predict(X) == 0][:6]
    return P2CERecourse(LogisticRegression(), grid_step=0.25, max_changes=2, n_estimators=5,
                        shap_samples=5, random_state=0).fit(X, y), rejected, None


def _default(cls):
    """An explainer of the registry without its own case: its fast parameters
    (``tests/_instances.py``) in batches of 7 rows, on 30 rows (6 rejected rows for a
    recourse explainer; ``explain(X, y)`` for a global one)."""
    from sklearn_xai.base import RecourseMixin

    from ._instances import fast_params, model_for

    X, y = _numeric()
    params = fast_params(cls)
    if "batch_size" in cls._get_param_names():
        params["batch_size"] = 7
    exp = cls(model_for(cls), **params).fit(X, y)
    if issubclass(cls, RecourseMixin):
        model = model_for(cls).fit(X, y)
        return exp, X[model.predict(X) == 0][:6], None
    return exp, X[:30], (None if hasattr(cls, "transform") else y[:30])


_CASES = {"TreeShapExplainer": _tree, "ShearExplainer": _shear, "KnockoffSHAP": _kshap,
          "KnockoffSAGE": _ksage, "MaceRecourse": _mace, "P2CERecourse": _p2ce}


def _registered():
    from ._instances import CLASSES

    return CLASSES


#: every registered explainer (sklearn_xai/_registry.py): its own case, or the default
EXPLAINERS = {name: _CASES.get(name, lambda cls=cls: _default(cls))
              for name, cls in _registered().items()}


def _explain(exp, X, y):
    return exp.explain(X) if y is None else exp.explain(X, y)


def _assert_same(remote, serial):
    """Results equal to 1e-12: attributions, SAGE importances or counterfactuals."""
    import pandas as pd

    if hasattr(remote, "counterfactuals"):
        pd.testing.assert_frame_equal(remote.counterfactuals, serial.counterfactuals,
                                      check_exact=False, rtol=1e-12, atol=1e-15)
        pd.testing.assert_frame_equal(remote.costs, serial.costs, check_exact=False,
                                      rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(remote.valid, serial.valid)
        np.testing.assert_array_equal(remote.found, serial.found)
        np.testing.assert_allclose(remote.predictions, serial.predictions, rtol=1e-12,
                                   atol=1e-15)
        assert len(serial.counterfactuals) > 0  # the comparison is not vacuous
        return
    if isinstance(serial, dict):
        # KnockoffSAGE returns a Bunch: ``.values`` is dict.values there, use the key
        for key in ("values", "std"):
            np.testing.assert_allclose(remote[key], serial[key], rtol=1e-12, atol=1e-15)
        assert remote["n_permutations"] == serial["n_permutations"]
        assert np.any(serial["values"] != 0)
        return
    np.testing.assert_allclose(remote.values, serial.values, rtol=1e-12, atol=1e-15)
    if hasattr(serial, "base_values"):
        np.testing.assert_allclose(remote.base_values, serial.base_values, rtol=1e-12,
                                   atol=1e-15)
    assert np.any(serial.values != 0)


@pytest.mark.parametrize("name", sorted(EXPLAINERS))
def test_every_explainer_on_dask_matches_serial(client, name):
    import joblib
    from distributed import get_task_stream

    exp, X, y = EXPLAINERS[name]()
    serial = _explain(exp.set_params(n_jobs=None), X, y)
    exp.set_params(n_jobs=-1)
    with joblib.parallel_config(backend="dask"), get_task_stream(client) as stream:
        remote = _explain(exp, X, y)
    _assert_same(remote, serial)
    assert len(stream.data) >= 2, "no batch ran on the Dask cluster"


@pytest.mark.slow
def test_knockoff_shap_process_cluster_matches_serial():
    """A real explainer's batches pickled to worker processes give the serial values."""
    import joblib
    from distributed import Client, LocalCluster

    exp, X, y = _kshap()
    serial = _explain(exp.set_params(n_jobs=None), X, y)
    exp.set_params(n_jobs=-1)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster):
        with joblib.parallel_config(backend="dask"):
            remote = _explain(exp, X, y)
    _assert_same(remote, serial)


def test_cross_explain_refits_on_dask_match_serial(client):
    # cross_explain runs its refits through joblib, so a Dask cluster takes them as it
    # takes the explainers' row batches
    import joblib
    from sklearn.linear_model import LinearRegression

    from sklearn_xai import KnockoffSHAP
    from sklearn_xai.model_selection import cross_explain

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.normal(size=80)
    exp = KnockoffSHAP(LinearRegression(), imputation="marginal", algorithm="exact",
                       background=X[:10], random_state=0)
    serial = cross_explain(exp, X, y, cv=3, explain_X=X[:5])
    with joblib.parallel_config(backend="dask"):
        remote = cross_explain(exp, X, y, cv=3, explain_X=X[:5], n_jobs=-1)
    np.testing.assert_allclose(remote.values, serial.values, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(remote.std_refit, serial.std_refit, rtol=1e-12, atol=1e-15)
