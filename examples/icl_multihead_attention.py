"""
A one-layer, two-head softmax attention learns linear regression in context
===========================================================================

We train the attention layer online on fresh linear-regression prompts (each prompt is a new
task: L pairs (x, y) and a query x), then read what it learned: each head's key-query matrix
becomes a multiple of the identity, its output-value row reads only y, and the two heads
have opposite signs: together they implement *debiased* gradient descent. The figure shows
the learned KQ / OV heat maps and the test error against the context length next to the
closed-form predictors.

Run: ``python examples/icl_multihead_attention.py [output.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

from sklearn_icml.neural import (
    BayesRidgeICLPredictor,
    GDICLPredictor,
    LinearICLTaskSampler,
    MultiHeadSoftmaxICLRegressor,
    SoftmaxKernelICLPredictor,
)

torch.set_num_threads(1)
d, L = 3, 20
model = MultiHeadSoftmaxICLRegressor(
    n_heads=2,
    sampler=LinearICLTaskSampler(n_features=d, n_context=L),
    max_iter=600,
    batch_size=128,
    learning_rate=1e-2,
    steps_per_epoch=100,
    n_jobs=1,
    random_state=0,
).fit()
pats = model.attention_patterns()
print("omega per head:", np.round(pats["omega"], 3), " mu per head:", np.round(pats["mu"], 3))
print(
    "diag ratio:",
    np.round(pats["diag_ratio"], 4),
    " last-entry ratio:",
    np.round(pats["last_entry_ratio"], 4),
    " zero-sum:",
    round(pats["zero_sum"], 4),
)

# the closed-form predictors share the trained model's predict / icl_mse API; their fit
# only validates the prompts (the prompt length may differ at predict time)
X_fit, _ = LinearICLTaskSampler(n_features=d, n_context=L, random_state=99).sample(10)
models = {
    "trained 2-head attention": model,
    "kernel at learned (omega, mu)": SoftmaxKernelICLPredictor(
        omegas=pats["omega"], mus=pats["mu"]
    ).fit(X_fit),
    "debiased GD (eta = 2 omega mu)": GDICLPredictor(eta=pats["eta_eff"], debiased=True).fit(
        X_fit
    ),
    "Bayes ridge": BayesRidgeICLPredictor().fit(X_fit),
}
lengths = [5, 10, 20, 40, 80]
curves = {name: [] for name in models}
for i, n_ctx in enumerate(lengths):
    X, y = LinearICLTaskSampler(n_features=d, n_context=n_ctx, random_state=i).sample(5000)
    for name, est in models.items():
        curves[name].append(est.icl_mse(X, y))
for name, vals in curves.items():
    print(f"{name:32s}", " ".join(f"{v:.3f}" for v in vals))

fig = plt.figure(figsize=(11, 4.5))
left, right = fig.subfigures(1, 2, width_ratios=[1.3, 1])
model.plot_attention_patterns(fig=left)
ax = right.subplots()
for name, vals in curves.items():
    ax.plot(lengths, vals, marker="o", label=name)
ax.axvline(L, color="grey", ls=":", label="training length")
ax.set_xscale("log")
ax.set_xticks(lengths, [str(n) for n in lengths])
ax.minorticks_off()
ax.set_xlabel("context length L")
ax.set_ylabel("test MSE")
ax.legend(fontsize=8)
out = sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
fig.savefig(out, dpi=110)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/icl_multihead_attention_thumb.png"
