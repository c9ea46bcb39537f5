"""StumpForestGAMRegressor / StumpForestGAMClassifier: the properties of the method
(exact stumps, the ridge leaf step, a non-increasing objective, additivity, invariances,
reproducibility), the classifier, bad input, and tabular data."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Ridge
from sklearn.utils import Bunch

from sklearn_icml.datasets import make_additive_classification, make_additive_regression
from sklearn_icml.gam import StumpForestGAMClassifier, StumpForestGAMRegressor, _loss, _optimizer

FAST = {"n_stumps": 12, "max_iter": 4, "min_samples_leaf": 10, "random_state": 0}

# FAST fits end at max_iter on purpose; the warning that says so is tested on its own
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*stopped at max_iter:sklearn.exceptions.ConvergenceWarning"
)


@pytest.fixture(scope="module")
def reg_data():
    X, y, _ = make_additive_regression(600, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def clf_data():
    X, y, _ = make_additive_classification(600, random_state=1)
    return X, y


def _stump_sum(model, X):
    """``intercept_ + sum_t s_t(x)`` straight from the fitted attributes."""
    leaves = model.leaf_values_
    out = np.zeros((X.shape[0],) + leaves.shape[2:]) + model.intercept_
    for j, thr, lv in zip(model.features_, model.thresholds_, leaves):
        if j >= 0:
            left = X[:, j] <= thr
            out += np.where(left.reshape((-1,) + (1,) * (lv.ndim - 1)), lv[0], lv[1])
    return out


def _hessian_units(y):
    """The penalty per unit of ``l2_reg`` of a classifier fitted on labels ``y`` (codes
    0..K-1, unit weights): ``l2_reg`` counts rows at the class frequencies ``p``, so it is
    multiplied by ``p (1 - p)`` (binary) or the mean of ``p_k (1 - p_k)`` (K classes)."""
    p = np.bincount(y) / y.shape[0]
    return p[1] * (1 - p[1]) if p.shape[0] == 2 else float(np.mean(p * (1 - p)))


def _design(model, X):
    """Indicator matrix [1[x<=theta_t], 1[x>theta_t]] of the non-zero stumps."""
    cols, used = [], np.flatnonzero(model.features_ >= 0)
    for t in used:
        left = (X[:, model.features_[t]] <= model.thresholds_[t]).astype(float)
        cols += [left, 1.0 - left]
    return np.column_stack(cols), used


# a single stump
def test_single_stump_separates_two_groups_exactly():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(0, 1, 50), rng.uniform(5, 6, 70)])
    y = np.concatenate([np.full(50, -3.0), np.full(70, 7.0)]) + rng.normal(0, 0.1, 120)
    model = StumpForestGAMRegressor(
        n_stumps=1, max_iter=1, l2_reg=0.0, min_samples_leaf=1, random_state=0
    ).fit(x[:, None], y)
    assert x[:50].max() < model.thresholds_[0] < x[50:].min()
    pred = model.predict(x[:, None])
    np.testing.assert_allclose(pred[:50], y[:50].mean(), atol=1e-10)
    np.testing.assert_allclose(pred[50:], y[50:].mean(), atol=1e-10)
    a, c = model.leaf_values_[0]
    assert model.intercept_ + a == pytest.approx(y[:50].mean(), abs=1e-10)
    assert model.intercept_ + c == pytest.approx(y[50:].mean(), abs=1e-10)


# the leaf step is the ridge solution on the fixed splits
@pytest.mark.parametrize("weighted", [False, True])
def test_leaf_step_equals_sklearn_ridge_on_the_final_splits(reg_data, weighted):
    X, y = reg_data
    w = np.random.default_rng(1).uniform(0.2, 3.0, y.shape[0]) if weighted else None
    lam = 3.0
    model = StumpForestGAMRegressor(**{**FAST, "l2_reg": lam}).fit(X, y, sample_weight=w)
    Phi, used = _design(model, X)
    ridge = Ridge(alpha=lam, fit_intercept=True, solver="cholesky", tol=1e-14)
    ridge.fit(Phi, y, sample_weight=w)
    np.testing.assert_allclose(model.leaf_values_[used].ravel(), ridge.coef_, atol=1e-8)
    assert model.intercept_ == pytest.approx(ridge.intercept_, abs=1e-8)


def test_logistic_leaf_step_equals_cvxpy(clf_data):
    cp = pytest.importorskip("cvxpy")
    X, y = clf_data
    lam = 2.0
    model = StumpForestGAMClassifier(**{**FAST, "n_stumps": 8, "l2_reg": lam}).fit(X, y)
    Phi, used = _design(model, X)
    b, v = cp.Variable(), cp.Variable(Phi.shape[1])
    F = b + Phi @ v
    penalty = lam * _hessian_units(y)
    objective = cp.sum(cp.logistic(F) - cp.multiply(y, F)) + penalty / 2 * cp.sum_squares(v)
    # Clarabel's default tolerances leave ~1e-5 errors in the leaves; tighten them
    tight = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11, "tol_ktratio": 1e-10}
    cp.Problem(cp.Minimize(objective)).solve(solver=cp.CLARABEL, **tight)
    np.testing.assert_allclose(model.leaf_values_[used].ravel(), v.value, atol=1e-5)
    assert model.intercept_ == pytest.approx(b.value, abs=1e-5)


# Newton on a small system ends at the optimum to rounding; L-BFGS, beyond
# _JOINT_NEWTON_MAX_SIZE unknowns, at its gradient tolerance
@pytest.mark.parametrize("newton, tol", [(True, 1e-9), (False, 1e-4)])
def test_softmax_leaf_step_is_a_stationary_point(newton, tol, monkeypatch):
    if not newton:
        monkeypatch.setattr(_loss, "_JOINT_NEWTON_MAX_SIZE", 0)
    X, y, _ = make_additive_regression(450, random_state=3)
    y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    lam = 2.0
    model = StumpForestGAMClassifier(**{**FAST, "n_stumps": 8, "l2_reg": lam}).fit(X, y)
    Phi, used = _design(model, X)
    V = model.leaf_values_[used].reshape(-1, 3)
    F = model.intercept_ + Phi @ V
    P = np.exp(F - logsumexp(F, axis=1, keepdims=True))
    P[np.arange(y.shape[0]), y] -= 1.0
    # gradient of E in the leaves; zero at the leaf-step optimum
    grad = Phi.T @ P + lam * _hessian_units(y) * V
    assert np.max(np.abs(grad)) < tol * y.shape[0] ** 0.5
    np.testing.assert_allclose(P.sum(0), 0, atol=tol)


# stumps that split alike are one unknown of the leaf step
@pytest.fixture(scope="module")
def few_splits_data():
    """Three features of four values each: at most nine distinct splits, so a forest of
    30 stumps repeats splits."""
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, size=(400, 3)).astype(float)
    f = X[:, 0] ** 2 - 2.0 * X[:, 1] + np.sin(X[:, 2])
    return X, f + rng.normal(0, 0.5, 400), f


def _repeated_splits(model):
    used = np.flatnonzero(model.features_ >= 0)
    splits = {(int(model.features_[t]), float(model.thresholds_[t])) for t in used}
    return used, len(splits)


def test_leaf_step_solves_the_distinct_splits_and_gives_the_ridge_of_all_stumps(
    few_splits_data, monkeypatch
):
    X, y, _ = few_splits_data
    sizes = []
    real = _loss._SquaredLoss.fit_leaves

    def spy(self, problem, seg, start, D=None):
        sizes.append((seg.A.shape[1], int(np.sum(problem.features >= 0))))
        return real(self, problem, seg, start, D)

    monkeypatch.setattr(_loss._SquaredLoss, "fit_leaves", spy)
    lam = 20.0
    model = StumpForestGAMRegressor(
        n_stumps=30, max_iter=5, l2_reg=lam, min_samples_leaf=5, random_state=0
    ).fit(X, y)
    used, n_splits = _repeated_splits(model)
    assert n_splits < used.size  # the forest repeats splits
    # the last leaf step solved one pair of leaves per distinct split, not per stump
    assert sizes[-1] == (2 * n_splits, used.size)
    # and its result is the ridge on every stump's two columns, duplicates included
    Phi, used = _design(model, X)
    ridge = Ridge(alpha=lam, fit_intercept=True, solver="cholesky", tol=1e-14).fit(Phi, y)
    np.testing.assert_allclose(model.leaf_values_[used].ravel(), ridge.coef_, atol=1e-8)
    assert model.intercept_ == pytest.approx(ridge.intercept_, abs=1e-8)


def test_logistic_and_monotone_leaf_steps_with_repeated_splits_are_the_optimum(
    few_splits_data,
):
    cp = pytest.importorskip("cvxpy")
    X, _, f = few_splits_data
    tight = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11, "tol_ktratio": 1e-10}
    y = (f > np.median(f)).astype(int)
    lam = 5.0
    model = StumpForestGAMClassifier(
        n_stumps=20, max_iter=3, l2_reg=lam, min_samples_leaf=5, random_state=0
    ).fit(X, y)
    used, n_splits = _repeated_splits(model)
    assert n_splits < used.size
    Phi, used = _design(model, X)
    b, v = cp.Variable(), cp.Variable(Phi.shape[1])
    F = b + Phi @ v
    penalty = lam * _hessian_units(y)
    objective = cp.sum(cp.logistic(F) - cp.multiply(y, F)) + penalty / 2 * cp.sum_squares(v)
    cp.Problem(cp.Minimize(objective)).solve(solver=cp.CLARABEL, **tight)
    np.testing.assert_allclose(model.leaf_values_[used].ravel(), v.value, atol=1e-5)
    # monotone (decreasing in feature 1) with repeated splits: the constrained optimum
    model = StumpForestGAMRegressor(
        n_stumps=30, max_iter=3, l2_reg=1.0, min_samples_leaf=5,
        monotonic_cst=[0, -1, 0], random_state=0,
    ).fit(X, f)
    used, n_splits = _repeated_splits(model)
    assert n_splits < used.size
    B, used = _design(model, X)
    v, b = cp.Variable(B.shape[1]), cp.Variable()
    cons = [v[2 * i] - v[2 * i + 1] >= 0 for i, t in enumerate(used) if model.features_[t] == 1]
    assert cons
    problem = cp.Problem(
        cp.Minimize(0.5 * cp.sum_squares(f - B @ v - b) + 0.5 * cp.sum_squares(v)), cons
    )
    problem.solve(solver=cp.CLARABEL, **tight)
    got = 0.5 * np.sum((f - model.predict(X)) ** 2) + 0.5 * np.sum(model.leaf_values_**2)
    assert got == pytest.approx(problem.value, rel=1e-6)


def _compact_forest(model):
    """The non-zero stumps grouped by split (feature, left side), leaves summed."""
    splits = {}
    for t in np.flatnonzero(model.features_ >= 0):
        j = int(model.features_[t])
        cats = model.left_categories_[t]
        side = float(model.thresholds_[t]) if cats is None else frozenset(cats.tolist())
        key = (j, side, bool(model.missing_go_to_left_[t]))
        splits[key] = splits.get(key, 0.0) + model.leaf_values_[t]
    return splits


@pytest.mark.parametrize("n_bags", [1, 3])
def test_n_splits_counts_the_stumps_the_model_needs(few_splits_data, n_bags):
    X, y, _ = few_splits_data
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["b"] = pd.Categorical(X[:, 1].astype(int).astype(str))
    model = StumpForestGAMRegressor(
        n_stumps=30, max_iter=3, l2_reg=20.0, min_samples_leaf=5, n_bags=n_bags,
        random_state=0,
    ).fit(frame, y)
    splits = _compact_forest(model)
    assert model.n_splits_ == len(splits) < int(np.sum(model.features_ >= 0))
    # the stumps of one split summed into one stump: the same predictions
    pred = np.full(X.shape[0], model.intercept_)
    for (j, side, _), (a, c) in splits.items():
        # the categories "0".."3" of column b are coded 0..3, its values in X
        left = np.isin(X[:, j], list(side)) if isinstance(side, frozenset) else X[:, j] <= side
        pred += np.where(left, a, c)
    np.testing.assert_allclose(pred, model.predict(frame), rtol=0, atol=1e-10)


# the objective never increases
def _assert_monotone(history):
    h = np.asarray(history)
    assert np.all(h[1:] <= h[:-1] * (1 + 1e-9) + 1e-12), h


def test_objective_history_is_monotone_and_matches_the_model(reg_data, clf_data):
    X, y = reg_data
    lam = 1.0
    reg = StumpForestGAMRegressor(**{**FAST, "l2_reg": lam}).fit(X, y)
    _assert_monotone(reg.objective_history_)
    assert len(reg.objective_history_) == reg.n_iter_ + 1
    e = 0.5 * np.sum((y - reg.predict(X)) ** 2) + lam / 2 * np.sum(reg.leaf_values_**2)
    assert e == pytest.approx(reg.objective_history_[-1], rel=1e-9)

    X, y = clf_data
    for init in ("greedy", "random"):
        clf = StumpForestGAMClassifier(**{**FAST, "l2_reg": lam, "init": init}).fit(X, y)
        _assert_monotone(clf.objective_history_)
        F = clf.decision_function(X)
        penalty = lam * _hessian_units(y)
        e = np.sum(np.logaddexp(0, F) - y * F) + penalty / 2 * np.sum(clf.leaf_values_**2)
        assert e == pytest.approx(clf.objective_history_[-1], rel=1e-9)


def test_multiclass_objective_history_is_monotone():
    X, y, _ = make_additive_regression(450, random_state=3)
    y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    clf = StumpForestGAMClassifier(**{**FAST, "l2_reg": 1.0}).fit(X, y)
    _assert_monotone(clf.objective_history_)
    F = clf.decision_function(X)
    e = np.sum(logsumexp(F, axis=1) - F[np.arange(y.shape[0]), y])
    e += 0.5 * _hessian_units(y) * np.sum(clf.leaf_values_**2)
    assert e == pytest.approx(clf.objective_history_[-1], rel=1e-9)
    assert clf.score(X, y) > 0.7


# additivity of the per-feature contributions
def test_additivity_and_locality_of_contributions(reg_data, clf_data):
    X, y = reg_data
    model = StumpForestGAMRegressor(**FAST).fit(X, y)
    contrib = model.feature_contributions(X)
    np.testing.assert_allclose(
        model.predict(X), model.intercept_ + contrib.sum(axis=1), atol=1e-10
    )
    np.testing.assert_allclose(model.predict(X), _stump_sum(model, X), atol=1e-10)
    j = int(model.features_[0])
    X2 = X.copy()
    X2[:, j] = np.random.default_rng(0).permutation(X2[:, j])
    changed = (model.feature_contributions(X2) != contrib).any(axis=0)
    assert changed[f"x{j}"] and changed.sum() == 1

    X, y = clf_data
    clf = StumpForestGAMClassifier(**FAST).fit(X, y)
    np.testing.assert_allclose(
        clf.decision_function(X), clf.intercept_ + clf.feature_contributions(X).sum(axis=1),
        atol=1e-10,
    )
    np.testing.assert_allclose(clf.decision_function(X), _stump_sum(clf, X), atol=1e-10)


def test_shape_functions_reproduce_contributions(reg_data):
    X, y = reg_data
    model = StumpForestGAMRegressor(**FAST).fit(X, y)
    shapes = model.shape_functions()
    used = sorted(set(model.features_[model.features_ >= 0].tolist()))
    assert list(shapes) == [f"x{j}" for j in used]
    contrib = model.feature_contributions(X)
    for name, shape in shapes.items():
        thresholds, values = shape.thresholds, shape.scores
        assert shape.kind == "numeric"
        assert np.all(np.diff(thresholds) > 0) and values.shape == (thresholds.size + 1,)
        piece = np.searchsorted(thresholds, X[:, int(name[1:])])
        np.testing.assert_allclose(values[piece], contrib[name], atol=1e-12)
    unused = [f"x{j}" for j in range(X.shape[1]) if f"x{j}" not in shapes]
    assert np.all(contrib[unused] == 0)


# limits of the L2 penalty and of the target
def test_huge_l2_reg_gives_the_mean_and_constant_target_gives_zero_leaves(reg_data):
    X, y = reg_data
    model = StumpForestGAMRegressor(**{**FAST, "l2_reg": 1e12}).fit(X, y)
    np.testing.assert_allclose(model.predict(X), y.mean(), atol=1e-6)
    const = StumpForestGAMRegressor(**FAST).fit(X, np.full(y.shape[0], 2.5))
    np.testing.assert_allclose(const.leaf_values_, 0.0, atol=1e-12)
    assert const.intercept_ == pytest.approx(2.5, abs=1e-12)


# invariance to increasing feature transforms
def test_increasing_feature_transform_leaves_predictions_unchanged(reg_data):
    X, y = reg_data
    X_exp = X.copy()
    X_exp[:, 1] = np.exp(3 * X[:, 1])
    X_exp[:, 2] = X[:, 2] ** 3
    a = StumpForestGAMRegressor(**FAST).fit(X, y)
    b = StumpForestGAMRegressor(**FAST).fit(X_exp, y)
    np.testing.assert_array_equal(a.features_, b.features_)
    np.testing.assert_allclose(a.predict(X), b.predict(X_exp), atol=1e-10)
    # test rows that reuse training values sit on the same side of every threshold
    rng = np.random.default_rng(2)
    rows = rng.integers(0, X.shape[0], size=(200, X.shape[1]))
    X_test = X[rows, np.arange(X.shape[1])]
    X_test_exp = X_exp[rows, np.arange(X.shape[1])]
    np.testing.assert_allclose(a.predict(X_test), b.predict(X_test_exp), atol=1e-10)


# reproducibility
def test_same_seed_same_forest_and_different_seed_different_order(reg_data):
    X, y = reg_data
    a = StumpForestGAMRegressor(**FAST).fit(X, y)
    b = StumpForestGAMRegressor(**FAST).fit(X, y)
    np.testing.assert_array_equal(a.thresholds_, b.thresholds_)
    np.testing.assert_array_equal(a.leaf_values_, b.leaf_values_)
    assert a.objective_history_ == b.objective_history_


@pytest.mark.slow
def test_results_do_not_depend_on_the_number_of_threads(reg_data, clf_data, monkeypatch):
    monkeypatch.setattr(_optimizer, "PARALLEL_MIN_CELLS", 0)  # force the parallel kernels
    # small fits: on a loaded machine every parallel call waits for a free core
    params = {**FAST, "n_stumps": 5, "max_iter": 2}
    for Est, (X, y) in [(StumpForestGAMRegressor, reg_data), (StumpForestGAMClassifier, clf_data)]:
        one = Est(**params, n_jobs=1).fit(X, y)
        two = Est(**params, n_jobs=2).fit(X, y)
        np.testing.assert_array_equal(one.thresholds_, two.thresholds_)
        np.testing.assert_array_equal(one.leaf_values_, two.leaf_values_)
        assert one.objective_history_ == two.objective_history_


# the classifier
@pytest.mark.parametrize(
    "labels", [np.array([-1, 1]), np.array(["a", "b"]), np.array(["x", "y", "z"])]
)
def test_classifier_labels_and_probabilities(clf_data, labels):
    X, y01 = clf_data
    y = labels[np.arange(y01.shape[0]) % labels.shape[0]] if labels.size > 2 else labels[y01]
    clf = StumpForestGAMClassifier(**FAST).fit(X, y)
    np.testing.assert_array_equal(clf.classes_, np.sort(labels))
    proba = clf.predict_proba(X)
    assert proba.shape == (X.shape[0], labels.size)
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-12)
    assert set(clf.predict(X)) <= set(labels)
    if labels.size == 2:
        np.testing.assert_allclose(proba[:, 1], expit(clf.decision_function(X)), atol=1e-12)
        assert clf.score(X, y) > 0.65


def test_sample_weight_acts_as_repetition_when_bins_and_leaf_sizes_agree():
    rng = np.random.default_rng(4)
    X = rng.integers(0, 12, size=(80, 3)).astype(float)  # few distinct values: same bins
    y = X[:, 0] - 2 * (X[:, 1] > 5) + rng.normal(0, 0.3, 80)
    w = rng.integers(1, 4, size=80)
    params = dict(n_stumps=6, max_iter=3, min_samples_leaf=1, l2_reg=1.0, random_state=0)
    weighted = StumpForestGAMRegressor(**params).fit(X, y, sample_weight=w)
    repeated = StumpForestGAMRegressor(**params).fit(np.repeat(X, w, 0), np.repeat(y, w))
    np.testing.assert_array_equal(weighted.thresholds_, repeated.thresholds_)
    np.testing.assert_allclose(weighted.leaf_values_, repeated.leaf_values_, atol=1e-9)
    unweighted = StumpForestGAMRegressor(**params).fit(X, y)
    assert not np.allclose(unweighted.leaf_values_, weighted.leaf_values_)


def test_pandas_input_feature_names_and_column_order(reg_data):
    X, y = reg_data
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    model = StumpForestGAMRegressor(**FAST).fit(df, y)
    np.testing.assert_array_equal(model.feature_names_in_, df.columns)
    plain = StumpForestGAMRegressor(**FAST).fit(X, y)
    np.testing.assert_array_equal(model.predict(df), plain.predict(X))
    with pytest.raises(ValueError, match="feature names"):
        model.predict(df[df.columns[::-1]])


def test_min_samples_leaf_too_large_keeps_zero_stumps(reg_data):
    X, y = reg_data
    model = StumpForestGAMRegressor(**{**FAST, "min_samples_leaf": 400}).fit(X, y)
    assert np.all(model.features_ == -1) and np.all(np.isinf(model.thresholds_))
    np.testing.assert_allclose(model.predict(X), y.mean(), atol=1e-12)
    assert model.shape_functions() == {}


def test_verbose_prints_only_when_asked(reg_data, capsys):
    X, y = reg_data
    StumpForestGAMRegressor(**FAST).fit(X, y)
    assert capsys.readouterr().out == ""
    StumpForestGAMRegressor(**FAST, verbose=1).fit(X, y)
    assert "objective" in capsys.readouterr().out


def test_plot_shape_functions_draws_one_panel_per_used_feature(reg_data):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X, y = reg_data
    model = StumpForestGAMRegressor(**FAST).fit(X, y)
    fig = model.plot_shape_functions(ncols=2)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == len(model.shape_functions())
    assert [ax.get_title() for ax in visible] == list(model.shape_functions())
    plt.close(fig)
    with pytest.raises(ValueError, match="features must be feature names"):
        model.plot_shape_functions(features=[99])


def test_failed_leaf_solve_warns_and_keeps_finite_leaves(reg_data, monkeypatch):
    X, y = reg_data

    def broken(self, problem, seg, start, D=None):
        return np.array([np.nan]), np.full_like(start[1], np.nan)

    monkeypatch.setattr(_loss._SquaredLoss, "fit_leaves", broken)
    with pytest.warns(ConvergenceWarning, match="non-finite"):
        model = StumpForestGAMRegressor(**FAST).fit(X, y)
    assert np.all(np.isfinite(model.leaf_values_)) and np.isfinite(model.intercept_)
    _assert_monotone(model.objective_history_)


# bad input
@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_stumps": 0}, "n_stumps"),
        ({"max_iter": 0}, "max_iter"),
        ({"l2_reg": -1.0}, "l2_reg"),
        ({"min_samples_leaf": 0}, "min_samples_leaf"),
        ({"max_bins": 1}, "max_bins"),
        ({"init": "zeros"}, "init"),
        ({"l2_reg": np.inf}, "l2_reg"),
    ],
)
@pytest.mark.parametrize("Est", [StumpForestGAMRegressor, StumpForestGAMClassifier])
def test_bad_parameters_raise(clf_data, Est, params, match):
    X, y = clf_data
    with pytest.raises(ValueError, match=match):
        Est(**params).fit(X[:50], y[:50])


def test_smoothness_is_not_a_parameter():
    # the total-variation penalty is not implemented, so there is no parameter for it
    assert "smoothness" not in StumpForestGAMRegressor().get_params()
    with pytest.raises(TypeError, match="smoothness"):
        StumpForestGAMRegressor(smoothness=0.1)


@pytest.mark.parametrize("Est", [StumpForestGAMRegressor, StumpForestGAMClassifier])
def test_bad_data_raises(clf_data, Est):
    X, y = clf_data
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        Est(**FAST).fit(X_inf, y)
    y_nan = y.astype(float)
    y_nan[5] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        Est(**FAST).fit(X, y_nan)
    y_inf = y.astype(float)
    y_inf[5] = np.inf
    with pytest.raises(ValueError, match="y contains"):
        Est(**FAST).fit(X, y_inf)
    model = Est(**FAST).fit(X, y)
    with pytest.raises(ValueError, match="X contains infinity"):
        model.predict(X_inf)
    with pytest.raises(ValueError, match="sample_weight"):
        Est(**FAST).fit(X, y, sample_weight=np.r_[-1.0, np.ones(y.shape[0] - 1)])
    model = Est(**FAST).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :-1])
    X_before = X.copy()
    model.predict(X)
    np.testing.assert_array_equal(X, X_before)


def test_single_class_and_string_regression_targets_raise(clf_data):
    X, y = clf_data
    with pytest.raises(ValueError, match="only 1 class"):
        StumpForestGAMClassifier(**FAST).fit(X, np.zeros(y.shape[0]))
    with pytest.raises(ValueError, match="y must be numeric"):
        StumpForestGAMRegressor(**FAST).fit(X, y.astype(str))
    with pytest.raises(ValueError, match="y must be numeric"):
        StumpForestGAMRegressor(**FAST).fit(X, y.astype(str).astype(object))


def test_not_fitted_raises(reg_data):
    from sklearn.exceptions import NotFittedError

    X, _ = reg_data
    with pytest.raises(NotFittedError):
        StumpForestGAMRegressor().predict(X)
    with pytest.raises(NotFittedError):
        StumpForestGAMRegressor().shape_functions()


def test_no_warning_on_clean_fit(reg_data):
    X, y = reg_data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        StumpForestGAMRegressor(random_state=0).fit(X, y)  # stops early, no warning


# tabular data: missing values, categorical features, size, constraints
def _with_missing(X, share, seed):
    rng = np.random.default_rng(seed)
    X = X.copy()
    X[rng.uniform(size=X.shape) < share] = np.nan
    return X


def test_missing_values_fit_predict_and_match_the_stump_sum(reg_data):
    X, y = reg_data
    X_nan = _with_missing(X, 0.15, 0)
    X_before = X_nan.copy()
    model = StumpForestGAMRegressor(**FAST).fit(X_nan, y)
    np.testing.assert_array_equal(X_nan, X_before)  # input untouched
    pred = model.predict(X_nan)
    assert np.all(np.isfinite(pred))
    # the prediction from the public attributes: threshold, missing side, leaves
    out = np.full(X.shape[0], model.intercept_)
    for j, thr, miss_left, lv in zip(
        model.features_, model.thresholds_, model.missing_go_to_left_, model.leaf_values_
    ):
        if j >= 0:
            x = X_nan[:, j]
            left = np.where(np.isnan(x), miss_left, x <= thr)
            out += np.where(left, lv[0], lv[1])
    np.testing.assert_allclose(pred, out, atol=1e-10)
    np.testing.assert_allclose(
        pred, model.intercept_ + model.feature_contributions(X_nan).sum(axis=1), atol=1e-10
    )
    _assert_monotone(model.objective_history_)
    e = 0.5 * np.sum((y - pred) ** 2) + model.l2_reg / 2 * np.sum(model.leaf_values_**2)
    assert e == pytest.approx(model.objective_history_[-1], rel=1e-9)


def test_missing_side_is_learned_when_missingness_carries_the_signal():
    # y depends only on whether x0 is missing: one stump must split missing from present
    rng = np.random.default_rng(0)
    x = rng.uniform(size=400)
    missing = rng.uniform(size=400) < 0.3
    y = np.where(missing, 5.0, 0.0) + rng.normal(0, 0.1, 400)
    x[missing] = np.nan
    model = StumpForestGAMRegressor(
        n_stumps=1, max_iter=2, l2_reg=0.0, min_samples_leaf=5, random_state=0
    ).fit(x[:, None], y)
    assert model.features_[0] == 0 and np.isinf(model.thresholds_[0])
    side = 0 if model.missing_go_to_left_[0] else 1
    assert model.leaf_values_[0, side] + model.intercept_ == pytest.approx(5.0, abs=0.05)
    assert model.shape_functions()["x0"].missing_score + model.intercept_ == pytest.approx(
        5.0, abs=0.05
    )


def test_nan_at_predict_on_a_feature_without_nan_goes_to_the_larger_side(reg_data):
    X, y = reg_data
    model = StumpForestGAMRegressor(**FAST).fit(X, y)
    X_test = X[:5].copy()
    X_test[:, :] = np.nan
    out = np.full(5, model.intercept_)
    for t in np.flatnonzero(model.features_ >= 0):
        j = model.features_[t]
        n_left = np.sum(X[:, j] <= model.thresholds_[t])
        larger_left = n_left >= X.shape[0] - n_left
        assert model.missing_go_to_left_[t] == larger_left
        out += model.leaf_values_[t, 0 if larger_left else 1]
    np.testing.assert_allclose(model.predict(X_test), out, atol=1e-10)


def test_all_nan_column_is_ignored_with_a_warning(reg_data):
    X, y = reg_data
    X = X.copy()
    X[:, 2] = np.nan
    with pytest.warns(UserWarning, match="only missing values"):
        model = StumpForestGAMRegressor(**FAST).fit(X, y)
    assert 2 not in model.features_


def _categorical_frame(n, seed):
    rng = np.random.default_rng(seed)
    levels = np.array(["a", "b", "c", "d", "e", "f"])
    effect = {"a": 2.0, "b": -1.0, "c": 0.5, "d": -1.0, "e": 2.0, "f": 0.0}
    cat = rng.choice(levels, n)
    x = rng.uniform(-1, 1, n)
    y = np.array([effect[c] for c in cat]) + np.sin(3 * x) + rng.normal(0, 0.3, n)
    frame = pd.DataFrame({"color": pd.Categorical(cat), "x": x})
    return frame, y, effect


def test_categorical_from_dtype_learns_the_category_effects():
    frame, y, effect = _categorical_frame(3000, 0)
    model = StumpForestGAMRegressor(random_state=0).fit(frame, y)
    np.testing.assert_array_equal(model.is_categorical_, [True, False])
    shape = model.shape_functions()["color"]
    assert shape.kind == "categorical" and list(shape.categories) == list("abcdef")
    truth = np.array([effect[c] for c in "abcdef"])
    centred = shape.scores - shape.scores.mean()
    np.testing.assert_allclose(centred, truth - truth.mean(), atol=0.15)
    # the stumps on it split category sets; unseen categories take the missing score
    cat_stumps = np.flatnonzero(model.features_ == 0)
    assert all(model.left_categories_[t] is not None for t in cat_stumps)
    test = frame.iloc[:3].copy()
    test["color"] = pd.Categorical(["zzz", None, "a"])
    contrib = model.feature_contributions(test)["color"]
    assert contrib.iloc[0] == pytest.approx(shape.missing_score)
    assert contrib.iloc[1] == pytest.approx(shape.missing_score)
    assert contrib.iloc[2] == pytest.approx(shape.scores[0])


def test_categorical_features_by_index_name_and_mask_agree():
    frame, y, _ = _categorical_frame(800, 1)
    codes = frame.assign(color=frame["color"].cat.codes.astype(float))
    ref = StumpForestGAMRegressor(**FAST).fit(frame, y)
    for which in ([0], ["color"], [True, False]):
        model = StumpForestGAMRegressor(**FAST, categorical_features=which).fit(codes, y)
        np.testing.assert_allclose(model.predict(codes), ref.predict(frame), atol=1e-10)
    X = codes.to_numpy()
    model = StumpForestGAMRegressor(**FAST, categorical_features=[0]).fit(X, y)
    np.testing.assert_allclose(model.predict(X), ref.predict(frame), atol=1e-10)
    # None: the codes are numbers, thresholds instead of sets
    numeric = StumpForestGAMRegressor(**FAST, categorical_features=None).fit(codes, y)
    assert not numeric.is_categorical_.any()


def test_categorical_bad_input_raises():
    frame, y, _ = _categorical_frame(300, 2)
    with pytest.raises(ValueError, match="'color' has 6 categories, more than max_bins=4"):
        StumpForestGAMRegressor(**FAST, max_bins=4).fit(frame, y)
    with pytest.raises(ValueError, match="names a column"):
        StumpForestGAMRegressor(**FAST, categorical_features=["size"]).fit(frame, y)
    with pytest.raises(ValueError, match="indices must be in"):
        StumpForestGAMRegressor(**FAST, categorical_features=[5]).fit(frame, y)
    with pytest.raises(ValueError, match="cannot constrain categorical"):
        StumpForestGAMRegressor(**FAST, monotonic_cst=[1, 0]).fit(frame, y)
    frame_before = frame.copy()
    StumpForestGAMRegressor(**FAST).fit(frame, y).predict(frame)
    pd.testing.assert_frame_equal(frame, frame_before)


def _path_sizes(n_rounds):
    """Forest size after each round of the size path (round 0: the empty forest)."""
    sizes = [0]
    for _ in range(n_rounds):
        sizes.append(_optimizer.next_size(sizes[-1]))
    return sizes


class _StumpStepCounter:
    """Counts the stump steps (each one exact search over every feature and threshold)."""

    def __init__(self, monkeypatch):
        self.n = 0
        step = _optimizer.StumpForestProblem.stump_step

        def counted(problem, t):
            self.n += 1
            return step(problem, t)

        monkeypatch.setattr(_optimizer.StumpForestProblem, "stump_step", counted)


def test_auto_size_on_one_split_stops_early_and_keeps_the_best_round(reg_data):
    X, y = reg_data
    model = StumpForestGAMRegressor(random_state=0).fit(X, y)
    assert model.do_early_stopping_
    scores = model.validation_score_
    best = int(np.argmax(scores))
    search = len(scores) - 1  # rounds of the size path
    sizes = _path_sizes(search)
    assert model.n_stumps_ == sizes[best]
    # the path ends at the first round that is both patience rounds past the best one
    # and at least twice its size
    patience = _optimizer.path_patience(model.n_iter_no_change)
    overshoot = _optimizer.PATH_OVERSHOOT * sizes[best] + _optimizer.MIN_GROWTH
    assert search - best >= patience and sizes[search] >= overshoot
    assert search - 1 - best < patience or sizes[search - 1] < overshoot
    # then the forest of that size is fitted on all rows until the objective settles
    assert model.n_iter_ == search + len(model.objective_history_) - 1
    _assert_monotone(model.objective_history_)
    pred = model.predict(X)
    e = 0.5 * np.sum((y - pred) ** 2) + model.l2_reg / 2 * np.sum(model.leaf_values_**2)
    assert e == pytest.approx(model.objective_history_[-1], rel=1e-9)
    # same seed, same model
    again = StumpForestGAMRegressor(random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.leaf_values_, model.leaf_values_)


def test_auto_size_search_costs_stump_steps_linear_in_the_size(reg_data, monkeypatch):
    """The size path visits each stump once per round (a warm-started sweep) and grows the
    forest geometrically, so its stump steps add up to a few times the largest size, not
    to its square (as re-sweeping a forest grown by a constant number of stumps does)."""
    X, y, _ = make_additive_regression(4000, random_state=2)
    counter = _StumpStepCounter(monkeypatch)
    model = StumpForestGAMRegressor(random_state=0).fit(X, y)
    search = len(model.validation_score_) - 1
    sizes = _path_sizes(search)
    final_sweeps = model.n_iter_ - search
    # every stump step, counted: the new (greedy) stumps and one sweep per round, then the
    # sweeps of the final fit, warm-started from the path's best forest
    path_steps = sum(
        (sizes[k] - sizes[k - 1]) + _optimizer.PATH_SWEEPS * sizes[k]
        for k in range(1, search + 1)
    )
    assert counter.n == path_steps + final_sweeps * model.n_stumps_
    growth = _optimizer.GROWTH
    assert path_steps <= (1 + _optimizer.PATH_SWEEPS) * growth / (growth - 1) * sizes[-1]
    assert sizes[-1] > 50  # large enough for the bound to say something


class _PathCounter:
    """Records the training and validation rows of each size path (``n_stumps="auto"``)
    and the size of each fixed-size fit."""

    def __init__(self, monkeypatch):
        from sklearn_icml.gam import _stump_forest

        self.paths, self.fixed = [], []
        fit = _stump_forest.fit_stump_forest

        def counted(rows, *args, n_stumps, validation=None, **kwargs):
            if n_stumps == "auto":
                self.paths.append((rows.shape[1], validation.shape[1]))
            else:
                self.fixed.append(n_stumps)
            return fit(rows, *args, n_stumps=n_stumps, validation=validation, **kwargs)

        monkeypatch.setattr(_stump_forest, "fit_stump_forest", counted)


@pytest.mark.parametrize("n_samples", [60, 600, 4000])
def test_auto_size_runs_one_path_on_one_validation_split_at_every_size(n_samples, monkeypatch):
    """Small tables too: one path on ``1 - validation_fraction`` of the rows, scored on the
    rest, then one fit of the chosen size on all rows (no path per fold)."""
    X, y, _ = make_additive_regression(n_samples, random_state=0)
    paths = _PathCounter(monkeypatch)
    model = StumpForestGAMRegressor(random_state=0).fit(X, y)
    n_val = int(np.ceil(model.validation_fraction * n_samples))
    assert paths.paths == [(n_samples - n_val, n_val)]
    assert paths.fixed == [model.n_stumps_]
    y_classes = (y > np.median(y)).astype(int)
    paths = _PathCounter(monkeypatch)
    clf = StumpForestGAMClassifier(random_state=0).fit(X, y_classes)
    assert paths.paths == [(n_samples - n_val, n_val)]
    assert paths.fixed == [clf.n_stumps_]


def test_convergence_warning_when_max_iter_ends_the_fit(reg_data, capsys):
    X, y = reg_data
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        StumpForestGAMRegressor(max_iter=2, random_state=0, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert "sweep 2" in out and "validation loss" in out and " s" in out
    with pytest.warns(ConvergenceWarning, match="objective was still falling"):
        StumpForestGAMRegressor(n_stumps=10, max_iter=1, random_state=0).fit(X, y)


def test_term_importances_are_mean_absolute_centred_contributions(reg_data):
    X, y = reg_data
    model = StumpForestGAMRegressor(**FAST).fit(X, y)
    contrib = model.feature_contributions(X)
    expected = (contrib - contrib.mean(axis=0)).abs().mean(axis=0)
    importances = model.term_importances()
    pd.testing.assert_series_equal(
        importances, expected, atol=1e-12, check_names=False, check_series_type=False
    )
    assert importances.iloc[4:].sum() < importances.iloc[:4].sum() / 10


@pytest.mark.parametrize("seed", range(3))
def test_monotone_constraints_hold_on_random_data(seed):
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(400, 3))
    X[rng.uniform(size=X.shape) < 0.1] = np.nan
    y = np.sin(4 * np.nan_to_num(X[:, 0])) + rng.normal(0, 1.0, 400)  # not monotone
    cst = [1, -1, 0]
    for Est, target in [(StumpForestGAMRegressor, y), (StumpForestGAMClassifier, y > 0)]:
        model = Est(n_stumps=15, max_iter=4, min_samples_leaf=5, monotonic_cst=cst,
                    random_state=seed).fit(X, target)
        shapes = model.shape_functions()
        for j, sign in enumerate(cst):
            if sign and f"x{j}" in shapes:
                scores = shapes[f"x{j}"].scores
                assert np.all(sign * np.diff(scores) >= 0), scores
        for t in np.flatnonzero(model.features_ >= 0):
            sign = cst[model.features_[t]]
            assert sign * (model.leaf_values_[t, 1] - model.leaf_values_[t, 0]) >= 0
        grid = np.linspace(-1, 1, 101)
        for j, sign in enumerate(cst):
            if sign:
                Z = np.zeros((101, 3))
                Z[:, j] = grid
                f = model.feature_contributions(Z)[f"x{j}"]
                assert np.all(sign * np.diff(f) >= 0)
        _assert_monotone(model.objective_history_)


def test_monotone_leaf_step_is_the_constrained_optimum(reg_data):
    cp = pytest.importorskip("cvxpy")
    X, y = reg_data
    model = StumpForestGAMRegressor(
        n_stumps=8, max_iter=3, l2_reg=1.0, min_samples_leaf=10,
        monotonic_cst=[0, 1, 0, 0, 0, 0], random_state=0,
    ).fit(X, y)
    B, used = _design(model, X)
    v, b = cp.Variable(B.shape[1]), cp.Variable()
    cons = [
        v[2 * i + 1] - v[2 * i] >= 0
        for i, t in enumerate(used) if model.features_[t] == 1
    ]
    assert cons  # the constraint is active on some stumps
    problem = cp.Problem(
        cp.Minimize(0.5 * cp.sum_squares(y - B @ v - b) + 0.5 * cp.sum_squares(v)), cons
    )
    problem.solve()
    got = 0.5 * np.sum((y - model.predict(X)) ** 2) + 0.5 * np.sum(model.leaf_values_**2)
    assert got == pytest.approx(problem.value, rel=1e-6)


def test_monotonic_cst_bad_input_raises(clf_data):
    X, y = clf_data
    with pytest.raises(ValueError, match="one entry"):
        StumpForestGAMRegressor(**FAST, monotonic_cst=[1, 0]).fit(X, y)
    with pytest.raises(ValueError, match="-1, 0 or 1"):
        StumpForestGAMRegressor(**FAST, monotonic_cst=[2, 0, 0, 0, 0, 0]).fit(X, y)
    y3 = np.arange(X.shape[0]) % 3
    with pytest.raises(ValueError, match="multiclass"):
        StumpForestGAMClassifier(**FAST, monotonic_cst=[1, 0, 0, 0, 0, 0]).fit(X, y3)


def test_verbose_size_search_and_refit_are_one_run_on_one_clock(reg_data, capsys, monkeypatch):
    import itertools

    from sklearn_icml.utils import _progress

    ticks = itertools.count()
    monkeypatch.setattr(_progress, "_clock", lambda: float(next(ticks)))  # 1 s per reading
    X, y = reg_data
    StumpForestGAMRegressor(
        n_stumps=12, max_iter=50, min_samples_leaf=10, early_stopping=True,
        n_iter_no_change=1, random_state=0, verbose=1,
    ).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert any("validation loss" in line for line in lines)
    refit = [i for i, line in enumerate(lines) if "refit on all rows" in line]
    assert refit and refit[0] > 0  # the search's lines, then the refit's
    seconds = [float(line.rsplit(", ", 1)[1].removesuffix(" s")) for line in lines]
    # one clock: the refit goes on counting from where the search stopped
    assert seconds == sorted(seconds) and len(set(seconds)) == len(seconds)
    assert all(line.startswith("[StumpForestGAMRegressor] ") for line in lines)


@pytest.mark.parametrize("width", [0, 1, 7, 63, 64, 65, 130])
def test_unique_rows_is_numpys_unique_over_rows(width):
    # the segments of a feature are the distinct left/right patterns of its bins; the
    # packed comparison must give numpy's patterns, in numpy's order, and its inverse
    rng = np.random.default_rng(width)
    for n_rows, p in ((1, 0.5), (40, 0.5), (300, 0.9), (300, 0.02)):
        M = rng.random((n_rows, width)) < p
        M[n_rows // 2 :] = M[: n_rows - n_rows // 2]  # repeated rows
        expected, expected_inverse = np.unique(M, axis=0, return_inverse=True)
        patterns, inverse = _optimizer._unique_rows(M)
        np.testing.assert_array_equal(patterns, expected)
        np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))


def test_segments_are_reused_while_the_splits_are_unchanged(monkeypatch):
    # the leaf step and the validation pass of a sweep see the same splits: their segment
    # table is built once (work counted, not timed), and the fit is the same without reuse
    X, y, _ = make_additive_regression(400, 4, random_state=0)
    original_rows = _optimizer._unique_rows
    original_segments = _optimizer.StumpForestProblem.segments

    def fit(reuse):
        calls = []

        def counted(M):
            calls.append(M.shape)
            return original_rows(M)

        def segments(problem):
            if not reuse:
                problem._segments_cache = None
            return original_segments(problem)

        monkeypatch.setattr(_optimizer, "_unique_rows", counted)
        monkeypatch.setattr(_optimizer.StumpForestProblem, "segments", segments)
        model = StumpForestGAMRegressor(n_stumps=12, max_iter=3, random_state=0).fit(X, y)
        return model, len(calls)

    reused, n_reused = fit(True)
    rebuilt, n_rebuilt = fit(False)
    assert 0 < n_reused < n_rebuilt
    np.testing.assert_array_equal(reused.predict(X), rebuilt.predict(X))


class _BagRecorder:
    """Records the forest (features, left, leaves, intercept) and the training-row count
    of every fit the estimator runs."""

    def __init__(self, monkeypatch):
        from sklearn_icml.gam import _stump_forest

        self.forests, self.n_rows = [], []
        fit = _stump_forest.fit_stump_forest

        def recorded(rows, *args, **kwargs):
            problem, info = fit(rows, *args, **kwargs)
            self.forests.append((problem.features.copy(), problem.left.copy(),
                                 problem.leaves.copy(), problem.intercept.copy()))
            self.n_rows.append(rows.shape[1])
            return problem, info

        monkeypatch.setattr(_stump_forest, "fit_stump_forest", recorded)

    def each_forest(self, fitted, method, X):
        """``fitted.method(X)`` with each recorded forest in turn in place of its own."""
        out = []
        for features, left, leaves, intercept in self.forests:
            fitted._store_forest(
                Bunch(features=features, left=left, leaves=leaves, intercept=intercept),
                fitted._loss, fitted._bin_weight,
            )
            out.append(getattr(fitted, method)(X))
        return out


@pytest.mark.parametrize("early_stopping", [True, False])
def test_bags_average_forests_fitted_on_their_own_rows(reg_data, monkeypatch, early_stopping):
    """``n_bags`` forests, each on ``1 - validation_fraction`` of the rows (and no refit on
    all rows); the model predicts the mean of their predictions."""
    X, y = reg_data
    single = StumpForestGAMRegressor(**FAST).fit(X, y)  # fitted, to hold one forest each
    recorder = _BagRecorder(monkeypatch)
    model = StumpForestGAMRegressor(
        n_bags=3, early_stopping=early_stopping, validation_fraction=0.2, **FAST
    ).fit(X, y)
    assert len(recorder.forests) == 3
    assert recorder.n_rows == [480] * 3
    predictions = recorder.each_forest(single, "predict", X)
    assert model.n_stumps_ == 3 * FAST["n_stumps"]
    np.testing.assert_allclose(model.predict(X), np.mean(predictions, axis=0), atol=1e-12)
    # three bags of other rows are three other forests
    assert not np.allclose(predictions[0], predictions[1])
    np.testing.assert_allclose(_stump_sum(model, X), model.predict(X), atol=1e-12)
    again = StumpForestGAMRegressor(
        n_bags=3, early_stopping=early_stopping, validation_fraction=0.2, **FAST
    ).fit(X, y)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))


def test_bags_lower_the_error_of_a_smooth_function():
    """The average of forests on other rows has finer steps: on a sine and a parabola it
    follows the noiseless function more closely than one forest."""
    X, y, f = make_additive_regression(4000, random_state=3)
    one = StumpForestGAMRegressor(random_state=0).fit(X, y)
    bags = StumpForestGAMRegressor(n_bags=6, random_state=0).fit(X, y)

    def error(model):
        return np.sqrt(np.mean((model.predict(X) - f) ** 2))

    assert error(bags) < error(one)
    shapes_one, shapes_bags = one.shape_functions(), bags.shape_functions()
    assert shapes_bags["x1"].thresholds.size > shapes_one["x1"].thresholds.size


def test_bags_of_a_classifier_average_the_logits(clf_data, monkeypatch):
    X, y = clf_data
    single = StumpForestGAMClassifier(**FAST).fit(X, y)  # fitted, to hold one forest each
    recorder = _BagRecorder(monkeypatch)
    model = StumpForestGAMClassifier(n_bags=2, **FAST).fit(X, y)
    assert len(recorder.forests) == 2
    raw = recorder.each_forest(single, "decision_function", X)
    np.testing.assert_allclose(model.decision_function(X), np.mean(raw, axis=0), atol=1e-12)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(np.isfinite(proba))


def test_bags_refuse_dask_input(reg_data):
    dask_array = pytest.importorskip("dask.array")
    X, y = reg_data
    model = StumpForestGAMRegressor(n_bags=2, **FAST)
    with pytest.raises(ValueError, match="n_bags > 1 is for rows in memory"):
        model.fit(dask_array.from_array(X, chunks=200), dask_array.from_array(y, chunks=200))
