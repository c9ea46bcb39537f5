"""Continual learning: Learning without Isolation (needs the ``neural`` extra)."""

from ._fusion import fuse_models
from ._lwi import LwIClassifier

__all__ = [
    "LwIClassifier",
    "fuse_models",
]
