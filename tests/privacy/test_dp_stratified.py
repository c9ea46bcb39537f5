"""DP stratified sampling: amplification, variance formula, exact integer design, sampler."""

import time
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import logsumexp
from sklearn.base import clone

from sklearn_icml.privacy import (
    DPStratifiedSampler,
    amplified_epsilon,
    design_variance,
    mechanism_log_density,
    mechanism_variance,
    neyman_allocation,
    nominal_epsilon,
    optimal_allocation,
    proportional_allocation,
)
from sklearn_icml.privacy._allocation import _Design
from sklearn_icml.privacy._allocation import equal_allocation as _equal_allocation
from sklearn_icml.privacy._allocation_search import (
    exchange_certificate,
    greedy_allocation,
    threshold_allocation,
)

MECHS = ["laplace", "dlap", "tulap"]
N3, S3 = [20000, 20000, 1000], [0.02, 0.5, 0.5]


def ref_g(x, N_h, S_h, N_total, eps, mech, width):
    """Reference g_h(x) written from the paper's formula with the public building blocks."""
    x = np.asarray(x, dtype=float)
    e = nominal_epsilon(eps, x / N_h)
    w2 = (N_h / N_total) ** 2
    return w2 * (
        S_h**2 * (1 / x - 1 / N_h) + mechanism_variance(e, mechanism=mech, data_range=width) / x**2
    )


def random_instance(rng, n_strata=3, max_size=30):
    mech = MECHS[rng.integers(3)]
    width = {"laplace": float(rng.uniform(0.5, 3)), "dlap": int(rng.integers(1, 4)), "tulap": 1}
    N = rng.integers(1, max_size + 1, n_strata)
    S = rng.uniform(0, 1, n_strata) * (rng.uniform(size=n_strata) > 0.15)
    n = int(rng.integers(n_strata, N.sum() + 1))
    eps = float(rng.choice([0.1, 1.0, 5.0]))
    return N, S, n, eps, mech, width[mech]


# ----------------------------------------------------------------- amplification


@pytest.mark.parametrize("eps", [1e-6, 0.1, 1.0, 10.0, 800.0])
def test_amplified_inverts_nominal(eps):
    rates = np.array([1e-6, 1e-3, 0.05, 0.3, 0.999, 1.0])
    back = amplified_epsilon(nominal_epsilon(eps, rates), rates)
    np.testing.assert_allclose(back, eps, rtol=1e-12, atol=0)
    assert nominal_epsilon(eps, 1.0) == pytest.approx(eps, rel=1e-15)


def test_nominal_epsilon_decreasing_in_rate_and_above_target():
    rates = np.linspace(1e-4, 1, 500)
    for eps in (0.01, 1.0, 20.0):
        nom = nominal_epsilon(eps, rates)
        assert np.all(np.diff(nom) < 0)
        assert np.all(nom[:-1] > eps)


def test_nominal_epsilon_large_eps_branch_is_continuous():
    rates = np.array([1e-3, 0.5])
    below = nominal_epsilon(699.999, rates)
    above = nominal_epsilon(700.001, rates)
    np.testing.assert_allclose(above - below, 0.002, rtol=1e-6)


# ----------------------------------------------------------------- mechanism variances


def test_mechanism_variance_identities():
    e = np.array([1e-3, 0.1, 0.5, 1.0, 3.0, 40.0])
    np.testing.assert_allclose(mechanism_variance(e, mechanism="laplace"), 2 / e**2, rtol=1e-15)
    np.testing.assert_allclose(
        mechanism_variance(e, mechanism="laplace", data_range=3.0), 18 / e**2, rtol=1e-15
    )
    np.testing.assert_allclose(
        mechanism_variance(e, mechanism="dlap"), 0.5 / np.sinh(e / 2) ** 2, rtol=1e-12
    )
    beta = np.exp(-e / 2)
    np.testing.assert_allclose(
        mechanism_variance(e, mechanism="dlap", data_range=2),
        2 * beta / (1 - beta) ** 2,
        rtol=1e-9,
    )
    diff = mechanism_variance(e, mechanism="tulap") - mechanism_variance(e, mechanism="dlap")
    np.testing.assert_allclose(diff, 1 / 12, rtol=1e-9)
    ratio = mechanism_variance(1e-4, mechanism="dlap") / mechanism_variance(
        1e-4, mechanism="laplace"
    )
    assert abs(ratio - 1) < 1e-7


