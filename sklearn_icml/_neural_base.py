"""The skorch layer: the base of the estimators that train a torch module through skorch.

:class:`BaseNeuralEstimator` is a scikit-learn estimator whose ``fit`` builds a skorch
``NeuralNet`` through :meth:`~BaseNeuralEstimator._fit_net` and keeps it in ``net_`` (a thin
wrapper: a skorch net sets attributes in ``__init__`` and does not validate its input as
``check_estimator`` requires). :class:`NeuralClassifierMixin` and
:class:`NeuralRegressorMixin` give ``predict`` and ``predict_proba`` from the network's
outputs. ``sklearn_icml.base`` re-exports the three names.

This module imports nothing from torch: :meth:`BaseNeuralEstimator._fit_net` imports skorch
and torch when it runs, so ``import sklearn_icml.base`` works without the ``neural`` extra.
"""

import abc
import copy

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from .utils._param_validation import N_JOBS
from .utils._random import draw_seed

__all__ = [
    "ROUTED_PREFIXES",
    "BaseNeuralEstimator",
    "NeuralClassifierMixin",
    "NeuralRegressorMixin",
]

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


class BaseNeuralEstimator(BaseEstimator, metaclass=abc.ABCMeta):
    """Base for the estimators that train a torch module through skorch.

    The parameters every neural estimator shares (``device``, ``n_jobs``,
    ``random_state``, ``verbose``) are declared once here; a subclass extends
    ``{**BaseNeuralEstimator._parameter_constraints, ...}``.

    A subclass is a scikit-learn estimator (keyword-only ``__init__`` that only stores,
    ``_parameter_constraints``, ``validate_data``) that writes ``fit``, which builds the
    skorch net through :meth:`_fit_net` and keeps it in ``net_``. The base

    * checks ``device`` (CPU by default, ``"cuda"`` honoured when available) and keeps
      skorch silent unless ``verbose`` (``verbose=1`` prints skorch's per-epoch table, in
      plain text when stdout is not a terminal, with an ``elapsed`` column:
      :class:`~sklearn_icml.utils._skorch.PlainPrintLog`);
    * disables skorch's internal validation split: validation is the user's business,
      through scikit-learn's tools;
    * seeds torch with :func:`~sklearn_icml.utils.draw_seed` of ``random_state`` under a
      forked torch RNG, so a fit is reproducible and leaves the caller's RNG alone;
    * bounds torch's intra-op threads to ``n_jobs`` during the fit (``None`` is 1, as
      :func:`~sklearn_icml.utils._parallel.resolve_n_jobs` says);
    * adds behaviour through skorch callbacks: the subclass passes its own
      (``callbacks=[...]``) and the user's ``callbacks`` parameter is deep-copied, so a
      fit never mutates a parameter; a callback stops training when the loss is not
      finite, and :meth:`_fit_net` then raises;
    * routes keyword arguments prefixed ``module__``, ``optimizer__``, ``criterion__``,
      ``iterator_train__``, ``iterator_valid__`` or ``callbacks__`` to the net, as skorch
      does; they are parameters (``get_params``, ``set_params``, ``clone``,
      ``GridSearchCV``). A subclass accepts them with ``**kwargs`` in ``__init__`` and
      stores everything with ``store_params(self, locals())``
      (:func:`sklearn_icml.utils._params.store_params`), which hands the routed keywords to
      :meth:`_store_routed_params`; both only store. ``fit`` raises a TypeError for a
      keyword without one of these prefixes;
    * exposes ``module_``, ``history_`` and ``n_epochs_run_``. A fitted estimator pickles
      through skorch's own ``__getstate__``;
    * checks after a fit that the trained weights are finite
      (:meth:`_check_finite_parameters`).

    Examples
    --------
    >>> from sklearn_icml.base import BaseNeuralEstimator
    >>> from sklearn_icml.utils._params import store_params
    >>> class Net(BaseNeuralEstimator):
    ...     def __init__(self, *, learning_rate=0.1, **kwargs):
    ...         store_params(self, locals())
    ...     def fit(self, X, y):
    ...         return self
    >>> net = Net(module__hidden=8)
    >>> sorted(net.get_params()), net.set_params(module__hidden=16).module__hidden
    (['learning_rate', 'module__hidden'], 16)
    """

    _parameter_constraints: dict = {
        "device": "no_validation",  # checked by utils._skorch.check_device in fit
        "n_jobs": N_JOBS,
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    @abc.abstractmethod
    def fit(self, X, y):
        """Validate ``(X, y)`` and train the network through :meth:`_fit_net`."""

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
            Everything else for the net (``module``, ``criterion``, ``optimizer``, ``lr``
            (skorch's name of the learning rate), ``max_epochs``, ``callbacks`` ...). The
            routed parameters come last and win.

        Returns
        -------
        net : the fitted skorch net, also stored in ``self.net_``.
        """
        from .utils._skorch import PlainPrintLog, StopOnLoss
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
            # skip formatting a table nobody sees; when verbose, skorch's table without ANSI
            # colours in a log file, with the time since the fit started
            kwargs["callbacks__print_log"] = PlainPrintLog() if verbose else None
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
                f"{len(losses)}. Lower learning_rate or the initial weight scale, or "
                "standardise X."
            )

    def _check_finite_parameters(self, remedy="lower learning_rate"):
        """Raise ValueError naming the first parameter of ``module_`` that is not finite.

        A fit whose loss stays finite can still leave non-finite weights (a step that
        overflowed after the last loss was recorded). ``remedy`` ends the message.
        """
        from .utils._skorch import torch

        for name, param in self.module_.named_parameters():
            if not bool(torch.isfinite(param).all()):
                raise ValueError(
                    f"training diverged: parameter {name!r} became non-finite; {remedy}."
                )


class NeuralClassifierMixin(ClassifierMixin, metaclass=abc.ABCMeta):
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

    @abc.abstractmethod
    def _predict_logits(self, X):
        """Logits of shape (n_samples, n_classes), after validating ``X``."""


class NeuralRegressorMixin(RegressorMixin, metaclass=abc.ABCMeta):
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

    @abc.abstractmethod
    def _predict_outputs(self, X):
        """Outputs of shape (n_samples, n_outputs), after validating ``X``."""
