"""Clustering accuracy (best one-to-one matching of clusters to classes)."""

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.utils._param_validation import validate_params


@validate_params(
    {"y_true": ["array-like"], "y_pred": ["array-like"]}, prefer_skip_nested_validation=True
)
def clustering_accuracy(y_true, y_pred):
    """Fraction of samples whose cluster is matched to their class by the Hungarian method.

    Examples
    --------
    >>> from sklearn_icml.cluster._metrics import clustering_accuracy
    >>> clustering_accuracy([0, 0, 1, 1, 2], [1, 1, 0, 0, 0])
    0.8
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise ValueError(
            f"y_true and y_pred must be 1-D of equal length. Got shapes {y_true.shape} and "
            f"{y_pred.shape} instead."
        )
    _, t = np.unique(y_true, return_inverse=True)
    _, p = np.unique(y_pred, return_inverse=True)
    table = np.zeros((p.max() + 1, t.max() + 1), dtype=np.int64)
    np.add.at(table, (p, t), 1)
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / y_true.shape[0])
