"""DPSGDClassifier: DP-SGD (skorch) with balanced iteration or Poisson subsampling."""

import functools

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import BaseNeuralEstimator, NeuralClassifierMixin
from ..utils import draw_seed, optional_import
from ..utils._deprecation import DEPRECATED, DEPRECATED_PARAM, renamed_param
from ..utils._docstrings import fill_doc
from ..utils._param_validation import OPEN_UNIT_INTERVAL, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ..utils._skorch import encode_class_labels, features_to_float32, torch_threads
from ..utils.validation import check_fits_dtype, check_layer_sizes, validate_input
from ._dpsgd_net import MLP, DPSGDNet
from ._noise_calibration import find_noise_multiplier
from ._partition_rdp import (
    bis_rdp,
    default_orders,
    model_split_rdp,
    poisson_rdp,
    rdp_to_epsilon,
)
from ._partition_samplers import BalancedIterationSampler, PoissonIterationSampler

torch = optional_import("torch", "neural")
nn = torch.nn


@functools.lru_cache(maxsize=64)
def _cached_noise_multiplier(target_epsilon, delta, scheme, items):
    return find_noise_multiplier(target_epsilon, delta, scheme=scheme, **dict(items))


@functools.lru_cache(maxsize=64)
def _cached_rdp(scheme, sigma, items):
    return _RDP[scheme](sigma, orders=_scheme_orders(scheme), **dict(items))


def _scheme_orders(scheme):
    # model splitting is exact at integer orders; the others take the real-order grid
    return default_orders("exact" if scheme == "model_split" else "efficient")


def _accounting(sampler, num_steps, num_selected, num_epochs, num_parts):
    """``(scheme, scheme kwargs)`` of the accountant for a DP-SGD configuration."""
    T, k, E, d = num_steps, num_selected, num_epochs, num_parts
    if sampler == "bis" and d > 1 and k == 1:
        # one uniformly random (step, part) cell out of T*d: model splitting with T*d parts
        return "model_split", {"num_parts": T * d, "sample_rate": 1.0, "num_rounds": E}
    if sampler == "bis":
        # with k > 1 the secret part is not accounted (a valid, looser bound)
        return "bis", {"num_steps": T, "num_selected": k, "num_epochs": E}
    if d > 1:
        return "model_split", {"num_parts": d, "sample_rate": k / T, "num_rounds": T * E}
    return "poisson", {"sample_rate": k / T, "num_steps": T * E}


_RDP = {"bis": bis_rdp, "model_split": model_split_rdp, "poisson": poisson_rdp}


