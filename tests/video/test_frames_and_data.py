"""Frame sampling, the patch encoder and the rotating-dot generator with its Bayes limits."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_rotating_dot_videos
from sklearn_icml.datasets._video import direction_bayes_accuracy
from sklearn_icml.video._frames import (
    encode_videos,
    frame_step,
    patch_encode,
    sample_frame_indices,
)


def test_frame_sampling_rules():
    # native 30 -> 16 keeps every 2nd frame (15 effective FPS, as the reference)
    assert frame_step(30, 16) == 2
    np.testing.assert_array_equal(sample_frame_indices(10, native_fps=30, fps=16), [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(sample_frame_indices(16, native_fps=16, fps=4), [0, 4, 8, 12])
    np.testing.assert_array_equal(sample_frame_indices(5, native_fps=16, fps=16), np.arange(5))
    # too long: uniform subsampling to max_time * fps frames
    np.testing.assert_array_equal(
        sample_frame_indices(100, native_fps=16, fps=1, max_time=3), [0, 49, 99]
    )


def test_frame_sampling_refuses_upsampling():
    with pytest.raises(ValueError, match="cannot be upsampled"):
        sample_frame_indices(10, native_fps=8, fps=16)


def test_patch_encode_layout():
    frames = np.arange(2 * 4 * 6, dtype=float).reshape(2, 4, 6)
    tokens = patch_encode(frames, patch_size=2)
    assert tokens.shape == (2, 6, 4)  # 2 x 3 grid of 2 x 2 patches
    np.testing.assert_array_equal(tokens[0, 0], [0, 1, 6, 7])
    np.testing.assert_array_equal(tokens[0, 4], [14, 15, 20, 21])  # row 1, column 1
    colour = np.stack([frames, frames + 100, frames + 200], axis=-1)
    ctok = patch_encode(colour, patch_size=2, colour=True)
    assert ctok.shape == (2, 6, 12)
    np.testing.assert_array_equal(ctok[0, 0, :3], [0, 100, 200])


def test_encode_videos_repeats_encoded_frames():
    X = np.random.RandomState(0).rand(2, 32, 8, 8).astype(np.float32)
    slots = encode_videos(X, patch_size=4, native_fps=16, fps=4, frames_per_clip=16)
    assert slots.shape == (2, 32, 4, 16)  # 8 frames at 4 FPS, each repeated 4 times
    for j, frame in enumerate(range(0, 32, 4)):
        expected = patch_encode(X[:, frame], patch_size=4)
        for r in range(4):
            np.testing.assert_array_equal(slots[:, 4 * j + r], expected)


@pytest.mark.parametrize(("fps", "expected"), [(1, 0.5), (2, 0.6), (4, 0.6), (8, 0.6), (16, 1.0)])
def test_bayes_limits_table(fps, expected):
    assert direction_bayes_accuracy(fps) == pytest.approx(expected, abs=1e-6)


def test_bayes_limit_matches_monte_carlo():
    # the exact Bayes rule on the phase increment, by simulation
    rng = np.random.RandomState(0)
    n, s = 200_000, 4
    f = rng.uniform(1, 6, n)
    d = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    u = np.mod(d * f / s, 1.0)
    bins = np.linspace(0, 1, 401)
    pos = np.histogram(u[d > 0], bins)[0]
    neg = np.histogram(u[d < 0], bins)[0]
    acc = np.maximum(pos, neg).sum() / n
    assert acc == pytest.approx(direction_bayes_accuracy(s), abs=0.01)


def _direction_decision(X):
    """Bayes decision at 16 FPS from blob centroids: sign of the mean phase increment."""
    size = X.shape[-1]
    c = (size - 1) / 2
    w = np.clip(X - 0.3, 0, None)
    grid = np.arange(size)
    rows = (w.sum(-1) * grid).sum(-1) / w.sum((-1, -2))
    cols = (w.sum(-2) * grid).sum(-1) / w.sum((-1, -2))
    angle = np.arctan2(rows - c, cols - c)
    step = np.angle(np.exp(1j * np.diff(angle, axis=1)))
    return (step.mean(axis=1) < 0).astype(int)  # label 1 = clockwise (decreasing angle)


def test_generator_shapes_labels_and_reversal():
    X, y = make_rotating_dot_videos(2000, duration_s=1, random_state=0)
    assert X.shape == (2000, 16, 16, 16) and X.dtype == np.float32
    assert set(np.unique(y)) == {0, 1}
    # labels balanced within 3 standard errors
    se = np.sqrt(0.25 / 2000)
    assert abs(y.mean() - 0.5) < 3 * se
    decision = _direction_decision(X[:300])
    assert np.mean(decision == y[:300]) > 0.97
    reversed_decision = _direction_decision(X[:300, ::-1])
    np.testing.assert_array_equal(reversed_decision, 1 - decision)


def test_generator_blob_geometry_and_seed():
    X, y = make_rotating_dot_videos(3, noise=0.0, random_state=1)
    assert X.max() == pytest.approx(1.0, abs=0.3)
    X2, y2 = make_rotating_dot_videos(3, noise=0.0, random_state=1)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    # the blob sits at distance `radius` from the centre
    peak = np.unravel_index(np.argmax(X[0, 0]), X[0, 0].shape)
    assert np.hypot(peak[0] - 7.5, peak[1] - 7.5) == pytest.approx(5.0, abs=1.0)


def test_generator_radius_task():
    X, y = make_rotating_dot_videos(300, duration_s=1, noise=0.0, task="radius", random_state=0)
    assert set(np.unique(y)) == {0, 1, 2}
    peak = X.reshape(300, 16, -1).argmax(-1)
    r = np.hypot(peak // 16 - 7.5, peak % 16 - 7.5).mean(1)
    for label, radius in enumerate((3, 5, 7)):
        assert abs(r[y == label].mean() - radius) < 0.8


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"task": "speed"}, "'task' parameter"),
        ({"radius": -1.0}, "'radius' parameter"),
        ({"blob_sigma": 0.0}, "'blob_sigma' parameter"),
        ({"noise": -0.1}, "'noise' parameter"),
        ({"freq_range": (3.0, 1.0)}, "freq_range must satisfy"),
        ({"freq_range": 3.0}, "'freq_range' parameter"),
        ({"duration_s": 0}, "'duration_s' parameter"),
    ],
)
def test_generator_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_rotating_dot_videos(4, **kwargs)