@pytest.mark.parametrize("mech", MECHS)
def test_mechanism_variance_matches_its_sampler(mech):
    from sklearn_icml.privacy import (
        discrete_laplace_mechanism,
        laplace_mechanism,
        tulap_mechanism,
    )

    sampler = {
        "laplace": laplace_mechanism,
        "dlap": discrete_laplace_mechanism,
        "tulap": tulap_mechanism,
    }[mech]
    draws = sampler(np.zeros(200_000, dtype=int), 0.6, random_state=0)
    assert draws.var() == pytest.approx(mechanism_variance(0.6, mechanism=mech), rel=0.03)


# ----------------------------------------------------------------- design variance


def test_design_variance_census_has_no_sampling_part():
    sampling, noise = design_variance(N3, N3, S3, 1.0, return_components=True)
    np.testing.assert_array_equal(sampling, 0.0)
    assert np.all(noise > 0)


def test_design_variance_matches_paper_and_reference_formula():
    assert design_variance([28, 259, 13], N3, S3, 1.0) == pytest.approx(2.53983e-4, rel=1e-5)
    rng = np.random.default_rng(0)
    for _ in range(20):
        N, S, n, eps, mech, width = random_instance(rng, 4, 200)
        x = np.minimum(N, rng.integers(1, 200, 4))
        ref = sum(ref_g(x[h], N[h], S[h], N.sum(), eps, mech, width) for h in range(4))
        v = design_variance(x, N, S, eps, mechanism=mech, data_range=width)
        assert v == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("mech", MECHS)
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("N_h", [50, 1000])
def test_objective_is_convex_on_integers(mech, eps, N_h):
    x = np.arange(1, N_h + 1)
    g = ref_g(x, N_h, 0.3, 3 * N_h, eps, mech, 1)
    second = g[:-2] - 2 * g[1:-1] + g[2:]
    assert np.all(second > 0)
    # the library's marginal gains are positive and decreasing on the same grid
    design = _Design(np.array([N_h, 2 * N_h]), np.array([0.3, 0.3]), eps, mech, 1.0)
    gains = design.gain(np.zeros(N_h - 1, dtype=np.int64), x[:-1])
    np.testing.assert_allclose(gains, g[:-1] - g[1:], rtol=1e-6, atol=1e-300)
    assert np.all(gains > 0) and np.all(np.diff(gains) < 0)


# ----------------------------------------------------------------- the paper's numbers


@pytest.mark.parametrize(
    "mech, eps, opt, v_opt, r_ney, r_prop",
    [
        ("laplace", 1.0, (28, 259, 13), 2.53983e-4, 1.1565, 1.6871),
        ("laplace", 0.25, (33, 254, 13), 2.63316e-4, 1.2704, 1.6377),
        ("tulap", 1.0, (36, 251, 13), 2.64365e-4, 1.5063, 1.6242),
        ("dlap", 1.0, (12, 274, 14), 2.33793e-4, 1.0002, 1.8243),
    ],
)
def test_paper_experiment_1(mech, eps, opt, v_opt, r_ney, r_prop):
    x = optimal_allocation(300, N3, S3, eps, mechanism=mech)
    np.testing.assert_array_equal(x, opt)
    v = design_variance(x, N3, S3, eps, mechanism=mech)
    assert v == pytest.approx(v_opt, rel=5e-6)
    ney = neyman_allocation(300, N3, S3)
    prop = proportional_allocation(300, N3)
    np.testing.assert_array_equal(ney, (11, 275, 14))
    np.testing.assert_array_equal(prop, (147, 146, 7))
    assert design_variance(ney, N3, S3, eps, mechanism=mech) / v == pytest.approx(r_ney, abs=6e-5)
    v_prop = design_variance(prop, N3, S3, eps, mechanism=mech)
    assert v_prop / v == pytest.approx(r_prop, abs=6e-5)


def test_paper_experiment_3_brute_force():
    N, S = [200, 100, 60], [0.5, 0.1, 0.3]
    x = optimal_allocation(60, N, S, 1.0)
    np.testing.assert_array_equal(x, (42, 9, 9))
    assert design_variance(x, N, S, 1.0) == pytest.approx(2.1561235e-3, rel=1e-7)


# ----------------------------------------------------------------- exactness


