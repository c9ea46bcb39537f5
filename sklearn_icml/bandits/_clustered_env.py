"""A clustered multi-agent bandit: N agents, each facing one of M bandit instances on K arms.

Rewards are only ever needed as sums, so a pull of ``n`` rewards draws their sum in one call
(Normal(n mu, n sigma^2) for Gaussian rewards, Binomial(n, p) for Bernoulli rewards): the cost
of a simulation does not grow with the number of pulls.
"""

import numbers
import warnings

import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_params

from ..base import BaseEnvironment, BuiltAttribute
from ..utils import check_generator
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import ANY_REAL, INT_AT_LEAST_TWO, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ..utils.validation import check_int_vector
from ._validation import check_below, index_at_least, validate_arguments


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


class ClusteredBanditEnv(BaseEnvironment):
    """N agents, each facing one of M bandit instances with K shared arms.

    Agent ``i`` pulls arms of bandit ``assignment[i]``, whose arm ``k`` has mean reward
    ``means[assignment[i], k]``. :meth:`pull` returns the sum of ``n`` fresh rewards drawn in
    one call and counts ``n`` pulls, so simulations cost the same whatever the number of
    pulls.

    The parameters are stored as given and checked at first use (any method, or reading a
    derived attribute such as ``eta_``); the arrays are then copied, so changing the
    caller's arrays afterwards does not change the environment.

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
    random_state : int, RandomState instance or None, default=None
        Source of the rewards, through :func:`~sklearn_icml.utils.check_generator`.
        :meth:`reset` re-seeds from it (an int gives the same rewards again).

    Attributes
    ----------
    means_ : ndarray of shape (n_clusters, n_arms)
        Read-only copy of the means.
    assignment_ : ndarray of shape (n_agents,)
        Read-only copy of the assignment.
    n_agents_, n_arms_, n_clusters_ : int
        N, K and M.
    best_arms_ : ndarray of shape (n_agents,)
        The best arm of every agent (``argmax`` of its bandit's means).
    cluster_best_arms_ : ndarray of shape (n_clusters,)
        The best arm of every bandit instance.
    eta_ : float
        Separability margin (Assumption 2.1 of the paper): the smallest, over pairs of
        distinct bandits ``a != b``, of ``mu[b, k*_b] - mu[b, k*_a]``; ``inf`` if M = 1.
        The algorithms' guarantees need ``eta_ > 0``; the environment warns otherwise.
    eta1_ : float
        Margin of Assumption 6.1 (used by BAI-Cl++): the smallest
        ``|mu[a, k*_a] - mu[b, k*_a]|`` over ``a != b``; ``inf`` if M = 1.
    total_pulls_ : int
        Pulls made since the first use or the last :meth:`reset`.
    pulls_per_agent_ : ndarray of shape (n_agents,)
        Pulls made by each agent since the first use or the last :meth:`reset`.

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
    >>> env = ClusteredBanditEnv(means=[[0.9, 0.5], [0.5, 0.9]], assignment=[0, 1, 1],
    ...                          random_state=0)
    >>> env.best_arms_, float(env.eta_)
    (array([0, 1, 1]), 0.4)
    >>> total = env.pull(agent=2, arm=1, n=10_000)   # the sum of 10 000 rewards
    >>> round(total / 10_000, 1), env.total_pulls_
    (0.9, 10000)
    """

    _parameter_constraints = {
        "means": ["array-like"],
        "assignment": ["array-like"],
        "noise": [StrOptions({"gaussian", "bernoulli"})],
        "sigma": [POSITIVE_REAL],
        "random_state": ["random_state"],
    }

    means_ = BuiltAttribute()
    assignment_ = BuiltAttribute()
    n_agents_ = BuiltAttribute()
    n_arms_ = BuiltAttribute()
    n_clusters_ = BuiltAttribute()
    best_arms_ = BuiltAttribute()
    cluster_best_arms_ = BuiltAttribute()
    eta_ = BuiltAttribute()
    eta1_ = BuiltAttribute()
    total_pulls_ = BuiltAttribute()
    pulls_per_agent_ = BuiltAttribute()

    @keyword_only_after(1)
    def __init__(self, *, means, assignment, noise="gaussian", sigma=1.0, random_state=None):
        store_params(self, locals())

    def _build(self):
        means = _check_means(self.means, self.noise)
        if not np.isfinite(self.sigma):
            raise ValueError(f"sigma must be a positive finite float. Got {self.sigma!r} instead.")
        self._install(means)

    def _install(self, means):
        """Check ``assignment`` against the checked ``means`` and set the instance up."""
        assignment = check_int_vector(self.assignment, "assignment")
        if assignment.shape[0] == 0:
            raise ValueError(
                "assignment must name the cluster of at least one agent. Got an empty "
                "sequence instead."
            )
        n_clusters = means.shape[0]
        outside = np.flatnonzero((assignment < 0) | (assignment >= n_clusters))
        if outside.size:
            bad = int(outside[0])
            raise ValueError(
                f"assignment has label {assignment[bad]} at agent {bad}, outside "
                f"[0, {n_clusters}) (means has {n_clusters} rows). Got {assignment[bad]!r} "
                "instead."
            )
        means.setflags(write=False)
        assignment.setflags(write=False)
        self._means_ = means
        self._assignment_ = assignment
        self._n_agents_ = int(assignment.shape[0])
        self._n_clusters_, self._n_arms_ = (int(s) for s in means.shape)
        self._cluster_best_arms_ = np.argmax(means, axis=1)
        self._best_arms_ = self._cluster_best_arms_[assignment]
        self._eta_, self._eta1_ = separability_margins(means)
        self._arm_means = means[assignment]  # (N, K) mean of every agent's arms
        _warn_if_not_separable(means, self._eta_)
        self._reset_counters()

    def _reset_counters(self):
        self._rng = check_generator(self.random_state)
        self._total_pulls_ = 0
        self._pulls_per_agent_ = np.zeros(self._n_agents_, dtype=np.int64)

    def reset(self):
        """Zero the pull counters and re-seed the reward generator; return ``self``."""
        if getattr(self, "_is_set_up", False):
            self._reset_counters()
        else:
            self._setup()  # which starts from zero counters and a fresh generator
        return self

    @keyword_only_after(3)
    def pull(self, agent, arm, *, n=1):
        """Pull ``arm`` of ``agent`` ``n`` times and return the sum of the ``n`` rewards.

        Parameters
        ----------
        agent : int
            Agent index in ``[0, n_agents_)``.
        arm : int
            Arm index in ``[0, n_arms_)``.
        n : int, default=1
            Number of pulls, ``>= 1``.

        Returns
        -------
        total : float
            Sum of ``n`` fresh rewards.
        """
        validate_arguments(
            self,
            "pull",
            {"agent": [index_at_least(0)], "arm": [index_at_least(0)], "n": [index_at_least(1)]},
            agent=agent,
            arm=arm,
            n=n,
        )
        agent = self._check_agent(agent)
        arm = check_below(arm, "arm", self._n_arms_, "the number of arms")
        return float(self._draw(agent, np.array([arm]), np.array([n], dtype=np.int64))[0])

    def pull_arms(self, agent, arms, n):
        """Pull each of ``arms`` of ``agent`` ``n[j]`` times; return the sums (one per arm).

        Parameters
        ----------
        agent : int
            Agent index in ``[0, n_agents_)``.
        arms : array-like of int of shape (n_pulled,)
            Arm indices in ``[0, n_arms_)``.
        n : int or array-like of int of shape (n_pulled,)
            Number of pulls of each arm, every one ``>= 1``.

        Returns
        -------
        totals : ndarray of shape (n_pulled,)
            Sum of the fresh rewards of each arm.
        """
        validate_arguments(
            self,
            "pull_arms",
            {
                "agent": [index_at_least(0)],
                "arms": ["array-like"],
                "n": ["array-like", numbers.Integral],
            },
            agent=agent,
            arms=arms,
            n=n,
        )
        agent = self._check_agent(agent)
        arms = self._check_arms(arms)
        n = check_int_vector(np.broadcast_to(n, arms.shape), "n", length=arms.shape[0])
        if n.size and n.min() < 1:
            raise ValueError(f"n must be >= 1 for every arm. Got {int(n.min())!r} instead.")
        return self._draw(agent, arms, n)

    def _check_agent(self, agent):
        self._setup()
        return check_below(agent, "agent", self._n_agents_, "the number of agents")

    def _check_arms(self, arms):
        """``arms`` as an int vector of arm ids in ``[0, n_arms_)``."""
        arms = check_int_vector(np.atleast_1d(arms), "arms", low=0)
        if arms.size and arms.max() >= self._n_arms_:
            raise ValueError(
                f"arms must be in [0, {self._n_arms_}). Got {int(arms.max())!r} instead."
            )
        return arms

    def _draw(self, agents, arms, n):
        """Unchecked vectorised pull, the engine of every algorithm.

        ``agents`` is an int or an int array broadcasting with ``arms`` and ``n``; returns
        the sums of ``n[j]`` fresh rewards of arm ``arms[j]`` of agent ``agents[j]`` (one
        generator call for all of them) and counts the pulls.
        """
        self._setup()
        mu = self._arm_means[agents, arms]
        if self.noise == "gaussian":
            sums = self._rng.normal(n * mu, self.sigma * np.sqrt(n))
        else:
            sums = self._rng.binomial(n, mu).astype(np.float64)
        self._total_pulls_ += int(n.sum())
        if np.ndim(agents) == 0:
            self._pulls_per_agent_[agents] += int(n.sum())
        else:
            np.add.at(self._pulls_per_agent_, agents, n)
        return np.atleast_1d(sums)


