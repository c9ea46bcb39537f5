"""Multi-agent best arm identification: SE, Cl-BAI, BAI-Cl, BAI-Cl++, naive."""

import math

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa: F401

from sklearn_icml.bandits import (  # isort: skip (after the experimental import)
    BAICl,
    BAIClPlusPlus,
    ClBAI,
    ClusteredBanditEnv,
    NaiveBAI,
    best_arm_accuracy,
    make_clustered_bandit,
    run_seeds,
    successive_elimination,
)
from sklearn_icml.bandits import _agent_clustering as clustering
from sklearn_icml.bandits._successive_elimination import _batched_se

STRESS_MEANS = np.array([[0.9, 0.7, 0.3, 0.0], [0.7, 0.9, 0.3, 0.0]])
STRESS_ASSIGNMENT = np.arange(20) % 2


def n_r(r, n_arms, delta):
    """Closed form of the pulls per active arm after round r."""
    eps = 2.0**-r
    return math.ceil(2 / eps**2 * math.log(4 * n_arms * r**2 / delta))


def seeds_and_scores(algo, means, assignment, seeds, **kwargs):
    """The runs of base.run_seeds on ClusteredBanditEnv(means=means, assignment=assignment),
    and their scores."""
    env = ClusteredBanditEnv(means=means, assignment=assignment)
    runs = run_seeds(algo, env, seeds, **kwargs)
    return runs, np.array([best_arm_accuracy(run, env) for run in runs])


def generated(n_agents, n_clusters=3, n_arms=10, seed=0, **env_kwargs):
    means, assignment = make_clustered_bandit(n_agents, n_clusters, n_arms, random_state=seed)
    env = ClusteredBanditEnv(means=means, assignment=assignment, random_state=seed, **env_kwargs)
    return means, assignment, env


# ---------------------------------------------------------------- successive elimination


def test_se_single_arm_returns_at_once():
    env = ClusteredBanditEnv(means=STRESS_MEANS, assignment=[0], random_state=0)
    res = successive_elimination(env, 0, [2], delta=0.1)
    assert res.active.tolist() == [2] and res.rounds == 0
    assert res.counts.tolist() == [0] and env.total_pulls_ == 0


def test_se_gap_one_is_decided_by_round_two():
    env = ClusteredBanditEnv(means=[[1.0, 0.0]], assignment=[0], random_state=0)
    n_seeds = 400
    ok = 0
    for _ in range(n_seeds):
        res = successive_elimination(env, 0, [0, 1], delta=0.01)
        ok += res.rounds <= 2 and res.active.tolist() == [0]
    assert ok >= 0.99 * n_seeds


def test_se_counts_follow_closed_form():
    # near-noiseless rewards make the elimination rounds known: gap 0.9 > 2 eps_2, gap 0.3
    # > 2 eps_3, and neither gap exceeds 2 eps of the round before
    env = ClusteredBanditEnv(means=[[1.0, 0.7, 0.1]], assignment=[0], sigma=1e-9, random_state=0)
    res = successive_elimination(env, 0, [0, 1, 2], delta=0.05)
    assert res.rounds == 3 and res.active.tolist() == [0]
    expected = [n_r(3, 3, 0.05), n_r(3, 3, 0.05), n_r(2, 3, 0.05)]
    assert res.counts.tolist() == expected
    assert env.total_pulls_ == sum(expected)
    np.testing.assert_allclose(res.means, [1.0, 0.7, 0.1], atol=1e-6)


def test_se_counts_with_noise_are_round_sizes():
    means, assignment = make_clustered_bandit(1, 1, 8, random_state=1)
    env = ClusteredBanditEnv(means=means, assignment=assignment, random_state=1)
    res = successive_elimination(env, 0, np.arange(8), delta=0.05)
    sizes = [n_r(r, 8, 0.05) for r in range(1, res.rounds + 1)]
    assert all(c in sizes for c in res.counts)
    winner = np.flatnonzero(np.arange(8) == res.active[0])[0]
    assert res.counts[winner] == sizes[-1] and res.counts.sum() == env.total_pulls_


