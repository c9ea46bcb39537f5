"""The mechanisms drawn through OpenDP: their laws, the privacy parameters OpenDP gets, and
the choice between OpenDP and numpy (``noise_backend``), with and without OpenDP installed.

OpenDP draws from the operating system's CSPRNG and cannot be seeded, so the goodness-of-fit
tests of the OpenDP path cannot fix their draws. Each tests at alpha = 1e-6: under the right
law it fails with probability 1e-6, so the 16 of them fail by chance with probability below
2e-5. With 20,000 draws a wrong law is still caught (at eps = 0.7 a Laplace scale off by 20%
gives KS p-values near 1e-18); the exact scale OpenDP gets is checked apart, by intercepting
its constructor and reading its privacy map.
"""

import sys
import warnings

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.privacy import (
    DPStratifiedSampler,
    _mechanisms,
    amplified_epsilon,
    discrete_laplace_mechanism,
    laplace_mechanism,
    mechanism_variance,
    tulap_mechanism,
)

from .test_mechanisms import _dlap_pmf, _tulap_cdf

ALPHA = 1e-6  # significance level of the unseeded goodness-of-fit tests (see above)
EPSILONS = [0.1, 0.7, 2.0]
MECHANISMS = {
    "laplace": laplace_mechanism,
    "dlap": discrete_laplace_mechanism,
    "tulap": tulap_mechanism,
}


@pytest.fixture
def dp():
    return pytest.importorskip("opendp.prelude")


@pytest.fixture
def no_opendp(monkeypatch):
    """OpenDP not installed: its import fails as a missing package's does."""
    for name in [m for m in sys.modules if m == "opendp" or m.startswith("opendp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opendp", None)
    monkeypatch.setitem(sys.modules, "opendp.prelude", None)


@pytest.fixture
def opendp_calls(dp, monkeypatch):
    """Every ``make_laplace`` call: its arguments, and the values its measurement got."""
    real = dp.m.make_laplace
    calls = []

    class Recorded:
        def __init__(self, measurement):
            self.measurement = measurement
            self.inputs = []

        def map(self, d_in):
            return self.measurement.map(d_in)

        def __call__(self, arg):
            self.inputs.append(arg)
            return self.measurement(arg)

    def spy(input_domain, input_metric, scale, **kwargs):
        recorded = Recorded(real(input_domain, input_metric, scale=scale, **kwargs))
        calls.append({"domain": str(input_domain), "scale": scale, "recorded": recorded})
        return recorded

    monkeypatch.setattr(dp.m, "make_laplace", spy)
    return calls


def _chi_square_pvalue(draws, pmf_at, support):
    """Chi-square of integer draws against a pmf, bins with expected count < 20 lumped."""
    pmf = pmf_at(support)
    expected = pmf * draws.size
    keep = expected >= 20
    observed = np.array([(draws == k).sum() for k in support[keep]], dtype=float)
    rest_obs, rest_exp = draws.size - observed.sum(), draws.size - expected[keep].sum()
    return stats.chisquare(
        np.append(observed, rest_obs), np.append(expected[keep], rest_exp)
    ).pvalue


# ----------------------------------------------------------------- the laws of OpenDP's draws


@pytest.mark.parametrize("eps", EPSILONS)
def test_opendp_laplace_follows_its_density(dp, eps):
    draws = laplace_mechanism(np.full(20_000, 3.0), eps, sensitivity=2.0, noise_backend="opendp")
    law = stats.laplace(loc=3.0, scale=2.0 / eps)
    assert stats.kstest(draws, law.cdf).pvalue > ALPHA


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("sensitivity", [1, 3])
def test_opendp_discrete_laplace_follows_its_pmf(dp, eps, sensitivity):
    draws = discrete_laplace_mechanism(
        np.zeros(20_000, dtype=int), eps, sensitivity=sensitivity, noise_backend="opendp"
    )
    assert draws.dtype == np.int64
    K = int(40 * sensitivity / eps) + 10
    pvalue = _chi_square_pvalue(
        draws, lambda k: _dlap_pmf(k, eps, sensitivity), np.arange(-K, K + 1)
    )
    assert pvalue > ALPHA


@pytest.mark.parametrize("eps", EPSILONS)
def test_opendp_tulap_follows_its_cdf(dp, eps):
    draws = tulap_mechanism(np.full(20_000, 5), eps, noise_backend="opendp")
    assert draws.dtype == np.float64
    assert stats.kstest(draws - 5, lambda t: _tulap_cdf(t, eps)).pvalue > ALPHA
    # the variance the design uses is the variance of these draws (5 standard errors)
    var = mechanism_variance(eps, mechanism="tulap")
    assert abs(draws.mean() - 5) < 5 * np.sqrt(var / draws.size)


def test_secure_uniform_is_uniform_on_an_exact_symmetric_grid():
    u = _mechanisms._secure_uniform((20_000,))
    assert u.shape == (20_000,) and np.all(np.abs(u) < 0.5)
    # every draw is an odd multiple of 2**-53: u * 2**53 is an odd integer, exactly
    scaled = u * 2.0**53
    assert np.all(scaled == np.round(scaled)) and np.all(np.mod(scaled, 2) == 1)
    assert stats.kstest(u, stats.uniform(loc=-0.5, scale=1.0).cdf).pvalue > ALPHA
    assert _mechanisms._secure_uniform((2, 3)).shape == (2, 3)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["laplace", "dlap", "tulap"])
