"""Where the training rows of a fit are: the one interface the optimiser reaches them by.

The optimiser (:class:`._optimizer.StumpForestProblem`) owns the stumps and every decision
of a fit; what it asks of the rows is small, and is all a :class:`RowSource` does:

* sums over the rows, ``function(rows, *args)`` (:mod:`._rows`), and the bin counts (with
  the pair counts of the squared-loss stump step, when it uses them);
* the scores ``F`` of the forest on the rows, as an opaque *scores* value that the problem
  holds and the source creates (:meth:`RowSource.scores`) and updates
  (:meth:`RowSource.add_stump`);
* at given scores: the gradient and Hessian histograms, the exact leaves of a new stump,
  and the data term of the loss with or without a candidate stump.

The rows in memory (:class:`InMemoryRows`, here) keep ``F`` as an array updated stump by
stump. The persisted partitions of a dask input (:class:`._dask.DaskPartitions`) keep
nothing that changes during the fit: their scores are the forest itself (its segment table),
from which each partition recomputes ``F`` in each pass. So every method that changes or
reads scores is given both what an array needs (the stump) and what a forest needs
(``forest``, a function returning the forest of the new scores as
:meth:`._optimizer.StumpForestProblem.forest` does: only a source without arrays calls it).
"""

import abc

import numpy as np

from . import _stump_kernels as K
from ._rows import Rows, bin_counts, forest_scores, score_histograms


class RowSource(abc.ABC):
    """The training rows of a fit, wherever they are kept.

    Attributes
    ----------
    shape : tuple of int
        ``(n_features, n_samples)``, as the binned rows ``xb``.
    weight : float or None
        The weight of every row when all rows weigh the same, else None.
    parallel : bool
        Whether a pass over the rows may use numba's threads; the problem sets it from
        ``n_jobs`` (a source that passes its rows elsewhere may ignore it).
    """

    parallel = False

    @property
    def size(self):
        return self.shape[0] * self.shape[1]

    @abc.abstractmethod
    def row_sum(self, function, *args):
        """``function(rows, *args)`` (:mod:`._rows`) summed over all rows."""

    @abc.abstractmethod
    def bin_counts(self, n_bins, with_pairs):
        """``(counts, pairs)``: the rows in each bin of each feature (int, shape
        (n_features, n_bins)), and with ``with_pairs`` the pair counts of every feature
        pair (:func:`._stump_kernels.pair_counts`), else None."""

    @abc.abstractmethod
    def scores(self, forest):
        """The scores of ``forest`` ``(segment table, segment values, intercept)``."""

    @abc.abstractmethod
    def add_stump(self, scores, stump, scale, forest):
        """``scores`` plus ``scale`` times ``stump`` (:class:`._rows.Stump`); ``forest()``
        is the forest of the result. May update ``scores`` in place."""

    @abc.abstractmethod
    def histograms(self, scores, loss, n_bins):
        """Per-feature histograms over bins of the loss's gradient and Hessian at
        ``scores``; the Hessian one is 0.0 when the loss's Hessian is the constant ``w``
        (whose histogram the problem keeps)."""

    @abc.abstractmethod
    def stump_leaves(self, scores, loss, feature, goes_left, leaves, l2_reg):
        """Exact leaves of the stump (``feature``, ``goes_left``) added to ``scores``,
        starting from its Newton ``leaves``."""

    @abc.abstractmethod
    def data_loss(self, scores, loss):
        """The data term ``sum_i w_i l(y_i, F_i)`` at ``scores``."""

    @abc.abstractmethod
    def candidate_losses(self, scores, loss, candidates):
        """``[(data term, scores)]`` of ``scores`` plus each candidate ``(stump, forest)``
        (a stump of feature -1 adds nothing)."""


class InMemoryRows(RowSource):
    """Binned rows ``xb`` (n_features, n_samples), target ``y`` and weights ``w`` in memory;
    their scores are an array ``F`` (n_samples, n_values), updated stump by stump."""

    def __init__(self, xb, y, w, parallel=False):
        self.xb, self.y, self.w, self.parallel = xb, y, w, parallel
        self.shape = xb.shape
        self.weight = float(w[0]) if w.size and np.all(w == w[0]) else None

    def rows(self):
        return Rows(self.xb, self.y, self.w, self.parallel)

    def row_sum(self, function, *args):
        return function(self.rows(), *args)

    def bin_counts(self, n_bins, with_pairs):
        counts = self.row_sum(bin_counts, n_bins)
        pairs = K.pair_counts(self.xb, n_bins, self.parallel) if with_pairs else None
        return counts, pairs

    def scores(self, forest):
        return forest_scores(self.rows(), *forest)

    def add_stump(self, scores, stump, scale, forest):
        feature, goes_left, leaves = stump
        K.add_stump(scores, self.xb[feature], goes_left, leaves[0], leaves[1], scale)
        return scores

    def histograms(self, scores, loss, n_bins):
        return score_histograms(self.rows(), loss, scores, n_bins)

    def stump_leaves(self, scores, loss, feature, goes_left, leaves, l2_reg):
        return loss.solve_leaves(self.rows(), scores, feature, goes_left, leaves, l2_reg)

    def data_loss(self, scores, loss):
        return loss.loss(self.y, scores, self.w)

    def candidate_losses(self, scores, loss, candidates):
        out = []
        for stump, _ in candidates:
            F = scores
            if stump.feature >= 0:
                F = self.add_stump(scores.copy(), stump, 1.0, None)
            out.append((loss.loss(self.y, F, self.w), F))
        return out
