"""Stump-forest GAMs: all stumps of a forest optimised jointly by alternating optimisation.

Gabidolla and Carreira-Perpinan, "Generalized additive models via direct optimization of
regularized decision stump forests", ICML 2025. The paper's text and code were not available;
the regulariser (L2 on leaves, minimum leaf size, quantile bins) and the solvers follow the
reconstruction in ``specs/stump-forest-gam.md``.

A fit alternates two exact steps on one objective ``E = sum_i w_i l(y_i, F(x_i)) +
l2_reg / 2 * sum_t (a_t^2 + c_t^2)``: (A) each stump in turn is replaced by the best stump
over every feature and every bin threshold (numba prefix-sum scan), then (B) all leaves and
the intercept are refitted jointly with the splits fixed (ridge by Cholesky for the squared
loss, Newton for the logistic loss, L-BFGS for softmax). Each step is accepted only if
``E`` does not increase, so ``objective_history_`` is non-increasing.
"""

import contextlib
import numbers
import os
import warnings

import numpy as np
import scipy.linalg
import scipy.optimize
from scipy.special import expit, logsumexp, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from . import _stump_kernels as K

# bin quantiles are computed on at most this many rows (as HistGradientBoosting does)
_BINNING_SUBSAMPLE = 200_000
_LEAF_NEWTON_ITER = 20
_LEAF_NEWTON_TOL = 1e-10
_JOINT_NEWTON_ITER = 50
# below this many cells (n_samples * n_features) the serial kernels are used: thread start-up
# costs more than it saves, by far on a loaded machine
_PARALLEL_MIN_CELLS = 500_000


# ---------------------------------------------------------------------------------------
# binning


def _bin_edges(X, max_bins, rng):
    """Candidate thresholds per feature: midpoints between distinct values or quantiles."""
    n_samples = X.shape[0]
    if n_samples > _BINNING_SUBSAMPLE:
        rows = np.sort(rng.choice(n_samples, _BINNING_SUBSAMPLE, replace=False))
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


def _bin_data(X, edges):
    """``xb[j, i]`` = number of edges of feature j below ``X[i, j]`` (x <= edge[k] iff xb <= k)."""
    xb = np.empty((X.shape[1], X.shape[0]), dtype=np.uint16)
    for j, e in enumerate(edges):
        xb[j] = np.searchsorted(e, X[:, j], side="left")
    return xb


@contextlib.contextmanager
def _numba_threads(n_jobs):
    """Run numba's parallel kernels on ``n_jobs`` threads (None: numba's default)."""
    if n_jobs is None:
        yield
        return
    import numba

    available = numba.config.NUMBA_NUM_THREADS
    n = n_jobs if n_jobs > 0 else (os.cpu_count() or 1) + 1 + n_jobs
    n = int(min(max(n, 1), available))
    previous = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


# ---------------------------------------------------------------------------------------
# losses: F has shape (n_samples, n_values); n_values = 1 except for softmax (K)


class _SquaredLoss:
    n_values = 1
    exact_stump_step = True

    def intercept(self, y, w):
        return np.array([np.dot(w, y) / w.sum()])

    def loss(self, y, F, w):
        r = y - F[:, 0]
        return 0.5 * float(np.dot(w, r * r))

    def grad_hess(self, y, F, w):
        return (w * (F[:, 0] - y))[:, None], None


class _LogisticLoss:
    n_values = 1
    exact_stump_step = False

    def intercept(self, y, w):
        p = np.clip(np.dot(w, y) / w.sum(), 1e-12, 1 - 1e-12)
        return np.array([np.log(p / (1 - p))])

    def loss(self, y, F, w):
        return float(K.logistic_loss(F, y, w))

    def loss_reference(self, y, F, w):
        f = F[:, 0]
        return float(np.dot(w, np.logaddexp(0.0, f) - y * f))

    def grad_hess(self, y, F, w):
        p = expit(F[:, 0])
        return (w * (p - y))[:, None], (w * p * (1 - p))[:, None]

    def leaf_grad_hess(self, y, F, w, a, l2_reg):
        p = expit(F[:, 0] + a[0])
        grad = np.array([np.dot(w, p - y) + l2_reg * a[0]])
        hess = np.array([[np.dot(w, p * (1 - p)) + l2_reg]])
        return grad, hess


