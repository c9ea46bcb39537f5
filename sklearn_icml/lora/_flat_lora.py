"""Flat-LoRA: filter-wise random weight perturbation of LoRA layers, and its skorch callback.

torch is imported when a method runs, so ``import sklearn_icml.lora`` does not need it.
"""

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, StrOptions, validate_params

from ..utils import check_generator, optional_import
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import FINITE_NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params

# each perturbation draws one seed in [0, 2**63 - 1) from the Generator of random_state
_NOISE_SEED_BOUND = 2**63 - 1


def _torch():
    return optional_import("torch", "neural")


@validate_params(
    {
        "model": [HasMethods(["named_modules", "parameters"])],
        "rank": [POSITIVE_INT],
        "alpha": [POSITIVE_REAL],
        "target_modules": [str, tuple, list],
    },
    prefer_skip_nested_validation=True,
)
def inject_lora(model, *, rank=8, alpha=16, target_modules=("Linear",)):
    """Replace matching ``nn.Linear`` layers by the library's minimal ``LoRALinear``, in place.

    Every parameter of ``model`` is frozen, then each matching layer is wrapped, so only the
    LoRA factors are trainable (as with peft's defaults). torch is imported when this
    function runs.

    Parameters
    ----------
    model : torch.nn.Module
        The model to adapt (modified in place and returned).
    rank : int, default=8
        LoRA rank ``r``.
    alpha : float, default=16
        LoRA alpha; the update is scaled by ``alpha / rank``.
    target_modules : str or sequence of str, default=("Linear",)
        Class names or module names (peft's suffix rule) of the layers to adapt.

    Returns
    -------
    model : torch.nn.Module

    Raises
    ------
    ValueError
        If no ``nn.Linear`` layer matches ``target_modules``.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.lora import inject_lora
    >>> net = inject_lora(torch.nn.Sequential(torch.nn.Linear(4, 2)), rank=2)
    >>> type(net[0]).__name__
    'LoRALinear'
    """
    from ._lora_layer import _inject_lora

    return _inject_lora(model, rank=rank, alpha=alpha, target_modules=target_modules)


# layer discovery
class _Layer:
    """One LoRA-adapted linear layer: its frozen weight (rows = outputs) and merged delta."""

    __slots__ = ("name", "module", "kind")

    def __init__(self, name, module, kind):
        self.name, self.module, self.kind = name, module, kind

    def weight(self):
        """The frozen weight as an ``(out, in)`` view (transposed for fan_in_fan_out)."""
        if self.kind == "own":
            w = self.module.base_layer.weight
        else:
            w = self.module.get_base_layer().weight
        w = w.data
        if self.kind == "peft" and getattr(self.module, "fan_in_fan_out", False):
            w = w.T
        return w

    def delta(self):
        """``sum_adapters scaling * B @ A`` of the active adapters (0 once merged)."""
        if self.kind == "own":
            return self.module.scaling * (self.module.lora_B.data @ self.module.lora_A.data)
        mod = self.module
        if getattr(mod, "merged", False) or getattr(mod, "disable_adapters", False):
            return None
        total = None
        for name in mod.active_adapters:
            if name not in mod.lora_A:
                continue
            d = mod.scaling[name] * (mod.lora_B[name].weight.data @ mod.lora_A[name].weight.data)
            total = d if total is None else total + d
        return total


def _find_lora_layers(model):
    from ._lora_layer import LoRALinear

    layers = []
    for name, mod in model.named_modules():
        if isinstance(mod, LoRALinear):
            layers.append(_Layer(name, mod, "own"))
        elif (
            hasattr(mod, "get_base_layer")
            and isinstance(getattr(mod, "lora_A", None), _torch().nn.ModuleDict)
            and isinstance(getattr(mod, "scaling", None), dict)
            and len(mod.lora_A) > 0
        ):
            # peft's LoraLayer (duck typed: peft is never imported here)
            layers.append(_Layer(name, mod, "peft"))
    if not layers:
        raise ValueError(
            f"no LoRA-adapted Linear layers found in the {type(model).__name__} model; did you "
            "apply peft (get_peft_model) or sklearn_icml.lora.inject_lora?"
        )
    for layer in layers:
        w = layer.weight()
        if not w.is_floating_point():
            raise TypeError(
                f"the base weight of LoRA layer {layer.name!r} has dtype {w.dtype}; Flat-LoRA "
                "perturbs base weights in place and needs a floating dtype (quantised base "
                "weights, as in QLoRA, are not supported)."
            )
    return layers


