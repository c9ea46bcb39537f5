"""Synthetic LoRA collections with planted shared subspaces, for joint LoRA compression."""


import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils import check_random_state
from ..utils._param_validation import ANY_REAL, NON_NEGATIVE_INT, POSITIVE_INT


def _orthonormal(rng, d, k):
    q, r = np.linalg.qr(rng.standard_normal((d, k)))
    return q * np.sign(np.diag(r))


@validate_params(
    {
        "n_adapters": [POSITIVE_INT],
        "d_out": [POSITIVE_INT],
        "d_in": [POSITIVE_INT, None],
        "adapter_rank": [POSITIVE_INT],
        "basis_rank": [POSITIVE_INT, None],
        "n_groups": [POSITIVE_INT],
        "private_rank": [NON_NEGATIVE_INT],
        "private_scale": [ANY_REAL],
        "return_groups": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_lora_collection(
    n_adapters=100,
    *,
    d_out=256,
    d_in=None,
    adapter_rank=8,
    basis_rank=32,
    n_groups=1,
    private_rank=0,
    private_scale=0.3,
    return_groups=False,
    random_state=None,
):
    """A collection of LoRA adapters whose updates share planted subspaces.

    Adapter ``i`` of group ``g`` is ``Delta_i = U_g G_i H_i V_g^T + s Bp_i Ap_i``: a shared
    part inside the group's random orthonormal bases ``U_g`` (d_out x basis_rank) and ``V_g``
    (d_in x basis_rank), with Gaussian ``G_i`` (basis_rank x adapter_rank) and ``H_i``
    (adapter_rank x basis_rank) of variance ``1 / basis_rank``, plus an optional private
    part of rank ``private_rank`` with entries of variance ``1 / d_out`` (``Bp_i``) and
    ``1 / d_in`` (``Ap_i``), scaled by ``s = private_scale``. The shared part has expected
    energy ``adapter_rank`` and the private part ``s^2 private_rank``. With
    ``basis_rank=None`` the adapters share nothing: ``B_i``, ``A_i`` are i.i.d. Gaussian.

    Parameters
    ----------
    n_adapters : int, default=100
        Number of adapters n.
    d_out : int, default=256
        Rows of the adapted weight.
    d_in : int, default=None
        Columns of the adapted weight (``d_out`` when None).
    adapter_rank : int, default=8
        Rank of each adapter's shared part (of the whole adapter when ``basis_rank=None``).
    basis_rank : int or None, default=32
        Dimension of each group's shared subspaces; None for unrelated adapters.
    n_groups : int, default=1
        Number of groups with their own bases; adapters are split into contiguous, nearly
        equal groups.
    private_rank : int, default=0
        Rank of each adapter's private part.
    private_scale : float, default=0.3
        Scale ``s`` of the private part.
    return_groups : bool, default=False
        Also return each adapter's group.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    B : ndarray of shape (n_adapters, d_out, adapter_rank + private_rank)
    A : ndarray of shape (n_adapters, adapter_rank + private_rank, d_in)
        ``Delta_i = B[i] @ A[i]``.
    groups : ndarray of shape (n_adapters,)
        Only with ``return_groups=True``.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_lora_collection
    >>> B, A = make_lora_collection(10, d_out=32, adapter_rank=4, basis_rank=8,
    ...                             private_rank=2, random_state=0)
    >>> B.shape, A.shape
    ((10, 32, 6), (10, 6, 32))
    """
    n, d_out, r, k, p = int(n_adapters), int(d_out), int(adapter_rank), int(n_groups), int(
        private_rank
    )
    d_in = d_out if d_in is None else int(d_in)
    if k > n:
        raise ValueError(f"n_groups must be <= n_adapters ({n}). Got {n_groups!r} instead.")
    if not np.isfinite(private_scale):
        raise ValueError(f"private_scale must be a finite number. Got {private_scale!r} instead.")
    if basis_rank is not None:
        basis_rank = int(basis_rank)
        if basis_rank > min(d_out, d_in):
            raise ValueError(
                f"basis_rank must be <= min(d_out, d_in) = {min(d_out, d_in)}. Got "
                f"{basis_rank!r} instead."
            )
    rng = check_random_state(random_state)
    groups = np.arange(n) * k // n
    B = np.zeros((n, d_out, r + p))
    A = np.zeros((n, r + p, d_in))
    if basis_rank is None:
        B[:, :, :r] = rng.standard_normal((n, d_out, r)) / np.sqrt(d_out)
        A[:, :r, :] = rng.standard_normal((n, r, d_in)) / np.sqrt(d_in)
    else:
        for g in range(k):
            members = np.flatnonzero(groups == g)
            U0 = _orthonormal(rng, d_out, basis_rank)
            V0 = _orthonormal(rng, d_in, basis_rank)
            G = rng.standard_normal((members.size, basis_rank, r)) / np.sqrt(basis_rank)
            H = rng.standard_normal((members.size, r, basis_rank)) / np.sqrt(basis_rank)
            B[members, :, :r] = np.matmul(U0, G)
            A[members, :r, :] = np.matmul(H, V0.T)
    if p:
        B[:, :, r:] = private_scale * rng.standard_normal((n, d_out, p)) / np.sqrt(d_out)
        A[:, r:, :] = rng.standard_normal((n, p, d_in)) / np.sqrt(d_in)
    return (B, A, groups) if return_groups else (B, A)
