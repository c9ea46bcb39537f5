"""
Which multi-agent system should answer this query? MAS-GPT as a fitted estimator
================================================================================

A multi-agent system (MAS) here is a small Python program whose agents are prompts to an LLM:
one chain-of-thought call, five votes and a judge (self-consistency), or solve-verify-retry
(self-refine). MAS-GPT learns from (query, MAS) pairs, chosen consistently for groups of
similar queries, which MAS to generate for a new query, in one inference. The agent LLM is a
deterministic mock: additions are easy, products-minus are noisy (voting helps),
linear equations are hard but checkable (verification helps).

The figure shows accuracy against LLM calls per query: MAS-GPT should sit above and left of
every fixed MAS. Generated code runs in a locked-down child process; the script also shows
that a program that imports `os` is refused.

Run: ``python examples/mas_gpt.py [output.png]``
"""

import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
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

# The built-in pool is trusted code, so the experiment runs it in this process (fast and
# exactly reproducible); generated or untrusted programs belong in sandbox="process".
warnings.filterwarnings("ignore", category=UnsafeSandboxWarning)

pool = default_mas_pool()  # cot, self_consistency, self_refine, debate
q_train, a_train, f_train = make_arithmetic_queries(150, random_state=0)
q_test, a_test, f_test = make_arithmetic_queries(150, random_state=1)

points = {}
executor = MASExecutor(llm=ArithmeticMockLLM(random_state=1), sandbox="unsafe-inprocess")
for program in pool:  # the fixed-MAS baselines: one design for every query
    results = [executor.execute(program, q) for q in q_test]
    accuracy = np.mean([default_answer_checker(r.answer, a) for r, a in zip(results, a_test)])
    points[f"always {program.name}"] = (np.mean([r.n_calls for r in results]), accuracy)

for consistency in (True, False):
    solver = MASGPTSolver(llm=ArithmeticMockLLM(random_state=0), pool=pool, n_groups=3,
                          consistency=consistency, sandbox="unsafe-inprocess", random_state=0)
    solver.fit(q_train, a_train)
    accuracy = solver.score(q_test, a_test)
    name = "MAS-GPT" if consistency else "per-query labels"
    points[name] = (solver.last_calls_.mean(), accuracy)
    if consistency:
        routes = {f: sorted({p.name for p, ff in zip(solver.last_programs_, f_test) if ff == f})
                  for f in ("add", "mixed", "solve")}

for name, (calls, accuracy) in points.items():
    print(f"{name:>24}: accuracy {accuracy:.3f} at {calls:.2f} LLM calls per query")
print("MAS-GPT routes:", routes)

# a separate, confined process; the layers are those this process verified in /proc
sandbox = MASExecutor(llm=ArithmeticMockLLM(random_state=2), timeout=10.0)
print("sandboxed run:", sandbox.execute(pool[0], "Add 40 and 2.").answer,
      "| verified layers:", ", ".join(sandbox.last_sandbox_layers_))
try:
    sandbox.execute(MASProgram("evil", "import os\n" + pool[0].code), "Add 1 and 2.")
except ValueError as exc:
    print("refused:", exc)

fig, ax = plt.subplots(figsize=(6, 4))
for name, (calls, accuracy) in points.items():
    marker = "*" if name == "MAS-GPT" else ("s" if name.startswith("per") else "o")
    ax.scatter(calls, accuracy, s=160 if marker == "*" else 60, marker=marker)
    ax.annotate(name, (calls, accuracy), textcoords="offset points", xytext=(6, -10))
ax.set_xlabel("agent-LLM calls per query")
ax.set_ylabel("test accuracy")
ax.set_title("MAS-GPT vs fixed multi-agent systems (mock agent LLM)")
ax.set_xlim(0, 10)
fig.tight_layout()
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
fig.savefig(out, dpi=120)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/mas_gpt_thumb.png"
