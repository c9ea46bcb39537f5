"""torch and skorch pieces shared by the neural estimators: seeding, threads, devices, labels.

Every neural estimator of sklearn-icml is a scikit-learn estimator that builds a skorch
``NeuralNet`` in ``fit`` and keeps it in ``net_`` (:class:`sklearn_icml.base.BaseNeuralEstimator`
does the building): a *thin wrapper*, because a skorch net itself sets attributes in
``__init__`` and does not validate its input as ``check_estimator`` requires. This module
holds what does not depend on the method:

* :func:`seeded` runs a block under a forked torch RNG seeded with an integer from
  :func:`sklearn_icml.utils.draw_seed`, so the same ``random_state`` gives the same network
  and the caller's global torch RNG is left untouched;
* :func:`torch_threads` bounds torch's intra-op threads during a fit or a prediction
  (estimators expose it as ``n_jobs``);
* :func:`check_device` validates ``device`` (CPU by default, ``"cuda"`` honoured when
  available, a clear error otherwise);
* :func:`encode_class_labels` turns any classification target (strings, ints, the 2-D
  column vectors that ``check_estimator`` feeds) into class indices and ``classes_``;
* :func:`features_to_float32` converts validated 2-D features to the float32 C-contiguous
  array torch modules expect;
* :class:`StopOnLoss` ends training when the loss falls below a threshold or stops being
  finite.

torch and skorch are imported through :func:`sklearn_icml.utils.optional_import`, so
importing this module without the ``neural`` extra raises an ImportError naming the extra.
``sklearn_icml.utils`` itself does not import this module (it must stay torch-free).
"""

import contextlib
import copy
import sys
import time

import numpy as np
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets

from ._optional import optional_import
from ._parallel import resolve_n_jobs
from ._params import store_params
from ._progress import is_terminal

torch = optional_import("torch", "neural")
skorch = optional_import("skorch", "neural")

@contextlib.contextmanager
def seeded(seed, device="cpu"):
    """Run a block with torch's RNG seeded to ``seed``, restoring the caller's RNG after.

    The CPU generator (and the CUDA generator of ``device`` when it is a CUDA device) is
    forked, so weight initialisation, dropout and shuffling inside the block are
    reproducible while the global torch RNG the user sees is unchanged.

    Parameters
    ----------
    seed : int
        From :func:`sklearn_icml.utils.draw_seed`.
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
def torch_threads(n_jobs):
    """Run a block with ``n_jobs`` torch intra-op threads, restoring the setting after.

    Small networks trained one tiny mini-batch at a time gain nothing from intra-op
    parallelism, and on a machine where other processes keep the cores busy, torch's
    spinning worker threads can make each step tens of times slower. ``n_jobs`` has the
    library's one meaning (:func:`~sklearn_icml.utils._parallel.resolve_n_jobs`): ``None``
    is 1 thread unless a :func:`joblib.parallel_config` context sets ``n_jobs``, -1 every
    core.

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
    before = torch.get_num_threads()
    torch.set_num_threads(resolve_n_jobs(n_jobs))
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
        store_params(self, locals())

    def on_epoch_end(self, net, **kwargs):
        loss = net.history[-1, "train_loss"]
        if not np.isfinite(loss):
            raise KeyboardInterrupt
        if loss < self.threshold:
            raise KeyboardInterrupt


class PlainPrintLog(skorch.callbacks.PrintLog):
    """skorch's per-epoch table, plain when stdout is not a terminal, with the fit's clock.

    skorch's ``PrintLog`` colours the best value of each column with ANSI codes, which end
    up as escape sequences in a log file or a captured output. This one colours only when
    it prints to a terminal, and marks the best values with ``*`` otherwise (a ``sink``
    other than ``print`` is never a terminal). Each row also gets an ``elapsed`` column,
    last: the seconds since training started (skorch's ``dur`` is the epoch's own), as the
    library's other progress lines have (:mod:`sklearn_icml.utils._progress`).

    Examples
    --------
    >>> from sklearn_icml.utils._skorch import PlainPrintLog
    >>> log = PlainPrintLog().initialize()
    >>> log._start = 0.0
    >>> row = {"epoch": 1, "train_loss": 0.5, "train_loss_best": True, "dur": 0.1}
    >>> "\x1b" in log.table(row), "0.5000*" in log.table(row)
    (False, True)
    """

    def initialize(self):
        super().initialize()
        self._start = time.perf_counter()
        return self

    def on_train_begin(self, net, **kwargs):
        self._start = time.perf_counter()

    def _plain(self):
        return self.sink is not print or not is_terminal(sys.stdout)

    def table(self, row):
        return super().table({**row, "elapsed": time.perf_counter() - self._start})

    def _sorted_keys(self, keys):
        ordered = [key for key in super()._sorted_keys(keys) if key != "elapsed"]
        return ordered + ["elapsed"] if "elapsed" in keys else ordered

    def format_row(self, row, key, color):
        best = bool(row.get(key + "_best"))
        if not (best and self._plain()):
            return super().format_row(row, key, color)
        plain = {k: v for k, v in row.items() if k != key + "_best"}
        return f"{super().format_row(plain, key, color)}*"


def relu_mlp(n_features, n_outputs, hidden_layer_sizes=()):
    """``Linear -> ReLU -> ... -> Linear`` as a ``torch.nn.Sequential`` (linear when empty).

    Examples
    --------
    >>> from sklearn_icml.utils._skorch import relu_mlp
    >>> relu_mlp(4, 2, (8,))
    Sequential(
      (0): Linear(in_features=4, out_features=8, bias=True)
      (1): ReLU()
      (2): Linear(in_features=8, out_features=2, bias=True)
    )
    """
    layers, width = [], int(n_features)
    for size in hidden_layer_sizes:
        layers += [torch.nn.Linear(width, int(size)), torch.nn.ReLU()]
        width = int(size)
    layers.append(torch.nn.Linear(width, int(n_outputs)))
    return torch.nn.Sequential(*layers)


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
        torch intra-op threads during the evaluation (None is 1, -1 every core; see
        :func:`torch_threads`).

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
