"""The stump-forest GAMs on dask arrays and dataframes, on a 2-worker LocalCluster.

The same data in memory and as dask chunks must give the same forest: the same stumps and
predictions within 1e-8, with every option that the in-memory fit has (weights, missing
values, categorical features, monotone constraints, the classifiers); early stopping holds
out other rows on dask, so there the fit is checked on its own.
"""

import pickle
import sys

import numpy as np
import pandas as pd
import pytest

from sklearn_icml.datasets import make_additive_regression
from sklearn_icml.gam import (
    StumpForestGAMClassifier,
    StumpForestGAMRegressor,
    _binning,
    _optimizer,
)

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
    # n_stumps="auto": the forest grows (without early stopping, so that the rows match)
    params = {**PARAMS, "n_stumps": "auto", "max_iter": 3, "early_stopping": False}
    memory = StumpForestGAMRegressor(**params).fit(X, y)
    assert memory.n_stumps_ == _optimizer.next_size(_optimizer.next_size(_optimizer.next_size(0)))
    Xd = da.from_array(X, chunks=(700, 5))
    model = StumpForestGAMRegressor(**params).fit(Xd, da.from_array(y, chunks=700))
    assert not model.do_early_stopping_
    _assert_same_forest(model, memory, X)
    np.testing.assert_array_equal(model.missing_go_to_left_, memory.missing_go_to_left_)


@pytest.mark.slow
def test_varying_weights_on_dask_are_the_in_memory_fit(client, data):
    X, y = data
    w = np.random.default_rng(1).uniform(0.2, 3.0, len(y))
    memory = StumpForestGAMRegressor(**PARAMS).fit(X, y, sample_weight=w)
    Xd = da.from_array(X, chunks=(500, 5))
    yd = da.from_array(y, chunks=500)
    for weights in (w, da.from_array(w, chunks=500)):  # numpy or dask weights
        model = StumpForestGAMRegressor(**PARAMS).fit(Xd, yd, sample_weight=weights)
        _assert_same_forest(model, memory, X)
        np.testing.assert_allclose(model.term_importances(), memory.term_importances(),
                                   rtol=1e-10)


@pytest.fixture(scope="module")
def classes_data():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1500, 4))
    score = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - 1 + 0.5 * X[:, 2]
    labels = np.digitize(score + 0.4 * rng.normal(size=1500), [-0.5, 0.5])
    return X, labels


