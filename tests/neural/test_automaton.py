"""Automaton extraction from hidden states, minimisation, and the merger statistic."""

import numpy as np
import pytest

pytest.importorskip("torch")

from sklearn_icml.datasets import make_streaming_parity  # noqa: E402
from sklearn_icml.neural import Automaton, extract_automaton, merger_fraction  # noqa: E402

PARITY = {(0, 0): 0, (0, 1): 1, (1, 0): 1, (1, 1): 0}


def _analysis_set(max_length):
    """All sequences of lengths 0..max_length (the empty one first) and their parity."""
    X, y = make_streaming_parity(max_length)
    X = np.vstack([np.full((1, max_length), -1), X])
    return X, np.r_[0, y]


def test_true_dfa_states_plus_small_noise_give_the_true_dfa():
    X, y = _analysis_set(6)
    rng = np.random.default_rng(0)
    hidden = np.eye(2)[y] + 1e-5 * rng.standard_normal((y.size, 2))
    auto = extract_automaton(hidden, X, outputs=y, merge_frac=0.1)
    assert auto.n_states == 2
    assert auto.transitions == PARITY and auto.outputs == (0, 1)
    assert auto.is_complete() and auto.n_exit == 0 and auto.n_conflicts == 0
    long_X, long_y = make_streaming_parity(3000, 2990, n_per_length=2, random_state=0)
    assert np.array_equal(auto.predict(long_X), long_y)


def test_large_noise_gives_the_tree_automaton():
    L = 6
    X, y = _analysis_set(L)
    rng = np.random.default_rng(1)
    hidden = np.c_[np.eye(2)[y], np.zeros((y.size, 14))] + rng.standard_normal((y.size, 16))
    auto = extract_automaton(hidden, X, outputs=y, merge_frac=0.001)
    assert auto.n_states == 2 ** (L + 1) - 1 == y.size
    assert not auto.is_complete()
    assert auto.n_exit == 2**L  # the leaves
    assert auto.n_conflicts == 0
    # the tree reproduces every analysed sequence's output
    assert np.array_equal(auto.predict(X), y)


def _tree(L, leaf_loops):
    """Tree automaton over binary sequences of length <= L with parity outputs.

    With ``leaf_loops`` each leaf gets the parity transitions into the depth-1 states
    (as when long sequences merge with short ones), which makes the automaton complete.
    """
    X, y = _analysis_set(L)
    index = {tuple(r[r >= 0]): i for i, r in enumerate(X)}
    transitions = {}
    for seq, i in index.items():
        for a in (0, 1):
            child = index.get((*seq, a))
            if child is not None:
                transitions[(i, a)] = child
            elif leaf_loops:
                transitions[(i, a)] = index[((y[i] + a) % 2,)]
    return Automaton(transitions, tuple(int(v) for v in y))


def test_minimising_a_complete_parity_tree_gives_two_states():
    minimal = _tree(5, leaf_loops=True).minimize()
    assert minimal.n_states == 2 and minimal.is_complete()
    assert minimal.transitions == PARITY and minimal.outputs == (0, 1)


def test_minimising_a_partial_parity_tree_keeps_depths_apart():
    # undefined transitions act as a distinct sink: states merge by (depth, parity) only
    L = 5
    minimal = _tree(L, leaf_loops=False).minimize()
    assert minimal.n_states == 2 * L + 1
    assert sorted(minimal.outputs) == [0] * (L + 1) + [1] * L


def test_minimise_merges_an_unknown_initial_state_and_separates_a_wrong_one():
    # initial state 2 behaves like "even" (state 0) but has no trained output
    transitions = {**PARITY, (2, 0): 0, (2, 1): 1}
    unknown = Automaton(transitions, outputs=(0, 1, None), initial_state=2).minimize()
    assert unknown.n_states == 2 and unknown.outputs == (0, 1)
    wrong = Automaton(transitions, outputs=(0, 1, 1), initial_state=2).minimize()
    assert wrong.n_states == 3  # the paper's "2 or 3" when h_0's read-out is used


def test_minimise_drops_unreachable_states():
    auto = Automaton({**PARITY, (2, 0): 2, (2, 1): 2}, outputs=(0, 1, 0))
    assert auto.minimize().n_states == 2


def test_conflicting_transitions_keep_the_first_and_are_counted():
    # "0" and "1" are merged into one state although "00" and "10" go to different states
    X = np.array([[-1, -1], [0, -1], [1, -1], [0, 0], [1, 0]])
    hidden = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [5.0, 0.0], [9.0, 0.0]])
    auto = extract_automaton(hidden, X, merge_frac=0.01)
    assert auto.n_states == 4
    assert auto.n_conflicts == 1
    assert auto.transitions[(1, 0)] == 2  # "00" sorts before "10"


