"""Generalized additive models: stump forests optimised jointly (Gabidolla & Carreira-Perpinan)."""

from ._display import LocalExplanationDisplay, ShapeFunctionDisplay, TermImportanceDisplay
from ._stump_forest import StumpForestGAMClassifier, StumpForestGAMRegressor

__all__ = [
    "LocalExplanationDisplay",
    "ShapeFunctionDisplay",
    "StumpForestGAMClassifier",
    "StumpForestGAMRegressor",
    "TermImportanceDisplay",
]
