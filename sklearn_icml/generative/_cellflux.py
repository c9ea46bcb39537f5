"""CellFlux: conditional flow matching from same-batch controls to perturbed cells."""

import copy
import warnings

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import (
    StrOptions,
    validate_parameter_constraints,
    validate_params,
)
from sklearn.utils.validation import check_is_fitted

from ..base import BaseNeuralEstimator
from ..utils import check_generator, draw_seed
from ..utils._deprecation import (
    DEPRECATED,
    DEPRECATED_PARAM,
    REMOVED_IN,
    keyword_only_after,
    renamed_param,
)
from ..utils._docstrings import fill_doc
from ..utils._optional import optional_import
from ..utils._param_validation import (
    CLOSED_UNIT_INTERVAL,
    NON_NEGATIVE_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    UNIT_INTERVAL_WITHOUT_ONE,
)
from ..utils._params import store_params
from ..utils._progress import Progress
from ..utils._training import run_epochs, seeded_torch
from ..utils.validation import (
    check_finite_outputs,
    check_fits_dtype,
    check_input_array,
    check_int_vector,
    validate_input,
)
from ._flow import (
    TIME_GRIDS,
    TIME_SAMPLERS,
    conditional_path,
    draw_same_batch_controls,
    ema_decay,
    ema_update,
    frechet_distance,
    guided_velocity,
    integrate,
)
from ._networks import FiLMMLPVelocity, SmallUNetVelocity

torch = optional_import("torch", "neural")


