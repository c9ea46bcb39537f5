"""Safe (constrained) reinforcement learning.

``GPDTailQuantile`` and ``weighted_quantile`` are numpy/scipy only. ``run_seeds`` plays
clones of an agent on clones of an environment, one pair per seed. The agent (torch) and
the environments (gymnasium) are imported lazily (see ``__getattr__``) and listed in
``_TORCH_NAMES``, so that ``import sklearn_icml.safe_rl`` needs neither.
:class:`BulletSafetyEnv` imports bullet-safety-gym only when it is first used.
"""

from ..base import run_seeds
from ..utils._lazy import lazy_module
from ._gpd import GPDTailQuantile, weighted_quantile

_TORCH_NAMES = {"EVOAgent", "RiskyShortcutEnv", "HeavyTailPointEnv", "BulletSafetyEnv"}
__all__ = [
    "BulletSafetyEnv",
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
    "BulletSafetyEnv": "._bullet",
}

# torch/gymnasium-based names are imported on first access only; ``__all__`` is answered
# by __getattr__ (see utils._lazy.lazy_module), without the names whose dependencies are
# not installed, so that `from sklearn_icml.safe_rl import *` works without them
__getattr__, __dir__ = lazy_module(
    __name__, __all__, _LAZY,
    {"._evo": ("torch", "gymnasium"), "._envs": ("gymnasium",), "._bullet": ("gymnasium",)},
)
del __all__
