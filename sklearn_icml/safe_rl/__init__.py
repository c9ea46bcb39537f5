"""Safe (constrained) reinforcement learning.

``GPDTailQuantile`` and ``weighted_quantile`` are numpy/scipy only. ``run_seeds`` plays
clones of an agent on clones of an environment, one pair per seed. The agent (torch) and
the environments (gymnasium) are imported lazily (see ``__getattr__``) and listed in
``_TORCH_NAMES``, so that ``import sklearn_icml.safe_rl`` needs neither.
"""

from ..base import run_seeds
from ..utils._lazy import lazy_getattr
from ._gpd import GPDTailQuantile, weighted_quantile

_TORCH_NAMES = {"EVOAgent", "RiskyShortcutEnv", "HeavyTailPointEnv"}
__all__ = [
    "EVOAgent",
    "GPDTailQuantile",
    "HeavyTailPointEnv",
    "RiskyShortcutEnv",
    "run_seeds",
    "weighted_quantile",
]

_LAZY = {
    "EVOAgent": "._evo",
    "RiskyShortcutEnv": "._envs",
    "HeavyTailPointEnv": "._envs",
}

# torch/gymnasium-based names are imported on first access only
__getattr__ = lazy_getattr(__name__, _LAZY)
