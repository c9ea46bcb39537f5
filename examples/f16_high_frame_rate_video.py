"""
F-16 on rotating-dot videos: why 16 frames per second, and reading a model at lower rates
=========================================================================================

A dot circles the frame centre at 1-6 revolutions per second. Its radius is visible in any
frame; its direction of rotation only at 16 FPS (Bayes accuracy 0.5 at 1 FPS, 0.6 at 2-8 FPS,
1.0 at 16 FPS). This script trains ``F16VideoClassifier`` at 16 FPS on the radius task, reads
the same model at 8, 4, 2 and 1 FPS (frame repetition, no retraining), and plots the
accuracies next to the direction task's Bayes limits. About 30 s on a laptop.

Run: ``python examples/f16_high_frame_rate_video.py [output.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_icml.datasets import make_rotating_dot_videos  # noqa: E402
from sklearn_icml.datasets._video import direction_bayes_accuracy  # noqa: E402
from sklearn_icml.video import F16ClipCompressor, F16VideoClassifier, patch_encode  # noqa: E402

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")

# 1. the aligner alone: 2 s of 16-FPS frame tokens -> 2 clips of 4 tokens each
X, y = make_rotating_dot_videos(400, duration_s=1, task="radius", random_state=0)
X_test, y_test = make_rotating_dot_videos(300, duration_s=1, task="radius", random_state=1)
frames = patch_encode(X[:2], patch_size=4)  # (2 videos, 16 frames, 16 tokens, 16 channels)
tokens = F16ClipCompressor(hidden_dim=8, random_state=0).fit_transform(frames)
print(f"16 frames of 16 tokens -> clip tokens of shape {tokens.shape[1:]} per video")

# 2. the classifier, trained once at 16 FPS and read at lower rates
clf = F16VideoClassifier(hidden_dim=16, n_layers=1, max_epochs=15, random_state=0).fit(X, y)
rates = [16, 8, 4, 2, 1]
acc = [clf.score(X_test, y_test, inference_fps=r) for r in rates]
for r, a in zip(rates, acc):
    print(f"radius task, trained at 16 FPS, read at {r:2d} FPS: accuracy {a:.3f}")
print(f"tokens per second of video at every rate: {clf.n_tokens_per_clip_}")

fig, ax = plt.subplots(figsize=(5.5, 3.6))
ax.plot(rates, acc, "o-", label="radius task: 16-FPS model read at lower fps")
grid = np.array([1, 2, 4, 8, 16])
ax.step(grid, [direction_bayes_accuracy(r) for r in grid], where="post", color="k",
        label="direction task: Bayes limit")
ax.axhline(1 / 3, color="grey", ls=":", label="radius chance")
ax.set_xscale("log", base=2)
ax.set_xlabel("frames per second")
ax.set_ylabel("accuracy")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(out, dpi=120)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/f16_high_frame_rate_video_thumb.png"
