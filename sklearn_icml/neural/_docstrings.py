"""Docstring pieces shared by the neural classes, filled in by :func:`fill_doc`.

A docstring names a piece as ``%(name)s`` on a line of its own (an indented line after it
continues the entry's description); :func:`fill_doc` substitutes these pieces and those of
:data:`sklearn_icml.utils._docstrings.COMMON_PIECES` (``random_state``, ``verbose``,
``torch_n_jobs``, ``device``), so that a parameter several classes share is documented
once. numpy only.
"""

from ..utils._docstrings import fill_doc as _fill_doc

PIECES = {
    # ------------------------------------------------------- the skorch estimators
    "routed_kwargs": """\
**kwargs
    Routed to the skorch net as skorch routes them; only keywords prefixed
    ``module__``, ``optimizer__``, ``criterion__``, ``iterator_train__``,
    ``iterator_valid__`` or ``callbacks__`` are accepted, and they override the values
    the parameters above set.""",
    # ------------------------------------------------------- in-context regression
    "sampler_shape": """\
n_features : int, default=5
    Covariate dimension ``d``.
n_context : int, default=40
    Context tokens ``(x_l, y_l)`` per prompt ``L``.""",
    "icl_setting": """\
n_features : int, default=5
    Dimension ``d`` of the covariates.
n_context : int, default=40
    Number ``L`` of context pairs in a prompt.
noise_var : float, default=0.1
    Label noise variance ``sigma^2``.""",
    "sampler_random_state": """\
random_state : int, RandomState instance or None, default=None
    Seeds the draws; an int makes successive :meth:`sample` calls a fixed sequence.""",
    "allow_query_label": """\
allow_query_label : bool, default=False
    Accept (and ignore) a non-zero y-slot in the query token.""",
    "prompt_fit_attributes": """\
n_features_in_ : int
    Token width ``d + 1`` of the prompts seen in ``fit``; ``predict`` needs the same.
n_context_ : int
    Context length ``L`` of the prompts seen in ``fit`` (any length is accepted later).""",
}


def fill_doc(obj):
    """Substitute the shared ``%(name)s`` pieces into ``obj.__doc__``; return ``obj``.

    For a class, the docstrings of the methods it defines are filled too.
    """
    return _fill_doc(obj, PIECES)
