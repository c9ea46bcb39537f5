"""TransformersLLM: the in-process LLM client, on the tiny random model (and one slow test on
SmolLM2)."""

import threading

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from sklearn_icml.datasets import make_tiny_causal_lm  # noqa: E402
from sklearn_icml.mas import (  # noqa: E402
    MASExecutor,
    TransformersLLM,
    code_mas_pool,
)


@pytest.fixture(scope="module")
def tiny():
    return make_tiny_causal_lm(random_state=0)


def _llm(tiny, **params):
    model, tokenizer = tiny
    return TransformersLLM(model=model, tokenizer=tokenizer, **{"max_new_tokens": 6, **params})


class _AlwaysStops(torch.nn.Module):
    """The tiny model with the end token's logit raised: every reply ends at once."""

    def __init__(self, inner, stop_id):
        super().__init__()
        self.inner, self.config, self.stop_id = inner, inner.config, stop_id

    def forward(self, **kwargs):
        out = self.inner(**kwargs)
        out.logits[..., self.stop_id] += 1e4
        return out


def test_greedy_is_deterministic_and_cut_at_the_token_limit(tiny):
    llm = _llm(tiny)
    first = llm("Add 2 and 3.", 0.0)
    assert isinstance(first, str)
    assert first == llm("Add 2 and 3.", 0.0) == _llm(tiny)("Add 2 and 3.", 0.0)
    # the random-weight model emits no end token: each reply is cut at max_new_tokens
    assert (llm.n_calls_, llm.n_cut_, llm.n_new_tokens_, llm.n_batches_) == (2, 2, 12, 2)
    assert llm.generate_seconds_ > 0


def test_sampling_is_seeded_and_new_per_repeat(tiny):
    a, b = _llm(tiny, random_state=3), _llm(tiny, random_state=3)
    replies_a = [a("Add 2 and 3.", 1.0) for _ in range(3)]
    replies_b = [b("Add 2 and 3.", 1.0) for _ in range(3)]
    assert replies_a == replies_b  # same seed, same result
    assert len(set(replies_a)) > 1  # a repeated prompt is a new sample
    other = _llm(tiny, random_state=4)
    assert [other("Add 2 and 3.", 1.0) for _ in range(3)] != replies_a
    # set_params starts the random stream over
    a.set_params(random_state=3)
    assert a("Add 2 and 3.", 1.0) == replies_a[0] and a.n_calls_ == 1


def test_a_stop_token_ends_the_reply(tiny):
    model, tokenizer = tiny
    llm = TransformersLLM(model=_AlwaysStops(model, tokenizer.eos_token_id),
                          tokenizer=tokenizer, max_new_tokens=6)
    assert llm("hello", 0.0) == "" and llm("hello", 0.7) == ""
    assert (llm.n_cut_, llm.n_new_tokens_) == (0, 2)
    assert tokenizer.eos_token_id in llm.stop_token_ids_


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_a_batch_gives_the_replies_of_single_calls(tiny, temperature):
    prompts = ["a", "a longer prompt", "a", "x" * 40]
    single = _llm(tiny)
    expected = [single(p, temperature) for p in prompts]
    batched = _llm(tiny, batch_size=8)
    assert batched.call_batch(prompts, temperature) == expected
    assert (batched.n_calls_, batched.n_batches_) == (4, 1)
    small = _llm(tiny, batch_size=3)
    assert small.call_batch(prompts, temperature) == expected and small.n_batches_ == 2


def test_concurrent_calls_from_threads_are_batched(tiny):
    prompts = [f"task {i}" for i in range(6)]
    expected = [_llm(tiny)(p, 0.7) for p in prompts]
    llm = _llm(tiny, batch_size=8, batch_wait=0.5)
    got = [None] * len(prompts)

    def work(i):
        got[i] = llm(prompts[i], 0.7)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert got == expected
    assert llm.n_calls_ == 6 and llm.n_batches_ < 6


def test_limits_and_bad_input(tiny):
    model, tokenizer = tiny
    llm = _llm(tiny, max_new_tokens=200)  # the tiny model's context is 256 tokens
    with pytest.raises(ValueError, match=r"prompt has \d+ tokens, more than max_length=56"):
        llm("y" * 80, 0.0)
    with pytest.raises(ValueError, match=r"prompts\[1\] has"):
        llm.call_batch(["ok", "y" * 80], 0.0)
    with pytest.raises(ValueError, match="temperature must be a finite float >= 0"):
        llm("ok", -1.0)
    with pytest.raises(TypeError, match="prompt must be a str. Got int"):
        llm(3, 0.0)
    with pytest.raises(TypeError, match="prompts must be a list"):
        llm.call_batch("ok", 0.0)
    with pytest.raises(ValueError, match="max_new_tokens must be smaller than the model's "
                                         "context length"):
        TransformersLLM(model=model, tokenizer=tokenizer, max_new_tokens=256)("ok", 0.0)
    with pytest.raises(ValueError, match="model and tokenizer must be"):
        TransformersLLM(tokenizer=tokenizer)("ok", 0.0)
    with pytest.raises(TypeError, match="tokenizer must be a Hugging Face tokenizer"):
        TransformersLLM(model=model, tokenizer="gpt2")("ok", 0.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        TransformersLLM(model=model, tokenizer=tokenizer, max_new_tokens=0)("ok", 0.0)


def test_a_mas_runs_in_the_sandbox_with_the_local_llm(tiny):
    llm = _llm(tiny, max_new_tokens=4)
    executor = MASExecutor(llm=llm, timeout=60.0)
    by_name = {p.name: p for p in code_mas_pool(n_samples=3)}
    result = executor.execute(by_name["code_vote"], "def f(x):\n    'Twice x.'\n")
    assert result.error is None and isinstance(result.answer, str)
    # three writers; no fenced code from a random model, so no judge
    assert result.n_calls == 3 == llm.n_calls_
    # a prompt longer than the context comes back into the program as an error
    result = executor.execute(by_name["code_single"], "z" * 300)
    assert result.answer is None and "ValueError" in result.error
    assert "more than max_length" in result.error


@pytest.mark.slow
def test_smollm2_writes_code_that_is_run_and_tested():
    from sklearn_icml.datasets import load_humaneval, load_smollm2
    from sklearn_icml.mas import check_program, completion_program

    torch.set_num_threads(1)
    model, tokenizer = load_smollm2()
    problem = load_humaneval(n_problems=3)[2]  # truncate_number: a one-line body
    llm = TransformersLLM(model=model, tokenizer=tokenizer, max_new_tokens=64)
    single = {p.name: p for p in code_mas_pool()}["code_single"]
    result = MASExecutor(llm=llm, timeout=120.0).execute(single, problem.prompt)
    assert result.error is None and result.n_calls == 1
    assert "def truncate_number" in result.answer  # a real model answers with the function
    program = completion_program(problem.prompt, result.answer,
                                 entry_point=problem.entry_point)
    check = check_program(program, problem.test, entry_point=problem.entry_point)
    assert check.reason == "passed" if check.passed else check.reason.startswith(
        ("AssertionError", "SyntaxError", "NameError", "TypeError", "IndentationError"))
    # greedy decoding: the same reply again
    assert llm(single_prompt(problem.prompt), 0.0).strip() == result.answer


def single_prompt(task):
    return ("Complete the following Python function. Reply with the complete function in one "
            "```python block.\n```python\n" + task + "\n```")
