"""LwIClassifier: training, heads, distillation, prediction, bad input."""

import copy
import math

import numpy as np
import pytest

from sklearn_icml.continual import LwIClassifier
from sklearn_icml.continual._lwi import kd_loss
from sklearn_icml.datasets import load_split_digits

torch = pytest.importorskip("torch")

FAST = {
    "hidden_layer_sizes": (24, 16), "learning_rate": 0.05, "max_epochs": 3, "random_state": 0
}


@pytest.fixture(scope="module")
def digits():
    X_tr, X_te, y_tr, y_te, t_tr, t_te = load_split_digits(n_tasks=5)
    keep_tr, keep_te = t_tr < 3, t_te < 3  # 3 tasks: {0,1}, {2,3}, {4,5}
    return X_tr[keep_tr], X_te[keep_te], y_tr[keep_tr], y_te[keep_te], t_tr[keep_tr], \
        t_te[keep_te]


@pytest.fixture(scope="module")
def lwi_two_tasks(digits):
    """A model after task 0, and the same estimator after task 1 (LwI with fusion)."""
    X, _, y, _, t, _ = digits
    clf = LwIClassifier(**FAST).partial_fit(X[t == 0], y[t == 0])
    after_0 = copy.deepcopy(clf)
    clf.partial_fit(X[t == 1], y[t == 1], task_id=1)
    return after_0, clf


def test_kd_value_for_equal_logits():
    z = torch.tensor([[0.0, math.log(4.0)]])
    assert float(kd_loss(z, z)) == pytest.approx(0.6365, abs=1e-4)
    # equal teacher and student: the entropy of softmax(z)^0.5, renormalised
    z = torch.randn(5, 4, generator=torch.Generator().manual_seed(0))
    q = torch.softmax(z, 1).sqrt()
    q = q / q.sum(1, keepdim=True)
    entropy = float(-(q * q.log()).sum(1).mean())
    assert float(kd_loss(z, z)) == pytest.approx(entropy, abs=1e-4)


def test_kd_exponent_one_is_cross_entropy_of_softmaxes():
    gen = torch.Generator().manual_seed(0)
    s, t = torch.randn(4, 3, generator=gen), torch.randn(4, 3, generator=gen)
    expected = float(-(torch.softmax(t, 1) * torch.log_softmax(s, 1)).sum(1).mean())
    assert float(kd_loss(s, t, exponent=1.0)) == pytest.approx(expected, abs=1e-4)


def test_old_heads_frozen_and_taken_from_old_model(lwi_two_tasks):
    after_0, clf = lwi_two_tasks
    old_head = after_0.model_.heads[0]
    new_head = clf.model_.heads[0]
    assert torch.equal(old_head.weight, new_head.weight)
    assert torch.equal(old_head.bias, new_head.bias)
    # never received a gradient while task 1 was trained (the backbone and head 1 did)
    assert new_head.weight.grad is None and new_head.bias.grad is None
    assert clf.model_.backbone[0].weight.grad is not None
    assert clf.model_.heads[1].weight.grad is not None
    # the backbone did change (trained, then fused)
    assert not torch.equal(after_0.model_.backbone[0].weight, clf.model_.backbone[0].weight)


def test_new_head_is_the_trained_one(lwi_two_tasks):
    _, clf = lwi_two_tasks
    # the pre-fusion teacher holds the trained network B; its new head is kept unchanged
    assert torch.equal(clf.teacher_.heads[1].weight, clf.model_.heads[1].weight)
    assert torch.equal(clf.teacher_.heads[1].bias, clf.model_.heads[1].bias)
    # and its backbone differs from the fused one
    assert not torch.equal(clf.teacher_.backbone[0].weight, clf.model_.backbone[0].weight)
    assert len(clf.permutations_) == 2 and clf.permutations_[0] == []
    assert [p.shape for p in clf.permutations_[1]] == [(24,), (16,)]


def test_post_fusion_teacher_is_the_fused_model(digits):
    X, _, y, _, t, _ = digits
    clf = LwIClassifier(teacher="post_fusion", **FAST).fit(X[t < 2], y[t < 2], task_ids=t[t < 2])
    for a, b in zip(clf.teacher_.parameters(), clf.model_.parameters(), strict=True):
        assert torch.equal(a, b)


def test_frozen_heads_under_lwf_and_finetune(digits):
    X, _, y, _, t, _ = digits
    for kwargs in ({"fusion": False}, {"fusion": False, "kd_lambda": 0.0}):
        clf = LwIClassifier(**FAST, **kwargs).partial_fit(X[t == 0], y[t == 0])
        head = clf.model_.heads[0].weight.detach().clone()
        clf.partial_fit(X[t == 1], y[t == 1])
        assert torch.equal(head, clf.model_.heads[0].weight)
        assert clf.permutations_ == [[], []]
        assert (clf.history_[1]["kd"] > 0) == (kwargs.get("kd_lambda", 1.0) > 0)


