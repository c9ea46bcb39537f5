"""Serving paths: equivalence with dense products, agreement of the two paths, their timing."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.datasets import make_lora_collection  # noqa: E402
from sklearn_icml.lora import (  # noqa: E402
    JointLoRACompressor,
    separate_lora_forward,
    shared_basis_forward,
)
from sklearn_icml.lora._serving_timing import time_multi_lora_forward  # noqa: E402


@pytest.mark.parametrize("core", ["full", "diag"])
def test_shared_basis_forward_equals_dense_per_request(core):
    rng = np.random.default_rng(0)
    n, d_in, d_out, r = 5, 24, 20, 6
    U, V = rng.normal(size=(d_out, r)), rng.normal(size=(d_in, r))
    cores = rng.normal(size=(n, r, r)) if core == "full" else rng.normal(size=(n, r))
    W0 = rng.normal(size=(d_out, d_in))
    X = rng.normal(size=(7, 3, d_in)).astype(np.float32)
    ids = np.array([0, 4, 4, 1, 2, 0, 3])
    Y = shared_basis_forward(torch.from_numpy(X), torch.from_numpy(ids), U, V, cores,
                             base_weight=W0)
    assert Y.shape == (7, 3, d_out) and Y.dtype == torch.float32
    for b, i in enumerate(ids):
        S = cores[i] if core == "full" else np.diag(cores[i])
        expected = X[b] @ (W0 + U @ S @ V.T).T
        np.testing.assert_allclose(Y[b].numpy(), expected, atol=1e-5 * np.abs(expected).max())
    Y2 = shared_basis_forward(X[:, 0], ids, U, V, cores)
    assert Y2.shape == (7, d_out)
    np.testing.assert_allclose(Y2.numpy(), (Y[:, 0] - torch.from_numpy(X[:, 0] @ W0.T)).numpy(),
                               atol=1e-4)


@pytest.mark.parametrize("strategy", ["gather", "loop"])
def test_separate_lora_forward_equals_dense(strategy):
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(4, 3, 16)), rng.normal(size=(4, 12, 3))
    W0 = rng.normal(size=(12, 16))
    X = rng.normal(size=(6, 5, 16)).astype(np.float32)
    ids = [3, 0, 3, 1, 1, 2]
    Y = separate_lora_forward(X, ids, A, B, base_weight=W0, strategy=strategy)
    for b, i in enumerate(ids):
        expected = X[b] @ (W0 + B[i] @ A[i]).T
        np.testing.assert_allclose(Y[b].numpy(), expected, atol=1e-5 * np.abs(expected).max())


def test_paths_agree_when_cores_are_exact():
    B, A = make_lora_collection(30, d_out=48, d_in=40, adapter_rank=4, basis_rank=8,
                                random_state=0)
    comp = JointLoRACompressor(rank=8).fit((B, A))
    rng = np.random.default_rng(2)
    X = torch.from_numpy(rng.normal(size=(16, 4, 40)).astype(np.float32))
    ids = torch.from_numpy(rng.integers(30, size=16))
    shared = shared_basis_forward(X, ids, comp.U_, comp.V_, comp.cores_)
    separate = separate_lora_forward(X, ids, A, B)
    assert torch.max(torch.abs(shared - separate)).item() < 1e-4


def test_bad_serving_input_raises():
    rng = np.random.default_rng(0)
    U, V, cores = rng.normal(size=(6, 2)), rng.normal(size=(5, 2)), rng.normal(size=(3, 2, 2))
    X = rng.normal(size=(2, 4, 5)).astype(np.float32)
    with pytest.raises(ValueError, match="adapter_ids must lie in"):
        shared_basis_forward(X, [0, 3], U, V, cores)
    with pytest.raises(ValueError, match="adapter_ids must be 2 integers"):
        shared_basis_forward(X, [0, 1, 2], U, V, cores)
    with pytest.raises(ValueError, match="adapter_ids must be 2 integers"):
        shared_basis_forward(X, [0.0, 1.0], U, V, cores)
    with pytest.raises(ValueError, match="must agree"):
        shared_basis_forward(X, [0, 1], U, rng.normal(size=(4, 2)), cores)
    with pytest.raises(ValueError, match="X must have shape"):
        shared_basis_forward(X[0, 0], [0], U, V, cores)
    with pytest.raises(ValueError, match="base_weight"):
        shared_basis_forward(X, [0, 1], U, V, cores, base_weight=np.zeros((5, 5)))
    with pytest.raises(ValueError, match="strategy"):
        separate_lora_forward(X, [0, 1], np.zeros((3, 2, 5)), np.zeros((3, 6, 2)),
                              strategy="fast")
    with pytest.raises(ValueError, match="must agree"):
        separate_lora_forward(X, [0, 1], np.zeros((3, 2, 5)), np.zeros((3, 6, 3)))
    with pytest.raises(ValueError, match="real"):
        shared_basis_forward(X, [0, 1], U + 0j, V, cores)


def test_timing_reports_both_paths_and_memory():
    res = time_multi_lora_forward(32, 48, 4, 8, [1, 5], batch=6, tokens=2, n_repeats=3,
                                  n_warmup=1, n_jobs=1, random_state=0)
    assert res["n_adapters"] == [1, 5]
    assert res["shared_memory_bytes"] == [4 * (8 * 80 + n * 64) for n in (1, 5)]
    assert res["separate_memory_bytes"] == [4 * n * 4 * 80 for n in (1, 5)]
    for key in ("shared_tokens_per_s", "separate_tokens_per_s", "speedup",
                "shared_ratio_to_single"):
        assert len(res[key]) == 2 and all(v > 0 and np.isfinite(v) for v in res[key])
    assert res["shared_tokens_per_s"][0] == pytest.approx(12 / res["shared_seconds"][0])
    assert res["settings"]["n_jobs"] == 1
    diag = time_multi_lora_forward(32, 48, 4, 8, [3], batch=2, tokens=1, n_repeats=2,
                                   n_warmup=0, core="diag", include_base=False)
    assert diag["shared_memory_bytes"] == [4 * (8 * 80 + 3 * 8)]
    with pytest.raises(ValueError, match="rank must be"):
        time_multi_lora_forward(8, 8, 2, 9, [1])
    with pytest.raises(ValueError, match="n_adapters_list"):
        time_multi_lora_forward(8, 8, 2, 4, [0])
    with pytest.raises(ValueError, match="core"):
        time_multi_lora_forward(8, 8, 2, 4, [1], core="tri")
