"""
EVO in one minute: constrain the 0.99-quantile of the episode cost, not its mean
================================================================================

On RiskyShortcutEnv the shortcut pays more but a 1% gust per step costs 50: its mean
episode cost (4.8) is below the limit d = 10, its 0.99-quantile (50) is not. The
expectation-constrained baseline learns to take the shortcut; EVO learns the safe route.

Run: ``python examples/evo_constrained_rl.py [figure.png]``
"""

import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_icml.safe_rl import EVOAgent, GPDTailQuantile, RiskyShortcutEnv  # noqa: E402

# 1. the tail estimator on its own: shortcut episode costs are 0 or 50
costs = np.where(np.random.default_rng(0).random(1000) < 1 - 0.99**10, 50.0, 0.0)
est = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.9).fit(costs)
print(f"shortcut costs: mean {costs.mean():.2f}, EVO's 0.99-quantile {est.predict():.1f} "
      f"(fallback: {est.fallback_})")

# 2. EVO vs the expectation-constrained baseline (same code, mean cost in the constraint)
common = dict(cost_limit=10.0, base="ppo_lag", max_iter=24, steps_per_iter=250,
              actor_hidden_layer_sizes=(32,), critic_hidden_layer_sizes=(32,),
              critic_max_epochs=3)
agents = {
    "EVO (0.99-quantile)": EVOAgent(**common, random_state=0),
    "expectation baseline": EVOAgent(**common, constraint="expectation", prioritize=False,
                                     random_state=0),
}
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
for name, agent in agents.items():
    agent.run(RiskyShortcutEnv())
    res = agent.evaluate(n_episodes=200, deterministic=False)
    print(f"{name}: P(shortcut) {agent.history_[-1]['mean_action']:.2f}, "
          f"return {res['mean_return']:.2f}, violation rate {res['violation_rate']:.3f}")
    axes[0].plot([h["mean_action"] for h in agent.history_], label=name)
    axes[1].plot([h["violation_rate"] for h in agent.history_], label=name)
axes[0].set(title="P(shortcut) during training", xlabel="iteration")
axes[1].set(title="episodes with cost > d", xlabel="iteration")
axes[0].legend()
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).with_suffix(".png")
fig.savefig(out, dpi=90)
print(f"saved {pathlib.Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/evo_constrained_rl_thumb.png"
