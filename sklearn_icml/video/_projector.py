"""The per-clip multi-frame projector (the F-16 aligner), its baselines, padding and pooling."""

import numpy as np
from sklearn.utils._param_validation import validate_parameter_constraints, validate_params

from ..utils import optional_import
from ..utils._param_validation import POSITIVE_INT

torch = optional_import("torch", "neural")
nn = torch.nn
F_ = torch.nn.functional


@validate_params(
    {"in_dim": [POSITIVE_INT], "hidden_dim": [POSITIVE_INT]}, prefer_skip_nested_validation=True
)
def make_frame_projector(in_dim, hidden_dim):
    """The per-frame projector ``P(z) = V2 GELU(V1 z + c1) + c2`` (LLaVA's ``mlp2x_gelu``).

    Parameters
    ----------
    in_dim : int
        Size of a frame feature ``z``.
    hidden_dim : int
        Size of the hidden layer and of the output.

    Returns
    -------
    torch.nn.Sequential
        ``Linear(in_dim, hidden_dim)``, GELU, ``Linear(hidden_dim, hidden_dim)``.

    Examples
    --------
    >>> from sklearn_icml.video import make_frame_projector
    >>> make_frame_projector(16, 8)
    Sequential(
      (0): Linear(in_features=16, out_features=8, bias=True)
      (1): GELU(approximate='none')
      (2): Linear(in_features=8, out_features=8, bias=True)
    )
    """
    return nn.Sequential(
        nn.Linear(int(in_dim), int(hidden_dim)),
        nn.GELU(),
        nn.Linear(int(hidden_dim), int(hidden_dim)),
    )


def _frames_per_clip(value, caller_name):
    validate_parameter_constraints(
        {"frames_per_clip": [POSITIVE_INT]}, {"frames_per_clip": value}, caller_name=caller_name
    )
    return int(value)


