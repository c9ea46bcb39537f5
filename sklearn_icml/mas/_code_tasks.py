"""Code tasks for MAS: designs that write a function, and the program a reply is tested as.

A code task's query is a function's signature and docstring (a HumanEval prompt); a MAS
answers with text holding the function in a fenced Python block. :func:`code_mas_pool` holds
the built-in designs in the MAS template, adapted to code (one call, chain of thought,
generate-then-self-check, several samples with a test-free vote); :func:`completion_program`
turns a reply into the program that :func:`check_program` runs against the task's unit tests;
:func:`check_code_answer` is that check as an ``answer_checker`` of :class:`MASGPTSolver`.
No design sees the unit tests: the agents read only the prompt.
"""

import re

from sklearn.utils._param_validation import validate_params

from ..utils._param_validation import POSITIVE_INT
from ._code_checks import check_program
from ._program import _HEADER, MASProgram

__all__ = ["check_code_answer", "code_mas_pool", "completion_program"]

_OPEN_FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n")

# the agent prompt that asks for the function (taskInfo is the signature and docstring)
_WRITE = (
    '"Complete the following Python function. Reply with the complete function in one '
    '```python block.\\n```python\\n" + taskInfo + "\\n```"'
)
_COT = (
    '"Complete the following Python function. First explain in two or three sentences, '
    "step by step, how to solve it. Then write the complete function in one ```python "
    'block.\\n```python\\n" + taskInfo + "\\n```"'
)


def _single():
    return _HEADER + f'''    def forward(self, taskInfo):
        """One agent writes the function (greedy)."""
        return self.llm.call_llm({_WRITE}, 0.0)
'''


def _cot():
    return _HEADER + f'''    def forward(self, taskInfo):
        """One agent explains its approach, then writes the function (greedy)."""
        return self.llm.call_llm({_COT}, 0.0)
'''


def _self_check(rounds):
    return _HEADER + f'''    def forward(self, taskInfo):
        """Write the function, then a reviewer checks it against the docstring and its
        examples and rewrites it when it finds a mistake ({rounds} review rounds)."""
        answer = self.llm.call_llm({_COT}, 0.0)
        for _ in range({rounds}):
            code = extract_code(answer)
            if code is None:
                code = answer
            review = self.llm.call_llm(
                "Review this Python function against its specification: the docstring and "
                "its examples.\\nSpecification:\\n```python\\n" + taskInfo + "\\n```\\n"
                "Function:\\n```python\\n" + code + "\\n```\\nIf the function is correct, reply "
                "VERDICT: CORRECT. Otherwise explain the mistake and reply with the corrected "
                "complete function in one ```python block.", 0.0
            )
            if "VERDICT: CORRECT" in review or extract_code(review) is None:
                break
            answer = review
        return answer
'''


def _vote(n_samples):
    return "import re\n\n" + _HEADER + f'''    def normalize(self, code):
        lines = []
        for line in code.split("\\n"):
            line = line.split("#")[0].rstrip()
            if line.strip():
                lines.append(" ".join(line.split()))
        return "\\n".join(lines)

    def forward(self, taskInfo):
        """{n_samples} agents write the function (the first greedy, the others sampled); the
        most frequent program wins; without a majority a judge picks one by reading them."""
        replies = [self.llm.call_llm({_WRITE}, 0.0)]
        for _ in range({n_samples} - 1):
            replies.append(self.llm.call_llm({_WRITE}, 0.8))
        codes = [extract_code(r) for r in replies]
        keys = [None if c is None else self.normalize(c) for c in codes]
        best = majority_vote(keys)
        if best is not None and keys.count(best) > 1:
            return replies[keys.index(best)]
        candidates = [i for i, c in enumerate(codes) if c is not None]
        if len(candidates) < 2:
            return replies[candidates[0]] if candidates else replies[0]
        listing = "".join(
            "\\nSolution " + str(k + 1) + ":\\n```python\\n" + codes[i] + "\\n```"
            for k, i in enumerate(candidates)
        )
        verdict = self.llm.call_llm(
            "Which solution implements the specification correctly? Read the docstring and "
            "its examples.\\nSpecification:\\n```python\\n" + taskInfo + "\\n```" + listing
            + "\\nReply ANSWER: <number of the solution>.", 0.0
        )
        choice = extract_answer(verdict)
        digits = re.findall("[0-9]+", choice or "")
        if digits and 1 <= int(digits[0]) <= len(candidates):
            return replies[candidates[int(digits[0]) - 1]]
        return replies[candidates[0]]
'''


