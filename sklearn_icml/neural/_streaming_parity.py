"""Elman RNN trained on streaming parity (van Rossem & Saxe, ICML 2025), on skorch.

The network reads a sequence of symbols and is read out once, after the last symbol. Input
sequences are the rows of a 2-D integer array right-padded with -1 (``PAD``), so sequences
of different lengths live in one array that every scikit-learn tool can slice; a list of
sequences of different lengths is padded on the way in. Training visits the sequences in
mini-batches of a single length (no padding inside a batch), shortest length first, as the
authors' code does; prediction packs sequences of any length, including lengths far beyond
those seen in training.
"""

import warnings

import numpy as np
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import BaseNeuralEstimator, NeuralClassifierMixin
from ..utils import check_generator
from ..utils._deprecation import DEPRECATED_PARAM, renamed_param
from ..utils._docstrings import fill_doc
from ..utils._param_validation import (
    INT_AT_LEAST_TWO,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
)
from ..utils._params import store_params
from ..utils._skorch import encode_class_labels, float64_outputs
from ..utils.validation import check_input_array, validate_input
from ._sequences import PAD, _pad_ragged, check_sequences
from ._torch import nn, seed_from_torch, skorch, torch

# rows x time steps per forward call at prediction time (bounds memory, not results)
_PREDICT_CHUNK_CELLS = 1 << 21


