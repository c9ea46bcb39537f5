"""Shared-basis layers inside a torch model: a batch of requests, each for its own adapter.

The implementation of :func:`sklearn_icml.lora.attach_shared_basis` (documented there):
every compressed ``nn.Linear`` of the model becomes a :class:`SharedBasisLinear` computing
``W0 x + U Sigma_{id} V^T x``, and the model takes the adapter of each request as an
``adapter_ids`` keyword of its forward (as peft's mixed-batch forward takes
``adapter_names``). torch is imported when this module is imported.
"""

import numpy as np

from ..utils import optional_import
from ._serving import shared_basis_codes

torch = optional_import("torch", "neural")
nn = torch.nn


class _Requests:
    """The adapter ids of the forward in progress, shared by every layer of one model."""

    __slots__ = ("ids", "n_adapters")

    def __init__(self, n_adapters):
        self.ids = None
        self.n_adapters = n_adapters


class SharedBasisLinear(nn.Module):
    """A frozen linear layer plus the shared-basis update of the request's adapter.

    ``forward(x) = base_layer(x) + (U cores[id] V^T) x`` for every token of request ``b``,
    ``id = adapter_ids[b]``: one GEMM with ``V`` and one with ``U`` for the whole batch,
    whatever the adapters, and a batched ``r x r`` product with the gathered cores.

    Parameters
    ----------
    base_layer : torch.nn.Linear
        The layer's frozen weight ``W0`` (kept, not copied).
    U : torch.Tensor of shape (out_features, rank)
    V : torch.Tensor of shape (in_features, rank)
    cores : torch.Tensor of shape (n_adapters, rank, rank) or (n_adapters, rank)
    requests : _Requests
        Where the model's forward hook puts the batch's adapter ids.
    """

    def __init__(self, base_layer, U, V, cores, requests):
        super().__init__()
        self.base_layer = base_layer
        opts = {"dtype": base_layer.weight.dtype, "device": base_layer.weight.device}
        self.register_buffer("U", torch.as_tensor(U).to(**opts).contiguous())
        self.register_buffer("V", torch.as_tensor(V).to(**opts).contiguous())
        self.register_buffer("cores", torch.as_tensor(cores).to(**opts).contiguous())
        self._requests = requests

    @property
    def weight(self):
        """The frozen base weight (``base_layer.weight``)."""
        return self.base_layer.weight

    def forward(self, x):
        out = self.base_layer(x)
        ids = self._requests.ids
        if ids is None:
            raise ValueError(
                "a model with shared-basis layers needs the adapter of each request: call "
                "it as model(input_ids, adapter_ids=[...]). Got no adapter_ids instead."
            )
        if x.shape[0] != ids.shape[0]:
            raise ValueError(
                f"adapter_ids must give one adapter per request of the batch ({x.shape[0]}). "
                f"Got {ids.shape[0]} instead."
            )
        x3 = x.reshape(x.shape[0], -1, x.shape[-1])
        codes = shared_basis_codes(x3, ids.to(x.device), self.V, self.cores)
        flat = out.reshape(-1, out.shape[-1])
        return torch.addmm(flat, codes, self.U.T).reshape(out.shape)


def _check_ids(adapter_ids, n_adapters):
    if isinstance(adapter_ids, torch.Tensor):
        ids = adapter_ids.detach().cpu().numpy()
    else:
        ids = np.asarray(adapter_ids)
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
        raise ValueError(
            "adapter_ids must be a 1-D sequence of integers, one adapter per request. Got "
            f"{adapter_ids!r} instead."
        )
    if int(ids.min()) < 0 or int(ids.max()) >= n_adapters:
        raise ValueError(
            f"adapter_ids must lie in [0, {n_adapters}) (the compressed adapters). Got values "
            f"from {int(ids.min())} to {int(ids.max())} instead."
        )
    return torch.as_tensor(ids, dtype=torch.long)


