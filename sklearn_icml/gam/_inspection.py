"""What the inspection methods of a stump-forest GAM return: results labelled by feature name.

``shape_functions()`` is a :class:`~sklearn.utils.Bunch` keyed by feature name,
``term_importances()`` a pandas Series and ``feature_contributions(X)`` a pandas DataFrame,
both indexed by feature name. Until 0.3 they were keyed by column position (a dict of int, a
1-D and a 2-D ndarray); that access still works for one release, with a FutureWarning that
says how to write it by name. The classes below differ from their bases only there.
"""

import numbers
import warnings

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ..utils._deprecation import REMOVED_IN


def _positional_warning(what, how):
    warnings.warn(
        f"{what} is labelled by feature name since 0.3; access by position will be removed "
        f"in {REMOVED_IN}: {how}.",
        FutureWarning,
        stacklevel=3,
    )


def _is_position(key):
    return isinstance(key, numbers.Integral) and not isinstance(key, bool | np.bool_)


class ShapeFunctions(Bunch):
    """Feature name -> shape function (a Bunch); an int key (a column position) still works,
    with a FutureWarning, while it names a feature that has a shape."""

    def __init__(self, shapes, names):
        super().__init__(**{str(names[j]): shape for j, shape in shapes.items()})
        self.__dict__["_names"] = [str(n) for n in names]

    def __getitem__(self, key):
        if _is_position(key) and key not in self.keys() and -len(self._names) <= key < len(
            self._names
        ):
            name = self._names[key]
            _positional_warning(
                "shape_functions()", f"write shape_functions()[{name!r}] for feature {key}"
            )
            key = name
        return super().__getitem__(key)

    def __contains__(self, key):
        if _is_position(key) and -len(self._names) <= key < len(self._names):
            return super().__contains__(self._names[key])
        return super().__contains__(key)


class _ByPosition(pd.Series):
    """A Series labelled by feature name whose int keys still read positions."""

    _what = "a result derived from feature_contributions(X)"

    @property
    def _constructor(self):
        return _ByPosition

    @property
    def _constructor_expanddim(self):
        return pd.DataFrame

    def __getitem__(self, key):
        if _is_position(key) and not _is_label(key, self.index):
            _positional_warning(self._what, f"write [{self.index[key]!r}] or .iloc[{key}]")
            return self.iloc[key]
        return super().__getitem__(key)


class TermImportances(_ByPosition):
    """A Series indexed by feature name; an int key still reads a position (FutureWarning)."""

    _what = "term_importances()"


class FeatureContributions(pd.DataFrame):
    """A DataFrame with one column per feature (multiclass: per class, then feature); numpy
    indexing by position (``contrib[0]``, ``contrib[:, j]``) still reads the array of 0.2,
    of shape (n_samples, n_features[, n_classes]), with a FutureWarning, on it and on the
    frames and Series derived from it."""

    @property
    def _constructor(self):
        return FeatureContributions

    @property
    def _constructor_sliced(self):
        return _ByPosition

    def __getitem__(self, key):
        if (_is_position(key) or isinstance(key, tuple)) and not _is_label(key, self.columns):
            _positional_warning(
                "feature_contributions(X)",
                "select columns by feature name (contrib['age']) or take "
                "contrib.to_numpy() for positions",
            )
            values = self.to_numpy()
            if isinstance(self.columns, pd.MultiIndex):  # (class, feature) -> (n, f, k)
                n_classes = len(self.columns.unique(level=0))
                values = values.reshape(len(self), n_classes, -1).transpose(0, 2, 1)
            return values[key]
        return super().__getitem__(key)


def _is_label(key, index):
    try:
        return key in index
    except TypeError:  # a tuple holding slices or arrays
        return False
