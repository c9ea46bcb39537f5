"""CAPASimilarity: CAPA between a set of scikit-learn classifiers, out of fold."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import check_cv, cross_val_predict
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ..utils._deprecation import keyword_only_after
from ..utils.validation import validate_input
from ._capa import capa_matrix


class CAPASimilarity(BaseEstimator):
    """How alike a set of classifiers are, beyond what their accuracies imply.

    ``fit`` collects each classifier's out-of-fold class probabilities (as
    :func:`~sklearn.model_selection.cross_val_predict` does) and stores the matrix of
    pairwise CAPA (chance adjusted probabilistic agreement) in ``similarity_``. Two models
    score high when they put probability on the same options, and in particular make the
    same mistakes; two independent models of any accuracies score 0.

    Parameters
    ----------
    estimators : list of (str, estimator)
        The classifiers to compare; each needs ``predict_proba``.
    discrete : bool, default=False
        Compare hard predictions (argmax) instead of probability vectors.
    cv : int, cross-validation generator, iterable or "prefit", default=5
        How out-of-fold probabilities are obtained in ``fit``. With ``"prefit"`` the
        estimators are taken as already fitted and ``fit(X, y)`` only scores them on
        ``(X, y)``.
    n_jobs : int, default=None
        Jobs for the cross-validation fits (joblib).

    Attributes
    ----------
    estimators_ : list of estimators
        The estimators fitted on all of ``(X, y)`` (the given ones with ``cv="prefit"``).
    names_ : list of str
        Names of the estimators, in order.
    classes_ : ndarray of shape (n_classes,)
        Class labels seen in ``fit``.
    similarity_ : ndarray of shape (n_estimators, n_estimators)
        Pairwise CAPA on the out-of-fold probabilities; symmetric.
    accuracy_ : ndarray of shape (n_estimators,)
        Each estimator's out-of-fold accuracy.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    capa_matrix : the same matrix from probabilities you already have.

    Notes
    -----
    [1]_ measures the similarity of language models from their answers to multiple-choice
    benchmark items. This class carries the measure over to scikit-learn classifiers: every
    sample is an item whose options are the classes, and each model's probabilities are
    taken out of fold (``cv``), so that no model is scored on rows it was trained on.

    References
    ----------
    .. [1] S. Goel et al., "Great Models Think Alike and this Undermines AI Oversight",
       ICML 2025, arXiv:2502.04313.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from sklearn_icml.metrics import CAPASimilarity
    >>> X, y = load_iris(return_X_y=True)
    >>> sim = CAPASimilarity(estimators=[("lr", LogisticRegression(max_iter=500)),
    ...                                  ("nb", GaussianNB())]).fit(X, y)
    >>> sim.similarity_.shape
    (2, 2)
    >>> bool(abs(sim.similarity_[0, 1] - sim.similarity_[1, 0]) < 1e-12)
    True
    """

    _parameter_constraints = {
        "estimators": [list],
        "discrete": ["boolean"],
        "cv": ["cv_object", StrOptions({"prefit"})],
        "n_jobs": [Interval(numbers.Integral, None, None, closed="neither"), None],
    }

    @keyword_only_after(1)
    def __init__(self, *, estimators, discrete=False, cv=5, n_jobs=None):
        self.estimators = estimators
        self.discrete = discrete
        self.cv = cv
        self.n_jobs = n_jobs

    def _validate_estimators(self):
        if len(self.estimators) < 1:
            raise ValueError(
                "estimators must name at least one (name, estimator) pair. Got "
                f"{self.estimators!r} instead."
            )
        names = []
        for item in self.estimators:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise TypeError(
                    "estimators must be a list of (name, estimator) tuples; got "
                    f"{item!r} instead."
                )
            if not HasMethods(["fit", "predict_proba"]).is_satisfied_by(item[1]):
                raise TypeError(
                    f"estimator {item[0]!r} has no predict_proba; CAPA compares probability "
                    f"vectors, so every estimator must be a probabilistic classifier. Got "
                    f"{item[1]!r} instead."
                )
            names.append(item[0])
        if len(set(names)) != len(names):
            raise ValueError(f"estimator names must be unique; got {names!r} instead.")
        return names

    def fit(self, X, y):
        """Collect out-of-fold probabilities of every estimator and compare them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows the estimators are cross-validated (or, with ``cv="prefit"``, scored) on.
        y : array-like of shape (n_samples,)
            Class labels; at least two classes.

        Returns
        -------
        self : object
            The fitted instance.
        """
        self._validate_params()
        self.names_ = self._validate_estimators()
        X, y = validate_input(self, X, y)
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        if self.classes_.shape[0] < 2:
            raise ValueError(
                f"y has only 1 class; CAPA needs at least 2 options. Got {self.classes_[0]!r} "
                "instead."
            )
        y_index = encoder.transform(y)

        if self.cv == "prefit":
            self.estimators_ = [est for _, est in self.estimators]
            for est in self.estimators_:
                check_is_fitted(est)
            probas = [self._aligned_proba(est, X) for est in self.estimators_]
        else:
            cv = check_cv(self.cv, y, classifier=True)
            probas = [
                cross_val_predict(
                    clone(est), X, y_index, cv=cv, method="predict_proba", n_jobs=self.n_jobs
                )
                for _, est in self.estimators
            ]
            self.estimators_ = [clone(est).fit(X, y) for _, est in self.estimators]
        self._check_probas(probas, X)
        self.similarity_ = capa_matrix(y_index, probas, discrete=self.discrete)
        self.accuracy_ = np.array([np.mean(p.argmax(axis=1) == y_index) for p in probas])
        return self

    def _aligned_proba(self, est, X):
        """predict_proba of ``est`` with columns in the order of ``self.classes_``."""
        proba = est.predict_proba(X)
        est_classes = getattr(est, "classes_", self.classes_)
        aligned = np.zeros((proba.shape[0], self.classes_.shape[0]))
        position = np.searchsorted(self.classes_, est_classes)
        if np.any(position >= self.classes_.shape[0]) or np.any(
            self.classes_[np.minimum(position, self.classes_.shape[0] - 1)] != est_classes
        ):
            raise ValueError(
                f"every estimator must be fitted on classes among those of y "
                f"({self.classes_!r}). Got an estimator with classes {est_classes!r} instead."
            )
        aligned[:, position] = proba
        return aligned

    def similarity(self, X, y):
        """CAPA between the fitted estimators on held-out data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Evaluation data.
        y : array-like of shape (n_samples,)
            True labels, among ``classes_``.

        Returns
        -------
        matrix : ndarray of shape (n_estimators, n_estimators)
            Pairwise CAPA.
        """
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise ValueError(
                f"y must have shape ({X.shape[0]},) to match X. Got {y.shape} instead."
            )
        unseen = np.setdiff1d(y, self.classes_)
        if unseen.size:
            raise ValueError(
                f"y has labels that were not seen in fit (classes_ is {self.classes_!r}). "
                f"Got {unseen!r} instead."
            )
        y_index = np.searchsorted(self.classes_, y)
        probas = [self._aligned_proba(est, X) for est in self.estimators_]
        self._check_probas(probas, X)
        return capa_matrix(y_index, probas, discrete=self.discrete)

    def _check_probas(self, probas, X):
        """Name the estimator (and the likely cause) when its probabilities are not finite."""
        for name, proba in zip(self.names_, probas):
            bad = ~np.all(np.isfinite(proba), axis=1)
            if np.any(bad):
                row = int(np.flatnonzero(bad)[0])
                big = float(np.max(np.abs(X[row]))) if X.shape[1] else 0.0
                raise ValueError(
                    f"estimator {name!r} returned NaN or infinite probabilities on "
                    f"{int(bad.sum())} of the {bad.shape[0]} rows of X (first row {row}, whose "
                    f"largest value has magnitude {big:.3g}); CAPA needs finite "
                    "probabilities. Rescale X (e.g. StandardScaler in each estimator's "
                    "Pipeline) or check that estimator. Got non-finite probabilities instead."
                )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
