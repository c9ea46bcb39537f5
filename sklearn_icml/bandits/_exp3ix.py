"""EXP3-IX under interference: switchback and cluster-randomised (HT-IX) policies."""

import dataclasses
import numbers

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, clone
from sklearn.utils._param_validation import Interval

from ._interference_env import _check_generator, _check_int, _check_real

# ---------------------------------------------------------------------------- EXP3-IX core


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
    rng = _check_generator(random_state)
    core = _EXP3IXCore(k, learning_rate, ix_gamma)
    arms = np.empty(T, dtype=np.intp)
    for t in range(T):
        p = core.probs()
        arm = core.draw(rng, p)
        loss_hat = np.zeros(k)
        loss_hat[arm] = (1.0 - rewards[t, arm]) / (p[arm] + ix_gamma)
        core.update(loss_hat)
        arms[t] = arm
    return arms


# ---------------------------------------------------------------------------- partitions


def _check_cell_size(cell_size, radius):
    cell_size = _check_real(cell_size, "cell_size")
    if cell_size < 1:
        raise ValueError(
            "cell_size must be >= 1 (a cell narrower than a unit leaves empty cells); "
            f"got {cell_size!r} instead."
        )
    if cell_size <= 2 * radius:
        raise ValueError(
            f"cell_size must be > 2 * exposure_radius = {2 * radius} so that a ball spans at "
            f"most 2 cells along each axis; got {cell_size!r} instead."
        )
    return cell_size


def _cell_index(grid_side, cell_size, shift):
    """Cell of each coordinate ``0..L-1`` under the shift: ``floor((x + s) / cell_size)``."""
    return np.floor((np.arange(grid_side) + shift) / cell_size).astype(np.intp)


def _straddle_fraction(grid_side, radius, cell_size):
    """``a(x) = w(x) / cell_size``: chance that a cell border falls inside the clipped ball."""
    x = np.arange(grid_side)
    width = np.minimum(grid_side - 1, x + radius) - np.maximum(0, x - radius)
    return width / cell_size


def _realised_cell_count(grid_side, radius, cell_size, shift):
    """Number of cells (1, 2 or 4) that the ball ``B(u, radius)`` touches, shape (L, L)."""
    counts = []
    for s in shift:
        cells = _cell_index(grid_side, cell_size, s)
        x = np.arange(grid_side)
        lo = np.maximum(0, x - radius)
        hi = np.minimum(grid_side - 1, x + radius)
        counts.append(1 + (cells[hi] != cells[lo]).astype(np.intp))
    return counts[0][:, None] * counts[1][None, :]


def _window_indices(n, radius):
    """Index arrays ``min(x + d, n - 1)`` and ``max(x - d, 0)`` for ``d = 1..radius``."""
    x = np.arange(n)
    return [idx for d in range(1, radius + 1)
            for idx in (np.minimum(x + d, n - 1), np.maximum(x - d, 0))]


def _window_min_max(low, high, indices, axis):
    """Running min of ``low`` and max of ``high`` over the clipped window along ``axis``."""
    out_low, out_high = low.copy(), high.copy()
    for idx in indices:
        np.minimum(out_low, np.take(low, idx, axis=axis), out=out_low)
        np.maximum(out_high, np.take(high, idx, axis=axis), out=out_high)
    return out_low, out_high


def _monochrome_ball(Z, radius, indices=None):
    """``True`` where every unit of the clipped Chebyshev ball ``B(u, radius)`` has ``Z[u]``.

    Exact integer comparison of the ball's minimum and maximum arm (separable filters).
    ``indices`` may pass precomputed ``(_window_indices(L0, r), _window_indices(L1, r))``.
    """
    if radius == 0:
        return np.ones(Z.shape, dtype=bool)
    if indices is None:
        indices = (_window_indices(Z.shape[0], radius), _window_indices(Z.shape[1], radius))
    low, high = _window_min_max(Z, Z, indices[0], 0)
    low, high = _window_min_max(low, high, indices[1], 1)
    return low == high


