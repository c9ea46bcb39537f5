"""MASGPTRouter: sklearn manners on string input and the LLM generator."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.utils.estimator_checks import (
    check_do_not_raise_errors_in_init_or_set_params,
    check_estimator_cloneable,
    check_estimator_repr,
    check_estimator_tags_renamed,
    check_get_params_invariance,
    check_mixin_order,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
    check_valid_tag_types,
)

from sklearn_icml.datasets import make_arithmetic_queries
from sklearn_icml.mas import ConsistentPairBuilder, MASGPTRouter, MASGPTSolver, default_mas_pool

GOOD_CODE = (
    "class MAS:\n    def __init__(self, model_list):\n        self.llm = LLM(model_list)\n"
    "    def forward(self, taskInfo):\n"
    "        return self.llm.call_llm('[SOLVE]\\nTask: ' + taskInfo)\n"
)


def _data():
    queries, _, families = make_arithmetic_queries(15, random_state=0)
    labels = np.array([{"add": 0, "mixed": 1, "solve": 2}[f] for f in families])
    return queries, labels


@pytest.mark.parametrize("Estimator", [MASGPTRouter, ConsistentPairBuilder, MASGPTSolver])
@pytest.mark.parametrize(
    "check",
    [
        check_estimator_cloneable, check_estimator_repr, check_no_attributes_set_in_init,
        check_parameters_default_constructible, check_get_params_invariance, check_set_params,
        check_do_not_raise_errors_in_init_or_set_params, check_valid_tag_types,
        check_estimator_tags_renamed, check_mixin_order,
    ],
)
def test_sklearn_api_checks_that_apply_to_string_input(Estimator, check):
    """the API checks that do not feed numeric arrays."""
    check(Estimator.__name__, Estimator())


def test_router_fit_predict_on_strings():
    queries, labels = _data()
    router = MASGPTRouter(random_state=0).fit(queries, labels)
    assert router.predict(queries).tolist() == labels.tolist()
    assert set(router.classes_) == {0, 1, 2}
    proba = router.predict_proba(queries[:4])
    assert proba.shape == (4, 3) and np.allclose(proba.sum(axis=1), 1)
    assert [router.generate(q).name for q in queries[::15]] == [
        "cot", "self_consistency", "self_refine"
    ]
    # pandas input, pickling, clone and a custom vectorizer
    series = pd.Series(queries)
    assert router.predict(series).tolist() == labels.tolist()
    again = pickle.loads(pickle.dumps(router))
    assert again.predict(queries).tolist() == labels.tolist()
    fresh = clone(router).set_params(vectorizer=CountVectorizer(), C=10.0)
    assert fresh.fit(series, labels).predict(queries).tolist() == labels.tolist()
    assert "vectorizer_" not in vars(clone(router))


def test_router_one_class_and_names():
    router = MASGPTRouter().fit(["Add 1 and 2.", "Add 3 and 4."], ["cot", "cot"])
    assert router.predict(["anything"]).tolist() == ["cot"]
    assert router.predict_proba(["x"]).shape == (1, 1)
    assert router.generate("x").name == "cot"


def test_router_bad_input():
    queries, labels = _data()
    with pytest.raises(NotFittedError):
        MASGPTRouter().predict(queries)
    with pytest.raises(ValueError, match="same length"):
        MASGPTRouter().fit(queries, labels[:-1])
    with pytest.raises(ValueError, match="is empty"):
        MASGPTRouter().fit([], [])
    with pytest.raises(TypeError, match="must hold str only. Got int"):
        MASGPTRouter().fit([1, 2], [0, 1])
    with pytest.raises(TypeError, match="not one str"):
        MASGPTRouter().fit("Add 1 and 2.", [0])
    with pytest.raises(ValueError, match=r"mas_ids must be pool names .* Got 7"):
        MASGPTRouter().fit(queries, np.full(len(queries), 7))
    with pytest.raises(ValueError, match="Got 'tot'"):
        MASGPTRouter().fit(queries[:2], ["cot", "tot"])
    with pytest.raises(ValueError, match="C"):
        MASGPTRouter(C=0.0).fit(queries, labels)


class RecordingGenerator:
    """A generator LLM that replays canned replies and keeps the prompts."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.prompts = []

    def __call__(self, prompt, temperature):
        assert temperature == 0.0  # greedy decoding
        self.prompts.append(prompt)
        return self.replies[(len(self.prompts) - 1) % len(self.replies)]


def test_llm_backend_extracts_last_block_and_falls_back():
    queries, labels = _data()
    two_blocks = (
        "Rationale: one agent is enough.\n```python\nimport os\n```\n"
        f"Fixed:\n```python\n{GOOD_CODE}```\n"
    )
    generator = RecordingGenerator([two_blocks, "I would use a debate.", "```python\nimport os\n"
                                    + GOOD_CODE + "```"])
    router = MASGPTRouter(llm_backend=generator, n_shots=2).fit(queries, labels)
    program, raw, fell_back, note = router._generate_one("Add 40 and 2.")
    assert program.code.strip() == GOOD_CODE.strip() and not fell_back and raw == two_blocks
    assert program.rationale.startswith("Rationale: one agent")
    program, raw, fell_back, note = router._generate_one("Add 40 and 2.")
    assert program.name == "fallback" and fell_back and raw == "I would use a debate."
    assert "no fenced code block" in note
    program, _, fell_back, note = router._generate_one("Add 40 and 2.")
    assert program.name == "fallback" and fell_back and "imports 'os'" in note
    # the prompt holds the template, the helpers and the nearest training pairs
    prompt = generator.prompts[0]
    assert "class MAS" in prompt and "extract_answer" in prompt
    assert prompt.count("Example query: Add ") == 2 and prompt.rstrip().endswith("Add 40 and 2.")


def test_llm_backend_uses_pair_programs_as_examples():
    pool = default_mas_pool(debate=False)
    generator = RecordingGenerator(["no code"])
    router = MASGPTRouter(pool=pool, llm_backend=generator, n_shots=1).fit(
        ["Add 1 and 2.", "Compute 2 times 3 minus 1."], [0, 1],
        programs=[pool[0], pool[1]], rationales=["cheap", "noisy"],
    )
    router.generate("Compute 5 times 5 minus 5.")
    assert "Rationale: noisy" in generator.prompts[0]
    assert "[AGGREGATE]" in generator.prompts[0]  # the self-consistency code was shown
    with pytest.raises(ValueError, match="programs must have one entry per query"):
        router.fit(["Add 1 and 2."], [0], programs=[pool[0], pool[1]])


def test_programs_and_rationales_by_position_warn_and_give_the_same_router():
    """``programs`` and ``rationales`` are keyword-only; by position they warn."""
    pool = default_mas_pool(debate=False)
    queries, ids = ["Add 1 and 2.", "Compute 2 times 3 minus 1."], [0, 1]
    expected = MASGPTRouter(pool=pool).fit(queries, ids, programs=pool[:2],
                                           rationales=["cheap", "noisy"])
    with pytest.warns(FutureWarning, match="pass programs, rationales as keyword arguments"):
        router = MASGPTRouter(pool=pool).fit(queries, ids, pool[:2], ["cheap", "noisy"])
    assert router.predict(queries).tolist() == expected.predict(queries).tolist()
    assert router._train_rationales == expected._train_rationales == ["cheap", "noisy"]
