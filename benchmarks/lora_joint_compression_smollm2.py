"""Joint LoRA compression of real adapters: SmolLM2-135M, one LoRA per standard-library package.

Twelve peft LoRAs (r = 8 on q_proj / v_proj) are trained on the source of twelve Python
standard-library packages; they are compressed jointly (shared bases, several ranks, full and
diagonal cores) and with clustering; each adapter's held-out next-token loss is measured
before and after compression, with the numbers kept. Serving on CPU: a batch of requests,
each for its own adapter, through the shared basis inside the model (attach_shared_basis)
against peft's own mixed-batch multi-adapter forward (``adapter_names=``) on the same model,
and the throughput at 1, 10, 100 and 1,000 resident adapters (beyond the twelve real ones,
adapters drawn to match their singular-value spectra).

Run: ``python benchmarks/lora_joint_compression_smollm2.py [--quick]`` (one torch thread).
"""

import copy
import statistics
import time

# first: the Flat-LoRA benchmark on the same model sets one thread, the repository on the
# path and quiet warnings; its real-code chunks and held-out loss are used here too
from flat_lora_smollm2 import chunks, mean_nll  # isort: skip

import numpy as np
import torch
from _harness import Report, parse_args

from sklearn_icml.datasets import load_python_source, load_smollm2
from sklearn_icml.lora import attach_shared_basis, compress_peft_collection
from sklearn_icml.lora._causal_lm_net import NextTokenLogProbs

DOMAINS = ["json", "email", "asyncio", "http", "xml", "unittest", "logging", "importlib",
           "urllib", "multiprocessing", "html", "ctypes"]
LENGTH, BATCH = 128, 4
RANK, ALPHA, TARGETS = 8, 16, ["q_proj", "v_proj"]
LR = 2e-3
SERVE_TOKENS, SERVE_BATCH = 32, 16
SERVE_RANK = 32


def domain_data(tokenizer, domains, n_train, n_test):
    sources = load_python_source(domains)
    rng = np.random.default_rng(0)
    data = {}
    for name in domains:
        own = chunks(tokenizer, sources[name], LENGTH)
        cut = int(0.8 * len(own))  # the last fifth of each package's text is held out
        train = own[np.sort(rng.choice(cut, min(n_train, cut), replace=False))]
        test = own[cut + np.sort(rng.choice(len(own) - cut, n_test, replace=False))]
        data[name] = (train, test)
    return data


def train_adapters(lm, data, steps):
    """One peft adapter per domain on one peft model (plain torch + peft loop)."""
    import peft

    config = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=TARGETS,
                             lora_dropout=0.0)
    model = None
    seconds = []
    for i, (name, (train, _)) in enumerate(data.items()):
        torch.manual_seed(i)
        if model is None:
            model = peft.get_peft_model(lm, config, adapter_name=name)
        else:
            model.add_adapter(name, config)
        model.set_adapter(name)
        model.train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LR,
                                weight_decay=0.0)
        start = time.perf_counter()
        for step in range(steps):
            rows = np.arange(step * BATCH, (step + 1) * BATCH) % len(train)
            ids = torch.as_tensor(train[rows])
            opt.zero_grad()
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
        seconds.append(time.perf_counter() - start)
        print(f"trained {name} in {seconds[-1]:.0f} s", flush=True)
    model.eval()
    dicts = {name: {k: v.detach().clone() for k, v in
                    peft.get_peft_model_state_dict(model, adapter_name=name).items()}
             for name in data}
    return model, config, dicts, seconds


def merged_losses(work, data, deltas):
    """Held-out loss of each domain with its (compressed) update added to the base weights."""
    layers = dict(work.named_modules())
    out = []
    for i, (_, test) in enumerate(data.values()):
        saved = {}
        with torch.no_grad():
            for key, per_adapter in deltas.items():
                weight = layers[key].weight
                saved[key] = weight.clone()
                weight.add_(torch.as_tensor(per_adapter[i], dtype=weight.dtype))
        out.append(mean_nll(NextTokenLogProbs(work), test))
        with torch.no_grad():
            for key, weight in saved.items():
                layers[key].weight.copy_(weight)
    return out


def module_name(key):
    return key.replace("base_model.model.", "", 1)


