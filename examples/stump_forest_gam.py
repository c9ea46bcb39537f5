"""
Fit a stump-forest GAM, read its shape functions, and plot them
===============================================================

The data are additive with known parts: a step in x0, a sine in x1, a parabola in x2, a step
in x3 and two pure-noise features. The stump forest recovers each part as a step function
with a handful of stumps, and the picture shows it.

Run: ``python examples/stump_forest_gam.py [output.png]``
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.model_selection import train_test_split

from sklearn_icml.datasets import make_additive_regression
from sklearn_icml.gam import StumpForestGAMRegressor

X, y, f = make_additive_regression(6000, random_state=0)
X = pd.DataFrame(X, columns=["step", "sine", "parabola", "neg_step", "noise_a", "noise_b"])
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=1 / 3, random_state=0)

model = StumpForestGAMRegressor(
    n_stumps=60, max_iter=10, l2_reg=1.0, min_samples_leaf=20, random_state=0
).fit(X_tr, y_tr)
stumps = GradientBoostingRegressor(max_depth=1, n_estimators=500, random_state=0).fit(X_tr, y_tr)


def rmse(pred):
    return np.sqrt(np.mean((pred - y_te) ** 2))


n_used = int(np.sum(model.features_ >= 0))
print(f"stump forest : test RMSE {rmse(model.predict(X_te)):.4f} with {n_used} stumps "
      f"({3 * n_used + 1} parameters)")
print(f"boosted stumps: test RMSE {rmse(stumps.predict(X_te)):.4f} with 500 stumps")
print(f"objective per iteration: {np.round(model.objective_history_, 2).tolist()}")
for j, (thresholds, values) in model.shape_functions().items():
    print(f"  {X.columns[j]:>9}: {thresholds.size + 1:2d} pieces, range "
          f"[{values.min():+.2f}, {values.max():+.2f}]")

# additivity: the prediction is the intercept plus one term per feature
contrib = model.feature_contributions(X_te.iloc[:3])
print(f"first test row: {model.intercept_:.3f} + {contrib[0].round(3).tolist()} = "
      f"{model.predict(X_te.iloc[:3])[0]:.3f}")

fig = model.plot_shape_functions(ncols=3)
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
fig.savefig(out, dpi=110)
print(f"saved {out}")
