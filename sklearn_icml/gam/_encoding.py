"""From a user's table to bin codes: categorical columns, missing values, candidate bins.

A stump forest sees every feature as small integer codes (:mod:`._binning` gives the codes of
numeric features). This module adds what real tables need, as HistGradientBoosting does:

* categorical columns (``categorical_features``; by default the text and ``category`` columns
  of a DataFrame, as EBM takes them) are coded ``0..n_categories - 1`` by the sorted
  categories seen in ``fit``;
* missing values (NaN, ``None``, ``pd.NA``) and categories not seen in ``fit`` get the
  missing code ``max_bins``, one past the largest code a feature can have.
"""

import numbers
import warnings

import numpy as np

from ._binning import bin_data, bin_edges, edges_from_sample, sample_rows


def is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def categorical_mask(X, categorical_features):
    """Boolean mask of the categorical columns of ``X`` (validated against ``X``)."""
    n_features = X.shape[1]
    frame = is_dataframe(X)
    if isinstance(categorical_features, str) and categorical_features == "from_dtype":
        if not frame:
            return np.zeros(n_features, dtype=bool)
        return np.array([_is_text_or_category(X, j) for j in range(n_features)], dtype=bool)
    if categorical_features is None:
        return np.zeros(n_features, dtype=bool)
    values = np.asarray(categorical_features)
    if values.ndim != 1:
        raise ValueError(
            "categorical_features must be 'from_dtype', None, or a 1-D list of indices, "
            f"names or booleans. Got {categorical_features!r} instead."
        )
    mask = np.zeros(n_features, dtype=bool)
    if values.size == 0:
        return mask
    if values.dtype.kind == "b":
        if values.size != n_features:
            raise ValueError(
                f"categorical_features as a boolean mask must have one entry per feature "
                f"({n_features}). Got {values.size} entries instead."
            )
        return values.astype(bool)
    if values.dtype.kind in "USO":
        if not frame:
            raise ValueError(
                "categorical_features given as names needs X as a DataFrame with those "
                f"column names. Got names {values.tolist()!r} for a {type(X).__name__} "
                "instead."
            )
        columns = [str(c) for c in X.columns]
        for name in values:
            if str(name) not in columns:
                raise ValueError(
                    f"categorical_features names a column that X lacks; columns are "
                    f"{columns!r}. Got {name!r} instead."
                )
            mask[columns.index(str(name))] = True
        return mask
    if values.dtype.kind in "iu":
        for j in values:
            if not -n_features <= j < n_features:
                raise ValueError(
                    f"categorical_features indices must be in [0, {n_features}). Got "
                    f"{int(j)!r} instead."
                )
        mask[values] = True
        return mask
    raise ValueError(
        "categorical_features must be 'from_dtype', None, or a list of indices, names or "
        f"booleans. Got {categorical_features!r} instead."
    )


# what pandas' infer_dtype says of an object column that holds numbers only (such a column
# stays numeric under "from_dtype"; any string in it makes it categorical)
_NUMERIC_OBJECTS = {"integer", "floating", "mixed-integer-float", "decimal", "boolean", "empty"}


def _is_text_or_category(X, j):
    """Whether column ``j`` of DataFrame ``X`` is categorical under ``"from_dtype"``: the
    ``category`` and pandas string dtypes, and object columns that hold text (an object
    column of dask ``X`` is taken as text: its values are not read)."""
    import pandas as pd

    dtype = X.dtypes.iloc[j]
    if isinstance(dtype, pd.CategoricalDtype | pd.StringDtype):
        return True
    if getattr(dtype, "kind", None) != "O":
        return False
    if hasattr(X, "__dask_graph__"):
        return True
    kind = pd.api.types.infer_dtype(X.iloc[:, j], skipna=True)
    return kind not in _NUMERIC_OBJECTS


def _first_text(X, columns):
    """``(column, value)`` of the first string among ``columns`` of ``X`` (a DataFrame or a
    2-D array), or None; numeric columns cost one look at their dtype."""
    import pandas as pd

    frame = is_dataframe(X)
    if not frame:
        values = np.asarray(X)
        if values.ndim != 2 or values.dtype.kind not in "USO":
            return None
    for j in columns:
        if frame:
            if getattr(X.dtypes.iloc[j], "kind", "O") in "biufcmM":
                continue
            column = X.iloc[:, j].to_numpy(dtype=object)
        else:
            column = values[:, j]
        if pd.api.types.infer_dtype(column, skipna=True) in _NUMERIC_OBJECTS:
            continue
        for value in column:
            if isinstance(value, str | bytes):
                return (X.columns[j] if frame else j), value
    return None


