"""make_lora_collection: planted structure, energies, bad input."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_lora_collection


def test_planted_subspaces_and_groups():
    B, A, groups = make_lora_collection(12, d_out=30, d_in=20, adapter_rank=3, basis_rank=5,
                                        n_groups=3, return_groups=True, random_state=0)
    assert B.shape == (12, 30, 3) and A.shape == (12, 3, 20)
    np.testing.assert_array_equal(groups, np.repeat([0, 1, 2], 4))
    for g in range(3):
        cols = np.hstack(B[groups == g])
        rows = np.vstack(A[groups == g])
        assert np.linalg.matrix_rank(cols) == 5 and np.linalg.matrix_rank(rows) == 5
    assert np.linalg.matrix_rank(np.hstack(B)) == 15


def test_private_energy_fraction_of_the_benchmark_collection():
    # the benchmark's E2 collection: private energy fraction ~0.081 for shared rank 8
    # + 0.3 * private rank 8
    B, A = make_lora_collection(100, d_out=256, adapter_rank=8, basis_rank=32, private_rank=8,
                                random_state=0)
    shared = np.sum(np.linalg.norm(np.matmul(B[:, :, :8], A[:, :8]), axis=(1, 2)) ** 2)
    private = np.sum(np.linalg.norm(np.matmul(B[:, :, 8:], A[:, 8:]), axis=(1, 2)) ** 2)
    assert abs(private / (shared + private) - 0.081) < 0.01


def test_iid_adapters_and_seed():
    B1, A1 = make_lora_collection(5, d_out=10, adapter_rank=2, basis_rank=None, random_state=4)
    B2, A2 = make_lora_collection(5, d_out=10, adapter_rank=2, basis_rank=None, random_state=4)
    np.testing.assert_array_equal(B1, B2)
    np.testing.assert_array_equal(A1, A2)
    assert np.linalg.matrix_rank(np.hstack(B1)) == 10


@pytest.mark.parametrize("kwargs, match", [
    ({"n_adapters": 0}, "n_adapters"),
    ({"n_groups": 11}, "n_groups"),
    ({"basis_rank": 40}, "basis_rank"),
    ({"private_rank": -1}, "private_rank"),
    ({"private_scale": np.nan}, "private_scale"),
])
def test_bad_arguments_raise(kwargs, match):
    params = {"n_adapters": 10, "d_out": 32, **kwargs}
    n = params.pop("n_adapters")
    with pytest.raises(ValueError, match=match):
        make_lora_collection(n, **params)
