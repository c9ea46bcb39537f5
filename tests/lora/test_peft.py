"""compress_peft_collection on peft-style state dicts (no peft needed) and on real peft."""

import warnings

import numpy as np
import pytest

from sklearn_icml.datasets import make_lora_collection
from sklearn_icml.lora import (
    ClusteredJointLoRACompressor,
    JointLoRACompressor,
    compress_peft_collection,
)

PREFIX = "base_model.model.model.layers.0.self_attn"


def state_dicts(n=8, rank=4, seed=0, name=None):
    """peft's key naming: <module>.lora_A[.<adapter>].weight (r x d_in), lora_B (d_out x r)."""
    Bq, Aq = make_lora_collection(n, d_out=24, d_in=20, adapter_rank=rank, basis_rank=6,
                                  random_state=seed)
    Bv, Av = make_lora_collection(n, d_out=16, d_in=20, adapter_rank=rank, basis_rank=5,
                                  random_state=seed + 1)
    tag = f".{name}" if name else ""
    dicts = []
    for i in range(n):
        dicts.append({
            f"{PREFIX}.q_proj.lora_A{tag}.weight": Aq[i],
            f"{PREFIX}.q_proj.lora_B{tag}.weight": Bq[i],
            f"{PREFIX}.v_proj.lora_A{tag}.weight": Av[i],
            f"{PREFIX}.v_proj.lora_B{tag}.weight": Bv[i],
            f"{PREFIX}.v_proj.base_layer.weight": np.zeros((16, 20)),  # ignored
        })
    return dicts, (Bq, Aq), (Bv, Av)


def test_one_compressor_per_module_with_scaling_folded():
    dicts, (Bq, Aq), (Bv, Av) = state_dicts()
    configs = [{"lora_alpha": 2.0 * (i + 1), "r": 4} for i in range(8)]
    comps = compress_peft_collection(dicts, rank=6, adapter_configs=configs, random_state=0)
    assert list(comps) == [f"{PREFIX}.q_proj", f"{PREFIX}.v_proj"]
    q = comps[f"{PREFIX}.q_proj"]
    assert isinstance(q, JointLoRACompressor) and q.shapes_ == (24, 20)
    assert comps[f"{PREFIX}.v_proj"].shapes_ == (16, 20)
    scale = np.array([c["lora_alpha"] / 4 for c in configs])
    for i, (bh, ah) in enumerate(q.inverse_transform(q.cores_)):
        np.testing.assert_allclose(bh @ ah, scale[i] * Bq[i] @ Aq[i], atol=1e-9)
    ref = JointLoRACompressor(rank=6, random_state=0).fit((Bq * scale[:, None, None], Aq))
    np.testing.assert_allclose(q.cores_, ref.cores_, atol=1e-10)


def test_rslora_alpha_pattern_named_adapters_and_clusters():
    dicts, (Bq, Aq), (Bv, Av) = state_dicts(name="default")
    config = {"lora_alpha": 8, "use_rslora": True, "alpha_pattern": {"v_proj": 2}}
    comps = compress_peft_collection({f"a{i}": d for i, d in enumerate(dicts)}, rank=6,
                                     n_clusters=2, random_state=0,
                                     adapter_configs={f"a{i}": config for i in range(8)})
    assert all(isinstance(c, ClusteredJointLoRACompressor) for c in comps.values())
    # q keeps alpha 8 / sqrt(4) = 4, v takes the pattern's alpha 2 / sqrt(4) = 1
    for module, scale, (B, A) in (("q_proj", 4.0, (Bq, Aq)), ("v_proj", 1.0, (Bv, Av))):
        comp = comps[f"{PREFIX}.{module}"]
        for i, c in enumerate(comp.labels_):
            hat = comp.U_[c] @ comp.cores_[i] @ comp.V_[c].T
            np.testing.assert_allclose(hat, scale * B[i] @ A[i], atol=1e-9)
    diag = compress_peft_collection(dicts, rank=6, core="diag")
    assert diag[f"{PREFIX}.q_proj"].cores_.shape == (8, 6)


