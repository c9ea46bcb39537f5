"""
CellFlux: simulate perturbed "cells" from control cells of the same batch
=========================================================================

A digits "virtual screen": the 8x8 digits are split into three batches whose pixels carry an
intensity offset (0, +2, +4), and into controls and treated images; each treated image got
one perturbation (P1 shift right, P2 shift down, P3 dilation). CellFlux learns a flow from a
control of the same batch to a treated image, conditioned on the perturbation. It then
transports held-out controls to each perturbation: a logistic "mode of action" classifier
trained on real treated images should recognise the perturbation, and a batch classifier
the batch. The figure shows, per perturbation, a few controls, their transports, and real
treated images of the same batches.

Run: ``python examples/cellflux_flow_matching.py [figure.png]`` (about 30-60 s on a CPU)
"""

import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.datasets import make_digits_screen
from sklearn_icml.generative import CellFlux

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")

X, y, batch, _ = make_digits_screen(random_state=0)
train = np.random.default_rng(0).random(len(y)) < 0.6
print(f"{len(y)} images, {np.sum(y == 'control')} controls, batches {sorted(set(batch.tolist()))}")

start = time.perf_counter()
model = CellFlux(hidden_layer_sizes=(256, 256), noise_level=0.2, learning_rate=1e-3, batch_size=64,
                 max_epochs=60, n_sampling_steps=20, random_state=0)
model.fit(X[train], y[train], batch=batch[train])
print(f"fit: {model.n_updates_} steps in {time.perf_counter() - start:.0f} s, "
      f"final loss {model.loss_curve_[-1]:.3f}")

moa = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))
moa.fit(X[train & (y != "control")], y[train & (y != "control")])
batch_clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)).fit(
    X[train], batch[train])

query = ~train & (y == "control")
Xq, bq = X[query], batch[query]
perts = model.perturbations_
generated = {p: model.predict(Xq, perturbation=p) for p in perts}
for p in perts:
    print(f"{p}: MoA accuracy {np.mean(moa.predict(generated[p]) == p):.2f}, "
          f"batch accuracy {np.mean(batch_clf.predict(generated[p]) == bq):.2f}")

n_show = 6
fig, axes = plt.subplots(3 * len(perts), n_show, figsize=(n_show * 1.1, 3 * len(perts) * 1.1))
for i, p in enumerate(perts):
    real = [np.flatnonzero(~train & (y == p) & (batch == bq[j]))[j] for j in range(n_show)]
    for j in range(n_show):
        for k, (img, label) in enumerate([(Xq[j], "control"), (generated[p][j], f"{p} gen."),
                                          (X[real[j]], f"{p} real")]):
            ax = axes[3 * i + k, j]
            ax.imshow(img.reshape(8, 8), cmap="gray", vmin=0, vmax=20)
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(label, fontsize=7)
            if k == 0 and i == 0:
                ax.set_title(f"batch {bq[j]}", fontsize=7)
fig.suptitle("CellFlux: controls, generated and real treated digits", fontsize=9)
fig.tight_layout()
fig.savefig(out, dpi=110)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/cellflux_flow_matching_thumb.png"
