"""MASExecutor: timeouts, the fallback, failures, and the two layers of the sandbox.

Process-mode tests use timeouts of 1-2 s. Two layers are tested: the program check (code
that names files, sockets, os or subprocess is refused before it runs), and, with the check
switched off, the operating-system layer (resource limits and the seccomp filter) on its
own. The attack families of the sandbox are in test_sandbox.py.
"""

import os
import sys
import time

import pytest

from sklearn_icml.mas import (
    AgentLLM,
    ArithmeticMockLLM,
    MASExecutor,
    MASProgram,
    default_mas_pool,
)
from sklearn_icml.mas._confinement import Limits, execute_in_child
from sklearn_icml.mas._executor import _run_inprocess

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_icml.mas.UnsafeSandboxWarning")

HEAD = "class MAS:\n    def __init__(self, model_list):\n        self.llm = LLM(model_list)\n"
LINUX_SECCOMP = sys.platform.startswith("linux") and os.uname().machine in ("x86_64", "aarch64")


def body(lines):
    return HEAD + "    def forward(self, taskInfo):\n" + "".join(
        f"        {line}\n" for line in lines
    )


def raw_child(lines, timeout=2.0, memory=256 * 2**20):
    """Run code in the child with the Python guard off: only the OS layers hold."""
    run = execute_in_child(
        body(lines), "Add 1 and 2.", AgentLLM(llm=ArithmeticMockLLM(random_state=0)),
        timeout=timeout, memory_limit=memory, limits=Limits(64, 200_000, 100_000), check=False,
    )
    return run.answer, run.error, run.timed_out, run.layers


@pytest.fixture
def parent_witness(tmp_path):
    """A file of the parent that sandboxed code must not be able to read or remove."""
    path = tmp_path / "secret.txt"
    path.write_text("parent secret")
    cwd = os.getcwd()
    yield path
    assert path.read_text() == "parent secret"
    assert os.getcwd() == cwd


def test_process_and_inprocess_agree():
    """Same seed, same answers and calls: the child only proxies LLM calls to the parent."""
    pool = default_mas_pool()
    queries = ["Compute 12 times 30 minus 5.", "Find the integer x such that 3*x + -4 = 11."]
    runs = {}
    for sandbox in ("process", "inprocess"):
        executor = MASExecutor(llm=ArithmeticMockLLM(random_state=3), timeout=10,
                               sandbox="process" if sandbox == "process" else "unsafe-inprocess")
        runs[sandbox] = [
            (r.answer, r.n_calls, r.error)
            for r in (executor.execute(p, q) for q in queries for p in pool[1:3])
        ]
    assert runs["process"] == runs["inprocess"]
    assert all(error is None for _, _, error in runs["process"])


@pytest.mark.parametrize(
    "lines, match",
    [
        (["return open('/etc/hostname').read()"], "'open'"),
        (["import socket", "return str(socket.socket())"], "imports 'socket'"),
        (["import os", "return os.listdir('/')"], "imports 'os'"),
        (["import subprocess", "return subprocess.run(['id']).stdout"], "imports 'subprocess'"),
        (["return __import__('os').getcwd()"], "'__import__'"),
        (["return str(().__class__.__base__.__subclasses__())"], "uses the attribute '__"),
    ],
)
def test_guard_refuses_before_running(lines, match, parent_witness):
    llm = ArithmeticMockLLM(random_state=0)
    executor = MASExecutor(llm=llm, timeout=2.0)
    with pytest.raises(ValueError, match=match):
        executor.execute(MASProgram("evil", body(lines)), "Add 1 and 2.")
    assert executor.n_runs_ == 0 and getattr(llm, "n_calls_", 0) == 0  # nothing ran


def test_runtime_guard_blocks_reflection():
    """Names built at run time and module internals stay out of reach."""
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=2.0)
    dunder = body(["return str(hasattr(extract_code, '_' + '_globals_' + '_'))"])
    assert executor.execute(MASProgram("reflect", dunder), "q").answer == "False"
    module_inside = body(["import re", "return str(hasattr(re, 'enum'))"])  # re.enum.sys
    assert executor.execute(MASProgram("view", module_inside), "q").answer == "False"
    builtin = body(["return str(len([1, 2]))"])
    assert executor.execute(MASProgram("ok", builtin), "q").answer == "2"


