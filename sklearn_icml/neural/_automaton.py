"""Finite automata with an output per state (Moore machines), and their minimisation.

:class:`Automaton` is what :func:`~sklearn_icml.neural.extract_automaton` reads off a
recurrent network (van Rossem & Saxe, ICML 2025): states, transitions on each symbol, the
output of each state. It runs padded sequences and minimises itself by partition
refinement. numpy only (matplotlib for the plot).
"""

import dataclasses

import numpy as np

from ..utils import optional_import
from ..utils._deprecation import renamed
from ._sequences import PAD, check_sequences


@dataclasses.dataclass(frozen=True, eq=False)
class Automaton:
    """A deterministic automaton with an output per state (a Moore machine), maybe partial.

    Parameters
    ----------
    transitions : dict of (int, int) -> int
        ``(state, symbol) -> next state``. Missing pairs are undefined transitions.
    outputs : tuple
        Output (class label) of each state; ``None`` where unknown. The number of states
        is ``len(outputs)``; states are ``0..n_states-1``.
    initial_state : int, default=0
    n_symbols : int, default=2
        Alphabet size; symbols are ``0..n_symbols-1``.
    labels : tuple of str, default=None
        A representative input sequence of each state ("" for the empty one).
    n_conflicts : int, default=0
        From :func:`extract_automaton`: the number of (state, symbol) pairs whose members
        led to more than one state; the first transition in lexicographic order is kept.
    eps : float, default=None
        From :func:`extract_automaton`: the merge distance used.
    prefixes : ndarray of shape (n_prefixes, max_length), default=None
        From :func:`extract_automaton`: the analysed sequences in lexicographic order,
        right-padded with -1 (the first row is the empty sequence).
    hidden : ndarray of shape (n_prefixes, n_units), default=None
        From :func:`extract_automaton`: their hidden states.
    assignment : ndarray of shape (n_prefixes,), default=None
        From :func:`extract_automaton`: the state of each analysed sequence.

    Examples
    --------
    >>> from sklearn_icml.neural import Automaton
    >>> parity = Automaton({(0, 0): 0, (0, 1): 1, (1, 0): 1, (1, 1): 0}, outputs=(0, 1))
    >>> parity.final_output([1, 0, 1, 1])
    1
    >>> parity.is_complete(), parity.minimize().n_states
    (True, 2)
    """

    transitions: dict
    outputs: tuple
    initial_state: int = 0
    n_symbols: int = 2
    labels: tuple | None = None
    n_conflicts: int = 0
    eps: float | None = None
    prefixes: np.ndarray | None = None
    hidden: np.ndarray | None = None
    assignment: np.ndarray | None = None

    def __post_init__(self):
        n = len(self.outputs)
        if n < 1:
            raise ValueError("outputs must name the output of at least one state.")
        if not 0 <= self.initial_state < n:
            raise ValueError(
                f"initial_state must be a state in 0..{n - 1}. Got {self.initial_state!r} "
                "instead."
            )
        for (state, symbol), target in self.transitions.items():
            if not (0 <= state < n and 0 <= target < n and 0 <= symbol < self.n_symbols):
                raise ValueError(
                    f"transition ({state!r}, {symbol!r}) -> {target!r} is outside "
                    f"{n} states and {self.n_symbols} symbols."
                )

    @property
    def n_states(self):
        """Number of states."""
        return len(self.outputs)

    @property
    def states(self):
        """The states, ``0..n_states-1``."""
        return tuple(range(self.n_states))

    def table(self):
        """Transition table: ``table[state, symbol]`` is the next state, -1 if undefined."""
        table = np.full((self.n_states, self.n_symbols), -1, dtype=np.int64)
        for (state, symbol), target in self.transitions.items():
            table[state, symbol] = target
        return table

    def is_complete(self):
        """Whether every state has a transition on every symbol (the paper's is_finite)."""
        return bool(np.all(self.table() >= 0))

    @property
    def n_exit(self):
        """Number of states lacking a transition on some symbol."""
        return int(np.count_nonzero(np.any(self.table() < 0, axis=1)))

    def _final_states(self, X):
        X = check_sequences(np.atleast_2d(np.asarray(X)), self.n_symbols, allow_empty=True)
        table = self.table()
        state = np.full(X.shape[0], self.initial_state, dtype=np.int64)
        for t in range(X.shape[1]):
            symbol = X[:, t]
            active = symbol != PAD
            nxt = table[state[active], symbol[active]]
            if np.any(nxt < 0):
                row = int(np.flatnonzero(active)[np.flatnonzero(nxt < 0)[0]])
                raise ValueError(
                    f"the automaton has no transition from state {state[row]} on symbol "
                    f"{symbol[row]} (row {row}, position {t}); it is not complete."
                )
            state[active] = nxt
        return state

    def final_output(self, sequence):
        """Output of the state reached after reading ``sequence`` (padding -1 ignored).

        Parameters
        ----------
        sequence : array-like of int
            One sequence of symbols.

        Returns
        -------
        output : object
            The output of the final state (``outputs[state]``).

        Raises
        ------
        ValueError
            If the sequence hits an undefined transition.
        """
        seq = np.asarray(sequence).reshape(1, -1)
        return self.outputs[int(self._final_states(seq)[0])]

    run = renamed(final_output, "run")

    def predict(self, X):
        """Outputs of the automaton on each row of ``X`` (padded sequences), as an array.

        Examples
        --------
        >>> from sklearn_icml.neural import Automaton
        >>> parity = Automaton({(0, 0): 0, (0, 1): 1, (1, 0): 1, (1, 1): 0}, outputs=(0, 1))
        >>> parity.predict([[1, 1, 1], [1, 0, -1]])
        array([1, 1])
        """
        states = self._final_states(X)
        return np.array([self.outputs[s] for s in states])

    def minimize(self):
        """The minimal equivalent automaton (partition refinement from the outputs).

        Unreachable states are dropped; an undefined transition counts as a transition
        to a sink that no defined state equals. Blocks are split until all states of a
        block have the same output and, for every symbol, lead into the same block (the
        fixed point of Hopcroft's and Moore's algorithms). A state whose output is
        unknown (``None``, as the untrained initial state of an extracted network) is
        first kept apart; if its transitions then match those of a block with a known
        output, it takes that output and the refinement is redone, so it merges there.

        Returns
        -------
        minimal : Automaton
        """
        table = self.table()
        reach = _reachable(table, self.initial_state)
        outputs = [self.outputs[s] for s in reach]
        sub = _renumber(table, reach)
        blocks = _refine(sub, outputs)
        unknown = [i for i, out in enumerate(outputs) if out is None]
        if unknown and len(unknown) < len(outputs):
            changed = False
            signature = _block_signature(sub, blocks)
            known_rep = {}
            for i, out in enumerate(outputs):
                if out is not None:
                    known_rep.setdefault(blocks[i], i)
            for i in unknown:
                for rep in sorted(known_rep.values()):
                    if _compatible(signature[i], signature[rep]):
                        outputs[i] = outputs[rep]
                        changed = True
                        break
            if changed:
                blocks = _refine(sub, outputs)
        # renumber blocks in order of first appearance (the initial state's block is 0)
        order = {}
        for b in blocks:
            order.setdefault(b, len(order))
        new_out = [None] * len(order)
        new_labels = [None] * len(order)
        transitions = {}
        for i, b in enumerate(blocks):
            nb = order[b]
            if new_out[nb] is None:
                new_out[nb] = outputs[i]
            if new_labels[nb] is None and self.labels is not None:
                new_labels[nb] = self.labels[reach[i]]
            for symbol in range(self.n_symbols):
                if sub[i, symbol] >= 0:
                    transitions.setdefault((nb, symbol), order[blocks[sub[i, symbol]]])
        return Automaton(
            transitions=transitions,
            outputs=tuple(new_out),
            initial_state=order[blocks[0]],
            n_symbols=self.n_symbols,
            labels=tuple(new_labels) if self.labels is not None else None,
        )

    def plot(self, ax=None, *, max_states=60):
        """Draw the state graph: states on a circle, arrows labelled by symbol.

        States are coloured by output; the initial state has a thick outline. Needs
        matplotlib (the ``plot`` extra).

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; a new figure when None.
        max_states : int, default=60
            Refuse to draw larger automata (minimise first).

        Returns
        -------
        ax : matplotlib Axes
        """
        plt = optional_import("matplotlib.pyplot", "plot")
        from matplotlib.patches import FancyArrowPatch

        n = self.n_states
        if n > max_states:
            raise ValueError(
                f"the automaton has {n} states, more than max_states={max_states}; "
                "minimise it first or raise max_states."
            )
        if ax is None:
            _, ax = plt.subplots(figsize=(4 + 0.15 * n, 4 + 0.15 * n))
        angle = np.pi / 2 - 2 * np.pi * np.arange(n) / n
        radius = 1.0 if n > 1 else 0.0
        pos = np.c_[radius * np.cos(angle), radius * np.sin(angle)]
        distinct = sorted({str(o) for o in self.outputs})
        cmap = plt.get_cmap("tab10")
        colour = {o: cmap(i % 10) for i, o in enumerate(distinct)}
        size = 0.16 if n <= 8 else 0.6 / np.sqrt(n)
        for s in range(n):
            circle = plt.Circle(
                pos[s],
                size,
                facecolor=colour[str(self.outputs[s])],
                edgecolor="black",
                linewidth=3 if s == self.initial_state else 1,
                alpha=0.85,
                zorder=3,
            )
            ax.add_patch(circle)
            text = self.labels[s] if self.labels is not None else str(s)
            text = (text or "ε")[:6]
            ax.text(*pos[s], text, ha="center", va="center", fontsize=8, zorder=4)
        for (s, symbol), t in sorted(self.transitions.items()):
            if s == t:
                direction = pos[s] / (np.linalg.norm(pos[s]) or 1.0)
                if not np.any(pos[s]):
                    direction = np.array([0.0, 1.0])
                centre = pos[s] + direction * size * (1.6 + 0.5 * symbol)
                ax.add_patch(
                    plt.Circle(centre, size * 0.7, fill=False, linewidth=1, zorder=2)
                )
                ax.text(*(centre + direction * size * 0.9), str(symbol), fontsize=8,
                        ha="center", va="center")
                continue
            rad = 0.15 + 0.1 * symbol
            arrow = FancyArrowPatch(
                pos[s],
                pos[t],
                connectionstyle=f"arc3,rad={rad}",
                arrowstyle="-|>",
                mutation_scale=12,
                shrinkA=14,
                shrinkB=14,
                linewidth=1,
                zorder=2,
            )
            ax.add_patch(arrow)
            mid = (pos[s] + pos[t]) / 2
            normal = np.array([pos[t][1] - pos[s][1], pos[s][0] - pos[t][0]])
            ax.text(*(mid + rad * normal * 0.5), str(symbol), fontsize=8,
                    ha="center", va="center")
        for o in distinct:
            ax.scatter([], [], color=colour[o], label=f"output {o}")
        ax.legend(loc="lower left", fontsize=8, frameon=False)
        lim = radius + 4 * size + 0.2
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(f"{n} states" + ("" if self.is_complete() else " (partial)"))
        return ax


