"""Generalized additive models: stump forests optimised jointly (Gabidolla & Carreira-Perpinan)."""

from ._stump_forest import StumpForestGAMClassifier, StumpForestGAMRegressor

__all__ = ["StumpForestGAMClassifier", "StumpForestGAMRegressor"]
