"""Stump-forest GAMs: the regressor and the classifier.

Gabidolla and Carreira-Perpinan, "Generalized additive models via direct optimization of
regularized decision stump forests", ICML 2025. The pieces of a fit live next to this module:
:mod:`._binning` (candidate thresholds), :mod:`._encoding` (categories, missing values),
:mod:`._loss` (the losses and their steps), :mod:`._rows` (passes over the rows as sums),
:mod:`._optimizer` (the alternating optimisation), :mod:`._dask` (the fit on dask
partitions), :mod:`._stump_kernels` (numba kernels), :mod:`._inspection` (the results of
the inspection methods, labelled by feature name) and :mod:`._display` (the displays).
"""

import functools
import numbers
import warnings

import numpy as np
import pandas as pd
from scipy.sparse import issparse
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    _fit_context,
    is_classifier,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from ..utils import check_random_state, draw_seed
from ..utils._param_validation import N_JOBS, NON_NEGATIVE_REAL, OPEN_UNIT_INTERVAL, POSITIVE_INT
from ..utils._params import store_params
from ..utils._progress import Progress
from ..utils.validation import validate_input
from . import _dask
from ._display import ShapeFunctionDisplay
from ._encoding import (
    bin_features,
    categorical_mask,
    check_monotonic_cst,
    encode_categories,
    feature_bin_edges,
    is_dataframe,
    learn_categories,
    refuse_text,
)
from ._inspection import FeatureContributions, ShapeFunctions, TermImportances
from ._loss import _LogisticLoss, _SoftmaxLoss, _SquaredLoss
from ._optimizer import fit_stump_forest, split_groups
from ._row_source import InMemoryRows
from ._rows import bin_weights, validation_split

# X is validated as float64, or kept as float32: the binning reads both without a copy
# (:mod:`._binning`), and float32 input fits and predicts as the same values in float64
_BINNED_DTYPES = [np.float64, np.float32]


def _dense_table(X):
    """Whether ``X`` is a numpy array or nested lists (not sparse, not something else)."""
    return isinstance(X, np.ndarray | list | tuple)


def _chunkwise_on_dask(method):
    """``method(X)`` that, for a dask array or DataFrame ``X``, gives a dask array computed
    chunk by chunk (:func:`._dask.predict`)."""

    @functools.wraps(method)
    def on_chunks(self, X):
        if _dask.is_dask_collection(X):
            check_is_fitted(self)
            return _dask.predict(self, X, method.__name__)
        return method(self, X)

    return on_chunks


class _BaseStumpForestGAM(BaseEstimator):
    """Fitting, shape functions and plotting shared by the regressor and the classifier.

    A subclass writes ``_encode_target(X, y)``, which validates the data in memory
    (categorical columns already coded, NaN allowed) and returns ``(X, y, loss)`` with ``y``
    as the loss wants it, and ``_loss_for_target(classes)``, the loss (and ``classes_``).

    ``fit`` is one path for rows in memory and for dask input: it validates the input and
    sets every attribute, then fits the forest on a :class:`._row_source.RowSource` (the
    binned rows in memory, or the persisted partitions of :mod:`._dask`).
    """

    _parameter_constraints = {
        "n_stumps": [POSITIVE_INT, StrOptions({"auto"})],
        "max_iter": [POSITIVE_INT],
        "l2_reg": [NON_NEGATIVE_REAL],
        "min_samples_leaf": [POSITIVE_INT],
        "max_bins": [Interval(numbers.Integral, 2, 65535, closed="both")],
        "categorical_features": ["array-like", StrOptions({"from_dtype"}), None],
        "monotonic_cst": ["array-like", dict, None],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "validation_fraction": [OPEN_UNIT_INTERVAL],
        "n_iter_no_change": [POSITIVE_INT],
        "tol": [NON_NEGATIVE_REAL],
        "init": [StrOptions({"greedy", "random"})],
        "n_bags": [POSITIVE_INT],
        "n_jobs": N_JOBS,
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        n_stumps="auto",
        max_iter=100,
        l2_reg=100.0,
        min_samples_leaf=20,
        max_bins=255,
        categorical_features="from_dtype",
        monotonic_cst=None,
        early_stopping="auto",
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-7,
        init="greedy",
        n_bags=1,
        n_jobs=-1,
        random_state=None,
        verbose=0,
    ):
        store_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # -- input: categorical columns coded, NaN kept ---------------------------------------
    def _names(self, X):
        if is_dataframe(X):
            return [str(c) for c in X.columns]
        return [f"x{j}" for j in range(np.shape(X)[1])]

    def _code_categories_fit(self, X):
        """Learn ``is_categorical_`` and ``categories_``; X with categories coded."""
        by_dtype = isinstance(self.categorical_features, str) or self.categorical_features is None
        if not is_dataframe(X):
            if not _dense_table(X) and (by_dtype or issparse(X)):
                self._categories = None
                return X  # validate_input refuses it, or says what is wrong
            X = np.asarray(X, dtype=object if np.asarray(X).dtype.kind in "USO" else None)
            if X.ndim != 2:
                self._categories = None
                return X  # validate_input says what is wrong
        mask = categorical_mask(X, self.categorical_features)
        refuse_text(X, mask, self, fitted=False)
        if not mask.any():
            self._categories = None
            return X
        self._categories = learn_categories(X, mask, self.max_bins, self._names(X))
        return encode_categories(X, self._categories)

    def _code_categories(self, X):
        categories = getattr(self, "_categories", None)
        if not is_dataframe(X):
            if not _dense_table(X) and (categories is None or issparse(X)):
                return X  # validate_input refuses it, or says what is wrong
            X = np.asarray(X, dtype=object if np.asarray(X).dtype.kind in "USO" else None)
            if X.ndim != 2 or X.shape[1] != self.n_features_in_:
                return X  # validate_input says what is wrong
        elif X.shape[1] != self.n_features_in_:
            return X
        refuse_text(X, self.is_categorical_, self, fitted=True)
        return X if categories is None else encode_categories(X, categories)

    def _feature_names(self):
        """The names of the features: ``feature_names_in_``, else ``x0, x1, ...``."""
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            names = [f"x{j}" for j in range(self.n_features_in_)]
        return np.asarray(names, dtype=object)

    def _bin(self, X):
        """Validated bin codes of ``X`` (shape (n_features, n_samples))."""
        check_is_fitted(self)
        X = validate_input(
            self, self._code_categories(X), reset=False, dtype=_BINNED_DTYPES,
            ensure_all_finite="allow-nan",
        )
        return bin_features(X, self.bin_edges_, self.max_bins)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the stump forest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN marks a missing value. float32 and float64 arrays are
            binned as they are, without a copy (float32 gives the model of its values
            cast to float64); other dtypes are converted to float64. A DataFrame sets
            ``feature_names_in_``, and its ``category`` and text columns are categorical
            features by default (see ``categorical_features``). A dask array or DataFrame (``dask``
            extra) is fitted where its partitions are: only sums over rows reach the
            client, and the model is the one an in-memory fit of the same rows gives
            (with early stopping, other rows are held out: a split per partition).
        y : array-like of shape (n_samples,)
            Numeric target (regressor), or class labels of at least two classes
            (classifier). With dask ``X``, a dask array or Series with the same row chunks.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights multiplying each row's loss (with dask ``X``: a number,
            a numpy array, or a dask array chunked as the rows of ``X``).

        Returns
        -------
        self : object
            The fitted model.
        """
        on_dask = _dask.is_dask_collection(X)  # dask array or DataFrame: rows stay there
        if on_dask:
            X, y, loss, names = self._check_dask_input(X, y)
        else:
            X, y, loss = self._encode_target(self._code_categories_fit(X), y)
            names = list(getattr(self, "feature_names_in_", self._names(X)))
        if on_dask and self.n_bags > 1:
            raise ValueError(
                f"n_bags > 1 is for rows in memory; a dask input is fitted as one forest. "
                f"Pass n_bags=1 or compute X into memory. Got n_bags={self.n_bags!r} instead."
            )
        n_samples, n_features = X.shape
        categories = self._categories or [None] * n_features
        self.is_categorical_ = np.array([c is not None for c in categories], dtype=bool)
        self.categories_ = categories
        monotone = check_monotonic_cst(
            self.monotonic_cst, n_features, self.is_categorical_, names, loss.n_values
        )
        if on_dask:
            weight, w, low, high, total = _dask.weights(sample_weight, X)
            if not (np.isfinite(low) and np.isfinite(high)) or not low >= 0:
                raise ValueError(
                    "sample_weight must be finite and non-negative. Got weights from "
                    f"{low!r} to {high!r} instead."
                )
        else:
            w = _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
            total = w.sum()
        if not total > 0:
            raise ValueError(
                "sample_weight sums to zero; at least one weight must be > 0. Got "
                f"{total!r} instead."
            )
        rng = check_random_state(self.random_state)
        # the edges of a dask input are computed on the rows that the in-memory rule samples
        sample = _dask.binning_sample(X, rng) if on_dask else X
        if on_dask and np.any(np.isinf(sample)):
            raise ValueError("Input X contains infinity.")
        self.bin_edges_ = feature_bin_edges(sample, categories, self.max_bins, rng, names)
        n_edges = np.array([e.shape[0] for e in self.bin_edges_], dtype=np.int64)
        self.do_early_stopping_ = self._early_stopping(n_samples)
        if self.n_bags > 1:
            return self._fit_bags(X, y, w, n_edges, loss, monotone, rng)
        if on_dask:
            train, validation, all_rows = self._dask_rows(X, y, weight, w, rng)
        else:
            train, validation, all_rows = self._memory_rows(X, y, w, rng)
        return self._fit_rows(train, n_edges, loss, monotone, rng, validation, all_rows)

    def _check_dask_input(self, X, y):
        """``(X, y, loss, names)`` of dask input: ``X`` a dask array with its
        categorical columns coded, ``y`` a dask array with the same row chunks; sets
        ``n_features_in_``, ``feature_names_in_`` and the classes."""
        _dask.import_dask()
        columns = getattr(X, "columns", None)
        n_features = len(columns) if columns is not None else (X.shape[1] if X.ndim == 2 else 0)
        names = (
            [str(c) for c in columns] if columns is not None
            else [f"x{j}" for j in range(n_features)]
        )
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None."
            )
        if columns is None and X.ndim != 2:
            raise ValueError(
                f"X must be 2-D (n_samples, n_features). Got shape {X.shape!r} instead."
            )
        mask = categorical_mask(X, self.categorical_features)  # "from_dtype": frames only
        self._categories = (
            _dask.learn_categories(X, mask, self.max_bins, names) if mask.any() else None
        )
        X = _dask.coded_rows(X, self._categories)
        y = _dask.as_dask_array(y, "y")
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D (n_samples,). Got shape {y.shape!r} instead.")
        if X.chunks[0] != y.chunks[0]:
            raise ValueError(
                "the row chunks of y must be those of X (each partition of X with its own "
                "targets); rechunk y with y.rechunk({0: X.chunks[0]}). Got X row chunks "
                f"{X.chunks[0]!r} and y chunks {y.chunks[0]!r} instead."
            )
        if X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(
                f"X must have at least 1 row and 1 column. Got shape {X.shape!r} instead."
            )
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise ValueError(
                "X must be numeric (or its categorical columns named in "
                f"categorical_features). Got dtype {X.dtype} instead."
            )
        classes = None
        if is_classifier(self):
            classes = _dask.labels(y)
            check_classification_targets(classes)
        elif not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
            raise ValueError(
                "y must be numeric for a regressor (strings are never cast to numbers). Got "
                f"dtype {y.dtype} instead."
            )
        loss = self._loss_for_target(classes)
        self.n_features_in_ = n_features
        if columns is not None and all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(list(columns), dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return X, y, loss, names

    def _memory_rows(self, X, y, w, rng):
        """``(train, validation, all_rows)``: the binned rows in memory, split for early
        stopping (``validation``, ``all_rows`` None without it)."""
        xb = bin_features(X, self.bin_edges_, self.max_bins)
        if not self.do_early_stopping_:
            return InMemoryRows(xb, y, w), None, None
        train, val = validation_split(
            X.shape[0], self.validation_fraction, draw_seed(rng),
            y if is_classifier(self) else None,
        )
        validation = InMemoryRows(np.ascontiguousarray(xb[:, val]), y[val], w[val])
        train = InMemoryRows(np.ascontiguousarray(xb[:, train]), y[train], w[train])
        return train, validation, InMemoryRows(xb, y, w)

    def _dask_rows(self, X, y, weight, w, rng):
        """``(train, validation, all_rows)``: the binned partitions of dask input, persisted
        on the workers, with a validation split per partition for early stopping."""
        classes = self.classes_ if is_classifier(self) else None
        splits = None
        if self.do_early_stopping_:
            seeds = np.random.RandomState(draw_seed(rng)).randint(2**31 - 1, size=X.numblocks[0])
            splits = [(self.validation_fraction, int(s), classes is not None) for s in seeds]
        train, validation, all_rows, n_bad = _dask.bin_partitions(
            X, y, weight, w, self.bin_edges_, self.max_bins, classes, splits
        )
        if n_bad[0]:
            raise ValueError(f"Input X contains infinity ({int(n_bad[0])} values).")
        if n_bad[1]:
            raise ValueError(f"Input y contains NaN or infinity ({int(n_bad[1])} values).")
        return train, validation, all_rows

    def _early_stopping(self, n_samples):
        """Whether this fit holds rows out: ``early_stopping``, where "auto" means when
        the forest grows (``n_stumps="auto"``)."""
        early = self.early_stopping
        by_size = self.n_stumps == "auto"
        return (by_size if early == "auto" else bool(early)) and n_samples >= 2

    def _fit_rows(self, train, n_edges, loss, monotone, rng, validation, all_rows):
        """Fit the forest on the binned rows ``train`` (a :class:`._row_source.RowSource`)
        and store it.

        With early stopping, ``validation`` holds the held-out rows and ``all_rows`` every
        row: once the validation loss stops improving, a forest of the best sweep's size is
        fitted afresh on all rows.
        """
        common = self._fit_options(monotone, rng)
        problem, info = fit_stump_forest(
            train, n_edges, loss, n_stumps=self.n_stumps, validation=validation, **common
        )
        self.n_iter_ = info["n_iter"]
        if self.do_early_stopping_:
            self.validation_score_ = info["validation_score"]
            if info["converged"]:
                # the size of the best sweep, fitted afresh on all rows (the validation
                # rows too) until the objective settles
                warm = None
                if self.n_stumps == "auto" and problem.n_stumps:
                    warm = (problem.features, problem.left, problem.leaves)
                problem, info = fit_stump_forest(
                    all_rows, n_edges, loss, n_stumps=max(problem.n_stumps, 1),
                    warm_start=warm, label="refit on all rows, ", **common,
                )
                self.n_iter_ += info["n_iter"]
        self._warn_not_converged(info["converged"])
        self.objective_history_ = info["history"]
        self._store_forest(problem, loss, problem.bin_weight())
        return self

    def _fit_options(self, monotone, rng):
        """The keyword arguments of :func:`._optimizer.fit_stump_forest` that every fit of
        this estimator shares."""
        return dict(
            max_iter=self.max_iter, l2_reg=self.l2_reg, min_samples_leaf=self.min_samples_leaf,
            tol=self.tol, init=self.init, n_jobs=self.n_jobs, rng=rng,
            progress=Progress(type(self).__name__, self.verbose),
            categorical=self.is_categorical_, monotone=monotone,
            missing_bin=self.max_bins, n_iter_no_change=self.n_iter_no_change,
        )

    def _warn_not_converged(self, converged):
        if converged:
            return
        what = (
            "the validation loss was still improving"
            if self.do_early_stopping_
            else "the objective was still falling by more than tol"
        )
        warnings.warn(
            f"{type(self).__name__} stopped at max_iter={self.max_iter} sweeps while "
            f"{what}; increase max_iter.",
            ConvergenceWarning,
            stacklevel=5,
        )

    def _fit_bags(self, X, y, w, n_edges, loss, monotone, rng):
        """Fit ``n_bags`` forests, each on its own random share of the rows, and store their
        average (see ``n_bags``).

        The average of additive models is additive: the bags' stumps side by side, each
        leaf divided by ``n_bags``, and the mean of their intercepts.
        """
        xb = bin_features(X, self.bin_edges_, self.max_bins)
        stratify = y if is_classifier(self) else None
        common = self._fit_options(monotone, rng)
        problems, histories, scores, n_iter, converged = [], [], [], 0, True
        for bag in range(self.n_bags):
            train, held_out = validation_split(
                X.shape[0], self.validation_fraction, draw_seed(rng), stratify
            )
            validation = None
            if self.do_early_stopping_:
                validation = InMemoryRows(np.ascontiguousarray(xb[:, held_out]), y[held_out],
                                          w[held_out])
            rows = InMemoryRows(np.ascontiguousarray(xb[:, train]), y[train], w[train])
            problem, info = fit_stump_forest(
                rows, n_edges, loss, n_stumps=self.n_stumps, validation=validation,
                label=f"bag {bag}, ", **common,
            )
            problems.append(problem)
            histories.append(info["history"])
            scores.append(info["validation_score"])
            n_iter += info["n_iter"]
            converged &= info["converged"]
        self.n_iter_ = n_iter
        self._warn_not_converged(converged)
        self.objective_history_ = histories[0]
        if self.do_early_stopping_:
            self.validation_score_ = scores[0]
        average = Bunch(
            features=np.concatenate([p.features for p in problems]),
            left=np.concatenate([p.left for p in problems]),
            leaves=np.concatenate([p.leaves for p in problems]) / self.n_bags,
            intercept=np.mean([p.intercept for p in problems], axis=0),
        )
        bin_weight = InMemoryRows(xb, y, w).row_sum(bin_weights, problems[0].n_bins)
        self._store_forest(average, loss, bin_weight)
        return self

    def _store_forest(self, problem, loss, bin_weight):
        self._loss = loss
        self._leaves = problem.leaves
        self._intercept = problem.intercept
        self._left = problem.left
        self.features_ = problem.features.copy()
        self.n_stumps_ = int(self.features_.shape[0])
        self.n_splits_ = int(split_groups(problem.features, problem.left)[0].size)
        thresholds, missing_left, left_categories = [], [], []
        for j, left in zip(self.features_, problem.left):
            missing_left.append(bool(left[self.max_bins]))
            if j < 0:
                thresholds.append(np.inf)
                left_categories.append(None)
            elif self.is_categorical_[j]:
                thresholds.append(np.nan)
                n_cat = self.categories_[j].size
                left_categories.append(self.categories_[j][left[:n_cat]])
            else:
                k = int(np.flatnonzero(left[: self.bin_edges_[j].size + 1]).max())
                edges = self.bin_edges_[j]
                thresholds.append(edges[k] if k < edges.size else np.inf)
                left_categories.append(None)
        self.thresholds_ = np.array(thresholds)
        self.missing_go_to_left_ = np.array(missing_left, dtype=bool)
        self.left_categories_ = left_categories
        n_bins = self.max_bins + 1
        table = np.zeros((self.n_features_in_, n_bins, loss.n_values))
        for t in np.flatnonzero(self.features_ >= 0):
            goes = problem.left[t][:, None]
            table[self.features_[t]] += np.where(goes, self._leaves[t, 0], self._leaves[t, 1])
        self._table = table
        self._bin_weight = bin_weight
        if loss.n_values == 1:
            self.intercept_ = float(self._intercept[0])
            self.leaf_values_ = self._leaves[:, :, 0].copy()
        else:
            self.intercept_ = self._intercept.copy()
            self.leaf_values_ = self._leaves.copy()

    # -- shape functions ----------------------------------------------------------------
    def _used_features(self):
        nonzero = np.any(self._leaves != 0, axis=(1, 2)) & (self.features_ >= 0)
        return [int(j) for j in np.unique(self.features_[nonzero])]

    def _shapes(self):
        """feature -> Bunch(kind, thresholds or categories, scores, missing_score)."""
        shapes = {}
        for j in self._used_features():
            table = self._table[j]
            missing = table[self.max_bins]
            if self.is_categorical_[j]:
                n_cat = self.categories_[j].size
                shapes[j] = Bunch(
                    kind="categorical", categories=self.categories_[j],
                    scores=table[:n_cat], missing_score=missing,
                )
                continue
            n_edges = self.bin_edges_[j].size
            stumps = np.flatnonzero(self.features_ == j)
            ks = np.unique([
                int(np.flatnonzero(self._left[t, : n_edges + 1]).max()) for t in stumps
            ])
            ks = ks[ks < n_edges]
            representative = np.concatenate([ks, [n_edges]])
            shapes[j] = Bunch(
                kind="numeric", thresholds=self.bin_edges_[j][ks],
                scores=table[representative], missing_score=missing,
            )
        return shapes

    def shape_functions(self):
        """The fitted shape function of every feature that at least one stump uses.

        Returns
        -------
        shapes : Bunch of feature name to Bunch
            Keyed by feature name (``feature_names_in_``, else ``"x0"``, ``"x1"``, ...), in
            column order. For a numeric feature, ``shapes[name]`` has ``kind="numeric"``,
            ``thresholds`` (sorted, shape (P-1,)) and ``scores`` of shape (P,) (or
            (P, n_classes) for a multiclass classifier): piece ``p`` covers
            ``thresholds[p-1] < x <= thresholds[p]``. A categorical feature has
            ``kind="categorical"``, ``categories`` and one score per category. Both have
            ``missing_score``, the value of a missing ``x`` (and of a category not seen
            in ``fit``). ``f_j(x_j)`` plus ``intercept_``, summed over features, is the
            model's raw prediction (for a classifier the log-odds of ``classes_[1]``, or
            the class logits). A column position as key (the keys of 0.2) still works
            until 0.4, with a FutureWarning.

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn_icml.gam import StumpForestGAMRegressor
        >>> X = pd.DataFrame({"age": [20, 30, 40, 50, 60, 70] * 10,
        ...                   "city": ["Lyon", "Nice", "Paris"] * 20})
        >>> y = X["age"] / 10 + (X["city"] == "Paris")
        >>> model = StumpForestGAMRegressor(n_stumps=4, min_samples_leaf=5,
        ...                                 l2_reg=0.0).fit(X, y)
        >>> shapes = model.shape_functions()
        >>> list(shapes)
        ['age', 'city']
        >>> shapes["city"].kind, shapes["city"].categories.tolist()
        ('categorical', ['Lyon', 'Nice', 'Paris'])
        """
        check_is_fitted(self)
        squeeze = self._leaves.shape[2] == 1
        out = {}
        for j, shape in self._shapes().items():
            if squeeze:
                shape.scores = shape.scores[:, 0]
                shape.missing_score = float(shape.missing_score[0])
            out[j] = shape
        return ShapeFunctions(out, self._feature_names())

    def _contributions(self, xb):
        out = np.zeros((xb.shape[1], xb.shape[0], self._leaves.shape[2]))
        for j in self._used_features():
            out[:, j] = self._table[j, xb[j]]
        return out

    def feature_contributions(self, X):
        """Per-feature terms ``f_j(x_j)`` of the additive model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples whose terms are wanted (NaN and unseen categories take the missing
            value of their feature's shape).

        Returns
        -------
        contributions : pandas.DataFrame of shape (n_samples, n_features)
            One column per feature, named as in :meth:`shape_functions`; the rows keep
            the index of a DataFrame ``X``. ``intercept_ + contributions.sum(axis=1)`` is
            the raw prediction (the regression prediction or the decision function);
            unused features contribute 0. A multiclass classifier has one column per
            class and feature (columns ``(class, feature)``: ``contributions[c]`` are the
            terms of class ``c``). Indexing by position as the ndarray of 0.2
            (``contributions[:, j]``) still works until 0.4, with a FutureWarning.

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn_icml.gam import StumpForestGAMRegressor
        >>> X = pd.DataFrame({"age": [20, 30, 40, 50, 60, 70] * 10,
        ...                   "city": ["Lyon", "Nice", "Paris"] * 20})
        >>> y = X["age"] / 10 + (X["city"] == "Paris")
        >>> model = StumpForestGAMRegressor(n_stumps=4, min_samples_leaf=5,
        ...                                 l2_reg=0.0).fit(X, y)
        >>> terms = model.feature_contributions(X.head(3))
        >>> terms.columns.tolist()
        ['age', 'city']
        >>> bool(abs(model.intercept_ + terms.sum(axis=1) - model.predict(X.head(3))).max()
        ...      < 1e-12)
        True
        """
        out = self._contributions(self._bin(X))
        names = self._feature_names()
        index = X.index if is_dataframe(X) else None
        if out.shape[2] == 1:
            values, columns = out[:, :, 0], pd.Index(names, name="feature")
        else:  # (n, features, classes) -> columns (class, feature)
            values = out.transpose(0, 2, 1).reshape(out.shape[0], -1)
            columns = pd.MultiIndex.from_product(
                [self.classes_, names], names=["class", "feature"]
            )
        return FeatureContributions(values, index=index, columns=columns)

    def term_importances(self):
        """Mean absolute centred contribution of each feature on the training rows.

        As EBM's ``term_importances()``: for feature ``j``, the weighted mean over the
        rows used in ``fit`` of ``|f_j(x_j) - mean f_j|`` (the shape function centred on the
        training rows, so that a constant offset carries no importance); multiclass models
        average over classes. Rows held out for early stopping are not used.

        Returns
        -------
        importances : pandas.Series of shape (n_features,)
            Indexed by feature name, in column order (``.sort_values(ascending=False)``
            ranks them; :class:`TermImportanceDisplay` draws them); zero for features no
            stump uses. An int key (a position, as in the ndarray of 0.2) still works
            until 0.4, with a FutureWarning.

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn_icml.gam import StumpForestGAMRegressor
        >>> X = pd.DataFrame({"age": [20, 30, 40, 50, 60, 70] * 10,
        ...                   "city": ["Lyon", "Nice", "Paris"] * 20})
        >>> y = X["age"] / 10 + (X["city"] == "Paris")
        >>> model = StumpForestGAMRegressor(n_stumps=4, min_samples_leaf=5,
        ...                                 l2_reg=0.0).fit(X, y)
        >>> model.term_importances().sort_values(ascending=False).index.tolist()
        ['age', 'city']
        """
        check_is_fitted(self)
        weight = self._bin_weight[:, :, None]
        total = weight.sum(axis=1, keepdims=True)
        mean = (weight * self._table).sum(axis=1, keepdims=True) / total
        deviation = (weight * np.abs(self._table - mean)).sum(axis=1) / total[:, 0]
        return TermImportances(
            deviation.mean(axis=1),
            index=pd.Index(self._feature_names(), name="feature"),
            name="importance",
        )

    def _raw_predict(self, X):
        xb = self._bin(X)
        return self._intercept[None, :] + self._contributions(xb).sum(axis=1)

    def plot_shape_functions(self, features=None, *, ncols=3, figsize=None):
        """Draw one panel per feature: :meth:`ShapeFunctionDisplay.from_estimator`'s figure.

        Numeric features are step lines over a rug of the training quantiles (the bin
        edges); categorical features are bars, one per category; a feature whose shape
        gives missing values a value of their own gets a bar "missing" beside it. The
        display (``plot`` extra) has more options: the x scale (``"log"``,
        ``"quantile"``), the class of interest, Axes to draw into.

        Parameters
        ----------
        features : list of str or int, default=None
            Features to draw, by name or column index; by default every feature used by
            a stump, in column order.
        ncols : int, default=3
            Panels per row.
        figsize : tuple of float, default=None
            Figure size; by default 3.4 x 2.8 inches per panel.

        Returns
        -------
        fig : matplotlib.figure.Figure
            The figure; multiclass models draw one line (or bar group) per class.
        """
        display = ShapeFunctionDisplay.from_estimator(
            self, features, n_cols=ncols, figsize=figsize
        )
        return display.figure_


class StumpForestGAMRegressor(RegressorMixin, _BaseStumpForestGAM):
    """Additive regression model: a forest of stumps optimised jointly.

    ``F(x) = intercept_ + sum_t s_t(x)``, each stump ``s_t`` taking ``a_t`` when
    ``x[d_t] <= theta_t`` and ``c_t`` otherwise; grouping the stumps by feature gives one
    step shape function per feature. All stumps are fitted on one objective, the squared
    loss plus an L2 penalty on the leaves, by alternating an exact search for each stump
    (every feature, every bin threshold, by prefix sums) with a joint ridge refit of all
    leaves (Cholesky, unpenalised intercept).

    Parameters
    ----------
    n_stumps : int or "auto", default="auto"
        Number of stumps T. ``"auto"`` chooses T on a path of growing forests: each
        round grows the forest by a quarter (at least 5 stumps; the new stumps each the
        best on the current residual), then runs one sweep over all its stumps, warm
        started from the previous round, and scores the validation rows. The path stops
        once the forest is twice the best round's size and ``n_iter_no_change`` rounds
        (at most the 4 rounds that double the forest) have not improved the validation
        loss by more than ``tol``. Its stump steps add up to a few sweeps of the largest
        forest, not to the square of its size. The forest of the best round's size is
        then fitted on all rows (the validation rows too), warm started from the path's
        forest, so that the whole search costs little more than one fit of that size
        (as early stopping does in gradient boosting, on one validation split at every
        data size). An integer fixes T. The model has at most ``3 T + 1``
        parameters (a threshold or category set and two leaf values per stump, plus the
        intercept).
    max_iter : int, default=100
        Most sweeps (a stump step on every stump, then one leaf step), and most rounds of
        the size path of ``n_stumps="auto"``. A ``ConvergenceWarning`` says
        when the fit ends here with the objective (or the validation loss) still falling.
    l2_reg : float, default=100.0
        L2 penalty on the leaf values, in units of sample weight: the objective adds
        ``l2_reg * h0 / 2 * sum_t (a_t^2 + c_t^2)``, where ``h0`` is the loss's Hessian per
        unit weight at the best constant (1 for the squared loss, ``p (1 - p)`` for the
        logistic loss at the base rate ``p``, the mean of ``p_k (1 - p_k)`` over classes
        for the softmax loss), so that a leaf is shrunk as by ``l2_reg`` extra rows of
        zero residual whatever the loss. The intercept is not penalised. 0 is allowed;
        larger values shrink each stump, so that ``n_stumps="auto"`` grows more, smaller
        stumps (as a smaller learning rate does in boosting). On many rows of a smooth
        effect a larger value (such as 1000), with finer bins (``max_bins``), follows it
        more closely, for more CPU; at the default bins it also keeps more stumps off
        features the target does not use, which the best of every feature and threshold
        otherwise fits to noise.
    min_samples_leaf : int, default=20
        Fewest training rows in each leaf of a stump. The count is unweighted even when
        ``sample_weight`` is given. A stump with no valid split stays a zero stump.
    max_bins : int, default=255
        Candidate thresholds are midpoints between consecutive distinct values, or, for
        features with more than ``max_bins`` distinct values, ``max_bins - 1`` quantiles
        (computed on at most 200,000 rows drawn with ``random_state``). Missing values get
        a bin of their own (code ``max_bins``). A categorical feature may have at most
        ``max_bins`` categories.
        More bins put a threshold nearer to where the paper's search over every value
        would: a sharp step inside a bin leaves some of that bin's rows on the wrong side,
        which matters when there are many rows. Each stump step scans every bin, and the
        pair counts that spare unweighted fits a pass over the rows per stump step are off
        once their table, which grows with the square of ``max_bins``, exceeds half the
        size of ``X`` as float64.
    categorical_features : "from_dtype", array-like of int, str or bool, or None, \
            default="from_dtype"
        Which features are categorical. ``"from_dtype"`` takes the DataFrame columns of
        ``category`` dtype, as HistGradientBoosting does, and its text columns (pandas
        string dtypes, and object columns holding strings), as EBM does; else indices,
        column names, or a boolean mask; None: none. A stump on a categorical feature
        sends a set of categories left (the best set, found by sorting the categories by
        their gradient/Hessian ratio). Missing values (NaN, None, ``pd.NA``) and
        categories not seen in ``fit`` share the missing bin. Text in a column that is not
        categorical is refused with a ValueError that says how to make it categorical.
    monotonic_cst : array-like of int of shape (n_features,), dict or None, default=None
        Monotone constraint per feature: 1 increasing, -1 decreasing, 0 none (a dict maps
        feature names or indices to constraints). Held exactly: every stump on a
        constrained feature has its leaves ordered (right minus left of the constraint's
        sign), in the stump step and in the leaf step (a convex problem solved by cvxpy).
        Not for categorical features nor multiclass models. The missing value of a
        constrained feature is not constrained.
    early_stopping : "auto" or bool, default="auto"
        Hold out ``validation_fraction`` of the rows (stratified for classifiers) and stop
        when their mean loss has not improved by more than ``tol`` in
        ``n_iter_no_change`` sweeps. With ``n_stumps="auto"`` this chooses the size (see
        ``n_stumps``), and the final forest of that size is fitted on all rows; with a
        fixed ``n_stumps`` the forest of the best sweep is kept (as it is also when
        ``max_iter`` ends the size search). ``"auto"`` is on when ``n_stumps="auto"``.
        Without early stopping, the fit stops at the first sweep that lowers the objective
        per unit of sample weight by at most ``tol``.
    validation_fraction : float, default=0.1
        Share of the rows held out for early stopping.
    n_iter_no_change : int, default=10
        Sweeps (rounds of the size path, at most 4 there) without improvement of the
        validation loss before stopping.
    tol : float, default=1e-7
        Smallest improvement that counts, of the mean validation loss (early stopping) or
        of the objective per unit of sample weight.
    init : {"greedy", "random"}, default="greedy"
        ``"greedy"`` adds the stumps one at a time, each the best stump on the current
        residual; ``"random"`` draws a random feature and threshold per stump with zero
        leaves.
    n_bags : int, default=1
        Number of forests averaged (beyond [1]_; 1 is the paper's single forest). Each
        bag holds out its own random ``validation_fraction`` of the rows and fits a forest
        on the rest (early-stopped on its held-out rows when early stopping is on, and not
        refitted on all rows); the model is their average, itself an additive model of
        ``n_bags`` times as many stumps, whose shape functions have finer steps. Costs
        ``n_bags`` fits. In memory only (not for dask input).
    n_jobs : int or None, default=-1
        Number of CPU workers: threads of the numba kernels (parallel over features). -1
        means every core; None means 1 unless in a :func:`joblib.parallel_config` context.
        Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seeds the order in which stumps are visited, the random init, the validation split
        and the rows used for binning.
    verbose : int, default=0
        Print one line per sweep (objective, validation loss, stumps used, elapsed time)
        when > 0.

    Attributes
    ----------
    intercept_ : float
        The constant term.
    leaf_values_ : ndarray of shape (n_stumps_, 2)
        Left and right value ``(a_t, c_t)`` of each stump.
    features_ : ndarray of shape (n_stumps_,)
        Feature of each stump; -1 marks a zero stump (no valid split, leaves 0).
    thresholds_ : ndarray of shape (n_stumps_,)
        Threshold of each numeric stump: rows with ``x[features_[t]] <= thresholds_[t]``
        take the left leaf; ``inf`` for a stump that splits missing from present values
        and for a zero stump; NaN for a categorical stump.
    left_categories_ : list of (ndarray or None)
        Per stump, the categories that take the left leaf (None for numeric stumps).
    missing_go_to_left_ : ndarray of bool of shape (n_stumps_,)
        Whether missing values (and unseen categories) take the left leaf. Chosen by the
        objective when the feature had missing values in ``fit``; otherwise they go to the
        leaf with more training rows.
    n_stumps_ : int
        Number of stumps (zero stumps included; all bags' with ``n_bags > 1``).
    n_splits_ : int
        Number of distinct splits of the non-zero stumps. Stumps on one feature that send
        the same bins (and missing values) left add up to one stump whose leaves are their
        sums: the model is ``n_splits_`` stumps (a threshold or category set and two leaves
        each) and the intercept. The automatic size can grow many stumps on one split
        where ``l2_reg`` is strong for the data.
    is_categorical_ : ndarray of bool of shape (n_features_in_,)
        The categorical features.
    categories_ : list of (ndarray or None)
        Sorted categories of each categorical feature seen in ``fit`` (None for numeric).
    bin_edges_ : list of ndarray
        Candidate thresholds of each feature (for a categorical one, midpoints between
        its category codes).
    objective_history_ : list of float
        Objective ``E`` of the final fit after the initialisation (element 0) and after
        each sweep up to the one kept; non-increasing. With ``n_bags > 1``, the first
        bag's.
    validation_score_ : ndarray
        Negative mean validation loss after the initialisation and each sweep of the
        early-stopped fit, or each round of the size path; only with early stopping. With
        ``n_bags > 1``, the first bag's.
    do_early_stopping_ : bool
        Whether early stopping was used.
    n_iter_ : int
        Sweeps run (with ``n_stumps="auto"``: the rounds of the size path and the sweeps
        of the final fit), summed over the bags.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.

    See Also
    --------
    StumpForestGAMClassifier : the same model for classification.
    sklearn.ensemble.GradientBoostingRegressor : with ``max_depth=1``, boosted stumps.

    Notes
    -----
    The objective is ``E = 1/2 sum_i w_i (y_i - F(x_i))^2 + l2_reg / 2 sum_t (a_t^2 +
    c_t^2)``. The stump step is exact; the leaf step solves the ridge problem exactly.

    As in [1]_, all stumps of the forest are fitted jointly on one regularised objective
    instead of one at a time as in boosting. The details are this implementation's
    choices, not taken from [1]_: the regulariser is the L2 penalty on the leaves plus
    ``min_samples_leaf`` (an unweighted count, so a weight is not the same as a repeated
    row); candidate thresholds are the bins of ``max_bins`` (quantiles, as histogram
    gradient boosting bins them), so a stump search costs O(bins) per feature after one
    histogram pass; the optimiser alternates exact stump steps and a joint leaf step, each
    kept only if ``E`` does not increase, which makes ``objective_history_``
    non-increasing; and the leaf step is a ridge solve by Cholesky (squared loss), Newton's
    method with an Armijo line search (logistic and softmax losses; L-BFGS-B for a
    softmax leaf step of over 2,048 unknowns, whose Hessian would not fit in memory).

    Beyond [1]_, for tabular data: missing values have a bin whose side each stump
    chooses by the exact objective (as HistGradientBoosting does); a categorical stump
    splits the category set, the best split among the prefixes of the categories sorted
    by gradient/Hessian ratio, which is the exact best split of the stump gain (Fisher's
    ordering; for multiclass models the best over one ordering per class, a heuristic);
    the forest size comes from a warm-started path of growing forests scored on held-out
    rows (``n_stumps="auto"``); ``l2_reg`` is in units of rows (the penalty is scaled by
    the loss's Hessian at the base rate); monotone constraints
    are held by ordering the two leaves of every constrained stump, which allows every
    monotone shape on the chosen thresholds. A feature without missing values in ``fit``
    sends missing values at predict time to the leaf with more training rows, stump by
    stump (HistGradientBoosting's rule). [1]_'s total-variation smoothness penalty is not
    implemented.

    Every quantity either step needs is a sum over rows (histograms, normal equations,
    losses), so ``fit`` also takes dask arrays and DataFrames (``dask`` extra): the rows
    stay in their partitions and only those sums travel; the result is the in-memory fit's
    (same stumps), with early stopping on a split drawn per partition.

    References
    ----------
    .. [1] M. Gabidolla and M. A. Carreira-Perpinan, "Generalized additive models via
       direct optimization of regularized decision stump forests", ICML 2025, PMLR 267,
       pp. 18047-18061.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_additive_regression
    >>> from sklearn_icml.gam import StumpForestGAMRegressor
    >>> X, y, f = make_additive_regression(1000, random_state=0)
    >>> model = StumpForestGAMRegressor(n_stumps=30, max_iter=5, l2_reg=1.0,
    ...                                 random_state=0).fit(X, y)
    >>> round(model.score(X, y), 2)
    0.9
    >>> list(model.shape_functions())[:4]
    ['x0', 'x1', 'x2', 'x3']
    """

    def _encode_target(self, X, y):
        # strings are refused, not cast to numbers as y_numeric=True would cast them
        if y is not None:  # else validate_input says that y is required
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
        X, y = validate_input(
            self, X, y, dtype=_BINNED_DTYPES, y_numeric=True, ensure_all_finite="allow-nan"
        )
        return X, np.asarray(y, dtype=np.float64), self._loss_for_target(None)

    def _loss_for_target(self, classes):
        return _SquaredLoss()

    @_chunkwise_on_dask
    def predict(self, X):
        """Predict ``intercept_ + sum_j f_j(x_j)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to predict. A dask array or DataFrame gives a dask array, computed
            chunk by chunk.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions.
        """
        raw = self._raw_predict(X)  # checks that the model is fitted
        return self._loss.inverse_link(raw)


class StumpForestGAMClassifier(ClassifierMixin, _BaseStumpForestGAM):
    """Additive classification model: a forest of stumps optimised jointly.

    Binary problems use the logistic loss on one score ``F(x) = intercept_ + sum_t
    s_t(x)``; K > 2 classes use the softmax cross-entropy with leaf values in ``R^K``.
    Stumps are chosen by exact enumeration of every feature and bin threshold with the
    second-order (Newton) gain, their two leaves solved exactly by Newton's method, and the
    new stump kept only if the objective drops; the leaf step refits all leaves and the
    intercept jointly (Newton; L-BFGS beyond 2,048 unknowns of a multiclass
    leaf step).

    Parameters
    ----------
    n_stumps : int or "auto", default="auto"
        Number of stumps T. ``"auto"`` chooses T on a path of growing forests: each
        round grows the forest by a quarter (at least 5 stumps; the new stumps each the
        best on the current residual), then runs one sweep over all its stumps, warm
        started from the previous round, and scores the validation rows. The path stops
        once the forest is twice the best round's size and ``n_iter_no_change`` rounds
        (at most the 4 rounds that double the forest) have not improved the validation
        loss by more than ``tol``. Its stump steps add up to a few sweeps of the largest
        forest, not to the square of its size. The forest of the best round's size is
        then fitted on all rows (the validation rows too), warm started from the path's
        forest, so that the whole search costs little more than one fit of that size
        (as early stopping does in gradient boosting, on one validation split at every
        data size). An integer fixes T. The model has at most ``3 T + 1``
        parameters (a threshold or category set and two leaf values per stump, plus the
        intercept).
    max_iter : int, default=100
        Most sweeps (a stump step on every stump, then one leaf step), and most rounds of
        the size path of ``n_stumps="auto"``. A ``ConvergenceWarning`` says
        when the fit ends here with the objective (or the validation loss) still falling.
    l2_reg : float, default=100.0
        L2 penalty on the leaf values, in units of sample weight: the objective adds
        ``l2_reg * h0 / 2 * sum_t (a_t^2 + c_t^2)``, where ``h0`` is the loss's Hessian per
        unit weight at the best constant (1 for the squared loss, ``p (1 - p)`` for the
        logistic loss at the base rate ``p``, the mean of ``p_k (1 - p_k)`` over classes
        for the softmax loss), so that a leaf is shrunk as by ``l2_reg`` extra rows of
        zero residual whatever the loss. The intercept is not penalised. 0 is allowed;
        larger values shrink each stump, so that ``n_stumps="auto"`` grows more, smaller
        stumps (as a smaller learning rate does in boosting).
    min_samples_leaf : int, default=20
        Fewest training rows in each leaf of a stump. The count is unweighted even when
        ``sample_weight`` is given. A stump with no valid split stays a zero stump.
    max_bins : int, default=255
        Candidate thresholds are midpoints between consecutive distinct values, or, for
        features with more than ``max_bins`` distinct values, ``max_bins - 1`` quantiles
        (computed on at most 200,000 rows drawn with ``random_state``). Missing values get
        a bin of their own (code ``max_bins``). A categorical feature may have at most
        ``max_bins`` categories.
        More bins put a threshold nearer to where the paper's search over every value
        would: a sharp step inside a bin leaves some of that bin's rows on the wrong side,
        which matters when there are many rows. Each stump step scans every bin.
    categorical_features : "from_dtype", array-like of int, str or bool, or None, \
            default="from_dtype"
        Which features are categorical. ``"from_dtype"`` takes the DataFrame columns of
        ``category`` dtype, as HistGradientBoosting does, and its text columns (pandas
        string dtypes, and object columns holding strings), as EBM does; else indices,
        column names, or a boolean mask; None: none. A stump on a categorical feature
        sends a set of categories left (the best set, found by sorting the categories by
        their gradient/Hessian ratio). Missing values (NaN, None, ``pd.NA``) and
        categories not seen in ``fit`` share the missing bin. Text in a column that is not
        categorical is refused with a ValueError that says how to make it categorical.
    monotonic_cst : array-like of int of shape (n_features,), dict or None, default=None
        Monotone constraint per feature: 1 increasing, -1 decreasing, 0 none (a dict maps
        feature names or indices to constraints). Held exactly: every stump on a
        constrained feature has its leaves ordered (right minus left of the constraint's
        sign), in the stump step and in the leaf step (a convex problem solved by cvxpy).
        Not for categorical features nor multiclass models. The missing value of a
        constrained feature is not constrained.
    early_stopping : "auto" or bool, default="auto"
        Hold out ``validation_fraction`` of the rows (stratified for classifiers) and stop
        when their mean loss has not improved by more than ``tol`` in
        ``n_iter_no_change`` sweeps. With ``n_stumps="auto"`` this chooses the size (see
        ``n_stumps``), and the final forest of that size is fitted on all rows; with a
        fixed ``n_stumps`` the forest of the best sweep is kept (as it is also when
        ``max_iter`` ends the size search). ``"auto"`` is on when ``n_stumps="auto"``.
        Without early stopping, the fit stops at the first sweep that lowers the objective
        per unit of sample weight by at most ``tol``.
    validation_fraction : float, default=0.1
        Share of the rows held out for early stopping.
    n_iter_no_change : int, default=10
        Sweeps (rounds of the size path, at most 4 there) without improvement of the
        validation loss before stopping.
    tol : float, default=1e-7
        Smallest improvement that counts, of the mean validation loss (early stopping) or
        of the objective per unit of sample weight.
    init : {"greedy", "random"}, default="greedy"
        ``"greedy"`` adds the stumps one at a time, each the best stump on the current
        residual; ``"random"`` draws a random feature and threshold per stump with zero
        leaves.
    n_bags : int, default=1
        Number of forests averaged (beyond [1]_; 1 is the paper's single forest). Each
        bag holds out its own random ``validation_fraction`` of the rows and fits a forest
        on the rest (early-stopped on its held-out rows when early stopping is on, and not
        refitted on all rows); the model is their average, itself an additive model of
        ``n_bags`` times as many stumps, whose shape functions have finer steps. Costs
        ``n_bags`` fits. In memory only (not for dask input).
    n_jobs : int or None, default=-1
        Number of CPU workers: threads of the numba kernels (parallel over features). -1
        means every core; None means 1 unless in a :func:`joblib.parallel_config` context.
        Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seeds the order in which stumps are visited, the random init, the validation split
        and the rows used for binning.
    verbose : int, default=0
        Print one line per sweep (objective, validation loss, stumps used, elapsed time)
        when > 0.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    intercept_ : float or ndarray of shape (n_classes,)
        The constant term (a float for binary problems, the log-odds of ``classes_[1]``).
    leaf_values_ : ndarray of shape (n_stumps_, 2) or (n_stumps_, 2, n_classes)
        Left and right value of each stump.
    features_ : ndarray of shape (n_stumps_,)
        Feature of each stump; -1 marks a zero stump (no valid split, leaves 0).
    thresholds_ : ndarray of shape (n_stumps_,)
        Threshold of each numeric stump: rows with ``x[features_[t]] <= thresholds_[t]``
        take the left leaf; ``inf`` for a stump that splits missing from present values
        and for a zero stump; NaN for a categorical stump.
    left_categories_ : list of (ndarray or None)
        Per stump, the categories that take the left leaf (None for numeric stumps).
    missing_go_to_left_ : ndarray of bool of shape (n_stumps_,)
        Whether missing values (and unseen categories) take the left leaf. Chosen by the
        objective when the feature had missing values in ``fit``; otherwise they go to the
        leaf with more training rows.
    n_stumps_ : int
        Number of stumps (zero stumps included; all bags' with ``n_bags > 1``).
    n_splits_ : int
        Number of distinct splits of the non-zero stumps. Stumps on one feature that send
        the same bins (and missing values) left add up to one stump whose leaves are their
        sums: the model is ``n_splits_`` stumps (a threshold or category set and two leaves
        each) and the intercept. The automatic size can grow many stumps on one split
        where ``l2_reg`` is strong for the data.
    is_categorical_ : ndarray of bool of shape (n_features_in_,)
        The categorical features.
    categories_ : list of (ndarray or None)
        Sorted categories of each categorical feature seen in ``fit`` (None for numeric).
    bin_edges_ : list of ndarray
        Candidate thresholds of each feature (for a categorical one, midpoints between
        its category codes).
    objective_history_ : list of float
        Objective ``E`` of the final fit after the initialisation (element 0) and after
        each sweep up to the one kept; non-increasing. With ``n_bags > 1``, the first
        bag's.
    validation_score_ : ndarray
        Negative mean validation loss after the initialisation and each sweep of the
        early-stopped fit, or each round of the size path; only with early stopping. With
        ``n_bags > 1``, the first bag's.
    do_early_stopping_ : bool
        Whether early stopping was used.
    n_iter_ : int
        Sweeps run (with ``n_stumps="auto"``: the rounds of the size path and the sweeps
        of the final fit), summed over the bags.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.

    See Also
    --------
    StumpForestGAMRegressor : the same model for regression.
    sklearn.ensemble.GradientBoostingClassifier : with ``max_depth=1``, boosted stumps.

    Notes
    -----
    As in [1]_, all stumps of the forest are fitted jointly on one regularised objective
    instead of one at a time as in boosting. The details are this implementation's
    choices, not taken from [1]_: the regulariser is the L2 penalty on the leaves plus
    ``min_samples_leaf`` (an unweighted count, so a weight is not the same as a repeated
    row); candidate thresholds are the bins of ``max_bins`` (quantiles, as histogram
    gradient boosting bins them), so a stump search costs O(bins) per feature after one
    histogram pass; the optimiser alternates exact stump steps and a joint leaf step, each
    kept only if ``E`` does not increase, which makes ``objective_history_``
    non-increasing; and the leaf step is a ridge solve by Cholesky (squared loss), Newton's
    method with an Armijo line search (logistic and softmax losses; L-BFGS-B for a
    softmax leaf step of over 2,048 unknowns, whose Hessian would not fit in memory).

    Beyond [1]_, for tabular data: missing values have a bin whose side each stump
    chooses by the exact objective (as HistGradientBoosting does); a categorical stump
    splits the category set, the best split among the prefixes of the categories sorted
    by gradient/Hessian ratio, which is the exact best split of the stump gain (Fisher's
    ordering; for multiclass models the best over one ordering per class, a heuristic);
    the forest size comes from a warm-started path of growing forests scored on held-out
    rows (``n_stumps="auto"``); ``l2_reg`` is in units of rows (the penalty is scaled by
    the loss's Hessian at the base rate); monotone constraints
    are held by ordering the two leaves of every constrained stump, which allows every
    monotone shape on the chosen thresholds. A feature without missing values in ``fit``
    sends missing values at predict time to the leaf with more training rows, stump by
    stump (HistGradientBoosting's rule). [1]_'s total-variation smoothness penalty is not
    implemented.

    Every quantity either step needs is a sum over rows (histograms, normal equations,
    losses), so ``fit`` also takes dask arrays and DataFrames (``dask`` extra): the rows
    stay in their partitions and only those sums travel; the result is the in-memory fit's
    (same stumps), with early stopping on a split drawn per partition.

    References
    ----------
    .. [1] M. Gabidolla and M. A. Carreira-Perpinan, "Generalized additive models via
       direct optimization of regularized decision stump forests", ICML 2025, PMLR 267,
       pp. 18047-18061.

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
        X, y = validate_input(
            self, X, y, dtype=_BINNED_DTYPES, ensure_all_finite="allow-nan"
        )
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        loss = self._loss_for_target(encoder.classes_)
        y_index = encoder.transform(y)
        return X, y_index.astype(np.float64) if loss.n_values == 1 else y_index, loss

    def _loss_for_target(self, classes):
        """Set ``classes_`` (sorted labels); the logistic loss for two, softmax for more."""
        self.classes_ = classes
        n_classes = classes.shape[0]
        if n_classes < 2:
            raise ValueError(
                "y has only 1 class; a classifier needs at least 2 classes. Got "
                f"{classes[0]!r} instead."
            )
        if n_classes == 2:
            return _LogisticLoss()
        return _SoftmaxLoss(n_classes)

    @_chunkwise_on_dask
    def decision_function(self, X):
        """Raw score: log-odds of ``classes_[1]`` (binary) or class logits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to score. A dask array or DataFrame gives a dask array, computed
            chunk by chunk.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``intercept_ + sum_j f_j(x_j)``.
        """
        raw = self._raw_predict(X)
        return raw[:, 0] if raw.shape[1] == 1 else raw

    @_chunkwise_on_dask
    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples whose class probabilities are wanted. A dask array or DataFrame
            gives a dask array, computed chunk by chunk.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Rows sum to 1; columns follow ``classes_``.
        """
        raw = self._raw_predict(X)  # checks that the model is fitted
        return self._loss.inverse_link(raw)

    @_chunkwise_on_dask
    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples to classify. A dask array or DataFrame gives a dask array, computed
            chunk by chunk.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        raw = self._raw_predict(X)
        return self.classes_[self._loss.predict_index(raw)]
