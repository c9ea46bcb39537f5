"""Data for data weighting (DWM): mixed-quality sources, noisy labels, two Markov languages."""

import numbers

import numpy as np
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, validate_params

from ..utils import check_random_state
from ..utils._param_validation import CLOSED_UNIT_INTERVAL, FINITE_NON_NEGATIVE_REAL, POSITIVE_REAL

SOURCE_NAMES = ("A", "B", "C", "D")


def _positive_int(low=1):
    return [Interval(numbers.Integral, low, None, closed="left")]


#: The held-out sizes and the seed, which both generators of a train/val/test split take.
_SPLIT_CONSTRAINTS = {
    "n_val": _positive_int(),
    "n_test": _positive_int(),
    "random_state": ["random_state"],
}


@validate_params(
    {
        "n_per_source": _positive_int(),
        "n_features": _positive_int(),
        "noise": [FINITE_NON_NEGATIVE_REAL],
        "noisy_source_noise": [FINITE_NON_NEGATIVE_REAL],
        **_SPLIT_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
def make_mixed_source_regression(
    n_per_source=1000,
    *,
    n_features=10,
    n_val=200,
    n_test=2000,
    noise=0.1,
    noisy_source_noise=2.0,
    random_state=None,
):
    """Linear-regression pool from four sources of different use for a target source.

    ``x ~ N(0, I)`` in every source and ``beta_A ~ N(0, I)``; the sources are

    * A: ``y = x . beta_A + noise * e`` (the target source),
    * B: ``y = x . beta_A + noisy_source_noise * e`` (right signal, large noise),
    * C: ``y = -x . beta_A + noise * e`` (opposite signal),
    * D: ``y = noise * e`` (no signal),

    with ``e ~ N(0, 1)``. Validation and test rows come from A only. Uniform least squares
    on the pool estimates about ``beta_A / 4`` (test MSE about ``9/16 |beta_A|^2``); a
    learner that weights A (and B) only reaches the noise level.

    Parameters
    ----------
    n_per_source : int, default=1000
        Training rows per source.
    n_features : int, default=10
    n_val : int, default=200
        Validation rows (source A).
    n_test : int, default=2000
        Test rows (source A).
    noise : float, default=0.1
        Noise scale of sources A, C and D.
    noisy_source_noise : float, default=2.0
        Noise scale of source B.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (4 * n_per_source, n_features), ``y``, ``source`` (0..3 for A..D),
        ``source_onehot`` (n, 4), ``source_names``, ``X_val``, ``y_val``, ``X_test``,
        ``y_test`` and ``coef`` (``beta_A``).

    Examples
    --------
    >>> from sklearn_icml.datasets import make_mixed_source_regression
    >>> data = make_mixed_source_regression(n_per_source=5, n_features=3, random_state=0)
    >>> data.X.shape, data.source.tolist()[:6], data.X_val.shape
    ((20, 3), [0, 0, 0, 0, 0, 1], (200, 3))
    """
    rng = check_random_state(random_state)
    coef = rng.standard_normal(n_features)
    signs = np.array([1.0, 1.0, -1.0, 0.0])
    scales = np.array([noise, noisy_source_noise, noise, noise], dtype=np.float64)
    source = np.repeat(np.arange(4), n_per_source)
    X = rng.standard_normal((4 * n_per_source, n_features))
    y = signs[source] * (X @ coef) + scales[source] * rng.standard_normal(source.shape[0])

    def target_source(n):
        Xa = rng.standard_normal((n, n_features))
        return Xa, Xa @ coef + noise * rng.standard_normal(n)

    X_val, y_val = target_source(n_val)
    X_test, y_test = target_source(n_test)
    return Bunch(
        X=X,
        y=y,
        source=source,
        source_onehot=np.eye(4)[source],
        source_names=SOURCE_NAMES,
        X_val=X_val,
        y_val=y_val,
        X_test=X_test,
        y_test=y_test,
        coef=coef,
    )


@validate_params(
    {"y": ["array-like"], "noise_rate": [CLOSED_UNIT_INTERVAL], "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
def corrupt_labels(y, noise_rate, *, random_state=None):
    """Symmetric label noise: each label moves, with probability ``noise_rate``, to another class.

    The new label is drawn uniformly among the *other* classes present in ``y``, so the
    realised corruption rate is ``noise_rate`` in expectation. ``y`` is not modified.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (at least 2 classes).
    noise_rate : float in [0, 1]
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    y_noisy : ndarray of shape (n_samples,)
    corrupted : ndarray of shape (n_samples,), dtype bool
        Whether each label was changed.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.datasets._weighting import corrupt_labels
    >>> y_noisy, corrupted = corrupt_labels(np.arange(1000) % 10, 0.4, random_state=0)
    >>> bool(np.all((y_noisy != np.arange(1000) % 10) == corrupted))
    True
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D. Got an array of shape {y.shape} instead.")
    classes, index = np.unique(y, return_inverse=True)
    k = classes.shape[0]
    if k < 2:
        raise ValueError(f"y must hold at least 2 classes to corrupt. Got {k} instead.")
    rng = check_random_state(random_state)
    corrupted = rng.random_sample(y.shape[0]) < noise_rate
    shift = rng.randint(1, k, size=y.shape[0])
    new_index = np.where(corrupted, (index + shift) % k, index)
    return classes[new_index], corrupted


def _markov_sequences(transitions, n, seq_len, rng):
    vocab = transitions.shape[0]
    cumulative = np.cumsum(transitions, axis=1)
    cumulative[:, -1] = 1.0
    X = np.empty((n, seq_len), dtype=np.int64)
    X[:, 0] = rng.randint(vocab, size=n)
    for t in range(1, seq_len):
        u = rng.random_sample(n)
        X[:, t] = np.minimum((cumulative[X[:, t - 1]] < u[:, None]).sum(axis=1), vocab - 1)
    return X


@validate_params(
    {
        "n_sequences": _positive_int(),
        "seq_len": _positive_int(2),
        "vocab_size": _positive_int(2),
        "target_fraction": [CLOSED_UNIT_INTERVAL],
        "alpha": [POSITIVE_REAL],
        "language_seeds": [tuple, list],
        **_SPLIT_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
def make_markov_languages(
    n_sequences=2000,
    *,
    seq_len=32,
    vocab_size=20,
    target_fraction=0.3,
    alpha=0.1,
    n_val=200,
    n_test=500,
    language_seeds=(1, 2),
    random_state=None,
):
    """Token sequences from two first-order Markov "languages" over one vocabulary.

    Each language has a transition matrix with rows drawn from ``Dirichlet(alpha)`` (its
    own seed, so the languages are fixed while the samples vary with ``random_state``);
    a sequence starts with a uniform symbol. The training pool mixes the target language
    A (share ``target_fraction``) with language B; validation and test sequences come
    from A: a tiny counterpart of the paper's setting, where a language model pre-trains
    on a pool that mixes the target domain with others (Yu et al., ICML 2025).

    Parameters
    ----------
    n_sequences : int, default=2000
        Sequences in the training pool.
    seq_len : int, default=32
    vocab_size : int, default=20
    target_fraction : float in [0, 1], default=0.3
        Share of language A in the pool.
    alpha : float, default=0.1
        Dirichlet concentration of the transition rows (small: peaked transitions).
    n_val, n_test : int, default=200, 500
        Validation and test sequences (language A).
    language_seeds : tuple of 2 ints, default=(1, 2)
        Seeds of the transition matrices of A and B.
    random_state : int, RandomState instance or None, default=None
        Seed of the sequences.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X`` (n_sequences, seq_len) int64, ``language`` (0 = A, 1 = B), ``X_val``,
        ``X_test`` and ``transitions`` (2, vocab_size, vocab_size).

    Examples
    --------
    >>> from sklearn_icml.datasets import make_markov_languages
    >>> data = make_markov_languages(10, seq_len=5, n_val=2, n_test=2, random_state=0)
    >>> data.X.shape, int(data.language.sum()), data.X_val.shape
    ((10, 5), 7, (2, 5))
    """
    if len(language_seeds) != 2:
        raise ValueError(
            f"language_seeds must hold 2 seeds (A, B). Got {language_seeds!r} instead."
        )
    transitions = np.stack(
        [
            check_random_state(int(seed)).dirichlet(np.full(vocab_size, float(alpha)), vocab_size)
            for seed in language_seeds
        ]
    )
    rng = check_random_state(random_state)
    n_a = int(round(target_fraction * n_sequences))
    language = np.repeat([0, 1], [n_a, n_sequences - n_a])
    X = np.empty((n_sequences, seq_len), dtype=np.int64)
    X[:n_a] = _markov_sequences(transitions[0], n_a, seq_len, rng)
    X[n_a:] = _markov_sequences(transitions[1], n_sequences - n_a, seq_len, rng)
    return Bunch(
        X=X,
        language=language,
        X_val=_markov_sequences(transitions[0], n_val, seq_len, rng),
        X_test=_markov_sequences(transitions[0], n_test, seq_len, rng),
        transitions=transitions,
    )
