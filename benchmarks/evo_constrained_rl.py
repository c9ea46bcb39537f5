"""Benchmark of EVO (extreme-value constrained RL): spec experiments E1, E2 and E3.

E1 compares GPDTailQuantile with the empirical quantile and the released code's
free-location ``scipy.stats.genpareto.fit``; E2 and E3 train EVO and the
expectation-constrained baseline (same code, mean episode cost in place of q_hat,
no prioritisation) side by side and save one figure of their training curves.

    .venv/bin/python benchmarks/evo_constrained_rl.py [--quick]
"""

import pathlib
import sys
import time

import numpy as np
from scipy import stats

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _harness import Report, median_time, parse_args  # noqa: E402

from sklearn_icml.safe_rl import (  # noqa: E402
    EVOAgent,
    GPDTailQuantile,
    HeavyTailPointEnv,
    RiskyShortcutEnv,
)


def e1(report, quick):
    C = stats.lomax.rvs(4, size=20000, random_state=np.random.default_rng(0))
    est = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99)
    t_fit, _ = median_time(lambda: est.fit(C), repeat=3)
    free = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99, free_loc=True)
    t_free, _ = median_time(lambda: free.fit(C), repeat=3)
    emp = float(np.quantile(C, 0.999))
    n_seeds = 10 if quick else 50
    evt, empq = [], []
    for s in range(n_seeds):
        Cs = stats.lomax.rvs(4, size=5000, random_state=np.random.default_rng(s))
        evt.append(GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99).fit(Cs).predict())
        empq.append(np.quantile(Cs, 0.999))
    X = stats.expon.rvs(scale=2, size=20000, random_state=np.random.default_rng(0))
    ex = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99).fit(X)
    rows = [
        ["Lomax(4) seed 0: u", "~0.769", est.threshold_, free.threshold_, "-"],
        ["xi_hat", "0.25 +- 0.05", est.shape_, free.shape_, "-"],
        ["sigma_hat", "0.445 +- 0.04", est.scale_, free.scale_, "-"],
        ["q_hat 0.999 (true 4.623)", "4.73 +- 0.35", est.predict(), free.predict(), emp],
        [f"sd over {n_seeds} seeds, n=5000", "EVT sd < empirical sd (4.60/0.37 vs 4.50/0.49)",
         f"mean {np.mean(evt):.3f}, sd {np.std(evt):.3f}", "-",
         f"mean {np.mean(empq):.3f}, sd {np.std(empq):.3f}"],
        ["Exponential(2): xi_hat", "0.0 +- 0.05", ex.shape_, "-", "-"],
        ["Exponential(2): q_hat 0.999 (true 13.82)", "13.8 +- 0.8", ex.predict(), "-",
         float(np.quantile(X, 0.999))],
        ["fit time, n=20000 (ratio to weighted MLE)", "-", f"{t_fit * 1e3:.1f} ms (1.0)",
         f"{t_free / t_fit:.2f}x", "-"],
    ]
    report.add_table(
        "E1: EVT tail quantile (seeds are default_rng(s))",
        ["quantity", "target", "GPDTailQuantile (weighted MLE, loc 0)",
         "free-loc genpareto.fit (released code)", "empirical quantile"],
        rows,
    )


def train_pair(env_factory, cost_limit, epochs, steps, seed):
    runs = {}
    for name, kw in (("EVO", {}),
                     ("expectation baseline", {"constraint": "expectation",
                                               "prioritize": False})):
        t0 = time.perf_counter()
        agent = EVOAgent(env=env_factory(), cost_limit=cost_limit, base="ppo_lag",
                         steps_per_epoch=steps, random_state=np.random.default_rng(seed),
                         **kw).learn(epochs * steps)
        runs[name] = (agent, time.perf_counter() - t0)
    return runs


def last(agent, key, k):
    vals = [h[key] for h in agent.history_[-k:]]
    return float(np.nanmean(vals))


