"""FlatLoRAClassifier and FlatLoRARegressor: LoRA fine-tuning of a torch module with Flat-LoRA.

torch, skorch (and peft, for ``lora_backend="peft"``) are imported in ``fit``.
"""

import copy
import numbers

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils import optional_import
from ._flat_lora import FlatLoRACallback


def _skorch_utils():
    from ..utils import _skorch

    return _skorch


def _mlp(n_features, n_outputs, hidden_layer_sizes):
    nn = optional_import("torch", "neural").nn
    layers, width = [], n_features
    for size in hidden_layer_sizes:
        layers += [nn.Linear(width, size), nn.ReLU()]
        width = size
    layers.append(nn.Linear(width, n_outputs))
    return nn.Sequential(*layers)


_NET_CLASSES = {}


def _net_class():
    """skorch NeuralNet whose train_step never leaves the base weights perturbed."""
    if "net" not in _NET_CLASSES:
        skorch = optional_import("skorch", "neural")

        class _FlatLoRANet(skorch.NeuralNet):
            def train_step(self, batch, **fit_params):
                try:
                    return super().train_step(batch, **fit_params)
                except BaseException:
                    for _, cb in self.callbacks_:
                        if isinstance(cb, FlatLoRACallback):
                            cb.restore_now()
                    raise

        _FlatLoRANet.__module__ = __name__
        _FlatLoRANet.__qualname__ = "_FlatLoRANet"
        _NET_CLASSES["net"] = _FlatLoRANet
    return _NET_CLASSES["net"]


def __getattr__(name):  # lets pickle find the lazily built net class
    if name == "_FlatLoRANet":
        return _net_class()
    raise AttributeError(name)


