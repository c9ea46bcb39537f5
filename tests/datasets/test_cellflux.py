"""Data generators of the CellFlux experiments (E1, E2, E3)."""

import numpy as np
import pytest

from sklearn_icml.datasets import (
    make_batch_shift_1d,
    make_digits_screen,
    make_gaussian_perturbations,
)


def test_batch_shift_1d_groups():
    X, y, b = make_batch_shift_1d(3000, random_state=0)
    assert X.shape == (12000, 1)
    for off in (-2.0, 2.0):
        ctrl = X[(y == "control") & (b == off), 0]
        treat = X[(y == "A") & (b == off), 0]
        assert ctrl.size == treat.size == 3000
        assert ctrl.mean() == pytest.approx(off, abs=0.05)
        assert treat.mean() == pytest.approx(off + 1.5, abs=0.05)
        assert treat.std() == pytest.approx(0.5, abs=0.03)
    X2, _, _ = make_batch_shift_1d(3000, random_state=0)
    assert np.array_equal(X, X2)


def test_gaussian_perturbations_moments():
    X, y = make_gaussian_perturbations(4000, random_state=0)
    assert X.shape == (16000, 8)
    for k in range(3):
        Z = X[y == f"P{k}"]
        expected = np.zeros(8)
        expected[k] = 3.0
        assert np.allclose(Z.mean(axis=0), expected, atol=0.06)
        assert Z[:, k].std() == pytest.approx(0.5, abs=0.03)
        assert np.delete(Z.std(axis=0), k) == pytest.approx(np.ones(7), abs=0.05)


def test_digits_screen_perturbations_and_offsets():
    X, y, b, digit = make_digits_screen(random_state=0)
    from sklearn.datasets import load_digits

    raw = load_digits().images
    i = np.flatnonzero(y == "control")[0]
    assert np.allclose(X[i].reshape(8, 8), raw[i] + [0, 2, 4][b[i]])
    j = np.flatnonzero(y == "P1")[0]
    img = X[j].reshape(8, 8) - [0, 2, 4][b[j]]
    assert np.allclose(img[:, 1:], raw[j][:, :-1]) and np.allclose(img[:, 0], 0)
    j = np.flatnonzero(y == "P2")[0]
    img = X[j].reshape(8, 8) - [0, 2, 4][b[j]]
    assert np.allclose(img[1:], raw[j][:-1]) and np.allclose(img[0], 0)
    j = np.flatnonzero(y == "P3")[0]
    img = X[j].reshape(8, 8) - [0, 2, 4][b[j]]
    assert np.all(img >= raw[j]) and img[3, 3] == raw[j][2:5, 2:5].max()
    assert np.array_equal(digit, load_digits().target)
    Xi, *_ = make_digits_screen(images=True, random_state=0)
    assert Xi.shape == (1797, 1, 8, 8) and np.allclose(Xi.reshape(1797, 64), X)


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_per_batch"):
        make_batch_shift_1d(0)
    with pytest.raises(ValueError, match="std"):
        make_batch_shift_1d(5, std=0.0)
    with pytest.raises(ValueError, match="n_perturbations"):
        make_gaussian_perturbations(5, n_features=2, n_perturbations=3)
    with pytest.raises(ValueError, match="control_fraction"):
        make_digits_screen(control_fraction=1.5)
