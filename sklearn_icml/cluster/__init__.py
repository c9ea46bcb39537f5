"""Clustering: PTIB-style multi-view information-bottleneck clustering."""

from ._ptib import PTIBClustering

__all__ = ["PTIBClustering"]
