"""The stump forest at scale: compact binning, pair-count stump steps, thread independence.

Every fast path is checked against its plain-numpy reference, and a fit through the
pair-count stump step against the same fit through passes over the rows.
"""

import numpy as np
import pytest

from sklearn_icml.datasets import make_additive_regression
from sklearn_icml.gam import StumpForestGAMRegressor, _loss, _optimizer, _rows
from sklearn_icml.gam import _stump_kernels as K
from sklearn_icml.gam._binning import bin_data, bin_data_reference, bin_dtype, bin_edges
from sklearn_icml.gam._row_source import InMemoryRows


@pytest.mark.parametrize("max_bins", [2, 17, 255, 256, 1000])
def test_bin_data_matches_searchsorted_and_picks_the_smallest_dtype(max_bins):
    rng = np.random.default_rng(0)
    X = np.column_stack([
        rng.standard_normal(3000),
        rng.integers(0, 7, 3000).astype(float),  # few distinct values: midpoints
        np.round(rng.exponential(size=3000), 2),  # many ties
    ])
    edges = bin_edges(X, max_bins, np.random.RandomState(0))
    X_new = np.vstack([X[:50], [[np.inf, -np.inf, np.nan]], [[e[0] for e in edges]]])
    for data in (X, X_new, np.asfortranarray(X)):
        xb = bin_data(data, edges, max_bins)
        assert xb.dtype == (np.uint8 if max_bins <= 255 else np.uint16)
        assert xb.shape == (3, data.shape[0]) and xb.flags.c_contiguous
        np.testing.assert_array_equal(xb, bin_data_reference(data, edges, max_bins))
    assert bin_dtype(255) == np.uint8 and bin_dtype(256) == np.uint16


def test_pair_counts_match_reference():
    rng = np.random.default_rng(1)
    xb = rng.integers(0, 9, size=(5, 400)).astype(np.uint8)
    for parallel in (False, True):
        np.testing.assert_array_equal(
            K.pair_counts(xb, 9, parallel), K.pair_counts_reference(xb, 9)
        )
    assert K.pair_counts_reference(xb, 9)[K.pair_index(1, 3, 5)].sum() == 400


