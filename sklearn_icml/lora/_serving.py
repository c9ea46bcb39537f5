"""Serving many LoRA adapters at once in torch: the shared-basis path and the separate path.

torch is imported when a function runs (``sklearn_icml.lora`` itself does not need it).
"""

from collections.abc import Mapping

import numpy as np
from sklearn.utils._param_validation import HasMethods, StrOptions, validate_params

from ..utils import optional_import


def _torch():
    return optional_import("torch", "neural")


def _as_tensor(x, name, dtype=None, device=None):
    torch = _torch()
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise ValueError(f"{name} must be real. Got a complex tensor of dtype {x.dtype}.")
        t = x
    else:
        arr = np.asarray(x)
        if arr.dtype.kind not in "fiub":
            raise ValueError(f"{name} must be real numbers. Got dtype {arr.dtype} instead.")
        t = torch.as_tensor(np.ascontiguousarray(arr))
    if dtype is not None or device is not None:
        t = t.to(dtype=dtype if dtype is not None else t.dtype,
                 device=device if device is not None else t.device)
    return t


def _check_inputs(X, adapter_ids, n_adapters):
    torch = _torch()
    X = _as_tensor(X, "X")
    if not X.is_floating_point():
        X = X.to(torch.get_default_dtype())
    if X.ndim not in (2, 3):
        raise ValueError(
            f"X must have shape (batch, tokens, d_in) or (batch, d_in). Got {tuple(X.shape)} "
            "instead."
        )
    ids = _as_tensor(adapter_ids, "adapter_ids", device=X.device)
    if ids.is_floating_point() or ids.ndim != 1 or ids.shape[0] != X.shape[0]:
        raise ValueError(
            f"adapter_ids must be {X.shape[0]} integers, one per request of X. Got "
            f"{tuple(ids.shape)} of dtype {ids.dtype} instead."
        )
    ids = ids.long()
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= n_adapters):
        raise ValueError(
            f"adapter_ids must lie in [0, {n_adapters}). Got values from {int(ids.min())} to "
            f"{int(ids.max())} instead."
        )
    return X, ids


def _base(X2, base_weight, d_out, name="base_weight"):
    if base_weight is None:
        return None
    W = _as_tensor(base_weight, name, dtype=X2.dtype, device=X2.device)
    if tuple(W.shape) != (d_out, X2.shape[1]):
        raise ValueError(
            f"{name} must have shape (d_out, d_in) = {(d_out, X2.shape[1])}. Got "
            f"{tuple(W.shape)} instead."
        )
    return X2 @ W.T


def shared_basis_codes(X3, ids, V, cores):
    """``Sigma_{id} V^T x`` of every token, shape ``(batch * tokens, rank)`` (checked tensors).

    The kernel of the shared-basis path, shared by :func:`shared_basis_forward` and the
    shared-basis layers that :func:`attach_shared_basis` puts into a model: one GEMM with
    ``V`` for the whole batch, then each request's core (a batched ``r x r`` product, or a
    scaling for diagonal cores). ``X3`` is ``(batch, tokens, d_in)``, ``ids`` a long tensor.
    """
    torch = _torch()
    b, t, d_in = X3.shape
    r = V.shape[1]
    H = (X3.reshape(b * t, d_in) @ V).reshape(b, t, r)  # one shared GEMM
    S = cores.index_select(0, ids)
    if S.ndim == 3:
        Z = torch.bmm(H, S.transpose(1, 2))  # batched r x r product
    else:
        Z = H * S[:, None, :]
    return Z.reshape(b * t, r)


