"""StumpForestGAMRegressor on dask arrays and dataframes, on a 2-worker LocalCluster.

The same data in memory and as dask chunks must give the same forest: the same stumps and
predictions within 1e-8.
"""

import pickle
import sys

import numpy as np
import pandas as pd
import pytest

from sklearn_icml.datasets import make_additive_regression
from sklearn_icml.gam import StumpForestGAMClassifier, StumpForestGAMRegressor, _binning

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

PARAMS = {"n_stumps": 15, "max_iter": 3, "min_samples_leaf": 10, "max_bins": 48,
          "random_state": 0}


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_additive_regression(2000, 5, random_state=0)
    return X, y


def _assert_same_forest(a, b, X, X_b=None):
    np.testing.assert_array_equal(a.features_, b.features_)
    np.testing.assert_array_equal(a.thresholds_, b.thresholds_)
    for ea, eb in zip(a.bin_edges_, b.bin_edges_):
        np.testing.assert_array_equal(ea, eb)
    X_b = X if X_b is None else X_b
    np.testing.assert_allclose(a.predict(X), b.predict(X_b), rtol=0, atol=1e-8)
    np.testing.assert_allclose(a.objective_history_, b.objective_history_, rtol=1e-10)


@pytest.mark.slow
def test_dask_array_and_dataframe_fit_the_in_memory_forest(client, data, monkeypatch):
    X, y = data
    # fewer sampled rows than rows, so that the binning sample is drawn (and gathered) too
    monkeypatch.setattr(_binning, "BINNING_SUBSAMPLE", 1500)
    memory = StumpForestGAMRegressor(**PARAMS).fit(X, y)
    Xd = da.from_array(X, chunks=(600, 2))  # uneven row chunks, split columns
    yd = da.from_array(y, chunks=600)
    model = StumpForestGAMRegressor(**PARAMS).fit(Xd, yd)
    _assert_same_forest(model, memory, X)
    pred = model.predict(Xd)
    assert isinstance(pred, da.Array)
    np.testing.assert_allclose(pred.compute(), memory.predict(X), rtol=0, atol=1e-8)
    # the fitted model is a plain in-memory estimator
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))

    columns = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=columns)
    df = dd.from_pandas(frame, npartitions=3)
    ys = dd.from_pandas(pd.Series(y), npartitions=3)
    from_df = StumpForestGAMRegressor(**PARAMS).fit(df, ys)
    _assert_same_forest(from_df, memory, frame, X)
    np.testing.assert_array_equal(from_df.feature_names_in_, columns)
    pred_df = from_df.predict(df)
    assert isinstance(pred_df, da.Array)
    np.testing.assert_allclose(pred_df.compute(), memory.predict(X), rtol=0, atol=1e-8)


@pytest.mark.slow
def test_unknown_chunk_sizes_and_constant_weights(client, data):
    X, y = data
    memory = StumpForestGAMRegressor(**PARAMS).fit(X, y, sample_weight=np.full(len(y), 2.0))
    df = dd.from_pandas(pd.DataFrame(X), npartitions=2)
    Xd = df.to_dask_array()  # row chunks of unknown size: counted by the fit
    assert np.isnan(Xd.chunks[0][0])
    yd = dd.from_pandas(pd.Series(y), npartitions=2).to_dask_array()
    model = StumpForestGAMRegressor(**PARAMS).fit(Xd, yd, sample_weight=2.0)
    _assert_same_forest(model, memory, X)


@pytest.mark.slow
def test_dask_fit_with_missing_values_and_auto_size_is_the_in_memory_one(client, data):
    X, y = data
    X = X.copy()
    X[np.random.default_rng(0).random(X.shape[0]) < 0.2, 2] = np.nan
    # n_stumps="auto": the forest grows; early_stopping="auto" fits without a split on dask
    params = {**PARAMS, "n_stumps": "auto", "max_iter": 3, "early_stopping": False}
    memory = StumpForestGAMRegressor(**params).fit(X, y)
    assert memory.n_stumps_ == 30
    Xd = da.from_array(X, chunks=(700, 5))
    model = StumpForestGAMRegressor(**{**params, "early_stopping": "auto"}).fit(
        Xd, da.from_array(y, chunks=700)
    )
    assert not model.do_early_stopping_
    _assert_same_forest(model, memory, X)
    np.testing.assert_array_equal(model.missing_go_to_left_, memory.missing_go_to_left_)


def test_dask_refuses_what_it_does_not_fit(data):
    X, y = data
    Xd = da.from_array(X, chunks=(500, 5))
    yd = da.from_array(y, chunks=500)
    with pytest.raises(NotImplementedError, match="categorical_features"):
        StumpForestGAMRegressor(categorical_features=[1]).fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="monotonic_cst"):
        StumpForestGAMRegressor(monotonic_cst=[1, 0, 0, 0, 0]).fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="early_stopping=True"):
        StumpForestGAMRegressor(early_stopping=True).fit(Xd, yd)
    X_inf = X.copy()
    X_inf[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        StumpForestGAMRegressor().fit(da.from_array(X_inf, chunks=(500, 5)), yd)


def test_bad_dask_input_raises(data):
    X, y = data
    Xd = da.from_array(X, chunks=(500, 5))
    with pytest.raises(ValueError, match="row chunks of y"):
        StumpForestGAMRegressor().fit(Xd, da.from_array(y, chunks=400))
    with pytest.raises(NotImplementedError, match="one weight for every row"):
        StumpForestGAMRegressor().fit(Xd, da.from_array(y, chunks=500),
                                      sample_weight=np.arange(len(y)) + 1.0)
    with pytest.raises(NotImplementedError, match="only StumpForestGAMRegressor"):
        StumpForestGAMClassifier().fit(Xd, da.from_array(y > 0, chunks=500))
    with pytest.raises(TypeError, match="y must be a dask array"):
        StumpForestGAMRegressor().fit(Xd, list(y))
    with pytest.raises(ValueError, match="sample_weight must be positive"):
        StumpForestGAMRegressor().fit(Xd, da.from_array(y, chunks=500), sample_weight=0.0)


def test_missing_dask_names_the_extra(monkeypatch):
    class FakeArray:  # looks like a dask collection; dask itself cannot be imported
        pass

    FakeArray.__module__ = "dask.array.core"
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(ImportError, match=r"sklearn-icml\[dask\]"):
        StumpForestGAMRegressor().fit(FakeArray(), None)
