"""One vocabulary across the library: one meaning per constraint name, one name per concept.

* A module-level constraint name (``POSITIVE_INT``, ``_POSITIVE``, ...) means the same set in
  every module of the package that defines it: the shared ones live in
  ``sklearn_icml/utils/_param_validation.py``, a method's own ones under a name no other module
  gives another meaning.
* A public parameter that stands for a concept of the glossary (ARCHITECTURE.md) uses the
  glossary's name: ``learning_rate``, not ``lr``; ``hidden_layer_sizes``, not ``hidden_dims``.
  The old name of a parameter in its deprecation cycle (default ``"deprecated"``) is allowed.
* ``run`` is a runner's verb (``BaseRunner.run(env)``) and ``score`` is scikit-learn's
  ``score(X, y)``; X comes before y; an estimator's constructor is keyword-only.

The checkers are plain functions, tested on synthetic modules and signatures below, so that a
failure of the package-wide tests points at the package, not at the checker.
"""

import fnmatch
import importlib
import inspect
import pkgutil
import types
from functools import lru_cache
from numbers import Integral, Real

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import (
    HasMethods,
    Hidden,
    Interval,
    Options,
    StrOptions,
    _Constraint,
)

import sklearn_icml
from sklearn_icml.base import BaseRunner, NonTabularInputMixin
from sklearn_icml.utils._deprecation import DEPRECATED
from sklearn_icml.utils._optional import EXTRA_OF

# -- (a) constraint names ----------------------------------------------------------------------


def _missing_extra(exc):
    """Whether an ImportError comes from an optional extra that is not installed."""
    if 'pip install "sklearn-icml[' in str(exc):  # raised by utils.optional_import
        return True
    return (getattr(exc, "name", None) or "").split(".")[0] in EXTRA_OF


@lru_cache(maxsize=1)
def _package_modules():
    """Every module of the package, imported; those whose optional extra is missing skipped."""
    modules = []

    def skip_missing(name):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            if not _missing_extra(exc):
                raise

    walk = pkgutil.walk_packages(sklearn_icml.__path__, "sklearn_icml.", onerror=skip_missing)
    for info in walk:
        try:
            modules.append(importlib.import_module(info.name))
        except ImportError as exc:
            if not _missing_extra(exc):
                raise
    return modules


def _is_constraint(obj):
    return isinstance(obj, _Constraint | Hidden)


def _holds_constraint(obj):
    """A constraint, or a list/tuple/dict with a constraint somewhere inside."""
    if _is_constraint(obj):
        return True
    if isinstance(obj, list | tuple):
        return any(_holds_constraint(item) for item in obj)
    if isinstance(obj, dict):
        return any(_holds_constraint(value) for value in obj.values())
    return False


def _type_name(tp):
    return getattr(tp, "__qualname__", repr(tp))


def _bound(value):
    return None if value is None else float(value)


def canonical(obj):
    """A hashable form of a constraint (or a container of them) that says what it accepts.

    Examples
    --------
    >>> canonical(Interval(Integral, 1, None, closed="left"))
    ('Interval', 'Integral', 1.0, None, 'left')
    >>> canonical(StrOptions({"b", "a"})) == canonical(StrOptions({"a", "b"}))
    True
    """
    if isinstance(obj, Hidden):
        return ("Hidden", canonical(obj.constraint))
    if isinstance(obj, Interval):
        return ("Interval", _type_name(obj.type), _bound(obj.left), _bound(obj.right),
                obj.closed)
    if isinstance(obj, StrOptions):
        return ("StrOptions", frozenset(obj.options), frozenset(obj.deprecated))
    if isinstance(obj, Options):
        return ("Options", _type_name(obj.type), frozenset(obj.options),
                frozenset(obj.deprecated))
    if isinstance(obj, HasMethods):
        return ("HasMethods", tuple(sorted(obj.methods)))
    if isinstance(obj, _Constraint):  # scikit-learn's other constraints: their repr says it
        return (type(obj).__name__, str(obj))
    if isinstance(obj, list | tuple):
        return ("sequence", tuple(canonical(item) for item in obj))
    if isinstance(obj, dict):
        return ("dict", tuple(sorted((str(k), canonical(v)) for k, v in obj.items())))
    if isinstance(obj, type):
        return ("type", f"{obj.__module__}.{obj.__qualname__}")
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return ("object", repr(obj))


