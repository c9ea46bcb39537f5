"""Docstring pieces written once and filled into several classes' docstrings.

A docstring names a piece as ``%(name)s`` on a line of its own; :func:`fill_doc` cleans the
docstring's indentation (as Python 3.13 does at compile time) and substitutes the pieces,
so that a generic parameter (:data:`COMMON_PIECES`: ``random_state``, ``verbose``, torch's
``n_jobs``, ``device``) is documented once. Everything else a class documents itself, in its
own docstring.
"""

import inspect

#: Parameters that many public classes share, in numpydoc form without indentation.
COMMON_PIECES = {
    "random_state": """\
random_state : int, RandomState instance or None, default=None
    Seeds the randomness of the object: an int gives the same result on every run
    (see :mod:`sklearn_icml.utils._random` for how numpy Generators and torch seeds are
    derived from it).""",
    "verbose": """\
verbose : int, default=0
    0 is silent; larger values print progress.""",
    "torch_n_jobs": """\
n_jobs : int or None, default=1
    Number of CPU workers fit and predict may use, here torch's intra-op threads. ``None``
    means 1 unless in a :func:`joblib.parallel_config` context; -1 means every core.""",
    "device": """\
device : str, default="cpu"
    torch device to train and predict on ("cuda" when available).""",
}


def fill_doc(obj):
    """Substitute ``%(name)s`` pieces into ``obj.__doc__`` (and its methods'); return ``obj``.

    Parameters
    ----------
    obj : class or function

    Examples
    --------
    >>> from sklearn_icml.utils._docstrings import fill_doc
    >>> @fill_doc
    ... def f(verbose=0):
    ...     '''Do it.
    ...
    ...     %(verbose)s
    ...     '''
    >>> print(f.__doc__.splitlines()[2])
    verbose : int, default=0
    """
    table = COMMON_PIECES
    obj.__doc__ = inspect.cleandoc(obj.__doc__) % table
    for member in vars(obj).values() if isinstance(obj, type) else ():
        if inspect.isfunction(member) and "%(" in (member.__doc__ or ""):
            member.__doc__ = inspect.cleandoc(member.__doc__) % table
    return obj