def e2(report, quick, curves):
    epochs, steps, window = (6, 500, 3) if quick else (30, 1000, 5)
    runs = train_pair(RiskyShortcutEnv, 10.0, epochs, steps, seed=0)
    curves["E2 RiskyShortcutEnv (d=10)"] = runs
    evo, t_evo = runs["EVO"]
    base, t_base = runs["expectation baseline"]
    v_evo, v_base = last(evo, "violation_rate", window), last(base, "violation_rate", window)
    rows = [
        ["baseline P(shortcut)", ">= 0.9", last(base, "mean_action", window)],
        ["baseline return", "9.3-9.6", last(base, "ep_ret", window)],
        ["baseline violation rate P(C > 10)", "0.096 +- 0.02", v_base],
        ["EVO P(safe)", ">= 0.75", 1 - last(evo, "mean_action", window)],
        ["EVO return", "6.0-7.0", last(evo, "ep_ret", window)],
        ["EVO violation rate", "<= 0.03", v_evo],
        ["EVO / baseline violation", "<= 1/3", v_evo / v_base if v_base > 0 else float("nan")],
        ["EVO violation rate, all epochs", "~0.018 (prototype)",
         float(np.nanmean([h["violation_rate"] for h in evo.history_]))],
        ["EVO final multiplier", "rising (20-40 after 50-100 epochs)", evo.lagrange_],
        ["wall time (EVO / baseline)", "-", f"{t_evo:.0f} s / {t_base:.0f} s "
         f"({t_evo / t_base:.2f}x)"],
    ]
    report.add_table(
        f"E2: RiskyShortcutEnv, d = 10, ppo_lag, {epochs} epochs x {steps} steps, 1 seed "
        f"(metrics over the last {window} epochs of training episodes)",
        ["quantity", "target", "measured"], rows,
        note=("REDUCED from the spec's 50 epochs x 2000 steps x 2 seeds to fit the shared, "
              "loaded 2-core machine; P(shortcut) is the fraction of shortcut actions among "
              "the training steps."),
    )


def e3(report, quick, curves):
    epochs, steps, n_eval = (4, 500, 50) if quick else (15, 1000, 200)
    runs = train_pair(HeavyTailPointEnv, 5.0, epochs, steps, seed=0)
    curves["E3 HeavyTailPointEnv (d=5)"] = runs
    ev = {name: agent.evaluate(n_episodes=n_eval, deterministic=False)
          for name, (agent, _) in runs.items()}
    e, b = ev["EVO"], ev["expectation baseline"]
    rows = [
        ["EVO eval violation rate P(C > 5)", "<= 0.02", e["violation_rate"]],
        ["baseline eval violation rate", ">= 2x EVO's", b["violation_rate"]],
        ["EVO return / baseline return", ">= 0.5", e["mean_return"] / b["mean_return"]
         if b["mean_return"] > 0 else float("nan")],
        ["EVO / baseline mean return", "-", f"{e['mean_return']:.2f} / {b['mean_return']:.2f}"],
        ["EVO / baseline q99 episode cost", "-", f"{e['q99_cost']:.2f} / {b['q99_cost']:.2f}"],
    ]
    report.add_table(
        f"E3: HeavyTailPointEnv, d = 5, ppo_lag, {epochs} epochs x {steps} steps, "
        f"{n_eval} stochastic evaluation episodes",
        ["quantity", "target (INFERRED)", "measured"], rows,
        note="REDUCED training budget (the spec gives none beyond 'about 5 minutes').",
    )


def plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [("ep_ret", "mean episode return"), ("ep_cost", "mean episode cost"),
            ("violation_rate", "violation rate P(C > d)")]
    fig, axes = plt.subplots(len(curves), 3, figsize=(12, 3.2 * len(curves)), squeeze=False)
    for row, (title, runs) in zip(axes, curves.items()):
        for ax, (key, label) in zip(row, keys):
            for name, (agent, _) in runs.items():
                ax.plot([h[key] for h in agent.history_], label=name)
            ax.set_title(f"{title}: {label}", fontsize=9)
            ax.set_xlabel("epoch")
        row[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


NOTES = (
    "E1 reproduces the calibrated spec numbers exactly (seeds are default_rng). E2 meets "
    "every target at a reduced budget (30 x 1000 steps, 1 seed; the spec's 50 x 2000 x 2 "
    "did not fit the loaded shared machine). E3 (INFERRED targets) is not met at this "
    "budget: after 15 epochs EVO's multiplier is still rising, its evaluation violation "
    "rate is about half the baseline's but above 0.02, and it keeps under 50% of the "
    "baseline's return. Nothing was tuned to hit a number. Both agents use the ppo_lag "
    "base (the spec allows it for E2; the CPO base is implemented and unit-tested but not "
    "benchmarked here). The baseline also turns prioritisation off."
)


def main(argv=None):
    args = parse_args(__doc__, argv)
    report = Report("evo_constrained_rl", "EVO: extreme-value constrained RL",
                    quick=args.quick, packages=("numpy", "scipy", "torch", "gymnasium"))
    report.add("Peers", "omnisafe / safety-gymnasium / fsrl / pyextremes are not installed "
               "(omnisafe pins an old torch; safety-gymnasium needs MuJoCo): the peers run "
               "side by side are the released code's free-location genpareto.fit (E1), the "
               "empirical quantile (E1) and the expectation-constrained baseline (same agent "
               "code, mean episode cost in the constraint, no prioritisation; E2, E3).")
    e1(report, args.quick)
    curves = {}
    e2(report, args.quick, curves)
    e3(report, args.quick, curves)
    out = pathlib.Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    name = "evo_constrained_rl_curves" + (".quick" if args.quick else "") + ".png"
    plot(curves, out / name)
    report.add("Training curves", f"![training curves]({name})")
    report.add("Notes", NOTES)
    report.write()


if __name__ == "__main__":
    main()