def constraint_definitions(modules):
    """{name without leading underscores: {canonical form: [(module, name), ...]}}.

    One object bound in several modules (imported from one home) is one definition.
    """
    found = {}
    seen = {}
    for module in modules:
        for name, value in vars(module).items():
            if name.startswith("__") or not _holds_constraint(value):
                continue
            key = name.lstrip("_")
            by_form = found.setdefault(key, {})
            form = seen.get(id(value))
            if form is None:
                form = seen[id(value)] = (canonical(value), value)
            by_form.setdefault(form[0], []).append(f"{module.__name__}.{name}")
    return found


def constraint_collisions(modules):
    """The names that two modules define with different meanings, with where and what.

    Examples
    --------
    >>> a, b = types.ModuleType("a"), types.ModuleType("b")
    >>> a._POSITIVE = Interval(Integral, 1, None, closed="left")
    >>> b.POSITIVE = Interval(Real, 0, None, closed="neither")
    >>> sorted(constraint_collisions([a, b]))
    ['POSITIVE']
    """
    return {
        key: forms
        for key, forms in constraint_definitions(modules).items()
        if len(forms) > 1
    }


def _fake_module(name, **attrs):
    module = types.ModuleType(name)
    vars(module).update(attrs)
    return module


def test_collision_checker_finds_two_meanings_of_one_name():
    positive_int = Interval(Integral, 1, None, closed="left")
    positive_real = Interval(Real, 0, None, closed="neither")
    one = _fake_module("fake.one", _POSITIVE=positive_int, _KINDS=StrOptions({"a", "b"}))
    two = _fake_module("fake.two", POSITIVE=positive_real, _KINDS=StrOptions({"b", "a"}))
    collisions = constraint_collisions([one, two])
    assert set(collisions) == {"POSITIVE"}
    assert sorted(sum(collisions["POSITIVE"].values(), [])) == [
        "fake.one._POSITIVE",
        "fake.two.POSITIVE",
    ]


def test_collision_checker_reads_containers_and_shared_objects():
    shared = Interval(Real, 0, 1, closed="both")
    # the same object imported in two modules is one definition
    one = _fake_module("fake.one", UNIT=shared, _LAYERS=[Interval(Integral, 1, None,
                                                                  closed="left"), None])
    two = _fake_module("fake.two", UNIT=shared, _LAYERS=[Interval(Integral, 1, None,
                                                                  closed="left"), None])
    assert constraint_collisions([one, two]) == {}
    # a list differs from another list by one item; an open bound differs from np.inf
    three = _fake_module("fake.three", _LAYERS=[Interval(Integral, 0, None, closed="left"),
                                               None])
    four = _fake_module("fake.four", UNIT=Interval(Real, 0, 1, closed="left"),
                        _CONSTRAINTS={"alpha": [Interval(Real, 0, None, closed="left")]})
    five = _fake_module("fake.five",
                        CONSTRAINTS={"alpha": [Interval(Real, 0, float("inf"),
                                                        closed="left")]})
    assert set(constraint_collisions([one, three, four, five])) == {
        "LAYERS", "UNIT", "CONSTRAINTS"
    }
    # a module-level list without any constraint (``__all__``, option lists) is not looked at
    six = _fake_module("fake.six", _NAMES=["a", "b"])
    seven = _fake_module("fake.seven", _NAMES=["c"])
    assert constraint_collisions([six, seven]) == {}


def test_one_meaning_per_constraint_name():
    collisions = constraint_collisions(_package_modules())
    report = [
        f"{key}: " + " | ".join(f"{form} in {', '.join(where)}" for form, where in forms.items())
        for key, forms in sorted(collisions.items())
    ]
    assert not report, (
        "module-level constraint names with more than one meaning (use the shared names of "
        "sklearn_icml.utils._param_validation, or a name that says what the constraint "
        "accepts):\n" + "\n".join(report)
    )


# -- (b) one name per concept ------------------------------------------------------------------

