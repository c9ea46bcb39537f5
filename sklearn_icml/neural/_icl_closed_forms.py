"""Closed forms of in-context linear regression (He et al., ICML 2025): predictors and risks.

The reduced predictors that a trained multi-head softmax attention is compared with, as
functions of a batch of prompts (the softmax-kernel predictor, plain and debiased one-step
gradient descent, the Bayes-optimal ridge), and the large-``L`` population loss
``Ltilde(omega, mu)`` of the kernel predictor with its optima. numpy only, float64.
"""

import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_params

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import (
    FINITE_NON_NEGATIVE_REAL,
    FINITE_POSITIVE_REAL,
    FINITE_REAL,
    POSITIVE_INT,
)
from ..utils.validation import check_input_array
from ._icl_tasks import _split, check_prompts

#: The setting ``(n_features, n_context, noise_var)`` of the closed forms.
_SETTING = {
    "n_features": [POSITIVE_INT],
    "n_context": [POSITIVE_INT],
    "noise_var": [FINITE_NON_NEGATIVE_REAL],
}
#: The prompts every predictor reads, and whether their query may carry a label.
_PROMPTS = {"X": ["array-like"], "allow_query_label": ["boolean"]}


def _head_parameters(omegas, mus):
    """``omegas`` and ``mus`` as 1-D float64 arrays of one value per head."""
    omegas = np.atleast_1d(np.asarray(omegas, dtype=np.float64))
    mus = np.atleast_1d(np.asarray(mus, dtype=np.float64))
    if omegas.ndim != 1 or omegas.shape != mus.shape or omegas.size == 0:
        raise ValueError(
            "omegas and mus must be 1-D of the same non-zero length (one per head). Got "
            f"shapes {omegas.shape} and {mus.shape} instead."
        )
    return omegas, mus


@keyword_only_after(1)
@validate_params(
    {
        **_PROMPTS,
        "omegas": ["array-like"],
        "mus": ["array-like"],
    },
    prefer_skip_nested_validation=True,
)
def softmax_kernel_predict(X, *, omegas=(0.13, -0.13), mus=(3.45, -3.45), allow_query_label=False):
    """The softmax-kernel predictor ``sum_h mu_h sum_l y_l softmax_l(omega_h x_l^T x_q)``.

    What a multi-head attention with ``KQ_h = diag(omega_h I_d, 0)`` (``omega`` absorbing
    the ``1/sqrt(d+1)``) and ``OV_h = (0, .., 0, mu_h)`` computes (the paper's reduced
    model of the trained attention).

    Parameters
    ----------
    X : array-like of shape (n_prompts, n_context + 1, n_features + 1)
    omegas, mus : array-like of shape (n_heads,)
        Per-head KQ scale and OV y-weight.
    allow_query_label : bool, default=False
        Accept a query token whose y-slot is not 0 (it is never read).

    Returns
    -------
    y_pred : ndarray of shape (n_prompts,)
        The kernel prediction of each prompt's query label.

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler, softmax_kernel_predict
    >>> X, y = LinearICLTaskSampler(random_state=0).sample(3)
    >>> softmax_kernel_predict(X).shape
    (3,)
    """
    X = check_prompts(X, allow_query_label=allow_query_label)
    omegas, mus = _head_parameters(omegas, mus)
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


