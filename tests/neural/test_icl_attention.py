"""MultiHeadAttentionICLModule and MultiHeadSoftmaxICLRegressor (spec sections 7 and 8)."""

import math
import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone

from sklearn_icml.neural import (
    LinearICLTaskSampler,
    MultiHeadAttentionICLModule,
    MultiHeadSoftmaxICLRegressor,
    gd_predict,
    softmax_kernel_predict,
)
from sklearn_icml.neural._icl_attention import module_predict

torch.set_num_threads(1)

TINY = {"n_steps": 6, "batch_size": 16, "steps_per_epoch": 3, "random_state": 0}


def prompts(n=200, d=4, L=12, seed=0, **kw):
    return LinearICLTaskSampler(n_features=d, n_context=L, random_state=seed, **kw).sample(n)


def module64(D, H, **kw):
    torch.manual_seed(0)
    return MultiHeadAttentionICLModule(D, H, **kw).double()


def reference_forward(module, X):
    """Numpy forward pass of the spec's formula (query attends to the context only)."""
    KQ, _ = module.effective_weights()
    D, H = module.D, module.H
    V = module.v.weight.detach().double().numpy().reshape(H, D, D)
    O = module.o.weight.detach().double().numpy().reshape(H, D)
    out = np.zeros(X.shape[0])
    for h in range(H):
        s = np.einsum("nli,ij,nj->nl", X[:, :-1], KQ[h], X[:, -1])
        a = np.exp(s - s.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        out += np.einsum("nl,nlj,ij,i->n", a, X[:, :-1], V[h], O[h])
    return out


def test_forward_matches_reference_formula():
    X, _ = prompts(50)
    module = module64(5, 3)
    np.testing.assert_allclose(
        module_predict(module, X), reference_forward(module, X), rtol=1e-10, atol=1e-12
    )


def test_query_does_not_attend_to_itself():
    # spec 7.1: with hand-set weights the query's y-slot is read only through
    # self-attention, so a huge value there must change nothing
    X, _ = prompts(40)
    module = module64(5, 2).set_effective([0.2, -0.2], [2.0, -2.0])
    base = module_predict(module, X)
    X2 = X.copy()
    X2[:, -1, -1] = 1e6
    np.testing.assert_array_equal(module_predict(module, X2), base)


def test_permutation_invariance_over_context():
    # spec 7.2
    X, _ = prompts(40)
    module = module64(5, 2)
    perm = np.random.default_rng(0).permutation(12)
    Xp = X.copy()
    Xp[:, :-1] = X[:, perm]
    np.testing.assert_allclose(module_predict(module, Xp), module_predict(module, X), atol=1e-6)


def test_hand_set_weights_reproduce_softmax_kernel():
    # spec 7.3, in the float32 module (as trained) and float64
    X, _ = prompts(100)
    omegas, mus = [0.13, -0.13, 0.3], [3.45, -3.45, 0.5]
    for dtype in (torch.float32, torch.float64):
        module = MultiHeadAttentionICLModule(5, 3).to(dtype).set_effective(omegas, mus)
        with torch.no_grad():
            out = module(torch.as_tensor(X, dtype=dtype)).double().numpy()
        tol = 1e-5 if dtype == torch.float32 else 1e-12
        np.testing.assert_allclose(out, softmax_kernel_predict(X, omegas, mus), atol=tol)
    KQ, OV = module.effective_weights()
    np.testing.assert_allclose(np.diagonal(KQ[:, :4, :4], axis1=1, axis2=2).mean(1), omegas)
    np.testing.assert_allclose(OV[:, -1], mus)


def test_debiasing_identity_for_small_omega():
    # spec 7.4: two opposite heads with omega = 1e-4 are debiased GD with eta = 2 omega mu
    X, _ = prompts(200)
    w, m = 1e-4, 3.0
    module = module64(5, 2).set_effective([w, -w], [m, -m])
    out = module_predict(module, X) / (2 * w * m)
    ref = gd_predict(X, 1.0, debiased=True)
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-3


def test_same_sign_heads_keep_the_bias_term():
    # spec 7.5: mu_1 = mu_2 does not cancel the mean-of-labels term
    X, _ = prompts(200)
    w, m = 1e-4, 3.0
    out = module_predict(module64(5, 2).set_effective([w, -w], [m, m]), X)
    ybar = X[:, :-1, -1].mean(1)
    np.testing.assert_allclose(out, 2 * m * ybar, rtol=1e-3, atol=1e-6)
    debiased = module_predict(module64(5, 2).set_effective([w, -w], [m, -m]), X)
    assert np.linalg.norm(debiased) < 0.01 * np.linalg.norm(out)


def test_score_scaling_is_sqrt_d_plus_1():
    # spec 7.10: Q = K = I gives omega = 1/sqrt(d+1), not 1/sqrt(d)
    X, _ = prompts(60)
    D = 5
    module = module64(D, 1)
    with torch.no_grad():
        module.q.weight.copy_(torch.eye(D))
        module.k.weight.copy_(torch.eye(D))
        module.v.weight.zero_()
        module.v.weight[-1, -1] = 1.0
        module.o.weight.zero_()
        module.o.weight[0, -1] = 2.0
    KQ, _ = module.effective_weights()
    np.testing.assert_allclose(KQ[0], np.eye(D) / math.sqrt(D))
    np.testing.assert_allclose(
        module_predict(module, X), softmax_kernel_predict(X, [1 / math.sqrt(D)], [2.0]), atol=1e-12
    )


def test_linear_attention_is_plain_gd():
    X, _ = prompts(60)
    module = module64(5, 1, attention="linear").set_effective([0.3], [2.0])
    np.testing.assert_allclose(module_predict(module, X), gd_predict(X, 0.6), atol=1e-12)


def test_small_id_inits():
    m = MultiHeadAttentionICLModule(3, 4, init="oppo_small_id")
    KQ, _ = m.effective_weights()
    assert np.all(np.diagonal(KQ[:2], axis1=1, axis2=2) > 0)
    assert np.all(np.diagonal(KQ[2:], axis1=1, axis2=2) < 0)
    m = MultiHeadAttentionICLModule(3, 2, init="small_id_qk")
    np.testing.assert_allclose(
        m.effective_weights()[0][0], 1e-8 * np.eye(3) / math.sqrt(3), rtol=1e-5
    )
    with pytest.raises(ValueError, match="even n_heads"):
        MultiHeadAttentionICLModule(3, 3, init="oppo_small_id")


def test_fit_online_and_offline_and_length_generalisation():
    sampler = LinearICLTaskSampler(n_features=3, n_context=10)
    model = MultiHeadSoftmaxICLRegressor(sampler=sampler, **TINY).fit()
    assert model.n_features_in_ == 4 and model.n_context_ == 10
    assert model.loss_curve_.shape == (2,) and model.n_epochs_run_ == 2
    assert model.KQ_.shape == (2, 4, 4) and model.OV_.shape == (2, 4)
    # any context length is accepted at predict time, and never padded/truncated
    for L in (1, 10, 37):
        X, y = prompts(7, d=3, L=L, seed=L)
        assert model.predict(X).shape == (7,)
        assert np.isfinite(model.icl_mse(X, y))
    X, y = prompts(40, d=3, L=6)
    offline = MultiHeadSoftmaxICLRegressor(**TINY).fit(X, y)
    assert offline.n_context_ == 6 and offline.n_features_in_ == 4
    assert np.isfinite(offline.score(X, y))
    pats = offline.attention_patterns()
    assert {
        "KQ_",
        "OV_",
        "omega",
        "mu",
        "diag_ratio",
        "homogeneity",
        "last_entry_ratio",
        "zero_sum",
        "eta_eff",
    } <= set(pats)


def test_determinism_and_sklearn_behaviour_on_prompts():
    # spec 7.9 and the common checks that cannot run on 2-D data, re-run on prompts
    X, y = prompts(40, d=3, L=6)
    X_orig = X.copy()
    a = MultiHeadSoftmaxICLRegressor(**TINY).fit(X, y)
    b = MultiHeadSoftmaxICLRegressor(**TINY).fit(X, y)
    np.testing.assert_array_equal(a.omega_, b.omega_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    first = a.omega_.copy()
    assert a.fit(X, y) is a  # fit returns self, refit is idempotent
    np.testing.assert_array_equal(a.omega_, first)
    np.testing.assert_array_equal(X, X_orig)  # inputs not modified
    c = MultiHeadSoftmaxICLRegressor(**{**TINY, "random_state": 1}).fit(X, y)
    assert not np.array_equal(c.omega_, first)
    online = [MultiHeadSoftmaxICLRegressor(**TINY).fit().omega_ for _ in range(2)]
    np.testing.assert_array_equal(*online)
    # pickling, clone, dtypes, read-only input, subset invariance
    restored = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(restored.predict(X), a.predict(X))
    assert clone(a).get_params() == a.get_params()
    np.testing.assert_allclose(a.predict(X.astype(np.float32)), a.predict(X), atol=1e-6)
    Xr = X.copy()
    Xr.setflags(write=False)
    np.testing.assert_array_equal(a.predict(Xr), a.predict(X))
    np.testing.assert_allclose(a.predict(X[:5]), a.predict(X)[:5], atol=1e-12)
    Xi = np.round(X * 3)
    Xi[:, -1, -1] = 0
    assert a.predict(Xi.astype(np.int64)).shape == (40,)


def test_bad_input():
    X, y = prompts(20, d=3, L=5)
    model = MultiHeadSoftmaxICLRegressor(**TINY)
    with pytest.raises(ValueError, match="3-D"):
        model.fit(X[:, 0], y)
    with pytest.raises(ValueError, match="y is required"):
        model.fit(X)
    with pytest.raises(ValueError, match="y was given without X"):
        model.fit(None, y)
    with pytest.raises(ValueError, match=r"y must have shape \(20,\)"):
        model.fit(X, y[:5])
    bad = X.copy()
    bad[3, -1, -1] = 1.0
    with pytest.raises(ValueError, match="allow_query_label"):
        model.fit(bad, y)
    MultiHeadSoftmaxICLRegressor(**TINY, allow_query_label=True).fit(bad, y)
    for value in (np.nan, np.inf):
        bad = X.copy()
        bad[0, 1, 1] = value
        with pytest.raises(ValueError, match="NaN|infinity"):
            model.fit(bad, y)
    with pytest.raises(ValueError, match="n_context >= 1"):
        model.fit(X[:, -1:], y)
    with pytest.raises(ValueError, match="n_heads"):
        MultiHeadSoftmaxICLRegressor(n_heads=0).fit(X, y)
    with pytest.raises(ValueError, match="even n_heads"):
        MultiHeadSoftmaxICLRegressor(n_heads=3, init="oppo_small_id").fit(X, y)
    with pytest.raises(ValueError, match="init"):
        MultiHeadSoftmaxICLRegressor(init="zeros").fit(X, y)
    model.fit(X, y)
    with pytest.raises(ValueError, match="fitted on width 4"):
        model.predict(prompts(3, d=4, L=5)[0])
    with pytest.raises(ValueError, match="3-D"):
        model.predict(X.reshape(20, -1))
    bad = X.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.predict(bad)
    with pytest.raises(ValueError, match="y must have shape"):
        model.icl_mse(X, y[:3])


def test_plot_attention_patterns():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X, y = prompts(20, d=3, L=5)
    fig = MultiHeadSoftmaxICLRegressor(**TINY).fit(X, y).plot_attention_patterns()
    assert len(fig.axes) >= 4
    plt.close(fig)


@pytest.mark.slow
def test_short_training_learns_in_context():
    # small problem (d=2, L=10): a few hundred Adam steps must beat predicting 0 and the
    # label mean by far, and two heads must beat one (the multi-head advantage)
    sampler = LinearICLTaskSampler(n_features=2, n_context=10)
    X, y = LinearICLTaskSampler(n_features=2, n_context=10, random_state=5).sample(20_000)
    kw = {
        "sampler": sampler,
        "n_steps": 600,
        "batch_size": 128,
        "lr": 1e-2,
        "steps_per_epoch": 100,
        "random_state": 0,
    }
    m2 = MultiHeadSoftmaxICLRegressor(n_heads=2, **kw).fit()
    m1 = MultiHeadSoftmaxICLRegressor(n_heads=1, **kw).fit()
    mse2, mse1 = m2.icl_mse(X, y), m1.icl_mse(X, y)
    assert m2.loss_curve_[-1] < 0.7 * m2.loss_curve_[0]
    assert mse2 < 0.6 * np.mean(y**2)
    assert mse2 < mse1


def test_unnormalized_linear_attention_keeps_the_training_length():
    # "linear_unnormalized" divides by the fixed training length: at another prompt length
    # it is plain GD with the step rescaled by L / n_context (no length renormalisation),
    # whereas "linear" renormalises by each prompt's own L
    X12, _ = prompts(60, L=12)
    X30, _ = prompts(60, L=30, seed=1)
    fixed = module64(5, 1, attention="linear_unnormalized", n_context=12).set_effective(
        [0.3], [2.0]
    )
    norm = module64(5, 1, attention="linear").set_effective([0.3], [2.0])
    np.testing.assert_allclose(module_predict(fixed, X12), gd_predict(X12, 0.6), atol=1e-12)
    np.testing.assert_allclose(
        module_predict(fixed, X30), gd_predict(X30, 0.6 * 30 / 12), atol=1e-12
    )
    np.testing.assert_allclose(module_predict(norm, X30), gd_predict(X30, 0.6), atol=1e-12)
    with pytest.raises(ValueError, match="n_context >= 1"):
        MultiHeadAttentionICLModule(5, 1, attention="linear_unnormalized")
    with pytest.raises(ValueError, match="attention must be one of"):
        MultiHeadAttentionICLModule(5, 1, attention="relu")
    X, y = prompts(20, d=3, L=5)
    model = MultiHeadSoftmaxICLRegressor(attention="linear_unnormalized", **TINY).fit(X, y)
    assert model.module_.n_context == 5
    assert model.predict(prompts(4, d=3, L=9)[0]).shape == (4,)
