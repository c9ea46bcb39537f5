"""Quantile binning of the features: the candidate thresholds of every stump.

A stump's threshold is searched over a finite set of candidates per feature, so that the
exact stump search of the stump step is a prefix-sum scan over bins (see
:mod:`._stump_kernels`). Gabidolla and Carreira-Perpinan (ICML 2025) search thresholds
between sorted values; here, as in histogram gradient boosting, a feature with more than
``max_bins`` distinct values gets ``max_bins - 1`` quantiles instead, which bounds the cost of
a scan by the number of bins rather than the number of rows.

The binned data is stored feature-major, ``xb[j, i]`` (one contiguous row per feature, the
order in which every kernel streams it), as ``uint8`` when ``max_bins <= 255`` and ``uint16``
otherwise: the codes ``0 .. max_bins - 1`` of the values and one more code, ``max_bins``, left
free for missing values, all fit the type. At 10^6 rows x 20 features the binned data is
20 MB, an eighth of the float64 input.

float32 and float64 input are binned as they are, never converted: the edges are float64,
computed one column of the sampled rows at a time (a float32 column is cast exactly), and the
binning kernel compares each float32 value with them as the float64 it equals. So float32
input gets the bins, the forest and the predictions of the same values cast to float64,
without a float64 copy of X.
"""

import numpy as np
from numba import njit, prange

from ..utils._numba import njit_cached

# bin quantiles are computed on at most this many rows (as HistGradientBoosting does)
BINNING_SUBSAMPLE = 200_000


def sample_rows(n_samples, rng):
    """Sorted indices of the rows the quantiles are computed on (all rows when few).

    ``BINNING_SUBSAMPLE`` rows drawn without replacement by ``rng`` when there are more; the
    same draw for the same ``n_samples`` and seed, whether the rows are in memory or in the
    chunks of a dask array (:mod:`._dask`), so both give the same edges.
    """
    if n_samples > BINNING_SUBSAMPLE:
        return np.sort(rng.choice(n_samples, BINNING_SUBSAMPLE, replace=False))
    return None


def edges_from_sample(X, max_bins):
    """Candidate thresholds per feature from the rows ``X`` (see :func:`bin_edges`)."""
    edges = []
    percentiles = np.linspace(0, 100, max_bins + 1)[1:-1]
    for j in range(X.shape[1]):
        # one sort gives the distinct values, and makes the percentiles' selection cheap;
        # a float32 column is cast (exactly) here, one column at a time, never X whole
        column = np.sort(np.asarray(X[:, j], dtype=np.float64))
        keep = np.empty(column.shape[0], dtype=bool)
        keep[:1] = True
        np.not_equal(column[1:], column[:-1], out=keep[1:])
        distinct = column[keep]
        if distinct.shape[0] and distinct[-1] != distinct[-1]:  # NaNs sort last: keep one,
            distinct = distinct[: np.argmax(np.isnan(distinct)) + 1]  # as np.unique does
        if distinct.shape[0] <= max_bins:
            e = 0.5 * (distinct[:-1] + distinct[1:])
        else:
            e = np.unique(np.percentile(column, percentiles, method="midpoint"))
        edges.append(np.ascontiguousarray(e, dtype=np.float64))
    return edges


def bin_edges(X, max_bins, rng):
    """Candidate thresholds per feature: midpoints between distinct values or quantiles.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Training data.
    max_bins : int
        Largest number of bins of a feature.
    rng : numpy.random.RandomState
        Draws the rows used for the quantiles when there are more than
        ``BINNING_SUBSAMPLE``.

    Returns
    -------
    edges : list of ndarray
        Sorted float64 thresholds of each feature (at most ``max_bins - 1``).
    """
    rows = sample_rows(X.shape[0], rng)
    return edges_from_sample(X if rows is None else X[rows], max_bins)


def bin_dtype(max_bins):
    """``uint8`` when the codes ``0 .. max_bins`` (the last one: missing) fit, else ``uint16``."""
    return np.uint8 if max_bins <= 255 else np.uint16


def _edge_table(edges):
    """Edges padded with +inf into one (n_features, 2^m) array, and their counts.

    The width is a power of two above every feature's number of edges, so that the search
    of :func:`_bin_rows` takes the same m steps for every value, without branches.
    """
    n_edges = np.array([e.shape[0] for e in edges], dtype=np.int64)
    width = 1
    while width <= int(n_edges.max(initial=0)):
        width *= 2
    table = np.full((len(edges), width), np.inf)
    for j, e in enumerate(edges):
        table[j, : e.shape[0]] = e
    return table, n_edges


