"""Joint LoRA compression ("Compress then Serve"): experiments E1-E3 with the peers.

Peers in the same run: tensorly's partial Tucker (same objective on the materialised
d_out x d_in x n tensor), per-adapter truncated SVD (ours and scikit-learn's TruncatedSVD on
dense adapters), vlora-dev's shared subspace (PCA of flattened factors, a different
paper), real peft adapters through compress_peft_collection, and the separate-LoRA serving
path.

Run: python benchmarks/lora_joint_compression.py [--quick]
(The reported run used OPENBLAS_NUM_THREADS=1: on the loaded 2-core machine OpenBLAS with 2
threads was up to 50x slower.)
"""

import os
import time
import warnings

import numpy as np
from _harness import Report, median_time, package_version, parse_args

from sklearn_icml.datasets import make_lora_collection
from sklearn_icml.lora import (
    ClusteredJointLoRACompressor,
    JointLoRACompressor,
    SVDLoRACompressor,
    compress_peft_collection,
)

# the timing harness of the two serving paths (kept out of the library's public API)
from sklearn_icml.lora._serving_timing import time_multi_lora_forward

NOTES = (
    "All target sizes are kept (E2: d = 256, n = 100 / 50; E3: 1024 x 1024, up to 1,024 "
    "adapters). The paper's throughput figures come from a GPU vLLM server; E3 here is one "
    "layer on one CPU thread, where the separate path's gather costs little next to the base "
    "matmul, so the shared/separate speed-up is small; the >= 1.3 target (calibrated "
    "by a sketch on another noisy machine) is not met and is reported as measured. The "
    "shared / single-LoRA ratio (the paper's 80 % headline) is in 'E3 targets'. Timings on "
    "this shared 2-core machine vary by 10-20 % between runs (see the per-run figures)."
)


def sq_error(comp, coll):
    return 1.0 - comp.score(coll)


def tucker_error(B, A, rank):
    """tensorly partial Tucker on the stacked tensor (d_out, d_in, n): same objective."""
    import tensorly as tl
    from tensorly.decomposition import partial_tucker

    T = np.einsum("npr,nrq->pqn", B, A)
    out = partial_tucker(T, rank=[rank, rank], modes=[0, 1], tol=1e-10, n_iter_max=200)
    core, factors = out[0] if isinstance(out[0], tuple) else out
    rec = tl.tenalg.multi_mode_dot(core, factors, modes=[0, 1])
    return float(np.sum((rec - T) ** 2) / np.sum(T**2))


def timed(func, repeat=3):
    seconds, result = median_time(func, repeat=repeat, warmup=0)
    return seconds, result


def e1(report):
    rows = []
    rng = np.random.default_rng(0)
    B, A = rng.normal(size=(64, 4)), rng.normal(size=(4, 64))
    s = np.linalg.svd(B @ A, compute_uv=False)
    tail = float(np.sum(s[2:] ** 2) / np.sum(s**2))
    comp = JointLoRACompressor(rank=2).fit([(B, A)])
    got = sq_error(comp, [(B, A)])
    rows.append(["(a) n=1, r0=4, rank 2", f"Eckart-Young tail {tail:.10f}", f"{got:.10f}",
                 f"{abs(got - tail):.1e}", f"{tucker_error(B[None], A[None], 2):.10f}"])
    Bb, Ab = make_lora_collection(20, d_out=64, adapter_rank=8, basis_rank=8, random_state=0)
    comp = JointLoRACompressor(rank=8).fit((Bb, Ab))
    rows.append(["(b) 20 adapters in a common 8-dim basis, rank 8", "< 1e-12",
                 f"{sq_error(comp, (Bb, Ab)):.1e}", "-", f"{tucker_error(Bb, Ab, 8):.1e}"])
    P = np.linalg.qr(rng.normal(size=(64, 64)))[0]
    Q = np.linalg.qr(rng.normal(size=(64, 64)))[0]
    coll = [(P[:, 4 * i: 4 * i + 4], Q[:, 4 * i: 4 * i + 4].T) for i in range(8)]
    Bc, Ac = np.stack([c[0] for c in coll]), np.stack([c[1] for c in coll])
    for r in (4, 8, 16):
        got = sq_error(JointLoRACompressor(rank=r).fit(coll), coll)
        target = 1 - r / 32
        rows.append([f"(c) 8 orthogonal adapters, rank {r}", f"{target} (1e-9)", f"{got:.10f}",
                     f"{abs(got - target):.1e}", f"{tucker_error(Bc, Ac, r):.10f}"])
    report.add_table("E1: closed forms (d = 64); squared relative error",
                     ["case", "target", "JointLoRACompressor", "abs diff", "tensorly partial_tucker"],
                     rows)


