"""Tests of EVOAgent: GAE, importance weights, the CPO / PPO-Lag updates, prioritisation."""

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("gymnasium")

import torch  # noqa: E402

from sklearn_icml.safe_rl import EVOAgent, RiskyShortcutEnv  # noqa: E402
from sklearn_icml.safe_rl._evo import importance_weights  # noqa: E402
from sklearn_icml.safe_rl._policy_gradient import (  # noqa: E402
    _flat_params,
    discounted_cumsum,
)
from sklearn_icml.utils._skorch import torch_threads  # noqa: E402


@pytest.fixture(autouse=True)
def _one_torch_thread():
    # tests that call the agent's internals directly (outside run) run single-threaded
    # too: torch's spinning intra-op threads are many times slower on a busy machine
    with torch_threads(1):
        yield


FAST = dict(steps_per_iter=100, actor_hidden_layer_sizes=(8,), critic_hidden_layer_sizes=(8,),
            critic_max_epochs=1, cg_max_iter=5, line_search_steps=5)


class ConstantCostEnv(RiskyShortcutEnv):
    """Every step costs 1 (episode cost 10), no gusts."""

    def step(self, action):
        obs, r, term, trunc, info = super().step(action)
        return obs, r, term, trunc, {"cost": 1.0}


class NoCostEnv(RiskyShortcutEnv):
    def step(self, action):
        obs, r, term, trunc, _ = super().step(action)
        return obs, r, term, trunc, {}


class NaNEnv(RiskyShortcutEnv):
    def step(self, action):
        obs, r, term, trunc, info = super().step(action)
        return obs, float("nan"), term, trunc, info


class SixTupleEnv(RiskyShortcutEnv):
    def step(self, action):
        obs, r, term, trunc, info = super().step(action)
        return obs, r, info["cost"], term, trunc, info


def test_discounted_cumsum_matches_loop():
    x = np.random.default_rng(0).normal(size=17)
    ref = np.array([sum(0.9**k * x[t + k] for k in range(17 - t)) for t in range(17)])
    np.testing.assert_allclose(discounted_cumsum(x, 0.9), ref, atol=1e-12)


def test_gae_matches_reference_loop():
    agent = EVOAgent(gamma=0.9, lam=0.8)
    rew = np.array([1.0, 0.5, 2.0, 0.0, 1.0])
    val = np.array([0.3, 0.1, 0.7, 0.2, 0.4])
    ends = [False, True, False, False, False]
    adv, ret = agent._gae(rew, val, ends, v_last=0.9, lam=0.8)
    ref = np.zeros(5)
    last = 0.0
    for t in reversed(range(5)):
        nv = 0.9 if t == 4 else (0.0 if ends[t] else val[t + 1])
        nonterm = 0.0 if ends[t] else 1.0
        delta = rew[t] + 0.9 * nv - val[t]
        last = delta + 0.9 * 0.8 * nonterm * last
        ref[t] = last
    np.testing.assert_allclose(adv, ref, atol=1e-12)
    np.testing.assert_allclose(ret, ref + val, atol=1e-12)


def test_importance_weights_unchanged_policy_equal():
    # for an unchanged policy every weight is 1/n (l = 0 is clipped to 0.8)
    agent = EVOAgent(random_state=0, **FAST)
    agent._validate_params()
    agent._initialize(RiskyShortcutEnv())
    _, finished = agent._rollout(100)
    w = agent._episode_weights(finished)
    np.testing.assert_allclose(w, np.full(len(finished), 1 / len(finished)), atol=1e-12)
    # log clip: weights differ by at most exp(0.4); ratio clip by at most 1.2 / 0.8
    lr = np.array([-5.0, 0.0, 0.9, 5.0])
    w = importance_weights(lr, ("log", 0.8, 1.2))
    assert w.max() / w.min() == pytest.approx(np.exp(0.4))
    w = importance_weights(lr, ("ratio", 0.8, 1.2))
    assert w.max() / w.min() == pytest.approx(1.5)
    assert importance_weights(lr, None).sum() == pytest.approx(1.0)


