"""Finite automata read off a recurrent network's hidden states, and their minimisation.

Every analysed input sequence (all prefixes of the given sequences, the empty one
included) has a hidden state. Sequences whose hidden states lie within a merge distance of
each other are one automaton state; a sequence ``s + a`` gives the transition
``(state(s), a) -> state(s + a)``. This is the extraction of van Rossem & Saxe's code:
greedy grouping in lexicographic order against each group's first member, the merge
distance being ``merge_frac`` times the norm of the per-unit standard deviation.
"""

import copy
import dataclasses
import sys

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.utils._param_validation import validate_params
from sklearn.utils.validation import check_is_fitted

from ..utils import optional_import
from ._sequences import PAD, check_sequences
from ._validation import POSITIVE

_MAX_PREFIX_CELLS = 50_000_000


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
    >>> parity.run([1, 0, 1, 1])
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

    def run(self, sequence):
        """Output of the state reached after reading ``sequence`` (padding -1 ignored).

        Raises
        ------
        ValueError
            If the sequence hits an undefined transition.
        """
        seq = np.asarray(sequence).reshape(1, -1)
        return self.outputs[int(self._final_states(seq)[0])]

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


class _Trie:
    """Prefix tree of the rows of a padded array: node 0 is the empty sequence."""

    def __init__(self, X):
        self.parent = [-1]
        self.symbol = [-1]
        self.depth = [0]
        self.children = [{}]
        self.row_node = np.empty(X.shape[0], dtype=np.int64)
        for r, row in enumerate(X):
            node = 0
            for value in row:
                if value == PAD:
                    break
                child = self.children[node].get(int(value))
                if child is None:
                    child = len(self.parent)
                    self.parent.append(node)
                    self.symbol.append(int(value))
                    self.depth.append(self.depth[node] + 1)
                    self.children.append({})
                    self.children[node][int(value)] = child
                node = child
            self.row_node[r] = node

    def preorder(self):
        """Nodes in lexicographic order of their sequences (the empty one first)."""
        order, stack = [], [0]
        while stack:
            node = stack.pop()
            order.append(node)
            kids = self.children[node]
            stack.extend(kids[s] for s in sorted(kids, reverse=True))
        return np.array(order, dtype=np.int64)

    def padded(self, nodes, width):
        out = np.full((len(nodes), width), PAD, dtype=np.int64)
        for i, node in enumerate(nodes):
            d = self.depth[node]
            while node > 0:
                d -= 1
                out[i, d] = self.symbol[node]
                node = self.parent[node]
        return out


def _network_representations(module, trie, device):
    """Hidden states and outputs (float64) of every trie node, one RNN step per depth."""
    torch = optional_import("torch", "neural")
    module = copy.deepcopy(module).to(device=device, dtype=torch.float64).eval()
    n = len(trie.parent)
    depth = np.asarray(trie.depth)
    parent = np.asarray(trie.parent)
    symbol = np.asarray(trie.symbol)
    hidden = torch.empty((n, module.h0.shape[0]), dtype=torch.float64, device=device)
    hidden[0] = module.h0
    with torch.no_grad():
        for d in range(1, int(depth.max()) + 1):
            nodes = np.flatnonzero(depth == d)
            h_prev = hidden[torch.as_tensor(parent[nodes], device=device)]
            x = torch.as_tensor(symbol[nodes], device=device).reshape(-1, 1)
            _, h = module.rnn(module._encode(x), h_prev.unsqueeze(0).contiguous())
            hidden[torch.as_tensor(nodes, device=device)] = h[0]
        outputs = module.fc(hidden)
    return hidden.cpu().numpy(), outputs.cpu().numpy()


def _merge_distance(hidden, merge_frac):
    scale = float(np.linalg.norm(np.std(hidden, axis=0)))
    if not np.isfinite(scale):
        raise ValueError("the hidden states are not finite; no automaton can be extracted.")
    if scale == 0.0:
        raise ValueError(
            "all hidden states are identical (their standard deviation is 0), so the merge "
            "distance merge_frac * ||std|| is 0; there is no structure to extract."
        )
    return merge_frac * scale


def _group(hidden, eps):
    """Greedy grouping in the given row order against each group's first member."""
    n, dim = hidden.shape
    leaders = np.empty((n, dim))
    assignment = np.empty(n, dtype=np.int64)
    k = 0
    eps2 = eps * eps
    for i in range(n):
        if k:
            d2 = np.sum((leaders[:k] - hidden[i]) ** 2, axis=1)
            close = np.flatnonzero(d2 < eps2)
            if close.size:
                assignment[i] = close[0]
                continue
        leaders[k] = hidden[i]
        assignment[i] = k
        k += 1
    return assignment, k


