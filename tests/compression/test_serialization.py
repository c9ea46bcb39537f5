"""ScanOrderSerializer and window building."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from sklearn_icml.compression import ScanOrderSerializer
from sklearn_icml.compression._serialization import (
    azimuth_indices,
    build_windows,
    laser_indices,
)
from sklearn_icml.datasets import make_lidar_sweep

from ._sweeps import grid_points


def test_recovers_the_scan_order_of_a_shuffled_sweep():
    # the scan order is recovered at the defaults: 32 lasers, 1024 azimuth bins, (-25, 3) degrees
    points, r, _, (v, u) = make_lidar_sweep(random_state=1000, shuffle=True)
    scan_points, scan_r, _, (scan_v, scan_u) = make_lidar_sweep(random_state=1000, shuffle=False)
    order = ScanOrderSerializer(
        n_lasers=32, n_azimuth=1024, elevation_range=(-25, 3)
    ).get_order(points)
    assert order.dtype == np.int64
    assert np.array_equal(points[order], scan_points)
    assert np.array_equal(r[order], scan_r)
    Xt = ScanOrderSerializer().fit(points).transform(points)
    assert np.array_equal(Xt[:, 0], v) and np.array_equal(Xt[:, 1], u)
    assert np.allclose(Xt[:, 2], np.linalg.norm(points, axis=1))
    assert np.array_equal(Xt[:, 3], v * 1024 + u)


def test_azimuth_wrap_goes_to_the_last_bin():
    phi = np.array([-np.pi, -np.pi + 1e-12, 0.0, np.pi - 1e-12, np.pi])
    assert azimuth_indices(phi, 8).tolist() == [0, 0, 4, 7, 7]


def test_uniform_quantisation_clips_and_rounds():
    theta = np.deg2rad(np.array([-40.0, -25.0, -24.0, -11.0, 3.0, 10.0]))
    # 3 lasers at -25, -11, 3 degrees
    assert laser_indices(theta, 3, (-25.0, 3.0)).tolist() == [0, 0, 0, 1, 2, 2]
    assert laser_indices(theta, 1, (-25.0, 3.0)).tolist() == [0] * 6


def test_elevation_table_picks_the_nearest_beam():
    table = [-20.0, -5.0, -4.0, 2.0]
    pts = grid_points([0, 1, 2, 3], [0, 1, 2, 3], 10.0, n_lasers=4, n_azimuth=4)
    # rebuild the points at the table's (uneven) elevations
    elev = np.deg2rad(np.array(table) + np.array([0.4, -0.3, 0.2, -0.6]))
    az = np.arctan2(pts[:, 1], pts[:, 0])
    pts = np.stack([np.cos(elev) * np.cos(az), np.cos(elev) * np.sin(az), np.sin(elev)], 1)
    ser = ScanOrderSerializer(n_lasers=4, n_azimuth=4, elevation_table=table)
    assert ser.transform(pts)[:, 0].tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="elevation_table"):
        ScanOrderSerializer(n_lasers=3, elevation_table=table).transform(pts)
    with pytest.raises(ValueError, match="ascending"):
        ScanOrderSerializer(n_lasers=4, elevation_table=table[::-1]).transform(pts)


def test_auto_range_comes_from_the_data_and_needs_fit():
    pts = grid_points([0, 3, 1], [0, 5, 9], 20.0, n_lasers=4, n_azimuth=16,
                      elevation=(-10.0, 5.0))
    ser = ScanOrderSerializer(n_lasers=4, n_azimuth=16, elevation_range="auto")
    with pytest.raises(NotFittedError):
        ser.get_order(pts)
    ser.fit(pts)
    assert ser.elevation_range_ == pytest.approx((-10.0, 5.0))
    assert ser.transform(pts)[:, 0].tolist() == [0, 3, 1]
    with pytest.raises(ValueError, match="two distinct elevations"):
        ScanOrderSerializer(n_lasers=4, elevation_range="auto").fit(pts[:1])


def test_ring_overrides_the_laser_and_ties_keep_a_fixed_order():
    pts = grid_points([1, 1, 1, 0], [2, 2, 2, 2], [30.0, 10.0, 10.0, 50.0], n_lasers=2,
                      n_azimuth=4)
    ser = ScanOrderSerializer(n_lasers=2, n_azimuth=4)
    # same cell: by distance, then (stable) input order for the duplicate distances
    assert ser.get_order(pts).tolist() == [3, 1, 2, 0]
    assert ScanOrderSerializer(n_lasers=2, n_azimuth=4, tie_break="input").get_order(
        pts
    ).tolist() == [3, 0, 1, 2]
    ring = np.array([0, 0, 1, 1])
    assert ser.get_order(pts, ring=ring).tolist() == [1, 0, 2, 3]
    with pytest.raises(ValueError, match="ring"):
        ser.get_order(pts, ring=np.array([0, 0, 2, 1]))
    with pytest.raises(ValueError, match="ring"):
        ser.get_order(pts, ring=np.array([0.0, 0, 1, 1]))


def test_extra_columns_are_ignored_and_input_is_not_modified():
    pts = grid_points([0, 1], [0, 3], 12.0, n_lasers=2, n_azimuth=4)
    with_intensity = np.column_stack([pts, [0.5, 0.7]])
    before = with_intensity.copy()
    ser = ScanOrderSerializer(n_lasers=2, n_azimuth=4).fit(with_intensity)
    assert ser.n_features_in_ == 4
    assert np.array_equal(ser.transform(with_intensity), ser.transform(np.c_[pts, [9, 9]]))
    assert np.array_equal(with_intensity, before)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_lasers": 0}, "n_lasers"),
        ({"n_azimuth": 0}, "n_azimuth"),
        ({"elevation_range": (3.0, -25.0)}, "elevation_range"),
        ({"elevation_range": (5.0, 5.0)}, "elevation_range"),
        ({"elevation_range": "max"}, "elevation_range"),
        ({"tie_break": "azimuth"}, "tie_break"),
    ],
)
def test_bad_parameters_raise_value_error(params, match):
    pts = grid_points([0, 1], [0, 3], 12.0, n_lasers=2, n_azimuth=4)
    with pytest.raises(ValueError, match=match):
        ScanOrderSerializer(**params).fit(pts)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.zeros((4, 2)), "3"),
        (np.empty((0, 3)), "sample"),
        (np.array([[1.0, 2.0, np.nan]]), "NaN|infinity"),
    ],
)
def test_bad_points_raise_value_error(X, match):
    with pytest.raises(ValueError, match=match):
        ScanOrderSerializer().fit(X)


def test_windows_never_span_two_lasers_and_pad_the_end():
    # laser 0: 5 points, laser 2: 3 points, laser 1: none
    v = np.array([2, 0, 0, 2, 0, 0, 2, 0])
    u = np.arange(8)
    order = np.lexsort((u, v))
    w = build_windows(order, v, v, u, np.ones(8), window=2)
    # laser 0 -> 3 windows (2, 2, 1), laser 2 -> 2 windows (2, 1)
    assert w.index.shape == (5, 2)
    assert w.mask.sum(axis=1).tolist() == [2, 2, 1, 2, 1]
    for row, m in zip(w.index, w.mask):
        assert len(set(v[row[m]])) == 1  # one laser per window
    assert sorted(w.index[w.mask].tolist()) == list(range(8))  # every point once
    assert np.all(w.index[~w.mask] == -1)
