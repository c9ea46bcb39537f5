"""Pieces shared by the skorch-based estimators: seeding, devices, labels, a base mixin.

Every neural estimator of sklearn-icml is a scikit-learn estimator (``BaseEstimator`` plus
the right mixin, keyword-only ``__init__`` that only stores) that builds a skorch
``NeuralNet`` in ``fit`` and keeps it in ``net_``: a *thin wrapper*, because a skorch net
itself sets attributes in ``__init__`` and does not validate its input as
``check_estimator`` requires. This module holds what does not depend on the method:

* :func:`torch_seed` and :func:`seeded` turn ``random_state`` into a torch seed and run the
  fit under a forked torch RNG, so the same ``random_state`` gives the same network and the
  caller's global torch RNG is left untouched;
* :func:`torch_threads` bounds torch's intra-op threads during a fit or a prediction
  (estimators expose it as ``n_threads``);
* :func:`check_device` validates ``device`` (CPU by default, ``"cuda"`` honoured when
  available, a clear error otherwise);
* :func:`encode_class_labels` turns any classification target (strings, ints, the 2-D
  column vectors that ``check_estimator`` feeds) into class indices and ``classes_``;
* :func:`features_to_float32` converts validated 2-D features to the float32 C-contiguous
  array torch modules expect;
* :class:`SkorchEstimatorMixin` builds, seeds and fits the net and exposes ``module_``,
  ``history_`` and ``n_epochs_run_``; it keeps skorch quiet unless ``verbose``.

torch and skorch are imported through :func:`sklearn_icml.utils.optional_import`, so
importing this module without the ``neural`` extra raises an ImportError naming the extra.
``sklearn_icml.utils`` itself does not import this module (it must stay torch-free).
"""

import contextlib
import copy

import numpy as np
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets

from ._optional import optional_import
from ._random import draw_seed

torch = optional_import("torch", "neural")
skorch = optional_import("skorch", "neural")

def torch_seed(random_state):
    """Draw the integer seed for torch from ``random_state``.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        As everywhere in scikit-learn. An int always gives the same seed; a RandomState is
        advanced by one draw; None draws from numpy's global RNG.

    Returns
    -------
    seed : int
        In ``[0, 2**31 - 1)``.

    Examples
    --------
    >>> from sklearn_icml.utils._skorch import torch_seed
    >>> torch_seed(0) == torch_seed(0)
    True
    """
    return draw_seed(random_state)


@contextlib.contextmanager
def seeded(seed, device="cpu"):
    """Run a block with torch's RNG seeded to ``seed``, restoring the caller's RNG after.

    The CPU generator (and the CUDA generator of ``device`` when it is a CUDA device) is
    forked, so weight initialisation, dropout and shuffling inside the block are
    reproducible while the global torch RNG the user sees is unchanged.

    Parameters
    ----------
    seed : int
        From :func:`torch_seed`.
    device : str or torch.device, default="cpu"
        The device the block computes on.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.utils._skorch import seeded
    >>> with seeded(3):
    ...     a = torch.rand(2)
    >>> with seeded(3):
    ...     b = torch.rand(2)
    >>> bool(torch.equal(a, b))
    True
    """
    device = torch.device(device)
    devices = []
    if device.type == "cuda":
        devices = [device.index if device.index is not None else torch.cuda.current_device()]
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