def test_sampler_noise_through_opendp_follows_each_strata_law(dp, mechanism):
    # every stratum's noise at its own nominal budget: randomized probability integral
    # transforms (uniform under the right law, discrete or not), 3 x 2,500 pooled, at ALPHA
    groups = np.repeat([0, 1, 2], [400, 300, 100])
    y = np.random.default_rng(0).integers(0, 2, size=groups.size)
    sampler = DPStratifiedSampler(
        epsilon=0.5, mechanism=mechanism, total_sample_size=60, noise_backend="opendp"
    ).fit(groups)
    assert sampler.noise_backend_ == "opendp"
    noise = np.array(
        [sampler.estimate_mean(groups, y, return_details=True)["noise"] for _ in range(2_500)]
    )
    eps_h, width = sampler.nominal_epsilons_, 1.0
    if mechanism == "laplace":
        pit = stats.laplace(scale=width / eps_h).cdf(noise)
    else:
        if mechanism == "tulap":
            # the integer part is the discrete Laplace release; the rest the uniform
            z = np.round(noise)
            frac = noise - z + 0.5
            assert np.all((frac > 0) & (frac < 1))
        else:
            z = noise
            np.testing.assert_array_equal(z, np.round(z))
            frac = np.random.default_rng(1).uniform(size=noise.shape)
        k = np.arange(-200, 201)
        pmf = _dlap_pmf(k[:, None], eps_h)  # (support, stratum)
        below = np.cumsum(pmf, axis=0) - pmf  # P(Z < k)
        idx = (z + 200).astype(int)
        cols = np.arange(3)
        pit = below[idx, cols] + frac * pmf[idx, cols]
    assert stats.kstest(pit.ravel(), "uniform").pvalue > ALPHA


# ----------------------------------------------------------------- the privacy parameters


@pytest.mark.parametrize("mechanism", ["laplace", "dlap", "tulap"])
def test_opendp_gets_the_scale_the_budget_calls_for(opendp_calls, mechanism):
    eps = np.array([0.3, 1.7, 0.3])
    sensitivity = {"laplace": 2.5, "dlap": 3, "tulap": 1}[mechanism]
    kwargs = {} if mechanism == "tulap" else {"sensitivity": sensitivity}
    values = np.array([4, 9, 1]) if mechanism != "laplace" else np.array([4.5, 9.0, 1.25])
    MECHANISMS[mechanism](values, eps, noise_backend="opendp", **kwargs)
    # one measurement per distinct budget, at the scale sensitivity / epsilon exactly
    assert [c["scale"] for c in opendp_calls] == [sensitivity / 0.3, sensitivity / 1.7]
    atom = "f64" if mechanism == "laplace" else "i64"
    assert all(atom in c["domain"] for c in opendp_calls)
    for call, budget in zip(opendp_calls, [0.3, 1.7]):
        recorded = call["recorded"]
        # OpenDP's own privacy map gives back the budget (it rounds up, by an ulp or so)
        spent = recorded.map(sensitivity)
        assert budget <= spent <= budget * (1 + 1e-12)
    # the values themselves went through OpenDP (not zeros with the noise added outside)
    assert opendp_calls[0]["recorded"].inputs == [[values[0], values[2]]]
    assert opendp_calls[1]["recorded"].inputs == [[values[1]]]


