"""Digit task streams for continual learning (LwI): split, permuted and rotated digits."""

import numbers

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import Interval, Options, validate_params

from ..utils import check_random_state
from ..utils._param_validation import OPEN_UNIT_INTERVAL, POSITIVE_INT


@validate_params(
    {
        "n_tasks": [Options(numbers.Integral, {1, 2, 5})],
        "test_size": [OPEN_UNIT_INTERVAL],
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


def _digit_task_stream(transforms, test_size, random_state):
    """One task per transform of the 8x8 digits; task ``k`` relabels digit ``d`` as
    ``10 k + d`` (disjoint label sets). Pixels are standardised with one mean and one
    standard deviation, those of the untransformed training images (the first task's)."""
    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=test_size, stratify=y, random_state=random_state
    )
    mean, std = X_tr.mean(), X_tr.std()
    parts = {"train": ([], [], []), "test": ([], [], [])}
    for k, transform in enumerate(transforms):
        for name, (X_part, y_part) in (("train", (X_tr, y_tr)), ("test", (X_te, y_te))):
            Xs, ys, ts = parts[name]
            Xs.append((transform(X_part) - mean) / std)
            ys.append(y_part + 10 * k)
            ts.append(np.full(len(y_part), k, dtype=np.int64))
    (Xa, ya, ta), (Xb, yb, tb) = (
        [np.concatenate(p) for p in parts[name]] for name in ("train", "test")
    )
    return Xa, Xb, ya, yb, ta, tb


_STREAM_PARAMS = {
    "n_tasks": [POSITIVE_INT],
    "test_size": [OPEN_UNIT_INTERVAL],
    "random_state": ["random_state"],
}


@validate_params(_STREAM_PARAMS, prefer_skip_nested_validation=True)
def load_permuted_digits(*, n_tasks=10, test_size=0.3, random_state=0):
    """Permuted digits: every task is the 10 digits under its own fixed pixel permutation.

    Task 0 is the plain 8x8 digits, task ``k >= 1`` permutes the 64 pixels by a permutation
    drawn from ``random_state``. Labels are made disjoint across tasks: digit ``d`` of task
    ``k`` has label ``10 k + d``, so a continual learner gets one 10-class head per task.
    The same train/test split of the images (stratified) is used in every task. Pixels are
    standardised with the mean and standard deviation of all training pixels (one scalar
    each, the same for every task). Nothing is downloaded.

    Parameters
    ----------
    n_tasks : int, default=10
    test_size : float in (0, 1), default=0.3
    random_state : int, RandomState instance or None, default=0
        Seed of the train/test split and of the permutations.

    Returns
    -------
    X_train, X_test : ndarray of shape (n_tasks * n, 64)
    y_train, y_test : ndarray of shape (n_tasks * n,)
        Labels ``10 * task + digit``.
    task_train, task_test : ndarray of shape (n_tasks * n,)
        Task of each row; rows are grouped by task, in order.

    See Also
    --------
    load_rotated_digits : tasks that share more features (rotations).
    load_split_digits : tasks of disjoint digit classes.

    Examples
    --------
    >>> from sklearn_icml.datasets import load_permuted_digits
    >>> X_tr, X_te, y_tr, y_te, t_tr, t_te = load_permuted_digits(n_tasks=3)
    >>> X_tr.shape, int(y_tr.max()), sorted(set(t_tr.tolist()))
    ((3771, 64), 29, [0, 1, 2])
    """
    rng = check_random_state(random_state)
    split_seed = rng.randint(np.iinfo(np.int32).max)
    perms = [np.arange(64)] + [rng.permutation(64) for _ in range(n_tasks - 1)]
    return _digit_task_stream([lambda X, p=p: X[:, p] for p in perms], test_size, split_seed)


@validate_params(
    {**_STREAM_PARAMS, "max_angle": [Interval(numbers.Real, 0, 360, closed="both")]},
    prefer_skip_nested_validation=True,
)
def load_rotated_digits(*, n_tasks=10, max_angle=90.0, test_size=0.3, random_state=0):
    """Rotated digits: every task is the 10 digits rotated by its own angle.

    Task ``k`` rotates the 8x8 images by ``k * max_angle / (n_tasks - 1)`` degrees
    (bilinear, same size, zero outside), so neighbouring tasks share most of their
    features. Labels are disjoint across tasks (``10 k + d``), the train/test split of the
    images is the same in every task, and pixels are standardised with one mean and one
    standard deviation (those of the unrotated training images). Nothing is downloaded.

    Parameters
    ----------
    n_tasks : int, default=10
    max_angle : float in [0, 360], default=90.0
        Rotation of the last task, in degrees.
    test_size : float in (0, 1), default=0.3
    random_state : int, RandomState instance or None, default=0
        Seed of the train/test split.

    Returns
    -------
    X_train, X_test : ndarray of shape (n_tasks * n, 64)
    y_train, y_test : ndarray of shape (n_tasks * n,)
        Labels ``10 * task + digit``.
    task_train, task_test : ndarray of shape (n_tasks * n,)
        Task of each row; rows are grouped by task, in order.

    See Also
    --------
    load_permuted_digits : tasks that share no spatial structure.

    Examples
    --------
    >>> from sklearn_icml.datasets import load_rotated_digits
    >>> X_tr, X_te, y_tr, y_te, t_tr, t_te = load_rotated_digits(n_tasks=4)
    >>> X_tr.shape, sorted(set(y_tr[t_tr == 3].tolist()))[:3]
    ((5028, 64), [30, 31, 32])
    """
    from scipy.ndimage import rotate

    def rotation(angle):
        def apply(X):
            images = X.reshape(-1, 8, 8)
            out = rotate(images, angle, axes=(2, 1), reshape=False, order=1, mode="constant")
            return out.reshape(len(X), 64)
        return apply

    angles = [k * max_angle / max(n_tasks - 1, 1) for k in range(n_tasks)]
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    return _digit_task_stream([rotation(a) for a in angles], test_size, seed)
