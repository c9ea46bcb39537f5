"""Random partitions of the grid, exposure of a unit's ball, and its exact probability.

The cluster-randomised design of Jia, Frazier and Kallus (ICML 2025) cuts the ``L x L`` grid
into clusters with a random partition and lets every cluster draw one arm. Two partitions
are here: the paper's robust random partition (RRP: square cells whose border strips and
corner quads join a neighbouring cell at random) and square cells shifted by
``(s_x, s_y) ~ U[0, cell_size)^2``. A unit is exposed to an arm when its whole ball has it,
and :func:`exposure_probability` gives the exact probability of that event.
"""

import functools
import itertools

import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_params

from ..utils._param_validation import NON_NEGATIVE_INT, POSITIVE_INT, POSITIVE_REAL


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

    ``Z`` has shape ``(..., L0, L1)`` (a batch of assignments is checked at once). Exact
    integer comparison of the ball's minimum and maximum arm (separable filters).
    ``indices`` may pass precomputed ``(_window_indices(L0, r), _window_indices(L1, r))``.
    """
    if radius == 0:
        return np.ones(Z.shape, dtype=bool)
    if indices is None:
        indices = (_window_indices(Z.shape[-2], radius), _window_indices(Z.shape[-1], radius))
    low, high = _window_min_max(Z, Z, indices[0], -2)
    low, high = _window_min_max(low, high, indices[1], -1)
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
        "grid_side": [POSITIVE_INT],
        "radius": [NON_NEGATIVE_INT],
        "cell_size": [POSITIVE_REAL],
        "partition": [StrOptions({"rrp", "shifted_grid"})],
        "strip_width": [NON_NEGATIVE_INT, None],
        "shift": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def exposure_probability(
    p, grid_side, radius, cell_size, *, partition="rrp", strip_width=None, shift=None
):
    """Probability that the whole ball ``B(u, radius)`` of each unit gets arm ``i``.

    The grid is cut into clusters, every cluster draws an arm from ``p``, and a unit is
    *exposed* to arm ``i`` when every unit within Chebyshev distance ``radius`` (clipped
    to the grid) has arm ``i``: with ``c(u)`` the number of distinct clusters its ball
    touches, ``P(E_{u,i}) = E[p_i ** c(u)]``, the expectation taken over the partition.

    ``partition="rrp"`` is the robust random partition of [1]_: the grid's uniform
    clustering into ``cell_size x cell_size`` cells, with a strip of ``strip_width`` units
    around every border between two cells, assigned to one of those two cells, and a quad
    where two strips cross, assigned to one of its four cells, all with equal
    probabilities and independently. The law of ``c(u)`` is enumerated exactly over the
    strips and quads that the ball meets (at most 16 assignments when ``strip_width >=
    2 radius`` and ``cell_size >= strip_width + 2 radius``, at most 4096 otherwise).

    ``partition="shifted_grid"`` shifts the cells by ``(s_x, s_y) ~ U[0, cell_size)^2``:
    with ``a_x(u) = w_x(u) / cell_size``, ``w_x(u) = min(L-1, x_u + r) - max(0, x_u -
    r)``, the ball spans 2 cells along ``x`` with probability ``a_x(u)``, so
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
        Cell side ``l``; must be ``>= 1`` and ``> 2 * radius``, and a whole number for
        ``"rrp"``.
    partition : {"rrp", "shifted_grid"}, default="rrp"
        The random partition.
    strip_width : int, default=None
        Width of the RRP's strips, in ``[0, cell_size]``; ``None`` uses ``2 * radius``.
        Ignored by ``"shifted_grid"``.
    shift : array-like of shape (2,), default=None
        ``"shifted_grid"`` only: a fixed partition's shift; then the probability is
        ``p_i^c(u)`` with ``c(u)`` the number of cells that the ball actually touches.

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
    >>> float(prob[0, 0, 0])  # corner: the ball lies in one cell's core
    0.5
    >>> float(prob[0, 4, 2])  # next to a strip: p / 2 + p**2 / 2
    0.375
    >>> float(prob[0, 5, 5])  # in a quad: it meets a core, two strips and the quad
    0.1992...
    >>> float(exposure_probability([0.5, 0.5], 12, 1, 6, partition="shifted_grid")[0, 5, 5])
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
    pp = p[:, None, None]
    if partition == "rrp":
        if shift is not None:
            raise ValueError(
                f"shift is for partition='shifted_grid' only. Got shift={shift!r} instead."
            )
        ell, w = _check_rrp(cell_size, strip_width, r)
        return _RRPLayout(L, r, ell, w).exposure(np.broadcast_to(pp, (p.size, L, L)))
    cell_size = _check_cell_size(cell_size, r)
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


