"""Step-function plots of a fitted stump-forest GAM (matplotlib, imported lazily)."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..utils import optional_import


def plot_shape_functions(model, features, ncols, figsize):
    """The figure of ``model.plot_shape_functions`` (a fitted stump-forest GAM)."""
    plt = optional_import("matplotlib.pyplot")
    check_is_fitted(model)
    shapes = model._shapes()
    features = sorted(shapes) if features is None else [int(j) for j in features]
    for j in features:
        if not 0 <= j < model.n_features_in_:
            raise ValueError(
                f"features must be indices in [0, {model.n_features_in_}). Got {j!r} instead."
            )
    n_panels = max(len(features), 1)
    ncols = max(1, min(int(ncols), n_panels))
    nrows = -(-n_panels // ncols)
    if figsize is None:
        figsize = (3.2 * ncols, 2.6 * nrows)
    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, squeeze=False)
    names = getattr(model, "feature_names_in_", None)
    classes = getattr(model, "classes_", None)
    n_values = model._leaves.shape[2]
    for ax, j in zip(axes.ravel(), features):
        edges = model.bin_edges_[j]
        lo, hi = (edges[0], edges[-1]) if edges.size else (-1.0, 1.0)
        span = hi - lo if hi > lo else 1.0
        lo, hi = lo - 0.05 * span, hi + 0.05 * span
        thresholds, values = shapes.get(j, (np.empty(0), np.zeros((1, n_values))))
        xs = np.concatenate([[lo], thresholds, [hi]])
        for c in range(values.shape[1]):
            ys = np.concatenate([values[:, c], values[-1:, c]])
            label = None if values.shape[1] == 1 else str(classes[c])
            ax.step(xs, ys, where="post", label=label)
        ax.axhline(0.0, color="0.7", lw=0.8, zorder=0)
        ax.set_title(str(names[j]) if names is not None else f"x{j}")
        ax.set_xlim(lo, hi)
        if values.shape[1] > 1:
            ax.legend(fontsize="small")
    for ax in axes.ravel()[len(features) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig
