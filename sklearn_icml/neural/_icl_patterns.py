"""Reading a trained ICL attention layer (He et al., ICML 2025): structure metrics, plots.

The effective key-query matrices ``KQ_h`` and output-value rows ``OV_h`` of a trained
multi-head attention show the emergent structure (``KQ_h ~ omega_h I`` on the x-block,
``OV_h ~ (0, .., 0, mu_h)``, ``sum_h mu_h ~ 0``); these functions measure it and draw it.
numpy only (matplotlib for the plot).
"""

import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import POSITIVE_INT
from ._icl_tasks import MultiTaskLinearICLTaskSampler

#: The effective weights of a trained attention layer, as every function here takes them.
_WEIGHTS = {"KQ": ["array-like"], "OV": ["array-like"]}


@validate_params(_WEIGHTS, prefer_skip_nested_validation=True)
def attention_pattern_metrics(KQ, OV):
    """Diagnostics of the emergent structure (the paper's x-block reading).

    Parameters
    ----------
    KQ : array-like of shape (n_heads, d + 1, d + 1)
        Effective key-query matrices ``K_h^T Q_h / sqrt(d+1)``.
    OV : array-like of shape (n_heads, d + 1)
        Effective output-value rows ``O_h V_h``.

    Returns
    -------
    metrics : dict
        ``omega`` (mean of the first d diagonal entries), ``mu`` (``OV[:, d]``),
        ``diag_ratio`` (``||diag(KQ[:d,:d])||^2 / ||KQ[:d,:d]||_F^2``; the last column of
        ``KQ`` multiplies the query's zero y-slot and never trains, so it is left out),
        ``homogeneity`` (variance of that diagonal), ``last_entry_ratio``
        (``OV[d]^2 / ||OV||^2``), ``zero_sum`` (``|sum mu| / sum |mu|``), ``eta_eff``
        (mean over heads of ``2 |omega| |mu|``), all per head except the last two.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.neural import attention_pattern_metrics
    >>> KQ = np.stack([np.diag([0.1, 0.1, 0.0]), np.diag([-0.1, -0.1, 0.0])])
    >>> m = attention_pattern_metrics(KQ, [[0, 0, 3.0], [0, 0, -3.0]])
    >>> m["diag_ratio"].tolist(), m["zero_sum"], round(m["eta_eff"], 3)
    ([1.0, 1.0], 0.0, 0.6)
    """
    KQ = np.asarray(KQ, dtype=np.float64)
    OV = np.asarray(OV, dtype=np.float64)
    if KQ.ndim != 3 or KQ.shape[1] != KQ.shape[2] or OV.shape != KQ.shape[:2]:
        raise ValueError(
            f"KQ must have shape (n_heads, D, D) and OV (n_heads, D). Got {KQ.shape} and "
            f"{OV.shape} instead."
        )
    d = KQ.shape[1] - 1
    block = KQ[:, :d, :d]
    diag = np.diagonal(block, axis1=1, axis2=2)
    fro = np.sum(block**2, axis=(1, 2))
    omega = diag.mean(axis=1)
    mu = OV[:, d].copy()
    ov_norm = np.sum(OV**2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        diag_ratio = np.where(fro > 0, np.sum(diag**2, axis=1) / np.where(fro > 0, fro, 1), 0.0)
        last = np.where(ov_norm > 0, mu**2 / np.where(ov_norm > 0, ov_norm, 1), 0.0)
    abs_sum = float(np.sum(np.abs(mu)))
    return {
        "omega": omega,
        "mu": mu,
        "diag_ratio": diag_ratio,
        "homogeneity": diag.var(axis=1),
        "last_entry_ratio": last,
        "zero_sum": float(abs(mu.sum()) / abs_sum) if abs_sum > 0 else 0.0,
        "eta_eff": float(np.mean(2.0 * np.abs(omega) * np.abs(mu))),
    }


@keyword_only_after(2)
@validate_params(
    {**_WEIGHTS, "n_features": [POSITIVE_INT], "task_dims": [tuple, list]},
    prefer_skip_nested_validation=True,
)
def multitask_pattern_metrics(KQ, OV, *, n_features, task_dims=(3, 4)):
    """Which head serves which task in a two-output attention layer (allocation measures).

    Parameters
    ----------
    KQ : array-like of shape (n_heads, d + 2, d + 2)
        Effective key-query matrices.
    OV : array-like of shape (n_heads, 2, d + 2)
        Effective output-value maps (row ``k`` feeds output ``k``).
    n_features : int
        ``d``.
    task_dims : tuple of two int, default=(3, 4)
        ``(dx1, dx2)``: task 1 reads ``x[:dx1]``, task 2 ``x[d - dx2:]``.

    Returns
    -------
    metrics : dict
        Per head: ``omega`` (mean of the first d diagonal entries of ``KQ``), ``mu``
        (n_heads, 2) with ``mu[h, k] = OV[h, k, d + k]`` (head h copying ``y_k`` into output
        ``k``); ``kq_mass`` (n_heads, 2): for the coordinates only task ``k`` reads (task 1:
        ``x[:d - dx2]``, task 2: ``x[dx1:]``), the mean over them of the squared norms of
        their key row and query column in the x-block of ``KQ`` (averaged), so a head with
        ``KQ ~ omega I`` on all of x gets equal masses;
        ``ov_mass`` (n_heads, 2) = ``mu**2``; ``kq_allocation`` and ``ov_allocation``
        (n_heads,) = ``(m1 - m2) / (m1 + m2)`` of those masses: +1 a head serving task 1
        only, -1 task 2 only, ~0 a head superposing both (0 when both masses are 0).
        ``kq_mass``/``kq_allocation`` are NaN when a task has no exclusive coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.neural import multitask_pattern_metrics
    >>> KQ = np.zeros((1, 7, 7)); KQ[0, 0, 0] = 1.0
    >>> OV = np.zeros((1, 2, 7)); OV[0, 0, 5] = 2.0
    >>> m = multitask_pattern_metrics(KQ, OV, n_features=5)
    >>> m["kq_allocation"].tolist(), m["ov_allocation"].tolist()
    ([1.0], [1.0])
    """
    KQ = np.asarray(KQ, dtype=np.float64)
    OV = np.asarray(OV, dtype=np.float64)
    d = int(n_features)
    d1, d2 = MultiTaskLinearICLTaskSampler(n_features=d, task_dims=task_dims).params()[-1]
    D = d + 2
    if KQ.ndim != 3 or KQ.shape[1:] != (D, D) or OV.shape != (KQ.shape[0], 2, D):
        raise ValueError(
            f"KQ must have shape (n_heads, {D}, {D}) and OV (n_heads, 2, {D}) for "
            f"n_features={d}. Got {KQ.shape} and {OV.shape} instead."
        )
    H = KQ.shape[0]
    only = [np.arange(0, d - d2), np.arange(d1, d)]
    kq_mass = np.full((H, 2), np.nan)
    block = KQ[:, :d, :d]
    # per x-coordinate: mean of its squared key row and query column in the x-block
    coord = 0.5 * (np.sum(block**2, axis=2) + np.sum(block**2, axis=1))
    for k, idx in enumerate(only):
        if idx.size:
            kq_mass[:, k] = coord[:, idx].mean(axis=1)
    mu = np.stack([OV[:, 0, d], OV[:, 1, d + 1]], axis=1)
    ov_mass = mu**2

    def alloc(m):
        tot = m[:, 0] + m[:, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(tot > 0, (m[:, 0] - m[:, 1]) / np.where(tot > 0, tot, 1), 0.0)

    kq_alloc = alloc(kq_mass)
    if np.isnan(kq_mass).any():
        kq_alloc = np.full(H, np.nan)
    return {
        "omega": np.diagonal(KQ[:, :d, :d], axis1=1, axis2=2).mean(axis=1),
        "mu": mu,
        "kq_mass": kq_mass,
        "ov_mass": ov_mass,
        "kq_allocation": kq_alloc,
        "ov_allocation": alloc(ov_mass),
    }


@keyword_only_after(2)
@validate_params(_WEIGHTS, prefer_skip_nested_validation=True)
def plot_attention_patterns(KQ, OV, *, fig=None):
    """Heat maps of the effective ``KQ_h`` (top row) and ``OV_h`` (bottom row) per head.

    Parameters
    ----------
    KQ : array-like of shape (n_heads, D, D)
    OV : array-like of shape (n_heads, D)
    fig : matplotlib Figure or None

    Returns
    -------
    fig : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from sklearn_icml.neural import plot_attention_patterns
    >>> fig = plot_attention_patterns(np.zeros((2, 3, 3)), np.zeros((2, 3)))
    >>> len(fig.axes) >= 4
    True
    """
    import matplotlib.pyplot as plt

    KQ = np.asarray(KQ, dtype=np.float64)
    OV = np.asarray(OV, dtype=np.float64)
    H = KQ.shape[0]
    if fig is None:
        fig = plt.figure(figsize=(3.2 * H, 4.2))
    axes = fig.subplots(2, H, squeeze=False, gridspec_kw={"height_ratios": [4, 1]})
    for h in range(H):
        lim = max(float(np.abs(KQ[h]).max()), 1e-12)
        im = axes[0, h].imshow(KQ[h], cmap="RdBu_r", vmin=-lim, vmax=lim)
        axes[0, h].set_title(f"head {h}: KQ")
        fig.colorbar(im, ax=axes[0, h], fraction=0.046)
        lim = max(float(np.abs(OV[h]).max()), 1e-12)
        im = axes[1, h].imshow(OV[h][None, :], cmap="RdBu_r", vmin=-lim, vmax=lim)
        axes[1, h].set_title(f"head {h}: OV")
        axes[1, h].set_yticks([])
        fig.colorbar(im, ax=axes[1, h], fraction=0.046)
    if hasattr(fig, "tight_layout"):  # a SubFigure has none
        fig.tight_layout()
    return fig
