"""TransformersLLM: an agent or generator LLM run by a transformers model in this process.

The MAS code calls an LLM as ``llm(prompt, temperature) -> str``. :class:`OpenAICompatibleLLM`
sends that to a server; this client answers it with a causal language model held in memory
(:func:`~sklearn_icml.datasets.load_smollm2`'s pair, or any Hugging Face causal LM and its
tokenizer), so that a MAS runs offline with a real model and no server to start. Calls made
at the same time from several threads are generated together in one batch.

torch and transformers are imported at the first call, not with this module.
"""

import hashlib
import threading
import time

from sklearn.base import BaseEstimator

from ..base import SetUpAtFirstUseMixin
from ..utils import draw_seed, optional_import
from ..utils._causal_lm import check_causal_lm, encode_texts
from ..utils._param_validation import NON_NEGATIVE_REAL, POSITIVE_INT
from ..utils._params import store_params
from ._validation import check_instance

__all__ = ["TransformersLLM"]


class _Request:
    """One call waiting in the batch queue: its token ids, temperature and seed."""

    __slots__ = ("ids", "temperature", "seed", "done", "reply", "error", "n_tokens", "cut")

    def __init__(self, ids, temperature, seed):
        self.ids, self.temperature, self.seed = ids, temperature, seed
        self.done, self.reply, self.error, self.n_tokens, self.cut = False, None, None, 0, False


