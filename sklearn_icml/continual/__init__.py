"""Continual learning (needs the ``neural`` extra)."""

# --- lwi-continual-learning ---
from ._fusion import fuse_models
from ._lwi import LwIClassifier

__all__ = [
    # --- lwi-continual-learning ---
    "LwIClassifier",
    "fuse_models",
]
