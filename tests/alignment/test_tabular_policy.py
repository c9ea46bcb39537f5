"""TabularPreferencePolicy, closed_form_policy and the pair helpers."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from scipy.special import expit  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning, NotFittedError  # noqa: E402

from sklearn_icml.alignment import (  # noqa: E402
    PREFERENCE_LOSSES,
    TabularPreferencePolicy,
    closed_form_policy,
    make_preference_pairs,
    population_pairs,
    preference_margin,
)
from sklearn_icml.alignment._loss_math import LOSS_PARAMETER  # noqa: E402
from sklearn_icml.alignment._tabular_policy import _Objective  # noqa: E402

R = np.array([1.0, 0.5, 0.0, -0.5])
REF = np.array([0.1, 0.2, 0.3, 0.4])
MU = np.array([0.4, 0.3, 0.2, 0.1])
BEST = 0


def _kl(p, q):
    return float(np.sum(p * np.log(p / q)))


def _deterministic(r):
    P = (np.subtract.outer(r, r) > 0).astype(float)
    np.fill_diagonal(P, 0.5)
    return P


def _fit_population(loss, *, rewards=R, pref_matrix=None, sampling=None, normalizer="reference",
                    nu=REF, **params):
    pairs, labels, weight = population_pairs(
        None if pref_matrix is not None else rewards, pref_matrix=pref_matrix, sampling=sampling
    )
    kwargs = {"reference_policy": nu} if normalizer == "reference" else {}
    if normalizer == "data":
        kwargs = {"data_policy": nu}
    pol = TabularPreferencePolicy(loss=loss, normalizer=normalizer, **params)
    return pol.fit(pairs, labels, sample_weight=weight, **kwargs)


# the paper's tabular examples (the benchmark's E1-E4)


@pytest.mark.parametrize("solver", ["lbfgs", "gd"])
def test_E1_logistic_reference(solver):
    pol = _fit_population("logistic", beta=1.0, solver=solver, learning_rate=0.25)
    target = [0.2376, 0.2882, 0.2622, 0.2120]
    np.testing.assert_allclose(pol.policy_[0], target, atol=1e-3)
    assert pol.expected_reward(R)[0] == pytest.approx(0.2756, abs=1e-3)
    assert pol.kl_to(REF)[0] == pytest.approx(0.141, abs=1e-3)
    np.testing.assert_allclose(pol.policy_[0], closed_form_policy(R, nu=REF, beta=1.0), atol=1e-6)


def test_E1_sampled_pairs():
    pairs, labels = make_preference_pairs(R, n_pairs=200_000, random_state=0)
    pol = TabularPreferencePolicy(loss="logistic", beta=1.0).fit(
        pairs, labels, reference_policy=REF
    )
    np.testing.assert_allclose(pol.policy_[0], [0.2376, 0.2882, 0.2622, 0.2120], atol=0.01)


def test_E2_squared_depends_on_sampling_logistic_does_not():
    uni = _fit_population("squared", tau=1.0)
    on_ref = _fit_population("squared", tau=1.0, sampling=REF)
    np.testing.assert_allclose(uni.policy_[0], [0.1243, 0.2227, 0.2976, 0.3554], atol=1e-3)
    np.testing.assert_allclose(on_ref.policy_[0], [0.1239, 0.2233, 0.2985, 0.3543], atol=1e-3)
    assert uni.expected_reward(R)[0] == pytest.approx(0.0579, abs=1e-3)
    np.testing.assert_allclose(
        on_ref.policy_[0], closed_form_policy(R, nu=REF, loss="squared", tau=1.0, sampling=REF),
        atol=1e-6,
    )
    # the two squared-loss solutions differ, the logistic ones do not
    assert np.abs(uni.policy_ - on_ref.policy_).max() > 5e-4
    log_uni = _fit_population("logistic", beta=1.0)
    log_ref = _fit_population("logistic", beta=1.0, sampling=REF)
    np.testing.assert_allclose(log_uni.policy_, log_ref.policy_, atol=1e-6)


def test_E3_squared_deterministic_labels_converges():
    pol = _fit_population("squared", tau=1.0, pref_matrix=_deterministic(R))
    np.testing.assert_allclose(pol.policy_[0], [0.1596, 0.2486, 0.2904, 0.3015], atol=1e-3)
    assert pol.expected_reward(R)[0] == pytest.approx(0.1331, abs=1e-3)
    assert pol.kl_to(REF)[0] == pytest.approx(0.034, abs=1e-3)
    assert pol.converged_
    np.testing.assert_allclose(
        pol.policy_[0], closed_form_policy(pref_matrix=_deterministic(R), nu=REF, loss="squared",
                                         tau=1.0), atol=1e-6,
    )


def _gd_deterministic(n_steps):
    # step 0.25 on the mean loss = step 0.5 on the paper's half-weighted population sum
    with pytest.warns(ConvergenceWarning, match="no finite minimiser"):
        return _fit_population(
            "logistic", beta=1.0, pref_matrix=_deterministic(R), solver="gd", learning_rate=0.25,
            max_iter=n_steps, tol=0.0,
        )


@pytest.mark.parametrize(("n_steps", "pi_best", "kl"), [(1000, 0.92, 1.93), (10_000, 0.99, 2.24)])
def test_E3_logistic_deterministic_labels_does_not_converge(n_steps, pi_best, kl):
    pol = _gd_deterministic(n_steps)
    assert pol.policy_[0, BEST] == pytest.approx(pi_best, abs=0.02)
    assert pol.kl_to(REF)[0] == pytest.approx(kl, abs=0.05)
    assert not pol.converged_


def test_E3_logistic_after_1e5_steps():
    pol = _gd_deterministic(100_000)
    assert pol.policy_[0, BEST] == pytest.approx(0.999, abs=0.02)
    assert pol.kl_to(REF)[0] == pytest.approx(2.29, abs=0.05)


def test_E3_largest_margin_grows_monotonically():
    largest = [np.abs(_gd_deterministic(n).margins_).max() for n in (250, 500, 1000, 2000, 4000)]
    assert np.all(np.diff(largest) > 0)
    # about logarithmic: each doubling of the steps adds a similar amount, not a multiple
    steps = np.diff(largest)
    assert steps.max() < 2 * steps.min()


@pytest.mark.parametrize("beta", [0.1, 10.0])
def test_E3_beta_does_not_stop_the_collapse(beta):
    # whatever beta, the policy keeps moving towards the best response, past the
    # Bradley-Terry benchmark of the same beta, while IPO's stays put
    P = _deterministic(R)
    pis = []
    for n in (1000, 8000):
        with pytest.warns(ConvergenceWarning):
            pol = _fit_population("logistic", beta=beta, pref_matrix=P, solver="gd",
                                  learning_rate=0.25, max_iter=n, tol=0.0)
        pis.append(pol.policy_[0, BEST])
    assert pis[1] > pis[0] + 0.02
    assert pis[1] > closed_form_policy(R, nu=REF, beta=beta)[BEST]
    sq = [_fit_population("squared", tau=1.0, pref_matrix=P, solver="gd", learning_rate=0.25,
                          max_iter=n, tol=0.0).policy_[0, BEST] for n in (1000, 8000)]
    assert sq[1] == pytest.approx(sq[0], abs=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("loss", sorted(PREFERENCE_LOSSES))
def test_numba_kernel_matches_numpy_reference(loss, monkeypatch):
    import sklearn_icml.alignment._tabular_policy as module

    rng = np.random.default_rng(1)
    pairs = np.column_stack([rng.integers(0, 2, 60), rng.integers(0, 4, 60),
                             rng.integers(0, 4, 60)])
    labels = np.where(pairs[:, 1] == pairs[:, 2], 0.5, rng.random(60))
    ref = rng.dirichlet(np.ones(4), size=2)
    params = {"loss": loss, "beta": 0.5, "tau": 0.5, "solver": "gd", "learning_rate": 0.05,
              "max_iter": 200, "tol": 0.0, "kl_coef": 0.2}
    fast = TabularPreferencePolicy(**params).fit(pairs, labels, reference_policy=ref)
    monkeypatch.setattr(module, "_USE_KERNEL", False)
    slow = TabularPreferencePolicy(**params).fit(pairs, labels, reference_policy=ref)
    np.testing.assert_allclose(fast.logits_, slow.logits_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fast.loss_curve_, slow.loss_curve_, rtol=1e-9, atol=1e-12)


def test_E4_normaliser_choice():
    targets = {
        "reference": (REF, [0.2376, 0.2882, 0.2622, 0.2120], 0.2756, 0.141),
        "data": (MU, [0.5901, 0.2684, 0.1085, 0.0329], 0.708, 0.934),
        "none": (None, [0.4551, 0.2760, 0.1674, 0.1015], 0.542, 0.542),
    }
    for normalizer, (nu, pi, value, kl) in targets.items():
        pol = _fit_population("logistic", beta=1.0, sampling=MU, normalizer=normalizer, nu=nu)
        np.testing.assert_allclose(pol.policy_[0], pi, atol=1e-3)
        assert pol.expected_reward(R)[0] == pytest.approx(value, abs=1e-3)
        assert pol.kl_to(REF)[0] == pytest.approx(kl, abs=1e-3)
        np.testing.assert_allclose(
            pol.policy_[0], closed_form_policy(R, nu=nu, beta=1.0, sampling=MU), atol=1e-6
        )


def test_data_policy_estimated_from_counts():
    pairs, labels = make_preference_pairs(R, n_pairs=50_000, sampling=MU, random_state=1)
    pol = TabularPreferencePolicy(
        loss="logistic", beta=1.0, normalizer="data", estimate_data_policy=True
    ).fit(pairs, labels)
    np.testing.assert_allclose(pol.data_policy_[0], MU, atol=0.01)
    np.testing.assert_allclose(pol.policy_[0], [0.5901, 0.2684, 0.1085, 0.0329], atol=0.02)


# other closed forms


@pytest.mark.parametrize(
    ("loss", "params"),
    [("exponential", {"beta": 0.8}), ("savage", {"beta": 1.5}),
     ("truncated_quadratic", {"beta": 0.7}), ("squared", {"tau": 0.3})],
)
def test_benchmark_matches_fit_for_other_losses(loss, params):
    rewards = np.array([[0.3, -0.2, 0.1, 0.0], [1.0, 0.0, -1.0, 0.5]])
    nu = np.array([[0.25, 0.25, 0.25, 0.25], [0.1, 0.6, 0.2, 0.1]])
    m = np.array([0.3, 0.3, 0.2, 0.2])
    pairs, labels, weight = population_pairs(rewards, sampling=m)
    pol = TabularPreferencePolicy(loss=loss, **params).fit(
        pairs, labels, sample_weight=weight, reference_policy=nu
    )
    target = closed_form_policy(rewards, nu=nu, loss=loss, sampling=m, **params)
    assert target.shape == (2, 4)
    np.testing.assert_allclose(target.sum(axis=1), 1.0)
    np.testing.assert_allclose(pol.policy_, target, atol=1e-5)


def test_benchmark_bradley_terry_pref_matrix_equals_rewards():
    P = expit(np.subtract.outer(R, R))
    for loss in ("logistic", "squared", "savage"):
        np.testing.assert_allclose(
            closed_form_policy(pref_matrix=P, nu=REF, loss=loss, beta=0.5, tau=0.5),
            closed_form_policy(R, nu=REF, loss=loss, beta=0.5, tau=0.5), atol=1e-12,
        )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_hinge_fits_by_gradient_descent_without_closed_form():
    with pytest.raises(ValueError, match="no closed-form"):
        closed_form_policy(R, loss="hinge")
    pol = _fit_population("hinge", delta=1.0, normalizer="none", solver="gd", learning_rate=0.5,
                          max_iter=2000, tol=0.0)
    # the hinge loss ranks the responses by reward
    assert np.all(np.diff(pol.policy_[0]) < 0)


# structural properties


def test_objective_gradient_matches_torch_autograd():
    rng = np.random.default_rng(0)
    C, K, d = 2, 5, 3
    ctx = rng.integers(0, C, 40)
    a, b = rng.integers(0, K, 40), rng.integers(0, K, 40)
    p = np.where(a == b, 0.5, rng.random(40))
    w = rng.random(40)
    w /= w.sum()
    log_nu = np.log(rng.dirichlet(np.ones(K), size=C))
    log_ref = np.log(rng.dirichlet(np.ones(K), size=C))
    phi = rng.normal(size=(C, K, d))
    for loss in PREFERENCE_LOSSES:
        for features in (None, phi):
            obj = _Objective(loss=loss, scale=0.7, C=C, K=K, log_nu=log_nu, kl_coef=0.3,
                             log_ref=log_ref, phi=features)
            x = rng.normal(size=C * K if features is None else d)
            f, g = obj.value_and_grad(x, obj.bind(ctx, a, b, p, w))
            xt = torch.tensor(x, requires_grad=True)
            z = xt.reshape(C, K) if features is None else torch.tensor(features) @ xt
            lnu = torch.tensor(log_nu)
            h = preference_margin(
                z[ctx, a], z[ctx, b], ref_logp_w=lnu[ctx, a], ref_logp_l=lnu[ctx, b])
            scale = {LOSS_PARAMETER[loss]: 0.7}
            val = (torch.tensor(w) * PREFERENCE_LOSSES[loss](h, **scale, p=torch.tensor(p))).sum()
            lp = torch.log_softmax(z, 1)
            lref = torch.tensor(log_ref)
            reg = (lp[ctx, a] - lref[ctx, a]) ** 2 + (lp[ctx, b] - lref[ctx, b]) ** 2
            val = val + 0.3 * (torch.tensor(w) * reg).sum() / 4
            val.backward()
            assert f == pytest.approx(val.item(), rel=1e-10)
            np.testing.assert_allclose(g, xt.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("solver", ["lbfgs", "gd"])
def test_uncovered_responses_keep_initial_logits_exactly(solver):
    pairs, labels = make_preference_pairs(
        [[1.0, 0.2, -0.3, 0.0, 0.5]] * 2, n_pairs=300, sampling=[0.5, 0.3, 0.2, 0.0, 0.0],
        random_state=0,
    )
    pol = TabularPreferencePolicy(loss="logistic", beta=0.5, solver=solver, max_iter=300,
                                  tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pol.fit(pairs, labels, reference_policy=[0.1, 0.2, 0.3, 0.2, 0.2])
    assert np.all(pol.logits_[:, 3:] == 0.0)
    assert np.any(pol.logits_[:, :3] != 0.0)


def test_kl_regulariser_towards_initial_policy_keeps_policy_there():
    uniform = np.full(4, 0.25)
    pairs, labels, weight = population_pairs(R)
    pol = TabularPreferencePolicy(loss="logistic", beta=1.0, kl_coef=1e3).fit(
        pairs, labels, sample_weight=weight, reference_policy=uniform
    )
    assert pol.kl_to(uniform)[0] < 1e-3
    free = TabularPreferencePolicy(loss="logistic", beta=1.0).fit(
        pairs, labels, sample_weight=weight, reference_policy=uniform
    )
    assert free.kl_to(uniform)[0] > 0.05


def test_swapped_pairs_with_flipped_labels_give_the_same_fit():
    pairs, labels, weight = population_pairs(R)
    swapped = pairs[:, [0, 2, 1]]
    a = TabularPreferencePolicy(loss="squared", tau=0.5).fit(
        pairs, labels, sample_weight=weight, reference_policy=REF)
    b = TabularPreferencePolicy(loss="squared", tau=0.5).fit(
        swapped, 1 - labels, sample_weight=weight, reference_policy=REF)
    np.testing.assert_allclose(a.policy_, b.policy_, atol=1e-9)
    assert a.score(pairs, labels, weight) == pytest.approx(b.score(swapped, 1 - labels, weight))


def test_log_linear_with_one_hot_features_equals_tabular():
    pairs, labels, weight = population_pairs(R)
    tab = TabularPreferencePolicy(loss="logistic", beta=1.0).fit(
        pairs, labels, sample_weight=weight, reference_policy=REF)
    lin = TabularPreferencePolicy(loss="logistic", beta=1.0, policy="log_linear").fit(
        pairs, labels, sample_weight=weight, reference_policy=REF, features=np.eye(4))
    np.testing.assert_allclose(lin.policy_, tab.policy_, atol=1e-6)
    assert lin.theta_.shape == (4,)


def test_minibatch_sgd_is_reproducible_and_close():
    pairs, labels, weight = population_pairs(R)
    params = {"loss": "logistic", "beta": 1.0, "solver": "gd", "learning_rate": 0.2,
              "max_iter": 1500, "batch_size": 16, "random_state": 0}
    a = TabularPreferencePolicy(**params).fit(pairs, labels, sample_weight=weight,
                                              reference_policy=REF)
    b = TabularPreferencePolicy(**params).fit(pairs, labels, sample_weight=weight,
                                              reference_policy=REF)
    np.testing.assert_array_equal(a.policy_, b.policy_)
    np.testing.assert_allclose(a.policy_[0], closed_form_policy(R, nu=REF, beta=1.0), atol=0.03)


def test_fit_outputs_and_manners():
    pairs, labels, weight = population_pairs(R)
    frame = pd.DataFrame(pairs, columns=["context", "first", "second"])
    pol = TabularPreferencePolicy(loss="logistic", beta=1.0)
    before = pairs.copy()
    assert pol.fit(frame, labels, sample_weight=weight, reference_policy=REF) is pol
    np.testing.assert_array_equal(pairs, before)
    np.testing.assert_allclose(pol.policy_.sum(axis=1), 1.0)
    assert pol.margins_.shape == (16,)
    assert pol.loss_curve_.shape == (pol.n_iter_,)
    assert np.all(np.diff(pol.loss_curve_) <= 1e-12)
    assert pol.predict_proba([0, 0]).shape == (2, 4)
    assert pol.score(pairs, labels, weight) <= 0
    four = np.column_stack([pairs, labels])
    other = TabularPreferencePolicy(loss="logistic", beta=1.0).fit(
        four, sample_weight=weight, reference_policy=REF)
    np.testing.assert_allclose(other.policy_, pol.policy_)
    cloned = clone(pol)
    assert cloned.get_params() == pol.get_params() and not hasattr(cloned, "policy_")
    assert "beta=1.0" in repr(pol)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(pol)).policy_, pol.policy_)


def test_not_fitted():
    with pytest.raises(NotFittedError):
        TabularPreferencePolicy().predict_proba()


# bad input


def _fit(pairs, labels=None, **kwargs):
    kwargs.setdefault("reference_policy", REF)
    params = kwargs.pop("params", {})
    return TabularPreferencePolicy(**params).fit(np.asarray(pairs), labels, **kwargs)


def test_winner_equals_loser_needs_tie_label():
    with pytest.raises(ValueError, match="with itself"):
        _fit([[0, 1, 1], [0, 0, 2]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _fit([[0, 1, 1], [0, 0, 2], [0, 2, 0]], [0.5, 0.7, 0.6])


@pytest.mark.parametrize(
    ("pairs", "match"),
    [([[0, 4, 1]], "response index 4"), ([[2, 0, 1]], "context index 2"),
     ([[0, -1, 1]], ">= 0"), ([[0, 0.5, 1]], "integer")],
)
def test_indices_out_of_range(pairs, match):
    with pytest.raises(ValueError, match=match):
        _fit(pairs, reference_policy=np.tile(REF, (2, 1)))


@pytest.mark.parametrize("bad", [-0.1, 1.2, np.nan])
def test_soft_labels_outside_unit_interval(bad):
    with pytest.raises(ValueError, match="labels"):
        _fit([[0, 0, 1], [0, 1, 2]], [0.5, bad])


@pytest.mark.parametrize(
    ("policy", "match"),
    [([0.5, 0.6, -0.1, 0.0], "non-negative"), ([0.3, 0.3, 0.3, 0.3], "sum to 1"),
     ([0.5, 0.5, 0.0, 0.0], "zero on response 2"), ([0.5, 0.5], "responses")],
)
def test_bad_reference_and_data_policies(policy, match):
    pairs = [[0, 0, 2], [0, 1, 3]]
    with pytest.raises(ValueError, match=match):
        _fit(pairs, reference_policy=policy, data_policy=REF)
    with pytest.raises(ValueError, match=match):
        _fit(pairs, reference_policy=REF, data_policy=policy, params={"normalizer": "data"})


@pytest.mark.parametrize(
    "params",
    [{"beta": 0.0}, {"beta": -1.0}, {"tau": 0.0}, {"tau": -2.0}, {"loss": "dpo"},
     {"normalizer": "sft"}, {"solver": "adam"}, {"max_iter": 0}],
)
def test_bad_parameters(params):
    with pytest.raises(ValueError, match=next(iter(params))):
        _fit([[0, 0, 1]], params=params)


def test_bad_benchmark_parameters():
    with pytest.raises(ValueError, match="beta"):
        closed_form_policy(R, beta=0.0)
    with pytest.raises(ValueError, match="tau"):
        closed_form_policy(R, loss="squared", tau=-1.0)
    with pytest.raises(ValueError, match="loss"):
        closed_form_policy(R, loss="dpo")
    with pytest.raises(ValueError, match="exactly one"):
        closed_form_policy()
    with pytest.raises(ValueError, match="no finite minimiser"):
        closed_form_policy(pref_matrix=_deterministic(R), nu=REF)
    with pytest.raises(ValueError, match="Bradley-Terry"):
        closed_form_policy(pref_matrix=[[0.5, 0.9, 0.1], [0.1, 0.5, 0.9], [0.9, 0.1, 0.5]])
    with pytest.raises(ValueError, match="P\\[a, b\\] \\+ P\\[b, a\\]"):
        closed_form_policy(pref_matrix=[[0.5, 0.9], [0.9, 0.5]])
    with pytest.raises(ValueError, match="positive"):
        closed_form_policy(R, nu=[0.5, 0.5, 0.0, 0.0])
    with pytest.raises(ValueError, match="sum to 1"):
        closed_form_policy(R, sampling=[0.5, 0.5, 0.5, 0.5])


def test_data_normaliser_needs_a_data_policy():
    with pytest.raises(ValueError, match="data_policy"):
        _fit([[0, 0, 1]], params={"normalizer": "data"})
    with pytest.raises(ValueError, match="reference_policy=None"):
        TabularPreferencePolicy().fit([[0, 0, 1]])


def test_convergence_warning_only_when_margins_diverge():
    pairs, labels, weight = population_pairs(pref_matrix=_deterministic(R))
    with pytest.warns(ConvergenceWarning, match="margins keep growing"):
        TabularPreferencePolicy(loss="logistic", beta=1.0).fit(
            pairs, labels, sample_weight=weight, reference_policy=REF)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        for params in ({"loss": "squared"}, {"loss": "logistic", "kl_coef": 0.1}):
            TabularPreferencePolicy(**params).fit(
                pairs, labels, sample_weight=weight, reference_policy=REF)
        # soft (Bradley-Terry) labels: a finite minimiser exists
        pairs, labels, weight = population_pairs(R)
        TabularPreferencePolicy(loss="logistic").fit(
            pairs, labels, sample_weight=weight, reference_policy=REF)


def test_divergence_raises_instead_of_nan():
    pairs, labels, weight = population_pairs(R)
    for batch_size in (None, 8):
        pol = TabularPreferencePolicy(loss="squared", tau=1.0, solver="gd", learning_rate=100.0,
                                      max_iter=2000, batch_size=batch_size, random_state=0)
        with pytest.raises(FloatingPointError, match="non-finite"), np.errstate(all="ignore"):
            pol.fit(pairs, labels, sample_weight=weight, reference_policy=REF)
