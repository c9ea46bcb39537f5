"""Effective theory of representational merger: two particles read out by a linear map.

Two sequence representations are scalars ``h_1, h_2`` read out as ``b + h_i D`` towards
targets ``y_i``; gradient flow on the mean squared error, with a larger rate for the
representation of a longer sequence, is tracked through the inner products
``bD, b.y_i, |b|^2, |D|^2, D.y_i`` (van Rossem & Saxe, section on the effective theory;
the equations are those of the authors' ``parity/main.ipynb``).
"""

import numbers
import warnings

import numpy as np
from scipy.integrate import solve_ivp
from sklearn.utils._param_validation import validate_params

from ..utils._deprecation import DEPRECATED, DEPRECATED_PARAM, REMOVED_IN, keyword_only_after
from ..utils._param_validation import (
    FINITE_NON_NEGATIVE_REAL,
    FINITE_POSITIVE_REAL,
    INT_AT_LEAST_TWO,
)

# state vector layout
_H1, _H2, _BD, _BY1, _BY2, _B2, _D2, _DY1, _DY2 = range(9)


def _rhs(t, z, eta_h1, eta_h2, eta_a, eta_b, n_out, y11, y22, y12):
    h1, h2, bD, by1, by2, b2, D2, Dy1, Dy2 = z
    m_h = (h1 + h2) / 2
    m_h2 = (h1 * h1 + h2 * h2) / 2
    m_Dy = (Dy1 + Dy2) / 2
    m_by = (by1 + by2) / 2
    m_hb = (h1 * by1 + h2 * by2) / 2
    m_hDy = (h1 * Dy1 + h2 * Dy2) / 2
    eb, ea = eta_b / n_out, eta_a / n_out
    return [
        -eta_h1 / 2 * (bD + h1 * D2 - Dy1),
        -eta_h2 / 2 * (bD + h2 * D2 - Dy2),
        -eb * (bD + m_h * D2 - m_Dy) - ea * (m_h2 * bD + m_h * b2 - m_hb),
        -eb * (by1 + m_h * Dy1 - (y11 + y12) / 2),
        -eb * (by2 + m_h * Dy2 - (y22 + y12) / 2),
        -2 * eb * (b2 + m_h * bD - m_by),
        -2 * ea * (m_h2 * D2 + m_h * bD - m_hDy),
        -ea * (m_h2 * Dy1 + m_h * by1 - (h1 * y11 + h2 * y12) / 2),
        -ea * (m_h2 * Dy2 + m_h * by2 - (h1 * y12 + h2 * y22) / 2),
    ]


def _loss(z, y11, y22):
    h1, h2, bD, by1, by2, b2, D2, Dy1, Dy2 = z
    m_h = (h1 + h2) / 2
    m_h2 = (h1 * h1 + h2 * h2) / 2
    return 0.5 * (
        b2
        + D2 * m_h2
        + (y11 + y22) / 2
        + 2 * bD * m_h
        - (h1 * Dy1 + h2 * Dy2)
        - (by1 + by2)
    )


def _as_pair(value, name, *, positive=False):
    """``value`` as two floats; TypeError for a wrong type, ValueError for a wrong value."""
    if len(value) != 2:
        raise ValueError(f"{name} must be a pair (two numbers). Got {value!r} instead.")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must hold two numbers. Got {value!r} instead.")
        if not np.isfinite(v):
            raise ValueError(f"{name} must hold two finite numbers. Got {value!r} instead.")
        if positive and v <= 0:
            raise ValueError(f"{name} must hold two numbers > 0. Got {value!r} instead.")
    return float(value[0]), float(value[1])


