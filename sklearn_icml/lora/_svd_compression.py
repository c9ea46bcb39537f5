"""SVDLoRACompressor: each adapter truncated on its own (the no-sharing baseline)."""


import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..utils._param_validation import POSITIVE_INT
from ..utils._params import store_params
from ._collection import relative_errors, squared_norms
from ._compressor_base import _NOT_FITTED, _BaseLoRACompressor


def truncated_svd_factors(B, A, rank):
    """Per-adapter truncated SVD through QR of the factors (no d_out x d_in matrix).

    Returns ``U`` (n, d_out, rank), ``s`` (n, rank), ``V`` (n, d_in, rank), zero-padded
    when an adapter has fewer than ``rank`` directions.
    """
    n, d_out, _ = B.shape
    d_in = A.shape[2]
    qb, rb = np.linalg.qr(B)  # (n, d_out, kb), (n, kb, r)
    qa, ra = np.linalg.qr(A.transpose(0, 2, 1))  # (n, d_in, ka), (n, ka, r)
    small = np.matmul(rb, ra.transpose(0, 2, 1))  # (n, kb, ka)
    u, s, vt = np.linalg.svd(small, full_matrices=False)
    k = min(rank, s.shape[1])
    U = np.zeros((n, d_out, rank))
    V = np.zeros((n, d_in, rank))
    S = np.zeros((n, rank))
    U[:, :, :k] = np.matmul(qb, u[:, :, :k])
    V[:, :, :k] = np.matmul(qa, vt[:, :k, :].transpose(0, 2, 1))
    S[:, :k] = s[:, :k]
    return U, S, V


class SVDLoRACompressor(_BaseLoRACompressor):
    """Compress each LoRA adapter on its own by truncated SVD (baseline without sharing).

    Adapter ``Delta_i = B_i A_i`` is replaced by its best rank-``rank`` approximation
    ``U_i S_i V_i^T`` (Eckart-Young). Storage shrinks only by rank; nothing is shared
    across adapters, so a server still gathers one pair of factors per request.

    Like :class:`JointLoRACompressor`, it takes a collection of factor pairs:
    ``fit(collection)`` truncates the adapters, ``transform(collection)`` gives the
    truncated factors of (new) adapters and ``inverse_transform`` lists them as pairs.

    Parameters
    ----------
    rank : int, default=8
        Rank r' kept per adapter (1 <= r' <= min(d_out, d_in)).

    Attributes
    ----------
    U_ : ndarray of shape (n_adapters, d_out, rank)
        Left singular vectors of each adapter (zero columns past the adapter's own rank).
    singular_values_ : ndarray of shape (n_adapters, rank)
        Singular values kept, decreasing.
    V_ : ndarray of shape (n_adapters, d_in, rank)
        Right singular vectors.
    relative_errors_ : ndarray of shape (n_adapters,)
        ``||Delta_i - hat_i||_F / ||Delta_i||_F`` (0 for an all-zero adapter).
    n_adapters_, shapes_, adapter_ranks_ : int, (int, int), ndarray of shape (n_adapters,)
        Number of adapters, ``(d_out, d_in)`` and each adapter's own rank.
    n_parameters_ : int
        ``n rank (d_out + d_in)`` (singular values folded into the B factor).
    compression_ratio_ : float
        ``sum_i r_i (d_out + d_in) / n_parameters_``.

    See Also
    --------
    JointLoRACompressor : one shared basis for the whole collection.

    Notes
    -----
    The per-adapter baseline of Brüel Gabrielsson et al. (ICML 2025, "Compress then
    Serve", arXiv:2407.00066), against which joint compression is measured.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.lora import SVDLoRACompressor
    >>> rng = np.random.default_rng(0)
    >>> B, A = rng.normal(size=(5, 20, 4)), rng.normal(size=(5, 4, 30))
    >>> svd = SVDLoRACompressor(rank=4).fit((B, A))
    >>> bool(svd.relative_errors_.max() < 1e-12)
    True
    >>> SVDLoRACompressor(rank=2).fit((B, A)).singular_values_.shape
    (5, 2)
    """

    _parameter_constraints = {"rank": [POSITIVE_INT]}

    def __init__(self, *, rank=8):
        store_params(self, locals())

    def _fit(self, B, A, ranks, rank):
        self.U_, self.singular_values_, self.V_ = truncated_svd_factors(B, A, rank)
        sq, norms2 = self._squared_errors(B, A)
        self.relative_errors_ = relative_errors(sq, norms2)
        self._set_sizes(B, A, ranks, B.shape[0] * rank * (B.shape[1] + A.shape[2]))

    def _squared_errors(self, B, A):
        # Eckart-Young: the error is the energy of the dropped singular values
        _, s, _ = truncated_svd_factors(B, A, B.shape[2])
        return np.sum(s[:, self.rank :] ** 2, axis=1), squared_norms(B, A)

    def transform(self, collection):
        """Rank-``rank`` LoRA factors of each adapter (singular values folded into B).

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            Adapters to truncate to ``rank``, of the fitted shape.

        Returns
        -------
        B_hat : ndarray of shape (n_adapters, d_out, rank)
        A_hat : ndarray of shape (n_adapters, rank, d_in)
        """
        B, A, _ = self._check_new_collection(collection)
        U, S, V = truncated_svd_factors(B, A, self.rank)
        return U * S[:, None, :], V.transpose(0, 2, 1)

    def inverse_transform(self, codes):
        """LoRA factor pairs from the stacks :meth:`transform` returns.

        Parameters
        ----------
        codes : tuple of (ndarray (n, d_out, rank), ndarray (n, rank, d_in))
            ``(B_hat, A_hat)`` as returned by :meth:`transform`.

        Returns
        -------
        factors : list of (ndarray (d_out, rank), ndarray (rank, d_in))
        """
        check_is_fitted(self, msg=_NOT_FITTED.format(name=type(self).__name__))
        B_hat, A_hat = codes
        return list(zip(B_hat, A_hat))
