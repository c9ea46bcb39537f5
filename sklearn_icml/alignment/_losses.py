"""The offline preference losses (DPO, IPO, SLiC and the GPO family) as torch functions.

Every loss acts on a *margin* ``h`` (see :func:`preference_margin`): the difference of
the normalised log-likelihoods of the preferred and the other response. Each function is
vectorised over ``h``, differentiable with autograd, and accepts an optional soft label
``p`` (the probability that the first response of the pair is the preferred one):

    loss(h, p) = p * g(h) + (1 - p) * g(-h),

with ``g`` the hard-label loss below. Swapping the two responses (``h -> -h``) together
with ``p -> 1 - p`` leaves the loss unchanged; ``p = 1`` (the default) is the usual
winner/loser form. The numpy twins in ``_loss_math`` (value and derivative in closed form)
drive the tabular solver; the tests check them against autograd.
"""


import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils import optional_import
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import CLOSED_UNIT_INTERVAL, FINITE_POSITIVE_REAL
from ._loss_math import LOSS_NAMES

torch = optional_import("torch", "neural")
F = torch.nn.functional


def _margin_loss(scale):
    """Decorator of a loss of the margin whose positive, finite scale is called ``scale``.

    Validates ``h``, the scale and ``p`` (``validate_params``) and makes everything after
    ``h`` keyword-only (positional calls warn until 0.4).
    """
    validate = validate_params(
        {
            "h": ["array-like"],
            scale: [FINITE_POSITIVE_REAL],
            "p": ["array-like", CLOSED_UNIT_INTERVAL, None],
        },
        prefer_skip_nested_validation=True,
    )
    return lambda loss: keyword_only_after(1)(validate(loss))


def _as_tensor(x, name, like=None):
    if not isinstance(x, torch.Tensor):
        dtype = like.dtype if isinstance(like, torch.Tensor) else torch.get_default_dtype()
        x = torch.as_tensor(np.asarray(x, dtype=np.float64), dtype=dtype)
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or infinity; every value must be finite.")
    return x


def _check_label(p, h):
    if p is None:
        return None
    p = _as_tensor(p, "p", like=h)
    if bool(((p < 0) | (p > 1)).any()):
        bad = p[(p < 0) | (p > 1)].flatten()[0].item()
        raise ValueError(
            f"p (soft label) must lie in [0, 1]. Got {bad!r} instead."
        )
    return p.to(device=h.device, dtype=h.dtype)


def _soft_loss(g, h, p):
    """``p g(h) + (1 - p) g(-h)`` (``g(h)`` when ``p`` is None) on validated tensors."""
    h = _as_tensor(h, "h")
    p = _check_label(p, h)
    if p is None:
        return g(h)
    return p * g(h) + (1.0 - p) * g(-h)


@_margin_loss("beta")
def logistic_loss(h, *, beta=0.1, p=None):
    """DPO's logistic loss ``-log sigmoid(beta * h) = softplus(-beta * h)``.

    Parameters
    ----------
    h : Tensor or array-like
        Margins (any shape).
    beta : float, default=0.1
        Inverse temperature (DPO's beta); must be > 0.
    p : Tensor, array-like, float or None, default=None
        Soft label in ``[0, 1]``: probability that the first response is preferred
        (broadcast against ``h``). None means 1.

    Returns
    -------
    loss : Tensor
        Same shape as ``h`` (elementwise; take ``.mean()`` for a batch loss).

    See Also
    --------
    squared_loss : IPO's squared loss.
    preference_margin : the margin ``h``.

    References
    ----------
    .. [1] Agarwal, Dann & Marinov, ICML 2025, arXiv:2502.06861 (see
       :class:`TabularPreferencePolicy`).
    .. [2] R. Rafailov et al., "Direct Preference Optimization", NeurIPS 2023.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.alignment import logistic_loss
    >>> logistic_loss(torch.tensor([0.0, 10.0]), beta=1.0)
    tensor([6.9315e-01, 4.5399e-05])
    """
    beta = float(beta)
    return _soft_loss(lambda t: F.softplus(-beta * t), h, p)


