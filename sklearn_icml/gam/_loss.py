"""The losses of the stump-forest GAM, each owning every step that depends on it.

A loss object gives the optimiser (:mod:`._optimizer`) everything it needs about one
objective ``E = sum_i w_i l(y_i, F(x_i)) + l2_reg / 2 * sum_t (a_t^2 + c_t^2)``, so the
optimiser never asks which loss it runs:

* ``target_sums(y, w)`` and ``intercept_from_sums(sum_w, sums)``: the best constant raw
  score, the link of the weighted mean of the target, from sums over rows;
* ``loss(y, F, w)`` and ``grad_hess(y, F, w)``: the data term and its per-row derivatives
  (``hess`` is None when it is the constant ``w``);
* ``exact_stump_step``: True when the Newton leaf values of a stump are already its exact
  optimum (the squared loss), so the stump step needs no line search nor acceptance test;
* ``solve_leaves(rows, F, j, goes_left, a, l2_reg)``: the exact values of the two leaves of
  a new stump added to the scores ``F`` of rows in memory, starting from their Newton values
  ``a``; ``leaf_newton(oracle, a, l2_reg)`` is the same solve driven by
  ``oracle(points, active, terms)``, which returns the summed ``side_terms`` of the active
  leaves (a leaf drops out once solved), as the rows of a dask fit answer it;
* ``fit_leaves(problem, seg, start, D)``: the leaf step, every leaf and the intercept
  refitted jointly with the splits fixed (ridge by Cholesky, or Newton: ``joint_newton``), from
  ``start = (intercept, leaves)``; ``seg.A`` maps the leaves to the segment values and the
  penalty is ``l2_reg / 2`` times the sum of the squared leaves (the problem hands it the
  distinct splits only, see :meth:`._optimizer.StumpForestProblem.leaf_step`).

* ``inverse_link(raw)``: the prediction (mean or class probabilities) from raw scores.
* ``hessian_scale(intercept)``: the loss's Hessian per unit of sample weight at the best
  constant score (1 for the squared loss), the unit in which ``l2_reg`` is given: the
  objective's penalty is ``l2_reg * hessian_scale`` (see :class:`._optimizer.StumpForestProblem`).

Every pass over the rows of a leaf step is a sum over rows, asked of the problem as
``problem.row_sum(function, *args)`` with ``function(rows, *args)`` (``rows``: the binned
data, target and weights of some rows). In memory that is one call on all rows; on dask the
calls are summed over the partitions (:mod:`._row_source`), so the same code fits both.

``F`` has shape (n_samples, n_values); ``n_values`` is 1 except for the softmax loss (one
score per class). ``problem`` is the :class:`._optimizer.StumpForestProblem` being fitted.
"""

import numpy as np
import scipy.linalg
import scipy.optimize
from scipy.special import expit, logsumexp, softmax

from . import _stump_kernels as K
from ._rows import forest_scores, leaf_sides

_LEAF_NEWTON_ITER = 20
_LEAF_NEWTON_TOL = 1e-10
_JOINT_NEWTON_ITER = 50
_JOINT_NEWTON_EXACT = 1e-13  # relative size of a decrease the objective cannot resolve
_JOINT_NEWTON_MAX_SIZE = 2048  # unknowns of a multiclass Newton leaf step (Hessian 32 MiB)


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


def ridge_statistics(rows, seg):
    """Row sums of the ridge leaf step: per-segment ``sum w`` and ``sum w y``, and the
    segment Gram matrix ``B^T diag(w) B``."""
    sums = K.segment_sums(
        rows.xb, seg.features, seg.lut, np.column_stack([rows.w, rows.w * rows.y]),
        seg.n_segments, rows.parallel,
    )
    M = K.segment_gram(
        rows.xb, seg.features, seg.lut, seg.starts, seg.sizes, seg.pair_a, seg.pair_b,
        rows.w, rows.parallel,
    )
    return sums, M


