"""JointLoRACompressor and SVDLoRACompressor: closed forms, invariances, bad input."""

import pickle
import tracemalloc

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_icml.datasets import make_lora_collection
from sklearn_icml.lora import JointLoRACompressor, SVDLoRACompressor


def dense(B, A):
    return np.stack([b @ a for b, a in zip(B, A)])


def reconstructions(comp, collection):
    return np.stack([b @ a for b, a in comp.reconstruct(collection)])


def shared_plus_private(n=30, d=48, seed=0):
    return make_lora_collection(
        n, d_out=d, d_in=d + 8, adapter_rank=4, basis_rank=10, private_rank=2,
        private_scale=0.3, random_state=seed,
    )


# closed forms
def test_e1a_single_adapter_is_eckart_young():
    rng = np.random.default_rng(0)
    B, A = rng.normal(size=(64, 4)), rng.normal(size=(4, 64))
    s = np.linalg.svd(B @ A, compute_uv=False)
    tail = np.sum(s[2:] ** 2) / np.sum(s**2)
    comp = JointLoRACompressor(rank=2).fit([(B, A)])
    assert abs(comp.reconstruction_error([(B, A)], squared=True)[0] - tail) < 1e-10
    assert abs(comp.relative_errors_[0] - np.sqrt(tail)) < 1e-10
    assert abs((1 - comp.score([(B, A)])) - tail) < 1e-10


def test_e1b_planted_shared_basis_is_recovered_exactly():
    B, A = make_lora_collection(20, d_out=64, adapter_rank=8, basis_rank=8, random_state=0)
    comp = JointLoRACompressor(rank=8).fit((B, A))
    assert np.max(comp.reconstruction_error((B, A), squared=True)) < 1e-12
    assert 1 - comp.score((B, A)) < 1e-12
    np.testing.assert_allclose(reconstructions(comp, (B, A)), dense(B, A), atol=1e-10)


@pytest.mark.parametrize("rank, expected", [(4, 0.875), (8, 0.75), (16, 0.5)])
def test_e1c_mutually_orthogonal_adapters(rank, expected):
    rng = np.random.default_rng(1)
    P = np.linalg.qr(rng.normal(size=(64, 64)))[0]
    Q = np.linalg.qr(rng.normal(size=(64, 64)))[0]
    collection = [(P[:, 4 * i: 4 * i + 4], Q[:, 4 * i: 4 * i + 4].T) for i in range(8)]
    comp = JointLoRACompressor(rank=rank).fit(collection)
    assert abs((1 - comp.score(collection)) - expected) < 1e-9


def test_e2_shared_plus_private_error_and_monotone_history():
    # the benchmark's E2: d = 256, n = 100, shared rank 32 + private rank 8 -> 0.080 +- 0.005
    B, A = make_lora_collection(100, d_out=256, adapter_rank=8, basis_rank=32, private_rank=8,
                                private_scale=0.3, random_state=0)
    comp = JointLoRACompressor(rank=32).fit((B, A))
    assert abs((1 - comp.score((B, A))) - 0.080) < 0.005
    assert np.all(np.diff(comp.objective_history_) >= -1e-12)
    assert abs(comp.objective_history_[-1] - comp.score((B, A))) < 1e-10


@pytest.mark.parametrize("core", ["full", "diag"])
def test_objective_history_is_monotone_from_a_random_start(core):
    B, A = make_lora_collection(25, d_out=40, adapter_rank=4, basis_rank=None, random_state=3)
    comp = JointLoRACompressor(rank=10, core=core, init="random", max_iter=40, tol=0,
                               random_state=0).fit((B, A))
    history = comp.objective_history_
    assert len(history) > 5
    assert np.all(np.diff(history) >= -1e-12)
    assert abs(history[-1] - comp.score((B, A))) < 1e-9


# cores are projections
def test_full_cores_are_projections_and_bases_orthonormal():
    B, A = shared_plus_private()
    comp = JointLoRACompressor(rank=12).fit((B, A))
    U, V = comp.U_, comp.V_
    np.testing.assert_allclose(U.T @ U, np.eye(12), atol=1e-10)
    np.testing.assert_allclose(V.T @ V, np.eye(12), atol=1e-10)
    for i in range(len(B)):
        np.testing.assert_allclose(comp.cores_[i], U.T @ B[i] @ A[i] @ V, atol=1e-10)


