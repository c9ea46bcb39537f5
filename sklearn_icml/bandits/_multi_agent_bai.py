"""Best arm identification for clustered multi-agent bandits: Cl-BAI, BAI-Cl, BAI-Cl++, naive.

Yash, Karamchandani and Ghosh, "Near Optimal Best Arm Identification for Clustered Bandits",
ICML 2025. The paper's full text could not be read; the confidence radii, round caps and
union-bound budgets are the self-consistent choices of the project's spec (marked INFERRED
there), each exposed as a parameter. Every algorithm works on sums of pulls drawn in one call
(see :class:`ClusteredBanditEnv`), so its cost grows with the number of elimination rounds,
not with the number of pulls.
"""

import math
import numbers
import warnings
from collections import namedtuple
from dataclasses import dataclass, field, fields

import numpy as np
from joblib import Parallel, delayed
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from ..utils.validation import check_int_vector
from ._clustered_env import ClusteredBanditEnv, _check_int

SEResult = namedtuple("SEResult", ["active", "means", "counts", "rounds"])
SEResult.__doc__ = """Result of :func:`successive_elimination`.

Attributes
----------
active : ndarray of int
    Arm ids still active when SE stopped (exactly one when it ran until one arm was left).
means : ndarray of float, aligned with the ``arms`` passed in
    Empirical mean of every arm; an eliminated arm keeps the estimate it had when it was
    eliminated. NaN only for an arm never pulled (when ``arms`` has a single arm).
counts : ndarray of int, aligned with ``arms``
    Pulls of every arm.
rounds : int
    Elimination rounds run (0 when ``arms`` has a single arm).
"""

_MEGABYTES_PER_BLOCK = 50


def _round_size(r, n_arms, delta):
    """Pulls per active arm after round ``r``: ceil(2 / eps_r^2 * ln(4 |S| r^2 / delta))."""
    eps = 2.0**-r
    return math.ceil(2.0 / eps**2 * math.log(4.0 * n_arms * r * r / delta))


def _batched_se(draw, agents, arms, delta, max_rounds, max_total_pulls):
    """Successive elimination of many agents at once, each on its own arm set.

    Agent ``agents[b]`` runs SE on ``arms[b]`` (all sets of the same size ``s``); the agents
    advance round by round in lockstep and all pulls of a round come from one ``draw``
    call, but each agent's rounds, eliminations and stopping are its own, exactly as if it
    ran alone. ``draw(agents, arms, n) -> sums`` pulls vectors of (agent, arm, count).

    Returns
    -------
    active : ndarray of bool, shape (B, s)
        Arms still active when each agent stopped.
    means : ndarray of shape (B, s)
        Empirical means (an eliminated arm keeps its estimate at elimination; NaN when
        ``s == 1``, since nothing is pulled).
    counts : ndarray of int, shape (B, s)
        Pulls of every arm.
    rounds : ndarray of int, shape (B,)
        Rounds run by each agent.
    """
    n_batch, n_set = arms.shape
    counts = np.zeros((n_batch, n_set), dtype=np.int64)
    sums = np.zeros((n_batch, n_set))
    active = np.ones((n_batch, n_set), dtype=bool)
    rounds = np.zeros(n_batch, dtype=np.int64)
    if n_set == 1 or n_batch == 0:
        return active, np.full((n_batch, n_set), np.nan), counts, rounds
    running = np.arange(n_batch)
    r = 0
    while running.size:
        r += 1
        eps = 2.0**-r
        n_r = _round_size(r, n_set, delta)
        act = active[running]
        need = np.where(act, n_r - counts[running], 0)
        over = counts[running].sum(axis=1) + need.sum(axis=1) > max_total_pulls
        if np.any(over):
            b = running[np.flatnonzero(over)[0]]
            raise RuntimeError(
                f"successive elimination on agent {int(agents[b])} would exceed "
                f"max_total_pulls={max_total_pulls} pulls in round {r} with "
                f"{int(active[b].sum())} arms still active; the arms may be tied (the "
                "instance is not identifiable). No answer is returned rather than a wrong one."
            )
        ii, jj = np.nonzero(act)
        rows = running[ii]
        sums[rows, jj] += draw(agents[rows], arms[rows, jj], need[ii, jj])
        counts[rows, jj] = n_r
        est = np.where(act, sums[running] / n_r, -np.inf)
        act &= est >= est.max(axis=1, keepdims=True) - 2.0 * eps
        active[running] = act
        rounds[running] = r
        done = act.sum(axis=1) == 1
        if max_rounds is not None and r == max_rounds:
            done[:] = True
        running = running[~done]
    return active, sums / counts, counts, rounds