def pair_ridge_statistics(seg, pairs, counts, weight, hist_wy):
    """:func:`ridge_statistics` without a pass over the rows, when every row has the same
    ``weight``: the segment sums from the bin counts and the ``w y`` histogram, and each
    block of the segment Gram matrix from the pair counts of its two features
    (:func:`._stump_kernels.pair_counts`), summed over the bins of each segment."""
    n_features, n_bins = counts.shape
    sums = np.zeros((seg.n_segments, 2))
    M = np.zeros((seg.n_segments, seg.n_segments))
    for q, j in enumerate(seg.features):
        np.add.at(sums[:, 0], seg.lut[q], weight * counts[j])
        np.add.at(sums[:, 1], seg.lut[q], hist_wy[j])
    M[np.diag_indices_from(M)] = sums[:, 0]  # a row is in one segment of each feature
    bins = np.arange(n_bins)
    for qa, qb in zip(seg.pair_a, seg.pair_b):
        if qa == qb:
            continue
        a0, na, b0, nb = seg.starts[qa], seg.sizes[qa], seg.starts[qb], seg.sizes[qb]
        table = pairs[K.pair_index(seg.features[qa], seg.features[qb], n_features)]
        rows = np.zeros((na, n_bins))
        np.add.at(rows, seg.lut[qa] - a0, table)  # (segment of a, bin of b)
        onehot = np.zeros((n_bins, nb))
        onehot[bins, seg.lut[qb] - b0] = 1.0
        block = weight * (rows @ onehot)
        M[a0:a0 + na, b0:b0 + nb] = block
        M[b0:b0 + nb, a0:a0 + na] = block.T
    return sums, M


def ridge_leaves(sums, M, A, sw, swy, l2_reg, D=None):
    """The ridge leaf step from its sufficient statistics (:func:`ridge_statistics`).

    Ridge regression of ``y`` on the segment indicators with an unpenalised intercept:
    ``sums[:, 0]``, ``sums[:, 1]`` are the per-segment ``sum w`` and ``sum w y``, ``M`` the
    segment Gram matrix, ``A`` the map from leaves to segments and ``sw``, ``swy`` the totals.
    The intercept is eliminated, leaving ``C v = rhs`` (Cholesky, or min-norm least squares
    when ``l2_reg = 0``); with monotone constraints ``D @ v >= 0`` the same quadratic is
    minimised under them. Returns ``(intercept, leaves)``.
    """
    u = A.T @ sums[:, 0]
    r = A.T @ sums[:, 1]
    C = A.T @ M @ A - np.outer(u, u) / sw + l2_reg * np.eye(u.shape[0])
    rhs = r - u * (swy / sw)
    if D is not None and D.shape[0]:
        v = solve_qp(C, -rhs, D, np.zeros_like(rhs))
    elif l2_reg > 0:
        v = solve_psd(C, rhs)
    else:
        v = scipy.linalg.lstsq(C, rhs, cond=1e-12)[0]
    b = (swy - u @ v) / sw
    return np.array([b]), v.reshape(-1, 2, 1)


