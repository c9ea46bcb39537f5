"""SerLiCCodec: lossless coding, rate, reproducibility, and bad inputs."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_icml.datasets import make_lidar_sweep

from ._sweeps import full_grid_sweep, grid_points, markov_sweep

torch = pytest.importorskip("torch")
pytest.importorskip("constriction")
from sklearn_icml.compression import SerLiCCodec, _serlic  # noqa: E402

L, U, W = 8, 128, 64
SMALL = {"n_lasers": L, "n_azimuth": U, "window": W}


def _sweep(seed):
    return make_lidar_sweep(random_state=seed, n_lasers=L, n_azimuth=U)


@pytest.fixture(scope="module")
def train_sweeps():
    return [_sweep(s)[:2] for s in range(3)]


@pytest.fixture(scope="module")
def test_sweep():
    return _sweep(1000)


@pytest.fixture(scope="module")
def trained(train_sweeps):
    """A Mamba codec trained for a few dozen steps: far from uniform, still fast."""
    codec = SerLiCCodec(**SMALL, max_epochs=6, batch_size=8, learning_rate=2e-2, random_state=0)
    return codec.fit(train_sweeps)


@pytest.fixture(scope="module")
def untrained():
    points, r, _, _ = _sweep(0)
    return SerLiCCodec(**SMALL, max_epochs=0, sequence_model="gru", random_state=1).fit(
        [(points, r)]
    )


def _coded_bpp(codec, points, r, **kwargs):
    return 8 * len(codec.encode((points, r), **kwargs)) / r.size


# lossless round trip


def _edge_cases():
    rng = np.random.default_rng(0)
    cases = {}
    cases["one point"] = (grid_points([3], [5], 12.0, n_lasers=L, n_azimuth=U), [200])
    n = W - 5  # fewer points than one window
    pts = grid_points(np.full(n, 2), np.arange(n), rng.uniform(5, 40, n), n_lasers=L,
                      n_azimuth=U)
    cases["N < W"] = (pts, rng.integers(0, 256, n))
    # two lasers with exactly W and 2W points: no padding at all
    v = np.r_[np.zeros(W, int), np.full(2 * W, 5)]
    u = np.r_[np.arange(W), np.arange(2 * W) % U]
    pts = grid_points(v, u, rng.uniform(5, 40, 3 * W), n_lasers=L, n_azimuth=U)
    cases["N multiple of W"] = (pts, rng.integers(0, 256, 3 * W))
    # lasers 1, 4 and 6 without points
    pts, v, u = full_grid_sweep(rng, L, U)
    keep = ~np.isin(v, [1, 4, 6])
    cases["lasers without points"] = (pts[keep], rng.integers(0, 256, int(keep.sum())))
    # duplicate points (same cell, same distance) with different values
    base = grid_points([1, 1, 7], [9, 9, 100], [8.0, 8.0, 30.0], n_lasers=L, n_azimuth=U)
    pts = np.vstack([base, base, base[:1]])
    cases["duplicates"] = (pts, [0, 255, 17, 3, 3, 128, 254])
    cases["all 0 and 255"] = (pts, [0, 255, 0, 255, 0, 255, 0])
    return cases


EDGE_CASES = _edge_cases()


@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_round_trip_is_bit_exact_on_edge_cases(trained, case):
    points, r = EDGE_CASES[case]
    r = np.asarray(r)
    points_before, r_before = points.copy(), r.copy()
    out = trained.decode(trained.encode((points, r)), points)
    assert out.dtype == np.uint8
    assert np.array_equal(out, r)
    # the caller's arrays are untouched
    assert np.array_equal(points, points_before) and np.array_equal(r, r_before)


@pytest.mark.parametrize("window", [1, 7, 1000])
def test_round_trip_at_any_window(trained, test_sweep, window):
    points, r, _, _ = test_sweep
    points, r = points[:300], r[:300]
    blob = trained.encode((points, r), window=window)
    assert np.array_equal(trained.decode(blob, points), r)


def test_round_trip_gru_and_untrained(untrained, test_sweep):
    points, r, _, _ = test_sweep
    assert np.array_equal(untrained.decode(untrained.encode((points, r)), points), r)


def test_decompress_returns_values_in_the_callers_order(trained, test_sweep):
    points, r, _, _ = test_sweep
    perm = np.random.default_rng(4).permutation(r.size)
    blob = trained.encode((points[perm], r[perm]))
    assert np.array_equal(trained.decode(blob, points[perm]), r[perm])


# the rate equals the cross-entropy; no information leak


def _within_bound(coded_bytes, bpp, n):
    return abs(coded_bytes - bpp * n / 8) <= 0.005 * bpp * n / 8 + 64


def test_coded_size_equals_cross_entropy(trained, untrained, test_sweep):
    points, r, _, _ = test_sweep
    for codec in (trained, untrained):
        bpp = codec.bits_per_point([(points, r)])
        assert _within_bound(len(codec.encode((points, r))), bpp, r.size)
    assert 7.9 < untrained.bits_per_point([(points, r)]) < 8.1
    assert trained.bits_per_point([(points, r)]) < 7.0  # it learned something


def test_no_information_leak(trained, test_sweep):
    points, r, oracle, _ = test_sweep
    bpp = trained.bits_per_point([(points, r)])
    assert bpp >= oracle.mean() - 0.03
    assert _coded_bpp(trained, points, r) >= oracle.mean() - 0.03


@pytest.mark.parametrize("sequence_model", ["mamba", "gru"])
def test_pmf_at_t_depends_only_on_earlier_values(sequence_model, trained, untrained):
    codec = trained if sequence_model == "mamba" else untrained
    rng = np.random.default_rng(0)
    pts = grid_points(np.zeros(W, int), np.arange(W), rng.uniform(5, 40, W), n_lasers=L,
                      n_azimuth=U)
    r = rng.integers(0, 256, W)
    r2 = r.copy()
    t = 20
    r2[t] = (r[t] + 100) % 256
    _, p1 = codec._coding_pmfs(pts, r)
    _, p2 = codec._coding_pmfs(pts, r2)
    assert np.array_equal(p1[0, : t + 1], p2[0, : t + 1])  # up to t: blind to r_t
    assert not np.array_equal(p1[0, t + 1], p2[0, t + 1])  # t + 1 sees it
    # the parallel (training/score) path and the step (coding) path agree
    with torch.inference_mode():
        prep = codec._prepare(pts)
        _, v, u, rho, _, r_prev, _ = codec._window_arrays(prep, r, W)
        logits = codec.module_(*(torch.from_numpy(a) for a in (v, u, rho, r_prev)))
    pmf = _serlic._pmf(logits.numpy()[0], codec.prob_floor)
    assert np.allclose(pmf, p1[0], rtol=1e-3, atol=1e-6)


# synthetic sources


def _constant_sweep(seed, value):
    points, _, _, _ = _sweep(seed)
    return points, np.full(points.shape[0], value, dtype=np.uint8)


@pytest.mark.slow
def test_constant_reflectance_costs_almost_nothing():
    codec = SerLiCCodec(**SMALL, max_epochs=4, batch_size=8, learning_rate=5e-2, random_state=0)
    codec.fit([_constant_sweep(s, 77) for s in range(2)])
    points, r = _constant_sweep(1001, 77)
    assert codec.bits_per_point([(points, r)]) < 0.05
    assert np.array_equal(codec.decode(codec.encode((points, r)), points), r)


@pytest.mark.slow
def test_uniform_noise_cannot_be_compressed():
    rng = np.random.default_rng(0)

    def noisy(seed):
        points = _sweep(seed)[0]
        return points, rng.integers(0, 256, points.shape[0])

    codec = SerLiCCodec(**SMALL, max_epochs=2, batch_size=8, learning_rate=1e-2, random_state=0)
    codec.fit([noisy(s) for s in range(2)])
    points, r = noisy(1002)
    assert 7.95 <= codec.bits_per_point([(points, r)]) <= 8.10


@pytest.mark.slow
def test_deterministic_chain_needs_the_scan_order():
    train = [markov_sweep(s) for s in range(8)]
    points, r = markov_sweep(100)
    common = {"n_lasers": 4, "n_azimuth": 256, "window": 256, "batch_size": 8,
              "random_state": 0}
    scan = SerLiCCodec(**common, max_epochs=8, learning_rate=5e-2).fit(train)
    assert scan.bits_per_point([(points, r)]) < 0.1
    assert np.array_equal(scan.decode(scan.encode((points, r)), points), r)
    rand = SerLiCCodec(
        **common, max_epochs=2, learning_rate=1e-2, serialization="random"
    ).fit(train)
    assert rand.bits_per_point([(points, r)]) > 7.5
    assert np.array_equal(rand.decode(rand.encode((points, r)), points), r)


# window independence, fingerprint, reproducibility


def test_windows_are_independent(trained, test_sweep):
    points, r, _, _ = test_sweep
    w, pmfs = trained._coding_pmfs(points, r)
    k = 3
    changed = r.copy()
    rows = w.index[k][w.mask[k]]
    changed[rows] = 255 - changed[rows]
    w2, pmfs2 = trained._coding_pmfs(points, changed)
    assert np.array_equal(w.index, w2.index)
    others = np.arange(w.n_windows) != k
    assert np.array_equal(pmfs[others], pmfs2[others])  # bit-identical words elsewhere
    assert not np.array_equal(pmfs[k], pmfs2[k])
    # the per-point bits of the score path: only that window's change
    prep = trained._prepare(points)
    bits = trained._model_bits(prep, r)
    bits2 = trained._model_bits(prep, changed)
    moved = np.flatnonzero(bits != bits2)
    assert moved.size and set(moved.tolist()) <= set(rows.tolist())


def test_fingerprint_mismatch_raises(trained, train_sweeps, test_sweep):
    points, r, _, _ = test_sweep
    other = SerLiCCodec(**SMALL, max_epochs=0, random_state=5).fit(train_sweeps)
    assert other.fingerprint_ != trained.fingerprint_
    with pytest.raises(ValueError, match="fingerprint"):
        other.decode(trained.encode((points, r)), points)


def test_same_seed_same_weights_and_blobs(train_sweeps, test_sweep):
    points, r, _, _ = test_sweep
    params = {**SMALL, "max_epochs": 1, "batch_size": 16, "n_jobs": 1, "random_state": 3}
    a = SerLiCCodec(**params).fit(train_sweeps)
    b = SerLiCCodec(**params).fit(train_sweeps)
    for (name, ta), tb in zip(a.module_.state_dict().items(), b.module_.state_dict().values()):
        assert torch.equal(ta, tb), name
    assert a.fingerprint_ == b.fingerprint_ and a.train_bpp_ == b.train_bpp_
    assert a.encode((points, r)) == b.encode((points, r))
    # and a pickled codec decodes the other's blob
    c = pickle.loads(pickle.dumps(a))
    assert np.array_equal(c.decode(b.encode((points, r)), points), r)


# mismatch detection


def test_a_pmf_mismatch_raises_instead_of_returning_wrong_values(
    trained, test_sweep, monkeypatch
):
    points, r, _, _ = test_sweep
    blob = trained.encode((points, r))
    real_pmf = _serlic._pmf
    monkeypatch.setattr(_serlic, "_pmf", lambda x, f: np.roll(real_pmf(x, f), 1, axis=1))
    with pytest.raises(ValueError, match="CRC|decoded"):
        trained.decode(blob, points)


def test_corrupted_words_raise(trained, test_sweep):
    points, r, _, _ = test_sweep
    blob = bytearray(trained.encode((points, r)))
    blob[60] ^= 0xFF  # inside the range coder's words
    with pytest.raises(ValueError, match="CRC|decoded"):
        trained.decode(bytes(blob), points)


# bad input


@pytest.mark.parametrize(
    "points, match",
    [
        (np.ones((5, 2)), r"shape \(n_points, 3\)"),
        (np.ones((5, 3, 1)), r"shape \(n_points, 3\)"),
        (np.empty((0, 3)), "at least one point"),
        (np.array([[1.0, 2.0, np.inf]]), "NaN or infinity"),
        (np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]), "origin"),
    ],
)
def test_bad_points_raise(trained, points, match):
    r = np.zeros(len(points), dtype=np.uint8)
    with pytest.raises(ValueError, match=match):
        trained.encode((points, r))
    with pytest.raises(ValueError, match=match):
        trained.decode(b"SLC1", points)  # the geometry is checked before the blob
    if points.ndim == 2 and points.shape[1] == 3:
        with pytest.raises(ValueError, match=match):
            SerLiCCodec(**SMALL).fit([(points, r)])


def _pts(n):
    return grid_points(np.zeros(n, int), np.arange(n), 10.0, n_lasers=L, n_azimuth=U)


@pytest.mark.parametrize(
    "refl, match",
    [
        (np.zeros(4), "one value per point"),
        (np.array([0.5, 0.2, 0.1]), "non-integer floats"),
        (np.array([1.0, 2.0, 300.0]), "0..255"),
        (np.array([300, 1, 2]), "0..255"),  # never 300 -> 44 by uint8 wrap-around
        (np.array([-1, 1, 2]), "0..255"),
        (np.array([1.0, np.nan, 2.0]), "NaN"),
        (np.array(["a", "b", "c"]), "integers"),
        (np.zeros((3, 1)), "1-D"),
    ],
)
def test_bad_reflectance_raises(trained, refl, match):
    with pytest.raises((ValueError, TypeError), match=match):
        trained.encode((_pts(3), refl))


def test_float_reflectance_needs_scale255(train_sweeps):
    points = _pts(4)
    floats = np.array([0.0, 0.2, 0.5, 1.0])
    codec = SerLiCCodec(**SMALL, max_epochs=0, float_reflectance="scale255", random_state=0)
    codec.fit(train_sweeps)
    out = codec.decode(codec.encode((points, floats)), points)
    assert out.tolist() == [0, 51, 128, 255]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        codec.encode((points, np.array([0.0, 0.2, 1.5, 1.0])))


def test_points_at_the_origin_are_stored_raw_with_drop_origin(train_sweeps):
    codec = SerLiCCodec(**SMALL, max_epochs=0, drop_origin=True, random_state=0)
    codec.fit(train_sweeps)
    points = np.vstack([_pts(5), np.zeros((2, 3)), _pts(1)])
    r = np.array([1, 2, 3, 4, 5, 250, 251, 6])
    blob = codec.encode((points, r))
    assert np.array_equal(codec.decode(blob, points), r)
    origin = np.zeros((1, 3))
    assert np.array_equal(codec.decode(codec.encode((origin, [9])), origin), [9])
    # the decoder must be given geometry with the same origin points
    moved = points.copy()
    moved[5] = [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="raw values|CRC"):
        codec.decode(blob, moved)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"window": 0}, "window"),
        ({"n_lasers": 0}, "n_lasers"),
        ({"n_azimuth": 0}, "n_azimuth"),
        ({"elevation_range": (5.0, -5.0)}, "elevation_range"),
        ({"elevation_range": (5.0, 5.0)}, "elevation_range"),
        ({"sequence_model": "lstm"}, "sequence_model"),
        ({"prob_floor": 0.0}, "prob_floor"),
        ({"learning_rate": -1.0}, "learning_rate"),
        ({"float_reflectance": "scale"}, "float_reflectance"),
        ({"device": "gpu0"}, "device"),
    ],
)
def test_bad_parameters_raise(train_sweeps, params, match):
    with pytest.raises(ValueError, match=match):
        SerLiCCodec(**{**SMALL, "max_epochs": 0, **params}).fit(train_sweeps)


def test_bad_window_keyword_raises(trained, test_sweep):
    points, r, _, _ = test_sweep
    with pytest.raises(ValueError, match="window"):
        trained.encode((points, r), window=0)
    with pytest.raises(ValueError, match="window"):
        trained.bits_per_point([(points, r)], window=-3)


def test_bad_blobs_raise(trained, test_sweep):
    points, r, _, _ = test_sweep
    blob = trained.encode((points, r))
    with pytest.raises(ValueError, match="magic"):
        trained.decode(b"XXXX" + blob[4:], points)
    with pytest.raises(ValueError, match="magic"):
        trained.decode(blob[:10], points)
    with pytest.raises(ValueError, match="truncated"):
        trained.decode(blob[:-4], points)
    with pytest.raises(ValueError, match="points"):
        trained.decode(blob, points[:-1])
    with pytest.raises(TypeError, match="bytes"):
        trained.decode("not bytes", points)
    from sklearn_icml.compression import AdaptiveContextCodec

    adaptive = AdaptiveContextCodec(**{k: SMALL[k] for k in ("n_lasers", "n_azimuth")})
    adaptive.fit([(points, r)])
    with pytest.raises(ValueError, match="AdaptiveContextCodec"):
        trained.decode(adaptive.encode((points, r)), points)
    bad_crc = bytearray(blob)
    bad_crc[28] ^= 1  # the stored CRC-32
    with pytest.raises(ValueError, match="CRC"):
        trained.decode(bytes(bad_crc), points)


def test_not_fitted_and_bad_sweeps(test_sweep):
    points, r, _, _ = test_sweep
    codec = SerLiCCodec(**SMALL)
    for call in (
        lambda: codec.encode((points, r)),
        lambda: codec.decode(b"SLC1", points),
        lambda: codec.score([(points, r)]),
        lambda: codec.bits_per_point([(points, r)]),
    ):
        with pytest.raises(NotFittedError):
            call()
    with pytest.raises(ValueError, match="at least one sweep"):
        codec.fit([])
    with pytest.raises(TypeError, match="list of"):
        codec.fit("sweeps")
    with pytest.raises(ValueError, match="4"):
        codec.fit([np.ones((10, 5))])


# manners


def test_scikit_learn_manners(trained, train_sweeps, test_sweep):
    points, r, _, _ = test_sweep
    codec = SerLiCCodec(window=32, random_state=0)
    assert codec.get_params()["window"] == 32
    assert clone(codec).get_params() == codec.get_params()
    assert "window=32" in repr(codec) and "n_lasers" not in repr(codec)
    with pytest.raises(ValueError, match="Invalid parameter"):
        codec.set_params(windw=3)
    assert trained.score([(points, r)]) == -trained.bits_per_point([(points, r)])
    # an (n, 4) array and a single pair are accepted as one sweep
    assert trained.bits_per_point(np.column_stack([points, r])) == pytest.approx(
        trained.bits_per_point([(points, r)])
    )
    assert trained.bits_per_point((points, r)) == trained.bits_per_point([(points, r)])
    assert trained.n_features_in_ == 4 and trained.n_params_ > 0
    assert len(trained.train_bpp_) == trained.max_epochs
    assert trained.train_bpp_[-1] < trained.train_bpp_[0]
    # the layer sizes of about 111K parameters (the size of the paper's light model)
    light = SerLiCCodec(n_lasers=L, n_azimuth=U, d_model=64, n_layers=2, d_state=16, d_emb=32,
                        max_epochs=0, random_state=0)
    light.fit(train_sweeps)
    assert light.n_params_ > 2 * trained.n_params_


def test_verbose_prints_one_line_per_epoch(train_sweeps, capsys):
    SerLiCCodec(**SMALL, max_epochs=2, batch_size=64, random_state=0).fit(train_sweeps)
    assert capsys.readouterr().out == ""
    SerLiCCodec(**SMALL, max_epochs=2, batch_size=64, verbose=1, random_state=0).fit(
        train_sweeps
    )
    assert capsys.readouterr().out.count("epoch") == 2
