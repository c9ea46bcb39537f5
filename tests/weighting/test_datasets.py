"""The data generators of the data-weighting experiments (sklearn_icml.datasets._weighting)."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_markov_languages, make_mixed_source_regression
from sklearn_icml.datasets._weighting import corrupt_labels


def test_mixed_sources_follow_their_definitions():
    d = make_mixed_source_regression(n_per_source=400, n_features=3, noise=0.0,
                                     noisy_source_noise=0.0, random_state=0)
    signal = d.X @ d.coef
    np.testing.assert_allclose(d.y[d.source == 0], signal[d.source == 0])
    np.testing.assert_allclose(d.y[d.source == 1], signal[d.source == 1])
    np.testing.assert_allclose(d.y[d.source == 2], -signal[d.source == 2])
    np.testing.assert_allclose(d.y[d.source == 3], 0.0)
    np.testing.assert_allclose(d.y_val, d.X_val @ d.coef)
    np.testing.assert_array_equal(d.source_onehot.argmax(axis=1), d.source)
    noisy = make_mixed_source_regression(n_per_source=4000, n_features=3, random_state=0)
    resid = noisy.y - noisy.X @ noisy.coef
    assert np.std(resid[noisy.source == 1]) == pytest.approx(2.0, rel=0.05)
    assert np.std(resid[noisy.source == 0]) == pytest.approx(0.1, rel=0.05)


def test_uniform_least_squares_estimates_a_quarter_of_the_coefficients():
    d = make_mixed_source_regression(n_per_source=5000, n_features=4, random_state=1)
    coef, *_ = np.linalg.lstsq(d.X, d.y, rcond=None)
    np.testing.assert_allclose(coef, d.coef / 4, atol=0.05)


def test_corrupt_labels():
    y = np.repeat(np.arange(10), 500)
    y0 = y.copy()
    noisy, corrupted = corrupt_labels(y, 0.4, random_state=0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(noisy != y, corrupted)
    assert corrupted.mean() == pytest.approx(0.4, abs=0.03)
    # the new label is uniform over the other classes
    counts = np.bincount(noisy[corrupted & (y == 0)], minlength=10)
    assert counts[0] == 0 and counts[1:].min() > 0.5 * counts[1:].mean()
    labels, _ = corrupt_labels(np.array(["a", "b"] * 5), 1.0, random_state=0)
    np.testing.assert_array_equal(labels, ["b", "a"] * 5)
    with pytest.raises(ValueError, match="noise_rate"):
        corrupt_labels(y, 1.5)
    with pytest.raises(ValueError, match="at least 2 classes"):
        corrupt_labels(np.zeros(4), 0.1)


def test_markov_languages_follow_their_transition_matrices():
    d = make_markov_languages(3000, seq_len=20, vocab_size=5, alpha=1.0, n_val=10,
                              random_state=0)
    assert d.X.shape == (3000, 20) and d.X.min() >= 0 and d.X.max() < 5
    assert np.mean(d.language == 0) == pytest.approx(0.3)
    for lang in (0, 1):
        X = d.X[d.language == lang]
        counts = np.zeros((5, 5))
        np.add.at(counts, (X[:, :-1].ravel(), X[:, 1:].ravel()), 1)
        freq = counts / counts.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(freq, d.transitions[lang], atol=0.03)
    # the languages are fixed by language_seeds, the samples by random_state
    other = make_markov_languages(10, seq_len=20, vocab_size=5, alpha=1.0, n_val=10,
                                  random_state=1)
    np.testing.assert_array_equal(other.transitions, d.transitions)


def test_markov_bad_input():
    with pytest.raises(ValueError, match="target_fraction"):
        make_markov_languages(10, target_fraction=1.5)
    with pytest.raises(ValueError, match="'seq_len' parameter of make_markov_languages"):
        make_markov_languages(10, seq_len=1)
    with pytest.raises(ValueError, match="alpha"):
        make_markov_languages(10, alpha=0)
    with pytest.raises(ValueError, match="'noise' parameter of make_mixed_source_regression"):
        make_mixed_source_regression(noise=-1.0)
