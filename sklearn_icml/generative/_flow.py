"""Flow-matching pieces of CellFlux: time samplers, path, grids, guidance, ODE solvers, EMA.

Each function is a few tensor lines, kept apart from the estimator so that the tests can
check them one by one against the formulas of the CellFlux paper (Zhang et al., ICML 2025).
"""

import numpy as np

from ..utils._optional import optional_import

torch = optional_import("torch", "neural")

T_MIN = 1e-4


def skewed_time(n, generator=None, device="cpu"):
    """Draw ``n`` flow times from the skewed sampler of CellFlux.

    ``s = exp(-1.2 + 1.2 z)`` with ``z ~ N(0, 1)``, ``t = 1 / (1 + s)``, clipped to
    ``[1e-4, 1]``: the median is 0.768 and ``P(t > 0.5) = 0.841``.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.generative._flow import skewed_time
    >>> t = skewed_time(100_000, torch.Generator().manual_seed(0))
    >>> round(float(t.median()), 2)
    0.77
    """
    z = torch.randn(n, generator=generator, device=device)
    s = torch.exp(-1.2 + 1.2 * z)
    return (1.0 / (1.0 + s)).clamp(T_MIN, 1.0)


def uniform_time(n, generator=None, device="cpu"):
    """Draw ``n`` flow times uniformly in ``[0, 1)``."""
    return torch.rand(n, generator=generator, device=device)


TIME_SAMPLERS = {"skewed": skewed_time, "uniform": uniform_time}


def conditional_path(x0, x1, t):
    """Straight-line (CondOT) path: ``x_t = (1 - t) x0 + t x1`` and ``u_t = x1 - x0``.

    ``t`` has one value per row and broadcasts over the other axes of ``x0``.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.generative._flow import conditional_path
    >>> xt, ut = conditional_path(torch.zeros(1, 2), torch.ones(1, 2), torch.tensor([0.25]))
    >>> xt.tolist(), ut.tolist()
    ([[0.25, 0.25]], [[1.0, 1.0]])
    """
    tb = t.reshape((-1,) + (1,) * (x0.dim() - 1))
    return (1.0 - tb) * x0 + tb * x1, x1 - x0


def edm_time_grid(n_steps=50, sigma_min=0.002, sigma_max=80.0, rho=7.0):
    """The EDM time grid of CellFlux's sampler: ``n_steps + 1`` increasing times.

    ``sigma_i = (sigma_max^(1/rho) + i/(N-1) (sigma_min^(1/rho) - sigma_max^(1/rho)))^rho``
    for ``i = 0..N-1`` (``N = n_steps``), then ``sigma = 0`` is appended and
    ``t_i = 1 - sigma_i / (1 + sigma_i)``. The grid starts at ``1/81`` and ends at 1.

    Examples
    --------
    >>> from sklearn_icml.generative._flow import edm_time_grid
    >>> grid = edm_time_grid(50)
    >>> len(grid), round(float(grid[0]), 7), float(grid[-1])
    (51, 0.0123457, 1.0)
    """
    n = int(n_steps)
    if n == 1:
        sigma = np.array([sigma_max], dtype=np.float64)
    else:
        ramp = np.arange(n, dtype=np.float64) / (n - 1)
        lo, hi = sigma_min ** (1.0 / rho), sigma_max ** (1.0 / rho)
        sigma = (hi + ramp * (lo - hi)) ** rho
    sigma = np.append(sigma, 0.0)
    return 1.0 - sigma / (1.0 + sigma)


def uniform_time_grid(n_steps=50):
    """``n_steps + 1`` equally spaced times from 0 to 1."""
    return np.linspace(0.0, 1.0, int(n_steps) + 1)


TIME_GRIDS = {"edm": edm_time_grid, "uniform": uniform_time_grid}


def guided_velocity(velocity, x, t, cond, cfg_scale):
    """Classifier-free guidance: ``(1 + w) v(x, t, c) - w v(x, t, None)``.

    ``velocity(x, t, cond)`` is the network; ``cond=None`` is the unconditional pass. With
    ``w = 0`` only the conditional pass runs (one network call).
    """
    v_cond = velocity(x, t, cond)
    if cfg_scale == 0:
        return v_cond
    v_uncond = velocity(x, t, None)
    return (1.0 + cfg_scale) * v_cond - cfg_scale * v_uncond


