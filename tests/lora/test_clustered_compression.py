"""ClusteredJointLoRACompressor: group recovery, inertia, affinity, bad input."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from sklearn_icml.datasets import make_lora_collection
from sklearn_icml.lora import ClusteredJointLoRACompressor, JointLoRACompressor
from sklearn_icml.lora._clustered_compression import adapter_affinity


def two_groups(n=40, d=64, basis_rank=8, seed=0):
    return make_lora_collection(n, d_out=d, adapter_rank=4, basis_rank=basis_rank, n_groups=2,
                                return_groups=True, random_state=seed)


@pytest.mark.slow
def test_e2_two_groups_are_recovered_and_exact():
    # the benchmark's E2: two groups of 50 adapters with their own rank-16 bases, d = 256
    B, A, groups = make_lora_collection(100, d_out=256, adapter_rank=8, basis_rank=16,
                                        n_groups=2, return_groups=True, random_state=0)
    comp = ClusteredJointLoRACompressor(n_clusters=2, rank=16, random_state=0).fit((B, A))
    assert adjusted_rand_score(groups, comp.labels_) == 1.0
    assert 1 - comp.score((B, A)) < 1e-10
    single = JointLoRACompressor(rank=16).fit((B, A))
    assert 1 - single.score((B, A)) >= 0.45


@pytest.mark.parametrize("core", ["full", "diag"])
def test_small_two_groups_and_inertia_is_sum_of_cluster_errors(core):
    B, A, groups = two_groups()
    comp = ClusteredJointLoRACompressor(n_clusters=2, rank=8, core=core, n_init=2,
                                        random_state=0).fit((B, A))
    assert adjusted_rand_score(groups, comp.labels_) == 1.0
    norms2 = np.array([np.linalg.norm(b @ a) ** 2 for b, a in zip(B, A)])
    per_cluster = 0.0
    for c, sub in enumerate(comp.compressors_):
        members = comp.labels_ == c
        assert sub.n_adapters_ == members.sum()
        errs = sub.reconstruction_error((B[members], A[members]), squared=True)
        per_cluster += np.sum(errs * norms2[members])
    assert comp.inertia_ == pytest.approx(per_cluster, rel=1e-9, abs=1e-12)
    dense_err = sum(np.linalg.norm(b @ a - bh @ ah) ** 2
                    for (b, a), (bh, ah) in zip(zip(B, A), comp.reconstruct((B, A))))
    assert comp.inertia_ == pytest.approx(dense_err, rel=1e-8, abs=1e-12)
    np.testing.assert_array_equal(comp.predict((B, A)), comp.labels_)
    np.testing.assert_allclose(comp.transform((B, A)), comp.cores_, atol=1e-10)
    assert comp.U_.shape == (2, 64, 8) and comp.V_.shape == (2, 64, 8)


def test_inertia_with_imperfect_clusters_matches_dense_errors():
    B, A = make_lora_collection(30, d_out=24, adapter_rank=3, basis_rank=None, random_state=1)
    comp = ClusteredJointLoRACompressor(n_clusters=3, rank=4, n_init=2, random_state=0).fit(
        (B, A))
    dense_err = sum(np.linalg.norm(b @ a - bh @ ah) ** 2
                    for (b, a), (bh, ah) in zip(zip(B, A), comp.reconstruct((B, A))))
    assert comp.inertia_ == pytest.approx(dense_err, rel=1e-8)
    assert sorted(np.unique(comp.labels_)) == [0, 1, 2]
    # more bases never hurt against one basis of the same rank
    single = JointLoRACompressor(rank=4).fit((B, A))
    assert comp.score((B, A)) >= single.score((B, A)) - 1e-9


def test_subspace_affinity_sees_groups_that_cosine_misses():
    B, A, groups = two_groups(n=20)
    sub = adapter_affinity(B, A, "subspace")
    cos = adapter_affinity(B, A, "cosine")
    dense = np.stack([b @ a for b, a in zip(B, A)]).reshape(len(B), -1)
    direct = dense @ dense.T
    norms = np.sqrt(np.diag(direct))
    np.testing.assert_allclose(cos, direct / np.outer(norms, norms), atol=1e-10)
    same = groups[:, None] == groups[None, :]
    off = ~np.eye(len(B), dtype=bool)
    assert sub[same & off].min() > sub[~same].max()
    assert np.abs(cos[same & off]).mean() < 0.5
    assert np.all(np.linalg.eigvalsh(sub) > -1e-10)
    # the subspace kernel compares column and row spaces, computed densely
    col = np.einsum("iab,jac->ijbc", dense.reshape(-1, 64, 64), dense.reshape(-1, 64, 64))
    col = np.sum(col**2, axis=(2, 3))
    row = np.einsum("iab,jcb->ijac", dense.reshape(-1, 64, 64), dense.reshape(-1, 64, 64))
    row = np.sum(row**2, axis=(2, 3))
    k = col + row
    np.testing.assert_allclose(sub, k / np.sqrt(np.outer(np.diag(k), np.diag(k))), atol=1e-10)


def test_init_options_and_given_labels():
    B, A, groups = two_groups()
    for init in ("random", "kmeans++"):
        comp = ClusteredJointLoRACompressor(n_clusters=2, rank=8, init=init, n_init=3,
                                            random_state=1).fit((B, A))
        assert adjusted_rand_score(groups, comp.labels_) == 1.0
    given = ClusteredJointLoRACompressor(n_clusters=2, rank=8, init=groups).fit((B, A))
    np.testing.assert_array_equal(given.labels_, groups)
    assert given.n_iter_ == 1
    cos = ClusteredJointLoRACompressor(n_clusters=2, rank=8, affinity="cosine",
                                       random_state=0).fit((B, A))
    assert cos.inertia_ >= given.inertia_ - 1e-12


def test_same_seed_same_result_and_quiet(capsys):
    B, A, _ = two_groups(n=16, d=20, basis_rank=4)
    a = ClusteredJointLoRACompressor(n_clusters=3, rank=4, init="random",
                                     random_state=3).fit((B, A))
    b = ClusteredJointLoRACompressor(n_clusters=3, rank=4, init="random",
                                     random_state=3).fit((B, A))
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.cores_, b.cores_)
    assert capsys.readouterr().out == ""
    ClusteredJointLoRACompressor(n_clusters=2, rank=4, n_init=1, verbose=1,
                                 random_state=0).fit((B, A))
    assert "Lloyd iteration 1" in capsys.readouterr().out


def test_bad_input_raises():
    B, A, _ = two_groups(n=6, d=16, basis_rank=4)
    with pytest.raises(ValueError, match="n_clusters must be <="):
        ClusteredJointLoRACompressor(n_clusters=7, rank=4).fit((B, A))
    with pytest.raises(ValueError, match="rank"):
        ClusteredJointLoRACompressor(n_clusters=2, rank=17).fit((B, A))
    with pytest.raises(ValueError, match="core"):
        ClusteredJointLoRACompressor(n_clusters=2, rank=4, core="x").fit((B, A))
    with pytest.raises(ValueError, match="init given as labels"):
        ClusteredJointLoRACompressor(n_clusters=2, rank=4, init=[0, 1, 2, 0, 1, 0]).fit(
            (B, A))
    with pytest.raises(ValueError, match="empty"):
        ClusteredJointLoRACompressor(n_clusters=1, rank=4).fit([])
    comp = ClusteredJointLoRACompressor(n_clusters=2, rank=4, random_state=0).fit((B, A))
    with pytest.raises(ValueError, match="d_out, d_in"):
        comp.predict((B[:, :8], A))


def test_zero_adapters_and_n_clusters_equal_n():
    rng = np.random.default_rng(0)
    collection = [(rng.normal(size=(10, 2)), rng.normal(size=(2, 8))) for _ in range(3)]
    collection.append((np.zeros((10, 2)), np.zeros((2, 8))))
    comp = ClusteredJointLoRACompressor(n_clusters=4, rank=2, random_state=0).fit(
        collection)
    assert sorted(comp.labels_) == [0, 1, 2, 3]
    assert np.all(np.isfinite(comp.relative_errors_))
    assert comp.relative_errors_.max() < 1e-10
    assert comp.inertia_ < 1e-20
