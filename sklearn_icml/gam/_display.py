"""Displays of a fitted stump-forest GAM, in scikit-learn's pattern (matplotlib, imported lazily).

As :class:`sklearn.inspection.PartialDependenceDisplay`: ``from_estimator`` reads what the
picture needs from the fitted model into the display, ``plot(ax=...)`` draws it, and the
display keeps the matplotlib objects (``figure_``, ``ax_`` or ``axes_``, the artists).

* :class:`ShapeFunctionDisplay`: the shape function of each feature (steps over a rug of the
  training quantiles, bars for categories, the missing value beside them), on a linear,
  log or quantile x axis;
* :class:`TermImportanceDisplay`: the terms ranked by importance, largest first;
* :class:`LocalExplanationDisplay`: the terms of one row, sorted, with the intercept and the
  prediction they add up to.

The y axis says what a term adds to: the prediction (regressor), the log-odds of
``classes_[1]`` (binary classifier; ``class_of_interest=classes_[0]`` flips the sign), or the
softmax logits (multiclass).
"""

import numbers

import numpy as np
import pandas as pd
from sklearn.utils import Bunch
from sklearn.utils.validation import check_is_fitted

from ..utils import optional_import
from ..utils._params import store_params
from ._encoding import is_dataframe

_XSCALES = ("linear", "log", "quantile")


def _check_gam(estimator):
    if not (hasattr(estimator, "shape_functions") and hasattr(estimator, "term_importances")):
        raise TypeError(
            "estimator must be a StumpForestGAMRegressor or StumpForestGAMClassifier. Got "
            f"{type(estimator).__name__} instead."
        )
    check_is_fitted(estimator)


def _target(estimator, class_of_interest, *, all_classes):
    """``(weights, labels, axis_label)``: the raw scores (n_values columns) times ``weights``
    (n_values, n_curves) are the curves drawn, ``labels`` their legend entries (None: no
    legend) and ``axis_label`` what they are in."""
    classes = getattr(estimator, "classes_", None)
    if classes is None:
        if class_of_interest is not None:
            raise ValueError(
                "class_of_interest is for classifiers; a regressor has one term per "
                f"feature. Got class_of_interest={class_of_interest!r} instead."
            )
        return np.ones((1, 1)), [None], "contribution to y"
    listed = [c.item() if hasattr(c, "item") else c for c in classes]
    if class_of_interest is not None and not any(
        np.asarray(class_of_interest == c).all() for c in classes
    ):
        raise ValueError(
            f"class_of_interest must be one of classes_ {listed!r}. Got "
            f"{class_of_interest!r} instead."
        )
    if len(classes) == 2:
        positive = class_of_interest is None or class_of_interest == classes[1]
        chosen = classes[1] if positive else classes[0]
        return (
            np.array([[1.0 if positive else -1.0]]),
            [None],
            f"log-odds of {_label(chosen)!r}",
        )
    if class_of_interest is None and all_classes:
        return np.eye(len(classes)), [_label(c) for c in classes], "class logit (softmax)"
    if class_of_interest is None:
        return None, [None], "class logit (softmax)"  # the caller chooses the class
    k = int(np.flatnonzero(classes == class_of_interest)[0])
    return np.eye(len(classes))[:, [k]], [None], f"logit of {_label(classes[k])!r} (softmax)"


def _label(value):
    """A class label or category as the user wrote it (numpy scalars as Python values)."""
    return value.item() if isinstance(value, np.generic) else value


def _feature_index(estimator, features, argument="features"):
    """Column positions of ``features`` (names or indices)."""
    names = [str(n) for n in estimator._feature_names()]
    out = []
    for f in features:
        if isinstance(f, numbers.Integral) and not isinstance(f, bool | np.bool_):
            if not -len(names) <= f < len(names):
                raise ValueError(
                    f"{argument} must be feature names {names!r} or indices in "
                    f"[0, {len(names)}). Got {f!r} instead."
                )
            out.append(int(f) % len(names))
        elif isinstance(f, str) and f in names:
            out.append(names.index(f))
        else:
            raise ValueError(
                f"{argument} must be feature names {names!r} or indices in "
                f"[0, {len(names)}). Got {f!r} instead."
            )
    return out


