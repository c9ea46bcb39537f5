"""The clustering graph of Cl-BAI: agents whose estimated means agree on their active arms."""

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

_MEGABYTES_PER_BLOCK = 50


def _same_cluster_edges(means, active, eta):
    """Edges (i, j), i < j, of the clustering graph.

    ``(i, j)`` is an edge when ``|means[i, k] - means[j, k]| <= eta / 2`` for every arm ``k``
    active for ``i`` or for ``j``. The O(N^2 K) comparison runs in row blocks of at most
    about 50 MB.

    Returns
    -------
    rows, cols : ndarray of int
        Endpoints of the edges.
    """
    n_agents, n_arms = means.shape
    block = max(1, int(_MEGABYTES_PER_BLOCK * 2**20 // (8 * n_agents * n_arms)))
    rows, cols = [], []
    half = eta / 2.0
    for start in range(0, n_agents, block):
        stop = min(start + block, n_agents)
        far = np.abs(means[start:stop, None, :] - means[None, :, :]) > half
        union = active[start:stop, None, :] | active[None, :, :]
        linked = ~np.any(far & union, axis=2)
        i, j = np.nonzero(linked)
        i += start
        keep = i < j
        rows.append(i[keep])
        cols.append(j[keep])
    return np.concatenate(rows), np.concatenate(cols)


def _cluster_agents(means, active, eta):
    """Connected components of the clustering graph: ``(n_components, labels)``."""
    n_agents = means.shape[0]
    rows, cols = _same_cluster_edges(means, active, eta)
    graph = coo_matrix(
        (np.ones(rows.shape[0], dtype=np.int8), (rows, cols)), shape=(n_agents, n_agents)
    ).tocsr()
    n_comp, labels = connected_components(graph, directed=False)
    return int(n_comp), labels.astype(np.int64)
