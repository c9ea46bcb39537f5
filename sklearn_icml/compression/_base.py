"""What every reflectance codec shares: serialisation, the container and the verbs.

A reflectance codec is a :class:`~sklearn_icml.base.BaseCodec`: ``fit(sweeps)`` learns
what there is to learn, ``encode(sweep) -> bytes`` codes the reflectance of one sweep and
``decode(data, points) -> reflectance`` decodes it given the same geometry (the geometry
is side information the decoder already has, so it is not stored in the bytes). Its
input is a list of point clouds, not a feature matrix, so its input tags say so.
"""

import hashlib
import json
import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import BaseCodec
from . import _bitstream
from ._airborne import AirborneScanSerializer
from ._serialization import ScanOrderSerializer, build_windows, random_order
from ._validation import (
    SCAN_GRID_CONSTRAINTS,
    check_points,
    check_pulses,
    check_reflectance,
    check_sweeps,
)


@dataclass(frozen=True)
class _Prepared:
    """A sweep's geometry ready for coding: kept points, their coding order and groups."""

    n_points: int
    keep: np.ndarray  # bool (n_points,): False at origin points stored raw
    order: np.ndarray  # permutation of the kept points into coding order
    group: np.ndarray  # sequence id of each kept point (laser, or 0)
    v: np.ndarray
    u: np.ndarray
    rho: np.ndarray


