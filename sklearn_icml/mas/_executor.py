"""MASExecutor: run a MAS program on a query, in a locked-down child process or in-process."""

import dataclasses
import json
import math
import numbers
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time

from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions

from . import _sandbox
from ._docstrings import fill_doc
from ._llm import AgentLLM
from ._program import MASProgram, fallback_mas
from ._validation import check_instance

__all__ = ["MASExecutor", "MASResult"]

_CHILD_SCRIPT = os.path.abspath(_sandbox.__file__)
_MAX_MESSAGE = 16 * 1024 * 1024  # bytes one message of the child may take


@dataclasses.dataclass(frozen=True)
class MASResult:
    """What one run of a MAS on a query gave: a record, returned by :meth:`MASExecutor.run`.

    Attributes
    ----------
    answer : str or None
        The final answer; None when the run failed, timed out without fallback, or
        ``forward`` returned None.
    n_calls : int
        Agent-LLM calls of the run (the fallback's included).
    used_fallback : bool
        Whether the fallback MAS produced the answer.
    error : str or None
        ``"ExceptionType: message"`` of a failed run, ``"timeout after ... s"``, or None.
    seconds : float
        Wall time of the run.
    timed_out : bool, default=False
        Whether the (first) program ran past the timeout.
    program : str, default=""
        Name of the program that gave ``answer``.
    """

    answer: str | None
    n_calls: int
    used_fallback: bool
    error: str | None
    seconds: float
    timed_out: bool = False
    program: str = ""


class _Timeout(BaseException):
    """Raised in-process by the interval timer (a BaseException, past ``except Exception``)."""


class _CountingHandle:
    """``self.llm`` of in-process code: only ``call_llm``, counting into the run."""

    __slots__ = ("call_llm",)

    def __init__(self, agent):
        self.call_llm = agent.call_llm


