"""numba compilation for the library's kernels, and small kernels shared by several methods.

Every kernel is compiled through :func:`njit_cached`: numba's on-disk cache where one can be
written, and a plain compilation (one warning per process) where none can (an installed
package, ``NUMBA_CACHE_DIR`` and ``HOME`` read-only), so a fitted model loads and predicts
anywhere.
"""

import math
import warnings

from numba import njit

_warned = []


def njit_cached(**options):
    """``numba.njit(cache=True, **options)``, compiling without the cache where numba finds no
    writable cache location (instead of failing at import with "no locator available").

    Parameters
    ----------
    **options
        numba's ``njit`` options (``parallel``, ``fastmath``, ``boundscheck``, ...).

    Returns
    -------
    callable
        The decorator.

    Examples
    --------
    >>> from sklearn_icml.utils._numba import njit_cached
    >>> @njit_cached(fastmath=True)
    ... def twice(x):
    ...     return 2.0 * x
    >>> twice(1.5)
    3.0
    """

    def decorate(func):
        try:
            return njit(cache=True, **options)(func)
        except RuntimeError as exc:  # numba's message when no cache location is writable
            if "no locator available" not in str(exc):
                raise
            if not _warned:
                _warned.append(True)
                warnings.warn(
                    "numba finds no writable cache location for sklearn_icml's kernels "
                    f"({exc}); they are compiled at first use in each process instead. Set "
                    "NUMBA_CACHE_DIR to a writable folder to keep them between processes.",
                    RuntimeWarning,
                    stacklevel=2,
                )
            return njit(cache=False, **options)(func)

    return decorate


@njit_cached()
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
