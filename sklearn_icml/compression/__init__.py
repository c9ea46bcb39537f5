"""Lossless compression of LiDAR reflectance with the geometry as side information.

``import sklearn_icml.compression`` stays numpy-only: :class:`SerLiCCodec` needs torch and
is imported on first access (it is listed in ``_TORCH_NAMES``). The range coder
(``constriction``) is imported when a codec first codes.
"""

# Names that need torch are imported lazily (see __getattr__) and listed in _TORCH_NAMES.
_TORCH_NAMES = set()

__all__ = []

from ._adaptive import AdaptiveContextCodec  # noqa: E402
from ._serialization import ScanOrderSerializer  # noqa: E402

_TORCH_NAMES |= {"SerLiCCodec"}
__all__ += ["AdaptiveContextCodec", "ScanOrderSerializer", "SerLiCCodec"]


def __getattr__(name):
    # torch-based names are imported on first access only
    if name == "SerLiCCodec":
        from ._serlic import SerLiCCodec

        return SerLiCCodec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
