"""What the preference estimators share: the loss parameters, label and policy checks.

:class:`TabularPreferencePolicy` and :class:`PreferenceLMTrainer` both choose a loss of
:data:`PREFERENCE_LOSSES` and its scale through the same parameters: their constraints
and the scale the chosen loss reads live in :class:`_PreferenceLossMixin`; both check
soft labels with :func:`check_soft_labels`.
"""


import numpy as np
from sklearn.utils._param_validation import StrOptions

from ..utils._param_validation import NON_NEGATIVE_REAL, POSITIVE_REAL
from ..utils.validation import check_finite
from ._loss_math import LOSS_NAMES, LOSS_PARAMETER

#: a probability vector must sum to one within this tolerance
SUM_TOL = 1e-6


class _PreferenceLossMixin:
    """The parameters that choose the loss, its scale and the normaliser.

    ``loss``, ``beta``, ``tau``, ``delta``, ``normalizer`` and ``kl_coef`` mean the same
    in every preference estimator: their constraints are declared here once (a subclass
    extends ``{**_PreferenceLossMixin._parameter_constraints, ...}``), and
    :meth:`_loss_scale` gives the one scale the chosen loss reads.
    """

    _parameter_constraints: dict = {
        "loss": [StrOptions(set(LOSS_NAMES))],
        "beta": [POSITIVE_REAL],
        "tau": [POSITIVE_REAL],
        "delta": [POSITIVE_REAL],
        "normalizer": [StrOptions({"reference", "data", "none"})],
        "kl_coef": [NON_NEGATIVE_REAL],
    }

    def _loss_scale(self):
        """The scale parameter the chosen loss reads (``beta``, ``tau`` or ``delta``)."""
        return float(getattr(self, LOSS_PARAMETER[self.loss]))


def check_soft_labels(labels, n):
    """Validate soft labels of ``n`` pairs; return a float64 copy (ones when None).

    A soft label is the probability in ``[0, 1]`` that the first response of a pair is
    the preferred one.
    """
    if labels is None:
        return np.ones(n)
    labels = np.array(labels, dtype=np.float64)
    if labels.shape != (n,):
        raise ValueError(
            f"labels must have shape ({n},), one per pair. Got shape {labels.shape} instead."
        )
    check_finite(labels, "labels")
    if np.any((labels < 0) | (labels > 1)):
        bad = labels[(labels < 0) | (labels > 1)][0]
        raise ValueError(f"labels (soft labels) must lie in [0, 1]. Got {bad!r} instead.")
    return labels


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
