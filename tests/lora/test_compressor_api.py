"""The LoRA compressors' scikit-learn verbs: fit / transform / inverse_transform."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_icml.datasets import make_lora_collection
from sklearn_icml.lora import (
    ClusteredJointLoRACompressor,
    JointLoRACompressor,
    SVDLoRACompressor,
)

COMPRESSORS = [
    JointLoRACompressor(rank=6),
    ClusteredJointLoRACompressor(n_clusters=2, rank=6, random_state=0),
    SVDLoRACompressor(rank=4),
]


def _collection():
    B, A = make_lora_collection(8, d_out=16, d_in=12, adapter_rank=4, basis_rank=6,
                                n_groups=2, random_state=0)
    return B, A


@pytest.mark.parametrize("comp", COMPRESSORS, ids=lambda c: type(c).__name__)
def test_fit_returns_self_and_reconstruct_is_inverse_of_transform(comp):
    B, A = _collection()
    comp = clone(comp)
    with pytest.raises(NotFittedError, match="fit"):
        comp.transform((B, A))
    assert comp.fit((B, A)) is comp
    codes = comp.transform((B, A))
    if isinstance(comp, ClusteredJointLoRACompressor):
        factors = comp.inverse_transform(codes, comp.predict((B, A)))
    else:
        factors = comp.inverse_transform(codes)
    hat = np.stack([b @ a for b, a in factors])
    ref = np.stack([b @ a for b, a in comp.reconstruct((B, A))])
    np.testing.assert_allclose(hat, ref, atol=1e-12)
    assert comp.__sklearn_tags__().input_tags.two_d_array is False


def test_compress_is_gone_fit_learns_the_basis():
    assert not hasattr(JointLoRACompressor(rank=6), "compress")
