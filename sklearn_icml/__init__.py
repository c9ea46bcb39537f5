"""Methods of ICML 2025 papers as scikit-learn estimators.

Subpackages are imported lazily: ``import sklearn_icml`` costs almost nothing and never
imports torch, skorch or gymnasium. ``sklearn_icml.gam`` (say) is imported on first access.
"""

import importlib

from ._version import __version__

_SUBPACKAGES = (
    "alignment",
    "bandits",
    "cluster",
    "compression",
    "continual",
    "datasets",
    "gam",
    "generative",
    "lora",
    "mas",
    "metrics",
    "neural",
    "privacy",
    "safe_rl",
    "utils",
    "video",
    "weighting",
)

__all__ = ["__version__", *_SUBPACKAGES]


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
