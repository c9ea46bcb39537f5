"""Flat-LoRA: the perturbation, its callback and estimators, and their bad inputs."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")

from skorch import NeuralNetClassifier  # noqa: E402

from sklearn_icml.lora import (  # noqa: E402
    FlatLoRACallback,
    FlatLoRAClassifier,
    FlatLoRAPerturbation,
    FlatLoRARegressor,
    inject_lora,
)
from sklearn_icml.lora._lora_layer import LoRALinear  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _layer(m=256, n=1024, r=8, dtype=torch.float32, b_scale=0.05, seed=0):
    g = torch.Generator().manual_seed(seed)
    lin = torch.nn.Linear(n, m, bias=False).to(dtype)
    with torch.no_grad():
        lin.weight.copy_((torch.rand(m, n, generator=g, dtype=dtype) * 2 - 1) / math.sqrt(n))
    layer = LoRALinear(lin, rank=r, alpha=2 * r)
    with torch.no_grad():
        layer.lora_A.copy_(torch.randn(r, n, generator=g, dtype=dtype) / math.sqrt(n))
        layer.lora_B.copy_(torch.randn(m, r, generator=g, dtype=dtype) * b_scale)
    return torch.nn.Sequential(layer)


def _merged(layer):
    return layer.weight + layer.scaling * layer.lora_B @ layer.lora_A


# noise statistics (the benchmark's E1)
def test_noise_statistics_match_filter_wise_std():
    model = _layer()
    lay = model[0]
    w0 = lay.weight.detach().clone()
    flat = FlatLoRAPerturbation(rho=0.05, random_state=3).attach(model, total_steps=100)
    flat.perturb(50)  # c = 0.5
    eps = (lay.weight - w0).detach().double()
    expected = 0.5 * 0.05 / 32 * _merged(lay).detach().double().norm(dim=1)
    # merged after perturbation differs: use the clean merged weight
    with torch.no_grad():
        clean = w0.double() + lay.scaling * (lay.lora_B @ lay.lora_A).double()
    expected = 0.5 * 0.05 / 32 * clean.norm(dim=1)
    ratio = (eps.std(dim=1) / expected).numpy()
    assert 0.98 <= np.median(ratio) <= 1.02
    assert ratio.min() >= 0.90 and ratio.max() <= 1.10
    means = (eps.mean(dim=1) / (expected / 32)).abs().numpy()
    assert means.max() <= 4.5
    np.testing.assert_allclose(flat.row_std_[0].squeeze(1).double(), expected, rtol=1e-5)
    flat.unperturb()


def test_std_uses_merged_norm():
    model = _layer(m=16, n=64, b_scale=0.5)
    lay = model[0]
    with torch.no_grad():
        lay.base_layer.weight.zero_()  # W = 0, B A != 0
    flat = FlatLoRAPerturbation(rho=0.1, schedule="constant", random_state=0)
    flat.attach(model)
    flat.perturb(0)
    assert lay.weight.abs().max() > 0
    flat.unperturb()
    with torch.no_grad():  # W' = 0: W = -s B A
        lay.base_layer.weight.copy_(-lay.scaling * lay.lora_B @ lay.lora_A)
    w0 = lay.weight.clone()
    flat.perturb(1)
    assert torch.equal(lay.weight, w0)
    assert float(flat.row_std_[0].abs().max()) == 0.0
    flat.unperturb()


# fan-in scaling
def test_fan_in_scaling():
    stds = {}
    for n in (256, 1024):
        lin = torch.nn.Linear(n, 64, bias=False)
        with torch.no_grad():
            lin.weight.fill_(1.0)
            lin.weight.div_(lin.weight.norm(dim=1, keepdim=True))  # unit row norms
        model = torch.nn.Sequential(LoRALinear(lin, rank=2))
        w0 = model[0].weight.clone()
        flat = FlatLoRAPerturbation(rho=0.1, schedule="constant", random_state=1)
        flat.attach(model).perturb(0)
        stds[n] = float((model[0].weight - w0).std())
        flat.unperturb()
    assert abs(stds[256] / stds[1024] - 2.0) <= 0.06


# schedule
def test_cosine_schedule():
    flat = FlatLoRAPerturbation(rho=1.0).attach(_layer(8, 8), total_steps=100)
    assert flat.noise_scale(0) == 0.0
    assert flat.noise_scale(50) == pytest.approx(0.5)
    assert flat.noise_scale(100) == pytest.approx(1.0)
    values = [flat.noise_scale(t) for t in range(101)]
    assert all(b >= a for a, b in zip(values, values[1:]))
    const = FlatLoRAPerturbation(rho=0.3, schedule="constant").attach(_layer(8, 8))
    assert const.noise_scale(0) == pytest.approx(0.3)


# restore (the benchmark's E2)
@pytest.mark.parametrize(
    "dtype, restore, tol",
    [
        (torch.float32, "regenerate", 1e-5),
        (torch.float32, "copy", 0.0),
        (torch.float64, "regenerate", 1e-12),
    ],
)
def test_restore_exactness(dtype, restore, tol):
    model = _layer(64, 256, dtype=dtype)
    w0 = model[0].weight.clone()
    flat = FlatLoRAPerturbation(rho=0.05, restore=restore, random_state=0)
    flat.attach(model, total_steps=2)
    for _ in range(100):
        flat.perturb(1)
        assert not torch.equal(model[0].weight, w0)
        flat.unperturb()
    err = float((model[0].weight - w0).abs().max())
    assert err <= tol * float(w0.abs().max())


def test_bfloat16_regenerate_warns():
    model = _layer(8, 16, dtype=torch.bfloat16)
    with pytest.warns(UserWarning, match="copy"):
        FlatLoRAPerturbation(rho=0.05).attach(model, total_steps=5)


def test_fit_leaves_frozen_weights_unchanged():
    X, y = _toy()
    clf = FlatLoRAClassifier(rho=0.2, max_epochs=5, random_state=0, hidden_layer_sizes=(16,))
    rho0 = FlatLoRAClassifier(rho=0.0, max_epochs=5, random_state=0, hidden_layer_sizes=(16,))
    clf.fit(X, y)
    rho0.fit(X, y)
    # the base weights come from the same seed, so they must still be equal
    for a, b in zip(clf.module_, rho0.module_):
        if isinstance(a, LoRALinear):
            w = b.weight
            assert float((a.weight - w).abs().max()) <= 1e-5 * float(w.abs().max())


# regeneration
def test_regenerated_noise_is_identical():
    model = _layer(32, 64)
    flat = FlatLoRAPerturbation(rho=0.1, restore="copy", random_state=0)
    flat._record_noise = True
    flat.attach(model, total_steps=4)
    flat.perturb(2)
    drawn = flat.recorded_noise_
    again = flat.regenerate_noise()
    assert len(drawn) == len(again) == 1
    assert float((drawn[0] - again[0]).abs().max()) == 0.0
    flat.unperturb()


# closed forms
def _single_linear(seed=0):
    g = torch.Generator().manual_seed(seed)
    lin = torch.nn.Linear(16, 8, bias=False).double()
    with torch.no_grad():
        lin.weight.copy_(torch.randn(8, 16, generator=g, dtype=torch.float64) * 0.3)
    model = torch.nn.Sequential(LoRALinear(lin, rank=2, alpha=2))
    with torch.no_grad():
        model[0].lora_A.copy_(torch.randn(2, 16, generator=g, dtype=torch.float64) * 0.3)
        model[0].lora_B.copy_(torch.randn(8, 2, generator=g, dtype=torch.float64) * 0.3)
    x = torch.randn(1, 16, generator=g, dtype=torch.float64)
    y = torch.randn(1, 8, generator=g, dtype=torch.float64)
    return model, x, y


@pytest.mark.slow
def test_perturbed_gradient_is_unbiased():
    model, x, y = _single_linear()
    B = model[0].lora_B

    def grad():
        B.grad = None
        loss = 0.5 * ((model(x) - y) ** 2).sum()
        loss.backward()
        return B.grad.detach().clone()

    clean = grad()
    flat = FlatLoRAPerturbation(rho=0.5, schedule="constant", random_state=0).attach(model)
    n = 5000  # 20,000 draws would be tighter; 5,000 keeps the test under ~15 s
    grads = torch.empty((n,) + tuple(B.shape), dtype=torch.float64)
    for i in range(n):
        flat.perturb(i)
        grads[i] = grad()
        flat.unperturb()
    mean, se = grads.mean(0), grads.std(0) / math.sqrt(n)
    assert (grads.std(0) > 0).all()
    assert float(((mean - clean).abs() / se).max()) <= 4.0


def test_expected_sharpness_closed_form():
    model, x, _ = _single_linear(1)
    with torch.no_grad():  # zero residual: the Monte Carlo error is then far below 2%
        y = model(x)
    rho = 0.3
    flat = FlatLoRAPerturbation(rho=rho, random_state=0)

    def loss_fn(out, target):
        return ((out - target) ** 2).sum()

    with torch.no_grad():
        merged = _merged(model[0])
        sig2 = (rho * merged.norm(dim=1) / math.sqrt(16)) ** 2
        expected = float((x**2).sum() * sig2.sum())
    w0 = model[0].weight.clone()
    got = flat.expected_sharpness(model, loss_fn, (x, y), n_samples=20000)
    assert got == pytest.approx(expected, rel=0.02)
    assert torch.equal(model[0].weight, w0)


# skorch helpers
def _toy(n=96, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 5).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    return X, y


class _Recorder(torch.nn.Module):
    """Wraps a LoRA MLP and records the first layer's base weight at each training forward."""

    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.body = inject_lora(
            torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)),
            rank=2,
        )
        self.plain = torch.nn.Linear(2, 2)  # not LoRA-adapted, frozen
        self.plain.requires_grad_(False)
        self.seen = []

    def forward(self, X):
        if self.training:
            self.seen.append(self.body[0].weight.detach().clone())
        return self.plain(self.body(X))