def successive_elimination(
    env, agent, arms, delta, max_rounds=None, *, max_total_pulls=10**12
):
    """Successive elimination (SE) of one agent on a set of arms, with fresh samples.

    Round ``r`` brings every active arm to ``n_r = ceil(2 / eps_r^2 * ln(4 |S| r^2 / delta))``
    pulls, with ``eps_r = 2^-r``, and removes every arm whose mean is below the best active
    mean minus ``2 eps_r``. With 1-sub-Gaussian rewards, all estimates stay within ``eps_r``
    of the truth in every round with probability at least ``1 - delta``; then the best arm is
    never removed and an arm still active after round ``r`` has a gap of at most ``4 eps_r``.

    Parameters
    ----------
    env : ClusteredBanditEnv
        The environment to pull from.
    agent : int
        The agent that pulls.
    arms : array-like of int
        The arm set ``S`` (distinct arm ids, at least one).
    delta : float
        Confidence, in (0, 1).
    max_rounds : int, default=None
        Stop after this many rounds even if several arms are still active. ``None`` runs
        until one arm is left.
    max_total_pulls : int, default=10**12
        Safety limit: a run that would exceed it raises ``RuntimeError`` (tied arms never
        separate) instead of returning a wrong answer.

    Returns
    -------
    result : SEResult
        ``(active, means, counts, rounds)``; see :class:`SEResult`.

    References
    ----------
    .. [1] E. Even-Dar, S. Mannor and Y. Mansour, "Action Elimination and Stopping Conditions
       for the Multi-Armed Bandit and Reinforcement Learning Problems", JMLR 2006.

    Examples
    --------
    >>> from sklearn_icml.bandits import ClusteredBanditEnv, successive_elimination
    >>> env = ClusteredBanditEnv([[0.2, 1.2, 0.7]], [0], random_state=0)
    >>> res = successive_elimination(env, agent=0, arms=[0, 1, 2], delta=0.05)
    >>> res.active, res.rounds, int(res.counts.sum()) == env.total_pulls
    (array([1]), 3, True)
    """
    _check_env(env)
    agent = _check_int(agent, "agent", low=0, high=env.n_agents)
    arms = check_int_vector(np.atleast_1d(arms), "arms", low=0)
    if arms.shape[0] == 0:
        raise ValueError("arms is empty; SE needs at least one arm.")
    if arms.max() >= env.n_arms:
        raise ValueError(f"arms must be in [0, {env.n_arms}); got {int(arms.max())!r} instead.")
    if np.unique(arms).shape[0] != arms.shape[0]:
        raise ValueError(f"arms must be distinct; got {arms.tolist()!r} instead.")
    _check_delta(delta)
    if max_rounds is not None:
        max_rounds = _check_int(max_rounds, "max_rounds", low=1)
    max_total_pulls = _check_int(max_total_pulls, "max_total_pulls", low=1)
    active, means, counts, rounds = _batched_se(
        env._draw, np.array([agent]), arms[None, :], delta, max_rounds, max_total_pulls
    )
    return SEResult(arms[active[0]], means[0], counts[0], int(rounds[0]))


def _check_delta(delta):
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"delta must be a float in (0, 1); got {delta!r} instead.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1); got {delta!r} instead.")


def _check_env(env):
    if not isinstance(env, ClusteredBanditEnv):
        raise TypeError(
            f"env must be a ClusteredBanditEnv; got {type(env).__name__} instead."
        )


