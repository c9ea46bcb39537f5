"""Tests of the RDP accountant for balanced iteration subsampling and model splitting."""

import importlib.util
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_icml.privacy import (
    PartitionRDPAccountant,
    bis_epsilon,
    bis_rdp,
    default_orders,
    dropout_rdp,
    find_noise_multiplier,
    model_split_rdp,
    poisson_rdp,
    rdp_to_epsilon,
)
from sklearn_icml.privacy._rdp_kernels import bis_add as _bis_add
from sklearn_icml.privacy._rdp_kernels import bis_remove_enumerate as _bis_remove_enumerate
from sklearn_icml.privacy._rdp_kernels import split_remove as _split_remove

DELTA = 1e-5


def opacus_rdp_module():
    """opacus' RDP analysis module (numpy/scipy only), loaded without importing opacus and
    torch."""
    found = importlib.util.find_spec("opacus")
    if found is None:
        pytest.skip("opacus is not installed")
    path = Path(found.origin).parent / "accountants" / "analysis" / "rdp.py"
    mod_spec = importlib.util.spec_from_file_location("_opacus_rdp_for_tests", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module


def brute_force_remove(sigma, T, k, alpha):
    """log E over alpha iid uniform k-subsets of exp(sum_{i<j} |S_i & S_j| / sigma^2) / (a-1)."""
    subsets = [set(s) for s in itertools.combinations(range(T), k)]
    logs = [
        sum(len(a & b) for a, b in itertools.combinations(tup, 2)) / sigma**2
        for tup in itertools.product(subsets, repeat=alpha)
    ]
    return (logsumexp(logs) - alpha * math.log(len(subsets))) / (alpha - 1)


# ---------------------------------------------------------------- exact values


@pytest.mark.parametrize(
    "T, sigma, expected",
    [(2, 1.0, [0.620115, 0.977229, 1.834372]), (3, 0.7, [1.173193, 2.012836, 4.004168])],
)
def test_exact_k1_matches_enumeration_values(T, sigma, expected):
    rdp = bis_rdp(sigma, T, 1, orders=[2, 3, 5], method="exact", direction="remove")
    np.testing.assert_allclose(rdp, expected, atol=1e-5)


@pytest.mark.parametrize("T, k, sigma", [(2, 1, 1.0), (3, 1, 0.7), (3, 2, 1.3), (4, 2, 0.9)])
def test_exact_matches_brute_force_tuple_enumeration(T, k, sigma):
    orders = np.array([2, 3, 4])
    brute = [brute_force_remove(sigma, T, k, a) for a in orders]
    exact = bis_rdp(sigma, T, k, orders=orders, method="exact", direction="remove")
    np.testing.assert_allclose(exact, brute, rtol=1e-10)


def test_egf_kernel_matches_enumeration_reference():
    # the closed form (EGF, log space) against the plain dynamic-programming enumeration
    orders = np.arange(2, 13, dtype=float)
    for T, sigma in [(2, 1.0), (4, 0.6), (5, 2.0)]:
        np.testing.assert_allclose(
            _split_remove(sigma, T, 1.0, orders.copy()),
            _bis_remove_enumerate(sigma, T, 1, orders),
            rtol=1e-10,
        )


@pytest.mark.parametrize("T, k", [(1, 1), (5, 5), (40, 40)])
def test_no_amplification_when_every_step_is_chosen(T, k):
    sigma, orders = 1.3, np.array([2.0, 3.0, 7.0, 50.0])
    expected = orders * k / (2 * sigma**2)
    for method in ("efficient", "exact"):
        for direction in ("both", "remove", "add"):
            rdp = bis_rdp(sigma, T, k, orders=orders, method=method, direction=direction)
            np.testing.assert_allclose(rdp, expected, rtol=1e-12)


@pytest.mark.parametrize("T, k", [(2, 1), (10, 1), (100, 1), (4, 2), (5, 3)])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_efficient_equals_exact_at_order_two(T, k, sigma):
    eff = bis_rdp(sigma, T, k, orders=[2], direction="remove")
    exact = bis_rdp(sigma, T, k, orders=[2], method="exact", direction="remove")
    np.testing.assert_allclose(eff, exact, rtol=0, atol=1e-10)


@pytest.mark.parametrize("T", [2, 3, 10, 100])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 5.0])
def test_efficient_bound_upper_bounds_exact(T, sigma):
    orders = np.arange(2, 21)
    eff = bis_rdp(sigma, T, 1, orders=orders, direction="remove")
    exact = bis_rdp(sigma, T, 1, orders=orders, method="exact", direction="remove")
    assert np.all(eff >= exact - 1e-12)
    assert np.any(eff > exact + 1e-6)  # and it is a bound, not the same function


