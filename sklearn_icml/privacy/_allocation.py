"""The design of a private stratified survey: its variance and the allocations.

The variance of the private stratified mean of Chen, Pasupathy & Awan (ICML 2025) is a sum
of one convex term per stratum, ``g_h(n_h)``: sampling variance plus the variance of the
noise calibrated to the stratum's nominal budget. :class:`_Design` evaluates the terms and
their marginal gains; :func:`optimal_allocation` minimises their sum over integer sample
sizes (with the exact solvers of ``_allocation_search``); :func:`neyman_allocation` and
:func:`proportional_allocation` are the privacy-unaware baselines, rounded to integers.
"""

import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import POSITIVE_INT, POSITIVE_REAL
from ..utils.validation import check_int_vector
from ._allocation_search import exchange_repair, greedy_allocation, threshold_allocation
from ._amplification import EXPM1_LIMIT, nominal_budgets
from ._mechanisms import _variance_on_sum
from ._validation import DATA_RANGE, MECHANISM, range_width

#: The parameters every allocation takes.
_ALLOCATION = {
    "total_sample_size": [POSITIVE_INT],
    "stratum_sizes": ["array-like"],
    "min_per_stratum": [POSITIVE_INT],
}
#: The parameters of the private design (what the variance depends on besides n_h).
_DESIGN = {
    "stratum_sizes": ["array-like"],
    "stratum_stds": ["array-like"],
    "epsilon": [POSITIVE_REAL],
    "mechanism": MECHANISM,
    "data_range": DATA_RANGE,
}


def check_sizes(sizes, name="stratum_sizes"):
    """A non-empty 1-D int64 array of positive integers."""
    arr = check_int_vector(sizes, name, low=1)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array. Got {sizes!r} instead.")
    return arr


def check_stds(stratum_stds, n_strata):
    """Stratum standard deviations: one finite value >= 0 per stratum."""
    arr = np.asarray(stratum_stds)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"stratum_stds must be numeric. Got dtype {arr.dtype} instead.")
    arr = arr.astype(np.float64)
    if arr.shape != (n_strata,):
        raise ValueError(
            f"stratum_stds must have one value per stratum ({n_strata}). Got shape "
            f"{arr.shape} instead."
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"stratum_stds must be finite and >= 0. Got {stratum_stds!r} instead.")
    return arr


def check_total(total, sizes, n_min):
    """``total`` against the strata: feasible with ``n_min <= n_h <= N_h``."""
    if np.any(sizes < n_min):
        bad = int(np.flatnonzero(sizes < n_min)[0])
        raise ValueError(
            f"every stratum must be able to give min_per_stratum={n_min} units. Got a "
            f"stratum {bad} of N_h = {sizes[bad]} instead."
        )
    if total > sizes.sum():
        raise ValueError(
            f"total_sample_size must be <= the population size sum(N_h) = {sizes.sum()}. "
            f"Got {total!r} instead."
        )
    if total < n_min * sizes.shape[0]:
        raise ValueError(
            "total_sample_size must be >= n_strata * min_per_stratum = "
            f"{n_min * sizes.shape[0]}. Got {total!r} instead."
        )
    return int(total)


def _sizes_and_total(stratum_sizes, total_sample_size, min_per_stratum):
    sizes = check_sizes(stratum_sizes)
    return sizes, check_total(total_sample_size, sizes, min_per_stratum)


