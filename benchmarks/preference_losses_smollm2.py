"""Offline preference losses on a real pretrained model: LoRA of SmolLM2-135M on HumanEval.

Run: python benchmarks/preference_losses_smollm2.py [--quick]

Pairs whose preference is verified: for a HumanEval problem, the canonical solution (passes
the problem's tests) is preferred to SmolLM2-135M-Instruct's greedy completion of the prompt
when that completion FAILS the tests (both run in a child process with a timeout). Greedy
completions are cached in the data home, so only the first run generates them. Problems are
split into a training and a held-out set (no problem in both).

For every loss of PREFERENCE_LOSSES (normaliser: the reference model), and for DPO
without a normaliser, PreferenceLMTrainer trains a LoRA (r = 8 on q/v) for the same number
of Adam steps. Measured: held-out preference accuracy of the implicit reward (the margin
h > 0), held-out chosen and rejected log-likelihood shifts, KL from the reference model per
completion token (exact over the vocabulary, along the held-out responses), and the margin
and rejected log-likelihood on the training pairs after each epoch (deterministic
preferences: the logistic loss has no finite minimiser, the squared loss does). Peer: trl's
DPO/IPO/hinge losses on the same batch of SmolLM2 log-probabilities. Overhead: one training
step through the estimator against a plain PyTorch + peft loop on the same model and batch.
"""

import collections
import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from _harness import Report, Target, package_version, parse_args
from _preference_losses_smollm2_helpers import (
    check_completion,
    greedy_completions,
    heldout_metrics,
)

from sklearn_icml.alignment import (
    PreferenceLMTrainer,
    hinge_loss,
    logistic_loss,
    preference_margin,
    squared_loss,
)
from sklearn_icml.alignment._hf_lm import with_lora
from sklearn_icml.datasets import load_humaneval, load_smollm2
from sklearn_icml.utils import draw_seed
from sklearn_icml.utils._causal_lm import completion_log_probs, pad_batch
from sklearn_icml.utils._training import seeded_torch

torch.set_num_threads(1)

MAX_LENGTH = 256  # prompt + completion, tokens
MAX_NEW_TOKENS = 128
LORA = {"lora_rank": 8, "lora_alpha": 16.0, "lora_target_modules": ("q_proj", "v_proj")}
SCALES = {"beta": 0.1, "tau": 0.1, "delta": 1.0}  # DPO's beta, IPO's tau, SLiC's delta
# sizes: what one core allows in about 20 minutes (a step on 2 pairs takes seconds)
N_PROBLEMS, N_TRAIN, N_TEST, EPOCHS, BATCH_SIZE = 32, 8, 16, 3, 2
RUNS = [  # (label, loss, normaliser)
    ("DPO (logistic)", "logistic", "reference"),
    ("IPO (squared)", "squared", "reference"),
    ("SLiC (hinge)", "hinge", "reference"),
    ("GPO exponential", "exponential", "reference"),
    ("GPO truncated quadratic", "truncated_quadratic", "reference"),
    ("GPO savage", "savage", "reference"),
    ("DPO, no normaliser", "logistic", "none"),
]


def build_pairs(model, tokenizer, n_problems):
    problems = load_humaneval()
    fits = [
        p for p in problems
        if len(tokenizer.encode(p.prompt)) <= MAX_LENGTH - MAX_NEW_TOKENS
        and len(tokenizer.encode(p.prompt + p.canonical_solution)) <= MAX_LENGTH
    ][:n_problems]
    completions, spent_now, spent_once = greedy_completions(
        model, tokenizer, fits, max_new_tokens=MAX_NEW_TOKENS)
    pairs, reasons, runner, n_pass, check_s = [], collections.Counter(), None, 0, 0.0
    for p in fits:
        start = time.perf_counter()
        ok_canonical, _, runner = check_completion(p, p.canonical_solution)
        ok_model, reason, _ = check_completion(p, completions[p.task_id])
        check_s += time.perf_counter() - start
        n_pass += ok_model
        if ok_model or not ok_canonical:
            continue
        reasons[reason.split(":")[0]] += 1
        text = completions[p.task_id]
        n_tokens = len(tokenizer.encode(p.prompt)) + len(tokenizer.encode(text))
        if text.strip() and n_tokens <= MAX_LENGTH:
            pairs.append((p.task_id, p.prompt, p.canonical_solution, text))
    facts = {"problems": len(fits), "model passes": n_pass, "pairs": len(pairs),
             "generation s (now)": spent_now, "generation s (first run)": spent_once,
             "checks s": check_s, "runner": runner, "reasons": reasons}
    return pairs, facts