def test_ridge_normal_equations_from_pair_counts_equal_a_pass_over_the_rows():
    # the squared-loss leaf step with constant weights reads its normal equations from the
    # pair counts; they must be the segment sums and Gram matrix of the rows
    rng = np.random.default_rng(3)
    n_bins, weight = 10, 1.7
    xb = rng.integers(0, n_bins, size=(5, 600)).astype(np.uint8)
    y = rng.normal(size=600)
    w = np.full(600, weight)
    problem = _optimizer.StumpForestProblem(
        InMemoryRows(xb, y, w), np.full(5, n_bins - 2), _loss._SquaredLoss(), n_stumps=6,
        l2_reg=1.0,
        min_samples_leaf=1, parallel=False, categorical=np.zeros(5, bool),
        monotone=np.zeros(5, np.int64), missing_bin=n_bins - 1,
    )
    problem.features[:] = [0, 3, 0, 4, 3, 1]
    problem.left[:] = rng.random((6, n_bins)) < 0.5
    seg = problem.segments()
    counts = np.stack([np.bincount(r, minlength=n_bins) for r in xb])
    hist_wy = K.bin_histograms(xb, (w * y)[:, None], n_bins)[:, :, 0]
    sums, M = _loss.pair_ridge_statistics(seg, K.pair_counts(xb, n_bins), counts, weight,
                                          hist_wy)
    ref_sums, ref_M = _loss.ridge_statistics(_rows.Rows(xb, y, w), seg.without_map())
    np.testing.assert_allclose(sums, ref_sums, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(M, ref_M, rtol=1e-12, atol=0)
    np.testing.assert_allclose(M, K.segment_gram_reference(xb, seg.features, seg.lut, w,
                                                            seg.n_segments), rtol=1e-12)


def _masks(n_bins):
    # thresholds (missing slot, the last bin, on either side), a category set, all-but-one
    rng = np.random.default_rng(5)
    masks = []
    for k, missing_left in [(0, False), (3, True), (7, False), (7, True)]:
        mask = np.zeros(n_bins, dtype=bool)
        mask[: k + 1] = True
        mask[-1] = missing_left
        masks.append(mask)
    masks.append(rng.random(n_bins) < 0.5)
    masks.append(np.arange(n_bins) != 4)
    return masks


@pytest.mark.parametrize("j", [0, 2, 4])
@pytest.mark.parametrize("m", range(6))
def test_pair_update_equals_a_pass_over_the_rows(j, m):
    rng = np.random.default_rng(2)
    n_bins = 10  # value bins 0..8 and the missing bin 9, which holds rows here
    xb = rng.integers(0, n_bins, size=(5, 300)).astype(np.uint8)
    goes_left = _masks(n_bins)[m]
    counts = np.stack([np.bincount(r, minlength=n_bins) for r in xb]).astype(np.int64)
    hist = rng.standard_normal((5, n_bins, 1))
    expected = K.pair_update_reference(hist, xb, j, goes_left, 0.7, -1.3)
    K.pair_update(hist, K.pair_counts(xb, n_bins), counts, j, goes_left, 0.7, -1.3)
    np.testing.assert_allclose(hist, expected, rtol=0, atol=1e-12)


def test_one_column_histograms_match_reference_for_both_dtypes():
    rng = np.random.default_rng(3)
    values = rng.standard_normal((700, 1))
    for dtype in (np.uint8, np.uint16):
        xb = rng.integers(0, 40, size=(3, 700)).astype(dtype)
        # bincount sums each bin in row order, as the kernel does: equal to the last bit
        np.testing.assert_array_equal(
            K.bin_histograms(xb, values, 40), K.bin_histograms_reference(xb, values, 40)
        )


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_additive_regression(3000, 6, random_state=0)
    return X, y


PARAMS = {"n_stumps": 20, "max_iter": 4, "min_samples_leaf": 10, "max_bins": 64,
          "random_state": 0, "tol": 0.0}


def _fit(X, y, monkeypatch, pairs, **params):
    monkeypatch.setattr(_optimizer, "PAIR_TABLE_MAX_FRACTION", np.inf if pairs else 0.0)
    return StumpForestGAMRegressor(**{**PARAMS, **params}).fit(X, y)


@pytest.mark.parametrize("init", ["greedy", "random"])
def test_pair_count_stump_step_gives_the_pass_based_forest(data, monkeypatch, init):
    X, y = data
    calls = []
    real = K.pair_counts
    monkeypatch.setattr(K, "pair_counts", lambda *a: calls.append(1) or real(*a))
    fast = _fit(X, y, monkeypatch, True, init=init)
    assert calls  # the pair-count path ran
    slow = _fit(X, y, monkeypatch, False, init=init)
    assert len(calls) == 1  # and the pass-based one did not build the table
    np.testing.assert_array_equal(fast.features_, slow.features_)
    np.testing.assert_array_equal(fast.thresholds_, slow.thresholds_)
    np.testing.assert_allclose(fast.leaf_values_, slow.leaf_values_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.objective_history_, slow.objective_history_, rtol=1e-12)
    np.testing.assert_allclose(fast.predict(X), slow.predict(X), rtol=0, atol=1e-9)
    assert np.all(np.diff(fast.objective_history_) <= 1e-9 * fast.objective_history_[0])


@pytest.mark.parametrize("params", [{"init": "random"}, {"n_stumps": "auto", "max_iter": 6}])
def test_pair_count_path_with_missing_and_categorical_features(data, monkeypatch, params):
    # missing values (the missing bin's slot of the pair tables), a categorical feature
    # (category-set masks) and, with n_stumps="auto", grow and the early-stopping restore
    X, y = data
    X = X.copy()
    X[np.random.default_rng(0).random(X.shape[0]) < 0.15, 1] = np.nan
    X[:, 3] = np.floor(4 * (X[:, 3] - X[:, 3].min()) / np.ptp(X[:, 3]) - 1e-9)
    kw = {"categorical_features": [3], **params}
    calls = []
    real = K.pair_counts
    monkeypatch.setattr(K, "pair_counts", lambda *a: calls.append(1) or real(*a))
    fast = _fit(X, y, monkeypatch, True, **kw)
    assert calls
    n_calls = len(calls)
    slow = _fit(X, y, monkeypatch, False, **kw)
    assert len(calls) == n_calls
    assert np.any(fast.is_categorical_) and np.any(fast.features_ == 3)
    np.testing.assert_array_equal(fast.features_, slow.features_)
    np.testing.assert_array_equal(fast.thresholds_, slow.thresholds_)
    np.testing.assert_array_equal(fast.missing_go_to_left_, slow.missing_go_to_left_)
    np.testing.assert_allclose(fast.leaf_values_, slow.leaf_values_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.objective_history_, slow.objective_history_, rtol=1e-12)
    np.testing.assert_allclose(fast.predict(X), slow.predict(X), rtol=0, atol=1e-9)


def test_weighted_fits_use_passes_and_agree_with_repetition(data, monkeypatch):
    X, y = data
    monkeypatch.setattr(_optimizer, "PAIR_TABLE_MAX_FRACTION", np.inf)
    seen = []
    real = _optimizer.StumpForestProblem.__init__

    def spy(self, *a, **kw):
        real(self, *a, **kw)
        seen.append(self.pairs is None)

    monkeypatch.setattr(_optimizer.StumpForestProblem, "__init__", spy)
    w = np.ones(X.shape[0])
    w[::3] = 2.0
    StumpForestGAMRegressor(**PARAMS).fit(X, y, sample_weight=w)
    StumpForestGAMRegressor(**PARAMS).fit(X, y)
    assert seen == [True, False]  # non-constant weights: no pair table


@pytest.mark.slow
def test_pair_count_fit_does_not_depend_on_the_number_of_threads(data, monkeypatch):
    X, y = data
    monkeypatch.setattr(_optimizer, "PARALLEL_MIN_CELLS", 0)
    one = _fit(X, y, monkeypatch, True, n_jobs=1)
    two = _fit(X, y, monkeypatch, True, n_jobs=2)
    np.testing.assert_array_equal(one.thresholds_, two.thresholds_)
    np.testing.assert_array_equal(one.leaf_values_, two.leaf_values_)
    assert one.objective_history_ == two.objective_history_