class _Loss:
    """What every loss shares: one score per row unless it says otherwise, and the exact
    leaf solve on rows in memory."""

    n_values = 1

    def target_sums(self, y, w):
        """``sum_i w_i y_i``, from which (with ``sum_i w_i``) the intercept is found."""
        return np.array([np.dot(w, y)])

    def solve_leaves(self, rows, F, j, goes_left, a, l2_reg):
        """Exact values of both leaves of stump (``j``, ``goes_left``) added to the scores
        ``F`` of ``rows``, from Newton's ``a``."""
        sides = leaf_sides(rows, F, j, goes_left)
        return self.leaf_newton(lambda *request: self.side_terms(sides, *request), a, l2_reg)

    def joint_newton(self, problem, seg, start, D=None):
        """The leaf step of a convex loss by Newton on ``theta = (intercept, leaves)`` with
        backtracking (Armijo) line search, from ``start``.

        Each point is one row sum (``newton_terms``), whose derivatives give the next step's
        system (``newton_system``). With monotone constraints ``D @ leaves >= 0`` each Newton
        step is the constrained QP of the local quadratic model (cvxpy), from a feasible
        point, so every iterate on the line search stays feasible (sequential quadratic
        programming). The intercept of several scores is returned centred (the softmax is
        unchanged by a shift of all scores).
        """
        lam, A, n, rows_seg = problem.l2_reg, seg.A, self.n_values, seg.without_map()
        theta = np.concatenate([start[0], start[1].reshape(-1)]).astype(np.float64)

        def terms(theta):
            v = theta[n:]
            data, *derivatives = problem.row_sum(
                self.newton_terms, rows_seg, A @ v.reshape(-1, n), theta[:n]
            )
            return data + 0.5 * lam * float(v @ v), derivatives

        value, current = terms(theta)
        for _ in range(_JOINT_NEWTON_ITER):
            grad, H = self.newton_system(current, theta, A, lam)
            if D is not None and D.shape[0]:
                D_full = np.hstack([np.zeros((D.shape[0], n)), D])
                step = solve_qp(H, grad, D_full, theta)
            else:
                step = -solve_psd(H, grad)
            slope = float(grad @ step)
            if not slope < 0:
                break
            if -slope <= _JOINT_NEWTON_EXACT * max(1.0, abs(value)):
                # the step's predicted decrease (-slope / 2) is below what the objective, a
                # sum over rows, resolves: the quadratic model is exact to rounding here, so
                # the full step is taken unchecked (a line search would stop short on noise,
                # at a point that the order of the row sums moves)
                theta = theta + step
                break
            t = 1.0
            while t > 1e-12:
                cand_value, cand = terms(theta + t * step)
                if cand_value <= value + 1e-4 * t * slope:
                    break
                t *= 0.5
            else:
                break
            theta = theta + t * step
            decrease = value - cand_value
            value, current = cand_value, cand
            if decrease <= 1e-12 * max(1.0, abs(value)) or -slope < 1e-16:
                break
        b = theta[:n] - theta[:n].mean() if n > 1 else theta[:n]
        return b, theta[n:].reshape(-1, 2, n)


class _SquaredLoss(_Loss):
    """``l(y, f) = (y - f)^2 / 2``: regression; every step has a closed form."""

    exact_stump_step = True

    def intercept_from_sums(self, sw, sums):
        return np.array([sums[0] / sw])

    def loss(self, y, F, w):
        r = y - F[:, 0]
        return 0.5 * float(np.dot(w, r * r))

    def grad_hess(self, y, F, w):
        return (w * (F[:, 0] - y))[:, None], None

    def hessian_scale(self, intercept):
        return 1.0

    def fit_leaves(self, problem, seg, start, D=None):
        """Ridge regression on the segment indicators, unpenalised intercept (Cholesky).

        Its normal equations come from the pair counts when the stump step keeps them
        (constant weights), else from one pass over the rows. With monotone constraints
        ``D @ leaves >= 0`` (``D`` not empty) the same quadratic is minimised under them
        by cvxpy.
        """
        if problem.pairs is not None:  # constant weights: no pass over the rows
            sums, M = pair_ridge_statistics(
                seg, problem.pairs, problem.counts, problem.weight, problem.hist_wy
            )
        else:
            sums, M = problem.row_sum(ridge_statistics, seg.without_map())
        return ridge_leaves(sums, M, seg.A, problem.sw, problem.swy, problem.l2_reg, D)

    def inverse_link(self, raw):
        return raw[:, 0]


