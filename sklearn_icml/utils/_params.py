"""Storing a constructor's parameters: scikit-learn's ``__init__`` contract in one call.

scikit-learn asks an estimator's ``__init__`` to do nothing but store each parameter,
unchanged, as an attribute of the same name (``get_params``, ``set_params`` and ``clone``
read them back by the names of the signature; validation waits for ``fit``). Written out,
that is one ``self.name = name`` line per parameter, and a parameter added to the signature
but forgotten there, or stored under another name, breaks ``clone`` silently.
:func:`store_params` stores them all from the constructor's ``locals()``, so the signature
is the single list of parameters.
"""

__all__ = ["store_params"]

_NOT_PARAMETERS = ("self", "__class__")


def store_params(estimator, arguments):
    """Store each argument of ``estimator``'s ``__init__`` under its own name, unchanged.

    Call it first in the constructor, as ``store_params(self, locals())``, before any other
    local name exists. ``**kwargs`` (the routed ``module__*``-style keywords of the neural
    estimators) go to ``estimator._store_routed_params``.

    Parameters
    ----------
    estimator : object
        The object under construction.
    arguments : dict
        The constructor's ``locals()``: its parameters, ``self`` and, in a constructor that
        calls ``super()``, ``__class__``.

    Returns
    -------
    None

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from sklearn_icml.utils._params import store_params
    >>> class Model(BaseEstimator):
    ...     def __init__(self, *, alpha=1.0, max_iter=100):
    ...         store_params(self, locals())
    >>> Model(alpha=0.5).get_params()
    {'alpha': 0.5, 'max_iter': 100}
    """
    routed = {}
    for name, value in arguments.items():
        if name in _NOT_PARAMETERS:
            continue
        if name == "kwargs":
            routed = value
            continue
        setattr(estimator, name, value)
    if routed or "kwargs" in arguments:
        store_routed = getattr(estimator, "_store_routed_params", None)
        if store_routed is None:
            raise TypeError(
                f"{type(estimator).__name__}.__init__ takes **kwargs, which only an "
                "estimator with _store_routed_params can route; list the parameters in the "
                "signature instead."
            )
        store_routed(routed)
