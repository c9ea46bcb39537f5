"""Frame sampling, the frozen patch encoder and frame repetition (numpy, no learning)."""


import numpy as np
from sklearn.utils._param_validation import (
    validate_parameter_constraints,
    validate_params,
)

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import NON_NEGATIVE_INT, POSITIVE_INT, POSITIVE_REAL
from ..utils.validation import check_fits_dtype, check_input_array


def frame_step(native_fps, fps):
    """Step between kept frames: ``max(round(native_fps / fps), 1)``.

    As in the authors' data loader, so a 30-FPS video sampled "at 16 FPS" keeps every 2nd
    frame, i.e. 15 effective frames per second.

    Examples
    --------
    >>> from sklearn_icml.video._frames import frame_step
    >>> frame_step(30, 16), frame_step(16, 4)
    (2, 4)
    """
    return max(int(round(native_fps / fps)), 1)


@keyword_only_after(1)
@validate_params(
    {
        "n_frames": [NON_NEGATIVE_INT],
        "native_fps": [POSITIVE_REAL],
        "fps": [POSITIVE_REAL],
        "max_time": [POSITIVE_REAL, None],
    },
    prefer_skip_nested_validation=True,
)
def sample_frame_indices(n_frames, *, native_fps, fps, max_time=None):
    """Indices of the frames kept when sampling a video at ``fps``.

    Keep frames ``0, k, 2k, ...`` with ``k = frame_step(native_fps, fps)``; if more than
    ``max_time * fps`` remain, take ``linspace(0, n_frames - 1, max_time * fps)`` cast to
    int instead (uniform subsampling, the reference's rule for long videos).

    Parameters
    ----------
    n_frames : int
        Frames of the native video.
    native_fps : float
        Native frame rate.
    fps : float
        Target frame rate; must not exceed ``native_fps`` (no upsampling).
    max_time : float or None, default=None
        Maximum number of seconds kept; None keeps everything.

    Returns
    -------
    indices : ndarray of int64

    Examples
    --------
    >>> from sklearn_icml.video import sample_frame_indices
    >>> sample_frame_indices(16, native_fps=16, fps=4)
    array([ 0,  4,  8, 12])
    """
    _refuse_upsampling(native_fps, fps, "native_fps", "fps")
    step = frame_step(native_fps, fps)
    indices = np.arange(0, int(n_frames), step, dtype=np.int64)
    if max_time is not None:
        limit = int(max_time * fps)
        if indices.shape[0] > limit:
            indices = np.linspace(0, n_frames - 1, limit).astype(np.int64)
    return indices


def check_fps(native_fps, fps, native_name="native_fps", fps_name="fps", caller_name=None):
    """Raise unless both rates are positive finite numbers and ``native_fps >= fps``."""
    validate_parameter_constraints(
        {native_name: [POSITIVE_REAL], fps_name: [POSITIVE_REAL]},
        {native_name: native_fps, fps_name: fps},
        caller_name=caller_name or "sample_frame_indices",
    )
    _refuse_upsampling(native_fps, fps, native_name, fps_name)


def _refuse_upsampling(native_fps, fps, native_name, fps_name):
    if native_fps < fps:
        raise ValueError(
            f"{native_name}={native_fps!r} is below {fps_name}={fps!r}: videos cannot be "
            f"upsampled in time (no interpolation); give videos recorded at >= {fps!r} FPS "
            f"or lower {fps_name}. Got {native_name}={native_fps!r} instead."
        )


