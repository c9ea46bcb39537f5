"""The numba kernels of the stump forest against their plain-numpy references."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from sklearn_icml.gam import _loss, _rows
from sklearn_icml.gam import _stump_kernels as K


def _binned(rng, n_samples, n_features, n_bins):
    xb = rng.integers(0, n_bins, size=(n_features, n_samples)).astype(np.uint16)
    n_edges = np.full(n_features, n_bins - 1, dtype=np.int64)
    return xb, n_edges


def _counts(xb, n_bins):
    return np.stack([np.bincount(row, minlength=n_bins) for row in xb]).astype(np.int64)


@pytest.mark.parametrize("n_values", [1, 2, 3])
def test_bin_histograms_match_reference(n_values):
    rng = np.random.default_rng(0)
    xb, _ = _binned(rng, 500, 4, 17)
    values = rng.normal(size=(500, n_values))
    np.testing.assert_allclose(
        K.bin_histograms(xb, values, 17),
        K.bin_histograms_reference(xb, values, 17),
        rtol=1e-12,
        atol=1e-12,
    )


def _split_inputs(rng, n_samples, n_features, n_bins, missing_share):
    """Codes 0..n_bins-1 plus the missing code n_bins for a share of the rows."""
    xb, n_edges = _binned(rng, n_samples, n_features, n_bins)
    xb[rng.uniform(size=xb.shape) < missing_share] = n_bins
    return xb, n_edges, n_bins  # missing bin = n_bins, histograms have n_bins + 1 slots


def _scan(xb, g, h, n_edges, missing_bin, l2_reg, msl, **kwargs):
    n_slots = missing_bin + 1
    return K.best_splits(
        K.bin_histograms(xb, g, n_slots), K.bin_histograms(xb, h, n_slots),
        _counts(xb, n_slots), n_edges, l2_reg, msl, missing_bin=missing_bin, **kwargs,
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_values", [1, 3])
@pytest.mark.parametrize("min_samples_leaf", [1, 4])
@pytest.mark.parametrize("missing_share", [0.0, 0.2])
def test_prefix_scan_finds_brute_force_best_split(seed, n_values, min_samples_leaf,
                                                  missing_share):
    # n=30, D=3: the fast scan against a brute force over all thresholds and,
    # with missing rows, both sides for the missing bin
    rng = np.random.default_rng(seed)
    xb, n_edges, missing_bin = _split_inputs(rng, 30, 3, 12, missing_share)
    g = rng.normal(size=(30, n_values))
    h = rng.uniform(0.1, 1.0, size=(30, n_values))
    gain, left = _scan(xb, g, h, n_edges, missing_bin, 0.7, min_samples_leaf)
    ref_gain, ref_rows = K.best_splits_reference(
        xb, g, h, n_edges, 0.7, min_samples_leaf, missing_bin=missing_bin
    )
    np.testing.assert_allclose(gain, ref_gain, rtol=0, atol=1e-10)
    for j in range(3):
        np.testing.assert_array_equal(left[j][xb[j]], ref_rows[j])
    assert int(np.argmax(gain)) == int(np.argmax(ref_gain))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("missing_share", [0.0, 0.15])
@pytest.mark.parametrize("loss", ["squared", "newton"])
def test_category_order_scan_is_the_best_subset(seed, missing_share, loss):
    # Fisher's ordering: the best prefix of the categories sorted by G/H is the best of all
    # 2^(m-1) - 1 subsets (the missing bin counted as a category when it has rows)
    rng = np.random.default_rng(10 + seed)
    xb, n_edges, missing_bin = _split_inputs(rng, 80, 2, 7, missing_share)
    g = rng.normal(size=(80, 1)) + 0.5 * (xb[0] % 3)[:, None]
    h = np.ones((80, 1)) if loss == "squared" else rng.uniform(0.05, 0.25, size=(80, 1))
    categorical = np.array([True, True])
    gain, left = _scan(xb, g, h, n_edges, missing_bin, 0.3, 1, categorical=categorical)
    ref_gain, ref_rows = K.best_splits_reference(
        xb, g, h, n_edges, 0.3, 1, categorical=categorical, missing_bin=missing_bin
    )
    np.testing.assert_allclose(gain, ref_gain, rtol=1e-12, atol=1e-12)
    for j in range(2):  # the same partition of the rows (up to swapping the sides)
        rows = left[j][xb[j]]
        assert np.array_equal(rows, ref_rows[j]) or np.array_equal(rows, ~ref_rows[j])


def test_missing_bin_without_rows_goes_with_the_larger_side():
    rng = np.random.default_rng(3)
    xb, n_edges, missing_bin = _split_inputs(rng, 50, 2, 6, 0.0)
    g, h = rng.normal(size=(50, 1)), np.ones((50, 1))
    for categorical in (None, np.array([True, True])):
        _, left = _scan(xb, g, h, n_edges, missing_bin, 1.0, 1, categorical=categorical)
        for j in range(2):
            n_left = int(left[j][xb[j]].sum())
            assert left[j, missing_bin] == (n_left >= 50 - n_left)


def test_monotone_scan_keeps_only_ordered_leaves():
    rng = np.random.default_rng(7)
    xb, n_edges, missing_bin = _split_inputs(rng, 200, 2, 10, 0.1)
    g = (xb[0] - 4.5)[:, None] * 1.0 + rng.normal(size=(200, 1))  # residual falls with x
    h = np.ones((200, 1))
    for sign in (1, -1):
        monotone = np.array([sign, sign])
        gain, left = _scan(xb, g, h, n_edges, missing_bin, 0.5, 5, monotone=monotone)
        ref_gain, ref_rows = K.best_splits_reference(
            xb, g, h, n_edges, 0.5, 5, monotone=monotone, missing_bin=missing_bin
        )
        np.testing.assert_allclose(gain, ref_gain, atol=1e-10)
        for j in range(2):
            rows = left[j][xb[j]]
            np.testing.assert_array_equal(rows, ref_rows[j])
            a = -g[rows].sum() / (rows.sum() + 0.5)
            c = -g[~rows].sum() / ((~rows).sum() + 0.5)
            if left[j, : n_edges[j] + 1].any() and not left[j, : n_edges[j] + 1].all():
                assert sign * (c - a) >= 0


def test_scan_respects_min_samples_leaf_and_reports_no_split():
    rng = np.random.default_rng(1)
    xb, n_edges, missing_bin = _split_inputs(rng, 30, 2, 5, 0.1)
    g, h = rng.normal(size=(30, 1)), np.ones((30, 1))
    gain, left = _scan(xb, g, h, n_edges, missing_bin, 1.0, 16)
    assert np.all(np.isneginf(gain))  # 16 + 16 > 30 rows
    gain, left = _scan(xb, g, h, n_edges, missing_bin, 1.0, 8)
    for j in range(2):
        if np.isfinite(gain[j]):
            n_left = int(left[j][xb[j]].sum())
            assert n_left >= 8 and 30 - n_left >= 8


def test_squared_gain_is_twice_the_objective_decrease():
    rng = np.random.default_rng(2)
    xb, n_edges, missing_bin = _split_inputs(rng, 40, 1, 6, 0.2)
    r, w, lam = rng.normal(size=40), rng.uniform(0.5, 2.0, size=40), 0.3
    gain, goes = _scan(xb, (-w * r)[:, None], w[:, None], n_edges, missing_bin, lam, 1)
    left = goes[0][xb[0]]
    a = np.dot(w[left], r[left]) / (w[left].sum() + lam)
    c = np.dot(w[~left], r[~left]) / (w[~left].sum() + lam)
    zero = 0.5 * np.dot(w, r**2)
    fitted = 0.5 * np.dot(w, (r - np.where(left, a, c)) ** 2) + 0.5 * lam * (a**2 + c**2)
    assert gain[0] / 2 == pytest.approx(zero - fitted, rel=1e-12)


def _segments(rng, n_samples):
    n_bins = 9
    xb, _ = _binned(rng, n_samples, 4, n_bins)
    features = np.array([0, 2, 3], dtype=np.int64)
    thresholds = [np.array([2, 5]), np.array([4]), np.array([0, 3, 6])]
    lut = np.zeros((3, n_bins), dtype=np.int64)
    starts, sizes, start = [], [], 0
    for q, u in enumerate(thresholds):
        lut[q] = start + np.searchsorted(u, np.arange(n_bins))
        starts.append(start)
        sizes.append(u.size + 1)
        start += u.size + 1
    pair_a, pair_b = np.triu_indices(3)
    return (
        xb,
        features,
        lut,
        np.array(starts, dtype=np.int64),
        np.array(sizes, dtype=np.int64),
        pair_a.astype(np.int64),
        pair_b.astype(np.int64),
        start,
    )


def test_segment_kernels_match_dense_one_hot():
    rng = np.random.default_rng(3)
    xb, features, lut, starts, sizes, pa, pb, n_seg = _segments(rng, 300)
    values = rng.normal(size=(300, 2))
    weights = rng.uniform(size=300)
    np.testing.assert_allclose(
        K.segment_sums(xb, features, lut, values, n_seg),
        K.segment_sums_reference(xb, features, lut, values, n_seg),
        atol=1e-12,
    )
    np.testing.assert_allclose(
        K.segment_gram(xb, features, lut, starts, sizes, pa, pb, weights),
        K.segment_gram_reference(xb, features, lut, weights, n_seg),
        atol=1e-12,
    )
    seg_values, base = rng.normal(size=(n_seg, 2)), rng.normal(size=2)
    np.testing.assert_allclose(
        K.segment_predict(xb, features, lut, seg_values, base),
        K.segment_predict_reference(xb, features, lut, seg_values, base),
        atol=1e-12,
    )


def test_add_stump_and_logistic_loss_match_numpy():
    rng = np.random.default_rng(4)
    xb, _ = _binned(rng, 200, 1, 7)
    F = rng.normal(size=(200, 2))
    left, right = np.array([1.5, -2.0]), np.array([0.5, 4.0])
    goes_left = np.array([True, False, True, True, False, False, True])
    expected = K.add_stump_reference(F, xb[0], goes_left, left, right, -1.0)
    K.add_stump(F, xb[0], goes_left, left, right, -1.0)
    np.testing.assert_allclose(F, expected, atol=1e-14)

    F1 = 30 * rng.normal(size=(200, 1))  # large scores: no overflow
    y, w = rng.integers(0, 2, 200).astype(float), rng.uniform(size=200)
    loss = _loss._LogisticLoss()
    assert loss.loss(y, F1, w) == pytest.approx(loss.loss_reference(y, F1, w), rel=1e-12)


@pytest.mark.parametrize("l2_reg", [0.0, 0.5, 20.0])
@pytest.mark.parametrize("left", [True, False])
def test_logistic_leaf_newton_is_the_exact_minimiser(l2_reg, left):
    rng = np.random.default_rng(5)
    xb, _ = _binned(rng, 300, 1, 5)
    F = rng.normal(size=(300, 1))
    y = (rng.uniform(size=300) < 0.3).astype(float)
    w = rng.uniform(0.2, 2.0, size=300)
    goes_left = np.array([True, False, True, False, True])
    rows = goes_left[xb[0]] == left

    def phi(a):
        f = F[rows, 0] + a
        return np.dot(w[rows], np.logaddexp(0, f) - y[rows] * f) + 0.5 * l2_reg * a * a

    ref = minimize_scalar(phi, bounds=(-20, 20), method="bounded", options={"xatol": 1e-12}).x
    got = K.logistic_leaf_newton(F, y, w, xb[0], goes_left, left, 3.0, l2_reg, 50, 1e-12)
    assert got == pytest.approx(ref, abs=1e-7)
    assert phi(got) <= phi(ref) + 1e-10


@pytest.mark.parametrize("l2_reg", [0.0, 2.0])
def test_leaf_newton_from_summed_terms_is_the_in_memory_solve(l2_reg):
    # the dask fit drives the leaf solves by sums over partitions: the logistic driver
    # follows the numba kernel's iterates, and summing two halves of the rows changes nothing
    rng = np.random.default_rng(8)
    xb, _ = _binned(rng, 400, 1, 6)
    goes_left = np.array([True, False, True, True, False, False])
    w = rng.uniform(0.2, 2.0, size=400)
    rows = _rows.Rows(xb, None, w)

    def summed_oracle(loss, y, F):
        halves = [slice(0, 150), slice(150, 400)]

        def oracle(points, active, terms):
            parts = [loss.side_terms(_rows.leaf_sides(
                _rows.Rows(xb[:, h], y[h], w[h]), F[h], 0, goes_left), points, active, terms)
                for h in halves]
            return tuple(a + b for a, b in zip(*parts))

        return oracle

    F = rng.normal(size=(400, 1))
    y = (rng.uniform(size=400) < 0.4).astype(float)
    loss = _loss._LogisticLoss()
    start = np.array([[0.3], [-0.2]])
    got = loss.leaf_newton(summed_oracle(loss, y, F), start, l2_reg)
    kernel = [K.logistic_leaf_newton(F, y, w, xb[0], goes_left, left, float(start[s, 0]),
                                     l2_reg, _loss._LEAF_NEWTON_ITER, _loss._LEAF_NEWTON_TOL)
              for s, left in enumerate((True, False))]
    np.testing.assert_allclose(got[:, 0], kernel, rtol=0, atol=1e-12)

    Fk = rng.normal(size=(400, 3))
    yk = rng.integers(0, 3, 400)
    softmax_loss = _loss._SoftmaxLoss(3)
    a = softmax_loss.leaf_newton(summed_oracle(softmax_loss, yk, Fk), np.zeros((2, 3)), l2_reg)
    sides = _rows.leaf_sides(rows._replace(y=yk), Fk, 0, goes_left)
    for s in range(2):  # the exact minimiser: zero gradient of data term + penalty
        y_s, F_s, w_s = sides[s]
        _, grad, _ = K.softmax_leaf_terms(F_s, y_s, w_s, np.ones(len(y_s), bool), a[s], l2_reg)
        assert np.max(np.abs(grad)) < 1e-8


def test_softmax_leaf_newton_ends_at_the_optimum_of_many_rows_in_few_passes():
    # with 10^5 rows the objective is a sum whose rounding noise (~1e-13 of it) exceeds the
    # decrease of Newton's last steps: halving those steps on the noise stopped short of
    # the optimum after dozens of passes; the last step is taken whole instead
    rng = np.random.default_rng(11)
    n = 100_000
    F = rng.normal(size=(n, 3))
    y = rng.integers(0, 3, n)
    w = np.ones(n)
    left = rng.uniform(size=n) < 0.5
    loss = _loss._SoftmaxLoss(3)
    l2_reg = 22.0
    calls = []

    def oracle(points, active, terms):
        calls.append(terms)
        values, grads, hess = np.zeros(2), np.zeros((2, 3)), np.zeros((2, 3, 3))
        for s in np.flatnonzero(active):
            side = left if s == 0 else ~left
            values[s], grads[s], hess[s] = K.softmax_leaf_terms(
                F, y, w, side, np.ascontiguousarray(points[s]), 0.0)
        return values, grads, hess

    a = loss.leaf_newton(oracle, np.zeros((2, 3)), l2_reg)
    for s, side in enumerate((left, ~left)):
        _, grad, _ = K.softmax_leaf_terms(F, y, w, side, a[s], l2_reg)
        assert np.max(np.abs(grad)) < 1e-10
    assert len(calls) <= 4


@pytest.mark.slow
def test_parallel_kernels_are_bit_identical_to_serial():
    # results must not depend on threads: the parallel drivers run the same per-feature code
    rng = np.random.default_rng(6)
    xb, n_edges, missing_bin = _split_inputs(rng, 2000, 5, 31, 0.1)
    g, h = rng.normal(size=(2000, 2)), rng.uniform(size=(2000, 2))
    hg_s, hg_p = K.bin_histograms(xb, g, 32), K.bin_histograms(xb, g, 32, parallel=True)
    assert np.array_equal(hg_s, hg_p)
    hh = K.bin_histograms(xb, h, 32)
    counts = _counts(xb, 32)
    categorical = np.array([False, True, False, True, False])
    serial = K.best_splits(hg_s, hh, counts, n_edges, 1.0, 3, categorical=categorical)
    par = K.best_splits(
        hg_s, hh, counts, n_edges, 1.0, 3, categorical=categorical, parallel=True
    )
    assert np.array_equal(serial[0], par[0]) and np.array_equal(serial[1], par[1])
    xb, features, lut, starts, sizes, pa, pb, n_seg = _segments(rng, 9000)
    values = rng.normal(size=(9000, 2))
    assert np.array_equal(
        K.segment_sums(xb, features, lut, values, n_seg),
        K.segment_sums(xb, features, lut, values, n_seg, parallel=True),
    )
    assert np.array_equal(
        K.segment_gram(xb, features, lut, starts, sizes, pa, pb, values[:, 0]),
        K.segment_gram(xb, features, lut, starts, sizes, pa, pb, values[:, 0], parallel=True),
    )
    seg_values, base = rng.normal(size=(n_seg, 2)), rng.normal(size=2)
    assert np.array_equal(
        K.segment_predict(xb, features, lut, seg_values, base),
        K.segment_predict(xb, features, lut, seg_values, base, parallel=True),
    )
    pairs = K.pair_counts(xb, lut.shape[1])
    counts = _counts(xb, lut.shape[1])
    goes_left = rng.random(lut.shape[1]) < 0.3
    out = []
    for parallel in (False, True):
        hist = np.zeros((xb.shape[0], lut.shape[1], 1))
        for j in range(xb.shape[0]):
            K.pair_update(hist, pairs, counts, j, goes_left, 0.3, -1.1, parallel)
        out.append(hist)
    assert np.array_equal(out[0], out[1]) and np.any(out[0] != 0)


def test_softmax_kernels_match_numpy():
    rng = np.random.default_rng(7)
    F = 10 * rng.normal(size=(150, 4))
    y = rng.integers(0, 4, 150)
    w = rng.uniform(size=150)
    loss = _loss._SoftmaxLoss(4)
    assert loss.loss(y, F, w) == pytest.approx(loss.loss_reference(y, F, w), rel=1e-12)
    for got, ref in zip(loss.grad_hess(y, F, w), loss.grad_hess_reference(y, F, w)):
        np.testing.assert_allclose(got, ref, atol=1e-12)
    rows = rng.uniform(size=150) < 0.5
    a, lam = rng.normal(size=4), 0.7
    value, grad, hess = K.softmax_leaf_terms(F, y, w, rows, a, lam)

    def phi(v):
        return loss.loss_reference(y[rows], F[rows] + v, w[rows]) + 0.5 * lam * v @ v

    assert value == pytest.approx(phi(a), rel=1e-12)

    eps = 1e-6
    num_grad = [(phi(a + eps * e) - phi(a - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(grad, num_grad, rtol=1e-6, atol=1e-6)
    g_plus = [K.softmax_leaf_terms(F, y, w, rows, a + eps * e, lam)[1] for e in np.eye(4)]
    g_minus = [K.softmax_leaf_terms(F, y, w, rows, a - eps * e, lam)[1] for e in np.eye(4)]
    np.testing.assert_allclose(hess, (np.array(g_plus) - np.array(g_minus)) / (2 * eps), atol=1e-5)
