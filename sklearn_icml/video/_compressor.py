"""F16ClipCompressor: per-clip multi-frame token compression as a scikit-learn transformer."""

import copy
import math

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import NonTabularInputMixin
from ..utils import draw_seed, optional_import
from ..utils._param_validation import POSITIVE_INT
from ..utils._params import store_params
from ..utils._skorch import seeded
from ._frames import check_frame_array
from ._projector import (
    MultiFrameProjector,
    check_pooled_grid,
    make_frame_projector,
    pad_to_clips,
    pool_tokens,
)

torch = optional_import("torch", "neural")


def check_square_grid(n_tokens, name="X"):
    """Side ``g`` of a square token grid with ``g * g = n_tokens``, else ValueError."""
    g = math.isqrt(int(n_tokens))
    if g * g != n_tokens:
        raise ValueError(
            f"{name} must have a square grid g x g of tokens per frame for spatial pooling "
            f"(or pool_stride=1); N={n_tokens} is not a square grid. Got {n_tokens} tokens "
            "instead."
        )
    return g


class F16ClipCompressor(NonTabularInputMixin, TransformerMixin, BaseEstimator):
    """Compress each 1-second clip of frame tokens into the token budget of one frame.

    The F-16 aligner as a transformer: frame features ``(n_videos, T, N, C)`` (``N``
    tokens of ``C`` channels per frame, on a square ``g x g`` grid) are grouped into clips
    of ``frames_per_clip`` frames (the last clip padded when ``T`` is not a multiple), each
    spatial position of each clip is projected from ``F*C`` to ``hidden_dim`` by a
    :class:`MultiFrameProjector`, and the result is max-pooled with stride
    ``pool_stride``: ``(n_videos, n_clips, N', hidden_dim)``, ``N' = floor(g/s)**2``.

    No labels are used: ``fit`` draws a per-frame projector ``P`` from ``random_state`` (or
    takes ``frame_projector``) and split-initialises the aligner from it, so that
    ``transform`` returns the time average of ``P`` over each clip until the projector is
    trained further (``projector_`` is a torch module a user can train).

    Parameters
    ----------
    frames_per_clip : int, default=16
        Frames ``F`` per clip (one second at 16 FPS).
    hidden_dim : int, default=32
        Output width ``H``; ignored when ``frame_projector`` is given.
    pool_stride : int, default=2
        Kernel and stride of the spatial pooling after projection; 1 disables pooling.
    pool_mode : {"max", "avg"}, default="max"
        Pooling operator (the paper: max).
    pool_ceil : bool, default=False
        Ceil instead of floor mode (the paper: floor, 27 x 27 -> 13 x 13).
    frame_repeat : int, default=1
        Repeat each input frame this many times along time before grouping: frames given
        at ``16 / r`` FPS then fill the 16 slots of a one-second clip (the paper's low-rate input).
    pad_mode : {"zeros", "edge"}, default="zeros"
        How the trailing partial clip is filled: all-zero frames (the paper) or copies of
        the last frame. A partial clip is never dropped, and no all-zero clip is added
        when ``T`` is a multiple of ``F``.
    frame_projector : torch.nn.Sequential or None, default=None
        A per-frame projector ``Linear(C, H), GELU, Linear(H, H)`` to split-initialise
        from (for instance one trained on single frames); None draws a fresh one.
    random_state : int, RandomState instance or None, default=None
        Seeds the fresh per-frame projector.

    Attributes
    ----------
    projector_ : MultiFrameProjector
        The split-initialised aligner.
    grid_size_ : int
        Side ``g`` of the token grid (``N = g*g``).
    n_tokens_per_clip_ : int
        Tokens per clip after pooling (``N'``), the same at every frame rate.
    n_features_in_ : int
        Channels ``C`` of the input tokens.

    See Also
    --------
    MultiFrameProjector : the torch module.
    F16VideoClassifier : the end-to-end classifier built on the same aligner.

    References
    ----------
    .. [1] Li et al., "Improving LLM Video Understanding with 16 Frames Per Second",
       ICML 2025 (arXiv:2503.13956); full reference in :class:`F16VideoClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.video import F16ClipCompressor
    >>> X = np.random.RandomState(0).rand(3, 33, 16, 4)   # 33 frames of 4 x 4 tokens
    >>> F16ClipCompressor(hidden_dim=8, random_state=0).fit_transform(X).shape
    (3, 3, 4, 8)
    """

    _parameter_constraints = {
        "frames_per_clip": [POSITIVE_INT],
        "hidden_dim": [POSITIVE_INT],
        "pool_stride": [POSITIVE_INT],
        "pool_mode": [StrOptions({"max", "avg"})],
        "pool_ceil": ["boolean"],
        "frame_repeat": [POSITIVE_INT],
        "pad_mode": [StrOptions({"zeros", "edge"})],
        "frame_projector": [HasMethods(["forward"]), None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        frames_per_clip=16,
        hidden_dim=32,
        pool_stride=2,
        pool_mode="max",
        pool_ceil=False,
        frame_repeat=1,
        pad_mode="zeros",
        frame_projector=None,
        random_state=None,
    ):
        store_params(self, locals())

    def _validate_features(self, X):
        return check_frame_array(
            X, (4,), "4-D frame features (n_videos, n_frames, n_tokens, n_channels)"
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the token grid and build the split-initialised projector.

        Parameters
        ----------
        X : array-like of shape (n_videos, n_frames, n_tokens, n_channels)
            Encoded frames; ``n_tokens`` must be a perfect square when ``pool_stride > 1``.
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        X = self._validate_features(X)
        n_tokens, channels = X.shape[2], X.shape[3]
        if self.pool_stride > 1:
            g = check_square_grid(n_tokens)
            gh, gw = check_pooled_grid((g, g), self.pool_stride, self.pool_ceil)
        else:
            g = math.isqrt(n_tokens)
            g = g if g * g == n_tokens else None
            gh, gw = n_tokens, 1
        if self.frame_projector is not None:
            proj = copy.deepcopy(self.frame_projector)
            first = next(iter(proj), None) if isinstance(proj, torch.nn.Sequential) else None
            if isinstance(first, torch.nn.Linear) and first.in_features != channels:
                raise ValueError(
                    f"frame_projector expects {first.in_features} input channels but X has "
                    f"{channels}. Got X of shape {X.shape} instead."
                )
        else:
            with seeded(draw_seed(self.random_state)):
                proj = make_frame_projector(channels, self.hidden_dim)
        self.projector_ = MultiFrameProjector.from_frame_projector(proj, self.frames_per_clip)
        self.projector_.eval()
        self.grid_size_ = g
        self.n_tokens_per_clip_ = int(gh * gw)
        self.n_features_in_ = int(channels)
        self._n_tokens = int(n_tokens)
        return self

    def transform(self, X):
        """Compress each clip of ``frames_per_clip`` frames to ``n_tokens_per_clip_`` tokens.

        Parameters
        ----------
        X : array-like of shape (n_videos, n_frames, n_tokens, n_channels)
            Same ``n_tokens`` and ``n_channels`` as in ``fit``; any number of frames.

        Returns
        -------
        tokens : ndarray of shape (n_videos, n_clips, n_tokens_per_clip_, hidden_dim)
            ``n_clips = ceil(n_frames * frame_repeat / frames_per_clip)``; float32.
        """
        check_is_fitted(self)
        X = self._validate_features(X)
        if X.shape[2] != self._n_tokens or X.shape[3] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[2]} tokens of {X.shape[3]} channels per frame, but "
                f"F16ClipCompressor was fitted with {self._n_tokens} tokens of "
                f"{self.n_features_in_} channels. Got shape {X.shape} instead."
            )
        z = X.astype(np.float32)
        if self.frame_repeat > 1:
            z = np.repeat(z, self.frame_repeat, axis=1)
        z = pad_to_clips(z, self.frames_per_clip, self.pad_mode)
        with torch.no_grad():
            y = self.projector_(torch.from_numpy(np.ascontiguousarray(z)))
            if self.pool_stride > 1:
                g = self.grid_size_
                y = pool_tokens(y, (g, g), self.pool_stride, self.pool_mode, self.pool_ceil)
        return y.numpy()

