"""MultiHeadAttentionICLModule and MultiHeadSoftmaxICLRegressor: the paper's identities,
training and bad input."""

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
    MultiTaskLinearICLTaskSampler,
    gd_predict,
    multitask_pattern_metrics,
    softmax_kernel_predict,
)
from sklearn_icml.neural._icl_attention import OnlinePromptLoader, module_predict

torch.set_num_threads(1)

TINY = {"max_iter": 6, "batch_size": 16, "steps_per_epoch": 3, "random_state": 0}


def prompts(n=200, d=4, L=12, seed=0, **kw):
    return LinearICLTaskSampler(n_features=d, n_context=L, random_state=seed, **kw).sample(n)


def module64(D, H, **kw):
    torch.manual_seed(0)
    return MultiHeadAttentionICLModule(D, H, **kw).double()


def reference_forward(module, X):
    """Numpy forward pass of the paper's formula (query attends to the context only)."""
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
    # with hand-set weights the query's y-slot is read only through
    # self-attention, so a huge value there must change nothing
    X, _ = prompts(40)
    module = module64(5, 2).set_effective([0.2, -0.2], [2.0, -2.0])
    base = module_predict(module, X)
    X2 = X.copy()
    X2[:, -1, -1] = 1e6
    np.testing.assert_array_equal(module_predict(module, X2), base)


def test_permutation_invariance_over_context():
    # permuting the context tokens leaves the prediction unchanged
    X, _ = prompts(40)
    module = module64(5, 2)
    perm = np.random.default_rng(0).permutation(12)
    Xp = X.copy()
    Xp[:, :-1] = X[:, perm]
    np.testing.assert_allclose(module_predict(module, Xp), module_predict(module, X), atol=1e-6)


def test_hand_set_weights_reproduce_softmax_kernel():
    # the hand-set module is the softmax-kernel predictor, in the float32 module (as
    # trained) and float64
    X, _ = prompts(100)
    omegas, mus = [0.13, -0.13, 0.3], [3.45, -3.45, 0.5]
    for dtype in (torch.float32, torch.float64):
        module = MultiHeadAttentionICLModule(5, 3).to(dtype).set_effective(omegas, mus)
        with torch.no_grad():
            out = module(torch.as_tensor(X, dtype=dtype)).double().numpy()
        tol = 1e-5 if dtype == torch.float32 else 1e-12
        ref = softmax_kernel_predict(X, omegas=omegas, mus=mus)
        np.testing.assert_allclose(out, ref, atol=tol)
    KQ, OV = module.effective_weights()
    np.testing.assert_allclose(np.diagonal(KQ[:, :4, :4], axis1=1, axis2=2).mean(1), omegas)
    np.testing.assert_allclose(OV[:, -1], mus)


def test_debiasing_identity_for_small_omega():
    # two opposite heads with omega = 1e-4 are debiased GD with eta = 2 omega mu
    X, _ = prompts(200)
    w, m = 1e-4, 3.0
    module = module64(5, 2).set_effective([w, -w], [m, -m])
    out = module_predict(module, X) / (2 * w * m)
    ref = gd_predict(X, eta=1.0, debiased=True)
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-3


def test_same_sign_heads_keep_the_bias_term():
    # mu_1 = mu_2 does not cancel the mean-of-labels term
    X, _ = prompts(200)
    w, m = 1e-4, 3.0
    out = module_predict(module64(5, 2).set_effective([w, -w], [m, m]), X)
    ybar = X[:, :-1, -1].mean(1)
    np.testing.assert_allclose(out, 2 * m * ybar, rtol=1e-3, atol=1e-6)
    debiased = module_predict(module64(5, 2).set_effective([w, -w], [m, -m]), X)
    assert np.linalg.norm(debiased) < 0.01 * np.linalg.norm(out)


def test_score_scaling_is_sqrt_d_plus_1():
    # Q = K = I gives omega = 1/sqrt(d+1), not 1/sqrt(d)
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
        module_predict(module, X),
        softmax_kernel_predict(X, omegas=[1 / math.sqrt(D)], mus=[2.0]),
        atol=1e-12,
    )


