"""Docstring pieces shared by :func:`fuse_models` and :class:`LwIClassifier`.

The fusion parameters of the classifier are those of :func:`fuse_models`; they are
documented once here. A docstring names a piece as ``%(name)s`` on a line of its own and
:func:`fill_doc` substitutes it (with the common pieces of
:mod:`sklearn_icml.utils._docstrings`).
"""

from ..utils._docstrings import fill_doc as _fill_doc

PIECES = {
    "fusion_steps": """\
step_sim : float in [0, 1], default=0.7
    Weight of the new model in the similarity-matched layers.
step_diff : float in [0, 1], default=0.93
    Weight of the new model in the dissimilarity-matched (last) layers.""",
    "fusion_matching": """\
ground_metric : {"cosine", "euclidean"}, default="cosine"
    Distance between channels (rows of the input-aligned weights).
metric_normalize : {"log1p", "max", "none"}, default="log1p"
    Normalisation of the cost matrix.
solver : {"assignment", "emd", "sinkhorn", "identity"}, default="assignment"
    ``"assignment"``: scipy's ``linear_sum_assignment`` (the same optimum as exact OT
    with uniform marginals, no extra dependency); ``"emd"``: POT's ``ot.emd`` as in the
    authors' release; ``"sinkhorn"``: entropic OT (soft matching); ``"identity"``: no
    matching at all, i.e. naive weight averaging (ablation). ``"emd"`` and
    ``"sinkhorn"`` need POT (the ``transport`` extra).
sinkhorn_reg : float, default=0.01
    Entropic regularisation of ``solver="sinkhorn"``.""",
}


def fill_doc(obj):
    """Substitute the shared ``%(name)s`` pieces into ``obj.__doc__``; return ``obj``."""
    return _fill_doc(obj, PIECES)
