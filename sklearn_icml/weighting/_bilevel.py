"""The bi-level training loop of the data weighting model: a skorch net and a callback.

One skorch epoch is one *stage* of the DWM schedule. The :class:`BilevelStages` callback
runs the stage boundaries: at the start of each stage (``on_epoch_begin``) it updates the
weighting model by hypergradient descent with the learner frozen, at its end
(``on_epoch_end``) it logs the stage's statistics. During the stage, :class:`DWMNet`'s
``get_loss`` has the learner minimise the weighted mean of its per-sample losses with the
weighting model frozen. What both need besides the learner (the weighting model, its
optimiser, the data as tensors, the per-stage logs) lives in one :class:`BilevelState`,
given to the net (``bilevel``) and to the callback.
"""

import copy
from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from ..utils import check_generator, optional_import
from ..utils._params import store_params
from ..utils._progress import Progress
from ..utils._skorch import relu_mlp
from ._hypergradient import _one_step_hypergradient, weighted_sgd_step
from ._weighting_model import WeightingMLP, effective_sample_size

skorch = optional_import("skorch", "neural")
to_tensor = skorch.utils.to_tensor

# ESS below this fraction of the batch is counted (and reported with verbose); it is common
# with this method and not an error
LOW_ESS_FRACTION = 0.1


# ----------------------------------------------------------------- per-sample losses


def squared_error(outputs, y):
    """Per-sample squared error ``(f(x_i) - y_i)^2`` of a single-output regressor."""
    return (outputs.reshape(outputs.shape[0], -1)[:, 0] - y.to(outputs.dtype)) ** 2


def cross_entropy(outputs, y):
    """Per-sample cross-entropy of logits ``outputs`` against class indices ``y``."""
    return nn.functional.cross_entropy(outputs, y.long(), reduction="none")


def sequence_nll(outputs, x):
    """Per-sequence mean next-token NLL: ``outputs[:, t]`` are the logits of ``x[:, t + 1]``."""
    nll = nn.functional.cross_entropy(
        outputs.transpose(1, 2), x[:, 1:].long(), reduction="none"
    )
    return nll.mean(dim=1)


LOSSES = {"squared_error": squared_error, "cross_entropy": cross_entropy, "nll": sequence_nll}


class PerSampleLoss(nn.Module):
    """skorch criterion: the mean of one of :data:`LOSSES` (``per_sample`` gives the vector)."""

    def __init__(self, kind="squared_error"):
        super().__init__()
        if kind not in LOSSES:
            raise ValueError(f"kind must be one of {sorted(LOSSES)}. Got {kind!r} instead.")
        self.kind = kind

    def per_sample(self, outputs, y):
        return LOSSES[self.kind](outputs, y)

    def forward(self, outputs, y):
        return self.per_sample(outputs, y).mean()


class MLPModule(nn.Module):
    """The default learner: ``Linear -> ReLU -> ... -> Linear`` (no hidden layer: linear)."""

    def __init__(self, n_features, n_outputs, hidden_layer_sizes=(64,)):
        super().__init__()
        self.net = relu_mlp(n_features, n_outputs, hidden_layer_sizes)

    def forward(self, X):
        return self.net(X)


# ----------------------------------------------------------------- batches


class _IndexStream:
    """Endless stream of mini-batches of row indices: consecutive slices of permutations."""

    def __init__(self, n, batch_size, rng):
        self.n = int(n)
        self.batch_size = min(int(batch_size), self.n)
        self.rng = rng
        self._buffer = np.empty(0, dtype=np.int64)

    def next(self):
        while self._buffer.shape[0] < self.batch_size:
            self._buffer = np.concatenate([self._buffer, self.rng.permutation(self.n)])
        out, self._buffer = self._buffer[: self.batch_size], self._buffer[self.batch_size :]
        return out


class _StageBatches:
    """skorch ``iterator_train``: the learner batches of the current stage."""

    def __init__(self, state):
        self.state = state

    def __len__(self):
        return int(self.state.stage_steps[self.state.stage])

    def __iter__(self):
        state = self.state
        for _ in range(len(self)):
            idx = state.learner_stream.next()
            yield state.batch(idx)


# ----------------------------------------------------------------- the bi-level state


