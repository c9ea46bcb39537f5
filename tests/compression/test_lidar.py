"""make_lidar_sweep: the generated sweeps of the SerLiC benchmark."""

import lzma

import numpy as np
import pytest

from sklearn_icml.datasets import make_lidar_sweep


def _entropy(symbols):
    counts = np.bincount(symbols, minlength=256)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


@pytest.mark.slow
def test_reproduces_the_calibration_table():
    # the generator's calibration: means over the test seeds 1000..1004
    rows = []
    for seed in range(1000, 1005):
        points, r, oracle, _ = make_lidar_sweep(random_state=seed, shuffle=False)
        diffs = (r.astype(np.int64) - np.r_[0, r[:-1]]) % 256
        lz = lzma.compress(r.tobytes(), preset=9 | lzma.PRESET_EXTREME)
        rows.append(
            [r.shape[0], oracle.mean(), _entropy(r), _entropy(diffs), 8 * len(lz) / r.size]
        )
    n, oracle, order0, diff, lz = np.mean(rows, axis=0)
    assert 31086 <= min(row[0] for row in rows) and max(row[0] for row in rows) <= 31153
    assert n == pytest.approx(31122, abs=1)
    assert oracle == pytest.approx(3.964, abs=0.01)
    assert order0 == pytest.approx(5.920, abs=0.01)
    assert diff == pytest.approx(4.401, abs=0.01)
    assert lz == pytest.approx(4.554, abs=0.01)


def test_shuffle_is_a_permutation_of_the_scan_order():
    a = make_lidar_sweep(random_state=3, n_lasers=8, n_azimuth=64, shuffle=False)
    b = make_lidar_sweep(random_state=3, n_lasers=8, n_azimuth=64, shuffle=True)
    perm = np.random.default_rng(3 + 10**6).permutation(a[0].shape[0])
    assert np.array_equal(b[0], a[0][perm])
    assert np.array_equal(b[1], a[1][perm])
    assert np.array_equal(b[2], a[2][perm])
    # scan order: laser-major, then azimuth, strictly increasing cells
    v, u = a[3]
    assert np.all(np.diff(v * 64 + u) > 0)


def test_same_seed_same_sweep_and_valid_values():
    a = make_lidar_sweep(random_state=11, n_lasers=8, n_azimuth=128)
    b = make_lidar_sweep(random_state=11, n_lasers=8, n_azimuth=128)
    c = make_lidar_sweep(random_state=12, n_lasers=8, n_azimuth=128)
    for x, y in zip(a[:3], b[:3]):
        assert np.array_equal(x, y)
    assert a[0].shape != c[0].shape or not np.array_equal(a[0], c[0])
    points, r, oracle, (v, u) = a
    assert r.dtype == np.uint8 and points.shape == (r.shape[0], 3)
    assert np.all(oracle > 0) and np.all(np.isfinite(oracle))
    rho = np.linalg.norm(points, axis=1)
    assert np.all(rho > 0) and np.all(rho < 100)
    # the points lie on their rays: elevation of laser v, centre of azimuth bin u
    elev = np.deg2rad(np.linspace(-25, 3, 8))[v]
    assert np.allclose(np.arcsin(points[:, 2] / rho), elev)
    az = (u + 0.5) * 2 * np.pi / 128 - np.pi
    assert np.allclose(np.arctan2(points[:, 1], points[:, 0]), az)


def test_no_dropout_fills_the_grid_and_alpha_zero_is_independent():
    points, r, oracle, (v, u) = make_lidar_sweep(random_state=0, n_lasers=4, n_azimuth=32,
                                                 dropout=0.0)
    assert points.shape[0] == 4 * 32
    # the oracle mean is near the entropy of the discretised Gaussian noise
    _, _, oracle_ar, _ = make_lidar_sweep(random_state=0, n_lasers=4, n_azimuth=256, alpha=0.0)
    assert 3.0 < oracle_ar.mean() < 6.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"random_state": 1.5}, "random_state"),
        ({"random_state": -1}, "random_state"),
        ({"n_lasers": 0}, "n_lasers"),
        ({"n_azimuth": 0}, "n_azimuth"),
        ({"elevation_range": (3, -25)}, "elevation_range"),
        ({"elevation_range": "wide"}, "elevation_range"),
        ({"dropout": 1.0}, "dropout"),
        ({"alpha": 1.5}, "alpha"),
        ({"noise_base": 0.0}, "noise_base"),
        ({"sensor_height": -1.0}, "sensor_height"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make_lidar_sweep(**{"n_lasers": 4, "n_azimuth": 16, **kwargs})
