"""Torch-free side of the preference losses: names, parameters, numpy value and derivative.

The tabular solver and :func:`closed_form_policy` use only this module, so they run without
importing torch; ``_losses`` holds the torch functions (the public API) and the tests
check the two against each other.
"""

import numpy as np
from scipy.special import expit

LOSS_NAMES = ("exponential", "hinge", "logistic", "savage", "squared", "truncated_quadratic")

# which hyper-parameter each loss reads (the estimators pass only that one)
LOSS_PARAMETER = {
    "logistic": "beta",
    "squared": "tau",
    "hinge": "delta",
    "exponential": "beta",
    "truncated_quadratic": "beta",
    "savage": "beta",
}

# losses whose infimum over h is not attained for a deterministic label: margins diverge
UNBOUNDED_LOSSES = frozenset({"logistic", "exponential", "savage"})


# value and derivative of the hard-label loss g, used by the tabular solver


def _softplus(x):
    return np.logaddexp(0.0, x)


def _np_hard(loss, h, c):
    """``g(h)`` and ``g'(h)`` for the hard-label loss named ``loss`` with parameter ``c``."""
    if loss == "logistic":
        return _softplus(-c * h), -c * expit(-c * h)
    if loss == "squared":
        d = h - 1.0 / (2.0 * c)
        return d * d, 2.0 * d
    if loss == "hinge":
        d = c - h
        return np.maximum(d, 0.0), np.where(d > 0, -1.0, 0.0)
    if loss == "exponential":
        e = np.exp(-c * h)
        return e, -c * e
    if loss == "truncated_quadratic":
        d = np.maximum(1.0 - c * h, 0.0)
        return d * d, -2.0 * c * d
    if loss == "savage":
        s = expit(-c * h)
        return s * s, -2.0 * c * s * s * expit(c * h)
    raise ValueError(f"unknown loss {loss!r}")  # pragma: no cover


def np_loss_and_grad(loss, h, c, p):
    """Soft-label loss ``p g(h) + (1-p) g(-h)`` and its derivative in ``h`` (numpy)."""
    n = h.shape[0]
    g, d = _np_hard(loss, np.concatenate([h, -h]), c)
    q = 1.0 - p
    return p * g[:n] + q * g[n:], p * d[:n] - q * d[n:]