def _assert_same_classifier(a, b, X, X_b=None):
    np.testing.assert_array_equal(a.classes_, b.classes_)
    np.testing.assert_array_equal(a.features_, b.features_)
    np.testing.assert_array_equal(a.thresholds_, b.thresholds_)
    X_b = X if X_b is None else X_b
    # Newton leaf steps that end with a full step once the objective cannot resolve the
    # decrease: the same to rounding whatever the order in which the row sums are added
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X_b), rtol=0, atol=1e-11)
    np.testing.assert_allclose(a.objective_history_, b.objective_history_, rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifiers_on_dask_are_the_in_memory_fit(client, classes_data, n_classes):
    X, labels = classes_data
    y = np.array(["low", "mid", "high"])[labels] if n_classes == 3 else labels > 0
    params = {**PARAMS, "n_stumps": 6, "max_iter": 2}
    memory = StumpForestGAMClassifier(**params).fit(X, y)
    Xd = da.from_array(X, chunks=(400, 4))
    yd = da.from_array(y, chunks=400)
    model = StumpForestGAMClassifier(**params).fit(Xd, yd)
    _assert_same_classifier(model, memory, X)
    proba = model.predict_proba(Xd)
    assert isinstance(proba, da.Array) and proba.shape == (len(y), n_classes)
    np.testing.assert_allclose(proba.compute(), model.predict_proba(X), rtol=0, atol=0)
    np.testing.assert_array_equal(model.predict(Xd).compute(), memory.predict(X))
    assert model.decision_function(Xd).compute().shape == memory.decision_function(X).shape


def test_string_labels_of_a_dask_series(client, classes_data):
    # object labels: the classes are the union of each partition's labels
    X, labels = classes_data
    y = pd.Series(np.array(["no", "yes"], dtype=object)[(labels > 0).astype(int)])
    params = {**PARAMS, "n_stumps": 2, "max_iter": 1}
    memory = StumpForestGAMClassifier(**params).fit(X, y)
    model = StumpForestGAMClassifier(**params).fit(
        dd.from_pandas(pd.DataFrame(X), npartitions=2), dd.from_pandas(y, npartitions=2)
    )
    np.testing.assert_array_equal(model.classes_, ["no", "yes"])
    np.testing.assert_array_equal(model.predict(X), memory.predict(X))


@pytest.mark.slow
def test_monotone_constraints_on_dask_are_the_in_memory_fit(client, data, classes_data):
    X, y = data
    params = {**PARAMS, "monotonic_cst": [1, 0, -1, 0, 0], "l2_reg": 1.0}
    memory = StumpForestGAMRegressor(**params).fit(X, y)
    model = StumpForestGAMRegressor(**params).fit(
        da.from_array(X, chunks=(500, 5)), da.from_array(y, chunks=500)
    )
    _assert_same_forest(model, memory, X)
    shapes = model.shape_functions()
    for name, sign in (("x0", 1), ("x2", -1)):
        if name in shapes:
            assert np.all(sign * np.diff(shapes[name].scores) >= 0)
    Xc, labels = classes_data
    params = {**PARAMS, "n_stumps": 4, "max_iter": 1, "monotonic_cst": [0, 0, 1, 0]}
    memory = StumpForestGAMClassifier(**params).fit(Xc, labels > 0)
    model = StumpForestGAMClassifier(**params).fit(
        da.from_array(Xc, chunks=(500, 4)), da.from_array(labels > 0, chunks=500)
    )
    _assert_same_classifier(model, memory, Xc)


@pytest.mark.slow
def test_categorical_features_on_dask_are_the_in_memory_fit(client, data):
    X, y = data
    rng = np.random.default_rng(3)
    colour = pd.Categorical(rng.choice(["red", "green", "blue", None], len(y)))
    frame = pd.DataFrame(X[:, :4], columns=["a", "b", "c", "d"]).assign(colour=colour)
    frame.loc[rng.random(len(y)) < 0.1, "b"] = np.nan
    y = y + np.select([colour == "red", colour == "green"], [1.0, -1.0], 0.0)
    memory = StumpForestGAMRegressor(**PARAMS).fit(frame, y)
    assert memory.is_categorical_.tolist() == [False] * 4 + [True]
    df = dd.from_pandas(frame, npartitions=3)
    model = StumpForestGAMRegressor(**PARAMS).fit(df, dd.from_pandas(pd.Series(y), npartitions=3))
    np.testing.assert_array_equal(model.is_categorical_, memory.is_categorical_)
    np.testing.assert_array_equal(model.categories_[4], memory.categories_[4])
    _assert_same_forest(model, memory, frame)
    assert any(c is not None for c in model.left_categories_)
    np.testing.assert_allclose(model.predict(df).compute(), memory.predict(frame), atol=1e-8)
    # codes of a dask array named as categorical: the same categories as in memory
    codes = np.column_stack([X[:, :4], rng.integers(0, 4, len(y)).astype(float)])
    memory = StumpForestGAMRegressor(**PARAMS, categorical_features=[4]).fit(codes, y)
    model = StumpForestGAMRegressor(**PARAMS, categorical_features=[4]).fit(
        da.from_array(codes, chunks=(700, 5)), da.from_array(y, chunks=700)
    )
    np.testing.assert_array_equal(model.categories_[4], memory.categories_[4])
    _assert_same_forest(model, memory, codes)


@pytest.mark.slow
def test_early_stopping_on_dask_holds_out_rows_of_each_partition(client, data):
    X, y = data
    Xd = da.from_array(X, chunks=(500, 5))
    yd = da.from_array(y, chunks=500)
    # four rounds of the size path: on dask every stump step is a pass over the partitions,
    # and the path of this smooth problem would grow to 155 stumps (about 800 passes)
    params = {**PARAMS, "n_stumps": "auto", "max_iter": 4, "n_iter_no_change": 1,
              "tol": 1e-2}
    model = StumpForestGAMRegressor(**params).fit(Xd, yd)
    assert model.do_early_stopping_  # "auto": the forest grows, so rows are held out
    assert 2 <= model.validation_score_.shape[0] <= 5  # the first forest, then one per round
    memory = StumpForestGAMRegressor(**params).fit(X, y)
    assert model.score(X, y) > memory.score(X, y) - 0.05  # an equally good fit
    # the classifier's split is stratified per partition; same seed, same model
    params = {**PARAMS, "n_stumps": 3, "max_iter": 1, "early_stopping": True}
    yc = da.from_array(y > 0, chunks=500)
    clf = StumpForestGAMClassifier(**params).fit(Xd, yc)
    again = StumpForestGAMClassifier(**params).fit(Xd, yc)
    assert clf.do_early_stopping_ and clf.validation_score_.shape == (2,)
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    memory = StumpForestGAMClassifier(**params).fit(X, y > 0)
    assert clf.score(X, y > 0) > memory.score(X, y > 0) - 0.05


def test_bad_dask_weights_raise(data):
    X, y = data
    Xd = da.from_array(X, chunks=(500, 5))
    yd = da.from_array(y, chunks=500)
    with pytest.raises(ValueError, match="chunks of sample_weight"):
        StumpForestGAMRegressor().fit(Xd, yd, sample_weight=da.ones(len(y), chunks=400))
    with pytest.raises(ValueError, match="non-negative"):
        StumpForestGAMRegressor().fit(Xd, yd, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="sums to zero"):
        StumpForestGAMRegressor().fit(Xd, yd, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match="shape"):
        StumpForestGAMRegressor().fit(Xd, yd, sample_weight=np.ones(3))
    X_inf = X.copy()
    X_inf[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        StumpForestGAMRegressor().fit(da.from_array(X_inf, chunks=(500, 5)), yd)
    with pytest.raises(ValueError, match="continuous"):
        StumpForestGAMClassifier().fit(Xd, yd)
    with pytest.raises(ValueError, match="monotonic_cst"):
        StumpForestGAMRegressor(monotonic_cst=[1, 0]).fit(Xd, yd)


def test_bad_dask_input_raises(data):
    X, y = data
    Xd = da.from_array(X, chunks=(500, 5))
    with pytest.raises(ValueError, match="row chunks of y"):
        StumpForestGAMRegressor().fit(Xd, da.from_array(y, chunks=400))
    with pytest.raises(TypeError, match="y must be a dask array"):
        StumpForestGAMRegressor().fit(Xd, list(y))
    with pytest.raises(ValueError, match="requires y"):
        StumpForestGAMRegressor().fit(Xd, None)
    with pytest.raises(ValueError, match="2-D"):
        StumpForestGAMRegressor().fit(da.ones(10, chunks=5), da.ones(10, chunks=5))


def test_missing_dask_names_the_extra(monkeypatch):
    class FakeArray:  # looks like a dask collection; dask itself cannot be imported
        pass

    FakeArray.__module__ = "dask.array.core"
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(ImportError, match=r"sklearn-icml\[dask\]"):
        StumpForestGAMRegressor().fit(FakeArray(), None)


@pytest.mark.slow
def test_a_worker_killed_mid_fit_gives_the_same_model(data, monkeypatch):
    # a worker process is killed (SIGKILL) between two sums of the fit, once the binned
    # partitions are persisted: the partitions it held are recomputed from their graph on
    # the worker its nanny starts (or the other one), and since the client adds the
    # partitions' sums in partition order wherever they were computed, the fit gives the
    # model of the fit in memory. The kill is made from the fit's own thread, at a fixed
    # sum, so that the test does not depend on timing. Its own cluster: the module's
    # cluster is left as it was.
    import os
    import signal
    import time

    from sklearn_icml.gam import _dask

    X, y = data
    memory = StumpForestGAMRegressor(**PARAMS).fit(X, y)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        killed = []
        row_sum = _dask.DaskPartitions.row_sum

        def kill_then_sum(partitions, function, *args):
            if not killed and partitions._groups and len(partitions._groups) == 2:
                victim = partitions._groups[0][0]  # holds some of the partitions
                pid = client.run(os.getpid, workers=[victim])[victim]
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + 15
                while victim in client.scheduler_info()["workers"]:
                    assert time.monotonic() < deadline, "the scheduler kept the dead worker"
                    time.sleep(0.05)
                killed.append(victim)
            return row_sum(partitions, function, *args)

        monkeypatch.setattr(_dask.DaskPartitions, "row_sum", kill_then_sum)
        Xd = da.from_array(X, chunks=(250, 5))
        yd = da.from_array(y, chunks=250)
        model = StumpForestGAMRegressor(**PARAMS).fit(Xd, yd)
        assert killed and killed[0] not in client.scheduler_info()["workers"]
    _assert_same_forest(model, memory, X)
