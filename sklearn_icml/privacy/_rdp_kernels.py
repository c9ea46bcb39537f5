"""The RDP formulas of privacy amplification by random data and model partitioning.

Dong, Chen & Ozgur (ICML 2025) bound the Renyi divergence of DP-SGD where every sample
takes part in a uniformly random set of ``k`` of the ``T`` iterations (balanced iteration
subsampling, BIS), and of training where every sample updates one random part of the
model (model splitting). These are the kernels, on arrays of orders, without checks:

* the efficient remove-direction bound of BIS (a hypergeometric moment generating
  function) and its add-direction bound (valid for ``alpha >= 2``);
* the exact remove-direction divergence of model splitting with Poisson sampling, from
  log-moments given by an exponential generating function (in log space, by repeated
  squaring), which is also BIS with ``k = 1`` (one of ``T`` iterations is one of ``T``
  parts);
* the exact remove-direction divergence of BIS for ``k > 1`` by enumeration (tiny ``T``).

The public functions that check their arguments and compose are in ``_partition_rdp``.
"""

import itertools
import math

import numpy as np
from scipy.special import gammaln, logsumexp

MAX_EXACT_ORDER = 1024  # integer orders up to this are computed exactly by the EGF formula
_MAX_EXACT_WORK = 3_000_000  # work budget of the k > 1 exact enumeration
_MAX_EXACT_SUBSETS = 70  # C(T, k) budget of the k > 1 exact enumeration


def _sq(sigma):
    """``sigma ** 2`` as a float, ``inf`` where it overflows.

    A Python float raises OverflowError on ``1e300 ** 2``; an infinite variance gives the
    correct limit (RDP 0) in every formula below, where it only ever divides.
    """
    sigma = float(sigma)
    return sigma * sigma  # float multiplication overflows to inf, unlike **


def _log_comb(n, k):
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def bis_remove_efficient(sigma, num_steps, num_selected, orders):
    """Efficient remove bound: log E[exp(alpha I / (2 sigma^2))], I hypergeometric."""
    T, k = num_steps, num_selected
    i = np.arange(max(0, 2 * k - T), k + 1, dtype=float)  # C(T-k, k-i) = 0 below 2k - T
    log_w = _log_comb(k, i) + _log_comb(T - k, k - i) - _log_comb(T, k)
    terms = log_w[:, None] + i[:, None] * orders[None, :] / (2.0 * _sq(sigma))
    return logsumexp(terms, axis=0)


def _log1p_alpha_expm1(x, alpha):
    """log(1 + alpha (exp(x) - 1)) for x >= 0, stable for tiny and for large x."""
    alpha = np.asarray(alpha, dtype=float)
    if x < 1.0:
        return np.log1p(alpha * np.expm1(x))
    return x + np.log(alpha) + np.log1p(-(alpha - 1.0) / alpha * np.exp(-x))


def bis_add(sigma, num_steps, num_selected, orders):
    """Add-direction bound of Dong, Chen & Ozgur (2025), valid for alpha >= 2."""
    T, k, a, s2 = float(num_steps), float(num_selected), orders, _sq(sigma)
    x = k * (T - k) / (s2 * T**2)
    return (
        a * k**2 / (2 * s2 * T)
        + a * k * (T - k) / (2 * s2 * T * (a - 1))
        - T * _log1p_alpha_expm1(x, a) / (2 * (a - 1))
    )


def _log_poly_mul(a, b):
    """Coefficients (in log space) of the product of two log-coefficient polynomials,
    truncated to the length of ``a``."""
    n = a.shape[0]
    idx = np.arange(n)
    shift = idx[None, :] - idx[:, None]  # [i, m] -> m - i
    valid = shift >= 0
    terms = np.where(valid, a[:, None] + b[np.clip(shift, 0, n - 1)], -np.inf)
    with np.errstate(invalid="ignore"):
        return logsumexp(terms, axis=0)


def _split_log_moments(sigma, num_parts, sample_rate, max_order):
    """log E_P[(Q/P)^m] for m = 0..max_order, Q the (sampled) random-part mixture.

    ``E = m! [z^m] G(z) F(z)^d`` with ``F = sum (q/d)^j e^{j(j-1)/(2 sigma^2)} z^j / j!`` and
    ``G = sum (1-q)^j z^j / j!``; everything in log space, ``F^d`` by repeated squaring.
    """
    m = np.arange(max_order + 1, dtype=float)
    d, q = num_parts, sample_rate
    log_f = m * np.log(q / d) + m * (m - 1) / (2.0 * _sq(sigma)) - gammaln(m + 1)
    if q < 1.0:
        log_acc = m * np.log1p(-q) - gammaln(m + 1)  # G
    else:
        log_acc = np.full(max_order + 1, -np.inf)
        log_acc[0] = 0.0
    power, base = d, log_f
    while power:
        if power & 1:
            log_acc = _log_poly_mul(log_acc, base)
        power >>= 1
        if power:
            base = _log_poly_mul(base, base)
    return gammaln(m + 1) + log_acc


