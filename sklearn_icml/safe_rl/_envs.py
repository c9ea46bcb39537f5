"""Small numpy environments with rare catastrophic costs (gymnasium API, cost in info).

CPU-sized test beds for EVO: :class:`RiskyShortcutEnv` (a shortcut whose episode cost is
0 or 50) and :class:`HeavyTailPointEnv` (heavy-tailed Lomax per-step costs). Both return
the per-step cost in ``info["cost"]`` as safety-gymnasium does, and are registered with
gymnasium as ``sklearn_icml/RiskyShortcut-v0`` and ``sklearn_icml/HeavyTailPoint-v0``.
Each is a ``gymnasium.Env`` and a :class:`~sklearn_icml.base.BaseEnvironment`: the
parameters are stored by ``__init__`` (``get_params``, ``set_params``, ``clone``) and
validated, and the spaces built, at first use.
"""


import numpy as np

from ..base import BaseEnvironment
from ..utils import optional_import
from ..utils._param_validation import (
    ANY_REAL,
    CLOSED_UNIT_INTERVAL,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
)
from ..utils._params import store_params

gym = optional_import("gymnasium", "rl")


class _CostEnv(BaseEnvironment, gym.Env):
    """A gymnasium environment whose parameters behave as an estimator's.

    The subclass's ``_build`` makes ``_observation_space`` and ``_action_space``; the
    gymnasium attributes read them, so they exist from the first access on.
    """

    metadata = {"render_modes": []}

    @property
    def observation_space(self):
        """The observation space (built at first use)."""
        return self._setup()._observation_space

    @property
    def action_space(self):
        """The action space (built at first use)."""
        return self._setup()._action_space


class RiskyShortcutEnv(_CostEnv):
    """Corridor of 10 steps with a safe route and a shortcut that risks a gust.

    Action 0 (safe) pays reward 0.6 and cost 0. Action 1 (shortcut) pays reward 1.0 and,
    with probability ``gust_prob``, a gust of cost ``gust_cost`` that ends the episode
    (``terminated=True``). Reaching step ``horizon`` is ``truncated=True``. The
    observation is the step index, one-hot. All-shortcut episodes have
    ``P(C = 0) = 0.99**10 = 0.904`` and ``E[C] = 50 (1 - 0.99**10) = 4.78``.

    Parameters
    ----------
    horizon : int, default=10
        Steps per episode.
    gust_prob : float, default=0.01
        Chance of a gust per shortcut step.
    gust_cost : float, default=50.0
        Cost of a gust.

    See Also
    --------
    HeavyTailPointEnv : Continuous-action environment with heavy-tailed costs.
    EVOAgent : The agent these environments test.

    References
    ----------
    .. [1] S. Gao et al., "Extreme Value Policy Optimization for Safe Reinforcement
       Learning", ICML 2025. The paper evaluates on Safety-Gymnasium; this environment
       is a small stand-in of this library with the same kind of rare, large costs.

    Examples
    --------
    >>> from sklearn_icml.safe_rl import RiskyShortcutEnv
    >>> env = RiskyShortcutEnv()
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(0)
    >>> float(reward), float(info["cost"]), terminated, truncated
    (0.6, 0.0, False, False)
    """

    _parameter_constraints: dict = {
        "horizon": [POSITIVE_INT],
        "gust_prob": [CLOSED_UNIT_INTERVAL],
        "gust_cost": [ANY_REAL],
    }

    def __init__(self, *, horizon=10, gust_prob=0.01, gust_cost=50.0):
        store_params(self, locals())

    def _build(self):
        self._observation_space = gym.spaces.Box(0.0, 1.0, (int(self.horizon),), np.float32)
        self._action_space = gym.spaces.Discrete(2)
        self._t = 0

    def _obs(self):
        obs = np.zeros(self.horizon, dtype=np.float32)
        obs[min(self._t, self.horizon - 1)] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        self._setup()
        super().reset(seed=seed)
        self._t = 0
        return self._obs(), {}

    def step(self, action):
        self._setup()
        action = int(action)
        if action not in (0, 1):
            raise ValueError(f"action must be 0 or 1. Got {action!r} instead.")
        cost, terminated = 0.0, False
        if action == 0:
            reward = 0.6
        else:
            reward = 1.0
            if self.np_random.random() < self.gust_prob:
                cost, terminated = float(self.gust_cost), True
        self._t += 1
        truncated = not terminated and self._t >= self.horizon
        return self._obs(), reward, terminated, truncated, {"cost": cost}


class HeavyTailPointEnv(_CostEnv):
    """1-D point mass pushed right, with rare heavy-tailed (Lomax) costs.

    The action ``a`` in ``[-1, 1]`` is the reward. Each step costs
    ``Bernoulli(0.002 + 0.02 max(a, 0)**2) * Lomax(c=2.5) * 10``: small on average, with
    a heavy tail. Episodes last ``horizon`` steps (``truncated=True``). The observation
    is ``(position / horizon, t / horizon)``.

    Parameters
    ----------
    horizon : int, default=50
        Steps per episode.
    base_rate : float, default=0.002
        Cost probability at ``a <= 0``.
    rate_slope : float, default=0.02
        Added cost probability per ``max(a, 0)**2``.
    lomax_shape : float, default=2.5
        Shape ``c`` of the Lomax cost size.
    cost_scale : float, default=10.0
        Multiplier of the Lomax draw.

    See Also
    --------
    RiskyShortcutEnv : Discrete environment with binary catastrophic costs.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.safe_rl import HeavyTailPointEnv
    >>> env = HeavyTailPointEnv()
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.array([0.5]))
    >>> float(reward), "cost" in info
    (0.5, True)
    """

    _parameter_constraints: dict = {
        "horizon": [POSITIVE_INT],
        "base_rate": [CLOSED_UNIT_INTERVAL],
        "rate_slope": [NON_NEGATIVE_REAL],
        "lomax_shape": [POSITIVE_REAL],
        "cost_scale": [NON_NEGATIVE_REAL],
    }

    def __init__(self, *, horizon=50, base_rate=0.002, rate_slope=0.02, lomax_shape=2.5,
                 cost_scale=10.0):
        store_params(self, locals())

    def _build(self):
        self._observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self._action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self._t, self._x = 0, 0.0

    def _obs(self):
        return np.array([self._x / self.horizon, self._t / self.horizon], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        self._setup()
        super().reset(seed=seed)
        self._t, self._x = 0, 0.0
        return self._obs(), {}

    def step(self, action):
        self._setup()
        a = float(np.clip(np.asarray(action, dtype=float).ravel()[0], -1.0, 1.0))
        if not np.isfinite(a):
            raise ValueError(f"action must be finite. Got {action!r} instead.")
        rate = self.base_rate + self.rate_slope * max(a, 0.0) ** 2
        cost = 0.0
        if self.np_random.random() < rate:
            # Lomax(c) = Pareto-II: (1 - U)^(-1/c) - 1
            cost = self.cost_scale * ((1.0 - self.np_random.random()) ** (-1 / self.lomax_shape)
                                      - 1.0)
        self._x += a
        self._t += 1
        truncated = self._t >= self.horizon
        return self._obs(), a, False, truncated, {"cost": float(cost)}


def _register():
    for name, cls in (("RiskyShortcut-v0", RiskyShortcutEnv),
                      ("HeavyTailPoint-v0", HeavyTailPointEnv)):
        env_id = f"sklearn_icml/{name}"
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=f"{__name__}:{cls.__name__}")


_register()