def _cosine(t, total):
    return 0.5 * (1.0 - math.cos(math.pi * t / total))


# the perturbation
#: The parameters FlatLoRAPerturbation, FlatLoRACallback and the estimators share.
_PERTURBATION_CONSTRAINTS = {
    "rho": [FINITE_NON_NEGATIVE_REAL],
    "schedule": [StrOptions({"cosine", "constant"}), callable],
    "restore": [StrOptions({"regenerate", "copy"})],
}


class FlatLoRAPerturbation(BaseEstimator):
    """Random filter-wise perturbation of the frozen weights of LoRA layers (Flat-LoRA).

    Flat-LoRA trains LoRA factors ``A, B`` on the expected loss
    ``E_eps L(W + s B A + eps)`` with independent ``eps_ij ~ N(0, sigma_i^2)``,
    ``sigma_i = c(t) * rho / sqrt(n) * ||W'_i||`` (``W' = W + s B A`` the merged weight,
    ``n`` its fan-in, ``c(t)`` a cosine ramp from 0 to 1), one noise sample per optimiser
    step. :meth:`perturb` adds the noise to the frozen weights in place; :meth:`unperturb`
    removes it by regenerating the identical noise from the stored seed, so only one integer
    and the ``O(out_features)`` row scales are kept (``restore="copy"`` keeps copies of the
    weights instead and puts them back bit-exactly).

    Works with the library's own :class:`~sklearn_icml.lora._lora_layer.LoRALinear`
    (see :func:`inject_lora`) and with peft ``LoraLayer`` modules (found by duck typing).

    Parameters
    ----------
    rho : float, default=0.05
        Perturbation strength (finite, >= 0). ``0`` is plain LoRA: nothing is drawn or
        touched.
    schedule : {"cosine", "constant"} or callable, default="cosine"
        The ramp ``c(t)`` of the noise scale: ``0.5 * (1 - cos(pi t / total_steps))``,
        ``1``, or ``schedule(t, total_steps)`` returning a float in ``[0, 1]``.
    interval : int, default=1
        Perturb one optimiser step in every ``interval``.
    restore : {"regenerate", "copy"}, default="regenerate"
        How the noise is removed after each step: ``"regenerate"`` subtracts the noise
        regenerated from its seed (the paper's memory trick; exact up to one float rounding
        per step, so meant for float32/float64 base weights); ``"copy"`` keeps a copy of
        the touched weights and puts it back exactly.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the noise: :meth:`attach` turns it into a numpy Generator
        (:func:`~sklearn_icml.utils.check_generator`), from which each perturbation draws
        one 63-bit seed for torch's generator. An int gives the same noise after every
        :meth:`attach`; a Generator is used as it is, so its stream goes on.

    Attributes
    ----------
    layers_ : list of str
        Qualified names of the perturbed LoRA layers (set by :meth:`attach`).
    total_steps_ : int or None
        Number of optimiser steps of the run.
    seed_ : int or None
        Seed of the current (or last) perturbation.
    row_std_ : list of torch.Tensor
        Per-row noise std ``(out_features, 1)`` of each layer at the last perturbation.
    n_perturb_calls_ : int
        Number of :meth:`perturb` calls since :meth:`attach`.
    n_restore_calls_ : int
        Number of :meth:`unperturb` calls that removed a perturbation since :meth:`attach`.

    See Also
    --------
    FlatLoRACallback : the skorch callback driving this object.
    FlatLoRAClassifier, FlatLoRARegressor : estimators trained with it.

    Notes
    -----
    The noise follows the filter-wise scheme of [1]_ (one std per output row, scaled by
    the row norm of the merged weight and the fan-in, ramped by a cosine schedule). The
    paper perturbs at every step; ``interval`` (perturb one step in ``interval``) and
    ``restore="copy"`` (exact restores for low-precision base weights) are options of this
    library.

    References
    ----------
    .. [1] T. Li, Z. He, Y. Li, Y. Wang, L. Shang, X. Huang, "Flat-LoRA: Low-Rank Adaptation
       over a Flat Loss Landscape", ICML 2025, arXiv:2409.14396.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.lora import FlatLoRAPerturbation, inject_lora
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> model = inject_lora(torch.nn.Sequential(torch.nn.Linear(8, 4)), rank=2)
    >>> before = model[0].weight.clone()
    >>> flat = FlatLoRAPerturbation(rho=0.1, schedule="constant", random_state=0)
    >>> flat = flat.attach(model, total_steps=10)
    >>> flat.perturb(step=0)
    >>> bool((model[0].weight != before).any())
    True
    >>> flat.unperturb()
    >>> float((model[0].weight - before).abs().max()) < 1e-6
    True
    """

    _parameter_constraints = {
        **_PERTURBATION_CONSTRAINTS,
        "interval": [POSITIVE_INT],
        "random_state": ["random_state", np.random.Generator],
    }

    @keyword_only_after(1)
    def __init__(
        self, *, rho=0.05, schedule="cosine", interval=1, restore="regenerate", random_state=None
    ):
        store_params(self, locals())

    @keyword_only_after(2)
    def attach(self, model, *, total_steps=None):
        """Validate the parameters, find the LoRA layers of ``model``, reset the seed stream.

        Parameters
        ----------
        model : torch.nn.Module
            A model carrying LoRA layers (peft or :func:`inject_lora`).
        total_steps : int or None
            Number of optimiser steps of the run; required by ``schedule="cosine"`` and
            by a callable schedule.

        Returns
        -------
        self
        """
        self._validate_params()
        if self.schedule != "constant":
            if (
                total_steps is None
                or isinstance(total_steps, bool)
                or not isinstance(total_steps, numbers.Integral)
                or total_steps < 1
            ):
                raise ValueError(
                    f"total_steps must be a positive integer when schedule={self.schedule!r} "
                    f"(the ramp needs the length of the run). Got {total_steps!r} instead."
                )
        self._layers = _find_lora_layers(model)
        if self.restore == "regenerate":
            low = {str(layer.weight().dtype) for layer in self._layers} & {
                "torch.bfloat16",
                "torch.float16",
            }
            if low and self.rho > 0:
                warnings.warn(
                    f"base weights in {sorted(low)}: restore='regenerate' leaves a rounding "
                    "error per step that accumulates; use restore='copy' for exact restores.",
                    UserWarning,
                    stacklevel=2,
                )
        self.layers_ = [layer.name for layer in self._layers]
        self.total_steps_ = None if total_steps is None else int(total_steps)
        self._seeds = check_generator(self.random_state)
        self.seed_ = None
        self.row_std_ = []
        self.n_perturb_calls_ = 0
        self.n_restore_calls_ = 0
        self._active = False
        self._copies = None
        self._record_noise = getattr(self, "_record_noise", False)
        self.recorded_noise_ = None
        return self

    def noise_scale(self, step):
        """``c(step) * rho``, the multiplier of ``||W'_i|| / sqrt(n)`` at optimiser step ``step``.

        Parameters
        ----------
        step : int
            Optimiser step (0-based); clipped to ``total_steps``.

        Returns
        -------
        scale : float
        """
        if not hasattr(self, "_layers"):
            self._validate_params()
        rho = float(self.rho)
        total = getattr(self, "total_steps_", None)
        if self.schedule == "constant":
            c = 1.0
        else:
            if total is None:
                raise ValueError(
                    f"total_steps is unknown; call attach(model, total_steps) first (needed by "
                    f"schedule={self.schedule!r}). Got total_steps=None instead."
                )
            t = min(max(int(step), 0), total)
            if self.schedule == "cosine":
                c = _cosine(t, total)
            else:
                c = self.schedule(t, total)
                if isinstance(c, bool) or not isinstance(c, numbers.Real) or not 0 <= c <= 1:
                    raise ValueError(
                        f"schedule(t, total_steps) must return a float in [0, 1] (at t={t}). "
                        f"Got {c!r} instead."
                    )
                c = float(c)
        return c * rho

    def _ensure_attached(self):
        if not hasattr(self, "_layers"):
            raise RuntimeError("call attach(model, total_steps) before perturb/unperturb.")

    def perturb(self, step):
        """Add the filter-wise Gaussian noise of optimiser step ``step`` to the base weights.

        Skipped (nothing drawn) when ``step % interval != 0`` or the scale ``c(step) * rho``
        is 0; the call is counted either way and must be paired with :meth:`unperturb`.

        Parameters
        ----------
        step : int
            Optimiser step (0-based).
        """
        torch = _torch()
        self._ensure_attached()
        if self._active:
            raise RuntimeError("perturb called twice without unperturb in between.")
        self.n_perturb_calls_ += 1
        self._active = True
        scale = self.noise_scale(step)
        self._drawn = False
        if scale == 0.0 or step % self.interval != 0:
            return
        self.seed_ = int(self._seeds.integers(_NOISE_SEED_BOUND))
        gens = {}
        self.row_std_ = []
        self._copies = [] if self.restore == "copy" else None
        recorded = [] if self._record_noise else None
        with torch.no_grad():
            for layer in self._layers:
                w = layer.weight()
                std = self._row_std(_merged_weight(layer), scale)
                self.row_std_.append(std)
                if self._copies is not None:
                    self._copies.append(w.clone())
                noise = self._noise(gens, w, std)
                if recorded is not None:
                    recorded.append(noise.clone())
                w.add_(noise)
        self.recorded_noise_ = recorded
        self._drawn = True

    def _row_std(self, merged, scale):
        """Per-row std ``scale * ||W'_i|| / sqrt(n)``, shape ``(m, 1)`` (no gradient)."""
        return merged.norm(dim=1, keepdim=True).mul_(scale / math.sqrt(merged.shape[1]))

    def _noise(self, gens, w, std):
        """One generator call per layer: ``N(0, 1)`` of ``w``'s shape, scaled in place."""
        torch = _torch()
        gen = gens.get(w.device)
        if gen is None:
            gen = torch.Generator(device=w.device)
            gen.manual_seed(self.seed_)
            gens[w.device] = gen
        noise = torch.empty(w.shape, dtype=w.dtype, device=w.device)
        noise.normal_(generator=gen)
        return noise.mul_(std)

    def regenerate_noise(self):
        """The noise of the current perturbation, regenerated from ``seed_`` and ``row_std_``.

        Returns
        -------
        noise : list of torch.Tensor
            One ``(out_features, in_features)`` tensor per layer (empty when nothing was
            drawn).
        """
        self._ensure_attached()
        if not getattr(self, "_drawn", False):
            return []
        gens = {}
        return [
            self._noise(gens, layer.weight(), std)
            for layer, std in zip(self._layers, self.row_std_)
        ]

    def unperturb(self):
        """Remove the current perturbation (regenerated noise subtracted, or copies put back)."""
        torch = _torch()
        self._ensure_attached()
        if not self._active:
            return
        self.n_restore_calls_ += 1
        if self._drawn:
            with torch.no_grad():
                if self._copies is not None:
                    for layer, orig in zip(self._layers, self._copies):
                        layer.weight().copy_(orig)
                else:
                    gens = {}
                    for layer, std in zip(self._layers, self.row_std_):
                        w = layer.weight()
                        w.sub_(self._noise(gens, w, std))
        self._copies = None
        self._drawn = False
        self._active = False

    @property
    def is_perturbed(self):
        """Whether the base weights currently carry noise."""
        return bool(getattr(self, "_active", False) and getattr(self, "_drawn", False))

    def detach(self):
        """Remove any noise and drop the references to the model's layers."""
        if hasattr(self, "_layers"):
            self.unperturb()
            del self._layers

    @keyword_only_after(4)
    @validate_params(
        {
            "model": [HasMethods(["named_modules", "eval", "train"])],
            "loss_fn": [callable],
            "batch": [tuple, list],
            "n_samples": [POSITIVE_INT],
            "rho": [FINITE_NON_NEGATIVE_REAL, None],
        },
        prefer_skip_nested_validation=True,
    )
    def expected_sharpness(self, model, loss_fn, batch, *, n_samples=8, rho=None):
        """``E_eps[L(W' + eps)] - L(W')`` under the filter-wise noise at full scale (c = 1).

        Diagnostic of flatness. The model is put in eval mode (restored after), each sample
        is drawn from a generator seeded from ``random_state`` and undone by copy, so the
        model is left exactly as it was.

        Parameters
        ----------
        model : torch.nn.Module
            A model with LoRA layers.
        loss_fn : callable
            ``loss_fn(model(X), y)`` returning a scalar tensor.
        batch : tuple (X, y) of tensors
        n_samples : int, default=8
            Monte Carlo draws.
        rho : float or None
            Noise strength; ``None`` uses ``self.rho``.

        Returns
        -------
        sharpness : float
        """
        torch = _torch()
        if rho is None:
            self._validate_params()
            rho = self.rho
        rho = float(rho)
        layers = _find_lora_layers(model)
        X, y = batch
        was_training = model.training
        model.eval()
        seeds = check_generator(self.random_state)
        try:
            with torch.no_grad():
                clean = float(loss_fn(model(X), y))
                stds = [self._row_std(_merged_weight(layer), rho) for layer in layers]
                origs = [layer.weight().clone() for layer in layers]
                total = 0.0
                for _ in range(int(n_samples)):
                    gen = torch.Generator(device=origs[0].device)
                    gen.manual_seed(int(seeds.integers(_NOISE_SEED_BOUND)))
                    try:
                        for layer, std in zip(layers, stds):
                            w = layer.weight()
                            noise = torch.empty(w.shape, dtype=w.dtype, device=w.device)
                            noise.normal_(generator=gen)
                            w.addcmul_(noise, std)
                        total += float(loss_fn(model(X), y))
                    finally:
                        for layer, orig in zip(layers, origs):
                            layer.weight().copy_(orig)
        finally:
            model.train(was_training)
        return total / int(n_samples) - clean