class _LogisticLoss(_Loss):
    """``l(y, f) = log(1 + e^f) - y f`` for ``y`` in {0, 1}: binary classification."""

    exact_stump_step = False

    def intercept_from_sums(self, sw, sums):
        p = np.clip(sums[0] / sw, 1e-12, 1 - 1e-12)
        return np.array([np.log(p / (1 - p))])

    def loss(self, y, F, w):
        return float(K.logistic_loss(F, y, w))

    def loss_reference(self, y, F, w):
        f = F[:, 0]
        return float(np.dot(w, np.logaddexp(0.0, f) - y * f))

    def grad_hess(self, y, F, w):
        p = expit(F[:, 0])
        return (w * (p - y))[:, None], (w * p * (1 - p))[:, None]

    def hessian_scale(self, intercept):
        """``p (1 - p)`` at the base rate ``p``."""
        p = float(expit(intercept[0]))
        return p * (1.0 - p)

    def side_terms(self, sides, points, active, terms="all"):
        """Data term ("value"), its gradient and Hessian ("derivatives") or both ("all") of
        each active leaf at ``F + points[side]``, no penalty; ``sides``: the ``(y, F, w)``
        of each leaf's rows."""
        values, grads, hess = np.zeros(2), np.zeros((2, 1)), np.zeros((2, 1, 1))
        for side in np.flatnonzero(active):
            y, F, w = sides[side]
            f = F[:, 0] + points[side, 0]
            if terms != "derivatives":
                values[side] = self.loss(y, f[:, None], w)
            if terms != "value":
                p = expit(f)
                grads[side, 0] = np.dot(w, p - y)
                hess[side, 0, 0] = np.dot(w, p * (1 - p))
        return values, grads, hess

    def solve_leaves(self, rows, F, j, goes_left, a, l2_reg):
        """Each leaf by the numba safeguarded Newton on the rows in memory."""
        return np.array([
            [K.logistic_leaf_newton(
                F, rows.y, rows.w, rows.xb[j], goes_left, left, float(a[s, 0]),
                l2_reg, _LEAF_NEWTON_ITER, _LEAF_NEWTON_TOL,
            )]
            for s, left in enumerate((True, False))
        ])

    def leaf_newton(self, oracle, a, l2_reg):
        """:func:`._stump_kernels.logistic_leaf_newton` on both leaves at once, driven by
        ``oracle(points, active, terms) -> (values, grads, hess)`` (the summed
        :meth:`side_terms`).

        Newton's method from ``a``, safeguarded by the bracket that the sign of the
        (increasing) derivative gives: a step leaving the bracket is replaced by bisection.
        The iterates are the kernel's, up to the order in which the sums are added.
        """
        a = np.array(a, dtype=np.float64).reshape(2)
        lo, hi = np.full(2, -np.inf), np.full(2, np.inf)
        active = np.ones(2, dtype=bool)
        for _ in range(_LEAF_NEWTON_ITER):
            if not active.any():
                break
            _, grads, hess = oracle(a.reshape(2, 1), active, "derivatives")
            for s in np.flatnonzero(active):
                grad = l2_reg * a[s] + grads[s, 0]
                h = l2_reg + hess[s, 0, 0]
                if grad == 0.0:
                    active[s] = False
                    continue
                if grad > 0.0:
                    hi[s] = min(hi[s], a[s])
                else:
                    lo[s] = max(lo[s], a[s])
                cand = a[s] - grad / h if h > 0.0 else np.nan
                if not lo[s] < cand < hi[s]:
                    if not (np.isfinite(lo[s]) and np.isfinite(hi[s])):
                        active[s] = False
                        continue
                    cand = 0.5 * (lo[s] + hi[s])
                active[s] = abs(cand - a[s]) > _LEAF_NEWTON_TOL * max(1.0, abs(a[s]))
                a[s] = cand
        return a.reshape(2, 1)

    def newton_terms(self, rows, seg, values, intercept):
        """Row sums of one Newton step of the leaf step at the forest (``values``,
        ``intercept``): the data term, the gradient and Hessian totals, per-segment sums of
        both and the Hessian-weighted segment Gram matrix."""
        F = forest_scores(rows, seg, values, intercept)
        g, h = self.grad_hess(rows.y, F, rows.w)
        sums = K.segment_sums(
            rows.xb, seg.features, seg.lut, np.hstack([g, h]), seg.n_segments, rows.parallel
        )
        M = K.segment_gram(
            rows.xb, seg.features, seg.lut, seg.starts, seg.sizes, seg.pair_a, seg.pair_b,
            h[:, 0], rows.parallel,
        )
        return self.loss(rows.y, F, rows.w), float(g.sum()), float(h.sum()), sums, M

    def newton_system(self, current, theta, A, lam):
        """Gradient and Hessian of the leaf step in ``theta = (intercept, leaves)`` from the
        row sums of :meth:`newton_terms` at ``theta``."""
        g_total, h_total, sums, M = current
        v = theta[1:]
        grad = np.concatenate([[g_total], A.T @ sums[:, 0] + lam * v])
        hvb = A.T @ sums[:, 1]
        H = np.empty((v.shape[0] + 1, v.shape[0] + 1))
        H[0, 0] = h_total
        H[0, 1:] = H[1:, 0] = hvb
        H[1:, 1:] = A.T @ M @ A + lam * np.eye(v.shape[0])
        return grad, H

    def fit_leaves(self, problem, seg, start, D=None):
        """Newton on (intercept, leaves): :meth:`_Loss.joint_newton`."""
        return self.joint_newton(problem, seg, start, D)

    def inverse_link(self, raw):
        p = expit(raw[:, 0])
        return np.column_stack([1.0 - p, p])

    def predict_index(self, raw):
        return (raw[:, 0] > 0).astype(np.int64)


