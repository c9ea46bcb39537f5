"""The stump forest on dask arrays and dataframes: the rows stay on the workers.

The fit is the alternating optimisation of :mod:`._optimizer`, run on the client, with the rows
in the partitions of the dask input. The binned partitions (uint8 bins, the target and the
weights) are persisted on the workers once; after that every quantity the client needs is a
sum over rows (:mod:`._rows`), computed on each partition and summed (a tree of sums on the
workers, then one result to the client, in a fixed partition order), so only histograms,
normal equations and losses travel, never rows:

* once: the bin counts, the ``w`` and ``w y`` histograms of the squared loss, ``sum w`` and
  the target sums of the intercept; with constant weights and the squared loss also the
  pair counts of every feature pair (:func:`._stump_kernels.pair_counts`), from which the
  stump step and the ridge leaf step work without touching a row, and then once per sweep
  the gradient histogram of the forest;
* otherwise per stump step: the gradient (and Hessian) histograms of the forest without the
  stump, and for the classifiers a few sums per Newton step of the two new leaves and the
  losses of the new and the old stump;
* per leaf step: the objective, and without pair counts the sums of its solver (the
  segment sums and segment Gram matrix of the ridge or Newton step, or the gradient of the
  softmax L-BFGS).

The forest is sent to the partitions as its segment table (a few kilobytes), from which each
partition recomputes its scores ``F`` when it needs them, so the workers hold no state that
changes during the fit. Every step is the in-memory one (the losses' code is shared), so the
same rows in memory and as dask chunks give the same forest up to the order in which
floating-point sums are added.

Bin edges: the rule of the in-memory fit, on the same rows. With more than
``BINNING_SUBSAMPLE`` (200,000) rows, that many row indices are drawn without replacement
by ``random_state`` and gathered from the chunks; the edges are those of that sample
(:func:`._encoding.feature_bin_edges`). With NaN in a column of more than 200,000 rows, the
in-memory fit samples that column's non-missing rows instead, so the edges may differ
slightly. Categorical features: the categories are the sorted distinct values seen in the
rows (summed over partitions as sets), as in memory; each partition is coded with them.

Early stopping holds out ``validation_fraction`` of the rows of each partition (stratified by
class for the classifiers, a seed per partition drawn from ``random_state``): the same
fraction as in memory, but other rows than the in-memory split of the same data, so with
early stopping the dask forest is a different (equally valid) fit.
"""

import numbers

import numpy as np

from ..utils import check_random_state, draw_seed
from ..utils._optional import optional_import
from . import _stump_kernels as K
from ._binning import bin_data, sample_rows
from ._encoding import (
    categorical_mask,
    check_monotonic_cst,
    encode_categories,
    feature_bin_edges,
    is_dataframe,
    mark_missing,
    sorted_categories,
)
from ._optimizer import StumpForestProblem
from ._rows import (
    Rows,
    data_loss,
    gradient_histograms,
    leaf_side_terms,
    validation_split,
    weight_histograms,
)


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
# per-partition tasks. A binned partition is the tuple (xb, y, w) with w an array, or one
# float when every row has the same weight (so that constant weights take no memory).


def _rows(part):
    xb, y, w = part
    if np.ndim(w) == 0:
        w = np.full(y.shape[0], float(w))
    return Rows(xb, y, w, False)


def _on_rows(part, function, args):
    return function(_rows(part), *args)


