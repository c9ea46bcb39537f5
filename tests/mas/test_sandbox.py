"""Attacks on the MAS sandbox, each tried twice: on the program check, and on the process layer.

Every attack family is a program in the MAS template. ``test_program_check_refuses`` shows
that ``MASProgram.validate`` refuses it. ``test_process_layer_refuses`` runs the same program
in the child process with the program check switched off (a private test hook: the real
builtins, and the modules an escaped program would use, imported before confinement) and
shows that the operating-system layer refuses its goal: no file read or written, no process
started, no signal sent, no byte at a listener this test starts on 127.0.0.1, and no process
of the sandbox left afterwards.
"""

import functools
import os
import select
import socket
import sys
import time
import warnings

import pytest

from sklearn_icml.mas import (
    AgentLLM,
    ArithmeticMockLLM,
    MASExecutor,
    MASProgram,
    SandboxUnavailableError,
    UnsafeSandboxWarning,
    _confinement,
    _sandbox,
    default_mas_pool,
)
from sklearn_icml.mas._confinement import Limits, execute_in_child

HEAD = "class MAS:\n    def __init__(self, model_list):\n        self.llm = LLM(model_list)\n"
LINUX_SECCOMP = _confinement.platform_problem() is None
needs_seccomp = pytest.mark.skipif(not LINUX_SECCOMP, reason="seccomp: Linux x86-64/aarch64")
LIMITS = Limits(64, 200_000, 100_000)


def body(lines):
    return HEAD + "    def forward(self, taskInfo):\n" + "".join(
        f"        {line}\n" for line in lines
    )


def sandbox_processes():
    """Pids of live processes running the child script (forks of it included)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if _confinement._CHILD_SCRIPT.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(name))
    return found


class Recorder:
    """An agent LLM that records the prompts it is sent."""

    def __init__(self):
        self.prompts = []

    def __call__(self, prompt, temperature):
        self.prompts.append(prompt)
        return "ANSWER: 3"


@pytest.fixture
def targets(tmp_path):
    """What an escaped program aims at: a TCP and a UDP listener, a file, this process."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    probe = tmp_path / "probe.txt"
    secret = tmp_path / "secret.txt"
    secret.write_text("parent secret")
    yield {"tcp": tcp.getsockname()[1], "udp": udp.getsockname()[1], "probe": str(probe),
           "parent": os.getpid(), "secret": str(secret)}
    try:
        readable, _, _ = select.select([tcp, udp], [], [], 0.2)
        assert readable == [], "bytes or a connection reached a listener"
    finally:
        tcp.close()
        udp.close()
    assert not probe.exists(), "a file was written"
    assert secret.read_text() == "parent secret"


