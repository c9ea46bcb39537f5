"""Draw-and-merge kernels of weighted multi-view sequential IB, in numba and in plain numpy.

All views are concatenated column-wise into one sparse (CSR) float64 matrix ``P`` of shape
(n, D) whose rows are, view by view, conditional distributions p_v(y|x_i): ``data``,
``indices`` and ``indptr`` are its CSR arrays and ``col_view`` (D,) gives the view of each
column. Dense views (``relevance="features"``) are CSR matrices with every entry stored;
neighbourhood views (``relevance="neighbors"``) store only each sample's neighbours.
Clusters are kept as per-cluster column sums ``S`` (K, D) of the rows they hold and their
sizes ``counts`` (K,).

Costs are returned in units of ``n * Delta``: the merge cost of sequential IB,
``Delta(i, t) = sum_v w_v (1 + n_t) / n JS_pi(p_v(.|x_i), p_v(.|t))``, times n. Being a
common factor, n changes no decision. The numba kernel uses the expansion, view by view,

    (1 + n_t) JS_pi = sum_y [p log p + S log S - (p + S) log (p + S)]
                      - n_t log n_t + (1 + n_t) log (1 + n_t)

(with ``pi = (1/(1 + n_t), n_t/(1 + n_t))``, centroid ``q = S / n_t`` and
``m = (p + S) / (1 + n_t)``). A column where ``p_y = 0`` adds ``S log S - S log S = 0``, so
only the stored entries of row i are visited. Summed over the stored entries, the
``p log p`` terms are the row's constant ``sum_v w_v sum_y p log p``, so the cost is

    sum_v w_v [ sum_{y: S_ty > 0} (p log p + S log S - (p + S) log (p + S))
                - n_t log n_t + (1 + n_t) log (1 + n_t) ]

where an entry whose column the cluster holds no mass in (``S_ty = 0``) adds exactly 0 and
is skipped without a log: on neighbourhood views (``relevance="neighbors"``) a sample's
neighbours lie in few clusters, so most (entry, cluster) pairs are skipped. Views of
weight 0 are skipped whole (each row's entries are sorted by column, so a view's entries
are one contiguous run). ``S log S`` is cached per cluster and column and updated on each
move, ``p log p`` per stored entry once per call. The numba kernel stores the sums column-major
(D, K), so that one column's sums over all clusters share a cache line.

Two things keep the logarithms few without changing a decision. The sample's own cluster is
scored without taking the row out of its sums (``p + s' = S``, whose ``S log S`` is cached),
and its sums change only if the sample moves. Every other cluster first gets a lower bound of
its cost, with one logarithm per view (:func:`_lower_bounds`); a cluster whose bound shows
that it cannot beat the best cost so far by ``TIE_TOL`` is skipped. On neighbourhood views
that is nearly every other cluster. The bounds come first, and the own cluster's exact cost
only if some bound comes below an upper bound of it that takes no logarithm
(:func:`_own_upper_bound`): a sample that no other cluster can take stays without one. The
numpy reference computes the
Jensen-Shannon divergence from its definition on the dense matrix instead, and the tests
check that the two agree.
"""

import numpy as np
from numba import prange
from scipy.special import xlogy

from ..utils._numba import njit_cached

# A sample moves to another cluster only if that lowers its cost by more than this (in units
# of n * Delta, which are O(1)); smaller gains are rounding noise and would make a sweep
# shuttle a sample between two equally good clusters forever.
TIE_TOL = 1e-10


# --------------------------------------------------------------------------------------
# numba
# --------------------------------------------------------------------------------------
@njit_cached(inline="always")
def _xlogx(x):
    if x > 0.0:
        return x * np.log(x)
    return 0.0


@njit_cached()
def _row_view_starts(indices, indptr, col_view, n_views):
    """Start of each view's run of entries in each row, shape (n, V + 1).

    Rows hold their entries sorted by column and the views are contiguous column blocks.
    """
    n = indptr.shape[0] - 1
    starts = np.empty((n, n_views + 1), dtype=np.int64)
    for i in range(n):
        e = indptr[i]
        for v in range(n_views):
            while e < indptr[i + 1] and col_view[indices[e]] < v:
                e += 1
            starts[i, v] = e
        starts[i, n_views] = indptr[i + 1]
    return starts