def _brute_force(N, S, n, eps, mech, width):
    g = [ref_g(np.arange(1, N[h] + 1), N[h], S[h], N.sum(), eps, mech, width) for h in range(3)]
    total = g[0][:, None, None] + g[1][None, :, None] + g[2][None, None, :]
    sizes = (
        np.arange(1, N[0] + 1)[:, None, None]
        + np.arange(1, N[1] + 1)[None, :, None]
        + np.arange(1, N[2] + 1)[None, None, :]
    )
    total = np.where(sizes == n, total, np.inf)
    flat = np.sort(total.ravel())
    best = np.array(np.unravel_index(np.argmin(total), total.shape)) + 1
    return best, flat[0], flat[1]


def test_optimal_equals_brute_force_on_200_small_instances():
    rng = np.random.default_rng(2025)
    for _ in range(200):
        N, S, n, eps, mech, width = random_instance(rng)
        x = optimal_allocation(n, N, S, eps, mechanism=mech, data_range=width)
        assert x.dtype == np.int64 and x.sum() == n
        best, v_best, v_second = _brute_force(N, S, n, eps, mech, width)
        v = design_variance(x, N, S, eps, mechanism=mech, data_range=width)
        assert v == pytest.approx(v_best, rel=1e-12, abs=1e-300)
        if v_second > v_best * (1 + 1e-9):  # unique optimum: same allocation
            np.testing.assert_array_equal(x, best)
        design = _Design(N, S, eps, mech, float(width))
        add, rem, _, _ = exchange_certificate(design.gain, x, np.ones(3, int), N)
        assert add <= rem * (1 + 1e-12)


@pytest.mark.slow
def test_warm_start_and_plain_greedy_are_identical():
    rng = np.random.default_rng(7)
    for _ in range(25):
        H = int(rng.integers(2, 40))
        N, S, n, eps, mech, width = random_instance(rng, H, 3000)
        n = max(min(n, 800), H)
        a = optimal_allocation(n, N, S, eps, mechanism=mech, data_range=width, warm_start=True)
        b = optimal_allocation(n, N, S, eps, mechanism=mech, data_range=width, warm_start=False)
        np.testing.assert_array_equal(a, b)


def test_threshold_search_matches_greedy_with_ties_and_forced_bisection():
    # identical strata: every gain is tied across strata, ties go to the lowest index
    N, S = np.full(12, 50), np.full(12, 0.4)
    greedy = optimal_allocation(100, N, S, 1.0, warm_start=False)
    np.testing.assert_array_equal(greedy, [9, 9, 9, 9, 8, 8, 8, 8, 8, 8, 8, 8])
    design = _Design(N, S, 1.0, "laplace", 1.0)
    lower = np.ones(12, dtype=np.int64)
    for cap in (0, 5, None):
        x = threshold_allocation(design.gain, lower, N.astype(np.int64), 100, candidate_cap=cap)
        np.testing.assert_array_equal(x, greedy)


def test_threshold_search_fills_exact_ties_by_index_without_enumerating():
    def flat_gain(idx, x):
        return np.ones(np.shape(x))

    lower = np.ones(2, dtype=np.int64)
    upper = np.array([3_000_000, 3_000_000], dtype=np.int64)
    x = threshold_allocation(flat_gain, lower, upper, 4_000_000, candidate_cap=0)
    np.testing.assert_array_equal(x, [3_000_000, 1_000_000])
    small = np.array([40, 40], dtype=np.int64)
    np.testing.assert_array_equal(
        greedy_allocation(flat_gain, lower, small, 50),
        threshold_allocation(flat_gain, lower, small, 50),
    )


def test_large_design_is_fast_and_certified():
    rng = np.random.default_rng(3)
    H = 10_000
    N = rng.integers(200, 300_000, H)
    S = rng.uniform(0.01, 0.5, H)
    start = time.perf_counter()
    x = optimal_allocation(1_000_000, N, S, 1.0)
    seconds = time.perf_counter() - start
    assert x.sum() == 1_000_000 and np.all(x >= 1) and np.all(x <= N)
    design = _Design(N, S, 1.0, "laplace", 1.0)
    add, rem, _, _ = exchange_certificate(design.gain, x, np.ones(H, int), N)
    assert add <= rem * (1 + 1e-12)
    # the plain heap greedy needs ~1e6 heap steps (tens of seconds); this is the fast path
    assert seconds < 10


# ----------------------------------------------------------------- structure


