"""Demo: a DWM learns which of four data sources help a regression on the target source."""

from . import register_demo


@register_demo(
    "DWMRegressor",
    what="linear learner on 4 mixed sources (A target, B noisy, C opposite, D no signal), "
    "validation from A: test MSE against uniform training and the last stage's weight shares",
    budget_s=30,
)
def demo():
    import numpy as np

    from sklearn_icml.datasets import make_mixed_source_regression
    from sklearn_icml.weighting import DWMRegressor

    data = make_mixed_source_regression(n_per_source=250, n_features=5, random_state=0)
    common = {"hidden_layer_sizes": (), "learning_rate": 0.05, "max_iter": 450, "n_stages": 3,
              "random_state": 0}
    mse = {}
    for name, steps in (("uniform", 0), ("DWM", 50)):
        reg = DWMRegressor(**common, dwm_steps_per_stage=steps).fit(
            data.X, data.y, data.X_val, data.y_val, sample_features=data.source_onehot
        )
        mse[name] = float(np.mean((reg.predict(data.X_test) - data.y_test) ** 2))
    share = reg.stage_weight_stats_[-1]["weight_share"]
    figures = {"uniform test MSE": mse["uniform"], "DWM test MSE": mse["DWM"]}
    figures.update({f"weight share {s}": float(v) for s, v in zip(data.source_names, share)})
    return figures