def test_errors_match_dense_computation_for_both_cores():
    B, A = shared_plus_private(n=12, d=20)
    D = dense(B, A)
    for core in ("full", "diag"):
        comp = JointLoRACompressor(rank=6, core=core).fit((B, A))
        hat = [comp.U_ @ (c if c.ndim == 2 else np.diag(c)) @ comp.V_.T for c in comp.cores_]
        rel = np.array([np.linalg.norm(d - h) / np.linalg.norm(d) for d, h in zip(D, hat)])
        np.testing.assert_allclose(comp.relative_errors_, rel, rtol=1e-9)
        np.testing.assert_allclose(comp.reconstruction_error((B, A), squared=True), rel**2,
                                   rtol=1e-9)
        total = np.sum([np.linalg.norm(d - h) ** 2 for d, h in zip(D, hat)])
        assert abs(comp.score((B, A)) - (1 - total / np.sum(D**2))) < 1e-12


# rotation and order invariance
def test_reconstructions_invariant_to_factor_rotation_and_adapter_order():
    B, A = shared_plus_private(n=20)
    comp = JointLoRACompressor(rank=10).fit((B, A))
    rng = np.random.default_rng(5)
    R = rng.normal(size=(B.shape[0], B.shape[2], B.shape[2])) + 3 * np.eye(B.shape[2])
    B_rot = np.matmul(B, R)
    A_rot = np.linalg.solve(R, A)
    np.testing.assert_allclose(dense(B_rot, A_rot), dense(B, A), atol=1e-10)
    rotated = JointLoRACompressor(rank=10).fit((B_rot, A_rot))
    np.testing.assert_allclose(
        reconstructions(rotated, (B, A)), reconstructions(comp, (B, A)), atol=1e-8
    )
    order = rng.permutation(len(B))
    permuted = JointLoRACompressor(rank=10).fit((B[order], A[order]))
    np.testing.assert_allclose(
        reconstructions(permuted, (B, A)), reconstructions(comp, (B, A)), atol=1e-8
    )
    np.testing.assert_allclose(permuted.relative_errors_, comp.relative_errors_[order],
                               atol=1e-8)


# errors, scores, transforms
def test_error_decreases_with_rank():
    B, A = shared_plus_private(n=30, d=60)
    errors = [1 - JointLoRACompressor(rank=r).fit((B, A)).score((B, A))
              for r in (2, 10, 18, 26)]
    assert all(later <= earlier + 1e-12 for earlier, later in zip(errors, errors[1:]))
    assert errors[-1] < errors[0]


def test_full_is_never_worse_than_diag():
    B, A = shared_plus_private(n=25, d=40)
    for rank in (4, 12):
        full = JointLoRACompressor(rank=rank).fit((B, A)).score((B, A))
        diag = JointLoRACompressor(rank=rank, core="diag").fit((B, A)).score((B, A))
        assert (1 - full) <= (1 - diag) + 1e-9


def test_diag_core_of_separable_collection_is_exact():
    # Delta_i = U0 diag(s_i) V0^T: a diagonal model is exact
    rng = np.random.default_rng(2)
    U0, V0 = rng.normal(size=(30, 5)), rng.normal(size=(25, 5))
    S = rng.normal(size=(15, 5))
    collection = [(U0 * s, V0.T) for s in S]
    comp = JointLoRACompressor(rank=5, core="diag", max_iter=300, tol=1e-14).fit(
        collection)
    assert comp.cores_.shape == (15, 5)
    assert 1 - comp.score(collection) < 1e-10
    assert np.all(np.diff(comp.objective_history_) >= -1e-12)


def test_rank_at_least_total_adapter_rank_is_exact():
    rng = np.random.default_rng(3)
    collection = [(rng.normal(size=(20, r)), rng.normal(size=(r, 15))) for r in (1, 2, 3)]
    for rank in (6, 9):
        comp = JointLoRACompressor(rank=rank).fit(collection)
        assert np.max(comp.relative_errors_) < 1e-10
        hat = reconstructions(comp, collection)
        for (b, a), h in zip(collection, hat):
            np.testing.assert_allclose(h, b @ a, atol=1e-10)
        np.testing.assert_allclose(comp.U_.T @ comp.U_, np.eye(rank), atol=1e-10)


