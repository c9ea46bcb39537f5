"""Prompts of in-context linear regression (He et al., ICML 2025): their format and samplers.

A *prompt* is an array of shape ``(L + 1, d + 1)``: rows ``0..L-1`` are the context tokens
``z_l = (x_l, y_l)``, the last row is the query token ``(x_q, 0)``. A batch of prompts is a
3-D array ``(n_prompts, L + 1, d + 1)``. :func:`check_prompts` validates a batch;
:class:`LinearICLTaskSampler` and :class:`MultiTaskLinearICLTaskSampler` draw them. numpy
only, float64.
"""

import abc
import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import (
    StrOptions,
    validate_parameter_constraints,
    validate_params,
)

from ..base import SetUpAtFirstUseMixin
from ..utils import check_random_state
from ..utils._param_validation import (
    FINITE_NON_NEGATIVE_REAL,
    FINITE_POSITIVE_REAL,
    INT_AT_LEAST_TWO,
    POSITIVE_INT,
)
from ..utils._params import store_params
from ..utils.validation import check_input_array


@validate_params(
    {
        "X": ["array-like"],
        "allow_query_label": ["boolean"],
        "n_features_in": [INT_AT_LEAST_TWO, None],
        "name": [str],
        "n_outputs": [POSITIVE_INT],
    },
    prefer_skip_nested_validation=True,
)
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
    X = check_input_array(
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
            f"{name} must be a 3-D array of prompts (n_prompts, n_context + 1, n_features + 1)."
            f" Got an array of shape {X.shape} instead."
        )
    if X.shape[1] < 2:
        raise ValueError(
            f"{name} must hold at least one context token before the query (n_context >= 1). "
            f"Got {X.shape[1]} token(s) per prompt instead."
        )
    if X.shape[2] < n_outputs + 1:
        if n_outputs == 1:
            raise ValueError(
                f"{name} tokens must have width n_features + 1 >= 2 (x then y). Got width "
                f"{X.shape[2]} instead."
            )
        raise ValueError(
            f"{name} tokens must have width n_features + n_outputs >= {n_outputs + 1} (x then "
            f"{n_outputs} labels). Got width {X.shape[2]} instead."
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


def _assemble(x, y):
    """Prompts from drawn covariates ``x`` (n, L + 1, d) and labels ``y`` (n, L + 1[, K]).

    Returns the prompts, whose query token has its label slots zeroed, and the query
    labels (a copy).
    """
    X = np.concatenate([x, y[:, :, None] if y.ndim == 2 else y], axis=2)
    X[:, -1, x.shape[2] :] = 0.0
    return X, y[:, -1].copy()


def _split(X):
    ctx_x = X[:, :-1, :-1]
    ctx_y = X[:, :-1, -1]
    xq = X[:, -1, :-1]
    return ctx_x, ctx_y, xq


class _PromptSampler(SetUpAtFirstUseMixin, BaseEstimator):
    """What the prompt samplers share: parameters validated at first use, ``sample(n)``.

    ``__init__`` only stores; :meth:`params` validates the parameters and resolves them;
    :meth:`sample` draws from a ``RandomState`` made from ``random_state`` at the first
    call, so successive calls continue one stream. ``set_params`` restarts the stream.
    """

    _parameter_constraints: dict = {
        "n_features": [POSITIVE_INT],
        "n_context": [POSITIVE_INT],
        "noise_var": [FINITE_NON_NEGATIVE_REAL],
        "random_state": ["random_state"],
    }

    def params(self):
        """The validated parameters, resolved: the tuple the class's description names."""
        self._validate_params()
        return self._resolve()

    def sample(self, n_prompts):
        """Draw ``n_prompts`` prompts and their query labels.

        Parameters
        ----------
        n_prompts : int
            Number of prompts, each with its own task(s).

        Returns
        -------
        X : ndarray of shape (n_prompts, n_context + 1, n_features + n_outputs)
            Context tokens ``(x_l, y_l)``, then the query token ``(x_q, 0)``.
        y : ndarray of shape (n_prompts,) or (n_prompts, n_outputs)
            The noisy query label(s).
        """
        validate_parameter_constraints(
            {"n_prompts": [POSITIVE_INT]},
            {"n_prompts": n_prompts},
            caller_name=f"{type(self).__name__}.sample",
        )
        resolved = self.params()
        return self._sample(int(n_prompts), self._setup()._rng, *resolved)

    def _build(self):
        self._rng = check_random_state(self.random_state)

    @abc.abstractmethod
    def _resolve(self):
        """The parameters, resolved (defaults filled in), as the tuple ``_sample`` takes."""

    @abc.abstractmethod
    def _sample(self, n, rng, *resolved):
        """Draw ``n`` prompts and their query labels from ``rng``."""


class LinearICLTaskSampler(_PromptSampler):
    """Draw prompts of in-context linear regression tasks (the paper's data, section 3.1).

    Each prompt has its own task ``beta ~ N(0, beta_var I_d)``; covariates
    ``x_1..x_L, x_q ~ N(0, covariance)`` i.i.d.; labels ``y = beta^T x + e`` with
    ``e ~ N(0, noise_var)``. The query label ``y_q`` (noisy too) is the target; the query
    token carries 0 in its y-slot. :meth:`params` returns the validated
    ``(n_features, n_context, noise_var, beta_var, cholesky_or_None)``.

    Parameters
    ----------
    n_features, n_context : int, default=5, 40
        Covariate dimension ``d`` and context tokens ``(x_l, y_l)`` per prompt ``L``.
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
    .. [1] J. He, X. Pan, S. Chen and Z. Yang, ICML 2025, arXiv:2503.12734: the prompts
       of their in-context linear regression experiments.

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler
    >>> X, y = LinearICLTaskSampler(n_features=3, n_context=10, random_state=0).sample(4)
    >>> X.shape, y.shape
    ((4, 11, 4), (4,))
    >>> float(X[0, -1, -1])
    0.0
    """

    _parameter_constraints: dict = {
        **_PromptSampler._parameter_constraints,
        "beta_var": [StrOptions({"1/d"}), FINITE_POSITIVE_REAL],
        "covariance": ["array-like", None],
    }

    def __init__(
        self,
        *,
        n_features=5,
        n_context=40,
        noise_var=0.1,
        beta_var="1/d",
        covariance=None,
        random_state=None,
    ):
        store_params(self, locals())

    def _resolve(self):
        d, L = int(self.n_features), int(self.n_context)
        beta_var = 1.0 / d if self.beta_var == "1/d" else float(self.beta_var)
        chol = None
        if self.covariance is not None:
            cov = check_input_array(self.covariance, dtype=np.float64, input_name="covariance")
            if cov.shape != (d, d):
                raise ValueError(
                    f"covariance must have shape ({d}, {d}) (n_features). Got {cov.shape} instead."
                )
            try:
                chol = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError as exc:
                raise ValueError(
                    "covariance must be symmetric positive definite; its Cholesky "
                    "factorisation failed."
                ) from exc
        return d, L, float(self.noise_var), beta_var, chol

    def _sample(self, n, rng, d, L, noise_var, beta_var, chol):
        beta = rng.standard_normal((n, d)) * np.sqrt(beta_var)
        x = rng.standard_normal((n, L + 1, d))
        if chol is not None:
            x = x @ chol.T
        y = np.einsum("nld,nd->nl", x, beta) + rng.standard_normal((n, L + 1)) * np.sqrt(noise_var)
        self.beta_ = beta
        return _assemble(x, y)


class MultiTaskLinearICLTaskSampler(_PromptSampler):
    """Prompts of two in-context linear regression tasks sharing covariates (multi-task ICL).

    Each prompt has two tasks on overlapping coordinate supports: ``y1 = beta1^T x[:dx1] +
    e_1`` and ``y2 = beta2^T x[d - dx2:] + e_2`` with ``beta_k ~ N(0, beta_var I_{dx_k})``,
    ``x ~ N(0, I_d)`` and ``e_k ~ N(0, noise_var dx_k)`` (noise std scaled by
    ``sqrt(dx_k)``, as in the authors' code). Tokens are ``(x, y1, y2)`` (width ``d + 2``);
    the query token is ``(x_q, 0, 0)`` and the targets are its two noisy labels.
    :meth:`params` returns the validated ``(n_features, n_context, noise_var, beta_var,
    (dx1, dx2))``.

    Parameters
    ----------
    n_features, n_context : int, default=5, 40
        Covariate dimension ``d`` and context tokens ``(x_l, y_l)`` per prompt ``L``.
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
    .. [1] He, Pan, Chen & Yang (ICML 2025, arXiv:2503.12734), the multi-task extension.

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

    _parameter_constraints: dict = {
        **_PromptSampler._parameter_constraints,
        "task_dims": [tuple, list],
        "beta_var": [FINITE_POSITIVE_REAL],
    }

    def __init__(
        self,
        *,
        n_features=5,
        n_context=40,
        task_dims=(3, 4),
        noise_var=0.1,
        beta_var=1.0,
        random_state=None,
    ):
        store_params(self, locals())

    def _resolve(self):
        d, dims = int(self.n_features), self.task_dims
        if (
            len(dims) != 2
            or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in dims)
            or not all(1 <= v <= d for v in dims)
        ):
            raise ValueError(
                f"task_dims must be two ints (dx1, dx2), each in [1, n_features={d}]. Got "
                f"{dims!r} instead."
            )
        dims = (int(dims[0]), int(dims[1]))
        return d, int(self.n_context), float(self.noise_var), float(self.beta_var), dims

    def supports(self):
        """The coordinates each task reads: ``[arange(dx1), arange(d - dx2, d)]``."""
        d, _, _, _, (d1, d2) = self.params()
        return [np.arange(d1), np.arange(d - d2, d)]

    def _sample(self, n, rng, d, L, noise_var, beta_var, dims):
        d1, d2 = dims
        beta1 = rng.standard_normal((n, d1)) * np.sqrt(beta_var)
        beta2 = rng.standard_normal((n, d2)) * np.sqrt(beta_var)
        x = rng.standard_normal((n, L + 1, d))
        e = rng.standard_normal((n, L + 1, 2)) * np.sqrt(noise_var * np.array([d1, d2]))
        y1 = np.einsum("nld,nd->nl", x[:, :, :d1], beta1) + e[:, :, 0]
        y2 = np.einsum("nld,nd->nl", x[:, :, d - d2 :], beta2) + e[:, :, 1]
        self.beta1_, self.beta2_ = beta1, beta2
        return _assemble(x, np.stack([y1, y2], axis=2))
