"""EVO: extreme-value constrained policy optimisation (Gao et al., ICML 2025).

An on-policy constrained RL agent in torch. The base algorithm is CPO (OmniSafe's case
analysis, conjugate gradient and line search) or, as a cheaper INFERRED variant, PPO with
a Lagrange multiplier. EVO replaces the expected episode cost in the constraint by an
extreme quantile of the episode cost estimated with :class:`GPDTailQuantile` on an
importance-weighted FIFO buffer of recent episodes, and replays the steps whose reward
advantage exceeds an EVT threshold ("extreme prioritisation").
"""

import collections
import math
import numbers

import numpy as np
from scipy.signal import lfilter
from scipy.special import logsumexp
from sklearn.utils import check_random_state

from ..utils import optional_import
from ..utils._skorch import check_device, seeded, torch_seed, torch_threads
from ._gpd import GPDTailQuantile

torch = optional_import("torch", "neural")
gym = optional_import("gymnasium", "rl")
nn = torch.nn


def discounted_cumsum(x, discount):
    """``y[t] = sum_k discount**k x[t + k]`` by a reverse ``scipy.signal.lfilter``."""
    x = np.asarray(x, dtype=np.float64)
    return lfilter([1.0], [1.0, -float(discount)], x[::-1])[::-1]


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


def _mlp(sizes, out_gain=1.0):
    layers = []
    for i in range(len(sizes) - 1):
        lin = nn.Linear(sizes[i], sizes[i + 1])
        nn.init.orthogonal_(lin.weight, gain=math.sqrt(2) if i < len(sizes) - 2 else out_gain)
        nn.init.zeros_(lin.bias)
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


class _Actor(nn.Module):
    """Categorical (discrete) or diagonal Gaussian (continuous) MLP policy."""

    def __init__(self, obs_dim, act_dim, hidden, discrete):
        super().__init__()
        self.discrete = discrete
        self.net = _mlp([obs_dim, *hidden, act_dim], out_gain=0.01)
        if not discrete:
            self.log_std = nn.Parameter(torch.full((act_dim,), -0.5))

    def dist(self, obs):
        out = self.net(obs)
        if self.discrete:
            return torch.distributions.Categorical(logits=out)
        return torch.distributions.Normal(out, self.log_std.exp())

    def log_prob(self, obs, act):
        d = self.dist(obs)
        return d.log_prob(act) if self.discrete else d.log_prob(act).sum(-1)


def _flat_params(module):
    return torch.cat([p.data.reshape(-1) for p in module.parameters()])


def _set_flat_params(module, flat):
    i = 0
    for p in module.parameters():
        n = p.numel()
        p.data.copy_(flat[i:i + n].view_as(p))
        i += n


def _flat_grad(y, module, **kw):
    grads = torch.autograd.grad(y, list(module.parameters()), **kw)
    return torch.cat([g.reshape(-1) for g in grads])


def _conjugate_gradient(fvp, b, iters, tol=1e-10):
    x = torch.zeros_like(b)
    r, p = b.clone(), b.clone()
    rr = r.dot(r)
    for _ in range(iters):
        z = fvp(p)
        alpha = rr / (p.dot(z) + 1e-8)
        x += alpha * p
        r -= alpha * z
        rr_new = r.dot(r)
        if rr_new < tol:
            break
        p = r + rr_new / rr * p
        rr = rr_new
    return x