class _AccumNet(NeuralNetClassifier):
    """Gradient accumulation over ``accum`` micro-batches (skorch docs' recipe)."""

    def __init__(self, *args, accum=4, **kwargs):
        super().__init__(*args, **kwargs)
        self.accum = accum

    def train_step(self, batch, **fit_params):
        step = self.train_step_single(batch, **fit_params)
        self._micro = getattr(self, "_micro", 0) + 1
        if self._micro % self.accum == 0:
            self.optimizer_.step()
            self.optimizer_.zero_grad()
        return step


# gradient accumulation
def test_gradient_accumulation_one_perturbation_per_step():
    X, y = _toy(128)
    module = _Recorder()
    cb = FlatLoRACallback(rho=0.5, schedule="constant", accumulation_steps=4, random_state=0)
    net = _AccumNet(
        module, accum=4, criterion=torch.nn.CrossEntropyLoss, max_epochs=2, batch_size=16,
        lr=0.01, train_split=None, verbose=0, callbacks=[("flat", cb)],
        iterator_train__shuffle=False,
    )
    net.fit(X, y)
    flat = cb.flat_lora_
    # 8 micro-batches per epoch, 2 epochs: 4 optimiser steps
    assert flat.total_steps_ == 4
    assert flat.n_perturb_calls_ == 4 and flat.n_restore_calls_ == 4
    seen = module.seen
    assert len(seen) == 16
    for k in range(4):
        group = seen[4 * k : 4 * k + 4]
        assert all(torch.equal(group[0], w) for w in group[1:])
    assert not torch.equal(seen[0], seen[4])