@fill_doc
class MASExecutor(BaseEstimator):
    """Run MAS programs on queries, with a timeout, a fallback, and LLM-call accounting.

    ``sandbox="process"`` (the default) runs each program in a fresh ``python -I -S`` child
    that cannot open files, sockets or processes: it starts with an empty environment in an
    empty temporary directory, validates the code again, sets resource limits (address
    space ``memory_limit``, CPU time, no file growth, no new descriptors, no new processes),
    installs a seccomp filter that lets only memory, clock, read/write-on-open-pipes and exit
    system calls through (Linux x86-64 and aarch64), and runs the code with reduced builtins
    and read-only views of a few pure modules. Agent-LLM calls travel as JSON lines to this
    process, which makes and counts them, so the child never needs the network. A child
    that runs past ``timeout`` is killed (its whole process group).

    ``sandbox="inprocess"`` runs validated code in this process with the same reduced
    namespace: fast and exactly reproducible, for trusted programs and tests. Its timeout
    uses an interval timer and works only in the main thread.

    On a timeout the run is retried once (``max_retries``) with :func:`fallback_mas` when
    ``fallback`` is True, as the reference implementation does. Any other failure, or a None
    answer, is recorded as no answer, without retry.

    None of this is a proof against a determined attacker; run untrusted generators in a
    container or VM as well.

    Parameters
    ----------
    %(agent_llm)s
    %(timeout)s
    %(sandbox)s
    max_retries : int, default=1
        Fallback runs after a timeout.
    fallback : bool, default=True
        Whether a timed-out program is replaced by the fallback MAS.
    memory_limit : int, default=536870912
        Address-space limit of the child in bytes (``resource.RLIMIT_AS``).
    default_temperature : float, default=0.5
        Temperature of agent calls that give none.

    Attributes
    ----------
    n_runs_ : int
        Programs run so far (fallback runs included; set by the first :meth:`run`).
    last_sandbox_layers_ : list of str
        The protections the last child process reported in force.

    See Also
    --------
    MASProgram : the code this runs.
    MASGPTSolver : generates a program per query and runs it with this class.

    References
    ----------
    .. [1] %(mas_gpt_paper)s: a generated MAS is executed to answer its query.

    Examples
    --------
    >>> from sklearn_icml.mas import ArithmeticMockLLM, MASExecutor, default_mas_pool
    >>> cot = default_mas_pool()[0]
    >>> executor = MASExecutor(ArithmeticMockLLM(random_state=0), timeout=5.0,
    ...                        sandbox="inprocess")
    >>> result = executor.run(cot, "Add 12 and 30.")
    >>> result.answer, result.n_calls, result.used_fallback
    ('ANSWER: 42', 1, False)
    """

    _parameter_constraints: dict = {
        "llm": [callable],
        "timeout": [Interval(numbers.Real, 0, None, closed="neither")],
        "sandbox": [StrOptions({"process", "inprocess"})],
        "max_retries": [Interval(numbers.Integral, 0, None, closed="left")],
        "fallback": ["boolean"],
        "memory_limit": [Interval(numbers.Integral, 64 * 1024 * 1024, None, closed="left")],
        "default_temperature": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, llm=None, *, timeout=60.0, sandbox="process", max_retries=1,
                 fallback=True, memory_limit=512 * 1024 * 1024, default_temperature=0.5):
        self.llm = llm
        self.timeout = timeout
        self.sandbox = sandbox
        self.max_retries = max_retries
        self.fallback = fallback
        self.memory_limit = memory_limit
        self.default_temperature = default_temperature

    def _check_params(self):
        self._validate_params()
        if not hasattr(self, "n_runs_"):
            self.n_runs_ = 0
            self.last_sandbox_layers_ = []
            self._compiled = {}

    def run(self, program, query):
        """Run ``program`` on ``query``.

        Parameters
        ----------
        program : MASProgram
            Validated before anything runs; an invalid program raises ValueError.
        query : str
            The task text, passed to ``forward``.

        Returns
        -------
        result : MASResult
        """
        self._check_params()
        check_instance(program, MASProgram, "program")
        check_instance(query, str, "query")
        if program.code not in self._compiled:  # validated and compiled once per source
            program.validate()
            compiled = compile(program.code, f"<MAS {program.name}>", "exec")
            if len(self._compiled) >= 256:
                self._compiled.clear()
            self._compiled[program.code] = compiled
        start = time.perf_counter()
        answer, n_calls, error, timed_out = self._run_once(program, query)
        used_fallback, name, first_timed_out = False, program.name, timed_out
        retries = 0
        while timed_out and self.fallback and retries < self.max_retries:
            retries += 1
            backup = fallback_mas()
            answer, more_calls, error, timed_out = self._run_once(backup, query)
            n_calls += more_calls
            used_fallback, name = True, backup.name
        return MASResult(
            answer=answer, n_calls=n_calls, used_fallback=used_fallback, error=error,
            seconds=time.perf_counter() - start, timed_out=first_timed_out, program=name,
        )

    def _run_once(self, program, query):
        """``(answer, n_calls, error, timed_out)`` of one validated program."""
        self.n_runs_ += 1
        agent = AgentLLM(self.llm, default_temperature=self.default_temperature)
        if self.sandbox == "inprocess":
            answer, error, timed_out = self._run_inprocess(program, query, agent)
        else:
            answer, error, timed_out, self.last_sandbox_layers_ = _run_in_child(
                program.code, query, agent, timeout=float(self.timeout),
                memory_limit=int(self.memory_limit),
            )
        if answer is not None and not isinstance(answer, str):
            answer = str(answer)
        return answer, getattr(agent, "n_calls_", 0), error, timed_out

    def _run_inprocess(self, program, query, agent):
        compiled = self._compiled.get(program.code)
        if compiled is None:  # the fallback program
            program.validate()
            compiled = compile(program.code, f"<MAS {program.name}>", "exec")
        use_timer = (
            threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
        )
        previous = None
        if use_timer:
            def on_alarm(signum, frame):
                raise _Timeout()

            previous = signal.signal(signal.SIGALRM, on_alarm)
            # fires again every 50 ms, should code catch the first one in a finally block
            signal.setitimer(signal.ITIMER_REAL, float(self.timeout), 0.05)
        try:
            answer = _sandbox.run_forward(
                program.code, query, _CountingHandle(agent), compiled=compiled
            )
            return answer, None, False
        except _Timeout:
            return None, f"timeout after {self.timeout} s", True
        except Exception as exc:  # the reference logs and records no answer
            return None, f"{type(exc).__name__}: {exc}", False
        finally:
            if use_timer:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


