"""scikit-learn's API behaviours of the four ICL estimators, on their own input: prompts.

Their input tags say "not a 2-D table" (they take 3-D prompts), so the common test runs only
scikit-learn's data-free checks on them; what those checks would test on 2-D data is tested
here on prompts: clone, get/set_params, fit returns self, n_features_in_, the not-fitted
error, pickling a fitted estimator, determinism and refit idempotence.
"""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_icml import neural
from sklearn_icml.neural import LinearICLTaskSampler

NAMES = [
    "SoftmaxKernelICLPredictor",
    "GDICLPredictor",
    "BayesRidgeICLPredictor",
    "MultiHeadSoftmaxICLRegressor",
]
TINY = {"MultiHeadSoftmaxICLRegressor": {"max_iter": 4, "batch_size": 8, "steps_per_epoch": 2}}


def make(name, **params):
    if name == "MultiHeadSoftmaxICLRegressor":
        pytest.importorskip("torch")
        pytest.importorskip("skorch")
    return getattr(neural, name)(**{**TINY.get(name, {}), **params})


@pytest.fixture(scope="module")
def prompts():
    return LinearICLTaskSampler(n_features=3, n_context=6, random_state=0).sample(40)


@pytest.mark.parametrize("name", NAMES)
def test_input_tags_say_prompts_not_tables(name):
    tags = make(name).__sklearn_tags__()
    assert tags.input_tags.two_d_array is False
    assert tags.non_deterministic is False
    assert tags.estimator_type == "regressor"


@pytest.mark.parametrize("name", NAMES)
def test_params_clone_and_set_params(name):
    est = make(name, random_state=0) if name.startswith("MultiHead") else make(name)
    params = est.get_params()
    twin = clone(est)
    assert type(twin) is type(est) and twin is not est
    assert twin.get_params().keys() == params.keys()
    assert repr(twin) == repr(est)
    assert est.set_params(**params) is est
    est.set_params(allow_query_label=True)
    assert est.get_params()["allow_query_label"] is True
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(not_a_parameter=1)


@pytest.mark.parametrize("name", NAMES)
def test_not_fitted_error(name, prompts):
    X, y = prompts
    est = make(name)
    for method in ("predict", "score", "icl_mse"):
        args = (X,) if method == "predict" else (X, y)
        with pytest.raises(NotFittedError):
            getattr(est, method)(*args)


@pytest.mark.parametrize("name", NAMES)
def test_fit_returns_self_sets_attributes_and_keeps_params(name, prompts):
    X, y = prompts
    est = make(name, random_state=0) if name.startswith("MultiHead") else make(name)
    before = est.get_params()
    assert est.fit(X, y) is est
    assert est.n_features_in_ == 4 and est.n_context_ == 6
    after = est.get_params()
    assert after.keys() == before.keys()
    for key, value in before.items():  # fit changes no parameter
        assert after[key] is value or after[key] == value
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(clone(est)))


@pytest.mark.parametrize("name", NAMES)
def test_pickle_fitted_determinism_and_idempotent_refit(name, prompts):
    X, y = prompts
    kwargs = {"random_state": 0} if name.startswith("MultiHead") else {}
    est = make(name, **kwargs).fit(X, y)
    pred = est.predict(X)
    assert pred.shape == (40,) and np.all(np.isfinite(pred))
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict(X), pred)
    np.testing.assert_array_equal(clone(est).fit(X, y).predict(X), pred)  # same params, same fit
    np.testing.assert_array_equal(est.fit(X, y).predict(X), pred)  # refit is idempotent
    np.testing.assert_allclose(est.predict(X[:7]), pred[:7], atol=1e-12)  # subset invariance
