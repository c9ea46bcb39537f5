"""Utilities shared by every method: validation, optional imports, discovery."""

from ._optional import optional_import
from .discovery import all_estimators
from .validation import check_finite, check_int_vector, check_positive_int

__all__ = [
    "all_estimators",
    "check_finite",
    "check_int_vector",
    "check_positive_int",
    "optional_import",
]