def test_efficient_bound_upper_bounds_exact_k_above_one():
    orders = np.arange(2, 11)
    for T, k, sigma in [(4, 2, 1.0), (5, 2, 0.8), (5, 3, 1.5)]:
        eff = bis_rdp(sigma, T, k, orders=orders, direction="remove")
        exact = bis_rdp(sigma, T, k, orders=orders, method="exact", direction="remove")
        assert np.all(eff >= exact - 1e-12)


def test_efficient_k1_closed_form():
    sigma, T, orders = 1.7, 30, np.array([2.0, 5.5, 40.0])
    expected = np.log1p(np.expm1(orders / (2 * sigma**2)) / T)
    np.testing.assert_allclose(bis_rdp(sigma, T, 1, orders=orders, direction="remove"), expected)


def test_both_directions_is_the_maximum():
    orders = default_orders()
    for sigma, T, k in [(1.0, 100, 10), (0.8, 1000, 10), (2.0, 7, 3)]:
        both = bis_rdp(sigma, T, k, orders=orders)
        remove = bis_rdp(sigma, T, k, orders=orders, direction="remove")
        add = bis_rdp(sigma, T, k, orders=orders, direction="add")
        np.testing.assert_array_equal(both, np.maximum(remove, add))
        assert np.all(add > 0) and np.all(np.isfinite(add))


def test_add_bound_stable_across_branches():
    # log(1 + a (e^x - 1)) switches formula at x = 1: both sides agree
    orders = np.array([2.0, 10.0, 1000.0])
    sigma_at_switch = math.sqrt(1 * 1 / (4.0))  # T=2, k=1: x = 1/(4 sigma^2)
    below = _bis_add(sigma_at_switch * (1 + 1e-9), 2, 1, orders)
    above = _bis_add(sigma_at_switch * (1 - 1e-9), 2, 1, orders)
    np.testing.assert_allclose(below, above, rtol=1e-6)


def test_monte_carlo_second_moment():
    # E_P[(Q/P)^2] by Monte Carlo; its log must match the order-2 RDP within 3 std errors.
    # Q/P = mean over k-subsets S of exp((sum_{t in S} x_t - k/2) / sigma^2): the sum over
    # subsets is the elementary symmetric polynomial e_k of y_t = exp(x_t / sigma^2).
    T, k, sigma, n = 10, 3, 1.5, 1_000_000
    x = np.random.default_rng(0).normal(0.0, sigma, size=(n, T))
    y = np.exp(x / sigma**2)
    e = [np.ones(n)] + [np.zeros(n) for _ in range(k)]
    for t in range(T):
        for j in range(k, 0, -1):
            e[j] = e[j] + y[:, t] * e[j - 1]
    ratio = e[k] * math.exp(-k / (2 * sigma**2)) / math.comb(T, k)
    values = ratio**2
    mean, se = values.mean(), values.std(ddof=1) / math.sqrt(n)
    expected = math.exp(bis_rdp(sigma, T, k, orders=[2], direction="remove")[0])
    assert abs(mean - expected) < 3 * se
    assert se < 0.01 * expected  # the test has power


# ---------------------------------------------------------------- model splitting


def test_model_split_single_part_equals_dp_accounting_sampled_gaussian():
    dpa = pytest.importorskip("dp_accounting")
    orders = np.arange(2, 65, dtype=float)
    for sigma, q in [(1.0, 0.01), (0.8, 0.3), (2.0, 0.9), (5.0, 1.0)]:
        ours = model_split_rdp(sigma, 1, orders=orders, sample_rate=q)
        ref = dpa.rdp.rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(
            q, sigma, orders
        )
        np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


def test_model_split_single_part_equals_opacus_compute_rdp():
    rdp_mod = opacus_rdp_module()
    orders = np.arange(2, 40, dtype=float)
    ours = model_split_rdp(1.1, 1, orders=orders, sample_rate=0.05, num_rounds=30)
    ref = rdp_mod.compute_rdp(q=0.05, noise_multiplier=1.1, steps=30, orders=orders)
    np.testing.assert_allclose(ours, ref, rtol=1e-10)


@pytest.mark.parametrize("d", [1, 2, 3, 8, 13])
def test_model_split_full_participation_equals_bis_exact(d):
    orders = np.arange(2, 101)
    np.testing.assert_allclose(
        model_split_rdp(2.0, d, orders=orders),
        bis_rdp(2.0, d, 1, orders=orders, method="exact", direction="remove"),
        rtol=1e-12,
    )


def test_model_split_paper_experiment_two():
    orders = np.arange(2, 257)
    eps = [
        rdp_to_epsilon(model_split_rdp(5.0, d, orders=orders, num_rounds=100), orders, DELTA)[0]
        for d in (1, 3, 8)
    ]
    np.testing.assert_allclose(eps, [10.8017, 5.6319, 3.2218], atol=1e-3)
    # d = 1 is the plain Gaussian mechanism composed 100 times
    np.testing.assert_allclose(model_split_rdp(5.0, 1, orders=orders), orders / 50.0, rtol=1e-12)


def test_fractional_orders_upper_bound_dp_accounting():
    # chords of the convex (alpha - 1) RDP through integer orders bound the exact value
    dpa = pytest.importorskip("dp_accounting")
    orders = np.array([2.5, 3.3, 7.75, 20.1])
    acc = PartitionRDPAccountant(orders=orders).compose_model_split(1.0, 1, sample_rate=0.1)
    ref = dpa.rdp.rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(0.1, 1.0, orders)
    assert np.all(acc.get_rdp() >= ref - 1e-12)
    # and below the value at the next integer order (the chord's own bound)
    ceil = model_split_rdp(1.0, 1, orders=np.ceil(orders), sample_rate=0.1)
    assert np.all(acc.get_rdp() <= ceil + 1e-12)


def test_large_orders_fall_back_to_gaussian_bound():
    orders = np.array([2.0, 5000.0])
    rdp = PartitionRDPAccountant(orders=orders).compose_model_split(3.0, 4).get_rdp()
    assert rdp[1] == pytest.approx(5000.0 / 18.0)
    assert rdp[0] < 2.0 / 18.0


def test_dropout_is_two_part_split():
    orders = np.arange(2, 30)
    np.testing.assert_array_equal(
        dropout_rdp(1.5, orders=orders, sample_rate=0.2, num_rounds=7),
        model_split_rdp(1.5, 2, orders=orders, sample_rate=0.2, num_rounds=7),
    )


# ---------------------------------------------------------------- monotonicity


def test_monotone_in_order_and_noise():
    orders = default_orders()
    for T, k in [(100, 10), (10, 5), (1000, 10), (3, 1)]:
        rdp = bis_rdp(1.0, T, k, orders=orders)
        assert np.all(np.diff(rdp) >= -1e-12)
        assert np.all(bis_rdp(1.5, T, k, orders=orders) <= rdp + 1e-12)
    exact = np.arange(2, 257)
    split = model_split_rdp(1.0, 5, orders=exact, sample_rate=0.3)
    assert np.all(np.diff(split) >= -1e-12)
    assert np.all(model_split_rdp(2.0, 5, orders=exact, sample_rate=0.3) <= split + 1e-12)


