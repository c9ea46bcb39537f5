"""Generative models: flow matching between distributions (needs the ``neural`` extra)."""

from ._cellflux import CellFlux, frechet_transport_score

__all__ = [
    "CellFlux",
    "frechet_transport_score",
]
