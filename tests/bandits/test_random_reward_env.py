"""RandomRewardGridEnv: outcomes against the definition, exact fixed-arm rewards, bad input."""

import pickle

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.base import clone

from sklearn_icml.bandits import (
    ClusterRandomizedEXP3IX,
    RandomRewardGridEnv,
    SwitchbackEXP3IX,
    run_seeds,
)
from sklearn_icml.utils import spawn_seeds


def _brute_outcomes(env, t, Z):
    """Y_{t,u}(Z) straight from the definition, one unit at a time."""
    L, kappa = env.grid_side, env.interference_radius
    R = env.rewards(t)
    Y = np.empty((L, L))
    xs, ys = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    for x in range(L):
        for y in range(L):
            d = np.maximum(np.abs(xs - x), np.abs(ys - y))
            w = np.where(d <= kappa, (1.0 + d) ** (-env.decay), 0.0)
            Y[x, y] = (w * R[Z, x, y]).sum() / w.sum()
    return Y


@pytest.mark.parametrize(
    "params",
    [{}, {"interference_radius": 2, "decay": 1.0}, {"interference_radius": 0},
     {"decay": 0.0}, {"n_arms": 3}],
)
def test_outcomes_match_the_definition(params):
    k = params.pop("n_arms", 2)
    env = RandomRewardGridEnv(grid_side=7, n_arms=k, horizon=5, random_state=3, **params)
    rng = np.random.default_rng(1)
    for t in (0, 4):
        Z = rng.integers(0, k, (7, 7))
        Y, reward = env.step(t, Z)
        np.testing.assert_allclose(Y, _brute_outcomes(env, t, Z), atol=1e-12)
        assert reward == pytest.approx(Y.mean(), abs=1e-15)
        assert env.mean_reward(t, Z) == reward


def test_rewards_follow_the_documented_generator():
    env = RandomRewardGridEnv(grid_side=6, n_arms=2, horizon=4, arm_means=[0.7, 0.3],
                              reward_spread=0.2,
                              random_state=11)
    seeds = spawn_seeds(11, 4)
    for t in (3, 0, 3):  # any order, replayed identically
        U = np.random.default_rng(seeds[t]).random((2, 6, 6))
        expect = np.array([0.7, 0.3])[:, None, None] + 0.2 * (2 * U - 1)
        np.testing.assert_array_equal(env.rewards(t), expect)
    R = np.stack([env.rewards(t) for t in range(4)])
    assert R[:, 0].min() >= 0.5 and R[:, 0].max() <= 0.9
    assert not np.allclose(env.rewards(0), env.rewards(1))  # fresh rewards each round


def test_fixed_arm_rewards_are_exactly_the_rewards_of_constant_assignments():
    env = RandomRewardGridEnv(grid_side=9, n_arms=3, horizon=6, random_state=0)
    for t in range(6):
        exact = [env.mean_reward(t, np.full((9, 9), i)) for i in range(3)]
        np.testing.assert_array_equal(env.fixed_arm_rewards(t), exact)
    np.testing.assert_allclose(env.arm_means_, [0.6, 0.5, 0.4])
    table = env.all_fixed_arm_rewards()
    assert env.hindsight_best_arm() == int(np.argmax(table.sum(axis=0))) == 0


def test_interference_reaches_kappa_and_no_further():
    env = RandomRewardGridEnv(grid_side=9, n_arms=2, horizon=1, interference_radius=2,
                              random_state=0)
    Z = np.zeros((9, 9), dtype=int)
    base = env.outcomes(0, Z)
    Z[4, 4] = 1
    moved = env.outcomes(0, Z) != base
    d = np.maximum(np.abs(np.arange(9)[:, None] - 4), np.abs(np.arange(9)[None, :] - 4))
    np.testing.assert_array_equal(moved, d <= 2)
    # a neighbour weighs less the farther it is: (1 + d)^-2
    shift = np.abs(env.outcomes(0, Z) - base) / np.abs(env.rewards(0)[1] - env.rewards(0)[0])
    assert shift[4, 4] > shift[4, 5] > shift[4, 6] > 0


@pytest.mark.slow
def test_policies_run_on_it_and_the_seed_runner_takes_any_backend():
    env = RandomRewardGridEnv(grid_side=10, n_arms=2, horizon=12)
    for policy in (SwitchbackEXP3IX(n_arms=2, horizon=12),
                   ClusterRandomizedEXP3IX(n_arms=2, horizon=12, cell_size=4)):
        serial = [r.regret_ for r in run_seeds(policy, env, range(4))]
        assert len(set(serial)) == 4
        with parallel_config(backend="threading", n_jobs=2):
            assert [r.regret_ for r in run_seeds(policy, env, range(4))] == serial
    # a process backend (loky, what n_jobs=2 starts by default): the runs are pickled
    with parallel_config(backend="loky", n_jobs=2):
        assert [r.regret_ for r in run_seeds(policy, env, range(4))] == serial


def test_clone_pickle_and_inputs_untouched():
    means = np.array([0.55, 0.45])
    env = RandomRewardGridEnv(grid_side=5, n_arms=2, horizon=3, arm_means=means, random_state=2)
    Z = np.eye(5, dtype=int)
    Y = env.outcomes(1, Z)
    np.testing.assert_array_equal(clone(env).outcomes(1, Z), Y)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(env)).outcomes(1, Z), Y)
    np.testing.assert_array_equal(Z, np.eye(5, dtype=int))
    np.testing.assert_array_equal(means, [0.55, 0.45])
    assert env.n_units_ == 25


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"arm_means": [0.6, 0.4, 0.5]}, "arm_means must hold 2"),
        ({"arm_means": [0.9, 0.4]}, r"keep every reward in \[0, 1\]"),
        ({"arm_means": [np.nan, 0.4]}, "finite"),
        ({"reward_spread": 0.6}, "reward_spread"),
        ({"interference_radius": -1}, "interference_radius"),
        ({"decay": -1.0}, "decay"),
        ({"grid_side": 0}, "grid_side"),
    ],
)
def test_bad_parameters_raise_at_first_use(kwargs, match):
    params = {"grid_side": 4, "n_arms": 2, "horizon": 3, **kwargs}
    env = RandomRewardGridEnv(**params)
    with pytest.raises(ValueError, match=match):
        env.fixed_arm_rewards(0)


def test_bad_round_and_assignment_raise():
    env = RandomRewardGridEnv(grid_side=4, n_arms=2, horizon=3)
    with pytest.raises(ValueError, match="t must be in"):
        env.rewards(3)
    with pytest.raises(ValueError, match="shape"):
        env.step(0, np.zeros((3, 4), dtype=int))
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        env.step(0, np.full((4, 4), 2))
