"""
Serve a thousand LoRA adapters from one shared basis ("Compress then Serve", ICML 2025)
=======================================================================================

A collection of LoRA adapters for the same weight matrix often lives in a few shared
directions. JointLoRACompressor finds one shared pair of bases (U, V) and a tiny r x r core
per adapter, so every adapter stays resident and a batch of requests for *different*
adapters shares two big matrix products. This script

1. compresses 200 synthetic adapters and compares with per-adapter SVD at equal storage,
2. times a layer forward for 1 to 1024 resident adapters along both serving paths, and
3. plots throughput and resident memory against the number of adapters.

Run: ``python examples/lora_joint_compression.py [output.png]``
"""

import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from sklearn_icml.datasets import make_lora_collection
from sklearn_icml.lora import (
    JointLoRACompressor,
    SVDLoRACompressor,
    separate_lora_forward,
    shared_basis_forward,
)

# 1. compression: rank-16 adapters (8 shared-subspace directions + 8 private ones)
B, A = make_lora_collection(200, d_out=256, adapter_rank=8, basis_rank=32, private_rank=8,
                            random_state=0)
joint = JointLoRACompressor(rank=32).fit((B, A))
svd_rank = max(1, round(joint.n_parameters_ / (len(B) * 512)))
svd = SVDLoRACompressor(rank=svd_rank).fit((B, A))
print(f"joint rank 32: {joint.compression_ratio_:.1f}x fewer numbers, "
      f"squared error {1 - joint.score((B, A)):.3f}")
print(f"per-adapter SVD rank {svd_rank} (same storage): squared error {1 - svd.score((B, A)):.3f}")

# 2. serving: a 1024 x 1024 layer, rank-16 adapters vs a rank-64 shared basis,
#    64 requests of 8 tokens per call, adapter ids uniform over the resident adapters
torch.set_num_threads(1)
gen = torch.Generator().manual_seed(0)
d, r0, rank, batch, tokens = 1024, 16, 64, 64, 8
X = torch.randn(batch, tokens, d, generator=gen)
W0 = torch.randn(d, d, generator=gen) / d**0.5
U = torch.linalg.qr(torch.randn(d, rank, generator=gen))[0]
V = torch.linalg.qr(torch.randn(d, rank, generator=gen))[0]


def tokens_per_s(forward, *args, n_calls=15, **kwargs):
    """Throughput of ``forward(*args, **kwargs)`` after one warm-up call."""
    forward(*args, **kwargs)
    start = time.perf_counter()
    for _ in range(n_calls):
        forward(*args, **kwargs)
    return n_calls * batch * tokens / (time.perf_counter() - start)


res = {"n_adapters": [1, 16, 256, 1024], "shared": [], "separate": [],
       "shared_mib": [], "separate_mib": []}
with torch.inference_mode():
    A1, B1 = torch.randn(r0, d, generator=gen) / d**0.5, torch.randn(d, r0, generator=gen)
    single = tokens_per_s(lambda: X @ W0.T + (X @ A1.T) @ B1.T)  # one LoRA for all requests
    for n in res["n_adapters"]:
        A = torch.randn(n, r0, d, generator=gen) / d**0.5
        B = torch.randn(n, d, r0, generator=gen) / r0**0.5
        cores = torch.randn(n, rank, rank, generator=gen)
        ids = torch.randint(n, (batch,), generator=gen)
        shared = tokens_per_s(shared_basis_forward, X, ids, U, V, cores, base_weight=W0)
        separate = tokens_per_s(separate_lora_forward, X, ids, A, B, base_weight=W0)
        res["shared"].append(shared)
        res["separate"].append(separate)
        res["shared_mib"].append((U.nbytes + V.nbytes + cores.nbytes) / 2**20)
        res["separate_mib"].append((A.nbytes + B.nbytes) / 2**20)
        print(f"{n:5d} adapters: shared {shared:8.0f} tok/s, separate {separate:8.0f} tok/s, "
              f"shared / single LoRA = {shared / single:.2f}")

# 3. the figure
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.plot(res["n_adapters"], res["shared"], "o-", label="shared basis (compressed)")
ax1.plot(res["n_adapters"], res["separate"], "s-", label="separate LoRAs (gather)")
ax1.axhline(single, color="gray", ls="--", label="one LoRA for all")
ax1.set_xscale("log")
ax1.set_xlabel("resident adapters")
ax1.set_ylabel("tokens / s (CPU, 1 thread)")
ax1.set_ylim(bottom=0)
ax1.legend()
ax1.set_title("Throughput of one 1024 x 1024 layer")
ax2.plot(res["n_adapters"], res["shared_mib"], "o-", label="shared basis")
ax2.plot(res["n_adapters"], res["separate_mib"], "s-", label="separate LoRAs")
ax2.set_xscale("log")
ax2.set_yscale("log")
ax2.set_xlabel("resident adapters")
ax2.set_ylabel("resident adapter weights (MiB)")
ax2.legend()
ax2.set_title("Memory")
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "lora_joint_compression.png"
fig.savefig(out, dpi=120)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/lora_joint_compression_thumb.png"
