"""DWMClassifier and DWMRegressor: a skorch learner trained on data weighted by a DWM."""

import copy
import functools

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..base import NeuralClassifierMixin, NeuralRegressorMixin
from ..utils import optional_import
from ..utils._deprecation import (
    DEPRECATED,
    DEPRECATED_PARAM,
    keyword_only_after,
    renamed_param,
)
from ..utils._params import store_params
from ..utils._skorch import (
    encode_class_labels,
    features_to_float32,
    float64_outputs,
    torch_threads,
)
from ..utils.validation import (
    check_fits_dtype,
    check_input_array,
    check_layer_sizes,
    validate_input,
)
from ._base import _BaseDWM, check_sample_feature_width, sample_features_array, transform_loss
from ._bilevel import LOSSES, MLPModule
from ._weighting_model import compute_weights

torch = optional_import("torch", "neural")

# rows per forward call at prediction time (bounds memory, not results)
_PREDICT_CHUNK = 1 << 16


def tabular_features(module, X, static, losses, *, loss_feature):
    """DWM input of a tabular batch: ``[standardised x, encoded y, sample features, loss]``."""
    return torch.cat([static, transform_loss(losses, loss_feature).unsqueeze(1)], dim=1)


def module_outputs(module, X, device="cpu"):
    """Outputs of ``module`` on float ``X`` in float64 (a copy, in eval mode), chunked."""
    X = np.asarray(X, dtype=np.float64)
    return float64_outputs(
        module, X, rows_per_chunk=_PREDICT_CHUNK, empty_shape=(0, 1), device=device
    )