def test_off_policy_buffer_weights_change_quantile():
    # after an update the buffer's old episodes get unequal ratio-clipped weights
    agent = EVOAgent(base="ppo_lag", weight_clip=("ratio", 0.5, 2.0), max_iter=3,
                     random_state=0, **FAST).run(RiskyShortcutEnv())
    w = agent._episode_weights(list(agent._cost_buffer))
    assert w.sum() == pytest.approx(1.0)
    assert np.ptp(w) > 0


@pytest.mark.parametrize("cost_limit", [5.0, 20.0])
def test_cpo_plumbing_quantile_equals_expectation_on_identical_costs(cost_limit):
    # identical episode costs -> q_hat = that cost, and EVO's update equals
    # plain CPO's update on the same batch
    agents = [
        EVOAgent(cost_limit=cost_limit, constraint=c, max_iter=2, cost_buffer_size=10**6,
                 prioritize=False, random_state=0, **FAST).run(ConstantCostEnv(gust_prob=0.0))
        for c in ("quantile", "expectation")
    ]
    evo, cpo = agents
    assert [h["q_hat"] for h in evo.history_] == pytest.approx([10.0, 10.0])
    assert [h["q_hat"] for h in cpo.history_] == pytest.approx([10.0, 10.0])
    assert [h["case"] for h in evo.history_] == [h["case"] for h in cpo.history_]
    torch.testing.assert_close(_flat_params(evo.actor_), _flat_params(cpo.actor_),
                               atol=1e-6, rtol=0)


def test_cpo_recovery_branch_decreases_cost_surrogate():
    # infeasible case (b > 0, QP infeasible): pure cost-decreasing step
    agent = EVOAgent(cost_limit=0.0, prioritize=False,
                     random_state=0, **FAST)
    agent._validate_params()
    agent._initialize(RiskyShortcutEnv(gust_prob=0.3))
    batch, finished = agent._rollout(100)
    batch["adv"] = (batch["adv"] - batch["adv"].mean()) / (batch["adv"].std() + 1e-8)
    batch["adv_c"] = batch["adv_c"] - batch["adv_c"].mean()
    t = agent._tensors(batch)

    def cost_surrogate():
        with torch.no_grad():
            ratio = torch.exp(agent.actor_.log_prob(t["obs"], t["act"]) - t["logp"])
            return float((ratio * t["adv_c"]).mean())

    before = cost_surrogate()
    case, kl = agent._cpo_update(t, c_stat=100.0)
    assert case == 0
    assert cost_surrogate() < before
    assert 0 < kl <= agent.target_kl


def test_oversample_batch_size():
    # oversample_factor 2 and 3 steps above tau -> n + 6
    n = 20
    adv = np.zeros(n)
    adv[[2, 7, 11]] = 5.0
    batch = {"adv": adv, "obs": np.arange(n * 3.0).reshape(n, 3)}
    out = EVOAgent._oversample(batch, tau=1.0, factor=2)
    assert out["adv"].size == n + 6
    np.testing.assert_array_equal(out["obs"][n:], batch["obs"][[2, 7, 11, 2, 7, 11]])
    assert EVOAgent._oversample(batch, tau=1.0, factor=0)["adv"].size == n


def test_run_records_history_and_prioritizes():
    agent = EVOAgent(base="ppo_lag", oversample_factor=1, max_iter=2,
                     random_state=0, **FAST).run(RiskyShortcutEnv())
    assert len(agent.history_) == 2
    h = agent.history_[-1]
    assert h["batch_size"] >= 100
    assert np.isfinite(h["tau"]) and np.isfinite(h["q_hat"])
    assert agent.n_steps_ == 200
    res = agent.evaluate(n_episodes=3)
    assert set(res) == {"mean_return", "mean_cost", "q99_cost", "violation_rate"}
    assert agent.predict(np.eye(10)[0]) in (0, 1)


def test_same_random_state_same_result_and_six_tuple():
    a = EVOAgent(base="ppo_lag", max_iter=1, random_state=3, **FAST).run(SixTupleEnv())
    b = EVOAgent(base="ppo_lag", max_iter=1, random_state=3, **FAST).run(RiskyShortcutEnv())
    torch.testing.assert_close(_flat_params(a.actor_), _flat_params(b.actor_))
    assert a.history_[0]["ep_cost"] == b.history_[0]["ep_cost"]