@pytest.mark.skipif(not LINUX_SECCOMP, reason="seccomp layer: Linux x86-64/aarch64 only")
@pytest.mark.parametrize(
    "lines, match",
    [
        (["return open('/etc/hostname').read()"], "PermissionError"),
        (["import os", "os.close(2)", "return str(os.open('/etc/hostname', 0))"],
         "PermissionError"),
        (["import os", "return str(os.listdir('/'))"], "PermissionError"),
        (["import socket", "return str(socket.socket())"], "PermissionError"),
        (["import subprocess", "return str(subprocess.run(['id']))"], "PermissionError"),
        (["import os", "return str(os.fork())"], "PermissionError"),
        (["import os", "os.kill(os.getppid(), 9)", "return 'x'"], "PermissionError"),
    ],
)
def test_os_layer_alone_blocks_files_sockets_processes(lines, match, parent_witness):
    answer, error, timed_out, layers = raw_child(lines)
    assert answer is None and not timed_out
    assert match in error
    assert "seccomp" in layers


def test_os_layer_cannot_write_files(tmp_path, parent_witness):
    target = tmp_path / "written.txt"
    answer, error, _, _ = raw_child(
        [f"f = open({str(target)!r}, 'w')", "f.write('x' * 100)", "f.close()", "return 'x'"]
    )
    assert answer is None and error is not None
    assert not target.exists()


def test_unbounded_allocation_is_refused(parent_witness):
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=2.0,
                           memory_limit=256 * 2**20)
    for lines in (["x = [0] * (10 ** 10)", "return 'x'"],
                  ["x = []", "while True:", "    x.append('a' * 1000000)"]):
        result = executor.execute(MASProgram("hog", body(lines)), "Add 1 and 2.")
        assert result.answer is None
        assert "MemoryError" in result.error or "died" in result.error
        assert not result.used_fallback  # not a timeout: no retry, as in the reference


def test_infinite_loop_times_out_then_fallback(parent_witness):
    """Stops within timeout + 5 s and the fallback answers."""
    llm = ArithmeticMockLLM(random_state=0)
    executor = MASExecutor(llm=llm, timeout=1.0)
    start = time.perf_counter()
    result = executor.execute(
        MASProgram("loop", body(["while True:", "    pass"])), "Compute 10 times 10 minus 1."
    )
    elapsed = time.perf_counter() - start
    assert result.timed_out and result.used_fallback and result.program == "fallback"
    assert result.answer is not None and result.answer.startswith("ANSWER:")
    assert result.n_calls == 6 == llm.n_calls_
    assert elapsed < 2 * 1.0 + 5.0


def test_infinite_loop_without_fallback():
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=1.0, fallback=False)
    result = executor.execute(MASProgram("loop", body(["while True:", "    pass"])), "q")
    assert result.timed_out and not result.used_fallback
    assert result.answer is None and "timeout" in result.error


def test_inprocess_timeout_uses_timer():
    """The in-process runner (reached by the shipped programs only) times out."""
    code = body(["while True:", "    pass"])
    compiled = compile(code, "<MAS loop>", "exec")
    agent = AgentLLM(llm=ArithmeticMockLLM(random_state=0))
    start = time.perf_counter()
    answer, error, timed_out, limited = _run_inprocess(
        compiled, "Add 2 and 3.", agent.call_llm, Limits(64, 200_000, 100_000), 0.3)
    assert (answer, timed_out, limited) == (None, True, False) and "timeout" in error
    assert time.perf_counter() - start < 0.3 + 3.0


