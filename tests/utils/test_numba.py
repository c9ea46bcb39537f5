"""Kernels compile where no numba cache can be written (a read-only install)."""

import importlib
import pickle
import subprocess
import sys
import textwrap


def test_read_only_cache_falls_back_to_plain_compilation(tmp_path):
    # In a fresh interpreter numba finds no cache location (its locators are emptied, as
    # when the package, NUMBA_CACHE_DIR and HOME are read-only); a pickled GAM must still
    # load, predict the same, and say once why its kernels are not cached.
    import numpy as np

    from sklearn_icml.gam import StumpForestGAMRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    model = StumpForestGAMRegressor(n_stumps=10, random_state=0).fit(X, X[:, 0])
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(model))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "expected.npy", model.predict(X))
    script = textwrap.dedent(
        f"""
        import pickle, warnings
        import numpy as np
        from numba.core import caching
        caching.CacheImpl._locator_classes = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = pickle.loads(open({str(tmp_path / "model.pkl")!r}, "rb").read())
            pred = model.predict(np.load({str(tmp_path / "X.npy")!r}))
        assert np.allclose(pred, np.load({str(tmp_path / "expected.npy")!r}), atol=1e-12)
        texts = [str(w.message) for w in caught if "no writable cache" in str(w.message)]
        assert len(texts) == 1, texts
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def test_other_numba_errors_are_not_hidden(monkeypatch):
    import numba

    from sklearn_icml.utils import _numba

    def broken(**options):
        def decorate(func):
            raise RuntimeError("something else")

        return decorate

    monkeypatch.setattr(_numba, "njit", broken)
    try:
        _numba.njit_cached()(lambda x: x)
    except RuntimeError as exc:
        assert "something else" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("the error was swallowed")
    assert numba is not None
    importlib.reload(_numba)