class _SoftmaxLoss:
    exact_stump_step = False

    def __init__(self, n_classes):
        self.n_values = n_classes

    def intercept(self, y, w):
        p = np.bincount(y, weights=w, minlength=self.n_values) / w.sum()
        b = np.log(np.clip(p, 1e-12, None))
        return b - b.mean()

    def loss(self, y, F, w):
        return float(K.softmax_terms(F, y, w, 0)[0])

    def loss_reference(self, y, F, w):
        return float(np.dot(w, logsumexp(F, axis=1) - F[np.arange(F.shape[0]), y]))

    def grad_hess(self, y, F, w):
        _, G, H = K.softmax_terms(F, y, w, 2)
        return G, H

    def grad_hess_reference(self, y, F, w):
        P = softmax(F, axis=1)
        R = P.copy()
        R[np.arange(F.shape[0]), y] -= 1.0
        return w[:, None] * R, w[:, None] * P * (1 - P)

    def leaf_grad_hess(self, y, F, w, a, l2_reg):
        return K.softmax_leaf_grad_hess(F, y, w, np.ones(F.shape[0], dtype=np.bool_), a, l2_reg)


def _solve_psd(H, g):
    """Solve ``H x = g`` for symmetric PSD ``H``: Cholesky, or min-norm least squares."""
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, check_finite=True), g)
    except (np.linalg.LinAlgError, ValueError):
        return scipy.linalg.lstsq(H, g, cond=1e-12)[0]


# ---------------------------------------------------------------------------------------
# the alternating optimisation


