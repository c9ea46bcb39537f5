"""Model-similarity metrics: CAPA (chance adjusted probabilistic agreement)."""

from ._capa import capa_matrix, capa_score, error_consistency
from ._capa_similarity import CAPASimilarity

__all__ = ["CAPASimilarity", "capa_matrix", "capa_score", "error_consistency"]