# non-LoRA layers
def test_only_lora_layers_are_perturbed():
    module = _Recorder()
    plain0 = module.plain.weight.clone()
    flat = FlatLoRAPerturbation(rho=0.5, schedule="constant", random_state=0)
    flat.attach(module)
    assert flat.layers_ == ["body.0", "body.2"]
    flat.perturb(0)
    assert torch.equal(module.plain.weight, plain0)
    flat.unperturb()


# rho=0 is plain LoRA; seeds
def _lora_params(est):
    return [p.detach().clone() for n, p in est.module_.named_parameters() if "lora" in n]


def test_rho_zero_is_plain_lora_bitwise():
    X, y = _toy()
    kw = {"max_epochs": 4, "hidden_layer_sizes": (16,), "random_state": 7}
    flat0 = FlatLoRAClassifier(rho=0.0, **kw).fit(X, y)
    # plain LoRA: the same module, seed and optimiser without the callback
    from sklearn_icml.utils import draw_seed
    from sklearn_icml.utils._skorch import seeded

    seed = draw_seed(7)
    with seeded(seed):  # the estimator builds its module under the seed ...
        base = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
        module = inject_lora(base, rank=8, alpha=16)
        net = NeuralNetClassifier(
            module, criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.AdamW,
            optimizer__weight_decay=0.0, lr=1e-2, max_epochs=4, batch_size=64,
            iterator_train__shuffle=True, train_split=None, verbose=0,
            callbacks__print_log=None,
        )
    with seeded(seed):  # ... and fits under a fresh copy of it
        net.fit(X, y)
    plain = [p.detach() for n, p in net.module_.named_parameters() if "lora" in n]
    got = _lora_params(flat0)
    assert len(got) == len(plain) == 4
    assert all(torch.equal(a, b) for a, b in zip(got, plain))
    # and Flat-LoRA with rho > 0 differs
    flat = FlatLoRAClassifier(rho=0.1, **kw).fit(X, y)
    assert not all(torch.equal(a, b) for a, b in zip(_lora_params(flat), plain))