@pytest.mark.parametrize("core", ["full", "diag"])
@pytest.mark.parametrize("normalize", [False, True])
def test_transform_of_training_collection_equals_cores(core, normalize):
    B, A = shared_plus_private(n=15, d=30)
    comp = JointLoRACompressor(rank=8, core=core, normalize=normalize).fit((B, A))
    np.testing.assert_allclose(comp.transform((B, A)), comp.cores_, atol=1e-10)
    factors = comp.inverse_transform(comp.cores_)
    assert factors[0][0].shape == (30, 8) and factors[0][1].shape == (8, 38)


def test_transform_projects_new_adapters_on_the_fitted_basis():
    B, A = make_lora_collection(30, d_out=32, adapter_rank=4, basis_rank=6, random_state=0)
    comp = JointLoRACompressor(rank=6).fit((B[:20], A[:20]))
    # unseen adapters from the same subspaces are exact without refitting
    np.testing.assert_allclose(reconstructions(comp, (B[20:], A[20:])),
                               dense(B[20:], A[20:]), atol=1e-10)


def test_normalize_equals_fitting_the_normalised_collection():
    B, A = shared_plus_private(n=15, d=30)
    B = B * np.geomspace(0.01, 100, len(B))[:, None, None]
    norms = np.linalg.norm(dense(B, A), axis=(1, 2))
    comp = JointLoRACompressor(rank=6, normalize=True).fit((B, A))
    plain = JointLoRACompressor(rank=6).fit((B / norms[:, None, None], A))
    np.testing.assert_allclose(comp.U_ @ comp.U_.T, plain.U_ @ plain.U_.T, atol=1e-8)
    np.testing.assert_allclose(comp.cores_, plain.transform((B, A)), atol=1e-8 * norms.max())
    np.testing.assert_allclose(comp.relative_errors_, plain.relative_errors_, atol=1e-8)
    # without normalisation the large adapters take the basis
    unnorm = JointLoRACompressor(rank=6).fit((B, A))
    assert unnorm.relative_errors_[-1] < comp.relative_errors_[-1]
    assert unnorm.relative_errors_[0] > comp.relative_errors_[0]


@pytest.mark.slow
def test_never_materialises_d_out_by_d_in():
    # memory: d = 20,000 would need 3.2 GB per dense matrix
    rng = np.random.default_rng(0)
    B = rng.normal(size=(10, 20000, 4))
    A = rng.normal(size=(10, 4, 20000))
    tracemalloc.start()
    comp = JointLoRACompressor(rank=8, max_iter=20).fit((B, A))
    err = comp.reconstruction_error((B, A))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 2e9, f"peak {peak / 1e9:.2f} GB"
    assert comp.U_.shape == (20000, 8) and np.all(np.isfinite(err))


# solvers, seeds, manners
def test_solvers_and_inits_agree_on_planted_structure():
    B, A = make_lora_collection(20, d_out=40, adapter_rank=4, basis_rank=6, random_state=1)
    ref = reconstructions(JointLoRACompressor(rank=6).fit((B, A)), (B, A))
    for params in ({"init": "random", "random_state": 0}, {"svd_solver": "full"},
                   {"svd_solver": "randomized", "random_state": 0}):
        comp = JointLoRACompressor(rank=6, **params).fit((B, A))
        np.testing.assert_allclose(reconstructions(comp, (B, A)), ref, atol=1e-8)


def test_same_seed_same_result_and_clone_pickle():
    B, A = shared_plus_private(n=10, d=20)
    a = JointLoRACompressor(rank=5, init="random", random_state=7).fit((B, A))
    b = JointLoRACompressor(rank=5, init="random", random_state=7).fit((B, A))
    np.testing.assert_array_equal(a.U_, b.U_)
    np.testing.assert_array_equal(a.cores_, b.cores_)
    restored = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(restored.cores_, a.cores_)
    cloned = clone(a)
    assert cloned.get_params() == a.get_params() and not hasattr(cloned, "U_")


