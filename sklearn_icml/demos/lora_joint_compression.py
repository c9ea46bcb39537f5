"""Demo: 100 LoRA adapters compressed into one shared basis; clustering two families."""

from . import register_demo


@register_demo(
    "JointLoRACompressor",
    what="100 synthetic rank-12 LoRAs (d=128) -> shared rank-24 basis, vs per-adapter SVD; "
    "2-family clustering",
    budget_s=20,
)
def demo():
    from sklearn.metrics import adjusted_rand_score

    from sklearn_icml.datasets import make_lora_collection
    from sklearn_icml.lora import (
        ClusteredJointLoRACompressor,
        JointLoRACompressor,
        SVDLoRACompressor,
    )

    # shared rank-8 part in a 24-dim subspace + a private rank-4 part (~8 % of the energy)
    B, A = make_lora_collection(100, d_out=128, adapter_rank=8, basis_rank=24, private_rank=4,
                                private_scale=0.4, random_state=0)
    joint = JointLoRACompressor(rank=24).fit((B, A))
    # the per-adapter SVD rank that stores about as many numbers as the joint compression
    svd_rank = max(1, round(joint.n_parameters_ / (len(B) * 256)))
    svd = SVDLoRACompressor(rank=svd_rank).fit((B, A))

    Bg, Ag, groups = make_lora_collection(40, d_out=64, adapter_rank=4, basis_rank=8,
                                          n_groups=2, return_groups=True, random_state=1)
    clustered = ClusteredJointLoRACompressor(n_clusters=2, rank=8, random_state=0).fit(
        (Bg, Ag))
    return {
        "compression ratio": joint.compression_ratio_,
        "joint squared error": 1.0 - joint.score((B, A)),
        f"SVD rank {svd_rank} squared error (same storage)": 1.0 - svd.score((B, A)),
        "cluster ARI": float(adjusted_rand_score(groups, clustered.labels_)),
        "clustered squared error": 1.0 - clustered.score((Bg, Ag)),
    }