def _figure_axes(ax, n_panels, n_cols, figsize, plt):
    """``(figure, axes)``, a new grid of ``n_panels`` Axes, or the Axes of ``ax``."""
    if ax is None:
        n_cols = max(1, min(int(n_cols), n_panels))
        n_rows = -(-n_panels // n_cols)
        if figsize is None:
            figsize = (3.4 * n_cols, 2.8 * n_rows)
        fig, grid = plt.subplots(n_rows, n_cols, figsize=figsize, squeeze=False)
        for extra in grid.ravel()[n_panels:]:
            extra.set_visible(False)
        return fig, grid
    axes = np.asarray(ax, dtype=object)
    if axes.size != n_panels or not all(hasattr(a, "plot") for a in axes.ravel()):
        raise ValueError(
            f"ax must be None or one matplotlib Axes per panel ({n_panels}). Got "
            f"{axes.size} object(s) instead."
        )
    return axes.ravel()[0].figure, axes


def _single_axes(ax, plt, figsize):
    if ax is None:
        return plt.subplots(figsize=figsize)
    if not hasattr(ax, "barh"):
        raise ValueError(f"ax must be None or a matplotlib Axes. Got {ax!r} instead.")
    return ax.figure, ax


class ShapeFunctionDisplay:
    """Shape functions of a stump-forest GAM, one panel per feature.

    Build it with :meth:`from_estimator`; :meth:`plot` draws it again (into other Axes, on
    another x scale). Numeric features are step lines over a rug of the training quantiles
    (the bin edges), categorical ones bars; a feature with missing values in ``fit`` shows
    the value of a missing entry (a diamond at the right edge, or a bar "missing").

    Parameters
    ----------
    shapes : list of Bunch
        One per panel: ``name``, ``kind`` ("numeric" or "categorical"), ``scores`` (P,
        n_curves), ``missing_score`` (n_curves,), ``has_missing``, and ``thresholds``,
        ``edges`` and ``edge_quantiles`` (numeric: the cumulative training fraction at each
        bin edge) or ``categories``.
    ylabel : str
        What the values are (e.g. "log-odds of 'stay'").
    curve_labels : list of str or None
        The legend entry of each curve (None: one curve, no legend).

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes
        The panels drawn into.
    figure_ : matplotlib Figure
        The figure holding them.
    lines_ : list
        Per panel, the artists of its curves (lines or bar containers).

    See Also
    --------
    TermImportanceDisplay : which terms matter most.
    LocalExplanationDisplay : the terms of one row.
    sklearn.inspection.PartialDependenceDisplay : the same pattern for any model.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from sklearn_icml.gam import ShapeFunctionDisplay, StumpForestGAMClassifier
    >>> X = pd.DataFrame({"tenure": [1, 2, 5, 10, 20, 40] * 20,
    ...                   "plan": ["basic", "pro", "pro"] * 40})
    >>> y = pd.Series(["churn", "stay"] * 60).where(X["tenure"] > 4, "churn")
    >>> clf = StumpForestGAMClassifier(n_stumps=4, min_samples_leaf=5).fit(X, y)
    >>> display = ShapeFunctionDisplay.from_estimator(clf, ["tenure"], xscale="log")
    >>> display.axes_[0, 0].get_ylabel()
    "log-odds of 'stay'"
    """

    def __init__(self, *, shapes, ylabel, curve_labels=None):
        store_params(self, locals())

    @classmethod
    def from_estimator(
        cls, estimator, features=None, *, class_of_interest=None, xscale="linear",
        n_cols=3, ax=None, figsize=None,
    ):
        """Read the shape functions of a fitted model and draw them.

        Parameters
        ----------
        estimator : StumpForestGAMRegressor or StumpForestGAMClassifier
            The fitted model.
        features : list of str or int, default=None
            Features to draw, by name (``feature_names_in_``, else ``"x0"``, ...) or
            column index; by default every feature a stump uses, in column order.
        class_of_interest : label, default=None
            Classifiers: the class whose score is drawn. Binary: ``classes_[1]`` (the
            default, its log-odds) or ``classes_[0]`` (the same curves, sign flipped);
            multiclass: one class's logit, by default one curve per class.
        xscale : {"linear", "log", "quantile"}, default="linear"
            x axis of numeric features: ``"quantile"`` places values by their training
            quantile (ticks in the feature's units), for skewed features; ``"log"`` needs
            positive values (a feature whose thresholds reach 0 or below is refused).
        n_cols : int, default=3
            Panels per row of a new figure.
        ax : matplotlib Axes or array-like of Axes, default=None
            One Axes per feature to draw into; by default a new figure.
        figsize : tuple of float, default=None
            Size of a new figure; by default 3.4 x 2.8 inches per panel.

        Returns
        -------
        display : ShapeFunctionDisplay
        """
        _check_gam(estimator)
        weights, labels, ylabel = _target(estimator, class_of_interest, all_classes=True)
        if features is None:
            used = estimator._used_features()
            features = used if used else [0]
        elif isinstance(features, str | numbers.Integral):
            features = [features]
        columns = _feature_index(estimator, features)
        if not columns:
            raise ValueError("features must name at least one feature. Got [] instead.")
        fitted = estimator._shapes()  # feature -> scores (P, n_values), unsqueezed
        shapes = [_shape(estimator, j, fitted.get(j), weights) for j in columns]
        display = cls(shapes=shapes, ylabel=ylabel, curve_labels=labels)
        return display.plot(ax=ax, xscale=xscale, n_cols=n_cols, figsize=figsize)

    def plot(self, *, ax=None, xscale="linear", n_cols=3, figsize=None):
        """Draw the panels.

        Parameters
        ----------
        ax : matplotlib Axes or array-like of Axes, default=None
            One Axes per panel; by default a new figure.
        xscale : {"linear", "log", "quantile"}, default="linear"
            x axis of numeric features (see :meth:`from_estimator`).
        n_cols : int, default=3
            Panels per row of a new figure.
        figsize : tuple of float, default=None
            Size of a new figure.

        Returns
        -------
        display : ShapeFunctionDisplay
            ``self``, with ``axes_``, ``figure_`` and ``lines_`` set.
        """
        if not isinstance(xscale, str) or xscale not in _XSCALES:
            raise ValueError(
                f"xscale must be one of {list(_XSCALES)}. Got {xscale!r} instead."
            )
        if isinstance(n_cols, bool) or not isinstance(n_cols, numbers.Integral) or n_cols < 1:
            raise ValueError(f"n_cols must be a positive integer. Got {n_cols!r} instead.")
        if xscale == "log":
            for shape in self.shapes:
                if shape.kind == "numeric" and shape.edges.size and shape.edges[0] <= 0:
                    raise ValueError(
                        f"xscale='log' needs positive values, but feature {shape.name!r} "
                        f"has thresholds down to {shape.edges[0]:.4g}; use "
                        "xscale='quantile' for a skewed feature with zeros or negative "
                        "values. Got xscale='log' instead."
                    )
        plt = optional_import("matplotlib.pyplot")
        fig, axes = _figure_axes(ax, len(self.shapes), n_cols, figsize, plt)
        self.lines_ = []
        for a, shape in zip(axes.ravel(), self.shapes):
            if shape.kind == "categorical":
                artists = _draw_categorical(a, shape, self.curve_labels)
            else:
                artists = _draw_numeric(a, shape, self.curve_labels, xscale)
            self.lines_.append(artists)
            a.axhline(0.0, color="0.7", lw=0.8, zorder=0)
            a.set_title(shape.name)
            a.set_ylabel(self.ylabel, fontsize="small")
            if any(label is not None for label in self.curve_labels):
                a.legend(fontsize="small")
        if ax is None:
            fig.tight_layout()
        self.axes_, self.figure_ = axes, fig
        return self


def _shape(estimator, j, shape, weights):
    """The panel of feature ``j``: its fitted ``shape`` (None when no stump uses it), the
    scores times ``weights``."""
    names = estimator._feature_names()
    n_values = estimator._leaves.shape[2]
    has_missing = bool(estimator._bin_weight[j, estimator.max_bins] > 0)
    if estimator.is_categorical_[j]:
        categories = estimator.categories_[j]
        scores = shape.scores if shape is not None else np.zeros((categories.size, n_values))
        missing = shape.missing_score if shape is not None else np.zeros(n_values)
        return Bunch(
            name=str(names[j]), kind="categorical", categories=categories,
            scores=scores @ weights, missing_score=missing @ weights, has_missing=has_missing,
        )
    edges = estimator.bin_edges_[j]
    if shape is None:
        thresholds, scores, missing = np.empty(0), np.zeros((1, n_values)), np.zeros(n_values)
    else:
        thresholds, scores, missing = shape.thresholds, shape.scores, shape.missing_score
    counts = estimator._bin_weight[j, : edges.size + 1]
    total = counts.sum()
    quantiles = np.cumsum(counts)[: edges.size] / total if total > 0 else np.empty(0)
    return Bunch(
        name=str(names[j]), kind="numeric", thresholds=thresholds, scores=scores @ weights,
        missing_score=missing @ weights, has_missing=has_missing, edges=edges,
        edge_quantiles=quantiles,
    )


def _range(edges, xscale):
    """The x range drawn: the bin edges and a margin (a ratio on a log axis)."""
    if not edges.size:
        return (-1.0, 1.0) if xscale != "log" else (0.5, 2.0)
    lo, hi = edges[0], edges[-1]
    if xscale == "log":
        ratio = (hi / lo) ** 0.05 if hi > lo else 2.0
        return lo / ratio, hi * ratio
    span = hi - lo if hi > lo else 1.0
    return lo - 0.05 * span, hi + 0.05 * span


def _draw_numeric(ax, shape, curve_labels, xscale):
    edges = shape.edges
    quantile = xscale == "quantile" and edges.size > 0
    lo, hi = _range(edges, "linear" if quantile else xscale)
    if quantile:  # values placed by their training quantile: lo -> 0, hi -> 1
        knots_x = np.concatenate([[lo], edges, [hi]])
        knots_q = np.concatenate([[0.0], shape.edge_quantiles, [1.0]])

        def position(x):
            return np.interp(x, knots_x, knots_q)
    else:
        def position(x):
            return np.asarray(x, dtype=np.float64)

    xs = position(np.concatenate([[lo], shape.thresholds, [hi]]))
    artists = []
    for c, label in enumerate(curve_labels):
        ys = np.concatenate([shape.scores[:, c], shape.scores[-1:, c]])
        (line,) = ax.step(xs, ys, where="post", label=label, color=f"C{c}")
        artists.append(line)
    if edges.size:  # rug: the bin edges are quantiles of the training values
        ax.plot(position(edges), np.zeros_like(edges), "|", color="0.4", ms=6, alpha=0.5,
                transform=ax.get_xaxis_transform())
    if xscale == "log":
        ax.set_xscale("log")
    ax.set_xlim(position(lo), position(hi))
    if quantile:  # ticks at the bin edges nearest to the 10, 50 and 90 % quantiles
        near = np.abs(shape.edge_quantiles[None, :] - _TICK_QUANTILES[:, None]).argmin(axis=1)
        near = np.unique(near)
        ax.set_xticks(shape.edge_quantiles[near])
        ax.set_xticklabels([_format_number(v) for v in edges[near]], fontsize="small")
        ax.set_xlabel(f"{shape.name} (quantile scale)", fontsize="small")
    else:
        ax.set_xlabel(shape.name, fontsize="small")
    if shape.has_missing:  # the missing value as a marker at the right edge
        for c in range(len(curve_labels)):
            ax.plot([1.0], [shape.missing_score[c]], "D", color=f"C{c}",
                    transform=ax.get_yaxis_transform(), clip_on=False)
        ax.annotate("missing", (1.0, 1.0), xycoords="axes fraction", ha="right",
                    va="bottom", fontsize="x-small")
    return artists


_TICK_QUANTILES = np.array([0.1, 0.5, 0.9])


def _format_number(value):
    """A tick label: 3 significant digits, thousands written out (1,800 rather than 1.8e+03)."""
    if 1e3 <= abs(value) < 1e7:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _draw_categorical(ax, shape, curve_labels):
    labels = [str(_label(v)) for v in shape.categories]
    scores = shape.scores
    if shape.has_missing:
        labels.append("missing")
        scores = np.vstack([scores, shape.missing_score[None, :]])
    n_curves = len(curve_labels)
    positions = np.arange(len(labels))
    width = 0.8 / n_curves
    artists = []
    for c, label in enumerate(curve_labels):
        artists.append(ax.bar(positions + (c - (n_curves - 1) / 2) * width, scores[:, c],
                              width=width, label=label, color=f"C{c}"))
    tilt = len(labels) > 4
    ax.set_xticks(positions)
    ax.set_xticklabels(labels, rotation=45 if tilt else 0, ha="right" if tilt else "center",
                       fontsize="small")
    ax.set_xlabel(shape.name, fontsize="small")
    return artists


def _check_max_terms(max_terms):
    if max_terms is not None and (
        isinstance(max_terms, bool) or not isinstance(max_terms, numbers.Integral)
        or max_terms < 1
    ):
        raise ValueError(
            f"max_terms must be a positive integer or None (every term). Got {max_terms!r} "
            "instead."
        )


class TermImportanceDisplay:
    """The terms of a stump-forest GAM ranked by importance, as horizontal bars.

    The importance of a term is the model's :meth:`term_importances`: the mean absolute
    centred contribution over the training rows. The largest is at the top.

    Parameters
    ----------
    importances : pandas.Series
        Importance by feature name, largest first.
    xlabel : str
        What the importances are in.

    Attributes
    ----------
    ax_ : matplotlib Axes
        The Axes drawn into.
    figure_ : matplotlib Figure
        Its figure.
    bars_ : matplotlib BarContainer
        The bars, in the order of ``importances``.

    See Also
    --------
    ShapeFunctionDisplay : the shape of each term.
    sklearn.inspection.permutation_importance : importance by shuffling, for any model.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from sklearn_icml.gam import StumpForestGAMRegressor, TermImportanceDisplay
    >>> X = pd.DataFrame({"age": [20, 30, 40, 50, 60, 70] * 10,
    ...                   "city": ["Lyon", "Nice", "Paris"] * 20})
    >>> y = X["age"] / 10 + (X["city"] == "Paris")
    >>> model = StumpForestGAMRegressor(n_stumps=4, min_samples_leaf=5).fit(X, y)
    >>> display = TermImportanceDisplay.from_estimator(model)
    >>> display.importances.index.tolist()
    ['age', 'city']
    """

    def __init__(self, *, importances, xlabel):
        store_params(self, locals())

    @classmethod
    def from_estimator(cls, estimator, *, max_terms=10, ax=None):
        """Rank the terms of a fitted model and draw them.

        Parameters
        ----------
        estimator : StumpForestGAMRegressor or StumpForestGAMClassifier
            The fitted model.
        max_terms : int or None, default=10
            Most terms drawn (the largest); None draws every feature.
        ax : matplotlib Axes, default=None
            Axes to draw into; by default a new figure.

        Returns
        -------
        display : TermImportanceDisplay
        """
        _check_gam(estimator)
        _check_max_terms(max_terms)
        importances = pd.Series(estimator.term_importances()).sort_values(
            ascending=False, kind="stable"
        )
        if max_terms is not None:
            importances = importances.iloc[:max_terms]
        _, _, unit = _target(estimator, None, all_classes=True)
        xlabel = f"mean absolute {unit}" if unit.startswith("contribution") else (
            f"mean absolute contribution to the {unit}"
        )
        if getattr(estimator, "classes_", None) is not None and len(estimator.classes_) > 2:
            xlabel = "mean absolute contribution to the class logits (mean over classes)"
        display = cls(importances=importances, xlabel=xlabel)
        return display.plot(ax=ax)

    def plot(self, *, ax=None):
        """Draw the bars, the largest at the top.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw into; by default a new figure.

        Returns
        -------
        display : TermImportanceDisplay
            ``self``, with ``ax_``, ``figure_`` and ``bars_`` set.
        """
        plt = optional_import("matplotlib.pyplot")
        n = len(self.importances)
        own = ax is None
        fig, ax = _single_axes(ax, plt, (5.0, 0.9 + 0.3 * max(n, 1)))
        positions = np.arange(n)[::-1]  # the first (largest) at the top
        self.bars_ = ax.barh(positions, self.importances.to_numpy(), color="C0")
        ax.set_yticks(positions)
        ax.set_yticklabels([str(name) for name in self.importances.index])
        ax.set_xlabel(self.xlabel)
        ax.set_title("term importances")
        if own:
            fig.tight_layout()
        self.ax_, self.figure_ = ax, fig
        return self


class LocalExplanationDisplay:
    """The terms of one row: what each feature adds to that row's prediction.

    The bars are the row's :meth:`feature_contributions`, sorted by size (the largest at the
    top), labelled with the feature's value, plus the intercept; they add up to the
    prediction in the title (a classifier's score, and its probability).

    Parameters
    ----------
    contributions : pandas.Series
        The row's terms, labelled ``"name = value"``, in the order drawn.
    intercept : float
        The constant term.
    prediction : float
        ``intercept`` plus every term (the raw score of a classifier).
    xlabel : str
        What the values are in.
    title : str
        The line above the bars.

    Attributes
    ----------
    ax_ : matplotlib Axes
        The Axes drawn into.
    figure_ : matplotlib Figure
        Its figure.
    bars_ : matplotlib BarContainer
        The bars: the terms in the order of ``contributions``, then the intercept.

    See Also
    --------
    ShapeFunctionDisplay : the shape of each term over all values.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from sklearn_icml.gam import LocalExplanationDisplay, StumpForestGAMRegressor
    >>> X = pd.DataFrame({"age": [20, 30, 40, 50, 60, 70] * 10,
    ...                   "city": ["Lyon", "Nice", "Paris"] * 20})
    >>> y = X["age"] / 10 + (X["city"] == "Paris")
    >>> model = StumpForestGAMRegressor(n_stumps=4, min_samples_leaf=5).fit(X, y)
    >>> display = LocalExplanationDisplay.from_estimator(model, X.iloc[[5]])
    >>> display.contributions.index.tolist()
    ['age = 70', 'city = Paris']
    >>> bool(abs(display.prediction - model.predict(X.iloc[[5]])[0]) < 1e-12)
    True
    """

    def __init__(self, *, contributions, intercept, prediction, xlabel, title):
        store_params(self, locals())

    @classmethod
    def from_estimator(
        cls, estimator, X_row, *, class_of_interest=None, max_terms=None, ax=None
    ):
        """Explain the prediction of a fitted model on one row and draw it.

        Parameters
        ----------
        estimator : StumpForestGAMRegressor or StumpForestGAMClassifier
            The fitted model.
        X_row : DataFrame of one row, Series, or array-like of shape (n_features,) or \
                (1, n_features)
            The row to explain (as ``predict`` takes it: text, categories and NaN too).
        class_of_interest : label, default=None
            Classifiers: whose score is explained; binary: ``classes_[1]`` (default) or
            ``classes_[0]``; multiclass: by default the predicted class.
        max_terms : int or None, default=None
            Most terms drawn (the largest in size); the others are summed into one bar.
            None draws every feature.
        ax : matplotlib Axes, default=None
            Axes to draw into; by default a new figure.

        Returns
        -------
        display : LocalExplanationDisplay
        """
        _check_gam(estimator)
        _check_max_terms(max_terms)
        row = _one_row(X_row, estimator.n_features_in_)
        weights, _, unit = _target(estimator, class_of_interest, all_classes=False)
        terms = np.asarray(estimator._contributions(estimator._bin(row)))[0]  # (f, n_values)
        intercept = np.atleast_1d(estimator._intercept)
        if weights is None:  # multiclass, no class given: the predicted class
            k = int(np.argmax(intercept + terms.sum(axis=0)))
            weights = np.eye(terms.shape[1])[:, [k]]
            unit = f"logit of {_label(estimator.classes_[k])!r} (softmax)"
        values = (terms @ weights)[:, 0]
        b = float((intercept @ weights)[0])
        prediction = b + float(values.sum())
        names = [
            f"{name} = {_format_value(_value(row, j))}"
            for j, name in enumerate(estimator._feature_names())
        ]
        order = np.argsort(-np.abs(values), kind="stable")
        contributions = pd.Series(values[order], index=[names[j] for j in order],
                                  name="contribution")
        if max_terms is not None and len(contributions) > max_terms:
            rest = contributions.iloc[max_terms:]
            contributions = pd.concat([
                contributions.iloc[:max_terms],
                pd.Series([rest.sum()], index=[f"{len(rest)} other terms"]),
            ]).rename("contribution")
        title = f"prediction: {prediction:.4g}"
        if getattr(estimator, "classes_", None) is not None:
            title = f"{unit}: {prediction:.4g}"
            probability = 1.0 / (1.0 + np.exp(-prediction)) if len(estimator.classes_) == 2 \
                else float(estimator.predict_proba(row)[0, int(np.argmax(weights[:, 0]))])
            title += f" (probability {probability:.3g})"
        display = cls(contributions=contributions, intercept=b, prediction=prediction,
                      xlabel=unit, title=title)
        return display.plot(ax=ax)

    def plot(self, *, ax=None):
        """Draw the terms (largest at the top) and the intercept below them.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw into; by default a new figure.

        Returns
        -------
        display : LocalExplanationDisplay
            ``self``, with ``ax_``, ``figure_`` and ``bars_`` set.
        """
        plt = optional_import("matplotlib.pyplot")
        n = len(self.contributions)
        own = ax is None
        fig, ax = _single_axes(ax, plt, (5.5, 1.2 + 0.3 * (n + 1)))
        values = np.concatenate([self.contributions.to_numpy(), [self.intercept]])
        labels = [str(name) for name in self.contributions.index] + ["intercept"]
        colors = ["C3" if v > 0 else "C0" for v in values[:-1]] + ["0.6"]
        positions = np.arange(n + 1)[::-1]
        self.bars_ = ax.barh(positions, values, color=colors)
        ax.set_yticks(positions)
        ax.set_yticklabels(labels, fontsize="small")
        ax.axvline(0.0, color="0.3", lw=0.8)
        ax.set_xlabel(self.xlabel)
        ax.set_title(self.title)
        if own:
            fig.tight_layout()
        self.ax_, self.figure_ = ax, fig
        return self


def _one_row(X_row, n_features):
    """``X_row`` as a 1-row DataFrame or 2-D array, or a ValueError naming it."""
    if is_dataframe(X_row):
        row = X_row
    elif isinstance(X_row, pd.Series):
        row = X_row.to_frame().T.infer_objects()
    else:
        row = np.asarray(X_row, dtype=object if np.asarray(X_row).dtype.kind in "USO" else None)
        row = row.reshape(1, -1) if row.ndim == 1 else row
    if row.ndim != 2 or row.shape[0] != 1 or row.shape[1] != n_features:
        raise ValueError(
            f"X_row must be one row of {n_features} features (a DataFrame of one row, a "
            f"Series, or an array of shape ({n_features},)). Got shape "
            f"{np.shape(X_row)!r} instead."
        )
    return row


def _value(row, j):
    return row.iloc[0, j] if is_dataframe(row) else row[0, j]


def _format_value(value):
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "missing"
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        return _format_number(float(value)) if abs(float(value)) >= 1e3 else f"{value:.4g}"
    return str(value)
