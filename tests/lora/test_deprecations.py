"""Renamed and moved LoRA names: the old spelling warns (FutureWarning), same result."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")

from sklearn_icml.datasets import make_lora_collection  # noqa: E402
from sklearn_icml.lora import (  # noqa: E402
    FlatLoRACallback,
    FlatLoRAClassifier,
    FlatLoRAPerturbation,
    FlatLoRARegressor,
    compress_peft_collection,
    inject_lora,
)
from sklearn_icml.lora._serving_timing import time_multi_lora_forward  # noqa: E402

FAST = {"hidden_layer_sizes": (8,), "lora_rank": 2, "max_epochs": 2, "batch_size": 16,
        "random_state": 0}


def _data(seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(40, 3)
    return X, (X[:, 0] > 0).astype(int), X @ [1.0, -1.0, 0.5]


@pytest.mark.parametrize("Estimator", [FlatLoRAClassifier, FlatLoRARegressor])
def test_lr_is_the_deprecated_name_of_learning_rate(Estimator):
    X, y_class, y_real = _data()
    y = y_class if Estimator is FlatLoRAClassifier else y_real
    new = Estimator(learning_rate=0.05, **FAST).fit(X, y)
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        old = Estimator(lr=0.05, **FAST).fit(X, y)
    np.testing.assert_array_equal(old.predict(X), new.predict(X))
    with pytest.raises(ValueError, match="pass only learning_rate"):
        Estimator(lr=0.05, learning_rate=0.1, **FAST).fit(X, y)


def _model():
    torch.manual_seed(0)
    return inject_lora(torch.nn.Sequential(torch.nn.Linear(6, 4)), rank=2)


@pytest.mark.parametrize("cls", [FlatLoRAPerturbation, FlatLoRACallback])
def test_constructor_parameters_are_keyword_only(cls):
    with pytest.warns(FutureWarning, match="rho, schedule as keyword arguments"):
        old = cls(0.2, "constant")
    assert old.get_params() == cls(rho=0.2, schedule="constant").get_params()


def test_attach_and_expected_sharpness_take_keywords():
    model = _model()
    with pytest.warns(FutureWarning, match="total_steps"):
        old = FlatLoRAPerturbation(rho=0.1, random_state=0).attach(model, 10)
    assert old.total_steps_ == 10
    batch = (torch.randn(8, 6), torch.randint(4, (8,)))
    loss = torch.nn.functional.cross_entropy
    new_value = FlatLoRAPerturbation(rho=0.1, random_state=0).expected_sharpness(
        model, loss, batch, n_samples=3)
    with pytest.warns(FutureWarning, match="n_samples"):
        old_value = FlatLoRAPerturbation(rho=0.1, random_state=0).expected_sharpness(
            model, loss, batch, 3)
    assert old_value == new_value


def test_compress_peft_collection_rank_is_keyword_only():
    B, A = make_lora_collection(4, d_out=12, d_in=10, adapter_rank=2, basis_rank=3,
                                random_state=0)
    dicts = [{"m.lora_A.weight": A[i], "m.lora_B.weight": B[i]} for i in range(4)]
    new = compress_peft_collection(dicts, rank=3, random_state=0)
    with pytest.warns(FutureWarning, match="rank"):
        old = compress_peft_collection(dicts, 3, random_state=0)
    np.testing.assert_array_equal(old["m"].U_, new["m"].U_)


def test_benchmark_multi_lora_forward_is_deprecated():
    from sklearn_icml.lora import benchmark_multi_lora_forward

    args = (16, 16, 2, 4, [1, 3])
    kwargs = {"batch": 2, "tokens": 1, "n_repeats": 1, "n_warmup": 0, "random_state": 0}
    new = time_multi_lora_forward(*args, **kwargs)
    with pytest.warns(FutureWarning, match="benchmark harness"):
        old = benchmark_multi_lora_forward(*args, **kwargs)
    for key in ("n_adapters", "shared_memory_bytes", "separate_memory_bytes", "settings"):
        assert old[key] == new[key]
    import sklearn_icml.lora

    assert "benchmark_multi_lora_forward" not in sklearn_icml.lora.__all__
