"""LoRA collections: input validation and the factored linear algebra shared by the compressors.

A collection of n LoRA adapters for one weight matrix (d_out x d_in) is held as two zero-padded
stacks ``B`` (n, d_out, r_max) and ``A`` (n, r_max, d_in), so that ``Delta_i = B[i] @ A[i]``.
Pairs are given in the order ``(B, A)``, as peft's ``lora_B`` (d_out x r) and ``lora_A``
(r x d_in); ``check_collection`` refuses a pair whose shapes say it is ``(A, B)``, or whose
shapes fit both orders equally (square r x r factors of a d x d layer with r = d).
Padding a rank-r_i adapter with zero columns of B and zero rows of A leaves ``Delta_i`` as it
is. Nothing here ever forms a d_out x d_in matrix.
"""

import numbers

import numpy as np
import scipy.linalg
from sklearn.utils.extmath import randomized_svd

from ..utils import check_generator
from ..utils.validation import check_input_array


def _to_numpy(x):
    """A torch tensor (any float dtype, any device) or array-like, as check_input_array takes."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # torch tensor, without importing torch
        if x.is_complex():
            raise ValueError(
                "LoRA factors must be real. Got a complex tensor of dtype "
                f"{x.dtype} instead."
            )
        return x.detach().cpu().double().numpy()
    return x


def _check_factor(x, name, ndim):
    x = _to_numpy(x)
    dtype = getattr(x, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"{name} must be real. Got complex dtype {dtype} instead.")
    arr = check_input_array(
        x,
        dtype=np.float64,
        ensure_2d=(ndim == 2),
        allow_nd=(ndim == 3),
        ensure_all_finite=True,
        input_name=name,
    )
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D. Got shape {arr.shape} instead.")
    return arr


def _is_stack_pair(collection):
    return (
        isinstance(collection, tuple | list)
        and len(collection) == 2
        and all(
            not isinstance(item, tuple | list) and getattr(item, "ndim", None) == 3
            for item in collection
        )
    )


_CONVENTION = (
    "the convention is (B, A) with B of shape (d_out, r) and A of shape (r, d_in), so that "
    "Delta = B @ A (peft's lora_B.weight and lora_A.weight, in that order)"
)


def _check_factor_order(B, A, where, kind):
    """Refuse a pair whose shapes say ``(A, B)``, or fit both orders equally.

    With ``B`` (..., p, q) and ``A`` (..., s, t), the order (B, A) needs ``q == s`` and
    (A, B) needs ``t == p``. When both hold, the shapes are (x, y) and (y, x): read as
    (B, A) the rank is y and the layer x by x; read as (A, B) the rank is x and the layer
    y by y. A LoRA rank is below the layer's size, so y < x is (B, A), y > x is (A, B), and
    y == x (square r x r factors of a d x d layer with r = d) cannot be told apart.
    """
    p, q = B.shape[-2:]
    s, t = A.shape[-2:]
    fits_ba, fits_ab = q == s, t == p
    seen = f"Got a first {kind} of shape {B.shape} and a second of shape {A.shape}"
    if fits_ba and (not fits_ab or q < p):
        return
    if fits_ba and q == p:
        raise ValueError(
            f"{where}: the factors are square ({p} x {p}), so their shapes fit both the "
            f"(B, A) and the (A, B) order and B @ A cannot be told from A @ B; "
            f"{_CONVENTION}. A rank-{p} adapter of a {p} x {p} layer is not low-rank: give "
            f"its factors a rank r < {p} (e.g. the truncated SVD of B @ A). {seen} instead."
        )
    if fits_ab:
        raise ValueError(
            f"{where} looks like an (A, B) pair: its first {kind} reads as (r, d_in) and "
            f"its second as (d_out, r), with r = {p}; {_CONVENTION}. Swap the two. {seen} "
            "instead."
        )
    raise ValueError(
        f"{where}: the inner ranks r of B and A must match; {_CONVENTION}. {seen} instead."
    )


def check_collection(collection, name="collection"):
    """Validate a LoRA collection and return zero-padded float64 stacks.

    Parameters
    ----------
    collection : list of (B, A) pairs, or pair (B, A) of 3-D arrays
        ``B_i`` of shape (d_out, r_i) and ``A_i`` of shape (r_i, d_in) (numpy arrays, array
        likes or torch tensors), or two stacks ``B`` (n, d_out, r) and ``A`` (n, r, d_in):
        B first, as peft's ``lora_B``, then A (``lora_A``). A pair whose shapes say it is
        ``(A, B)`` raises a ValueError, and so does one whose shapes fit both orders
        (square r x r factors of an r x r layer).
    name : str
        Name used in error messages.

    Returns
    -------
    B : ndarray of shape (n, d_out, r_max)
    A : ndarray of shape (n, r_max, d_in)
    ranks : ndarray of shape (n,)
        Each adapter's own rank r_i (before padding).
    """
    if _is_stack_pair(collection):
        if collection[0].shape[0] == 0 or collection[1].shape[0] == 0:
            raise ValueError(
                f"{name} is empty; give at least one (B, A) adapter. Got stacks of shapes "
                f"{collection[0].shape} and {collection[1].shape} instead."
            )
        B = _check_factor(collection[0], f"{name} B stack", 3)
        A = _check_factor(collection[1], f"{name} A stack", 3)
        if B.shape[0] != A.shape[0]:
            raise ValueError(
                f"{name}: the B stack holds {B.shape[0]} adapters and the A stack "
                f"{A.shape[0]}; they must hold the same number. Got shapes {B.shape} and "
                f"{A.shape} instead."
            )
        _check_factor_order(B, A, name, "stack")
        return B, A, np.full(B.shape[0], B.shape[2], dtype=np.int64)

    if isinstance(collection, dict) or not isinstance(collection, list | tuple):
        raise TypeError(
            f"{name} must be a list of (B, A) pairs or a pair of 3-D arrays (B, A). Got "
            f"{type(collection).__name__} instead."
        )
    if len(collection) == 0:
        raise ValueError(
            f"{name} is empty; give at least one (B, A) adapter. Got {collection!r} instead."
        )
    Bs, As = [], []
    for i, pair in enumerate(collection):
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise TypeError(
                f"{name}[{i}] must be a (B, A) pair. Got {type(pair).__name__} instead."
            )
        B = _check_factor(pair[0], f"B of adapter {i}", 2)
        A = _check_factor(pair[1], f"A of adapter {i}", 2)
        _check_factor_order(B, A, f"{name}[{i}]", "factor")
        if Bs and (B.shape[0], A.shape[1]) != (Bs[0].shape[0], As[0].shape[1]):
            raise ValueError(
                f"every adapter of {name} must change a matrix of the same shape (d_out, "
                f"d_in) = {(Bs[0].shape[0], As[0].shape[1])}; adapter {i} has "
                f"{(B.shape[0], A.shape[1])} instead."
            )
        Bs.append(B)
        As.append(A)
    ranks = np.array([b.shape[1] for b in Bs], dtype=np.int64)
    r_max = int(ranks.max())
    n, d_out, d_in = len(Bs), Bs[0].shape[0], As[0].shape[1]
    B_stack = np.zeros((n, d_out, r_max))
    A_stack = np.zeros((n, r_max, d_in))
    for i, (b, a) in enumerate(zip(Bs, As)):
        B_stack[i, :, : b.shape[1]] = b
        A_stack[i, : a.shape[0], :] = a
    return B_stack, A_stack, ranks


def check_rank(rank, d_out, d_in, name="rank"):
    """Raise ValueError unless 1 <= rank <= min(d_out, d_in)."""
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral):
        raise TypeError(f"{name} must be an integer. Got {rank!r} instead.")
    if not 1 <= rank <= min(d_out, d_in):
        raise ValueError(
            f"{name} must be in [1, min(d_out, d_in)] = [1, {min(d_out, d_in)}] for adapters "
            f"of shape (d_out, d_in) = ({d_out}, {d_in}). Got {rank!r} instead."
        )
    return int(rank)


def squared_norms(B, A):
    """``||B_i A_i||_F^2`` for every adapter, from r x r products only."""
    gram_b = np.matmul(B.transpose(0, 2, 1), B)
    gram_a = np.matmul(A, A.transpose(0, 2, 1))
    return np.maximum(np.einsum("nab,nba->n", gram_b, gram_a), 0.0)


def _gram_root(P):
    """A stack ``L`` with ``L_i L_i^T = P_i P_i^T`` and as few columns as possible.

    ``P`` has shape (n, k, m); ``L`` has shape (n, k, min(k, m)).
    """
    n, k, m = P.shape
    if m <= k:
        return P
    # P_i P_i^T = R_i^T Q_i^T Q_i R_i = R_i^T R_i with the QR of P_i^T (m x k)
    R = np.linalg.qr(P.transpose(0, 2, 1), mode="r")  # (n, k, k)
    return R.transpose(0, 2, 1)


def top_left_basis(F, P, rank, *, svd_solver="auto", random_state=None):
    """Top-``rank`` left singular vectors of ``M = [F_1 P_1, ..., F_n P_n]``.

    ``F`` (n, d, k) and ``P`` (n, k, m). ``M`` is never formed with more than
    ``min(k, m)`` columns per adapter (``F_i P_i`` is replaced by ``F_i L_i`` with
    ``L_i L_i^T = P_i P_i^T``, which has the same left singular vectors and values).

    Returns
    -------
    basis : ndarray of shape (d, rank)
        Orthonormal columns; completed with random orthonormal directions (which capture
        nothing) when ``M`` has fewer than ``rank`` columns.
    """
    n, d, _ = F.shape
    blocks = np.matmul(F, _gram_root(P))  # (n, d, w)
    w = blocks.shape[2]
    M = blocks.transpose(1, 0, 2).reshape(d, n * w)
    width = M.shape[1]
    solver = svd_solver
    if solver == "auto":
        solver = "full" if min(d, width) <= 2048 or rank >= min(d, width) // 4 else "randomized"
    if solver == "randomized" and rank < min(d, width):
        basis, _, _ = randomized_svd(
            M,
            rank,
            n_oversamples=max(10, 2 * rank),
            n_iter=7,
            random_state=random_state,
        )
    elif width <= d:
        basis = scipy.linalg.svd(M, full_matrices=False, lapack_driver="gesdd")[0][:, :rank]
    else:
        gram = M @ M.T
        _, vecs = scipy.linalg.eigh(gram, subset_by_index=[d - rank, d - 1])
        basis = np.ascontiguousarray(vecs[:, ::-1])
    if basis.shape[1] < rank:
        basis = _complete_basis(basis, rank, random_state)
    return basis


def _complete_basis(basis, rank, random_state):
    """Append orthonormal columns (orthogonal to ``basis``) up to ``rank`` columns."""
    rng = check_generator(random_state)
    d = basis.shape[0]
    extra = rng.standard_normal((d, rank - basis.shape[1]))
    extra -= basis @ (basis.T @ extra)
    extra -= basis @ (basis.T @ extra)  # twice is enough for orthogonality
    q, _ = np.linalg.qr(extra)
    return np.hstack([basis, q])


def random_orthonormal(d, rank, rng):
    """A random d x rank matrix with orthonormal columns, drawn from ``rng`` (RandomState)."""
    q, r = np.linalg.qr(rng.standard_normal((d, rank)))
    return q * np.sign(np.diag(r))


def full_cores(B, A, U, V):
    """Projection cores ``U^T B_i A_i V`` of shape (n, r, r)."""
    return np.matmul(np.matmul(U.T, B), np.matmul(A, V))


def diag_normal_equations(B, A, U, V):
    """``(U^T U) * (V^T V)`` and ``diag(U^T B_i A_i V)`` for the diagonal-core solve."""
    gram = (U.T @ U) * (V.T @ V)
    rhs = np.einsum("nka,nka->na", np.matmul(B.transpose(0, 2, 1), U), np.matmul(A, V))
    return gram, rhs


def solve_sym(M, rhs, ridge=1e-10):
    """Solve ``M x = rhs`` for symmetric PSD ``M`` with a tiny relative ridge.

    ``rhs`` has shape (r,) or (r, m). A ridge of ``ridge * trace(M) / r`` is added to the
    diagonal; a singular system falls back to the least-squares (minimum-norm) solution.
    """
    r = M.shape[0]
    scale = np.trace(M) / r
    Mr = M + (ridge * scale) * np.eye(r) if scale > 0 else M
    try:
        return scipy.linalg.solve(Mr, rhs, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return scipy.linalg.lstsq(Mr, rhs)[0]
    except ValueError:
        return scipy.linalg.lstsq(Mr, rhs)[0]


def squared_errors(B, A, U, V, cores):
    """``||B_i A_i - U Sigma_i V^T||_F^2`` for every adapter, from small products.

    ``cores`` has shape (n, r, r) (full) or (n, r) (diagonal). The residual is the product
    ``X_i Y_i`` with ``X_i = [B_i, -U Sigma_i]`` and ``Y_i = [A_i; V^T]``; its norm is that of
    ``Rx_i Ry_i^T`` (R factors of the QRs of ``X_i`` and ``Y_i^T``), which keeps tiny errors
    accurate instead of subtracting two large numbers.
    """
    n = B.shape[0]
    core_b = U * cores[:, None, :] if cores.ndim == 2 else np.matmul(U, cores)
    X = np.concatenate([B, -core_b], axis=2)
    Yt = np.concatenate([A.transpose(0, 2, 1), np.broadcast_to(V, (n, *V.shape))], axis=2)
    rx = np.linalg.qr(X, mode="r")
    ry = np.linalg.qr(Yt, mode="r")
    return np.sum(np.matmul(rx, ry.transpose(0, 2, 1)) ** 2, axis=(1, 2))


def relative_errors(sq_err, norms2, squared=False):
    """Per-adapter relative error; an all-zero adapter has relative error 0 (never NaN)."""
    rel = np.divide(sq_err, norms2, out=np.zeros_like(sq_err), where=norms2 > 0)
    return rel if squared else np.sqrt(rel)