class _StumpForestFit:
    """State of one fit: binned data, stumps, current ``F``; the two steps as methods."""

    def __init__(
        self, xb, n_edges, y, w, loss, *, n_stumps, l2_reg, min_samples_leaf, parallel
    ):
        self.xb, self.y, self.w, self.loss = xb, y, w, loss
        self.parallel = parallel
        self.n_edges = n_edges
        self.l2_reg = float(l2_reg)
        self.msl = int(min_samples_leaf)
        self.n_bins = int(n_edges.max()) + 1
        self.counts = np.zeros((xb.shape[0], self.n_bins), dtype=np.int64)
        for j in range(xb.shape[0]):
            self.counts[j] = np.bincount(xb[j], minlength=self.n_bins)[: self.n_bins]
        m = loss.n_values
        self.features = np.full(n_stumps, -1, dtype=np.int64)
        self.bins = np.full(n_stumps, -1, dtype=np.int64)
        self.leaves = np.zeros((n_stumps, 2, m))
        self.intercept = loss.intercept(y, w)
        self.F = np.tile(self.intercept, (xb.shape[1], 1))
        self.hist_h = None  # Hessian histogram; constant (the weights) for the squared loss
        if loss.exact_stump_step:
            self.hist_h = K.bin_histograms(xb, w[:, None], self.n_bins, parallel)

    # -- objective ----------------------------------------------------------------------
    def penalty(self, leaves=None):
        leaves = self.leaves if leaves is None else leaves
        return 0.5 * self.l2_reg * float(np.sum(leaves * leaves))

    def objective(self):
        return self.loss.loss(self.y, self.F, self.w) + self.penalty()

    def add_stump(self, F, feature, k, leaves, scale=1.0):
        K.add_stump(F, self.xb[feature], k, leaves[0], leaves[1], scale)

    # -- (A) stump step -----------------------------------------------------------------
    def solve_leaf(self, j, k, left, a):
        """Exact leaf value of a stump's left (or right) leaf, the others fixed."""
        if isinstance(self.loss, _LogisticLoss):
            value = K.logistic_leaf_newton(
                self.F, self.y, self.w, self.xb[j], k, left, float(a[0]), self.l2_reg,
                _LEAF_NEWTON_ITER, _LEAF_NEWTON_TOL,
            )
            return np.array([value])
        rows = self.xb[j] <= k
        return self.newton_leaf(rows if left else ~rows, a)

    def newton_leaf(self, rows, a):
        """Exact K-D convex leaf problem (softmax) by Newton with step halving."""
        loss, lam = self.loss, self.l2_reg
        y, F, w = self.y[rows], self.F[rows], self.w[rows]

        def phi(v):
            return loss.loss(y, F + v[None, :], w) + 0.5 * lam * float(v @ v)

        value = phi(a)
        for _ in range(_LEAF_NEWTON_ITER):
            grad, hess = loss.leaf_grad_hess(y, F, w, a, lam)
            step = -_solve_psd(hess, grad)
            t = 1.0
            while True:
                cand = a + t * step
                cand_value = phi(cand)
                if cand_value <= value:
                    break
                t *= 0.5
                if t < 1e-12:
                    return a
            a, value = cand, cand_value
            if np.max(np.abs(t * step)) <= _LEAF_NEWTON_TOL * max(1.0, np.max(np.abs(a))):
                break
        return a

    def stump_step(self, t):
        old_feature, old_k = self.features[t], self.bins[t]
        old_leaves = self.leaves[t].copy()
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
        if self.loss.exact_stump_step:  # squared loss: the closed form is the exact optimum
            self.add_stump(self.F, j, k, new_leaves)
        else:
            new_leaves[0] = self.solve_leaf(j, k, True, new_leaves[0])
            new_leaves[1] = self.solve_leaf(j, k, False, new_leaves[1])
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
        valid = []
        for j in range(self.xb.shape[0]):
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
        values = seg.A @ leaves.reshape(-1, leaves.shape[-1])
        return K.segment_predict(
            self.xb, seg.features, seg.lut, values, intercept, self.parallel
        )

    def leaf_step(self):
        """Refit intercept and all leaves with splits fixed; keep the old ones unless E drops."""
        e_old = self.objective()
        if not np.any(self.features >= 0):
            intercept, leaves = self.loss.intercept(self.y, self.w), self.leaves
            seg = None
            F = np.tile(intercept, (self.xb.shape[1], 1))
        else:
            seg = self.segments()
            with np.errstate(all="ignore"):
                if isinstance(self.loss, _SquaredLoss):
                    intercept, leaves = self._ridge(seg)
                elif isinstance(self.loss, _LogisticLoss):
                    intercept, leaves = self._newton(seg)
                else:
                    intercept, leaves = self._lbfgs(seg)
            if not (np.all(np.isfinite(intercept)) and np.all(np.isfinite(leaves))):
                warnings.warn(
                    "the leaf step produced non-finite leaves; the previous leaves are kept. "
                    "Increase l2_reg or min_samples_leaf.",
                    ConvergenceWarning,
                    stacklevel=4,
                )
                return e_old
            F = self.predict_from(seg, intercept, leaves)
        e_new = self.loss.loss(self.y, F, self.w) + self.penalty(leaves)
        if e_new <= e_old:
            self.intercept, self.leaves, self.F = intercept, leaves, F
            return e_new
        return e_old

    def _ridge(self, seg):
        y, w, lam = self.y, self.w, self.l2_reg
        sums = K.segment_sums(
            self.xb, seg.features, seg.lut, np.column_stack([w, w * y]), seg.A.shape[0],
            self.parallel,
        )
        M = K.segment_gram(
            self.xb, seg.features, seg.lut, seg.starts, seg.sizes, seg.pair_a, seg.pair_b, w,
            self.parallel,
        )
        sw, swy = float(w.sum()), float(np.dot(w, y))
        u = seg.A.T @ sums[:, 0]
        r = seg.A.T @ sums[:, 1]
        C = seg.A.T @ M @ seg.A - np.outer(u, u) / sw + lam * np.eye(u.shape[0])
        rhs = r - u * (swy / sw)
        if lam > 0:
            v = _solve_psd(C, rhs)
        else:
            v = scipy.linalg.lstsq(C, rhs, cond=1e-12)[0]
        b = (swy - u @ v) / sw
        return np.array([b]), v.reshape(-1, 2, 1)

    def _newton(self, seg):
        """Binary logistic leaf step: Newton on (b, leaves) with backtracking."""
        y, w, lam, loss = self.y, self.w, self.l2_reg, self.loss
        A = seg.A
        b, v = float(self.intercept[0]), self.leaves[:, :, 0].reshape(-1).copy()

        def energy(b, v):
            F = self.predict_from(seg, np.array([b]), v.reshape(-1, 2, 1))
            return loss.loss(y, F, w) + 0.5 * lam * float(v @ v), F

        value, F = energy(b, v)
        for _ in range(_JOINT_NEWTON_ITER):
            g, h = loss.grad_hess(y, F, w)
            sums = K.segment_sums(
                self.xb, seg.features, seg.lut, np.hstack([g, h]), A.shape[0], self.parallel
            )
            M = K.segment_gram(
                self.xb, seg.features, seg.lut, seg.starts, seg.sizes, seg.pair_a,
                seg.pair_b, h[:, 0], self.parallel,
            )
            grad = np.concatenate([[g.sum()], A.T @ sums[:, 0] + lam * v])
            hvb = A.T @ sums[:, 1]
            H = np.empty((v.shape[0] + 1, v.shape[0] + 1))
            H[0, 0] = h.sum()
            H[0, 1:] = H[1:, 0] = hvb
            H[1:, 1:] = A.T @ M @ A + lam * np.eye(v.shape[0])
            step = -_solve_psd(H, grad)
            slope = float(grad @ step)
            if not slope < 0:
                break
            t = 1.0
            while t > 1e-12:
                cand_value, cand_F = energy(b + t * step[0], v + t * step[1:])
                if cand_value <= value + 1e-4 * t * slope:
                    break
                t *= 0.5
            else:
                break
            b, v = b + t * step[0], v + t * step[1:]
            decrease = value - cand_value
            value, F = cand_value, cand_F
            if decrease <= 1e-12 * max(1.0, abs(value)) or -slope < 1e-16:
                break
        return np.array([b]), v.reshape(-1, 2, 1)

    def _lbfgs(self, seg):
        """Softmax leaf step: L-BFGS-B with the analytic gradient, from the current point."""
        y, w, lam = self.y, self.w, self.l2_reg
        A, n_classes = seg.A, self.loss.n_values

        def fun(theta):
            b, V = theta[:n_classes], theta[n_classes:].reshape(-1, n_classes)
            F = K.segment_predict(self.xb, seg.features, seg.lut, A @ V, b, self.parallel)
            value, g, _ = K.softmax_terms(F, y, w, 1)
            value += 0.5 * lam * float(np.sum(V * V))
            sums = K.segment_sums(self.xb, seg.features, seg.lut, g, A.shape[0], self.parallel)
            grad = np.concatenate([g.sum(0), (A.T @ sums + lam * V).ravel()])
            return value, grad

        theta0 = np.concatenate([self.intercept, self.leaves.reshape(-1)])
        res = scipy.optimize.minimize(
            fun, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 500, "ftol": 1e-12,
                                                               "gtol": 1e-8}
        )
        b = res.x[:n_classes] - res.x[:n_classes].mean()  # softmax is shift invariant
        return b, res.x[n_classes:].reshape(-1, 2, n_classes)


