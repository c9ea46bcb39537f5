"""fuse_models: the invariances of LwI's alignment-based fusion."""

import copy

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from sklearn_icml.continual import LwIClassifier, fuse_models
from sklearn_icml.continual._fusion import cost_matrix, solve_transport
from sklearn_icml.datasets import load_split_digits

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def trained():
    """A trained single-task model A on a 4-class digits subset, and its test data."""
    X_tr, X_te, y_tr, y_te, _, _ = load_split_digits(n_tasks=5)
    keep_tr, keep_te = y_tr < 4, y_te < 4
    clf = LwIClassifier(
        hidden_layer_sizes=(24, 16), learning_rate=0.05, max_epochs=4, random_state=0
    )
    clf.fit(X_tr[keep_tr], y_tr[keep_tr])
    return clf, X_te[keep_te], y_te[keep_te]


def _permuted_copy(state, layer_order, rng):
    """B = A with the units of every hidden layer moved by a random map pi."""
    B = {k: v.clone() for k, v in state.items()}
    maps = []
    for i, (w_key, b_key) in enumerate(layer_order):
        n = B[w_key].shape[0]
        pi = rng.permutation(n)  # unit j of A goes to position pi[j] of B
        inv = np.argsort(pi)  # B[k] = A[inv[k]]
        B[w_key] = B[w_key][inv]
        B[b_key] = B[b_key][inv]
        nxt = layer_order[i + 1][0] if i + 1 < len(layer_order) else None
        targets = [nxt] if nxt else [k for k in B if k.startswith("heads.") and "weight" in k]
        for key in targets:
            B[key] = B[key][:, inv]
        maps.append(pi)
    return B, maps


@pytest.mark.parametrize("step_sim", [0.0, 0.3, 0.7, 1.0])
def test_fusion_with_permuted_copy_returns_the_copy(trained, step_sim):
    clf, X_te, _ = trained
    model = clf.model_
    A = model.state_dict()
    order = model.layer_order()
    B, maps = _permuted_copy(A, order, np.random.default_rng(1))
    fused, perms = fuse_models(A, B, layer_order=order, n_diverse_layers=0, step_sim=step_sim)
    for key in B:
        np.testing.assert_allclose(fused[key].numpy(), B[key].numpy(), atol=1e-6, rtol=0)
    # permutations_ of a similarity-mode layer are the inverse of the applied map
    for perm, pi in zip(perms, maps, strict=True):
        np.testing.assert_array_equal(perm, np.argsort(pi))
    fused_clf = copy.deepcopy(clf)
    fused_clf.model_.load_state_dict(fused)
    np.testing.assert_array_equal(fused_clf.predict(X_te), clf.predict(X_te))


def test_fusion_does_not_modify_inputs(trained):
    model = trained[0].model_
    A = model.state_dict()
    before = {k: v.clone() for k, v in A.items()}
    B = {k: v + 0.1 for k, v in A.items()}
    fuse_models(A, B, layer_order=model.layer_order())
    for key in A:
        assert torch.equal(A[key], before[key])


@pytest.mark.parametrize("step", [0.0, 0.4, 1.0])
def test_identical_models_similarity_mode_is_identity(trained, step):
    model = trained[0].model_
    A = model.state_dict()
    fused, perms = fuse_models(A, A, layer_order=model.layer_order(), n_diverse_layers=0,
                               step_sim=step)
    for perm in perms:
        np.testing.assert_array_equal(perm, np.arange(perm.size))
    for key in A:
        np.testing.assert_allclose(fused[key].numpy(), A[key].numpy(), atol=1e-6, rtol=0)


def test_identical_models_dissimilar_last_layer_is_not_identity(trained):
    model = trained[0].model_
    A = model.state_dict()
    s = 0.93
    fused, perms = fuse_models(A, A, layer_order=model.layer_order(), n_diverse_layers=1,
                               step_diff=s)
    np.testing.assert_array_equal(perms[0], np.arange(perms[0].size))
    last = perms[-1]
    assert not np.array_equal(last, np.arange(last.size))
    W = A["backbone.2.weight"].double().numpy()
    b = A["backbone.2.bias"].double().numpy()
    np.testing.assert_allclose(fused["backbone.2.weight"].numpy(), (1 - s) * W[last] + s * W,
                               atol=1e-6)
    np.testing.assert_allclose(fused["backbone.2.bias"].numpy(), (1 - s) * b[last] + s * b,
                               atol=1e-6)
    # every unit is paired with a different one: the most dissimilar matching
    M = cost_matrix(W, W)
    assert M[last, np.arange(last.size)].sum() == pytest.approx(
        M[linear_sum_assignment(-M)].sum()
    )


def test_dissimilar_mode_width_one_is_identity():
    rng = np.random.default_rng(0)
    A = {"l0.weight": rng.normal(size=(3, 2)), "l1.weight": rng.normal(size=(1, 3))}
    fused, perms = fuse_models(A, A, layer_order=["l0.weight", "l1.weight"])
    np.testing.assert_array_equal(perms[-1], [0])
    np.testing.assert_allclose(fused["l1.weight"], A["l1.weight"])


