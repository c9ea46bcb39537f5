"""MASExecutor: run a MAS program on a query, in a confined child process or (unsafely) here."""

import dataclasses
import numbers
import signal
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
from . import _confinement, _sandbox
from ._confinement import Limits, SandboxUnavailableError, UnsafeSandboxWarning
from ._llm import AgentLLM
from ._program import MASProgram, fallback_mas
from ._validation import check_instance, check_sandbox

__all__ = ["MASExecutor", "MASResult"]


@dataclasses.dataclass(frozen=True)
class MASResult:
    """What one run of a MAS on a query gave: a record, returned by :meth:`MASExecutor.execute`.

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


class _LimitExceeded(BaseException):
    """Raised in-process when a program passes a limit (past ``except Exception`` too)."""


def _limited_call(agent, limits):
    """``call_llm`` of in-process code: counted into the run, refused past the limits."""
    n_calls = 0

    def call_llm(prompt, temperature=None):
        nonlocal n_calls
        n_calls += 1
        refused = limits.check_prompt(n_calls, prompt) if isinstance(prompt, str) else None
        if refused:
            raise _LimitExceeded(refused)
        return agent.call_llm(prompt, temperature)

    return call_llm


class _CountingHandle:
    """``self.llm`` of in-process code: only ``call_llm``."""

    __slots__ = ("call_llm",)

    def __init__(self, call_llm):
        self.call_llm = call_llm


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
    - ``sandbox="unsafe-inprocess"`` only for trusted programs (the built-in pool, tests,
      reproducible experiments): validated code runs in this process, with this process's
      rights, in the same reduced namespace. It is fast and exactly reproducible, and it
      warns on every run. Its timeout is best effort: an interval timer (main thread only)
      that a long call into C code (one huge arithmetic or regular-expression operation)
      does not interrupt.

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
        generated or untrusted code; ``"unsafe-inprocess"``, this process with its full
        rights and a best-effort timeout, for trusted programs only (it warns on every run).
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
        Characters of the final answer; a longer answer ends the run.
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
        self.llm = llm
        self.timeout = timeout
        self.sandbox = sandbox
        self.max_retries = max_retries
        self.fallback = fallback
        self.memory_limit = memory_limit
        self.allow_weak_isolation = allow_weak_isolation
        self.max_llm_calls = max_llm_calls
        self.max_prompt_chars = max_prompt_chars
        self.max_answer_chars = max_answer_chars
        self.default_temperature = default_temperature

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
        limits = self._limits()
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
            answer = _sandbox.execute_forward(
                program.code, query, _CountingHandle(_limited_call(agent, limits)),
                compiled=compiled,
            )
            if answer is not None and not isinstance(answer, str):
                answer = str(answer)
            refused = limits.check_answer(answer)
            if refused:
                return None, refused, False, True
            return answer, None, False, False
        except _Timeout:
            return None, f"timeout after {self.timeout} s", True, False
        except _LimitExceeded as exc:
            return None, str(exc), False, True
        except Exception as exc:  # the reference logs and records no answer
            return None, f"{type(exc).__name__}: {exc}", False, False
        finally:
            if use_timer:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
