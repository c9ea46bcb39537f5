"""The template bases every public class of sklearn-icml builds on.

As in imbalanced-learn's ``imblearn/base.py``, a base owns the public verb: it validates
the parameters declared in ``_parameter_constraints`` (through scikit-learn's
``_fit_context``), checks the input, handles the random state and the tags, and then calls
the one private method a subclass writes:

* :class:`BaseRunner`: ``run(env)``; the subclass writes ``_run(env, **run_params)``.
* :class:`BaseEnvironment`: the environment's own verbs, each starting with ``_setup()``;
  the subclass writes ``_build()`` (state derived from the parameters, at first use).
* :class:`BaseCodec`: ``fit``, ``encode``, ``decode``; the subclass writes ``_fit(X)``,
  ``_encode(X)`` and ``_decode(data)``.
* :class:`BaseNeuralEstimator` (in ``sklearn_icml._neural_base``, the skorch layer, and
  re-exported here with :class:`NeuralClassifierMixin` and :class:`NeuralRegressorMixin`):
  the subclass writes ``fit``, which builds a skorch net through
  :meth:`~BaseNeuralEstimator._fit_net`; behaviour comes through skorch callbacks.

What a subclass must write is declared with ``abc.abstractmethod``: a subclass that
misses one cannot be instantiated (``TypeError: Can't instantiate abstract class``).

Every base is a :class:`sklearn.base.BaseEstimator`: ``get_params``/``set_params``,
:func:`sklearn.base.clone`, a repr that shows the changed parameters, and pickling. An
object whose input is not a 2-D table of samples by features (videos, prompts, strings,
point clouds, LoRA collections, environments) mixes in :class:`NonTabularInputMixin`:
scikit-learn's ``check_estimator`` cannot make such input and skips the object, so the
test suite runs the checks that need no data and re-tests the API on the object's input.

This module imports nothing from torch (nor does the skorch layer it re-exports), so
``import sklearn_icml.base`` works without the ``neural`` extra.
"""

import abc
import threading
import time

import joblib
import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import HasMethods, validate_params
from sklearn.utils.validation import check_is_fitted

from ._neural_base import BaseNeuralEstimator, NeuralClassifierMixin, NeuralRegressorMixin
from .utils._param_validation import N_JOBS
from .utils._progress import Progress
from .utils._random import spawn_seeds

__all__ = [
    "BaseCodec",
    "BaseEnvironment",
    "BaseNeuralEstimator",
    "BaseRunner",
    "BuiltAttribute",
    "NeuralClassifierMixin",
    "NeuralRegressorMixin",
    "NonTabularInputMixin",
    "SetUpAtFirstUseMixin",
    "run_seeds",
]


class NonTabularInputMixin:
    """Declare that ``fit``/``predict`` do not take a 2-D table of samples by features.

    scikit-learn's ``check_estimator`` then skips the estimator (it cannot make such
    input); the checks that need no data (``get_params``, ``set_params``, repr, tags) are
    run by the test suite. Put it first in the bases, before
    :class:`~sklearn.base.BaseEstimator`.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from sklearn_icml.base import NonTabularInputMixin
    >>> class Reader(NonTabularInputMixin, BaseEstimator):
    ...     pass
    >>> Reader().__sklearn_tags__().input_tags.two_d_array
    False
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags


# --------------------------------------------------------------------------------------
# runners: bandit algorithms and RL agents


class BaseRunner(NonTabularInputMixin, BaseEstimator, metaclass=abc.ABCMeta):
    """Base for algorithms that act in an environment: bandit algorithms, RL agents.

    ``run(env)`` validates the parameters, plays the algorithm in ``env`` through the
    subclass's ``_run`` and returns ``self``; what the run found is stored in attributes
    ending in ``_`` (``best_arms_``, ``regret_``, ``policy_``, ...), and ``_check_is_run()``
    raises ``NotFittedError`` on an object that has not run yet (scikit-learn's
    ``check_is_fitted`` wants a ``fit`` method, which a runner does not have).
    ``_environment_types`` (a tuple of classes, or empty for any) names what ``run``
    accepts.

    A runner with a ``verbose`` parameter reports its progress: during ``_run``,
    ``self._progress`` is a :class:`~sklearn_icml.utils._progress.Progress` named after the
    class (its lines carry the time since ``run`` started), and ``run`` ends with a
    ``done`` line.

    Examples
    --------
    >>> from sklearn_icml.base import BaseRunner
    >>> class Counter(BaseRunner):
    ...     _parameter_constraints = {"n_steps": [int]}
    ...     def __init__(self, n_steps=3):
    ...         self.n_steps = n_steps
    ...     def _run(self, env):
    ...         self.total_ = sum(env for _ in range(self.n_steps))
    >>> Counter(n_steps=4).run(2).total_
    8
    """

    _parameter_constraints: dict = {}
    _environment_types: tuple = ()

    @_fit_context(prefer_skip_nested_validation=True)
    def run(self, env, **run_params):
        """Play the algorithm in ``env``; results go to attributes ending in ``_``.

        Parameters
        ----------
        env : environment
            The environment to act in (see the class's documentation).
        **run_params
            Passed to the algorithm (e.g. ``callback``).

        Returns
        -------
        self : object
        """
        if self._environment_types and not isinstance(env, self._environment_types):
            names = " or ".join(t.__name__ for t in self._environment_types)
            raise TypeError(
                f"env must be a {names} for {type(self).__name__}.run. Got {env!r} instead."
            )
        self._progress = Progress(type(self).__name__, getattr(self, "verbose", 0))
        try:
            self._run(env, **run_params)
        finally:
            progress = self.__dict__.pop("_progress")
            progress.close()
        progress.log("done")
        return self

    @abc.abstractmethod
    def _run(self, env, **run_params):
        """Play the algorithm in ``env``; store the results in attributes ending in ``_``."""

    def _check_is_run(self):
        # check_is_fitted wants a fit method; a runner's results are its *_ attributes
        if not any(k.endswith("_") and not k.startswith("__") for k in vars(self)):
            raise NotFittedError(
                f"This {type(self).__name__} has not been run yet: call run(env) first."
            )


def _run_one_seed(algorithm, env, seed):
    env_seed, algorithm_seed = spawn_seeds(seed, 2)
    env = clone(env)
    if "random_state" in env.get_params(deep=False):
        env.set_params(random_state=env_seed)
    algorithm = clone(algorithm)
    if "random_state" in algorithm.get_params(deep=False):
        algorithm.set_params(random_state=algorithm_seed)
    return algorithm.run(env)


#: Seconds of work below which ``run_seeds`` keeps the seeds in this process: starting
#: joblib's worker processes (loky) and importing the library in them costs about 1-3 s.
_PROCESS_START_S = 2.0


def _backend_context_in_force():
    """Whether a ``joblib.parallel_config`` / ``parallel_backend`` context names a backend."""
    config = getattr(joblib.parallel._backend, "config", None)
    if config is None:
        return False
    default = joblib.parallel.default_parallel_config["backend"]
    return config.get("backend", default) is not default


@validate_params(
    {
        "algorithm": [HasMethods(["run", "get_params"])],
        "env": [HasMethods(["get_params"])],
        "seeds": ["array-like"],
        "n_jobs": N_JOBS,
    },
    prefer_skip_nested_validation=True,
)
def run_seeds(algorithm, env, seeds, n_jobs=None):
    """Run clones of ``algorithm`` on clones of ``env``, one pair per seed, with joblib.

    For seed ``s``, :func:`~sklearn_icml.utils.spawn_seeds` splits ``s`` into two
    independent seeds, one for the environment's ``random_state`` and one for the
    algorithm's (when they have one); the pair is cloned, so neither argument is touched.
    The runs are independent, so any joblib backend can take them
    (``with joblib.parallel_backend("dask"): run_seeds(...)``).

    Worker processes are started only for work that pays for them. Inside a joblib
    backend context (``joblib.parallel_config(backend=...)`` or ``parallel_backend``), the
    seeds go to that backend as ``n_jobs`` says. Otherwise, with ``n_jobs`` above 1, the
    first seed runs in this process and is timed: when the seeds left would take less than
    about 2 s here (``_PROCESS_START_S``, what starting joblib's processes costs), they run
    here too; only longer work goes to joblib's default backend (processes). The results
    are the same either way: each run depends on its seed only.

    Parameters
    ----------
    algorithm : BaseRunner
        The algorithm to clone and run.
    env : BaseEnvironment
        The environment to clone for every run.
    seeds : array-like of int
        One run per seed, in this order.
    n_jobs : int, default=None
        Parallel jobs (joblib; ``None`` means 1 unless inside a ``parallel_backend``
        context, -1 means all cores). Without a backend context, short work runs in this
        process whatever ``n_jobs`` says (see above).

    Returns
    -------
    runs : list of BaseRunner
        The algorithm of each run, after ``run``: read its ``*_`` attributes.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.base import BaseEnvironment, BaseRunner, run_seeds
    >>> class Coin(BaseEnvironment):
    ...     def __init__(self, p=0.5, random_state=None):
    ...         self.p, self.random_state = p, random_state
    ...     def _build(self):
    ...         self._rng = np.random.default_rng(self.random_state)
    ...     def flip(self):
    ...         self._setup()
    ...         return bool(self._rng.random() < self.p)
    >>> class Flipper(BaseRunner):
    ...     def __init__(self, n_flips=100):
    ...         self.n_flips = n_flips
    ...     def _run(self, env):
    ...         self.heads_ = sum(env.flip() for _ in range(self.n_flips))
    >>> runs = run_seeds(Flipper(), Coin(p=0.3), seeds=range(3))
    >>> [r.heads_ for r in runs] == [r.heads_ for r in run_seeds(Flipper(), Coin(0.3), range(3))]
    True
    """
    seeds = [int(s) for s in np.asarray(seeds).ravel()]
    if not seeds:
        raise ValueError("seeds must name at least one seed. Got an empty sequence instead.")
    if _backend_context_in_force():  # the user's backend (dask, threads, ...) wins
        return Parallel(n_jobs=n_jobs)(
            delayed(_run_one_seed)(algorithm, env, s) for s in seeds
        )
    if len(seeds) == 1 or joblib.effective_n_jobs(n_jobs) == 1:
        return [_run_one_seed(algorithm, env, s) for s in seeds]
    start = time.perf_counter()
    runs = [_run_one_seed(algorithm, env, seeds[0])]
    left = seeds[1:]
    if (time.perf_counter() - start) * len(left) < _PROCESS_START_S:
        return runs + [_run_one_seed(algorithm, env, s) for s in left]
    return runs + Parallel(n_jobs=n_jobs)(
        delayed(_run_one_seed)(algorithm, env, s) for s in left
    )


# --------------------------------------------------------------------------------------
# objects set up at first use


# held while an object of SetUpAtFirstUseMixin builds itself at first use (re-entrant: a
# build may set up the objects it holds)
_SETUP_LOCK = threading.RLock()


class SetUpAtFirstUseMixin(metaclass=abc.ABCMeta):
    """Validate the parameters and build derived state at first use, again after set_params.

    For objects without a ``fit`` whose ``__init__`` only stores (environments, samplers,
    LLM clients): each public method starts with ``self._setup()``, which validates the
    parameters and calls the subclass's ``_build()`` once; ``set_params`` marks the object
    for a new setup (a new random stream, counters at zero). Put it before
    :class:`~sklearn.base.BaseEstimator` in the bases.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from sklearn_icml.base import SetUpAtFirstUseMixin
    >>> class Counter(SetUpAtFirstUseMixin, BaseEstimator):
    ...     _parameter_constraints = {"start": [int]}
    ...     def __init__(self, start=0):
    ...         self.start = start
    ...     def _build(self):
    ...         self._count = self.start
    ...     def tick(self):
    ...         self._setup()._count += 1
    ...         return self._count
    >>> counter = Counter(start=5)
    >>> counter.tick(), counter.tick(), counter.set_params(start=0).tick()
    (6, 7, 1)
    """

    def _setup(self):
        if not self.__dict__.get("_is_set_up", False):
            # several threads may meet an object at its first use (a client shared by the
            # threads of a MAS run): one builds it, the others wait, nobody builds it twice
            with _SETUP_LOCK:
                if not self.__dict__.get("_is_set_up", False):
                    self._validate_params()
                    self._build()
                    self._is_set_up = True
        return self

    @abc.abstractmethod
    def _build(self):
        """Derive internal state from the parameters (called once by ``_setup``)."""

    def set_params(self, **params):
        super().set_params(**params)
        self._is_set_up = False
        return self


# --------------------------------------------------------------------------------------
# environments


class BaseEnvironment(NonTabularInputMixin, SetUpAtFirstUseMixin, BaseEstimator):
    """Base for environments (bandit instances, interference grids, cost MDPs).

    ``__init__`` only stores the parameters, so an environment clones, pickles and shows
    its parameters like an estimator. They are validated, and the state derived from them
    built by the subclass's ``_build()``, at first use: each public method of the
    environment starts with ``self._setup()``. ``set_params`` marks the environment for a
    new setup.

    Examples
    --------
    >>> from sklearn_icml.base import BaseEnvironment
    >>> class Coin(BaseEnvironment):
    ...     _parameter_constraints = {"p": [float]}
    ...     def __init__(self, p=0.5):
    ...         self.p = p
    ...     def _build(self):
    ...         self.odds_ = self.p / (1 - self.p)
    ...     def odds(self):
    ...         self._setup()
    ...         return self.odds_
    >>> coin = Coin(p=0.75)
    >>> coin.odds(), coin.set_params(p=0.5).odds()
    (3.0, 1.0)
    """

    _parameter_constraints: dict = {}


class BuiltAttribute:
    """An attribute derived from the parameters: reading it sets the environment up first.

    A :class:`~sklearn_icml.base.BaseEnvironment` only stores its parameters in
    ``__init__`` and derives its state in ``_build()`` at first use. Declaring a derived
    attribute ``eta_ = BuiltAttribute()`` on the class lets ``env.eta_`` be read before any
    other call: the read runs ``env._setup()`` (validation and ``_build()``, once), then
    returns what ``_build()`` stored under ``_eta_``.

    Examples
    --------
    >>> from sklearn_icml.base import BaseEnvironment, BuiltAttribute
    >>> class Coin(BaseEnvironment):
    ...     odds_ = BuiltAttribute()
    ...     def __init__(self, p=0.5):
    ...         self.p = p
    ...     def _build(self):
    ...         self._odds_ = self.p / (1 - self.p)
    >>> Coin(p=0.75).odds_
    3.0
    """

    def __set_name__(self, owner, name):
        self.name = name
        self.slot = "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        obj._setup()
        return getattr(obj, self.slot)

    def __set__(self, obj, value):
        raise AttributeError(f"{self.name} is derived from the parameters; use set_params.")


# --------------------------------------------------------------------------------------
# codecs


class BaseCodec(NonTabularInputMixin, BaseEstimator, metaclass=abc.ABCMeta):
    """Base for codecs: ``fit`` learns a model, ``encode(X) -> bytes``, ``decode(bytes) -> X``.

    ``fit`` validates the parameters and calls ``_fit(X)``; a codec without a model to
    learn sets ``_requires_fit = False`` (its ``_fit`` has nothing to learn) and may
    ``encode`` without a ``fit``. ``encode``
    checks that the codec is fitted and returns the bytes of ``_encode(X)``; ``decode``
    checks that it receives bytes and returns ``_decode(data)``, so that
    ``decode(encode(X))`` gives ``X`` back (exactly for a lossless codec).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.base import BaseCodec
    >>> class Raw(BaseCodec):
    ...     _requires_fit = False
    ...     def _fit(self, X):
    ...         pass
    ...     def _encode(self, X):
    ...         return np.asarray(X, dtype="<f8").tobytes()
    ...     def _decode(self, data):
    ...         return np.frombuffer(data, dtype="<f8")
    >>> Raw().decode(Raw().encode([1.5, 2.0]))
    array([1.5, 2. ])
    """

    _parameter_constraints: dict = {}
    _requires_fit = True

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the codec's model from ``X``.

        Parameters
        ----------
        X : object
            Training data in the codec's input format.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        self._fit(X)
        return self

    @abc.abstractmethod
    def _fit(self, X):
        """Learn the codec's model from ``X`` into attributes ending in ``_``."""

    def encode(self, X):
        """Encode ``X`` into bytes.

        Parameters
        ----------
        X : object
            Data in the codec's input format.

        Returns
        -------
        data : bytes
        """
        if self._requires_fit:
            check_is_fitted(self)
        else:
            self._validate_params()
        data = self._encode(X)
        return bytes(data)

    def decode(self, data):
        """Decode bytes made by :meth:`encode`.

        Parameters
        ----------
        data : bytes
            The output of :meth:`encode`.

        Returns
        -------
        X : object
            The decoded data.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(
                f"data must be the bytes returned by encode. Got {type(data).__name__} instead."
            )
        if self._requires_fit:
            check_is_fitted(self)
        return self._decode(bytes(data))

    @abc.abstractmethod
    def _encode(self, X):
        """Encode ``X`` (the codec is fitted where it must be); bytes-like."""

    @abc.abstractmethod
    def _decode(self, data):
        """Decode the bytes ``data`` made by ``_encode``."""

    def __sklearn_is_fitted__(self):
        if not self._requires_fit:
            return True
        return any(k.endswith("_") and not k.startswith("__") for k in vars(self))
