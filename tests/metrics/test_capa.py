"""CAPA metrics: a worked example computed by hand, invariances, and bad input."""

import warnings

import numpy as np
import pytest
from scipy.special import softmax

from sklearn_icml.datasets import make_multiple_choice_predictions
from sklearn_icml.metrics import capa_matrix, capa_score, error_consistency

Y_E1 = [0, 1, 2, 1]
A_E1 = [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.5, 0.5]]
B_E1 = [[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.1, 0.1, 0.8], [0.9, 0.1]]


def _random_ragged(rng, n_items, option_counts, *, peaked=False):
    k = rng.choice(option_counts, size=n_items)
    y = np.array([rng.integers(ki) for ki in k])
    def one():
        return [rng.dirichlet(np.full(ki, 0.3 if peaked else 1.0)) for ki in k]
    return y, k, one(), one()


def test_e1_exact_values():
    kappa, parts = capa_score(Y_E1, A_E1, B_E1, return_components=True)
    assert kappa == pytest.approx(0.0062370, abs=1e-7)
    assert parts["c_obs"] == pytest.approx(0.4025, abs=1e-12)
    assert parts["c_exp"] == pytest.approx(0.39875, abs=1e-12)
    assert parts["pbar_a"] == pytest.approx(0.6, abs=1e-12)
    assert parts["pbar_b"] == pytest.approx(0.425, abs=1e-12)
    assert parts["mean_inv_wrong"] == pytest.approx(0.625, abs=1e-12)
    kappa_d, parts_d = capa_score(Y_E1, A_E1, B_E1, discrete=True, return_components=True)
    assert kappa_d == pytest.approx(0.5428571, abs=1e-7)
    assert parts_d["c_exp"] == pytest.approx(0.453125, abs=1e-12)
    assert error_consistency(Y_E1, A_E1, B_E1) == pytest.approx(0.5, abs=1e-12)


def test_symmetric():
    rng = np.random.default_rng(0)
    y, _, a, b = _random_ragged(rng, 200, [2, 3, 5])
    for discrete in (False, True):
        assert capa_score(y, a, b, discrete=discrete) == capa_score(y, b, a, discrete=discrete)


def test_constant_mass_on_correct_option_gives_zero():
    rng = np.random.default_rng(1)
    k = rng.choice([2, 4, 10], size=300)
    y = np.array([rng.integers(ki) for ki in k])

    def model(q):
        rows = []
        for yi, ki in zip(y, k):
            row = np.full(ki, (1 - q) / (ki - 1))
            row[yi] = q
            rows.append(row)
        return rows

    for qa, qb in [(0.9, 0.3), (0.25, 0.6), (0.5, 0.5)]:
        assert capa_score(y, model(qa), model(qb)) == pytest.approx(0.0, abs=1e-12)


def test_discrete_equals_error_consistency_on_binary_items():
    rng = np.random.default_rng(2)
    for _ in range(5):
        y = rng.integers(2, size=100)
        a = rng.dirichlet([1, 1], size=100)
        b = rng.dirichlet([1, 1], size=100)
        assert capa_score(y, a, b, discrete=True) == pytest.approx(
            error_consistency(y, a, b), abs=1e-12
        )


def test_discrete_equals_probabilistic_on_one_hot():
    rng = np.random.default_rng(3)
    y = rng.integers(4, size=150)
    a = np.eye(4)[rng.integers(4, size=150)]
    b = np.eye(4)[rng.integers(4, size=150)]
    assert capa_score(y, a, b, discrete=True) == pytest.approx(capa_score(y, a, b), abs=1e-12)


def test_ragged_path_equals_rectangular():
    rng = np.random.default_rng(4)
    y = rng.integers(5, size=80)
    a = rng.dirichlet(np.ones(5), size=80)
    b = rng.dirichlet(np.ones(5), size=80)
    rect = capa_score(y, a, b)
    ragged = capa_score(y, list(a), list(b))
    assert ragged == pytest.approx(rect, abs=1e-14)
    assert capa_score(y, list(a), list(b), discrete=True) == capa_score(y, a, b, discrete=True)


