"""The LLM interface: a plain callable ``(prompt, temperature) -> str``, and three of them.

- :class:`AgentLLM` wraps any such callable as what generated code sees as ``self.llm``;
- :class:`ArithmeticMockLLM` is the deterministic agent LLM of the arithmetic test bed;
- :class:`OpenAICompatibleLLM` posts to any OpenAI-compatible ``/chat/completions``
  endpoint with the standard library (no extra dependency, nothing contacted at import).

Each is a scikit-learn ``BaseEstimator``: ``__init__`` stores the parameters, which are
validated at the first call.
"""

import json
import re
import urllib.error
import urllib.request

from sklearn.base import BaseEstimator

from ..base import SetUpAtFirstUseMixin
from ..utils import check_generator
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ._sandbox import check_temperature, clean_text
from ._validation import check_instance

__all__ = ["AgentLLM", "ArithmeticMockLLM", "OpenAICompatibleLLM"]



def _strip_think(text):
    """``text`` without its ``<think>...</think>`` spans, as ``re.sub(r"<think>.*?</think>",
    "", text, flags=re.DOTALL)`` but in one pass: a span that opens without a later close
    ends the scan, since no later span could close either."""
    parts, pos = [], 0
    while (start := text.find("<think>", pos)) >= 0:
        end = text.find("</think>", start + 7)
        if end < 0:
            break
        parts.append(text[pos:start])
        pos = end + 8
    parts.append(text[pos:])
    return "".join(parts)


class _CallableLLM(SetUpAtFirstUseMixin, BaseEstimator):
    """An LLM callable whose parameters are checked, and state made, at its first call.

    ``set_params`` makes the next call start over (a new random stream, counters at 0).
    Each subclass's ``_build`` checks what the constraints cannot and makes the state.
    """


class AgentLLM(_CallableLLM):
    """An LLM callable as generated MAS code uses it: ``call_llm(prompt)`` and a call count.

    Parameters
    ----------
    llm : callable
        ``llm(prompt, temperature) -> str``.
    default_temperature : float, default=0.5
        Temperature of calls that give none (the reference's agent default).

    Attributes
    ----------
    n_calls_ : int
        Calls made so far (set at the first call).

    Examples
    --------
    >>> from sklearn_icml.mas import AgentLLM
    >>> agent = AgentLLM(llm=lambda prompt, t: "<think>hmm</think>ANSWER: " + str(t))
    >>> agent.call_llm("hi"), agent.n_calls_
    ('ANSWER: 0.5', 1)
    """

    _parameter_constraints: dict = {
        "llm": [callable],
        "default_temperature": [NON_NEGATIVE_REAL],
    }

    @keyword_only_after(1)
    def __init__(self, *, llm=None, default_temperature=0.5):
        store_params(self, locals())

    def _build(self):
        self.n_calls_ = 0

    def call_llm(self, prompt, temperature=None):
        """Send ``prompt``; return the reply, cleaned, with ``<think>...</think>`` removed.

        Every reply is a valid, printable ``str`` by one rule, applied in one pass before
        anything else reads it: lone surrogates (which cannot be encoded), control
        characters (Unicode category Cc: C0 controls, DEL and C1 controls; ESC and CSI
        among them, so that a terminal escape sequence loses its introducer and cannot
        act) other than tab and newline, and the bidirectional embedding, override and
        isolate controls (U+202A-U+202E, U+2066-U+2069) are removed; then the
        ``<think>...</think>`` spans (a linear scan); then surrounding whitespace.

        Parameters
        ----------
        prompt : str
            The agent's prompt.
        temperature : float, default=None
            Sampling temperature: a real number (not a bool), finite and >= 0; None means
            ``default_temperature``.

        Returns
        -------
        reply : str

        Raises
        ------
        TypeError
            When ``prompt`` is not a str, ``temperature`` not a real number, or the LLM's
            reply not a str.
        ValueError
            When ``temperature`` is NaN, infinite or negative.
        """
        self._setup()
        check_instance(prompt, str, "prompt")
        if temperature is None:
            temperature = float(self.default_temperature)
        else:
            temperature = check_temperature(temperature)
        self.n_calls_ += 1
        reply = self.llm(prompt, temperature)
        if not isinstance(reply, str):
            raise TypeError(f"the LLM must return a str. Got {type(reply).__name__} instead.")
        return _strip_think(clean_text(str.__str__(reply))).strip()


# the three query families of make_arithmetic_queries, as the mock finds them in a prompt
_FAMILY_PATTERNS = {
    "add": re.compile(r"Add (-?\d+) and (-?\d+)\."),
    "mixed": re.compile(r"Compute (-?\d+) times (-?\d+) minus (-?\d+)\."),
    "solve": re.compile(r"Find the integer x such that (-?\d+)\*x \+ (-?\d+) = (-?\d+)\."),
}
_SOLUTION = re.compile(r"^Solution \d+:(.*)$", re.MULTILINE)
_ANSWER = re.compile(r"ANSWER:\s*(-?\d+)")
_PROPOSED = "Proposed answer:"
_SIGNED = re.compile(r"\s*(-?\d+)")  # tried only where an ANSWER: ends