def _mixture_weights(grid_side, radius, cell_size):
    """Weights of ``p``, ``p**2``, ``p**4`` in the exposure probability, each (L, L)."""
    ax = _straddle_fraction(grid_side, radius, cell_size)
    one = np.outer(1 - ax, 1 - ax)
    two = np.outer(1 - ax, ax) + np.outer(ax, 1 - ax)
    four = np.outer(ax, ax)
    return one, two, four


def exposure_probability(p, grid_side, radius, cell_size, *, shift=None):
    """Probability that the whole ball ``B(u, radius)`` of each unit gets arm ``i``.

    Under the cluster-randomised design the grid is cut into square cells of side
    ``cell_size`` shifted by ``(s_x, s_y) ~ U[0, cell_size)^2`` and each cell draws an arm
    from ``p``. A unit is *exposed* to arm ``i`` when every unit within Chebyshev distance
    ``radius`` (clipped to the grid) has arm ``i``. With ``a_x(u) = w_x(u) / cell_size``,
    ``w_x(u) = min(L-1, x_u + r) - max(0, x_u - r)``, the ball spans 2 cells along ``x``
    with probability ``a_x(u)``, so

    ``P(E_{u,i}) = sum_{c_x, c_y in {1, 2}} P(c_x) P(c_y) p_i^(c_x c_y)``.

    Parameters
    ----------
    p : array-like of shape (n_arms,)
        Arm probabilities of the cells (non-negative, summing to 1).
    grid_side : int
        Side ``L`` of the grid.
    radius : int
        Exposure radius ``r >= 0``.
    cell_size : float
        Cell side ``l``; must be ``>= 1`` and ``> 2 * radius``.
    shift : array-like of shape (2,), default=None
        A fixed partition's shift: then the probability is ``p_i^c(u)`` with ``c(u)`` the
        number of cells that the ball actually touches.

    Returns
    -------
    prob : ndarray of shape (n_arms, grid_side, grid_side)

    See Also
    --------
    ClusterRandomizedEXP3IX : the policy whose HT-IX estimator divides by this.

    References
    ----------
    .. [1] S. Jia, P. Frazier, N. Kallus, "Multi-Armed Bandits with Interference: Bridging
       Causal Inference and Adversarial Bandits", ICML 2025, arXiv:2402.01845.

    Examples
    --------
    >>> from sklearn_icml.bandits import exposure_probability
    >>> prob = exposure_probability([0.5, 0.5], grid_side=12, radius=1, cell_size=6)
    >>> prob.shape
    (2, 12, 12)
    >>> float(prob[0, 0, 0])  # corner: the ball is 1 unit wide in each axis
    0.4184...
    >>> float(prob[0, 5, 5])  # interior: a = 2/6 in each axis
    0.3402...
    """
    p = np.array(p, dtype=float)
    if p.ndim != 1 or p.size < 1:
        raise ValueError(f"p must be a non-empty 1-D array; got shape {p.shape} instead.")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ValueError(
            f"p must hold non-negative probabilities summing to 1; got {p!r} instead."
        )
    L = _check_int(grid_side, "grid_side", 1)
    r = _check_int(radius, "radius", 0)
    cell_size = _check_cell_size(cell_size, r)
    pp = p[:, None, None]
    if shift is not None:
        shift = np.asarray(shift, dtype=float)
        if shift.shape != (2,) or np.any(shift < 0) or np.any(shift >= cell_size):
            raise ValueError(
                f"shift must be 2 numbers in [0, cell_size={cell_size!r}); "
                f"got {shift!r} instead."
            )
        return pp ** _realised_cell_count(L, r, cell_size, shift)[None]
    one, two, four = _mixture_weights(L, r, cell_size)
    return one[None] * pp + two[None] * pp**2 + four[None] * pp**4


# ---------------------------------------------------------------------------- results