class ParityRNNModule(nn.Module):
    """Many-to-one Elman RNN: one-hot symbols in, a linear read-out of the last state out.

    ``h_t = phi(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)`` (``torch.nn.RNN``), output
    ``W_fc h_T + c``. Every weight matrix is drawn ``xavier_normal`` with gain
    ``init_gain`` and every bias starts at zero; the initial state ``h_0`` is a buffer of
    ones (the authors' choice) or zeros.

    Parameters
    ----------
    n_symbols : int, default=2
        Alphabet size; symbols are the integers ``0..n_symbols-1``.
    hidden_size : int, default=100
        Number of recurrent units.
    n_outputs : int, default=2
        Size of the read-out (one unit per class).
    nonlinearity : {"relu", "tanh"}, default="relu"
    init_gain : float, default=0.1
        Gain of the xavier-normal initialisation (small = "rich" regime).
    h0 : {"ones", "zeros"}, default="ones"
        Initial hidden state.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.neural import ParityRNNModule
    >>> module = ParityRNNModule(hidden_size=8)
    >>> module(torch.tensor([[0, 1, 1], [1, -1, -1]])).shape
    torch.Size([2, 2])
    """

    def __init__(
        self,
        n_symbols=2,
        hidden_size=100,
        n_outputs=2,
        nonlinearity="relu",
        init_gain=0.1,
        h0="ones",
    ):
        super().__init__()
        if h0 not in ("ones", "zeros"):
            raise ValueError(f"h0 must be 'ones' or 'zeros'. Got {h0!r} instead.")
        self.n_symbols = int(n_symbols)
        self.rnn = nn.RNN(
            self.n_symbols, hidden_size, batch_first=True, nonlinearity=nonlinearity
        )
        self.fc = nn.Linear(hidden_size, n_outputs)
        for param in self.parameters():
            if param.dim() == 2:
                nn.init.xavier_normal_(param, gain=init_gain)
            else:
                nn.init.zeros_(param)
        fill = torch.ones if h0 == "ones" else torch.zeros
        self.register_buffer("h0", fill(hidden_size))

    def _encode(self, X):
        dtype = self.fc.weight.dtype
        return nn.functional.one_hot(X.clamp(min=0), self.n_symbols).to(dtype)

    def final_hidden(self, X):
        """Hidden state after the last symbol of each row of ``X`` (rows of -1: ``h_0``).

        Parameters
        ----------
        X : LongTensor of shape (batch, max_length)
            Symbols, each row right-padded with -1.

        Returns
        -------
        h : Tensor of shape (batch, hidden_size)
        """
        batch = X.shape[0]
        h0 = self.h0.to(self.fc.weight.dtype).expand(1, batch, -1).contiguous()
        if X.shape[1] == 0 or batch == 0:
            return h0[0]
        if bool((X[:, -1] != PAD).all()):  # all rows full length: the training path
            _, h = self.rnn(self._encode(X), h0)
            return h[0]
        lengths = (X != PAD).sum(dim=1)
        nonempty = lengths > 0
        if not bool(nonempty.all()):
            out = h0[0].clone()
            if bool(nonempty.any()):
                out[nonempty] = self.final_hidden(X[nonempty])
            return out
        packed = nn.utils.rnn.pack_padded_sequence(
            self._encode(X), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        _, h = self.rnn(packed, h0)
        return h[0]

    def forward(self, X):
        """Read-out ``W_fc h_T + c`` of each row of ``X`` (raw outputs, no softmax)."""
        return self.fc(self.final_hidden(X))


class LengthBucketLoader:
    """skorch ``iterator_train``: mini-batches of sequences of one length only.

    Private plumbing of :class:`StreamingParityRNNClassifier` (skorch builds it from the
    training dataset); it is not part of the public API.

    One pass (an epoch) visits the lengths in ascending order (or a random order), and
    within a length shuffles the sequences and cuts them into mini-batches of
    ``batch_size``; padding columns are trimmed, so a batch is a dense ``(b, L)`` tensor.
    The shuffling generator is seeded from torch's RNG when the loader is built, so it
    follows the estimator's ``random_state``.

    Parameters
    ----------
    dataset : skorch.dataset.Dataset
        Holds ``X`` (padded int64 array) and ``y``.
    batch_size : int, default=128
    order : {"ascending", "random"}, default="ascending"
        Order in which the lengths are visited in each epoch.
    """

    def __init__(self, dataset, batch_size=128, order="ascending"):
        X = torch.tensor(np.asarray(dataset.X), dtype=torch.long)  # copies: X may be read-only
        y = torch.tensor(np.asarray(dataset.y))
        lengths = (X != PAD).sum(dim=1).numpy()
        self.buckets = []
        for length in np.unique(lengths):
            rows = torch.as_tensor(np.flatnonzero(lengths == length))
            self.buckets.append((X[rows, :length].contiguous(), y[rows]))
        self.batch_size = int(batch_size)
        self.order = order
        self.rng = check_generator(seed_from_torch())

    def __len__(self):
        return sum(-(-bx.shape[0] // self.batch_size) for bx, _ in self.buckets)

    def __iter__(self):
        order = range(len(self.buckets))
        if self.order == "random":
            order = self.rng.permutation(len(self.buckets))
        for i in order:
            bx, by = self.buckets[i]
            perm = torch.as_tensor(self.rng.permutation(bx.shape[0]))
            for start in range(0, bx.shape[0], self.batch_size):
                idx = perm[start : start + self.batch_size]
                yield bx[idx], by[idx]


def module_outputs(module, X, *, hidden=False, device="cpu", n_jobs=None):
    """Outputs (or final hidden states) of ``module`` on padded int64 ``X``, in float64.

    The module is copied and run in float64 in evaluation mode, so long sequences of an
    unconverged ReLU network overflow far later than in float32 and the fitted module is
    untouched. Rows are processed in chunks; the result does not depend on the chunking.
    """
    size = module.h0.shape[0] if hidden else module.fc.out_features
    return float64_outputs(
        module,
        X,
        rows_per_chunk=max(1, _PREDICT_CHUNK_CELLS // max(X.shape[1], 1)),
        empty_shape=(0, size),
        method="final_hidden" if hidden else None,
        device=device,
        n_jobs=n_jobs,
    )


@fill_doc
class StreamingParityRNNClassifier(NeuralClassifierMixin, BaseNeuralEstimator):
    """Elman RNN sequence classifier, trained as in the streaming parity paper.

    A single-layer RNN reads a sequence of symbols and its linear read-out after the last
    symbol gives the class (many-to-one). Trained as van Rossem & Saxe did on all binary
    sequences of lengths 1..10, with the parity of the number of ones as target, the
    network sits on a loss plateau for hundreds of epochs, then suddenly reaches zero loss
    and generalises to sequences of any length (10,000 and beyond): same-parity hidden
    states have merged and the network implements a 2-state automaton, which
    :func:`~sklearn_icml.neural.extract_automaton` recovers. The defaults are the paper's
    main run (ReLU, 100 units, gain 0.1, ``h_0`` = ones, plain SGD with learning rate 0.02, MSE on
    one-hot targets, batches of 128 of a single length, lengths in ascending order, 1000
    epochs).

    **Input.** ``X`` is a 2-D integer array, one sequence per row, symbols
    ``0..n_symbols-1``, each row right-padded with ``-1`` (see
    :func:`~sklearn_icml.datasets.make_streaming_parity`); a list of sequences of
    different lengths is padded automatically. The number of columns may differ between
    ``fit`` and ``predict``: sequences far longer than the training ones are the point.
    ``y`` holds the class labels (parity 0/1 for the paper's task; any labels work).

    Implemented on skorch: ``fit`` builds a ``skorch.NeuralNet`` around
    :class:`ParityRNNModule` with a ``LengthBucketLoader`` (private) as training iterator, and
    stores it in ``net_``.

    Parameters
    ----------
    n_symbols : int, default=2
        Alphabet size.
    hidden_size : int, default=100
        Number of recurrent units.
    nonlinearity : {"relu", "tanh"}, default="relu"
    init_gain : float, default=0.1
        Gain of the xavier-normal initialisation of every weight matrix (biases start at
        0). Small gains favour the merger of same-output states.
    h0 : {"ones", "zeros"}, default="ones"
        Initial hidden state (the authors use ones).
    learning_rate : float, default=0.02
        SGD learning rate (no momentum, no weight decay).
    max_epochs : int, default=1000
        Epochs; one epoch visits every training sequence once.
    batch_size : int, default=128
        Sequences per mini-batch (all of one length).
    loss : {"mse", "ce"}, default="mse"
        ``"mse"``: mean squared error between the outputs and one-hot targets (the main
        run); ``"ce"``: cross-entropy with the outputs as logits (the phase-diagram run).
    conv_threshold : float, default=0.0
        Stop after the first epoch whose training loss is below this value; 0 trains for
        exactly ``max_epochs``. The epoch loss is skorch's ``train_loss``: the mean of the
        mini-batch losses weighted by batch size.
    length_order : {"ascending", "random"}, default="ascending"
        Order in which each epoch visits the lengths.
    %(device)s
        Prediction runs there too, in float64.
    %(torch_n_jobs)s
        One thread is fastest for this small network.
    callbacks : list of (str, skorch.callbacks.Callback), default=None
        Extra skorch callbacks (checkpoints, learning-rate schedules, a probe that
        analyses ``net.module_`` every few epochs). They are copied in ``fit``; the fitted
        copies are in ``net_.callbacks_``.
    %(random_state)s
        Here it seeds the weights and the shuffling.
    %(verbose)s
        1 prints skorch's table (epoch, train loss, duration) every epoch.
    **kwargs
        Routed to the skorch net as skorch routes them; only keywords prefixed
        ``module__``, ``optimizer__``, ``criterion__``, ``iterator_train__``,
        ``iterator_valid__`` or ``callbacks__`` are accepted, and they override the values
        the parameters above set.
        E.g. ``optimizer__momentum=0.9``, ``module__nonlinearity="tanh"``,
        ``iterator_train__order="random"``.
    lr : float, default="deprecated"
        Deprecated alias of ``learning_rate`` (renamed in 0.3, removed in 0.4).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Width of the training ``X`` (the longest training sequence).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
    net_ : skorch.NeuralNet
        The fitted skorch net.
    module_ : ParityRNNModule
        The trained torch module (``net_.module_``).
    history_ : skorch.History
        Per-epoch records; ``history_[:, "train_loss"]`` is the loss curve.
    n_epochs_run_ : int
        Epochs run.
    converged_ : bool
        Whether training stopped because the loss fell below ``conv_threshold`` (always
        False when ``conv_threshold=0``).

    See Also
    --------
    extract_automaton : the finite automaton the trained network implements.
    sklearn_icml.datasets.make_streaming_parity : training and test sequences.

    Notes
    -----
    ``torch.nn.RNN`` has two bias vectors (``b_ih``, ``b_hh``); they receive identical
    gradients, so under SGD they act as one bias trained with twice the learning rate, as
    in the authors' code. An epoch over the default 2046 sequences (21 SGD steps) costs
    about 0.1 s of CPU time on one thread, so the paper's 1000-epoch main run takes about
    2 minutes on an idle core; its loss transition comes between epochs 500 and 600.

    The paper [1]_ reads the class off the network as the argmax of its outputs and gives
    no probabilities; the library adds ``predict_proba`` for scikit-learn's tools. With
    ``loss="ce"`` it is the softmax of the outputs. With ``"mse"`` the outputs regress
    one-hot targets; they are clipped at 0 and divided by their sum (the softmax when all
    are <= 0). ``predict`` is the argmax of ``predict_proba``, as in the paper. Outputs
    that are not finite (an unconverged ReLU network on very long sequences) are never
    turned into a class: ``predict`` raises, ``predict_proba`` returns NaN rows and
    ``score`` returns NaN, both with a RuntimeWarning.

    References
    ----------
    .. [1] L. van Rossem and A. M. Saxe, "Algorithm Development in Neural Networks:
       Insights from the Streaming Parity Task", ICML 2025, arXiv:2507.09897.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_streaming_parity
    >>> from sklearn_icml.neural import StreamingParityRNNClassifier
    >>> X, y = make_streaming_parity(max_length=4)
    >>> clf = StreamingParityRNNClassifier(hidden_size=16, max_epochs=5, random_state=0)
    >>> clf.fit(X, y).n_epochs_run_
    5
    >>> clf.predict([[1, 0, 1, 1, 0, 1], [0, 1]]).shape
    (2,)
    """

    _parameter_constraints = {
        **BaseNeuralEstimator._parameter_constraints,
        "n_symbols": [INT_AT_LEAST_TWO],
        "hidden_size": [POSITIVE_INT],
        "nonlinearity": [StrOptions({"relu", "tanh"})],
        "init_gain": [POSITIVE_REAL],
        "h0": [StrOptions({"ones", "zeros"})],
        "learning_rate": [POSITIVE_REAL],
        "max_epochs": [POSITIVE_INT],
        "batch_size": [POSITIVE_INT],
        "loss": [StrOptions({"mse", "ce"})],
        "conv_threshold": [NON_NEGATIVE_REAL],
        "length_order": [StrOptions({"ascending", "random"})],
        "callbacks": [list, None],
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],
    }

    def __init__(
        self,
        *,
        n_symbols=2,
        hidden_size=100,
        nonlinearity="relu",
        init_gain=0.1,
        h0="ones",
        learning_rate=0.02,
        max_epochs=1000,
        batch_size=128,
        loss="mse",
        conv_threshold=0.0,
        length_order="ascending",
        device="cpu",
        n_jobs=1,
        callbacks=None,
        random_state=None,
        verbose=0,
        lr="deprecated",
        **kwargs,
    ):
        store_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the RNN on padded sequences ``X`` with labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_sequences, max_length) or list of sequences
            Symbols ``0..n_symbols-1``, rows right-padded with -1.
        y : array-like of shape (n_sequences,)
            Class labels.

        Returns
        -------
        self : StreamingParityRNNClassifier
            Fitted: ``net_``, ``classes_``, ``history_`` and ``converged_`` are set.
        """
        X, y = validate_input(self, _pad_ragged(X), y, dtype="numeric")
        X = check_sequences(X, self.n_symbols)
        self.classes_, y_index = encode_class_labels(y)
        n_classes = self.classes_.shape[0]
        if self.loss == "mse":
            target = np.eye(n_classes, dtype=np.float32)[y_index]
            criterion = nn.MSELoss
        else:
            target = y_index
            criterion = nn.CrossEntropyLoss
        self._fit_net(
            skorch.NeuralNet,
            X,
            target,
            stop_below=self.conv_threshold,
            module=ParityRNNModule,
            module__n_symbols=self.n_symbols,
            module__hidden_size=self.hidden_size,
            module__n_outputs=n_classes,
            module__nonlinearity=self.nonlinearity,
            module__init_gain=self.init_gain,
            module__h0=self.h0,
            criterion=criterion,
            optimizer=torch.optim.SGD,
            lr=renamed_param(self, "lr", "learning_rate"),
            max_epochs=self.max_epochs,
            batch_size=self.batch_size,
            iterator_train=LengthBucketLoader,
            iterator_train__order=self.length_order,
        )
        last = self.history_[-1, "train_loss"]
        self.converged_ = bool(self.conv_threshold > 0 and last < self.conv_threshold)
        if self.conv_threshold > 0 and not self.converged_:
            warnings.warn(
                f"the training loss {last:.3g} did not fall below conv_threshold="
                f"{self.conv_threshold} in {self.max_epochs} epochs; raise max_epochs.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _validate_X(self, X):
        """Validate sequences at predict time; any sequence length is accepted."""
        check_is_fitted(self)
        X = _pad_ragged(X)
        width = getattr(X, "shape", (None, None))
        width = width[1] if len(width) == 2 else None
        if width == self.n_features_in_:
            X = validate_input(self, X, reset=False, dtype="numeric")
        else:  # longer or shorter sequences than in fit: columns are time steps
            X = check_input_array(X, dtype="numeric")
        return check_sequences(X, self.n_symbols)

    def _predict_logits(self, X):
        """Raw network outputs (float64) on sequences already validated."""
        return module_outputs(self.module_, X, device=self.net_.device, n_jobs=self.n_jobs)

    def _proba_from_outputs(self, outputs):
        finite = np.all(np.isfinite(outputs), axis=1)
        proba = np.full(outputs.shape, np.nan)
        out = outputs[finite]
        shifted = np.exp(out - out.max(axis=1, keepdims=True))
        soft = shifted / shifted.sum(axis=1, keepdims=True)
        if self.loss == "ce":
            proba[finite] = soft
        else:  # the MSE read-out, with the softmax where every output is <= 0
            clipped = np.clip(out, 0.0, None)
            total = clipped.sum(axis=1, keepdims=True)
            proba[finite] = np.where(total > 0, clipped / np.where(total > 0, total, 1), soft)
        return proba, finite

    def _proba(self, X, consequence=None):
        """Validate ``X``; probabilities and the mask of rows with finite outputs.

        When some outputs are not finite and ``consequence`` is given, warn with it.
        """
        X = self._validate_X(X)
        proba, finite = self._proba_from_outputs(self._predict_logits(X))
        if consequence is not None and not finite.all():
            warnings.warn(
                f"{np.count_nonzero(~finite)} of {finite.shape[0]} sequences gave non-finite "
                f"network outputs (the hidden state overflowed); {consequence}.",
                RuntimeWarning,
                stacklevel=3,
            )
        return X, proba, finite

    def predict_proba(self, X):
        """Class probabilities (see Notes for the MSE read-out).

        Parameters
        ----------
        X : array-like of shape (n_sequences, length) or list of sequences
            Sequences of any length, rows right-padded with -1.

        Returns
        -------
        proba : ndarray of shape (n_sequences, n_classes)
            Rows of NaN (with a RuntimeWarning) where the network's outputs overflowed.
        """
        return self._proba(X, "their probabilities are NaN")[1]

    def predict(self, X):
        """Predicted class of each sequence: the argmax of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_sequences, length) or list of sequences
            As for :meth:`predict_proba`.

        Returns
        -------
        y_pred : ndarray of shape (n_sequences,)

        Raises
        ------
        ValueError
            If the network's outputs are not finite for some sequence.
        """
        X, proba, finite = self._proba(X)
        if not finite.all():
            bad = int(np.flatnonzero(~finite)[0])
            raise ValueError(
                f"the network's outputs are not finite for {np.count_nonzero(~finite)} of "
                f"{finite.shape[0]} sequences (first: row {bad}, length "
                f"{int(np.count_nonzero(X[bad] != PAD))}); the hidden state overflowed, so no "
                "class can be given. predict_proba returns NaN for these rows."
            )
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy on ``(X, y)``; NaN (with a RuntimeWarning) if some outputs overflowed.

        Parameters
        ----------
        X : array-like of shape (n_sequences, length) or list of sequences
        y : array-like of shape (n_sequences,)
        sample_weight : array-like of shape (n_sequences,), default=None

        Returns
        -------
        score : float
        """
        from sklearn.metrics import accuracy_score

        _, proba, finite = self._proba(X, "the score is NaN")
        if not finite.all():
            return float("nan")
        y_pred = self.classes_[np.argmax(proba, axis=1)]
        return float(accuracy_score(y, y_pred, sample_weight=sample_weight))

    def hidden_states(self, X):
        """Hidden state of the network after the last symbol of each sequence (float64).

        Parameters
        ----------
        X : array-like of shape (n_sequences, length) or list of sequences

        Returns
        -------
        hidden : ndarray of shape (n_sequences, hidden_size)
        """
        X = self._validate_X(X)
        return module_outputs(
            self.module_, X, hidden=True, device=self.net_.device, n_jobs=self.n_jobs
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # X holds integer symbol codes (one sequence per row), not continuous features;
        # symbols are >= 0, and the only negative value allowed is the padding -1
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        return tags