def test_from_logits_shift_invariant_and_matches_softmax():
    rng = np.random.default_rng(5)
    logits_a = rng.normal(size=(60, 4)).astype(np.float32)
    logits_b = rng.normal(size=(60, 4))
    y = rng.integers(4, size=60)
    base = capa_score(y, logits_a, logits_b, from_logits=True)
    shifted = capa_score(
        y, logits_a + rng.normal(size=(60, 1)) * 50, logits_b - 7.0, from_logits=True
    )
    assert shifted == pytest.approx(base, abs=1e-5)  # float32 input limits the shift test
    pa = softmax(logits_a.astype(np.float64), axis=1)
    pb = softmax(logits_b, axis=1)
    assert capa_score(y, pa, pb) == pytest.approx(base, abs=1e-12)
    # ragged logits too
    ragged = [rng.normal(size=k) for k in [2, 3, 7]]
    shifted_ragged = [r + 3.0 for r in ragged]
    assert capa_score([0, 2, 6], ragged, ragged[::-1][::-1], from_logits=True) == pytest.approx(
        capa_score([0, 2, 6], shifted_ragged, shifted_ragged, from_logits=True), abs=1e-12
    )


def test_nan_and_warning_when_both_perfect_one_hot():
    y = np.array([0, 1, 2])
    perfect = np.eye(3)[y]
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert np.isnan(capa_score(y, perfect, perfect))
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert np.isnan(error_consistency(y, perfect, perfect))


def test_item_and_option_permutations_do_not_change_result():
    rng = np.random.default_rng(6)
    y, k, a, b = _random_ragged(rng, 120, [2, 3, 6])
    base = capa_score(y, a, b)
    order = rng.permutation(len(y))
    assert capa_score(y[order], [a[i] for i in order], [b[i] for i in order]) == pytest.approx(
        base, abs=1e-13
    )
    perms = [rng.permutation(ki) for ki in k]
    # new position j holds old option perm[j]; the correct option moves accordingly
    y_perm = np.array([np.flatnonzero(p == yi)[0] for p, yi in zip(perms, y)])
    a_perm = [ai[p] for ai, p in zip(a, perms)]
    b_perm = [bi[p] for bi, p in zip(b, perms)]
    assert capa_score(y_perm, a_perm, b_perm) == pytest.approx(base, abs=1e-13)


def test_option_permutation_discrete_without_ties():
    rng = np.random.default_rng(7)
    y, k, a, b = _random_ragged(rng, 120, [3, 4])
    perms = [rng.permutation(ki) for ki in k]
    y_perm = np.array([np.flatnonzero(p == yi)[0] for p, yi in zip(perms, y)])
    a_perm = [ai[p] for ai, p in zip(a, perms)]
    b_perm = [bi[p] for bi, p in zip(b, perms)]
    assert capa_score(y_perm, a_perm, b_perm, discrete=True) == pytest.approx(
        capa_score(y, a, b, discrete=True), abs=1e-13
    )


def test_capa_matrix_symmetric_with_pairwise_entries():
    rng = np.random.default_rng(8)
    k = rng.choice([2, 4, 10], size=90)
    y = np.array([rng.integers(ki) for ki in k])
    models = [[rng.dirichlet(np.full(ki, 0.5)) for ki in k] for _ in range(4)]
    for discrete in (False, True):
        matrix = capa_matrix(y, models, discrete=discrete)
        np.testing.assert_array_equal(matrix, matrix.T)
        for i in range(4):
            for j in range(4):
                assert matrix[i, j] == pytest.approx(
                    capa_score(y, models[i], models[j], discrete=discrete), abs=1e-12
                )


def test_capa_matrix_accepts_3d_array_and_hard_labels():
    y, choices, probas = make_multiple_choice_predictions(
        500, n_options=4, accuracies=[0.8, 0.6, 0.5], copy_prob=0.3, random_state=0
    )
    from_probas = capa_matrix(y, probas, discrete=True)
    from_labels = capa_matrix(y, list(choices), discrete=True, n_options=4)
    np.testing.assert_allclose(from_probas, from_labels, atol=1e-12)


def test_hard_labels_need_n_options_and_discrete():
    y = [0, 1, 1]
    with pytest.raises(ValueError, match="n_options"):
        capa_score(y, [0, 1, 0], [1, 1, 0], discrete=True)
    assert capa_score(y, [0, 1, 0], [1, 1, 0], discrete=True, n_options=2) == pytest.approx(
        error_consistency(y, [0, 1, 0], [1, 1, 0], n_options=2)
    )
    with pytest.raises(ValueError, match="discrete=True"):
        capa_score(y, [0, 1, 0], [1, 1, 0], n_options=2)


def test_independent_models_give_kappa_near_zero():
    # independent mistakes: kappa_p near 0
    y, choices, _ = make_multiple_choice_predictions(
        20000, n_options=4, accuracies=[0.9, 0.6], random_state=0
    )
    assert abs(capa_score(y, choices[0], choices[1], discrete=True, n_options=4)) < 0.02
    _, _, probas = make_multiple_choice_predictions(
        20000, n_options=4, accuracies=[0.9, 0.6], confidence=[0.7, 0.5], random_state=0
    )
    assert abs(capa_score(y, probas[0], probas[1])) < 0.02


