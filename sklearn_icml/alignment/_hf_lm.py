"""A pretrained Hugging Face causal LM in the preference trainer: texts, LoRA, pair log-probs.

:class:`PreferenceLMTrainer` given a ``tokenizer`` trains a peft LoRA (or every weight) of a
copy of a Hugging Face causal language model, such as SmolLM2 from
:func:`sklearn_icml.datasets.load_smollm2`, on ``(prompt, chosen, rejected)`` text triples.
This module encodes the texts against the model's context length, wraps the model so that
one call returns the (chosen, rejected) sequence log-probabilities of a batch, and gives the
reference model as the same network with its adapter switched off, so that no second copy
of the weights is kept. Sequence log-probabilities come from the shared kernel
:func:`sklearn_icml.utils._causal_lm.completion_log_probs`.
"""

import copy

import numpy as np

from ..utils import optional_import
from ..utils._causal_lm import check_causal_lm, completion_log_probs, encode_texts, lora_copy

torch = optional_import("torch", "neural")
nn = torch.nn


def check_texts(texts, name, n=None):
    """A list of str (of length ``n`` when given); raise TypeError/ValueError naming it."""
    if isinstance(texts, str) or not isinstance(texts, list | tuple | np.ndarray):
        raise TypeError(
            f"{name} must be a list of str when the trainer has a tokenizer. Got "
            f"{type(texts).__name__} instead."
        )
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(
                f"{name}[{i}] must be a str when the trainer has a tokenizer. Got "
                f"{type(text).__name__} instead."
            )
    if n is not None and len(texts) != n:
        raise ValueError(
            f"prompts and {name} must have the same length. Got {n} and {len(texts)} instead."
        )
    return texts


def check_model_pair(module, tokenizer):
    """Check that ``module`` is a Hugging Face causal LM matching ``tokenizer``.

    Returns the model's context length.
    """
    if module is None:
        raise ValueError(
            "a tokenizer needs its model: pass module=<the Hugging Face causal LM loaded with "
            "it> (for example module, tokenizer = load_smollm2()). Got module=None instead."
        )
    return check_causal_lm(module, tokenizer, model_name="module", tokenizer_name="tokenizer")


def encode_triples(tokenizer, prompts, completions, *, max_length, name):
    """Token ids of ``prompt + completion`` and where each completion starts.

    The prompt and the completion are encoded separately (the completion's tokens are those
    of its own text), without special tokens. Raises ValueError naming ``prompts`` or
    ``name`` when a prompt is empty, a completion is empty, or the two together exceed
    ``max_length`` tokens.
    """
    P = encode_texts(tokenizer, prompts, max_length=max_length, name="prompts")
    C = encode_texts(tokenizer, completions, max_length=max_length, name=name)
    sequences, starts = [], []
    for i, (p, c) in enumerate(zip(P, C)):
        if not p:
            raise ValueError(
                f"prompts[{i}] is empty; the model predicts a completion from at least one "
                "prompt token. Got '' instead."
            )
        if not c:
            raise ValueError(f"{name}[{i}] is empty; every completion needs a token.")
        if len(p) + len(c) > max_length:
            raise ValueError(
                f"prompts[{i}] and {name}[{i}] together have {len(p) + len(c)} tokens, more "
                f"than max_length={max_length}. Shorten them, leave the pair out, or raise "
                "max_length up to the model's context length."
            )
        sequences.append(p + c)
        starts.append(len(p))
    return sequences, np.asarray(starts, dtype=np.int64)


def pad_right(sequences, width, pad_id):
    """``(ids, mask)`` int64 arrays of shape (n, width), right-padded with ``pad_id``."""
    ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask


def pad_token_id(tokenizer):
    for value in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if value is not None:
            return int(value)


def with_lora(model, *, rank, alpha, target_modules):
    """A copy of ``model`` with a peft LoRA of rank ``rank`` (every weight trained if None).

    The caller's model is never modified (peft injects its layers in place, so it works on a
    deep copy). Returns ``(trained_model, reference_model)``: with a LoRA, the reference is
    the same network with its adapter disabled; without one, a frozen second copy.
    """
    if rank is None:
        model = copy.deepcopy(model)
        model.config.use_cache = False  # training and scoring never reuse a key/value cache
        reference = copy.deepcopy(model).eval()
        for param in reference.parameters():
            param.requires_grad_(False)
        return model, reference
    lora = lora_copy(model, rank=rank, alpha=alpha, target_modules=target_modules,
                     model_name="module")
    return lora, WithoutAdapter(lora)


class WithoutAdapter(nn.Module):
    """A peft model with its adapter switched off: the model before training, no copy kept."""

    def __init__(self, lora):
        super().__init__()
        self.lora = lora  # shared with the trained model, not a copy

    def forward(self, *args, **kwargs):
        with self.lora.disable_adapter():
            return self.lora(*args, **kwargs)


class HFPairLogProb(nn.Module):
    """Wraps a causal LM: returns the (chosen, rejected) sequence log-probs, shape (B, 2).

    The inputs are right-padded to the longest pair of the data set; each batch is cut to
    its own longest sequence before the model sees it.
    """

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, ids_w, mask_w, start_w, ids_l, mask_l, start_l):
        n = ids_w.shape[0]
        width = int(torch.maximum(mask_w.sum(1).max(), mask_l.sum(1).max()))
        ids = torch.cat([ids_w[:, :width], ids_l[:, :width]])
        mask = torch.cat([mask_w[:, :width], mask_l[:, :width]])
        start = torch.cat([start_w, start_l]).cpu().numpy()
        lp, _ = completion_log_probs(self.lm, ids, mask, start)
        return torch.stack([lp[:n], lp[n:]], dim=1)


def sequence_log_probs(model, ids, mask, start, *, chunk=8):
    """Completion log-probabilities of every row, in batches of ``chunk``, without grad.

    Rows are sorted by length so that each batch is cut to little padding. Returns a
    float64 array of shape (n,).
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = np.empty(ids.shape[0])
    lengths = mask.sum(1)
    order = np.argsort(lengths, kind="stable")
    try:
        with torch.no_grad():
            for s in range(0, len(order), chunk):
                rows = order[s : s + chunk]
                width = int(lengths[rows].max())
                lp, _ = completion_log_probs(
                    model,
                    torch.as_tensor(ids[rows, :width], device=device),
                    torch.as_tensor(mask[rows, :width], device=device),
                    start[rows],
                )
                out[rows] = lp.double().cpu().numpy()
    finally:
        model.train(was_training)
    return out
