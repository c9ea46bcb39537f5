"""Generative models: flow matching between distributions (needs the ``neural`` extra)."""

# --- cellflux-flow-matching ---
from ._cellflux import CellFlux

__all__ = [
    # --- cellflux-flow-matching ---
    "CellFlux",
]
