"""Offline preference optimisation: DPO/IPO/SLiC losses, normalisers, tabular theory.

After Agarwal, Dann & Marinov, "Design Considerations in Offline Preference-based RL"
(ICML 2025). The tabular policy, the closed-form population minimisers and the pair helpers
are numpy-only; the loss functions (torch) and the language-model trainer (torch, skorch)
are imported on first access (they are listed in ``_TORCH_NAMES``), so
``from sklearn_icml.alignment import TabularPreferencePolicy`` does not import torch.
"""

from ..utils._lazy import lazy_module

# Names that need torch are imported lazily (see __getattr__) and listed in _TORCH_NAMES.
_TORCH_NAMES = set()
__all__ = []

from ._closed_form import closed_form_policy  # noqa: E402
from ._pairs import make_preference_pairs, population_pairs  # noqa: E402
from ._tabular_policy import TabularPreferencePolicy  # noqa: E402

_LAZY = {
    "PREFERENCE_LOSSES": "._losses",
    "exponential_loss": "._losses",
    "hinge_loss": "._losses",
    "logistic_loss": "._losses",
    "preference_margin": "._losses",
    "savage_loss": "._losses",
    "squared_loss": "._losses",
    "truncated_quadratic_loss": "._losses",
    "PreferenceLMTrainer": "._lm_trainer",
    "TinyCausalLM": "._lm_trainer",
}
_TORCH_NAMES |= set(_LAZY)
__all__ += [
    "PREFERENCE_LOSSES",
    "PreferenceLMTrainer",
    "TabularPreferencePolicy",
    "TinyCausalLM",
    "closed_form_policy",
    "exponential_loss",
    "hinge_loss",
    "logistic_loss",
    "make_preference_pairs",
    "population_pairs",
    "preference_margin",
    "savage_loss",
    "squared_loss",
    "truncated_quadratic_loss",
]

# Deprecated names (removed in 0.4): importable, out of __all__ and of the API reference.
from ._closed_form import benchmark_policy  # noqa: E402, F401

# torch-based names are imported on first access only; ``__all__`` is answered by
# __getattr__ (see utils._lazy.lazy_module), without the names whose dependencies are not
# installed, so that `from sklearn_icml.alignment import *` works without torch
__getattr__, __dir__ = lazy_module(
    __name__, __all__, _LAZY, {"._losses": ("torch",), "._lm_trainer": ("torch", "skorch")}
)
del __all__
