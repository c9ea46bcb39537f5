"""Draw-and-merge kernels of weighted multi-view sequential IB, in numba and in plain numpy.

All views are concatenated into one float64 matrix ``P`` of shape (n, D) whose rows are,
view by view, conditional distributions p_v(y|x_i); ``offsets`` (V + 1,) marks where each
view's columns start. Clusters are kept as per-cluster column sums ``S`` (K, D) of the rows
they hold and their sizes ``counts`` (K,).

Costs are returned in units of ``n * Delta``: the merge cost of sequential IB,
``Delta(i, t) = sum_v w_v (1 + n_t) / n JS_pi(p_v(.|x_i), p_v(.|t))``, times n. Being a
common factor, n changes no decision. The numba kernel uses the expansion

    (1 + n_t) JS_pi = sum p log p + sum S log S - n_t log n_t
                      - sum (p + S) log (p + S) + (1 + n_t) log (1 + n_t)

(with ``pi = (1/(1 + n_t), n_t/(1 + n_t))``, centroid ``q = S / n_t`` and
``m = (p + S) / (1 + n_t)``), so each (sample, cluster) pair costs one log per feature; the
numpy reference computes the Jensen-Shannon divergence from its definition instead, and the
tests check that the two agree.
"""

import numpy as np
from numba import njit
from scipy.special import xlogy

# A sample moves to another cluster only if that lowers its cost by more than this (in units
# of n * Delta, which are O(1)); smaller gains are rounding noise and would make a sweep
# shuttle a sample between two equally good clusters forever.
TIE_TOL = 1e-10


# --------------------------------------------------------------------------------------
# numba
# --------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _xlogx(x):
    if x > 0.0:
        return x * np.log(x)
    return 0.0


@njit(cache=True)
def _slogs(S, offsets, t, v):
    acc = 0.0
    for y in range(offsets[v], offsets[v + 1]):
        acc += _xlogx(S[t, y])
    return acc


@njit(cache=True)
def _cost(P, i, offsets, plogp, weights, S, counts, slogs, t):
    """n * Delta(i, t) for sample row ``i`` of ``P`` against cluster ``t``."""
    n_t = counts[t]
    size_term = _xlogx(n_t + 1.0) - _xlogx(float(n_t))
    total = 0.0
    for v in range(offsets.shape[0] - 1):
        w = weights[v]
        if w == 0.0:
            continue
        mix = 0.0
        for y in range(offsets[v], offsets[v + 1]):
            mix += _xlogx(P[i, y] + S[t, y])
        total += w * (plogp[i, v] + slogs[t, v] + size_term - mix)
    return total


@njit(cache=True)
def sib_sweeps(P, offsets, plogp, weights, labels, orders, n_clusters):
    """Draw-and-merge sweeps of weighted sIB, in place on ``labels``.

    Parameters
    ----------
    P : ndarray of shape (n, D)
        Concatenated per-view conditional distributions.
    offsets : int64 ndarray of shape (V + 1,)
        Start column of each view, then D.
    plogp : ndarray of shape (n, V)
        ``sum_y p log p`` of each sample in each view.
    weights : ndarray of shape (V,)
        View weights; views of weight 0 are skipped.
    labels : int64 ndarray of shape (n,)
        Start partition with every cluster non-empty; overwritten with the result.
    orders : int64 ndarray of shape (max_sweeps, n)
        The order in which each sweep visits the samples.
    n_clusters : int
        K.

    Returns
    -------
    n_sweeps : int
        Sweeps run (the last one moved nothing unless ``max_sweeps`` was reached).
    n_moves : int
        Samples moved in all sweeps together.
    """
    n, D = P.shape
    V = offsets.shape[0] - 1
    K = n_clusters
    S = np.zeros((K, D))
    counts = np.zeros(K, dtype=np.int64)
    for i in range(n):
        t = labels[i]
        counts[t] += 1
        for y in range(D):
            S[t, y] += P[i, y]
    slogs = np.zeros((K, V))
    for t in range(K):
        for v in range(V):
            if weights[v] != 0.0:
                slogs[t, v] = _slogs(S, offsets, t, v)

    n_sweeps = 0
    n_moves = 0
    for s in range(orders.shape[0]):
        n_sweeps += 1
        moved = 0
        for j in range(n):
            i = orders[s, j]
            c = labels[i]
            if counts[c] == 1:
                continue  # never empty a cluster
            for y in range(D):
                S[c, y] -= P[i, y]
            counts[c] -= 1
            for v in range(V):
                if weights[v] != 0.0:
                    slogs[c, v] = _slogs(S, offsets, c, v)
            best_t = c
            best = _cost(P, i, offsets, plogp, weights, S, counts, slogs, c)
            for t in range(K):
                if t == c:
                    continue
                cost = _cost(P, i, offsets, plogp, weights, S, counts, slogs, t)
                if cost < best - TIE_TOL:
                    best = cost
                    best_t = t
            for y in range(D):
                S[best_t, y] += P[i, y]
            counts[best_t] += 1
            for v in range(V):
                if weights[v] != 0.0:
                    slogs[best_t, v] = _slogs(S, offsets, best_t, v)
            if best_t != c:
                labels[i] = best_t
                moved += 1
        n_moves += moved
        if moved == 0:
            break
    return n_sweeps, n_moves


