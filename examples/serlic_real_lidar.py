"""
Code the intensity of a real airborne LiDAR scan with SerLiC
============================================================

laspy's source distribution carries a flight line over Autzen Stadium (110,000 points,
8-bit intensity, GPS time, scan angle, scan direction, up to four returns per pulse).
SerLiC's serialisation for an airborne scanner puts the points in the order the scanner
acquired them (GPS time, then return number); the codec is trained on the first part of
the flight and codes the next part, compared with lzma on the same values and order and
with the adaptive order-1 coder. A small slice and a short training keep this quick, and
with so little training (20,000 points, 10 epochs) lzma codes this intensity better (about
7.1 against 7.5 bits per point); the benchmark's codec, trained on 55,000 points, beats
lzma by about 0.1 bits per point on the second half of the flight.

Run: ``python examples/serlic_real_lidar.py [output.png]``
"""

import lzma
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.compression import AdaptiveContextCodec, AirborneScanSerializer, SerLiCCodec
from sklearn_icml.datasets import load_lidar_sample

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
data = load_lidar_sample("autzen_trim")  # pulses (n, 8) and 8-bit intensity
order = AirborneScanSerializer().get_order(data.points)  # acquisition order
train_rows, test_rows = order[:20000], order[20000:30000]
train = (data.points[train_rows], data.intensity[train_rows])
test = (data.points[test_rows], data.intensity[test_rows])

codec = SerLiCCodec(scanner="airborne", n_azimuth=180, window=256, sequence_model="gru",
                    max_epochs=10, batch_size=16, learning_rate=3e-3, rho_scale=10.0,
                    random_state=0).fit([train])
blob = codec.encode(test)
assert np.array_equal(codec.decode(blob, test[0]), test[1])  # lossless

n = test[1].shape[0]
rates = {
    "SerLiC": 8 * len(blob) / n,
    "adaptive order-1": 8 * len(AdaptiveContextCodec(scanner="airborne", n_azimuth=180)
                                .encode(test)) / n,
    "lzma": 8 * len(lzma.compress(test[1].tobytes(), preset=9 | lzma.PRESET_EXTREME)) / n,
}
for name, bpp in rates.items():
    print(f"{name:>17}: {bpp:.3f} bits per point")

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.scatter(test[0][:, 0], test[0][:, 1], c=test[1], s=1, cmap="gray")
ax0.set(title="test part of the flight, intensity", xlabel="x (m)", ylabel="y (m)")
ax0.set_aspect("equal")
ax1.bar(list(rates), list(rates.values()), color=["C0", "C1", "C2"])
ax1.axhline(8, color="k", lw=0.8, ls="--")
ax1.set(title="coded intensity", ylabel="bits per point")
fig.tight_layout()
fig.savefig(out, dpi=100)

# sphinx_gallery_thumbnail_path = "_static/figures/serlic_real_lidar_thumb.png"
