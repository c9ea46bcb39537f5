"""Checks of the policy vectors the alignment objects take: probabilities and support."""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..utils.validation import check_finite
from ._loss_math import LOSS_NAMES

#: a probability vector must sum to one within this tolerance
SUM_TOL = 1e-6

_POSITIVE = Interval(numbers.Real, 0, None, closed="neither")

#: constraints of the parameters that choose the loss and the normaliser, shared by
#: TabularPreferencePolicy and PreferenceLMTrainer
LOSS_CONSTRAINTS = {
    "loss": [StrOptions(set(LOSS_NAMES))],
    "beta": [_POSITIVE],
    "tau": [_POSITIVE],
    "delta": [_POSITIVE],
    "normalizer": [StrOptions({"reference", "data", "none"})],
    "kl_coef": [Interval(numbers.Real, 0, None, closed="left")],
}


def check_policy(policy, name, *, n_contexts=None, n_responses=None):
    """Validate a probability vector (K,) or matrix (C, K); return it as (C, K) float64.

    Rows must be finite, non-negative and sum to 1 within ``SUM_TOL``. A 1-D vector is
    shared by every context. Never modifies the caller's array.
    """
    arr = np.asarray(policy, dtype=np.float64)
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise ValueError(
            f"{name} must be a probability vector of shape (n_responses,) or a matrix of "
            f"shape (n_contexts, n_responses). Got shape {arr.shape} instead."
        )
    check_finite(arr, name)
    if np.any(arr < 0):
        raise ValueError(
            f"{name} must be non-negative (a probability vector). Got min {arr.min()!r} "
            "instead."
        )
    sums = arr.sum(axis=-1)
    if np.any(np.abs(sums - 1.0) > SUM_TOL):
        worst = np.atleast_1d(sums)[np.argmax(np.abs(np.atleast_1d(sums) - 1.0))]
        raise ValueError(
            f"{name} must sum to 1 (within {SUM_TOL}) over responses. Got a sum of "
            f"{float(worst)!r} instead."
        )
    if n_responses is not None and arr.shape[-1] != n_responses:
        raise ValueError(
            f"{name} must have {n_responses} responses (columns). Got {arr.shape[-1]} "
            "instead."
        )
    if arr.ndim == 1:
        arr = np.broadcast_to(arr, (n_contexts or 1, arr.shape[0])).copy()
    elif n_contexts is not None and arr.shape[0] != n_contexts:
        if arr.shape[0] == 1:
            arr = np.broadcast_to(arr, (n_contexts, arr.shape[1])).copy()
        else:
            raise ValueError(
                f"{name} must have {n_contexts} rows (contexts) or be 1-D. Got "
                f"{arr.shape[0]} rows instead."
            )
    return arr


def check_support(policy, name, used):
    """Raise if ``policy`` (C, K) is zero where the boolean mask ``used`` (C, K) is True."""
    bad = used & (policy <= 0)
    if np.any(bad):
        c, k = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} is zero on response {k} of context {c}, which appears in the data: "
            f"its log-probability is -inf. Got {name}[{c}, {k}] = {policy[c, k]!r} "
            "instead of a positive probability."
        )