#: a name (or a glob of names) that stands for a concept of the glossary -> the glossary's name
#: (``*`` in the glob is carried over: ``actor_lr`` -> ``actor_learning_rate``). A width or a
#: state size that is one int (``hidden_size``, ``hidden_dim``) is not ``hidden_layer_sizes``.
SYNONYMS = {
    "lr": "learning_rate",
    "*_lr": "*_learning_rate",
    "lr_*": "learning_rate_*",
    "hidden_dims": "hidden_layer_sizes",
    "hidden_sizes": "hidden_layer_sizes",
    "hidden_units": "hidden_layer_sizes",
    "hidden_layers": "hidden_layer_sizes",
    "layer_sizes": "hidden_layer_sizes",
    "seed": "random_state",
    "rng": "random_state",
    "random_seed": "random_state",
    "n_iter": "max_iter",
    "n_outer_iter": "max_iter",
    "num_iter": "max_iter",
    "n_iters": "max_iter",
    "num_iters": "max_iter",
    "n_iterations": "max_iter",
    "num_iterations": "max_iter",
    "max_iterations": "max_iter",
    "n_epochs": "max_epochs",
    "num_epochs": "max_epochs",
    "epochs": "max_epochs",
    "max_epoch": "max_epochs",
    "tolerance": "tol",
    "n_threads": "n_jobs",
    "num_threads": "n_jobs",
    "n_workers": "n_jobs",
    "num_workers": "n_jobs",
    "verbosity": "verbose",
}

_ACCOUNTED_RUN = (
    "the passes of the DP-SGD run being sampled or accounted (the privacy schedule), not a "
    "fit's maximum number of epochs"
)
#: (owner, parameter) -> why this name is not the glossary's concept. ``owner`` is the public
#: name as written in ``_public_callables`` (``subpackage.Class.method`` or
#: ``subpackage.function``), a glob (``*`` matches any part).
ALLOWED = {
    ("privacy.BalancedIterationSampler.__init__", "num_epochs"): _ACCOUNTED_RUN,
    ("privacy.PoissonIterationSampler.__init__", "num_epochs"): _ACCOUNTED_RUN,
    ("privacy.bis_rdp", "num_epochs"): _ACCOUNTED_RUN,
    ("privacy.bis_epsilon", "num_epochs"): _ACCOUNTED_RUN,
    ("privacy.PartitionRDPAccountant.compose_*", "num_epochs"): _ACCOUNTED_RUN,
}


def glossary_name(param):
    """The glossary's name for ``param`` when ``param`` is a synonym of it, else None.

    Examples
    --------
    >>> glossary_name("lr"), glossary_name("actor_lr"), glossary_name("learning_rate")
    ('learning_rate', 'actor_learning_rate', None)
    >>> glossary_name("seed"), glossary_name("seeds")
    ('random_state', None)
    """
    for pattern, target in SYNONYMS.items():
        if fnmatch.fnmatchcase(param, pattern):
            if target is None:
                return None
            if "*" in pattern:
                prefix = pattern.index("*")
                stem = param[prefix : len(param) - (len(pattern) - prefix - 1)]
                return target.replace("*", stem)
            return target
    return None


def _is_deprecated_alias(func):
    """An old name in its deprecation cycle: ``old = renamed(new, "old")`` or
    ``@deprecated(...)`` (both set PEP 702's ``__deprecated__``), or a method that warns by
    itself and says so on its docstring's first line ("Deprecated: use ...")."""
    if getattr(func, "__deprecated__", None) is not None:
        return True
    return (func.__doc__ or "").lstrip().startswith("Deprecated")


def _defined_here(func):
    return (getattr(func, "__module__", None) or "").startswith("sklearn_icml")


def _follows_other_library(cls, name):
    """Whether ``cls.name`` overrides a method of a torch, gymnasium, skorch... base class,
    whose signature is that library's (``gymnasium.Env.reset(seed=...)``)."""
    for base in cls.__mro__[1:]:
        module = base.__module__ or ""
        if name in vars(base) and not module.startswith(("sklearn_icml", "sklearn", "builtins")):
            return True
    return False


def _public_classes_and_functions():
    """(owner, object) for every public name of every subpackage and every estimator."""
    from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa: F401
    from sklearn_icml.utils.discovery import all_estimators

    seen = set()
    for sub in sklearn_icml._SUBPACKAGES:
        try:
            module = importlib.import_module(f"sklearn_icml.{sub}")
            names = list(getattr(module, "__all__", ()))
        except ImportError as exc:  # pragma: no cover - an extra is missing
            if _missing_extra(exc):
                continue
            raise
        for name in names:
            try:
                obj = getattr(module, name)
            except ImportError as exc:  # pragma: no cover - a lazy torch name
                if _missing_extra(exc):
                    continue
                raise
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and id(obj) not in seen:
                seen.add(id(obj))
                yield f"{sub}.{name}", obj
    for name, cls in all_estimators(include_neural=True):
        if id(cls) not in seen:
            seen.add(id(cls))
            yield f"{cls.__module__.split('.')[1]}.{name}", cls


