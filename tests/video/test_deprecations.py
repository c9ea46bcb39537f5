"""Renamed video names: the old spelling warns (FutureWarning) and gives the same result."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_rotating_dot_videos
from sklearn_icml.datasets._video import direction_bayes_accuracy
from sklearn_icml.video import patch_encode, sample_frame_indices

TINY = {"hidden_dim": 8, "n_layers": 1, "n_heads": 2, "max_epochs": 1, "batch_size": 16,
        "random_state": 0}


def test_frame_functions_take_their_rates_and_sizes_by_keyword():
    with pytest.warns(FutureWarning, match="native_fps, fps"):
        old = sample_frame_indices(16, 16, 4)
    np.testing.assert_array_equal(old, sample_frame_indices(16, native_fps=16, fps=4))
    frames = np.arange(32.0).reshape(2, 4, 4)
    with pytest.warns(FutureWarning, match="patch_size"):
        old = patch_encode(frames, 2)
    np.testing.assert_array_equal(old, patch_encode(frames, patch_size=2))
    with pytest.warns(FutureWarning, match="freq_range"):
        old = direction_bayes_accuracy(4, (1.0, 6.0))
    assert old == direction_bayes_accuracy(4, freq_range=(1.0, 6.0))


def test_classifier_lr_and_frame_rates_by_position_are_deprecated():
    pytest.importorskip("torch")
    pytest.importorskip("skorch")
    from sklearn_icml.video import F16VideoClassifier

    X, y = make_rotating_dot_videos(8, duration_s=1, size=8, random_state=0)
    new = F16VideoClassifier(learning_rate=1e-2, **TINY).fit(X, y, native_fps=16)
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        old = F16VideoClassifier(lr=1e-2, **TINY).fit(X, y)
    np.testing.assert_array_equal(old.predict_proba(X), new.predict_proba(X))
    with pytest.warns(FutureWarning, match="native_fps"):
        F16VideoClassifier(**TINY).fit(X, y, 16)
    expected = new.predict_proba(X, native_fps=16, inference_fps=4)
    with pytest.warns(FutureWarning, match="native_fps, inference_fps"):
        np.testing.assert_array_equal(new.predict_proba(X, 16, 4), expected)
    with pytest.warns(FutureWarning, match="native_fps"):
        np.testing.assert_array_equal(new.predict(X, 16), new.predict(X))
    with pytest.warns(FutureWarning, match="native_fps"):
        assert new.score(X, y, None, 16) == new.score(X, y)
    with pytest.warns(FutureWarning, match="native_fps"):
        np.testing.assert_array_equal(new.clip_tokens(X, 16), new.clip_tokens(X))