def test_se_max_rounds_caps_rounds():
    env = ClusteredBanditEnv(means=[[1.0, 0.7, 0.1]], assignment=[0], sigma=1e-9, random_state=0)
    res = successive_elimination(env, 0, [0, 1, 2], delta=0.05, max_rounds=1)
    assert res.rounds == 1 and res.active.tolist() == [0, 1, 2]
    assert res.counts.tolist() == [n_r(1, 3, 0.05)] * 3


def test_se_never_caps_silently_on_tied_arms():
    with pytest.warns(UserWarning, match="tied"):
        env = ClusteredBanditEnv(means=[[0.5, 0.5, 0.1]], assignment=[0], random_state=0).reset()
    with pytest.raises(RuntimeError, match="max_total_pulls"):
        successive_elimination(env, 0, [0, 1, 2], delta=0.05)
    with pytest.raises(RuntimeError, match="max_total_pulls=1000"):
        successive_elimination(env, 0, [0, 1], delta=0.05, max_total_pulls=1000)
    # the algorithms refuse such an instance before pulling at all
    with pytest.raises(ValueError, match="tied best arms"):
        NaiveBAI().run(env)


def test_batched_se_matches_one_agent_at_a_time():
    """Lockstep SE of many agents = each agent alone (near-noiseless, so deterministic)."""
    means, assignment = make_clustered_bandit(9, 3, 8, random_state=2)
    arms = np.tile(np.arange(8), (9, 1))
    env = ClusteredBanditEnv(means=means, assignment=assignment, sigma=1e-9, random_state=0)
    batch = _batched_se(env._draw, np.arange(9), arms, 0.01, None, 10**12)
    for i in range(9):
        alone = successive_elimination(env, i, np.arange(8), delta=0.01)
        np.testing.assert_array_equal(np.flatnonzero(batch[0][i]), alone.active)
        np.testing.assert_array_equal(batch[2][i], alone.counts)
        assert batch[3][i] == alone.rounds
    # with a round cap too
    capped = _batched_se(env._draw, np.arange(9), arms, 0.01, 4, 10**12)
    assert capped[3].max() == 4


# ------------------------------------------------------------------------- clustering rule


def test_clustering_rule_by_hand():
    eta = 0.4  # edge iff |diff| <= 0.2 on every arm active for either agent
    means = np.array(
        [
            [0.90, 0.50, 0.30, 0.20],  # agent 0, active {0}
            [0.95, 0.45, 0.30, 0.25],  # agent 1, active {0, 1}: within 0.05 of agent 0
            [0.90, 0.74, 0.30, 0.20],  # agent 2, active {1}: 0.24 = 0.6 eta away on arm 1
            [0.90, 0.50, 0.30, 0.70],  # agent 3, active {0}: 0.5 away on arm 3, inactive
        ]
    )
    active = np.array(
        [
            [True, False, False, False],
            [True, True, False, False],
            [False, True, False, False],
            [True, False, False, False],
        ]
    )
    rows, cols = clustering._same_cluster_edges(means, active, eta)
    edges = set(zip(rows.tolist(), cols.tolist()))
    assert (0, 1) in edges  # same cluster within eta / 2
    assert (0, 2) not in edges  # 0.6 eta apart on an arm in the union
    assert (0, 3) in edges  # large difference on an arm eliminated by both
    assert (1, 2) not in edges
    n_comp, labels = clustering._cluster_agents(means, active, eta)
    assert n_comp == 2 and labels[0] == labels[1] == labels[3] != labels[2]
    # exactly eta / 2 apart still links
    rows, _ = clustering._same_cluster_edges(
        np.array([[0.5, 0.0], [0.7, 0.0]]), np.ones((2, 2), bool), 0.4
    )
    assert rows.size == 1


