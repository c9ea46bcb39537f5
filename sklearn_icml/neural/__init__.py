"""Neural methods on torch and skorch (needs the ``neural`` extra)."""

# --- streaming-parity-rnn ---
from ._automaton import Automaton, extract_automaton, merger_fraction
from ._parity_theory import effective_theory_ode
from ._streaming_parity import (
    LengthBucketLoader,
    ParityRNNModule,
    StreamingParityRNNClassifier,
)

__all__ = [
    # --- streaming-parity-rnn ---
    "Automaton",
    "LengthBucketLoader",
    "ParityRNNModule",
    "StreamingParityRNNClassifier",
    "effective_theory_ode",
    "extract_automaton",
    "merger_fraction",
]

# --- icl-multihead-attention ---
