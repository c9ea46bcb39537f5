"""In-context linear regression tasks and the closed-form predictors (He et al., ICML 2025).

Everything here is numpy-only (float64): the prompt sampler :class:`LinearICLTaskSampler`,
the reduced predictors the trained multi-head softmax attention implements (the
softmax-kernel predictor, plain and debiased one-step gradient descent, the Bayes-optimal
ridge), the large-``L`` population loss ``Ltilde`` and its optima, and the pattern
diagnostics of the learned key-query / output-value weights.

A *prompt* is an array of shape ``(L + 1, d + 1)``: rows ``0..L-1`` are the context tokens
``z_l = (x_l, y_l)``, the last row is the query token ``(x_q, 0)``. A batch of prompts is a
3-D array ``(n_prompts, L + 1, d + 1)``.
"""

import numbers

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

__all__ = [
    "LinearICLTaskSampler",
    "MultiTaskLinearICLTaskSampler",
    "approx_icl_loss",
    "attention_pattern_metrics",
    "bayes_ridge_predict",
    "bayes_risk_asymptotic",
    "check_prompts",
    "debiased_gd_optimum",
    "fit_gd_eta",
    "gd_predict",
    "gd_risk_finite",
    "multitask_pattern_metrics",
    "optimal_mu",
    "single_head_optimum",
    "softmax_kernel_predict",
]


