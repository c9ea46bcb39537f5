"""LoRA adapters: joint compression of adapter collections and multi-LoRA serving; Flat-LoRA."""

# --- lora-joint-compression ---
from ._clustered_compression import ClusteredJointLoRACompressor
from ._joint_compression import JointLoRACompressor
from ._peft import compress_peft_collection
from ._serving import benchmark_multi_lora_forward, separate_lora_forward, shared_basis_forward
from ._svd_compression import SVDLoRACompressor

# --- flat-lora ---
# isort: split
from ._flat_lora import FlatLoRACallback, FlatLoRAPerturbation, inject_lora
from ._flat_lora_estimators import FlatLoRAClassifier, FlatLoRARegressor

__all__ = [
    # --- lora-joint-compression ---
    "ClusteredJointLoRACompressor",
    "JointLoRACompressor",
    "SVDLoRACompressor",
    "benchmark_multi_lora_forward",
    "compress_peft_collection",
    "separate_lora_forward",
    "shared_basis_forward",
    # --- flat-lora ---
    "FlatLoRACallback",
    "FlatLoRAClassifier",
    "FlatLoRAPerturbation",
    "FlatLoRARegressor",
    "inject_lora",
]
