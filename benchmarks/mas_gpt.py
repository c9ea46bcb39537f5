"""MAS-GPT on the mock agent LLM: E1 (the consistency-oriented pipeline against fixed MAS
designs), E2 (its ablation with per-query labels), E3 (the fallback), the sandbox's refusals,
limits and cost.

Run: python benchmarks/mas_gpt.py [--quick]
"""

import os
import select
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
from _harness import Report, Target, median_time, parse_args
from scipy.stats import binom

from sklearn_icml.datasets import make_arithmetic_queries
from sklearn_icml.mas import (
    AgentLLM,
    ArithmeticMockLLM,
    MASExecutor,
    MASGPTSolver,
    MASProgram,
    UnsafeSandboxWarning,
    _confinement,
    default_answer_checker,
    default_mas_pool,
    extract_code,
)
from sklearn_icml.mas._confinement import Limits, execute_in_child

P = {"add": 1.0, "mixed": 0.6, "solve": 0.4}
FAMILIES = ("add", "mixed", "solve")


def sc_closed(p):
    return 1 - binom.cdf(1, 5, p) + binom.pmf(1, 5, p) / 5


CLOSED = {
    "cot": np.mean([P[f] for f in FAMILIES]),
    "self_consistency": np.mean([sc_closed(P[f]) for f in FAMILIES]),
    "self_refine": np.mean([1.0, 0.6, 1 - 0.6**3]),
    "MAS-GPT": np.mean([1.0, sc_closed(0.6), 1 - 0.6**3]),
}


def fixed_baselines(pool, q_test, a_test, seed):
    out = {}
    for program in pool:
        executor = MASExecutor(llm=ArithmeticMockLLM(random_state=seed), sandbox="unsafe-inprocess")
        results = [executor.execute(program, q) for q in q_test]
        acc = np.mean([default_answer_checker(r.answer, a) for r, a in zip(results, a_test)])
        out[program.name] = (float(acc), float(np.mean([r.n_calls for r in results])))
    return out


def run_solver(pool, train, test, consistency, seed=0):
    (q_tr, a_tr, _), (q_te, a_te, f_te) = train, test
    solver = MASGPTSolver(llm=ArithmeticMockLLM(random_state=seed), pool=pool, n_groups=3,
                          consistency=consistency, sandbox="unsafe-inprocess", random_state=seed)
    start = time.perf_counter()
    solver.fit(q_tr, a_tr)
    fit_s = time.perf_counter() - start
    accuracy = solver.score(q_te, a_te)
    routes = Counter(zip(f_te, (p.name for p in solver.last_programs_)))
    return solver, accuracy, routes, fit_s