@dataclasses.dataclass(frozen=True)
class InterferenceBanditResult:
    """What :meth:`SwitchbackEXP3IX.run` / :meth:`ClusterRandomizedEXP3IX.run` return.

    Attributes
    ----------
    regret : float
        ``max_i sum_t r_t(i * 1) - sum_t r_t(Z_t)`` over the horizon (noise-free).
    cumulative_regret : ndarray of shape (horizon,)
        Regret of the first ``t + 1`` rounds against the best fixed arm of those rounds;
        its last entry is ``regret``.
    rewards : ndarray of shape (horizon,)
        Noise-free average reward ``r_t(Z_t)`` of each round.
    fixed_arm_rewards : ndarray of shape (horizon, n_arms)
        ``r_t(i * 1)`` of every round and arm.
    probs : ndarray of shape (horizon, n_arms)
        The EXP3-IX distribution ``p_t`` used in each round.
    best_arm : int
        The hindsight-best fixed arm.
    policy : str
        Class name of the policy that produced it.
    """

    regret: float
    cumulative_regret: np.ndarray
    rewards: np.ndarray
    fixed_arm_rewards: np.ndarray
    probs: np.ndarray
    best_arm: int
    policy: str


def _regret_path(rewards, fixed_arm_rewards):
    best = np.cumsum(fixed_arm_rewards, axis=0).max(axis=1)
    return best - np.cumsum(rewards)


# ---------------------------------------------------------------------------- policies