def refuse_text(X, categorical, estimator, fitted):
    """Raise a ValueError naming the GAM's own categorical handling if a column of ``X``
    that is not categorical (``categorical``: boolean mask) holds text; ``fitted`` says
    whether the mask is the fitted model's (predict) or ``categorical_features``' (fit)."""
    numeric = [j for j in range(X.shape[1]) if not categorical[j]]
    found = _first_text(X, numeric)
    if found is None:
        return
    column, value = found
    name = type(estimator).__name__
    where = f"column {column!r}" if is_dataframe(X) else f"column {column}"
    if fitted:
        raise ValueError(
            f"X holds text in {where}, a numeric feature when {name} was fitted; pass the "
            "columns the model was fitted on (its categorical features are "
            f"{[str(c) for c in np.asarray(estimator._feature_names())[categorical]]!r}). "
            f"Got {value!r} instead."
        )
    how = (
        f"name the column in categorical_features (now {estimator.categorical_features!r})"
        if is_dataframe(X)
        else f"pass categorical_features=[{column}, ...] (the indices of the text columns), "
        "or X as a DataFrame with categorical_features='from_dtype'"
    )
    raise ValueError(
        f"X holds text in {where}, which is not a categorical feature. {name} takes text "
        "columns as categorical features itself (categories sorted; missing values and "
        "categories unseen in fit share the missing bin), no encoder needed: "
        f"{how}. Got {value!r} instead."
    )


def _column(X, j):
    return X.iloc[:, j] if is_dataframe(X) else np.asarray(X)[:, j]


def _missing(values):
    import pandas as pd

    return np.asarray(pd.isna(values), dtype=bool)


def learn_categories(X, mask, max_bins, feature_names):
    """Sorted categories seen in each categorical column (None for numeric ones)."""
    categories = []
    for j in range(X.shape[1]):
        if not mask[j]:
            categories.append(None)
            continue
        col = _column(X, j)
        values = np.asarray(col.astype(object) if hasattr(col, "astype") else col, dtype=object)
        categories.append(sorted_categories(values[~_missing(values)], max_bins, feature_names[j]))
    return categories


def sorted_categories(seen, max_bins, feature_name):
    """The categories of a column from its non-missing values ``seen`` (any order, repeats
    allowed): sorted as numbers when they all are, else as strings."""
    seen = np.asarray(seen, dtype=object)
    try:
        cats = np.unique(seen.astype(np.float64))
    except (TypeError, ValueError):
        cats = np.unique(seen.astype(str))
    if cats.size > max_bins:
        raise ValueError(
            f"categorical feature {feature_name!r} has {cats.size} categories, more "
            f"than max_bins={max_bins}; raise max_bins, group rare categories, or leave "
            "the column out of categorical_features (a text column is categorical under "
            f"categorical_features='from_dtype'). Got "
            f"{cats.size} categories instead."
        )
    return cats


def encode_categories(X, categories):
    """A float64 copy of ``X`` (a DataFrame keeps its columns) with each categorical
    column replaced by its category codes; missing values and unknown categories are NaN.
    ``X`` itself is never modified."""
    if not any(c is not None for c in categories):
        return X
    if is_dataframe(X):
        out = X.copy(deep=False)
        columns = list(X.columns)
    else:
        out = np.array(X, dtype=object if np.asarray(X).dtype.kind in "USO" else None, copy=True)
    for j, cats in enumerate(categories):
        if cats is None:
            continue
        col = _column(X, j)
        values = np.asarray(col.astype(object) if hasattr(col, "astype") else col, dtype=object)
        missing = _missing(values)
        codes = np.full(values.shape[0], np.nan)
        present = values[~missing]
        try:
            present = present.astype(cats.dtype) if cats.dtype.kind == "f" else present.astype(str)
        except (TypeError, ValueError):
            present = present.astype(str)
            cats = cats.astype(str)
        pos = np.searchsorted(cats, present)
        pos_clipped = np.minimum(pos, cats.size - 1)
        known = (pos < cats.size) & (cats[pos_clipped] == present) if cats.size else pos < 0
        codes_present = np.where(known, pos_clipped, np.nan)
        codes[~missing] = codes_present
        if is_dataframe(X):
            out[columns[j]] = codes
        else:
            out[:, j] = codes
    if not is_dataframe(X):
        out = out.astype(np.float64)
    return out


