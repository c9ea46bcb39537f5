"""Lossless compression of LiDAR reflectance with the geometry as side information.

``import sklearn_icml.compression`` stays numpy-only: :class:`SerLiCCodec` needs torch and
is imported on first access (it is listed in ``_TORCH_NAMES``). The range coder
(``constriction``) is imported when a codec first codes.
"""

from ..utils._lazy import lazy_module

# Names that need torch are imported lazily (see __getattr__) and listed in _TORCH_NAMES.
_TORCH_NAMES = set()

__all__ = []

from ._adaptive import AdaptiveContextCodec  # noqa: E402
from ._airborne import AirborneScanSerializer  # noqa: E402
from ._serialization import ScanOrderSerializer  # noqa: E402

_TORCH_NAMES |= {"SerLiCCodec"}
__all__ += ["AdaptiveContextCodec", "AirborneScanSerializer", "ScanOrderSerializer", "SerLiCCodec"]

# torch-based names are imported on first access only; ``__all__`` is answered by
# __getattr__ (see utils._lazy.lazy_module), without the names whose dependencies are not
# installed, so that `from sklearn_icml.compression import *` works without torch
__getattr__, __dir__ = lazy_module(
    __name__, __all__, {"SerLiCCodec": "._serlic"}, {"._serlic": ("torch", "skorch")}
)
del __all__
