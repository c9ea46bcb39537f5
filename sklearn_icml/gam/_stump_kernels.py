"""numba kernels of the stump forest, each next to the plain-numpy reference the tests use.

All kernels take the binned data ``xb`` of shape (n_features, n_samples) (uint8 or uint16,
one row per feature, so a feature's column is contiguous). Each kernel has a serial and a
parallel driver around the same per-feature (or per-feature-pair, per-row-chunk) function,
both compiled from one driver body by :func:`_compile_drivers`; the parallel one spreads
those units over threads (``prange``). Every output cell is accumulated by one unit in row
order, so both drivers give bit-identical results whatever the number of threads.
"""

import numpy as np
from numba import prange

from ..utils._numba import njit_cached, stable_sigmoid


def _f64(array):
    """C-contiguous float64, so that each kernel compiles for one signature only."""
    return np.ascontiguousarray(array, dtype=np.float64)


def _compile_drivers(driver):
    """The serial and the parallel kernel of one driver body, written once.

    ``driver(loop)`` returns the kernel's Python function with its outer loop over
    ``loop``: ``range`` gives the serial kernel, ``prange`` the parallel one (compiled with
    ``parallel=True``). ``loop`` is a closure cell of the returned function, so numba's
    cache keeps the two compilations apart.
    """
    return njit_cached()(driver(range)), njit_cached(parallel=True)(driver(prange))


# ---------------------------------------------------------------------------------------
# (i) per-feature histograms of per-row values over bins


@njit_cached(boundscheck=False)
def _histogram_one(xb_j, values, out_j):
    n_values = values.shape[1]
    if n_values == 1:  # the common case (one score): a flat loop the compiler keeps tight
        for i in range(xb_j.shape[0]):
            out_j[np.intp(xb_j[i]), 0] += values[i, 0]
        return
    for i in range(xb_j.shape[0]):
        b = np.intp(xb_j[i])
        for c in range(n_values):
            out_j[b, c] += values[i, c]


def _bin_histograms_driver(loop):
    def bin_histograms(xb, values, n_bins):
        out = np.zeros((xb.shape[0], n_bins, values.shape[1]))
        for j in loop(xb.shape[0]):
            _histogram_one(xb[j], values, out[j])
        return out

    return bin_histograms


_bin_histograms_serial, _bin_histograms_parallel = _compile_drivers(_bin_histograms_driver)


def bin_histograms(xb, values, n_bins, parallel=False):
    """``out[j, b, c] = sum of values[i, c] over rows i with xb[j, i] == b``.

    One pass over each feature's contiguous row of ``xb`` (uint8 or uint16) per call, the
    per-row ``values`` (the gradients of a stump step, computed once) shared by all
    features; each cell is summed in row order, so the result does not depend on the
    number of threads.
    """
    kernel = _bin_histograms_parallel if parallel else _bin_histograms_serial
    return kernel(xb, _f64(values), n_bins)


def bin_histograms_reference(xb, values, n_bins):
    out = np.zeros((xb.shape[0], n_bins, values.shape[1]))
    for j in range(xb.shape[0]):
        for c in range(values.shape[1]):
            out[j, :, c] = np.bincount(xb[j], weights=values[:, c], minlength=n_bins)
    return out


# ---------------------------------------------------------------------------------------
# (i-b) pair counts: the squared-loss stump step without a pass over the rows. With a
# constant weight w, removing or adding a stump (feature j, left bins ``goes_left``, leaves
# a | c) changes every gradient w (F_i - y_i) by w a on the rows whose bin of j goes left
# and by w c on the others, so each feature's gradient histogram changes by
# w (a L + c (counts - L)) with ``L[j', b'] = sum over bins b of j with goes_left[b] of
# #{i : xb[j, i] = b, xb[j', i] = b'}``: a sum of rows (or columns) of the 2-D count table
# of the pair (j, j'), read in O(n_bins^2) instead of a pass over the n rows. The tables
# cover every bin code, the missing bin included, so thresholds, category sets and the
# side of the missing bin are all the same update.


