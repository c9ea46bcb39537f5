"""Velocity networks of CellFlux: a FiLM MLP for vectors and a small FiLM U-Net for images.

Both compute ``emb = MLP_time(sinusoidal(t)) + Linear(E -> C_emb)(e(c))`` and modulate each
block with scale and shift from ``emb`` (FiLM, as in CellFlux). A dropped condition removes the
``Linear(e)`` term (it adds exactly 0, not the layer's bias).
"""

import math

from ..utils._optional import optional_import

torch = optional_import("torch", "neural")
nn = torch.nn
F = torch.nn.functional


def _groups(channels):
    """A GroupNorm group count that divides ``channels`` (at most 8)."""
    return math.gcd(8, int(channels))


def sinusoidal_embedding(t, dim):
    """Sinusoidal features of the flow time ``t`` (shape ``(n,)``) -> ``(n, dim)``."""
    half = dim // 2
    freqs = torch.exp(
        -math.log(10000.0) * torch.arange(half, dtype=t.dtype, device=t.device) / max(half, 1)
    )
    # times in [0, 1] are spread over the range the frequencies resolve
    args = 1000.0 * t[:, None] * freqs[None, :]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=1)
    if dim % 2:
        emb = F.pad(emb, (0, 1))
    return emb


class _ConditionEmbedding(nn.Module):
    """``emb(t, e) = MLP(sinusoidal(t)) + keep * Linear(e)``; ``e=None`` drops the condition."""

    def __init__(self, emb_dim, cond_dim, time_dim=64):
        super().__init__()
        self.time_dim = time_dim
        self.time_mlp = nn.Sequential(
            nn.Linear(time_dim, emb_dim), nn.SiLU(), nn.Linear(emb_dim, emb_dim)
        )
        self.cond_proj = nn.Linear(cond_dim, emb_dim)

    def forward(self, t, e=None, keep=None):
        emb = self.time_mlp(sinusoidal_embedding(t, self.time_dim))
        if e is not None:
            c = self.cond_proj(e)
            if keep is not None:
                c = c * keep[:, None]
            emb = emb + c
        return emb


class _PerturbationTable(nn.Module):
    """Perturbation embeddings: a learnable ``nn.Embedding`` or a frozen buffer."""

    def __init__(self, n_perturbations, embedding_dim, fixed=None):
        super().__init__()
        if fixed is None:
            self.table = nn.Embedding(n_perturbations, embedding_dim)
            self.register_buffer("fixed", None)
        else:
            self.table = None
            self.register_buffer("fixed", fixed.clone())

    def forward(self, index):
        if self.table is not None:
            return self.table(index)
        return self.fixed[index]


class FiLMMLPVelocity(nn.Module):
    """Velocity MLP for vectors: blocks ``Linear(SiLU(FiLM(LayerNorm(h), emb)))``.

    Parameters
    ----------
    n_features : int
    hidden_dims : tuple of int
    cond_dim : int
        Size of a perturbation embedding vector.
    n_perturbations : int
        Rows of the learnable table (ignored when ``fixed_embeddings`` is given).
    fixed_embeddings : tensor of shape (n_perturbations, cond_dim) or None
    """

    def __init__(self, n_features, hidden_dims, cond_dim, n_perturbations,
                 fixed_embeddings=None, emb_dim=None):
        super().__init__()
        hidden_dims = tuple(int(h) for h in hidden_dims)
        emb_dim = emb_dim or max(hidden_dims)
        self.perturbation_table = _PerturbationTable(n_perturbations, cond_dim, fixed_embeddings)
        self.embed = _ConditionEmbedding(emb_dim, cond_dim)
        self.inp = nn.Linear(n_features, hidden_dims[0])
        dims = hidden_dims + (hidden_dims[-1],)
        self.norms = nn.ModuleList(nn.LayerNorm(d, elementwise_affine=False) for d in dims[:-1])
        self.films = nn.ModuleList(nn.Linear(emb_dim, 2 * d) for d in dims[:-1])
        self.linears = nn.ModuleList(
            nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True)
        )
        self.out_norm = nn.LayerNorm(dims[-1], elementwise_affine=False)
        self.out = nn.Linear(dims[-1], n_features)

    def forward(self, x, t, e=None, keep=None):
        emb = F.silu(self.embed(t, e, keep))
        h = self.inp(x)
        for norm, film, lin in zip(self.norms, self.films, self.linears, strict=True):
            scale, shift = film(emb).chunk(2, dim=1)
            h = lin(F.silu(norm(h) * (1 + scale) + shift))
        return self.out(F.silu(self.out_norm(h)))


class _ResBlock(nn.Module):
    def __init__(self, c_in, c_out, emb_dim):
        super().__init__()
        self.norm1 = nn.GroupNorm(_groups(c_in), c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.norm2 = nn.GroupNorm(_groups(c_out), c_out, affine=False)
        self.film = nn.Linear(emb_dim, 2 * c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x, emb):
        h = self.conv1(F.silu(self.norm1(x)))
        scale, shift = self.film(emb).chunk(2, dim=1)
        h = self.norm2(h) * (1 + scale[:, :, None, None]) + shift[:, :, None, None]
        h = self.conv2(F.silu(h))
        return self.skip(x) + h


class SmallUNetVelocity(nn.Module):
    """A two-level U-Net with scale-shift (FiLM) residual blocks, for small images.

    ``(n, C, H, W)`` in and out; ``channels`` at full resolution and ``2 * channels`` at
    half resolution.
    """

    def __init__(self, n_channels, channels, cond_dim, n_perturbations,
                 fixed_embeddings=None):
        super().__init__()
        c = int(channels)
        emb_dim = 4 * c
        self.perturbation_table = _PerturbationTable(n_perturbations, cond_dim, fixed_embeddings)
        self.embed = _ConditionEmbedding(emb_dim, cond_dim)
        self.inp = nn.Conv2d(n_channels, c, 3, padding=1)
        self.down1 = _ResBlock(c, c, emb_dim)
        self.pool = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
        self.mid = _ResBlock(2 * c, 2 * c, emb_dim)
        self.up1 = _ResBlock(3 * c, c, emb_dim)
        self.out_norm = nn.GroupNorm(_groups(c), c)
        self.out = nn.Conv2d(c, n_channels, 3, padding=1)

    def forward(self, x, t, e=None, keep=None):
        emb = F.silu(self.embed(t, e, keep))
        h0 = self.down1(self.inp(x), emb)
        h1 = self.mid(self.pool(h0), emb)
        up = F.interpolate(h1, size=h0.shape[-2:], mode="nearest")
        h = self.up1(torch.cat([up, h0], dim=1), emb)
        return self.out(F.silu(self.out_norm(h)))
