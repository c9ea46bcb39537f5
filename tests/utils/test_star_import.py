"""``from sklearn_icml.<subpackage> import *`` works without torch and binds the numpy names.

Every subpackage that imports without torch offers its torch names lazily; ``__all__`` lists
them only where their dependencies are installed, so ``import *`` no longer fails on them.
Torch is made unimportable in a subprocess by a finder that raises ModuleNotFoundError, as an
environment without torch does.
"""

import json
import subprocess
import sys
from pathlib import Path

import sklearn_icml
from sklearn_icml.utils.discovery import NEURAL_SUBPACKAGES

ROOT = Path(sklearn_icml.__file__).resolve().parent.parent

NO_TORCH = '''import importlib, importlib.abc, json, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "skorch"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoTorch())
'''


def _run(code):
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_star_import_of_every_subpackage_without_torch():
    code = NO_TORCH + (
        "report = {}\n"
        f"for sub in {list(sklearn_icml._SUBPACKAGES)!r}:\n"
        "    try:\n"
        "        module = importlib.import_module('sklearn_icml.' + sub)\n"
        "    except ImportError:\n"
        "        report[sub] = None\n"
        "        continue\n"
        "    namespace = {}\n"
        "    exec(f'from sklearn_icml.{sub} import *', namespace)\n"
        "    namespace.pop('__builtins__')\n"
        "    report[sub] = [sorted(namespace), sorted(module.__all__)]\n"
        "report['torch imported'] = 'torch' in sys.modules\n"
        "print(json.dumps(report))\n"
    )
    report = _run(code)
    assert report.pop("torch imported") is False
    failing = {sub for sub, got in report.items() if got is None}
    assert failing == set(NEURAL_SUBPACKAGES)  # these need torch to be imported at all
    for sub, got in report.items():
        if got is None:
            continue
        bound, public = got
        module = getattr(sklearn_icml, sub)
        torch_names = set(getattr(module, "_TORCH_NAMES", ()))
        # experimental names join __all__ once enabled (as another test may have done here)
        experimental = set(getattr(module, "_EXPERIMENTAL", ()))
        numpy_names = set(module.__all__) - torch_names - experimental
        assert set(bound) == set(public), sub
        assert numpy_names <= set(bound), (sub, sorted(numpy_names - set(bound)))
    assert "DPStratifiedSampler" in report["privacy"][0]
    assert "DPSGDClassifier" not in report["privacy"][0]
    assert "GDICLPredictor" in report["neural"][0]
    assert "StreamingParityRNNClassifier" not in report["neural"][0]
    assert "TabularPreferencePolicy" in report["alignment"][0]
    assert "EVOAgent" not in report["safe_rl"][0]
    assert "AdaptiveContextCodec" in report["compression"][0]
