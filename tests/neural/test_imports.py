"""The numpy-only names of sklearn_icml.neural import without torch; the others lazily."""

import subprocess
import sys

import sklearn_icml.neural as neural

NUMPY_NAMES = sorted(set(neural.__all__) - neural._TORCH_NAMES)


def test_numpy_names_do_not_import_torch():
    code = (
        "import sys\n"
        f"from sklearn_icml.neural import {', '.join(NUMPY_NAMES)}\n"
        "from sklearn_icml.neural import GDICLPredictor, LinearICLTaskSampler\n"
        "X, y = LinearICLTaskSampler(random_state=0).sample(50)\n"
        "GDICLPredictor().fit(X, y).predict(X)\n"
        "heavy = [m for m in ('torch', 'skorch') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the numpy-only names imported {out.stdout.strip()}"


def test_torch_names_are_public_and_lazy():
    assert neural._TORCH_NAMES == {
        "MultiHeadAttentionICLModule",
        "MultiHeadSoftmaxICLRegressor",
        "ParityRNNModule",
        "StreamingParityRNNClassifier",
    }
    assert neural._TORCH_NAMES <= set(neural.__all__)
    assert "extract_automaton" in NUMPY_NAMES and "GDICLPredictor" in NUMPY_NAMES
    # the plumbing the nets use is private
    assert "LengthBucketLoader" not in neural.__all__
    assert "OnlinePromptLoader" not in neural.__all__
