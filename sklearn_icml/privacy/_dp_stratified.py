"""Privacy-aware optimal stratified sampling for differentially private mean estimation.

Chen, Pasupathy & Awan, "Optimal Survey Design for Private Mean Estimation", ICML 2025.
Each stratum ``h`` is sampled without replacement (``n_h`` of ``N_h``) and releases its
sample sum plus noise; sampling amplifies privacy, so the noise of a stratum sampled at rate
``r_h`` is calibrated to the nominal budget ``eps_h = log(1 + (exp(eps) - 1) / r_h)`` and
every individual ends with the same final guarantee ``eps``. The design minimises the
variance of the private stratified mean over integer sample sizes with ``sum n_h = n``.
"""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._allocation_search import (
    exchange_repair,
    greedy_allocation,
    threshold_allocation,
)
from ._mechanisms import (
    MECHANISMS,
    _discrete_laplace_draw,
    _rng,
)

_EXPM1_LIMIT = 700.0  # expm1 overflows just above 709


# --------------------------------------------------------------------------- validation


def _check_epsilon(epsilon):
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise ValueError(f"epsilon must be a finite number > 0; got {epsilon!r} instead.")
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0; got {epsilon!r} instead.")
    return float(epsilon)


def _check_mechanism(mechanism):
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}; got {mechanism!r} instead.")
    return mechanism


def _range_bounds(data_range):
    """(lower, upper) from a width ``Delta`` (lower 0) or a ``(lower, upper)`` pair."""
    if isinstance(data_range, numbers.Real) and not isinstance(data_range, bool):
        lo, hi = 0.0, data_range
    else:
        try:
            lo, hi = data_range
        except (TypeError, ValueError):
            raise ValueError(
                "data_range must be a width > 0 or a (lower, upper) pair; got "
                f"{data_range!r} instead."
            ) from None
    try:
        lo, hi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise ValueError(
            f"data_range must hold numbers; got {data_range!r} instead."
        ) from None
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise ValueError(
            "data_range must be finite with upper > lower (a width > 0); got "
            f"{data_range!r} instead."
        )
    return lo, hi


def _check_range(data_range, mechanism):
    """Width ``Delta`` of the data range, checked against the mechanism."""
    lo, hi = _range_bounds(data_range)
    width = hi - lo
    if mechanism in ("dlap", "tulap") and not (lo == round(lo) and hi == round(hi)):
        raise ValueError(
            f"mechanism={mechanism!r} needs integer data in a range with integer ends; got "
            f"data_range={data_range!r} instead."
        )
    if mechanism == "tulap" and width != 1:
        raise ValueError(
            "mechanism='tulap' releases counts of 0/1 data, so the data range must have "
            f"width 1; got data_range={data_range!r} (width {width!r}) instead."
        )
    return width


def _check_sizes(stratum_sizes):
    arr = np.asarray(stratum_sizes)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(
            f"stratum_sizes must be a non-empty 1-D array; got shape {arr.shape} instead."
        )
    if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
        raise ValueError(f"stratum_sizes must hold integers; got dtype {arr.dtype} instead.")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(
                f"stratum_sizes must hold whole numbers; got {stratum_sizes!r} instead."
            )
    arr = arr.astype(np.int64)
    if np.any(arr < 1):
        raise ValueError(
            f"stratum_sizes must be positive integers; got {stratum_sizes!r} instead."
        )
    return arr


