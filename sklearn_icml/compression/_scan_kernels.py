"""numba kernels of Mamba's selective scan on the CPU, with plain numpy references.

The selective scan of a Mamba block maps ``x, delta`` of shape ``(batch, length, E)``,
``A`` of shape ``(E, N)``, ``B, C`` of shape ``(batch, length, N)`` and ``D`` of shape
``(E,)`` to ``y`` of shape ``(batch, length, E)``::

    h[t, e, n] = exp(delta[t, e] * A[e, n]) * h[t-1, e, n] + delta[t, e] * B[t, n] * x[t, e]
    y[t, e]    = sum_n C[t, n] * h[t, e, n] + D[e] * x[t, e]

``mambapy`` evaluates it with a parallel (Blelloch) scan over materialised
``(batch, length, E, N)`` tensors, which on a CPU costs most of a training step of the
light SerLiC model. These kernels run the recurrence directly and never materialise the
4-D tensors: the forward pass keeps one ``(E, N)`` state; the backward pass recomputes the
states of one sequence at a time into a cache-sized buffer and walks back through it.
The tests compare them with the numpy references below and with mambapy's own scan
(values and gradients).
"""

import numpy as np

from ..utils._numba import njit_cached


@njit_cached(fastmath=True)
def scan_forward(x, delta, A, B, C, D):
    """``y`` of the selective scan (float32 arrays, shapes as in the module docstring)."""
    n_batch, length, n_e = x.shape
    n_state = A.shape[1]
    y = np.empty_like(x)
    h = np.zeros((n_e, n_state), dtype=np.float32)
    for b in range(n_batch):
        h[:] = 0.0
        for t in range(length):
            for e in range(n_e):
                d = delta[b, t, e]
                du = d * x[b, t, e]
                acc = np.float32(0.0)
                for n in range(n_state):
                    hn = np.exp(d * A[e, n]) * h[e, n] + du * B[b, t, n]
                    h[e, n] = hn
                    acc += hn * C[b, t, n]
                y[b, t, e] = acc + D[e] * x[b, t, e]
    return y


@njit_cached(fastmath=True)
def scan_backward(x, delta, A, B, C, D, gy):
    """Gradients of ``sum(gy * y)`` with respect to ``x, delta, A, B, C, D``."""
    n_batch, length, n_e = x.shape
    n_state = A.shape[1]
    gx = np.empty_like(x)
    gdelta = np.empty_like(delta)
    gA = np.zeros(A.shape, dtype=np.float64)
    gB = np.zeros(B.shape, dtype=np.float32)
    gC = np.zeros(C.shape, dtype=np.float32)
    gD = np.zeros(D.shape, dtype=np.float64)
    # one sequence's states, shifted by one: hs[t + 1] = h_t, hs[0] = 0
    hs = np.zeros((length + 1, n_e, n_state), dtype=np.float32)
    decay = np.empty((length, n_e, n_state), dtype=np.float32)
    gh = np.zeros((n_e, n_state), dtype=np.float32)
    gA_b = np.zeros((n_e, n_state), dtype=np.float32)
    for b in range(n_batch):
        for t in range(length):  # recompute the states of sequence b
            for e in range(n_e):
                d = delta[b, t, e]
                du = d * x[b, t, e]
                for n in range(n_state):
                    a = np.exp(d * A[e, n])
                    decay[t, e, n] = a
                    hs[t + 1, e, n] = a * hs[t, e, n] + du * B[b, t, n]
        gh[:] = 0.0
        gA_b[:] = 0.0
        for t in range(length - 1, -1, -1):
            for e in range(n_e):
                d = delta[b, t, e]
                xv = x[b, t, e]
                g = gy[b, t, e]
                dx = d * xv
                gD[e] += g * xv
                gxv = g * D[e]
                gd = np.float32(0.0)
                for n in range(n_state):
                    gC[b, t, n] += g * hs[t + 1, e, n]
                    ghn = gh[e, n] + g * C[b, t, n]  # total gradient reaching h_t
                    a = decay[t, e, n]
                    ga = ghn * hs[t, e, n] * a
                    gd += ga * A[e, n] + ghn * B[b, t, n] * xv
                    gA_b[e, n] += ga * d
                    gB[b, t, n] += ghn * dx
                    gxv += ghn * d * B[b, t, n]
                    gh[e, n] = ghn * a  # carried back to h_{t-1}
                gx[b, t, e] = gxv
                gdelta[b, t, e] = gd
        gA += gA_b
    return gx, gdelta, gA.astype(np.float32), gB, gC, gD.astype(np.float32)


def scan_forward_reference(x, delta, A, B, C, D):
    """Plain numpy version of :func:`scan_forward`; returns ``(y, hs)``."""
    n_batch, length, n_e = x.shape
    h = np.zeros((n_batch, n_e, A.shape[1]), dtype=np.float64)
    hs = np.empty((n_batch, length, n_e, A.shape[1]))
    y = np.empty((n_batch, length, n_e))
    for t in range(length):
        a = np.exp(delta[:, t, :, None] * A[None])
        h = a * h + delta[:, t, :, None] * B[:, t, None, :] * x[:, t, :, None]
        hs[:, t] = h
        y[:, t] = np.einsum("ben,bn->be", h, C[:, t]) + D * x[:, t]
    return y, hs


def scan_backward_reference(x, delta, A, B, C, D, gy):
    """Plain numpy version of :func:`scan_backward` (float64)."""
    _, hs = scan_forward_reference(x, delta, A, B, C, D)
    n_batch, length, n_e = x.shape
    gx, gdelta = np.zeros(x.shape), np.zeros(x.shape)
    gA, gB, gC = np.zeros(A.shape), np.zeros(B.shape), np.zeros(C.shape)
    gD = np.einsum("bte,bte->e", gy, x)
    gh = np.zeros((n_batch, n_e, A.shape[1]))
    for t in range(length - 1, -1, -1):
        g = gy[:, t]  # (b, e)
        h_t = hs[:, t]
        h_prev = hs[:, t - 1] if t > 0 else np.zeros_like(h_t)
        gC[:, t] = np.einsum("be,ben->bn", g, h_t)
        gh = gh + g[:, :, None] * C[:, t, None, :]
        a = np.exp(delta[:, t, :, None] * A[None])
        ga = gh * h_prev
        gdelta[:, t] = np.sum(ga * a * A[None], axis=2) + np.einsum(
            "ben,bn->be", gh, B[:, t]
        ) * x[:, t]
        gA += np.einsum("ben,be->en", ga * a, delta[:, t])
        gB[:, t] = np.einsum("ben,be->bn", gh, delta[:, t] * x[:, t])
        gx[:, t] = g * D + np.einsum("ben,bn->be", gh, B[:, t]) * delta[:, t]
        gh = gh * a
    return gx, gdelta, gA, gB, gC, gD
