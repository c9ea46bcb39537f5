"""Pure epsilon-DP noise mechanisms: Laplace, discrete Laplace and (untruncated) Tulap.

Each mechanism comes as a sampler (``*_mechanism``) and as the exact log density of its
output given the true value (:func:`mechanism_log_density`), so that a privacy guarantee
can be checked as a bound on likelihood ratios rather than taken on trust.

The noise comes from one of two samplers, chosen by ``noise_backend``:

- ``"opendp"``: OpenDP's measurements (the ``privacy`` extra), built against the floating
  point attack of Mironov (2012): an exact discrete Laplace sampler, and a continuous
  Laplace that adds discrete Laplace noise on a grid of ``2**-1074`` to the value in exact
  arithmetic and rounds the sum once. The value itself goes through OpenDP, never only the
  noise (adding float noise to the value outside would bring the attack back). OpenDP draws
  from the operating system's CSPRNG and cannot be seeded.
- ``"numpy"``: numpy's floating point generators, reproducible from ``random_state``; right
  for research and simulation, not side-channel safe.

``"auto"`` (the default) is numpy when ``random_state`` is not None (the caller asks for a
replayable stream, which only numpy gives), otherwise OpenDP where it imports, otherwise
numpy with a :class:`UserWarning`.
"""

import numbers
import secrets
import warnings

import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_params

from ..utils import check_generator, optional_import
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import POSITIVE_REAL
from ._validation import (
    DATA_RANGE,
    MECHANISM,
    check_integer_values,
    check_positive_values,
    check_real_values,
    range_width,
)

_VALUES = ["array-like", numbers.Real]
_BUDGETS = ["array-like", POSITIVE_REAL]
#: The ``noise_backend`` parameter's options: which sampler draws the noise.
NOISE_BACKEND = [StrOptions({"auto", "opendp", "numpy"})]
#: The parameters of a release (tulap has no sensitivity: it is 1)
_RELEASE = {
    "value": _VALUES,
    "epsilon": _BUDGETS,
    "sensitivity": [POSITIVE_REAL],
    "random_state": ["random_state", np.random.Generator],
    "noise_backend": NOISE_BACKEND,
}
#: How far OpenDP's privacy map may exceed the budget asked for: its conservative rounding
#: of ``sensitivity / (sensitivity / epsilon)`` (a few units in the last place)
_MAP_RTOL = 1e-9


# ------------------------------------------------------------------ the noise backend


def _opendp():
    """OpenDP's prelude, with the ``contrib`` flag its noise measurements need turned on."""
    dp = optional_import("opendp.prelude", extra="privacy")
    dp.enable_features("contrib")
    return dp


def resolve_noise_backend(noise_backend, random_state):
    """The sampler a release uses, ``"opendp"`` or ``"numpy"``.

    ``"auto"`` is ``"numpy"`` for any ``random_state`` but None (only numpy can replay a
    noise draw), otherwise ``"opendp"`` if OpenDP imports and ``"numpy"`` if not (see
    :func:`warn_numpy_fallback`). ``"opendp"`` raises an ImportError naming the extra when
    OpenDP is missing.
    """
    if noise_backend == "numpy" or (noise_backend == "auto" and random_state is not None):
        return "numpy"
    try:
        _opendp()
    except ImportError:
        if noise_backend == "opendp":
            raise
        return "numpy"
    return "opendp"