def split(pairs, n_train, n_test, seed=0):
    """Training and held-out pairs of distinct problems (one pair per problem)."""
    order = np.random.default_rng(seed).permutation(len(pairs))
    test = [pairs[i] for i in sorted(order[:n_test])]
    train = [pairs[i] for i in sorted(order[n_test : n_test + n_train])]
    return train, test


def columns(pairs):
    return [p[1] for p in pairs], [p[2] for p in pairs], [p[3] for p in pairs]


def train_one(model, tokenizer, train, loss, normalizer, *, epochs, batch_size, lr):
    trainer = PreferenceLMTrainer(
        module=model, tokenizer=tokenizer, loss=loss, normalizer=normalizer, **SCALES, **LORA,
        max_length=MAX_LENGTH, learning_rate=lr, max_epochs=epochs, batch_size=batch_size,
        random_state=0,
    )
    start = time.perf_counter()
    trainer.fit(*columns(train))
    return trainer, time.perf_counter() - start


def losses_table(report, model, tokenizer, train, test, args):
    epochs, batch_size, lr = (1, 2, 1e-3) if args.quick else (EPOCHS, BATCH_SIZE, 1e-3)
    steps = epochs * -(-len(train) // batch_size)
    rows, det_rows, results = [], [], {}
    base = None
    for label, loss, normalizer in RUNS[:2] if args.quick else RUNS:
        trainer, seconds = train_one(model, tokenizer, train, loss, normalizer,
                                     epochs=epochs, batch_size=batch_size, lr=lr)
        m = heldout_metrics(trainer, *columns(test))
        if base is None:
            base = m
            rows.append(["reference model (before training)", "-",
                         f"{np.mean(m['ref_w'] > m['ref_l']):.2f}", "-", "0", "0", "0", "-"])
        acc = float(np.mean(m["h"] > 0))
        results[label] = acc
        rows.append([
            label, normalizer, f"{np.mean(m['pol_w'] > m['pol_l']):.2f}", f"{acc:.2f}",
            f"{np.mean(m['pol_w'] - m['ref_w']):+.2f}", f"{np.mean(m['pol_l'] - m['ref_l']):+.2f}",
            f"{m['kl_per_token']:.4f}", f"{seconds:.0f}",
        ])
        hist = trainer.history_
        det_rows.append([
            label, " / ".join(f"{v:.2f}" for v in hist[:, "margin"]),
            " / ".join(f"{v:.1f}" for v in hist[:, "logp_rejected"]),
            " / ".join(f"{v:.1f}" for v in hist[:, "logp_chosen"]),
        ])
        print(rows[-1], det_rows[-1], flush=True)
        del trainer
        gc.collect()
    n_tr, n_te = len(train), len(test)
    report.add_table(
        f"E4 Held-out pairs ({n_te} problems never trained on): preference accuracy and "
        f"likelihood shifts after {steps} Adam steps ({epochs} epochs x {batch_size} pairs, "
        f"learning rate {lr}) on {n_tr} training pairs",
        ["run", "normaliser", "accuracy of log pi(w) > log pi(l)",
         "accuracy of the implicit reward (h > 0)", "shift of log pi(chosen)",
         "shift of log pi(rejected)", "KL(pi || pi_ref) per token", "fit s"], rows,
        note="Shifts are mean changes of the sequence log-likelihood (nats) from the "
        "reference model on the held-out responses; the KL is exact over the vocabulary "
        "at every completion token of the held-out chosen and rejected responses, averaged "
        "over tokens. The implicit reward's margin h is the normalised log-likelihood "
        "margin of the run's normaliser (with none, the raw margin). beta = 0.1 (logistic "
        "and GPO), tau = 0.1 (squared: target margin 1 / (2 tau) = 5), delta = 1 (hinge). "
        "Accuracy on a held-out set of this size moves in steps of "
        f"{1 / n_te:.3f}.")
    report.add_table(
        "E5 Training pairs, deterministic preferences: per-epoch means of the margin h "
        "(oriented to the label) and of the sequence log-likelihoods",
        ["run", "margin h per epoch", "log pi(rejected) per epoch",
         "log pi(chosen) per epoch"], det_rows,
        note="Every label is 1 (a failing completion never beats the canonical solution), "
        "the case where the paper's analysis says the logistic loss (and the exponential "
        "and Savage losses) has no finite minimiser, so that its margins and the rejected "
        "log-likelihoods are pushed without bound, while the squared loss has a finite "
        "target margin (5 here) and the hinge and truncated quadratic losses stop pushing "
        "once the margin passes delta = 1 or 1 / beta = 10.")
    return results


def _batch(tokenizer, train, n):
    prompts, chosen, rejected = columns(train[:n])
    P = [tokenizer.encode(p, add_special_tokens=False) for p in prompts]
    seqs = [p + tokenizer.encode(c, add_special_tokens=False)
            for p, c in zip(P + P, chosen + rejected)]
    ids, mask = pad_batch(seqs, pad_id=tokenizer.pad_token_id)
    return ids, mask, [len(p) for p in P + P]


def overhead(report, model, tokenizer, train, args):
    n, steps = min(4, len(train)), (2 if args.quick else 4)
    trainer = PreferenceLMTrainer(module=model, tokenizer=tokenizer, **SCALES, **LORA,
                                  max_length=MAX_LENGTH, learning_rate=1e-3,
                                  max_epochs=steps + 1, batch_size=n, random_state=0)
    start = time.perf_counter()
    trainer.fit(*columns(train[:n]))
    fit_s = time.perf_counter() - start
    est_step = statistics.median(trainer.history_[1:, "dur"])  # one batch per epoch

    ids, mask, starts = _batch(tokenizer, train, n)
    with seeded_torch(draw_seed(0)):
        lora, ref = with_lora(model, rank=8, alpha=16.0, target_modules=("q_proj", "v_proj"))
    with torch.no_grad():
        ref_lp, _ = completion_log_probs(ref.eval(), ids, mask, starts)
    opt = torch.optim.Adam([p for p in lora.parameters() if p.requires_grad], lr=1e-3)
    lora.train()
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad()
        lp, _ = completion_log_probs(lora, ids, mask, starts)
        h = preference_margin(lp[:n], lp[n:], ref_logp_w=ref_lp[:n], ref_logp_l=ref_lp[n:])
        logistic_loss(h, beta=0.1).mean().backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    plain = statistics.median(times[1:])
    ratio = est_step / plain
    target = Target(hi=1.1)
    report.add_table(
        f"E3 Overhead: one training step on the same {n} pairs ({2 * n} sequences of up to "
        f"{int(mask.sum(1).max())} tokens), LoRA r = 8 on q/v, DPO loss, one thread",
        ["path", "seconds per step (median)", "ratio to plain loop", "target", "status"],
        [["PreferenceLMTrainer.fit (skorch epoch of one batch)", f"{est_step:.2f}",
          f"{ratio:.3f}", str(target), target.check(ratio)],
         ["plain PyTorch + peft loop (completion_log_probs, Adam)", f"{plain:.2f}", "1", "-",
          "-"]],
        note=f"The estimator's whole fit ({steps + 1} steps) took {fit_s:.1f} s, including "
        "the deep copy of the model, the LoRA injection and one forward pass of the reference "
        "model over the pairs. Medians over the steps after the first.")
    return ratio


def trl_peer(report, model, tokenizer, train):
    try:
        import trl  # noqa: F401
    except ImportError:
        report.add("Peer: trl", "trl is not installed; the per-batch cross-check is skipped.")
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "alignment"))
    from _trl_reference import trl_dpo_loss

    n = min(8, len(train))
    ids, mask, starts = _batch(tokenizer, train, n)
    with seeded_torch(draw_seed(1)):
        lora, ref = with_lora(model, rank=8, alpha=16.0, target_modules=("q_proj", "v_proj"))
        for name, param in lora.named_parameters():  # a LoRA away from 0, as after training
            if "lora_B" in name:
                torch.nn.init.normal_(param, std=0.02)
    with torch.no_grad():
        lp, _ = completion_log_probs(lora.eval(), ids, mask, starts)
        rlp, _ = completion_log_probs(ref.eval(), ids, mask, starts)
    lw, ll, rw, rl = (t.double() for t in (lp[:n], lp[n:], rlp[:n], rlp[n:]))
    h = preference_margin(lw, ll, ref_logp_w=rw, ref_logp_l=rl)
    rows, worst = [], 0.0
    for beta in (0.1, 1.0):
        ours = {"sigmoid": logistic_loss(h, beta=beta).mean(),
                "ipo": squared_loss(h, tau=beta).mean(),
                "hinge": beta * hinge_loss(h, delta=1 / beta).mean()}
        for loss_type, value in ours.items():
            theirs = trl_dpo_loss(loss_type, beta, lw, ll, rw, rl)
            diff = abs(value.item() - theirs.item())
            worst = max(worst, diff)
            rows.append([loss_type, beta, f"{value.item():.10g}", f"{theirs.item():.10g}",
                         f"{diff:.1e}", Target(hi=1e-6).check(diff)])
    report.add_table(
        f"E2 Peer: trl {package_version('trl')} DPOTrainer losses on the same batch of {n} "
        "SmolLM2 pairs (sequence log-probabilities of a LoRA and of the base model, float64)",
        ["trl loss_type", "beta (trl)", "ours", "trl", "|diff|", "<= 1e-6"], rows,
        note=f"Margins of this batch: {', '.join(f'{v:.2f}' for v in h.tolist())}. ours: "
        "logistic_loss(h, beta=beta), squared_loss(h, tau=beta), beta * hinge_loss(h, "
        "delta=1/beta); trl's own DPOTrainer._compute_loss runs on the same sequence "
        "log-probabilities (given as one token each: trl's IPO averages log-probabilities "
        "over tokens, the paper's squared loss and ours use sequence sums).")
    return worst


