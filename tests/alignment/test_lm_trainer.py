"""PreferenceLMTrainer: the CPU language-model check on a tiny causal Transformer."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skorch = pytest.importorskip("skorch")

from scipy.special import expit, softmax  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

from sklearn_icml.alignment import (  # noqa: E402
    PreferenceLMTrainer,
    TabularPreferencePolicy,
    TinyCausalLM,
    closed_form_policy,
)
from sklearn_icml.alignment._lm_trainer import sequence_logprob  # noqa: E402

R = np.array([1.0, 0.5, 0.0, -0.5])
CANDIDATES = [[1, 2], [2, 1], [3, 3], [1, 3]]
PROMPT = [0]


@pytest.fixture(autouse=True)
def _one_torch_thread():
    from sklearn_icml.utils._skorch import torch_threads

    with torch_threads(1):
        yield


def _population(P):
    """Every ordered pair of distinct candidates once, with soft label P(a > b)."""
    K = len(CANDIDATES)
    pairs = [(a, b) for a in range(K) for b in range(K) if a != b]
    prompts = [PROMPT] * len(pairs)
    chosen = [CANDIDATES[a] for a, _ in pairs]
    rejected = [CANDIDATES[b] for _, b in pairs]
    labels = [P[a, b] for a, b in pairs]
    return prompts, chosen, rejected, labels


def _restricted(trainer, reference=False):
    lp = trainer.sequence_logprob([PROMPT] * 4, CANDIDATES, reference=reference)
    return softmax(lp)


FAST = {
    "vocab_size": 4, "learning_rate": 1e-2, "max_epochs": 60, "batch_size": 12, "random_state": 0
}


@pytest.mark.parametrize(("loss", "params"), [("logistic", {"beta": 1.0}),
                                              ("squared", {"tau": 1.0})])
def test_lm_policy_over_candidates_matches_closed_form(loss, params):
    # the LM check: DPO/IPO on the population of pairs over 4 candidate completions gives,
    # restricted to the candidates, the tabular benchmark policy with nu = the initial LM
    P = expit(np.subtract.outer(R, R))
    trainer = PreferenceLMTrainer(loss=loss, **params, **FAST).fit(*_population(P))
    nu = _restricted(trainer, reference=True)
    target = closed_form_policy(R, nu=nu, loss=loss, **params)
    fitted = _restricted(trainer)
    np.testing.assert_allclose(fitted, target, atol=0.01)
    # training moved the policy from the reference to the benchmark
    assert np.abs(fitted - target).max() < 0.25 * np.abs(nu - target).max()


def test_history_and_reproducibility():
    P = expit(np.subtract.outer(R, R))
    data = _population(P)
    a = PreferenceLMTrainer(**{**FAST, "max_epochs": 5}).fit(*data)
    b = PreferenceLMTrainer(**{**FAST, "max_epochs": 5}).fit(*data)
    np.testing.assert_array_equal(a.sequence_logprob([PROMPT], [[1, 2]]),
                                  b.sequence_logprob([PROMPT], [[1, 2]]))
    assert len(a.history_) == 5
    for key in ("train_loss", "logp_chosen", "logp_rejected", "margin"):
        assert np.all(np.isfinite(a.history_[:, key]))
    # the reference is the initial model, untouched by training
    assert a.history_[0, "margin"] == pytest.approx(0.0, abs=0.05)
    assert not np.allclose(a.sequence_logprob([PROMPT], [[1, 2]]),
                           a.sequence_logprob([PROMPT], [[1, 2]], reference=True))
    assert clone(a).get_params() == a.get_params()


def test_logistic_margins_diverge_on_deterministic_labels_squared_do_not():
    # each pair once, winner first (deterministic labels)
    better = [(a, b) for a in range(4) for b in range(4) if R[a] > R[b]]
    data = ([PROMPT] * 6, [CANDIDATES[a] for a, _ in better],
            [CANDIDATES[b] for _, b in better])
    params = {**FAST, "max_epochs": 80, "learning_rate": 2e-2, "batch_size": 6}
    logistic = PreferenceLMTrainer(loss="logistic", beta=1.0, **params).fit(*data)
    squared = PreferenceLMTrainer(loss="squared", tau=1.0, **params).fit(*data)
    m_log = np.asarray(logistic.history_[:, "margin"])
    m_sq = np.asarray(squared.history_[:, "margin"])
    # IPO's margins settle near their finite target, DPO's keep growing
    assert np.all(np.diff(m_log[-30:]) > 0)
    assert m_log[-1] > m_log[-20] + 0.1
    # IPO's margins settle at the least-squares fit of the target 1 / (2 tau) over the
    # pairs, which the tabular solver gives exactly
    pairs = np.array([[0, a, b] for a, b in better])
    tabular = TabularPreferencePolicy(loss="squared", tau=1.0, normalizer="none").fit(pairs)
    assert m_sq[-1] == pytest.approx(tabular.margins_.mean(), abs=0.02)
    assert abs(m_sq[-1] - m_sq[-20]) < 0.05
    assert m_log[-1] > 10 * m_sq[-1]


def test_kl_coef_keeps_the_model_near_the_reference():
    P = expit(np.subtract.outer(R, R))
    data = _population(P)
    params = {**FAST, "max_epochs": 15}
    free = PreferenceLMTrainer(beta=1.0, **params).fit(*data)
    tied = PreferenceLMTrainer(beta=1.0, kl_coef=100.0, **params).fit(*data)
    ref = _restricted(tied, reference=True)
    assert np.abs(_restricted(tied) - ref).max() < 0.5 * np.abs(_restricted(free) - ref).max()


def test_normalizers_data_and_none_and_custom_module():
    P = expit(np.subtract.outer(R, R))
    prompts, chosen, rejected, labels = _population(P)
    n = len(prompts)
    params = {**FAST, "max_epochs": 3}
    with pytest.raises(ValueError, match="data_logps"):
        PreferenceLMTrainer(normalizer="data", **params).fit(prompts, chosen, rejected)
    with pytest.raises(ValueError, match="data_logps"):
        PreferenceLMTrainer(normalizer="data", **params).fit(
            prompts, chosen, rejected, data_logps=np.full((n, 2), np.nan))
    PreferenceLMTrainer(normalizer="data", **params).fit(
        prompts, chosen, rejected, data_logps=np.log(np.full((n, 2), 0.25)))
    PreferenceLMTrainer(normalizer="none", loss="hinge", **params).fit(prompts, chosen, rejected)
    module = TinyCausalLM(vocab_size=4, d_model=8)
    with pytest.raises(ValueError, match="bos_token"):
        PreferenceLMTrainer(module=module, **params).fit(prompts, chosen, rejected)
    before = [p.detach().clone() for p in module.parameters()]
    trainer = PreferenceLMTrainer(module=module, bos_token=4, **params).fit(
        prompts, chosen, rejected)
    assert all(torch.equal(p, q) for p, q in zip(before, module.parameters()))
    assert trainer.module_ is not module


def test_sequence_logprob_is_a_sum_of_token_log_softmax():
    lm = TinyCausalLM(vocab_size=5)
    tokens = torch.tensor([[5, 0, 3, 4]])
    mask = torch.tensor([[0.0, 0.0, 1.0, 1.0]])
    with torch.no_grad():
        logits = lm(tokens)
        expected = (torch.log_softmax(logits[0, 1], -1)[3]
                    + torch.log_softmax(logits[0, 2], -1)[4])
        assert sequence_logprob(lm, tokens, mask).item() == pytest.approx(expected.item(),
                                                                          rel=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [({"chosen": [[1, 9]]}, ValueError, "vocab_size"),
     ({"chosen": [[-3]]}, ValueError, "padded"),
     ({"chosen": [[]]}, ValueError, "empty"),
     ({"chosen": [[1.5]]}, ValueError, "integer"),
     ({"rejected": [[1], [2]]}, ValueError, "same length"),
     ({"labels": [1.5]}, ValueError, "labels"),
     ({"labels": [np.nan]}, ValueError, "labels")],
)
def test_bad_input(kwargs, error, match):
    data = {"prompts": [[0]], "chosen": [[1]], "rejected": [[2]]}
    data.update(kwargs)
    with pytest.raises(error, match=match):
        PreferenceLMTrainer(vocab_size=4, max_epochs=1).fit(**data)


@pytest.mark.parametrize("params", [{"beta": 0.0}, {"tau": -1.0}, {"loss": "dpo"},
                                    {"normalizer": "sft"}])
def test_bad_parameters(params):
    with pytest.raises(ValueError, match=next(iter(params))):
        PreferenceLMTrainer(**params).fit([[0]], [[1]], [[2]])


def test_not_fitted():
    with pytest.raises(NotFittedError):
        PreferenceLMTrainer().sequence_logprob([[0]], [[1]])


def test_routed_parameters_reach_the_net_and_survive_clone():
    trainer = PreferenceLMTrainer(max_epochs=1, batch_size=4, random_state=0,
                                  optimizer__weight_decay=0.25)
    assert trainer.get_params()["optimizer__weight_decay"] == 0.25
    assert clone(trainer).optimizer__weight_decay == 0.25
    trainer.fit([[0], [1]] * 2, [[2, 3], [3, 2]] * 2, [[3, 3], [2, 2]] * 2)
    assert trainer.net_.optimizer_.param_groups[0]["weight_decay"] == 0.25
    assert trainer.__sklearn_tags__().input_tags.two_d_array is False
    # __init__ only stores; fit refuses a keyword that is neither a parameter nor routed
    with pytest.raises(TypeError, match="unexpected keyword"):
        PreferenceLMTrainer(max_epochs=1, batch_size=4, weight_decay=0.25).fit(
            [[0], [1]] * 2, [[2, 3], [3, 2]] * 2, [[3, 3], [2, 2]] * 2
        )