class _BaseInterferenceEXP3IX(BaseEstimator):
    """Round bookkeeping, input checks and ``run`` shared by the two policies.

    A subclass writes ``_start_extra``, ``_assign`` (the round's ``Z`` from ``p``) and
    ``_loss_estimate`` (the ``k`` loss estimates from ``Z`` and ``Y``).
    """

    _parameter_constraints = {
        "n_arms": [Interval(numbers.Integral, 1, None, closed="left")],
        "horizon": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "ix_gamma": [Interval(numbers.Real, 0, None, closed="left"), None],
        "random_state": [
            Interval(numbers.Integral, 0, None, closed="left"),
            np.random.Generator,
            np.random.RandomState,
            None,
        ],
    }

    # -- set-up
    def _start(self, grid_side):
        self._validate_params()
        L = _check_int(grid_side, "grid_side", 1)
        k, T = self.n_arms, self.horizon
        self.grid_side_ = L
        self.learning_rate_ = (
            _default_learning_rate(k, T) if self.learning_rate is None
            else float(self.learning_rate)
        )
        self.ix_gamma_ = self.learning_rate_ / 2.0 if self.ix_gamma is None else float(
            self.ix_gamma
        )
        self._rng = _check_generator(self.random_state)
        self._core = _EXP3IXCore(k, self.learning_rate_, self.ix_gamma_)
        self._probs = np.zeros((T, k))
        self._loss_hat = np.zeros((T, k))
        self._observed = np.zeros(T)
        self._pending = None
        self.n_rounds_ = 0
        self._start_extra()

    def _start_extra(self):
        pass

    # -- the bandit API
    def select(self, t, grid_side):
        """Draw the assignment of round ``t``.

        Round 0 (re)starts the policy: weights at zero, generator re-seeded from
        ``random_state``. Later rounds must follow in order, each after the previous
        round's :meth:`update`.

        Parameters
        ----------
        t : int
            Round index: 0, or the number of rounds already updated.
        grid_side : int
            Side ``L`` of the grid (fixed at round 0).

        Returns
        -------
        Z : ndarray of shape (grid_side, grid_side)
            One arm per unit.
        """
        if isinstance(t, bool) or not isinstance(t, numbers.Integral):
            raise ValueError(f"t must be an integer round index; got {t!r} instead.")
        if t == 0:
            self._start(grid_side)
        else:
            if not hasattr(self, "_core"):
                raise ValueError(f"select must start at round t=0; got t={t!r} instead.")
            if grid_side != self.grid_side_:
                raise ValueError(
                    f"grid_side must stay {self.grid_side_} (set at round 0); "
                    f"got {grid_side!r} instead."
                )
            if t != self.n_rounds_:
                raise ValueError(
                    f"rounds must be played in order: the next round is {self.n_rounds_}; "
                    f"got t={t!r} instead."
                )
        if t >= self.horizon:
            raise ValueError(
                f"t must be < horizon={self.horizon}; got t={t!r} instead."
            )
        p = self._core.probs()
        Z = self._assign(t, p)
        self._pending = (int(t), Z, p)
        return Z.copy()

    def update(self, t, Z, Y):
        """Feed back the outcomes of round ``t``.

        Parameters
        ----------
        t : int
            The round of the last :meth:`select`.
        Z : array-like of shape (grid_side, grid_side)
            The assignment that :meth:`select` returned for round ``t``.
        Y : array-like of shape (grid_side, grid_side)
            Every unit's observed outcome, in ``[0, 1]`` (not clipped here).

        Returns
        -------
        self : object
        """
        pending = getattr(self, "_pending", None)
        if pending is None or pending[0] != t:
            last = None if pending is None else pending[0]
            raise ValueError(
                f"update must follow select for the same round, once: the pending round is "
                f"{last!r}; got t={t!r} instead."
            )
        _, Z_sel, p = pending
        L = self.grid_side_
        Z = np.asarray(Z)
        if Z.shape != Z_sel.shape or not np.array_equal(Z, Z_sel):
            self._diagnose_assignment(Z, t)
        Y = np.asarray(Y, dtype=float)
        if Y.shape != (L, L):
            raise ValueError(f"Y must have shape ({L}, {L}); got shape {Y.shape} instead.")
        low, high = Y.min(), Y.max()
        if not (low >= 0.0 and high <= 1.0):  # NaN fails both comparisons
            if not np.all(np.isfinite(Y)):
                raise ValueError("Y contains NaN or infinity; every outcome must be finite.")
            raise ValueError(
                f"Y must hold outcomes in [0, 1]; got values in [{low!r}, {high!r}] instead."
            )
        loss_hat = self._loss_estimate(t, Z_sel, Y, p)
        if not np.all(np.isfinite(loss_hat)):
            raise ValueError(
                "the loss estimate is not finite (an exposure probability underflowed with "
                f"ix_gamma={self.ix_gamma_!r}); use ix_gamma > 0."
            )
        self._core.update(loss_hat)
        self._probs[t] = p
        self._loss_hat[t] = loss_hat
        self._observed[t] = Y.mean()
        self._pending = None
        self.n_rounds_ = t + 1
        return self

    def _diagnose_assignment(self, Z, t):
        """Raise the most telling error for a ``Z`` that is not the selected assignment."""
        L, k = self.grid_side_, self.n_arms
        if Z.shape != (L, L):
            raise ValueError(f"Z must have shape ({L}, {L}); got shape {Z.shape} instead.")
        if Z.dtype.kind not in "iuf" or not np.all(np.isfinite(Z)):
            raise ValueError(f"Z must hold integer arm indices; got dtype {Z.dtype} instead.")
        if Z.min() < 0 or Z.max() >= k:
            raise ValueError(
                f"Z must hold arms in [0, {k}); got values in [{Z.min()}, {Z.max()}] instead."
            )
        raise ValueError(
            f"Z must be the assignment that select returned for round {t}; got a "
            "different assignment instead."
        )

    @property
    def probs_(self):
        """ndarray of shape (n_rounds_, n_arms): the distribution ``p_t`` of each round."""
        return self._probs[: self.n_rounds_]

    @property
    def loss_estimates_(self):
        """ndarray of shape (n_rounds_, n_arms): the loss estimates fed to EXP3-IX."""
        return self._loss_hat[: self.n_rounds_]

    @property
    def observed_rewards_(self):
        """ndarray of shape (n_rounds_,): the mean observed outcome of each round."""
        return self._observed[: self.n_rounds_]

    @property
    def log_weights_(self):
        """ndarray of shape (n_arms,): the current (centred) EXP3-IX log-weights."""
        return self._core.log_weights.copy()

    def run(self, env):
        """Play ``env.horizon`` rounds of ``select`` / ``env.step`` / ``update``.

        Parameters
        ----------
        env : InterferenceGridEnv
            Any object with ``grid_side``, ``n_arms``, ``horizon``, ``step(t, Z)`` returning
            ``(Y, noise-free mean reward)`` and ``fixed_arm_rewards(t)``.

        Returns
        -------
        result : InterferenceBanditResult
            The regret path and what produced it; the same figures are also stored as
            ``regret_``, ``cumulative_regret_``, ``rewards_``, ``best_arm_``.
        """
        self._validate_params()
        for name in ("grid_side", "n_arms", "horizon"):
            if not hasattr(env, name):
                raise TypeError(
                    f"env must be an InterferenceGridEnv-like object with a {name!r} "
                    f"attribute; got {type(env).__name__} instead."
                )
        if env.n_arms != self.n_arms:
            raise ValueError(
                f"env.n_arms must equal n_arms={self.n_arms}; got {env.n_arms!r} instead."
            )
        if env.horizon > self.horizon:
            raise ValueError(
                f"env.horizon must be <= horizon={self.horizon} (the policy is tuned for it); "
                f"got {env.horizon!r} instead."
            )
        T, L = env.horizon, env.grid_side
        rewards = np.empty(T)
        fixed = np.empty((T, self.n_arms))
        for t in range(T):
            Z = self.select(t, L)
            Y, rewards[t] = env.step(t, Z)
            fixed[t] = env.fixed_arm_rewards(t)
            self.update(t, Z, Y)
        path = _regret_path(rewards, fixed)
        self.rewards_ = rewards
        self.fixed_arm_rewards_ = fixed
        self.cumulative_regret_ = path
        self.regret_ = float(path[-1])
        self.best_arm_ = int(np.argmax(fixed.sum(axis=0)))
        return InterferenceBanditResult(
            regret=self.regret_,
            cumulative_regret=path,
            rewards=rewards,
            fixed_arm_rewards=fixed,
            probs=self.probs_.copy(),
            best_arm=self.best_arm_,
            policy=type(self).__name__,
        )

    def hindsight_best_arm_(self, env):
        """The arm with the largest total fixed-arm reward in ``env``."""
        return env.hindsight_best_arm()


