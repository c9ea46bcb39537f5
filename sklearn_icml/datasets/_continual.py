"""Split digits: a small class-incremental task stream for continual learning (LwI)."""

import numbers

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import Interval, Options, validate_params


@validate_params(
    {
        "n_tasks": [Options(numbers.Integral, {1, 2, 5})],
        "test_size": [Interval(numbers.Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def load_split_digits(*, n_tasks=5, test_size=0.3, random_state=0):
    """The bundled digits split into tasks of disjoint classes, standardised.

    Classes ``0..9`` are cut into ``n_tasks`` consecutive groups ({0, 1}, {2, 3}, ... for 5
    tasks). The rows are split into train and test sets, stratified by class; the features
    are standardised with the training set's statistics (constant pixels stay 0). Nothing is
    downloaded: the data ship with scikit-learn.

    Parameters
    ----------
    n_tasks : int, default=5
        Number of tasks; must divide 10 into groups of at least 2 classes (1, 2 or 5).
    test_size : float in (0, 1), default=0.3
    random_state : int, RandomState instance or None, default=0
        Seed of the train/test split.

    Returns
    -------
    X_train, X_test : ndarray of shape (n, 64)
    y_train, y_test : ndarray of shape (n,)
        Digit labels.
    task_train, task_test : ndarray of shape (n,)
        Task index of each row (``y // (10 // n_tasks)``). Rows are sorted by task (stably),
        so the tasks appear in the order 0, 1, ... (the order in which
        ``LwIClassifier.fit(..., task_ids=)`` trains them).

    Examples
    --------
    >>> from sklearn_icml.datasets import load_split_digits
    >>> X_tr, X_te, y_tr, y_te, t_tr, t_te = load_split_digits()
    >>> X_tr.shape, sorted(set(t_tr.tolist()))
    ((1257, 64), [0, 1, 2, 3, 4])
    """
    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=test_size, stratify=y, random_state=random_state
    )
    scaler = StandardScaler().fit(X_tr)
    per_task = 10 // n_tasks
    t_tr, t_te = (y_tr // per_task).astype(np.int64), (y_te // per_task).astype(np.int64)
    # rows grouped by task (stable), so that fit(..., task_ids=) trains tasks 0, 1, ...
    o_tr, o_te = np.argsort(t_tr, kind="stable"), np.argsort(t_te, kind="stable")
    return (
        scaler.transform(X_tr)[o_tr], scaler.transform(X_te)[o_te], y_tr[o_tr], y_te[o_te],
        t_tr[o_tr], t_te[o_te],
    )
