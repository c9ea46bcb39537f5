"""Preference pairs for the tabular setting: exact population pairs and sampled pairs."""


import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils import check_random_state
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import POSITIVE_INT
from ._base import check_policy
from ._closed_form import check_preferences


def _sampling_and_contexts(P, sampling, context_weights):
    C, K = P.shape[0], P.shape[-1]
    m = np.full((C, K), 1.0 / K)
    if sampling is not None:
        m = check_policy(sampling, "sampling", n_responses=K)
        if m.shape[0] not in (1, C):
            raise ValueError(
                f"sampling must be 1-D or have {C} rows (contexts). Got {m.shape[0]} rows "
                "instead."
            )
        m = np.broadcast_to(m, (C, K))
    if context_weights is None:
        cw = np.full(C, 1.0 / C)
    else:
        cw = check_policy(context_weights, "context_weights", n_responses=C)[0]
    return m, cw


@keyword_only_after(1)
@validate_params(
    {
        "rewards": ["array-like", None],
        "pref_matrix": ["array-like", None],
        "sampling": ["array-like", None],
        "context_weights": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def population_pairs(rewards=None, *, pref_matrix=None, sampling=None, context_weights=None):
    """All ordered pairs, with soft labels and weights, whose mean loss is the population loss.

    Row ``(c, a, b)`` stands for "context ``c`` drawn, then ``a`` and ``b`` drawn
    independently from ``sampling[c]``"; its label is ``P(a > b | c)`` (0.5 when
    ``a = b``) and its weight ``context_weights[c] * m(a) * m(b)``. The weighted mean of
    the soft-label loss over these rows is the expected loss of a pair drawn this way,
    so fitting :class:`TabularPreferencePolicy` on them finds the population minimiser
    that :func:`closed_form_policy` gives in closed form.

    Parameters
    ----------
    rewards : array-like of shape (K,) or (n_contexts, K), default=None
        Bradley-Terry rewards.
    pref_matrix : array-like of shape (K, K) or (n_contexts, K, K), default=None
        ``P(a > b)``; give exactly one of ``rewards`` and ``pref_matrix``.
    sampling : array-like of shape (K,) or (n_contexts, K), default=None
        Data-sampling policy ``m``; None means uniform.
    context_weights : array-like of shape (n_contexts,), default=None
        Distribution of contexts; None means uniform.

    Returns
    -------
    pairs : ndarray of shape (n_contexts * K * K, 3), dtype int64
        ``(context, first, second)``.
    labels : ndarray of shape (n_contexts * K * K,)
        Probability that ``first`` is preferred.
    sample_weight : ndarray of shape (n_contexts * K * K,)
        Sums to 1.

    Examples
    --------
    >>> from sklearn_icml.alignment import population_pairs
    >>> pairs, labels, weight = population_pairs([1.0, 0.0])
    >>> pairs.tolist()
    [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1]]
    >>> labels.round(3).tolist(), weight.tolist()
    ([0.5, 0.731, 0.269, 0.5], [0.25, 0.25, 0.25, 0.25])
    """
    P, _, _ = check_preferences(rewards, pref_matrix)
    C, K = P.shape[0], P.shape[-1]
    m, cw = _sampling_and_contexts(P, sampling, context_weights)
    c, a, b = np.meshgrid(np.arange(C), np.arange(K), np.arange(K), indexing="ij")
    pairs = np.stack([c.ravel(), a.ravel(), b.ravel()], axis=1).astype(np.int64)
    labels = P.reshape(-1).copy()
    weight = (cw[:, None, None] * m[:, :, None] * m[:, None, :]).reshape(-1)
    return pairs, labels, weight


@keyword_only_after(1)
@validate_params(
    {
        "rewards": ["array-like", None],
        "pref_matrix": ["array-like", None],
        "n_pairs": [POSITIVE_INT],
        "sampling": ["array-like", None],
        "context_weights": ["array-like", None],
        "include_ties": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_preference_pairs(
    rewards=None,
    *,
    pref_matrix=None,
    n_pairs=1000,
    sampling=None,
    context_weights=None,
    include_ties=True,
    random_state=None,
):
    """Sample labelled preference pairs ``(context, winner, loser)``.

    A context is drawn from ``context_weights``, two responses independently from
    ``sampling`` (the data policy), and the preferred one with probability
    ``P(a > b | c)`` (Bradley-Terry ``sigmoid(r(a) - r(b))`` when ``rewards`` is given).

    Parameters
    ----------
    rewards, pref_matrix : array-like, default=None
        As in :func:`population_pairs`; give exactly one.
    n_pairs : int, default=1000
        Number of draws.
    sampling : array-like of shape (K,) or (n_contexts, K), default=None
        Data-sampling policy; None means uniform.
    context_weights : array-like of shape (n_contexts,), default=None
        Distribution of contexts; None means uniform.
    include_ties : bool, default=True
        Keep draws with ``a = b`` as ties (label 0.5); they carry no information. False
        drops them, so fewer than ``n_pairs`` rows may be returned.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    pairs : ndarray of shape (n, 3), dtype int64
        ``(context, winner, loser)``.
    labels : ndarray of shape (n,)
        1.0 for a comparison, 0.5 for a tie.

    Examples
    --------
    >>> from sklearn_icml.alignment import make_preference_pairs
    >>> pairs, labels = make_preference_pairs([1.0, 0.0, -1.0], n_pairs=4, random_state=0)
    >>> pairs.shape, labels.shape
    ((4, 3), (4,))
    """
    P, _, _ = check_preferences(rewards, pref_matrix)
    C = P.shape[0]
    m, cw = _sampling_and_contexts(P, sampling, context_weights)
    rng = check_random_state(random_state)
    c = rng.choice(C, size=n_pairs, p=cw)
    cdf = np.cumsum(m, axis=1)
    cdf[:, -1] = 1.0
    a = (rng.random_sample(n_pairs)[:, None] > cdf[c]).sum(axis=1)
    b = (rng.random_sample(n_pairs)[:, None] > cdf[c]).sum(axis=1)
    first_wins = rng.random_sample(n_pairs) < P[c, a, b]
    winner = np.where(first_wins, a, b)
    loser = np.where(first_wins, b, a)
    labels = np.where(a == b, 0.5, 1.0)
    pairs = np.stack([c, winner, loser], axis=1).astype(np.int64)
    if not include_ties:
        keep = a != b
        pairs, labels = pairs[keep], labels[keep]
    return pairs, labels
