"""Offline preference optimisation of a causal language model, on skorch.

The losses of Agarwal, Dann & Marinov (ICML 2025) on a language model, trained on
``(prompt, chosen, rejected)`` triples with any loss of :data:`PREFERENCE_LOSSES` and any
normaliser: either a tiny causal Transformer (built locally, random initialisation) on token
ids, or a LoRA of a pretrained Hugging Face causal LM (SmolLM2) on texts (``_hf_lm``).
Sequence log-probabilities are sums of token log-softmax values over the completion; the
normaliser's log-probabilities are computed once before training.
"""

import copy

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.validation import check_is_fitted

from ..base import BaseNeuralEstimator, NonTabularInputMixin
from ..utils import draw_seed, optional_import
from ..utils._causal_lm import check_causal_lm
from ..utils._deprecation import DEPRECATED, DEPRECATED_PARAM, renamed_param
from ..utils._docstrings import fill_doc
from ..utils._param_validation import NON_NEGATIVE_INT, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ..utils._skorch import torch_threads
from ..utils._training import seeded_torch
from ..utils.validation import check_finite
from ._base import _PreferenceLossMixin, check_soft_labels
from ._hf_lm import (
    HFPairLogProb,
    check_model_pair,
    check_texts,
    encode_triples,
    pad_right,
    pad_token_id,
    sequence_log_probs,
    with_lora,
)
from ._loss_math import LOSS_PARAMETER
from ._losses import PREFERENCE_LOSSES, preference_margin

torch = optional_import("torch", "neural")
skorch = optional_import("skorch", "neural")
nn = torch.nn

PAD = -1


class TinyCausalLM(nn.Module):
    """A GPT-style causal Transformer small enough for CPU tests.

    Token embedding (``vocab_size + 1`` rows: the last one is the beginning-of-sequence
    token) plus learned positions, ``n_layers`` pre-norm Transformer blocks with a causal
    mask, and a linear head over ``vocab_size`` tokens.

    Parameters
    ----------
    vocab_size : int
        Number of tokens the model predicts; token ``vocab_size`` is BOS (input only).
    d_model : int, default=32
    n_layers : int, default=1
    n_heads : int, default=2
    max_len : int, default=64
        Longest input (BOS + prompt + completion).

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.alignment import TinyCausalLM
    >>> lm = TinyCausalLM(vocab_size=5)
    >>> lm(torch.tensor([[5, 0, 3]])).shape
    torch.Size([1, 3, 5])
    """

    def __init__(self, vocab_size, d_model=32, n_layers=1, n_heads=2, max_len=64):
        super().__init__()
        self.vocab_size = int(vocab_size)
        self.bos_token = self.vocab_size
        self.max_len = int(max_len)
        self.embed = nn.Embedding(self.vocab_size + 1, d_model)
        self.pos = nn.Embedding(self.max_len, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, n_heads, dim_feedforward=4 * d_model, dropout=0.0, batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, self.vocab_size)

    def forward(self, tokens):
        """Next-token logits of shape ``(batch, length, vocab_size)``."""
        length = tokens.shape[1]
        positions = torch.arange(length, device=tokens.device)
        x = self.embed(tokens) + self.pos(positions)
        mask = nn.Transformer.generate_square_subsequent_mask(length, device=tokens.device)
        x = self.blocks(x, mask=mask, is_causal=True)
        return self.head(self.norm(x))


