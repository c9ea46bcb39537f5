"""The program check as capabilities, a parent that untrusted text cannot stall, limits that
agree between the modes, and an in-process mode that cannot change this process.

One test per family of attacks (``test_family_*``), then the finer checks of each layer.
The families that would harm or hang the process that runs them (in-process persistence and
in-process failures) run in a fresh interpreter under a time limit.
"""

import decimal
import json
import os
import random
import subprocess
import sys
import textwrap
import time
import types
import warnings

import pytest

from sklearn_icml.mas import (
    AgentLLM,
    ArithmeticMockLLM,
    MASExecutor,
    MASProgram,
    UnsafeSandboxWarning,
    _confinement,
    _executor,
    _sandbox,
    default_mas_pool,
    extract_answer,
    extract_code,
    fallback_mas,
)
from sklearn_icml.mas._confinement import Limits, execute_in_child

HEAD = "class MAS:\n    def __init__(self, model_list):\n        self.llm = LLM(model_list)\n"
LINUX_SECCOMP = _confinement.platform_problem() is None
needs_seccomp = pytest.mark.skipif(not LINUX_SECCOMP, reason="seccomp: Linux x86-64/aarch64")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def body(lines, head=""):
    return head + HEAD + "    def forward(self, taskInfo):\n" + "".join(
        f"        {line}\n" for line in lines
    )


class Recorder:
    """An agent LLM that records what it is sent."""

    def __init__(self, reply="ANSWER: 3"):
        self.prompts, self.temperatures, self.reply = [], [], reply

    def __call__(self, prompt, temperature):
        self.prompts.append(prompt)
        self.temperatures.append(temperature)
        return self.reply


