"""Differential privacy: stratified sampling designs and amplification by partitioning."""

# Names that need torch are imported lazily (see __getattr__) and listed in _TORCH_NAMES,
# so that `import sklearn_icml.privacy` stays numpy-only.
_TORCH_NAMES = set()

__all__ = []

# --- dp-stratified-sampling ---

# --- privacy-amplification-partitioning ---
