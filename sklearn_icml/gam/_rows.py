"""The training rows as the steps of a fit see them, and the scores of a forest on them.

Every pass over the rows that the optimiser (:mod:`._optimizer`) and the losses
(:mod:`._loss`) make is a function ``function(rows, *args)`` whose result is a sum over the
rows (an array, a float, or a tuple of them). The problem being fitted calls it through
``problem.row_sum(function, *args)``: in memory once on all rows, on dask once per
partition, the results summed (:mod:`._row_source`, :mod:`._dask`). A forest travels to
such a function as its segment table (:class:`._optimizer._Segments` without its leaf map)
and segment values.
"""

from typing import NamedTuple

import numpy as np

from . import _stump_kernels as K


class Rows(NamedTuple):
    """Binned rows ``xb`` (n_features, n_samples), the target ``y`` (as the loss wants it),
    the weights ``w`` and whether the kernels may use threads."""

    xb: np.ndarray
    y: np.ndarray
    w: np.ndarray
    parallel: bool = False


class Stump(NamedTuple):
    """A stump: its ``feature`` (-1: a zero stump), the boolean ``goes_left[b]`` of the bins
    its left leaf takes, and its two ``leaves`` (shape (2, n_values))."""

    feature: int
    goes_left: np.ndarray
    leaves: np.ndarray


def forest_scores(rows, seg, values, intercept):
    """Raw scores ``F`` (n_samples, n_values) of the forest with these segment values."""
    return K.segment_predict(rows.xb, seg.features, seg.lut, values, intercept, rows.parallel)


def data_loss(rows, loss, seg, values, intercept):
    """The data term ``sum_i w_i l(y_i, F(x_i))`` of the forest, and ``sum_i w_i``."""
    F = forest_scores(rows, seg, values, intercept)
    return np.array([loss.loss(rows.y, F, rows.w), float(rows.w.sum())])


def data_losses(rows, loss, *forests):
    """The data term of each forest (``(segment table, segment values, intercept)``)."""
    return np.array([data_loss(rows, loss, *forest)[0] for forest in forests])


def initial_statistics(rows, loss, n_bins):
    """What a fit computes once: the ``w`` and ``w y`` histograms when the loss's Hessian
    is the constant ``w`` (else 0.0), ``sum w``, ``sum w y`` and the loss's target sums."""
    hist_h = hist_wy = 0.0
    if loss.exact_stump_step:
        hist_h, hist_wy = weight_histograms(rows, n_bins)
    return (hist_h, hist_wy, float(rows.w.sum()), float(np.dot(rows.w, rows.y)),
            loss.target_sums(rows.y, rows.w))


def bin_counts(rows, n_bins):
    """``[j, b]``: the number of rows in bin ``b`` of feature ``j`` (int64)."""
    return np.stack([np.bincount(r, minlength=n_bins)[:n_bins] for r in rows.xb]).astype(
        np.int64
    )


def gradient_histograms(rows, loss, seg, values, intercept, n_bins):
    """Per-feature histograms over bins of the gradient and the Hessian of the loss at the
    forest (the Hessian histogram is 0 when the loss's Hessian is the constant ``w``)."""
    return score_histograms(rows, loss, forest_scores(rows, seg, values, intercept), n_bins)


def score_histograms(rows, loss, F, n_bins):
    """:func:`gradient_histograms` at the raw scores ``F`` of the rows."""
    g, h = loss.grad_hess(rows.y, F, rows.w)
    hist_g = K.bin_histograms(rows.xb, g, n_bins, rows.parallel)
    hist_h = 0.0 if h is None else K.bin_histograms(rows.xb, h, n_bins, rows.parallel)
    return hist_g, hist_h


def leaf_sides(rows, F, feature, goes_left):
    """``(y, F, w)`` of the rows of each leaf of stump (``feature``, ``goes_left``)."""
    left = goes_left[rows.xb[feature]]
    return [(rows.y[r], F[r], rows.w[r]) for r in (left, ~left)]


def leaf_side_terms(rows, loss, seg, values, intercept, feature, goes_left, *request):
    """``loss.side_terms(sides, *request)`` of the two leaves of stump (``feature``,
    ``goes_left``) added to the forest (``request``: points, active, derivatives)."""
    F = forest_scores(rows, seg, values, intercept)
    return loss.side_terms(leaf_sides(rows, F, feature, goes_left), *request)


def weight_histograms(rows, n_bins):
    """Per-feature histograms over bins of ``w`` (shape (n_features, n_bins, 1): the Hessian
    histogram of the squared loss) and of ``w y`` (shape (n_features, n_bins))."""
    both = K.bin_histograms(rows.xb, np.column_stack([rows.w, rows.w * rows.y]), n_bins,
                            rows.parallel)
    return np.ascontiguousarray(both[:, :, :1]), np.ascontiguousarray(both[:, :, 1])


def bin_weights(rows, n_bins):
    """``[j, b]``: the weight of the rows in bin ``b`` of feature ``j``."""
    return np.stack([
        np.bincount(rows.xb[j], weights=rows.w, minlength=n_bins)[:n_bins]
        for j in range(rows.xb.shape[0])
    ])


def validation_split(n_samples, fraction, seed, stratify=None):
    """Sorted indices ``(train, validation)`` of a split of ``n_samples`` rows for early
    stopping: ``train_test_split`` with ``seed``, stratified by ``stratify`` when every
    class is large enough, else not."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(n_samples)
    try:
        train, val = train_test_split(
            rows, test_size=fraction, random_state=seed, stratify=stratify
        )
    except ValueError:  # a class too small to stratify, or too few rows
        train, val = train_test_split(rows, test_size=fraction, random_state=seed)
    return np.sort(train), np.sort(val)