class SwitchbackEXP3IX(_BaseInterferenceEXP3IX):
    """Switchback EXP3-IX: every unit gets the same arm, chosen afresh each round.

    Each round ``I_t ~ p_t`` (one ``rng.choice(k, p=p_t)``), ``Z_t = I_t`` for every unit,
    and EXP3-IX is fed ``loss_hat_{I_t} = (1 - mean_u Y_{t,u}) / (p_{t,I_t} + gamma)``. It is
    exactly EXP3-IX on the ``k``-armed sequence ``r_t(i * 1)``, so its expected regret is
    ``O~(sqrt(k T))`` — but its realised regret fluctuates like a single bandit's, however
    many units there are.

    Not an estimator: it subclasses :class:`~sklearn.base.BaseEstimator` only for
    ``get_params``/``clone``; the work is in ``select``/``update`` or ``run(env)``.

    Parameters
    ----------
    n_arms : int
        Number of arms ``k``.
    horizon : int
        Number of rounds ``T`` the learning rate is tuned for.
    learning_rate : float, default=None
        EXP3-IX step ``eta``; ``None`` uses ``sqrt(2 ln k / (k T))``.
    ix_gamma : float, default=None
        Implicit-exploration term ``gamma >= 0`` in the estimator's denominator; ``None``
        uses ``learning_rate / 2``.
    random_state : int, Generator, RandomState or None, default=None
        Seeds ``np.random.default_rng`` at round 0.

    Attributes
    ----------
    learning_rate_, ix_gamma_ : float
        The step and implicit-exploration term in use.
    n_rounds_ : int
        Rounds updated so far.
    probs_ : ndarray of shape (n_rounds_, n_arms)
        ``p_t`` of each round.
    loss_estimates_ : ndarray of shape (n_rounds_, n_arms)
        The loss estimates fed to EXP3-IX.
    arms_ : ndarray of shape (n_rounds_,)
        The arm every unit got in each round.
    log_weights_ : ndarray of shape (n_arms,)
        Current centred log-weights.
    regret_ : float
        After :meth:`run`: the regret ``max_i sum_t r_t(i * 1) - sum_t r_t(Z_t)``.
    cumulative_regret_ : ndarray of shape (horizon,)
        After :meth:`run`: regret of the first ``t + 1`` rounds.
    rewards_ : ndarray of shape (horizon,)
        After :meth:`run`: noise-free ``r_t(Z_t)``.
    best_arm_ : int
        After :meth:`run`: the hindsight-best fixed arm.

    See Also
    --------
    ClusterRandomizedEXP3IX : same expected regret, spread shrinking with the number of
        units.
    InterferenceGridEnv : the environment.

    References
    ----------
    .. [1] S. Jia, P. Frazier, N. Kallus, "Multi-Armed Bandits with Interference: Bridging
       Causal Inference and Adversarial Bandits", ICML 2025, arXiv:2402.01845.
    .. [2] G. Neu, "Explore no more: Improved high-probability regret bounds for
       non-stochastic bandits", NeurIPS 2015.

    Examples
    --------
    >>> from sklearn_icml.bandits import InterferenceGridEnv, SwitchbackEXP3IX
    >>> env = InterferenceGridEnv(10, 3, 200, random_state=0)
    >>> result = SwitchbackEXP3IX(3, 200, random_state=100).run(env)
    >>> result.cumulative_regret.shape
    (200,)
    >>> bool(result.regret == result.cumulative_regret[-1] > 0)
    True
    """

    def __init__(self, n_arms, horizon, *, learning_rate=None, ix_gamma=None, random_state=None):
        self.n_arms = n_arms
        self.horizon = horizon
        self.learning_rate = learning_rate
        self.ix_gamma = ix_gamma
        self.random_state = random_state

    def _start_extra(self):
        self._arms = np.zeros(self.horizon, dtype=np.intp)

    def _assign(self, t, p):
        arm = self._core.draw(self._rng, p)
        self._arms[t] = arm
        return np.full((self.grid_side_, self.grid_side_), arm, dtype=np.intp)

    def _loss_estimate(self, t, Z, Y, p):
        arm = Z[0, 0]
        loss_hat = np.zeros(self.n_arms)
        loss_hat[arm] = (1.0 - Y.mean()) / (p[arm] + self.ix_gamma_)
        return loss_hat


    @property
    def arms_(self):
        """ndarray of shape (n_rounds_,): the arm every unit got in each round."""
        return self._arms[: self.n_rounds_]


