"""Generators of the MAS-GPT and SerLiC data: keyword-only parameters after the first."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_arithmetic_queries, make_lidar_sweep


def test_make_arithmetic_queries_random_state_by_position_warns():
    expected = make_arithmetic_queries(3, random_state=0)
    with pytest.warns(FutureWarning, match=r"pass random_state as keyword arguments"):
        got = make_arithmetic_queries(3, 0)
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])


def test_make_lidar_sweep_random_state_by_position_warns():
    expected = make_lidar_sweep(random_state=4, n_lasers=4, n_azimuth=32)
    with pytest.warns(FutureWarning, match=r"pass random_state as keyword arguments"):
        got = make_lidar_sweep(4, n_lasers=4, n_azimuth=32)
    for a, b in zip(got, expected, strict=True):
        if isinstance(a, tuple):
            for u, v in zip(a, b, strict=True):
                np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_array_equal(a, b)
