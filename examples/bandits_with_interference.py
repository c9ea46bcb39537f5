"""
A/B-testing on a grid where units influence their neighbours: switchback vs clusters
====================================================================================

Each round you pick an arm for every unit of an L x L grid (shops, city blocks, ...); a unit's
outcome depends on its own arm *and* on its neighbours'. You want the arm that would be best
if everyone got it. A switchback policy gives every unit the same arm each round: no
interference bias, but its regret is that of a single k-armed bandit, so its spread does
not shrink however many units you have. The cluster-randomised EXP3-IX policy cuts the grid
into cells whose border strips and corner quads join a neighbouring cell at random (the
paper's robust random partition), lets each cell draw its arm, and feeds EXP3-IX a
Horvitz-Thompson estimate built from units whose whole neighbourhood got one arm. Its
expected regret is the same, and its spread shrinks like 1/sqrt(N).

This script runs both policies on 8 seeds for N = 400, 900, 1600 and plots the regret
distributions against N (about 30 s on 2 cores).

Run: ``python examples/bandits_with_interference.py [output.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.bandits import (
    ClusterRandomizedEXP3IX,
    InterferenceGridEnv,
    SwitchbackEXP3IX,
    run_seeds,
)

T, k, seeds = 500, 3, range(8)
policies = {
    "switchback": SwitchbackEXP3IX(n_arms=k, horizon=T),
    # exposure radius 1 = the interference radius; cells of side 6 > 2 * radius
    "cluster": ClusterRandomizedEXP3IX(n_arms=k, horizon=T, exposure_radius=1, cell_size=6),
}
sides = (20, 30, 40)
regrets = {}
for L in sides:
    # arm effects 0.5, 0.4, 0.3; each unit feels the arms of its 3 x 3 neighbourhood
    env = InterferenceGridEnv(grid_side=L, n_arms=k, horizon=T, theta=[0.5, 0.4, 0.3], kappa=1)
    for name, policy in policies.items():
        # run_seeds splits each seed into an env seed and a policy seed (spawn_seeds);
        # the seeds run in parallel with joblib
        runs = run_seeds(policy, env, seeds, n_jobs=2)
        regrets[name, L] = np.array([run.regret_ for run in runs])
        print(f"N = {L * L:4d}  {name:>10}: regret {regrets[name, L].mean():5.1f} "
              f"+- {regrets[name, L].std(ddof=1):.2f} (std over {len(seeds)} seeds)")

fig, (ax, ax_std) = plt.subplots(1, 2, figsize=(10, 4))
for j, (name, colour) in enumerate([("switchback", "tab:red"), ("cluster", "tab:blue")]):
    for i, L in enumerate(sides):
        x = i + (j - 0.5) * 0.3 + np.linspace(-0.06, 0.06, len(seeds))
        ax.scatter(x, regrets[name, L], color=colour, s=14,
                   label=f"{name} EXP3-IX" if i == 0 else None)
    stds = [regrets[name, L].std(ddof=1) for L in sides]
    ax_std.loglog([L * L for L in sides], stds, "o-", color=colour, label=name)
ax.set_xticks(range(len(sides)), [f"N = {L * L}" for L in sides])
ax.set_ylabel(f"regret after T = {T} rounds")
ax.set_title("Regret of each seed")
low, high = ax.get_ylim()
ax.set_ylim(low, high + 0.2 * (high - low))  # room for the legend
ax.legend(loc="upper center", ncol=2)
n = np.array([L * L for L in sides], dtype=float)
cluster_std = np.array([regrets["cluster", L].std(ddof=1) for L in sides])
ref = np.exp(np.mean(np.log(cluster_std * np.sqrt(n)))) / np.sqrt(n)  # best c / sqrt(N)
ax_std.loglog(n, ref, "k:", label="1/sqrt(N)")
ax_std.set_xlabel("number of units N")
ax_std.set_ylabel("std of regret across seeds")
ax_std.set_title("Spread against N")
ax_std.legend()
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).with_suffix(".png"))
fig.savefig(out, dpi=120)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/bandits_with_interference_thumb.png"
