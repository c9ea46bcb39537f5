"""One-layer multi-head softmax attention trained for in-context linear regression, on skorch.

He, Pan, Chen & Yang (ICML 2025): a transformer made only of H softmax attention heads
(no MLP, no layer norm, no residual, no positional encoding) reads ``L`` pairs
``(x_l, y_l)`` and a query ``x_q`` and predicts ``y_q``. Trained online from random
initialisation with Adam, each head converges to ``KQ_h ~ omega_h I`` on the x-block and
``OV_h ~ (0, .., 0, mu_h)``, with ``sum_h mu_h ~ 0``: two opposite heads implement debiased
one-step gradient descent, which beats a single head.
"""

import math

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import BaseNeuralEstimator
from ..utils._deprecation import DEPRECATED_PARAM, renamed_param
from ..utils._docstrings import fill_doc
from ..utils._param_validation import POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ..utils._skorch import float64_outputs
from ..utils.validation import check_input_array
from ._icl_patterns import (
    attention_pattern_metrics,
    multitask_pattern_metrics,
    plot_attention_patterns,
)
from ._icl_predictors import _PromptInputMixin
from ._icl_tasks import LinearICLTaskSampler, MultiTaskLinearICLTaskSampler, check_prompts
from ._torch import nn, seed_from_torch, skorch, torch

_INITS = ("random", "small_id", "small_id_qk", "oppo_small_id")
_ATTENTIONS = ("softmax", "linear", "linear_unnormalized")
# prompts per forward call at prediction time (bounds memory, not results)
_PREDICT_CHUNK = 1 << 14


