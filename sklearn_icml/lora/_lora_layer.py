"""A minimal LoRA layer (``LoRALinear``) and the layer injection, for models without peft.

torch is imported when this module is imported; ``sklearn_icml.lora`` itself imports it only
when a Flat-LoRA function runs, so the joint-compression code stays torch-free.
"""

import math
import re

from ..utils import optional_import

torch = optional_import("torch", "neural")
nn = torch.nn


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a trainable low-rank update ``scaling * B @ A``.

    ``forward(x) = base_layer(x) + scaling * (x @ A.T) @ B.T`` with ``A`` of shape
    ``(rank, in_features)`` (Kaiming-uniform, as peft does), ``B`` of shape
    ``(out_features, rank)`` (zeros, so the adapted model starts equal to the base model) and
    ``scaling = alpha / rank``. The base weight and bias are frozen.

    Parameters
    ----------
    base_layer : torch.nn.Linear
        The layer to adapt; it is kept (not copied) and frozen.
    rank : int, default=8
        Rank ``r`` of the update.
    alpha : float, default=16
        LoRA alpha; ``scaling = alpha / rank``.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.lora._lora_layer import LoRALinear
    >>> layer = LoRALinear(torch.nn.Linear(4, 3), rank=2, alpha=4)
    >>> tuple(layer.lora_A.shape), tuple(layer.lora_B.shape), layer.scaling
    ((2, 4), (3, 2), 2.0)
    """

    def __init__(self, base_layer, rank=8, alpha=16):
        super().__init__()
        if not isinstance(base_layer, nn.Linear):
            raise TypeError(
                f"base_layer must be a torch.nn.Linear. Got {type(base_layer).__name__} "
                "instead."
            )
        self.base_layer = base_layer
        for p in base_layer.parameters():
            p.requires_grad_(False)
        w = base_layer.weight
        self.rank = int(rank)
        self.alpha = float(alpha)
        self.scaling = self.alpha / self.rank
        opts = {"dtype": w.dtype, "device": w.device}
        self.lora_A = nn.Parameter(torch.empty(self.rank, w.shape[1], **opts))
        self.lora_B = nn.Parameter(torch.zeros(w.shape[0], self.rank, **opts))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))

    @property
    def weight(self):
        """The frozen base weight (``base_layer.weight``)."""
        return self.base_layer.weight

    def delta_weight(self):
        """``scaling * B @ A``, of the base weight's shape."""
        return self.scaling * (self.lora_B @ self.lora_A)

    def forward(self, x):
        out = self.base_layer(x)
        return out + self.scaling * ((x @ self.lora_A.T) @ self.lora_B.T)


def _matches(name, module, target_modules):
    cls = type(module).__name__
    for target in target_modules:
        if cls == target or name == target or re.fullmatch(rf"(.*\.)?{re.escape(target)}", name):
            return True
    return False


def matching_linear_names(model, target_modules):
    """Qualified names of the ``nn.Linear`` modules matched by class name or module name.

    A target matches a module when it equals its class name (``"Linear"``), its qualified
    name, or the last dotted components of that name (peft's rule).
    """
    return [
        name
        for name, mod in model.named_modules()
        if isinstance(mod, nn.Linear) and name and _matches(name, mod, target_modules)
    ]


def _inject_lora(model, *, rank, alpha, target_modules):
    """Wrap the ``nn.Linear`` layers matched by ``target_modules`` in :class:`LoRALinear`.

    The implementation of :func:`sklearn_icml.lora.inject_lora` (documented there), which
    validates the arguments and imports this module, and so torch, when it runs.
    """
    if isinstance(target_modules, str):
        target_modules = (target_modules,)
    names = matching_linear_names(model, target_modules)
    if not names:
        raise ValueError(
            f"target_modules={tuple(target_modules)!r} matches no torch.nn.Linear layer of "
            f"the model (by class name or module name)."
        )
    for p in model.parameters():
        p.requires_grad_(False)
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, LoRALinear(getattr(parent, child), rank=rank, alpha=alpha))
    return model
