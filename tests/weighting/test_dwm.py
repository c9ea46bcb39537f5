"""DWMClassifier / DWMRegressor: the bi-level schedule, the weights, and bad input."""

import copy
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skorch = pytest.importorskip("skorch")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

from sklearn_icml.datasets import make_mixed_source_regression  # noqa: E402
from sklearn_icml.weighting import (  # noqa: E402
    DWMClassifier,
    DWMRegressor,
    WeightingMLP,
)

FAST = {"hidden_layer_sizes": (8,), "max_iter": 30, "n_stages": 3, "dwm_steps_per_stage": 4,
        "batch_size": 16, "random_state": 0}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    from sklearn_icml.utils._skorch import torch_threads

    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def clf_data():
    X, y = make_classification(n_samples=120, n_features=5, n_informative=3, n_classes=3,
                               random_state=0)
    return X, y


@pytest.fixture(scope="module")
def mixed():
    return make_mixed_source_regression(n_per_source=60, n_features=4, n_val=50,
                                        n_test=50, random_state=0)


class Recorder(skorch.callbacks.Callback):
    """Snapshots of learner and DWM parameters around each phase, and the batch indices."""

    def initialize(self):
        self.events = []
        self.indices = []
        return self

    def _snap(self, net, kind):
        learner = [p.detach().clone() for p in net.module_.parameters()]
        dwm = [p.detach().clone() for p in net.bilevel.model.parameters()]
        self.events.append((kind, learner, dwm))

    def on_train_begin(self, net, **kwargs):
        self._snap(net, "train_begin")

    def on_epoch_begin(self, net, **kwargs):
        self._snap(net, "epoch_begin")  # after the stage's DWM updates

    def on_epoch_end(self, net, **kwargs):
        self._snap(net, "epoch_end")  # after the stage's learner steps

    def on_batch_begin(self, net, batch=None, training=False, **kwargs):
        if training:
            self.indices.append(batch[0]["index"].cpu().numpy().copy())


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


# ----------------------------------------------------- the bi-level schedule and the weights


@pytest.mark.parametrize("warm", [False, True])
def test_constant_dwm_gives_the_plain_sgd_trajectory(mixed, warm):
    """Weights all 1: the learner follows plain minibatch SGD on the same batches."""
    X, y = mixed.X[:100], mixed.y[:100]
    torch.manual_seed(0)
    module = torch.nn.Linear(X.shape[1], 1)
    recorder = Recorder()
    # an untrained WeightingMLP gives every weight exactly 1 through the weighted path;
    # without it and without DWM updates the DWM is skipped altogether
    n_dwm = X.shape[1] + 1 + 1
    reg = DWMRegressor(
        module=module, standardize=False, learning_rate=0.05, max_iter=24, n_stages=3,
        dwm_steps_per_stage=0, batch_size=16, random_state=1,
        warm_start_dwm=WeightingMLP(n_dwm) if warm else None,
        callbacks=[("rec", recorder)],
    ).fit(X, y, mixed.X_val, mixed.y_val)
    rec = dict(reg.net_.callbacks_)["rec"]
    assert len(rec.indices) == 24 and all(len(i) == 16 for i in rec.indices)
    ref = copy.deepcopy(module)
    opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    Xt = torch.as_tensor(X, dtype=torch.float32)
    yt = torch.as_tensor(y, dtype=torch.float32)
    ref_losses = []
    for idx in rec.indices:
        opt.zero_grad()
        loss = ((ref(Xt[idx]).squeeze(-1) - yt[idx]) ** 2).mean()
        loss.backward()
        opt.step()
        ref_losses.append(loss.item())
    got_losses = [b["train_loss"] for h in reg.history_ for b in h["batches"]]
    np.testing.assert_allclose(got_losses, ref_losses, rtol=0, atol=1e-6)
    for p, q in zip(reg.module_.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), atol=1e-6)
    # the user's module was copied, not trained
    assert torch.equal(module.weight, torch.nn.Linear(X.shape[1], 1).weight) is False
    assert not torch.equal(module.weight, reg.module_.weight)


def test_learner_frozen_in_dwm_phases_and_dwm_frozen_in_learner_phases(clf_data):
    X, y = clf_data
    clf = DWMClassifier(**FAST, callbacks=[("rec", Recorder())]).fit(X, y)
    events = dict(clf.net_.callbacks_)["rec"].events
    kinds = [e[0] for e in events]
    assert kinds == ["train_begin"] + ["epoch_begin", "epoch_end"] * 3
    for before, after in zip(events[:-1], events[1:]):
        if after[0] == "epoch_begin":  # a DWM phase happened in between
            assert _same(before[1], after[1]), "learner changed during a DWM phase"
            assert not _same(before[2], after[2]), "the DWM was not updated"
        else:  # a learner phase happened in between
            assert _same(before[2], after[2]), "DWM changed during a learner phase"
            assert not _same(before[1], after[1]), "the learner was not trained"


