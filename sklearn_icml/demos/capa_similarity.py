"""Demo: CAPA between four scikit-learn classifiers on the digits data (held-out half)."""

from . import register_demo


@register_demo(
    "CAPASimilarity",
    what="capa_matrix of 2 logistic models, kNN, GaussianNB on digits (held-out half)",
    budget_s=15,
)
def demo():
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_icml.metrics import capa_matrix

    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, random_state=0)
    models = {
        "lr_C1": make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)),
        "lr_C0.1": make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000)),
        "knn": KNeighborsClassifier(),
        "gnb": GaussianNB(),
    }
    probas = [m.fit(X_tr, y_tr).predict_proba(X_te) for m in models.values()]
    matrix = capa_matrix(y_te, probas)
    off = matrix + np.diag(np.full(len(models), -np.inf))
    a, b = np.unravel_index(np.argmax(off), off.shape)
    names = list(models)
    return {
        "most similar pair": f"{names[a]}~{names[b]}",
        "capa": float(matrix[a, b]),
        "self-capa lr_C1": float(matrix[0, 0]),
    }
