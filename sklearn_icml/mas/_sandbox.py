"""The guard around generated MAS code: the program check, the capability namespace, the child.

This module imports only the standard library, because it is also run as a script
(``python -I -S -B _sandbox.py``) in the child process that executes generated code. It holds

- :func:`check_source`, the program check: an allow-list of syntax (node types), of the names
  a program may use without defining them (and may never bind), of modules and of their
  members, and of attribute names, checked with limits on the source size, the number of
  nodes and the nesting depth;
- :func:`restricted_namespace`, the globals the code runs in: capabilities only, i.e. the
  functions, types and constants listed below one by one, with no module object, no
  process-wide registry and no class whose members were not each chosen (an import hands
  out a fresh view that holds the listed members of a module and nothing else);
- the linear-time text helpers that the namespace offers and the parent uses on text that a
  program or an LLM controls (:func:`extract_code`, :func:`extract_answer`,
  :func:`clean_text`, :func:`check_temperature`), and :class:`Limits`, the limits of a run,
  applied the same way in this process and in the child;
- the child's main function: it confines itself (parent-death signal, resource limits, no
  descriptors beyond 0-2, ``no_new_privs`` and a seccomp filter that lets only memory, clock,
  read/write and exit system calls through) *before* it reads a byte of the program, tells the
  parent that it is ready to be inspected, then reads one job, runs
  ``MAS(model_list).forward(query)`` and forwards each ``call_llm`` to the parent over its
  stdout/stdin pipes, one JSON object per line. The parent does not believe the child: it
  checks the confinement in ``/proc/<pid>`` before it sends the program.
"""

import ast
import builtins
import importlib
import json
import math
import re
import string
import sys
import types

# ----------------------------------------------------------------------------------------
# the capabilities (documented in MASProgram.validate; a test keeps the two in step)
# ----------------------------------------------------------------------------------------

# Limits of the check itself, so that validating hostile source cannot exhaust the caller.
# 32 768 characters hold about twice the 4096 new tokens the reference generator may write.
MAX_SOURCE_CHARS = 32_768
MAX_NODES = 20_000
MAX_DEPTH = 100

# Builtins generated code may use (the namespace holds nothing else). Not among them:
# open, eval, exec, compile, __import__, globals, locals, vars, dir, getattr, setattr,
# delattr, type, format, memoryview, input, breakpoint, help, exit, quit, id, hash.
# ``print`` discards its arguments; ``hasattr`` refuses the attribute names a program may
# not read.
SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "callable", "chr", "classmethod", "complex",
    "dict", "divmod", "enumerate", "filter", "float", "frozenset", "hasattr", "hex",
    "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next",
    "object", "oct", "ord", "pow", "print", "property", "range", "repr", "reversed", "round",
    "set", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "zip",
    "ArithmeticError", "AssertionError", "AttributeError", "Exception", "IndexError",
    "KeyError", "LookupError", "NotImplementedError", "OverflowError", "RuntimeError",
    "StopIteration", "TypeError", "ValueError", "ZeroDivisionError", "NotImplemented",
    "Ellipsis", "True", "False", "None",
)
# names the namespace provides without an import (the template's helpers that need no OS)
HELPER_NAMES = ("LLM", "extract_answer", "extract_code", "majority_vote")
# every name a program may use without binding it itself
ALLOWED_NAMES = frozenset(SAFE_BUILTINS) | frozenset(HELPER_NAMES)
# Names a program may never bind (assignment, parameter, default, for target, except ...
# as, import, comprehension, :=, def, class): every public builtin, also those that
# ``site`` adds, and every name of the namespace (``_``, which an interactive session may
# put among the builtins, stays free). Otherwise a name bound anywhere would pass the check
# everywhere and resolve, where the binding is not in scope, to the namespace's object.
RESERVED_NAMES = (
    frozenset(name for name in dir(builtins) if not name.startswith("_"))
    | frozenset({"copyright", "credits", "exit", "help", "license", "quit"})
    | ALLOWED_NAMES
)
# the only decorators
DECORATOR_NAMES = frozenset({"classmethod", "property", "staticmethod"})

# The members of each module a program may import, one by one. A member is a function, a
# constant, or a type implemented in C (whose attributes cannot be assigned). Pure-Python
# classes are offered as factory functions (``Counter``, ``Fraction``), so that the class
# itself, which a program could change, is not reachable. ``random`` is a
# ``random.Random(0)`` of the run's own, so the process's global stream is neither read nor
# changed. ``typing``'s names stand for annotations only: ``List``, ``Dict``, ``Tuple``,
# ``Set`` and ``FrozenSet`` are the builtin types, the others an inert placeholder.
# Not offered: ``copy`` (its ``dispatch_table`` is copyreg's process-wide registry),
# ``decimal``'s contexts, ``json``'s encoder and decoder classes, ``re.purge``,
# ``collections.namedtuple`` (it compiles source), ``functools.wraps`` and friends.
MODULE_MEMBERS = {
    "bisect": ("bisect", "bisect_left", "bisect_right", "insort", "insort_left",
               "insort_right"),
    "collections": ("Counter", "OrderedDict", "defaultdict", "deque"),
    "decimal": ("Decimal",),
    "fractions": ("Fraction",),
    "functools": ("cache", "cmp_to_key", "lru_cache", "partial", "reduce"),
    "heapq": ("heapify", "heappop", "heappush", "heappushpop", "heapreplace", "merge",
              "nlargest", "nsmallest"),
    "itertools": ("accumulate", "chain", "combinations", "combinations_with_replacement",
                  "compress", "count", "cycle", "dropwhile", "filterfalse", "groupby",
                  "islice", "pairwise", "permutations", "product", "repeat", "starmap",
                  "takewhile", "tee", "zip_longest"),
    "json": ("dumps", "loads"),
    "math": ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "comb",
             "copysign", "cos", "cosh", "degrees", "dist", "e", "erf", "erfc", "exp", "expm1",
             "fabs", "factorial", "floor", "fmod", "frexp", "fsum", "gamma", "gcd", "hypot",
             "inf", "isclose", "isfinite", "isinf", "isnan", "isqrt", "lcm", "ldexp",
             "lgamma", "log", "log10", "log1p", "log2", "modf", "nan", "nextafter", "perm",
             "pi", "pow", "prod", "radians", "remainder", "sin", "sinh", "sqrt", "tan",
             "tanh", "tau", "trunc", "ulp"),
    "random": ("betavariate", "choice", "choices", "expovariate", "gauss", "getrandbits",
               "lognormvariate", "normalvariate", "paretovariate", "randint", "random",
               "randrange", "sample", "seed", "shuffle", "triangular", "uniform",
               "vonmisesvariate", "weibullvariate"),
    "re": ("A", "ASCII", "DOTALL", "I", "IGNORECASE", "M", "MULTILINE", "S", "VERBOSE", "X",
           "compile", "escape", "findall", "finditer", "fullmatch", "match", "search",
           "split", "sub", "subn"),
    "statistics": ("fmean", "geometric_mean", "harmonic_mean", "mean", "median",
                   "median_grouped", "median_high", "median_low", "mode", "multimode",
                   "pstdev", "pvariance", "quantiles", "stdev", "variance"),
    "textwrap": ("dedent", "fill", "indent", "shorten", "wrap"),
    "typing": ("Any", "Callable", "Dict", "FrozenSet", "Iterable", "Iterator", "List",
               "Mapping", "Optional", "Sequence", "Set", "Tuple", "Union"),
}
# Modules generated code may import; it gets a view holding only their listed members.
ALLOWED_MODULES = frozenset(MODULE_MEMBERS)

# Attribute names: none may start with "_"; none of the frame, code, generator, coroutine,
# async-generator and traceback families (they reach globals and builtins without a dunder);
# none of the names that copy attributes chosen by a string or evaluate strings.
FORBIDDEN_ATTRIBUTE_PREFIXES = ("_", "gi_", "f_", "tb_", "co_", "cr_", "ag_")
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "ForwardRef", "get_overloads", "get_type_hints", "mro", "singledispatch",
        "singledispatchmethod", "update_wrapper", "wraps", "WRAPPER_ASSIGNMENTS",
        "WRAPPER_UPDATES",
    }
)
# str methods that look attributes up by the names in the string; allowed only on a string
# literal whose fields read no attribute and no item
_FORMAT_METHODS = frozenset({"format", "format_map"})

_STATEMENTS = (
    ast.FunctionDef, ast.ClassDef, ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign,
    ast.For, ast.While, ast.If, ast.Raise, ast.Try, ast.Assert, ast.Import, ast.ImportFrom,
    ast.Expr, ast.Pass, ast.Break, ast.Continue,
)
_EXPRESSIONS = (
    ast.BoolOp, ast.NamedExpr, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.IfExp, ast.Dict,
    ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Compare, ast.Call,
    ast.FormattedValue, ast.JoinedStr, ast.Constant, ast.Attribute, ast.Subscript,
    ast.Starred, ast.Name, ast.List, ast.Tuple, ast.Slice,
)
_OTHERS = (
    ast.Module, ast.Load, ast.Store, ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.Div,
    ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.FloorDiv,
    ast.Invert, ast.Not, ast.UAdd, ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt,
    ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.comprehension, ast.ExceptHandler,
    ast.arguments, ast.arg, ast.keyword, ast.alias,
)
# The syntax a program may use. Not in it: match (its class patterns read any attribute),
# global, nonlocal, del, with, yield, async/await, try/except*, the @ operator; a try
# statement may not have a finally block (checked in check_source).
ALLOWED_NODES = frozenset(_STATEMENTS + _EXPRESSIONS + _OTHERS)


# ----------------------------------------------------------------------------------------
# text that a program or an LLM controls: linear scans only
# ----------------------------------------------------------------------------------------

# Each of these is anchored where it is tried and matches one run of one character class,
# so it reads each character once.
_BLANKS = re.compile(r"[ \t]*")
_FENCE_LANGUAGES = ("python", "py", "Python", "")
_ANSWER = "ANSWER:"
_SPACES = re.compile(r"\s*")


def extract_code(text):
    """The last fenced code block of ``text``, or None when there is none.

    A block opens with three backticks, optional blanks, an optional ``python``, ``py`` or
    ``Python``, optional blanks and a newline, and ends at the next three backticks. The
    scan reads each character a bounded number of times (a block either closes at the next
    fence or no later fence exists).
    """
    text = text or ""
    last, pos = None, 0
    while True:
        start = text.find("```", pos)
        if start < 0:
            return last
        after = _BLANKS.match(text, start + 3).end()
        body = -1
        for language in _FENCE_LANGUAGES:
            if text.startswith(language, after):
                end = _BLANKS.match(text, after + len(language)).end()
                if text.startswith("\n", end):
                    body = end + 1
                    break
        if body < 0:
            pos = start + 1
            continue
        close = text.find("```", body)
        if close < 0:
            return last  # no later fence at all: no later block either
        last = text[body:close].strip("\n")
        pos = close + 3


def extract_answer(text):
    """The value after the last ``ANSWER:`` in ``text`` (stripped), or None.

    As ``re.findall(r"ANSWER:\\s*(.+)", text)[-1].strip()``: a value runs to the end of its
    line, and an ``ANSWER:`` inside a value does not start another one. A linear scan.
    """
    text = text or ""
    last, pos, n = None, 0, len(text)
    while True:
        start = text.find(_ANSWER, pos)
        if start < 0:
            return last
        value = _SPACES.match(text, start + len(_ANSWER)).end()
        if value < n:  # a character that is not a space starts the value
            end = text.find("\n", value)
            end = n if end < 0 else end
            last, pos = text[value:end].strip(), end
            continue
        # only spaces up to the end: a value of one space that is not a newline, if any
        blank = _last_non_newline(text, start + len(_ANSWER), n)
        if blank < 0:
            pos = start + 1
            continue
        last, pos = "", blank + 1


def _last_non_newline(text, start, stop):
    """Index of the last character of ``text[start:stop]`` that is not a newline, or -1."""
    stripped = len(text[start:stop].rstrip("\n"))
    return start + stripped - 1 if stripped else -1


def majority_vote(answers):
    """The most frequent of ``answers`` (None skipped); ties go to the one seen first."""
    counts, first = {}, {}
    for i, a in enumerate(answers):
        if a is None:
            continue
        counts[a] = counts.get(a, 0) + 1
        first.setdefault(a, i)
    if not counts:
        return None
    return max(counts, key=lambda a: (counts[a], -first[a]))


# Characters removed from every text an LLM or a program hands back (the rule of
# AgentLLM.call_llm and MASResult.answer): lone surrogates (they cannot be encoded), control
# characters (category Cc: C0, DEL, C1; ESC and CSI included, so that a terminal escape
# sequence cannot act) other than tab and newline, and the bidirectional embedding, override
# and isolate controls.
_REMOVED = dict.fromkeys(
    [c for c in range(0x20) if c not in (0x09, 0x0A)] + list(range(0x7F, 0xA0))
    + list(range(0xD800, 0xE000)) + list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A))
)


def clean_text(text):
    """``text`` without the characters of the documented rule (one pass over the text)."""
    return text.translate(_REMOVED)


def check_temperature(temperature):
    """Return ``temperature`` as a float: a real number (not a bool), finite and >= 0."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(
            "temperature must be a real number (int or float, not bool). Got "
            f"{type(temperature).__name__} {_short_repr(temperature)} instead."
        )
    try:
        value = float(temperature)
    except OverflowError:
        value = math.inf
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(
            f"temperature must be finite and >= 0. Got {_short_repr(temperature)} instead."
        )
    return value


def _short_repr(value):
    try:
        text = repr(value) if isinstance(value, (int, float)) else object.__repr__(value)
    except ValueError:  # an int with too many digits
        text = f"an int of {value.bit_length()} bits"
    return text[:80]


class Limits:
    """What may cross the boundary in one run, checked the same way in both modes.

    The checks run before the work they bound: a prompt is measured before it is sent,
    the call count before the call, an answer before it is handed back. In process mode
    the child applies them too (so that the messages are the same), and this process
    applies them again to what it receives, with a bound on the bytes of one message that
    no text within the limits reaches (JSON writes at most 12 bytes per character: an
    astral character is two ``\\uXXXX`` escapes).
    """

    __slots__ = ("max_llm_calls", "max_prompt_chars", "max_answer_chars")

    def __init__(self, max_llm_calls, max_prompt_chars, max_answer_chars):
        self.max_llm_calls = int(max_llm_calls)
        self.max_prompt_chars = int(max_prompt_chars)
        self.max_answer_chars = int(max_answer_chars)

    def __eq__(self, other):
        return isinstance(other, Limits) and self.as_list() == other.as_list()

    __hash__ = None

    def __repr__(self):
        return "Limits({}, {}, {})".format(*self.as_list())

    def as_list(self):
        return [self.max_llm_calls, self.max_prompt_chars, self.max_answer_chars]

    @property
    def max_message_bytes(self):
        return 12 * max(self.max_prompt_chars, self.max_answer_chars) + 4096

    def check_prompt(self, n_calls, prompt):
        """Why the ``n_calls``-th request with ``prompt`` is refused, or None."""
        if n_calls > self.max_llm_calls:
            return (f"limit exceeded: the program made more than {self.max_llm_calls} "
                    "agent-LLM calls (max_llm_calls)")
        if len(prompt) > self.max_prompt_chars:
            return (f"limit exceeded: a prompt of {len(prompt)} characters, more than "
                    f"max_prompt_chars={self.max_prompt_chars}")
        return None

    def check_answer(self, answer):
        """Why ``answer`` is refused, or None."""
        if answer is not None and len(answer) > self.max_answer_chars:
            return (f"limit exceeded: an answer of {len(answer)} characters, more than "
                    f"max_answer_chars={self.max_answer_chars}")
        return None


class LimitReached(BaseException):
    """Raised where a program passes a limit (a BaseException: past ``except Exception``)."""


class _Handle:
    """``self.llm`` of a program: only ``call_llm`` (its state is out of the program's reach)."""

    __slots__ = ("call_llm",)

    def __init__(self, call_llm):
        self.call_llm = call_llm


def limited_llm(limits, send):
    """What ``LLM(model_list)`` returns in both modes: ``call_llm(prompt, temperature=None)``.

    Each call checks, in this order, that the prompt is a str, the temperature (see
    :func:`check_temperature`), the call count and the prompt's length (:class:`Limits`),
    and only then hands an exact ``str`` copy of the prompt to ``send`` (the agent LLM in
    this process, or the request to the parent in the child).
    """
    n_calls = 0

    def call_llm(prompt, temperature=None):
        nonlocal n_calls
        if not isinstance(prompt, str):
            raise TypeError(f"call_llm needs a str prompt; got {type(prompt).__name__}")
        if temperature is not None:
            temperature = check_temperature(temperature)
        n_calls += 1
        refused = limits.check_prompt(n_calls, prompt)
        if refused:
            raise LimitReached(refused)
        return send(str.__str__(prompt), temperature)

    return _Handle(call_llm)


def answer_text(answer):
    """The str a program's return value is reported as (``str()`` of anything else)."""
    return answer if answer is None or type(answer) is str else str(answer)


# ----------------------------------------------------------------------------------------
# the program check
# ----------------------------------------------------------------------------------------


def imported_modules(code):
    """The allowed modules that the source ``code`` imports, as a sorted tuple (a child
    whose program imports none imports fewer modules before it is confined)."""
    if code in _IMPORTS:
        return _IMPORTS[code]
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return tuple(sorted(ALLOWED_MODULES))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    if len(_IMPORTS) >= 256:
        _IMPORTS.clear()
    _IMPORTS[code] = tuple(sorted(found & ALLOWED_MODULES))
    return _IMPORTS[code]


_IMPORTS = {}


def attribute_allowed(name):
    """Whether generated code may read or write the attribute ``name`` (an exact str)."""
    return (
        type(name) is str
        and not str.startswith(name, FORBIDDEN_ATTRIBUTE_PREFIXES)
        and name not in FORBIDDEN_ATTRIBUTES
        and name not in _FORMAT_METHODS
    )


def module_members(module_name):
    """The members of an allowed module that generated code may use (a tuple)."""
    if type(module_name) is not str:
        return ()
    return MODULE_MEMBERS.get(module_name, ())


def _is_literal(node):
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False
    return True


def _is_dunder(name):
    return type(name) is not str or (name.startswith("__") and name.endswith("__"))


def _format_reads_nothing(text):
    """Whether a format string's fields (and nested fields) read no attribute and no item."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return False
    for _, field, format_spec, _ in parsed:
        if field is not None and ("." in field or "[" in field):
            return False
        if format_spec and "{" in format_spec and not _format_reads_nothing(format_spec):
            return False
    return True


def _walk(tree, name):
    """Nodes of ``tree`` in pre-order, refusing unknown syntax, too many nodes, too deep."""
    nodes, stack = [], [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if type(node) not in ALLOWED_NODES:
            line = getattr(node, "lineno", "?")
            raise ValueError(
                f"program {name!r} uses {type(node).__name__} (line {line}), which generated "
                "code may not use."
            )
        if depth > MAX_DEPTH:
            raise ValueError(
                f"program {name!r} nests deeper than {MAX_DEPTH} levels (line "
                f"{getattr(node, 'lineno', '?')})."
            )
        nodes.append(node)
        if len(nodes) > MAX_NODES:
            raise ValueError(f"program {name!r} has more than {MAX_NODES} syntax nodes.")
        stack.extend((child, depth + 1) for child in reversed(list(ast.iter_child_nodes(node))))
    return nodes


def _check_top_level(tree, name):
    mas = None
    for i, stmt in enumerate(tree.body):
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef)):
            continue
        if isinstance(stmt, ast.ClassDef):
            if stmt.name == "MAS":
                mas = stmt
            continue
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # module docstring
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if all(isinstance(t, ast.Name) for t in targets) and _is_literal(stmt.value):
                continue
        raise ValueError(
            f"program {name!r} has a top-level {type(stmt).__name__} statement on line "
            f"{stmt.lineno}; only imports, function and class definitions and literal "
            "constants are allowed at the top level."
        )
    if mas is None:
        raise ValueError(f"program {name!r} does not define class MAS.")
    methods = {m.name: m for m in mas.body if isinstance(m, ast.FunctionDef)}
    for method in ("__init__", "forward"):
        if method not in methods:
            raise ValueError(f"program {name!r}: class MAS has no method {method!r}.")
        n_args = len(methods[method].args.posonlyargs) + len(methods[method].args.args)
        if n_args < 2 and methods[method].args.vararg is None:
            raise ValueError(
                f"program {name!r}: MAS.{method} must take (self, "
                f"{'model_list' if method == '__init__' else 'taskInfo'}); got {n_args} "
                "positional parameter(s) instead."
            )


def _bound_names(node):
    """The names ``node`` binds in its scope: ``[(name, what)]``."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [(node.id, "assigns")]
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [(node.name, "defines")]
    if isinstance(node, ast.arg):
        return [(node.arg, "has the parameter")]
    if isinstance(node, ast.ExceptHandler) and node.name is not None:
        return [(node.name, "binds (except ... as)")]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [((alias.asname or alias.name).partition(".")[0], "imports as")
                for alias in node.names]
    # refused as syntax already; listed so that the binding rule does not depend on that
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return [(n, "declares") for n in node.names]
    for kind, field in (("MatchAs", "name"), ("MatchStar", "name"), ("MatchMapping", "rest")):
        if type(node).__name__ == kind and getattr(node, field, None) is not None:
            return [(getattr(node, field), "captures")]
    return []


def check_source(code, name="program"):
    """Raise ValueError naming the first rule ``code`` breaks; return the tree.

    The rules are an allow-list (see :meth:`MASProgram.validate`); the source length is
    checked before parsing, and the tree is walked without recursion with limits on its
    size and depth, so that validating hostile source cannot exhaust the caller.
    """
    if not isinstance(code, str):
        raise TypeError(f"the code of {name!r} must be a str; got {type(code).__name__} instead.")
    if len(code) > MAX_SOURCE_CHARS:
        raise ValueError(
            f"program {name!r} has {len(code)} characters; at most {MAX_SOURCE_CHARS} are "
            "allowed."
        )
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(
            f"program {name!r} is not valid Python: {exc.msg} (line {exc.lineno})."
        ) from None
    except (RecursionError, MemoryError):
        raise ValueError(f"program {name!r} is nested too deeply to parse.") from None
    except ValueError as exc:  # null bytes
        raise ValueError(f"program {name!r} is not valid Python: {exc}.") from None
    nodes = _walk(tree, name)
    _check_top_level(tree, name)
    bound, aliases = set(), {}
    for node in nodes:
        for bound_name, what in _bound_names(node):
            line = getattr(node, "lineno", "?")
            init = isinstance(node, ast.FunctionDef) and bound_name == "__init__"
            if _is_dunder(bound_name) and not init:
                raise ValueError(
                    f"program {name!r} {what} {bound_name!r} (line {line}); dunder names "
                    "are not allowed."
                )
            if bound_name in RESERVED_NAMES:
                raise ValueError(
                    f"program {name!r} {what} {bound_name!r} (line {line}), the name of a "
                    "builtin or of a namespace member; a program may not bind those."
                )
            bound.add(bound_name)
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
    literal_formats = set()
    for node in nodes:
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_MODULES:
                    raise ValueError(
                        f"program {name!r} imports {alias.name!r} (line {line}); "
                        f"allowed modules are {sorted(ALLOWED_MODULES)}."
                    )
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module not in ALLOWED_MODULES:
                raise ValueError(
                    f"program {name!r} imports from {node.module!r} (line {line}); "
                    f"allowed modules are {sorted(ALLOWED_MODULES)}."
                )
            for alias in node.names:
                if alias.name == "*" or alias.name.startswith("_"):
                    raise ValueError(
                        f"program {name!r} imports {alias.name!r} from {node.module!r} "
                        f"(line {line}); import public names one by one."
                    )
                if alias.name not in module_members(node.module):
                    raise ValueError(
                        f"program {name!r} imports {alias.name!r} from {node.module!r} (line "
                        f"{line}), which generated code may not use."
                    )
        elif isinstance(node, ast.Name):
            if _is_dunder(node.id):
                raise ValueError(
                    f"program {name!r} uses the name {node.id!r} (line {line}); dunder names "
                    "are not allowed."
                )
            if isinstance(node.ctx, ast.Load) and node.id not in bound | ALLOWED_NAMES:
                raise ValueError(
                    f"program {name!r} uses the name {node.id!r} (line {line}), which it does "
                    "not define and which is not among the builtins and helpers generated "
                    "code may use."
                )
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _FORMAT_METHODS:
                receiver = func.value
                if not (
                    isinstance(receiver, ast.Constant) and isinstance(receiver.value, str)
                    and _format_reads_nothing(receiver.value)
                ):
                    raise ValueError(
                        f"program {name!r} calls {func.attr!r} (line {line}) on something "
                        "other than a string literal whose fields read no attribute or item."
                    )
                literal_formats.add(id(func))
        elif isinstance(node, ast.Attribute):
            attr = node.attr
            if attr in _FORMAT_METHODS and id(node) in literal_formats:
                continue
            if not attribute_allowed(attr):
                raise ValueError(
                    f"program {name!r} uses the attribute {attr!r} (line {line}); attributes "
                    "that start with '_', belong to the frame, code, generator or traceback "
                    "families (gi_, f_, tb_, co_, cr_, ag_), copy attributes by name or "
                    "evaluate strings are not allowed."
                )
            value = node.value
            if (
                isinstance(value, ast.Name) and value.id in aliases
                and attr not in module_members(aliases[value.id])
            ):
                raise ValueError(
                    f"program {name!r} uses {aliases[value.id]}.{attr} (line {line}), which "
                    "generated code may not use."
                )
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for deco in node.decorator_list:
                if not (isinstance(deco, ast.Name) and deco.id in DECORATOR_NAMES):
                    raise ValueError(
                        f"program {name!r} uses a decorator other than "
                        f"{sorted(DECORATOR_NAMES)} (line {line})."
                    )
            if isinstance(node, ast.ClassDef) and (
                node.keywords or not all(isinstance(b, ast.Name) for b in node.bases)
            ):
                raise ValueError(
                    f"program {name!r}: class {node.name} (line {line}) may only name base "
                    "classes, without keywords."
                )
        elif isinstance(node, ast.ExceptHandler):
            caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            if any(t is None or (isinstance(t, ast.Name) and t.id == "BaseException")
                   for t in caught):
                raise ValueError(
                    f"program {name!r} catches every exception (line {line}); catch "
                    "Exception or narrower, so that timeouts stay fatal."
                )
        elif isinstance(node, ast.Try) and node.finalbody:
            raise ValueError(
                f"program {name!r} has a finally block (line {node.finalbody[0].lineno}); a "
                "finally block runs on a timeout too and could replace it, so it is not "
                "allowed."
            )
    return tree


# ----------------------------------------------------------------------------------------
# the capability namespace
# ----------------------------------------------------------------------------------------


class _Annotation:
    """What ``typing``'s abstract names are in a program: subscriptable, and nothing else."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __getitem__(self, item):
        return self

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __repr__(self):
        return f"typing.{self._name}"


def _counter(*args, **kwargs):
    import collections

    return collections.Counter(*args, **kwargs)


def _fraction(*args, **kwargs):
    import fractions

    return fractions.Fraction(*args, **kwargs)


def _member(module_name, key, run_random):
    """The object a program gets for ``module_name.key``."""
    if module_name == "random":
        return getattr(run_random, key)
    if module_name == "typing":
        builtin = {"Dict": dict, "FrozenSet": frozenset, "List": list, "Set": set,
                   "Tuple": tuple}.get(key)
        return builtin if builtin is not None else _Annotation(key)
    if (module_name, key) == ("collections", "Counter"):
        return _counter
    if (module_name, key) == ("fractions", "Fraction"):
        return _fraction
    return getattr(importlib.import_module(module_name), key)


def _module_view(module_name, run_random):
    """A fresh object holding the listed members of ``module_name`` (those this Python has)."""
    view = types.SimpleNamespace()
    module = importlib.import_module(module_name)
    for key in MODULE_MEMBERS[module_name]:
        if module_name in ("random", "typing") or hasattr(module, key):
            setattr(view, key, _member(module_name, key, run_random))
    return view


def _safe_hasattr(obj, name):
    return attribute_allowed(name) and hasattr(obj, name)


def _discard(*args, **kwargs):
    """``print`` of generated code: its output goes nowhere (not to this process's stdout)."""


def restricted_namespace(llm_handle):
    """Fresh globals for generated code: the capabilities, and nothing else.

    ``llm_handle`` is what ``LLM(model_list)`` returns: an object with ``call_llm``.
    """
    import random

    views = {}
    run_random = random.Random(0)

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if type(name) is not str or level or name not in ALLOWED_MODULES:
            raise ImportError(f"generated code may not import {name!r}")
        if name not in views:
            views[name] = _module_view(name, run_random)
        return views[name]

    safe = {key: getattr(builtins, key) for key in SAFE_BUILTINS}
    safe.update(
        __build_class__=builtins.__build_class__,
        __import__=guarded_import,
        hasattr=_safe_hasattr,
        print=_discard,
    )

    def LLM(model_list=None):  # noqa: N802 - the name of the reference template
        return llm_handle

    return {
        "__builtins__": safe,
        "__name__": "generated_mas",
        "LLM": LLM,
        "extract_answer": extract_answer,
        "extract_code": extract_code,
        "majority_vote": majority_vote,
    }


def execute_forward(code, query, llm_handle, *, check=True, compiled=None):
    """Execute ``code`` in a restricted namespace and return ``MAS([llm]).forward(query)``.

    ``check=False`` (a test hook of the child only) runs the code with the real builtins.
    """
    if compiled is None:
        compiled = compile(check_source(code) if check else code, "<generated MAS>", "exec")
    if check:
        namespace = restricted_namespace(llm_handle)
    else:
        namespace = {"__name__": "generated_mas", "LLM": lambda model_list=None: llm_handle,
                     "extract_answer": extract_answer, "extract_code": extract_code,
                     "majority_vote": majority_vote}
    exec(compiled, namespace)
    mas = namespace["MAS"]([llm_handle])
    return mas.forward(query)


# ----------------------------------------------------------------------------------------
# the child process
# ----------------------------------------------------------------------------------------

# system calls the child may make once confined; all others fail with EPERM (among them
# open, openat, socket, connect, clone, clone3, fork, vfork, execve, kill, setsid, prctl)
_SYSCALLS = {
    # x86-64
    0xC000003E: {
        "read": 0, "write": 1, "close": 3, "fstat": 5, "lseek": 8, "mmap": 9, "mprotect": 10,
        "munmap": 11, "brk": 12, "rt_sigaction": 13, "rt_sigprocmask": 14,
        "rt_sigreturn": 15, "readv": 19, "writev": 20, "sched_yield": 24, "mremap": 25,
        "madvise": 28, "nanosleep": 35, "getpid": 39, "exit": 60, "gettimeofday": 96,
        "sigaltstack": 131, "gettid": 186, "futex": 202, "clock_gettime": 228,
        "clock_getres": 229, "clock_nanosleep": 230, "exit_group": 231, "getrandom": 318,
    },
    # aarch64 (asm-generic numbers)
    0xC00000B7: {
        "close": 57, "lseek": 62, "read": 63, "write": 64, "readv": 65, "writev": 66,
        "fstat": 80, "exit": 93, "exit_group": 94, "futex": 98, "nanosleep": 101,
        "clock_gettime": 113, "clock_getres": 114, "clock_nanosleep": 115,
        "sched_yield": 124, "sigaltstack": 132, "rt_sigaction": 134, "rt_sigprocmask": 135,
        "rt_sigreturn": 139, "gettimeofday": 169, "getpid": 172, "gettid": 178, "brk": 214,
        "munmap": 215, "mremap": 216, "mmap": 222, "mprotect": 226, "madvise": 233,
        "getrandom": 278,
    },
}
MACHINE_ARCH = {"x86_64": 0xC000003E, "amd64": 0xC000003E, "aarch64": 0xC00000B7,
                "arm64": 0xC00000B7}
_PR_SET_PDEATHSIG, _PR_SET_SECCOMP, _PR_SET_CHILD_SUBREAPER, _PR_SET_NO_NEW_PRIVS = 1, 22, 36, 38

# resource limits of the child: (name, value or the key of the value in the job)
RLIMITS = (
    ("RLIMIT_CORE", 0),
    ("RLIMIT_FSIZE", 0),  # no file may grow
    ("RLIMIT_NOFILE", 3),  # no descriptor beyond stdin, stdout, stderr
    ("RLIMIT_CPU", "cpu_seconds"),
    ("RLIMIT_AS", "memory_bytes"),
    ("RLIMIT_NPROC", 0),  # not enforced for root; the seccomp filter refuses fork anyway
)
# modules the child imports only with the program check off (a test hook): what an escaped
# program would use, imported before confinement because nothing can be opened after it
_TEST_MODULES = ("ctypes", "os", "resource", "signal", "socket", "subprocess", "threading",
                 "time")


def _prctl():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl  # AttributeError off Linux
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                      ctypes.c_ulong]
    return prctl


def _install_seccomp(prctl, arch):
    """``no_new_privs``, then a filter that lets only the system calls of ``_SYSCALLS`` pass."""
    import ctypes

    allowed = sorted(_SYSCALLS[arch].values())
    ld_w_abs, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    kill, allow, eperm = 0x80000000, 0x7FFF0000, 0x00050000 | 1
    prog = [(ld_w_abs, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, kill), (ld_w_abs, 0, 0, 0)]
    if arch == 0xC000003E:  # refuse the x32 ABI's aliases
        prog += [(jge, 0, 1, 0x40000000), (ret, 0, 0, kill)]
    for nr in allowed:
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, allow)]
    prog.append((ret, 0, 0, eperm))

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte),
                    ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    filters = (SockFilter * len(prog))(*[SockFilter(*p) for p in prog])
    fprog = SockFprog(len(prog), filters)
    if prctl(_PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) == 0:
        prctl(_PR_SET_SECCOMP, 2, ctypes.addressof(fprog), 0, 0)  # SECCOMP_MODE_FILTER


