"""Switchback and cluster-randomised EXP3-IX: exposure, estimators, regret, bad input."""

import math
import pickle

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.base import clone

from sklearn_icml.bandits import (
    ClusterRandomizedEXP3IX,
    InterferenceGridEnv,
    RandomRewardGridEnv,
    SwitchbackEXP3IX,
    exposure_probability,
    run_seeds,
)
from sklearn_icml.bandits._exp3ix_core import _exp3ix_on_sequence
from sklearn_icml.bandits._partitions import _monochrome_ball
from sklearn_icml.utils import spawn_seeds

P3 = np.array([0.5, 0.3, 0.2])


# ---------------------------------------------------------------------------- exposure


def _brute_axis_counts(L, r, ell, shifts):
    """Distinct cells met by each clipped window [x - r, x + r], by enumeration."""
    counts = np.empty((shifts.size, L), dtype=int)
    for a, s in enumerate(shifts):
        for x in range(L):
            window = range(max(0, x - r), min(L - 1, x + r) + 1)
            counts[a, x] = len({math.floor((v + s) / ell) for v in window})
    return counts


@pytest.mark.parametrize(
    "L, r, ell", [(8, 1, 6.0), (9, 2, 5.5), (5, 1, 2.5), (4, 0, 1.0), (7, 1, 9.0)]
)
def test_exposure_probability_matches_enumerated_shifts(L, r, ell):
    n = 600
    shifts = (np.arange(n) + 0.5) * ell / n  # a fine grid of shifts over [0, ell)
    cx = _brute_axis_counts(L, r, ell, shifts)  # (n, L): cells met along one axis
    # all n x n shift pairs: the ball meets cx[a, x] * cx[b, y] cells, all of arm i with
    # probability p_i ** cells; count the pairs by their (cx, cy) values
    share = np.stack([(cx == c).mean(axis=0) for c in (1, 2, 3)])  # (3, L)
    assert np.all(share[2] == 0)  # cell_size > 2r: never 3 cells along an axis
    brute = np.zeros((3, L, L))
    for c1 in (1, 2):
        for c2 in (1, 2):
            weight = np.outer(share[c1 - 1], share[c2 - 1])
            brute += weight[None] * P3[:, None, None] ** (c1 * c2)
    exact = exposure_probability(P3, L, r, ell, partition="shifted_grid")
    np.testing.assert_allclose(exact, brute, atol=1e-3)
    # corner, edge and interior units are all covered, and they differ when r > 0
    if r > 0 and L > 2 * r + 1:
        assert exact[0, 0, 0] > exact[0, 0, L // 2] > exact[0, L // 2, L // 2]


def test_exposure_probability_with_a_fixed_shift_counts_realised_cells():
    L, r, ell = 9, 1, 4.0
    shift = np.array([1.3, 3.9])
    prob = exposure_probability(P3, L, r, ell, partition="shifted_grid", shift=shift)
    for x in range(L):
        for y in range(L):
            xs = range(max(0, x - r), min(L - 1, x + r) + 1)
            ys = range(max(0, y - r), min(L - 1, y + r) + 1)
            cells = {
                (math.floor((a + shift[0]) / ell), math.floor((b + shift[1]) / ell))
                for a in xs
                for b in ys
            }
            np.testing.assert_allclose(prob[:, x, y], P3 ** len(cells), rtol=1e-12)


def test_monochrome_ball_matches_loops():
    rng = np.random.default_rng(0)
    for shape, r in [((5, 7), 1), ((6, 6), 0), ((9, 9), 2), ((7, 4), 5)]:
        for _ in range(10):
            Z = rng.integers(0, 2, shape)
            Z[: shape[0] // 2] = 0
            ref = np.array(
                [
                    [np.all(Z[max(0, x - r) : x + r + 1, max(0, y - r) : y + r + 1] == Z[x, y])
                     for y in range(shape[1])]
                    for x in range(shape[0])
                ]
            )
            np.testing.assert_array_equal(_monochrome_ball(Z, r), ref)


@pytest.mark.parametrize(
    "args, match",
    [
        (([0.5, 0.6], 5, 1, 6), "summing to 1"),
        (([1.5, -0.5], 5, 1, 6), "non-negative"),
        (([[0.5, 0.5]], 5, 1, 6), "1-D"),
        ((P3, 0, 1, 6), "grid_side"),
        ((P3, 5, -1, 6), "radius"),
        ((P3, 5, 1.5, 6), "radius"),
        ((P3, 5, 1, 2.0), r"cell_size must be > 2"),
        ((P3, 5, 0, 0.5), "cell_size must be a whole number >= 1"),
    ],
)
def test_exposure_probability_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        exposure_probability(*args)
    if "cell_size" in match:
        match = match.replace(" a whole number", "")
    with pytest.raises(ValueError, match=match):
        exposure_probability(*args, partition="shifted_grid")


def test_exposure_probability_bad_shift():
    with pytest.raises(ValueError, match="shift"):
        exposure_probability(P3, 5, 1, 3, partition="shifted_grid", shift=[0.0, 3.0])


# ---------------------------------------------------------------------------- policies


def _env(L=8, T=60, seed=0, **kw):
    return InterferenceGridEnv(grid_side=L, n_arms=3, horizon=T, theta=[0.5, 0.4, 0.3],
                               random_state=seed, **kw)


@pytest.mark.parametrize("policy_cls", [SwitchbackEXP3IX, ClusterRandomizedEXP3IX])
def test_one_arm_has_zero_regret(policy_cls):
    env = InterferenceGridEnv(grid_side=6, n_arms=1, horizon=40, random_state=0)
    result = policy_cls(n_arms=1, horizon=40, random_state=1).run(env)
    assert result.regret_ == 0.0
    np.testing.assert_array_equal(result.cumulative_regret_, 0.0)


def test_concentrated_weights_assign_arm_zero_and_give_the_exact_loss():
    env = _env(L=12, T=3)
    policy = ClusterRandomizedEXP3IX(n_arms=3, horizon=3, ix_gamma=0.05, random_state=0)
    Z = policy.select(0, 12)
    policy.update(0, Z, env.outcomes(0, Z))
    policy._core.log_weights[:] = [50.0, 0.0, 0.0]
    Z = policy.select(1, 12)
    np.testing.assert_array_equal(Z, 0)
    Y = env.outcomes(1, Z)
    policy.update(1, Z, Y)
    loss = policy.loss_estimates_[1]
    assert abs(loss[0] - np.mean(1.0 - Y) / (1.0 + 0.05)) <= 1e-12
    np.testing.assert_array_equal(loss[1:], 0.0)
    np.testing.assert_allclose(policy.exposure_rate_[1], [1.0, 0.0, 0.0])


def test_switchback_is_plain_exp3ix_on_the_fixed_arm_sequence():
    env = _env(L=10, T=300, seed=4)
    policy = SwitchbackEXP3IX(n_arms=3, horizon=300, random_state=104)
    result = policy.run(env)
    assert result.probs_.shape[0] == 300
    arms_policy = policy.arms_
    # the arm played is the one whose fixed-arm reward was realised
    np.testing.assert_allclose(
        result.rewards_, result.fixed_arm_rewards_[np.arange(300), arms_policy], atol=1e-12
    )
    arms_core = _exp3ix_on_sequence(
        env.all_fixed_arm_rewards(), policy.learning_rate_, policy.ix_gamma_, 104
    )
    np.testing.assert_array_equal(arms_policy, arms_core)
    assert len(set(arms_core.tolist())) == 3  # a real check: all arms get played


def _estimates_at_fixed_p(policy, env, p, n_draws):
    """HT-IX estimates of ``n_draws`` independent (shift, cell-arm) draws at fixed ``p``."""
    L = env.grid_side
    Z = policy.select(0, L)
    policy.update(0, Z, env.outcomes(0, Z))
    for t in range(1, n_draws + 1):
        policy._core.log_weights[:] = np.log(p)
        Z = policy.select(t, L)
        policy.update(t, Z, env.outcomes(0, Z))  # one fixed outcome model
    np.testing.assert_allclose(policy.probs_[1:], np.broadcast_to(p, (n_draws, 3)), atol=1e-12)
    return policy.loss_estimates_[1:]


@pytest.mark.slow
def test_ht_ix_is_unbiased_and_ix_shrinks_it():
    env = _env(L=12, T=1, seed=0)
    # r = kappa = 1: the exposure-mapped loss is exactly the fixed-arm loss
    target = np.array([np.mean(1.0 - env.outcomes(0, np.full((12, 12), i))) for i in range(3)])

    grid = {"partition": "shifted_grid"}  # the RRP has its own test in test_rrp.py
    unbiased = ClusterRandomizedEXP3IX(n_arms=3, horizon=20001, cell_size=6, ix_gamma=0.0,
                                       random_state=0,
                                       **grid)
    est = _estimates_at_fixed_p(unbiased, env, P3, 20000)  # 20 000 draws
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    assert np.all(np.abs(est.mean(axis=0) - target) <= 3 * se), (est.mean(axis=0), target, se)

    gamma = 0.1
    shrunk = ClusterRandomizedEXP3IX(n_arms=3, horizon=3001, cell_size=6, ix_gamma=gamma,
                                     random_state=0,
                                     **grid)
    est_g = _estimates_at_fixed_p(shrunk, env, P3, 3000)
    # same draws as the first 3000 of the unbiased run: smaller draw by draw
    assert np.all(est_g <= est[:3000] + 1e-15)
    assert np.all(est_g.mean(axis=0) < target)
    # and its mean is the exact shrunk expectation sum_u loss_u P_u / (P_u + gamma) / N
    prob = exposure_probability(P3, 12, 1, 6, **grid)
    loss_u = np.stack([1.0 - env.outcomes(0, np.full((12, 12), i)) for i in range(3)])
    expected = (loss_u * prob / (prob + gamma)).mean(axis=(1, 2))
    se_g = est_g.std(axis=0, ddof=1) / np.sqrt(est_g.shape[0])
    assert np.all(np.abs(est_g.mean(axis=0) - expected) <= 3 * se_g)


def test_fixed_partition_is_unbiased_given_its_shift():
    env = _env(L=12, T=1, seed=1)
    target = np.array([np.mean(1.0 - env.outcomes(0, np.full((12, 12), i))) for i in range(3)])
    policy = ClusterRandomizedEXP3IX(
        n_arms=3, horizon=2001, cell_size=6, ix_gamma=0.0, resample_partition=False,
        random_state=2,
        partition="shifted_grid",
    )
    est = _estimates_at_fixed_p(policy, env, P3, 2000)
    assert np.all(policy.shifts_ == policy.shifts_[0])  # drawn once
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    assert np.all(np.abs(est.mean(axis=0) - target) <= 3 * se)


def test_unit_level_randomisation_is_biased_under_interference():
    env = _env(L=12, T=1, seed=0)
    target = np.array([np.mean(1.0 - env.outcomes(0, np.full((12, 12), i))) for i in range(3)])
    policy = ClusterRandomizedEXP3IX(n_arms=3, horizon=801, cell_size=1, exposure_radius=0,
                                     ix_gamma=0.0,
                                     random_state=0)
    est = _estimates_at_fixed_p(policy, env, P3, 800)
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    # arm 0's units sit among worse arms: its loss is over-estimated, arm 2's under-estimated
    assert est.mean(axis=0)[0] - target[0] > 10 * se[0]
    assert target[2] - est.mean(axis=0)[2] > 10 * se[2]


def test_cells_share_one_arm_and_large_cells_are_few():
    grid = {"partition": "shifted_grid", "exposure_radius": 1}
    policy = ClusterRandomizedEXP3IX(n_arms=3, horizon=30, cell_size=5.5, random_state=0, **grid)
    env = _env(L=11, T=30)
    policy.run(env)
    assert policy.n_cells_.shape == (30,)
    L = 11
    # replay the rounds to look at each assignment
    replay = ClusterRandomizedEXP3IX(n_arms=3, horizon=30, cell_size=5.5, random_state=0, **grid)
    for t in range(30):
        Z = replay.select(t, L)
        s = replay._shift
        cx = np.floor((np.arange(L) + s[0]) / 5.5).astype(int)
        cy = np.floor((np.arange(L) + s[1]) / 5.5).astype(int)
        cells = cx[:, None] * 100 + cy[None, :]
        for c in np.unique(cells):
            assert np.unique(Z[cells == c]).size == 1
        assert replay.n_cells_.size == t  # n_cells_ counts updated rounds only
        replay.update(t, Z, env.outcomes(t, Z))
        assert len(np.unique(cells)) == replay.n_cells_[t]
    np.testing.assert_array_equal(replay.n_cells_, policy.n_cells_)

    big = ClusterRandomizedEXP3IX(n_arms=3, horizon=50, cell_size=11, random_state=3, **grid)
    big.run(_env(L=11, T=50))
    assert big.n_cells_.max() <= 4 and big.n_cells_.min() >= 1
    bigger = ClusterRandomizedEXP3IX(n_arms=3, horizon=50, cell_size=30, random_state=3, **grid)
    bigger.run(_env(L=11, T=50))
    assert bigger.n_cells_.max() <= 4


def test_regret_bookkeeping_and_best_arm_policy():
    theta = np.random.default_rng(5).uniform(0.3, 0.5, (80, 3))
    env = InterferenceGridEnv(grid_side=6, n_arms=3, horizon=80, theta=theta, random_state=0)
    policy = ClusterRandomizedEXP3IX(n_arms=3, horizon=80, random_state=0)
    result = policy.run(env)
    assert result is policy  # run returns the policy; the results are its *_ attributes
    assert result.cumulative_regret_[-1] == result.regret_ == policy.regret_
    fixed = env.all_fixed_arm_rewards()
    np.testing.assert_allclose(result.fixed_arm_rewards_, fixed)
    assert result.regret_ == pytest.approx(fixed.sum(axis=0).max() - result.rewards_.sum())
    assert policy.best_arm_ == env.hindsight_best_arm()

    best = env.hindsight_best_arm()
    for arm in range(3):
        always = SwitchbackEXP3IX(n_arms=3, horizon=80, random_state=0)
        always._assign = lambda t, p, arm=arm: np.full((6, 6), arm)
        res = always.run(env)
        gap = fixed[:, best].sum() - fixed[:, arm].sum()
        assert res.regret_ == pytest.approx(gap, abs=1e-9)
        if arm == best:
            assert abs(res.regret_) <= 1e-9


def test_same_seed_same_run_and_parallel_seeds_match():
    env = _env(L=8, T=50)
    pol = ClusterRandomizedEXP3IX(n_arms=3, horizon=50, random_state=7)
    a = pol.run(env)
    b = clone(pol).run(clone(env))
    np.testing.assert_array_equal(a.cumulative_regret_, b.cumulative_regret_)
    serial = run_seeds(pol, env, [0, 1, 2], n_jobs=1)
    with parallel_config(backend="threading"):  # no process start-up in the test suite
        parallel = run_seeds(pol, env, [0, 1, 2], n_jobs=2)
    # what a process backend ships to its workers
    np.testing.assert_array_equal(
        pickle.loads(pickle.dumps(pol)).run(pickle.loads(pickle.dumps(env))).cumulative_regret_,
        a.cumulative_regret_,
    )
    env_seed, policy_seed = spawn_seeds(1, 2)  # what run_seeds gives seed 1
    direct = clone(pol).set_params(random_state=policy_seed).run(
        clone(env).set_params(random_state=env_seed)
    )
    assert [r.regret_ for r in serial] == [r.regret_ for r in parallel]
    assert serial[1].regret_ == direct.regret_
    assert pol.random_state == 7 and env.random_state == 0  # left untouched


def test_noisy_outcomes_regret_uses_noise_free_rewards():
    env = _env(L=8, T=40, noise_std=0.2)
    policy = SwitchbackEXP3IX(n_arms=3, horizon=40, random_state=0)
    result = policy.run(env)
    assert not np.allclose(policy.observed_rewards_, result.rewards_)
    clean = _env(L=8, T=40)
    Zs = [np.full((8, 8), np.argmin(np.abs(clean.fixed_arm_rewards(t) - result.rewards_[t])))
          for t in range(40)]
    np.testing.assert_allclose(result.rewards_, [clean.mean_reward(t, Z) for t, Z in
                                                enumerate(Zs)], atol=1e-12)


def test_defaults_and_attributes():
    policy = ClusterRandomizedEXP3IX(n_arms=3, horizon=1000, exposure_radius=2)
    policy.select(0, 10)
    assert policy.learning_rate_ == pytest.approx(np.sqrt(2 * np.log(3) / 3000))
    assert policy.ix_gamma_ == pytest.approx(policy.learning_rate_ / 2)
    assert policy.cell_size_ == 12.0
    policy = ClusterRandomizedEXP3IX(n_arms=3, horizon=10, exposure_radius=0)
    assert policy.select(0, 4) is not None
    assert SwitchbackEXP3IX(n_arms=3, horizon=10).get_params()["horizon"] == 10


@pytest.mark.slow
def test_cluster_spread_shrinks_with_n_but_switchback_does_not():
    T = 50
    variances = {}
    for name, policy, seeds in [
        ("switchback", SwitchbackEXP3IX(n_arms=3, horizon=T), range(40)),
        ("cluster", ClusterRandomizedEXP3IX(n_arms=3, horizon=T, exposure_radius=1, cell_size=3),
         range(100)),
    ]:
        for L in (12, 17):  # N = 144 and 289 (x2.01)
            env = InterferenceGridEnv(grid_side=L, n_arms=3, horizon=T, theta=[0.5, 0.4, 0.3])
            regrets = [r.regret_ for r in run_seeds(policy, env, seeds)]
            variances[name, L] = np.var(regrets, ddof=1)
    cluster_ratio = variances["cluster", 17] / variances["cluster", 12]
    switch_ratio = variances["switchback", 17] / variances["switchback", 12]
    assert 0.5 * 0.7 <= cluster_ratio <= 0.5 * 1.3, cluster_ratio
    assert switch_ratio >= 0.8, switch_ratio


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "cls, kwargs, match",
    [
        (SwitchbackEXP3IX, {"n_arms": 0}, "n_arms"),
        (SwitchbackEXP3IX, {"horizon": 0}, "horizon"),
        (SwitchbackEXP3IX, {"learning_rate": 0.0}, "learning_rate"),
        (SwitchbackEXP3IX, {"learning_rate": -1.0}, "learning_rate"),
        (SwitchbackEXP3IX, {"ix_gamma": -0.1}, "ix_gamma"),
        (SwitchbackEXP3IX, {"ix_gamma": 0.5}, "ix_gamma"),
        (ClusterRandomizedEXP3IX, {"ix_gamma": 0.7}, "ix_gamma"),
        (SwitchbackEXP3IX, {"learning_rate": 1.2}, r"ix_gamma must be in \[0, 0.5\)"),
        (ClusterRandomizedEXP3IX, {"partition": "grid"}, "partition"),
        (ClusterRandomizedEXP3IX, {"exposure_radius": -1}, "exposure_radius"),
        (ClusterRandomizedEXP3IX, {"exposure_radius": 1.5}, "exposure_radius"),
        (ClusterRandomizedEXP3IX, {"exposure_radius": 1, "cell_size": 2.0}, "cell_size"),
        (ClusterRandomizedEXP3IX, {"exposure_radius": 2, "cell_size": 3.5}, "cell_size"),
        (ClusterRandomizedEXP3IX, {"exposure_radius": 0, "cell_size": 0.5}, "cell_size"),
        (ClusterRandomizedEXP3IX, {"random_state": "x"}, "random_state"),
    ],
)
def test_bad_parameters_raise(cls, kwargs, match):
    params = {"n_arms": 3, "horizon": 10, **kwargs}
    policy = cls(**params)
    with pytest.raises(ValueError, match=match):
        policy.select(0, 6)
    with pytest.raises(ValueError, match=match):
        cls(**params).run(_env(L=6, T=10))


@pytest.mark.parametrize("cls", [SwitchbackEXP3IX, ClusterRandomizedEXP3IX])
def test_bad_update_input_raises(cls):
    env = _env(L=6, T=10)
    policy = cls(n_arms=3, horizon=10, random_state=0)
    Z = policy.select(0, 6)
    Y = env.outcomes(0, Z)
    bad = [
        (Z[:5], Y, "Z must have shape"),
        (np.full((6, 6), 3), Y, r"\[0, 3\)"),
        (np.full((6, 6), -1), Y, r"\[0, 3\)"),
        ((Z + 1) % 3, Y, "assignment that select returned"),
        (Z, Y[:, :5], "Y must have shape"),
        (Z, np.where(np.eye(6, dtype=bool), 1.5, Y), r"\[0, 1\]"),
        (Z, np.where(np.eye(6, dtype=bool), -0.1, Y), r"\[0, 1\]"),
        (Z, np.where(np.eye(6, dtype=bool), np.nan, Y), "finite"),
    ]
    Y_copy = Y.copy()
    for Z_bad, Y_bad, match in bad:
        with pytest.raises(ValueError, match=match):
            policy.update(0, Z_bad, Y_bad)
    with pytest.raises(ValueError, match="pending round is 0"):
        policy.update(1, Z, Y)
    policy.update(0, Z, Y)
    np.testing.assert_array_equal(Y, Y_copy)  # not clipped or modified in place
    with pytest.raises(ValueError, match="pending round is None"):
        policy.update(0, Z, Y)  # twice for the same round
    with pytest.raises(ValueError, match="in order"):
        policy.select(2, 6)
    with pytest.raises(ValueError, match="grid_side must stay"):
        policy.select(1, 7)


def test_select_errors():
    with pytest.raises(ValueError, match="start at round t=0"):
        SwitchbackEXP3IX(n_arms=3, horizon=10).select(1, 5)
    with pytest.raises(ValueError, match="grid_side"):
        SwitchbackEXP3IX(n_arms=3, horizon=10).select(0, 0)
    with pytest.raises(ValueError, match="'t' parameter of SwitchbackEXP3IX.select"):
        SwitchbackEXP3IX(n_arms=3, horizon=10).select(0.0, 5)
    policy = SwitchbackEXP3IX(n_arms=3, horizon=1)
    Z = policy.select(0, 4)
    policy.update(0, Z, np.full((4, 4), 0.5))
    with pytest.raises(ValueError, match="horizon"):
        policy.select(1, 4)


def test_run_rejects_a_mismatched_env():
    with pytest.raises(ValueError, match="n_arms"):
        SwitchbackEXP3IX(n_arms=2, horizon=10).run(_env(L=4, T=10))
    with pytest.raises(ValueError, match="env.horizon"):
        SwitchbackEXP3IX(n_arms=3, horizon=5).run(_env(L=4, T=10))
    with pytest.raises(TypeError, match="env must be"):
        SwitchbackEXP3IX(n_arms=3, horizon=5).run(object())


def test_run_seeds_bad_input():
    with pytest.raises(ValueError, match="seeds"):
        run_seeds(SwitchbackEXP3IX(n_arms=3, horizon=5), _env(L=4, T=5), [])


@pytest.mark.parametrize(
    "cls, args, names",
    [
        (SwitchbackEXP3IX, (3, 20), "n_arms, horizon"),
        (ClusterRandomizedEXP3IX, (3, 20), "n_arms, horizon"),
        (InterferenceGridEnv, (6, 3, 20), "grid_side, n_arms, horizon"),
        (RandomRewardGridEnv, (6, 3, 20), "grid_side, n_arms, horizon"),
    ],
)
def test_constructor_by_position_warns_and_gives_the_same_object(cls, args, names):
    """Constructor parameters are keyword-only; by position they still work, with a warning."""
    keywords = dict(zip(names.split(", "), args, strict=True))
    expected = cls(**keywords, random_state=0)
    with pytest.warns(FutureWarning, match=f"pass {names} as keyword arguments"):
        obj = cls(*args, random_state=0)
    assert obj.get_params() == expected.get_params()
    if cls in (SwitchbackEXP3IX, ClusterRandomizedEXP3IX):
        env = InterferenceGridEnv(grid_side=6, n_arms=3, horizon=20, random_state=0)
        np.testing.assert_array_equal(obj.run(env).cumulative_regret_,
                                      clone(expected).run(clone(env)).cumulative_regret_)


def test_run_is_quiet_by_default_and_verbose_reports_the_regret(capsys):
    env = InterferenceGridEnv(grid_side=4, n_arms=3, horizon=40, theta=[0.5, 0.4, 0.3],
                              random_state=0)
    SwitchbackEXP3IX(n_arms=3, horizon=40, random_state=0).run(env)
    assert capsys.readouterr().out == ""
    policy = SwitchbackEXP3IX(n_arms=3, horizon=40, random_state=0, verbose=1).run(env)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 11 and lines[-1].startswith("[SwitchbackEXP3IX] done, ")
    assert lines[3].startswith("[SwitchbackEXP3IX] round 16/40: regret ")
    assert f"round 40/40: regret {policy.regret_:.6g}, " in lines[9]
    assert not hasattr(policy, "_progress")  # nothing of the run's printing is kept
