"""numba kernels against their numpy references (and mambapy's own scan)."""

import numpy as np
import pytest

from sklearn_icml.compression._adaptive_kernels import (
    code_lengths,
    code_lengths_reference,
    count_rows,
    count_rows_reference,
)
from sklearn_icml.compression._scan_kernels import (
    scan_backward,
    scan_backward_reference,
    scan_forward,
    scan_forward_reference,
)


def _scan_inputs(seed, n_batch=3, length=11, n_e=5, n_state=4):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_batch, length, n_e)).astype(np.float32)
    delta = rng.uniform(0.01, 1.0, (n_batch, length, n_e)).astype(np.float32)
    A = -rng.uniform(0.5, 4.0, (n_e, n_state)).astype(np.float32)
    B = rng.standard_normal((n_batch, length, n_state)).astype(np.float32)
    C = rng.standard_normal((n_batch, length, n_state)).astype(np.float32)
    D = rng.standard_normal(n_e).astype(np.float32)
    return x, delta, A, B, C, D


@pytest.mark.parametrize("seed", [0, 1])
def test_scan_kernels_match_numpy_reference(seed):
    args = _scan_inputs(seed)
    y = scan_forward(*args)
    y_ref, _ = scan_forward_reference(*(a.astype(np.float64) for a in args))
    assert y.dtype == np.float32
    assert np.allclose(y, y_ref, rtol=1e-4, atol=1e-5)
    gy = np.random.default_rng(seed + 7).standard_normal(y.shape).astype(np.float32)
    grads = scan_backward(*args, gy)
    grads_ref = scan_backward_reference(*(a.astype(np.float64) for a in args), gy)
    for g, g_ref in zip(grads, grads_ref):
        assert g.shape == g_ref.shape
        assert np.allclose(g, g_ref, rtol=1e-3, atol=1e-4)


def test_scan_reference_gradient_matches_finite_differences():
    args = [a.astype(np.float64) for a in _scan_inputs(3, 1, 6, 2, 3)]
    gy = np.random.default_rng(0).standard_normal(args[0].shape)
    grads = scan_backward_reference(*args, gy)
    eps = 1e-6
    for k in range(6):
        flat = args[k].reshape(-1)
        for j in (0, flat.size - 1):
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[k].reshape(-1)[j] += eps
            minus[k].reshape(-1)[j] -= eps
            num = (
                np.sum(gy * scan_forward_reference(*plus)[0])
                - np.sum(gy * scan_forward_reference(*minus)[0])
            ) / (2 * eps)
            assert grads[k].reshape(-1)[j] == pytest.approx(num, rel=1e-5, abs=1e-7)


def test_cpu_scan_block_matches_mambapy_values_and_gradients():
    torch = pytest.importorskip("torch")
    mamba = pytest.importorskip("mambapy.mamba")
    from sklearn_icml.compression._model import CPUScanMambaBlock

    torch.manual_seed(0)
    model = mamba.Mamba(mamba.MambaConfig(d_model=8, n_layers=2, d_state=4, expand_factor=2))
    x = torch.randn(2, 16, 8)
    y_ref = model(x)
    y_ref.square().sum().backward()
    g_ref = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    for layer in model.layers:
        layer.mixer.__class__ = CPUScanMambaBlock
    y = model(x)
    y.square().sum().backward()
    assert torch.allclose(y, y_ref, atol=1e-5)
    for p, g in zip(model.parameters(), g_ref):
        assert torch.allclose(p.grad, g, rtol=1e-4, atol=1e-5)


def test_adaptive_kernels_match_numpy_reference():
    rng = np.random.default_rng(0)
    symbols = rng.integers(0, 256, 500)
    symbols[100:200] = 7  # a run, so some context tables grow
    starts = np.zeros(500, dtype=bool)
    starts[[0, 123, 400]] = True
    counts = np.ones((257, 256), dtype=np.int64)
    counts_ref = counts.copy()
    rows, prev = count_rows(symbols, starts, counts, 256, 32)
    rows_ref, prev_ref = count_rows_reference(symbols, starts, counts_ref, 256, 32)
    assert np.array_equal(rows, rows_ref) and prev == prev_ref
    assert np.array_equal(counts, counts_ref)
    bits = code_lengths(symbols, starts, 1, 32)
    assert np.allclose(bits, code_lengths_reference(symbols, starts, 1, 32))
    # the code lengths are -log2 of the rows, normalised
    p = rows[np.arange(500), symbols] / rows.sum(axis=1)
    assert np.allclose(bits, -np.log2(p))
    # chunked calls continue where the previous one stopped
    counts2 = np.ones((257, 256), dtype=np.int64)
    r1, prev1 = count_rows(symbols[:250], starts[:250], counts2, 256, 32)
    r2, _ = count_rows(symbols[250:], starts[250:], counts2, prev1, 32)
    assert np.array_equal(np.vstack([r1, r2]), rows)