# Each family: (how the program reaches real builtins, os or eval; what it does with them).
# In the checked namespace these routes were the ways around a deny-list; the goals
# ({...} filled from the targets fixture) are what the process layer must refuse.
FAMILIES = {
    "match_class_pattern_globals": [
        "match extract_code:",
        "    case object(__globals__=G):",
        "        B = G['builtins']",
        "return B.open('/etc/passwd').read()",
    ],
    "match_class_pattern_subclasses": [
        "match object:",
        "    case type(__subclasses__=S):",
        "        pass",
        "for c in S():",
        "    match c:",
        "        case type(__name__='_wrap_close', __init__=I):",
        "            return I.__globals__['popen']('touch {probe}').read()",
        "return 'not found'",
    ],
    "generator_frame_walk": [
        "box = []",
        "g = (box[0].gi_frame.f_back.f_back.f_globals for _ in [0])",
        "box.append(g)",
        "G = next(g)",
        "s = G['builtins'].__import__('socket').socket()",
        "s.connect(('127.0.0.1', {tcp}))",
        "s.sendall(b'escaped')",
        "return 'sent'",
    ],
    "traceback_frame_builtins": [
        "try:",
        "    1 / 0",
        "except Exception as e:",
        "    B = e.__traceback__.tb_frame.f_back.f_builtins",
        "return str(B['__import__']('os').fork())",
    ],
    "str_format_attribute_lookup": [
        "leak = '{{0.__globals__[builtins].open}}'.format(extract_code)",
        "f = open('{probe}', 'w')",
        "f.write(leak)",
        "return leak",
    ],
    "functools_update_wrapper_globals": [
        "import functools",
        "def f():",
        "    pass",
        "functools.update_wrapper(f, extract_code, assigned=(), updated=('__globals__',))",
        "os = builtins.__import__('os')",
        "os.kill({parent}, 0)",
        "return 'signalled the parent'",
    ],
    "functools_wraps_globals": [
        "import functools",
        "@functools.wraps(extract_code, assigned=(), updated=('__globals__',))",
        "def f():",
        "    pass",
        "s = builtins.__import__('socket').socket(2, 2)",  # AF_INET, SOCK_DGRAM
        "s.sendto(b'escaped', ('127.0.0.1', {udp}))",
        "return 'sent'",
    ],
    "lambda_defaults_frame_eval": [
        "walk = lambda g=(i for i in [0]): g.gi_frame.f_builtins['eval']",
        "ev = walk()",
        "return ev(\"open('{secret}', 'w').write('overwritten')\")",
    ],
    "typing_forwardref_evaluate": [
        "import typing",
        "ref = typing.ForwardRef(\"__import__('os').listdir('/')\")",
        "return str(ref._evaluate({{'__builtins__': __builtins__}}, None, frozenset()))",
    ],
    "typing_get_type_hints": [
        "import typing",
        "def f(x: \"__import__('subprocess').run(['touch', '{probe}'])\"):",
        "    pass",
        "return str(typing.get_type_hints(f))",
    ],
    "setsid_then_survive": [
        "import os, time",
        "if os.fork() == 0:",
        "    os.setsid()",
        "    time.sleep(2)",
        "    open('{probe}', 'w').write('survived')",
        "    os._exit(0)",
        "return 'detached'",
    ],
    "finally_continue_swallows_timeout": [
        "while True:",
        "    try:",
        "        while True:",
        "            pass",
        "    finally:",
        "        continue",
    ],
}


FREE_DESCRIPTOR = "__import__('os').close(2)"

