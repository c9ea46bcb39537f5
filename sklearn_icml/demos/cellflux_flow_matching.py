"""Demo: CellFlux keeps the batch when transporting controls; noise-to-data flow loses it."""

from . import register_demo


@register_demo(
    "CellFlux",
    what="flow matching from same-batch controls on 1-D data with two batches (offsets -2, +2; "
    "scaled down): share of transported batch-+2 controls that stay in their batch, "
    "against the noise-to-data ablation",
    budget_s=20,
)
def demo():
    import numpy as np

    from sklearn_icml.datasets import make_batch_shift_1d
    from sklearn_icml.generative import CellFlux

    X, y, batch = make_batch_shift_1d(600, random_state=0)
    query = np.random.default_rng(1).normal(2.0, 0.5, (1000, 1))
    common = dict(hidden_layer_sizes=(32, 32), noise_level=0.0, cfg_scale=0.0, cond_drop_prob=0.0,
                  time_sampler="uniform", learning_rate=3e-3, batch_size=128, max_epochs=10,
                  n_sampling_steps=15, random_state=0)
    figures = {}
    runs = (("CellFlux", "control", "1.0", "3.49"), ("noise-to-data", "noise", "0.5", "1.5"))
    for name, source, frac, mean in runs:
        model = CellFlux(source=source, **common).fit(X, y, batch=batch)
        out = model.predict(query, perturbation="A")
        figures[f"{name} frac > 1 (exact {frac})"] = float(np.mean(out > 1))
        figures[f"{name} mean (exact {mean})"] = float(out.mean())
    return figures
