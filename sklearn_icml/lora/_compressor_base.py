"""What the LoRA compressors share: ``fit`` on a collection, shape checks, errors, score.

A compressor's input is a collection of LoRA factor pairs, not a table of samples by
features, so the compressors mix in :class:`~sklearn_icml.base.NonTabularInputMixin`.
``fit(collection)`` learns the compressed representation (a shared basis, or the
per-adapter truncations), ``transform(collection)`` gives the codes of (possibly new)
adapters and ``inverse_transform(codes)`` the LoRA factors they stand for.
"""

import abc

from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils.validation import check_is_fitted

from ..base import NonTabularInputMixin
from ._collection import check_collection, check_rank, relative_errors

#: the message of the NotFittedError raised before ``fit``
_NOT_FITTED = "This {name} instance is not fitted yet: call fit(collection) first."


class _BaseLoRACompressor(NonTabularInputMixin, BaseEstimator, metaclass=abc.ABCMeta):
    """Template of the compressors: the subclass writes ``_fit(B, A, ranks, rank)``.

    ``fit`` validates the parameters and the collection, checks ``rank`` against the
    adapters' shape and hands the zero-padded stacks to ``_fit``. The subclass also
    writes ``transform``, ``inverse_transform`` and ``_squared_errors(B, A)``.
    """

    _parameter_constraints: dict = {}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, collection, y=None):
        """Learn the compressed representation of ``collection``.

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            ``B_i`` (d_out, r_i) and ``A_i`` (r_i, d_in), numpy arrays or torch tensors with
            any LoRA scaling already folded into ``B_i``; or stacks ``B`` (n, d_out, r) and
            ``A`` (n, r, d_in). Factors are upcast to float64; they are never modified.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted compressor.
        """
        B, A, ranks = check_collection(collection)
        rank = check_rank(self.rank, B.shape[1], A.shape[2])
        self._fit(B, A, ranks, rank)
        return self

    @abc.abstractmethod
    def _fit(self, B, A, ranks, rank):
        """Learn the shared basis from the checked factors (``B``, ``A``, their ``ranks``)
        at the compressed ``rank``; set the fitted attributes."""

    def _set_sizes(self, B, A, ranks, n_parameters):
        """The size attributes every compressor reports."""
        self.n_adapters_ = int(B.shape[0])
        self.shapes_ = (int(B.shape[1]), int(A.shape[2]))
        self.adapter_ranks_ = ranks
        self.n_parameters_ = int(n_parameters)
        self.compression_ratio_ = float(ranks.sum() * sum(self.shapes_) / self.n_parameters_)

    def _check_new_collection(self, collection):
        check_is_fitted(self, msg=_NOT_FITTED.format(name=type(self).__name__))
        B, A, ranks = check_collection(collection)
        shape = (B.shape[1], A.shape[2])
        if shape != tuple(self.shapes_):
            raise ValueError(
                f"collection must hold adapters of shape (d_out, d_in) = {tuple(self.shapes_)} "
                f"as in fit. Got {shape} instead."
            )
        return B, A, ranks

    def reconstruction_error(self, collection, squared=False):
        """Per-adapter relative error ``||Delta_i - hat_i||_F / ||Delta_i||_F``.

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            Adapters of the fitted shape (the training collection or new ones).
        squared : bool, default=False
            Return the squared ratio ``||Delta_i - hat_i||^2 / ||Delta_i||^2`` instead.

        Returns
        -------
        errors : ndarray of shape (n_adapters,)
            An all-zero adapter has error 0.
        """
        B, A, _ = self._check_new_collection(collection)
        sq, norms2 = self._squared_errors(B, A)
        return relative_errors(sq, norms2, squared=squared)

    def score(self, collection, y=None):
        """Fraction of the collection's energy that the compression keeps (higher is better).

        ``1 - sum_i ||Delta_i - hat_i||^2 / sum_i ||Delta_i||^2``; 1.0 for an all-zero
        collection.

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            Adapters whose kept energy is measured, of the fitted shape.
        y : None
            Ignored.

        Returns
        -------
        score : float
        """
        B, A, _ = self._check_new_collection(collection)
        sq, norms2 = self._squared_errors(B, A)
        total = float(norms2.sum())
        return 1.0 if total <= 0 else float(1.0 - sq.sum() / total)

    def reconstruct(self, collection):
        """The compressed version of each adapter, as ``(B_hat, A_hat)`` factors.

        ``inverse_transform(transform(collection))``; for a clustered compressor, each
        core is expanded in the basis of the adapter's predicted cluster
        (``inverse_transform(transform(collection), predict(collection))``).

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            Adapters to compress and expand again (training or new ones).

        Returns
        -------
        factors : list of (ndarray (d_out, rank), ndarray (rank, d_in))
        """
        return self.inverse_transform(*self._codes(collection))

    def _codes(self, collection):
        """The arguments of ``inverse_transform`` that compress ``collection``."""
        return (self.transform(collection),)
