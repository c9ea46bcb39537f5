"""Flat-LoRA on a real pretrained model: SmolLM2-135M-Instruct fine-tuned on real Python code.

LoRA against Flat-LoRA (the library's FlatLoRACallback on peft LoRA layers, trained through
skorch) on next-token prediction of the standard library's ``email`` package; tested on
held-out ``email`` text (in-domain) and on the ``asyncio`` and ``json`` packages
(out-of-domain); several seeds; the full-space sharpness the library measures
(FlatLoRAPerturbation.expected_sharpness). Also the library's own overhead: a training step
through skorch + FlatLoRACallback against a plain PyTorch + peft loop on the same model and
batches.

Run: ``python benchmarks/flat_lora_smollm2.py [--quick]`` (one torch thread; the model is
read from the data home, ``SKLEARN_ICML_DATA``, converted there once if missing).
"""

import copy
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _harness import Report, parse_args  # noqa: E402

from sklearn_icml.datasets import load_python_source, load_smollm2  # noqa: E402
from sklearn_icml.lora import FlatLoRACallback, FlatLoRAPerturbation  # noqa: E402
from sklearn_icml.lora._causal_lm_net import MeanTokenNLL, NextTokenLogProbs  # noqa: E402
from sklearn_icml.utils._causal_lm import encode_texts  # noqa: E402

torch.set_num_threads(1)
warnings.filterwarnings("ignore")

TRAIN, OOD = "email", ("asyncio", "json")
LENGTH = 128  # tokens per sequence
BATCH = 4
RANK, ALPHA, TARGETS = 8, 16, ["q_proj", "v_proj"]
LR = 1e-3
RHO = 0.05  # the paper's default strength
PROBE_RHO = 0.05  # sharpness probe, at the full scale (c = 1)


def chunks(tokenizer, texts, length):
    """Consecutive ``length``-token pieces of the package's files (files joined in order)."""
    ids = [t for seq in encode_texts(tokenizer, texts, max_length=10**9, add_eos=True)
           for t in seq]
    n = len(ids) // length
    return np.asarray(ids[: n * length], dtype=np.int64).reshape(n, length)


def make_data(tokenizer, n_train, n_test):
    sources = load_python_source([TRAIN, *OOD])
    own = chunks(tokenizer, sources[TRAIN], LENGTH)
    cut = int(0.8 * len(own))  # the last fifth of the package's text is held out
    rng = np.random.default_rng(0)  # the data are fixed; the seeds vary the training only
    data = {
        "train": own[np.sort(rng.choice(cut, n_train, replace=False))],
        f"{TRAIN} (in-domain)": own[cut + np.sort(rng.choice(len(own) - cut, n_test,
                                                             replace=False))],
    }
    for name in OOD:
        other = chunks(tokenizer, sources[name], LENGTH)
        data[f"{name} (out-of-domain)"] = other[np.sort(rng.choice(len(other), n_test,
                                                                   replace=False))]
    data["sizes"] = {TRAIN: len(own), **{name: None for name in OOD}}
    return data


def peft_model(lm, seed):
    import peft

    torch.manual_seed(seed)
    config = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=TARGETS, lora_dropout=0.0)
    return peft.get_peft_model(copy.deepcopy(lm), config)


def mean_nll(module, X, batch=8):
    module.eval()
    total = count = 0.0
    with torch.no_grad():
        for start in range(0, len(X), batch):
            out = module(torch.as_tensor(X[start:start + batch]))
            total -= float(out[:, 0].sum())
            count += float(out[:, 1].sum())
    return total / count


def library_net(model, rho, seed, max_epochs=1):
    import skorch

    return skorch.NeuralNet(
        NextTokenLogProbs(model), criterion=MeanTokenNLL, optimizer=torch.optim.AdamW,
        optimizer__weight_decay=0.0, lr=LR, batch_size=BATCH, max_epochs=max_epochs,
        train_split=None, verbose=0, iterator_train__shuffle=True,
        callbacks=[("flat_lora", FlatLoRACallback(rho=rho, random_state=seed))],
    )


def fit_library(lm, X, rho, seed):
    model = peft_model(lm, seed)
    net = library_net(model, rho, seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)  # skorch's shuffling draws from torch's global generator
        start = time.perf_counter()
        net.fit(X, np.zeros(len(X), dtype=np.float32))
        seconds = time.perf_counter() - start
    return net, seconds


def sharpness(module, X, draws):
    """E[L(W' + eps)] - L(W'), filter-wise noise at rho = PROBE_RHO, the same draws for all."""
    probe = FlatLoRAPerturbation(rho=PROBE_RHO, random_state=123)
    return probe.expected_sharpness(module, lambda out, y: MeanTokenNLL()(out),
                                    (torch.as_tensor(X), None), n_samples=draws)


