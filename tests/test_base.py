"""The template bases of sklearn_icml.base, on toy subclasses."""

import os
import pickle
from numbers import Integral, Real

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import Interval

from sklearn_icml.base import (
    BaseCodec,
    BaseEnvironment,
    BaseNeuralEstimator,
    BaseRunner,
    NeuralClassifierMixin,
    NeuralRegressorMixin,
    run_seeds,
)
from sklearn_icml.utils import spawn_seeds


class Coin(BaseEnvironment):
    _parameter_constraints = {
        "p": [Interval(Real, 0, 1, closed="both")],
        "random_state": [None, Integral],
    }

    def __init__(self, p=0.5, random_state=None):
        self.p = p
        self.random_state = random_state

    def _build(self):
        self._rng = np.random.default_rng(self.random_state)

    def flip(self):
        self._setup()
        return bool(self._rng.random() < self.p)


class Flipper(BaseRunner):
    _parameter_constraints = {
        "n_flips": [Interval(Integral, 1, None, closed="left")],
        "random_state": [None, Integral],
    }
    _environment_types = (Coin,)

    def __init__(self, n_flips=50, random_state=None):
        self.n_flips = n_flips
        self.random_state = random_state

    def _run(self, env):
        self.heads_ = sum(env.flip() for _ in range(self.n_flips))
        self.seed_seen_ = self.random_state
        self.pid_ = os.getpid()  # the process the run ran in


def test_runner_validates_checks_env_and_returns_self():
    runner = Flipper(n_flips=10)
    with pytest.raises(NotFittedError):
        runner._check_is_run()
    assert runner.run(Coin(p=1.0)) is runner and runner.heads_ == 10
    runner._check_is_run()
    with pytest.raises(ValueError, match="n_flips"):
        Flipper(n_flips=0).run(Coin())
    with pytest.raises(TypeError, match="env must be a Coin"):
        Flipper().run("not an env")


def test_environment_validates_at_first_use_and_after_set_params():
    coin = Coin(p=2.0)  # stored, not checked
    with pytest.raises(ValueError, match="'p' parameter"):
        coin.flip()
    coin.set_params(p=1.0)
    assert coin.flip() is True
    assert clone(coin).get_params() == coin.get_params()


def test_run_seeds_is_reproducible_clones_and_splits_seeds():
    algorithm, env = Flipper(), Coin(p=0.5)
    runs = run_seeds(algorithm, env, seeds=[3, 4, 5])
    again = run_seeds(algorithm, env, seeds=[3, 4, 5], n_jobs=2)
    assert [r.heads_ for r in runs] == [r.heads_ for r in again]
    assert [r.seed_seen_ for r in runs] == [spawn_seeds(s, 2)[1] for s in (3, 4, 5)]
    assert algorithm.random_state is None and not hasattr(algorithm, "heads_")
    with pytest.raises(ValueError, match="at least one seed"):
        run_seeds(algorithm, env, seeds=[])


class Raw(BaseCodec):
    _parameter_constraints = {"dtype": [str]}

    def __init__(self, dtype="<f8"):
        self.dtype = dtype

    def _fit(self, X):
        self.n_values_ = len(X)

    def _encode(self, X):
        return np.asarray(X, dtype=self.dtype).tobytes()

    def _decode(self, data):
        return np.frombuffer(data, dtype=self.dtype)


def test_codec_needs_fit_round_trips_and_rejects_non_bytes():
    codec = Raw()
    with pytest.raises(NotFittedError):
        codec.encode([1.0])
    codec.fit([1.0, 2.0])
    X = np.array([1.5, -2.0, 3.25])
    np.testing.assert_array_equal(codec.decode(codec.encode(X)), X)
    with pytest.raises(TypeError, match="bytes"):
        codec.decode([1, 2])
    assert codec.__sklearn_tags__().input_tags.two_d_array is False


class Net(BaseNeuralEstimator):
    def __init__(self, *, learning_rate=0.1, **kwargs):
        self.learning_rate = learning_rate
        self._store_routed_params(kwargs)

    def fit(self, X, y):
        return self


