"""Docstring pieces shared by the privacy functions and classes, filled in by :func:`fill_doc`.

A docstring names a piece as ``%(name)s``; :func:`fill_doc` cleans the docstring's
indentation and substitutes the pieces (on top of
:data:`sklearn_icml.utils._docstrings.COMMON_PIECES`), so that a citation or a parameter
several objects share is written once. The citations of the two ICML 2025 papers are the
text of a numpydoc reference, used as ``.. [1] %(dong2025)s``.
"""

from ..utils._docstrings import fill_doc as _fill_doc

PIECES = {
    # ---------------------------------------------------------------- citations
    "dong2025": """\
A. Dong, W.-N. Chen, A. Ozgur, "Leveraging Randomness in Model and Data
   Partitioning for Privacy Amplification", ICML 2025, arXiv:2503.03043.""",
    "chen2025": """\
Y.-W. Chen, R. Pasupathy, J. A. Awan, "Optimal Survey Design for Private Mean
   Estimation", ICML 2025, arXiv:2501.18121.""",
    # ------------------------------------------------- accountants of DP-SGD
    "noise_multiplier": """\
noise_multiplier : float
    Noise std divided by the clipping norm (sigma), > 0.""",
    "delta": """\
delta : float
    Target delta in (0, 1).""",
    # ------------------------------------------------------ DP-SGD batch samplers
    "sampler_n_samples": """\
n_samples : int, default=None
    Size of the data set. Required: ``None`` only marks a sampler not configured yet,
    and the first use raises.""",
    "sampler_num_steps": """\
num_steps : int, default=200
    Iterations per pass ``T``.""",
    "sampler_num_epochs": """\
num_epochs : int, default=1
    Passes yielded by ``iter``; ``len`` is ``num_steps * num_epochs``.""",
    "sampler_batch_sizes_": """\
batch_sizes_ : ndarray of shape (num_steps,)
    Batch sizes of the last pass drawn.""",
}


def fill_doc(obj):
    """Substitute the privacy pieces into ``obj.__doc__`` (and its methods'); return ``obj``."""
    return _fill_doc(obj, PIECES)
