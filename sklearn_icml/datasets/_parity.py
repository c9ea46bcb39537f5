"""Streaming parity data: binary sequences, right-padded with -1, and their parity."""


import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils import check_random_state
from ..utils._param_validation import POSITIVE_INT, UNIT_INTERVAL_WITHOUT_ZERO

PAD = -1
# refuse to enumerate more rows than this; sample with n_per_length instead
_MAX_EXHAUSTIVE_ROWS = 1 << 22


def _all_sequences(length):
    """All 2**length binary sequences of one length, in binary counting order."""
    codes = np.arange(1 << length, dtype=np.int64)
    shifts = np.arange(length - 1, -1, -1, dtype=np.int64)
    return (codes[:, None] >> shifts) & 1


def _pad(rows, width):
    out = np.full((rows.shape[0], width), PAD, dtype=np.int64)
    out[:, : rows.shape[1]] = rows
    return out


@validate_params({"X": ["array-like"]}, prefer_skip_nested_validation=True)
def parity_targets(X):
    """Parity of the number of ones in each padded binary sequence.

    Parameters
    ----------
    X : array-like of shape (n_sequences, max_length)
        Symbols 0/1, each row right-padded with -1.

    Returns
    -------
    y : ndarray of shape (n_sequences,), dtype int64
        ``sum(row == 1) % 2``.

    Raises
    ------
    ValueError
        If ``X`` is not 2-D or holds values other than 0, 1 and the padding -1.

    Examples
    --------
    >>> from sklearn_icml.datasets import parity_targets
    >>> parity_targets([[1, 1, 0], [1, 0, -1], [0, -1, -1]])
    array([0, 1, 0])
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (sequences x positions). Got shape {X.shape} instead.")
    bad = ~np.isin(X, (0, 1, PAD))
    if np.any(bad):
        value = X[bad].flat[0].item()
        raise ValueError(
            f"X must hold the symbols 0 and 1 and the padding value {PAD}. "
            f"Got {value!r} instead."
        )
    return (np.count_nonzero(X == 1, axis=1) % 2).astype(np.int64)


@validate_params(
    {
        "max_length": [POSITIVE_INT],
        "min_length": [POSITIVE_INT],
        "fraction": [UNIT_INTERVAL_WITHOUT_ZERO],
        "n_per_length": [POSITIVE_INT, None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_streaming_parity(
    max_length=10,
    min_length=1,
    *,
    fraction=1.0,
    n_per_length=None,
    random_state=None,
):
    """Binary sequences of lengths ``min_length..max_length`` labelled by their parity.

    The streaming parity task of van Rossem & Saxe (ICML 2025): the target of a sequence
    of 0/1 symbols is the parity of its number of ones. By default every one of the
    ``2**L`` sequences of each length ``L`` is returned (lengths 1..10 give 2046
    sequences, the paper's training set). ``fraction`` keeps, for each length, a random
    subset of ``Binomial(2**L, fraction)`` distinct sequences (the paper's data-fraction
    experiment); ``n_per_length`` instead draws that many uniformly random sequences per
    length, for long test sequences (lengths of 10,000 are fine).

    Parameters
    ----------
    max_length : int, default=10
        Longest sequence; also the width of ``X``.
    min_length : int, default=1
        Shortest sequence.
    fraction : float in (0, 1], default=1.0
        Expected fraction of each length's ``2**L`` sequences to keep (exhaustive mode).
    n_per_length : int, default=None
        If given, draw this many random sequences per length instead of enumerating
        them; symbols are independent fair coins, so short lengths may repeat a sequence.
        Cannot be combined with ``fraction < 1``.
    random_state : int, RandomState instance or None, default=None
        Seed for the subsets (``fraction < 1``) and the random sequences.

    Returns
    -------
    X : ndarray of shape (n_sequences, max_length), dtype int64
        One sequence per row, right-padded with -1; rows sorted by length.
    y : ndarray of shape (n_sequences,), dtype int64
        Parity (0 even, 1 odd) of each row.

    See Also
    --------
    parity_targets : the targets of given sequences.
    sklearn_icml.neural.StreamingParityRNNClassifier : the RNN trained on this data.

    References
    ----------
    .. [1] van Rossem & Saxe, ICML 2025 (arXiv:2507.09897): the task and its training set.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_streaming_parity
    >>> X, y = make_streaming_parity(max_length=2)
    >>> X
    array([[ 0, -1],
           [ 1, -1],
           [ 0,  0],
           [ 0,  1],
           [ 1,  0],
           [ 1,  1]])
    >>> y
    array([0, 1, 0, 1, 1, 0])
    >>> X, y = make_streaming_parity(1000, 1000, n_per_length=5, random_state=0)
    >>> X.shape
    (5, 1000)
    """
    max_length, min_length = int(max_length), int(min_length)
    if min_length > max_length:
        raise ValueError(
            f"min_length must be <= max_length={max_length}. Got {min_length!r} instead."
        )
    rng = check_random_state(random_state)
    lengths = range(min_length, max_length + 1)

    if n_per_length is not None:
        n_per_length = int(n_per_length)
        if fraction < 1.0:
            raise ValueError(
                "fraction and n_per_length cannot be combined: n_per_length draws random "
                f"sequences, fraction subsamples all sequences. Got fraction={fraction!r}."
            )
        n_rows = n_per_length * len(lengths)
        if n_rows * max_length > 1 << 28:
            raise ValueError(
                f"n_per_length={n_per_length} with lengths {min_length}..{max_length} would "
                f"need {n_rows} x {max_length} symbols; ask for fewer."
            )
        blocks = [
            _pad(rng.randint(0, 2, size=(n_per_length, length)), max_length)
            for length in lengths
        ]
    else:
        n_rows = sum(1 << length for length in lengths)
        if n_rows > _MAX_EXHAUSTIVE_ROWS:
            raise ValueError(
                f"enumerating all sequences of lengths {min_length}..{max_length} gives "
                f"{n_rows} rows (more than {_MAX_EXHAUSTIVE_ROWS}); pass n_per_length to "
                "sample random sequences instead."
            )
        blocks = []
        for length in lengths:
            rows = _all_sequences(length)
            if fraction < 1.0:
                keep = rng.binomial(rows.shape[0], fraction)
                if keep == 0:
                    continue
                chosen = np.sort(rng.choice(rows.shape[0], size=keep, replace=False))
                rows = rows[chosen]
            blocks.append(_pad(rows, max_length))
    if not blocks:
        X = np.empty((0, max_length), dtype=np.int64)
    else:
        X = np.concatenate(blocks)
    return X, parity_targets(X)
