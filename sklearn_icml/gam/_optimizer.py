"""The alternating optimisation of a stump forest: stump steps, then a joint leaf step.

Gabidolla and Carreira-Perpinan (ICML 2025) fit all stumps of a forest on one objective
``E = sum_i w_i l(y_i, F(x_i)) + l2_reg / 2 * sum_t (a_t^2 + c_t^2)``, alternating two
exact steps: (A) each stump in turn is replaced by the best stump over every feature and
every bin threshold (a numba prefix-sum scan, with the second-order gain), its two leaves
solved exactly; then (B) all leaves and the intercept are refitted jointly with the splits
fixed. Each step is accepted only if ``E`` does not increase, so the objective history is
non-increasing. Everything that depends on the loss is a method of the loss object
(:mod:`._loss`); this module never asks which loss it runs.
"""

import dataclasses
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from ..utils import _parallel
from ..utils._progress import Progress
from . import _stump_kernels as K
from ._rows import Stump, bin_weights, data_loss, initial_statistics

# below this many cells (n_samples * n_features) the serial kernels are used: thread start-up
# costs more than it saves, by far on a loaded machine
PARALLEL_MIN_CELLS = 500_000

# the squared-loss stump step updates the gradient histograms from pair counts
# (:func:`._stump_kernels.pair_counts`) instead of a pass over the rows, and its leaf step
# reads the normal equations from them (:func:`._loss.pair_ridge_statistics`), when the
# weights are constant and the count table takes at most this fraction of the float64 input's bytes
# (at 10^6 rows x 20 features and 255 bins: 49 MB of 160 MB); below that the passes are
# cheap anyway
PAIR_TABLE_MAX_FRACTION = 0.5


def _newton_value(g, h, l2_reg):
    denom = h + l2_reg
    return np.where(denom > 0, -g / np.where(denom > 0, denom, 1.0), 0.0)


@dataclasses.dataclass
class _Segments:
    """The pieces of the shape functions: a segment is one constant piece of one feature.

    ``lut[q, bin]`` is the segment of bin ``bin`` of feature ``features[q]``; ``A`` maps the
    ``2 * n_stumps`` leaf values to the segment values; ``starts``/``sizes`` locate each
    feature's segments and ``pair_a``/``pair_b`` list the feature pairs of the Gram matrix.
    """

    features: np.ndarray
    lut: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    A: np.ndarray

    @property
    def n_segments(self):
        return int(self.sizes.sum())

    def without_map(self):
        """The table a pass over the rows needs (``A`` stays with the caller)."""
        return dataclasses.replace(self, A=None)


def split_groups(features, left):
    """The distinct splits of a forest: ``(first, group, size)``.

    Two stumps share a split when they are on one feature and send the same bins left
    (``left``, shape (T, n_bins)); zero stumps (``features == -1``) share none.
    ``first`` holds one stump of each split, ``group[t]`` the split of stump ``t`` (-1 for
    a zero stump) and ``size`` the number of stumps on each split.
    """
    group = np.full(features.shape[0], -1, dtype=np.int64)
    first = []
    used = np.flatnonzero(features >= 0)
    for j in np.unique(features[used]):
        stumps = used[features[used] == j]
        _, inverse = _unique_rows(left[stumps])
        _, firsts = np.unique(inverse, return_index=True)
        group[stumps] = len(first) + inverse
        first.extend(stumps[firsts])
    first = np.asarray(first, dtype=np.int64)
    size = np.bincount(group[used], minlength=first.size)
    return first, group, size