@_margin_loss("tau")
def squared_loss(h, *, tau=0.1, p=None):
    """IPO's squared loss ``(h - 1 / (2 tau))**2``.

    With a soft label the pointwise minimiser is ``h = (2 p - 1) / (2 tau)``, finite even
    for deterministic labels.

    Parameters
    ----------
    h : Tensor or array-like
        Margins.
    tau : float, default=0.1
        IPO's regularisation; the target margin is ``1 / (2 tau)``. Must be > 0.
    p : Tensor, array-like, float or None, default=None
        Soft label in ``[0, 1]``; None means 1.

    Returns
    -------
    loss : Tensor
        ``(h - 1 / (2 tau))**2`` (soft-label mixed), elementwise.

    References
    ----------
    .. [1] M. G. Azar et al., "A General Theoretical Paradigm to Understand Learning from
       Human Preferences", AISTATS 2024.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.alignment import squared_loss
    >>> squared_loss(torch.tensor([5.0, 0.0]), tau=0.1)
    tensor([ 0., 25.])
    """
    tau = float(tau)
    target = 1.0 / (2.0 * tau)
    return _soft_loss(lambda t: (t - target) ** 2, h, p)


@_margin_loss("delta")
def hinge_loss(h, *, delta=1.0, p=None):
    """SLiC-HF's hinge loss ``max(0, delta - h)`` (usually with no normaliser).

    trl's ``loss_type="hinge"`` is ``relu(1 - beta * h) = beta * hinge_loss(h, 1/beta)``.

    Parameters
    ----------
    h : Tensor or array-like
        Margins.
    delta : float, default=1.0
        Margin the preferred response must beat the other by; must be > 0.
    p : Tensor, array-like, float or None, default=None
        Soft label in ``[0, 1]``; None means 1.

    Returns
    -------
    loss : Tensor
        ``max(0, delta - h)`` (soft-label mixed), elementwise.

    References
    ----------
    .. [1] Y. Zhao et al., "SLiC-HF: Sequence Likelihood Calibration with Human Feedback",
       arXiv:2305.10425, 2023.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.alignment import hinge_loss
    >>> hinge_loss(torch.tensor([0.25, 1.0, 3.0]), delta=1.0)
    tensor([0.7500, 0.0000, 0.0000])
    """
    delta = float(delta)
    return _soft_loss(lambda t: F.relu(delta - t), h, p)


@_margin_loss("beta")
def exponential_loss(h, *, beta=0.1, p=None):
    """GPO's exponential loss ``exp(-beta * h)``.

    Parameters
    ----------
    h : Tensor or array-like
        Margins (any shape).
    beta : float, default=0.1
        Rate of the exponential; must be > 0.
    p : Tensor, array-like, float or None, default=None
        Soft label in ``[0, 1]``, as in :func:`logistic_loss`; None means 1.

    Returns
    -------
    loss : Tensor
        ``exp(-beta * h)`` (soft-label mixed), elementwise.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.alignment import exponential_loss
    >>> exponential_loss(torch.tensor([0.0]), beta=1.0)
    tensor([1.])
    """
    beta = float(beta)
    return _soft_loss(lambda t: torch.exp(-beta * t), h, p)


@_margin_loss("beta")
def truncated_quadratic_loss(h, *, beta=0.1, p=None):
    """GPO's truncated quadratic loss ``max(0, 1 - beta * h)**2``.

    Parameters
    ----------
    h : Tensor or array-like
        Margins (any shape).
    beta : float, default=0.1
        Scale of the margin inside the square (zero loss from ``h = 1 / beta`` on);
        must be > 0.
    p : Tensor, array-like, float or None, default=None
        Soft label in ``[0, 1]``, as in :func:`logistic_loss`; None means 1.

    Returns
    -------
    loss : Tensor
        ``max(0, 1 - beta * h)**2`` (soft-label mixed), elementwise.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.alignment import truncated_quadratic_loss
    >>> truncated_quadratic_loss(torch.tensor([0.0, 2.0]), beta=1.0)
    tensor([1., 0.])
    """
    beta = float(beta)
    return _soft_loss(lambda t: F.relu(1.0 - beta * t) ** 2, h, p)


