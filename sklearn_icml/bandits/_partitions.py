"""Partitions of the grid: random shifted cells, exposure of a unit's ball, its probability.

The cluster-randomised design of Jia, Frazier and Kallus (ICML 2025) cuts the ``L x L`` grid
into square cells of side ``cell_size`` shifted by ``(s_x, s_y) ~ U[0, cell_size)^2``; every
cell draws one arm. A unit is exposed to an arm when its whole ball has it, and
:func:`exposure_probability` gives the exact probability of that event.
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params


def _check_cell_size(cell_size, radius):
    """``cell_size`` as a float, checked against the exposure radius."""
    if not (np.isfinite(cell_size) and cell_size >= 1):
        raise ValueError(
            "cell_size must be >= 1 and finite (a cell narrower than a unit leaves empty "
            f"cells). Got {cell_size!r} instead."
        )
    if cell_size <= 2 * radius:
        raise ValueError(
            f"cell_size must be > 2 * exposure_radius = {2 * radius} so that a ball spans at "
            f"most 2 cells along each axis. Got {cell_size!r} instead."
        )
    return float(cell_size)


def _cell_index(grid_side, cell_size, shift):
    """Cell of each coordinate ``0..L-1`` under the shift: ``floor((x + s) / cell_size)``."""
    return np.floor((np.arange(grid_side) + shift) / cell_size).astype(np.intp)


def _straddle_fraction(grid_side, radius, cell_size):
    """``a(x) = w(x) / cell_size``: chance that a cell border falls inside the clipped ball."""
    x = np.arange(grid_side)
    width = np.minimum(grid_side - 1, x + radius) - np.maximum(0, x - radius)
    return width / cell_size


def _realised_cell_count(grid_side, radius, cell_size, shift):
    """Number of cells (1, 2 or 4) that the ball ``B(u, radius)`` touches, shape (L, L)."""
    counts = []
    for s in shift:
        cells = _cell_index(grid_side, cell_size, s)
        x = np.arange(grid_side)
        lo = np.maximum(0, x - radius)
        hi = np.minimum(grid_side - 1, x + radius)
        counts.append(1 + (cells[hi] != cells[lo]).astype(np.intp))
    return counts[0][:, None] * counts[1][None, :]


def _window_indices(n, radius):
    """Index arrays ``min(x + d, n - 1)`` and ``max(x - d, 0)`` for ``d = 1..radius``."""
    x = np.arange(n)
    return [idx for d in range(1, radius + 1)
            for idx in (np.minimum(x + d, n - 1), np.maximum(x - d, 0))]


def _window_min_max(low, high, indices, axis):
    """Running min of ``low`` and max of ``high`` over the clipped window along ``axis``."""
    out_low, out_high = low.copy(), high.copy()
    for idx in indices:
        np.minimum(out_low, np.take(low, idx, axis=axis), out=out_low)
        np.maximum(out_high, np.take(high, idx, axis=axis), out=out_high)
    return out_low, out_high


def _monochrome_ball(Z, radius, indices=None):
    """``True`` where every unit of the clipped Chebyshev ball ``B(u, radius)`` has ``Z[u]``.

    Exact integer comparison of the ball's minimum and maximum arm (separable filters).
    ``indices`` may pass precomputed ``(_window_indices(L0, r), _window_indices(L1, r))``.
    """
    if radius == 0:
        return np.ones(Z.shape, dtype=bool)
    if indices is None:
        indices = (_window_indices(Z.shape[0], radius), _window_indices(Z.shape[1], radius))
    low, high = _window_min_max(Z, Z, indices[0], 0)
    low, high = _window_min_max(low, high, indices[1], 1)
    return low == high


def _mixture_weights(grid_side, radius, cell_size):
    """Weights of ``p``, ``p**2``, ``p**4`` in the exposure probability, each (L, L)."""
    ax = _straddle_fraction(grid_side, radius, cell_size)
    one = np.outer(1 - ax, 1 - ax)
    two = np.outer(1 - ax, ax) + np.outer(ax, 1 - ax)
    four = np.outer(ax, ax)
    return one, two, four


def _own_arm_exposure(pz, weights, counts=None):
    """``P(E_{u, Z_u})`` for every unit, from ``pz = p[Z]``.

    ``counts`` (the realised cell counts of a fixed partition) gives ``pz ** counts``;
    otherwise ``weights = _mixture_weights(...)`` mixes ``pz``, ``pz**2`` and ``pz**4``.
    """
    if counts is not None:
        return pz**counts
    one, two, four = weights
    pz2 = pz * pz
    return one * pz + two * pz2 + four * pz2 * pz2


@validate_params(
    {
        "p": ["array-like"],
        "grid_side": [Interval(numbers.Integral, 1, None, closed="left")],
        "radius": [Interval(numbers.Integral, 0, None, closed="left")],
        "cell_size": [Interval(numbers.Real, 0, None, closed="neither")],
        "shift": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def exposure_probability(p, grid_side, radius, cell_size, *, shift=None):
    """Probability that the whole ball ``B(u, radius)`` of each unit gets arm ``i``.

    Under the cluster-randomised design the grid is cut into square cells of side
    ``cell_size`` shifted by ``(s_x, s_y) ~ U[0, cell_size)^2`` and each cell draws an arm
    from ``p``. A unit is *exposed* to arm ``i`` when every unit within Chebyshev distance
    ``radius`` (clipped to the grid) has arm ``i``. With ``a_x(u) = w_x(u) / cell_size``,
    ``w_x(u) = min(L-1, x_u + r) - max(0, x_u - r)``, the ball spans 2 cells along ``x``
    with probability ``a_x(u)``, so

    ``P(E_{u,i}) = sum_{c_x, c_y in {1, 2}} P(c_x) P(c_y) p_i^(c_x c_y)``.

    Parameters
    ----------
    p : array-like of shape (n_arms,)
        Arm probabilities of the cells (non-negative, summing to 1).
    grid_side : int
        Side ``L`` of the grid.
    radius : int
        Exposure radius ``r >= 0``.
    cell_size : float
        Cell side ``l``; must be ``>= 1`` and ``> 2 * radius``.
    shift : array-like of shape (2,), default=None
        A fixed partition's shift: then the probability is ``p_i^c(u)`` with ``c(u)`` the
        number of cells that the ball actually touches.

    Returns
    -------
    prob : ndarray of shape (n_arms, grid_side, grid_side)

    See Also
    --------
    ClusterRandomizedEXP3IX : the policy whose HT-IX estimator divides by this.

    References
    ----------
    .. [1] S. Jia, P. Frazier, N. Kallus, "Multi-Armed Bandits with Interference: Bridging
       Causal Inference and Adversarial Bandits", ICML 2025, arXiv:2402.01845.

    Examples
    --------
    >>> from sklearn_icml.bandits import exposure_probability
    >>> prob = exposure_probability([0.5, 0.5], grid_side=12, radius=1, cell_size=6)
    >>> prob.shape
    (2, 12, 12)
    >>> float(prob[0, 0, 0])  # corner: the ball is 1 unit wide in each axis
    0.4184...
    >>> float(prob[0, 5, 5])  # interior: a = 2/6 in each axis
    0.3402...
    """
    p = np.array(p, dtype=float)
    if p.ndim != 1 or p.size < 1:
        raise ValueError(f"p must be a non-empty 1-D array. Got shape {p.shape} instead.")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ValueError(
            f"p must hold non-negative probabilities summing to 1. Got {p!r} instead."
        )
    L, r = int(grid_side), int(radius)
    cell_size = _check_cell_size(cell_size, r)
    pp = p[:, None, None]
    if shift is not None:
        shift = np.asarray(shift, dtype=float)
        if shift.shape != (2,) or np.any(shift < 0) or np.any(shift >= cell_size):
            raise ValueError(
                f"shift must be 2 numbers in [0, cell_size={cell_size!r}). "
                f"Got {shift!r} instead."
            )
        return pp ** _realised_cell_count(L, r, cell_size, shift)[None]
    one, two, four = _mixture_weights(L, r, cell_size)
    return one[None] * pp + two[None] * pp**2 + four[None] * pp**4
