"""Tests of DPSGDClassifier (DP-SGD on skorch with partition samplers)."""

import io
import pickle

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("skorch")

from sklearn.datasets import load_breast_cancer, make_classification  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_icml.privacy import (  # noqa: E402
    DPSGDClassifier,
    bis_epsilon,
    default_orders,
    model_split_rdp,
    rdp_to_epsilon,
)

FAST = {"steps_per_epoch": 20, "num_selected": 4, "random_state": 0}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    scaler = StandardScaler().fit(X_tr)
    return scaler.transform(X_tr), scaler.transform(X_te), y_tr, y_te


@pytest.fixture(scope="module")
def toy():
    return make_classification(
        n_samples=60, n_features=4, n_informative=3, n_redundant=0, n_classes=3, random_state=0
    )


@pytest.mark.slow
def test_accuracy_at_epsilon_8_on_breast_cancer(cancer):
    # the DP-SGD experiment: T = 200, k = 20, C = 1, lr = 0.5, (8, 1e-5)-DP -> accuracy ~0.972
    X_tr, X_te, y_tr, y_te = cancer
    scores = []
    for seed in range(3):
        clf = DPSGDClassifier(target_epsilon=8.0, random_state=seed).fit(X_tr, y_tr)
        scores.append(clf.score(X_te, y_te))
    assert clf.noise_multiplier_ == pytest.approx(1.194, abs=0.005)
    assert clf.epsilon_ <= 8.0 and clf.epsilon_ == pytest.approx(8.0, abs=1e-3)
    assert np.mean(scores) > 0.95


def test_epsilon_reported_matches_accountant(toy):
    X, y = toy
    clf = DPSGDClassifier(noise_multiplier=1.3, max_epochs=2, **FAST).fit(X, y)
    assert clf.accounting_ == "bis"
    assert clf.epsilon_ == pytest.approx(bis_epsilon(1.3, 20, 4, 1e-5, num_epochs=2))
    assert clf.noise_multiplier_ == 1.3
    assert clf.rdp_.shape == clf.orders_.shape
    assert clf.expected_batch_size_ == pytest.approx(60 * 4 / 20)
    # every step of every pass ran, empty batches included
    assert [h["train_batch_count"] for h in clf.history_] == [20, 20]


def _keep_training_state(monkeypatch):
    """Record the per-batch history and the parameter parts just before fit forgets them."""
    from sklearn_icml.privacy._dpsgd_net import DPSGDNet

    seen = {}
    forget = DPSGDNet.drop_private_state

    def record_then_forget(net):
        seen["batches"] = [list(h["batches"]) for h in net.history_]
        seen["parts"] = dict(net.parts_)
        return forget(net)

    monkeypatch.setattr(DPSGDNet, "drop_private_state", record_then_forget)
    return seen


def test_empty_batches_take_noise_only_steps(monkeypatch):
    # 2 samples, 40 steps, each sample in 1 step: at least 38 empty batches
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([0, 1])
    seen = _keep_training_state(monkeypatch)
    DPSGDClassifier(
        noise_multiplier=1.0, steps_per_epoch=40, num_selected=1, learning_rate=0.1, random_state=0
    ).fit(X, y)
    sizes = [b["train_batch_size"] for b in seen["batches"][-1]]
    assert len(sizes) == 40 and sizes.count(0) >= 38


def test_clipping_bounds_the_update():
    # with (almost) no noise every step moves the weights by at most lr * C * B / (n k / T):
    # over a pass at most lr * C * T in total, however large the raw gradients are
    X, y = make_classification(n_samples=50, n_features=5, random_state=1)
    X = X * 1000.0
    lr, C, T = 0.1, 0.5, 10
    clf = DPSGDClassifier(
        noise_multiplier=1e-6,
        max_grad_norm=C,
        learning_rate=lr,
        steps_per_epoch=T,
        num_selected=2,
        random_state=0,
    )
    clf.fit(X, y)
    start = DPSGDClassifier(
        noise_multiplier=1e-6,
        max_grad_norm=C,
        learning_rate=0.0 + 1e-12,
        steps_per_epoch=T,
        num_selected=2,
        random_state=0,
    ).fit(X, y)
    moved = np.sqrt(
        sum(
            ((a - b) ** 2).sum().item()
            for a, b in zip(clf.module_.parameters(), start.module_.parameters())
        )
    )
    assert 0 < moved <= lr * C * T * (1 + 1e-3)


def test_reproducible(toy):
    X, y = toy
    a = DPSGDClassifier(noise_multiplier=1.0, **FAST).fit(X, y).predict_proba(X)
    b = DPSGDClassifier(noise_multiplier=1.0, **FAST).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    c = DPSGDClassifier(noise_multiplier=1.0, **{**FAST, "random_state": 1}).fit(X, y)
    assert not np.array_equal(a, c.predict_proba(X))


def test_model_splitting_accounting(toy, monkeypatch):
    X, y = toy
    orders = default_orders("exact")
    seen = _keep_training_state(monkeypatch)
    clf = DPSGDClassifier(
        noise_multiplier=2.0,
        steps_per_epoch=10,
        num_selected=1,
        num_parts=3,
        hidden_layer_sizes=(4,),
        random_state=0,
    ).fit(X, y)
    assert clf.accounting_ == "model_split"
    expected = rdp_to_epsilon(model_split_rdp(2.0, 30, orders=orders), orders, 1e-5)[0]
    assert clf.epsilon_ == pytest.approx(expected)
    plain = bis_epsilon(2.0, 10, 1, 1e-5, method="exact")
    assert clf.epsilon_ < plain
    # every parameter coordinate belongs to one of the 3 parts
    assert set(
        np.unique(np.concatenate([p.numpy().ravel() for p in seen["parts"].values()]))
    ) == {0, 1, 2}