def sequence_logprob(lm, tokens, mask):
    """``sum_t mask[t] log p(tokens[t] | tokens[:t])`` per row (sums of log-softmax).

    ``tokens`` (B, L) starts with BOS; ``mask`` (B, L) is 1 on completion tokens. A module
    returning an object with ``.logits`` (Hugging Face style) works too.
    """
    out = lm(tokens[:, :-1])
    logits = getattr(out, "logits", out)
    logp = torch.log_softmax(logits, dim=-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return (logp * mask[:, 1:]).sum(dim=1)


class PairLogProb(nn.Module):
    """Wraps a causal LM: returns the (chosen, rejected) sequence log-probs, shape (B, 2)."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, tokens_w, mask_w, tokens_l, mask_l):
        n = tokens_w.shape[0]
        lp = sequence_logprob(
            self.lm, torch.cat([tokens_w, tokens_l]), torch.cat([mask_w, mask_l])
        )
        return torch.stack([lp[:n], lp[n:]], dim=1)


class PreferenceCriterion(nn.Module):
    """Batch loss from ``y_pred`` (B, 2) log-probs and ``y_true`` (B, 5).

    ``y_true`` columns: normaliser log-probs of chosen and rejected, soft label, reference
    log-probs of chosen and rejected (for the ``kl_coef`` regulariser).
    """

    def __init__(self, loss="logistic", scale=0.1, kl_coef=0.0):
        super().__init__()
        self.loss, self.scale, self.kl_coef = loss, float(scale), float(kl_coef)

    def forward(self, y_pred, y_true):
        y_true = y_true.to(y_pred.dtype)
        h = preference_margin(
            y_pred[:, 0], y_pred[:, 1], ref_logp_w=y_true[:, 0], ref_logp_l=y_true[:, 1]
        )
        scale = {LOSS_PARAMETER[self.loss]: self.scale}  # beta, tau or delta
        loss = PREFERENCE_LOSSES[self.loss](h, **scale, p=y_true[:, 2]).mean()
        if self.kl_coef > 0:
            d = y_pred[:, :2] - y_true[:, 3:5]
            loss = loss + self.kl_coef * (d * d).mean() / 2.0
        return loss


class _PreferenceNet(skorch.NeuralNet):
    """NeuralNet that also records the batch mean log-probs and margin in its history.

    Only the parameters that require a gradient go to the optimiser (a LoRA's, not the
    frozen weights of the pretrained model).
    """

    def get_all_learnable_params(self):
        for name, param in super().get_all_learnable_params():
            if param.requires_grad:
                yield name, param

    def get_loss(self, y_pred, y_true, X=None, training=False):
        loss = super().get_loss(y_pred, y_true, X=X, training=training)
        if training:
            y_true = skorch.utils.to_tensor(y_true, device=self.device).to(y_pred.dtype)
            lp = y_pred.detach()
            h = (lp[:, 0] - y_true[:, 0]) - (lp[:, 1] - y_true[:, 1])
            h = h * (2.0 * y_true[:, 2] - 1.0)  # oriented towards the label
            self.history.record_batch("logp_chosen", float(lp[:, 0].mean()))
            self.history.record_batch("logp_rejected", float(lp[:, 1].mean()))
            self.history.record_batch("margin", float(h.mean()))
        return loss


class _EpochMeans(skorch.callbacks.Callback):
    """Average the batch records of ``_PreferenceNet`` into the epoch row."""

    def on_epoch_end(self, net, **kwargs):
        batches = net.history[-1, "batches"]
        for key in ("logp_chosen", "logp_rejected", "margin"):
            values = [b[key] for b in batches if key in b]
            if values:
                net.history.record(key, float(np.mean(values)))


def _check_sequences(seqs, name, *, allow_empty):
    """Rows of token ids (list of lists, or 2-D array right-padded with -1) -> list of arrays."""
    if isinstance(seqs, np.ndarray) and seqs.ndim == 2:
        rows = list(seqs)
    elif isinstance(seqs, list | tuple):
        rows = [np.asarray(r) for r in seqs]
    else:
        arr = np.asarray(seqs)
        if arr.ndim != 2:
            raise ValueError(
                f"{name} must be a list of token sequences or a 2-D array padded with -1. Got "
                f"an object of shape {arr.shape} instead."
            )
        rows = list(arr)
    out = []
    for i, row in enumerate(rows):
        row = np.asarray(row)
        if row.ndim != 1:
            raise ValueError(f"{name}[{i}] must be 1-D. Got shape {row.shape} instead.")
        if row.size and row.dtype.kind == "f":
            check_finite(row, name)
            if not np.all(row == np.round(row)):
                raise ValueError(f"{name}[{i}] must hold integer token ids. Got {row!r} instead.")
        elif row.size and row.dtype.kind not in "iu":
            raise TypeError(f"{name}[{i}] must hold integer token ids. Got dtype {row.dtype}.")
        row = row.astype(np.int64)
        n = int(np.sum(row != PAD))
        if np.any(row[:n] < 0) or np.any(row[n:] != PAD):
            raise ValueError(
                f"{name}[{i}] must hold token ids >= 0, padded with {PAD} at its right end "
                "only. Got "
                f"{row.tolist()!r} instead."
            )
        row = row[:n]
        if not allow_empty and n == 0:
            raise ValueError(f"{name}[{i}] is empty; every completion needs a token.")
        out.append(row)
    return out


@fill_doc
class PreferenceLMTrainer(NonTabularInputMixin, _PreferenceLossMixin, BaseNeuralEstimator):
    """Offline preference optimisation (DPO, IPO, SLiC, GPO) of a causal language model.

    ``fit`` trains the language model on ``(prompt, chosen, rejected)`` triples with the
    margin ``h = [log pi(w|x) - log nu(w|x)] - [log pi(l|x) - log nu(l|x)]`` and any loss
    of :data:`PREFERENCE_LOSSES`, through a skorch ``NeuralNet`` (Adam, mini-batches). The
    normaliser ``nu`` is the reference model (by default the language model as initialised,
    i.e. the SFT policy), the data policy (its log-probabilities given in ``fit``) or none.

    Two kinds of model:

    - token ids (``tokenizer=None``): the model is :class:`TinyCausalLM`, or ``module``
      given as a causal LM over token ids with a ``bos_token``;
    - texts (``tokenizer`` given): ``module`` is a pretrained Hugging Face causal LM and
      ``tokenizer`` its tokenizer (``module, tokenizer = load_smollm2()``); ``fit`` takes
      lists of strings, and trains a peft LoRA of rank ``lora_rank`` on ``lora_target_modules``
      of a copy of the model (the caller's model is never modified). The reference is the
      same network with its adapter switched off, so no second copy of the weights is kept.

    Like :class:`TabularPreferencePolicy` it learns from pairs (of token sequences), not
    a feature matrix, so its input tags say "not a 2-D table". It follows the skorch
    conventions of :class:`~sklearn_icml.base.BaseNeuralEstimator` (``net_``,
    ``module_``, ``history_``, ``device``, ``n_jobs``, keyword arguments prefixed
    ``module__``, ``optimizer__``, ... routed to the net).

    Parameters
    ----------
    loss : {"logistic", "squared", "hinge", "exponential", "truncated_quadratic", \
            "savage"}, default="logistic"
        Loss of the margin (see :data:`PREFERENCE_LOSSES`): DPO, IPO, SLiC, or the GPO
        family.
    beta : float, default=0.1
        Scale of the logistic, exponential, truncated quadratic and savage losses.
    tau : float, default=0.1
        IPO's ``tau`` (target margin ``1 / (2 tau)``), for ``loss="squared"``.
    delta : float, default=1.0
        Hinge margin, for ``loss="hinge"``.
    normalizer : {"reference", "data", "none"}, default="reference"
    kl_coef : float, default=0.0
        Weight of ``mean (log pi(y|x) - log pi_ref(y|x))**2 / 2`` over the pair responses.
    module : torch.nn.Module or None, default=None
        A causal LM mapping ``(B, L)`` token ids to ``(B, L, V)`` logits (or an object with
        ``.logits``) whose input vocabulary includes ``bos_token``; it is copied in
        ``fit``. None builds a :class:`TinyCausalLM`. With a ``tokenizer``: the Hugging
        Face causal LM that tokenizer belongs to.
    tokenizer : transformers tokenizer or None, default=None
        The tokenizer of ``module`` (a Hugging Face causal LM): ``fit`` and
        :meth:`sequence_logprob` then take texts. A tokenizer that does not match the model
        raises ValueError. None: token ids.
    lora_rank : int or None, default=8
        With a ``tokenizer``: rank of the LoRA trained on ``lora_target_modules``; None trains
        every weight of a copy of the model (and keeps a frozen second copy as reference).
    lora_alpha : float, default=16.0
        With a ``tokenizer``: the LoRA's scale numerator (the update is
        ``lora_alpha / lora_rank * B A``).
    lora_target_modules : tuple of str, default=("q_proj", "v_proj")
        With a ``tokenizer``: names of the linear layers that get a LoRA (a Llama's query
        and value projections by default).
    max_length : int or None, default=None
        With a ``tokenizer``: the most tokens of a prompt and its completion together;
        a longer pair raises ValueError naming it. None: the model's context length.
    vocab_size : int or None, default=None
        For the built-in model; None infers it from the data (largest id + 1).
    d_model, n_layers, n_heads : int, default=32, 1, 2
        Size of the built-in model.
    bos_token : int or None, default=None
        Token prepended to every prompt; None uses ``vocab_size`` (the built-in model's
        BOS). Not used with a ``tokenizer`` (prompts are texts of at least one token).
    learning_rate : float, default=1e-3
        Adam learning rate.
    lr : float, default="deprecated"
        Deprecated name of ``learning_rate`` (removed in 0.4).
    max_epochs : int, default=20
    batch_size : int, default=32
    %(device)s
    %(torch_n_jobs)s
    callbacks : list of (str, skorch.callbacks.Callback) or None, default=None
        Extra skorch callbacks (copied at every fit).
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights and the shuffling.
    %(verbose)s
    **kwargs
        Parameters prefixed ``module__``, ``optimizer__``, ``criterion__``,
        ``iterator_train__``, ``iterator_valid__`` or ``callbacks__``, routed to the skorch
        net (e.g. ``optimizer__weight_decay=0.01``).

    Attributes
    ----------
    net_ : skorch.NeuralNet
    module_ : torch.nn.Module
        The trained language model (with a ``tokenizer``: the peft model holding the LoRA).
    reference_module_ : torch.nn.Module
        The frozen reference model (the initial model unless ``reference_module`` given;
        with a LoRA, the trained model with its adapter switched off).
    history_ : skorch.History
        Per epoch: ``train_loss`` and the means over the epoch's batches of
        ``logp_chosen``, ``logp_rejected`` (sequence log-probabilities) and ``margin``
        (``(2 p - 1) h``: the margin in the direction of the label).
    vocab_size_ : int
    bos_token_ : int or None
        None with a ``tokenizer``.
    max_length_ : int or None
        With a ``tokenizer``: the longest prompt and completion, in tokens.

    See Also
    --------
    TabularPreferencePolicy : the tabular theory these losses are analysed in.

    Notes
    -----
    The language-model setting of Agarwal, Dann & Marinov (ICML 2025, arXiv:2502.06861),
    at a size that trains on a CPU in seconds.

    Examples
    --------
    >>> from sklearn_icml.alignment import PreferenceLMTrainer
    >>> prompts = [[0], [1]] * 4
    >>> chosen = [[2, 3], [3, 2]] * 4
    >>> rejected = [[3, 3], [2, 2]] * 4
    >>> trainer = PreferenceLMTrainer(beta=1.0, max_epochs=3, batch_size=4, random_state=0)
    >>> trainer = trainer.fit(prompts, chosen, rejected)
    >>> len(trainer.history_)
    3
    >>> trainer.sequence_logprob([[0]], [[2, 3]]).shape
    (1,)

    A LoRA of a Hugging Face causal LM on texts (here a tiny random Llama; SmolLM2 from
    ``load_smollm2()`` is used the same way):

    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> model, tokenizer = make_tiny_causal_lm()
    >>> lora = PreferenceLMTrainer(module=model, tokenizer=tokenizer, loss="squared",
    ...                            lora_rank=4, max_epochs=2, batch_size=2, random_state=0)
    >>> lora = lora.fit(["def f(x):"] * 2, [" return x"] * 2, [" pass"] * 2)
    >>> lora.sequence_logprob(["def f(x):"], [" return x"]).shape
    (1,)
    """

    _parameter_constraints = {
        **BaseNeuralEstimator._parameter_constraints,
        **_PreferenceLossMixin._parameter_constraints,
        "module": [nn.Module, None],
        "tokenizer": [HasMethods(["encode", "decode"]), None],
        "lora_rank": [POSITIVE_INT, None],
        "lora_alpha": [POSITIVE_REAL],
        "lora_target_modules": [tuple, list],
        "max_length": [POSITIVE_INT, None],
        "vocab_size": [POSITIVE_INT, None],
        "d_model": [POSITIVE_INT],
        "n_layers": [POSITIVE_INT],
        "n_heads": [POSITIVE_INT],
        "bos_token": [NON_NEGATIVE_INT, None],
        "learning_rate": [POSITIVE_REAL],
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "max_epochs": [POSITIVE_INT],
        "batch_size": [POSITIVE_INT],
        "callbacks": [list, None],
    }

    def __init__(
        self,
        *,
        module=None,
        tokenizer=None,
        loss="logistic",
        beta=0.1,
        tau=0.1,
        delta=1.0,
        normalizer="reference",
        kl_coef=0.0,
        vocab_size=None,
        d_model=32,
        n_layers=1,
        n_heads=2,
        bos_token=None,
        lora_rank=8,
        lora_alpha=16.0,
        lora_target_modules=("q_proj", "v_proj"),
        max_length=None,
        learning_rate=1e-3,
        lr=DEPRECATED,
        max_epochs=20,
        batch_size=32,
        device="cpu",
        n_jobs=1,
        callbacks=None,
        random_state=None,
        verbose=0,
        **kwargs,
    ):
        store_params(self, locals())

    # encoding

    def _encode(self, prompts, completions):
        """BOS + prompt + completion, right-padded with 0; mask = 1 on completion tokens."""
        lengths = [1 + len(p) + len(c) for p, c in zip(prompts, completions)]
        width = max(lengths) if lengths else 1
        tokens = np.zeros((len(prompts), width), dtype=np.int64)
        mask = np.zeros((len(prompts), width), dtype=np.float32)
        for i, (p, c) in enumerate(zip(prompts, completions)):
            seq = np.concatenate([[self.bos_token_], p, c])
            tokens[i, : seq.shape[0]] = seq
            mask[i, 1 + len(p) : seq.shape[0]] = 1.0
        return tokens, mask

    def _check_tokens(self, *seqs):
        for rows, name in seqs:
            for row in rows:
                if row.size and row.max() >= self.vocab_size_:
                    raise ValueError(
                        f"{name} has token id {int(row.max())} but vocab_size is "
                        f"{self.vocab_size_} (ids 0..{self.vocab_size_ - 1}). Got an "
                        "out-of-range token instead."
                    )

    def _logprobs(self, module, tokens, mask, chunk=1024):
        device = next(module.parameters()).device
        module = module.eval()
        out = []
        with torch.no_grad(), torch_threads(self.n_jobs):
            for s in range(0, tokens.shape[0], chunk):
                t = torch.as_tensor(tokens[s : s + chunk], device=device)
                m = torch.as_tensor(mask[s : s + chunk], device=device)
                out.append(sequence_logprob(module, t, m).double().cpu().numpy())
        return np.concatenate(out) if out else np.empty(0)

    # fit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, prompts, chosen, rejected, labels=None, *, reference_module=None,
            data_logps=None):
        """Train the language model on preference triples.

        Parameters
        ----------
        prompts : list of sequences or 2-D int array padded with -1, or list of str
            Prompt token ids (may be empty); texts (not empty) with a ``tokenizer``.
        chosen, rejected : list of sequences or 2-D int array padded with -1, or list of str
            Completions; ``chosen[i]`` is preferred to ``rejected[i]`` unless ``labels``.
            Texts with a ``tokenizer``.
        labels : array-like of shape (n,), default=None
            Soft labels in [0, 1] (probability that ``chosen`` is preferred); None means 1.
        reference_module : torch.nn.Module, default=None
            The reference policy for ``normalizer="reference"`` and ``kl_coef``; None uses
            the language model as initialised. With a ``tokenizer``, a Hugging Face causal
            LM that shares it.
        data_logps : array-like of shape (n, 2), default=None
            ``log mu(chosen|x)`` and ``log mu(rejected|x)`` under the data policy; required
            by ``normalizer="data"``.

        Returns
        -------
        self : object
        """
        learning_rate = renamed_param(self, "lr", "learning_rate")
        if self.tokenizer is None:
            X, ref_lp, lm, n = self._prepare_tokens(prompts, chosen, rejected, reference_module)
            module = PairLogProb(lm)
        else:
            X, ref_lp, lm, n = self._prepare_texts(prompts, chosen, rejected, reference_module)
            module = HFPairLogProb(lm)
        p = check_soft_labels(labels, n)
        if self.normalizer == "data":
            if data_logps is None:
                raise ValueError(
                    "normalizer='data' needs data_logps (log-probabilities of chosen and "
                    "rejected under the data policy). Got data_logps=None instead."
                )
            nu = np.asarray(data_logps, dtype=np.float64)
            if nu.shape != (n, 2):
                raise ValueError(f"data_logps must have shape ({n}, 2). Got {nu.shape} instead.")
            check_finite(nu, "data_logps")
        if not np.all(np.isfinite(ref_lp)):
            raise ValueError("the reference model gives non-finite log-probabilities.")
        if self.normalizer == "reference":
            nu = ref_lp
        elif self.normalizer == "none":
            nu = np.zeros((n, 2))
        y = np.column_stack([nu, p, ref_lp]).astype(np.float32)
        self._fit_net(
            _PreferenceNet,
            X,
            y,
            module=module,
            criterion=PreferenceCriterion,
            criterion__loss=self.loss,
            criterion__scale=self._loss_scale(),
            criterion__kl_coef=float(self.kl_coef),
            optimizer=torch.optim.Adam,
            lr=learning_rate,
            max_epochs=self.max_epochs,
            batch_size=self.batch_size,
            iterator_train__shuffle=True,
            callbacks=[("epoch_means", _EpochMeans())],
        )
        return self

    def _prepare_tokens(self, prompts, chosen, rejected, reference_module):
        """Token-id triples: the net's inputs, the reference log-probs and the model."""
        P = _check_sequences(prompts, "prompts", allow_empty=True)
        W = _check_sequences(chosen, "chosen", allow_empty=False)
        L = _check_sequences(rejected, "rejected", allow_empty=False)
        n = len(P)
        if n == 0 or len(W) != n or len(L) != n:
            raise ValueError(
                "prompts, chosen and rejected must be non-empty and of the same length. Got "
                f"{len(P)}, {len(W)} and {len(L)} instead."
            )
        max_id = max(int(r.max()) if r.size else -1 for r in P + W + L)
        self.vocab_size_ = int(self.vocab_size) if self.vocab_size else max_id + 1
        self.max_length_ = None
        if self.module is None:
            self.bos_token_ = self.vocab_size_ if self.bos_token is None else int(self.bos_token)
        else:
            if self.bos_token is None:
                raise ValueError(
                    "a custom module needs bos_token (the id prepended to every prompt), or a "
                    "tokenizer for a Hugging Face model. Got bos_token=None instead."
                )
            self.bos_token_ = int(self.bos_token)
        self._check_tokens((P, "prompts"), (W, "chosen"), (L, "rejected"))

        tok_w, mask_w = self._encode(P, W)
        tok_l, mask_l = self._encode(P, L)
        width = max(tok_w.shape[1], tok_l.shape[1])
        tok_w, mask_w = _pad_to(tok_w, width), _pad_to(mask_w, width)
        tok_l, mask_l = _pad_to(tok_l, width), _pad_to(mask_l, width)

        seed = draw_seed(self.random_state)
        with seeded_torch(seed, self.device, self.n_jobs) as device:
            if self.module is None:
                lm = TinyCausalLM(
                    self.vocab_size_, d_model=self.d_model, n_layers=self.n_layers,
                    n_heads=self.n_heads, max_len=max(64, width),
                )
            else:
                lm = copy.deepcopy(self.module)
        lm = lm.to(device)
        ref = copy.deepcopy(reference_module if reference_module is not None else lm)
        ref = ref.to(device).eval()
        for param in ref.parameters():
            param.requires_grad_(False)
        self.reference_module_ = ref
        ref_lp = np.stack(
            [self._logprobs(ref, tok_w, mask_w), self._logprobs(ref, tok_l, mask_l)], axis=1
        )
        X = {"tokens_w": tok_w, "mask_w": mask_w, "tokens_l": tok_l, "mask_l": mask_l}
        return X, ref_lp, lm, n

    def _prepare_texts(self, prompts, chosen, rejected, reference_module):
        """Text triples for a Hugging Face model: inputs, reference log-probs, LoRA model."""
        context = check_model_pair(self.module, self.tokenizer)
        if self.max_length is not None and self.max_length > context:
            raise ValueError(
                f"max_length must be at most the model's context length ({context}). Got "
                f"{self.max_length!r} instead."
            )
        self.max_length_ = context if self.max_length is None else int(self.max_length)
        P = check_texts(prompts, "prompts")
        n = len(P)
        if n == 0:
            raise ValueError("prompts must hold at least one triple. Got an empty list instead.")
        W = check_texts(chosen, "chosen", n)
        L = check_texts(rejected, "rejected", n)
        self.vocab_size_ = int(self.module.config.vocab_size)
        self.bos_token_ = None
        seq_w, start_w = encode_triples(self.tokenizer, P, W, max_length=self.max_length_,
                                        name="chosen")
        seq_l, start_l = encode_triples(self.tokenizer, P, L, max_length=self.max_length_,
                                        name="rejected")
        width = max(len(seq) for seq in seq_w + seq_l)
        pad = pad_token_id(self.tokenizer)
        ids_w, mask_w = pad_right(seq_w, width, pad)
        ids_l, mask_l = pad_right(seq_l, width, pad)

        seed = draw_seed(self.random_state)
        with seeded_torch(seed, self.device, self.n_jobs) as device:
            lm, ref = with_lora(self.module, rank=self.lora_rank, alpha=self.lora_alpha,
                                target_modules=self.lora_target_modules)
        lm = lm.to(device)
        if reference_module is not None:
            check_causal_lm(reference_module, self.tokenizer, model_name="reference_module")
            ref = copy.deepcopy(reference_module).eval()
            for param in ref.parameters():
                param.requires_grad_(False)
        ref = ref.to(device)
        self.reference_module_ = ref
        with torch_threads(self.n_jobs):
            ref_lp = np.stack([sequence_log_probs(ref, ids_w, mask_w, start_w),
                               sequence_log_probs(ref, ids_l, mask_l, start_l)], axis=1)
        X = {"ids_w": ids_w, "mask_w": mask_w, "start_w": start_w,
             "ids_l": ids_l, "mask_l": mask_l, "start_l": start_l}
        return X, ref_lp, lm, n

    @property
    def module_(self):
        """The trained language model."""
        return self.net_.module_.lm

    def sequence_logprob(self, prompts, completions, *, reference=False):
        """``log pi(completion | prompt)`` under the trained (or reference) model.

        Parameters
        ----------
        prompts, completions : list of sequences or 2-D int arrays padded with -1, or lists
            of str (with a ``tokenizer``)
        reference : bool, default=False
            Score with ``reference_module_`` instead of the trained model.

        Returns
        -------
        logp : ndarray of shape (n,), float64
        """
        check_is_fitted(self, "net_")
        module = self.reference_module_ if reference else self.module_
        if self.tokenizer is not None:
            P = check_texts(prompts, "prompts")
            C = check_texts(completions, "completions", len(P))
            seqs, start = encode_triples(self.tokenizer, P, C, max_length=self.max_length_,
                                         name="completions")
            ids, mask = pad_right(seqs, max(len(seq) for seq in seqs),
                                  pad_token_id(self.tokenizer))
            with torch_threads(self.n_jobs):
                return sequence_log_probs(module, ids, mask, start)
        P = _check_sequences(prompts, "prompts", allow_empty=True)
        C = _check_sequences(completions, "completions", allow_empty=False)
        if len(P) != len(C):
            raise ValueError(
                f"prompts and completions must have the same length. Got {len(P)} and "
                f"{len(C)} instead."
            )
        self._check_tokens((P, "prompts"), (C, "completions"))
        tokens, mask = self._encode(P, C)
        was_training = module.training
        try:
            return self._logprobs(module, tokens, mask)
        finally:
            module.train(was_training)


def _pad_to(arr, width):
    if arr.shape[1] == width:
        return arr
    out = np.zeros((arr.shape[0], width), dtype=arr.dtype)
    out[:, : arr.shape[1]] = arr
    return out
