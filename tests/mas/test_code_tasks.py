"""The code-task designs and the HumanEval harness: replies to programs, programs to tests."""

import pytest

from sklearn_icml.mas import (
    MASExecutor,
    MASGPTRouter,
    check_code_answer,
    check_program,
    code_mas_pool,
    completion_program,
)

PROMPT = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum of xs."""\n'
TASK = {"prompt": PROMPT, "entry_point": "total",
        "test": "def check(f):\n    assert f([1, 2]) == 3\n    assert f([]) == 0\n"}


def _scripted(replies):
    """An agent LLM that answers from a list, recording (prompt, temperature)."""
    seen = []

    def llm(prompt, temperature):
        seen.append((prompt, temperature))
        return replies[min(len(seen) - 1, len(replies) - 1)]

    return llm, seen


def _run(name, replies, **pool_params):
    llm, seen = _scripted(replies)
    program = {p.name: p for p in code_mas_pool(**pool_params)}[name]
    result = MASExecutor(llm=llm, timeout=30.0).execute(program, PROMPT)
    assert result.error is None
    return result, seen


def test_pool_is_valid_and_agents_never_see_the_tests():
    pool = code_mas_pool(n_samples=4, check_rounds=2)
    assert [p.name for p in pool] == ["code_single", "code_cot", "code_self_check",
                                      "code_vote"]
    for program in pool:
        program.validate()
    good = "```python\ndef total(xs):\n    return sum(xs)\n```"
    for program in pool:
        llm, seen = _scripted([good])
        result = MASExecutor(llm=llm, timeout=30.0).execute(program, PROMPT)
        assert check_code_answer(result.answer, TASK), program.name
        assert all("assert" not in prompt and PROMPT in prompt for prompt, _ in seen)
    with pytest.raises(ValueError, match="n_samples"):
        code_mas_pool(n_samples=0)


def test_single_and_cot_are_one_greedy_call():
    for name in ("code_single", "code_cot"):
        result, seen = _run(name, ["```python\ndef total(xs):\n    return 0\n```"])
        assert result.n_calls == 1 and seen[0][1] == 0.0


def test_self_check_keeps_a_correct_draft_and_takes_a_correction():
    draft = "```python\ndef total(xs):\n    return 0\n```"
    fixed = "Wrong for [1, 2].\n```python\ndef total(xs):\n    return sum(xs)\n```"
    result, seen = _run("code_self_check", [draft, "VERDICT: CORRECT"])
    assert result.answer == draft and result.n_calls == 2
    assert "return 0" in seen[1][0]  # the reviewer reads the draft
    result, _ = _run("code_self_check", [draft, fixed])
    assert result.answer == fixed and check_code_answer(result.answer, TASK)
    result, _ = _run("code_self_check", [draft, fixed, fixed], check_rounds=2)
    assert result.n_calls == 3


def test_vote_takes_the_majority_of_normalised_code_or_asks_a_judge():
    a = "```python\ndef total(xs):\n    return sum(xs)  # sum\n```"
    a_spaced = "Here:\n```python\ndef total(xs):\n\n    return  sum(xs)\n```"
    b = "```python\ndef total(xs):\n    return 0\n```"
    result, seen = _run("code_vote", [b, a, a_spaced])
    assert result.answer == a and result.n_calls == 3
    assert [t for _, t in seen] == [0.0, 0.8, 0.8]
    c = "```python\ndef total(xs):\n    return 1\n```"
    result, seen = _run("code_vote", [b, a, c, "Solution 2 is right. ANSWER: 2"])
    assert result.answer == a and result.n_calls == 4
    assert "Solution 3:" in seen[3][0]
    result, _ = _run("code_vote", [b, a, c, "no idea"])
    assert result.answer == b  # a judge without a number: the first candidate


@pytest.mark.parametrize(
    ("answer", "passes"),
    [
        ("```python\ndef total(xs):\n    return sum(xs)\n```\nIt sums.", True),
        ("Explanation ```inline``` and\n```python\ndef total(xs: List[int]) -> int:\n"
         "    return sum(xs)\n```", True),  # the prompt's import stays
        ("```python\ndef total(xs):\n    return sum(xs)\n", True),  # cut before the fence
        ("    return sum(xs)\n", True),  # a bare body completes the prompt
        ("```python\ndef helper(xs):\n    return sum(xs)\n```", False),
        (None, False),
    ],
)
def test_completion_program(answer, passes):
    program = completion_program(PROMPT, answer, entry_point="total")
    assert program.startswith(PROMPT.rstrip("\n"))
    assert check_code_answer(answer, TASK) is passes


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("```python\ndef total(xs:\n    return 1\n```", "SyntaxError"),
        ("```python\ndef total(xs):\n    while True:\n        pass\n```", "timeout after 1.0 s"),
        ("```python\ndef total(xs):\n    while True:\n        print('x' * 9999)\n```",
         ("limit", "sandbox process ended", "timeout")),
        ("```python\ndef total(xs):\n    return len(' ' * 2**33)\n```", "MemoryError"),
    ],
)
def test_bad_generated_code_fails_with_a_reason(answer, reason):
    program = completion_program(PROMPT, answer, entry_point="total")
    check = check_program(program, TASK["test"], entry_point="total", timeout=1.0)
    assert not check.passed and check.reason.startswith(reason), check.reason
    assert check.seconds < 15


def test_check_code_answer_needs_a_task():
    with pytest.raises(TypeError, match="task must be a mapping with keys"):
        check_code_answer("x", "HumanEval/0")


def test_router_falls_back_to_the_given_program():
    pool = code_mas_pool()
    cot = pool[1]
    router = MASGPTRouter(pool=pool, llm_backend=lambda p, t: "no code here", fallback=cot)
    router.fit([PROMPT, "def other():\n    pass\n"], ["code_single", "code_vote"])
    assert router.generate(PROMPT) is cot
    default = MASGPTRouter(pool=pool, llm_backend=lambda p, t: "no code").fit(
        [PROMPT], ["code_single"])
    assert default.generate(PROMPT).name == "fallback"


def test_pool_evaluation_in_threads_gives_the_same_pairs():
    from sklearn_icml.mas import ConsistentPairBuilder, MASGPTSolver

    def llm(prompt, temperature):  # a reply fixed by the prompt: order does not matter
        return "```python\ndef total(xs):\n    return sum(xs)\n```" if "Sum" in prompt else "?"

    pool = code_mas_pool()[:2]
    queries = [PROMPT, PROMPT.replace("Sum", "Total"), PROMPT + "\n"]
    tasks = [TASK, TASK, TASK]
    fits = [
        ConsistentPairBuilder(pool=pool, executor=MASExecutor(llm=llm, timeout=30.0),
                              answer_checker=check_code_answer, n_jobs=n_jobs,
                              ).fit(queries, tasks, groups=[0, 1, 0])
        for n_jobs in (None, 3)
    ]
    assert fits[0].score_matrix_.tolist() == fits[1].score_matrix_.tolist() == [
        [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    assert fits[0].pairs_ == fits[1].pairs_
    solver = MASGPTSolver(llm=llm, pool=pool, n_groups=1, answer_checker=check_code_answer,
                          timeout=30.0, n_jobs=2).fit(queries, tasks)
    assert solver.predict(queries)[0].startswith("```python")
    assert solver.score(queries, tasks) == 2 / 3
