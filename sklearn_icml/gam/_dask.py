"""The stump-forest regressor on dask arrays and dataframes: the rows stay on the workers.

The fit is the alternating optimisation of :mod:`._optimizer`, run on the client, with the rows
in the partitions of the dask input. The binned partitions (uint8 bins and the target) are
persisted on the workers once; after that every quantity the client needs is a sum over
rows, computed on each partition and summed (a tree of sums on the workers, then one
result to the client, in a fixed partition order), so only histograms and normal equations
travel, never rows:

* once: the bin counts, the pair counts of every feature pair
  (:func:`._stump_kernels.pair_counts`), the Hessian histogram, ``sum w`` and ``sum w y``.
  The squared-loss stump step works from the pair counts, so a stump step touches no row;
* once per sweep: the gradient histogram of the current forest;
* per leaf step: the segment sums and the segment Gram matrix (the normal equations of the
  ridge leaf step), and the objective of the proposed leaves.

The forest is sent to the partitions as its segment table (a few kilobytes), from which each
partition recomputes its scores ``F`` when it needs them, so the workers hold no state that
changes during the fit.

Bin edges: the rule of the in-memory fit, on the same rows. With more than
``BINNING_SUBSAMPLE`` (200,000) rows, that many row indices are drawn without replacement
by ``random_state`` and gathered from the chunks; the edges are those of that sample
(:func:`._encoding.feature_bin_edges`). The same data in memory and as dask chunks therefore
has the same edges, and the same forest up to the order in which floating-point sums are
added (with NaN in a column of more than 200,000 rows, the in-memory fit samples that
column's non-missing rows instead, so the edges may differ slightly).

Missing values (NaN) go to the missing bin as in memory. Not on dask (NotImplementedError):
categorical features, ``monotonic_cst``, ``early_stopping=True`` and varying weights;
``early_stopping="auto"`` means no validation split here, as ``early_stopping=False``.
"""

import numbers

import numpy as np

from ..utils import check_random_state
from ..utils._optional import optional_import
from . import _stump_kernels as K
from ._binning import bin_data, sample_rows
from ._encoding import categorical_mask, check_monotonic_cst, feature_bin_edges, mark_missing
from ._loss import _SquaredLoss, solve_psd
from ._optimizer import StumpForestProblem, fit_stump_forest, leaves_are_finite


def is_dask_collection(data):
    """Whether ``data`` is a dask collection (checked without importing dask)."""
    return type(data).__module__.split(".")[0] in ("dask", "dask_expr")


def _as_dask_array(data, name, da):
    """A dask array with known chunk sizes from a dask array, DataFrame or Series."""
    if hasattr(data, "to_dask_array"):  # DataFrame or Series: lengths=True counts the rows
        data = data.to_dask_array(lengths=True)
    if not isinstance(data, da.Array):
        raise TypeError(
            f"{name} must be a dask array, DataFrame or Series when X is a dask collection. "
            f"Got {type(data).__name__!r} instead."
        )
    if any(not np.isfinite(c) for c in data.chunks[0]):  # unknown chunk sizes: count them
        data = data.compute_chunk_sizes()
    return data


def _tree_sum(delayed_parts, dask):
    """Sum of the partitions' results on the workers, pairwise; one value reaches the client."""
    level = list(delayed_parts)
    while len(level) > 1:
        level = [
            dask.delayed(_add)(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
            for i in range(0, len(level), 2)
        ]
    return dask.compute(level[0])[0]


def _add(a, b):
    if isinstance(a, tuple):
        return tuple(_add(u, v) for u, v in zip(a, b))
    return a + b


# ---------------------------------------------------------------------------------------
# per-partition tasks: each gets the persisted (xb, y) of one partition


def _bin_partition(X, y, edges, max_bins):
    # NaN goes to the missing bin ``max_bins``, as in memory; infinities are refused
    X = np.asarray(X, dtype=np.float64)
    n_bad = int(np.count_nonzero(np.isinf(X)))
    y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
    n_bad_y = int(y.size - np.count_nonzero(np.isfinite(y)))
    return mark_missing(bin_data(X, edges, max_bins), X, max_bins), y, n_bad, n_bad_y


def _statistics(part, n_bins, weight):
    xb, y = part[0], part[1]
    w = np.full(y.shape[0], weight)
    return K.bin_histograms(xb, w[:, None], n_bins), np.array([w.sum(), np.dot(w, y)])


def _add_counts(total, part, n_bins, count_dtype):
    # the integer statistics of one more partition added into ``total`` inside one task, so
    # that a worker holds one pair table of a partition at a time, not one per partition
    xb = part[0]
    counts = np.stack(
        [np.bincount(row, minlength=n_bins)[:n_bins] for row in xb]
    ).astype(np.int64)
    pairs = K.pair_counts(xb, n_bins)
    if total is None:
        return counts, pairs.astype(count_dtype, copy=False)
    total_counts, total_pairs = total  # only this task uses total: added in place
    total_counts += counts
    total_pairs += pairs
    return total_counts, total_pairs


def _worker_chains(parts):
    """The partitions grouped by the worker that holds them (one group without distributed)."""
    try:
        from distributed import default_client

        who_has = default_client().who_has(parts)
    except (ImportError, ValueError):
        return [parts]
    chains = {}
    for p in parts:
        workers = who_has.get(p.key) or who_has.get(str(p.key)) or ("",)
        chains.setdefault(sorted(workers)[0], []).append(p)
    return [chains[w] for w in sorted(chains)]


def _scores(xb, forest):
    features, lut, values, intercept = forest
    return K.segment_predict(xb, features, lut, values, intercept)


def _gradient_histogram(part, forest, n_bins, weight):
    xb, y = part[0], part[1]
    F = _scores(xb, forest)
    g = (np.full(y.shape[0], weight) * (F[:, 0] - y))[:, None]
    return K.bin_histograms(xb, g, n_bins)


def _loss(part, forest, weight):
    xb, y = part[0], part[1]
    return np.array([_SquaredLoss().loss(y, _scores(xb, forest), np.full(y.shape[0], weight))])


def _normal_equations(part, seg, weight):
    xb, y = part[0], part[1]
    w = np.full(y.shape[0], weight)
    sums = K.segment_sums(xb, seg.features, seg.lut, np.column_stack([w, w * y]), seg.A.shape[0])
    M = K.segment_gram(xb, seg.features, seg.lut, seg.starts, seg.sizes, seg.pair_a,
                       seg.pair_b, w)
    return sums, M


def ridge_leaves(sums, M, A, sw, swy, l2_reg):
    """The ridge leaf step from its sufficient statistics (as ``_SquaredLoss.fit_leaves``).

    ``sums[:, 0]``, ``sums[:, 1]``: per-segment ``sum w`` and ``sum w y``; ``M``: the
    segment Gram matrix; ``A``: leaves -> segments. Returns ``(intercept, leaves)``.
    """
    import scipy.linalg

    u = A.T @ sums[:, 0]
    r = A.T @ sums[:, 1]
    C = A.T @ M @ A - np.outer(u, u) / sw + l2_reg * np.eye(u.shape[0])
    rhs = r - u * (swy / sw)
    v = solve_psd(C, rhs) if l2_reg > 0 else scipy.linalg.lstsq(C, rhs, cond=1e-12)[0]
    b = (swy - u @ v) / sw
    return np.array([b]), v.reshape(-1, 2, 1)


class _Partitions:
    """The persisted binned partitions, standing for ``xb`` in :class:`_DaskProblem`."""

    def __init__(self, parts, n_samples, n_features, weight, dask):
        self.parts, self.weight, self.dask = parts, weight, dask
        self.shape = (n_features, n_samples)
        self.size = n_samples * n_features

    def map_sum(self, function, *args):
        return _tree_sum([self.dask.delayed(function)(p, *args) for p in self.parts], self.dask)


class _DaskProblem(StumpForestProblem):
    """:class:`._optimizer.StumpForestProblem` whose rows are the partitions of ``xb``.

    Squared loss with a constant weight only: the stump step then works from the pair
    counts (no row is read), the rest goes through :meth:`_Partitions.map_sum`.
    """

    def initial_state(self):
        rows, dask = self.xb, self.xb.dask
        count_dtype = np.int32 if rows.shape[1] < 2**31 else np.int64
        # counts and pair counts are integers, so any order of summing gives the same total:
        # one chain per worker keeps a single pair table per worker alive at a time
        chains = []
        for chain in _worker_chains(rows.parts):
            total = None
            for p in chain:
                total = dask.delayed(_add_counts)(total, p, self.n_bins, count_dtype)
            chains.append(total)
        self.counts, self.pairs = _tree_sum(chains, dask)
        # the float sums in the fixed partition order (as every other sum of the fit)
        self.hist_h, totals = rows.map_sum(_statistics, self.n_bins, rows.weight)
        self.sw, self.swy = float(totals[0]), float(totals[1])
        self.weight = rows.weight
        self.total_weight = self.sw
        self.intercept = np.array([self.swy / self.sw])
        self._F_stale, self.hist_g = False, None

    def state(self):
        return (self.features.copy(), self.left.copy(), self.leaves.copy(),
                self.intercept.copy())

    def restore(self, state):
        self.features, self.left, self.leaves, self.intercept = state
        self._F_stale, self.hist_g = False, None  # the next sweep restarts hist_g

    @property
    def F(self):
        raise AttributeError("the scores of a dask fit stay on the workers")

    @F.setter
    def F(self, value):
        raise AttributeError("the scores of a dask fit stay on the workers")

    def _forest(self, intercept, leaves):
        seg = self.segments()
        return seg.features, seg.lut, seg.A @ leaves.reshape(-1, 1), intercept

    def _sync(self):
        # as reading F in memory: the sweep's stump steps are folded in, hist_g restarts
        if self._F_stale:
            self._F_stale, self.hist_g = False, None

    def gradient_histogram(self):
        return self.xb.map_sum(
            _gradient_histogram, self._forest(self.intercept, self.leaves), self.n_bins,
            self.weight,
        )

    def _data_loss(self, intercept, leaves):
        return float(self.xb.map_sum(_loss, self._forest(intercept, leaves), self.weight)[0])

    def objective(self):
        self._sync()
        return self._data_loss(self.intercept, self.leaves) + self.penalty()

    def leaf_step(self):
        """:meth:`StumpForestProblem.leaf_step` with the normal equations summed over
        partitions."""
        e_old = self.objective()
        if not np.any(self.features >= 0):
            intercept, leaves = np.array([self.swy / self.sw]), self.leaves
        else:
            seg = self.segments()
            sums, M = self.xb.map_sum(_normal_equations, seg, self.weight)
            with np.errstate(all="ignore"):
                intercept, leaves = ridge_leaves(sums, M, seg.A, self.sw, self.swy, self.l2_reg)
            if not leaves_are_finite(intercept, leaves):
                return e_old
        e_new = self._data_loss(intercept, leaves) + self.penalty(leaves)
        if e_new <= e_old:
            self.intercept, self.leaves, self.hist_g = intercept, leaves, None
            return e_new
        return e_old


def _constant_weight(sample_weight, X, da):
    """The one weight of every row; other weights are refused (see :func:`fit`)."""
    if sample_weight is None:
        return 1.0
    if isinstance(sample_weight, numbers.Real):
        low = high = float(sample_weight)
    else:
        if is_dask_collection(sample_weight):
            w = _as_dask_array(sample_weight, "sample_weight", da)
            if w.shape != (X.shape[0],):
                raise ValueError(
                    f"sample_weight must have shape ({X.shape[0]},) like the rows of X. Got "
                    f"{w.shape!r} instead."
                )
            low, high = (float(v) for v in da.compute(w.min(), w.max()))
        else:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.shape != (X.shape[0],):
                raise ValueError(
                    f"sample_weight must have shape ({X.shape[0]},) like the rows of X. Got "
                    f"{w.shape!r} instead."
                )
            low, high = (float(w.min()), float(w.max())) if w.size else (1.0, 1.0)
    if not low > 0:
        raise ValueError(
            "sample_weight must be positive (a dask fit takes one weight for every row). Got "
            f"a smallest weight of {low!r} instead."
        )
    if low != high:
        raise NotImplementedError(
            "a dask fit takes one weight for every row (the stump step works from pair counts "
            "of rows); fit in memory for varying weights. Got weights from "
            f"{low!r} to {high!r} instead."
        )
    return low


def fit(estimator, X, y, sample_weight=None):
    """Fit ``estimator`` (a StumpForestGAMRegressor) on dask ``X`` and ``y``; returns it.

    The fitted model is the plain in-memory estimator: the same attributes as after an
    in-memory fit, nothing that refers to the cluster.
    """
    dask = optional_import("dask")
    da = optional_import("dask.array")
    from sklearn.base import is_regressor

    if not is_regressor(estimator):
        raise NotImplementedError(
            "only StumpForestGAMRegressor fits dask input (the classifiers' stump and leaf "
            "steps need a pass over the rows per step); compute X and y to fit in memory. "
            f"Got {type(estimator).__name__} instead."
        )
    columns = getattr(X, "columns", None)
    X_in = X
    X = _as_dask_array(X, "X", da)
    if y is None:
        raise ValueError(
            "StumpForestGAMRegressor requires y to be passed, but the target y is None."
        )
    y = _as_dask_array(y, "y", da)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features). Got shape {X.shape!r} instead.")
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
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or not (
        np.issubdtype(y.dtype, np.number) or y.dtype == bool
    ):
        raise ValueError(
            f"X and y must be numeric. Got dtypes {X.dtype} and {y.dtype} instead."
        )
    weight = _constant_weight(sample_weight, X, da)
    n_features = X.shape[1]
    names = (
        [str(c) for c in columns] if columns is not None else [f"x{j}" for j in range(n_features)]
    )
    _check_supported(estimator, X_in, n_features, names)

    estimator.n_features_in_ = n_features
    if columns is not None and all(isinstance(c, str) for c in columns):
        estimator.feature_names_in_ = np.asarray(list(columns), dtype=object)
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    estimator._categories = None
    estimator.is_categorical_ = np.zeros(n_features, dtype=bool)
    estimator.categories_ = [None] * n_features
    estimator.do_early_stopping_ = False
    n_samples = X.shape[0]
    X = X.rechunk({1: -1})  # one block per row chunk, all features

    rng = check_random_state(estimator.random_state)
    rows = sample_rows(n_samples, rng)
    sample = (X if rows is None else X[rows]).astype(np.float64).compute()
    if np.any(np.isinf(sample)):
        raise ValueError("Input X contains infinity.")
    # the in-memory rule on the sample (at most BINNING_SUBSAMPLE rows, so no second draw)
    estimator.bin_edges_ = feature_bin_edges(
        sample, estimator.categories_, estimator.max_bins, rng, names
    )
    n_edges = np.array([e.shape[0] for e in estimator.bin_edges_], dtype=np.int64)

    parts = [
        dask.delayed(_bin_partition)(xp, yp, estimator.bin_edges_, estimator.max_bins)
        for xp, yp in zip(X.to_delayed().ravel(), y.to_delayed().ravel())
    ]
    parts = list(dask.persist(*parts))
    n_bad = _tree_sum([dask.delayed(lambda p: np.array(p[2:]))(p) for p in parts], dask)
    if n_bad[0]:
        raise ValueError(f"Input X contains infinity ({int(n_bad[0])} values).")
    if n_bad[1]:
        raise ValueError(f"Input y contains NaN or infinity ({int(n_bad[1])} values).")
    partitions = _Partitions(parts, n_samples, n_features, weight, dask)
    loss = _SquaredLoss()
    problem, info = fit_stump_forest(
        partitions, n_edges, None, None, loss, n_stumps=estimator.n_stumps,
        max_iter=estimator.max_iter, l2_reg=estimator.l2_reg,
        min_samples_leaf=estimator.min_samples_leaf, tol=estimator.tol, init=estimator.init,
        n_jobs=estimator.n_jobs, rng=rng, verbose=estimator.verbose,
        name=type(estimator).__name__, categorical=estimator.is_categorical_,
        monotone=np.zeros(n_features, dtype=np.int64), missing_bin=estimator.max_bins,
        n_iter_no_change=estimator.n_iter_no_change, problem_class=_DaskProblem,
    )
    del parts, partitions  # the persisted partitions are released with their last reference
    estimator.n_iter_ = info["n_iter"]
    # the shared tail of the in-memory fit; the weight per bin is count * the one weight
    estimator._finish_fit(problem, info, loss, problem.counts * weight)
    return estimator


