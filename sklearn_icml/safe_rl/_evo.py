"""EVO: extreme-value constrained policy optimisation (Gao et al., ICML 2025).

EVO constrains an extreme quantile of the episode cost instead of its expectation: the
quantile is estimated with :class:`GPDTailQuantile` on an importance-weighted FIFO buffer
of recent episodes, and the steps whose reward advantage exceeds an EVT threshold are
replayed ("extreme prioritisation"). The base update (CPO or PPO-Lagrangian) comes from
:mod:`sklearn_icml.safe_rl._policy_gradient`.
"""

import collections
import numbers

import numpy as np
from scipy.special import logsumexp
from sklearn.utils._param_validation import Interval, StrOptions

from ..utils._deprecation import DEPRECATED
from ..utils._param_validation import NON_NEGATIVE_INT, OPEN_UNIT_INTERVAL, POSITIVE_INT
from ..utils._params import store_params
from ._gpd import GPDTailQuantile
from ._policy_gradient import ConstrainedPolicyGradient


def importance_weights(log_ratio, weight_clip=("log", 0.8, 1.2)):
    """Normalised importance weights of buffer episodes from summed log-ratios.

    Parameters
    ----------
    log_ratio : array-like of shape (n,)
        ``sum_t log pi_cur(a_t|s_t) - log pi_behaviour(a_t|s_t)`` per episode.
    weight_clip : tuple or None, default=("log", 0.8, 1.2)
        ``("log", lo, hi)`` clips the log-ratio (the released code), ``("ratio", lo, hi)``
        clips ``exp(log_ratio)``, None does not clip.

    Returns
    -------
    w : ndarray of shape (n,)
        Non-negative weights summing to 1 (log-sum-exp normalisation).

    Examples
    --------
    >>> from sklearn_icml.safe_rl._evo import importance_weights
    >>> importance_weights([0.0, 0.0, 0.0, 0.0]).tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    lr = np.asarray(log_ratio, dtype=np.float64)
    if weight_clip is not None:
        kind, lo, hi = weight_clip
        if kind == "log":
            lr = np.clip(lr, lo, hi)
        else:
            lr = np.log(np.clip(np.exp(np.minimum(lr, 700.0)), lo, hi))
    return np.exp(lr - logsumexp(lr))

class EVOAgent(ConstrainedPolicyGradient):
    """Extreme Value policy Optimisation: constrained RL on an extreme cost quantile.

    Each iteration rolls out ``steps_per_iter`` steps, computes GAE advantages for reward
    and cost, pushes the finished episodes into a FIFO buffer of ``cost_buffer_size``
    episodes, and fits :class:`GPDTailQuantile` to their undiscounted costs with
    importance weights of the current policy; the constraint value of the base
    algorithm's update is then ``q_hat - cost_limit`` with ``q_hat`` the
    ``alpha = p_u + (1 - p_u) * tail_quantile`` cost quantile, instead of the mean
    episode cost. With ``prioritize``, steps whose standardised reward advantage exceeds
    an EVT threshold of a replay buffer are appended ``oversample_factor`` more times to
    the update batch.

    :meth:`run` takes the environment: a ``gymnasium.Env`` (or a gymnasium id) giving the
    per-step cost in ``info["cost"]`` or as the third item of a Safety-Gymnasium 6-tuple
    ``(obs, r, c, term, trunc, info)``. The id of a bullet-safety-gym task
    (``"SafetyBallCircle-v0"``, ...) is wrapped in :class:`BulletSafetyEnv`, which seeds it.

    Parameters
    ----------
    cost_limit : float, default=25.0
        The limit ``d`` on the episode-cost statistic, ``>= 0``. ``float("inf")`` sets no
        constraint: the CPO base then takes TRPO's step (the reward step alone), the
        PPO-Lagrangian base keeps its multiplier at 0 (plain PPO).
    base : {"cpo", "ppo_lag"}, default="cpo"
        Base algorithm: CPO (the paper) or PPO-Lagrangian (cheaper, see Notes).
    constraint : {"quantile", "expectation"}, default="quantile"
        "quantile" is EVO; "expectation" constrains the iteration's mean episode cost (the
        expectation-constrained baseline: plain CPO / PPO-Lag).
    max_iter : int, default=500
        Policy iterations of :meth:`run` (OmniSafe's epochs): each one rollout of
        ``steps_per_iter`` steps and one update of the policy and the critics.
    steps_per_iter : int, default=20000
        Environment steps per iteration (OmniSafe's ``steps_per_epoch``).
    gamma, lam, lam_c : float, default=0.99, 0.95, 0.95
        Discount and GAE parameters (reward, cost).
    target_kl : float, default=0.01
        CPO trust-region size.
    cg_max_iter : int, default=15
        Most conjugate-gradient iterations of a CPO step (fewer when the residual vanishes).
    line_search_steps : int, default=20
        Backtracking steps of CPO's line search.
    actor_hidden_layer_sizes, critic_hidden_layer_sizes : tuple of int, default=(64, 64)
        Hidden layer sizes of the tanh MLPs (actor, critics).
    critic_learning_rate : float, default=1e-3
        Adam learning rate of the critics.
    critic_max_epochs : int, default=10
        Passes of the critics over each iteration's batch.
    critic_batch_size : int, default=128
        Minibatch size of the critics (and of PPO).
    cost_buffer_size : int, default=100
        Episodes in the FIFO cost buffer.
    cost_buffer_percentile : float in (0, 100), default=90
        Threshold percentile ``100 p_u`` of the POT fit.
    tail_quantile : float in (0, 1), default=0.9
        Level inside the tail; ``alpha = p_u + (1 - p_u) tail_quantile`` (0.99).
    weight_clip : tuple or None, default=("log", 0.8, 1.2)
        Clip of the episode importance weights (see :func:`importance_weights`).
    prioritize : bool, default=True
        Extreme prioritisation of high-advantage steps.
    reward_buffer_size : int, default=None
        Steps in the replay buffer of advantages (None: ``2 * steps_per_iter``).
    reward_buffer_percentile : float in (0, 100), default=90
        Threshold percentile of the advantage POT fit.
    reward_tail_quantile : float in (0, 1), default=0.9
        Level inside the advantage tail, clipped to [0.2, 0.9] as in the code.
    oversample_factor : int, default=1
        Extra copies of each extreme step.
    free_loc : bool, default=False
        Free GPD location (the released code) instead of location 0.
    double_threshold : bool, default=False
        Add the threshold twice to ``q_hat`` (the released code's ``2u + G^-1``).
    actor_learning_rate : float, default=3e-4
        Adam learning rate of the PPO-Lag actor.
    clip_ratio : float, default=0.2
        PPO clip.
    ppo_kl_stop : float, default=0.02
        PPO-Lag stops its update passes when the mean KL exceeds this.
    lagrangian_learning_rate : float, default=0.035
        Step ``eta`` of the multiplier ascent ``lambda <- max(0, lambda + eta (c - d))``.
    lagrangian_init : float, default=0.001
        Initial multiplier.
    lagrangian_optimizer : {"sgd", "adam"}, default="sgd"
        How the multiplier ascends: "sgd" is the plain projected step above; "adam" is
        OmniSafe's ``Lagrange`` class (``torch.optim.Adam`` with lr
        ``lagrangian_learning_rate`` on the loss ``-lambda (c - d)``, then clamped at 0),
        whose steps are about ``lagrangian_learning_rate`` whatever the size of the violation.
    cg_damping : float, default=0.1
        Damping of the Fisher-vector products (CPO).
    warm_start : bool, default=False
        If True, a second :meth:`run` continues training the same networks, buffers and
        multiplier for ``max_iter`` more iterations instead of starting afresh.
    n_jobs : int or None, default=1
        Number of CPU workers: torch intra-op threads during :meth:`run` and
        :meth:`predict`. ``None`` means 1 unless in a :func:`joblib.parallel_config`
        context; -1 every core.
    device : str, default="cpu"
        Torch device.
    random_state : int, RandomState instance or None, default=None
        Seeds the networks, action sampling and environment resets.
    verbose : int, default=0
        0 is silent; 1 prints one line per iteration (episode return and cost, the cost
        quantile, the violation rate, the multiplier, the time since :meth:`run` started),
        as a tqdm bar when stdout is a terminal.
    actor_hidden, critic_hidden, actor_lr, critic_lr, lagrangian_lr : deprecated
        The old names of ``actor_hidden_layer_sizes``, ``critic_hidden_layer_sizes``,
        ``actor_learning_rate``, ``critic_learning_rate`` and ``lagrangian_learning_rate``.

        .. deprecated:: 0.3
           Renamed in 0.3 after scikit-learn's words; the old names will be removed in 0.4.
    cg_iters, critic_update_iters : deprecated
        The old names of ``cg_max_iter`` and ``critic_max_epochs``.

        .. deprecated:: 0.3
           Renamed in 0.3 after the library's glossary; the old names will be removed in 0.4.

    Attributes
    ----------
    history_ : list of dict
        The training curves, one dict per iteration: ``ep_ret``, ``ep_cost`` (means over
        finished episodes), ``violation_rate`` (fraction with cost above ``cost_limit``),
        ``mean_action``, ``q_hat`` (the constraint statistic), ``xi``, ``sigma``,
        ``fallback``, ``tau``, ``batch_size``, ``case`` (CPO case, None for PPO-Lag),
        ``lagrange`` and ``kl``.
    actor_ : torch.nn.Module
        The policy.
    reward_critic_, cost_critic_ : torch.nn.Module
        The value networks.
    env_ : gymnasium.Env
        The environment of the last :meth:`run` (:meth:`evaluate` plays it).
    n_steps_ : int
        Environment steps taken by :meth:`run` (all runs of a warm start).
    lagrange_ : float
        The PPO-Lag multiplier (0 for CPO).

    See Also
    --------
    GPDTailQuantile : The extreme-quantile estimator of the constraint.
    RiskyShortcutEnv, HeavyTailPointEnv : Test environments with black-swan costs.
    BulletSafetyEnv : bullet-safety-gym's PyBullet tasks, seeded.

    Notes
    -----
    The CPO step follows OmniSafe's current ``CPO`` (case analysis, conjugate gradient,
    backtracking line search with decay 0.8 and the KL bound ``target_kl``) with the
    constraint value ``c = q_hat - cost_limit`` used as is, as in the released EVO code
    (older OmniSafe versions divided ``c`` by the mean episode length). When no policy
    can meet the constraint (``q_hat > cost_limit`` whatever the actions), CPO stays in
    its infeasible-recovery case and the PPO-Lag multiplier grows without bound.

    The paper [1]_ builds EVO on CPO; ``base="ppo_lag"`` is this library's addition, a
    cheaper first-order base for CPU runs that constrains the same statistic through a
    Lagrange multiplier.

    EVO keeps its own training loop rather than a skorch fit: each iteration collects
    fresh on-policy data from the environment and takes a constrained trust-region step.

    References
    ----------
    .. [1] S. Gao, Y. Zhou, S. Shao, H. Luo, Y. Bing, J. Ding, L. Fu and X. Wang,
       "Extreme Value Policy Optimization for Safe Reinforcement Learning", ICML 2025.

    Examples
    --------
    >>> from sklearn_icml.safe_rl import EVOAgent, RiskyShortcutEnv
    >>> agent = EVOAgent(cost_limit=10.0, base="ppo_lag", max_iter=2, steps_per_iter=200,
    ...                  actor_hidden_layer_sizes=(16,), critic_hidden_layer_sizes=(16,),
    ...                  critic_max_epochs=2,
    ...                  random_state=0).run(RiskyShortcutEnv())
    >>> len(agent.history_)
    2
    >>> sorted(agent.evaluate(n_episodes=5))
    ['mean_cost', 'mean_return', 'q99_cost', 'violation_rate']
    """

    _parameter_constraints: dict = {
        **ConstrainedPolicyGradient._parameter_constraints,
        "constraint": [StrOptions({"quantile", "expectation"})],
        "cost_buffer_size": [POSITIVE_INT],
        "cost_buffer_percentile": [Interval(numbers.Real, 0, 100, closed="neither")],
        "tail_quantile": [OPEN_UNIT_INTERVAL],
        "weight_clip": [tuple, None],
        "prioritize": ["boolean"],
        "reward_buffer_size": [POSITIVE_INT, None],
        "reward_buffer_percentile": [Interval(numbers.Real, 0, 100, closed="neither")],
        "reward_tail_quantile": [OPEN_UNIT_INTERVAL],
        "oversample_factor": [NON_NEGATIVE_INT],
        "free_loc": ["boolean"],
        "double_threshold": ["boolean"],
    }

    def __init__(self, *, cost_limit=25.0, base="cpo", constraint="quantile", max_iter=500,
                 steps_per_iter=20000, gamma=0.99, lam=0.95, lam_c=0.95, target_kl=0.01,
                 cg_max_iter=15, line_search_steps=20, actor_hidden_layer_sizes=(64, 64),
                 critic_hidden_layer_sizes=(64, 64), critic_learning_rate=1e-3,
                 critic_max_epochs=10, critic_batch_size=128, cost_buffer_size=100,
                 cost_buffer_percentile=90, tail_quantile=0.9, weight_clip=("log", 0.8, 1.2),
                 prioritize=True, reward_buffer_size=None, reward_buffer_percentile=90,
                 reward_tail_quantile=0.9, oversample_factor=1, free_loc=False,
                 double_threshold=False, actor_learning_rate=3e-4, clip_ratio=0.2,
                 ppo_kl_stop=0.02, lagrangian_learning_rate=0.035, lagrangian_init=0.001,
                 lagrangian_optimizer="sgd", cg_damping=0.1, warm_start=False, n_jobs=1,
                 device="cpu", random_state=None, verbose=0, actor_hidden=DEPRECATED,
                 critic_hidden=DEPRECATED, critic_lr=DEPRECATED, actor_lr=DEPRECATED,
                 lagrangian_lr=DEPRECATED, cg_iters=DEPRECATED,
                 critic_update_iters=DEPRECATED):
        store_params(self, locals())

    def _run(self, env):
        wc = self.weight_clip
        if wc is not None and not (
            len(wc) == 3 and wc[0] in ("log", "ratio") and wc[1] <= wc[2]
        ):
            raise ValueError(
                "weight_clip must be None or ('log' | 'ratio', low, high) with low <= high. "
                f"Got {wc!r} instead."
            )
        super()._run(env)

    def _initialize(self, env):
        super()._initialize(env)
        self._cost_buffer = collections.deque(maxlen=self.cost_buffer_size)
        size = self.reward_buffer_size or 2 * self.steps_per_iter
        self._adv_buffer = collections.deque(maxlen=size)

    # ------------------------------------------------------------------ EVT pieces
    def _episode_weights(self, episodes):
        """Normalised importance weights of buffer episodes under the current policy."""
        lens = [len(ep["logp"]) for ep in episodes]
        obs = np.concatenate([ep["obs"] for ep in episodes])
        act = np.concatenate([ep["act"] for ep in episodes])
        old = np.concatenate([ep["logp"] for ep in episodes])
        diff = self._log_prob_np(obs, act) - old
        sums = np.add.reduceat(diff, np.cumsum([0, *lens[:-1]]))
        return importance_weights(sums, self.weight_clip)

    def _cost_quantile(self, episodes):
        """``(q_hat, xi, sigma, fallback)`` of the episode costs of ``episodes``."""
        costs = np.asarray([ep["cost"] for ep in episodes], dtype=np.float64)
        if costs.size == 0:
            return 0.0, np.nan, np.nan, "empty"
        if costs.size == 1:
            return float(costs[0]), np.nan, np.nan, "one_episode"
        w = self._episode_weights(episodes) * costs.size
        est = GPDTailQuantile(
            threshold_quantile=self.cost_buffer_percentile / 100.0,
            tail_quantile=self.tail_quantile, free_loc=self.free_loc,
            double_threshold=self.double_threshold,
        ).fit(costs, sample_weight=w)
        return float(est.predict()), est.shape_, est.scale_, est.fallback_

    def _constraint_value(self, epoch_episodes):
        """The statistic compared to ``cost_limit``: EVO's ``q_hat`` or the mean cost."""
        if self.constraint == "expectation":
            eps = epoch_episodes or list(self._cost_buffer)
            mean = float(np.mean([ep["cost"] for ep in eps])) if eps else 0.0
            return mean, np.nan, np.nan, None
        return self._cost_quantile(list(self._cost_buffer))

    def _advantage_threshold(self):
        """EVT threshold ``tau`` of the standardised reward advantages in the buffer."""
        steps = list(self._adv_buffer)
        obs = np.stack([s[0] for s in steps])
        act = np.stack([s[1] for s in steps])
        old = np.asarray([s[2] for s in steps])
        adv = np.asarray([s[3] for s in steps])
        lr = self._log_prob_np(obs, act) - old
        w = importance_weights(lr, None) * adv.size
        est = GPDTailQuantile(
            threshold_quantile=self.reward_buffer_percentile / 100.0,
            tail_quantile=float(np.clip(self.reward_tail_quantile, 0.2, 0.9)),
        ).fit(adv, sample_weight=w)
        return float(est.predict())

    @staticmethod
    def _oversample(batch, tau, factor):
        """Append ``factor`` copies of the steps with ``adv >= tau`` to the batch."""
        idx = np.flatnonzero(batch["adv"] >= tau)
        if factor < 1 or idx.size == 0:
            return batch
        extra = np.tile(idx, factor)
        return {k: np.concatenate([v, v[extra]]) for k, v in batch.items()}

    # ------------------------------------------------------------------ one iteration
    def _iteration(self):
        batch, finished = self._rollout(self.steps_per_iter)
        self._cost_buffer.extend(finished)
        # standardise reward advantages, centre cost advantages (OmniSafe)
        batch["adv"] = (batch["adv"] - batch["adv"].mean()) / (batch["adv"].std() + 1e-8)
        batch["adv_c"] = batch["adv_c"] - batch["adv_c"].mean()
        c_stat, xi, sigma, fallback = self._constraint_value(finished)
        tau = np.nan
        if self.prioritize:
            for i in range(batch["adv"].size):
                self._adv_buffer.append(
                    (batch["obs"][i], batch["act"][i], batch["logp"][i], batch["adv"][i])
                )
            if len(self._adv_buffer) >= 2:
                tau = self._advantage_threshold()
                batch = self._oversample(batch, tau, self.oversample_factor)
        t = self._tensors(batch)
        case, kl_val = self._update(t, c_stat)
        self._critic_update(t)
        costs = np.asarray([ep["cost"] for ep in finished])
        rets = np.asarray([ep["ret"] for ep in finished])
        n_real = self.steps_per_iter
        record = {
            "ep_ret": float(rets.mean()) if rets.size else np.nan,
            "ep_cost": float(costs.mean()) if costs.size else np.nan,
            "violation_rate": float((costs > self.cost_limit).mean()) if costs.size else np.nan,
            "n_episodes": int(costs.size),
            "mean_action": float(np.mean(batch["act"][:n_real])),
            "q_hat": float(c_stat), "xi": float(xi) if xi is not None else np.nan,
            "sigma": float(sigma) if sigma is not None else np.nan, "fallback": fallback,
            "tau": float(tau), "batch_size": int(batch["adv"].size), "case": case,
            "lagrange": float(self.lagrange_), "kl": float(kl_val),
        }
        self.history_.append(record)
        self._progress.step(
            f"iteration {len(self.history_)}", episode_return=record["ep_ret"],
            episode_cost=record["ep_cost"], q_hat=c_stat,
            violation_rate=record["violation_rate"], case=case, lagrange=self.lagrange_,
        )