_NAN_BLOCK = 65536  # rows per block of the NaN scan (a small boolean temporary)


def missing_columns(X):
    """Whether each column of ``X`` holds a NaN, scanned by blocks of rows, so that no
    boolean array of ``X``'s size is made."""
    found = np.zeros(X.shape[1], dtype=bool)
    for start in range(0, X.shape[0], _NAN_BLOCK):
        found |= np.isnan(X[start:start + _NAN_BLOCK]).any(axis=0)
    return found


def feature_bin_edges(X, categories, max_bins, rng, feature_names):
    """Candidate thresholds of every feature, computed on its non-missing values.

    A categorical feature's edges are the midpoints between its codes, so that
    :func:`._binning.bin_data` returns the codes unchanged. An all-missing column gets no
    edges (no stump can split it) and a warning. ``X`` (float32 or float64) is read as it
    is: the copies made are of the sampled rows, or of one column at a time.
    """
    has_missing = missing_columns(X)
    edges = [None] * X.shape[1]
    complete = [j for j in range(X.shape[1]) if categories[j] is None and not has_missing[j]]
    if complete:  # one pass for the columns without missing values
        # the rows are sampled before the columns are gathered (as bin_edges would, with the
        # same draw), so that no full copy of X is made
        rows = sample_rows(X.shape[0], rng)
        sample = X if rows is None else X[rows]
        if len(complete) < X.shape[1]:
            sample = sample[:, complete]
        for j, e in zip(complete, edges_from_sample(sample, max_bins)):
            edges[j] = e
    for j in range(X.shape[1]):
        if categories[j] is not None:
            edges[j] = np.arange(categories[j].size - 1, dtype=np.float64) + 0.5
        elif edges[j] is None:
            column = X[:, j]
            present = column[~np.isnan(column)]
            if not present.size:
                warnings.warn(
                    f"feature {feature_names[j]!r} has only missing values in fit; it is "
                    "ignored (no stump splits it).",
                    UserWarning,
                    stacklevel=4,
                )
                edges[j] = np.empty(0)
            else:
                edges[j] = bin_edges(present[:, None], max_bins, rng)[0]
    return edges


def bin_features(X, edges, missing_code):
    """Bin codes of ``X`` (shape (n_features, n_samples)), NaN -> ``missing_code``; float32
    and float64 ``X`` are binned without a copy (:func:`._binning.bin_data`)."""
    return bin_data(X, edges, missing_code, missing_code=missing_code)


def check_monotonic_cst(monotonic_cst, n_features, categorical, feature_names, n_values):
    """Per-feature constraints -1 / 0 / 1 (int64), validated."""
    if monotonic_cst is None:
        return np.zeros(n_features, dtype=np.int64)
    if isinstance(monotonic_cst, dict):
        cst = np.zeros(n_features, dtype=np.int64)
        names = [str(n) for n in feature_names]
        for key, value in monotonic_cst.items():
            if isinstance(key, numbers.Integral) and 0 <= key < n_features:
                cst[int(key)] = value
            elif str(key) in names:
                cst[names.index(str(key))] = value
            else:
                raise ValueError(
                    f"monotonic_cst names a feature that X lacks; features are {names!r}. "
                    f"Got {key!r} instead."
                )
    else:
        cst = np.asarray(monotonic_cst)
        if cst.shape != (n_features,) or cst.dtype.kind not in "iuf":
            raise ValueError(
                f"monotonic_cst must have one entry (-1, 0 or 1) per feature ({n_features}). "
                f"Got {monotonic_cst!r} instead."
            )
    if not np.all(np.isin(cst, [-1, 0, 1])):
        raise ValueError(
            f"monotonic_cst entries must be -1, 0 or 1. Got {monotonic_cst!r} instead."
        )
    cst = cst.astype(np.int64)
    if np.any(cst[categorical] != 0):
        bad = [feature_names[j] for j in np.flatnonzero(categorical & (cst != 0))]
        raise ValueError(
            f"monotonic_cst cannot constrain categorical features (categories have no "
            f"order). Got a constraint on {bad!r} instead."
        )
    if np.any(cst != 0) and n_values > 1:
        raise ValueError(
            "monotonic_cst is not supported for multiclass classification (one shape per "
            f"class). Got {monotonic_cst!r} instead."
        )
    return cst
