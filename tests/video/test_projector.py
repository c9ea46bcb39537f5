"""The F-16 aligner: split-init identity, time order, repetition, padding and pooling."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.video import MultiFrameProjector, make_frame_projector  # noqa: E402
from sklearn_icml.video._projector import (  # noqa: E402
    MeanPoolAligner,
    SingleFrameAligner,
    pad_to_clips,
    pool_tokens,
)


def _projector(c=6, h=5, f=16, seed=0):
    torch.manual_seed(seed)
    P = make_frame_projector(c, h)
    # non-default biases so that a bias bug shows
    with torch.no_grad():
        for layer in (P[0], P[2]):
            layer.bias.normal_()
    return P, MultiFrameProjector.from_frame_projector(P, frames_per_clip=f)


def test_split_init_identity():
    # the split-initialised aligner is the time average of P over the clip
    P, proj = _projector()
    z = torch.randn(3, 32, 9, 6)
    out = proj(z)
    assert out.shape == (3, 2, 9, 5)
    expected = P(z).reshape(3, 2, 16, 9, 5).mean(2)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_split_init_layout_of_weights():
    P, proj = _projector(c=3, h=2, f=4)
    W1 = proj.fc1.weight.detach()
    for a in range(4):
        for b in range(4):
            block = W1[a * 2:(a + 1) * 2, b * 3:(b + 1) * 3]
            expected = P[0].weight if a == b else torch.zeros(2, 3)
            torch.testing.assert_close(block, expected.detach())
    torch.testing.assert_close(proj.fc2.weight[:, :2], P[2].weight.detach() / 4)


def test_time_order_sensitivity():
    # permuting the frames of a clip does not change the split-init output, but
    # does after a few gradient steps (and with random non-split weights)
    P, proj = _projector()
    z = torch.randn(2, 16, 4, 6)
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(proj(z), proj(z[:, perm]), atol=1e-5, rtol=1e-5)

    opt = torch.optim.SGD(proj.parameters(), lr=0.1)
    target = torch.randn(2, 1, 4, 5)
    for _ in range(3):
        opt.zero_grad()
        ((proj(z) - target) ** 2).mean().backward()
        opt.step()
    with torch.no_grad():
        diff = (proj(z) - proj(z[:, perm])).abs().max().item()
    assert diff > 1e-3

    torch.manual_seed(0)
    random_proj = MultiFrameProjector(6, 5, 16)
    with torch.no_grad():
        assert (random_proj(z) - random_proj(z[:, perm])).abs().max().item() > 1e-3


def test_frame_major_order_is_the_block_order():
    # a frame-f-only input must go through diagonal block f: zero every block but block 2
    P, proj = _projector(c=3, h=2, f=4)
    with torch.no_grad():
        mask = torch.zeros_like(proj.fc1.weight)
        mask[4:6, 6:9] = 1
        proj.fc1.weight.mul_(mask)
        proj.fc1.bias.zero_()
        proj.fc2.bias.zero_()
    z = torch.zeros(1, 4, 5, 3)
    z[0, 2] = torch.randn(5, 3)  # only frame 2 of the clip is non-zero
    out = proj(z)[0, 0]
    expected = torch.nn.functional.gelu(z[0, 2] @ P[0].weight.T) @ (P[2].weight.T / 4)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_repetition_identity():
    # a clip of one frame repeated F times gives exactly P(z)
    P, proj = _projector()
    z1 = torch.randn(2, 1, 9, 6)
    out = proj(z1.repeat(1, 16, 1, 1))
    torch.testing.assert_close(out[:, 0], P(z1[:, 0]), atol=1e-5, rtol=1e-5)


def test_baseline_aligners():
    torch.manual_seed(0)
    z = torch.randn(2, 32, 4, 6)
    mean = MeanPoolAligner(6, 5, 16)
    torch.testing.assert_close(
        mean(z), mean.frame_proj(z).reshape(2, 2, 16, 4, 5).mean(2), atol=1e-6, rtol=1e-6
    )
    perm = torch.randperm(16)
    torch.testing.assert_close(mean(z[:, :16]), mean(z[:, perm]), atol=1e-5, rtol=1e-5)
    single = SingleFrameAligner(6, 5, 16)
    torch.testing.assert_close(single(z), single.frame_proj(z[:, [0, 16]]))


def test_forward_rejects_partial_clip():
    _, proj = _projector()
    with pytest.raises(ValueError, match="multiple of frames_per_clip"):
        proj(torch.zeros(1, 17, 4, 6))


def test_bad_frame_projector_and_frames_per_clip():
    with pytest.raises(TypeError, match="frame_proj must be"):
        MultiFrameProjector.from_frame_projector(torch.nn.Linear(3, 3))
    with pytest.raises(ValueError, match="'frames_per_clip' parameter"):
        MultiFrameProjector(3, 2, frames_per_clip=0)
    with pytest.raises(ValueError, match="'frames_per_clip' parameter"):
        MultiFrameProjector.from_frame_projector(make_frame_projector(3, 2), 0)


def test_pad_to_clips_never_adds_an_empty_clip():
    x = np.ones((2, 33, 4, 3), dtype=np.float32)
    padded = pad_to_clips(x, 16)
    assert padded.shape == (2, 48, 4, 3)
    assert np.all(padded[:, 33:] == 0) and np.all(padded[:, :33] == 1)
    assert pad_to_clips(x[:, :32], 16).shape == (2, 32, 4, 3)
    edge = pad_to_clips(np.arange(3.0).reshape(1, 3, 1, 1), 4, mode="edge")
    np.testing.assert_array_equal(edge.ravel(), [0, 1, 2, 2])
    assert x.shape == (2, 33, 4, 3) and np.all(x == 1)  # input untouched


def test_pool_tokens_floor_mode_and_values():
    # 27 x 27 -> 13 x 13 in floor mode (14 x 14 in ceil mode)
    y = torch.randn(1, 2, 27 * 27, 3)
    assert pool_tokens(y, (27, 27), 2).shape == (1, 2, 169, 3)
    assert pool_tokens(y, (27, 27), 2, ceil_mode=True).shape == (1, 2, 196, 3)
    grid = torch.arange(16.0).reshape(1, 1, 16, 1)
    np.testing.assert_array_equal(pool_tokens(grid, (4, 4), 2).ravel().numpy(), [5, 7, 13, 15])
    np.testing.assert_array_equal(
        pool_tokens(grid, (4, 4), 2, mode="avg").ravel().numpy(), [2.5, 4.5, 10.5, 12.5]
    )
