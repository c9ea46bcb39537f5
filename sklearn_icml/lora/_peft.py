"""compress_peft_collection: joint compression of peft LoRA adapters, per weight position."""

import math
import re
from collections.abc import Mapping

import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_params

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import POSITIVE_INT
from ._clustered_compression import ClusteredJointLoRACompressor
from ._collection import _to_numpy
from ._joint_compression import JointLoRACompressor

# "<module>.lora_A.weight" (saved adapter files) or "<module>.lora_A.<adapter name>.weight"
# (a PeftModel's state_dict)
_LORA_KEY = re.compile(r"^(?P<module>.+)\.lora_(?P<which>[AB])(?:\.(?P<adapter>[^.]+))?\.weight$")


def _config_value(config, name, default=None):
    if config is None:
        return default
    if isinstance(config, Mapping):
        return config.get(name, default)
    return getattr(config, name, default)


def _scaling(config, module, rank, position):
    """peft's LoRA scaling for one module: lora_alpha / r (or / sqrt(r) with rsLoRA)."""
    if config is None:
        return 1.0
    alpha = _config_value(config, "lora_alpha")
    if alpha is None:
        raise ValueError(
            f"adapter_configs[{position}] has no 'lora_alpha'; give peft's LoraConfig or a "
            f"dict with 'lora_alpha' (and 'use_rslora', 'alpha_pattern'). Got {config!r} "
            "instead."
        )
    for pattern, value in (_config_value(config, "alpha_pattern") or {}).items():
        if re.fullmatch(rf"(.*\.)?{pattern}", module):
            alpha = value
            break
    if _config_value(config, "use_rslora", False):
        return float(alpha) / math.sqrt(rank)
    return float(alpha) / rank


def _factors_by_module(state_dict, position):
    """{module: (B, A)} from one adapter's state dict (other keys are ignored)."""
    found = {}
    for key, value in state_dict.items():
        match = _LORA_KEY.match(key)
        if match is None:
            continue
        parts = found.setdefault(match["module"], {})
        if match["which"] in parts:
            raise ValueError(
                f"adapter {position}: module {match['module']!r} has two lora_"
                f"{match['which']} weights; give one state dict per adapter. Got several "
                "adapters in one state dict instead."
            )
        parts[match["which"]] = value
    pairs = {}
    for module, parts in found.items():
        if set(parts) != {"A", "B"}:
            missing = {"A", "B"} - set(parts)
            raise ValueError(
                f"adapter {position}: module {module!r} has no lora_{missing.pop()} weight; "
                "every LoRA module needs both lora_A and lora_B. Got only "
                f"lora_{set(parts).pop()} instead."
            )
        pairs[module] = (parts["B"], parts["A"])
    return pairs


