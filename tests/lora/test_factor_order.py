"""One factor order for LoRA collections, (B, A) as peft's lora_B and lora_A, checked by shape.

A user guide that said ``(A_i, B_i)`` led to swapped pairs: at rank 8 they failed with a
message about a (4, 4) layer, and at rank 4 they were accepted and compressed the wrong
matrices (``shapes_ == (4, 4)`` for a 64 x 64 layer).
"""

import numpy as np
import pytest

from sklearn_icml.lora import (
    ClusteredJointLoRACompressor,
    JointLoRACompressor,
    SVDLoRACompressor,
)

COMPRESSORS = [JointLoRACompressor, SVDLoRACompressor, ClusteredJointLoRACompressor]


def _pairs(d_out, d_in, r, n=6, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((d_out, r)), rng.standard_normal((r, d_in))) for _ in range(n)]


@pytest.mark.parametrize("cls", COMPRESSORS)
@pytest.mark.parametrize("rank", [4, 8])
def test_swapped_pairs_of_a_square_layer_are_refused(cls, rank):
    pairs = _pairs(64, 64, 4)
    assert cls(rank=rank).fit(pairs).shapes_ == (64, 64)
    swapped = [(A, B) for B, A in pairs]
    with pytest.raises(ValueError) as info:
        cls(rank=rank).fit(swapped)
    message = str(info.value)
    assert "collection[0] looks like an (A, B) pair" in message
    assert "(4, 64)" in message and "(64, 4)" in message
    assert "(B, A)" in message and "lora_B" in message


def test_swapped_pairs_of_a_rectangular_layer_name_the_order():
    swapped = [(A, B) for B, A in _pairs(32, 48, 4)]
    with pytest.raises(ValueError, match=r"collection\[0\] looks like an \(A, B\) pair"):
        JointLoRACompressor(rank=2).fit(swapped)


def test_swapped_stacks_are_refused_and_right_stacks_accepted():
    rng = np.random.default_rng(0)
    B, A = rng.standard_normal((5, 64, 4)), rng.standard_normal((5, 4, 64))
    assert JointLoRACompressor(rank=4).fit((B, A)).shapes_ == (64, 64)
    with pytest.raises(ValueError, match=r"collection looks like an \(A, B\) pair.*stack"):
        JointLoRACompressor(rank=4).fit((A, B))


def test_square_factors_that_fit_both_orders_are_refused():
    with pytest.raises(ValueError, match=r"square \(4 x 4\).*both.*\(B, A\)"):
        JointLoRACompressor(rank=2).fit(_pairs(4, 4, 4))


def test_unambiguous_right_order_is_accepted():
    # rectangular layers, a rank above d_out (not a swap: only (B, A) fits), ragged ranks
    assert JointLoRACompressor(rank=3).fit(_pairs(32, 48, 4)).shapes_ == (32, 48)
    assert JointLoRACompressor(rank=2).fit(_pairs(4, 64, 8)).shapes_ == (4, 64)
    ragged = _pairs(64, 64, 4, n=3) + _pairs(64, 64, 8, n=3)
    comp = JointLoRACompressor(rank=4).fit(ragged)
    assert comp.shapes_ == (64, 64)
    np.testing.assert_array_equal(comp.adapter_ranks_, [4, 4, 4, 8, 8, 8])
