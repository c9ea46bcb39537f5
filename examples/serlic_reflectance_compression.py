"""
Compress LiDAR reflectance losslessly with SerLiC and compare with classic compressors
======================================================================================

A sensor sweep is a point cloud plus one 8-bit reflectance per point. The geometry is coded
by another codec, so the decoder already has the points; SerLiC puts them back in the
order the sensor scanned them and codes each reflectance with a small Mamba model that has
seen the previous one. This script trains a codec on a few generated sweeps, codes a new
one, checks the round trip, compares the rate with zlib, bz2, lzma and an adaptive order-1
arithmetic coder, and draws where the bits go.

Run: ``python examples/serlic_reflectance_compression.py [output.png]``
"""

import bz2
import lzma
import sys
import time
import zlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.compression import AdaptiveContextCodec, ScanOrderSerializer, SerLiCCodec
from sklearn_icml.datasets import make_lidar_sweep

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
grid = {"n_lasers": 16, "n_azimuth": 512}

# training sweeps: (points, reflectance) pairs, points in file (random) order
train = [make_lidar_sweep(random_state=seed, **grid)[:2] for seed in range(4)]
points, r, oracle_bits, (v, u) = make_lidar_sweep(random_state=1000, **grid)

start = time.perf_counter()
codec = SerLiCCodec(**grid, window=128, max_epochs=12, batch_size=8, learning_rate=5e-3,
                    random_state=0)
codec.fit(train)
print(f"trained {codec.n_params_} parameters in {time.perf_counter() - start:.0f} s "
      f"({codec.n_steps_} steps); train bpp per epoch:",
      " ".join(f"{b:.2f}" for b in codec.train_bpp_))

blob = codec.encode((points, r))
decoded = codec.decode(blob, points)
assert np.array_equal(decoded, r), "the round trip must be exact"
print(f"{r.size} points -> {len(blob)} bytes, lossless: {np.array_equal(decoded, r)}")

# the same bytes in scan order for the general-purpose compressors
scan = r[ScanOrderSerializer(**grid).get_order(points)].tobytes()
adaptive = AdaptiveContextCodec(**grid).fit(train)
rates = {
    "raw": 8.0,
    "zlib": 8 * len(zlib.compress(scan, 9)) / r.size,
    "bz2": 8 * len(bz2.compress(scan, 9)) / r.size,
    "lzma": 8 * len(lzma.compress(scan, preset=9 | lzma.PRESET_EXTREME)) / r.size,
    "adaptive\norder-1": 8 * len(adaptive.encode((points, r))) / r.size,
    "SerLiC": 8 * len(blob) / r.size,
    "oracle": float(oracle_bits.mean()),
}
for name, bpp in rates.items():
    print(f"{name.replace(chr(10), ' '):>18s}: {bpp:.3f} bits per point")

# where the bits go: per-point code length on the (laser, azimuth) grid
bits = codec._point_bits(points, r)
image = np.full((grid["n_lasers"], grid["n_azimuth"]), np.nan)
image[v, u] = bits
refl = np.full_like(image, np.nan)
refl[v, u] = r

fig, axes = plt.subplots(3, 1, figsize=(9, 8), gridspec_kw={"height_ratios": [1.3, 1, 1]})
colors = ["0.6"] * (len(rates) - 2) + ["C3", "C2"]
axes[0].bar(list(rates), list(rates.values()), color=colors)
axes[0].set_ylabel("bits per point")
axes[0].set_title("Lossless reflectance coding of a new sweep (lower is better)")
for k, value in enumerate(rates.values()):
    axes[0].text(k, value + 0.1, f"{value:.2f}", ha="center", fontsize=8)
im = axes[1].imshow(refl, aspect="auto", cmap="viridis", interpolation="nearest")
axes[1].set_title("reflectance on the scan grid")
axes[1].set_ylabel("laser")
fig.colorbar(im, ax=axes[1], pad=0.01)
im = axes[2].imshow(image, aspect="auto", cmap="magma", interpolation="nearest", vmax=10)
axes[2].set_title("SerLiC code length per point (bits; white: no return)")
axes[2].set_ylabel("laser")
axes[2].set_xlabel("azimuth bin")
fig.colorbar(im, ax=axes[2], pad=0.01)
fig.tight_layout()
fig.savefig(out, dpi=110)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/serlic_reflectance_compression_thumb.png"
