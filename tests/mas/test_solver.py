"""ConsistentPairBuilder and MASGPTSolver: selection, ties, seeds, calls, fallback, bad input."""

from collections import Counter

import numpy as np
import pytest

from sklearn_icml.datasets import make_arithmetic_queries
from sklearn_icml.mas import (
    ArithmeticMockLLM,
    ConsistentPairBuilder,
    MASExecutor,
    MASGPTSolver,
    MASProgram,
    default_answer_checker,
    default_mas_pool,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_icml.mas.UnsafeSandboxWarning")

POOL = default_mas_pool(debate=False)
HEAD = "class MAS:\n    def __init__(self, model_list):\n        self.llm = LLM(model_list)\n"


def _family_map(builder, families):
    """group_best_mas_ by family: each k-means group is named by its majority family."""
    out = {}
    for group, m in builder.group_best_mas_.items():
        members = families[builder.group_labels_ == group]
        family, count = Counter(members).most_common(1)[0]
        assert count == len(members), "k-means mixed two families"
        out[family] = builder.pool_[m].name
    return out


@pytest.fixture(scope="module")
def e1_builder():
    """The E1 training data: 500 queries per family, seed 0, 3 groups."""
    queries, answers, families = make_arithmetic_queries(500, random_state=0)
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), sandbox="unsafe-inprocess")
    builder = ConsistentPairBuilder(pool=POOL, executor=executor, n_groups=3, random_state=0)
    return builder.fit(queries, answers), families


@pytest.mark.slow
def test_group_level_selection_on_e1_data(e1_builder):
    """groups pick cot/self_consistency/self_refine; per-query labels of mixed
    queries are mostly cot."""
    builder, families = e1_builder
    assert _family_map(builder, families) == {
        "add": "cot", "mixed": "self_consistency", "solve": "self_refine"
    }
    names = np.array([p.name for p in POOL])
    mixed_labels = Counter(names[builder.query_best_mas_[families == "mixed"]])
    assert mixed_labels.most_common(1)[0][0] == "cot"
    # every pair uses its group's MAS and only queries that MAS solved
    assert len(builder.pairs_) == len(builder.pair_programs_)
    for (_, m, rationale), program in zip(builder.pairs_, builder.pair_programs_):
        assert program is builder.pool_[m] and program.name in rationale
    kept = sum(builder.score_matrix_[i, builder.group_best_mas_[g]] > 0
               for i, g in enumerate(builder.group_labels_))
    assert len(builder.pairs_) == kept
    assert builder.score_matrix_.shape == builder.calls_matrix_.shape == (1500, 3)
    assert np.allclose(builder.mean_calls_[:2], [1, 6])


def test_tie_break_by_cost():
    """all MAS score 1.0 -> the cheapest wins, whatever its pool position."""
    queries, answers, families = make_arithmetic_queries(8, random_state=0)
    add = families == "add"
    pool = [POOL[1], POOL[2], POOL[0]]  # self_consistency, self_refine, cot
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), sandbox="unsafe-inprocess")
    builder = ConsistentPairBuilder(pool=pool, executor=executor, n_groups=1).fit(
        [q for q, a in zip(queries, add) if a], answers[add]
    )
    assert np.all(builder.score_matrix_ == 1.0)
    assert builder.pool_[builder.group_best_mas_[0]].name == "cot"
    assert np.all(builder.query_best_mas_ == 2)
    # equal scores and equal costs: pool order decides
    twin = MASProgram("cot_twin", POOL[0].code)
    builder.set_params(pool=[POOL[0], twin]).fit([queries[0]], [answers[0]])
    assert builder.group_best_mas_ == {0: 0}


def test_timed_out_or_crashed_runs_never_count_as_correct():
    slow = MASProgram("slow", HEAD + (
        "    def forward(self, taskInfo):\n        while True:\n            pass\n"))
    crash = MASProgram("crash", HEAD + (
        "    def forward(self, taskInfo):\n"
        "        answer = self.llm.call_llm('[SOLVE]\\nTask: ' + taskInfo)\n"
        "        raise ValueError(answer)\n"))
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=0.5)
    result = executor.execute(slow, "Add 1 and 2.")
    assert result.used_fallback and default_answer_checker(result.answer, 3)  # fallback right
    builder = ConsistentPairBuilder(pool=[slow, crash, POOL[0]], executor=executor, n_groups=1)
    builder.fit(["Add 1 and 2."], [3])
    assert builder.score_matrix_.tolist() == [[0.0, 0.0, 1.0]]


def test_known_groups_and_repeats():
    queries, answers, families = make_arithmetic_queries(6, random_state=0)
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), sandbox="unsafe-inprocess")
    builder = ConsistentPairBuilder(pool=POOL, executor=executor, repeats=2)
    builder.fit(queries, answers, groups=families)
    assert set(builder.group_best_mas_) == {"add", "mixed", "solve"}
    assert set(np.unique(builder.score_matrix_ * 2)) <= {0.0, 1.0, 2.0}
    assert np.all(builder.calls_matrix_[:, 1] == 6)