@njit(cache=True)
def merge_costs(P, offsets, plogp, weights, S, counts):
    """``n * Delta(i, t)`` of every row of ``P`` against every cluster, shape (m, K)."""
    m = P.shape[0]
    V = offsets.shape[0] - 1
    K = S.shape[0]
    slogs = np.zeros((K, V))
    for t in range(K):
        for v in range(V):
            if weights[v] != 0.0:
                slogs[t, v] = _slogs(S, offsets, t, v)
    out = np.empty((m, K))
    for i in range(m):
        for t in range(K):
            out[i, t] = _cost(P, i, offsets, plogp, weights, S, counts, slogs, t)
    return out


# --------------------------------------------------------------------------------------
# numpy reference (the prototype the numba kernel is checked against)
# --------------------------------------------------------------------------------------
def merge_costs_numpy(P, offsets, plogp, weights, S, counts):
    """Reference of :func:`merge_costs`: JS divergence from its definition.

    ``plogp`` is accepted for a common signature and not used.
    """
    P = np.atleast_2d(P)
    counts = np.asarray(counts, dtype=np.float64)
    pi1 = 1.0 / (1.0 + counts)  # (K,)
    pi2 = counts / (1.0 + counts)
    out = np.zeros((P.shape[0], S.shape[0]))
    for v in range(offsets.shape[0] - 1):
        if weights[v] == 0.0:
            continue
        cols = slice(offsets[v], offsets[v + 1])
        p = P[:, None, cols]  # (m, 1, d)
        q = (S[:, cols] / np.maximum(counts, 1.0)[:, None])[None]  # (1, K, d)
        mix = pi1[None, :, None] * p + pi2[None, :, None] * q
        kl_p = np.sum(xlogy(p, p) - xlogy(p, mix), axis=2)
        kl_q = np.sum(xlogy(q, q) - xlogy(q, mix), axis=2)
        js = pi1[None, :] * kl_p + pi2[None, :] * kl_q
        out += weights[v] * (1.0 + counts)[None, :] * js
    return out


def sib_sweeps_numpy(P, offsets, plogp, weights, labels, orders, n_clusters, trace=None):
    """Reference of :func:`sib_sweeps` in plain numpy (same rule, same tie breaking).

    If ``trace`` is a list, the callable objective is not known here, so the labels after
    every visited sample are appended to it (a copy each time); tests use it to check that
    the objective never decreases within a sweep.
    """
    K = n_clusters
    S = np.zeros((K, P.shape[1]))
    np.add.at(S, labels, P)
    counts = np.bincount(labels, minlength=K).astype(np.int64)
    n_sweeps = 0
    n_moves = 0
    for order in orders:
        n_sweeps += 1
        moved = 0
        for i in order:
            c = labels[i]
            if counts[c] == 1:
                continue
            S[c] -= P[i]
            counts[c] -= 1
            cost = merge_costs_numpy(P[i], offsets, plogp, weights, S, counts)[0]
            best_t = c
            for t in range(K):
                if t != c and cost[t] < cost[best_t] - TIE_TOL:
                    best_t = t
            S[best_t] += P[i]
            counts[best_t] += 1
            if best_t != c:
                labels[i] = best_t
                moved += 1
            if trace is not None:
                trace.append(labels.copy())
        n_moves += moved
        if moved == 0:
            break
    return n_sweeps, n_moves
