"""Input checks shared by all methods.

Each helper raises ``ValueError``/``TypeError`` whose message names the parameter, what was
given and what is expected, and never modifies the caller's array.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from ._deprecation import renamed


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
    check_not_complex(arr, name)  # a cast to int would drop the imaginary part
    if arr.dtype.kind == "f":
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


# --------------------------------------------------------------------------- array input
#
# scikit-learn's ``validate_data`` / ``check_array`` leave three kinds of bad input to numpy,
# whose messages name neither the argument nor the fix: strings ("could not convert string to
# float: 'a'"), pandas categorical columns (kept as an object array, which then fails inside
# the estimator) and complex numbers ("Complex data not supported"). The wrappers below call
# scikit-learn's and turn those into errors that name the argument, what was given and what
# to do. Every estimator of the library validates its tables through them.

_ENCODE_HINT = (
    "encode text or categorical columns as numbers first, e.g. with "
    "sklearn.preprocessing.OneHotEncoder or OrdinalEncoder in a Pipeline (or a "
    "ColumnTransformer for some columns)"
)


_RESCALE_HINT = "Rescale it (e.g. sklearn.preprocessing.StandardScaler in a Pipeline)"


def _first_string(array):
    """``(where, value)`` of the first entry of ``array`` that is a string, or None.

    ``where`` is "column 'name'" for a DataFrame and "row i, column j" (or "position i")
    for an array. Only object (and string) dtypes are read entry by entry.
    """
    if sp.issparse(array):  # scipy's sparse containers hold numbers only
        return None
    if hasattr(array, "columns") and hasattr(array, "dtypes"):  # pandas DataFrame
        for col in array.columns:
            column = array[col]
            if column.dtype.kind in "biufc":
                continue
            for value in column.to_numpy(dtype=object):
                if _is_string(value):
                    return f"column {col!r}", value
        return None
    try:
        arr = np.asarray(array, dtype=object)
    except (TypeError, ValueError):  # ragged nested lists: numpy's message is kept
        return None
    if arr.ndim == 0:
        return (None, arr.item()) if _is_string(arr.item()) else None
    for index, value in np.ndenumerate(arr):
        if _is_string(value):
            if arr.ndim == 1:
                return f"position {index[0]}", value
            if arr.ndim == 2:
                return "row {}, column {}".format(*index), value
            return f"index {tuple(int(i) for i in index)}", value
    return None


def _is_string(value):
    return isinstance(value, str | bytes | np.str_ | np.bytes_)


def _who(estimator, default):
    if estimator is None:
        return default
    return estimator if isinstance(estimator, str) else type(estimator).__name__


class ComplexInputError(TypeError, ValueError):
    """Complex numbers where real ones are needed: a TypeError (a wrong kind of number),
    and a ValueError as scikit-learn raises for complex data."""


def _complex_error(name, array, estimator=None):
    return ComplexInputError(
        f"Complex data not supported: {name} holds complex numbers, which "
        f"{_who(estimator, 'this function')} does not accept (a cast to float would silently "
        "drop the imaginary part). Pass real values, e.g. np.real or np.abs of them. Got "
        f"dtype {np.asarray(array).dtype} instead."
    )


def _string_error(name, array, estimator=None):
    """ValueError for strings in ``array``, or None when none is found in it (other objects
    that are not numbers are left to scikit-learn's TypeError)."""
    found = _first_string(array)
    if found is None:
        return None
    where, value = found
    who = _who(estimator, "this estimator")
    at = "" if where is None else f" (first at {where})"
    return ValueError(
        f"{name} holds non-numeric values{at}; {who} needs numbers: {_ENCODE_HINT}. "
        f"Got {value!r} instead."
    )


def _kind(dtype):
    """numpy's kind character of a numpy or pandas dtype (pandas' extension dtypes, such as
    the string dtype, are not numpy dtypes but carry a ``kind``), or None."""
    if dtype is None:
        return None
    kind = getattr(dtype, "kind", None)
    if kind is None:
        try:
            kind = np.dtype(dtype).kind
        except TypeError:
            return None
    return kind


def check_not_complex(array, name, estimator=None):
    """Raise :class:`ComplexInputError` (a TypeError and a ValueError) if ``array`` holds
    complex numbers (numpy would drop the imaginary part with only a ComplexWarning);
    return ``array`` unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.utils.validation import check_not_complex
    >>> check_not_complex(np.array([1 + 2j]), "orders")
    Traceback (most recent call last):
    ...
    sklearn_icml.utils.validation.ComplexInputError: Complex data not supported: orders holds ...
    """
    dtype = getattr(array, "dtype", None)
    if dtype is None and not hasattr(array, "dtypes"):
        try:
            dtype = np.asarray(array).dtype
        except (TypeError, ValueError):
            return array
    kind = _kind(dtype)
    if kind == "c":
        raise _complex_error(name, array, estimator)
    if hasattr(array, "dtypes") and any(
        getattr(d, "kind", "") == "c" for d in np.atleast_1d(array.dtypes)
    ):
        raise _complex_error(name, array, estimator)
    if kind == "O":
        try:
            values = np.asarray(array, dtype=object).ravel()
        except (TypeError, ValueError):
            return array
        if any(isinstance(v, complex | np.complexfloating) for v in values):
            raise _complex_error(name, array, estimator)
    return array


def check_fits_dtype(array, name, dtype=np.float32, *, estimator=None, advice=None):
    """Raise ValueError if a finite value of ``array`` is too large for ``dtype``.

    A model that computes in float32 (every torch network of the library) turns a finite
    ``1e300`` into infinity on the cast, and then into NaN outputs; such values are refused
    here, with their size and what to do, instead. ``advice`` replaces the default "rescale
    it" sentence. Returns ``array`` unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.utils.validation import check_fits_dtype
    >>> check_fits_dtype(np.array([[1.0, 1e300]]), "X")
    Traceback (most recent call last):
    ...
    ValueError: X has values too large for float32 (the precision this model computes in: ...
    """
    arr = np.asarray(array)
    if arr.dtype.kind not in "fiu" or arr.size == 0:
        return array
    limit = float(np.finfo(dtype).max)
    with np.errstate(invalid="ignore"):
        big = np.abs(arr[np.isfinite(arr)]).max(initial=0.0)
    if big > limit:
        who = _who(estimator, "this model")
        raise ValueError(
            f"{name} has values too large for {np.dtype(dtype).name} (the precision {who} "
            f"computes in: magnitudes up to {limit:.3g}), which would overflow to infinity "
            f"and give NaN. {advice or _RESCALE_HINT}. Got a value of magnitude {big:.3g} "
            "instead."
        )
    return array


def _wants_numbers(dtype):
    """Whether a scikit-learn ``dtype`` argument asks for numbers ("numeric", a numeric
    dtype, or a list of them), as opposed to ``None`` or ``object`` (anything goes)."""
    if dtype is None:
        return False
    if isinstance(dtype, str) and dtype == "numeric":
        return True
    if isinstance(dtype, list | tuple):
        return all(_wants_numbers(d) for d in dtype)
    try:
        return np.dtype(dtype).kind in "biuf"
    except TypeError:
        return False


def _refuse_non_numbers(value, name, estimator, *, strings):
    """Check ``value``'s dtypes before scikit-learn converts it: complex numbers always raise
    :class:`ComplexInputError`; with ``strings``, a string (or any entry that is not a
    number) raises a ValueError naming ``name``, where the first one is and how to encode it.
    Numeric dtypes cost one look at the dtype; only object columns are read entry by entry."""
    check_not_complex(value, name, estimator)
    if not strings:
        return
    if hasattr(value, "dtypes") and hasattr(value, "columns"):  # a DataFrame
        if all(getattr(d, "kind", "O") in "biuf" for d in value.dtypes):
            return
    else:
        dtype = getattr(value, "dtype", None)
        if dtype is None:
            try:
                dtype = np.asarray(value).dtype
            except (TypeError, ValueError):  # ragged nested lists: scikit-learn's message
                return
        if getattr(dtype, "kind", "O") in "biuf":
            return
    clear = _string_error(name, value, estimator)
    if clear is not None:
        raise clear


def _as_float_if_object(result, estimator):
    """scikit-learn keeps a pandas categorical column as an object array under
    ``dtype="numeric"``; its entries were checked to be numbers, so convert to float64."""
    if isinstance(result, np.ndarray) and result.dtype == object:
        return result.astype(np.float64)
    return result


def validate_input(_estimator, /, X="no_validation", y="no_validation", **kwargs):
    """:func:`sklearn.utils.validation.validate_data`, with the input's dtypes checked first.

    Takes and returns what scikit-learn's function does. Before it is called, ``X`` is
    checked for what a numeric ``dtype`` cannot hold: a string (or a pandas column of
    strings) raises a ValueError naming the argument, where the first string is and how to
    encode it; complex numbers raise a TypeError (``y`` too, and strings in ``y`` when
    ``y_numeric=True``). An object array (or categorical column) whose entries are all
    numbers is returned as float64, as scikit-learn does for object arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from sklearn_icml.utils.validation import validate_input
    >>> validate_input(LinearRegression(), np.array([[1.0, "a"]], dtype=object))
    Traceback (most recent call last):
    ...
    ValueError: X holds non-numeric values (first at row 0, column 1); LinearRegression needs ...
    """
    from sklearn.utils.validation import validate_data

    check = not kwargs.get("skip_check_array", False)
    numeric = check and _wants_numbers(kwargs.get("dtype", "numeric"))
    if check and not _is_placeholder(X):
        _refuse_non_numbers(X, "X", _estimator, strings=numeric)
    if check and not _is_placeholder(y):
        _refuse_non_numbers(y, "y", _estimator, strings=bool(kwargs.get("y_numeric")))
    out = validate_data(_estimator, X, y, **kwargs)
    if not numeric:
        return out
    if _is_placeholder(y):
        return _as_float_if_object(out, _estimator)
    if _is_placeholder(X):
        return out
    X_out, y_out = out
    return _as_float_if_object(X_out, _estimator), y_out


def _is_placeholder(value):
    return value is None or (isinstance(value, str) and value == "no_validation")


def check_input_array(array, *, input_name="", estimator=None, **kwargs):
    """:func:`sklearn.utils.check_array`, with the input's dtypes checked first.

    As :func:`validate_input`: strings (for a numeric ``dtype``) and complex numbers raise
    errors naming ``input_name`` ("array" when empty) before scikit-learn is called.

    Examples
    --------
    >>> from sklearn_icml.utils.validation import check_input_array
    >>> check_input_array([[1.0, "b"]], input_name="X_control")
    Traceback (most recent call last):
    ...
    ValueError: X_control holds non-numeric values (first at row 0, column 1); this estimator ...
    """
    from sklearn.utils.validation import check_array

    name = input_name or "array"
    numeric = _wants_numbers(kwargs.get("dtype", "numeric"))
    _refuse_non_numbers(array, name, estimator, strings=numeric)
    out = check_array(array, input_name=input_name, estimator=estimator, **kwargs)
    return _as_float_if_object(out, estimator) if numeric else out


#: Deprecated names (they shadowed scikit-learn's own functions).
validate_data = renamed(validate_input, "validate_data")
check_array = renamed(check_input_array, "check_array")


def check_finite_outputs(outputs, X, estimator, name="X"):
    """Raise ValueError if a model's ``outputs`` on the rows of ``X`` are not all finite.

    The last guard against silent NaN: values that fit the model's dtype can still overflow
    inside it (a weight times ``1e38``). The message names the first bad row and the size
    of its largest value. Returns ``outputs`` unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.utils.validation import check_finite_outputs
    >>> check_finite_outputs(np.array([0.5, np.nan]), np.array([[1.0], [1e38]]), "MyModel")
    Traceback (most recent call last):
    ...
    ValueError: MyModel gave NaN or infinite outputs on 1 of the 2 rows of X (first row 1, ...
    """
    out = np.asarray(outputs)
    if out.size == 0 or np.all(np.isfinite(out)):
        return outputs
    rows = ~np.all(np.isfinite(out.reshape(out.shape[0], -1)), axis=1)
    first = int(np.flatnonzero(rows)[0])
    big = float(np.max(np.abs(np.asarray(X, dtype=np.float64)[first])))
    raise ValueError(
        f"{_who(estimator, 'this model')} gave NaN or infinite outputs on {int(rows.sum())} "
        f"of the {out.shape[0]} rows of {name} (first row {first}, whose largest value has "
        f"magnitude {big:.3g}): its values overflow inside the model. Rescale {name} as the "
        "training data were. Got non-finite outputs instead."
    )