def test_clustering_blocks_match_a_double_loop(monkeypatch):
    rng = np.random.default_rng(0)
    means = rng.uniform(0, 1, size=(40, 5)).round(1)
    active = rng.random((40, 5)) < 0.3
    eta = 0.5

    def linked(i, j):
        union = active[i] | active[j]
        return bool(np.all(np.abs(means[i] - means[j])[union] <= eta / 2))

    expected = {(i, j) for i in range(40) for j in range(i + 1, 40) if linked(i, j)}
    monkeypatch.setattr(clustering, "_MEGABYTES_PER_BLOCK", 1e-5)  # blocks of a single row
    rows, cols = clustering._same_cluster_edges(means, active, eta)
    assert set(zip(rows.tolist(), cols.tolist())) == expected
    monkeypatch.undo()
    rows, cols = clustering._same_cluster_edges(means, active, eta)
    assert set(zip(rows.tolist(), cols.tolist())) == expected


# --------------------------------------------------------------------------- algorithms


def algorithms(eta, n_clusters, eta1=None, random_state=0):
    return [
        NaiveBAI(),
        ClBAI(eta=eta, random_state=random_state),
        BAICl(n_clusters=n_clusters, eta=eta, random_state=random_state),
        BAIClPlusPlus(n_clusters=n_clusters, eta=eta, eta1=eta1 or eta, random_state=random_state),
    ]


@pytest.mark.parametrize("which", range(4))
def test_bookkeeping_is_consistent(which):
    means, assignment, env = generated(15, seed=3)
    algo = algorithms(env.eta_, 3, env.eta1_)[which]
    res = algo.run(env)
    assert res is algo  # run returns the algorithm; the results are its *_ attributes
    assert best_arm_accuracy(res, env) == 1.0
    np.testing.assert_array_equal(res.best_arms_, env.best_arms_)
    assert res.sample_complexity_ == env.total_pulls_ == res.samples_per_agent_.sum()
    assert res.phase_samples_["phase1"] + res.phase_samples_["phase2"] == res.sample_complexity_
    assert res.communication_cost_ == 64.0 * res.n_reals_ + 1.0 * res.n_bits_
    assert res.n_clusters_found_ == 3 and res.n_messages_ > 0
    # a second run measures only its own pulls
    again = clone(algo).run(env)
    assert again.sample_complexity_ == env.total_pulls_ - res.sample_complexity_


def test_same_random_state_same_result():
    means, assignment, _ = generated(12, seed=1)
    eta = ClusteredBanditEnv(means=means, assignment=assignment).eta_
    for algo in algorithms(eta, 3):
        a = clone(algo).run(ClusteredBanditEnv(means=means, assignment=assignment, random_state=5))
        b = clone(algo).run(ClusteredBanditEnv(means=means, assignment=assignment, random_state=5))
        np.testing.assert_array_equal(a.samples_per_agent_, b.samples_per_agent_)
        np.testing.assert_array_equal(a.labels_, b.labels_)


def test_single_cluster():
    means = np.array([[0.2, 0.9, 0.5, 0.1]])
    env = ClusteredBanditEnv(means=means, assignment=np.zeros(8, dtype=int), random_state=0)
    res = ClBAI(eta=0.5).run(env)
    assert res.n_clusters_found_ == 1 and np.all(res.labels_ == 0)
    assert np.all(res.best_arms_ == 1)
    res = BAICl(n_clusters=1, eta=0.5, random_state=0).run(env.reset())
    assert res.n_phase1_agents_ == 1 and res.found_best_arms_ == [1]
    assert np.all(res.best_arms_ == 1)
    # phase 2 runs SE on one candidate: nothing to pull
    assert res.phase_samples_["phase2"] == 0


