"""Control/treated data with batch effects, for CellFlux's batch-effect and OOD studies."""


import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils import check_random_state
from ..utils._param_validation import ANY_REAL, OPEN_UNIT_INTERVAL, POSITIVE_INT, POSITIVE_REAL


@validate_params(
    {
        "n_per_batch": [POSITIVE_INT],
        "offsets": ["array-like"],
        "effect": [ANY_REAL],
        "std": [POSITIVE_REAL],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_batch_shift_1d(n_per_batch=4000, *, offsets=(-2.0, 2.0), effect=1.5, std=0.5,
                        random_state=None):
    """1-D controls and treated rows in batches with an offset each.

    Batch ``b`` has controls ``N(b, std^2)`` and treated rows (perturbation ``"A"``)
    ``N(b + effect, std^2)``, ``n_per_batch`` of each.

    Parameters
    ----------
    n_per_batch : int, default=4000
        Controls per batch, and treated rows per batch.
    offsets : tuple of float, default=(-2.0, 2.0)
        The batch offsets; each offset is also the batch id.
    effect : float, default=1.5
        Mean shift of the perturbation.
    std : float, default=0.5
        Standard deviation of every group.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : ndarray of shape (2 * n_per_batch * n_batches, 1)
    y : ndarray of str, ``"control"`` or ``"A"``
    batch : ndarray of float, the batch offset of each row

    Examples
    --------
    >>> from sklearn_icml.datasets import make_batch_shift_1d
    >>> X, y, batch = make_batch_shift_1d(10, random_state=0)
    >>> X.shape, sorted(set(y.tolist())), sorted(set(batch.tolist()))
    ((40, 1), ['A', 'control'], [-2.0, 2.0])
    """
    n = int(n_per_batch)
    offsets = _finite_offsets(offsets)
    rng = check_random_state(random_state)
    X, y, batch = [], [], []
    for b in offsets:
        X += [rng.normal(b, std, n), rng.normal(b + effect, std, n)]
        y += [np.full(n, "control"), np.full(n, "A")]
        batch += [np.full(n, b), np.full(n, b)]
    return np.concatenate(X)[:, None], np.concatenate(y), np.concatenate(batch)


def _finite_offsets(offsets):
    values = np.asarray(offsets, dtype=np.float64).ravel()
    if values.size < 1 or not np.all(np.isfinite(values)):
        raise ValueError(f"offsets must be finite numbers. Got {offsets!r} instead.")
    return values


@validate_params(
    {
        "n_per_class": [POSITIVE_INT],
        "n_features": [POSITIVE_INT],
        "n_perturbations": [POSITIVE_INT],
        "shift": [ANY_REAL],
        "scale": [ANY_REAL],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_gaussian_perturbations(n_per_class=3000, *, n_features=8, n_perturbations=3,
                                shift=3.0, scale=0.5, random_state=None):
    """Gaussian controls and perturbations that shift and shrink one axis each.

    Controls are ``N(0, I)``; perturbation ``k`` (label ``"P<k>"``) moves the mean by
    ``shift * e_k`` and scales coordinate ``k`` by ``scale``.

    Parameters
    ----------
    n_per_class : int, default=3000
        Rows of the control group and of each perturbation.
    n_features : int, default=8
    n_perturbations : int, default=3
        At most ``n_features``.
    shift, scale : float, default=3.0, 0.5
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : ndarray of shape ((n_perturbations + 1) * n_per_class, n_features)
    y : ndarray of str, ``"control"`` or ``"P0"``, ``"P1"``, ...

    Examples
    --------
    >>> from sklearn_icml.datasets import make_gaussian_perturbations
    >>> X, y = make_gaussian_perturbations(5, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((20, 8), ['P0', 'P1', 'P2', 'control'])
    """
    n, d, k = int(n_per_class), int(n_features), int(n_perturbations)
    if k > d:
        raise ValueError(
            f"n_perturbations must be at most n_features={d}. Got {n_perturbations!r} instead."
        )
    rng = check_random_state(random_state)
    X = [rng.normal(size=(n, d))]
    y = [np.full(n, "control", dtype=object)]
    for j in range(k):
        Z = rng.normal(size=(n, d))
        Z[:, j] = scale * Z[:, j] + shift
        X.append(Z)
        y.append(np.full(n, f"P{j}", dtype=object))
    return np.concatenate(X), np.concatenate(y).astype(str)


def _perturb_digit(image, kind):
    from scipy import ndimage

    if kind == "P1":  # shift right by one pixel
        out = np.zeros_like(image)
        out[:, 1:] = image[:, :-1]
        return out
    if kind == "P2":  # shift down by one pixel
        out = np.zeros_like(image)
        out[1:, :] = image[:-1, :]
        return out
    return ndimage.grey_dilation(image, size=(3, 3))  # P3


@validate_params(
    {
        "offsets": ["array-like"],
        "control_fraction": [OPEN_UNIT_INTERVAL],
        "images": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_digits_screen(*, offsets=(0.0, 2.0, 4.0), control_fraction=0.5, images=False,
                       random_state=None):
    """A digits "virtual screen": batches with intensity offsets, three perturbations.

    The 1797 images of :func:`sklearn.datasets.load_digits` (bundled, no download) are
    split at random into batches (one per offset) and, within each batch, into controls
    (untransformed) and treated images; each treated image gets one perturbation at
    random: ``"P1"`` shift right by 1 px, ``"P2"`` shift down by 1 px, ``"P3"`` dilation
    with a 3x3 max filter. Then the batch offset is added to every pixel of the image.

    Parameters
    ----------
    offsets : tuple of float, default=(0.0, 2.0, 4.0)
        Intensity offset of each batch (pixel scale 0-16); batch ids are 0, 1, 2, ...
    control_fraction : float, default=0.5
        Share of each batch kept as controls.
    images : bool, default=False
        Return ``X`` as ``(n, 1, 8, 8)`` images instead of 64-d vectors.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : ndarray of shape (1797, 64) or (1797, 1, 8, 8)
    y : ndarray of str, ``"control"``, ``"P1"``, ``"P2"`` or ``"P3"``
    batch : ndarray of int
    digit : ndarray of int, the digit class of each image

    Examples
    --------
    >>> from sklearn_icml.datasets import make_digits_screen
    >>> X, y, batch, digit = make_digits_screen(random_state=0)
    >>> X.shape, sorted(set(y.tolist())), sorted(set(batch.tolist()))
    ((1797, 64), ['P1', 'P2', 'P3', 'control'], [0, 1, 2])
    """
    from sklearn.datasets import load_digits

    offsets = _finite_offsets(offsets)
    rng = check_random_state(random_state)
    digits = load_digits()
    imgs, digit = digits.images.astype(np.float64), digits.target.astype(np.int64)
    n = imgs.shape[0]
    batch = rng.randint(0, offsets.size, size=n)
    is_control = rng.random_sample(n) < control_fraction
    kinds = np.array(["P1", "P2", "P3"])[rng.randint(0, 3, size=n)]
    y = np.where(is_control, "control", kinds)
    out = np.empty_like(imgs)
    for i in range(n):
        img = imgs[i] if is_control[i] else _perturb_digit(imgs[i], y[i])
        out[i] = img + offsets[batch[i]]
    X = out[:, None] if images else out.reshape(n, 64)
    return X, y.astype(str), batch.astype(np.int64), digit
