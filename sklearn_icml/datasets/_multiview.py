"""Multi-view bag-of-words counts with views of graded informativeness (PTIB experiment E1)."""

import numbers

import numpy as np

from ..utils.validation import check_positive_int

_DEFAULT_VIEWS = ((50, 0.55), (40, 0.60), (30, 0.70), (50, 1.0))


def _generator(random_state):
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**32 - 1))
    if random_state is None or isinstance(random_state, numbers.Integral | np.random.Generator):
        return np.random.default_rng(random_state)
    raise TypeError(
        "random_state must be None, an int, a numpy Generator or a RandomState; got "
        f"{random_state!r} instead."
    )


def make_multiview_counts(
    n_samples_per_cluster=100,
    n_clusters=5,
    views=_DEFAULT_VIEWS,
    *,
    n_tokens=20,
    random_state=None,
):
    """Count matrices of several views of the same clustered samples.

    Each view v has ``d`` features (a vocabulary) and a noise level ``sigma`` in [0, 1]. It
    draws a background distribution ``base = Dirichlet(1_d)`` and, for each cluster c, a
    prototype ``proto_c = (1 - sigma) Dirichlet(0.3 * 1_d) + sigma * base`` (``base`` first,
    then the K prototypes, in that order). Sample i of cluster ``y_i`` gets the counts
    ``Multinomial(n_tokens, proto_{y_i})``. With ``sigma = 1`` a view is pure noise; the
    smaller ``sigma``, the more a view says about the clusters.

    Parameters
    ----------
    n_samples_per_cluster : int, default=100
        Samples of each cluster.
    n_clusters : int, default=5
        Number of clusters K (>= 2).
    views : sequence of (int, float), default=((50, .55), (40, .60), (30, .70), (50, 1.0))
        ``(n_features, sigma)`` of each view. The default is the spec's experiment E1,
        whose last view is pure noise.
    n_tokens : int, default=20
        Tokens per sample and view (every row of every view sums to it).
    random_state : int, numpy Generator, RandomState or None, default=None
        Seed of a :func:`numpy.random.default_rng` generator.

    Returns
    -------
    Xs : list of ndarray of shape (n_samples, n_features_v)
        Integer counts (int64), one matrix per view, rows ordered by cluster.
    y : ndarray of shape (n_samples,)
        True cluster of each sample (``repeat(arange(K), n_samples_per_cluster)``).

    Examples
    --------
    >>> from sklearn_icml.datasets import make_multiview_counts
    >>> Xs, y = make_multiview_counts(10, 3, views=[(20, 0.5), (8, 1.0)], random_state=0)
    >>> [X.shape for X in Xs], y.shape
    ([(30, 20), (30, 8)], (30,))
    >>> sorted({int(s) for X in Xs for s in X.sum(axis=1)})
    [20]
    """
    n_per = check_positive_int(n_samples_per_cluster, "n_samples_per_cluster")
    n_clusters = check_positive_int(n_clusters, "n_clusters", minimum=2)
    n_tokens = check_positive_int(n_tokens, "n_tokens")
    if isinstance(views, str) or not hasattr(views, "__len__") or len(views) == 0:
        raise ValueError(
            f"views must be a non-empty sequence of (n_features, sigma) pairs; got {views!r} "
            "instead."
        )
    specs = []
    for v, item in enumerate(views):
        try:
            d, sigma = item
        except (TypeError, ValueError):
            raise ValueError(
                f"views[{v}] must be a pair (n_features, sigma); got {item!r} instead."
            ) from None
        d = check_positive_int(d, f"views[{v}] n_features", minimum=2)
        if not isinstance(sigma, numbers.Real) or not 0.0 <= sigma <= 1.0:
            raise ValueError(f"views[{v}] sigma must be in [0, 1]; got {sigma!r} instead.")
        specs.append((d, float(sigma)))
    rng = _generator(random_state)

    y = np.repeat(np.arange(n_clusters), n_per)
    Xs = []
    for d, sigma in specs:
        base = rng.dirichlet(np.ones(d))
        protos = np.array(
            [
                (1.0 - sigma) * rng.dirichlet(np.full(d, 0.3)) + sigma * base
                for _ in range(n_clusters)
            ]
        )
        protos /= protos.sum(axis=1, keepdims=True)  # guard against rounding drift
        Xs.append(rng.multinomial(n_tokens, protos[y]).astype(np.int64))
    return Xs, y