def test_storage_arithmetic():
    B, A = make_lora_collection(12, d_out=30, d_in=20, adapter_rank=4, basis_rank=6,
                                random_state=0)
    full = JointLoRACompressor(rank=6).fit((B, A))
    diag = JointLoRACompressor(rank=6, core="diag").fit((B, A))
    assert full.n_parameters_ == 6 * 50 + 12 * 36
    assert diag.n_parameters_ == 6 * 50 + 12 * 6
    assert full.compression_ratio_ == pytest.approx(12 * 4 * 50 / (6 * 50 + 12 * 36))
    # the paper's Mistral q_proj setting: n=1000, r0=16, r=64, 4096 x 4096
    assert 1000 * 16 * 8192 == 131_072_000 and 64 * 8192 + 1000 * 64**2 == 4_620_288


def test_quiet_by_default_and_verbose_prints(capsys):
    B, A = shared_plus_private(n=8, d=16)
    JointLoRACompressor(rank=4, core="diag").fit((B, A))
    assert capsys.readouterr().out == ""
    JointLoRACompressor(rank=4, core="diag", verbose=1).fit((B, A))
    out = capsys.readouterr().out
    assert "full iteration 1" in out and "diag iteration 1" in out


def test_torch_tensors_and_ragged_ranks_are_accepted():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    collection = [(rng.normal(size=(12, r)), rng.normal(size=(r, 10))) for r in (1, 3, 2)]
    tensors = [(torch.tensor(b, dtype=torch.bfloat16), torch.tensor(a, dtype=torch.float32))
               for b, a in collection]
    comp = JointLoRACompressor(rank=6).fit(tensors)
    assert comp.U_.dtype == np.float64
    np.testing.assert_array_equal(comp.adapter_ranks_, [1, 3, 2])
    assert np.max(comp.relative_errors_) < 1e-10


# bad input
def test_bad_collections_raise():
    rng = np.random.default_rng(0)
    good = (rng.normal(size=(8, 4)), rng.normal(size=(4, 6)))
    comp = JointLoRACompressor(rank=2)
    with pytest.raises(ValueError, match="empty"):
        comp.fit([])
    with pytest.raises(ValueError, match="empty"):
        comp.fit((np.zeros((0, 8, 4)), np.zeros((0, 4, 6))))
    with pytest.raises(ValueError, match="inner rank"):
        comp.fit([good, (rng.normal(size=(8, 3)), rng.normal(size=(4, 6)))])
    with pytest.raises(ValueError, match="inner ranks"):
        comp.fit((rng.normal(size=(2, 8, 4)), rng.normal(size=(2, 3, 6))))
    with pytest.raises(ValueError, match="same shape"):
        comp.fit([good, (rng.normal(size=(9, 4)), rng.normal(size=(4, 6)))])
    with pytest.raises(ValueError, match="NaN"):
        comp.fit([good, (np.full((8, 4), np.nan), rng.normal(size=(4, 6)))])
    with pytest.raises(ValueError, match="infinity"):
        comp.fit([good, (rng.normal(size=(8, 4)), np.full((4, 6), np.inf))])
    with pytest.raises(ValueError, match="complex"):
        comp.fit([(good[0] + 1j, good[1])])
    with pytest.raises(TypeError, match="list of \\(B, A\\) pairs"):
        comp.fit({"a": good})
    with pytest.raises(TypeError, match="pair"):
        comp.fit([good, good[0]])


def test_complex_torch_tensor_raises():
    torch = pytest.importorskip("torch")
    b = torch.zeros(8, 4, dtype=torch.complex64)
    with pytest.raises(ValueError, match="complex"):
        JointLoRACompressor(rank=2).fit([(b, torch.zeros(4, 6))])


@pytest.mark.parametrize("params, match", [
    ({"rank": 0}, "rank"),
    ({"rank": 7}, "rank"),
    ({"core": "lowrank"}, "core"),
    ({"init": "pca"}, "init"),
    ({"max_iter": 0}, "max_iter"),
    ({"svd_solver": "lobpcg"}, "svd_solver"),
])
def test_bad_parameters_raise(params, match):
    rng = np.random.default_rng(0)
    collection = [(rng.normal(size=(8, 4)), rng.normal(size=(4, 6)))]
    with pytest.raises(ValueError, match=match):
        JointLoRACompressor(**params).fit(collection)


