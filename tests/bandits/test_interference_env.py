"""InterferenceGridEnv: outcome model against brute force, bookkeeping, bad input."""

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_icml.bandits import InterferenceGridEnv
from sklearn_icml.bandits._interference_env import _ball_size, _box_sum


def _brute_outcomes(env, t, Z):
    """Y_{t,u}(Z) straight from the definition, one unit at a time."""
    L = env.grid_side
    theta = env.theta_[t]
    base = env.base_level + env.base_amplitude * np.sin(2 * np.pi * t / 50 + env.phases_)
    Y = np.empty((L, L))
    for x in range(L):
        for y in range(L):
            if env.interference == "neighborhood":
                k = env.kappa
                ball = Z[max(0, x - k) : x + k + 1, max(0, y - k) : y + k + 1]
                share = np.bincount(ball.ravel(), minlength=env.n_arms) / ball.size
            else:
                xs, ys = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
                d = np.maximum(np.abs(xs - x), np.abs(ys - y))
                w = (1.0 + d) ** (-env.beta)
                share = np.bincount(Z.ravel(), weights=w.ravel(), minlength=env.n_arms)
                share /= w.sum()
            Y[x, y] = base[x, y] + share @ theta
    return Y


def test_box_sum_matches_loops():
    rng = np.random.default_rng(0)
    for shape, r in [((5, 7), 1), ((6, 6), 0), ((4, 9), 3), ((1, 1), 2)]:
        f = rng.integers(0, 5, shape)
        ref = np.array(
            [
                [f[max(0, x - r) : x + r + 1, max(0, y - r) : y + r + 1].sum()
                 for y in range(shape[1])]
                for x in range(shape[0])
            ]
        )
        np.testing.assert_array_equal(_box_sum(f, r), ref)
    # clipped ball sizes: corner 4, edge 6, interior 9 for r = 1
    sizes = _ball_size(5, 1)
    assert (sizes[0, 0], sizes[0, 2], sizes[2, 2]) == (4, 6, 9)


@pytest.mark.parametrize(
    "params",
    [
        {"interference": "neighborhood", "kappa": 1},
        {"interference": "neighborhood", "kappa": 2},
        {"interference": "neighborhood", "kappa": 0},
        {"interference": "power_law", "beta": 1.5},
    ],
)
def test_outcomes_match_brute_force(params):
    env = InterferenceGridEnv(grid_side=7, n_arms=3, horizon=60, random_state=3, **params)
    rng = np.random.default_rng(1)
    for t in (0, 17, 59):
        Z = rng.integers(0, 3, (7, 7))
        Y = env.outcomes(t, Z)
        np.testing.assert_allclose(Y, _brute_outcomes(env, t, Z), atol=1e-12)
        assert np.isclose(env.mean_reward(t, Z), Y.mean(), atol=1e-15)


@pytest.mark.parametrize("interference", ["neighborhood", "power_law"])
def test_fixed_arm_rewards_are_the_rewards_of_constant_assignments(interference):
    theta = np.random.default_rng(0).uniform(0.3, 0.5, (20, 4))
    env = InterferenceGridEnv(grid_side=6, n_arms=4, horizon=20, interference=interference,
                              theta=theta, random_state=0)
    for t in (0, 7, 19):
        exact = [env.mean_reward(t, np.full((6, 6), i)) for i in range(4)]
        np.testing.assert_allclose(env.fixed_arm_rewards(t), exact, atol=1e-12)
    table = env.all_fixed_arm_rewards()
    assert table.shape == (20, 4)
    np.testing.assert_allclose(table[7], env.fixed_arm_rewards(7))
    assert env.hindsight_best_arm() == int(np.argmax(table.sum(axis=0)))


def test_interference_moves_outcomes_of_neighbours_only():
    env = InterferenceGridEnv(grid_side=9, n_arms=2, horizon=5, kappa=1, theta=[0.5, 0.3],
                              random_state=0)
    Z = np.zeros((9, 9), dtype=int)
    Y0 = env.outcomes(0, Z)
    Z[4, 4] = 1
    diff = env.outcomes(0, Z) - Y0
    changed = np.argwhere(np.abs(diff) > 1e-12)
    # exactly the 3 x 3 block around (4, 4) moves, each by (0.3 - 0.5) / 9
    assert {tuple(c) for c in changed} == {(x, y) for x in (3, 4, 5) for y in (3, 4, 5)}
    np.testing.assert_allclose(diff[3:6, 3:6], -0.2 / 9)


def test_phases_follow_the_documented_seeding():
    env = InterferenceGridEnv(grid_side=5, n_arms=3, horizon=10, random_state=7)
    env.fixed_arm_rewards(0)
    expected = np.random.default_rng(7).uniform(0, 2 * np.pi, size=(5, 5))
    np.testing.assert_array_equal(env.phases_, expected)
    # same seed, same outcomes; another seed, other phases
    Z = np.zeros((5, 5), dtype=int)
    again = InterferenceGridEnv(grid_side=5, n_arms=3, horizon=10, random_state=7)
    np.testing.assert_array_equal(env.outcomes(3, Z), again.outcomes(3, Z))
    other = InterferenceGridEnv(grid_side=5, n_arms=3, horizon=10, random_state=8)
    assert not np.allclose(env.outcomes(3, Z), other.outcomes(3, Z))


