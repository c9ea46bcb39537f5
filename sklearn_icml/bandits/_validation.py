"""Argument checks of the bandit methods, on scikit-learn's parameter-validation machinery."""

import numbers

from sklearn import get_config
from sklearn.utils._param_validation import Interval, validate_parameter_constraints


class _IndexInterval(Interval):
    """An interval of integers that, unlike scikit-learn's, refuses ``True`` and ``False``.

    For indices and counts given per call (an agent, an arm, a round, a number of pulls),
    where a bool is a mistake rather than a 0 or a 1.
    """

    def is_satisfied_by(self, val):
        return not isinstance(val, bool) and super().is_satisfied_by(val)


def index_at_least(low):
    """The constraint "an int >= ``low``" for per-call indices and counts."""
    return _IndexInterval(numbers.Integral, low, None, closed="left")


def validate_arguments(obj, method, constraints, **values):
    """Validate the arguments of ``obj.method`` as ``@validate_params`` does for functions.

    The message names ``ClassName.method`` (the public class, not the private base that
    defines the method). Skipped inside a call that already validated its input (a
    runner's ``run``), as scikit-learn skips nested validation.
    """
    if get_config()["skip_parameter_validation"]:
        return
    validate_parameter_constraints(
        constraints, values, caller_name=f"{type(obj).__name__}.{method}"
    )


def check_below(value, name, high, what):
    """Raise ValueError unless ``value < high`` (a bound known only from the instance)."""
    if value >= high:
        raise ValueError(f"{name} must be in [0, {high}) ({what}). Got {value!r} instead.")
    return int(value)
