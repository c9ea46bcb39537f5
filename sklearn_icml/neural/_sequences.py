"""Padded symbol sequences: the input format of the streaming parity RNN and its automata.

A batch of sequences of different lengths is a 2-D integer array, one sequence per row,
right-padded with ``PAD`` (-1), so every scikit-learn tool can slice it. numpy only.
"""

import numpy as np

PAD = -1


def _pad_ragged(X):
    """Pad a list of 1-D sequences of different lengths with ``PAD``; else return X."""
    if not isinstance(X, list | tuple) or len(X) == 0:
        return X
    if not all(isinstance(row, list | tuple | np.ndarray) for row in X):
        return X
    rows = [np.asarray(row) for row in X]
    if any(row.ndim != 1 for row in rows) or len({row.shape[0] for row in rows}) == 1:
        return X
    width = max(row.shape[0] for row in rows)
    out = np.full((len(rows), width), PAD, dtype=np.result_type(*rows, np.int64))
    for i, row in enumerate(rows):
        out[i, : row.shape[0]] = row
    return out


def check_sequences(X, n_symbols, *, allow_empty=False):
    """Check that a validated 2-D numeric array holds padded symbol sequences.

    Returns an int64 copy. Raises ValueError for non-integers, symbols outside
    ``0..n_symbols-1``, padding values before a symbol, and (unless ``allow_empty``) rows
    with no symbol at all.
    """
    X = np.asarray(X)
    if X.dtype.kind == "f":
        if not np.all(X == np.round(X)):
            raise ValueError(
                "X must hold integer symbols (and the padding -1). Got non-integer values instead."
            )
    elif X.dtype.kind not in "iu":
        raise TypeError(f"X must hold integer symbols. Got dtype {X.dtype} instead.")
    if np.any(X < PAD):
        raise ValueError(
            f"Negative values in data other than the padding {PAD} are not symbols. "
            f"Got {X.min().item()!r} instead."
        )
    if np.any(X >= n_symbols):
        raise ValueError(
            f"X has symbol {X.max().item()!r}, outside 0..{n_symbols - 1} "
            f"(n_symbols={n_symbols}); raise n_symbols or re-encode the symbols."
        )
    X = X.astype(np.int64)
    is_pad = X == PAD
    bad = np.flatnonzero(np.any(is_pad[:, :-1] & ~is_pad[:, 1:], axis=1))
    if bad.size:
        raise ValueError(
            f"X row {bad[0]} has the padding {PAD} before a symbol; padding must only be at "
            f"the right end of a row. Got {X[bad[0]].tolist()[:20]!r} instead."
        )
    if not allow_empty and X.shape[1] > 0:
        empty = np.flatnonzero(is_pad[:, 0])
        if empty.size:
            raise ValueError(
                f"X row {empty[0]} is an empty sequence (only padding); every sequence needs "
                "at least one symbol."
            )
    return X