def test_continuous_env_runs():
    from sklearn_icml.safe_rl import HeavyTailPointEnv

    agent = EVOAgent(cost_limit=5.0, max_iter=1, random_state=0, **FAST)
    agent.run(HeavyTailPointEnv())
    a = agent.predict(np.zeros(2))
    assert a.shape == (1,) and -1 <= a[0] <= 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"cost_limit": -1.0}, "cost_limit"),
        ({"cost_buffer_percentile": 0}, "cost_buffer_percentile"),
        ({"cost_buffer_percentile": 100}, "cost_buffer_percentile"),
        ({"reward_buffer_percentile": 120}, "reward_buffer_percentile"),
        ({"tail_quantile": 1.0}, "tail_quantile"),
        ({"tail_quantile": 0.0}, "tail_quantile"),
        ({"cost_buffer_size": 0}, "cost_buffer_size"),
        ({"base": "sac"}, "base"),
        ({"constraint": "cvar"}, "constraint"),
        ({"weight_clip": ("exp", 1, 2)}, "weight_clip"),
    ],
)
def test_bad_params(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EVOAgent(max_iter=1, **{**FAST, **kwargs}).run(RiskyShortcutEnv())


def test_env_without_cost_and_nan_reward():
    with pytest.raises(ValueError, match="cost"):
        EVOAgent(max_iter=1, **FAST).run(NoCostEnv())
    with pytest.raises(ValueError, match="non-finite"):
        EVOAgent(max_iter=1, **FAST).run(NaNEnv())
    with pytest.raises(ValueError, match="run"):
        EVOAgent().evaluate()


@pytest.mark.slow
def test_evo_avoids_shortcut_baseline_takes_it():
    # reduced E2: the expectation baseline drifts to the shortcut, EVO away from it
    # the int seed is the RandomState seed that np.random.default_rng(0) used to give
    seed = int(np.random.default_rng(0).integers(2**32))
    kw = dict(cost_limit=10.0, base="ppo_lag", max_iter=8, steps_per_iter=1000,
              random_state=seed)
    evo = EVOAgent(**kw).run(RiskyShortcutEnv())
    base = EVOAgent(**kw, constraint="expectation", prioritize=False).run(RiskyShortcutEnv())
    assert base.history_[-1]["mean_action"] > 0.7
    assert evo.history_[-1]["mean_action"] < base.history_[-1]["mean_action"] - 0.3


def test_ppo_lag_multiplier_is_projected_plain_ascent():
    # lambda <- max(0, lambda + eta (c - d)) once per update (the default multiplier step)
    agent = EVOAgent(base="ppo_lag", cost_limit=10.0,
                     lagrangian_learning_rate=0.5, lagrangian_init=0.25, random_state=0, **FAST)
    agent._validate_params()
    agent._initialize(RiskyShortcutEnv())
    batch, _ = agent._rollout(100)
    t = agent._tensors(batch)
    assert agent.lagrange_ == 0.25
    agent._ppo_lag_update(t, c_stat=12.0)
    assert agent.lagrange_ == pytest.approx(0.25 + 0.5 * 2.0)
    agent._ppo_lag_update(t, c_stat=9.0)
    assert agent.lagrange_ == pytest.approx(0.75)
    agent._ppo_lag_update(t, c_stat=0.0)
    assert agent.lagrange_ == 0.0


def test_ppo_lag_adam_multiplier_steps_by_its_learning_rate():
    # OmniSafe's Lagrange (Adam): the first step is lr whatever the size of c - d
    for c_stat in (500.0, 12.0):
        agent = EVOAgent(base="ppo_lag", cost_limit=10.0,
                         lagrangian_optimizer="adam", random_state=0, **FAST)
        agent._validate_params()
        agent._initialize(RiskyShortcutEnv())
        t = agent._tensors(agent._rollout(100)[0])
        agent._ppo_lag_update(t, c_stat=c_stat)
        assert agent.lagrange_ == pytest.approx(0.001 + 0.035, rel=1e-6)
    lams = []
    for _ in range(25):  # below the limit: descends (after Adam's momentum), clamped at 0
        agent._ppo_lag_update(t, c_stat=0.0)
        lams.append(agent.lagrange_)
    assert lams[-1] == 0.0 and max(lams) < 0.1
    with pytest.raises(ValueError, match="lagrangian_optimizer"):
        EVOAgent(lagrangian_optimizer="rmsprop", max_iter=1, **FAST).run(RiskyShortcutEnv())


def test_infinite_cost_limit_is_no_constraint():
    # CPO takes only the reward step (cases 3-4: TRPO); the PPO multiplier stays 0
    trpo = EVOAgent(cost_limit=np.inf, constraint="expectation", prioritize=False,
                    max_iter=3, random_state=0, **FAST).run(ConstantCostEnv())
    assert {h["case"] for h in trpo.history_} <= {3, 4}
    for optimizer in ("sgd", "adam"):
        ppo = EVOAgent(cost_limit=np.inf, base="ppo_lag", lagrangian_optimizer=optimizer,
                       lagrangian_init=0.5, max_iter=2, random_state=0,
                       **FAST).run(ConstantCostEnv())
        assert [h["lagrange"] for h in ppo.history_] == [0.0, 0.0]
        assert np.isfinite(ppo.history_[-1]["kl"])


def test_warm_start_continues_and_params_round_trip():
    from sklearn.base import clone

    from sklearn_icml.safe_rl import run_seeds

    env = RiskyShortcutEnv()
    once = EVOAgent(base="ppo_lag", max_iter=2, random_state=0, **FAST).run(env)
    warm = EVOAgent(base="ppo_lag", max_iter=1, warm_start=True, random_state=0, **FAST)
    warm.run(env)
    warm.run(env)
    # the first iteration is the same; the second continues the same networks and buffers
    assert warm.history_[0]["ep_ret"] == once.history_[0]["ep_ret"]
    assert len(warm.history_) == 2 and warm.n_steps_ == 200 and len(warm._cost_buffer) > 10
    # a fresh run without warm_start starts over
    again = clone(once).run(RiskyShortcutEnv())
    assert len(again.history_) == 2
    assert clone(once).get_params() == once.get_params()
    runs = run_seeds(EVOAgent(base="ppo_lag", max_iter=1, **FAST), RiskyShortcutEnv(), [0, 1])
    assert [len(r.history_) for r in runs] == [1, 1]


@pytest.mark.parametrize(
    "old, new, value",
    [
        ("actor_hidden", "actor_hidden_layer_sizes", (6,)),
        ("critic_hidden", "critic_hidden_layer_sizes", (6,)),
        ("actor_lr", "actor_learning_rate", 1e-3),
        ("critic_lr", "critic_learning_rate", 2e-3),
        ("lagrangian_lr", "lagrangian_learning_rate", 0.5),
        ("cg_iters", "cg_max_iter", 3),
        ("critic_update_iters", "critic_max_epochs", 2),
    ],
)
def test_renamed_parameters_warn_and_give_the_same_agent(old, new, value):
    """scikit-learn's and the glossary's names; the old ones warn."""
    params = {k: v for k, v in FAST.items() if k != new}
    base = "cpo" if new == "cg_max_iter" else "ppo_lag"  # conjugate gradient: CPO only
    kw = dict(base=base, max_iter=1, random_state=0, **params)
    expected = EVOAgent(**kw, **{new: value}).run(RiskyShortcutEnv())
    agent = EVOAgent(**kw, **{old: value})
    assert agent.get_params()[old] == value
    with pytest.warns(FutureWarning, match=f"`{old}` was renamed `{new}`"):
        agent.run(RiskyShortcutEnv())
    torch.testing.assert_close(_flat_params(agent.actor_), _flat_params(expected.actor_))
    assert agent.history_ == expected.history_
    with pytest.raises(ValueError, match=f"pass only {new}="):
        EVOAgent(**kw, **{old: value, new: 2 * value}).run(RiskyShortcutEnv())