def test_linear_attention_is_plain_gd():
    X, _ = prompts(60)
    module = module64(5, 1, attention="linear").set_effective([0.3], [2.0])
    np.testing.assert_allclose(module_predict(module, X), gd_predict(X, eta=0.6), atol=1e-12)


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
    # the scikit-learn API and the common checks that cannot run on 2-D data, re-run on prompts
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
        "max_iter": 600,
        "batch_size": 128,
        "learning_rate": 1e-2,
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
    np.testing.assert_allclose(module_predict(fixed, X12), gd_predict(X12, eta=0.6), atol=1e-12)
    np.testing.assert_allclose(
        module_predict(fixed, X30), gd_predict(X30, eta=0.6 * 30 / 12), atol=1e-12
    )
    np.testing.assert_allclose(module_predict(norm, X30), gd_predict(X30, eta=0.6), atol=1e-12)
    with pytest.raises(ValueError, match="n_context >= 1"):
        MultiHeadAttentionICLModule(5, 1, attention="linear_unnormalized")
    with pytest.raises(ValueError, match="attention must be one of"):
        MultiHeadAttentionICLModule(5, 1, attention="relu")
    X, y = prompts(20, d=3, L=5)
    model = MultiHeadSoftmaxICLRegressor(attention="linear_unnormalized", **TINY).fit(X, y)
    assert model.module_.n_context == 5
    assert model.predict(prompts(4, d=3, L=9)[0]).shape == (4,)


# multi-task extension of the paper: tokens (x, y1, y2), two outputs


def test_multitask_sampler_shapes_and_supports():
    sampler = MultiTaskLinearICLTaskSampler(n_context=12, noise_var=0.0, random_state=0)
    X, y = sampler.sample(300)
    assert X.shape == (300, 13, 7) and y.shape == (300, 2)
    assert sampler.beta1_.shape == (300, 3) and sampler.beta2_.shape == (300, 4)
    np.testing.assert_array_equal(X[:, -1, 5:], 0.0)
    x = X[:, :, :5]
    labels = np.concatenate([X[:, :-1, 5:], y[:, None]], axis=1)
    # noise-free: y1 is exactly beta1^T x[:3] and y2 exactly beta2^T x[1:]
    np.testing.assert_allclose(
        labels[..., 0], np.einsum("nld,nd->nl", x[:, :, :3], sampler.beta1_), atol=1e-12
    )
    np.testing.assert_allclose(
        labels[..., 1], np.einsum("nld,nd->nl", x[:, :, 1:], sampler.beta2_), atol=1e-12
    )
    # and per prompt, least squares on all 5 coordinates puts 0 outside each support
    coef = np.stack([np.linalg.lstsq(x[i], labels[i], rcond=None)[0] for i in range(300)])
    assert np.abs(coef[:, 3:, 0]).max() < 1e-10 and np.abs(coef[:, 0, 1]).max() < 1e-10
    assert np.abs(coef[:, :3, 0]).min() > 0 and np.abs(coef[:, 1:, 1]).min() > 0
    assert [s.tolist() for s in sampler.supports()] == [[0, 1, 2], [1, 2, 3, 4]]
    assert MultiTaskLinearICLTaskSampler().supports()[1].tolist() == [1, 2, 3, 4]


def test_multitask_sampler_noise_scales_with_support_size():
    sampler = MultiTaskLinearICLTaskSampler(n_context=1, noise_var=0.2, random_state=1)
    X, y = sampler.sample(100_000)
    r1 = y[:, 0] - np.einsum("nd,nd->n", X[:, -1, :3], sampler.beta1_)
    r2 = y[:, 1] - np.einsum("nd,nd->n", X[:, -1, 1:5], sampler.beta2_)
    np.testing.assert_allclose([r1.var(), r2.var()], [0.2 * 3, 0.2 * 4], rtol=0.03)
    np.testing.assert_allclose(sampler.beta1_.var(), 1.0, rtol=0.02)  # beta ~ N(0, I)


