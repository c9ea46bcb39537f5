"""AdaptiveContextCodec: the classical baseline, lossless and honest about its rate."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_icml.compression import AdaptiveContextCodec
from sklearn_icml.datasets import make_lidar_sweep

from ._sweeps import grid_points, markov_sweep


@pytest.fixture(scope="module")
def sweep():
    return make_lidar_sweep(random_state=5, n_lasers=8, n_azimuth=256)[:2]


def test_round_trip_and_rate_match(sweep):
    points, r = sweep
    codec = AdaptiveContextCodec(n_lasers=8, n_azimuth=256).fit([sweep])
    blob = codec.encode((points, r))
    out = codec.decode(blob, points)
    assert out.dtype == np.uint8 and np.array_equal(out, r)
    bpp = codec.bits_per_point([sweep])
    assert 8 * len(blob) <= 1.005 * bpp * r.size + 8 * 64
    assert 8 * len(blob) >= bpp * r.size  # the ideal code length is a lower bound here


def test_scan_order_beats_random_order_on_a_markov_chain():
    points, r = markov_sweep(0, n_lasers=4, n_azimuth=256)
    scan = AdaptiveContextCodec(n_lasers=4, n_azimuth=256).fit([(points, r)])
    rand = AdaptiveContextCodec(n_lasers=4, n_azimuth=256, serialization="random").fit(
        [(points, r)]
    )
    # order-1 tables learn the successor only after seeing each value once per context
    assert scan.bits_per_point([(points, r)]) < rand.bits_per_point([(points, r)]) - 1.0
    for codec in (scan, rand):
        assert np.array_equal(codec.decode(codec.encode((points, r)), points), r)


def test_edge_cases_round_trip():
    codec = AdaptiveContextCodec(n_lasers=4, n_azimuth=8, drop_origin=True).fit(
        [(grid_points([0, 3], [0, 7], 5.0, n_lasers=4, n_azimuth=8), np.array([1, 2]))]
    )
    one = grid_points([2], [3], 9.0, n_lasers=4, n_azimuth=8)
    dup = np.vstack([one, one, one])
    origin = np.vstack([one, np.zeros((2, 3))])
    for points, r in [
        (one, np.array([255])),
        (dup, np.array([0, 255, 3])),
        (origin, np.array([4, 200, 17])),
        (np.zeros((1, 3)), np.array([9])),
    ]:
        out = codec.decode(codec.encode((points, r)), points)
        assert np.array_equal(out, r)


def test_manners(sweep):
    codec = AdaptiveContextCodec(increment=8)
    assert clone(codec).get_params() == codec.get_params()
    assert "increment=8" in repr(codec)
    with pytest.raises(NotFittedError):  # the elevation range is learned in fit
        AdaptiveContextCodec(elevation_range="auto").encode(sweep)
    with pytest.raises(ValueError, match="increment"):
        AdaptiveContextCodec(increment=0).fit([sweep])
    fitted = AdaptiveContextCodec(n_lasers=8, n_azimuth=256).fit([sweep])
    other = AdaptiveContextCodec(n_lasers=8, n_azimuth=256, increment=8).fit([sweep])
    blob = fitted.encode(sweep)
    with pytest.raises(ValueError, match="fingerprint"):
        other.decode(blob, sweep[0])
    # with a given elevation range there is nothing to learn: no fit needed, same bytes
    unfitted = AdaptiveContextCodec(n_lasers=8, n_azimuth=256)
    assert unfitted.encode(sweep) == blob
    assert np.array_equal(unfitted.decode(blob, sweep[0]), sweep[1])
    assert unfitted.bits_per_point([sweep]) == fitted.bits_per_point([sweep])
    assert not hasattr(unfitted, "serializer_")  # coding does not fit the codec itself
