"""Renamed SerLiC names: the old spelling warns (FutureWarning) and gives the same result."""

import pytest

from sklearn_icml.datasets import make_lidar_sweep

torch = pytest.importorskip("torch")
pytest.importorskip("constriction")
from sklearn_icml.compression import SerLiCCodec  # noqa: E402

GRID = {"n_lasers": 8, "n_azimuth": 64, "window": 32, "sequence_model": "gru"}


def test_lr_is_the_deprecated_name_of_learning_rate():
    sweeps = [make_lidar_sweep(s, n_lasers=8, n_azimuth=64)[:2] for s in range(2)]
    common = {**GRID, "max_epochs": 1, "batch_size": 16, "random_state": 0}
    new = SerLiCCodec(learning_rate=1e-2, **common).fit(sweeps)
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        old = SerLiCCodec(lr=1e-2, **common).fit(sweeps)
    assert old.fingerprint_ == new.fingerprint_


def test_paper_light_is_deprecated_for_the_explicit_sizes():
    with pytest.warns(FutureWarning, match="d_model=64, n_layers=2, d_state=16, d_emb=32"):
        old = SerLiCCodec.paper_light(random_state=0, d_state=8)
    new = SerLiCCodec(d_model=64, n_layers=2, d_state=8, d_emb=32, random_state=0)
    assert old.get_params() == new.get_params()
