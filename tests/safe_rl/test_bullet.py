"""Tests of BulletSafetyEnv and of EVOAgent on bullet-safety-gym's tasks."""

import pickle
import random
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("gymnasium")
pytest.importorskip("pybullet")
pytest.importorskip("bullet_safety_gym")

from sklearn_icml.safe_rl import BulletSafetyEnv, EVOAgent  # noqa: E402


def _episode(env, seed, n_steps=60):
    """Observations and costs of ``n_steps`` fixed pseudo-random actions after a reset."""
    actions = np.random.default_rng(0).uniform(-1, 1, (n_steps, 2)).astype(np.float32)
    obs, _ = env.reset(seed=seed)
    out, costs = [obs], []
    for a in actions:
        obs, _, terminated, truncated, info = env.step(a)
        out.append(obs)
        costs.append(info["cost"])
        if terminated or truncated:
            obs, _ = env.reset()
    return np.asarray(out), np.asarray(costs, dtype=float)


def test_reset_seed_fixes_episodes_and_global_streams_are_untouched():
    env = BulletSafetyEnv(env_id="SafetyBallCircle-v0")
    # the legacy global streams, which the task would draw from without the wrapper
    np.random.seed(7)  # noqa: NPY002
    random.seed(7)
    expected_np, expected_py = np.random.random(), random.random()  # noqa: NPY002
    np.random.seed(7)  # noqa: NPY002
    random.seed(7)
    first, first_costs = _episode(env, seed=3)
    again, again_costs = _episode(BulletSafetyEnv(env_id="SafetyBallCircle-v0"), seed=3)
    other, _ = _episode(env, seed=4)
    env.close()
    assert np.array_equal(first, again) and np.array_equal(first_costs, again_costs)
    assert not np.array_equal(first[0], other[0])  # the start state follows the seed
    assert np.random.random() == expected_np  # noqa: NPY002
    assert random.random() == expected_py


def test_spaces_episode_length_and_pickle():
    env = BulletSafetyEnv(env_id="SafetyBallRun-v0", max_episode_steps=5)
    assert env.observation_space.shape == (7,) and env.action_space.shape == (2,)
    env.reset(seed=0)
    ends = [env.step(np.zeros(2, dtype=np.float32))[3] for _ in range(5)]
    assert ends == [False] * 4 + [True]
    copy = pickle.loads(pickle.dumps(env))  # a used environment pickles its parameters
    assert copy.get_params() == env.get_params()
    assert copy.reset(seed=0)[0].shape == (7,)
    env.close()
    copy.close()


def test_env_id_that_is_not_a_bullet_task():
    with pytest.raises(ValueError, match="env_id must name a bullet-safety-gym task"):
        BulletSafetyEnv(env_id="CartPole-v1").reset()


def test_missing_packages_name_their_install(monkeypatch):
    for name in ("bullet_safety_gym", "bullet_safety_gym.envs.builder"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match="pip install --no-deps bullet-safety-gym==1.4.0"):
        BulletSafetyEnv().reset()
    monkeypatch.undo()
    monkeypatch.delitem(sys.modules, "bullet_safety_gym.envs.builder")  # imported again
    monkeypatch.setitem(sys.modules, "pybullet", None)
    with pytest.raises(ImportError, match=r'pip install "sklearn-icml\[rl\]"'):
        BulletSafetyEnv().reset()


@pytest.mark.parametrize("base", ["cpo", "ppo_lag"])
def test_evo_runs_on_a_bullet_task_and_a_seed_fixes_the_run(base):
    # 2 iterations x 150 steps: a few hundred steps on the task (its id, wrapped)
    kw = dict(cost_limit=25.0, base=base, max_iter=2, steps_per_iter=150,
              actor_hidden_layer_sizes=(16,), critic_hidden_layer_sizes=(16,),
              critic_max_epochs=1, cost_buffer_size=20, random_state=0)
    agent = EVOAgent(**kw).run("SafetyBallRun-v0")
    twin = EVOAgent(**kw).run("SafetyBallRun-v0")
    assert isinstance(agent.env_, BulletSafetyEnv) and agent.n_steps_ == 300
    assert sum(h["n_episodes"] for h in agent.history_) == 3  # BallRun: 100-step episodes
    for h, g in zip(agent.history_, twin.history_, strict=True):
        assert h["ep_cost"] >= 0 and np.isfinite(h["q_hat"])
        assert h["ep_ret"] == g["ep_ret"] and h["q_hat"] == g["q_hat"]
    summary = agent.evaluate(n_episodes=2)
    assert summary["mean_cost"] >= 0 and 0 <= summary["violation_rate"] <= 1


def test_bad_cost_limit_and_env_without_cost_signal():
    with pytest.raises(ValueError, match="cost_limit"):
        EVOAgent(cost_limit=-25.0, max_iter=1, steps_per_iter=10).run("SafetyBallRun-v0")
    # a gymnasium task without a cost: the agent names the missing signal
    with pytest.raises(ValueError, match=r"env gives no cost signal"):
        EVOAgent(cost_limit=25.0, max_iter=1, steps_per_iter=10).run("Pendulum-v1")