def check_frame_array(X, ndims, layout, name="X"):
    """Validate a finite float array of ``ndims`` dimensions whose axes 1-3 are not empty.

    ``layout`` names the axes for the error message. Returns a float32 or float64 array
    (a copy when the dtype changes; the caller's array is never modified).
    """
    X = check_input_array(
        X, allow_nd=True, dtype=(np.float32, np.float64), ensure_all_finite=True,
        input_name=name, ensure_min_samples=1,
    )
    if X.ndim not in ndims:
        raise ValueError(f"{name} must hold {layout}. Got an array of shape {X.shape} instead.")
    # the encoder and the networks compute in float32: a finite 1e300 would become inf
    check_fits_dtype(X, name, np.float32)
    if X.shape[1] == 0:
        raise ValueError(f"{name} holds empty videos (0 frames). Got shape {X.shape} instead.")
    if X.shape[2] == 0 or X.shape[3] == 0:
        raise ValueError(f"{name} holds empty frames. Got shape {X.shape} instead.")
    return X


def check_videos(X, name="X"):
    """Validate raw videos: 4-D grayscale ``(n, T, h, w)`` or 5-D colour ``(n, T, h, w, 3)``.

    Returns a float32 array (a copy when the dtype changes; the caller's array is never
    modified). Values outside [0, 1] are accepted (generator noise); NaN/inf are not.
    """
    X = check_frame_array(
        X, (4, 5), "videos of shape (n_videos, n_frames, height, width) (grayscale) or "
        "(n_videos, n_frames, height, width, 3) (colour)", name,
    )
    if X.ndim == 5 and X.shape[-1] != 3:
        raise ValueError(
            f"{name} is 5-D, so its last axis must be the 3 colour channels. Got shape "
            f"{X.shape} instead."
        )
    return np.asarray(X, dtype=np.float32)


@keyword_only_after(1)
@validate_params(
    {
        "frames": ["array-like"],
        "patch_size": [POSITIVE_INT],
        "colour": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def patch_encode(frames, *, patch_size, colour=False):
    """The frozen frame encoder: cut frames into ``p x p`` patches and flatten them.

    Parameters
    ----------
    frames : ndarray of shape (..., h, w), or (..., h, w, 3) when ``colour``
        The frames.
    patch_size : int
        ``p``; must divide ``h`` and ``w``.
    colour : bool, default=False
        Whether the last axis holds the 3 colour channels.

    Returns
    -------
    tokens : ndarray of shape (..., (h/p) * (w/p), p * p * channels)
        Tokens in row-major order of the patch grid; each token is its patch in row-major
        pixel order (channels last).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.video import patch_encode
    >>> patch_encode(np.arange(16.0).reshape(1, 4, 4), patch_size=2)[0, 1]
    array([2., 3., 6., 7.])
    """
    frames = np.asarray(frames)
    if not colour:
        frames = frames[..., None]
    *lead, h, w, ch = frames.shape
    p = int(patch_size)
    gh, gw = h // p, w // p
    x = frames.reshape(*lead, gh, p, gw, p, ch)
    n = len(lead)
    axes = list(range(n)) + [n, n + 2, n + 1, n + 3, n + 4]
    x = x.transpose(axes)  # (..., gh, gw, p, p, ch)
    return np.ascontiguousarray(x.reshape(*lead, gh * gw, p * p * ch))


def encode_videos(X, *, patch_size, native_fps, fps, frames_per_clip):
    """Sample, encode and repeat frames so that every clip covers one second.

    Frames are sampled at ``fps`` (:func:`sample_frame_indices`), encoded once each
    (:func:`patch_encode`), and each encoded frame is repeated ``frames_per_clip / fps``
    times along time, so each group of ``frames_per_clip`` slots is one second of video
    whatever the rate (the frame repetition of Li et al., ICML 2025, for low frame rates).

    Returns
    -------
    slots : ndarray of shape (n, n_slots, N, C), float32
        ``n_slots = n_sampled * frames_per_clip / fps`` (not yet padded to whole clips).
    """
    indices = sample_frame_indices(X.shape[1], native_fps=native_fps, fps=fps)
    tokens = patch_encode(X[:, indices], patch_size=patch_size, colour=X.ndim == 5)
    tokens = tokens.astype(np.float32, copy=False)
    repeat = int(frames_per_clip // fps)
    if repeat > 1:
        tokens = np.repeat(tokens, repeat, axis=1)
    return tokens