def test_optimal_beats_neyman_proportional_and_equal():
    rng = np.random.default_rng(11)
    for _ in range(60):
        N, S, n, eps, mech, width = random_instance(rng, int(rng.integers(2, 8)), 500)
        x_opt = optimal_allocation(n, N, S, eps, mechanism=mech, data_range=width)
        v_opt = design_variance(x_opt, N, S, eps, mechanism=mech, data_range=width)
        for x in (
            neyman_allocation(n, N, S),
            proportional_allocation(n, N),
            _equal_allocation(n, N, 1),
        ):
            assert x.sum() == n and np.all(x >= 1) and np.all(x <= N)
            v = design_variance(x, N, S, eps, mechanism=mech, data_range=width)
            assert v_opt <= v * (1 + 1e-12)


def test_permuting_strata_permutes_allocation():
    rng = np.random.default_rng(5)
    N = rng.integers(100, 5000, 9)
    S = rng.uniform(0.05, 0.5, 9)
    perm = rng.permutation(9)
    for mech in MECHS:
        x = optimal_allocation(900, N, S, 0.7, mechanism=mech)
        xp = optimal_allocation(900, N[perm], S[perm], 0.7, mechanism=mech)
        np.testing.assert_array_equal(xp, x[perm])


def test_laplace_scale_invariance():
    rng = np.random.default_rng(6)
    N = rng.integers(100, 5000, 6)
    S = rng.uniform(0.05, 0.5, 6)
    x = optimal_allocation(600, N, S, 1.0, data_range=1.0)
    v = design_variance(x, N, S, 1.0, data_range=1.0)
    for c in (0.1, 7.0):
        xc = optimal_allocation(600, N, c * S, 1.0, data_range=c)
        np.testing.assert_array_equal(xc, x)
        assert design_variance(xc, N, c * S, 1.0, data_range=c) == pytest.approx(
            c**2 * v, rel=1e-12
        )


def _noise_free_optimum(N, S, n):
    w2s2 = (N / N.sum()) ** 2 * S**2

    def gain(idx, x):
        return w2s2[idx] / (x * (x + 1.0))

    x = greedy_allocation(gain, np.ones(N.shape[0], int), N, n)
    return x, float(np.sum(w2s2 * (1 / x - 1 / N)))


@pytest.mark.parametrize("mech", ["laplace", "dlap"])
def test_huge_epsilon_recovers_noise_free_optimum(mech):
    rng = np.random.default_rng(8)
    for _ in range(10):
        N = rng.integers(5, 400, 6)
        S = rng.uniform(0.01, 1, 6)
        n = int(rng.integers(6, N.sum()))
        x0, v0 = _noise_free_optimum(N, S, n)
        np.testing.assert_array_equal(optimal_allocation(n, N, S, 1e4, mechanism=mech), x0)
        for eps in (0.1, 1.0, 5.0, 50.0):
            x = optimal_allocation(n, N, S, eps, mechanism=mech)
            assert design_variance(x, N, S, eps, mechanism=mech) >= v0 * (1 - 1e-12)


def test_optimal_variance_non_increasing_in_n_and_eps():
    N = np.array([500, 2000, 80, 1200])
    S = np.array([0.1, 0.4, 0.3, 0.05])
    for mech in MECHS:
        v_n = [
            design_variance(
                optimal_allocation(n, N, S, 1.0, mechanism=mech), N, S, 1.0, mechanism=mech
            )
            for n in range(4, 400, 13)
        ]
        assert np.all(np.diff(v_n) <= 0)
        v_e = [
            design_variance(
                optimal_allocation(100, N, S, e, mechanism=mech), N, S, e, mechanism=mech
            )
            for e in (0.05, 0.1, 0.3, 1.0, 3.0, 10.0)
        ]
        assert np.all(np.diff(v_e) <= 0)


def test_neyman_and_proportional_rounding_rule():
    # a stratum below the minimum is raised to it; a cap binds and is re-shared
    np.testing.assert_array_equal(
        neyman_allocation(10, [100, 100, 100], [1.0, 1.0, 0.0]), [5, 4, 1]
    )
    np.testing.assert_array_equal(
        neyman_allocation(50, [5, 100, 100], [10.0, 1.0, 1.0]), [5, 23, 22]
    )
    np.testing.assert_array_equal(
        neyman_allocation(12, [100, 100, 100], [0.0, 0.0, 0.0], min_per_stratum=2), [4, 4, 4]
    )
    np.testing.assert_array_equal(proportional_allocation(7, [1, 1, 1, 4, 4]), [1, 1, 1, 2, 2])


# ----------------------------------------------------------------- end-to-end privacy


