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
* :class:`BaseNeuralEstimator`: ``fit`` builds a skorch net through
  :meth:`~BaseNeuralEstimator._fit_net`; behaviour comes through skorch callbacks.

Every base is a :class:`sklearn.base.BaseEstimator`: ``get_params``/``set_params``,
:func:`sklearn.base.clone`, a repr that shows the changed parameters, and pickling. An
object whose input is not a 2-D table of samples by features (videos, prompts, strings,
point clouds, LoRA collections, environments) mixes in :class:`NonTabularInputMixin`:
scikit-learn's ``check_estimator`` cannot make such input and skips the object, so the
test suite runs the checks that need no data and re-tests the API on the object's input.

This module imports nothing from torch: :class:`BaseNeuralEstimator` imports skorch and
torch inside its methods, so ``import sklearn_icml.base`` works without the ``neural``
extra.
"""

import copy
import numbers

import numpy as np
from joblib import Parallel, delayed
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import HasMethods, Interval, validate_params
from sklearn.utils.validation import check_is_fitted

from .utils._param_validation import POSITIVE_INT
from .utils._random import draw_seed, spawn_seeds

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


class BaseRunner(NonTabularInputMixin, BaseEstimator):
    """Base for algorithms that act in an environment: bandit algorithms, RL agents.

    ``run(env)`` validates the parameters, plays the algorithm in ``env`` through the
    subclass's ``_run`` and returns ``self``; what the run found is stored in attributes
    ending in ``_`` (``best_arms_``, ``regret_``, ``policy_``, ...), and ``_check_is_run()``
    raises ``NotFittedError`` on an object that has not run yet (scikit-learn's
    ``check_is_fitted`` wants a ``fit`` method, which a runner does not have).
    ``_environment_types`` (a tuple of classes, or empty for any) names what ``run``
    accepts.

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
        self._run(env, **run_params)
        return self

    def _run(self, env, **run_params):
        raise NotImplementedError

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


@validate_params(
    {
        "algorithm": [HasMethods(["run", "get_params"])],
        "env": [HasMethods(["get_params"])],
        "seeds": ["array-like"],
        "n_jobs": [Interval(numbers.Integral, None, None, closed="neither"), None],
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
        context, -1 means all cores).

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
    return Parallel(n_jobs=n_jobs)(delayed(_run_one_seed)(algorithm, env, s) for s in seeds)


# --------------------------------------------------------------------------------------
# objects set up at first use


class SetUpAtFirstUseMixin:
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
            self._validate_params()
            self._build()
            self._is_set_up = True
        return self

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


class BaseCodec(NonTabularInputMixin, BaseEstimator):
    """Base for codecs: ``fit`` learns a model, ``encode(X) -> bytes``, ``decode(bytes) -> X``.

    ``fit`` validates the parameters and calls ``_fit(X)``; a codec without a model to
    learn sets ``_requires_fit = False`` and may ``encode`` without a ``fit``. ``encode``
    checks that the codec is fitted and returns the bytes of ``_encode(X)``; ``decode``
    checks that it receives bytes and returns ``_decode(data)``, so that
    ``decode(encode(X))`` gives ``X`` back (exactly for a lossless codec).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.base import BaseCodec
    >>> class Raw(BaseCodec):
    ...     _requires_fit = False
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

    def _fit(self, X):
        self.is_fitted_ = True

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

    def _encode(self, X):
        raise NotImplementedError

    def _decode(self, data):
        raise NotImplementedError

    def __sklearn_is_fitted__(self):
        if not self._requires_fit:
            return True
        return any(k.endswith("_") and not k.startswith("__") for k in vars(self))


# --------------------------------------------------------------------------------------
# neural estimators over skorch

#: Keyword arguments with these prefixes are routed to the skorch net, as skorch itself
#: routes them: ``module__hidden=32`` becomes the module's ``hidden`` argument.
ROUTED_PREFIXES = (
    "module__",
    "optimizer__",
    "criterion__",
    "iterator_train__",
    "iterator_valid__",
    "callbacks__",
)


class BaseNeuralEstimator(BaseEstimator):
    """Base for the estimators that train a torch module through skorch.

    The parameters every neural estimator shares (``device``, ``n_jobs``,
    ``random_state``, ``verbose``) are declared once here; a subclass extends
    ``{**BaseNeuralEstimator._parameter_constraints, ...}``.

    A subclass is a scikit-learn estimator (keyword-only ``__init__`` that only stores,
    ``_parameter_constraints``, ``validate_data``) whose ``fit`` builds the skorch net
    through :meth:`_fit_net` and keeps it in ``net_``. The base

    * checks ``device`` (CPU by default, ``"cuda"`` honoured when available) and keeps
      skorch silent unless ``verbose`` (``verbose=1`` prints skorch's per-epoch table);
    * disables skorch's internal validation split: validation is the user's business,
      through scikit-learn's tools;
    * seeds torch with :func:`~sklearn_icml.utils.draw_seed` of ``random_state`` under a
      forked torch RNG, so a fit is reproducible and leaves the caller's RNG alone;
    * bounds torch's intra-op threads to ``n_jobs`` during the fit;
    * adds behaviour through skorch callbacks: the subclass passes its own
      (``callbacks=[...]``) and the user's ``callbacks`` parameter is deep-copied, so a
      fit never mutates a parameter; a callback stops training when the loss is not
      finite, and :meth:`_fit_net` then raises;
    * routes keyword arguments prefixed ``module__``, ``optimizer__``, ``criterion__``,
      ``iterator_train__``, ``iterator_valid__`` or ``callbacks__`` to the net, as skorch
      does; they are parameters (``get_params``, ``set_params``, ``clone``,
      ``GridSearchCV``). A subclass accepts them with ``**kwargs`` in ``__init__`` and
      passes them to :meth:`_store_routed_params`, which only stores; ``fit`` raises a
      TypeError for a keyword without one of these prefixes;
    * exposes ``module_``, ``history_`` and ``n_epochs_run_``. A fitted estimator pickles
      through skorch's own ``__getstate__``.

    Examples
    --------
    >>> from sklearn_icml.base import BaseNeuralEstimator
    >>> class Net(BaseNeuralEstimator):
    ...     def __init__(self, *, lr=0.1, **kwargs):
    ...         self.lr = lr
    ...         self._store_routed_params(kwargs)
    >>> net = Net(module__hidden=8)
    >>> sorted(net.get_params()), net.set_params(module__hidden=16).module__hidden
    (['lr', 'module__hidden'], 16)
    """

    _parameter_constraints: dict = {
        "device": "no_validation",  # checked by utils._skorch.check_device in fit
        "n_jobs": [POSITIVE_INT, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def _store_routed_params(self, kwargs):
        # __init__ only stores, as everywhere in scikit-learn: a keyword without a routed
        # prefix is kept too and refused by fit (see _check_routed_params)
        self._routed_keys = tuple(sorted(set(getattr(self, "_routed_keys", ())) | set(kwargs)))
        for key, value in kwargs.items():
            setattr(self, key, value)

    def _routed_params(self):
        return {k: getattr(self, k) for k in getattr(self, "_routed_keys", ())}

    def _check_routed_params(self):
        unknown = [k for k in self._routed_params() if not k.startswith(ROUTED_PREFIXES)]
        if unknown:
            raise TypeError(
                f"{type(self).__name__} got unexpected keyword argument(s) {unknown}; only "
                f"arguments prefixed {', '.join(ROUTED_PREFIXES)} are routed to the skorch "
                f"net. Got {unknown[0]!r} instead."
            )

    def get_params(self, deep=True):
        params = super().get_params(deep=deep)
        params.update(self._routed_params())
        return params

    def set_params(self, **params):
        routed = {
            k: params.pop(k)
            for k in list(params)
            if k.startswith(ROUTED_PREFIXES) or k in getattr(self, "_routed_keys", ())
        }
        if routed:
            self._store_routed_params(routed)
        return super().set_params(**params)

    def _fit_net(self, net_cls, X, y, *, stop_below=None, **net_kwargs):
        """Build ``net_cls(**net_kwargs)``, fit it on ``(X, y)`` under the seed, store it.

        Parameters
        ----------
        net_cls : subclass of skorch.NeuralNet
        X, y : arrays or tensors skorch's Dataset accepts
        stop_below : float or None
            Stop after the first epoch whose ``train_loss`` is below this value. Training
            always stops, and this method raises ValueError, when the loss is not finite.
        **net_kwargs
            Everything else for the net (``module``, ``criterion``, ``optimizer``, ``lr``,
            ``max_epochs``, ``callbacks`` ...). The routed parameters come last and win.

        Returns
        -------
        net : the fitted skorch net, also stored in ``self.net_``.
        """
        from .utils._skorch import StopOnLoss
        from .utils._training import seeded_torch

        self._check_routed_params()
        verbose = int(getattr(self, "verbose", 0))
        callbacks = list(net_kwargs.pop("callbacks", None) or [])
        user_callbacks = getattr(self, "callbacks", None)
        callbacks += copy.deepcopy(list(user_callbacks or []))
        callbacks.append(("stop_on_loss", StopOnLoss(stop_below or 0.0)))
        seed = draw_seed(getattr(self, "random_state", None))
        device, n_jobs = getattr(self, "device", "cpu"), getattr(self, "n_jobs", None)
        with seeded_torch(seed, device, n_jobs) as device:
            kwargs = {"train_split": None, "verbose": verbose, "device": device}
            if not verbose:
                kwargs["callbacks__print_log"] = None  # skip formatting a table nobody sees
            kwargs.update(net_kwargs)
            kwargs.update(self._routed_params())
            net = net_cls(callbacks=callbacks, **kwargs)
            net.fit(X, y)
        self.net_ = net
        self._check_finite_history()
        return net

    @property
    def module_(self):
        """The fitted torch module (``net_.module_``)."""
        return self.net_.module_

    @property
    def history_(self):
        """skorch's ``History`` of the fit: one dict per epoch (``train_loss``, ``dur``...)."""
        return self.net_.history

    @property
    def n_epochs_run_(self):
        """Number of epochs actually run (fewer than ``max_epochs`` after an early stop)."""
        return len(self.net_.history)

    def _check_finite_history(self):
        losses = self.history_[:, "train_loss"]
        if losses and not np.isfinite(losses[-1]):
            raise ValueError(
                f"training diverged: the training loss became {losses[-1]!r} at epoch "
                f"{len(losses)}. Lower lr or the initial weight scale, or standardise X."
            )


class NeuralClassifierMixin(ClassifierMixin):
    """``predict_proba`` and ``predict`` from the logits of a neural classifier.

    The subclass writes ``_predict_logits(X) -> ndarray of shape (n_samples, n_classes)``
    (validating ``X`` and checking that it is fitted) and sets ``classes_`` in ``fit``.
    """

    def predict_proba(self, X):
        """Class probabilities: the softmax of the logits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return softmax(self._predict_logits(X), axis=1)

    def predict(self, X):
        """The most probable class of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        logits = self._predict_logits(X)  # first: it raises NotFittedError when not fitted
        return self.classes_[np.argmax(logits, axis=1)]

    def _predict_logits(self, X):
        raise NotImplementedError


class NeuralRegressorMixin(RegressorMixin):
    """``predict`` from the outputs of a neural regressor.

    The subclass writes ``_predict_outputs(X) -> ndarray of shape (n_samples, n_outputs)``
    (validating ``X`` and checking that it is fitted) and sets ``_y_1d`` (True when ``y``
    was 1-D in ``fit``; a class attribute where only 1-D targets are accepted).
    """

    def predict(self, X):
        """Predicted target of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_targets)
            1-D when ``y`` was 1-D in ``fit``.
        """
        outputs = self._predict_outputs(X)  # first: it raises NotFittedError when not fitted
        return outputs[:, 0] if self._y_1d else outputs

    def _predict_outputs(self, X):
        raise NotImplementedError
