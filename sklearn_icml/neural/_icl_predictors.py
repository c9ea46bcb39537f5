"""Closed-form in-context predictors as estimators (He et al., ICML 2025).

The reduced predictors that the trained multi-head softmax attention is compared with:
the softmax-kernel predictor at given per-head ``(omega_h, mu_h)``, plain and debiased
one-step gradient descent, and the Bayes-optimal ridge. Each is a small regressor on the
prompt format of :class:`MultiHeadSoftmaxICLRegressor` (3-D ``X`` of shape
``(n_prompts, L + 1, d + 1)``), with the same ``predict(X)`` / ``icl_mse(X, y)`` API, so
they sit next to the trained model in a benchmark, a pipeline or ``cross_val_score``.
``fit`` only validates the prompts (and, for :class:`GDICLPredictor` with ``eta=None``,
fits the MSE-optimal step by 1-D least squares). numpy only, float64.
"""

import abc

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import NonTabularInputMixin
from ..utils._param_validation import FINITE_NON_NEGATIVE_REAL, FINITE_POSITIVE_REAL, FINITE_REAL
from ..utils._params import store_params
from ..utils.validation import check_input_array
from ._icl_closed_forms import (
    _head_parameters,
    bayes_ridge_predict,
    fit_gd_eta,
    gd_predict,
    softmax_kernel_predict,
)
from ._icl_tasks import check_prompts


class _PromptInputMixin(NonTabularInputMixin):
    """What the ICL regressors share: prompts as input, ``icl_mse``, deterministic tags.

    ``X`` is a 3-D batch of prompts, not a 2-D table (scikit-learn's data checks do not
    apply; tests/neural re-runs the API checks on prompts). The estimator sets
    ``n_features_in_`` (the token width) in ``fit``; ``allow_query_label`` is one of its
    parameters.
    """

    def _validate_X(self, X):
        check_is_fitted(self)
        return check_prompts(
            X,
            allow_query_label=self.allow_query_label,
            n_features_in=self.n_features_in_,
            n_outputs=getattr(self, "n_outputs_", 1),
        )

    def icl_mse(self, X, y):
        """Mean squared error of :meth:`predict` against the query labels ``y``.

        Parameters
        ----------
        X : array-like of shape (n_prompts, n_context + 1, n_features + n_outputs)
        y : array-like of shape (n_prompts,) or (n_prompts, n_outputs)

        Returns
        -------
        mse : float
            Mean over prompts (and over outputs when several).
        """
        pred = self.predict(X)
        y = check_input_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        if y.shape != pred.shape:
            raise ValueError(f"y must have shape {pred.shape}. Got {y.shape} instead.")
        return float(np.mean((pred - y) ** 2))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


class _ClosedFormICLPredictor(
    _PromptInputMixin, RegressorMixin, BaseEstimator, metaclass=abc.ABCMeta
):
    """Template of the closed-form predictors: the subclass writes ``_fit`` and ``_predict``.

    ``fit`` validates the parameters and the prompts (and ``y`` when given, or when the
    subclass sets ``_requires_y``), then calls ``_fit(X, y)``; ``predict`` checks that the
    predictor is fitted, validates the prompts and returns ``_predict(X)``.
    """

    _parameter_constraints: dict = {"allow_query_label": ["boolean"]}

    def _requires_y(self):
        return False

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate the prompts (and ``y``) and set the predictor up.

        Parameters
        ----------
        X : array-like of shape (n_prompts, n_context + 1, n_features + 1)
            Prompts: context tokens ``(x_l, y_l)``, then the query token ``(x_q, 0)``.
        y : array-like of shape (n_prompts,) or None
            Query labels; see the class for whether they are used.

        Returns
        -------
        self : object
            The fitted predictor.
        """
        X = check_prompts(X, allow_query_label=self.allow_query_label)
        if y is None:
            if self._requires_y():
                raise ValueError(
                    f"{type(self).__name__}.fit needs the query labels y here. Got None."
                )
        else:
            y = check_input_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
            if y.shape != (X.shape[0],):
                raise ValueError(
                    f"y must have shape ({X.shape[0]},) (one label per prompt). Got {y.shape} "
                    "instead."
                )
        self.n_features_in_ = X.shape[2]
        self.n_context_ = X.shape[1] - 1
        self._fit(X, y)
        return self

    def predict(self, X):
        """Prediction of each prompt's query label.

        Parameters
        ----------
        X : array-like of shape (n_prompts, n_context + 1, n_features + 1)
            Any context length ``n_context >= 1``.

        Returns
        -------
        y_pred : ndarray of shape (n_prompts,)
        """
        return self._predict(self._validate_X(X))

    @abc.abstractmethod
    def _fit(self, X, y):
        """Set the predictor's fitted attributes from validated prompts (and labels)."""

    @abc.abstractmethod
    def _predict(self, X):
        """Predictions on validated prompts."""