def e2(report, quick):
    rows = []
    n, n_iid = (40, 20) if quick else (100, 50)
    shared = make_lora_collection(n, d_out=256, adapter_rank=8, basis_rank=32, private_rank=8,
                                  private_scale=0.3, random_state=0)
    iid = make_lora_collection(n_iid, d_out=256, adapter_rank=16, basis_rank=None,
                               random_state=0)
    cases = [
        ("shared+private, rank 32", shared, 32, "0.080 +- 0.005"),
        ("shared+private, rank 8", shared, 8, "0.89 +- 0.02"),
        ("i.i.d. adapters, rank 16", iid, 16, "0.960 +- 0.01"),
        ("i.i.d. adapters, rank 32", iid, 32, "0.907 +- 0.01"),
    ]
    monotone = True
    for name, coll, r, target in cases:
        t_full, full = timed(lambda coll=coll, r=r: JointLoRACompressor(rank=r).fit(coll),
                             repeat=1)
        monotone &= bool(np.all(np.diff(full.objective_history_) >= -1e-12))
        norm = JointLoRACompressor(rank=r, normalize=True).fit(coll)
        diag = JointLoRACompressor(rank=r, core="diag").fit(coll)
        monotone &= bool(np.all(np.diff(diag.objective_history_) >= -1e-12))
        if not rows:  # tensorly materialises the tensor; minutes for the slower cases
            t_tucker, tucker = timed(lambda coll=coll, r=r: tucker_error(*coll, r), repeat=1)
        else:
            t_tucker, tucker = "-", "skipped (minutes)"
        rows.append([name, target, sq_error(full, coll), full.n_iter_, t_full,
                     sq_error(norm, coll), sq_error(diag, coll), tucker, t_tucker])
    report.add_table(
        f"E2: shared-plus-private (d = 256, n = {n}) and i.i.d. adapters (n = {n_iid}, r0 = 16)",
        ["collection, shared rank", "target (full)", "full", "sweeps", "full fit s",
         "full, normalize=True", "diag", "tensorly Tucker", "Tucker s"],
        rows,
        note=f"Objective history non-decreasing (within 1e-12) in every full and diag fit: "
        f"**{monotone}** (target True). The private energy fraction of the collection is the "
        "floor for any shared basis of rank 32; diagonal cores at the same rank can only keep "
        "r numbers per adapter, so they are far worse on adapters whose cores are dense.",
    )
    return shared


