"""A clustered multi-agent bandit: N agents, each facing one of M bandit instances on K arms.

Rewards are only ever needed as sums, so a pull of ``n`` rewards draws their sum in one call
(Normal(n mu, n sigma^2) for Gaussian rewards, Binomial(n, p) for Bernoulli rewards): the cost
of a simulation does not grow with the number of pulls.
"""

import numbers
import warnings

import numpy as np

from ..utils.validation import check_int_vector

_NOISES = ("gaussian", "bernoulli")


def _check_int(value, name, *, low, high=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {value!r} instead.")
    if value < low or (high is not None and value >= high):
        span = f"[{low}, {high})" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be in {span}; got {value!r} instead.")
    return int(value)


def _make_rng(random_state):
    seedlike = numbers.Integral | np.random.SeedSequence
    if random_state is None or (
        isinstance(random_state, seedlike) and not isinstance(random_state, bool)
    ):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator | np.random.RandomState):
        return random_state
    raise TypeError(
        "random_state must be None, an int, a SeedSequence, a numpy Generator or a "
        f"RandomState; got {random_state!r} instead."
    )


def separability_margins(means):
    """The separability margins ``eta`` and ``eta1`` of a matrix of cluster means.

    ``eta`` is ``min over a != b of mu[b, k*_b] - mu[b, k*_a]`` (on bandit ``b`` the best arm of
    any other bandit is at least ``eta`` worse; the paper's Assumption 2.1) and ``eta1`` is
    ``min over a != b of |mu[a, k*_a] - mu[b, k*_a]|`` (Assumption 6.1, used by BAI-Cl++).
    Both are ``inf`` when there is a single bandit.

    Parameters
    ----------
    means : array-like of shape (n_clusters, n_arms)
        Mean reward of every arm on every bandit.

    Returns
    -------
    eta, eta1 : float
        The two margins.

    Examples
    --------
    >>> from sklearn_icml.bandits._clustered_env import separability_margins
    >>> separability_margins([[0.9, 0.7, 0.3], [0.6, 0.9, 0.3]])
    (0.2, 0.3)
    """
    means = np.asarray(means, dtype=np.float64)
    n_clusters = means.shape[0]
    if n_clusters < 2:
        return float("inf"), float("inf")
    best = np.argmax(means, axis=1)
    top = means[np.arange(n_clusters), best]
    # on_b[b, a] = mu[b, k*_a]
    on_b = means[:, best]
    off = ~np.eye(n_clusters, dtype=bool)
    eta = float(np.min((top[:, None] - on_b)[off]))
    eta1 = float(np.min(np.abs(top[None, :] - on_b)[off]))
    return round(eta, 12), round(eta1, 12)