def _same_cluster_edges(means, active, eta):
    """Edges (i, j), i < j, of the clustering graph.

    ``(i, j)`` is an edge when ``|means[i, k] - means[j, k]| <= eta / 2`` for every arm ``k``
    active for ``i`` or for ``j``. The O(N^2 K) comparison runs in row blocks of at most
    about 50 MB.

    Returns
    -------
    rows, cols : ndarray of int
        Endpoints of the edges.
    """
    n_agents, n_arms = means.shape
    block = max(1, int(_MEGABYTES_PER_BLOCK * 2**20 // (8 * n_agents * n_arms)))
    rows, cols = [], []
    half = eta / 2.0
    for start in range(0, n_agents, block):
        stop = min(start + block, n_agents)
        far = np.abs(means[start:stop, None, :] - means[None, :, :]) > half
        union = active[start:stop, None, :] | active[None, :, :]
        linked = ~np.any(far & union, axis=2)
        i, j = np.nonzero(linked)
        i += start
        keep = i < j
        rows.append(i[keep])
        cols.append(j[keep])
    return np.concatenate(rows), np.concatenate(cols)


def _cluster_agents(means, active, eta):
    """Connected components of the clustering graph: ``(n_components, labels)``."""
    n_agents = means.shape[0]
    rows, cols = _same_cluster_edges(means, active, eta)
    graph = coo_matrix(
        (np.ones(rows.shape[0], dtype=np.int8), (rows, cols)), shape=(n_agents, n_agents)
    ).tocsr()
    n_comp, labels = connected_components(graph, directed=False)
    return int(n_comp), labels.astype(np.int64)


def _id_bits(n_arms):
    return max(1, math.ceil(math.log2(n_arms)))


@dataclass
class MultiAgentBAIResult:
    """What a multi-agent best arm identification run returns.

    Attributes
    ----------
    best_arms : ndarray of shape (n_agents,)
        Arm declared best for every agent.
    labels : ndarray of shape (n_agents,)
        Cluster label of every agent (NaiveBAI: the best arm id).
    n_clusters_found : int
        Number of distinct clusters found.
    sample_complexity : int
        Total pulls made during the run.
    samples_per_agent : ndarray of shape (n_agents,)
        Pulls made by every agent during the run.
    phase_samples : dict
        ``{"phase1": int, "phase2": int}`` pulls of each phase.
    rounds_per_agent : ndarray of shape (n_agents,)
        Elimination rounds each agent ran, over all its SE calls.
    n_messages : int
        Messages exchanged between agents and server.
    n_reals : int
        Real numbers sent.
    n_bits : int
        Bits sent.
    communication_cost : float
        ``c_real * n_reals + c_bit * n_bits``.
    n_phase1_agents : int or None
        BAI-Cl and BAI-Cl++: agents visited in phase 1.
    found_best_arms : list of int or None
        BAI-Cl and BAI-Cl++: the best arms found in phase 1, in order of discovery.
    """

    best_arms: np.ndarray
    labels: np.ndarray
    n_clusters_found: int
    sample_complexity: int
    samples_per_agent: np.ndarray
    phase_samples: dict
    rounds_per_agent: np.ndarray
    n_messages: int
    n_reals: int
    n_bits: int
    communication_cost: float
    n_phase1_agents: int | None = None
    found_best_arms: list | None = field(default=None)

    def score(self, env):
        """Fraction of agents whose declared best arm is ``env.best_arms`` (1.0 = all)."""
        _check_env(env)
        if env.n_agents != self.best_arms.shape[0]:
            raise ValueError(
                f"env has {env.n_agents} agents but this result has "
                f"{self.best_arms.shape[0]}; score the environment the algorithm ran on."
            )
        return float(np.mean(self.best_arms == env.best_arms))


class _Run:
    """Book-keeping of one run: pulls per phase, rounds, messages."""

    def __init__(self, env, max_total_pulls):
        self.env = env
        self.draw = env._draw
        self.max_total_pulls = max_total_pulls
        self.start = env.pulls_per_agent.copy()
        self.rounds = np.zeros(env.n_agents, dtype=np.int64)
        self.phase1 = None
        self.n_messages = 0
        self.n_reals = 0
        self.n_bits = 0

    def se(self, agent, arms, delta, max_rounds=None):
        """SE of one agent on ``arms``; returns an SEResult."""
        active, means, counts, rounds = self.se_batch(
            np.array([agent]), arms[None, :], delta, max_rounds
        )
        return SEResult(arms[active[0]], means[0], counts[0], int(rounds[0]))

    def se_batch(self, agents, arms, delta, max_rounds=None):
        """SE of several agents at once; see :func:`_batched_se`."""
        out = _batched_se(self.draw, agents, arms, delta, max_rounds, self.max_total_pulls)
        self.rounds[agents] += out[3]
        return out

    def end_phase1(self):
        self.phase1 = int((self.env.pulls_per_agent - self.start).sum())

    def send(self, n_messages=1, *, reals=0, bits=0):
        self.n_messages += n_messages
        self.n_reals += reals
        self.n_bits += bits


class _BaseMultiAgentBAI(BaseEstimator):
    """Owns ``run`` and its checks; subclasses write ``_run(env, book, rng)``."""

    _parameter_constraints = {
        "delta": [Interval(numbers.Real, 0, 1, closed="neither")],
        "c_real": [Interval(numbers.Real, 0, None, closed="left")],
        "c_bit": [Interval(numbers.Real, 0, None, closed="left")],
        "max_total_pulls": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def run(self, env):
        """Identify the best arm of every agent of ``env``.

        Parameters
        ----------
        env : ClusteredBanditEnv
            The environment; its pull counters keep counting (this run's pulls are
            measured as the difference).

        Returns
        -------
        result : MultiAgentBAIResult
            Best arms, clusters, pulls and communication. Its fields are also stored on
            the algorithm as attributes ending in ``_`` (``best_arms_``, ``labels_``, ...).
        """
        self._validate_params()
        _check_env(env)
        self._check_run_params(env)
        book = _Run(env, self.max_total_pulls)
        rng = check_random_state(getattr(self, "random_state", None))
        best, labels, n_found, extra = self._run(env, book, rng)
        spent = env.pulls_per_agent - book.start
        total = int(spent.sum())
        phase1 = total if book.phase1 is None else book.phase1
        result = MultiAgentBAIResult(
            best_arms=best,
            labels=labels,
            n_clusters_found=int(n_found),
            sample_complexity=total,
            samples_per_agent=spent,
            phase_samples={"phase1": phase1, "phase2": total - phase1},
            rounds_per_agent=book.rounds,
            n_messages=book.n_messages,
            n_reals=book.n_reals,
            n_bits=book.n_bits,
            communication_cost=float(self.c_real * book.n_reals + self.c_bit * book.n_bits),
            **extra,
        )
        for f in fields(result):
            value = getattr(result, f.name)
            if value is not None:
                setattr(self, f.name + "_", value)
        self.result_ = result
        return result

    def _check_run_params(self, env):
        if hasattr(self, "eta") and self.eta is None:
            raise ValueError(
                f"eta must be given to {type(self).__name__}: the separability margin is "
                "part of the problem statement (the learner does not read env.eta). Got "
                "None instead."
            )

    def score(self, env):
        """Fraction of agents whose ``best_arms_`` equals ``env.best_arms`` (1.0 = all).

        Parameters
        ----------
        env : ClusteredBanditEnv
            The environment the algorithm ran on.

        Returns
        -------
        score : float
        """
        if not hasattr(self, "result_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance has not run yet; call run(env) first."
            )
        return self.result_.score(env)


_ETA = [Interval(numbers.Real, 0, None, closed="neither"), None]
_ROUND_CONST = [Interval(numbers.Real, 4, None, closed="neither")]


class NaiveBAI(_BaseMultiAgentBAI):
    """Every agent identifies its best arm alone, by successive elimination at level delta/N.

    The baseline of the paper: no clustering, no sharing; each agent reports its arm id
    (``ceil(log2 K)`` bits).

    Parameters
    ----------
    delta : float, default=0.05
        Probability of any mistake, in (0, 1): with probability at least ``1 - delta``
        every agent gets its best arm.
    c_real : float, default=64.0
        Cost of sending one real number.
    c_bit : float, default=1.0
        Cost of sending one bit.
    max_total_pulls : int, default=10**12
        Safety limit of one SE call; exceeding it raises ``RuntimeError``.

    Attributes
    ----------
    best_arms_, labels_, n_clusters_found_, sample_complexity_, samples_per_agent_, \
phase_samples_, rounds_per_agent_, n_messages_, n_reals_, n_bits_, communication_cost_
        The fields of the last :class:`MultiAgentBAIResult` (``labels_`` is the best arm).
    result_ : MultiAgentBAIResult
        The last result.

    See Also
    --------
    ClBAI, BAICl : algorithms that share samples between agents of a cluster.

    References
    ----------
    .. [1] Yash, N. Karamchandani and A. Ghosh, "Near Optimal Best Arm Identification for
       Clustered Bandits", ICML 2025, arXiv:2505.10147.

    Examples
    --------
    >>> from sklearn_icml.bandits import ClusteredBanditEnv, NaiveBAI
    >>> env = ClusteredBanditEnv([[0.9, 0.1, 0.4], [0.1, 0.9, 0.4]], [0, 1, 0, 1],
    ...                          random_state=0)
    >>> res = NaiveBAI(delta=0.05).run(env)
    >>> res.best_arms, res.n_bits
    (array([0, 1, 0, 1]), 8)
    """

    def __init__(self, *, delta=0.05, c_real=64.0, c_bit=1.0, max_total_pulls=10**12):
        self.delta = delta
        self.c_real = c_real
        self.c_bit = c_bit
        self.max_total_pulls = max_total_pulls

    def _run(self, env, book, rng):
        n, k = env.n_agents, env.n_arms
        active = book.se_batch(np.arange(n), np.tile(np.arange(k), (n, 1)), self.delta / n)[0]
        best = np.argmax(active, axis=1).astype(np.int64)  # the single arm left
        book.send(n, bits=n * _id_bits(k))
        return best, best.copy(), np.unique(best).shape[0], {}


class ClBAI(_BaseMultiAgentBAI):
    """Cl-BAI: cluster the agents first, then identify one best arm per cluster.

    Phase 1: every agent runs ``R = ceil(log2(round_const / eta))`` rounds of successive
    elimination on all K arms at level ``delta / (2N)`` and uploads its K means and its
    active set. The server links agents ``i`` and ``j`` when their means differ by at most
    ``eta / 2`` on every arm active for either of them, and takes connected components as
    clusters. Phase 2: one representative per cluster finishes SE (fresh samples) on its
    active set and the server broadcasts the arm to the cluster. No need to know the
    number of clusters.

    Parameters
    ----------
    delta : float, default=0.05
        Probability of any mistake, in (0, 1).
    eta : float
        Separability margin of the instance (``> 0``), which the learner must know: on
        every bandit the best arm of any other bandit is at least ``eta`` worse. Required.
    round_const : float, default=17.0
        Phase 1 runs ``ceil(log2(round_const / eta))`` rounds, so its accuracy is
        ``eta / round_const`` or better; must be ``> 4``.
    representative : {"first", "random"}, default="first"
        Which agent of a cluster finishes SE: the smallest index or a random member.
    c_real : float, default=64.0
        Cost of sending one real number.
    c_bit : float, default=1.0
        Cost of sending one bit.
    max_total_pulls : int, default=10**12
        Safety limit of one SE call; exceeding it raises ``RuntimeError``.
    random_state : int, RandomState instance or None, default=None
        Draws the representatives when ``representative="random"``.

    Attributes
    ----------
    best_arms_, labels_, n_clusters_found_, sample_complexity_, samples_per_agent_, \
phase_samples_, rounds_per_agent_, n_messages_, n_reals_, n_bits_, communication_cost_
        The fields of the last :class:`MultiAgentBAIResult`.
    result_ : MultiAgentBAIResult
        The last result.

    See Also
    --------
    BAICl : identifies first, then clusters; needs the number of clusters.
    NaiveBAI : the baseline without sharing.

    Notes
    -----
    With probability at least ``1 - delta`` every agent gets its best arm, provided the
    instance is separable with margin ``eta`` and rewards are 1-sub-Gaussian; on an
    instance that violates separability (``env.eta <= 0``, or an ``eta`` larger than the
    true margin) the guarantee is void. Splitting a cluster only costs samples; merging
    two clusters is what breaks correctness, hence the strict ``eta / 2`` rule.
    The radii and budgets follow the project's spec (INFERRED where the paper could not be
    read); the paper reports a sample complexity of order
    ``N K max(Delta, eta)^-2 + M K Delta^-2`` and communication ``O(N K)`` reals.

    References
    ----------
    .. [1] Yash, N. Karamchandani and A. Ghosh, "Near Optimal Best Arm Identification for
       Clustered Bandits", ICML 2025, arXiv:2505.10147.

    Examples
    --------
    >>> from sklearn_icml.bandits import ClBAI, ClusteredBanditEnv
    >>> env = ClusteredBanditEnv([[0.9, 0.1, 0.4], [0.1, 0.9, 0.4]], [0, 1, 0, 1],
    ...                          random_state=0)
    >>> res = ClBAI(eta=0.5).run(env)
    >>> res.best_arms, res.labels, res.n_reals
    (array([0, 1, 0, 1]), array([0, 1, 0, 1]), 12)
    """

    _parameter_constraints = {
        **_BaseMultiAgentBAI._parameter_constraints,
        "eta": _ETA,
        "round_const": _ROUND_CONST,
        "representative": [StrOptions({"first", "random"})],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        delta=0.05,
        eta=None,
        round_const=17.0,
        representative="first",
        c_real=64.0,
        c_bit=1.0,
        max_total_pulls=10**12,
        random_state=None,
    ):
        self.delta = delta
        self.eta = eta
        self.round_const = round_const
        self.representative = representative
        self.c_real = c_real
        self.c_bit = c_bit
        self.max_total_pulls = max_total_pulls
        self.random_state = random_state

    def _run(self, env, book, rng):
        n, k = env.n_agents, env.n_arms
        level = self.delta / (2 * n)
        n_rounds = math.ceil(math.log2(self.round_const / self.eta))
        active, means, _, _ = book.se_batch(
            np.arange(n), np.tile(np.arange(k), (n, 1)), level, n_rounds
        )
        book.send(n, reals=n * k, bits=n * k)  # each agent: K means and its active set
        book.end_phase1()

        n_comp, labels = _cluster_agents(means, active, self.eta)
        best = np.empty(n, dtype=np.int64)
        for c in range(n_comp):
            members = np.flatnonzero(labels == c)
            rep = members[0] if self.representative == "first" else rng.choice(members)
            candidates = np.flatnonzero(active[rep])
            if candidates.shape[0] == 1:
                best[members] = candidates[0]
            else:
                best[members] = book.se(rep, candidates, level).active[0]
            book.send(members.shape[0], bits=members.shape[0] * _id_bits(k))
        return best, labels, n_comp, {}


class BAICl(_BaseMultiAgentBAI):
    """BAI-Cl: find the M best arms on a few agents first, then match every other agent.

    Phase 1 visits agents in a random order until M distinct best arms are known: an agent
    runs ``ceil(log2(round_const / eta))`` rounds of SE on all arms; if one of its surviving
    arms is a known best arm, that is its answer, otherwise it finishes SE (fresh samples)
    and adds the winner to the known best arms. Phase 2: every remaining agent runs SE on
    the M known best arms only, which are at least ``eta`` apart on its bandit. All SE calls
    run at level ``delta / (2N)``.

    Parameters
    ----------
    n_clusters : int
        M, the number of clusters, in ``[1, K]`` (must be known).
    delta : float, default=0.05
        Probability of any mistake, in (0, 1).
    eta : float
        Separability margin of the instance (``> 0``). Required.
    round_const : float, default=17.0
        Phase-1 SE runs ``ceil(log2(round_const / eta))`` rounds; must be ``> 4``.
    c_real : float, default=64.0
        Cost of sending one real number.
    c_bit : float, default=1.0
        Cost of sending one bit.
    max_total_pulls : int, default=10**12
        Safety limit of one SE call; exceeding it raises ``RuntimeError``.
    random_state : int, RandomState instance or None, default=None
        Draws the order in which phase 1 visits agents.

    Attributes
    ----------
    best_arms_, labels_, n_clusters_found_, sample_complexity_, samples_per_agent_, \
phase_samples_, rounds_per_agent_, n_messages_, n_reals_, n_bits_, communication_cost_
        The fields of the last :class:`MultiAgentBAIResult`; ``labels_`` is the position of
        an agent's best arm in ``found_best_arms_``.
    n_phase1_agents_ : int
        Agents visited in phase 1 (a coupon-collector time, about ``M H_M`` for equal
        clusters).
    found_best_arms_ : list of int
        The best arms found in phase 1, in order of discovery.
    result_ : MultiAgentBAIResult
        The last result.

    See Also
    --------
    ClBAI : clusters first; does not need the number of clusters.
    NaiveBAI : the baseline without sharing.

    Notes
    -----
    With probability at least ``1 - delta`` every agent gets its best arm on instances
    separable with margin ``eta`` and 1-sub-Gaussian rewards; the guarantee is void on
    instances violating separability. If phase 1 visits every agent before finding
    ``n_clusters`` best arms, a warning says so and ``n_clusters_found_ < n_clusters``.
    Among several known best arms surviving an agent's phase-1 SE (impossible on the good
    event), the one with the highest estimated mean is taken (INFERRED). Communication:
    ``ceil(log2 K)`` bits per phase-1 agent, ``(M + 1) ceil(log2 K)`` per phase-2 agent, no
    real numbers.

    References
    ----------
    .. [1] Yash, N. Karamchandani and A. Ghosh, "Near Optimal Best Arm Identification for
       Clustered Bandits", ICML 2025, arXiv:2505.10147.

    Examples
    --------
    >>> from sklearn_icml.bandits import BAICl, ClusteredBanditEnv
    >>> env = ClusteredBanditEnv([[0.9, 0.1, 0.4], [0.1, 0.9, 0.4]], [0, 1, 0, 1, 1, 0],
    ...                          random_state=0)
    >>> res = BAICl(n_clusters=2, eta=0.5, random_state=0).run(env)
    >>> res.best_arms, res.n_reals, res.found_best_arms
    (array([0, 1, 0, 1, 1, 0]), 0, [0, 1])
    """

    _parameter_constraints = {
        **_BaseMultiAgentBAI._parameter_constraints,
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "eta": _ETA,
        "round_const": _ROUND_CONST,
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_clusters,
        *,
        delta=0.05,
        eta=None,
        round_const=17.0,
        c_real=64.0,
        c_bit=1.0,
        max_total_pulls=10**12,
        random_state=None,
    ):
        self.n_clusters = n_clusters
        self.delta = delta
        self.eta = eta
        self.round_const = round_const
        self.c_real = c_real
        self.c_bit = c_bit
        self.max_total_pulls = max_total_pulls
        self.random_state = random_state

    def _check_run_params(self, env):
        super()._check_run_params(env)
        if self.n_clusters > env.n_arms:
            raise ValueError(
                f"n_clusters must be <= the number of arms K = {env.n_arms} (clusters have "
                f"distinct best arms); got {self.n_clusters!r} instead."
            )

    # phase-1 confidence levels: (capped SE, finishing SE)
    def _phase1_levels(self, n):
        return self.delta / (2 * n), self.delta / (2 * n)

    def _phase1(self, env, book, rng):
        """Visit agents until n_clusters best arms are known; return the bookkeeping."""
        n, k = env.n_agents, env.n_arms
        capped_level, full_level = self._phase1_levels(n)
        n_rounds = math.ceil(math.log2(self.round_const / self.eta))
        arms = np.arange(k)
        order = rng.permutation(n)
        best = np.full(n, -1, dtype=np.int64)
        found = []
        visited = 0
        for i in order:
            if len(found) >= self.n_clusters:
                break
            visited += 1
            res = book.se(i, arms, capped_level, n_rounds)
            known = [a for a in res.active.tolist() if a in found]
            if known:
                best[i] = max(known, key=lambda a: res.means[a])
            else:
                if res.active.shape[0] == 1:
                    b = int(res.active[0])
                else:
                    b = int(book.se(i, res.active, full_level).active[0])
                best[i] = b
                found.append(b)
                self._on_new_best_arm(env, book, i, b)
            book.send(bits=_id_bits(k))
        book.end_phase1()
        if len(found) < self.n_clusters:
            warnings.warn(
                f"phase 1 visited all {n} agents but found only {len(found)} distinct best "
                f"arms, fewer than n_clusters={self.n_clusters}.",
                UserWarning,
                stacklevel=3,
            )
        return best, found, order[visited:], visited

    def _on_new_best_arm(self, env, book, agent, arm):
        """Hook for BAI-Cl++ (estimates the new best arm's mean)."""

    def _run(self, env, book, rng):
        k = env.n_arms
        best, found, remaining, visited = self._phase1(env, book, rng)
        self._match_by_se(book, best, remaining, found, k, self.delta / (2 * env.n_agents))
        return self._finish(best, found, visited)

    @staticmethod
    def _match_by_se(book, best, agents, found, n_arms, level):
        """Phase 2 of BAI-Cl: each agent runs SE on the found best arms (all at once)."""
        if agents.size == 0:
            return
        candidates = np.tile(np.array(found, dtype=np.int64), (agents.size, 1))
        active = book.se_batch(agents, candidates, level)[0]
        best[agents] = candidates[0, np.argmax(active, axis=1)]
        # S_star down, the arm id up
        book.send(2 * agents.size, bits=agents.size * (len(found) + 1) * _id_bits(n_arms))

    @staticmethod
    def _finish(best, found, visited):
        position = {a: p for p, a in enumerate(found)}
        labels = np.array([position[a] for a in best.tolist()], dtype=np.int64)
        extra = {"n_phase1_agents": visited, "found_best_arms": list(found)}
        return best, labels, len(found), extra


def _one_arm_pulls(radius, delta):
    """Pulls that put one mean within ``radius`` with probability ``1 - delta``."""
    return math.ceil(2.0 * math.log(2.0 / delta) / radius**2)


class BAIClPlusPlus(BAICl):
    """BAI-Cl++ (experimental): BAI-Cl whose phase 2 matches agents by one arm's mean.

    Phase 1 is BAI-Cl's; in addition, each newly found best arm ``b`` is pulled afresh until
    its mean ``mu_bar[b]`` is known to ``eta1 / 8``. In phase 2 an agent tests the known best
    arms in a random order: it estimates arm ``b`` to ``eta1 / 8`` and accepts ``b`` when its
    estimate is within ``eta1 / 2`` of ``mu_bar[b]``; if no arm is accepted it falls back to
    BAI-Cl's phase 2. This needs the paper's Assumption 6.1: the best arm of a bandit has a
    mean at least ``eta1`` away on every other bandit.

    Experimental: the paper's exact phase 2 could not be read; this is the project spec's
    INFERRED construction. It saves samples over BAI-Cl only when the ``M`` SE candidates of
    BAI-Cl's phase 2 cost more than a few one-arm tests, i.e. for many clusters.

    Parameters
    ----------
    n_clusters : int
        M, the number of clusters, in ``[1, K]``.
    delta : float, default=0.05
        Probability of any mistake, in (0, 1).
    eta : float
        Separability margin (``> 0``). Required.
    eta1 : float
        Margin of Assumption 6.1 (``> 0``). Required.
    round_const : float, default=17.0
        Phase-1 SE runs ``ceil(log2(round_const / eta))`` rounds; must be ``> 4``.
    c_real : float, default=64.0
        Cost of sending one real number.
    c_bit : float, default=1.0
        Cost of sending one bit.
    max_total_pulls : int, default=10**12
        Safety limit of one SE call; exceeding it raises ``RuntimeError``.
    random_state : int, RandomState instance or None, default=None
        Draws the phase-1 order and the phase-2 test orders.

    Attributes
    ----------
    best_arms_, labels_, n_clusters_found_, sample_complexity_, samples_per_agent_, \
phase_samples_, rounds_per_agent_, n_messages_, n_reals_, n_bits_, communication_cost_, \
n_phase1_agents_, found_best_arms_
        As for :class:`BAICl`.
    reference_means_ : dict
        ``mu_bar``: the phase-1 estimate of each found best arm's mean on its own bandit.
    result_ : MultiAgentBAIResult
        The last result.

    See Also
    --------
    BAICl : the same phase 1, with an SE-based phase 2.

    Notes
    -----
    Confidence budget (INFERRED): each phase-1 agent spends ``delta / (3N)`` on its capped
    SE, its finishing SE and the estimate of ``mu_bar``; each phase-2 agent spends
    ``delta / (2NM)`` per test and ``delta / (2N)`` on the fallback SE. Communication per
    phase-2 test: the arm id and ``mu_bar`` down (1 real), plus the agent's answer.

    References
    ----------
    .. [1] Yash, N. Karamchandani and A. Ghosh, "Near Optimal Best Arm Identification for
       Clustered Bandits", ICML 2025, arXiv:2505.10147.

    Examples
    --------
    >>> from sklearn_icml.bandits import BAIClPlusPlus, ClusteredBanditEnv
    >>> env = ClusteredBanditEnv([[0.9, 0.1, 0.4], [0.1, 0.9, 0.4]], [0, 1, 0, 1, 1, 0],
    ...                          random_state=0)
    >>> res = BAIClPlusPlus(n_clusters=2, eta=0.5, eta1=0.8, random_state=0).run(env)
    >>> res.best_arms
    array([0, 1, 0, 1, 1, 0])
    """

    _parameter_constraints = {
        **BAICl._parameter_constraints,
        "eta1": _ETA,
    }

    def __init__(
        self,
        n_clusters,
        *,
        delta=0.05,
        eta=None,
        eta1=None,
        round_const=17.0,
        c_real=64.0,
        c_bit=1.0,
        max_total_pulls=10**12,
        random_state=None,
    ):
        super().__init__(
            n_clusters,
            delta=delta,
            eta=eta,
            round_const=round_const,
            c_real=c_real,
            c_bit=c_bit,
            max_total_pulls=max_total_pulls,
            random_state=random_state,
        )
        self.eta1 = eta1

    def _check_run_params(self, env):
        super()._check_run_params(env)
        if self.eta1 is None:
            raise ValueError(
                "eta1 must be given to BAIClPlusPlus (the margin of the paper's Assumption "
                "6.1). Got None instead."
            )

    def _phase1_levels(self, n):
        return self.delta / (3 * n), self.delta / (3 * n)

    def _on_new_best_arm(self, env, book, agent, arm):
        pulls = _one_arm_pulls(self.eta1 / 8.0, self.delta / (3 * env.n_agents))
        total = book.draw(agent, np.array([arm]), np.array([pulls], dtype=np.int64))[0]
        self._mu_bar[arm] = total / pulls

    def _run(self, env, book, rng):
        n, k = env.n_agents, env.n_arms
        self._mu_bar = {}
        best, found, remaining, visited = self._phase1(env, book, rng)
        m = len(found)
        test_pulls = _one_arm_pulls(self.eta1 / 8.0, self.delta / (2 * n * max(m, 1)))
        n_rest = remaining.size
        # every remaining agent tests the found arms in its own random order, all agents
        # of a step in one draw; an agent stops testing at its first accepted arm
        order = np.argsort(rng.random_sample((n_rest, m)), axis=1)
        tests = np.array(found, dtype=np.int64)[order]
        reference = np.array([self._mu_bar[a] for a in found])[order]
        accepted = np.full(n_rest, -1, dtype=np.int64)
        for step in range(m):
            rows = np.flatnonzero(accepted < 0)
            if rows.size == 0:
                break
            pulls = np.full(rows.size, test_pulls, dtype=np.int64)
            est = book.draw(remaining[rows], tests[rows, step], pulls) / test_pulls
            book.send(rows.size, reals=rows.size, bits=rows.size * _id_bits(k))
            ok = np.abs(est - reference[rows, step]) <= self.eta1 / 2.0
            accepted[rows[ok]] = tests[rows[ok], step]
        best[remaining] = accepted
        n_ok = int(np.sum(accepted >= 0))
        book.send(n_ok, bits=n_ok * _id_bits(k))  # each matched agent's answer
        fallback = remaining[accepted < 0]  # no arm matched: BAI-Cl's phase 2
        self._match_by_se(book, best, fallback, found, k, self.delta / (2 * n))
        self.reference_means_ = dict(self._mu_bar)
        return self._finish(best, found, visited)


def _one_run(algorithm, means, assignment, noise, sigma, seed):
    env = ClusteredBanditEnv(means, assignment, noise=noise, sigma=sigma, random_state=seed)
    algo = clone(algorithm)
    if "random_state" in algo.get_params():
        algo.set_params(random_state=seed)
    result = algo.run(env)
    return result, result.score(env)


def run_seeds(algorithm, means, assignment, seeds, *, noise="gaussian", sigma=1.0, n_jobs=None):
    """Run ``algorithm`` on fresh environments, one per seed, in parallel with joblib.

    For each seed ``s`` a new ``ClusteredBanditEnv(means, assignment, random_state=s)`` is
    built and a clone of ``algorithm`` (with ``random_state=s`` when it has one) runs on it.

    Parameters
    ----------
    algorithm : NaiveBAI, ClBAI, BAICl or BAIClPlusPlus
        The (unrun) algorithm to clone.
    means : array-like of shape (n_clusters, n_arms)
        Cluster means.
    assignment : array-like of shape (n_agents,)
        Cluster of every agent.
    seeds : iterable of int
        One run per seed.
    noise : {"gaussian", "bernoulli"}, default="gaussian"
        Reward distribution.
    sigma : float, default=1.0
        Standard deviation of Gaussian rewards.
    n_jobs : int, default=None
        Parallel jobs (joblib; ``None`` means 1 unless in a ``parallel_backend`` context).

    Returns
    -------
    results : list of MultiAgentBAIResult
        One per seed, in the order of ``seeds``.
    scores : ndarray of shape (n_seeds,)
        Fraction of agents correct in each run (1.0 = no mistake).

    Examples
    --------
    >>> from sklearn_icml.bandits import BAICl, make_clustered_bandit, run_seeds
    >>> means, assignment = make_clustered_bandit(12, 2, 6, random_state=0)
    >>> results, scores = run_seeds(BAICl(n_clusters=2, eta=0.4), means, assignment,
    ...                             seeds=range(3))
    >>> scores.tolist(), len(results)
    ([1.0, 1.0, 1.0], 3)
    """
    seeds = list(seeds)
    out = Parallel(n_jobs=n_jobs)(
        delayed(_one_run)(algorithm, means, assignment, noise, sigma, s) for s in seeds
    )
    results = [r for r, _ in out]
    scores = np.array([s for _, s in out])
    return results, scores