def _find_proposed(text, pos):
    """``(start, end, value)`` of the first ``Proposed answer: ... ANSWER: <int>`` (on one
    line up to the ``ANSWER:``) at or after ``pos``, or None; as the regular expression
    ``Proposed answer:.*?ANSWER:\\s*(-?\\d+)`` but linear: when the first tag of a line
    finds no answer, no later tag of that line can, so the scan moves to the next line, and
    each ``ANSWER:`` is read once."""
    n = len(text)
    while (start := text.find(_PROPOSED, pos)) >= 0:
        line_end = text.find("\n", start)
        line_end = n if line_end < 0 else line_end
        at = start + len(_PROPOSED)
        while (at := text.find("ANSWER:", at, line_end)) >= 0:
            match = _SIGNED.match(text, at + 7)
            if match:
                return start, match.end(), match.group(1)
            at += 7
        pos = line_end
    return None


def _remove_proposed(text):
    """``text`` without its proposed answers (``re.sub`` of the pattern above, linear)."""
    parts, pos = [], 0
    while (found := _find_proposed(text, pos)) is not None:
        parts.append(text[pos:found[0]])
        pos = found[1]
    parts.append(text[pos:])
    return "".join(parts)
_NO_ANSWER = "I cannot help with that."


def _gold(family, numbers):
    a, b, *rest = (int(v) for v in numbers)
    if family == "add":
        return a + b
    if family == "mixed":
        return a * b - rest[0]
    return (rest[0] - b) // a


class ArithmeticMockLLM(_CallableLLM):
    """The deterministic agent LLM of the arithmetic test bed.

    The first line of a prompt is a tag, the query is found by the patterns of
    :func:`~sklearn_icml.datasets.make_arithmetic_queries`:

    - ``[SOLVE]``: ``ANSWER: v`` with ``v`` the gold answer with probability
      ``p_correct[family]``, else gold + s * k (s = +-1, k uniform in [1, 10**6]);
    - ``[AGGREGATE]``: the plurality of the ``ANSWER:`` values of the ``Solution i:`` lines
      (ties: the value seen first);
    - ``[VERIFY]``: ``VERDICT: CORRECT`` or ``VERDICT: WRONG`` about the line
      ``Proposed answer: ANSWER: v``; truthful when ``verifier[family]``, else always CORRECT;
    - anything else: "I cannot help with that.".

    Parameters
    ----------
    p_correct : dict, default=None
        Success probability of one SOLVE call per family; None means
        ``{"add": 1.0, "mixed": 0.6, "solve": 0.4}``.
    verifier : dict, default=None
        Whether VERIFY tells the truth, per family; None means
        ``{"add": False, "mixed": False, "solve": True}``.
    random_state : int, RandomState instance or None, default=0
        Seed of the one :class:`numpy.random.Generator` consumed call by call (see
        :func:`~sklearn_icml.utils.check_generator`).

    Attributes
    ----------
    n_calls_ : int
        Calls answered so far (set at the first call).
    calls_by_tag_ : dict
        Calls per tag (``"SOLVE"``, ``"AGGREGATE"``, ``"VERIFY"``, ``"other"``).

    Notes
    -----
    MAS-GPT [1]_ runs its multi-agent systems with real LLMs. This mock, an addition of
    this library, makes the method testable on a CPU: each query family has a
    different best design (one call suffices for ``add``, a vote helps ``mixed``, a
    truthful verifier helps ``solve``), so the pair selection has something to find.

    References
    ----------
    .. [1] R. Ye et al., "MAS-GPT: Training LLMs to Build LLM-based Multi-Agent Systems",
       ICML 2025, arXiv:2503.03686; the agents here are a seeded stand-in for its LLMs.

    Examples
    --------
    >>> from sklearn_icml.mas import ArithmeticMockLLM
    >>> llm = ArithmeticMockLLM(random_state=0)
    >>> llm("[SOLVE]\\nTask: Add 12 and 30.", 0.5)
    'ANSWER: 42'
    >>> llm("[AGGREGATE]\\nSolution 1: ANSWER: 7\\nSolution 2: ANSWER: 7", 0.5)
    'ANSWER: 7'
    """

    _parameter_constraints: dict = {
        "p_correct": [dict, None],
        "verifier": [dict, None],
        "random_state": ["random_state"],
    }

    def __init__(self, *, p_correct=None, verifier=None, random_state=0):
        store_params(self, locals())

    def _build(self):
        p = {"add": 1.0, "mixed": 0.6, "solve": 0.4}
        v = {"add": False, "mixed": False, "solve": True}
        for given, default, label in (
            (self.p_correct, p, "p_correct"), (self.verifier, v, "verifier")
        ):
            if given is None:
                continue
            if not set(given) <= set(default):
                raise ValueError(
                    f"{label} must be a dict with keys among {sorted(default)}. Got "
                    f"{given!r} instead."
                )
            default.update(given)
        for family, prob in p.items():
            if not 0.0 <= float(prob) <= 1.0:
                raise ValueError(
                    f"p_correct[{family!r}] must be in [0, 1]. Got {prob!r} instead."
                )
        self._p, self._verifier = p, v
        self._rng = check_generator(self.random_state)
        self.n_calls_ = 0
        self.calls_by_tag_ = {"SOLVE": 0, "AGGREGATE": 0, "VERIFY": 0, "other": 0}

    @staticmethod
    def _find_query(text):
        for family, pattern in _FAMILY_PATTERNS.items():
            match = pattern.search(text)
            if match:
                return family, _gold(family, match.groups())
        return None, None

    def __call__(self, prompt, temperature=0.5):
        """The reply to ``prompt`` (``temperature`` is accepted and ignored)."""
        self._setup()
        self.n_calls_ += 1
        first, _, rest = str(prompt).partition("\n")
        tag = first.strip()
        if tag == "[SOLVE]":
            self.calls_by_tag_["SOLVE"] += 1
            family, gold = self._find_query(rest)
            if family is None:
                return _NO_ANSWER
            if self._rng.random() < self._p[family]:
                return f"ANSWER: {gold}"
            sign = 1 if self._rng.random() < 0.5 else -1
            return f"ANSWER: {gold + sign * int(self._rng.integers(1, 10**6 + 1))}"
        if tag == "[AGGREGATE]":
            self.calls_by_tag_["AGGREGATE"] += 1
            counts, first_seen = {}, {}
            for i, line in enumerate(_SOLUTION.findall(rest)):
                found = _ANSWER.findall(line)
                if found:
                    value = found[-1]
                    counts[value] = counts.get(value, 0) + 1
                    first_seen.setdefault(value, i)
            if not counts:
                return _NO_ANSWER
            best = max(counts, key=lambda v: (counts[v], -first_seen[v]))
            return f"ANSWER: {best}"
        if tag == "[VERIFY]":
            self.calls_by_tag_["VERIFY"] += 1
            proposed = _find_proposed(rest, 0)
            family, gold = self._find_query(_remove_proposed(rest))
            if family is not None and not self._verifier[family]:
                return "VERDICT: CORRECT"
            ok = family is not None and proposed is not None and int(proposed[2]) == gold
            return "VERDICT: CORRECT" if ok else "VERDICT: WRONG"
        self.calls_by_tag_["other"] += 1
        return _NO_ANSWER


