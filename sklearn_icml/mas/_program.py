"""MASProgram: a multi-agent system as validated Python source, and the built-in MAS pool."""

import dataclasses

from sklearn.utils._param_validation import validate_params

from ..utils._param_validation import POSITIVE_INT
from . import _sandbox
from ._sandbox import check_source

__all__ = [
    "MASProgram",
    "default_answer_checker",
    "default_mas_pool",
    "extract_answer",
    "extract_code",
    "fallback_mas",
]


@dataclasses.dataclass(frozen=True)
class MASProgram:
    r"""A multi-agent system written as code in the MAS-GPT template.

    The source defines ``class MAS`` with ``__init__(self, model_list)``, which builds
    ``self.llm = LLM(model_list)``, and ``forward(self, taskInfo)``, which returns the final
    answer string. Agents are prompts sent through ``self.llm.call_llm(prompt)``; agents talk
    by pasting one reply into the next prompt. The namespace also offers the helpers
    ``extract_answer``, ``extract_code`` and ``majority_vote``.

    Parameters
    ----------
    name : str
        Identifier of the design (unique within a pool).
    code : str
        The Python source.
    rationale : str, default=""
        Why this design fits the query (the text that precedes the code in MAS-GPT's
        training targets).

    See Also
    --------
    default_mas_pool : the built-in designs.
    MASExecutor : runs a program on a query.

    Notes
    -----
    A program is a value (a frozen record of its source), not an estimator: it has no
    parameters to tune, and :class:`MASExecutor` holds how it is run. The template is
    MAS-GPT's [1]_; the allow-lists of :meth:`validate` are this library's guard around
    generated code.

    References
    ----------
    .. [1] R. Ye et al., "MAS-GPT: Training LLMs to Build LLM-based Multi-Agent Systems",
       ICML 2025, arXiv:2503.03686: MAS as executable code in one template.

    Examples
    --------
    >>> from sklearn_icml.mas import MASProgram
    >>> code = '''
    ... class MAS:
    ...     def __init__(self, model_list):
    ...         self.llm = LLM(model_list)
    ...     def forward(self, taskInfo):
    ...         return self.llm.call_llm("[SOLVE]\\nTask: " + taskInfo)
    ... '''
    >>> MASProgram("cot", code).validate()
    >>> MASProgram("bad", "import os\n" + code).validate()
    Traceback (most recent call last):
    ...
    ValueError: program 'bad' imports 'os' (line 1); allowed modules are [...].
    """

    name: str
    code: str
    rationale: str = ""

    def validate(self):
        """Check the source against the template and the program check's allow-lists.

        The check grants capabilities: a program sees only the functions, types and
        constants listed here, never a module object, a process-wide registry or a class
        whose members were not each chosen. This list is the one place where they are
        written down (a test keeps it and the code in step). It gives up early on hostile
        sizes:

        - **size**: at most 32 768 characters (checked before parsing), 20 000 syntax
          nodes and 100 levels of nesting (a walk without recursion);
        - **syntax**: definitions (``def``, ``class``), ``return``, assignments (``=``,
          ``+=``, annotated), ``for``, ``while``, ``if``, ``try``/``except``, ``raise``,
          ``assert``, ``import``, ``pass``, ``break``, ``continue``, expressions
          (operators but ``@``, comparisons, calls, attributes, subscripts, slices, ``lambda``,
          conditional expressions, ``:=``, comprehensions and generator expressions,
          f-strings, literals, starred). Not: ``finally`` (it runs on a timeout too and
          could replace it), ``match`` (its class patterns read any attribute), ``global``,
          ``nonlocal``, ``del``, ``with``, ``yield``, ``async``/``await``,
          ``try``/``except*``;
        - **top level**: imports, function and class definitions, a docstring and
          assignments of literal constants; ``class MAS`` with ``__init__(self,
          model_list)`` and ``forward(self, taskInfo)``;
        - **names** a program uses without binding them: the helpers ``LLM``,
          ``extract_answer``, ``extract_code``, ``majority_vote`` and the builtins ``abs
          all any ascii bin bool callable chr classmethod complex dict divmod enumerate
          filter float frozenset hasattr hex int isinstance issubclass iter len list
          map max min next object oct ord pow print property range repr reversed round set
          slice sorted staticmethod str sum super tuple zip``, the exceptions
          ``ArithmeticError AssertionError AttributeError Exception IndexError KeyError
          LookupError NotImplementedError OverflowError RuntimeError StopIteration
          TypeError ValueError ZeroDivisionError`` and ``True False None NotImplemented
          Ellipsis``. ``print`` writes nothing; ``hasattr`` answers False for an attribute
          a program may not read. No dunder names;
        - **bindings**: a program may not bind the name of any builtin (those above and all
          others, ``getattr`` or ``open`` as well) or of a helper, anywhere: assignment,
          ``:=``, parameter or default, ``for`` or comprehension target, ``except ... as``,
          import or ``import ... as``, ``def`` or ``class`` name;
        - **modules**, each imported as a fresh view that holds the members listed, one by
          one, and nothing else:

          - ``bisect``: ``bisect bisect_left bisect_right insort insort_left insort_right``;
          - ``collections``: ``Counter OrderedDict defaultdict deque`` (``Counter`` a
            function that makes one);
          - ``decimal``: ``Decimal`` (in a context of the run's own in-process);
          - ``fractions``: ``Fraction`` (a function that makes one);
          - ``functools``: ``cache cmp_to_key lru_cache partial reduce``;
          - ``heapq``: ``heapify heappop heappush heappushpop heapreplace merge nlargest
            nsmallest``;
          - ``itertools``: ``accumulate chain combinations combinations_with_replacement
            compress count cycle dropwhile filterfalse groupby islice pairwise permutations
            product repeat starmap takewhile tee zip_longest``;
          - ``json``: ``dumps loads``;
          - ``math``: ``acos acosh asin asinh atan atan2 atanh ceil comb copysign cos cosh
            degrees dist e erf erfc exp expm1 fabs factorial floor fmod frexp fsum gamma
            gcd hypot inf isclose isfinite isinf isnan isqrt lcm ldexp lgamma log log10
            log1p log2 modf nan nextafter perm pi pow prod radians remainder sin sinh sqrt
            tan tanh tau trunc ulp``;
          - ``random``: ``betavariate choice choices expovariate gauss getrandbits
            lognormvariate normalvariate paretovariate randint random randrange sample seed
            shuffle triangular uniform vonmisesvariate weibullvariate``, the methods of a
            ``random.Random(0)`` of the run's own (the global stream is not touched);
          - ``re``: ``A ASCII DOTALL I IGNORECASE M MULTILINE S VERBOSE X compile escape
            findall finditer fullmatch match search split sub subn``;
          - ``statistics``: ``fmean geometric_mean harmonic_mean mean median median_grouped
            median_high median_low mode multimode pstdev pvariance quantiles stdev
            variance``;
          - ``textwrap``: ``dedent fill indent shorten wrap``;
          - ``typing``: ``Any Callable Dict FrozenSet Iterable Iterator List Mapping Optional
            Sequence Set Tuple Union``, for annotations only (``Dict``, ``FrozenSet``,
            ``List``, ``Set``, ``Tuple`` are the builtin types, the others a placeholder);

          not ``copy`` (its ``dispatch_table`` is a process-wide registry), nor any other;
        - **attributes**: none that starts with ``_`` or belongs to the frame, code,
          generator, coroutine, async-generator or traceback families (``f_``, ``co_``,
          ``gi_``, ``cr_``, ``ag_``, ``tb_``), none of ``wraps update_wrapper
          WRAPPER_ASSIGNMENTS WRAPPER_UPDATES get_type_hints ForwardRef get_overloads
          singledispatch singledispatchmethod mro``; ``format``/``format_map`` only called on
          a string literal whose fields read no attribute or item; a guard compares a name
          only after checking that it is exactly a ``str`` (``type(name) is str``);
        - **definitions**: no dunder method but ``__init__``, decorators only
          ``staticmethod``, ``classmethod``, ``property``, base classes by name only;
        - **exceptions**: no bare ``except`` or ``except BaseException`` (either would
          swallow a timeout).

        The same attribute rule guards ``hasattr`` at run time. The check is
        the first layer only: :class:`MASExecutor` with ``sandbox="process"`` confines
        the process the program runs in as well.

        Raises
        ------
        ValueError
            Naming the first rule broken.
        """
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(
                f"MASProgram.name must be a non-empty str. Got {self.name!r} instead."
            )
        check_source(self.code, self.name)


@validate_params({"text": [str, None]}, prefer_skip_nested_validation=True)
def extract_code(text):
    """The last fenced code block of ``text``, or None when there is none.

    MAS-GPT's generator writes a rationale and then the MAS in a fenced Python block; this
    takes the last such block.

    Parameters
    ----------
    text : str or None
        A generator's reply.

    Returns
    -------
    code : str or None
        The block's source without its fences.

    Examples
    --------
    >>> from sklearn_icml.mas import extract_code
    >>> extract_code("Rationale.\\n```python\\nx = 1\\n```")
    'x = 1'
    """
    return _sandbox.extract_code(text)


@validate_params({"text": [str, None]}, prefer_skip_nested_validation=True)
def extract_answer(text):
    """The value after the last ``ANSWER:`` in ``text`` (stripped), or None.

    The agents of the built-in designs end their replies with ``ANSWER: <value>``.

    Parameters
    ----------
    text : str or None
        An agent's reply, or a MAS's final answer.

    Returns
    -------
    value : str or None

    Examples
    --------
    >>> from sklearn_icml.mas import extract_answer
    >>> extract_answer("ANSWER: 3\\nso ANSWER: 42 ")
    '42'
    """
    return _sandbox.extract_answer(text)


@validate_params(
    {"pred": [str, None], "gold": "no_validation"},
    prefer_skip_nested_validation=True,
)
def default_answer_checker(pred, gold):
    """True when the last ``ANSWER: v`` of ``pred`` equals ``str(gold)``, both stripped.

    Parameters
    ----------
    pred : str or None
        The text a MAS returned (None when it failed).
    gold : object
        The reference answer.

    Returns
    -------
    bool
        Whether the answer of ``pred`` is ``gold``.

    Examples
    --------
    >>> from sklearn_icml.mas import default_answer_checker
    >>> default_answer_checker("so ANSWER: 3\\nANSWER: 42 ", 42)
    True
    >>> default_answer_checker(None, 42)
    False
    """
    if pred is None:
        return False
    value = _sandbox.extract_answer(pred)
    return value is not None and value == str(gold).strip()


