"""The base of the data weighting estimators: their shared parameters and the bi-level fit."""


import numpy as np
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from sklearn.utils._param_validation import StrOptions

from ..base import BaseNeuralEstimator
from ..utils import draw_seed, optional_import
from ..utils._deprecation import DEPRECATED_PARAM, renamed_param
from ..utils._param_validation import (
    INT_AT_LEAST_TWO,
    NON_NEGATIVE_INT,
    OPEN_UNIT_INTERVAL,
    POSITIVE_INT,
    POSITIVE_REAL,
)
from ..utils.validation import check_input_array
from ._bilevel import BilevelStages, BilevelState, DWMNet, PerSampleLoss
from ._weighting_model import WeightingMLP

torch = optional_import("torch", "neural")

OPTIMIZERS = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW"}


def transform_loss(losses, kind):
    """The loss feature of the DWM: the raw loss or ``log(1 + loss)``."""
    return torch.log1p(losses) if kind == "log1p" else losses


def stage_steps(max_iter, n_stages):
    """Learner steps of each stage: ``max_iter`` split as evenly as possible."""
    base, extra = divmod(int(max_iter), int(n_stages))
    return [base + (k < extra) for k in range(n_stages)]


def sample_features_array(sample_features, n, name="sample_features"):
    """None, or a finite float64 ``(n, k)`` copy of ``sample_features`` (1-D: one column)."""
    if sample_features is None:
        return None
    sf = check_input_array(
        sample_features, ensure_2d=False, dtype=np.float64, input_name=name, copy=True
    )
    if sf.ndim == 1:
        sf = sf.reshape(-1, 1)
    if sf.shape[0] != n:
        raise ValueError(
            f"{name} must have one row per sample of X ({n}). Got {sf.shape[0]} rows instead."
        )
    return sf


def check_sample_feature_width(sf, n_expected):
    """Raise unless ``sf`` has the ``n_expected`` columns seen in ``fit`` (None: 0)."""
    width = 0 if sf is None else sf.shape[1]
    if width != n_expected:
        raise ValueError(
            f"sample_features must have {n_expected} column(s) as in fit. Got "
            f"{'None' if sf is None else width} instead."
        )


