"""DWMCharLM: a tiny GRU language model trained on token sequences weighted by a DWM."""

import functools

import numpy as np
from sklearn.utils._param_validation import validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted

from ..utils import optional_import
from ..utils._deprecation import DEPRECATED, keyword_only_after
from ..utils._param_validation import INT_AT_LEAST_TWO, POSITIVE_INT
from ..utils._params import store_params
from ..utils._skorch import torch_threads
from ..utils.validation import validate_input
from ._base import _BaseDWM, check_sample_feature_width, sample_features_array, transform_loss
from ._bilevel import sequence_nll
from ._weighting_model import compute_weights

torch = optional_import("torch", "neural")
nn = torch.nn

_SCORE_CHUNK = 4096


class CharGRUModule(nn.Module):
    """Next-token GRU language model: embedding, one GRU layer, linear read-out.

    ``forward(X)`` takes a ``(B, L)`` LongTensor of tokens and returns the logits of the
    tokens ``X[:, 1:]`` given their prefixes, shape ``(B, L - 1, vocab_size)``. The
    recurrence is the one of ``torch.nn.GRU`` (reset, update and new gates). On the CPU it
    runs torch's fused GRU kernel (about twice as fast, and twice differentiable there);
    on other devices (cuDNN's kernel has no double backward) and under
    ``torch.func.vmap`` (the first-order hypergradient) the cell is written out.

    Parameters
    ----------
    vocab_size : int
    embedding_dim : int, default=32
    hidden_size : int, default=64

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.weighting import CharGRUModule
    >>> CharGRUModule(5, 4, 8)(torch.zeros(2, 6, dtype=torch.long)).shape
    torch.Size([2, 5, 5])
    """

    _parameter_constraints = {
        "vocab_size": [POSITIVE_INT],
        "embedding_dim": [POSITIVE_INT],
        "hidden_size": [POSITIVE_INT],
    }

    def __init__(self, vocab_size, embedding_dim=32, hidden_size=64):
        super().__init__()
        # a torch module, not an estimator: its arguments are checked when it is built
        validate_parameter_constraints(
            self._parameter_constraints,
            {"vocab_size": vocab_size, "embedding_dim": embedding_dim, "hidden_size": hidden_size},
            caller_name=type(self).__name__,
        )
        self.embedding = nn.Embedding(int(vocab_size), int(embedding_dim))
        self.ih = nn.Linear(int(embedding_dim), 3 * int(hidden_size))
        self.hh = nn.Linear(int(hidden_size), 3 * int(hidden_size))
        self.out = nn.Linear(int(hidden_size), int(vocab_size))
        self.hidden_size = int(hidden_size)

    def hidden_states(self, X):
        """GRU states after each of the tokens ``X[:, :-1]``: ``(B, L - 1, hidden_size)``."""
        X = X.long()
        if X.device.type == "cpu" and not torch._C._functorch.is_functorch_wrapped_tensor(X):
            return self._hidden_states_fused(X)
        return self._hidden_states_explicit(X)

    def _hidden_states_fused(self, X):
        emb = self.embedding(X[:, :-1])
        h0 = emb.new_zeros(1, X.shape[0], self.hidden_size)
        weights = [self.ih.weight, self.hh.weight, self.ih.bias, self.hh.bias]
        out, _ = torch._VF.gru(emb, h0, weights, True, 1, 0.0, self.training, False, True)
        return out

    def _hidden_states_explicit(self, X):
        gates_x = self.ih(self.embedding(X[:, :-1]))
        h = gates_x.new_zeros(X.shape[0], self.hidden_size)
        states = []
        for t in range(gates_x.shape[1]):
            xr, xz, xn = gates_x[:, t].chunk(3, dim=1)
            hr, hz, hn = self.hh(h).chunk(3, dim=1)
            r = torch.sigmoid(xr + hr)
            z = torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            h = (1 - z) * n + z * h
            states.append(h)
        return torch.stack(states, dim=1)

    def forward(self, X):
        return self.out(self.hidden_states(X))


def lm_features(module, X, static, losses, *, loss_feature):
    """DWM input of a batch of sequences: ``[mean token embedding, sample features, loss]``.

    The embeddings are the learner's own (detached): as the learner trains, the DWM sees
    its current view of the data.
    """
    with torch.no_grad():
        pooled = module.embedding(X.long()).mean(dim=1)
    return torch.cat(
        [pooled, static.to(pooled.dtype), transform_loss(losses, loss_feature).unsqueeze(1)],
        dim=1,
    )


