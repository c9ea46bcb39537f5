"""Bandit algorithms and their environments.

The algorithms are runners (:class:`~sklearn_icml.base.BaseRunner`): ``run(env)`` plays
them in an environment and returns the algorithm, whose attributes ending in ``_`` hold
what the run found; :func:`run_seeds` runs clones over many seeds. The environments are
:class:`~sklearn_icml.base.BaseEnvironment` objects, checked at first use.

``BAIClPlusPlus`` is experimental: import it after
``from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa``.
"""

from ..base import run_seeds

__all__ = ["run_seeds"]

# --- multi-agent-bai ---
from ._clustered_env import ClusteredBanditEnv, make_clustered_bandit  # noqa: E402
from ._multi_agent_bai import BAICl, ClBAI, NaiveBAI  # noqa: E402
from ._successive_elimination import SEResult, successive_elimination  # noqa: E402

__all__ += [
    "BAICl",
    "ClBAI",
    "ClusteredBanditEnv",
    "NaiveBAI",
    "SEResult",
    "make_clustered_bandit",
    "successive_elimination",
]

# --- bandits-with-interference ---
from ._exp3ix import ClusterRandomizedEXP3IX, SwitchbackEXP3IX  # noqa: E402
from ._interference_env import InterferenceGridEnv  # noqa: E402
from ._partitions import exposure_probability  # noqa: E402
from ._random_reward_env import RandomRewardGridEnv  # noqa: E402

__all__ += [
    "ClusterRandomizedEXP3IX",
    "InterferenceGridEnv",
    "RandomRewardGridEnv",
    "SwitchbackEXP3IX",
    "exposure_probability",
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