def dense_deltas(comps):
    """{model module name: [dense reconstructed update of each adapter]} from compressors."""
    deltas = {}
    for key, comp in comps.items():
        if hasattr(comp, "labels_"):
            factors = comp.inverse_transform(comp.cores_, comp.labels_)
        else:
            factors = comp.inverse_transform(comp.cores_)
        deltas[module_name(key)] = [b @ a for b, a in factors]
    return deltas


def original_deltas(dicts, config):
    scale = config.lora_alpha / config.r
    keys = sorted({k.rsplit(".lora_", 1)[0] for k in next(iter(dicts.values()))})
    return {module_name(key): [scale * (sd[f"{key}.lora_B.weight"].double()
                                        @ sd[f"{key}.lora_A.weight"].double()).numpy()
                               for sd in dicts.values()] for key in keys}


def spectrum_matched(dicts, config, n_new, seed):
    """Adapters with random directions and the singular values of the real ones (timing)."""
    rng = np.random.default_rng(seed)
    scale = config.lora_alpha / config.r
    real = list(dicts.values())
    keys = sorted({k.rsplit(".lora_", 1)[0] for k in real[0]})
    new = [{} for _ in range(n_new)]
    for key in keys:
        spectra = []
        for sd in real:
            B = scale * sd[f"{key}.lora_B.weight"].double().numpy()
            A = sd[f"{key}.lora_A.weight"].double().numpy()
            # singular values of B A from the two thin QR factors (no d x d product)
            r_b, r_a = np.linalg.qr(B)[1], np.linalg.qr(A.T)[1]
            spectra.append(np.linalg.svd(r_b @ r_a.T, compute_uv=False))
        d_out, d_in = real[0][f"{key}.lora_B.weight"].shape[0], real[0][
            f"{key}.lora_A.weight"].shape[1]
        for j in range(n_new):
            s = spectra[j % len(spectra)]
            P = np.linalg.qr(rng.normal(size=(d_out, RANK)))[0]
            Q = np.linalg.qr(rng.normal(size=(d_in, RANK)))[0]
            new[j][f"{key}.lora_B.weight"] = torch.as_tensor(P * s / scale, dtype=torch.float32)
            new[j][f"{key}.lora_A.weight"] = torch.as_tensor(Q.T, dtype=torch.float32)
    return new


def add_peft_adapters(model, config, new, start):
    """Make the new adapters resident in the peft model (weights copied in directly).

    Each LoRA layer gets the adapter through peft's own ``update_layer``: ``add_adapter``
    walks the whole model once per adapter, which grows with the adapters already resident
    (quadratic over a thousand adapters).
    """
    layers = dict(model.named_modules())
    lora_layers = {name: m for name, m in layers.items()
                   if hasattr(m, "update_layer") and hasattr(m, "lora_A")}
    for j, sd in enumerate(new):
        name = f"drawn{start + j}"
        model.peft_config[name] = config
        for layer in lora_layers.values():
            layer.update_layer(name, config.r, config.lora_alpha, config)
        with torch.no_grad():
            for key, value in sd.items():
                module, which = key.rsplit(".lora_", 1)
                getattr(layers[module], f"lora_{which[0]}")[name].weight.copy_(value)
    model.eval()


def cores_for(comps, dicts_all):
    """Cores of every adapter (real ones from the fit, drawn ones projected on the basis)."""
    cores = {}
    n_real = next(iter(comps.values())).n_adapters_
    for key, comp in comps.items():
        extra = [(d[f"{key}.lora_B.weight"].double().numpy() * (ALPHA / RANK),
                  d[f"{key}.lora_A.weight"].double().numpy()) for d in dicts_all[n_real:]]
        parts = [comp.cores_] + ([comp.transform(extra)] if extra else [])
        cores[key] = np.concatenate(parts)
    return cores


def time_calls(calls, repeats):
    """Median seconds of each call, interleaved, after one warm-up of each."""
    times = {name: [] for name in calls}
    with torch.inference_mode():
        for k in range(repeats + 1):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                if k:
                    times[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in times.items()}


