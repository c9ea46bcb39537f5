"""The torch plumbing the subpackage's trained networks share (needs the ``neural`` extra).

* ``torch``, ``skorch`` and ``nn``, imported once through
  :func:`~sklearn_icml.utils.optional_import` (a missing extra names its install command);
  the numpy-only modules import this module inside the functions that need torch;
* :func:`seed_from_torch`: the seed of a training iterator that skorch builds inside a
  seeded fit, so its shuffling follows the estimator's ``random_state``;
* :func:`float64_copy` and :func:`float64_outputs`: a fitted module evaluated in float64
  on a copy, so long inputs overflow far later than in float32 and the fitted module is
  untouched.
"""

import copy

import numpy as np

from ..utils import optional_import
from ..utils._skorch import torch_threads

torch = optional_import("torch", "neural")
skorch = optional_import("skorch", "neural")
nn = torch.nn


def seed_from_torch():
    """An int seed drawn from torch's global RNG (seeded by the fit around the caller)."""
    return int(torch.randint(2**31 - 1, ()).item())


def float64_copy(module, device="cpu"):
    """A float64 copy of ``module`` on ``device``, in evaluation mode."""
    return copy.deepcopy(module).to(device=device, dtype=torch.float64).eval()


def float64_outputs(
    module, X, *, rows_per_chunk, empty_shape, method=None, device="cpu", n_jobs=None
):
    """Outputs of a float64 copy of ``module`` on the numpy array ``X``, chunked by rows.

    Parameters
    ----------
    module : torch.nn.Module
    X : ndarray
        Rows are the samples; each chunk of ``rows_per_chunk`` rows is copied to a tensor.
    rows_per_chunk : int
        Rows per forward call (bounds memory, not results).
    empty_shape : tuple of int
        Shape of the result when ``X`` has no row.
    method : str or None, default=None
        Name of the module's method to call instead of ``forward``.
    device : str, default="cpu"
    n_jobs : int or None, default=None
        torch intra-op threads during the evaluation (None leaves torch's setting).

    Returns
    -------
    outputs : ndarray, float64
        The outputs of the chunks, concatenated along the rows.
    """
    with torch_threads(n_jobs):
        module = float64_copy(module, device)
        forward = module if method is None else getattr(module, method)
        parts = []
        with torch.no_grad():
            for start in range(0, X.shape[0], rows_per_chunk):
                chunk = torch.tensor(X[start : start + rows_per_chunk], device=device)  # a copy
                parts.append(forward(chunk).cpu().numpy())
    return np.concatenate(parts) if parts else np.empty(empty_shape)
