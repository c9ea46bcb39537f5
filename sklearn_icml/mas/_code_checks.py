"""Run a generated Python program against its unit tests in the confined child process.

Code tasks (HumanEval's problems) are judged by running the program a model wrote together
with the problem's tests. The program is hostile: it runs in a child process under the same
operating-system layer as generated MAS code (``_sandbox._confine``: parent-death signal,
resource limits, no descriptors beyond 0-2, ``no_new_privs`` and the seccomp filter that lets
only memory, clock, read/write and exit system calls through), verified from ``/proc`` by the
parent before the program is sent, and ended with everything it started. Unlike a MAS
program it is not restricted by the program check: it may use any Python and the standard
library modules of :data:`PRELOADED_MODULES`, imported before confinement, since nothing can
be opened afterwards.

The child is ``_code_check_child.py``, run as a script.
"""

import dataclasses
import math
import os
import sys
import time
import warnings
from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, validate_params

from . import _code_check_child
from ._code_check_child import MAX_REASON_CHARS, PRELOADED_MODULES
from ._confinement import (
    Limits,
    SandboxUnavailableError,
    UnsafeSandboxWarning,
    _Channel,
    _expected_limits,
    child_process,
    inspect_confinement,
    platform_problem,
)

__all__ = ["PRELOADED_MODULES", "ProgramCheck", "check_program"]

_CHILD_SCRIPT = os.path.abspath(_code_check_child.__file__)
# the longest program plus test the parent sends (characters)
MAX_PROGRAM_CHARS = 200_000


@dataclasses.dataclass(frozen=True)
class ProgramCheck:
    """The outcome of :func:`check_program`.

    Attributes
    ----------
    passed : bool
        The program ran and the tests raised nothing.
    reason : str
        ``"passed"``, or why not: the exception the program or its tests raised
        (``"AssertionError: ..."``, ``"SyntaxError: ..."``), ``"timeout after 5.0 s"``, a
        limit, or how the child process ended.
    seconds : float
        Wall time of the check, the child's start included.
    """

    passed: bool
    reason: str
    seconds: float


@validate_params(
    {
        "program": [str],
        "test": [str],
        "entry_point": [str],
        "timeout": [Interval(Real, 0, 600, closed="right")],
        "memory_limit": [Interval(Integral, 64 * 2**20, None, closed="left")],
        "allow_weak_isolation": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def check_program(program, test, *, entry_point, timeout=5.0, memory_limit=512 * 2**20,
                  allow_weak_isolation=False):
    """Run ``program`` and then ``test``'s ``check(entry_point)`` in the confined child.

    Parameters
    ----------
    program : str
        Python source that defines the function ``entry_point`` (for HumanEval, the
        problem's prompt followed by a completion).
    test : str
        Python source that defines ``check(candidate)`` and raises when the candidate is
        wrong (HumanEval's ``test`` field).
    entry_point : str
        Name of the function to test.
    timeout : float, default=5.0
        Seconds the program and its tests may take (wall time, also the CPU limit).
    memory_limit : int, default=536870912
        Address-space limit of the child, in bytes (512 MiB by default).
    allow_weak_isolation : bool, default=False
        Run even when the parent cannot verify every layer of the confinement (it warns
        with :class:`UnsafeSandboxWarning`); by default such a check raises
        :class:`SandboxUnavailableError` and the program is never sent.

    Returns
    -------
    check : ProgramCheck
        Whether the tests passed, and why not.

    Examples
    --------
    >>> from sklearn_icml.mas import check_program
    >>> test = "def check(f):\\n    assert f(2) == 4\\n"
    >>> check_program("def double(x):\\n    return 2 * x\\n", test, entry_point="double").passed
    True
    >>> check_program("def double(x):\\n    return x\\n", test, entry_point="double").reason
    'AssertionError: '
    """
    if not entry_point.isidentifier():
        raise ValueError(f"entry_point must be a function name. Got {entry_point!r} instead.")
    start = time.monotonic()
    if len(program) + len(test) > MAX_PROGRAM_CHARS:
        return ProgramCheck(False, f"limit exceeded: program and test longer than "
                            f"{MAX_PROGRAM_CHARS} characters", time.monotonic() - start)
    problem = platform_problem()
    if problem and not allow_weak_isolation:
        raise SandboxUnavailableError(f"check_program cannot confine a child here: {problem}")

    cpu_seconds = int(math.ceil(timeout)) + 2
    argv = [sys.executable, "-I", "-S", "-B", _CHILD_SCRIPT, str(os.getpid()),
            str(memory_limit), str(cpu_seconds)]
    # the child's messages: one sign and one result of at most MAX_REASON_CHARS characters
    limits = Limits(max_llm_calls=0, max_prompt_chars=0, max_answer_chars=MAX_REASON_CHARS)
    with child_process(argv, what="a code check") as proc:
        channel = _Channel(proc, limits)
        channel.deadline = time.monotonic() + max(10.0, timeout)
        message = channel.receive()
        if message != {"type": "confined"}:
            return ProgramCheck(False, f"sandbox process did not start ({message!r})",
                                time.monotonic() - start)
        _, missing = inspect_confinement(proc.pid, _expected_limits(memory_limit,
                                                                     cpu_seconds))
        if missing and not allow_weak_isolation:
            raise SandboxUnavailableError(
                f"the code-check child is not confined: missing {', '.join(missing)}; the "
                "program was not run. Pass allow_weak_isolation=True to run it anyway."
            )
        if missing:
            warnings.warn(f"the code-check child is not confined: missing "
                          f"{', '.join(missing)}; running anyway.", UnsafeSandboxWarning,
                          stacklevel=2)
        channel.deadline = time.monotonic() + timeout
        status = channel.send({"program": program, "test": test, "entry_point": entry_point})
        message = status or channel.receive()
        if message == "timeout":
            reason = f"timeout after {timeout} s"
        elif isinstance(message, str):
            code = proc.poll()
            reason = (f"sandbox process ended ({message}"
                      + (f", exit code {code})" if code is not None else ")"))
        elif message.get("type") == "result" and isinstance(message.get("passed"), bool):
            reason = str(message.get("reason", ""))[:MAX_REASON_CHARS]
            return ProgramCheck(message["passed"], reason, time.monotonic() - start)
        else:
            reason = "sandbox protocol error: an unexpected message"
        return ProgramCheck(False, reason, time.monotonic() - start)

