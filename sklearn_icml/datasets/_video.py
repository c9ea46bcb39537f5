"""Rotating-dot videos: a Gaussian blob circling the frame centre, for frame-rate studies."""


import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_params

from ..utils import check_random_state
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL

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
