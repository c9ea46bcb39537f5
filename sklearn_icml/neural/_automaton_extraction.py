"""The finite automaton a recurrent network implements, read off its hidden states.

Every analysed input sequence (all prefixes of the given sequences, the empty one
included) has a hidden state. Sequences whose hidden states lie within a merge distance of
each other are one automaton state; a sequence ``s + a`` gives the transition
``(state(s), a) -> state(s + a)``. This is the extraction of van Rossem & Saxe's code:
greedy grouping in lexicographic order against each group's first member, the merge
distance being ``merge_frac`` times the norm of the per-unit standard deviation. numpy
only, unless the model is a torch network (then torch runs it).
"""

import sys

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.utils._param_validation import validate_params
from sklearn.utils.validation import check_is_fitted

from ..utils._param_validation import FINITE_POSITIVE_REAL
from ._automaton import Automaton
from ._sequences import PAD, check_sequences

_MAX_PREFIX_CELLS = 50_000_000


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
    from ..utils._skorch import float64_copy
    from ._torch import torch

    module = float64_copy(module, device)
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
        "merge_frac": [FINITE_POSITIVE_REAL],
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
    >>> automaton.final_output([1] * 10001)
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
        "merge_frac": [FINITE_POSITIVE_REAL],
        "eps": [FINITE_POSITIVE_REAL, None],
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