@fill_doc
class DPSGDClassifier(NeuralClassifierMixin, BaseNeuralEstimator):
    """Differentially private SGD classifier with balanced iteration subsampling.

    A skorch network (logistic regression by default, or an MLP / your module) trained by
    DP-SGD: each step sums per-sample gradients clipped to ``max_grad_norm``, adds Gaussian
    noise of std ``noise_multiplier * max_grad_norm`` and divides by the expected batch
    size. Batches come from :class:`BalancedIterationSampler` (each sample in exactly
    ``num_selected`` of the ``steps_per_epoch`` steps of an epoch) or from
    :class:`PoissonIterationSampler` (rate ``num_selected / steps_per_epoch``), and the privacy
    guarantee ``epsilon_`` at ``delta`` is read from the matching accountant. With
    ``num_parts > 1`` each sample also updates only one random part of the parameters.

    Parameters
    ----------
    module : callable or None, default=None
        A torch ``nn.Module`` class (or factory) called as
        ``module(n_features=..., n_outputs=...)``; ``n_outputs`` is 1 for two classes
        (one logit) and the number of classes otherwise. ``None`` builds a linear model or,
        with ``hidden_layer_sizes``, a ReLU MLP. Avoid batch normalisation (it mixes
        samples and breaks per-sample clipping).
    hidden_layer_sizes : tuple of int, default=()
        Hidden layers of the default module; ``()`` is (multinomial) logistic regression.
    noise_multiplier : float or None, default=None
        Noise std divided by the clipping norm. ``None``: the smallest value that meets
        ``target_epsilon`` (:func:`find_noise_multiplier`).
    target_epsilon : float, default=8.0
        Privacy budget used when ``noise_multiplier`` is None.
    delta : float, default=1e-5
        The delta of the (epsilon, delta) guarantee.
    max_grad_norm : float, default=1.0
        Per-sample clipping norm ``C``.
    steps_per_epoch : int, default=200
        DP-SGD steps per epoch, the ``T`` of the paper.
    num_selected : int, default=20
        Steps each sample joins per epoch, the ``k`` of the paper (Poisson: rate ``k / T``).
    max_epochs : int, default=1
        Epochs (passes of ``steps_per_epoch`` steps); each re-draws the allocation. All of
        them run: the privacy guarantee counts every epoch.
    sampler : {"bis", "poisson"}, default="bis"
        Balanced iteration subsampling or Poisson subsampling.
    num_parts : int, default=1
        Split the parameters into this many disjoint random parts; each sample updates one
        random part per step (clipped after masking).
    learning_rate : float, default=0.5
        SGD learning rate: ``w -= learning_rate * noisy_sum / (n k / T)``.
    batch_size : int, default=256
        Batch size for prediction only.
    %(random_state)s
        Here it seeds the batches, the initial weights, the noise and the parts.
    %(device)s
    %(torch_n_jobs)s
        The caller's setting is restored afterwards. DP-SGD takes many small per-sample
        steps, where one thread is fastest and immune to oversubscription; raise it for
        large modules.
    %(verbose)s
        ``1`` prints skorch's per-epoch table.
    lr : float
        Deprecated name of ``learning_rate``.

        .. deprecated:: 0.3
           ``lr`` was renamed ``learning_rate`` and will be removed in 0.4.
    **kwargs
        Arguments prefixed ``module__``, ``optimizer__``, ``criterion__``,
        ``iterator_train__``, ``iterator_valid__`` or ``callbacks__`` are routed to the
        skorch net, as skorch does (e.g. ``module__hidden=32`` for your own ``module``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` has string column names.
    noise_multiplier_ : float
        Noise multiplier used.
    epsilon_ : float
        The epsilon guaranteed at ``delta`` by the whole training run.
    best_order_ : float
        The RDP order attaining ``epsilon_``.
    rdp_ : ndarray of shape (n_orders,)
        RDP of the run at ``orders_``.
    orders_ : ndarray of shape (n_orders,)
        RDP orders.
    accounting_ : str
        The accountant used: ``"bis"``, ``"poisson"`` or ``"model_split"``.
    expected_batch_size_ : float
        ``n * k / T``, the divisor of the noisy gradient sum.
    net_ : skorch.NeuralNet
        The fitted skorch net (``module_``, ``history_`` and ``n_epochs_run_`` come from
        it).

    See Also
    --------
    BalancedIterationSampler, PartitionRDPAccountant, find_noise_multiplier

    Notes
    -----
    Training length is counted in epochs (``max_epochs``), as for every neural estimator of
    this library, and ``steps_per_epoch`` is the ``T`` of balanced iteration subsampling
    (Dong, Chen & Ozgur 2025): the accountant needs the exact number of steps of each
    epoch, so it is a length, not an upper bound like ``max_iter``.

    The guarantee covers the trained parameters. When ``fit`` ends, the fitted model forgets
    the batch allocation (the sampler, each step's batch size and loss, the split of the
    parameters into parts), whose secrecy the amplification needs, so a pickled model carries
    none of it and its size does not grow with the number of rows. Two things stay with you:
    an integer ``random_state`` reproduces the allocation (keep it secret, or fit with
    ``random_state=None``, before sharing a model), and the per-epoch ``train_loss`` in
    ``history_`` (also printed with ``verbose``) is computed on the private data without
    noise: do not release it.

    With ``sampler="bis"`` and ``num_parts > 1`` the random part is accounted for only when
    ``num_selected == 1`` (then one of ``T * num_parts`` cells is chosen uniformly, which is
    model splitting with ``T * num_parts`` parts). The Poisson accountant needs
    ``dp_accounting``.

    References
    ----------
    .. [1] A. Dong, W.-N. Chen, A. Ozgur, "Leveraging Randomness in Model and Data
       Partitioning for Privacy Amplification", ICML 2025, arXiv:2503.03043.
    .. [2] M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_icml.privacy import DPSGDClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = DPSGDClassifier(target_epsilon=8.0, random_state=0).fit(X, y)
    >>> round(clf.epsilon_, 2), round(clf.noise_multiplier_, 3)
    (8.0, 1.194)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        **BaseNeuralEstimator._parameter_constraints,
        "module": [callable, None],
        "hidden_layer_sizes": [tuple, list],
        "noise_multiplier": [POSITIVE_REAL, None],
        "target_epsilon": [POSITIVE_REAL],
        "delta": [OPEN_UNIT_INTERVAL],
        "max_grad_norm": [POSITIVE_REAL],
        "steps_per_epoch": [POSITIVE_INT],
        "num_selected": [POSITIVE_INT],
        "max_epochs": [POSITIVE_INT],
        "sampler": [StrOptions({"bis", "poisson"})],
        "num_parts": [POSITIVE_INT],
        "learning_rate": [POSITIVE_REAL],
        "batch_size": [POSITIVE_INT],
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],  # deprecated name of learning_rate
    }

    def __init__(
        self,
        *,
        module=None,
        hidden_layer_sizes=(),
        noise_multiplier=None,
        target_epsilon=8.0,
        delta=1e-5,
        max_grad_norm=1.0,
        steps_per_epoch=200,
        num_selected=20,
        max_epochs=1,
        sampler="bis",
        num_parts=1,
        learning_rate=0.5,
        batch_size=256,
        random_state=None,
        device="cpu",
        n_jobs=1,
        verbose=0,
        lr=DEPRECATED,
        **kwargs,
    ):
        store_params(self, locals())

    def _account(self):
        """Choose sigma and compute the run's RDP and epsilon."""
        scheme, kwargs = _accounting(
            self.sampler, self.steps_per_epoch, self.num_selected, self.max_epochs, self.num_parts
        )
        if self.noise_multiplier is None:
            sigma = _cached_noise_multiplier(
                float(self.target_epsilon),
                float(self.delta),
                scheme,
                tuple(sorted(kwargs.items())),
            )
        else:
            sigma = float(self.noise_multiplier)
        rdp = _cached_rdp(scheme, sigma, tuple(sorted(kwargs.items()))).copy()
        orders = _scheme_orders(scheme)
        self.noise_multiplier_ = sigma
        self.accounting_ = scheme
        self.orders_ = orders
        self.rdp_ = rdp
        self.epsilon_, self.best_order_ = rdp_to_epsilon(rdp, orders, self.delta)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train by DP-SGD and account for its privacy.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : object
            The fitted classifier.
        """
        learning_rate = renamed_param(self, "lr", "learning_rate")
        T, k = self.steps_per_epoch, self.num_selected
        if k > T:
            raise ValueError(
                f"num_selected must be <= steps_per_epoch={T} (a sample joins at most every "
                f"step). Got {k!r} instead."
            )
        hidden = check_layer_sizes(self.hidden_layer_sizes, "hidden_layer_sizes")
        X, y = validate_input(self, X, y)
        check_fits_dtype(X, "X", np.float32, estimator=self)  # the network is float32
        self.classes_, y_index = encode_class_labels(y)
        binary = self.classes_.shape[0] == 2
        n_outputs = 1 if binary else self.classes_.shape[0]
        X32 = features_to_float32(X)
        y_t = y_index.astype(np.float32) if binary else y_index
        n = X32.shape[0]

        self._account()
        sampler_seed = draw_seed(self.random_state)
        if self.sampler == "bis":
            sampler = BalancedIterationSampler(
                n_samples=n, num_steps=T, num_selected=k, random_state=sampler_seed
            )
        else:
            sampler = PoissonIterationSampler(
                n_samples=n, num_steps=T, sample_rate=k / T, random_state=sampler_seed
            )
        self.expected_batch_size_ = n * k / T
        if self.module is None:
            module_kwargs = {"module": MLP, "module__hidden_layer_sizes": hidden}
        else:
            module_kwargs = {"module": self.module}
        self._fit_net(
            DPSGDNet,
            X32,
            y_t,
            criterion=nn.BCEWithLogitsLoss if binary else nn.CrossEntropyLoss,
            optimizer=torch.optim.SGD,
            lr=float(learning_rate),
            max_epochs=int(self.max_epochs),
            batch_size=int(self.batch_size),
            module__n_features=X32.shape[1],
            module__n_outputs=n_outputs,
            dp_sampler=sampler,
            noise_multiplier=self.noise_multiplier_,
            max_grad_norm=float(self.max_grad_norm),
            expected_batch_size=self.expected_batch_size_,
            num_parts=int(self.num_parts),
            binary=binary,
            **module_kwargs,
        )
        self._check_finite_parameters(learning_rate)
        self.net_.drop_private_state()
        return self

    def _check_finite_parameters(self, learning_rate):
        for name, p in self.module_.named_parameters():
            if not torch.isfinite(p).all():
                raise ValueError(
                    f"training diverged: parameter {name!r} became non-finite; lower "
                    f"learning_rate. Got learning_rate={learning_rate!r} instead."
                )

    def decision_function(self, X):
        """Logits of the network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        check_fits_dtype(X, "X", np.float32, estimator=self)
        with torch_threads(self.n_jobs):
            logits = self.net_.forward(features_to_float32(X)).detach().cpu().numpy()
        logits = logits.astype(np.float64)
        return logits.reshape(-1) if self.classes_.shape[0] == 2 else logits

    def _predict_logits(self, X):
        # two classes: the one logit s is the log-odds of class 1, so the logits are (0, s)
        scores = self.decision_function(X)
        if self.classes_.shape[0] == 2:
            return np.column_stack([np.zeros_like(scores), scores])
        return scores

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
