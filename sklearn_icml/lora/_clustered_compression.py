"""ClusteredJointLoRACompressor: k shared bases, adapters assigned Lloyd-style."""


import numpy as np
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..utils import check_random_state
from ..utils._param_validation import POSITIVE_INT
from ..utils._params import store_params
from ..utils._progress import Progress
from ._collection import (
    diag_normal_equations,
    full_cores,
    relative_errors,
    solve_sym,
    squared_errors,
    squared_norms,
)
from ._compressor_base import _NOT_FITTED, _BaseLoRACompressor
from ._joint_compression import (
    JOINT_FIT_CONSTRAINTS,
    JointLoRACompressor,
    joint_fit,
    optimal_cores,
)


def adapter_affinity(B, A, kind="subspace", chunk=16):
    """Normalised similarity between adapters, from r x r products only.

    ``kind="cosine"``: ``<Delta_i, Delta_j>_F / (||Delta_i|| ||Delta_j||)`` with
    ``<Delta_i, Delta_j>_F = trace((B_i^T B_j)(A_j A_i^T))``.
    ``kind="subspace"``: the mean of the cosines between the column-space operators
    ``Delta_i Delta_i^T`` and between the row-space operators ``Delta_i^T Delta_i``
    (``||Delta_i^T Delta_j||_F^2`` and ``||Delta_i Delta_j^T||_F^2``, normalised). It is high
    for adapters living in the same subspaces even when their cores are unrelated, where
    the plain cosine is near zero.

    Returns a symmetric (n, n) positive semi-definite matrix with unit diagonal (all-zero
    adapters get 0 off the diagonal).
    """
    n = B.shape[0]
    K = np.zeros((n, n))
    aa = np.matmul(A, A.transpose(0, 2, 1))  # A_j A_j^T
    bb = np.matmul(B.transpose(0, 2, 1), B)  # B_j^T B_j
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        Bi, Ai = B[start:stop], A[start:stop]
        gb = np.einsum("ipa,jpb->ijab", Bi, B)  # M = B_i^T B_j
        ga = np.einsum("iaq,jbq->ijab", Ai, A)  # N = A_i A_j^T
        if kind == "cosine":
            # trace((B_i^T B_j)(A_j A_i^T)) = sum_ab M_ab N_ab
            K[start:stop] = np.einsum("ijab,ijab->ij", gb, ga)
        else:
            # ||Delta_i^T Delta_j||^2 = trace(M^T (A_i A_i^T) M (A_j A_j^T)); the row-space
            # term likewise with N and the B Gram matrices. Both diagonals equal sum s^4,
            # so one normalisation of the sum averages the two cosines.
            col = np.einsum("ijab,iac,ijcd,jdb->ij", gb, aa[start:stop], gb, aa, optimize=True)
            row = np.einsum("ijab,iac,ijcd,jdb->ij", ga, bb[start:stop], ga, bb, optimize=True)
            K[start:stop] = col + row
    diag = np.sqrt(np.abs(np.diag(K)))
    outer = np.outer(diag, diag)
    K = np.divide(K, outer, out=np.zeros_like(K), where=outer > 0)
    K = 0.5 * (K + K.T)
    np.fill_diagonal(K, 1.0)
    return K


