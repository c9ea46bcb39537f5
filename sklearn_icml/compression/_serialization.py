"""Scan-order serialisation of a LiDAR sweep: laser and azimuth indices, order, windows."""

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _check_feature_names_in

from ..utils import check_generator
from ..utils._params import store_params
from ..utils.validation import validate_input
from ._validation import SCAN_GRID_CONSTRAINTS, check_points

#: the "previous reflectance" of the first point of every window
START_SYMBOL = 256


def spherical_coordinates(points):
    """Radial distance, elevation and azimuth (radians) of points around the origin.

    ``theta = atan2(z, sqrt(x^2 + y^2))`` and ``phi = atan2(y, x)`` in ``(-pi, pi]``. The
    norms go through ``hypot``, which does not square its arguments, so coordinates up to
    the float64 maximum give finite distances (``x * x`` overflows from about 1e154).
    """
    x, y, z = points[:, 0], points[:, 1], points[:, 2]
    horizontal = np.hypot(x, y)
    rho = np.hypot(horizontal, z)
    return rho, np.arctan2(z, horizontal), np.arctan2(y, x)


def laser_indices(theta, n_lasers, elevation_range=None, elevation_table=None):
    """Laser (row) index of each point from its elevation ``theta`` in radians.

    With ``elevation_table`` (degrees, ascending, length ``n_lasers``) the nearest entry
    wins; otherwise the elevation is quantised uniformly over ``elevation_range``
    (degrees): ``v = clip(rint((theta - lo) / dtheta), 0, n_lasers - 1)``.
    """
    if elevation_table is not None:
        table = np.deg2rad(np.asarray(elevation_table, dtype=np.float64))
        # nearest of the two neighbours in the sorted table
        right = np.clip(np.searchsorted(table, theta), 1, max(table.shape[0] - 1, 1))
        left = right - 1
        if table.shape[0] == 1:
            return np.zeros(theta.shape[0], dtype=np.int64)
        take_left = np.abs(theta - table[left]) <= np.abs(table[right] - theta)
        return np.where(take_left, left, right).astype(np.int64)
    if n_lasers == 1:
        return np.zeros(theta.shape[0], dtype=np.int64)
    lo, hi = np.deg2rad(elevation_range[0]), np.deg2rad(elevation_range[1])
    dtheta = (hi - lo) / (n_lasers - 1)
    return np.clip(np.rint((theta - lo) / dtheta), 0, n_lasers - 1).astype(np.int64)


def azimuth_indices(phi, n_azimuth):
    """Azimuth bin of each point: ``clip(floor((phi + pi) / (2 pi / U)), 0, U - 1)``."""
    u = np.floor((phi + np.pi) / (2 * np.pi / n_azimuth))
    return np.clip(u, 0, n_azimuth - 1).astype(np.int64)


@dataclass(frozen=True)
class Windows:
    """A serialised sweep cut into windows of equal length (padded at the end).

    Every array has shape ``(n_windows, window)``. ``index`` maps each slot to the row of
    the caller's point array (-1 at padding); ``mask`` is True at real points.
    """

    index: np.ndarray
    mask: np.ndarray
    v: np.ndarray
    u: np.ndarray
    rho: np.ndarray

    @property
    def n_windows(self):
        return self.index.shape[0]

    @property
    def window(self):
        return self.index.shape[1]


