"""
Multi-view clustering with PTIBClustering: view weights that need no tuning
===========================================================================

Four views of the same 500 documents (word counts over four vocabularies) are clustered
together. Views 0-2 carry less and less information about the 5 clusters; view 3 is pure
noise. PTIBClustering learns one weight per view from peer review (how much of the other
views' information survives the clustering one view proposes) and trust (how well a view's
own clustering agrees with the consensus), with no weight hyper-parameter.

Run: ``python examples/ptib_clustering.py [output.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import normalized_mutual_info_score
from sklearn.model_selection import train_test_split

from sklearn_icml.cluster import PTIBClustering
from sklearn_icml.datasets import make_multiview_counts


def accuracy(y, labels):
    """Share of samples whose cluster is matched to their class (Hungarian matching)."""
    table = np.zeros((labels.max() + 1, y.max() + 1))
    np.add.at(table, (labels, y), 1)
    rows, cols = linear_sum_assignment(-table)
    return table[rows, cols].sum() / y.size


# 120 documents per cluster: 500 to cluster, 100 held out as new documents for predict
all_Xs, all_y = make_multiview_counts(n_samples_per_cluster=120, n_clusters=5, random_state=0)
*parts, y, new_y = train_test_split(*all_Xs, all_y, test_size=100, stratify=all_y,
                                    random_state=0)
Xs, new_Xs = parts[0::2], parts[1::2]  # each view's training and held-out rows
print("views:", [X.shape for X in Xs])

# word counts: the relevant variable of the information bottleneck is the word
# (relevance="features", what the default relevance="auto" picks for integer counts;
# "neighbors", a random walk on each view's k-NN graph, is for real-valued views)
model = PTIBClustering(n_clusters=5, relevance="features", random_state=0).fit(Xs)
print(f"PTIB: ACC {accuracy(y, model.labels_):.3f}, "
      f"NMI {normalized_mutual_info_score(y, model.labels_):.3f}, "
      f"{model.n_iter_} outer iterations")
print("view weights:", np.round(model.view_weights_, 3))
print("trust scores:", np.round(model.trust_scores_, 3))
print("peer reviews:", np.round(model.peer_review_scores_, 3))

# each view alone (one view: PTIB is plain sequential IB)
for v, X in enumerate(Xs):
    alone = PTIBClustering(n_clusters=5, relevance="features", random_state=0).fit([X])
    print(f"view {v} alone: ACC {accuracy(y, alone.labels_):.3f}")

# new documents (the held-out ones, from the same clusters) are assigned by the same
# weighted information cost
new_labels = model.predict(new_Xs)
print(f"predict on {new_y.size} new documents: ACC {accuracy(new_y, new_labels):.3f}")

fig, (ax_w, ax_r) = plt.subplots(1, 2, figsize=(10, 4))
for v in range(len(Xs)):
    ax_w.plot(model.weight_history_[:, v], marker="o", label=f"view {v}")
ax_w.set_xlabel("outer iteration")
ax_w.set_ylabel("view weight")
ax_w.set_title("Weights learnt from peer review x trust")
ax_w.legend()
im = ax_r.imshow(model.review_matrix_, vmin=0, vmax=1, cmap="viridis")
ax_r.set_xticks(range(len(Xs)))
ax_r.set_yticks(range(len(Xs)))
ax_r.set_xlabel("reviewer view")
ax_r.set_ylabel("author view")
ax_r.set_title("Reviews (diagonal: none)")
fig.colorbar(im, ax=ax_r)
fig.tight_layout()
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
fig.savefig(out, dpi=100)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/ptib_clustering_thumb.png"
