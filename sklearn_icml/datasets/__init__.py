"""Data generators used by tests, benchmarks, examples and the demo tour.

Nothing here downloads anything: every set is generated from a seed.
"""

# --- capa-similarity ---
from ._multiple_choice import make_multiple_choice_predictions

# --- stump-forest-gam ---
# --- ptib-clustering ---
# --- dp-stratified-sampling ---
# --- privacy-amplification-partitioning ---
# --- multi-agent-bai ---
# --- bandits-with-interference ---
# --- streaming-parity-rnn ---
# --- data-weighting-model ---

__all__ = [
    "make_multiple_choice_predictions",
]