@njit(inline="always")
def _search_step(t, v, lo, step, width):
    # one step of the binary search: move right by ``step`` when the edge there is below v
    if step >= width:
        return lo
    return lo + step * (t[lo + step - 1] < v)


@njit_cached(boundscheck=False)
def _bin_rows(X, table, nan_codes, start, stop, out):
    # out[j, i] = number of edges of feature j below X[i, j], as np.searchsorted(edges, x,
    # side="left"): a branch-free binary search over the padded table (the +inf padding is
    # never below a value), unrolled for up to 2^16 edges; NaN gets nan_codes[j]. X is
    # float64 or float32 (one compiled version each): a float32 value is compared with the
    # float64 edges as the float64 it equals. Rows are read whole (X is row-major), each
    # feature's code written to its own row of out.
    width = table.shape[1]
    for i in range(start, stop):
        for j in range(X.shape[1]):
            v = X[i, j]
            if v != v:
                out[j, i] = nan_codes[j]
                continue
            t = table[j]
            lo = 0
            lo = _search_step(t, v, lo, 32768, width)
            lo = _search_step(t, v, lo, 16384, width)
            lo = _search_step(t, v, lo, 8192, width)
            lo = _search_step(t, v, lo, 4096, width)
            lo = _search_step(t, v, lo, 2048, width)
            lo = _search_step(t, v, lo, 1024, width)
            lo = _search_step(t, v, lo, 512, width)
            lo = _search_step(t, v, lo, 256, width)
            lo = _search_step(t, v, lo, 128, width)
            lo = _search_step(t, v, lo, 64, width)
            lo = _search_step(t, v, lo, 32, width)
            lo = _search_step(t, v, lo, 16, width)
            lo = _search_step(t, v, lo, 8, width)
            lo = _search_step(t, v, lo, 4, width)
            lo = _search_step(t, v, lo, 2, width)
            lo = _search_step(t, v, lo, 1, width)
            out[j, i] = lo


_BIN_BLOCK = 16384  # rows per parallel task of the binning


@njit_cached(parallel=True)
def _bin_all(X, table, nan_codes, out):
    n_blocks = (X.shape[0] + _BIN_BLOCK - 1) // _BIN_BLOCK
    for b in prange(n_blocks):
        _bin_rows(X, table, nan_codes, b * _BIN_BLOCK, min(X.shape[0], (b + 1) * _BIN_BLOCK), out)


def as_binnable(X):
    """``X`` as the binning kernel reads it: float32 and float64 kept (no copy when
    C-contiguous), any other dtype converted to float64."""
    X = np.asarray(X)
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    return np.ascontiguousarray(X, dtype=dtype)


def bin_data(X, edges, max_bins=None, missing_code=None):
    """``xb[j, i]`` = number of edges of feature j below ``X[i, j]`` (x <= edge[k] iff xb <= k).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Data to bin: float32 or float64, binned without a copy when C-contiguous (any
        other dtype or memory order is copied, see :func:`as_binnable`).
    edges : list of ndarray
        Sorted thresholds of each feature (:func:`bin_edges`).
    max_bins : int, default=None
        The estimator's ``max_bins``: codes up to ``max_bins`` (the missing-value code) must
        fit the dtype (:func:`bin_dtype`). None: the largest code the edges give, plus one.
    missing_code : int, default=None
        The code of NaN. None: the number of edges of its feature (where
        ``np.searchsorted`` puts NaN).

    Returns
    -------
    xb : ndarray of shape (n_features, n_samples), dtype uint8 or uint16
        One contiguous row per feature, the layout the kernels stream.
    """
    table, n_edges = _edge_table(edges)
    if max_bins is None:
        max_bins = int(n_edges.max(initial=0)) + 1
    nan_codes = n_edges if missing_code is None else np.full_like(n_edges, missing_code)
    xb = np.empty((X.shape[1], X.shape[0]), dtype=bin_dtype(max_bins))
    if X.shape[0]:
        _bin_all(as_binnable(X), table, nan_codes, xb)
    return xb


def bin_data_reference(X, edges, max_bins=None):
    """:func:`bin_data` by ``np.searchsorted``, for the tests."""
    if max_bins is None:
        max_bins = max((e.shape[0] for e in edges), default=0) + 1
    xb = np.empty((X.shape[1], X.shape[0]), dtype=bin_dtype(max_bins))
    for j, e in enumerate(edges):
        xb[j] = np.searchsorted(e, X[:, j], side="left")
    return xb