@njit_cached()
def _entry_logs(data):
    """``log p`` and ``p log p`` of every stored entry (``p > 0``; 0 and 0 otherwise)."""
    logp = np.zeros_like(data)
    elogp = np.zeros_like(data)
    for e in range(data.shape[0]):
        if data[e] > 0.0:
            logp[e] = np.log(data[e])
            elogp[e] = data[e] * logp[e]
    return logp, elogp


@njit_cached()
def _entry_xlogx(data):
    out = np.empty_like(data)
    for e in range(data.shape[0]):
        out[e] = _xlogx(data[e])
    return out


@njit_cached()
def _cost(data, indices, starts, elogp, i, weights, ST, SlogS, counts, t):
    """n * Delta(i, t) for row ``i`` against cluster ``t`` (see the module docstring).

    ``ST`` and ``SlogS`` are (D, K): a column's sums over all clusters lie side by side.
    """
    n_t = counts[t]
    size_term = _xlogx(n_t + 1.0) - _xlogx(float(n_t))
    total = 0.0
    for v in range(weights.shape[0]):
        w = weights[v]
        if w == 0.0:
            continue
        part = size_term
        for e in range(starts[i, v], starts[i, v + 1]):
            s = ST[indices[e], t]
            if s > 0.0:
                part += elogp[e] + SlogS[indices[e], t] - _xlogx(data[e] + s)
        total += w * part
    return total


@njit_cached()
def _own_cost(data, indices, starts, elogp, i, weights, ST, SlogS, counts, c, rest, rest_log):
    """n * Delta(i, c) for row ``i`` against its own cluster c with the row taken out.

    The cluster's sums are left as they are: with ``s' = max(S - p, 0)`` the sums without
    the row, an entry adds ``p log p + s' log s' - S log S`` (``p + s' = S``), and ``S log
    S`` is cached, so an entry costs one logarithm. ``rest`` and ``rest_log`` receive
    ``s'`` and ``s' log s'`` of every entry of the row (all views), for when the row moves.
    """
    n_c = counts[c] - 1
    size_term = _xlogx(n_c + 1.0) - _xlogx(float(n_c))
    first = starts[i, 0]
    total = 0.0
    for v in range(weights.shape[0]):
        w = weights[v]
        if w == 0.0:
            continue  # its entries of rest are filled only if the row moves
        part = size_term
        for e in range(starts[i, v], starts[i, v + 1]):
            r = max(ST[indices[e], c] - data[e], 0.0)
            rest[e - first] = r
            if r > 0.0:
                rest_log[e - first] = _xlogx(r)
                part += elogp[e] + rest_log[e - first] - SlogS[indices[e], c]
            else:
                rest_log[e - first] = 0.0
        total += w * part
    return total


@njit_cached()
def _own_upper_bound(data, indices, starts, logp, i, weights, ST, SlogS, counts, c):
    """An upper bound of :func:`_own_cost`, without a logarithm.

    With ``s' = S - p`` the sums of cluster c without the row, an entry adds ``-g(p, s')``,
    ``g(p, s') = p log(S/p) + s' log(1 + p/s')``. ``log S = (S log S) / S`` is cached,
    ``log p`` is computed once per call, and ``s' log(1 + p/s')`` is at least both
    ``p s'/S`` (``log(1 + x) >= x / (1 + x)``) and ``p - p^2 / (2 s')``
    (``log(1 + x) >= x - x^2/2``). An entry with ``s' <= 0`` adds 0, as in the exact cost.
    """
    n_c = counts[c] - 1
    size_term = _xlogx(n_c + 1.0) - _xlogx(float(n_c))
    total = 0.0
    for v in range(weights.shape[0]):
        w = weights[v]
        if w == 0.0:
            continue
        part = size_term
        for e in range(starts[i, v], starts[i, v + 1]):
            y = indices[e]
            S = ST[y, c]
            p = data[e]
            r = S - p
            if r > 0.0:
                lin = max(p * r / S, p - p * p / (2.0 * r))
                part -= p * (SlogS[y, c] / S - logp[e]) + lin
        total += w * part
    return total


