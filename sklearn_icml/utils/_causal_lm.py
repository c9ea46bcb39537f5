"""What the methods that train or query a pretrained causal language model share.

A model here is a Hugging Face causal LM (``model(input_ids, attention_mask=...).logits``) and
its tokenizer, as :func:`sklearn_icml.datasets.load_smollm2` and
:func:`sklearn_icml.datasets.make_tiny_causal_lm` return them. The functions check a pair,
encode texts against the model's context length (an error names the argument rather than a
silent truncation), pad a batch, and sum token log-probabilities over the completion part of
each sequence: the one kernel behind preference losses, per-sample losses and held-out
perplexity.
"""

import copy
import warnings

import numpy as np

from ._optional import optional_import


def check_causal_lm(model, tokenizer, *, model_name="model", tokenizer_name="tokenizer"):
    """Check that ``model`` and ``tokenizer`` form a causal LM pair; return the context length.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal language model (it has ``config.vocab_size``).
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    model_name, tokenizer_name : str
        The argument names an error message uses.

    Returns
    -------
    max_length : int
        The model's context length in tokens.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> from sklearn_icml.utils._causal_lm import check_causal_lm
    >>> check_causal_lm(*make_tiny_causal_lm(max_length=128))
    128
    """
    config = getattr(model, "config", None)
    vocab_size = getattr(config, "vocab_size", None)
    if not callable(model) or not isinstance(vocab_size, int):
        raise TypeError(
            f"{model_name} must be a Hugging Face causal language model (with config.vocab_size"
            f"), such as load_smollm2()'s first value. Got {type(model).__name__} instead."
        )
    if not all(callable(getattr(tokenizer, attr, None))
               for attr in ("encode", "decode", "convert_ids_to_tokens", "__len__")):
        raise TypeError(
            f"{tokenizer_name} must be a Hugging Face tokenizer, such as load_smollm2()'s "
            f"second value. Got {type(tokenizer).__name__} instead."
        )
    if len(tokenizer) > vocab_size:
        raise ValueError(
            f"{tokenizer_name} does not match {model_name}: it has {len(tokenizer)} tokens and "
            f"the model's embedding {vocab_size} rows. Pass the tokenizer that was loaded with "
            "the model."
        )
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return int(getattr(tokenizer, "model_max_length", 2048))


def encode_texts(tokenizer, texts, *, max_length, name="texts", truncate=False,
                 add_eos=False):
    """Token ids of each text, checked against ``max_length``.

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
    texts : list of str
    max_length : int
        The most tokens a text may have (the model's context length, or less).
    name : str, default="texts"
        The argument name an error message uses.
    truncate : bool, default=False
        Keep the first ``max_length`` tokens of a longer text instead of raising.
    add_eos : bool, default=False
        Append the tokenizer's end-of-sequence token to each text.

    Returns
    -------
    ids : list of list of int

    Examples
    --------
    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> from sklearn_icml.utils._causal_lm import encode_texts
    >>> _, tokenizer = make_tiny_causal_lm()
    >>> encode_texts(tokenizer, ["ab"], max_length=8)
    [[67, 68]]
    >>> encode_texts(tokenizer, ["abc"], max_length=2, name="prompts")
    Traceback (most recent call last):
    ...
    ValueError: prompts[0] has 3 tokens, more than max_length=2 ...
    """
    if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
        raise TypeError(f"{name} must be a list of str. Got {type(texts).__name__} instead.")
    out = []
    for i, text in enumerate(texts):
        ids = list(tokenizer.encode(text, add_special_tokens=False, verbose=False))
        if add_eos:
            ids.append(tokenizer.eos_token_id)
        if len(ids) > max_length:
            if not truncate:
                raise ValueError(
                    f"{name}[{i}] has {len(ids)} tokens, more than max_length={max_length} "
                    "(the model's context length or the limit you set). Shorten it, raise the "
                    "limit up to the model's context length, or let the caller truncate."
                )
            ids = ids[:max_length]
        out.append(ids)
    return out


def pad_batch(sequences, *, pad_id, device=None):
    """Right-pad token id lists into ``(input_ids, attention_mask)`` long tensors.

    Examples
    --------
    >>> from sklearn_icml.utils._causal_lm import pad_batch
    >>> ids, mask = pad_batch([[5, 6, 7], [8]], pad_id=0)
    >>> ids.tolist(), mask.tolist()
    ([[5, 6, 7], [8, 0, 0]], [[1, 1, 1], [1, 0, 0]])
    """
    torch = optional_import("torch")
    if not sequences or any(len(seq) == 0 for seq in sequences):
        raise ValueError("pad_batch needs a non-empty list of non-empty token sequences.")
    length = max(len(seq) for seq in sequences)
    ids = np.full((len(sequences), length), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), length), dtype=np.int64)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return torch.as_tensor(ids, device=device), torch.as_tensor(mask, device=device)