class _FlatLoRABase(BaseEstimator):
    _parameter_constraints = {
        "module": [callable, None, object],
        "hidden_layer_sizes": [tuple, list],
        "lora_rank": [Interval(numbers.Integral, 1, None, closed="left")],
        "lora_alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "target_modules": [tuple, list, str],
        "lora_backend": [StrOptions({"own", "peft"})],
        "rho": [Interval(numbers.Real, 0, None, closed="left")],
        "schedule": [StrOptions({"cosine", "constant"}), callable],
        "restore": [StrOptions({"regenerate", "copy"})],
        "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "weight_decay": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "device": [str, object],
        "n_threads": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        module=None,
        hidden_layer_sizes=(64,),
        lora_rank=8,
        lora_alpha=16,
        target_modules=("Linear",),
        lora_backend="own",
        rho=0.05,
        schedule="cosine",
        restore="regenerate",
        max_epochs=30,
        batch_size=64,
        lr=1e-2,
        weight_decay=0.0,
        random_state=None,
        device="cpu",
        n_threads=1,
        verbose=0,
    ):
        self.module = module
        self.hidden_layer_sizes = hidden_layer_sizes
        self.lora_rank = lora_rank
        self.lora_alpha = lora_alpha
        self.target_modules = target_modules
        self.lora_backend = lora_backend
        self.rho = rho
        self.schedule = schedule
        self.restore = restore
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads
        self.verbose = verbose

    def _base_module(self, n_features, n_outputs):
        torch = optional_import("torch", "neural")
        if self.module is None:
            hidden = tuple(self.hidden_layer_sizes)
            if any(
                isinstance(h, bool) or not isinstance(h, numbers.Integral) or h < 1
                for h in hidden
            ):
                raise ValueError(
                    "hidden_layer_sizes must hold positive integers; got "
                    f"{self.hidden_layer_sizes!r} instead."
                )
            return _mlp(n_features, n_outputs, hidden)
        if isinstance(self.module, torch.nn.Module):
            return copy.deepcopy(self.module)  # the user's (pre-trained) module is not touched
        if callable(self.module):
            return self.module(n_features=n_features, n_outputs=n_outputs)
        raise TypeError(
            "module must be None, a torch.nn.Module (pre-trained, copied) or a callable "
            f"module(n_features=..., n_outputs=...); got {self.module!r} instead."
        )

    def _adapt(self, model):
        targets = self.target_modules
        targets = (targets,) if isinstance(targets, str) else tuple(targets)
        from ._lora_layer import inject_lora, matching_linear_names

        if self.lora_backend == "own":
            return inject_lora(
                model, rank=int(self.lora_rank), alpha=float(self.lora_alpha),
                target_modules=targets,
            )
        peft = optional_import("peft", "peft")
        names = matching_linear_names(model, targets)  # peft matches names, not classes
        if not names:
            raise ValueError(
                f"target_modules={targets!r} matches no torch.nn.Linear layer of the model."
            )
        config = peft.LoraConfig(
            r=int(self.lora_rank), lora_alpha=float(self.lora_alpha), target_modules=names,
            lora_dropout=0.0,
        )
        return peft.get_peft_model(model, config)

    def _fit_flat(self, X, y, n_outputs, criterion):
        su = _skorch_utils()
        torch = optional_import("torch", "neural")
        X32 = su.features_to_float32(X)
        seed = su.torch_seed(self.random_state)
        device = su.check_device(self.device)
        with su.seeded(seed, device), su.torch_threads(self.n_threads):
            # base module and LoRA init come from the seed too
            module = self._adapt(self._base_module(X32.shape[1], n_outputs))
        callback = FlatLoRACallback(
            rho=float(self.rho), schedule=self.schedule, restore=self.restore,
            random_state=seed,
        )
        # SkorchEstimatorMixin._fit_net, called unbound: subclassing the mixin would import
        # torch with sklearn_icml.lora
        su.SkorchEstimatorMixin._fit_net(
            self,
            _net_class(),
            X32,
            y,
            module=module,
            criterion=criterion,
            optimizer=torch.optim.AdamW,
            optimizer__weight_decay=float(self.weight_decay),
            lr=float(self.lr),
            max_epochs=int(self.max_epochs),
            batch_size=int(self.batch_size),
            iterator_train__shuffle=True,
            callbacks=[("flat_lora", callback)],
        )
        self.flat_lora_ = dict(self.net_.callbacks_)["flat_lora"].flat_lora_
        for name, p in self.module_.named_parameters():
            if not torch.isfinite(p).all():
                raise ValueError(
                    f"training diverged: parameter {name!r} became non-finite. Lower lr or rho."
                )
        return self

    @property
    def module_(self):
        """The fitted torch module with its LoRA layers (``net_.module_``)."""
        return self.net_.module_

    @property
    def history_(self):
        """skorch's ``History`` of the fit."""
        return self.net_.history

    def _check_finite_history(self):
        _skorch_utils().SkorchEstimatorMixin._check_finite_history(self)

    def _forward(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        su = _skorch_utils()
        with su.torch_threads(self.n_threads):
            out = self.net_.forward(su.features_to_float32(X)).detach().cpu().numpy()
        return out.astype(np.float64)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


_DOC_PARAMS = """
    Parameters
    ----------
    module : None, torch.nn.Module or callable, default=None
        The model to fine-tune. A module instance (typically pre-trained) is deep-copied at
        ``fit`` and its output size must match the task; a callable is called as
        ``module(n_features=..., n_outputs=...)``; ``None`` builds a ReLU MLP with
        ``hidden_layer_sizes`` (randomly initialised from ``random_state``, then frozen).
    hidden_layer_sizes : tuple of int, default=(64,)
        Hidden layers of the default MLP.
    lora_rank : int, default=8
        LoRA rank ``r``.
    lora_alpha : float, default=16
        LoRA alpha (scaling ``alpha / r``).
    target_modules : tuple of str or str, default=("Linear",)
        Layers to adapt, by class name (``"Linear"``) or module name (peft's suffix rule).
    lora_backend : {"own", "peft"}, default="own"
        The library's minimal LoRA layer, or peft's ``get_peft_model`` (needs peft).
    rho : float, default=0.05
        Flat-LoRA perturbation strength; ``0`` is plain LoRA.
    schedule : {"cosine", "constant"} or callable, default="cosine"
        Ramp ``c(t)`` of the noise scale over the run.
    restore : {"regenerate", "copy"}, default="regenerate"
        How the noise is removed after each step (see :class:`FlatLoRAPerturbation`).
    max_epochs : int, default=30
    batch_size : int, default=64
    lr : float, default=1e-2
        AdamW learning rate.
    weight_decay : float, default=0.0
        AdamW weight decay.
    random_state : int, RandomState instance or None, default=None
        Seeds the base module, the LoRA initialisation, the shuffling and the noise.
    device : str, default="cpu"
    n_threads : int or None, default=1
        torch intra-op threads during fit and prediction.
    verbose : int, default=0
"""


_DOC_ATTRS = """
    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.
    net_ : skorch.NeuralNet
        The fitted net; ``module_`` and ``history_`` come from it.
    flat_lora_ : FlatLoRAPerturbation
        The perturbation of the fit (``layers_``, ``total_steps_``, ``n_perturb_calls_``).
"""


class FlatLoRAClassifier(ClassifierMixin, _FlatLoRABase):
    __doc__ = (
        """LoRA fine-tuning with Flat-LoRA's random full-space weight perturbation (classifier).

    Adapts the Linear layers of a torch module with LoRA (all other parameters frozen) and
    trains the LoRA factors with AdamW and cross-entropy, perturbing the frozen weights at
    every step with filter-wise Gaussian noise of std
    ``c(t) * rho * ||W'_i|| / sqrt(fan_in)`` (:class:`FlatLoRAPerturbation`, driven by
    :class:`FlatLoRACallback`). ``rho=0`` is plain LoRA, bit for bit.
"""
        + _DOC_PARAMS
        + _DOC_ATTRS
        + """    classes_ : ndarray of shape (n_classes,)

    See Also
    --------
    FlatLoRARegressor, FlatLoRAPerturbation, FlatLoRACallback

    References
    ----------
    .. [1] T. Li, Z. He, Y. Li, Y. Wang, L. Shang, X. Huang, "Flat-LoRA: Low-Rank Adaptation
       over a Flat Loss Landscape", ICML 2025, arXiv:2409.14396.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_icml.lora import FlatLoRAClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = FlatLoRAClassifier(rho=0.05, max_epochs=20, random_state=0).fit(X, y)
    >>> clf.flat_lora_.layers_
    ['0', '2']
    >>> bool(clf.score(X, y) > 0.9)
    True
    """
    )

    def fit(self, X, y):
        """Fine-tune the LoRA factors on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y)
        su = _skorch_utils()
        torch = optional_import("torch", "neural")
        self.classes_, y_index = su.encode_class_labels(y)
        return self._fit_flat(X, y_index, self.classes_.shape[0], torch.nn.CrossEntropyLoss)

    def predict_proba(self, X):
        """Class probabilities (softmax of the logits).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return softmax(self._forward(X), axis=1)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        logits = self._forward(X)
        return self.classes_[np.argmax(logits, axis=1)]


class FlatLoRARegressor(RegressorMixin, _FlatLoRABase):
    __doc__ = (
        """LoRA fine-tuning with Flat-LoRA's random full-space weight perturbation (regressor).

    As :class:`FlatLoRAClassifier` with the mean squared error; ``y`` may be 1-D or 2-D.
"""
        + _DOC_PARAMS
        + _DOC_ATTRS
        + """
    See Also
    --------
    FlatLoRAClassifier, FlatLoRAPerturbation, FlatLoRACallback

    References
    ----------
    .. [1] T. Li, Z. He, Y. Li, Y. Wang, L. Shang, X. Huang, "Flat-LoRA: Low-Rank Adaptation
       over a Flat Loss Landscape", ICML 2025, arXiv:2409.14396.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.lora import FlatLoRARegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(200, 3)
    >>> y = X @ [1.0, -2.0, 0.5]
    >>> reg = FlatLoRARegressor(max_epochs=40, random_state=0).fit(X, y)
    >>> bool(reg.score(X, y) > 0.9)
    True
    """
    )

    def fit(self, X, y):
        """Fine-tune the LoRA factors on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True)
        torch = optional_import("torch", "neural")
        y = np.asarray(y, dtype=np.float32)
        self._y_1d = y.ndim == 1
        y2 = y.reshape(-1, 1) if self._y_1d else y
        return self._fit_flat(X, y2, y2.shape[1], torch.nn.MSELoss)

    def predict(self, X):
        """Predicted targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_targets)
        """
        out = self._forward(X)
        return out.ravel() if self._y_1d else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
