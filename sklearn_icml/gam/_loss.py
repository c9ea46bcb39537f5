"""The losses of the stump-forest GAM, each owning every step that depends on it.

A loss object gives the optimiser (:mod:`._optimizer`) everything it needs about one
objective ``E = sum_i w_i l(y_i, F(x_i)) + l2_reg / 2 * sum_t (a_t^2 + c_t^2)``, so the
optimiser never asks which loss it runs:

* ``intercept(y, w)``: the best constant raw score (the link of the weighted mean);
* ``loss(y, F, w)`` and ``grad_hess(y, F, w)``: the data term and its per-row derivatives
  (``hess`` is None when it is the constant ``w``);
* ``exact_stump_step``: True when the Newton leaf values of a stump are already its exact
  optimum (the squared loss), so the stump step needs no line search nor acceptance test;
* ``solve_leaf(problem, j, goes_left, left, a)``: the exact value of one leaf of a new stump,
  starting from its Newton value ``a``;
* ``fit_leaves(problem, seg)``: the leaf step, every leaf and the intercept refitted jointly
  with the splits fixed (ridge by Cholesky, Newton, or L-BFGS);
* ``inverse_link(raw)``: the prediction (mean or class probabilities) from raw scores.

``F`` has shape (n_samples, n_values); ``n_values`` is 1 except for the softmax loss (one
score per class). ``problem`` is the :class:`._optimizer.StumpForestProblem` being fitted.
"""

import numpy as np
import scipy.linalg
import scipy.optimize
from scipy.special import expit, logsumexp, softmax

from . import _stump_kernels as K

_LEAF_NEWTON_ITER = 20
_LEAF_NEWTON_TOL = 1e-10
_JOINT_NEWTON_ITER = 50


def solve_psd(H, g):
    """Solve ``H x = g`` for symmetric PSD ``H``: Cholesky, or min-norm least squares."""
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, check_finite=True), g)
    except (np.linalg.LinAlgError, ValueError):
        return scipy.linalg.lstsq(H, g, cond=1e-12)[0]


def solve_qp(H, g, D, x):
    """Step ``d`` minimising ``g @ d + d @ H @ d / 2`` subject to ``D @ (x + d) >= 0``.

    The convex QP of a monotone-constrained leaf step, solved by cvxpy (Clarabel). ``H`` is
    symmetric positive semi-definite.
    """
    import cvxpy as cp  # a core dependency, imported here because its import is slow

    d = cp.Variable(g.shape[0])
    H = 0.5 * (H + H.T)
    problem = cp.Problem(
        cp.Minimize(g @ d + 0.5 * cp.quad_form(d, cp.psd_wrap(H))), [D @ (x + d) >= 0]
    )
    try:
        problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError:
        problem.solve(solver=cp.SCS, eps=1e-10)
    if d.value is None:
        return np.zeros_like(g)
    return np.asarray(d.value, dtype=np.float64)


class _SquaredLoss:
    """``l(y, f) = (y - f)^2 / 2``: regression; every step has a closed form."""

    n_values = 1
    exact_stump_step = True

    def intercept(self, y, w):
        return np.array([np.dot(w, y) / w.sum()])

    def loss(self, y, F, w):
        r = y - F[:, 0]
        return 0.5 * float(np.dot(w, r * r))

    def grad_hess(self, y, F, w):
        return (w * (F[:, 0] - y))[:, None], None

    def solve_leaf(self, problem, j, goes_left, left, a):
        return a  # the Newton value is the exact minimiser of a quadratic

    def fit_leaves(self, problem, seg, D=None):
        """Ridge regression on the segment indicators, unpenalised intercept (Cholesky).

        With monotone constraints ``D @ leaves >= 0`` (``D`` not empty) the same quadratic
        is minimised under them by cvxpy.
        """
        y, w, lam = problem.y, problem.w, problem.l2_reg
        sums = K.segment_sums(
            problem.xb, seg.features, seg.lut, np.column_stack([w, w * y]), seg.A.shape[0],
            problem.parallel,
        )
        M = K.segment_gram(
            problem.xb, seg.features, seg.lut, seg.starts, seg.sizes, seg.pair_a, seg.pair_b,
            w, problem.parallel,
        )
        sw, swy = float(w.sum()), float(np.dot(w, y))
        u = seg.A.T @ sums[:, 0]
        r = seg.A.T @ sums[:, 1]
        C = seg.A.T @ M @ seg.A - np.outer(u, u) / sw + lam * np.eye(u.shape[0])
        rhs = r - u * (swy / sw)
        if D is not None and D.shape[0]:
            v = solve_qp(C, -rhs, D, np.zeros_like(rhs))
        elif lam > 0:
            v = solve_psd(C, rhs)
        else:
            v = scipy.linalg.lstsq(C, rhs, cond=1e-12)[0]
        b = (swy - u @ v) / sw
        return np.array([b]), v.reshape(-1, 2, 1)

    def inverse_link(self, raw):
        return raw[:, 0]