def _label(seq, n_symbols):
    symbols = [str(int(v)) for v in seq if v != PAD]
    return ("" if n_symbols <= 10 else ",").join(symbols)


@validate_params(
    {
        "X": ["array-like", None],
        "merge_frac": [POSITIVE],
        "outputs": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def extract_automaton(
    model,
    X=None,
    *,
    merge_frac=0.01,
    outputs=None,
    initial_output="unknown",
):
    """Read the finite automaton a recurrent network implements off its hidden states.

    The analysed sequences are all prefixes of the rows of ``X`` (the empty sequence,
    whose hidden state is ``h_0``, included), sorted lexicographically. In that order,
    each hidden state joins the first group whose *first* member is closer than
    ``eps = merge_frac * ||std||`` (Euclidean; ``std`` the per-unit standard deviation
    over all analysed hidden states), or opens a new group; each group is a state. Each
    sequence ``s + a`` adds the transition ``(state(s), a) -> state(s + a)``; when members
    of one state disagree, the first transition in lexicographic order is kept and the
    disagreement is counted in ``n_conflicts``. The output of a state is the network's
    predicted class for its first member.

    Parameters
    ----------
    model : StreamingParityRNNClassifier, ParityRNNModule or ndarray
        A fitted classifier, a bare module, or precomputed hidden states of shape
        ``(n_sequences, n_units)`` (then row ``i`` is the hidden state of sequence
        ``X[i]``, a row of -1 being the empty sequence, and only these sequences are
        analysed).
    X : array-like of shape (n_sequences, max_length), default=None
        Padded sequences. For a fitted classifier, None means every sequence of lengths
        1..``n_features_in_`` (the paper's analysis set: 2047 prefixes for lengths up to
        10); required otherwise.
    merge_frac : float, default=0.01
        Merge distance as a fraction of the hidden states' spread (the paper uses 0.01
        and 0.1).
    outputs : array-like of shape (n_sequences,), default=None
        Output of each row, when ``model`` is an array of hidden states; None leaves the
        outputs unknown.
    initial_output : "unknown", "model" or a label, default="unknown"
        Output of the initial state when ``h_0`` is alone in its group. The network is
        never trained on the empty sequence, so its read-out of ``h_0`` is arbitrary:
        ``"unknown"`` (the authors' choice) leaves it out of the output partition, and
        :meth:`Automaton.minimize` then merges it with the block it behaves like;
        ``"model"`` uses the read-out anyway; a label sets it (e.g. 0, the parity of the
        empty sequence). With an array of hidden states the given ``outputs`` are used
        unless a label is passed here.

    Returns
    -------
    automaton : Automaton
        State 0 is the initial state. ``prefixes``, ``hidden``, ``assignment`` and
        ``eps`` hold the analysed sequences, their hidden states, their states and the
        merge distance.

    Raises
    ------
    ValueError
        For ``merge_frac <= 0``, hidden states that are all identical (zero spread) or
        not finite, and malformed sequences.

    See Also
    --------
    Automaton.minimize : the minimal automaton (2 states for a network that solved parity).
    merger_fraction : how many same-output pairs of hidden states have merged.

    References
    ----------
    .. [1] L. van Rossem and A. M. Saxe, ICML 2025, arXiv:2507.09897. The automaton read
       off the hidden states is their measure of the algorithm the network found.

    Examples
    --------
    Hidden states that are the one-hot code of the parity state give the parity automaton:

    >>> import numpy as np
    >>> from sklearn_icml.datasets import make_streaming_parity
    >>> from sklearn_icml.neural import extract_automaton
    >>> X, y = make_streaming_parity(max_length=3)
    >>> X = np.vstack([[-1, -1, -1], X])           # the empty sequence
    >>> y = np.r_[0, y]
    >>> automaton = extract_automaton(np.eye(2)[y], X, outputs=y)
    >>> automaton.n_states, automaton.is_complete()
    (2, True)
    >>> automaton.run([1] * 10001)
    1
    """
    merge_frac = float(merge_frac)
    device = "cpu"
    if _is_network(model):
        from ._streaming_parity import StreamingParityRNNClassifier

        if isinstance(model, StreamingParityRNNClassifier):
            check_is_fitted(model)
            module, classes, n_symbols = model.module_, model.classes_, model.n_symbols
            device = model.net_.device
            if X is None:
                X = _all_sequences(n_symbols, model.n_features_in_)
        else:
            module = model
            classes = np.arange(module.fc.out_features)
            n_symbols = module.n_symbols
            if X is None:
                raise ValueError("X is required when model is a ParityRNNModule.")
        X = check_sequences(np.asarray(X), n_symbols, allow_empty=True)
        trie = _Trie(X)
        order = trie.preorder()
        _refuse_too_many_prefixes(len(order), X.shape[1])
        hidden_all, out_all = _network_representations(module, trie, device)
        hidden = hidden_all[order]
        finite = np.all(np.isfinite(out_all[order]), axis=1)
        labels_out = np.empty(len(order), dtype=object)
        labels_out[finite] = classes[np.argmax(out_all[order][finite], axis=1)]
        labels_out[~finite] = None
        if initial_output == "model":
            pass
        elif initial_output == "unknown":
            labels_out[0] = None
        else:
            labels_out[0] = initial_output
        nodes = order
    else:
        hidden_rows = np.asarray(model, dtype=np.float64)
        if hidden_rows.ndim != 2:
            raise ValueError(
                "model must be a fitted StreamingParityRNNClassifier, a ParityRNNModule or "
                f"a 2-D array of hidden states. Got an array of shape {hidden_rows.shape} "
                "instead."
            )
        if X is None:
            raise ValueError("X is required when model is an array of hidden states.")
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[0] != hidden_rows.shape[0]:
            raise ValueError(
                f"X must be 2-D with one row per hidden state ({hidden_rows.shape[0]}). Got "
                f"shape {X.shape} instead."
            )
        symbols = X[X != PAD]
        n_symbols = max(2, int(symbols.max()) + 1) if symbols.size else 2
        X = check_sequences(X, n_symbols, allow_empty=True)
        if outputs is not None:
            outputs = np.asarray(outputs, dtype=object)
            if outputs.shape != (X.shape[0],):
                raise ValueError(
                    f"outputs must have shape ({X.shape[0]},). Got {outputs.shape} instead."
                )
        trie = _Trie(X)
        node_row = {}
        for r, node in enumerate(trie.row_node):
            node_row.setdefault(int(node), r)
        order = trie.preorder()
        nodes = np.array([n for n in order if int(n) in node_row], dtype=np.int64)
        rows = np.array([node_row[int(n)] for n in nodes], dtype=np.int64)
        hidden = hidden_rows[rows]
        labels_out = (
            outputs[rows] if outputs is not None else np.full(len(rows), None, dtype=object)
        )
        if initial_output not in ("unknown", "model") and nodes[0] == 0:
            labels_out[0] = initial_output
    if not np.all(np.isfinite(hidden)):
        raise ValueError("the hidden states are not finite; no automaton can be extracted.")

    eps = _merge_distance(hidden, merge_frac)
    assignment, n_states = _group(hidden, eps)

    position = {int(node): i for i, node in enumerate(nodes)}
    transitions, conflicts = {}, set()
    for i, node in enumerate(nodes):
        parent = trie.parent[node]
        if parent < 0 or parent not in position:
            continue
        key = (int(assignment[position[parent]]), trie.symbol[node])
        target = int(assignment[i])
        kept = transitions.setdefault(key, target)
        if kept != target:
            conflicts.add(key)

    first_member = np.full(n_states, -1, dtype=np.int64)
    for i in range(len(nodes) - 1, -1, -1):
        first_member[assignment[i]] = i
    state_outputs = []
    for s in range(n_states):
        out = labels_out[first_member[s]]
        if out is None and first_member[s] == 0 and initial_output == "unknown":
            members = np.flatnonzero(assignment == s)
            if members.size > 1:  # h_0 merged with trained states: use the next member
                out = labels_out[members[1]]
        state_outputs.append(_plain(out))
    width = max(1, int(max(trie.depth[n] for n in nodes)))
    prefixes = trie.padded(nodes, width)
    return Automaton(
        transitions=transitions,
        outputs=tuple(state_outputs),
        initial_state=int(assignment[0]) if nodes[0] == 0 else 0,
        n_symbols=n_symbols,
        labels=tuple(_label(prefixes[first_member[s]], n_symbols) for s in range(n_states)),
        n_conflicts=len(conflicts),
        eps=eps,
        prefixes=prefixes,
        hidden=hidden,
        assignment=assignment,
    )


def _is_network(model):
    """Whether ``model`` is a parity classifier or module, without importing torch.

    Such an object exists only once its module is imported (unpickling one imports it).
    """
    rnn = sys.modules.get(f"{__package__}._streaming_parity")
    if rnn is None:
        return False
    return isinstance(model, rnn.StreamingParityRNNClassifier | rnn.ParityRNNModule)


def _plain(value):
    """numpy scalars -> Python scalars, so outputs print and compare simply."""
    return value.item() if isinstance(value, np.generic) else value


def _refuse_too_many_prefixes(n_prefixes, width):
    if n_prefixes * max(width, 1) > _MAX_PREFIX_CELLS:
        raise ValueError(
            f"X has {n_prefixes} distinct prefixes of up to {width} symbols; that is too "
            "many to analyse. Pass fewer or shorter sequences (the paper analyses all "
            "sequences of the training lengths)."
        )


def _all_sequences(n_symbols, max_length):
    n_rows = sum(n_symbols**length for length in range(1, max_length + 1))
    _refuse_too_many_prefixes(n_rows, max_length)
    blocks = []
    for length in range(1, max_length + 1):
        grids = np.indices((n_symbols,) * length).reshape(length, -1).T
        block = np.full((grids.shape[0], max_length), PAD, dtype=np.int64)
        block[:, :length] = grids
        blocks.append(block)
    return np.concatenate(blocks)


@validate_params(
    {
        "hidden": ["array-like"],
        "labels": ["array-like"],
        "merge_frac": [POSITIVE],
        "eps": [POSITIVE, None],
    },
    prefer_skip_nested_validation=True,
)
def merger_fraction(hidden, labels, *, merge_frac=0.01, eps=None):
    """How many pairs of hidden states have merged, among same- and different-label pairs.

    Over all unordered pairs of rows of ``hidden``, a pair is merged when its Euclidean
    distance is below ``eps`` (by default ``merge_frac`` times the norm of the per-unit
    standard deviation, as in :func:`extract_automaton`). The paper's merger statistic is
    the fraction of same-target pairs that merged (0.17 at merge_frac 0.01 after training
    on parity); different-target pairs should never merge.

    Parameters
    ----------
    hidden : array-like of shape (n, n_units)
        Hidden states, e.g. ``automaton.hidden``.
    labels : array-like of shape (n,)
        Target of each row (e.g. the parity of each analysed sequence).
    merge_frac : float, default=0.01
    eps : float, default=None
        Merge distance; overrides ``merge_frac``.

    Returns
    -------
    stats : dict
        ``same_fraction``, ``different_fraction`` (fractions of pairs merged),
        ``n_same_merged``, ``n_different_merged``, ``n_same_pairs``,
        ``n_different_pairs`` and ``eps``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.neural import merger_fraction
    >>> hidden = np.array([[0.0], [0.0], [1.0], [5.0]])
    >>> stats = merger_fraction(hidden, [0, 0, 1, 1], eps=0.5)
    >>> stats["same_fraction"], stats["n_different_merged"]
    (0.5, 0)
    """
    hidden = np.asarray(hidden, dtype=np.float64)
    labels = np.asarray(labels)
    if hidden.ndim != 2:
        raise ValueError(f"hidden must be 2-D. Got shape {hidden.shape} instead.")
    if labels.shape != (hidden.shape[0],):
        raise ValueError(
            f"labels must have shape ({hidden.shape[0]},). Got {labels.shape} instead."
        )
    if not np.all(np.isfinite(hidden)):
        raise ValueError("hidden contains NaN or infinity; every value must be finite.")
    if eps is None:
        eps = _merge_distance(hidden, float(merge_frac))
    n = hidden.shape[0]
    same_merged = diff_merged = same_pairs = 0
    step = max(1, 4_000_000 // max(n, 1))
    for start in range(0, n, step):
        stop = min(n, start + step)
        dist = cdist(hidden[start:stop], hidden)
        upper = np.arange(n)[None, :] > np.arange(start, stop)[:, None]
        same = labels[start:stop, None] == labels[None, :]
        merged = dist < eps
        same_pairs += int(np.count_nonzero(same & upper))
        same_merged += int(np.count_nonzero(merged & same & upper))
        diff_merged += int(np.count_nonzero(merged & ~same & upper))
    total = n * (n - 1) // 2
    diff_pairs = total - same_pairs
    return {
        "same_fraction": same_merged / same_pairs if same_pairs else float("nan"),
        "different_fraction": diff_merged / diff_pairs if diff_pairs else float("nan"),
        "n_same_merged": same_merged,
        "n_different_merged": diff_merged,
        "n_same_pairs": same_pairs,
        "n_different_pairs": diff_pairs,
        "eps": float(eps),
    }