def _unique_rows(M):
    """``np.unique(M, axis=0, return_inverse=True)`` for a 2-D boolean ``M``, without
    numpy's field-by-field comparison of structured rows.

    Each row is packed into big-endian 64-bit words (column 0 the most significant bit), so
    the words compare as the rows do: the unique rows come back in the same (lexicographic)
    order, and the inverse is the same.
    """
    n, width = M.shape
    packed = np.packbits(M, axis=1)
    n_words = max(1, -(-packed.shape[1] // 8))
    padded = np.zeros((n, 8 * n_words), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    words = padded.view(">u8").astype(np.uint64)
    if n_words == 1:
        _, first, inverse = np.unique(words[:, 0], return_index=True, return_inverse=True)
    else:
        order = np.lexsort(words.T[::-1])
        ranked = words[order]
        new = np.ones(n, dtype=bool)
        new[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = np.cumsum(new) - 1
        first = order[new]
    return M[first], inverse.reshape(-1)


def leaves_are_finite(intercept, leaves):
    """True when a leaf step's values are finite; else warn that the old leaves are kept."""
    if np.all(np.isfinite(intercept)) and np.all(np.isfinite(leaves)):
        return True
    warnings.warn(
        "the leaf step produced non-finite leaves; the previous leaves are kept. "
        "Increase l2_reg or min_samples_leaf.",
        ConvergenceWarning,
        stacklevel=6,
    )
    return False


class StumpForestProblem:
    """State of one fit: the stumps, the scores of the forest; the two steps as methods.

    A stump ``t`` is its feature ``features[t]`` (-1: a zero stump), the boolean
    ``left[t, b]`` of the bins its left leaf takes (a threshold, a category set, and the
    side of the missing bin) and its two leaves ``leaves[t]``.

    The rows are a :class:`._row_source.RowSource`: rows in memory or the partitions of a
    dask input. The problem makes every decision; it asks the rows only for sums over them
    (:meth:`row_sum`), for the scores of the forest on them and what depends on those
    (histograms, the exact leaves of a new stump, losses).
    """

    def __init__(
        self, rows, n_edges, loss, *, n_stumps, l2_reg, min_samples_leaf, parallel,
        categorical, monotone, missing_bin,
    ):
        self.rows, self.loss = rows, loss
        rows.parallel = parallel
        self._scores_stale, self.hist_g = False, None
        self.parallel = parallel
        self.n_edges = n_edges
        self.categorical = np.asarray(categorical, dtype=bool)
        self.monotone = np.asarray(monotone, dtype=np.int64)
        self.missing_bin = int(missing_bin)
        self.l2_reg_rows = float(l2_reg)
        self.msl = int(min_samples_leaf)
        self.n_bins = self.missing_bin + 1
        m = loss.n_values
        self.features = np.full(n_stumps, -1, dtype=np.int64)
        self.left = np.zeros((n_stumps, self.n_bins), dtype=bool)
        self.leaves = np.zeros((n_stumps, 2, m))
        self.initial_state()

    def initial_state(self):
        """Intercept-only scores and the statistics fixed for the whole fit (counts, pairs)."""
        rows, loss = self.rows, self.loss
        self.weight = rows.weight  # the constant weight of every row, or None
        # pair counts, when the stump step updates histograms from them
        self.counts, self.pairs = rows.bin_counts(
            self.n_bins, self.use_pairs(rows.shape, loss, rows.weight is not None)
        )
        # the Hessian histogram when the loss's Hessian is the constant w, and the
        # histogram of w y, from which (with the pair counts) the ridge leaf step is solved
        hist_h, hist_wy, sw, swy, target = rows.row_sum(initial_statistics, loss, self.n_bins)
        self.hist_h, self.hist_wy = (hist_h, hist_wy) if loss.exact_stump_step else (None, None)
        self.total_weight = self.sw = sw
        self.swy = swy
        self.base_intercept = loss.intercept_from_sums(sw, target)  # the best constant
        # l2_reg is given in units of sample weight; the penalty is in the loss's Hessian
        # units, so that it shrinks a leaf as l2_reg rows at the base rate would
        self.l2_reg = self.l2_reg_rows * loss.hessian_scale(self.base_intercept)
        self.intercept = self.base_intercept.copy()
        self.scores = rows.scores(self.forest(self.intercept, self.leaves))

    def row_sum(self, function, *args):
        """``function(rows, *args)``, a sum over the training rows (see :mod:`._rows`)."""
        return self.rows.row_sum(function, *args)

    def bin_weight(self):
        """``[j, b]``: the training weight in bin ``b`` of feature ``j``."""
        return self.row_sum(bin_weights, self.n_bins)

    def use_pairs(self, shape, loss, constant_weights):
        """Whether the stump step works from pair counts (see ``PAIR_TABLE_MAX_FRACTION``)."""
        n_features, n_samples = shape
        table_bytes = 4 * n_features * (n_features - 1) // 2 * self.n_bins**2
        return bool(
            loss.exact_stump_step and loss.n_values == 1 and n_features > 1 and n_samples > 0
            and constant_weights
            and table_bytes <= PAIR_TABLE_MAX_FRACTION * 8 * n_samples * n_features
        )

    # -- the scores and the gradient histogram of the pair-count stump step ------------------
    # With pair counts the stump step keeps ``hist_g`` (the gradient histogram of the current
    # forest) up to date instead of the scores; they are then recomputed from the stumps when
    # they are read (once per leaf step), which also restarts ``hist_g`` from a pass over the
    # rows so that rounding does not accumulate over more than one sweep.
    @property
    def scores(self):
        """The scores of the current forest on the training rows, as the rows keep them."""
        if self._scores_stale:
            self._scores = self.rows.scores(self.forest(self.intercept, self.leaves))
            self._scores_stale = False
            self.hist_g = None
        return self._scores

    @scores.setter
    def scores(self, value):
        self._scores = value
        self._scores_stale = False
        self.hist_g = None

    def _pair_update(self, feature, goes_left, leaves, scale):
        """``hist_g`` after adding ``scale`` times the stump to the forest (pair counts)."""
        w0 = self.weight
        K.pair_update(
            self.hist_g, self.pairs, self.counts, int(feature), goes_left,
            w0 * scale * float(leaves[0, 0]), w0 * scale * float(leaves[1, 0]), self.parallel,
        )
        self._scores_stale = True

    @property
    def n_stumps(self):
        return self.features.shape[0]

    def grow(self, n_new):
        """Append ``n_new`` zero stumps; return their indices."""
        t0 = self.n_stumps
        self.features = np.concatenate([self.features, np.full(n_new, -1, dtype=np.int64)])
        self.left = np.concatenate([self.left, np.zeros((n_new, self.n_bins), dtype=bool)])
        self.leaves = np.concatenate([self.leaves, np.zeros((n_new,) + self.leaves.shape[1:])])
        return np.arange(t0, t0 + n_new)

    def state(self):
        return (self.features.copy(), self.left.copy(), self.leaves.copy(),
                self.intercept.copy())

    def restore(self, state):
        self.features, self.left, self.leaves, self.intercept = state
        self._scores_stale = True

    def stump(self, t):
        """Stump ``t`` (a copy)."""
        return Stump(int(self.features[t]), self.left[t].copy(), self.leaves[t].copy())

    def forest_with(self, t, stump):
        """The forest (see :meth:`forest`) with stump ``t`` replaced by ``stump``."""
        saved = self.stump(t)
        self.features[t], self.left[t], self.leaves[t] = stump
        try:
            return self.forest(self.intercept, self.leaves)
        finally:
            self.features[t], self.left[t], self.leaves[t] = saved

    # -- objective ----------------------------------------------------------------------
    def penalty(self, leaves=None):
        leaves = self.leaves if leaves is None else leaves
        return 0.5 * self.l2_reg * float(np.sum(leaves * leaves))

    def objective(self):
        return self.rows.data_loss(self.scores, self.loss) + self.penalty()

    def _keeps_monotone(self, j, leaves):
        s = self.monotone[j]
        return s == 0 or bool(np.all(s * (leaves[1] - leaves[0]) >= 0))

    # -- (A) stump step -----------------------------------------------------------------
    def stump_step(self, t):
        """Replace stump ``t`` by the best stump on the others' residual, if ``E`` drops."""
        old = self.stump(t)
        hist_g, hist_h = self.residual_histograms(t, old)
        gains, lefts = K.best_splits(
            hist_g, hist_h, self.counts, self.n_edges, self.l2_reg, self.msl,
            categorical=self.categorical, monotone=self.monotone,
            missing_bin=self.missing_bin, parallel=self.parallel,
        )
        j = int(np.argmax(gains))
        if not np.isfinite(gains[j]):  # no split satisfies min_samples_leaf anywhere
            self.features[t] = -1
            self.left[t] = False
            self.leaves[t] = 0.0
            return
        goes_left = lefts[j]
        gl, hl = hist_g[j][goes_left].sum(0), hist_h[j][goes_left].sum(0)
        gr, hr = hist_g[j].sum(0) - gl, hist_h[j].sum(0) - hl
        new = Stump(j, goes_left, np.stack(
            [_newton_value(gl, hl, self.l2_reg), _newton_value(gr, hr, self.l2_reg)]
        ))
        if self.loss.exact_stump_step:  # the Newton values are the exact optimum
            self.features[t], self.left[t], self.leaves[t] = new
            self.add_new_stump(new)
            return
        new = new._replace(leaves=self.rows.stump_leaves(
            self.scores, self.loss, j, goes_left, new.leaves, self.l2_reg
        ))
        # keep the old stump when E does not drop (also when e_new is nan) or when the
        # exact leaves broke a monotone constraint that the Newton leaves kept
        if self.accept_exact_stump(t, old, new):
            self.features[t], self.left[t], self.leaves[t] = new

    def residual_histograms(self, t, old):
        """Gradient and Hessian histograms of the forest without stump ``t`` (whose old
        stump is ``old``), which leaves the forest for the step."""
        if self.pairs is not None:
            if self.hist_g is None:  # one pass over the rows per sweep, at its start
                self.hist_g = self.rows.histograms(self.scores, self.loss, self.n_bins)[0]
            if old.feature >= 0:
                self._pair_update(old.feature, old.goes_left, old.leaves, -1.0)
            return self.hist_g, self.hist_h
        if old.feature >= 0:
            def residual():
                leaves = self.leaves.copy()
                leaves[t] = 0.0
                return self.forest(self.intercept, leaves)

            self.scores = self.rows.add_stump(self.scores, old, -1.0, residual)
        hist_g, hist_h = self.rows.histograms(self.scores, self.loss, self.n_bins)
        return hist_g, self.hist_h if self.loss.exact_stump_step else hist_h

    def add_new_stump(self, new):
        """Add the new stump of an exact stump step (already in the stumps) to the forest."""
        if self.pairs is not None:
            self._pair_update(new.feature, new.goes_left, new.leaves, 1.0)
        else:
            self.scores = self.rows.add_stump(
                self.scores, new, 1.0, lambda: self.forest(self.intercept, self.leaves)
            )

    def accept_exact_stump(self, t, old, new):
        """Add the ``new`` stump if ``E`` drops and it keeps its monotone constraint, else put
        stump ``t``'s ``old`` one back; True when the new one is taken."""
        (e_new, with_new), (e_old, with_old) = self.rows.candidate_losses(
            self.scores, self.loss, [
                (new, lambda: self.forest_with(t, new)),
                (old, lambda: self.forest(self.intercept, self.leaves)),
            ],
        )
        e_new += self.penalty(new.leaves)
        e_old += self.penalty(old.leaves)
        if not e_new <= e_old or not self._keeps_monotone(new.feature, new.leaves):
            self.scores = with_old
            return False
        self.scores = with_new
        return True

    def initialise(self, stumps, init, rng):
        """Give each of ``stumps`` its first stump: the best on the current residual
        (``init="greedy"``) or a random one with zero leaves."""
        for t in stumps:
            if init == "greedy":
                self.stump_step(t)
            else:
                self.random_stump(t, rng)

    def random_stump(self, t, rng):
        """Give stump ``t`` a random feature and valid threshold, leaves left at 0.

        Thresholds run over the bin codes (category codes for a categorical feature);
        missing rows go with the larger side.
        """
        valid = []
        for j in range(self.counts.shape[0]):
            counts = self.counts[j, : self.n_edges[j]]
            cum = np.cumsum(counts)
            total = self.counts[j].sum()
            ks = np.flatnonzero((cum >= self.msl) & (total - cum >= self.msl))
            if ks.size:
                valid.append((j, ks))
        if not valid:
            return
        j, ks = valid[rng.randint(len(valid))]
        k = int(ks[rng.randint(ks.size)])
        left = np.zeros(self.n_bins, dtype=bool)
        left[: k + 1] = True
        n_left = self.counts[j, : k + 1].sum()
        left[self.n_edges[j] + 1 :] = n_left >= self.counts[j].sum() - n_left  # missing
        self.features[t], self.left[t] = j, left

    # -- (B) leaf step ------------------------------------------------------------------
    def segments(self):
        """Segment lookup table and the map ``A`` from leaves to segment values.

        The segments of a feature are the distinct patterns of (left or right) over its
        stumps: bins with the same pattern take the same value of the shape function.
        """
        cached = getattr(self, "_segments_cache", None)
        if (
            cached is not None
            and np.array_equal(cached[0], self.features)
            and np.array_equal(cached[1], self.left)
        ):
            return cached[2]
        n_stumps = self.n_stumps
        used = np.flatnonzero(self.features >= 0)
        features = np.unique(self.features[used])
        lut = np.zeros((features.shape[0], self.n_bins), dtype=np.int64)
        starts, sizes, rows, cols = [], [], [], []
        start = 0
        for q, j in enumerate(features):
            stumps = used[self.features[used] == j]
            patterns, inverse = _unique_rows(self.left[stumps].T)
            lut[q] = start + inverse.reshape(-1)
            for s_local, pattern in enumerate(patterns):
                rows.append(np.full(stumps.size, start + s_local))
                cols.append(2 * stumps + np.where(pattern, 0, 1))
            starts.append(start)
            sizes.append(patterns.shape[0])
            start += patterns.shape[0]
        A = np.zeros((start, 2 * n_stumps))
        if rows:
            A[np.concatenate(rows), np.concatenate(cols)] = 1.0
        pair_a, pair_b = np.triu_indices(features.shape[0])
        seg = _Segments(
            features=features.astype(np.int64),
            lut=lut,
            starts=np.asarray(starts, dtype=np.int64),
            sizes=np.asarray(sizes, dtype=np.int64),
            pair_a=pair_a.astype(np.int64),
            pair_b=pair_b.astype(np.int64),
            A=A,
        )
        # the leaf step and the validation pass of a sweep ask for the same splits
        self._segments_cache = (self.features.copy(), self.left.copy(), seg)
        return seg

    def forest(self, intercept, leaves, seg=None):
        """``(segment table, segment values, intercept)``: a forest as a pass over the rows
        takes it (see :mod:`._rows`)."""
        seg = self.segments() if seg is None else seg
        values = seg.A @ leaves.reshape(-1, leaves.shape[-1])
        return seg.without_map(), values, intercept

    def monotone_rows(self, stumps):
        """``D`` with ``D @ leaves.ravel() >= 0`` iff each constrained stump is monotone,
        for a leaf vector that holds the leaves of ``stumps`` (indices), in that order."""
        sign = self.monotone[self.features[stumps]]
        rows = np.flatnonzero(sign != 0)
        D = np.zeros((rows.size, 2 * stumps.size))
        D[np.arange(rows.size), 2 * rows + 1] = sign[rows]
        D[np.arange(rows.size), 2 * rows] = -sign[rows]
        return D

    def merged_splits(self):
        """The distinct splits of the forest, as :func:`split_groups` gives them.

        Stumps on one feature with the same left bins have the same two leaf columns: the
        data term depends only on the sums of their leaves, and for given sums the penalty
        is smallest when the leaves are equal, so the leaf step's optimum (unique for
        ``l2_reg > 0``) gives them equal leaves. The leaf step is therefore solved over the
        distinct splits only: a split shared by ``m`` stumps, with leaf ``z``, stands for
        ``m`` leaves of ``z / m``; in the coordinate ``y = z / sqrt(m)`` its leaf column is
        scaled by ``sqrt(m)`` and its penalty is ``l2_reg / 2 * y^2``, the same ridge with
        fewer unknowns (``n_stumps="auto"`` grows many stumps on one split where the
        penalty is too strong for one).
        """
        return split_groups(self.features, self.left)

    def _snap_monotone(self, leaves):
        # the QP solver holds the constraints up to its tolerance; a stump left a hair on the
        # wrong side takes the mean of its two leaves, so the constraints hold exactly
        used = np.flatnonzero(self.features >= 0)
        for t in used[self.monotone[self.features[used]] != 0]:
            s = self.monotone[self.features[t]]
            if s * (leaves[t, 1, 0] - leaves[t, 0, 0]) < 0:
                leaves[t, :, 0] = leaves[t, :, 0].mean()
        return leaves

    def leaf_step(self):
        """Refit intercept and all leaves with splits fixed; keep the old ones unless E drops.

        The solve runs over the distinct splits (:meth:`merged_splits`): its cost follows
        their number, not the number of stumps.
        """
        e_old = self.objective()
        if not np.any(self.features >= 0):
            seg, intercept, leaves = None, self.base_intercept.copy(), self.leaves
        else:
            seg = self.segments()
            first, group, size = self.merged_splits()
            used = np.flatnonzero(group >= 0)
            root = np.sqrt(size)
            start = np.zeros((first.size,) + self.leaves.shape[1:])
            np.add.at(start, group[used], self.leaves[used])
            start /= root[:, None, None]
            merged = dataclasses.replace(
                seg, A=seg.A[:, (2 * first[:, None] + [0, 1]).ravel()] * np.repeat(root, 2)
            )
            D = self.monotone_rows(first) if np.any(self.monotone) else None
            with np.errstate(all="ignore"):
                intercept, values = self.loss.fit_leaves(self, merged, (self.intercept, start),
                                                         D)
            leaves = np.zeros_like(self.leaves)
            leaves[used] = values[group[used]] / root[group[used], None, None]
            if not leaves_are_finite(intercept, leaves):
                return e_old
            if D is not None:
                leaves = self._snap_monotone(leaves)
        scores = self.rows.scores(self.forest(intercept, leaves, seg))
        e_new = self.rows.data_loss(scores, self.loss) + self.penalty(leaves)
        if e_new <= e_old:
            self.intercept, self.leaves, self.scores = intercept, leaves, scores
            return e_new
        return e_old

    def validation_loss(self, validation):
        """Mean loss of the current forest on the held-out rows ``validation`` (a
        :class:`._row_source.RowSource`)."""
        total, weight = validation.row_sum(
            data_loss, self.loss, *self.forest(self.intercept, self.leaves)
        )
        return float(total) / float(weight)


# the size path of n_stumps="auto": each round grows the forest by this factor (by at least
# MIN_GROWTH stumps), so the stump steps of the whole path add up to a few times the size it
# reaches, instead of growing with its square
GROWTH = 1.25
MIN_GROWTH = 5
# sweeps over the whole forest in each round of the path (after the new stumps are added)
PATH_SWEEPS = 1
# the path ends once the forest is this many times the best round's size (and
# path_patience rounds past it)
PATH_OVERSHOOT = 2.0


def _should_stop(scores, n_iter_no_change, tol):
    """HistGradientBoosting's rule: no score of the last ``n_iter_no_change`` sweeps beats
    the score just before them by more than ``tol`` (scores: higher is better)."""
    if len(scores) <= n_iter_no_change:
        return False
    reference = scores[-n_iter_no_change - 1] + tol
    return not any(score > reference for score in scores[-n_iter_no_change:])


def next_size(n_stumps):
    """The size of the next round of the path of ``n_stumps="auto"``."""
    return max(n_stumps + MIN_GROWTH, int(np.ceil(GROWTH * n_stumps)))


def path_patience(n_iter_no_change):
    """Rounds without improvement that end the path: ``n_iter_no_change``, or the rounds
    that double the forest if fewer (so that the path overshoots the best size at most
    about twice)."""
    doubling = int(np.ceil(np.log(2.0) / np.log(GROWTH)))
    return max(1, min(n_iter_no_change, doubling))


def fit_stump_forest(
    rows, n_edges, loss, *, n_stumps, max_iter, l2_reg, min_samples_leaf, tol, init,
    n_jobs, rng, progress=None, label="", categorical=None, monotone=None,
    missing_bin=None, validation=None, n_iter_no_change=10, warm_start=None,
):
    """Initialise the stumps, then sweep (stump steps, then a leaf step) until it stops.

    Parameters
    ----------
    rows : :class:`._row_source.RowSource`
        The binned training rows (:func:`._encoding.bin_features`), the target (as the loss
        wants it) and the sample weights: in memory or in the partitions of a dask input.
    n_edges : ndarray of shape (n_features,)
        Number of candidate thresholds of each feature (value bins are ``0..n_edges``).
    loss : loss object of :mod:`._loss`
    n_stumps : int or "auto"
        A fixed forest size, or ``"auto"``: a path of growing forests, started empty; each
        round grows the forest to :func:`next_size` (the new stumps greedy, each the best
        stump on the current residual), then runs ``PATH_SWEEPS`` sweeps over all stumps.
        With ``validation`` the path stops after :func:`path_patience` rounds without
        improvement and returns the forest of the best round.
    max_iter, l2_reg, min_samples_leaf, tol, init, n_jobs, n_iter_no_change
        As the estimators' parameters (``l2_reg`` in the loss's Hessian units, see
        :meth:`StumpForestProblem`).
    rng : numpy.random.RandomState
        Draws the random init and the order in which stumps are visited.
    progress : :class:`~sklearn_icml.utils._progress.Progress` or None
        Where the verbose lines go: one object for every stage of an estimator's fit, so
        the elapsed time runs on across them. None prints nothing.
    label : str
        Start of this stage's lines ("refit on all rows, " for the final fit).
    categorical, monotone : ndarray of shape (n_features,)
        Categorical mask and monotone constraints (-1, 0, 1).
    missing_bin : int
        Bin code of missing values (default: one past the largest value bin).
    validation : :class:`._row_source.RowSource` or None
        Held-out rows for early stopping: the fit stops when their mean loss has not
        improved by more than ``tol`` in ``n_iter_no_change`` sweeps, and returns the forest
        of the best sweep. Without them, the fit stops at the first sweep that lowers the
        objective per unit weight by at most ``tol``.
    warm_start : tuple or None
        ``(features, left, leaves)`` of a forest (of ``n_stumps`` stumps) to start from
        instead of the initialisation; its leaves are first refitted by a leaf step.

    Returns
    -------
    problem : StumpForestProblem
        The final state (``features``, ``left``, ``leaves``, ``intercept``).
    info : dict
        ``history`` (objective after the initialisation and after each kept sweep;
        non-increasing), ``n_iter`` (sweeps run), ``validation_score`` (negative mean
        validation loss per sweep, or None), ``converged`` (False when ``max_iter`` ended
        the fit), ``sizes`` (forest size after each sweep).
    """
    n_features = rows.shape[0]
    categorical = np.zeros(n_features, bool) if categorical is None else categorical
    monotone = np.zeros(n_features, np.int64) if monotone is None else monotone
    missing_bin = int(n_edges.max()) + 1 if missing_bin is None else missing_bin
    auto = isinstance(n_stumps, str)
    progress = Progress("StumpForestGAM") if progress is None else progress
    n_jobs = _parallel.resolve_n_jobs(n_jobs)
    with _parallel.numba_threads(n_jobs), threadpool_limits(limits=1, user_api="blas"):
        problem = StumpForestProblem(
            rows, n_edges, loss,
            n_stumps=0 if auto else n_stumps,
            l2_reg=l2_reg,
            min_samples_leaf=min_samples_leaf,
            parallel=n_jobs != 1 and rows.size >= PARALLEL_MIN_CELLS,
            categorical=categorical, monotone=monotone, missing_bin=missing_bin,
        )
        if warm_start is None:
            problem.initialise(range(problem.n_stumps), init, rng)
        else:
            features, left, leaves = warm_start
            problem.restore(
                (features.copy(), left.copy(), leaves.copy(), problem.intercept.copy())
            )
            problem.leaf_step()
        weight = problem.total_weight

        def score():
            if validation is None:
                return -history[-1] / weight
            return -problem.validation_loss(validation)

        history = [problem.objective()]
        scores = [score()]
        sizes = [problem.n_stumps]
        best, best_sweep = problem.state(), 0
        patience = path_patience(n_iter_no_change) if auto else n_iter_no_change
        progress.log(f"{label}init", objective=history[0])
        converged = False
        n_iter = 0
        for n_iter in range(1, max_iter + 1):
            if auto:
                grown = next_size(problem.n_stumps)
                problem.initialise(problem.grow(grown - problem.n_stumps), init, rng)
            for _ in range(PATH_SWEEPS if auto else 1):
                for t in rng.permutation(problem.n_stumps):
                    problem.stump_step(t)
            history.append(problem.leaf_step())
            scores.append(score())
            sizes.append(problem.n_stumps)
            if validation is None or scores[-1] > scores[best_sweep]:
                best, best_sweep = problem.state(), n_iter
            if progress.enabled():
                values = {"objective": history[-1]}
                if validation is not None:
                    values["validation_loss"] = -scores[-1]
                values["stumps_used"] = int(np.sum(problem.features >= 0))
                progress.log(f"{label}sweep {n_iter}", **values)
            if validation is not None:
                if auto and problem.n_stumps < PATH_OVERSHOOT * sizes[best_sweep] + MIN_GROWTH:
                    continue
                if _should_stop(scores, patience, tol):
                    converged = True
                    break
            elif scores[-1] - scores[-2] <= tol:
                converged = True
                break
    problem.restore(best)
    info = {
        "history": history[: best_sweep + 1],
        "n_iter": n_iter,
        "validation_score": None if validation is None else np.asarray(scores),
        "converged": converged,
        "sizes": sizes,
    }
    return problem, info
