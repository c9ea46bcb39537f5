"""The parent's side of the process sandbox: decide, verify and end the child's confinement.

The child (``_sandbox.py`` run as a script) confines itself before it reads the program, but
nothing it says is believed: this process reads the child's state from ``/proc/<pid>``
(seccomp mode and filter count, ``no_new_privs``, resource limits, session, open
descriptors) and sends the program only when every layer is in force. Everything the child
sends afterwards is checked against the run's limits. At the end the child and anything it
started are stopped, killed, and looked for again.
"""

import contextlib
import dataclasses
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import warnings

try:
    import resource
except ImportError:  # Windows: no resource limits and no process sandbox at all
    resource = None

from . import _sandbox
from ._sandbox import clean_text

__all__ = ["SandboxError", "SandboxUnavailableError", "UnsafeSandboxWarning"]

_CHILD_SCRIPT = os.path.abspath(_sandbox.__file__)
# labels of /proc/<pid>/limits
_LIMIT_LABELS = {
    "RLIMIT_CORE": "Max core file size", "RLIMIT_FSIZE": "Max file size",
    "RLIMIT_NOFILE": "Max open files", "RLIMIT_CPU": "Max cpu time",
    "RLIMIT_AS": "Max address space", "RLIMIT_NPROC": "Max processes",
}


class SandboxError(RuntimeError):
    """The process sandbox failed in a way that must not pass silently."""


class SandboxUnavailableError(SandboxError):
    """The child process could not be confined (platform, kernel, or a failed check)."""


class UnsafeSandboxWarning(UserWarning):
    """Generated code runs with weaker isolation than the confined child process."""


def _platform():
    return sys.platform, os.uname().machine


def platform_problem():
    """Why this platform cannot confine the child (a sentence), or None."""
    system, machine = _platform()
    if not system.startswith("linux"):
        return f"seccomp filters exist only on Linux; this is {system} on {machine}"
    if machine.lower() not in _sandbox.MACHINE_ARCH:
        return f"the seccomp filter covers Linux x86-64 and aarch64; this is Linux on {machine}"
    if not os.path.exists("/proc/self/status"):
        return "/proc is not mounted, so the child's confinement cannot be verified"
    return None


def can_run_child():
    """Whether a child process can be run here at all (resource limits, process groups)."""
    return resource is not None and hasattr(os, "killpg")


def _status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(
            (key.strip(), value.strip())
            for key, _, value in (line.partition(":") for line in f)
        )


def _expected_limits(memory_bytes, cpu_seconds):
    """The limits the child sets: the wanted value, or this process's hard limit if lower."""
    values = {"memory_bytes": memory_bytes, "cpu_seconds": cpu_seconds}
    out = {}
    for name, value in _sandbox.RLIMITS:
        value = values[value] if isinstance(value, str) else value
        hard = resource.getrlimit(getattr(resource, name))[1]
        out[name] = value if hard == resource.RLIM_INFINITY else min(value, hard)
    return out


def inspect_confinement(pid, expected_limits):
    """``(layers, missing)``: the protections of process ``pid`` in force, read from /proc.

    The seccomp filter counts only if the child has more filters than this process (an
    inherited filter, e.g. a container's, is not the child's); without the
    ``Seccomp_filters`` field that can be told only when this process has none.
    """
    layers, missing = [], []
    try:
        child, own = _status(pid), _status("self")
        with open(f"/proc/{pid}/limits") as f:
            limit_lines = f.read().splitlines()
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read().rpartition(")")[2].split()
        fds = set(os.listdir(f"/proc/{pid}/fd"))
    except OSError as exc:
        return [], [f"/proc/{pid} is unreadable ({exc.strerror})"]

    seccomp = child.get("Seccomp") == "2"
    if "Seccomp_filters" in child and "Seccomp_filters" in own:
        seccomp = seccomp and int(child["Seccomp_filters"]) > int(own["Seccomp_filters"])
    elif own.get("Seccomp") != "0":
        seccomp = False
    (layers if seccomp else missing).append("seccomp")
    (layers if child.get("NoNewPrivs") == "1" else missing).append("no_new_privs")

    actual = {}
    for line in limit_lines:
        for name, label in _LIMIT_LABELS.items():
            if line.startswith(label + " "):
                fields = line[len(label):].split()
                actual[name] = tuple(
                    resource.RLIM_INFINITY if v == "unlimited" else int(v) for v in fields[:2]
                )
    for name, value in expected_limits.items():
        (layers if actual.get(name) == (value, value) else missing).append(name)
    # stat after the command: state ppid pgrp session ...
    own_session = len(stat) > 3 and int(stat[2]) == pid and int(stat[3]) == pid
    (layers if own_session else missing).append("own_session")
    (layers if fds <= {"0", "1", "2"} else missing).append("descriptors_0_1_2")
    return layers, missing


def _processes():
    """``{pid: (ppid, pgrp, session, state, starttime)}`` of every process in /proc."""
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        out[int(name)] = (int(fields[1]), int(fields[2]), int(fields[3]), fields[0],
                          int(fields[19]))
    return out


