"""Tests of GPDTailQuantile and weighted_quantile: EVO's extreme-value cost-tail estimate."""

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.safe_rl import GPDTailQuantile, weighted_quantile
from sklearn_icml.safe_rl._gpd import fit_gpd


def test_exact_gpd_data_recovers_parameters():
    # xi = 0.3, sigma = 1, n = 50000, threshold at the 0th percentile (u = min)
    y = stats.genpareto.rvs(0.3, scale=1.0, size=50000, random_state=np.random.default_rng(1))
    est = GPDTailQuantile(threshold_quantile=0.0, min_exceedances=5).fit(y)
    assert est.threshold_ == pytest.approx(y.min())
    assert est.fallback_ is None
    assert est.shape_ == pytest.approx(0.30, abs=0.03)
    assert est.scale_ == pytest.approx(1.00, abs=0.05)


def test_quantile_formula_and_monotone():
    # the POT quantile u + G^-1((alpha - p_u) / (1 - p_u)) of the fitted GPD
    C = stats.lomax.rvs(3, size=3000, random_state=np.random.default_rng(2))
    est = GPDTailQuantile(threshold_quantile=0.8, tail_quantile=0.9).fit(C)
    u, xi, sigma, p_u = est.threshold_, est.shape_, est.scale_, 0.8
    alphas = np.linspace(0.81, 0.9999, 40)
    qs = np.array([est.quantile(a) for a in alphas])
    ref = u + stats.genpareto.ppf((alphas - p_u) / (1 - p_u), xi, 0, sigma)
    np.testing.assert_allclose(qs, ref, rtol=0, atol=1e-10)
    assert np.all(np.diff(qs) > 0)
    assert est.predict() == pytest.approx(est.quantile(0.8 + 0.2 * 0.9), abs=1e-12)


def test_weighted_quantile_matches_replicated_sample():
    # integer frequency weights count each sample that many times
    rng = np.random.default_rng(3)
    x = rng.normal(size=37)
    w = rng.integers(0, 5, size=37)
    w[0] = 1
    rep = np.repeat(x, w)
    for q in [0.0, 0.05, 0.3, 0.5, 0.77, 0.9, 0.99, 1.0]:
        assert weighted_quantile(x, q, sample_weight=w) == pytest.approx(
            np.quantile(rep, q), abs=1e-9
        )
    # unit weights are np.quantile
    assert weighted_quantile(x, 0.9) == pytest.approx(np.quantile(x, 0.9), abs=1e-12)


def test_integer_weights_equal_replicated_fit():
    rng = np.random.default_rng(4)
    C = stats.lomax.rvs(4, size=400, random_state=rng)
    w = rng.integers(1, 4, size=400)
    a = GPDTailQuantile().fit(C, sample_weight=w)
    b = GPDTailQuantile().fit(np.repeat(C, w))
    assert a.threshold_ == pytest.approx(b.threshold_, abs=1e-12)
    assert a.shape_ == pytest.approx(b.shape_, abs=1e-5)
    assert a.predict() == pytest.approx(b.predict(), rel=1e-5)


def test_fallbacks():
    # all zeros -> 0; constant k -> k with fallback_ set
    est = GPDTailQuantile().fit(np.zeros(50))
    assert est.predict() == 0.0 and est.fallback_ == "all_zero"
    est = GPDTailQuantile().fit(np.full(50, 7.5))
    assert est.predict() == 7.5 and est.fallback_ is not None
    # identical exceedances (binary costs): empirical quantile at alpha, never NaN
    C = np.r_[np.zeros(90), np.full(10, 50.0)]
    est = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.9).fit(C)
    assert est.fallback_ in ("identical_exceedances", "no_exceedances", "few_exceedances")
    assert est.predict() == pytest.approx(np.quantile(C, 0.99))
    # fewer exceedances than min_exceedances: empirical quantile
    C = np.r_[np.arange(20.0), 100.0]
    est = GPDTailQuantile(threshold_quantile=0.9, min_exceedances=5).fit(C)
    assert est.fallback_ == "few_exceedances"
    assert est.predict() == pytest.approx(np.quantile(C, est.alpha_))
    assert np.isfinite(est.predict())


def test_double_threshold_adds_u():
    # the released code's 2u + G^-1: the threshold counted twice
    C = stats.lomax.rvs(4, size=5000, random_state=np.random.default_rng(5))
    a = GPDTailQuantile().fit(C)
    b = GPDTailQuantile(double_threshold=True).fit(C)
    assert a.fallback_ is None
    assert b.predict() - a.predict() == pytest.approx(a.threshold_, abs=1e-12)