def test_determinism():
    X, y = _toy()
    kw = {"max_epochs": 3, "hidden_layer_sizes": (8,), "rho": 0.1}
    a = _lora_params(FlatLoRAClassifier(random_state=1, **kw).fit(X, y))
    b = _lora_params(FlatLoRAClassifier(random_state=1, **kw).fit(X, y))
    c = _lora_params(FlatLoRAClassifier(random_state=2, **kw).fit(X, y))
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert not all(torch.equal(p, q) for p, q in zip(a, c))


def test_noise_seed_independent_of_global_rng():
    model = _layer(8, 16)
    w0 = model[0].weight.clone()
    flat = FlatLoRAPerturbation(rho=0.1, schedule="constant", random_state=5).attach(model)
    flat.perturb(0)
    first = model[0].weight.clone()
    flat.unperturb()
    torch.manual_seed(123)
    torch.rand(10)
    state = torch.get_rng_state()
    flat.attach(model)
    flat.perturb(0)
    assert torch.equal(model[0].weight, first)
    assert torch.equal(torch.get_rng_state(), state)  # global RNG untouched
    flat.unperturb()
    assert float((model[0].weight - w0).abs().max()) < 1e-6


# evaluation batches are never perturbed
def test_validation_batches_never_perturbed():
    X, y = _toy(64)
    module = _Recorder()
    calls = []

    class Spy(FlatLoRACallback):
        def on_batch_begin(self, net, batch=None, training=None, **kw):
            super().on_batch_begin(net, batch=batch, training=training, **kw)
            if not training:
                calls.append(self.flat_lora_.is_perturbed)

    from skorch.dataset import ValidSplit

    net = NeuralNetClassifier(
        module, criterion=torch.nn.CrossEntropyLoss, max_epochs=3, batch_size=16, lr=0.01,
        train_split=ValidSplit(4), verbose=0,
        callbacks=[("flat", Spy(rho=1.0, schedule="constant", random_state=0))],
    )
    w0 = module.body[0].weight.clone()
    net.fit(X, y)
    assert calls and not any(calls)
    assert float((module.body[0].weight - w0).abs().max()) < 1e-5
    # predict draws nothing
    flat = dict(net.callbacks_)["flat"].flat_lora_
    n = flat.n_perturb_calls_
    w1 = module.body[0].weight.clone()
    net.predict(X)
    assert flat.n_perturb_calls_ == n
    assert torch.equal(module.body[0].weight, w1)


def test_exception_in_forward_restores_weights():
    X, y = _toy(64)

    class Boom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.net = torch.nn.Sequential(
                torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)
            )
            self.calls = 0

        def forward(self, X):
            out = self.net(X)
            self.calls += 1
            if self.training and self.calls == 3:
                raise RuntimeError("boom")
            return out

    model = Boom()
    w0 = [model.net[i].weight.detach().clone() for i in (0, 2)]
    # a module factory returns the module itself (not a copy), so its weights can be read
    clf = FlatLoRAClassifier(
        module=lambda n_features, n_outputs: model, lora_rank=2, rho=1.0, schedule="constant",
        max_epochs=2, batch_size=16, random_state=0,
    )
    with pytest.raises(RuntimeError, match="boom"):
        clf.fit(X, y)
    assert model.calls == 3
    assert all(isinstance(model.net[i], LoRALinear) for i in (0, 2))
    for i, w in zip((0, 2), w0):
        assert float((model.net[i].weight - w).abs().max()) < 1e-6
    # with a net of one's own, restore_now() in the handler does the same
    cb = FlatLoRACallback(rho=1.0, schedule="constant", random_state=0)
    model.calls = 0
    net = NeuralNetClassifier(
        model, criterion=torch.nn.CrossEntropyLoss, max_epochs=2, batch_size=16, lr=0.01,
        train_split=None, verbose=0, callbacks=[("flat", cb)],
    )
    with pytest.raises(RuntimeError, match="boom"):
        try:
            net.fit(X, y)
        except RuntimeError:
            assert cb.flat_lora_.is_perturbed
            cb.restore_now()
            raise
    assert cb.flat_lora_.n_perturb_calls_ == 3
    for i, w in zip((0, 2), w0):
        assert float((model.net[i].weight - w).abs().max()) < 1e-6


# estimators
def test_regressor_and_pandas_and_user_module_not_modified():
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)
    X = pd.DataFrame(rng.randn(120, 3), columns=["a", "b", "c"])
    y = X.to_numpy() @ np.array([1.0, -1.0, 0.5])
    pre = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    state = {k: v.clone() for k, v in pre.state_dict().items()}
    reg = FlatLoRARegressor(module=pre, max_epochs=30, random_state=0).fit(X, y)
    assert list(reg.feature_names_in_) == ["a", "b", "c"]
    assert reg.predict(X).shape == (120,)
    assert reg.score(X, y) > 0.8
    assert all(torch.equal(state[k], v) for k, v in pre.state_dict().items())
    assert all(not isinstance(m, LoRALinear) for m in pre.modules())