def build_windows(order, group, v, u, rho, window):
    """Cut the serialised sequence into windows of ``window`` points.

    Parameters
    ----------
    order : ndarray of shape (n,)
        Permutation putting the points in coding order.
    group : ndarray of shape (n,)
        Sequence id of each point (its laser, or 0 for one sequence); equal ids are
        contiguous in ``order``. A window never spans two sequences.
    v, u, rho : ndarray of shape (n,)
        Per-point laser index, azimuth index and distance (caller's order).
    window : int
        Points per window; the last window of a sequence is padded.
    """
    n = order.shape[0]
    g = group[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    lengths = np.diff(np.r_[starts, n])
    pos = np.arange(n) - np.repeat(starts, lengths)  # position within its sequence
    windows_per_seq = -(-lengths // window)
    first_window = np.r_[0, np.cumsum(windows_per_seq)[:-1]]
    win = np.repeat(first_window, lengths) + pos // window
    t = pos % window
    n_windows = int(windows_per_seq.sum())
    index = np.full((n_windows, window), -1, dtype=np.int64)
    index[win, t] = order
    mask = index >= 0
    safe = np.where(mask, index, 0)
    return Windows(
        index=index,
        mask=mask,
        v=np.where(mask, v[safe], 0),
        u=np.where(mask, u[safe], 0),
        rho=np.where(mask, rho[safe], 0.0),
    )


def random_order(n_points):
    """The fixed pseudo-random order of the ``serialization="random"`` ablation.

    A function of the point count only, so a decoder recomputes it without side bits.
    """
    return check_generator(int(n_points)).permutation(n_points).astype(np.int64)


def _check_elevation_range(elevation_range, name="elevation_range"):
    if isinstance(elevation_range, str):
        if elevation_range != "auto":
            raise ValueError(
                f"{name} must be 'auto' or a pair (low, high) in degrees. "
                f"Got {elevation_range!r} instead."
            )
        return "auto"
    try:
        lo, hi = (float(e) for e in elevation_range)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be 'auto' or a pair (low, high) in degrees. "
            f"Got {elevation_range!r} instead."
        ) from None
    if not (np.isfinite(lo) and np.isfinite(hi) and -90.0 <= lo < hi <= 90.0):
        raise ValueError(
            f"{name} must satisfy -90 <= low < high <= 90 (degrees). "
            f"Got {elevation_range!r} instead."
        )
    return (lo, hi)


def _check_elevation_table(table, n_lasers):
    if table is None:
        return None
    arr = np.asarray(table, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != n_lasers:
        raise ValueError(
            f"elevation_table must be 1-D with one elevation per laser (n_lasers="
            f"{n_lasers}). Got shape {arr.shape} instead."
        )
    if not np.all(np.isfinite(arr)) or np.any(np.diff(arr) <= 0):
        raise ValueError(
            "elevation_table must hold finite elevations in degrees, strictly ascending. "
            f"Got {arr.tolist()!r} instead."
        )
    return arr.copy()


class ScanOrderSerializer(TransformerMixin, BaseEstimator):
    """Put a LiDAR point cloud back into the order the sensor scanned it.

    A spinning LiDAR fires ``n_lasers`` beams at fixed elevations while it turns; a point
    cloud file usually loses that order. This transformer recovers each point's laser
    index ``v`` (from its elevation angle) and azimuth bin ``u`` (from its azimuth
    angle), and :meth:`get_order` sorts the points laser by laser, then by azimuth, then
    by distance: the serialisation of SerLiC. The order is a function of the geometry
    only, so a decoder that knows the points recomputes it for free.

    Parameters
    ----------
    n_lasers : int, default=32
        Number of laser beams ``L`` of the sensor.
    n_azimuth : int, default=1024
        Number of azimuth bins ``U`` per revolution.
    elevation_range : tuple of two floats or "auto", default=(-25.0, 3.0)
        Elevation of the lowest and the highest beam in degrees; beams are assumed evenly
        spaced in between. ``"auto"`` takes the minimum and maximum elevation of the
        points given to :meth:`fit`.
    elevation_table : array-like of shape (n_lasers,), default=None
        The sensor's beam elevations in degrees, ascending; each point goes to the
        nearest beam. Overrides ``elevation_range``.
    tie_break : {"rho", "input"}, default="rho"
        Order of points in the same (laser, azimuth) cell: by distance (then input
        order), or by input order alone.

    Attributes
    ----------
    elevation_range_ : tuple of two floats
        The elevation range in degrees used to quantise elevations.
    elevation_table_ : ndarray of shape (n_lasers,) or None
        The validated ``elevation_table``.
    n_lasers_ : int
        Number of lasers.
    n_azimuth_ : int
        Number of azimuth bins.
    n_features_in_ : int
        Number of columns seen in :meth:`fit` (the first three are x, y, z).

    See Also
    --------
    SerLiCCodec : the codec that codes reflectance in this order.

    Notes
    -----
    ``transform`` keeps the rows in the input order (as every scikit-learn transformer
    must, so that a ``y`` stays aligned) and returns ``v, u, rho`` and the raster cell
    ``v * n_azimuth + u``; the permutation into scan order comes from :meth:`get_order`.
    ``transform`` and ``get_order`` work without ``fit`` when ``elevation_range`` is
    not ``"auto"``: the serialiser then has no state to learn. A point at the origin gets
    elevation and azimuth 0 (numpy's ``arctan2(0, 0)``); the codecs reject such points
    unless told to store them raw.

    References
    ----------
    .. [1] Zhu et al., ICML 2025, arXiv:2505.09433 (see :class:`SerLiCCodec`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.compression import ScanOrderSerializer
    >>> from sklearn_icml.datasets import make_lidar_sweep
    >>> points, r, _, (v, u) = make_lidar_sweep(random_state=0, n_lasers=8, n_azimuth=64)
    >>> ser = ScanOrderSerializer(n_lasers=8, n_azimuth=64, elevation_range=(-25, 3))
    >>> order = ser.get_order(points)
    >>> bool(np.all(np.diff(v[order] * 64 + u[order]) > 0))  # laser-major, then azimuth
    True
    >>> Xt = ser.fit(points).transform(points)  # columns v, u, rho, v * 64 + u
    >>> Xt.shape, bool(np.array_equal(Xt[:, 0], v) and np.array_equal(Xt[:, 1], u))
    ((494, 4), True)
    """

    _parameter_constraints = {
        **SCAN_GRID_CONSTRAINTS,
        "elevation_table": ["array-like", None],
        "tie_break": [StrOptions({"rho", "input"})],
    }

    def __init__(
        self,
        *,
        n_lasers=32,
        n_azimuth=1024,
        elevation_range=(-25.0, 3.0),
        elevation_table=None,
        tie_break="rho",
    ):
        store_params(self, locals())

    def _config(self, theta=None):
        """Validated (n_lasers, n_azimuth, elevation_range, table); theta fits 'auto'."""
        self._validate_params()
        rng = _check_elevation_range(self.elevation_range)
        table = _check_elevation_table(self.elevation_table, self.n_lasers)
        if rng == "auto":
            if table is not None:
                rng = (float(table[0]), float(table[-1])) if table.shape[0] > 1 else None
            if rng is None or rng == "auto":
                if theta is None:
                    raise NotFittedError(
                        "elevation_range='auto' takes the range from the data: call fit "
                        "before transform or get_order."
                    )
                lo, hi = np.rad2deg(theta.min()), np.rad2deg(theta.max())
                if self.n_lasers > 1 and not hi > lo:
                    raise ValueError(
                        "elevation_range='auto' needs points at two distinct elevations "
                        f"for n_lasers={self.n_lasers}; every point has elevation {lo!r} "
                        "degrees. Pass elevation_range explicitly."
                    )
                rng = (float(lo), float(hi))
        return int(self.n_lasers), int(self.n_azimuth), rng, table

    def fit(self, X, y=None):
        """Fix the elevation range (from the data when ``"auto"``).

        Parameters
        ----------
        X : array-like of shape (n_points, n_columns)
            Point coordinates ``x, y, z`` (sensor at the origin) in the first three
            columns; further columns (intensity, ...) are ignored.
        y : None
            Ignored.

        Returns
        -------
        self : ScanOrderSerializer
        """
        X = validate_input(self, X, dtype=np.float64, ensure_min_features=3)
        X = check_points(X[:, :3], "X", allow_origin=True)
        _, theta, _ = spherical_coordinates(X)
        n_lasers, n_azimuth, rng, table = self._config(theta)
        self.n_lasers_ = n_lasers
        self.n_azimuth_ = n_azimuth
        self.elevation_range_ = rng
        self.elevation_table_ = table
        return self

    def _resolved(self):
        if hasattr(self, "elevation_range_"):
            return self.n_lasers_, self.n_azimuth_, self.elevation_range_, self.elevation_table_
        return self._config()

    def _indices(self, X, ring=None):
        n_lasers, n_azimuth, rng, table = self._resolved()
        if hasattr(self, "n_features_in_"):
            X = validate_input(self, X, dtype=np.float64, reset=False)
        X = np.asarray(X)
        if X.ndim == 2 and X.shape[1] > 3:
            X = X[:, :3]  # further columns (intensity, ring, time...) are ignored
        X = check_points(X, "X", allow_origin=True)
        rho, theta, phi = spherical_coordinates(X)
        if ring is not None:
            v = np.asarray(ring)
            if v.ndim != 1 or v.shape[0] != X.shape[0] or v.dtype.kind not in "iu":
                raise ValueError(
                    "ring must be a 1-D integer array with one laser id per point. Got "
                    f"an array of shape {v.shape} and dtype {v.dtype} instead."
                )
            if np.any((v < 0) | (v >= n_lasers)):
                raise ValueError(
                    f"ring must hold laser ids in 0..{n_lasers - 1}. Got values in "
                    f"[{v.min()}, {v.max()}] instead."
                )
            v = v.astype(np.int64)
        else:
            v = laser_indices(theta, n_lasers, rng, table)
        return v, azimuth_indices(phi, n_azimuth), rho

    def transform(self, X):
        """Laser index, azimuth bin, distance and raster cell of every point.

        Parameters
        ----------
        X : array-like of shape (n_points, n_columns)
            Point coordinates in the first three columns (as in :meth:`fit`).

        Returns
        -------
        Xt : ndarray of shape (n_points, 4)
            Columns ``v, u, rho, v * n_azimuth + u``, rows in the input order.
        """
        v, u, rho = self._indices(X)
        n_azimuth = self._resolved()[1]
        return np.column_stack([v, u, rho, v * n_azimuth + u]).astype(np.float64)

    def get_feature_names_out(self, input_features=None):
        """Names of the columns of :meth:`transform`: ``v, u, rho, cell``.

        ``cell`` is the raster cell ``v * n_azimuth + u``. With these names
        ``set_output(transform="pandas")`` gives a DataFrame.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Ignored apart from validation: the output columns do not depend on the names
            of the input columns.

        Returns
        -------
        feature_names_out : ndarray of str objects of shape (4,)
        """
        _check_feature_names_in(self, input_features, generate_names=False)
        return np.asarray(["v", "u", "rho", "cell"], dtype=object)

    def get_order(self, X, ring=None):
        """Permutation that puts the points in scan order.

        Parameters
        ----------
        X : array-like of shape (n_points, n_columns)
            Point coordinates in the first three columns (as in :meth:`fit`).
        ring : array-like of shape (n_points,), dtype int, default=None
            Per-point laser id stored by the sensor; overrides the computed one.

        Returns
        -------
        order : ndarray of shape (n_points,), dtype int64
            ``X[order]`` is sorted by laser, then azimuth bin, then (with
            ``tie_break="rho"``) distance; the sort is stable.
        """
        v, u, rho = self._indices(X, ring)
        if self.tie_break == "rho":
            return np.lexsort((rho, u, v)).astype(np.int64)
        return np.lexsort((u, v)).astype(np.int64)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        # stateless unless the elevation range is taken from the data
        tags.requires_fit = isinstance(self.elevation_range, str)
        return tags
