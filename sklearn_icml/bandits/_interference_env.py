"""InterferenceGridEnv: units on a grid whose outcomes depend on their neighbours' arms."""


import numpy as np
from scipy.signal import fftconvolve
from sklearn.utils._param_validation import StrOptions

from ..base import BaseEnvironment, BuiltAttribute
from ..utils import check_generator
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import (
    FINITE_NON_NEGATIVE_REAL,
    FINITE_POSITIVE_REAL,
    FINITE_REAL,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
)
from ..utils._params import store_params
from ._validation import check_below, index_at_least, validate_arguments


def _box_bounds(n, radius):
    """Start and end (exclusive) of the clipped window ``[x - r, x + r]`` of each ``x``."""
    x = np.arange(n)
    return np.maximum(x - radius, 0), np.minimum(x + radius, n - 1) + 1


def _box_sum(field, radius, bounds=None):
    """Sum of ``field`` over the Chebyshev ball ``B(u, radius)`` of every unit, clipped.

    ``field`` has shape ``(..., L0, L1)``; the ball is clipped to the grid (zero padding).
    Uses 2-D cumulative sums: exact for integer fields, O(L0 L1) whatever the radius.
    ``bounds`` may pass precomputed ``(_box_bounds(L0, r), _box_bounds(L1, r))``.
    """
    field = np.asarray(field)
    L0, L1 = field.shape[-2:]
    csum = np.zeros(field.shape[:-2] + (L0 + 1, L1 + 1), dtype=np.result_type(field, np.int64))
    csum[..., 1:, 1:] = field.cumsum(axis=-2).cumsum(axis=-1)
    if bounds is None:
        bounds = (_box_bounds(L0, radius), _box_bounds(L1, radius))
    (lo0, hi0), (lo1, hi1) = bounds
    # rows first, then columns: two gathers of 1-D differences
    rows = csum[..., hi0, :] - csum[..., lo0, :]
    return rows[..., hi1] - rows[..., lo1]


def _ball_size(grid_side, radius):
    """Number of units in the clipped ball ``B(u, radius)`` of every unit, shape (L, L)."""
    return _box_sum(np.ones((grid_side, grid_side), dtype=np.int64), radius)


def _power_law_kernel(grid_side, beta):
    """Weights ``(1 + d)^-beta`` for Chebyshev offsets ``d`` in ``[-(L-1), L-1]^2``."""
    offsets = np.arange(-(grid_side - 1), grid_side)
    dist = np.maximum(np.abs(offsets)[:, None], np.abs(offsets)[None, :])
    return (1.0 + dist) ** (-float(beta))


