"""CAPASimilarity: CAPA between a set of scikit-learn classifiers, out of fold."""

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import check_cv, cross_val_predict
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import N_JOBS
from ..utils._params import store_params
from ..utils._progress import Progress
from ..utils.validation import _string_error, check_not_complex, validate_input
from ._capa import capa_matrix


def _refit_was_done(self):
    if self.refit or self.cv == "prefit":
        return True
    raise AttributeError(
        "similarity(X, y) needs the estimators fitted on all of fit's rows, which "
        "CAPASimilarity(refit=False) does not fit. Set refit=True (the default) to use it."
    )


class CAPASimilarity(BaseEstimator):
    """How alike a set of classifiers are, beyond what their accuracies imply.

    ``fit`` collects each classifier's out-of-fold class probabilities (as
    :func:`~sklearn.model_selection.cross_val_predict` does) and stores the matrix of
    pairwise CAPA (chance adjusted probabilistic agreement) in ``similarity_``. Two models
    score high when they put probability on the same options, and in particular make the
    same mistakes; two independent models of any accuracies score 0.

    ``X`` is handed to the estimators as it is (a pandas frame with text or NaN columns
    works when every estimator handles it, e.g. a Pipeline that encodes its columns);
    CAPASimilarity itself only checks that ``X`` and ``y`` have the same number of rows and
    records ``n_features_in_`` (and ``feature_names_in_`` for a frame).

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
        Number of CPU workers: joblib workers of the cross-validation fits. ``None`` means
        1 unless in a :func:`joblib.parallel_config` context; -1 means every core.
    refit : bool, default=True
        After cross-validation, also fit every estimator on all of ``(X, y)`` and keep it in
        ``estimators_``, as :class:`~sklearn.model_selection.GridSearchCV` refits its best
        estimator: :meth:`similarity` compares those fitted estimators on new data.
        ``refit=False`` skips these fits when only ``similarity_`` and ``accuracy_`` are
        wanted (``similarity`` and ``estimators_`` are then not available). Ignored with
        ``cv="prefit"``, whose estimators are already fitted.
    verbose : int, default=0
        0 is silent; 1 prints a line per estimator (its out-of-fold accuracy and the time
        since ``fit`` started) and one per refit; a larger value also passes
        ``verbose - 1`` to :func:`~sklearn.model_selection.cross_val_predict` (joblib's own
        messages about the folds, on stderr).

    Attributes
    ----------
    estimators_ : list of estimators
        The estimators fitted on all of ``(X, y)`` (the given ones with ``cv="prefit"``);
        not set with ``refit=False``.
    names_ : list of str
        Names of the estimators, in order.
    classes_ : ndarray of shape (n_classes,)
        Class labels seen in ``fit``.
    similarity_ : ndarray of shape (n_estimators, n_estimators)
        Pairwise CAPA on the out-of-fold probabilities; symmetric.
    accuracy_ : ndarray of shape (n_estimators,)
        Each estimator's out-of-fold accuracy.
    n_features_in_ : int
        Number of features seen in ``fit`` (not set when ``X`` is not a table, e.g. a list
        of documents for text pipelines).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.

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
        "n_jobs": N_JOBS,
        "refit": ["boolean"],
        "verbose": ["verbose"],
    }

    @keyword_only_after(1)
    def __init__(self, *, estimators, discrete=False, cv=5, n_jobs=None, refit=True,
                 verbose=0):
        store_params(self, locals())

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
        X : array-like of shape (n_samples, n_features), or any input the estimators take
            Rows the estimators are cross-validated (or, with ``cv="prefit"``, scored) on;
            handed to them as it is.
        y : array-like of shape (n_samples,)
            Class labels; at least two classes.

        Returns
        -------
        self : object
            The fitted instance.
        """
        self._validate_params()
        self.names_ = self._validate_estimators()
        X, y = self._check_X_y(X, y, reset=True)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        if self.classes_.shape[0] < 2:
            raise ValueError(
                f"y has only 1 class; CAPA needs at least 2 options. Got {self.classes_[0]!r} "
                "instead."
            )
        y_index = encoder.transform(y)

        n = len(self.estimators)
        progress = Progress(type(self).__name__, self.verbose, total=n)

        def report(i, name, what, proba):
            # the accuracy of out-of-fold probabilities is the estimator's validation score
            if progress.enabled():
                progress.step(f"{name} ({i}/{n}) {what}",
                              accuracy=np.mean(proba.argmax(axis=1) == y_index))
            return proba

        if self.cv == "prefit":
            estimators = [est for _, est in self.estimators]
            for est in estimators:
                check_is_fitted(est)
            probas = [
                report(i, name, "prefit",
                       self._run(name, X, self._aligned_proba, est, X))
                for i, (name, est) in enumerate(zip(self.names_, estimators), 1)
            ]
            self.estimators_ = estimators
        else:
            cv = check_cv(self.cv, y, classifier=True)
            probas = [
                report(i, name, "out of fold",
                       self._run(name, X, cross_val_predict, clone(est), X, y_index, cv=cv,
                                 method="predict_proba", n_jobs=self.n_jobs,
                                 verbose=max(0, self.verbose - 1)))
                for i, (name, est) in enumerate(self.estimators, 1)
            ]
            if self.refit:
                self.estimators_ = []
                for name, est in self.estimators:
                    self.estimators_.append(self._run(name, X, clone(est).fit, X, y))
                    progress.log(f"{name}: refitted on all rows")
            elif hasattr(self, "estimators_"):
                del self.estimators_
        progress.close()
        self._check_probas(probas, X)
        self.similarity_ = capa_matrix(y_index, probas, discrete=self.discrete)
        self.accuracy_ = np.array([np.mean(p.argmax(axis=1) == y_index) for p in probas])
        return self

    def _check_X_y(self, X, y, *, reset):
        """Check what CAPASimilarity itself needs, leaving ``X`` as it is: as many rows as
        ``y``, class labels in ``y``; record (or, after fit, compare) the features of X."""
        check_consistent_length(X, y)
        check_not_complex(y, "y", self)
        y = column_or_1d(y, warn=True)
        if y.shape[0] == 0:
            raise ValueError(
                "X and y hold no rows; CAPA compares the estimators on at least one row. "
                "Got 0 sample(s) instead."
            )
        if reset:
            check_classification_targets(y)
        X = validate_input(self, X, reset=reset, skip_check_array=True)
        return X, y

    def _run(self, name, X, function, *args, **kwargs):
        """Call ``function`` for estimator ``name``; when it fails on X, say which
        estimator, and what in X it may not take (complex numbers, strings)."""
        try:
            return function(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            who = f"estimator {name!r} ({type(dict(self.estimators)[name]).__name__})"
            check_not_complex(X, "X", who)  # raises the clear error when X is complex
            # a Pipeline (or ColumnTransformer) is where text gets encoded: its own error
            # says more than "X holds strings" would
            encodes = hasattr(dict(self.estimators)[name], "steps")
            clear = None if encodes else _string_error("X", X, who)
            if clear is not None:
                raise type(clear)(
                    f"{clear} CAPASimilarity hands X to every estimator as it is, so each "
                    f"must take it; {who} raised {type(exc).__name__} on it (see above)."
                ) from exc
            exc.add_note(f"Raised by {who} of CAPASimilarity, which hands X to it as it is.")
            raise

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

    @available_if(_refit_was_done)
    def similarity(self, X, y):
        """CAPA between the fitted estimators on held-out data.

        Needs the estimators fitted on all of fit's rows: not available with
        ``refit=False``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or any input the estimators take
            Evaluation data, handed to the estimators as it is.
        y : array-like of shape (n_samples,)
            True labels, among ``classes_``.

        Returns
        -------
        matrix : ndarray of shape (n_estimators, n_estimators)
            Pairwise CAPA.
        """
        check_is_fitted(self)
        X, y = self._check_X_y(X, y, reset=False)
        unseen = np.setdiff1d(y, self.classes_)
        if unseen.size:
            raise ValueError(
                f"y has labels that were not seen in fit (classes_ is {self.classes_!r}). "
                f"Got {unseen!r} instead."
            )
        y_index = np.searchsorted(self.classes_, y)
        probas = [
            self._run(name, X, self._aligned_proba, est, X)
            for name, est in zip(self.names_, self.estimators_)
        ]
        self._check_probas(probas, X)
        return capa_matrix(y_index, probas, discrete=self.discrete)

    def _check_probas(self, probas, X):
        """Name the estimator (and the likely cause) when its probabilities are not finite."""
        for name, proba in zip(self.names_, probas):
            bad = ~np.all(np.isfinite(proba), axis=1)
            if np.any(bad):
                row = int(np.flatnonzero(bad)[0])
                try:  # X as the estimators got it: a table of numbers, or anything else
                    values = np.abs(np.asarray(_safe_indexing(X, row), dtype=np.float64))
                    largest = f", whose largest value has magnitude {float(np.max(values)):.3g}"
                except (TypeError, ValueError, IndexError):
                    largest = ""
                raise ValueError(
                    f"estimator {name!r} returned NaN or infinite probabilities on "
                    f"{int(bad.sum())} of the {bad.shape[0]} rows of X (first row {row}"
                    f"{largest}); CAPA needs finite "
                    "probabilities. Rescale X (e.g. StandardScaler in each estimator's "
                    "Pipeline) or check that estimator. Got non-finite probabilities instead."
                )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        # X goes to the estimators untouched: it may hold NaN where they all take NaN
        try:
            tags.input_tags.allow_nan = all(
                get_tags(est).input_tags.allow_nan for _, est in self.estimators
            )
        except (TypeError, ValueError, AttributeError):  # estimators not valid yet
            pass
        return tags