def test_grouping_compares_with_the_first_member_only():
    # b is within eps of a, c within eps of b but not of a: c opens a new group
    X = np.array([[0, -1], [0, 0], [0, 1]])
    hidden = np.array([[0.0], [0.6], [1.2]])
    auto = extract_automaton(hidden, X, merge_frac=1.3)  # eps = 1.3 * std = 0.64
    assert auto.eps == pytest.approx(1.3 * np.std([0.0, 0.6, 1.2]))
    assert list(auto.assignment) == [0, 0, 1]  # single linkage would give [0, 0, 0]


def test_run_predict_and_errors():
    auto = Automaton(PARITY, outputs=("even", "odd"))
    assert auto.final_output([1, 1, 0, 1, -1]) == "odd"
    assert auto.final_output([]) == "even"
    partial = Automaton({(0, 1): 1}, outputs=(0, 1))
    with pytest.raises(ValueError, match="no transition from state 0 on symbol 0"):
        partial.final_output([0])
    with pytest.raises(ValueError, match="initial_state"):
        Automaton(PARITY, outputs=(0, 1), initial_state=2)
    with pytest.raises(ValueError, match="outside"):
        Automaton({(0, 2): 0}, outputs=(0,))


def test_merger_fraction_counts_pairs():
    hidden = np.array([[0.0], [0.0], [0.01], [3.0], [3.0]])
    labels = np.array([0, 0, 0, 1, 0])
    stats = merger_fraction(hidden, labels, eps=0.1)
    # same-label pairs: 6 (among rows 0,1,2,4); merged: (0,1),(0,2),(1,2) = 3
    assert stats["n_same_pairs"] == 6 and stats["n_same_merged"] == 3
    assert stats["same_fraction"] == 0.5
    # different-label pairs: 4, merged: (3, 4) only
    assert stats["n_different_pairs"] == 4 and stats["n_different_merged"] == 1
    brute = sum(
        abs(hidden[i, 0] - hidden[j, 0]) < 0.1 and labels[i] == labels[j]
        for i in range(5)
        for j in range(i + 1, 5)
    )
    assert brute == 3


def test_merger_fraction_of_exact_dfa_states():
    X, y = _analysis_set(5)
    stats = merger_fraction(np.eye(2)[y], y, merge_frac=0.01)
    assert stats["same_fraction"] == 1.0 and stats["different_fraction"] == 0.0


@pytest.mark.parametrize("merge_frac", [0.0, -0.1, np.inf])
def test_merge_frac_must_be_positive(merge_frac):
    X, y = _analysis_set(2)
    with pytest.raises(ValueError, match="merge_frac"):
        extract_automaton(np.eye(2)[y], X, merge_frac=merge_frac)


def test_identical_hidden_states_raise():
    X, y = _analysis_set(3)
    with pytest.raises(ValueError, match="identical"):
        extract_automaton(np.ones((y.size, 4)), X)
    with pytest.raises(ValueError, match="identical"):
        merger_fraction(np.ones((y.size, 4)), y)


def test_bad_hidden_inputs():
    X, y = _analysis_set(2)
    with pytest.raises(ValueError, match="X is required"):
        extract_automaton(np.eye(2)[y])
    with pytest.raises(ValueError, match="one row per hidden state"):
        extract_automaton(np.eye(2)[y][:-1], X)
    with pytest.raises(ValueError, match="outputs must have shape"):
        extract_automaton(np.eye(2)[y], X, outputs=y[:-1])
    with pytest.raises(ValueError, match="not finite"):
        extract_automaton(np.full((y.size, 2), np.nan), X)


def test_plot_draws_the_state_graph():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    auto = Automaton(PARITY, outputs=(0, 1), labels=("", "1"))
    ax = auto.plot()
    assert ax.get_title() == "2 states"
    assert len(ax.patches) >= 4  # 2 states, 2 self-loops, 2 arrows
    plt.close("all")
    big = _tree(6, leaf_loops=False)
    with pytest.raises(ValueError, match="minimise it first"):
        big.plot()


def test_run_is_renamed_final_output():
    parity = Automaton({(0, 0): 0, (0, 1): 1, (1, 0): 1, (1, 1): 0}, outputs=("even", "odd"))
    with pytest.warns(FutureWarning, match="`run` was renamed `final_output`"):
        assert parity.run([1, 0, 1]) == parity.final_output([1, 0, 1]) == "even"