def integrate(field, x, grid, method="heun", return_trajectory=False):
    """Integrate ``dx/dt = field(x, t)`` over the times of ``grid`` (fixed steps).

    Parameters
    ----------
    field : callable ``(x, t) -> dx/dt``, ``t`` a tensor with one value per row.
    x : tensor, the state at ``grid[0]``.
    grid : 1-D array of increasing times.
    method : {"heun", "euler", "midpoint"}
        Heun's 2nd-order method, explicit Euler, or the explicit midpoint rule. The field
        is never evaluated past the last grid time.
    return_trajectory : bool
        Also return the states at every grid time, stacked on a new first axis.

    Returns
    -------
    x : tensor, the state at ``grid[-1]``; or ``(x, trajectory)``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn_icml.generative._flow import integrate
    >>> x1 = integrate(lambda x, t: torch.ones_like(x), torch.zeros(3), np.linspace(0, 1, 5))
    >>> x1.tolist()
    [1.0, 1.0, 1.0]
    """
    grid = [float(g) for g in grid]
    n = x.shape[0]
    states = [x] if return_trajectory else None

    def at(tv):
        return torch.full((n,), tv, dtype=x.dtype, device=x.device)

    for t0, t1 in zip(grid[:-1], grid[1:], strict=True):
        h = t1 - t0
        k1 = field(x, at(t0))
        if method == "euler":
            x = x + h * k1
        elif method == "midpoint":
            k2 = field(x + 0.5 * h * k1, at(t0 + 0.5 * h))
            x = x + h * k2
        elif method == "heun":
            k2 = field(x + h * k1, at(t1))
            x = x + 0.5 * h * (k1 + k2)
        else:
            raise ValueError(
                f"method must be 'heun', 'euler' or 'midpoint'. Got {method!r} instead."
            )
        if return_trajectory:
            states.append(x)
    if return_trajectory:
        return x, torch.stack(states)
    return x


def ema_decay(k, max_decay=0.999):
    """EMA decay after update ``k`` (1-based): ``min(max_decay, (1 + k) / (10 + k))``."""
    return min(float(max_decay), (1.0 + k) / (10.0 + k))


@torch.no_grad()
def ema_update(ema_params, params, decay):
    """In place: ``ema = decay * ema + (1 - decay) * new`` for each pair of tensors."""
    ema_params, params = list(ema_params), list(params)
    if ema_params:
        torch._foreach_lerp_(ema_params, params, 1.0 - decay)


def draw_same_batch_controls(rng, treated_batch_codes, control_order, batch_starts,
                             batch_counts):
    """For each treated row, a control row drawn uniformly among controls of its batch.

    Parameters
    ----------
    rng : numpy.random.Generator
    treated_batch_codes : int array of shape (m,)
        Batch code (``0..n_batches-1``) of each treated row.
    control_order : int array
        Control row indices grouped by batch code (``np.argsort(codes, kind="stable")``).
    batch_starts, batch_counts : int arrays of shape (n_batches,)
        Where each batch's controls start in ``control_order`` and how many there are
        (every treated batch must have ``count > 0``).

    Returns
    -------
    rows : int array of shape (m,), indices into the control rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.generative._flow import draw_same_batch_controls
    >>> order, starts, counts = np.array([0, 2, 1]), np.array([0, 2]), np.array([2, 1])
    >>> draw_same_batch_controls(np.random.default_rng(0), np.array([1, 1]), order, starts,
    ...                          counts).tolist()
    [1, 1]
    """
    counts = batch_counts[treated_batch_codes]
    offsets = rng.integers(0, counts)
    return control_order[batch_starts[treated_batch_codes] + offsets]


def frechet_distance(X, Y):
    """Fréchet distance between Gaussians fitted to the rows of ``X`` and ``Y``.

    ``||m_X - m_Y||^2 + tr(S_X + S_Y - 2 (S_X S_Y)^(1/2))``, the formula of FID, on the raw
    (flattened) features.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.generative._flow import frechet_distance
    >>> rng = np.random.default_rng(0)
    >>> round(frechet_distance(rng.normal(size=(20000, 2)), rng.normal(size=(20000, 2)) + 3))
    18
    """
    from scipy import linalg

    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    Y = np.asarray(Y, dtype=np.float64).reshape(len(Y), -1)
    mx, my = X.mean(axis=0), Y.mean(axis=0)
    sx = np.atleast_2d(np.cov(X, rowvar=False))
    sy = np.atleast_2d(np.cov(Y, rowvar=False))
    covmean = linalg.sqrtm(sx @ sy)
    if not np.all(np.isfinite(covmean)):
        eps = 1e-6 * np.eye(sx.shape[0])
        covmean = linalg.sqrtm((sx + eps) @ (sy + eps))
    covmean = np.real(covmean)
    value = float(np.sum((mx - my) ** 2) + np.trace(sx) + np.trace(sy) - 2 * np.trace(covmean))
    return max(value, 0.0)
