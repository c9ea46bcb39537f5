"""
Flat-LoRA in a minute: fine-tune a pre-trained MLP with LoRA and with Flat-LoRA
===============================================================================

A small MLP is pre-trained on clean digits, then only its LoRA factors are trained on
noisy digits, with plain LoRA (``rho=0``) and with Flat-LoRA (``rho=0.1``: the frozen weights
are perturbed by filter-wise Gaussian noise at every step). The figure shows the loss of each
fine-tuned model along random filter-wise perturbations of growing strength (how flat the
solution is) and the accuracy on test images with more noise than in training.

Run: ``python examples/flat_lora.py [out.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from sklearn_icml.lora import FlatLoRAClassifier, FlatLoRAPerturbation  # noqa: E402

torch.set_num_threads(1)
X, y = load_digits(return_X_y=True)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
rng = np.random.RandomState(1)


def noisy(A, std):
    return ((A + std * rng.randn(*A.shape)) / 16).astype(np.float32)


train4, test4, test6 = noisy(X_tr, 4), noisy(X_te, 4), noisy(X_te, 6)

# 1. pre-train on clean images
torch.manual_seed(0)
pre = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.Adam(pre.parameters(), lr=1e-3)
Xc, yc = torch.from_numpy((X_tr / 16).astype(np.float32)), torch.from_numpy(y_tr)
for _ in range(30):
    for i in range(0, len(Xc), 64):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(pre(Xc[i : i + 64]), yc[i : i + 64]).backward()
        opt.step()

# 2. fine-tune the LoRA factors on noisy images, with and without Flat-LoRA
models = {}
for name, rho in (("LoRA", 0.0), ("Flat-LoRA (rho=0.1)", 0.1)):
    models[name] = FlatLoRAClassifier(
        module=pre, lora_rank=4, lora_alpha=8, learning_rate=3e-3, max_epochs=40, rho=rho,
        random_state=0,
    ).fit(train4, y_tr)
    print(f"{name:22s} noisy-4 test acc {models[name].score(test4, y_te):.3f}   "
          f"noisy-6 test acc {models[name].score(test6, y_te):.3f}")

# 3. flatness: loss increase under random filter-wise perturbations of strength rho
rhos = [0.05, 0.1, 0.2, 0.3]
batch = (torch.from_numpy(train4), torch.from_numpy(y_tr))
fig, ax = plt.subplots(figsize=(5, 3.5))
for name, clf in models.items():
    probe = FlatLoRAPerturbation(random_state=0)
    sharp = [probe.expected_sharpness(clf.module_, torch.nn.functional.cross_entropy, batch,
                                      n_samples=16, rho=r) for r in rhos]
    ax.plot(rhos, sharp, marker="o", label=name)
ax.set_xlabel("perturbation strength rho (filter-wise)")
ax.set_ylabel("expected loss increase (train)")
ax.set_title("Flatness of LoRA fine-tuned solutions")
ax.legend()
fig.tight_layout()
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("flat_lora.png")
fig.savefig(out, dpi=120)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/flat_lora_thumb.png"