def _reachable(table, initial):
    seen = [initial]
    index = {initial: 0}
    k = 0
    while k < len(seen):
        for target in table[seen[k]]:
            if target >= 0 and int(target) not in index:
                index[int(target)] = len(seen)
                seen.append(int(target))
        k += 1
    return seen


def _renumber(table, reach):
    index = {s: i for i, s in enumerate(reach)}
    sub = np.full((len(reach), table.shape[1]), -1, dtype=np.int64)
    for i, s in enumerate(reach):
        for a, t in enumerate(table[s]):
            if t >= 0:
                sub[i, a] = index[int(t)]
    return sub


def _refine(sub, outputs):
    """Coarsest partition compatible with the outputs and the transitions (Moore)."""
    codes = {}
    blocks = np.array([codes.setdefault(repr(o), len(codes)) for o in outputs])
    n_blocks = len(codes)
    while True:
        succ = np.where(sub >= 0, blocks[np.maximum(sub, 0)], -1)
        sig = np.c_[blocks, succ]
        _, new_blocks = np.unique(sig, axis=0, return_inverse=True)
        new_blocks = new_blocks.ravel()
        if new_blocks.max() + 1 == n_blocks:
            return new_blocks
        blocks, n_blocks = new_blocks, new_blocks.max() + 1


def _block_signature(sub, blocks):
    return [tuple(int(blocks[t]) if t >= 0 else -1 for t in row) for row in sub]


def _compatible(sig_unknown, sig_known):
    return all(a == b for a, b in zip(sig_unknown, sig_known) if a >= 0)