def e1_e2(report, quick):
    n_train, n_test = (100, 100) if quick else (500, 300)
    pool3 = default_mas_pool(debate=False)
    train = make_arithmetic_queries(n_train, random_state=0)
    test = make_arithmetic_queries(n_test, random_state=1)
    solver, acc, routes, fit_s = run_solver(pool3, train, test, True)
    calls = float(solver.last_calls_.mean())
    right = {"add": "cot", "mixed": "self_consistency", "solve": "self_refine"}
    routed = sum(c for (f, name), c in routes.items() if right[f] == name) / (3 * n_test)
    base = fixed_baselines(default_mas_pool(), test[0], test[1], seed=1)
    ablation, acc2, routes2, _ = run_solver(pool3, train, test, False)
    rows = [
        ["MAS-GPT (consistency) accuracy", "0.904 +- 0.03", CLOSED["MAS-GPT"], acc],
        ["MAS-GPT agent calls per query", 3.64, 3.64, calls],
        ["MAS-GPT routes add->cot, mixed->SC, solve->refine", ">= 0.99", 1.0, routed],
        ["always self-consistency accuracy", "0.881 +- 0.03", CLOSED["self_consistency"],
         base["self_consistency"][0]],
        ["always self-consistency calls", 6, 6, base["self_consistency"][1]],
        ["always self-refine accuracy", "0.795 +- 0.03", CLOSED["self_refine"],
         base["self_refine"][0]],
        ["always self-refine calls", "-", np.mean([2, 2, 3.92]), base["self_refine"][1]],
        ["always CoT accuracy", "0.667 +- 0.03", CLOSED["cot"], base["cot"][0]],
        ["always debate accuracy (3 agents x 2 rounds + judge)", "-", "-", base["debate"][0]],
        ["always debate calls", "-", 7, base["debate"][1]],
        ["E2 per-query labels accuracy", "0.795 +- 0.04", CLOSED["self_refine"], acc2],
        ["E2 gap to E1", ">= 0.07", CLOSED["MAS-GPT"] - CLOSED["self_refine"], acc - acc2],
        ["E2 agent calls per query", "-", "-", float(ablation.last_calls_.mean())],
    ]
    report.add_table(
        f"E1 / E2: consistency-oriented pipeline vs fixed MAS and vs per-query labels "
        f"(train {n_train}/family seed 0, test {n_test}/family seed 1)",
        ["quantity", "target", "closed form", "measured"], rows,
        note=(
            f"Fixed-MAS baselines are the peers that this library runs (each pool "
            f"member applied to every query, agent mock seed 1). E1 fit (pool evaluation on "
            f"{3 * n_train} queries x 3 MAS, grouping, router) took {fit_s:.1f} s in-process "
            f"and spent {solver.train_calls_} agent calls at design time; each test query then "
            "costs one router inference plus its MAS's calls.\n\n"
            f"E1 routes: {dict(routes)}\n\nE2 routes: {dict(routes2)}\n\n"
            "E2 note: per-query labels are noisy (mixed: ~60% cot, ~37% self-consistency; "
            "solve: ~40% cot, ~47% self-refine), and the TF-IDF/logistic router also sees the "
            "number tokens, so it does not send a whole family to its majority label: part of "
            "`solve` goes to CoT (and a few `mixed` queries away from it). The target assumed "
            "majority routing (0.795); the lower measured value is the same effect, stronger: "
            "inconsistent labels make a worse generator, which is the paper's point."
        ),
    )
    return acc, calls


def e1_seeds(report, quick):
    if quick:
        return
    pool3 = default_mas_pool(debate=False)
    rows = []
    for seed in (2, 3, 4):
        train = make_arithmetic_queries(500, random_state=2 * seed)
        test = make_arithmetic_queries(300, random_state=2 * seed + 1)
        s1, acc1, _, _ = run_solver(pool3, train, test, True, seed=seed)
        _, acc2, _, _ = run_solver(pool3, train, test, False, seed=seed)
        rows.append([seed, acc1, float(s1.last_calls_.mean()), acc2, acc1 - acc2])
    arr = np.array([r[1:] for r in rows], dtype=float)
    rows.append(["mean", *arr.mean(axis=0)])
    report.add_table(
        "E1 / E2 over further seeds (data seeds 2s, 2s+1; mock and k-means seed s)",
        ["seed", "E1 accuracy (0.904)", "E1 calls (3.64)", "E2 accuracy (0.795)",
         "gap (>= 0.07)"], rows,
    )


def e3(report, quick):
    pool3 = default_mas_pool(debate=False)
    n = 100 if quick else 300
    train = make_arithmetic_queries(60, random_state=0)
    q_te, a_te, f_te = make_arithmetic_queries(n, random_state=1)
    mixed = np.flatnonzero(f_te == "mixed")

    def no_code(prompt, temperature):
        return "Use several agents that vote. (no code block)"

    solver = MASGPTSolver(llm=ArithmeticMockLLM(random_state=0), pool=pool3, n_groups=3,
                          generator_llm=no_code, sandbox="unsafe-inprocess", random_state=0)
    solver.fit(*train[:2])
    acc = solver.score([q_te[i] for i in mixed], a_te[mixed])
    share = np.mean([r.used_fallback for r in solver.last_results_])
    head = "class MAS:\n    def __init__(self, model_list):\n        self.llm = LLM(model_list)\n"
    loop = MASProgram("loop", head + "    def forward(self, taskInfo):\n        while True:\n"
                      "            pass\n")
    rows = [
        ["generator without code block: accuracy on mixed", "about 0.928", sc_closed(0.6), acc],
        ["generator without code block: used_fallback share", 1.0, 1.0, share],
    ]
    timeout = 2.0
    executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=timeout)
    result = executor.execute(loop, "Compute 12 times 11 minus 7.")
    ok = result.timed_out and result.used_fallback and result.answer is not None
    rows.append([f"infinite loop (process, timeout {timeout} s): seconds to fallback answer",
                 f"<= {timeout + 5}", "-", result.seconds])
    rows.append(["infinite loop (process): timed out, fell back, answered", True, "-", ok])
    try:
        MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=timeout,
                    sandbox="unsafe-inprocess").execute(loop, "Compute 12 times 11 minus 7.")
        refused = False
    except ValueError:
        refused = True
    rows.append(["infinite loop (unsafe-inprocess): refused before it runs (not a program "
                 "the library ships)", True, "-", refused])
    report.add_table("E3: fallback and robustness",
                     ["quantity", "target", "closed form", "measured"], rows)