def _check_int(value, name, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= {low}; got {value!r} instead.")
    if value < low:
        raise ValueError(f"{name} must be an int >= {low}; got {value!r} instead.")
    return int(value)


def _check_real(value, name, *, low=0.0, strict=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {value!r} instead.")
    bad = (value <= low) if strict else (value < low)
    if bad or not np.isfinite(value):
        op = ">" if strict else ">="
        raise ValueError(f"{name} must be a finite number {op} {low}; got {value!r} instead.")
    return float(value)


def check_prompts(X, *, allow_query_label=False, n_features_in=None, name="X", n_outputs=1):
    """Validate a batch of prompts and return it as a float64 array (a copy if needed).

    Parameters
    ----------
    X : array-like of shape (n_prompts, n_context + 1, n_features + 1)
        Context tokens ``(x_l, y_l)`` then the query token ``(x_q, 0)``.
    allow_query_label : bool, default=False
        Accept a non-zero y-slot in the query token (it is never read by the predictors).
    n_features_in : int or None, default=None
        Required token width ``d + 1`` (from a fitted model), or None.
    name : str, default="X"
        Name for error messages.
    n_outputs : int, default=1
        Number of label slots at the end of each token (the multi-task prompts of
        :class:`MultiTaskLinearICLTaskSampler` carry ``(x, y1, y2)``): the token width must
        be at least ``n_outputs + 1`` and the query's last ``n_outputs`` slots must be 0.

    Returns
    -------
    X : ndarray of shape (n_prompts, n_context + 1, n_features + 1), float64

    Raises
    ------
    ValueError
        If ``X`` is not 3-D, has no context token, has a token width below 2 or other than
        ``n_features_in``, holds NaN/inf, or its query y-slot is non-zero.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.neural import check_prompts
    >>> check_prompts(np.zeros((2, 4, 3))).shape
    (2, 4, 3)
    """
    X = check_array(
        X,
        allow_nd=True,
        ensure_2d=False,
        dtype=np.float64,
        ensure_all_finite=True,
        input_name=name,
        ensure_min_samples=1,
    )
    if X.ndim != 3:
        raise ValueError(
            f"{name} must be a 3-D array of prompts (n_prompts, n_context + 1, n_features + 1);"
            f" got an array of shape {X.shape} instead."
        )
    if X.shape[1] < 2:
        raise ValueError(
            f"{name} must hold at least one context token before the query (n_context >= 1); "
            f"got {X.shape[1]} token(s) per prompt instead."
        )
    if X.shape[2] < n_outputs + 1:
        if n_outputs == 1:
            raise ValueError(
                f"{name} tokens must have width n_features + 1 >= 2 (x then y); got width "
                f"{X.shape[2]} instead."
            )
        raise ValueError(
            f"{name} tokens must have width n_features + n_outputs >= {n_outputs + 1} (x then "
            f"{n_outputs} labels); got width {X.shape[2]} instead."
        )
    if n_features_in is not None and X.shape[2] != n_features_in:
        raise ValueError(
            f"{name} has tokens of width {X.shape[2]}, but the model was fitted on width "
            f"{n_features_in} (n_features + 1). Got shape {X.shape} instead."
        )
    if n_outputs == 1:
        if not allow_query_label and np.any(X[:, -1, -1] != 0):
            bad = int(np.flatnonzero(X[:, -1, -1] != 0)[0])
            raise ValueError(
                f"the query token (last row of each prompt) must carry y = 0 in its last slot; "
                f"prompt {bad} has {X[bad, -1, -1]!r} instead. Pass allow_query_label=True to "
                "accept (and ignore) it."
            )
    elif not allow_query_label:
        slots = X[:, -1, -n_outputs:]
        if np.any(slots != 0):
            bad = int(np.flatnonzero(np.any(slots != 0, axis=1))[0])
            raise ValueError(
                f"the query token (last row of each prompt) must carry 0 in its last "
                f"{n_outputs} label slots; prompt {bad} has {slots[bad].tolist()!r} instead. "
                "Pass allow_query_label=True to accept it."
            )
    return X


def _split(X):
    ctx_x = X[:, :-1, :-1]
    ctx_y = X[:, :-1, -1]
    xq = X[:, -1, :-1]
    return ctx_x, ctx_y, xq


class LinearICLTaskSampler:
    """Draw prompts of in-context linear regression tasks (the paper's data, section 3.1).

    Each prompt has its own task ``beta ~ N(0, beta_var I_d)``; covariates
    ``x_1..x_L, x_q ~ N(0, covariance)`` i.i.d.; labels ``y = beta^T x + e`` with
    ``e ~ N(0, noise_var)``. The query label ``y_q`` (noisy too) is the target; the query
    token carries 0 in its y-slot.

    Parameters
    ----------
    n_features : int, default=5
        Covariate dimension ``d``.
    n_context : int, default=40
        Context pairs per prompt ``L``.
    noise_var : float, default=0.1
        Label noise variance ``sigma^2``.
    beta_var : "1/d" or float, default="1/d"
        Prior variance of each task coefficient (the authors' code scales by ``1/d``).
    covariance : array-like of shape (n_features, n_features) or None, default=None
        Covariate covariance (identity when None); e.g. ``rho**|i-j|`` for the
        anisotropic extension.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws; an int makes successive :meth:`sample` calls a fixed sequence.

    Attributes
    ----------
    beta_ : ndarray of shape (n_prompts, n_features)
        The tasks of the last :meth:`sample` call.

    See Also
    --------
    MultiHeadSoftmaxICLRegressor : the transformer trained on these prompts.

    References
    ----------
    .. [1] J. He, X. Pan, S. Chen and Z. Yang, "In-Context Linear Regression Demystified:
       Training Dynamics and Mechanistic Interpretability of Multi-Head Softmax
       Attention", ICML 2025, arXiv:2503.12734.

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler
    >>> X, y = LinearICLTaskSampler(n_features=3, n_context=10, random_state=0).sample(4)
    >>> X.shape, y.shape
    ((4, 11, 4), (4,))
    >>> float(X[0, -1, -1])
    0.0
    """

    def __init__(
        self,
        n_features=5,
        n_context=40,
        noise_var=0.1,
        beta_var="1/d",
        covariance=None,
        random_state=None,
    ):
        self.n_features = n_features
        self.n_context = n_context
        self.noise_var = noise_var
        self.beta_var = beta_var
        self.covariance = covariance
        self.random_state = random_state

    def _validated(self):
        d = _check_int(self.n_features, "n_features", 1)
        L = _check_int(self.n_context, "n_context", 1)
        noise_var = _check_real(self.noise_var, "noise_var")
        if isinstance(self.beta_var, str):
            if self.beta_var != "1/d":
                raise ValueError(
                    f"beta_var must be '1/d' or a positive number; got {self.beta_var!r} instead."
                )
            beta_var = 1.0 / d
        else:
            beta_var = _check_real(self.beta_var, "beta_var", strict=True)
        chol = None
        if self.covariance is not None:
            cov = check_array(self.covariance, dtype=np.float64, input_name="covariance")
            if cov.shape != (d, d):
                raise ValueError(
                    f"covariance must have shape ({d}, {d}) (n_features); got {cov.shape} instead."
                )
            try:
                chol = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError as exc:
                raise ValueError(
                    "covariance must be symmetric positive definite; its Cholesky "
                    "factorisation failed."
                ) from exc
        return d, L, noise_var, beta_var, chol

    def params(self):
        """Validated ``(n_features, n_context, noise_var, beta_var, cholesky_or_None)``."""
        return self._validated()

    def sample(self, n_prompts):
        """Draw ``n_prompts`` prompts and their query labels.

        Parameters
        ----------
        n_prompts : int
            Number of prompts (tasks).

        Returns
        -------
        X : ndarray of shape (n_prompts, n_context + 1, n_features + 1)
            Context tokens ``(x_l, y_l)``, then the query token ``(x_q, 0)``.
        y : ndarray of shape (n_prompts,)
            The noisy query labels ``y_q``.
        """
        n = _check_int(n_prompts, "n_prompts", 1)
        d, L, noise_var, beta_var, chol = self._validated()
        if not hasattr(self, "_rng"):
            self._rng = check_random_state(self.random_state)
        rng = self._rng
        beta = rng.standard_normal((n, d)) * np.sqrt(beta_var)
        x = rng.standard_normal((n, L + 1, d))
        if chol is not None:
            x = x @ chol.T
        y = np.einsum("nld,nd->nl", x, beta) + rng.standard_normal((n, L + 1)) * np.sqrt(noise_var)
        X = np.concatenate([x, y[:, :, None]], axis=2)
        X[:, -1, -1] = 0.0
        self.beta_ = beta
        return X, y[:, -1].copy()


class MultiTaskLinearICLTaskSampler:
    """Prompts of two in-context linear regression tasks sharing covariates (spec 3.6).

    Each prompt has two tasks on overlapping coordinate supports: ``y1 = beta1^T x[:dx1] +
    e1`` and ``y2 = beta2^T x[d - dx2:] + e2`` with ``beta_k ~ N(0, beta_var I_{dx_k})``,
    ``x ~ N(0, I_d)`` and ``e_k ~ N(0, noise_var dx_k)`` (noise std scaled by
    ``sqrt(dx_k)``, as in the authors' code). Tokens are ``(x, y1, y2)`` (width ``d + 2``);
    the query token is ``(x_q, 0, 0)`` and the targets are its two noisy labels.

    Parameters
    ----------
    n_features : int, default=5
        Covariate dimension ``d``.
    n_context : int, default=40
        Context tokens per prompt ``L``.
    task_dims : tuple of two int, default=(3, 4)
        ``(dx1, dx2)``, each in ``[1, d]``: task 1 reads ``x[:dx1]``, task 2 ``x[d - dx2:]``.
    noise_var : float, default=0.1
        Label noise variance per coordinate of the support (task ``k`` gets
        ``noise_var * dx_k``).
    beta_var : float, default=1.0
        Prior variance of each task coefficient (the authors' multi-task code draws
        ``beta ~ N(0, I)``).
    random_state : int, RandomState instance or None, default=None
        Seeds the draws; an int makes successive :meth:`sample` calls a fixed sequence.

    Attributes
    ----------
    n_outputs : int
        Always 2 (the labels per token).
    beta1_ : ndarray of shape (n_prompts, dx1)
    beta2_ : ndarray of shape (n_prompts, dx2)
        The tasks of the last :meth:`sample` call.

    See Also
    --------
    LinearICLTaskSampler : the single-task prompts.
    MultiHeadSoftmaxICLRegressor : trained on these prompts it predicts both labels.
    multitask_pattern_metrics : which head serves which task.

    References
    ----------
    .. [1] J. He, X. Pan, S. Chen and Z. Yang, "In-Context Linear Regression Demystified:
       Training Dynamics and Mechanistic Interpretability of Multi-Head Softmax
       Attention", ICML 2025, arXiv:2503.12734.

    Examples
    --------
    >>> from sklearn_icml.neural import MultiTaskLinearICLTaskSampler
    >>> X, y = MultiTaskLinearICLTaskSampler(n_context=10, random_state=0).sample(4)
    >>> X.shape, y.shape
    ((4, 11, 7), (4, 2))
    >>> X[0, -1, -2:].tolist()
    [0.0, 0.0]
    """

    n_outputs = 2

    def __init__(
        self,
        n_features=5,
        n_context=40,
        task_dims=(3, 4),
        noise_var=0.1,
        beta_var=1.0,
        random_state=None,
    ):
        self.n_features = n_features
        self.n_context = n_context
        self.task_dims = task_dims
        self.noise_var = noise_var
        self.beta_var = beta_var
        self.random_state = random_state

    def params(self):
        """Validated ``(n_features, n_context, noise_var, beta_var, (dx1, dx2))``."""
        d = _check_int(self.n_features, "n_features", 1)
        L = _check_int(self.n_context, "n_context", 1)
        noise_var = _check_real(self.noise_var, "noise_var")
        beta_var = _check_real(self.beta_var, "beta_var", strict=True)
        dims = self.task_dims
        if (
            not isinstance(dims, tuple | list)
            or len(dims) != 2
            or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in dims)
            or not all(1 <= v <= d for v in dims)
        ):
            raise ValueError(
                f"task_dims must be two ints (dx1, dx2), each in [1, n_features={d}]; got "
                f"{dims!r} instead."
            )
        return d, L, noise_var, beta_var, (int(dims[0]), int(dims[1]))

    def supports(self):
        """The coordinates each task reads: ``[arange(dx1), arange(d - dx2, d)]``."""
        d, _, _, _, (d1, d2) = self.params()
        return [np.arange(d1), np.arange(d - d2, d)]

    def sample(self, n_prompts):
        """Draw ``n_prompts`` prompts and their two query labels.

        Parameters
        ----------
        n_prompts : int
            Number of prompts (each with its own pair of tasks).

        Returns
        -------
        X : ndarray of shape (n_prompts, n_context + 1, n_features + 2)
            Context tokens ``(x_l, y1_l, y2_l)``, then the query token ``(x_q, 0, 0)``.
        y : ndarray of shape (n_prompts, 2)
            The noisy query labels ``(y1_q, y2_q)``.
        """
        n = _check_int(n_prompts, "n_prompts", 1)
        d, L, noise_var, beta_var, (d1, d2) = self.params()
        if not hasattr(self, "_rng"):
            self._rng = check_random_state(self.random_state)
        rng = self._rng
        beta1 = rng.standard_normal((n, d1)) * np.sqrt(beta_var)
        beta2 = rng.standard_normal((n, d2)) * np.sqrt(beta_var)
        x = rng.standard_normal((n, L + 1, d))
        e = rng.standard_normal((n, L + 1, 2)) * np.sqrt(noise_var * np.array([d1, d2]))
        y1 = np.einsum("nld,nd->nl", x[:, :, :d1], beta1) + e[:, :, 0]
        y2 = np.einsum("nld,nd->nl", x[:, :, d - d2 :], beta2) + e[:, :, 1]
        y = np.stack([y1, y2], axis=2)
        X = np.concatenate([x, y], axis=2)
        X[:, -1, d:] = 0.0
        self.beta1_, self.beta2_ = beta1, beta2
        return X, y[:, -1].copy()


def multitask_pattern_metrics(KQ, OV, n_features, task_dims=(3, 4)):
    """Which head serves which task in a two-output attention layer (allocation measures).

    Parameters
    ----------
    KQ : array-like of shape (n_heads, d + 2, d + 2)
        Effective key-query matrices.
    OV : array-like of shape (n_heads, 2, d + 2)
        Effective output-value maps (row ``k`` feeds output ``k``).
    n_features : int
        ``d``.
    task_dims : tuple of two int, default=(3, 4)
        ``(dx1, dx2)``: task 1 reads ``x[:dx1]``, task 2 ``x[d - dx2:]``.

    Returns
    -------
    metrics : dict
        Per head: ``omega`` (mean of the first d diagonal entries of ``KQ``), ``mu``
        (n_heads, 2) with ``mu[h, k] = OV[h, k, d + k]`` (head h copying ``y_k`` into output
        ``k``); ``kq_mass`` (n_heads, 2): for the coordinates only task ``k`` reads (task 1:
        ``x[:d - dx2]``, task 2: ``x[dx1:]``), the mean over them of the squared norms of
        their key row and query column in the x-block of ``KQ`` (averaged), so a head with
        ``KQ ~ omega I`` on all of x gets equal masses;
        ``ov_mass`` (n_heads, 2) = ``mu**2``; ``kq_allocation`` and ``ov_allocation``
        (n_heads,) = ``(m1 - m2) / (m1 + m2)`` of those masses: +1 a head serving task 1
        only, -1 task 2 only, ~0 a head superposing both (0 when both masses are 0).
        ``kq_mass``/``kq_allocation`` are NaN when a task has no exclusive coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.neural import multitask_pattern_metrics
    >>> KQ = np.zeros((1, 7, 7)); KQ[0, 0, 0] = 1.0
    >>> OV = np.zeros((1, 2, 7)); OV[0, 0, 5] = 2.0
    >>> m = multitask_pattern_metrics(KQ, OV, 5)
    >>> m["kq_allocation"].tolist(), m["ov_allocation"].tolist()
    ([1.0], [1.0])
    """
    KQ = np.asarray(KQ, dtype=np.float64)
    OV = np.asarray(OV, dtype=np.float64)
    d = _check_int(n_features, "n_features", 1)
    d1, d2 = MultiTaskLinearICLTaskSampler(n_features=d, task_dims=task_dims).params()[-1]
    D = d + 2
    if KQ.ndim != 3 or KQ.shape[1:] != (D, D) or OV.shape != (KQ.shape[0], 2, D):
        raise ValueError(
            f"KQ must have shape (n_heads, {D}, {D}) and OV (n_heads, 2, {D}) for "
            f"n_features={d}; got {KQ.shape} and {OV.shape} instead."
        )
    H = KQ.shape[0]
    only = [np.arange(0, d - d2), np.arange(d1, d)]
    kq_mass = np.full((H, 2), np.nan)
    block = KQ[:, :d, :d]
    # per x-coordinate: mean of its squared key row and query column in the x-block
    coord = 0.5 * (np.sum(block**2, axis=2) + np.sum(block**2, axis=1))
    for k, idx in enumerate(only):
        if idx.size:
            kq_mass[:, k] = coord[:, idx].mean(axis=1)
    mu = np.stack([OV[:, 0, d], OV[:, 1, d + 1]], axis=1)
    ov_mass = mu**2

    def alloc(m):
        tot = m[:, 0] + m[:, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(tot > 0, (m[:, 0] - m[:, 1]) / np.where(tot > 0, tot, 1), 0.0)

    kq_alloc = alloc(kq_mass)
    if np.isnan(kq_mass).any():
        kq_alloc = np.full(H, np.nan)
    return {
        "omega": np.diagonal(KQ[:, :d, :d], axis1=1, axis2=2).mean(axis=1),
        "mu": mu,
        "kq_mass": kq_mass,
        "ov_mass": ov_mass,
        "kq_allocation": kq_alloc,
        "ov_allocation": alloc(ov_mass),
    }


def softmax_kernel_predict(X, omegas=(0.13, -0.13), mus=(3.45, -3.45), *, allow_query_label=False):
    """The softmax-kernel predictor ``sum_h mu_h sum_l y_l softmax_l(omega_h x_l^T x_q)``.

    What a multi-head attention with ``KQ_h = diag(omega_h I_d, 0)`` (``omega`` absorbing
    the ``1/sqrt(d+1)``) and ``OV_h = (0, .., 0, mu_h)`` computes (spec equation (*)).

    Parameters
    ----------
    X : array-like of shape (n_prompts, n_context + 1, n_features + 1)
    omegas, mus : array-like of shape (n_heads,)
        Per-head KQ scale and OV y-weight.
    allow_query_label : bool, default=False

    Returns
    -------
    y_pred : ndarray of shape (n_prompts,)

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler, softmax_kernel_predict
    >>> X, y = LinearICLTaskSampler(random_state=0).sample(3)
    >>> softmax_kernel_predict(X).shape
    (3,)
    """
    X = check_prompts(X, allow_query_label=allow_query_label)
    omegas = np.atleast_1d(np.asarray(omegas, dtype=np.float64))
    mus = np.atleast_1d(np.asarray(mus, dtype=np.float64))
    if omegas.ndim != 1 or omegas.shape != mus.shape or omegas.size == 0:
        raise ValueError(
            f"omegas and mus must be 1-D of the same non-zero length (one per head); got "
            f"shapes {omegas.shape} and {mus.shape} instead."
        )
    ctx_x, ctx_y, xq = _split(X)
    s = np.einsum("nld,nd->nl", ctx_x, xq)
    out = np.zeros(X.shape[0])
    for w, m in zip(omegas, mus, strict=True):
        z = w * s
        z -= z.max(axis=1, keepdims=True)
        a = np.exp(z)
        a /= a.sum(axis=1, keepdims=True)
        out += m * np.sum(a * ctx_y, axis=1)
    return out


def _gd_feature(X, debiased):
    ctx_x, ctx_y, xq = _split(X)
    if debiased:
        ctx_x = ctx_x - ctx_x.mean(axis=1, keepdims=True)
    return np.einsum("nl,nld,nd->n", ctx_y, ctx_x, xq) / ctx_y.shape[1]


def gd_predict(X, eta, *, debiased=False, allow_query_label=False):
    """One step of gradient descent from 0: ``(eta/L) sum_l y_l (x_l - [xbar])^T x_q``.

    Parameters
    ----------
    X : array-like of shape (n_prompts, n_context + 1, n_features + 1)
    eta : float
        Step size.
    debiased : bool, default=False
        Centre the context covariates (``x_l - xbar``): the debiased GD the two opposite
        heads implement.
    allow_query_label : bool, default=False

    Returns
    -------
    y_pred : ndarray of shape (n_prompts,)

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler, gd_predict
    >>> X, y = LinearICLTaskSampler(random_state=0).sample(3)
    >>> gd_predict(X, 0.86).shape
    (3,)
    """
    X = check_prompts(X, allow_query_label=allow_query_label)
    if isinstance(eta, bool) or not isinstance(eta, numbers.Real) or not np.isfinite(eta):
        raise ValueError(f"eta must be a finite real number; got {eta!r} instead.")
    return float(eta) * _gd_feature(X, debiased)


def fit_gd_eta(X, y, *, debiased=False, allow_query_label=False):
    """MSE-optimal GD step size on ``(X, y)`` (1-D least squares of ``y`` on the GD feature).

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler, fit_gd_eta
    >>> X, y = LinearICLTaskSampler(random_state=0).sample(20000)
    >>> round(fit_gd_eta(X, y), 1)
    0.9
    """
    X = check_prompts(X, allow_query_label=allow_query_label)
    y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},); got {y.shape} instead.")
    f = _gd_feature(X, debiased)
    denom = float(f @ f)
    if denom == 0.0:
        raise ValueError("the GD feature is identically 0 on X; eta cannot be fitted.")
    return float(f @ y / denom)


