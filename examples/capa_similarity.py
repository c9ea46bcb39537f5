"""
How alike are your classifiers? CAPA between five scikit-learn models on digits
===============================================================================

Two models that are both 95 % accurate agree on most items just because both are right;
CAPA (chance adjusted probabilistic agreement) subtracts that chance agreement, and compares
the probability each model puts on every option, so shared *mistakes* count most.

Run: ``python examples/capa_similarity.py [output.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.metrics import CAPASimilarity

X, y = load_digits(return_X_y=True)
models = [
    ("LR C=1", make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))),
    ("LR C=0.1", make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))),
    ("kNN", KNeighborsClassifier()),
    ("GaussianNB", GaussianNB()),
    ("forest", RandomForestClassifier(n_estimators=100, random_state=0)),
]
# out-of-fold probabilities from 5-fold cross-validation, then pairwise CAPA
sim = CAPASimilarity(estimators=models, cv=5).fit(X, y)
for name, acc in zip(sim.names_, sim.accuracy_):
    print(f"{name:>10}: out-of-fold accuracy {acc:.3f}")
print("pairwise CAPA:\n", np.round(sim.similarity_, 3))

fig, ax = plt.subplots(figsize=(5.5, 4.5))
image = ax.imshow(sim.similarity_, cmap="viridis")
ax.set_xticks(range(len(models)), sim.names_, rotation=45, ha="right")
ax.set_yticks(range(len(models)), sim.names_)
for i in range(len(models)):
    for j in range(len(models)):
        value = sim.similarity_[i, j]
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", color="k" if value > 0.6 else "w")
fig.colorbar(image, label="CAPA (kappa_p)")
ax.set_title("CAPA between classifiers on digits")
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "capa_similarity.png"
fig.savefig(out, dpi=120)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/capa_similarity_thumb.png"
