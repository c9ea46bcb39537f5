"""The shared skorch helpers: seeding, threads, devices, labels."""

import io
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")

from sklearn_icml.utils import draw_seed  # noqa: E402
from sklearn_icml.utils._skorch import (  # noqa: E402
    check_device,
    encode_class_labels,
    features_to_float32,
    seeded,
    torch_threads,
)


def test_draw_seed_follows_random_state():
    assert draw_seed(3) == draw_seed(3) != draw_seed(4)
    rng = np.random.RandomState(0)
    assert draw_seed(rng) != draw_seed(rng)  # a RandomState advances


def test_seeded_is_reproducible_and_restores_the_global_rng():
    torch.manual_seed(0)
    before = torch.get_rng_state()
    with seeded(7):
        a = torch.randn(3)
    assert torch.equal(torch.get_rng_state(), before)
    with seeded(7):
        assert torch.equal(torch.randn(3), a)


def test_torch_threads_restores_even_on_error():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), torch_threads(1):
        assert torch.get_num_threads() == 1
        raise RuntimeError
    assert torch.get_num_threads() == before
    with torch_threads(None):  # n_jobs=None is one worker, as everywhere in the library
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_check_device():
    assert check_device("cpu") == "cpu"
    assert check_device(torch.device("cpu")) == "cpu"
    with pytest.raises(ValueError, match="torch device"):
        check_device("tpu7")
    with pytest.raises(TypeError, match="device must be"):
        check_device(0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            check_device("cuda")


def test_encode_class_labels():
    classes, index = encode_class_labels(np.array([[2], [0], [2]]).ravel())
    assert list(classes) == [0, 2] and list(index) == [1, 0, 1] and index.dtype == np.int64
    with pytest.raises(ValueError, match="only 1 class"):
        encode_class_labels([1, 1])
    with pytest.raises(ValueError, match="Unknown label type"):
        encode_class_labels([0.5, 1.5])


def test_features_to_float32_copies_and_never_modifies():
    X = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = features_to_float32(X)
    out[0, 0] = 99
    assert X[0, 0] == 0 and out.dtype == np.float32 and out.flags.c_contiguous


def test_base_checks_the_trained_weights_are_finite():
    from types import SimpleNamespace

    from sklearn_icml.base import BaseNeuralEstimator
    from sklearn_icml.utils._params import store_params

    class Net(BaseNeuralEstimator):
        def __init__(self, *, device="cpu", n_jobs=1, random_state=None, verbose=0, **kwargs):
            store_params(self, locals())

        def fit(self, X, y):
            return self

    net = Net(module__hidden=3)
    assert net.get_params() == {
        "device": "cpu", "n_jobs": 1, "random_state": None, "verbose": 0, "module__hidden": 3
    }
    module = torch.nn.Linear(2, 1)
    net.net_ = SimpleNamespace(module_=module)
    net._check_finite_parameters()  # finite: no error
    with torch.no_grad():
        module.bias.fill_(float("nan"))
    with pytest.raises(ValueError, match="'bias' became non-finite; lower learning_rate"):
        net._check_finite_parameters()


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_plain_print_log_colours_only_on_a_terminal(monkeypatch):
    from sklearn_icml.utils._skorch import PlainPrintLog

    row = {"epoch": 2, "train_loss": 0.25, "train_loss_best": True, "dur": 0.5}
    log = PlainPrintLog().initialize()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    table = log.table(row)
    assert "\x1b" not in table and "0.2500*" in table
    assert table.splitlines()[0].split()[-1] == "elapsed"  # the fit's clock, last
    monkeypatch.setattr(sys, "stdout", _Terminal())
    assert "\x1b" in log.table(row)  # skorch's colours where they show as colours
    log = PlainPrintLog(sink=lambda text: None).initialize()
    assert "\x1b" not in log.table(row)  # a sink other than print is never a terminal


def test_verbose_neural_fit_writes_a_plain_table_with_elapsed_time(capsys):
    from sklearn_icml.datasets import make_streaming_parity
    from sklearn_icml.neural import StreamingParityRNNClassifier

    X, y = make_streaming_parity(max_length=5)
    StreamingParityRNNClassifier(hidden_size=8, max_epochs=3, random_state=0, verbose=1).fit(
        X, y
    )
    out = capsys.readouterr().out
    assert "\x1b" not in out and "train_loss" in out and "elapsed" in out
    assert len(out.strip().splitlines()) == 2 + 3  # header, rule, one row per epoch