def test_one_agent_per_cluster_matches_naive():
    means, assignment = make_clustered_bandit(4, 4, 8, shuffle=False, random_state=0)
    env = ClusteredBanditEnv(means=means, assignment=assignment, random_state=0)
    res = ClBAI(eta=env.eta_).run(env)
    assert res.n_clusters_found_ == 4 and np.unique(res.labels_).size == 4
    naive = NaiveBAI().run(env.reset())
    np.testing.assert_array_equal(res.best_arms_, naive.best_arms_)
    np.testing.assert_array_equal(res.best_arms_, env.best_arms_)


@pytest.mark.parametrize("representative", ["first", "random"])
def test_permutation_equivariance(representative):
    means, assignment = make_clustered_bandit(12, 3, 8, random_state=0)
    perm = np.random.default_rng(1).permutation(12)
    env = ClusteredBanditEnv(means=means, assignment=assignment, sigma=1e-9, random_state=0)
    env_p = ClusteredBanditEnv(means=means, assignment=assignment[perm], sigma=1e-9,
                               random_state=0)
    algo = ClBAI(eta=env.eta_, representative=representative, random_state=0)
    a = clone(algo).run(env)
    b = clone(algo).run(env_p)
    np.testing.assert_array_equal(b.best_arms_, a.best_arms_[perm])
    same_a = a.labels_[:, None] == a.labels_[None, :]
    same_b = b.labels_[:, None] == b.labels_[None, :]
    np.testing.assert_array_equal(same_b, same_a[np.ix_(perm, perm)])
    assert sorted(a.samples_per_agent_) == sorted(b.samples_per_agent_)
    # with real noise the answers still follow the agents
    env = ClusteredBanditEnv(means=means, assignment=assignment, random_state=0)
    env_p = ClusteredBanditEnv(means=means, assignment=assignment[perm], random_state=1)
    np.testing.assert_array_equal(
        clone(algo).run(env_p).best_arms_, clone(algo).run(env).best_arms_[perm]
    )


def test_cl_bai_phase2_only_representatives_pull():
    means, assignment, env = generated(30, seed=4)
    res = ClBAI(eta=env.eta_).run(env)
    n_rounds = math.ceil(math.log2(17.0 / env.eta_))
    reps = [np.flatnonzero(res.labels_ == c)[0] for c in range(res.n_clusters_found_)]
    others = np.setdiff1d(np.arange(30), reps)
    assert res.rounds_per_agent_[others].max() <= n_rounds
    assert res.samples_per_agent_[others].sum() <= res.phase_samples_["phase1"]
    assert res.samples_per_agent_[reps].sum() >= res.phase_samples_["phase2"]


def test_communication_counts():
    n, k, m = 18, 10, 3
    means, assignment, env = generated(n, seed=2)
    bits = math.ceil(math.log2(k))
    naive = NaiveBAI().run(env.reset())
    assert naive.n_reals_ == 0 and naive.n_bits_ == n * bits
    cl = ClBAI(eta=env.eta_, c_real=10.0, c_bit=2.0).run(env.reset())
    assert cl.n_reals_ == n * k and cl.n_bits_ == n * k + n * bits
    assert cl.communication_cost_ == 10.0 * n * k + 2.0 * cl.n_bits_
    bc = BAICl(n_clusters=m, eta=env.eta_, random_state=0).run(env.reset())
    visited = bc.n_phase1_agents_
    assert bc.n_reals_ == 0
    assert bc.n_bits_ == visited * bits + (n - visited) * (m + 1) * bits


def test_bai_cl_phase1_is_a_coupon_collector():
    means, assignment = make_clustered_bandit(60, 3, 10, random_state=0)
    results, scores = seeds_and_scores(BAICl(n_clusters=3, eta=0.4), means, assignment,
                                       seeds=range(30))
    visited = np.array([r.n_phase1_agents_ for r in results])
    assert np.all(scores == 1.0)
    assert visited.min() >= 3 and visited.max() < 60
    assert 4.0 <= visited.mean() <= 7.0  # about M H_M = 5.5 for M = 3