@fill_doc
class CellFlux(BaseEstimator):
    """Flow matching from control samples of a batch to perturbed samples of that batch.

    CellFlux learns a velocity field ``v(x, t, e(c))`` whose flow carries a *control* sample
    (an unperturbed cell, say) to a sample of the *treated* distribution of perturbation
    ``c``. The source of every training pair is a control drawn from the **same batch**
    (plate) as the treated row, so batch artefacts travel with the sample instead of being
    learned: the flow only learns the perturbation effect. Training is conditional flow
    matching on the straight path ``x_t = (1 - t) x0 + t x1`` with target ``x1 - x0``,
    optional Gaussian noise on the source, and condition dropout for classifier-free
    guidance; sampling integrates the EMA network with Heun's method on the EDM time grid.
    It works on feature vectors (a FiLM MLP) and on small images (a small FiLM U-Net).

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=(256, 256, 256)
        Widths of the FiLM MLP (vector inputs).
    embedding_dim : int, default=64
        Size of the learnable perturbation embedding (ignored when
        ``perturbation_embeddings`` is given).
    perturbation_embeddings : dict, array-like of shape (n_rows, E) or None, default=None
        Fixed (frozen) perturbation embeddings. A dict maps each label to its vector; an
        array is indexed by integer labels (label ``k`` uses row ``k``). With fixed
        embeddings, :meth:`sample` also accepts labels not seen in ``fit`` (the
        out-of-distribution use) as long as they have an embedding. ``None`` learns an
        ``nn.Embedding`` of the perturbations seen in ``fit``.
    control_label : object, default="control"
        The value of ``y`` that marks control rows.
    source : {"control", "noise"}, default="control"
        ``"control"`` is CellFlux. ``"noise"`` is the noise-to-data ablation: the source is
        ``N(0, I)`` (in standardised units) and the control rows only give the number and
        shape of the samples.
    architecture : {"auto", "mlp", "unet"}, default="auto"
        Velocity network. ``"auto"`` is the MLP for 2-D ``X`` and the U-Net for images.
    unet_channels : int, default=32
        Channels of the U-Net at full resolution (twice that at half resolution).
    time_sampler : {"skewed", "uniform"}, default="skewed"
        Training times: the authors' skewed sampler (median 0.768) or ``U(0, 1)``.
    noise_level : float, default=1.0
        Standard deviation of the noise added to the source, in standardised units. At
        sampling time the noise is always added.
    noise_prob : float, default=0.5
        Probability, drawn once per minibatch, that training adds the noise.
    cond_drop_prob : float, default=0.2
        Probability of dropping the condition (for classifier-free guidance).
    cond_drop_mode : {"batch", "sample"}, default="batch"
        Drop the condition for the whole minibatch (the reference) or per row.
    cfg_scale : float, default=0.2
        Guidance weight ``w`` of ``(1 + w) v(x, t, c) - w v(x, t, None)``; 0 is purely
        conditional (one network pass). ``cfg_scale > 0`` with ``cond_drop_prob == 0``
        raises ValueError, because the unconditional branch would be untrained.
    ode_method : {"heun", "euler", "midpoint"}, default="heun"
        Fixed-step ODE solver.
    n_sampling_steps : int, default=50
        Steps of the sampler's ODE solver: points of the time grid before the final
        ``t = 1`` (50 gives a 51-point grid). It does not affect training, whose length is
        ``max_epochs``.
    time_grid : {"edm", "uniform"}, default="edm"
        The EDM grid (starts at ``t = 1/81``) or a uniform grid from 0.
    ema_decay : float, default=0.999
        Cap of the EMA decay ``min(ema_decay, (1 + k) / (10 + k))`` after update ``k``.
        Sampling uses the EMA weights.
    learning_rate : float, default=1e-4
        AdamW learning rate (constant).
    betas : tuple of float, default=(0.9, 0.95)
        AdamW betas.
    weight_decay : float, default=0.01
        AdamW weight decay.
    batch_size : int, default=32
        Treated rows per minibatch.
    max_epochs : int, default=200
        Passes over the treated rows.
    standardize : bool, default=True
        Standardise with the training mean and scale of all rows (per feature for vectors,
        per channel for images) and sample in standardised space.
    %(torch_n_jobs)s
    %(device)s
    random_state : int, RandomState instance or None, default=None
        Seeds the network, the control draws, the noise and the times.
    verbose : int, default=0
        Print the mean loss of each epoch when positive.
    lr : float, default="deprecated"
        Deprecated alias of ``learning_rate`` (renamed in 0.3, removed in 0.4).
    hidden_dims : tuple of int, default="deprecated"
        Deprecated alias of ``hidden_layer_sizes`` (renamed in 0.3, removed in 0.4).

    Attributes
    ----------
    perturbations_ : ndarray
        Sorted perturbation labels seen in ``fit`` (control excluded).
    batches_ : ndarray
        Sorted batch ids of the training rows.
    controls_by_batch_ : dict
        Batch id -> indices (rows of ``X`` in ``fit``) of its controls.
    n_features_in_ : int
        Number of features (the product of ``feature_shape_``).
    feature_shape_ : tuple of int
        Shape of one sample.
    feature_names_in_ : ndarray of str
        Column names, when ``X`` was a DataFrame with string column names.
    scaler_mean_, scaler_scale_ : ndarray
        Standardisation statistics (zeros and ones when ``standardize=False``).
    velocity_model_ : torch.nn.Module
        The trained network (raw weights).
    ema_model_ : torch.nn.Module
        The EMA of its weights, used for sampling.
    loss_curve_ : list of float
        Mean flow-matching MSE of each epoch.
    n_iter_ : int
        Epochs run.
    n_updates_ : int
        Optimiser steps run.

    See Also
    --------
    sklearn_icml.generative._flow.edm_time_grid : the sampling time grid.

    Notes
    -----
    CellFlux trains with its own torch loop, not skorch's: each step draws its sources
    (same-batch controls, noised with probability ``noise_prob``), times and condition
    drops, and updates the EMA model that sampling uses [1]_, which skorch's fit over fixed
    ``(X, y)`` batches of one module cannot express.

    References
    ----------
    .. [1] Y. Zhang, Y. Su, C. Wang, T. Li, Z. Wefers, J. Nirschl, J. Burgess, D. Ding,
       A. Lozano, E. Lundberg, S. Yeung-Levy. "CellFlux: Simulating Cellular Morphology
       Changes via Flow Matching". ICML 2025. arXiv:2502.09775.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.generative import CellFlux
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (200, 2)), rng.normal(3, 1, (200, 2))]
    >>> y = np.r_[["control"] * 200, ["drug"] * 200]
    >>> model = CellFlux(hidden_layer_sizes=(32, 32), noise_level=0.0, cfg_scale=0.0,
    ...                  cond_drop_prob=0.0, learning_rate=3e-3, max_epochs=15,
    ...                  n_sampling_steps=10, random_state=0).fit(X, y)
    >>> out = model.predict(rng.normal(0, 1, (100, 2)), perturbation="drug")
    >>> out.shape, bool(np.all(np.abs(out.mean(axis=0) - 3) < 0.5))
    ((100, 2), True)
    """

    _parameter_constraints = {
        **BaseNeuralEstimator._parameter_constraints,
        "hidden_layer_sizes": [tuple, list],
        "embedding_dim": [POSITIVE_INT],
        "perturbation_embeddings": [dict, "array-like", None],
        "control_label": "no_validation",
        "source": [StrOptions({"control", "noise"})],
        "architecture": [StrOptions({"auto", "mlp", "unet"})],
        "unet_channels": [POSITIVE_INT],
        "time_sampler": [StrOptions(set(TIME_SAMPLERS))],
        "noise_level": [NON_NEGATIVE_REAL],
        "noise_prob": [CLOSED_UNIT_INTERVAL],
        "cond_drop_prob": [CLOSED_UNIT_INTERVAL],
        "cond_drop_mode": [StrOptions({"batch", "sample"})],
        "cfg_scale": [NON_NEGATIVE_REAL],
        "ode_method": [StrOptions({"heun", "euler", "midpoint"})],
        "n_sampling_steps": [POSITIVE_INT],
        "time_grid": [StrOptions(set(TIME_GRIDS))],
        "ema_decay": [CLOSED_UNIT_INTERVAL],
        "learning_rate": [POSITIVE_REAL],
        "betas": [tuple, list],
        "weight_decay": [NON_NEGATIVE_REAL],
        "batch_size": [POSITIVE_INT],
        "max_epochs": [POSITIVE_INT],
        "standardize": ["boolean"],
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "hidden_dims": [tuple, list, DEPRECATED_PARAM],
    }

    def __init__(
        self,
        *,
        hidden_layer_sizes=(256, 256, 256),
        embedding_dim=64,
        perturbation_embeddings=None,
        control_label="control",
        source="control",
        architecture="auto",
        unet_channels=32,
        time_sampler="skewed",
        noise_level=1.0,
        noise_prob=0.5,
        cond_drop_prob=0.2,
        cond_drop_mode="batch",
        cfg_scale=0.2,
        ode_method="heun",
        n_sampling_steps=50,
        time_grid="edm",
        ema_decay=0.999,
        learning_rate=1e-4,
        betas=(0.9, 0.95),
        weight_decay=0.01,
        batch_size=32,
        max_epochs=200,
        standardize=True,
        n_jobs=1,
        device="cpu",
        random_state=None,
        verbose=0,
        lr="deprecated",
        hidden_dims="deprecated",
    ):
        store_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    # ------------------------------------------------------------------ validation
    def _network_hyperparameters(self):
        """``hidden_layer_sizes`` and ``betas`` as tuples (their elements, which constraints
        miss)."""
        sizes = renamed_param(self, "hidden_dims", "hidden_layer_sizes")
        dims = check_int_vector(sizes, "hidden_layer_sizes", low=1)
        if dims.size == 0:
            raise ValueError(
                f"hidden_layer_sizes must hold at least one width. Got {sizes!r} instead."
            )
        betas = tuple(self.betas)
        if len(betas) != 2:
            raise ValueError(f"betas must be two numbers in [0, 1). Got {self.betas!r} instead.")
        validate_parameter_constraints(
            {"betas[0]": [UNIT_INTERVAL_WITHOUT_ONE], "betas[1]": [UNIT_INTERVAL_WITHOUT_ONE]},
            {"betas[0]": betas[0], "betas[1]": betas[1]},
            caller_name=type(self).__name__,
        )
        self._require_unconditional_branch(self.cfg_scale)
        return tuple(int(d) for d in dims), betas

    def _require_unconditional_branch(self, cfg_scale):
        if cfg_scale > 0 and self.cond_drop_prob == 0:
            raise ValueError(
                f"cfg_scale={cfg_scale!r} > 0 needs an unconditional branch, but "
                "cond_drop_prob=0 never trains it; set cond_drop_prob > 0 or cfg_scale=0. "
                f"Got cond_drop_prob={self.cond_drop_prob!r} instead."
            )

    def _embedding_lookup(self):
        """Return ``label -> vector`` for fixed embeddings (or None when learnable)."""
        emb = self.perturbation_embeddings
        if emb is None:
            return None
        if isinstance(emb, dict):
            if not emb:
                raise ValueError(
                    "perturbation_embeddings must not be an empty dict. Got {} instead."
                )
            vectors = {}
            for key, vec in emb.items():
                vec = check_input_array(np.asarray(vec, dtype=np.float64).reshape(1, -1),
                                  input_name="perturbation_embeddings")[0]
                vectors[key] = vec
            sizes = {v.shape[0] for v in vectors.values()}
            if len(sizes) != 1:
                raise ValueError(
                    "perturbation_embeddings vectors must all have the same length. Got "
                    f"lengths {sorted(sizes)!r} instead."
                )
            return vectors
        table = check_input_array(emb, dtype=np.float64, input_name="perturbation_embeddings")
        return {k: table[k] for k in range(table.shape[0])}

    def _embedding_for(self, label, lookup, where):
        key = label
        if key not in lookup and isinstance(label, np.integer | np.floating):
            key = label.item()
        if key not in lookup:
            raise ValueError(
                f"{where}: perturbation {label!r} has no row in perturbation_embeddings "
                f"(dict keys, or integer row indices for an array). Got {label!r} instead."
            )
        return lookup[key]

    def _validate_X(self, X, *, reset):
        X = self._validate_X_shape(X, reset=reset)
        # the network computes in float32: a finite 1e300 would become inf, then NaN
        check_fits_dtype(X, "X" if reset else "X_control", np.float32, estimator=self)
        return X

    def _validate_X_shape(self, X, *, reset):
        if reset:
            X = validate_input(self, X, allow_nd=True, dtype=np.float64)
            if X.ndim not in (2, 3, 4):
                raise ValueError(
                    "X must be 2-D (n_samples, n_features), 3-D (n, H, W) or 4-D "
                    f"(n, C, H, W). Got an array of shape {X.shape} instead."
                )
            self.feature_shape_ = tuple(int(s) for s in X.shape[1:])
            if X.ndim > 2:
                self.n_features_in_ = int(np.prod(self.feature_shape_))
            return X
        if len(self.feature_shape_) == 1:
            return validate_input(self, X, reset=False, dtype=np.float64)
        X = check_input_array(X, allow_nd=True, dtype=np.float64, input_name="X_control")
        if tuple(X.shape[1:]) != self.feature_shape_:
            raise ValueError(
                f"X_control must have samples of shape {self.feature_shape_} as in fit; "
                f"got samples of shape {tuple(X.shape[1:])} instead."
            )
        return X

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, batch=None):
        """Learn the flow from same-batch controls to each perturbation's treated rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, [C,] H, W)
            Controls and treated rows together.
        y : array-like of shape (n_samples,)
            Perturbation label of each row; ``control_label`` marks the controls.
        batch : array-like of shape (n_samples,) or None, default=None
            Batch (plate) id of each row; None puts all rows in one batch. Every batch
            with treated rows must have controls.

        Returns
        -------
        self : CellFlux
        """
        dims, betas = self._network_hyperparameters()
        if y is None:
            raise ValueError(
                "CellFlux requires y to be passed, but the target y is None: y holds the "
                "perturbation label of each row (control_label for controls). Got y=None "
                "instead."
            )
        X = self._validate_X(X, reset=True)
        n = X.shape[0]
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D. Got an array of shape {y.shape} instead.")
        if y.shape[0] != n:
            raise ValueError(
                f"y must have one label per row of X ({n}). Got {y.shape[0]} instead."
            )
        if batch is None:
            batch = np.zeros(n, dtype=np.int64)
        else:
            batch = np.asarray(batch)
            if batch.ndim != 1 or batch.shape[0] != n:
                raise ValueError(
                    f"batch must be 1-D with one id per row of X ({n}). Got shape "
                    f"{batch.shape} instead."
                )
        is_control = np.asarray(y == self.control_label, dtype=bool).reshape(n)
        if not is_control.any():
            raise ValueError(
                f"y has no control rows: no label equals control_label="
                f"{self.control_label!r}. Got labels {np.unique(y)[:10].tolist()!r} instead."
            )
        if is_control.all():
            raise ValueError(
                "y has only control rows; fit needs treated rows (labels other than "
                f"control_label={self.control_label!r}). Got only {self.control_label!r} "
                "instead."
            )
        self.perturbations_ = np.unique(y[~is_control])
        self.batches_, batch_codes = np.unique(batch, return_inverse=True)
        ctrl_rows = np.flatnonzero(is_control)
        treat_rows = np.flatnonzero(~is_control)
        ctrl_codes = batch_codes[ctrl_rows]
        counts = np.bincount(ctrl_codes, minlength=self.batches_.shape[0])
        missing = np.unique(batch_codes[treat_rows][counts[batch_codes[treat_rows]] == 0])
        if missing.size:
            raise ValueError(
                "every batch with treated rows needs control rows; batch "
                f"{self.batches_[missing[0]].item()!r} has none. Got batches without controls "
                f"{self.batches_[missing].tolist()!r} instead."
            )
        self.controls_by_batch_ = {
            self.batches_[b]: ctrl_rows[ctrl_codes == b] for b in range(self.batches_.shape[0])
        }
        order = ctrl_rows[np.argsort(ctrl_codes, kind="stable")]
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])

        lookup = self._embedding_lookup()
        if lookup is not None:
            fixed = np.stack([self._embedding_for(p, lookup, "fit") for p in self.perturbations_])
            cond_dim = fixed.shape[1]
        else:
            fixed, cond_dim = None, int(self.embedding_dim)
        pert_index = np.searchsorted(self.perturbations_, y[treat_rows])

        # standardisation on all rows (controls and treated together)
        self._set_scaler(X)
        Xs = self._standardize(X)
        self._arch = self.architecture
        if self._arch == "auto":
            self._arch = "mlp" if X.ndim == 2 else "unet"
        self._net_shape = self._network_shape()
        self.data_min_, self.data_max_ = float(X.min()), float(X.max())

        learning_rate = float(renamed_param(self, "lr", "learning_rate"))
        seed = draw_seed(self.random_state)
        self._predict_seed = seed
        rng = check_generator(seed)
        with seeded_torch(seed, self.device, self.n_jobs) as device:
            model = self._build_network(dims, cond_dim, fixed).to(device)
            ema = copy.deepcopy(model)
            for p in ema.parameters():
                p.requires_grad_(False)
            params, ema_params = list(model.parameters()), list(ema.parameters())
            optimizer = torch.optim.AdamW(
                model.parameters(), lr=learning_rate, betas=betas,
                weight_decay=float(self.weight_decay), foreach=True,
            )
            data = torch.as_tensor(Xs.reshape((n,) + self._net_shape), dtype=torch.float32,
                                   device=device)
            pidx = torch.as_tensor(pert_index, dtype=torch.long, device=device)
            gen = torch.Generator(device=device).manual_seed(seed)
            sample_time = TIME_SAMPLERS[self.time_sampler]
            self.n_updates_ = 0

            def step(chunk):
                # one flow-matching update on treated rows treat_rows[chunk], then the EMA
                x1 = data[treat_rows[chunk]]
                x0 = self._training_source(rng, gen, data, x1, batch_codes[treat_rows[chunk]],
                                           order, starts, counts)
                t = sample_time(chunk.shape[0], gen, device)
                xt, ut = conditional_path(x0, x1, t)
                e, keep = self._training_condition(rng, gen, model, pidx[chunk])
                loss = torch.mean((model(xt, t, e, keep) - ut) ** 2)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                self.n_updates_ += 1
                ema_update(ema_params, params, ema_decay(self.n_updates_, self.ema_decay))
                return float(loss.detach())

            progress = Progress(type(self).__name__, self.verbose, total=self.max_epochs)

            def report(epoch, loss):
                progress.step(f"epoch {epoch + 1}/{self.max_epochs}", loss=loss)

            with progress:
                self.loss_curve_ = run_epochs(
                    step, treat_rows.shape[0], batch_size=int(self.batch_size),
                    max_epochs=self.max_epochs, permutation=rng.permutation, end_epoch=report,
                )
        self.velocity_model_ = model.eval()
        self.ema_model_ = ema.eval()
        self.n_iter_ = len(self.loss_curve_)
        return self

    def _training_source(self, rng, gen, data, x1, codes, order, starts, counts):
        if self.source == "noise":
            return torch.randn(x1.shape, generator=gen, device=x1.device)
        rows = draw_same_batch_controls(rng, codes, order, starts, counts)
        x0 = data[torch.as_tensor(rows, device=x1.device)]
        if self.noise_level > 0 and rng.random() <= self.noise_prob:
            x0 = x0 + self.noise_level * torch.randn(x0.shape, generator=gen, device=x0.device)
        return x0

    def _training_condition(self, rng, gen, model, index):
        p = float(self.cond_drop_prob)
        if self.cond_drop_mode == "batch":
            if p > 0 and rng.random() < p:
                return None, None
            return model.perturbation_table(index), None
        keep = (torch.rand(index.shape[0], generator=gen, device=index.device) >= p).float()
        return model.perturbation_table(index), keep

    def _build_network(self, dims, cond_dim, fixed):
        fixed_t = None if fixed is None else torch.as_tensor(fixed, dtype=torch.float32)
        k = self.perturbations_.shape[0]
        if self._arch == "mlp":
            return FiLMMLPVelocity(self.n_features_in_, dims, cond_dim, k, fixed_t)
        if len(self._net_shape) != 3:
            raise ValueError(
                "architecture='unet' needs images X of shape (n, H, W) or (n, C, H, W). Got "
                f"samples of shape {self.feature_shape_} instead."
            )
        return SmallUNetVelocity(self._net_shape[0], self.unet_channels, cond_dim, k, fixed_t)

    def _network_shape(self):
        shape = self.feature_shape_
        if self._arch == "mlp":
            return (int(np.prod(shape)),)
        return (1, *shape) if len(shape) == 2 else shape

    def _set_scaler(self, X):
        shape = self.feature_shape_
        if not self.standardize:
            self.scaler_mean_ = np.zeros((1,) * len(shape))
            self.scaler_scale_ = np.ones((1,) * len(shape))
            return
        if X.ndim == 2:
            axes = (0,)
        elif X.ndim == 3:
            axes = (0, 1, 2)
        else:
            axes = (0, 2, 3)
        mean = X.mean(axis=axes, keepdims=True)[0]
        scale = X.std(axis=axes, keepdims=True)[0]
        scale[scale < 10 * np.finfo(np.float64).eps] = 1.0
        self.scaler_mean_, self.scaler_scale_ = mean, scale

    def _standardize(self, X):
        return (X - self.scaler_mean_) / self.scaler_scale_

    def _unstandardize(self, Z):
        return Z * self.scaler_scale_ + self.scaler_mean_

    # ------------------------------------------------------------------ sampling
    def _condition_vectors(self, perturbation, n):
        """Embedding vectors (tensor (n, E)) for ``perturbation``, on the EMA model."""
        labels = np.asarray(perturbation)
        if labels.ndim == 0:
            labels = np.full(n, labels.item(), dtype=object)
        elif labels.ndim != 1 or labels.shape[0] != n:
            raise ValueError(
                "perturbation must be one label or one label per row of X_control "
                f"({n}). Got an array of shape {labels.shape} instead."
            )
        model = self.ema_model_
        device = next(model.parameters()).device
        lookup = self._embedding_lookup()
        if lookup is None:
            seen = np.isin(labels, self.perturbations_)
            if not seen.all():
                bad = labels[~seen][0]
                bad = bad.item() if isinstance(bad, np.generic) else bad
                raise ValueError(
                    f"perturbation {bad!r} was not seen in fit (perturbations: "
                    f"{self.perturbations_.tolist()!r}); pass perturbation_embeddings to "
                    f"sample unseen ones. Got {bad!r} instead."
                )
            index = np.searchsorted(self.perturbations_, labels.astype(self.perturbations_.dtype))
            with torch.no_grad():
                return model.perturbation_table(torch.as_tensor(index, device=device))
        vectors = np.stack([self._embedding_for(lab, lookup, "sample") for lab in labels])
        if vectors.shape[1] != model.embed.cond_proj.in_features:
            raise ValueError(
                f"perturbation embeddings must have {model.embed.cond_proj.in_features} "
                f"values as in fit. Got {vectors.shape[1]} instead."
            )
        return torch.as_tensor(vectors, dtype=torch.float32, device=device)

    @keyword_only_after(2)
    def sample(self, X_control, *, perturbation=None, batch=None, cfg_scale=None,
               n_sampling_steps=None, return_trajectory=False, random_state=None):
        """Transport control rows to ``perturbation``.

        Parameters
        ----------
        X_control : array-like of shape (n, n_features) or (n, [C,] H, W)
            Control samples (ideally from the batch whose treated cells are wanted). Row
            ``i`` of the output is the transport of row ``i``.
        perturbation : label or array-like of shape (n,), default=None
            Target perturbation, one for all rows or one per row. None is allowed when
            ``fit`` saw a single perturbation.
        batch : array-like of shape (n,) or None, default=None
            Batch ids of the rows. Only checked for length: the batch travels with the
            control sample itself, the network does not take it as input.
        cfg_scale : float or None, default=None
            Guidance weight; None uses the estimator's ``cfg_scale``.
        n_sampling_steps : int or None, default=None
            Solver steps; None uses the estimator's ``n_sampling_steps``.
        return_trajectory : bool, default=False
            Also return the states at every grid time.
        random_state : int, RandomState instance or None, default=None
            Seed of the source noise. None draws fresh noise on each call.

        Returns
        -------
        samples : ndarray of shape like X_control
            Or ``(trajectory, times)`` with ``trajectory`` of shape ``(n_grid, n, ...)``
            (its first state is the noised control, its last the samples) and ``times`` of
            shape ``(n_grid,)`` when ``return_trajectory``.
        """
        check_is_fitted(self)
        X = self._validate_X(X_control, reset=False)
        n = X.shape[0]
        if batch is not None and np.asarray(batch).shape != (n,):
            raise ValueError(
                f"batch must be 1-D with one id per row of X_control ({n}). Got shape "
                f"{np.asarray(batch).shape} instead."
            )
        if perturbation is None:
            if self.perturbations_.shape[0] != 1:
                raise ValueError(
                    "perturbation is required when fit saw several perturbations "
                    f"({self.perturbations_.tolist()!r}). Got None instead."
                )
            perturbation = self.perturbations_[0]
        w = self.cfg_scale if cfg_scale is None else cfg_scale
        steps = self.n_sampling_steps if n_sampling_steps is None else n_sampling_steps
        names = ("cfg_scale", "n_sampling_steps", "random_state")
        validate_parameter_constraints(
            {name: self._parameter_constraints[name] for name in names},
            dict(zip(names, (w, steps, random_state))),
            caller_name=f"{type(self).__name__}.sample",
        )
        self._require_unconditional_branch(w)
        seed = draw_seed(random_state)
        model = self.ema_model_
        device = next(model.parameters()).device
        grid = TIME_GRIDS[self.time_grid](steps)
        Z = self._standardize(X).reshape((n,) + self._net_shape)
        with seeded_torch(seed, device, self.n_jobs), torch.no_grad():
            e = self._condition_vectors(perturbation, n)
            gen = torch.Generator(device=device).manual_seed(seed)
            z = torch.as_tensor(Z, dtype=torch.float32, device=device)
            noise = torch.randn(z.shape, generator=gen, device=device)
            x = z + float(self.noise_level) * noise if self.source == "control" else noise

            def field(x, t):
                return guided_velocity(lambda x_, t_, c: model(x_, t_, c), x, t, e, float(w))

            out = integrate(field, x, grid, self.ode_method, return_trajectory)
        if return_trajectory:
            traj = out[1].cpu().numpy().astype(np.float64)
            traj = np.stack([self._to_data(s, n) for s in traj])
            check_finite_outputs(traj[-1], X, self, "X_control")
            return traj, np.asarray(grid, dtype=np.float64)
        samples = self._to_data(out.cpu().numpy().astype(np.float64), n)
        return check_finite_outputs(samples, X, self, "X_control")

    def _to_data(self, Z, n):
        X = self._unstandardize(Z.reshape((n,) + self.feature_shape_))
        if len(self.feature_shape_) > 1:
            X = np.clip(X, self.data_min_, self.data_max_)
        return X

    @keyword_only_after(2)
    def predict(self, X_control, *, perturbation=None):
        """Transport control rows to ``perturbation`` with a fixed seed (deterministic).

        Same as :meth:`sample` with a noise seed fixed at fit time.

        Parameters
        ----------
        X_control : array-like of shape (n, n_features) or (n, [C,] H, W)
        perturbation : label or array-like of shape (n,), default=None

        Returns
        -------
        samples : ndarray of shape like X_control
        """
        check_is_fitted(self)
        return self.sample(
            X_control, perturbation=perturbation, random_state=self._predict_seed
        )

    def score(self, X, y, perturbation=DEPRECATED):
        """Negative Fréchet distance between transported controls and treated rows.

        scikit-learn's form (what ``GridSearchCV``, ``cross_val_score`` and the default
        scorer call): ``X`` holds control and treated rows and ``y`` their labels, as in
        :meth:`fit`. The controls of ``X`` are transported to every perturbation of ``y``
        and compared with that perturbation's rows; the score is the mean of ``-FD`` over
        the perturbations, weighted by their row counts. To compare the transport of
        controls with an array of real treated samples, use
        :func:`~sklearn_icml.generative.frechet_transport_score`.

        Parameters
        ----------
        X : array-like of shape (n, n_features) or (n, [C,] H, W)
            Controls and treated rows.
        y : array-like of shape (n,)
            Labels of the rows of ``X`` (``control_label`` for controls).
        perturbation : label, default="deprecated"
            Deprecated: ``score(X_control, X_treated, perturbation)`` (``y`` an array of
            treated samples) is :func:`~sklearn_icml.generative.frechet_transport_score`
            since 0.3 and this form is removed in 0.4.

        Returns
        -------
        score : float
            ``-FD`` on flattened features, averaged over perturbations; higher is better,
            0 is a perfect match of means and covariances.
        """
        check_is_fitted(self)
        labels = y if hasattr(y, "ndim") or not hasattr(y, "to_numpy") else y.to_numpy()
        labels = np.asarray(labels)
        given = not (isinstance(perturbation, str) and perturbation == DEPRECATED)
        if labels.ndim <= 1:
            if given:
                raise ValueError(
                    "perturbation is only used with frechet_transport_score(model, X_control, "
                    "X_treated, perturbation=...); with score(X, y) the perturbations are the "
                    f"labels of y. Got perturbation={perturbation!r} instead."
                )
            return self._score_labelled(X, labels)
        warnings.warn(
            "CellFlux.score(X_control, X_treated, perturbation) was replaced in 0.3 by "
            "sklearn_icml.generative.frechet_transport_score(model, X_control, X_treated, "
            f"perturbation=...) and will be removed in {REMOVED_IN}; score(X, y) takes the "
            "labels of the rows of X as y.",
            FutureWarning,
            stacklevel=2,
        )
        return self._score_pair(X, y, perturbation if given else None)

    def _score_pair(self, X_control, X_treated, perturbation):
        checked = {}
        for name, data in (("X_control", X_control), ("X_treated", X_treated)):
            data = check_input_array(data, allow_nd=True, dtype=np.float64, input_name=name)
            check_fits_dtype(data, name, np.float32, estimator=self)
            if tuple(data.shape[1:]) != self.feature_shape_:
                raise ValueError(
                    f"{name} must have samples of shape {self.feature_shape_}. Got "
                    f"{tuple(data.shape[1:])} instead."
                )
            checked[name] = data
        X_treated = checked["X_treated"]
        generated = self.predict(checked["X_control"], perturbation=perturbation)
        for name, rows in (("X_control", generated.shape[0]), ("X_treated", X_treated.shape[0])):
            if rows < 2:
                raise ValueError(
                    f"{name} needs at least 2 rows: the Fréchet distance compares means and "
                    f"covariances. Got {rows} row instead."
                )
        return -frechet_distance(generated, X_treated)

    def _score_labelled(self, X, y):
        X = self._validate_X(X, reset=False)
        if y.shape != (X.shape[0],):
            raise ValueError(
                f"y must hold one label per row of X ({X.shape[0]}). Got an array of shape "
                f"{y.shape} instead."
            )
        is_control = np.asarray(y == self.control_label, dtype=bool).reshape(-1)
        if not is_control.any():
            raise ValueError(
                "score(X, y) transports the control rows of X (y == control_label="
                f"{self.control_label!r}) and y has none; keep controls in every split (e.g. "
                "a StratifiedKFold on y). Got labels "
                f"{np.unique(y)[:10].tolist()!r} instead."
            )
        treated = np.unique(y[~is_control])
        if treated.shape[0] == 0:
            raise ValueError(
                "score(X, y) compares transported controls with treated rows and y has only "
                f"controls. Got only {self.control_label!r} instead."
            )
        total, weight = 0.0, 0
        for label in treated:
            rows = X[y == label]
            total += rows.shape[0] * self._score_pair(X[is_control], rows, label)
            weight += rows.shape[0]
        return total / weight