def test_task_agnostic_prediction_uses_all_heads_and_original_labels(digits):
    X, X_te, y, y_te, t, t_te = digits
    names = np.array(["zero", "one", "two", "three", "four", "five"])
    clf = LwIClassifier(**FAST).fit(X, names[y], task_ids=t)
    assert clf.n_tasks_ == 3
    np.testing.assert_array_equal(clf.classes_, np.concatenate(
        [np.sort(names[[0, 1]]), np.sort(names[[2, 3]]), np.sort(names[[4, 5]])]))
    logits = clf.decision_function(X_te)
    assert logits.shape == (X_te.shape[0], 6)
    pred = clf.predict(X_te)
    np.testing.assert_array_equal(pred, clf.classes_[np.argmax(logits, axis=1)])
    assert set(pred) <= set(names)
    proba = clf.predict_proba(X_te)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(1)], pred)
    # task-aware: argmax inside each task's head, labels of that task only
    pred_aw = clf.predict(X_te, task_id=t_te)
    for k in range(3):
        assert set(pred_aw[t_te == k]) <= set(clf.task_classes_[k])
        p = clf.predict_proba(X_te[t_te == k], task_id=k)
        np.testing.assert_array_equal(clf.task_classes_[k][p.argmax(1)], pred_aw[t_te == k])
    assert clf.score(X_te, names[y_te], task_id=t_te) > 0.9
    assert clf.score(X_te, names[y_te], task_id=t_te) >= clf.score(X_te, names[y_te])


def test_classes_keep_task_order(digits):
    X, _, y, _, t, _ = digits
    clf = LwIClassifier(**FAST).partial_fit(X[t == 2], y[t == 2]).partial_fit(
        X[t == 0], y[t == 0])
    np.testing.assert_array_equal(clf.classes_, [4, 5, 0, 1])


def test_reproducible_and_fit_restarts(digits):
    X, X_te, y, _, t, _ = digits
    a = LwIClassifier(**FAST).fit(X, y, task_ids=t)
    b = LwIClassifier(**FAST).fit(X, y, task_ids=t)
    np.testing.assert_array_equal(a.decision_function(X_te), b.decision_function(X_te))
    b.fit(X[t == 0], y[t == 0])
    assert b.n_tasks_ == 1 and len(b.history_) == 1


def test_inputs_not_modified(digits):
    X, _, y, _, t, _ = digits
    X0, y0 = X.copy(), y.copy()
    LwIClassifier(**FAST).fit(X, y, task_ids=t)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


# ---------------------------------------------------------------- bad input
def test_overlapping_classes_raise(lwi_two_tasks, digits):
    X, _, y, _, t, _ = digits
    clf = copy.deepcopy(lwi_two_tasks[1])
    with pytest.raises(ValueError, match="disjoint"):
        clf.partial_fit(X[t == 1], y[t == 1])


def test_single_class_task_raises(digits):
    X, _, y, _, t, _ = digits
    with pytest.raises(ValueError, match="1 class"):
        LwIClassifier(**FAST).partial_fit(X[y == 0], y[y == 0])


def test_feature_count_change_raises(lwi_two_tasks, digits):
    X, _, y, _, t, _ = digits
    clf = copy.deepcopy(lwi_two_tasks[1])
    with pytest.raises(ValueError, match="features"):
        clf.partial_fit(X[t == 2][:, :-1], y[t == 2])
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :10])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_inf_raise(digits, bad):
    X, _, y, _, t, _ = digits
    X = X[t == 0].copy()
    X[3, 5] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        LwIClassifier(**FAST).partial_fit(X, y[t == 0])


@pytest.mark.parametrize("task_id", [2, -1, 1.5, "0"])
def test_untrained_task_id_at_predict_raises(lwi_two_tasks, digits, task_id):
    X = digits[1][:5]
    clf = lwi_two_tasks[1]
    with pytest.raises(ValueError, match="task_id"):
        clf.predict(X, task_id=task_id)
    with pytest.raises(ValueError, match="task_id"):
        clf.predict_proba(X, task_id=task_id)


