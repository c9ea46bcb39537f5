"""Pure epsilon-DP noise mechanisms: Laplace, discrete Laplace and (untruncated) Tulap.

Each mechanism comes as a sampler (``*_mechanism``) and as the exact log density of its
output given the true value (:func:`mechanism_log_density`), so that a privacy guarantee
can be checked as a bound on likelihood ratios rather than taken on trust.

These samplers use numpy's floating point generators. They are right for research and
simulation but are not hardened against floating point side channels (Mironov, 2012);
production releases should use a vetted library such as ``opendp``.
"""

import numbers

import numpy as np
from sklearn.utils import check_random_state

MECHANISMS = ("laplace", "dlap", "tulap")


def _rng(random_state):
    """A numpy RandomState or Generator from ``random_state`` (both draw the same way here)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return check_random_state(random_state)


def _check_epsilon(epsilon, name="epsilon"):
    eps = np.asarray(epsilon, dtype=np.float64)
    if eps.dtype.kind not in "f" or not np.all(np.isfinite(eps)) or np.any(eps <= 0):
        raise ValueError(
            f"{name} must be a finite number > 0 (or an array of them); got {epsilon!r} instead."
        )
    return eps


def _check_sensitivity(sensitivity, *, integer):
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, numbers.Real):
        raise TypeError(f"sensitivity must be a number; got {sensitivity!r} instead.")
    value = float(sensitivity)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"sensitivity must be a finite number > 0; got {sensitivity!r} instead.")
    if integer and value != round(value):
        raise ValueError(
            "sensitivity must be a whole number for the discrete Laplace mechanism (the data "
            f"and their range are integers); got {sensitivity!r} instead."
        )
    return value


def _check_integer_values(value, name):
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric; got dtype {arr.dtype} instead.")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
        raise ValueError(
            f"{name} must hold integers for a discrete mechanism; got non-integer values "
            "instead."
        )
    return arr


def _check_real_values(value, name):
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric; got dtype {arr.dtype} instead.")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity; every value must be finite.")
    return arr


def _discrete_laplace_draw(beta, shape, rng):
    """Z with P(Z = z) proportional to beta**|z|: difference of two i.i.d. geometrics."""
    p = np.broadcast_to(1.0 - beta, shape)
    return rng.geometric(p, size=shape).astype(np.int64) - rng.geometric(p, size=shape)


def _scalar_or_array(out, value, epsilon):
    if np.ndim(value) == 0 and np.ndim(epsilon) == 0:
        return out[()]
    return out


def laplace_mechanism(value, epsilon, *, sensitivity=1.0, random_state=None):
    """Release ``value`` plus Laplace noise of scale ``sensitivity / epsilon``.

    The release is ``epsilon``-DP for any statistic whose sensitivity (the most it can move
    when one record changes) is ``sensitivity``.

    Parameters
    ----------
    value : float or array-like
        The true statistic(s).
    epsilon : float or array-like
        Privacy budget(s) > 0, broadcast against ``value``.
    sensitivity : float, default=1.0
        L1 sensitivity of the statistic.
    random_state : int, RandomState instance, Generator or None, default=None
        Source of the noise. Pass the same RandomState object across calls to get fresh
        noise each time; an int seed reproduces the same draw.

    Returns
    -------
    released : float or ndarray
        ``value + noise``, shaped as ``value`` broadcast with ``epsilon``.

    See Also
    --------
    discrete_laplace_mechanism : integer-valued counterpart.
    mechanism_log_density : exact density of the release, for likelihood-ratio checks.

    Notes
    -----
    Uses numpy's floating point Laplace sampler: fine for research, not side-channel safe
    (Mironov 2012); use ``opendp`` for production releases.

    References
    ----------
    .. [1] C. Dwork, F. McSherry, K. Nissim, A. Smith, "Calibrating noise to sensitivity
       in private data analysis", TCC 2006.
    .. [2] Y.-W. Chen, R. Pasupathy, J. A. Awan, "Optimal Survey Design for Private Mean
       Estimation", ICML 2025, arXiv:2501.18121.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import laplace_mechanism
    >>> draws = laplace_mechanism(np.zeros(100_000), 0.5, random_state=0)
    >>> round(float(draws.var()), 1)  # 2 / 0.5**2
    8.0
    """
    val = _check_real_values(value, "value")
    eps = _check_epsilon(epsilon)
    delta = _check_sensitivity(sensitivity, integer=False)
    rng = _rng(random_state)
    shape = np.broadcast_shapes(val.shape, eps.shape)
    out = val + rng.laplace(0.0, np.broadcast_to(delta / eps, shape), size=shape)
    return _scalar_or_array(out, value, epsilon)


def discrete_laplace_mechanism(value, epsilon, *, sensitivity=1, random_state=None):
    """Release an integer ``value`` plus discrete Laplace noise.

    The noise ``Z`` has ``P(Z = z)`` proportional to ``beta**|z|`` with
    ``beta = exp(-epsilon / sensitivity)``; the release is ``epsilon``-DP for an integer
    statistic of integer sensitivity ``sensitivity`` and stays an integer.

    Parameters
    ----------
    value : int or array-like of int
        The true integer statistic(s) (e.g. a sum of integer data).
    epsilon : float or array-like
        Privacy budget(s) > 0.
    sensitivity : int, default=1
        Integer L1 sensitivity.
    random_state : int, RandomState instance, Generator or None, default=None
        Source of the noise.

    Returns
    -------
    released : int or ndarray of int64

    See Also
    --------
    laplace_mechanism, tulap_mechanism, mechanism_log_density

    Notes
    -----
    ``Z`` is drawn as the difference of two i.i.d. geometric variables with success
    probability ``1 - beta``; its variance is ``2 beta / (1 - beta)**2``. Not side-channel
    safe; see :func:`laplace_mechanism`.

    References
    ----------
    .. [1] A. Ghosh, T. Roughgarden, M. Sundararajan, "Universally utility-maximizing
       privacy mechanisms", STOC 2009.
    .. [2] Y.-W. Chen, R. Pasupathy, J. A. Awan, "Optimal Survey Design for Private Mean
       Estimation", ICML 2025, arXiv:2501.18121.

    Examples
    --------
    >>> from sklearn_icml.privacy import discrete_laplace_mechanism
    >>> out = discrete_laplace_mechanism([10, 20, 30], 1.0, random_state=0)
    >>> out.dtype.kind
    'i'
    """
    val = _check_integer_values(value, "value")
    eps = _check_epsilon(epsilon)
    delta = _check_sensitivity(sensitivity, integer=True)
    rng = _rng(random_state)
    shape = np.broadcast_shapes(val.shape, eps.shape)
    beta = np.exp(-eps / delta)
    out = val.astype(np.int64) + _discrete_laplace_draw(beta, shape, rng)
    return _scalar_or_array(out, value, epsilon)


def _check_truncation(truncation):
    if isinstance(truncation, bool) or not isinstance(truncation, numbers.Real):
        raise TypeError(f"truncation must be a number; got {truncation!r} instead.")
    if truncation != 0:
        raise NotImplementedError(
            "only the untruncated Tulap (truncation=0, pure epsilon-DP) is implemented; a "
            f"truncated Tulap gives (epsilon, delta)-DP with a different variance. Got "
            f"truncation={truncation!r} instead."
        )


def tulap_mechanism(value, epsilon, *, truncation=0.0, random_state=None):
    """Release an integer count plus untruncated Tulap noise ``Z + U``.

    ``Z`` is discrete Laplace with ``beta = exp(-epsilon)`` and ``U ~ Uniform(-1/2, 1/2)``
    independent: the release is continuous, ``epsilon``-DP for a count of sensitivity 1, and
    its CDF is the canonical "uniformly most powerful" test statistic of Awan & Slavkovic.

    Parameters
    ----------
    value : int or array-like of int
        The true count(s) (sum of 0/1 data).
    epsilon : float or array-like
        Privacy budget(s) > 0.
    truncation : float, default=0.0
        Tulap truncation parameter ``q``; only 0 (no truncation) is supported.
    random_state : int, RandomState instance, Generator or None, default=None
        Source of the noise.

    Returns
    -------
    released : float or ndarray

    Raises
    ------
    NotImplementedError
        If ``truncation`` is not 0.

    See Also
    --------
    discrete_laplace_mechanism, mechanism_log_density

    References
    ----------
    .. [1] J. Awan, A. Slavkovic, "Differentially private uniformly most powerful tests for
       binomial data", NeurIPS 2018.
    .. [2] Y.-W. Chen, R. Pasupathy, J. A. Awan, "Optimal Survey Design for Private Mean
       Estimation", ICML 2025, arXiv:2501.18121.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import tulap_mechanism
    >>> out = tulap_mechanism(np.full(200_000, 7), 1.0, random_state=0)
    >>> round(float(out.mean()), 1), round(float(out.var()), 1)  # 2b/(1-b)^2 + 1/12 = 1.925
    (7.0, 1.9)
    """
    _check_truncation(truncation)
    val = _check_integer_values(value, "value")
    eps = _check_epsilon(epsilon)
    rng = _rng(random_state)
    shape = np.broadcast_shapes(val.shape, eps.shape)
    beta = np.exp(-eps)
    z = _discrete_laplace_draw(beta, shape, rng)
    out = val + z + rng.uniform(-0.5, 0.5, size=shape)
    return _scalar_or_array(out, value, epsilon)


def mechanism_log_density(output, value, epsilon, mechanism="laplace", sensitivity=1.0):
    """Exact log density (or log pmf) of a mechanism's release given the true value.

    Useful to check differential privacy directly: for neighbouring true values ``v`` and
    ``v + sensitivity`` the difference of log densities at any output is at most
    ``epsilon`` in absolute value.

    Parameters
    ----------
    output : float or array-like
        Released value(s).
    value : float or array-like
        True statistic(s).
    epsilon : float or array-like
        Privacy budget(s) > 0.
    mechanism : {"laplace", "dlap", "tulap"}, default="laplace"
        ``"laplace"`` and ``"tulap"`` return a log density with respect to Lebesgue
        measure, ``"dlap"`` a log probability mass (``-inf`` off the integers).
    sensitivity : float, default=1.0
        Sensitivity used to calibrate the noise (must be 1 for ``"tulap"``, an integer for
        ``"dlap"``).

    Returns
    -------
    log_density : float or ndarray

    See Also
    --------
    laplace_mechanism, discrete_laplace_mechanism, tulap_mechanism

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import mechanism_log_density
    >>> t = np.arange(-20, 21)
    >>> loss = mechanism_log_density(t, 0, 1.0, "dlap") - mechanism_log_density(t, 1, 1.0, "dlap")
    >>> print(round(float(np.max(np.abs(loss))), 12))
    1.0
    """
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}; got {mechanism!r} instead.")
    out = _check_real_values(output, "output")
    val = _check_real_values(value, "value")
    eps = _check_epsilon(epsilon)
    delta = _check_sensitivity(sensitivity, integer=mechanism != "laplace")
    diff = out - val
    if mechanism == "laplace":
        scale = delta / eps
        res = -np.log(2.0 * scale) - np.abs(diff) / scale
    else:
        if mechanism == "tulap":
            if delta != 1:
                raise ValueError(
                    f"tulap is defined for counts (sensitivity 1); got {sensitivity!r} instead."
                )
            # Z + U has density P(Z = z) on (z - 1/2, z + 1/2]
            k = np.ceil(diff - 0.5)
        else:
            k = np.where(diff == np.round(diff), diff, np.nan)
        rate = eps / delta  # -log(beta)
        # log((1 - beta) / (1 + beta)) = log(tanh(rate / 2))
        res = np.log(np.tanh(rate / 2.0)) - np.abs(k) * rate
        res = np.where(np.isnan(k), -np.inf, res)
    res = np.asarray(res, dtype=np.float64)
    return res[()] if res.ndim == 0 else res