# what the program check names when it refuses each family: the route itself
REFUSED_FOR = {
    "match_class_pattern_globals": "uses Match",
    "match_class_pattern_subclasses": "uses Match",
    "generator_frame_walk": "attribute 'f_globals'",
    "traceback_frame_builtins": "attribute 'f_builtins'",
    "str_format_attribute_lookup": "calls 'format' .* on something other than a string literal",
    "functools_update_wrapper_globals": "attribute 'update_wrapper'",
    "functools_wraps_globals": "decorator other than",
    "lambda_defaults_frame_eval": "attribute 'f_builtins'",
    "typing_forwardref_evaluate": "attribute 'ForwardRef'",
    "typing_get_type_hints": "attribute 'get_type_hints'",
    "setsid_then_survive": "imports 'os'",
    "finally_continue_swallows_timeout": "has a finally block",
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_program_check_refuses(family):
    code = body(line.replace("{{", "{").replace("}}", "}") for line in FAMILIES[family])
    with pytest.raises(ValueError, match=f"program 'attack' .*{REFUSED_FOR[family]}"):
        MASProgram("attack", code).validate()


@needs_seccomp
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_process_layer_refuses(family, targets):
    # first free a descriptor, so that RLIMIT_NOFILE does not stand in for the filter
    code = body([FREE_DESCRIPTOR] + [line.format(**targets) for line in FAMILIES[family]])
    llm = Recorder()
    run = execute_in_child(code, "q", AgentLLM(llm=llm), timeout=1.0, memory_limit=256 * 2**20,
                       limits=LIMITS, check=False)
    assert run.answer is None, run.answer
    if family == "finally_continue_swallows_timeout":
        assert run.timed_out
    else:
        assert "PermissionError" in run.error, run.error
    assert {"seccomp", "no_new_privs", "own_session"} <= set(run.layers)
    assert sandbox_processes() == []
    if family == "setsid_then_survive":  # had it escaped, the file would appear by now
        time.sleep(2.2)


@pytest.mark.parametrize(
    "attribute",
    ["gi_frame", "gi_code", "f_back", "f_globals", "f_builtins", "f_locals", "tb_frame",
     "tb_next", "co_consts", "cr_frame", "ag_frame", "_private", "__globals__", "wraps",
     "update_wrapper", "get_type_hints", "ForwardRef", "mro"],
)
def test_program_check_refuses_attribute_families(attribute):
    with pytest.raises(ValueError, match=f"attribute '{attribute}'"):
        MASProgram("attack", body([f"x = taskInfo.{attribute}", "return x"])).validate()
    # and at run time, for names built from strings
    assert not _sandbox.attribute_allowed(attribute)
    assert not _sandbox._safe_hasattr(_sandbox.extract_code, attribute)


@pytest.mark.parametrize(
    "lines, match",
    [
        (["return '{0.real}'.format(1)"], "calls 'format'"),
        (["return '{0[0]}'.format('ab')"], "calls 'format'"),
        (["return '{0:{1.real}}'.format(1, 2)"], "calls 'format'"),
        (["return '{a.real}'.format_map({'a': 1})"], "calls 'format_map'"),
        (["s = '{0}'", "return s.format(1)"], "calls 'format'"),
        (["return str.format('{0}', 1)"], "calls 'format'"),
        (["f = '{0}'.format", "return f(1)"], "attribute 'format'"),
        (["return format(1, 'd')"], "name 'format'"),
        (["import functools", "return str(functools.wraps)"], "attribute 'wraps'"),
        (["from functools import wraps", "return 'x'"], "imports 'wraps' from 'functools'"),
        (["from typing import get_type_hints", "return 'x'"], "imports 'get_type_hints'"),
        (["import typing as t", "return str(t.NamedTuple)"], "typing.NamedTuple"),
        (["import collections", "return str(collections.abc)"], "collections.abc"),
        (["return type(taskInfo)"], "name 'type'"),
        (["global X", "return 'x'"], "Global"),
        (["def g():", "    yield 1", "return 'x'"], "Yield"),
        (["del taskInfo", "return 'x'"], "Delete"),
        (["with taskInfo:", "    pass", "return 'x'"], "With"),
        (["try:", "    pass", "finally:", "    return 'x'"], "has a finally block"),
        (["for _ in range(3):", "    try:", "        pass", "    finally:", "        break",
          "return 'x'"], "has a finally block"),
    ],
)
def test_program_check_refuses_other_routes(lines, match):
    with pytest.raises(ValueError, match=match):
        MASProgram("p", body(lines)).validate()


def test_program_check_allows_ordinary_code():
    code = "import math\nfrom functools import reduce\n" + HEAD + (
        "    def forward(self, taskInfo):\n"
        "        parts = [p.strip() for p in taskInfo.split(',') if p]\n"
        "        total = reduce(lambda a, b: a + b, [len(p) for p in parts], 0)\n"
        "        label = '{} parts, {:>4} chars'.format(len(parts), total)\n"
        "        try:\n"
        "            root = math.sqrt(total)\n"
        "        except ValueError as exc:\n"
        "            root = str(exc.args)\n"
        "        return self.llm.call_llm(f'{label} {root:.2f}: ' + taskInfo)\n"
    )
    MASProgram("ok", code).validate()


def test_program_check_is_bounded():
    """Size is checked before parsing; depth and node count during a recursion-free walk."""
    with pytest.raises(ValueError, match="characters; at most"):
        MASProgram("p", body(["return 'x'"]) + "#" * _sandbox.MAX_SOURCE_CHARS).validate()
    deep = "[" * 150 + "]" * 150
    with pytest.raises(ValueError, match="nests deeper than"):
        MASProgram("p", body([f"return str({deep})"])).validate()
    with pytest.raises(ValueError, match="nested too deeply to parse"):
        MASProgram("p", body(["return " + "-" * 10000 + "1"])).validate()
    many = "[" + "a," * 14000 + "]"  # a Name and its Load per element
    with pytest.raises(ValueError, match="syntax nodes"):
        MASProgram("p", body(["a = 1", f"return str({many})"])).validate()
    start = time.perf_counter()  # the largest accepted source is checked quickly
    big = body(["x = 1"] * 2300 + ["return 'x'"])
    assert len(big) <= _sandbox.MAX_SOURCE_CHARS
    MASProgram("p", big).validate()
    assert time.perf_counter() - start < 5.0


@needs_seccomp
def test_forged_report_is_not_believed(targets):
    """A program that prints the child's messages itself changes nothing."""
    forged = (
        "os.write(1, b'{{\"type\": \"confined\"}}\\n'"
        " + b'{{\"type\": \"ready\", \"layers\": [\"forged-layer\"]}}\\n')"
    )
    code = body(["import os", forged.format(), "return 'x'"])
    run = execute_in_child(code, "q", AgentLLM(llm=Recorder()), timeout=2.0,
                       memory_limit=256 * 2**20, limits=LIMITS, check=False)
    assert run.answer is None and "protocol error" in run.error
    assert "forged-layer" not in run.layers and "seccomp" in run.layers
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=5.0)
    printing = body(["print('{\"type\": \"ready\", \"layers\": [\"forged-layer\"]}')",
                     "return self.llm.call_llm('[SOLVE]\\nTask: ' + taskInfo)"])
    assert executor.execute(MASProgram("p", printing), "Add 1 and 2.").answer == "ANSWER: 3"
    assert "forged-layer" not in executor.last_sandbox_layers_
    assert {"seccomp", "no_new_privs"} <= set(executor.last_sandbox_layers_)


