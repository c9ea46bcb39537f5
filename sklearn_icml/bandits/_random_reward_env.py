"""RandomRewardGridEnv: random unit-level rewards, felt through the arms of the neighbours."""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval

from ..base import BuiltAttribute
from ..utils import check_generator, spawn_seeds
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import FINITE_NON_NEGATIVE_REAL, NON_NEGATIVE_INT
from ..utils._params import store_params
from ._interference_env import _box_bounds, _GridEnvironment


def _decay_weights(radius, decay):
    """``w(d) = (1 + d)^-decay`` for ``d = 0..radius`` (zero beyond)."""
    return (1.0 + np.arange(radius + 1)) ** (-float(decay))


class RandomRewardGridEnv(_GridEnvironment):
    """The paper's experiment: units on an ``L x L`` grid with random unit-level rewards.

    In round ``t`` every unit ``u`` and arm ``i`` has a random reward

    ``R_{t,u,i} = arm_means[i] + reward_spread * (2 U_{t,u,i} - 1)``, ``U ~ U(0, 1)``

    independent over rounds, units and arms. Under the assignment ``Z`` the unit's outcome
    averages its own rewards over the arms around it, weighted by distance:

    ``Y_{t,u}(Z) = sum_v w(d(u, v)) R_{t,u,Z_v} / sum_v w(d(u, v))``,

    with the Chebyshev distance ``d`` and ``w(d) = (1 + d)^-decay`` for
    ``d <= interference_radius``, zero beyond (the sums run over the units of the grid).
    A unit whose whole ball ``B(u, interference_radius)`` has arm ``i`` gets exactly
    ``R_{t,u,i}``, so the fixed-arm rewards are ``r_t(i * 1) = mean_u R_{t,u,i}`` and the
    HT-IX estimator with ``exposure_radius = interference_radius`` is unbiased for them.
    Outcomes lie in ``[0, 1]`` whenever the rewards do (checked at first use).

    The parameters are stored as given and checked at first use (any method, or reading
    ``arm_means_`` or ``n_units_``).

    Parameters
    ----------
    grid_side : int
        Side ``L`` of the grid; there are ``N = L**2`` units (the paper's experiments take
        ``N = T**2`` and ``N = T**3``).
    n_arms : int
        Number of arms ``k`` (the paper's experiments have 2).
    horizon : int
        Number of rounds ``T``.
    arm_means : array-like of shape (n_arms,), default=None
        Mean reward of every arm; ``None`` uses ``np.linspace(0.6, 0.4, n_arms)``
        (``(0.6, 0.4)`` for two arms).
    reward_spread : float, default=0.3
        Half-width of the uniform reward around its mean, in ``[0, 0.5]``.
    interference_radius : int, default=1
        ``kappa``: units farther apart than this do not interfere (``0``: none at all).
    decay : float, default=2.0
        Exponent of the decay ``(1 + d)^-decay`` of a neighbour's weight; ``0`` weighs
        the whole ball equally.
    random_state : int, RandomState instance or None, default=None
        Split by :func:`~sklearn_icml.utils.spawn_seeds` into one seed per round; round
        ``t`` draws its ``(n_arms, L, L)`` rewards from ``np.random.default_rng(seed_t)``,
        so any round can be replayed in any order.

    Attributes
    ----------
    n_units_ : int
        ``grid_side ** 2``.
    arm_means_ : ndarray of shape (n_arms,)
        The arms' mean rewards.

    See Also
    --------
    InterferenceGridEnv : arm effects shared by all units, a drifting base.
    SwitchbackEXP3IX, ClusterRandomizedEXP3IX : the policies.

    Notes
    -----
    The paper [1]_ runs 2 arms on a ``sqrt(N) x sqrt(N)`` lattice with a random reward
    per unit and round. The reward law (uniform around each arm's mean) and the
    distance-weighted average over a ball of radius ``interference_radius`` are this
    library's concrete choices of that setting: the exact fixed-arm rewards are then
    known, and the interference decays with distance and vanishes beyond ``kappa``, the
    ``kappa``-neighbourhood case of the paper's corollaries.

    References
    ----------
    .. [1] S. Jia, P. Frazier, N. Kallus, "Multi-Armed Bandits with Interference: Bridging
       Causal Inference and Adversarial Bandits", ICML 2025, arXiv:2402.01845.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.bandits import RandomRewardGridEnv
    >>> env = RandomRewardGridEnv(grid_side=10, n_arms=2, horizon=20, random_state=0)
    >>> Z = np.zeros((10, 10), dtype=int)
    >>> Z[:, 5:] = 1
    >>> Y, reward = env.step(0, Z)
    >>> Y.shape, bool(0.0 <= Y.min() <= Y.max() <= 1.0)
    ((10, 10), True)
    >>> env.fixed_arm_rewards(0).round(1)  # r_t(i * 1) = mean_u R_{t,u,i}, near arm_means
    array([0.6, 0.4])
    >>> bool(env.fixed_arm_rewards(0)[1] < reward < env.fixed_arm_rewards(0)[0])
    True
    """

    _parameter_constraints = {
        **_GridEnvironment._parameter_constraints,
        "arm_means": ["array-like", None],
        "reward_spread": [Interval(numbers.Real, 0, 0.5, closed="both")],
        "interference_radius": [NON_NEGATIVE_INT],
        "decay": [FINITE_NON_NEGATIVE_REAL],
    }

    n_units_ = BuiltAttribute()
    arm_means_ = BuiltAttribute()

    @keyword_only_after(1)
    def __init__(
        self,
        *,
        grid_side,
        n_arms,
        horizon,
        arm_means=None,
        reward_spread=0.3,
        interference_radius=1,
        decay=2.0,
        random_state=None,
    ):
        store_params(self, locals())

    def _build(self):
        """Check the reward range, split the seed into round seeds, set up the kernel."""
        L, k, T = self.grid_side, self.n_arms, self.horizon
        if self.arm_means is None:
            means = np.linspace(0.6, 0.4, k) if k > 1 else np.array([0.5])
        else:
            means = np.array(self.arm_means, dtype=float)  # a copy of the user's array
            if means.shape != (k,) or not np.all(np.isfinite(means)):
                raise ValueError(
                    f"arm_means must hold {k} finite numbers (one per arm). Got "
                    f"{self.arm_means!r} instead."
                )
        spread = float(self.reward_spread)
        if means.min() - spread < 0.0 or means.max() + spread > 1.0:
            raise ValueError(
                "arm_means and reward_spread must keep every reward in [0, 1]; rewards can "
                f"reach [{means.min() - spread:.4g}, {means.max() + spread:.4g}] "
                f"(reward_spread={spread!r}). Got arm_means={self.arm_means!r} instead."
            )
        self._n_units_ = L * L
        self._arm_means_ = means
        self._round_seeds = spawn_seeds(self.random_state, T)
        self._arms = np.arange(k)[:, None, None]
        kappa = int(self.interference_radius)
        w = _decay_weights(kappa, self.decay)
        # nested boxes: sum_d (w(d) - w(d + 1)) * box_d gives every unit at distance d the
        # weight w(d), with w(kappa + 1) = 0
        self._box_weights = w - np.append(w[1:], 0.0)
        self._bounds = [(_box_bounds(L, d), _box_bounds(L, d)) for d in range(kappa + 1)]
        self._normaliser = self._weighted_sum(np.ones((L, L), dtype=np.int64))
        self._last = (None, None)

    def _weighted_sum(self, field):
        """``sum_v w(d(u, v)) field[v]`` over the grid for every unit ``u``.

        ``field`` has shape ``(..., L, L)``; one 2-D cumulative sum serves every box.
        """
        L = self.grid_side
        csum = np.zeros(field.shape[:-2] + (L + 1, L + 1), dtype=np.int64)
        csum[..., 1:, 1:] = field.cumsum(axis=-2).cumsum(axis=-1)
        total = self._box_weights[0] * field
        for c, ((lo0, hi0), (lo1, hi1)) in zip(self._box_weights[1:], self._bounds[1:]):
            rows = csum[..., hi0, :] - csum[..., lo0, :]
            total = total + c * (rows[..., hi1] - rows[..., lo1])
        return total

    def rewards(self, t):
        """The random rewards ``R_{t,u,i}`` of round ``t``, shape ``(n_arms, L, L)``.

        Parameters
        ----------
        t : int
            Round index in ``[0, horizon)``.

        Returns
        -------
        R : ndarray of shape (n_arms, grid_side, grid_side)
        """
        t = self._check_round("rewards", t)
        return self._rewards(t).copy()

    def _rewards(self, t):
        if self._last[0] != t:
            rng = check_generator(self._round_seeds[t])
            L, k = self.grid_side, self.n_arms
            U = rng.random((k, L, L))
            R = self._arm_means_[:, None, None] + self.reward_spread * (2.0 * U - 1.0)
            self._last = (t, R)
        return self._last[1]

    def _noise_free(self, t, Z):
        """Outcomes under ``Z`` of shape ``(..., L, L)`` (a batch of assignments at once)."""
        onehot = (Z[..., None, :, :] == self._arms).astype(np.int64)
        shares = self._weighted_sum(onehot) / self._normaliser
        return np.einsum("...kxy,kxy->...xy", shares, self._rewards(t))

    def _fixed_arm_rewards(self, t):
        # the share of arm i is exactly 1 under i * 1, so Y = R_{t,.,i}: the same floats as
        # mean_reward(t, i * 1)
        return self._rewards(t).mean(axis=(1, 2))