@pytest.mark.parametrize("mech", MECHS)
@pytest.mark.parametrize("eps", [0.3, 1.5])
def test_stratum_release_is_exactly_epsilon_dp(mech, eps):
    """Exact output law of one stratum's release (SRSWOR sum + noise at eps_h)."""
    N_h, n_h = 40, 6
    e_h = float(nominal_epsilon(eps, n_h / N_h))
    if mech == "dlap":
        t = np.arange(-150, 160, dtype=float)
    else:
        t = np.linspace(-150, 160, 6201)
    worst = 0.0
    for ones in (0, 3, 20, 39):  # neighbour: one more record with value 1
        logp = []
        for k in (ones, ones + 1):
            s = np.arange(0, n_h + 1)
            log_hyp = stats.hypergeom(N_h, k, n_h).logpmf(s)
            dens = mechanism_log_density(
                t[:, None], s[None, :], e_h, mechanism=mech, sensitivity=1
            )
            logp.append(logsumexp(dens + log_hyp[None, :], axis=1))
        loss = np.abs(logp[0] - logp[1])
        assert np.max(loss) <= eps * (1 + 1e-9)
        worst = max(worst, np.max(loss))
    # amplification is tight: with everyone at 0, the tail ratio reaches e^eps
    assert worst >= eps * (1 - 1e-6)
    # using eps itself (no amplification credit) would also be private, but the nominal
    # budget is strictly larger; using more than eps_h would break the guarantee
    too_much = e_h * 1.2
    s = np.arange(0, n_h + 1)
    dens0 = mechanism_log_density(t[:, None], s[None, :], too_much, mechanism=mech, sensitivity=1)
    p0 = dens0[:, 0]  # all zeros: the sum is 0
    p1 = logsumexp(dens0 + stats.hypergeom(N_h, 1, n_h).logpmf(s)[None, :], axis=1)
    assert np.max(np.abs(p0 - p1)) > eps


# ----------------------------------------------------------------- the sampler


def _population(seed=0, sizes=(300, 500, 120)):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.array(["north", "south", "west"]), sizes)
    y = np.concatenate(
        [
            rng.uniform(0, 0.4, sizes[0]),
            rng.integers(0, 2, sizes[1]),
            rng.uniform(0.2, 1, sizes[2]),
        ]
    )
    perm = rng.permutation(groups.shape[0])
    return groups[perm], y[perm]


def test_sampler_fit_matches_functions():
    g, _ = _population()
    S = [0.1, 0.5, 0.2]
    s = DPStratifiedSampler(epsilon=0.5, total_sample_size=90, stratum_stds=S).fit(g)
    np.testing.assert_array_equal(s.classes_, ["north", "south", "west"])
    np.testing.assert_array_equal(s.stratum_sizes_, [300, 500, 120])
    x = optimal_allocation(90, [300, 500, 120], S, 0.5)
    np.testing.assert_array_equal(s.sample_sizes_, x)
    np.testing.assert_allclose(s.nominal_epsilons_, nominal_epsilon(0.5, x / s.stratum_sizes_))
    np.testing.assert_allclose(s.noise_scales_, 1.0 / s.nominal_epsilons_)
    assert s.expected_variance() == pytest.approx(design_variance(x, [300, 500, 120], S, 0.5))
    np.testing.assert_allclose(s.variance_components_.sum(), s.expected_variance_)
    assert s.n_features_in_ == 1
    # stds as a dict, in any order, give the same design
    d = DPStratifiedSampler(
        epsilon=0.5, total_sample_size=90, stratum_stds={"west": 0.2, "north": 0.1, "south": 0.5}
    ).fit(g)
    np.testing.assert_array_equal(d.sample_sizes_, x)


def test_sampler_allocations_and_fraction():
    g, _ = _population()
    for alloc, expected in [
        ("proportional", proportional_allocation(92, [300, 500, 120])),
        ("equal", [31, 31, 30]),
        ("neyman", neyman_allocation(92, [300, 500, 120], [0.1, 0.5, 0.2])),
    ]:
        s = DPStratifiedSampler(
            total_sample_size=0.1, allocation=alloc, stratum_stds=[0.1, 0.5, 0.2]
        )
        np.testing.assert_array_equal(s.fit(g).sample_sizes_, expected)
        assert s.total_sample_size_ == 92
    s = DPStratifiedSampler(total_sample_size=1.0, allocation="proportional").fit(g)
    np.testing.assert_array_equal(s.sample_sizes_, s.stratum_sizes_)
    assert s.expected_variance_ is None


def test_allocate_from_sizes_and_sample_with_integer_labels():
    s = DPStratifiedSampler(total_sample_size=300, stratum_stds=S3, random_state=0)
    s.allocate(N3)
    np.testing.assert_array_equal(s.sample_sizes_, [28, 259, 13])
    labels = np.repeat([0, 1, 2], N3)
    idx = s.sample(labels)
    np.testing.assert_array_equal(np.bincount(labels[idx]), [28, 259, 13])


@pytest.mark.slow
def test_sample_draws_exact_sizes_and_uniform_inclusion():
    g, _ = _population(1, sizes=(10, 20, 15))
    s = DPStratifiedSampler(
        total_sample_size=12, stratum_stds=[0.3, 0.3, 0.3], random_state=0
    ).fit(g)
    draws = 1000
    counts = np.zeros(g.shape[0])
    for _ in range(draws):
        idx = s.sample(g)
        assert np.all(np.diff(idx) > 0)  # sorted and distinct
        np.testing.assert_array_equal([np.sum(g[idx] == c) for c in s.classes_], s.sample_sizes_)
        counts[idx] += 1
    for h, label in enumerate(s.classes_):
        units = g == label
        N_h, p = units.sum(), s.sampling_rates_[h]
        stat = (N_h - 1) / N_h * np.sum((counts[units] - draws * p) ** 2) / (draws * p * (1 - p))
        assert stats.chi2(N_h - 1).sf(stat) > 1e-3


@pytest.mark.slow
def test_estimate_mean_unbiased_and_noise_at_nominal_budgets():
    g, y = _population(2)
    S = [y[g == c].std(ddof=1) for c in ["north", "south", "west"]]
    s = DPStratifiedSampler(epsilon=0.5, total_sample_size=60, stratum_stds=S, random_state=3).fit(
        g
    )
    reps = 1000
    est = np.empty(reps)
    noise = np.empty((reps, 3))
    for r in range(reps):
        d = s.estimate_mean(g, y, return_details=True)
        est[r], noise[r] = d["estimate"], d["noise"]
    v = s.expected_variance_
    assert abs(est.mean() - y.mean()) < 4 * np.sqrt(v / reps)
    # variance within 4 standard errors of a variance estimate (normal kurtosis)
    assert abs(est.var(ddof=1) / v - 1) < 4 * np.sqrt(2 / reps)
    # the noise is calibrated to eps_h > eps: its variance is 2 / eps_h**2, not 2 / eps**2
    # (4 standard errors of a Laplace sample variance: sqrt(5 / reps) relative)
    expected = 2 / s.nominal_epsilons_**2
    np.testing.assert_allclose(noise.var(axis=0), expected, rtol=4 * np.sqrt(5 / reps))
    assert np.all(noise.var(axis=0) < 0.3 * 2 / 0.5**2)


@pytest.mark.slow
def test_variance_formula_by_monte_carlo_within_two_percent():
    """The Monte Carlo experiment at small scale: 40,000 SRSWOR + Laplace replications."""
    rng = np.random.default_rng(0)
    pops = [
        np.clip(rng.normal(0.3, 0.02, 400), 0, 1),
        rng.integers(0, 2, 400).astype(float),
        rng.integers(0, 2, 60).astype(float),
    ]
    N = np.array([p.size for p in pops])
    S = np.array([p.std(ddof=1) for p in pops])
    x = optimal_allocation(60, N, S, 1.0)
    v = design_variance(x, N, S, 1.0)
    e_h = nominal_epsilon(1.0, x / N)
    W = N / N.sum()
    reps = 40_000
    est = np.zeros(reps)
    for h, pop in enumerate(pops):
        sums = np.empty(reps)
        for start in range(0, reps, 5000):
            keys = rng.random((5000, N[h]))
            pick = np.argpartition(keys, x[h] - 1, axis=1)[:, : x[h]]
            sums[start : start + 5000] = pop[pick].sum(axis=1)
        noise = rng.laplace(0, 1 / e_h[h], reps)
        est += W[h] * (sums + noise) / x[h]
    mu = sum(W[h] * pops[h].mean() for h in range(3))
    assert abs(est.var(ddof=1) / v - 1) < 0.02
    assert abs(est.mean() - mu) < 3 * np.sqrt(v / reps)


