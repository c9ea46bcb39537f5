"""make_streaming_parity and parity_targets."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_streaming_parity, parity_targets


@pytest.mark.parametrize("length", [1, 2, 5, 9])
def test_exhaustive_set_is_half_odd(length):
    X, y = make_streaming_parity(length, length)
    assert X.shape == (2**length, length)
    assert len({tuple(row) for row in X}) == 2**length  # all distinct
    assert y.sum() == 2 ** (length - 1)


def test_targets_are_parity_of_ones():
    rng = np.random.default_rng(0)
    X, y = make_streaming_parity(7, 3, n_per_length=30, random_state=0)
    for row, target in zip(X, y):
        assert target == int(np.sum(row[row >= 0])) % 2
    assert set(np.unique(X)) <= {-1, 0, 1}
    rows = rng.integers(0, 2, size=(50, 12))
    assert np.array_equal(parity_targets(rows), rows.sum(axis=1) % 2)


def test_full_training_set_has_2046_sequences_sorted_by_length():
    X, y = make_streaming_parity()
    assert X.shape == (2046, 10) and y.shape == (2046,)
    lengths = (X >= 0).sum(axis=1)
    assert np.all(np.diff(lengths) >= 0)
    assert np.array_equal(np.bincount(lengths)[1:], 2 ** np.arange(1, 11))
    # padding only at the right end
    assert not np.any((X[:, :-1] == -1) & (X[:, 1:] >= 0))


def test_fraction_is_reproducible_distinct_and_binomial():
    a, ya = make_streaming_parity(fraction=0.3, random_state=5)
    b, yb = make_streaming_parity(fraction=0.3, random_state=5)
    c, _ = make_streaming_parity(fraction=0.3, random_state=6)
    assert np.array_equal(a, b) and np.array_equal(ya, yb)
    assert not np.array_equal(a, c)
    assert len({tuple(r) for r in a}) == a.shape[0]  # distinct sequences
    full = {tuple(r) for r in make_streaming_parity()[0]}
    assert {tuple(r) for r in a} <= full
    # per-length counts are Binomial(2**L, p): the mean over seeds is close to p * 2**L
    counts = np.array(
        [
            np.bincount((make_streaming_parity(fraction=0.3, random_state=s)[0] >= 0).sum(1),
                        minlength=11)[1:]
            for s in range(40)
        ]
    )
    expected = 0.3 * 2 ** np.arange(1, 11)
    sd = np.sqrt(expected * 0.7 / 40)
    assert np.all(np.abs(counts.mean(axis=0) - expected) < 5 * sd + 1e-9)
    assert np.all(counts <= 2 ** np.arange(1, 11))


def test_random_long_sequences():
    X, y = make_streaming_parity(10000, 10000, n_per_length=4, random_state=0)
    assert X.shape == (4, 10000) and np.all(X >= 0)
    again, _ = make_streaming_parity(10000, 10000, n_per_length=4, random_state=0)
    assert np.array_equal(X, again)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_length": 0}, "max_length"),
        ({"min_length": 4, "max_length": 3}, "min_length"),
        ({"fraction": 0.0}, "fraction"),
        ({"fraction": 1.5}, "fraction"),
        ({"n_per_length": 0}, "n_per_length"),
        ({"fraction": 0.5, "n_per_length": 3}, "cannot be combined"),
        ({"max_length": 30}, "n_per_length"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_streaming_parity(**kwargs)


def test_parity_targets_rejects_other_symbols():
    with pytest.raises(ValueError, match="Got 2 instead"):
        parity_targets([[0, 1, 2]])
    with pytest.raises(ValueError, match="2-D"):
        parity_targets([0, 1])