class TransformersLLM(SetUpAtFirstUseMixin, BaseEstimator):
    """An LLM callable backed by a transformers causal language model in this process.

    ``llm(prompt, temperature)`` puts ``prompt`` in one user message, applies the
    tokenizer's chat template (the plain prompt when the tokenizer has none), generates at
    most ``max_new_tokens`` tokens and returns their text. Temperature 0 is greedy decoding;
    a positive temperature samples from the softmax of the logits divided by it, with a seed
    derived from ``random_state``, the prompt, the temperature and how many times this
    prompt was sent before: the same calls give the same replies, and sending a prompt again
    gives a new sample (what self-consistency needs). Generation stops at the tokenizer's end
    token or at ``max_new_tokens``, whichever comes first.

    Calls from several threads at once (several MAS runs side by side) wait up to
    ``batch_wait`` seconds for each other and are generated together, at most
    ``batch_size`` per batch (left padding, one forward pass per new token for the whole
    batch); :meth:`call_batch` sends a list of prompts the same way.

    Parameters
    ----------
    model : transformers.PreTrainedModel, default=None
        A causal language model (e.g. the first value of
        :func:`~sklearn_icml.datasets.load_smollm2`); required before the first call.
    tokenizer : transformers.PreTrainedTokenizerBase, default=None
        Its tokenizer (the second value); required before the first call.
    max_new_tokens : int, default=256
        The most tokens one reply may have; a reply without an end token is cut there.
    system_prompt : str, default=None
        Optional system message put before the prompt (the chat template's own default
        otherwise).
    batch_size : int, default=8
        The most calls generated together.
    batch_wait : float, default=0.02
        Seconds a call waits for other calls to join its batch (0: no waiting).
    random_state : int, RandomState instance or None, default=0
        Seed of the sampled (temperature > 0) replies.

    Attributes
    ----------
    context_length_ : int
        The model's context length in tokens: a prompt may have at most
        ``context_length_ - max_new_tokens`` tokens, or the call raises ValueError.
    stop_token_ids_ : list of int
        The tokens that end a reply.
    n_calls_ : int
        Calls answered so far.
    n_batches_ : int
        Batches generated so far (fewer than ``n_calls_`` when calls were batched).
    n_new_tokens_ : int
        Tokens generated so far (the replies' tokens, the end tokens included).
    n_cut_ : int
        Replies cut at ``max_new_tokens``.
    generate_seconds_ : float
        Wall time spent in the model so far.

    See Also
    --------
    OpenAICompatibleLLM : the same callable, answered by an HTTP server.
    MASExecutor : runs MAS programs whose agents call this.

    Notes
    -----
    MAS-GPT [1]_ serves its MAS agents and its generator with LLM servers. This client lets
    the library's MAS code run a real model offline; the decoding loop is its own (greedy or
    temperature sampling with a KV cache) so that each sampled reply has its own seeded
    random stream, whatever batch it was generated in. Batched and one-by-one greedy replies
    agree up to float rounding of the padded batch.

    References
    ----------
    .. [1] R. Ye et al., "MAS-GPT: Training LLMs to Build LLM-based Multi-Agent Systems",
       ICML 2025, arXiv:2503.03686: the agent and generator LLMs a MAS calls.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> from sklearn_icml.mas import TransformersLLM
    >>> model, tokenizer = make_tiny_causal_lm(random_state=0)
    >>> llm = TransformersLLM(model=model, tokenizer=tokenizer, max_new_tokens=8)
    >>> reply = llm("Add 2 and 3.", 0.0)  # a random-weight model: bytes, cut at 8 tokens
    >>> reply == llm("Add 2 and 3.", 0.0), llm.n_calls_, llm.n_cut_
    (True, 2, 2)
    >>> llm("Add 2 and 3.", 1.0) == llm("Add 2 and 3.", 1.0)  # a new sample each time
    False
    """

    _parameter_constraints: dict = {
        "model": "no_validation",
        "tokenizer": "no_validation",
        "max_new_tokens": [POSITIVE_INT],
        "system_prompt": [str, None],
        "batch_size": [POSITIVE_INT],
        "batch_wait": [NON_NEGATIVE_REAL],
        "random_state": ["random_state"],
    }

    def __init__(self, *, model=None, tokenizer=None, max_new_tokens=256, system_prompt=None,
                 batch_size=8, batch_wait=0.02, random_state=0):
        store_params(self, locals())

    def _build(self):
        if self.model is None or self.tokenizer is None:
            raise ValueError(
                "model and tokenizer must be a causal language model and its tokenizer, such "
                "as load_smollm2()'s pair. Got "
                f"model={type(self.model).__name__}, tokenizer={type(self.tokenizer).__name__} "
                "instead."
            )
        self.context_length_ = check_causal_lm(self.model, self.tokenizer)
        if self.max_new_tokens >= self.context_length_:
            raise ValueError(
                f"max_new_tokens must be smaller than the model's context length "
                f"({self.context_length_}). Got {self.max_new_tokens!r} instead."
            )
        stops = {self.tokenizer.eos_token_id}
        im_end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end != self.tokenizer.unk_token_id:
            stops.add(im_end)
        self.stop_token_ids_ = sorted(t for t in stops if isinstance(t, int))
        pad = self.tokenizer.pad_token_id
        self._pad_id = pad if isinstance(pad, int) else self.stop_token_ids_[0]
        self._base_seed = draw_seed(self.random_state)
        self._seen = {}
        self._queue = []
        self._busy = False
        self._cond = threading.Condition()
        self.n_calls_ = self.n_batches_ = self.n_new_tokens_ = self.n_cut_ = 0
        self.generate_seconds_ = 0.0

    def __getstate__(self):
        # the lock and the queue do not travel: a copy sets itself up again at first use
        state = dict(super().__getstate__())
        for key in ("_cond", "_queue", "_seen", "_is_set_up"):
            state.pop(key, None)
        return state

    # -- the public calls -----------------------------------------------------------------

    def __call__(self, prompt, temperature=0.5):
        """The reply to ``prompt`` at ``temperature`` (0 is greedy).

        Parameters
        ----------
        prompt : str
            The user message.
        temperature : float, default=0.5
            Sampling temperature; 0 decodes greedily.

        Returns
        -------
        reply : str
        """
        return self.call_batch([prompt], temperature)[0]

    def call_batch(self, prompts, temperature=0.5):
        """The replies to ``prompts``, generated together (``batch_size`` at a time).

        Parameters
        ----------
        prompts : list of str
            User messages.
        temperature : float, default=0.5
            Sampling temperature of every prompt; 0 decodes greedily.

        Returns
        -------
        replies : list of str
            The same replies as one call per prompt in this order would give (sampled replies
            exactly, greedy ones up to float rounding).
        """
        self._setup()
        check_instance(prompts, list, "prompts")
        temperature = self._check_temperature(temperature)
        requests = [self._request(prompt, temperature, f"prompts[{i}]" if len(prompts) > 1
                                  else "prompt")
                    for i, prompt in enumerate(prompts)]
        with self._cond:
            self._queue.extend(requests)
            self._cond.notify_all()
        for request in requests:
            self._wait(request)
        errors = [r.error for r in requests if r.error is not None]
        if errors:
            raise errors[0]
        return [r.reply for r in requests]

    # -- preparing a call ---------------------------------------------------------------

    @staticmethod
    def _check_temperature(temperature):
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not (
            0.0 <= float(temperature) < float("inf")
        ):
            raise ValueError(
                f"temperature must be a finite float >= 0. Got {temperature!r} instead."
            )
        return float(temperature)

    def _text(self, prompt):
        messages = [{"role": "user", "content": prompt}]
        if self.system_prompt is not None:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        return "".join(m["content"] + "\n" for m in messages)

    def _request(self, prompt, temperature, name):
        check_instance(prompt, str, name)
        try:
            (ids,) = encode_texts(
                self.tokenizer, [self._text(prompt)],
                max_length=self.context_length_ - self.max_new_tokens, name=name,
            )
        except ValueError as exc:  # encode_texts names the text "<name>[0]"
            raise ValueError(str(exc).replace(f"{name}[0]", name, 1)) from None
        if not ids:
            ids = [self._pad_id]
        key = (prompt, temperature)
        with self._cond:
            k = self._seen.get(key, 0)
            self._seen[key] = k + 1
        digest = hashlib.sha256(
            f"{self._base_seed}|{k}|{temperature!r}|{prompt}".encode()
        ).digest()
        return _Request(ids, temperature, int.from_bytes(digest[:8], "little") >> 1)

    # -- the batch queue: the first waiting thread generates for everyone -----------------

    def _wait(self, request):
        while True:
            with self._cond:
                while not request.done and self._busy:
                    self._cond.wait()
                if request.done:
                    return
                self._busy = True
                deadline = time.monotonic() + float(self.batch_wait)
                while len(self._queue) < self.batch_size:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                batch = self._queue[: self.batch_size]
                del self._queue[: self.batch_size]
            try:
                self._generate(batch)
            except Exception as exc:  # noqa: BLE001 - each caller re-raises it
                for r in batch:
                    r.error = exc
            finally:
                with self._cond:
                    for r in batch:
                        r.done = True
                    self._busy = False
                    self._cond.notify_all()

    def _generate(self, batch):
        torch = optional_import("torch", "llm")
        start = time.perf_counter()
        model = self.model
        n, width = len(batch), max(len(r.ids) for r in batch)
        ids = torch.full((n, width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for row, r in enumerate(batch):  # left padding: every row's last token is aligned
            ids[row, width - len(r.ids):] = torch.as_tensor(r.ids, dtype=torch.long)
            mask[row, width - len(r.ids):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        generators = [
            torch.Generator().manual_seed(r.seed) if r.temperature > 0 else None for r in batch
        ]
        stops = torch.as_tensor(self.stop_token_ids_, dtype=torch.long)
        new = [[] for _ in batch]
        finished = [False] * n
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                out = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                            use_cache=True)
                for _ in range(int(self.max_new_tokens)):
                    logits = out.logits[:, -1, :].float()
                    tokens = torch.empty(n, dtype=torch.long)
                    for row, r in enumerate(batch):
                        if finished[row]:
                            tokens[row] = self._pad_id
                        elif r.temperature == 0.0:
                            tokens[row] = int(torch.argmax(logits[row]))
                        else:
                            probs = torch.softmax(logits[row] / r.temperature, dim=-1)
                            tokens[row] = int(torch.multinomial(probs, 1,
                                                                generator=generators[row]))
                    for row in range(n):
                        if not finished[row]:
                            new[row].append(int(tokens[row]))
                            finished[row] = bool((tokens[row] == stops).any())
                    if all(finished):
                        break
                    mask = torch.cat([mask, torch.ones((n, 1), dtype=torch.long)], dim=1)
                    positions = positions[:, -1:] + 1
                    # transformers 5 names the KV cache `cache`, earlier versions
                    # `past_key_values`
                    key = "cache" if "cache" in out else "past_key_values"
                    out = model(input_ids=tokens[:, None], attention_mask=mask,
                                position_ids=positions, use_cache=True, **{key: out[key]})
        finally:
            model.train(was_training)
        stop_set = set(self.stop_token_ids_)
        for row, r in enumerate(batch):
            tokens = new[row]
            r.cut = not (tokens and tokens[-1] in stop_set)
            r.n_tokens = len(tokens)
            body = tokens if r.cut else tokens[:-1]
            r.reply = self.tokenizer.decode(body, skip_special_tokens=True)
        with self._cond:
            self.n_calls_ += n
            self.n_batches_ += 1
            self.n_new_tokens_ += sum(r.n_tokens for r in batch)
            self.n_cut_ += sum(r.cut for r in batch)
            self.generate_seconds_ += time.perf_counter() - start
