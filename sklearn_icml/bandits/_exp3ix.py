"""EXP3-IX under interference: the switchback and the cluster-randomised (HT-IX) policies.

Jia, Frazier and Kallus, "Multi-Armed Bandits with Interference: Bridging Causal Inference
and Adversarial Bandits", ICML 2025. The EXP3-IX update and the estimators are in
``_exp3ix_core.py``, the random partitions and exposure probabilities in ``_partitions.py``.
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..base import BaseRunner
from ..utils import check_generator
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import NON_NEGATIVE_INT, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ._exp3ix_core import (
    _default_learning_rate,
    _EXP3IXCore,
    ht_ix_loss_estimate,
    ix_loss_estimate,
)
from ._partitions import (
    _cell_index,
    _check_cell_size,
    _check_rrp,
    _mixture_weights,
    _monochrome_ball,
    _own_arm_exposure,
    _realised_cell_count,
    _RRPLayout,
    _window_indices,
)
from ._validation import index_at_least, validate_arguments


class _PerRound:
    """A per-round record: the first ``n_rounds_`` rows of a buffer filled round by round.

    Documented in the Attributes of the policy that declares it.
    """

    def __init__(self, buffer):
        self.buffer = buffer

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(obj, self.buffer)[: obj.n_rounds_]


def _regret_path(rewards, fixed_arm_rewards):
    best = np.cumsum(fixed_arm_rewards, axis=0).max(axis=1)
    return best - np.cumsum(rewards)


class _BaseInterferenceEXP3IX(BaseRunner):
    """Round bookkeeping, input checks and ``run`` shared by the two policies.

    A subclass writes ``_start_extra``, ``_assign`` (the round's ``Z`` from ``p``) and
    ``_loss_estimate`` (the ``k`` loss estimates from ``Z`` and ``Y``).
    """

    _parameter_constraints = {
        "n_arms": [POSITIVE_INT],
        "horizon": [POSITIVE_INT],
        "verbose": ["verbose"],
        "learning_rate": [POSITIVE_REAL, None],
        "ix_gamma": [Interval(numbers.Real, 0, 0.5, closed="left"), None],
        "random_state": ["random_state"],
    }

    probs_ = _PerRound("_probs")
    loss_estimates_ = _PerRound("_loss_hat")
    observed_rewards_ = _PerRound("_observed")

    # -- set-up
    def _start(self, grid_side):
        self._validate_params()
        k, T = self.n_arms, self.horizon
        self.grid_side_ = int(grid_side)
        self.learning_rate_ = (
            _default_learning_rate(k, T) if self.learning_rate is None
            else float(self.learning_rate)
        )
        if self.ix_gamma is None:
            self.ix_gamma_ = self.learning_rate_ / 2.0
            if self.ix_gamma_ >= 0.5:
                raise ValueError(
                    "ix_gamma must be in [0, 0.5); its default learning_rate / 2 is "
                    f"{self.ix_gamma_!r}: pass ix_gamma explicitly. Got learning_rate="
                    f"{self.learning_rate!r} instead."
                )
        else:
            self.ix_gamma_ = float(self.ix_gamma)
        self._rng = check_generator(self.random_state)
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
        validate_arguments(
            self,
            "select",
            {"t": [index_at_least(0)], "grid_side": [index_at_least(1)]},
            t=t,
            grid_side=grid_side,
        )
        if t == 0:
            self._start(grid_side)
        else:
            if not hasattr(self, "_core"):
                raise ValueError(f"select must start at round t=0. Got t={t!r} instead.")
            if grid_side != self.grid_side_:
                raise ValueError(
                    f"grid_side must stay {self.grid_side_} (set at round 0). "
                    f"Got {grid_side!r} instead."
                )
            if t != self.n_rounds_:
                raise ValueError(
                    f"rounds must be played in order: the next round is {self.n_rounds_}. "
                    f"Got t={t!r} instead."
                )
        if t >= self.horizon:
            raise ValueError(f"t must be < horizon={self.horizon}. Got t={t!r} instead.")
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
                f"{last!r}. Got t={t!r} instead."
            )
        _, Z_sel, p = pending
        L = self.grid_side_
        Z = np.asarray(Z)
        if Z.shape != Z_sel.shape or not np.array_equal(Z, Z_sel):
            self._diagnose_assignment(Z, t)
        Y = np.asarray(Y, dtype=float)
        if Y.shape != (L, L):
            raise ValueError(f"Y must have shape ({L}, {L}). Got shape {Y.shape} instead.")
        low, high = Y.min(), Y.max()
        if not (low >= 0.0 and high <= 1.0):  # NaN fails both comparisons
            if not np.all(np.isfinite(Y)):
                raise ValueError(
                    f"Y must be finite (every outcome). Got values in [{low!r}, {high!r}] "
                    "instead."
                )
            raise ValueError(
                f"Y must hold outcomes in [0, 1]. Got values in [{low!r}, {high!r}] instead."
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
            raise ValueError(f"Z must have shape ({L}, {L}). Got shape {Z.shape} instead.")
        if Z.dtype.kind not in "iuf" or not np.all(np.isfinite(Z)):
            raise ValueError(f"Z must hold integer arm indices. Got dtype {Z.dtype} instead.")
        if Z.min() < 0 or Z.max() >= k:
            raise ValueError(
                f"Z must hold arms in [0, {k}). Got values in [{Z.min()}, {Z.max()}] instead."
            )
        raise ValueError(
            f"Z must be the assignment that select returned for round {t}. Got a "
            "different assignment instead."
        )

    @property
    def log_weights_(self):
        """ndarray of shape (n_arms,): the current (centred) EXP3-IX log-weights."""
        return self._core.log_weights.copy()

    def _run(self, env):
        """Play ``env.horizon`` rounds of ``select`` / ``env.step`` / ``update``.

        ``env`` is an :class:`InterferenceGridEnv` or any object with ``grid_side``,
        ``n_arms``, ``horizon``, ``step(t, Z)`` returning ``(Y, noise-free mean reward)``
        and ``fixed_arm_rewards(t)``.
        """
        for name in ("grid_side", "n_arms", "horizon"):
            if not hasattr(env, name):
                raise TypeError(
                    f"env must be an InterferenceGridEnv-like object with a {name!r} "
                    f"attribute. Got {type(env).__name__} instead."
                )
        if env.n_arms != self.n_arms:
            raise ValueError(
                f"env.n_arms must equal n_arms={self.n_arms}. Got {env.n_arms!r} instead."
            )
        if env.horizon > self.horizon:
            raise ValueError(
                f"env.horizon must be <= horizon={self.horizon} (the policy is tuned for it). "
                f"Got {env.horizon!r} instead."
            )
        T, L = env.horizon, env.grid_side
        rewards = np.empty(T)
        fixed = np.empty((T, self.n_arms))
        every = max(1, T // 10)
        for t in range(T):
            Z = self.select(t, L)
            Y, rewards[t] = env.step(t, Z)
            fixed[t] = env.fixed_arm_rewards(t)
            self.update(t, Z, Y)
            if (t + 1) % every == 0 and self._progress.enabled():
                regret = _regret_path(rewards[: t + 1], fixed[: t + 1])[-1]
                self._progress.log(f"round {t + 1}/{T}", regret=regret)
        path = _regret_path(rewards, fixed)
        self.rewards_ = rewards
        self.fixed_arm_rewards_ = fixed
        self.cumulative_regret_ = path
        self.regret_ = float(path[-1])
        self.best_arm_ = int(np.argmax(fixed.sum(axis=0)))


class SwitchbackEXP3IX(_BaseInterferenceEXP3IX):
    """Switchback EXP3-IX: every unit gets the same arm, chosen afresh each round.

    Each round ``I_t ~ p_t`` (one ``rng.choice(k, p=p_t)``), ``Z_t = I_t`` for every unit,
    and EXP3-IX is fed ``loss_hat_{I_t} = (1 - mean_u Y_{t,u}) / (p_{t,I_t} + gamma)``. It is
    exactly EXP3-IX on the ``k``-armed sequence ``r_t(i * 1)``, so its expected regret is
    ``O~(sqrt(k T))`` — but its realised regret fluctuates like a single bandit's, however
    many units there are.

    Play it round by round with :meth:`select` / :meth:`update`, or for a whole horizon with
    ``run(env)``.

    Parameters
    ----------
    n_arms : int
        Number of arms ``k``.
    horizon : int
        Number of rounds ``T`` the learning rate is tuned for.
    learning_rate : float, default=None
        EXP3-IX step ``eta``; ``None`` uses ``sqrt(2 ln k / (k T))``.
    ix_gamma : float, default=None
        Implicit-exploration term ``gamma`` in the estimator's denominator, in ``[0, 0.5)``
        as the paper's IX parameter ``beta``; ``None`` uses ``learning_rate / 2`` (an error
        if that is not below 0.5).
    random_state : int, RandomState instance or None, default=None
        Seeds the policy's generator (:func:`~sklearn_icml.utils.check_generator`) at
        round 0.
    verbose : int, default=0
        0 is silent; 1 prints the regret so far every tenth of the horizon during
        :meth:`run`, with the time since it started.

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
    observed_rewards_ : ndarray of shape (n_rounds_,)
        The mean observed outcome of each round.
    log_weights_ : ndarray of shape (n_arms,)
        Current centred log-weights.
    regret_ : float
        After :meth:`run`: the regret ``max_i sum_t r_t(i * 1) - sum_t r_t(Z_t)``
        (noise-free).
    cumulative_regret_ : ndarray of shape (horizon,)
        After :meth:`run`: regret of the first ``t + 1`` rounds against the best fixed arm of
        those rounds; its last entry is ``regret_``.
    rewards_ : ndarray of shape (horizon,)
        After :meth:`run`: the noise-free average reward ``r_t(Z_t)`` of each round.
    fixed_arm_rewards_ : ndarray of shape (horizon, n_arms)
        After :meth:`run`: ``r_t(i * 1)`` of every round and arm.
    best_arm_ : int
        After :meth:`run`: the hindsight-best fixed arm.
    arms_ : ndarray of shape (n_rounds_,)
        The arm every unit got in each round.

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
    >>> env = InterferenceGridEnv(grid_side=10, n_arms=3, horizon=200, random_state=0)
    >>> policy = SwitchbackEXP3IX(n_arms=3, horizon=200, random_state=100).run(env)
    >>> policy.cumulative_regret_.shape
    (200,)
    >>> bool(policy.regret_ == policy.cumulative_regret_[-1] > 0)
    True
    """

    arms_ = _PerRound("_arms")

    @keyword_only_after(1)
    def __init__(self, *, n_arms, horizon, learning_rate=None, ix_gamma=None, random_state=None,
                 verbose=0):
        store_params(self, locals())

    def _start_extra(self):
        self._arms = np.zeros(self.horizon, dtype=np.intp)

    def _assign(self, t, p):
        arm = self._core.draw(self._rng, p)
        self._arms[t] = arm
        return np.full((self.grid_side_, self.grid_side_), arm, dtype=np.intp)

    def _loss_estimate(self, t, Z, Y, p):
        return ix_loss_estimate(Z[0, 0], Y.mean(), p, self.ix_gamma_)


class ClusterRandomizedEXP3IX(_BaseInterferenceEXP3IX):
    """Cluster-randomised EXP3-IX with the HT-IX (Horvitz-Thompson, implicit exploration)
    estimator: the paper's EXP3-HT-IX policy.

    Each round a random partition cuts the grid into clusters, every cluster draws an arm
    from ``p_t``, unit ``u`` is *exposed* to arm ``i`` when its whole ball ``B(u, r)`` got
    ``i``, and EXP3-IX is fed

    ``loss_hat_{t,i} = (1/N) sum_u (1 - Y_{t,u}) 1[E_{u,i}] / (P_t(E_{u,i}) + gamma)``,

    with the exact exposure probability of :func:`exposure_probability`. With
    ``gamma = 0`` it is unbiased for the loss of "arm ``i`` on the ball", within ``psi(r)``
    of the fixed-arm loss (exactly it for ``kappa``-neighbourhood interference and
    ``r >= kappa``). Its expected regret matches the switchback's, and the spread of its
    realised regret shrinks as the number of clusters grows.

    The partition is drawn afresh each round. ``partition="rrp"`` (the default) is the
    paper's robust random partition: the uniform clustering into ``l x l`` cells, with a
    strip of ``strip_width`` units around every border between two cells, assigned to one
    of those two cells, and a quad where two strips cross, assigned to one of its four
    cells, with equal probabilities. ``partition="shifted_grid"`` shifts the cells by
    ``(s_x, s_y) ~ U[0, l)^2`` instead.

    ``cell_size=1, exposure_radius=0`` is unit-level A/B randomisation: biased under
    interference (it estimates each arm's effect on a unit surrounded by other arms).

    Play it round by round with :meth:`select` / :meth:`update`, or for a whole horizon with
    ``run(env)``.

    Parameters
    ----------
    n_arms : int
        Number of arms ``k``.
    horizon : int
        Number of rounds ``T`` the learning rate is tuned for.
    learning_rate : float, default=None
        EXP3-IX step ``eta``; ``None`` uses ``sqrt(2 ln k / (k T))``.
    ix_gamma : float, default=None
        Implicit-exploration term ``gamma`` in the estimator's denominator, in ``[0, 0.5)``
        as the paper's IX parameter ``beta``; ``None`` uses ``learning_rate / 2`` (an error
        if that is not below 0.5).
    exposure_radius : int, default=1
        ``r``: a unit counts as exposed to arm ``i`` when all units within Chebyshev
        distance ``r`` have it. Take ``r = kappa`` for neighbourhood interference.
    cell_size : float, default=None
        ``l``, the cell side; must be ``>= 1`` and ``> 2 r``, and a whole number for
        ``"rrp"``. ``None`` uses ``max(2 r + 1, 6 r)`` (6 for ``r = 1``).
    partition : {"rrp", "shifted_grid"}, default="rrp"
        The random partition drawn each round.
    strip_width : int, default=None
        Width of the RRP's border strips, in ``[0, cell_size]``; ``None`` uses ``2 r``,
        so that a ball never meets two cores along an axis. Ignored by
        ``"shifted_grid"``.
    resample_partition : bool, default=True
        Draw a new partition every round (the paper's policy); ``False`` draws it once at
        round 0, and the exposure probabilities then use the realised cell counts.
    random_state : int, RandomState instance or None, default=None
        Seeds the policy's generator (:func:`~sklearn_icml.utils.check_generator`) at
        round 0. Per round, ``"rrp"`` draws ``rng.integers(0, 2, size=(2, R, R))`` (the
        strips' and quads' cells, ``R = 2 n_cells - 1`` regions per axis) and
        ``"shifted_grid"`` draws ``rng.uniform(0, l, 2)`` (the shift); then
        ``rng.choice(k, size=(n_cells_x, n_cells_y), p=p_t)``.
    verbose : int, default=0
        0 is silent; 1 prints the regret so far every tenth of the horizon during
        :meth:`run`, with the time since it started.

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
    observed_rewards_ : ndarray of shape (n_rounds_,)
        The mean observed outcome of each round.
    log_weights_ : ndarray of shape (n_arms,)
        Current centred log-weights.
    regret_ : float
        After :meth:`run`: the regret ``max_i sum_t r_t(i * 1) - sum_t r_t(Z_t)``
        (noise-free).
    cumulative_regret_ : ndarray of shape (horizon,)
        After :meth:`run`: regret of the first ``t + 1`` rounds against the best fixed arm of
        those rounds; its last entry is ``regret_``.
    rewards_ : ndarray of shape (horizon,)
        After :meth:`run`: the noise-free average reward ``r_t(Z_t)`` of each round.
    fixed_arm_rewards_ : ndarray of shape (horizon, n_arms)
        After :meth:`run`: ``r_t(i * 1)`` of every round and arm.
    best_arm_ : int
        After :meth:`run`: the hindsight-best fixed arm.
    cell_size_ : float
        The cell side in use.
    strip_width_ : int
        ``"rrp"`` only: the strip width in use.
    n_cells_ : ndarray of shape (n_rounds_,)
        Number of clusters holding at least one unit in each round.
    exposure_rate_ : ndarray of shape (n_rounds_, n_arms)
        Share of units exposed to each arm in each round.
    shifts_ : ndarray of shape (n_rounds_, 2)
        ``"shifted_grid"`` only: the partition's shift in each round.

    See Also
    --------
    SwitchbackEXP3IX : the switchback baseline.
    exposure_probability : the probabilities the estimator divides by.
    InterferenceGridEnv, RandomRewardGridEnv : environments.

    Notes
    -----
    The paper [1]_ leaves the cell side and the strip width free within its regret bound
    (its ``(l, r)`` parameters of the RRP); the defaults ``l = max(2 r + 1, 6 r)`` and
    strips of ``2 r`` units are this library's choice: a ball then meets at most one core,
    two strips and one quad, so it lies in a single cluster with probability at least
    1/16 and every unit is exposed to arm ``i`` with probability at least ``p_i / 16``,
    while a moderate grid still has many cells. The shifted grid is
    kept as an option: its exposure probabilities are closed-form, but a ball straddles a
    border with probability growing with ``2 r / l`` wherever the unit sits.

    References
    ----------
    .. [1] S. Jia, P. Frazier, N. Kallus, "Multi-Armed Bandits with Interference: Bridging
       Causal Inference and Adversarial Bandits", ICML 2025, arXiv:2402.01845.
    .. [2] G. Neu, "Explore no more: Improved high-probability regret bounds for
       non-stochastic bandits", NeurIPS 2015.

    Examples
    --------
    >>> from sklearn_icml.bandits import ClusterRandomizedEXP3IX, InterferenceGridEnv
    >>> env = InterferenceGridEnv(grid_side=20, n_arms=3, horizon=200, random_state=0)
    >>> policy = ClusterRandomizedEXP3IX(n_arms=3, horizon=200, exposure_radius=1,
    ...                                  random_state=100)
    >>> policy.run(env).cell_size_
    6.0
    >>> policy.probs_.shape
    (200, 3)
    >>> bool(policy.probs_[-1, 0] > policy.probs_[0, 0])  # learns that arm 0 is best
    True
    """

    _parameter_constraints = {
        **_BaseInterferenceEXP3IX._parameter_constraints,
        "exposure_radius": [NON_NEGATIVE_INT],
        "cell_size": [POSITIVE_REAL, None],
        "partition": [StrOptions({"rrp", "shifted_grid"})],
        "strip_width": [NON_NEGATIVE_INT, None],
        "resample_partition": ["boolean"],
    }

    n_cells_ = _PerRound("_n_cells")
    exposure_rate_ = _PerRound("_exposure")
    shifts_ = _PerRound("_shifts")

    @keyword_only_after(1)
    def __init__(
        self,
        *,
        n_arms,
        horizon,
        exposure_radius=1,
        cell_size=None,
        partition="rrp",
        strip_width=None,
        learning_rate=None,
        ix_gamma=None,
        resample_partition=True,
        random_state=None,
        verbose=0,
    ):
        store_params(self, locals())

    def _start_extra(self):
        r = int(self.exposure_radius)
        default = float(max(2 * r + 1, 6 * r))
        cell_size = default if self.cell_size is None else self.cell_size
        L, T = self.grid_side_, self.horizon
        if self.partition == "rrp":
            ell, self.strip_width_ = _check_rrp(cell_size, self.strip_width, r)
            self.cell_size_ = float(ell)
            self._layout = _RRPLayout(L, r, ell, self.strip_width_)
            for name in ("_shifts", "_weights"):
                self.__dict__.pop(name, None)
        else:
            self.cell_size_ = _check_cell_size(cell_size, r)
            self._weights = _mixture_weights(L, r, self.cell_size_)
            self._shifts = np.zeros((T, 2))
            self._shift = None
            self.__dict__.pop("_layout", None)
            self.__dict__.pop("strip_width_", None)
        window = _window_indices(L, r)
        self._window = (window, window)
        self._n_cells = np.zeros(T, dtype=np.intp)
        self._exposure = np.zeros((T, self.n_arms))
        self._counts = None
        self._drawn = None

    def _assign(self, t, p):
        if self.partition == "rrp":
            return self._assign_rrp(t, p)
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

    def _assign_rrp(self, t, p):
        layout = self._layout
        if self.resample_partition or self._drawn is None:
            cx, cy = layout.draw_cells(self._rng)
            self._drawn = (cx, cy, layout.n_used_cells(cx, cy))
            if not self.resample_partition:
                self._counts = layout.realised_cell_count(cx, cy)
        cx, cy, n_used = self._drawn
        n = layout.n_cells
        arms = self._rng.choice(self.n_arms, size=(n, n), p=p)
        self._n_cells[t] = n_used
        return layout.assign(cx, cy, arms).astype(np.intp)

    def _loss_estimate(self, t, Z, Y, p):
        exposed = _monochrome_ball(Z, self.exposure_radius, self._window)
        pz = p[Z]
        if self._counts is not None:
            exposure = pz**self._counts
        elif self.partition == "rrp":
            exposure = self._layout.exposure(pz)
        else:
            exposure = _own_arm_exposure(pz, self._weights)
        loss_hat, self._exposure[t] = ht_ix_loss_estimate(
            Z, Y, exposed, exposure, self.ix_gamma_, self.n_arms
        )
        return loss_hat