def test_weights_positive_sum_to_batch_and_permute_with_the_batch(clf_data):
    X, y = clf_data
    clf = DWMClassifier(**{**FAST, "dwm_steps_per_stage": 15, "dwm_learning_rate": 0.01}).fit(X, y)
    w = clf.compute_weights(X[:16], y[:16])
    assert np.all(w > 0)
    assert w.sum() == pytest.approx(16, rel=1e-6)
    assert w.std() > 1e-3  # a trained DWM does not give uniform weights
    perm = np.random.default_rng(0).permutation(16)
    w_perm = clf.compute_weights(X[:16][perm], y[:16][perm])
    np.testing.assert_allclose(w_perm, w[perm], rtol=1e-5)
    # with context, the weights depend on the rest of the batch (interaction)
    w_other = clf.compute_weights(np.vstack([X[:8], X[40:48]]), np.r_[y[:8], y[40:48]])
    assert not np.allclose(w_other[:8] / w_other[:8].sum(), w[:8] / w[:8].sum())
    # batches of 5: mean 1 within each
    w5 = clf.compute_weights(X[:20], y[:20], batch_size=5)
    np.testing.assert_allclose(w5.reshape(4, 5).mean(axis=1), 1.0, rtol=1e-6)


def test_learning_trace_records_ess_per_step_and_stage_stats(mixed):
    reg = DWMRegressor(**{**FAST, "hidden_layer_sizes": ()}).fit(
        mixed.X, mixed.y, mixed.X_val, mixed.y_val, sample_features=mixed.source_onehot
    )
    assert reg.n_iter_ == 30
    ess = reg.history_[:, "batches", :, "ess"]
    assert [len(e) for e in ess] == [10, 10, 10]
    assert all(1 <= v <= 16 + 1e-9 for e in ess for v in e)
    stats = reg.stage_weight_stats_
    assert [s["stage"] for s in stats] == [1, 2, 3]
    for s in stats:
        assert s["weight_share"].sum() == pytest.approx(1.0)
        assert np.isfinite(s["val_loss"]) and np.isfinite(s["dwm_val_loss_last"])
    assert reg.stage_sample_counts_.sum() == 30 * 16
    assert reg.history_[:, "valid_loss"] == [s["val_loss"] for s in stats]


def test_iid_validation_keeps_random_groups_near_weight_one():
    """Train and validation from one distribution: no group is systematically favoured."""
    X, y = make_classification(n_samples=1200, n_features=6, n_informative=4,
                               random_state=1)
    X_val, y_val = X[1000:], y[1000:]
    clf = DWMClassifier(hidden_layer_sizes=(16,), max_iter=300, n_stages=3, dwm_steps_per_stage=30,
                        batch_size=32, random_state=0).fit(X[:1000], y[:1000], X_val, y_val)
    groups = np.random.default_rng(0).integers(0, 4, size=1000)
    sums, counts = clf.stage_weight_sums_[-1], clf.stage_sample_counts_[-1]
    for g in range(4):
        mean = sums[groups == g].sum() / counts[groups == g].sum()
        assert abs(mean - 1) <= 0.1, (g, mean)


@pytest.mark.slow
def test_dwm_down_weights_the_opposite_source_and_beats_uniform():
    """A small E1: sources A (target), B (noisy), C (opposite), D (no signal)."""
    data = make_mixed_source_regression(n_per_source=300, n_features=5, random_state=0)
    common = {"hidden_layer_sizes": (), "learning_rate": 0.05, "max_iter": 600, "n_stages": 3,
              "random_state": 0}
    fits = {}
    for name, steps in (("uniform", 0), ("dwm", 100)):
        fits[name] = DWMRegressor(**common, dwm_steps_per_stage=steps).fit(
            data.X, data.y, data.X_val, data.y_val, sample_features=data.source_onehot)
    mse = {k: np.mean((m.predict(data.X_test) - data.y_test) ** 2) for k, m in fits.items()}
    share = fits["dwm"].stage_weight_stats_[-1]["weight_share"]
    np.testing.assert_allclose(fits["uniform"].stage_weight_stats_[-1]["weight_share"],
                               0.25, atol=0.03)
    # C (opposite signal) and D (no signal) lose their weight to A and B (right signal)
    assert share[2] < 0.10 and share[3] < 0.10
    assert share[0] + share[1] > 0.8
    assert mse["dwm"] < 0.1 * mse["uniform"]


