"""Acquisition-order serialisation of an airborne laser scan: GPS time, return, scan angle."""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _check_feature_names_in

from ..base import NonTabularInputMixin
from ..utils._param_validation import POSITIVE_INT
from ..utils._params import store_params
from ._validation import check_pulses

#: the columns of a pulse array, in order (what :func:`check_pulses` expects)
PULSE_COLUMNS = (
    "x",
    "y",
    "z",
    "gps_time",
    "scan_angle",
    "scan_direction",
    "return_number",
    "number_of_returns",
)

#: returns per pulse told apart by the beam class (more are merged into the last)
MAX_RETURNS = 4
#: beam classes: (number of returns, return number) pairs times the two scan directions
N_BEAM_CLASSES = MAX_RETURNS * MAX_RETURNS * 2


def beam_classes(pulses):
    """Beam class of each point: ``8 (n - 1) + 2 (k - 1) + d``.

    ``n`` is the number of returns of the pulse and ``k`` the return number, both capped
    at :data:`MAX_RETURNS`; ``d`` is the scan direction flag. The class plays the part
    of the laser index of a spinning sensor: the state of the scanner when it recorded
    the point.
    """
    n = np.clip(pulses[:, 7], 1, MAX_RETURNS).astype(np.int64)
    k = np.minimum(np.clip(pulses[:, 6], 1, MAX_RETURNS).astype(np.int64), n)
    d = pulses[:, 5].astype(np.int64)
    return 2 * MAX_RETURNS * (n - 1) + 2 * (k - 1) + d


def angle_bins(scan_angle, n_bins):
    """Bin of each scan angle (degrees in [-90, 90]) among ``n_bins`` equal bins."""
    u = np.floor((scan_angle + 90.0) * (n_bins / 180.0))
    return np.clip(u, 0, n_bins - 1).astype(np.int64)