class BilevelState:
    """What a DWM fit needs besides the learner; filled by the estimator, used by DWMNet.

    Parameters
    ----------
    X, y : Tensors
        Training pool (learner inputs and targets), on the training device.
    static_features : Tensor of shape (n, k)
        The part of the DWM input that does not depend on the learner.
    featurize : callable
        ``featurize(module, X_batch, static_batch, losses) -> Tensor`` builds the DWM input
        ``u`` of a batch (``losses`` are the learner's detached per-sample losses).
    n_dwm_features : int
        Width of ``u``.
    X_val, y_val : Tensors
        The validation set (never used for training the learner).
    loss_kind : str
        Key of :data:`LOSSES`.
    stage_steps : list of int
        Learner steps in each stage.
    lookahead_learning_rate : float
        Step size of the look-ahead (the estimator's ``lookahead_learning_rate``, or
        ``learning_rate``).
    dwm_learning_rate : float
        Adam learning rate of the weighting model.
    settings : DWM estimator
        The fitted estimator, whose (validated) schedule parameters listed in
        :attr:`SETTINGS` are read once and stored under the same names: ``batch_size``,
        ``dwm_steps_per_stage``, ``dwm_hidden``, ``temperature``,
        ``use_batch_context``, ``hypergradient``, ``val_batch_size``, ``online`` (each DWM
        update also commits its look-ahead step ``theta <- theta'`` to the learner, SGD
        with ``lookahead_learning_rate`` and the weights of the DWM before that update) and
        ``verbose``.
    warm_start : WeightingMLP or None, default=None
        The weighting model to start from (copied at setup).
    share_features : Tensor of shape (n, m) or None, default=None
        Per-sample features whose weighted mean is logged per stage (user
        ``sample_features``: with one-hot sources, the weight share of each source).
    """

    #: The estimator parameters a fit reads, with the type each is stored as.
    SETTINGS = {
        "batch_size": int,
        "dwm_steps_per_stage": int,
        "dwm_hidden": int,
        "temperature": float,
        "use_batch_context": bool,
        "hypergradient": str,
        "val_batch_size": int,
        "online": bool,
        "verbose": int,
    }

    def __init__(
        self,
        *,
        X,
        y,
        static_features,
        featurize,
        n_dwm_features,
        X_val,
        y_val,
        loss_kind,
        stage_steps,
        lookahead_learning_rate,
        dwm_learning_rate,
        settings,
        warm_start=None,
        share_features=None,
    ):
        self.X = X
        self.y = y
        self.static_features = static_features
        self.featurize = featurize
        self.n_dwm_features = int(n_dwm_features)
        self.X_val = X_val
        self.y_val = y_val
        self.loss_fn = LOSSES[loss_kind]
        self.stage_steps = list(stage_steps)
        self.lookahead_learning_rate = float(lookahead_learning_rate)
        self.dwm_learning_rate = float(dwm_learning_rate)
        for name, cast in self.SETTINGS.items():
            setattr(self, name, cast(getattr(settings, name)))
        self.warm_start = warm_start
        self.share_features = share_features
        self.n = int(X.shape[0])

    # -- setup, inside the fit's seeded block
    def setup(self, net):
        # batch order and validation draws: a numpy Generator seeded from torch's RNG,
        # which the estimator seeded from random_state for this fit
        self.rng = check_generator(int(torch.randint(2**31 - 1, ()).item()))
        self.progress = Progress(type(net).__name__, self.verbose)  # one clock for the fit
        self.learner_stream = _IndexStream(self.n, self.batch_size, self.rng)
        self.dwm_stream = _IndexStream(self.n, self.batch_size, self.rng)
        device = net.device
        if self.warm_start is not None:
            self.model = copy.deepcopy(self.warm_start).to(device=device, dtype=torch.float32)
        else:
            self.model = WeightingMLP(
                self.n_dwm_features,
                hidden_size=self.dwm_hidden,
                use_batch_context=self.use_batch_context,
                temperature=self.temperature,
            ).to(device)
        # no DWM update and no warm start: every weight is exactly 1, skip the DWM
        self.trained = self.warm_start is not None or self.dwm_steps_per_stage > 0
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.dwm_learning_rate)
        self.stage = 0
        self.step = 0
        self.online_steps = 0
        n_stages = len(self.stage_steps)
        self.weight_sums = np.zeros((n_stages, self.n))
        self.counts = np.zeros((n_stages, self.n), dtype=np.int64)
        self.stage_stats = []
        self._reset_stage_logs()

    def _reset_stage_logs(self):
        self._ess = []
        self._dwm_val_losses = []
        width = 0 if self.share_features is None else self.share_features.shape[1]
        self._weighted_share = np.zeros(width)
        self._plain_share = np.zeros(width)
        self._weight_total = 0.0
        self._count_total = 0

    def batch(self, idx):
        """The skorch batch ``({"X", "u", "index"}, y)`` of pool rows ``idx``."""
        t = torch.as_tensor(idx, device=self.X.device)
        return {"X": self.X[t], "u": self.static_features[t], "index": t}, self.y[t]

    def _val_batch(self):
        n_val = self.X_val.shape[0]
        if n_val <= self.val_batch_size:
            return self.X_val, self.y_val
        idx = torch.as_tensor(
            self.rng.choice(n_val, self.val_batch_size, replace=False), device=self.X_val.device
        )
        return self.X_val[idx], self.y_val[idx]

    # -- (a) DWM phase: learner frozen (moved by the look-ahead steps if online)
    def dwm_phase(self, net):
        module = net.module_
        losses_log = []
        for j in range(self.dwm_steps_per_stage):
            idx = torch.as_tensor(self.dwm_stream.next(), device=self.X.device)
            xb, yb, ub = self.X[idx], self.y[idx], self.static_features[idx]
            with torch.no_grad():
                losses = self.loss_fn(module(xb), yb)
            u = self.featurize(module, xb, ub, losses)
            w = self.model(u)
            hyper, val_loss = _one_step_hypergradient(
                module,
                self.loss_fn,
                (xb, yb),
                self._val_batch(),
                w.detach(),
                self.lookahead_learning_rate,
                mode=self.hypergradient,
                return_val_loss=True,
            )
            if not bool(torch.isfinite(hyper).all()) or not np.isfinite(val_loss):
                raise FloatingPointError(
                    f"the hypergradient is not finite at stage {self.stage + 1}, DWM step "
                    f"{j + 1} (validation loss after the look-ahead step: {val_loss!r}); "
                    "lower lookahead_learning_rate or learning_rate, or raise temperature."
                )
            self.optimizer.zero_grad()
            w.backward(hyper.to(w.dtype))
            self.optimizer.step()
            if self.online:
                # theta <- theta'(w): the step the hypergradient was taken through
                weighted_sgd_step(
                    module, self.loss_fn, (xb, yb), w.detach(), self.lookahead_learning_rate
                )
                self.online_steps += 1
            losses_log.append(val_loss)
        self._dwm_val_losses = losses_log
        net.history.record("dwm_val_loss", losses_log[-1] if losses_log else float("nan"))

    # -- (b) learner phase: DWM frozen
    def learner_loss(self, net, y_pred, y_true, Xi):
        losses = self.loss_fn(y_pred, y_true)
        self.step += 1
        if not bool(torch.isfinite(losses).all()):
            # the learner diverged: skorch records the non-finite loss, training stops at
            # the end of the stage and the estimator raises (lower learning_rate)
            return losses.mean()
        idx = Xi["index"].cpu().numpy()
        b = losses.shape[0]
        if not self.trained:
            w_np = np.ones(b)
            loss = losses.mean()
        else:
            with torch.no_grad():
                u = self.featurize(net.module_, Xi["X"], Xi["u"], losses.detach())
                w = self.model(u)
            w_np = w.double().cpu().numpy()
            if not np.all(np.isfinite(w_np)) or np.any(w_np < 0) or not w_np.sum() > 0:
                raise FloatingPointError(
                    f"the data weighting model gave non-finite, negative or all-zero weights "
                    f"at stage {self.stage + 1}, learner step {self.step}; lower "
                    "dwm_learning_rate or raise temperature."
                )
            loss = (w.to(losses.dtype) * losses).mean()
        ess = effective_sample_size(w_np)
        net.history.record_batch("ess", ess)
        self._ess.append(ess / b)
        np.add.at(self.weight_sums[self.stage], idx, w_np)
        np.add.at(self.counts[self.stage], idx, 1)
        if self.share_features is not None:
            f = self.share_features[idx]
            self._weighted_share += w_np @ f
            self._plain_share += f.sum(axis=0)
        self._weight_total += float(w_np.sum())
        self._count_total += b
        return loss

    def validation_loss(self, module):
        with torch.no_grad():
            return float(self.loss_fn(module(self.X_val), self.y_val).mean())

    def end_stage(self, net):
        ess = np.asarray(self._ess)
        dwm = self._dwm_val_losses
        stats = {
            "stage": self.stage + 1,
            "n_steps": int(self.stage_steps[self.stage]),
            "val_loss": self.validation_loss(net.module_),
            "dwm_val_loss_first": float(dwm[0]) if dwm else float("nan"),
            "dwm_val_loss_last": float(dwm[-1]) if dwm else float("nan"),
            "dwm_val_losses": [float(v) for v in dwm],
            "ess_mean": float(ess.mean()) if ess.size else float("nan"),
            "ess_min": float(ess.min()) if ess.size else float("nan"),
            "low_ess_fraction": float(np.mean(ess < LOW_ESS_FRACTION)) if ess.size else 0.0,
        }
        if self.share_features is not None:
            stats["weight_share"] = self._weighted_share / max(self._weight_total, 1e-300)
            stats["uniform_share"] = self._plain_share / max(self._count_total, 1)
        net.history.record("valid_loss", stats["val_loss"])
        net.history.record("ess_mean", stats["ess_mean"])
        if stats["low_ess_fraction"] > 0:
            self.progress.log(
                f"stage {stats['stage']}: {stats['low_ess_fraction']:.0%} of the batches had an "
                f"effective sample size below {LOW_ESS_FRACTION:.0%} of the batch (min "
                f"{stats['ess_min']:.3f}); concentrated weights are common with the DWM"
            )
        self.stage_stats.append(stats)
        self.stage += 1
        self._reset_stage_logs()

    def release_data(self):
        """Drop the tensors of the training data (kept neither in the fitted net nor pickles)."""
        for name in ("X", "y", "static_features", "X_val", "y_val", "share_features"):
            setattr(self, name, None)
        self.optimizer = None