def bayes_ridge_predict(X, noise_var=0.1, prior_var="1/d", *, allow_query_label=False):
    """Bayes-optimal prediction: per-prompt ridge with ``lambda = noise_var / prior_var``.

    With the default prior ``1/d`` this is ``(X^T X + sigma^2 d I)^{-1} X^T y`` applied to
    ``x_q``, i.e. ``sklearn.linear_model.Ridge(alpha=sigma^2 d, fit_intercept=False)``.

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler, bayes_ridge_predict
    >>> X, y = LinearICLTaskSampler(random_state=0).sample(3)
    >>> bayes_ridge_predict(X).shape
    (3,)
    """
    X = check_prompts(X, allow_query_label=allow_query_label)
    d = X.shape[2] - 1
    noise_var = _check_real(noise_var, "noise_var")
    if isinstance(prior_var, str):
        if prior_var != "1/d":
            raise ValueError(f"prior_var must be '1/d' or a positive number; got {prior_var!r}.")
        prior_var = 1.0 / d
    prior_var = _check_real(prior_var, "prior_var", strict=True)
    ctx_x, ctx_y, xq = _split(X)
    gram = np.einsum("nli,nlj->nij", ctx_x, ctx_x) + (noise_var / prior_var) * np.eye(d)
    rhs = np.einsum("nli,nl->ni", ctx_x, ctx_y)
    beta = np.linalg.solve(gram, rhs[:, :, None])[:, :, 0]
    return np.einsum("ni,ni->n", beta, xq)


