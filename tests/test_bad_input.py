"""Bad input never gives silent NaN or a cryptic error.

Every estimator that ``all_estimators(include_neural=True)`` lists (built with the common
test's fast settings) and the main functions get the inputs a fuzzer found trouble with:
strings, complex numbers, finite values too large for the model's float32 (``1e300``),
NaN, and random dtypes, memory orders and read-only arrays. Each must give a
ValueError/TypeError whose message names the argument, or finite output of the right
shape; the caller's arrays are never modified, and the same seed gives the same result.
"""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.utils import get_tags

from sklearn_icml.utils.discovery import all_estimators

from ._estimator_params import TEST_PARAMS

ALL = all_estimators(include_neural=True)
TABULAR = [(name, cls) for name, cls in ALL if get_tags(cls(**TEST_PARAMS.get(name, {})))
           .input_tags.two_d_array]

def _cases(estimators=TABULAR):
    return [pytest.param(name, cls, id=name) for name, cls in estimators]


# --------------------------------------------------------------------------- data per estimator


def _data(name, est, n=40, seed=0):
    """``(X, y, fit_kwargs)``: small valid training data for estimator ``name``."""
    rng = np.random.RandomState(seed)
    half = np.r_[np.zeros(n // 2), np.ones(n - n // 2)].astype(np.int64)
    if name == "DPStratifiedSampler":
        return np.arange(n) % 3, None
    if name == "GPDTailQuantile":
        return rng.exponential(size=n), None
    if name in ("DWMCharLM", "DWMCausalLM"):
        return rng.randint(0, 64, size=(n, 6)), None
    if name == "StreamingParityRNNClassifier":
        X = rng.randint(0, 2, size=(n, 6))
        return X, X.sum(axis=1) % 2
    if name == "ScanOrderSerializer":
        return rng.uniform(1.0, 10.0, size=(n, 3)) * rng.choice([-1, 1], size=(n, 3)), None
    X = rng.randn(n, 3)
    if name == "CellFlux":
        return X + half[:, None], half  # label 0 marks the controls
    if name == "CAPASimilarity" or is_classifier(est):
        return X + half[:, None], half
    if is_regressor(est):
        return X, X @ [1.0, -2.0, 0.5] + 0.1 * rng.randn(n)
    return X, None


def _estimator(cls, name):
    est = cls(**TEST_PARAMS.get(name, {}))
    if "random_state" in est.get_params() and est.get_params()["random_state"] is None:
        est.set_params(random_state=0)
    return est


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence and small-data warnings: not the point
        return est.fit(X, y) if y is not None else est.fit(X)


def _predict_input(name, X, y):
    """The part of the training data an estimator predicts on (CellFlux: its controls)."""
    return X[y == 0] if name == "CellFlux" else X


def _outputs(est, name, X, y):
    """What the fitted estimator gives on ``X`` (as a float array)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "DPStratifiedSampler":
            return np.r_[est.sample_sizes_, est.noise_scales_].astype(np.float64)
        if name == "GPDTailQuantile":
            return np.atleast_1d(np.asarray(est.predict(), dtype=np.float64))
        if name == "CAPASimilarity":
            return est.similarity(X, y)
        if name in ("DWMCharLM", "DWMCausalLM"):
            return est.score_samples(X)
        if hasattr(est, "predict"):
            return np.asarray(est.predict(_predict_input(name, X, y)), dtype=np.float64)
        return np.asarray(est.transform(X), dtype=np.float64)


def _n_rows(name, X, y):
    return _predict_input(name, X, y).shape[0]


def _check_clean_error(exc, argument="X"):
    """A ValueError/TypeError naming ``argument``, not a numpy or torch internal message."""
    message = str(exc)
    assert isinstance(exc, ValueError | TypeError), repr(exc)
    assert re.search(rf"(?<![\w.]){re.escape(argument)}(?![\w])", message), message
    for cryptic in ("could not convert string to float", "setting an array element",
                    "diverged", "not normalizable"):
        assert cryptic not in message, message


def _finite_or_clean_error(call, argument="X"):
    """Run ``call``; return its output, or None after checking its error is clean."""
    try:
        out = call()
    except (ValueError, TypeError) as exc:
        _check_clean_error(exc, argument)
        return None
    out = np.asarray(out, dtype=np.float64)
    assert np.all(np.isfinite(out)), f"non-finite output: {out!r}"
    return out


def _with(X, index, value, dtype=object):
    bad = np.array(X, dtype=dtype, copy=True)
    bad[(0,) * bad.ndim if index is None else index] = value
    return bad


# --------------------------------------------------------------------------- the cases


def test_tabular_estimators_are_found():
    names = {name for name, _ in TABULAR}
    assert {"CellFlux", "FlatLoRAClassifier", "DPSGDClassifier", "ScanOrderSerializer"} <= names


@pytest.mark.parametrize(("name", "cls"), _cases())
def test_strings_in_X_name_X(name, cls):
    est = _estimator(cls, name)
    X, y = _data(name, est)
    # stratum labels may be strings; one string among numbers in a column may not
    bad = _with(X, None, "a")
    with pytest.raises((ValueError, TypeError)) as info:
        _fit(est, bad, y)
    _check_clean_error(info.value)


@pytest.mark.parametrize(("name", "cls"), _cases())
def test_complex_X_is_refused(name, cls):
    est = _estimator(cls, name)
    X, y = _data(name, est)
    with pytest.raises((ValueError, TypeError)) as info:
        _fit(est, np.asarray(X) + 1j, y)
    _check_clean_error(info.value)


@pytest.mark.parametrize(("name", "cls"), _cases())
def test_huge_finite_values_at_fit(name, cls):
    """1e300 passes a finiteness check; it must not become NaN in float32 or in x * x."""
    est = _estimator(cls, name)
    X, y = _data(name, est)
    bad = _with(X, None, 1e300, dtype=np.float64)
    try:
        _fit(est, bad, y)
    except (ValueError, TypeError) as exc:
        _check_clean_error(exc)
        return
    out = _outputs(est, name, bad, y)
    assert np.all(np.isfinite(out)), f"{name} gave non-finite output after fitting on 1e300"


@pytest.mark.parametrize(("name", "cls"), _cases())
def test_huge_finite_values_at_predict(name, cls):
    est = _estimator(cls, name)
    X, y = _data(name, est)
    if name in ("DPStratifiedSampler", "GPDTailQuantile"):
        pytest.skip("no prediction on new rows")
    _fit(est, X, y)
    X_pred = _predict_input(name, np.asarray(X, dtype=np.float64), y).copy()
    X_pred[0, 0] = 1e300
    n = X_pred.shape[0]
    method = "transform" if not hasattr(est, "predict") else "predict"
    if name == "CAPASimilarity":
        out = _finite_or_clean_error(lambda: est.similarity(X_pred, y))
    elif name in ("DWMCharLM", "DWMCausalLM"):
        out = _finite_or_clean_error(lambda: est.score_samples(X_pred))
    else:
        argument = "X_control" if name == "CellFlux" else "X"
        out = _finite_or_clean_error(lambda: getattr(est, method)(X_pred), argument)
        if out is not None:
            assert out.shape[0] == n
    if out is not None:
        assert np.all(np.isfinite(out))


@pytest.mark.parametrize(("name", "cls"), _cases())
def test_nan_is_refused_or_handled_as_the_tags_say(name, cls):
    est = _estimator(cls, name)
    X, y = _data(name, est)
    bad = _with(X, None, np.nan, dtype=np.float64)
    if get_tags(est).input_tags.allow_nan:
        _fit(est, bad, y)
        assert np.all(np.isfinite(_outputs(est, name, bad, y)))
    else:
        with pytest.raises(ValueError, match="NaN"):
            _fit(est, bad, y)


@pytest.mark.parametrize(("name", "cls"), _cases())
def test_same_seed_same_result_and_input_unchanged(name, cls):
    est = _estimator(cls, name)
    X, y = _data(name, est)
    X_copy = np.array(X, copy=True)
    y_copy = None if y is None else np.array(y, copy=True)
    first = _outputs(_fit(clone(est), X, y), name, X, y)
    second = _outputs(_fit(clone(est), X, y), name, X, y)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(X, X_copy)
    if y is not None:
        np.testing.assert_array_equal(y, y_copy)
    assert np.all(np.isfinite(first))


_LAYOUTS = st.tuples(
    st.sampled_from([np.float64, np.float32, np.int64]),
    st.sampled_from(["C", "F"]),
    st.booleans(),  # read-only
    st.integers(min_value=12, max_value=30),  # rows
)


@pytest.mark.parametrize(("name", "cls"), _cases())
@settings(max_examples=2, deadline=None, derandomize=True)
@given(layout=_LAYOUTS)
def test_dtypes_orders_and_read_only_arrays(name, cls, layout):
    """Any dtype, memory order and read-only flag: finite output of the right shape, or a
    clean error; the array is never written to."""
    dtype, order, read_only, n = layout
    est = _estimator(cls, name)
    X, y = _data(name, est, n=n)
    if name == "CellFlux" or is_classifier(est) or name == "CAPASimilarity":
        X = np.asarray(X, dtype=np.float64) * 3  # classes stay apart after an int cast
    X = np.array(X, dtype=dtype, order=order)  # (the scan points keep |x| >= 1 as ints)
    X.setflags(write=not read_only)
    X_copy = X.copy()

    def fit_and_predict():
        _fit(est, X, y)
        return _outputs(est, name, X, y)

    out = _finite_or_clean_error(fit_and_predict)
    if out is not None and name not in ("DPStratifiedSampler", "GPDTailQuantile",
                                        "CAPASimilarity"):
        assert out.shape[0] == _n_rows(name, X, y)
    np.testing.assert_array_equal(X, X_copy)


# --------------------------------------------------------------------------- pandas


def test_categorical_column_names_the_column():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("torch")
    from sklearn_icml.weighting import DWMClassifier

    X = pd.DataFrame({"size": np.arange(40.0), "colour": pd.Categorical(["red", "blue"] * 20)})
    y = np.arange(40) % 2
    est = DWMClassifier(**TEST_PARAMS["DWMClassifier"])
    with pytest.raises(ValueError, match="column 'colour'.*OneHotEncoder") as info:
        est.fit(X, y)
    _check_clean_error(info.value)
    # numbers stored as a categorical column are numbers
    X["colour"] = pd.Categorical([1.0, 2.0] * 20)
    assert est.fit(X, y).predict(X).shape == (40,)


def test_lwi_fits_a_dataframe_without_warnings():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("torch")
    from sklearn_icml.continual import LwIClassifier

    X, y = _data("LwIClassifier", LwIClassifier())
    X = pd.DataFrame(X, columns=["a", "b", "c"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LwIClassifier(**TEST_PARAMS["LwIClassifier"]).fit(X, y).predict(X)


def test_ptib_fits_one_2d_view_without_warnings():
    from sklearn_icml.cluster import PTIBClustering

    X = np.random.RandomState(0).randn(40, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PTIBClustering(n_clusters=2, **TEST_PARAMS["PTIBClustering"]).fit(X)


# --------------------------------------------------------------------------- entry points


def test_capa_refuses_complex_input():
    from sklearn_icml.metrics import capa_matrix, capa_score

    p = np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4]])
    y = [0, 1, 0]
    for args, argument in [
        ((y, p + 0j, p), "proba_a"),
        ((y, p, p * (1 + 1j)), "proba_b"),
        ((np.array(y) + 1j, p, p), "y_true"),
    ]:
        with pytest.raises(TypeError, match="complex") as info:
            capa_score(*args)
        _check_clean_error(info.value, argument)
    with pytest.raises(TypeError, match="complex") as info:
        capa_matrix(y, [p, p + 1j])
    _check_clean_error(info.value, "probas[1]")
    with pytest.raises(TypeError, match="complex") as info:
        capa_score(y, np.array([0, 1 + 1j, 0]), np.array([0, 1, 1]), n_options=2,
                   discrete=True)
    _check_clean_error(info.value, "proba_a")


def test_capa_similarity_names_the_estimator_with_non_finite_probabilities():
    from sklearn_icml.metrics import CAPASimilarity

    X, y = _data("CAPASimilarity", None)
    bad = _with(X, None, 1e300, dtype=np.float64)
    with pytest.raises(ValueError, match="estimator 'nb'.*magnitude 1e\\+300"):
        CAPASimilarity(**TEST_PARAMS["CAPASimilarity"]).fit(bad, y)


@pytest.mark.parametrize(
    "orders",
    [["a", "b"], [[2, 3], [4]], [sp.csr_matrix(np.ones((1, 2)))], [2 + 1j, 3],
     np.array([2.0, 3.0]) * (1 + 0j)],
    ids=["strings", "ragged", "sparse-in-list", "complex-list", "complex-array"],
)
def test_partition_accountant_orders(orders):
    from sklearn_icml.privacy import PartitionRDPAccountant

    with pytest.raises(TypeError) as info:
        PartitionRDPAccountant(orders=orders).compose_balanced_iterations(1.0, 10, 2)
    _check_clean_error(info.value, "orders")


@pytest.mark.parametrize("method", ["efficient", "exact"])
def test_partition_accountant_huge_noise_gives_zero_privacy_loss(method):
    from sklearn_icml.privacy import PartitionRDPAccountant

    selected = 5 if method == "efficient" else 1
    acc = PartitionRDPAccountant().compose_balanced_iterations(1e300, 50, selected, method=method)
    acc = acc.compose_model_split(1e300, 5).compose_gaussian(1e300)
    eps = acc.get_epsilon(1e-5)
    assert np.isfinite(eps) and 0 <= eps < 1e-3
    # and the bound still decreases with the noise up to there
    small = PartitionRDPAccountant().compose_balanced_iterations(1e3, 50, selected, method=method)
    assert small.get_epsilon(1e-5) >= eps


def test_dp_stratified_sampler_defaults_fit():
    from sklearn_icml.privacy import DPStratifiedSampler

    strata = np.repeat(["north", "south", "west"], [300, 500, 200])
    s = DPStratifiedSampler().fit(strata)
    assert s.sample_sizes_.sum() == 100
    np.testing.assert_array_equal(s.stratum_stds_, [0.5, 0.5, 0.5])  # (1 - 0) / 2
    assert np.isfinite(s.expected_variance_)
    with pytest.raises(TypeError, match="mixes types in one column") as info:
        DPStratifiedSampler().fit(np.array([0.0] * 150 + ["a"], dtype=object))
    _check_clean_error(info.value)


def test_clbai_tied_best_arms_and_too_large_eta():
    from sklearn_icml.bandits import BAICl, ClBAI, ClusteredBanditEnv, NaiveBAI, best_arm_accuracy

    tied = ClusteredBanditEnv(means=[[0.9, 0.9, 0.1], [0.1, 0.2, 0.9]],
                              assignment=[0, 1, 1, 0], random_state=0)
    for algo in (ClBAI(eta=0.3), BAICl(n_clusters=2, eta=0.3, random_state=0), NaiveBAI()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the environment warns about the tie too
            with pytest.raises(ValueError, match="tied best arms") as info:
                algo.run(tied)
        _check_clean_error(info.value, "env")
    env = ClusteredBanditEnv(means=[[0.9, 0.1], [0.1, 0.9]], assignment=[0, 1, 1, 0],
                             random_state=0)
    with pytest.raises(ValueError, match="separability margin") as info:
        ClBAI(eta=5.0).run(env)
    _check_clean_error(info.value, "eta")
    assert best_arm_accuracy(ClBAI(eta=float(env.eta_)).run(env.reset()), env) == 1.0


def test_scan_order_serializer_huge_points_and_set_output():
    pd = pytest.importorskip("pandas")
    from sklearn_icml.compression import ScanOrderSerializer

    X, _ = _data("ScanOrderSerializer", None)
    X[0] = [1e300, -1e300, 1e300]  # x * x overflows from about 1e154
    ser = ScanOrderSerializer(n_lasers=8, n_azimuth=64)
    out = ser.fit(X).transform(X)
    assert out.shape == (40, 4) and np.all(np.isfinite(out))
    assert ser.get_feature_names_out().tolist() == ["v", "u", "rho", "cell"]
    frame = ser.set_output(transform="pandas").transform(X)
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["v", "u", "rho", "cell"]
    with pytest.raises(TypeError) as info:
        ser.fit(X[1:] + 1j)
    _check_clean_error(info.value)


def test_serlic_codec_huge_and_complex_points():
    pytest.importorskip("torch")
    pytest.importorskip("constriction")
    from sklearn_icml.compression import SerLiCCodec
    from sklearn_icml.datasets import make_lidar_sweep

    points, refl = make_lidar_sweep(random_state=0, n_lasers=4, n_azimuth=32)[:2]
    codec = SerLiCCodec(n_lasers=4, n_azimuth=32, window=16, max_epochs=0,
                        sequence_model="gru", random_state=1).fit([(points, refl)])
    far = points.copy()
    far[0, 0] = 1e300
    for call in (lambda: codec.encode((far, refl)), lambda: clone(codec).fit([(far, refl)])):
        with pytest.raises(ValueError, match="too large for float32") as info:
            call()
        _check_clean_error(info.value, "points")
    with pytest.raises(TypeError, match="complex") as info:
        codec.encode((points + 1j, refl))
    _check_clean_error(info.value, "points")
    assert np.array_equal(codec.decode(codec.encode((points, refl)), points), refl)


def test_neural_tables_refuse_values_too_large_for_float32():
    pytest.importorskip("torch")
    from sklearn_icml.lora import FlatLoRAClassifier, FlatLoRARegressor
    from sklearn_icml.privacy import DPSGDClassifier

    for cls in (FlatLoRAClassifier, FlatLoRARegressor, DPSGDClassifier):
        name = cls.__name__
        est = _estimator(cls, name)
        X, y = _data(name, est)
        with pytest.raises(ValueError, match="too large for float32") as info:
            _fit(clone(est), _with(X, None, 1e300, dtype=np.float64), y)
        _check_clean_error(info.value)
        _fit(est, X, y)
        with pytest.raises(ValueError, match="too large for float32") as info:
            est.predict(_with(X, None, -1e300, dtype=np.float64))
        _check_clean_error(info.value)
    reg = _estimator(FlatLoRARegressor, "FlatLoRARegressor")
    X, y = _data("FlatLoRARegressor", reg)
    with pytest.raises(ValueError, match="too large for float32") as info:
        reg.fit(X, _with(y, 0, 1e300, dtype=np.float64))
    _check_clean_error(info.value, "y")


def test_cellflux_huge_values_and_grid_search():
    pytest.importorskip("torch")
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from sklearn_icml.generative import CellFlux

    X, y = _data("CellFlux", None)
    params = TEST_PARAMS["CellFlux"]
    with pytest.raises(ValueError, match="too large for float32") as info:
        CellFlux(**params).fit(_with(X, None, 1e300, dtype=np.float64), y)
    _check_clean_error(info.value)
    model = CellFlux(**params).fit(X, y)
    with pytest.raises(ValueError, match="too large for float32") as info:
        model.predict(_with(X[y == 0], None, 1e300, dtype=np.float64))
    _check_clean_error(info.value, "X_control")
    # score(X, y) is scikit-learn's form: GridSearchCV tunes CellFlux with it
    folds = list(StratifiedKFold(2, shuffle=True, random_state=0).split(X, y))
    search = GridSearchCV(CellFlux(**params), {"learning_rate": [1e-3, 1e-2]}, cv=folds,
                          error_score="raise").fit(X, y)
    assert np.isfinite(search.best_score_) and search.best_score_ <= 0
    # the pair form is unchanged, and both forms agree on one perturbation
    assert model.score(X, y) == pytest.approx(model.score(X[y == 0], X[y == 1], 1))
    with pytest.raises(ValueError, match="control") as info:
        model.score(X[y == 1], y[y == 1])
    _check_clean_error(info.value, "y")


def test_video_models_refuse_values_too_large_for_float32():
    pytest.importorskip("torch")
    from sklearn_icml.datasets import make_rotating_dot_videos
    from sklearn_icml.video import F16ClipCompressor, F16VideoClassifier

    videos, labels = make_rotating_dot_videos(8, duration_s=1, size=8, random_state=0)
    clf = F16VideoClassifier(**TEST_PARAMS["F16VideoClassifier"])
    with pytest.raises(ValueError, match="too large for float32") as info:
        clf.fit(_with(videos, None, 1e300, dtype=np.float64), labels)
    _check_clean_error(info.value)
    clf.fit(videos, labels)
    with pytest.raises(ValueError, match="too large for float32") as info:
        clf.predict(_with(videos, None, 1e300, dtype=np.float64))
    _check_clean_error(info.value)
    features = np.random.RandomState(0).randn(2, 16, 16, 3)
    comp = F16ClipCompressor(**TEST_PARAMS["F16ClipCompressor"])
    with pytest.raises(ValueError, match="too large for float32") as info:
        comp.fit_transform(_with(features, None, 1e300, dtype=np.float64))
    _check_clean_error(info.value)


def test_dwm_regressor_defaults_fit_an_unscaled_target():
    """load_diabetes's target runs to 346: the learner trained on it raw diverged at epoch 1.

    The defaults but for a shorter run (the divergence came in the first epoch)."""
    pytest.importorskip("torch")
    from sklearn.datasets import load_diabetes

    from sklearn_icml.weighting import DWMRegressor

    X, y = load_diabetes(return_X_y=True)
    reg = DWMRegressor(random_state=0, max_iter=100, n_stages=2).fit(X, y)
    pred = reg.predict(X)
    assert np.all(np.isfinite(pred)) and reg.score(X, y) > 0.2
    assert abs(pred.mean() - y.mean()) < 0.2 * y.std()  # mapped back to the scale of y


def test_strings_in_non_tabular_inputs_name_the_argument():
    from sklearn_icml.neural import (
        BayesRidgeICLPredictor,
        GDICLPredictor,
        LinearICLTaskSampler,
        SoftmaxKernelICLPredictor,
    )

    X, y = LinearICLTaskSampler(random_state=0).sample(50)
    for cls in (SoftmaxKernelICLPredictor, GDICLPredictor, BayesRidgeICLPredictor):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cls().fit(X, y)
        for bad in (_with(X, None, "a"), X + 1j):
            with pytest.raises((ValueError, TypeError)) as info:
                model.predict(bad)
            _check_clean_error(info.value)


def test_strings_in_prompts_and_videos_of_the_torch_models():
    pytest.importorskip("torch")
    from sklearn_icml.neural import LinearICLTaskSampler, MultiHeadSoftmaxICLRegressor
    from sklearn_icml.video import F16ClipCompressor

    X, _ = LinearICLTaskSampler(random_state=0).sample(20)
    model = MultiHeadSoftmaxICLRegressor(**TEST_PARAMS["MultiHeadSoftmaxICLRegressor"]).fit()
    features = np.random.RandomState(0).randn(2, 16, 16, 3)
    compressor = F16ClipCompressor(**TEST_PARAMS["F16ClipCompressor"])
    for call, data in ((model.predict, X), (compressor.fit, features)):
        for bad in (_with(data, None, "a"), data + 1j):
            with pytest.raises((ValueError, TypeError)) as info:
                call(bad)
            _check_clean_error(info.value)


# ------------------------------------------------ this round's new entry points and input kinds


@pytest.mark.parametrize("layout", ["readonly", "fortran", "strided", "frame"])
def test_gam_float32_input_of_every_layout(layout):
    # float32 X is binned as it is (no float64 copy): every layout gives the model of the
    # same values in float64, and the caller's array is not modified
    pd = pytest.importorskip("pandas")
    from sklearn_icml.gam import StumpForestGAMRegressor

    rng = np.random.RandomState(0)
    base = rng.normal(size=(120, 6)).astype(np.float32)
    base[::7, 1] = np.nan
    y = base[:, 0] * 2 + np.nan_to_num(base[:, 1])
    X = {"readonly": base.copy(), "fortran": np.asfortranarray(base),
         "strided": np.repeat(base, 2, axis=1)[:, ::2], "frame": pd.DataFrame(base)}[layout]
    if layout == "readonly":
        X.setflags(write=False)
    before = np.array(X, copy=True)
    params = {"n_stumps": 8, "random_state": 0}
    model = StumpForestGAMRegressor(**params).fit(X, y)
    twin = StumpForestGAMRegressor(**params).fit(base.astype(np.float64), y)
    np.testing.assert_array_equal(model.predict(X), twin.predict(base.astype(np.float64)))
    np.testing.assert_array_equal(np.asarray(X), before)
    bad = base.copy()
    bad[3, 2] = np.inf
    with pytest.raises(ValueError) as info:
        StumpForestGAMRegressor(**params).fit(bad, y)
    _check_clean_error(info.value)


def test_frechet_transport_score_bad_input():
    from sklearn_icml.generative import CellFlux, frechet_transport_score

    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 3))
    y = np.r_[np.zeros(20), np.ones(20)].astype(int)
    params = TEST_PARAMS["CellFlux"]
    with pytest.raises(ValueError) as info:  # not fitted
        frechet_transport_score(CellFlux(**params), X[:20], X[20:])
    assert "fit" in str(info.value)
    model = CellFlux(**params).fit(X, y)
    assert np.isfinite(frechet_transport_score(model, X[:20], X[20:], perturbation=1))
    for name, args in {
        "X_treated": (X[:20], np.full((20, 3), np.nan)),
        "X_control": (np.array([["a", "b", "c"]] * 5, dtype=object), X[20:]),
    }.items():
        with pytest.raises((ValueError, TypeError)) as info:
            frechet_transport_score(model, *args, perturbation=1)
        _check_clean_error(info.value, name)
    with pytest.raises((ValueError, TypeError)) as info:
        frechet_transport_score(model, X[:20, :2], X[20:], perturbation=1)
    _check_clean_error(info.value, "X_control")


@pytest.mark.parametrize("backend", ["numpy", "opendp"])
def test_mechanisms_bad_input_on_each_noise_backend(backend):
    from sklearn_icml.privacy import DPStratifiedSampler, laplace_mechanism

    if backend == "opendp":
        pytest.importorskip("opendp")
    seed = 0 if backend == "numpy" else None
    for value, argument in ((np.nan, "value"), ("a", "value"), (np.inf, "value")):
        with pytest.raises((ValueError, TypeError)) as info:
            laplace_mechanism(value, 1.0, noise_backend=backend, random_state=seed)
        _check_clean_error(info.value, argument)
    for epsilon in (0.0, -1.0, np.nan, "1"):
        with pytest.raises((ValueError, TypeError)) as info:
            laplace_mechanism(1.0, epsilon, noise_backend=backend, random_state=seed)
        _check_clean_error(info.value, "epsilon")
    out = laplace_mechanism(np.array([1e300, -1e300, 0.0]), 1.0, noise_backend=backend,
                            random_state=seed)
    assert out.shape == (3,) and not np.any(np.isnan(out))
    for bad in ("OpenDP", 1, None):
        with pytest.raises((ValueError, TypeError)) as info:
            laplace_mechanism(1.0, 1.0, noise_backend=bad)
        _check_clean_error(info.value, "noise_backend")
        with pytest.raises((ValueError, TypeError)) as info:
            DPStratifiedSampler(noise_backend=bad).fit(np.repeat([0, 1], 50))
        _check_clean_error(info.value, "noise_backend")
