"""Input checks shared by all methods.

Each helper raises ``ValueError``/``TypeError`` whose message names the parameter, what was
given and what is expected, and never modifies the caller's array.
"""

import numbers

import numpy as np


def check_finite(array, name):
    """Raise ValueError if ``array`` holds NaN or infinity.

    Parameters
    ----------
    array : ndarray
        The array to check.
    name : str
        Its name in the error message.

    Returns
    -------
    ndarray
        ``array`` itself, when every value is finite.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.utils.validation import check_finite
    >>> check_finite(np.array([1.0, np.nan]), "proba_a")
    Traceback (most recent call last):
    ...
    ValueError: proba_a contains NaN or infinity; every value must be finite.
    """
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinity; every value must be finite.")
    return array


def check_int_vector(values, name, *, length=None, low=None, high=None):
    """Return ``values`` as a 1-D int64 array, checking its length and range.

    Parameters
    ----------
    values : array-like
        Integer values; floats that are whole numbers are accepted.
    name : str
        Parameter name used in error messages.
    length : int, default=None
        Required length.
    low, high : int or array-like, default=None
        Inclusive lower bound and exclusive upper bound (scalars or per-element).

    Returns
    -------
    ndarray of shape (n_values,), dtype int64
        The checked values.

    Examples
    --------
    >>> from sklearn_icml.utils.validation import check_int_vector
    >>> check_int_vector([0, 2.0, 1], "y_true", high=3)
    array([0, 2, 1])
    """
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got an array of shape {arr.shape} instead.")
    if arr.dtype.kind in "fc":
        check_finite(arr, name)
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integers; got non-integer values instead.")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "b" or arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers; got dtype {arr.dtype} instead.")
    else:
        arr = arr.astype(np.int64, copy=True)
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have length {length}; got length {arr.shape[0]} instead.")
    if low is not None and np.any(arr < low):
        raise ValueError(f"{name} has values below {low!r}; got min {arr.min()} instead.")
    if high is not None and np.any(arr >= high):
        bad = int(np.flatnonzero(arr >= high)[0])
        bound = np.broadcast_to(high, arr.shape)[bad]
        raise ValueError(
            f"{name} has value {arr[bad]} at position {bad}, outside [0, {bound}); "
            "each value must index one of the item's options."
        )
    return arr


def check_positive_int(value, name, *, minimum=1):
    """Return ``value`` as int, raising if it is not an integer >= ``minimum``.

    Parameters
    ----------
    value : int
        The value to check; a bool or a float raises a TypeError.
    name : str
        Its name in the error message.
    minimum : int, default=1
        The smallest value allowed.

    Returns
    -------
    int
        ``value``.

    Examples
    --------
    >>> from sklearn_icml.utils.validation import check_positive_int
    >>> check_positive_int(3, "n_clusters", minimum=2)
    3
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {value!r} instead.")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value!r} instead.")
    return int(value)


def check_layer_sizes(sizes, name):
    """Return the hidden-layer widths ``sizes`` as a tuple of ints, each at least 1.

    An empty sequence is valid: the network is then linear.

    Examples
    --------
    >>> from sklearn_icml.utils.validation import check_layer_sizes
    >>> check_layer_sizes([16, 8], "hidden_layer_sizes"), check_layer_sizes((), "hidden")
    ((16, 8), ())
    """
    sizes = tuple(sizes)
    if any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1 for s in sizes):
        raise ValueError(
            f"{name} must hold positive integers (an empty tuple gives a linear model). "
            f"Got {sizes!r} instead."
        )
    return tuple(int(s) for s in sizes)
