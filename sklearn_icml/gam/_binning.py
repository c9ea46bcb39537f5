"""Quantile binning of the features: the candidate thresholds of every stump.

A stump's threshold is searched over a finite set of candidates per feature, so that the
exact stump search of the stump step is a prefix-sum scan over bins (see
:mod:`._stump_kernels`). Gabidolla and Carreira-Perpinan (ICML 2025) search thresholds
between sorted values; here, as in histogram gradient boosting, a feature with more than
``max_bins`` distinct values gets ``max_bins - 1`` quantiles instead, which bounds the cost of
a scan by the number of bins rather than the number of rows.
"""

import numpy as np

# bin quantiles are computed on at most this many rows (as HistGradientBoosting does)
BINNING_SUBSAMPLE = 200_000


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
    n_samples = X.shape[0]
    if n_samples > BINNING_SUBSAMPLE:
        rows = np.sort(rng.choice(n_samples, BINNING_SUBSAMPLE, replace=False))
        X = X[rows]
    edges = []
    percentiles = np.linspace(0, 100, max_bins + 1)[1:-1]
    for j in range(X.shape[1]):
        distinct = np.unique(X[:, j])
        if distinct.shape[0] <= max_bins:
            e = 0.5 * (distinct[:-1] + distinct[1:])
        else:
            e = np.unique(np.percentile(X[:, j], percentiles, method="midpoint"))
        edges.append(np.ascontiguousarray(e, dtype=np.float64))
    return edges


def bin_data(X, edges):
    """``xb[j, i]`` = number of edges of feature j below ``X[i, j]`` (x <= edge[k] iff xb <= k).

    The result has shape (n_features, n_samples), dtype uint16: one contiguous row per
    feature, the layout the kernels scan.
    """
    xb = np.empty((X.shape[1], X.shape[0]), dtype=np.uint16)
    for j, e in enumerate(edges):
        xb[j] = np.searchsorted(e, X[:, j], side="left")
    return xb
