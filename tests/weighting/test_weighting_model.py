"""WeightingMLP, compute_weights and effective_sample_size."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.weighting import (  # noqa: E402
    WeightingMLP,
    compute_weights,
    effective_sample_size,
)


def _random_dwm(n_features, context=True, temperature=1.0, seed=0):
    torch.manual_seed(seed)
    dwm = WeightingMLP(n_features, hidden_size=8, use_batch_context=context,
                       temperature=temperature)
    torch.nn.init.normal_(dwm.out.weight)
    return dwm


def test_untrained_model_gives_uniform_weights():
    w = WeightingMLP(4)(torch.randn(7, 4))
    torch.testing.assert_close(w, torch.ones(7))


@pytest.mark.parametrize("context", [True, False])
def test_weights_positive_sum_to_batch_and_permutation_equivariant(context):
    dwm = _random_dwm(3, context)
    u = torch.randn(9, 3)
    w = dwm(u).detach()
    assert torch.all(w > 0)
    assert float(w.sum()) == pytest.approx(9.0, rel=1e-6)
    assert float(w.std()) > 1e-3
    perm = torch.randperm(9)
    torch.testing.assert_close(dwm(u[perm]).detach(), w[perm])


def test_batch_context_makes_weights_depend_on_the_batch():
    u = torch.randn(6, 3)
    other = torch.cat([u[:3], 5 + torch.randn(3, 3)])
    with_ctx = _random_dwm(3, True)
    without = _random_dwm(3, False)
    # without context the ratios inside the shared rows do not change
    r0, r1 = without(u)[:3], without(other)[:3]
    torch.testing.assert_close(r0 / r0.sum(), r1 / r1.sum())
    c0, c1 = with_ctx(u)[:3], with_ctx(other)[:3]
    assert not torch.allclose(c0 / c0.sum(), c1 / c1.sum())


def test_temperature_flattens_the_weights():
    u = torch.randn(16, 3)
    sharp = effective_sample_size(_random_dwm(3, temperature=0.5)(u).detach().numpy())
    flat = effective_sample_size(_random_dwm(3, temperature=5.0)(u).detach().numpy())
    assert flat > sharp


def test_compute_weights_batches_in_order_and_matches_forward():
    dwm = _random_dwm(2)
    u = np.random.default_rng(0).normal(size=(10, 2))
    w = compute_weights(dwm, u, batch_size=4)
    assert w.dtype == np.float64 and w.shape == (10,)
    with torch.no_grad():
        expected = torch.cat([dwm(torch.as_tensor(u[s:s + 4], dtype=torch.float32))
                              for s in (0, 4, 8)])
    np.testing.assert_allclose(w, expected.double().numpy(), rtol=1e-6)
    np.testing.assert_allclose([w[:4].mean(), w[4:8].mean(), w[8:].mean()], 1.0, rtol=1e-6)
    np.testing.assert_allclose(compute_weights(dwm, u).mean(), 1.0, rtol=1e-6)


def test_effective_sample_size():
    assert effective_sample_size(np.ones(5)) == pytest.approx(5.0)
    assert effective_sample_size([4.0, 0.0, 0.0, 0.0]) == pytest.approx(1.0)
    assert effective_sample_size([2.0, 2.0, 0.0, 0.0]) == pytest.approx(2.0)
    assert effective_sample_size(np.zeros(3)) == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="'temperature' parameter of WeightingMLP"):
        WeightingMLP(3, temperature=0.0)
    with pytest.raises(ValueError, match="'n_features' parameter of WeightingMLP"):
        WeightingMLP(0)
    with pytest.raises(TypeError, match="'hidden_size' parameter of WeightingMLP"):
        WeightingMLP(3, hidden_size=2.5)
    dwm = WeightingMLP(3)
    with pytest.raises(ValueError, match=r"u must have shape \(batch, 3\)"):
        dwm(torch.randn(4, 2))
    with pytest.raises(ValueError, match="features must have shape"):
        compute_weights(dwm, np.ones((4, 2)))
    with pytest.raises(ValueError, match="NaN or infinity"):
        compute_weights(dwm, np.full((4, 3), np.nan))
    with pytest.raises(ValueError, match="'batch_size' parameter of compute_weights"):
        compute_weights(dwm, np.ones((4, 3)), batch_size=0)
    with pytest.raises(TypeError, match="'weighting_model' parameter of compute_weights"):
        compute_weights(torch.nn.Linear(3, 1), np.ones((4, 3)))
