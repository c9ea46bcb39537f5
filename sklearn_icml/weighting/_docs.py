"""Docstring pieces shared by the data weighting estimators, filled in by :func:`doc_filler`.

A class docstring names a piece as ``%(name)s`` on a line of its own; the filler substitutes
it (see :func:`sklearn_icml.utils._docstrings.fill_doc`), so that the parameters and
attributes every DWM estimator shares are written once.
"""

import functools

from ..utils._docstrings import fill_doc

PIECES = {
    "dwm_references": """\
References
----------
.. [1] Y. Yu, K. Han, H. Zhou, Y. Tang, K. Huang, Y. Wang, D. Tao, "LLM Data Selection
   and Utilization via Dynamic Bi-level Optimization", ICML 2025, arXiv:2507.16178.""",
    "dwm_fit_attributes": """\
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
    ``online=True``).""",
}


def shared_params_doc(*, lr, optimizer, max_iter, auto_loss_feature):
    """The Parameters entries every DWM estimator shares, with its own defaults.

    ``auto_loss_feature`` says what ``loss_feature="auto"`` means for the estimator.
    """
    return f"""\
lr : float, default={lr}
    Learning rate of the learner's optimiser.
optimizer : {{"sgd", "adam", "adamw"}}, default="{optimizer}"
    The learner's optimiser (plain SGD has no momentum). The hypergradient always uses
    an SGD step with ``lookahead_lr`` as a surrogate.
max_iter : int, default={max_iter}
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
dwm_lr : float, default=1e-3
    Adam learning rate of the weighting model.
dwm_hidden : int, default=32
    Hidden width of the :class:`WeightingMLP`.
temperature : float, default=1.0
    Softmax temperature of the weights (> 0).
lookahead_lr : float or None, default=None
    Step size of the one-step look-ahead; None uses ``lr``.
hypergradient : {{"exact", "first_order"}}, default="exact"
    How the derivative of the validation loss w.r.t. the weights is computed (see
    :func:`one_step_hypergradient`): by a double backward, or from per-sample
    gradients. Both give the same value for the one-step SGD surrogate.
use_batch_context : bool, default=True
    Give the DWM the batch mean of its inputs (interactions within a batch).
online : bool, default=False
    The online variant of the bi-level schedule: every DWM update also commits its
    look-ahead step to the learner (``theta <- theta'``, an SGD step of
    ``lookahead_lr`` on the weighted batch, outside the learner's optimiser). The
    learner then also moves during DWM phases, ``dwm_steps_per_stage`` extra steps
    per stage (counted in ``n_online_steps_``, not in ``n_iter_``).
loss_feature : {{"auto", "raw", "log1p"}}, default="auto"
    How the learner's current loss enters the DWM: ``"raw"`` or ``log(1 + loss)``.
    {auto_loss_feature}
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
    torch intra-op threads during ``fit`` and prediction (restored afterwards).
random_state : int, RandomState instance or None, default=None
    Seeds the validation split, both networks and the batch order.
device : str or torch.device, default="cpu"
    Where the learner and the DWM train (``"cuda"`` if available).
verbose : int, default=0
    0 is silent; 1 prints skorch's per-stage table and low-ESS notes.
**kwargs
    Parameters routed to the learner's skorch net as skorch routes them
    (``module__*``, ``optimizer__*``, ``criterion__*``, ``iterator_valid__*``,
    ``callbacks__*``); they win over the estimator's own settings."""


def doc_filler(*, lr, optimizer, max_iter, auto_loss_feature, own_params, own_attributes,
               notes):
    """A class decorator filling the weighting pieces into a DWM estimator's docstring.

    ``%(dwm_params)s`` becomes the Parameters section: the estimator's ``own_params``,
    then :func:`shared_params_doc` at its defaults; ``%(dwm_attributes)s`` the Attributes
    section: ``own_attributes``, then the fit's; ``%(dwm_notes)s`` its ``notes`` (a Notes
    section) and the References.
    """
    shared = shared_params_doc(
        lr=lr, optimizer=optimizer, max_iter=max_iter, auto_loss_feature=auto_loss_feature
    )
    pieces = {
        **PIECES,
        "dwm_params": f"Parameters\n----------\n{own_params}\n{shared}",
        "dwm_attributes": (
            f"Attributes\n----------\n{own_attributes}\n{PIECES['dwm_fit_attributes']}"
        ),
        "dwm_notes": f"{notes}\n\n{PIECES['dwm_references']}",
    }
    return functools.partial(fill_doc, pieces=pieces)
