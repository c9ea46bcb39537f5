"""FlatLoRAClassifier and FlatLoRARegressor: LoRA fine-tuning of a torch module with Flat-LoRA.

torch, skorch (and peft, for ``lora_backend="peft"``) are imported in ``fit``.
"""

import copy

import numpy as np
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import BaseNeuralEstimator, NeuralClassifierMixin, NeuralRegressorMixin
from ..utils import draw_seed, optional_import
from ..utils._deprecation import DEPRECATED, DEPRECATED_PARAM, renamed_param
from ..utils._docstrings import fill_doc
from ..utils._param_validation import NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ..utils.validation import (
    check_finite_outputs,
    check_fits_dtype,
    check_layer_sizes,
    validate_input,
)
from ._flat_lora import _PERTURBATION_CONSTRAINTS, FlatLoRACallback


class _BaseFlatLoRA(BaseNeuralEstimator):
    """What FlatLoRAClassifier and FlatLoRARegressor share: the adapted module and the fit."""

    _parameter_constraints = {
        **BaseNeuralEstimator._parameter_constraints,
        "module": [callable, None, object],
        "hidden_layer_sizes": [tuple, list],
        "lora_rank": [POSITIVE_INT],
        "lora_alpha": [POSITIVE_REAL],
        "target_modules": [tuple, list, str],
        "lora_backend": [StrOptions({"own", "peft"})],
        **_PERTURBATION_CONSTRAINTS,
        "max_epochs": [POSITIVE_INT],
        "batch_size": [POSITIVE_INT],
        "learning_rate": [POSITIVE_REAL],
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "weight_decay": [NON_NEGATIVE_REAL],
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
        learning_rate=1e-2,
        lr=DEPRECATED,
        weight_decay=0.0,
        random_state=None,
        device="cpu",
        n_jobs=1,
        verbose=0,
        **kwargs,
    ):
        store_params(self, locals())

    def _base_module(self, n_features, n_outputs):
        torch = optional_import("torch", "neural")
        if self.module is None:
            from ..utils._skorch import relu_mlp

            hidden = check_layer_sizes(self.hidden_layer_sizes, "hidden_layer_sizes")
            return relu_mlp(n_features, n_outputs, hidden)
        if isinstance(self.module, torch.nn.Module):
            return copy.deepcopy(self.module)  # the user's (pre-trained) module is not touched
        if callable(self.module):
            return self.module(n_features=n_features, n_outputs=n_outputs)
        raise TypeError(
            "module must be None, a torch.nn.Module (pre-trained, copied) or a callable "
            f"module(n_features=..., n_outputs=...). Got {self.module!r} instead."
        )

    def _adapt(self, model):
        from ._flat_lora import inject_lora
        from ._lora_layer import matching_linear_names

        targets = self.target_modules
        targets = (targets,) if isinstance(targets, str) else tuple(targets)
        if self.lora_backend == "own":
            return inject_lora(
                model, rank=int(self.lora_rank), alpha=float(self.lora_alpha),
                target_modules=targets,
            )
        peft = optional_import("peft", "peft")
        names = matching_linear_names(model, targets)  # peft matches names, not classes
        if not names:
            raise ValueError(
                "target_modules must match a torch.nn.Linear layer of the model. Got "
                f"{targets!r} instead."
            )
        config = peft.LoraConfig(
            r=int(self.lora_rank), lora_alpha=float(self.lora_alpha), target_modules=names,
            lora_dropout=0.0,
        )
        return peft.get_peft_model(model, config)

    def _net_class(self):
        """The skorch net class of the fit (a plain ``NeuralNet``: Flat-LoRA is a callback)."""
        return optional_import("skorch", "neural").NeuralNet

    def fit(self, X, y):
        """Fine-tune the LoRA factors on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (classifier), or targets, 1-D or of shape
            ``(n_samples, n_targets)`` (regressor).

        Returns
        -------
        self : object
        """
        self._validate_params()
        self._learning_rate = renamed_param(self, "lr", "learning_rate")
        X, y = validate_input(self, X, y, **self._target_checks)
        # the LoRA factors train in float32: a finite 1e300 would become inf, then NaN
        check_fits_dtype(X, "X", np.float32, estimator=self)
        if self._target_checks.get("y_numeric"):
            check_fits_dtype(y, "y", np.float32, estimator=self)
        y_net, n_outputs, criterion = self._encode_target(y)
        return self._fit_flat(X, y_net, n_outputs, criterion)

    def _fit_flat(self, X, y, n_outputs, criterion):
        from ..utils import _skorch

        torch = optional_import("torch", "neural")
        X32 = _skorch.features_to_float32(X)
        # the module is built (and LoRA initialised) under the same seed as the fit, drawn
        # once here and once by _fit_net, as the fit always has
        seed = draw_seed(self.random_state)
        device = _skorch.check_device(self.device)
        with _skorch.seeded(seed, device), _skorch.torch_threads(self.n_jobs):
            module = self._adapt(self._base_module(X32.shape[1], n_outputs))
        callback = FlatLoRACallback(
            rho=float(self.rho), schedule=self.schedule, restore=self.restore,
            random_state=seed,
        )
        try:
            self._fit_net(
                self._net_class(),
                X32,
                y,
                module=module,
                criterion=criterion,
                optimizer=torch.optim.AdamW,
                optimizer__weight_decay=float(self.weight_decay),
                lr=float(self._learning_rate),
                max_epochs=int(self.max_epochs),
                batch_size=int(self.batch_size),
                iterator_train__shuffle=True,
                callbacks=[("flat_lora", callback)],
            )
        except BaseException:
            # skorch skips on_batch_end when a step raises: never leave noise behind
            callback.restore_now()
            raise
        self.flat_lora_ = callback.flat_lora_
        for name, p in self.module_.named_parameters():
            if not torch.isfinite(p).all():
                raise ValueError(
                    f"training diverged: parameter {name!r} became non-finite. Lower "
                    "learning_rate or rho."
                )
        return self

    def _forward(self, X):
        """The module's outputs on ``X``, in one float64 pass over all rows.

        The fitted module is copied to float64 and run on the whole of ``X`` at once, so a
        row's output does not depend on the other rows it is predicted with (float32
        mini-batches do differ in the last bits).
        """
        from ..utils._skorch import float64_outputs

        check_is_fitted(self)
        X = np.asarray(validate_input(self, X, reset=False), dtype=np.float64)
        check_fits_dtype(X, "X", np.float32, estimator=self)
        out = float64_outputs(
            self.module_, X, rows_per_chunk=X.shape[0], empty_shape=(0,),
            device=self.net_.device, n_jobs=self.n_jobs,
        )
        check_finite_outputs(out, X, self)
        return out


