"""Bandit algorithms and their environments.

The algorithms are runners (:class:`~sklearn_icml.base.BaseRunner`): ``run(env)`` plays
them in an environment and returns the algorithm, whose attributes ending in ``_`` hold
what the run found; :func:`run_seeds` runs clones over many seeds. The environments are
:class:`~sklearn_icml.base.BaseEnvironment` objects, checked at first use.

Two papers: multi-agent best arm identification for clustered bandits (Yash,
Karamchandani and Ghosh, ICML 2025: :class:`ClBAI`, :class:`BAICl`, :class:`NaiveBAI` on a
:class:`ClusteredBanditEnv`, or on real ratings with :class:`RatingsBanditEnv`) and bandits
with interference (Jia, Frazier and Kallus,
ICML 2025: :class:`SwitchbackEXP3IX` and :class:`ClusterRandomizedEXP3IX` on an
:class:`InterferenceGridEnv` or a :class:`RandomRewardGridEnv`).

``BAIClPlusPlus`` is experimental: import it after
``from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa``.
"""

from ..base import run_seeds
from ._clustered_env import ClusteredBanditEnv, make_clustered_bandit
from ._exp3ix import ClusterRandomizedEXP3IX, SwitchbackEXP3IX
from ._interference_env import InterferenceGridEnv
from ._multi_agent_bai import BAICl, ClBAI, NaiveBAI, best_arm_accuracy
from ._partitions import exposure_probability
from ._random_reward_env import RandomRewardGridEnv
from ._ratings_env import RatingsBanditEnv
from ._successive_elimination import SEResult, successive_elimination

__all__ = [
    "BAICl",
    "ClBAI",
    "ClusterRandomizedEXP3IX",
    "ClusteredBanditEnv",
    "InterferenceGridEnv",
    "NaiveBAI",
    "RandomRewardGridEnv",
    "RatingsBanditEnv",
    "SEResult",
    "SwitchbackEXP3IX",
    "best_arm_accuracy",
    "exposure_probability",
    "make_clustered_bandit",
    "run_seeds",
    "successive_elimination",
]

_EXPERIMENTAL = {"BAIClPlusPlus": "enable_bai_cl_plus_plus"}


def __getattr__(name):
    if name in _EXPERIMENTAL:
        raise ImportError(
            f"{name} is experimental and its API might change without any deprecation "
            f"cycle. To use it, import {_EXPERIMENTAL[name]} first:\n"
            f"from sklearn_icml.experimental import {_EXPERIMENTAL[name]}  # noqa"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
