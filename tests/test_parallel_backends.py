"""The library's parallel loops run on a dask cluster through joblib's dask backend.

`run_seeds` (the seed runner of the bandits) and `CAPASimilarity`'s cross-validated
predictions go through joblib with ``n_jobs``, so that
``joblib.parallel_config(backend="dask")`` sends their tasks to the workers of a
``distributed.Client``. The test starts its own two-process ``LocalCluster`` and closes it,
and checks that the cluster gives the same results as one process.
"""

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import GaussianNB

from sklearn_icml.bandits import ClusterRandomizedEXP3IX, InterferenceGridEnv, run_seeds
from sklearn_icml.metrics import CAPASimilarity

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.mark.slow
def test_run_seeds_on_a_dask_cluster_matches_one_process(client):
    env = InterferenceGridEnv(grid_side=8, n_arms=3, horizon=30, theta=[0.5, 0.4, 0.3],
                              random_state=0)
    policy = ClusterRandomizedEXP3IX(n_arms=3, horizon=30, random_state=0)
    serial = run_seeds(policy, env, [0, 1, 2, 3], n_jobs=1)
    with distributed.get_task_stream(client) as tasks, parallel_config(backend="dask"):
        on_cluster = run_seeds(policy, env, [0, 1, 2, 3], n_jobs=2)
    assert len(tasks.data) >= 1  # the seeds ran as tasks on the cluster's workers
    assert [r.regret_ for r in on_cluster] == [r.regret_ for r in serial]
    for a, b in zip(serial, on_cluster):
        np.testing.assert_array_equal(a.cumulative_regret_, b.cumulative_regret_)


@pytest.mark.slow
def test_capa_similarity_on_a_dask_cluster_matches_one_process(client):
    X, y = load_iris(return_X_y=True)
    estimators = [("lr", LogisticRegression(max_iter=500)), ("nb", GaussianNB())]
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    serial = CAPASimilarity(estimators=estimators, cv=cv).fit(X, y)
    with distributed.get_task_stream(client) as tasks, parallel_config(backend="dask"):
        on_cluster = CAPASimilarity(estimators=estimators, cv=cv, n_jobs=2).fit(X, y)
    assert len(tasks.data) >= 1  # the folds ran as tasks on the cluster's workers
    np.testing.assert_allclose(on_cluster.similarity_, serial.similarity_, rtol=0, atol=1e-12)