class _Design:
    """The objective ``sum_h g_h(n_h)`` of a stratified design, evaluated per stratum."""

    def __init__(self, sizes, stds, epsilon, mechanism, width):
        self.sizes = sizes.astype(np.float64)
        self.w2 = (self.sizes / self.sizes.sum()) ** 2
        self.s2 = np.asarray(stds, dtype=np.float64) ** 2
        self.epsilon = epsilon
        self.mechanism = mechanism
        self.width = width
        self.c = np.expm1(epsilon) * self.sizes if epsilon <= EXPM1_LIMIT else None

    def nominal(self, idx, x):
        if self.c is not None:
            return np.log1p(self.c[idx] / x)
        return nominal_budgets(self.epsilon, x, self.sizes[idx])

    def noise(self, idx, x):
        """V_M(eps_h(x)) / x**2 (noise variance of the stratum mean), unweighted."""
        e = self.nominal(idx, x)
        if self.mechanism == "laplace":
            return 2.0 * (self.width / (x * e)) ** 2
        return _variance_on_sum(e, self.mechanism, self.width) / x**2

    def components(self, x):
        """(sampling part, noise part) of the variance, per stratum."""
        idx = np.arange(x.shape[0])
        x = x.astype(np.float64)
        sampling = self.w2 * self.s2 * (self.sizes - x) / (x * self.sizes)
        return sampling, self.w2 * self.noise(idx, x)

    def gain(self, idx, x):
        """g_h(x) - g_h(x + 1), computed within each stratum."""
        x = x.astype(np.float64)
        return self.w2[idx] * (
            self.s2[idx] / (x * (x + 1.0)) + (self.noise(idx, x) - self.noise(idx, x + 1.0))
        )


def _design(stratum_sizes, stratum_stds, epsilon, mechanism, data_range):
    sizes = check_sizes(stratum_sizes)
    stds = check_stds(stratum_stds, sizes.shape[0])
    width = range_width(data_range, mechanism)
    return _Design(sizes, stds, float(epsilon), mechanism, width)