class DWMNet(skorch.NeuralNet):
    """skorch net trained with data weighting: one epoch = one stage of the DWM schedule.

    Batches are dicts ``{"X", "u", "index"}``; the module sees ``X`` only. During a stage
    the training iterator gives the stage's learner batches and the training loss is the
    weighted mean of the per-sample losses; the stage boundaries are the
    :class:`BilevelStages` callback's. Without ``bilevel`` (after the fit) it behaves as a
    plain ``NeuralNet`` whose criterion is a :class:`PerSampleLoss`.

    Parameters
    ----------
    *args, **kwargs
        As for ``skorch.NeuralNet``.
    bilevel : BilevelState or None
        The DWM state; the estimators set it for the fit and remove it afterwards.
    """

    def __init__(self, *args, bilevel=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.bilevel = bilevel

    def infer(self, x, **fit_params):
        if isinstance(x, Mapping):
            x = x["X"]
        x = to_tensor(x, device=self.device)
        return self.module_(x, **fit_params)

    def get_iterator(self, dataset, training=False):
        if training and self.bilevel is not None:
            return _StageBatches(self.bilevel)
        return super().get_iterator(dataset, training=training)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        y_true = to_tensor(y_true, device=self.device)
        if training and self.bilevel is not None:
            return self.bilevel.learner_loss(self, y_pred, y_true, X)
        return self.criterion_(y_pred, y_true)


class BilevelStages(skorch.callbacks.Callback):
    """skorch callback running the stage boundaries of the DWM schedule.

    ``on_train_begin`` builds the weighting model and the batch streams of ``state``;
    ``on_epoch_begin`` runs the stage's DWM phase (``dwm_steps_per_stage`` hypergradient
    updates, the learner frozen); ``on_epoch_end`` records the stage's statistics
    (``valid_loss``, ``ess_mean`` in the history, a dict in ``state.stage_stats``).

    Parameters
    ----------
    state : BilevelState
        The state shared with the :class:`DWMNet` of the fit.
    """

    def __init__(self, state=None):
        store_params(self, locals())

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        if self.state is not None:
            self.state.setup(net)

    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        if self.state is not None and self.state.trained:
            self.state.dwm_phase(net)

    def on_epoch_end(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        if self.state is not None:
            self.state.end_stage(net)
