"""A stump-forest GAM on a raw pandas frame: text columns as categories, inspection by
feature name, and the displays (shape functions on linear, log and quantile axes, ranked
term importances, the terms of one row)."""

import warnings

import numpy as np
import pandas as pd
import pytest

from sklearn_icml.gam import (
    LocalExplanationDisplay,
    ShapeFunctionDisplay,
    StumpForestGAMClassifier,
    StumpForestGAMRegressor,
    TermImportanceDisplay,
)

PARAMS = {"n_stumps": 30, "max_iter": 5, "min_samples_leaf": 10, "l2_reg": 1.0,
          "random_state": 0}

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*stopped at max_iter:sklearn.exceptions.ConvergenceWarning"
)


@pytest.fixture
def plt():
    """matplotlib's pyplot on the Agg backend (the ``plot`` extra); figures closed after."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    yield pyplot
    pyplot.close("all")


def _frame(n=1500, seed=0):
    """A customer table: a skewed positive number with NaN, text as object, pandas string and
    default string dtypes (with None / NA), a category column, and an object column of
    numbers; the target adds up known effects of each."""
    rng = np.random.default_rng(seed)
    city = rng.choice(["Lyon", "Nice", "Paris"], n)
    plan = rng.choice(["basic", "pro"], n)
    region = rng.choice(["north", "south"], n)
    tier = rng.choice(["a", "b", "c"], n)
    income = rng.lognormal(10, 1, n)
    age = rng.uniform(18, 80, n)
    y = (age / 10 + 2.0 * (city == "Paris") - 1.0 * (city == "Nice") + 1.5 * (plan == "pro")
         + 0.5 * (tier == "c") + np.log(income) / 5 + rng.normal(0, 0.3, n))
    city_obj = pd.Series(city, dtype=object)
    city_obj[rng.uniform(size=n) < 0.05] = None
    plan_str = pd.Series(plan, dtype="string")
    plan_str[rng.uniform(size=n) < 0.05] = pd.NA
    income[rng.uniform(size=n) < 0.1] = np.nan
    frame = pd.DataFrame({
        "age": age,
        "city": city_obj,
        "plan": plan_str,
        "region": pd.Series(region).astype(str),  # pandas' default string dtype
        "tier": pd.Categorical(tier),
        "income": income,
        "visits": pd.Series(rng.integers(0, 5, n), dtype=object),  # numbers in an object column
    })
    return frame, y


@pytest.fixture(scope="module")
def table():
    frame, y = _frame()
    return frame, y, StumpForestGAMRegressor(**PARAMS).fit(frame, y)


@pytest.fixture(scope="module")
def churn():
    """Binary labels that sort as "churn", "stay": staying grows with tenure."""
    rng = np.random.default_rng(1)
    n = 1200
    X = pd.DataFrame({"tenure": rng.lognormal(1.5, 1.0, n),
                      "plan": pd.Series(rng.choice(["basic", "pro"], n), dtype=object)})
    logit = np.log(X["tenure"]) - 1.0 + (X["plan"] == "pro")
    y = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-logit)), "stay", "churn")
    return X, y, StumpForestGAMClassifier(**PARAMS).fit(X, y)


# -- text columns as categories ---------------------------------------------------------------
def test_text_columns_are_categorical_features_from_dtype(table):
    frame, y, model = table
    assert model.is_categorical_.tolist() == [False, True, True, True, True, False, False]
    assert model.categories_[1].tolist() == ["Lyon", "Nice", "Paris"]
    assert model.categories_[2].tolist() == ["basic", "pro"]
    assert model.categories_[3].tolist() == ["north", "south"]
    pred = model.predict(frame)
    assert np.all(np.isfinite(pred)) and model.score(frame, y) > 0.8
    # the text columns carry their effects: Paris above Lyon above Nice, pro above basic
    shapes = model.shape_functions()
    city = dict(zip(shapes["city"].categories, shapes["city"].scores))
    assert city["Paris"] - city["Lyon"] == pytest.approx(2.0, abs=0.3)
    assert city["Lyon"] - city["Nice"] == pytest.approx(1.0, abs=0.3)
    plan = dict(zip(shapes["plan"].categories, shapes["plan"].scores))
    assert plan["pro"] - plan["basic"] == pytest.approx(1.5, abs=0.3)


def test_text_columns_fit_as_the_same_columns_of_category_dtype(table):
    frame, y, model = table
    as_category = frame.copy()
    for column in ["city", "plan", "region"]:
        as_category[column] = as_category[column].astype("category")
    reference = StumpForestGAMRegressor(**PARAMS).fit(as_category, y)
    np.testing.assert_array_equal(model.features_, reference.features_)
    np.testing.assert_allclose(model.predict(frame), reference.predict(as_category),
                               atol=1e-12)


def test_missing_and_unseen_text_take_the_missing_score(table):
    frame, _, model = table
    rows = frame.iloc[:3].copy()
    rows["city"] = pd.Series(["Berlin", None, np.nan], dtype=object, index=rows.index)
    terms = model.feature_contributions(rows)["city"]
    missing = model.shape_functions()["city"].missing_score
    np.testing.assert_allclose(terms.to_numpy(), missing, atol=1e-12)
    assert np.all(np.isfinite(model.predict(rows)))


def test_text_outside_the_categorical_features_is_refused_naming_the_gam_handling(table):
    frame, y, model = table
    with pytest.raises(ValueError, match="categorical_features") as info:
        StumpForestGAMRegressor(categorical_features=["tier"]).fit(frame, y)
    assert "'city'" in str(info.value) and "OneHotEncoder" not in str(info.value)
    with pytest.raises(ValueError, match=r"categorical_features=\[1, \.\.\.\]"):
        StumpForestGAMRegressor().fit(frame[["age", "city"]].to_numpy(dtype=object), y)
    rows = frame.iloc[:2].copy()
    rows["age"] = pd.Series(["old", "young"], dtype=object, index=rows.index)
    with pytest.raises(ValueError, match="'age', a numeric feature"):
        model.predict(rows)
    # an array whose text columns are named is fitted as the frame is
    X = frame[["age", "city"]].to_numpy(dtype=object)
    fitted = StumpForestGAMRegressor(**PARAMS, categorical_features=[1]).fit(X, y)
    assert fitted.categories_[1].tolist() == ["Lyon", "Nice", "Paris"]


def test_too_many_text_categories_say_how_to_leave_the_column_out():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"id": [f"user{i}" for i in range(300)], "x": rng.uniform(size=300)})
    with pytest.raises(ValueError, match="leave the column out of categorical_features"):
        StumpForestGAMRegressor(max_bins=255).fit(X, rng.uniform(size=300))


# -- inspection by feature name -------------------------------------------------------------
def test_inspection_is_labelled_by_feature_name(table):
    frame, _, model = table
    names = list(frame.columns)
    shapes = model.shape_functions()
    assert set(shapes) <= set(names) and "city" in shapes and "age" in shapes
    assert list(shapes) == [n for n in names if n in shapes]  # column order
    assert shapes.city is shapes["city"]
    importances = model.term_importances()
    assert isinstance(importances, pd.Series) and importances.index.tolist() == names
    assert importances.idxmax() == "age"
    rows = frame.iloc[10:15]
    terms = model.feature_contributions(rows)
    assert isinstance(terms, pd.DataFrame) and terms.columns.tolist() == names
    assert terms.index.equals(rows.index)
    np.testing.assert_allclose(model.intercept_ + terms.sum(axis=1), model.predict(rows),
                               atol=1e-12)


def test_arrays_get_the_names_x0_x1_as_scikit_learn_gives_them(table):
    frame, y, _ = table
    X = frame[["age", "income"]].to_numpy()
    model = StumpForestGAMRegressor(**PARAMS).fit(X, y)
    assert model.term_importances().index.tolist() == ["x0", "x1"]
    assert model.feature_contributions(X[:3]).columns.tolist() == ["x0", "x1"]
    assert set(model.shape_functions()) <= {"x0", "x1"}


def test_multiclass_contributions_have_a_column_per_class_and_feature():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.uniform(-2, 2, 900),
                      "colour": pd.Series(rng.choice(["red", "blue"], 900), dtype=object)})
    y = np.where(X["x"] < -0.7, "low", np.where(X["x"] > 0.7, "high", "mid"))
    clf = StumpForestGAMClassifier(**PARAMS).fit(X, y)
    terms = clf.feature_contributions(X.iloc[:5])
    assert terms.columns.names == ["class", "feature"]
    scores = clf.decision_function(X.iloc[:5])
    for k, label in enumerate(clf.classes_):
        assert terms[label].columns.tolist() == ["x", "colour"]
        np.testing.assert_allclose(clf.intercept_[k] + terms[label].sum(axis=1), scores[:, k],
                                   atol=1e-10)
    with pytest.warns(FutureWarning, match="feature_contributions"):
        legacy = terms[:, 0, 1]  # the (n_samples, n_features, n_classes) array of 0.2
    np.testing.assert_array_equal(legacy, terms[(clf.classes_[1], "x")].to_numpy())


def test_access_by_position_still_works_with_a_future_warning(table):
    frame, _, model = table
    rows = frame.iloc[:4]
    terms = model.feature_contributions(rows)
    with pytest.warns(FutureWarning, match=r"shape_functions\(\)\['city'\]"):
        assert model.shape_functions()[1] is not None
    with pytest.warns(FutureWarning, match="term_importances"):
        assert model.term_importances()[0] == model.term_importances()["age"]
    with pytest.warns(FutureWarning, match="feature_contributions"):
        column = terms[:, 1]
    np.testing.assert_array_equal(column, terms["city"].to_numpy())
    with pytest.warns(FutureWarning, match="feature_contributions"):
        first_row = terms[0]
    np.testing.assert_array_equal(first_row, terms.iloc[0].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # access by name does not warn
        model.shape_functions()["city"], terms["city"], model.term_importances()["age"]


def test_plot_shape_functions_takes_names_and_indices(table, plt):
    _, _, model = table
    by_name = model.plot_shape_functions(features=["age", "city"])
    by_index = model.plot_shape_functions(features=[0, 1])
    titles = [[ax.get_title() for ax in fig.axes if ax.get_visible()]
              for fig in (by_name, by_index)]
    assert titles[0] == titles[1] == ["age", "city"]
    with pytest.raises(ValueError, match="features must be feature names"):
        model.plot_shape_functions(features=["agee"])


# -- displays ----------------------------------------------------------------------------------
def test_shape_function_display_draws_into_the_given_axes(table, plt):
    _, _, model = table
    fig, axes = plt.subplots(1, 2)
    display = ShapeFunctionDisplay.from_estimator(model, ["age", "city"], ax=axes)
    assert isinstance(display, ShapeFunctionDisplay)
    assert display.figure_ is fig and list(display.axes_.ravel()) == list(axes)
    assert [ax.get_title() for ax in axes] == ["age", "city"]
    assert axes[1].get_xticklabels()[0].get_text() == "Lyon"
    assert axes[0].get_ylabel() == "contribution to y"
    # plot() draws the same display again, elsewhere
    fig2, axes2 = plt.subplots(1, 2)
    assert display.plot(ax=axes2).figure_ is fig2
    default = ShapeFunctionDisplay.from_estimator(model)
    shown = [ax.get_title() for ax in default.axes_.ravel() if ax.get_visible()]
    assert shown == list(model.shape_functions())


def test_classifier_shape_axis_names_the_log_odds_class(churn, plt):
    X, _, clf = churn
    assert clf.classes_.tolist() == ["churn", "stay"]
    display = ShapeFunctionDisplay.from_estimator(clf, ["tenure"])
    ax = display.axes_.ravel()[0]
    assert ax.get_ylabel() == "log-odds of 'stay'"
    stay = display.lines_[0][0].get_ydata()
    flipped = ShapeFunctionDisplay.from_estimator(clf, ["tenure"], class_of_interest="churn")
    assert flipped.axes_.ravel()[0].get_ylabel() == "log-odds of 'churn'"
    np.testing.assert_allclose(flipped.lines_[0][0].get_ydata(), -stay)
    assert stay[-1] > stay[0]  # staying grows with tenure
    with pytest.raises(ValueError, match="class_of_interest must be one of"):
        ShapeFunctionDisplay.from_estimator(clf, class_of_interest="gone")


def test_multiclass_shape_display_draws_one_labelled_curve_per_class(plt):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(900, 2))
    y = np.where(X[:, 0] < -0.7, "low", np.where(X[:, 0] > 0.7, "high", "mid"))
    clf = StumpForestGAMClassifier(**PARAMS).fit(X, y)
    display = ShapeFunctionDisplay.from_estimator(clf, ["x0"])
    ax = display.axes_.ravel()[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == clf.classes_.tolist()
    one = ShapeFunctionDisplay.from_estimator(clf, ["x0"], class_of_interest="high")
    assert one.axes_.ravel()[0].get_ylabel() == "logit of 'high' (softmax)"


def test_quantile_axis_places_values_by_training_quantile(churn, plt):
    X, _, clf = churn
    display = ShapeFunctionDisplay.from_estimator(clf, ["tenure"], xscale="quantile")
    ax = display.axes_.ravel()[0]
    xs = display.lines_[0][0].get_xdata()
    assert xs[0] == 0.0 and xs[-1] == 1.0 and np.all(np.diff(xs) >= 0)
    # each tick is a value in tenure's units, at the share of training rows below it
    labels = [float(t.get_text()) for t in ax.get_xticklabels()]
    ticks = ax.get_xticks()
    assert len(ticks) >= 3 and np.all(np.diff(labels) > 0)
    shares = [np.mean(X["tenure"] <= v) for v in labels]
    np.testing.assert_allclose(ticks, shares, atol=0.01)  # labels are rounded to 3 digits
    assert min(abs(ticks - 0.5)) < 0.05
    assert "quantile" in ax.get_xlabel()
    # each threshold sits at the share of training rows at or below it
    thresholds = clf.shape_functions()["tenure"].thresholds
    shares = [np.mean(X["tenure"] <= t) for t in thresholds]
    np.testing.assert_allclose(xs[1:-1], shares, atol=1e-12)


def test_log_axis_takes_positive_features_and_refuses_others(table, churn, plt):
    _, _, clf = churn
    display = ShapeFunctionDisplay.from_estimator(clf, ["tenure"], xscale="log")
    assert display.axes_.ravel()[0].get_xscale() == "log"
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"balance": rng.normal(0, 1, 600)})
    model = StumpForestGAMRegressor(**PARAMS).fit(X, X["balance"] ** 2)
    with pytest.raises(ValueError, match=r"xscale='log' needs positive values.*'balance'"):
        ShapeFunctionDisplay.from_estimator(model, xscale="log")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"xscale": "sqrt"}, "xscale must be one of"),
        ({"features": ["nope"]}, "features must be feature names"),
        ({"features": [7]}, "features must be feature names"),
        ({"features": []}, "features must name at least one"),
        ({"n_cols": 0}, "n_cols must be a positive integer"),
        ({"class_of_interest": "a"}, "class_of_interest is for classifiers"),
    ],
)
def test_shape_display_bad_arguments_name_the_argument(table, kwargs, match, plt):
    _, _, model = table
    with pytest.raises(ValueError, match=match):
        ShapeFunctionDisplay.from_estimator(model, **kwargs)


def test_shape_display_needs_one_axes_per_feature(table, plt):
    _, _, model = table
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match=r"ax must be None or one matplotlib Axes per panel"):
        ShapeFunctionDisplay.from_estimator(model, ["age", "city"], ax=ax)
    display = ShapeFunctionDisplay.from_estimator(model, "age", ax=ax)
    assert display.axes_.ravel()[0] is ax


def test_term_importance_display_ranks_the_terms_largest_first(table, plt):
    _, _, model = table
    _, ax = plt.subplots()
    display = TermImportanceDisplay.from_estimator(model, max_terms=4, ax=ax)
    assert isinstance(display, TermImportanceDisplay) and display.ax_ is ax
    expected = model.term_importances().sort_values(ascending=False).iloc[:4]
    pd.testing.assert_series_equal(display.importances, expected, check_series_type=False)
    # the bars from the top down: the names and widths in decreasing order
    top_down = sorted(display.bars_.patches, key=lambda p: -p.get_y())
    widths = [p.get_width() for p in top_down]
    assert widths == sorted(widths, reverse=True) and len(widths) == 4
    ticks = sorted(ax.get_yticklabels(), key=lambda t: -t.get_position()[1])
    labels = [t.get_text() for t in ticks]
    assert labels == expected.index.tolist() and labels[0] == "age"
    assert ax.get_xlabel() == "mean absolute contribution to y"
    everything = TermImportanceDisplay.from_estimator(model, max_terms=None)
    assert len(everything.importances) == model.n_features_in_
    for bad in (0, 2.5, "3"):
        with pytest.raises(ValueError, match="max_terms must be a positive integer"):
            TermImportanceDisplay.from_estimator(model, max_terms=bad)


def test_local_explanation_adds_up_to_the_prediction(table, plt):
    frame, _, model = table
    row = frame.iloc[[7]]
    _, ax = plt.subplots()
    display = LocalExplanationDisplay.from_estimator(model, row, ax=ax)
    assert isinstance(display, LocalExplanationDisplay) and display.ax_ is ax
    terms = display.contributions
    assert np.all(np.diff(np.abs(terms.to_numpy())) <= 0)  # sorted by size
    assert display.intercept == pytest.approx(model.intercept_)
    assert display.prediction == pytest.approx(model.predict(row)[0], abs=1e-10)
    assert display.intercept + terms.sum() == pytest.approx(display.prediction, abs=1e-10)
    # labelled with the row's values: the text as it is, a missing value as "missing"
    assert f"city = {row['city'].iloc[0] if row['city'].iloc[0] else 'missing'}" in terms.index
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "intercept"
    # a Series or a 1-D row explains the same
    series = LocalExplanationDisplay.from_estimator(model, row.iloc[0])
    assert series.prediction == pytest.approx(display.prediction, abs=1e-10)
    # max_terms keeps the largest and sums the rest into one bar
    short = LocalExplanationDisplay.from_estimator(model, row, max_terms=2)
    assert len(short.contributions) == 3 and short.contributions.index[-1].endswith("other terms")
    assert short.contributions.sum() == pytest.approx(terms.sum(), abs=1e-10)
    with pytest.raises(ValueError, match="X_row must be one row"):
        LocalExplanationDisplay.from_estimator(model, frame.iloc[:2])


def test_local_explanation_of_a_classifier_names_its_class(churn, plt):
    X, _, clf = churn
    row = X.iloc[[3]]
    display = LocalExplanationDisplay.from_estimator(clf, row)
    assert display.prediction == pytest.approx(clf.decision_function(row)[0], abs=1e-10)
    probability = clf.predict_proba(row)[0, 1]
    assert display.ax_.get_title().startswith("log-odds of 'stay'")
    assert f"{probability:.3g}" in display.ax_.get_title()
    churn_view = LocalExplanationDisplay.from_estimator(clf, row, class_of_interest="churn")
    assert churn_view.prediction == pytest.approx(-display.prediction, abs=1e-10)


def test_displays_refuse_an_unfitted_or_foreign_estimator(plt):
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LinearRegression

    with pytest.raises(NotFittedError):
        TermImportanceDisplay.from_estimator(StumpForestGAMRegressor())
    with pytest.raises(TypeError, match="estimator must be a StumpForestGAM"):
        ShapeFunctionDisplay.from_estimator(LinearRegression())