def test_e1_lomax_seed0_targets():
    C = stats.lomax.rvs(4, size=20000, random_state=np.random.default_rng(0))
    est = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99).fit(C)
    assert est.threshold_ == pytest.approx(0.769, abs=0.005)
    assert est.shape_ == pytest.approx(0.25, abs=0.05)
    assert est.scale_ == pytest.approx(0.445, abs=0.04)
    assert est.predict() == pytest.approx(4.73, abs=0.35)
    free = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99, free_loc=True).fit(C)
    assert free.predict() == pytest.approx(est.predict(), abs=0.01)


def test_e1_exponential_targets():
    C = stats.expon.rvs(scale=2, size=20000, random_state=np.random.default_rng(0))
    est = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99).fit(C)
    assert est.shape_ == pytest.approx(0.0, abs=0.05)
    assert est.predict() == pytest.approx(13.8, abs=0.8)


@pytest.mark.slow
def test_e1_evt_sd_below_empirical_sd():
    evt, emp = [], []
    for s in range(50):
        C = stats.lomax.rvs(4, size=5000, random_state=np.random.default_rng(s))
        evt.append(GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99).fit(C).predict())
        emp.append(np.quantile(C, 0.999))
    assert np.std(evt) < np.std(emp)


def test_two_d_columns_are_independent_fits():
    rng = np.random.default_rng(6)
    X = np.c_[stats.lomax.rvs(4, size=2000, random_state=rng), rng.exponential(2, 2000)]
    est = GPDTailQuantile().fit(X)
    one = GPDTailQuantile().fit(X[:, 1])
    assert est.quantile_.shape == (2,)
    assert est.quantile_[1] == pytest.approx(one.predict(), abs=1e-10)
    flags = est.predict(X)
    assert flags.shape == (2000,)
    assert flags.sum() == np.sum(np.any(X > est.quantile_, axis=1))


def test_fit_gpd_weighted_equals_replicated():
    y = stats.genpareto.rvs(0.1, size=300, random_state=np.random.default_rng(7))
    w = np.random.default_rng(8).integers(1, 3, size=300)
    a = fit_gpd(y, w)
    b = fit_gpd(np.repeat(y, w))
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_input_not_modified():
    C = stats.lomax.rvs(4, size=300, random_state=np.random.default_rng(9))
    w = np.ones(300)
    C0, w0 = C.copy(), w.copy()
    GPDTailQuantile().fit(C, sample_weight=w)
    np.testing.assert_array_equal(C, C0)
    np.testing.assert_array_equal(w, w0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"threshold_quantile": 1.0}, "threshold_quantile"),
        ({"threshold_quantile": -0.1}, "threshold_quantile"),
        ({"tail_quantile": 0.0}, "tail_quantile"),
        ({"tail_quantile": 1.0}, "tail_quantile"),
        ({"xi_bounds": (1.0, -0.5)}, "xi_bounds"),
    ],
)
def test_bad_params(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GPDTailQuantile(**kwargs).fit(np.arange(10.0))


def test_bad_fit_input():
    C = np.arange(10.0)
    with pytest.raises(ValueError, match="(?i)negative"):
        GPDTailQuantile().fit(C, sample_weight=-np.ones(10))
    with pytest.raises(ValueError, match="non-zero|sum to 0"):
        GPDTailQuantile().fit(C, sample_weight=np.zeros(10))
    with pytest.raises(ValueError, match="sample"):
        GPDTailQuantile().fit(np.array([1.0]))
    with pytest.raises(ValueError):
        GPDTailQuantile().fit(np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match="alpha"):
        GPDTailQuantile().fit(C).quantile(1.5)


def test_sample_weight_by_position_warns_and_gives_the_same_result():
    """``sample_weight`` is keyword-only in weighted_quantile and fit; by position it warns."""
    rng = np.random.default_rng(0)
    x, w = rng.pareto(3.0, 400), rng.uniform(0.5, 2.0, 400)
    expected = weighted_quantile(x, 0.9, sample_weight=w)
    with pytest.warns(FutureWarning, match="pass sample_weight as keyword arguments"):
        assert weighted_quantile(x, 0.9, w) == expected
    model = GPDTailQuantile().fit(x, sample_weight=w)
    with pytest.warns(FutureWarning, match="pass sample_weight as keyword arguments"):
        again = GPDTailQuantile().fit(x, None, w)
    np.testing.assert_array_equal(again.predict(), model.predict())