def test_epsilon_increases_with_selected_steps_and_epochs():
    eps_k = [bis_epsilon(1.0, 50, k, DELTA) for k in (1, 2, 5, 10, 25, 50)]
    assert np.all(np.diff(eps_k) > 0)
    eps_e = [bis_epsilon(1.0, 50, 5, DELTA, num_epochs=e) for e in (1, 2, 4)]
    assert np.all(np.diff(eps_e) > 0)
    rdp1 = bis_rdp(1.0, 50, 5, orders=[2, 3])
    np.testing.assert_allclose(bis_rdp(1.0, 50, 5, orders=[2, 3], num_epochs=3), 3 * rdp1)


def test_epsilon_decreases_with_parts():
    orders = np.arange(2, 257)
    eps = [
        rdp_to_epsilon(model_split_rdp(2.0, d, orders=orders, num_rounds=50), orders, DELTA)[0]
        for d in (1, 2, 4, 8)
    ]
    assert np.all(np.diff(eps) < 0)


# ---------------------------------------------------------------- conversion, baselines


@pytest.mark.parametrize(
    "sigma, T, k, target",
    [(1.0, 100, 1, 1.6433), (1.0, 100, 10, 7.4442), (1.0, 10, 5, 9.3163), (0.8, 1000, 10, 4.9234)],
)
def test_bis_epsilon_paper_experiment_one(sigma, T, k, target):
    assert bis_epsilon(sigma, T, k, DELTA) == pytest.approx(target, abs=1e-4)


def test_rdp_to_epsilon_matches_opacus_and_dp_accounting():
    opacus_rdp = opacus_rdp_module()
    dpa = pytest.importorskip("dp_accounting")
    orders = default_orders()
    rdp = bis_rdp(0.9, 300, 7, orders=orders, num_epochs=3)
    eps, order = rdp_to_epsilon(rdp, orders, 1e-6)
    ref_eps, ref_order = opacus_rdp.get_privacy_spent(orders=orders, rdp=rdp, delta=1e-6)
    assert eps == pytest.approx(ref_eps, rel=1e-12) and order == ref_order
    ref2 = dpa.rdp.compute_epsilon(orders, rdp, 1e-6)
    assert eps == pytest.approx(ref2[0], rel=1e-12) and order == ref2[1]


def test_rdp_to_epsilon_never_negative_or_nan():
    orders = default_orders()
    assert rdp_to_epsilon(np.zeros_like(orders), orders, 1e-5)[0] == 0.0
    # huge RDP at tiny noise: finite, positive
    rdp = bis_rdp(0.05, 10, 5, orders=orders)
    eps = rdp_to_epsilon(rdp, orders, 1e-5)[0]
    assert np.isfinite(eps) and eps > 0
    assert np.all(np.isfinite(model_split_rdp(0.05, 7, sample_rate=0.5)))


def test_poisson_baseline_paper_experiment_one():
    pytest.importorskip("dp_accounting")
    orders = default_orders()[:200]  # the integer orders 2..201: the optimum is among them
    for sigma, T, k, target in [(1.0, 100, 10, 7.9729), (1.0, 10, 5, 11.7706)]:
        rdp = poisson_rdp(sigma, k / T, T, orders=orders)
        assert rdp_to_epsilon(rdp, orders, DELTA)[0] == pytest.approx(target, abs=0.02)


def test_poisson_rdp_takes_numpy_integers():
    pytest.importorskip("dp_accounting")
    orders = np.arange(2, 20, dtype=float)
    np.testing.assert_array_equal(
        poisson_rdp(1.0, 0.1, np.int64(50), orders=orders),
        poisson_rdp(1.0, 0.1, 50, orders=orders),
    )