def _confine(parent_pid, limits, install_filter=True):
    """Confine this process; the parent checks the result, so failures are not reported."""
    import os
    import resource
    import signal

    try:
        prctl = _prctl()
    except (OSError, AttributeError):
        prctl = None
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, None, 0, 0)  # die with the parent
        prctl(_PR_SET_CHILD_SUBREAPER, 1, None, 0, 0)  # orphans stay in this process's tree
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(70)
    os.closerange(3, 1 << 16)
    for name, value in RLIMITS:
        value = limits[value] if isinstance(value, str) else value
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
        except (AttributeError, ValueError, OSError):
            pass
    arch = MACHINE_ARCH.get(os.uname().machine.lower())
    if install_filter and prctl is not None and arch is not None:
        try:
            _install_seccomp(prctl, arch)
        except Exception:  # noqa: BLE001 - the parent sees the filter is missing
            pass


def _pipe_send(prompt, temperature):
    """One LLM request of the child to the parent, and its reply."""
    _send({"type": "llm", "prompt": prompt, "temperature": temperature})
    line = sys.stdin.buffer.readline()
    if not line:
        raise RuntimeError("the parent closed the LLM channel")
    reply = json.loads(line)
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["reply"]


_OUT = None


def _send(message):
    data = (json.dumps(message) + "\n").encode()
    while data:
        n = _OUT(data)
        data = data[n:]


