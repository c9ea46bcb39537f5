"""numba kernel: full-batch gradient descent on the tabular preference objective.

Long gradient-descent runs (10^5 steps to watch the logistic margins diverge) are
dominated by numpy's per-call overhead on arrays of a few dozen entries; this kernel runs
the whole loop compiled. Its plain-numpy reference is ``_Objective.value_and_grad`` in
``_tabular_policy.py`` (the tests compare the two trajectories).
"""

import math

import numpy as np

from ..utils._numba import njit_cached, stable_sigmoid

LOSS_CODES = {
    "logistic": 0,
    "squared": 1,
    "hinge": 2,
    "exponential": 3,
    "truncated_quadratic": 4,
    "savage": 5,
}


@njit_cached()
def _hard(code, h, c):
    """Hard-label loss g(h) and g'(h) (same formulas as ``_losses._np_hard``)."""
    if code == 0:
        t = -c * h
        g = max(t, 0.0) + math.log1p(math.exp(-abs(t)))
        return g, -c * stable_sigmoid(t)
    if code == 1:
        d = h - 1.0 / (2.0 * c)
        return d * d, 2.0 * d
    if code == 2:
        d = c - h
        if d > 0:
            return d, -1.0
        return 0.0, 0.0
    if code == 3:
        e = math.exp(-c * h)
        return e, -c * e
    if code == 4:
        d = max(1.0 - c * h, 0.0)
        return d * d, -2.0 * c * d
    s = stable_sigmoid(-c * h)
    return s * s, -2.0 * c * s * s * stable_sigmoid(c * h)


@njit_cached()
def gd_tabular(code, c, ia, ib, off, p, w, kl_coef, kl_w, log_ref, n_ctx, n_resp, x, lr,
               max_iter, tol):
    """Full-batch gradient descent on the tabular objective, in place on ``x``.

    Returns ``(curve, n_iter, converged, finite)``; ``finite`` is False if the objective
    or its gradient stopped being finite (``x`` is then the last finite iterate).
    """
    n = ia.shape[0]
    ck = n_ctx * n_resp
    curve = np.empty(max_iter)
    grad = np.empty(ck)
    lp = np.empty(ck)
    n_iter = 0
    converged = False
    for it in range(max_iter):
        f = 0.0
        for j in range(ck):
            grad[j] = 0.0
        for r in range(n):
            h = x[ia[r]] - x[ib[r]] - off[r]
            g1, d1 = _hard(code, h, c)
            g2, d2 = _hard(code, -h, c)
            q = 1.0 - p[r]
            f += w[r] * (p[r] * g1 + q * g2)
            G = w[r] * (p[r] * d1 - q * d2)
            grad[ia[r]] += G
            grad[ib[r]] -= G
        if kl_coef > 0:
            for ctx in range(n_ctx):
                base = ctx * n_resp
                top = x[base]
                for k in range(1, n_resp):
                    top = max(top, x[base + k])
                total = 0.0
                for k in range(n_resp):
                    total += math.exp(x[base + k] - top)
                lse = top + math.log(total)
                dsum = 0.0
                for k in range(n_resp):
                    lp[base + k] = x[base + k] - lse
                    if kl_w[base + k] > 0:
                        diff = lp[base + k] - log_ref[base + k]
                        f += kl_coef * kl_w[base + k] * diff * diff / 2.0
                        D = kl_coef * kl_w[base + k] * diff
                        grad[base + k] += D
                        dsum += D
                for k in range(n_resp):
                    grad[base + k] -= math.exp(lp[base + k]) * dsum
        gmax = 0.0
        finite = math.isfinite(f)
        for j in range(ck):
            a = abs(grad[j])
            if not math.isfinite(a):
                finite = False
            gmax = max(gmax, a)
        if not finite:
            return curve[:it], it, False, False
        curve[it] = f
        n_iter = it + 1
        if gmax <= tol:
            converged = True
            break
        for j in range(ck):
            x[j] -= lr * grad[j]
    return curve[:n_iter], n_iter, converged, True
