"""Checks of the arguments shared by the privacy modules.

Scalar parameters are checked by scikit-learn's ``validate_params`` and
``_parameter_constraints``, with the shared constraints of ``utils._param_validation``; the
helpers check what those cannot express: the values inside an
array, and a data range given as a width or as two ends. A wrong type raises
``TypeError``, a wrong value ``ValueError``, and every message ends "Got ... instead.".
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import StrOptions

from ..utils._param_validation import POSITIVE_REAL

#: The noise mechanisms of the stratified design: Laplace, discrete Laplace, Tulap.
MECHANISMS = ("laplace", "dlap", "tulap")

#: The ``mechanism`` parameter's options.
MECHANISM = [StrOptions(set(MECHANISMS))]
#: A width > 0 or a (lower, upper) pair, checked by :func:`range_bounds`.
DATA_RANGE = [POSITIVE_REAL, "array-like"]


def _numeric(values, name):
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric. Got dtype {arr.dtype} instead.")
    return arr.astype(np.float64)


def check_real_values(values, name):
    """``values`` as a float64 array of finite numbers."""
    arr = _numeric(values, name)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite. Got NaN or infinity in {values!r} instead.")
    return arr


def check_integer_values(values, name):
    """``values`` as a float64 array of whole numbers (for the discrete mechanisms)."""
    arr = _numeric(values, name)
    if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
        raise ValueError(
            f"{name} must hold integers for a discrete mechanism. Got {values!r} instead."
        )
    return arr


def check_positive_values(values, name):
    """``values`` (a budget or an array of them) as float64, each finite and > 0."""
    arr = _numeric(values, name)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0. Got {values!r} instead.")
    return arr


def check_rates(values, name="sampling_rate"):
    """``values`` as float64, each a sampling rate in (0, 1]."""
    arr = _numeric(values, name)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0) or np.any(arr > 1):
        raise ValueError(f"{name} must lie in (0, 1]. Got {values!r} instead.")
    return arr


def range_bounds(data_range):
    """(lower, upper) from a width ``Delta`` (lower 0) or a ``(lower, upper)`` pair."""
    if isinstance(data_range, numbers.Real) and not isinstance(data_range, bool):
        lo, hi = 0.0, data_range
    else:
        try:
            lo, hi = data_range
        except (TypeError, ValueError):
            raise ValueError(
                f"data_range must be a width > 0 or a (lower, upper) pair. Got {data_range!r} "
                "instead."
            ) from None
    try:
        lo, hi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise ValueError(f"data_range must hold numbers. Got {data_range!r} instead.") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise ValueError(
            "data_range must be finite with upper > lower (a width > 0). Got "
            f"{data_range!r} instead."
        )
    return lo, hi


def range_width(data_range, mechanism):
    """Width ``Delta`` of the data range, checked against the mechanism."""
    lo, hi = range_bounds(data_range)
    width = hi - lo
    if mechanism in ("dlap", "tulap") and not (lo == round(lo) and hi == round(hi)):
        raise ValueError(
            f"mechanism={mechanism!r} needs integer data in a range with integer ends. Got "
            f"data_range={data_range!r} instead."
        )
    if mechanism == "tulap" and width != 1:
        raise ValueError(
            "mechanism='tulap' releases counts of 0/1 data, so the data range must have "
            f"width 1. Got data_range={data_range!r} (width {width!r}) instead."
        )
    return width