class OpenAICompatibleLLM(_CallableLLM):
    """An agent or generator LLM served by any OpenAI-compatible HTTP endpoint.

    Each call posts one user message to ``{base_url}/chat/completions`` and returns the
    first choice's content. Only the standard library is used, and nothing is contacted
    until the first call.

    Parameters
    ----------
    base_url : str, default="http://127.0.0.1:8000/v1"
        The endpoint's base URL, e.g. a local vLLM or llama.cpp server.
    model : str, default=None
        The model name the server expects (required before the first call).
    api_key : str, default=None
        Sent as ``Authorization: Bearer <api_key>`` when given.
    max_tokens : int, default=2048
        ``max_tokens`` of the request (the reference's agent budget).
    timeout : float, default=60.0
        Seconds to wait for the HTTP reply.
    system_prompt : str, default=None
        Optional system message put before the prompt.

    Examples
    --------
    >>> from sklearn_icml.mas import OpenAICompatibleLLM
    >>> llm = OpenAICompatibleLLM(base_url="http://127.0.0.1:8000/v1", model="qwen")
    >>> callable(llm)
    True
    """

    _parameter_constraints: dict = {
        "base_url": [str],
        "model": [str, None],
        "api_key": [str, None],
        "max_tokens": [POSITIVE_INT],
        "timeout": [POSITIVE_REAL],
        "system_prompt": [str, None],
    }

    @keyword_only_after(1)
    def __init__(self, *, base_url="http://127.0.0.1:8000/v1", model=None, api_key=None,
                 max_tokens=2048, timeout=60.0, system_prompt=None):
        store_params(self, locals())

    def _build(self):
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL. Got {self.base_url!r} instead.")
        if not self.model:
            raise ValueError(f"model must be a non-empty str. Got {self.model!r} instead.")

    def __call__(self, prompt, temperature=0.5):
        """Post ``prompt`` (one user message) and return the first choice's content."""
        self._setup()
        messages = [{"role": "user", "content": prompt}]
        if self.system_prompt:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        body = json.dumps(
            {"model": self.model, "messages": messages, "temperature": float(temperature),
             "max_tokens": int(self.max_tokens)}
        ).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.base_url.rstrip("/") + "/chat/completions", data=body, headers=headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.loads(response.read().decode())
        except urllib.error.HTTPError as exc:
            raise RuntimeError(
                f"the LLM endpoint {self.base_url!r} answered HTTP {exc.code}: "
                f"{exc.read()[:500].decode(errors='replace')}"
            ) from exc
        except (urllib.error.URLError, TimeoutError) as exc:
            raise RuntimeError(
                f"the LLM endpoint {self.base_url!r} is unreachable: {exc}"
            ) from exc
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise RuntimeError(
                f"the LLM endpoint {self.base_url!r} sent no choices[0].message.content: "
                f"{str(payload)[:500]}"
            ) from exc
        return content if isinstance(content, str) else ""