class ClusterRandomizedEXP3IX(_BaseInterferenceEXP3IX):
    """Cluster-randomised EXP3-IX with the HT-IX (Horvitz-Thompson, implicit exploration)
    estimator.

    Each round: a random shift ``(s_x, s_y) ~ U[0, l)^2`` cuts the grid into square cells of
    side ``l = cell_size``; every cell draws an arm from ``p_t``; unit ``u`` is *exposed* to
    arm ``i`` when its whole ball ``B(u, r)`` got ``i``; EXP3-IX is fed

    ``loss_hat_{t,i} = (1/N) sum_u (1 - Y_{t,u}) 1[E_{u,i}] / (P_t(E_{u,i}) + gamma)``,

    with the exact exposure probability of :func:`exposure_probability`. With
    ``gamma = 0`` it is unbiased for the loss of "arm ``i`` on the ball", within ``psi(r)``
    of the fixed-arm loss (exactly it for ``kappa``-neighbourhood interference and
    ``r >= kappa``). Its expected regret matches the switchback's, and the spread of its
    realised regret shrinks like ``l / sqrt(N)``.

    ``cell_size=1, exposure_radius=0`` is unit-level A/B randomisation: biased under
    interference (it estimates each arm's effect on a unit surrounded by other arms).

    Not an estimator: it subclasses :class:`~sklearn.base.BaseEstimator` only for
    ``get_params``/``clone``; the work is in ``select``/``update`` or ``run(env)``.

    Parameters
    ----------
    n_arms : int
        Number of arms ``k``.
    horizon : int
        Number of rounds ``T`` the learning rate is tuned for.
    learning_rate : float, default=None
        EXP3-IX step ``eta``; ``None`` uses ``sqrt(2 ln k / (k T))``.
    ix_gamma : float, default=None
        Implicit-exploration term ``gamma >= 0`` in the estimator's denominator; ``None``
        uses ``learning_rate / 2``.
    exposure_radius : int, default=1
        ``r``: a unit counts as exposed to arm ``i`` when all units within Chebyshev
        distance ``r`` have it. Take ``r = kappa`` for neighbourhood interference.
    cell_size : float, default=None
        ``l``, the cell side; must be ``>= 1`` and ``> 2 r``. ``None`` uses
        ``max(2 r + 1, 6 r)`` (6 for ``r = 1``).
    resample_partition : bool, default=True
        Draw a new shift every round; ``False`` draws it once at round 0 (then exposure
        probabilities use the realised cell counts).
    random_state : int, Generator, RandomState or None, default=None
        Seeds ``np.random.default_rng`` at round 0. Per round it draws
        ``rng.uniform(0, l, 2)`` then ``rng.choice(k, size=(n_cells_x, n_cells_y), p=p_t)``.

    Attributes
    ----------
    learning_rate_, ix_gamma_ : float
        The step and implicit-exploration term in use.
    cell_size_ : float
        The cell side in use.
    n_rounds_ : int
        Rounds updated so far.
    probs_ : ndarray of shape (n_rounds_, n_arms)
        ``p_t`` of each round.
    loss_estimates_ : ndarray of shape (n_rounds_, n_arms)
        The HT-IX loss estimates fed to EXP3-IX.
    n_cells_ : ndarray of shape (n_rounds_,)
        Number of cells that meet the grid in each round.
    exposure_rate_ : ndarray of shape (n_rounds_, n_arms)
        Share of units exposed to each arm in each round.
    shifts_ : ndarray of shape (n_rounds_, 2)
        The partition's shift in each round.
    log_weights_ : ndarray of shape (n_arms,)
        Current centred log-weights.
    regret_, cumulative_regret_, rewards_, best_arm_
        After :meth:`run`, as for :class:`SwitchbackEXP3IX`.

    See Also
    --------
    SwitchbackEXP3IX : the switchback baseline.
    exposure_probability : the probabilities the estimator divides by.
    InterferenceGridEnv : the environment.

    References
    ----------
    .. [1] S. Jia, P. Frazier, N. Kallus, "Multi-Armed Bandits with Interference: Bridging
       Causal Inference and Adversarial Bandits", ICML 2025, arXiv:2402.01845.
    .. [2] G. Neu, "Explore no more: Improved high-probability regret bounds for
       non-stochastic bandits", NeurIPS 2015.

    Examples
    --------
    >>> from sklearn_icml.bandits import ClusterRandomizedEXP3IX, InterferenceGridEnv
    >>> env = InterferenceGridEnv(20, 3, 200, random_state=0)
    >>> policy = ClusterRandomizedEXP3IX(3, 200, exposure_radius=1, random_state=100)
    >>> result = policy.run(env)
    >>> policy.cell_size_
    6.0
    >>> result.probs.shape
    (200, 3)
    >>> bool(result.probs[-1, 0] > result.probs[0, 0])  # learns that arm 0 is best
    True
    """

    _parameter_constraints = {
        **_BaseInterferenceEXP3IX._parameter_constraints,
        "exposure_radius": [Interval(numbers.Integral, 0, None, closed="left")],
        "cell_size": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "resample_partition": ["boolean"],
    }

    def __init__(
        self,
        n_arms,
        horizon,
        *,
        exposure_radius=1,
        cell_size=None,
        learning_rate=None,
        ix_gamma=None,
        resample_partition=True,
        random_state=None,
    ):
        self.n_arms = n_arms
        self.horizon = horizon
        self.exposure_radius = exposure_radius
        self.cell_size = cell_size
        self.learning_rate = learning_rate
        self.ix_gamma = ix_gamma
        self.resample_partition = resample_partition
        self.random_state = random_state

    def _start_extra(self):
        r = int(self.exposure_radius)
        default = float(max(2 * r + 1, 6 * r))
        self.cell_size_ = _check_cell_size(
            default if self.cell_size is None else self.cell_size, r
        )
        L, T = self.grid_side_, self.horizon
        self._weights = _mixture_weights(L, r, self.cell_size_)
        window = _window_indices(L, r)
        self._window = (window, window)
        self._n_cells = np.zeros(T, dtype=np.intp)
        self._exposure = np.zeros((T, self.n_arms))
        self._shifts = np.zeros((T, 2))
        self._counts = None
        self._shift = None

    def _assign(self, t, p):
        L, ell = self.grid_side_, self.cell_size_
        if self.resample_partition or self._shift is None:
            self._shift = self._rng.uniform(0.0, ell, 2)
            self._cx = _cell_index(L, ell, self._shift[0])
            self._cy = _cell_index(L, ell, self._shift[1])
            if not self.resample_partition:
                self._counts = _realised_cell_count(
                    L, self.exposure_radius, ell, self._shift
                )
        n_x, n_y = self._cx[-1] + 1, self._cy[-1] + 1
        arms = self._rng.choice(self.n_arms, size=(n_x, n_y), p=p)
        self._shifts[t] = self._shift
        self._n_cells[t] = n_x * n_y
        return arms[self._cx[:, None], self._cy[None, :]].astype(np.intp)

    def _exposed(self, Z):
        """Units whose whole clipped ball has one arm (that arm is then ``Z[u]``)."""
        return _monochrome_ball(Z, self.exposure_radius, self._window)

    def _exposure_of_own_arm(self, Z, p):
        """``P_t(E_{u, Z_u})`` for every unit."""
        pz = p[Z]
        if self._counts is not None:
            return pz**self._counts
        one, two, four = self._weights
        pz2 = pz * pz
        return one * pz + two * pz2 + four * pz2 * pz2

    def _loss_estimate(self, t, Z, Y, p):
        k, N = self.n_arms, Z.size
        exposed = self._exposed(Z)
        arm = Z[exposed]
        prob = self._exposure_of_own_arm(Z, p)[exposed]
        weights = (1.0 - Y[exposed]) / (prob + self.ix_gamma_)
        self._exposure[t] = np.bincount(arm, minlength=k) / N
        return np.bincount(arm, weights=weights, minlength=k) / N

    @property
    def n_cells_(self):
        """ndarray of shape (n_rounds_,): cells meeting the grid in each round."""
        return self._n_cells[: self.n_rounds_]

    @property
    def exposure_rate_(self):
        """ndarray of shape (n_rounds_, n_arms): share of units exposed to each arm."""
        return self._exposure[: self.n_rounds_]

    @property
    def shifts_(self):
        """ndarray of shape (n_rounds_, 2): the partition's shift in each round."""
        return self._shifts[: self.n_rounds_]