PROBE = Path(tempfile.gettempdir()) / f"mas_gpt_bench_probe_{os.getpid()}.txt"
FREE_FD = "__import__('os').close(2)"  # so that RLIMIT_NOFILE does not stand in for seccomp
# (attack, its route around the program check and its goal; {tcp} is a 127.0.0.1 listener)
ATTACKS = [
    ("match class pattern -> __globals__ -> open('/etc/passwd')",
     ["match extract_code:", "    case object(__globals__=G):", "        B = G['builtins']",
      "return B.open('/etc/passwd').read()"]),
    ("match class pattern -> __subclasses__ -> os.popen",
     ["match object:", "    case type(__subclasses__=S):", "        pass", "for c in S():",
      "    match c:", "        case type(__name__='_wrap_close', __init__=I):",
      "            return I.__globals__['popen']('id').read()", "return 'x'"]),
    ("generator frame walk (gi_frame.f_back.f_globals) -> TCP send to 127.0.0.1",
     ["box = []", "g = (box[0].gi_frame.f_back.f_back.f_globals for _ in [0])",
      "box.append(g)", "s = next(g)['builtins'].__import__('socket').socket()",
      "s.connect(('127.0.0.1', {tcp}))", "s.sendall(b'escaped')", "return 'sent'"]),
    ("traceback frame (tb_frame.f_back.f_builtins) -> fork",
     ["try:", "    1 / 0", "except Exception as e:",
      "    B = e.__traceback__.tb_frame.f_back.f_builtins",
      "return str(B['__import__']('os').fork())"]),
    ("str.format attribute fields -> write a file",
     ["leak = '{{0.__globals__[builtins].open}}'.format(extract_code)",
      f"open({str(PROBE)!r}, 'w').write(leak)", "return leak"]),
    ("functools.update_wrapper(updated=('__globals__',)) -> signal the parent",
     ["import functools", "def f():", "    pass",
      "functools.update_wrapper(f, extract_code, assigned=(), updated=('__globals__',))",
      "builtins.__import__('os').kill({parent}, 0)", "return 'signalled'"]),
    ("lambda default + frame walk -> eval",
     ["walk = lambda g=(i for i in [0]): g.gi_frame.f_builtins['eval']",
      "return walk()(\"open('/etc/passwd').read()\")"]),
    ("typing.ForwardRef._evaluate -> listdir('/')",
     ["import typing", "ref = typing.ForwardRef(\"__import__('os').listdir('/')\")",
      "return str(ref._evaluate({{'__builtins__': __builtins__}}, None, frozenset()))"]),
    ("fork, setsid, outlive the run, write a file",
     ["import os, time", "if os.fork() == 0:", "    os.setsid()", "    time.sleep(2)",
      f"    open({str(PROBE)!r}, 'w').write('survived')", "    os._exit(0)", "return 'x'"]),
    ("try/finally: continue around an endless loop",
     ["while True:", "    try:", "        while True:", "            pass", "    finally:",
      "        continue"]),
    ("forge the child's report on fd 1",
     ["import os", "os.write(1, b'{{\"type\": \"ready\", \"layers\": [\"forged\"]}}\\n')",
      "return 'x'"]),
    ("allocate without bound", ["x = []", "while True:", "    x.append('a' * 1000000)"]),
    ("bind getattr anywhere, str subclass -> extract_code.__globals__ -> os.getcwd",
     ["class S(str):", "    def startswith(self, *args):", "        return False",
      "def unused():", "    getattr = None", "g = getattr(extract_code, S('__globals__'))",
      "return g['importlib'].import_module('os').getcwd()"]),
    ("copy.dispatch_table (copyreg's global registry) -> reducers that import",
     ["import copy", "return str(len(copy.dispatch_table))[:0] + open('/etc/passwd').read()"]),
    ("patch json.JSONDecoder.decode to forge later runs' answers",
     ["import json", "json.JSONDecoder.decode = lambda self, s: {{'type': 'result'}}",
      "return open('/etc/passwd').read()"]),
]


