"""Verified preference pairs from HumanEval for the SmolLM2 preference-loss benchmark.

A pair is (problem prompt, canonical solution, a completion of the model that FAILS the
problem's tests): the preference is checked by running the tests, not assumed. The model's
greedy completions are cached in a JSON file in the data home, keyed by model, problem and
generation settings, so that later runs reuse them; the file is rewritten atomically after
each new completion. The tests of a completion run in a child process with a timeout.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from sklearn_icml.datasets import get_data_home

# the usual HumanEval stop sequences: a completion ends where a new top-level block starts
# (after its first line: SmolLM2 often answers a prompt by writing the function again)
STOP_STRINGS = ("\ndef ", "\nclass ", "\nif ", "\nprint(", "\n#", "\n```")
MODEL_KEY = "SmolLM2-135M-Instruct.Q4_1-float32"
CACHE_FILE = "humaneval_greedy_completions.json"


def _cache_path(data_home):
    return Path(get_data_home(data_home)) / CACHE_FILE


def _read_cache(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write_cache(path, cache):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        json.dump(cache, f, indent=0, sort_keys=True)
    os.replace(tmp, path)


def truncate_completion(text):
    """Cut a completion at the first stop sequence (a new top-level block) after its first
    non-blank line."""
    start = len(text) - len(text.lstrip("\n")) + 1
    cut = len(text)
    for stop in STOP_STRINGS:
        at = text.find(stop, start)
        if at != -1:
            cut = min(cut, at)
    return text[:cut]


class _StopAtNewBlock:
    """Stopping criterion: the decoded continuation reached a stop sequence."""

    def __init__(self, tokenizer, prompt_length):
        self.tokenizer, self.prompt_length = tokenizer, prompt_length

    def __call__(self, input_ids, scores, **kwargs):
        text = self.tokenizer.decode(input_ids[0, self.prompt_length:],
                                     skip_special_tokens=True)
        done = len(truncate_completion(text)) < len(text)
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool)


def greedy_completions(model, tokenizer, problems, *, max_new_tokens=128, data_home=None,
                       verbose=True):
    """Greedy completion of each problem's prompt (plain text continuation), cached.

    Returns ``(completions, seconds_now, seconds_once)``: a dict task_id -> completion
    (truncated at the stop sequences), the time spent generating the ones not in the cache
    and the time their generation took when they were made (cached or not).
    """
    path = _cache_path(data_home)
    cache = _read_cache(path)
    out, spent, spent_once = {}, 0.0, 0.0
    for problem in problems:
        key = f"{MODEL_KEY}|{problem.task_id}|greedy|{max_new_tokens}"
        if key not in cache:
            start = time.perf_counter()
            ids = torch.tensor([tokenizer.encode(problem.prompt, add_special_tokens=False)])
            stop = _StopAtNewBlock(tokenizer, ids.shape[1])
            with torch.no_grad():
                gen = model.generate(
                    ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                    do_sample=False, stopping_criteria=[stop],
                    pad_token_id=tokenizer.eos_token_id,
                )
            text = tokenizer.decode(gen[0, ids.shape[1]:], skip_special_tokens=True)
            seconds = time.perf_counter() - start
            cache[key] = {"text": text, "seconds": round(seconds, 2)}
            _write_cache(path, _read_cache(path) | {key: cache[key]})
            spent += seconds
            if verbose:
                print(f"  generated {problem.task_id} in {time.perf_counter() - start:.1f} s",
                      flush=True)
        out[problem.task_id] = truncate_completion(cache[key]["text"])
        spent_once += cache[key]["seconds"]
    return out, spent, spent_once


def _check_in_child(program, test, entry_point, timeout):
    """Fallback: the program and its tests in a plain child interpreter with a timeout."""
    source = f"{program}\n\n{test}\n\ncheck({entry_point})\n"
    with tempfile.TemporaryDirectory(prefix="humaneval_") as workdir:
        try:
            proc = subprocess.run(
                [sys.executable, "-I", "-c", source], cwd=workdir, capture_output=True,
                text=True, timeout=timeout, env={},
            )
        except subprocess.TimeoutExpired:
            return False, f"timeout after {timeout} s"
    if proc.returncode == 0:
        return True, "passed"
    last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    return False, last[:200]


def check_completion(problem, completion, *, timeout=5.0):
    """``(passed, reason, runner)``: run the prompt + completion against the problem's tests.

    Uses the library's confined sandbox (``sklearn_icml.mas.check_program``) where it is
    available, else a plain child interpreter with a timeout.
    """
    program = problem.prompt + completion
    try:
        from sklearn_icml.mas import check_program
    except ImportError:
        passed, reason = _check_in_child(program, problem.test, problem.entry_point, timeout)
        return passed, reason, "child interpreter"
    result = check_program(program, problem.test, entry_point=problem.entry_point,
                           timeout=timeout)
    return result.passed, result.reason, "confined sandbox"


def heldout_metrics(trainer, prompts, chosen, rejected, *, chunk=4):
    """Sequence log-likelihoods under the trained and the reference model, and the KL.

    Returns a dict of arrays ``pol_w``, ``pol_l``, ``ref_w``, ``ref_l`` (sequence
    log-likelihoods of the chosen and rejected responses), ``h`` (the margin with the
    trainer's normaliser: reference, or none) and ``kl_per_token``: the exact
    ``KL(pi(.|prefix) || pi_ref(.|prefix))`` over the vocabulary at every completion token of
    the chosen and rejected responses, averaged over those tokens.
    """
    from sklearn_icml.utils._causal_lm import pad_batch

    tokenizer = trainer.tokenizer
    policy, reference = trainer.module_, trainer.reference_module_
    texts = list(zip(prompts + prompts, chosen + rejected))
    P = [tokenizer.encode(p, add_special_tokens=False) for p, _ in texts]
    seqs = [p + tokenizer.encode(c, add_special_tokens=False) for p, (_, c) in zip(P, texts)]
    pol, ref = np.empty(len(seqs)), np.empty(len(seqs))
    kl_sum, n_tokens = 0.0, 0
    was_training = policy.training
    policy.eval()
    order = np.argsort([len(s) for s in seqs], kind="stable")
    with torch.no_grad():
        for s in range(0, len(order), chunk):
            rows = order[s : s + chunk]
            ids, mask = pad_batch([seqs[i] for i in rows], pad_id=tokenizer.pad_token_id)
            lp_pol = torch.log_softmax(policy(input_ids=ids, attention_mask=mask).logits[:, :-1]
                                       .float(), -1)
            lp_ref = torch.log_softmax(reference(input_ids=ids, attention_mask=mask)
                                       .logits[:, :-1].float(), -1)
            start = torch.as_tensor([len(P[i]) for i in rows])
            pos = torch.arange(1, ids.shape[1])
            counted = (pos[None] >= start[:, None]) & mask[:, 1:].bool()
            target = ids[:, 1:, None]
            pol[rows] = (lp_pol.gather(-1, target).squeeze(-1) * counted).sum(1).double().numpy()
            ref[rows] = (lp_ref.gather(-1, target).squeeze(-1) * counted).sum(1).double().numpy()
            kl = (lp_pol.exp() * (lp_pol - lp_ref)).sum(-1)
            kl_sum += float((kl * counted).sum())
            n_tokens += int(counted.sum())
    policy.train(was_training)
    n = len(prompts)
    out = {"pol_w": pol[:n], "pol_l": pol[n:], "ref_w": ref[:n], "ref_l": ref[n:],
           "kl_per_token": kl_sum / n_tokens}
    if trainer.normalizer == "none":
        out["h"] = out["pol_w"] - out["pol_l"]
    else:
        out["h"] = (out["pol_w"] - out["ref_w"]) - (out["pol_l"] - out["ref_l"])
    return out