@njit_cached()
def _lower_bounds(data, indices, starts, i, weights, ST, counts, mass, overlap, out):
    """A lower bound of ``n * Delta(i, t)`` for every cluster t, with V * K logarithms.

    Per view, an entry's term is ``f(p, s) = -p log(1 + s/p) - s log(1 + p/s)``, with
    ``s log(1 + p/s) <= p`` and, by Jensen's inequality (log(1 + x) is concave),
    ``sum_e p_e log(1 + s_e/p_e) <= P log(1 + S/P)`` where P and S sum p and s over the
    entries whose cluster sum is positive. So the view's part of the cost is at least
    ``size_term - P log(1 + S/P) - P``. On neighbourhood views a sample's neighbours lie
    in few clusters, so the bound of every other cluster is close to its size term and
    above the cost of the sample's own cluster: those clusters need no exact cost.
    """
    K = ST.shape[1]
    V = weights.shape[0]
    for v in range(V):
        for t in range(K):
            mass[v, t] = 0.0
            overlap[v, t] = 0.0
        if weights[v] == 0.0:
            continue
        for e in range(starts[i, v], starts[i, v + 1]):
            y = indices[e]
            p = data[e]
            if p <= 0.0:
                continue
            for t in range(K):
                # without a branch, so that the loop over clusters vectorises: s >= 0, and
                # adding 0.0 (or p * 1.0) leaves the sums exactly as the branch would
                s = ST[y, t]
                mass[v, t] += p * (s > 0.0)
                overlap[v, t] += s
    for t in range(K):
        n_t = counts[t]
        size_term = _xlogx(n_t + 1.0) - _xlogx(float(n_t))
        total = 0.0
        for v in range(V):
            w = weights[v]
            if w == 0.0:
                continue
            P = mass[v, t]
            part = size_term
            if P > 0.0:
                part -= P * np.log1p(overlap[v, t] / P) + P
            total += w * part
        out[t] = total


@njit_cached()
def _add_row(data, indices, indptr, i, ST, SlogS, t, sign):
    """Add (``sign=1``) or take out (``sign=-1``) row i from cluster t's sums.

    Taking out can leave a rounding residue below 0 where the row was the only
    contribution: sums are clipped at 0, as in the numpy reference.
    """
    for e in range(indptr[i], indptr[i + 1]):
        y = indices[e]
        ST[y, t] = max(ST[y, t] + sign * data[e], 0.0)
        SlogS[y, t] = _xlogx(ST[y, t])


@njit_cached()
def _cluster_state(data, indices, indptr, labels, n_clusters, n_columns):
    """Cluster sums ``ST`` (D, K), their ``x log x`` and the cluster sizes."""
    n = indptr.shape[0] - 1
    ST = np.zeros((n_columns, n_clusters))
    counts = np.zeros(n_clusters, dtype=np.int64)
    for i in range(n):
        t = labels[i]
        counts[t] += 1
        for e in range(indptr[i], indptr[i + 1]):
            ST[indices[e], t] += data[e]
    SlogS = np.zeros((n_columns, n_clusters))
    for y in range(n_columns):
        for t in range(n_clusters):
            SlogS[y, t] = _xlogx(ST[y, t])
    return ST, SlogS, counts


# A cluster whose lower bound exceeds the best cost so far by more than this cannot win; the
# margin covers the rounding of the bound and of the exact cost (sums of O(1) terms).
_BOUND_MARGIN = 1e-9


@njit_cached()
def sib_sweeps(data, indices, indptr, col_view, plogp, weights, labels, orders, n_clusters):
    """Draw-and-merge sweeps of weighted sIB, in place on ``labels``.

    Parameters
    ----------
    data, indices, indptr : ndarray
        CSR arrays of the concatenated per-view conditional distributions ``P`` (n, D).
    col_view : int64 ndarray of shape (D,)
        View of each column.
    plogp : ndarray of shape (n, V)
        ``sum_y p log p`` of each sample in each view (the numpy reference's signature; the
        kernel computes ``p log p`` per stored entry itself).
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

    Notes
    -----
    The clusters are tried in the reference's order (the sample's own cluster, then the
    others by index) and a cluster replaces the best so far only if its cost is lower by
    more than ``TIE_TOL``. A cluster whose lower bound (:func:`_lower_bounds`) already
    rules that out is skipped without computing its cost, which changes no decision.
    """
    starts = _row_view_starts(indices, indptr, col_view, weights.shape[0])
    logp, elogp = _entry_logs(data)
    return _sweeps(data, indices, indptr, starts, logp, elogp, col_view.shape[0], weights,
                   labels, orders, n_clusters)


