"""The SerLiC network: context tokens, a causal sequence model (Mamba or GRU), a PMF head.

Imports torch (and mambapy for the Mamba block); ``sklearn_icml.compression`` imports this
module only when :class:`SerLiCCodec` is first used.
"""

import math

import numpy as np

from ..utils import optional_import
from ._scan_kernels import scan_backward, scan_forward
from ._serialization import START_SYMBOL

torch = optional_import("torch", "neural")
nn = torch.nn
F = torch.nn.functional

N_SYMBOLS = 256
LN2 = math.log(2.0)


def _as_numpy(t):
    return np.ascontiguousarray(t.detach().to(torch.float32).numpy())


class SelectiveScanCPU(torch.autograd.Function):
    """Mamba's selective scan on the CPU through the numba kernels of ``_scan_kernels``."""

    @staticmethod
    def forward(ctx, x, delta, A, B, C, D):
        arrays = [_as_numpy(t) for t in (x, delta, A, B, C, D)]
        if any(ctx.needs_input_grad):
            ctx.arrays = arrays  # the backward pass recomputes the states from these
        return torch.from_numpy(scan_forward(*arrays))

    @staticmethod
    def backward(ctx, gy):
        grads = scan_backward(*ctx.arrays, _as_numpy(gy))
        del ctx.arrays
        return tuple(torch.from_numpy(g) for g in grads)


try:  # mambapy is needed for sequence_model="mamba" only
    from mambapy import mamba as _mambapy
except ImportError:  # pragma: no cover - reported by optional_import when used
    _mambapy = None

if _mambapy is not None:

    class CPUScanMambaBlock(_mambapy.MambaBlock):
        """mambapy's MambaBlock whose selective scan runs as a numba recurrence on a CPU.

        Same parameters, the same formulas and the same step function; only the
        evaluation of the parallel scan changes (mambapy's own pscan is used on other
        devices and dtypes).
        """

        def selective_scan(self, x, delta, A, B, C, D):
            if x.device.type != "cpu" or x.dtype != torch.float32:
                return super().selective_scan(x, delta, A, B, C, D)
            return SelectiveScanCPU.apply(x, delta, A, B, C, D)


class SerLiCNet(nn.Module):
    """Token embedding + causal sequence model + 256-way head (SerLiC, Zhu et al. 2025).

    For position ``t`` of a window the token is
    ``Linear(concat(E_v[v] + E_u[u], MLP_rho(features), E_r[r_prev]))`` where the
    features are ``rho / rho_scale`` and, with ``prior_scalar``, the scalar
    ``r_prev / 255`` (0 at the start symbol) and a start-of-window flag (an addition to
    the paper's token that lets a light model use the previous value early in training).
    ``r_prev`` is the previous reflectance of the window, the start
    symbol 256 at ``t = 0``; the value ``r_t`` itself never enters position ``t``.

    ``forward`` runs whole windows (parallel scan for Mamba; training and ``score``);
    ``step`` runs one position of every window from a recurrent state (coding).
    """

    def __init__(
        self,
        *,
        n_lasers,
        n_azimuth,
        d_emb,
        d_model,
        n_layers,
        d_state,
        expand,
        sequence_model,
        prior_scalar,
    ):
        super().__init__()
        self.sequence_model = sequence_model
        self.prior_scalar = bool(prior_scalar)
        self.n_layers = n_layers
        self.d_model = d_model
        self.emb_v = nn.Embedding(n_lasers, d_emb)
        self.emb_u = nn.Embedding(n_azimuth, d_emb)
        self.emb_r = nn.Embedding(START_SYMBOL + 1, d_emb)
        n_scalar = 3 if self.prior_scalar else 1
        self.mlp_rho = nn.Sequential(
            nn.Linear(n_scalar, d_emb), nn.ReLU(), nn.Linear(d_emb, d_emb)
        )
        self.token = nn.Linear(3 * d_emb, d_model)
        if sequence_model == "mamba":
            mamba = optional_import("mambapy.mamba", "compression")
            config = mamba.MambaConfig(
                d_model=d_model, n_layers=n_layers, d_state=d_state, expand_factor=expand,
                d_conv=4,
            )
            self.seq = mamba.Mamba(config)
            # same module and weights; only the CPU evaluation of the parallel scan changes
            for layer in self.seq.layers:
                layer.mixer.__class__ = CPUScanMambaBlock
            self._d_inner = config.d_inner
            self._d_state = d_state
        else:
            self.seq = nn.GRU(d_model, d_model, num_layers=n_layers, batch_first=True)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, N_SYMBOLS)
        # start near the uniform PMF (8 bits per point) rather than a random one
        with torch.no_grad():
            self.head.weight.mul_(0.1)
            self.head.bias.zero_()

    def tokens(self, v, u, rho, r_prev):
        """Context tokens; every input has the same shape, the output adds ``d_model``."""
        pos = self.emb_v(v) + self.emb_u(u)
        if self.prior_scalar:
            start = r_prev == START_SYMBOL
            scalar = torch.where(start, torch.zeros_like(rho), r_prev.to(rho.dtype) / 255.0)
            feats = torch.stack([rho, scalar, start.to(rho.dtype)], dim=-1)
        else:
            feats = rho.unsqueeze(-1)
        return self.token(torch.cat([pos, self.mlp_rho(feats), self.emb_r(r_prev)], dim=-1))

    def forward(self, v, u, rho, r_prev):
        """Logits of shape ``(n_windows, window, 256)`` from ``(n_windows, window)`` inputs."""
        z = self.tokens(v, u, rho, r_prev)
        if self.sequence_model == "mamba":
            h = self.seq(z)
        else:
            h, _ = self.seq(z)
        return self.head(self.norm(h))

    def init_state(self, batch):
        """Zero recurrent state for ``batch`` windows."""
        if self.sequence_model == "mamba":
            return [
                (
                    torch.zeros(batch, self._d_inner, self._d_state),
                    torch.zeros(batch, self._d_inner, 3),
                )
                for _ in range(self.n_layers)
            ]
        return torch.zeros(self.n_layers, batch, self.d_model)

    def step(self, v, u, rho, r_prev, state):
        """One position of every window: ``(logits (batch, 256), new_state)``."""
        z = self.tokens(v, u, rho, r_prev)
        if self.sequence_model == "mamba":
            h, state = self.seq.step(z, list(state))
        else:
            out, state = self.seq(z.unsqueeze(1), state)
            h = out[:, 0]
        return self.head(self.norm(h)), state


def bits_loss(logits, target, mask, prob_floor):
    """Mean code length in bits of ``target`` under the floored PMF, over ``mask``.

    The PMF is ``(1 - 256 * prob_floor) * softmax(logits) + prob_floor`` (the coding
    PMF, floored so that no symbol has zero probability), evaluated in log space.
    """
    logp = F.log_softmax(logits.float(), dim=-1)
    mixed = torch.logaddexp(
        logp + math.log1p(-N_SYMBOLS * prob_floor),
        torch.full_like(logp, math.log(prob_floor)),
    )
    nll = -mixed.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    mask = mask.to(nll.dtype)
    return (nll * mask).sum() / mask.sum().clamp_min(1.0) / LN2