# --------------------------------------------------------------------------------------
# the robust random partition (RRP)
#
# Along each axis the coordinates 0..L-1 fall into regions that alternate: the core of
# cell c (region 2c) and the strip around the border between cells c and c+1 (region
# 2c+1), the strip covering coordinates [(c+1) l - w // 2, (c+1) l - w // 2 + w). A
# two-dimensional region (i, j) is a core (i, j even), a strip between two cells (one of
# i, j odd) or a quad between four cells (both odd). Each round, every strip joins one of
# its two cells and every quad one of its four, uniformly and independently; a quad's
# uniform choice among four cells is an independent uniform choice along each axis.


def _check_rrp(cell_size, strip_width, radius):
    """``(cell_size, strip_width)`` as ints, checked against each other and the radius."""
    if not (np.isfinite(cell_size) and float(cell_size).is_integer() and cell_size >= 1):
        raise ValueError(
            "cell_size must be a whole number >= 1 for partition='rrp' (cells are blocks of "
            f"units). Got {cell_size!r} instead."
        )
    ell = int(cell_size)
    if ell <= 2 * radius:
        raise ValueError(
            f"cell_size must be > 2 * exposure_radius = {2 * radius} so that a ball meets at "
            f"most three regions along each axis. Got {cell_size!r} instead."
        )
    w = 2 * radius if strip_width is None else strip_width
    if not (0 <= w <= ell):
        raise ValueError(
            f"strip_width must be in [0, cell_size={ell}] (strips of neighbouring borders "
            f"must not overlap). Got {strip_width!r} instead."
        )
    return ell, int(w)


