"""Estimators used from several threads at once give what they give one after another.

A web service fits clones of one estimator in a thread pool, or predicts with one fitted
model from every request thread. The numba kernels release the GIL, so these threads really
run together: a fit that kept state outside its estimator (a module-level buffer, a cache
filled during fit), or a predict that wrote to the fitted model, would give other results
than the serial calls. Four threads, small data, a few seconds.
"""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_icml.cluster import PTIBClustering
from sklearn_icml.datasets import make_additive_regression, make_multiview_counts
from sklearn_icml.gam import StumpForestGAMClassifier, StumpForestGAMRegressor

N_THREADS = 4
# the small fits stop at max_iter (warnings.catch_warnings is not for threads)
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _together(function, n_calls=N_THREADS):
    """``function(k)`` for k = 0..n_calls-1 on ``N_THREADS`` threads, each group of
    ``N_THREADS`` calls released together."""
    assert n_calls % N_THREADS == 0
    barrier = threading.Barrier(N_THREADS)

    def call(k):
        barrier.wait()
        return function(k)

    with ThreadPoolExecutor(N_THREADS) as pool:
        return list(pool.map(call, range(n_calls)))


@pytest.fixture(scope="module")
def regression():
    X, y, _ = make_additive_regression(3000, 6, random_state=0)
    X[::11, 3] = np.nan
    return X, y


def _gam_cases(regression):
    X, y = regression
    params = {"n_stumps": 12, "max_iter": 3, "random_state": 0}
    weights = np.random.default_rng(0).uniform(0.5, 2.0, y.shape[0])
    return [
        (StumpForestGAMRegressor(**params, n_jobs=2), X, y, None, "predict"),
        (StumpForestGAMRegressor(**params), X, y, weights, "predict"),
        (StumpForestGAMClassifier(**params), X, np.digitize(y, np.quantile(y, [0.3, 0.7])),
         None, "predict_proba"),
    ]


@pytest.mark.parametrize("case", range(3))
def test_gam_clones_fitted_in_four_threads_equal_the_serial_fit(regression, case):
    estimator, X, y, w, method = _gam_cases(regression)[case]
    serial = clone(estimator).fit(X, y, sample_weight=w)
    models = _together(lambda k: clone(estimator).fit(X, y, sample_weight=w))
    expected = getattr(serial, method)(X)
    for model in models:
        np.testing.assert_array_equal(model.features_, serial.features_)
        np.testing.assert_array_equal(model.thresholds_, serial.thresholds_)
        np.testing.assert_array_equal(getattr(model, method)(X), expected)


def test_one_fitted_gam_predicts_from_four_threads_as_serially(regression):
    X, y = regression
    model = StumpForestGAMRegressor(n_stumps=12, max_iter=3, random_state=0).fit(X, y)
    parts = np.array_split(np.arange(X.shape[0]), 8)  # different rows in each call
    expected = [model.predict(X[rows]) for rows in parts]
    expected_terms = [model.feature_contributions(X[rows]) for rows in parts]
    got = _together(lambda k: model.predict(X[parts[k]]), n_calls=len(parts))
    terms = _together(lambda k: model.feature_contributions(X[parts[k]]), n_calls=len(parts))
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(terms, expected_terms):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def views():
    Xs, _ = make_multiview_counts(
        60, n_clusters=3, views=[(30, 0.3), (20, 0.4), (25, 1.0)], n_tokens=40,
        random_state=0,
    )
    return Xs


def test_ptib_clones_fitted_in_four_threads_equal_the_serial_fit(views):
    estimator = PTIBClustering(n_clusters=3, n_init=2, random_state=0)
    serial = clone(estimator).fit(views)
    models = _together(lambda k: clone(estimator).fit(views))
    for model in models:
        np.testing.assert_array_equal(model.labels_, serial.labels_)
        np.testing.assert_array_equal(model.view_weights_, serial.view_weights_)
        np.testing.assert_array_equal(model.predict(views), serial.predict(views))


def test_one_fitted_ptib_predicts_from_four_threads_as_serially(views):
    model = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(views)
    parts = np.array_split(np.arange(views[0].shape[0]), 8)
    expected = [model.predict([X[rows] for X in views]) for rows in parts]
    got = _together(lambda k: model.predict([X[parts[k]] for X in views]), n_calls=len(parts))
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