def warn_numpy_fallback(noise_backend, random_state, resolved, *, stacklevel):
    """Warn when ``"auto"`` fell back to numpy for lack of OpenDP (not when asked for it)."""
    if noise_backend == "auto" and random_state is None and resolved == "numpy":
        warnings.warn(
            "noise_backend='auto' found no OpenDP, so the privacy noise is drawn with "
            "numpy's floating point samplers, which are not side-channel safe (Mironov "
            '2012). Install OpenDP with pip install "sklearn-icml[privacy]" for production '
            "releases, or pass noise_backend='numpy' for research use.",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def _release_backend(noise_backend, random_state):
    """The backend of one call of a ``*_mechanism`` function (which warns as it draws)."""
    if noise_backend == "opendp" and random_state is not None:
        raise ValueError(
            "random_state must be None with noise_backend='opendp': OpenDP draws from the "
            "operating system's CSPRNG and cannot be seeded (pass noise_backend='numpy' for "
            f"reproducible noise). Got random_state={random_state!r} instead."
        )
    resolved = resolve_noise_backend(noise_backend, random_state)
    # warn_numpy_fallback < here < the mechanism < validate_params < the caller
    warn_numpy_fallback(noise_backend, random_state, resolved, stacklevel=4)
    return resolved


def _opendp_laplace(values, epsilon, sensitivity, *, integer):
    """``values`` plus Laplace noise of scale ``sensitivity / epsilon``, drawn by OpenDP.

    ``values`` and ``epsilon`` are arrays of one shape. Integer values get OpenDP's exact
    discrete Laplace (``P(z) ~ exp(-|z| / scale)``), real ones its continuous Laplace. One
    measurement per distinct budget; its privacy map at ``sensitivity`` must give back that
    budget, or nothing is released.
    """
    dp = _opendp()
    atom, kind = ("i64", np.int64) if integer else ("f64", np.float64)
    d_in = int(sensitivity) if integer else float(sensitivity)
    flat_values = values.astype(kind).ravel()
    flat_eps = np.asarray(epsilon, dtype=np.float64).ravel()
    out = np.empty(flat_values.shape, dtype=kind)
    for eps in np.unique(flat_eps):
        where = np.flatnonzero(flat_eps == eps)
        scale = float(sensitivity / eps)  # the scale of the numpy path and of the design
        space = (dp.vector_domain(dp.atom_domain(T=atom, nan=False)), dp.l1_distance(T=atom))
        measurement = dp.m.make_laplace(*space, scale=scale)
        spent = measurement.map(d_in)
        if not spent <= eps * (1.0 + _MAP_RTOL):
            raise RuntimeError(
                f"OpenDP's privacy map gives epsilon={spent!r} for the noise of scale "
                f"{scale!r} at sensitivity {d_in!r}, more than the budget {eps!r}: nothing "
                "was released."
            )
        out[where] = measurement(flat_values[where].tolist())
    return out.reshape(values.shape)


def _secure_uniform(shape):
    """Uniform(-1/2, 1/2) noise from the operating system's CSPRNG (``secrets``).

    Each draw is one of the ``2**52`` odd multiples of ``2**-53`` in (-1/2, 1/2), all exact
    in float64, with equal probability.
    """
    n = int(np.prod(shape, dtype=np.int64))
    bits = np.frombuffer(secrets.token_bytes(8 * n), dtype=np.uint64) >> np.uint64(12)
    odd = 2.0 * bits.astype(np.float64) + 1.0  # < 2**53: exact
    return ((odd - 2.0**52) * 2.0**-53).reshape(shape)


def opendp_release(values, epsilon, sensitivity, mechanism):
    """``values`` released through OpenDP with ``mechanism``'s noise at budgets ``epsilon``.

    ``"laplace"`` and ``"dlap"`` are OpenDP's measurements. ``"tulap"`` is OpenDP's discrete
    Laplace release of the count, ``epsilon``-DP by itself, plus an independent secure
    uniform in (-1/2, 1/2): data-independent post-processing, so the float addition cannot
    leak. (OpenDP's own Tulap, ``make_canonical_noise``, is built for ``delta > 0``; with
    ``delta = 0``, OpenDP 0.16 crashes the Python process when it draws.)
    """
    values = np.asarray(values, dtype=np.float64)
    epsilon = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), values.shape)
    if mechanism == "laplace":
        return _opendp_laplace(values, epsilon, sensitivity, integer=False)
    counts = _opendp_laplace(values, epsilon, sensitivity, integer=True)
    if mechanism == "dlap":
        return counts
    return counts.astype(np.float64) + _secure_uniform(values.shape)


