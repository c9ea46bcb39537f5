"""Exact integer minimisation of a separable convex sum under one total constraint.

Problem: minimise ``sum_h g_h(x_h)`` subject to ``sum_h x_h = total`` and
``lower_h <= x_h <= upper_h`` integer, where each ``g_h`` is convex on the integers. The
solvers here only see the marginal gains ``gain(h, x) = g_h(x) - g_h(x + 1)``, which are
non-increasing in ``x``. The integer optimum takes the ``total - sum(lower)`` largest gains
(Gross 1956, Fox 1966; Ibaraki & Katoh 1988), with ties broken towards the lowest stratum
index as the heap greedy does.

* :func:`greedy_allocation`: the textbook heap greedy, ``O(m log H)`` gain evaluations; the
  reference the fast solver is tested against.
* :func:`threshold_allocation`: finds the threshold gain ``lambda`` (the m-th largest gain)
  by bisection on the bit pattern of ``lambda``; for a given ``lambda`` each stratum's count
  of gains above it comes from a vectorised binary search inside a per-stratum bracket that
  only shrinks. The last few candidates are sorted explicitly. Same result as the greedy.
* :func:`exchange_certificate` / :func:`exchange_repair`: the pairwise exchange optimality
  condition, necessary and sufficient for separable convex objectives.
"""

import heapq
import struct

import numpy as np

_SIGN = 1 << 63


def _float_key(value):
    """Map a float to an int so that the order of floats is the order of ints."""
    bits = struct.unpack("<q", struct.pack("<d", float(value)))[0]
    return bits if bits >= 0 else -_SIGN - bits


def _key_float(key):
    bits = key if key >= 0 else -_SIGN - key
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def _feasible_bounds(lower, upper, total):
    lower = np.asarray(lower, dtype=np.int64)
    upper = np.asarray(upper, dtype=np.int64)
    if np.any(upper < lower) or not lower.sum() <= total <= upper.sum():
        raise ValueError(
            "the allocation problem must be feasible: lower <= upper and sum(lower) <= "
            f"total <= sum(upper). Got total={total!r}, sum(lower)={lower.sum()} and "
            f"sum(upper)={upper.sum()} instead."
        )
    return lower, upper


def greedy_allocation(gain, lower, upper, total):
    """Heap greedy from ``lower``: give each unit to the largest marginal gain.

    Parameters
    ----------
    gain : callable
        ``gain(idx, x)`` with int64 arrays of stratum indices and current sizes returns the
        float array ``g_idx(x) - g_idx(x + 1)`` (only called with ``x < upper[idx]``).
    lower, upper : array-like of int of shape (H,)
        Bounds on each ``x_h``.
    total : int
        Required ``sum(x)``.

    Returns
    -------
    x : ndarray of int64 of shape (H,)
    """
    lower, upper = _feasible_bounds(lower, upper, total)
    x = lower.copy()
    free = np.flatnonzero(upper > lower)
    heap = []
    if free.size:
        first = gain(free, x[free])
        heap = [(-float(g), int(h)) for g, h in zip(first, free)]
        heapq.heapify(heap)
    one = np.zeros(1, dtype=np.int64)
    for _ in range(int(total - lower.sum())):
        _, h = heapq.heappop(heap)
        x[h] += 1
        if x[h] < upper[h]:
            one[0] = h
            heapq.heappush(heap, (-float(gain(one, x[one])[0]), h))
    return x


def _count_above(gain, lam, lo_bracket, hi_bracket, upper):
    """Per stratum, the smallest ``x`` in ``[lo, hi]`` with ``x == upper`` or gain <= lam.

    That is ``lower + #{gains > lam}`` when the bracket holds the answer.
    """
    lo = lo_bracket.copy()
    hi = hi_bracket.copy()
    active = np.flatnonzero(lo < hi)
    while active.size:
        mid = (lo[active] + hi[active]) // 2  # < hi <= upper, so gain(mid) is defined
        below = gain(active, mid) <= lam
        hi[active] = np.where(below, mid, hi[active])
        lo[active] = np.where(below, lo[active], mid + 1)
        active = active[lo[active] < hi[active]]
    return lo


