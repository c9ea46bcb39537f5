"""The LLM interface: the arithmetic mock, the query generator, and the HTTP adapter.

The adapter is tested against a stub server on 127.0.0.1 only; no real service is contacted.
"""

import http.server
import json
import threading

import numpy as np
import pytest

from sklearn_icml.datasets import make_arithmetic_queries
from sklearn_icml.mas import (
    AgentLLM,
    ArithmeticMockLLM,
    MASExecutor,
    OpenAICompatibleLLM,
    default_mas_pool,
)


def test_queries_and_gold_answers():
    queries, answers, families = make_arithmetic_queries(50, random_state=0)
    assert len(queries) == 150 and answers.dtype == np.int64
    assert list(families[::50]) == ["add", "mixed", "solve"]
    llm = ArithmeticMockLLM(p_correct={"add": 1.0, "mixed": 1.0, "solve": 1.0})
    for query, gold in zip(queries, answers):
        assert llm("[SOLVE]\nTask: " + query) == f"ANSWER: {gold}"
    solve = [q for q, f in zip(queries, families) if f == "solve"]
    assert any("+ -" in q for q in solve)  # negative b is written as "+ -b"
    again = make_arithmetic_queries(50, random_state=0)
    assert again[0] == queries and np.array_equal(again[1], answers)
    with pytest.raises(ValueError, match="n_per_family"):
        make_arithmetic_queries(0)


def test_mock_tags():
    llm = ArithmeticMockLLM(p_correct={"mixed": 0.0}, random_state=1)
    wrong = llm("[SOLVE]\nTask: Compute 10 times 10 minus 1.")
    value = int(wrong.split()[-1])
    assert value != 99 and 1 <= abs(value - 99) <= 10**6
    assert llm("[SOLVE]\nno query here") == "I cannot help with that."
    assert llm("Hello") == "I cannot help with that."
    # aggregate: plurality, ties to the first seen
    agg = "[AGGREGATE]\nTask: x\nSolution 1: ANSWER: 5\nSolution 2: ANSWER: 7\n" \
          "Solution 3: ANSWER: 7"
    assert llm(agg) == "ANSWER: 7"
    tie = "[AGGREGATE]\nSolution 1: ANSWER: 9\nSolution 2: ANSWER: 4\nSolution 3: ANSWER: 4\n" \
          "Solution 4: ANSWER: 9"
    assert llm(tie) == "ANSWER: 9"
    assert llm("[AGGREGATE]\nSolution 1: no idea") == "I cannot help with that."
    # verify: truthful for solve, always CORRECT for add and mixed
    q_solve = "Task: Find the integer x such that 3*x + -4 = 11.\nProposed answer: ANSWER: "
    assert llm("[VERIFY]\n" + q_solve + "5") == "VERDICT: CORRECT"
    assert llm("[VERIFY]\n" + q_solve + "6") == "VERDICT: WRONG"
    q_add = "Task: Add 1 and 2.\nProposed answer: ANSWER: "
    assert llm("[VERIFY]\n" + q_add + "4") == "VERDICT: CORRECT"
    assert llm.n_calls_ == 9
    assert llm.calls_by_tag_ == {"SOLVE": 2, "AGGREGATE": 3, "VERIFY": 3, "other": 1}


def test_mock_is_seeded_and_validates():
    a = [ArithmeticMockLLM(random_state=4)("[SOLVE]\nTask: Compute 10 times 10 minus 1.")
         for _ in range(3)]
    b = [ArithmeticMockLLM(random_state=4)("[SOLVE]\nTask: Compute 10 times 10 minus 1.")
         for _ in range(3)]
    assert a == b
    # parameters are validated at the first call
    with pytest.raises(ValueError, match="p_correct must be a dict with keys among"):
        ArithmeticMockLLM(p_correct={"division": 0.5})("[SOLVE]\nTask: Add 1 and 2.")
    with pytest.raises(ValueError, match=r"p_correct\['add'\] must be in \[0, 1\]"):
        ArithmeticMockLLM(p_correct={"add": 1.5})("[SOLVE]\nTask: Add 1 and 2.")
    with pytest.raises(TypeError, match="p_correct"):
        ArithmeticMockLLM(p_correct=[0.5])("hi")
    # set_params starts the stream over; clone gives an unused mock
    llm = ArithmeticMockLLM(random_state=4)
    llm("hi")
    assert llm.set_params(random_state=4)("[SOLVE]\nTask: Compute 10 times 10 minus 1.") == a[0]
    assert llm.n_calls_ == 1