@keyword_only_after(1)
@validate_params(
    {
        "h": ["array-like"],
        "D2_0": [FINITE_NON_NEGATIVE_REAL],
        "b2_0": [FINITE_NON_NEGATIVE_REAL],
        "learning_rate": [FINITE_POSITIVE_REAL],
        "lengths": ["array-like"],
        "targets": ["array-like"],
        "t_max": [FINITE_POSITIVE_REAL],
        "n_points": [INT_AT_LEAST_TWO],
        "lr": [FINITE_POSITIVE_REAL, DEPRECATED_PARAM],
    },
    prefer_skip_nested_validation=True,
)
def effective_theory_ode(
    h=(0.1, -0.1),
    *,
    D2_0=0.01,
    b2_0=0.01,
    learning_rate=0.02,
    lengths=(1, 10),
    targets=(1.0, 1.0),
    t_max=5000.0,
    n_points=501,
    lr=DEPRECATED,
):
    """Solve the two-representation effective theory of merger (gradient-flow ODEs).

    Representations ``h_1, h_2`` of two sequences of lengths ``lengths`` are read out by
    ``b + h_i D`` and trained on the mean squared error towards ``targets``. The
    representation of a sequence of length ``L`` learns at rate ``learning_rate * L`` (the
    recurrent map is applied ``L`` times), the read-out weight at ``learning_rate`` and the
    bias at ``learning_rate / 4``
    (the authors' effective rates). With equal targets the two representations are pulled
    together while the loss is non-zero: they merge when representational learning is
    fast compared with the read-out, and freeze apart otherwise. With different targets
    they are pushed apart.

    Parameters
    ----------
    h : pair of float, default=(0.1, -0.1)
        Initial representations.
    D2_0, b2_0 : float, default=0.01
        Initial ``|D|^2`` and ``|b|^2``; the cross terms ``b.D``, ``b.y_i``, ``D.y_i``
        start at 0.
    learning_rate : float, default=0.02
        SGD learning rate of the network the theory describes.
    lengths : pair of int, default=(1, 10)
        Sequence lengths of the two representations.
    targets : pair of float, default=(1.0, 1.0)
        Scalar targets ``y_1, y_2`` (output dimension 1).
    t_max : float, default=5000.0
        Integration time, in SGD steps.
    n_points : int, default=501
        Number of time points returned.
    lr : float, default="deprecated"
        Deprecated alias of ``learning_rate`` (renamed in 0.3, removed in 0.4).

    Returns
    -------
    solution : dict
        ``t``, ``h1``, ``h2``, ``loss``, ``distance2`` (``(h_1 - h_2)^2``), arrays over
        time; ``ratio`` (final over initial squared distance) and ``state`` (all nine
        variables over time, rows in the order h1, h2, bD, by1, by2, b2, D2, Dy1, Dy2).

    References
    ----------
    .. [1] L. van Rossem and A. M. Saxe (ICML 2025, arXiv:2507.09897), the effective theory
       of representational merger: two representations that interact through the shared
       read-out.

    Examples
    --------
    >>> from sklearn_icml.neural import effective_theory_ode
    >>> short = effective_theory_ode(lengths=(1, 1))["ratio"]
    >>> long = effective_theory_ode(lengths=(1, 10))["ratio"]
    >>> bool(long < 1e-5 < short < 1)
    True
    """
    if not (isinstance(lr, str) and lr == DEPRECATED):
        warnings.warn(
            "effective_theory_ode: the parameter `lr` was renamed `learning_rate` in 0.3 and "
            f"`lr` will be removed in {REMOVED_IN}; pass learning_rate={lr!r} instead.",
            FutureWarning,
            stacklevel=3,
        )
        learning_rate = lr
    h1, h2 = _as_pair(h, "h")
    len1, len2 = _as_pair(lengths, "lengths", positive=True)
    y1, y2 = _as_pair(targets, "targets")
    if h1 == h2:
        raise ValueError(f"h must hold two different values. Got {h!r} instead.")

    y11, y22, y12 = y1 * y1, y2 * y2, y1 * y2
    rate = learning_rate
    args = (rate * len1, rate * len2, rate, rate / 4, 1.0, y11, y22, y12)
    z0 = np.zeros(9)
    z0[[_H1, _H2, _B2, _D2]] = h1, h2, b2_0, D2_0
    t_eval = np.linspace(0.0, float(t_max), int(n_points))
    sol = solve_ivp(
        _rhs, (0.0, float(t_max)), z0, t_eval=t_eval, args=args, rtol=1e-9, atol=1e-12,
        method="LSODA",
    )
    if not sol.success:  # pragma: no cover - LSODA does not fail on this smooth system
        raise RuntimeError(f"the ODE solver failed: {sol.message}")
    state = sol.y
    distance2 = (state[_H1] - state[_H2]) ** 2
    return {
        "t": sol.t,
        "h1": state[_H1],
        "h2": state[_H2],
        "loss": _loss(state, y11, y22),
        "distance2": distance2,
        "ratio": float(distance2[-1] / distance2[0]),
        "state": state,
    }