def _child_main(argv):
    """``_sandbox.py PARENT_PID MEMORY_BYTES CPU_SECONDS [--no-imports] [--unchecked]
    [--no-seccomp]``.

    ``--no-imports`` says that the program imports no module, so that only ``random`` is
    imported before confinement (every allowed module otherwise): such a child starts
    faster.

    The two flags are test hooks: ``--unchecked`` runs the program without the program check
    and with the real builtins (to test the operating-system layer alone), ``--no-seccomp``
    leaves the filter out (to test that the parent refuses an unconfined child).
    """
    import io
    import os

    global _OUT
    parent_pid, memory_bytes, cpu_seconds = (int(x) for x in argv[1:4])
    check = "--unchecked" not in argv[4:]
    # A program that imports nothing needs only random (every namespace makes one);
    # otherwise every allowed module is imported, since their members import further
    # modules lazily (Counter.most_common imports heapq, for one).
    modules = {"random"} if check and "--no-imports" in argv[4:] else set(ALLOWED_MODULES)
    modules = sorted(modules) + ([] if check else list(_TEST_MODULES))
    for module in modules:  # nothing can be opened once confined
        importlib.import_module(module)
    _confine(parent_pid, {"memory_bytes": memory_bytes, "cpu_seconds": cpu_seconds},
             install_filter="--no-seccomp" not in argv[4:])
    _OUT = lambda data: os.write(1, data)  # noqa: E731 - the protocol writes raw bytes
    # A sign that the parent may now inspect this process: it proves nothing, the parent
    # reads the confinement from /proc. Only now is the program read.
    _send({"type": "confined"})
    job = json.loads(sys.stdin.buffer.readline())
    code, query, limits = job["code"], job["query"], Limits(*job["limits"])
    try:
        compiled = compile(check_source(code) if check else code, "<generated MAS>", "exec")
        sys.stdout = io.StringIO()  # prints of unchecked code (a test hook) go nowhere
        answer = answer_text(
            execute_forward(code, query, limited_llm(limits, _pipe_send), check=check,
                            compiled=compiled)
        )
        refused = limits.check_answer(answer)
        if refused:
            _send({"type": "limit", "error": refused})
        else:
            _send({"type": "result", "answer": answer})
    except LimitReached as exc:
        _send({"type": "limit", "error": str(exc.args[0])})
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
        try:
            _send({"type": "error", "error": f"{type(exc).__name__}: {str(exc)[:2000]}"})
        except BaseException:  # noqa: BLE001
            os._exit(3)
    # Wait to be killed: while this process lives, whatever the program started is in its
    # tree (it is a subreaper), so that the parent finds and kills all of it.
    while sys.stdin.buffer.read(1 << 16):
        pass
    os._exit(0)


if __name__ == "__main__":
    _child_main(sys.argv)