def experiment(lm, data, seeds, draws):
    evals = [k for k in data if k not in ("train", "sizes")]
    probe_X = data["train"][:BATCH]
    results = {}
    for name, rho in (("LoRA", 0.0), (f"Flat-LoRA rho {RHO}", RHO)):
        runs = []
        for seed in seeds:
            net, seconds = fit_library(lm, data["train"], rho, seed)
            module = net.module_
            row = {k: mean_nll(module, data[k]) for k in evals}
            row["train"] = mean_nll(module, probe_X)
            row["sharp"] = sharpness(module, probe_X, draws)
            row["time"] = seconds
            row["perturb"] = dict(net.callbacks_)["flat_lora"].flat_lora_.n_perturb_calls_
            runs.append(row)
            print(name, seed, {k: round(v, 4) for k, v in row.items()}, flush=True)
            del net, module
        results[name] = runs
    return evals, results


def overhead(lm, X, n_steps, repeats):
    """Seconds per step: plain torch + peft loop; skorch + callback at rho 0 and at RHO."""
    import peft  # noqa: F401

    X = X[: n_steps * BATCH]

    def plain():
        model = peft_model(lm, 0)
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LR,
                                weight_decay=0.0)
        model.train()
        start = time.perf_counter()
        for i in range(0, len(X), BATCH):
            ids = torch.as_tensor(X[i:i + BATCH])
            opt.zero_grad()
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
        return (time.perf_counter() - start) / n_steps

    def library(rho):
        def run():
            _, seconds = fit_library(lm, X, rho, 0)
            return seconds / n_steps
        return run

    paths = {"plain torch + peft loop (LoRA)": plain,
             "library: skorch + FlatLoRACallback, rho 0 (LoRA)": library(0.0),
             f"library: skorch + FlatLoRACallback, rho {RHO} (Flat-LoRA)": library(RHO)}
    times = {name: [] for name in paths}
    for _ in range(repeats):  # interleaved, so that the machine's load hits all alike
        for name, run in paths.items():
            times[name].append(run())
    return {name: statistics.median(v) for name, v in times.items()}


def mean_sd(values):
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.4f} ({sd:.4f})"


