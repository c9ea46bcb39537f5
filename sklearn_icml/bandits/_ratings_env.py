"""A clustered multi-agent bandit whose rewards are drawn from observed ratings."""

import numpy as np

from ..utils._params import store_params
from ..utils.validation import check_input_array
from ._clustered_env import ClusteredBanditEnv


class RatingsBanditEnv(ClusteredBanditEnv):
    """Clustered bandit whose rewards are ratings drawn from their observed distribution.

    Arm ``k`` of bandit ``m`` pays one of the rating values ``rating_values`` with the
    probabilities ``rating_probs[m, k]`` (the share of each rating among those that the
    users of cluster ``m`` gave to arm ``k``): a pull is one rating drawn with replacement
    from the observed ones. The sum of ``n`` pulls is drawn in one call (a multinomial count
    of each rating value, times the values), so simulations cost the same whatever the
    number of pulls. Everything else (agents, assignment, ``eta_``, counters) is
    :class:`ClusteredBanditEnv`'s; :func:`~sklearn_icml.datasets.load_movielens_bandit`
    builds the arrays from MovieLens.

    Parameters
    ----------
    rating_probs : array-like of shape (n_clusters, n_arms, n_values)
        Probability of each rating value on each arm of each bandit; non-negative, every
        ``rating_probs[m, k]`` summing to 1 (``n_arms >= 2``).
    rating_values : array-like of shape (n_values,)
        The reward each rating value pays, finite. Rewards in an interval of length at most
        2 are 1-sub-Gaussian, as the algorithms' guarantees assume.
    assignment : array-like of int of shape (n_agents,)
        Bandit instance (cluster) of every agent, values in ``[0, n_clusters)``.
    random_state : int, RandomState instance or None, default=None
        Source of the rewards, through :func:`~sklearn_icml.utils.check_generator`.
        :meth:`reset` re-seeds from it.

    Attributes
    ----------
    means_ : ndarray of shape (n_clusters, n_arms)
        Mean reward of every arm on every bandit, ``rating_probs @ rating_values``.
    assignment_, n_agents_, n_arms_, n_clusters_, best_arms_, cluster_best_arms_, eta_, \
eta1_, total_pulls_, pulls_per_agent_
        As in :class:`ClusteredBanditEnv`.

    See Also
    --------
    ClusteredBanditEnv : the same bandit with Gaussian or Bernoulli rewards.
    sklearn_icml.datasets.load_movielens_bandit : the MovieLens construction.

    Examples
    --------
    >>> from sklearn_icml.bandits import RatingsBanditEnv
    >>> env = RatingsBanditEnv(rating_probs=[[[0.5, 0.5], [0.9, 0.1]],
    ...                                      [[0.8, 0.2], [0.1, 0.9]]],
    ...                        rating_values=[0.0, 1.0], assignment=[0, 1, 1],
    ...                        random_state=0)
    >>> env.means_.tolist(), env.best_arms_.tolist()
    ([[0.5, 0.1], [0.2, 0.9]], [0, 1, 1])
    >>> round(env.pull(agent=1, arm=1, n=10_000) / 10_000, 2)
    0.9
    """

    _parameter_constraints = {
        "rating_probs": ["array-like"],
        "rating_values": ["array-like"],
        "assignment": ["array-like"],
        "random_state": ["random_state"],
    }

    def __init__(self, *, rating_probs, rating_values, assignment, random_state=None):
        store_params(self, locals())

    def _build(self):
        values = check_input_array(self.rating_values, input_name="rating_values",
                                   ensure_2d=False, dtype=np.float64)
        if values.ndim != 1 or values.size < 1:
            raise ValueError(
                "rating_values must be a 1-D array with at least one value. Got an array of "
                f"shape {values.shape} instead."
            )
        probs = check_input_array(self.rating_probs, input_name="rating_probs",
                                  ensure_2d=False, allow_nd=True, dtype=np.float64)
        if probs.ndim != 3 or probs.shape[2] != values.size or probs.shape[1] < 2:
            raise ValueError(
                "rating_probs must have shape (n_clusters, n_arms >= 2, n_values) with "
                f"n_values = {values.size} (the length of rating_values). Got shape "
                f"{probs.shape} instead."
            )
        totals = probs.sum(axis=2)
        if probs.min() < 0 or not np.allclose(totals, 1.0, rtol=0, atol=1e-9):
            m, k = np.unravel_index(np.argmax(np.abs(totals - 1.0)), totals.shape)
            raise ValueError(
                "rating_probs must be non-negative with every rating_probs[m, k] summing to "
                f"1. Got rating_probs[{m}, {k}] = {probs[m, k].tolist()!r} instead."
            )
        self._probs = probs / totals[:, :, None]
        self._values = values
        self._install(self._probs @ values)

    def _draw(self, agents, arms, n):
        """The sums of ``n[j]`` ratings of arm ``arms[j]`` of agent ``agents[j]``."""
        self._setup()
        agents, arms, n = np.broadcast_arrays(agents, arms, n)
        clusters = self._assignment_[agents]
        counts = self._rng.multinomial(n, self._probs[clusters, arms])
        sums = counts @ self._values
        self._total_pulls_ += int(n.sum())
        np.add.at(self._pulls_per_agent_, agents, n)
        return np.atleast_1d(sums)