def _kernel_matrix(omega, n_features, n_context, noise_var):
    omega = np.atleast_1d(np.asarray(omega, dtype=np.float64))
    d = _check_int(n_features, "n_features", 1)
    L = _check_int(n_context, "n_context", 1)
    noise_var = _check_real(noise_var, "noise_var")
    outer = np.outer(omega, omega)
    return omega, outer + (1.0 + noise_var) / L * np.exp(d * outer), noise_var


def approx_icl_loss(omega, mu, n_features=5, n_context=40, noise_var=0.1):
    """Large-``L`` population MSE ``Ltilde(omega, mu)`` of the softmax-kernel predictor.

    ``Ltilde = 1 + sigma^2 - 2 mu^T omega + mu^T (omega omega^T + (1+sigma^2)/L
    exp(d omega omega^T)) mu`` (``exp`` elementwise), as in the authors' ``utils/funcs.py``.

    Examples
    --------
    >>> from sklearn_icml.neural import approx_icl_loss
    >>> round(approx_icl_loss([0.4472136], [1.6276907]), 4)
    0.3721
    """
    omega, M, noise_var = _kernel_matrix(omega, n_features, n_context, noise_var)
    mu = np.atleast_1d(np.asarray(mu, dtype=np.float64))
    if mu.shape != omega.shape:
        raise ValueError(f"mu must have shape {omega.shape}; got {mu.shape} instead.")
    return float(1.0 + noise_var - 2.0 * mu @ omega + mu @ M @ mu)