@pytest.mark.parametrize("rho", [0.2, 0.5, 0.8])
def test_shared_mistakes_give_kappa_near_rho(rho):
    # a share rho of copied answers: kappa_p near rho
    y, choices, _ = make_multiple_choice_predictions(
        20000, n_options=4, accuracies=[0.7, 0.7], copy_prob=rho, random_state=0
    )
    kappa = capa_score(y, choices[0], choices[1], discrete=True, n_options=4)
    assert kappa == pytest.approx(rho, abs=0.02)


def test_inputs_are_not_modified():
    y = np.array([0, 1, 2, 1])
    a = [np.array(r, dtype=float) for r in A_E1]
    b_rect = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 2.0, 3.0], [0.5, 0.2, 0.1]])
    copies = [r.copy() for r in a], b_rect.copy(), y.copy()
    capa_score(y, a, a)
    capa_score(y[:3], b_rect[:3], b_rect[:3], from_logits=True)
    for r, c in zip(a, copies[0]):
        np.testing.assert_array_equal(r, c)
    np.testing.assert_array_equal(b_rect, copies[1])
    np.testing.assert_array_equal(y, copies[2])


def test_pandas_input():
    pd = pytest.importorskip("pandas")
    a = pd.DataFrame(np.array(A_E1[:3]))
    b = pd.DataFrame(np.array(B_E1[:3]))
    assert capa_score(pd.Series(Y_E1[:3]), a, b) == pytest.approx(
        capa_score(Y_E1[:3], A_E1[:3], B_E1[:3])
    )


# ---- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "y, a, b, kwargs, match",
    [
        ([0, 1], A_E1, B_E1, {}, "y_true has 2 items"),
        (Y_E1, A_E1[:3], B_E1, {}, "different numbers of items"),
        (Y_E1, A_E1, B_E1[:3] + [[0.3, 0.3, 0.4]], {}, "item 3 has 2 options"),
        ([0], [[1.0]], [[1.0]], {}, "at least 2 options"),
        ([0, 3, 2, 1], A_E1, B_E1, {}, "outside"),
        ([0, -1, 2, 1], A_E1, B_E1, {}, "below"),
        (Y_E1, [[1.2, -0.2, 0.0]] + A_E1[1:], B_E1, {}, "negative"),
        (Y_E1, [[0.5, 0.2, 0.2]] + A_E1[1:], B_E1, {}, "not 1"),
        (Y_E1, [[np.nan, 0.5, 0.5]] + A_E1[1:], B_E1, {}, "NaN"),
        (Y_E1, [[np.inf, 0.5, 0.5]] + A_E1[1:], B_E1, {"from_logits": True}, "NaN or inf"),
        ([], [], [], {}, "empty"),
        ([0, 1], [0, 1], [1, 1], {"discrete": True}, "n_options"),
        ([0, 1], np.ones((2, 2, 2)) / 2, np.ones((2, 2)) / 2, {}, "2-D"),
    ],
)
def test_bad_input_raises_clear_value_error(y, a, b, kwargs, match):
    with pytest.raises(ValueError, match=match):
        capa_score(y, a, b, **kwargs)


def test_rows_summing_to_one_within_tolerance_are_accepted_not_renormalised():
    a = np.array([[0.5 + 5e-7, 0.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        capa_score([0], a, a)
    with pytest.raises(ValueError, match="not 1"):
        capa_score([0], np.array([[0.5 + 5e-6, 0.5]]), a)


def test_type_errors():
    with pytest.raises(TypeError, match="proba_a"):
        capa_score([0], "abc", [[0.5, 0.5]])
    with pytest.raises(TypeError, match="numbers"):
        capa_score([0], [np.array(["a", "b"])], [[0.5, 0.5]])
    with pytest.raises(ValueError, match="probas"):
        capa_matrix([0], [])


@pytest.mark.parametrize(
    "func, kwargs",
    [
        (capa_score, {"discrete": "yes"}),
        (capa_score, {"from_logits": 1.5}),
        (capa_score, {"n_options": "four"}),
        (capa_matrix, {"discrete": None}),
    ],
)
def test_parameters_are_validated(func, kwargs):
    y, p = [0, 1], [[0.6, 0.4], [0.3, 0.7]]
    args = (y, [p, p]) if func is capa_matrix else (y, p, p)
    with pytest.raises(TypeError, match=f"'{next(iter(kwargs))}' parameter of {func.__name__}"):
        func(*args, **kwargs)