def _newton_value(g, h, l2_reg):
    denom = h + l2_reg
    return np.where(denom > 0, -g / np.where(denom > 0, denom, 1.0), 0.0)


class _Segments:
    def __init__(self, **kw):
        self.__dict__.update(kw)


# ---------------------------------------------------------------------------------------
# estimators


class _BaseStumpForestGAM(BaseEstimator):
    """Fitting, shape functions and plotting shared by the regressor and the classifier."""

    _parameter_constraints = {
        "n_stumps": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "l2_reg": [Interval(numbers.Real, 0, None, closed="left")],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_bins": [Interval(numbers.Integral, 2, 65536, closed="both")],
        "smoothness": [Interval(numbers.Real, 0, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "init": [StrOptions({"greedy", "random"})],
        "n_jobs": [
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Integral, None, -1, closed="right"),
            None,
        ],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        n_stumps=100,
        max_iter=20,
        l2_reg=10.0,
        min_samples_leaf=20,
        max_bins=255,
        smoothness=0.0,
        tol=1e-6,
        init="greedy",
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.n_stumps = n_stumps
        self.max_iter = max_iter
        self.l2_reg = l2_reg
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins
        self.smoothness = smoothness
        self.tol = tol
        self.init = init
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _fit_forest(self, X, y, sample_weight, loss):
        if self.smoothness != 0:
            raise NotImplementedError(
                "smoothness > 0 (the total-variation penalty of the spec's section 3.6) is "
                f"not implemented; use smoothness=0.0. Got {self.smoothness!r} instead."
            )
        if not np.isfinite(self.l2_reg):
            raise ValueError(f"l2_reg must be finite; got {self.l2_reg!r} instead.")
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not w.sum() > 0:
            raise ValueError("sample_weight sums to zero; at least one weight must be > 0.")
        rng = check_random_state(self.random_state)
        self.bin_edges_ = _bin_edges(X, self.max_bins, rng)
        xb = _bin_data(X, self.bin_edges_)
        n_edges = np.array([e.shape[0] for e in self.bin_edges_], dtype=np.int64)
        with _numba_threads(self.n_jobs), threadpool_limits(limits=1, user_api="blas"):
            state = _StumpForestFit(
                xb, n_edges, y, w, loss, n_stumps=self.n_stumps, l2_reg=self.l2_reg,
                min_samples_leaf=self.min_samples_leaf,
                parallel=self.n_jobs != 1 and X.size >= _PARALLEL_MIN_CELLS,
            )
            for t in range(self.n_stumps):
                if self.init == "greedy":
                    state.stump_step(t)
                else:
                    state.random_stump(t, rng)
            history = [state.objective()]
            if self.verbose:
                print(f"[{type(self).__name__}] init: objective {history[0]:.6g}")
            n_iter = 0
            for n_iter in range(1, self.max_iter + 1):
                for t in rng.permutation(self.n_stumps):
                    state.stump_step(t)
                history.append(state.leaf_step())
                if self.verbose:
                    used = int(np.sum(state.features >= 0))
                    print(
                        f"[{type(self).__name__}] iteration {n_iter}: objective "
                        f"{history[-1]:.6g}, {used} stumps used"
                    )
                if history[-2] - history[-1] <= self.tol * max(1.0, abs(history[-2])):
                    break
        self.objective_history_ = history
        self.n_iter_ = n_iter
        self.features_ = state.features.copy()
        self.thresholds_ = np.array(
            [
                self.bin_edges_[j][k] if j >= 0 else np.inf
                for j, k in zip(state.features, state.bins)
            ]
        )
        self._leaves = state.leaves
        self._intercept = state.intercept
        return self

    # -- shape functions ----------------------------------------------------------------
    def _shapes(self):
        """feature -> (sorted thresholds, piece values of shape (pieces, n_values))."""
        shapes = {}
        nonzero = np.any(self._leaves != 0, axis=(1, 2)) & (self.features_ >= 0)
        for j in np.unique(self.features_[nonzero]):
            stumps = np.flatnonzero(nonzero & (self.features_ == j))
            thresholds = np.unique(self.thresholds_[stumps])
            values = np.zeros((thresholds.shape[0] + 1, self._leaves.shape[2]))
            position = np.searchsorted(thresholds, self.thresholds_[stumps])
            for t, p in zip(stumps, position):
                values[: p + 1] += self._leaves[t, 0]
                values[p + 1 :] += self._leaves[t, 1]
            shapes[int(j)] = (thresholds, values)
        return shapes

    def shape_functions(self):
        """The fitted shape function of every feature that at least one stump uses.

        Returns
        -------
        shapes : dict of int to (ndarray, ndarray)
            ``shapes[j] = (thresholds, values)``: ``thresholds`` (sorted, shape (P-1,)) and
            ``values`` of shape (P,) (or (P, n_classes) for a multiclass classifier); piece
            ``p`` covers ``thresholds[p-1] < x_j <= thresholds[p]``. ``f_j(x_j)`` plus
            ``intercept_``, summed over features, is the model's raw prediction.
        """
        check_is_fitted(self)
        squeeze = self._leaves.shape[2] == 1
        return {
            j: (thr, vals[:, 0] if squeeze else vals) for j, (thr, vals) in self._shapes().items()
        }

    def _contributions(self, X):
        out = np.zeros((X.shape[0], X.shape[1], self._leaves.shape[2]))
        for j, (thresholds, values) in self._shapes().items():
            out[:, j] = values[np.searchsorted(thresholds, X[:, j], side="left")]
        return out

    def feature_contributions(self, X):
        """Per-feature terms ``f_j(x_j)`` of the additive model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        contributions : ndarray of shape (n_samples, n_features)
            ``intercept_ + contributions.sum(axis=1)`` is the raw prediction (the regression
            prediction or the decision function); unused features contribute 0. A
            multiclass classifier returns shape (n_samples, n_features, n_classes).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        out = self._contributions(X)
        return out[:, :, 0] if out.shape[2] == 1 else out

    def _raw_predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._intercept[None, :] + self._contributions(X).sum(axis=1)

    def plot_shape_functions(self, features=None, *, ncols=3, figsize=None):
        """Draw one step-function panel per used feature (matplotlib, imported lazily).

        Parameters
        ----------
        features : list of int, default=None
            Features to draw; by default every feature used by a stump, in index order.
        ncols : int, default=3
            Panels per row.
        figsize : tuple of float, default=None
            Figure size; by default 3.2 x 2.6 inches per panel.

        Returns
        -------
        fig : matplotlib.figure.Figure
            The figure; multiclass models draw one line per class.
        """
        from ..utils import optional_import

        plt = optional_import("matplotlib.pyplot")
        check_is_fitted(self)
        shapes = self._shapes()
        features = sorted(shapes) if features is None else [int(j) for j in features]
        for j in features:
            if not 0 <= j < self.n_features_in_:
                raise ValueError(
                    f"features must be indices in [0, {self.n_features_in_}); got {j!r} instead."
                )
        n_panels = max(len(features), 1)
        ncols = max(1, min(int(ncols), n_panels))
        nrows = -(-n_panels // ncols)
        if figsize is None:
            figsize = (3.2 * ncols, 2.6 * nrows)
        fig, axes = plt.subplots(nrows, ncols, figsize=figsize, squeeze=False)
        names = getattr(self, "feature_names_in_", None)
        classes = getattr(self, "classes_", None)
        for ax, j in zip(axes.ravel(), features):
            edges = self.bin_edges_[j]
            lo, hi = (edges[0], edges[-1]) if edges.size else (-1.0, 1.0)
            span = hi - lo if hi > lo else 1.0
            lo, hi = lo - 0.05 * span, hi + 0.05 * span
            thresholds, values = shapes.get(j, (np.empty(0), np.zeros((1, self._leaves.shape[2]))))
            xs = np.concatenate([[lo], thresholds, [hi]])
            for c in range(values.shape[1]):
                ys = np.concatenate([values[:, c], values[-1:, c]])
                label = None if values.shape[1] == 1 else str(classes[c])
                ax.step(xs, ys, where="post", label=label)
            ax.axhline(0.0, color="0.7", lw=0.8, zorder=0)
            ax.set_title(str(names[j]) if names is not None else f"x{j}")
            ax.set_xlim(lo, hi)
            if values.shape[1] > 1:
                ax.legend(fontsize="small")
        for ax in axes.ravel()[len(features) :]:
            ax.set_visible(False)
        fig.tight_layout()
        return fig


def _check_numeric_target(y):
    """Refuse string or other non-numeric regression targets instead of casting them."""
    if y is None:
        return  # validate_data says that y is required
    values = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    kind = values.dtype.kind
    if kind in "USa" or (kind == "O" and not all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) for v in np.ravel(values)
    )):
        raise ValueError(
            "y must be numeric for a regressor (strings are never cast to numbers); got dtype "
            f"{values.dtype} with values like {np.ravel(values)[:3].tolist()!r} instead."
        )


_PARAMS_DOC = """
    n_stumps : int, default=100
        Number of stumps T; the model has at most ``3 T + 1`` parameters (a threshold and
        two leaf values per stump, plus the intercept).
    max_iter : int, default=20
        Outer iterations (one stump step over all stumps, then one leaf step).
    l2_reg : float, default=10.0
        L2 penalty ``l2_reg / 2 * sum_t (a_t^2 + c_t^2)`` on the leaf values (the intercept
        is not penalised). 0 is allowed; larger values shrink the shape functions.
    min_samples_leaf : int, default=20
        Fewest training rows in each leaf of a stump. The count is unweighted even when
        ``sample_weight`` is given. A stump with no valid split stays a zero stump.
    max_bins : int, default=255
        Candidate thresholds are midpoints between consecutive distinct values, or, for
        features with more than ``max_bins`` distinct values, ``max_bins - 1`` quantiles
        (computed on at most 200,000 rows drawn with ``random_state``).
    smoothness : float, default=0.0
        Weight of a total-variation penalty on the shape functions (spec section 3.6). Not
        implemented: only 0.0 is accepted.
    tol : float, default=1e-6
        Stop when an iteration lowers the objective by at most ``tol * max(1, |E|)``.
    init : {"greedy", "random"}, default="greedy"
        ``"greedy"`` adds the stumps one at a time, each the best stump on the current
        residual; ``"random"`` draws a random feature and threshold per stump with zero
        leaves.
    n_jobs : int, default=None
        Threads of the numba kernels (parallel over features); None uses numba's default
        (all cores), -1 all cores. Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seeds the order in which stumps are visited, the random init and the rows used
        for binning.
    verbose : int, default=0
        Print the objective after each iteration when > 0.
"""

_ATTRIBUTES_DOC = """
    features_ : ndarray of shape (n_stumps,)
        Feature of each stump; -1 marks a zero stump (no valid split, leaves 0).
    thresholds_ : ndarray of shape (n_stumps,)
        Threshold of each stump: rows with ``x[features_[t]] <= thresholds_[t]`` take the
        left leaf; ``inf`` for a zero stump.
    bin_edges_ : list of ndarray
        Candidate thresholds of each feature.
    objective_history_ : list of float
        Objective ``E`` after the initialisation (element 0) and after each iteration;
        non-increasing.
    n_iter_ : int
        Iterations run.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
"""

_REFERENCES_DOC = """
    .. [1] M. Gabidolla and M. A. Carreira-Perpinan, "Generalized additive models via
       direct optimization of regularized decision stump forests", ICML 2025, PMLR 267,
       pp. 18047-18061.
"""


class StumpForestGAMRegressor(RegressorMixin, _BaseStumpForestGAM):
    __doc__ = f"""Additive regression model: a forest of stumps optimised jointly.

    ``F(x) = intercept_ + sum_t s_t(x)``, each stump ``s_t`` taking ``a_t`` when
    ``x[d_t] <= theta_t`` and ``c_t`` otherwise; grouping the stumps by feature gives one
    step shape function per feature. All stumps are fitted on one objective, the squared
    loss plus an L2 penalty on the leaves, by alternating an exact search for each stump
    (every feature, every bin threshold, by prefix sums) with a joint ridge refit of all
    leaves (Cholesky, unpenalised intercept).

    Parameters
    ----------{_PARAMS_DOC}
    Attributes
    ----------
    intercept_ : float
        The constant term.
    leaf_values_ : ndarray of shape (n_stumps, 2)
        Left and right value ``(a_t, c_t)`` of each stump.{_ATTRIBUTES_DOC}
    See Also
    --------
    StumpForestGAMClassifier : the same model for classification.
    sklearn.ensemble.GradientBoostingRegressor : with ``max_depth=1``, boosted stumps.

    Notes
    -----
    The objective is ``E = 1/2 sum_i w_i (y_i - F(x_i))^2 + l2_reg / 2 sum_t (a_t^2 +
    c_t^2)``. The stump step is exact; the leaf step solves the ridge problem exactly; both
    are accepted only when ``E`` does not increase.

    References
    ----------{_REFERENCES_DOC}
    Examples
    --------
    >>> from sklearn_icml.datasets import make_additive_regression
    >>> from sklearn_icml.gam import StumpForestGAMRegressor
    >>> X, y, f = make_additive_regression(1000, random_state=0)
    >>> model = StumpForestGAMRegressor(n_stumps=30, max_iter=5, l2_reg=1.0,
    ...                                 random_state=0).fit(X, y)
    >>> round(model.score(X, y), 2)
    0.9
    >>> sorted(model.shape_functions())[:4]
    [0, 1, 2, 3]
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the stump forest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (a DataFrame sets ``feature_names_in_``).
        y : array-like of shape (n_samples,)
            Numeric target.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights multiplying each row's loss.

        Returns
        -------
        self : object
            The fitted regressor.
        """
        _check_numeric_target(y)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        self._fit_forest(X, y, sample_weight, _SquaredLoss())
        self.intercept_ = float(self._intercept[0])
        self.leaf_values_ = self._leaves[:, :, 0].copy()
        return self

    def predict(self, X):
        """Predict ``intercept_ + sum_j f_j(x_j)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions.
        """
        return self._raw_predict(X)[:, 0]


class StumpForestGAMClassifier(ClassifierMixin, _BaseStumpForestGAM):
    __doc__ = f"""Additive classification model: a forest of stumps optimised jointly.

    Binary problems use the logistic loss on one score ``F(x) = intercept_ + sum_t
    s_t(x)``; K > 2 classes use the softmax cross-entropy with leaf values in ``R^K``.
    Stumps are chosen by exact enumeration of every feature and bin threshold with the
    second-order (Newton) gain, their two leaves solved exactly by Newton's method, and the
    new stump kept only if the objective drops; the leaf step refits all leaves and the
    intercept jointly (Newton for binary, L-BFGS for multiclass).

    Parameters
    ----------{_PARAMS_DOC}
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    intercept_ : float or ndarray of shape (n_classes,)
        The constant term (a float for binary problems, the log-odds of ``classes_[1]``).
    leaf_values_ : ndarray of shape (n_stumps, 2) or (n_stumps, 2, n_classes)
        Left and right value of each stump.{_ATTRIBUTES_DOC}
    See Also
    --------
    StumpForestGAMRegressor : the same model for regression.
    sklearn.ensemble.GradientBoostingClassifier : with ``max_depth=1``, boosted stumps.

    References
    ----------{_REFERENCES_DOC}
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn_icml.gam import StumpForestGAMClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = StumpForestGAMClassifier(n_stumps=20, max_iter=3, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> bool(clf.score(X, y) > 0.95)
    True
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the stump forest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (a DataFrame sets ``feature_names_in_``).
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights multiplying each row's loss.

        Returns
        -------
        self : object
            The fitted classifier.
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        n_classes = self.classes_.shape[0]
        if n_classes < 2:
            raise ValueError(
                f"y has only 1 class ({self.classes_[0]!r}); a classifier needs at least 2 "
                "classes."
            )
        y_index = encoder.transform(y)
        if n_classes == 2:
            self._fit_forest(X, y_index.astype(np.float64), sample_weight, _LogisticLoss())
            self.intercept_ = float(self._intercept[0])
            self.leaf_values_ = self._leaves[:, :, 0].copy()
        else:
            self._fit_forest(X, y_index, sample_weight, _SoftmaxLoss(n_classes))
            self.intercept_ = self._intercept.copy()
            self.leaf_values_ = self._leaves.copy()
        return self

    def decision_function(self, X):
        """Raw score: log-odds of ``classes_[1]`` (binary) or class logits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``intercept_ + sum_j f_j(x_j)``.
        """
        raw = self._raw_predict(X)
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Rows sum to 1; columns follow ``classes_``.
        """
        raw = self._raw_predict(X)
        if raw.shape[1] == 1:
            p = expit(raw[:, 0])
            return np.column_stack([1.0 - p, p])
        return softmax(raw, axis=1)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        raw = self._raw_predict(X)
        index = (raw[:, 0] > 0).astype(np.int64) if raw.shape[1] == 1 else raw.argmax(axis=1)
        return self.classes_[index]
