"""The guard around generated MAS code: static checks, a restricted namespace, the child process.

This module imports only the standard library, because it is also run as a script
(``python -I -S _sandbox.py``) in the child process that executes generated code. It holds

- :func:`check_source`, the AST pre-check (template, import allow-list, no
  top-level statements but imports, definitions and literal constants, no dunder or foreign
  private attributes, no dangerous builtins);
- :func:`restricted_namespace`, the globals the code runs in: a reduced ``__builtins__``, an
  import function that only hands out read-only views of allow-listed modules, and the helper
  functions generated code may call;
- the child's main loop: it reads one job from stdin, locks itself down (resource limits,
  a seccomp filter on Linux x86-64/aarch64 that refuses every system call that opens files,
  sockets or processes), runs ``MAS(model_list).forward(query)`` and forwards each
  ``call_llm`` to the parent over its stdout/stdin pipes, one JSON object per line.
"""

import ast
import builtins
import importlib
import json
import re
import sys
import types

# Modules generated code may import; it gets a view holding their public, non-module names.
ALLOWED_MODULES = frozenset(
    {
        "bisect", "cmath", "collections", "copy", "decimal", "fractions", "functools", "heapq",
        "itertools", "json", "math", "random", "re", "statistics", "textwrap", "typing",
    }
)
# names of allowed modules that reach other objects by name (and so around the checks)
_HIDDEN_MODULE_NAMES = {
    "functools": {"singledispatch", "singledispatchmethod"},
    "typing": {"get_type_hints", "ForwardRef", "get_overloads"},
}
# builtins that reach the file system, the interpreter or other objects by name
FORBIDDEN_NAMES = frozenset(
    {
        "open", "eval", "exec", "compile", "globals", "locals", "vars", "breakpoint", "input",
        "help", "exit", "quit", "memoryview", "getattr", "setattr", "delattr", "dir",
    }
)
_SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "classmethod",
    "complex", "staticmethod",
    "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex",
    "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min",
    "next", "object", "oct", "ord", "pow", "print", "property", "range", "repr", "reversed",
    "round", "set", "slice", "sorted", "str", "sum", "super", "tuple", "type", "zip",
    "ArithmeticError", "AssertionError", "AttributeError", "Exception", "IndexError",
    "KeyError", "LookupError", "NotImplementedError", "OverflowError", "RuntimeError",
    "StopIteration", "TypeError", "ValueError", "ZeroDivisionError", "NotImplemented",
    "Ellipsis", "True", "False", "None",
)
# names the namespace provides without an import (the template's helpers that need no OS)
HELPER_NAMES = ("LLM", "extract_answer", "extract_code", "majority_vote")

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


