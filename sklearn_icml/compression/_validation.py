"""Input checks of the reflectance codecs: geometry, reflectance and lists of sweeps."""

import numpy as np
from sklearn.utils._param_validation import StrOptions

from ..utils._param_validation import POSITIVE_INT
from ..utils.validation import check_not_complex

#: constraints of the scan grid, shared by the serialiser and the codecs
SCAN_GRID_CONSTRAINTS = {
    "n_lasers": [POSITIVE_INT],
    "n_azimuth": [POSITIVE_INT],
    "elevation_range": [tuple, list, StrOptions({"auto"})],
}


def _float_table(array, name, n_columns, columns):
    """``array`` as a new C-contiguous (n, n_columns) finite float64 array, or raise."""
    check_not_complex(array, name)
    try:
        arr = np.array(array, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a numeric array of shape (n_points, {n_columns}); it could not "
            f"be converted ({exc})."
        ) from None
    if arr.ndim != 2 or arr.shape[1] != n_columns:
        raise ValueError(
            f"{name} must have shape (n_points, {n_columns}) with columns {columns}. "
            f"Got shape {arr.shape} instead."
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one point. Got shape {arr.shape} instead.")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(arr), axis=1))[0])
        raise ValueError(
            f"{name} contains NaN or infinity (first at row {bad}); every value must be "
            "finite."
        )
    return arr


def check_points(points, name="points", *, allow_origin=False):
    """Return ``points`` as a new C-contiguous (n, 3) float64 array, or raise ValueError.

    Rejects complex coordinates, other shapes, an empty array, non-finite coordinates and
    (unless ``allow_origin``) points at the sensor origin, whose elevation is undefined.
    """
    arr = _float_table(points, name, 3, "x, y, z")
    if not allow_origin:
        origin = ~np.any(arr != 0.0, axis=1)
        if np.any(origin):
            bad = int(np.flatnonzero(origin)[0])
            raise ValueError(
                f"{name} has a point at the sensor origin (row {bad}, distance 0) whose "
                "elevation is undefined; remove it or set drop_origin=True. "
                f"Got {arr[bad].tolist()!r} instead."
            )
    return np.ascontiguousarray(arr)


def check_pulses(pulses, name="points"):
    """Return an airborne pulse array as a new (n, 8) float64 array, or raise ValueError.

    Columns ``x, y, z, gps_time, scan_angle, scan_direction, return_number,
    number_of_returns`` (see :class:`AirborneScanSerializer`): finite values, scan angles
    in -90..90 degrees, a scan direction of 0 or 1 and return numbers of at least 1.
    """
    arr = _float_table(
        pulses, name, 8,
        "x, y, z, gps_time, scan_angle, scan_direction, return_number, number_of_returns "
        "(sklearn_icml.datasets.read_las reads them from a LAS file)",
    )
    checks = (
        (4, (arr[:, 4] < -90) | (arr[:, 4] > 90), "scan_angle must lie in -90..90 degrees"),
        (5, (arr[:, 5] != 0) & (arr[:, 5] != 1), "scan_direction must be 0 or 1"),
        (6, (arr[:, 6] < 1) | (arr[:, 6] != np.round(arr[:, 6])),
         "return_number must be a whole number >= 1"),
        (7, (arr[:, 7] < 1) | (arr[:, 7] != np.round(arr[:, 7])),
         "number_of_returns must be a whole number >= 1"),
    )
    for column, bad, what in checks:
        if np.any(bad):
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name}: {what} (column {column}). Got {arr[row, column]!r} at row {row} "
                "instead."
            )
    return np.ascontiguousarray(arr)