@pytest.mark.parametrize("mechanism", ["laplace", "dlap", "tulap"])
def test_sampler_gives_opendp_the_designs_scales_and_sums(opendp_calls, mechanism):
    groups = np.repeat(["a", "b", "c"], [500, 300, 40])
    y = np.random.default_rng(3).integers(0, 5, size=groups.size)
    data_range = (0, 1) if mechanism == "tulap" else (0, 4)
    sampler = DPStratifiedSampler(
        epsilon=0.8,
        mechanism=mechanism,
        total_sample_size=90,
        data_range=data_range,
        stratum_stds=[1.0, 0.5, 2.0],
        noise_backend="opendp",
    ).fit(groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the clipping count
        details = sampler.estimate_mean(groups, y, return_details=True)
    width = data_range[1] - data_range[0]
    eps_h = sampler.nominal_epsilons_
    order = np.argsort(eps_h)  # one measurement per distinct budget, in increasing order
    assert len(np.unique(eps_h)) == 3 and len(opendp_calls) == 3
    design_scales = width / eps_h
    if mechanism == "laplace":
        np.testing.assert_array_equal(design_scales, sampler.noise_scales_)
    else:
        np.testing.assert_allclose(np.exp(-1.0 / design_scales), sampler.noise_scales_)
    assert [c["scale"] for c in opendp_calls] == design_scales[order].tolist()
    spent = np.array([c["recorded"].map(width) for c in opendp_calls])
    assert np.all(spent >= eps_h[order]) and np.all(spent <= eps_h[order] * (1 + 1e-12))
    # and what OpenDP spends per stratum amplifies back to the final epsilon for everyone
    np.testing.assert_allclose(
        amplified_epsilon(spent, sampler.sampling_rates_[order]), 0.8, rtol=1e-9
    )
    # the stratum sums of the clipped sample are what OpenDP released
    rows = details["sample_indices"]
    sums = np.bincount(
        sampler._stratum_index(groups)[rows], weights=np.clip(y[rows], *data_range), minlength=3
    )
    inputs = [c["recorded"].inputs for c in opendp_calls]
    assert inputs == [[[sums[h]]] for h in order]


def test_a_measurement_that_spends_more_than_the_budget_releases_nothing(dp, monkeypatch):
    real = dp.m.make_laplace

    def too_little_noise(input_domain, input_metric, scale, **kwargs):
        return real(input_domain, input_metric, scale=scale / 2, **kwargs)

    monkeypatch.setattr(dp.m, "make_laplace", too_little_noise)
    with pytest.raises(RuntimeError, match="privacy map"):
        laplace_mechanism([1.0], 1.0, noise_backend="opendp")


# ----------------------------------------------------------------- choosing the sampler


@pytest.mark.parametrize("mechanism", ["laplace", "dlap", "tulap"])
def test_seed_keeps_auto_on_numpy_and_reproducible(dp, mechanism):
    # OpenDP installed, but an int seed asks for a replayable draw: numpy, as before
    func = MECHANISMS[mechanism]
    values = np.arange(5)
    a = func(values, 1.0, random_state=3)
    np.testing.assert_array_equal(a, func(values, 1.0, random_state=3))
    np.testing.assert_array_equal(a, func(values, 1.0, random_state=3, noise_backend="numpy"))


def test_auto_without_seed_uses_opendp_silently(dp, opendp_calls):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = laplace_mechanism(np.zeros(50), 1.0)
        second = laplace_mechanism(np.zeros(50), 1.0)
    assert len(opendp_calls) == 2
    assert not np.array_equal(first, second)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sampler = DPStratifiedSampler(total_sample_size=10).fit(np.repeat([0, 1], 20))
        sampler.estimate_mean(np.repeat([0, 1], 20), np.zeros(40))
    assert sampler.noise_backend_ == "opendp" and len(opendp_calls) == 3


def test_sampler_with_seed_and_opendp_replays_the_sample_not_the_noise(dp):
    groups = np.repeat([0, 1], [300, 200])
    y = np.random.default_rng(0).uniform(size=groups.size)

    def release(backend):
        sampler = DPStratifiedSampler(
            total_sample_size=40, random_state=4, noise_backend=backend
        ).fit(groups)
        return sampler.noise_backend_, sampler.estimate_mean(groups, y, return_details=True)

    auto1, auto2 = release("auto"), release("auto")
    assert auto1[0] == "numpy"
    assert auto1[1]["estimate"] == auto2[1]["estimate"]
    np.testing.assert_array_equal(auto1[1]["noise"], release("numpy")[1]["noise"])
    dp1, dp2 = release("opendp"), release("opendp")
    assert dp1[0] == "opendp"
    np.testing.assert_array_equal(dp1[1]["sample_indices"], dp2[1]["sample_indices"])
    np.testing.assert_array_equal(dp1[1]["sample_indices"], auto1[1]["sample_indices"])
    assert not np.array_equal(dp1[1]["noise"], dp2[1]["noise"])


@pytest.mark.parametrize("mechanism", ["laplace", "dlap", "tulap"])
def test_without_opendp_auto_falls_back_to_numpy_with_a_warning(no_opendp, mechanism):
    func = MECHANISMS[mechanism]
    with pytest.warns(UserWarning, match=r"not side-channel safe.*sklearn-icml\[privacy\]") as rec:
        out = func(np.arange(3), 1.0)
    assert rec[0].filename == __file__  # points at the caller
    assert np.shape(out) == (3,)
    groups = np.repeat([0, 1], 20)
    sampler = DPStratifiedSampler(mechanism=mechanism, total_sample_size=10).fit(groups)
    assert sampler.noise_backend_ == "numpy"
    with pytest.warns(UserWarning, match="not side-channel safe") as rec:
        sampler.estimate_mean(groups, np.zeros(40))
    assert rec[0].filename == __file__


def test_without_opendp_numpy_asked_for_or_seeded_is_silent(no_opendp):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = laplace_mechanism(np.zeros(3), 1.0, random_state=0)
        laplace_mechanism(np.zeros(3), 1.0, noise_backend="numpy")
        groups = np.repeat([0, 1], 20)
        DPStratifiedSampler(total_sample_size=10, random_state=0).fit(groups).estimate_mean(
            groups, np.zeros(40)
        )
        DPStratifiedSampler(total_sample_size=10, noise_backend="numpy").fit(
            groups
        ).estimate_mean(groups, np.zeros(40))
    np.testing.assert_array_equal(a, laplace_mechanism(np.zeros(3), 1.0, random_state=0))


@pytest.mark.parametrize("mechanism", ["laplace", "dlap", "tulap"])
def test_without_opendp_asking_for_it_names_the_extra(no_opendp, mechanism):
    with pytest.raises(ImportError, match=r"pip install \"sklearn-icml\[privacy\]\""):
        MECHANISMS[mechanism]([1], 1.0, noise_backend="opendp")
    sampler = DPStratifiedSampler(
        mechanism=mechanism, total_sample_size=2, noise_backend="opendp"
    )
    with pytest.raises(ImportError, match=r"sklearn-icml\[privacy\]"):
        sampler.fit([0, 0, 1, 1])  # at fit, not at the first release


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize("func", list(MECHANISMS.values()))
def test_unknown_noise_backend_is_rejected_by_name(func):
    with pytest.raises(ValueError, match="noise_backend"):
        func([1], 1.0, noise_backend="gpu")
    with pytest.raises(ValueError, match="noise_backend"):
        DPStratifiedSampler(noise_backend="OpenDP").fit([0, 1])


@pytest.mark.parametrize("func", list(MECHANISMS.values()))
@pytest.mark.parametrize("random_state", [0, np.random.RandomState(0)])
def test_opendp_cannot_take_a_seed(func, random_state):
    with pytest.raises(ValueError, match=r"random_state must be None.*Got random_state="):
        func([1], 1.0, random_state=random_state, noise_backend="opendp")
