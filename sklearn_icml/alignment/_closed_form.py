"""Closed-form population minimisers of the preference losses (the tabular theory)."""


import numpy as np
from scipy.special import expit, logit, logsumexp
from sklearn.utils._param_validation import StrOptions, validate_params

from ..utils._deprecation import keyword_only_after, renamed
from ..utils._param_validation import FINITE_POSITIVE_REAL
from ..utils.validation import check_finite
from ._base import check_policy

# P(a > b) + P(b > a) must equal one within this tolerance
_PREF_TOL = 1e-8

_CLOSED_FORMS = ("logistic", "savage", "exponential", "squared", "truncated_quadratic")


def check_preferences(rewards=None, pref_matrix=None):
    """Validate ``rewards`` or ``pref_matrix``; return ``(P, rewards, one_context)``.

    ``P`` has shape (C, K, K) with ``P[c, a, b] = P(a > b | c)``; ``rewards`` is (C, K)
    or None (when a preference matrix was given).
    """
    if (rewards is None) == (pref_matrix is None):
        raise ValueError(
            "give exactly one of rewards (Bradley-Terry preferences) and pref_matrix. Got "
            f"{'both' if rewards is not None else 'neither'} instead."
        )
    if rewards is not None:
        r = np.asarray(rewards, dtype=np.float64)
        if r.ndim not in (1, 2) or r.shape[-1] < 2:
            raise ValueError(
                "rewards must have shape (n_responses,) or (n_contexts, n_responses) with "
                f"at least 2 responses. Got shape {r.shape} instead."
            )
        check_finite(r, "rewards")
        one = r.ndim == 1
        r = np.atleast_2d(r)
        P = expit(r[:, :, None] - r[:, None, :])
        return P, r, one
    P = np.asarray(pref_matrix, dtype=np.float64)
    if P.ndim not in (2, 3) or P.shape[-1] != P.shape[-2] or P.shape[-1] < 2:
        raise ValueError(
            "pref_matrix must have shape (K, K) or (n_contexts, K, K) with K >= 2. Got "
            f"shape {P.shape} instead."
        )
    check_finite(P, "pref_matrix")
    if np.any((P < 0) | (P > 1)):
        raise ValueError(
            f"pref_matrix holds probabilities in [0, 1]. Got values in [{P.min()!r}, "
            f"{P.max()!r}] instead."
        )
    one = P.ndim == 2
    P = P.reshape((-1,) + P.shape[-2:])
    gap = np.abs(P + np.swapaxes(P, 1, 2) - 1.0).max()
    if gap > _PREF_TOL:
        raise ValueError(
            "pref_matrix must satisfy P[a, b] + P[b, a] = 1 (and 0.5 on the diagonal). Got "
            f"a deviation of {gap!r} instead."
        )
    return P, None, one


def _bt_rewards(P, name):
    """Rewards (up to a constant) of a Bradley-Terry preference matrix, else raise."""
    K = P.shape[-1]
    off = ~np.eye(K, dtype=bool)
    if np.any((P[:, off] <= 0) | (P[:, off] >= 1)):
        raise ValueError(
            f"the {name} loss has no finite minimiser when some preference is "
            "deterministic (P(a > b) in {0, 1}): its margins grow without bound and the "
            "policy collapses onto the best covered response. Got a pref_matrix with 0/1 "
            "entries instead; use loss='squared' or fit TabularPreferencePolicy to see the "
            "trajectory."
        )
    with np.errstate(divide="ignore"):
        L = logit(np.where(off, P, 0.5))
    r = L.mean(axis=2)
    err = np.abs(L - (r[:, :, None] - r[:, None, :])).max()
    if err > 1e-6:
        raise ValueError(
            f"the {name} loss's minimiser has a closed form only for Bradley-Terry "
            "preferences (logit P(a > b) = r(a) - r(b)). Got a pref_matrix that deviates "
            f"by {err!r} instead. Fit TabularPreferencePolicy on population_pairs() to get "
            "its minimiser."
        )
    return r


