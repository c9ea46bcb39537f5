"""Docstring pieces shared by the bandit classes, filled in by :func:`fill_doc`.

A class docstring names a piece as ``%(name)s`` on a line of its own; :func:`fill_doc`
cleans the docstring's indentation (as Python 3.13 does at compile time) and substitutes
the pieces, so that a parameter shared by several classes is documented once.
"""

from ..utils._docstrings import fill_doc as _fill_doc

_BAI_PAPER = """\
.. [1] Yash, N. Karamchandani and A. Ghosh, "Near Optimal Best Arm Identification for
   Clustered Bandits", ICML 2025, arXiv:2505.10147."""

_INTERFERENCE_PAPER = """\
.. [1] S. Jia, P. Frazier, N. Kallus, "Multi-Armed Bandits with Interference: Bridging
   Causal Inference and Adversarial Bandits", ICML 2025, arXiv:2402.01845."""

PIECES = {
    # ------------------------------------------------------------- multi-agent BAI
    "bai_references": _BAI_PAPER,
    "bai_delta": """\
delta : float, default=0.05
    Probability of any mistake, in (0, 1): with probability at least ``1 - delta``
    every agent gets its best arm.""",
    "bai_eta": """\
eta : float
    Separability margin of the instance (``> 0``), which the learner must know: on
    every bandit the best arm of any other bandit is at least ``eta`` worse. Required.""",
    "bai_round_const": """\
round_const : float, default=17.0
    Phase 1 runs ``ceil(log2(round_const / eta))`` rounds of SE, so its accuracy is
    ``eta / round_const`` or better; must be ``> 4``.""",
    "bai_costs": """\
c_real : float, default=64.0
    Cost of sending one real number.
c_bit : float, default=1.0
    Cost of sending one bit.
max_total_pulls : int, default=10**12
    Safety limit of one SE call; exceeding it raises ``RuntimeError``.""",
    "bai_attributes": """\
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
    ``c_real * n_reals_ + c_bit * n_bits_``.""",
    "bai_cl_attributes": """\
best_arms_ : ndarray of shape (n_agents,)
    Arm declared best for every agent.
labels_ : ndarray of shape (n_agents,)
    Cluster label of every agent: the position of its best arm in ``found_best_arms_``.
%(bai_attributes)s
n_phase1_agents_ : int
    Agents visited in phase 1 (a coupon-collector time, about ``M H_M`` for equal
    clusters).
found_best_arms_ : list of int
    The best arms found in phase 1, in order of discovery.""",
    "bai_references_and_example_env": """\
References
----------
%(bai_references)s

Examples
--------
>>> from sklearn_icml.bandits import ClusteredBanditEnv
>>> env = ClusteredBanditEnv([[0.9, 0.1, 0.4], [0.1, 0.9, 0.4]], [0, 1, 0, 1, 1, 0],
...                          random_state=0)""",
    # -------------------------------------------------------- bandits with interference
    "grid_round_args": """\
Parameters
----------
t : int
    Round index in ``[0, horizon)``.
Z : array-like of shape (grid_side, grid_side)
    One arm in ``[0, n_arms)`` per unit.""",
    "interference_references": _INTERFERENCE_PAPER,
    "exp3ix_references_and_examples": "References\n----------\n"
    + _INTERFERENCE_PAPER
    + """
.. [2] G. Neu, "Explore no more: Improved high-probability regret bounds for
   non-stochastic bandits", NeurIPS 2015.

Examples
--------""",
    "exp3ix_params": """\
n_arms : int
    Number of arms ``k``.
horizon : int
    Number of rounds ``T`` the learning rate is tuned for.
learning_rate : float, default=None
    EXP3-IX step ``eta``; ``None`` uses ``sqrt(2 ln k / (k T))``.
ix_gamma : float, default=None
    Implicit-exploration term ``gamma`` in the estimator's denominator, in ``[0, 0.5)``
    as the paper's IX parameter ``beta``; ``None`` uses ``learning_rate / 2`` (an error
    if that is not below 0.5).""",
    "exp3ix_attributes": """\
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
    After :meth:`run`: the hindsight-best fixed arm.""",
}


def _expand(pieces):
    """Let a piece name other pieces: substitute until no ``%(`` is left."""
    pieces = dict(pieces)
    for name, text in pieces.items():
        while "%(" in text:
            text = text % pieces
        pieces[name] = text
    return pieces


PIECES = _expand(PIECES)


def fill_doc(obj):
    """Substitute the shared ``%(name)s`` pieces into ``obj.__doc__``; return ``obj``.

    For a class, the docstrings of the methods it defines are filled too.
    """
    return _fill_doc(obj, PIECES)