def run_fresh(script, timeout=60):
    """Run ``script`` in a fresh interpreter that imports the library under test; its
    stdout, or a note that it ran past ``timeout`` seconds."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(sys.modules["sklearn_icml"].__file__))]
        + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"ran past {timeout} s"
    return done.stdout + done.stderr


# ----------------------------------------------------------------------------------------
# 1. name binding without scope, and guards that trust a str subclass
# ----------------------------------------------------------------------------------------

ESCAPE = [
    "class S(str):",
    "    def startswith(self, prefix, *args):",
    "        return False",
    "g = getattr(extract_code, S('__globals__'))",
    "return str(g['importlib'].import_module('os').getcwd())",
]


def test_family_name_binding_and_str_subclasses():
    # binding getattr anywhere (here an unused local of another function) made the name pass
    code = body(ESCAPE, head="def unused():\n    getattr = None\n    return getattr\n\n")
    with pytest.raises(ValueError, match="'getattr'.*may not bind"):
        MASProgram("attack", code).validate()
    with pytest.raises(ValueError, match="'getattr'"):  # and without binding it
        MASProgram("attack", body(ESCAPE)).validate()

    class Sly(str):
        def startswith(self, *args):
            return False

    for name in ("__globals__", "gi_frame", "_private"):
        assert not _sandbox.attribute_allowed(Sly(name))
        assert not _sandbox._safe_hasattr(extract_code, Sly(name))


@pytest.mark.parametrize(
    "lines, head",
    [
        (["getattr = 1", "return 'x'"], ""),
        (["x = [open for open in range(3)]", "return 'x'"], ""),
        (["for vars in range(2):", "    pass", "return 'x'"], ""),
        (["try:", "    pass", "except ValueError as eval:", "    pass", "return 'x'"], ""),
        (["if (exec := 3):", "    pass", "return 'x'"], ""),
        (["f = lambda compile=1: compile", "return 'x'"], ""),
        (["def g(x, type=None):", "    return x", "return 'x'"], ""),
        (["def setattr():", "    return 1", "return 'x'"], ""),
        (["class globals:", "    pass", "return 'x'"], ""),
        (["return 'x'"], "import math as len\n"),
        (["return 'x'"], "from math import pi as LLM\n"),
        (["majority_vote = 1", "return 'x'"], ""),
        (["return 'x'"], "print = 1\n"),
        (["x = {k: 1 for k, help in [(1, 2)]}", "return 'x'"], ""),
        (["x = sum(1 for quit in [])", "return 'x'"], ""),
    ],
)
def test_no_builtin_or_namespace_name_is_bound_anywhere(lines, head):
    with pytest.raises(ValueError, match="may not bind"):
        MASProgram("p", body(lines, head=head)).validate()


# ----------------------------------------------------------------------------------------
# 2. process-wide registries and classes reachable through an allowed module
# ----------------------------------------------------------------------------------------

def assignable(cls):
    """Whether a program could change ``cls`` by assigning one of its attributes."""
    try:
        cls.probe_attribute = 1
    except TypeError:
        return False
    del cls.probe_attribute
    return True


def test_family_registries_are_not_reachable():
    for lines in (["import copy", "return str(copy.dispatch_table)"],
                  ["import copy", "return str(copy.deepcopy(taskInfo, {}))"],
                  ["import json", "json.JSONDecoder.decode = len", "return 'x'"],
                  ["import decimal", "decimal.getcontext().prec = 3", "return 'x'"],
                  ["import collections", "return str(collections.namedtuple)"]):
        with pytest.raises(ValueError, match="imports 'copy'|may not use"):
            MASProgram("attack", body(lines)).validate()
    # every member of every view is a function, a constant or a C type: no module, no
    # registry, no class whose attributes a program could assign
    for name in _sandbox.ALLOWED_MODULES:
        namespace = _sandbox.restricted_namespace(None)
        view = namespace["__builtins__"]["__import__"](name)
        members = vars(view)
        assert set(members) <= set(_sandbox.MODULE_MEMBERS[name])
        for key, value in members.items():
            assert not isinstance(value, (types.ModuleType, dict, list, set)), (name, key)
            if isinstance(value, type):
                assert not assignable(value), (name, key)
    builtins = _sandbox.restricted_namespace(None)["__builtins__"]
    assert not any(isinstance(v, type) and assignable(v) for v in builtins.values())


def test_views_are_fresh_and_random_is_the_runs_own():
    one = _sandbox.restricted_namespace(None)["__builtins__"]["__import__"]("random")
    two = _sandbox.restricted_namespace(None)["__builtins__"]["__import__"]("random")
    assert one is not two
    assert [one.random() for _ in range(3)] == [two.random() for _ in range(3)]
    state = random.getstate()
    one.seed(5)
    one.shuffle([1, 2, 3])
    assert random.getstate() == state


# ----------------------------------------------------------------------------------------
# 3. in-process persistence (in a fresh interpreter)
# ----------------------------------------------------------------------------------------

PERSISTENCE = """
import decimal, json, random, warnings
warnings.simplefilter("ignore")
from sklearn_icml.mas import ArithmeticMockLLM, MASExecutor, MASProgram, default_mas_pool
HEAD = ("import json\\nclass MAS:\\n    def __init__(self, model_list):\\n"
        "        self.llm = LLM(model_list)\\n")
patch = HEAD + (
    "    def forward(self, taskInfo):\\n"
    "        json.JSONDecoder.decode = lambda self, s: {'type': 'result', 'answer': 'forged'}\\n"
    "        return 'patched'\\n")
decode, state, context = json.JSONDecoder.decode, random.getstate(), decimal.getcontext()
prec = context.prec
inproc = MASExecutor(llm=ArithmeticMockLLM(random_state=0), sandbox="unsafe-inprocess")
try:
    inproc.execute(MASProgram("patch", patch), "Add 1 and 2.")
except ValueError:
    pass
for program in default_mas_pool():
    inproc.execute(program, "Compute 3 times 4 minus 5.")
answer = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=10).execute(
    default_mas_pool()[0], "Add 1 and 2.").answer
print("decoder", json.JSONDecoder.decode is decode)
print("random", random.getstate() == state)
print("decimal", decimal.getcontext() is context and context.prec == prec
      and not any(context.flags.values()))
