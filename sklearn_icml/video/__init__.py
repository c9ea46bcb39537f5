"""Video understanding methods on torch and skorch (needs the ``neural`` extra)."""

from ._classifier import F16VideoClassifier, F16VideoModule
from ._compressor import F16ClipCompressor
from ._frames import patch_encode, sample_frame_indices
from ._projector import MultiFrameProjector, make_frame_projector

__all__ = [
    "F16ClipCompressor",
    "F16VideoClassifier",
    "F16VideoModule",
    "MultiFrameProjector",
    "make_frame_projector",
    "patch_encode",
    "sample_frame_indices",
]