def test_accountant_composes_by_addition():
    orders = default_orders()
    acc = PartitionRDPAccountant()
    acc.compose_balanced_iterations(1.0, 100, 10).compose_balanced_iterations(1.0, 100, 10)
    acc.compose_gaussian(4.0, count=3)
    expected = 2 * bis_rdp(1.0, 100, 10, orders=orders) + 3 * orders / 32.0
    np.testing.assert_allclose(acc.get_rdp(), expected)
    assert [name for name, _ in acc.history_] == ["bis", "bis", "gaussian"]
    assert acc.get_epsilon(DELTA) == rdp_to_epsilon(expected, orders, DELTA)[0]
    acc.get_rdp()[:] = 0  # a copy: the account is unchanged
    assert acc.get_epsilon(DELTA) > 0


def test_accountant_exact_k1_and_poisson():
    orders = np.arange(2, 100, dtype=float)
    acc = PartitionRDPAccountant(orders=orders).compose_balanced_iterations(
        1.0, 20, 1, method="exact"
    )
    np.testing.assert_allclose(acc.get_rdp(), bis_rdp(1.0, 20, 1, orders=orders, method="exact"))
    pytest.importorskip("dp_accounting")
    acc = PartitionRDPAccountant(orders=orders).compose_poisson_gaussian(1.0, 0.1, 100)
    np.testing.assert_allclose(acc.get_rdp(), poisson_rdp(1.0, 0.1, 100, orders=orders))


@pytest.mark.parametrize(
    "scheme, kwargs",
    [
        ("bis", {"num_steps": 200, "num_selected": 20}),
        ("bis", {"num_steps": 50, "num_selected": 1, "num_epochs": 3}),
        ("model_split", {"num_parts": 3, "num_rounds": 100}),
        ("dropout", {"sample_rate": 0.5, "num_rounds": 40}),
    ],
)
def test_find_noise_multiplier_round_trip(scheme, kwargs):
    sigma = find_noise_multiplier(4.0, DELTA, scheme=scheme, **kwargs)
    orders = default_orders("exact" if scheme in ("model_split", "dropout") else "efficient")
    func = {"bis": bis_rdp, "model_split": model_split_rdp, "dropout": dropout_rdp}[scheme]
    eps = rdp_to_epsilon(func(sigma, orders=orders, **kwargs), orders, DELTA)[0]
    assert eps <= 4.0 and eps == pytest.approx(4.0, abs=1e-3)


def test_find_noise_multiplier_paper_experiment_three():
    assert find_noise_multiplier(8.0, DELTA, num_steps=200, num_selected=20) == pytest.approx(
        1.194, abs=0.005
    )


@pytest.mark.slow
def test_find_noise_multiplier_poisson():
    pytest.importorskip("dp_accounting")
    orders = np.arange(2, 80, dtype=float)
    sigma = find_noise_multiplier(
        8.0, DELTA, scheme="poisson", orders=orders, sample_rate=0.1, num_steps=200
    )
    assert sigma == pytest.approx(1.216, abs=0.005)
    eps = rdp_to_epsilon(poisson_rdp(sigma, 0.1, 200, orders=orders), orders, DELTA)[0]
    assert eps == pytest.approx(8.0, abs=1e-3)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("sigma", [0.0, -1.0, np.nan, np.inf])
def test_bad_noise_multiplier(sigma):
    with pytest.raises(ValueError, match="noise_multiplier"):
        bis_rdp(sigma, 10, 2)
    with pytest.raises(ValueError, match="noise_multiplier"):
        model_split_rdp(sigma, 2)
    with pytest.raises(ValueError, match="noise_multiplier"):
        PartitionRDPAccountant().compose_gaussian(sigma)


def test_bad_steps_and_parts():
    with pytest.raises(ValueError, match="num_steps"):
        bis_rdp(1.0, 0, 1)
    with pytest.raises(ValueError, match="num_selected"):
        bis_rdp(1.0, 10, 0)
    with pytest.raises(ValueError, match="num_selected"):
        bis_rdp(1.0, 10, 11)
    with pytest.raises(TypeError, match="num_steps"):
        bis_rdp(1.0, 10.5, 1)
    with pytest.raises(ValueError, match="num_parts"):
        model_split_rdp(1.0, 0)
    with pytest.raises(ValueError, match="num_epochs"):
        bis_rdp(1.0, 10, 1, num_epochs=0)


@pytest.mark.parametrize("rate", [0.0, -0.1, 1.5])
def test_bad_sample_rate(rate):
    with pytest.raises(ValueError, match="sample_rate"):
        model_split_rdp(1.0, 2, sample_rate=rate)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, 2.0])
def test_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        rdp_to_epsilon([1.0], [2.0], delta)
    with pytest.raises(ValueError, match="delta"):
        bis_epsilon(1.0, 10, 1, delta)


def test_bad_orders():
    with pytest.raises(ValueError, match="orders must all be >= 2"):
        bis_rdp(1.0, 10, 2, orders=[1.5, 3])
    with pytest.raises(ValueError, match="orders must be integers"):
        bis_rdp(1.0, 10, 1, orders=[2.5], method="exact")
    with pytest.raises(ValueError, match="orders must be integers"):
        model_split_rdp(1.0, 3, orders=[2, 3.5])
    with pytest.raises(ValueError, match="method"):
        bis_rdp(1.0, 10, 1, method="tight")
    with pytest.raises(ValueError, match="direction"):
        bis_rdp(1.0, 10, 1, direction="add_remove")
    with pytest.raises(ValueError, match="same length"):
        rdp_to_epsilon([1.0, 2.0], [2.0], 1e-5)
    with pytest.raises(ValueError, match="NaN"):
        rdp_to_epsilon([np.nan], [2.0], 1e-5)


def test_exact_with_large_steps_points_to_efficient():
    with pytest.raises(ValueError, match="efficient"):
        bis_rdp(1.0, 100, 10, orders=[2, 3], method="exact")
    with pytest.raises(ValueError, match="efficient"):  # too many states for the orders
        bis_rdp(1.0, 8, 3, method="exact")


def test_dropout_has_no_rate_parameter():
    # only the rate 0.5 is analysed, so dropout_rdp takes no rate
    with pytest.raises(TypeError, match="dropout_rate"):
        dropout_rdp(1.0, dropout_rate=0.5)


def test_unreachable_target_epsilon():
    with pytest.raises(ValueError, match="unreachable"):
        find_noise_multiplier(1e-4, DELTA, num_steps=1000, num_selected=1000, num_epochs=50)
    with pytest.raises(ValueError, match="target_epsilon"):
        find_noise_multiplier(-1.0, DELTA, num_steps=10, num_selected=1)
    with pytest.raises(TypeError, match="num_selected"):
        find_noise_multiplier(1.0, DELTA, num_steps=10)
    with pytest.raises(ValueError, match="scheme"):
        find_noise_multiplier(1.0, DELTA, scheme="shuffle", num_steps=10)


def test_accountant_stores_in_init_and_starts_at_first_compose():
    from sklearn.base import clone

    acc = PartitionRDPAccountant(orders=[1.5, 3])  # stored, not checked yet
    assert not hasattr(acc, "rdp_") and acc.get_params() == {"orders": [1.5, 3]}
    with pytest.raises(ValueError, match="orders must all be >= 2"):
        acc.compose_gaussian(1.0)
    acc = PartitionRDPAccountant(orders=[2, 4]).compose_gaussian(1.0)
    np.testing.assert_allclose(acc.rdp_, [1.0, 2.0])
    assert not hasattr(clone(acc), "rdp_")
    acc.set_params(orders=[2, 8])
    np.testing.assert_allclose(acc.get_rdp(), [0.0, 0.0])  # a new, empty account
    assert not hasattr(acc.compose_gaussian(2.0).reset(), "history_")
