"""Privacy amplification by simple random sampling without replacement.

An ``eps_h``-DP mechanism run on a simple random sample without replacement drawn at rate
``r`` is ``log(1 + r (exp(eps_h) - 1))``-DP (Balle, Barthe & Gaboardi 2018, tight under
substitution of one record). Chen, Pasupathy & Awan (ICML 2025) calibrate the noise of each
stratum to the *nominal* budget that this amplification brings back to the final ``eps``.
"""

import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils._param_validation import POSITIVE_REAL, UNIT_INTERVAL_WITHOUT_ZERO
from ._validation import check_positive_values, check_rates

EXPM1_LIMIT = 700.0  # expm1 overflows just above 709
_RATES = ["array-like", UNIT_INTERVAL_WITHOUT_ZERO]


def nominal_budgets(eps, n, N):
    """eps_h for ``n`` of ``N`` sampled (float arrays), stable for tiny and huge eps."""
    if eps <= EXPM1_LIMIT:
        return np.log1p(np.expm1(eps) * (N / n))
    return eps + np.log(N / n) + np.log1p(-np.exp(-eps) * (1.0 - n / N))


@validate_params(
    {
        "epsilon": [POSITIVE_REAL],
        "sampling_rate": _RATES,
    },
    prefer_skip_nested_validation=True,
)
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
    rate = check_rates(sampling_rate)
    out = nominal_budgets(float(epsilon), rate, np.ones_like(rate))
    return out[()] if out.ndim == 0 else out


@validate_params(
    {
        "nominal_eps": ["array-like", POSITIVE_REAL],
        "sampling_rate": _RATES,
    },
    prefer_skip_nested_validation=True,
)
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
    e0 = check_positive_values(nominal_eps, "nominal_eps")
    rate = check_rates(sampling_rate)
    with np.errstate(over="ignore"):
        small = np.log1p(rate * np.expm1(np.minimum(e0, EXPM1_LIMIT)))
        large = e0 + np.log(rate) + np.log1p((1.0 - rate) * np.exp(-e0) / rate)
    out = np.where(e0 <= EXPM1_LIMIT, small, large)
    return out[()] if out.ndim == 0 else out
