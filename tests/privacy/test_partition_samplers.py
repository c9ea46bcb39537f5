"""Tests of the balanced iteration and Poisson batch samplers."""

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.privacy import BalancedIterationSampler, PoissonIterationSampler
from sklearn_icml.privacy import _partition_samplers as ps


@pytest.mark.parametrize("n, T, k", [(50, 10, 3), (40, 8, 8), (30, 5, 1), (25, 12, 11)])
def test_every_index_in_exactly_k_distinct_steps(n, T, k):
    sampler = BalancedIterationSampler(
        n_samples=n, num_steps=T, num_selected=k, num_epochs=3, random_state=0
    )
    batches = list(sampler)
    assert len(batches) == len(sampler) == 3 * T
    for epoch in range(3):
        epoch_batches = batches[epoch * T : (epoch + 1) * T]
        counts = np.zeros(n, dtype=int)
        for b in epoch_batches:
            assert b.dtype == np.int64
            assert np.all(np.diff(b) > 0)  # sorted, no index twice in one step
            counts[b] += 1
        np.testing.assert_array_equal(counts, np.full(n, k))


@pytest.mark.parametrize("path", ["_floyd_subsets", "_argpartition_subsets"])
def test_subset_kernels_are_uniform(path):
    # each of the C(5, 2) = 10 subsets equally likely (chi-square), for both kernels
    rng = np.random.RandomState(0)
    chosen = np.sort(getattr(ps, path)(rng, 20_000, 5, 2), axis=1)
    assert np.all(chosen[:, 0] < chosen[:, 1])
    codes = chosen[:, 0] * 5 + chosen[:, 1]
    _, freq = np.unique(codes, return_counts=True)
    assert freq.shape == (10,)
    assert stats.chisquare(freq).pvalue > 1e-3


def test_inclusion_frequency_is_k_over_T():
    n, T, k = 200, 10, 3
    sampler = BalancedIterationSampler(n_samples=n, num_steps=T, num_selected=k, random_state=1)
    totals = np.zeros(T)
    for _ in range(50):
        sampler.sample()
        totals += sampler.batch_sizes_
    # each step receives n*k/T per pass on average; chi-square over the steps
    assert stats.chisquare(totals).pvalue > 1e-3
    np.testing.assert_allclose(totals.mean() / 50, n * k / T)


