"""BAI-Cl++ (experimental): BAI-Cl whose phase 2 matches agents by one arm's mean.

Importing it needs ``from sklearn_icml.experimental import enable_bai_cl_plus_plus``.
"""

import math

import numpy as np

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import POSITIVE_REAL
from ._multi_agent_bai import BAICl, _id_bits


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

    Experimental: import it with
    ``from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa`` first; its
    API may change without a deprecation cycle.

    Parameters
    ----------
    n_clusters : int
        M, the number of clusters, in ``[1, K]``.
    delta : float, default=0.05
        Probability of any mistake, in (0, 1): with probability at least ``1 - delta``
        every agent gets its best arm.
    eta : float
        Separability margin of the instance (``> 0``), which the learner must know: on
        every bandit the best arm of any other bandit is at least ``eta`` worse. Required.
    eta1 : float
        Margin of Assumption 6.1 (``> 0``). Required.
    round_const : float, default=17.0
        Phase 1 runs ``ceil(log2(round_const / eta))`` rounds of SE, so its accuracy is
        ``eta / round_const`` or better; must be ``> 4``.
    c_real : float, default=64.0
        Cost of sending one real number.
    c_bit : float, default=1.0
        Cost of sending one bit.
    max_total_pulls : int, default=10**12
        Safety limit of one SE call; exceeding it raises ``RuntimeError``.
    random_state : int, RandomState instance or None, default=None
        Draws the phase-1 order and the phase-2 test orders.
    verbose : int, default=0
        0 is silent; 1 prints a line when phase 1 ends and one when every agent's best arm
        is identified, with the time since :meth:`run` started.

    Attributes
    ----------
    best_arms_ : ndarray of shape (n_agents,)
        Arm declared best for every agent.
    labels_ : ndarray of shape (n_agents,)
        Cluster label of every agent: the position of its best arm in ``found_best_arms_``.
    n_clusters_found_ : int
        Number of distinct clusters found.
    sample_complexity_ : int
        Total pulls made during the run.
    samples_per_agent_ : ndarray of shape (n_agents,)
        Pulls made by every agent during the run.
    phase_samples_ : dict
        ``{"phase1": int, "phase2": int}`` pulls of each phase.
    rounds_per_agent_ : ndarray of shape (n_agents,)
        Elimination rounds each agent ran, over all its SE calls.
    n_messages_ : int
        Messages exchanged between agents and server.
    n_reals_ : int
        Real numbers sent.
    n_bits_ : int
        Bits sent.
    communication_cost_ : float
        ``c_real * n_reals_ + c_bit * n_bits_``.
    n_phase1_agents_ : int
        Agents visited in phase 1 (a coupon-collector time, about ``M H_M`` for equal
        clusters).
    found_best_arms_ : list of int
        The best arms found in phase 1, in order of discovery.
    reference_means_ : dict
        ``mu_bar``: the phase-1 estimate of each found best arm's mean on its own bandit.

    See Also
    --------
    BAICl : the same phase 1, with an SE-based phase 2.

    Notes
    -----
    The paper [1]_ describes BAI-Cl++ as BAI-Cl with a cheaper phase 2 under Assumption
    6.1, without every step of that phase. This library's phase 2 is the one-arm test
    above; it saves samples over BAI-Cl only when the ``M`` SE candidates of BAI-Cl's
    phase 2 cost more than a few one-arm tests, i.e. for many clusters. Confidence budget:
    each phase-1 agent spends ``delta / (3N)`` on its capped SE, its finishing SE and the
    estimate of ``mu_bar``; each phase-2 agent spends ``delta / (2NM)`` per test and
    ``delta / (2N)`` on the fallback SE. Communication per phase-2 test: the arm id and
    ``mu_bar`` down (1 real), plus the agent's answer.

    References
    ----------
    .. [1] Yash, N. Karamchandani and A. Ghosh, "Near Optimal Best Arm Identification for
       Clustered Bandits", ICML 2025, arXiv:2505.10147.

    Examples
    --------
    >>> from sklearn_icml.bandits import ClusteredBanditEnv
    >>> env = ClusteredBanditEnv(means=[[0.9, 0.1, 0.4], [0.1, 0.9, 0.4]],
    ...                          assignment=[0, 1, 0, 1, 1, 0], random_state=0)
    >>> from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa: F401
    >>> from sklearn_icml.bandits import BAIClPlusPlus
    >>> plus = BAIClPlusPlus(n_clusters=2, eta=0.5, eta1=0.8, random_state=0).run(env)
    >>> plus.best_arms_
    array([0, 1, 0, 1, 1, 0])
    """

    _parameter_constraints = {
        **BAICl._parameter_constraints,
        "eta1": [POSITIVE_REAL, None],
    }

    @keyword_only_after(1)
    def __init__(
        self,
        *,
        n_clusters,
        delta=0.05,
        eta=None,
        eta1=None,
        round_const=17.0,
        c_real=64.0,
        c_bit=1.0,
        max_total_pulls=10**12,
        random_state=None,
        verbose=0,
    ):
        super().__init__(
            n_clusters=n_clusters,
            delta=delta,
            eta=eta,
            round_const=round_const,
            c_real=c_real,
            c_bit=c_bit,
            max_total_pulls=max_total_pulls,
            random_state=random_state,
            verbose=verbose,
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
        pulls = _one_arm_pulls(self.eta1 / 8.0, self.delta / (3 * env.n_agents_))
        total = book.draw(agent, np.array([arm]), np.array([pulls], dtype=np.int64))[0]
        self._mu_bar[arm] = total / pulls

    def _identify(self, env, book, rng):
        n, k = env.n_agents_, env.n_arms_
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
        best, labels, n_found, extra = self._finish(best, found, visited)
        extra["reference_means"] = dict(self._mu_bar)
        return best, labels, n_found, extra
