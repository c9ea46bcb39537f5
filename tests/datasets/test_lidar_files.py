"""read_las and load_lidar_sample: LAS / LAZ files as pulse arrays and 8-bit intensity.

The files are written by laspy in the test (``_las.tiny_flight``); the test of the real
samples reads laspy's source distribution, which ``make venv`` installs (no download).
"""

import io

import numpy as np
import pytest

from sklearn_icml.datasets import load_lidar_sample, read_las

from ._las import SDIST, fake_sdist, tiny_flight

pytest.importorskip("laspy")


def test_read_las_gives_the_pulse_columns_in_file_order():
    data = read_las(io.BytesIO(tiny_flight()))
    assert data.feature_names == [
        "x", "y", "z", "gps_time", "scan_angle", "scan_direction", "return_number",
        "number_of_returns",
    ]
    assert data.points.shape == (data.intensity.shape[0], 8)
    assert data.intensity.dtype == np.uint8 and data.intensity_divisor == 1
    assert np.all(np.diff(data.points[:, 3]) >= 0)  # written in time order
    assert set(np.unique(data.points[:, 5])) == {0.0, 1.0}
    assert data.points[:, 4].min() == -15 and data.points[:, 4].max() == 15
    assert data.point_format == 1


@pytest.mark.parametrize("scale", [256, 257])
def test_8bit_intensity_is_an_exact_division(scale):
    raw = read_las(io.BytesIO(tiny_flight(scale=scale)), intensity="raw")
    eight = read_las(io.BytesIO(tiny_flight(scale=scale)))
    assert raw.intensity.dtype == np.uint16 and raw.intensity_divisor == 1
    assert eight.intensity_divisor == scale
    np.testing.assert_array_equal(eight.intensity.astype(np.int64) * scale, raw.intensity)


def test_intensity_that_is_not_8bit_is_refused_with_the_fix():
    import laspy

    las = laspy.read(io.BytesIO(tiny_flight()))
    las.intensity = np.asarray(las.intensity) + 250  # up to ~505, divisor 1
    buf = io.BytesIO()
    las.write(buf)
    with pytest.raises(ValueError, match="not 8-bit.*intensity='raw'"):
        read_las(io.BytesIO(buf.getvalue()))
    assert read_las(io.BytesIO(buf.getvalue()), intensity="raw").intensity.max() > 255


def test_a_file_without_gps_time_or_intensity_is_refused():
    with pytest.raises(ValueError, match="no GPS time.*point format 0"):
        read_las(io.BytesIO(tiny_flight(point_format=0)))
    import laspy

    las = laspy.read(io.BytesIO(tiny_flight()))
    las.intensity[:] = 0
    buf = io.BytesIO()
    las.write(buf)
    with pytest.raises(ValueError, match="has no intensity"):
        read_las(io.BytesIO(buf.getvalue()))


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="intensity"):
        read_las(io.BytesIO(tiny_flight()), intensity="16bit")
    with pytest.raises(ValueError, match="name"):
        load_lidar_sample("kitti")


def test_load_lidar_sample_reads_the_member_from_the_tarball(tmp_path):
    fake_sdist(tmp_path, "plane.laz")
    data = load_lidar_sample("plane", data_home=tmp_path)
    expected = read_las(io.BytesIO(tiny_flight()))
    np.testing.assert_array_equal(data.points, expected.points)
    np.testing.assert_array_equal(data.intensity, expected.intensity)
    assert data.filename == "laspy-2.7.0/tests/data/plane.laz"
    assert list(tmp_path.iterdir()) == [tmp_path / "laspy-2.7.0.tar.gz"]  # nothing extracted


def test_missing_sdist_says_where_it_is_expected(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_home"):
        load_lidar_sample(data_home=tmp_path)


def test_a_sample_that_is_not_8bit_names_the_sample(tmp_path):
    import laspy

    las = laspy.read(io.BytesIO(tiny_flight()))
    las.intensity = np.asarray(las.intensity) + 300
    buf = io.BytesIO()
    las.write(buf)
    fake_sdist(tmp_path, "append-bug.laz", buf.getvalue())
    with pytest.raises(ValueError, match="'append-bug' is not 8-bit"):
        load_lidar_sample("append-bug", data_home=tmp_path)


@pytest.mark.skipif(not SDIST.is_file(), reason="laspy's sdist is installed by make venv")
def test_real_samples_have_the_documented_shapes():
    autzen = load_lidar_sample("autzen_trim")
    assert autzen.points.shape == (110000, 8) and autzen.intensity_divisor == 1
    assert np.all(np.diff(autzen.points[:, 3]) >= 0)  # stored in GPS-time order
    assert load_lidar_sample("plane").intensity_divisor == 256
    assert load_lidar_sample("vegetation_1_3").intensity_divisor == 257
    with pytest.raises(ValueError, match="not 8-bit"):
        load_lidar_sample("append-bug")
