"""DWMCausalLM: the bi-level schedule on a LoRA of a Hugging Face causal LM."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from sklearn_icml.datasets import make_tiny_causal_lm  # noqa: E402
from sklearn_icml.weighting import (  # noqa: E402
    CausalLMLearner,
    DWMCausalLM,
    one_step_hypergradient,
)
from sklearn_icml.weighting._bilevel import sequence_nll  # noqa: E402

FAST = {"lora_rank": 2, "max_iter": 4, "n_stages": 2, "dwm_steps_per_stage": 1,
        "batch_size": 4, "val_batch_size": 4, "random_state": 0}


@pytest.fixture(scope="module")
def tiny():
    return make_tiny_causal_lm(hidden_size=16, n_layers=1, n_heads=2, random_state=0)


def _tokens(seed, n=20, length=10):
    return np.random.default_rng(seed).integers(3, 259, size=(n, length))


def test_only_the_lora_trains_and_the_callers_model_is_unchanged(tiny):
    model, _ = tiny
    before = {k: v.clone() for k, v in model.state_dict().items()}
    X = _tokens(0)
    lm = DWMCausalLM(model=model, **FAST).fit(X)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    trainable = {n for n, p in lm.module_.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    moved = [n for n, p in lm.module_.named_parameters() if "lora_B" in n and p.abs().sum() > 0]
    assert moved  # B starts at zero: the LoRA was trained
    assert lm.stage_weight_sums_.shape == (2, 20) and lm.n_iter_ == 4


def test_same_seed_same_result(tiny):
    model, _ = tiny
    X = _tokens(1)
    a = DWMCausalLM(model=model, **FAST).fit(X).score_samples(X)
    b = DWMCausalLM(model=model, **FAST).fit(X).score_samples(X)
    np.testing.assert_array_equal(a, b)


def test_the_two_hypergradients_agree_on_the_learner(tiny):
    model, _ = tiny
    learner = CausalLMLearner(model, lora_rank=2)
    for p in learner.parameters():  # move B off zero so that the LoRA matters
        if p.requires_grad:
            torch.nn.init.normal_(p, std=0.1)
    X, V = torch.as_tensor(_tokens(2, 6, 8)), torch.as_tensor(_tokens(3, 4, 8))
    w = torch.ones(6)
    exact = one_step_hypergradient(learner, sequence_nll, (X, X), (V, V), w, 0.1, mode="exact")
    first = one_step_hypergradient(learner, sequence_nll, (X, X), (V, V), w, 0.1,
                                   mode="first_order")
    torch.testing.assert_close(exact, first, rtol=1e-3, atol=1e-7)


def test_weighting_model_transfers_to_another_rank(tiny):
    model, _ = tiny
    X = _tokens(4)
    source = DWMCausalLM(model=model, **FAST).fit(X)
    target = DWMCausalLM(model=model, **{**FAST, "lora_rank": 4, "dwm_steps_per_stage": 0},
                         warm_start_dwm=source).fit(X)
    w = target.compute_weights(X)
    assert w.shape == (20,) and np.all(np.isfinite(w)) and np.all(w >= 0)


def test_bad_input(tiny):
    model, _ = tiny
    with pytest.raises(ValueError, match="needs model="):
        DWMCausalLM(**FAST).fit(_tokens(0))
    with pytest.raises(ValueError, match="outside the model's vocabulary of 259"):
        DWMCausalLM(model=model, **FAST).fit(np.full((20, 6), 300))
    with pytest.raises(ValueError, match="'model' parameter"):
        DWMCausalLM(model="gpt2", **FAST).fit(_tokens(0))
