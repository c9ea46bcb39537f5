"""Timing of the two multi-LoRA serving paths, for the joint-compression benchmark.

:func:`time_multi_lora_forward` is a benchmark harness, not part of the library's API: the
benchmark (``benchmarks/lora_joint_compression.py``) and the serving tests import it from
here. It was public as ``sklearn_icml.lora.benchmark_multi_lora_forward``, which stays
importable, with a FutureWarning, until 0.4; this module then moves to
``benchmarks/_lora_serving_timing.py`` (one copy of the code meanwhile: the deprecated name
must keep working from an installed package, where ``benchmarks/`` is absent).
"""

import numbers
import statistics
import time

import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_params

from ..utils import draw_seed
from ..utils._deprecation import REMOVED_IN, deprecated
from ..utils._parallel import resolve_n_jobs
from ..utils._param_validation import N_JOBS, NON_NEGATIVE_INT, POSITIVE_INT
from ._serving import _torch, separate_lora_forward, shared_basis_forward


@validate_params(
    {
        "d_in": [POSITIVE_INT],
        "d_out": [POSITIVE_INT],
        "r0": [POSITIVE_INT],
        "rank": [POSITIVE_INT],
        "n_adapters_list": ["array-like"],
        "batch": [POSITIVE_INT],
        "tokens": [POSITIVE_INT],
        "n_repeats": [POSITIVE_INT],
        "random_state": ["random_state"],
        "n_warmup": [NON_NEGATIVE_INT],
        "core": [StrOptions({"full", "diag"})],
        "include_base": ["boolean"],
        "n_jobs": N_JOBS,
        "dtype": [StrOptions({"float32", "float64", "bfloat16"})],
    },
    prefer_skip_nested_validation=True,
)
def time_multi_lora_forward(d_in=1024, d_out=1024, r0=16, rank=64,
                            n_adapters_list=(1, 16, 256, 1024), batch=64, tokens=8,
                            n_repeats=50, random_state=0, *, n_warmup=5, core="full",
                            include_base=True, n_jobs=None, dtype="float32"):
    """Time the shared-basis and the separate-LoRA forward for growing numbers of adapters.

    For each ``n`` in ``n_adapters_list``, random adapters (``A`` (n, r0, d_in), ``B``
    (n, d_out, r0)) and a random shared basis with n cores are made resident; every repeat
    draws ``batch`` requests with adapter ids uniform over the n adapters, each of ``tokens``
    tokens, and runs both paths (and a single LoRA applied to the whole batch, the
    paper's reference) on the same inputs, interleaved. Medians of ``n_repeats`` timed runs
    after ``n_warmup`` warm-ups.

    Parameters
    ----------
    d_in, d_out : int, default=1024
        Shape of the adapted weight.
    r0 : int, default=16
        Rank of the uncompressed adapters.
    rank : int, default=64
        Shared rank of the compressed collection.
    n_adapters_list : sequence of int, default=(1, 16, 256, 1024)
        Numbers of resident adapters.
    batch : int, default=64
        Requests per forward call.
    tokens : int, default=8
        Tokens per request.
    n_repeats : int, default=50
        Timed calls per path and size.
    random_state : int, RandomState instance or None, default=0
        Seed of the weights and the adapter ids.
    n_warmup : int, default=5
        Untimed calls first.
    core : {"full", "diag"}, default="full"
        Core type of the shared path.
    include_base : bool, default=True
        Add the base product ``W0 x`` to every path (as a real layer does).
    n_jobs : int, default=None
        Number of CPU workers, here torch's intra-op threads during the run (restored
        afterwards); None means 1 unless in a :func:`joblib.parallel_config` context, -1
        every core.
    dtype : {"float32", "float64", "bfloat16"}, default="float32"
        Tensor dtype.

    Returns
    -------
    result : dict
        ``n_adapters`` (list), ``shared_seconds``, ``separate_seconds`` (median seconds per
        call), ``shared_tokens_per_s``, ``separate_tokens_per_s``, ``shared_memory_bytes``,
        ``separate_memory_bytes`` (resident adapter weights), ``speedup`` (separate time
        over shared time), ``shared_ratio_to_single`` (shared throughput over single-LoRA
        throughput); scalars ``single_lora_seconds``, ``single_lora_tokens_per_s``,
        ``base_seconds``, ``base_tokens_per_s``; and ``settings`` (the arguments).

    Examples
    --------
    >>> from sklearn_icml.lora._serving_timing import time_multi_lora_forward
    >>> res = time_multi_lora_forward(64, 64, 4, 8, [1, 8], batch=4, tokens=2,
    ...                               n_repeats=3, n_warmup=1)
    >>> res["n_adapters"], res["separate_memory_bytes"]
    ([1, 8], [2048, 16384])
    >>> len(res["shared_tokens_per_s"])
    2
    """
    torch = _torch()
    from ..utils._skorch import torch_threads

    n_list = np.asarray(n_adapters_list).ravel().tolist()
    if not n_list or any(
        isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1 for v in n_list
    ):
        raise ValueError(
            f"n_adapters_list must hold positive integers. Got {n_adapters_list!r} instead."
        )
    n_list = [int(v) for v in n_list]
    if rank > min(d_in, d_out):
        raise ValueError(
            f"rank must be <= min(d_in, d_out) = {min(d_in, d_out)}. Got {rank!r} instead."
        )
    tdtype = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}[
        dtype
    ]
    gen = torch.Generator().manual_seed(draw_seed(random_state))

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(tdtype)

    out = {k: [] for k in (
        "shared_seconds", "separate_seconds", "shared_tokens_per_s", "separate_tokens_per_s",
        "shared_memory_bytes", "separate_memory_bytes", "speedup", "shared_ratio_to_single",
    )}
    n_tokens = batch * tokens
    with torch_threads(n_jobs), torch.inference_mode():
        X = randn(batch, tokens, d_in)
        W0 = randn(d_out, d_in, scale=d_in**-0.5) if include_base else None
        U = torch.linalg.qr(torch.randn(d_out, rank, generator=gen))[0].to(tdtype)
        V = torch.linalg.qr(torch.randn(d_in, rank, generator=gen))[0].to(tdtype)
        A1, B1 = randn(r0, d_in, scale=d_in**-0.5), randn(d_out, r0, scale=r0**-0.5)
        X2 = X.reshape(n_tokens, d_in)

        def single():
            y = (X2 @ A1.T) @ B1.T
            return y if W0 is None else torch.addmm(y, X2, W0.T)

        def base_only():
            return X2 @ W0.T if W0 is not None else X2.clone()

        single_t, base_t = [], []
        for n in n_list:
            A = randn(n, r0, d_in, scale=d_in**-0.5)
            B = randn(n, d_out, r0, scale=r0**-0.5)
            cores = randn(n, rank, rank) if core == "full" else randn(n, rank)
            id_draws = [
                torch.randint(n, (batch,), generator=gen)
                for _ in range(n_warmup + n_repeats)
            ]
            times = {"shared": [], "separate": [], "single": [], "base": []}
            for k, ids in enumerate(id_draws):
                calls = {
                    "shared": lambda ids=ids, cores=cores: shared_basis_forward(
                        X, ids, U, V, cores, base_weight=W0),
                    "separate": lambda ids=ids, A=A, B=B: separate_lora_forward(
                        X, ids, A, B, base_weight=W0),
                    "single": single,
                    "base": base_only,
                }
                for name, call in calls.items():
                    start = time.perf_counter()
                    call()
                    if k >= n_warmup:
                        times[name].append(time.perf_counter() - start)
            shared_s = statistics.median(times["shared"])
            sep_s = statistics.median(times["separate"])
            single_t += times["single"]
            base_t += times["base"]
            out["shared_seconds"].append(shared_s)
            out["separate_seconds"].append(sep_s)
            out["shared_tokens_per_s"].append(n_tokens / shared_s)
            out["separate_tokens_per_s"].append(n_tokens / sep_s)
            out["shared_memory_bytes"].append(
                int(U.nbytes + V.nbytes + cores.nbytes))
            out["separate_memory_bytes"].append(int(A.nbytes + B.nbytes))
            out["speedup"].append(sep_s / shared_s)
            del A, B, cores
    single_s = statistics.median(single_t)
    out["shared_ratio_to_single"] = [single_s / s for s in out["shared_seconds"]]
    base_s = statistics.median(base_t)
    return {
        "n_adapters": n_list,
        **out,
        "single_lora_seconds": single_s,
        "single_lora_tokens_per_s": n_tokens / single_s,
        "base_seconds": base_s,
        "base_tokens_per_s": n_tokens / base_s,
        "settings": {
            "d_in": d_in, "d_out": d_out, "r0": r0, "rank": rank, "batch": batch,
            "tokens": tokens, "n_repeats": n_repeats, "n_warmup": n_warmup, "core": core,
            "include_base": include_base, "dtype": dtype,
            "n_jobs": resolve_n_jobs(n_jobs),
        },
    }


@deprecated(
    "sklearn_icml.lora.benchmark_multi_lora_forward is a benchmark harness and leaves "
    f"the public API in {REMOVED_IN}; time shared_basis_forward and "
    "separate_lora_forward directly (the benchmark's harness is "
    "benchmarks/lora_joint_compression.py)."
)
def benchmark_multi_lora_forward(*args, **kwargs):
    """Deprecated: a benchmark harness, removed from the public API in 0.4.

    Times the shared-basis and the separate-LoRA forward as the joint-compression
    benchmark does (same arguments and result as before); time the two paths with
    :func:`shared_basis_forward` and :func:`separate_lora_forward` instead.
    """
    return time_multi_lora_forward(*args, **kwargs)
