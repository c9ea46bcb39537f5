"""Demo: LwI vs LwF on split digits (3 tasks, 1 seed, short training: a small run)."""

from . import register_demo


@register_demo(
    "LwIClassifier",
    what="LwF and LwI (fusion after every task) on 3 split-digits tasks, 10 epochs, 1 seed",
    budget_s=20,
)
def demo():
    import numpy as np

    from sklearn_icml.continual import LwIClassifier
    from sklearn_icml.datasets import load_split_digits

    X_tr, X_te, y_tr, y_te, t_tr, t_te = load_split_digits(n_tasks=5)
    keep_tr, keep_te = t_tr < 3, t_te < 3
    X_tr, y_tr, t_tr = X_tr[keep_tr], y_tr[keep_tr], t_tr[keep_tr]
    X_te, y_te, t_te = X_te[keep_te], y_te[keep_te], t_te[keep_te]
    figures = {}
    for name, kwargs in (("LwF", {"fusion": False}), ("LwI", {})):
        clf = LwIClassifier(hidden_layer_sizes=(64, 64), max_epochs=10, random_state=0,
                            **kwargs).fit(X_tr, y_tr, task_ids=t_tr)
        figures[f"{name} TAw"] = float(np.mean(clf.predict(X_te, task_id=t_te) == y_te))
        figures[f"{name} TAg"] = float(np.mean(clf.predict(X_te) == y_te))
    return figures
