"""Prompt sampler, closed-form predictors and closed forms of the ICL attention paper."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.linear_model import Ridge

from sklearn_icml.neural import (
    LinearICLTaskSampler,
    approx_icl_loss,
    attention_pattern_metrics,
    bayes_ridge_predict,
    bayes_risk_asymptotic,
    check_prompts,
    debiased_gd_optimum,
    fit_gd_eta,
    gd_predict,
    gd_risk_finite,
    optimal_mu,
    single_head_optimum,
    softmax_kernel_predict,
)


def test_sampler_layout_and_labels():
    sampler = LinearICLTaskSampler(n_features=3, n_context=7, noise_var=0.0, random_state=0)
    X, y = sampler.sample(50)
    assert X.shape == (50, 8, 4) and y.shape == (50,)
    assert np.all(X[:, -1, -1] == 0)
    beta = sampler.beta_
    # noise-free: every context label and the query label are beta^T x
    np.testing.assert_allclose(X[:, :-1, -1], np.einsum("nld,nd->nl", X[:, :-1, :-1], beta))
    np.testing.assert_allclose(y, np.einsum("nd,nd->n", X[:, -1, :-1], beta))


def test_sampler_moments():
    # E[y^2] = 1 + sigma^2 within 1% on ~10^6 labels; beta variance 1/d
    sampler = LinearICLTaskSampler(random_state=0)
    X, y = sampler.sample(25_000)
    labels = np.concatenate([X[:, :-1, -1].ravel(), y])
    assert labels.size > 1_000_000
    assert abs(np.mean(labels**2) / 1.1 - 1) < 0.01
    assert abs(sampler.beta_.var() * 5 - 1) < 0.02
    # the query noise is there: y - beta^T x_q has variance sigma^2
    resid = y - np.einsum("nd,nd->n", X[:, -1, :-1], sampler.beta_)
    assert abs(resid.var() / 0.1 - 1) < 0.03


def test_sampler_random_state_and_covariance():
    a = LinearICLTaskSampler(random_state=3).sample(5)
    b = LinearICLTaskSampler(random_state=3).sample(5)
    np.testing.assert_array_equal(a[0], b[0])
    cov = 0.5 ** np.abs(np.subtract.outer(np.arange(4), np.arange(4)))
    X, _ = LinearICLTaskSampler(n_features=4, n_context=50, covariance=cov, random_state=0).sample(
        2000
    )
    emp = np.cov(X[:, :, :-1].reshape(-1, 4).T)
    np.testing.assert_allclose(emp, cov, atol=0.03)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_features": 0}, "n_features"),
        ({"n_context": 0}, "n_context"),
        ({"noise_var": -1.0}, "noise_var"),
        ({"beta_var": "1/L"}, "beta_var"),
        ({"covariance": np.eye(3)}, "covariance"),
        ({"covariance": -np.eye(5)}, "positive definite"),
    ],
)
def test_sampler_bad_params(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LinearICLTaskSampler(**kwargs).sample(2)


def test_check_prompts_bad_input():
    good = np.zeros((2, 5, 3))
    with pytest.raises(ValueError, match="3-D"):
        check_prompts(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="n_context >= 1"):
        check_prompts(np.zeros((2, 1, 3)))
    bad = good.copy()
    bad[1, -1, -1] = 2.0
    with pytest.raises(ValueError, match="allow_query_label"):
        check_prompts(bad)
    assert check_prompts(bad, allow_query_label=True)[1, -1, -1] == 2.0
    for value in (np.nan, np.inf):
        bad = good.copy()
        bad[0, 0, 0] = value
        with pytest.raises(ValueError, match="NaN|infinity"):
            check_prompts(bad)
    with pytest.raises(ValueError, match="width 3"):
        check_prompts(good, n_features_in=4)


def test_bayes_ridge_matches_sklearn_ridge():
    # the Bayes-optimal ridge is a per-prompt Ridge(alpha = sigma^2 d, fit_intercept=False),
    # to 1e-10
    X, _ = LinearICLTaskSampler(random_state=1).sample(30)
    ours = bayes_ridge_predict(X, noise_var=0.1)
    ref = [
        Ridge(alpha=0.5, fit_intercept=False).fit(p[:-1, :-1], p[:-1, -1]).predict(p[-1:, :-1])[0]
        for p in X
    ]
    np.testing.assert_allclose(ours, ref, atol=1e-10, rtol=0)


def test_gd_predictors_by_hand():
    X, _ = LinearICLTaskSampler(n_features=2, n_context=3, random_state=0).sample(2)
    p = X[0]
    x, yy, xq = p[:-1, :-1], p[:-1, -1], p[-1, :-1]
    plain = sum(yy[i] * x[i] @ xq for i in range(3)) / 3
    deb = sum(yy[i] * (x[i] - x.mean(0)) @ xq for i in range(3)) / 3
    assert gd_predict(X, eta=0.7)[0] == pytest.approx(0.7 * plain)
    assert gd_predict(X, eta=0.7, debiased=True)[0] == pytest.approx(0.7 * deb)
    with pytest.raises(ValueError, match="eta"):
        gd_predict(X, eta=np.nan)


def test_softmax_kernel_by_hand_and_limits():
    X, _ = LinearICLTaskSampler(n_features=2, n_context=4, random_state=0).sample(3)
    p = X[1]
    s = p[:-1, :-1] @ p[-1, :-1]
    a = np.exp(0.3 * s) / np.exp(0.3 * s).sum()
    kernel = softmax_kernel_predict(X, omegas=[0.3], mus=[2.0])
    assert kernel[1] == pytest.approx(2.0 * a @ p[:-1, -1])
    # omega = 0: uniform attention, the prediction is mu * mean(y)
    uniform = softmax_kernel_predict(X, omegas=[0.0], mus=[1.0])
    np.testing.assert_allclose(uniform, X[:, :-1, -1].mean(1))
    # huge omega stays finite (max-subtracted softmax)
    assert np.all(np.isfinite(softmax_kernel_predict(X, omegas=[1e4], mus=[1.0])))
    with pytest.raises(ValueError, match="same non-zero length"):
        softmax_kernel_predict(X, omegas=[0.1, -0.1], mus=[1.0])


def test_single_head_optimum_closed_form():
    # the paper's single-head optimum: omega = 1/sqrt(d) exactly, and it is the minimiser of Ltilde
    omega, mu, loss = single_head_optimum(5, 40, 0.1)
    assert omega == 1 / np.sqrt(5)
    assert mu == pytest.approx(1.62769, abs=1e-4)
    assert loss == pytest.approx(0.37207, abs=1e-4)
    assert approx_icl_loss([omega], [mu]) == pytest.approx(loss, abs=1e-12)
    assert optimal_mu([omega])[0] == pytest.approx(mu, rel=1e-10)

    def profile(w):
        return approx_icl_loss([w], optimal_mu([w]))

    res = minimize_scalar(profile, bounds=(0.05, 1.5), method="bounded", options={"xatol": 1e-10})
    assert res.x == pytest.approx(omega, abs=1e-5)
    assert res.fun == pytest.approx(loss, abs=1e-8)


def test_debiased_gd_optimum_is_the_two_head_limit():
    eta, loss = debiased_gd_optimum(5, 40, 0.1)
    assert eta == pytest.approx(0.879121, abs=1e-6)
    assert loss == pytest.approx(0.220879, abs=1e-6)
    # symmetric heads with eta = 2 omega mu fixed: Ltilde decreases to the limit as omega -> 0
    values = [
        approx_icl_loss([w, -w], [eta / (2 * w), -eta / (2 * w)]) for w in (0.2, 0.1, 0.03, 0.001)
    ]
    assert np.all(np.diff(values) < 0)
    assert values[-1] == pytest.approx(loss, abs=1e-4)
    # and the optimal mu at +-0.13 is +-3.381 (the paper's calibration), loss 0.2214 at 3.45
    np.testing.assert_allclose(optimal_mu([0.13, -0.13]), [3.381, -3.381], atol=1e-3)
    assert approx_icl_loss([0.13, -0.13], [3.45, -3.45]) == pytest.approx(0.2214, abs=1e-4)
    # the multi-head advantage: the two-head limit beats the single-head optimum
    assert loss < single_head_optimum()[2]


def test_other_closed_forms():
    assert bayes_risk_asymptotic(5 / 40, noise_var=0.1) == pytest.approx(0.11406, abs=1e-5)
    eta, risk = gd_risk_finite(5, 40, 0.1)
    assert eta == pytest.approx(0.8602, abs=1e-4) and risk == pytest.approx(0.23978, abs=1e-5)
    with pytest.raises(ValueError, match="xi"):
        bayes_risk_asymptotic(0.0)
    with pytest.raises(ValueError, match="n_context"):
        single_head_optimum(5, 0)
    with pytest.raises(ValueError, match="mu must have shape"):
        approx_icl_loss([0.1, -0.1], [1.0])


@pytest.mark.slow
def test_closed_form_predictors_monte_carlo():
    # the paper's closed-form risks on 100,000 fresh prompts
    X, y = LinearICLTaskSampler(random_state=0).sample(100_000)

    def mse(p):
        return np.mean((p - y) ** 2)

    assert mse(bayes_ridge_predict(X)) == pytest.approx(0.1146, abs=0.002)
    assert mse(gd_predict(X, eta=gd_risk_finite()[0])) == pytest.approx(0.241, abs=0.006)
    Xf, yf = LinearICLTaskSampler(random_state=1).sample(100_000)
    eta = fit_gd_eta(Xf, yf, debiased=True)
    assert eta == pytest.approx(0.8776, abs=0.01)
    assert mse(gd_predict(X, eta=eta, debiased=True)) == pytest.approx(0.244, abs=0.006)
    assert mse(softmax_kernel_predict(X)) == pytest.approx(0.244, abs=0.006)
    w, m, _ = single_head_optimum()
    assert mse(softmax_kernel_predict(X, omegas=[w], mus=[m])) == pytest.approx(0.41, abs=0.01)
    assert fit_gd_eta(Xf, yf) == pytest.approx(0.8602, abs=0.005)


def test_attention_pattern_metrics():
    d = 3
    KQ = np.zeros((2, d + 1, d + 1))
    KQ[0, :d, :d] = 0.2 * np.eye(d)
    KQ[1, :d, :d] = -0.2 * np.eye(d)
    KQ[:, :, -1] = 5.0  # the untrained column is excluded from the diag ratio
    OV = np.zeros((2, d + 1))
    OV[:, -1] = [3.0, -2.0]
    OV[0, 0] = 1.0
    m = attention_pattern_metrics(KQ, OV)
    np.testing.assert_allclose(m["omega"], [0.2, -0.2])
    np.testing.assert_allclose(m["diag_ratio"], [1.0, 1.0])
    np.testing.assert_allclose(m["last_entry_ratio"], [0.9, 1.0])
    assert m["zero_sum"] == pytest.approx(1 / 5)
    assert m["eta_eff"] == pytest.approx((2 * 0.2 * 3 + 2 * 0.2 * 2) / 2)
    KQ[0, 0, 1] = 0.2
    assert attention_pattern_metrics(KQ, OV)["diag_ratio"][0] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="KQ must have shape"):
        attention_pattern_metrics(KQ[0], OV)


def test_samplers_are_estimators_validated_at_first_use():
    from sklearn.base import clone

    from sklearn_icml.neural import MultiTaskLinearICLTaskSampler

    for cls in (LinearICLTaskSampler, MultiTaskLinearICLTaskSampler):
        bad = cls(n_context=0)  # __init__ only stores
        assert bad.get_params()["n_context"] == 0
        with pytest.raises(ValueError, match="n_context"):
            bad.sample(2)
        with pytest.raises(ValueError, match="n_prompts"):
            cls().sample(0)
        sampler = cls(n_context=5, random_state=4)
        first = sampler.sample(3)[0]
        second = sampler.sample(3)[0]  # successive calls continue one stream
        assert not np.array_equal(first, second)
        np.testing.assert_array_equal(clone(sampler).sample(3)[0], first)  # clone restarts
        np.testing.assert_array_equal(sampler.set_params(random_state=4).sample(3)[0], first)
        assert repr(sampler).startswith(cls.__name__)


def test_settings_of_the_closed_forms_are_keyword_only():
    X, _ = LinearICLTaskSampler(n_features=3, n_context=8, random_state=0).sample(20)
    with pytest.warns(FutureWarning, match="eta"):
        old = gd_predict(X, 0.7)
    np.testing.assert_array_equal(old, gd_predict(X, eta=0.7))
    with pytest.warns(FutureWarning, match="noise_var"):
        assert bayes_risk_asymptotic(0.1, 0.2) == bayes_risk_asymptotic(0.1, noise_var=0.2)
    with pytest.warns(FutureWarning, match="n_features"):
        assert approx_icl_loss([0.1], [1.0], 4) == approx_icl_loss([0.1], [1.0], n_features=4)
