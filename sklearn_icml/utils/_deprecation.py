"""scikit-learn's deprecation cycle for renamed public names.

A renamed name keeps working for one release (it is removed in :data:`REMOVED_IN`) and warns
with a :class:`FutureWarning` that names the new name; CHANGELOG.md lists every rename.

* A renamed **parameter** of a class: keep the old one in ``__init__`` with the default
  ``"deprecated"`` and the constraint :data:`DEPRECATED_PARAM`, and read the value through
  :func:`renamed_param` where the new one is read.
* A renamed **function or method**: ``old = renamed(new, "old")`` next to the new one; a
  name that goes without a one-to-one replacement: ``@deprecated("... use ... instead")``.
* Parameters that became **keyword-only**: decorate with :func:`keyword_only_after`.
"""

import functools
import inspect
import warnings

from sklearn.utils._param_validation import Hidden, StrOptions

__all__ = [
    "DEPRECATED",
    "deprecated",
    "DEPRECATED_PARAM",
    "REMOVED_IN",
    "keyword_only_after",
    "renamed",
    "renamed_param",
]

#: The release that removes the names deprecated in this one.
REMOVED_IN = "0.4"
#: Default of a renamed parameter's old name: "not given".
DEPRECATED = "deprecated"
#: The constraint of a renamed parameter's old name, on top of the new name's constraints.
DEPRECATED_PARAM = Hidden(StrOptions({DEPRECATED}))


def _is_unset(value):
    return isinstance(value, str) and value == DEPRECATED


def renamed_param(obj, old, new):
    """Value of parameter ``new`` of ``obj``, taking a value given under ``old`` with a warning.

    Parameters
    ----------
    obj : object
        The estimator (or other object) whose parameters are read.
    old, new : str
        The parameter's old and new names.

    Returns
    -------
    object
        ``obj.<old>`` when it was given (after a FutureWarning), else ``obj.<new>``.

    Raises
    ------
    ValueError
        When both names were given different values.

    Examples
    --------
    >>> import warnings
    >>> class Model:
    ...     def __init__(self, *, learning_rate=0.1, lr="deprecated"):
    ...         self.learning_rate, self.lr = learning_rate, lr
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     renamed_param(Model(lr=0.5), "lr", "learning_rate")
    0.5
    >>> print(caught[0].message)
    Model: the parameter `lr` was renamed `learning_rate` in 0.3 and `lr` will be removed ...
    >>> renamed_param(Model(learning_rate=0.2), "lr", "learning_rate")
    0.2
    """
    old_value = getattr(obj, old)
    new_value = getattr(obj, new)
    if _is_unset(old_value):
        return new_value
    owner = type(obj).__name__
    default = inspect.signature(type(obj)).parameters[new].default
    if new_value is not default and not _same(new_value, default) and not _same(
        new_value, old_value
    ):
        raise ValueError(
            f"{owner}: `{old}` is the deprecated name of `{new}`; pass only {new}=... "
            f"Got {old}={old_value!r} and {new}={new_value!r} instead."
        )
    warnings.warn(
        f"{owner}: the parameter `{old}` was renamed `{new}` in 0.3 and `{old}` will be "
        f"removed in {REMOVED_IN}; pass {new}={old_value!r} instead.",
        FutureWarning,
        stacklevel=3,
    )
    return old_value


def _same(a, b):
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays and the like: compared by identity above
        return False


def renamed(func, old_name):
    """A deprecated alias ``old_name`` of ``func`` that warns, then calls ``func``.

    Works for functions and for methods (assign it in the class body).

    Parameters
    ----------
    func : callable
        The function or method under its new name.
    old_name : str
        The old name.

    Returns
    -------
    callable
        The alias.

    Examples
    --------
    >>> def execute(x):
    ...     return 2 * x
    >>> run = renamed(execute, "run")
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     run(2), str(caught[0].message)[:35]
    (4, '`run` was renamed `execute` in 0.3 ')
    """

    alias = deprecated(
        f"`{old_name}` was renamed `{func.__name__}` in 0.3 and `{old_name}` will be "
        f"removed in {REMOVED_IN}; call `{func.__name__}` instead."
    )(func)
    alias.__name__ = old_name
    owner, _, _ = func.__qualname__.rpartition(".")
    alias.__qualname__ = f"{owner}.{old_name}" if owner else old_name
    alias.__doc__ = (
        f"Deprecated alias of ``{func.__name__}`` (removed in {REMOVED_IN}).\n\n"
        f"Calls ``{func.__name__}`` with the same arguments after a FutureWarning."
    )
    return alias


def deprecated(message):
    """Decorator: calling the function warns ``FutureWarning(message)`` first.

    For a name that is not simply renamed (a method that became a function, a harness that
    leaves the public API); ``message`` says what to use instead and when the name goes. The
    function is marked as PEP 702's decorator marks it (``__deprecated__`` holds the message).

    Parameters
    ----------
    message : str
        The warning's text.

    Returns
    -------
    callable
        The decorator.

    Examples
    --------
    >>> import warnings
    >>> @deprecated("old_score is removed in 0.4; use accuracy(model, env).")
    ... def old_score():
    ...     return 1.0
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old_score(), caught[0].category.__name__
    (1.0, 'FutureWarning')
    """

    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            warnings.warn(message, FutureWarning, stacklevel=2)
            return func(*args, **kwargs)

        wrapper.__deprecated__ = message
        return wrapper

    return decorate


def keyword_only_after(n_positional):
    """Decorator: parameters after the first ``n_positional`` are keyword-only, with a
    FutureWarning (not yet an error) when they are still given by position.

    Write the function with its new signature (``def f(X, *, alpha=1)``); callers passing
    ``f(X, 2)`` get ``alpha=2`` and a warning naming ``alpha=2``.

    Parameters
    ----------
    n_positional : int
        How many leading parameters stay positional (``self`` counts).

    Returns
    -------
    callable
        The decorator.

    Examples
    --------
    >>> import warnings
    >>> @keyword_only_after(1)
    ... def f(x, *, scale=1):
    ...     return x * scale
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     f(2, 3)
    6
    """

    def decorate(func):
        names = [
            p.name
            for p in inspect.signature(func).parameters.values()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        ][n_positional:]

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            extra = args[n_positional:]
            if extra:
                if len(extra) > len(names):
                    raise TypeError(
                        f"{func.__qualname__}() takes {n_positional} positional arguments; "
                        f"got {len(args)} instead."
                    )
                moved = dict(zip(names, extra, strict=False))
                given = ", ".join(f"{k}={v!r}" for k, v in moved.items())
                warnings.warn(
                    f"{func.__qualname__}: pass {', '.join(moved)} as keyword arguments "
                    f"({given}); passing them by position will be an error in "
                    f"{REMOVED_IN}.",
                    FutureWarning,
                    stacklevel=2,
                )
                clash = set(moved) & set(kwargs)
                if clash:
                    raise TypeError(
                        f"{func.__qualname__}() got multiple values for {sorted(clash)}."
                    )
                kwargs.update(moved)
                args = args[:n_positional]
            return func(*args, **kwargs)

        return wrapper

    return decorate