class _SoftmaxLoss(_Loss):
    """Softmax cross-entropy over ``n_classes`` scores: multiclass classification."""

    exact_stump_step = False

    def __init__(self, n_classes):
        self.n_values = n_classes

    def target_sums(self, y, w):
        return np.bincount(y, weights=w, minlength=self.n_values)

    def intercept_from_sums(self, sw, sums):
        b = np.log(np.clip(sums / sw, 1e-12, None))
        return b - b.mean()

    def loss(self, y, F, w):
        return float(K.softmax_terms(F, y, w, 0)[0])

    def loss_reference(self, y, F, w):
        return float(np.dot(w, logsumexp(F, axis=1) - F[np.arange(F.shape[0]), y]))

    def grad_hess(self, y, F, w):
        _, G, H = K.softmax_terms(F, y, w, 2)
        return G, H

    def hessian_scale(self, intercept):
        """The mean over classes of ``p_k (1 - p_k)`` at the class frequencies ``p``."""
        p = softmax(intercept)
        return float(np.mean(p * (1.0 - p)))

    def grad_hess_reference(self, y, F, w):
        P = softmax(F, axis=1)
        R = P.copy()
        R[np.arange(F.shape[0]), y] -= 1.0
        return w[:, None] * R, w[:, None] * P * (1 - P)

    def side_terms(self, sides, points, active, terms="all"):
        """Data term ("value"), its gradient and full Hessian ("derivatives") or both
        ("all") of each active leaf at ``F + points[side]``, no penalty; ``sides``: the
        ``(y, F, w)`` of each leaf's rows."""
        n = self.n_values
        values, grads, hess = np.zeros(2), np.zeros((2, n)), np.zeros((2, n, n))
        for side in np.flatnonzero(active):
            y, F, w = sides[side]
            a = np.ascontiguousarray(points[side], dtype=np.float64)
            if terms == "value":
                values[side] = self.loss(y, F + a[None, :], w)
            else:  # the value comes with the derivatives, in the same pass
                values[side], grads[side], hess[side] = K.softmax_leaf_terms(
                    F, y, w, np.ones(y.shape[0], dtype=np.bool_), a, 0.0
                )
        return values, grads, hess

    def leaf_newton(self, oracle, a, l2_reg):
        """Both leaves' convex K-D problems by Newton with step halving, in step.

        ``oracle(points, active, terms) -> (values, grads, hess)`` gives the summed
        :meth:`side_terms` of the active leaves. Each leaf minimises
        ``phi(a) = data(a) + l2_reg / 2 |a|^2``: a Newton step is halved until ``phi`` does
        not increase (a leaf stops when the step falls below 1e-12 of it), for at most
        ``_LEAF_NEWTON_ITER`` steps or until a step is below ``_LEAF_NEWTON_TOL`` relative
        to the leaf. A step whose predicted decrease is below what ``phi``, a sum over
        rows, resolves (``_JOINT_NEWTON_EXACT`` of its value) is taken whole and ends the
        leaf: the quadratic model is exact to rounding there, and halving it on the noise
        of ``phi`` would only stop short of the optimum. Every point is asked for its value
        and derivatives at once: an accepted point's derivatives give the next step
        without another pass over the rows.
        """
        a = np.array(a, dtype=np.float64)
        eye = np.eye(self.n_values)
        step, t = np.zeros_like(a), np.ones(2)
        active = np.ones(2, dtype=bool)
        n_steps = np.zeros(2, dtype=np.int64)

        def newton_step(s, grad, hess):
            # the step from a[s]; False when it is taken whole as the last one
            grad = grad + l2_reg * a[s]
            step[s] = -solve_psd(hess + l2_reg * eye, grad)
            t[s] = 1.0
            if -float(grad @ step[s]) <= _JOINT_NEWTON_EXACT * max(1.0, abs(phi[s])):
                a[s] += step[s]
                return False
            return True

        values, grads, hess = oracle(a, active, "all")
        phi = values + 0.5 * l2_reg * np.sum(a * a, axis=1)
        for s in range(2):
            active[s] = newton_step(s, grads[s], hess[s])
        cand = a + step
        while active.any():
            values, grads, hess = oracle(cand, active, "all")
            for s in np.flatnonzero(active):
                phi_cand = values[s] + 0.5 * l2_reg * float(cand[s] @ cand[s])
                if phi_cand <= phi[s]:
                    a[s], phi[s] = cand[s], phi_cand
                    n_steps[s] += 1
                    small = np.max(np.abs(t[s] * step[s])) <= _LEAF_NEWTON_TOL * max(
                        1.0, np.max(np.abs(a[s]))
                    )
                    active[s] = not (small or n_steps[s] >= _LEAF_NEWTON_ITER)
                    if active[s]:
                        active[s] = newton_step(s, grads[s], hess[s])
                else:
                    t[s] *= 0.5
                    active[s] = t[s] >= 1e-12
                cand[s] = a[s] + t[s] * step[s]
        return a

    def newton_terms(self, rows, seg, values, intercept):
        """Row sums of one Newton step of the leaf step at the forest (``values``,
        ``intercept``): the data term, the gradient total, and per segment the gradient
        sums, the Hessian sums and the Hessian-weighted Gram matrices, one per entry
        ``(k, m)``, ``k <= m``, of the rows' class Hessians ``w (diag(p) - p p^T)``."""
        F = forest_scores(rows, seg, values, intercept)
        value, G, _ = K.softmax_terms(F, rows.y, rows.w, 1)
        P = softmax(F, axis=1)
        k, m = np.triu_indices(self.n_values)
        Hkm = rows.w[:, None] * P[:, k] * ((k == m)[None, :] - P[:, m])
        sums = K.segment_sums(
            rows.xb, seg.features, seg.lut, np.hstack([G, Hkm]), seg.n_segments, rows.parallel
        )
        grams = np.stack([
            K.segment_gram(rows.xb, seg.features, seg.lut, seg.starts, seg.sizes, seg.pair_a,
                           seg.pair_b, Hkm[:, q], rows.parallel)
            for q in range(k.shape[0])
        ])
        return value, G.sum(0), Hkm.sum(0), sums, grams

    def newton_system(self, current, theta, A, lam):
        """Gradient and Hessian of the leaf step in ``theta = (intercept, leaves)``
        (leaf-major, class-minor) from the row sums of :meth:`newton_terms` at ``theta``.

        A shift of every intercept alike changes nothing: the Hessian is singular along it
        (and the gradient is zero there). The Hessian's intercept block gets its mean
        diagonal entry divided by ``n_classes`` times the all-ones matrix, which makes it
        positive definite along the shift and leaves the Newton step unchanged (its
        component along the shift stays zero).
        """
        g_total, h_packed, sums, grams = current
        n = self.n_values
        n_leaves = A.shape[1]
        k, m = np.triu_indices(n)
        seg_g = sums[:, :n]
        V = theta[n:].reshape(n_leaves, n)
        grad = np.concatenate([g_total, (A.T @ seg_g + lam * V).ravel()])
        h_total = np.empty((n, n))
        h_total[k, m] = h_total[m, k] = h_packed
        seg_h = np.empty((sums.shape[0], n, n))
        seg_h[:, k, m] = seg_h[:, m, k] = sums[:, n:]
        size = n + n_leaves * n
        H = np.empty((size, size))
        H[:n, :n] = h_total + np.trace(h_total) / n**2
        H_bv = (A.T @ seg_h.reshape(-1, n * n)).reshape(n_leaves, n, n)  # (leaf, k, m)
        H[:n, n:] = H_bv.transpose(1, 0, 2).reshape(n, size - n)
        H[n:, :n] = H[:n, n:].T
        H_vv = np.empty((n_leaves, n, n_leaves, n))
        for q, (kq, mq) in enumerate(zip(k, m)):
            block = A.T @ grams[q] @ A
            H_vv[:, kq, :, mq] = block
            H_vv[:, mq, :, kq] = block.T
        H[n:, n:] = H_vv.reshape(size - n, size - n) + lam * np.eye(size - n)
        return grad, H

    def value_gradient_terms(self, rows, seg, values, intercept):
        """Row sums of the leaf step's objective at the forest (``values``, ``intercept``):
        the data term, the gradient total and the per-segment gradient sums."""
        F = forest_scores(rows, seg, values, intercept)
        value, g, _ = K.softmax_terms(F, rows.y, rows.w, 1)
        sums = K.segment_sums(rows.xb, seg.features, seg.lut, g, seg.n_segments, rows.parallel)
        return value, g.sum(0), sums

    def fit_leaves(self, problem, seg, start, D=None):
        """Newton on (intercept, leaves) (:meth:`_Loss.joint_newton`) while its system has at
        most ``_JOINT_NEWTON_MAX_SIZE`` unknowns; beyond, L-BFGS-B with the analytic
        gradient, from ``start``: its memory grows with the number of unknowns, not their
        square, but it stops where the objective is flat to about 1e-12 of its value, a
        point that the order of the row sums moves (a dask fit then differs from the same
        rows in memory by more than rounding)."""
        n_classes = self.n_values
        if n_classes * (1 + start[1].shape[0] * 2) <= _JOINT_NEWTON_MAX_SIZE:
            return self.joint_newton(problem, seg, start, D)
        lam, A, rows_seg = problem.l2_reg, seg.A, seg.without_map()

        def fun(theta):
            b, V = theta[:n_classes], theta[n_classes:].reshape(-1, n_classes)
            value, g_total, sums = problem.row_sum(self.value_gradient_terms, rows_seg, A @ V, b)
            value += 0.5 * lam * float(np.sum(V * V))
            grad = np.concatenate([g_total, (A.T @ sums + lam * V).ravel()])
            return value, grad

        theta0 = np.concatenate([start[0], start[1].reshape(-1)])
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