def _check_means(means, noise):
    """``means`` as a float (n_clusters, n_arms) copy, checked for the reward model."""
    try:
        arr = np.array(means)
    except (TypeError, ValueError):
        arr = np.array(None)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"means must be a numeric 2-D array. Got {means!r} instead.")
    arr = arr.astype(np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(
            "means must be 2-D (n_clusters, n_arms) with at least one row. Got an array of "
            f"shape {arr.shape} instead."
        )
    if arr.shape[1] < 2:
        raise ValueError(
            f"means must have at least 2 arms (columns). Got {arr.shape[1]} instead."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"means must be finite. Got {means!r} instead.")
    if noise == "bernoulli" and (arr.min() < 0 or arr.max() > 1):
        raise ValueError(
            "Bernoulli means must lie in [0, 1]. Got values in "
            f"[{arr.min()!r}, {arr.max()!r}] instead."
        )
    return arr


def _warn_if_not_separable(means, eta):
    top = means.max(axis=1, keepdims=True)
    tied = np.flatnonzero((means == top).sum(axis=1) > 1)
    if tied.size:
        warnings.warn(
            f"bandit {int(tied[0])} has several arms tied for the best mean; the best arm "
            "is not unique and no delta-PC guarantee holds on this instance.",
            UserWarning,
            stacklevel=6,
        )
    elif eta <= 0:
        warnings.warn(
            f"the instance violates separability (eta = {eta!r} <= 0: two bandits "
            "share a best arm, or a bandit's best arm is not worse on another bandit); "
            "the clustered algorithms' delta-PC guarantee is void.",
            UserWarning,
            stacklevel=6,
        )


@validate_params(
    {
        "n_agents": [POSITIVE_INT],
        "n_clusters": [POSITIVE_INT],
        "n_arms": [INT_AT_LEAST_TWO],
        "best_mean": [ANY_REAL],
        "near_mean": [ANY_REAL],
        "low": ["array-like"],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
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
    generator ``check_generator(random_state)`` in this order: ``means = rng.uniform(*low,
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
    random_state : int, RandomState instance or None, default=None
        Seed of the generator (through :func:`~sklearn_icml.utils.check_generator`).

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
    if n_arms < 2 * n_clusters:
        raise ValueError(
            f"n_arms must be >= 2 * n_clusters = {2 * n_clusters} (a best and a near-optimal "
            f"arm per cluster). Got {n_arms!r} instead."
        )
    low = tuple(float(v) for v in low)
    if len(low) != 2 or not low[0] <= low[1]:
        raise ValueError(f"low must be a pair (lo, hi) with lo <= hi. Got {low!r} instead.")
    if not near_mean < best_mean:
        raise ValueError(
            f"near_mean must be < best_mean = {best_mean!r}. Got {near_mean!r} instead."
        )
    if not low[1] < best_mean:
        raise ValueError(f"low[1] must be < best_mean = {best_mean!r}. Got {low[1]!r} instead.")
    rng = check_generator(random_state)
    means = rng.uniform(low[0], low[1], size=(n_clusters, n_arms))
    for m in range(n_clusters):
        means[m, m] = best_mean
        means[m, n_clusters + m] = near_mean
    assignment = np.arange(n_agents) % n_clusters
    if shuffle:
        rng.shuffle(assignment)
    return means, assignment
