"""ClusteredBanditEnv and make_clustered_bandit: exact sums, counters, margins, bad input."""

import numpy as np
import pytest
from scipy import stats

from sklearn_icml.bandits import ClusteredBanditEnv, make_clustered_bandit
from sklearn_icml.bandits._clustered_env import separability_margins

MEANS = np.array([[0.9, 0.7, 0.3, 0.0], [0.7, 0.9, 0.3, 0.0]])


def test_attributes_and_margins():
    env = ClusteredBanditEnv(means=MEANS, assignment=[0, 1, 1, 0])
    assert (env.n_agents_, env.n_arms_, env.n_clusters_) == (4, 4, 2)
    np.testing.assert_array_equal(env.best_arms_, [0, 1, 1, 0])
    assert env.eta_ == pytest.approx(0.2)
    assert env.eta1_ == pytest.approx(0.2)
    # eta1 differs from eta when the best arm's mean is far on the other bandit
    eta, eta1 = separability_margins([[0.9, 0.5, 0.0], [0.1, 0.8, 0.0]])
    assert eta == pytest.approx(0.4) and eta1 == pytest.approx(0.3)
    assert separability_margins([[0.1, 0.5]]) == (np.inf, np.inf)


def test_user_arrays_not_modified_and_copied_read_only_at_first_use():
    means = MEANS.copy()
    assignment = np.array([0, 1])
    env = ClusteredBanditEnv(means=means, assignment=assignment)
    assert env.means is means  # a parameter, stored as given (scikit-learn's manners)
    env.reset()  # first use: checked, then copied
    means[0, 0] = -5.0
    assignment[0] = 1
    assert env.means_[0, 0] == 0.9 and env.assignment_[0] == 0
    with pytest.raises(ValueError):
        env.means_[0, 0] = 1.0
    np.testing.assert_array_equal(means, [[-5.0, 0.7, 0.3, 0.0], [0.7, 0.9, 0.3, 0.0]])


@pytest.mark.parametrize("n", [1, 25, 400])
def test_exact_sum_gaussian_variance(n):
    """pull(a, k, n) / n has mean mu and variance sigma^2 / n (chi-square test, loose)."""
    env = ClusteredBanditEnv(means=MEANS, assignment=[0, 1], sigma=0.5, random_state=0)
    m = 3000
    x = np.array([env.pull(1, 1, n=n) / n for _ in range(m)])
    stat = (m - 1) * x.var(ddof=1) / (0.25 / n)
    assert stats.chi2.ppf(1e-4, m - 1) < stat < stats.chi2.ppf(1 - 1e-4, m - 1)
    assert abs(x.mean() - 0.9) < 5 * np.sqrt(0.25 / n / m)
    assert env.total_pulls_ == m * n and env.pulls_per_agent_.tolist() == [0, m * n]


def test_exact_sum_bernoulli():
    env = ClusteredBanditEnv(means=MEANS, assignment=[0], noise="bernoulli", random_state=0)
    n, m, p = 50, 3000, 0.7
    x = env.pull_arms(0, np.ones(m, dtype=int), n)
    assert np.all(x == np.round(x)) and x.min() >= 0 and x.max() <= n
    stat = (m - 1) * (x / n).var(ddof=1) / (p * (1 - p) / n)
    assert stats.chi2.ppf(1e-4, m - 1) < stat < stats.chi2.ppf(1 - 1e-4, m - 1)


def test_pull_arms_counts_and_reset():
    env = ClusteredBanditEnv(means=MEANS, assignment=[0, 1, 0], random_state=3)
    first = env.pull_arms(2, [0, 3], [10, 5])
    assert first.shape == (2,)
    assert env.total_pulls_ == 15 and env.pulls_per_agent_.tolist() == [0, 0, 15]
    assert env.reset() is env
    assert env.total_pulls_ == 0 and env.pulls_per_agent_.sum() == 0
    np.testing.assert_array_equal(env.pull_arms(2, [0, 3], [10, 5]), first)


def test_batched_draw_counts_every_agent():
    env = ClusteredBanditEnv(means=MEANS, assignment=[0, 1, 0], random_state=0)
    env._draw(np.array([0, 2, 2]), np.array([0, 1, 2]), np.array([3, 4, 5]))
    assert env.pulls_per_agent_.tolist() == [3, 0, 9] and env.total_pulls_ == 12