class SoftmaxKernelICLPredictor(_ClosedFormICLPredictor):
    """The softmax-kernel predictor ``sum_h mu_h sum_l y_l softmax_l(omega_h x_l^T x_q)``.

    What a multi-head softmax attention with ``KQ_h = diag(omega_h I_d, 0)`` and
    ``OV_h = (0, .., 0, mu_h)`` computes (the paper's reduced model); pass a trained model's
    ``omega_`` and ``mu_`` to read it as this kernel. Two opposite heads with small
    ``omega`` are debiased gradient descent with step ``2 omega mu``.

    Parameters
    ----------
    omegas : array-like of shape (n_heads,), default=(0.13, -0.13)
        Per-head key-query scale (absorbing the ``1/sqrt(d+1)``).
    mus : array-like of shape (n_heads,), default=(3.45, -3.45)
        Per-head weight on the labels.
    allow_query_label : bool, default=False
        Accept (and ignore) a non-zero y-slot in the query token.

    Attributes
    ----------
    omegas_, mus_ : ndarray of shape (n_heads,)
        The validated parameters.
    n_features_in_, n_context_ : int
        Token width ``d + 1`` and context length ``L`` of the prompts seen in ``fit``
        (``predict`` needs the same width and takes any context length).

    See Also
    --------
    softmax_kernel_predict : the function behind ``predict``.
    MultiHeadSoftmaxICLRegressor : the trained attention this kernel describes.
    GDICLPredictor : its small-``omega`` limit.

    References
    ----------
    .. [1] J. He, X. Pan, S. Chen and Z. Yang, ICML 2025, arXiv:2503.12734. The kernel is
       their reduced model of the trained heads.

    Examples
    --------
    >>> from sklearn_icml.neural import LinearICLTaskSampler, SoftmaxKernelICLPredictor
    >>> X, y = LinearICLTaskSampler(random_state=0).sample(2000)
    >>> kernel = SoftmaxKernelICLPredictor().fit(X, y)
    >>> round(kernel.icl_mse(X, y), 1)
    0.2
    """

    _parameter_constraints: dict = {
        **_ClosedFormICLPredictor._parameter_constraints,
        "omegas": ["array-like"],
        "mus": ["array-like"],
    }

    def __init__(self, *, omegas=(0.13, -0.13), mus=(3.45, -3.45), allow_query_label=False):
        store_params(self, locals())

    def _fit(self, X, y):
        omegas, mus = _head_parameters(self.omegas, self.mus)
        if not (np.all(np.isfinite(omegas)) and np.all(np.isfinite(mus))):
            raise ValueError(
                f"omegas and mus must be finite. Got {self.omegas!r} and {self.mus!r} instead."
            )
        self.omegas_, self.mus_ = omegas, mus

    def _predict(self, X):
        return softmax_kernel_predict(
            X, omegas=self.omegas_, mus=self.mus_, allow_query_label=True
        )