def kernel_kmeans(K, n_clusters, rng, n_iter=20):
    """Kernel k-means with k-means++ seeding on a unit-diagonal kernel; returns labels."""
    n = K.shape[0]
    dist = np.maximum(2.0 - 2.0 * K, 0.0)  # squared feature-space distance, K_ii = 1
    centers = [int(rng.randint(n))]
    closest = dist[centers[0]].copy()
    for _ in range(1, n_clusters):
        total = closest.sum()
        if total <= 0:
            candidates = np.setdiff1d(np.arange(n), centers)
            centers.append(int(rng.choice(candidates)))
        else:
            centers.append(int(rng.choice(n, p=closest / total)))
        closest = np.minimum(closest, dist[centers[-1]])
    labels = np.argmin(dist[:, centers], axis=1)
    labels[centers] = np.arange(n_clusters)
    for _ in range(n_iter):
        d = np.empty((n, n_clusters))
        for c in range(n_clusters):
            members = labels == c
            m = members.sum()
            if m == 0:
                d[:, c] = np.inf
                continue
            d[:, c] = (
                1.0 - 2.0 * K[:, members].sum(axis=1) / m
                + K[np.ix_(members, members)].sum() / m**2
            )
        new = np.argmin(d, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
    return _fill_empty(labels, n_clusters, np.zeros(n))


def _fill_empty(labels, n_clusters, badness):
    """Give every empty cluster the worst adapter among clusters with more than one member."""
    labels = labels.copy()
    for c in range(n_clusters):
        if np.any(labels == c):
            continue
        counts = np.bincount(labels, minlength=n_clusters)
        movable = counts[labels] > 1
        order = np.argsort(-np.where(movable, badness, -np.inf), kind="stable")
        labels[order[0]] = c
    return labels


def _captured(B, A, U, V, core):
    """Energy each adapter keeps under the basis (U, V) with its best core."""
    if core == "full":
        return np.sum(full_cores(B, A, U, V) ** 2, axis=(1, 2))
    gram, rhs = diag_normal_equations(B, A, U, V)
    S = solve_sym(gram, rhs.T).T
    return 2.0 * np.sum(S * rhs, axis=1) - np.einsum("na,ab,nb->n", S, gram, S)


def _stack_cores(labels, fits):
    """Per-adapter cores (n, ...) from the per-cluster fits (each on its members)."""
    cores = np.zeros((labels.shape[0], *fits[0]["cores"].shape[1:]))
    for c, f in enumerate(fits):
        cores[labels == c] = f["cores"]
    return cores


def _squared_errors_by_cluster(B, A, labels, U, V, cores):
    """``||Delta_i - U_c Sigma_i V_c^T||_F^2`` of every adapter in its cluster's basis."""
    sq = np.zeros(B.shape[0])
    for c in np.unique(labels):
        members = labels == c
        sq[members] = squared_errors(B[members], A[members], U[c], V[c], cores[members])
    return sq


class ClusteredJointLoRACompressor(_BaseLoRACompressor):
    """Compress a diverse LoRA collection with k shared bases, one per cluster of adapters.

    Adapters are grouped into ``n_clusters`` clusters and each cluster gets its own
    :class:`JointLoRACompressor` basis ``(U_c, V_c)`` of rank ``rank``. Clusters are learned
    Lloyd-style: fit a joint basis per cluster (warm-started from the previous one), move
    every adapter to the basis that keeps the largest fraction of its energy, and repeat
    until no adapter moves; the best of ``n_init`` starts (lowest ``inertia_``) is kept.

    Parameters
    ----------
    n_clusters : int, default=4
        Number of shared bases k (at most the number of adapters).
    rank : int, default=32
        Rank of every basis.
    core : {"full", "diag"}, default="full"
        Core type, as in :class:`JointLoRACompressor`.
    max_iter : int, default=50
        Sweeps of each per-cluster joint fit.
    max_cluster_iter : int, default=20
        Maximum Lloyd iterations (fit bases, reassign).
    n_init : int, default=3
        Number of starts; the one with the lowest ``inertia_`` is kept.
    init : {"kmeans++", "random"} or array-like of shape (n_adapters,), default="kmeans++"
        Initial assignment: kernel k-means with k-means++ seeding on :func:`adapter
        affinity <adapter_affinity>`, a random assignment, or given labels (then one start).
    affinity : {"subspace", "cosine"}, default="subspace"
        Similarity used by ``init="kmeans++"``. ``"cosine"`` is the Frobenius cosine
        between adapters; ``"subspace"`` compares their column and row spaces (adapters
        sharing a basis but with unrelated cores have cosine near 0, subspace near 1).
    tol : float, default=1e-7
        Tolerance of each joint fit.
    normalize : bool, default=False
        Fit each basis on normalised adapters (see :class:`JointLoRACompressor`).
    svd_solver : {"auto", "full", "randomized"}, default="auto"
        Solver of each joint fit.
    random_state : int, RandomState instance or None, default=None
        Seed of the initial assignments and the joint fits.
    verbose : int, default=0
        Print the inertia after every Lloyd iteration.

    Attributes
    ----------
    labels_ : ndarray of shape (n_adapters,)
        Cluster of each adapter.
    U_ : ndarray of shape (n_clusters, d_out, rank)
        Output basis of each cluster.
    V_ : ndarray of shape (n_clusters, d_in, rank)
        Input basis of each cluster.
    cores_ : ndarray of shape (n_adapters, rank, rank) or (n_adapters, rank)
        Each adapter's core in its cluster's basis.
    compressors_ : list of JointLoRACompressor
        The fitted compressor of each cluster (on that cluster's adapters, in order).
    inertia_ : float
        Total squared reconstruction error ``sum_i ||Delta_i - hat_i||_F^2``.
    n_iter_ : int
        Lloyd iterations of the kept start.
    relative_errors_ : ndarray of shape (n_adapters,)
        Per-adapter relative error (unsquared; 0 for an all-zero adapter).
    n_adapters_ : int
        Number of adapters.
    shapes_ : tuple of (int, int)
        ``(d_out, d_in)``.
    adapter_ranks_ : ndarray of shape (n_adapters,)
        Each adapter's own rank.
    n_parameters_ : int
        ``k rank (d_out + d_in) + n rank^2`` (full) or ``+ n rank`` (diag), plus n labels.
    compression_ratio_ : float
        ``sum_i r_i (d_out + d_in) / n_parameters_``.

    See Also
    --------
    JointLoRACompressor : one basis for the whole collection.

    Notes
    -----
    The paper [1]_ learns clusters of adapters for joint compression but does not fix the
    procedure; the library's choice (an affinity of the adapters' subspaces, a k-means++
    start, reassignment to the basis that keeps the most energy) makes every Lloyd step
    lower the total error.

    References
    ----------
    .. [1] R. Brüel Gabrielsson et al., "Compress then Serve: Serving Thousands of LoRA
       Adapters with Little Overhead", ICML 2025, arXiv:2407.00066.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_lora_collection
    >>> from sklearn_icml.lora import ClusteredJointLoRACompressor
    >>> B, A, groups = make_lora_collection(
    ...     20, d_out=32, d_in=32, adapter_rank=4, basis_rank=6, n_groups=2,
    ...     return_groups=True, random_state=0)
    >>> comp = ClusteredJointLoRACompressor(n_clusters=2, rank=6, random_state=0)
    >>> comp = comp.fit((B, A))
    >>> from sklearn.metrics import adjusted_rand_score
    >>> float(adjusted_rand_score(groups, comp.labels_))
    1.0
    >>> bool(comp.relative_errors_.max() < 1e-6)
    True
    """

    _parameter_constraints = {
        **JOINT_FIT_CONSTRAINTS,
        "n_clusters": [POSITIVE_INT],
        "max_cluster_iter": [POSITIVE_INT],
        "n_init": [POSITIVE_INT],
        "init": [StrOptions({"kmeans++", "random"}), "array-like"],
        "affinity": [StrOptions({"subspace", "cosine"})],
    }

    def __init__(self, *, n_clusters=4, rank=32, core="full", max_iter=50, max_cluster_iter=20,
                 n_init=3, init="kmeans++", affinity="subspace", tol=1e-7, normalize=False,
                 svd_solver="auto", random_state=None, verbose=0):
        store_params(self, locals())

    def _joint(self, B, A, rank, rng, V_init=None):
        return joint_fit(
            B, A, rank=rank, core=self.core, init="svd", max_iter=self.max_iter, tol=self.tol,
            normalize=self.normalize, svd_solver=self.svd_solver, rng=rng, V_init=V_init,
        )

    def _initial_labels(self, B, A, n_clusters, rng, kernel):
        n = B.shape[0]
        if isinstance(self.init, str) and self.init == "random":
            labels = rng.randint(n_clusters, size=n)
            labels[rng.permutation(n)[:n_clusters]] = np.arange(n_clusters)
            return labels
        return kernel_kmeans(kernel, n_clusters, rng)

    def _lloyd(self, B, A, labels, rank, rng, norms2, progress, label=""):
        k = self.n_clusters
        fits = [None] * k
        n_iter = 0
        for n_iter in range(1, self.max_cluster_iter + 1):  # noqa: B007
            for c in range(k):
                members = labels == c
                warm = None if fits[c] is None else fits[c]["V"]
                fits[c] = self._joint(B[members], A[members], rank, rng, V_init=warm)
            captured = np.stack(
                [_captured(B, A, f["U"], f["V"], self.core) for f in fits], axis=1
            )
            errors = np.maximum(norms2[:, None] - captured, 0.0)
            new = np.argmin(errors, axis=1)
            # on a tie (an all-zero adapter, say) an adapter stays where it was
            rows = np.arange(len(new))
            stay = errors[rows, labels] <= errors[rows, new]
            new[stay] = labels[stay]
            badness = relative_errors(errors[np.arange(len(new)), new], norms2, squared=True)
            new = _fill_empty(new, k, badness)
            progress.log(
                f"{label}Lloyd iteration {n_iter}",
                inertia=float(errors[np.arange(len(new)), labels].sum()),
                adapters_moved=int(np.sum(new != labels)),
            )
            if np.array_equal(new, labels):
                return labels, fits, n_iter
            labels = new
        # out of iterations: refit on the final assignment so the bases match the labels
        for c in range(k):
            members = labels == c
            fits[c] = self._joint(B[members], A[members], rank, rng, V_init=fits[c]["V"])
        return labels, fits, n_iter

    def _fit(self, B, A, ranks, rank):
        n = B.shape[0]
        if self.n_clusters > n:
            raise ValueError(
                f"n_clusters must be <= the number of adapters ({n}). Got "
                f"{self.n_clusters!r} instead."
            )
        rng = check_random_state(self.random_state)
        norms2 = squared_norms(B, A)
        if isinstance(self.init, str):
            kernel = (
                adapter_affinity(B, A, self.affinity) if self.init == "kmeans++" else None
            )
            starts = [
                self._initial_labels(B, A, self.n_clusters, rng, kernel)
                for _ in range(self.n_init)
            ]
        else:
            labels = np.asarray(self.init)
            if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer) or (
                labels.min() < 0 or labels.max() >= self.n_clusters
            ):
                raise ValueError(
                    f"init given as labels must be {n} integers in [0, {self.n_clusters}). "
                    f"Got {self.init!r} instead."
                )
            starts = [_fill_empty(labels.astype(np.int64), self.n_clusters, np.zeros(n))]
        best = None
        progress = Progress(type(self).__name__, self.verbose)
        for i, start in enumerate(starts, 1):
            label = f"start {i}/{len(starts)}, " if len(starts) > 1 else ""
            labels, fits, n_iter = self._lloyd(B, A, start, rank, rng, norms2, progress, label)
            inertia = self._inertia(B, A, labels, fits)
            if best is None or inertia < best[0]:
                best = (inertia, labels, fits, n_iter)
        self.inertia_, self.labels_, fits, self.n_iter_ = best
        self._set_compressed(B, A, ranks, fits, rank)

    def _inertia(self, B, A, labels, fits):
        cores = _stack_cores(labels, fits)
        sq = _squared_errors_by_cluster(B, A, labels, [f["U"] for f in fits],
                                        [f["V"] for f in fits], cores)
        return sum(float(sq[labels == c].sum()) for c in range(len(fits)))

    def _set_compressed(self, B, A, ranks, fits, rank):
        self.compressors_ = []
        for c, f in enumerate(fits):
            members = self.labels_ == c
            comp = JointLoRACompressor(
                rank=rank, core=self.core, init="svd", max_iter=self.max_iter, tol=self.tol,
                normalize=self.normalize, svd_solver=self.svd_solver,
                random_state=self.random_state,
            )
            comp._set_compressed(f, B[members], A[members], ranks[members])
            self.compressors_.append(comp)
        self.cores_ = _stack_cores(self.labels_, fits)
        self.U_ = np.stack([f["U"] for f in fits])
        self.V_ = np.stack([f["V"] for f in fits])
        sq = _squared_errors_by_cluster(B, A, self.labels_, self.U_, self.V_, self.cores_)
        self.relative_errors_ = relative_errors(sq, squared_norms(B, A))
        per_core = rank * rank if self.core == "full" else rank
        n_parameters = (
            self.n_clusters * rank * (B.shape[1] + A.shape[2]) + B.shape[0] * (per_core + 1)
        )
        self._set_sizes(B, A, ranks, n_parameters)

    def _assign(self, B, A):
        norms2 = squared_norms(B, A)
        captured = np.stack(
            [_captured(B, A, self.U_[c], self.V_[c], self.core) for c in range(len(self.U_))],
            axis=1,
        )
        return np.argmin(np.maximum(norms2[:, None] - captured, 0.0), axis=1)

    def predict(self, collection):
        """Cluster whose basis keeps the largest fraction of each adapter's energy.

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            Adapters to assign to a basis, of the fitted shape.

        Returns
        -------
        labels : ndarray of shape (n_adapters,)
        """
        B, A, _ = self._check_new_collection(collection)
        return self._assign(B, A)

    def transform(self, collection):
        """Cores of (new) adapters, each in the basis of its predicted cluster.

        Parameters
        ----------
        collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
            Adapters to project, each on the basis of its predicted cluster.

        Returns
        -------
        cores : ndarray of shape (n_adapters, rank, rank) or (n_adapters, rank)
            Use with :meth:`predict`'s labels to pick the basis.
        """
        return self._codes(collection)[0]

    def _codes(self, collection):
        # the cores and the cluster of each adapter: what inverse_transform takes
        B, A, _ = self._check_new_collection(collection)
        labels = self._assign(B, A)
        return self._cores_for(B, A, labels), labels

    def _cores_for(self, B, A, labels):
        r = self.U_.shape[2]
        cores = np.zeros((B.shape[0], *((r, r) if self.core == "full" else (r,))))
        for c in np.unique(labels):
            members = labels == c
            cores[members] = optimal_cores(
                B[members], A[members], self.U_[c], self.V_[c], self.core
            )
        return cores

    def _squared_errors(self, B, A):
        labels = self._assign(B, A)
        cores = self._cores_for(B, A, labels)
        sq = _squared_errors_by_cluster(B, A, labels, self.U_, self.V_, cores)
        return sq, squared_norms(B, A)

    def inverse_transform(self, cores, labels):
        """Rank-``rank`` LoRA factors ``(U_c Sigma_i, V_c^T)`` of each core in its basis.

        Parameters
        ----------
        cores : array-like of shape (n, rank, rank) or (n, rank)
            Cores as returned by :meth:`transform`.
        labels : array-like of int of shape (n,)
            The cluster (basis) of each core, as returned by :meth:`predict`.

        Returns
        -------
        factors : list of (ndarray (d_out, rank), ndarray (rank, d_in))
        """
        check_is_fitted(self, msg=_NOT_FITTED.format(name=type(self).__name__))
        labels = np.asarray(labels)
        out = []
        for c, core in zip(labels, np.asarray(cores, dtype=np.float64)):
            U, V = self.U_[c], self.V_[c]
            out.append((U @ core if core.ndim == 2 else U * core, V.T.copy()))
        return out