def _bin_partition(X, y, w, edges, max_bins, classes, split):
    """Bin one partition; with ``split = (fraction, seed, stratify)`` also split it into
    training and validation rows. Returns the binned parts and the non-finite counts."""
    X = np.asarray(X, dtype=np.float64)
    n_bad = int(np.count_nonzero(np.isinf(X)))
    if classes is None:  # regression: NaN and infinity refused in y
        y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
        n_bad_y = int(y.size - np.count_nonzero(np.isfinite(y)))
    else:  # class indices, as the loss wants them
        y = np.searchsorted(classes, np.asarray(y).reshape(-1))
        y = y.astype(np.float64) if classes.shape[0] == 2 else y.astype(np.int64)
        n_bad_y = 0
    if w is not None and np.ndim(w):
        w = np.ascontiguousarray(w, dtype=np.float64).reshape(-1)
    xb = mark_missing(bin_data(X, edges, max_bins), X, max_bins)
    counts = np.array([n_bad, n_bad_y])
    if split is None or y.shape[0] < 2:
        return (xb, y, w), None, counts
    fraction, seed, stratify = split
    train, val = validation_split(y.shape[0], fraction, seed, y if stratify else None)

    def take(rows):
        return (np.ascontiguousarray(xb[:, rows]), y[rows], w[rows] if np.ndim(w) else w)

    return take(train), take(val), counts


def _item(binned, k):
    return binned[k]


def _n_rows(part):
    return part[1].shape[0]


def _bin_counts(rows, n_bins):
    return np.stack([np.bincount(r, minlength=n_bins)[:n_bins] for r in rows.xb]).astype(
        np.int64
    )


def _initial_statistics(rows, loss, n_bins):
    hist_h = hist_wy = 0.0
    if loss.exact_stump_step:  # the Hessian of the squared loss is the constant w
        hist_h, hist_wy = weight_histograms(rows, n_bins)
    return (hist_h, hist_wy, float(rows.w.sum()), float(np.dot(rows.w, rows.y)),
            loss.target_sums(rows.y, rows.w))


def _two_losses(rows, loss, new, old):
    return np.array([data_loss(rows, loss, *new)[0], data_loss(rows, loss, *old)[0]])


def _add_counts(total, part, n_bins, count_dtype):
    # the integer statistics of one more partition added into ``total`` inside one task, so
    # that a worker holds one pair table of a partition at a time, not one per partition
    xb = part[0]
    counts = _bin_counts(Rows(xb, None, None), n_bins)
    pairs = K.pair_counts(xb, n_bins)
    if total is None:
        return counts, pairs.astype(count_dtype, copy=False)
    total_counts, total_pairs = total  # only this task uses total: added in place
    total_counts += counts
    total_pairs += pairs
    return total_counts, total_pairs


def _worker_chains(parts):
    """The partitions grouped by the worker that holds them (one group without distributed)."""
    client, futures = _futures_of(parts)
    if client is None:
        return [parts]
    return [[parts[i] for i in rows] for _, rows in _worker_groups(client, futures)]


class _Partitions:
    """The persisted binned partitions, standing for ``xb`` in :class:`_DaskProblem`.

    ``weight``: the one weight of every row, or None when the weights vary.
    """

    def __init__(self, parts, n_samples, n_features, weight, dask):
        self.parts, self.weight, self.dask = parts, weight, dask
        self.shape = (n_features, n_samples)
        self.size = n_samples * n_features
        # on a distributed cluster: one task per worker over the partitions it holds
        self._client, self._futures = _futures_of(parts)
        self._groups = None
        if self._client is not None:
            self._groups = _worker_groups(self._client, self._futures)

    def __add__(self, other):
        return _Partitions(self.parts + other.parts, self.shape[1] + other.shape[1],
                           self.shape[0], self.weight, self.dask)

    def map_sum(self, function, *args):
        """``function(rows, *args)`` on every partition, summed in partition order.

        On a distributed cluster each worker runs one task over the partitions it holds
        and returns their results; the client adds them in partition order (so that the sum
        does not depend on where the partitions are). Without one, a tree of sums.
        """
        if self._client is None:
            delayed = self.dask.delayed
            return _tree_sum(
                [delayed(_on_rows)(p, function, args) for p in self.parts], self.dask
            )
        client = self._client
        tasks = [
            client.submit(_on_partitions, function, args, *[self._futures[i] for i in rows],
                          workers=[worker] if worker else None, allow_other_workers=True,
                          pure=False)
            for worker, rows in self._groups
        ]
        results = [None] * len(self._futures)
        for (_, rows), out in zip(self._groups, client.gather(tasks)):
            for i, r in zip(rows, out):
                results[i] = r
        total = results[0]
        for r in results[1:]:
            total = _add(total, r)
        return total


