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

from . import _stump_kernels as K

# below this many cells (n_samples * n_features) the serial kernels are used: thread start-up
# costs more than it saves, by far on a loaded machine
PARALLEL_MIN_CELLS = 500_000

# the squared-loss stump step updates the gradient histograms from pair counts
# (:func:`._stump_kernels.pair_counts`) instead of a pass over the rows when the weights are
# constant and the count table takes at most this fraction of the float64 input's bytes
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


class StumpForestProblem:
    """State of one fit: binned data, stumps, current ``F``; the two steps as methods."""

    def __init__(
        self, xb, n_edges, y, w, loss, *, n_stumps, l2_reg, min_samples_leaf, parallel
    ):
        self.xb, self.y, self.w, self.loss = xb, y, w, loss
        self._F_stale, self.hist_g = False, None
        self.parallel = parallel
        self.n_edges = n_edges
        self.l2_reg = float(l2_reg)
        self.msl = int(min_samples_leaf)
        self.n_bins = int(n_edges.max()) + 1
        m = loss.n_values
        self.features = np.full(n_stumps, -1, dtype=np.int64)
        self.bins = np.full(n_stumps, -1, dtype=np.int64)
        self.leaves = np.zeros((n_stumps, 2, m))
        self.initial_state()

    def initial_state(self):
        """Intercept-only ``F`` and the statistics fixed for the whole fit (counts, pairs)."""
        xb, y, w, loss, parallel = self.xb, self.y, self.w, self.loss, self.parallel
        self.counts = np.zeros((xb.shape[0], self.n_bins), dtype=np.int64)
        for j in range(xb.shape[0]):
            self.counts[j] = np.bincount(xb[j], minlength=self.n_bins)[: self.n_bins]
        self.intercept = loss.intercept(y, w)
        self.F = np.tile(self.intercept, (xb.shape[1], 1))
        self.hist_h = None  # Hessian histogram when the loss's Hessian is the constant w
        if loss.exact_stump_step:
            self.hist_h = K.bin_histograms(xb, w[:, None], self.n_bins, parallel)
        self.pairs = None  # pair counts, when the stump step updates histograms from them
        if self.use_pairs(xb.shape, loss, np.all(w == w[0])):
            self.pairs = K.pair_counts(xb, self.n_bins, parallel)
            self.weight = float(w[0])  # the constant weight of every row

    def use_pairs(self, shape, loss, constant_weights):
        """Whether the stump step works from pair counts (see ``PAIR_TABLE_MAX_FRACTION``)."""
        n_features, n_samples = shape
        table_bytes = 4 * n_features * (n_features - 1) // 2 * self.n_bins**2
        return bool(
            loss.exact_stump_step and loss.n_values == 1 and n_features > 1 and n_samples > 0
            and constant_weights
            and table_bytes <= PAIR_TABLE_MAX_FRACTION * 8 * n_samples * n_features
        )

    # -- F and the gradient histogram of the pair-count stump step ---------------------------
    # With pair counts the stump step keeps ``hist_g`` (the gradient histogram of the current
    # forest) up to date instead of ``F``; ``F`` is then recomputed from the stumps when it is
    # read (once per leaf step), which also restarts ``hist_g`` from a pass over the rows so
    # that rounding does not accumulate over more than one sweep.
    @property
    def F(self):
        if self._F_stale:
            self._F = self.predict_from(self.segments(), self.intercept, self.leaves)
            self._F_stale = False
            self.hist_g = None
        return self._F

    @F.setter
    def F(self, value):
        self._F = value
        self._F_stale = False
        self.hist_g = None

    def gradient_histogram(self):
        """Histogram of the gradient of the current forest: one pass over the rows."""
        g, _ = self.loss.grad_hess(self.y, self.F, self.w)
        return K.bin_histograms(self.xb, g, self.n_bins, self.parallel)

    def _pair_update(self, feature, k, leaves, scale):
        """``hist_g`` after adding ``scale`` times the stump to the forest (pair counts)."""
        w0 = self.weight
        K.pair_update(
            self.hist_g, self.pairs, self.counts, int(feature), int(k),
            w0 * scale * float(leaves[0, 0]), w0 * scale * float(leaves[1, 0]),
        )
        self._F_stale = True

    # -- objective ----------------------------------------------------------------------
    def penalty(self, leaves=None):
        leaves = self.leaves if leaves is None else leaves
        return 0.5 * self.l2_reg * float(np.sum(leaves * leaves))

    def objective(self):
        return self.loss.loss(self.y, self.F, self.w) + self.penalty()

    def add_stump(self, F, feature, k, leaves, scale=1.0):
        K.add_stump(F, self.xb[feature], k, leaves[0], leaves[1], scale)

    # -- (A) stump step -----------------------------------------------------------------
    def stump_step(self, t):
        """Replace stump ``t`` by the best stump on the others' residual, if ``E`` drops."""
        old_feature, old_k = self.features[t], self.bins[t]
        old_leaves = self.leaves[t].copy()
        if self.pairs is not None:
            if self.hist_g is None:  # one pass over the rows per sweep, at its start
                self.hist_g = self.gradient_histogram()
            if old_feature >= 0:
                self._pair_update(old_feature, old_k, old_leaves, -1.0)
            hist_g, h = self.hist_g, None
        else:
            if old_feature >= 0:
                self.add_stump(self.F, old_feature, old_k, old_leaves, -1.0)
            g, h = self.loss.grad_hess(self.y, self.F, self.w)
            hist_g = K.bin_histograms(self.xb, g, self.n_bins, self.parallel)
        if h is None:
            hist_h = self.hist_h
        else:
            hist_h = K.bin_histograms(self.xb, h, self.n_bins, self.parallel)
        gains, ks = K.best_splits(
            hist_g, hist_h, self.counts, self.n_edges, self.l2_reg, self.msl, self.parallel
        )
        j = int(np.argmax(gains))
        if not np.isfinite(gains[j]):  # no split satisfies min_samples_leaf anywhere
            self.features[t], self.bins[t] = -1, -1
            self.leaves[t] = 0.0
            return
        k = int(ks[j])
        gl, hl = hist_g[j, : k + 1].sum(0), hist_h[j, : k + 1].sum(0)
        gr, hr = hist_g[j].sum(0) - gl, hist_h[j].sum(0) - hl
        new_leaves = np.stack(
            [_newton_value(gl, hl, self.l2_reg), _newton_value(gr, hr, self.l2_reg)]
        )
        if self.pairs is not None:
            self._pair_update(j, k, new_leaves, 1.0)
        elif self.loss.exact_stump_step:  # the Newton values are the exact optimum
            self.add_stump(self.F, j, k, new_leaves)
        else:
            new_leaves[0] = self.loss.solve_leaf(self, j, k, True, new_leaves[0])
            new_leaves[1] = self.loss.solve_leaf(self, j, k, False, new_leaves[1])
            F_new = self.F.copy()
            self.add_stump(F_new, j, k, new_leaves)
            e_new = self.loss.loss(self.y, F_new, self.w) + self.penalty(new_leaves)
            F_old = self.F
            if old_feature >= 0:
                F_old = self.F.copy()
                self.add_stump(F_old, old_feature, old_k, old_leaves)
            e_old = self.loss.loss(self.y, F_old, self.w) + self.penalty(old_leaves)
            if not e_new <= e_old:  # keep the old stump (also when e_new is nan)
                self.F = F_old
                return
            self.F = F_new
        self.features[t], self.bins[t] = j, k
        self.leaves[t] = new_leaves

    def random_stump(self, t, rng):
        """Give stump ``t`` a random feature and valid threshold, leaves left at 0."""
        valid = []
        for j in range(self.counts.shape[0]):
            cum = np.cumsum(self.counts[j, : self.n_edges[j]])
            total = self.counts[j].sum()
            ks = np.flatnonzero((cum >= self.msl) & (total - cum >= self.msl))
            if ks.size:
                valid.append((j, ks))
        if not valid:
            return
        j, ks = valid[rng.randint(len(valid))]
        self.features[t], self.bins[t] = j, int(ks[rng.randint(ks.size)])

    # -- (B) leaf step ------------------------------------------------------------------
    def segments(self):
        """Segment lookup table and the map ``A`` from leaves to segment values."""
        n_stumps = self.features.shape[0]
        used = np.flatnonzero(self.features >= 0)
        features = np.unique(self.features[used])
        lut = np.zeros((features.shape[0], self.n_bins), dtype=np.int64)
        starts, sizes, position = [], [], np.zeros(n_stumps, dtype=np.int64)
        start = 0
        for q, j in enumerate(features):
            stumps = used[self.features[used] == j]
            thresholds = np.unique(self.bins[stumps])
            lut[q] = start + np.searchsorted(thresholds, np.arange(self.n_bins), side="left")
            position[stumps] = start + np.searchsorted(thresholds, self.bins[stumps])
            starts.append(start)
            sizes.append(thresholds.shape[0] + 1)
            start += thresholds.shape[0] + 1
        A = np.zeros((start, 2 * n_stumps))
        for q, j in enumerate(features):
            end = starts[q] + sizes[q]
            for t in used[self.features[used] == j]:
                A[starts[q] : position[t] + 1, 2 * t] = 1.0
                A[position[t] + 1 : end, 2 * t + 1] = 1.0
        pair_a, pair_b = np.triu_indices(features.shape[0])
        return _Segments(
            features=features.astype(np.int64),
            lut=lut,
            starts=np.asarray(starts, dtype=np.int64),
            sizes=np.asarray(sizes, dtype=np.int64),
            pair_a=pair_a.astype(np.int64),
            pair_b=pair_b.astype(np.int64),
            A=A,
        )

    def predict_from(self, seg, intercept, leaves):
        """Raw scores ``F`` on the training rows for the given intercept and leaves."""
        values = seg.A @ leaves.reshape(-1, leaves.shape[-1])
        return K.segment_predict(
            self.xb, seg.features, seg.lut, values, intercept, self.parallel
        )

    def leaf_step(self):
        """Refit intercept and all leaves with splits fixed; keep the old ones unless E drops."""
        e_old = self.objective()
        if not np.any(self.features >= 0):
            intercept, leaves = self.loss.intercept(self.y, self.w), self.leaves
            F = np.tile(intercept, (self.xb.shape[1], 1))
        else:
            seg = self.segments()
            with np.errstate(all="ignore"):
                intercept, leaves = self.loss.fit_leaves(self, seg)
            if not (np.all(np.isfinite(intercept)) and np.all(np.isfinite(leaves))):
                warnings.warn(
                    "the leaf step produced non-finite leaves; the previous leaves are kept. "
                    "Increase l2_reg or min_samples_leaf.",
                    ConvergenceWarning,
                    stacklevel=5,
                )
                return e_old
            F = self.predict_from(seg, intercept, leaves)
        e_new = self.loss.loss(self.y, F, self.w) + self.penalty(leaves)
        if e_new <= e_old:
            self.intercept, self.leaves, self.F = intercept, leaves, F
            return e_new
        return e_old


