"""SVDLoRACompressor: each adapter truncated on its own (the no-sharing baseline)."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval

from ._collection import check_collection, check_rank, relative_errors, squared_norms
from ._joint_compression import _CompressorMixin


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


class SVDLoRACompressor(_CompressorMixin, BaseEstimator):
    """Compress each LoRA adapter on its own by truncated SVD (baseline without sharing).

    Adapter ``Delta_i = B_i A_i`` is replaced by its best rank-``rank`` approximation
    ``U_i S_i V_i^T`` (Eckart-Young). Storage shrinks only by rank; nothing is shared
    across adapters, so a server still gathers one pair of factors per request.

    Like :class:`JointLoRACompressor`, this is not a ``fit(X)`` estimator: its verb is
    ``compress(collection)``.

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
    n_adapters_ : int
        Number of adapters.
    shapes_ : tuple of (int, int)
        ``(d_out, d_in)``.
    adapter_ranks_ : ndarray of shape (n_adapters,)
        Each adapter's own rank.
    n_parameters_ : int
        ``n rank (d_out + d_in)`` (singular values folded into the B factor).
    compression_ratio_ : float
        ``sum_i r_i (d_out + d_in) / n_parameters_``.

    See Also
    --------
    JointLoRACompressor : one shared basis for the whole collection.

    References
    ----------
    .. [1] R. Brüel Gabrielsson et al., "Compress then Serve: Serving Thousands of LoRA
       Adapters with Little Overhead", ICML 2025, arXiv:2407.00066.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.lora import SVDLoRACompressor
    >>> rng = np.random.default_rng(0)
    >>> B, A = rng.normal(size=(5, 20, 4)), rng.normal(size=(5, 4, 30))
    >>> svd = SVDLoRACompressor(rank=4).compress((B, A))
    >>> bool(svd.relative_errors_.max() < 1e-12)
    True
    >>> SVDLoRACompressor(rank=2).compress((B, A)).singular_values_.shape
    (5, 2)
    """

    _parameter_constraints = {"rank": [Interval(numbers.Integral, 1, None, closed="left")]}

    def __init__(self, *, rank=8):
        self.rank = rank

    def compress(self, collection):
        """Truncate every adapter of ``collection`` to ``rank``.

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            ``B_i`` (d_out, r_i) and ``A_i`` (r_i, d_in), scaling folded into ``B_i``.

        Returns
        -------
        self : object
            The compressed instance.
        """
        self._validate_params()
        B, A, ranks = check_collection(collection)
        rank = check_rank(self.rank, B.shape[1], A.shape[2])
        self.U_, self.singular_values_, self.V_ = truncated_svd_factors(B, A, rank)
        sq, norms2 = self._squared_errors(B, A)
        self.relative_errors_ = relative_errors(sq, norms2)
        self.n_adapters_ = int(B.shape[0])
        self.shapes_ = (int(B.shape[1]), int(A.shape[2]))
        self.adapter_ranks_ = ranks
        self.n_parameters_ = int(self.n_adapters_ * rank * sum(self.shapes_))
        self.compression_ratio_ = float(ranks.sum() * sum(self.shapes_) / self.n_parameters_)
        return self

    def _squared_errors(self, B, A):
        # Eckart-Young: the error is the energy of the dropped singular values
        _, s, _ = truncated_svd_factors(B, A, B.shape[2])
        return np.sum(s[:, self.rank :] ** 2, axis=1), squared_norms(B, A)

    def transform(self, collection):
        """Rank-``rank`` LoRA factors of each adapter (singular values folded into B).

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            Adapters of the fitted shape.

        Returns
        -------
        B_hat : ndarray of shape (n_adapters, d_out, rank)
        A_hat : ndarray of shape (n_adapters, rank, d_in)
        """
        B, A, _ = self._check_new_collection(collection)
        U, S, V = truncated_svd_factors(B, A, self.rank)
        return U * S[:, None, :], V.transpose(0, 2, 1)

    def reconstruct(self, collection):
        """The compressed version of each adapter, as ``(B_hat, A_hat)`` factors.

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            Adapters of the fitted shape.

        Returns
        -------
        factors : list of (ndarray (d_out, rank), ndarray (rank, d_in))
        """
        B_hat, A_hat = self.transform(collection)
        return list(zip(B_hat, A_hat))