def test_routed_params_are_parameters_and_unknown_keywords_fail_at_fit():
    net = Net(module__hidden=8, optimizer__momentum=0.9)
    assert net.get_params() == {
        "learning_rate": 0.1, "module__hidden": 8, "optimizer__momentum": 0.9
    }
    twin = clone(net.set_params(module__hidden=16, learning_rate=0.2))
    assert twin.get_params() == {
        "learning_rate": 0.2, "module__hidden": 16, "optimizer__momentum": 0.9
    }
    assert pickle.loads(pickle.dumps(twin)).module__hidden == 16
    typo = Net(hiden=3)  # __init__ only stores, as scikit-learn requires
    with pytest.raises(TypeError, match="'hiden'"):
        typo._fit_net(object, None, None)


def test_run_seeds_starts_no_process_for_millisecond_runs():
    # eight runs of well under 1 ms: starting worker processes would cost 1-3 s
    runs = run_seeds(Flipper(), Coin(), seeds=range(8), n_jobs=2)
    assert {r.pid_ for r in runs} == {os.getpid()}
    assert [r.heads_ for r in runs] == [r.heads_ for r in run_seeds(Flipper(), Coin(), range(8))]


def test_run_seeds_sends_long_work_to_worker_processes(monkeypatch):
    import sklearn_icml.base

    monkeypatch.setattr(sklearn_icml.base, "_PROCESS_START_S", 0.0)  # any work is long
    runs = run_seeds(Flipper(), Coin(), seeds=range(4), n_jobs=2)
    assert runs[0].pid_ == os.getpid()  # the first seed, timed here
    assert all(r.pid_ != os.getpid() for r in runs[1:])
    assert [r.heads_ for r in runs] == [r.heads_ for r in run_seeds(Flipper(), Coin(), range(4))]


def test_run_seeds_follows_the_joblib_backend_in_force():
    # any joblib backend takes the runs (dask's too: joblib.parallel_backend("dask"))
    from joblib import parallel_backend

    sequential = [r.heads_ for r in run_seeds(Flipper(), Coin(), seeds=range(4))]
    with parallel_backend("threading", n_jobs=2):
        threaded = [r.heads_ for r in run_seeds(Flipper(), Coin(), seeds=range(4))]
    assert threaded == sequential
    # a backend context wins over the in-process choice, however short the runs
    from joblib import parallel_config

    with parallel_config(backend="loky", n_jobs=2):
        runs = run_seeds(Flipper(), Coin(), seeds=range(4), n_jobs=2)
    assert [r.heads_ for r in runs] == sequential
    assert any(r.pid_ != os.getpid() for r in runs)


@pytest.mark.parametrize(
    "base, hooks",
    [
        (BaseRunner, {"_run"}),
        (BaseEnvironment, {"_build"}),
        (BaseCodec, {"_fit", "_encode", "_decode"}),
        (BaseNeuralEstimator, {"fit"}),
        (NeuralClassifierMixin, {"_predict_logits"}),
        (NeuralRegressorMixin, {"_predict_outputs"}),
    ],
)
def test_a_subclass_that_misses_a_hook_cannot_be_instantiated(base, hooks):
    assert base.__abstractmethods__ == frozenset(hooks)
    incomplete = type("Incomplete", (base,), {})
    with pytest.raises(TypeError, match="abstract"):
        incomplete()


def test_the_complete_toy_subclasses_clone_and_pickle():
    for obj in (Coin(p=0.25), Flipper(n_flips=3), Raw(), Net(module__hidden=4)):
        twin = pickle.loads(pickle.dumps(clone(obj)))
        assert twin.get_params() == obj.get_params()


def test_the_skorch_layer_is_re_exported_by_base():
    import sklearn_icml._neural_base as neural_base

    assert BaseNeuralEstimator is neural_base.BaseNeuralEstimator
    assert NeuralClassifierMixin is neural_base.NeuralClassifierMixin
    assert NeuralRegressorMixin is neural_base.NeuralRegressorMixin


def test_first_use_from_many_threads_builds_once():
    import threading
    import time

    from sklearn.base import BaseEstimator

    from sklearn_icml.base import SetUpAtFirstUseMixin

    class Slow(SetUpAtFirstUseMixin, BaseEstimator):
        _parameter_constraints = {}
        builds = 0

        def _build(self):
            type(self).builds += 1
            self.state_ = []
            time.sleep(0.05)  # a build long enough for the other threads to arrive

    obj = Slow()
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(id(obj._setup().state_)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert Slow.builds == 1 and len(set(seen)) == 1