def test_poisson_sampler(toy):
    pytest.importorskip("dp_accounting")
    X, y = toy
    clf = DPSGDClassifier(noise_multiplier=1.5, sampler="poisson", **FAST).fit(X, y)
    assert clf.accounting_ == "poisson"
    assert 0 < clf.epsilon_ < np.inf
    split = DPSGDClassifier(noise_multiplier=1.5, sampler="poisson", num_parts=2, **FAST).fit(X, y)
    assert split.accounting_ == "model_split" and split.epsilon_ < clf.epsilon_


def test_custom_module_and_string_labels(toy):
    import torch

    class Net(torch.nn.Module):
        def __init__(self, n_features, n_outputs):
            super().__init__()
            self.lin = torch.nn.Linear(n_features, n_outputs)

        def forward(self, X):
            return self.lin(X)

    X, y = toy
    labels = np.array(["a", "b", "c"])[y]
    clf = DPSGDClassifier(module=Net, noise_multiplier=0.5, **FAST).fit(X, labels)
    assert set(clf.predict(X)) <= {"a", "b", "c"}
    assert clf.predict_proba(X).shape == (60, 3)
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)


def test_module_arguments_are_routed_to_the_net(toy):
    import torch
    from sklearn.base import clone

    class Net(torch.nn.Module):
        def __init__(self, n_features, n_outputs, hidden=2):
            super().__init__()
            self.body = torch.nn.Sequential(
                torch.nn.Linear(n_features, hidden),
                torch.nn.ReLU(),
                torch.nn.Linear(hidden, n_outputs),
            )

        def forward(self, X):
            return self.body(X)

    X, y = toy
    clf = DPSGDClassifier(module=Net, noise_multiplier=0.5, module__hidden=7, **FAST)
    assert clf.get_params()["module__hidden"] == 7
    assert clone(clf).set_params(module__hidden=5).module__hidden == 5
    clf.fit(X, y)
    assert clf.module_.body[0].out_features == 7
    # a keyword without a routed prefix is stored by __init__ and refused by fit
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['hidden'\]"):
        DPSGDClassifier(hidden=3, **FAST).fit(X, y)


def test_bad_input(toy):
    X, y = toy
    with pytest.raises(ValueError, match="num_selected"):
        DPSGDClassifier(steps_per_epoch=5, num_selected=6).fit(X, y)
    with pytest.raises(ValueError, match="noise_multiplier"):
        DPSGDClassifier(noise_multiplier=0.0).fit(X, y)
    with pytest.raises(ValueError, match="delta"):
        DPSGDClassifier(delta=1.0).fit(X, y)
    with pytest.raises(ValueError, match="sampler"):
        DPSGDClassifier(sampler="shuffle").fit(X, y)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        DPSGDClassifier(hidden_layer_sizes=(0,), noise_multiplier=1.0).fit(X, y)
    with pytest.raises(ValueError, match="unreachable"):
        DPSGDClassifier(target_epsilon=1e-6, steps_per_epoch=10, num_selected=10).fit(X, y)


class _RecordingUnpickler(pickle.Unpickler):
    """Unpickles while noting every class or function the bytes name."""

    def __init__(self, data):
        super().__init__(io.BytesIO(data))
        self.names = set()

    def find_class(self, module, name):
        self.names.add(f"{module}.{name}")
        return super().find_class(module, name)


@pytest.mark.parametrize("sampler", ["bis", "poisson"])
def test_a_pickled_model_carries_no_batch_allocation(sampler):
    # The amplification by partitioning needs the allocation (which rows joined which step)
    # to stay secret; a shared model must not carry it, and its size must not grow with n.
    if sampler == "poisson":
        pytest.importorskip("dp_accounting")
    sizes, models = {}, {}
    for n in (300, 3000):
        X, y = make_classification(n_samples=n, n_features=3, n_informative=2,
                                   n_redundant=0, random_state=0)
        clf = DPSGDClassifier(noise_multiplier=1.0, steps_per_epoch=10, num_selected=2,
                              max_epochs=1, sampler=sampler, random_state=0).fit(X, y)
        data = pickle.dumps(clf)
        sizes[n], models[n] = len(data), (clf, data, X)
    assert sizes[3000] - sizes[300] < 2_000, sizes  # no O(n) state: 10x the rows, same size
    clf, data, X = models[3000]
    unpickler = _RecordingUnpickler(data)
    loaded = unpickler.load()
    assert not any("_partition_samplers" in name or "numpy.random" in name
                   for name in unpickler.names), sorted(unpickler.names)
    assert loaded.net_.dp_sampler is None and loaded.net_.parts_ is None
    assert all(record["batches"] == [] for record in loaded.net_.history_)
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    # training more needs a new fit (the allocation is gone), with a clear message
    with pytest.raises(ValueError, match="forgot its batch allocation"):
        loaded.net_.partial_fit(X.astype(np.float32), np.zeros(len(X), dtype=np.float32))
