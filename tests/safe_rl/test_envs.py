"""Tests of the black-swan cost environments of the EVO benchmarks."""

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from sklearn_icml.safe_rl import HeavyTailPointEnv, RiskyShortcutEnv  # noqa: E402


def test_risky_shortcut_cost_statistics():
    # P(C = 0 | shortcut) = 0.9044 +- 0.01 over 1e4 episodes
    env = RiskyShortcutEnv()
    env.reset(seed=0)
    costs, rets = [], []
    for _ in range(10_000):
        env.reset()
        ret = cost = 0.0
        while True:
            _, r, term, trunc, info = env.step(1)
            ret += r
            cost += info["cost"]
            if term or trunc:
                assert not (term and trunc)
                break
        costs.append(cost)
        rets.append(ret)
    costs = np.asarray(costs)
    assert set(np.unique(costs)) <= {0.0, 50.0}
    assert np.mean(costs == 0) == pytest.approx(0.99**10, abs=0.01)
    assert np.mean(rets) == pytest.approx(sum(0.99**t for t in range(10)), abs=0.05)


def test_risky_shortcut_safe_route():
    env = RiskyShortcutEnv()
    obs, _ = env.reset(seed=1)
    assert obs.argmax() == 0
    total = 0.0
    for t in range(10):
        obs, r, term, trunc, info = env.step(0)
        total += r
        assert info["cost"] == 0.0 and not term
        assert trunc == (t == 9)
    assert total == pytest.approx(6.0)


def test_heavy_tail_costs():
    env = HeavyTailPointEnv()
    env.reset(seed=0)
    costs = []
    for _ in range(400):
        env.reset()
        c = 0.0
        for _ in range(50):
            _, r, term, trunc, info = env.step(np.array([1.0]))
            assert r == 1.0
            c += info["cost"]
        assert trunc
        costs.append(c)
    costs = np.asarray(costs)
    # per-step rate 0.022 -> P(no cost in 50 steps) = 0.978**50 = 0.329
    assert np.mean(costs == 0) == pytest.approx(0.978**50, abs=0.07)
    # heavy tail: the max is far above the mean
    assert costs.max() > 10 * costs.mean()



def test_heavy_tail_base_rate_floor_makes_e3_constraint_infeasible():
    # The base rate 0.002 is paid whatever the action (a <= 0 included), so every policy
    # has P(C > 5) >= P(N >= 1) P(10 Lomax(2.5) > 5) = (1 - 0.998**50) 1.5**-2.5 = 0.0346
    # (0.036 with sums of events): the benchmark's E3 target (not the paper's) "EVO violation
    # <= 0.02" at d = 5 is below what any policy reaches, and the 0.99-quantile of C exceeds d.
    lower = (1 - 0.998**50) * 1.5**-2.5
    assert lower == pytest.approx(0.0346, abs=5e-4)
    env = HeavyTailPointEnv()
    env.reset(seed=0)
    costs = []
    for i in range(1500):
        env.reset()
        c = 0.0
        for _ in range(50):
            _, _, _, _, info = env.step(np.array([0.0 if i % 2 else -1.0]))
            c += info["cost"]
        costs.append(c)
    costs = np.asarray(costs)
    viol = np.mean(costs > 5)
    se = np.sqrt(0.036 * 0.964 / costs.size)
    assert viol == pytest.approx(0.036, abs=4 * se)
    assert viol > 0.02
    # the same rate at a = -1 and a = 0 (odd / even episodes)
    assert np.mean(costs[1::2] > 0) == pytest.approx(np.mean(costs[::2] > 0), abs=0.03)
    assert np.mean(costs > 0) == pytest.approx(1 - 0.998**50, abs=4 * np.sqrt(0.095 / 1500))

def test_registered_with_gymnasium():
    import gymnasium as gym

    env = gym.make("sklearn_icml/RiskyShortcut-v0")
    env.reset(seed=0)
    assert "cost" in env.step(0)[-1]


def test_bad_env_params():
    # parameters are validated at first use, as an estimator's are at fit
    with pytest.raises(ValueError, match="horizon"):
        RiskyShortcutEnv(horizon=0).reset(seed=0)
    with pytest.raises(ValueError, match="gust_prob"):
        RiskyShortcutEnv(gust_prob=2.0).reset(seed=0)
    with pytest.raises(ValueError, match="horizon"):
        _ = HeavyTailPointEnv(horizon=0).action_space
    env = RiskyShortcutEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(3)


def test_envs_clone_and_rebuild_after_set_params():
    from sklearn.base import clone

    env = RiskyShortcutEnv(horizon=4)
    assert env.observation_space.shape == (4,)
    twin = clone(env)
    assert twin.get_params() == {"horizon": 4, "gust_prob": 0.01, "gust_cost": 50.0}
    assert env.set_params(horizon=6).observation_space.shape == (6,)
    assert clone(HeavyTailPointEnv(cost_scale=2.0)).cost_scale == 2.0