class _BaseDWM(BaseNeuralEstimator):
    """What every DWM estimator shares: the schedule's parameters and the bi-level fit.

    A subclass lists its parameters in ``__init__`` (its learner's, then the shared ones
    documented in each subclass's docstring), stores them with
    ``store_params(self, locals())``, and in ``fit`` builds the DWM input of its data
    and calls :meth:`_fit_bilevel`.
    """

    _parameter_constraints = {
        **BaseNeuralEstimator._parameter_constraints,
        "learning_rate": [POSITIVE_REAL],
        "optimizer": [StrOptions(set(OPTIMIZERS))],
        "max_iter": [POSITIVE_INT],
        "batch_size": [INT_AT_LEAST_TWO],
        "n_stages": [POSITIVE_INT],
        "dwm_steps_per_stage": [NON_NEGATIVE_INT],
        "dwm_learning_rate": [POSITIVE_REAL],
        "dwm_hidden": [POSITIVE_INT],
        "temperature": [POSITIVE_REAL],
        "lookahead_learning_rate": [POSITIVE_REAL, None],
        "hypergradient": [StrOptions({"exact", "first_order"})],
        "use_batch_context": ["boolean"],
        "online": ["boolean"],
        "loss_feature": [StrOptions({"auto", "raw", "log1p"})],
        "validation_fraction": [OPEN_UNIT_INTERVAL],
        "val_batch_size": [POSITIVE_INT],
        "warm_start_dwm": "no_validation",  # a WeightingMLP or a fitted DWM; checked in fit
        "callbacks": [list, None],
        # names deprecated in 0.3 (read through _learning_rates)
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "dwm_lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "lookahead_lr": [POSITIVE_REAL, None, DEPRECATED_PARAM],
    }

    def _learning_rates(self):
        """The learner's, the DWM's and the look-ahead's step sizes (old names warn)."""
        learning_rate = renamed_param(self, "lr", "learning_rate")
        dwm_learning_rate = renamed_param(self, "dwm_lr", "dwm_learning_rate")
        lookahead = renamed_param(self, "lookahead_lr", "lookahead_learning_rate")
        return learning_rate, dwm_learning_rate, (
            learning_rate if lookahead is None else lookahead
        )

    def _check_schedule(self):
        if self.max_iter < self.n_stages:
            raise ValueError(
                f"max_iter must be >= n_stages={self.n_stages} (every stage trains the "
                f"learner for at least one step). Got max_iter={self.max_iter!r} instead."
            )

    def _split_rows(self, n, stratify=None):
        """Rows for the learner and rows for validation (disjoint)."""
        if n < 2:
            raise ValueError(
                f"DWM needs at least 2 samples (1 sample for training, 1 for validation) "
                f"when X_val is not given. Got {n} sample(s) instead."
            )
        n_val = min(max(1, int(round(self.validation_fraction * n))), n - 1)
        seed = draw_seed(self.random_state)
        if stratify is not None:
            try:
                splitter = StratifiedShuffleSplit(1, test_size=n_val, random_state=seed)
                train, val = next(splitter.split(np.zeros(n), stratify))
                return np.sort(train), np.sort(val)
            except ValueError:
                pass  # too few samples per class for a stratified split
        train, val = next(ShuffleSplit(1, test_size=n_val, random_state=seed).split(np.zeros(n)))
        return np.sort(train), np.sort(val)

    def _warm_start_model(self, n_features):
        warm = self.warm_start_dwm
        if warm is None:
            return None
        if not isinstance(warm, WeightingMLP):
            model = getattr(warm, "weighting_model_", None)
            if model is None:
                raise TypeError(
                    "warm_start_dwm must be a WeightingMLP or a fitted DWM estimator. Got "
                    f"{type(warm).__name__} instead."
                )
            warm = model
        if warm.n_features != n_features:
            raise ValueError(
                f"warm_start_dwm takes {warm.n_features} input features but this data gives "
                f"{n_features} (x columns + target encoding + sample features + loss). Got "
                "a weighting model trained on differently shaped data instead."
            )
        return warm

    def _fit_bilevel(self, *, X, y, static, featurize, n_dwm_features, X_val, y_val,
                     loss_kind, module_kwargs, train_rows, n_rows, share_features):
        """Build the state, train the DWMNet with the stage callback, store the results."""
        from ..utils._skorch import check_device

        self._check_schedule()
        device = check_device(self.device)
        learning_rate, dwm_learning_rate, lookahead = self._learning_rates()
        state = BilevelState(
            X=torch.as_tensor(X, device=device),
            y=torch.as_tensor(y, device=device),
            static_features=torch.as_tensor(static, device=device),
            featurize=featurize,
            n_dwm_features=n_dwm_features,
            X_val=torch.as_tensor(X_val, device=device),
            y_val=torch.as_tensor(y_val, device=device),
            loss_kind=loss_kind,
            stage_steps=stage_steps(self.max_iter, self.n_stages),
            lookahead_learning_rate=lookahead,
            dwm_learning_rate=dwm_learning_rate,
            settings=self,
            warm_start=self._warm_start_model(n_dwm_features),
            share_features=share_features,
        )
        stages = BilevelStages(state)
        optimizer = getattr(torch.optim, OPTIMIZERS[self.optimizer])
        n = X.shape[0]
        self._fit_net(
            DWMNet,
            {"X": X, "u": static, "index": np.arange(n)},
            y,
            criterion=PerSampleLoss,
            criterion__kind=loss_kind,
            optimizer=optimizer,
            lr=learning_rate,
            max_epochs=self.n_stages,
            batch_size=self.batch_size,
            bilevel=state,
            callbacks=[("bilevel_stages", stages)],
            **module_kwargs,
        )
        self.weighting_model_ = state.model.cpu().eval()
        for p in self.weighting_model_.parameters():
            p.requires_grad_(False)
        self.stage_weight_stats_ = state.stage_stats
        sums = np.zeros((self.n_stages, n_rows))
        counts = np.zeros((self.n_stages, n_rows), dtype=np.int64)
        sums[:, train_rows] = state.weight_sums
        counts[:, train_rows] = state.counts
        self.stage_weight_sums_ = sums
        self.stage_sample_counts_ = counts
        self.n_iter_ = int(state.step)
        self.n_online_steps_ = int(state.online_steps)
        # the fitted net keeps neither the training data nor the DWM's optimiser
        state.release_data()
        self.net_.bilevel = None
        stages.state = None
        return self

    @property
    def learner_(self):
        """The fitted skorch net of the learner (same object as ``net_``)."""
        return self.net_

    def _final_stage_weights(self):
        """Mean weight of each training row over the learner batches of the last stage."""
        sums, counts = self.stage_weight_sums_[-1], self.stage_sample_counts_[-1]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
