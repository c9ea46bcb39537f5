"""Tests of PTIBClustering and its draw-and-merge kernels."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score, mutual_info_score
from sklearn.utils import check_random_state

from sklearn_icml.cluster import PTIBClustering
from sklearn_icml.cluster._metrics import clustering_accuracy
from sklearn_icml.cluster._ptib import (
    _as_views,
    _combine,
    _random_partition,
    _relevant_information,
    _relevant_information_numpy,
    _review_matrix,
    _row_distributions,
    _sib_best_of,
    _sib_run,
    _sib_runs,
    _split_merge,
    _subset,
    _sweep_orders,
    _trust_score,
)
from sklearn_icml.cluster._ptib_kernels import (
    _cluster_state,
    _entry_logs,
    _own_cost,
    _own_upper_bound,
    _row_view_starts,
    merge_costs,
    merge_costs_numpy,
    sib_sweeps,
    sib_sweeps_batch,
    sib_sweeps_numpy,
)
from sklearn_icml.datasets import make_multiview_counts


def _random_views(rng, n, dims):
    """Dense random distributions (Dirichlet rows) of several views."""
    return _as_views([rng.dirichlet(np.full(d, 0.5), size=n) for d in dims])


def _easy_views(random_state=0):
    """A small, well-separated 3-cluster problem with one noise view."""
    return make_multiview_counts(
        40, n_clusters=3, views=[(30, 0.3), (20, 0.4), (25, 1.0)], n_tokens=40,
        random_state=random_state,
    )


def _fit_quiet(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return model.fit(X)


@pytest.fixture(scope="module")
def e1_seed0():
    return make_multiview_counts(random_state=0)


# ------------------------------------------------------------------ kernels vs reference
@pytest.mark.parametrize("weights", [[0.5, 0.3, 0.2], [0.0, 1.0, 0.0], [0.7, 0.0, 0.3]])
def test_merge_costs_numba_matches_numpy(weights):
    rng = np.random.default_rng(1)
    views = _random_views(rng, 30, (5, 8, 3))
    labels = _random_partition(30, 4, check_random_state(0))
    S = np.zeros((4, views.P.shape[1]))
    np.add.at(S, labels, views.P.toarray())
    counts = np.bincount(labels, minlength=4).astype(np.int64)
    w = np.array(weights)
    fast = merge_costs(*views.kernel_args(), views.plogp, w, S, counts)
    ref = merge_costs_numpy(*views.kernel_args(), views.plogp, w, S, counts)
    assert fast.shape == (30, 4)
    np.testing.assert_allclose(fast, ref, rtol=1e-9, atol=1e-12)
    assert np.all(ref > 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("weights", [[1 / 3, 1 / 3, 1 / 3], [0.0, 1.0, 0.0], [0.6, 0.4, 0.0]])
def test_sweeps_numba_match_numpy_reference(seed, weights):
    rng = np.random.default_rng(seed)
    n, K = 60, 4
    views = _random_views(rng, n, (6, 9, 4))
    start = _random_partition(n, K, check_random_state(seed))
    orders = _sweep_orders(n, 8, check_random_state(seed + 10))
    w = np.array(weights)
    fast, ref = start.copy(), start.copy()
    out_fast = sib_sweeps(*views.kernel_args(), views.plogp, w, fast, orders, K)
    out_ref = sib_sweeps_numpy(*views.kernel_args(), views.plogp, w, ref, orders, K)
    assert out_fast[1] > 0  # the sweeps did move samples
    assert tuple(out_fast) == tuple(out_ref)
    np.testing.assert_array_equal(fast, ref)
    assert np.unique(fast).size == K


@pytest.mark.parametrize("seed", [0, 1])
def test_own_upper_bound_is_above_the_own_cost(seed):
    # the sweep leaves a sample in place without its exact own cost when no other cluster's
    # lower bound comes below this upper bound; it must hold for every row and weighting
    rng = np.random.default_rng(seed)
    n, K = 50, 3
    Xs, _ = _blob_views(20, seed=seed)
    for views in (_random_views(rng, n, (6, 9, 4)), _neighbor_views(Xs, 4, 2)):
        n = views.P.shape[0]
        data, indices, indptr, col_view = views.kernel_args()
        labels = _random_partition(n, K, check_random_state(seed))
        ST, SlogS, counts = _cluster_state(data, indices, indptr, labels, K, col_view.shape[0])
        starts = _row_view_starts(indices, indptr, col_view, views.n_views)
        logp, elogp = _entry_logs(data)
        width = int(np.diff(indptr).max())
        rest, rest_log = np.empty(width), np.empty(width)
        gaps = []
        for w in (np.full(views.n_views, 1 / views.n_views), np.eye(views.n_views)[1]):
            for i in range(n):
                c = labels[i]
                exact = _own_cost(data, indices, starts, elogp, i, w, ST, SlogS, counts, c,
                                  rest, rest_log)
                upper = _own_upper_bound(data, indices, starts, logp, i, w, ST, SlogS,
                                         counts, c)
                assert upper >= exact - 1e-12
                gaps.append(upper - exact)
        assert np.median(gaps) < 0.5  # and it is close enough to prune


@pytest.mark.parametrize("n_clusters", [3, 5])
def test_relevant_information_numba_matches_numpy(n_clusters):
    rng = np.random.default_rng(2)
    Xs, _ = _blob_views(20)
    for views in (_random_views(rng, 60, (6, 9, 4)), _neighbor_views(Xs, 4, 2)):
        n = views.P.shape[0]
        labels = _random_partition(n, n_clusters, check_random_state(0))
        np.testing.assert_allclose(_relevant_information(views, labels, n_clusters),
                                   _relevant_information_numpy(views, labels, n_clusters),
                                   rtol=1e-12, atol=1e-14)
        # an empty cluster adds nothing
        np.testing.assert_allclose(_relevant_information(views, labels, n_clusters + 1),
                                   _relevant_information(views, labels, n_clusters),
                                   rtol=1e-12, atol=1e-14)


def test_batched_runs_are_the_single_runs():
    # the best-of-n starts and the authors of a round run in one numba call; each run must
    # be the run of sib_sweeps with its own weights
    Xs, _ = _blob_views(20)
    views = _neighbor_views(Xs, 4, 2)
    n, K, R = views.P.shape[0], 4, 3
    w = np.array([0.5, 0.3, 0.2])
    weights = np.array([w, [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    rng = check_random_state(0)
    starts = np.array([_random_partition(n, K, rng) for _ in range(R)])
    orders = np.array([_sweep_orders(n, 10, rng) for _ in range(R)])
    batch = starts.copy()
    n_sweeps, info = sib_sweeps_batch(*views.kernel_args(), views.marginal, weights, batch,
                                      orders, np.arange(R), K)
    for r in range(R):
        single = starts[r].copy()
        assert sib_sweeps(*views.kernel_args(), views.plogp, weights[r], single, orders[r],
                          K)[0] == n_sweeps[r]
        np.testing.assert_array_equal(batch[r], single)
        np.testing.assert_array_equal(info[r], _relevant_information(views, single, K))
    # runs that share one order (the authors of a round) take it without a copy each
    shared = starts.copy()
    sib_sweeps_batch(*views.kernel_args(), views.marginal, weights, shared, orders[:1],
                     np.zeros(R, dtype=np.int64), K)
    for r in range(R):
        single = starts[r].copy()
        sib_sweeps(*views.kernel_args(), views.plogp, weights[r], single, orders[0], K)
        np.testing.assert_array_equal(shared[r], single)

    # and the best of n_init starts, and the authors, are the same through the batch and
    # one run at a time
    def one_at_a_time(*args):
        return sib_sweeps(*args)

    for order in (orders, orders[0]):
        fast = _sib_runs(views, weights, starts, order, K)
        slow = _sib_runs(views, weights, starts, order, K, one_at_a_time)
        for a, b in zip(fast, slow):
            np.testing.assert_array_equal(a, b)

    for refine in (False, True):
        fast = _sib_best_of(views, w, K, 3, 30, check_random_state(1), refine=refine)
        slow = _sib_best_of(views, w, K, 3, 30, check_random_state(1), one_at_a_time,
                            refine=refine)
        np.testing.assert_array_equal(fast[0], slow[0])
        assert fast[1] == slow[1]


# ------------------------------------------------------------------ the move rule
def test_merge_cost_is_exact_loss_of_objective():
    rng = np.random.default_rng(3)
    n, K = 12, 3
    views = _random_views(rng, n, (7,))
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    w = np.ones(1)
    for i in range(n):
        rest = np.delete(np.arange(n), i)
        S = np.zeros((K, 7))
        np.add.at(S, labels[rest], views.P.toarray()[rest])
        counts = np.bincount(labels[rest], minlength=K).astype(np.int64)
        row = _subset(views, [i])
        delta = merge_costs(*row.kernel_args(), row.plogp, w, S, counts)[0] / n
        alone = labels.copy()
        alone[i] = K  # i as its own extra cluster
        base = _relevant_information(views, alone, K + 1)[0]
        for t in range(K):
            moved = labels.copy()
            moved[i] = t
            brute = base - _relevant_information(views, moved, K + 1)[0]
            assert delta[t] == pytest.approx(brute, abs=1e-10)
        # and the change of L when moving i from its cluster to t
        for t in range(K):
            moved = labels.copy()
            moved[i] = t
            change = (
                _relevant_information(views, labels, K)[0]
                - _relevant_information(views, moved, K)[0]
            )
            assert delta[t] - delta[labels[i]] == pytest.approx(change, abs=1e-10)


def test_objective_never_decreases_within_a_sweep():
    rng = np.random.default_rng(4)
    n, K = 40, 3
    views = _random_views(rng, n, (6, 5))
    w = np.array([0.6, 0.4])
    start = _random_partition(n, K, check_random_state(1))
    orders = _sweep_orders(n, 5, check_random_state(2))
    trace = []
    _, n_moves = sib_sweeps_numpy(
        *views.kernel_args(), views.plogp, w, start.copy(), orders, K, trace=trace
    )
    assert n_moves > 0
    values = [w @ _relevant_information(views, start, K)]
    values += [w @ _relevant_information(views, labels, K) for labels in trace]
    assert np.all(np.diff(values) >= -1e-12)
    assert values[-1] > values[0]


# ------------------------------------------------------------------ I_v(T)
def test_relevant_information_equals_mutual_info_of_counts():
    rng = np.random.default_rng(5)
    n, K, L = 50, 4, 30
    dims = (8, 5)
    labels = rng.integers(K, size=n)
    # counts that depend on the cluster, so that the information is far from 0
    counts = [rng.multinomial(L, rng.dirichlet(np.full(d, 0.5), size=K)[labels]) for d in dims]
    views = _as_views([X / L for X in counts])
    info = _relevant_information(views, labels, K)
    for v, X in enumerate(counts):
        table = np.zeros((K, X.shape[1]))
        np.add.at(table, labels, X)
        expected = mutual_info_score(None, None, contingency=table)
        assert info[v] == pytest.approx(expected, abs=1e-10)
        assert expected > 0.1


# ------------------------------------------------------------------ trust
def test_trust_score_is_one_for_a_relabelled_copy():
    rng = np.random.default_rng(6)
    consensus = rng.integers(5, size=300)
    relabelled = np.array([3, 0, 4, 1, 2])[consensus]
    assert _trust_score(relabelled, consensus, 5) == pytest.approx(1.0, abs=1e-12)


def test_trust_score_is_near_zero_for_an_independent_partition():
    rng = np.random.default_rng(7)
    consensus = rng.integers(5, size=20000)
    independent = rng.integers(5, size=20000)
    assert 0.0 <= _trust_score(independent, consensus, 5) < 0.01
    # a partly agreeing partition lies in between
    partly = np.where(rng.random(20000) < 0.5, consensus, independent)
    assert 0.1 < _trust_score(partly, consensus, 5) < 0.9


def test_review_and_combination_rules():
    # info[a, r] = I_r(T_a)
    info = np.array([[1.0, 0.8, 0.0], [0.5, 1.0, 0.0], [0.1, 0.1, 0.0]])
    review = _review_matrix(info)
    assert np.all(np.isnan(np.diag(review)))
    np.testing.assert_allclose(review[0, 1:], [0.8, 0.0])  # 0/0 -> 0
    np.testing.assert_allclose(review[1, [0, 2]], [0.5, 0.0])
    trust = np.array([1.0, 0.5, 0.0])
    peer, weights = _combine(review, trust)
    np.testing.assert_allclose(peer, [0.8, 0.5, (0.1 * 1.0 + 0.1 * 0.5) / 1.5])
    np.testing.assert_allclose(weights, np.array([0.8, 0.25, 0.0]) / 1.05)
    # all scores zero -> uniform weights
    _, uniform = _combine(review, np.zeros(3))
    np.testing.assert_allclose(uniform, np.full(3, 1 / 3))


# ------------------------------------------------------------------ invariances
def test_permuting_samples_permutes_labels():
    Xs, y = _easy_views()
    base = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(Xs)
    perm = np.random.default_rng(0).permutation(y.size)
    permuted = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit([X[perm] for X in Xs])
    assert adjusted_rand_score(base.labels_[perm], permuted.labels_) == 1.0
    assert clustering_accuracy(y, base.labels_) == 1.0


def test_permuting_features_changes_nothing():
    Xs, _ = _easy_views()
    base = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(Xs)
    rng = np.random.default_rng(1)
    shuffled = [X[:, rng.permutation(X.shape[1])] for X in Xs]
    other = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(shuffled)
    np.testing.assert_array_equal(base.labels_, other.labels_)
    np.testing.assert_allclose(base.view_weights_, other.view_weights_, atol=1e-9)


def test_permuting_views_permutes_weights():
    Xs, _ = _easy_views()
    base = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(Xs)
    order = [2, 0, 1]
    other = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit([Xs[v] for v in order])
    np.testing.assert_array_equal(base.labels_, other.labels_)
    np.testing.assert_allclose(base.view_weights_[order], other.view_weights_, atol=1e-9)
    np.testing.assert_allclose(base.trust_scores_[order], other.trust_scores_, atol=1e-9)
    assert np.ptp(base.view_weights_) > 0.1  # the weights are not trivially equal


# ------------------------------------------------------- the five-view benchmark data (E1)
@pytest.mark.slow
def test_e1_acceptance_and_noise_view_weight(e1_seed0):
    Xs, y = e1_seed0
    # count views: the relevant variable is the word (relevance="features")
    model = PTIBClustering(n_clusters=5, relevance="features", random_state=0).fit(Xs)
    acc = clustering_accuracy(y, model.labels_)
    single = [
        clustering_accuracy(
            y, PTIBClustering(n_clusters=5, relevance="features", random_state=0).fit([X]).labels_
        )
        for X in Xs
    ]
    w = model.view_weights_
    assert acc >= 0.97
    assert acc >= max(single) + 0.05
    assert w[3] < 0.05  # the pure-noise view
    assert w[0] > w[2] and w[1] > w[2]


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="known limitation of this implementation's peer-review formulas: an exact copy "
    "reviews its twin with score 1 and equal trust, so the duplicated view ends with twice "
    "the weight (0.4 + 0.4 vs 0.2) and ACC on the default counts drops 0.99 -> 0.958, more "
    "than the 0.01 allowed",
)
def test_duplicating_a_view_does_not_hurt(e1_seed0):
    Xs, y = e1_seed0
    two = PTIBClustering(n_clusters=5, relevance="features", random_state=0).fit([Xs[0], Xs[1]])
    three = PTIBClustering(n_clusters=5, relevance="features", random_state=0).fit(
        [Xs[0], Xs[1], Xs[0].copy()]
    )
    acc_two = clustering_accuracy(y, two.labels_)
    acc_three = clustering_accuracy(y, three.labels_)
    assert acc_three >= acc_two - 0.01


def test_an_exact_copy_of_a_view_gets_the_same_weight():
    Xs, _ = _easy_views()
    model = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(
        [Xs[0], Xs[1], Xs[0].copy()]
    )
    assert model.view_weights_[0] == pytest.approx(model.view_weights_[2], abs=1e-9)
    assert model.trust_scores_[0] == pytest.approx(model.trust_scores_[2], abs=1e-12)


def test_noise_view_gets_small_weight_on_easy_data():
    Xs, _ = _easy_views()
    model = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(Xs)
    assert model.view_weights_[2] < 0.05
    assert model.trust_scores_[2] < model.trust_scores_[:2].min()


# ------------------------------------------------------------------ one view: plain sIB
def test_single_view_is_plain_sib_with_the_same_seed():
    Xs, _ = _easy_views()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one view is a documented input, not a warning
        model = PTIBClustering(
            n_clusters=3, n_init=3, max_sweeps=10, relevance="features", random_state=4
        ).fit([Xs[0]])
    views = _as_views([_row_distributions(Xs[0] / Xs[0].max(axis=0))])
    labels, value = _sib_best_of(views, np.ones(1), 3, 3, 10, check_random_state(4))
    np.testing.assert_array_equal(model.labels_, labels)
    assert model.objective_ == pytest.approx(value, rel=1e-12)
    np.testing.assert_array_equal(model.view_weights_, [1.0])
    assert model.n_iter_ == 0 and model.weight_history_.shape == (1, 1)


def test_single_array_is_one_view_and_view_slices_split_it():
    Xs, _ = _easy_views()
    X = np.hstack(Xs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(X)
    assert one.n_views_ == 1 and one.n_features_in_ == X.shape[1]
    slices = [slice(0, 30), np.arange(30, 50), slice(50, None)]
    split = PTIBClustering(n_clusters=3, n_init=2, view_slices=slices, random_state=0).fit(X)
    listed = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(Xs)
    np.testing.assert_array_equal(split.labels_, listed.labels_)
    np.testing.assert_allclose(split.view_weights_, listed.view_weights_)
    assert split.n_features_per_view_ == [30, 20, 25]
    np.testing.assert_array_equal(split.predict(X[:7]), listed.predict([V[:7] for V in Xs]))


# ------------------------------------------------------------------ view weights and history
def test_weights_on_simplex_and_history_shapes():
    Xs, _ = _easy_views()
    model = PTIBClustering(n_clusters=3, n_init=2, max_iter=3, relevance="neighbors",
                           random_state=0).fit(Xs)
    w = model.view_weights_
    assert np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
    assert 1 <= model.n_iter_ <= 3
    assert model.weight_history_.shape == (model.n_iter_ + 1, 3)
    np.testing.assert_allclose(model.weight_history_[0], np.full(3, 1 / 3))
    np.testing.assert_allclose(model.weight_history_[-1], w)
    assert np.allclose(model.weight_history_.sum(axis=1), 1.0)
    assert model.history_["trust"].shape == (model.n_iter_, 3)
    assert model.history_["review_matrix"].shape == (model.n_iter_, 3, 3)
    assert model.history_["objective"].shape == (model.n_iter_ + 1,)
    assert model.review_matrix_.shape == (3, 3)
    assert np.all(np.isnan(np.diag(model.review_matrix_)))
    off = model.review_matrix_[~np.eye(3, dtype=bool)]
    assert np.all((off >= 0) & (off <= 1))
    assert len(model.view_labels_) == 3
    # neighbourhood relevance: the relevant variable of every view is the training sample
    assert [c.shape for c in model.cluster_distributions_] == [(3, 120)] * 3
    for c in model.cluster_distributions_:
        np.testing.assert_allclose(c.sum(axis=1), 1.0)
    assert model.cluster_sizes_.sum() == 120
    assert model.objective_ == pytest.approx(model.history_["objective"][-1])


def test_the_outer_loop_stops_once_the_consensus_is_kept():
    # the authors sweep in one order in every round, so they are a function of the
    # consensus: a round that keeps it gives the same weights to the last bit and the next
    # round stops the loop, even at tol=1e-6 (with new orders each round the weights kept
    # moving by about 2e-3 and these fits ran all ten rounds)
    for seed in (0, 1, 2):
        Xs, _ = make_multiview_counts(60, n_clusters=4, views=[(30, 0.5), (20, 0.6), (25, 0.8)],
                                      n_tokens=30, random_state=seed)
        model = PTIBClustering(n_clusters=4, n_init=2, max_iter=10, relevance="neighbors",
                               tol=1e-6, random_state=seed).fit(Xs)
        assert model.n_iter_ < 10
        np.testing.assert_array_equal(model.weight_history_[-1], model.weight_history_[-2])


def test_deterministic_under_random_state():
    Xs, _ = _easy_views(1)
    a = PTIBClustering(n_clusters=3, n_init=2, random_state=5).fit(Xs)
    b = PTIBClustering(n_clusters=3, n_init=2, random_state=5).fit(Xs)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.view_weights_, b.view_weights_)
    np.testing.assert_array_equal(a.weight_history_, b.weight_history_)
    # fitting the same estimator twice gives the same result
    c = clone(a)
    c.fit(Xs)
    c.fit(Xs)
    np.testing.assert_array_equal(a.labels_, c.labels_)


def test_results_do_not_depend_on_n_jobs_and_the_starts_run_on_its_threads(monkeypatch):
    import numba

    from sklearn_icml.cluster import _ptib

    assert PTIBClustering().n_jobs == -1
    real, seen = _ptib.sib_sweeps_batch, []

    def spy(*args):
        seen.append(numba.get_num_threads())
        return real(*args)

    monkeypatch.setattr(_ptib, "sib_sweeps_batch", spy)
    Xs, _ = _easy_views(2)
    fits = {}
    for n_jobs in (None, 2):
        seen.clear()
        fits[n_jobs] = PTIBClustering(n_clusters=3, n_init=4, n_jobs=n_jobs,
                                      random_state=0).fit(Xs)
        assert seen and set(seen) == {1 if n_jobs is None else
                                      min(2, numba.config.NUMBA_NUM_THREADS)}
    one, two = fits[None], fits[2]
    np.testing.assert_array_equal(one.labels_, two.labels_)
    np.testing.assert_array_equal(one.view_weights_, two.view_weights_)
    assert one.objective_ == two.objective_


# ------------------------------------------------------------------ sklearn manners by hand
def test_params_clone_and_no_fit_logic_in_init():
    model = PTIBClustering(n_clusters=4, tol=0.5, input_transform="none")
    assert model.get_params()["n_clusters"] == 4
    model.set_params(n_init=2)
    assert clone(model).get_params() == model.get_params()
    bad = PTIBClustering(n_clusters=-3)  # __init__ only stores
    assert bad.n_clusters == -3


def test_inputs_not_modified_and_pandas_views_accepted():
    Xs, _ = _easy_views()
    copies = [X.copy() for X in Xs]
    a = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(Xs)
    for X, C in zip(Xs, copies):
        np.testing.assert_array_equal(X, C)
    frames = [
        pd.DataFrame(X, columns=[f"v{v}_{j}" for j in range(X.shape[1])]) for v, X in enumerate(Xs)
    ]
    b = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(frames)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.predict(Xs), b.predict(frames))
    # a single DataFrame keeps its column names
    frame = pd.concat(frames, axis=1)
    c = PTIBClustering(
        n_clusters=3, n_init=2, view_slices=[slice(0, 30), slice(30, 75)], random_state=0
    ).fit(frame)
    assert list(c.feature_names_in_) == list(frame.columns)


def test_predict_agrees_with_fit_and_generalises():
    Xs, y = _easy_views(0)
    model = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(Xs)
    assert np.mean(model.predict(Xs) == model.labels_) >= 0.95
    new, y_new = _easy_views(0)  # same generator, hence the same cluster prototypes
    rng = np.random.default_rng(9)
    resampled = [np.vstack([rng.multinomial(40, row / row.sum()) for row in X]) for X in new]
    pred = model.predict(resampled)
    mapping = {t: np.bincount(y[model.labels_ == t]).argmax() for t in range(3)}
    assert np.mean(np.vectorize(mapping.get)(pred) == y_new) >= 0.95


def test_no_empty_cluster_when_k_is_close_to_n():
    rng = np.random.default_rng(2)
    Xs = [rng.integers(0, 5, size=(12, 6)), rng.integers(0, 5, size=(12, 4))]
    model = PTIBClustering(n_clusters=10, n_init=2, random_state=0).fit(Xs)
    assert np.unique(model.labels_).size == 10
    assert np.all(model.cluster_sizes_ >= 1)


def test_n_clusters_one_warns_and_keeps_uniform_weights():
    Xs, _ = _easy_views()
    with pytest.warns(UserWarning, match="n_clusters=1"):
        model = PTIBClustering(n_clusters=1, n_init=1, random_state=0).fit(Xs)
    np.testing.assert_array_equal(model.labels_, 0)
    np.testing.assert_allclose(model.view_weights_, np.full(3, 1 / 3))


def test_constant_view_warns():
    Xs, _ = _easy_views()
    with pytest.warns(UserWarning, match="every feature of view 1 is constant"):
        PTIBClustering(n_clusters=3, n_init=1, max_iter=1, random_state=0).fit(
            [Xs[0], np.ones((120, 4))]
        )


def test_input_transform_none_on_counts():
    Xs, y = _easy_views()
    model = PTIBClustering(n_clusters=3, n_init=2, input_transform="none", random_state=0).fit(Xs)
    assert clustering_accuracy(y, model.labels_) == 1.0
    assert not hasattr(model, "feature_min_")


# ------------------------------------------------------------------ bad input
def _small():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 5, size=(20, 4)).astype(float), rng.integers(1, 5, size=(20, 3))]


@pytest.mark.parametrize(
    "X, match",
    [
        (lambda V: [V[0], V[1][:, 0]], "element 1 has 1 dimensions"),
        (lambda V: [V[0], V[1][None]], "element 1 has 3 dimensions"),
        (lambda V: np.zeros((2, 3, 4)), "dim 3"),
        (lambda V: V[1][:, 0], "2D array"),
        (lambda V: [V[0], V[1][:15]], r"same samples. Got views with n_samples \[20, 15\]"),
        (lambda V: [V[0], np.where(V[1] > 3, np.nan, V[1])], "NaN"),
        (lambda V: [V[0], np.where(V[1] > 3, np.inf, V[1])], "infinity"),
    ],
)
def test_bad_X_raises(X, match):
    with pytest.raises(ValueError, match=match):
        PTIBClustering(n_clusters=2).fit(X(_small()))


def test_negative_or_zero_rows_rejected_without_transform():
    Xs = _small()
    neg = [Xs[0] - 1.0, Xs[1]]
    raw = {"input_transform": "none", "relevance": "features"}
    with pytest.raises(ValueError, match="view 0 has negative entries"):
        PTIBClustering(n_clusters=2, **raw).fit(neg)
    zero = [Xs[0].copy(), Xs[1]]
    zero[0][3] = 0.0
    with pytest.raises(ValueError, match="view 0 row 3 sums to 0"):
        PTIBClustering(n_clusters=2, **raw).fit(zero)
    # neighbourhood relevance only needs distances: negative features are fine
    PTIBClustering(n_clusters=2, n_init=1, max_iter=1, input_transform="none").fit(neg)
    # the same data are fine with the default min-max transform
    PTIBClustering(n_clusters=2, n_init=1, max_iter=1).fit(neg)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_clusters": 0}, "'n_clusters' parameter"),
        ({"n_clusters": 21}, "n_clusters=21 must be <= n_samples=20"),
        ({"n_clusters": 2.5}, "'n_clusters' parameter"),
        ({"max_iter": 0}, "'max_iter' parameter"),
        ({"n_init": 0}, "'n_init' parameter"),
        ({"max_sweeps": 0}, "'max_sweeps' parameter"),
        ({"tol": -1e-3}, "'tol' parameter"),
        ({"input_transform": "log"}, "'input_transform' parameter"),
        ({"view_slices": [slice(0, 2)]}, "view_slices must be None"),
    ],
)
def test_bad_parameters_raise(params, match):
    with pytest.raises(ValueError, match=match):
        PTIBClustering(**{"n_clusters": 2, **params}).fit(_small())


@pytest.mark.parametrize(
    "slices, match",
    [
        ([slice(0, 2), slice(9, 12)], r"view_slices\[1\] selects no column"),
        ([slice(0, 2), [5, 9]], r"outside \[0, 7\)"),
        ([slice(0, 2), [0.5, 1.0]], "slice or a 1-D sequence of column indices"),
        ([], "at least one view"),
    ],
)
def test_bad_view_slices_raise(slices, match):
    X = np.hstack(_small())
    with pytest.raises(ValueError, match=match):
        PTIBClustering(n_clusters=2, view_slices=slices).fit(X)


def test_predict_rejects_other_views_or_dimensions():
    Xs = _small()
    model = PTIBClustering(n_clusters=2, n_init=1, max_iter=1, random_state=0).fit(Xs)
    with pytest.raises(ValueError, match="X has 1 views, but PTIBClustering was fitted on 2"):
        model.predict([Xs[0]])
    with pytest.raises(ValueError, match=r"n_features \[4, 2\], but .* n_features \[4, 3\]"):
        model.predict([Xs[0], Xs[1][:, :2]])
    with pytest.raises(ValueError, match="fitted on a list of 2 views"):
        model.predict(np.hstack(Xs))
    with pytest.raises(ValueError, match="NaN"):
        model.predict([np.full((2, 4), np.nan), Xs[1][:2]])
    single = _fit_quiet(PTIBClustering(n_clusters=2, n_init=1, random_state=0), np.hstack(Xs))
    with pytest.raises(ValueError, match="fitted on a single array"):
        single.predict(Xs)
    with pytest.raises(ValueError, match="X has 4 features, but PTIBClustering is expecting 7"):
        single.predict(Xs[0])


# ------------------------------------------------------------------ neighbourhood relevance
def _blob_views(n_per=30, seed=0, noise=False):
    """Three real-valued views of 3 well-separated Gaussian clusters, optionally + noise."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), n_per)
    views = []
    for d, spread in ((5, 0.3), (4, 0.5), (6, 0.8)):
        centres = rng.normal(scale=2.0, size=(3, d))
        views.append(centres[y] + spread * rng.standard_normal((y.size, d)))
    if noise:
        views.append(rng.standard_normal((y.size, 8)))
    return views, y


