"""bullet-safety-gym's tasks as seeded cost environments.

bullet-safety-gym (Gronauer, 2022) registers eighteen PyBullet tasks
``Safety{Ball,Car,Drone,Ant}{Circle,Gather,Reach,Run,Push}-v0`` with gymnasium; each step
gives its cost in ``info["cost"]``, as :class:`~sklearn_icml.safe_rl.EVOAgent` reads it.
The tasks draw their start states from the global ``numpy.random`` and ``random`` streams
and ignore ``reset(seed=...)``; :class:`BulletSafetyEnv` gives each environment streams
of its own, seeded by ``reset(seed=...)`` as gymnasium's environments are, so that a
seed fixes the episodes, and the caller's global streams are left as they were.
"""

import contextlib
import importlib
import random
import re
import sys
import warnings

import numpy as np

from ..base import BuiltAttribute
from ..utils import optional_import
from ..utils._optional import NO_DEPS_INSTALL, install_hint
from ..utils._param_validation import POSITIVE_INT
from ..utils._params import store_params
from ._envs import _CostEnv

gym = optional_import("gymnasium", "rl")

#: the ids bullet-safety-gym registers (``gym.make`` needs the package imported first)
BULLET_ID = re.compile(r"Safety(Ball|Car|Drone|Ant)(Circle|Gather|Reach|Run|Push)-v0")


@contextlib.contextmanager
def _real_std_streams():
    """``sys.stdout`` and ``sys.stderr`` set to the interpreter's own for the duration.

    bullet-safety-gym hides PyBullet's messages by redirecting the C-level stream behind
    ``sys.stdout`` / ``sys.stderr`` (at import, and when a task is built), which fails
    when they are not real files (pytest's capture, a notebook).
    """
    saved = sys.stdout, sys.stderr
    try:
        if sys.__stdout__ is not None:
            sys.stdout = sys.__stdout__
        if sys.__stderr__ is not None:
            sys.stderr = sys.__stderr__
        yield
    finally:
        sys.stdout, sys.stderr = saved


def import_bullet_safety_gym():
    """Import bullet-safety-gym (which registers its tasks), or say how to install it.

    Returns
    -------
    module : module
        ``bullet_safety_gym``.

    Raises
    ------
    ImportError
        If pybullet or bullet-safety-gym cannot be imported; the message gives the pip
        command (bullet-safety-gym installs with ``--no-deps``: its own pins are wrong).
    """
    try:
        with _real_std_streams():
            importlib.import_module("bullet_safety_gym.envs.builder")
    except ImportError as exc:
        top = (exc.name or "").split(".")[0]
        hint = (install_hint(exc) if top in ("pybullet", "pybullet_utils")
                else NO_DEPS_INSTALL["bullet_safety_gym"])
        raise ImportError(
            f"bullet-safety-gym's environments need {top or 'bullet_safety_gym'!r}, which "
            f"could not be imported ({exc}). Install it with: {hint}"
        ) from exc
    return sys.modules["bullet_safety_gym"]


