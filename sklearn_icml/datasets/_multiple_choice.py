"""Simulated multiple-choice answers of several models, for CAPA."""


import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils import check_random_state
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import CLOSED_UNIT_INTERVAL, INT_AT_LEAST_TWO, POSITIVE_INT


@keyword_only_after(1)
@validate_params(
    {
        "n_items": [POSITIVE_INT],
        "n_options": [INT_AT_LEAST_TWO],
        "accuracies": ["array-like"],
        "copy_prob": [CLOSED_UNIT_INTERVAL],
        "confidence": [CLOSED_UNIT_INTERVAL, "array-like"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_multiple_choice_predictions(
    n_items=1000,
    *,
    n_options=4,
    accuracies=(0.9, 0.6),
    copy_prob=0.0,
    confidence=1.0,
    random_state=None,
):
    """Answers of M simulated models to multiple-choice items.

    Model m answers an item correctly with probability ``accuracies[m]`` and otherwise picks
    a uniformly random wrong option, independently of the others; except that every model
    after the first copies the first model's answer with probability ``copy_prob``.

    Parameters
    ----------
    n_items : int, default=1000
        Number of items N.
    n_options : int, default=4
        Options per item k (>= 2).
    accuracies : sequence of float, default=(0.9, 0.6)
        One accuracy in [0, 1] per model.
    copy_prob : float, default=0.0
        Probability that models 1..M-1 copy model 0's answer on an item.
    confidence : float or sequence of float, default=1.0
        Probability each model puts on its chosen option; the rest is spread evenly over
        the other options. 1.0 gives one-hot vectors.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    y : ndarray of shape (n_items,)
        Index of the correct option.
    choices : ndarray of shape (M, n_items)
        Each model's chosen option.
    probas : ndarray of shape (M, n_items, n_options)
        Each model's probability vectors.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_multiple_choice_predictions
    >>> y, choices, probas = make_multiple_choice_predictions(
    ...     5, n_options=3, accuracies=[0.8, 0.5], random_state=0)
    >>> choices.shape, probas.shape
    ((2, 5), (2, 5, 3))
    """
    acc = np.asarray(accuracies, dtype=float)
    if acc.ndim != 1 or acc.size == 0 or np.any((acc < 0) | (acc > 1)):
        raise ValueError(
            f"accuracies must be a non-empty list in [0, 1]. Got {accuracies!r} instead."
        )
    conf = np.broadcast_to(np.asarray(confidence, dtype=float), acc.shape)
    if np.any((conf < 0) | (conf > 1)):
        raise ValueError(f"confidence must be in [0, 1]. Got {confidence!r} instead.")
    rng = check_random_state(random_state)

    y = rng.randint(n_options, size=n_items)
    right = rng.random_sample((acc.size, n_items)) < acc[:, None]
    # a uniformly random wrong option: shift the correct index by 1..k-1
    wrong = (y + rng.randint(1, n_options, size=(acc.size, n_items))) % n_options
    choices = np.where(right, y, wrong)
    if acc.size > 1 and copy_prob > 0:
        copies = rng.random_sample((acc.size - 1, n_items)) < copy_prob
        choices[1:] = np.where(copies, choices[0], choices[1:])

    rest = (1.0 - conf) / (n_options - 1)
    probas = np.repeat(rest[:, None, None], n_items, axis=1).repeat(n_options, axis=2)
    m_idx, i_idx = np.indices(choices.shape)
    probas[m_idx, i_idx, choices] = conf[:, None]
    return y, choices, probas
