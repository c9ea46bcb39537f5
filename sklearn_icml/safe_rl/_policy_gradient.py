"""On-policy constrained policy gradient in torch: the base algorithms EVO builds on.

The networks (a tanh MLP actor, categorical or diagonal Gaussian, and reward and cost
critics), rollouts in a gymnasium environment with a cost signal, GAE advantages for
reward and cost, and the two base updates of a constrained policy: CPO (OmniSafe's case
analysis, conjugate gradient and backtracking line search) and PPO with a Lagrange
multiplier. :class:`ConstrainedPolicyGradient` takes the constraint value of each update
from its subclass (:class:`~sklearn_icml.safe_rl.EVOAgent` gives an extreme cost
quantile).
"""

import abc
import math
import numbers

import numpy as np
from scipy.signal import lfilter
from sklearn.utils._param_validation import Interval, StrOptions

from ..base import BaseRunner
from ..utils import check_random_state, draw_seed, optional_import
from ..utils._deprecation import DEPRECATED_PARAM, renamed_param
from ..utils._param_validation import (
    CLOSED_UNIT_INTERVAL,
    N_JOBS,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
)
from ..utils._skorch import check_device, seeded, torch_threads

torch = optional_import("torch", "neural")
gym = optional_import("gymnasium", "rl")
nn = torch.nn


def discounted_cumsum(x, discount):
    """``y[t] = sum_k discount**k x[t + k]`` by a reverse ``scipy.signal.lfilter``."""
    x = np.asarray(x, dtype=np.float64)
    return lfilter([1.0], [1.0, -float(discount)], x[::-1])[::-1]


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