@njit_cached(parallel=True)
def sib_sweeps_batch(data, indices, indptr, col_view, marginal, weights, labels, orders,
                     order_of_run, n_clusters):
    """Several independent runs of :func:`sib_sweeps` on the same data, and their ``I_v(T)``.

    ``labels`` (R, n) holds the R start partitions (overwritten with the results),
    ``weights`` (R, V) the view weights of each run, ``orders`` (S, max_sweeps, n) sweep
    orders and ``order_of_run`` (R,) which of them each run takes (runs may share one,
    without a copy per run). Each run is exactly the :func:`sib_sweeps` run from its
    start; the row layout and the entries' logarithms are computed once for all. The runs
    share nothing they write, so they run on numba's threads (``prange``) with the same
    results whatever the number of threads. Returns the sweeps each run took (R,) and the
    :func:`relevant_information` of each result (R, V), ``marginal`` being ``p_v(y)``.
    """
    V = weights.shape[1]
    starts = _row_view_starts(indices, indptr, col_view, V)
    logp, elogp = _entry_logs(data)
    R = labels.shape[0]
    n_sweeps = np.empty(R, dtype=np.int64)
    info = np.empty((R, V))
    for r in prange(R):
        n_sweeps[r], _ = _sweeps(data, indices, indptr, starts, logp, elogp, col_view.shape[0],
                                 weights[r], labels[r], orders[order_of_run[r]], n_clusters)
        info[r] = relevant_information(data, indices, indptr, col_view, marginal, labels[r],
                                       n_clusters, V)
    return n_sweeps, info


@njit_cached()
def _sweeps(data, indices, indptr, starts, logp, elogp, n_columns, weights, labels, orders,
            n_clusters):
    """The sweeps of :func:`sib_sweeps`, given the row layout and the entries' logarithms."""
    n = indptr.shape[0] - 1
    K = n_clusters
    V = weights.shape[0]
    ST, SlogS, counts = _cluster_state(data, indices, indptr, labels, K, n_columns)
    mass = np.empty((V, K))
    overlap = np.empty((V, K))
    bound = np.empty(K)
    width = 0
    for i in range(n):
        width = max(width, indptr[i + 1] - indptr[i])
    rest = np.empty(width)  # the own cluster's sums without the sample, and their x log x
    rest_log = np.empty(width)
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
            _lower_bounds(data, indices, starts, i, weights, ST, counts, mass, overlap, bound)
            # the own cost is at most ``upper``: if no other cluster's bound comes below the
            # cap that ``upper`` gives, none comes below the cap of the exact own cost either
            # (the cap grows with the cost), so the sample stays without its exact cost
            upper = _own_upper_bound(data, indices, starts, logp, i, weights, ST, SlogS,
                                     counts, c)
            cap = upper - TIE_TOL + 2.0 * _BOUND_MARGIN * (1.0 + abs(upper))
            candidate = False
            for t in range(K):
                if t != c and bound[t] <= cap:
                    candidate = True
                    break
            if not candidate:
                continue
            best = _own_cost(data, indices, starts, elogp, i, weights, ST, SlogS, counts, c,
                             rest, rest_log)
            best_t = c
            for t in range(K):
                if t == c:
                    continue
                if bound[t] > best - TIE_TOL + _BOUND_MARGIN * (1.0 + abs(best)):
                    continue
                cost = _cost(data, indices, starts, elogp, i, weights, ST, SlogS, counts, t)
                if cost < best - TIE_TOL:
                    best = cost
                    best_t = t
            if best_t != c:
                first = indptr[i]
                for v in range(V):
                    for e in range(starts[i, v], starts[i, v + 1]):
                        y = indices[e]
                        if weights[v] == 0.0:
                            ST[y, c] = max(ST[y, c] - data[e], 0.0)
                            SlogS[y, c] = _xlogx(ST[y, c])
                        else:
                            ST[y, c] = rest[e - first]
                            SlogS[y, c] = rest_log[e - first]
                counts[c] -= 1
                _add_row(data, indices, indptr, i, ST, SlogS, best_t, 1.0)
                counts[best_t] += 1
                labels[i] = best_t
                moved += 1
        n_moves += moved
        if moved == 0:
            break
    return n_sweeps, n_moves


@njit_cached()
def merge_costs(data, indices, indptr, col_view, plogp, weights, S, counts):
    """``n * Delta(i, t)`` of every row of ``P`` against every cluster, shape (m, K).

    ``S`` is (K, D), the clusters' column sums.
    """
    m = indptr.shape[0] - 1
    K = S.shape[0]
    ST = np.ascontiguousarray(S.T)
    SlogS = np.empty_like(ST)
    for y in range(ST.shape[0]):
        for t in range(K):
            SlogS[y, t] = _xlogx(ST[y, t])
    starts = _row_view_starts(indices, indptr, col_view, weights.shape[0])
    elogp = _entry_xlogx(data)
    out = np.empty((m, K))
    for i in range(m):
        for t in range(K):
            out[i, t] = _cost(data, indices, starts, elogp, i, weights, ST, SlogS, counts, t)
    return out