def _whole_sensitivity(sensitivity):
    if float(sensitivity) != round(float(sensitivity)):
        raise ValueError(
            "sensitivity must be a whole number for a discrete mechanism (the data and "
            f"their range are integers). Got {sensitivity!r} instead."
        )
    return float(sensitivity)


def _discrete_laplace_draw(beta, shape, rng):
    """Z with P(Z = z) proportional to beta**|z|: difference of two i.i.d. geometrics."""
    p = np.broadcast_to(1.0 - beta, shape)
    return rng.geometric(p, size=shape).astype(np.int64) - rng.geometric(p, size=shape)


def _inputs(value, epsilon, *, integer):
    """Checked ``value`` and ``epsilon`` and their broadcast shape."""
    check = check_integer_values if integer else check_real_values
    val = check(value, "value")
    eps = check_positive_values(epsilon, "epsilon")
    shape = np.broadcast_shapes(val.shape, eps.shape)
    return val, eps, shape


def _scalar_or_array(out, value, epsilon):
    if np.ndim(value) == 0 and np.ndim(epsilon) == 0:
        return out[()]
    return out


@validate_params(_RELEASE, prefer_skip_nested_validation=True)
def laplace_mechanism(
    value, epsilon, *, sensitivity=1.0, random_state=None, noise_backend="auto"
):
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
        Source of the noise, turned into a numpy Generator by
        :func:`~sklearn_icml.utils.check_generator`. Pass the same RandomState or Generator
        across calls to get fresh noise each time; an int seed reproduces the same draw.
    noise_backend : {"auto", "opendp", "numpy"}, default="auto"
        Sampler of the noise. ``"opendp"``: OpenDP's, hardened against floating point
        attacks (needs the ``privacy`` extra; ``random_state`` must then be None, as
        OpenDP cannot be seeded). ``"numpy"``: numpy's generator driven by
        ``random_state``, for research. ``"auto"``: numpy if ``random_state`` is not None,
        otherwise OpenDP if installed, otherwise numpy with a warning.

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
    With ``noise_backend="opendp"`` the value goes through OpenDP's ``make_laplace`` on
    floats: discrete Laplace noise on a grid of ``2**-1074`` added in exact arithmetic and
    rounded once, so the set of possible releases does not depend on the value (numpy's
    sampler, ``-scale * log(U)`` in floating point, leaks it: Mironov 2012). The numpy
    sampler is for research and simulation.

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
    val, eps, shape = _inputs(value, epsilon, integer=False)
    if _release_backend(noise_backend, random_state) == "opendp":
        out = opendp_release(np.broadcast_to(val, shape), eps, float(sensitivity), "laplace")
        return _scalar_or_array(out, value, epsilon)
    rng = check_generator(random_state)
    scale = np.broadcast_to(float(sensitivity) / eps, shape)
    out = val + rng.laplace(0.0, scale, size=shape)
    return _scalar_or_array(out, value, epsilon)


@validate_params(_RELEASE, prefer_skip_nested_validation=True)
def discrete_laplace_mechanism(
    value, epsilon, *, sensitivity=1, random_state=None, noise_backend="auto"
):
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
        Source of the noise for the numpy sampler.
    noise_backend : {"auto", "opendp", "numpy"}, default="auto"
        Sampler of the noise, as in :func:`laplace_mechanism`.

    Returns
    -------
    released : int or ndarray of int64

    See Also
    --------
    laplace_mechanism, tulap_mechanism, mechanism_log_density

    Notes
    -----
    ``Z`` has variance ``2 beta / (1 - beta)**2``. OpenDP (``noise_backend="opendp"``)
    samples it exactly (``make_laplace`` on integers, scale ``sensitivity / epsilon``); the
    numpy sampler draws it as the difference of two i.i.d. geometric variables with success
    probability ``1 - beta``, through floating point (for research; see
    :func:`laplace_mechanism`).

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
    delta = _whole_sensitivity(sensitivity)
    val, eps, shape = _inputs(value, epsilon, integer=True)
    if _release_backend(noise_backend, random_state) == "opendp":
        out = opendp_release(np.broadcast_to(val, shape), eps, delta, "dlap")
        return _scalar_or_array(out, value, epsilon)
    rng = check_generator(random_state)
    beta = np.exp(-eps / delta)
    out = val.astype(np.int64) + _discrete_laplace_draw(beta, shape, rng)
    return _scalar_or_array(out, value, epsilon)


