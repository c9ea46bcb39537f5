"""The guard around generated MAS code: the program check, a restricted namespace, the child.

This module imports only the standard library, because it is also run as a script
(``python -I -S -B _sandbox.py``) in the child process that executes generated code. It holds

- :func:`check_source`, the program check: an allow-list of syntax (node types), of the names
  a program may use without defining them, of modules and of their members, and of attribute
  names, checked with limits on the source size, the number of nodes and the nesting depth;
- :func:`restricted_namespace`, the globals the code runs in: reduced builtins, an import
  function that only hands out read-only views of the allowed members of allowed modules, and
  the helper functions generated code may call;
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
import re
import string
import sys
import types

# ----------------------------------------------------------------------------------------
# the allow-lists
# ----------------------------------------------------------------------------------------

# Limits of the check itself, so that validating hostile source cannot exhaust the caller.
# 32 768 characters hold about twice the 4096 new tokens the reference generator may write.
MAX_SOURCE_CHARS = 32_768
MAX_NODES = 20_000
MAX_DEPTH = 100

# Modules generated code may import; it gets a view holding only their allowed members.
ALLOWED_MODULES = frozenset(
    {
        "bisect", "cmath", "collections", "copy", "decimal", "fractions", "functools", "heapq",
        "itertools", "json", "math", "random", "re", "statistics", "textwrap", "typing",
    }
)
# Modules whose members are listed one by one: functools copies attributes by name
# (wraps, update_wrapper) and dispatches on types; typing evaluates strings
# (get_type_hints, ForwardRef). Other allowed modules offer their public, non-module
# members that are not forbidden attribute names.
_MODULE_MEMBERS = {
    "functools": frozenset({"cache", "cmp_to_key", "lru_cache", "partial", "reduce"}),
    "typing": frozenset(
        {
            "Any", "Callable", "Dict", "FrozenSet", "Iterable", "Iterator", "List", "Mapping",
            "Optional", "Sequence", "Set", "Tuple", "Union",
        }
    ),
}

# Builtins generated code may use (the namespace holds nothing else). Not among them:
# open, eval, exec, compile, __import__, globals, locals, vars, dir, getattr, setattr,
# delattr, type, format, memoryview, input, breakpoint, help, exit, quit.
SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "callable", "chr", "classmethod", "complex",
    "dict", "divmod", "enumerate", "filter", "float", "frozenset", "hasattr", "hash", "hex",
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
# the only decorators
DECORATOR_NAMES = frozenset({"classmethod", "property", "staticmethod"})

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
# global, nonlocal, del, with, yield, async/await, try/except*, the @ operator.
ALLOWED_NODES = frozenset(_STATEMENTS + _EXPRESSIONS + _OTHERS)

_FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)```", re.DOTALL)
_ANSWER = re.compile(r"ANSWER:\s*(.+)")


def extract_code(text):
    """The last fenced code block of ``text``, or None when there is none."""
    blocks = _FENCE.findall(text or "")
    return blocks[-1].strip("\n") if blocks else None


def extract_answer(text):
    """The value after the last ``ANSWER:`` in ``text`` (stripped), or None."""
    found = _ANSWER.findall(text or "")
    return found[-1].strip() if found else None


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


def attribute_allowed(name):
    """Whether generated code may read or write the attribute ``name``."""
    return (
        isinstance(name, str)
        and not name.startswith(FORBIDDEN_ATTRIBUTE_PREFIXES)
        and name not in FORBIDDEN_ATTRIBUTES
        and name not in _FORMAT_METHODS
    )


_MEMBERS = {}


def module_members(module_name):
    """The members of an allowed module that generated code may use."""
    if module_name not in _MEMBERS:
        module = importlib.import_module(module_name)
        listed = _MODULE_MEMBERS.get(module_name)
        if listed is None:
            listed = frozenset(
                key for key in dir(module)
                if attribute_allowed(key)
                and not isinstance(getattr(module, key), types.ModuleType)
            )
        _MEMBERS[module_name] = listed
    return _MEMBERS[module_name]


def _is_literal(node):
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False
    return True


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


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


def _escapes_finally(stmts, in_loop=False):
    """A return, break or continue of ``stmts`` that leaves a finally block (it would
    swallow the exception in flight, a timeout included), or None."""
    for stmt in stmts:
        if isinstance(stmt, ast.Return) or (
            isinstance(stmt, (ast.Break, ast.Continue)) and not in_loop
        ):
            return stmt
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            continue
        loop = in_loop or isinstance(stmt, (ast.For, ast.While))
        for field in ("body", "orelse", "finalbody"):
            found = _escapes_finally(getattr(stmt, field, []), loop)
            if found is not None:
                return found
        for handler in getattr(stmt, "handlers", []):
            found = _escapes_finally(handler.body, loop)
            if found is not None:
                return found
    return None


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


def _bindings(nodes):
    """Names the program binds itself, and its module aliases (alias -> module)."""
    bound, aliases = set(), {}
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound.add(alias.asname or alias.name)
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound, aliases


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
    bound, aliases = _bindings(nodes)
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
            if _is_dunder(node.name) and node.name != "__init__":
                raise ValueError(
                    f"program {name!r} defines {node.name!r} (line {line}); the only dunder "
                    "method a program may define is __init__."
                )
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
        elif isinstance(node, ast.arg) and _is_dunder(node.arg):
            raise ValueError(
                f"program {name!r} has the parameter {node.arg!r} (line {line}); dunder names "
                "are not allowed."
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
            escape = _escapes_finally(node.finalbody)
            if escape is not None:
                raise ValueError(
                    f"program {name!r} leaves a finally block with {type(escape).__name__} "
                    f"(line {escape.lineno}), which would swallow a timeout."
                )
    return tree


def _module_view(module):
    view = types.SimpleNamespace()
    for key in module_members(module.__name__):
        setattr(view, key, getattr(module, key))
    return view


def _safe_getattr(obj, name, *default):
    if not attribute_allowed(name):
        raise AttributeError(f"generated code may not read attribute {name!r}")
    return getattr(obj, name, *default)


def _safe_hasattr(obj, name):
    return attribute_allowed(name) and hasattr(obj, name)


def restricted_namespace(llm_handle):
    """Fresh globals for generated code: reduced builtins, guarded import, helpers.

    ``llm_handle`` is what ``LLM(model_list)`` returns: an object with ``call_llm``.
    """
    views = {}

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level or name not in ALLOWED_MODULES:
            raise ImportError(f"generated code may not import {name!r}")
        if name not in views:
            views[name] = _module_view(importlib.import_module(name))
        return views[name]

    safe = {key: getattr(builtins, key) for key in SAFE_BUILTINS}
    safe.update(
        __build_class__=builtins.__build_class__,
        __import__=guarded_import,
        getattr=_safe_getattr,
        hasattr=_safe_hasattr,
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


class _PipeLLM:
    """``self.llm`` in the child: each call is a request to the parent, which runs the LLM."""

    __slots__ = ()

    def call_llm(self, prompt, temperature=None):
        if not isinstance(prompt, str):
            raise TypeError(f"call_llm needs a str prompt; got {type(prompt).__name__}")
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
    """``_sandbox.py PARENT_PID MEMORY_BYTES CPU_SECONDS [--unchecked] [--no-seccomp]``.

    The two flags are test hooks: ``--unchecked`` runs the program without the program check
    and with the real builtins (to test the operating-system layer alone), ``--no-seccomp``
    leaves the filter out (to test that the parent refuses an unconfined child).
    """
    import io
    import os

    global _OUT
    parent_pid, memory_bytes, cpu_seconds = (int(x) for x in argv[1:4])
    check = "--unchecked" not in argv[4:]
    modules = sorted(ALLOWED_MODULES) + ([] if check else list(_TEST_MODULES))
    for module in modules:  # nothing can be opened once confined
        importlib.import_module(module)
    _confine(parent_pid, {"memory_bytes": memory_bytes, "cpu_seconds": cpu_seconds},
             install_filter="--no-seccomp" not in argv[4:])
    _OUT = lambda data: os.write(1, data)  # noqa: E731 - the protocol writes raw bytes
    # A sign that the parent may now inspect this process: it proves nothing, the parent
    # reads the confinement from /proc. Only now is the program read.
    _send({"type": "confined"})
    job = json.loads(sys.stdin.buffer.readline())
    code, query = job["code"], job["query"]
    try:
        compiled = compile(check_source(code) if check else code, "<generated MAS>", "exec")
        sys.stdout = io.StringIO()  # prints of the generated code go nowhere
        answer = execute_forward(code, query, _PipeLLM(), check=check, compiled=compiled)
        if answer is not None and not isinstance(answer, str):
            answer = str(answer)
        _send({"type": "result", "answer": answer})
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