def _public_methods(cls):
    """(name, function) of the public methods ``cls`` defines or inherits from the package."""
    for name in dir(cls):
        if name.startswith("_") and name != "__init__":
            continue
        try:
            attr = inspect.getattr_static(cls, name)
        except AttributeError:  # pragma: no cover
            continue
        if isinstance(attr, staticmethod | classmethod):
            attr = attr.__func__
        if not inspect.isfunction(attr) or not _defined_here(attr):
            continue
        yield name, attr


@lru_cache(maxsize=1)
def _public_callables():
    """(owner, function, class or None) for every public function, constructor and method."""
    out = []
    for owner, obj in _public_classes_and_functions():
        if inspect.isfunction(obj):
            if _defined_here(obj):
                out.append((owner, obj, None))
            continue
        for name, func in _public_methods(obj):
            out.append((f"{owner}.{name}", func, obj))
    return out


def _parameters(func):
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # pragma: no cover - a builtin
        return []
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    return params


def synonym_hits(callables, allowed=ALLOWED):
    """``owner: parameter -> glossary name`` for every public parameter named by a synonym.

    Examples
    --------
    >>> def fit(X, y, *, lr=0.1, learning_rate=0.1, seed="deprecated"):
    ...     pass
    >>> synonym_hits([("neural.fit", fit, None)], allowed={})
    ['neural.fit: lr -> learning_rate']
    """
    hits = []
    for owner, func, cls in callables:
        if _is_deprecated_alias(func):
            continue
        if (
            cls is not None
            and func.__name__ != "__init__"  # a constructor's parameters are always ours
            and _follows_other_library(cls, func.__name__)
        ):
            continue
        for param in _parameters(func):
            target = glossary_name(param.name)
            if target is None or param.default == DEPRECATED:
                continue
            if any(
                fnmatch.fnmatchcase(owner, who) and param.name == name
                for who, name in allowed
            ):
                continue
            hits.append(f"{owner}: {param.name} -> {target}")
    return hits


def run_hits(callables):
    """Public ``run`` methods of classes that are not runners (``BaseRunner``)."""
    return [
        owner
        for owner, func, cls in callables
        if cls is not None
        and func.__name__ == "run"
        and not _is_deprecated_alias(func)
        and not issubclass(cls, BaseRunner)
    ]


def score_hits(callables):
    """``score`` methods whose signature is not scikit-learn's ``score(X, y)``.

    After ``X, y`` only ``sample_weight`` and keyword-only parameters are accepted (and the
    old form of a parameter in its deprecation cycle, default ``"deprecated"``). An object
    whose input is not a table (``NonTabularInputMixin``) names its two data arguments for
    what they are (``score(pairs, labels)``, ``score(collection, y=None)``); it still takes
    two, the data and the truth, as scikit-learn's scorers call it.

    Examples
    --------
    >>> class A:
    ...     def score(self, X, y, sample_weight=None, *, task_id=None): ...
    >>> class B:
    ...     def score(self, env): ...
    >>> class C(NonTabularInputMixin):
    ...     def score(self, pairs, labels=None, sample_weight=None): ...
    >>> class D(NonTabularInputMixin):
    ...     def score(self, env): ...
    >>> class E:
    ...     def score(self, X, y, perturbation="deprecated", *, sample_weight=None): ...
    >>> class F:
    ...     def score(self, X, y, native_fps=16): ...
    >>> score_hits([("a.A.score", A.score, A), ("b.B.score", B.score, B),
    ...             ("c.C.score", C.score, C), ("d.D.score", D.score, D),
    ...             ("e.E.score", E.score, E), ("f.F.score", F.score, F)])
    ['b.B.score(env)', 'd.D.score(env)', 'f.F.score(X, y, native_fps=16)']
    """
    hits = []
    for owner, func, cls in callables:
        if cls is None or func.__name__ != "score" or _is_deprecated_alias(func):
            continue
        params = [p for p in _parameters(func) if p.default != DEPRECATED]
        positional = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
        data = ["X", "y"]
        if issubclass(cls, NonTabularInputMixin) and len(positional) >= 2:
            data = positional[:2] if positional[0] != "y" else data
        ok = positional[:2] == data and positional[2:] in ([], ["sample_weight"])
        ok = ok and not any(p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY) for p in params)
        if not ok:
            hits.append(f"{owner}({', '.join(str(p) for p in params)})")
    return hits


