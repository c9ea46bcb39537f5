"""float32 input: binned as it is, without a float64 copy, to the model of its float64 cast.

The bin edges are float64 and a float32 value is compared with them as the float64 it
equals, so a float32 ``X`` must give the bins, the forest and the predictions that the same
values cast to float64 give, while the fit allocates less than the size of ``X`` itself.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_icml.datasets import make_additive_regression
from sklearn_icml.gam import StumpForestGAMClassifier, StumpForestGAMRegressor, _binning
from sklearn_icml.gam._binning import bin_data, bin_data_reference, bin_edges
from sklearn_icml.gam._encoding import bin_features, feature_bin_edges

SMALL = {"n_stumps": 12, "max_iter": 2, "random_state": 0}


@pytest.fixture(scope="module")
def data32():
    X, y, _ = make_additive_regression(4000, 6, random_state=0)
    X = X.astype(np.float32)
    X[::7, 2] = np.nan  # a column with missing values: its edges are computed apart
    X[:, 4] = np.round(X[:, 4], 1)  # few distinct values: midpoints, not quantiles
    return X, y


def test_float32_binning_equals_the_float64_cast_and_copies_nothing(data32):
    X32, _ = data32
    X64 = X32.astype(np.float64)
    rng = np.random.RandomState
    edges32 = feature_bin_edges(X32, [None] * 6, 40, rng(0), [f"x{j}" for j in range(6)])
    edges64 = feature_bin_edges(X64, [None] * 6, 40, rng(0), [f"x{j}" for j in range(6)])
    for e32, e64 in zip(edges32, edges64):
        assert e32.dtype == np.float64
        np.testing.assert_array_equal(e32, e64)
    np.testing.assert_array_equal(bin_features(X32, edges32, 40), bin_features(X64, edges64, 40))
    complete = X64[:, [0, 1, 3, 4, 5]]
    edges = bin_edges(complete, 40, rng(0))
    np.testing.assert_array_equal(
        bin_data(complete.astype(np.float32), edges, 40),
        bin_data_reference(complete.astype(np.float32).astype(np.float64), edges, 40),
    )
    # a C-contiguous float32 or float64 array is read in place
    assert _binning.as_binnable(X32) is X32 and _binning.as_binnable(X64) is X64


@pytest.mark.parametrize("subsample", [False, True])
def test_float32_fit_is_the_fit_of_its_float64_cast(data32, monkeypatch, subsample):
    X32, y = data32
    X64 = X32.astype(np.float64)
    if subsample:  # the quantiles of a drawn sample of rows
        monkeypatch.setattr(_binning, "BINNING_SUBSAMPLE", 2500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = StumpForestGAMRegressor(**SMALL).fit(X32, y)
        b = StumpForestGAMRegressor(**SMALL).fit(X64, y)
        c = StumpForestGAMClassifier(**SMALL).fit(X32, y > np.median(y))
        d = StumpForestGAMClassifier(**SMALL).fit(X64, y > np.median(y))
    np.testing.assert_array_equal(a.features_, b.features_)
    np.testing.assert_array_equal(a.thresholds_, b.thresholds_)
    # the same predictions, whichever dtype is predicted on
    np.testing.assert_array_equal(a.predict(X32), b.predict(X64))
    np.testing.assert_array_equal(b.predict(X32), b.predict(X64))
    np.testing.assert_array_equal(c.predict_proba(X32), d.predict_proba(X64))


_MEASURE_FIT = """
import tracemalloc, warnings
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn_icml.datasets import make_additive_regression
from sklearn_icml.gam import StumpForestGAMRegressor

X, y, _ = make_additive_regression(40_000, 50, random_state=0)
X = X.astype(np.float32)
model = StumpForestGAMRegressor(n_stumps=3, max_iter=1, random_state=0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    model.fit(X, y)  # compile every kernel this fit uses first (numba's compiler allocates)
    tracemalloc.start()
    model.fit(X, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
print(peak, X.nbytes)
"""


def test_float32_fit_allocates_less_than_its_input():
    # a float64 copy of X would be twice the size of X; the fit's own arrays (bins of one
    # byte per value, the target, weights and scores) are about half of it at 50 features.
    # Measured in a fresh interpreter: tracemalloc counts every thread of the process, and a
    # test suite leaves threads of its own (thread pools, dask) that allocate meanwhile. The
    # second of two equal fits is measured: with cold numba caches the first compiles kernels,
    # and the compiler's allocations are traced too (18.5 MB in a fresh clone).
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE_FIT], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    peak, nbytes = map(int, out.stdout.split())
    assert peak < nbytes, (peak, nbytes)
