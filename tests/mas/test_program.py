"""MASProgram validation, code extraction, the pool and its closed forms."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_arithmetic_queries
from sklearn_icml.mas import (
    ArithmeticMockLLM,
    MASExecutor,
    MASProgram,
    default_answer_checker,
    default_mas_pool,
    extract_code,
    fallback_mas,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_icml.mas.UnsafeSandboxWarning")

HEAD = "class MAS:\n    def __init__(self, model_list):\n        self.llm = LLM(model_list)\n"
COT = HEAD + (
    "    def forward(self, taskInfo):\n"
    "        return self.llm.call_llm('[SOLVE]\\nTask: ' + taskInfo)\n"
)


def test_valid_program_passes():
    MASProgram("cot", COT).validate()
    MASProgram("consts", '"""doc"""\nimport math\nN = 3\nNAMES = ("a", "b")\n' + COT).validate()
    for program in default_mas_pool() + [fallback_mas()]:
        program.validate()


@pytest.mark.parametrize(
    "code, match",
    [
        ("def forward(self, taskInfo):\n    return 1\n", "does not define class MAS"),
        (HEAD, "has no method 'forward'"),
        ("class MAS:\n    def forward(self, taskInfo):\n        return 1\n",
         "has no method '__init__'"),
        (HEAD + "    def forward(self):\n        return 1\n", "must take"),
        ("import os\n" + COT, "imports 'os'"),
        ("import subprocess\n" + COT, "imports 'subprocess'"),
        ("import socket\n" + COT, "imports 'socket'"),
        ("from os import path\n" + COT, "imports from 'os'"),
        ("from math import *\n" + COT, "import public names"),
        ("from . import x\n" + COT, "imports from None"),
        ("print('hi')\n" + COT, "top-level Expr"),
        (COT + "MAS([]).forward('x')\n", "top-level Expr"),
        ("X = len('abc')\n" + COT, "top-level Assign"),
        ("if True:\n    pass\n" + COT, "top-level If"),
        ("class MAS(:\n", "not valid Python"),
        (COT.replace("return", "return open('/etc/passwd').read() or"), "'open'"),
        (COT.replace("return", "__import__('os')\n        return"), "'__import__'"),
        (COT.replace("return", "eval('1')\n        return"), "'eval'"),
        (COT.replace("return", "getattr(self, 'x')\n        return"), "'getattr'"),
        (COT.replace("return", "x = ().__class__.__base__\n        return"),
         "uses the attribute '__"),
        (COT.replace("return", "x = self.llm.__dict__\n        return"), "'__dict__'"),
        ("import random\n" + COT.replace("return", "x = random._os\n        return"),
         "attribute '_os'"),
        (COT.replace("return", "global G\n        return"), "Global"),
        (COT.replace("return", "try:\n            pass\n        except:\n            pass\n"
                     "        return"), "catches every exception"),
        (COT.replace("return", "try:\n            pass\n        except (ValueError, "
                     "BaseException):\n            pass\n        return"),
         "catches every exception"),
    ],
)
def test_validation_rejects(code, match):
    with pytest.raises(ValueError, match=match):
        MASProgram("p", code).validate()


def test_validation_bad_name_and_type():
    with pytest.raises(ValueError, match="non-empty str"):
        MASProgram("", COT).validate()
    with pytest.raises(TypeError, match="must be a str"):
        MASProgram("p", b"class MAS: pass").validate()


def test_extract_code_takes_last_block():
    reply = (
        "Rationale.\n```python\nfirst = 1\n```\nBetter:\n```python\nsecond = 2\n```\nDone."
    )
    assert extract_code(reply) == "second = 2"
    assert extract_code("```\nplain = 3\n```") == "plain = 3"
    assert extract_code("no code here") is None
    assert extract_code("") is None


def test_answer_checker():
    assert default_answer_checker("ANSWER: 1\nthen ANSWER:  -7 ", -7)
    assert not default_answer_checker("ANSWER: 7", -7)
    assert not default_answer_checker("seven", 7)
    assert not default_answer_checker(None, 7)


def test_default_pool_shape_and_bad_args():
    pool = default_mas_pool(n_sc=3, refine_rounds=2, debate=False)
    assert [p.name for p in pool] == ["cot", "self_consistency", "self_refine"]
    with pytest.raises(ValueError, match="'n_sc' parameter"):
        default_mas_pool(n_sc=0)
    with pytest.raises(TypeError, match="'refine_rounds' parameter"):
        default_mas_pool(refine_rounds=1.5)


def _binom_sc(p):
    from scipy.stats import binom

    return 1 - binom.cdf(1, 5, p) + binom.pmf(1, 5, p) / 5


@pytest.mark.slow
def test_pool_matches_closed_forms():
    """accuracy within 3 standard errors of the closed forms; calls exactly."""
    n = 3000
    queries, answers, families = make_arithmetic_queries(n, random_state=0)
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), sandbox="unsafe-inprocess")
    pool = {p.name: p for p in default_mas_pool(debate=False)}
    p = {"add": 1.0, "mixed": 0.6, "solve": 0.4}
    expected = {
        "cot": lambda f: p[f],
        "self_consistency": lambda f: _binom_sc(p[f]),
        "self_refine": lambda f: 1 - (1 - p[f]) ** 3 if f == "solve" else p[f],
    }
    for name, program in pool.items():
        for family in ("add", "mixed", "solve"):
            idx = np.flatnonzero(families == family)
            if family == "add" and name != "cot":
                idx = idx[:300]  # p = 1: every run is right, nothing to estimate
            results = [executor.execute(program, queries[i]) for i in idx]
            acc = np.mean(
                [default_answer_checker(r.answer, answers[i]) for r, i in zip(results, idx)]
            )
            calls = np.array([r.n_calls for r in results])
            target = expected[name](family)
            se = np.sqrt(max(target * (1 - target), 1e-12) / len(idx))
            assert abs(acc - target) <= 3 * se + 1e-12, (name, family, acc, target)
            if name == "cot":
                assert np.all(calls == 1)
            elif name == "self_consistency":
                assert np.all(calls == 6)
            else:
                assert np.all(np.isin(calls, [2, 4, 6]))
                if family == "solve":
                    e_calls = 2 * (1 + (1 - p[family]) + (1 - p[family]) ** 2)
                    sd = calls.std() / np.sqrt(len(calls))
                    assert abs(calls.mean() - e_calls) <= 3 * sd
                else:  # the verifier always says CORRECT: one attempt
                    assert np.all(calls == 2)