def optimal_mu(omega, n_features=5, n_context=40, noise_var=0.1):
    """Minimiser of ``Ltilde`` over ``mu`` for fixed ``omega``: ``M(omega)^{-1} omega``.

    Examples
    --------
    >>> from sklearn_icml.neural import optimal_mu
    >>> optimal_mu([0.13, -0.13]).round(2)
    array([ 3.38, -3.38])
    """
    omega, M, _ = _kernel_matrix(omega, n_features, n_context, noise_var)
    return np.linalg.lstsq(M, omega, rcond=None)[0]


def single_head_optimum(n_features=5, n_context=40, noise_var=0.1):
    """Exact optimum of ``Ltilde`` for one head: ``omega = 1/sqrt(d)``.

    Returns
    -------
    omega, mu, loss : float
        ``mu = sqrt(d) / (1 + e (1+sigma^2) d/L)``, ``loss = 1 + sigma^2 - 1/(1 + e
        (1+sigma^2) d/L)``.

    Examples
    --------
    >>> from sklearn_icml.neural import single_head_optimum
    >>> [round(v, 5) for v in single_head_optimum()]
    [0.44721, 1.62769, 0.37207]
    """
    d = _check_int(n_features, "n_features", 1)
    L = _check_int(n_context, "n_context", 1)
    s2 = _check_real(noise_var, "noise_var")
    c = np.e * (1.0 + s2) * d / L
    return (
        float(1.0 / np.sqrt(d)),
        float(np.sqrt(d) / (1.0 + c)),
        float(1.0 + s2 - 1.0 / (1.0 + c)),
    )