_HEADER = '''class MAS:
    def __init__(self, model_list):
        self.llm = LLM(model_list)

'''

_SOLVE = (
    '"[SOLVE]\\nThink step by step and solve the task. End with a line '
    "'ANSWER: <value>'.\\nTask: \" + taskInfo"
)


def _cot():
    return _HEADER + f'''    def forward(self, taskInfo):
        """One chain-of-thought agent."""
        return self.llm.call_llm({_SOLVE})
'''


def _self_consistency(n):
    return _HEADER + f'''    def forward(self, taskInfo):
        """{n} independent chain-of-thought agents, then one agent takes the final decision."""
        solutions = [self.llm.call_llm({_SOLVE}) for _ in range({n})]
        listing = "\\n".join(
            "Solution " + str(i + 1) + ": " + s.replace("\\n", " ")
            for i, s in enumerate(solutions)
        )
        prompt = (
            "[AGGREGATE]\\nGiven the task and the solutions below, give the final answer as "
            "'ANSWER: <value>'.\\nTask: " + taskInfo + "\\n" + listing
        )
        return self.llm.call_llm(prompt)
'''


def _self_refine(rounds):
    return _HEADER + f'''    def forward(self, taskInfo):
        """Solve, let a verifier judge, and try again while it says WRONG ({rounds} tries)."""
        answer = None
        feedback = ""
        for _ in range({rounds}):
            answer = self.llm.call_llm({_SOLVE} + feedback)
            verdict = self.llm.call_llm(
                "[VERIFY]\\nJudge the proposed answer; reply 'VERDICT: CORRECT' or "
                "'VERDICT: WRONG'.\\nTask: " + taskInfo + "\\nProposed answer: "
                + answer.replace("\\n", " ")
            )
            if "VERDICT: CORRECT" in verdict:
                break
            feedback = "\\nA previous attempt was judged wrong: " + answer.replace("\\n", " ")
        return answer
'''