def test_same_seed_same_fit_and_pickle_round_trip(clf_data):
    X, y = clf_data
    a = DWMClassifier(**FAST).fit(X, y)
    b = clone(a).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(a.compute_weights(X[:16], y[:16]),
                                  b.compute_weights(X[:16], y[:16]))
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(a.predict_proba(X), c.predict_proba(X))
    np.testing.assert_array_equal(a.compute_weights(X[:16], y[:16]),
                                  c.compute_weights(X[:16], y[:16]))


def test_first_order_mode_trains_like_exact_mode(clf_data):
    X, y = clf_data
    exact = DWMClassifier(**FAST).fit(X, y)
    first = DWMClassifier(**FAST, hypergradient="first_order").fit(X, y)
    a = exact.stage_weight_stats_[0]["dwm_val_losses"]
    b = first.stage_weight_stats_[0]["dwm_val_losses"]
    np.testing.assert_allclose(a, b, rtol=1e-4)


def test_warm_start_transfers_the_dwm(clf_data):
    X, y = clf_data
    first = DWMClassifier(**FAST).fit(X, y)
    second = DWMClassifier(**{**FAST, "dwm_steps_per_stage": 0},
                           warm_start_dwm=first).fit(X, y)
    for p, q in zip(first.weighting_model_.parameters(),
                    second.weighting_model_.parameters()):
        assert torch.equal(p, q)
    assert second.weighting_model_ is not first.weighting_model_
    w = second.history_[:, "batches", :, "ess"]
    assert min(min(e) for e in w) < 16  # the transferred DWM does weight
    with pytest.raises(ValueError, match="warm_start_dwm takes"):
        DWMClassifier(**FAST, warm_start_dwm=WeightingMLP(3)).fit(X, y)
    with pytest.raises(TypeError, match="warm_start_dwm must be"):
        DWMClassifier(**FAST, warm_start_dwm="dwm").fit(X, y)


def test_validation_rows_are_never_trained_on_and_inputs_not_mutated(clf_data):
    X, y = clf_data
    X0, y0 = X.copy(), y.copy()
    sf = np.random.default_rng(0).random((X.shape[0], 2))
    sf0 = sf.copy()
    clf = DWMClassifier(**FAST, validation_fraction=0.25).fit(X, y, sample_features=sf)
    val = clf.validation_indices_
    assert val.shape[0] == 30
    assert np.all(clf.stage_sample_counts_[:, val] == 0)
    assert np.all(clf.stage_weight_sums_[:, val] == 0)
    assert np.bincount(y[val]).min() >= 9  # stratified
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(sf, sf0)


def test_pandas_input_and_string_labels(clf_data):
    pd = pytest.importorskip("pandas")
    X, y = clf_data
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    labels = np.array(["a", "b", "c"])[y]
    clf = DWMClassifier(**FAST).fit(df, labels, X_val=df.iloc[:20], y_val=labels[:20])
    assert list(clf.feature_names_in_) == list(df.columns)
    assert set(clf.predict(df)) <= {"a", "b", "c"}
    assert clf.validation_indices_ is None


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "params, match",
    [
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": -1.0}, "temperature"),
        ({"n_stages": 0}, "n_stages"),
        ({"batch_size": 1}, "batch_size"),
        ({"validation_fraction": 0.0}, "validation_fraction"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"hypergradient": "second_order"}, "hypergradient"),
        ({"loss_feature": "sqrt"}, "loss_feature"),
        ({"max_iter": 2, "n_stages": 3}, "max_iter must be >= n_stages"),
        ({"hidden_layer_sizes": (0,)}, "hidden_layer_sizes"),
    ],
)
def test_bad_parameters_raise_value_error(clf_data, params, match):
    X, y = clf_data
    with pytest.raises(ValueError, match=match):
        DWMClassifier(**{**FAST, **params}).fit(X, y)


def test_bad_module_raises_type_error(clf_data):
    X, y = clf_data
    with pytest.raises(TypeError, match="module must be"):
        DWMClassifier(**FAST, module=3).fit(X, y)