def test_random_state_object_advances_and_seed_replays():
    g, y = _population()
    s = DPStratifiedSampler(
        total_sample_size=60, stratum_stds=[0.2, 0.5, 0.2], random_state=0
    ).fit(g)
    a, b = s.estimate_mean(g, y), s.estimate_mean(g, y)
    assert a != b  # never the same noise twice
    s2 = clone(s).fit(g)
    assert s2.estimate_mean(g, y) == a and s2.estimate_mean(g, y) == b


def test_clipping_warns_with_count_and_input_not_modified():
    g, y = _population()
    y = y.copy()
    y[:] = 2.0  # everyone outside [0, 1]
    y_before = y.copy()
    s = DPStratifiedSampler(
        total_sample_size=60, stratum_stds=[0.2, 0.5, 0.2], random_state=0
    ).fit(g)
    with pytest.warns(UserWarning, match="60 sampled values"):
        est = s.estimate_mean(g, y)
    np.testing.assert_array_equal(y, y_before)
    assert abs(est - 1.0) < 1.0  # the mean of the clipped values (1.0) plus noise


def test_multi_column_labels_and_pandas():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "region": rng.choice(["n", "s"], 400),
            "age": rng.choice([1, 2, 3], 400),
        }
    )
    s = DPStratifiedSampler(total_sample_size=60, allocation="proportional", random_state=0).fit(
        frame
    )
    assert s.n_strata_ == 6 and s.classes_.shape == (6, 2)
    np.testing.assert_array_equal(s.feature_names_in_, ["region", "age"])
    idx = s.sample(frame)
    assert idx.shape == (60,)
    series = pd.Series(rng.choice(["a", "b"], 100), name="g")
    s1 = DPStratifiedSampler(total_sample_size=10, allocation="equal").fit(series)
    np.testing.assert_array_equal(s1.sample_sizes_, [5, 5])


def test_dlap_and_tulap_sampler_release():
    g, _ = _population()
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, g.shape[0])
    for mech in ("dlap", "tulap"):
        s = DPStratifiedSampler(
            mechanism=mech, total_sample_size=90, stratum_stds=[0.5, 0.5, 0.5], random_state=0
        ).fit(g)
        np.testing.assert_allclose(s.noise_scales_, np.exp(-s.nominal_epsilons_))
        d = s.estimate_mean(g, y, return_details=True)
        if mech == "dlap":
            np.testing.assert_array_equal(d["noise"], np.round(d["noise"]))
        assert abs(d["estimate"] - y.mean()) < 0.5


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize("eps", [0, -1.0, np.nan, np.inf])
def test_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        optimal_allocation(10, [20, 20], [0.1, 0.1], eps)
    with pytest.raises(ValueError, match="epsilon"):
        DPStratifiedSampler(epsilon=eps, allocation="equal", total_sample_size=2).fit([0, 1])


def test_bad_mechanism():
    with pytest.raises(ValueError, match="mechanism"):
        optimal_allocation(10, [20, 20], [0.1, 0.1], 1.0, mechanism="gauss")
    with pytest.raises(ValueError, match="mechanism"):
        mechanism_variance(1.0, mechanism="gauss")


@pytest.mark.parametrize("n", [0, -3, 2.5, 10.0, "5", 41, 1])
def test_bad_total_sample_size(n):
    with pytest.raises(ValueError, match="total_sample_size"):
        optimal_allocation(n, [20, 20], [0.1, 0.1], 1.0)


def test_bad_total_in_sampler():
    with pytest.raises(ValueError, match="total_sample_size"):
        DPStratifiedSampler(total_sample_size=0, allocation="equal").fit([0, 1, 1])
    with pytest.raises(ValueError, match="total_sample_size"):
        DPStratifiedSampler(total_sample_size=1.5, allocation="equal").fit([0, 1, 1])
    with pytest.raises(ValueError, match="total_sample_size"):
        DPStratifiedSampler(total_sample_size=5, allocation="equal").fit([0, 1, 1])


def test_bad_stratum_sizes_and_min():
    with pytest.raises(ValueError, match="min_per_stratum"):
        optimal_allocation(10, [20, 1], [0.1, 0.1], 1.0, min_per_stratum=2)
    with pytest.raises(ValueError, match="stratum_sizes"):
        optimal_allocation(10, [20, 10.5], [0.1, 0.1], 1.0)
    with pytest.raises(ValueError, match="stratum_sizes"):
        optimal_allocation(10, [20, 0], [0.1, 0.1], 1.0)
    with pytest.raises(ValueError, match="stratum_sizes"):
        optimal_allocation(10, [20, -4], [0.1, 0.1], 1.0)
    with pytest.raises(ValueError, match="min_per_stratum"):
        optimal_allocation(10, [20, 20], [0.1, 0.1], 1.0, min_per_stratum=0)