def main():
    args = parse_args(__doc__)
    report = Report("preference_losses_smollm2",
                    "Offline preference losses on SmolLM2-135M (Agarwal, Dann & Marinov, "
                    "ICML 2025)", quick=args.quick,
                    packages=("torch", "transformers", "peft", "skorch", "trl"))
    start = time.perf_counter()
    t0 = time.perf_counter()
    model, tokenizer = load_smollm2()
    load_s = time.perf_counter() - t0
    pairs, facts = build_pairs(model, tokenizer, 24 if args.quick else N_PROBLEMS)
    train, test = split(pairs, *((4, 4) if args.quick else (N_TRAIN, N_TEST)))
    report.add_table(
        "E1 Verified pairs from HumanEval", ["quantity", "value"],
        [["problems (prompt <= 128 tokens, prompt + canonical solution <= 256)",
          facts["problems"]],
         ["greedy completions that pass their tests (SmolLM2-135M-Instruct)",
          facts["model passes"]],
         ["pairs (canonical passes, completion fails, non-empty, <= 256 tokens)",
          facts["pairs"]],
         ["why the completions fail", ", ".join(f"{k} {v}" for k, v in
                                                 facts["reasons"].most_common())],
         ["training / held-out pairs (split by problem)", f"{len(train)} / {len(test)}"],
         ["tests run in", facts["runner"]],
         ["model load s / generation s (first run, cached since) / checks s",
          f"{load_s:.1f} / {facts['generation s (first run)']:.0f} "
          f"({facts['generation s (now)']:.0f} this run) / {facts['checks s']:.0f}"]],
        note="Completions: greedy, at most 128 new tokens, the prompt continued as plain "
        "text, cut at the first new top-level block after the completion's first line.")
    trl_peer(report, model, tokenizer, train)
    overhead(report, model, tokenizer, train, args)
    losses_table(report, model, tokenizer, train, test, args)
    report.add("Run time", f"{time.perf_counter() - start:.0f} s on one thread (budget: about "
               "20 minutes of one core; the completions' generation is counted once, in the "
               "first table).")
    report.write()


if __name__ == "__main__":
    main()
