"""LoRA adapters: joint compression of adapter collections and multi-LoRA serving; Flat-LoRA."""

# joint compression of adapter collections and their serving paths ("Compress then Serve")
from ._clustered_compression import ClusteredJointLoRACompressor
from ._joint_compression import JointLoRACompressor
from ._peft import compress_peft_collection
from ._serving import attach_shared_basis, separate_lora_forward, shared_basis_forward
from ._svd_compression import SVDLoRACompressor

# Flat-LoRA
# isort: split
from ._flat_lora import FlatLoRACallback, FlatLoRAPerturbation, inject_lora
from ._flat_lora_estimators import FlatLoRAClassifier, FlatLoRARegressor

# Deprecated names (removed in 0.4): importable, out of __all__ and of the API reference.
# isort: split
from ._serving_timing import benchmark_multi_lora_forward  # noqa: F401

__all__ = [
    "ClusteredJointLoRACompressor",
    "JointLoRACompressor",
    "SVDLoRACompressor",
    "attach_shared_basis",
    "compress_peft_collection",
    "separate_lora_forward",
    "shared_basis_forward",
    "FlatLoRACallback",
    "FlatLoRAClassifier",
    "FlatLoRAPerturbation",
    "FlatLoRARegressor",
    "inject_lora",
]
