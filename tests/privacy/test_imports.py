"""``from sklearn_icml.privacy import *``: the numpy names without torch, every name with it."""

import subprocess
import sys

import sklearn_icml.privacy as privacy

from ..utils.test_star_import import NO_TORCH, ROOT, _run


def test_star_import_without_torch_gives_the_numpy_names():
    bound = _run(
        NO_TORCH + "namespace = {}\n"
        "exec('from sklearn_icml.privacy import *', namespace)\n"
        "print(json.dumps(sorted(set(namespace) - {'__builtins__'})))\n"
    )
    assert set(bound) == set(privacy.__all__) - {"DPSGDClassifier"}
    assert {"DPStratifiedSampler", "PartitionRDPAccountant", "laplace_mechanism"} <= set(bound)


def test_all_lists_the_torch_names_without_importing_torch_and_star_binds_them():
    assert "DPSGDClassifier" in privacy.__all__
    assert "DPSGDClassifier" in dir(privacy) and "__all__" in dir(privacy)
    code = (
        "import sys, sklearn_icml.privacy as p\n"
        "assert 'DPSGDClassifier' in p.__all__ and 'torch' not in sys.modules\n"
        "from sklearn_icml.privacy import *\n"
        "print(DPSGDClassifier.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "DPSGDClassifier"
