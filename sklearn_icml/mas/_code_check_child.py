"""The child of :func:`sklearn_icml.mas.check_program`: confine, run one program and its tests.

Run as a script (``python -I -S -B _code_check_child.py PARENT_PID MEMORY_BYTES CPU_SECONDS``),
so it imports only the standard library and its sibling ``_sandbox.py`` (the OS layer).
"""

import json
import os
import sys

# Standard-library modules a program may import: imported before the child is confined (an
# import afterwards needs a file, which the filter refuses). HumanEval's problems and
# canonical solutions use these.
PRELOADED_MODULES = (
    "bisect", "collections", "copy", "datetime", "decimal", "fractions", "functools",
    "hashlib", "heapq", "itertools", "json", "math", "operator", "random", "re", "statistics",
    "string", "typing",
)
# the longest failure message sent back (characters)
MAX_REASON_CHARS = 2_000


def _child_main(argv):
    """``_code_checks.py PARENT_PID MEMORY_BYTES CPU_SECONDS``: confine, run one job, report."""
    import importlib
    import io

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _sandbox  # the OS layer; a sibling module that imports only the standard library

    parent_pid, memory_bytes, cpu_seconds = (int(x) for x in argv[1:4])
    for module in PRELOADED_MODULES:
        importlib.import_module(module)
    sys.path.pop(0)
    _sandbox._confine(parent_pid, {"memory_bytes": memory_bytes, "cpu_seconds": cpu_seconds})

    def send(message):
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(1, data):]

    send({"type": "confined"})
    job = json.loads(sys.stdin.buffer.readline())
    sys.stdout = sys.stderr = io.StringIO()  # what the program prints stays here
    try:
        namespace = {"__name__": "__candidate__"}
        exec(compile(job["program"], "<program>", "exec"), namespace)  # noqa: S102
        exec(compile(job["test"], "<test>", "exec"), namespace)  # noqa: S102
        namespace["check"](namespace[job["entry_point"]])
        result = {"type": "result", "passed": True, "reason": "passed"}
    except BaseException as exc:  # noqa: BLE001 - every failure of the program is reported
        try:
            text = f"{type(exc).__name__}: {str(exc)[:MAX_REASON_CHARS // 2]}"
        except BaseException:  # noqa: BLE001 - a hostile __str__
            text = "an exception whose message cannot be printed"
        result = {"type": "result", "passed": False, "reason": text[:MAX_REASON_CHARS]}
    try:
        send(result)
    except BaseException:  # noqa: BLE001
        os._exit(3)
    while sys.stdin.buffer.read(1 << 16):  # wait to be killed with whatever the program started
        pass
    os._exit(0)


if __name__ == "__main__":
    _child_main(sys.argv)
