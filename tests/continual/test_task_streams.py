"""Permuted and rotated digit streams: disjoint labels, one transform per task."""

import numpy as np
import pytest

from sklearn_icml.datasets import load_permuted_digits, load_rotated_digits


def _column_matches(base, moved):
    """``eq[j, i]``: column ``j`` of ``moved`` equals column ``i`` of ``base``."""
    return (moved[:, :, None] == base[:, None, :]).all(axis=0)


def test_permuted_digits_tasks_are_pixel_permutations_of_task_0():
    X_tr, X_te, y_tr, y_te, t_tr, t_te = load_permuted_digits(n_tasks=3, random_state=1)
    n_tr, n_te = np.sum(t_tr == 0), np.sum(t_te == 0)
    assert X_tr.shape == (3 * n_tr, 64) and X_te.shape == (3 * n_te, 64)
    np.testing.assert_array_equal(t_tr, np.repeat([0, 1, 2], n_tr))
    base_tr, base_te = X_tr[t_tr == 0], X_te[t_te == 0]
    for k in (1, 2):
        eq = _column_matches(base_tr, X_tr[t_tr == k])
        assert eq.any(axis=1).all()  # every pixel of task k is a pixel of task 0
        unique = eq.sum(axis=1) == 1  # (constant pixels match several)
        source = eq.argmax(axis=1)
        assert unique.sum() > 40 and np.any(source[unique] != np.flatnonzero(unique))
        # the same permutation in the test set
        np.testing.assert_array_equal(X_te[t_te == k][:, unique], base_te[:, source[unique]])
        np.testing.assert_array_equal(y_tr[t_tr == k], y_tr[t_tr == 0] + 10 * k)
    # standardised with the training pixels' mean and standard deviation
    assert abs(base_tr.mean()) < 1e-12 and abs(base_tr.std() - 1) < 1e-12


def test_rotated_digits_angles_and_labels():
    X_tr, _, y_tr, _, t_tr, _ = load_rotated_digits(n_tasks=3, max_angle=180.0)
    first, last = X_tr[t_tr == 0].reshape(-1, 8, 8), X_tr[t_tr == 2].reshape(-1, 8, 8)
    # 180 degrees: the image turned upside down and mirrored
    np.testing.assert_allclose(last, first[:, ::-1, ::-1], atol=1e-9)
    assert set(np.unique(y_tr[t_tr == 1])) == set(range(10, 20))
    X0, *_ = load_rotated_digits(n_tasks=2, max_angle=0.0)
    np.testing.assert_allclose(X0[: len(X0) // 2], X0[len(X0) // 2:])


def test_same_seed_same_stream_and_bad_parameters():
    a = load_permuted_digits(n_tasks=2, random_state=3)
    b = load_permuted_digits(n_tasks=2, random_state=3)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    with pytest.raises(ValueError, match="n_tasks"):
        load_permuted_digits(n_tasks=0)
    with pytest.raises(ValueError, match="max_angle"):
        load_rotated_digits(max_angle=400)
