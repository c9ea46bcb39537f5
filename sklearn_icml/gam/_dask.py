"""The stump forest on dask arrays and dataframes: the rows stay on the workers.

The estimator's fit is the same for dask input as for rows in memory: it validates the input
(with the helpers here that look into dask collections) and runs the alternating optimisation
of :mod:`._optimizer` on the client, with the rows in the partitions of the dask input: a
:class:`DaskPartitions`, the dask implementation of :class:`._row_source.RowSource`. The
binned partitions (uint8 bins, the target and the weights) are persisted on the workers
once; after that every quantity the client needs is a sum over rows (:mod:`._rows`),
computed on each partition and summed (a tree of sums on the workers, then one result to
the client, in a fixed partition order), so only histograms, normal equations and losses
travel, never rows:

* once: the bin counts, the ``w`` and ``w y`` histograms of the squared loss, ``sum w`` and
  the target sums of the intercept; with constant weights and the squared loss also the
  pair counts of every feature pair (:func:`._stump_kernels.pair_counts`), from which the
  stump step and the ridge leaf step work without touching a row, and then once per sweep
  the gradient histogram of the forest;
* otherwise per stump step: the gradient (and Hessian) histograms of the forest without the
  stump, and for the classifiers a few sums per Newton step of the two new leaves and the
  losses of the new and the old stump;
* per leaf step: the objective, and without pair counts the sums of its solver (the
  segment sums and segment Gram matrices of the ridge or Newton step, or the gradient of
  the L-BFGS that a large multiclass leaf step falls back to).

The forest is sent to the partitions as its segment table (a few kilobytes), from which each
partition recomputes its scores ``F`` when it needs them, so the workers hold no state that
changes during the fit: the scores of :class:`DaskPartitions` are the forest itself. Every
step is the in-memory one (the losses' code is shared), so the
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

from ..utils._optional import optional_import
from . import _stump_kernels as K
from ._binning import as_binnable, sample_rows
from ._encoding import bin_features, encode_categories, is_dataframe, sorted_categories
from ._row_source import RowSource
from ._rows import (
    Rows,
    bin_counts,
    data_loss,
    data_losses,
    gradient_histograms,
    leaf_side_terms,
    validation_split,
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
    X = as_binnable(X)  # float32 and float64 partitions are binned as they are
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
    xb = bin_features(X, edges, max_bins)
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


def _add_counts(total, part, n_bins, count_dtype):
    # the integer statistics of one more partition added into ``total`` inside one task, so
    # that a worker holds one pair table of a partition at a time, not one per partition
    xb = part[0]
    counts = bin_counts(Rows(xb, None, None), n_bins)
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


class DaskPartitions(RowSource):
    """The persisted binned partitions of a dask input: the rows of a fit, kept where they
    are. Their scores are the forest (segment table, segment values, intercept), from which
    each partition recomputes its ``F`` in each pass.

    ``weight``: the one weight of every row, or None when the weights vary.
    """

    def __init__(self, parts, n_samples, n_features, weight, dask):
        self.parts, self.weight, self.dask = parts, weight, dask
        self.shape = (n_features, n_samples)
        # on a distributed cluster: one task per worker over the partitions it holds
        self._client, self._futures = _futures_of(parts)
        self._groups = None
        if self._client is not None:
            self._groups = _worker_groups(self._client, self._futures)

    def __add__(self, other):
        return DaskPartitions(self.parts + other.parts, self.shape[1] + other.shape[1],
                           self.shape[0], self.weight, self.dask)

    def row_sum(self, function, *args):
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

    def bin_counts(self, n_bins, with_pairs):
        if not with_pairs:
            return self.row_sum(bin_counts, n_bins), None
        dask = self.dask
        count_dtype = np.int32 if self.shape[1] < 2**31 else np.int64
        # counts and pair counts are integers, so any order of summing gives the same
        # total: one chain per worker keeps a single pair table per worker alive at a time
        chains = []
        for chain in _worker_chains(self.parts):
            total = None
            for p in chain:
                total = dask.delayed(_add_counts)(total, p, n_bins, count_dtype)
            chains.append(total)
        return _tree_sum(chains, dask)

    def scores(self, forest):
        return forest

    def add_stump(self, scores, stump, scale, forest):
        return forest()

    def histograms(self, scores, loss, n_bins):
        return self.row_sum(gradient_histograms, loss, *scores, n_bins)

    def stump_leaves(self, scores, loss, feature, goes_left, leaves, l2_reg):
        # one sum per request, always with the derivatives: a request for the derivatives
        # at the points just evaluated (the leaves the line search accepted) is answered
        # from that sum, so each Newton step of the two leaves costs one sum
        last = {}

        def oracle(points, active, terms):
            if last and np.all(last["active"][active]) and np.array_equal(
                last["points"][active], points[active]
            ):
                return last["terms"]
            out = self.row_sum(
                leaf_side_terms, loss, *scores, feature, goes_left, points, active, "all"
            )
            last.update(points=np.array(points), active=np.array(active), terms=out)
            return out

        return loss.leaf_newton(oracle, leaves, l2_reg)

    def data_loss(self, scores, loss):
        return float(self.row_sum(data_loss, loss, *scores)[0])

    def candidate_losses(self, scores, loss, candidates):
        forests = [forest() for _, forest in candidates]
        return list(zip(self.row_sum(data_losses, loss, *forests), forests))


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


def import_dask():
    """Import dask (an ImportError naming the ``dask`` extra when it is missing)."""
    optional_import("dask")
    optional_import("dask.array")


def as_dask_array(data, name):
    """A dask array with known chunk sizes from a dask array, DataFrame or Series."""
    return _as_dask_array(data, name, optional_import("dask.array"))


def weights(sample_weight, X):
    """``(weight, w, low, high, total)``: the one weight of every row and None (constant
    weights), or None and a dask array of the weights chunked as the rows of ``X``; and the
    smallest, largest and total weight, for the estimator to check."""
    da = optional_import("dask.array")
    if sample_weight is None:
        return 1.0, None, 1.0, 1.0, float(X.shape[0])
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
    if low == high:
        return low, None, low, high, total
    return None, w, low, high, total


def labels(y):
    """The sorted labels of dask ``y``: the union of each partition's labels."""
    dask = optional_import("dask")
    seen = dask.compute(*[dask.delayed(np.unique)(b) for b in y.to_delayed().ravel()])
    return np.unique(np.concatenate(seen))


