"""The robust random partition: layout, sampler, exact exposure, HT-IX unbiasedness."""

import itertools

import numpy as np
import pytest

from sklearn_icml.bandits import (
    ClusterRandomizedEXP3IX,
    RandomRewardGridEnv,
    exposure_probability,
)
from sklearn_icml.bandits._exp3ix_core import ht_ix_loss_estimate
from sklearn_icml.bandits._partitions import _draw_rrp, _monochrome_ball, _RRPLayout

# (L, cell_size, strip_width, radius): strips of 2r; narrow strips (a ball can meet two
# cores: three regions along an axis); no strips; a partial last cell; radius 2
CONFIGS = [(7, 4, 2, 1), (6, 3, 1, 1), (5, 3, 0, 1), (8, 5, 3, 1), (9, 5, 4, 2)]


def _pieces(L, ell, w):
    """Every unit's piece and candidate cells, straight from the RRP's definition.

    Along an axis a coordinate lies in the strip of the border at ``m = j * ell`` (between
    cells ``j - 1`` and ``j``) when ``m - w // 2 <= x < m - w // 2 + w``; otherwise in the
    core of cell ``x // ell``. A unit's piece is the pair of its two axis memberships.
    """
    n_cells = -(-L // ell)
    axis = []
    for x in range(L):
        strip = [j for j in range(1, n_cells) if j * ell - w // 2 <= x < j * ell - w // 2 + w]
        axis.append(("strip", strip[0]) if strip else ("core", x // ell))

    def cells(member):
        kind, j = member
        return (j,) if kind == "core" else (j - 1, j)

    pieces = {}
    for x in range(L):
        for y in range(L):
            key = (axis[x], axis[y])
            pieces.setdefault(key, [tuple(itertools.product(cells(axis[x]), cells(axis[y]))),
                                    []])[1].append((x, y))
    return n_cells, list(pieces.values())


def _brute_exposure(L, ell, w, r, p):
    """P(ball of every unit monochrome in arm i): all partitions x all cell arms, summed."""
    n_cells, pieces = _pieces(L, ell, w)
    k = len(p)
    prob = np.zeros((k, L, L))
    choice_sets = [cands for cands, _ in pieces]
    n_partitions = np.prod([len(c) for c in choice_sets])
    cell_arm_maps = np.array(list(itertools.product(range(k), repeat=n_cells * n_cells)))
    weight_arms = np.prod(np.asarray(p)[cell_arm_maps], axis=1)  # P(cell arms)
    for choice in itertools.product(*choice_sets):
        label = np.empty((L, L), dtype=int)
        for (cx, cy), (_, units) in zip(choice, pieces):
            for x, y in units:
                label[x, y] = cx * n_cells + cy
        Z = cell_arm_maps[:, label]  # every arm map of the cells at once
        mono = _brute_monochrome(Z, r)
        for i in range(k):
            prob[i] += (weight_arms[:, None, None] * (mono & (Z == i))).sum(axis=0)
    return prob / n_partitions


def _brute_monochrome(Z, r):
    L = Z.shape[-1]
    out = np.empty(Z.shape, dtype=bool)
    for x in range(L):
        for y in range(L):
            ball = Z[:, max(0, x - r) : x + r + 1, max(0, y - r) : y + r + 1]
            out[:, x, y] = np.all(ball == Z[:, x, y][:, None, None], axis=(1, 2))
    return out


@pytest.mark.parametrize("L, ell, w, r", CONFIGS)
def test_exposure_probability_matches_brute_force_over_all_partitions(L, ell, w, r):
    p = np.array([0.6, 0.3, 0.1]) if L <= 6 else np.array([0.7, 0.3])
    exact = exposure_probability(p, L, r, ell, strip_width=w)
    np.testing.assert_allclose(exact, _brute_exposure(L, ell, w, r, p), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("L, ell, w, r", CONFIGS)
def test_layout_regions_follow_the_definition(L, ell, w, r):
    layout = _RRPLayout(L, r, ell, w)
    n_cells, pieces = _pieces(L, ell, w)
    assert layout.n_cells == n_cells
    # cell arms = cell ids: the assignment is then each unit's cell
    rng = np.random.default_rng(0)
    cx, cy = layout.draw_cells(rng, size=(2000,))
    ids = np.arange(n_cells * n_cells).reshape(n_cells, n_cells)
    label = layout.assign(cx, cy, np.broadcast_to(ids, (2000, n_cells, n_cells)))
    for cands, units in pieces:
        xs, ys = np.array(units).T
        got = label[:, xs, ys]
        assert np.all(got == got[:, :1])  # a piece joins one cell as a whole
        allowed = [a * n_cells + b for a, b in cands]
        assert np.isin(got[:, 0], allowed).all()
        # equal probabilities over the candidates (4000 draws per piece at most 4 ways)
        share = np.array([(got[:, 0] == a).mean() for a in allowed])
        se = np.sqrt(share * (1 - share) / 2000)
        assert np.all(np.abs(share - 1 / len(allowed)) <= 4 * se + 1e-12)


def _mc_exposure(layout, p, n_draws, rng, chunk=20_000):
    """Share of draws of the sampler whose ball of every unit is monochrome in arm i."""
    L = layout.grid_side
    hits = np.zeros((len(p), L, L))
    for start in range(0, n_draws, chunk):
        Z, _, _ = _draw_rrp(layout, p, rng, size=(min(chunk, n_draws - start),))
        mono = _monochrome_ball(Z, layout.radius)
        for i in range(len(p)):
            hits[i] += (mono & (Z == i)).sum(axis=0)
    return hits / n_draws


@pytest.mark.parametrize("L, ell, w, r", [(14, 4, 2, 1), (11, 5, 1, 2)])
def test_exposure_probability_matches_a_monte_carlo_of_the_sampler(L, ell, w, r):
    p = np.array([0.7, 0.3])
    layout = _RRPLayout(L, r, ell, w)
    n = 100_000
    mc = _mc_exposure(layout, p, n, np.random.default_rng(0))
    exact = exposure_probability(p, L, r, ell, strip_width=w)
    se = np.sqrt(exact * (1 - exact) / n)
    z = (mc - exact) / se
    # units of every kind: a corner, an edge, a core, beside a strip, in a strip, in a quad,
    # in the partial last cell: within 3 standard errors each
    picks = [(0, 0), (0, L // 2), (1, 1), (ell - 1, 1), (ell, 1), (ell, ell), (ell - 1, ell),
             (L - 1, L - 1), (L - 2, ell)]
    for x, y in picks:
        assert np.all(np.abs(z[:, x, y]) <= 3), (x, y, z[:, x, y])
    # every unit and arm: within the Bonferroni bound of 2 L^2 simultaneous tests at 1 %
    assert np.abs(z).max() <= 4.5, np.abs(z).max()
    # the distinct exposure structures are really different: the test is not vacuous
    assert np.unique(exact[0].round(12)).size >= 3


@pytest.mark.slow
def test_ht_estimator_is_unbiased_under_rrp():
    L, k, n = 13, 2, 40_000
    p = np.array([0.65, 0.35])
    env = RandomRewardGridEnv(grid_side=L, n_arms=k, horizon=1, interference_radius=1,
                              random_state=3)
    target = 1.0 - env.fixed_arm_rewards(0)  # exposure radius 1 = kappa: no truncation
    layout = _RRPLayout(L, 1, 5, 2)
    rng = np.random.default_rng(1)
    estimates, naive = [], []
    for _ in range(n // 10_000):
        Z, _, _ = _draw_rrp(layout, p, rng, size=(10_000,))
        Y = env._noise_free(0, Z)  # the batch of outcomes, as step gives them one by one
        mono = _monochrome_ball(Z, 1)
        for out, prob in [(estimates, layout.exposure(p[Z])), (naive, p[Z])]:
            weight = (1.0 - Y) / prob
            out.append(np.stack([(weight * (mono & (Z == i))).mean(axis=(1, 2))
                                 for i in range(k)], axis=1))
    est = np.concatenate(estimates)
    se = est.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(est.mean(axis=0) - target) <= 3 * se), (est.mean(0), target, se)
    # the test has power: dividing by the unit's own arm probability instead is biased
    assert np.all(target - np.concatenate(naive).mean(axis=0) > 10 * se)
    # the same numbers as the library's estimator, draw by draw
    for j in range(5):
        exposed = mono[j]
        exposure = layout.exposure(p[Z[j]])
        lib, _ = ht_ix_loss_estimate(Z[j], Y[j], exposed, exposure, 0.0, k)
        np.testing.assert_allclose(lib, est[-10_000 + j], rtol=1e-12)
    # implicit exploration shrinks it: the mean is the exact sum_u loss_u P / (P + gamma)
    gamma = 0.2
    prob = exposure_probability(p, L, 1, 5, strip_width=2)
    loss_u = 1.0 - env.rewards(0)
    shrunk = (loss_u * prob / (prob + gamma)).mean(axis=(1, 2))
    assert np.all(shrunk < target)


def test_policy_uses_the_exact_rrp_probabilities():
    L = 13
    env = RandomRewardGridEnv(grid_side=L, n_arms=2, horizon=4, random_state=0)
    policy = ClusterRandomizedEXP3IX(n_arms=2, horizon=4, cell_size=5, ix_gamma=0.1,
                                     random_state=0)
    for t in range(4):
        Z = policy.select(t, L)
        Y = env.outcomes(t, Z)
        p = policy._core.probs()
        policy.update(t, Z, Y)
        prob = exposure_probability(p, L, 1, 5)
        mono = _monochrome_ball(Z, 1)
        expect = [((1 - Y) * (mono & (Z == i)) / (prob[i] + 0.1)).mean() for i in range(2)]
        np.testing.assert_allclose(policy.loss_estimates_[t], expect, rtol=1e-12)
    assert policy.strip_width_ == 2 and policy.cell_size_ == 5.0
    # every round: 3 x 3 cells, all of which hold units
    np.testing.assert_array_equal(policy.n_cells_, 9)
    assert not hasattr(policy, "shifts_")


def test_rrp_is_drawn_afresh_each_round_and_replayable():
    L = 12
    a = ClusterRandomizedEXP3IX(n_arms=2, horizon=30, random_state=5)
    b = ClusterRandomizedEXP3IX(n_arms=2, horizon=30, random_state=5)
    env = RandomRewardGridEnv(grid_side=L, n_arms=2, horizon=30, random_state=0)
    a.run(env)
    b.run(env)
    np.testing.assert_array_equal(a.loss_estimates_, b.loss_estimates_)
    # the cells of the strips change between rounds under the default
    policy = ClusterRandomizedEXP3IX(n_arms=2, horizon=30, random_state=5)
    draws = []
    for t in range(6):
        Z = policy.select(t, L)
        draws.append(policy._drawn[:2])
        policy.update(t, Z, env.outcomes(t, Z))
    assert any(not np.array_equal(draws[0][0], d[0]) for d in draws[1:])


def test_fixed_rrp_counts_the_realised_cells_and_stays_unbiased():
    L, ell = 11, 4
    layout = _RRPLayout(L, 1, ell, 2)
    cx, cy = layout.draw_cells(np.random.default_rng(2))
    n = layout.n_cells
    label = layout.assign(cx, cy, np.arange(n * n).reshape(n, n))
    brute = np.array([[np.unique(label[max(0, x - 1) : x + 2, max(0, y - 1) : y + 2]).size
                       for y in range(L)] for x in range(L)])
    np.testing.assert_array_equal(layout.realised_cell_count(cx, cy), brute)
    assert layout.n_used_cells(cx, cy) == np.unique(label).size

    env = RandomRewardGridEnv(grid_side=L, n_arms=2, horizon=1, random_state=1)
    target = 1.0 - env.fixed_arm_rewards(0)
    policy = ClusterRandomizedEXP3IX(n_arms=2, horizon=3001, cell_size=ell, ix_gamma=0.0,
                                     resample_partition=False, random_state=2)
    p = np.array([0.6, 0.4])
    Z = policy.select(0, L)
    policy.update(0, Z, env.outcomes(0, Z))
    first = policy._drawn
    for t in range(1, 3001):
        policy._core.log_weights[:] = np.log(p)
        Z = policy.select(t, L)
        policy.update(t, Z, env.outcomes(0, Z))
    assert policy._drawn is first  # drawn once
    est = policy.loss_estimates_[1:]
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    assert np.all(np.abs(est.mean(axis=0) - target) <= 3 * se)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"cell_size": 5.5}, "whole number"),
        ({"cell_size": 2}, r"cell_size must be > 2"),
        ({"cell_size": 4, "strip_width": 5}, "strip_width must be in"),
        ({"strip_width": -1}, "strip_width"),
        ({"strip_width": 1.5}, "strip_width"),
        ({"partition": "voronoi"}, "partition"),
    ],
)
def test_bad_rrp_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ClusterRandomizedEXP3IX(n_arms=2, horizon=10, **kwargs).select(0, 10)


def test_exposure_probability_rrp_bad_input():
    with pytest.raises(ValueError, match="shift is for"):
        exposure_probability([0.5, 0.5], 10, 1, 6, shift=[0.0, 0.0])
    with pytest.raises(ValueError, match="strip_width must be in"):
        exposure_probability([0.5, 0.5], 10, 1, 6, strip_width=7)
    with pytest.raises(ValueError, match="whole number"):
        exposure_probability([0.5, 0.5], 10, 1, 6.5)


@pytest.mark.parametrize("L, r", [(20, 1), (31, 2), (9, 1)])
def test_default_rrp_keeps_every_ball_in_one_cluster_with_probability_at_least_one_16th(L, r):
    policy = ClusterRandomizedEXP3IX(n_arms=2, horizon=5, exposure_radius=r)
    policy.select(0, L)
    law = policy._layout.cell_count_law
    assert law.shape[-1] == 4  # at most a core, two strips and a quad
    assert law[..., 0].min() == pytest.approx(1 / 16)
    prob = exposure_probability([0.9, 0.1], L, r, policy.cell_size_)
    assert np.all(prob[1] >= 0.1 / 16)