def test_wrong_task_id_at_partial_fit_raises(lwi_two_tasks, digits):
    X, _, y, _, t, _ = digits
    clf = copy.deepcopy(lwi_two_tasks[1])
    with pytest.raises(ValueError, match="task_id"):
        clf.partial_fit(X[t == 2], y[t == 2], task_id=0)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"step_sim": 1.2}, "step_sim"),
        ({"step_diff": -0.5}, "step_diff"),
        ({"n_diverse_layers": 3}, "n_diverse_layers"),
        ({"hidden_layer_sizes": (8, 0)}, "hidden_layer_sizes"),
        ({"solver": "greedy"}, "solver"),
        ({"teacher": "best"}, "teacher"),
        ({"conv_channels": (4, 4, 4, 4)}, "conv_channels"),
        ({"conv_channels": (4,), "image_shape": (7, 9)}, "image_shape"),
        ({"conv_channels": (4,), "n_diverse_layers": 4}, "n_diverse_layers"),
    ],
)
def test_bad_params_raise(digits, params, match):
    X, _, y, _, t, _ = digits
    with pytest.raises(ValueError, match=match):
        LwIClassifier(**{**FAST, **params}).partial_fit(X[t == 0], y[t == 0])


def test_task_ids_length_mismatch_raises(digits):
    X, _, y, _, t, _ = digits
    with pytest.raises(ValueError, match="task_ids"):
        LwIClassifier(**FAST).fit(X, y, task_ids=t[:-1])


def test_partial_fit_classes_argument(digits):
    X, _, y, _, t, _ = digits
    rows = t == 0
    clf = LwIClassifier(**FAST).partial_fit(X[rows], y[rows], classes=[0, 1, 9])
    np.testing.assert_array_equal(clf.classes_, [0, 1, 9])
    assert clf.model_.heads[0].out_features == 3
    with pytest.raises(ValueError, match="classes must contain"):
        LwIClassifier(**FAST).partial_fit(X[rows], y[rows], classes=[0])


def test_dataframe_fit_gives_no_warning(digits):
    pd = pytest.importorskip("pandas")
    X, _, y, _, t, _ = digits
    df = pd.DataFrame(X, columns=[f"pixel_{i}" for i in range(X.shape[1])])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = LwIClassifier(**FAST).fit(df, y, task_ids=t)
        clf.predict(df)
    np.testing.assert_array_equal(clf.feature_names_in_, df.columns)


def test_values_overflowing_float32_are_refused_at_validation(digits):
    X, _, y, _, t, _ = digits
    X = X[t == 0].copy()
    X[0, 0] = 1e300
    match = r"X has values too large for float32.*3.4e\+38.*magnitude 1e\+300"
    with pytest.raises(ValueError, match=match):
        LwIClassifier(**FAST).partial_fit(X, y[t == 0])


def test_conv_backbone_learns_and_fuses_every_layer(digits):
    X, X_te, y, y_te, t, t_te = digits
    clf = LwIClassifier(conv_channels=(4, 8), hidden_layer_sizes=(16,), learning_rate=0.05,
                        max_epochs=5, random_state=0).fit(X, y, task_ids=t)
    assert [len(p) for p in clf.permutations_] == [0, 3, 3]
    assert clf.model_.backbone[-2].in_features == 8 * 2 * 2
    assert clf.score(X_te, y_te, task_id=t_te) > 0.8
    # 8x8 digits: image_shape None and (8, 8) and (1, 8, 8) build the same network
    same = LwIClassifier(conv_channels=(4, 8), hidden_layer_sizes=(16,), learning_rate=0.05,
                         max_epochs=5, random_state=0, image_shape=(1, 8, 8))
    np.testing.assert_array_equal(same.fit(X, y, task_ids=t).predict(X_te), clf.predict(X_te))


def test_heads_without_bias(digits):
    X, _, y, _, t, _ = digits
    clf = LwIClassifier(**FAST, head_bias=False).fit(X, y, task_ids=t)
    assert all(head.bias is None for head in clf.model_.heads)


@pytest.mark.parametrize(
    "old, new, value",
    [
        ("lr", "learning_rate", 0.02),
        ("lr_milestones", "learning_rate_milestones", (2,)),
        ("lr_gamma", "learning_rate_gamma", 0.5),
    ],
)
def test_renamed_parameters_warn_and_give_the_same_model(old, new, value):
    X_tr, X_te, y_tr, _, t_tr, _ = load_split_digits(n_tasks=5)
    keep = t_tr < 2
    params = {**FAST, "learning_rate_milestones": (2,)} if old == "lr_gamma" else FAST
    params = {k: v for k, v in params.items() if k != new}
    reference = LwIClassifier(**{**params, new: value}).fit(
        X_tr[keep], y_tr[keep], task_ids=t_tr[keep]
    )
    with pytest.warns(FutureWarning, match=f"`{old}` was renamed `{new}`"):
        renamed = LwIClassifier(**{**params, old: value}).fit(
            X_tr[keep], y_tr[keep], task_ids=t_tr[keep]
        )
    np.testing.assert_array_equal(renamed.predict_proba(X_te), reference.predict_proba(X_te))