def main(argv=None):
    args = parse_args(__doc__.splitlines()[0], argv)
    quick = args.quick
    domains = DOMAINS[:4] if quick else DOMAINS
    steps = 1 if quick else 8
    n_test = 2 if quick else 6
    ranks = [8, SERVE_RANK] if quick else [8, 16, SERVE_RANK, 64]
    curve = [1, 3, 20] if quick else [1, 10, 100, 1000]
    repeats = 1 if quick else 5
    rep = Report("lora_joint_compression_smollm2",
                 "Joint LoRA compression (Compress then Serve, ICML 2025) of real SmolLM2 "
                 "adapters", quick=quick,
                 packages=("numpy", "scipy", "torch", "transformers", "peft"))
    start_all = time.perf_counter()
    lm, tokenizer = load_smollm2()
    lm.eval()
    base = copy.deepcopy(lm)  # the untouched base model (peft wraps `lm` in place)
    data = domain_data(tokenizer, domains, steps * BATCH, n_test)
    rep.add("Set-up", (
        f"SmolLM2-135M-Instruct (float32, load_smollm2). {len(domains)} peft LoRAs, r={RANK}, "
        f"alpha={ALPHA}, on {'/'.join(TARGETS)} of the 30 layers (60 weight positions), one "
        f"per standard-library package ({', '.join(domains)}), each trained {steps} AdamW "
        f"steps (lr {LR}) on batches of {BATCH} x {LENGTH} tokens of its package's source "
        "(a plain torch + peft loop); held out: "
        f"{n_test} sequences of {LENGTH} tokens from the last fifth of each package. Loss = "
        "mean next-token loss in nats per token; a compressed adapter is evaluated with its "
        "reconstructed update U Sigma_i V^T added to the base weights. One torch thread on "
        "a 2-core machine shared with other jobs: seconds are noisy; ratios are measured "
        "within this run. CPU budget: about 15 minutes on one core."))

    model, config, dicts, train_s = train_adapters(lm, data, steps)
    names = list(data)
    work = copy.deepcopy(base)
    base_loss = merged_losses(work, data, {})
    orig = original_deltas(dicts, config)
    lora_loss = merged_losses(work, data, orig)
    original_numbers = sum(len(v) * RANK * sum(v[0].shape) for v in orig.values())

    configs = [(f"joint full, rank {r}", dict(rank=r)) for r in ranks]
    configs.append((f"joint diag, rank {ranks[-1]}", dict(rank=ranks[-1], core="diag")))
    configs.append(("clustered k=3, full, rank 16", dict(rank=16, n_clusters=3, n_init=2,
                                                         random_state=0)))
    dict_list = [dicts[n] for n in names]
    results = {}
    for label, kw in configs:
        start = time.perf_counter()
        comps = compress_peft_collection(dict_list, adapter_configs=[config] * len(names),
                                         **kw)
        fit_s = time.perf_counter() - start
        deltas = dense_deltas(comps)
        losses = merged_losses(work, data, deltas)
        kept = sum(c.n_parameters_ for c in comps.values())
        sq = float(np.mean([1 - c.score(
            [(dict_list[i][f"{k}.lora_B.weight"].double().numpy() * (ALPHA / RANK),
              dict_list[i][f"{k}.lora_A.weight"].double().numpy())
             for i in range(len(names))]) for k, c in comps.items()]))
        results[label] = dict(losses=losses, kept=kept, fit_s=fit_s, sq=sq, comps=comps)
        print(label, [round(x, 4) for x in losses], kept, flush=True)

    gain = np.array(base_loss) - np.array(lora_loss)
    rows = []
    for i, name in enumerate(names):
        row = [name, f"{base_loss[i]:.4f}", f"{lora_loss[i]:.4f}"]
        row += [f"{results[label]['losses'][i]:.4f}" for label, _ in configs]
        rows.append(row)
    rows.append(["mean", f"{np.mean(base_loss):.4f}", f"{np.mean(lora_loss):.4f}",
                 *[f"{np.mean(results[label]['losses']):.4f}" for label, _ in configs]])
    rep.add_table(
        "Held-out loss per adapter (nats/token): base model, the trained LoRA, and the LoRA "
        "after compression",
        ["package", "base model", "LoRA", *[label for label, _ in configs]], rows)

    sum_rows = []
    for label, _ in configs:
        r = results[label]
        kept_gain = np.array(base_loss) - np.array(r["losses"])
        frac = float(np.sum(kept_gain) / np.sum(gain)) if np.sum(gain) > 0 else float("nan")
        worst = float(np.max(np.array(r["losses"]) - np.array(lora_loss)))
        sum_rows.append([label, r["kept"], f"{original_numbers / r['kept']:.2f}",
                         f"{r['sq']:.3f}", f"{frac:.3f}", f"{worst:+.4f}", f"{r['fit_s']:.1f}"])
    rep.add_table(
        "Compression: numbers kept, reconstruction error and the share of the fine-tuning gain "
        "kept",
        ["compression", "numbers kept", "compression ratio", "squared relative error (mean "
         "over positions)", "share of the LoRA gain kept (sum over adapters)",
         "worst loss increase over the LoRA", "fit s (60 positions)"], sum_rows,
        note=f"The {len(names)} uncompressed LoRAs store {original_numbers} numbers; the LoRA "
        f"gain is base loss minus LoRA loss (mean {np.mean(gain):.4f} nats/token; its smallest "
        f"value {np.min(gain):.4f}). The paper's claim is that compression preserves "
        "performance: a share near 1.")

    # serving: a batch of requests, each for its own adapter
    serve_comps = results[f"joint full, rank {SERVE_RANK}"]["comps"]
    served = attach_shared_basis(copy.deepcopy(base), serve_comps)
    prompts = np.concatenate([test[:, :SERVE_TOKENS] for _, test in data.values()])
    ids12 = torch.as_tensor(prompts[: len(names)])
    own = list(range(len(names)))
    with torch.inference_mode():
        shared_out = served(input_ids=ids12, adapter_ids=own).logits
        peft_out = model(input_ids=ids12, adapter_names=names).logits
    scale = float(peft_out.abs().max())
    agree = float((shared_out - peft_out).abs().max()) / scale
    t12 = time_calls({
        "shared basis": lambda: served(input_ids=ids12, adapter_ids=own),
        "peft adapter_names": lambda: model(input_ids=ids12, adapter_names=names),
    }, repeats)
    rep.add_table(
        f"Serving {len(names)} requests of {SERVE_TOKENS} tokens, each for a different real "
        f"adapter (forward pass, rank-{SERVE_RANK} shared basis)",
        ["path", "requests / s", "ratio to peft"],
        [[k, f"{len(names) / v:.2f}", f"{t12['peft adapter_names'] / v:.3f}"]
         for k, v in t12.items()],
        note=f"Max |logits difference| shared basis vs peft, relative to max |logit|: "
        f"{agree:.3f} (the rank-{SERVE_RANK} basis approximates the adapters; the two paths "
        "compute the same thing when the rank is exact, which the tests check).")

    # throughput curve over the number of resident adapters
    drawn = spectrum_matched(dicts, config, max(curve) - len(names), seed=0)
    all_dicts = dict_list + drawn
    rng = np.random.default_rng(1)
    batch_ids = torch.as_tensor(np.tile(prompts, (2, 1))[:SERVE_BATCH])
    resident = len(names)
    curve_rows = []
    ratio_1000 = speedup_1000 = None
    for n in curve:
        if n > resident:
            add_peft_adapters(model, config, drawn[resident - len(names): n - len(names)],
                              resident - len(names))
            resident = n
        names_all = names + [f"drawn{j}" for j in range(max(0, n - len(names)))]
        comps_cores = cores_for(serve_comps, all_dicts[:max(n, len(names))])
        served = attach_shared_basis(served, serve_comps, cores=comps_cores)
        req = rng.integers(n, size=SERVE_BATCH)
        req_names = [names_all[i] for i in req]
        model.set_adapter(names[0])
        t = time_calls({
            "single": lambda: model(input_ids=batch_ids),
            "shared": lambda req=req, served=served: served(input_ids=batch_ids, adapter_ids=req),
            "peft": lambda req_names=req_names: model(input_ids=batch_ids,
                                                      adapter_names=req_names),
            "base": lambda: base(input_ids=batch_ids),
        }, repeats)
        single = SERVE_BATCH / t["single"]
        row = [n, resident, len(set(req.tolist())), f"{SERVE_BATCH / t['base']:.2f}",
               f"{single:.2f}", f"{SERVE_BATCH / t['shared']:.2f}",
               f"{SERVE_BATCH / t['peft']:.2f}", f"{t['single'] / t['shared']:.3f}",
               f"{t['single'] / t['peft']:.3f}", f"{t['peft'] / t['shared']:.3f}"]
        curve_rows.append(row)
        if n == max(curve):
            ratio_1000 = t["single"] / t["shared"]
            speedup_1000 = t["peft"] / t["shared"]
        print(row, flush=True)
    # float64 in the compressors, float32 when served: half the bytes
    mem_shared = sum(u.nbytes for c in serve_comps.values() for u in (c.U_, c.V_)) / 2 + sum(
        v.nbytes for v in cores_for(serve_comps, all_dicts[:max(curve)]).values()) / 2
    mem_peft = max(curve) * original_numbers / len(names) * 4
    rep.add_table(
        f"Throughput against the number of adapters: {SERVE_BATCH} requests x {SERVE_TOKENS} "
        f"tokens, adapters drawn uniformly from n; requests / s (median of {repeats})",
        ["adapters n", "peft resident", "distinct in batch", "base model", "single LoRA "
         "(peft, one adapter for all)", "shared basis", "peft adapter_names",
         "shared / single", "peft / single", "shared / peft"], curve_rows,
        note=f"Beyond the {len(names)} real adapters, adapters are drawn to match their "
        "spectra (random orthonormal directions with the singular values of a real "
        "adapter); for the shared basis they are projected onto the basis fitted on the "
        f"real {len(names)} (transform, no refit), which is enough for timing, not for quality. "
        f"Resident adapter weights at n = {max(curve)} in float32: shared basis "
        f"{mem_shared / 1e6:.1f} MB, peft {mem_peft / 1e6:.1f} MB.")
    targets = [
        [f"shared-basis throughput / single LoRA at n = {max(curve)}", ">= 0.80 (paper: ~80 %"
         " at 1000+ LoRAs, GPU server)", f"{ratio_1000:.3f}",
         "met" if ratio_1000 >= 0.8 else "MISSED"],
        [f"shared basis / peft multi-adapter throughput at n = {max(curve)}", "> 1",
         f"{speedup_1000:.3f}", "met" if speedup_1000 > 1 else "MISSED"],
        [f"shared basis / peft, {len(names)} real adapters, one per request", "> 1",
         f"{t12['peft adapter_names'] / t12['shared basis']:.3f}",
         "met" if t12["peft adapter_names"] > t12["shared basis"] else "MISSED"],
        ["LoRAs trained on distinct real domains", ">= 12", len(names),
         "met" if len(names) >= 12 else "MISSED"],
    ]
    for label, _ in configs:
        r = results[label]
        frac = float(np.sum(np.array(base_loss) - np.array(r["losses"])) / np.sum(gain))
        targets.append([f"share of the LoRA gain kept, {label}", "~1 (paper: performance "
                        "preserved)", f"{frac:.3f}", "-"])
    rep.add_table("Targets against the measurements", ["quantity", "target", "measured",
                                                       "verdict"], targets)
    shares = {label: float(np.sum(np.array(base_loss) - np.array(results[label]["losses"]))
                           / np.sum(gain)) for label, _ in configs}
    enough = [label for label, _ in configs if shares[label] >= 0.9]
    rep.add("What this scale allows to conclude", (
        f"{len(names)} adapters of {steps} steps each lower the held-out loss by "
        f"{np.mean(gain):.4f} nats/token on average (from {np.min(gain):.4f} to "
        f"{np.max(gain):.4f}): real but small adapters of a 135M model, trained on unrelated "
        "packages. Compressions keeping at least 90 % of that gain: "
        f"{', '.join(enough) if enough else 'none'}. The serving figures are forward passes "
        f"of {SERVE_TOKENS}-token prompts on one CPU thread, where the base model's matrix "
        "products dominate the time; what the shared basis removes is peft's loop over the "
        "adapters of a batch and the memory of resident adapters, not the GPU kernel "
        "launches of the paper's vLLM server, so the ratios here say nothing about GPU "
        "serving."))
    rep.add("Run time", f"{time.perf_counter() - start_all:.0f} s in all (training "
            f"{sum(train_s):.0f} s).")
    rep.write()


if __name__ == "__main__":
    main()
