"""Import optional dependencies with an error that names the extra to install."""

import importlib

# which pip extra of sklearn-icml brings each optional package
_EXTRA_OF = {
    "torch": "neural",
    "skorch": "neural",
    "gymnasium": "rl",
    "matplotlib": "plot",
    "peft": "neural",
    "opacus": "bench",
    "constriction": "compression",
    "dp_accounting": "bench",
}


def optional_import(name, extra=None):
    """Import and return module ``name``, or raise an ImportError naming the pip extra.

    Parameters
    ----------
    name : str
        Dotted module name, e.g. ``"torch"`` or ``"matplotlib.pyplot"``.
    extra : str, default=None
        The sklearn-icml extra that installs it. Guessed from the top-level package
        name when omitted.

    Returns
    -------
    module : module
        The imported module.

    Raises
    ------
    ImportError
        If the module cannot be imported; the message says which extra to install.

    Examples
    --------
    >>> from sklearn_icml.utils import optional_import
    >>> optional_import("math").sqrt(4.0)
    2.0
    >>> optional_import("no_such_package_xyz", extra="neural")
    Traceback (most recent call last):
    ...
    ImportError: 'no_such_package_xyz' is required for this feature ...
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        top = name.split(".")[0]
        extra = extra or _EXTRA_OF.get(top, "all")
        raise ImportError(
            f"{top!r} is required for this feature but could not be imported ({exc}). "
            f'Install it with: pip install "sklearn-icml[{extra}]"'
        ) from exc
