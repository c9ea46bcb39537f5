"""AdaptiveContextCodec: the classical order-1 adaptive context model with range coding."""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval

from ..utils import optional_import
from ..utils._params import store_params
from . import _bitstream
from ._adaptive_kernels import N_CONTEXTS, N_SYMBOLS, code_lengths, count_rows
from ._base import _BaseReflectanceCodec

_CHUNK = 4096


def _sequence_starts(prep):
    g = prep.group[prep.order]
    return np.r_[True, g[1:] != g[:-1]] if g.shape[0] else np.empty(0, dtype=bool)


class AdaptiveContextCodec(_BaseReflectanceCodec):
    """Lossless reflectance codec with adaptive order-1 context tables (a baseline).

    The points are put in scan order (:class:`ScanOrderSerializer`), and each
    reflectance is range-coded with the probability table of its context, the previous
    reflectance of the same laser (a start symbol at the first point of a laser). The
    tables start flat and adapt as symbols are coded, so nothing is learned in
    :meth:`fit` and nothing is sent besides the coded symbols: the classical adaptive
    order-1 arithmetic coder, the baseline the learned :class:`SerLiCCodec` must beat.
    Count updates run in numba; the range coder is ``constriction``'s.

    Parameters
    ----------
    n_lasers, n_azimuth, elevation_range
        The scan grid (laser beams, azimuth bins per revolution, beam elevations in
        degrees or ``"auto"``), as in :class:`ScanOrderSerializer`; defaults ``32``,
        ``1024``, ``(-25.0, 3.0)``.
    increment : int, default=32
        Count added to a symbol each time it is coded in a context.
    init : int, default=1
        Initial count of every symbol in every context.
    serialization : {"scan", "random"}, default="scan"
        Coding order: the scan order, or a fixed pseudo-random order (an ablation).
    scanner : {"spinning", "airborne"}, default="spinning"
        The sensor, which decides what ``points`` are and the scan order. ``"spinning"``:
        points of shape (n, 3), ordered by laser and azimuth
        (:class:`ScanOrderSerializer`). ``"airborne"``: pulse arrays of shape (n, 8)
        (x, y, z, GPS time, scan angle, scan direction, return number, number of
        returns; :func:`sklearn_icml.datasets.read_las` reads them), coded in acquisition
        order as one sequence (:class:`AirborneScanSerializer`); ``n_azimuth`` is then
        the number of scan-angle bins and ``n_lasers`` and ``elevation_range`` are not
        used.
    float_reflectance : {"reject", "scale255"}, default="reject"
        How float reflectance is taken: whole numbers only, or floats in [0, 1] mapped
        with ``round(255 * r)`` (KITTI style).
    drop_origin : bool, default=False
        Accept points at the sensor origin (elevation undefined): they are left out of
        the model and their reflectance is stored raw (8 bits each).

    Attributes
    ----------
    serializer_ : ScanOrderSerializer or AirborneScanSerializer
        The fitted serialiser (of the ``scanner``).
    fingerprint_ : str
        SHA-256 (hex) of the settings; a blob records its first 16 bytes.
    n_features_in_ : int
        Always 4 (x, y, z, reflectance).

    See Also
    --------
    SerLiCCodec : the learned codec.

    Notes
    -----
    The order-1 context-model baseline that SerLiC (Zhu et al., ICML 2025,
    arXiv:2505.09433) is compared with, coding in the same scan order.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_lidar_sweep
    >>> from sklearn_icml.compression import AdaptiveContextCodec
    >>> import numpy as np
    >>> points, r, _, _ = make_lidar_sweep(random_state=0, n_lasers=8, n_azimuth=128)
    >>> codec = AdaptiveContextCodec(n_lasers=8, n_azimuth=128)  # nothing to fit
    >>> blob = codec.encode((points, r))
    >>> bool(np.array_equal(codec.decode(blob, points), r))
    True
    >>> bpp = codec.bits_per_point([(points, r)])  # ideal code length
    >>> round(bpp, 2), len(r)
    (6.63, 978)
    >>> bool(8 * len(blob) <= 1.005 * bpp * len(r) + 8 * 64)  # coded size: + 48-byte header
    True
    """

    _kind = _bitstream.KIND_ADAPTIVE

    _parameter_constraints = {
        **_BaseReflectanceCodec._parameter_constraints,
        "increment": [Interval(numbers.Integral, 1, 1 << 16, closed="both")],
        "init": [Interval(numbers.Integral, 1, 1 << 16, closed="both")],
    }

    def __init__(
        self,
        *,
        n_lasers=32,
        n_azimuth=1024,
        elevation_range=(-25.0, 3.0),
        increment=32,
        init=1,
        serialization="scan",
        scanner="spinning",
        float_reflectance="reject",
        drop_origin=False,
    ):
        store_params(self, locals())

    @property
    def _requires_fit(self):
        # the tables adapt while coding: only an elevation range taken from the data is
        # learned, so with a given range the codec codes without fit
        return self.scanner == "spinning" and isinstance(self.elevation_range, str)

    def _fit_model(self, sweeps):
        self.fingerprint_ = self._compute_fingerprint()

    def _config(self):
        config = super()._config()
        config.update(increment=int(self.increment), init=int(self.init))
        return config

    def _model_bits(self, prep, refl_kept, window=None):
        symbols = refl_kept[prep.order].astype(np.int64)
        bits = code_lengths(symbols, _sequence_starts(prep), int(self.init), int(self.increment))
        out = np.empty_like(bits)
        out[prep.order] = bits
        return out

    def _encode_symbols(self, prep, refl_kept, window):
        constriction = optional_import("constriction", "compression")
        symbols = refl_kept[prep.order].astype(np.int64)
        starts = _sequence_starts(prep)
        counts = np.full((N_CONTEXTS, N_SYMBOLS), int(self.init), dtype=np.int64)
        family = constriction.stream.model.Categorical(perfect=False)
        encoder = constriction.stream.queue.RangeEncoder()
        prev = 256
        for lo in range(0, symbols.shape[0], _CHUNK):
            chunk = symbols[lo : lo + _CHUNK]
            rows, prev = count_rows(chunk, starts[lo : lo + _CHUNK], counts, prev,
                                    int(self.increment))
            encoder.encode(chunk.astype(np.int32), family, rows)
        return encoder.get_compressed()

    def _decode_symbols(self, prep, words, header):
        constriction = optional_import("constriction", "compression")
        starts = _sequence_starts(prep)
        counts = np.full((N_CONTEXTS, N_SYMBOLS), int(self.init), dtype=np.int64)
        family = constriction.stream.model.Categorical(perfect=False)
        decoder = constriction.stream.queue.RangeDecoder(words)
        increment = int(self.increment)
        out = np.empty(starts.shape[0], dtype=np.int64)
        prev = 256
        for i, start in enumerate(starts.tolist()):
            ctx = 256 if start else prev
            row = counts[ctx].astype(np.float32)[None, :]
            prev = int(decoder.decode(family, row)[0])
            counts[ctx, prev] += increment
            out[i] = prev
        if not (0 <= out.min() and out.max() <= 255):
            raise ValueError("blob decodes to symbols outside 0..255; it is corrupted.")
        refl_kept = np.empty_like(out)
        refl_kept[prep.order] = out
        return refl_kept.astype(np.uint8)