def test_default_theta_and_outcome_range():
    env = InterferenceGridEnv(grid_side=8, n_arms=3, horizon=100, random_state=0)
    np.testing.assert_allclose(env.theta_[0], [0.5, 0.4, 0.3])
    rng = np.random.default_rng(0)
    for t in range(0, 100, 9):
        Y = env.outcomes(t, rng.integers(0, 3, (8, 8)))
        assert Y.min() >= 0.0 and Y.max() <= 1.0


def test_noise_is_added_to_observations_not_to_rewards():
    env = InterferenceGridEnv(grid_side=8, n_arms=3, horizon=10, noise_std=0.3, random_state=0)
    clean = InterferenceGridEnv(grid_side=8, n_arms=3, horizon=10, random_state=0)
    Z = np.random.default_rng(0).integers(0, 3, (8, 8))
    Y, reward = env.step(2, Z)
    assert Y.min() >= 0.0 and Y.max() <= 1.0
    assert np.abs(Y - clean.outcomes(2, Z)).max() > 0.1
    assert reward == pytest.approx(clean.mean_reward(2, Z), abs=1e-15)
    assert env.mean_reward(2, Z) == pytest.approx(clean.mean_reward(2, Z), abs=1e-15)


def test_inputs_are_not_modified_and_clone_works():
    theta = np.array([0.5, 0.4, 0.3])
    env = InterferenceGridEnv(grid_side=4, n_arms=3, horizon=10, theta=theta, random_state=0)
    env.theta_[:] = 0.0  # the env's own copy
    np.testing.assert_array_equal(theta, [0.5, 0.4, 0.3])
    Z = np.zeros((4, 4), dtype=np.int64)
    env2 = clone(InterferenceGridEnv(grid_side=4, n_arms=3, horizon=10, theta=theta,
                                     random_state=0))
    env2.outcomes(0, Z)
    np.testing.assert_array_equal(Z, 0)
    assert env2.get_params()["grid_side"] == 4


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"grid_side": 0}, "grid_side"),
        ({"grid_side": 2.5}, "grid_side"),
        ({"n_arms": 0}, "n_arms"),
        ({"horizon": 0}, "horizon"),
        ({"interference": "gaussian"}, "interference"),
        ({"interference": "power_law", "beta": 0.0}, "beta"),
        ({"beta": -1.0}, "beta"),
        ({"kappa": -1}, "kappa"),
        ({"theta": [0.9, 0.4, 0.3]}, r"\[0, 1\]"),
        ({"theta": [0.5, 0.4, -0.3]}, r"\[0, 1\]"),
        ({"theta": [0.5, 0.4]}, "theta must have shape"),
        ({"theta": [0.5, np.nan, 0.3]}, "theta"),
        ({"noise_std": -0.1}, "noise_std"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_bad_parameters_raise_at_first_use(kwargs, match):
    params = {"grid_side": 4, "n_arms": 3, "horizon": 10, **kwargs}
    env = InterferenceGridEnv(**params)  # __init__ only stores
    with pytest.raises(ValueError, match=match):
        env.fixed_arm_rewards(0)
    with pytest.raises(ValueError, match=match):
        env.theta_  # noqa: B018 (reading a derived attribute is a first use too)


def test_set_params_rechecks():
    env = InterferenceGridEnv(grid_side=4, n_arms=3, horizon=10)
    env.fixed_arm_rewards(0)
    env.set_params(theta=[0.95, 0.4, 0.3])
    with pytest.raises(ValueError, match="theta"):
        env.fixed_arm_rewards(0)


@pytest.mark.parametrize(
    "Z, match",
    [
        (np.zeros((3, 4), dtype=int), "shape"),
        (np.full((4, 4), 3), r"\[0, 3\)"),
        (np.full((4, 4), -1), r"\[0, 3\)"),
        (np.full((4, 4), 0.5), "integer"),
        (np.full((4, 4), "a"), "integer"),
    ],
)
def test_bad_assignment_raises(Z, match):
    env = InterferenceGridEnv(grid_side=4, n_arms=3, horizon=10, random_state=0)
    with pytest.raises(ValueError, match=match):
        env.outcomes(0, Z)


@pytest.mark.parametrize("t", [-1, 10, 1.5, True])
def test_bad_round_raises(t):
    env = InterferenceGridEnv(grid_side=4, n_arms=3, horizon=10, random_state=0)
    with pytest.raises(ValueError, match="round index|'t' parameter"):
        env.fixed_arm_rewards(t)