def test_assignment_and_exact_ot_agree():
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(3, 12))
        M = rng.random((n, n))  # continuous: no ties
        rows, cols = linear_sum_assignment(M)
        P = np.zeros((n, n))
        P[rows, cols] = 1
        T = ot.emd(np.full(n, 1 / n), np.full(n, 1 / n), M) * n
        np.testing.assert_allclose(T, P, atol=1e-9)
        np.testing.assert_array_equal(solve_transport(M, solver="emd"), P)
        np.testing.assert_array_equal(solve_transport(M, solver="assignment"), P)


def test_emd_solver_gives_the_same_fusion(trained):
    pytest.importorskip("ot")
    model = trained[0].model_
    A = model.state_dict()
    B = {k: v + 0.05 * torch.randn(v.shape, generator=torch.Generator().manual_seed(0))
         for k, v in A.items()}
    fa, pa = fuse_models(A, B, layer_order=model.layer_order(), solver="assignment")
    fe, pe = fuse_models(A, B, layer_order=model.layer_order(), solver="emd")
    for x, y in zip(pa, pe, strict=True):
        np.testing.assert_array_equal(x, y)
    for key in fa:
        assert torch.equal(fa[key], fe[key])


def test_sinkhorn_gives_doubly_stochastic_transport():
    pytest.importorskip("ot")
    M = np.random.default_rng(0).random((6, 6))
    T = solve_transport(M, solver="sinkhorn", sinkhorn_reg=0.05)
    np.testing.assert_allclose(T.sum(0), 1, atol=1e-6)
    np.testing.assert_allclose(T.sum(1), 1, atol=1e-6)
    assert np.all(np.isfinite(T))


@pytest.mark.parametrize("n_diverse", [0, 2])
def test_step_semantics(trained, n_diverse):
    """step is the weight of the new model: 1 gives B, 0 gives the permuted, aligned A."""
    model = trained[0].model_
    A = model.state_dict()
    gen = torch.Generator().manual_seed(1)
    B = {k: torch.randn(v.shape, generator=gen) for k, v in A.items()}
    order = model.layer_order()
    fused, _ = fuse_models(A, B, layer_order=order, n_diverse_layers=n_diverse,
                           step_sim=1.0, step_diff=1.0)
    for key in B:
        assert torch.equal(fused[key], B[key])
    fused, perms = fuse_models(A, B, layer_order=order, n_diverse_layers=n_diverse,
                               step_sim=0.0, step_diff=0.0)
    W0 = A["backbone.0.weight"][perms[0]]
    assert torch.equal(fused["backbone.0.weight"], W0)
    assert torch.equal(fused["backbone.0.bias"], A["backbone.0.bias"][perms[0]])
    W1 = A["backbone.2.weight"][:, perms[0]][perms[1]]  # inputs aligned, then rows moved
    assert torch.equal(fused["backbone.2.weight"], W1)


def test_heads_come_from_the_right_model():
    rng = np.random.default_rng(0)
    A = {"b.weight": rng.normal(size=(5, 3)), "h0.weight": rng.normal(size=(2, 5)),
         "h1.weight": rng.normal(size=(2, 5))}
    B = {k: rng.normal(size=v.shape) for k, v in A.items()}
    fused, _ = fuse_models(A, B, layer_order=["b.weight"], keep_from_old=["h0.weight"])
    np.testing.assert_array_equal(fused["h0.weight"], A["h0.weight"])  # old head, unpermuted
    np.testing.assert_array_equal(fused["h1.weight"], B["h1.weight"])  # new head


def test_identity_solver_is_naive_averaging():
    rng = np.random.default_rng(0)
    A = {"l0.weight": rng.normal(size=(4, 3)), "l1.weight": rng.normal(size=(4, 4))}
    B = {k: rng.normal(size=v.shape) for k, v in A.items()}
    fused, perms = fuse_models(A, B, layer_order=["l0.weight", "l1.weight"], solver="identity",
                               n_diverse_layers=0, step_sim=0.5)
    for key in A:
        np.testing.assert_allclose(fused[key], 0.5 * A[key] + 0.5 * B[key])


def test_zero_rows_give_finite_costs():
    M = cost_matrix(np.zeros((3, 4)), np.ones((3, 4)))
    assert np.all(np.isfinite(M))
    np.testing.assert_allclose(M, np.log(2.0))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"step_sim": 1.5}, "step_sim"),
        ({"step_diff": -0.1}, "step_diff"),
        ({"n_diverse_layers": 3}, "n_diverse_layers"),
        ({"solver": "hungarian"}, "solver"),
        ({"ground_metric": "l1"}, "ground_metric"),
        ({"layer_order": ["nope.weight"]}, "nope.weight"),
    ],
)
def test_fuse_models_bad_input(kwargs, match):
    rng = np.random.default_rng(0)
    A = {"l0.weight": rng.normal(size=(4, 3)), "l1.weight": rng.normal(size=(4, 4))}
    kwargs = {"layer_order": ["l0.weight", "l1.weight"], **kwargs}
    with pytest.raises(ValueError, match=match):
        fuse_models(A, A, **kwargs)


def test_fuse_models_rejects_different_widths():
    rng = np.random.default_rng(0)
    A = {"l0.weight": rng.normal(size=(4, 3))}
    B = {"l0.weight": rng.normal(size=(5, 3))}
    with pytest.raises(ValueError, match="same architecture"):
        fuse_models(A, B, layer_order=["l0.weight"])