def check_reflectance(reflectance, n_points, *, float_reflectance="reject", name="reflectance"):
    """Return the reflectance as a new uint8 array of length ``n_points``, or raise.

    Integer arrays (and floats holding whole numbers) must lie in 0..255; they are never
    cast with wrap-around. Floats that are not whole numbers are accepted only with
    ``float_reflectance="scale255"``: they must lie in [0, 1] and are mapped with
    ``round(255 * r)``; with that setting every float array is scaled.
    """
    arr = np.asarray(reflectance)
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D with one value per point. Got shape {arr.shape} instead."
        )
    if arr.shape[0] != n_points:
        raise ValueError(
            f"{name} must have one value per point ({n_points}). Got length "
            f"{arr.shape[0]} instead."
        )
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must hold integers in 0..255 (or floats in [0, 1] with "
            f"float_reflectance='scale255'). Got dtype {arr.dtype} instead."
        )
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinity; every value must be finite.")
        if float_reflectance == "scale255":
            if np.any((arr < 0) | (arr > 1)):
                raise ValueError(
                    f"{name} must lie in [0, 1] with float_reflectance='scale255'. Got "
                    f"values in [{arr.min()!r}, {arr.max()!r}] instead."
                )
            return np.rint(255.0 * arr.astype(np.float64)).astype(np.uint8)
        if not np.all(arr == np.round(arr)):
            raise ValueError(
                f"{name} holds non-integer floats; reflectance is coded as integers "
                "0..255. Floats in [0, 1] (KITTI style) are accepted with "
                "float_reflectance='scale255'. Got values in "
                f"[{arr.min()!r}, {arr.max()!r}] instead."
            )
    if np.any((arr < 0) | (arr > 255)):
        bad = int(np.flatnonzero((arr < 0) | (arr > 255))[0])
        raise ValueError(
            f"{name} must lie in 0..255. Got {arr[bad].item()!r} at position {bad} instead."
        )
    return arr.astype(np.uint8)


def _ndim(obj):
    if hasattr(obj, "ndim"):
        return obj.ndim
    try:
        return np.asarray(obj).ndim
    except ValueError:  # ragged nested lists
        return -1


def _is_sweep_pair(item):
    return (
        isinstance(item, tuple | list)
        and len(item) == 2
        and _ndim(item[0]) == 2
        and _ndim(item[1]) == 1
    )


def check_sweeps(
    X, *, float_reflectance="reject", allow_origin=False, pulses=False, name="X"
):
    """Normalise the input of ``fit``/``score``: a list of ``(points, reflectance)``.

    Accepted forms: a list (or tuple) of sweeps, each a ``(points, reflectance)`` pair or
    an (n, 4) array with columns ``x, y, z, r``; a single ``(points, reflectance)`` pair;
    a single (n, 4) array (or DataFrame). With ``pulses`` the points are airborne pulse
    arrays (:func:`check_pulses`) and an array form has 9 columns, intensity last.
    """
    n_geo = 8 if pulses else 3
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        X = X.to_numpy()
    if isinstance(X, np.ndarray) or _is_sweep_pair(X):
        items = [X]
    elif isinstance(X, list | tuple):
        items = list(X)
    else:
        raise TypeError(
            f"{name} must be a list of (points, reflectance) sweeps or an (n, 4) array "
            f"with columns x, y, z, r. Got {type(X).__name__} instead."
        )
    if not items:
        raise ValueError(f"{name} must hold at least one sweep. Got an empty list instead.")
    sweeps = []
    for k, item in enumerate(items):
        where = f"{name}[{k}]" if len(items) > 1 else name
        if hasattr(item, "to_numpy") and not isinstance(item, np.ndarray):
            item = item.to_numpy()
        if _is_sweep_pair(item):
            points, refl = item
        else:
            arr = np.asarray(item)
            if arr.ndim != 2 or arr.shape[1] != n_geo + 1:
                raise ValueError(
                    f"{where} must be a (points, reflectance) pair or an array of shape "
                    f"(n_points, {n_geo + 1}) with the reflectance last. Got shape "
                    f"{arr.shape} instead."
                )
            points, refl = arr[:, :n_geo], arr[:, n_geo]
        if pulses:
            points = check_pulses(points, f"{where} points")
        else:
            points = check_points(points, f"{where} points", allow_origin=allow_origin)
        refl = check_reflectance(
            refl, points.shape[0], float_reflectance=float_reflectance,
            name=f"{where} reflectance",
        )
        sweeps.append((points, refl))
    return sweeps
