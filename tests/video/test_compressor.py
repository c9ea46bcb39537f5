"""F16ClipCompressor: token budget, padding, repetition and bad input."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.base import clone  # noqa: E402

from sklearn_icml.video import F16ClipCompressor, make_frame_projector  # noqa: E402


def _features(t, n=16, c=3, videos=2, seed=0):
    return np.random.RandomState(seed).randn(videos, t, n, c).astype(np.float32)


@pytest.mark.parametrize(("t", "n_clips"), [(32, 2), (33, 3), (16, 1), (1, 1)])
def test_token_budget(t, n_clips):
    # T=32 -> 2 clips of 4 tokens (4 x 4 grid, stride 2); T=33 -> 3, never 4;
    # T=32 never 3 (no extra all-zero clip)
    comp = F16ClipCompressor(hidden_dim=5, random_state=0).fit(_features(t))
    out = comp.transform(_features(t))
    assert out.shape == (2, n_clips, 4, 5)
    assert comp.n_tokens_per_clip_ == 4 and comp.grid_size_ == 4 and comp.n_features_in_ == 3


def test_pooling_27_grid_gives_13():
    # a grid that pooling does not divide
    X = _features(16, n=27 * 27, c=2, videos=1)
    out = F16ClipCompressor(hidden_dim=3, random_state=0).fit_transform(X)
    assert out.shape == (1, 1, 169, 3)


def test_transform_is_mean_of_frame_projections_then_max_pool():
    torch.manual_seed(0)
    P = make_frame_projector(3, 4)
    X = _features(32)
    comp = F16ClipCompressor(frame_projector=P, pool_stride=1).fit(X)
    with torch.no_grad():
        expected = P(torch.from_numpy(X)).reshape(2, 2, 16, 16, 4).mean(2).numpy()
    np.testing.assert_allclose(comp.transform(X), expected, atol=1e-5)
    pooled = F16ClipCompressor(frame_projector=P).fit(X).transform(X)
    grid = expected.reshape(2, 2, 2, 2, 2, 2, 4)  # clip, (row, dr), (col, dc), H
    np.testing.assert_allclose(pooled, grid.max(axis=(3, 5)).reshape(2, 2, 4, 4), atol=1e-5)
    assert P[0].weight.shape == (4, 3)  # the user's projector is copied, not rebound


def test_frame_repeat_identity_and_token_invariant():
    # through the transformer: 1-FPS frames repeated 16 times give P(z) per clip,
    # and the number of tokens per second does not depend on the frame rate
    torch.manual_seed(0)
    P = make_frame_projector(3, 4)
    X16 = _features(32)
    X1 = X16[:, ::16]
    comp = F16ClipCompressor(frame_projector=P, pool_stride=1, frame_repeat=16).fit(X1)
    out = comp.transform(X1)
    with torch.no_grad():
        expected = P(torch.from_numpy(X1)).numpy()
    np.testing.assert_allclose(out, expected, atol=1e-5)
    full = F16ClipCompressor(frame_projector=P, pool_stride=1).fit(X16).transform(X16)
    assert out.shape == full.shape


def test_edge_padding():
    X = _features(17)
    zeros = F16ClipCompressor(random_state=0).fit_transform(X)
    edge = F16ClipCompressor(random_state=0, pad_mode="edge").fit_transform(X)
    np.testing.assert_allclose(zeros[:, 0], edge[:, 0])
    assert not np.allclose(zeros[:, 1], edge[:, 1])


def test_reproducible_and_clone():
    X = _features(16)
    a = F16ClipCompressor(random_state=3).fit_transform(X)
    b = clone(F16ClipCompressor(random_state=3)).fit_transform(X)
    np.testing.assert_array_equal(a, b)
    c = F16ClipCompressor(random_state=4).fit_transform(X)
    assert not np.allclose(a, c)
    X_copy = X.copy()
    F16ClipCompressor(random_state=0).fit(X).transform(X)
    np.testing.assert_array_equal(X, X_copy)


@pytest.mark.parametrize(
    ("X", "params", "match"),
    [
        (np.zeros((2, 16, 9)), {}, "must hold 4-D"),
        (np.zeros((2, 16, 12, 3)), {}, "not a square grid"),
        (np.zeros((2, 0, 16, 3)), {}, "0 frames"),
        (np.full((2, 16, 16, 3), np.nan), {}, "NaN"),
        (np.zeros((2, 16, 4, 3)), {"pool_stride": 4}, "larger than the 2 x 2"),
    ],
)
def test_bad_input(X, params, match):
    with pytest.raises(ValueError, match=match):
        F16ClipCompressor(**params).fit(X)


def test_bad_params_and_mismatch():
    with pytest.raises(ValueError, match="frames_per_clip"):
        F16ClipCompressor(frames_per_clip=0).fit(_features(16))
    comp = F16ClipCompressor(random_state=0).fit(_features(16))
    with pytest.raises(ValueError, match="fitted with 16 tokens of 3 channels"):
        comp.transform(_features(16, c=4))
    with pytest.raises(ValueError, match="frame_projector expects 5 input channels"):
        F16ClipCompressor(frame_projector=make_frame_projector(5, 2)).fit(_features(16))
    # a non-square grid is fine when nothing is pooled
    out = F16ClipCompressor(pool_stride=1, random_state=0).fit_transform(_features(16, n=12))
    assert out.shape == (2, 1, 12, 32)
