"""Small hand-made sweeps for the compression tests."""

import numpy as np

ELEVATION = (-25.0, 3.0)


def grid_points(v, u, rho, *, n_lasers, n_azimuth, elevation=ELEVATION):
    """Points on the rays of lasers ``v`` and azimuth bins ``u`` (bin centres) at ``rho``."""
    v, u, rho = np.broadcast_arrays(np.asarray(v), np.asarray(u), np.asarray(rho, float))
    elev = np.deg2rad(np.linspace(*elevation, n_lasers))[v]
    az = (u + 0.5) * 2 * np.pi / n_azimuth - np.pi
    return np.stack(
        [rho * np.cos(elev) * np.cos(az), rho * np.cos(elev) * np.sin(az), rho * np.sin(elev)],
        axis=-1,
    ).reshape(-1, 3)


def full_grid_sweep(rng, n_lasers, n_azimuth):
    """Every (laser, azimuth) ray once, random distances, shuffled; returns points, v, u."""
    v, u = np.meshgrid(np.arange(n_lasers), np.arange(n_azimuth), indexing="ij")
    v, u = v.ravel(), u.ravel()
    rho = rng.uniform(5.0, 50.0, v.shape[0])
    perm = rng.permutation(v.shape[0])
    v, u, rho = v[perm], u[perm], rho[perm]
    return grid_points(v, u, rho, n_lasers=n_lasers, n_azimuth=n_azimuth), v, u


def markov_sweep(seed, n_lasers=4, n_azimuth=256):
    """Reflectance that grows by exactly 1 (mod 256) along each laser, from a random start.

    The start of each laser is uniform and new in every sweep, so the laser and azimuth
    indices say nothing about a value; only the previous value in scan order does.
    """
    rng = np.random.default_rng(seed)
    points, v, u = full_grid_sweep(rng, n_lasers, n_azimuth)
    start = rng.integers(0, 256, n_lasers)
    refl = ((start[v] + u) % 256).astype(np.uint8)
    return points, refl
