"""Stump-forest GAMs: the regressor and the classifier.

Gabidolla and Carreira-Perpinan, "Generalized additive models via direct optimization of
regularized decision stump forests", ICML 2025. The pieces of a fit live next to this module:
:mod:`._binning` (candidate thresholds), :mod:`._loss` (the losses and their steps),
:mod:`._optimizer` (the alternating optimisation), :mod:`._stump_kernels` (numba kernels) and
:mod:`._plotting` (shape-function plots).
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ..utils import check_random_state
from . import _dask
from ._binning import bin_data, bin_edges
from ._loss import _LogisticLoss, _SoftmaxLoss, _SquaredLoss
from ._optimizer import fit_stump_forest
from ._plotting import plot_shape_functions


class _BaseStumpForestGAM(BaseEstimator):
    """Fitting, shape functions and plotting shared by the regressor and the classifier.

    A subclass writes ``_encode_target(X, y)``, which validates the data and returns
    ``(X, y, loss)`` with ``y`` as the loss wants it.
    """

    _parameter_constraints = {
        "n_stumps": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "l2_reg": [Interval(numbers.Real, 0, None, closed="left")],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_bins": [Interval(numbers.Integral, 2, 65536, closed="both")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "init": [StrOptions({"greedy", "random"})],
        "n_jobs": [
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Integral, None, -1, closed="right"),
            None,
        ],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        n_stumps=100,
        max_iter=20,
        l2_reg=10.0,
        min_samples_leaf=20,
        max_bins=255,
        tol=1e-6,
        init="greedy",
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.n_stumps = n_stumps
        self.max_iter = max_iter
        self.l2_reg = l2_reg
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins
        self.tol = tol
        self.init = init
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the stump forest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (a DataFrame sets ``feature_names_in_``).
        y : array-like of shape (n_samples,)
            Numeric target (regressor), or class labels of at least two classes
            (classifier).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights multiplying each row's loss.

        Returns
        -------
        self : object
            The fitted model.
        """
        if _dask.is_dask_collection(X):  # dask array or DataFrame: rows stay on the workers
            return _dask.fit(self, X, y, sample_weight)
        X, y, loss = self._encode_target(X, y)
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not w.sum() > 0:
            raise ValueError(
                "sample_weight sums to zero; at least one weight must be > 0. Got "
                f"{w.sum()!r} instead."
            )
        rng = check_random_state(self.random_state)
        self.bin_edges_ = bin_edges(X, self.max_bins, rng)
        n_edges = np.array([e.shape[0] for e in self.bin_edges_], dtype=np.int64)
        problem, history, n_iter = fit_stump_forest(
            bin_data(X, self.bin_edges_), n_edges, y, w, loss, n_stumps=self.n_stumps,
            max_iter=self.max_iter, l2_reg=self.l2_reg, min_samples_leaf=self.min_samples_leaf,
            tol=self.tol, init=self.init, n_jobs=self.n_jobs, rng=rng, verbose=self.verbose,
            name=type(self).__name__,
        )
        self.objective_history_ = history
        self.n_iter_ = n_iter
        self.features_ = problem.features.copy()
        self.thresholds_ = np.array(
            [
                self.bin_edges_[j][k] if j >= 0 else np.inf
                for j, k in zip(problem.features, problem.bins)
            ]
        )
        self._loss = loss
        self._leaves = problem.leaves
        self._intercept = problem.intercept
        if loss.n_values == 1:
            self.intercept_ = float(self._intercept[0])
            self.leaf_values_ = self._leaves[:, :, 0].copy()
        else:
            self.intercept_ = self._intercept.copy()
            self.leaf_values_ = self._leaves.copy()
        return self

    # -- shape functions ----------------------------------------------------------------
    def _shapes(self):
        """feature -> (sorted thresholds, piece values of shape (pieces, n_values))."""
        shapes = {}
        nonzero = np.any(self._leaves != 0, axis=(1, 2)) & (self.features_ >= 0)
        for j in np.unique(self.features_[nonzero]):
            stumps = np.flatnonzero(nonzero & (self.features_ == j))
            thresholds = np.unique(self.thresholds_[stumps])
            values = np.zeros((thresholds.shape[0] + 1, self._leaves.shape[2]))
            position = np.searchsorted(thresholds, self.thresholds_[stumps])
            for t, p in zip(stumps, position):
                values[: p + 1] += self._leaves[t, 0]
                values[p + 1 :] += self._leaves[t, 1]
            shapes[int(j)] = (thresholds, values)
        return shapes

    def shape_functions(self):
        """The fitted shape function of every feature that at least one stump uses.

        Returns
        -------
        shapes : dict of int to (ndarray, ndarray)
            ``shapes[j] = (thresholds, values)``: ``thresholds`` (sorted, shape (P-1,)) and
            ``values`` of shape (P,) (or (P, n_classes) for a multiclass classifier); piece
            ``p`` covers ``thresholds[p-1] < x_j <= thresholds[p]``. ``f_j(x_j)`` plus
            ``intercept_``, summed over features, is the model's raw prediction.
        """
        check_is_fitted(self)
        squeeze = self._leaves.shape[2] == 1
        return {
            j: (thr, vals[:, 0] if squeeze else vals) for j, (thr, vals) in self._shapes().items()
        }

    def _contributions(self, X):
        out = np.zeros((X.shape[0], X.shape[1], self._leaves.shape[2]))
        for j, (thresholds, values) in self._shapes().items():
            out[:, j] = values[np.searchsorted(thresholds, X[:, j], side="left")]
        return out

    def feature_contributions(self, X):
        """Per-feature terms ``f_j(x_j)`` of the additive model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples whose terms are wanted.

        Returns
        -------
        contributions : ndarray of shape (n_samples, n_features)
            ``intercept_ + contributions.sum(axis=1)`` is the raw prediction (the regression
            prediction or the decision function); unused features contribute 0. A
            multiclass classifier returns shape (n_samples, n_features, n_classes).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        out = self._contributions(X)
        return out[:, :, 0] if out.shape[2] == 1 else out

    def _raw_predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._intercept[None, :] + self._contributions(X).sum(axis=1)

    def plot_shape_functions(self, features=None, *, ncols=3, figsize=None):
        """Draw one step-function panel per used feature (matplotlib, imported lazily).

        Parameters
        ----------
        features : list of int, default=None
            Features to draw; by default every feature used by a stump, in index order.
        ncols : int, default=3
            Panels per row.
        figsize : tuple of float, default=None
            Figure size; by default 3.2 x 2.6 inches per panel.

        Returns
        -------
        fig : matplotlib.figure.Figure
            The figure; multiclass models draw one line per class.
        """
        return plot_shape_functions(self, features, ncols, figsize)


_PARAMS_DOC = """
    n_stumps : int, default=100
        Number of stumps T; the model has at most ``3 T + 1`` parameters (a threshold and
        two leaf values per stump, plus the intercept).
    max_iter : int, default=20
        Outer iterations (one stump step over all stumps, then one leaf step).
    l2_reg : float, default=10.0
        L2 penalty ``l2_reg / 2 * sum_t (a_t^2 + c_t^2)`` on the leaf values (the intercept
        is not penalised). 0 is allowed; larger values shrink the shape functions.
    min_samples_leaf : int, default=20
        Fewest training rows in each leaf of a stump. The count is unweighted even when
        ``sample_weight`` is given. A stump with no valid split stays a zero stump.
    max_bins : int, default=255
        Candidate thresholds are midpoints between consecutive distinct values, or, for
        features with more than ``max_bins`` distinct values, ``max_bins - 1`` quantiles
        (computed on at most 200,000 rows drawn with ``random_state``).
    tol : float, default=1e-6
        Stop when an iteration lowers the objective by at most ``tol * max(1, |E|)``.
    init : {"greedy", "random"}, default="greedy"
        ``"greedy"`` adds the stumps one at a time, each the best stump on the current
        residual; ``"random"`` draws a random feature and threshold per stump with zero
        leaves.
    n_jobs : int, default=None
        Threads of the numba kernels (parallel over features); None uses numba's default
        (all cores), -1 all cores. Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seeds the order in which stumps are visited, the random init and the rows used
        for binning.
    verbose : int, default=0
        Print the objective after each iteration when > 0.
"""

_ATTRIBUTES_DOC = """
    features_ : ndarray of shape (n_stumps,)
        Feature of each stump; -1 marks a zero stump (no valid split, leaves 0).
    thresholds_ : ndarray of shape (n_stumps,)
        Threshold of each stump: rows with ``x[features_[t]] <= thresholds_[t]`` take the
        left leaf; ``inf`` for a zero stump.
    bin_edges_ : list of ndarray
        Candidate thresholds of each feature.
    objective_history_ : list of float
        Objective ``E`` after the initialisation (element 0) and after each iteration;
        non-increasing.
    n_iter_ : int
        Iterations run.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
"""

_NOTES_DOC = """
    As in [1]_, all stumps of the forest are fitted jointly on one regularised objective
    instead of one at a time as in boosting. The details are this implementation's
    choices, not taken from [1]_: the regulariser is the L2 penalty on the leaves plus
    ``min_samples_leaf`` (an unweighted count, so a weight is not the same as a repeated
    row); candidate thresholds are the bins of ``max_bins`` (quantiles, as histogram
    gradient boosting bins them), so a stump search costs O(bins) per feature after one
    histogram pass; the optimiser alternates exact stump steps and a joint leaf step, each
    kept only if ``E`` does not increase, which makes ``objective_history_``
    non-increasing; and the leaf step is a ridge solve by Cholesky (squared loss), Newton's
    method with an Armijo line search (logistic loss) or L-BFGS-B (softmax loss).
