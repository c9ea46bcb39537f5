"""Find the public estimators of sklearn-icml, as ``sklearn.utils.discovery`` does."""

import importlib
import importlib.util
import inspect

from sklearn.base import BaseEstimator

# Subpackages whose import pulls in torch. They are skipped unless ``include_neural=True``,
# so that discovery stays cheap and works without the ``neural`` extra. The other
# subpackages import without torch and list their torch names in ``_TORCH_NAMES``.
NEURAL_SUBPACKAGES = frozenset({"continual", "generative", "video", "weighting"})


def _subpackage_names():
    import sklearn_icml

    return [name for name in sklearn_icml._SUBPACKAGES if name not in ("utils", "datasets")]


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    # names that a subpackage imports lazily because they need torch
    torch_names = set(getattr(module, "_TORCH_NAMES", ()))
    return names, torch_names


def all_estimators(type_filter=None, *, include_neural=False):
    """List ``(name, class)`` for every public estimator of sklearn-icml.

    An estimator is a public subclass of :class:`sklearn.base.BaseEstimator` with a ``fit``
    method. Bandit algorithms, environments and samplers, which are not estimators, are not
    listed.

    Parameters
    ----------
    type_filter : {"classifier", "regressor", "cluster", "transformer"} or list, default=None
        Keep only estimators of these kinds.
    include_neural : bool, default=False
        Also import the subpackages and names that need torch. ``False`` keeps discovery
        free of torch. Names whose optional dependencies are not installed are skipped.

    Returns
    -------
    estimators : list of (str, type)
        Sorted by name.

    Examples
    --------
    >>> from sklearn_icml.utils.discovery import all_estimators
    >>> names = [name for name, _ in all_estimators()]
    >>> "CAPASimilarity" in names
    True
    """
    from sklearn.base import ClassifierMixin, ClusterMixin, RegressorMixin, TransformerMixin

    found = {}
    for sub in _subpackage_names():
        if sub in NEURAL_SUBPACKAGES and not include_neural:
            continue
        if importlib.util.find_spec(f"sklearn_icml.{sub}") is None:
            continue  # method not implemented yet
        try:
            module = importlib.import_module(f"sklearn_icml.{sub}")
        except ImportError:
            continue  # an optional dependency of this subpackage is not installed
        names, torch_names = _public_names(module)
        for name in names:
            if name in torch_names and not include_neural:
                continue
            try:
                obj = getattr(module, name)
            except ImportError:
                continue  # a lazily imported name whose optional dependency is missing
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseEstimator)
                and hasattr(obj, "fit")
                and not inspect.isabstract(obj)
            ):
                found[name] = obj

    estimators = sorted(found.items())
    if type_filter is None:
        return estimators
    kinds = [type_filter] if isinstance(type_filter, str) else list(type_filter)
    tests = {
        "classifier": lambda c: issubclass(c, ClassifierMixin),
        "regressor": lambda c: issubclass(c, RegressorMixin),
        "cluster": lambda c: issubclass(c, ClusterMixin),
        "transformer": lambda c: issubclass(c, TransformerMixin),
    }
    unknown = [k for k in kinds if k not in tests]
    if unknown:
        raise ValueError(
            f"type_filter must be among {sorted(tests)}; got {unknown!r} instead."
        )
    return [(n, c) for n, c in estimators if any(tests[k](c) for k in kinds)]