def _family(procs, root):
    """``{pid: starttime}`` of ``root``, its descendants and its process group and session."""
    children = {}
    for pid, (ppid, *_rest) in procs.items():
        children.setdefault(ppid, []).append(pid)
    todo = [root] + [p for p, v in procs.items() if v[1] == root or v[2] == root]
    found = {}
    while todo:
        pid = todo.pop()
        if pid in found or pid not in procs:
            continue
        found[pid] = procs[pid][4]
        todo.extend(children.get(pid, []))
    return found


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def end_child(proc):
    """Stop and kill the child and everything it started; return the pids that survived.

    The child is a subreaper, so while it lives every process it started (after
    ``setsid()`` too) is in its tree; the tree is stopped until it stops growing, then
    killed, and then looked for again for up to 2 s.
    """
    pid = proc.pid
    members = {}
    if proc.poll() is None and os.path.isdir("/proc/self"):
        _signal(pid, signal.SIGSTOP)
        for _ in range(16):
            found = _family(_processes(), pid)
            new = found.keys() - members.keys()
            for p in new:
                _signal(p, signal.SIGSTOP)
            members.update(found)
            if not new:
                break
        for p in members:
            _signal(p, signal.SIGKILL)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pid]
    deadline = time.monotonic() + 2.0
    while True:
        procs = _processes()
        alive = sorted(
            p for p, (_, pgrp, session, state, start) in procs.items()
            if state not in ("Z", "X")
            and (members.get(p) == start or pgrp == pid or session == pid)
        )
        if not alive or time.monotonic() > deadline:
            return alive
        for p in alive:
            _signal(p, signal.SIGKILL)
        time.sleep(0.01)


# What may cross the boundary in one run; the class is the child's too.
Limits = _sandbox.Limits


@dataclasses.dataclass(frozen=True)
class ChildRun:
    """What one child run gave."""

    answer: str | None
    error: str | None
    timed_out: bool = False
    limit_exceeded: bool = False
    layers: tuple = ()


def execute_in_child(code, query, agent, *, timeout, memory_limit, limits, weak_ok=False,
                 check=True, install_filter=True):
    """Run ``code`` on ``query`` in a confined child; a :class:`ChildRun`.

    Raises :class:`SandboxUnavailableError` when the child is not confined and ``weak_ok``
    is False (the program is then never sent), and :class:`SandboxError` when a process of
    the run survives its end. ``check=False`` and ``install_filter=False`` are test hooks:
    the program check off (the real builtins), and no seccomp filter.
    """
    cpu_seconds = int(math.ceil(timeout)) + 2  # + the interpreter's start
    argv = [sys.executable, "-I", "-S", "-B", _CHILD_SCRIPT, str(os.getpid()),
            str(memory_limit), str(cpu_seconds)]
    if check and not _sandbox.imported_modules(code):
        argv.append("--no-imports")
    argv += ([] if check else ["--unchecked"]) + ([] if install_filter else ["--no-seccomp"])
    expected = _expected_limits(memory_limit, cpu_seconds)
    with child_process(argv, what="the sandbox") as proc:
        return _Channel(proc, limits).execute(code, query, agent, timeout, expected, weak_ok)


@contextlib.contextmanager
def child_process(argv, *, what):
    """Start a sandbox child in a scratch folder; on leaving, end it and all it started.

    Raises :class:`SandboxError` naming ``what`` when a process of the run survives.
    """
    with tempfile.TemporaryDirectory(prefix="mas_sandbox_") as workdir:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=workdir, env={}, close_fds=True, start_new_session=True,
        )
        try:
            yield proc
        finally:
            survivors = end_child(proc)
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            if survivors:
                raise SandboxError(f"processes {survivors} of {what} survived the end of the run.")


