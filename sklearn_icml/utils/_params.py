"""scikit-learn's parameter manners for objects that are not ``BaseEstimator`` subclasses.

Some objects of sklearn-icml learn from inputs that are not a feature matrix (pairs of
responses, lists of point clouds). ``check_estimator`` feeds random feature matrices to
``fit``, so they cannot pass it, and estimator discovery lists every ``BaseEstimator``
subclass with a ``fit``. They keep the manners nonetheless through :class:`ParamsMixin`:
keyword-only ``__init__`` that only stores, ``get_params``/``set_params`` (so
:func:`sklearn.base.clone` works), ``_parameter_constraints`` checked by
``_validate_params`` and a repr that shows the parameters that differ from the defaults.
"""

import inspect

import numpy as np
from sklearn.utils._param_validation import validate_parameter_constraints


def _same_value(value, default):
    if value is default:
        return True
    if type(value) is not type(default):
        return False
    try:
        return bool(np.all(value == default))
    except Exception:  # noqa: BLE001 - arrays of other shapes, modules, ...
        return False


class ParamsMixin:
    """``get_params``/``set_params``/``_validate_params``/``repr`` from ``__init__``.

    Examples
    --------
    >>> from sklearn.base import clone
    >>> from sklearn_icml.utils._params import ParamsMixin
    >>> class Coder(ParamsMixin):
    ...     _parameter_constraints = {"level": [int]}
    ...     def __init__(self, *, level=3):
    ...         self.level = level
    >>> coder = clone(Coder(level=9))
    >>> coder, coder.get_params()
    (Coder(level=9), {'level': 9})
    >>> try:
    ...     coder.set_params(level="high")._validate_params()
    ... except ValueError as exc:
    ...     print(type(exc).__name__)
    InvalidParameterError
    """

    @classmethod
    def _get_param_names(cls):
        parameters = inspect.signature(cls.__init__).parameters.values()
        return sorted(
            p.name
            for p in parameters
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )

    def get_params(self, deep=True):
        """Parameters of this object, as ``BaseEstimator.get_params`` returns them.

        Parameters
        ----------
        deep : bool, default=True
            Ignored (no nested estimators); kept for scikit-learn compatibility.

        Returns
        -------
        params : dict
        """
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        """Set parameters; an unknown name raises ValueError. Returns ``self``."""
        valid = self._get_param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for {type(self).__name__}; valid "
                    f"parameters are {valid!r}. Got {name!r} instead."
                )
            setattr(self, name, value)
        return self

    def _validate_params(self):
        validate_parameter_constraints(
            self._parameter_constraints,
            self.get_params(deep=False),
            caller_name=type(self).__name__,
        )

    def __repr__(self):
        defaults = {
            p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
        }
        changed = [
            f"{name}={value!r}"
            for name, value in self.get_params().items()
            if not _same_value(value, defaults.get(name, inspect.Parameter.empty))
        ]
        return f"{type(self).__name__}({', '.join(changed)})"
