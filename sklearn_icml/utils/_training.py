"""The mini-batch training loop of the estimators that keep their own torch loop.

CellFlux (flow matching) and LwIClassifier (continual learning) train outside skorch: what
each step does (a control draw, noise, EMA; distillation, then fusion between tasks) is
theirs, but the frame around it is the same as the skorch base's
(:meth:`sklearn_icml.base.BaseNeuralEstimator._fit_net`):

* :func:`seeded_torch` checks ``device``, seeds torch under a forked RNG with a
  :func:`~sklearn_icml.utils.draw_seed` seed and bounds torch's intra-op threads to
  ``n_jobs``;
* :func:`run_epochs` runs ``max_epochs`` passes of mini-batch steps over a fresh
  permutation each, records the mean loss of each epoch and stops with
  :func:`check_finite_loss`'s error as soon as it is not finite.

Private to sklearn-icml; needs torch.
"""

import contextlib

import numpy as np

from ._skorch import check_device, seeded, torch_threads


@contextlib.contextmanager
def seeded_torch(seed, device="cpu", n_jobs=None):
    """Check ``device``, then run a block seeded with ``seed`` on ``n_jobs`` torch threads.

    Yields the checked device string. The caller's torch RNG and thread setting are
    restored afterwards.
    """
    device = check_device(device)
    with seeded(seed, device), torch_threads(n_jobs):
        yield device


def check_finite_loss(loss, epoch, where=""):
    """Raise ValueError when an epoch's mean ``loss`` is NaN or infinite.

    ``where`` is added after "training diverged" (e.g. ``" on task 2"``).
    """
    if not np.isfinite(loss):
        raise ValueError(
            f"training diverged{where}: the mean training loss of epoch {epoch} is not "
            f"finite; lower learning_rate. Got {loss!r} instead."
        )


def run_epochs(step, n_samples, *, batch_size, max_epochs, permutation, end_epoch=None,
               where=""):
    """Run ``max_epochs`` passes of mini-batch steps; return each epoch's mean loss.

    Parameters
    ----------
    step : callable ``(indices) -> float``
        One optimiser step on the rows ``indices`` (a slice of the epoch's permutation);
        returns the batch's mean loss.
    n_samples : int
        Rows per epoch.
    batch_size : int
        Rows per step (the last step of an epoch may have fewer).
    max_epochs : int
        Passes over the rows.
    permutation : callable ``(n_samples) -> array or tensor``
        The row order of one epoch, drawn at its start.
    end_epoch : callable ``(epoch, loss)`` or None, default=None
        Called after each epoch (0-based) with its mean loss, once the loss is known to
        be finite (a learning-rate schedule step, a progress line).
    where : str, default=""
        Added to the divergence message.

    Returns
    -------
    losses : list of float
        The mean loss of each epoch, weighted by batch size.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.utils._training import run_epochs
    >>> run_epochs(lambda idx: float(np.mean(idx)), 4, batch_size=2, max_epochs=2,
    ...            permutation=np.arange)
    [1.5, 1.5]
    """
    losses = []
    for epoch in range(int(max_epochs)):
        order = permutation(n_samples)
        total = 0.0
        for start in range(0, n_samples, batch_size):
            indices = order[start : start + batch_size]
            total += step(indices) * len(indices)
        loss = total / n_samples
        check_finite_loss(loss, epoch + 1, where)
        losses.append(loss)
        if end_epoch is not None:
            end_epoch(epoch, loss)
    return losses
