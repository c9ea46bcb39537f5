"""Input checks of the mas subpackage: query lists, answers, MAS pools; string-input tags."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..base import NonTabularInputMixin
from ._program import MASProgram, default_mas_pool


def check_instance(value, cls, name):
    """Return ``value``; TypeError unless it is a ``cls``."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}. Got {type(value).__name__} instead.")
    return value


def check_sandbox(value, owner):
    """Refuse the old spelling ``sandbox="inprocess"`` with the name that replaced it."""
    if isinstance(value, str) and value == "inprocess":
        raise ValueError(
            f"The 'sandbox' parameter of {owner}: 'inprocess' was renamed 'unsafe-inprocess' "
            "in 0.3.0, because it runs generated code with this process's full rights; use "
            "sandbox='unsafe-inprocess' for trusted programs only, or sandbox='process'. Got "
            f"{value!r} instead."
        )


def check_queries(queries, name="queries"):
    """Return ``queries`` as a list of str.

    TypeError for something that is not a list of str (one str included), ValueError for
    an empty list.
    """
    if isinstance(queries, str):
        raise TypeError(f"{name} must be a list of str, not one str. Got {queries!r} instead.")
    if hasattr(queries, "to_numpy"):  # pandas Series / one-column DataFrame
        queries = np.asarray(queries.to_numpy()).ravel()
    try:
        out = list(queries)
    except TypeError:
        raise TypeError(
            f"{name} must be a list of str. Got {type(queries).__name__} instead."
        ) from None
    if not out:
        raise ValueError(f"{name} is empty; at least one query is needed. Got {out!r} instead.")
    for i, q in enumerate(out):
        if not isinstance(q, str):
            raise TypeError(
                f"{name} must hold str only. Got {type(q).__name__} {q!r} at position {i} "
                "instead."
            )
    return out


def check_answers(answers, n, name="answers"):
    """Return ``answers`` as a list of length ``n``."""
    if hasattr(answers, "to_numpy"):
        answers = np.asarray(answers.to_numpy()).ravel()
    if isinstance(answers, str):
        raise TypeError(f"{name} must be a list. Got the str {answers!r} instead.")
    out = list(answers)
    if len(out) != n:
        raise ValueError(
            f"queries and {name} must have the same length. Got {n} queries and {len(out)} "
            f"{name} instead."
        )
    return out


def check_pool(pool):
    """Return the validated pool (default: ``default_mas_pool()``) as a list."""
    if pool is None:
        return default_mas_pool()
    pool = list(pool)
    if not pool:
        raise ValueError(
            f"pool is empty; it must hold at least one MASProgram. Got {pool!r} instead."
        )
    names = []
    for item in pool:
        if not isinstance(item, MASProgram):
            raise TypeError(
                f"pool must hold MASProgram objects. Got {type(item).__name__} instead."
            )
        item.validate()
        names.append(item.name)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"pool names must be unique. Got duplicates {duplicates!r} instead.")
    return pool


class StringInputMixin(NonTabularInputMixin):
    """Tags and checks of the estimators that learn from lists of query strings.

    ``fit(queries, y)`` takes a list of str and a target, not a 2-D table
    (:class:`~sklearn_icml.base.NonTabularInputMixin`); scikit-learn's ``check_estimator``
    then skips it, and the test suite runs the checks that need no data. Put it first in
    the bases.
    """

    def _check_fit_input(self, queries, answers, required, why):
        """Validate the parameters, that ``required`` is set, then the training data.

        ``why`` completes the ValueError raised when parameter ``required`` is None.
        Returns ``queries`` and ``answers`` as lists.
        """
        self._validate_params()
        if getattr(self, required) is None:
            raise ValueError(f"{required} {why} Got None instead.")
        queries = check_queries(queries)
        return queries, check_answers(answers, len(queries))

    def _fitted_queries(self, queries):
        """``queries`` checked, after checking that the estimator is fitted."""
        check_is_fitted(self)
        return check_queries(queries)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.target_tags.required = True
        return tags
