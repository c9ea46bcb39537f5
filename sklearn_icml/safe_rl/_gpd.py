"""Peaks-over-threshold tail quantiles with a Generalised Pareto fit (EVO's EVT statistic).

numpy/scipy only. :class:`GPDTailQuantile` is the extreme-quantile estimator of EVO
(Gao et al., ICML 2025): the constrained statistic of :class:`EVOAgent`;
:func:`weighted_quantile` is the exact weighted percentile it uses for the threshold and
its empirical fallback.
"""

import numbers
import warnings

import numpy as np
from scipy import optimize, stats
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import validate_params
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import (
    CLOSED_UNIT_INTERVAL,
    OPEN_UNIT_INTERVAL,
    POSITIVE_INT,
    UNIT_INTERVAL_WITHOUT_ONE,
)
from ..utils._params import store_params
from ..utils.validation import validate_input

_FALLBACKS = ("all_zero", "no_exceedances", "few_exceedances", "identical_exceedances",
              "fit_failed")


@keyword_only_after(2)
@validate_params(
    {
        "x": ["array-like"],
        "q": [CLOSED_UNIT_INTERVAL, "array-like"],
        "sample_weight": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def weighted_quantile(x, q, *, sample_weight=None):
    """Quantile of ``x`` with frequency weights, interpolated as ``np.quantile`` "linear".

    A weight counts its sample that many times: with integer weights the result equals
    ``np.quantile(np.repeat(x, sample_weight), q)`` exactly, and with unit weights it is
    ``np.quantile(x, q)``. Non-integer weights interpolate the same rule on the
    cumulative weights. Scale importance weights to mean 1 before passing them.

    Parameters
    ----------
    x : array-like of shape (n_samples,)
        Values.
    q : float or array-like of float in [0, 1]
        Quantile level(s).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative frequency weights; None means all ones.

    Returns
    -------
    quantile : float or ndarray
        The weighted quantile(s).

    Examples
    --------
    >>> from sklearn_icml.safe_rl import weighted_quantile
    >>> float(weighted_quantile([1.0, 2.0, 3.0], 0.5, sample_weight=[1, 0, 3]))
    3.0
    """
    x = np.asarray(x, dtype=float).ravel()
    w = np.ones_like(x) if sample_weight is None else np.asarray(sample_weight, float).ravel()
    if x.shape != w.shape:
        raise ValueError(
            f"sample_weight must have the shape of x {x.shape}. Got {w.shape} instead."
        )
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be finite and non-negative.")
    keep = w > 0
    x, w = x[keep], w[keep]
    if x.size == 0:
        raise ValueError("sample_weight sums to 0: no sample to take a quantile of.")
    order = np.argsort(x, kind="stable")
    x, w = x[order], w[order]
    cum = np.cumsum(w)
    qs = np.asarray(q, dtype=float)
    if np.any((qs < 0) | (qs > 1)):
        raise ValueError(f"q must be in [0, 1]. Got {q!r} instead.")
    h = qs * max(cum[-1] - 1.0, 0.0)
    lo = np.floor(h)
    frac = h - lo
    i_lo = np.minimum(np.searchsorted(cum, lo, side="right"), x.size - 1)
    i_hi = np.minimum(np.searchsorted(cum, lo + 1.0, side="right"), x.size - 1)
    out = x[i_lo] + frac * (x[i_hi] - x[i_lo])
    return float(out) if np.ndim(out) == 0 else out


def _gpd_nll(params, y, w):
    """Weighted negative log-likelihood of GPD(xi, sigma=exp(log_sigma)) at excesses y."""
    xi, log_sigma = params
    sigma = np.exp(log_sigma)
    z = y / sigma
    if abs(xi) < 1e-9:
        terms = log_sigma + z
    else:
        arg = xi * z
        if np.any(arg <= -1.0):
            return 1e300
        terms = log_sigma + (1.0 + 1.0 / xi) * np.log1p(arg)
    return float(np.dot(w, terms) / w.sum())


def fit_gpd(y, sample_weight=None, *, xi_bounds=(-0.5, 1.0)):
    """Weighted maximum-likelihood GPD fit (location 0) to excesses ``y >= 0``.

    ``xi`` is bounded to ``xi_bounds`` and ``sigma > 0``; the start is
    ``scipy.stats.genpareto.fit(y, floc=0)`` clipped to the bounds.

    Parameters
    ----------
    y : array-like of shape (n,)
        Non-negative excesses over the threshold.
    sample_weight : array-like of shape (n,), default=None
        Non-negative weights.
    xi_bounds : tuple of float, default=(-0.5, 1.0)
        Bounds on the shape.

    Returns
    -------
    xi, sigma : float
        The fitted shape and scale (NaN when the fit fails).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import genpareto
    >>> from sklearn_icml.safe_rl._gpd import fit_gpd
    >>> y = genpareto.rvs(0.2, scale=1.0, size=4000, random_state=np.random.default_rng(0))
    >>> xi, sigma = fit_gpd(y)
    >>> bool(abs(xi - 0.2) < 0.06 and abs(sigma - 1.0) < 0.08)
    True
    """
    y = np.asarray(y, dtype=float)
    w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, float)
    lo, hi = float(xi_bounds[0]), float(xi_bounds[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            xi0, _, s0 = stats.genpareto.fit(y, floc=0)
        except Exception:  # scipy's fit may fail on odd data: start from moments
            xi0, s0 = 0.0, float(np.average(y, weights=w))
        if not (np.isfinite(xi0) and np.isfinite(s0) and s0 > 0):
            xi0, s0 = 0.0, max(float(np.average(y, weights=w)), 1e-12)
        xi0 = float(np.clip(xi0, lo + 1e-3, hi - 1e-3))
        # a negative shape must keep every excess inside the support y < -sigma/xi
        if xi0 < 0:
            s0 = max(s0, -xi0 * y.max() * 1.01)
        res = optimize.minimize(
            _gpd_nll, x0=np.array([xi0, np.log(s0)]), args=(y, w), method="L-BFGS-B",
            bounds=[(lo, hi), (None, None)], options={"ftol": 1e-13, "gtol": 1e-10},
        )
    xi, sigma = float(res.x[0]), float(np.exp(res.x[1]))
    if not (np.isfinite(xi) and np.isfinite(sigma) and sigma > 0 and np.isfinite(res.fun)):
        return np.nan, np.nan
    return xi, sigma


def gpd_ppf(p, xi, sigma):
    """Inverse CDF of GPD(xi, sigma) with location 0 (the ``xi = 0`` limit included)."""
    p = np.asarray(p, dtype=float)
    if abs(xi) < 1e-12:
        return -sigma * np.log1p(-p)
    return sigma / xi * ((1.0 - p) ** (-xi) - 1.0)


class GPDTailQuantile(BaseEstimator):
    """Extreme quantile of a cost distribution by peaks over threshold and a GPD fit.

    The threshold ``u`` is the weighted ``threshold_quantile``-quantile of the costs; the
    excesses ``C - u`` of the costs above it are fitted with a Generalised Pareto
    distribution by weighted maximum likelihood, and the overall ``alpha``-quantile is
    ``u + sigma/xi * (((1 - alpha) / (1 - p_u)) ** -xi - 1)``. EVO constrains this
    quantile at ``alpha = p_u + (1 - p_u) * tail_quantile``.

    Fitted on a 1-D vector of costs the fitted attributes are scalars; fitted on a 2-D
    array each column is an independent cost (its own tail) and they are arrays.

    Parameters
    ----------
    threshold_quantile : float in [0, 1), default=0.9
        Level ``p_u`` of the threshold (``cost_buffer_percentile / 100`` in EVO).
    tail_quantile : float in (0, 1), default=0.9
        Level ``p_tail`` inside the tail; the quantile of :meth:`predict` is at
        ``threshold_quantile + (1 - threshold_quantile) * tail_quantile``.
    free_loc : bool, default=False
        If True, fit the GPD with a free location by ``scipy.stats.genpareto.fit`` on the
        sample replicated by its weights (the released code's choice); by default the
        location is 0 (textbook POT) and the fit is the weighted MLE.
    xi_bounds : tuple of float, default=(-0.5, 1.0)
        Bounds on the GPD shape in the weighted MLE.
    min_exceedances : int, default=5
        Fewer exceedances than this fall back to the empirical weighted quantile.
    double_threshold : bool, default=False
        If True, add ``u`` a second time, as the released code does (``2u + G^-1``).

    Attributes
    ----------
    threshold_ : float or ndarray of shape (n_features_in_,)
        The threshold ``u``.
    shape_ : float or ndarray
        Fitted GPD shape ``xi`` (NaN where a fallback was used).
    scale_ : float or ndarray
        Fitted GPD scale ``sigma`` (NaN where a fallback was used).
    loc_ : float or ndarray
        GPD location (0 unless ``free_loc``).
    n_exceedances_ : int or ndarray
        Number of costs strictly above the threshold.
    fallback_ : str, None or list
        None when the GPD quantile is used, else why not: ``"all_zero"`` (every cost 0:
        quantile 0), ``"no_exceedances"`` (quantile ``u``), ``"few_exceedances"``,
        ``"identical_exceedances"`` or ``"fit_failed"`` (empirical weighted quantile).
    alpha_ : float
        The overall level of :meth:`predict`.
    quantile_ : float or ndarray
        The extreme quantile at ``alpha_``.
    n_features_in_ : int
        Number of cost columns (1 for 1-D input).
    feature_names_in_ : ndarray of str
        Column names when fitted on a DataFrame with string column names.

    See Also
    --------
    EVOAgent : Constrained RL agent that constrains this quantile of the episode cost.
    weighted_quantile : The exact weighted percentile used for the threshold.

    References
    ----------
    .. [1] S. Gao, Y. Zhou, S. Shao, H. Luo, Y. Bing, J. Ding, L. Fu and X. Wang,
       "Extreme Value Policy Optimization for Safe Reinforcement Learning", ICML 2025:
       the peaks-over-threshold quantile of the episode cost.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import lomax
    >>> from sklearn_icml.safe_rl import GPDTailQuantile
    >>> C = lomax.rvs(4, size=20000, random_state=np.random.default_rng(0))
    >>> est = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99).fit(C)
    >>> round(est.alpha_, 3), round(est.threshold_, 3), round(est.predict(), 2)
    (0.999, 0.769, 4.73)
    """

    _parameter_constraints = {
        "threshold_quantile": [UNIT_INTERVAL_WITHOUT_ONE],
        "tail_quantile": [OPEN_UNIT_INTERVAL],
        "free_loc": ["boolean"],
        "xi_bounds": [tuple],
        "min_exceedances": [POSITIVE_INT],
        "double_threshold": ["boolean"],
    }

    def __init__(self, *, threshold_quantile=0.9, tail_quantile=0.9, free_loc=False,
                 xi_bounds=(-0.5, 1.0), min_exceedances=5, double_threshold=False):
        store_params(self, locals())

    @staticmethod
    def _ndim(X):
        return X.ndim if hasattr(X, "ndim") else np.asarray(X).ndim

    def _as_2d(self, X):
        return X if self._ndim(X) != 1 else np.asarray(X).reshape(-1, 1)

    @keyword_only_after(3)
    def fit(self, X, y=None, *, sample_weight=None):
        """Fit the threshold and the GPD tail of each cost column.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, n_features)
            Costs (a 1-D vector, or independent cost columns).
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights (importance weights scaled to mean 1).

        Returns
        -------
        self : GPDTailQuantile
            Fitted estimator.
        """
        self._validate_params()
        lo_hi = self.xi_bounds
        if len(lo_hi) != 2 or not lo_hi[0] < lo_hi[1]:
            raise ValueError(
                f"xi_bounds must be a pair (low, high) with low < high. Got {lo_hi!r} instead."
            )
        one_d = self._ndim(X) == 1
        X = validate_input(self, self._as_2d(X), dtype=np.float64, ensure_min_samples=2)
        if sample_weight is not None:
            sw = np.asarray(sample_weight)
            if sw.ndim != 1:
                raise ValueError(
                    f"sample_weight must be 1-D. Got an array of shape {sw.shape} instead."
                )
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not w.sum() > 0:
            raise ValueError(f"sample_weight must not sum to 0. Got sum {w.sum()!r} instead.")
        self.alpha_ = float(
            self.threshold_quantile + (1.0 - self.threshold_quantile) * self.tail_quantile
        )
        cols = [self._fit_column(X[:, j], w) for j in range(X.shape[1])]
        keep = w > 0
        self._data = [(X[keep, j].copy(), w[keep].copy()) for j in range(X.shape[1])]
        self._one_d = one_d
        names = ["threshold_", "shape_", "scale_", "loc_", "n_exceedances_", "fallback_"]
        for k, name in enumerate(names):
            values = [c[k] for c in cols]
            if one_d:
                setattr(self, name, values[0])
            elif name == "fallback_":
                setattr(self, name, values)
            else:
                dtype = int if name == "n_exceedances_" else float
                setattr(self, name, np.asarray(values, dtype=dtype))
        self.quantile_ = self.quantile(self.alpha_)
        return self

    def _fit_column(self, c, w):
        u = weighted_quantile(c, self.threshold_quantile, sample_weight=w)
        exceed = (c > u) & (w > 0)
        n_exc = int(exceed.sum())
        nan = np.nan
        if np.all(c[w > 0] == 0):
            return 0.0, nan, nan, 0.0, n_exc, "all_zero"
        if n_exc == 0:
            return u, nan, nan, 0.0, 0, "no_exceedances"
        if n_exc < self.min_exceedances:
            return u, nan, nan, 0.0, n_exc, "few_exceedances"
        y, wy = c[exceed] - u, w[exceed]
        if np.ptp(y) <= 1e-12 * max(1.0, abs(u)):
            return u, nan, nan, 0.0, n_exc, "identical_exceedances"
        if self.free_loc:
            counts = np.rint(wy / wy.sum() * 1e4).astype(int) if np.ptp(wy) > 0 else 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    xi, loc, sigma = stats.genpareto.fit(np.repeat(y, counts))
                except Exception:
                    xi, loc, sigma = nan, nan, nan
        else:
            (xi, sigma), loc = fit_gpd(y, wy, xi_bounds=self.xi_bounds), 0.0
        if not (np.isfinite(xi) and np.isfinite(sigma) and np.isfinite(loc) and sigma > 0):
            return u, nan, nan, 0.0, n_exc, "fit_failed"
        return u, float(xi), float(sigma), float(loc), n_exc, None

    def quantile(self, alpha):
        """Overall ``alpha``-quantile of the costs.

        Above the threshold level it is ``u + loc + G^-1((alpha - p_u) / (1 - p_u))``
        (plus ``u`` once more if ``double_threshold``); at or below it, and wherever a
        fallback was used, the empirical weighted quantile (0 if every cost is 0, ``u``
        if no cost exceeds ``u``).

        Parameters
        ----------
        alpha : float in (0, 1)
            Quantile level.

        Returns
        -------
        q : float or ndarray of shape (n_features_in_,)
            The quantile (an array when fitted on 2-D costs).
        """
        check_is_fitted(self)
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
            raise TypeError(f"alpha must be a float in (0, 1). Got {alpha!r} instead.")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be a float in (0, 1). Got {alpha!r} instead.")
        p_u = self.threshold_quantile
        out = []
        for j, (c, w) in enumerate(self._data):
            get = (lambda v: v) if self._one_d else (lambda v, j=j: v[j])
            fb, u = get(self.fallback_), get(self.threshold_)
            if fb == "all_zero":
                q = 0.0
            elif fb == "no_exceedances" and alpha > p_u:
                q = u
            elif fb is not None or alpha <= p_u:
                q = weighted_quantile(c, alpha, sample_weight=w)
            else:
                p = (alpha - p_u) / (1.0 - p_u)
                q = u + get(self.loc_) + float(gpd_ppf(p, get(self.shape_), get(self.scale_)))
            if self.double_threshold and fb != "all_zero":
                q += u
            out.append(float(q))
        return out[0] if self._one_d else np.asarray(out)

    def predict(self, X=None):
        """The extreme quantile, or which rows exceed it.

        Parameters
        ----------
        X : None or array-like of shape (n_samples,) or (n_samples, n_features_in_)
            None returns the extreme quantile at ``alpha_``; costs flag the rows where
            any column exceeds its extreme quantile (a catastrophe detector).

        Returns
        -------
        q_or_flags : float, ndarray of shape (n_features_in_,) or of shape (n_samples,)
            ``quantile_`` when ``X`` is None, else 1 for exceeding rows and 0 otherwise.
        """
        check_is_fitted(self)
        if X is None:
            return self.quantile_
        if self._one_d:
            X = self._as_2d(X)
        X = validate_input(self, X, dtype=np.float64, reset=False)
        return np.any(X > np.atleast_1d(self.quantile_), axis=1).astype(int)