def test_bad_data_raises_value_error(clf_data):
    X, y = clf_data
    clf = DWMClassifier(**FAST)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        clf.fit(X, y[:-1])
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(bad, y)
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        clf.fit(bad, y)
    with pytest.raises(ValueError, match="infinity"):
        clf.fit(X, y, X_val=bad, y_val=y)
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(X, y, X_val=bad, y_val=y)
    with pytest.raises(ValueError, match="X has 4 features"):
        clf.fit(X, y, X_val=X[:, :4], y_val=y)
    with pytest.raises(ValueError, match="classes not seen in y"):
        clf.fit(X, y, X_val=X[:5], y_val=[0, 1, 2, 7, 0])
    with pytest.raises(ValueError, match="one value per row"):
        clf.fit(X, y, X_val=X[:5], y_val=y[:4])
    with pytest.raises(ValueError, match="without y_val"):
        clf.fit(X, y, X_val=X[:5])
    with pytest.raises(ValueError, match="without X_val"):
        clf.fit(X, y, y_val=y[:5])
    sf = np.ones((X.shape[0], 2))
    sf[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(X, y, sample_features=sf)
    with pytest.raises(ValueError, match="one row per sample"):
        clf.fit(X, y, sample_features=np.ones((5, 2)))
    reg = DWMRegressor(**FAST)
    with pytest.raises(ValueError, match="NaN"):
        reg.fit(X, np.where(np.arange(len(y)) == 2, np.nan, y))
    with pytest.raises(ValueError, match="NaN"):
        reg.fit(X, y, X_val=X[:5], y_val=[0.0, np.nan, 1.0, 2.0, 3.0])


def test_not_fitted_errors(clf_data):
    X, y = clf_data
    for est in (DWMClassifier(), DWMRegressor()):
        with pytest.raises(NotFittedError):
            est.predict(X)
        with pytest.raises(NotFittedError):
            est.compute_weights(X, y)


def test_non_finite_hypergradient_raises_floating_point_error_naming_stage_and_step(mixed):
    reg = DWMRegressor(**{**FAST, "hidden_layer_sizes": ()}, lookahead_learning_rate=1e30)
    with pytest.raises(FloatingPointError, match=r"stage 1, DWM step 1\b"):
        reg.fit(mixed.X, mixed.y, mixed.X_val, mixed.y_val)


def test_non_finite_weights_raise_floating_point_error(mixed):
    dwm = WeightingMLP(mixed.X.shape[1] + 2)
    with torch.no_grad():
        dwm.out.bias.fill_(float("nan"))
    reg = DWMRegressor(**{**FAST, "hidden_layer_sizes": (), "dwm_steps_per_stage": 0},
                       warm_start_dwm=dwm)
    with pytest.raises(FloatingPointError, match=r"stage 1, learner step 1\b"):
        reg.fit(mixed.X, mixed.y, mixed.X_val, mixed.y_val)


def test_divergent_learner_raises_value_error(mixed):
    reg = DWMRegressor(
        **{**FAST, "hidden_layer_sizes": (), "learning_rate": 1e6, "dwm_steps_per_stage": 0}
    )
    with pytest.raises(ValueError, match="diverged"):
        reg.fit(mixed.X, 1e3 * mixed.y, mixed.X_val, mixed.y_val)


def test_compute_weights_bad_input(mixed):
    reg = DWMRegressor(**{**FAST, "hidden_layer_sizes": ()}).fit(
        mixed.X, mixed.y, mixed.X_val, mixed.y_val, sample_features=mixed.source_onehot)
    with pytest.raises(ValueError, match="sample_features must have 4 column"):
        reg.compute_weights(mixed.X[:10], mixed.y[:10])
    with pytest.raises(ValueError, match="one value per row"):
        reg.compute_weights(mixed.X[:10], mixed.y[:9], mixed.source_onehot[:10])
    w = reg.compute_weights(mixed.X[:10], mixed.y[:10], mixed.source_onehot[:10])
    assert w.shape == (10,) and w.mean() == pytest.approx(1.0)


def test_quiet_unless_verbose(clf_data, capsys):
    X, y = clf_data
    DWMClassifier(**FAST).fit(X, y)
    assert capsys.readouterr().out == ""
    DWMClassifier(**FAST, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert "valid_loss" in out and "ess_mean" in out


def test_stages_run_as_a_callback_and_net_parameters_are_routed(clf_data):
    from sklearn_icml.weighting._bilevel import BilevelStages

    X, y = clf_data
    clf = DWMClassifier(**FAST, optimizer__momentum=0.5)
    assert clf.get_params()["optimizer__momentum"] == 0.5
    assert clone(clf).optimizer__momentum == 0.5
    clf.fit(X, y)
    assert clf.net_.optimizer_.param_groups[0]["momentum"] == 0.5
    stages = dict(clf.net_.callbacks_)["bilevel_stages"]
    assert isinstance(stages, BilevelStages) and stages.state is None  # released after fit
    assert len(clf.stage_weight_stats_) == clf.n_epochs_run_ == 3
    assert clf.n_iter_ == 30
    # the old names are not parameters any more: __init__ stores them, fit refuses them
    with pytest.raises(TypeError, match="max_steps"):
        DWMClassifier(**FAST, max_steps=30).fit(X, y)
    with pytest.raises(TypeError, match="n_threads"):
        DWMRegressor(**FAST, n_threads=1).fit(X, y.astype(float))