def _neighbor_views(Xs, n_neighbors=5, n_steps=2):
    from sklearn_icml.cluster._ptib_neighbors import NeighborRelevance

    return _as_views(
        [NeighborRelevance.fit(X, n_neighbors, n_steps).training_distributions() for X in Xs]
    )


@pytest.mark.parametrize("n_steps", [1, 2])
def test_sparse_kernels_match_numpy_reference_on_neighbor_views(n_steps):
    Xs, _ = _blob_views(15)
    views = _neighbor_views(Xs, 4, n_steps)
    assert views.P.nnz < views.P.shape[0] * views.P.shape[1]  # really sparse
    K, n = 3, views.P.shape[0]
    w = np.array([0.5, 0.3, 0.2])
    start = _random_partition(n, K, check_random_state(0))
    orders = _sweep_orders(n, 6, check_random_state(1))
    fast, ref = start.copy(), start.copy()
    out_fast = sib_sweeps(*views.kernel_args(), views.plogp, w, fast, orders, K)
    out_ref = sib_sweeps_numpy(*views.kernel_args(), views.plogp, w, ref, orders, K)
    assert out_fast[1] > 0 and tuple(out_fast) == tuple(out_ref)
    np.testing.assert_array_equal(fast, ref)
    S = np.zeros((K, views.P.shape[1]))
    np.add.at(S, fast, views.P.toarray())
    counts = np.bincount(fast, minlength=K).astype(np.int64)
    np.testing.assert_allclose(
        merge_costs(*views.kernel_args(), views.plogp, w, S, counts),
        merge_costs_numpy(*views.kernel_args(), views.plogp, w, S, counts),
        rtol=1e-9, atol=1e-12,
    )