def pair_index(a, b, n_features):
    """Position of the pair ``a < b`` in the table of :func:`pair_counts`."""
    return a * n_features - a * (a + 1) // 2 + (b - a - 1)


@njit_cached(boundscheck=False)
def _pair_counts_one(xa, xb_, out_p):
    for i in range(xa.shape[0]):
        out_p[np.intp(xa[i]), np.intp(xb_[i])] += 1


def _pair_counts_driver(loop):
    def pair_counts(xb, n_bins, pair_a, pair_b, out):
        for p in loop(pair_a.shape[0]):  # each pair owns its own block of out
            _pair_counts_one(xb[pair_a[p]], xb[pair_b[p]], out[p])
        return out

    return pair_counts


_pair_counts_serial, _pair_counts_parallel = _compile_drivers(_pair_counts_driver)


def pair_counts(xb, n_bins, parallel=False):
    """``out[pair_index(a, b), u, v] = #{i : xb[a, i] = u, xb[b, i] = v}`` for ``a < b``.

    int32 counts (int64 from 2^31 rows); ``n_features (n_features - 1) / 2 * n_bins^2``
    cells, independent of the number of rows.
    """
    n_features = xb.shape[0]
    pair_a, pair_b = (p.astype(np.int64) for p in np.triu_indices(n_features, 1))
    dtype = np.int32 if xb.shape[1] < 2**31 else np.int64
    out = np.zeros((pair_a.shape[0], n_bins, n_bins), dtype=dtype)
    kernel = _pair_counts_parallel if parallel else _pair_counts_serial
    return kernel(xb, n_bins, pair_a, pair_b, out)


def pair_counts_reference(xb, n_bins):
    n_features = xb.shape[0]
    out = []
    for a, b in zip(*np.triu_indices(n_features, 1)):
        flat = np.bincount(xb[a].astype(np.int64) * n_bins + xb[b], minlength=n_bins * n_bins)
        out.append(flat.reshape(n_bins, n_bins))
    return np.array(out).reshape(-1, n_bins, n_bins)


