"""F16VideoClassifier: frame rates, leak detection, invariants, reproducibility, bad input."""

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.base import clone  # noqa: E402

from sklearn_icml.datasets import make_rotating_dot_videos  # noqa: E402
from sklearn_icml.video import F16VideoClassifier  # noqa: E402

TINY = {"hidden_dim": 8, "n_layers": 1, "n_heads": 2, "max_epochs": 2, "batch_size": 16}


@pytest.fixture(scope="module")
def videos():
    return make_rotating_dot_videos(24, duration_s=2, size=8, random_state=0)


@pytest.fixture(scope="module")
def fitted(videos):
    X, y = videos
    return F16VideoClassifier(random_state=0, **TINY).fit(X, y)


def test_fit_attributes(fitted, videos):
    X, y = videos
    assert fitted.frame_shape_ == (8, 8) and fitted.grid_ == (2, 2)
    assert fitted.n_tokens_per_clip_ == 1 and fitted.n_clips_ == 2
    assert fitted.n_features_in_ == 64
    np.testing.assert_array_equal(fitted.classes_, [0, 1])
    assert fitted.n_params_ == sum(p.numel() for p in fitted.module_.parameters())
    assert len(fitted.history_) == 2
    proba = fitted.predict_proba(X)
    assert proba.shape == (24, 2)
    np.testing.assert_allclose(proba.sum(1), 1, atol=1e-6)
    assert set(fitted.predict(X)) <= {0, 1}
    assert 0 <= fitted.score(X, y) <= 1


def test_tokens_per_second_do_not_change_with_frame_rate(fitted, videos):
    # the per-second token count is an invariant of the frame rate
    X, _ = videos
    shapes = {fitted.clip_tokens(X, inference_fps=r).shape for r in (16, 8, 4, 2, 1)}
    assert shapes == {(24, 2, 1, 8)}


def _perturb_except(X, keep):
    out = X.copy()
    mask = np.ones(X.shape[1], bool)
    mask[keep] = False
    out[:, mask] = np.random.RandomState(5).rand(*out[:, mask].shape)
    return out


def test_no_leak_of_unsampled_frames(videos):
    # leak detector: a 4-FPS model only sees frames 0, 4, 8, ...; reading at
    # inference_fps=2 only frames 0, 8, 16, 24
    X, y = videos
    clf = F16VideoClassifier(fps=4, random_state=0, **TINY).fit(X, y)
    p = clf.predict_proba(X)
    np.testing.assert_array_equal(p, clf.predict_proba(_perturb_except(X, np.arange(0, 32, 4))))
    assert not np.array_equal(p, clf.predict_proba(_perturb_except(X, np.arange(0, 32, 8))))
    p2 = clf.predict_proba(X, inference_fps=2)
    np.testing.assert_array_equal(
        p2, clf.predict_proba(_perturb_except(X, np.arange(0, 32, 8)), inference_fps=2)
    )


def test_native_frame_rate_sampling(fitted, videos):
    # native 32 FPS read at 16 keeps every 2nd frame
    X, _ = videos
    X32 = np.repeat(X, 2, axis=1)
    X32[:, 1::2] = np.random.RandomState(0).rand(*X32[:, 1::2].shape)
    np.testing.assert_array_equal(
        fitted.predict_proba(X32, native_fps=32), fitted.predict_proba(X)
    )


def test_low_fps_decoding_equals_repeated_frames(fitted, videos):
    # reading at 4 FPS = reading at 16 FPS a video whose frames are held for 4 frames
    X, _ = videos
    held = np.repeat(X[:, ::4], 4, axis=1)
    np.testing.assert_allclose(
        fitted.predict_proba(X, inference_fps=4), fitted.predict_proba(held), atol=1e-6
    )


@pytest.mark.parametrize("aligner", ["meanpool", "single"])
def test_baseline_aligners(videos, aligner):
    X, y = videos
    clf = F16VideoClassifier(aligner=aligner, random_state=0, **TINY).fit(X, y)
    p = clf.predict_proba(X)
    if aligner == "single":  # only the first frame of each second matters
        np.testing.assert_array_equal(p, clf.predict_proba(_perturb_except(X, [0, 16])))
    else:  # order inside a clip is discarded
        perm = np.concatenate([np.random.RandomState(0).permutation(16) + 16 * k for k in (0, 1)])
        np.testing.assert_allclose(p, clf.predict_proba(X[:, perm]), atol=1e-5)


def test_multiframe_reads_time_order(fitted, videos):
    X, _ = videos
    perm = np.concatenate([np.random.RandomState(0).permutation(16) + 16 * k for k in (0, 1)])
    assert not np.allclose(fitted.predict_proba(X), fitted.predict_proba(X[:, perm]), atol=1e-4)


