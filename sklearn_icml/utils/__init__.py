"""Utilities shared by every method: validation, random state, optional imports, discovery."""

from ._optional import optional_import
from ._random import check_generator, check_random_state, draw_seed, spawn_seeds
from .discovery import all_estimators
from .validation import check_finite, check_int_vector, check_positive_int

__all__ = [
    "all_estimators",
    "check_finite",
    "check_generator",
    "check_int_vector",
    "check_positive_int",
    "check_random_state",
    "draw_seed",
    "optional_import",
    "spawn_seeds",
]