def _on_partitions(function, args, *parts):
    return [function(_rows(p), *args) for p in parts]


def _worker_groups(client, futures):
    """``[(worker, partition indices)]``: the partitions grouped by a worker holding them."""
    who_has = client.who_has(futures)
    groups = {}
    for i, f in enumerate(futures):
        workers = who_has.get(f.key) or who_has.get(str(f.key)) or ("",)
        groups.setdefault(sorted(workers)[0], []).append(i)
    return [(w or None, groups[w]) for w in sorted(groups)]


def _futures_of(parts):
    """``(client, futures)`` of the persisted ``parts`` on a distributed cluster, else None."""
    try:
        from distributed import default_client, futures_of

        client = default_client()
    except (ImportError, ValueError):
        return None, None
    futures = [futures_of(p) for p in parts]
    if not all(len(f) == 1 for f in futures):
        return None, None
    return client, [f[0] for f in futures]


class _DaskProblem(StumpForestProblem):
    """:class:`._optimizer.StumpForestProblem` whose rows are the partitions of ``xb``.

    Each pass over the rows is a :meth:`row_sum` over the partitions; the stump step's hooks
    compute from the forest's segment table what the in-memory problem reads from ``F``.
    """

    def initial_state(self):
        rows, dask, loss = self.xb, self.xb.dask, self.loss
        self.pairs = None
        if self.use_pairs(rows.shape, loss, rows.weight is not None):
            count_dtype = np.int32 if rows.shape[1] < 2**31 else np.int64
            # counts and pair counts are integers, so any order of summing gives the same
            # total: one chain per worker keeps a single pair table per worker alive at a time
            chains = []
            for chain in _worker_chains(rows.parts):
                total = None
                for p in chain:
                    total = dask.delayed(_add_counts)(total, p, self.n_bins, count_dtype)
                chains.append(total)
            self.counts, self.pairs = _tree_sum(chains, dask)
            self.weight = rows.weight
        else:
            self.counts = self.row_sum(_bin_counts, self.n_bins)
        # the float sums in the fixed partition order (as every other sum of the fit)
        hist_h, hist_wy, sw, swy, target = self.row_sum(_initial_statistics, loss, self.n_bins)
        self.hist_h, self.hist_wy = (hist_h, hist_wy) if loss.exact_stump_step else (None, None)
        self.total_weight = self.sw = sw
        self.swy = swy
        self.base_intercept = loss.intercept_from_sums(sw, target)
        self.intercept = self.base_intercept.copy()
        self._F_stale, self.hist_g, self._residual = False, None, None

    def row_sum(self, function, *args):
        return self.xb.map_sum(function, *args)

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

    def _sync(self):
        # as reading F in memory: the sweep's stump steps are folded in, hist_g restarts
        if self._F_stale:
            self._F_stale, self.hist_g = False, None

    def _data_loss(self, intercept, leaves):
        return float(self.row_sum(data_loss, self.loss, *self.forest(intercept, leaves))[0])

    def gradient_histogram(self):
        forest = self.forest(self.intercept, self.leaves)
        return self.row_sum(gradient_histograms, self.loss, *forest, self.n_bins)[0]

    def objective(self):
        self._sync()
        return self._data_loss(self.intercept, self.leaves) + self.penalty()

    # -- the stump step's hooks: the forest without stump t is kept as its segment table
    def residual_histograms(self, t, old):
        if self.pairs is not None:
            return super().residual_histograms(t, old)
        leaves = self.leaves.copy()
        leaves[t] = 0.0
        self._residual = self.forest(self.intercept, leaves)
        hist_g, hist_h = self.row_sum(
            gradient_histograms, self.loss, *self._residual, self.n_bins
        )
        return hist_g, self.hist_h if self.loss.exact_stump_step else hist_h

    def add_new_stump(self, j, goes_left, leaves):
        if self.pairs is not None:
            super().add_new_stump(j, goes_left, leaves)
        # else the forest is the stumps: nothing on the workers to update

    def solve_stump_leaves(self, j, goes_left, leaves):
        return self.loss.leaf_newton(self.leaf_oracle(j, goes_left), leaves, self.l2_reg)

    def leaf_oracle(self, j, goes_left):
        # one sum per request, always with the derivatives: a request for the derivatives
        # at the points just evaluated (the leaves the line search accepted) is answered
        # from that sum, so each Newton step of the two leaves costs one sum
        residual, loss, last = self._residual, self.loss, {}

        def oracle(points, active, terms):
            if last and np.all(last["active"][active]) and np.array_equal(
                last["points"][active], points[active]
            ):
                return last["terms"]
            out = self.row_sum(
                leaf_side_terms, loss, *residual, j, goes_left, points, active, "all"
            )
            last.update(points=np.array(points), active=np.array(active), terms=out)
            return out

        return oracle

    def accept_exact_stump(self, t, old, j, goes_left, new_leaves):
        current = self.forest(self.intercept, self.leaves)
        self.features[t], self.left[t], self.leaves[t] = j, goes_left, new_leaves
        new = self.forest(self.intercept, self.leaves)
        self.features[t], self.left[t], self.leaves[t] = old
        e_new, e_old = self.row_sum(_two_losses, self.loss, new, current)
        e_new += self.penalty(np.asarray(new_leaves)[None])
        e_old += self.penalty(old[2][None])
        return bool(e_new <= e_old and self._keeps_monotone(j, new_leaves))

    # -- the leaf step's and early stopping's hooks
    def evaluate(self, seg, intercept, leaves):
        return self._data_loss(intercept, leaves) + self.penalty(leaves), None

    def set_leaves(self, intercept, leaves, F):
        self.intercept, self.leaves, self.hist_g = intercept, leaves, None

    def validation_loss(self, validation):
        total, weight = validation.map_sum(
            data_loss, self.loss, *self.forest(self.intercept, self.leaves)
        )
        return float(total) / float(weight)

