"""Hypergradient of a validation loss with respect to per-sample weights, through one SGD step.

For a learner with parameters ``theta``, a batch with per-sample losses ``l_i(theta)`` and
weights ``w_i``, one (weighted, mean-reduced) SGD step gives

    theta'(w) = theta - eta * grad_theta (1/B) sum_i w_i l_i(theta)

and the hypergradient of the validation loss ``L_val(theta')`` is

    dL_val/dw_i = -(eta/B) * < grad L_val(theta'), grad l_i(theta) >

with ``eta`` the ``learning_rate`` of the step.

``mode="exact"`` differentiates through the step with ``torch.autograd.grad(...,
create_graph=True)`` and :func:`torch.func.functional_call` (a double backward);
``mode="first_order"`` evaluates the formula above from per-sample gradients
(``torch.func.vmap`` of ``torch.func.grad``) and the validation gradient at ``theta'``, so
it needs first derivatives only. For one SGD step the two are the same number: the formula
is exact, because ``theta'`` is linear in ``w``.
"""


import warnings

import torch
from sklearn.utils._param_validation import HasMethods, StrOptions, validate_params
from torch.func import functional_call, grad, vmap

from ..utils._deprecation import DEPRECATED, DEPRECATED_PARAM, REMOVED_IN
from ..utils._param_validation import ANY_REAL

HYPERGRADIENT_MODES = ("exact", "first_order")


def _split_state(model):
    """Trainable parameters (detached leaves) and the rest of the state (buffers, frozen)."""
    params, frozen = {}, {}
    for name, p in model.named_parameters():
        if p.requires_grad:
            params[name] = p.detach()
        else:
            frozen[name] = p.detach()
    for name, b in model.named_buffers():
        frozen[name] = b
    return params, frozen


def _check_losses(losses, n, where):
    if losses.dim() != 1 or losses.shape[0] != n:
        raise ValueError(
            f"loss_fn must return one loss per sample (reduction='none'), a tensor of shape "
            f"({n},) for the {where}. Got shape {tuple(losses.shape)} instead."
        )
    return losses