class EVOAgent:
    """Extreme Value policy Optimisation: constrained RL on an extreme cost quantile.

    Each epoch rolls out ``steps_per_epoch`` steps, computes GAE advantages for reward and
    cost, pushes the finished episodes into a FIFO buffer of ``cost_buffer_size``
    episodes, and fits :class:`GPDTailQuantile` to their undiscounted costs with
    importance weights of the current policy; the constraint value of the base
    algorithm's update is then ``q_hat - cost_limit`` with ``q_hat`` the
    ``alpha = p_u + (1 - p_u) * tail_quantile`` cost quantile, instead of the mean
    episode cost. With ``prioritize``, steps whose standardised reward advantage exceeds
    an EVT threshold of a replay buffer are appended ``oversample_factor`` more times to
    the update batch.

    Parameters
    ----------
    env : gymnasium.Env or str
        Environment (or a gymnasium id) giving the per-step cost in ``info["cost"]`` or
        as the third item of a Safety-Gymnasium 6-tuple ``(obs, r, c, term, trunc, info)``.
    cost_limit : float, default=25.0
        The limit ``d`` on the episode-cost statistic.
    base : {"cpo", "ppo_lag"}, default="cpo"
        Base algorithm: CPO (the paper) or PPO-Lagrangian (INFERRED, cheaper).
    constraint : {"quantile", "expectation"}, default="quantile"
        "quantile" is EVO; "expectation" constrains the epoch's mean episode cost (the
        expectation-constrained baseline: plain CPO / PPO-Lag).
    steps_per_epoch : int, default=20000
        Environment steps per epoch.
    gamma, lam, lam_c : float, default=0.99, 0.95, 0.95
        Discount and GAE parameters (reward, cost).
    target_kl : float, default=0.01
        CPO trust-region size.
    cg_iters : int, default=15
        Conjugate-gradient iterations (CPO).
    line_search_steps : int, default=20
        Backtracking steps of CPO's line search.
    actor_hidden, critic_hidden : tuple of int, default=(64, 64)
        Hidden sizes of the tanh MLPs.
    critic_lr : float, default=1e-3
        Adam learning rate of the critics.
    critic_update_iters : int, default=10
        Passes over the batch for the critics.
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
        Steps in the replay buffer of advantages (None: ``2 * steps_per_epoch``).
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
    actor_lr : float, default=3e-4
        Adam learning rate of the PPO-Lag actor.
    clip_ratio : float, default=0.2
        PPO clip.
    ppo_kl_stop : float, default=0.02
        PPO-Lag stops its update passes when the mean KL exceeds this.
    lagrangian_lr : float, default=0.035
        Step ``eta`` of the multiplier ascent ``lambda <- max(0, lambda + eta (c - d))``.
    lagrangian_init : float, default=0.001
        Initial multiplier.
    lagrangian_optimizer : {"sgd", "adam"}, default="sgd"
        How the multiplier ascends: "sgd" is the plain projected step above (the spec's
        calibrated default); "adam" is OmniSafe's ``Lagrange`` class (``torch.optim.Adam``
        with lr ``lagrangian_lr`` on the loss ``-lambda (c - d)``, then clamped at 0), whose
        steps are about ``lagrangian_lr`` whatever the size of the violation.
    cg_damping : float, default=0.1
        Damping of the Fisher-vector products (CPO).
    n_threads : int or None, default=1
        torch intra-op threads during :meth:`learn`.
    device : str, default="cpu"
        Torch device.
    random_state : int, RandomState, numpy Generator or None, default=None
        Seeds the networks, action sampling and environment resets (a Generator seeds
        an internal RandomState).
    verbose : int, default=0
        Print one line per epoch if positive.

    Attributes
    ----------
    history_ : list of dict
        Per epoch: ``ep_ret``, ``ep_cost`` (means over finished episodes),
        ``violation_rate`` (fraction with cost above ``cost_limit``), ``mean_action``,
        ``q_hat`` (the constraint statistic), ``xi``, ``sigma``, ``fallback``, ``tau``,
        ``batch_size``, ``case`` (CPO case, None for PPO-Lag), ``lagrange`` and ``kl``.
    actor_, reward_critic_, cost_critic_ : torch.nn.Module
        The networks.
    n_steps_ : int
        Environment steps taken by :meth:`learn`.
    lagrange_ : float
        The PPO-Lag multiplier (0 for CPO).

    See Also
    --------
    GPDTailQuantile : The extreme-quantile estimator of the constraint.
    RiskyShortcutEnv, HeavyTailPointEnv : Test environments with black-swan costs.

    Notes
    -----
    The CPO step follows OmniSafe's current ``CPO`` (case analysis, conjugate gradient,
    backtracking line search with decay 0.8 and the KL bound ``target_kl``) with the
    constraint value ``c = q_hat - cost_limit`` used as is, as in the released EVO code
    (older OmniSafe versions divided ``c`` by the mean episode length). When no policy
    can meet the constraint (``q_hat > cost_limit`` whatever the actions), CPO stays in
    its infeasible-recovery case and the PPO-Lag multiplier grows without bound.

    References
    ----------
    .. [1] S. Gao, Y. Zhou, S. Shao, H. Luo, Y. Bing, J. Ding, L. Fu and X. Wang,
       "Extreme Value Policy Optimization for Safe Reinforcement Learning", ICML 2025.

    Examples
    --------
    >>> from sklearn_icml.safe_rl import EVOAgent, RiskyShortcutEnv
    >>> agent = EVOAgent(env=RiskyShortcutEnv(), cost_limit=10.0, base="ppo_lag",
    ...                  steps_per_epoch=200, actor_hidden=(16,), critic_hidden=(16,),
    ...                  critic_update_iters=2, random_state=0).learn(400)
    >>> len(agent.history_)
    2
    >>> sorted(agent.evaluate(n_episodes=5))
    ['mean_cost', 'mean_return', 'q99_cost', 'violation_rate']
    """

    def __init__(self, *, env, cost_limit=25.0, base="cpo", constraint="quantile",
                 steps_per_epoch=20000, gamma=0.99, lam=0.95, lam_c=0.95, target_kl=0.01,
                 cg_iters=15, line_search_steps=20, actor_hidden=(64, 64),
                 critic_hidden=(64, 64), critic_lr=1e-3, critic_update_iters=10,
                 critic_batch_size=128, cost_buffer_size=100, cost_buffer_percentile=90,
                 tail_quantile=0.9, weight_clip=("log", 0.8, 1.2), prioritize=True,
                 reward_buffer_size=None, reward_buffer_percentile=90,
                 reward_tail_quantile=0.9, oversample_factor=1, free_loc=False,
                 double_threshold=False, actor_lr=3e-4, clip_ratio=0.2, ppo_kl_stop=0.02,
                 lagrangian_lr=0.035, lagrangian_init=0.001,
                 lagrangian_optimizer="sgd", cg_damping=0.1, n_threads=1,
                 device="cpu", random_state=None, verbose=0):
        self.env = env
        self.cost_limit = cost_limit
        self.base = base
        self.constraint = constraint
        self.steps_per_epoch = steps_per_epoch
        self.gamma = gamma
        self.lam = lam
        self.lam_c = lam_c
        self.target_kl = target_kl
        self.cg_iters = cg_iters
        self.line_search_steps = line_search_steps
        self.actor_hidden = actor_hidden
        self.critic_hidden = critic_hidden
        self.critic_lr = critic_lr
        self.critic_update_iters = critic_update_iters
        self.critic_batch_size = critic_batch_size
        self.cost_buffer_size = cost_buffer_size
        self.cost_buffer_percentile = cost_buffer_percentile
        self.tail_quantile = tail_quantile
        self.weight_clip = weight_clip
        self.prioritize = prioritize
        self.reward_buffer_size = reward_buffer_size
        self.reward_buffer_percentile = reward_buffer_percentile
        self.reward_tail_quantile = reward_tail_quantile
        self.oversample_factor = oversample_factor
        self.free_loc = free_loc
        self.double_threshold = double_threshold
        self.actor_lr = actor_lr
        self.clip_ratio = clip_ratio
        self.ppo_kl_stop = ppo_kl_stop
        self.lagrangian_lr = lagrangian_lr
        self.lagrangian_init = lagrangian_init
        self.lagrangian_optimizer = lagrangian_optimizer
        self.cg_damping = cg_damping
        self.n_threads = n_threads
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _validate(self):
        def real(name, lo=None, hi=None, lo_open=False, hi_open=False):
            v = getattr(self, name)
            bad = not isinstance(v, numbers.Real) or isinstance(v, bool) or not np.isfinite(v)
            bad = bad or (lo is not None and (v <= lo if lo_open else v < lo))
            bad = bad or (hi is not None and (v >= hi if hi_open else v > hi))
            if bad:
                lo_s = "(" if lo_open else "["
                hi_s = ")" if hi_open else "]"
                raise ValueError(
                    f"{name} must be a real number in {lo_s}{lo}, {hi}{hi_s}. "
                    f"Got {v!r} instead."
                )

        def integer(name, lo):
            v = getattr(self, name)
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
                raise ValueError(f"{name} must be an int >= {lo}. Got {v!r} instead.")

        real("cost_limit", 0)
        for name in ("cost_buffer_percentile", "reward_buffer_percentile"):
            real(name, 0, 100, lo_open=True, hi_open=True)
        for name in ("tail_quantile", "reward_tail_quantile"):
            real(name, 0, 1, lo_open=True, hi_open=True)
        for name in ("gamma", "lam", "lam_c"):
            real(name, 0, 1)
        for name in ("target_kl", "critic_lr", "actor_lr", "clip_ratio", "ppo_kl_stop"):
            real(name, 0, lo_open=True)
        real("lagrangian_lr", 0)
        real("lagrangian_init", 0)
        real("cg_damping", 0)
        integer("cost_buffer_size", 1)
        integer("steps_per_epoch", 1)
        integer("cg_iters", 1)
        integer("line_search_steps", 1)
        integer("critic_update_iters", 1)
        integer("critic_batch_size", 1)
        integer("oversample_factor", 0)
        if self.reward_buffer_size is not None:
            integer("reward_buffer_size", 1)
        if self.base not in ("cpo", "ppo_lag"):
            raise ValueError(f"base must be 'cpo' or 'ppo_lag'. Got {self.base!r} instead.")
        if self.lagrangian_optimizer not in ("sgd", "adam"):
            raise ValueError(
                "lagrangian_optimizer must be 'sgd' or 'adam'. "
                f"Got {self.lagrangian_optimizer!r} instead."
            )
        if self.constraint not in ("quantile", "expectation"):
            raise ValueError(
                "constraint must be 'quantile' or 'expectation'. "
                f"Got {self.constraint!r} instead."
            )
        wc = self.weight_clip
        if wc is not None and not (
            isinstance(wc, tuple) and len(wc) == 3 and wc[0] in ("log", "ratio")
            and wc[1] <= wc[2]
        ):
            raise ValueError(
                "weight_clip must be None or ('log' | 'ratio', low, high) with low <= high. "
                f"Got {wc!r} instead."
            )
        check_device(self.device)

    # ------------------------------------------------------------------ env handling
    def _make_env(self):
        env = self.env
        if isinstance(env, str):
            env = gym.make(env)
        if not (hasattr(env, "reset") and hasattr(env, "step")
                and hasattr(env, "action_space") and hasattr(env, "observation_space")):
            raise ValueError(
                f"env must be a gymnasium-style environment or id. Got {self.env!r} instead."
            )
        return env

    @staticmethod
    def _step(env, action):
        out = env.step(action)
        if len(out) == 6:
            obs, reward, cost, terminated, truncated, info = out
        elif len(out) == 5:
            obs, reward, terminated, truncated, info = out
            if not isinstance(info, dict) or "cost" not in info:
                raise ValueError(
                    "env gives no cost signal: step must return info['cost'] or a "
                    f"6-tuple (obs, reward, cost, terminated, truncated, info). Got info "
                    f"{info!r} instead."
                )
            cost = info["cost"]
        else:
            raise ValueError(
                f"env.step must return a 5- or 6-tuple. Got {len(out)} items instead."
            )
        reward, cost = float(reward), float(cost)
        if not (np.isfinite(reward) and np.isfinite(cost)):
            raise ValueError(
                f"env returned a non-finite reward or cost. Got reward={reward!r}, "
                f"cost={cost!r} instead."
            )
        return obs, reward, cost, bool(terminated), bool(truncated)

    def _obs_tensor(self, obs):
        return torch.as_tensor(np.asarray(obs, dtype=np.float32).reshape(-1),
                               device=self._device)

    def _env_action(self, act):
        if self._discrete:
            return int(act)
        space = self._env.action_space
        return np.clip(act, space.low, space.high).astype(space.dtype)

    # ------------------------------------------------------------------ setup
    def _setup(self):
        self._device = torch.device(self.device)
        rs = self.random_state
        if isinstance(rs, np.random.Generator):  # seeds of the spec are default_rng(s)
            rs = np.random.RandomState(int(rs.integers(2**32)))
        self._rng = check_random_state(rs)
        self._env = self._make_env()
        space = self._env.action_space
        self._discrete = isinstance(space, gym.spaces.Discrete)
        if not self._discrete and not isinstance(space, gym.spaces.Box):
            raise ValueError(f"action space must be Discrete or Box. Got {space!r} instead.")
        obs_dim = int(np.prod(self._env.observation_space.shape))
        act_dim = int(space.n) if self._discrete else int(np.prod(space.shape))
        self._seed = torch_seed(self._rng)
        with seeded(self._seed, self.device):
            self.actor_ = _Actor(obs_dim, act_dim, tuple(self.actor_hidden),
                                 self._discrete).to(self._device)
            self.reward_critic_ = _mlp([obs_dim, *self.critic_hidden, 1]).to(self._device)
            self.cost_critic_ = _mlp([obs_dim, *self.critic_hidden, 1]).to(self._device)
        self._actor_opt = torch.optim.Adam(self.actor_.parameters(), lr=self.actor_lr)
        self._critic_opt = torch.optim.Adam(
            list(self.reward_critic_.parameters()) + list(self.cost_critic_.parameters()),
            lr=self.critic_lr,
        )
        self._cost_buffer = collections.deque(maxlen=self.cost_buffer_size)
        size = self.reward_buffer_size or 2 * self.steps_per_epoch
        self._adv_buffer = collections.deque(maxlen=size)
        self.lagrange_ = float(self.lagrangian_init) if self.base == "ppo_lag" else 0.0
        self._lambda_param = self._lambda_opt = None
        if self.base == "ppo_lag" and self.lagrangian_optimizer == "adam":
            self._lambda_param = nn.Parameter(torch.tensor(self.lagrange_, dtype=torch.float64))
            self._lambda_opt = torch.optim.Adam([self._lambda_param], lr=self.lagrangian_lr)
        self.history_ = []
        self.n_steps_ = 0
        self._obs = None

    # ------------------------------------------------------------------ rollout
    def _rollout(self, n_steps):
        env = self._env
        if self._obs is None:
            self._obs, _ = env.reset(seed=int(self._rng.randint(2**31 - 1)))
            self._ep = {"obs": [], "act": [], "logp": [], "ret": 0.0, "cost": 0.0}
        obs_l, act_l, logp_l, rew_l, cost_l, end_l = [], [], [], [], [], []
        finished = []
        # the rollout runs the actor in numpy (one small forward pass per step)
        layers = [(m.weight.detach().cpu().numpy().astype(np.float64),
                   m.bias.detach().cpu().numpy().astype(np.float64))
                  for m in self.actor_.net if isinstance(m, nn.Linear)]
        std = None if self._discrete else np.exp(
            self.actor_.log_std.detach().cpu().numpy().astype(np.float64))
        rng = self._rng
        for _ in range(n_steps):
            o = np.asarray(self._obs, dtype=np.float32).reshape(-1)
            h = o.astype(np.float64)
            for i, (W, b_) in enumerate(layers):
                h = W @ h + b_
                if i < len(layers) - 1:
                    h = np.tanh(h)
            if self._discrete:
                e = np.exp(h - h.max())
                cum = np.cumsum(e)
                a_np = np.int64(min(np.searchsorted(cum, rng.random_sample() * cum[-1]),
                                    h.size - 1))
                lp = float(np.log(e[a_np] / cum[-1]))
            else:
                a_np = (h + std * rng.standard_normal(h.size)).astype(np.float32)
                z = (a_np - h) / std
                lp = float(np.sum(-0.5 * z**2 - np.log(std) - 0.5 * np.log(2 * np.pi)))
            obs2, r, c, term, trunc = self._step(env, self._env_action(a_np))
            obs_l.append(o)
            act_l.append(a_np)
            logp_l.append(float(lp))
            rew_l.append(r)
            cost_l.append(c)
            ep = self._ep
            ep["obs"].append(obs_l[-1])
            ep["act"].append(a_np)
            ep["logp"].append(float(lp))
            ep["ret"] += r
            ep["cost"] += c
            # truncation ends the task in these environments: no bootstrap (spec E2 note)
            done = term or trunc
            end_l.append(done)
            if done:
                finished.append({k: (np.asarray(v) if isinstance(v, list) else v)
                                 for k, v in ep.items()})
                self._obs, _ = env.reset(seed=int(self._rng.randint(2**31 - 1)))
                self._ep = {"obs": [], "act": [], "logp": [], "ret": 0.0, "cost": 0.0}
            else:
                self._obs = obs2
        self.n_steps_ += n_steps
        obs = np.asarray(obs_l, dtype=np.float32)
        with torch.no_grad():
            ot = torch.as_tensor(obs, device=self._device)
            v = self.reward_critic_(ot).squeeze(-1).cpu().numpy().astype(np.float64)
            vc = self.cost_critic_(ot).squeeze(-1).cpu().numpy().astype(np.float64)
            last = self._obs_tensor(self._obs)
            v_last = float(self.reward_critic_(last)) if not end_l[-1] else 0.0
            vc_last = float(self.cost_critic_(last)) if not end_l[-1] else 0.0
        rew, cost = np.asarray(rew_l), np.asarray(cost_l)
        adv, ret = self._gae(rew, v, end_l, v_last, self.lam)
        adv_c, ret_c = self._gae(cost, vc, end_l, vc_last, self.lam_c)
        act = np.asarray(act_l)
        batch = {"obs": obs, "act": act, "logp": np.asarray(logp_l), "adv": adv,
                 "adv_c": adv_c, "ret": ret, "ret_c": ret_c}
        return batch, finished

    def _gae(self, rew, val, ends, v_last, lam):
        n = rew.size
        adv = np.zeros(n)
        start = 0
        bounds = [i + 1 for i in range(n) if ends[i]]
        if not bounds or bounds[-1] != n:
            bounds.append(n)
        for stop in bounds:
            r = rew[start:stop]
            v = val[start:stop]
            boot = 0.0 if ends[stop - 1] else v_last
            v_next = np.append(v[1:], boot)
            delta = r + self.gamma * v_next - v
            adv[start:stop] = discounted_cumsum(delta, self.gamma * lam)
            start = stop
        return adv, adv + val

    # ------------------------------------------------------------------ EVT pieces
    def _log_prob_np(self, obs, act):
        with torch.no_grad():
            ot = torch.as_tensor(np.asarray(obs, np.float32), device=self._device)
            at = torch.as_tensor(np.asarray(act), device=self._device)
            return self.actor_.log_prob(ot, at).cpu().numpy().astype(np.float64)

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

    # ------------------------------------------------------------------ updates
    def _tensors(self, batch):
        dev = self._device
        t = {k: torch.as_tensor(np.asarray(v), device=dev) for k, v in batch.items()}
        for k in ("obs", "logp", "adv", "adv_c", "ret", "ret_c"):
            t[k] = t[k].float()
        if not self._discrete:
            t["act"] = t["act"].float()
        return t

    def _cpo_update(self, t, c_stat):
        actor = self.actor_
        obs, act, logp_old = t["obs"], t["act"], t["logp"]
        adv, adv_c = t["adv"], t["adv_c"]
        with torch.no_grad():
            old_dist = actor.dist(obs)

        def surrogates():
            ratio = torch.exp(actor.log_prob(obs, act) - logp_old)
            return (ratio * adv).mean(), (ratio * adv_c).mean()

        def mean_kl():
            kl = torch.distributions.kl_divergence(old_dist, actor.dist(obs))
            return (kl if self._discrete else kl.sum(-1)).mean()

        def fvp(v):
            kl = mean_kl()
            g = _flat_grad(kl, actor, create_graph=True)
            return _flat_grad(g.dot(v), actor) + self.cg_damping * v

        rew_s, cost_s = surrogates()
        g = _flat_grad(rew_s, actor, retain_graph=True).detach()
        b = _flat_grad(cost_s, actor).detach()
        x = _conjugate_gradient(fvp, g, self.cg_iters)
        p = _conjugate_gradient(fvp, b, self.cg_iters)
        q = float(g.dot(x))
        r = float(g.dot(p))
        s = float(b.dot(p))
        ep_costs = float(c_stat - self.cost_limit)
        delta = float(self.target_kl)
        A = B = 0.0
        if float(b.dot(b)) <= 1e-6 and ep_costs < 0:
            case = 4
        else:
            A = q - r**2 / (s + 1e-8)
            B = 2 * delta - ep_costs**2 / (s + 1e-8)
            if ep_costs < 0 and B < 0:
                case = 3
            elif ep_costs < 0 <= B:
                case = 2
            elif ep_costs >= 0 and B >= 0:
                case = 1
            else:
                case = 0
        if case in (3, 4):
            step = math.sqrt(2 * delta / (q + 1e-8)) * x
        elif case in (1, 2):
            lam_a = math.sqrt(max(A, 0.0) / (B + 1e-8))
            lam_b = math.sqrt(max(q, 0.0) / (2 * delta))
            eps = ep_costs + 1e-8
            if ep_costs < 0:
                lam_a_star = float(np.clip(lam_a, 0.0, max(r / eps, 0.0)))
                lam_b_star = float(np.clip(lam_b, r / eps, np.inf))
            else:
                lam_a_star = float(np.clip(lam_a, max(r / eps, 0.0), np.inf))
                lam_b_star = float(np.clip(lam_b, 0.0, max(r / eps, 0.0)))
            f_a = -0.5 * (A / (lam_a_star + 1e-8) + B * lam_a_star) - r * ep_costs / (s + 1e-8)
            f_b = -0.5 * (q / (lam_b_star + 1e-8) + 2 * delta * lam_b_star)
            lam_star = lam_a_star if f_a >= f_b else lam_b_star
            nu_star = max(lam_star * ep_costs - r, 0.0) / (s + 1e-8)
            step = (x - nu_star * p) / (lam_star + 1e-8)
        else:  # infeasible: pure cost-decreasing recovery step
            step = -math.sqrt(2 * delta / (s + 1e-8)) * p
        theta = _flat_params(actor)
        with torch.no_grad():
            rew_before, cost_before = (float(v) for v in surrogates())
        frac, accepted, kl_val = 1.0, False, 0.0
        for _ in range(self.line_search_steps):
            _set_flat_params(actor, theta + frac * step)
            with torch.no_grad():
                rew_new, cost_new = (float(v) for v in surrogates())
                kl_val = float(mean_kl())
            improve = rew_new - rew_before
            cost_diff = cost_new - cost_before
            if not (np.isfinite(rew_new) and np.isfinite(cost_new) and np.isfinite(kl_val)):
                pass
            elif improve < 0 and case > 1:
                pass
            elif cost_diff > max(-ep_costs, 0.0):
                pass
            elif kl_val > delta:
                pass
            else:
                accepted = True
                break
            frac *= 0.8
        if not accepted:
            _set_flat_params(actor, theta)
            kl_val = 0.0
        return case, kl_val

    def _ppo_lag_update(self, t, c_stat):
        if self._lambda_opt is None:  # plain projected ascent
            self.lagrange_ = max(
                0.0, self.lagrange_ + self.lagrangian_lr * (c_stat - self.cost_limit))
        else:  # OmniSafe's Lagrange: Adam on -lambda (c - d), clamped at 0
            self._lambda_opt.zero_grad()
            (-self._lambda_param * float(c_stat - self.cost_limit)).backward()
            self._lambda_opt.step()
            with torch.no_grad():
                self._lambda_param.clamp_(min=0.0)
            self.lagrange_ = float(self._lambda_param.detach())
        lam = self.lagrange_
        adv = (t["adv"] - lam * t["adv_c"]) / (1.0 + lam)
        n = adv.shape[0]
        kl_val = 0.0
        for _ in range(10):
            perm = torch.randperm(n, device=self._device)
            for start in range(0, n, self.critic_batch_size):
                idx = perm[start:start + self.critic_batch_size]
                logp = self.actor_.log_prob(t["obs"][idx], t["act"][idx])
                ratio = torch.exp(logp - t["logp"][idx])
                clipped = torch.clamp(ratio, 1 - self.clip_ratio, 1 + self.clip_ratio)
                loss = -torch.min(ratio * adv[idx], clipped * adv[idx]).mean()
                self._actor_opt.zero_grad()
                loss.backward()
                self._actor_opt.step()
            with torch.no_grad():
                kl_val = float((t["logp"] - self.actor_.log_prob(t["obs"], t["act"])).mean())
            if kl_val > self.ppo_kl_stop:
                break
        return None, kl_val

    def _critic_update(self, t):
        n = t["obs"].shape[0]
        for _ in range(self.critic_update_iters):
            perm = torch.randperm(n, device=self._device)
            for start in range(0, n, self.critic_batch_size):
                idx = perm[start:start + self.critic_batch_size]
                o = t["obs"][idx]
                loss = ((self.reward_critic_(o).squeeze(-1) - t["ret"][idx]) ** 2).mean()
                loss = loss + ((self.cost_critic_(o).squeeze(-1) - t["ret_c"][idx]) ** 2).mean()
                self._critic_opt.zero_grad()
                loss.backward()
                self._critic_opt.step()

    # ------------------------------------------------------------------ public verbs
    def learn(self, total_steps):
        """Train for ``ceil(total_steps / steps_per_epoch)`` epochs (continues if called again).

        Parameters
        ----------
        total_steps : int
            Environment steps to train for.

        Returns
        -------
        self : EVOAgent
            The trained agent.
        """
        if not isinstance(total_steps, numbers.Integral) or total_steps < 1:
            raise ValueError(f"total_steps must be an int >= 1. Got {total_steps!r} instead.")
        if not hasattr(self, "history_"):
            self._validate()
            self._setup()
        n_epochs = -(-int(total_steps) // self.steps_per_epoch)
        seed = torch_seed(self._rng)
        with seeded(seed, self.device), torch_threads(self.n_threads):
            for _ in range(n_epochs):
                self._epoch()
        return self

    def _epoch(self):
        batch, finished = self._rollout(self.steps_per_epoch)
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
        if self.base == "cpo":
            case, kl_val = self._cpo_update(t, c_stat)
        else:
            case, kl_val = self._ppo_lag_update(t, c_stat)
        self._critic_update(t)
        costs = np.asarray([ep["cost"] for ep in finished])
        rets = np.asarray([ep["ret"] for ep in finished])
        n_real = self.steps_per_epoch
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
        if self.verbose:
            print(f"epoch {len(self.history_)}: ret={record['ep_ret']:.3f} "
                  f"cost={record['ep_cost']:.3f} q_hat={c_stat:.3f} "
                  f"viol={record['violation_rate']:.3f} case={case} lam={self.lagrange_:.3f}")

    def _check_trained(self):
        if not hasattr(self, "actor_"):
            raise ValueError("This EVOAgent has not learned yet: call learn first.")

    def predict(self, obs, deterministic=True):
        """Action for one observation.

        Parameters
        ----------
        obs : array-like
            One observation of the environment.
        deterministic : bool, default=True
            The mode of the policy (argmax / Gaussian mean) instead of a sample.

        Returns
        -------
        action : int or ndarray
            The action, clipped to a Box action space.
        """
        self._check_trained()
        with torch.no_grad(), torch_threads(self.n_threads):
            d = self.actor_.dist(self._obs_tensor(obs))
            if deterministic:
                a = d.probs.argmax(-1) if self._discrete else d.mean
            else:
                a = d.sample()
        return self._env_action(a.cpu().numpy())

    def evaluate(self, n_episodes=20, deterministic=True):
        """Run episodes with the current policy (no learning) and summarise their costs.

        Parameters
        ----------
        n_episodes : int, default=20
            Episodes to run.
        deterministic : bool, default=True
            Act with the policy's mode (see :meth:`predict`).

        Returns
        -------
        summary : dict
            ``mean_return``, ``mean_cost``, ``q99_cost`` (empirical 0.99 quantile of the
            episode cost) and ``violation_rate`` (fraction with cost above ``cost_limit``).
        """
        self._check_trained()
        if not isinstance(n_episodes, numbers.Integral) or n_episodes < 1:
            raise ValueError(f"n_episodes must be an int >= 1. Got {n_episodes!r} instead.")
        env = self._env
        rets, costs = [], []
        with seeded(torch_seed(self._rng), self.device):
            for _ in range(n_episodes):
                obs, _ = env.reset(seed=int(self._rng.randint(2**31 - 1)))
                ret = cost = 0.0
                while True:
                    obs, r, c, term, trunc = self._step(env, self.predict(obs, deterministic))
                    ret += r
                    cost += c
                    if term or trunc:
                        break
                rets.append(ret)
                costs.append(cost)
        self._obs = None  # the training episode in progress was interrupted
        costs = np.asarray(costs)
        return {
            "mean_return": float(np.mean(rets)),
            "mean_cost": float(costs.mean()),
            "q99_cost": float(np.quantile(costs, 0.99)),
            "violation_rate": float((costs > self.cost_limit).mean()),
        }