@contextlib.contextmanager
def torch_threads(n_threads):
    """Run a block with ``n_threads`` torch intra-op threads, restoring the setting after.

    Small networks trained one tiny mini-batch at a time gain nothing from intra-op
    parallelism, and on a machine where other processes keep the cores busy, torch's
    spinning worker threads can make each step tens of times slower. ``None`` leaves
    torch's setting alone.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.utils._skorch import torch_threads
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    if n_threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(n_threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def check_device(device, name="device"):
    """Validate a torch device and return it as a string.

    Parameters
    ----------
    device : str or torch.device
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
    name : str, default="device"
        Parameter name for error messages.

    Returns
    -------
    device : str

    Raises
    ------
    ValueError
        If the string is not a device torch knows, or CUDA is asked for but not available.

    Examples
    --------
    >>> from sklearn_icml.utils._skorch import check_device
    >>> check_device("cpu")
    'cpu'
    """
    if not isinstance(device, str | torch.device):
        raise TypeError(
            f"{name} must be a string such as 'cpu' or 'cuda', or a torch.device; "
            f"got {device!r} instead."
        )
    try:
        parsed = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(
            f"{name} must be a torch device such as 'cpu' or 'cuda'; got {device!r} instead."
        ) from exc
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"{name}={device!r} asks for CUDA but torch.cuda.is_available() is False; "
            "use device='cpu'."
        )
    return str(parsed)


def encode_class_labels(y, name="y"):
    """Check a classification target and encode it as class indices.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels of any type scikit-learn accepts (ints, strings, ...).
    name : str, default="y"
        Parameter name for error messages.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        The sorted distinct labels (becomes ``classes_``).
    y_index : ndarray of shape (n_samples,), dtype int64
        Index of each label in ``classes``.

    Raises
    ------
    ValueError
        If ``y`` is not a classification target or holds a single class.

    Examples
    --------
    >>> from sklearn_icml.utils._skorch import encode_class_labels
    >>> encode_class_labels(["b", "a", "b"])
    (array(['a', 'b'], dtype='<U1'), array([1, 0, 1]))
    """
    check_classification_targets(y)
    encoder = LabelEncoder().fit(y)
    if encoder.classes_.shape[0] < 2:
        raise ValueError(
            f"{name} has only 1 class ({encoder.classes_[0]!r}); a classifier needs at "
            "least 2 classes."
        )
    return encoder.classes_, encoder.transform(y).astype(np.int64)


def features_to_float32(X):
    """Return validated 2-D features as a C-contiguous float32 array (a copy if needed).

    ``check_estimator`` feeds float64, float32, int and read-only memory-mapped arrays;
    torch modules want float32. The caller's array is never modified.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.utils._skorch import features_to_float32
    >>> features_to_float32(np.array([[1, 2]])).dtype
    dtype('float32')
    """
    return np.ascontiguousarray(X, dtype=np.float32)


class StopOnLoss(skorch.callbacks.Callback):
    """Stop training once the epoch's ``train_loss`` is below ``threshold``.

    skorch catches the ``KeyboardInterrupt`` this raises and ends training cleanly (its own
    ``EarlyStopping`` does the same).
    """

    def __init__(self, threshold):
        self.threshold = threshold

    def on_epoch_end(self, net, **kwargs):
        loss = net.history[-1, "train_loss"]
        if not np.isfinite(loss):
            raise KeyboardInterrupt
        if loss < self.threshold:
            raise KeyboardInterrupt


class SkorchEstimatorMixin:
    """Build, seed and fit a skorch net inside a scikit-learn estimator.

    A subclass (``class MyClassifier(ClassifierMixin, SkorchEstimatorMixin,
    BaseEstimator)``) declares the parameters ``random_state``, ``device`` and ``verbose``
    (and optionally ``n_threads``, see :func:`torch_threads`),
    validates its input itself, and in ``fit`` calls :meth:`_fit_net` with a skorch net
    class and its keyword arguments. The mixin

    * passes ``device`` (checked by :func:`check_device`) and keeps skorch silent unless
      ``verbose`` (``verbose=1`` prints skorch's per-epoch table);
    * disables skorch's internal validation split (``train_split=None``): validation is
      the user's business, through scikit-learn's tools;
    * seeds torch from ``random_state`` (:func:`torch_seed`, :func:`seeded`), so a fit is
      reproducible and leaves the global torch RNG alone;
    * optionally stops when the epoch's training loss falls below a threshold;
    * stores the fitted net in ``net_`` and exposes ``module_``, ``history_`` and
      ``n_epochs_run_`` from it. A fitted estimator pickles and unpickles through skorch's
      own ``__getstate__``, which moves CUDA tensors to the CPU when CUDA is missing.
    """

    def _fit_net(self, net_cls, X, y, *, stop_below=None, **net_kwargs):
        """Build ``net_cls(**net_kwargs)``, fit it on ``(X, y)`` under the seed, store it.

        Parameters
        ----------
        net_cls : subclass of skorch.NeuralNet
        X, y : arrays or tensors skorch's Dataset accepts
        stop_below : float or None
            Stop after the first epoch whose ``train_loss`` is below this value. Training
            always stops, and this method raises ValueError, when the loss is not finite.
        **net_kwargs
            Everything else for the net (``module``, ``criterion``, ``optimizer``, ``lr``,
            ``max_epochs``, ``module__*``, ``iterator_train*`` ...).

        Returns
        -------
        net : the fitted skorch net, also stored in ``self.net_``.
        """
        device = check_device(self.device)
        verbose = int(self.verbose)
        # the user's callbacks are copied: a fit never mutates a parameter
        callbacks = copy.deepcopy(list(net_kwargs.pop("callbacks", None) or []))
        # also stops (then fit raises) as soon as the loss is NaN or infinite
        callbacks.append(("stop_on_loss", StopOnLoss(stop_below or 0.0)))
        kwargs = {"train_split": None, "verbose": verbose, "device": device}
        if not verbose:
            kwargs["callbacks__print_log"] = None  # skip formatting a table nobody sees
        kwargs.update(net_kwargs)
        seed = torch_seed(self.random_state)
        with seeded(seed, device), torch_threads(getattr(self, "n_threads", None)):
            net = net_cls(callbacks=callbacks, **kwargs)
            net.fit(X, y)
        self.net_ = net
        self._check_finite_history()
        return net

    @property
    def module_(self):
        """The fitted torch module (``net_.module_``)."""
        return self.net_.module_

    @property
    def history_(self):
        """skorch's ``History`` of the fit: one dict per epoch (``train_loss``, ``dur``...)."""
        return self.net_.history

    @property
    def n_epochs_run_(self):
        """Number of epochs actually run (fewer than ``max_epochs`` after an early stop)."""
        return len(self.net_.history)

    def _check_finite_history(self):
        """Raise if training diverged (a non-finite epoch loss)."""
        losses = self.history_[:, "train_loss"]
        if losses and not np.isfinite(losses[-1]):
            raise ValueError(
                f"training diverged: the training loss became {losses[-1]!r} at epoch "
                f"{len(losses)}. Lower lr or the initial weight scale."
            )