def learn_categories(X, mask, max_bins, names):
    """The sorted categories seen in each categorical column of dask ``X`` (None for the
    others), as :func:`._encoding.learn_categories` finds them in memory."""
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
        categories[j] = sorted_categories(v, max_bins, names[j])
    return categories


def _encode_frame(frame, categories):
    return np.asarray(encode_categories(frame, categories), dtype=np.float64)


def coded_rows(X, categories):
    """Dask ``X`` as a dask array with known row chunks, its categorical columns coded."""
    da = optional_import("dask.array")
    X_in = X
    if categories is not None and is_dataframe(X_in):
        # the coded partitions, as float64 blocks (their row counts are counted next)
        X = X_in.map_partitions(_encode_frame, categories, meta=np.empty((0, X_in.shape[1])))
    X = _as_dask_array(X, "X", da)
    if categories is not None and not is_dataframe(X_in):
        X = X.map_blocks(_encode_frame, categories, dtype=np.float64)
    return X


def binning_sample(X, rng):
    """The rows of dask ``X`` that the bin edges are computed on (all rows when at most
    ``BINNING_SUBSAMPLE``; else the in-memory draw of row indices), gathered as float64."""
    rows = sample_rows(X.shape[0], rng)
    return (X if rows is None else X[rows]).astype(np.float64).compute()


def bin_partitions(X, y, weight, w, edges, max_bins, classes, splits):
    """Bin each row chunk of ``X`` on the workers and persist it there.

    ``weight``/``w``: as :func:`weights` gives them; ``classes``: the sorted labels (None:
    regression); ``splits``: ``(fraction, seed, stratify)`` per chunk, or None without early
    stopping. Returns ``(train, validation, all_rows, n_bad)``: :class:`DaskPartitions` of the
    training rows, the held-out rows and of both (None without early stopping), and the
    numbers of infinite values in ``X`` and of non-finite targets of a regression.
    """
    dask = optional_import("dask")
    X = X.rechunk({1: -1})  # one block per row chunk, all features
    x_parts, y_parts = X.to_delayed().ravel(), y.to_delayed().ravel()
    w_parts = [weight] * len(x_parts) if w is None else list(w.to_delayed().ravel())
    splits = [None] * len(x_parts) if splits is None else splits
    binned = dask.persist(*[
        dask.delayed(_bin_partition, nout=3)(xp, yp, wp, edges, max_bins, classes, split)
        for xp, yp, wp, split in zip(x_parts, y_parts, w_parts, splits)
    ])
    n_bad = _tree_sum([dask.delayed(_item)(b, 2) for b in binned], dask)
    chunks = np.asarray(X.chunks[0], dtype=np.int64)

    def partitions(k, keep):
        parts = list(dask.persist(*[
            dask.delayed(_item)(b, k) for b, c in zip(binned, chunks) if keep(c)
        ]))
        n = int(_tree_sum([dask.delayed(_n_rows)(p) for p in parts], dask)) if parts else 0
        return DaskPartitions(parts, n, X.shape[1], weight, dask)

    train = partitions(0, lambda c: True)
    validation = all_rows = None
    if splits[0] is not None:  # a partition of one row has no validation rows
        validation = partitions(1, lambda c: c >= 2)
        all_rows = train + validation
    return train, validation, all_rows, n_bad


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