@njit_cached(boundscheck=False)
def _pair_update_one(hist, pairs, counts, j, goes_left, low, jp, left_value, right_value):
    # left[b'] = #{i : xb[jp, i] = b', goes_left[xb[j, i]]}, summing the smaller side of the
    # split (the bins of j that go left if ``low``, else the others; the other side is
    # counts - that), then hist[jp] += left_value * left + right_value * (counts - left)
    n_features, n_bins = counts.shape
    left = np.zeros(n_bins, dtype=np.int64)
    if jp == j:
        for b in range(n_bins):
            if goes_left[b]:
                left[b] = counts[j, b]
    else:
        if j < jp:  # pair (j, jp): rows of the table are j's bins
            t = pairs[j * n_features - j * (j + 1) // 2 + (jp - j - 1)]
            for r in range(n_bins):
                if goes_left[r] == low:
                    for b in range(n_bins):
                        left[b] += t[r, b]
        else:  # pair (jp, j): columns of the table are j's bins
            t = pairs[jp * n_features - jp * (jp + 1) // 2 + (j - jp - 1)]
            for b in range(n_bins):
                acc = 0
                for r in range(n_bins):
                    if goes_left[r] == low:
                        acc += t[b, r]
                left[b] = acc
        if not low:
            for b in range(n_bins):
                left[b] = counts[jp, b] - left[b]
    for b in range(n_bins):
        n_left = left[b]
        hist[jp, b, 0] += left_value * n_left + right_value * (counts[jp, b] - n_left)


def _pair_update_driver(loop):
    def pair_update(hist, pairs, counts, j, goes_left, left_value, right_value):
        n_bins = counts.shape[1]
        n_true = 0
        for r in range(n_bins):
            n_true += goes_left[r]
        low = n_true <= n_bins - n_true
        for jp in loop(counts.shape[0]):  # each feature owns its own row of hist
            _pair_update_one(hist, pairs, counts, j, goes_left, low, jp, left_value,
                             right_value)

    return pair_update


_pair_update_serial, _pair_update_parallel = _compile_drivers(_pair_update_driver)


def pair_update(hist, pairs, counts, j, goes_left, left_value, right_value, parallel=False):
    """In place: ``hist[j', b, 0] += left_value L[j', b] + right_value (counts - L)[j', b]``.

    ``L[j', b]``: the rows in bin ``b`` of feature ``j'`` that go left on feature ``j``
    (``goes_left``: boolean over the bins of ``j``), from the pair counts; ``left_value``
    and ``right_value`` are the changes of the gradient on either side of the split
    (``w * scale * leaf``). One feature ``j'`` per parallel iteration.
    """
    kernel = _pair_update_parallel if parallel else _pair_update_serial
    kernel(hist, pairs, counts, int(j), goes_left, float(left_value), float(right_value))


def pair_update_reference(hist, xb, j, goes_left, left_value, right_value):
    """``hist`` plus the histogram of the gradient change, by a pass over the rows."""
    change = np.where(goes_left[xb[j]], left_value, right_value)
    return hist + bin_histograms_reference(xb, change[:, None], hist.shape[1])


# ---------------------------------------------------------------------------------------
# (ii) exact search for the best stump of every feature
#
# A stump sends each bin of its feature left or right: ``left[b]`` for bin code ``b``.
# Numeric features send bins ``0..k`` left (a threshold); a categorical feature sends a set
# of categories left. The missing bin (code ``missing_bin``) goes to the side chosen by the
# objective when it holds training rows, and else to the side with more training rows (the
# rule HistGradientBoosting uses); bins without training rows (categories not seen in fit)
# go with the missing bin.


@njit_cached()
def _half_gain(g, h, l2_reg):
    denom = h + l2_reg
    if denom <= 0.0:
        return 0.0
    return g * g / denom


@njit_cached()
def _leaf_value(g, h, l2_reg):
    denom = h + l2_reg
    if denom <= 0.0:
        return 0.0
    return -g / denom


@njit_cached()
def _split_gain(left_g, left_h, total_g, total_h, l2_reg):
    gain = 0.0
    for c in range(left_g.shape[0]):
        gain += _half_gain(left_g[c], left_h[c], l2_reg)
        gain += _half_gain(total_g[c] - left_g[c], total_h[c] - left_h[c], l2_reg)
    return gain


@njit_cached()
def _keeps_monotone(left_g, left_h, total_g, total_h, l2_reg, monotone):
    # the right leaf minus the left leaf must have the sign of the constraint
    if monotone == 0:
        return True
    a = _leaf_value(left_g[0], left_h[0], l2_reg)
    c = _leaf_value(total_g[0] - left_g[0], total_h[0] - left_h[0], l2_reg)
    return monotone * (c - a) >= 0.0


@njit_cached()
def _best_numeric(hist_g, hist_h, counts, n_edges, monotone, missing_bin, l2_reg,
                  min_samples_leaf, left_out):
    n_values = hist_g.shape[1]
    total_g = np.zeros(n_values)
    total_h = np.zeros(n_values)
    miss_g = hist_g[missing_bin].copy()
    miss_h = hist_h[missing_bin].copy()
    n_miss = counts[missing_bin]
    total_count = n_miss
    for b in range(n_edges + 1):
        total_count += counts[b]
        for c in range(n_values):
            total_g[c] += hist_g[b, c]
            total_h[c] += hist_h[b, c]
    for c in range(n_values):
        total_g[c] += miss_g[c]
        total_h[c] += miss_h[c]
    best_gain = -np.inf
    best_k = -1
    best_missing_left = False
    left_g = np.zeros(n_values)
    left_h = np.zeros(n_values)
    cand_g = np.zeros(n_values)
    cand_h = np.zeros(n_values)
    left_count = 0
    # k = n_edges sends every value left and the missing rows right
    last = n_edges + 1 if n_miss > 0 else n_edges
    for k in range(last):
        left_count += counts[k]
        for c in range(n_values):
            left_g[c] += hist_g[k, c]
            left_h[c] += hist_h[k, c]
        for side in range(2 if n_miss > 0 else 1):
            missing_left = side == 1
            if missing_left and k == n_edges:
                continue  # everything left: no split
            count = left_count + (n_miss if missing_left else 0)
            if count < min_samples_leaf or total_count - count < min_samples_leaf:
                continue
            for c in range(n_values):
                cand_g[c] = left_g[c] + (miss_g[c] if missing_left else 0.0)
                cand_h[c] = left_h[c] + (miss_h[c] if missing_left else 0.0)
            if k < n_edges and not _keeps_monotone(
                cand_g, cand_h, total_g, total_h, l2_reg, monotone
            ):
                continue
            gain = _split_gain(cand_g, cand_h, total_g, total_h, l2_reg)
            if gain > best_gain:
                best_gain = gain
                best_k = k
                if n_miss > 0:
                    best_missing_left = missing_left
                else:  # no missing rows in fit: missing goes with the larger side
                    best_missing_left = count >= total_count - count
    for b in range(left_out.shape[0]):
        left_out[b] = best_missing_left
    for b in range(n_edges + 1):
        left_out[b] = b <= best_k
    return best_gain


@njit_cached()
def _best_categorical(hist_g, hist_h, counts, n_edges, missing_bin, l2_reg, min_samples_leaf,
                      left_out):
    # Categories (and the missing bin, when it holds rows) sorted by G/H; for the squared
    # loss and for the Newton gain the best partition in two is a prefix of that order
    # (Fisher 1958; Breiman et al. 1984, thm 4.5). Multiclass scores: the best prefix over
    # the K orders, one per class, which is a heuristic.
    n_values = hist_g.shape[1]
    present = np.empty(n_edges + 2, dtype=np.int64)
    n_present = 0
    for b in range(n_edges + 1):
        if counts[b] > 0:
            present[n_present] = b
            n_present += 1
    n_miss = counts[missing_bin]
    if n_miss > 0:
        present[n_present] = missing_bin
        n_present += 1
    present = present[:n_present]
    total_g = np.zeros(n_values)
    total_h = np.zeros(n_values)
    total_count = 0
    for b in present:
        total_count += counts[b]
        for c in range(n_values):
            total_g[c] += hist_g[b, c]
            total_h[c] += hist_h[b, c]
    ratio = np.empty(n_present)
    best_gain = -np.inf
    best_c = -1
    best_m = -1
    left_g = np.zeros(n_values)
    left_h = np.zeros(n_values)
    for order_c in range(n_values):
        for i in range(n_present):
            b = present[i]
            h = hist_h[b, order_c]
            ratio[i] = hist_g[b, order_c] / h if h > 0.0 else 0.0
        order = np.argsort(ratio, kind="mergesort")
        left_g[:] = 0.0
        left_h[:] = 0.0
        left_count = 0
        for m in range(n_present - 1):
            b = present[order[m]]
            left_count += counts[b]
            for c in range(n_values):
                left_g[c] += hist_g[b, c]
                left_h[c] += hist_h[b, c]
            if left_count < min_samples_leaf or total_count - left_count < min_samples_leaf:
                continue
            gain = _split_gain(left_g, left_h, total_g, total_h, l2_reg)
            if gain > best_gain:
                best_gain = gain
                best_c = order_c
                best_m = m
    left_out[:] = False
    if best_m < 0:
        return best_gain
    for i in range(n_present):
        b = present[i]
        h = hist_h[b, best_c]
        ratio[i] = hist_g[b, best_c] / h if h > 0.0 else 0.0
    order = np.argsort(ratio, kind="mergesort")
    left_count = 0
    for m in range(best_m + 1):
        b = present[order[m]]
        left_out[b] = True
        left_count += counts[b]
    if n_miss == 0:
        left_out[missing_bin] = left_count >= total_count - left_count
    for b in range(n_edges + 1):  # categories without training rows go with missing
        if counts[b] == 0:
            left_out[b] = left_out[missing_bin]
    for b in range(n_edges + 1, missing_bin):
        left_out[b] = left_out[missing_bin]
    return best_gain


def _best_splits_driver(loop):
    def best_splits(hist_g, hist_h, counts, n_edges, categorical, monotone, missing_bin,
                    l2_reg, min_samples_leaf):
        n_features = hist_g.shape[0]
        best_gain = np.empty(n_features)
        left = np.zeros((n_features, hist_g.shape[1]), dtype=np.bool_)
        for j in loop(n_features):
            if categorical[j]:
                best_gain[j] = _best_categorical(
                    hist_g[j], hist_h[j], counts[j], n_edges[j], missing_bin, l2_reg,
                    min_samples_leaf, left[j],
                )
            else:
                best_gain[j] = _best_numeric(
                    hist_g[j], hist_h[j], counts[j], n_edges[j], monotone[j], missing_bin,
                    l2_reg, min_samples_leaf, left[j],
                )
        return best_gain, left

    return best_splits


_best_splits_serial, _best_splits_parallel = _compile_drivers(_best_splits_driver)


def best_splits(hist_g, hist_h, counts, n_edges, l2_reg, min_samples_leaf, *,
                categorical=None, monotone=None, missing_bin=None, parallel=False):
    """Best stump of each feature by the (Newton) gain of a two-leaf stump.

    The gain of sending the bins of ``left`` to the left leaf is
    ``sum_c G_L[c]^2 / (H_L[c] + l2_reg) + G_R[c]^2 / (H_R[c] + l2_reg)``, which for the
    squared loss is exactly twice the decrease of the objective over the zero stump. Splits
    with fewer than ``min_samples_leaf`` rows (unweighted ``counts``) on a side are skipped,
    and so are splits of a feature with ``monotone[j] = +-1`` whose Newton leaves (right
    minus left) have the wrong sign.

    ``hist_*`` have shape (n_features, n_bins, n_values); value bins of feature ``j`` are
    ``0..n_edges[j]`` and ``missing_bin`` (default ``n_bins - 1``) is the missing bin.
    Returns ``(gain, left)``: the gain per feature (``-inf`` where no split is allowed) and
    the boolean ``left`` of shape (n_features, n_bins). Ties go to the lowest threshold
    (numeric) or the shortest prefix (categorical).
    """
    n_features, n_bins = hist_g.shape[0], hist_g.shape[1]
    if categorical is None:
        categorical = np.zeros(n_features, dtype=np.bool_)
    if monotone is None:
        monotone = np.zeros(n_features, dtype=np.int64)
    missing_bin = n_bins - 1 if missing_bin is None else int(missing_bin)
    kernel = _best_splits_parallel if parallel else _best_splits_serial
    return kernel(
        _f64(hist_g), _f64(hist_h), counts, np.asarray(n_edges, dtype=np.int64),
        np.asarray(categorical, dtype=np.bool_), np.asarray(monotone, dtype=np.int64),
        missing_bin, float(l2_reg), int(min_samples_leaf),
    )


def _reference_gain(g, h, rows, l2_reg):
    def half(gs, hs):
        denom = hs + l2_reg
        return np.where(denom > 0, gs**2 / np.where(denom > 0, denom, 1.0), 0.0).sum()

    return half(g[rows].sum(0), h[rows].sum(0)) + half(g[~rows].sum(0), h[~rows].sum(0))


def best_splits_reference(xb, g, h, n_edges, l2_reg, min_samples_leaf, *, categorical=None,
                          monotone=None, missing_bin=None):
    """Brute force: every threshold and missing side (numeric), every subset of the present
    categories (categorical, so keep them few), scored from its own row masks.

    Returns the best gain per feature and, per feature, the boolean mask of training rows
    sent left (None where no split is allowed).
    """
    n_features = xb.shape[0]
    categorical = np.zeros(n_features, bool) if categorical is None else categorical
    monotone = np.zeros(n_features, int) if monotone is None else monotone
    best_gain = np.full(n_features, -np.inf)
    best_rows = [None] * n_features
    for j in range(n_features):
        missing = xb[j] == missing_bin if missing_bin is not None else np.zeros(xb.shape[1], bool)
        candidates = []
        if categorical[j]:
            codes = np.unique(xb[j])
            for bits in range(1, 2 ** codes.size - 1):
                chosen = codes[[(bits >> i) & 1 == 1 for i in range(codes.size)]]
                candidates.append(np.isin(xb[j], chosen))
        else:
            sides = (False, True) if missing.any() else (False,)
            for k in range(int(n_edges[j]) + 1):
                for side in sides:
                    rows = (xb[j] <= k) & ~missing
                    rows = rows | missing if side else rows
                    if k == n_edges[j] and not missing.any():
                        continue
                    if monotone[j] and k < n_edges[j]:
                        gl, hl = g[rows].sum(0), h[rows].sum(0)
                        gr, hr = g[~rows].sum(0), h[~rows].sum(0)
                        a, c = -gl / (hl + l2_reg), -gr / (hr + l2_reg)
                        if monotone[j] * (c[0] - a[0]) < 0:
                            continue
                    candidates.append(rows)
        for rows in candidates:
            if rows.sum() < min_samples_leaf or (~rows).sum() < min_samples_leaf:
                continue
            gain = _reference_gain(g, h, rows, l2_reg)
            if gain > best_gain[j] + 1e-12:
                best_gain[j], best_rows[j] = gain, rows
    return best_gain, best_rows


# ---------------------------------------------------------------------------------------
# (iii) the leaf step works on "segments": for each used feature, the pieces between the
# sorted thresholds of its stumps. ``lut[q, b]`` is the global segment index of bin ``b`` of
# the q-th used feature ``features[q]``.


@njit_cached()
def _segment_sums_one(xb_j, lut_q, values, out):
    n_values = values.shape[1]
    for i in range(xb_j.shape[0]):
        s = lut_q[xb_j[i]]
        for c in range(n_values):
            out[s, c] += values[i, c]


def _segment_sums_driver(loop):
    def segment_sums(xb, features, lut, values, n_segments):
        out = np.zeros((n_segments, values.shape[1]))
        for q in loop(features.shape[0]):  # each feature owns its own rows of out
            _segment_sums_one(xb[features[q]], lut[q], values, out)
        return out

    return segment_sums


_segment_sums_serial, _segment_sums_parallel = _compile_drivers(_segment_sums_driver)


def segment_sums(xb, features, lut, values, n_segments, parallel=False):
    """``out[s, c] = sum of values[i, c]`` over rows in segment ``s`` (of its feature)."""
    kernel = _segment_sums_parallel if parallel else _segment_sums_serial
    return kernel(xb, features, lut, _f64(values), n_segments)


@njit_cached()
def _gram_block(xb, features, lut, seg_start, seg_count, qa, qb, weights, out):
    ja = features[qa]
    jb = features[qb]
    if qa == qb:
        for i in range(xb.shape[1]):
            s = lut[qa, xb[ja, i]]
            out[s, s] += weights[i]
        return
    block = np.zeros((seg_count[qa], seg_count[qb]))
    sa0 = seg_start[qa]
    sb0 = seg_start[qb]
    for i in range(xb.shape[1]):
        block[lut[qa, xb[ja, i]] - sa0, lut[qb, xb[jb, i]] - sb0] += weights[i]
    for u in range(seg_count[qa]):
        for v in range(seg_count[qb]):
            out[sa0 + u, sb0 + v] = block[u, v]
            out[sb0 + v, sa0 + u] = block[u, v]


def _segment_gram_driver(loop):
    def segment_gram(xb, features, lut, seg_start, seg_count, pair_a, pair_b, weights):
        n_segments = seg_start[-1] + seg_count[-1]
        out = np.zeros((n_segments, n_segments))
        for p in loop(pair_a.shape[0]):  # each pair owns its own block of out
            _gram_block(
                xb, features, lut, seg_start, seg_count, pair_a[p], pair_b[p], weights, out
            )
        return out

    return segment_gram


_segment_gram_serial, _segment_gram_parallel = _compile_drivers(_segment_gram_driver)


def segment_gram(xb, features, lut, seg_start, seg_count, pair_a, pair_b, weights,
                 parallel=False):
    """``M = B^T diag(weights) B`` for the one-hot segment design ``B``.

    The (qa, qb) block holds the weighted 2-D histogram of the segments of features
    ``features[qa]`` and ``features[qb]``; one pair per parallel iteration.
    """
    kernel = _segment_gram_parallel if parallel else _segment_gram_serial
    return kernel(xb, features, lut, seg_start, seg_count, pair_a, pair_b, _f64(weights))


@njit_cached()
def _predict_rows(xb, features, lut, segment_values, base, start, stop, out):
    n_values = segment_values.shape[1]
    for i in range(start, stop):
        for c in range(n_values):
            acc = base[c]
            for q in range(features.shape[0]):
                acc += segment_values[lut[q, xb[features[q], i]], c]
            out[i, c] = acc


@njit_cached(parallel=True)
def _segment_predict_parallel(xb, features, lut, segment_values, base):
    n_samples = xb.shape[1]
    out = np.empty((n_samples, segment_values.shape[1]))
    n_chunks = (n_samples + 4095) // 4096
    for chunk in prange(n_chunks):
        stop = min(n_samples, (chunk + 1) * 4096)
        _predict_rows(xb, features, lut, segment_values, base, chunk * 4096, stop, out)
    return out


@njit_cached()
def _segment_predict_serial(xb, features, lut, segment_values, base):
    out = np.empty((xb.shape[1], segment_values.shape[1]))
    _predict_rows(xb, features, lut, segment_values, base, 0, xb.shape[1], out)
    return out


def segment_predict(xb, features, lut, segment_values, base, parallel=False):
    """``out[i, c] = base[c] + sum_q segment_values[segment of row i on features[q], c]``."""
    kernel = _segment_predict_parallel if parallel else _segment_predict_serial
    return kernel(xb, features, lut, _f64(segment_values), _f64(base))


@njit_cached()
def add_stump(F, xb_j, goes_left, left, right, scale):
    """In place: ``F[i] += scale * (left if goes_left[xb_j[i]] else right)``."""
    for i in range(xb_j.shape[0]):
        value = left if goes_left[xb_j[i]] else right
        for c in range(F.shape[1]):
            F[i, c] += scale * value[c]


def add_stump_reference(F, xb_j, goes_left, left, right, scale):
    return F + scale * np.where(goes_left[xb_j][:, None], left[None, :], right[None, :])


# ---------------------------------------------------------------------------------------
# (iv) binary logistic loss: objective and the exact 1-D leaf problem of a stump


@njit_cached()
def _log1pexp(f):
    if f > 0.0:
        return f + np.log1p(np.exp(-f))
    return np.log1p(np.exp(f))


@njit_cached()
def logistic_loss(F, y, w):
    """``sum_i w_i (log(1 + exp(F_i)) - y_i F_i)`` for ``F`` of shape (n, 1)."""
    total = 0.0
    for i in range(F.shape[0]):
        f = F[i, 0]
        total += w[i] * (_log1pexp(f) - y[i] * f)
    return total


@njit_cached()
def logistic_leaf_newton(F, y, w, xb_j, goes_left, left, a, l2_reg, max_iter, tol):
    """Minimise ``sum_{i in leaf} w_i l(y_i, F_i + a) + l2_reg / 2 a^2`` over ``a``.

    The leaf is the rows with ``goes_left[xb_j[i]] == left``. Newton's method from ``a``,
    safeguarded by the bracket the sign of the (increasing) derivative gives: a step leaving
    the bracket is replaced by bisection. Stops after ``max_iter`` steps or when a step is
    below ``tol * max(1, |a|)``.
    """
    n_leaf = 0
    for i in range(F.shape[0]):
        if goes_left[xb_j[i]] == left:
            n_leaf += 1
    f = np.empty(n_leaf)
    yl = np.empty(n_leaf)
    wl = np.empty(n_leaf)
    n_leaf = 0
    for i in range(F.shape[0]):
        if goes_left[xb_j[i]] == left:
            f[n_leaf] = F[i, 0]
            yl[n_leaf] = y[i]
            wl[n_leaf] = w[i]
            n_leaf += 1
    lo = -np.inf
    hi = np.inf
    for _ in range(max_iter):
        grad = l2_reg * a
        hess = l2_reg
        for i in range(n_leaf):
            p = stable_sigmoid(f[i] + a)
            grad += wl[i] * (p - yl[i])
            hess += wl[i] * p * (1.0 - p)
        if grad == 0.0:
            break
        if grad > 0.0:
            hi = min(hi, a)
        else:
            lo = max(lo, a)
        cand = a - grad / hess if hess > 0.0 else np.nan
        if not (lo < cand < hi):
            if np.isfinite(lo) and np.isfinite(hi):
                cand = 0.5 * (lo + hi)
            else:
                break
        done = abs(cand - a) <= tol * max(1.0, abs(a))
        a = cand
        if done:
            break
    return a


# ---------------------------------------------------------------------------------------
# (v) softmax cross-entropy, for K > 2 classes (``y`` holds class indices)


@njit_cached()
def softmax_terms(F, y, w, order):
    """Loss ``sum_i w_i (logsumexp(F_i) - F_i[y_i])``; with ``order >= 1`` also the gradient
    ``w_i (p_i - e_{y_i})`` and with ``order >= 2`` the diagonal Hessian ``w_i p_i (1 - p_i)``.
    """
    n, n_classes = F.shape
    G = np.empty((n if order >= 1 else 0, n_classes))
    H = np.empty((n if order >= 2 else 0, n_classes))
    loss = 0.0
    for i in range(n):
        m = F[i, 0]
        for c in range(1, n_classes):
            m = max(m, F[i, c])
        s = 0.0
        for c in range(n_classes):
            s += np.exp(F[i, c] - m)
        lse = m + np.log(s)
        loss += w[i] * (lse - F[i, y[i]])
        if order >= 1:
            for c in range(n_classes):
                p = np.exp(F[i, c] - lse)
                G[i, c] = w[i] * (p - (1.0 if c == y[i] else 0.0))
                if order >= 2:
                    H[i, c] = w[i] * p * (1.0 - p)
    return loss, G, H


@njit_cached()
def softmax_leaf_terms(F, y, w, rows, a, l2_reg):
    """Value, gradient and full Hessian in ``a`` of
    ``sum_{rows} w_i CE(y_i, F_i + a) + l2/2 |a|^2``, in one pass over the rows."""
    n_classes = F.shape[1]
    value = 0.5 * l2_reg * np.dot(a, a)
    grad = l2_reg * a.copy()
    hess = l2_reg * np.eye(n_classes)
    p = np.empty(n_classes)
    for i in range(F.shape[0]):
        if not rows[i]:
            continue
        m = F[i, 0] + a[0]
        for c in range(1, n_classes):
            m = max(m, F[i, c] + a[c])
        s = 0.0
        for c in range(n_classes):
            p[c] = np.exp(F[i, c] + a[c] - m)
            s += p[c]
        value += w[i] * (m + np.log(s) - (F[i, y[i]] + a[y[i]]))
        for c in range(n_classes):
            p[c] /= s
        for c in range(n_classes):
            grad[c] += w[i] * (p[c] - (1.0 if c == y[i] else 0.0))
            for d in range(n_classes):
                hess[c, d] += w[i] * p[c] * ((1.0 if c == d else 0.0) - p[d])
    return value, grad, hess


def segment_onehot_reference(xb, features, lut, n_segments):
    """Dense one-hot segment design ``B`` of shape (n_samples, n_segments)."""
    B = np.zeros((xb.shape[1], n_segments))
    rows = np.arange(xb.shape[1])
    for q, j in enumerate(features):
        B[rows, lut[q, xb[j]]] = 1.0
    return B


def segment_sums_reference(xb, features, lut, values, n_segments):
    return segment_onehot_reference(xb, features, lut, n_segments).T @ values


def segment_gram_reference(xb, features, lut, weights, n_segments):
    B = segment_onehot_reference(xb, features, lut, n_segments)
    return B.T @ (weights[:, None] * B)


def segment_predict_reference(xb, features, lut, segment_values, base):
    B = segment_onehot_reference(xb, features, lut, segment_values.shape[0])
    return base[None, :] + B @ segment_values