def _token_array(X, vocab_size, name="X"):
    """Validated 2-D ``X`` as int64 tokens in ``0..vocab_size-1`` (a copy)."""
    X = np.asarray(X)
    if X.dtype.kind == "f":
        if not np.all(X == np.round(X)):
            raise ValueError(f"{name} must hold integer tokens. Got non-integer values instead.")
    elif X.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer tokens. Got dtype {X.dtype} instead.")
    if X.size and X.min() < 0:
        raise ValueError(
            f"Negative values in data passed to {name}: tokens are 0..{vocab_size - 1}. Got "
            f"{X.min().item()!r} instead."
        )
    if X.size and X.max() >= vocab_size:
        bad = X.max()
        raise ValueError(
            f"{name} holds token {bad.item()!r}, outside 0..{vocab_size - 1} "
            f"(vocab_size={vocab_size}). Got an out-of-vocabulary token instead."
        )
    return X.astype(np.int64)


class DWMCharLM(_BaseDWM):
    """Tiny GRU language model trained on sequences weighted by a Data Weighting Model.

    The CPU-sized version of the paper's setting: a language model (here an embedding of
    32, a GRU of 64 units) pre-trains on a fixed pool of token sequences; a
    :class:`WeightingMLP` gives each sequence of a batch a weight, and is trained by
    bi-level optimisation, at the start of each of ``n_stages`` stages, so that one
    weighted step lowers the LM's loss on validation sequences from the target domain.
    The DWM reads the mean of the learner's token embeddings over the sequence, the
    sequence's current NLL per token, and optional ``sample_features``.

    ``X`` holds one sequence of integer tokens (``0..vocab_size-1``) per row, all of the
    same length; each row is one sample. The per-sample loss is the mean next-token NLL.

    Parameters
    ----------
    vocab_size : int or None, default=None
        Number of token values; None uses ``X.max() + 1`` at fit.
    embedding_dim : int, default=32
        Token embedding width of the :class:`CharGRUModule`.
    hidden_size : int, default=64
        GRU units of the :class:`CharGRUModule`.
    learning_rate : float, default=0.01
        Learning rate of the learner's optimiser.
    optimizer : {"sgd", "adam", "adamw"}, default="adam"
        The learner's optimiser (plain SGD has no momentum). The hypergradient always uses
        an SGD step with ``lookahead_learning_rate`` as a surrogate.
    max_iter : int, default=1500
        Learner updates (optimiser steps) in total, split evenly over the stages
        (>= ``n_stages``). The stages are the skorch epochs (``n_stages``); this counts
        the optimisation steps within them.
    batch_size : int, default=64
        Samples per learner batch and per DWM training batch (>= 2).
    n_stages : int, default=5
        Stages of the schedule: each starts with ``dwm_steps_per_stage`` DWM updates (the
        learner frozen), then trains the learner with the DWM frozen. One skorch epoch is
        one stage.
    dwm_steps_per_stage : int, default=100
        DWM updates at the start of each stage. 0 (with no ``warm_start_dwm``) gives plain
        uniform training.
    dwm_learning_rate : float, default=1e-3
        Adam learning rate of the weighting model.
    dwm_hidden : int, default=32
        Hidden width of the :class:`WeightingMLP`.
    temperature : float, default=1.0
        Softmax temperature of the weights (> 0).
    lookahead_learning_rate : float or None, default=None
        Step size of the one-step look-ahead; None uses ``learning_rate``.
    hypergradient : {"exact", "first_order"}, default="exact"
        How the derivative of the validation loss w.r.t. the weights is computed (see
        :func:`one_step_hypergradient`): by a double backward, or from per-sample
        gradients. Both give the same value for the one-step SGD surrogate.
    use_batch_context : bool, default=True
        Give the DWM the batch mean of its inputs (interactions within a batch).
    online : bool, default=False
        The online variant of the bi-level schedule: every DWM update also commits its
        look-ahead step to the learner (``theta <- theta'``, an SGD step of
        ``lookahead_learning_rate`` on the weighted batch, outside the learner's optimiser). The
        learner then also moves during DWM phases, ``dwm_steps_per_stage`` extra steps
        per stage (counted in ``n_online_steps_``, not in ``n_iter_``).
    loss_feature : {"auto", "raw", "log1p"}, default="auto"
        How the learner's current loss enters the DWM: ``"raw"`` or ``log(1 + loss)``.
        ``"auto"`` is ``"raw"`` (the NLL per token is on a small scale).
    validation_fraction : float, default=0.1
        Share of ``X`` held out as validation data when ``X_val`` is not given (stratified
        for classifiers when every class allows it). Held-out rows are never trained on.
    val_batch_size : int, default=256
        Validation rows per DWM update (all of them when there are fewer).
    warm_start_dwm : WeightingMLP, fitted DWM estimator or None, default=None
        Start from this weighting model (copied) instead of a fresh one: the transfer of a
        learned DWM to another learner or another data pool. Its input width must match.
    callbacks : list of (str, skorch.callbacks.Callback), default=None
        Extra skorch callbacks of the learner's net (copied in ``fit``). An epoch is a
        stage: ``on_epoch_begin`` runs after the stage's DWM updates.
    n_jobs : int or None, default=1
        Number of CPU workers: torch intra-op threads during ``fit`` and prediction
        (restored afterwards). ``None`` means 1 unless in a :func:`joblib.parallel_config`
        context; -1 every core.
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split, both networks and the batch order.
    device : str or torch.device, default="cpu"
        Where the learner and the DWM train (``"cuda"`` if available).
    verbose : int, default=0
        0 is silent; 1 prints skorch's per-stage table and low-ESS notes.
    lr : float
        Deprecated name of ``learning_rate``.

        .. deprecated:: 0.3
           ``lr`` was renamed ``learning_rate`` and will be removed in 0.4.
    dwm_lr : float
        Deprecated name of ``dwm_learning_rate``.

        .. deprecated:: 0.3
           ``dwm_lr`` was renamed ``dwm_learning_rate`` and will be removed in 0.4.
    lookahead_lr : float or None
        Deprecated name of ``lookahead_learning_rate``.

        .. deprecated:: 0.3
           ``lookahead_lr`` was renamed ``lookahead_learning_rate`` and will be removed
           in 0.4.
    **kwargs
        Parameters routed to the learner's skorch net as skorch routes them
        (``module__*``, ``optimizer__*``, ``criterion__*``, ``iterator_valid__*``,
        ``callbacks__*``); they win over the estimator's own settings.

    Attributes
    ----------
    vocab_size_ : int
        Number of token values.
    n_features_in_ : int
        Sequence length.
    net_ : DWMNet
        The fitted skorch net of the learner (also ``learner_``).
    learner_ : DWMNet
        Same as ``net_``.
    module_ : torch.nn.Module
        The trained learner module.
    history_ : skorch.History
        One record per stage (``train_loss``: weighted mean loss, ``valid_loss``,
        ``ess_mean``, ``dwm_val_loss``: the look-ahead validation loss of the stage's last
        DWM update) with one record per learner step in ``"batches"`` (``train_loss``,
        ``ess``: effective sample size of the batch's weights).
    n_epochs_run_ : int
        Stages run.
    weighting_model_ : WeightingMLP
        The trained data weighting model (on the CPU, frozen).
    stage_weight_stats_ : list of dict
        Per stage: ``stage``, ``n_steps``, ``val_loss`` (at its end),
        ``dwm_val_losses`` (the look-ahead validation loss of each DWM update),
        ``dwm_val_loss_first``/``_last``, ``ess_mean``/``ess_min`` (effective sample size
        as a fraction of the batch), ``low_ess_fraction`` (batches with ESS < 0.1 B) and,
        with ``sample_features``, ``weight_share`` (weighted mean of each feature column
        over the stage's batches: the share of the weight of each source when the columns
        are a one-hot source id) next to ``uniform_share``.
    stage_weight_sums_ : ndarray of shape (n_stages, n_samples)
        Total weight each row of ``X`` received in each stage (0 for validation rows).
    stage_sample_counts_ : ndarray of shape (n_stages, n_samples)
        How many times each row was drawn in each stage.
    validation_indices_ : ndarray or None
        Rows of ``X`` held out for validation (None when ``X_val`` was given).
    n_sample_features_ : int
        Columns of ``sample_features`` (0 without).
    loss_feature_ : {"raw", "log1p"}
        The loss transform used.
    n_iter_ : int
        Learner updates done by its optimiser (the learner phases).
    n_online_steps_ : int
        Look-ahead steps committed to the learner during DWM phases (0 unless
        ``online=True``).

    See Also
    --------
    DWMClassifier : the same method for tabular classification.
    sklearn_icml.datasets.make_markov_languages : two Markov languages for it.

    Notes
    -----
    The paper [1]_ weights the pre-training data of a large language model; this is the
    same bi-level schedule on a GRU small enough for a CPU, with the DWM reading the
    learner's own embeddings of a sequence instead of a separate text encoder.

    Weighting moves the LM's steps onto part of the pool. On a small pool seen many times
    over, that part is memorised sooner: the one-step look-ahead objective of the DWM
    does not see this, so give the LM a pool it repeats little (as in pre-training). On
    a mixture of languages, an LM trained to convergence also learns to tell the
    languages apart from the context, so what weighting can gain on the target language
    shrinks with training towards the cost of the wrong prior (the benchmark reports this
    bound next to the measured gain).

    References
    ----------
    .. [1] Y. Yu, K. Han, H. Zhou, Y. Tang, K. Huang, Y. Wang, D. Tao, "LLM Data Selection
       and Utilization via Dynamic Bi-level Optimization", ICML 2025, arXiv:2507.16178.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_markov_languages
    >>> from sklearn_icml.weighting import DWMCharLM
    >>> data = make_markov_languages(100, seq_len=8, n_val=20, n_test=20, random_state=0)
    >>> lm = DWMCharLM(embedding_dim=8, hidden_size=16, max_iter=10, n_stages=2,
    ...                dwm_steps_per_stage=2, batch_size=16, random_state=0)
    >>> lm = lm.fit(data.X, X_val=data.X_val)
    >>> bool(lm.score(data.X_test) < 0)  # minus the NLL per token
    True
    """

    _parameter_constraints = {
        "vocab_size": [INT_AT_LEAST_TWO, None],
        "embedding_dim": [POSITIVE_INT],
        "hidden_size": [POSITIVE_INT],
        **_BaseDWM._parameter_constraints,
    }

    def __init__(
        self,
        *,
        vocab_size=None,
        embedding_dim=32,
        hidden_size=64,
        learning_rate=0.01,
        optimizer="adam",
        max_iter=1500,
        batch_size=64,
        n_stages=5,
        dwm_steps_per_stage=100,
        dwm_learning_rate=1e-3,
        dwm_hidden=32,
        temperature=1.0,
        lookahead_learning_rate=None,
        hypergradient="exact",
        use_batch_context=True,
        online=False,
        loss_feature="auto",
        validation_fraction=0.1,
        val_batch_size=256,
        warm_start_dwm=None,
        callbacks=None,
        n_jobs=1,
        random_state=None,
        device="cpu",
        verbose=0,
        lr=DEPRECATED,
        dwm_lr=DEPRECATED,
        lookahead_lr=DEPRECATED,
        **kwargs,
    ):
        store_params(self, locals())

    def fit(self, X, y=None, X_val=None, sample_features=None):
        """Train the LM on the sequences ``X`` with weights from a bi-level trained DWM.

        Parameters
        ----------
        X : array-like of shape (n_sequences, seq_len)
            Integer tokens, one sequence per row (at least 2 tokens).
        y : None
            Ignored (language modelling needs no target).
        X_val : array-like of shape (n_val, seq_len), default=None
            Sequences of the target domain; when None, ``validation_fraction`` of ``X`` is
            held out (and never trained on).
        sample_features : array-like of shape (n_sequences, k), default=None
            Extra DWM inputs per sequence (e.g. a domain id).

        Returns
        -------
        self : object
        """
        self._validate_params()
        X = validate_input(self, X, dtype="numeric", ensure_min_features=2)
        self.vocab_size_ = self._vocabulary_size(X)
        X = _token_array(X, self.vocab_size_)
        n = X.shape[0]
        sf = sample_features_array(sample_features, n)
        if X_val is None:
            rows, val_rows = self._split_rows(n)
            X_val = X[val_rows]
            self.validation_indices_ = val_rows
        else:
            X_val = _token_array(
                validate_input(self, X_val, reset=False, dtype="numeric"), self.vocab_size_,
                "X_val",
            )
            rows = np.arange(n)
            self.validation_indices_ = None
        X_tr = X[rows]
        self.n_sample_features_ = 0 if sf is None else sf.shape[1]
        static = np.zeros((X_tr.shape[0], self.n_sample_features_), dtype=np.float32)
        if sf is not None:
            static[:] = sf[rows]
        self.loss_feature_ = "raw" if self.loss_feature == "auto" else self.loss_feature
        return self._fit_bilevel(
            X=X_tr,
            y=X_tr,
            static=static,
            featurize=functools.partial(lm_features, loss_feature=self.loss_feature_),
            n_dwm_features=self._embedding_width() + self.n_sample_features_ + 1,
            X_val=X_val,
            y_val=X_val,
            loss_kind="nll",
            module_kwargs=self._learner_module_kwargs(),
            train_rows=rows,
            n_rows=n,
            share_features=None if sf is None else sf[rows],
        )

    # what a learner other than the GRU changes (DWMCausalLM)
    def _vocabulary_size(self, X):
        if self.vocab_size is not None:
            return int(self.vocab_size)
        return max(int(np.max(X)) + 1 if X.size else 2, 2)

    def _embedding_width(self):
        return self.embedding_dim

    def _learner_module_kwargs(self):
        return {
            "module": CharGRUModule,
            "module__vocab_size": self.vocab_size_,
            "module__embedding_dim": self.embedding_dim,
            "module__hidden_size": self.hidden_size,
        }

    def _validate_X(self, X):
        check_is_fitted(self)
        X = validate_input(self, X, reset=False, dtype="numeric")
        return _token_array(X, self.vocab_size_)

    def _sequence_nll(self, X):
        module = self.module_
        device = self.net_.device
        parts = []
        with torch_threads(self.n_jobs), torch.no_grad():
            was_training = module.training
            module.eval()
            try:
                for start in range(0, X.shape[0], _SCORE_CHUNK):
                    chunk = torch.as_tensor(X[start : start + _SCORE_CHUNK], device=device)
                    parts.append(sequence_nll(module(chunk), chunk).double().cpu().numpy())
            finally:
                module.train(was_training)
        return np.concatenate(parts) if parts else np.empty(0)

    def score_samples(self, X):
        """Minus the mean next-token NLL (nats) of each sequence.

        Parameters
        ----------
        X : array-like of shape (n_sequences, seq_len)

        Returns
        -------
        scores : ndarray of shape (n_sequences,)
        """
        return -self._sequence_nll(self._validate_X(X))

    def score(self, X, y=None):
        """Minus the mean NLL per token (nats) over all sequences of ``X`` (higher is better).

        Parameters
        ----------
        X : array-like of shape (n_sequences, seq_len)
        y : None
            Ignored.

        Returns
        -------
        score : float
        """
        return float(np.mean(self.score_samples(X)))

    @keyword_only_after(3)
    def compute_weights(self, X, sample_features=None, *, batch_size=None):
        """Weights the fitted DWM gives the sequences of ``X``, batch by batch (mean 1 each).

        Parameters
        ----------
        X : array-like of shape (n_sequences, seq_len)
        sample_features : array-like of shape (n_sequences, k), default=None
            Required if (and only if) ``fit`` was given sample features.
        batch_size : int, default=None
            Sequences per batch; None uses the training ``batch_size``.

        Returns
        -------
        weights : ndarray of shape (n_sequences,)
        """
        X = self._validate_X(X)
        n = X.shape[0]
        sf = sample_features_array(sample_features, n)
        check_sample_feature_width(sf, self.n_sample_features_)
        device = self.net_.device
        losses = torch.as_tensor(self._sequence_nll(X), dtype=torch.float32, device=device)
        static = torch.as_tensor(
            np.zeros((n, 0)) if sf is None else sf, dtype=torch.float32, device=device
        )
        with torch_threads(self.n_jobs):
            u = lm_features(
                self.module_, torch.as_tensor(X, device=device), static, losses,
                loss_feature=self.loss_feature_,
            ).cpu()
        return compute_weights(self.weighting_model_, u, batch_size=batch_size or self.batch_size)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # X holds integer token codes, not continuous features
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        tags.target_tags.required = False
        return tags