def _group_clips(z, frames_per_clip):
    """``(B, T, N, C)`` -> ``(B, T/F, N, F*C)``, frames in time order, frame-major."""
    if z.ndim != 4:
        raise ValueError(f"z must be 4-D (B, T, N, C). Got shape {tuple(z.shape)} instead.")
    b, t, n, c = z.shape
    if t % frames_per_clip:
        raise ValueError(
            f"the number of frames T must be a multiple of frames_per_clip="
            f"{frames_per_clip}; pad the last clip first (pad_to_clips). Got T={t} instead."
        )
    z = z.reshape(b, t // frames_per_clip, frames_per_clip, n, c).transpose(2, 3)
    return z.reshape(b, t // frames_per_clip, n, frames_per_clip * c)


class MultiFrameProjector(nn.Module):
    """The F-16 aligner: one token per spatial position per clip of ``F`` frames.

    Each spatial position of each clip becomes ``x = [z_1; ...; z_F]`` (frames in time
    order) and is projected by ``y = W2 GELU(W1 x + b1) + b2`` with
    ``W1: (F*H) x (F*C)`` and ``W2: H x (F*H)``.

    Parameters
    ----------
    in_dim : int
        Channels ``C`` of the encoded frame tokens.
    hidden_dim : int
        Output width ``H``.
    frames_per_clip : int, default=16
        ``F``.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.video import MultiFrameProjector
    >>> proj = MultiFrameProjector(in_dim=4, hidden_dim=8, frames_per_clip=16)
    >>> proj(torch.zeros(2, 32, 9, 4)).shape
    torch.Size([2, 2, 9, 8])
    """

    def __init__(self, in_dim, hidden_dim, frames_per_clip=16):
        super().__init__()
        self.frames_per_clip = _frames_per_clip(frames_per_clip, type(self).__name__)
        self.in_dim = int(in_dim)
        self.hidden_dim = int(hidden_dim)
        f = self.frames_per_clip
        self.fc1 = nn.Linear(f * self.in_dim, f * self.hidden_dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(f * self.hidden_dim, self.hidden_dim)

    @classmethod
    def from_frame_projector(cls, frame_proj, frames_per_clip=16):
        """Split initialisation from a per-frame projector (the paper's ``mf_split_init``).

        ``W1 = blockdiag(V1, ..., V1)``, ``b1 = [c1; ...; c1]``,
        ``W2 = [V2/F, ..., V2/F]``, ``b2 = c2``, so that at initialisation the output is
        the time average ``(1/F) sum_f P(z_f)`` of the per-frame projections.

        Parameters
        ----------
        frame_proj : torch.nn.Sequential
            ``Linear(C, H), GELU, Linear(H, H)`` (see :func:`make_frame_projector`).
        frames_per_clip : int, default=16

        Returns
        -------
        projector : MultiFrameProjector

        Examples
        --------
        >>> import torch
        >>> from sklearn_icml.video import MultiFrameProjector, make_frame_projector
        >>> _ = torch.manual_seed(0)
        >>> P = make_frame_projector(4, 8)
        >>> proj = MultiFrameProjector.from_frame_projector(P, frames_per_clip=4)
        >>> z = torch.randn(1, 4, 3, 4)
        >>> bool(torch.allclose(proj(z)[0, 0], P(z[0]).mean(0), atol=1e-5))
        True
        """
        layers = list(frame_proj) if isinstance(frame_proj, nn.Sequential) else []
        if (
            len(layers) != 3
            or not isinstance(layers[0], nn.Linear)
            or not isinstance(layers[1], nn.GELU)
            or not isinstance(layers[2], nn.Linear)
            or layers[2].in_features != layers[0].out_features
            or layers[2].out_features != layers[0].out_features
        ):
            raise TypeError(
                "frame_proj must be nn.Sequential(Linear(C, H), GELU(), Linear(H, H)). Got "
                f"{frame_proj!r} instead."
            )
        v1, act, v2 = layers
        f = _frames_per_clip(frames_per_clip, f"{cls.__name__}.from_frame_projector")
        c, h = v1.in_features, v1.out_features
        proj = cls(c, h, f)
        proj.act = nn.GELU(approximate=act.approximate)
        with torch.no_grad():
            proj.fc1.weight.copy_(torch.block_diag(*([v1.weight] * f)))
            proj.fc1.bias.copy_(v1.bias.repeat(f) if v1.bias is not None else 0.0)
            proj.fc2.weight.copy_(torch.cat([v2.weight / f] * f, dim=1))
            proj.fc2.bias.copy_(v2.bias if v2.bias is not None else torch.zeros(h))
        return proj

    def forward(self, z):
        """``z`` of shape ``(B, T, N, C)`` with ``T % F == 0`` -> ``(B, T/F, N, H)``."""
        x = _group_clips(z, self.frames_per_clip)
        return self.fc2(self.act(self.fc1(x)))


class _PerFrameAligner(nn.Module):
    """A per-frame projector applied to the frames of each clip (the baselines' shared part)."""

    def __init__(self, in_dim, hidden_dim, frames_per_clip=16):
        super().__init__()
        self.frames_per_clip = _frames_per_clip(frames_per_clip, type(self).__name__)
        self.frame_proj = make_frame_projector(in_dim, hidden_dim)


class MeanPoolAligner(_PerFrameAligner):
    """Baseline aligner: the time average of per-frame projections over each clip.

    Frame order inside a clip is discarded, so the rotation direction is lost.
    """

    def forward(self, z):
        b, t, n, c = z.shape
        y = self.frame_proj(z)
        return y.reshape(b, t // self.frames_per_clip, self.frames_per_clip, n, -1).mean(2)


class SingleFrameAligner(_PerFrameAligner):
    """Baseline aligner: the per-frame projection of the first frame of each clip (1 FPS)."""

    def forward(self, z):
        return self.frame_proj(z[:, :: self.frames_per_clip])


def make_aligner(kind, in_dim, hidden_dim, frames_per_clip=16, split_init=True):
    """The clip aligner ``kind`` maps ``(B, T, N, C)`` frame tokens to ``(B, T/F, N, H)``.

    Parameters
    ----------
    kind : {"multiframe", "meanpool", "single"}
        :class:`MultiFrameProjector` (the F-16 aligner), :class:`MeanPoolAligner` or
        :class:`SingleFrameAligner` (the baselines).
    in_dim, hidden_dim, frames_per_clip : int
        ``C``, ``H`` and ``F``.
    split_init : bool, default=True
        For ``"multiframe"``: split-initialise from a fresh per-frame projector
        (:meth:`MultiFrameProjector.from_frame_projector`) instead of torch's default
        initialisation.

    Returns
    -------
    aligner : torch.nn.Module

    Examples
    --------
    >>> from sklearn_icml.video._projector import make_aligner
    >>> type(make_aligner("meanpool", 4, 8)).__name__
    'MeanPoolAligner'
    """
    if kind == "multiframe":
        if split_init:
            return MultiFrameProjector.from_frame_projector(
                make_frame_projector(in_dim, hidden_dim), frames_per_clip
            )
        return MultiFrameProjector(in_dim, hidden_dim, frames_per_clip)
    if kind == "meanpool":
        return MeanPoolAligner(in_dim, hidden_dim, frames_per_clip)
    return SingleFrameAligner(in_dim, hidden_dim, frames_per_clip)


def pad_to_clips(tokens, frames_per_clip, mode="zeros"):
    """Pad the time axis of ``(n, T, N, C)`` tokens to the next multiple of ``F``.

    Pads only when ``T % F != 0`` (the released code also appends a full all-zero clip
    when ``T % F == 0``; that quirk is not copied). ``mode="zeros"`` appends all-zero
    frames (the paper), ``"edge"`` repeats the last frame. The input is never modified.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.video._projector import pad_to_clips
    >>> pad_to_clips(np.ones((1, 33, 4, 2)), 16).shape
    (1, 48, 4, 2)
    >>> pad_to_clips(np.ones((1, 32, 4, 2)), 16).shape
    (1, 32, 4, 2)
    """
    t = tokens.shape[1]
    missing = (-t) % frames_per_clip
    if missing == 0:
        return tokens
    if mode == "edge":
        pad = np.repeat(tokens[:, -1:], missing, axis=1)
    else:
        pad = np.zeros((tokens.shape[0], missing) + tokens.shape[2:], dtype=tokens.dtype)
    return np.concatenate([tokens, pad], axis=1)


def pooled_grid_shape(grid, stride, ceil_mode=False):
    """Grid ``(gh, gw)`` after a ``stride x stride`` pool (floor mode by default)."""
    gh, gw = grid
    if stride == 1:
        return gh, gw
    if ceil_mode:
        return -(-gh // stride), -(-gw // stride)
    return gh // stride, gw // stride


def check_pooled_grid(grid, stride, ceil_mode=False, *, kind="token", remedy="pool_stride"):
    """:func:`pooled_grid_shape`, or ValueError when the pooling leaves no token.

    ``kind`` names the grid ("token", "patch") and ``remedy`` the parameters to lower in
    the message.
    """
    gh, gw = pooled_grid_shape(grid, stride, ceil_mode)
    if gh * gw == 0:
        raise ValueError(
            f"pool_stride={stride} is larger than the {grid[0]} x {grid[1]} {kind} grid "
            f"(floor mode leaves no token); lower {remedy}. Got pool_stride={stride!r} "
            "instead."
        )
    return gh, gw


def pool_tokens(y, grid, stride, mode="max", ceil_mode=False):
    """2-D pool of per-clip tokens after projection.

    ``y`` of shape ``(B, n_clips, gh*gw, H)`` -> ``(B, n_clips, gh'*gw', H)`` with kernel =
    stride = ``stride`` (floor mode by default: 27 x 27 -> 13 x 13).
    """
    if stride == 1:
        return y
    b, nc, n, h = y.shape
    gh, gw = grid
    x = y.reshape(b * nc, gh, gw, h).permute(0, 3, 1, 2)
    pool = F_.max_pool2d if mode == "max" else F_.avg_pool2d
    x = pool(x, kernel_size=stride, stride=stride, ceil_mode=ceil_mode)
    return x.permute(0, 2, 3, 1).reshape(b, nc, -1, h)