def test_bai_cl_warns_when_clusters_are_missing():
    means, _ = make_clustered_bandit(6, 3, 6, random_state=0)
    env = ClusteredBanditEnv(means=means, assignment=[0, 1, 0, 1], random_state=0)
    with pytest.warns(UserWarning, match="found only 2"):
        res = BAICl(n_clusters=3, eta=env.eta_, random_state=0).run(env)
    assert res.n_clusters_found_ == 2 and res.n_phase1_agents_ == 4
    np.testing.assert_array_equal(res.best_arms_, env.best_arms_)


def test_bai_cl_plus_plus_matches_without_fallback():
    means, assignment, env = generated(30, seed=6)
    algo = BAIClPlusPlus(n_clusters=3, eta=env.eta_, eta1=env.eta1_, random_state=0)
    res = algo.run(env)
    np.testing.assert_array_equal(res.best_arms_, env.best_arms_)
    phase2 = np.setdiff1d(np.arange(30), np.flatnonzero(res.rounds_per_agent_))
    assert phase2.size == 30 - res.n_phase1_agents_  # phase-2 agents never ran SE
    assert res.n_reals_ > 0
    for arm, mu in algo.reference_means_.items():
        assert abs(mu - means[:, arm].max()) <= env.eta1_ / 8


@pytest.mark.slow
def test_delta_pc_on_the_stress_instance():
    """Borderline separability, 200 seeds: the failure rate must stay <= delta."""
    delta = 0.1
    for algo in (
        ClBAI(eta=0.2, delta=delta),
        BAICl(n_clusters=2, eta=0.2, delta=delta),
        BAIClPlusPlus(n_clusters=2, eta=0.2, eta1=0.2, delta=delta),
    ):
        results, scores = seeds_and_scores(
            algo, STRESS_MEANS, STRESS_ASSIGNMENT, seeds=range(200)
        )
        assert np.mean(scores < 1.0) <= delta, type(algo).__name__
        if isinstance(algo, ClBAI):
            # never a merge (that would break correctness); a split only costs samples and
            # is rare (1 run in 1000 with base.run_seeds's seeds: seed 157 finds 3)
            n_found = np.array([r.n_clusters_found_ for r in results])
            assert n_found.min() >= 2 and np.mean(n_found == 2) >= 0.99
            mean_pulls = np.mean([r.sample_complexity_ for r in results])
            assert 0.85 * 2.34e5 <= mean_pulls <= 1.15 * 2.34e5


def test_scaling_in_the_number_of_agents():
    pulls = {}
    for n in (12, 24):
        means, assignment = make_clustered_bandit(n, 3, 8, random_state=0)
        for algo in (NaiveBAI(), BAICl(n_clusters=3, eta=0.4)):
            results, _ = seeds_and_scores(algo, means, assignment, seeds=range(4))
            pulls[type(algo).__name__, n] = np.mean([r.sample_complexity_ for r in results])
    naive_ratio = pulls["NaiveBAI", 24] / pulls["NaiveBAI", 12]
    bai_cl_ratio = pulls["BAICl", 24] / pulls["BAICl", 12]
    assert 1.8 <= naive_ratio <= 2.3
    assert bai_cl_ratio <= 1.3


def test_clustered_algorithms_beat_naive():
    means, assignment, env = generated(30, seed=0)
    naive = NaiveBAI().run(env.reset()).sample_complexity_
    cl = ClBAI(eta=env.eta_).run(env.reset()).sample_complexity_
    bc = BAICl(n_clusters=3, eta=env.eta_, random_state=0).run(env.reset()).sample_complexity_
    assert bc < cl < 0.5 * naive


def test_bernoulli_rewards():
    means, assignment = make_clustered_bandit(9, 3, 6, best_mean=0.9, near_mean=0.6,
                                              random_state=0)
    env = ClusteredBanditEnv(means=means, assignment=assignment, noise="bernoulli", random_state=0)
    for algo in algorithms(env.eta_, 3, env.eta1_):
        assert best_arm_accuracy(algo.run(env.reset()), env) == 1.0