"""

_REFERENCES_DOC = """
    .. [1] M. Gabidolla and M. A. Carreira-Perpinan, "Generalized additive models via
       direct optimization of regularized decision stump forests", ICML 2025, PMLR 267,
       pp. 18047-18061.
"""


class StumpForestGAMRegressor(RegressorMixin, _BaseStumpForestGAM):
    __doc__ = f"""Additive regression model: a forest of stumps optimised jointly.

    ``F(x) = intercept_ + sum_t s_t(x)``, each stump ``s_t`` taking ``a_t`` when
    ``x[d_t] <= theta_t`` and ``c_t`` otherwise; grouping the stumps by feature gives one
    step shape function per feature. All stumps are fitted on one objective, the squared
    loss plus an L2 penalty on the leaves, by alternating an exact search for each stump
    (every feature, every bin threshold, by prefix sums) with a joint ridge refit of all
    leaves (Cholesky, unpenalised intercept).

    Parameters
    ----------{_PARAMS_DOC}
    Attributes
    ----------
    intercept_ : float
        The constant term.
    leaf_values_ : ndarray of shape (n_stumps, 2)
        Left and right value ``(a_t, c_t)`` of each stump.{_ATTRIBUTES_DOC}
    See Also
    --------
    StumpForestGAMClassifier : the same model for classification.
    sklearn.ensemble.GradientBoostingRegressor : with ``max_depth=1``, boosted stumps.

    Notes
    -----
    The objective is ``E = 1/2 sum_i w_i (y_i - F(x_i))^2 + l2_reg / 2 sum_t (a_t^2 +
    c_t^2)``. The stump step is exact; the leaf step solves the ridge problem exactly.
{_NOTES_DOC}
    References
    ----------{_REFERENCES_DOC}
    Examples
    --------
    >>> from sklearn_icml.datasets import make_additive_regression
    >>> from sklearn_icml.gam import StumpForestGAMRegressor
    >>> X, y, f = make_additive_regression(1000, random_state=0)
    >>> model = StumpForestGAMRegressor(n_stumps=30, max_iter=5, l2_reg=1.0,
    ...                                 random_state=0).fit(X, y)
    >>> round(model.score(X, y), 2)
    0.9
    >>> sorted(model.shape_functions())[:4]
    [0, 1, 2, 3]
    """

    def _encode_target(self, X, y):
        # strings are refused, not cast to numbers as y_numeric=True would cast them
        if y is not None:  # else validate_data says that y is required
            values = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
            kind = values.dtype.kind
            if kind in "USa" or (kind == "O" and not all(
                isinstance(v, numbers.Real) and not isinstance(v, bool)
                for v in np.ravel(values)
            )):
                raise ValueError(
                    "y must be numeric for a regressor (strings are never cast to numbers). "
                    f"Got dtype {values.dtype} with values like "
                    f"{np.ravel(values)[:3].tolist()!r} instead."
                )
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        return X, np.asarray(y, dtype=np.float64), _SquaredLoss()

    def predict(self, X):
        """Predict ``intercept_ + sum_j f_j(x_j)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions.
        """
        if _dask.is_dask_collection(X):  # a dask array of the predictions, chunk by chunk
            check_is_fitted(self)
            return _dask.predict(self, X)
        raw = self._raw_predict(X)  # checks that the model is fitted
        return self._loss.inverse_link(raw)


class StumpForestGAMClassifier(ClassifierMixin, _BaseStumpForestGAM):
    __doc__ = f"""Additive classification model: a forest of stumps optimised jointly.

    Binary problems use the logistic loss on one score ``F(x) = intercept_ + sum_t
    s_t(x)``; K > 2 classes use the softmax cross-entropy with leaf values in ``R^K``.
    Stumps are chosen by exact enumeration of every feature and bin threshold with the
    second-order (Newton) gain, their two leaves solved exactly by Newton's method, and the
    new stump kept only if the objective drops; the leaf step refits all leaves and the
    intercept jointly (Newton for binary, L-BFGS for multiclass).

    Parameters
    ----------{_PARAMS_DOC}
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    intercept_ : float or ndarray of shape (n_classes,)
        The constant term (a float for binary problems, the log-odds of ``classes_[1]``).
    leaf_values_ : ndarray of shape (n_stumps, 2) or (n_stumps, 2, n_classes)
        Left and right value of each stump.{_ATTRIBUTES_DOC}
    See Also
    --------
    StumpForestGAMRegressor : the same model for regression.
    sklearn.ensemble.GradientBoostingClassifier : with ``max_depth=1``, boosted stumps.

    Notes
    -----{_NOTES_DOC}
    References
    ----------{_REFERENCES_DOC}
    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn_icml.gam import StumpForestGAMClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = StumpForestGAMClassifier(n_stumps=20, max_iter=3, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> bool(clf.score(X, y) > 0.95)
    True
    """

    def _encode_target(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        n_classes = self.classes_.shape[0]
        if n_classes < 2:
            raise ValueError(
                "y has only 1 class; a classifier needs at least 2 classes. Got "
                f"{self.classes_[0]!r} instead."
            )
        y_index = encoder.transform(y)
        if n_classes == 2:
            return X, y_index.astype(np.float64), _LogisticLoss()
        return X, y_index, _SoftmaxLoss(n_classes)

    def decision_function(self, X):
        """Raw score: log-odds of ``classes_[1]`` (binary) or class logits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``intercept_ + sum_j f_j(x_j)``.
        """
        raw = self._raw_predict(X)
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples whose class probabilities are wanted.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Rows sum to 1; columns follow ``classes_``.
        """
        raw = self._raw_predict(X)  # checks that the model is fitted
        return self._loss.inverse_link(raw)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        raw = self._raw_predict(X)
        return self.classes_[self._loss.predict_index(raw)]