def test_all_zero_adapter_gets_zero_core_and_zero_error():
    rng = np.random.default_rng(0)
    collection = [(rng.normal(size=(10, 2)), rng.normal(size=(2, 9))),
                  (np.zeros((10, 2)), rng.normal(size=(2, 9))),
                  (rng.normal(size=(10, 2)), rng.normal(size=(2, 9)))]
    for core in ("full", "diag"):
        for normalize in (False, True):
            comp = JointLoRACompressor(rank=3, core=core, normalize=normalize).fit(
                collection)
            assert np.all(np.isfinite(comp.cores_))
            np.testing.assert_allclose(comp.cores_[1], 0.0, atol=1e-12)
            assert comp.relative_errors_[1] == 0.0
            assert np.all(np.isfinite(comp.relative_errors_))
    zeros = [(np.zeros((10, 2)), np.zeros((2, 9)))] * 2
    comp = JointLoRACompressor(rank=2).fit(zeros)
    assert comp.score(zeros) == 1.0 and np.all(comp.relative_errors_ == 0)
    assert np.all(comp.objective_history_ == 1.0)


def test_mixed_dtypes_are_upcast_and_inputs_untouched():
    rng = np.random.default_rng(0)
    B = rng.normal(size=(6, 10, 3)).astype(np.float32)
    A = rng.normal(size=(6, 3, 12)).astype(np.float16)
    B_copy, A_copy = B.copy(), A.copy()
    comp = JointLoRACompressor(rank=4).fit((B, A))
    ref = JointLoRACompressor(rank=4).fit((B.astype(np.float64), A.astype(np.float64)))
    assert comp.U_.dtype == np.float64 and comp.cores_.dtype == np.float64
    np.testing.assert_array_equal(comp.cores_, ref.cores_)
    np.testing.assert_array_equal(B, B_copy)
    np.testing.assert_array_equal(A, A_copy)
    JointLoRACompressor(rank=4, normalize=True).fit((B, A))
    np.testing.assert_array_equal(B, B_copy)


def test_transform_checks_shape_and_state():
    B, A = shared_plus_private(n=6, d=16)
    comp = JointLoRACompressor(rank=4)
    with pytest.raises(NotFittedError, match="fit"):
        comp.transform((B, A))
    comp.fit((B, A))
    with pytest.raises(ValueError, match="d_out, d_in"):
        comp.transform((B[:, :10], A))
    with pytest.raises(ValueError, match="cores must have shape"):
        comp.inverse_transform(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="NaN"):
        comp.inverse_transform(np.full((1, 4, 4), np.nan))


# SVD baseline
def test_svd_baseline_is_per_adapter_eckart_young():
    B, A = shared_plus_private(n=8, d=20)
    svd = SVDLoRACompressor(rank=3).fit((B, A))
    D = dense(B, A)
    for i, d in enumerate(D):
        s = np.linalg.svd(d, compute_uv=False)
        assert abs(svd.relative_errors_[i] - np.sqrt(np.sum(s[3:] ** 2) / np.sum(s**2))) < 1e-10
        np.testing.assert_allclose(svd.singular_values_[i], s[:3], rtol=1e-10)
        hat = (svd.U_[i] * svd.singular_values_[i]) @ svd.V_[i].T
        np.testing.assert_allclose(hat, reconstructions(svd, (B, A))[i], atol=1e-10)
    assert svd.n_parameters_ == 8 * 3 * (20 + 28)
    # joint compression at the same rank can only use one basis, so it is worse here;
    # with rank 6 adapters of 6 x 20 x 28 the SVD baseline is exact at rank 6
    assert SVDLoRACompressor(rank=6).fit((B, A)).relative_errors_.max() < 1e-12
    with pytest.raises(ValueError, match="rank"):
        SVDLoRACompressor(rank=21).fit((B, A))
    with pytest.raises(NotFittedError):
        SVDLoRACompressor().score((B, A))
