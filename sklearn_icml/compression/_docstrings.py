"""Parameter documentation shared by the serialiser and the reflectance codecs.

A class docstring names a piece as ``%(name)s`` on a line of its own; :func:`fill_doc`
substitutes the pieces (see :func:`sklearn_icml.utils._docstrings.fill_doc`), so that the
scan grid and the input options, which mean the same in :class:`ScanOrderSerializer`,
:class:`AdaptiveContextCodec` and :class:`SerLiCCodec`, are documented once.
"""

from ..utils._docstrings import fill_doc as _fill_doc

PIECES = {
    "scan_grid": """\
n_lasers : int, default=32
    Number of laser beams ``L`` of the sensor.
n_azimuth : int, default=1024
    Number of azimuth bins ``U`` per revolution.
elevation_range : tuple of two floats or "auto", default=(-25.0, 3.0)
    Elevation of the lowest and the highest beam in degrees; beams are assumed evenly
    spaced in between. ``"auto"`` takes the minimum and maximum elevation of the
    points given to :meth:`fit`.""",
    "reflectance_input": """\
float_reflectance : {"reject", "scale255"}, default="reject"
    How float reflectance is taken: whole numbers only, or floats in [0, 1] mapped
    with ``round(255 * r)`` (KITTI style).
drop_origin : bool, default=False
    Accept points at the sensor origin (elevation undefined): they are left out of
    the model and their reflectance is stored raw (8 bits each).""",
}


def fill_doc(obj):
    """Substitute the shared ``%(name)s`` pieces into ``obj.__doc__``; return ``obj``."""
    return _fill_doc(obj, PIECES)