@pytest.mark.parametrize("kind", ["neighbors", "features"])
def test_lower_bound_of_the_merge_cost_holds(kind):
    # the sweep skips a cluster whose lower bound shows it cannot win; the bound must never
    # exceed the exact cost, whatever the overlap of the row with the cluster
    from sklearn_icml.cluster._ptib_kernels import _lower_bounds, _row_view_starts

    rng = check_random_state(3)
    if kind == "neighbors":
        Xs, _ = _blob_views(15)
        views = _neighbor_views(Xs, 4, 2)
    else:
        views = _random_views(rng, 45, [6, 9, 4])
    K, n, V = 4, views.P.shape[0], views.n_views
    w = np.array([0.5, 0.0, 0.5]) if kind == "features" else np.array([0.2, 0.5, 0.3])
    labels = _random_partition(n, K, rng)
    S = np.zeros((K, views.P.shape[1]))
    np.add.at(S, labels, views.P.toarray())
    counts = np.bincount(labels, minlength=K).astype(np.int64)
    data, indices, indptr, col_view = views.kernel_args()
    exact = merge_costs(data, indices, indptr, col_view, views.plogp, w, S, counts)
    starts = _row_view_starts(indices, indptr, col_view, V)
    ST = np.ascontiguousarray(S.T)
    bound = np.empty(K)
    for i in range(n):
        _lower_bounds(data, indices, starts, i, w, ST, counts, np.empty((V, K)),
                      np.empty((V, K)), bound)
        assert np.all(bound <= exact[i] + 1e-12)
    if kind == "neighbors":  # the bound is what lets the sweep skip clusters
        assert np.mean(bound > exact.min(axis=1, keepdims=True) - 1e-12) > 0.2