class _BaseReflectanceCodec(BaseCodec):
    """Lossless reflectance coding with the geometry as side information.

    A subclass writes ``_fit_model(sweeps)`` (after the serialiser is fitted; it sets
    ``fingerprint_``), ``_model_bits(prep, refl_kept, window)``,
    ``_encode_symbols(prep, refl_kept, window)`` and ``_decode_symbols(prep, words,
    header)``.
    """

    _kind = None  # bitstream kind, set by subclasses

    _parameter_constraints = {
        **SCAN_GRID_CONSTRAINTS,
        # the header stores the laser count in 16 bits
        "n_lasers": [Interval(numbers.Integral, 1, 65535, closed="both")],
        "serialization": [StrOptions({"scan", "random"})],
        "scanner": [StrOptions({"spinning", "airborne"})],
        "float_reflectance": [StrOptions({"reject", "scale255"})],
        "drop_origin": ["boolean"],
    }

    # preparation
    def _make_serializer(self):
        if self.scanner == "airborne":
            return AirborneScanSerializer(n_angle_bins=self.n_azimuth)
        return ScanOrderSerializer(
            n_lasers=self.n_lasers,
            n_azimuth=self.n_azimuth,
            elevation_range=self.elevation_range,
        )

    def _fit(self, X):
        sweeps = self._sweeps(X)
        self._fit_serializer(sweeps)
        self._fit_model(sweeps)

    def _coder(self, points):
        """The fitted codec that codes ``points``: ``self``, or a fitted copy of a codec
        that has nothing to learn (its fitted state depends on the parameters only)."""
        check_is_fitted(self)
        if hasattr(self, "serializer_"):
            return self
        return clone(self).fit([(points, np.zeros(points.shape[0], dtype=np.uint8))])

    def _sweeps(self, X):
        return check_sweeps(
            X, float_reflectance=self.float_reflectance, allow_origin=self.drop_origin,
            pulses=self.scanner == "airborne",
        )

    def _check_geometry(self, points, name="points"):
        if self.scanner == "airborne":
            return check_pulses(points, name)
        return check_points(points, name, allow_origin=self.drop_origin)

    def _grid(self):
        """Sizes of the two context indices ``(v, u)``: lasers and azimuth bins of a
        spinning sensor, beam classes and scan-angle bins of an airborne one."""
        ser = self.serializer_
        if self.scanner == "airborne":
            return ser.n_classes_, ser.n_angle_bins_
        return ser.n_lasers_, ser.n_azimuth_

    def _fit_serializer(self, sweeps):
        points = np.concatenate([p[self._keep_mask(p)] for p, _ in sweeps])
        if points.shape[0] == 0:
            raise ValueError(
                "X holds no point away from the sensor origin; there is nothing to fit."
            )
        self.serializer_ = self._make_serializer().fit(points)
        self.n_features_in_ = 4

    def _keep_mask(self, points):
        if self.drop_origin and self.scanner == "spinning":
            return np.any(points != 0.0, axis=1)
        return np.ones(points.shape[0], dtype=bool)

    def _prepare(self, points):
        keep = self._keep_mask(points)
        kept = points[keep]
        if kept.shape[0] == 0:
            empty = np.empty(0, dtype=np.int64)
            return _Prepared(points.shape[0], keep, empty, empty, empty, empty, np.empty(0))
        v, u, rho, _ = self.serializer_.transform(kept).T
        v, u = v.astype(np.int64), u.astype(np.int64)
        if self.serialization == "scan":
            order = self.serializer_.get_order(kept)
            # a spinning sensor's windows stay within a laser; an airborne scan is one
            # sequence in acquisition order
            group = v if self.scanner == "spinning" else np.zeros_like(v)
        else:
            order = random_order(kept.shape[0])
            group = np.zeros(kept.shape[0], dtype=np.int64)
        return _Prepared(points.shape[0], keep, order, group, v, u, rho)

    def _windows(self, prep, window):
        return build_windows(prep.order, prep.group, prep.v, prep.u, prep.rho, window)

    # fingerprint
    def _config(self):
        """Everything besides the weights that changes the coding probabilities."""
        ser = self.serializer_
        config = {
            "codec": type(self).__name__,
            "serialization": self.serialization,
            "drop_origin": bool(self.drop_origin),
        }
        if self.scanner == "airborne":
            # a key only airborne codecs have, so spinning fingerprints stay as they were
            config.update(
                scanner="airborne", n_classes=ser.n_classes_, n_angle_bins=ser.n_angle_bins_
            )
            return config
        table = ser.elevation_table_
        config.update(
            n_lasers=ser.n_lasers_,
            n_azimuth=ser.n_azimuth_,
            elevation_range=[float(e) for e in ser.elevation_range_],
            elevation_table=None if table is None else table.tolist(),
        )
        return config

    def _compute_fingerprint(self, extra=()):
        h = hashlib.sha256(json.dumps(self._config(), sort_keys=True).encode())
        for name, array in extra:
            h.update(name.encode())
            h.update(str(array.dtype).encode() + str(array.shape).encode())
            h.update(np.ascontiguousarray(array).tobytes())
        return h.hexdigest()

    # public verbs
    def bits_per_point(self, X):
        """Model cross-entropy in bits per point over all given sweeps (no coding).

        Parameters
        ----------
        X : list of (points, reflectance) or array of shape (n_points, 4)
            Sweeps in any of the forms :meth:`fit` accepts.

        Returns
        -------
        bpp : float
            Total ideal code length divided by the total number of points; the real
            coded size (``8 * len(encode(...)) / n``) is within a few bytes of it.
        """
        return self._bits_per_point(X, window=None)

    def _bits_per_point(self, X, window):
        check_is_fitted(self)
        sweeps = self._sweeps(X)
        total_bits, total_points = 0.0, 0
        for points, refl in sweeps:
            total_bits += float(self._coder(points)._point_bits(points, refl, window).sum())
            total_points += points.shape[0]
        return total_bits / total_points

    def score(self, X, y=None):
        """Negative bits per point (higher is better, as scikit-learn scores are).

        Parameters
        ----------
        X : list of (points, reflectance) or array of shape (n_points, 4)
            Sweeps in any of the forms :meth:`fit` accepts.
        y : None
            Ignored.

        Returns
        -------
        score : float
            ``-bits_per_point(X)``.
        """
        return -self.bits_per_point(X)

    def _point_bits(self, points, refl, window=None):
        """Ideal code length of every point (bits), raw points at 8 bits."""
        prep = self._prepare(points)
        bits = np.full(points.shape[0], 8.0)
        if prep.order.shape[0]:
            kept_bits = self._model_bits(prep, refl[prep.keep], window)
            bits[np.flatnonzero(prep.keep)] = kept_bits
        return bits

    def _one_sweep(self, X):
        """``(points, reflectance)`` of the one sweep ``X`` given to :meth:`encode`."""
        if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
            X = X.to_numpy()
        n_geo = 8 if self.scanner == "airborne" else 3
        if isinstance(X, tuple | list) and len(X) == 2:
            points, reflectance = X
        elif isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[1] == n_geo + 1:
            points, reflectance = X[:, :n_geo], X[:, n_geo]
        else:
            raise TypeError(
                "X must be one sweep: a (points, reflectance) pair or an array of shape "
                f"(n_points, {n_geo + 1}) with the reflectance last. Got "
                f"{type(X).__name__} instead."
            )
        points = self._check_geometry(points)
        refl = check_reflectance(
            reflectance, points.shape[0], float_reflectance=self.float_reflectance
        )
        return points, refl

    def _encode(self, X, window=0):
        points, refl = self._one_sweep(X)
        return self._coder(points)._encode_sweep(points, refl, window=window)

    def _encode_sweep(self, points, refl, *, window):
        prep = self._prepare(points)
        raw = refl[~prep.keep]
        words = np.empty(0, dtype=np.uint32)
        if prep.order.shape[0]:
            words = self._encode_symbols(prep, refl[prep.keep], window)
        header = _bitstream.Header(
            kind=self._kind,
            flags=_bitstream.FLAG_RAW_ORIGIN if self.drop_origin else 0,
            n_points=points.shape[0],
            n_lasers=self._grid()[0],
            n_azimuth=self._grid()[1],
            window=window,
            n_raw=raw.shape[0],
            n_words=words.shape[0],
            crc32=_bitstream.crc32(refl),
            fingerprint=bytes.fromhex(self.fingerprint_)[:16],
        )
        return _bitstream.pack(header, raw, words)

    def decode(self, data, points):
        """Decode the reflectance of one sweep from its bytes and its geometry.

        Parameters
        ----------
        data : bytes
            Output of :meth:`encode` of a codec with the same fingerprint.
        points : array-like of shape (n_points, 3)
            The same point array that was given to :meth:`encode` (the geometry is side
            information: the decoder has it already, so the bytes do not carry it).

        Returns
        -------
        reflectance : ndarray of shape (n_points,), dtype uint8
            The coded values, in the order of ``points``.

        Raises
        ------
        ValueError
            If the blob is not a stream of this codec, was made for another point count,
            sensor grid or model (fingerprint), or decodes to values whose CRC-32 differs
            from the stored one.
        """
        check_is_fitted(self)
        points = self._check_geometry(points)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(
                f"data must be the bytes returned by encode. Got {type(data).__name__} "
                "instead."
            )
        return self._coder(points)._decode_sweep(bytes(data), points)

    def _decode(self, data):  # decode needs the geometry: see decode(data, points)
        raise NotImplementedError

    def _decode_sweep(self, blob, points):
        header, raw, words = _bitstream.unpack(blob, kind=self._kind)
        if header.n_points != points.shape[0]:
            raise ValueError(
                f"blob codes {header.n_points} points but points has "
                f"{points.shape[0]} rows; decode with the geometry the blob was made for."
            )
        if header.fingerprint != bytes.fromhex(self.fingerprint_)[:16]:
            raise ValueError(
                "blob was made by a codec with another fingerprint (other weights or "
                f"settings): blob {header.fingerprint.hex()} != this codec's "
                f"{self.fingerprint_[:32]}. Decode it with the codec that encoded it."
            )
        if (header.n_lasers, header.n_azimuth) != self._grid():
            raise ValueError(
                f"blob was made for a {header.n_lasers} x {header.n_azimuth} scan grid; "
                f"this codec uses {self._grid()[0]} x {self._grid()[1]}."
            )
        prep = self._prepare(points)
        n_raw = int((~prep.keep).sum())
        if n_raw != header.n_raw:
            raise ValueError(
                f"blob stores {header.n_raw} raw values for points at the origin but the "
                f"geometry has {n_raw}; decode with the geometry the blob was made for."
            )
        refl = np.zeros(points.shape[0], dtype=np.uint8)
        refl[~prep.keep] = raw
        if prep.order.shape[0]:
            try:
                refl[prep.keep] = self._decode_symbols(prep, words, header)
            except ValueError:
                raise
            except Exception as exc:  # noqa: BLE001 - the range decoder's own errors
                raise ValueError(
                    f"blob could not be decoded ({type(exc).__name__}: {exc}); it is "
                    "corrupted or was made by another model."
                ) from exc
        if _bitstream.crc32(refl) != header.crc32:
            raise ValueError(
                "decoded reflectance fails the CRC-32 check: the blob is corrupted or "
                "the encoder and decoder computed different probabilities (another "
                "machine, library version or thread count). Refusing to return wrong "
                "values."
            )
        return refl