def _check_stds(stratum_stds, n_strata):
    arr = np.asarray(stratum_stds)
    if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
        raise ValueError(f"stratum_stds must be numeric; got dtype {arr.dtype} instead.")
    arr = arr.astype(np.float64)
    if arr.shape != (n_strata,):
        raise ValueError(
            f"stratum_stds must have one value per stratum ({n_strata}); got shape "
            f"{arr.shape} instead."
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(
            f"stratum_stds must be finite and >= 0; got {stratum_stds!r} instead."
        )
    return arr


def _check_min(min_per_stratum):
    if isinstance(min_per_stratum, bool) or not isinstance(min_per_stratum, numbers.Integral):
        raise ValueError(
            f"min_per_stratum must be an integer >= 1; got {min_per_stratum!r} instead."
        )
    if min_per_stratum < 1:
        raise ValueError(
            "min_per_stratum must be >= 1 (a stratum with no sample would need an infinite "
            f"nominal budget); got {min_per_stratum!r} instead."
        )
    return int(min_per_stratum)


def _check_total(total_sample_size, sizes, n_min):
    if isinstance(total_sample_size, bool) or not isinstance(
        total_sample_size, numbers.Integral
    ):
        raise ValueError(
            f"total_sample_size must be a positive integer; got {total_sample_size!r} instead."
        )
    n = int(total_sample_size)
    if n < 1:
        raise ValueError(
            f"total_sample_size must be a positive integer; got {total_sample_size!r} instead."
        )
    if np.any(sizes < n_min):
        bad = int(np.flatnonzero(sizes < n_min)[0])
        raise ValueError(
            f"stratum {bad} has N_h = {sizes[bad]} < min_per_stratum = {n_min}; every stratum "
            "must be able to give min_per_stratum units."
        )
    if n > sizes.sum():
        raise ValueError(
            f"total_sample_size must be <= the population size sum(N_h) = {sizes.sum()}; got "
            f"{n} instead."
        )
    if n < n_min * sizes.shape[0]:
        raise ValueError(
            f"total_sample_size must be >= n_strata * min_per_stratum = "
            f"{n_min * sizes.shape[0]}; got {n} instead."
        )
    return n


# --------------------------------------------------------------------------- formulas


def _nominal(eps, n, N):
    """eps_h for ``n`` of ``N`` sampled (float arrays), stable for tiny and huge eps."""
    if eps <= _EXPM1_LIMIT:
        return np.log1p(np.expm1(eps) * (N / n))
    return eps + np.log(N / n) + np.log1p(-np.exp(-eps) * (1.0 - n / N))


def _variance_on_sum(e, mechanism, width):
    """V_M(e): variance of the noise added to the sum (array ``e``)."""
    if mechanism == "laplace":
        return 2.0 * width**2 / e**2
    rate = e / width  # -log(beta)
    with np.errstate(over="ignore"):
        small = 0.5 / np.sinh(np.minimum(rate, 1.0) / 2.0) ** 2  # no cancellation at small e
        beta = np.exp(-rate)
        large = 2.0 * beta / (-np.expm1(-rate)) ** 2
    var = np.where(rate < 1.0, small, large)
    return var + 1.0 / 12.0 if mechanism == "tulap" else var


def nominal_epsilon(epsilon, sampling_rate):
    """Nominal budget that sampling at ``sampling_rate`` amplifies down to ``epsilon``.

    ``eps_h = log(1 + (exp(epsilon) - 1) / r)``: an ``eps_h``-DP mechanism run on a simple
    random sample without replacement drawn at rate ``r`` is ``epsilon``-DP (Balle, Barthe
    & Gaboardi 2018, tight under substitution of one record).

    Parameters
    ----------
    epsilon : float
        Final privacy budget > 0.
    sampling_rate : float or array-like
        Rates ``n_h / N_h`` in (0, 1].

    Returns
    -------
    nominal : float or ndarray
        ``>= epsilon``, equal at rate 1, decreasing in the rate.

    See Also
    --------
    amplified_epsilon : the inverse map.

    References
    ----------
    .. [1] Y.-W. Chen, R. Pasupathy, J. A. Awan, "Optimal Survey Design for Private Mean
       Estimation", ICML 2025, arXiv:2501.18121.
    .. [2] B. Balle, G. Barthe, M. Gaboardi, "Privacy amplification by subsampling: tight
       analyses via couplings and divergences", NeurIPS 2018.

    Examples
    --------
    >>> from sklearn_icml.privacy import nominal_epsilon
    >>> print(round(float(nominal_epsilon(1.0, 0.01)), 4))
    5.1523
    >>> float(nominal_epsilon(1.0, 1.0))
    1.0
    """
    eps = _check_epsilon(epsilon)
    rate = np.asarray(sampling_rate, dtype=np.float64)
    if not np.all(np.isfinite(rate)) or np.any(rate <= 0) or np.any(rate > 1):
        raise ValueError(f"sampling_rate must lie in (0, 1]; got {sampling_rate!r} instead.")
    out = _nominal(eps, rate, np.ones_like(rate))
    return out[()] if out.ndim == 0 else out


def amplified_epsilon(nominal_eps, sampling_rate):
    """Final budget of an ``nominal_eps``-DP mechanism run on an SRSWOR at ``sampling_rate``.

    ``log(1 + r (exp(nominal_eps) - 1))``; the inverse of :func:`nominal_epsilon`.

    Parameters
    ----------
    nominal_eps : float or array-like
        Budget(s) the noise is calibrated to, > 0.
    sampling_rate : float or array-like
        Rates in (0, 1].

    Returns
    -------
    epsilon : float or ndarray

    See Also
    --------
    nominal_epsilon

    Examples
    --------
    >>> from sklearn_icml.privacy import amplified_epsilon, nominal_epsilon
    >>> print(round(float(amplified_epsilon(nominal_epsilon(0.5, 0.2), 0.2)), 12))
    0.5
    """
    e0 = np.asarray(nominal_eps, dtype=np.float64)
    if not np.all(np.isfinite(e0)) or np.any(e0 <= 0):
        raise ValueError(f"nominal_eps must be finite and > 0; got {nominal_eps!r} instead.")
    rate = np.asarray(sampling_rate, dtype=np.float64)
    if not np.all(np.isfinite(rate)) or np.any(rate <= 0) or np.any(rate > 1):
        raise ValueError(f"sampling_rate must lie in (0, 1]; got {sampling_rate!r} instead.")
    with np.errstate(over="ignore"):
        small = np.log1p(rate * np.expm1(np.minimum(e0, _EXPM1_LIMIT)))
        large = e0 + np.log(rate) + np.log1p((1.0 - rate) * np.exp(-e0) / rate)
    out = np.where(e0 <= _EXPM1_LIMIT, small, large)
    return out[()] if out.ndim == 0 else out


def mechanism_variance(epsilon, mechanism="laplace", data_range=1.0):
    """Variance ``V_M(e)`` of a mechanism's noise on the sum scale.

    Parameters
    ----------
    epsilon : float or array-like
        Budget(s) ``e`` > 0 the noise is calibrated to.
    mechanism : {"laplace", "dlap", "tulap"}, default="laplace"
        ``laplace``: ``2 Delta**2 / e**2``; ``dlap``: ``1 / (2 sinh(e / (2 Delta))**2)``;
        ``tulap`` (untruncated, ``Delta = 1``): the DLap value plus ``1/12``.
    data_range : float or (float, float), default=1.0
        Width ``Delta`` of the data range (the sensitivity of a sum), or its two ends.

    Returns
    -------
    variance : float or ndarray

    See Also
    --------
    design_variance

    Examples
    --------
    >>> from sklearn_icml.privacy import mechanism_variance
    >>> float(mechanism_variance(2.0))
    0.5
    >>> round(float(mechanism_variance(1.0, "tulap") - mechanism_variance(1.0, "dlap")), 6)
    0.083333
    """
    _check_mechanism(mechanism)
    width = _check_range(data_range, mechanism)
    e = np.asarray(epsilon, dtype=np.float64)
    if not np.all(np.isfinite(e)) or np.any(e <= 0):
        raise ValueError(f"epsilon must be finite and > 0; got {epsilon!r} instead.")
    out = _variance_on_sum(e, mechanism, width)
    return out[()] if np.ndim(out) == 0 else out


class _Design:
    """The objective ``sum_h g_h(n_h)`` of a stratified design, evaluated per stratum."""

    def __init__(self, sizes, stds, epsilon, mechanism, width):
        self.sizes = sizes.astype(np.float64)
        self.w2 = (self.sizes / self.sizes.sum()) ** 2
        self.s2 = np.asarray(stds, dtype=np.float64) ** 2
        self.epsilon = epsilon
        self.mechanism = mechanism
        self.width = width
        self.c = np.expm1(epsilon) * self.sizes if epsilon <= _EXPM1_LIMIT else None

    def nominal(self, idx, x):
        if self.c is not None:
            return np.log1p(self.c[idx] / x)
        return _nominal(self.epsilon, x, self.sizes[idx])

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

    def noise_free_gain(self, idx, x):
        x = x.astype(np.float64)
        return self.w2[idx] * self.s2[idx] / (x * (x + 1.0))


def _design(stratum_sizes, stratum_stds, epsilon, mechanism, data_range):
    sizes = _check_sizes(stratum_sizes)
    stds = _check_stds(stratum_stds, sizes.shape[0])
    eps = _check_epsilon(epsilon)
    _check_mechanism(mechanism)
    width = _check_range(data_range, mechanism)
    return _Design(sizes, stds, eps, mechanism, width)


def design_variance(
    sample_sizes,
    stratum_sizes,
    stratum_stds,
    epsilon,
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
    x = _check_sizes(sample_sizes)
    if x.shape != design.sizes.shape:
        raise ValueError(
            f"sample_sizes must have one value per stratum ({design.sizes.shape[0]}); got "
            f"shape {x.shape} instead."
        )
    if np.any(x > design.sizes):
        raise ValueError("sample_sizes must satisfy n_h <= N_h in every stratum.")
    sampling, noise = design.components(x)
    if return_components:
        return sampling, noise
    return float(sampling.sum() + noise.sum())


def optimal_allocation(
    total_sample_size,
    stratum_sizes,
    stratum_stds,
    epsilon,
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
    The paper proves strong convexity of the objective and gives an efficient exact
    algorithm that could not be retrieved; this implementation is the classical exact
    method for separable convex resource allocation (Gross 1956; Ibaraki & Katoh 1988),
    with the warm start done by bisection on the integer threshold rather than by the
    continuous relaxation the spec proposes (no per-stratum root finding needed).

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
    sizes = design.sizes.astype(np.int64)
    n_min = _check_min(min_per_stratum)
    n = _check_total(total_sample_size, sizes, n_min)
    return _solve(design, n, n_min, warm_start)


def _solve(design, n, n_min, warm_start=True, gain=None):
    gain = design.gain if gain is None else gain
    upper = design.sizes.astype(np.int64)
    lower = np.full(upper.shape[0], n_min, dtype=np.int64)
    if warm_start:
        x = threshold_allocation(gain, lower, upper, n)
        x, _ = exchange_repair(gain, x, lower, upper)
    else:
        x = greedy_allocation(gain, lower, upper, n)
    return x


def _rounded_allocation(total, weights, sizes, n_min):
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


def neyman_allocation(total_sample_size, stratum_sizes, stratum_stds, min_per_stratum=1):
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
    sizes = _check_sizes(stratum_sizes)
    stds = _check_stds(stratum_stds, sizes.shape[0])
    n_min = _check_min(min_per_stratum)
    n = _check_total(total_sample_size, sizes, n_min)
    return _rounded_allocation(n, sizes * stds, sizes, n_min)


def proportional_allocation(total_sample_size, stratum_sizes, min_per_stratum=1):
    """Proportional allocation ``n_h`` proportional to ``N_h``, rounded as Neyman's.

    Parameters
    ----------
    total_sample_size : int
        Total sample size ``n``.
    stratum_sizes : array-like of int of shape (H,)
        Stratum sizes ``N_h``.
    min_per_stratum : int, default=1
        Lower bound on each ``n_h``.

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
    sizes = _check_sizes(stratum_sizes)
    n_min = _check_min(min_per_stratum)
    n = _check_total(total_sample_size, sizes, n_min)
    return _rounded_allocation(n, sizes.astype(np.float64), sizes, n_min)


def _equal_allocation(total, sizes, n_min):
    return _rounded_allocation(total, np.ones(sizes.shape[0]), sizes, n_min)


# --------------------------------------------------------------------------- the sampler


def _encode_column(col, j):
    """Sorted categories and integer codes of one label column."""
    if col.dtype.kind in "biuf":
        cats, codes = np.unique(col, return_inverse=True)
        return cats, codes.astype(np.int64)
    if col.dtype.kind in "US":
        cats, codes = np.unique(col.astype(str), return_inverse=True)
        return cats, codes.astype(np.int64)
    values = col.tolist()
    kinds = set()
    for v in values:
        if isinstance(v, str):
            kinds.add("str")
        elif isinstance(v, numbers.Real):
            kinds.add("num")
        else:
            raise TypeError(
                f"X[:, {j}] holds a label of type {type(v).__name__}; a group label "
                f"argument must be a string or a number, got {v!r} instead."
            )
    if kinds == {"num"}:
        cats, codes = np.unique(np.asarray(values, dtype=np.float64), return_inverse=True)
    elif kinds == {"str"}:
        cats, codes = np.unique(np.asarray(values, dtype=str), return_inverse=True)
    else:
        raise TypeError(
            f"X[:, {j}] mixes string and numeric labels; use one type per column."
        )
    return cats, codes.astype(np.int64)


def _codes_in(col, cats):
    """Codes of ``col`` in the fitted categories ``cats``; -1 for unseen labels."""
    valid = np.ones(col.shape[0], dtype=bool)
    if cats.dtype.kind == "U":
        if col.dtype.kind in "US":
            vals = col.astype(str)
        elif col.dtype == object:
            valid = np.array([isinstance(v, str) for v in col.tolist()], dtype=bool)
            vals = np.where(valid, col, "").astype(str)
        else:
            return np.full(col.shape[0], -1, dtype=np.int64)
    else:
        try:
            vals = np.asarray(col, dtype=np.float64)
        except (TypeError, ValueError):
            return np.full(col.shape[0], -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(cats, vals), cats.shape[0] - 1)
    return np.where(valid & (cats[pos] == vals), pos, -1).astype(np.int64)


class DPStratifiedSampler(BaseEstimator):
    """Differentially private stratified sampling with the variance-optimal design.

    Every stratum ``h`` of a population with public sizes ``N_h`` is sampled without
    replacement (``n_h`` units) and releases its sample sum plus noise calibrated to the
    *nominal* budget ``eps_h = log(1 + (exp(epsilon) - 1) N_h / n_h)``: the sampling
    amplifies it back to ``epsilon`` for every individual (parallel composition across the
    disjoint strata). The sample sizes minimise the variance of the resulting unbiased
    estimate of the population mean (:func:`optimal_allocation`) unless another
    ``allocation`` is asked for.

    Parameters
    ----------
    epsilon : float, default=1.0
        Final privacy budget of one release, the same for every individual.
    mechanism : {"laplace", "dlap", "tulap"}, default="laplace"
        Noise added to each stratum's sample sum: Laplace (real data), discrete Laplace
        (integer data and range) or untruncated Tulap (0/1 data, ``data_range`` of width 1).
    total_sample_size : int or float, default=100
        Total sample size ``n``; a float in (0, 1] is a fraction of the population
        (rounded half up), ``1.0`` being a census.
    data_range : (float, float), default=(0.0, 1.0)
        Values are clipped into ``[lower, upper]`` before summing (with a warning giving
        the count); the width ``upper - lower`` is the sensitivity of a stratum sum.
    allocation : {"optimal", "neyman", "proportional", "equal"}, default="optimal"
        How ``n`` is split between strata. ``"optimal"`` and ``"neyman"`` need
        ``stratum_stds``.
    min_per_stratum : int, default=1
        Least sample size of a stratum (2 if within-stratum variances are wanted too).
    stratum_stds : array-like of shape (n_strata,), dict or None, default=None
        Public (prior or pilot) standard deviations of the strata, in the order of
        ``classes_`` or as ``{label: std}``. They are never estimated from the private data.
    random_state : int, RandomState instance or None, default=None
        Drives the samples and the noise. The generator is created in ``fit``/``allocate``
        and then advances, so two releases never reuse a noise draw; refit to replay.

    Attributes
    ----------
    classes_ : ndarray of shape (n_strata,) or (n_strata, n_features_in_)
        Stratum labels (rows of label combinations for several label columns).
    n_strata_ : int
        Number of strata ``H``.
    stratum_sizes_ : ndarray of int64 of shape (n_strata,)
        ``N_h``.
    stratum_stds_ : ndarray of shape (n_strata,) or None
        ``S_h`` used for the design (None for proportional/equal without stds).
    weights_ : ndarray of shape (n_strata,)
        ``W_h = N_h / N``.
    total_sample_size_ : int
        ``n`` after resolving a fraction.
    sample_sizes_ : ndarray of int64 of shape (n_strata,)
        ``n_h``.
    sampling_rates_ : ndarray of shape (n_strata,)
        ``n_h / N_h``.
    nominal_epsilons_ : ndarray of shape (n_strata,)
        Budgets ``eps_h`` the noise of each stratum is calibrated to.
    noise_scales_ : ndarray of shape (n_strata,)
        Laplace scale ``Delta / eps_h`` on the sum, or the discrete Laplace ``beta``
        (``exp(-eps_h / Delta)``; Tulap: ``exp(-eps_h)``).
    expected_variance_ : float or None
        Design variance of the estimate (None without ``stratum_stds``).
    variance_components_ : ndarray of shape (n_strata, 2) or None
        Per stratum, the sampling and the noise parts of ``expected_variance_``.
    last_sample_indices_ : ndarray of int64
        Row indices drawn by the last ``sample`` or ``estimate_mean`` call.
    n_features_in_ : int
        Number of label columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names, when ``fit`` got a DataFrame with string column names.

    See Also
    --------
    optimal_allocation : the design alone.
    design_variance : the variance of any design.

    Notes
    -----
    Each call of :meth:`estimate_mean` is one ``epsilon``-DP release; ``k`` releases on
    the same population cost ``k * epsilon`` (sequential composition). The sample must
    stay secret: amplification relies on nobody knowing who was drawn. The noise comes
    from numpy's floating point samplers, which are not side-channel safe (Mironov 2012);
    use ``opendp`` samplers for production releases.

    References
    ----------
    .. [1] Y.-W. Chen, R. Pasupathy, J. A. Awan, "Optimal Survey Design for Private Mean
       Estimation", ICML 2025, arXiv:2501.18121.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import DPStratifiedSampler
    >>> groups = np.repeat(["a", "b", "c"], [20000, 20000, 1000])
    >>> sampler = DPStratifiedSampler(epsilon=1.0, total_sample_size=300,
    ...                               stratum_stds=[0.02, 0.5, 0.5], random_state=0)
    >>> sampler.fit(groups).sample_sizes_
    array([ 28, 259,  13])
    >>> print(f"{sampler.expected_variance_:.4e}")
    2.5398e-04
    >>> y = np.random.default_rng(0).uniform(size=groups.shape[0])
    >>> est = sampler.estimate_mean(y, groups)
    >>> bool(abs(est - y.mean()) < 0.1)
    True
    """

    _parameter_constraints = {
        "epsilon": [Interval(numbers.Real, 0, None, closed="neither")],
        "mechanism": [StrOptions(set(MECHANISMS))],
        "total_sample_size": [
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0, 1, closed="right"),
        ],
        "data_range": [tuple, list],
        "allocation": [StrOptions({"optimal", "neyman", "proportional", "equal"})],
        "min_per_stratum": [Interval(numbers.Integral, 1, None, closed="left")],
        "stratum_stds": ["array-like", dict, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        mechanism="laplace",
        total_sample_size=100,
        data_range=(0.0, 1.0),
        allocation="optimal",
        min_per_stratum=1,
        stratum_stds=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.mechanism = mechanism
        self.total_sample_size = total_sample_size
        self.data_range = data_range
        self.allocation = allocation
        self.min_per_stratum = min_per_stratum
        self.stratum_stds = stratum_stds
        self.random_state = random_state

    # ------------------------------------------------------------------ design

    def allocate(self, stratum_sizes, stratum_stds=None):
        """Design the survey from the stratum sizes alone (no labels).

        Parameters
        ----------
        stratum_sizes : array-like of int of shape (n_strata,)
            Public sizes ``N_h``; the strata are labelled ``0 .. n_strata - 1``.
        stratum_stds : array-like of shape (n_strata,), default=None
            Overrides the ``stratum_stds`` parameter.

        Returns
        -------
        self : DPStratifiedSampler
            With the design attributes set; ``sample`` then takes integer labels.
        """
        self._validate_params()
        sizes = _check_sizes(stratum_sizes)
        self.classes_ = np.arange(sizes.shape[0])
        self._label_categories = None
        stds = self.stratum_stds if stratum_stds is None else stratum_stds
        self._allocate(sizes, stds)
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(self, attr):
                delattr(self, attr)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Read the strata from the population's labels and design the survey.

        Parameters
        ----------
        X : array-like of shape (N,) or (N, n_label_columns)
            Public stratum label of every unit of the population (the sampling frame).
            With several columns, each distinct row (say region x age band) is a stratum.
        y : None
            Ignored. The design never looks at the private values; pass ``stratum_stds``.

        Returns
        -------
        self : DPStratifiedSampler
            The fitted sampler.
        """
        labels = self._validate_labels(X, reset=True)
        codes = np.empty((labels.shape[0], labels.shape[1]), dtype=np.int64)
        categories = []
        for j in range(labels.shape[1]):
            cats, codes[:, j] = _encode_column(labels[:, j], j)
            categories.append(cats)
        class_codes, inverse, counts = np.unique(
            codes, axis=0, return_inverse=True, return_counts=True
        )
        self._label_categories = categories
        self._class_codes = class_codes
        if labels.shape[1] == 1:
            self.classes_ = categories[0][class_codes[:, 0]]
        else:
            cols = [categories[j][class_codes[:, j]] for j in range(labels.shape[1])]
            same = len({c.dtype for c in cols}) == 1
            self.classes_ = np.column_stack(cols) if same else np.array(
                [tuple(row) for row in zip(*cols)], dtype=object
            ).reshape(len(class_codes), -1)
        self._allocate(counts.astype(np.int64), self.stratum_stds)
        return self

    def _stds_in_class_order(self, stds):
        if not isinstance(stds, dict):
            return _check_stds(stds, self.classes_.shape[0])
        keys = (
            self.classes_.tolist()
            if self.classes_.ndim == 1
            else [tuple(row) for row in self.classes_.tolist()]
        )
        missing = [k for k in keys if k not in stds]
        if missing:
            raise ValueError(
                f"stratum_stds has no entry for the strata {missing[:5]!r}; give one std "
                "per stratum label."
            )
        return _check_stds([stds[k] for k in keys], len(keys))

    def _allocate(self, sizes, stds):
        mechanism = _check_mechanism(self.mechanism)
        eps = _check_epsilon(self.epsilon)
        lo, hi = _range_bounds(self.data_range)
        width = _check_range((lo, hi), mechanism)
        n_min = _check_min(self.min_per_stratum)
        total = self.total_sample_size
        if isinstance(total, numbers.Real) and not isinstance(total, numbers.Integral):
            total = int(np.floor(total * sizes.sum() + 0.5))
            if total < 1:
                raise ValueError(
                    f"total_sample_size={self.total_sample_size!r} of a population of "
                    f"{sizes.sum()} rounds to 0 units; ask for a larger fraction."
                )
        n = _check_total(total, sizes, n_min)
        if stds is None:
            if self.allocation in ("optimal", "neyman"):
                raise ValueError(
                    f"allocation={self.allocation!r} needs stratum_stds (public prior or "
                    "pilot standard deviations); they are never estimated from the private "
                    "data. Pass stratum_stds, or use allocation='proportional' or 'equal'."
                )
            std_arr = None
        else:
            std_arr = self._stds_in_class_order(stds)

        if self.allocation == "optimal":
            design = _Design(sizes, std_arr, eps, mechanism, width)
            x = _solve(design, n, n_min)
        elif self.allocation == "neyman":
            x = _rounded_allocation(n, sizes * std_arr, sizes, n_min)
        elif self.allocation == "proportional":
            x = _rounded_allocation(n, sizes.astype(np.float64), sizes, n_min)
        else:
            x = _equal_allocation(n, sizes, n_min)

        self._range = (lo, hi)
        self._width = width
        self.n_strata_ = int(sizes.shape[0])
        self.stratum_sizes_ = sizes
        self.stratum_stds_ = std_arr
        self.weights_ = sizes / sizes.sum()
        self.total_sample_size_ = n
        self.sample_sizes_ = x
        self.sampling_rates_ = x / sizes
        self.nominal_epsilons_ = _nominal(eps, x.astype(np.float64), sizes.astype(np.float64))
        if mechanism == "laplace":
            self.noise_scales_ = width / self.nominal_epsilons_
        else:
            self.noise_scales_ = np.exp(-self.nominal_epsilons_ / width)
        if std_arr is None:
            self.expected_variance_ = None
            self.variance_components_ = None
        else:
            design = _Design(sizes, std_arr, eps, mechanism, width)
            sampling, noise = design.components(x)
            self.variance_components_ = np.column_stack([sampling, noise])
            self.expected_variance_ = float(sampling.sum() + noise.sum())
        # one generator per fit, seeded from random_state, then advanced by every draw
        seed = _rng(self.random_state).randint(np.iinfo(np.int32).max, size=4)
        self._generator = np.random.default_rng(seed)

    def expected_variance(self):
        """Design variance of :meth:`estimate_mean` (requires ``stratum_stds``).

        Returns
        -------
        variance : float
        """
        check_is_fitted(self, "sample_sizes_")
        if self.expected_variance_ is None:
            raise ValueError(
                "the variance needs stratum_stds; the sampler was designed without them."
            )
        return self.expected_variance_

    # ------------------------------------------------------------------ labels

    def _validate_labels(self, X, *, reset):
        if hasattr(X, "to_frame") and getattr(X, "ndim", 2) == 1:  # pandas Series
            X = X.to_frame()
        elif not hasattr(X, "iloc") and not hasattr(X, "tocsr") and np.ndim(X) == 1:
            X = np.asarray(X).reshape(-1, 1)
        return validate_data(
            self, X, reset=reset, dtype=None, ensure_all_finite=True, ensure_min_samples=1
        )

    def _stratum_index(self, X):
        """Index of each unit's stratum in ``classes_``; checks the sizes against fit."""
        check_is_fitted(self, "sample_sizes_")
        if self._label_categories is None:  # designed by allocate(): labels 0..H-1
            labels = column_or_1d(X)
            if labels.dtype.kind not in "iuf":
                raise ValueError(
                    "the sampler was designed with allocate(); groups must be integer "
                    f"stratum indices 0..{self.n_strata_ - 1}; got dtype {labels.dtype}."
                )
            index = np.full(labels.shape[0], -1, dtype=np.int64)
            ok = (labels == np.round(labels)) & (labels >= 0) & (labels < self.n_strata_)
            index[ok] = labels[ok].astype(np.int64)
        else:
            labels = self._validate_labels(X, reset=False)
            codes = np.column_stack(
                [_codes_in(labels[:, j], c) for j, c in enumerate(self._label_categories)]
            )
            unseen = np.any(codes < 0, axis=1)
            index = np.full(labels.shape[0], -1, dtype=np.int64)
            if labels.shape[1] == 1:
                index[~unseen] = codes[~unseen, 0]
            else:
                lookup = {tuple(r): i for i, r in enumerate(self._class_codes.tolist())}
                for i in np.flatnonzero(~unseen):
                    index[i] = lookup.get(tuple(codes[i].tolist()), -1)
        if np.any(index < 0):
            bad = int(np.flatnonzero(index < 0)[0])
            raise ValueError(
                f"groups holds a label at row {bad} that was not seen in fit; every unit must "
                "belong to one of the fitted strata."
            )
        counts = np.bincount(index, minlength=self.n_strata_)
        if not np.array_equal(counts, self.stratum_sizes_):
            bad = int(np.flatnonzero(counts != self.stratum_sizes_)[0])
            raise ValueError(
                f"groups has {counts[bad]} units in stratum {self.classes_[bad]!r} but the "
                f"design was made for N_h = {self.stratum_sizes_[bad]}; pass the same "
                "population frame as in fit (the privacy calibration depends on N_h)."
            )
        return index

    # ------------------------------------------------------------------ sampling

    def _draw(self, index):
        """SRSWOR of ``sample_sizes_[h]`` units in every stratum; sorted row indices."""
        order = np.argsort(index, kind="stable")
        starts = np.concatenate([[0], np.cumsum(self.stratum_sizes_)[:-1]])
        gen = self._generator
        picked = [
            order[start + gen.choice(size, n_h, replace=False)]
            for start, size, n_h in zip(starts, self.stratum_sizes_, self.sample_sizes_)
        ]
        indices = np.sort(np.concatenate(picked))
        self.last_sample_indices_ = indices
        return indices

    def sample(self, X):
        """Draw the stratified simple random sample without replacement.

        Parameters
        ----------
        X : array-like of shape (N,) or (N, n_label_columns)
            The population's stratum labels, as given to ``fit``.

        Returns
        -------
        indices : ndarray of int64 of shape (total_sample_size_,)
            Sorted row indices of the sampled units; exactly ``sample_sizes_[h]`` per
            stratum. Keep them secret: the amplification assumes nobody knows who was drawn.
        """
        return self._draw(self._stratum_index(X))

    def estimate_mean(self, y, X, return_details=False):
        """One ``epsilon``-DP release of the population mean.

        Draws a sample, clips its values into ``data_range`` (warning with the count),
        adds noise calibrated to ``nominal_epsilons_`` to every stratum's sample sum, and
        combines the noisy stratum means with the weights ``W_h``.

        Parameters
        ----------
        y : array-like of shape (N,)
            Values of the whole population (only the sampled ones are read). Integers for
            ``mechanism="dlap"``, 0/1 for ``"tulap"``.
        X : array-like of shape (N,) or (N, n_label_columns)
            The population's stratum labels, as given to ``fit``.
        return_details : bool, default=False
            Also return the per-stratum pieces (for simulation; they are not private).

        Returns
        -------
        estimate : float
            Unbiased for the mean of the clipped population values.
        details : dict
            Only if ``return_details``: ``estimate``, ``stratum_means`` (noisy),
            ``noise`` (on the sums), ``sample_indices`` and ``n_clipped``.
        """
        index = self._stratum_index(X)
        y = column_or_1d(y, warn=True)
        if y.dtype.kind not in "biuf":
            raise ValueError(f"y must be numeric; got dtype {y.dtype} instead.")
        y = y.astype(np.float64)
        if y.shape[0] != index.shape[0]:
            raise ValueError(
                f"y has {y.shape[0]} values but groups has {index.shape[0]} units; they must "
                "describe the same population."
            )
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity; every value must be finite.")
        if self.mechanism in ("dlap", "tulap") and not np.all(y == np.round(y)):
            raise ValueError(
                f"mechanism={self.mechanism!r} needs integer data; y holds non-integer "
                "values. Use mechanism='laplace' for real-valued data."
            )
        rows = self._draw(index)
        lo, hi = self._range
        values = y[rows]
        n_clipped = int(np.count_nonzero((values < lo) | (values > hi)))
        if n_clipped:
            warnings.warn(
                f"{n_clipped} sampled values of y fell outside data_range={self._range!r} "
                "and were clipped into it (needed for the privacy guarantee).",
                UserWarning,
                stacklevel=2,
            )
        values = np.clip(values, lo, hi)
        sums = np.bincount(index[rows], weights=values, minlength=self.n_strata_)
        noise = self._noise()
        means = (sums + noise) / self.sample_sizes_
        estimate = float(np.dot(self.weights_, means))
        if not return_details:
            return estimate
        return {
            "estimate": estimate,
            "stratum_means": means,
            "noise": noise,
            "sample_indices": rows,
            "n_clipped": n_clipped,
        }

    def _noise(self):
        """One noise draw per stratum, on the sum scale, at the nominal budgets."""
        shape = (self.n_strata_,)
        if self.mechanism == "laplace":
            return self._generator.laplace(0.0, self.noise_scales_, size=shape)
        z = _discrete_laplace_draw(self.noise_scales_, shape, self._generator)
        z = z.astype(np.float64)
        if self.mechanism == "tulap":
            z += self._generator.uniform(-0.5, 0.5, size=shape)
        return z

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        return tags