@needs_seccomp
def test_missing_seccomp_refuses_to_run(monkeypatch):
    """A child without its filter (simulated) is refused before the program is sent."""
    monkeypatch.setattr(_confinement, "execute_in_child",
                        functools.partial(execute_in_child, install_filter=False))
    llm = Recorder()
    executor = MASExecutor(llm=llm, timeout=5.0)
    with pytest.raises(SandboxUnavailableError, match="missing seccomp, no_new_privs"):
        executor.execute(default_mas_pool()[0], "Add 1 and 2.")
    assert llm.prompts == [] and sandbox_processes() == []
    weak = MASExecutor(llm=llm, timeout=5.0, allow_weak_isolation=True)
    with pytest.warns(UnsafeSandboxWarning, match="not confined"):
        assert weak.execute(default_mas_pool()[0], "Add 1 and 2.").answer == "ANSWER: 3"
    assert "seccomp" not in weak.last_sandbox_layers_ and sandbox_processes() == []


@pytest.mark.parametrize("system, machine", [("darwin", "arm64"), ("linux", "riscv64"),
                                             ("win32", "AMD64")])
def test_unsupported_platform_refuses_to_run(monkeypatch, system, machine):
    monkeypatch.setattr(_confinement, "_platform", lambda: (system, machine))
    llm = Recorder()
    executor = MASExecutor(llm=llm, timeout=5.0)
    with pytest.raises(SandboxUnavailableError, match=f"{system}.*{machine}|{machine}"):
        executor.execute(default_mas_pool()[0], "Add 1 and 2.")
    assert llm.prompts == [] and executor.n_runs_ == 0


@pytest.mark.slow
@needs_seccomp
@pytest.mark.parametrize("end", ["timeout", "return"])
def test_no_process_survives_without_seccomp(tmp_path, end):
    """With the filter missing (weak isolation), a grandchild that left the session after
    setsid() is still stopped and killed, at the timeout or when forward returns."""
    probe = tmp_path / "late.txt"
    llm = Recorder()
    lines = [
        "import os, time",
        "os.close(2)",
        "if os.fork() == 0:",
        "    os.setsid()",
        "    if os.fork() == 0:",
        "        time.sleep(2)",
        f"        open({str(probe)!r}, 'w').write('survived')",
        "    os._exit(0)",
    ]
    lines += ["while True:", "    pass"] if end == "timeout" else ["return 'detached'"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsafeSandboxWarning)
        run = execute_in_child(body(lines), "q", AgentLLM(llm=llm), timeout=1.5,
                           memory_limit=256 * 2**20, limits=LIMITS, check=False,
                           install_filter=False, weak_ok=True)
    assert "seccomp" not in run.layers
    assert run.timed_out if end == "timeout" else run.answer == "detached"
    assert sandbox_processes() == []  # the sleeping grandchild is a fork of the child
    time.sleep(2.5)
    assert not probe.exists()