@validate_params(_RELEASE, prefer_skip_nested_validation=True)
def tulap_mechanism(value, epsilon, *, random_state=None, noise_backend="auto"):
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
    random_state : int, RandomState instance, Generator or None, default=None
        Source of the noise for the numpy sampler.
    noise_backend : {"auto", "opendp", "numpy"}, default="auto"
        Sampler of the noise, as in :func:`laplace_mechanism`.

    Returns
    -------
    released : float or ndarray

    See Also
    --------
    discrete_laplace_mechanism, mechanism_log_density

    Notes
    -----
    This is the untruncated Tulap (truncation ``q = 0``), the pure ``epsilon``-DP case that
    Chen, Pasupathy & Awan (2025) use for 0/1 data. A truncated Tulap gives
    ``(epsilon, delta)``-DP with another variance and is not offered.

    With ``noise_backend="opendp"``, ``value + Z`` is OpenDP's exact discrete Laplace
    release (itself ``epsilon``-DP) and ``U`` comes from the operating system's CSPRNG
    (``secrets``), on the ``2**52`` odd multiples of ``2**-53`` in (-1/2, 1/2): adding a
    data-independent ``U`` is post-processing, so its float rounding cannot leak.

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
    val, eps, shape = _inputs(value, epsilon, integer=True)
    if _release_backend(noise_backend, random_state) == "opendp":
        out = opendp_release(np.broadcast_to(val, shape), eps, 1, "tulap")
        return _scalar_or_array(out, value, epsilon)
    rng = check_generator(random_state)
    beta = np.exp(-eps)
    z = _discrete_laplace_draw(beta, shape, rng)
    out = val + z + rng.uniform(-0.5, 0.5, size=shape)
    return _scalar_or_array(out, value, epsilon)


@keyword_only_after(3)
@validate_params(
    {
        "output": _VALUES,
        "value": _VALUES,
        "epsilon": _BUDGETS,
        "mechanism": MECHANISM,
        "sensitivity": [POSITIVE_REAL],
    },
    prefer_skip_nested_validation=True,
)
def mechanism_log_density(output, value, epsilon, *, mechanism="laplace", sensitivity=1.0):
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
    >>> loss = (mechanism_log_density(t, 0, 1.0, mechanism="dlap")
    ...         - mechanism_log_density(t, 1, 1.0, mechanism="dlap"))
    >>> print(round(float(np.max(np.abs(loss))), 12))
    1.0
    """
    out = check_real_values(output, "output")
    val = check_real_values(value, "value")
    eps = check_positive_values(epsilon, "epsilon")
    delta = float(sensitivity) if mechanism == "laplace" else _whole_sensitivity(sensitivity)
    diff = out - val
    if mechanism == "laplace":
        scale = delta / eps
        res = -np.log(2.0 * scale) - np.abs(diff) / scale
    else:
        if mechanism == "tulap":
            if delta != 1:
                raise ValueError(
                    f"sensitivity must be 1 for tulap (it releases counts). Got "
                    f"{sensitivity!r} instead."
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


@keyword_only_after(1)
@validate_params(
    {
        "epsilon": _BUDGETS,
        "mechanism": MECHANISM,
        "data_range": DATA_RANGE,
    },
    prefer_skip_nested_validation=True,
)
def mechanism_variance(epsilon, *, mechanism="laplace", data_range=1.0):
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
    >>> round(float(mechanism_variance(1.0, mechanism="tulap")
    ...             - mechanism_variance(1.0, mechanism="dlap")), 6)
    0.083333
    """
    width = range_width(data_range, mechanism)
    e = check_positive_values(epsilon, "epsilon")
    out = _variance_on_sum(e, mechanism, width)
    return out[()] if np.ndim(out) == 0 else out
