"""CellFlux: the paper's training and sampling on the estimator, and bad input."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.exceptions import NotFittedError  # noqa: E402

from sklearn_icml.datasets import make_batch_shift_1d  # noqa: E402
from sklearn_icml.generative import CellFlux, _cellflux, frechet_transport_score  # noqa: E402
from sklearn_icml.generative._flow import edm_time_grid, ema_decay  # noqa: E402
from sklearn_icml.generative._networks import FiLMMLPVelocity  # noqa: E402
from sklearn_icml.utils import draw_seed  # noqa: E402
from sklearn_icml.utils._skorch import seeded  # noqa: E402

FAST = dict(hidden_layer_sizes=(16,), embedding_dim=4, max_epochs=1, n_sampling_steps=4,
            cfg_scale=0.0, cond_drop_prob=0.0, learning_rate=1e-3, batch_size=64,
            random_state=0)


def _toy(n=60, seed=0):
    """Two batches (offsets -2, +2), controls and two perturbations in 2-D."""
    rng = np.random.default_rng(seed)
    X, y, b = [], [], []
    for off in (-2.0, 2.0):
        X += [rng.normal(off, 0.5, (n, 2)), rng.normal(off + 1, 0.5, (n, 2)),
              rng.normal(off - 1, 0.5, (n, 2))]
        y += ["control"] * n + ["A"] * n + ["B"] * n
        b += [off] * (3 * n)
    return np.concatenate(X), np.array(y), np.array(b)


@pytest.fixture(scope="module")
def fitted():
    X, y, b = _toy()
    return CellFlux(**{**FAST, "cfg_scale": 0.2, "cond_drop_prob": 0.2,
                       "noise_level": 0.5}).fit(X, y, batch=b), X, y, b


def test_fit_attributes(fitted):
    model, X, y, b = fitted
    assert model.perturbations_.tolist() == ["A", "B"]
    assert model.batches_.tolist() == [-2.0, 2.0]
    assert model.n_features_in_ == 2 and model.feature_shape_ == (2,)
    for batch_id, rows in model.controls_by_batch_.items():
        assert np.all(y[rows] == "control") and np.all(b[rows] == batch_id)
    assert len(model.loss_curve_) == model.n_iter_ == 1
    assert model.n_updates_ == int(np.ceil(240 / 64))
    assert np.allclose(model.scaler_mean_, X.mean(axis=0))
    assert isinstance(model.ema_model_, torch.nn.Module)
    assert model.ema_model_ is not model.velocity_model_


def test_training_pairs_use_path_and_same_batch_controls(monkeypatch):
    """Spy on the path: x0 are same-batch controls, x1 treated rows, xt/ut exact."""
    X, y, b = _toy(n=40)
    seen = []
    original = _cellflux.conditional_path

    def spy(x0, x1, t):
        xt, ut = original(x0, x1, t)
        seen.append((x0.clone(), x1.clone(), t.clone(), xt, ut))
        return xt, ut

    monkeypatch.setattr(_cellflux, "conditional_path", spy)
    model = CellFlux(**{**FAST, "noise_level": 0.0, "batch_size": 16, "max_epochs": 2,
                        "standardize": False}).fit(X, y, batch=b)
    controls = {tuple(r) for r in X[y == "control"].astype(np.float32)}
    row_batch = {tuple(r): bb for r, bb in zip(X.astype(np.float32), b, strict=True)}
    for x0, x1, t, xt, ut in seen:
        assert torch.equal(ut, x1 - x0)
        assert torch.allclose(xt, (1 - t[:, None]) * x0 + t[:, None] * x1, atol=1e-6)
        for r0, r1 in zip(x0.numpy(), x1.numpy(), strict=True):
            assert tuple(r0) in controls
            assert tuple(r1) not in controls
            assert row_batch[tuple(r0)] == row_batch[tuple(r1)]
    assert len(seen) == model.n_updates_


def test_ema_first_update_matches_formula():
    X, y, b = _toy(n=10)
    model = CellFlux(**{**FAST, "batch_size": 1000}).fit(X, y, batch=b)
    assert model.n_updates_ == 1
    with seeded(draw_seed(0)):
        init = FiLMMLPVelocity(2, (16,), 4, 2)
    d = ema_decay(1, 0.999)
    assert d == pytest.approx(2 / 11)
    for p0, raw, ema in zip(init.parameters(), model.velocity_model_.parameters(),
                            model.ema_model_.parameters(), strict=True):
        assert not torch.equal(raw, p0)
        assert torch.allclose(ema, d * p0 + (1 - d) * raw, atol=1e-7)


def test_determinism_and_fresh_noise(fitted):
    model, X, y, b = fitted
    Xc = X[y == "control"][:20]
    a1 = model.sample(Xc, perturbation="A", random_state=3)
    a2 = model.sample(Xc, perturbation="A", random_state=3)
    assert np.array_equal(a1, a2)
    n1 = model.sample(Xc, perturbation="A")
    n2 = model.sample(Xc, perturbation="A")
    assert not np.array_equal(n1, n2)
    assert np.array_equal(model.predict(Xc, perturbation="A"), model.predict(Xc, perturbation="A"))
    X2, y2, b2 = _toy()
    again = CellFlux(**{**FAST, "cfg_scale": 0.2, "cond_drop_prob": 0.2,
                        "noise_level": 0.5}).fit(X2, y2, batch=b2)
    assert np.array_equal(again.predict(Xc, perturbation="A"), model.predict(Xc, perturbation="A"))
    assert np.all(np.isfinite(a1))


def test_trajectory(fitted):
    model, X, y, b = fitted
    Xc = X[y == "control"][:15]
    traj, times = model.sample(Xc, perturbation="B", random_state=7, return_trajectory=True)
    out = model.sample(Xc, perturbation="B", random_state=7)
    assert traj.shape == (5, 15, 2)
    assert np.allclose(times, edm_time_grid(4))
    assert np.allclose(traj[-1], out)
    gen = torch.Generator().manual_seed(draw_seed(7))
    noise = torch.randn((15, 2), generator=gen).numpy().astype(np.float64)
    noised = Xc + 0.5 * noise * model.scaler_scale_
    assert np.allclose(traj[0], noised, atol=1e-5)


def test_rows_kept_in_order_and_no_sampling_time_statistics(fitted):
    model, X, y, b = fitted
    Xc = X[y == "control"][:30]
    kw = dict(cfg_scale=0.0)
    # noise is drawn per call, so compare with noise_level=0 on a copy
    quiet = copy.deepcopy(model)
    quiet.noise_level = 0.0
    full = quiet.sample(Xc, perturbation="A", random_state=0, **kw)
    rev = quiet.sample(Xc[::-1], perturbation="A", random_state=0, **kw)
    assert np.allclose(full, rev[::-1], atol=1e-5)
    single = quiet.sample(Xc[4:5] + 0.0, perturbation="A", random_state=0, **kw)
    assert np.allclose(single, full[4:5], atol=1e-5)
    per_row = quiet.sample(
        Xc, perturbation=np.where(np.arange(30) % 2, "A", "B"), random_state=0, **kw
    )
    only_b = quiet.sample(Xc, perturbation="B", random_state=0, **kw)
    assert np.allclose(per_row[::2], only_b[::2], atol=1e-5)
    assert np.allclose(per_row[1::2], full[1::2], atol=1e-5)


def test_guidance_changes_output_only_with_weight(fitted):
    model, X, y, b = fitted
    Xc = X[y == "control"][:10]
    g0 = model.sample(Xc, perturbation="A", cfg_scale=0.0, random_state=1)
    g1 = model.sample(Xc, perturbation="A", cfg_scale=1.0, random_state=1)
    assert not np.allclose(g0, g1)


def test_score_is_negative_frechet(fitted):
    model, X, y, b = fitted
    Xc, Xa = X[y == "control"], X[y == "A"]
    s = frechet_transport_score(model, Xc, Xa, perturbation="A")
    assert s <= 0 and np.isfinite(s)


def test_the_old_score_form_warns_and_gives_frechet_transport_score(fitted):
    # score(X_control, X_treated, perturbation) became frechet_transport_score in 0.3
    model, X, y, b = fitted
    Xc, Xa = X[y == "control"], X[y == "A"]
    new = frechet_transport_score(model, Xc, Xa, perturbation="A")
    with pytest.warns(FutureWarning, match="frechet_transport_score"):
        assert model.score(Xc, Xa, "A") == new
    with pytest.warns(FutureWarning, match="frechet_transport_score"):
        assert model.score(Xc, Xa, perturbation="A") == new
    with pytest.raises(ValueError, match="perturbation is only used"):
        model.score(X, y, "A")


@pytest.mark.parametrize(
    "old, new, value", [("lr", "learning_rate", 2e-3), ("hidden_dims", "hidden_layer_sizes", (8,))]
)
def test_renamed_parameters_warn_and_give_the_same_model(old, new, value):
    X, y, _ = _toy(n=20)
    params = {k: v for k, v in FAST.items() if k != new}
    reference = CellFlux(**{**params, new: value}).fit(X, y)
    with pytest.warns(FutureWarning, match=f"`{old}` was renamed `{new}`"):
        renamed = CellFlux(**{**params, old: value}).fit(X, y)
    Xc = X[y == "control"][:5]
    np.testing.assert_array_equal(
        renamed.predict(Xc, perturbation="A"), reference.predict(Xc, perturbation="A")
    )


def test_perturbation_passed_by_position_warns(fitted):
    model, X, y, b = fitted
    Xc = X[y == "control"][:5]
    with pytest.warns(FutureWarning, match="perturbation="):
        old = model.predict(Xc, "A")
    np.testing.assert_array_equal(old, model.predict(Xc, perturbation="A"))


@pytest.mark.slow
def test_closed_form_gaussian_transport():
    """Source N(0,1), target N(3, 0.5^2): mean 3 +- 0.05, std 0.5 +- 0.05."""
    rng = np.random.default_rng(0)
    n = 3000
    X = np.r_[rng.normal(0, 1, n), rng.normal(3, 0.5, n)][:, None]
    y = np.r_[["control"] * n, ["T"] * n]
    model = CellFlux(hidden_layer_sizes=(64, 64), noise_level=0.0, cfg_scale=0.0,
                     cond_drop_prob=0.0, time_sampler="uniform", learning_rate=2e-3,
                     batch_size=128, max_epochs=25, n_sampling_steps=30,
                     random_state=0).fit(X, y)
    out = model.predict(rng.normal(0, 1, (4000, 1)), perturbation="T")
    assert out.mean() == pytest.approx(3.0, abs=0.05)
    assert out.std() == pytest.approx(0.5, abs=0.05)


@pytest.mark.slow
def test_batch_preservation_e1_scaled():
    """E1 (scaled down): batch kept by CellFlux, lost by the noise-to-data ablation."""
    X, y, b = make_batch_shift_1d(1500, random_state=0)
    kw = dict(hidden_layer_sizes=(64, 64), cfg_scale=0.0, cond_drop_prob=0.0, noise_level=0.0,
              time_sampler="uniform", learning_rate=2e-3, batch_size=128, max_epochs=15,
              n_sampling_steps=30, random_state=0)
    query = np.random.default_rng(1).normal(2, 0.5, (3000, 1))
    out = CellFlux(**kw).fit(X, y, batch=b).predict(query, perturbation="A")
    assert np.mean(out > 1) >= 0.97
    assert out.mean() == pytest.approx(3.49, abs=0.10)
    assert out.std() == pytest.approx(0.50, abs=0.06)
    base = CellFlux(**kw, source="noise").fit(X, y, batch=b).predict(query, perturbation="A")
    assert np.mean(base > 1) == pytest.approx(0.50, abs=0.05)


def test_images_with_unet_keep_float_and_range():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 16, (48, 1, 8, 8))
    X[24:] = np.clip(X[24:] + 3, 0, 16)
    y = np.r_[["control"] * 24, ["P"] * 24]
    model = CellFlux(**{**FAST, "unet_channels": 4}).fit(X, y)
    assert model.feature_shape_ == (1, 8, 8) and model.n_features_in_ == 64
    assert model.scaler_mean_.shape == (1, 1, 1)
    assert type(model.ema_model_).__name__ == "SmallUNetVelocity"
    out = model.predict(X[:5])
    assert out.shape == (5, 1, 8, 8) and out.dtype == np.float64
    assert out.min() >= X.min() and out.max() <= X.max()
    assert not np.allclose(out, np.round(out))
    flat = CellFlux(**FAST).fit(X.reshape(48, 64), y)
    assert type(flat.ema_model_).__name__ == "FiLMMLPVelocity"
    with pytest.raises(ValueError, match="shape"):
        model.predict(X[:5].reshape(5, 64))


def test_fixed_embeddings_and_out_of_distribution():
    X, y, b = _toy(n=20)
    emb = {"A": [1.0, 0.0], "B": [0.0, 1.0], "C": [0.5, 0.5]}
    model = CellFlux(**{**FAST, "perturbation_embeddings": emb}).fit(X, y, batch=b)
    Xc = X[y == "control"][:5]
    assert model.predict(Xc, perturbation="C").shape == (5, 2)  # unseen, but embedded
    with pytest.raises(ValueError, match="'D'"):
        model.predict(Xc, perturbation="D")
    with pytest.raises(ValueError, match="'B'"):
        CellFlux(**{**FAST, "perturbation_embeddings": {"A": [1.0, 0.0]}}).fit(X, y, batch=b)
    yi = np.where(y == "control", -1, np.where(y == "A", 0, 1))
    table = np.eye(3)
    model = CellFlux(**{**FAST, "control_label": -1, "perturbation_embeddings": table})
    model.fit(X, yi, batch=b)
    assert model.predict(Xc, perturbation=2).shape == (5, 2)


def test_noise_source_ignores_control_values():
    X, y, b = _toy(n=20)
    model = CellFlux(**{**FAST, "source": "noise"}).fit(X, y, batch=b)
    Xc = X[y == "control"][:8]
    assert np.allclose(
        model.predict(Xc, perturbation="A"), model.predict(Xc + 100.0, perturbation="A")
    )


def test_pandas_input_and_feature_names():
    pd = pytest.importorskip("pandas")
    X, y, b = _toy(n=20)
    df = pd.DataFrame(X, columns=["f0", "f1"])
    model = CellFlux(**FAST).fit(df, y, batch=b)
    assert model.feature_names_in_.tolist() == ["f0", "f1"]
    assert model.predict(df.iloc[:3], perturbation="A").shape == (3, 2)


# ---------------------------------------------------------------- bad input


def test_bad_inputs():
    X, y, b = _toy(n=10)
    with pytest.raises(ValueError, match="no control rows"):
        CellFlux(**FAST).fit(X, np.where(y == "control", "A", y), batch=b)
    b_bad = b.copy()
    b_bad[(y != "control") & (b == 2.0)] = 7.0  # treated rows in a batch without controls
    with pytest.raises(ValueError, match="batch 7.0"):
        CellFlux(**FAST).fit(X, y, batch=b_bad)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        CellFlux(**FAST).fit(X_nan, y, batch=b)
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        CellFlux(**FAST).fit(X_inf, y, batch=b)
    with pytest.raises(ValueError, match="y must have one label"):
        CellFlux(**FAST).fit(X, y[:-1], batch=b)
    with pytest.raises(ValueError, match="batch must be 1-D"):
        CellFlux(**FAST).fit(X, y, batch=b[:-2])
    with pytest.raises(ValueError, match="requires y"):
        CellFlux(**FAST).fit(X, None)
    for params, name in [
        ({"noise_level": -0.1}, "noise_level"),
        ({"cfg_scale": -1.0}, "cfg_scale"),
        ({"n_sampling_steps": 0}, "n_sampling_steps"),
        ({"cond_drop_prob": 1.5}, "cond_drop_prob"),
        ({"cond_drop_prob": -0.1}, "cond_drop_prob"),
        ({"hidden_layer_sizes": (0,)}, "hidden_layer_sizes"),
        ({"betas": (0.9,)}, "betas"),
    ]:
        with pytest.raises(ValueError, match=name):
            CellFlux(**{**FAST, **params}).fit(X, y, batch=b)
    # guidance without a trained unconditional branch
    with pytest.raises(ValueError, match="cond_drop_prob"):
        CellFlux(**{**FAST, "cfg_scale": 0.2, "cond_drop_prob": 0.0}).fit(X, y, batch=b)


def test_bad_inputs_at_sampling(fitted):
    model, X, y, b = fitted
    Xc = X[y == "control"][:4]
    with pytest.raises(NotFittedError):
        CellFlux().sample(Xc, perturbation="A")
    with pytest.raises(ValueError, match="'Z' was not seen"):
        model.sample(Xc, perturbation="Z")
    with pytest.raises(ValueError, match="2 features"):
        model.sample(np.zeros((4, 3)), perturbation="A")
    with pytest.raises(ValueError, match="perturbation is required"):
        model.predict(Xc)
    with pytest.raises(ValueError, match="one label per row"):
        model.sample(Xc, perturbation=["A", "B"])
    with pytest.raises(ValueError, match="n_sampling_steps"):
        model.sample(Xc, perturbation="A", n_sampling_steps=0)
    with pytest.raises(ValueError, match="cfg_scale"):
        model.sample(Xc, perturbation="A", cfg_scale=-0.5)
    with pytest.raises(ValueError, match="NaN"):
        model.sample(np.full((2, 2), np.nan), perturbation="A")
    with pytest.raises(ValueError, match="batch"):
        model.sample(Xc, perturbation="A", batch=[0, 1])
    no_drop = copy.deepcopy(model)
    no_drop.cond_drop_prob = 0.0
    with pytest.raises(ValueError, match="cond_drop_prob"):
        no_drop.sample(Xc, perturbation="A", cfg_scale=0.5)
    X_copy = Xc.copy()
    model.sample(Xc, perturbation="A")
    assert np.array_equal(X_copy, Xc)  # input never modified
