"""Input checks of the mas subpackage: query lists, answers, MAS pools."""

import numpy as np

from ._program import MASProgram, default_mas_pool


def check_queries(queries, name="queries"):
    """Return ``queries`` as a list of str; raise ValueError for empty or non-str input."""
    if isinstance(queries, str):
        raise ValueError(f"{name} must be a list of str, not one str; got {queries!r} instead.")
    if hasattr(queries, "to_numpy"):  # pandas Series / one-column DataFrame
        queries = np.asarray(queries.to_numpy()).ravel()
    try:
        out = list(queries)
    except TypeError:
        raise ValueError(
            f"{name} must be a list of str; got {type(queries).__name__} instead."
        ) from None
    if not out:
        raise ValueError(f"{name} is empty; at least one query is needed.")
    for i, q in enumerate(out):
        if not isinstance(q, str):
            raise ValueError(
                f"{name} must hold str only; got {type(q).__name__} {q!r} at position {i} "
                "instead."
            )
    return out


def check_answers(answers, n, name="answers"):
    """Return ``answers`` as a list of length ``n``."""
    if hasattr(answers, "to_numpy"):
        answers = np.asarray(answers.to_numpy()).ravel()
    if isinstance(answers, str):
        raise ValueError(f"{name} must be a list; got the str {answers!r} instead.")
    out = list(answers)
    if len(out) != n:
        raise ValueError(
            f"queries and {name} must have the same length; got {n} queries and {len(out)} "
            f"{name} instead."
        )
    return out


def check_pool(pool):
    """Return the validated pool (default: ``default_mas_pool()``) as a list."""
    if pool is None:
        return default_mas_pool()
    pool = list(pool)
    if not pool:
        raise ValueError("pool is empty; it must hold at least one MASProgram.")
    names = []
    for item in pool:
        if not isinstance(item, MASProgram):
            raise ValueError(
                f"pool must hold MASProgram objects; got {type(item).__name__} instead."
            )
        item.validate()
        names.append(item.name)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"pool names must be unique; got duplicates {duplicates!r} instead.")
    return pool
