"""Closed-form in-context predictor estimators of the paper: SoftmaxKernelICLPredictor,
GDICLPredictor, BayesRidgeICLPredictor."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.model_selection import cross_val_score

from sklearn_icml.neural import (
    BayesRidgeICLPredictor,
    GDICLPredictor,
    LinearICLTaskSampler,
    SoftmaxKernelICLPredictor,
    bayes_ridge_predict,
    fit_gd_eta,
    gd_predict,
    softmax_kernel_predict,
)

ALL = (SoftmaxKernelICLPredictor, GDICLPredictor, BayesRidgeICLPredictor)


def prompts(n=300, d=4, L=12, seed=0):
    return LinearICLTaskSampler(n_features=d, n_context=L, random_state=seed).sample(n)


def test_predict_equals_the_closed_form_functions():
    X, y = prompts()
    X2, _ = prompts(50, L=30, seed=1)  # another context length: length generalisation
    kernel = SoftmaxKernelICLPredictor(omegas=[0.2, -0.1, 0.05], mus=[2.0, -1.0, 0.5]).fit(X, y)
    for Z in (X, X2):
        np.testing.assert_array_equal(
            kernel.predict(Z),
            softmax_kernel_predict(Z, omegas=[0.2, -0.1, 0.05], mus=[2.0, -1.0, 0.5]),
        )
    for debiased in (False, True):
        gd = GDICLPredictor(eta=0.7, debiased=debiased).fit(X)
        assert gd.eta_ == 0.7
        np.testing.assert_array_equal(gd.predict(X2), gd_predict(X2, eta=0.7, debiased=debiased))
        fitted = GDICLPredictor(debiased=debiased).fit(X, y)
        assert fitted.eta_ == fit_gd_eta(X, y, debiased=debiased)
        # the fitted step is the 1-D least-squares optimum: any other step does worse
        for eta in (0.9 * fitted.eta_, 1.1 * fitted.eta_):
            other = GDICLPredictor(eta=eta, debiased=debiased).fit(X)
            assert fitted.icl_mse(X, y) < other.icl_mse(X, y)
    ridge = BayesRidgeICLPredictor(noise_var=0.2, prior_var=0.5).fit(X, y)
    assert ridge.prior_var_ == 0.5
    np.testing.assert_array_equal(
        ridge.predict(X2), bayes_ridge_predict(X2, noise_var=0.2, prior_var=0.5)
    )
    assert BayesRidgeICLPredictor().fit(X).prior_var_ == 0.25  # 1/d with d = 4


def test_bayes_ridge_estimator_matches_sklearn_ridge_per_prompt():
    # the Bayes-optimal ridge through the estimator: Ridge(alpha = sigma^2 d, fit_intercept=False)
    X, _ = prompts(30, d=5, L=9)
    ours = BayesRidgeICLPredictor(noise_var=0.1).fit(X).predict(X)
    ref = [
        Ridge(alpha=0.5, fit_intercept=False).fit(p[:-1, :-1], p[:-1, -1]).predict(p[-1:, :-1])[0]
        for p in X
    ]
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


def test_estimators_rank_as_the_theory_says():
    # Bayes ridge < tuned GD < predicting 0 on fresh prompts (d=5, L=40, the paper's ordering)
    X, y = LinearICLTaskSampler(random_state=3).sample(4000)
    ridge = BayesRidgeICLPredictor().fit(X, y).icl_mse(X, y)
    dgd = GDICLPredictor(debiased=True).fit(X, y).icl_mse(X, y)
    kernel = SoftmaxKernelICLPredictor().fit(X, y).icl_mse(X, y)
    assert ridge < 0.6 * dgd
    assert abs(kernel - dgd) < 0.02  # the 2-head kernel is (nearly) debiased GD
    assert dgd < 0.3 * np.mean(y**2)


def test_sklearn_behaviour_on_prompts():
    X, y = prompts(60)
    X_orig = X.copy()
    for cls in ALL:
        est = cls().fit(X, y)
        assert est.n_features_in_ == 5 and est.n_context_ == 12
        assert clone(est).get_params() == est.get_params()
        np.testing.assert_array_equal(X, X_orig)  # inputs not modified
        np.testing.assert_allclose(est.predict(X[:7]), est.predict(X)[:7], atol=1e-12)
        assert np.isfinite(est.score(X, y))
        pred = est.predict(X)
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict(X), pred)
        assert est.fit(X, y) is est  # fit returns self and is idempotent
        np.testing.assert_array_equal(est.predict(X), pred)
        np.testing.assert_allclose(est.predict(X.astype(np.float32)), pred, atol=1e-5)
        Xr = X.copy()
        Xr.setflags(write=False)
        np.testing.assert_array_equal(est.predict(Xr), pred)
        with pytest.raises(NotFittedError):
            cls().predict(X)
        scores = cross_val_score(cls(), X, y, cv=3)
        assert scores.shape == (3,) and np.all(np.isfinite(scores))


def test_bad_input():
    X, y = prompts(20, d=3, L=5)
    for cls in ALL:
        with pytest.raises(ValueError, match="3-D"):
            cls().fit(X[:, 0], y)
        bad = X.copy()
        bad[2, -1, -1] = 1.0
        with pytest.raises(ValueError, match="allow_query_label"):
            cls().fit(bad, y)
        cls(allow_query_label=True).fit(bad, y).predict(bad)
        nan = X.copy()
        nan[0, 1, 1] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            cls().fit(nan, y)
        with pytest.raises(ValueError, match=r"y must have shape \(20,\)"):
            cls().fit(X, y[:4])
        est = cls().fit(X, y)
        with pytest.raises(ValueError, match="fitted on width 4"):
            est.predict(prompts(3, d=4, L=5)[0])
        with pytest.raises(ValueError, match="y must have shape"):
            est.icl_mse(X, y[:3])
    with pytest.raises(ValueError, match="needs the query labels y"):
        GDICLPredictor().fit(X)
    with pytest.raises(ValueError, match="same non-zero length"):
        SoftmaxKernelICLPredictor(omegas=[0.1, 0.2], mus=[1.0]).fit(X)
    with pytest.raises(ValueError, match="finite"):
        SoftmaxKernelICLPredictor(omegas=[np.inf], mus=[1.0]).fit(X)
    with pytest.raises(ValueError, match="noise_var"):
        BayesRidgeICLPredictor(noise_var=-1.0).fit(X)
    with pytest.raises(ValueError, match="prior_var"):
        BayesRidgeICLPredictor(prior_var="1/L").fit(X)
    with pytest.raises(ValueError, match="eta"):
        GDICLPredictor(eta=np.inf).fit(X)