def _solver(seed=0, **kwargs):
    params = dict(llm=ArithmeticMockLLM(random_state=seed), pool=POOL, n_groups=3,
                  sandbox="unsafe-inprocess", random_state=0)
    params.update(kwargs)
    return MASGPTSolver(**params)


@pytest.fixture(scope="module")
def small_data():
    return make_arithmetic_queries(40, random_state=0), make_arithmetic_queries(20, random_state=1)


def test_determinism(small_data):
    """same seeds -> identical scores, routes and answers."""
    (q_tr, a_tr, _), (q_te, _, _) = small_data
    runs = []
    for _ in range(2):
        solver = _solver().fit(q_tr, a_tr)
        answers = solver.predict(q_te)
        runs.append((solver.builder_.score_matrix_, [p.name for p in solver.last_programs_],
                     answers, solver.last_calls_))
    assert np.array_equal(runs[0][0], runs[1][0])
    assert runs[0][1:3] == runs[1][1:3] and np.array_equal(runs[0][3], runs[1][3])


def test_call_accounting(small_data):
    """last_calls_ sums to the mock's own counter."""
    (q_tr, a_tr, _), (q_te, a_te, f_te) = small_data
    solver = _solver().fit(q_tr, a_tr)
    assert solver.train_calls_ == solver.llm.n_calls_
    before = solver.llm.n_calls_
    solver.predict(q_te)
    assert solver.last_calls_.sum() == solver.llm.n_calls_ - before
    assert solver.last_calls_.shape == (len(q_te),)
    routes = Counter(zip(f_te, (p.name for p in solver.last_programs_)))
    assert routes == {("add", "cot"): 20, ("mixed", "self_consistency"): 20,
                      ("solve", "self_refine"): 20}


def test_consistency_beats_per_query_labels(small_data):
    """E1 vs E2 in small: per-query labels send mixed queries to one CoT call."""
    (q_tr, a_tr, _), _ = small_data
    q_te, a_te, f_te = make_arithmetic_queries(60, random_state=1)
    with_c = _solver().fit(q_tr, a_tr)
    without = _solver(consistency=False).fit(q_tr, a_tr)
    mixed = [q for q, f in zip(q_te, f_te) if f == "mixed"]
    without.predict(mixed)
    assert Counter(p.name for p in without.last_programs_).most_common(1)[0][0] == "cot"
    assert with_c.score(q_te, a_te) > without.score(q_te, a_te)


class NoCodeGenerator:
    def __call__(self, prompt, temperature):
        return "I think several agents should vote, but I will not write code."


def test_generator_without_code_uses_fallback(small_data):
    """E3: the fallback self-consistency answers every query; the raw text is kept."""
    (q_tr, a_tr, _), _ = small_data
    q_te, a_te, f_te = make_arithmetic_queries(100, random_state=2)
    mixed = [i for i, f in enumerate(f_te) if f == "mixed"]
    solver = _solver(generator_llm=NoCodeGenerator()).fit(q_tr, a_tr)
    accuracy = solver.score([q_te[i] for i in mixed], a_te[mixed])
    assert all(r.used_fallback for r in solver.last_results_)
    assert all(p.name == "fallback" for p in solver.last_programs_)
    assert all(raw.startswith("I think several agents") for raw in solver.last_raw_generations_)
    assert np.all(solver.last_calls_ == 6)
    # closed form 0.92832, 3 standard errors of 100 queries
    assert abs(accuracy - 0.92832) <= 3 * np.sqrt(0.92832 * 0.07168 / 100)


def test_looping_generated_code_times_out_to_fallback_in_a_process(small_data):
    (q_tr, a_tr, _), _ = small_data
    loop = HEAD + "    def forward(self, taskInfo):\n        while True:\n            pass\n"

    def generator(prompt, temperature):
        return f"A loop.\n```python\n{loop}```"

    solver = _solver(generator_llm=generator).fit(q_tr, a_tr)  # fast in-process fit
    solver.executor_.timeout, solver.executor_.sandbox = 1.0, "process"  # sandboxed predict
    answers = solver.predict(["Add 20 and 22."])
    result = solver.last_results_[0]
    assert result.timed_out and result.used_fallback and answers == ["ANSWER: 42"]
    assert result.seconds < 1.0 + 5.0 + 2.0