@keyword_only_after(4)
@validate_params(
    {"sample_sizes": ["array-like"], **_DESIGN, "return_components": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def design_variance(
    sample_sizes,
    stratum_sizes,
    stratum_stds,
    epsilon,
    *,
    mechanism="laplace",
    data_range=1.0,
    return_components=False,
):
    """Variance of the private stratified mean for a given design.

    ``V = sum_h W_h**2 [(1/n_h - 1/N_h) S_h**2 + V_M(eps_h(n_h)) / n_h**2]`` with
    ``W_h = N_h / N`` and ``eps_h(n_h)`` from :func:`nominal_epsilon`.

    Parameters
    ----------
    sample_sizes : array-like of int of shape (H,)
        ``n_h``, with ``1 <= n_h <= N_h``.
    stratum_sizes : array-like of int of shape (H,)
        Public stratum sizes ``N_h``.
    stratum_stds : array-like of shape (H,)
        Stratum standard deviations ``S_h`` (denominator ``N_h - 1``), from public prior
        knowledge or a pilot, never from the private data.
    epsilon : float
        Final privacy budget, the same for every individual.
    mechanism : {"laplace", "dlap", "tulap"}, default="laplace"
        Noise mechanism.
    data_range : float or (float, float), default=1.0
        Width ``Delta`` of the range the data are clipped to, or its two ends.
    return_components : bool, default=False
        Return the two parts per stratum instead of their total.

    Returns
    -------
    variance : float
        Only if ``return_components=False``.
    sampling, noise : ndarray of shape (H,)
        Only if ``return_components=True``: the sampling and privacy-noise parts; they sum
        to the variance.

    See Also
    --------
    optimal_allocation : the design minimising this variance.

    References
    ----------
    .. [1] Y.-W. Chen, R. Pasupathy, J. A. Awan, "Optimal Survey Design for Private Mean
       Estimation", ICML 2025, arXiv:2501.18121.

    Examples
    --------
    >>> from sklearn_icml.privacy import design_variance
    >>> N, S = [20000, 20000, 1000], [0.02, 0.5, 0.5]
    >>> print(f"{design_variance([28, 259, 13], N, S, epsilon=1.0):.5e}")
    2.53983e-04
    """
    design = _design(stratum_sizes, stratum_stds, epsilon, mechanism, data_range)
    x = check_sizes(sample_sizes, "sample_sizes")
    if x.shape != design.sizes.shape:
        raise ValueError(
            f"sample_sizes must have one value per stratum ({design.sizes.shape[0]}). Got "
            f"shape {x.shape} instead."
        )
    if np.any(x > design.sizes):
        raise ValueError(
            f"sample_sizes must satisfy n_h <= N_h in every stratum. Got {sample_sizes!r} "
            "instead."
        )
    sampling, noise = design.components(x)
    if return_components:
        return sampling, noise
    return float(sampling.sum() + noise.sum())


@keyword_only_after(4)
@validate_params(
    {**_ALLOCATION, **_DESIGN, "warm_start": ["boolean"]}, prefer_skip_nested_validation=True
)
def optimal_allocation(
    total_sample_size,
    stratum_sizes,
    stratum_stds,
    epsilon,
    *,
    mechanism="laplace",
    data_range=1.0,
    min_per_stratum=1,
    warm_start=True,
):
    """Integer sample sizes minimising the variance of the private stratified mean.

    Solves ``min sum_h g_h(n_h)`` (the terms of :func:`design_variance`) over integers
    with ``sum n_h = total_sample_size`` and ``min_per_stratum <= n_h <= N_h``. Each
    ``g_h`` is convex, so taking the largest marginal gains ``g_h(x) - g_h(x + 1)`` is
    exact; the result is certified by the pairwise exchange condition.

    Parameters
    ----------
    total_sample_size : int
        Total sample size ``n``.
    stratum_sizes : array-like of int of shape (H,)
        Public stratum sizes ``N_h``.
    stratum_stds : array-like of shape (H,)
        Public (prior or pilot) stratum standard deviations ``S_h``.
    epsilon : float
        Final privacy budget.
    mechanism : {"laplace", "dlap", "tulap"}, default="laplace"
        Noise mechanism.
    data_range : float or (float, float), default=1.0
        Width of the data range, or its two ends.
    min_per_stratum : int, default=1
        Lower bound on each ``n_h`` (use 2 to also estimate within-stratum variances).
    warm_start : bool, default=True
        ``True``: bisection on the threshold marginal gain with vectorised per-stratum
        binary searches, ``O(H log(N) log(1/tol))`` work, then the exchange certificate.
        ``False``: the plain heap greedy from ``min_per_stratum``,
        ``O((n - H min_per_stratum) log H)``; same result, much slower for large ``n``.

    Returns
    -------
    sample_sizes : ndarray of int64 of shape (H,)
        Sums to ``total_sample_size``.

    See Also
    --------
    neyman_allocation, proportional_allocation, design_variance, DPStratifiedSampler

    Notes
    -----
    Chen, Pasupathy & Awan (2025) prove that the objective is strongly convex in the sample
    sizes, so the integer optimum is found exactly by the classical method for separable
    convex resource allocation (Gross 1956; Ibaraki & Katoh 1988), which this function
    uses. Its warm start bisects on the integer threshold gain instead of solving the
    continuous relaxation, so no per-stratum root finding is needed; the result is the
    same exact optimum.

    References
    ----------
    .. [1] Y.-W. Chen, R. Pasupathy, J. A. Awan, "Optimal Survey Design for Private Mean
       Estimation", ICML 2025, arXiv:2501.18121.
    .. [2] T. Ibaraki, N. Katoh, "Resource Allocation Problems: Algorithmic Approaches",
       MIT Press, 1988.

    Examples
    --------
    >>> from sklearn_icml.privacy import optimal_allocation
    >>> optimal_allocation(300, [20000, 20000, 1000], [0.02, 0.5, 0.5], epsilon=1.0)
    array([ 28, 259,  13])
    """
    design = _design(stratum_sizes, stratum_stds, epsilon, mechanism, data_range)
    n = check_total(total_sample_size, design.sizes.astype(np.int64), min_per_stratum)
    return solve(design, n, min_per_stratum, warm_start)


def solve(design, n, n_min, warm_start=True, gain=None):
    gain = design.gain if gain is None else gain
    upper = design.sizes.astype(np.int64)
    lower = np.full(upper.shape[0], n_min, dtype=np.int64)
    if warm_start:
        x = threshold_allocation(gain, lower, upper, n)
        x, _ = exchange_repair(gain, x, lower, upper)
    else:
        x = greedy_allocation(gain, lower, upper, n)
    return x


def rounded_allocation(total, weights, sizes, n_min):
    """Round a real allocation ``total * weights / sum(weights)`` to integers.

    Entries below ``n_min`` are raised to it and entries above ``N_h`` capped (the rest
    re-shared) until none binds; then floors plus one unit for the largest fractional
    parts (ties to the lower index).
    """
    n_strata = sizes.shape[0]
    fixed = np.zeros(n_strata, dtype=bool)
    value = np.zeros(n_strata)
    weights = np.asarray(weights, dtype=np.float64)
    for _ in range(2 * n_strata + 1):
        free = ~fixed
        w = weights[free]
        if w.sum() <= 0:  # e.g. all S_h = 0 in Neyman: share in proportion to N_h
            w = sizes[free].astype(np.float64)
        budget = total - value[fixed].sum()
        value[free] = budget * w / w.sum()
        low = free & (value < n_min)
        if low.any():
            value[low] = n_min
            fixed |= low
            continue
        high = free & (value > sizes)
        if high.any():
            value[high] = sizes[high]
            fixed |= high
            continue
        break
    x = np.floor(value + 1e-9 * np.maximum(value, 1.0)).astype(np.int64)
    x = np.clip(x, n_min, sizes)
    remaining = int(total - x.sum())
    frac = np.where(x < sizes, value - x, -np.inf)
    order = np.argsort(-frac, kind="stable")
    while remaining > 0:  # one pass suffices unless caps bind; loop for safety
        for h in order:
            if remaining == 0:
                break
            if x[h] < sizes[h]:
                x[h] += 1
                remaining -= 1
    while remaining < 0:  # cannot happen with floors; guard anyway
        for h in order[::-1]:
            if remaining == 0:
                break
            if x[h] > n_min:
                x[h] -= 1
                remaining += 1
    return x


@keyword_only_after(3)
@validate_params(
    {**_ALLOCATION, "stratum_stds": ["array-like"]}, prefer_skip_nested_validation=True
)
def neyman_allocation(total_sample_size, stratum_sizes, stratum_stds, *, min_per_stratum=1):
    """Privacy-unaware Neyman allocation ``n_h`` proportional to ``N_h S_h``, rounded.

    Parameters
    ----------
    total_sample_size : int
        Total sample size ``n``.
    stratum_sizes : array-like of int of shape (H,)
        Stratum sizes ``N_h``.
    stratum_stds : array-like of shape (H,)
        Stratum standard deviations ``S_h``.
    min_per_stratum : int, default=1
        Lower bound on each ``n_h``.

    Returns
    -------
    sample_sizes : ndarray of int64 of shape (H,)

    See Also
    --------
    optimal_allocation, proportional_allocation

    Notes
    -----
    Rounding: entries below ``min_per_stratum`` are raised to it, entries above ``N_h``
    capped, the rest re-shared; then floors, and the remaining units go to the largest
    fractional parts (ties to the lower index). If every free ``S_h`` is 0 the units are
    shared in proportion to ``N_h``.

    Examples
    --------
    >>> from sklearn_icml.privacy import neyman_allocation
    >>> neyman_allocation(300, [20000, 20000, 1000], [0.02, 0.5, 0.5])
    array([ 11, 275,  14])
    """
    sizes, n = _sizes_and_total(stratum_sizes, total_sample_size, min_per_stratum)
    stds = check_stds(stratum_stds, sizes.shape[0])
    return rounded_allocation(n, sizes * stds, sizes, min_per_stratum)


@keyword_only_after(2)
@validate_params(_ALLOCATION, prefer_skip_nested_validation=True)
def proportional_allocation(total_sample_size, stratum_sizes, *, min_per_stratum=1):
    """Proportional allocation ``n_h`` proportional to ``N_h``, rounded as Neyman's.

    Parameters
    ----------
    total_sample_size, stratum_sizes, min_per_stratum
        ``n``, ``N_h`` and the lower bound on each ``n_h`` (default 1), as in
        :func:`neyman_allocation`.

    Returns
    -------
    sample_sizes : ndarray of int64 of shape (H,)

    See Also
    --------
    optimal_allocation, neyman_allocation

    Examples
    --------
    >>> from sklearn_icml.privacy import proportional_allocation
    >>> proportional_allocation(300, [20000, 20000, 1000])
    array([147, 146,   7])
    """
    sizes, n = _sizes_and_total(stratum_sizes, total_sample_size, min_per_stratum)
    return rounded_allocation(n, sizes.astype(np.float64), sizes, min_per_stratum)


def equal_allocation(total, sizes, n_min):
    return rounded_allocation(total, np.ones(sizes.shape[0]), sizes, n_min)