def equal_storage(report, shared, quick):
    """Everything at about the storage of joint full rank 32 on the E2 collection."""
    B, A = shared
    n, d = B.shape[0], B.shape[1] + A.shape[2]
    rows = []
    t, full = timed(lambda: JointLoRACompressor(rank=32).fit(shared), repeat=1)
    budget = full.n_parameters_
    rows.append(["JointLoRACompressor full, rank 32", full.n_parameters_, sq_error(full, shared),
                 float(np.max(full.relative_errors_)), t])
    r_diag = int(min(256, budget // (d + n)))
    t, diag = timed(lambda: JointLoRACompressor(rank=r_diag, core="diag").fit(shared),
                    repeat=1)
    rows.append([f"JointLoRACompressor diag, rank {r_diag}", diag.n_parameters_,
                 sq_error(diag, shared), float(np.max(diag.relative_errors_)), t])
    t, clus = timed(lambda: ClusteredJointLoRACompressor(
        n_clusters=2, rank=28, n_init=1 if quick else 2, random_state=0).fit(shared),
        repeat=1)
    rows.append(["ClusteredJointLoRACompressor k=2, rank 28", clus.n_parameters_,
                 sq_error(clus, shared), float(np.max(clus.relative_errors_)), t])
    r_svd = max(1, round(budget / (n * d)))
    t, svd = timed(lambda: SVDLoRACompressor(rank=r_svd).fit(shared), repeat=1)
    rows.append([f"SVDLoRACompressor (per adapter), rank {r_svd}", svd.n_parameters_,
                 sq_error(svd, shared), float(np.max(svd.relative_errors_)), t])

    from sklearn.decomposition import TruncatedSVD

    def sk_svd():
        err = num = 0.0
        for b, a in zip(B, A):
            D = b @ a
            tsvd = TruncatedSVD(n_components=r_svd, algorithm="arpack").fit(D)
            err += np.sum((D - tsvd.inverse_transform(tsvd.transform(D))) ** 2)
            num += np.sum(D**2)
        return err / num

    t, sk_err = timed(sk_svd, repeat=1)
    rows.append([f"scikit-learn TruncatedSVD per dense adapter, rank {r_svd}", svd.n_parameters_,
                 sk_err, "-", t])
    try:
        vl_row = vlora_row(B, A, budget)
        rows.append(vl_row)
    except ImportError:
        rows.append(["vlora-dev SharedSubspace", "not installed", "-", "-", "-"])
    report.add_table(
        f"Peers at equal storage (E2 collection, n = {n}; original adapters store "
        f"{int(full.adapter_ranks_.sum() * d)} numbers)",
        ["method", "numbers stored", "squared error", "max per-adapter error (unsquared)",
         "fit s"],
        rows,
        note="Errors are sum ||Delta_i - hat_i||^2 / sum ||Delta_i||^2 (squared) and "
        "max_i ||Delta_i - hat_i|| / ||Delta_i|| (unsquared), as the paper reports them. vlora-dev "
        "(arXiv:2602.06043, not this paper) runs PCA on the flattened A and B factors "
        "separately, so it depends on the factors' gauge (B R, R^-1 A), which the joint "
        "objective does not.",
    )


def vlora_row(B, A, budget):
    import torch
    from vlora import LoRAWeights, SharedSubspace

    n, d_out, r = B.shape
    d_in = A.shape[2]
    per_component = r * (d_in + d_out)
    # components + means + 2 k loadings per adapter
    k = max(1, int((budget - per_component) // (per_component + 2 * n)))
    adapters = [LoRAWeights(layer_names=["w"], lora_a={"w": torch.tensor(a, dtype=torch.float32)},
                            lora_b={"w": torch.tensor(b, dtype=torch.float32)}, rank=r)
                for b, a in zip(B, A)]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sub = SharedSubspace.from_adapters(adapters, num_components=k)
    seconds = time.perf_counter() - start
    err = num = 0.0
    worst = 0.0
    for i, (b, a) in enumerate(zip(B, A)):
        rec = sub.reconstruct(f"task_{i}")
        D, Dh = b @ a, rec.lora_b["w"].double().numpy() @ rec.lora_a["w"].double().numpy()
        e = np.sum((D - Dh) ** 2)
        err += e
        num += np.sum(D**2)
        worst = max(worst, float(np.sqrt(e / np.sum(D**2))))
    stored = k * per_component + per_component + 2 * k * n
    return [f"vlora-dev {package_version('vlora-dev')} SharedSubspace, k = {k}", stored,
            err / num, worst, seconds]


def clustering(report, quick):
    n = 40 if quick else 100
    B, A, groups = make_lora_collection(n, d_out=256, adapter_rank=8, basis_rank=16, n_groups=2,
                                        return_groups=True, random_state=0)
    from sklearn.metrics import adjusted_rand_score

    t2, comp = timed(lambda: ClusteredJointLoRACompressor(n_clusters=2, rank=16,
                                                          random_state=0).fit((B, A)),
                     repeat=1)
    cos = ClusteredJointLoRACompressor(n_clusters=2, rank=16, affinity="cosine", n_init=1,
                                       random_state=0).fit((B, A))
    t1, single = timed(lambda: JointLoRACompressor(rank=16).fit((B, A)), repeat=1)
    rows = [
        ["adjusted Rand index, k = 2 (subspace affinity)", "1.0",
         adjusted_rand_score(groups, comp.labels_)],
        ["squared error, k = 2, rank 16", "< 1e-10", f"{sq_error(comp, (B, A)):.1e}"],
        ["squared error, k = 1, rank 16", ">= 0.45", sq_error(single, (B, A))],
        ["adjusted Rand index, k = 2, cosine affinity (a signature the paper does not give)", "-",
         adjusted_rand_score(groups, cos.labels_)],
        ["Lloyd iterations / fit s (k = 2)", "-", f"{comp.n_iter_} / {t2:.2f}"],
        ["fit s (k = 1)", "-", t1],
    ]
    report.add_table(f"E2 clustering: two groups of {n // 2} adapters with their own rank-16 "
                     "bases (d = 256)", ["quantity", "target", "measured"], rows)


def peft_check(report):
    try:
        import torch
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import peft
    except ImportError:
        report.add("peft round trip", "peft is not installed; skipped.")
        return

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = torch.nn.Linear(64, 48)
            self.v_proj = torch.nn.Linear(64, 48)

    dicts, configs, deltas = [], [], []
    for i in range(6):
        torch.manual_seed(i)
        config = peft.LoraConfig(r=4, lora_alpha=8 + 4 * i, target_modules=["q_proj", "v_proj"],
                                 init_lora_weights=False, use_rslora=bool(i % 2))
        model = peft.get_peft_model(Net(), config)
        dicts.append(peft.get_peft_model_state_dict(model))
        configs.append(config)
        deltas.append({m: getattr(model.base_model.model, m).get_delta_weight("default")
                       .detach().double().numpy() for m in ("q_proj", "v_proj")})
    start = time.perf_counter()
    comps = compress_peft_collection(dicts, rank=24, adapter_configs=configs)
    seconds = time.perf_counter() - start
    worst = 0.0
    for module in ("q_proj", "v_proj"):
        comp = comps[f"base_model.model.{module}"]
        for i, (bh, ah) in enumerate(comp.inverse_transform(comp.cores_)):
            worst = max(worst, float(np.max(np.abs(bh @ ah - deltas[i][module]))))
    report.add_table(
        f"peft {peft.__version__} round trip: 6 real peft adapters (r = 4, alpha 8..28, "
        "rsLoRA on odd ones), q_proj and v_proj",
        ["quantity", "target", "measured"],
        [["modules compressed", "2", len(comps)],
         ["max abs(peft get_delta_weight - U Sigma_i V^T), rank 24 = sum of ranks", "< 1e-5",
          f"{worst:.1e}"],
         ["compress_peft_collection s", "-", seconds]],
    )


def fit_scale(report, quick):
    n, d = (128, 512) if quick else (1024, 1024)
    B, A = make_lora_collection(n, d_out=d, adapter_rank=16, basis_rank=64, random_state=0)
    start = time.perf_counter()
    comp = JointLoRACompressor(rank=64, max_iter=2, tol=0).fit((B, A))
    seconds = time.perf_counter() - start
    report.add_table(
        f"Fit cost at serving scale: n = {n} rank-16 adapters of {d} x {d}, shared rank 64",
        ["quantity", "measured"],
        [["seconds for the SVD start + up to 2 sweeps + errors", seconds],
         ["squared error (planted rank 64)", f"{sq_error(comp, (B, A)):.1e}"],
         ["compression ratio", comp.compression_ratio_]],
        note="Each sweep forms one d x d Gram matrix per side from the factors "
        "(O(d^2 n r0)); nothing of size d_out x d_in per adapter is formed.",
    )


def e3(report, quick):
    n_list = [1, 16, 256] if quick else [1, 16, 256, 1024]
    repeats = 10 if quick else 50
    n_runs = 1 if quick else 3
    # several whole runs (other processes load this machine): per-run medians, then the
    # median over runs of every figure
    load_before = os.getloadavg()[0]
    runs = [time_multi_lora_forward(1024, 1024, r0=16, rank=64, n_adapters_list=n_list,
                                    batch=64, tokens=8, n_repeats=repeats, n_warmup=5,
                                    n_jobs=1, random_state=run)
            for run in range(n_runs)]
    res = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, list) and key != "n_adapters":
            res[key] = [float(np.median([r[key][i] for r in runs])) for i in range(len(value))]
        elif isinstance(value, float):
            res[key] = float(np.median([r[key] for r in runs]))
    per_run_ratio = ", ".join(f"{r['shared_ratio_to_single'][-1]:.3f}" for r in runs)
    per_run_speedup = ", ".join(f"{r['speedup'][-1]:.3f}" for r in runs)
    rows = []
    for i, n in enumerate(res["n_adapters"]):
        rows.append([n, res["shared_tokens_per_s"][i], res["separate_tokens_per_s"][i],
                     res["speedup"][i], res["shared_ratio_to_single"][i],
                     res["shared_memory_bytes"][i] / 1e6, res["separate_memory_bytes"][i] / 1e6])
    report.add_table(
        f"E3: CPU throughput, one 1024 x 1024 layer with base weight, r0 = 16, shared rank 64, "
        f"{res['settings']['batch']} requests x {res['settings']['tokens']} tokens, "
        f"torch {package_version('torch')}, 1 thread, median of {n_runs} runs x {repeats} calls",
        ["adapters", "shared tok/s", "separate tok/s", "speed-up shared/separate",
         "shared / single-LoRA throughput", "shared MB", "separate MB"],
        rows,
        note=f"Single LoRA applied to the whole batch (the paper's reference): "
        f"{res['single_lora_tokens_per_s']:.0f} tok/s; bare base matmul "
        f"{res['base_tokens_per_s']:.0f} tok/s. Per run at n = {n_list[-1]}: shared / "
        f"single-LoRA ratios {per_run_ratio}; speed-ups {per_run_speedup}. Load average "
        f"(1 min) on this 2-core machine shared with other jobs: {load_before:.1f} before E3, "
        f"{os.getloadavg()[0]:.1f} after.",
    )
    # the other way to batch separate LoRAs: group the requests by adapter
    import torch

    from sklearn_icml.lora import separate_lora_forward

    n_big = n_list[-1]
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(64, 8, 1024, generator=gen)
    A = torch.randn(n_big, 16, 1024, generator=gen) / 32
    B = torch.randn(n_big, 1024, 16, generator=gen) / 4
    W0 = torch.randn(1024, 1024, generator=gen) / 32
    ids = torch.randint(n_big, (64,), generator=gen)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            t_loop, _ = median_time(lambda: separate_lora_forward(
                X, ids, A, B, base_weight=W0, strategy="loop"), repeat=repeats // 2, warmup=3)
            t_gather, _ = median_time(lambda: separate_lora_forward(
                X, ids, A, B, base_weight=W0), repeat=repeats // 2, warmup=3)
    finally:
        torch.set_num_threads(old_threads)
    report.add(
        "E3: separate LoRAs batched by adapter instead of gathered",
        f"At n = {n_big}: strategy='loop' (two small GEMMs per distinct adapter in the batch) "
        f"{512 / t_loop:.0f} tok/s against {512 / t_gather:.0f} tok/s for 'gather' in the same "
        "process (medians); the table above uses 'gather', as E3 does.",
    )
    last = -1
    shared_tp = res["shared_tokens_per_s"]
    spread = (max(shared_tp) - min(shared_tp)) / max(shared_tp)
    n_last = res["n_adapters"][last]
    targets = [
        [f"shared throughput / single-LoRA throughput at n = {n_last}",
         ">= 0.80 (paper: ~80 % at 1000+ LoRAs, GPU vLLM server)",
         res["shared_ratio_to_single"][last]],
        [f"shared / separate speed-up at n = {n_last}", ">= 1.3 (a calibration sketch: 1.44)",
         res["speedup"][last]],
        ["shared-path throughput spread over n", "< 25 %", f"{100 * spread:.1f} %"],
        ["n = 1: shared vs separate within 2x", "ratio in [0.5, 2]", res["speedup"][0]],
        [f"resident memory at n = {n_last}, separate", "134 MB",
         f"{res['separate_memory_bytes'][last] / 1e6:.1f} MB"],
        [f"resident memory at n = {n_last}, shared", "17.3 MB",
         f"{res['shared_memory_bytes'][last] / 1e6:.1f} MB"],
    ]
    report.add_table("E3 targets", ["quantity", "target", "measured"], targets)


def main():
    args = parse_args(__doc__)
    report = Report("lora_joint_compression",
                    "Joint LoRA compression (Compress then Serve, ICML 2025)", quick=args.quick,
                    packages=("numpy", "scipy", "scikit-learn", "torch", "tensorly", "peft",
                              "vlora-dev"))
    start = time.perf_counter()
    e1(report)
    shared = e2(report, args.quick)
    equal_storage(report, shared, args.quick)
    clustering(report, args.quick)
    peft_check(report)
    fit_scale(report, args.quick)
    e3(report, args.quick)
    report.add("Notes", NOTES)
    report.add("Run time", f"{time.perf_counter() - start:.0f} s in all.")
    report.write()


if __name__ == "__main__":
    main()