def _check_supported(estimator, X, n_features, names):
    """Refuse, with a clear message, what the dask fit does not do (yet)."""
    if not isinstance(estimator.early_stopping, str) and estimator.early_stopping:
        raise NotImplementedError(
            "a dask fit has no validation split (early_stopping='auto' fits without one on "
            "dask and stops on the training objective, as early_stopping=False); compute X "
            "and y to fit in memory with early stopping. Got early_stopping=True instead."
        )
    if categorical_mask(X, estimator.categorical_features).any():
        raise NotImplementedError(
            "a dask fit takes numeric features only (categories are learned from the rows "
            "in memory); set categorical_features=None, or compute X to fit in memory. Got "
            f"categorical_features={estimator.categorical_features!r} selecting columns "
            "instead."
        )
    monotone = check_monotonic_cst(
        estimator.monotonic_cst, n_features, np.zeros(n_features, dtype=bool), names, 1
    )
    if np.any(monotone):
        raise NotImplementedError(
            "a dask fit has no monotonic constraints (its leaf step is the unconstrained "
            "ridge solve); fit in memory for monotonic_cst. Got "
            f"monotonic_cst={estimator.monotonic_cst!r} instead."
        )


def predict(estimator, X):
    """``estimator.predict`` on each row chunk of dask ``X``: a dask array of shape (n,)."""
    da = optional_import("dask.array")
    if hasattr(X, "map_partitions"):  # DataFrame: each partition predicted with its columns
        pred = X.map_partitions(estimator.predict, meta=np.empty((0,), dtype=np.float64))
        return pred if isinstance(pred, da.Array) else pred.to_dask_array(lengths=True)
    X = _as_dask_array(X, "X", da)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features). Got shape {X.shape!r} instead.")
    return X.rechunk({1: -1}).map_blocks(
        estimator.predict, drop_axis=1, dtype=np.float64, meta=np.empty((0,), np.float64)
    )
