import pytest
from sklearn.base import BaseEstimator, clone

from sklearn_icml.utils._params import store_params


class _Model(BaseEstimator):
    def __init__(self, *, alpha=1.0, solver="lbfgs", max_iter=100):
        store_params(self, locals())


class _Routed(BaseEstimator):
    def __init__(self, *, alpha=1.0, **kwargs):
        store_params(self, locals())

    def _store_routed_params(self, kwargs):
        self.routed_ = dict(kwargs)


class _Child(_Model):
    def __init__(self, *, alpha=2.0, solver="adam", max_iter=5):
        super().__init__(alpha=alpha, solver=solver, max_iter=max_iter)


def test_store_params_stores_every_argument_unchanged():
    values = [1, 2]
    model = _Model(alpha=values, max_iter=7)
    assert model.get_params() == {"alpha": values, "solver": "lbfgs", "max_iter": 7}
    assert model.alpha is values
    assert sorted(vars(model)) == ["alpha", "max_iter", "solver"]
    assert clone(model).get_params()["max_iter"] == 7


def test_store_params_skips_the_class_cell_of_super():
    child = _Child(max_iter=9)
    assert sorted(vars(child)) == ["alpha", "max_iter", "solver"]
    assert child.get_params() == {"alpha": 2.0, "solver": "adam", "max_iter": 9}


def test_store_params_routes_kwargs():
    assert _Routed(alpha=3, module__width=8).routed_ == {"module__width": 8}
    assert _Routed().routed_ == {}
    assert not hasattr(_Routed(), "kwargs")


def test_store_params_refuses_kwargs_it_cannot_route():
    class Loose(BaseEstimator):
        def __init__(self, **kwargs):
            store_params(self, locals())

    with pytest.raises(TypeError, match="_store_routed_params"):
        Loose(width=3)