@pytest.mark.parametrize(
    "kwargs, fit_args, match",
    [
        ({}, (["Add 1 and 2.", "Add 3 and 4."], [3]), "same length"),
        ({}, ([], []), "is empty"),
        ({}, ([1, 2, 3], [1, 2, 3]), "TypeError: must hold str only"),
        ({"n_groups": 5}, (["Add 1 and 2.", "Add 3 and 4."], [3, 7]), "n_groups must be <="),
        ({"repeats": 0}, (["Add 1 and 2."], [3]), "repeats"),
        ({"timeout": 0}, (["Add 1 and 2."], [3]), "timeout"),
        ({"llm": "gpt-4o"}, (["Add 1 and 2."], [3]), "llm"),
        ({"llm": None}, (["Add 1 and 2."], [3]), "llm must be a callable"),
        ({"pool": [POOL[0], POOL[0]]}, (["Add 1 and 2."], [3]), "duplicates \\['cot'\\]"),
        ({"pool": [MASProgram("bad", "import os\n" + POOL[0].code)]}, (["Add 1 and 2."], [3]),
         "imports 'os'"),
        ({"pool": ["cot"]}, (["Add 1 and 2."], [3]), "TypeError: must hold MASProgram"),
        ({"sandbox": "none"}, (["Add 1 and 2."], [3]), "sandbox"),
    ],
)
def test_solver_bad_input(kwargs, fit_args, match):
    params = dict(n_groups=1)
    params.update(kwargs)
    # a wrong type raises TypeError, a wrong value ValueError
    error = TypeError if match.startswith("TypeError: ") else ValueError
    match = match.removeprefix("TypeError: ")
    with pytest.raises(error, match=match):
        _solver(**params).fit(*fit_args)


def test_builder_bad_input():
    executor = MASExecutor(llm=ArithmeticMockLLM(), sandbox="unsafe-inprocess")
    with pytest.raises(ValueError, match="executor is None"):
        ConsistentPairBuilder(n_groups=1).fit(["Add 1 and 2."], [3])
    with pytest.raises(ValueError, match="groups must have shape"):
        ConsistentPairBuilder(executor=executor).fit(["Add 1 and 2."], [3], groups=[0, 1])
    with pytest.raises(ValueError, match="n_groups must be <= the number of queries"):
        ConsistentPairBuilder(executor=executor, n_groups=2).fit(["Add 1 and 2."], [3])


def test_no_solvable_query_is_an_error():
    never = ArithmeticMockLLM(p_correct={"add": 0.0, "mixed": 0.0, "solve": 0.0})
    with pytest.raises(ValueError, match="no MAS of the pool solved any training query"):
        MASGPTSolver(llm=never, pool=POOL, n_groups=1, sandbox="unsafe-inprocess").fit(
            ["Add 1 and 2."], [3]
        )


def test_refine_llm_keeps_only_correct_refinements():
    good = POOL[0].code.replace("Think step by step", "Add carefully")
    broken = HEAD + "    def forward(self, taskInfo):\n        return 'ANSWER: -1'\n"
    replies = iter([f"Why: adding is easy.\n```python\n{good}```", f"```python\n{broken}```",
                    "no code at all"])

    def refine_llm(prompt, temperature):
        assert "Current MAS (cot)" in prompt
        return next(replies)

    # refined programs are generated code: they run in the child process
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=10.0)
    builder = ConsistentPairBuilder(pool=POOL[:1], executor=executor, n_groups=1,
                                    refine_llm=refine_llm)
    builder.fit(["Add 1 and 2.", "Add 3 and 4.", "Add 5 and 6."], [3, 7, 11])
    assert builder.n_refined_ == 1
    assert builder.pair_programs_[0].name == "cot+refined"
    assert builder.pairs_[0][2] == "Why: adding is easy."
    assert [p.name for p in builder.pair_programs_[1:]] == ["cot", "cot"]


@pytest.mark.parametrize("cls", [ConsistentPairBuilder, MASGPTSolver])
def test_groups_by_position_warns_and_gives_the_same_pairs(cls):
    """``groups`` is keyword-only; by position it still works, with a FutureWarning."""
    queries, answers = ["Add 1 and 2.", "Add 3 and 4.", "Add 5 and 6."], [3, 7, 11]
    if cls is ConsistentPairBuilder:
        def make():
            executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0),
                                   sandbox="unsafe-inprocess")
            return cls(pool=POOL[:2], executor=executor, random_state=0)
    else:
        def make():
            return cls(llm=ArithmeticMockLLM(random_state=0), pool=POOL[:2],
                       sandbox="unsafe-inprocess", random_state=0)
    expected = make().fit(queries, answers, groups=[0, 0, 1])
    with pytest.warns(FutureWarning, match=r"pass groups as keyword arguments \(groups="):
        model = make().fit(queries, answers, [0, 0, 1])
    pairs = model.pairs_ if cls is ConsistentPairBuilder else model.builder_.pairs_
    expected = expected if cls is ConsistentPairBuilder else expected.builder_
    assert pairs == expected.pairs_
