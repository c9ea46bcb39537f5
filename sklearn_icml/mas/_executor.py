"""MASExecutor: run a MAS program on a query, in a confined child process or (unsafely) here."""

import dataclasses
import decimal
import numbers
import signal
import sys
import threading
import time
import warnings

from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions

from ..utils._deprecation import keyword_only_after, renamed
from ..utils._param_validation import (
    NON_NEGATIVE_INT,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
)
from ..utils._params import store_params
from . import _confinement, _sandbox
from ._confinement import Limits, SandboxUnavailableError, UnsafeSandboxWarning
from ._llm import AgentLLM
from ._program import MASProgram, fallback_mas, is_shipped
from ._sandbox import LimitReached, answer_text, clean_text, limited_llm
from ._validation import check_instance, check_sandbox

__all__ = ["MASExecutor", "MASResult"]


@dataclasses.dataclass(frozen=True)
class MASResult:
    """What one run of a MAS on a query gave: a record, returned by :meth:`MASExecutor.execute`.

    Attributes
    ----------
    answer : str or None
        The final answer (``str()`` of what ``forward`` returned, cleaned by the rule of
        :meth:`AgentLLM.call_llm`: no lone surrogates, no control characters but tab and
        newline, no bidirectional controls); None when the run failed, timed out without
        fallback, or ``forward`` returned None.
    n_calls : int
        Agent-LLM calls of the run (the fallback's included).
    used_fallback : bool
        Whether the fallback MAS produced the answer.
    error : str or None
        Why the program gave no answer: ``"ExceptionType: message"`` of a failed run,
        ``"timeout after ... s"``, ``"limit exceeded: ..."``; when the fallback answered,
        why the fallback ran; None for a run without trouble.
    seconds : float
        Wall time of the run.
    timed_out : bool, default=False
        Whether the (first) program ran past the timeout.
    limit_exceeded : bool, default=False
        Whether the (first) program went past ``max_llm_calls``, ``max_prompt_chars`` or
        ``max_answer_chars``.
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
    limit_exceeded: bool = False


class _Timeout(BaseException):
    """Raised in-process by the interval timer (a BaseException, past ``except Exception``)."""


class _Deadline:
    """Whether the in-process timer may still raise :class:`_Timeout`."""

    __slots__ = ("armed",)

    def __init__(self):
        self.armed = True


def _guarded(run, deadline):
    """``(kind, value)`` of ``run()``; no exception of the run leaves this frame.

    The timer's handler never raises while this frame itself executes, and it is disarmed
    before the frame is left, so that a timeout that fires again while the program unwinds
    (it fires every 50 ms) is caught here and never escapes to the caller.
    """
    try:
        return "answer", run()
    except _Timeout:
        return "timeout", None
    except LimitReached as exc:
        return "limit", exc
    except Exception as exc:  # the reference logs and records no answer
        return "error", exc
    finally:
        deadline.armed = False


_GUARD_CODE = _guarded.__code__
# Python frames a program may add on top of the caller's in-process: deep enough for any
# MAS, far from the C stack's end (Python recursion is bounded by the interpreter's limit;
# this bound applies when the caller has raised that limit).
_INPROCESS_DEPTH = 400


def _frame_depth():
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


def _run_inprocess(compiled, query, send, limits, timeout):
    """Run a compiled, checked program here: ``(answer, error, timed_out, limit_exceeded)``.

    ``send(prompt, temperature)`` is the agent LLM. The program runs in the capability
    namespace (its own ``random.Random(0)``, a ``print`` that writes nothing), in a
    ``decimal`` context of its own and with a bounded recursion depth, under an interval
    timer (main thread only) that fires at ``timeout`` and every 50 ms after; nothing it
    raises, a :class:`_Timeout` included, leaves this function.
    """
    handle = limited_llm(limits, send)
    deadline = _Deadline()
    use_timer = (
        threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    )
    previous_handler, previous_limit = None, sys.getrecursionlimit()

    def on_alarm(signum, frame):
        if deadline.armed and (frame is None or frame.f_code is not _GUARD_CODE):
            raise _Timeout()

    if use_timer:
        previous_handler = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(timeout), 0.05)
    try:
        sys.setrecursionlimit(min(previous_limit, _frame_depth() + _INPROCESS_DEPTH))
        with decimal.localcontext():
            kind, value = _guarded(
                lambda: _sandbox.execute_forward(None, query, handle, compiled=compiled),
                deadline,
            )
    finally:
        deadline.armed = False
        sys.setrecursionlimit(previous_limit)
        if use_timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous_handler)
    if kind == "timeout":
        return None, f"timeout after {timeout} s", True, False
    if kind == "limit":
        return None, str(value.args[0]), False, True
    if kind == "error":
        return None, f"{type(value).__name__}: {str(value)[:2000]}", False, False
    try:
        answer = answer_text(value)
    except Exception as exc:  # noqa: BLE001 - str() of what the program returned
        return None, f"{type(exc).__name__}: {str(exc)[:2000]}", False, False
    refused = limits.check_answer(answer)
    if refused:
        return None, refused, False, True
    return answer, None, False, False


class MASExecutor(BaseEstimator):
    """Run MAS programs on queries, with a timeout, a fallback, limits and LLM-call accounting.

    Which mode to use:

    - ``sandbox="process"`` (the default) for generated or otherwise untrusted programs. Each
      run starts a fresh ``python -I -S`` child with an empty environment in an empty
      temporary directory. Before it reads a byte of the program, the child arms a
      parent-death signal, closes every descriptor but its three pipes, sets resource limits
      (address space ``memory_limit``, CPU time, no file growth, no new descriptors, no new
      processes) and installs ``no_new_privs`` and a seccomp filter that lets only memory,
      clock, read/write and exit system calls through (no open, socket, fork, clone, execve,
      kill, setsid; Linux x86-64 and aarch64). This process then reads the child's state
      from ``/proc/<pid>`` and sends the program only when every layer is in force; nothing
      the child reports is believed. The program is checked again in the child and runs with
      reduced builtins. Agent-LLM calls travel as JSON lines to this process, which makes,
      counts and limits them. At the end (answer, error or timeout) the child and anything it
      started are stopped, killed and looked for again; a survivor raises
      :class:`SandboxError`.
    - ``allow_weak_isolation=True`` where the filter cannot be installed or verified (another
      operating system or architecture, a kernel without seccomp): the child runs with the
      protections that are in force, and every run warns (:class:`UnsafeSandboxWarning`).
      Such a child can open files and sockets and start processes (as root, resource limits
      do not stop that); what it starts is killed at the end of the run, unless the child
      itself dies first. Without the opt-in such a platform raises
      :class:`SandboxUnavailableError` and nothing runs.
    - ``sandbox="unsafe-inprocess"`` runs only the programs the library ships (the designs
      of :func:`default_mas_pool`, for any of its parameters, and :func:`fallback_mas`,
      recognised by their exact source); any other program raises ValueError before it
      runs. It exists for speed and exact reproducibility of the built-in pool (tests,
      experiments). The program runs in this process in the same capability namespace
      (its own ``random.Random(0)``, a ``print`` that writes nothing), in a ``decimal``
      context of its own, with the recursion depth bounded, under an interval timer
      (main thread only) that fires at the timeout and every 50 ms after; no exception of
      the run, the timer's included, leaves :meth:`execute`. It warns on every run.

      What running in this process cannot protect, and why no other program is run
      there: the program has this process's rights (files, network, processes) as far
      as the program check lets it reach them; a long call into C code (one huge
      arithmetic or regular-expression operation) is not interrupted by the timer; C
      recursion (deeply nested iterators or tuples) is not bounded by the recursion
      limit and can crash the interpreter; there is no memory limit; objects a program
      can reach (the functions and C types of its namespace) are this process's own;
      and the timer needs the main thread (elsewhere there is no timeout at all). The
      child process of ``sandbox="process"`` bounds all of these.

    On a timeout or a passed limit the run is retried once (``max_retries``) with
    :func:`fallback_mas` when ``fallback`` is True, as the reference implementation does
    for timeouts. Any other failure, or a None answer, is recorded as no answer, without
    retry.

    Parameters
    ----------
    llm : callable, default=None
        The agent LLM, ``llm(prompt, temperature) -> str``; required before the first run.
    timeout : float, default=60.0
        Seconds one MAS program may run (the reference uses 600).
    sandbox : {"process", "unsafe-inprocess"}, default="process"
        Where the (generated) code runs: ``"process"``, a confined child process, for
        generated or untrusted code; ``"unsafe-inprocess"``, this process, for the
        programs the library ships only (any other raises ValueError; it warns on every
        run).
        See the two modes above. The old spelling ``"inprocess"`` raises an error.
    max_retries : int, default=1
        Fallback runs after a timeout or a passed limit.
    fallback : bool, default=True
        Whether a timed-out program, or one past a limit, is replaced by the fallback MAS.
    memory_limit : int, default=536870912
        Address-space limit of the child in bytes (``resource.RLIMIT_AS``).
    allow_weak_isolation : bool, default=False
        Run in process mode even where the child cannot be fully confined (no seccomp filter
        on this platform or kernel, or a layer missing when checked), with the protections
        that are in force; every such run warns. False refuses to run there.
    max_llm_calls : int, default=64
        Agent-LLM calls one program may make; the next one ends the run.
    max_prompt_chars : int, default=200000
        Characters of one prompt; a longer prompt is not sent and ends the run.
    max_answer_chars : int, default=100000
        Characters of the final answer; a longer answer ends the run. The three limits
        are checked the same way, with the same messages, in both modes, before the work
        they bound (a call is counted and its prompt measured before it is sent, an
        answer measured before it is handed back).
    default_temperature : float, default=0.5
        Temperature of agent calls that give none.

    Attributes
    ----------
    n_runs_ : int
        Programs run so far (fallback runs included; set by the first :meth:`execute`).
    last_sandbox_layers_ : list of str
        The protections of the last child process, as this process verified them in
        ``/proc`` (``seccomp``, ``no_new_privs``, the ``RLIMIT_*`` names, ``own_session``,
        ``descriptors_0_1_2``).

    See Also
    --------
    MASProgram : the code this runs, and the rules of its check.
    MASGPTSolver : generates a program per query and runs it with this class.

    Notes
    -----
    The reference implementation [1]_ runs the generated MAS in a separate process with a
    timeout. The confinement, its verification, the limits and the stricter program check
    are this library's, because generated code is untrusted. Even so, run untrusted
    generators in a container or VM as well.

    References
    ----------
    .. [1] R. Ye et al., "MAS-GPT: Training LLMs to Build LLM-based Multi-Agent Systems",
       ICML 2025, arXiv:2503.03686: a generated MAS is executed to answer its query.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_icml.mas import ArithmeticMockLLM, MASExecutor, default_mas_pool
    >>> cot = default_mas_pool()[0]
    >>> executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=5.0)
    >>> result = executor.execute(cot, "Add 12 and 30.")
    >>> result.answer, result.n_calls, result.used_fallback
    ('ANSWER: 42', 1, False)
    >>> "seccomp" in executor.last_sandbox_layers_  # as read from /proc by this process
    True

    The built-in pool is trusted code, so it may also run in this process:

    >>> executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), sandbox="unsafe-inprocess")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", UnsafeSandboxWarning)
    ...     result = executor.execute(cot, "Add 12 and 30.")
    >>> result.answer, result.n_calls, result.used_fallback
    ('ANSWER: 42', 1, False)
    """

    _parameter_constraints: dict = {
        "llm": [callable],
        "timeout": [POSITIVE_REAL],
        "sandbox": [StrOptions({"process", "unsafe-inprocess"})],
        "max_retries": [NON_NEGATIVE_INT],
        "fallback": ["boolean"],
        "memory_limit": [Interval(numbers.Integral, 64 * 1024 * 1024, None, closed="left")],
        "allow_weak_isolation": ["boolean"],
        "max_llm_calls": [POSITIVE_INT],
        "max_prompt_chars": [POSITIVE_INT],
        "max_answer_chars": [POSITIVE_INT],
        "default_temperature": [NON_NEGATIVE_REAL],
    }

    @keyword_only_after(1)
    def __init__(self, *, llm=None, timeout=60.0, sandbox="process", max_retries=1,
                 fallback=True, memory_limit=512 * 1024 * 1024, allow_weak_isolation=False,
                 max_llm_calls=64, max_prompt_chars=200_000, max_answer_chars=100_000,
                 default_temperature=0.5):
        store_params(self, locals())

    def _check_params(self):
        check_sandbox(self.sandbox, type(self).__name__)
        self._validate_params()
        if not hasattr(self, "n_runs_"):
            self.n_runs_ = 0
            self.last_sandbox_layers_ = []
            self._compiled = {}

    def execute(self, program, query):
        """Execute ``program`` on ``query`` and return what it gave.

        Parameters
        ----------
        program : MASProgram
            Validated before anything runs; an invalid program raises ValueError.
        query : str
            The task text, passed to ``forward``.

        Returns
        -------
        result : MASResult

        Raises
        ------
        ValueError
            When ``program`` breaks a rule of the program check, or, with
            ``sandbox="unsafe-inprocess"``, is not a program the library ships.
        SandboxUnavailableError
            In process mode, when the child cannot be confined (platform, kernel, or a layer
            missing in ``/proc``) and ``allow_weak_isolation`` is False; nothing ran.
        SandboxError
            When a process of the run survives its end.
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
        if self.sandbox == "process":
            problem = _confinement.platform_problem()
            if problem and not _confinement.can_run_child():
                raise SandboxUnavailableError(
                    f"MASExecutor(sandbox='process') cannot run a child process here: "
                    f"{problem}, and this platform has no resource limits or process groups. "
                    "Run on Linux x86-64/aarch64, or use sandbox='unsafe-inprocess' for "
                    "trusted programs only."
                )
            if problem and not self.allow_weak_isolation:
                raise SandboxUnavailableError(
                    f"MASExecutor(sandbox='process') cannot confine generated code here: "
                    f"{problem}. Pass allow_weak_isolation=True to run it in a child process "
                    "with the protections this platform has (it warns on every run), or run "
                    "on Linux x86-64/aarch64."
                )
        else:
            if not is_shipped(program.code):
                raise ValueError(
                    f"sandbox='unsafe-inprocess' runs only the programs the library ships "
                    f"(default_mas_pool, fallback_mas); program {program.name!r} is not one of "
                    "them. Run it with sandbox='process'."
                )
            warnings.warn(
                "sandbox='unsafe-inprocess' runs the program in this process with its full "
                "rights and a best-effort timeout; use sandbox='process' for generated or "
                "untrusted code.", UnsafeSandboxWarning, stacklevel=2,
            )
        start = time.perf_counter()
        answer, n_calls, error, timed_out, limited = self._execute_once(program, query)
        used_fallback, name = False, program.name
        first_timed_out, first_limited, first_error = timed_out, limited, error
        retries = 0
        while (timed_out or limited) and self.fallback and retries < self.max_retries:
            retries += 1
            backup = fallback_mas()
            answer, more_calls, error, timed_out, limited = self._execute_once(backup, query)
            n_calls += more_calls
            used_fallback, name = True, backup.name
        if used_fallback and answer is not None:
            error = first_error  # why the fallback ran
        answer = None if answer is None else clean_text(answer)
        error = None if error is None else clean_text(error)
        return MASResult(
            answer=answer, n_calls=n_calls, used_fallback=used_fallback, error=error,
            seconds=time.perf_counter() - start, timed_out=first_timed_out, program=name,
            limit_exceeded=first_limited,
        )

    run = renamed(execute, "run")

    def _limits(self):
        return Limits(int(self.max_llm_calls), int(self.max_prompt_chars),
                      int(self.max_answer_chars))

    def _execute_once(self, program, query):
        """``(answer, n_calls, error, timed_out, limit_exceeded)`` of one validated program."""
        self.n_runs_ += 1
        agent = AgentLLM(llm=self.llm, default_temperature=self.default_temperature)
        if self.sandbox == "unsafe-inprocess":
            answer, error, timed_out, limited = self._execute_inprocess(program, query, agent)
        else:
            child = _confinement.execute_in_child(
                program.code, query, agent, timeout=float(self.timeout),
                memory_limit=int(self.memory_limit), limits=self._limits(),
                weak_ok=self.allow_weak_isolation,
            )
            self.last_sandbox_layers_ = list(child.layers)
            answer, error, timed_out, limited = (
                child.answer, child.error, child.timed_out, child.limit_exceeded
            )
        return answer, getattr(agent, "n_calls_", 0), error, timed_out, limited

    def _execute_inprocess(self, program, query, agent):
        compiled = self._compiled.get(program.code)
        if compiled is None:  # the fallback program
            program.validate()
            compiled = compile(program.code, f"<MAS {program.name}>", "exec")
        return _run_inprocess(compiled, query, agent.call_llm, self._limits(),
                              float(self.timeout))