def _weights(sample_weight, X, da):
    """``(weight, w)``: the one weight of every row and None, or None and a dask array of
    the weights chunked as the rows of ``X``."""
    if sample_weight is None:
        return 1.0, None
    if isinstance(sample_weight, numbers.Real):
        low = high = total = float(sample_weight)
        w = None
    else:
        if is_dask_collection(sample_weight):
            w = _as_dask_array(sample_weight, "sample_weight", da)
        else:
            w = np.asarray(sample_weight)
            if w.dtype.kind not in "iufb":
                raise TypeError(
                    "sample_weight must hold real numbers. Got dtype "
                    f"{w.dtype} instead."
                )
        if w.shape != (X.shape[0],):
            raise ValueError(
                f"sample_weight must have shape ({X.shape[0]},) like the rows of X. Got "
                f"{w.shape!r} instead."
            )
        if is_dask_collection(sample_weight):
            if w.chunks[0] != X.chunks[0]:
                raise ValueError(
                    "the chunks of sample_weight must be the row chunks of X; rechunk it "
                    f"with sample_weight.rechunk({{0: X.chunks[0]}}). Got X row chunks "
                    f"{X.chunks[0]!r} and sample_weight chunks {w.chunks[0]!r} instead."
                )
            w = w.astype(np.float64)
            low, high, total = (float(v) for v in da.compute(w.min(), w.max(), w.sum()))
        else:
            w = w.astype(np.float64)
            low, high, total = float(w.min()), float(w.max()), float(w.sum())
            w = da.from_array(w, chunks=(X.chunks[0],))
    if not (np.isfinite(low) and np.isfinite(high)) or not low >= 0:
        raise ValueError(
            "sample_weight must be finite and non-negative. Got weights from "
            f"{low!r} to {high!r} instead."
        )
    if not total > 0:
        raise ValueError(
            "sample_weight sums to zero; at least one weight must be > 0. Got "
            f"{total!r} instead."
        )
    return (low, None) if low == high else (None, w)