class _LogisticLoss:
    """``l(y, f) = log(1 + e^f) - y f`` for ``y`` in {0, 1}: binary classification."""

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

    def solve_leaf(self, problem, j, goes_left, left, a):
        """Exact 1-D leaf by safeguarded Newton (numba kernel)."""
        value = K.logistic_leaf_newton(
            problem.F, problem.y, problem.w, problem.xb[j], goes_left, left, float(a[0]),
            problem.l2_reg, _LEAF_NEWTON_ITER, _LEAF_NEWTON_TOL,
        )
        return np.array([value])

    def fit_leaves(self, problem, seg, D=None):
        """Newton on (intercept, leaves) with backtracking (Armijo) line search.

        With monotone constraints ``D @ leaves >= 0`` each Newton step is the constrained
        QP of the local quadratic model (cvxpy), from a feasible point, so every iterate
        on the line search stays feasible (sequential quadratic programming).
        """
        y, w, lam = problem.y, problem.w, problem.l2_reg
        A = seg.A
        b, v = float(problem.intercept[0]), problem.leaves[:, :, 0].reshape(-1).copy()

        def energy(b, v):
            F = problem.predict_from(seg, np.array([b]), v.reshape(-1, 2, 1))
            return self.loss(y, F, w) + 0.5 * lam * float(v @ v), F

        value, F = energy(b, v)
        for _ in range(_JOINT_NEWTON_ITER):
            g, h = self.grad_hess(y, F, w)
            sums = K.segment_sums(
                problem.xb, seg.features, seg.lut, np.hstack([g, h]), A.shape[0],
                problem.parallel,
            )
            M = K.segment_gram(
                problem.xb, seg.features, seg.lut, seg.starts, seg.sizes, seg.pair_a,
                seg.pair_b, h[:, 0], problem.parallel,
            )
            grad = np.concatenate([[g.sum()], A.T @ sums[:, 0] + lam * v])
            hvb = A.T @ sums[:, 1]
            H = np.empty((v.shape[0] + 1, v.shape[0] + 1))
            H[0, 0] = h.sum()
            H[0, 1:] = H[1:, 0] = hvb
            H[1:, 1:] = A.T @ M @ A + lam * np.eye(v.shape[0])
            if D is not None and D.shape[0]:
                D_full = np.hstack([np.zeros((D.shape[0], 1)), D])
                step = solve_qp(H, grad, D_full, np.concatenate([[b], v]))
            else:
                step = -solve_psd(H, grad)
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

    def inverse_link(self, raw):
        p = expit(raw[:, 0])
        return np.column_stack([1.0 - p, p])

    def predict_index(self, raw):
        return (raw[:, 0] > 0).astype(np.int64)


class _SoftmaxLoss:
    """Softmax cross-entropy over ``n_classes`` scores: multiclass classification."""

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

    def solve_leaf(self, problem, j, goes_left, left, a):
        """Exact K-D convex leaf problem by Newton with step halving."""
        rows = goes_left[problem.xb[j]]
        rows = rows if left else ~rows
        lam = problem.l2_reg
        y, F, w = problem.y[rows], problem.F[rows], problem.w[rows]

        def phi(v):
            return self.loss(y, F + v[None, :], w) + 0.5 * lam * float(v @ v)

        value = phi(a)
        for _ in range(_LEAF_NEWTON_ITER):
            grad, hess = self.leaf_grad_hess(y, F, w, a, lam)
            step = -solve_psd(hess, grad)
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

    def fit_leaves(self, problem, seg, D=None):
        """L-BFGS-B on (intercept, leaves) with the analytic gradient, from the current point."""
        y, w, lam = problem.y, problem.w, problem.l2_reg
        A, n_classes = seg.A, self.n_values

        def fun(theta):
            b, V = theta[:n_classes], theta[n_classes:].reshape(-1, n_classes)
            F = K.segment_predict(problem.xb, seg.features, seg.lut, A @ V, b, problem.parallel)
            value, g, _ = K.softmax_terms(F, y, w, 1)
            value += 0.5 * lam * float(np.sum(V * V))
            sums = K.segment_sums(
                problem.xb, seg.features, seg.lut, g, A.shape[0], problem.parallel
            )
            grad = np.concatenate([g.sum(0), (A.T @ sums + lam * V).ravel()])
            return value, grad

        theta0 = np.concatenate([problem.intercept, problem.leaves.reshape(-1)])
        res = scipy.optimize.minimize(
            fun, theta0, jac=True, method="L-BFGS-B",
            options={"maxiter": 500, "ftol": 1e-12, "gtol": 1e-8},
        )
        b = res.x[:n_classes] - res.x[:n_classes].mean()  # softmax is shift invariant
        return b, res.x[n_classes:].reshape(-1, 2, n_classes)

    def inverse_link(self, raw):
        return softmax(raw, axis=1)

    def predict_index(self, raw):
        return raw.argmax(axis=1)
