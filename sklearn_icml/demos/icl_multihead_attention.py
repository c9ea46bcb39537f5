"""Demo: two-head softmax attention learns debiased GD in context (He et al., ICML 2025)."""

from . import register_demo


@register_demo(
    "MultiHeadSoftmaxICLRegressor",
    what="2-head attention, 300 Adam steps (batch 64) on d=3, L=20 tasks, vs GD and ridge",
    budget_s=30,
)
def demo():
    import numpy as np

    from sklearn_icml.neural import (
        LinearICLTaskSampler,
        MultiHeadSoftmaxICLRegressor,
        bayes_ridge_predict,
        debiased_gd_optimum,
        gd_predict,
        single_head_optimum,
    )

    d, L = 3, 20
    sampler = LinearICLTaskSampler(n_features=d, n_context=L)
    X, y = LinearICLTaskSampler(n_features=d, n_context=L, random_state=1).sample(5_000)
    model = MultiHeadSoftmaxICLRegressor(
        n_heads=2,
        sampler=sampler,
        max_iter=300,
        batch_size=64,
        learning_rate=1e-2,
        steps_per_epoch=100,
        n_jobs=1,
        random_state=0,
    ).fit()
    eta, _ = debiased_gd_optimum(d, L)
    pats = model.attention_patterns()
    return {
        "H=2 attention MSE": model.icl_mse(X, y),
        "debiased GD MSE": float(np.mean((gd_predict(X, eta=eta, debiased=True) - y) ** 2)),
        "Bayes ridge MSE": float(np.mean((bayes_ridge_predict(X) - y) ** 2)),
        "zero-sum |sum mu|/sum|mu|": pats["zero_sum"],
        "eta_eff 2|omega||mu|": pats["eta_eff"],
        "single-head optimum Ltilde (d=5, L=40)": single_head_optimum()[2],
    }