def _rrp_axis_regions(grid_side, cell_size, strip_width):
    """Region index of every coordinate ``0..L-1`` along one axis, and the number of cells.

    Region ``2c`` is the core of cell ``c``; region ``2c + 1`` the strip of the border
    between cells ``c`` and ``c + 1``.
    """
    x = np.arange(grid_side)
    n_cells = -(-grid_side // cell_size)
    half = strip_width // 2
    cell = x // cell_size
    # the strip of the border at c * l starts at c * l - half and has strip_width units
    low = (cell >= 1) & (x < cell * cell_size - half + strip_width)
    high = (cell + 1 < n_cells) & (x >= (cell + 1) * cell_size - half) & (strip_width > 0)
    region = 2 * cell - low.astype(np.intp) + high.astype(np.intp)
    return region.astype(np.intp), int(n_cells)


def _window_regions(region, radius):
    """The distinct regions met by the clipped window ``[x - r, x + r]`` of every ``x``."""
    n = region.size
    return [
        tuple(np.unique(region[max(0, x - radius) : min(n - 1, x + radius) + 1]).tolist())
        for x in range(n)
    ]


def _candidate_cells(region):
    """The cells a region may join along its axis: its own, or the two beside a border."""
    return (region // 2,) if region % 2 == 0 else (region // 2, region // 2 + 1)


@functools.cache
def _distinct_cell_law(x_regions, y_regions):
    """Law of the number of distinct cells that a ball meeting these regions touches.

    ``x_regions`` and ``y_regions`` are the (relative) region indices the ball meets along
    each axis. Every two-dimensional region picks one cell, uniformly among its candidates
    and independently of the others; the assignments are enumerated exactly.

    Returns
    -------
    law : tuple of float
        ``law[c - 1]`` is the probability of touching ``c`` distinct cells.
    """
    choices = [
        [(cx, cy) for cx in _candidate_cells(i) for cy in _candidate_cells(j)]
        for i in x_regions
        for j in y_regions
    ]
    law = np.zeros(len(choices))
    mass = 1.0 / np.prod([len(c) for c in choices])
    for assignment in itertools.product(*choices):
        law[len(set(assignment)) - 1] += mass
    return tuple(law.tolist())


def _relative(regions):
    """Regions shifted by an even offset so the first lies in {0, 1} (same cell pattern)."""
    offset = 2 * (regions[0] // 2)
    return tuple(r - offset for r in regions)


class _RRPLayout:
    """The regions of an ``L x L`` grid under an ``(l, w)`` RRP and their exposure laws.

    Attributes
    ----------
    region : ndarray of shape (L,)
        Region index of each coordinate (the same along both axes).
    n_cells : int
        Cells along each axis.
    n_regions : int
        Regions along each axis (some strips are empty when ``strip_width == 0``).
    cell_count_law : ndarray of shape (L, L, c_max)
        ``[x, y, c - 1]``: probability that the ball of unit ``(x, y)`` touches ``c``
        distinct cells, so that ``P(E_{u,i}) = sum_c law[u, c - 1] * p_i ** c``.
    """

    def __init__(self, grid_side, radius, cell_size, strip_width):
        self.grid_side, self.radius = grid_side, radius
        self.region, self.n_cells = _rrp_axis_regions(grid_side, cell_size, strip_width)
        self.n_regions = 2 * self.n_cells - 1
        self.present = np.zeros(self.n_regions, dtype=bool)
        self.present[self.region] = True
        windows = _window_regions(self.region, radius)
        keys = [_relative(w) for w in windows]
        distinct = sorted(set(keys))
        code = np.array([distinct.index(key) for key in keys])
        laws = [[_distinct_cell_law(kx, ky) for ky in distinct] for kx in distinct]
        c_max = max(len(v) for row in laws for v in row)
        table = np.zeros((len(distinct), len(distinct), c_max))
        for a, row in enumerate(laws):
            for b, v in enumerate(row):
                table[a, b, : len(v)] = v
        self.cell_count_law = table[code[:, None], code[None, :]]
        self._windows = windows

    def exposure(self, pz):
        """``P(E_{u,i})`` for ``pz`` (probabilities ``p_i``) of shape ``(..., L, L)``."""
        out = np.zeros(np.shape(pz))
        power = np.ones(np.shape(pz))
        for c in range(self.cell_count_law.shape[-1]):
            power = power * pz
            out += self.cell_count_law[..., c] * power
        return out

    def draw_cells(self, rng, size=()):
        """The cell ``(cx, cy)`` every two-dimensional region joins, ``size`` draws at once.

        One ``rng.integers(0, 2, size=(*size, 2, R, R))`` call.
        """
        R = self.n_regions
        idx = np.arange(R)
        coin = rng.integers(0, 2, size=(*size, 2, R, R), dtype=np.intp)
        cx = (idx // 2)[:, None] + (idx % 2)[:, None] * coin[..., 0, :, :]
        cy = (idx // 2)[None, :] + (idx % 2)[None, :] * coin[..., 1, :, :]
        return cx, cy

    def assign(self, cx, cy, cell_arms):
        """The unit-level assignment ``Z`` from the regions' cells and the cells' arms.

        ``cell_arms`` has shape ``(*size, n_cells, n_cells)``; ``Z`` has ``(*size, L, L)``.
        """
        lead = cell_arms.shape[:-2]
        flat = cell_arms.reshape(-1, self.n_cells * self.n_cells)
        ids = (cx * self.n_cells + cy).reshape(flat.shape[0], -1)
        region_arms = np.take_along_axis(flat, ids, axis=1)
        region_arms = region_arms.reshape(*lead, self.n_regions, self.n_regions)
        return region_arms[..., self.region[:, None], self.region[None, :]]

    def n_used_cells(self, cx, cy):
        """Number of distinct cells that hold at least one unit (one draw)."""
        keep = self.present[:, None] & self.present[None, :]
        return int(np.unique((cx * self.n_cells + cy)[keep]).size)

    def realised_cell_count(self, cx, cy):
        """Distinct cells touched by every unit's ball under one drawn partition, (L, L)."""
        ids = cx * self.n_cells + cy
        L = self.grid_side
        count = np.empty((L, L), dtype=np.intp)
        for x, wx in enumerate(self._windows):
            for y, wy in enumerate(self._windows):
                count[x, y] = np.unique(ids[np.ix_(wx, wy)]).size
        return count


def _draw_rrp(layout, p, rng, size=()):
    """``size`` assignments under the RRP: regions' cells, then every cell's arm from ``p``.

    Consumes ``rng.integers`` (the regions) then ``rng.choice(k, size=(*size, n, n), p=p)``.
    Returns ``(Z, cx, cy)``.
    """
    cx, cy = layout.draw_cells(rng, size)
    n = layout.n_cells
    arms = rng.choice(len(p), size=(*size, n, n), p=p)
    return layout.assign(cx, cy, arms), cx, cy