def _is_literal(node):
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False
    return True


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def check_source(code, name="program"):
    """Raise ValueError naming the first rule ``code`` breaks; return the tree.

    Rules: it parses; its top level holds only imports, function and class definitions,
    a docstring and assignments of literal constants; it defines ``class MAS`` with
    ``__init__(self, model_list)`` and ``forward(self, taskInfo)``; every import is of an
    allow-listed module; no name is a dangerous builtin or a dunder; no attribute is a dunder
    (``__init__`` aside), and private attributes are read only on ``self``/``cls``.
    """
    if not isinstance(code, str):
        raise TypeError(f"the code of {name!r} must be a str; got {type(code).__name__} instead.")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(
            f"program {name!r} is not valid Python: {exc.msg} (line {exc.lineno})."
        ) from None
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
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_MODULES:
                    raise ValueError(
                        f"program {name!r} imports {alias.name!r} (line {node.lineno}); "
                        f"allowed modules are {sorted(ALLOWED_MODULES)}."
                    )
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module not in ALLOWED_MODULES:
                raise ValueError(
                    f"program {name!r} imports from {node.module!r} (line {node.lineno}); "
                    f"allowed modules are {sorted(ALLOWED_MODULES)}."
                )
            for alias in node.names:
                if alias.name == "*" or alias.name.startswith("_"):
                    raise ValueError(
                        f"program {name!r} imports {alias.name!r} from {node.module!r} "
                        f"(line {node.lineno}); import public names one by one."
                    )
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES or _is_dunder(node.id):
                raise ValueError(
                    f"program {name!r} uses the name {node.id!r} (line {node.lineno}), which "
                    "generated code may not use."
                )
        elif isinstance(node, ast.Attribute):
            attr = node.attr
            if _is_dunder(attr) and attr != "__init__":
                raise ValueError(
                    f"program {name!r} reads the attribute {attr!r} (line {node.lineno}); "
                    "dunder attributes are not allowed."
                )
            if (
                attr.startswith("_")
                and not _is_dunder(attr)
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                raise ValueError(
                    f"program {name!r} reads the private attribute {attr!r} of an object "
                    f"other than self (line {node.lineno})."
                )
        elif isinstance(node, ast.ExceptHandler):
            caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            if any(t is None or (isinstance(t, ast.Name) and t.id == "BaseException")
                   for t in caught):
                raise ValueError(
                    f"program {name!r} catches every exception (line {node.lineno}); catch "
                    "Exception or narrower, so that timeouts stay fatal."
                )
        elif isinstance(node, (ast.Global, ast.Nonlocal, ast.AsyncFunctionDef, ast.Await)):
            raise ValueError(
                f"program {name!r} uses {type(node).__name__} (line {node.lineno}), which "
                "generated code may not use."
            )
    return tree


def _module_view(module):
    hidden = _HIDDEN_MODULE_NAMES.get(module.__name__, set())
    view = types.SimpleNamespace()
    for key in dir(module):
        value = getattr(module, key)
        if key.startswith("_") or key in hidden or isinstance(value, types.ModuleType):
            continue
        setattr(view, key, value)
    return view


def _safe_getattr(obj, name, *default):
    if not isinstance(name, str) or name.startswith("_"):
        raise AttributeError(f"generated code may not read attribute {name!r}")
    return getattr(obj, name, *default)


def _safe_hasattr(obj, name):
    return isinstance(name, str) and not name.startswith("_") and hasattr(obj, name)


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

    safe = {key: getattr(builtins, key) for key in _SAFE_BUILTINS}
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


def run_forward(code, query, llm_handle, *, check=True, compiled=None):
    """Execute ``code`` in a restricted namespace and return ``MAS([llm]).forward(query)``."""
    if compiled is None:
        if check:
            check_source(code)
        compiled = compile(code, "<generated MAS>", "exec")
    namespace = restricted_namespace(llm_handle) if check else {"__name__": "generated_mas"}
    if not check:
        namespace.update(LLM=lambda model_list=None: llm_handle)
    exec(compiled, namespace)
    mas = namespace["MAS"]([llm_handle])
    return mas.forward(query)


# ----------------------------------------------------------------------------------------
# the child process
# ----------------------------------------------------------------------------------------

# system calls the child may make once locked down; all others fail with EPERM
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
_MACHINE_ARCH = {"x86_64": 0xC000003E, "amd64": 0xC000003E, "aarch64": 0xC00000B7,
                 "arm64": 0xC00000B7}


def _install_seccomp():
    """Allow-list system calls with a seccomp filter; return True when it is in force."""
    import ctypes
    import os

    arch = _MACHINE_ARCH.get(os.uname().machine.lower())
    if arch is None or not sys.platform.startswith("linux"):
        return False
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
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, None, 0, 0) != 0:
        return False
    return libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.addressof(fprog), 0, 0) == 0


def _lock_down(memory_bytes, cpu_seconds):
    """Resource limits, no inherited descriptors, then the seccomp filter."""
    import os
    import resource

    layers = []
    os.closerange(3, 4096)
    limits = [
        ("RLIMIT_CORE", 0),
        ("RLIMIT_FSIZE", 0),  # no file may grow
        ("RLIMIT_NOFILE", 3),  # no descriptor beyond stdin, stdout, stderr
        ("RLIMIT_CPU", cpu_seconds),
        ("RLIMIT_AS", memory_bytes),
        ("RLIMIT_NPROC", 0),  # not enforced for root; seccomp refuses fork anyway
    ]
    for name, value in limits:
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
            layers.append(name)
        except (AttributeError, ValueError, OSError):
            pass
    try:
        if _install_seccomp():
            layers.append("seccomp")
    except Exception:  # no seccomp on this platform: the other layers stay
        pass
    return layers


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


def _child_main():
    import io
    import os

    global _OUT
    _OUT = lambda data: os.write(1, data)  # noqa: E731 - the protocol writes raw bytes
    import ctypes  # noqa: F401 - loaded before the lock-down
    import resource  # noqa: F401

    job = json.loads(sys.stdin.buffer.readline())
    code, query, check = job["code"], job["query"], job.get("check", True)
    try:
        compiled = None
        tree = check_source(code) if check else ast.parse(code)
        compiled = compile(code, "<generated MAS>", "exec")
        for node in ast.walk(tree):  # import now: opening files is impossible later
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) else []
            )
            for name in names:
                if name in ALLOWED_MODULES or not check:  # unchecked: tests of the OS layer
                    importlib.import_module(name)
    except Exception as exc:
        _send({"type": "error", "error": f"{type(exc).__name__}: {exc}"})
        return
    sys.stdout = io.StringIO()  # prints of the generated code go nowhere
    layers = _lock_down(int(job["memory_bytes"]), int(job["cpu_seconds"]))
    _send({"type": "ready", "layers": layers})
    try:
        answer = run_forward(code, query, _PipeLLM(), check=check, compiled=compiled)
        if answer is not None and not isinstance(answer, str):
            answer = str(answer)
        _send({"type": "result", "answer": answer})
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
        try:
            _send({"type": "error", "error": f"{type(exc).__name__}: {str(exc)[:2000]}"})
        except BaseException:
            os._exit(3)
    os._exit(0)


if __name__ == "__main__":
    _child_main()