def debiased_gd_optimum(n_features=5, n_context=40, noise_var=0.1):
    """Two-head limit ``omega -> 0`` of ``Ltilde``: debiased GD with the optimal step.

    Returns
    -------
    eta, loss : float
        ``eta = 1/(1 + (1+sigma^2) d/L)``, ``loss = 1 + sigma^2 - eta``.

    Examples
    --------
    >>> from sklearn_icml.neural import debiased_gd_optimum
    >>> [round(v, 5) for v in debiased_gd_optimum()]
    [0.87912, 0.22088]
    """
    d = _check_int(n_features, "n_features", 1)
    L = _check_int(n_context, "n_context", 1)
    s2 = _check_real(noise_var, "noise_var")
    eta = 1.0 / (1.0 + (1.0 + s2) * d / L)
    return float(eta), float(1.0 + s2 - eta)


def gd_risk_finite(n_features=5, n_context=40, noise_var=0.1):
    """Exact finite-``L`` risk of plain GD at its optimal step (Gaussian data, prior 1/d).

    Returns
    -------
    eta, loss : float
        ``k = 1 + (d (1+sigma^2) + 1)/L``; ``eta = 1/k``, ``loss = 1 + sigma^2 - 1/k``.

    Examples
    --------
    >>> from sklearn_icml.neural import gd_risk_finite
    >>> [round(v, 4) for v in gd_risk_finite()]
    [0.8602, 0.2398]
    """
    d = _check_int(n_features, "n_features", 1)
    L = _check_int(n_context, "n_context", 1)
    s2 = _check_real(noise_var, "noise_var")
    k = 1.0 + (d * (1.0 + s2) + 1.0) / L
    return float(1.0 / k), float(1.0 + s2 - 1.0 / k)


