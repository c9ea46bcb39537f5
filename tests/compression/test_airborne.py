"""The airborne serialisation and the codecs with scanner="airborne".

The data are a slice of laspy's autzen_trim sample when laspy's source distribution is
installed (``make venv``), else a tiny flight written by laspy in the test: no network.
"""

import numpy as np
import pytest

from sklearn_icml.compression import AdaptiveContextCodec, AirborneScanSerializer

from ..datasets._las import flight_data

pytest.importorskip("laspy")


@pytest.fixture(scope="module")
def flight():
    points, intensity, _ = flight_data()
    return points, intensity


def _pulses(rows):
    return np.array(rows, dtype=float)


def test_order_is_gps_time_then_return_number_and_stable():
    pulses = _pulses([
        [0, 0, 0, 2.0, 0, 0, 1, 1],
        [0, 0, 1, 1.0, 0, 0, 2, 2],
        [0, 0, 2, 1.0, 0, 0, 1, 2],
        [0, 0, 3, 2.0, 0, 0, 1, 1],  # same key as row 0: keeps the input order
    ])
    np.testing.assert_array_equal(AirborneScanSerializer().get_order(pulses), [2, 1, 0, 3])


def test_transform_gives_beam_class_angle_bin_and_step_distance():
    pulses = _pulses([
        [0, 0, 0, 1.0, -90, 1, 1, 1],
        [3, 4, 0, 2.0, 89.99, 0, 3, 4],
        [3, 4, 12, 3.0, 0, 0, 5, 6],  # returns beyond four merge into the last class
    ])
    Xt = AirborneScanSerializer(n_angle_bins=10).transform(pulses)
    np.testing.assert_array_equal(Xt[:, 0], [1, 8 * 3 + 2 * 2 + 0, 8 * 3 + 2 * 3 + 0])
    np.testing.assert_array_equal(Xt[:, 1], [0, 9, 5])
    np.testing.assert_allclose(Xt[:, 2], [0.0, 5.0, 12.0])
    np.testing.assert_array_equal(Xt[:, 3], Xt[:, 0] * 10 + Xt[:, 1])
    assert Xt[:, 0].max() < AirborneScanSerializer().fit(pulses).n_classes_


def test_order_file_refuses_unsorted_points():
    pulses = _pulses([[0, 0, 0, 2.0, 0, 0, 1, 1], [0, 0, 0, 1.0, 0, 0, 1, 1]])
    with pytest.raises(ValueError, match="X is not in acquisition order.*order='gps_time'"):
        AirborneScanSerializer(order="file").get_order(pulses)
    np.testing.assert_array_equal(
        AirborneScanSerializer(order="file").get_order(pulses[::-1]), [0, 1]
    )


@pytest.mark.parametrize(
    "column, value, match",
    [(4, 95.0, "scan_angle"), (5, 2.0, "scan_direction"), (6, 0.0, "return_number"),
     (7, 1.5, "number_of_returns"), (3, np.nan, "NaN")],
)
def test_bad_pulses_name_the_column(column, value, match):
    pulses = _pulses([[0, 0, 0, 1.0, 0, 0, 1, 1]] * 3)
    pulses[1, column] = value
    with pytest.raises(ValueError, match=match):
        AirborneScanSerializer().transform(pulses)


def test_points_of_a_spinning_sensor_are_refused_with_the_shape():
    with pytest.raises(ValueError, match=r"shape \(n_points, 8\)"):
        AirborneScanSerializer().fit(np.ones((4, 3)))
    codec = AdaptiveContextCodec(scanner="airborne")
    with pytest.raises(ValueError, match=r"shape \(n_points, 8\)"):
        codec.fit([(np.ones((4, 3)), np.zeros(4, dtype=np.uint8))])


def test_adaptive_codec_round_trip_in_any_row_order(flight):
    points, r = flight
    codec = AdaptiveContextCodec(scanner="airborne", n_azimuth=180)
    blob = codec.encode((points, r))
    np.testing.assert_array_equal(codec.decode(blob, points), r)
    # the order comes from GPS time, so a shuffled file codes to the same size
    perm = np.random.default_rng(0).permutation(points.shape[0])
    blob2 = codec.encode((points[perm], r[perm]))
    np.testing.assert_array_equal(codec.decode(blob2, points[perm]), r[perm])
    assert len(blob2) == len(blob)
    # and the acquisition order codes better than a random one
    random = AdaptiveContextCodec(scanner="airborne", n_azimuth=180, serialization="random")
    assert codec.bits_per_point([(points, r)]) < random.bits_per_point([(points, r)])


def test_adaptive_codec_refuses_geometry_of_another_length(flight):
    points, r = flight
    codec = AdaptiveContextCodec(scanner="airborne", n_azimuth=180)
    blob = codec.encode((points, r))
    with pytest.raises(ValueError, match="geometry"):
        codec.decode(blob, points[:-1])


def test_serlic_airborne_round_trip_and_rate(flight):
    pytest.importorskip("torch")
    pytest.importorskip("constriction")
    from sklearn_icml.compression import SerLiCCodec

    points, r = flight
    half = points.shape[0] // 2
    codec = SerLiCCodec(
        scanner="airborne", n_azimuth=180, window=64, sequence_model="gru", d_model=16,
        n_layers=1, max_epochs=3, batch_size=8, learning_rate=3e-3, rho_scale=10.0,
        random_state=0,
    ).fit([(points[:half], r[:half])])
    assert codec.serializer_.n_classes_ == 32
    test = (points[half:], r[half:])
    blob = codec.encode(test)
    np.testing.assert_array_equal(codec.decode(blob, test[0]), test[1])
    bpp = codec.bits_per_point([test])
    assert 8 * len(blob) <= 1.005 * bpp * r[half:].shape[0] + 8 * 64
    assert bpp < 8.0  # learned something from the first half of the flight
    again = SerLiCCodec(**codec.get_params()).fit([(points[:half], r[:half])])
    assert again.fingerprint_ == codec.fingerprint_  # same seed, same model
    with pytest.raises(ValueError, match=r"shape \(n_points, 8\)"):
        codec.decode(blob, test[0][:, :3])