class ConstrainedPolicyGradient(BaseRunner):
    """Base of the on-policy constrained agents: networks, rollouts, CPO and PPO-Lag steps.

    Not a public estimator: a subclass declares the parameters (``__init__``) and writes
    ``_iteration()`` (one ``_rollout``, then one ``_update(t, c)``); ``run(env)`` builds
    the networks (unless it warm-starts) and calls ``_iteration`` ``max_iter`` times. The
    subclass's constraint value ``c`` is compared with ``cost_limit`` by the updates.
    """

    _parameter_constraints: dict = {
        # infinity is no constraint: CPO takes TRPO's step, the multiplier stays 0
        "cost_limit": [Interval(numbers.Real, 0, np.inf, closed="both")],
        "base": [StrOptions({"cpo", "ppo_lag"})],
        "max_iter": [POSITIVE_INT],
        "steps_per_iter": [POSITIVE_INT],
        "gamma": [CLOSED_UNIT_INTERVAL],
        "lam": [CLOSED_UNIT_INTERVAL],
        "lam_c": [CLOSED_UNIT_INTERVAL],
        "target_kl": [POSITIVE_REAL],
        "cg_max_iter": [POSITIVE_INT],
        "line_search_steps": [POSITIVE_INT],
        "actor_hidden_layer_sizes": [tuple, list],
        "critic_hidden_layer_sizes": [tuple, list],
        "critic_learning_rate": [POSITIVE_REAL],
        "critic_max_epochs": [POSITIVE_INT],
        "critic_batch_size": [POSITIVE_INT],
        "actor_learning_rate": [POSITIVE_REAL],
        "clip_ratio": [POSITIVE_REAL],
        "ppo_kl_stop": [POSITIVE_REAL],
        "lagrangian_learning_rate": [NON_NEGATIVE_REAL],
        "lagrangian_init": [NON_NEGATIVE_REAL],
        "lagrangian_optimizer": [StrOptions({"sgd", "adam"})],
        "cg_damping": [NON_NEGATIVE_REAL],
        "warm_start": ["boolean"],
        "n_jobs": N_JOBS,
        "device": [str, torch.device],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        # the deprecated names of renamed parameters: the new name's constraints, or unset
        "actor_hidden": [tuple, list, DEPRECATED_PARAM],
        "critic_hidden": [tuple, list, DEPRECATED_PARAM],
        "critic_lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "actor_lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "lagrangian_lr": [NON_NEGATIVE_REAL, DEPRECATED_PARAM],
        "cg_iters": [POSITIVE_INT, DEPRECATED_PARAM],
        "critic_update_iters": [POSITIVE_INT, DEPRECATED_PARAM],
    }

    #: (old, new) names of the renamed parameters, read through ``renamed_param`` by ``run``
    _renamed_params = (
        ("actor_hidden", "actor_hidden_layer_sizes"),
        ("critic_hidden", "critic_hidden_layer_sizes"),
        ("critic_lr", "critic_learning_rate"),
        ("actor_lr", "actor_learning_rate"),
        ("lagrangian_lr", "lagrangian_learning_rate"),
        ("cg_iters", "cg_max_iter"),
        ("critic_update_iters", "critic_max_epochs"),
    )

    def _initialize(self, env):
        """Build the environment, the networks, their optimisers and the multiplier."""
        params = self._read_renamed_params()
        check_device(self.device)
        self._device = torch.device(self.device)
        self._rng = check_random_state(self.random_state)
        self.env_ = self._make_env(env)
        space = self.env_.action_space
        self._discrete = isinstance(space, gym.spaces.Discrete)
        if not self._discrete and not isinstance(space, gym.spaces.Box):
            raise ValueError(f"action space must be Discrete or Box. Got {space!r} instead.")
        obs_dim = int(np.prod(self.env_.observation_space.shape))
        act_dim = int(space.n) if self._discrete else int(np.prod(space.shape))
        with seeded(draw_seed(self._rng), self.device):
            self.actor_ = _Actor(obs_dim, act_dim, tuple(params["actor_hidden_layer_sizes"]),
                                 self._discrete).to(self._device)
            critic_sizes = [obs_dim, *params["critic_hidden_layer_sizes"], 1]
            self.reward_critic_ = _mlp(critic_sizes).to(self._device)
            self.cost_critic_ = _mlp(critic_sizes).to(self._device)
        self._actor_opt = torch.optim.Adam(self.actor_.parameters(),
                                           lr=params["actor_learning_rate"])
        self._critic_opt = torch.optim.Adam(
            list(self.reward_critic_.parameters()) + list(self.cost_critic_.parameters()),
            lr=params["critic_learning_rate"],
        )
        self.lagrange_ = float(self.lagrangian_init) if self.base == "ppo_lag" else 0.0
        self._lambda_param = self._lambda_opt = None
        if self.base == "ppo_lag" and self.lagrangian_optimizer == "adam":
            self._lambda_param = nn.Parameter(torch.tensor(self.lagrange_, dtype=torch.float64))
            self._lambda_opt = torch.optim.Adam([self._lambda_param],
                                                lr=params["lagrangian_learning_rate"])
        self.history_ = []
        self.n_steps_ = 0
        self._obs = None

    def _read_renamed_params(self):
        """The values of the renamed parameters, given under either name (the old one warns)."""
        self._params = {new: renamed_param(self, old, new) for old, new in self._renamed_params}
        return self._params

    def _run(self, env):
        if not (self.warm_start and hasattr(self, "actor_")):
            self._initialize(env)
        else:
            self._read_renamed_params()
            if env is not self.env_:  # warm start on another environment: a new episode
                self.env_ = self._make_env(env)
                self._obs = None
        self._progress.total = self.max_iter  # a bar over the iterations on a terminal
        with seeded(draw_seed(self._rng), self.device), torch_threads(self.n_jobs):
            for _ in range(self.max_iter):
                self._iteration()

    @abc.abstractmethod
    def _iteration(self):
        """One iteration: collect on-policy data from the environment, then take the
        constrained policy step."""

    def _update(self, t, c_stat):
        """The base algorithm's actor update; ``(cpo_case or None, kl)``."""
        if self.base == "cpo":
            return self._cpo_update(t, c_stat)
        return self._ppo_lag_update(t, c_stat)

    # ------------------------------------------------------------------ env handling
    @staticmethod
    def _make_env(env):
        given = env
        if isinstance(env, str):
            from ._bullet import BULLET_ID, BulletSafetyEnv

            # bullet-safety-gym's tasks ignore reset seeds: the wrapper seeds them
            env = BulletSafetyEnv(env_id=env) if BULLET_ID.fullmatch(env) else gym.make(env)
        if not (hasattr(env, "reset") and hasattr(env, "step")
                and hasattr(env, "action_space") and hasattr(env, "observation_space")):
            raise ValueError(
                f"env must be a gymnasium-style environment or id. Got {given!r} instead."
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
        space = self.env_.action_space
        return np.clip(act, space.low, space.high).astype(space.dtype)

    # ------------------------------------------------------------------ rollout
    def _rollout(self, n_steps):
        env = self.env_
        if self._obs is None:
            self._obs, _ = env.reset(seed=draw_seed(self._rng))
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
            # a truncated episode counts as finished (no value bootstrap): the cost
            # environments end their task at the horizon
            done = term or trunc
            end_l.append(done)
            if done:
                finished.append({k: (np.asarray(v) if isinstance(v, list) else v)
                                 for k, v in ep.items()})
                self._obs, _ = env.reset(seed=draw_seed(self._rng))
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
        x = _conjugate_gradient(fvp, g, self._params["cg_max_iter"])
        p = _conjugate_gradient(fvp, b, self._params["cg_max_iter"])
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
        if math.isinf(self.cost_limit):  # no constraint: plain PPO
            self.lagrange_ = 0.0
        elif self._lambda_opt is None:  # plain projected ascent
            step = self._params["lagrangian_learning_rate"]
            self.lagrange_ = max(0.0, self.lagrange_ + step * (c_stat - self.cost_limit))
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
        for _ in range(self._params["critic_max_epochs"]):
            perm = torch.randperm(n, device=self._device)
            for start in range(0, n, self.critic_batch_size):
                idx = perm[start:start + self.critic_batch_size]
                o = t["obs"][idx]
                loss = ((self.reward_critic_(o).squeeze(-1) - t["ret"][idx]) ** 2).mean()
                loss = loss + ((self.cost_critic_(o).squeeze(-1) - t["ret_c"][idx]) ** 2).mean()
                self._critic_opt.zero_grad()
                loss.backward()
                self._critic_opt.step()

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
        self._check_is_run()
        with torch.no_grad(), torch_threads(self.n_jobs):
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
        self._check_is_run()
        if isinstance(n_episodes, bool) or not isinstance(n_episodes, numbers.Integral):
            raise TypeError(f"n_episodes must be an int. Got {n_episodes!r} instead.")
        if n_episodes < 1:
            raise ValueError(f"n_episodes must be >= 1. Got {n_episodes!r} instead.")
        env = self.env_
        rets, costs = [], []
        with seeded(draw_seed(self._rng), self.device):
            for _ in range(n_episodes):
                obs, _ = env.reset(seed=draw_seed(self._rng))
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