def positional_constructor_hits(callables):
    """Constructors of estimators (``BaseEstimator``) that take a parameter by position."""
    hits = []
    for owner, func, cls in callables:
        if cls is None or func.__name__ != "__init__" or not issubclass(cls, BaseEstimator):
            continue
        positional = [
            p.name
            for p in _parameters(func)
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
        if positional:
            hits.append(f"{owner}: {', '.join(positional)}")
    return hits


def x_before_y_hits(callables):
    """Signatures that take ``y`` before ``X``."""
    hits = []
    for owner, func, _ in callables:
        names = [p.name for p in _parameters(func)]
        if "X" in names and "y" in names and names.index("y") < names.index("X"):
            hits.append(f"{owner}({', '.join(names)})")
    return hits


def test_glossary_name_maps_globs():
    assert glossary_name("critic_lr") == "critic_learning_rate"
    assert glossary_name("lr_milestones") == "learning_rate_milestones"
    assert glossary_name("learning_rate_init") is None
    assert glossary_name("n_epochs") == "max_epochs"
    assert glossary_name("hidden_layer_sizes") is None


def test_signature_checkers_on_synthetic_classes():
    class Runner(BaseRunner):
        def _run(self, env):
            return self

    class Executor:
        def run(self, program, query): ...

        def execute(self, program, query): ...

    class Renamed:
        def execute(self, program, query): ...

    from sklearn_icml.utils._deprecation import renamed

    Renamed.run = renamed(Renamed.execute, "run")
    callables = [
        ("a.Runner.run", Runner.run, Runner),
        ("a.Executor.run", Executor.run, Executor),
        ("a.Renamed.run", Renamed.run, Renamed),
    ]
    assert run_hits(callables) == ["a.Executor.run"]

    def estimate(y, X): ...

    assert x_before_y_hits([("a.estimate", estimate, None)]) == ["a.estimate(y, X)"]

    class Positional(BaseEstimator):
        def __init__(self, n_clusters=2, *, tol=1e-3): ...

    class KeywordOnly(BaseEstimator):
        def __init__(self, *, n_clusters=2): ...

    assert positional_constructor_hits([
        ("a.Positional.__init__", Positional.__init__, Positional),
        ("a.KeywordOnly.__init__", KeywordOnly.__init__, KeywordOnly),
    ]) == ["a.Positional.__init__: n_clusters"]

    def fit(X, y, *, actor_lr=0.1, n_epochs=3, seed="deprecated"): ...

    allowed = {("a.*", "n_epochs"): "a reason"}
    assert synonym_hits([("a.fit", fit, None)], allowed=allowed) == [
        "a.fit: actor_lr -> actor_learning_rate"
    ]


def test_allow_list_gives_reasons_and_is_in_use():
    for key, reason in ALLOWED.items():
        assert isinstance(reason, str) and len(reason) > 20, key
    params = [
        (owner, param.name)
        for owner, func, _ in _public_callables()
        for param in _parameters(func)
    ]
    stale = [
        key
        for key in ALLOWED
        if not any(fnmatch.fnmatchcase(o, key[0]) and p == key[1] for o, p in params)
    ]
    assert not stale, f"ALLOWED entries that match no public parameter any more: {stale}"


def test_public_parameters_use_the_glossary_names():
    hits = synonym_hits(_public_callables())
    assert not hits, (
        "public parameters named by a synonym of a glossary concept (rename them with "
        "scikit-learn's deprecation cycle, sklearn_icml.utils._deprecation, or list the "
        "exception with its reason in ALLOWED):\n" + "\n".join(hits)
    )


def test_run_only_on_runners():
    hits = run_hits(_public_callables())
    assert not hits, (
        "`run` is a runner's verb (BaseRunner.run(env)); give these a descriptive name:\n"
        + "\n".join(hits)
    )


def test_score_takes_x_and_y():
    hits = score_hits(_public_callables())
    assert not hits, (
        "`score` is scikit-learn's score(X, y[, sample_weight], *, ...); any other score is "
        "a separate public function:\n" + "\n".join(hits)
    )


def test_constructors_are_keyword_only():
    hits = positional_constructor_hits(_public_callables())
    assert not hits, (
        "an estimator's constructor takes every parameter by keyword (`def __init__(self, *, "
        "...)`; @keyword_only_after(1) for one that took them by position):\n" + "\n".join(hits)
    )


def test_x_before_y():
    hits = x_before_y_hits(_public_callables())
    assert not hits, "X comes before y:\n" + "\n".join(hits)


@pytest.mark.parametrize("name", ["lr", "hidden_dims", "n_iter", "seed", "verbosity"])
def test_synonyms_are_not_glossary_names(name):
    assert glossary_name(name) is not None
    assert glossary_name(SYNONYMS[name]) is None
