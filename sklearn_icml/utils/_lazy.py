"""Module-level lazy attributes, so a subpackage can offer torch-based names without
importing torch when the subpackage itself is imported."""

import importlib
import importlib.util
import sys


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


def _installed(module):
    """Whether top-level ``module`` can be found, without importing it."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a blocked module, or one importlib cannot locate
        return False


def lazy_module(package, public_names, lazy_names, needs):
    """``__getattr__`` and ``__dir__`` for a subpackage that imports some names lazily.

    The subpackage builds its ``__all__`` (every public name, the lazy ones included),
    passes it here and then deletes it: ``__all__`` is answered by ``__getattr__``, with
    the lazy names whose dependencies are not installed left out, so that
    ``from package import *`` works without torch and binds the other names (with torch,
    it binds them all and imports the lazy modules, as ``import *`` imports every name).
    Answering ``__all__`` imports nothing: each dependency is looked up with
    :func:`importlib.util.find_spec`.

    Parameters
    ----------
    package : str
        The subpackage's ``__name__``; relative module paths resolve against it.
    public_names : list of str
        The subpackage's public names, lazy ones included.
    lazy_names : dict of str to str
        Public name -> relative module holding it (e.g. ``{"DPSGDClassifier": "._dpsgd"}``).
    needs : dict of str to tuple of str
        Relative module -> the top-level modules it imports (e.g. ``("torch", "skorch")``).

    Returns
    -------
    __getattr__, __dir__ : callable
        The module-level functions (PEP 562).

    Examples
    --------
    >>> from sklearn_icml.utils._lazy import lazy_module
    >>> getattr_, dir_ = lazy_module(
    ...     "sklearn_icml.utils", ["check_generator", "optional_import"],
    ...     {"optional_import": "._optional"}, {"._optional": ("no_such_module_xyz",)})
    >>> getattr_("__all__")
    ['check_generator']
    """
    public_names = list(public_names)
    lazy_getattr_ = lazy_getattr(package, lazy_names)

    def __getattr__(name):
        if name == "__all__":
            return [
                n
                for n in public_names
                if n not in lazy_names or all(map(_installed, needs[lazy_names[n]]))
            ]
        return lazy_getattr_(name)

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(public_names) | {"__all__"})

    return __getattr__, __dir__