class _TabularDWM(_BaseDWM):
    """What DWMClassifier and DWMRegressor share."""

    _is_classifier = False

    _parameter_constraints = {
        "module": "no_validation",  # None, a module or a module factory; checked in fit
        "hidden_layer_sizes": [tuple, list],
        "standardize": ["boolean"],
        "hidden_sizes": [tuple, list, DEPRECATED_PARAM],  # deprecated: hidden_layer_sizes
        **_BaseDWM._parameter_constraints,
    }

    def __init__(
        self,
        *,
        module=None,
        hidden_layer_sizes=(64,),
        standardize=True,
        learning_rate=0.1,
        optimizer="sgd",
        max_iter=3000,
        batch_size=64,
        n_stages=5,
        dwm_steps_per_stage=100,
        dwm_learning_rate=1e-3,
        dwm_hidden=32,
        temperature=1.0,
        lookahead_learning_rate=None,
        hypergradient="exact",
        use_batch_context=True,
        online=False,
        loss_feature="auto",
        validation_fraction=0.1,
        val_batch_size=256,
        warm_start_dwm=None,
        callbacks=None,
        n_jobs=1,
        random_state=None,
        device="cpu",
        verbose=0,
        hidden_sizes=DEPRECATED,
        lr=DEPRECATED,
        dwm_lr=DEPRECATED,
        lookahead_lr=DEPRECATED,
        **kwargs,
    ):
        store_params(self, locals())

    # -- target handling, specialised below
    def _loss_kind(self):
        return "cross_entropy" if self._is_classifier else "squared_error"

    def _resolved_loss_feature(self):
        if self.loss_feature != "auto":
            return self.loss_feature
        return "raw" if self._is_classifier else "log1p"

    def _hidden_layer_sizes(self):
        sizes = renamed_param(self, "hidden_sizes", "hidden_layer_sizes")
        return check_layer_sizes(sizes, "hidden_layer_sizes")

    def _targets(self, y, name="y"):
        """Learner targets (int64 class index or float32 value) and their DWM encoding."""
        if self._is_classifier:
            y = np.asarray(y)
            unseen = ~np.isin(y, self.classes_)
            if np.any(unseen):
                raise ValueError(
                    f"{name} contains classes not seen in y: "
                    f"{np.unique(y[unseen]).tolist()!r}; the classes of y are "
                    f"{self.classes_.tolist()!r}. Got {name} with unseen classes instead."
                )
            index = np.searchsorted(self.classes_, y).astype(np.int64)
            onehot = np.eye(self.classes_.shape[0], dtype=np.float64)[index]
            return index, onehot
        values = np.asarray(y, dtype=np.float64)
        code = (values - self._y_mean) / self._y_scale
        # the learner fits the standardised target too (mapped back in predict), so the
        # defaults fit targets of any scale; standardize=False trains on the raw values
        learner = code if self.standardize else values
        return learner.astype(np.float32), code[:, None]

    def _validate_y(self, y, n, name):
        if self._is_classifier:
            y = check_input_array(y, ensure_2d=False, dtype=None, input_name=name)
        else:
            y = check_input_array(y, ensure_2d=False, dtype=np.float64, input_name=name)
        if y.ndim != 1:
            raise ValueError(f"{name} must be 1-D. Got an array of shape {y.shape} instead.")
        if y.shape[0] != n:
            raise ValueError(
                f"{name} must have one value per row of the matching X ({n}). Got "
                f"{y.shape[0]} instead."
            )
        return y

    def fit(self, X, y, X_val=None, y_val=None, sample_features=None):
        """Train the learner on ``(X, y)`` with weights from a bi-level trained DWM.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training pool.
        y : array-like of shape (n_samples,)
            Targets.
        X_val : array-like of shape (n_val, n_features), default=None
            Validation data whose loss the weighting model learns to lower (clean data from
            the target distribution). When None, a (stratified, for classifiers) share
            ``validation_fraction`` of ``X`` is held out; those rows are never trained on.
        y_val : array-like of shape (n_val,), default=None
            Targets of ``X_val``; required with ``X_val``.
        sample_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Extra per-sample inputs of the weighting model (e.g. a one-hot source or domain
            id). Their weighted means per stage are reported in ``stage_weight_stats_``.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._validate_params()
        hidden_layer_sizes = self._hidden_layer_sizes()
        X, y = validate_input(self, X, y, y_numeric=not self._is_classifier)
        n, d = X.shape
        if self._is_classifier:
            self.classes_, _ = encode_class_labels(y)
        else:
            y = y.astype(np.float64)
            # its mean and deviation standardise it: a finite 1e300 would overflow there
            check_fits_dtype(y, "y", np.float32, estimator=self)
        sf = sample_features_array(sample_features, n)
        if X_val is None:
            if y_val is not None:
                raise ValueError("y_val was given without X_val; pass both or neither. Got "
                             "X_val=None instead.")
            rows, val_rows = self._split_rows(n, stratify=y if self._is_classifier else None)
            X_val, y_val = X[val_rows], y[val_rows]
            self.validation_indices_ = val_rows
        else:
            if y_val is None:
                raise ValueError("X_val was given without y_val; pass both or neither. Got "
                                 "y_val=None instead.")
            X_val = validate_input(self, X_val, reset=False)
            y_val = self._validate_y(y_val, X_val.shape[0], "y_val")
            rows = np.arange(n)
            self.validation_indices_ = None
        X_tr, y_tr = X[rows], y[rows]
        if not self._is_classifier:
            self._y_mean = float(y_tr.mean())
            scale = float(y_tr.std())
            self._y_scale = scale if scale > 0 else 1.0
        target, y_code = self._targets(y_tr)
        target_val, _ = self._targets(y_val, name="y_val")
        self._x_mean = X_tr.mean(axis=0)
        scale = X_tr.std(axis=0)
        self._x_scale = np.where(scale > 0, scale, 1.0)
        parts = [(X_tr - self._x_mean) / self._x_scale, y_code]
        sf_tr = None
        self.n_sample_features_ = 0
        if sf is not None:
            sf_tr = sf[rows]
            parts.append(sf_tr)
            self.n_sample_features_ = sf.shape[1]
        static = np.ascontiguousarray(np.hstack(parts), dtype=np.float32)
        n_outputs = self.classes_.shape[0] if self._is_classifier else 1
        self.loss_feature_ = self._resolved_loss_feature()
        return self._fit_bilevel(
            X=self._learner_input(X_tr),
            y=target,
            static=static,
            featurize=functools.partial(tabular_features, loss_feature=self.loss_feature_),
            n_dwm_features=static.shape[1] + 1,
            X_val=self._learner_input(X_val),
            y_val=target_val,
            loss_kind=self._loss_kind(),
            module_kwargs=self._resolve_module(
                d, n_outputs, {"module__hidden_layer_sizes": hidden_layer_sizes}
            ),
            train_rows=rows,
            n_rows=n,
            share_features=sf_tr,
        )

    def _resolve_module(self, n_features, n_outputs, default_kwargs):
        module = self.module
        if module is None:
            return {"module": MLPModule, "module__n_features": n_features,
                    "module__n_outputs": n_outputs, **default_kwargs}
        if isinstance(module, torch.nn.Module):
            return {"module": copy.deepcopy(module)}
        if callable(module):
            return {"module": module, "module__n_features": n_features,
                    "module__n_outputs": n_outputs}
        raise TypeError(
            "module must be None, a torch.nn.Module instance or a callable "
            "module(n_features=..., n_outputs=...) returning one. Got "
            f"{type(module).__name__} instead."
        )

    def _learner_input(self, X):
        """What the learner sees: X standardised with the pool's statistics (if asked)."""
        if self.standardize:
            X = (X - self._x_mean) / self._x_scale
        return features_to_float32(X)

    def _outputs(self, X):
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        if self.standardize:
            X = (X - self._x_mean) / self._x_scale
        with torch_threads(self.n_jobs):
            return module_outputs(self.module_, X, device=self.net_.device)

    @keyword_only_after(4)
    def compute_weights(self, X, y, sample_features=None, *, batch_size=None):
        """Weights the fitted DWM gives the rows of ``(X, y)``, batch by batch.

        The DWM input of each row is built as in training, with the fitted learner's loss
        on the row. Rows are cut in order into batches of ``batch_size``; weights are
        positive with mean 1 within each batch.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_features : array-like of shape (n_samples, k), default=None
            Required if (and only if) ``fit`` was given sample features.
        batch_size : int, default=None
            Rows per batch; None uses the training ``batch_size``.

        Returns
        -------
        weights : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        n = X.shape[0]
        y = self._validate_y(y, n, "y")
        sf = sample_features_array(sample_features, n)
        check_sample_feature_width(sf, self.n_sample_features_)
        target, y_code = self._targets(y, name="y (compute_weights)")
        parts = [(X - self._x_mean) / self._x_scale, y_code] + ([sf] if sf is not None else [])
        static = torch.as_tensor(np.hstack(parts), dtype=torch.float32)
        with torch_threads(self.n_jobs), torch.no_grad():
            module = self.module_
            device = self.net_.device
            losses = []
            for start in range(0, n, _PREDICT_CHUNK):
                stop = start + _PREDICT_CHUNK
                out = module(torch.as_tensor(self._learner_input(X[start:stop]), device=device))
                losses.append(LOSSES[self._loss_kind()](
                    out, torch.as_tensor(target[start:stop], device=device)).cpu())
            losses = torch.cat(losses) if losses else torch.empty(0)
            u = tabular_features(None, None, static, losses, loss_feature=self.loss_feature_)
            return compute_weights(
                self.weighting_model_, u, batch_size=batch_size or self.batch_size
            )


class DWMClassifier(NeuralClassifierMixin, _TabularDWM):
    """Classifier trained on data weighted by a bi-level learned Data Weighting Model.

    A small :class:`WeightingMLP` (the DWM) gives every sample of a mini-batch a positive
    weight (weights average 1 in the batch); the learner, a skorch net around an MLP,
    minimises the weighted mean cross-entropy. The DWM is trained by bi-level optimisation
    so that one weighted step of the learner lowers the loss on clean validation data
    (chain rule through the step), and it is re-trained at the start of each of
    ``n_stages`` stages because the learner's preferred data changes as it trains. Useful
    when the training pool mixes good and bad data (noisy labels, off-target sources) and
    a small clean validation set is available.

    Parameters
    ----------
    module : None, torch.nn.Module or callable, default=None
        The learner. None: an MLP with ``hidden_layer_sizes`` (``hidden_layer_sizes=()``
        gives a linear model). A module instance is copied and trained. A callable (a module class,
        say) is called as ``module(n_features=..., n_outputs=...)`` inside the seeded fit.
        The learner must be twice differentiable for ``hypergradient="exact"`` and work
        under ``torch.func.vmap`` for ``"first_order"`` (no batch norm).
    hidden_layer_sizes : tuple of int, default=(64,)
        Hidden layers of the default MLP learner.
    standardize : bool, default=True
        Feed the learner ``X`` standardised with the mean and standard deviation of the
        training pool (plain SGD with a fixed ``learning_rate`` diverges on badly scaled
        columns); for :class:`DWMRegressor` the target too (predictions are mapped back to the
        scale of ``y``). The DWM always reads standardised ``x`` and ``y``.
    learning_rate : float, default=0.1
        Learning rate of the learner's optimiser.
    optimizer : {"sgd", "adam", "adamw"}, default="sgd"
        The learner's optimiser (plain SGD has no momentum). The hypergradient always uses
        an SGD step with ``lookahead_learning_rate`` as a surrogate.
    max_iter : int, default=3000
        Learner updates (optimiser steps) in total, split evenly over the stages
        (>= ``n_stages``). The stages are the skorch epochs (``n_stages``); this counts
        the optimisation steps within them.
    batch_size : int, default=64
        Samples per learner batch and per DWM training batch (>= 2).
    n_stages : int, default=5
        Stages of the schedule: each starts with ``dwm_steps_per_stage`` DWM updates (the
        learner frozen), then trains the learner with the DWM frozen. One skorch epoch is
        one stage.
    dwm_steps_per_stage : int, default=100
        DWM updates at the start of each stage. 0 (with no ``warm_start_dwm``) gives plain
        uniform training.
    dwm_learning_rate : float, default=1e-3
        Adam learning rate of the weighting model.
    dwm_hidden : int, default=32
        Hidden width of the :class:`WeightingMLP`.
    temperature : float, default=1.0
        Softmax temperature of the weights (> 0).
    lookahead_learning_rate : float or None, default=None
        Step size of the one-step look-ahead; None uses ``learning_rate``.
    hypergradient : {"exact", "first_order"}, default="exact"
        How the derivative of the validation loss w.r.t. the weights is computed (see
        :func:`one_step_hypergradient`): by a double backward, or from per-sample
        gradients. Both give the same value for the one-step SGD surrogate.
    use_batch_context : bool, default=True
        Give the DWM the batch mean of its inputs (interactions within a batch).
    online : bool, default=False
        The online variant of the bi-level schedule: every DWM update also commits its
        look-ahead step to the learner (``theta <- theta'``, an SGD step of
        ``lookahead_learning_rate`` on the weighted batch, outside the learner's optimiser). The
        learner then also moves during DWM phases, ``dwm_steps_per_stage`` extra steps
        per stage (counted in ``n_online_steps_``, not in ``n_iter_``).
    loss_feature : {"auto", "raw", "log1p"}, default="auto"
        How the learner's current loss enters the DWM: ``"raw"`` or ``log(1 + loss)``.
        ``"auto"`` is ``"raw"`` for classifiers (cross-entropy) and ``"log1p"`` for
        regressors (squared error grows while the DWM is frozen; see Notes).
    validation_fraction : float, default=0.1
        Share of ``X`` held out as validation data when ``X_val`` is not given (stratified
        for classifiers when every class allows it). Held-out rows are never trained on.
    val_batch_size : int, default=256
        Validation rows per DWM update (all of them when there are fewer).
    warm_start_dwm : WeightingMLP, fitted DWM estimator or None, default=None
        Start from this weighting model (copied) instead of a fresh one: the transfer of a
        learned DWM to another learner or another data pool. Its input width must match.
    callbacks : list of (str, skorch.callbacks.Callback), default=None
        Extra skorch callbacks of the learner's net (copied in ``fit``). An epoch is a
        stage: ``on_epoch_begin`` runs after the stage's DWM updates.
    n_jobs : int or None, default=1
        Number of CPU workers: torch intra-op threads during ``fit`` and prediction
        (restored afterwards). ``None`` means 1 unless in a :func:`joblib.parallel_config`
        context; -1 every core.
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split, both networks and the batch order.
    device : str or torch.device, default="cpu"
        Where the learner and the DWM train (``"cuda"`` if available).
    verbose : int, default=0
        0 is silent; 1 prints skorch's per-stage table and low-ESS notes.
    hidden_sizes : tuple of int
        Deprecated name of ``hidden_layer_sizes``.

        .. deprecated:: 0.3
           ``hidden_sizes`` was renamed ``hidden_layer_sizes`` and will be removed in 0.4.
    lr : float
        Deprecated name of ``learning_rate``.

        .. deprecated:: 0.3
           ``lr`` was renamed ``learning_rate`` and will be removed in 0.4.
    dwm_lr : float
        Deprecated name of ``dwm_learning_rate``.

        .. deprecated:: 0.3
           ``dwm_lr`` was renamed ``dwm_learning_rate`` and will be removed in 0.4.
    lookahead_lr : float or None
        Deprecated name of ``lookahead_learning_rate``.

        .. deprecated:: 0.3
           ``lookahead_lr`` was renamed ``lookahead_learning_rate`` and will be removed
           in 0.4.
    **kwargs
        Parameters routed to the learner's skorch net as skorch routes them
        (``module__*``, ``optimizer__*``, ``criterion__*``, ``iterator_valid__*``,
        ``callbacks__*``); they win over the estimator's own settings.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
    net_ : DWMNet
        The fitted skorch net of the learner (also ``learner_``).
    learner_ : DWMNet
        Same as ``net_``.
    module_ : torch.nn.Module
        The trained learner module.
    history_ : skorch.History
        One record per stage (``train_loss``: weighted mean loss, ``valid_loss``,
        ``ess_mean``, ``dwm_val_loss``: the look-ahead validation loss of the stage's last
        DWM update) with one record per learner step in ``"batches"`` (``train_loss``,
        ``ess``: effective sample size of the batch's weights).
    n_epochs_run_ : int
        Stages run.
    weighting_model_ : WeightingMLP
        The trained data weighting model (on the CPU, frozen).
    stage_weight_stats_ : list of dict
        Per stage: ``stage``, ``n_steps``, ``val_loss`` (at its end),
        ``dwm_val_losses`` (the look-ahead validation loss of each DWM update),
        ``dwm_val_loss_first``/``_last``, ``ess_mean``/``ess_min`` (effective sample size
        as a fraction of the batch), ``low_ess_fraction`` (batches with ESS < 0.1 B) and,
        with ``sample_features``, ``weight_share`` (weighted mean of each feature column
        over the stage's batches: the share of the weight of each source when the columns
        are a one-hot source id) next to ``uniform_share``.
    stage_weight_sums_ : ndarray of shape (n_stages, n_samples)
        Total weight each row of ``X`` received in each stage (0 for validation rows).
    stage_sample_counts_ : ndarray of shape (n_stages, n_samples)
        How many times each row was drawn in each stage.
    validation_indices_ : ndarray or None
        Rows of ``X`` held out for validation (None when ``X_val`` was given).
    n_sample_features_ : int
        Columns of ``sample_features`` (0 without).
    loss_feature_ : {"raw", "log1p"}
        The loss transform used.
    n_iter_ : int
        Learner updates done by its optimiser (the learner phases).
    n_online_steps_ : int
        Look-ahead steps committed to the learner during DWM phases (0 unless
        ``online=True``).
    classes_ : ndarray of shape (n_classes,)
        Class labels.

    See Also
    --------
    DWMRegressor : the same for regression.
    WeightingMLP : the weighting model.
    one_step_hypergradient : the hypergradient used to train the DWM.

    Notes
    -----
    The bi-level schedule of [1]_, in stages. The learner minimises
    ``mean_i w_i l_i(theta)`` with ``w = DWM(u)`` computed per batch; at the start of each
    stage the DWM is updated ``dwm_steps_per_stage`` times with Adam on the hypergradient
    of the validation loss after one look-ahead SGD step of the learner. The learner is
    unchanged during a DWM phase (unless ``online=True``) and the DWM during a learner
    phase.

    The paper's DWM reads raw text with an LM-style encoder. For tabular data this library
    gives it ``u_i = [standardised x_i, encoded y_i (one-hot / standardised), sample
    features, loss feature]``, the tabular counterpart of what the paper's model sees (the
    sample and the learner's current view of it). The loss transform matters: a DWM
    fitted at the start of a stage is frozen while the learner moves, and a raw squared
    error drifts to values it never saw; ``log(1 + loss)`` avoids that (the default for
    regression), while the raw cross-entropy worked best for classification.

    Strongly concentrated weights are normal with this method: an effective sample size
    of a few samples in some batches is common and is only reported (``verbose``), not
    treated as an error. A greedy one-step objective with a DWM frozen per stage can also
    lock in a preference for one observed class on some noisy-label data splits.

    References
    ----------
    .. [1] Y. Yu, K. Han, H. Zhou, Y. Tang, K. Huang, Y. Wang, D. Tao, "LLM Data Selection
       and Utilization via Dynamic Bi-level Optimization", ICML 2025, arXiv:2507.16178.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_icml.weighting import DWMClassifier
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = DWMClassifier(hidden_layer_sizes=(16,), max_iter=40, n_stages=2,
    ...                     dwm_steps_per_stage=5, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> w = clf.compute_weights(X[:64], y[:64])
    >>> bool(abs(w.mean() - 1) < 1e-6 and (w > 0).all())
    True
    """

    _is_classifier = True

    def _predict_logits(self, X):
        return self._outputs(X)


class DWMRegressor(NeuralRegressorMixin, _TabularDWM):
    """Regressor trained on data weighted by a bi-level learned Data Weighting Model.

    As :class:`DWMClassifier`, with a squared-error learner (one output) and the DWM
    reading ``log(1 + squared error)`` by default. With ``standardize=True`` (the
    default) the learner fits the target standardised with the training pool's mean and
    standard deviation, so losses are in units of that deviation, and ``predict`` maps
    its outputs back to the scale of ``y``.

    Parameters
    ----------
    module : None, torch.nn.Module or callable, default=None
        The learner. None: an MLP with ``hidden_layer_sizes`` (``hidden_layer_sizes=()``
        gives a linear model). A module instance is copied and trained. A callable (a module class,
        say) is called as ``module(n_features=..., n_outputs=...)`` inside the seeded fit.
        The learner must be twice differentiable for ``hypergradient="exact"`` and work
        under ``torch.func.vmap`` for ``"first_order"`` (no batch norm).
    hidden_layer_sizes : tuple of int, default=(64,)
        Hidden layers of the default MLP learner.
    standardize : bool, default=True
        Feed the learner ``X`` standardised with the mean and standard deviation of the
        training pool (plain SGD with a fixed ``learning_rate`` diverges on badly scaled
        columns); for :class:`DWMRegressor` the target too (predictions are mapped back to the
        scale of ``y``). The DWM always reads standardised ``x`` and ``y``.
    learning_rate : float, default=0.1
        Learning rate of the learner's optimiser.
    optimizer : {"sgd", "adam", "adamw"}, default="sgd"
        The learner's optimiser (plain SGD has no momentum). The hypergradient always uses
        an SGD step with ``lookahead_learning_rate`` as a surrogate.
    max_iter : int, default=3000
        Learner updates (optimiser steps) in total, split evenly over the stages
        (>= ``n_stages``). The stages are the skorch epochs (``n_stages``); this counts
        the optimisation steps within them.
    batch_size : int, default=64
        Samples per learner batch and per DWM training batch (>= 2).
    n_stages : int, default=5
        Stages of the schedule: each starts with ``dwm_steps_per_stage`` DWM updates (the
        learner frozen), then trains the learner with the DWM frozen. One skorch epoch is
        one stage.
    dwm_steps_per_stage : int, default=100
        DWM updates at the start of each stage. 0 (with no ``warm_start_dwm``) gives plain
        uniform training.
    dwm_learning_rate : float, default=1e-3
        Adam learning rate of the weighting model.
    dwm_hidden : int, default=32
        Hidden width of the :class:`WeightingMLP`.
    temperature : float, default=1.0
        Softmax temperature of the weights (> 0).
    lookahead_learning_rate : float or None, default=None
        Step size of the one-step look-ahead; None uses ``learning_rate``.
    hypergradient : {"exact", "first_order"}, default="exact"
        How the derivative of the validation loss w.r.t. the weights is computed (see
        :func:`one_step_hypergradient`): by a double backward, or from per-sample
        gradients. Both give the same value for the one-step SGD surrogate.
    use_batch_context : bool, default=True
        Give the DWM the batch mean of its inputs (interactions within a batch).
    online : bool, default=False
        The online variant of the bi-level schedule: every DWM update also commits its
        look-ahead step to the learner (``theta <- theta'``, an SGD step of
        ``lookahead_learning_rate`` on the weighted batch, outside the learner's optimiser). The
        learner then also moves during DWM phases, ``dwm_steps_per_stage`` extra steps
        per stage (counted in ``n_online_steps_``, not in ``n_iter_``).
    loss_feature : {"auto", "raw", "log1p"}, default="auto"
        How the learner's current loss enters the DWM: ``"raw"`` or ``log(1 + loss)``.
        ``"auto"`` is ``"raw"`` for classifiers (cross-entropy) and ``"log1p"`` for
        regressors (squared error grows while the DWM is frozen; see Notes).
    validation_fraction : float, default=0.1
        Share of ``X`` held out as validation data when ``X_val`` is not given (stratified
        for classifiers when every class allows it). Held-out rows are never trained on.
    val_batch_size : int, default=256
        Validation rows per DWM update (all of them when there are fewer).
    warm_start_dwm : WeightingMLP, fitted DWM estimator or None, default=None
        Start from this weighting model (copied) instead of a fresh one: the transfer of a
        learned DWM to another learner or another data pool. Its input width must match.
    callbacks : list of (str, skorch.callbacks.Callback), default=None
        Extra skorch callbacks of the learner's net (copied in ``fit``). An epoch is a
        stage: ``on_epoch_begin`` runs after the stage's DWM updates.
    n_jobs : int or None, default=1
        Number of CPU workers: torch intra-op threads during ``fit`` and prediction
        (restored afterwards). ``None`` means 1 unless in a :func:`joblib.parallel_config`
        context; -1 every core.
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split, both networks and the batch order.
    device : str or torch.device, default="cpu"
        Where the learner and the DWM train (``"cuda"`` if available).
    verbose : int, default=0
        0 is silent; 1 prints skorch's per-stage table and low-ESS notes.
    hidden_sizes : tuple of int
        Deprecated name of ``hidden_layer_sizes``.

        .. deprecated:: 0.3
           ``hidden_sizes`` was renamed ``hidden_layer_sizes`` and will be removed in 0.4.
    lr : float
        Deprecated name of ``learning_rate``.

        .. deprecated:: 0.3
           ``lr`` was renamed ``learning_rate`` and will be removed in 0.4.
    dwm_lr : float
        Deprecated name of ``dwm_learning_rate``.

        .. deprecated:: 0.3
           ``dwm_lr`` was renamed ``dwm_learning_rate`` and will be removed in 0.4.
    lookahead_lr : float or None
        Deprecated name of ``lookahead_learning_rate``.

        .. deprecated:: 0.3
           ``lookahead_lr`` was renamed ``lookahead_learning_rate`` and will be removed
           in 0.4.
    **kwargs
        Parameters routed to the learner's skorch net as skorch routes them
        (``module__*``, ``optimizer__*``, ``criterion__*``, ``iterator_valid__*``,
        ``callbacks__*``); they win over the estimator's own settings.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
    net_ : DWMNet
        The fitted skorch net of the learner (also ``learner_``).
    learner_ : DWMNet
        Same as ``net_``.
    module_ : torch.nn.Module
        The trained learner module.
    history_ : skorch.History
        One record per stage (``train_loss``: weighted mean loss, ``valid_loss``,
        ``ess_mean``, ``dwm_val_loss``: the look-ahead validation loss of the stage's last
        DWM update) with one record per learner step in ``"batches"`` (``train_loss``,
        ``ess``: effective sample size of the batch's weights).
    n_epochs_run_ : int
        Stages run.
    weighting_model_ : WeightingMLP
        The trained data weighting model (on the CPU, frozen).
    stage_weight_stats_ : list of dict
        Per stage: ``stage``, ``n_steps``, ``val_loss`` (at its end),
        ``dwm_val_losses`` (the look-ahead validation loss of each DWM update),
        ``dwm_val_loss_first``/``_last``, ``ess_mean``/``ess_min`` (effective sample size
        as a fraction of the batch), ``low_ess_fraction`` (batches with ESS < 0.1 B) and,
        with ``sample_features``, ``weight_share`` (weighted mean of each feature column
        over the stage's batches: the share of the weight of each source when the columns
        are a one-hot source id) next to ``uniform_share``.
    stage_weight_sums_ : ndarray of shape (n_stages, n_samples)
        Total weight each row of ``X`` received in each stage (0 for validation rows).
    stage_sample_counts_ : ndarray of shape (n_stages, n_samples)
        How many times each row was drawn in each stage.
    validation_indices_ : ndarray or None
        Rows of ``X`` held out for validation (None when ``X_val`` was given).
    n_sample_features_ : int
        Columns of ``sample_features`` (0 without).
    loss_feature_ : {"raw", "log1p"}
        The loss transform used.
    n_iter_ : int
        Learner updates done by its optimiser (the learner phases).
    n_online_steps_ : int
        Look-ahead steps committed to the learner during DWM phases (0 unless
        ``online=True``).

    See Also
    --------
    DWMClassifier : the same for classification.
    sklearn_icml.datasets.make_mixed_source_regression : mixed-quality sources for it.

    Notes
    -----
    The bi-level schedule of [1]_, in stages. The learner minimises
    ``mean_i w_i l_i(theta)`` with ``w = DWM(u)`` computed per batch; at the start of each
    stage the DWM is updated ``dwm_steps_per_stage`` times with Adam on the hypergradient
    of the validation loss after one look-ahead SGD step of the learner. The learner is
    unchanged during a DWM phase (unless ``online=True``) and the DWM during a learner
    phase.

    The paper's DWM reads raw text with an LM-style encoder. For tabular data this library
    gives it ``u_i = [standardised x_i, encoded y_i (one-hot / standardised), sample
    features, loss feature]``, the tabular counterpart of what the paper's model sees (the
    sample and the learner's current view of it). The loss transform matters: a DWM
    fitted at the start of a stage is frozen while the learner moves, and a raw squared
    error drifts to values it never saw; ``log(1 + loss)`` avoids that (the default for
    regression), while the raw cross-entropy worked best for classification.

    Strongly concentrated weights are normal with this method: an effective sample size
    of a few samples in some batches is common and is only reported (``verbose``), not
    treated as an error. A greedy one-step objective with a DWM frozen per stage can also
    lock in a preference for one observed class on some noisy-label data splits.

    References
    ----------
    .. [1] Y. Yu, K. Han, H. Zhou, Y. Tang, K. Huang, Y. Wang, D. Tao, "LLM Data Selection
       and Utilization via Dynamic Bi-level Optimization", ICML 2025, arXiv:2507.16178.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_mixed_source_regression
    >>> from sklearn_icml.weighting import DWMRegressor
    >>> data = make_mixed_source_regression(n_per_source=50, n_val=50, random_state=0)
    >>> reg = DWMRegressor(hidden_layer_sizes=(), learning_rate=0.05, max_iter=40, n_stages=2,
    ...                    dwm_steps_per_stage=5, random_state=0)
    >>> reg = reg.fit(data.X, data.y, data.X_val, data.y_val,
    ...               sample_features=data.source_onehot)
    >>> reg.stage_weight_stats_[-1]["weight_share"].shape
    (4,)
    """

    _y_1d = True  # y is always 1-D

    def _predict_outputs(self, X):
        out = self._outputs(X)
        if self.standardize:
            out = out * self._y_scale + self._y_mean
        return out