def test_reproducible_clone_pickle(fitted, videos):
    X, y = videos
    again = clone(fitted).fit(X, y)
    np.testing.assert_array_equal(fitted.predict_proba(X), again.predict_proba(X))
    params = fitted.get_params()
    assert clone(fitted).set_params(**params).get_params() == params
    other = F16VideoClassifier(random_state=1, **TINY).fit(X, y)
    assert not np.allclose(fitted.predict_proba(X), other.predict_proba(X))
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict_proba(X), fitted.predict_proba(X))


def test_input_not_modified_colour_and_string_labels():
    X, y = make_rotating_dot_videos(12, duration_s=1, size=8, random_state=1)
    Xc = np.repeat(X[..., None], 3, axis=-1).astype(np.float64)
    Xc_copy = Xc.copy()
    labels = np.array(["ccw", "cw"])[y]
    clf = F16VideoClassifier(random_state=0, **TINY).fit(Xc, labels)
    assert clf.module_.aligner.in_dim == 48  # 4 x 4 patches x 3 channels
    assert set(clf.predict(Xc)) <= {"ccw", "cw"}
    np.testing.assert_array_equal(Xc, Xc_copy)


@pytest.mark.slow
def test_learns_the_radius_task():
    # every frame carries the label: a small model must learn it, at 16 FPS and 8 FPS
    X, y = make_rotating_dot_videos(240, duration_s=1, task="radius", random_state=0)
    Xt, yt = make_rotating_dot_videos(120, duration_s=1, task="radius", random_state=1)
    clf = F16VideoClassifier(hidden_dim=16, n_layers=1, max_epochs=12, random_state=0).fit(X, y)
    assert clf.score(Xt, yt) >= 0.85
    assert clf.score(Xt, yt, inference_fps=8) >= 0.6


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.zeros((4, 16, 8)), "must hold videos of shape"),
        (np.zeros((4, 16, 8, 8, 2)), "3 colour channels"),
        (np.zeros((4, 16, 6, 8)), "patch_size=4 must divide"),
        (np.zeros((4, 0, 8, 8)), "0 frames"),
        (np.full((4, 16, 8, 8), np.inf), "infinity"),
    ],
)
def test_bad_videos(X, match):
    with pytest.raises(ValueError, match=match):
        F16VideoClassifier(**TINY).fit(X, [0, 1, 0, 1])


def test_bad_rates_and_shapes(fitted, videos):
    X, y = videos
    with pytest.raises(ValueError, match="must divide the training fps=16"):
        fitted.predict(X, inference_fps=3)
    with pytest.raises(ValueError, match="must divide the training fps=16"):
        fitted.predict(X, inference_fps=32)
    with pytest.raises(ValueError, match="inference_fps"):
        fitted.predict(X, inference_fps=0)
    with pytest.raises(ValueError, match="cannot be upsampled"):
        fitted.predict(X, native_fps=8)
    with pytest.raises(ValueError, match="cannot be upsampled"):
        F16VideoClassifier(**TINY).fit(X, y, native_fps=8)
    with pytest.raises(ValueError, match="fitted on frames of shape"):
        fitted.predict(np.zeros((2, 32, 12, 12)))
    with pytest.raises(ValueError, match="trained on videos of 2 clips"):
        fitted.predict(np.zeros((2, 48, 8, 8)))
    with pytest.raises(ValueError, match="NaN"):
        fitted.predict(np.full((2, 32, 8, 8), np.nan))
    with pytest.raises(ValueError, match="fps=3 must divide frames_per_clip=16"):
        F16VideoClassifier(fps=3, **TINY).fit(X, y)
    with pytest.raises(ValueError, match="frames_per_clip"):
        F16VideoClassifier(frames_per_clip=0).fit(X, y)
    with pytest.raises(ValueError, match="larger than the 2 x 2 patch grid"):
        F16VideoClassifier(pool_stride=4, **TINY).fit(X, y)
    with pytest.raises(ValueError, match="same number of videos"):
        F16VideoClassifier(**TINY).fit(X, y[:-1])


@pytest.mark.parametrize("estimator_name", ["F16VideoClassifier", "F16ClipCompressor"])
def test_unfitted_estimators_raise_not_fitted(estimator_name):
    # the data-free API checks of these non-2-D estimators run in tests/test_common.py
    from sklearn.utils import estimator_checks

    import sklearn_icml.video as video

    estimator = getattr(video, estimator_name)(**TINY if "Classifier" in estimator_name else {})
    estimator_checks.check_estimators_unfitted(estimator_name, estimator)