@validate_params(
    {
        "model": [HasMethods(["named_parameters", "named_buffers"])],
        "loss_fn": [callable],
        "batch": [tuple, list],
        "val_batch": [tuple, list],
        "weights": ["array-like"],
        "learning_rate": [ANY_REAL, None],
        "lr": [ANY_REAL, DEPRECATED_PARAM],
        "mode": [StrOptions(set(HYPERGRADIENT_MODES))],
        "return_val_loss": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def one_step_hypergradient(
    model,
    loss_fn,
    batch,
    val_batch,
    weights,
    learning_rate=None,
    *,
    mode="exact",
    return_val_loss=False,
    lr=DEPRECATED,
):
    """Derivative of the validation loss after one weighted SGD step w.r.t. the weights.

    The step is ``theta' = theta - eta * grad_theta mean_i(w_i * l_i(theta))`` on the
    training ``batch``; the validation loss is the mean of ``loss_fn`` over ``val_batch``
    at ``theta'``. The model's parameters are read, never changed, and their ``.grad`` is
    left alone. Inner optimisers other than SGD (Adam, ...) are handled by using this SGD
    step as a surrogate (what the data weighting model paper's chain rule amounts to).

    Parameters
    ----------
    model : torch.nn.Module
        The learner; ``model(X)`` gives the outputs that ``loss_fn`` scores. Its trainable
        parameters (``requires_grad=True``) are the ones stepped.
    loss_fn : callable
        ``loss_fn(outputs, y) -> Tensor of shape (n,)``: one loss per sample (mean
        reduction is applied here).
    batch : tuple of (X, y) tensors
        The training batch of ``B`` samples.
    val_batch : tuple of (X_val, y_val) tensors
        The validation batch.
    weights : Tensor of shape (B,)
        The per-sample weights ``w`` (any values, e.g. ones; used detached).
    learning_rate : float
        Learning rate ``eta`` of the (surrogate) SGD step (required).
    mode : {"exact", "first_order"}, default="exact"
        ``"exact"``: autograd through the step (double backward). ``"first_order"``:
        per-sample gradients with ``torch.func.vmap``; the same value for one SGD step,
        without second-order autograd (the module must work under ``vmap``: no batch
        norm, no fused RNN kernels).
    return_val_loss : bool, default=False
        Also return the validation loss at ``theta'`` (a float).
    lr : float
        Deprecated name of ``learning_rate``.

        .. deprecated:: 0.3
           ``lr`` was renamed ``learning_rate`` and will be removed in 0.4.

    Returns
    -------
    hypergradient : Tensor of shape (B,)
        ``dL_val(theta'(w)) / dw_i``, detached, in the dtype of the model.
    val_loss : float
        Only with ``return_val_loss=True``.

    Raises
    ------
    ValueError
        If ``mode`` is unknown, ``weights`` has the wrong shape, or ``loss_fn`` does not
        return one loss per sample.

    See Also
    --------
    sklearn_icml.weighting.DWMClassifier, sklearn_icml.weighting.DWMRegressor

    References
    ----------
    .. [1] Y. Yu, K. Han, H. Zhou, Y. Tang, K. Huang, Y. Wang, D. Tao, "LLM Data Selection
       and Utilization via Dynamic Bi-level Optimization", ICML 2025, arXiv:2507.16178.
    .. [2] M. Ren, W. Zeng, B. Yang, R. Urtasun, "Learning to Reweight Examples for Robust
       Deep Learning", ICML 2018.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.weighting import one_step_hypergradient
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> model = torch.nn.Linear(3, 1)
    >>> def loss_fn(out, y):
    ...     return (out.squeeze(-1) - y) ** 2
    >>> X, y = torch.randn(4, 3), torch.randn(4)
    >>> Xv, yv = torch.randn(5, 3), torch.randn(5)
    >>> g = one_step_hypergradient(
    ...     model, loss_fn, (X, y), (Xv, yv), torch.ones(4), learning_rate=0.1)
    >>> g.shape
    torch.Size([4])
    >>> g_fo = one_step_hypergradient(
    ...     model, loss_fn, (X, y), (Xv, yv), torch.ones(4), learning_rate=0.1,
    ...     mode="first_order")
    >>> bool(torch.allclose(g, g_fo, atol=1e-6))
    True
    """
    if not (isinstance(lr, str) and lr == DEPRECATED):
        if learning_rate is not None:
            raise ValueError(
                "`lr` is the deprecated name of `learning_rate`; pass only learning_rate=... "
                f"Got lr={lr!r} and learning_rate={learning_rate!r} instead."
            )
        warnings.warn(
            "one_step_hypergradient: the parameter `lr` was renamed `learning_rate` in 0.3 "
            f"and `lr` will be removed in {REMOVED_IN}; pass learning_rate={lr!r} instead.",
            FutureWarning,
            stacklevel=2,
        )
        learning_rate = lr
    if learning_rate is None:
        raise TypeError(
            "one_step_hypergradient() needs learning_rate, the step size of the SGD step. "
            "Got learning_rate=None instead."
        )
    return _one_step_hypergradient(
        model, loss_fn, batch, val_batch, weights, learning_rate, mode=mode,
        return_val_loss=return_val_loss,
    )


def _one_step_hypergradient(model, loss_fn, batch, val_batch, weights, learning_rate, *, mode,
                            return_val_loss):
    """:func:`one_step_hypergradient` without the argument checks (the DWM's inner loop)."""
    X, y = batch
    X_val, y_val = val_batch
    n = X.shape[0]
    weights = torch.as_tensor(weights)
    if weights.dim() != 1 or weights.shape[0] != n:
        raise ValueError(
            f"weights must have shape ({n},), one weight per sample of the batch. Got shape "
            f"{tuple(weights.shape)} instead."
        )
    params, frozen = _split_state(model)
    if not params:
        raise ValueError(
            "model must have a trainable parameter to step. Got a model whose parameters all "
            "have requires_grad=False instead."
        )
    ref = next(iter(params.values()))
    weights = weights.detach().to(device=ref.device, dtype=ref.dtype)
    learning_rate = float(learning_rate)
    if mode == "exact":
        hyper, val_loss = _exact(
            model, loss_fn, params, frozen, X, y, X_val, y_val, weights, learning_rate
        )
    else:
        hyper, val_loss = _first_order(
            model, loss_fn, params, frozen, X, y, X_val, y_val, weights, learning_rate
        )
    if return_val_loss:
        return hyper, val_loss
    return hyper


def _exact(model, loss_fn, params, frozen, X, y, X_val, y_val, weights, learning_rate):
    names = list(params)
    with torch.enable_grad():
        leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
        w = weights.clone().requires_grad_(True)
        out = functional_call(model, {**frozen, **leaves}, (X,))
        losses = _check_losses(loss_fn(out, y), X.shape[0], "training batch")
        inner = (w * losses).mean()
        grads = torch.autograd.grad(
            inner, [leaves[k] for k in names], create_graph=True, allow_unused=True
        )
        stepped = {
            k: leaves[k] if g is None else leaves[k] - learning_rate * g
            for k, g in zip(names, grads)
        }
        val_out = functional_call(model, {**frozen, **stepped}, (X_val,))
        val_loss = _check_losses(
            loss_fn(val_out, y_val), X_val.shape[0], "validation batch"
        ).mean()
        (hyper,) = torch.autograd.grad(val_loss, w, allow_unused=True)
    if hyper is None:  # no parameter depends on the batch
        hyper = torch.zeros_like(weights)
    return hyper.detach(), float(val_loss.detach())


def per_sample_gradients(model, loss_fn, params, frozen, X, y):
    """Per-sample gradients ``grad_theta l_i(theta)`` as a dict of ``(B, *shape)`` tensors."""

    def one(p, xi, yi):
        out = functional_call(model, {**frozen, **p}, (xi.unsqueeze(0),))
        return loss_fn(out, yi.unsqueeze(0)).sum()

    return vmap(grad(one), in_dims=(None, 0, 0))(params, X, y)


def _first_order(model, loss_fn, params, frozen, X, y, X_val, y_val, weights, learning_rate):
    n = X.shape[0]
    with torch.enable_grad():
        G = per_sample_gradients(model, loss_fn, params, frozen, X, y)
        stepped = {
            k: (v - learning_rate * torch.tensordot(weights, G[k], dims=1) / n).requires_grad_(
                True
            )
            for k, v in params.items()
        }
        val_out = functional_call(model, {**frozen, **stepped}, (X_val,))
        val_loss = _check_losses(
            loss_fn(val_out, y_val), X_val.shape[0], "validation batch"
        ).mean()
        names = list(stepped)
        g_val = torch.autograd.grad(val_loss, [stepped[k] for k in names], allow_unused=True)
    hyper = torch.zeros_like(weights)
    for k, gv in zip(names, g_val):
        if gv is not None:
            hyper = hyper + G[k].reshape(n, -1) @ gv.reshape(-1)
    return (-learning_rate / n) * hyper.detach(), float(val_loss.detach())


def weighted_sgd_step(model, loss_fn, batch, weights, learning_rate):
    """Commit the look-ahead step in place: ``theta <- theta - eta * grad mean(w * l(theta))``.

    ``eta`` is ``learning_rate``.

    The parameters become the ``theta'`` that :func:`one_step_hypergradient` differentiates
    through (same batch, same weights, same ``learning_rate``); this is the "online" variant of the
    DWM schedule, where each DWM update also moves the learner. ``.grad`` is left alone.

    Parameters
    ----------
    model : torch.nn.Module
    loss_fn : callable
        ``loss_fn(outputs, y) -> Tensor of shape (n,)``.
    batch : tuple of (X, y) tensors
    weights : Tensor of shape (n,)
        Used detached.
    learning_rate : float

    Returns
    -------
    loss : float
        The weighted mean loss before the step.
    """
    X, y = batch
    params = [p for p in model.parameters() if p.requires_grad]
    with torch.enable_grad():
        losses = _check_losses(loss_fn(model(X), y), X.shape[0], "training batch")
        w = torch.as_tensor(weights).detach().to(device=losses.device, dtype=losses.dtype)
        inner = (w * losses).mean()
        grads = torch.autograd.grad(inner, params, allow_unused=True)
    with torch.no_grad():
        for p, g in zip(params, grads):
            if g is not None:
                p.sub_(float(learning_rate) * g)
    return float(inner.detach())