def threshold_allocation(gain, lower, upper, total, *, candidate_cap=None):
    """Exact integer allocation by bisection on the threshold gain.

    Parameters
    ----------
    gain, lower, upper, total
        As in :func:`greedy_allocation`.
    candidate_cap : int, default=None
        Stop bisecting once at most this many (stratum, unit) candidates remain between
        the two brackets, and sort them explicitly. Default ``max(8 H, 16384)``.

    Returns
    -------
    x : ndarray of int64 of shape (H,)
        Identical to :func:`greedy_allocation` (up to floating point ties).
    """
    lower, upper = _feasible_bounds(lower, upper, total)
    n_strata = lower.shape[0]
    if total == lower.sum():
        return lower.copy()
    if total == upper.sum():
        return upper.copy()
    cap = max(8 * n_strata, 16384) if candidate_cap is None else int(candidate_cap)
    free = np.flatnonzero(upper > lower)
    # lam_hi = largest gain: nothing is above it, so x(lam_hi) = lower
    key_hi = _float_key(np.max(gain(free, lower[free])))
    x_hi = lower.copy()
    # just below the smallest gain: everything is above it, so x(lam_lo) = upper
    key_lo = _float_key(np.min(gain(free, upper[free] - 1))) - 1
    x_lo = upper.copy()
    while key_hi - key_lo > 1 and x_lo.sum() - x_hi.sum() > cap:
        key_mid = (key_hi + key_lo) // 2
        x = _count_above(gain, _key_float(key_mid), x_hi, x_lo, upper)
        got = x.sum()
        if got == total:
            return x
        if got > total:
            key_lo, x_lo = key_mid, x
        else:
            key_hi, x_hi = key_mid, x
    remaining = int(total - x_hi.sum())
    gap = x_lo - x_hi
    if gap.sum() <= max(cap, 1 << 22):
        owner = np.repeat(np.arange(n_strata, dtype=np.int64), gap)
        start = np.repeat(np.cumsum(gap) - gap, gap)
        xs = x_hi[owner] + (np.arange(owner.shape[0], dtype=np.int64) - start)
        gains = gain(owner, xs)
        order = np.lexsort((xs, owner, -gains))[:remaining]
        return x_hi + np.bincount(owner[order], minlength=n_strata)
    # the two brackets are adjacent floats: every candidate has the same gain, so ties go
    # to the lowest stratum index, each stratum filled before the next
    before = np.cumsum(gap) - gap
    return x_hi + np.clip(remaining - before, 0, gap)


def exchange_certificate(gain, x, lower, upper):
    """Best add gain and cheapest removal cost over distinct strata.

    ``x`` is optimal iff ``best_add <= cheapest_remove`` where ``best_add`` is the largest
    ``g_h(x_h) - g_h(x_h + 1)`` and ``cheapest_remove`` the smallest
    ``g_k(x_k - 1) - g_k(x_k)`` over ``k != h``.

    Returns
    -------
    best_add, cheapest_remove : float
        ``-inf`` / ``inf`` when no move exists.
    add_index, remove_index : int
        The strata achieving them (``-1`` when no move exists).
    """
    x = np.asarray(x, dtype=np.int64)
    n_strata = x.shape[0]
    add = np.full(n_strata, -np.inf)
    rem = np.full(n_strata, np.inf)
    can_add = np.flatnonzero(x < upper)
    can_rem = np.flatnonzero(x > lower)
    if can_add.size:
        add[can_add] = gain(can_add, x[can_add])
    if can_rem.size:
        rem[can_rem] = gain(can_rem, x[can_rem] - 1)
    if n_strata < 2:
        return -np.inf, np.inf, -1, -1
    a_order = np.argsort(-add, kind="stable")[:2]
    r_order = np.argsort(rem, kind="stable")[:2]
    best = (-np.inf, np.inf, -1, -1)
    for a in a_order:
        for r in r_order:
            if a != r and add[a] - rem[r] > best[0] - best[1]:
                best = (float(add[a]), float(rem[r]), int(a), int(r))
    return best


def exchange_repair(gain, x, lower, upper, *, rtol=1e-12, max_moves=None):
    """Move single units from the cheapest removal to the best addition until optimal.

    Returns
    -------
    x : ndarray of int64
        The repaired allocation (satisfies the exchange certificate to ``rtol``).
    n_moves : int
        How many units were moved (0 when ``x`` was already optimal).
    """
    x = np.array(x, dtype=np.int64)
    limit = int(x.sum()) if max_moves is None else int(max_moves)
    for moves in range(limit + 1):
        add, rem, a, r = exchange_certificate(gain, x, lower, upper)
        if a < 0 or add <= rem + rtol * abs(rem):
            return x, moves
        x[a] += 1
        x[r] -= 1
    return x, limit
