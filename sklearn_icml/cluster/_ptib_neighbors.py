"""p(y|x) of a continuous view from its neighbourhood graph (``relevance="neighbors"``).

The relevant variable Y of a view is the training sample a random walk on that view's
k-nearest-neighbour graph reaches: ``p_v(y = j | x_i)`` is the probability of walking from
sample i to sample j in ``n_steps`` steps, with one-step transition probabilities

    M_ij ∝ exp(-d_ij^2 / (sigma_i sigma_j))   for j among the k nearest neighbours of i,

``d`` the Euclidean distance and ``sigma_i`` the distance from i to its k-th nearest
neighbour (the local scale of Zelnik-Manor and Perona, 2004: a bandwidth read from the
data, no parameter). Clustering such distributions with the information bottleneck is the
Markovian-relaxation IB of Tishby and Slonim (2000): the clusters keep as much information
as possible about where the walk goes.
"""

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.neighbors import NearestNeighbors


def _local_scale(dist, fallback=None):
    """Distance to the k-th neighbour; zero scales (duplicates) get ``fallback``.

    ``fallback`` defaults to the smallest positive scale (1 when there is none).
    """
    scale = dist[:, -1].copy()
    if fallback is None:
        positive = scale[scale > 0]
        fallback = float(positive.min()) if positive.size else 1.0
    scale[scale <= 0] = fallback
    return scale, fallback


def _kernel_rows(dist, ind, scale_rows, scale_train, n_train):
    """Row-normalised Gaussian kernel weights on the neighbours, as CSR (m, n_train)."""
    logw = -(dist**2) / (scale_rows[:, None] * scale_train[ind])
    logw -= logw.max(axis=1, keepdims=True)  # no underflow of a whole row
    w = np.exp(logw)
    w /= w.sum(axis=1, keepdims=True)
    m, k = ind.shape
    indptr = np.arange(0, m * k + 1, k, dtype=np.int64)
    return sparse.csr_matrix((w.ravel(), ind.ravel(), indptr), shape=(m, n_train))


@dataclass
class NeighborRelevance:
    """The k-NN random walk of one view, fitted on its training samples."""

    nn: NearestNeighbors
    scale: np.ndarray  # (n_train,) local scale of every training sample
    fallback: float  # the scale of a sample whose k-th neighbour is at distance 0
    step: sparse.csr_matrix  # (n_train, n_train) one-step transition matrix
    n_steps: int

    @classmethod
    def fit(cls, Z, n_neighbors, n_steps):
        n = Z.shape[0]
        if n == 1:
            step = sparse.csr_matrix(np.ones((1, 1)))
            return cls(NearestNeighbors(n_neighbors=1).fit(Z), np.ones(1), 1.0, step, n_steps)
        nn = NearestNeighbors(n_neighbors=min(n_neighbors, n - 1)).fit(Z)
        dist, ind = nn.kneighbors()  # each sample's neighbours, itself excluded
        scale, fallback = _local_scale(dist)
        step = _kernel_rows(dist, ind, scale, scale, n)
        return cls(nn, scale, fallback, step, n_steps)

    def _walk(self, first):
        P = first
        for _ in range(self.n_steps - 1):
            P = P @ self.step
        P = sparse.csr_matrix(P)
        P.eliminate_zeros()
        return P

    def training_distributions(self):
        """``p(y|x_i)`` of the training samples, CSR (n_train, n_train)."""
        return self._walk(self.step)

    def distributions(self, Z):
        """``p(y|x)`` of new samples: their first step goes to their nearest training ones."""
        n_train = self.scale.shape[0]
        if n_train == 1:
            return sparse.csr_matrix(np.ones((Z.shape[0], 1)))
        dist, ind = self.nn.kneighbors(Z)
        scale, _ = _local_scale(dist, self.fallback)
        return self._walk(_kernel_rows(dist, ind, scale, self.scale, n_train))