class MultiHeadAttentionICLModule(nn.Module):
    """H heads of (softmax or linear) attention; the query attends to the context only.

    ``s_{h,l} = (K_h z_l)^T (Q_h z_q) / sqrt(d+1)``, ``a_h = softmax_l(s_h)`` (or
    ``s_h / L`` for ``attention="linear"``, ``s_h / n_context`` for
    ``attention="linear_unnormalized"``), ``yhat = sum_h O_h V_h sum_l a_{h,l} z_l``. The
    per-head ``Q_h, K_h, V_h`` are packed in bias-free ``nn.Linear(D, H D)`` layers and
    ``O`` is ``nn.Linear(H D, 1, bias=False)``, as in the authors' module.

    Parameters
    ----------
    n_features_in : int
        Token width ``D = d + 1``.
    n_heads : int, default=2
    init : {"random", "small_id", "small_id_qk", "oppo_small_id"}, default="random"
        ``"random"``: PyTorch's default ``nn.Linear`` init. ``"small_id"``: ``Q_h, K_h,
        V_h = 1e-6 I`` (``O`` random); ``"small_id_qk"``: ``Q_h, K_h = 1e-4 I``;
        ``"oppo_small_id"``: ``K_h = 1e-6 I`` and ``Q_h = +-1e-6 I`` (``-`` for the second
        half of the heads; even ``n_heads``), ``V`` and ``O`` random. These follow the
        authors' ``src/models.py`` (``O`` keeps its random init as their 1-output module
        does).
    attention : {"softmax", "linear", "linear_unnormalized"}, default="softmax"
        ``"linear"`` divides the scores by the prompt's own context length ``L`` (a
        length-normalised linear attention: one GD step whose ``1/L`` follows the prompt);
        ``"linear_unnormalized"`` divides them by the fixed ``n_context`` instead, so the
        sum over tokens is not renormalised when a prompt is longer or shorter than in
        training (equivalently an unnormalised linear attention whose weights absorb
        ``1/n_context``).
    n_context : int or None, default=None
        The training context length; required by ``attention="linear_unnormalized"``.
    n_outputs : int, default=1
        Labels per token (the last ``n_outputs`` slots; ``D = d + n_outputs``) and outputs
        per prompt: ``O`` becomes ``nn.Linear(H D, n_outputs)`` and ``forward`` returns
        (batch, n_outputs) when ``n_outputs > 1`` (the paper's multi-task extension).

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.neural import MultiHeadAttentionICLModule
    >>> MultiHeadAttentionICLModule(4, n_heads=2)(torch.zeros(3, 11, 4)).shape
    torch.Size([3])
    """

    def __init__(
        self,
        n_features_in,
        n_heads=2,
        init="random",
        attention="softmax",
        n_context=None,
        n_outputs=1,
    ):
        super().__init__()
        D, H, K = int(n_features_in), int(n_heads), int(n_outputs)
        if K < 1 or D < K + 1:
            raise ValueError(
                f"n_outputs must be >= 1 and below the token width n_features_in={D}. Got "
                f"n_outputs={n_outputs!r} instead."
            )
        if init not in _INITS:
            raise ValueError(f"init must be one of {_INITS}. Got {init!r} instead.")
        if init == "oppo_small_id" and H % 2:
            raise ValueError(
                f"init='oppo_small_id' needs an even n_heads. Got n_heads={H} instead."
            )
        if attention not in _ATTENTIONS:
            raise ValueError(f"attention must be one of {_ATTENTIONS}. Got {attention!r} instead.")
        if attention == "linear_unnormalized" and (n_context is None or int(n_context) < 1):
            raise ValueError(
                "attention='linear_unnormalized' needs the training context length "
                f"n_context >= 1. Got n_context={n_context!r} instead."
            )
        self.D, self.H, self.K, self.attention = D, H, K, attention
        self.n_context = None if n_context is None else int(n_context)
        self.q = nn.Linear(D, H * D, bias=False)
        self.k = nn.Linear(D, H * D, bias=False)
        self.v = nn.Linear(D, H * D, bias=False)
        self.o = nn.Linear(H * D, K, bias=False)
        if init != "random":
            eye = torch.eye(D).repeat(H, 1)
            with torch.no_grad():
                if init == "small_id_qk":
                    self.q.weight.copy_(1e-4 * eye)
                    self.k.weight.copy_(1e-4 * eye)
                else:
                    sign = torch.ones(H * D, 1)
                    if init == "oppo_small_id":
                        sign[(H // 2) * D :] = -1.0
                    self.q.weight.copy_(1e-6 * eye * sign)
                    self.k.weight.copy_(1e-6 * eye)
                    if init == "small_id":  # the authors' oppo_small_id leaves V random
                        self.v.weight.copy_(1e-6 * eye)

    def forward(self, X):
        """Prediction(s) for each prompt of ``X`` (batch, L + 1, D); the last token is the query.

        Returns (batch,) for one output, (batch, n_outputs) otherwise.
        """
        B, T, D = X.shape
        H, L = self.H, T - 1
        ctx, zq = X[:, :-1], X[:, -1]
        q = self.q(zq).view(B, H, D)
        k = self.k(ctx).view(B, L, H, D)
        v = self.v(ctx).view(B, L, H, D)
        s = torch.einsum("blhd,bhd->bhl", k, q) / math.sqrt(D)
        if self.attention == "softmax":
            a = torch.softmax(s, dim=-1)  # stable: torch subtracts the max
        elif self.attention == "linear":
            a = s / L
        else:  # fixed normalisation: the training length, whatever this prompt's L
            a = s / self.n_context
        out = torch.einsum("bhl,blhd->bhd", a, v).reshape(B, H * D)
        out = self.o(out)
        return out.squeeze(-1) if self.K == 1 else out

    def effective_weights(self):
        """``KQ`` (H, D, D) = ``K_h^T Q_h / sqrt(D)`` and ``OV`` = ``O_h V_h``, float64.

        ``OV`` has shape (H, D) for one output and (H, n_outputs, D) otherwise.
        """
        D, H, K_out = self.D, self.H, self.K
        with torch.no_grad():
            Q = self.q.weight.detach().double().cpu().view(H, D, D)
            K = self.k.weight.detach().double().cpu().view(H, D, D)
            V = self.v.weight.detach().double().cpu().view(H, D, D)
            O = self.o.weight.detach().double().cpu().view(K_out, H, D).permute(1, 0, 2)
            KQ = torch.einsum("hji,hjk->hik", K, Q) / math.sqrt(D)
            OV = torch.einsum("hij,hjk->hik", O, V)
        return KQ.numpy(), (OV[:, 0] if K_out == 1 else OV).numpy()

    def set_effective(self, omegas, mus, *, scale_qk=None):
        """Hand-set ``KQ_h = diag(omega_h I_d, 0)`` and ``OV_h = (0, .., 0, mu_h)``.

        ``Q_h = omega_h sqrt(D) diag(I_d, 0)``, ``K_h = I``, ``V_h = e_D e_D^T``,
        ``O_h = mu_h e_D``. For tests and for reading the kernel predictor as a model.
        """
        D, H = self.D, self.H
        if self.K != 1:
            raise ValueError(
                f"set_effective hand-sets a one-output module; this one has n_outputs={self.K}."
            )
        omegas = np.broadcast_to(np.asarray(omegas, dtype=np.float64), (H,))
        mus = np.broadcast_to(np.asarray(mus, dtype=np.float64), (H,))
        dtype = self.q.weight.dtype
        with torch.no_grad():
            proj = torch.eye(D, dtype=dtype)
            proj[-1, -1] = 0.0
            last = torch.zeros(D, D, dtype=dtype)
            last[-1, -1] = 1.0
            for h in range(H):
                rows = slice(h * D, (h + 1) * D)
                self.q.weight[rows] = float(omegas[h]) * math.sqrt(D) * proj
                self.k.weight[rows] = torch.eye(D, dtype=dtype)
                self.v.weight[rows] = last
                self.o.weight[0, rows] = 0.0
                self.o.weight[0, h * D + D - 1] = float(mus[h])
        return self


def _assemble_batch(x, y):
    """A training batch from drawn ``x`` and ``y``, as the samplers' ``_assemble`` in torch."""
    X = torch.cat([x, y[:, :, None] if y.ndim == 2 else y], dim=2)
    X[:, -1, x.shape[2] :] = 0.0
    return X, y[:, -1].contiguous()


class OnlinePromptLoader:
    """skorch ``iterator_train``: ``steps_per_epoch`` mini-batches per epoch.

    Private plumbing of :class:`MultiHeadSoftmaxICLRegressor` (skorch builds it from the
    training dataset); it is not part of the public API.

    Online mode (``sampler`` given): every step draws a fresh batch of prompts in torch
    from the sampler's distribution (the paper's setting; a
    :class:`MultiTaskLinearICLTaskSampler` gives two-label prompts). Offline mode: mini-batches of
    the stored prompts, reshuffled each pass. Seeded from torch's RNG when built, so it
    follows the estimator's ``random_state``.
    """

    def __init__(
        self, dataset, batch_size=256, sampler=None, steps_per_epoch=1000, total_steps=None
    ):
        self.batch_size = int(batch_size)
        self.steps_per_epoch = int(steps_per_epoch)
        self.remaining = None if total_steps is None else int(total_steps)
        self.gen = torch.Generator().manual_seed(seed_from_torch())
        self.sampler = sampler
        if sampler is None:
            self.X = torch.as_tensor(np.asarray(dataset.X), dtype=torch.float32)
            self.y = torch.as_tensor(np.asarray(dataset.y), dtype=torch.float32)
            self.perm, self.pos = None, 0
        else:
            d, L, noise_var, beta_var, extra = sampler.params()
            self.d, self.L = d, L
            self.noise_std, self.beta_std = math.sqrt(noise_var), math.sqrt(beta_var)
            self.task_dims, self.chol = None, None
            if isinstance(sampler, MultiTaskLinearICLTaskSampler):
                self.task_dims = extra
            elif extra is not None:
                self.chol = torch.as_tensor(extra.T, dtype=torch.float32)

    def __len__(self):
        return self.steps_per_epoch

    def _multitask_batch(self):
        n, d, L, g = self.batch_size, self.d, self.L, self.gen
        d1, d2 = self.task_dims
        beta1 = torch.randn(n, d1, generator=g) * self.beta_std
        beta2 = torch.randn(n, d2, generator=g) * self.beta_std
        x = torch.randn(n, L + 1, d, generator=g)
        scale = self.noise_std * torch.sqrt(torch.tensor([float(d1), float(d2)]))
        noise = torch.randn(n, L + 1, 2, generator=g) * scale
        y1 = torch.einsum("nld,nd->nl", x[:, :, :d1], beta1)
        y2 = torch.einsum("nld,nd->nl", x[:, :, d - d2 :], beta2)
        return _assemble_batch(x, torch.stack([y1, y2], dim=2) + noise)

    def _online_batch(self):
        if self.task_dims is not None:
            return self._multitask_batch()
        n, d, L, g = self.batch_size, self.d, self.L, self.gen
        beta = torch.randn(n, d, generator=g) * self.beta_std
        x = torch.randn(n, L + 1, d, generator=g)
        if self.chol is not None:
            x = x @ self.chol
        noise = torch.randn(n, L + 1, generator=g) * self.noise_std
        return _assemble_batch(x, torch.einsum("nld,nd->nl", x, beta) + noise)

    def _offline_batch(self):
        n = self.X.shape[0]
        if self.perm is None or self.pos >= n:
            self.perm, self.pos = torch.randperm(n, generator=self.gen), 0
        idx = self.perm[self.pos : self.pos + self.batch_size]
        self.pos += self.batch_size
        return self.X[idx], self.y[idx]

    def __iter__(self):
        steps = self.steps_per_epoch
        if self.remaining is not None:
            steps = min(steps, self.remaining)
            self.remaining -= steps
        for _ in range(steps):
            yield self._online_batch() if self.sampler is not None else self._offline_batch()


def module_predict(module, X, *, device="cpu", n_jobs=None):
    """Outputs of ``module`` on prompts ``X`` in float64 (a copy of the module, eval mode)."""
    return float64_outputs(
        module, X, rows_per_chunk=_PREDICT_CHUNK, empty_shape=(0,), device=device, n_jobs=n_jobs
    )


@fill_doc
class MultiHeadSoftmaxICLRegressor(_PromptInputMixin, RegressorMixin, BaseNeuralEstimator):
    """One-layer multi-head softmax attention trained for in-context linear regression.

    ``X`` holds *prompts*: a 3-D array ``(n_prompts, L + 1, d + 1)`` whose rows are the
    context tokens ``(x_l, y_l)`` followed by the query token ``(x_q, 0)``; ``y`` holds the
    query labels. ``predict`` returns the in-context prediction of ``y_q`` for each prompt,
    with any context length ``L`` (length generalisation). With ``X=None``, ``fit`` trains
    online, drawing a fresh batch of ``batch_size`` prompts from ``sampler`` at each of the
    ``max_iter`` Adam steps: the paper's setting. With ``X, y`` given, it takes ``max_iter``
    mini-batch steps over those prompts.

    After training, :meth:`attention_patterns` reads off the emergent structure: per head
    ``KQ_h ~ omega_h I_d`` on the x-block, ``OV_h ~ (0, .., 0, mu_h)``, ``sum_h mu_h ~ 0``;
    with two heads the model implements debiased GD with step ``2 omega mu``.

    Implemented on skorch: ``fit`` builds a ``skorch.NeuralNetRegressor`` around
    :class:`MultiHeadAttentionICLModule` with an ``OnlinePromptLoader`` (private) as training
    iterator and stores it in ``net_``.

    Parameters
    ----------
    n_heads : int, default=2
        Number of attention heads ``H``.
    init : {"random", "small_id", "small_id_qk", "oppo_small_id"}, default="random"
        Weight initialisation (see :class:`MultiHeadAttentionICLModule`); ``"oppo_small_id"``
        needs an even ``n_heads``.
    attention : {"softmax", "linear", "linear_unnormalized"}, default="softmax"
        The linear-attention ablations: ``"linear"`` replaces the softmax by
        ``scores / L`` with ``L`` the context length of each prompt (one plain GD step;
        it adapts to the prompt length like the softmax does); ``"linear_unnormalized"``
        by ``scores / n_context_`` with the fixed training length, i.e. an unnormalised
        linear attention (see Notes).
    optimizer : {"adam", "sgd"}, default="adam"
        Adam (betas 0.9/0.999, no weight decay) as in the paper, or plain SGD.
    learning_rate : float, default=1e-3
        Step size of the optimiser.
    batch_size : int, default=256
        Prompts per step.
    max_iter : int, default=50_000
        Optimisation (Adam) steps, one mini-batch each: the paper counts training in steps
        (it runs 500,000; the structure emerges by ~10,000). Online, no prompt is seen
        twice, so there are no epochs to count; skorch's epochs are blocks of
        ``steps_per_epoch`` steps (the last one shorter when ``max_iter`` is not a
        multiple).
    steps_per_epoch : int, default=1000
        Steps per skorch epoch: one entry of ``loss_curve_`` is the mean training loss
        over that many steps.
    sampler : LinearICLTaskSampler, MultiTaskLinearICLTaskSampler or None, default=None
        Prompt distribution for online training (``X=None``); None means
        ``LinearICLTaskSampler()`` (d=5, L=40, sigma^2=0.1). Its ``random_state`` is not
        used: online batches are drawn in torch from this estimator's ``random_state``.
        A :class:`MultiTaskLinearICLTaskSampler` trains the two-output model of the
        multi-task extension (tokens ``(x, y1, y2)``, ``predict`` of shape (n, 2)).
    allow_query_label : bool, default=False
        Accept prompts whose query token has a non-zero y-slot (the slot then enters the
        query projection like any coordinate); by default such prompts are refused.
    %(device)s
    %(torch_n_jobs)s
    %(random_state)s
        Here it seeds the weights and the training batches.
    %(verbose)s
        1 prints skorch's table (one row per ``steps_per_epoch`` steps).
    **kwargs
        Routed to the skorch net as skorch routes them; only keywords prefixed
        ``module__``, ``optimizer__``, ``criterion__``, ``iterator_train__``,
        ``iterator_valid__`` or ``callbacks__`` are accepted, and they override the values
        the parameters above set.
        E.g. ``optimizer__weight_decay=0.01``, ``optimizer__betas=(0.9, 0.99)``.
    lr : float, default="deprecated"
        Deprecated alias of ``learning_rate`` (renamed in 0.3, removed in 0.4).

    Attributes
    ----------
    n_features_in_ : int
        Token width ``d + 1`` (``d + n_outputs_`` with several outputs).
    n_outputs_ : int
        Labels per prompt: 1, or the columns of a 2-D ``y`` / 2 for a
        :class:`MultiTaskLinearICLTaskSampler`; the last ``n_outputs_`` token slots.
    n_context_ : int
        Context length ``L`` seen in ``fit``.
    net_ : skorch.NeuralNetRegressor
    module_ : MultiHeadAttentionICLModule
    history_ : skorch.History
    loss_curve_ : ndarray of shape (n_epochs,)
        Mean training loss of each block of ``steps_per_epoch`` steps.
    KQ_ : ndarray of shape (n_heads, d + 1, d + 1)
        Effective key-query matrices ``K_h^T Q_h / sqrt(d+1)``.
    OV_ : ndarray of shape (n_heads, d + 1) or (n_heads, n_outputs_, D)
        Effective output-value rows ``O_h V_h`` (one row per output when several).
    omega_ : ndarray of shape (n_heads,)
        Mean of the first ``d`` diagonal entries of each ``KQ_h``.
    mu_ : ndarray of shape (n_heads,) or (n_heads, n_outputs_)
        ``OV_h[d]``, the weight on the y-coordinate (``OV_h[k, d + k]``, output ``k``
        reading label ``k``, with several outputs).

    See Also
    --------
    LinearICLTaskSampler : the prompts.
    SoftmaxKernelICLPredictor, GDICLPredictor, BayesRidgeICLPredictor : the closed-form
        predictors as estimators with the same ``predict`` / ``icl_mse`` API.
    softmax_kernel_predict, gd_predict, bayes_ridge_predict : the same as functions.
    attention_pattern_metrics : the structure diagnostics.

    Notes
    -----
    ``X`` is 3-D (a batch of prompts), so the estimator's input tags say it is not a 2-D
    table and scikit-learn's ``check_estimator`` skips it; its data-free checks and the API
    checks (clone, ``get_params``, pickling, not-fitted errors, determinism) are re-run
    on prompts in the test suite. Training at the paper's setting costs about 5-10 s per
    1,000 steps on 2 CPU cores.

    He et al. [1]_ contrast the length generalisation of softmax attention with that of
    linear transformers, but their code has no linear attention. The library fills the
    gap with two variants: ``attention="linear"`` normalises the scores by each prompt's
    own length (one plain GD step, which generalises across lengths as the softmax does)
    and ``attention="linear_unnormalized"`` by the training length, the unnormalised
    linear attention whose prediction scales with ``L / n_context_`` on other lengths.
    The multi-output model (``n_outputs_ > 1``) follows the paper's multi-task extension:
    one output row of ``O`` per label, every head shared by the outputs.

    References
    ----------
    .. [1] J. He, X. Pan, S. Chen and Z. Yang, "In-Context Linear Regression Demystified:
       Training Dynamics and Mechanistic Interpretability of Multi-Head Softmax
       Attention", ICML 2025, arXiv:2503.12734.

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler, MultiHeadSoftmaxICLRegressor
    >>> sampler = LinearICLTaskSampler(n_features=3, n_context=10)
    >>> model = MultiHeadSoftmaxICLRegressor(max_iter=20, batch_size=32, sampler=sampler,
    ...                                      steps_per_epoch=10, random_state=0).fit()
    >>> model.loss_curve_.shape, model.KQ_.shape
    ((2,), (2, 4, 4))
    >>> X, y = LinearICLTaskSampler(n_features=3, n_context=25, random_state=1).sample(5)
    >>> model.predict(X).shape
    (5,)
    """

    _parameter_constraints = {
        **BaseNeuralEstimator._parameter_constraints,
        "n_heads": [POSITIVE_INT],
        "init": [StrOptions(set(_INITS))],
        "attention": [StrOptions(set(_ATTENTIONS))],
        "optimizer": [StrOptions({"adam", "sgd"})],
        "learning_rate": [POSITIVE_REAL],
        "batch_size": [POSITIVE_INT],
        "max_iter": [POSITIVE_INT],
        "steps_per_epoch": [POSITIVE_INT],
        "sampler": [LinearICLTaskSampler, MultiTaskLinearICLTaskSampler, None],
        "allow_query_label": ["boolean"],
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],
    }

    def __init__(
        self,
        *,
        n_heads=2,
        init="random",
        attention="softmax",
        optimizer="adam",
        learning_rate=1e-3,
        batch_size=256,
        max_iter=50_000,
        steps_per_epoch=1000,
        sampler=None,
        allow_query_label=False,
        device="cpu",
        n_jobs=1,
        random_state=None,
        verbose=0,
        lr="deprecated",
        **kwargs,
    ):
        store_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X=None, y=None):
        """Train the attention layer, online (``X=None``) or on the given prompts.

        Parameters
        ----------
        X : array-like of shape (n_prompts, n_context + 1, n_features + n_outputs) or None
            Training prompts; None trains online on fresh prompts from ``sampler``.
        y : array-like of shape (n_prompts,) or (n_prompts, n_outputs), or None
            Query labels (required with ``X``); a 2-D ``y`` trains a multi-output model
            whose tokens end with ``n_outputs`` label slots.

        Returns
        -------
        self : MultiHeadSoftmaxICLRegressor
            Fitted: ``net_``, ``loss_curve_``, ``KQ_``, ``OV_``, ``omega_``, ``mu_`` are set.
        """
        if self.init == "oppo_small_id" and self.n_heads % 2:
            raise ValueError(
                f"init='oppo_small_id' needs an even n_heads. Got n_heads={self.n_heads} instead."
            )
        if X is None:
            if y is not None:
                raise ValueError(
                    "y was given without X; pass both, or neither for online "
                    f"training. Got y of type {type(y).__name__} instead."
                )
            sampler = self.sampler if self.sampler is not None else LinearICLTaskSampler()
            d, L, *_ = sampler.params()
            K = getattr(sampler, "n_outputs", 1)
            D = d + K
            X_fit = np.zeros((1, L + 1, D), dtype=np.float32)
            y_fit = np.zeros(1 if K == 1 else (1, K), dtype=np.float32)
            loader_sampler = sampler
        else:
            if y is None:
                raise ValueError("y is required when X is given (the query labels). Got None.")
            yv = check_input_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
            if yv.ndim == 2 and yv.shape[1] == 1:
                raise ValueError(
                    "y must be 1-D for one output or 2-D with >= 2 columns (one per output). "
                    f"Got shape {yv.shape} instead."
                )
            K = 1 if yv.ndim == 1 else yv.shape[1]
            Xv = check_prompts(X, allow_query_label=self.allow_query_label, n_outputs=K)
            if yv.ndim not in (1, 2) or yv.shape[0] != Xv.shape[0]:
                raise ValueError(
                    f"y must have shape ({Xv.shape[0]},) or ({Xv.shape[0]}, n_outputs) (one "
                    f"label or one row of labels per prompt). Got {yv.shape} instead."
                )
            L, D = Xv.shape[1] - 1, Xv.shape[2]
            X_fit, y_fit = Xv.astype(np.float32), yv.astype(np.float32)
            loader_sampler = None
        self.n_features_in_ = D
        self.n_outputs_ = K
        self.n_context_ = L
        n_epochs = -(-self.max_iter // self.steps_per_epoch)
        optimizer = torch.optim.Adam if self.optimizer == "adam" else torch.optim.SGD
        self._fit_net(
            skorch.NeuralNetRegressor,
            X_fit,
            y_fit,
            module=MultiHeadAttentionICLModule,
            module__n_features_in=D,
            module__n_heads=self.n_heads,
            module__init=self.init,
            module__attention=self.attention,
            module__n_context=L,
            module__n_outputs=K,
            criterion=nn.MSELoss,
            optimizer=optimizer,
            lr=renamed_param(self, "lr", "learning_rate"),
            max_epochs=n_epochs,
            batch_size=self.batch_size,
            iterator_train=OnlinePromptLoader,
            iterator_train__sampler=loader_sampler,
            iterator_train__steps_per_epoch=self.steps_per_epoch,
            iterator_train__total_steps=self.max_iter,
        )
        self.loss_curve_ = np.asarray(self.history_[:, "train_loss"], dtype=np.float64)
        self.KQ_, self.OV_ = self.module_.effective_weights()
        if K == 1:
            metrics = attention_pattern_metrics(self.KQ_, self.OV_)
            self.omega_, self.mu_ = metrics["omega"], metrics["mu"]
        else:
            d = D - K
            self.omega_ = np.diagonal(self.KQ_[:, :d, :d], axis1=1, axis2=2).mean(axis=1)
            self.mu_ = np.stack([self.OV_[:, k, d + k] for k in range(K)], axis=1)
        return self

    def predict(self, X):
        """In-context prediction of the query label of each prompt (float64 forward pass).

        Parameters
        ----------
        X : array-like of shape (n_prompts, n_context + 1, n_features + n_outputs_)
            Any context length ``n_context >= 1``.

        Returns
        -------
        y_pred : ndarray of shape (n_prompts,) or (n_prompts, n_outputs_)
        """
        X = self._validate_X(X)
        return module_predict(self.module_, X, device=self.net_.device, n_jobs=self.n_jobs)

    def attention_patterns(self):
        """The effective weights and the structure metrics of the fitted model.

        Returns
        -------
        patterns : dict
            ``KQ_`` (H, d+1, d+1), ``OV_`` (H, d+1), and the entries of
            :func:`attention_pattern_metrics` (``omega``, ``mu``, ``diag_ratio``,
            ``homogeneity``, ``last_entry_ratio``, ``zero_sum``, ``eta_eff``). For a model
            trained with a :class:`MultiTaskLinearICLTaskSampler`, the entries of
            :func:`multitask_pattern_metrics` instead (per-head task allocation); for
            another multi-output model only ``KQ_``, ``OV_``, ``omega`` and ``mu``.
        """
        check_is_fitted(self)
        out = {"KQ_": self.KQ_.copy(), "OV_": self.OV_.copy()}
        if getattr(self, "n_outputs_", 1) == 1:
            out.update(attention_pattern_metrics(self.KQ_, self.OV_))
        elif (
            isinstance(self.sampler, MultiTaskLinearICLTaskSampler)
            and self.n_features_in_ == self.sampler.params()[0] + 2
        ):
            d, _, _, _, dims = self.sampler.params()
            out.update(multitask_pattern_metrics(self.KQ_, self.OV_, n_features=d, task_dims=dims))
        else:
            out.update({"omega": self.omega_.copy(), "mu": self.mu_.copy()})
        return out

    def plot_attention_patterns(self, fig=None):
        """Heat maps of each head's ``KQ_h`` and ``OV_h`` (matplotlib).

        With several outputs the ``OV_h`` row drawn is the sum of its per-output rows.

        Parameters
        ----------
        fig : matplotlib Figure or None
            Drawn into (a new figure when None).

        Returns
        -------
        fig : matplotlib Figure
        """
        check_is_fitted(self)
        OV = self.OV_ if self.OV_.ndim == 2 else self.OV_.sum(axis=1)
        return plot_attention_patterns(self.KQ_, OV, fig=fig)
