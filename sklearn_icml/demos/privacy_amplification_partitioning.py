"""Demo: privacy amplification by balanced iteration subsampling and model splitting."""

from . import register_demo


@register_demo(
    "BalancedIterationSampler",
    what="epsilon of balanced iteration vs Poisson subsampling (sigma 1, T 100, k 10), "
    "model splitting (sigma 5, 100 rounds, d = 8), DP-SGD at (8, 1e-5) on breast cancer",
    budget_s=30,
)
def demo():
    import importlib.util

    import numpy as np

    from sklearn_icml.privacy import (
        bis_epsilon,
        default_orders,
        find_noise_multiplier,
        model_split_rdp,
        rdp_to_epsilon,
    )

    delta = 1e-5
    figures = {"BIS eps (sigma 1, T 100, k 10)": bis_epsilon(1.0, 100, 10, delta)}
    exact = default_orders("exact")
    # the Poisson baseline's RDP: dp_accounting when installed, else the same sampled
    # Gaussian RDP from the model-splitting formula with one part (equal at integer orders)
    if importlib.util.find_spec("dp_accounting") is not None:
        from sklearn_icml.privacy import poisson_rdp

        rdp = poisson_rdp(1.0, 0.1, 100, orders=exact)
    else:
        rdp = model_split_rdp(1.0, 1, orders=exact, sample_rate=0.1, num_rounds=100)
    figures["Poisson eps (q 0.1, 100 steps)"] = rdp_to_epsilon(rdp, exact, delta)[0]
    for d in (1, 8):
        split = model_split_rdp(5.0, d, orders=exact, num_rounds=100)
        figures[f"split eps d={d}"] = rdp_to_epsilon(split, exact, delta)[0]
    figures["sigma for eps 8 (T 200, k 20)"] = find_noise_multiplier(
        8.0, delta, num_steps=200, num_selected=20
    )
    if importlib.util.find_spec("torch") is not None:
        from sklearn.datasets import load_breast_cancer
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler

        from sklearn_icml.privacy import DPSGDClassifier

        X, y = load_breast_cancer(return_X_y=True)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
        scaler = StandardScaler().fit(X_tr)
        clf = DPSGDClassifier(target_epsilon=8.0, random_state=0)
        clf.fit(scaler.transform(X_tr), y_tr)
        figures["DP-SGD test accuracy"] = float(
            np.round(clf.score(scaler.transform(X_te), y_te), 4)
        )
        figures["DP-SGD eps"] = clf.epsilon_
    return figures