def test_reproducible_and_epochs_redraw():
    params = {"n_samples": 30, "num_steps": 6, "num_selected": 2, "num_epochs": 2}
    a = [b.copy() for b in BalancedIterationSampler(**params, random_state=5)]
    b = [b.copy() for b in BalancedIterationSampler(**params, random_state=5)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    first, second = a[:6], a[6:]
    assert any(not np.array_equal(x, y) for x, y in zip(first, second))
    # iterating the same sampler again draws new allocations too
    sampler = BalancedIterationSampler(n_samples=30, num_steps=6, num_selected=2, random_state=5)
    one, two = list(sampler), list(sampler)
    assert any(not np.array_equal(x, y) for x, y in zip(one, two))


def test_assignments_match_batches():
    sampler = BalancedIterationSampler(n_samples=20, num_steps=7, num_selected=3, random_state=2)
    batches = sampler.sample()
    assert sampler.assignments_.shape == (20, 3)
    for i, steps in enumerate(sampler.assignments_):
        assert np.all(np.diff(steps) > 0)
        for t in range(7):
            assert (i in batches[t]) == (t in steps)
    np.testing.assert_array_equal(sampler.batch_sizes_, [len(b) for b in batches])


def test_empty_batches_are_kept():
    sampler = BalancedIterationSampler(n_samples=3, num_steps=50, num_selected=1, random_state=0)
    batches = sampler.sample()
    assert len(batches) == 50
    assert sum(len(b) == 0 for b in batches) >= 47


def test_poisson_sampler_rate_and_reproducibility():
    n, T, q = 400, 20, 0.15
    params = {"n_samples": n, "num_steps": T, "sample_rate": q, "num_epochs": 2}
    sampler = PoissonIterationSampler(**params, random_state=0)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 2 * T
    sizes = np.array([len(b) for b in batches])
    # batch sizes are Binomial(n, q): check the mean within 4 standard errors
    assert abs(sizes.mean() - n * q) < 4 * np.sqrt(n * q * (1 - q) / sizes.size)
    again = list(PoissonIterationSampler(**params, random_state=0))
    for x, y in zip(batches, again):
        np.testing.assert_array_equal(x, y)
    for b in batches:
        assert np.all(np.diff(b) > 0)
    assert sampler.participations_.sum() == sizes[T:].sum()


def test_usable_as_torch_batch_sampler_with_empty_batches():
    torch = pytest.importorskip("torch")
    X = torch.arange(8, dtype=torch.float32).reshape(4, 2)
    y = torch.arange(4)
    data = torch.utils.data.TensorDataset(X, y)
    sampler = BalancedIterationSampler(n_samples=4, num_steps=10, num_selected=2, random_state=0)
    # whole index arrays as the "sampler" with batch_size=None: empty batches come out as
    # zero-length tensors
    loader = torch.utils.data.DataLoader(data, sampler=sampler, batch_size=None)
    seen = [yb.tolist() for _, yb in loader]
    assert len(seen) == 10 and sorted(sum(seen, [])) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert any(len(s) == 0 for s in seen)

    def collate(items):
        if not items:
            return torch.empty((0, 2)), torch.empty((0,), dtype=torch.long)
        xs, ys = zip(*items)
        return torch.stack(xs), torch.stack(ys)

    loader = torch.utils.data.DataLoader(data, batch_sampler=sampler, collate_fn=collate)
    assert len(loader) == 10
    assert sum(len(yb) for _, yb in loader) == 8


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 0, "num_steps": 5, "num_selected": 1}, "n_samples"),
        ({"n_samples": 5, "num_steps": 0, "num_selected": 1}, "num_steps"),
        ({"n_samples": 5, "num_steps": 5, "num_selected": 0}, "num_selected"),
        ({"n_samples": 5, "num_steps": 5, "num_selected": 6}, "num_selected"),
        ({"n_samples": 5, "num_steps": 5, "num_selected": 1, "num_epochs": 0}, "num_epochs"),
    ],
)
def test_bad_input_balanced(kwargs, match):
    sampler = BalancedIterationSampler(**kwargs)  # stores only; checked at first use
    with pytest.raises(ValueError, match=match):
        sampler.sample()
    with pytest.raises(ValueError, match=match):
        len(sampler)


def test_bad_input_poisson():
    for rate in (0.0, 1.2, -0.5):
        with pytest.raises(ValueError, match="sample_rate"):
            PoissonIterationSampler(n_samples=10, num_steps=5, sample_rate=rate).sample()
    with pytest.raises(TypeError, match="num_steps"):
        list(PoissonIterationSampler(n_samples=10, num_steps=2.5, sample_rate=0.1))
    with pytest.raises(ValueError, match="n_samples"):  # the placeholder must be replaced
        PoissonIterationSampler().sample()


def test_samplers_are_estimators_with_fresh_clones():
    from sklearn.base import clone

    sampler = BalancedIterationSampler(n_samples=30, num_steps=6, num_selected=2, random_state=5)
    first = [b.copy() for b in sampler.sample()]
    twin = clone(sampler)
    np.testing.assert_equal([b.tolist() for b in twin.sample()], [b.tolist() for b in first])
    sampler.set_params(random_state=5)  # a new generator from the same seed
    np.testing.assert_equal([b.tolist() for b in sampler.sample()], [b.tolist() for b in first])
    assert repr(PoissonIterationSampler(n_samples=10, sample_rate=0.5)).startswith("Poisson")
