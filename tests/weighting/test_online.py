"""The online DWM variant: each DWM update also commits its look-ahead step."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skorch = pytest.importorskip("skorch")

from sklearn.datasets import make_classification  # noqa: E402

from sklearn_icml.weighting import DWMClassifier, one_step_hypergradient  # noqa: E402
from sklearn_icml.weighting._hypergradient import weighted_sgd_step  # noqa: E402

FAST = {"hidden_layer_sizes": (8,), "max_iter": 30, "n_stages": 3, "dwm_steps_per_stage": 4,
        "batch_size": 16, "random_state": 0}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    from sklearn_icml.utils._skorch import torch_threads

    with torch_threads(1):
        yield


def _squared_error(out, y):
    return (out.squeeze(-1) - y) ** 2


def test_committed_step_is_the_linear_closed_form_and_the_lookahead_point():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).double()
    X, y = torch.randn(5, 3, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    Xv, yv = torch.randn(7, 3, dtype=torch.float64), torch.randn(7, dtype=torch.float64)
    w = torch.rand(5, dtype=torch.float64) + 0.5
    lr = 0.3
    W, b = model.weight.detach().clone(), model.bias.detach().clone()
    resid = X @ W[0] + b - y
    W_ref = W[0] - lr * (2 / 5) * (w * resid) @ X
    b_ref = b - lr * (2 / 5) * (w * resid).sum()
    _, val_at_lookahead = one_step_hypergradient(
        model, _squared_error, (X, y), (Xv, yv), w, lr, return_val_loss=True
    )
    loss = weighted_sgd_step(model, _squared_error, (X, y), w, lr)
    assert loss == pytest.approx(float((w * resid**2).mean()))
    torch.testing.assert_close(model.weight.detach()[0], W_ref)
    torch.testing.assert_close(model.bias.detach(), b_ref)
    # the committed parameters are the theta' whose validation loss the DWM minimised
    with torch.no_grad():
        val_now = float(_squared_error(model(Xv), yv).mean())
    assert val_now == pytest.approx(val_at_lookahead, rel=1e-12)
    assert model.weight.grad is None


class _Snapshots(skorch.callbacks.Callback):
    def initialize(self):
        self.events = []
        return self

    def _snap(self, net, kind):
        self.events.append((kind, [p.detach().clone() for p in net.module_.parameters()],
                            [p.detach().clone() for p in net.bilevel.model.parameters()]))

    def on_train_begin(self, net, **kwargs):
        self._snap(net, "train_begin")

    def on_epoch_begin(self, net, **kwargs):
        self._snap(net, "epoch_begin")

    def on_epoch_end(self, net, **kwargs):
        self._snap(net, "epoch_end")


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def test_online_variant_moves_the_learner_in_dwm_phases_only_when_enabled():
    X, y = make_classification(n_samples=120, n_features=5, n_informative=3, n_classes=3,
                               random_state=0)
    fits = {}
    for online in (False, True):
        clf = DWMClassifier(**FAST, online=online, callbacks=[("snap", _Snapshots())])
        fits[online] = clf.fit(X, y)
        events = dict(clf.net_.callbacks_)["snap"].events
        for before, after in zip(events[:-1], events[1:]):
            if after[0] == "epoch_begin":  # a DWM phase in between
                assert _same(before[1], after[1]) is not online
                assert not _same(before[2], after[2])
            else:  # a learner phase: the DWM stays frozen in both variants
                assert _same(before[2], after[2])
    assert fits[False].n_online_steps_ == 0 and fits[True].n_online_steps_ == 3 * 4
    assert fits[False].n_iter_ == fits[True].n_iter_ == 30
    # the look-ahead steps change what the DWM sees from stage 2 on, not in stage 1
    a, b = (fits[k].stage_weight_stats_ for k in (False, True))
    np.testing.assert_allclose(a[0]["dwm_val_losses"][:1], b[0]["dwm_val_losses"][:1])
    assert not np.allclose(a[1]["dwm_val_losses"], b[1]["dwm_val_losses"])
    assert np.all(np.isfinite(fits[True].predict_proba(X)))


def test_online_must_be_boolean():
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    with pytest.raises(ValueError, match="online"):
        DWMClassifier(**FAST, online="yes").fit(X, y)