print("answer", answer)
"""


def test_family_inprocess_persistence():
    out = run_fresh(PERSISTENCE)
    assert "decoder True" in out, out
    assert "random True" in out and "decimal True" in out, out
    if LINUX_SECCOMP:
        assert "answer ANSWER: 3" in out, out


def test_inprocess_runs_only_shipped_programs():
    from sklearn_icml.mas._program import is_shipped

    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), sandbox="unsafe-inprocess")
    own = MASProgram("own", body(["return self.llm.call_llm('[SOLVE]\\nTask: ' + taskInfo)"]))
    with pytest.raises(ValueError, match="runs only the programs the library ships"):
        executor.execute(own, "Add 1 and 2.")
    assert executor.n_runs_ == 0
    for n_sc, rounds in ((1, 1), (5, 3), (12, 40)):
        assert all(is_shipped(p.code) for p in default_mas_pool(n_sc, rounds))
    assert is_shipped(fallback_mas().code)
    cot = default_mas_pool()[0].code
    for changed in (cot + "\n", cot.replace("[SOLVE]", "[SOLVE] "), " " + cot, 3, None,
                    default_mas_pool(7)[1].code.replace("7", "07", 1)):
        assert not is_shipped(changed)


# ----------------------------------------------------------------------------------------
# 4. in-process failures (in a fresh interpreter)
# ----------------------------------------------------------------------------------------

FAILURES = """
import time, warnings
warnings.simplefilter("ignore")
from sklearn_icml.mas import ArithmeticMockLLM, MASExecutor, MASProgram
HEAD = "class MAS:\\n    def __init__(self, model_list):\\n        self.llm = LLM(model_list)\\n"
swallow = HEAD + (
    "    def forward(self, taskInfo):\\n"
    "        while True:\\n"
    "            try:\\n"
    "                try:\\n"
    "                    while True:\\n"
    "                        pass\\n"
    "                finally:\\n"
    "                    raise ValueError('swallowed')\\n"
    "            except ValueError:\\n"
    "                pass\\n")
chatty = HEAD + (
    "    def forward(self, taskInfo):\\n        print('LEAKED')\\n        return 'x'\\n")
for name, code in (("swallow", swallow), ("chatty", chatty)):
    executor = MASExecutor(llm=ArithmeticMockLLM(), sandbox="unsafe-inprocess", timeout=1.0)
    start = time.perf_counter()
    try:
        result = executor.execute(MASProgram(name, code), "Add 1 and 2.")
        outcome = "timed out" if result.timed_out else "answered"
    except ValueError:
        outcome = "refused"
    print(name, outcome, round(time.perf_counter() - start, 1))