def main(argv=None):
    args = parse_args(__doc__.splitlines()[0], argv)
    quick = args.quick
    seeds = [0, 1] if quick else [0, 1, 2]
    n_train = 8 * BATCH if quick else 40 * BATCH
    n_test = 4 if quick else 12
    draws = 4 if quick else 16
    rep = Report("flat_lora_smollm2", "Flat-LoRA (ICML 2025) on SmolLM2-135M: real code domains",
                 quick=quick, packages=("numpy", "torch", "transformers", "peft", "skorch"))
    start_all = time.perf_counter()
    lm, tokenizer = load_smollm2()
    lm.eval()
    data = make_data(tokenizer, n_train, n_test)
    n_steps = n_train // BATCH
    rep.add("Set-up", (
        f"SmolLM2-135M-Instruct (134.5M parameters, float32, load_smollm2), peft LoRA r={RANK}, "
        f"alpha={ALPHA} on {'/'.join(TARGETS)} of all 30 layers (60 layers, 1.6M trainable "
        f"parameters), AdamW lr {LR}, no weight decay, batch {BATCH} x {LENGTH} tokens, "
        f"{n_steps} steps (one pass over {n_train} sequences of the `{TRAIN}` package's "
        f"source), seeds {seeds} (LoRA initialisation, shuffling, noise; the data are fixed). "
        f"Flat-LoRA: rho {RHO} (the paper's default), cosine ramp over the {n_steps} steps, "
        "noise on the frozen q/v weights, one draw per step, restored by regeneration; "
        "trained through skorch's NeuralNet with the library's FlatLoRACallback. "
        f"Tests: {n_test} held-out sequences of {LENGTH} tokens each from the last fifth of "
        f"`{TRAIN}` (in-domain) and from `{'`, `'.join(OOD)}` (out-of-domain); mean "
        "next-token loss in nats per token. Sharpness: expected_sharpness, the mean loss "
        f"increase under the filter-wise noise at rho {PROBE_RHO} (c = 1), {draws} draws, "
        f"on {BATCH} training sequences, the same draws for every model. One torch thread; "
        "the 2-core machine is shared with other jobs, so seconds are noisy and only ratios "
        "measured in this run are compared. CPU budget: about 15-20 minutes on one core "
        "for the whole script."))

    base = NextTokenLogProbs(lm)
    evals = [k for k in data if k not in ("train", "sizes")]
    base_row = {k: mean_nll(base, data[k]) for k in evals}
    base_row["train"] = mean_nll(base, data["train"][:BATCH])
    evals, res = experiment(lm, data, seeds, draws)

    rows = [["base model (no fine-tuning)", "-", *[f"{base_row[k]:.4f}" for k in evals],
             f"{base_row['train']:.4f}", "-", "-"]]
    for name, runs in res.items():
        rows.append([name, len(runs), *[mean_sd([r[k] for r in runs]) for k in evals],
                     mean_sd([r["train"] for r in runs]),
                     f"{statistics.mean(r['sharp'] for r in runs):.2e} "
                     f"({statistics.stdev(r['sharp'] for r in runs) if len(runs) > 1 else 0:.1e})",
                     f"{statistics.mean(r['time'] for r in runs):.0f}"])
    rep.add_table(
        "LoRA against Flat-LoRA: held-out next-token loss (nats/token, mean (sd) over seeds)",
        ["method", "seeds", *evals, "train loss (probe batch)",
         f"sharpness, rho {PROBE_RHO}", "fit s"], rows)

    lora, flat = res["LoRA"], res[f"Flat-LoRA rho {RHO}"]
    diff_rows = []
    verdicts = []
    for k in [*evals, "train", "sharp"]:
        d = [a[k] - b[k] for a, b in zip(flat, lora)]
        m = statistics.mean(d)
        sd = statistics.stdev(d) if len(d) > 1 else 0.0
        se = sd / len(d) ** 0.5
        label = "sharpness" if k == "sharp" else k
        diff_rows.append([label, f"{m:+.2e}" if k == "sharp" else f"{m:+.4f}",
                          f"{sd:.2e}" if k == "sharp" else f"{sd:.4f}",
                          sum(x < 0 for x in d), len(d)])
        if k in evals:
            verdicts.append((k, m, se))
    rep.add_table(
        "Paired differences Flat-LoRA minus LoRA (same seed; negative = Flat-LoRA lower)",
        ["quantity", "mean difference", "sd over seeds", "seeds where Flat-LoRA is lower",
         "seeds"], diff_rows)

    ratio_sharp = (statistics.mean(r["sharp"] for r in flat)
                   / statistics.mean(r["sharp"] for r in lora))
    time_ratio = (statistics.mean(r["time"] for r in flat)
                  / statistics.mean(r["time"] for r in lora))
    per_step = overhead(lm, data["train"], 2 if quick else 6, 1 if quick else 2)
    plain = per_step["plain torch + peft loop (LoRA)"]
    over_rows = [[name, f"{s:.3f}", f"{s / plain:.3f}"] for name, s in per_step.items()]
    rep.add_table(
        f"The library's own overhead: seconds per training step (batch {BATCH} x {LENGTH} "
        "tokens, same model and batches; median of interleaved repeats)",
        ["path", "s / step", "ratio to the plain loop"], over_rows,
        note="The plain loop is the textbook one (peft model, AdamW, the model's own "
        "`labels=` loss); the library's path is skorch's NeuralNet fit with the "
        "NextTokenLogProbs module, the MeanTokenNLL criterion and FlatLoRACallback.")

    lib_lora = per_step["library: skorch + FlatLoRACallback, rho 0 (LoRA)"]
    lib_flat = per_step[f"library: skorch + FlatLoRACallback, rho {RHO} (Flat-LoRA)"]
    targets = [
        ["library training step / plain torch + peft step (LoRA, the same work)", "<= 1.1",
         f"{lib_lora / plain:.3f}", "met" if lib_lora / plain <= 1.1 else "MISSED"],
        ["library Flat-LoRA step / plain torch + peft LoRA step", "<= 1.1 (paper: Flat-LoRA "
         "costs about what LoRA costs)", f"{lib_flat / plain:.3f}",
         "met" if lib_flat / plain <= 1.1 else "MISSED"],
        ["Flat-LoRA / LoRA wall time of the whole fits above", "~1 (paper)",
         f"{time_ratio:.3f}", "-"],
        [f"sharpness ratio Flat-LoRA / LoRA (seed means, rho {PROBE_RHO})",
         "< 1 is the paper's claim (flatter)", f"{ratio_sharp:.3f}", "-"],
        ["seeds", ">= 3", len(seeds), "met" if len(seeds) >= 3 else "MISSED"],
    ]
    for k, m, se in verdicts:
        targets.append([f"{k}: Flat-LoRA minus LoRA loss", "< 0 is the paper's claim",
                        f"{m:+.4f} (se {se:.4f})",
                        "within noise" if abs(m) <= 2 * se else
                        ("Flat-LoRA better" if m < 0 else "Flat-LoRA worse")])
    rep.add_table("Targets and claims against the measurements",
                  ["quantity", "target / claim", "measured", "verdict"], targets)

    rep.add("What this scale allows to conclude", (
        f"{len(seeds)} seeds x {n_steps} steps of {BATCH * LENGTH} tokens on a 135M-parameter "
        "model is a small fraction of the paper's runs (7B models, thousands of steps). "
        "With the cosine ramp, the noise reaches its full strength only at the end of so "
        "short a run. A difference is called real above only when it exceeds two standard "
        f"errors of the paired seed differences; with {len(seeds)} seeds that is a coarse "
        "test, so a 'within noise' verdict means 'no effect detectable at this scale', not "
        f"'no effect'. The {len(evals)} test sets, the sharpness probe and the timing are "
        "measured on the same "
        "fitted models in one run."))
    rep.add("Run time", f"{time.perf_counter() - start_all:.0f} s in all.")
    rep.write()


if __name__ == "__main__":
    main()