def test_neighbor_relevance_rows_and_bandwidth():
    from sklearn_icml.cluster._ptib_neighbors import NeighborRelevance

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((40, 3))
    model = NeighborRelevance.fit(Z, 5, 1)
    P = model.training_distributions().toarray()
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.all(np.diag(P) == 0)  # one step never stays put
    assert np.all((P > 0).sum(axis=1) == 5)
    # the bandwidth is the distance to the 5th neighbour, and the kernel matches its formula
    d = np.linalg.norm(Z[:, None] - Z[None], axis=2)
    sigma = np.sort(d, axis=1)[:, 5]
    np.testing.assert_allclose(model.scale, sigma)
    i = 7
    nbrs = np.flatnonzero(P[i])
    w = np.exp(-d[i, nbrs] ** 2 / (sigma[i] * sigma[nbrs]))
    np.testing.assert_allclose(P[i, nbrs], w / w.sum())
    # two steps are the square of the one-step matrix
    two = NeighborRelevance.fit(Z, 5, 2).training_distributions().toarray()
    np.testing.assert_allclose(two, P @ P, atol=1e-12)
    # duplicates (zero distances) give finite rows
    dup = NeighborRelevance.fit(np.zeros((6, 2)), 3, 2).training_distributions().toarray()
    assert np.all(np.isfinite(dup)) and np.allclose(dup.sum(axis=1), 1.0)


