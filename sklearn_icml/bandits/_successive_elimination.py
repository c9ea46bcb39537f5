"""Successive elimination (SE), the primitive every multi-agent BAI algorithm is built on.

:func:`successive_elimination` runs SE for one agent; :func:`_batched_se` runs it for many
agents at once, each on its own arm set, with every round's pulls drawn in one call.
"""

import math
from collections import namedtuple

import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import NON_NEGATIVE_INT, OPEN_UNIT_INTERVAL, POSITIVE_INT
from ._clustered_env import ClusteredBanditEnv

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


@keyword_only_after(4)
@validate_params(
    {
        "env": [ClusteredBanditEnv],
        "agent": [NON_NEGATIVE_INT],
        "arms": ["array-like"],
        "delta": [OPEN_UNIT_INTERVAL],
        "max_rounds": [POSITIVE_INT, None],
        "max_total_pulls": [POSITIVE_INT],
    },
    prefer_skip_nested_validation=True,
)
def successive_elimination(env, agent, arms, delta, *, max_rounds=None,
                           max_total_pulls=10**12):
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
    >>> env = ClusteredBanditEnv(means=[[0.2, 1.2, 0.7]], assignment=[0], random_state=0)
    >>> res = successive_elimination(env, agent=0, arms=[0, 1, 2], delta=0.05)
    >>> res.active, res.rounds, int(res.counts.sum()) == env.total_pulls_
    (array([1]), 3, True)
    """
    agent = env._check_agent(agent)
    arms = env._check_arms(arms)
    if arms.shape[0] == 0:
        raise ValueError("arms must name at least one arm. Got an empty sequence instead.")
    if np.unique(arms).shape[0] != arms.shape[0]:
        raise ValueError(f"arms must be distinct. Got {arms.tolist()!r} instead.")
    active, means, counts, rounds = _batched_se(
        env._draw, np.array([agent]), arms[None, :], delta, max_rounds, max_total_pulls
    )
    return SEResult(arms[active[0]], means[0], counts[0], int(rounds[0]))
