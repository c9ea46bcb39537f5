"""Bandit algorithms and their environments."""

__all__ = []

# --- multi-agent-bai ---
from ._clustered_env import ClusteredBanditEnv, make_clustered_bandit  # noqa: E402
from ._multi_agent_bai import (  # noqa: E402
    BAICl,
    BAIClPlusPlus,
    ClBAI,
    MultiAgentBAIResult,
    NaiveBAI,
    SEResult,
    run_seeds,
    successive_elimination,
)

__all__ += [
    "BAICl",
    "BAIClPlusPlus",
    "ClBAI",
    "ClusteredBanditEnv",
    "MultiAgentBAIResult",
    "NaiveBAI",
    "SEResult",
    "make_clustered_bandit",
    "run_seeds",
    "successive_elimination",
]

# --- bandits-with-interference ---
from ._exp3ix import (  # noqa: E402
    ClusterRandomizedEXP3IX,
    InterferenceBanditResult,
    SwitchbackEXP3IX,
    exposure_probability,
    regret_across_seeds,
)
from ._interference_env import InterferenceGridEnv  # noqa: E402

__all__ += [
    "ClusterRandomizedEXP3IX",
    "InterferenceBanditResult",
    "InterferenceGridEnv",
    "SwitchbackEXP3IX",
    "exposure_probability",
    "regret_across_seeds",
]