def test_neighbors_cluster_real_valued_views_and_suppress_noise():
    Xs, y = _blob_views(30, noise=True)
    model = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit(Xs)
    assert clustering_accuracy(y, model.labels_) == 1.0
    assert model.view_weights_[3] < 0.05
    assert model.trust_scores_[3] < model.trust_scores_[:3].min()
    # held-out samples are assigned like their classes
    rng = np.random.default_rng(5)
    perm = rng.permutation(y.size)
    train, test = perm[:60], perm[60:]
    part = PTIBClustering(n_clusters=3, n_init=2, random_state=0).fit([X[train] for X in Xs])
    pred = part.predict([X[test] for X in Xs])
    assert adjusted_rand_score(y[test], pred) == 1.0


def test_split_merge_fixes_two_mixed_clusters_and_never_lowers_the_objective():
    Xs, y = _blob_views(30)
    views = _neighbor_views(Xs, 5, 2)
    w = np.full(3, 1 / 3)
    # start: class 0 alone, and two clusters each holding half of classes 1 and 2
    half = np.arange(y.size) % 2
    mixed = np.where(y == 0, 0, 1 + half)
    value = _relevant_information(views, mixed, 3) @ w
    refined, refined_value = _split_merge(views, w, mixed, 3, 30, check_random_state(0))
    assert refined_value >= value
    assert adjusted_rand_score(y, refined) == 1.0
    # plain sweeps alone may stay stuck; the refinement must not be worse than them
    swept = _sib_best_of(views, w, 3, 1, 30, check_random_state(0), refine=False)[1]
    assert refined_value >= swept - 1e-12


def test_split_merge_runs_no_sweeps_for_moves_that_give_the_partition_back():
    # work, not time: from a partition that a whole sweep leaves unchanged, a move whose
    # split finds the same clusters again would be swept back to the same partition, so it
    # is not run (its sweep orders are still drawn); the result is the one of running it
    Xs, y = _blob_views(30)
    views = _neighbor_views(Xs, 5, 2)
    w = np.full(3, 1 / 3)
    K = 3  # a re-split of the union of two classes finds the two classes again
    start = _sib_best_of(views, w, K, 1, 30, check_random_state(0), refine=False)[0]
    fixed, converged = _sib_run(views, w, start, K, 30, check_random_state(0))
    assert converged

    def counting(calls):
        def sweep(data, indices, indptr, *args):
            n_sweeps, n_moves = sib_sweeps(data, indices, indptr, *args)
            calls.append((indptr.shape[0] - 1, n_sweeps))
            return n_sweeps, n_moves
        return sweep

    results = {}
    for known in (False, True):
        calls = []
        results[known] = (*_split_merge(views, w, fixed, K, 30, check_random_state(0),
                                        counting(calls), converged=known), calls)
    (old_labels, old_value, old_calls), (new_labels, new_value, new_calls) = (
        results[False], results[True])
    np.testing.assert_array_equal(new_labels, old_labels)
    assert new_value == old_value
    full = y.size
    old_trials = [s for n, s in old_calls if n == full]
    new_trials = [s for n, s in new_calls if n == full]
    # every split is the same two-cluster work; only trials that give the partition back go
    assert [c for c in old_calls if c[0] < full] == [c for c in new_calls if c[0] < full]
    assert len(new_trials) < len(old_trials)
    assert sum(new_trials) < sum(old_trials)


# ------------------------------------------------------------------ one 2-D X
def test_single_array_fits_without_warnings_in_grid_search():
    from sklearn.metrics import normalized_mutual_info_score
    from sklearn.model_selection import GridSearchCV, KFold

    Xs, y = _blob_views(20)
    X = np.hstack(Xs)

    def nmi(est, X, y):
        return normalized_mutual_info_score(y, est.predict(X))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PTIBClustering(n_clusters=3, n_init=1, random_state=0).fit(X)  # one view
        search = GridSearchCV(
            PTIBClustering(n_clusters=3, n_init=1, max_iter=2, random_state=0,
                           view_slices=[slice(0, 5), slice(5, 9), slice(9, 15)]),
            {"n_neighbors": [4, 6]}, scoring=nmi, cv=KFold(2, shuffle=True, random_state=0),
        ).fit(X, y)
    assert search.best_estimator_.n_views_ == 3
    assert search.best_score_ > 0.9


def test_n_outer_iter_is_max_iter_and_n_clusters_by_position_warns():
    X = np.random.default_rng(0).random((40, 6))
    expected = PTIBClustering(n_clusters=2, n_init=1, max_iter=2, random_state=0).fit(X)
    with pytest.warns(FutureWarning, match="`n_outer_iter` was renamed `max_iter`"):
        got = PTIBClustering(n_clusters=2, n_init=1, n_outer_iter=2, random_state=0).fit(X)
    np.testing.assert_array_equal(got.labels_, expected.labels_)
    with pytest.warns(FutureWarning, match="keyword arguments"):
        got = PTIBClustering(2, n_init=1, max_iter=2, random_state=0).fit(X)
    np.testing.assert_array_equal(got.labels_, expected.labels_)


# ------------------------------------------------------------------ relevance="auto"
def test_auto_relevance_takes_the_features_model_for_count_views():
    Xs, _ = _easy_views()
    model = PTIBClustering(n_clusters=3, n_init=2, max_iter=2, random_state=0).fit(Xs)
    assert model.relevance_ == ["features"] * 3
    # the relevant variable of a count view is the word: centroids over the features
    assert [c.shape for c in model.cluster_distributions_] == [(3, 30), (3, 20), (3, 25)]
    same = PTIBClustering(n_clusters=3, n_init=2, max_iter=2, relevance="features",
                          random_state=0).fit(Xs)
    np.testing.assert_array_equal(model.labels_, same.labels_)
    np.testing.assert_array_equal(model.view_weights_, same.view_weights_)


def test_auto_relevance_takes_neighbors_for_real_valued_views():
    Xs, _ = _blob_views(10)
    model = PTIBClustering(n_clusters=3, n_init=1, max_iter=1, random_state=0).fit(Xs)
    assert model.relevance_ == ["neighbors"] * 3
    assert [c.shape for c in model.cluster_distributions_] == [(3, 30)] * 3
    # non-negative but not integer-valued, and integer-valued but negative: neighbours too
    nonneg = np.abs(Xs[0])
    negative_ints = np.round(Xs[1] * 10)
    assert negative_ints.min() < 0
    model.fit([nonneg, negative_ints])
    assert model.relevance_ == ["neighbors", "neighbors"]