def _target(estimator, y):
    """``(y, loss, classes)``: the target checked, its loss, and the classes (None for a
    regressor, whose target is checked for NaN and infinity while binning)."""
    from sklearn.base import is_classifier
    from sklearn.utils.multiclass import check_classification_targets

    if not is_classifier(estimator):
        if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
            raise ValueError(
                "y must be numeric for a regressor (strings are never cast to numbers). Got "
                f"dtype {y.dtype} instead."
            )
        return y, estimator._loss_for_target(None), None
    dask = optional_import("dask")  # the labels of each partition, then their union
    seen = dask.compute(*[dask.delayed(np.unique)(b) for b in y.to_delayed().ravel()])
    classes = np.unique(np.concatenate(seen))
    check_classification_targets(classes)
    return y, estimator._loss_for_target(classes), classes


def _categories(estimator, X, names):
    """The categorical mask and the sorted categories seen in each categorical column."""
    mask = categorical_mask(X, estimator.categorical_features)  # "from_dtype": frames only
    if not mask.any():
        return None
    dask = optional_import("dask")
    seen = []
    for j in np.flatnonzero(mask):
        column = X.iloc[:, j] if is_dataframe(X) else X[:, j]
        if is_dataframe(X):
            seen.append(column.dropna().unique())
        else:
            seen.append(optional_import("dask.array").unique(column))
    values = dask.compute(*seen)
    categories = [None] * X.shape[1]
    for j, v in zip(np.flatnonzero(mask), values):
        v = np.asarray(v.astype(object) if hasattr(v, "astype") else v, dtype=object)
        v = v[~np.asarray([x is None or x != x for x in v], dtype=bool)]  # NaN, None, NA
        categories[j] = sorted_categories(v, estimator.max_bins, names[j])
    return categories


def _encode_frame(frame, categories):
    return np.asarray(encode_categories(frame, categories), dtype=np.float64)