class _Channel:
    """The JSON-lines protocol with one child, under deadlines and the run's limits."""

    def __init__(self, proc, limits):
        self.proc, self.limits = proc, limits
        self.out_fd, self.in_fd = proc.stdout.fileno(), proc.stdin.fileno()
        os.set_blocking(self.out_fd, False)
        os.set_blocking(self.in_fd, False)
        self.selector = selectors.DefaultSelector()
        self.buffer = bytearray()
        self.deadline = None

    def send(self, message):
        data = memoryview((json.dumps(message) + "\n").encode())
        self.selector.register(self.in_fd, selectors.EVENT_WRITE)
        try:
            while data:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0 or not self.selector.select(remaining):
                    return "timeout"
                try:
                    n = os.write(self.in_fd, data)
                except BrokenPipeError:
                    return "closed"
                data = data[n:]
        finally:
            self.selector.unregister(self.in_fd)
        return None

    def receive(self):
        """The next message (a dict), or why there is none: each byte is searched once,
        and a line is refused past ``max_message_bytes`` before it is parsed."""
        self.selector.register(self.out_fd, selectors.EVENT_READ)
        try:
            searched = 0
            while (newline := self.buffer.find(b"\n", searched)) < 0:
                searched = len(self.buffer)
                if searched > self.limits.max_message_bytes:
                    return "too long"
                remaining = self.deadline - time.monotonic()
                if remaining <= 0 or not self.selector.select(remaining):
                    return "timeout"
                chunk = os.read(self.out_fd, 1 << 16)
                if not chunk:
                    return "closed"
                self.buffer.extend(chunk)
        finally:
            self.selector.unregister(self.out_fd)
        if newline > self.limits.max_message_bytes:
            return "too long"
        line = bytes(self.buffer[:newline])
        del self.buffer[:newline + 1]
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # a child may send anything
            return "garbled"
        return message if isinstance(message, dict) else "garbled"

    def failed(self, what, timeout, layers):
        if what == "timeout":
            return ChildRun(None, f"timeout after {timeout} s", timed_out=True, layers=layers)
        if what == "too long":
            return ChildRun(
                None, f"limit exceeded: a message of more than {self.limits.max_message_bytes} "
                "bytes (max_prompt_chars, max_answer_chars)", limit_exceeded=True, layers=layers,
            )
        if what == "closed":
            code = self.proc.poll()
            if code is None:
                try:
                    code = self.proc.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    return ChildRun(None, "sandbox process closed its output while still "
                                    "running (it was killed)", layers=layers)
            if code is not None and code < 0:
                sig = signal.Signals(-code).name
                reason = {"SIGXCPU": " (CPU limit)", "SIGKILL": " (killed)"}.get(sig, "")
                return ChildRun(None, f"sandbox process died by {sig}{reason}", layers=layers)
            return ChildRun(None, f"sandbox process exited with code {code}", layers=layers)
        return ChildRun(None, f"sandbox protocol error: message {what}", layers=layers)

    def execute(self, code, query, agent, timeout, expected, weak_ok):
        # 1. the child confines itself; it may take longer than the program's own timeout
        self.deadline = time.monotonic() + max(10.0, timeout)
        message = self.receive()
        if isinstance(message, str):
            return ChildRun(None, f"sandbox process did not start ({message} before it was "
                            "confined)")
        if message != {"type": "confined"}:
            return self.failed("other than the confinement sign", timeout, ())
        # 2. verified from outside; the program has not been sent yet
        layers, missing = inspect_confinement(self.proc.pid, expected)
        layers = tuple(layers)
        if missing:
            system, machine = _platform()
            problem = platform_problem()
            where = f" ({problem})" if problem else f" on {system} {machine}"
            text = (f"the sandbox child process is not confined: missing {', '.join(missing)}"
                    f"{where}")
            if not weak_ok:
                raise SandboxUnavailableError(
                    f"{text}; the program was not run. Pass allow_weak_isolation=True to run "
                    "it with the protections that are in force (it warns on every run)."
                )
            warnings.warn(f"{text}; running anyway (allow_weak_isolation=True).",
                          UnsafeSandboxWarning, stacklevel=5)
        # 3. the job, under the program's timeout and the limits
        self.deadline = time.monotonic() + timeout
        status = self.send({"code": code, "query": query, "limits": self.limits.as_list()})
        if status:
            return self.failed(status, timeout, layers)
        n_calls = 0
        while True:
            message = self.receive()
            if isinstance(message, str):
                return self.failed(message, timeout, layers)
            kind = message.get("type")
            if kind == "llm":
                prompt, temperature = message.get("prompt"), message.get("temperature")
                if not isinstance(prompt, str) or not (
                    temperature is None or isinstance(temperature, (int, float))
                ):
                    return self.failed("with a malformed LLM request", timeout, layers)
                n_calls += 1
                refused = self.limits.check_prompt(n_calls, prompt)
                if refused:
                    return ChildRun(None, refused, limit_exceeded=True, layers=layers)
                try:
                    reply = {"reply": agent.call_llm(prompt, temperature)}
                except Exception as exc:  # noqa: BLE001 - the error goes back into forward
                    reply = {"error": f"{type(exc).__name__}: {exc}"}
                status = self.send(reply)
                if status:
                    return self.failed(status, timeout, layers)
            elif kind == "result":
                answer = message.get("answer")
                if not (answer is None or isinstance(answer, str)):
                    return self.failed("with an answer that is not a str", timeout, layers)
                refused = self.limits.check_answer(answer)
                if refused:
                    return ChildRun(None, refused, limit_exceeded=True, layers=layers)
                return ChildRun(answer, None, layers=layers)
            elif kind == "limit":  # the child's own check; believed only as a refusal
                reason = message.get("error")
                if not (isinstance(reason, str) and reason.startswith("limit exceeded: ")):
                    reason = "limit exceeded: reported by the sandbox process"
                return ChildRun(None, clean_text(reason[:300]), limit_exceeded=True,
                                layers=layers)
            elif kind == "error":
                return ChildRun(None, str(message.get("error"))[:4000], layers=layers)
            else:  # "confined" again included: a forged report
                return self.failed(f"of unexpected type {str(kind)[:100]!r}", timeout, layers)