def bayes_risk_asymptotic(xi, noise_var=0.1):
    """Asymptotic Bayes risk (query noise included) at ``xi = d/L`` (authors' ``ridge_loss``).

    Examples
    --------
    >>> from sklearn_icml.neural import bayes_risk_asymptotic
    >>> round(bayes_risk_asymptotic(5 / 40), 5)
    0.11406
    """
    xi = _check_real(xi, "xi", strict=True)
    s2 = _check_real(noise_var, "noise_var")
    return float(0.5 * (s2 + 1.0 - 1.0 / xi + np.sqrt(4.0 * s2 + (s2 + 1.0 / xi - 1.0) ** 2)))


def attention_pattern_metrics(KQ, OV):
    """Diagnostics of the emergent structure (spec 3.4, x-block definition).

    Parameters
    ----------
    KQ : array-like of shape (n_heads, d + 1, d + 1)
        Effective key-query matrices ``K_h^T Q_h / sqrt(d+1)``.
    OV : array-like of shape (n_heads, d + 1)
        Effective output-value rows ``O_h V_h``.

    Returns
    -------
    metrics : dict
        ``omega`` (mean of the first d diagonal entries), ``mu`` (``OV[:, d]``),
        ``diag_ratio`` (``||diag(KQ[:d,:d])||^2 / ||KQ[:d,:d]||_F^2``; the last column of
        ``KQ`` multiplies the query's zero y-slot and never trains, so it is left out),
        ``homogeneity`` (variance of that diagonal), ``last_entry_ratio``
        (``OV[d]^2 / ||OV||^2``), ``zero_sum`` (``|sum mu| / sum |mu|``), ``eta_eff``
        (mean over heads of ``2 |omega| |mu|``), all per head except the last two.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.neural import attention_pattern_metrics
    >>> KQ = np.stack([np.diag([0.1, 0.1, 0.0]), np.diag([-0.1, -0.1, 0.0])])
    >>> m = attention_pattern_metrics(KQ, [[0, 0, 3.0], [0, 0, -3.0]])
    >>> m["diag_ratio"].tolist(), m["zero_sum"], round(m["eta_eff"], 3)
    ([1.0, 1.0], 0.0, 0.6)
    """
    KQ = np.asarray(KQ, dtype=np.float64)
    OV = np.asarray(OV, dtype=np.float64)
    if KQ.ndim != 3 or KQ.shape[1] != KQ.shape[2] or OV.shape != KQ.shape[:2]:
        raise ValueError(
            f"KQ must have shape (n_heads, D, D) and OV (n_heads, D); got {KQ.shape} and "
            f"{OV.shape} instead."
        )
    d = KQ.shape[1] - 1
    block = KQ[:, :d, :d]
    diag = np.diagonal(block, axis1=1, axis2=2)
    fro = np.sum(block**2, axis=(1, 2))
    omega = diag.mean(axis=1)
    mu = OV[:, d].copy()
    ov_norm = np.sum(OV**2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        diag_ratio = np.where(fro > 0, np.sum(diag**2, axis=1) / np.where(fro > 0, fro, 1), 0.0)
        last = np.where(ov_norm > 0, mu**2 / np.where(ov_norm > 0, ov_norm, 1), 0.0)
    abs_sum = float(np.sum(np.abs(mu)))
    return {
        "omega": omega,
        "mu": mu,
        "diag_ratio": diag_ratio,
        "homogeneity": diag.var(axis=1),
        "last_entry_ratio": last,
        "zero_sum": float(abs(mu.sum()) / abs_sum) if abs_sum > 0 else 0.0,
        "eta_eff": float(np.mean(2.0 * np.abs(omega) * np.abs(mu))),
    }
