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
    exp = ToyBaselineShapley(LogisticRegression(), estimator="permutation", n_evals=12,
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
