"""Benchmark of EVO on bullet-safety-gym's PyBullet tasks (SafetyBallCircle, SafetyBallRun).

EVO (the extreme cost quantile in CPO's constraint) against the same CPO code with the
mean episode cost in the constraint (expectation-constrained CPO) and without a
constraint (TRPO: ``cost_limit=inf``), over seeds, on two tasks with the cost limit
d = 25 of bullet-safety-gym's own benchmarks. Reported per task and agent: the return,
the share of epochs whose mean episode cost exceeds d (the paper's constraint violations
during training) and the tail (q95, q99) of the training episodes' costs.

    .venv/bin/python benchmarks/evo_bullet_safety.py [--quick]
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _harness import Report, fmt, package_version, parse_args  # noqa: E402

from sklearn_icml.safe_rl import BulletSafetyEnv, EVOAgent  # noqa: E402
from sklearn_icml.utils import optional_import  # noqa: E402

gym = optional_import("gymnasium")

COST_LIMIT = 25.0
TASKS = ("SafetyBallCircle-v0", "SafetyBallRun-v0")
BUDGET = {
    # epochs, steps per epoch, seeds, epochs of the end-of-training window
    "quick": (3, 1000, (0,), 2),
    "full": (30, 4000, (0, 1, 2), 10),
}
AGENTS = {
    "EVO (quantile CPO)": {},
    "CPO (expectation)": {"constraint": "expectation", "prioritize": False},
    "TRPO (unconstrained)": {"constraint": "expectation", "prioritize": False,
                             "cost_limit": np.inf},
}


class EpisodeCosts(gym.Wrapper):
    """Records the cost and return of every finished training episode, in order."""

    def __init__(self, env):
        super().__init__(env)
        self.costs, self.returns = [], []
        self._cost = self._ret = 0.0

    def reset(self, **kwargs):
        self._cost = self._ret = 0.0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._cost += float(info["cost"])
        self._ret += float(reward)
        if terminated or truncated:
            self.costs.append(self._cost)
            self.returns.append(self._ret)
        return obs, reward, terminated, truncated, info


def train(task, name, seed, epochs, steps):
    """One run: per-epoch history, the training episodes' costs, wall seconds."""
    env = EpisodeCosts(BulletSafetyEnv(env_id=task))
    params = {"cost_limit": COST_LIMIT, **AGENTS[name]}
    agent = EVOAgent(base="cpo", max_iter=epochs, steps_per_iter=steps, random_state=seed,
                     **params)
    t0 = time.perf_counter()
    agent.run(env)
    wall = time.perf_counter() - t0
    env.close()
    counts = [h["n_episodes"] for h in agent.history_]
    assert sum(counts) == len(env.costs)
    return {"history": agent.history_, "costs": np.asarray(env.costs), "counts": counts,
            "wall": wall}


def summarise(run, window):
    """Metrics of one run (the last ``window`` epochs for return and tail)."""
    h = run["history"]
    last_eps = sum(run["counts"][-window:])
    tail = run["costs"][-last_eps:] if last_eps else np.array([np.nan])
    ep_cost = np.array([x["ep_cost"] for x in h])
    return {
        "return": float(np.nanmean([x["ep_ret"] for x in h[-window:]])),
        "cost": float(np.nanmean(ep_cost[-window:])),
        "violating epochs": float(np.mean(ep_cost > COST_LIMIT)),
        "violating epochs, last": float(np.mean(ep_cost[-window:] > COST_LIMIT)),
        "q95": float(np.quantile(tail, 0.95)),
        "q99": float(np.quantile(tail, 0.99)),
        "q99 all": float(np.quantile(run["costs"], 0.99)),
        "episodes over d": float(np.mean(run["costs"] > COST_LIMIT)),
        "wall": run["wall"],
        "steps/s": len(h) * run["steps"] / run["wall"],
    }


def mean_sd(values):
    values = np.asarray(values, dtype=float)
    return f"{np.mean(values):.3g} +- {np.std(values):.2g}"


