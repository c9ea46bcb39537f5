"""Renamed alignment names: the old spelling warns (FutureWarning) and gives the same result."""

import numpy as np
import pytest

from sklearn_icml.alignment import (
    TabularPreferencePolicy,
    closed_form_policy,
    make_preference_pairs,
    population_pairs,
)

R, REF = [1.0, 0.5, 0.0, -0.5], [0.1, 0.2, 0.3, 0.4]
P = [[0.5, 0.7], [0.3, 0.5]]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 50 steps
def test_lr_is_the_deprecated_name_of_learning_rate():
    pairs, labels, weight = population_pairs(R)
    fit = {"sample_weight": weight, "reference_policy": REF}
    common = {"beta": 1.0, "solver": "gd", "max_iter": 50, "tol": 0.0}
    new = TabularPreferencePolicy(learning_rate=0.25, **common).fit(pairs, labels, **fit)
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        old = TabularPreferencePolicy(lr=0.25, **common).fit(pairs, labels, **fit)
    np.testing.assert_array_equal(old.policy_, new.policy_)


def test_benchmark_policy_is_the_deprecated_name_of_closed_form_policy():
    from sklearn_icml.alignment import benchmark_policy

    with pytest.warns(FutureWarning, match="renamed `closed_form_policy`"):
        old = benchmark_policy(R, nu=REF, beta=1.0)
    np.testing.assert_array_equal(old, closed_form_policy(R, nu=REF, beta=1.0))
    import sklearn_icml.alignment

    assert "benchmark_policy" not in sklearn_icml.alignment.__all__


@pytest.mark.parametrize("func", [closed_form_policy, population_pairs])
def test_pref_matrix_is_keyword_only(func):
    with pytest.warns(FutureWarning, match="pref_matrix"):
        old = func(None, P)
    new = func(pref_matrix=P)
    for a, b in zip(np.atleast_1d(old) if func is closed_form_policy else old,
                    np.atleast_1d(new) if func is closed_form_policy else new):
        np.testing.assert_array_equal(a, b)


def test_make_preference_pairs_pref_matrix_is_keyword_only():
    with pytest.warns(FutureWarning, match="pref_matrix"):
        old = make_preference_pairs(None, P, n_pairs=5, random_state=0)
    new = make_preference_pairs(pref_matrix=P, n_pairs=5, random_state=0)
    for a, b in zip(old, new):
        np.testing.assert_array_equal(a, b)


def test_loss_scales_and_reference_log_probs_are_keyword_only():
    torch = pytest.importorskip("torch")
    from sklearn_icml.alignment import PREFERENCE_LOSSES, preference_margin
    from sklearn_icml.alignment._loss_math import LOSS_PARAMETER

    h = torch.tensor([-1.0, 0.0, 2.0])
    for name, loss in PREFERENCE_LOSSES.items():
        scale = LOSS_PARAMETER[name]
        with pytest.warns(FutureWarning, match=scale):
            old = loss(h, 0.5)
        assert torch.equal(old, loss(h, **{scale: 0.5}))
    a, b, c, d = (torch.tensor([v]) for v in (-1.0, -3.0, -2.0, -2.5))
    with pytest.warns(FutureWarning, match="ref_logp_w, ref_logp_l"):
        old = preference_margin(a, b, c, d)
    assert torch.equal(old, preference_margin(a, b, ref_logp_w=c, ref_logp_l=d))


def test_lm_trainer_lr_is_the_deprecated_name_of_learning_rate():
    pytest.importorskip("skorch")
    from sklearn_icml.alignment import PreferenceLMTrainer

    data = ([[0], [1]] * 2, [[2, 3], [3, 2]] * 2, [[3, 3], [2, 2]] * 2)
    common = {"max_epochs": 2, "batch_size": 4, "random_state": 0, "n_jobs": 1}
    new = PreferenceLMTrainer(learning_rate=1e-2, **common).fit(*data)
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        old = PreferenceLMTrainer(lr=1e-2, **common).fit(*data)
    np.testing.assert_array_equal(
        old.sequence_logprob([[0]], [[2, 3]]), new.sequence_logprob([[0]], [[2, 3]])
    )
