"""Laplace, discrete Laplace and Tulap samplers: distribution, exact privacy, bad input.

The draws here are numpy's, with fixed seeds; OpenDP's are tested in test_mechanisms_opendp.py.
"""

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.privacy import (
    discrete_laplace_mechanism,
    laplace_mechanism,
    mechanism_log_density,
    mechanism_variance,
    tulap_mechanism,
)

EPSILONS = [0.1, 0.7, 2.0]


def _dlap_pmf(k, eps, sensitivity=1):
    return np.exp(mechanism_log_density(k, 0, eps, mechanism="dlap", sensitivity=sensitivity))


def _tulap_cdf(t, eps):
    """Exact CDF of Z + U (Z discrete Laplace with beta = exp(-eps), U ~ U(-1/2, 1/2))."""
    beta = np.exp(-eps)
    k = np.ceil(np.asarray(t) - 0.5)  # t lies in (k - 1/2, k + 1/2]
    # P(Z <= k - 1): for j <= 0, beta**|j| / (1 + beta); symmetric otherwise
    below = np.where(
        k - 1 <= 0,
        beta ** np.abs(k - 1) / (1 + beta),
        1 - beta**k / (1 + beta),
    )
    return below + _dlap_pmf(k, eps) * (t - (k - 0.5))


# ----------------------------------------------------------------- the samplers' laws


@pytest.mark.parametrize("eps", EPSILONS)
def test_laplace_sampler_follows_its_density(eps):
    draws = laplace_mechanism(np.full(20_000, 3.0), eps, sensitivity=2.0, random_state=0)
    scale = 2.0 / eps
    assert stats.kstest(draws, stats.laplace(loc=3.0, scale=scale).cdf).pvalue > 1e-3
    # the density we use for privacy checks is the same law
    t = np.linspace(-20, 20, 7)
    np.testing.assert_allclose(
        np.exp(mechanism_log_density(t, 3.0, eps, mechanism="laplace", sensitivity=2.0)),
        stats.laplace(loc=3.0, scale=scale).pdf(t),
        rtol=1e-12,
    )


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("sensitivity", [1, 3])
def test_discrete_laplace_sampler_follows_its_pmf(eps, sensitivity):
    draws = discrete_laplace_mechanism(
        np.zeros(40_000, dtype=int), eps, sensitivity=sensitivity, random_state=1
    )
    assert draws.dtype == np.int64
    # chi-square over the central support, tails lumped
    K = int(40 * sensitivity / eps) + 10  # support where the pmf is above ~e^-40
    support = np.arange(-K, K + 1)
    pmf = _dlap_pmf(support, eps, sensitivity)
    np.testing.assert_allclose(pmf.sum(), 1.0, atol=1e-12)
    cdf = np.cumsum(pmf)
    hi = int(np.searchsorted(cdf, 1 - 5e-4))  # keep bins with expected count >= ~20
    lo = 2 * K - hi
    edges = support[lo : hi + 1]
    expected = pmf[lo : hi + 1].copy()
    observed = np.array([(draws == k).sum() for k in edges], dtype=float)
    expected = np.append(expected, 1 - expected.sum()) * draws.size
    observed = np.append(observed, draws.size - observed.sum())
    keep = expected > 0
    assert stats.chisquare(observed[keep], expected[keep]).pvalue > 1e-3
    var = mechanism_variance(eps, mechanism="dlap", data_range=sensitivity)
    # sample variance within 5 standard errors (variance of s^2 from the 4th moment)
    fourth = np.sum(pmf * support**4.0)
    se = np.sqrt((fourth - var**2) / draws.size)
    assert abs(draws.var() - var) < 5 * se


@pytest.mark.parametrize("eps", EPSILONS)
def test_tulap_sampler_follows_its_cdf(eps):
    draws = tulap_mechanism(np.full(20_000, 5), eps, random_state=2)
    assert stats.kstest(draws - 5, lambda t: _tulap_cdf(t, eps)).pvalue > 1e-3
    se = np.sqrt(mechanism_variance(eps, mechanism="tulap") / draws.size)
    assert abs(draws.mean() - 5) < 5 * se


def test_tulap_cdf_helper_matches_dlap_plus_uniform_definition():
    # the test's CDF is itself checked against brute-force convolution
    eps = 0.9
    k = np.arange(-300, 301)
    pmf = _dlap_pmf(k, eps)
    for t in (-2.3, -0.5, 0.0, 0.2, 1.5, 4.49):
        brute = np.sum(pmf * np.clip(t - (k - 0.5), 0.0, 1.0))
        np.testing.assert_allclose(_tulap_cdf(t, eps), brute, atol=1e-12)


# ----------------------------------------------------------------- exact privacy


@pytest.mark.parametrize("mechanism", ["laplace", "dlap", "tulap"])
@pytest.mark.parametrize("eps", [0.05, 1.0, 4.0])
def test_likelihood_ratio_is_bounded_by_epsilon_and_tight(mechanism, eps):
    sensitivity = 2 if mechanism == "dlap" else 1
    if mechanism == "dlap":
        t = np.arange(-200, 201)
    else:
        t = np.linspace(-200, 200, 40_001)
    for value in (0, 7):
        loss = mechanism_log_density(
            t, value, eps, mechanism=mechanism, sensitivity=sensitivity
        ) - mechanism_log_density(
            t, value + sensitivity, eps, mechanism=mechanism, sensitivity=sensitivity
        )
        assert np.all(np.isfinite(loss))
        assert np.max(np.abs(loss)) <= eps * (1 + 1e-12)
        # the bound is attained (the mechanisms are not over-noised)
        assert np.max(np.abs(loss)) >= eps * (1 - 1e-9)