class GDICLPredictor(_ClosedFormICLPredictor):
    """One gradient-descent step from 0: ``(eta/L) sum_l y_l (x_l - [xbar])^T x_q``.

    With ``debiased=True`` the context covariates are centred: the debiased GD that two
    opposite softmax heads implement. With ``eta=None`` ``fit`` learns the MSE-optimal step
    by 1-D least squares of the labels on the GD feature (the paper's ``eta*``; about 0.86
    for plain and 0.88 for debiased GD at d=5, L=40, sigma^2=0.1).

    Parameters
    ----------
    eta : float or None, default=None
        Step size; None fits it on ``(X, y)`` (``y`` then required).
    debiased : bool, default=False
        Centre the context covariates (``x_l - xbar``).
    allow_query_label : bool, default=False
        Accept (and ignore) a non-zero y-slot in the query token.

    Attributes
    ----------
    eta_ : float
        The step used by ``predict`` (``eta`` or the fitted one).
    n_features_in_, n_context_ : int
        Token width ``d + 1`` and context length ``L`` of the prompts seen in ``fit``
        (``predict`` needs the same width and takes any context length).

    See Also
    --------
    gd_predict, fit_gd_eta : the functions behind ``predict`` and ``fit``.
    debiased_gd_optimum, gd_risk_finite : the optimal steps in closed form.

    References
    ----------
    .. [1] He, Pan, Chen & Yang (ICML 2025, arXiv:2503.12734): debiased GD is what two
       opposite softmax heads implement in the small-``omega`` limit.

    Examples
    --------
    >>> from sklearn_icml.neural import GDICLPredictor, LinearICLTaskSampler
    >>> X, y = LinearICLTaskSampler(random_state=0).sample(20000)
    >>> gd = GDICLPredictor(debiased=True).fit(X, y)
    >>> round(gd.eta_, 1), round(gd.icl_mse(X, y), 1)
    (0.9, 0.2)
    """

    _parameter_constraints: dict = {
        **_ClosedFormICLPredictor._parameter_constraints,
        "eta": [FINITE_REAL, None],
        "debiased": ["boolean"],
    }

    def __init__(self, *, eta=None, debiased=False, allow_query_label=False):
        store_params(self, locals())

    def _requires_y(self):
        return self.eta is None

    def _fit(self, X, y):
        if self.eta is None:
            self.eta_ = fit_gd_eta(X, y, debiased=self.debiased, allow_query_label=True)
        else:
            self.eta_ = float(self.eta)

    def _predict(self, X):
        return gd_predict(X, eta=self.eta_, debiased=self.debiased, allow_query_label=True)


class BayesRidgeICLPredictor(_ClosedFormICLPredictor):
    """Bayes-optimal in-context prediction: per-prompt ridge, ``lambda = noise_var / prior_var``.

    With the default prior ``1/d`` this is ``sklearn.linear_model.Ridge(alpha=sigma^2 d,
    fit_intercept=False)`` fitted on each prompt's context and applied to its query, for all
    prompts at once (one batched solve). The lower bound the trained attention is compared
    with (about 2.1x below its MSE at d=5, L=40, sigma^2=0.1).

    Parameters
    ----------
    noise_var : float, default=0.1
        Label noise variance ``sigma^2`` of the prompts.
    prior_var : "1/d" or float, default="1/d"
        Prior variance of each task coefficient.
    allow_query_label : bool, default=False
        Accept (and ignore) a non-zero y-slot in the query token.

    Attributes
    ----------
    prior_var_ : float
        The prior variance used (``1/d`` resolved with the ``d`` of the prompts).
    n_features_in_, n_context_ : int
        Token width ``d + 1`` and context length ``L`` of the prompts seen in ``fit``
        (``predict`` needs the same width and takes any context length).

    See Also
    --------
    bayes_ridge_predict : the function behind ``predict``.
    bayes_risk_asymptotic : its large-``L`` risk.

    References
    ----------
    .. [1] In-context linear regression with multi-head softmax attention: J. He, X. Pan,
       S. Chen and Z. Yang, ICML 2025 (arXiv:2503.12734); the ridge is their Bayes-optimal
       baseline.

    Examples
    --------
    >>> from sklearn_icml.neural import BayesRidgeICLPredictor, LinearICLTaskSampler
    >>> X, y = LinearICLTaskSampler(random_state=0).sample(2000)
    >>> round(BayesRidgeICLPredictor().fit(X, y).icl_mse(X, y), 2)
    0.11
    """

    _parameter_constraints: dict = {
        **_ClosedFormICLPredictor._parameter_constraints,
        "noise_var": [FINITE_NON_NEGATIVE_REAL],
        "prior_var": [StrOptions({"1/d"}), FINITE_POSITIVE_REAL],
    }

    def __init__(self, *, noise_var=0.1, prior_var="1/d", allow_query_label=False):
        store_params(self, locals())

    def _fit(self, X, y):
        d = X.shape[2] - 1
        self.prior_var_ = 1.0 / d if self.prior_var == "1/d" else float(self.prior_var)

    def _predict(self, X):
        return bayes_ridge_predict(
            X, noise_var=float(self.noise_var), prior_var=self.prior_var_, allow_query_label=True
        )
