"""Multi-view bag-of-words counts with views of graded informativeness (PTIB clustering)."""

import numbers

import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils import check_generator
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import INT_AT_LEAST_TWO, POSITIVE_INT

_DEFAULT_VIEWS = ((50, 0.55), (40, 0.60), (30, 0.70), (50, 1.0))


@keyword_only_after(1)
@validate_params(
    {
        "n_samples_per_cluster": [POSITIVE_INT],
        "n_clusters": [INT_AT_LEAST_TWO],
        "views": ["array-like"],
        "n_tokens": [POSITIVE_INT],
        "random_state": ["random_state", np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def make_multiview_counts(
    n_samples_per_cluster=100,
    *,
    n_clusters=5,
    views=_DEFAULT_VIEWS,
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

    The views are drawn one after another (a view's prototypes, then its counts), so with
    one seed only the first view's prototypes stay the same when ``n_samples_per_cluster``
    changes. For new samples of the same clusters (to try ``predict``), generate more
    samples and hold some out.

    Parameters
    ----------
    n_samples_per_cluster : int, default=100
        Samples of each cluster.
    n_clusters : int, default=5
        Number of clusters K (>= 2).
    views : sequence of (int, float), default=((50, .55), (40, .60), (30, .70), (50, 1.0))
        ``(n_features, sigma)`` of each view. The default has three views of decreasing
        informativeness and a last view of pure noise.
    n_tokens : int, default=20
        Tokens per sample and view (every row of every view sums to it).
    random_state : int, numpy Generator, RandomState or None, default=None
        Turned into a numpy Generator by :func:`sklearn_icml.utils.check_generator`.

    Returns
    -------
    Xs : list of ndarray of shape (n_samples, n_features_v)
        Integer counts (int64), one matrix per view, rows ordered by cluster.
    y : ndarray of shape (n_samples,)
        True cluster of each sample (``repeat(arange(K), n_samples_per_cluster)``).

    Examples
    --------
    >>> from sklearn_icml.datasets import make_multiview_counts
    >>> Xs, y = make_multiview_counts(
    ...     10, n_clusters=3, views=[(20, 0.5), (8, 1.0)], random_state=0)
    >>> [X.shape for X in Xs], y.shape
    ([(30, 20), (30, 8)], (30,))
    >>> sorted({int(s) for X in Xs for s in X.sum(axis=1)})
    [20]
    """
    if len(views) == 0:
        raise ValueError(
            f"views must be a non-empty sequence of (n_features, sigma) pairs. Got {views!r} "
            "instead."
        )
    sizes = []
    for v, item in enumerate(views):
        try:
            d, sigma = item
        except (TypeError, ValueError):
            raise ValueError(
                f"views[{v}] must be a pair (n_features, sigma). Got {item!r} instead."
            ) from None
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"views[{v}] n_features must be an int. Got {d!r} instead.")
        if d < 2:
            raise ValueError(f"views[{v}] n_features must be >= 2. Got {d!r} instead.")
        if not isinstance(sigma, numbers.Real) or not 0.0 <= sigma <= 1.0:
            raise ValueError(f"views[{v}] sigma must be in [0, 1]. Got {sigma!r} instead.")
        sizes.append((int(d), float(sigma)))
    rng = check_generator(random_state)

    y = np.repeat(np.arange(n_clusters), n_samples_per_cluster)
    Xs = []
    for d, sigma in sizes:
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