@pytest.mark.parametrize(
    "lines, limit",
    [
        (["return 'x' * (15 * 2 ** 20)"], "an answer of"),
        (["for _ in range(10):", "    self.llm.call_llm('x' * (8 * 2 ** 20))", "return 'x'"],
         "a prompt of"),
        (["for _ in range(100):", "    self.llm.call_llm('[SOLVE]\\nTask: ' + taskInfo)",
          "return 'x'"], "more than 8 agent-LLM calls"),
    ],
    ids=["answer_15MiB", "prompts_8MiB", "calls_100"],
)
def test_limits_on_what_crosses(lines, limit):
    """The fallback answers; the in-process mode applies the same limits (see
    test_capabilities.py, which runs both modes side by side)."""
    if not LINUX_SECCOMP:
        pytest.skip("seccomp: Linux x86-64/aarch64")
    llm = Recorder()
    executor = MASExecutor(llm=llm, timeout=5.0, max_llm_calls=8, max_prompt_chars=1000,
                           max_answer_chars=1000)
    result = executor.execute(MASProgram("greedy", body(lines)), "Add 1 and 2.")
    assert result.limit_exceeded and result.used_fallback and result.program == "fallback"
    assert result.answer == "ANSWER: 3"  # the fallback's
    assert result.error.startswith("limit exceeded") and limit in result.error, result.error
    assert max(len(p) for p in llm.prompts) <= 1000  # no long prompt reached the LLM
    assert len(llm.prompts) <= 8 + 6  # the program's allowed calls and the fallback's


def test_inprocess_is_renamed_and_warns():
    for cls_run in (
        lambda s: MASExecutor(llm=ArithmeticMockLLM(), sandbox=s).execute(default_mas_pool()[0],
                                                                          "q"),
    ):
        with pytest.raises(ValueError, match="renamed 'unsafe-inprocess'.*Got 'inprocess'"):
            cls_run("inprocess")
    from sklearn_icml.mas import MASGPTSolver

    with pytest.raises(ValueError, match="renamed 'unsafe-inprocess'"):
        MASGPTSolver(llm=ArithmeticMockLLM(), sandbox="inprocess").fit(["Add 1 and 2."], [3])
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), sandbox="unsafe-inprocess")
    with pytest.warns(UnsafeSandboxWarning, match="full rights"):
        assert executor.execute(default_mas_pool()[0], "Add 1 and 2.").answer == "ANSWER: 3"


def test_inprocess_runs_only_checked_code():
    """The program that read /etc/passwd in-process is refused there too."""
    code = body(line.format(probe="/x") for line in FAMILIES["match_class_pattern_globals"])
    executor = MASExecutor(llm=ArithmeticMockLLM(), sandbox="unsafe-inprocess")
    with pytest.raises(ValueError, match="Match"):
        executor.execute(MASProgram("attack", code), "q")
    assert executor.n_runs_ == 0


def test_platform_problem_names_the_platform(monkeypatch):
    monkeypatch.setattr(_confinement, "_platform", lambda: ("darwin", "arm64"))
    assert "darwin" in _confinement.platform_problem()
    monkeypatch.setattr(_confinement, "_platform", lambda: ("linux", "ppc64le"))
    assert "ppc64le" in _confinement.platform_problem()
    assert sys.platform  # the real platform is untouched


def _documented(doc, label):
    """The names between double backticks in the bullet of ``doc`` that starts with
    ``label`` (up to the next bullet of the same level)."""
    import re

    start = doc.index(f"- **{label}**")
    end = doc.find("\n        - **", start + 1)
    section = doc[start:end if end >= 0 else len(doc)]
    return section, [w for chunk in re.findall(r"``([^`]+)``", section) for w in chunk.split()]


def test_validate_documents_the_allow_lists():
    """The lists in MASProgram.validate's docstring are the ones the check applies, and
    this docstring is the one place that writes them all down."""
    import re

    doc = MASProgram.validate.__doc__
    _, names = _documented(doc, "names")
    assert set(names) == set(_sandbox.SAFE_BUILTINS) | set(_sandbox.HELPER_NAMES)
    section, _ = _documented(doc, "modules")
    listed = dict(re.findall(r"- ``(\w+)``: ``([^`]+)``", section))
    assert set(listed) == set(_sandbox.ALLOWED_MODULES)
    for module, members in listed.items():
        assert members.split() == list(_sandbox.MODULE_MEMBERS[module]), module
    _, attributes = _documented(doc, "attributes")
    assert set(_sandbox.FORBIDDEN_ATTRIBUTES) <= set(attributes)
    _, definitions = _documented(doc, "definitions")
    assert set(_sandbox.DECORATOR_NAMES) <= set(definitions)
    flat = " ".join(doc.split())
    for limit in (_sandbox.MAX_SOURCE_CHARS, _sandbox.MAX_NODES, _sandbox.MAX_DEPTH):
        assert f"{limit:,}".replace(",", " ") in flat or str(limit) in flat