def _merged_weight(layer):
    """``W' = W + scaling * B @ A`` of a layer, in the base weight's dtype."""
    w = layer.weight()
    delta = layer.delta()
    return w if delta is None else w + delta.to(w.dtype)


# skorch callback
class FlatLoRACallback(BaseEstimator):
    """skorch callback training the LoRA factors of a net with Flat-LoRA.

    At every training batch (``training=True``) it perturbs the frozen weights of the
    LoRA layers (:class:`FlatLoRAPerturbation`) in ``on_batch_begin`` and removes the noise
    in ``on_batch_end``; the optimiser step that skorch takes in between uses gradients
    computed at the perturbed point, as the official trainer does (the perturbed tensors are
    frozen, so the step itself does not touch them). Validation and prediction batches are
    never perturbed. The run length for the cosine ramp is read in ``on_train_begin`` from
    ``max_epochs`` and the length of the training iterator, unless ``total_steps`` is given.

    It is a scikit-learn ``BaseEstimator`` with skorch ``Callback``'s interface
    (``initialize``, the ``on_*`` hooks; skorch's ``callbacks__<name>__<param>`` routing
    uses ``set_params``), without subclassing skorch's class, so ``sklearn_icml.lora``
    imports without torch.

    Parameters
    ----------
    rho, schedule, interval, restore, random_state
        The perturbation's parameters, passed on to the :class:`FlatLoRAPerturbation`
        the callback builds (same meanings and defaults).
    accumulation_steps : int, default=1
        Micro-batches per optimiser step when the net accumulates gradients (an overridden
        ``train_step``): the same noise is kept for all of them.
    total_steps : int or None, default=None
        Optimiser steps of the run; ``None`` computes it at ``on_train_begin``.

    Attributes
    ----------
    flat_lora_ : FlatLoRAPerturbation
        The perturbation object of the current/last fit.
    micro_step_ : int
        Training batches seen in the current/last fit.

    Notes
    -----
    skorch does not call ``on_batch_end`` when the forward or backward raises; the
    estimators of this module call :meth:`restore_now` when their fit raises. With your
    own net, call ``callback.restore_now()`` in such a handler.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from skorch import NeuralNetClassifier
    >>> from sklearn_icml.lora import FlatLoRACallback, inject_lora
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> module = inject_lora(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
    ...                                          torch.nn.Linear(16, 2)), rank=2)
    >>> X = np.random.RandomState(0).randn(64, 4).astype(np.float32)
    >>> y = (X[:, 0] > 0).astype(np.int64)
    >>> net = NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss, max_epochs=3,
    ...     lr=0.05, batch_size=32, train_split=None, verbose=0,
    ...     callbacks=[FlatLoRACallback(rho=0.05, random_state=0)]).fit(X, y)
    >>> cb = dict(net.callbacks_)["FlatLoRACallback"]
    >>> cb.flat_lora_.total_steps_, cb.flat_lora_.n_perturb_calls_
    (6, 6)
    """

    _parameter_constraints = {
        **FlatLoRAPerturbation._parameter_constraints,
        "accumulation_steps": [POSITIVE_INT],
        "total_steps": [POSITIVE_INT, None],
    }

    @keyword_only_after(1)
    def __init__(
        self,
        *,
        rho=0.05,
        schedule="cosine",
        interval=1,
        restore="regenerate",
        random_state=None,
        accumulation_steps=1,
        total_steps=None,
    ):
        store_params(self, locals())

    def initialize(self):
        """Validate the parameters and build a fresh :class:`FlatLoRAPerturbation` (skorch)."""
        self._validate_params()
        self.flat_lora_ = FlatLoRAPerturbation(
            rho=self.rho,
            schedule=self.schedule,
            interval=self.interval,
            restore=self.restore,
            random_state=self.random_state,
        )
        self.micro_step_ = 0
        return self

    def _run_length(self, net, X, y):
        if self.total_steps is not None:
            return self.total_steps
        dataset_train, _ = net.get_split_datasets(X, y)
        n_batches = len(net.get_iterator(dataset_train, training=True))
        return math.ceil(n_batches / self.accumulation_steps) * int(net.max_epochs)

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        if not hasattr(self, "flat_lora_"):
            self.initialize()
        self.flat_lora_.attach(net.module_, total_steps=self._run_length(net, X, y))
        self.micro_step_ = 0

    def on_batch_begin(self, net, batch=None, training=None, **kwargs):
        if not training:
            return
        if self.micro_step_ % self.accumulation_steps == 0:
            self.flat_lora_.perturb(self.micro_step_ // self.accumulation_steps)

    def on_batch_end(self, net, batch=None, training=None, **kwargs):
        if not training:
            return
        self.micro_step_ += 1
        if self.micro_step_ % self.accumulation_steps == 0:
            self.flat_lora_.unperturb()

    def on_train_end(self, net, X=None, y=None, **kwargs):
        # an unfinished accumulation window, then drop the layer references (pickling)
        if hasattr(self, "flat_lora_"):
            self.flat_lora_.detach()

    def restore_now(self):
        """Remove any noise currently applied (for exception handlers)."""
        if hasattr(self, "flat_lora_") and hasattr(self.flat_lora_, "_layers"):
            self.flat_lora_.unperturb()

    # the other hooks skorch calls on every callback
    def on_epoch_begin(self, net, **kwargs):
        pass

    def on_epoch_end(self, net, **kwargs):
        pass

    def on_grad_computed(self, net, named_parameters, X=None, y=None, training=None, **kwargs):
        pass
