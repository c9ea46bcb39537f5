"""
Data weighting model: learn which training data help, stage by stage
====================================================================

A regression pool mixes four sources: A (the target), B (same signal, much noisier),
C (opposite signal) and D (no signal); a small validation set comes from A. Uniform
training averages the sources and misses badly; DWMRegressor trains a small weighting
network by bi-level optimisation (one look-ahead SGD step, hypergradient of the validation
loss) at the start of each stage and lets the learner train on the weighted batches.
The figure shows the share of the total weight each source received in each stage.

Run: ``python examples/data_weighting_model.py [figure.png]`` (about 20-60 s on a CPU)
"""

import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.datasets import make_mixed_source_regression
from sklearn_icml.weighting import DWMRegressor

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")

data = make_mixed_source_regression(n_per_source=500, random_state=0)
print(f"pool: {data.X.shape[0]} rows from sources {', '.join(data.source_names)}; "
      f"validation {data.X_val.shape[0]} rows of A")

common = {"hidden_layer_sizes": (), "learning_rate": 0.05, "max_iter": 1500, "n_stages": 5,
          "random_state": 0}
models = {}
for name, dwm_steps in (("uniform", 0), ("DWM", 60)):
    start = time.perf_counter()
    models[name] = DWMRegressor(**common, dwm_steps_per_stage=dwm_steps).fit(
        data.X, data.y, data.X_val, data.y_val, sample_features=data.source_onehot
    )
    mse = np.mean((models[name].predict(data.X_test) - data.y_test) ** 2)
    print(f"{name:8s} test MSE on A: {mse:8.4f}   ({time.perf_counter() - start:.1f} s)")

dwm = models["DWM"]
shares = np.array([s["weight_share"] for s in dwm.stage_weight_stats_])
for stats, share in zip(dwm.stage_weight_stats_, shares):
    parts = ", ".join(f"{s}={v:.2f}" for s, v in zip(data.source_names, share))
    print(f"stage {stats['stage']}: weight share {parts}; mean ESS {stats['ess_mean']:.2f} B")

# the fitted DWM weighs any batch: 16 rows of each source in one batch of 64 (mean 1)
rows = np.concatenate([np.flatnonzero(data.source == k)[:16] for k in range(4)])
w = dwm.compute_weights(data.X[rows], data.y[rows], data.source_onehot[rows])
print("mean weight per source in a mixed batch: " + ", ".join(
    f"{s}={w[16 * k:16 * (k + 1)].mean():.2f}" for k, s in enumerate(data.source_names)))

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
stages = np.arange(1, shares.shape[0] + 1)
bottom = np.zeros(shares.shape[0])
colors = ["tab:green", "tab:blue", "tab:red", "tab:gray"]
for j, name in enumerate(data.source_names):
    axes[0].bar(stages, shares[:, j], bottom=bottom, color=colors[j], label=f"source {name}")
    bottom += shares[:, j]
axes[0].axhline(0.25, color="k", lw=0.8, ls="--")
axes[0].set(xlabel="stage", ylabel="share of the total weight", xticks=stages, ylim=(0, 1.15),
            title="weight share per source (uniform = 0.25 each)")
axes[0].legend(loc="upper center", ncol=4, fontsize=8)
for name, model in models.items():
    axes[1].plot(stages, model.history_[:, "valid_loss"], "o-", label=name)
axes[1].set(xlabel="stage", ylabel="validation MSE (source A)", yscale="log", xticks=stages,
            title="validation loss at the end of each stage")
axes[1].legend()
fig.tight_layout()
fig.savefig(out, dpi=110)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/data_weighting_model_thumb.png"