def fit_stump_forest(
    xb, n_edges, y, w, loss, *, n_stumps, max_iter, l2_reg, min_samples_leaf, tol, init,
    n_jobs, rng, verbose=0, name="StumpForestGAM", problem_class=None,
):
    """Initialise the stumps, then alternate stump steps and leaf steps until ``E`` settles.

    Parameters
    ----------
    xb : ndarray of shape (n_features, n_samples), dtype uint16
        Binned training data (:func:`._binning.bin_data`).
    n_edges : ndarray of shape (n_features,)
        Number of candidate thresholds of each feature.
    y, w : ndarray of shape (n_samples,)
        Target (as the loss wants it) and sample weights.
    loss : loss object of :mod:`._loss`
    n_stumps, max_iter, l2_reg, min_samples_leaf, tol, init, n_jobs, verbose
        As the estimators' parameters.
    rng : numpy.random.RandomState
        Draws the random init and the order in which stumps are visited.
    name : str
        Prefix of the verbose lines.
    problem_class : type, default=None
        :class:`StumpForestProblem` or a subclass keeping the rows elsewhere (the dask
        problem of :mod:`._dask`, whose ``xb`` describes the partitions).

    Returns
    -------
    problem : StumpForestProblem
        The final state (``features``, ``bins``, ``leaves``, ``intercept``).
    history : list of float
        Objective after the initialisation and after each iteration; non-increasing.
    n_iter : int
        Iterations run.
    """
    with K.numba_threads(n_jobs), threadpool_limits(limits=1, user_api="blas"):
        problem = (problem_class or StumpForestProblem)(
            xb, n_edges, y, w, loss, n_stumps=n_stumps, l2_reg=l2_reg,
            min_samples_leaf=min_samples_leaf,
            parallel=n_jobs != 1 and xb.size >= PARALLEL_MIN_CELLS,
        )
        for t in range(n_stumps):
            if init == "greedy":
                problem.stump_step(t)
            else:
                problem.random_stump(t, rng)
        history = [problem.objective()]
        if verbose:
            print(f"[{name}] init: objective {history[0]:.6g}")
        n_iter = 0
        for n_iter in range(1, max_iter + 1):
            for t in rng.permutation(n_stumps):
                problem.stump_step(t)
            history.append(problem.leaf_step())
            if verbose:
                used = int(np.sum(problem.features >= 0))
                print(
                    f"[{name}] iteration {n_iter}: objective {history[-1]:.6g}, {used} "
                    "stumps used"
                )
            if history[-2] - history[-1] <= tol * max(1.0, abs(history[-2])):
                break
    return problem, history, n_iter