def test_multitask_online_batches_respect_the_supports():
    torch.manual_seed(0)
    sampler = MultiTaskLinearICLTaskSampler(n_context=12, noise_var=0.0)
    X, y = next(iter(OnlinePromptLoader(None, 64, sampler, steps_per_epoch=1)))
    assert X.shape == (64, 13, 7) and y.shape == (64, 2)
    assert torch.all(X[:, -1, 5:] == 0)
    X = X.double().numpy()
    coef = np.stack([np.linalg.lstsq(p[:-1, :5], p[:-1, 5:], rcond=None)[0] for p in X])
    assert np.abs(coef[:, 3:, 0]).max() < 1e-4 and np.abs(coef[:, 0, 1]).max() < 1e-4
    assert np.abs(coef[:, :3, 0]).max() > 0.1 and np.abs(coef[:, 1:, 1]).max() > 0.1


def test_multi_output_module_matches_reference_per_output():
    X, _ = MultiTaskLinearICLTaskSampler(n_context=9, random_state=2).sample(30)
    torch.manual_seed(0)
    module = MultiHeadAttentionICLModule(7, 3, n_outputs=2).double()
    out = module_predict(module, X)
    assert out.shape == (30, 2)
    KQ, OV = module.effective_weights()
    assert KQ.shape == (3, 7, 7) and OV.shape == (3, 2, 7)
    ref = np.zeros((30, 2))
    for h in range(3):
        s = np.einsum("nli,ij,nj->nl", X[:, :-1], KQ[h], X[:, -1])
        a = np.exp(s - s.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        ref += np.einsum("nl,nlj,kj->nk", a, X[:, :-1], OV[h])
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)
    # a one-output module keeps its (batch,) output and (H, D) OV
    assert MultiHeadAttentionICLModule(7, 3)(torch.zeros(2, 4, 7)).shape == (2,)


def test_multitask_training_beats_zero_on_both_outputs():
    sampler = MultiTaskLinearICLTaskSampler(n_context=20)
    model = MultiHeadSoftmaxICLRegressor(
        n_heads=2,
        max_iter=100,
        steps_per_epoch=50,
        batch_size=64,
        learning_rate=1e-2,
        sampler=sampler,
        random_state=0,
    ).fit()
    X, y = MultiTaskLinearICLTaskSampler(n_context=20, random_state=5).sample(2000)
    pred = model.predict(X)
    assert pred.shape == (2000, 2) and model.n_outputs_ == 2 and model.n_features_in_ == 7
    mse = ((pred - y) ** 2).mean(axis=0)
    zero = (y**2).mean(axis=0)  # ~ (3.3, 4.4)
    assert np.all(mse < 0.8 * zero), (mse, zero)
    assert model.icl_mse(X, y) == pytest.approx(mse.mean())
    p = model.attention_patterns()
    assert p["OV_"].shape == (2, 2, 7) and p["mu"].shape == (2, 2)
    for key in ("kq_allocation", "ov_allocation"):
        assert p[key].shape == (2,) and np.all(np.abs(p[key]) <= 1)
    assert model.mu_.shape == (2, 2) and model.omega_.shape == (2,)
    # offline: a 2-D y trains a two-output model on the given prompts
    offline = MultiHeadSoftmaxICLRegressor(**TINY).fit(X[:40], y[:40])
    assert offline.n_outputs_ == 2 and offline.predict(X[:5]).shape == (5, 2)
    assert set(offline.attention_patterns()) == {"KQ_", "OV_", "omega", "mu"}