def fit(estimator, X, y, sample_weight=None):
    """Fit ``estimator`` (a stump-forest GAM) on dask ``X`` and ``y``; returns it.

    The fitted model is the plain in-memory estimator: the same attributes as after an
    in-memory fit, nothing that refers to the cluster.
    """
    dask = optional_import("dask")
    da = optional_import("dask.array")

    columns = getattr(X, "columns", None)
    X_in = X
    n_features = len(columns) if columns is not None else (X.shape[1] if X.ndim == 2 else 0)
    names = (
        [str(c) for c in columns] if columns is not None else [f"x{j}" for j in range(n_features)]
    )
    if y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None."
        )
    if columns is None and X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features). Got shape {X.shape!r} instead.")
    categories = _categories(estimator, X_in, names)
    if categories is not None and is_dataframe(X_in):
        # the coded partitions, as float64 blocks (their row counts are counted next)
        X = X_in.map_partitions(_encode_frame, categories, meta=np.empty((0, n_features)))
    X = _as_dask_array(X, "X", da)
    if categories is not None and not is_dataframe(X_in):
        X = X.map_blocks(_encode_frame, categories, dtype=np.float64)
    y = _as_dask_array(y, "y", da)
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
            f"X must be numeric (or its categorical columns named in categorical_features). "
            f"Got dtype {X.dtype} instead."
        )
    y, loss, classes = _target(estimator, y)
    weight, w = _weights(sample_weight, X, da)
    is_categorical = np.array([c is not None for c in (categories or [None] * n_features)])
    monotone = check_monotonic_cst(
        estimator.monotonic_cst, n_features, is_categorical, names, loss.n_values
    )

    estimator.n_features_in_ = n_features
    if columns is not None and all(isinstance(c, str) for c in columns):
        estimator.feature_names_in_ = np.asarray(list(columns), dtype=object)
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
    estimator._categories = categories
    estimator.is_categorical_ = is_categorical
    estimator.categories_ = categories or [None] * n_features
    n_samples = X.shape[0]
    X = X.rechunk({1: -1})  # one block per row chunk, all features
    estimator.do_early_stopping_ = estimator._early_stopping(n_samples)

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

    x_parts, y_parts = X.to_delayed().ravel(), y.to_delayed().ravel()
    w_parts = [weight] * len(x_parts) if w is None else list(w.to_delayed().ravel())
    splits = [None] * len(x_parts)
    if estimator.do_early_stopping_:
        seeds = np.random.RandomState(draw_seed(rng)).randint(2**31 - 1, size=len(x_parts))
        splits = [(estimator.validation_fraction, int(s), classes is not None) for s in seeds]
    binned = dask.persist(*[
        dask.delayed(_bin_partition, nout=3)(
            xp, yp, wp, estimator.bin_edges_, estimator.max_bins, classes, split
        )
        for xp, yp, wp, split in zip(x_parts, y_parts, w_parts, splits)
    ])
    n_bad = _tree_sum([dask.delayed(_item)(b, 2) for b in binned], dask)
    if n_bad[0]:
        raise ValueError(f"Input X contains infinity ({int(n_bad[0])} values).")
    if n_bad[1]:
        raise ValueError(f"Input y contains NaN or infinity ({int(n_bad[1])} values).")
    chunks = np.asarray(X.chunks[0], dtype=np.int64)

    def partitions(binned, k, keep):
        parts = list(dask.persist(*[
            dask.delayed(_item)(b, k) for b, c in zip(binned, chunks) if keep(c)
        ]))
        n = int(_tree_sum([dask.delayed(_n_rows)(p) for p in parts], dask)) if parts else 0
        return _Partitions(parts, n, n_features, weight, dask)

    validation = all_rows = None
    train = partitions(binned, 0, lambda c: True)
    if estimator.do_early_stopping_:  # a partition of one row has no validation rows
        validation = partitions(binned, 1, lambda c: c >= 2)
        all_rows = (train + validation, None, None)
    del binned  # the workers keep the persisted parts only
    estimator._fit_binned(
        (train, None, None), n_edges, loss, monotone, rng, validation, all_rows,
        problem_class=_DaskProblem, stacklevel=6,
    )
    return estimator


def predict(estimator, X, method="predict"):
    """``estimator.<method>`` on each row chunk of dask ``X``: a dask array, one row per row."""
    da = optional_import("dask.array")
    function = getattr(estimator, method)
    classes = getattr(estimator, "classes_", None)
    n_columns = None  # one value per row
    if method == "predict_proba" or (
        method == "decision_function" and classes is not None and classes.shape[0] > 2
    ):
        n_columns = classes.shape[0]
    dtype = classes.dtype if method == "predict" and classes is not None else np.float64
    meta = np.empty((0,) if n_columns is None else (0, n_columns), dtype=dtype)
    if hasattr(X, "map_partitions"):  # DataFrame: each partition predicted with its columns
        pred = X.map_partitions(function, meta=meta)
        return pred if isinstance(pred, da.Array) else pred.to_dask_array(lengths=True)
    X = _as_dask_array(X, "X", da)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features). Got shape {X.shape!r} instead.")
    X = X.rechunk({1: -1})
    if n_columns is None:
        return X.map_blocks(function, drop_axis=1, dtype=dtype, meta=meta)
    return X.map_blocks(function, chunks=(X.chunks[0], (n_columns,)), dtype=dtype, meta=meta)
