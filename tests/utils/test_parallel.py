"""n_jobs has one meaning: the number of CPU workers, None is 1 unless joblib says more."""

import warnings

import joblib
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_icml.utils._parallel import resolve_n_jobs


def test_resolve_n_jobs_follows_joblib():
    assert resolve_n_jobs(None) == 1
    assert resolve_n_jobs(3) == 3
    assert resolve_n_jobs(-1) == joblib.cpu_count()
    assert resolve_n_jobs(-2) == max(1, joblib.cpu_count() - 1)
    with joblib.parallel_config(n_jobs=2):
        assert resolve_n_jobs(None) == 2
        assert resolve_n_jobs(1) == 1
    with pytest.raises(ValueError, match="n_jobs == 0"):
        resolve_n_jobs(0)


def test_every_n_jobs_parameter_refuses_zero_and_takes_minus_one():
    from sklearn.linear_model import LogisticRegression

    from sklearn_icml.metrics import CAPASimilarity

    X, y = [[0.0], [1.0], [0.0], [1.0]], [0, 1, 0, 1]
    est = CAPASimilarity(estimators=[("lr", LogisticRegression())], cv=2, n_jobs=0)
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        est.fit(X, y)
    est.set_params(n_jobs=-1).fit(X, y)


def test_torch_threads_none_is_one_thread_unless_joblib_says_more():
    torch = pytest.importorskip("torch")
    from sklearn_icml.utils._skorch import torch_threads

    before = torch.get_num_threads()
    with torch_threads(None):
        assert torch.get_num_threads() == 1
    with joblib.parallel_config(n_jobs=2), torch_threads(None):
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before


def test_gam_default_uses_every_core_and_none_one_thread(monkeypatch):
    from sklearn_icml.gam import StumpForestGAMRegressor
    from sklearn_icml.utils import _parallel

    assert StumpForestGAMRegressor().n_jobs == -1
    seen = []
    real = _parallel.numba_threads

    def spy(n_jobs):
        seen.append(n_jobs)
        return real(n_jobs)

    monkeypatch.setattr(_parallel, "numba_threads", spy)
    X = [[float(i % 7), float(i % 3)] for i in range(60)]
    y = [row[0] for row in X]
    params = {"n_stumps": 2, "max_iter": 1, "min_samples_leaf": 5, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=1 ends the fit on purpose
        StumpForestGAMRegressor(**params, n_jobs=None).fit(X, y)
    assert seen and all(n == 1 for n in seen)