@fill_doc
class FlatLoRAClassifier(NeuralClassifierMixin, _BaseFlatLoRA):
    """LoRA fine-tuning with Flat-LoRA's random full-space weight perturbation (classifier).

    Adapts the Linear layers of a torch module with LoRA (all other parameters frozen) and
    trains the LoRA factors with AdamW and cross-entropy, perturbing the frozen weights at
    every step with filter-wise Gaussian noise of std
    ``c(t) * rho * ||W'_i|| / sqrt(fan_in)`` (:class:`FlatLoRAPerturbation`, driven by
    :class:`FlatLoRACallback`). ``rho=0`` is plain LoRA, bit for bit.

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
        Perturbation strength (finite, >= 0). ``0`` is plain LoRA: nothing is drawn or
        touched.
    schedule : {"cosine", "constant"} or callable, default="cosine"
        The ramp of the noise scale over the run (see :class:`FlatLoRAPerturbation`).
    restore : {"regenerate", "copy"}, default="regenerate"
        How the noise is removed after each step (see :class:`FlatLoRAPerturbation`).
    max_epochs : int, default=30
        Passes over the training data.
    batch_size : int, default=64
    learning_rate : float, default=1e-2
        AdamW learning rate.
    lr : float, default="deprecated"
        Deprecated name of ``learning_rate`` (removed in 0.4).
    weight_decay : float, default=0.0
        AdamW weight decay.
    random_state : int, RandomState instance or None, default=None
        Seeds the base module, the LoRA initialisation, the shuffling and the noise.
    %(device)s
    %(torch_n_jobs)s
    verbose : int, default=0
        0 is silent; 1 prints skorch's per-epoch table.
    **kwargs
        Parameters routed to the skorch net as skorch routes them (``module__*``,
        ``optimizer__*``, ``criterion__*``, ``iterator_train__*``, ``iterator_valid__*``,
        ``callbacks__*``); they win over the estimator's own settings.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.
    net_ : skorch.NeuralNet
        The fitted net; ``module_`` and ``history_`` come from it.
    module_ : torch.nn.Module
        The fine-tuned module with its LoRA layers (``net_.module_``).
    history_ : skorch.History
        skorch's record of the fit, one entry per epoch.
    n_epochs_run_ : int
        Epochs run.
    flat_lora_ : FlatLoRAPerturbation
        The perturbation of the fit (``layers_``, ``total_steps_``, ``n_perturb_calls_``).
    classes_ : ndarray of shape (n_classes,)

    See Also
    --------
    FlatLoRARegressor, FlatLoRAPerturbation, FlatLoRACallback

    Notes
    -----
    The perturbation follows [1]_: filter-wise Gaussian noise on the frozen weights at
    every optimiser step, removed after the step, with a cosine ramp of its scale. The base
    model and the LoRA initialisation are drawn under the seed of ``random_state``; the
    optimiser is AdamW, the usual optimiser of LoRA fine-tuning. Predictions run the module in
    float64 in one pass, so that they do not depend on which rows are predicted together.

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

    _target_checks = {}

    def _encode_target(self, y):
        from ..utils._skorch import encode_class_labels

        self.classes_, y_index = encode_class_labels(y)
        criterion = optional_import("torch", "neural").nn.CrossEntropyLoss
        return y_index, self.classes_.shape[0], criterion

    def _predict_logits(self, X):
        return self._forward(X)


@fill_doc
class FlatLoRARegressor(NeuralRegressorMixin, _BaseFlatLoRA):
    """LoRA fine-tuning with Flat-LoRA's random full-space weight perturbation (regressor).

    As :class:`FlatLoRAClassifier` with the mean squared error; ``y`` may be 1-D or 2-D.

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
        Perturbation strength (finite, >= 0). ``0`` is plain LoRA: nothing is drawn or
        touched.
    schedule : {"cosine", "constant"} or callable, default="cosine"
        The ramp of the noise scale over the run (see :class:`FlatLoRAPerturbation`).
    restore : {"regenerate", "copy"}, default="regenerate"
        How the noise is removed after each step (see :class:`FlatLoRAPerturbation`).
    max_epochs : int, default=30
        Passes over the training data.
    batch_size : int, default=64
    learning_rate : float, default=1e-2
        AdamW learning rate.
    weight_decay : float, default=0.0
        AdamW weight decay.
    random_state : int, RandomState instance or None, default=None
        Seeds the base module, the LoRA initialisation, the shuffling and the noise.
    %(device)s
    %(torch_n_jobs)s
    verbose : int, default=0
        0 is silent; 1 prints skorch's per-epoch table.
    lr : float, default="deprecated"
        Deprecated name of ``learning_rate`` (removed in 0.4).
    **kwargs
        Parameters routed to the skorch net as skorch routes them (``module__*``,
        ``optimizer__*``, ``criterion__*``, ``iterator_train__*``, ``iterator_valid__*``,
        ``callbacks__*``); they win over the estimator's own settings.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.
    net_ : skorch.NeuralNet
        The fitted net; ``module_`` and ``history_`` come from it.
    module_ : torch.nn.Module
        The fine-tuned module with its LoRA layers (``net_.module_``).
    history_ : skorch.History
        skorch's record of the fit, one entry per epoch.
    n_epochs_run_ : int
        Epochs run.
    flat_lora_ : FlatLoRAPerturbation
        The perturbation of the fit (``layers_``, ``total_steps_``, ``n_perturb_calls_``).

    See Also
    --------
    FlatLoRAClassifier, FlatLoRAPerturbation, FlatLoRACallback

    Notes
    -----
    The perturbation follows [1]_: filter-wise Gaussian noise on the frozen weights at
    every optimiser step, removed after the step, with a cosine ramp of its scale. The base
    model and the LoRA initialisation are drawn under the seed of ``random_state``; the
    optimiser is AdamW, the usual optimiser of LoRA fine-tuning. Predictions run the module in
    float64 in one pass, so that they do not depend on which rows are predicted together.

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

    _target_checks = {"multi_output": True, "y_numeric": True}

    def _encode_target(self, y):
        y = np.asarray(y, dtype=np.float32)
        self._y_1d = y.ndim == 1
        y2 = y.reshape(-1, 1) if self._y_1d else y
        return y2, y2.shape[1], optional_import("torch", "neural").nn.MSELoss

    def _predict_outputs(self, X):
        return self._forward(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
