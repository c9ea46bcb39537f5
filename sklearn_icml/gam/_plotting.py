"""Shape-function plots of a fitted stump-forest GAM (matplotlib, imported lazily)."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..utils import optional_import


def _draw_numeric(ax, model, j, shape, classes):
    edges = model.bin_edges_[j]
    lo, hi = (edges[0], edges[-1]) if edges.size else (-1.0, 1.0)
    span = hi - lo if hi > lo else 1.0
    lo, hi = lo - 0.05 * span, hi + 0.05 * span
    xs = np.concatenate([[lo], shape.thresholds, [hi]])
    for c in range(shape.scores.shape[1]):
        ys = np.concatenate([shape.scores[:, c], shape.scores[-1:, c]])
        label = None if shape.scores.shape[1] == 1 else str(classes[c])
        ax.step(xs, ys, where="post", label=label)
    # density rug: the bin edges are quantiles of the training values
    if edges.size:
        ax.plot(edges, np.zeros_like(edges), "|", color="0.4", ms=6, alpha=0.5,
                transform=ax.get_xaxis_transform())
    ax.set_xlim(lo, hi)


def _draw_categorical(ax, labels, scores, classes):
    n_values = scores.shape[1]
    positions = np.arange(len(labels))
    width = 0.8 / n_values
    for c in range(n_values):
        label = None if n_values == 1 else str(classes[c])
        ax.bar(positions + (c - (n_values - 1) / 2) * width, scores[:, c], width=width,
               label=label)
    ax.set_xticks(positions)
    ax.set_xticklabels([str(v) for v in labels], rotation=45 if len(labels) > 4 else 0,
                       ha="right" if len(labels) > 4 else "center", fontsize="small")


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
    has_missing = model._bin_weight[:, model.max_bins] > 0
    for ax, j in zip(axes.ravel(), features):
        name = str(names[j]) if names is not None else f"x{j}"
        shape = shapes.get(j)
        if model.is_categorical_[j]:
            cats = model.categories_[j]
            scores = shape.scores if shape is not None else np.zeros((cats.size, n_values))
            missing = shape.missing_score if shape is not None else np.zeros(n_values)
            labels = list(cats)
            if has_missing[j]:
                labels.append("missing")
                scores = np.vstack([scores, missing[None, :]])
            _draw_categorical(ax, labels, scores, classes)
        else:
            if shape is None:
                shape = type("Shape", (), {})()
                shape.thresholds = np.empty(0)
                shape.scores = np.zeros((1, n_values))
                shape.missing_score = np.zeros(n_values)
            _draw_numeric(ax, model, j, shape, classes)
            if has_missing[j]:  # the missing value as a marker at the right edge
                for c in range(n_values):
                    ax.plot([1.0], [shape.missing_score[c]], "D", color=f"C{c}",
                            transform=ax.get_yaxis_transform(), clip_on=False)
                ax.annotate("missing", (1.0, 1.0), xycoords="axes fraction", ha="right",
                            va="bottom", fontsize="x-small")
        ax.axhline(0.0, color="0.7", lw=0.8, zorder=0)
        ax.set_title(name)
        ax.set_xlabel(name, fontsize="small")
        ax.set_ylabel("contribution", fontsize="small")
        if n_values > 1:
            ax.legend(fontsize="small")
    for ax in axes.ravel()[len(features) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig
