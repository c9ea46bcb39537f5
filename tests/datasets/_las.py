"""Tiny airborne LAS files written by laspy in the tests (no network, no sample files).

The tests use laspy 2.7.0's real sample files when its source distribution is installed
(``make venv`` puts it in ``<sys.prefix>/share/sklearn_icml``); without it they run on a
file made here: a few scan lines of a zig-zag scanner over a plane with a roof, GPS time
increasing, up to two returns per pulse and an intensity that depends on the surface.
"""

import io
import sys
import tarfile
from pathlib import Path

import numpy as np

SDIST = Path(sys.prefix) / "share" / "sklearn_icml" / "laspy-2.7.0.tar.gz"


def tiny_flight(n_lines=16, per_line=50, *, seed=0, scale=1, point_format=1):
    """A LAS file (bytes) of ``n_lines`` scan lines; intensity values times ``scale``."""
    import laspy

    rng = np.random.default_rng(seed)
    rows = []
    t = 100.0
    for line in range(n_lines):
        direction = line % 2
        angles = np.linspace(-15, 15, per_line)[:: 1 if direction else -1]
        for a in angles:
            x, y = 0.5 * line, 3.0 * a / 15
            roof = abs(y) < 1.0 and 2 < line < 8
            z = 10.0 if roof else 0.0
            base = 180 if roof else 60
            returns = 2 if (not roof and rng.random() < 0.2) else 1
            for k in range(1, returns + 1):
                zk = z + (5.0 if (returns == 2 and k == 1) else 0.0)
                level = 30 if returns == 2 and k == 1 else base
                value = int(np.clip(level + rng.normal(0, 1.5), 1, 255))
                rows.append((x, y, zk, t, a, direction, k, returns, value))
            t += 1e-4
    arr = np.array(rows)
    las = laspy.LasData(laspy.LasHeader(point_format=point_format, version="1.2"))
    las.header.scales = np.array([0.01, 0.01, 0.01])
    las.x, las.y, las.z = arr[:, 0], arr[:, 1], arr[:, 2]
    if "gps_time" in las.point_format.dimension_names:
        las.gps_time = arr[:, 3]
    las.scan_angle_rank = np.rint(arr[:, 4]).astype(np.int8)
    las.scan_direction_flag = arr[:, 5].astype(np.uint8)
    las.return_number = arr[:, 6].astype(np.uint8)
    las.number_of_returns = arr[:, 7].astype(np.uint8)
    las.intensity = (arr[:, 8] * scale).astype(np.uint16)
    buf = io.BytesIO()
    las.write(buf)
    return buf.getvalue()


def fake_sdist(folder, member="autzen_trim.laz", payload=None):
    """A tarball named like laspy's sdist holding ``payload`` at the sample's path."""
    payload = tiny_flight() if payload is None else payload
    path = Path(folder) / "laspy-2.7.0.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(f"laspy-2.7.0/tests/data/{member}")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    return path


def flight_data(max_points=6000):
    """A slice of autzen_trim when laspy's sdist is installed, else the tiny flight."""
    from sklearn_icml.datasets import load_lidar_sample, read_las

    if SDIST.is_file():
        data = load_lidar_sample("autzen_trim")
        return data.points[:max_points], data.intensity[:max_points], "autzen_trim"
    data = read_las(io.BytesIO(tiny_flight()))
    return data.points, data.intensity, "generated"