def test_multitask_pattern_metrics_allocation():
    KQ = np.zeros((3, 7, 7))
    OV = np.zeros((3, 2, 7))
    KQ[0, 0, 0], OV[0, 0, 5] = 0.3, 2.0  # task 1 only: x[0], y1 -> out1
    KQ[1, 3:5, 3:5], OV[1, 1, 6] = 0.3 * np.eye(2), -2.0  # task 2 only
    KQ[2, :5, :5], OV[2, 0, 5], OV[2, 1, 6] = 0.3 * np.eye(5), 1.0, 1.0  # superposed
    m = multitask_pattern_metrics(KQ, OV, n_features=5)
    np.testing.assert_allclose(m["kq_allocation"], [1.0, -1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(m["ov_allocation"], [1.0, -1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(m["mu"], [[2.0, 0.0], [0.0, -2.0], [1.0, 1.0]])
    # no exclusive coordinate for task 1 (dx2 = d): the KQ measure is undefined, not 0
    undefined = multitask_pattern_metrics(KQ, OV, n_features=5, task_dims=(3, 5))
    assert np.isnan(undefined["kq_allocation"]).all()


def test_multitask_bad_input():
    for dims in ((3,), (0, 4), (3, 6), (3.0, 4), (True, 4), "34"):
        with pytest.raises(ValueError, match="task_dims"):
            MultiTaskLinearICLTaskSampler(task_dims=dims).sample(2)
    with pytest.raises(ValueError, match="n_context"):
        MultiTaskLinearICLTaskSampler(n_context=0).sample(2)
    with pytest.raises(ValueError, match="beta_var"):
        MultiTaskLinearICLTaskSampler(beta_var=0.0).sample(2)
    with pytest.raises(ValueError, match="n_outputs"):
        MultiHeadAttentionICLModule(3, 2, n_outputs=3)
    with pytest.raises(ValueError, match="n_outputs=2"):
        MultiHeadAttentionICLModule(7, 2, n_outputs=2).set_effective(0.1, 1.0)
    with pytest.raises(ValueError, match=r"shape \(n_heads, 7, 7\)"):
        multitask_pattern_metrics(np.zeros((2, 6, 6)), np.zeros((2, 6)), n_features=5)
    X, y = MultiTaskLinearICLTaskSampler(n_context=5, random_state=0).sample(10)
    model = MultiHeadSoftmaxICLRegressor(**TINY)
    with pytest.raises(ValueError, match="2-D with >= 2 columns"):
        model.fit(X, y[:, :1])
    with pytest.raises(ValueError, match="n_features \\+ n_outputs >= 3"):
        model.fit(X[:, :, 5:], y)
    with pytest.raises(ValueError, match=r"y must have shape \(10,\) or \(10, n_outputs\)"):
        model.fit(X, y[:4])
    bad = X.copy()
    bad[2, -1, 5] = 1.0  # y1 slot of the query
    with pytest.raises(ValueError, match="last 2 label slots; prompt 2"):
        model.fit(bad, y)
    model.fit(X, y)
    with pytest.raises(ValueError, match="last 2 label slots"):
        model.predict(bad)
    with pytest.raises(ValueError, match="fitted on width 7"):
        model.predict(prompts(3, d=4, L=5)[0])
    with pytest.raises(ValueError, match="y must have shape"):
        model.icl_mse(X, y[:, 0])


def test_routed_keyword_arguments_reach_the_net():
    X, y = prompts(20, d=3, L=5)
    model = MultiHeadSoftmaxICLRegressor(**TINY, optimizer__weight_decay=0.1)
    assert clone(model).get_params()["optimizer__weight_decay"] == 0.1
    model.fit(X, y)
    assert model.net_.optimizer_.param_groups[0]["weight_decay"] == 0.1
    # __init__ only stores; fit refuses a keyword that is neither a parameter nor routed
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['n_steps'\]"):
        MultiHeadSoftmaxICLRegressor(**TINY, n_steps=10).fit(X, y)


def test_lr_is_renamed_learning_rate():
    X, y = prompts(64, d=2, L=6)
    reference = MultiHeadSoftmaxICLRegressor(**TINY, learning_rate=1e-2).fit(X, y)
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        renamed = MultiHeadSoftmaxICLRegressor(**TINY, lr=1e-2).fit(X, y)
    np.testing.assert_array_equal(renamed.predict(X), reference.predict(X))