@keyword_only_after(1)
@validate_params(
    {
        **_PROMPTS,
        "eta": [FINITE_REAL],
        "debiased": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def gd_predict(X, *, eta, debiased=False, allow_query_label=False):
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
        As in :func:`check_prompts`.

    Returns
    -------
    y_pred : ndarray of shape (n_prompts,)
        ``eta`` times the GD feature of each prompt.

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler, gd_predict
    >>> X, _ = LinearICLTaskSampler(random_state=0).sample(3)
    >>> gd_predict(X, eta=0.86).shape
    (3,)
    """
    X = check_prompts(X, allow_query_label=allow_query_label)
    return float(eta) * _gd_feature(X, debiased)


@validate_params(
    {
        **_PROMPTS,
        "y": ["array-like"],
        "debiased": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def fit_gd_eta(X, y, *, debiased=False, allow_query_label=False):
    """MSE-optimal GD step size on ``(X, y)`` (1-D least squares of ``y`` on the GD feature).

    Parameters
    ----------
    X : array-like of shape (n_prompts, n_context + 1, n_features + 1)
        Prompts, as for :func:`gd_predict`.
    y : array-like of shape (n_prompts,)
        Query labels.
    debiased : bool, default=False
        Fit the step of debiased GD (centred context covariates) instead of plain GD.
    allow_query_label : bool, default=False
        As in :func:`check_prompts`.

    Returns
    -------
    float
        The step ``eta`` that minimises the mean squared error of :func:`gd_predict`.

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler, fit_gd_eta
    >>> X, y = LinearICLTaskSampler(random_state=0).sample(20000)
    >>> round(fit_gd_eta(X, y), 1)
    0.9
    """
    X = check_prompts(X, allow_query_label=allow_query_label)
    y = check_input_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},). Got {y.shape} instead.")
    f = _gd_feature(X, debiased)
    denom = float(f @ f)
    if denom == 0.0:
        raise ValueError("the GD feature is identically 0 on X; eta cannot be fitted.")
    return float(f @ y / denom)


@keyword_only_after(1)
@validate_params(
    {
        **_PROMPTS,
        "noise_var": [FINITE_NON_NEGATIVE_REAL],
        "prior_var": [StrOptions({"1/d"}), FINITE_POSITIVE_REAL],
    },
    prefer_skip_nested_validation=True,
)
def bayes_ridge_predict(X, *, noise_var=0.1, prior_var="1/d", allow_query_label=False):
    """Bayes-optimal prediction: per-prompt ridge with ``lambda = noise_var / prior_var``.

    With the default prior ``1/d`` this is ``(X^T X + sigma^2 d I)^{-1} X^T y`` applied to
    ``x_q``, i.e. ``sklearn.linear_model.Ridge(alpha=sigma^2 d, fit_intercept=False)``.

    Parameters
    ----------
    X : array-like of shape (n_prompts, n_context + 1, n_features + 1)
        Prompts: context rows ``(x_l, y_l)`` and the query row last.
    noise_var : float, default=0.1
        Label noise variance ``sigma^2``.
    prior_var : float or "1/d", default="1/d"
        Prior variance of each task weight; ``"1/d"`` is the sampler's prior.
    allow_query_label : bool, default=False
        As in :func:`check_prompts`.

    Returns
    -------
    y_pred : ndarray of shape (n_prompts,)
        The posterior-mean prediction at each prompt's query.

    Examples
    --------
    The prediction for one prompt is scikit-learn's ridge fitted on its context:

    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn_icml.neural import LinearICLTaskSampler, bayes_ridge_predict
    >>> X, _ = LinearICLTaskSampler(random_state=0).sample(3)
    >>> ridge = Ridge(alpha=0.1 * 5, fit_intercept=False).fit(X[0, :-1, :-1], X[0, :-1, -1])
    >>> bool(np.isclose(bayes_ridge_predict(X)[0], ridge.predict(X[0, -1:, :-1])[0]))
    True
    """
    X = check_prompts(X, allow_query_label=allow_query_label)
    d = X.shape[2] - 1
    prior_var = 1.0 / d if prior_var == "1/d" else float(prior_var)
    ctx_x, ctx_y, xq = _split(X)
    gram = np.einsum("nli,nlj->nij", ctx_x, ctx_x) + (float(noise_var) / prior_var) * np.eye(d)
    rhs = np.einsum("nli,nl->ni", ctx_x, ctx_y)
    beta = np.linalg.solve(gram, rhs[:, :, None])[:, :, 0]
    return np.einsum("ni,ni->n", beta, xq)


def _kernel_matrix(omega, n_features, n_context, noise_var):
    omega = np.atleast_1d(np.asarray(omega, dtype=np.float64))
    outer = np.outer(omega, omega)
    return omega, outer + (1.0 + noise_var) / n_context * np.exp(n_features * outer)


@keyword_only_after(2)
@validate_params(
    {"omega": ["array-like"], "mu": ["array-like"], **_SETTING},
    prefer_skip_nested_validation=True,
)
def approx_icl_loss(omega, mu, *, n_features=5, n_context=40, noise_var=0.1):
    """Large-``L`` population MSE ``Ltilde(omega, mu)`` of the softmax-kernel predictor.

    ``Ltilde = 1 + sigma^2 - 2 mu^T omega + mu^T (omega omega^T + (1+sigma^2)/L
    exp(d omega omega^T)) mu`` (``exp`` elementwise), as in the authors' ``utils/funcs.py``.

    Parameters
    ----------
    omega : array-like of shape (n_heads,)
        Per-head key-query scales (each head's KQ matrix is ``omega_h I``).
    mu : array-like of shape (n_heads,)
        Per-head output-value weights on the label.
    n_features, n_context, noise_var : int, int, float, default=5, 40, 0.1
        The setting: covariate dimension ``d``, context pairs per prompt ``L`` and label
        noise variance ``sigma^2``.

    Returns
    -------
    float
        The approximate population mean squared error.

    Examples
    --------
    >>> from sklearn_icml.neural import approx_icl_loss
    >>> round(approx_icl_loss([0.4472136], [1.6276907]), 4)
    0.3721
    """
    omega, M = _kernel_matrix(omega, n_features, n_context, noise_var)
    mu = np.atleast_1d(np.asarray(mu, dtype=np.float64))
    if mu.shape != omega.shape:
        raise ValueError(f"mu must have shape {omega.shape}. Got {mu.shape} instead.")
    return float(1.0 + noise_var - 2.0 * mu @ omega + mu @ M @ mu)


@keyword_only_after(1)
@validate_params({"omega": ["array-like"], **_SETTING}, prefer_skip_nested_validation=True)
def optimal_mu(omega, *, n_features=5, n_context=40, noise_var=0.1):
    """Minimiser of ``Ltilde`` over ``mu`` for fixed ``omega``: ``M(omega)^{-1} omega``.

    Parameters
    ----------
    omega : array-like of shape (n_heads,)
        Per-head key-query scales (each head's KQ matrix is ``omega_h I``).
    n_features, n_context, noise_var : int, int, float, default=5, 40, 0.1
        The setting: covariate dimension ``d``, context pairs per prompt ``L`` and label
        noise variance ``sigma^2``.

    Returns
    -------
    mu : ndarray of shape (n_heads,)
        The output-value weights that minimise ``Ltilde`` at this ``omega``.

    Examples
    --------
    >>> from sklearn_icml.neural import optimal_mu
    >>> optimal_mu([0.13, -0.13]).round(2)
    array([ 3.38, -3.38])
    """
    omega, M = _kernel_matrix(omega, n_features, n_context, noise_var)
    return np.linalg.lstsq(M, omega, rcond=None)[0]


@validate_params(_SETTING, prefer_skip_nested_validation=True)
def single_head_optimum(n_features=5, n_context=40, noise_var=0.1):
    """Exact optimum of ``Ltilde`` for one head: ``omega = 1/sqrt(d)``.

    Parameters
    ----------
    n_features, n_context, noise_var : int, int, float, default=5, 40, 0.1
        The setting: covariate dimension ``d``, context pairs per prompt ``L`` and label
        noise variance ``sigma^2``.

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
    d, s2 = n_features, float(noise_var)
    c = np.e * (1.0 + s2) * d / n_context
    return (
        float(1.0 / np.sqrt(d)),
        float(np.sqrt(d) / (1.0 + c)),
        float(1.0 + s2 - 1.0 / (1.0 + c)),
    )


def _optimal_step_and_risk(k, noise_var):
    """Optimal step ``1/k`` and risk ``1 + sigma^2 - 1/k`` of a GD predictor.

    Both closed forms below have the risk ``1 + sigma^2 - 2 eta + k eta^2`` in the step
    ``eta``; they differ only in ``k``.
    """
    eta = 1.0 / k
    return float(eta), float(1.0 + float(noise_var) - eta)


@validate_params(_SETTING, prefer_skip_nested_validation=True)
def debiased_gd_optimum(n_features=5, n_context=40, noise_var=0.1):
    """Two-head limit ``omega -> 0`` of ``Ltilde``: debiased GD with the optimal step.

    Parameters
    ----------
    n_features, n_context, noise_var : int, int, float, default=5, 40, 0.1
        The setting: covariate dimension ``d``, context pairs per prompt ``L`` and label
        noise variance ``sigma^2``.

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
    k = 1.0 + (1.0 + float(noise_var)) * n_features / n_context
    return _optimal_step_and_risk(k, noise_var)


@validate_params(_SETTING, prefer_skip_nested_validation=True)
def gd_risk_finite(n_features=5, n_context=40, noise_var=0.1):
    """Exact finite-``L`` risk of plain GD at its optimal step (Gaussian data, prior 1/d).

    Parameters
    ----------
    n_features, n_context, noise_var : int, int, float, default=5, 40, 0.1
        The setting: covariate dimension ``d``, context pairs per prompt ``L`` and label
        noise variance ``sigma^2``.

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
    k = 1.0 + (n_features * (1.0 + float(noise_var)) + 1.0) / n_context
    return _optimal_step_and_risk(k, noise_var)


@keyword_only_after(1)
@validate_params(
    {"xi": [FINITE_POSITIVE_REAL], "noise_var": [FINITE_NON_NEGATIVE_REAL]},
    prefer_skip_nested_validation=True,
)
def bayes_risk_asymptotic(xi, *, noise_var=0.1):
    """Asymptotic Bayes risk (query noise included) at ``xi = d/L`` (authors' ``ridge_loss``).

    Parameters
    ----------
    xi : float
        Ratio ``d / L`` of the dimension to the context length.
    noise_var : float, default=0.1
        Label noise variance ``sigma^2``.

    Returns
    -------
    float
        The Bayes risk in the limit ``d, L -> infinity`` with ``d / L = xi``.

    Examples
    --------
    >>> from sklearn_icml.neural import bayes_risk_asymptotic
    >>> round(bayes_risk_asymptotic(5 / 40), 5)
    0.11406
    """
    xi, s2 = float(xi), float(noise_var)
    return float(0.5 * (s2 + 1.0 - 1.0 / xi + np.sqrt(4.0 * s2 + (s2 + 1.0 / xi - 1.0) ** 2)))