def _interpolate_rdp(log_moments, orders):
    """RDP at real ``orders`` from exact log-moments at integer orders.

    Integer orders are exact. A real order between two integers uses the convexity of
    ``(alpha - 1) D_alpha`` in ``alpha`` (a log-moment generating function): the chord is an
    upper bound.
    """
    lo = np.floor(orders).astype(int)
    hi = np.minimum(lo + 1, log_moments.shape[0] - 1)
    frac = orders - lo
    log_m = (1 - frac) * log_moments[lo] + frac * log_moments[hi]
    return log_m / (orders - 1)


def split_remove(sigma, num_parts, sample_rate, orders):
    """Exact remove-direction RDP of one round of model splitting with sampling.

    Orders above ``MAX_EXACT_ORDER`` get the unamplified Gaussian bound ``alpha/(2 sigma^2)``
    (joint convexity), which stays valid.
    """
    out = orders / (2.0 * _sq(sigma))
    inside = orders <= MAX_EXACT_ORDER
    if np.any(inside):
        top = int(np.ceil(orders[inside].max()))
        log_moments = _split_log_moments(sigma, num_parts, sample_rate, top)
        out[inside] = np.minimum(_interpolate_rdp(log_moments, orders[inside]), out[inside])
    return out


def bis_remove_enumerate(sigma, num_steps, num_selected, orders):
    """Exact remove-direction RDP for general k by enumeration (tiny T only).

    ``E_P[(Q/P)^alpha] = E[exp(sum_t c_t (c_t - 1) / (2 sigma^2))]`` where ``c_t`` counts how
    many of ``alpha`` independent uniform k-subsets contain step ``t``. Dynamic programming
    over the sorted count vector adds one subset at a time.
    """
    T, k = num_steps, num_selected
    subsets = [np.array(s) for s in itertools.combinations(range(T), k)]
    log_n = math.log(len(subsets))
    top = int(orders.max())
    states = {(0,) * T: 0.0}
    log_moments = np.zeros(top + 1)
    for level in range(1, top + 1):
        new = {}
        for state, log_w in states.items():
            counts = np.array(state)
            for s in subsets:
                gain = counts[s].sum() / _sq(sigma) - log_n
                nxt = counts.copy()
                nxt[s] += 1
                key = tuple(sorted(nxt))
                new[key] = np.logaddexp(new.get(key, -np.inf), log_w + gain)
        states = new
        log_moments[level] = logsumexp(list(states.values()))
    return log_moments[orders.astype(int)] / (orders - 1)


def bis_remove_exact(sigma, num_steps, num_selected, orders):
    T, k = num_steps, num_selected
    if k == T:
        return orders * k / (2.0 * _sq(sigma))
    if k == 1:
        return split_remove(sigma, T, 1.0, orders)
    top = int(orders.max())
    work = math.comb(top + T, T) * math.comb(T, k) * top  # states x subsets x levels, bound
    if math.comb(T, k) > _MAX_EXACT_SUBSETS or work > _MAX_EXACT_WORK:
        raise ValueError(
            f"method='exact' with num_selected={k} > 1 enumerates the C(num_steps, "
            f"num_selected) = {math.comb(T, k)} subsets at every order up to {top}, which is "
            "only feasible for tiny num_steps and orders; use method='efficient'. Got "
            f"num_steps={T} instead."
        )
    return bis_remove_enumerate(sigma, T, k, orders)


def split_rdp(sigma, d, q, orders):
    """RDP of one round of model splitting: remove direction, and add with full participation."""
    rdp = split_remove(sigma, d, q, orders)
    if q == 1.0:
        rdp = np.maximum(rdp, bis_add(sigma, d, 1, orders))
    return rdp


def finite_rdp(rdp):
    if not np.all(np.isfinite(rdp)):  # pragma: no cover - the kernels are log-space
        raise FloatingPointError(
            "the RDP computation must stay finite (please report this case). Got "
            f"{rdp!r} instead."
        )
    return np.maximum(rdp, 0.0)
