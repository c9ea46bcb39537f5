"""
How many pulls does clustering save? Best arm identification for many agents at once
====================================================================================

N agents each want their best of K = 10 arms, but they come in M = 3 hidden groups that share
the same arms' rewards. Naive BAI lets every agent find its arm alone; Cl-BAI first clusters
the agents from a short exploration, BAI-Cl first finds the M best arms on a few agents and
then only asks every other agent to pick among those M. All three are delta-PC: with
probability >= 1 - delta every agent gets its best arm.

Run: ``python examples/multi_agent_bai.py [output.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.bandits import (
    BAICl,
    ClBAI,
    ClusteredBanditEnv,
    NaiveBAI,
    best_arm_accuracy,
    make_clustered_bandit,
    run_seeds,
)

n_agents = [6, 15, 30, 60, 90, 150]
seeds = range(3)
delta = 0.05
names = ["naive", "Cl-BAI", "BAI-Cl"]
pulls = {name: [] for name in names}
for n in n_agents:
    totals = {name: [] for name in names}
    for seed in seeds:
        means, assignment = make_clustered_bandit(n, 3, 10, random_state=seed)
        env = ClusteredBanditEnv(means=means, assignment=assignment)
        eta = env.eta_  # the margin the learner is told
        algos = [NaiveBAI(delta=delta), ClBAI(delta=delta, eta=eta),
                 BAICl(n_clusters=3, delta=delta, eta=eta)]
        for name, algo in zip(names, algos):
            # run_seeds clones env and algo, seeding both from the seed
            (run,) = run_seeds(algo, env, seeds=[seed])
            score = best_arm_accuracy(run, env)  # fraction of agents given their best arm
            if score < 1.0:  # happens with probability <= delta
                print(f"  {name} missed the best arm of {1 - score:.0%} of agents")
            totals[name].append(run.sample_complexity_)
    for name in names:
        pulls[name].append(np.mean(totals[name]))
    print(f"N = {n:3d}: " + ", ".join(f"{k} {pulls[k][-1]:.3g}" for k in names))

fig, ax = plt.subplots(figsize=(6, 4))
for name, marker in zip(names, "osd"):
    ax.plot(n_agents, pulls[name], marker=marker, label=name)
ax.set_xlabel("number of agents N (3 clusters, 10 arms)")
ax.set_ylabel("total pulls (mean of 3 seeds)")
ax.set_yscale("log")
ax.set_title(f"Best arm of every agent, delta = {delta}")
ax.legend()
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("multi_agent_bai.png")
fig.savefig(out, dpi=120)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/multi_agent_bai_thumb.png"