def _run_in_child(code, query, agent, *, timeout, memory_limit, check=True):
    """Run ``code`` in a locked-down child; ``(answer, error, timed_out, layers)``.

    ``check=False`` skips the Python-level guard in the child (only the tests use it, to
    show that the operating-system layers hold on their own).
    """
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="mas_sandbox_") as workdir:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", _CHILD_SCRIPT],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=workdir, env={}, close_fds=True, start_new_session=True,
        )
        try:
            return _talk(proc, code, query, agent, deadline, timeout, memory_limit, check)
        finally:
            _kill(proc)
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass


def _talk(proc, code, query, agent, deadline, timeout, memory_limit, check):
    out_fd, in_fd = proc.stdout.fileno(), proc.stdin.fileno()
    os.set_blocking(out_fd, False)
    os.set_blocking(in_fd, False)
    selector = selectors.DefaultSelector()
    buffer = bytearray()
    layers = []

    def send(message):
        data = memoryview((json.dumps(message) + "\n").encode())
        selector.register(in_fd, selectors.EVENT_WRITE)
        try:
            while data:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    return "timeout"
                try:
                    n = os.write(in_fd, data)
                except BrokenPipeError:
                    return "closed"
                data = data[n:]
        finally:
            selector.unregister(in_fd)
        return None

    def receive():
        selector.register(out_fd, selectors.EVENT_READ)
        try:
            while b"\n" not in buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    return "timeout"
                chunk = os.read(out_fd, 1 << 16)
                if not chunk:
                    return "closed"
                buffer.extend(chunk)
                if len(buffer) > _MAX_MESSAGE:
                    return "too long"
        finally:
            selector.unregister(out_fd)
        line, _, rest = bytes(buffer).partition(b"\n")
        buffer[:] = rest
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # a child may send anything
            return "garbled"
        return message if isinstance(message, dict) else "garbled"

    def died(what):
        if what == "timeout":
            return None, f"timeout after {timeout} s", True, layers
        if what == "closed":
            code_ = proc.poll()
            if code_ is None:
                try:
                    code_ = proc.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    code_ = None
            if code_ is not None and code_ < 0:
                sig = signal.Signals(-code_).name
                reason = {"SIGXCPU": " (CPU limit)", "SIGKILL": " (killed)"}.get(sig, "")
                return None, f"sandbox process died by {sig}{reason}", False, layers
            return None, f"sandbox process exited with code {code_}", False, layers
        return None, f"sandbox protocol error: message {what}", False, layers

    cpu_seconds = int(math.ceil(timeout)) + 1
    job = {"code": code, "query": query, "check": check, "memory_bytes": memory_limit,
           "cpu_seconds": cpu_seconds}
    status = send(job)
    if status:
        return died(status)
    while True:
        message = receive()
        if isinstance(message, str):
            return died(message)
        kind = message.get("type")
        if kind == "ready":
            layers = [str(x) for x in message.get("layers", [])]
        elif kind == "llm":
            prompt = message.get("prompt")
            temperature = message.get("temperature")
            if not isinstance(prompt, str) or not (
                temperature is None or isinstance(temperature, (int, float))
            ):
                return died("with a malformed LLM request")
            try:
                reply = {"reply": agent.call_llm(prompt, temperature)}
            except Exception as exc:  # the error goes back into forward
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            status = send(reply)
            if status:
                return died(status)
        elif kind == "result":
            answer = message.get("answer")
            return (None if answer is None else str(answer)), None, False, layers
        elif kind == "error":
            return None, str(message.get("error"))[:4000], False, layers
        else:
            return died(f"of unknown type {kind!r}")
