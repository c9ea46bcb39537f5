"""
LwI in a minute: learn 5 split-digits tasks one after another, with and without fusion
======================================================================================

Digits arrive as 5 tasks of 2 classes ({0, 1}, {2, 3}, ...). ``LwIClassifier`` learns each
task with one ``partial_fit`` call: a new head on a shared MLP, LwF distillation from the
previous network, and (LwI) a fusion of the old and new networks that averages matched
similar units in the first layer and pairs dissimilar units in the last hidden layer. The
baselines are options of the same estimator: ``fusion=False`` (LwF) and ``fusion=False,
kd_lambda=0`` (fine-tuning). The figure shows the task-agnostic accuracy on every task
seen so far after each task.

Run: ``python examples/lwi_continual_learning.py [out.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_icml.continual import LwIClassifier  # noqa: E402
from sklearn_icml.datasets import load_split_digits  # noqa: E402

X_tr, X_te, y_tr, y_te, t_tr, t_te = load_split_digits(n_tasks=5)
methods = {
    "fine-tuning": {"fusion": False, "kd_lambda": 0.0},
    "LwF": {"fusion": False},
    "LwI": {},
}
curves = {}
for name, kwargs in methods.items():
    clf = LwIClassifier(hidden_layer_sizes=(256, 256), max_epochs=15, random_state=0, **kwargs)
    seen_acc = []
    for task in range(5):
        clf.partial_fit(X_tr[t_tr == task], y_tr[t_tr == task], task_id=task)
        seen = t_te <= task
        seen_acc.append(np.mean(clf.predict(X_te[seen]) == y_te[seen]))  # task-agnostic
    taw = np.mean(clf.predict(X_te, task_id=t_te) == y_te)  # task id given
    curves[name] = seen_acc
    print(f"{name:12s} after 5 tasks: task-aware acc {taw:.3f}, "
          f"task-agnostic acc {seen_acc[-1]:.3f}")

fig, ax = plt.subplots(figsize=(5, 3.5))
for name, acc in curves.items():
    ax.plot(range(1, 6), acc, marker="o", label=name)
ax.set_xlabel("tasks learned")
ax.set_ylabel("task-agnostic accuracy on seen tasks")
ax.set_xticks(range(1, 6))
ax.legend()
fig.tight_layout()
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
fig.savefig(out, dpi=100)
print(f"saved {Path(out).name}")

# sphinx_gallery_thumbnail_path = "_static/figures/lwi_continual_learning_thumb.png"
