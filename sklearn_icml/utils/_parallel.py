"""``n_jobs``: the number of CPU workers a fit or a prediction may use.

One meaning everywhere, scikit-learn's: ``n_jobs`` is how many CPU workers the method may
use, threads or processes as the method sees fit (torch's intra-op threads, numba's
threads, joblib workers). ``None`` means 1, unless the call runs inside a
:func:`joblib.parallel_config` (or ``parallel_backend``) context that sets ``n_jobs``; -1
means every core, -2 all but one, and so on; 0 has no meaning. :func:`resolve_n_jobs` turns
the parameter into that number (joblib's ``effective_n_jobs``).
"""

import contextlib

import joblib
import numba

__all__ = ["numba_threads", "resolve_n_jobs"]


def resolve_n_jobs(n_jobs):
    """The number of CPU workers ``n_jobs`` stands for (an int >= 1).

    Parameters
    ----------
    n_jobs : int or None
        An estimator's ``n_jobs``: None is 1 unless an enclosing
        :func:`joblib.parallel_config` sets ``n_jobs``; -1 is every core, -2 all but one.

    Returns
    -------
    n : int

    Examples
    --------
    >>> import joblib
    >>> from sklearn_icml.utils._parallel import resolve_n_jobs
    >>> resolve_n_jobs(None), resolve_n_jobs(3), resolve_n_jobs(-1) == joblib.cpu_count()
    (1, 3, True)
    >>> with joblib.parallel_config(n_jobs=2):
    ...     resolve_n_jobs(None)
    2
    """
    if n_jobs == 0:
        raise ValueError(
            "n_jobs == 0 has no meaning; use a positive number of workers, -1 for every "
            "core, or None for 1. Got 0 instead."
        )
    return max(1, int(joblib.effective_n_jobs(n_jobs)))


@contextlib.contextmanager
def numba_threads(n_jobs):
    """Run numba's parallel kernels on ``n_jobs`` threads (at most numba's thread pool).

    Parameters
    ----------
    n_jobs : int or None
        An estimator's ``n_jobs``, read by :func:`resolve_n_jobs`.

    Examples
    --------
    >>> import numba
    >>> from sklearn_icml.utils._parallel import numba_threads
    >>> with numba_threads(1):
    ...     numba.get_num_threads()
    1
    """
    n = min(resolve_n_jobs(n_jobs), numba.config.NUMBA_NUM_THREADS)
    previous = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(previous)