def test_auto_relevance_reads_counts_from_the_values_not_the_dtype():
    # the features model is a bag of tokens: most features that occur in a sample occur
    # once. Integer pixel counts (scikit-learn's digits, 0-16) are mostly large values: the
    # neighbourhood model, which clusters them far better, is chosen
    from sklearn.datasets import load_digits

    from sklearn_icml.cluster._ptib import _is_count_view

    pixels = load_digits().data[:200]
    assert np.all(pixels == np.round(pixels)) and pixels.min() == 0
    assert not _is_count_view(pixels, was_sparse=False)
    model = PTIBClustering(n_clusters=3, n_init=1, max_iter=1, random_state=0)
    assert model.fit([pixels[:, :32], pixels[:, 32:]]).relevance_ == ["neighbors"] * 2
    # short bags of tokens (fewer tokens than features) are counts; so is a 0/1 view of
    # presences
    for n_tokens in (5, 20):
        Xs, _ = make_multiview_counts(30, n_clusters=3, n_tokens=n_tokens, random_state=0)
        assert all(_is_count_view(X, was_sparse=False) for X in Xs), n_tokens
    Xs, _ = _easy_views()
    assert _is_count_view((Xs[0] > 0).astype(float), was_sparse=False)
    # rounded real-valued measurements shifted to be non-negative are not counts
    blobs, _ = _blob_views(20)
    rounded = np.round(10 * (blobs[0] - blobs[0].min()))
    assert not _is_count_view(rounded, was_sparse=False)
    # a sparse non-negative view is counts whatever its values; a negative one is not
    assert _is_count_view(pixels, was_sparse=True)
    assert not _is_count_view(pixels - 1.0, was_sparse=True)


def test_auto_relevance_takes_the_features_model_for_sparse_views():
    from scipy import sparse

    Xs, _ = _easy_views()
    # sparse, non-negative and not integer-valued (say tf-idf): still the features model
    scaled = [X / np.arange(1, X.shape[1] + 1) for X in Xs]
    model = PTIBClustering(n_clusters=3, n_init=2, max_iter=2, random_state=0)
    model.fit([sparse.csr_matrix(X) for X in scaled])
    assert model.relevance_ == ["features"] * 3
    dense = PTIBClustering(n_clusters=3, n_init=2, max_iter=2, relevance="features",
                           random_state=0).fit(scaled)
    np.testing.assert_array_equal(model.labels_, dense.labels_)
    assert PTIBClustering(n_clusters=3, n_init=1, max_iter=1, random_state=0).fit(
        scaled).relevance_ == ["neighbors"] * 3  # the same values dense are real-valued
    np.testing.assert_array_equal(
        model.predict([sparse.csr_matrix(X[:5]) for X in scaled]), model.labels_[:5])


def test_auto_relevance_is_chosen_per_view_and_predict_uses_each_model():
    counts, _ = _easy_views()
    real, _ = _blob_views(40)  # 120 samples, as the count views
    Xs = [counts[0], real[0], counts[1]]
    model = PTIBClustering(n_clusters=3, n_init=2, max_iter=2, random_state=0).fit(Xs)
    assert model.relevance_ == ["features", "neighbors", "features"]
    assert [c.shape for c in model.cluster_distributions_] == [(3, 30), (3, 120), (3, 20)]
    np.testing.assert_array_equal(model.predict(Xs)[:20], model.predict([X[:20] for X in Xs]))
    listed = PTIBClustering(n_clusters=3, n_init=2, max_iter=2, random_state=0,
                            relevance=["features", "neighbors", "features"]).fit(Xs)
    np.testing.assert_array_equal(model.labels_, listed.labels_)
    forced = PTIBClustering(n_clusters=3, n_init=1, max_iter=1, random_state=0,
                            relevance=("auto", "auto", "neighbors")).fit(Xs)
    assert forced.relevance_ == ["features", "neighbors", "neighbors"]


@pytest.mark.parametrize(
    "relevance, match",
    [
        (["features"], r"one entry per view \(2 views\). Got a list of 1 entries"),
        (["features", "words"], r"relevance\[1\] must be 'auto', 'neighbors' or 'features'"),
        ("words", "'relevance' parameter"),
    ],
)
def test_bad_relevance_raises(relevance, match):
    with pytest.raises(ValueError, match=match):
        PTIBClustering(n_clusters=2, relevance=relevance).fit(_small())


def test_default_finds_the_informative_count_views_among_noise_views():
    # five count views, two informative and three pure noise: the information bottleneck's
    # own data, where the neighbourhood model gave a noise view a weight up to 0.30
    Xs, y = make_multiview_counts(
        100, n_clusters=4, views=[(50, 0.55), (40, 0.6), (50, 1.0), (40, 1.0), (30, 1.0)],
        random_state=0,
    )
    model = PTIBClustering(n_clusters=4, random_state=0).fit(Xs)
    assert model.relevance_ == ["features"] * 5
    assert clustering_accuracy(y, model.labels_) >= 0.95
    assert np.all(model.view_weights_[2:] < 0.01)


def test_same_partition_is_up_to_renumbering_and_counts_empty_clusters():
    from sklearn_icml.cluster._ptib import _same_partition

    b = np.array([0, 0, 1, 1, 2, 2])
    assert _same_partition(np.array([2, 2, 0, 0, 1, 1]), b, 3)
    assert not _same_partition(np.array([0, 0, 1, 1, 1, 2]), b, 3)
    # two clusters merged (one left empty): every b-cluster still maps to one a-cluster
    assert not _same_partition(np.array([0, 0, 0, 0, 1, 1]), b, 3)
    assert not _same_partition(b, np.array([0, 0, 0, 0, 1, 1]), 3)