@validate_params(
    {
        "X": ["array-like"],
        "adapter_ids": ["array-like"],
        "U": ["array-like"],
        "V": ["array-like"],
        "cores": ["array-like"],
        "base_weight": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def shared_basis_forward(X, adapter_ids, U, V, cores, *, base_weight=None):
    """Outputs of a batch of requests, each for its own adapter, through one shared basis.

    Computes ``y = W0 x + U Sigma_{id} V^T x`` for every token ``x`` of request ``b`` with
    adapter ``id = adapter_ids[b]``: one shared GEMM with ``V``, a batched r x r product
    with the gathered cores, one shared GEMM with ``U^T``. The cost hardly depends on how
    many adapters are resident.

    Parameters
    ----------
    X : tensor or array of shape (batch, tokens, d_in) or (batch, d_in)
        Inputs; the other tensors are cast to its dtype and device.
    adapter_ids : tensor or array of int of shape (batch,)
        Adapter of each request, in ``[0, n_adapters)``.
    U : tensor or array of shape (d_out, rank)
        Shared output basis (``JointLoRACompressor.U_``).
    V : tensor or array of shape (d_in, rank)
        Shared input basis (``JointLoRACompressor.V_``).
    cores : tensor or array of shape (n_adapters, rank, rank) or (n_adapters, rank)
        Full or diagonal cores (``JointLoRACompressor.cores_``).
    base_weight : tensor or array of shape (d_out, d_in), default=None
        Base weight ``W0``; without it only the adapter's contribution is returned.

    Returns
    -------
    Y : torch.Tensor of shape (batch, tokens, d_out) or (batch, d_out)

    See Also
    --------
    separate_lora_forward : the same outputs from uncompressed adapters.
    JointLoRACompressor : produces ``U``, ``V`` and ``cores``.

    References
    ----------
    .. [1] Brüel Gabrielsson et al., ICML 2025, arXiv:2407.00066: the shared-basis
       serving path of "Compress then Serve".

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.lora import shared_basis_forward
    >>> rng = np.random.default_rng(0)
    >>> U, V = rng.normal(size=(6, 2)), rng.normal(size=(5, 2))
    >>> cores = rng.normal(size=(3, 2, 2))
    >>> X = rng.normal(size=(4, 7, 5)).astype(np.float32)
    >>> Y = shared_basis_forward(X, [0, 2, 2, 1], U, V, cores)
    >>> tuple(Y.shape)
    (4, 7, 6)
    >>> dense = U @ cores[2] @ V.T
    >>> bool(np.allclose(Y[1].numpy(), X[1] @ dense.T, atol=1e-5))
    True
    """
    torch = _torch()
    U_t = _as_tensor(U, "U")
    cores_t = _as_tensor(cores, "cores")
    if cores_t.ndim not in (2, 3):
        raise ValueError(
            "cores must have shape (n_adapters, rank, rank) or (n_adapters, rank). Got "
            f"{tuple(cores_t.shape)} instead."
        )
    X, ids = _check_inputs(X, adapter_ids, cores_t.shape[0])
    dtype, device = X.dtype, X.device
    U_t = U_t.to(dtype=dtype, device=device)
    V_t = _as_tensor(V, "V", dtype=dtype, device=device)
    cores_t = cores_t.to(dtype=dtype, device=device)
    squeeze = X.ndim == 2
    X3 = X[:, None, :] if squeeze else X
    b, t, d_in = X3.shape
    r = U_t.shape[1] if U_t.ndim == 2 else -1
    if U_t.ndim != 2 or V_t.ndim != 2 or V_t.shape != (d_in, r) or cores_t.shape[1] != r or (
        cores_t.ndim == 3 and cores_t.shape[2] != r
    ):
        raise ValueError(
            f"U (d_out, rank), V (d_in={d_in}, rank) and cores (n, rank[, rank]) must agree. "
            f"Got U {tuple(U_t.shape)}, V {tuple(V_t.shape)}, cores {tuple(cores_t.shape)} "
            "instead."
        )
    X2 = X3.reshape(b * t, d_in)
    Z2 = shared_basis_codes(X3, ids, V_t, cores_t)
    base = _base(X2, base_weight, U_t.shape[0])
    Y = Z2 @ U_t.T if base is None else torch.addmm(base, Z2, U_t.T)  # one shared GEMM
    Y = Y.reshape(b, t, -1)
    return Y[:, 0, :] if squeeze else Y


@validate_params(
    {
        "X": ["array-like"],
        "adapter_ids": ["array-like"],
        "A": ["array-like"],
        "B": ["array-like"],
        "base_weight": ["array-like", None],
        "strategy": [StrOptions({"gather", "loop"})],
    },
    prefer_skip_nested_validation=True,
)
def separate_lora_forward(X, adapter_ids, A, B, *, base_weight=None, strategy="gather"):
    """Outputs of a batch of requests, each for its own uncompressed LoRA adapter.

    Computes ``y = W0 x + B_id A_id x`` per request: ``strategy="gather"`` copies every
    request's ``A_id`` and ``B_id`` and runs two batched products (memory traffic
    ``batch r (d_in + d_out)`` per call); ``"loop"`` groups the requests by adapter and
    runs two small GEMMs per distinct adapter.

    Parameters
    ----------
    X : tensor or array of shape (batch, tokens, d_in) or (batch, d_in)
        Inputs.
    adapter_ids : tensor or array of int of shape (batch,)
        Adapter of each request, in ``[0, n_adapters)``.
    A : tensor or array of shape (n_adapters, r, d_in)
        LoRA A factors.
    B : tensor or array of shape (n_adapters, d_out, r)
        LoRA B factors (scaling folded in).
    base_weight : tensor or array of shape (d_out, d_in), default=None
        Base weight ``W0``.
    strategy : {"gather", "loop"}, default="gather"
        How requests for different adapters are batched.

    Returns
    -------
    Y : torch.Tensor of shape (batch, tokens, d_out) or (batch, d_out)

    See Also
    --------
    shared_basis_forward : the compressed path.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.lora import separate_lora_forward
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.normal(size=(3, 2, 5)), rng.normal(size=(3, 6, 2))
    >>> X = rng.normal(size=(4, 5)).astype(np.float32)
    >>> Y = separate_lora_forward(X, [0, 2, 2, 1], A, B)
    >>> bool(np.allclose(Y[3].numpy(), B[1] @ A[1] @ X[3], atol=1e-5))
    True
    """
    torch = _torch()
    A_t = _as_tensor(A, "A")
    if A_t.ndim != 3:
        raise ValueError(f"A must have shape (n_adapters, r, d_in). Got {tuple(A_t.shape)}.")
    X, ids = _check_inputs(X, adapter_ids, A_t.shape[0])
    dtype, device = X.dtype, X.device
    A_t = A_t.to(dtype=dtype, device=device)
    B_t = _as_tensor(B, "B", dtype=dtype, device=device)
    squeeze = X.ndim == 2
    X3 = X[:, None, :] if squeeze else X
    b, t, d_in = X3.shape
    if B_t.ndim != 3 or A_t.shape[2] != d_in or B_t.shape[0] != A_t.shape[0] or (
        B_t.shape[2] != A_t.shape[1]
    ):
        raise ValueError(
            f"A (n, r, d_in={d_in}) and B (n, d_out, r) must agree. Got A {tuple(A_t.shape)} "
            f"and B {tuple(B_t.shape)} instead."
        )
    X2 = X3.reshape(b * t, d_in)
    base = _base(X2, base_weight, B_t.shape[1])
    if strategy == "gather":
        A_sel = A_t.index_select(0, ids)  # (b, r, d_in)
        B_sel = B_t.index_select(0, ids)  # (b, d_out, r)
        H = torch.bmm(X3, A_sel.transpose(1, 2))
        Y = torch.bmm(H, B_sel.transpose(1, 2))
    else:
        Y = X3.new_empty((b, t, B_t.shape[1]))
        for a in torch.unique(ids).tolist():
            rows = (ids == a).nonzero().flatten()
            Xa = X3.index_select(0, rows).reshape(-1, d_in)
            Y[rows] = ((Xa @ A_t[a].T) @ B_t[a].T).reshape(len(rows), t, -1)
    if base is not None:
        Y = Y + base.reshape(b, t, -1)
    return Y[:, 0, :] if squeeze else Y


@validate_params(
    {
        "model": [HasMethods(["named_modules", "register_forward_pre_hook"])],
        "compressors": [Mapping],
        "cores": [Mapping, None],
    },
    prefer_skip_nested_validation=True,
)
def attach_shared_basis(model, compressors, *, cores=None):
    """Serve many compressed adapters from one model: shared-basis layers, in place.

    Every layer named by a key of ``compressors`` (a fitted :class:`JointLoRACompressor`
    per adapted weight, as :func:`compress_peft_collection` returns them) is replaced by a
    layer computing ``W0 x + U Sigma_{id} V^T x``; the model is then called with one adapter
    per request, ``model(input_ids, adapter_ids=[...])``, and the whole batch shares the
    two large products with ``V`` and ``U`` whatever the adapters (the serving path of
    "Compress then Serve"). Keys are matched to the model's module names exactly or by their
    last dotted parts, so the keys of peft's state dicts
    (``base_model.model.model.layers.0.self_attn.q_proj``) find the layers of the plain base
    model. A layer that is a peft LoRA layer is replaced together with its adapters (its
    frozen base weight is kept); attaching again to a served model replaces the collection
    it serves. torch is imported when this function runs.

    Parameters
    ----------
    model : torch.nn.Module
        The base model (modified in place and returned).
    compressors : dict of str -> JointLoRACompressor
        One fitted compressor per adapted layer; every one must serve the same adapters.
    cores : dict of str -> array of shape (n_adapters, rank, rank) or (n_adapters, rank), \
default=None
        Cores to serve instead of each compressor's ``cores_``: for instance
        ``compressor.transform(new_adapters)``, adapters projected onto the fitted basis
        without refitting it.

    Returns
    -------
    model : torch.nn.Module
        The same model; its forward takes ``adapter_ids`` (one int per request in
        ``[0, n_adapters)``) and it has ``shared_basis_n_adapters_``.

    Raises
    ------
    TypeError
        If a compressor is not a fitted :class:`JointLoRACompressor` (the clustered
        compressor has one basis per cluster) or a key names a layer that is not linear.
    ValueError
        If a key matches no module, shapes disagree, or the layers serve different numbers
        of adapters.

    See Also
    --------
    shared_basis_forward : the same product for one layer, on tensors.
    compress_peft_collection : the compressors of a collection of peft adapters.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn_icml.lora import JointLoRACompressor, attach_shared_basis
    >>> rng = np.random.default_rng(0)
    >>> adapters = [(rng.normal(size=(3, 2)), rng.normal(size=(2, 4))) for _ in range(5)]
    >>> comp = JointLoRACompressor(rank=3, random_state=0).fit(adapters)
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 3, bias=False))
    >>> model = attach_shared_basis(model, {"0": comp})
    >>> X = torch.ones(2, 4)
    >>> Y = model(X, adapter_ids=[4, 1])
    >>> B1, A1 = comp.reconstruct(adapters)[1]
    >>> W1 = model[0].weight.detach().numpy() + B1 @ A1
    >>> bool(np.allclose(Y[1].detach().numpy(), W1 @ np.ones(4), atol=1e-4))
    True
    """
    from ._shared_basis_model import _attach

    if not compressors:
        raise ValueError(
            "compressors is empty; give one fitted JointLoRACompressor per adapted layer. "
            "Got an empty mapping instead."
        )
    if cores is not None and set(cores) != set(compressors):
        raise ValueError(
            "cores must have the same keys as compressors. Got keys that differ in "
            f"{sorted(set(cores) ^ set(compressors))[:3]} instead."
        )
    return _attach(model, compressors, cores)