def test_make_clustered_bandit_follows_the_recipe():
    means, assignment = make_clustered_bandit(30, 3, 10, random_state=7)
    rng = np.random.default_rng(7)
    expected = rng.uniform(0.2, 0.5, size=(3, 10))
    for m in range(3):
        expected[m, m], expected[m, 3 + m] = 0.9, 0.88
    expected_assignment = np.arange(30) % 3
    rng.shuffle(expected_assignment)
    np.testing.assert_array_equal(means, expected)
    np.testing.assert_array_equal(assignment, expected_assignment)
    env = ClusteredBanditEnv(means=means, assignment=assignment)
    assert env.eta_ >= 0.4
    np.testing.assert_array_equal(env.cluster_best_arms_, [0, 1, 2])
    _, unshuffled = make_clustered_bandit(7, 3, 6, shuffle=False, random_state=0)
    assert unshuffled.tolist() == [0, 1, 2, 0, 1, 2, 0]


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"means": [0.1, 0.9]}, ValueError, "2-D"),
        ({"means": [[0.1, np.nan]]}, ValueError, "finite"),
        ({"means": [[0.5], [0.4]]}, ValueError, "at least 2 arms"),
        ({"means": [["a", "b"]]}, TypeError, "numeric"),
        ({"assignment": []}, ValueError, "empty"),
        ({"assignment": [0, 2]}, ValueError, r"outside \[0, 2\)"),
        ({"assignment": [0, -1]}, ValueError, r"outside \[0, 2\)"),
        ({"assignment": [0, 0.5]}, ValueError, "integers"),
        ({"assignment": [[0, 1]]}, ValueError, "1-D"),
        ({"noise": "laplace"}, ValueError, "'noise' parameter"),
        ({"noise": "bernoulli", "means": [[1.2, 0.0]]}, ValueError, r"\[0, 1\]"),
        ({"sigma": 0.0}, ValueError, "sigma"),
        ({"sigma": -1.0}, ValueError, "sigma"),
        ({"sigma": "1"}, TypeError, "sigma"),
        ({"random_state": "seed"}, TypeError, "random_state"),
    ],
)
def test_env_bad_input(kwargs, exc, match):
    args = {"means": MEANS, "assignment": [0, 1], **kwargs}
    env = ClusteredBanditEnv(**args)  # __init__ only stores
    with pytest.raises(exc, match=match):
        env.reset()  # checked at first use
    with pytest.raises(exc, match=match):
        env.eta_  # noqa: B018 (reading a derived attribute is a first use too)


@pytest.mark.parametrize(
    "means, match",
    [
        ([[0.9, 0.5, 0.1], [0.9, 0.5, 0.2]], "separability"),  # shared best arm: eta = 0
        ([[0.9, 0.9, 0.1], [0.1, 0.5, 0.9]], "tied"),  # tie for the best arm
    ],
)
def test_env_warns_on_non_separable_instances(means, match):
    with pytest.warns(UserWarning, match=match):
        ClusteredBanditEnv(means=means, assignment=[0, 1]).reset()


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda e: e.pull(0, 0, n=0), ValueError, "'n' parameter of ClusteredBanditEnv.pull"),
        (lambda e: e.pull(0, 0, n=2.0), TypeError, "'n' parameter"),
        (lambda e: e.pull(0, 0, n=True), TypeError, "'n' parameter"),
        (lambda e: e.pull(2, 0), ValueError, "agent"),
        (lambda e: e.pull(-1, 0), ValueError, "agent"),
        (lambda e: e.pull(0, 4), ValueError, "arm"),
        (lambda e: e.pull_arms(0, [0, 4], 3), ValueError, "arms"),
        (lambda e: e.pull_arms(0, [0, 1], [3, 0]), ValueError, "n must be >= 1"),
        (lambda e: e.pull_arms(0, [0, 1], [3, 1.5]), ValueError, "integers"),
    ],
)
def test_pull_bad_input(call, exc, match):
    env = ClusteredBanditEnv(means=MEANS, assignment=[0, 1], random_state=0)
    with pytest.raises(exc, match=match):
        call(env)
    assert env.total_pulls_ == 0


def test_set_params_sets_up_again():
    env = ClusteredBanditEnv(means=MEANS, assignment=[0, 1], random_state=0)
    env.pull(0, 0, n=5)
    assert env.eta_ == pytest.approx(0.2)
    env.set_params(means=[[0.9, 0.1], [0.1, 0.9]], assignment=[0, 1, 1])
    assert env.n_agents_ == 3 and env.eta_ == pytest.approx(0.8) and env.total_pulls_ == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_arms": 5}, "n_arms must be >= 2 \\* n_clusters"),
        ({"near_mean": 0.95}, "near_mean"),
        ({"low": (0.5, 0.95)}, "low"),
        ({"n_agents": 0}, "n_agents"),
    ],
)
def test_make_clustered_bandit_bad_input(kwargs, match):
    args = {"n_agents": 6, "n_clusters": 3, "n_arms": 6, **kwargs}
    with pytest.raises(ValueError, match=match):
        make_clustered_bandit(**args)


def test_pull_n_by_position_warns_and_gives_the_same_sum():
    """``n`` is keyword-only; by position it still works, with a FutureWarning."""
    means, assignment = [[0.9, 0.1], [0.1, 0.9]], [0, 1]
    expected = ClusteredBanditEnv(means=means, assignment=assignment, random_state=0)
    expected = expected.pull(1, 1, n=50)
    env = ClusteredBanditEnv(means=means, assignment=assignment, random_state=0)
    with pytest.warns(FutureWarning, match=r"pass n as keyword arguments \(n=50\)"):
        total = env.pull(1, 1, 50)
    assert total == expected and env.total_pulls_ == 50


def test_constructor_by_position_warns_and_gives_the_same_environment():
    """Constructor parameters are keyword-only; by position they still work, with a warning."""
    means, assignment = [[0.9, 0.1], [0.1, 0.9]], [0, 1]
    expected = ClusteredBanditEnv(means=means, assignment=assignment, random_state=0)
    with pytest.warns(FutureWarning, match=r"pass means, assignment as keyword arguments"):
        env = ClusteredBanditEnv(means, assignment, random_state=0)
    assert env.get_params() == expected.get_params()
    assert env.pull(0, 0, n=20) == expected.pull(0, 0, n=20)