"""


def test_family_inprocess_failures():
    out = run_fresh(FAILURES, timeout=40)
    assert "ran past" not in out, out
    assert "LEAKED" not in out, out
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    for name in ("swallow", "chatty"):
        outcome, seconds = lines[name].rsplit(" ", 1)
        assert outcome in ("refused", "timed out") and float(seconds) < 1.0 + 5.0, out


DEFAULT_LIMITS = Limits(64, 200_000, 100_000)


def _inprocess(lines, timeout=5.0, llm=None, limits=DEFAULT_LIMITS, head=""):
    """Run a checked program with the in-process runner (the executor lets only the shipped
    programs reach it): ``(answer, error, timed_out, limit_exceeded)``."""
    code = body(lines, head=head)
    compiled = compile(_sandbox.check_source(code), "<MAS test>", "exec")
    agent = AgentLLM(llm=llm or Recorder())
    return _executor._run_inprocess(compiled, "Add 1 and 2.", agent.call_llm, limits, timeout)


def test_inprocess_timeout_never_escapes_while_unwinding():
    """Frames that take long to unwind (a large structure to free) leave no _Timeout."""
    lines = ["xs = [[i] for i in range(300000)]", "while True:", "    pass"]
    for _ in range(3):
        start = time.perf_counter()
        answer, error, timed_out, limited = _inprocess(lines, timeout=0.2)
        assert (answer, timed_out, limited) == (None, True, False) and "timeout" in error
        assert time.perf_counter() - start < 0.2 + 3.0


def test_inprocess_timeout_passes_except_exception():
    lines = ["while True:", "    try:", "        while True:", "            pass",
             "    except Exception:", "        pass"]
    assert _inprocess(lines, timeout=0.2)[2]


def test_inprocess_recursion_print_random_and_decimal_stay_inside(capfd):
    limit, state, context = sys.getrecursionlimit(), random.getstate(), decimal.getcontext()
    sys.setrecursionlimit(100_000)  # a caller that raised the limit
    try:
        answer, error, _, _ = _inprocess(["def down(n):", "    return down(n + 1)",
                                          "return str(down(0))"])
        assert answer is None and error.startswith("RecursionError")
        assert sys.getrecursionlimit() == 100_000
    finally:
        sys.setrecursionlimit(limit)
    answer, error, _, _ = _inprocess(
        ["print('LEAKED')", "random.seed(1)", "x = random.random()",
         "d = decimal.Decimal(1) / decimal.Decimal(3)", "return str(d)[:4]"],
        head="import random\nimport decimal\n",
    )
    assert (answer, error) == ("0.33", None)
    assert "LEAKED" not in capfd.readouterr().out
    assert random.getstate() == state
    assert decimal.getcontext() is context and not any(context.flags.values())


# ----------------------------------------------------------------------------------------
# 5. parent CPU that no timeout bounds: linear scans of untrusted text
# ----------------------------------------------------------------------------------------


def _seconds(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def test_family_untrusted_text_is_scanned_in_linear_time():
    mock = ArithmeticMockLLM(random_state=0)
    verify = "[VERIFY]\nTask: Add 1 and 2.\n" + "Proposed answer:" * 5000
    assert _seconds(lambda: mock(verify, 0.5)) < 1.0
    agent = AgentLLM(llm=lambda prompt, t: "<think>" * 12000)
    assert _seconds(lambda: agent.call_llm("q")) < 1.0
    assert _seconds(lambda: extract_code("```" + " " * 30000)) < 1.0
    for text in ("ANSWER:" + " " * 200_000, "ANSWER:\n" * 25_000, "```\n" * 50_000,
                 "Proposed answer: ANSWER:" * 8000):
        assert _seconds(lambda t=text: (extract_answer(t), extract_code(t))) < 1.0


@pytest.mark.parametrize("seed", range(4))
def test_linear_scans_match_the_regular_expressions(seed):
    import re

    from sklearn_icml.mas import _llm

    fence = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)```", re.DOTALL)
    answer = re.compile(r"ANSWER:\s*(.+)")
    think = re.compile(r"<think>.*?</think>", re.DOTALL)
    proposed = re.compile(r"Proposed answer:.*?ANSWER:\s*(-?\d+)")
    pieces = ["```", "`", " ", "\t", "\n", "python", "py", "Python", "x", "ANSWER:", "-", "1",
              "<think>", "</think>", "Proposed answer:", "\r", "\u0663"]
    rng = random.Random(seed)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        blocks = fence.findall(text)
        assert extract_code(text) == (blocks[-1].strip("\n") if blocks else None), text
        found = answer.findall(text)
        assert extract_answer(text) == (found[-1].strip() if found else None), text
        assert _llm._strip_think(text) == think.sub("", text), text
        match = proposed.search(text)
        got = _llm._find_proposed(text, 0)
        assert got == (match and (match.start(), match.end(), match.group(1))), text
        assert _llm._remove_proposed(text) == proposed.sub("", text), text


# ----------------------------------------------------------------------------------------
# 6. limits that disagree, temperatures, answers, a child that closed its output
# ----------------------------------------------------------------------------------------

ASTRAL = "\U0001F600"


@needs_seccomp
def test_family_limits_temperatures_answers_agree():
    # 150 008 astral characters: within max_prompt_chars, accepted in process mode too
    llm = Recorder()
    executor = MASExecutor(llm=llm, timeout=10.0)
    code = body(["return self.llm.call_llm(taskInfo * 150008)"])
    result = executor.execute(MASProgram("astral", code), ASTRAL)
    assert result.error is None and result.answer == "ANSWER: 3", result.error
    assert len(llm.prompts[0]) == 150008
    # temperatures: finite and >= 0, real, not bool
    agent = AgentLLM(llm=Recorder())
    for bad in (float("nan"), -5, float("inf"), True, 10**400):
        with pytest.raises((ValueError, TypeError), match="temperature"):
            agent.call_llm("q", bad)
    # answers: valid and printable by the documented rule
    dirty = AgentLLM(llm=lambda p, t: "a\ud800b\x00c\x1b[31md\u202ee\x9b\tf\n")
    clean = dirty.call_llm("q")
    assert clean == "abc[31mde\tf" and clean.encode("utf-8")
    # a child that closed its stdout while alive
    run = execute_in_child(
        body(["import os", "os.close(1)", "while True:", "    pass"]), "q", AgentLLM(llm=llm),
        timeout=2.0, memory_limit=256 * 2**20, limits=Limits(64, 200_000, 100_000),
        check=False,
    )
    assert "closed its output while still running" in run.error, run.error


LIMIT_PROGRAMS = {
    "answer_15MiB": ["return 'x' * (15 * 2 ** 20)"],
    "prompts_8MiB": ["for _ in range(10):", "    self.llm.call_llm('x' * (8 * 2 ** 20))",
                     "return 'x'"],
    "prompt_astral": ["return self.llm.call_llm('\U0001F600' * 1001)"],
    "calls_100": ["for _ in range(100):", "    self.llm.call_llm('[SOLVE]\\nTask: ' + taskInfo)",
                  "return 'x'"],
    "temperature_nan": ["return self.llm.call_llm('x', float('nan'))"],
    "answer_within": ["return '\U0001F600' * 1000"],
}


@needs_seccomp
@pytest.mark.parametrize("name", sorted(LIMIT_PROGRAMS))
def test_limits_are_checked_the_same_way_in_both_modes(name):
    limits = Limits(8, 1000, 1000)
    code = body(LIMIT_PROGRAMS[name])
    process_llm, inprocess_llm = Recorder(), Recorder()
    child = execute_in_child(code, "Add 1 and 2.", AgentLLM(llm=process_llm), timeout=5.0,
                             memory_limit=512 * 2**20, limits=limits)
    here = _inprocess(LIMIT_PROGRAMS[name], llm=inprocess_llm, limits=limits)
    assert (child.answer, child.error, child.timed_out, child.limit_exceeded) == here
    assert process_llm.prompts == inprocess_llm.prompts
    assert all(len(p) <= 1000 for p in process_llm.prompts)
    if name != "answer_within":
        assert here[0] is None and here[1]


@needs_seccomp
def test_a_hostile_child_is_still_bounded_by_the_parent():
    """The child's own limit checks are a courtesy: with the program check off, a child
    that sends too much is stopped by the parent's bounds."""
    llm = Recorder()
    limits = Limits(8, 1000, 1000)
    for lines, match in (
        (["import json, os", "m = json.dumps({'type': 'llm', 'prompt': 'x' * 5000})",
          "os.write(1, (m + '\\n').encode())", "while True:", "    pass"], "prompt of 5000"),
        (["import os", "os.write(1, b'x' * (12 * 1000 + 5000))", "while True:", "    pass"],
         "message of more than"),
        (["import os", "os.write(1, b'{\"type\": \"limit\", \"error\": \"\\\\u001b[2J\"}\\n')",
          "while True:", "    pass"], "reported by the sandbox process"),
    ):
        run = execute_in_child(body(lines), "q", AgentLLM(llm=llm), timeout=2.0,
                               memory_limit=256 * 2**20, limits=limits, check=False)
        assert run.limit_exceeded and match in run.error, run.error
    assert llm.prompts == []


def test_final_answers_are_cleaned_in_both_modes():
    def noisy(prompt, temperature):
        return "ANSWER: 3"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsafeSandboxWarning)
        result = MASExecutor(llm=noisy, sandbox="unsafe-inprocess").execute(
            default_mas_pool()[0], "Add 1 and 2.")
    assert result.answer == "ANSWER: 3"
    assert _sandbox.clean_text("x\x07\x1b]0;t\x07\ud83d\u2066y") == "x]0;ty"
    assert json.dumps(_sandbox.clean_text("\x00")) == '""'