class AirborneScanSerializer(NonTabularInputMixin, TransformerMixin, BaseEstimator):
    """Put an airborne laser scan in the order the scanner acquired it.

    An airborne scanner sweeps its beam across the flight line, scan line after scan
    line, and timestamps every pulse (GPS time); a pulse may give several returns. A
    point cloud file keeps these attributes but not always the order. This transformer
    is the airborne counterpart of :class:`ScanOrderSerializer`: :meth:`get_order` sorts
    the points by GPS time, then by return number (the scanner's own acquisition order),
    and :meth:`transform` gives each point the three context values SerLiC's tokens are
    built from: the beam class ``v`` (number of returns, return number and scan
    direction), the scan-angle bin ``u`` and ``rho``, the distance in metres to the
    previous point in acquisition order (0 for the first), which tells whether the beam
    is still on the same surface. Everything is computed from the geometry and the pulse
    attributes, so a decoder that has them recomputes the order for free.

    Parameters
    ----------
    n_angle_bins : int, default=180
        Number of equal scan-angle bins over -90..90 degrees.
    order : {"gps_time", "file"}, default="gps_time"
        ``"gps_time"`` sorts the points by GPS time, then return number (stable, so
        points with equal keys keep the input order); ``"file"`` keeps the input order
        and requires it to be the acquisition order (GPS time never decreasing).

    Attributes
    ----------
    n_classes_ : int
        Number of beam classes (32: up to four returns per pulse, two scan directions).
    n_angle_bins_ : int
        Number of scan-angle bins.
    n_features_in_ : int
        Number of columns seen in :meth:`fit` (8, see Notes).

    See Also
    --------
    ScanOrderSerializer : the serialisation of a spinning sensor.
    SerLiCCodec : the codec (``scanner="airborne"``) that codes intensity in this order.

    Notes
    -----
    A pulse array has eight columns, in this order: ``x, y, z`` (metres), ``gps_time``
    (seconds), ``scan_angle`` (degrees), ``scan_direction`` (0 or 1),
    ``return_number`` and ``number_of_returns``;
    :func:`sklearn_icml.datasets.read_las` reads them from a LAS or LAZ file. SerLiC
    (Zhu et al., ICML 2025) serialises a spinning LiDAR by laser and azimuth; for an
    airborne scanner, which has neither rings nor a full revolution, the library takes
    the same idea (the sensor's own acquisition order and state as context) with the
    attributes the LAS format records.

    References
    ----------
    .. [1] Zhu et al., ICML 2025, arXiv:2505.09433 (see :class:`SerLiCCodec`).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.compression import AirborneScanSerializer
    >>> pulses = np.array([  # x, y, z, gps_time, angle, direction, return, returns
    ...     [1.0, 0.0, 5.0, 2.0, -10.0, 1, 1, 1],
    ...     [0.0, 0.0, 5.0, 1.0, -12.0, 0, 2, 2],
    ...     [0.0, 0.0, 9.0, 1.0, -12.0, 0, 1, 2],
    ... ])
    >>> ser = AirborneScanSerializer()
    >>> ser.get_order(pulses)  # GPS time, then return number
    array([2, 1, 0])
    >>> ser.transform(pulses)[:, :3]  # beam class, angle bin, distance to the previous
    array([[ 1., 80.,  1.],
           [10., 78.,  4.],
           [ 8., 78.,  0.]])
    """

    _parameter_constraints = {
        "n_angle_bins": [POSITIVE_INT],
        "order": [StrOptions({"gps_time", "file"})],
    }

    def __init__(self, *, n_angle_bins=180, order="gps_time"):
        store_params(self, locals())

    def fit(self, X, y=None):
        """Check the pulses and fix the bin counts (nothing is learned from the data).

        Parameters
        ----------
        X : array-like of shape (n_points, 8)
            Pulse array (columns in the Notes).
        y : None
            Ignored.

        Returns
        -------
        self : AirborneScanSerializer
        """
        self._validate_params()
        check_pulses(X, "X")
        self.n_classes_ = N_BEAM_CLASSES
        self.n_angle_bins_ = int(self.n_angle_bins)
        self.n_features_in_ = len(PULSE_COLUMNS)
        return self

    def _checked(self, X):
        self._validate_params()
        return check_pulses(X, "X")

    def _order(self, pulses):
        if self.order == "file":
            decrease = np.flatnonzero(np.diff(pulses[:, 3]) < 0)
            if decrease.shape[0]:
                k = int(decrease[0]) + 1
                raise ValueError(
                    "X is not in acquisition order: gps_time decreases at row "
                    f"{k} ({pulses[k - 1, 3]!r} then {pulses[k, 3]!r}); pass "
                    "order='gps_time' to sort the points. Got unsorted points instead."
                )
            return np.arange(pulses.shape[0], dtype=np.int64)
        return np.lexsort((pulses[:, 6], pulses[:, 3])).astype(np.int64)

    def _indices(self, pulses, order):
        xyz = pulses[order, :3]
        step = np.zeros(pulses.shape[0])
        step[1:] = np.sqrt(np.sum(np.diff(xyz, axis=0) ** 2, axis=1))
        rho = np.empty_like(step)
        rho[order] = step
        return beam_classes(pulses), angle_bins(pulses[:, 4], int(self.n_angle_bins)), rho

    def get_order(self, X):
        """Permutation that puts the points in acquisition order.

        Parameters
        ----------
        X : array-like of shape (n_points, 8)
            Pulse array (columns in the Notes).

        Returns
        -------
        order : ndarray of shape (n_points,), dtype int64
            ``X[order]`` is sorted by GPS time, then return number (stable); with
            ``order="file"`` the identity.
        """
        return self._order(self._checked(X))

    def transform(self, X):
        """Beam class, scan-angle bin, step distance and cell of every point.

        Parameters
        ----------
        X : array-like of shape (n_points, 8)
            Pulse array (columns in the Notes).

        Returns
        -------
        Xt : ndarray of shape (n_points, 4)
            Columns ``v, u, rho, v * n_angle_bins + u``, rows in the input order.
        """
        pulses = self._checked(X)
        v, u, rho = self._indices(pulses, self._order(pulses))
        return np.column_stack([v, u, rho, v * int(self.n_angle_bins) + u]).astype(np.float64)

    def get_feature_names_out(self, input_features=None):
        """Names of the columns of :meth:`transform`: ``v, u, rho, cell``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Ignored apart from validation.

        Returns
        -------
        feature_names_out : ndarray of str objects of shape (4,)
        """
        _check_feature_names_in(self, input_features, generate_names=False)
        return np.asarray(["v", "u", "rho", "cell"], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        return tags