def test_torch_bfloat16_state_dicts():
    torch = pytest.importorskip("torch")
    dicts, (Bq, Aq), _ = state_dicts()
    tensors = [{k: torch.tensor(v, dtype=torch.bfloat16) for k, v in d.items()} for d in dicts]
    comps = compress_peft_collection(tensors, rank=6,
                                     adapter_configs=[{"lora_alpha": 8}] * 8)
    q = comps[f"{PREFIX}.q_proj"]
    # folded in float64 from the bfloat16 values
    Bbf = np.stack([d[f"{PREFIX}.q_proj.lora_B.weight"].double().numpy() for d in tensors])
    Abf = np.stack([d[f"{PREFIX}.q_proj.lora_A.weight"].double().numpy() for d in tensors])
    ref = JointLoRACompressor(rank=6).fit((2.0 * Bbf, Abf))
    np.testing.assert_allclose(q.cores_, ref.cores_, atol=1e-10)


def test_bad_collections_of_state_dicts_raise():
    dicts, _, _ = state_dicts(n=3)
    with pytest.raises(ValueError, match="empty"):
        compress_peft_collection([], rank=2)
    with pytest.raises(TypeError, match="'adapter_state_dicts' parameter"):
        compress_peft_collection("adapter.safetensors", rank=2)
    missing = dict(dicts[1])
    del missing[f"{PREFIX}.q_proj.lora_B.weight"]
    with pytest.raises(ValueError, match="no lora_B"):
        compress_peft_collection([dicts[0], missing], rank=2)
    other = {k: v for k, v in dicts[1].items() if "v_proj" not in k}
    with pytest.raises(ValueError, match="same modules"):
        compress_peft_collection([dicts[0], other], rank=2)
    with pytest.raises(ValueError, match="one config per adapter"):
        compress_peft_collection(dicts, rank=2, adapter_configs=[{"lora_alpha": 1}])
    with pytest.raises(ValueError, match="lora_alpha"):
        compress_peft_collection(dicts, rank=2, adapter_configs=[{"r": 4}] * 3)
    with pytest.raises(ValueError, match="no '<module>.lora_A.weight'"):
        compress_peft_collection([{"w": np.zeros(3)}], rank=2)
    two = dict(dicts[0])
    two[f"{PREFIX}.q_proj.lora_A.other.weight"] = dicts[1][f"{PREFIX}.q_proj.lora_A.weight"]
    with pytest.raises(ValueError, match="two lora_A weights"):
        compress_peft_collection([two], rank=2)
    with pytest.raises(ValueError, match="rank"):
        compress_peft_collection(dicts, rank=30)
    with pytest.raises(ValueError, match="n_clusters must be <="):
        compress_peft_collection(dicts, rank=2, n_clusters=4)


@pytest.mark.slow
def test_real_peft_adapters_reconstruct_peft_delta_weights():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peft = pytest.importorskip("peft")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = torch.nn.Linear(12, 10)
            self.v_proj = torch.nn.Linear(12, 8)

    deltas, dicts, configs = [], [], []
    for i in range(3):  # ranks 2, 3, 2: a shared rank of 7 is exact
        torch.manual_seed(i)
        config = peft.LoraConfig(r=2 + i % 2, lora_alpha=4 + i, init_lora_weights=False,
                                 target_modules=["q_proj", "v_proj"], use_rslora=bool(i % 2))
        model = peft.get_peft_model(Net(), config)
        dicts.append(peft.get_peft_model_state_dict(model))
        configs.append(config)
        deltas.append({m: getattr(model.base_model.model, m).get_delta_weight("default")
                       .detach().double().numpy() for m in ("q_proj", "v_proj")})
    comps = compress_peft_collection(dicts, rank=7, adapter_configs=configs)
    for module in ("q_proj", "v_proj"):
        comp = comps[f"base_model.model.{module}"]
        for i, (bh, ah) in enumerate(comp.inverse_transform(comp.cores_)):
            np.testing.assert_allclose(bh @ ah, deltas[i][module], atol=1e-5)