@njit_cached()
def relevant_information(data, indices, indptr, col_view, marginal, labels, n_clusters,
                         n_views):
    """``I_v(T) = sum_t p(t) KL(p_v(.|t) || p_v(.))`` of every view, shape (V,), clipped at 0.

    ``marginal`` (D,) is ``p_v(y)``, the column means of ``P``. One pass over the stored
    entries builds the cluster sums, one over the (column, cluster) pairs with mass takes
    the logarithms; an empty cluster adds 0. The reference is ``_relevant_information_numpy``
    in ``_ptib`` (sparse products and dense arrays).
    """
    n = indptr.shape[0] - 1
    K = n_clusters
    ST = np.zeros((col_view.shape[0], K))
    counts = np.zeros(K)
    for i in range(n):
        t = labels[i]
        counts[t] += 1.0
        for e in range(indptr[i], indptr[i + 1]):
            ST[indices[e], t] += data[e]
    terms = np.zeros((K, n_views))
    for y in range(ST.shape[0]):
        v = col_view[y]
        for t in range(K):
            s = ST[y, t]
            if s > 0.0:
                q = s / counts[t]
                terms[t, v] += q * np.log(q / marginal[y])
    info = np.zeros(n_views)
    for t in range(K):
        if counts[t] > 0.0:
            for v in range(n_views):
                info[v] += counts[t] / n * terms[t, v]
    for v in range(n_views):
        info[v] = max(info[v], 0.0)
    return info


# --------------------------------------------------------------------------------------
# numpy reference (what the numba kernel is checked against)
# --------------------------------------------------------------------------------------
def _dense(data, indices, indptr, n_columns):
    n = indptr.shape[0] - 1
    P = np.zeros((n, n_columns))
    rows = np.repeat(np.arange(n), np.diff(indptr))
    P[rows, indices] = data
    return P


def merge_costs_numpy(data, indices, indptr, col_view, plogp, weights, S, counts):
    """Reference of :func:`merge_costs`: JS divergence from its definition, dense.

    ``plogp`` is accepted for a common signature and not used.
    """
    P = _dense(data, indices, indptr, col_view.shape[0])
    counts = np.asarray(counts, dtype=np.float64)
    pi1 = 1.0 / (1.0 + counts)  # (K,)
    pi2 = counts / (1.0 + counts)
    out = np.zeros((P.shape[0], S.shape[0]))
    for v in range(weights.shape[0]):
        if weights[v] == 0.0:
            continue
        cols = col_view == v
        p = P[:, None, cols]  # (m, 1, d)
        q = (S[:, cols] / np.maximum(counts, 1.0)[:, None])[None]  # (1, K, d)
        mix = pi1[None, :, None] * p + pi2[None, :, None] * q
        kl_p = np.sum(xlogy(p, p) - xlogy(p, mix), axis=2)
        kl_q = np.sum(xlogy(q, q) - xlogy(q, mix), axis=2)
        js = pi1[None, :] * kl_p + pi2[None, :] * kl_q
        out += weights[v] * (1.0 + counts)[None, :] * js
    return out


def sib_sweeps_numpy(
    data, indices, indptr, col_view, plogp, weights, labels, orders, n_clusters, trace=None
):
    """Reference of :func:`sib_sweeps` in plain numpy (same rule, same tie breaking).

    If ``trace`` is a list, the labels after every visited sample are appended to it (a copy
    each time); tests use it to check that the objective never decreases within a sweep.
    """
    K = n_clusters
    P = _dense(data, indices, indptr, col_view.shape[0])
    one = np.arange(1, dtype=np.int64)
    dense_indices = np.arange(P.shape[1], dtype=np.int64)
    dense_indptr = np.array([0, P.shape[1]], dtype=np.int64)
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
            S[c] = np.maximum(S[c] - P[i], 0.0)  # no rounding residue below 0
            counts[c] -= 1
            cost = merge_costs_numpy(P[i], dense_indices, dense_indptr, col_view, plogp[i + one],
                                     weights, S, counts)[0]
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
