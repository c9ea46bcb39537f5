"""Every public class of every subpackage keeps scikit-learn's parameter manners.

Each public class is a ``BaseEstimator``: ``get_params`` lists the ``__init__`` parameters,
``set_params`` takes them back, :func:`sklearn.base.clone` rebuilds an equal object, the
repr works and the unfitted object pickles. The only public classes that are not are the
kinds listed in ``_OTHER_MANNERS``, which follow their own library's manners, and
scikit-learn's displays.
"""

import dataclasses
import importlib
import inspect
import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone

import sklearn_icml
from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa: F401 - list it too

from ._estimator_params import TEST_PARAMS

_SKIP_SUBPACKAGES = {"utils", "datasets"}


def _other_manners():
    """(base class, reason) for public classes that follow another library's manners."""
    kinds = [(BaseException, "exceptions")]
    torch = pytest.importorskip("torch")
    skorch = pytest.importorskip("skorch")
    kinds += [
        (torch.nn.Module, "torch modules: parameters are tensors, PyTorch's manners"),
        (torch.utils.data.Dataset, "torch datasets"),
        (skorch.NeuralNet, "skorch nets: skorch's own get_params/set_params"),
        (skorch.callbacks.Callback, "skorch callbacks: skorch's own get_params/set_params"),
    ]
    gym = pytest.importorskip("gymnasium")
    kinds.append((gym.Env, "gymnasium environments: gymnasium's manners"))
    return kinds


def _public_classes():
    for sub in sklearn_icml._SUBPACKAGES:
        if sub in _SKIP_SUBPACKAGES:
            continue
        module = importlib.import_module(f"sklearn_icml.{sub}")
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isclass(obj):
                yield f"{sub}.{name}", obj


def _is_record(cls):
    """Plain records of results (dataclasses, named tuples) carry no parameters."""
    return dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields"))


def _is_display(cls):
    """scikit-learn's displays (``RocCurveDisplay``, ``PartialDependenceDisplay``) hold a
    picture, not parameters: built by ``from_estimator``, drawn again by ``plot``."""
    return cls.__name__.endswith("Display") and all(
        callable(getattr(cls, m, None)) for m in ("from_estimator", "plot")
    )


CLASSES = sorted(_public_classes())

def _same(a, b):
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, BaseEstimator):
        return type(a) is type(b) and repr(a) == repr(b)
    if callable(getattr(a, "state_dict", None)) and callable(getattr(b, "state_dict", None)):
        # torch modules (a pretrained model given as a parameter): the same weights
        sa, sb = a.state_dict(), b.state_dict()
        return type(a) is type(b) and sa.keys() == sb.keys() and all(
            bool((sa[k] == sb[k]).all()) for k in sa
        )
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects without a usable ==
        return repr(a) == repr(b)


@pytest.mark.parametrize("qualname, cls", CLASSES, ids=[q for q, _ in CLASSES])
def test_public_class_params_round_trip(qualname, cls):
    if _is_record(cls):
        pytest.skip("a record of results, not a configurable object")
    if _is_display(cls):
        pytest.skip("a display: scikit-learn's Display manners (from_estimator, plot)")
    for kind, _reason in _other_manners():
        if issubclass(cls, kind) and not issubclass(cls, BaseEstimator):
            pytest.skip(f"follows its own library's manners: {_reason}")
    assert issubclass(cls, BaseEstimator), f"{qualname} is not a BaseEstimator"
    obj = cls(**TEST_PARAMS.get(cls.__name__, {}))
    params = obj.get_params(deep=False)
    assert set(params) >= set(
        p.name
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind is not p.VAR_KEYWORD
    )
    assert obj.set_params(**params) is obj
    twin = clone(obj)
    assert type(twin) is cls
    twin_params = twin.get_params(deep=False)
    assert set(twin_params) == set(params)
    for key, value in params.items():
        assert _same(twin_params[key], value), f"{qualname}.{key} changed through clone"
    assert repr(obj).startswith(cls.__name__)
    restored = pickle.loads(pickle.dumps(obj))
    assert set(restored.get_params(deep=False)) == set(params)


@pytest.mark.parametrize("qualname, cls", CLASSES, ids=[q for q, _ in CLASSES])
def test_every_parameter_is_declared_in_parameter_constraints(qualname, cls):
    if not issubclass(cls, BaseEstimator):
        pytest.skip("not a BaseEstimator")
    params = [
        p.name
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind is not p.VAR_KEYWORD
    ]
    declared = getattr(cls, "_parameter_constraints", {})
    missing = [name for name in params if name not in declared]
    assert not missing, f"{qualname}: no constraint declared for {missing}"


def _public_functions():
    for sub in sklearn_icml._SUBPACKAGES:
        if sub == "utils":
            continue
        module = importlib.import_module(f"sklearn_icml.{sub}")
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isfunction(obj) and inspect.signature(obj).parameters:
                yield f"{sub}.{name}", obj


FUNCTIONS = sorted(_public_functions())


@pytest.mark.parametrize("qualname, func", FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_public_functions_validate_their_parameters(qualname, func):
    # scikit-learn's @validate_params wraps the function (functools.wraps sets __wrapped__)
    assert hasattr(func, "__wrapped__"), f"{qualname} is not decorated with @validate_params"