def _module_for_key(names, key):
    """The model's module name that a compressor key names: equal, or its longest suffix."""
    if key in names:
        return key
    found = [name for name in names if name and key.endswith("." + name)]
    return max(found, key=len) if found else None


def _base_linear(module, key):
    if isinstance(module, SharedBasisLinear):  # attached before: serve the new collection
        module = module.base_layer
    elif hasattr(module, "get_base_layer"):  # a peft LoRA layer: serve its frozen base
        module = module.get_base_layer()
    if not isinstance(module, nn.Linear):
        raise TypeError(
            f"compressors[{key!r}] names a {type(module).__name__}; shared-basis serving "
            "replaces torch.nn.Linear layers. Give the keys of the adapted Linear layers."
        )
    return module


def _attach(model, compressors, cores):
    """Replace the compressed layers of ``model`` in place (see ``attach_shared_basis``)."""
    from ._joint_compression import JointLoRACompressor

    names = dict(model.named_modules())
    n_adapters = None
    plan = []
    for key, comp in compressors.items():
        if not isinstance(comp, JointLoRACompressor) or not hasattr(comp, "U_"):
            raise TypeError(
                f"compressors[{key!r}] must be a fitted JointLoRACompressor (one shared "
                "basis per layer, as compress_peft_collection(..., n_clusters=1) returns). Got "
                f"{type(comp).__name__} instead."
            )
        name = _module_for_key(names, key)
        if name is None:
            raise ValueError(
                f"compressors[{key!r}] matches no module of the {type(model).__name__} model "
                "(by its name or the last dotted parts of it). Give the compressors of this "
                "model's adapters."
            )
        layer_cores = comp.cores_ if cores is None else cores[key]
        if isinstance(layer_cores, torch.Tensor):
            layer_cores = layer_cores.detach().cpu().numpy()
        layer_cores = np.asarray(layer_cores, dtype=np.float64)
        expected = comp.cores_.shape[1:]
        if layer_cores.ndim != len(comp.cores_.shape) or layer_cores.shape[1:] != expected:
            raise ValueError(
                f"cores[{key!r}] must have shape (n_adapters, {', '.join(map(str, expected))})"
                f" like the compressor's cores_. Got {layer_cores.shape} instead."
            )
        if not np.isfinite(layer_cores).all():
            raise ValueError(f"cores[{key!r}] must be finite. Got NaN or inf instead.")
        if n_adapters is None:
            n_adapters = layer_cores.shape[0]
        elif layer_cores.shape[0] != n_adapters:
            raise ValueError(
                "every layer must serve the same adapters: cores of "
                f"{layer_cores.shape[0]} and {n_adapters} adapters. Got cores[{key!r}] with "
                f"{layer_cores.shape[0]} instead."
            )
        base = _base_linear(names[name], key)
        if tuple(base.weight.shape) != tuple(comp.shapes_):
            raise ValueError(
                f"compressors[{key!r}] was fitted on {comp.shapes_} adapters, the layer "
                f"{name!r} has a {tuple(base.weight.shape)} weight. Got a compressor of "
                "another model instead."
            )
        plan.append((name, base, comp, layer_cores))
    requests = _Requests(n_adapters)
    for name, base, comp, layer_cores in plan:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, SharedBasisLinear(base, comp.U_, comp.V_, layer_cores, requests))

    def take_ids(module, args, kwargs):
        ids = kwargs.pop("adapter_ids", None)
        requests.ids = None if ids is None else _check_ids(ids, requests.n_adapters)
        return args, kwargs

    def clear_ids(module, args, kwargs, output):
        requests.ids = None

    for handle in getattr(model, "_shared_basis_hooks", ()):
        handle.remove()
    model._shared_basis_hooks = (
        model.register_forward_pre_hook(take_ids, with_kwargs=True),
        model.register_forward_hook(clear_ids, with_kwargs=True, always_call=True),
    )
    model.shared_basis_n_adapters_ = int(n_adapters)
    return model