def _debate(n_agents, n_rounds):
    return _HEADER + f'''    def forward(self, taskInfo):
        """{n_agents} agents debate for {n_rounds} rounds, then a judge decides."""
        answers = [self.llm.call_llm({_SOLVE}) for _ in range({n_agents})]
        for _ in range({n_rounds} - 1):
            others = " | ".join(a.replace("\\n", " ") for a in answers)
            answers = [
                self.llm.call_llm({_SOLVE} + "\\nOther agents answered: " + others)
                for _ in range({n_agents})
            ]
        listing = "\\n".join(
            "Solution " + str(i + 1) + ": " + a.replace("\\n", " ") for i, a in enumerate(answers)
        )
        return self.llm.call_llm(
            "[AGGREGATE]\\nJudge the debate and give the final answer as 'ANSWER: <value>'."
            "\\nTask: " + taskInfo + "\\n" + listing
        )
'''


@validate_params(
    {
        "n_sc": [POSITIVE_INT],
        "refine_rounds": [POSITIVE_INT],
        "debate": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def default_mas_pool(n_sc=5, refine_rounds=3, *, debate=True):
    """The built-in MAS designs, in the unified template.

    Parameters
    ----------
    n_sc : int, default=5
        Chain-of-thought agents of self-consistency (it makes ``n_sc + 1`` calls).
    refine_rounds : int, default=3
        Solve-and-verify attempts of self-refine (2 calls each).
    debate : bool, default=True
        Include ``"debate"`` (3 agents x 2 rounds + a judge: 7 calls).

    Returns
    -------
    pool : list of MASProgram
        ``cot``, ``self_consistency``, ``self_refine`` (and ``debate``), in that order.

    Examples
    --------
    >>> from sklearn_icml.mas import default_mas_pool
    >>> [p.name for p in default_mas_pool()]
    ['cot', 'self_consistency', 'self_refine', 'debate']
    """
    pool = [
        MASProgram("cot", _cot(), "A single agent suffices when one attempt is reliable."),
        MASProgram(
            "self_consistency",
            _self_consistency(n_sc),
            "Independent attempts and a vote help when single attempts are noisy.",
        ),
        MASProgram(
            "self_refine",
            _self_refine(refine_rounds),
            "Verify-and-retry helps when answers can be checked reliably.",
        ),
    ]
    if debate:
        pool.append(
            MASProgram("debate", _debate(3, 2), "Agents that see each other's answers.")
        )
    return pool


def fallback_mas():
    """The fallback MAS: 5 chain-of-thought agents and one final-decision agent.

    It runs in place of a generated MAS that times out (:class:`MASExecutor`) or that
    has no valid code (:class:`MASGPTRouter`).

    Returns
    -------
    MASProgram
        The fallback program.

    Examples
    --------
    >>> from sklearn_icml.mas import fallback_mas
    >>> fallback_mas().name
    'fallback'
    """
    return MASProgram(
        "fallback", _self_consistency(5), "Self-consistency: a safe default for any query."
    )


# A number no template is built with: where it appears in a template's text, a shipped
# program has its own parameter.
_SENTINEL = "987654321"
_DIGITS = frozenset("0123456789")


def is_shipped(code):
    """Whether ``code`` is the source of a program the library ships.

    These are the designs of :func:`default_mas_pool` (for any ``n_sc`` and
    ``refine_rounds``) and :func:`fallback_mas`, character for character; they are the only
    programs ``MASExecutor(sandbox="unsafe-inprocess")`` runs. The check reads ``code``
    once (no regular expression, no parsing).

    Parameters
    ----------
    code : str
        A program's source.

    Returns
    -------
    bool

    Examples
    --------
    >>> from sklearn_icml.mas import default_mas_pool
    >>> from sklearn_icml.mas._program import is_shipped
    >>> all(is_shipped(p.code) for p in default_mas_pool(n_sc=7))
    True
    >>> is_shipped(default_mas_pool()[0].code + "# changed")
    False
    """
    if type(code) is not str:
        return False
    if code == _cot() or code == _debate(3, 2):
        return True
    for template in (_self_consistency, _self_refine):
        pattern = template(_SENTINEL)
        prefix = pattern[: pattern.index(_SENTINEL)]
        if not code.startswith(prefix):
            continue
        end = len(prefix)
        while end < len(prefix) + 9 and code[end:end + 1] in _DIGITS:
            end += 1
        digits = code[len(prefix):end]
        if digits and code == template(int(digits)):
            return True
    return False