def _body(lines):
    head = "class MAS:\n    def __init__(self, model_list):\n        self.llm = LLM(model_list)\n"
    return head + "    def forward(self, taskInfo):\n" + "".join(f"        {x}\n" for x in lines)


def _survivors():
    script = _confinement._CHILD_SCRIPT.encode()
    found = 0
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                found += script in f.read()
        except OSError:
            pass
    return found


def sandbox(report, quick):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    rows, layers = [], ()
    for what, lines in ATTACKS:
        lines = [x.format(tcp=port, parent=os.getpid()) for x in lines]
        try:
            MASProgram("attack", _body(lines)).validate()
            static = "passes"
        except ValueError as exc:
            static = "refused: " + str(exc).split(";")[0].split(" (line")[0].replace(
                "program 'attack' ", "")
        run = execute_in_child(
            _body([FREE_FD] + lines), "Add 1 and 2.", _Agent(), timeout=1.5,
            memory_limit=256 * 2**20, limits=Limits(64, 200_000, 100_000), check=False,
        )
        layers = run.layers or layers
        outcome = "killed at timeout" if run.timed_out else (
            run.error or f"ran (!): {run.answer!r}")
        rows.append([what, static.replace("|", "/")[:70], outcome.replace("|", "/")[:80],
                     _survivors()])
    time.sleep(2.5)  # the time the setsid attack waited before writing
    readable, _, _ = select.select([listener], [], [], 0.2)
    listener.close()
    report.add_table(
        "Sandbox: attacks in generated code (process mode, timeout 1.5 s)",
        ["attack", "program check (MASProgram.validate)",
         "process layer alone (program check off in the child)",
         "sandbox processes left"], rows,
        note="Layers of the child, as the parent read them in /proc before sending the "
        "program: " + ", ".join(layers) + ". Each program first closed fd 2, so that the "
        "descriptor limit does not stand in for the seccomp filter. Connections that reached "
        f"the 127.0.0.1 listener: {len(readable)}; the file the attacks aimed at exists 2.5 s "
        f"after the last run: {PROBE.exists()}.",
    )
    limit_rows = []
    for what, lines in [
        ("answer of 15 MiB", ["return 'x' * (15 * 2 ** 20)"]),
        ("10 prompts of 8 MiB", ["for _ in range(10):",
                                 "    self.llm.call_llm('x' * (8 * 2 ** 20))", "return 'x'"]),
        ("100 agent calls", ["for _ in range(100):", "    self.llm.call_llm(taskInfo)",
                             "return 'x'"]),
        ("a prompt of 150008 astral characters (within the limit)",
         ["return self.llm.call_llm('\\U0001F600' * 150008)"]),
    ]:
        result = MASExecutor(llm=ArithmeticMockLLM(random_state=0), timeout=10).execute(
            MASProgram("greedy", _body(lines)), "Add 1 and 2.")
        limit_rows.append([what, result.error, result.used_fallback, result.answer])
    report.add_table(
        "Sandbox: limits on what crosses the boundary (defaults: 64 calls, 200000-character "
        "prompts, 100000-character answers)",
        ["program", "error", "fallback ran", "answer"], limit_rows,
        note="The child checks each limit before it sends (the messages of the in-process "
        "mode); this process checks again what it receives, and refuses a line past 12 bytes "
        "per allowed character before parsing it.",
    )
    report.add_table(
        "Parent time on untrusted text (hostile inputs of the earlier attack report)",
        ["input", "characters", "seconds", "target", "status"], _text_rows(),
        note="The earlier regular expressions took 93 s, 4.4 s and 4.5 s on these inputs; "
        "each is now a linear scan.",
    )
    program = default_mas_pool()[1]
    repeat = 5 if quick else 15
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsafeSandboxWarning)
        t_in, _ = median_time(lambda: MASExecutor(
            llm=ArithmeticMockLLM(), sandbox="unsafe-inprocess").execute(program, "Add 1 and 2."),
            repeat=repeat)
    t_proc, _ = median_time(lambda: MASExecutor(llm=ArithmeticMockLLM(), timeout=10).execute(
        program, "Add 1 and 2."), repeat=repeat)
    t_py, _ = median_time(lambda: subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", "pass"], check=True), repeat=repeat)
    target = Target(hi=0.15)
    report.add_table(
        "Sandbox cost per MAS run (self-consistency, 6 mock calls; medians of "
        f"{repeat})",
        ["sandbox", "seconds per run", "ratio to unsafe-inprocess", "target", "status"],
        [["unsafe-inprocess", t_in, 1.0, "-", "-"],
         ["process (confined, verified, tree killed and checked)", t_proc, t_proc / t_in,
          str(target), target.check(t_proc)],
         ["for scale: an empty `python -I -S` start", t_py, t_py / t_in, "-", "-"]],
        note="The process sandbox starts a fresh interpreter per run, imports the allowed "
        "modules before confinement, and reads /proc to verify the child and to look for "
        "survivors; with a real LLM (seconds per call) this overhead is small. Before this "
        "hardening (a child that reported its own layers) a run cost 0.207 s as first "
        "measured and 0.304 s in the previous results file. The machine was shared with "
        "other jobs during this run (see the load average); the two modes were timed side by "
        "side.",
    )


def _text_rows():
    mock = ArithmeticMockLLM(random_state=0)
    verify = "[VERIFY]\nTask: Add 1 and 2.\n" + "Proposed answer:" * 12_370
    think = AgentLLM(llm=lambda prompt, t: "<think>" * 8000)
    fence = "```" + " " * 32_000
    rows = []
    for what, text, call in (
        ("[VERIFY] prompt of repeated 'Proposed answer:' (mock LLM)", verify,
         lambda: mock(verify, 0.5)),
        ("reply of repeated '<think>' (AgentLLM.call_llm)", "<think>" * 8000,
         lambda: think.call_llm("q")),
        ("a fence and 32 000 spaces (extract_code)", fence, lambda: extract_code(fence)),
    ):
        start = time.perf_counter()
        call()
        seconds = time.perf_counter() - start
        rows.append([what, len(text), seconds, "<= 0.1", Target(hi=0.1).check(seconds)])
    return rows


class _Agent:
    n_calls = 0

    def call_llm(self, prompt, temperature=None):
        self.n_calls += 1
        return "ANSWER: 3"


def main(argv=None):
    args = parse_args(__doc__, argv)
    # the experiments run the built-in (trusted) pool in this process, for exact
    # reproducibility; the sandbox section runs generated code in the child process
    warnings.filterwarnings("ignore", category=UnsafeSandboxWarning)
    report = Report("mas_gpt", "MAS-GPT (query-specific multi-agent systems as code)",
                    quick=args.quick)
    report.add(
        "Setting",
        "Mock setting: three query families, the deterministic ArithmeticMockLLM "
        "as agent LLM, pool {cot, self_consistency, self_refine} (+ debate as an extra fixed "
        "baseline), n_groups=3, repeats=1, in-process execution "
        "(sandbox='unsafe-inprocess', for the library's own trusted pool) for exact "
        "reproducibility (the process sandbox gives the same answers, see tests). External "
        "MAS frameworks "
        "(ag2, camel-ai, metagpt, langgraph, dspy) need real LLM endpoints and are not "
        "run; on the mock they would reduce to the same fixed patterns.",
    )
    start = time.perf_counter()
    e1_e2(report, args.quick)
    e1_seeds(report, args.quick)
    e3(report, args.quick)
    sandbox(report, args.quick)
    report.add(
        "Paper headline numbers (not reproducible on CPU)",
        "The paper fine-tunes Qwen2.5-Coder-32B-Instruct and reports, with real driver LLMs, "
        "wins over 10+ MAS baselines on 9 benchmarks (a third-party aggregator lists MATH "
        "68.7, GSM8K 93.4, GPQA 37.6 with Llama-3-70B as driver; unverified). This CPU "
        "version keeps the pipeline (consistent pairs -> one-inference generator -> safe "
        "execution) and checks it against closed forms on the mock.",
    )
    report.add("Run time", f"{time.perf_counter() - start:.0f} s wall on this machine.")
    report.write()


if __name__ == "__main__":
    main()