def test_agent_llm_counts_and_strips_think():
    agent = AgentLLM(llm=lambda p, t: f"<think>\n{p}\n</think>\nANSWER: {t}",
                     default_temperature=0.2)
    assert agent.call_llm("q") == "ANSWER: 0.2"
    assert agent.call_llm("q", temperature=0.9) == "ANSWER: 0.9"
    assert agent.n_calls_ == 2
    with pytest.raises(TypeError, match="prompt must be a str"):
        agent.call_llm(["q"])
    with pytest.raises(TypeError, match="must return a str"):
        AgentLLM(llm=lambda p, t: 3).call_llm("q")
    with pytest.raises(ValueError, match="'llm' parameter of AgentLLM must be a callable"):
        AgentLLM(llm="not callable").call_llm("q")


class _StubHandler(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions that answers with the mock LLM."""

    mock = None
    requests = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append((self.path, dict(self.headers), body))
        if body["model"] == "broken":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        content = "<think>working</think>" + type(self).mock(
            body["messages"][-1]["content"], body["temperature"]
        )
        reply = {"choices": [{"message": {"role": "assistant", "content": content}}]}
        if body["model"] == "empty":
            reply = {"choices": []}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def stub_server():
    _StubHandler.mock = ArithmeticMockLLM(random_state=0)
    _StubHandler.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StubHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_http_adapter_against_local_stub(stub_server):
    llm = OpenAICompatibleLLM(base_url=stub_server, model="qwen", api_key="k-123",
                              system_prompt="Be brief.")
    reply = llm("[SOLVE]\nTask: Add 2 and 3.", 0.25)
    assert reply == "<think>working</think>ANSWER: 5"
    path, headers, body = _StubHandler.requests[-1]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer k-123"
    assert body["temperature"] == 0.25 and body["max_tokens"] == 2048
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    # the sandboxed child has no network: its calls go through this process
    executor = MASExecutor(llm=llm, timeout=10.0)
    result = executor.execute(default_mas_pool()[1], "Add 2 and 3.")
    assert result.answer == "ANSWER: 5" and result.n_calls == 6
    assert len(_StubHandler.requests) == 7


def test_http_adapter_errors(stub_server):
    with pytest.raises(RuntimeError, match="answered HTTP 500"):
        OpenAICompatibleLLM(base_url=stub_server, model="broken")("hi")
    with pytest.raises(RuntimeError, match="no choices"):
        OpenAICompatibleLLM(base_url=stub_server, model="empty")("hi")
    closed = stub_server.rsplit(":", 1)[0] + ":9/v1"  # discard port: nothing listens
    with pytest.raises(RuntimeError, match="unreachable"):
        OpenAICompatibleLLM(base_url=closed, model="qwen", timeout=2.0)("hi")
    # parameters are validated at the first call, before anything is contacted
    with pytest.raises(ValueError, match="base_url must be an http"):
        OpenAICompatibleLLM(base_url="ftp://x", model="m")("hi")
    with pytest.raises(ValueError, match="model must be a non-empty str"):
        OpenAICompatibleLLM(base_url="http://127.0.0.1:1", model="")("hi")
    with pytest.raises(ValueError, match="model must be a non-empty str"):
        OpenAICompatibleLLM(base_url="http://127.0.0.1:1")("hi")
    with pytest.raises(ValueError, match="'timeout' parameter"):
        OpenAICompatibleLLM(base_url="http://127.0.0.1:1", model="m", timeout=0)("hi")


def test_llm_constructors_by_position_warn_and_give_the_same_object():
    """Constructor parameters are keyword-only; by position they still work, with a warning."""
    mock = ArithmeticMockLLM(random_state=0)
    with pytest.warns(FutureWarning, match=r"pass llm as keyword arguments"):
        agent = AgentLLM(mock, default_temperature=0.2)
    assert agent.get_params() == AgentLLM(llm=mock, default_temperature=0.2).get_params()
    with pytest.warns(FutureWarning, match=r"pass llm as keyword arguments"):
        executor = MASExecutor(mock, timeout=5.0)
    assert executor.get_params() == MASExecutor(llm=mock, timeout=5.0).get_params()
    with pytest.warns(FutureWarning, match=r"pass base_url, model as keyword arguments"):
        client = OpenAICompatibleLLM("http://127.0.0.1:9/v1", "m")
    expected = OpenAICompatibleLLM(base_url="http://127.0.0.1:9/v1", model="m")
    assert client.get_params() == expected.get_params()
