"""Additive regression and classification problems with known shape functions (GAM tests)."""

import numbers

import numpy as np
from scipy.special import expit
from sklearn.utils._param_validation import Interval, validate_params

from ..utils import check_generator
from ..utils._param_validation import NON_NEGATIVE_REAL, POSITIVE_INT

_SIZE_CONSTRAINTS = {
    "n_samples": [POSITIVE_INT],
    "n_features": [Interval(numbers.Integral, 4, None, closed="left")],
    "random_state": ["random_state", np.random.Generator],
}


def _design(n_samples, n_features, random_state):
    """The generator of ``random_state`` and ``X ~ U(-1, 1)^(n_samples x n_features)``."""
    rng = check_generator(random_state)
    return rng, rng.uniform(-1.0, 1.0, size=(n_samples, n_features))


@validate_params(
    {**_SIZE_CONSTRAINTS, "noise": [NON_NEGATIVE_REAL]},
    prefer_skip_nested_validation=True,
)
def make_additive_regression(n_samples=6000, n_features=6, *, noise=0.5, random_state=0):
    """Additive regression with step, smooth and pure-noise features.

    ``X ~ U(-1, 1)^(n_samples x n_features)`` and
    ``f(x) = 2 1[x0 > 0.3] + sin(pi x1) + 2 x2^2 - 1.5 1[x3 < -0.5]``;
    features 4 and above do not enter ``f``. ``y = f + N(0, noise^2)``.

    Parameters
    ----------
    n_samples : int, default=6000
        Number of rows.
    n_features : int, default=6
        Number of columns (>= 4); columns beyond the fourth are pure noise.
    noise : float, default=0.5
        Standard deviation of the Gaussian noise on ``y``.
    random_state : int, numpy Generator, RandomState or None, default=0
        Turned into a numpy Generator by :func:`sklearn_icml.utils.check_generator`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features.
    y : ndarray of shape (n_samples,)
        Noisy target.
    f : ndarray of shape (n_samples,)
        Noise-free target, the Bayes-optimal prediction.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_additive_regression
    >>> X, y, f = make_additive_regression(100, random_state=0)
    >>> X.shape, y.shape, f.shape
    ((100, 6), (100,), (100,))
    """
    rng, X = _design(n_samples, n_features, random_state)
    f = (
        2.0 * (X[:, 0] > 0.3)
        + np.sin(np.pi * X[:, 1])
        + 2.0 * X[:, 2] ** 2
        - 1.5 * (X[:, 3] < -0.5)
    )
    y = f + rng.normal(0.0, noise, size=X.shape[0])
    return X, y, f


@validate_params(_SIZE_CONSTRAINTS, prefer_skip_nested_validation=True)
def make_additive_classification(n_samples=6000, n_features=6, *, random_state=1):
    """Binary classification with an additive logit and pure-noise features.

    ``X ~ U(-1, 1)^(n_samples x n_features)``,
    ``logit = 2 1[x0 > 0.3] + 1.5 sin(pi x1) + 2 x2^2 - 1 - 1.5 1[x3 < -0.5]`` and
    ``y ~ Bernoulli(expit(logit))``; features 4 and above do not enter the logit.

    Parameters
    ----------
    n_samples : int, default=6000
        Number of rows.
    n_features : int, default=6
        Number of columns (>= 4).
    random_state : int, numpy Generator, RandomState or None, default=1
        Turned into a numpy Generator by :func:`sklearn_icml.utils.check_generator`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features, uniform on [-1, 1] as in :func:`make_additive_regression`.
    y : ndarray of shape (n_samples,)
        Labels in {0, 1}.
    proba : ndarray of shape (n_samples,)
        True ``P(y = 1 | x)``, the Bayes-optimal prediction.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_additive_classification
    >>> X, y, proba = make_additive_classification(100, random_state=1)
    >>> sorted(set(y.tolist()))
    [0, 1]
    """
    rng, X = _design(n_samples, n_features, random_state)
    logit = (
        2.0 * (X[:, 0] > 0.3)
        + 1.5 * np.sin(np.pi * X[:, 1])
        + 2.0 * X[:, 2] ** 2
        - 1.0
        - 1.5 * (X[:, 3] < -0.5)
    )
    proba = expit(logit)
    y = (rng.uniform(size=X.shape[0]) < proba).astype(np.int64)
    return X, y, proba