@validate_params(
    {
        "estimator": [CellFlux],
        "X_control": ["array-like"],
        "X_treated": ["array-like"],
        "perturbation": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def frechet_transport_score(estimator, X_control, X_treated, *, perturbation=None):
    """Negative Fréchet distance between transported controls and real treated samples.

    The rows of ``X_control`` are transported to ``perturbation`` by the fitted
    :class:`CellFlux` ``estimator`` (its deterministic :meth:`CellFlux.predict`) and the
    result is compared with ``X_treated`` by the Fréchet distance of their means and
    covariances on flattened features (the FID formula on raw features).

    Parameters
    ----------
    estimator : CellFlux
        A fitted model.
    X_control : array-like of shape (n, n_features) or (n, [C,] H, W)
        Controls to transport (at least 2 rows).
    X_treated : array-like of shape (m, n_features) or (m, [C,] H, W)
        Real samples treated with ``perturbation`` (at least 2 rows).
    perturbation : label, default=None
        The perturbation ``X_treated`` was treated with; None is allowed when ``fit`` saw
        a single perturbation.

    Returns
    -------
    score : float
        ``-FD``; higher is better, 0 is a perfect match of means and covariances.

    See Also
    --------
    CellFlux.score : the same score with labelled rows, as scikit-learn's tools call it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.generative import CellFlux, frechet_transport_score
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (100, 2)), rng.normal(3, 1, (100, 2))]
    >>> y = np.r_[["control"] * 100, ["drug"] * 100]
    >>> model = CellFlux(hidden_layer_sizes=(16,), noise_level=0.0, cfg_scale=0.0,
    ...                  cond_drop_prob=0.0, learning_rate=3e-3, max_epochs=5,
    ...                  n_sampling_steps=5, random_state=0).fit(X, y)
    >>> score = frechet_transport_score(model, X[:100], X[100:], perturbation="drug")
    >>> bool(score <= 0)
    True
    """
    check_is_fitted(estimator)
    return estimator._score_pair(X_control, X_treated, perturbation)