def test_dlap_likelihood_ratio_within_sensitivity_not_just_at_it():
    # every pair of inputs at distance <= sensitivity stays within epsilon
    eps, sens = 1.3, 3
    t = np.arange(-100, 101)
    for shift in range(1, sens + 1):
        loss = mechanism_log_density(
            t, 0, eps, mechanism="dlap", sensitivity=sens
        ) - mechanism_log_density(
            t, shift, eps, mechanism="dlap", sensitivity=sens
        )
        assert np.max(np.abs(loss)) <= eps * shift / sens * (1 + 1e-12)


@pytest.mark.parametrize("mechanism", ["dlap", "tulap"])
def test_empirical_privacy_loss_of_the_samplers(mechanism):
    # histograms of releases on neighbouring inputs: well-filled bins stay within e^eps
    eps, n = 0.8, 400_000
    sampler = discrete_laplace_mechanism if mechanism == "dlap" else tulap_mechanism
    a = sampler(np.zeros(n, dtype=int), eps, random_state=3)
    b = sampler(np.ones(n, dtype=int), eps, random_state=4)
    bins = np.arange(-12.5, 14.5) if mechanism == "dlap" else np.arange(-12.5, 14.5, 0.5)
    ca, _ = np.histogram(a, bins)
    cb, _ = np.histogram(b, bins)
    ok = (ca > 2000) & (cb > 2000)
    log_ratio = np.log(ca[ok] / cb[ok])
    se = np.sqrt(1 / ca[ok] + 1 / cb[ok])
    assert np.all(np.abs(log_ratio) <= eps + 4 * se)
    # and the loss really reaches eps in the tails (not a trivially loose bound)
    assert np.max(np.abs(log_ratio)) > eps - 4 * se.max()


def test_dlap_pmf_is_zero_off_the_integers():
    assert mechanism_log_density(0.5, 0, 1.0, mechanism="dlap") == -np.inf


# ----------------------------------------------------------------- randomness


def test_seed_reproduces_and_state_object_advances():
    a = laplace_mechanism(np.zeros(5), 1.0, random_state=7)
    b = laplace_mechanism(np.zeros(5), 1.0, random_state=7)
    np.testing.assert_array_equal(a, b)
    rs = np.random.RandomState(7)
    c = laplace_mechanism(np.zeros(5), 1.0, random_state=rs)
    d = laplace_mechanism(np.zeros(5), 1.0, random_state=rs)
    assert not np.array_equal(c, d)
    gen = np.random.default_rng(0)
    e = discrete_laplace_mechanism(np.zeros(5, dtype=int), 1.0, random_state=gen)
    f = discrete_laplace_mechanism(np.zeros(5, dtype=int), 1.0, random_state=gen)
    assert e.shape == (5,) and not np.array_equal(e, f)


def test_scalar_in_scalar_out_and_broadcasting():
    assert np.ndim(laplace_mechanism(1.0, 1.0, random_state=0)) == 0
    out = tulap_mechanism([1, 2, 3], np.array([0.5, 1.0, 2.0]), random_state=0)
    assert out.shape == (3,)
    user = np.array([1.0, 2.0])
    laplace_mechanism(user, 1.0, random_state=0)
    np.testing.assert_array_equal(user, [1.0, 2.0])  # never modified in place


def test_huge_epsilon_gives_almost_no_noise():
    out = discrete_laplace_mechanism(np.arange(100), 800.0, random_state=0)
    np.testing.assert_array_equal(out, np.arange(100))


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize("eps", [0.0, -1.0, np.nan, np.inf])
@pytest.mark.parametrize("func", [laplace_mechanism, discrete_laplace_mechanism, tulap_mechanism])
def test_bad_epsilon(func, eps):
    with pytest.raises(ValueError, match="epsilon"):
        func(np.array([1, 2]), eps)


@pytest.mark.parametrize("func", [discrete_laplace_mechanism, tulap_mechanism])
def test_discrete_mechanisms_reject_non_integer_data(func):
    with pytest.raises(ValueError, match="integers"):
        func(np.array([0.5, 1.0]), 1.0)


def test_dlap_rejects_non_integer_sensitivity():
    with pytest.raises(ValueError, match="sensitivity"):
        discrete_laplace_mechanism([1], 1.0, sensitivity=1.5)
    with pytest.raises(ValueError, match="sensitivity"):
        laplace_mechanism([1.0], 1.0, sensitivity=0.0)


def test_tulap_density_needs_unit_sensitivity_and_known_mechanism():
    with pytest.raises(ValueError, match="sensitivity"):
        mechanism_log_density(0.0, 0, 1.0, mechanism="tulap", sensitivity=2)
    with pytest.raises(ValueError, match="mechanism"):
        mechanism_log_density(0.0, 0, 1.0, mechanism="gaussian")


def test_non_numeric_value_rejected():
    with pytest.raises(TypeError, match="numeric"):
        laplace_mechanism(np.array(["a"]), 1.0)
    with pytest.raises(ValueError, match="finite"):
        laplace_mechanism(np.array([np.nan]), 1.0)


def test_tulap_is_the_untruncated_mechanism_only():
    # the truncated Tulap is not offered, so there is no truncation parameter to set
    with pytest.raises(TypeError, match="truncation"):
        tulap_mechanism([1], 1.0, truncation=0.0)
