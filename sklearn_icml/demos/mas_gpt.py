"""Demo: MAS-GPT routes arithmetic queries to multi-agent systems and runs them sandboxed."""

from . import register_demo


@register_demo(
    "MASGPTSolver",
    what="query -> MAS router fitted on consistent pairs (mock agent LLM, 60 queries per "
    "family) vs always-self-consistency; one sandboxed run, one refused program",
    budget_s=20,
)
def demo():
    import warnings

    import numpy as np

    from sklearn_icml.datasets import make_arithmetic_queries
    from sklearn_icml.mas import (
        ArithmeticMockLLM,
        MASExecutor,
        MASGPTSolver,
        MASProgram,
        UnsafeSandboxWarning,
        default_answer_checker,
        default_mas_pool,
    )

    pool = default_mas_pool(debate=False)
    q_train, a_train, _ = make_arithmetic_queries(60, random_state=0)
    q_test, a_test, _ = make_arithmetic_queries(60, random_state=1)
    # the built-in pool is trusted code: it runs in this process for speed and
    # reproducibility; the generated program below runs in the confined child process
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsafeSandboxWarning)
        solver = MASGPTSolver(llm=ArithmeticMockLLM(random_state=0), pool=pool, n_groups=3,
                              sandbox="unsafe-inprocess", random_state=0).fit(q_train, a_train)
        accuracy = solver.score(q_test, a_test)
        executor = MASExecutor(llm=ArithmeticMockLLM(random_state=1), sandbox="unsafe-inprocess")
        sc = [executor.execute(pool[1], q) for q in q_test]
    calls = float(solver.last_calls_.mean())
    sc_accuracy = float(np.mean([default_answer_checker(r.answer, a)
                                 for r, a in zip(sc, a_test)]))

    sandboxed = MASExecutor(llm=ArithmeticMockLLM(random_state=2), timeout=10.0)
    result = sandboxed.execute(solver.router_.generate("Add 40 and 2."), "Add 40 and 2.")
    try:
        sandboxed.execute(MASProgram("evil", "import os\n" + pool[0].code), "Add 1 and 2.")
        refused = "no"
    except ValueError:
        refused = "yes"
    return {
        "MAS-GPT accuracy": accuracy,
        "MAS-GPT calls/query": calls,
        "always-SC accuracy": sc_accuracy,
        "always-SC calls/query": 6.0,
        "sandboxed answer": result.answer,
        "sandbox layers": len(sandboxed.last_sandbox_layers_),
        "'import os' refused": refused,
    }