class _GridEnvironment(BaseEnvironment):
    """Round and assignment checks, ``step`` and the fixed-arm bookkeeping of a grid.

    A subclass has ``grid_side``, ``n_arms``, ``horizon`` and ``random_state`` parameters
    (constrained here; it adds its own to ``_parameter_constraints``) and writes
    ``_build``, ``_noise_free(t, Z)`` (outcomes of every unit, shape ``(L, L)``),
    ``_fixed_arm_rewards(t)`` (the ``k`` exact values ``r_t(i * 1)``) and, when it adds
    observation noise, ``_observe(Y)``.
    """

    _parameter_constraints = {
        "grid_side": [POSITIVE_INT],
        "n_arms": [POSITIVE_INT],
        "horizon": [POSITIVE_INT],
        "random_state": ["random_state"],
    }

    def _observe(self, Y):
        return Y

    def _check_round(self, method, t):
        validate_arguments(self, method, {"t": [index_at_least(0)]}, t=t)
        self._setup()
        return check_below(t, "t", self.horizon, "a round index below the horizon")

    def _check_assignment(self, Z):
        Z = np.asarray(Z)
        L = self.grid_side
        if Z.shape != (L, L):
            raise ValueError(
                f"Z must have shape ({L}, {L}) (one arm per unit). Got shape {Z.shape} instead."
            )
        if Z.dtype.kind == "f":
            if not np.all(np.isfinite(Z)) or not np.all(Z == np.round(Z)):
                raise ValueError(
                    f"Z must hold integer arm indices. Got non-integer values in {Z!r} instead."
                )
        elif Z.dtype.kind not in "iu":
            raise ValueError(f"Z must hold integer arm indices. Got dtype {Z.dtype} instead.")
        if Z.size and (Z.min() < 0 or Z.max() >= self.n_arms):
            raise ValueError(
                f"Z must hold arms in [0, {self.n_arms}). Got values in "
                f"[{Z.min()}, {Z.max()}] instead."
            )
        return Z.astype(np.intp, copy=False)

    def outcomes(self, t, Z):
        """Every unit's outcome in round ``t`` under the assignment ``Z``.

        Parameters
        ----------
        t : int
            Round index in ``[0, horizon)``.
        Z : array-like of shape (grid_side, grid_side)
            One arm in ``[0, n_arms)`` per unit.

        Returns
        -------
        Y : ndarray of shape (grid_side, grid_side)
            Outcomes in ``[0, 1]`` (observed: with observation noise where the environment
            has some).
        """
        return self.step(t, Z)[0]

    def step(self, t, Z):
        """Observed outcomes and the noise-free mean reward, computed once.

        Parameters
        ----------
        t : int
            Round index in ``[0, horizon)``.
        Z : array-like of shape (grid_side, grid_side)
            One arm in ``[0, n_arms)`` per unit.

        Returns
        -------
        Y : ndarray of shape (grid_side, grid_side)
            The observed outcomes, as :meth:`outcomes` returns them.
        mean_reward : float
            ``r_t(Z)``, the noise-free average outcome, as :meth:`mean_reward` returns it.
        """
        t = self._check_round("step", t)
        Z = self._check_assignment(Z)
        Y = self._noise_free(t, Z)
        return self._observe(Y), float(Y.mean())

    def mean_reward(self, t, Z):
        """The noise-free average outcome ``r_t(Z) = mean_u Y_{t,u}(Z)``.

        Parameters
        ----------
        t : int
            Round index in ``[0, horizon)``.
        Z : array-like of shape (grid_side, grid_side)
            One arm in ``[0, n_arms)`` per unit.

        Returns
        -------
        reward : float
        """
        t = self._check_round("mean_reward", t)
        Z = self._check_assignment(Z)
        return float(self._noise_free(t, Z).mean())

    def fixed_arm_rewards(self, t):
        """Exact rewards ``r_t(i * 1)`` of the assignments giving every unit arm ``i``.

        Parameters
        ----------
        t : int
            Round index in ``[0, horizon)``.

        Returns
        -------
        rewards : ndarray of shape (n_arms,)
        """
        t = self._check_round("fixed_arm_rewards", t)
        return np.array(self._fixed_arm_rewards(t), dtype=float)

    def all_fixed_arm_rewards(self):
        """``fixed_arm_rewards(t)`` of every round, shape ``(horizon, n_arms)``."""
        self._setup()
        return np.array([self.fixed_arm_rewards(t) for t in range(self.horizon)])

    def hindsight_best_arm(self):
        """The arm ``i`` maximising ``sum_t r_t(i * 1)``, the regret's benchmark.

        Returns
        -------
        arm : int
        """
        return int(np.argmax(self.all_fixed_arm_rewards().sum(axis=0)))


class InterferenceGridEnv(_GridEnvironment):
    """Units on an ``L x L`` grid whose outcomes depend on the arms around them.

    Unit ``u`` at ``(x_u, y_u)`` has, in round ``t`` under the assignment ``Z`` (one arm per
    unit), the outcome

    ``Y_{t,u}(Z) = b_{t,u} + sum_i theta_{t,i} * f_{u,i}(Z)``,

    with a drifting base ``b_{t,u} = base_level + base_amplitude * sin(2 pi t / 50 + phi_u)``
    (phases ``phi_u ~ U(0, 2 pi)`` drawn once) and ``f_{u,i}(Z)`` the share of arm ``i``
    around ``u``: over the Chebyshev ball ``B(u, kappa)`` (``interference="neighborhood"``),
    or over all units with weights ``(1 + d)^-beta`` (``interference="power_law"``). The
    environment knows its noise-free outcome functions, so it gives the exact rewards
    ``fixed_arm_rewards(t)`` of the fixed-arm assignments that regret is measured against.

    The parameters are stored as given and checked at first use (any method, or reading
    ``theta_``, ``phases_`` or ``n_units_``); the check proves that outcomes stay in
    ``[0, 1]``, and the phases are then drawn from ``random_state``.

    Parameters
    ----------
    grid_side : int
        Side ``L`` of the grid; there are ``N = L**2`` units.
    n_arms : int
        Number of arms ``k``.
    horizon : int
        Number of rounds ``T``.
    interference : {"neighborhood", "power_law"}, default="neighborhood"
        How outcomes depend on other units' arms.
    kappa : int, default=1
        Radius of the neighbourhood for ``"neighborhood"`` (``0``: no interference).
    beta : float, default=2.0
        Decay exponent for ``"power_law"``; must be ``> 0``.
    theta : array-like of shape (n_arms,) or (horizon, n_arms), default=None
        Arm effects; a ``(horizon, n_arms)`` array lets them switch across rounds (an
        oblivious adversary). ``None`` uses ``np.linspace(0.5, 0.3, n_arms)``.
    base_amplitude : float, default=0.1
        Amplitude of the base's oscillation.
    base_level : float, default=0.3
        Mean of the base outcome.
    noise_std : float, default=0.0
        Standard deviation of Gaussian observation noise added (then clipped to
        ``[0, 1]``) by :meth:`outcomes`; regret always uses the noise-free outcomes.
    random_state : int, RandomState instance or None, default=None
        Seeds the phases (through :func:`~sklearn_icml.utils.check_generator`: an int ``s``
        gives ``np.random.default_rng(s)``) and then the noise.

    Attributes
    ----------
    n_units_ : int
        ``grid_side ** 2``.
    theta_ : ndarray of shape (horizon, n_arms)
        The arm effects of every round.
    phases_ : ndarray of shape (grid_side, grid_side)
        The phases ``phi_u``.

    See Also
    --------
    SwitchbackEXP3IX : all units get the same arm each round.
    ClusterRandomizedEXP3IX : cells of a random partition get independent arms.

    Notes
    -----
    The paper [1]_ states its regret bounds for any outcome functions in ``[0, 1]`` chosen
    by an oblivious adversary, under neighbourhood interference and, more generally,
    interference that decays with distance. This environment is one concrete instance of
    that setting, chosen by this library so that the exact fixed-arm rewards are known:
    outcomes linear in the local shares of the arms, a base that drifts with period 50
    rounds, ``"neighborhood"`` for the first model and the power-law kernel
    ``(1 + d)^-beta`` for the second.

    References
    ----------
    .. [1] S. Jia, P. Frazier, N. Kallus, "Multi-Armed Bandits with Interference: Bridging
       Causal Inference and Adversarial Bandits", ICML 2025, arXiv:2402.01845.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.bandits import InterferenceGridEnv
    >>> env = InterferenceGridEnv(grid_side=4, n_arms=3, horizon=10, theta=[0.5, 0.4, 0.3],
    ...                           random_state=0)
    >>> Z = np.zeros((4, 4), dtype=int)
    >>> Z[:, 2:] = 1
    >>> env.outcomes(0, Z).shape
    (4, 4)
    >>> rewards = env.fixed_arm_rewards(0)
    >>> bool(np.isclose(rewards[0] - rewards[1], 0.1))
    True
    >>> bool(rewards[1] < env.mean_reward(0, Z) < rewards[0])
    True
    """

    _parameter_constraints = {
        **_GridEnvironment._parameter_constraints,
        "interference": [StrOptions({"neighborhood", "power_law"})],
        "kappa": [NON_NEGATIVE_INT],
        "beta": [FINITE_POSITIVE_REAL],
        "theta": ["array-like", None],
        "base_amplitude": [FINITE_NON_NEGATIVE_REAL],
        "base_level": [FINITE_REAL],
        "noise_std": [FINITE_NON_NEGATIVE_REAL],
    }

    n_units_ = BuiltAttribute()
    theta_ = BuiltAttribute()
    phases_ = BuiltAttribute()

    @keyword_only_after(1)
    def __init__(
        self,
        *,
        grid_side,
        n_arms,
        horizon,
        interference="neighborhood",
        kappa=1,
        beta=2.0,
        theta=None,
        base_amplitude=0.1,
        base_level=0.3,
        noise_std=0.0,
        random_state=None,
    ):
        store_params(self, locals())

    # ------------------------------------------------------------------ validation
    def _build(self):
        """Derive ``theta_`` (checking the outcome range), draw the phases, set up sums."""
        L, k, T = self.grid_side, self.n_arms, self.horizon
        amplitude, level = float(self.base_amplitude), float(self.base_level)
        if self.theta is None:
            theta = np.linspace(0.5, 0.3, k) if k > 1 else np.array([0.5])
        else:
            theta = np.array(self.theta, dtype=float)  # a copy: never alias the user's array
            if theta.shape not in ((k,), (T, k)):
                raise ValueError(
                    f"theta must have shape ({k},) or ({T}, {k}) for n_arms={k}, "
                    f"horizon={T}. Got shape {theta.shape} instead."
                )
            if not np.all(np.isfinite(theta)):
                raise ValueError(f"theta must be finite. Got {self.theta!r} instead.")
        theta = np.broadcast_to(theta, (T, k)).copy()
        # f_{u,.} is a probability vector, so Y lies in [b + min_i theta_i, b + max_i theta_i].
        low = level - amplitude + theta.min()
        high = level + amplitude + theta.max()
        if low < 0.0 or high > 1.0:
            raise ValueError(
                "theta, base_level and base_amplitude must keep every outcome in [0, 1]; "
                f"outcomes can reach [{low:.4g}, {high:.4g}] (base_level={level!r}, "
                f"base_amplitude={amplitude!r}, theta in [{theta.min():.4g}, "
                f"{theta.max():.4g}]). Got theta={self.theta!r} instead."
            )
        self._n_units_ = L * L
        self._theta_ = theta
        self._rng = check_generator(self.random_state)
        self._phases_ = self._rng.uniform(0.0, 2.0 * np.pi, size=(L, L))
        self._last_base = (None, None, None)
        self._arms = np.arange(k)[:, None, None]
        if self.interference == "neighborhood":
            self._ball = _ball_size(L, self.kappa).astype(float)
            bounds = _box_bounds(L, self.kappa)
            self._bounds = (bounds, bounds)
        else:
            self._kernel = _power_law_kernel(L, self.beta)

    # ------------------------------------------------------------------ outcome model
    def _base(self, t):
        """``b_t`` for every unit; the last round's is kept (step then fixed_arm_rewards)."""
        if self._last_base[0] != t:
            base = self.base_level + self.base_amplitude * np.sin(
                2.0 * np.pi * t / 50.0 + self._phases_
            )
            self._last_base = (t, base, None)
        return self._last_base[1]

    def _shares(self, Z):
        """``f_{u,i}(Z)`` for every arm and unit, shape (k, L, L); exact for constant ``Z``."""
        onehot = Z[None, :, :] == self._arms
        if self.interference == "neighborhood":
            # integer counts over the clipped ball: share is exactly 1 or 0 when the ball is
            # monochrome, so r_t(i * 1) is reproduced to the last bit
            counts = _box_sum(onehot.astype(np.int64), self.kappa, self._bounds)
            return counts / self._ball
        weighted = fftconvolve(
            onehot.astype(float), self._kernel[None], mode="same", axes=(1, 2)
        )
        weighted = np.maximum(weighted, 0.0)  # FFT round-off only
        return weighted / weighted.sum(axis=0)

    def _noise_free(self, t, Z):
        """Noise-free outcomes ``Y_t(Z)``; ``t`` and ``Z`` already checked."""
        shares = self._shares(Z)
        effect = (self._theta_[t] @ shares.reshape(self.n_arms, -1)).reshape(Z.shape)
        return self._base(t) + effect

    def _observe(self, Y):
        if self.noise_std > 0:
            Y = np.clip(Y + self._rng.normal(0.0, self.noise_std, size=Y.shape), 0.0, 1.0)
        return Y

    def _fixed_arm_rewards(self, t):
        # f_{u,i}(i * 1) = 1 for every unit, in both interference models; computed as the
        # mean of b_t + theta_i so that it equals mean_reward(t, i * 1) exactly
        base = self._base(t)
        if self._last_base[2] is None:
            fixed = np.array([(base + theta).mean() for theta in self._theta_[t]])
            self._last_base = (t, base, fixed)
        return self._last_base[2]
