"""Demo: a stump-forest GAM on a generated additive regression with known shape functions."""

from . import register_demo


@register_demo(
    "StumpForestGAMRegressor",
    what="60 jointly optimised stumps on 6-feature additive data (n=6000, 1/3 test)",
    budget_s=30,
)
def demo():
    import numpy as np
    from sklearn.model_selection import train_test_split

    from sklearn_icml.datasets import make_additive_regression
    from sklearn_icml.gam import StumpForestGAMRegressor

    X, y, f = make_additive_regression(6000, random_state=0)
    X_tr, X_te, y_tr, y_te, _, f_te = train_test_split(X, y, f, test_size=1 / 3, random_state=0)
    model = StumpForestGAMRegressor(
        n_stumps=60, max_iter=10, l2_reg=1.0, min_samples_leaf=20, random_state=0
    ).fit(X_tr, y_tr)
    pred = model.predict(X_te)
    used = model.features_[model.features_ >= 0]
    return {
        "test RMSE (noise floor 0.5)": float(np.sqrt(np.mean((pred - y_te) ** 2))),
        "RMSE vs true f": float(np.sqrt(np.mean((pred - f_te) ** 2))),
        "parameters": int(3 * used.size + 1),
        "stumps on noise features": int(np.isin(used, [4, 5]).sum()),
    }