@pytest.mark.parametrize("stds", [[0.1, -0.2], [0.1, np.nan], [0.1], [0.1, 0.2, 0.3]])
def test_bad_stds(stds):
    with pytest.raises(ValueError, match="stratum_stds"):
        optimal_allocation(10, [20, 20], stds, 1.0)
    with pytest.raises(ValueError, match="stratum_stds"):
        DPStratifiedSampler(total_sample_size=4, stratum_stds=stds).fit([0, 0, 1, 1, 1])


@pytest.mark.parametrize("rng", [(1.0, 1.0), (2.0, 1.0), (0.0, np.inf), "wide", (0, 1, 2)])
def test_bad_data_range(rng):
    with pytest.raises(ValueError, match="data_range"):
        optimal_allocation(10, [20, 20], [0.1, 0.1], 1.0, data_range=rng)
    with pytest.raises(ValueError, match="data_range"):
        DPStratifiedSampler(total_sample_size=2, allocation="equal", data_range=rng).fit([0, 1])


def test_discrete_mechanisms_need_integer_range_and_data():
    with pytest.raises(ValueError, match="integer"):
        optimal_allocation(10, [20, 20], [0.1, 0.1], 1.0, mechanism="dlap", data_range=1.5)
    with pytest.raises(ValueError, match="width 1"):
        optimal_allocation(10, [20, 20], [0.1, 0.1], 1.0, mechanism="tulap", data_range=2)
    g = np.repeat([0, 1], 10)
    s = DPStratifiedSampler(mechanism="dlap", total_sample_size=4, stratum_stds=[0.5, 0.5]).fit(g)
    with pytest.raises(ValueError, match="integer data"):
        s.estimate_mean(g, np.full(20, 0.5))


def test_length_mismatch_and_unseen_label():
    g = np.repeat(["a", "b"], 10)
    s = DPStratifiedSampler(total_sample_size=4, stratum_stds=[0.5, 0.5], random_state=0).fit(g)
    with pytest.raises(ValueError, match="same population"):
        s.estimate_mean(g, np.zeros(19))
    g_new = g.copy()
    g_new[0] = "c"
    with pytest.raises(ValueError, match="not seen in fit"):
        s.estimate_mean(g_new, np.zeros(20))
    with pytest.raises(ValueError, match="N_h"):
        s.sample(g[:15])
    with pytest.raises(ValueError, match="sample_sizes"):
        design_variance([1, 2, 3], [20, 20], [0.1, 0.1], 1.0)


def test_fit_never_estimates_stds_from_the_data():
    # without stratum_stds the design uses the worst case (upper - lower) / 2, the same
    # whatever the private values y are
    g = np.repeat(["a", "b"], 10)
    rng = np.random.default_rng(0)
    for alloc in ("optimal", "neyman"):
        designs = [
            DPStratifiedSampler(allocation=alloc, total_sample_size=4, data_range=(0, 4))
            .fit(g, y)
            for y in (np.ones(20), rng.uniform(0, 4, 20))
        ]
        for s in designs:
            np.testing.assert_array_equal(s.stratum_stds_, [2.0, 2.0])
        np.testing.assert_array_equal(designs[0].sample_sizes_, designs[1].sample_sizes_)
    with pytest.raises(ValueError, match="stratum_stds"):
        DPStratifiedSampler(total_sample_size=4, stratum_stds={"a": 0.1}).fit(g)


def test_nan_labels():
    with pytest.raises(ValueError, match="NaN"):
        DPStratifiedSampler(total_sample_size=2, allocation="equal").fit([0.0, np.nan, 1.0])


def test_allocation_is_integer_and_sums_to_n_everywhere():
    rng = np.random.default_rng(12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow / invalid-value warnings either
        for _ in range(40):
            N, S, n, eps, mech, width = random_instance(rng, int(rng.integers(1, 6)), 10_000)
            eps = float(rng.choice([1e-8, 1e-3, 0.3, 30.0, 900.0]))
            x = optimal_allocation(n, N, S, eps, mechanism=mech, data_range=width)
            assert x.dtype == np.int64 and x.sum() == n and np.all((x >= 1) & (x <= N))
            assert np.isfinite(design_variance(x, N, S, eps, mechanism=mech, data_range=width))
