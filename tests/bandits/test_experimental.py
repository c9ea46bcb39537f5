"""BAIClPlusPlus needs the explicit experimental import, as scikit-learn's enable_* modules."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code):
    """Run ``code`` in a fresh interpreter (an import enables the class for the process)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_import_without_the_enable_module_raises_with_the_hint():
    out = _run(
        """
        import sklearn_icml.bandits as bandits
        assert "BAIClPlusPlus" not in bandits.__all__
        try:
            from sklearn_icml.bandits import BAIClPlusPlus  # noqa: F401
        except ImportError as error:
            print(error)
        else:
            raise SystemExit("imported without the enable module")
        """
    )
    assert out.returncode == 0, out.stderr
    assert "from sklearn_icml.experimental import enable_bai_cl_plus_plus" in out.stdout
    assert "experimental" in out.stdout


def test_enable_module_adds_the_class():
    out = _run(
        """
        from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa: F401
        import sklearn_icml.bandits as bandits
        from sklearn_icml.bandits import BAIClPlusPlus, BAICl
        from sklearn_icml.bandits._bai_cl_plus_plus import BAIClPlusPlus as Private
        assert BAIClPlusPlus is Private and issubclass(BAIClPlusPlus, BAICl)
        assert bandits.__all__.count("BAIClPlusPlus") == 1
        import importlib
        importlib.reload(enable_bai_cl_plus_plus)  # a second enable adds nothing
        assert bandits.__all__.count("BAIClPlusPlus") == 1
        print("ok")
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_other_missing_names_are_attribute_errors():
    import pytest

    import sklearn_icml.bandits as bandits

    with pytest.raises(AttributeError, match="NoSuchBandit"):
        bandits.NoSuchBandit  # noqa: B018