def task_section(report, task, runs, seeds, epochs, steps, window):
    keys = [("return", f"return (last {window} epochs)"),
            ("cost", f"mean episode cost (last {window} epochs)"),
            ("violating epochs", "share of epochs with mean cost > d (all epochs)"),
            ("violating epochs, last", f"share of epochs with mean cost > d (last {window})"),
            ("episodes over d", "share of training episodes with cost > d (all)"),
            ("q95", f"q95 episode cost (last {window} epochs)"),
            ("q99", f"q99 episode cost (last {window} epochs)"),
            ("q99 all", "q99 episode cost (all epochs)"),
            ("wall", "wall seconds per run"),
            ("steps/s", "environment steps per second (with the updates)")]
    stats = {name: [summarise(runs[task, name, s], window) for s in seeds] for name in AGENTS}
    rows = [[label, *(mean_sd([m[key] for m in stats[name]]) for name in AGENTS)]
            for key, label in keys]
    evo, cpo = "EVO (quantile CPO)", "CPO (expectation)"
    rows.append(["EVO / CPO wall time", "-", "-", "-"])
    rows[-1][1] = fmt(np.mean([m["wall"] for m in stats[evo]])
                      / np.mean([m["wall"] for m in stats[cpo]]), 3)
    per_seed = [[f"seed {s}",
                 *(f"{stats[name][i]['return']:.3g} / {stats[name][i]['violating epochs']:.2f}"
                   f" / {stats[name][i]['q99']:.3g}" for name in AGENTS)]
                for i, s in enumerate(seeds)]
    qhat = [f"{runs[task, evo, s]['history'][-1]['q_hat']:.3g}" for s in seeds]
    cases = {}
    for s in seeds:
        for x in runs[task, evo, s]["history"]:
            cases[x["case"]] = cases.get(x["case"], 0) + 1
    report.add_table(
        f"{task}, d = {COST_LIMIT:g}: {epochs} epochs x {steps} steps, seeds "
        f"{', '.join(map(str, seeds))} (mean +- sd over seeds)",
        ["quantity", *AGENTS], rows + per_seed,
        note=("Per-seed rows: return / share of violating epochs / q99 (last "
              f"{window} epochs). EVO's q_hat at the last epoch: {', '.join(qhat)} (per "
              f"seed); EVO's CPO cases over all epochs and seeds: "
              f"{dict(sorted(cases.items()))} (0: infeasible recovery, 1-2: constrained "
              "step, 3-4: the reward step alone)."),
    )
    return stats


def main(argv=None):
    args = parse_args(__doc__, argv)
    epochs, steps, seeds, window = BUDGET["quick" if args.quick else "full"]
    report = Report("evo_bullet_safety", "EVO on bullet-safety-gym (PyBullet safe-RL tasks)",
                    quick=args.quick,
                    packages=("numpy", "torch", "gymnasium", "pybullet", "bullet-safety-gym"))
    report.add("Set-up", (
        f"Tasks: {', '.join(TASKS)} (bullet-safety-gym "
        f"{package_version('bullet-safety-gym')}, episodes of 200 and 100 steps; the cost is "
        "1 per step: on Circle outside the safe bounds of the circle, on Run above the "
        f"ball's velocity limit or outside the track's bounds), cost limit d = {COST_LIMIT:g} on the undiscounted episode cost. "
        "All agents are EVOAgent's CPO code with the defaults (networks (64, 64), target_kl "
        "0.01, GAE 0.95, critic lr 1e-3, 10 critic epochs) and one torch thread: EVO "
        "constrains the 0.99 cost quantile (GPD tail of a 100-episode buffer) with "
        "extreme prioritisation; CPO (expectation) the epoch's mean episode cost; TRPO is "
        "the same code with cost_limit = inf (every step is CPO's reward-only case). "
        f"Budget: {epochs} epochs x {steps} steps = {epochs * steps:,} steps per run, "
        f"{len(TASKS) * len(AGENTS) * len(seeds)} runs, one after the other on one core."
    ))
    report.add("Peers", (
        "OmniSafe 0.5.0 exists on PyPI but needs safety-gymnasium (gymnasium 0.28.1, "
        "mujoco 2.3.3) and pandas 2.0.3, which would replace this environment's gymnasium "
        "1.x and pandas 3; FSRL has no distribution on the package index here. Neither is "
        "run: the peers are the library's expectation-constrained CPO and unconstrained "
        "TRPO, the same code with another constraint."
    ))
    t_all = time.perf_counter()
    runs = {}
    for task in TASKS:
        for s in seeds:
            for name in AGENTS:
                run = train(task, name, s, epochs, steps)
                run["steps"] = steps
                runs[task, name, s] = run
                print(f"{task} {name} seed {s}: {run['wall']:.0f} s", flush=True)
    total = time.perf_counter() - t_all
    summary = {task: task_section(report, task, runs, seeds, epochs, steps, window)
               for task in TASKS}
    evo, cpo, trpo = AGENTS
    rows = []
    for task in TASKS:
        st = summary[task]

        def avg(name, key, st=st):
            return float(np.mean([m[key] for m in st[name]]))

        rows.append([task, f"{avg(evo, 'violating epochs'):.2f} / "
                     f"{avg(cpo, 'violating epochs'):.2f} / {avg(trpo, 'violating epochs'):.2f}",
                     f"{avg(evo, 'q99'):.3g} / {avg(cpo, 'q99'):.3g} / {avg(trpo, 'q99'):.3g}",
                     f"{avg(evo, 'return'):.3g} / {avg(cpo, 'return'):.3g} / "
                     f"{avg(trpo, 'return'):.3g}"])
    report.add_table(
        "Summary (EVO / CPO / TRPO, means over seeds)",
        ["task", "share of violating epochs", f"q99 episode cost (last {window} epochs)",
         f"return (last {window} epochs)"], rows,
        note=(f"Whole benchmark: {total / 60:.1f} min of one core "
              f"({total:.0f} s for {len(runs)} runs)."),
    )
    report.write()


if __name__ == "__main__":
    main()