@_margin_loss("beta")
def savage_loss(h, *, beta=0.1, p=None):
    """GPO's Savage loss ``1 / (1 + exp(beta * h))**2 = sigmoid(-beta * h)**2``.

    A proper composite loss with the logistic link: its population minimiser equals the
    logistic loss's.

    Parameters
    ----------
    h : Tensor or array-like
        Margins (any shape).
    beta : float, default=0.1
        Inverse temperature of the sigmoid, as DPO's beta; must be > 0.
    p : Tensor, array-like, float or None, default=None
        Soft label in ``[0, 1]``, as in :func:`logistic_loss`; None means 1.

    Returns
    -------
    loss : Tensor
        ``sigmoid(-beta * h)**2`` (soft-label mixed), elementwise.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.alignment import savage_loss
    >>> savage_loss(torch.tensor([0.0]), beta=1.0)
    tensor([0.2500])
    """
    beta = float(beta)
    return _soft_loss(lambda t: torch.sigmoid(-beta * t) ** 2, h, p)


#: Loss name -> loss function (``_loss_math.LOSS_PARAMETER`` names the scale each reads).
PREFERENCE_LOSSES = {
    "logistic": logistic_loss,
    "squared": squared_loss,
    "hinge": hinge_loss,
    "exponential": exponential_loss,
    "truncated_quadratic": truncated_quadratic_loss,
    "savage": savage_loss,
}

@keyword_only_after(2)
@validate_params(
    {
        "logp_w": ["array-like"],
        "logp_l": ["array-like"],
        "ref_logp_w": ["array-like", None],
        "ref_logp_l": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def preference_margin(logp_w, logp_l, *, ref_logp_w=None, ref_logp_l=None):
    """Normalised log-likelihood margin of a pair of responses.

    ``h = [log pi(w|x) - log nu(w|x)] - [log pi(l|x) - log nu(l|x)]``, with ``nu`` the
    normalising policy (the reference/SFT policy for DPO and IPO, the data-sampling
    policy, or none).

    Parameters
    ----------
    logp_w, logp_l : Tensor or array-like of shape (n,)
        Sequence log-probabilities under the trained policy of the first (preferred)
        and second response.
    ref_logp_w, ref_logp_l : Tensor, array-like or None, default=None
        Log-probabilities under the normalising policy; both None means no
        normalisation. They are treated as constants (detached).

    Returns
    -------
    h : Tensor of shape (n,)

    Raises
    ------
    ValueError
        If a log-probability is NaN or infinite, or only one of the normaliser's
        log-probabilities is given.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.alignment import preference_margin
    >>> preference_margin(torch.tensor([-1.0]), torch.tensor([-3.0]),
    ...                   ref_logp_w=torch.tensor([-2.0]), ref_logp_l=torch.tensor([-2.5]))
    tensor([1.5000])
    """
    logp_w = _as_tensor(logp_w, "logp_w")
    logp_l = _as_tensor(logp_l, "logp_l", like=logp_w)
    h = logp_w - logp_l
    if (ref_logp_w is None) != (ref_logp_l is None):
        raise ValueError(
            "ref_logp_w and ref_logp_l must both be given (normalised margin) or both be "
            f"None (no normaliser). Got ref_logp_w={'None' if ref_logp_w is None else '...'}"
            f" and ref_logp_l={'None' if ref_logp_l is None else '...'} instead."
        )
    if ref_logp_w is not None:
        ref_w = _as_tensor(ref_logp_w, "ref_logp_w", like=logp_w).detach()
        ref_l = _as_tensor(ref_logp_l, "ref_logp_l", like=logp_w).detach()
        h = h - (ref_w.to(h.device) - ref_l.to(h.device))
    return h

assert set(PREFERENCE_LOSSES) == set(LOSS_NAMES)
