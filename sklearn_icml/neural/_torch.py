"""The torch plumbing the subpackage's trained networks share (needs the ``neural`` extra).

* ``torch``, ``skorch`` and ``nn``, imported once through
  :func:`~sklearn_icml.utils.optional_import` (a missing extra names its install command);
  the numpy-only modules import this module inside the functions that need torch;
* :func:`seed_from_torch`: the seed of a training iterator that skorch builds inside a
  seeded fit, so its shuffling follows the estimator's ``random_state``;

The float64 evaluation of a fitted module (``float64_copy``, ``float64_outputs``) lives in
:mod:`sklearn_icml.utils._skorch`, shared with the other neural estimators.
"""

from ..utils import optional_import

torch = optional_import("torch", "neural")
skorch = optional_import("skorch", "neural")
nn = torch.nn


def seed_from_torch():
    """An int seed drawn from torch's global RNG (seeded by the fit around the caller)."""
    return int(torch.randint(2**31 - 1, ()).item())
