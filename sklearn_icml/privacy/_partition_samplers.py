"""Batch samplers for DP-SGD: balanced iteration subsampling and Poisson subsampling.

Both are iterables of index arrays with ``__len__``, so they plug into a torch
``DataLoader`` as ``batch_sampler`` (or as ``sampler`` with ``batch_size=None``) without
this module importing torch.
"""

import numpy as np
from sklearn.base import BaseEstimator

from ..base import SetUpAtFirstUseMixin
from ..utils import check_random_state
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import POSITIVE_INT, UNIT_INTERVAL_WITHOUT_ZERO
from ..utils._params import store_params
from ._partition_rdp import check_steps

_BLOCK_ENTRIES = 1 << 22  # rows x steps per block of random keys in the argpartition path


def _floyd_subsets(rng, n_rows, num_steps, num_selected):
    """``n_rows`` uniform k-subsets of range(T) by Floyd's algorithm, vectorised over rows.

    Cost O(n k^2), independent of T: the right choice when k is small.
    """
    chosen = np.empty((n_rows, num_selected), dtype=np.int64)
    for col, j in enumerate(range(num_steps - num_selected, num_steps)):
        t = rng.randint(0, j + 1, size=n_rows)
        taken = (chosen[:, :col] == t[:, None]).any(axis=1)
        chosen[:, col] = np.where(taken, j, t)
    return chosen


def _argpartition_subsets(rng, n_rows, num_steps, num_selected):
    """``n_rows`` uniform k-subsets of range(T) as the k smallest of T uniform keys."""
    chosen = np.empty((n_rows, num_selected), dtype=np.int64)
    block = max(1, _BLOCK_ENTRIES // num_steps)
    for start in range(0, n_rows, block):
        keys = rng.random((min(block, n_rows - start), num_steps))
        if num_selected < num_steps:
            part = np.argpartition(keys, num_selected - 1, axis=1)[:, :num_selected]
        else:
            part = np.broadcast_to(np.arange(num_steps), keys.shape)
        chosen[start : start + keys.shape[0]] = part
    return chosen


def _batches_from_steps(steps, owners, num_steps):
    """Step -> sorted index arrays from (step, sample) pairs by a stable counting sort."""
    order = np.argsort(steps, kind="stable")
    counts = np.bincount(steps, minlength=num_steps)
    return np.split(owners[order], np.cumsum(counts)[:-1]), counts


class _IterationSampler(SetUpAtFirstUseMixin, BaseEstimator):
    """Shared manners and iteration protocol: ``num_epochs`` fresh draws of ``num_steps``
    batches.

    ``__init__`` only stores the parameters; the first ``sample``, ``iter`` or ``len``
    validates them (``_parameter_constraints``) and creates the random generator from
    ``random_state`` (:func:`~sklearn_icml.utils.check_random_state`), which then serves
    every pass. ``set_params`` starts over with a new generator.
    """

    _parameter_constraints = {
        "n_samples": [POSITIVE_INT],
        "num_steps": [POSITIVE_INT],
        "num_epochs": [POSITIVE_INT],
        "random_state": ["random_state"],
    }

    def _build(self):
        self._check_params()
        self._rng = check_random_state(self.random_state)

    def _check_params(self):
        """Checks across parameters (after ``_parameter_constraints``)."""

    def __iter__(self):
        self._setup()
        for _ in range(self.num_epochs):
            yield from self.sample()

    def __len__(self):
        self._setup()
        return self.num_steps * self.num_epochs


class BalancedIterationSampler(_IterationSampler):
    """Balanced iteration subsampling: each sample joins exactly k random steps of T.

    For every pass (epoch) of ``num_steps`` iterations, each sample independently picks a
    uniformly random set of ``num_selected`` distinct iterations and is in the batch of
    those iterations only. Batch sizes are Binomial(n, k/T) and may be 0: the training loop
    must still take a noise-only step for an empty batch (skipping it changes the mechanism
    and voids the guarantee of :func:`bis_rdp`). Each pass re-draws the allocation.

    Parameters
    ----------
    n_samples : int, default=None
        Size of the data set. Required: ``None`` only marks a sampler not configured yet,
        and the first use raises.
    num_steps : int, default=200
        Iterations per pass ``T``.
    num_selected : int, default=20
        Iterations each sample takes part in per pass, ``1 <= k <= T``.
    num_epochs : int, default=1
        Passes yielded by ``iter``; ``len`` is ``num_steps * num_epochs``.
    random_state : int, RandomState instance or None, default=None
        Seeds the allocation. One generator serves all passes, so each pass (and each new
        iteration over the sampler) draws a fresh allocation; two samplers with the same
        integer seed yield the same batches.

    Attributes
    ----------
    assignments_ : ndarray of shape (n_samples, num_selected)
        The steps of each sample in the last pass drawn, sorted per row.
    batch_sizes_ : ndarray of shape (num_steps,)
        Batch sizes of the last pass drawn.

    See Also
    --------
    PoissonIterationSampler : the Poisson subsampling baseline.
    bis_rdp : the matching accountant.

    Notes
    -----
    With torch: ``DataLoader(TensorDataset(X, y), sampler=sampler, batch_size=None)``
    indexes the data set with each whole index array, which also handles empty batches;
    ``DataLoader(dataset, batch_sampler=sampler, collate_fn=...)`` works for any map-style
    data set given a ``collate_fn`` that returns zero-length tensors for an empty batch.
    With opacus, pass ``poisson_sampling=False`` to ``make_private`` so that it keeps this
    sampler, and report the epsilon of :class:`PartitionRDPAccountant`, not opacus' own.

    References
    ----------
    .. [1] A. Dong, W.-N. Chen, A. Ozgur, "Leveraging Randomness in Model and Data
       Partitioning for Privacy Amplification", ICML 2025, arXiv:2503.03043.
    .. [2] M. Abadi, A. Chu, I. Goodfellow, H. B. McMahan, I. Mironov, K. Talwar, L. Zhang,
       "Deep Learning with Differential Privacy", CCS 2016.

    Examples
    --------
    >>> from sklearn_icml.privacy import BalancedIterationSampler
    >>> sampler = BalancedIterationSampler(
    ...     n_samples=6, num_steps=4, num_selected=2, random_state=0)
    >>> batches = list(sampler)
    >>> len(batches), sum(len(b) for b in batches)
    (4, 12)
    >>> sampler.assignments_.shape, int(sampler.batch_sizes_.sum())
    ((6, 2), 12)
    """

    _parameter_constraints = {
        **_IterationSampler._parameter_constraints,
        "num_selected": [POSITIVE_INT],
    }

    @keyword_only_after(1)
    def __init__(
        self, *, n_samples=None, num_steps=200, num_selected=20, num_epochs=1, random_state=None
    ):
        store_params(self, locals())

    def _check_params(self):
        check_steps(self.num_steps, self.num_selected)

    def sample(self):
        """Draw the allocation of one pass.

        Returns
        -------
        batches : list of ndarray of int64
            ``num_steps`` arrays of sample indices (sorted, possibly empty); every index is
            in exactly ``num_selected`` of them.
        """
        rng = self._setup()._rng
        n, T, k = self.n_samples, self.num_steps, self.num_selected
        if k * k <= 4 * T:
            chosen = _floyd_subsets(rng, n, T, k)
        else:
            chosen = _argpartition_subsets(rng, n, T, k)
        chosen.sort(axis=1)
        owners = np.repeat(np.arange(n, dtype=np.int64), k)
        batches, counts = _batches_from_steps(chosen.ravel(), owners, T)
        self.assignments_ = chosen
        self.batch_sizes_ = counts
        return batches


class PoissonIterationSampler(_IterationSampler):
    """Poisson subsampling: each sample joins each step independently with a fixed rate.

    The baseline of balanced iteration subsampling with the same expected participation
    (``sample_rate = k/T``): a sample takes part in Binomial(T, rate) steps of a pass.
    Batches may be empty; the training loop must still take a noise-only step.

    Parameters
    ----------
    n_samples : int, default=None
        Size of the data set. Required: ``None`` only marks a sampler not configured yet,
        and the first use raises.
    num_steps : int, default=200
        Iterations per pass ``T``.
    sample_rate : float, default=0.1
        Inclusion probability per step, in (0, 1].
    num_epochs : int, default=1
        Passes yielded by ``iter``; ``len`` is ``num_steps * num_epochs``.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws; one generator serves all passes.

    Attributes
    ----------
    participations_ : ndarray of shape (n_samples,)
        Steps each sample joined in the last pass drawn.
    batch_sizes_ : ndarray of shape (num_steps,)
        Batch sizes of the last pass drawn.

    See Also
    --------
    BalancedIterationSampler : exactly k steps per sample.
    poisson_rdp : the matching accountant.

    References
    ----------
    .. [1] M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.

    Examples
    --------
    >>> from sklearn_icml.privacy import PoissonIterationSampler
    >>> sampler = PoissonIterationSampler(
    ...     n_samples=100, num_steps=5, sample_rate=0.2, random_state=0)
    >>> len(sampler), len(sampler.sample())
    (5, 5)
    """

    _parameter_constraints = {
        **_IterationSampler._parameter_constraints,
        "sample_rate": [UNIT_INTERVAL_WITHOUT_ZERO],
    }

    @keyword_only_after(1)
    def __init__(
        self, *, n_samples=None, num_steps=200, sample_rate=0.1, num_epochs=1, random_state=None
    ):
        store_params(self, locals())

    def sample(self):
        """Draw the batches of one pass.

        Returns
        -------
        batches : list of ndarray of int64
            ``num_steps`` sorted arrays of sample indices (possibly empty).
        """
        rng = self._setup()._rng
        n, T = self.n_samples, self.num_steps
        sizes = rng.binomial(n, self.sample_rate, size=T)
        batches = [np.sort(rng.choice(n, size=s, replace=False)).astype(np.int64) for s in sizes]
        self.batch_sizes_ = sizes.astype(np.int64)
        self.participations_ = np.bincount(
            np.concatenate(batches) if T else np.empty(0, np.int64), minlength=n
        )
        return batches
