"""Calibrate DP-SGD's noise: the smallest noise multiplier that meets a privacy target."""

import numpy as np
from scipy.optimize import brentq
from sklearn.utils._param_validation import StrOptions, validate_params

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import OPEN_UNIT_INTERVAL, POSITIVE_REAL
from ._partition_rdp import (
    ORDERS,
    bis_rdp,
    check_orders,
    default_orders,
    dropout_rdp,
    model_split_rdp,
    poisson_rdp,
    rdp_to_epsilon,
)

_SIGMA_BRACKET = (0.1, 100.0)

_SCHEMES = {
    "bis": (bis_rdp, ("num_steps", "num_selected"), ("num_epochs", "method")),
    "poisson": (poisson_rdp, ("sample_rate", "num_steps"), ()),
    "model_split": (model_split_rdp, ("num_parts",), ("sample_rate", "num_rounds")),
    "dropout": (dropout_rdp, (), ("sample_rate", "num_rounds")),
}


def _scheme_rdp(scheme, sigma, orders, kwargs):
    func, required, optional = _SCHEMES[scheme]
    missing = [name for name in required if name not in kwargs]
    unknown = [name for name in kwargs if name not in required + optional]
    if missing or unknown:
        raise TypeError(
            f"scheme={scheme!r} needs the arguments {list(required)} and accepts "
            f"{list(optional)}. Got {sorted(kwargs)} (missing {missing}, unknown {unknown}) "
            "instead."
        )
    return func(sigma, orders=orders, **kwargs)


@keyword_only_after(2)
@validate_params(
    {
        "target_epsilon": [POSITIVE_REAL],
        "delta": [OPEN_UNIT_INTERVAL],
        "scheme": [StrOptions(set(_SCHEMES))],
        "orders": ORDERS,
    },
    prefer_skip_nested_validation=True,
)
def find_noise_multiplier(target_epsilon, delta, *, scheme="bis", orders=None, **scheme_kwargs):
    """The smallest noise multiplier whose guarantee meets ``(target_epsilon, delta)``.

    Root-finds (``scipy.optimize.brentq``) the decreasing map sigma -> epsilon over
    ``[0.1, 100]``.

    Parameters
    ----------
    target_epsilon : float
        Epsilon to reach, > 0.
    delta : float
        Target delta in (0, 1).
    scheme : {"bis", "poisson", "model_split", "dropout"}, default="bis"
        Which accountant: :func:`bis_rdp`, :func:`poisson_rdp` (needs ``dp_accounting``),
        :func:`model_split_rdp` or :func:`dropout_rdp`.
    orders : array-like, default=None
        RDP orders; each scheme's default when omitted.
    **scheme_kwargs
        The scheme's arguments: ``num_steps, num_selected[, num_epochs, method]`` for
        ``"bis"``; ``sample_rate, num_steps`` for ``"poisson"``;
        ``num_parts[, sample_rate, num_rounds]`` for ``"model_split"``;
        ``[sample_rate, num_rounds]`` for ``"dropout"``.

    Returns
    -------
    noise_multiplier : float
        Sigma with epsilon <= target (within 1e-3 of it, unless even sigma = 0.1 already
        meets the target, in which case 0.1 is returned).

    Raises
    ------
    ValueError
        If even sigma = 100 does not reach the target.

    See Also
    --------
    bis_epsilon, PartitionRDPAccountant

    Examples
    --------
    >>> from sklearn_icml.privacy import find_noise_multiplier, bis_epsilon
    >>> sigma = find_noise_multiplier(8.0, 1e-5, num_steps=200, num_selected=20)
    >>> round(sigma, 3), round(bis_epsilon(sigma, 200, 20, 1e-5), 3)
    (1.194, 8.0)
    """
    if orders is None:
        integer = scheme in ("model_split", "dropout") or scheme_kwargs.get("method") == "exact"
        orders = default_orders("exact" if integer else "efficient")
    orders = check_orders(orders)

    def epsilon(log_sigma):
        rdp = _scheme_rdp(scheme, float(np.exp(log_sigma)), orders, scheme_kwargs)
        return rdp_to_epsilon(rdp, orders, delta)[0]

    lo, hi = np.log(_SIGMA_BRACKET[0]), np.log(_SIGMA_BRACKET[1])
    eps_hi = epsilon(hi)
    if eps_hi > target_epsilon:
        raise ValueError(
            f"target_epsilon is unreachable for scheme={scheme!r}: even "
            f"noise_multiplier={_SIGMA_BRACKET[1]} gives epsilon={eps_hi:.4g}. Got "
            f"target_epsilon={target_epsilon!r} instead."
        )
    if epsilon(lo) <= target_epsilon:
        return _SIGMA_BRACKET[0]
    root = brentq(lambda s: epsilon(s) - target_epsilon, lo, hi, xtol=1e-10, rtol=1e-12)
    # brentq may land a hair below the root; step up until the guarantee holds
    while epsilon(root) > target_epsilon:
        root += 1e-9
    return float(np.exp(root))