# ---------------------------------------------------------------------------- many seeds


def _run_one(policy, env, env_seed, policy_seed):
    env = clone(env).set_params(random_state=env_seed)
    policy = clone(policy).set_params(random_state=policy_seed)
    return policy.run(env)


def regret_across_seeds(policy, env, seeds, *, policy_seed_offset=100, n_jobs=None):
    """Run ``policy`` on copies of ``env``, one per seed, in parallel (joblib).

    Seed ``s`` gives the environment ``random_state=s`` and the policy
    ``random_state=policy_seed_offset + s``.

    Parameters
    ----------
    policy : SwitchbackEXP3IX or ClusterRandomizedEXP3IX
        Cloned for every seed; left untouched.
    env : InterferenceGridEnv
        Cloned for every seed; left untouched.
    seeds : iterable of int
        Environment seeds.
    policy_seed_offset : int, default=100
        Added to each seed to seed the policy.
    n_jobs : int, default=None
        Parallel jobs (joblib; ``None`` means 1 unless in a ``parallel_backend`` context).

    Returns
    -------
    results : list of InterferenceBanditResult
        One per seed, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.bandits import (
    ...     InterferenceGridEnv, SwitchbackEXP3IX, regret_across_seeds)
    >>> env = InterferenceGridEnv(6, 3, 50)
    >>> results = regret_across_seeds(SwitchbackEXP3IX(3, 50), env, seeds=range(4))
    >>> regrets = np.array([r.regret for r in results])
    >>> regrets.shape
    (4,)
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one seed; got an empty iterable instead.")
    offset = _check_int(policy_seed_offset, "policy_seed_offset", 0)
    return Parallel(n_jobs=n_jobs)(
        delayed(_run_one)(policy, env, s, offset + s) for s in seeds
    )