@validate_params(
    {"n_samples": [POSITIVE_INT], "check_rounds": [POSITIVE_INT]},
    prefer_skip_nested_validation=True,
)
def code_mas_pool(*, n_samples=3, check_rounds=1):
    """The built-in MAS designs adapted to code tasks, in the MAS template.

    Each design's ``forward(taskInfo)`` gets a function's signature and docstring and
    returns a reply holding the complete function in a fenced Python block. The agents see
    the prompt only, never the unit tests.

    Parameters
    ----------
    n_samples : int, default=3
        Agents of ``code_vote`` (the first decodes greedily, the others sample at
        temperature 0.8). It makes ``n_samples`` calls, one more when no program is written
        twice and a judge picks among them.
    check_rounds : int, default=1
        Review rounds of ``code_self_check`` (one call each, after the first).

    Returns
    -------
    pool : list of MASProgram
        ``code_single`` (one call), ``code_cot`` (one call that explains, then writes),
        ``code_self_check`` (write, then review and rewrite), ``code_vote`` (several
        samples, a vote on the normalised code, a judge without a majority), in that order.

    See Also
    --------
    default_mas_pool : the same designs for questions with a short answer.
    completion_program : the program a reply is tested as.

    Examples
    --------
    >>> from sklearn_icml.mas import code_mas_pool
    >>> pool = code_mas_pool()
    >>> [p.name for p in pool]
    ['code_single', 'code_cot', 'code_self_check', 'code_vote']
    >>> for program in pool:
    ...     program.validate()
    """
    return [
        MASProgram("code_single", _single(), "One attempt suffices for a simple function."),
        MASProgram("code_cot", _cot(),
                   "Explaining the approach first helps a function with a few steps."),
        MASProgram("code_self_check", _self_check(check_rounds),
                   "A reviewer that reads the docstring's examples catches slips."),
        MASProgram("code_vote", _vote(n_samples),
                   "Several attempts and a vote help when single attempts are noisy."),
    ]


def _last_code(text):
    """The last fenced block; a block cut before its closing fence counts to the end."""
    starts = list(_OPEN_FENCE.finditer(text))
    if not starts:
        return None
    body = text[starts[-1].end():]
    if "```" not in body and len(starts) > 1 and text.count("```") % 2 == 0:
        body = text[starts[-2].end():]  # the last opening fence was a closing one
    end = body.find("```")
    return body if end < 0 else body[:end]


@validate_params(
    {"prompt": [str], "answer": [str, None], "entry_point": [str]},
    prefer_skip_nested_validation=True,
)
def completion_program(prompt, answer, *, entry_point):
    """The program a reply to a code task is tested as.

    The code is the reply's last fenced Python block (one cut before its closing fence, at
    the token limit, counts to the end), or the whole reply without a fence. When it defines
    ``entry_point``, the program is ``prompt`` followed by the code (the prompt's imports
    stay, the new definition replaces the stub); otherwise the code is taken as the body
    that completes ``prompt``, HumanEval's convention.

    Parameters
    ----------
    prompt : str
        The task: signature and docstring.
    answer : str or None
        A MAS's or an LLM's reply (None, a failed run, gives ``prompt`` alone, which fails
        any test).
    entry_point : str
        The function's name.

    Returns
    -------
    program : str

    Examples
    --------
    >>> from sklearn_icml.mas import completion_program
    >>> prompt = "from math import fsum\\n\\n\\ndef total(xs):\\n    'The sum of xs.'\\n"
    >>> print(completion_program(prompt, "```python\\ndef total(xs):\\n    return fsum(xs)\\n```",
    ...                          entry_point="total"))
    from math import fsum
    <BLANKLINE>
    <BLANKLINE>
    def total(xs):
        'The sum of xs.'
    <BLANKLINE>
    def total(xs):
        return fsum(xs)
    <BLANKLINE>
    """
    if answer is None:
        return prompt
    code = _last_code(answer)
    if code is None:
        code = answer
    if re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE):
        return prompt.rstrip("\n") + "\n\n" + code.strip("\n") + "\n"
    return prompt + code


@validate_params(
    {"answer": [str, None], "task": "no_validation"}, prefer_skip_nested_validation=True
)
def check_code_answer(answer, task):
    """Whether ``answer`` passes the unit tests of ``task``: an ``answer_checker``.

    Parameters
    ----------
    answer : str or None
        A MAS's reply.
    task : mapping
        The task with keys ``prompt``, ``test`` and ``entry_point`` (a HumanEval problem
        from :func:`~sklearn_icml.datasets.load_humaneval`).

    Returns
    -------
    passed : bool
        :func:`check_program` of :func:`completion_program` (5 s timeout, the confined
        child process).

    Examples
    --------
    >>> from sklearn_icml.mas import check_code_answer
    >>> task = {"prompt": "def double(x):\\n", "entry_point": "double",
    ...         "test": "def check(f):\\n    assert f(2) == 4\\n"}
    >>> check_code_answer("    return 2 * x\\n", task), check_code_answer("    return x\\n", task)
    (True, False)
    """
    try:
        prompt, test, entry_point = task["prompt"], task["test"], task["entry_point"]
    except (KeyError, TypeError) as exc:
        raise TypeError(
            "task must be a mapping with keys 'prompt', 'test' and 'entry_point' (a problem "
            f"of load_humaneval()). Got {type(task).__name__} instead."
        ) from exc
    program = completion_program(prompt, answer, entry_point=entry_point)
    return check_program(program, test, entry_point=entry_point).passed
