"""Data weighting by bi-level optimisation (needs the ``neural`` extra)."""

from ._causal_lm import CausalLMLearner, DWMCausalLM
from ._char_lm import CharGRUModule, DWMCharLM
from ._dwm import DWMClassifier, DWMRegressor
from ._hypergradient import one_step_hypergradient
from ._weighting_model import WeightingMLP, compute_weights, effective_sample_size

__all__ = [
    "CausalLMLearner",
    "CharGRUModule",
    "DWMCausalLM",
    "DWMCharLM",
    "DWMClassifier",
    "DWMRegressor",
    "WeightingMLP",
    "compute_weights",
    "effective_sample_size",
    "one_step_hypergradient",
]