def test_peft_backend():
    pytest.importorskip("peft")
    from sklearn_icml.utils import optional_import

    optional_import("peft", "bench")
    X, y = _toy()
    clf = FlatLoRAClassifier(lora_backend="peft", hidden_layer_sizes=(8,), max_epochs=3,
                             rho=0.1, random_state=0).fit(X, y)
    assert len(clf.flat_lora_.layers_) == 2
    assert clf.predict(X).shape == (96,)
    # the perturbation finds peft's layers and restores them
    model = clf.module_
    flat = FlatLoRAPerturbation(rho=0.5, schedule="constant", random_state=0).attach(model)
    mods = [m for m in model.modules() if hasattr(m, "get_base_layer") and hasattr(m, "lora_A")
            and isinstance(getattr(m, "scaling", None), dict)]
    w0 = mods[0].get_base_layer().weight.clone()
    flat.perturb(0)
    assert not torch.equal(mods[0].get_base_layer().weight, w0)
    flat.unperturb()
    assert float((mods[0].get_base_layer().weight - w0).abs().max()) < 1e-6


# bad input
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rho": -0.1}, "rho"),
        ({"rho": float("nan")}, "rho"),
        ({"rho": float("inf")}, "rho"),
        ({"interval": 0}, "interval"),
        ({"schedule": "linear"}, "schedule"),
        ({"restore": "undo"}, "restore"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FlatLoRAPerturbation(**kwargs).attach(_layer(4, 4), total_steps=3)


def test_bad_schedule_output():
    flat = FlatLoRAPerturbation(schedule=lambda t, T: 1.5).attach(_layer(4, 4), total_steps=3)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        flat.perturb(0)
    assert not flat.is_perturbed


def test_no_lora_layers():
    with pytest.raises(ValueError, match="no LoRA-adapted Linear layers"):
        FlatLoRAPerturbation().attach(torch.nn.Linear(3, 2), total_steps=3)


@pytest.mark.parametrize("total", [None, 0])
def test_total_steps_required_for_cosine(total):
    with pytest.raises(ValueError, match="total_steps"):
        FlatLoRAPerturbation(schedule="cosine").attach(_layer(4, 4), total_steps=total)


def test_quantised_base_weight_refused():
    model = _layer(4, 4)
    model[0].base_layer.weight = torch.nn.Parameter(
        torch.zeros(4, 4, dtype=torch.int8), requires_grad=False
    )
    with pytest.raises(TypeError, match="floating"):
        FlatLoRAPerturbation().attach(model, total_steps=3)


def test_bad_estimator_and_callback_params():
    X, y = _toy()
    with pytest.raises(ValueError, match="rho"):
        FlatLoRAClassifier(rho=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="restore"):
        FlatLoRAClassifier(restore="undo").fit(X, y)
    with pytest.raises(ValueError, match="accumulation_steps"):
        FlatLoRACallback(accumulation_steps=0).initialize()
    with pytest.raises(ValueError, match="target_modules"):
        FlatLoRAClassifier(target_modules=("Conv2d",), max_epochs=1).fit(X, y)


def test_perturbation_and_callback_are_estimators():
    from sklearn.base import clone

    flat = FlatLoRAPerturbation(rho=0.1, restore="copy", random_state=3)
    assert flat.get_params()["restore"] == "copy" and flat.restore == "copy"
    assert flat.set_params(restore="regenerate", interval=2) is flat
    assert clone(flat).get_params() == flat.get_params()
    assert repr(flat) == "FlatLoRAPerturbation(interval=2, random_state=3, rho=0.1)"
    cb = FlatLoRACallback(rho=0.2, accumulation_steps=2)
    assert clone(cb).set_params(rho=0.3).initialize().flat_lora_.rho == 0.3
    with pytest.raises(TypeError, match="interval"):
        FlatLoRAPerturbation(interval=1.5).attach(_layer(4, 4), total_steps=3)


def test_routed_net_parameters():
    X, y = _toy()
    clf = FlatLoRAClassifier(hidden_layer_sizes=(8,), max_epochs=2, random_state=0,
                             optimizer__betas=(0.8, 0.9))
    assert clf.get_params()["optimizer__betas"] == (0.8, 0.9)
    clf.fit(X, y)
    assert clf.net_.optimizer_.param_groups[0]["betas"] == (0.8, 0.9)