def completion_log_probs(model, input_ids, attention_mask, completion_start):
    """Sum of the log-probabilities of each sequence's completion tokens, and their count.

    Token ``t`` of row ``i`` counts when ``t >= completion_start[i]`` and the attention mask
    is 1 there; its log-probability is the model's log-softmax at position ``t - 1``.
    Gradients flow through ``model`` (wrap the call in ``torch.no_grad()`` for a reference).

    Parameters
    ----------
    model : transformers.PreTrainedModel
    input_ids, attention_mask : torch.LongTensor of shape (n_sequences, length)
        As :func:`pad_batch` returns them.
    completion_start : sequence of int of length n_sequences
        Index of each sequence's first completion token (>= 1: the first token is never
        predicted; 1 for "every token but the first").

    Returns
    -------
    log_probs : torch.Tensor of shape (n_sequences,)
    n_tokens : torch.Tensor of shape (n_sequences,)

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> from sklearn_icml.utils._causal_lm import completion_log_probs, pad_batch
    >>> model, tokenizer = make_tiny_causal_lm()
    >>> ids, mask = pad_batch([[70, 71, 72], [70, 71]], pad_id=0)
    >>> lp, n = completion_log_probs(model, ids, mask, [1, 1])
    >>> n.tolist(), bool((lp < 0).all())
    ([2, 1], True)
    """
    torch = optional_import("torch")
    start = torch.as_tensor(np.asarray(completion_start, dtype=np.int64), device=input_ids.device)
    if start.shape != (input_ids.shape[0],) or bool((start < 1).any()):
        raise ValueError(
            "completion_start must hold one index >= 1 per sequence. Got "
            f"{list(np.asarray(completion_start))!r} instead."
        )
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
    targets = input_ids[:, 1:]
    token_lp = torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1))
    positions = torch.arange(1, input_ids.shape[1], device=input_ids.device)
    counted = (positions.unsqueeze(0) >= start.unsqueeze(1)) & attention_mask[:, 1:].bool()
    token_lp = token_lp.squeeze(-1) * counted
    return token_lp.sum(dim=1), counted.sum(dim=1)


def lora_copy(model, *, rank, alpha, target_modules, attn_implementation=None,
              model_name="model"):
    """A deep copy of ``model`` with a peft LoRA: the caller's model is never modified.

    peft injects its layers in place, so it works on a copy. The copy keeps no key/value cache
    (training and scoring never reuse one); ``attn_implementation="eager"`` selects PyTorch's
    plain attention, which has the second derivatives a differentiation through a training
    step needs.

    Parameters
    ----------
    model : transformers.PreTrainedModel
    rank : int
    alpha : float
    target_modules : sequence of str
        Names of the linear layers that get a LoRA (peft's ``target_modules``).
    attn_implementation : str or None, default=None
        None keeps the model's attention.
    model_name : str, default="model"
        The argument name an error message uses.

    Returns
    -------
    lora : peft.PeftModel
        Only the LoRA factors require gradients.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> from sklearn_icml.utils._causal_lm import lora_copy
    >>> model, _ = make_tiny_causal_lm()
    >>> lora = lora_copy(model, rank=2, alpha=4, target_modules=("q_proj", "v_proj"))
    >>> sum(p.numel() for p in lora.parameters() if p.requires_grad)
    512
    """
    peft = optional_import("peft", "llm")
    model = copy.deepcopy(model)
    if attn_implementation is not None:
        if hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation(attn_implementation)
        else:  # older transformers
            model.config._attn_implementation = attn_implementation
    model.config.use_cache = False
    config = peft.LoraConfig(
        r=int(rank), lora_alpha=float(alpha), target_modules=list(target_modules),
        lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
    )
    try:
        with warnings.catch_warnings():  # peft reads an attribute transformers renamed
            warnings.filterwarnings("ignore", "`is_gradient_checkpointing`", FutureWarning)
            return peft.get_peft_model(model, config)
    except ValueError as exc:
        raise ValueError(
            f"lora_target_modules={tuple(target_modules)!r} does not name layers of "
            f"{model_name} ({exc}). Name its linear layers, such as ('q_proj', 'v_proj') for "
            "a Llama."
        ) from exc
