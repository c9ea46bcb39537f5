"""numba kernels of the adaptive order-1 context model, each with a plain numpy reference.

The model keeps one table of symbol counts per context (the previous symbol, or the
start symbol 256 at the first point of a sequence). Every count starts at ``init``; after
coding a symbol its count in the current context grows by ``increment``. The coding
probability of a symbol is its count divided by the context's total, *before* the update,
so a decoder that updates the same tables after each decoded symbol sees the same
probabilities.
"""

import numpy as np

from ..utils._numba import njit_cached

N_SYMBOLS = 256
N_CONTEXTS = 257  # 256 previous symbols + the start symbol


@njit_cached()
def count_rows(symbols, starts, counts, prev, increment):
    """Count tables seen by each symbol; updates ``counts`` in place.

    Parameters
    ----------
    symbols : int64 array (n,)
        Symbols in coding order.
    starts : bool array (n,)
        True where a new sequence starts (context = start symbol).
    counts : int64 array (257, 256)
        Current tables; updated in place.
    prev : int
        Previous symbol before ``symbols[0]`` (256 for none).
    increment : int
        Count added after each symbol.

    Returns
    -------
    rows : float32 array (n, 256)
        The context's counts before each symbol (unnormalised probabilities).
    prev : int
        The last symbol, to continue with the next chunk.
    """
    n = symbols.shape[0]
    rows = np.empty((n, N_SYMBOLS), dtype=np.float32)
    for i in range(n):
        ctx = 256 if starts[i] else prev
        for k in range(N_SYMBOLS):
            rows[i, k] = counts[ctx, k]
        counts[ctx, symbols[i]] += increment
        prev = symbols[i]
    return rows, prev


def count_rows_reference(symbols, starts, counts, prev, increment):
    """Plain numpy version of :func:`count_rows` (tests compare the two)."""
    rows = np.empty((symbols.shape[0], N_SYMBOLS), dtype=np.float32)
    for i, s in enumerate(symbols.tolist()):
        ctx = 256 if starts[i] else prev
        rows[i] = counts[ctx]
        counts[ctx, s] += increment
        prev = s
    return rows, prev


@njit_cached()
def code_lengths(symbols, starts, init, increment):
    """Ideal code length (bits) of each symbol under the adaptive model."""
    n = symbols.shape[0]
    counts = np.full((N_CONTEXTS, N_SYMBOLS), init, dtype=np.int64)
    totals = np.full(N_CONTEXTS, init * N_SYMBOLS, dtype=np.int64)
    bits = np.empty(n, dtype=np.float64)
    prev = 256
    for i in range(n):
        ctx = 256 if starts[i] else prev
        s = symbols[i]
        bits[i] = -np.log2(counts[ctx, s] / totals[ctx])
        counts[ctx, s] += increment
        totals[ctx] += increment
        prev = s
    return bits


def code_lengths_reference(symbols, starts, init, increment):
    """Plain numpy version of :func:`code_lengths`."""
    counts = np.full((N_CONTEXTS, N_SYMBOLS), init, dtype=np.int64)
    bits = np.empty(symbols.shape[0])
    prev = 256
    for i, s in enumerate(symbols.tolist()):
        ctx = 256 if starts[i] else prev
        bits[i] = -np.log2(counts[ctx, s] / counts[ctx].sum())
        counts[ctx, s] += increment
        prev = s
    return bits