class BulletSafetyEnv(_CostEnv):
    """A bullet-safety-gym task (PyBullet robots with a cost signal), seeded.

    Wraps ``gymnasium.make(env_id)`` of one of bullet-safety-gym's eighteen tasks
    ``Safety{Ball,Car,Drone,Ant}{Circle,Gather,Reach,Run,Push}-v0``: the observation and
    action spaces, rewards, ``info["cost"]`` and episode ends are the task's. The task
    itself draws its start states from the global ``numpy.random`` and ``random``
    streams and ignores ``reset(seed=...)``; this environment keeps streams of its own,
    seeded by ``reset(seed=...)``, so that the same seed gives the same episodes and the
    global streams are left untouched. :meth:`EVOAgent.run
    <sklearn_icml.safe_rl.EVOAgent.run>` wraps a task's id (a string) in this class.

    Needs pybullet (the ``rl`` extra) and bullet-safety-gym, which installs with
    ``pip install --no-deps bullet-safety-gym==1.4.0`` (its own pin of gymnasium 0.28 is
    wrong: it works with gymnasium 1.x).

    Parameters
    ----------
    env_id : str, default="SafetyBallCircle-v0"
        The task, one of ``Safety{Ball,Car,Drone,Ant}{Circle,Gather,Reach,Run,Push}-v0``.
    max_episode_steps : int, default=None
        Episode length (``truncated=True`` there); None keeps the task's (200 steps for
        BallCircle, 100 for BallRun).

    Attributes
    ----------
    env_ : gymnasium.Env
        The bullet-safety-gym environment (built at first use).

    See Also
    --------
    EVOAgent : The agent these environments test.
    RiskyShortcutEnv, HeavyTailPointEnv : Small numpy cost environments.

    Notes
    -----
    Not thread-safe: each call swaps the environment's streams into the global ones for
    its duration. Each environment owns a PyBullet simulation: :meth:`close` ends it. A
    pickled copy keeps the parameters only and builds a new simulation at first use.

    References
    ----------
    .. [1] S. Gronauer, "Bullet-Safety-Gym: A Framework for Constrained Reinforcement
       Learning", Technical report, TU Munich, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.safe_rl import BulletSafetyEnv
    >>> env = BulletSafetyEnv(env_id="SafetyBallRun-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, env.action_space.shape
    ((7,), (2,))
    >>> obs, reward, terminated, truncated, info = env.step(np.zeros(2, dtype=np.float32))
    >>> float(info["cost"]) >= 0.0
    True
    >>> again, _ = BulletSafetyEnv(env_id="SafetyBallRun-v0").reset(seed=0)
    >>> bool(np.array_equal(env.reset(seed=0)[0], again))
    True
    >>> env.close()
    """

    env_ = BuiltAttribute()

    _parameter_constraints: dict = {
        "env_id": [str],
        "max_episode_steps": [POSITIVE_INT, None],
    }

    def __init__(self, *, env_id="SafetyBallCircle-v0", max_episode_steps=None):
        store_params(self, locals())

    def _build(self):
        import_bullet_safety_gym()
        if not BULLET_ID.fullmatch(self.env_id):
            raise ValueError(
                "env_id must name a bullet-safety-gym task, "
                "Safety{Ball,Car,Drone,Ant}{Circle,Gather,Reach,Run,Push}-v0. "
                f"Got {self.env_id!r} instead."
            )
        # the task is built from fixed streams; the first reset reseeds them
        self._np_state = np.random.RandomState(0).get_state()
        self._py_state = random.Random(0).getstate()
        self._reseed = True
        kwargs = {}
        if self.max_episode_steps is not None:
            kwargs["max_episode_steps"] = int(self.max_episode_steps)
        with self._own_streams(), _real_std_streams(), warnings.catch_warnings():
            # the task declares float32 bounds for a float64 space: gymnasium's check of
            # them warns of an overflow that cannot happen
            warnings.filterwarnings("ignore", "overflow encountered in cast", RuntimeWarning)
            self._env_ = gym.make(self.env_id, **kwargs)
        self._observation_space = self._env_.observation_space
        self._action_space = self._env_.action_space

    @contextlib.contextmanager
    def _own_streams(self):
        """Swap this environment's streams into ``numpy.random`` and ``random``."""
        # the task draws from the legacy global stream: its state is what is swapped
        saved_np, saved_py = np.random.get_state(), random.getstate()  # noqa: NPY002
        np.random.set_state(self._np_state)  # noqa: NPY002
        random.setstate(self._py_state)
        try:
            yield
        finally:
            self._np_state = np.random.get_state()  # noqa: NPY002
            self._py_state = random.getstate()
            np.random.set_state(saved_np)  # noqa: NPY002
            random.setstate(saved_py)

    def reset(self, *, seed=None, options=None):
        self._setup()
        super().reset(seed=seed)
        if seed is not None or self._reseed:  # the streams follow np_random (the seed)
            self._reseed = False
            seeds = self.np_random.integers(2**32, size=2)
            self._np_state = np.random.RandomState(int(seeds[0])).get_state()
            self._py_state = random.Random(int(seeds[1])).getstate()
        with self._own_streams():
            obs, info = self._env_.reset(options=options)
        return obs, info

    def step(self, action):
        self._setup()
        with self._own_streams():
            obs, reward, terminated, truncated, info = self._env_.step(action)
        if "cost" not in info:
            raise ValueError(
                f"env_id {self.env_id!r} gave no info['cost']. Got info {info!r} instead."
            )
        return obs, reward, terminated, truncated, info

    def __getstate__(self):
        # the PyBullet simulation does not pickle: a copy is built afresh at first use
        state = super().__getstate__()
        keep = set(self._get_param_names()) | {"_sklearn_version"}
        return {k: v for k, v in state.items() if k in keep}

    def close(self):
        if self.__dict__.get("_is_set_up", False):
            self._env_.close()
            self._is_set_up = False
