"""Module-level lazy attributes, so a subpackage can offer torch-based names without
importing torch when the subpackage itself is imported."""

import importlib


def lazy_getattr(package, lazy_names):
    """Return a module ``__getattr__`` that imports ``lazy_names[name]`` on first access.

    Parameters
    ----------
    package : str
        The subpackage's ``__name__``; relative module paths resolve against it.
    lazy_names : dict of str to str
        Public name -> relative module holding it (e.g. ``{"DPSGDClassifier": "._dpsgd"}``).

    Examples
    --------
    >>> from sklearn_icml.utils._lazy import lazy_getattr
    >>> getattr_ = lazy_getattr("sklearn_icml.utils", {"optional_import": "._optional"})
    >>> getattr_("optional_import").__name__
    'optional_import'
    """

    def __getattr__(name):
        if name in lazy_names:
            return getattr(importlib.import_module(lazy_names[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