def test_run_seeds_parallel_equals_sequential():
    means, assignment = make_clustered_bandit(9, 3, 6, random_state=0)
    algo = ClBAI(eta=0.4, representative="random")
    seq, s1 = seeds_and_scores(algo, means, assignment, seeds=[3, 4, 5])
    with parallel_config(backend="threading"):  # no process start-up in the test suite
        par, s2 = seeds_and_scores(algo, means, assignment, seeds=[3, 4, 5], n_jobs=2)
    assert [r.sample_complexity_ for r in seq] == [r.sample_complexity_ for r in par]
    np.testing.assert_array_equal(s1, s2)


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("delta", [0, 1, 1.5, -0.1])
@pytest.mark.parametrize("which", range(4))
def test_bad_delta(which, delta):
    env = ClusteredBanditEnv(means=STRESS_MEANS, assignment=[0, 1])
    algo = algorithms(0.2, 2)[which].set_params(delta=delta)
    with pytest.raises(ValueError, match="delta"):
        algo.run(env)


@pytest.mark.parametrize(
    "algo, exc, match",
    [
        (ClBAI(), ValueError, "eta must be given"),
        (BAICl(n_clusters=2), ValueError, "eta must be given"),
        (ClBAI(eta=0.0), ValueError, "eta"),
        (ClBAI(eta=-1.0), ValueError, "eta"),
        (BAICl(n_clusters=2, eta=-0.1), ValueError, "eta"),
        (BAIClPlusPlus(n_clusters=2, eta=0.2), ValueError, "eta1 must be given"),
        (BAIClPlusPlus(n_clusters=2, eta=0.2, eta1=0.0), ValueError, "eta1"),
        (BAICl(n_clusters=0, eta=0.2), ValueError, "n_clusters"),
        (BAICl(n_clusters=5, eta=0.2), ValueError, "n_clusters must be <= the number of arms"),
        (BAICl(n_clusters=2.5, eta=0.2), ValueError, "n_clusters"),
        (ClBAI(eta=0.2, round_const=4.0), ValueError, "round_const"),
        (BAICl(n_clusters=2, eta=0.2, round_const=3), ValueError, "round_const"),
        (ClBAI(eta=0.2, representative="median"), ValueError, "representative"),
        (NaiveBAI(c_real=-1.0), ValueError, "c_real"),
    ],
)
def test_bad_parameters(algo, exc, match):
    env = ClusteredBanditEnv(means=STRESS_MEANS, assignment=[0, 1])
    with pytest.raises(exc, match=match):
        algo.run(env)
    assert env.total_pulls_ == 0


def test_bad_environment_and_unrun_score():
    with pytest.raises(TypeError, match="ClusteredBanditEnv"):
        ClBAI(eta=0.2).run(STRESS_MEANS)
    with pytest.raises(NotFittedError, match="run"):
        best_arm_accuracy(NaiveBAI(), ClusteredBanditEnv(means=STRESS_MEANS, assignment=[0, 1]))
    algo = NaiveBAI()
    algo.run(ClusteredBanditEnv(means=STRESS_MEANS, assignment=[0, 1], random_state=0))
    with pytest.raises(ValueError, match="agents"):
        best_arm_accuracy(algo, ClusteredBanditEnv(means=STRESS_MEANS, assignment=[0, 1, 1]))


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"delta": 0.0}, ValueError, "delta"),
        ({"delta": 1.2}, ValueError, "delta"),
        ({"delta": "0.1"}, TypeError, "delta"),
        ({"arms": []}, ValueError, "empty"),
        ({"arms": [0, 4]}, ValueError, "arms"),
        ({"arms": [1, 1]}, ValueError, "distinct"),
        ({"arms": [0.5, 1]}, ValueError, "integers"),
        ({"agent": 3}, ValueError, "agent"),
        ({"max_rounds": 0}, ValueError, "max_rounds"),
        ({"env": "env"}, TypeError, "ClusteredBanditEnv"),
    ],
)
def test_se_bad_input(kwargs, exc, match):
    args = {
        "env": ClusteredBanditEnv(means=STRESS_MEANS, assignment=[0, 1]),
        "agent": 0,
        "arms": [0, 1],
        "delta": 0.1,
        **kwargs,
    }
    with pytest.raises(exc, match=match):
        successive_elimination(**args)