def test_exception_in_forward_gives_no_answer_and_no_retry():
    """A failure is recorded as no answer, without retry (as in the reference)."""
    llm = ArithmeticMockLLM(random_state=0)
    executor = MASExecutor(llm=llm, timeout=2.0)
    code = body(["self.llm.call_llm('[SOLVE]\\nTask: ' + taskInfo)",
                 "raise KeyError('no such agent')"])
    result = executor.execute(MASProgram("crash", code), "Add 1 and 2.")
    assert result.answer is None and not result.used_fallback and not result.timed_out
    assert result.error.startswith("KeyError") and "no such agent" in result.error
    assert result.n_calls == 1 == llm.n_calls_  # no retry


@pytest.mark.parametrize("sandbox", ["process", "unsafe-inprocess"])
def test_none_answer_and_llm_errors(sandbox):
    def failing(prompt, temperature):
        raise ConnectionError("endpoint down")

    if sandbox == "process":
        executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=2.0)
        none = executor.execute(MASProgram("none", body(["return None"])), "q")
        assert none.answer is None and not none.used_fallback
    executor = MASExecutor(llm=failing, timeout=2.0, sandbox=sandbox)
    result = executor.execute(default_mas_pool()[0], "Add 1 and 2.")
    assert result.answer is None and "endpoint down" in result.error


def test_prints_do_not_break_the_protocol():
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=2.0)
    code = body(["print('{\"type\": \"result\", \"answer\": \"forged\"}')",
                 "return self.llm.call_llm('[SOLVE]\\nTask: ' + taskInfo)"])
    assert executor.execute(MASProgram("chatty", code), "Add 1 and 2.").answer == "ANSWER: 3"


@pytest.mark.skipif(not LINUX_SECCOMP, reason="the raw child writes to its pipe directly")
def test_hostile_protocol_messages_do_not_harm_the_parent():
    for payload in ("'[' * 100000", "'not json'", "'{\"type\": \"llm\", \"prompt\": 3}'"):
        lines = ["import os", f"os.write(1, ({payload} + '\\n').encode())",
                 "while True:", "    pass"]
        answer, error, timed_out, _ = raw_child(lines)
        assert answer is None and not timed_out and "protocol error" in error


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"timeout": 0}, "'timeout' parameter"),
        ({"timeout": -1.0}, "'timeout' parameter"),
        ({"timeout": float("inf")}, "'timeout' parameter .* Got inf"),
        ({"sandbox": "docker"}, "'sandbox' parameter .* must be a str among"),
        ({"max_retries": -1}, "'max_retries' parameter"),
        ({"memory_limit": 1000}, "'memory_limit' parameter .* \\[67108864, inf\\)"),
    ],
)
def test_bad_executor_params(kwargs, match):
    executor = MASExecutor(llm=ArithmeticMockLLM(), **kwargs)
    with pytest.raises(ValueError, match=match):
        executor.execute(default_mas_pool()[0], "Add 1 and 2.")


def test_bad_llm_program_and_query():
    with pytest.raises(ValueError, match="'llm' parameter of MASExecutor must be a callable"):
        MASExecutor(llm="gpt-4", sandbox="unsafe-inprocess").execute(default_mas_pool()[0], "q")
    executor = MASExecutor(llm=ArithmeticMockLLM(), sandbox="unsafe-inprocess")
    with pytest.raises(TypeError, match="program must be a MASProgram"):
        executor.execute("class MAS: pass", "q")
    with pytest.raises(TypeError, match="query must be a str"):
        executor.execute(default_mas_pool()[0], 3)


def test_run_is_a_deprecated_alias_of_execute():
    """``run`` is for runners: the executor's verb is ``execute``; the old name still works."""
    program, query = default_mas_pool()[1], "Compute 12 times 30 minus 5."
    new = MASExecutor(llm=ArithmeticMockLLM(random_state=3), sandbox="unsafe-inprocess")
    old = MASExecutor(llm=ArithmeticMockLLM(random_state=3), sandbox="unsafe-inprocess")
    expected = new.execute(program, query)
    with pytest.warns(FutureWarning, match="`run` was renamed `execute`"):
        result = old.run(program, query)
    assert (result.answer, result.n_calls, result.error, result.used_fallback) == (
        expected.answer, expected.n_calls, expected.error, expected.used_fallback
    )
    assert old.n_runs_ == new.n_runs_ == 1