@keyword_only_after(1)
@validate_params(
    {
        "adapter_state_dicts": [list, tuple, Mapping],
        "rank": [POSITIVE_INT],
        "core": [StrOptions({"full", "diag"})],
        "n_clusters": [POSITIVE_INT],
        "adapter_configs": [list, tuple, Mapping, None],
    },
    prefer_skip_nested_validation=False,
)
def compress_peft_collection(adapter_state_dicts, *, rank, core="full", n_clusters=1,
                             adapter_configs=None, **kwargs):
    """Jointly compress LoRA adapters saved by peft, one shared basis per weight position.

    Every adapter must adapt the same modules. For each module key (say
    ``base_model.model.layers.0.self_attn.q_proj``) the adapters' ``lora_B`` and
    ``lora_A`` weights, with peft's scaling ``lora_alpha / r`` folded into ``B`` (pitfall 1
    of the paper), are compressed together; q and v matrices are never mixed.

    Parameters
    ----------
    adapter_state_dicts : list of dict, or dict of name -> dict
        Each adapter's state dict, as ``peft.get_peft_model_state_dict`` returns it or
        ``safetensors`` loads it from ``adapter_model.safetensors`` (torch tensors or
        arrays; keys ``<module>.lora_A.weight`` / ``<module>.lora_B.weight``, optionally
        with the adapter name before ``.weight``). Non-LoRA keys are ignored. Adapter ``i``
        of every returned compressor is the ``i``-th adapter in this order.
    rank : int
        Shared rank of every basis.
    core : {"full", "diag"}, default="full"
        Core type.
    n_clusters : int, default=1
        1: one :class:`JointLoRACompressor` per module; more:
        :class:`ClusteredJointLoRACompressor` with that many bases per module.
    adapter_configs : list or dict of LoraConfig or dict, default=None
        Each adapter's peft config (``lora_alpha``, ``use_rslora``, ``alpha_pattern`` are
        read; the rank comes from the weights, so ``rank_pattern`` is honoured). ``None``
        takes the scaling as already folded (scaling 1).
    **kwargs
        Further parameters of the compressor (``max_iter``, ``random_state``, ...).

    Returns
    -------
    compressors : dict of str -> compressor
        One fitted compressor per module key, in key order.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.lora import compress_peft_collection
    >>> rng = np.random.default_rng(0)
    >>> prefix = "base_model.model.layers.0.self_attn"
    >>> def adapter():
    ...     sd = {}
    ...     for m in ("q_proj", "v_proj"):
    ...         sd[f"{prefix}.{m}.lora_A.weight"] = rng.normal(size=(4, 16))
    ...         sd[f"{prefix}.{m}.lora_B.weight"] = rng.normal(size=(16, 4))
    ...     return sd
    >>> adapters = [adapter() for _ in range(6)]
    >>> configs = [{"lora_alpha": 8, "r": 4}] * 6
    >>> comps = compress_peft_collection(adapters, rank=8, adapter_configs=configs,
    ...                                  random_state=0)
    >>> sorted(k.rsplit(".", 1)[-1] for k in comps)
    ['q_proj', 'v_proj']
    >>> comps[f"{prefix}.q_proj"].cores_.shape
    (6, 8, 8)
    """
    if isinstance(adapter_state_dicts, Mapping):
        names = list(adapter_state_dicts)
        dicts = [adapter_state_dicts[name] for name in names]
    else:
        names = list(range(len(adapter_state_dicts)))
        dicts = list(adapter_state_dicts)
    if not dicts:
        raise ValueError(
            "adapter_state_dicts is empty; give at least one adapter. Got an empty "
            f"{type(adapter_state_dicts).__name__} instead."
        )
    if adapter_configs is None:
        configs = [None] * len(dicts)
    elif isinstance(adapter_configs, Mapping) and isinstance(adapter_state_dicts, Mapping):
        configs = [adapter_configs[name] for name in names]
    else:
        configs = list(adapter_configs)
    if len(configs) != len(dicts):
        raise ValueError(
            f"adapter_configs must give one config per adapter ({len(dicts)}). Got "
            f"{len(configs)} instead."
        )
    per_adapter = []
    for i, sd in enumerate(dicts):
        if not isinstance(sd, Mapping):
            raise TypeError(
                f"adapter {names[i]!r} must be a state dict. Got {type(sd).__name__} instead."
            )
        per_adapter.append(_factors_by_module(sd, names[i]))
    modules = sorted(per_adapter[0])
    if not modules:
        raise ValueError(
            f"adapter {names[0]!r} has no '<module>.lora_A.weight' / '<module>.lora_B.weight' "
            f"keys; is it a LoRA state dict? Got the keys {sorted(dicts[0])[:3]} instead."
        )
    for name, pairs in zip(names, per_adapter):
        if sorted(pairs) != modules:
            diff = sorted(set(modules) ^ set(pairs))
            raise ValueError(
                f"adapter {name!r} adapts other modules than adapter {names[0]!r}; every "
                f"adapter must adapt the same modules. Got modules that differ in {diff[:3]} "
                "instead."
            )
    compressors = {}
    for module in modules:
        collection = []
        for i, (config, pairs) in enumerate(zip(configs, per_adapter)):
            B, A = pairs[module]
            scale = _scaling(config, module, int(A.shape[0]), i)
            if scale != 1.0:
                B = np.asarray(_to_numpy(B))
                if B.dtype.kind in "fiu":  # fold in float64 (never in bfloat16/float16)
                    B = B.astype(np.float64) * scale
            collection.append((B, A))
        if n_clusters == 1:
            comp = JointLoRACompressor(rank=rank, core=core, **kwargs)
        else:
            comp = ClusteredJointLoRACompressor(
                n_clusters=n_clusters, rank=rank, core=core, **kwargs
            )
        compressors[module] = comp.fit(collection)
    return compressors