def test_se_max_rounds_by_position_warns_and_gives_the_same_result():
    """``max_rounds`` is keyword-only; by position it still works, with a FutureWarning."""
    env = ClusteredBanditEnv(means=[[1.0, 0.7, 0.1]], assignment=[0], sigma=1e-9, random_state=0)
    expected = successive_elimination(env, 0, [0, 1, 2], 0.05, max_rounds=1)
    with pytest.warns(FutureWarning, match=r"pass max_rounds as keyword arguments \(max_rounds=1"):
        res = successive_elimination(env.reset(), 0, [0, 1, 2], 0.05, 1)
    assert res.rounds == expected.rounds == 1
    assert res.counts.tolist() == expected.counts.tolist()
    np.testing.assert_array_equal(res.means, expected.means)


@pytest.mark.parametrize("cls", [BAICl, BAIClPlusPlus])
def test_n_clusters_by_position_warns_and_gives_the_same_run(cls):
    """Constructor parameters are keyword-only; by position they still work, with a warning."""
    means, assignment = make_clustered_bandit(12, 2, 5, random_state=0)
    env = ClusteredBanditEnv(means=means, assignment=assignment, random_state=0)
    eta = float(env.eta_)
    expected = cls(n_clusters=2, eta=eta, eta1=eta) if cls is BAIClPlusPlus else cls(
        n_clusters=2, eta=eta)
    with pytest.warns(FutureWarning, match=r"pass n_clusters as keyword arguments \(n_clusters=2"):
        algo = cls(2, eta=eta, eta1=eta) if cls is BAIClPlusPlus else cls(2, eta=eta)
    assert algo.get_params() == expected.get_params()
    assert algo.run(clone(env)).best_arms_.tolist() == expected.run(clone(env)).best_arms_.tolist()


def test_score_is_a_deprecated_alias_of_best_arm_accuracy():
    """``score`` is scikit-learn's ``score(X, y)``: a run's accuracy is a function."""
    means, assignment = make_clustered_bandit(12, 2, 5, random_state=0)
    env = ClusteredBanditEnv(means=means, assignment=assignment, random_state=0)
    algo = ClBAI(eta=float(env.eta_)).run(env)
    with pytest.warns(FutureWarning, match=r"ClBAI.score\(env\) was renamed .*best_arm_accuracy"):
        assert algo.score(env) == best_arm_accuracy(algo, env) == 1.0
    with pytest.raises(TypeError, match="algorithm must be"):
        best_arm_accuracy(object(), env)


def test_verbose_reports_phase_one_and_the_identification(capsys):
    env = ClusteredBanditEnv(means=STRESS_MEANS, assignment=STRESS_ASSIGNMENT, random_state=0)
    BAICl(n_clusters=2, eta=0.2, random_state=0).run(env)
    assert capsys.readouterr().out == ""
    env = ClusteredBanditEnv(means=STRESS_MEANS, assignment=STRESS_ASSIGNMENT, random_state=0)
    algo = BAICl(n_clusters=2, eta=0.2, random_state=0, verbose=1).run(env)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0].split(",")[0] for line in lines] == [
        "[BAICl] phase 1 done", "[BAICl] identified", "[BAICl] done"
    ]
    assert f"pulls {algo.phase_samples_['phase1']}, " in lines[0]
    assert f"pulls {algo.sample_complexity_}, " in lines[1]
