"""
Private survey design: how many people to sample in each stratum under differential privacy
===========================================================================================

A population of 41,000 people in three strata (two large ones, one small; one of the large
ones almost constant) answers a question in [0, 1]. We want the population mean with
epsilon-differential privacy for everyone, from a sample of 300. Sampling amplifies
privacy, so each stratum's noise is calibrated to a larger nominal budget the smaller its
sampling rate; the privacy-aware optimal design (Chen, Pasupathy & Awan, ICML 2025) moves
units into the low-variance stratum that Neyman allocation starves, whose noise would
otherwise dominate.

Run: ``python examples/dp_stratified_sampling.py [output.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.privacy import (
    DPStratifiedSampler,
    design_variance,
    mechanism_variance,
    neyman_allocation,
    optimal_allocation,
    proportional_allocation,
)

rng = np.random.default_rng(0)
sizes = np.array([20000, 20000, 1000])
names = np.array(["steady", "mixed", "small"])
groups = np.repeat(names, sizes)
y = np.concatenate(
    [np.clip(rng.normal(0.3, 0.02, 20000), 0, 1), rng.integers(0, 2, 21000)]
).astype(float)
stds = np.array([0.02, 0.5, 0.5])  # public prior knowledge (e.g. last year's survey)
n = 300

# ---- one private release with the optimal design
sampler = DPStratifiedSampler(
    epsilon=1.0, total_sample_size=n, stratum_stds=dict(zip(names, stds)), random_state=0
).fit(groups)
order = [list(sampler.classes_).index(k) for k in names]
for name, h in zip(names, order):
    print(
        f"{name:>7}: N_h = {sampler.stratum_sizes_[h]:>5}, optimal n_h = "
        f"{sampler.sample_sizes_[h]:>3}, nominal budget eps_h = {sampler.nominal_epsilons_[h]:.2f}"
    )
estimate = sampler.estimate_mean(groups, y)
print(
    f"private estimate {estimate:.4f} (true mean {y.mean():.4f}, "
    f"design s.d. {np.sqrt(sampler.expected_variance_):.4f})"
)

# ---- the designs across privacy budgets
eps_grid = np.geomspace(0.05, 20, 40)
ney = neyman_allocation(n, sizes, stds)
prop = proportional_allocation(n, sizes)
ratios = {"Neyman": [], "proportional": [], "same n_h, noise at eps (no amplification)": []}
optimal = []
for eps in eps_grid:
    x = optimal_allocation(n, sizes, stds, eps)
    v = design_variance(x, sizes, stds, eps)
    optimal.append(x)
    ratios["Neyman"].append(design_variance(ney, sizes, stds, eps) / v)
    ratios["proportional"].append(design_variance(prop, sizes, stds, eps) / v)
    # naive: every stratum's noise at eps itself (valid, but wastes the amplification)
    w = sizes / sizes.sum()
    naive = np.sum(w**2 * (stds**2 * (1 / x - 1 / sizes) + mechanism_variance(eps) / x**2))
    ratios["same n_h, noise at eps (no amplification)"].append(naive / v)
optimal = np.array(optimal)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
for label, values in ratios.items():
    ax1.plot(eps_grid, values, label=label)
ax1.axhline(1, color="k", lw=0.8)
ax1.set(
    xscale="log",
    yscale="log",
    xlabel="privacy budget epsilon",
    ylabel="variance / variance of the optimal design",
    title="Cost of a privacy-unaware design (Laplace)",
)
ax1.legend()
for h, name in enumerate(names):
    ax2.plot(eps_grid, optimal[:, h], label=f"{name} (Neyman: {ney[h]})")
ax2.set(
    xscale="log",
    yscale="log",
    xlabel="privacy budget epsilon",
    ylabel="optimal n_h",
    title=f"Optimal integer design, n = {n}",
)
ax2.legend()
fig.tight_layout()
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
fig.savefig(out, dpi=120)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/dp_stratified_sampling_thumb.png"