class ClusteredBanditEnv:
    """N agents, each facing one of M bandit instances with K shared arms.

    Agent ``i`` pulls arms of bandit ``assignment[i]``, whose arm ``k`` has mean reward
    ``means[assignment[i], k]``. :meth:`pull` returns the sum of ``n`` fresh rewards drawn in
    one call and counts ``n`` pulls, so simulations cost the same whatever the number of
    pulls.

    Parameters
    ----------
    means : array-like of shape (n_clusters, n_arms)
        Mean reward of each arm on each bandit instance; finite, ``n_arms >= 2``. In
        ``[0, 1]`` for Bernoulli rewards.
    assignment : array-like of int of shape (n_agents,)
        Bandit instance (cluster) of every agent, values in ``[0, n_clusters)``.
    noise : {"gaussian", "bernoulli"}, default="gaussian"
        Reward distribution: Normal(mean, sigma^2) or Bernoulli(mean).
    sigma : float, default=1.0
        Standard deviation of Gaussian rewards. The algorithms' guarantees assume
        1-sub-Gaussian rewards, i.e. ``sigma <= 1`` (Bernoulli rewards are 1/2-sub-Gaussian).
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of the rewards. :meth:`reset` re-seeds from it when it is an int or a
        SeedSequence.

    Attributes
    ----------
    means : ndarray of shape (n_clusters, n_arms)
        Read-only copy of the means.
    assignment : ndarray of shape (n_agents,)
        Read-only copy of the assignment.
    n_agents, n_arms, n_clusters : int
        N, K and M.
    best_arms : ndarray of shape (n_agents,)
        The best arm of every agent (``argmax`` of its bandit's means).
    cluster_best_arms : ndarray of shape (n_clusters,)
        The best arm of every bandit instance.
    eta : float
        Separability margin (Assumption 2.1 of the paper): the smallest, over pairs of
        distinct bandits ``a != b``, of ``mu[b, k*_b] - mu[b, k*_a]``; ``inf`` if M = 1.
        The algorithms' guarantees need ``eta > 0``; the environment warns otherwise.
    eta1 : float
        Margin of Assumption 6.1 (used by BAI-Cl++): the smallest
        ``|mu[a, k*_a] - mu[b, k*_a]|`` over ``a != b``; ``inf`` if M = 1.
    total_pulls : int
        Pulls made since construction or the last :meth:`reset`.
    pulls_per_agent : ndarray of shape (n_agents,)
        Pulls made by each agent since construction or the last :meth:`reset`.

    See Also
    --------
    make_clustered_bandit : the instance generator of the benchmarks.
    ClBAI, BAICl, NaiveBAI : algorithms that run on this environment.

    References
    ----------
    .. [1] Yash, N. Karamchandani and A. Ghosh, "Near Optimal Best Arm Identification for
       Clustered Bandits", ICML 2025, arXiv:2505.10147.

    Examples
    --------
    >>> from sklearn_icml.bandits import ClusteredBanditEnv
    >>> env = ClusteredBanditEnv([[0.9, 0.5], [0.5, 0.9]], [0, 1, 1], random_state=0)
    >>> env.best_arms, float(env.eta)
    (array([0, 1, 1]), 0.4)
    >>> total = env.pull(agent=2, arm=1, n=10_000)   # the sum of 10 000 rewards
    >>> round(total / 10_000, 1), env.total_pulls
    (0.9, 10000)
    """

    def __init__(self, means, assignment, noise="gaussian", sigma=1.0, random_state=None):
        means_arr = np.array(means, dtype=np.float64) if _is_numeric(means) else None
        if means_arr is None:
            raise TypeError(f"means must be a numeric 2-D array; got {type(means).__name__}.")
        if means_arr.ndim != 2:
            raise ValueError(
                "means must be 2-D (n_clusters, n_arms); got an array of shape "
                f"{means_arr.shape} instead."
            )
        if means_arr.shape[0] < 1:
            raise ValueError("means must have at least one row (one bandit instance).")
        if means_arr.shape[1] < 2:
            raise ValueError(
                f"means must have at least 2 arms (columns); got {means_arr.shape[1]} instead."
            )
        if not np.all(np.isfinite(means_arr)):
            raise ValueError("means contains NaN or infinity; every mean must be finite.")
        if noise not in _NOISES:
            raise ValueError(f"noise must be one of {_NOISES}; got {noise!r} instead.")
        if noise == "bernoulli" and (means_arr.min() < 0 or means_arr.max() > 1):
            raise ValueError(
                "Bernoulli means must lie in [0, 1]; got values in "
                f"[{means_arr.min()!r}, {means_arr.max()!r}] instead."
            )
        if isinstance(sigma, bool) or not isinstance(sigma, numbers.Real):
            raise TypeError(f"sigma must be a positive float; got {sigma!r} instead.")
        if not (np.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a positive finite float; got {sigma!r} instead.")
        assignment_arr = check_int_vector(assignment, "assignment")
        if assignment_arr.shape[0] == 0:
            raise ValueError("assignment is empty; at least one agent is required.")
        n_clusters = means_arr.shape[0]
        if assignment_arr.min() < 0 or assignment_arr.max() >= n_clusters:
            bad = int(np.flatnonzero((assignment_arr < 0) | (assignment_arr >= n_clusters))[0])
            raise ValueError(
                f"assignment has label {assignment_arr[bad]} at agent {bad}, outside "
                f"[0, {n_clusters}) (means has {n_clusters} rows). Got {assignment_arr[bad]!r} "
                "instead."
            )

        means_arr.setflags(write=False)
        assignment_arr.setflags(write=False)
        self.means = means_arr
        self.assignment = assignment_arr
        self.noise = noise
        self.sigma = float(sigma)
        self.random_state = random_state
        self.n_agents = int(assignment_arr.shape[0])
        self.n_clusters, self.n_arms = (int(s) for s in means_arr.shape)
        self.cluster_best_arms = np.argmax(means_arr, axis=1)
        self.best_arms = self.cluster_best_arms[assignment_arr]
        self.eta, self.eta1 = separability_margins(means_arr)

        top = means_arr.max(axis=1, keepdims=True)
        tied = np.flatnonzero((means_arr == top).sum(axis=1) > 1)
        if tied.size:
            warnings.warn(
                f"bandit {int(tied[0])} has several arms tied for the best mean; the best arm "
                "is not unique and no delta-PC guarantee holds on this instance.",
                UserWarning,
                stacklevel=2,
            )
        elif self.eta <= 0:
            warnings.warn(
                f"the instance violates separability (eta = {self.eta!r} <= 0: two bandits "
                "share a best arm, or a bandit's best arm is not worse on another bandit); "
                "the clustered algorithms' delta-PC guarantee is void.",
                UserWarning,
                stacklevel=2,
            )
        self.reset()

    def reset(self):
        """Zero the pull counters and re-seed the reward generator; return ``self``."""
        self._rng = _make_rng(self.random_state)
        self._arm_means = self.means[self.assignment]  # (N, K) mean of every agent's arms
        self.total_pulls = 0
        self.pulls_per_agent = np.zeros(self.n_agents, dtype=np.int64)
        return self

    def pull(self, agent, arm, n=1):
        """Pull ``arm`` of ``agent`` ``n`` times and return the sum of the ``n`` rewards.

        Parameters
        ----------
        agent : int
            Agent index in ``[0, n_agents)``.
        arm : int
            Arm index in ``[0, n_arms)``.
        n : int, default=1
            Number of pulls, ``>= 1``.

        Returns
        -------
        total : float
            Sum of ``n`` fresh rewards.
        """
        agent = _check_int(agent, "agent", low=0, high=self.n_agents)
        arm = _check_int(arm, "arm", low=0, high=self.n_arms)
        n = _check_int(n, "n", low=1)
        return float(self._draw(agent, np.array([arm]), np.array([n], dtype=np.int64))[0])

    def pull_arms(self, agent, arms, n):
        """Pull each of ``arms`` of ``agent`` ``n[j]`` times; return the sums (one per arm).

        Parameters
        ----------
        agent : int
            Agent index in ``[0, n_agents)``.
        arms : array-like of int of shape (n_pulled,)
            Arm indices in ``[0, n_arms)``.
        n : int or array-like of int of shape (n_pulled,)
            Number of pulls of each arm, every one ``>= 1``.

        Returns
        -------
        totals : ndarray of shape (n_pulled,)
            Sum of the fresh rewards of each arm.
        """
        agent = _check_int(agent, "agent", low=0, high=self.n_agents)
        arms = check_int_vector(np.atleast_1d(arms), "arms", low=0)
        if arms.size and arms.max() >= self.n_arms:
            raise ValueError(
                f"arms must be in [0, {self.n_arms}); got {int(arms.max())!r} instead."
            )
        n = check_int_vector(np.broadcast_to(n, arms.shape), "n", length=arms.shape[0])
        if n.size and n.min() < 1:
            raise ValueError(f"n must be >= 1 for every arm; got {int(n.min())!r} instead.")
        return self._draw(agent, arms, n)

    def _draw(self, agents, arms, n):
        """Unchecked vectorised pull, the engine of every algorithm.

        ``agents`` is an int or an int array broadcasting with ``arms`` and ``n``; returns
        the sums of ``n[j]`` fresh rewards of arm ``arms[j]`` of agent ``agents[j]`` (one
        generator call for all of them) and counts the pulls.
        """
        mu = self._arm_means[agents, arms]
        if self.noise == "gaussian":
            sums = self._rng.normal(n * mu, self.sigma * np.sqrt(n))
        else:
            sums = self._rng.binomial(n, mu).astype(np.float64)
        self.total_pulls += int(n.sum())
        if np.ndim(agents) == 0:
            self.pulls_per_agent[agents] += int(n.sum())
        else:
            np.add.at(self.pulls_per_agent, agents, n)
        return np.atleast_1d(sums)

    def __repr__(self):
        return (
            f"ClusteredBanditEnv(n_agents={self.n_agents}, n_clusters={self.n_clusters}, "
            f"n_arms={self.n_arms}, noise={self.noise!r}, sigma={self.sigma!r})"
        )


def _is_numeric(values):
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        return False
    return arr.dtype.kind in "biuf"


def make_clustered_bandit(
    n_agents,
    n_clusters,
    n_arms,
    *,
    best_mean=0.9,
    near_mean=0.88,
    low=(0.2, 0.5),
    shuffle=True,
    random_state=None,
):
    """Generate the cluster means and the agent assignment of the paper's synthetic setting.

    Bandit ``m`` has its best arm ``m`` at ``best_mean``, a near-optimal arm ``M + m`` at
    ``near_mean`` and every other arm uniform in ``low``; agents are spread evenly over the
    clusters (``np.arange(N) % M``), then shuffled. The steps use one
    ``np.random.default_rng(random_state)`` in this order: ``means = rng.uniform(*low,
    size=(M, K))``, the two fixed arms per bandit, ``rng.shuffle(assignment)``. The
    separability margin is ``best_mean - low[1]`` or more.

    Parameters
    ----------
    n_agents : int
        N, ``>= 1``.
    n_clusters : int
        M, ``>= 1``.
    n_arms : int
        K, ``>= 2 * n_clusters`` and ``>= 2``.
    best_mean : float, default=0.9
        Mean of each bandit's best arm.
    near_mean : float, default=0.88
        Mean of each bandit's near-optimal arm, ``< best_mean``.
    low : (float, float), default=(0.2, 0.5)
        Range of the other arms' means, ``low[0] <= low[1] < best_mean``.
    shuffle : bool, default=True
        Shuffle the assignment of agents to clusters.
    random_state : None, int or SeedSequence, default=None
        Seed of the generator.

    Returns
    -------
    means : ndarray of shape (n_clusters, n_arms)
        Mean reward of every arm on every bandit.
    assignment : ndarray of shape (n_agents,)
        Cluster of every agent.

    See Also
    --------
    ClusteredBanditEnv : the environment built from ``means`` and ``assignment``.

    Examples
    --------
    >>> from sklearn_icml.bandits import make_clustered_bandit
    >>> means, assignment = make_clustered_bandit(6, 3, 10, random_state=0)
    >>> means.shape, assignment.tolist()
    ((3, 10), [1, 2, 2, 0, 0, 1])
    >>> means[1, [1, 4]].tolist()
    [0.9, 0.88]
    """
    n_agents = _check_int(n_agents, "n_agents", low=1)
    n_clusters = _check_int(n_clusters, "n_clusters", low=1)
    n_arms = _check_int(n_arms, "n_arms", low=2)
    if n_arms < 2 * n_clusters:
        raise ValueError(
            f"n_arms must be >= 2 * n_clusters = {2 * n_clusters} (a best and a near-optimal "
            f"arm per cluster); got {n_arms!r} instead."
        )
    low = tuple(float(v) for v in low)
    if len(low) != 2 or not low[0] <= low[1]:
        raise ValueError(f"low must be a pair (lo, hi) with lo <= hi; got {low!r} instead.")
    if not near_mean < best_mean:
        raise ValueError(
            f"near_mean must be < best_mean = {best_mean!r}; got {near_mean!r} instead."
        )
    if not low[1] < best_mean:
        raise ValueError(f"low[1] must be < best_mean = {best_mean!r}; got {low[1]!r} instead.")
    rng = np.random.default_rng(random_state)
    means = rng.uniform(low[0], low[1], size=(n_clusters, n_arms))
    for m in range(n_clusters):
        means[m, m] = best_mean
        means[m, n_clusters + m] = near_mean
    assignment = np.arange(n_agents) % n_clusters
    if shuffle:
        rng.shuffle(assignment)
    return means, assignment
