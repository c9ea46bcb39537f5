"""The EXP3-IX update and its loss estimators: IX for one observed arm, HT-IX for a grid.

Neu, "Explore no more: Improved high-probability regret bounds for non-stochastic
bandits", NeurIPS 2015; Jia, Frazier and Kallus, "Multi-Armed Bandits with Interference",
ICML 2025 (the HT-IX estimator).
"""

import numpy as np

from ..utils import check_generator


class _EXP3IXCore:
    """EXP3-IX weights over ``k`` arms (Neu, 2015), shared by every policy of this module.

    Log-weights ``W`` start at 0; ``p = softmax(W)`` is computed with the max subtracted and
    ``exp(W)`` is never stored; ``update`` does ``W <- W - eta * loss_hat`` and re-centres.
    """

    def __init__(self, n_arms, learning_rate, ix_gamma):
        self.n_arms = n_arms
        self.learning_rate = learning_rate
        self.ix_gamma = ix_gamma
        self.log_weights = np.zeros(n_arms)

    def probs(self):
        w = np.exp(self.log_weights - self.log_weights.max())
        return w / w.sum()

    def draw(self, rng, probs):
        """One arm from ``probs``: exactly one ``rng.choice(k, p=probs)`` call."""
        return int(rng.choice(self.n_arms, p=probs))

    def update(self, loss_hat):
        self.log_weights -= self.learning_rate * loss_hat
        self.log_weights -= self.log_weights.max()


def _default_learning_rate(n_arms, horizon):
    """``sqrt(2 ln k / (k T))``."""
    return float(np.sqrt(2.0 * np.log(n_arms) / (n_arms * horizon)))


def _exp3ix_on_sequence(rewards, learning_rate, ix_gamma, random_state):
    """Plain EXP3-IX on a ``(T, k)`` reward table; returns the arms played.

    The reference the switchback policy is tested against: it consumes the generator in
    the same order (one ``choice`` per round).
    """
    rewards = np.asarray(rewards, dtype=float)
    T, k = rewards.shape
    rng = check_generator(random_state)
    core = _EXP3IXCore(k, learning_rate, ix_gamma)
    arms = np.empty(T, dtype=np.intp)
    for t in range(T):
        p = core.probs()
        arm = core.draw(rng, p)
        core.update(ix_loss_estimate(arm, rewards[t, arm], p, ix_gamma))
        arms[t] = arm
    return arms


def ix_loss_estimate(arm, reward, p, ix_gamma):
    """EXP3-IX's estimate when only the played ``arm`` is observed, with reward ``reward``.

    ``loss_hat[arm] = (1 - reward) / (p[arm] + gamma)``, zero for the other arms
    (Neu, 2015): the switchback policy's estimator, ``reward`` being the round's mean
    outcome.
    """
    loss_hat = np.zeros(p.shape[0])
    loss_hat[arm] = (1.0 - reward) / (p[arm] + ix_gamma)
    return loss_hat


def ht_ix_loss_estimate(Z, Y, exposed, exposure, ix_gamma, n_arms):
    """The HT-IX estimate of every arm's loss, and the share of units exposed to each arm.

    ``loss_hat_i = (1/N) sum_u (1 - Y_u) 1[E_{u,i}] / (P(E_{u,i}) + gamma)``: a unit counts
    for the arm ``Z[u]`` when its ball is ``exposed`` (monochrome), weighted by the inverse
    of ``exposure = P(E_{u, Z_u})``, both of shape ``(L, L)``. With ``gamma = 0`` it is the
    Horvitz-Thompson estimator, unbiased for the exposure-mapped loss; ``gamma > 0`` is
    EXP3-IX's implicit exploration.

    Returns
    -------
    loss_hat : ndarray of shape (n_arms,)
    exposure_rate : ndarray of shape (n_arms,)
    """
    N = Z.size
    arm = Z[exposed]
    weights = (1.0 - Y[exposed]) / (exposure[exposed] + ix_gamma)
    exposure_rate = np.bincount(arm, minlength=n_arms) / N
    return np.bincount(arm, weights=weights, minlength=n_arms) / N, exposure_rate