@keyword_only_after(1)
@validate_params(
    {
        "rewards": ["array-like", None],
        "pref_matrix": ["array-like", None],
        "nu": ["array-like", None],
        "loss": [StrOptions(set(_CLOSED_FORMS) | {"hinge"})],
        "beta": [FINITE_POSITIVE_REAL],
        "tau": [FINITE_POSITIVE_REAL],
        "sampling": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def closed_form_policy(
    rewards=None,
    *,
    pref_matrix=None,
    nu=None,
    loss="logistic",
    beta=0.1,
    tau=0.1,
    sampling=None,
):
    """Population minimiser of an offline preference loss, in closed form (tabular).

    For a softmax policy over ``K`` responses per context with full coverage, the loss
    of a pair depends only on the margin ``h(a, b) = s(a) - s(b)`` of the scores
    ``s = log pi - log nu``. The minimisers are (Agarwal, Dann & Marinov, 2025):

    * ``"logistic"`` (DPO) and ``"savage"``: ``beta h(a, b) = logit P(a > b)``, realisable
      under Bradley-Terry, so ``pi ∝ nu exp(r / beta)`` whatever the sampling;
    * ``"exponential"``: ``beta h = logit(P) / 2``, so ``pi ∝ nu exp(r / (2 beta))``;
    * ``"squared"`` (IPO): the sampling-weighted least-squares fit of the targets
      ``(2 P(a > b) - 1) / (2 tau)``; for pairs drawn independently from ``m``,
      ``pi ∝ nu exp(P(y > m) / tau)`` with ``P(y > m) = sum_b m(b) P(y > b)``: it
      depends on the sampling policy and stays finite for deterministic labels;
    * ``"truncated_quadratic"``: as squared with targets ``(2 P - 1) / beta``, i.e.
      ``pi ∝ nu exp(2 P(y > m) / beta)``, valid while ``beta |h| <= 1`` on every pair
      (checked).

    The hinge loss has no closed form (its pointwise minimiser ``h = ±delta`` is not
    additive); a ValueError says so.

    Parameters
    ----------
    rewards : array-like of shape (K,) or (n_contexts, K), default=None
        Bradley-Terry rewards: ``P(a > b) = sigmoid(r(a) - r(b))``.
    pref_matrix : array-like of shape (K, K) or (n_contexts, K, K), default=None
        ``P(a > b)`` directly (``P + P.T = 1``, 0.5 on the diagonal). Give exactly one of
        ``rewards`` and ``pref_matrix``.
    nu : array-like of shape (K,) or (n_contexts, K), default=None
        The normalising policy (``pi_ref`` for DPO/IPO, the data policy, ...), strictly
        positive; None means no normaliser (``nu = 1``).
    loss : {"logistic", "savage", "exponential", "squared", "truncated_quadratic"}, \
            default="logistic"
    beta : float, default=0.1
        Scale of the logistic, savage, exponential and truncated quadratic losses.
    tau : float, default=0.1
        IPO's ``tau`` (target margin ``1 / (2 tau)``).
    sampling : array-like of shape (K,) or (n_contexts, K), default=None
        Policy ``m`` from which both responses of a pair are drawn independently
        (including ``a = b``); None means uniform. Must be positive on every response
        (coverage). Only the squared losses depend on it.

    Returns
    -------
    policy : ndarray of shape (K,) or (n_contexts, K)
        Probabilities; each row sums to 1.

    Raises
    ------
    ValueError
        For the logistic-type losses with deterministic or non-Bradley-Terry preferences
        (no finite or no closed-form minimiser), for the hinge loss, for invalid
        probability vectors, and for beta <= 0 or tau <= 0.

    See Also
    --------
    TabularPreferencePolicy : fits the same objective numerically.
    population_pairs : the weighted pairs whose empirical loss is the population loss.

    References
    ----------
    .. [1] A. Agarwal, C. Dann and T. V. Marinov, ICML 2025, arXiv:2502.06861.

    Examples
    --------
    The logistic loss (DPO) with ``beta = 1`` and ``nu = pi_ref``:

    >>> from sklearn_icml.alignment import closed_form_policy
    >>> r, ref = [1.0, 0.5, 0.0, -0.5], [0.1, 0.2, 0.3, 0.4]
    >>> closed_form_policy(r, nu=ref, loss="logistic", beta=1.0).round(4)
    array([0.2376, 0.2882, 0.2622, 0.212 ])
    >>> closed_form_policy(r, nu=ref, loss="squared", tau=1.0).round(4)
    array([0.1243, 0.2227, 0.2976, 0.3554])
    """
    if loss == "hinge":
        raise ValueError(
            "the hinge loss has no closed-form population minimiser (its pointwise "
            "minimiser h = +/-delta is not additive over responses). Got loss='hinge' "
            "instead. Fit TabularPreferencePolicy(loss='hinge', solver='gd') on "
            "population_pairs() to obtain it."
        )
    P, r, one = check_preferences(rewards, pref_matrix)
    K = P.shape[-1]
    nu_arr = None if nu is None else check_policy(nu, "nu", n_responses=K)
    m = None if sampling is None else check_policy(sampling, "sampling", n_responses=K)
    given = [a for a in (P, nu_arr, m) if a is not None]
    C = max(a.shape[0] for a in given)
    for a, name in ((P, "pref_matrix/rewards"), (nu_arr, "nu"), (m, "sampling")):
        if a is not None and a.shape[0] not in (1, C):
            raise ValueError(
                f"{name} has {a.shape[0]} contexts while another input has {C}; give 1-D "
                "inputs or the same number of contexts. Got mismatched shapes instead."
            )
    one = one and all(np.ndim(a) == 1 for a in (nu, sampling) if a is not None)
    P = np.broadcast_to(P, (C, K, K))
    r = None if r is None else np.broadcast_to(r, (C, K))
    log_nu = np.zeros((C, K))
    if nu_arr is not None:
        if np.any(nu_arr <= 0):
            raise ValueError(
                "nu must be positive on every response (log nu is the normaliser). Got a "
                f"zero at {tuple(int(i) for i in np.argwhere(nu_arr <= 0)[0])} instead."
            )
        log_nu = np.broadcast_to(np.log(nu_arr), (C, K))
    if m is None:
        m = np.full((C, K), 1.0 / K)
    elif np.any(m <= 0):
        raise ValueError(
            "sampling must be positive on every response (full coverage). Got a zero at "
            f"{tuple(int(i) for i in np.argwhere(m <= 0)[0])} instead."
        )
    m = np.broadcast_to(m, (C, K))
    if loss in ("logistic", "savage", "exponential"):
        if r is None:
            r = _bt_rewards(P, loss)
        scale = beta if loss != "exponential" else 2.0 * beta
        score = r / scale
    else:
        win = np.einsum("cab,cb->ca", P, m)  # P(y > m)
        score = win / tau if loss == "squared" else 2.0 * win / beta
        if loss == "truncated_quadratic":
            t = beta * (score[:, :, None] - score[:, None, :])
            if np.abs(t).max() > 1.0 + 1e-12:
                raise ValueError(
                    "the truncated quadratic loss's least-squares solution has beta*|h| = "
                    f"{np.abs(t).max():.3g} > 1 on some pair, where the truncation is "
                    "active, so the closed form does not hold; fit TabularPreferencePolicy "
                    "instead."
                )
    logits = log_nu + score
    policy = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    return policy[0] if one else policy


#: Deprecated name of :func:`closed_form_policy` (the paper calls these minimisers its
#: "benchmark" policies); removed in 0.4.
benchmark_policy = renamed(closed_form_policy, "benchmark_policy")
