"""Small numba kernels shared by several methods' hot loops."""

import math

from numba import njit


@njit(cache=True)
def stable_sigmoid(t):
    """``1 / (1 + exp(-t))`` for a float ``t`` without overflow for large ``|t|``.

    Examples
    --------
    >>> from sklearn_icml.utils._numba import stable_sigmoid
    >>> stable_sigmoid(0.0), stable_sigmoid(-800.0), stable_sigmoid(800.0)
    (0.5, 0.0, 1.0)
    """
    if t >= 0.0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)
