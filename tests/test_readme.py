"""The README's code runs as written, and the home page of the documentation shows the same
code, so that neither can rot."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
HOME = ROOT / "docs" / "index.rst"


def _markdown_python_blocks(path):
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.S | re.M)


def _rst_python_blocks(path):
    blocks = re.findall(r"^\.\. code-block:: python\n\n((?:(?: {3}.*)?\n)+)", path.read_text(),
                        flags=re.M)
    return [textwrap.dedent(block).strip("\n") + "\n" for block in blocks]


def _run(code, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_readme_blocks_found():
    blocks = _markdown_python_blocks(README)
    assert len(blocks) >= 2
    assert "CAPASimilarity" in blocks[0]


def test_home_page_shows_the_readme_code():
    assert _rst_python_blocks(HOME) == _markdown_python_blocks(README)


def test_quick_start_runs(tmp_path):
    """The first block of the README (the quick start) runs and prints what it promises: a
    progress line per model (verbose=1), then the names, their out-of-fold accuracies and a
    symmetric similarity matrix."""
    result = _run(_markdown_python_blocks(README)[0], tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    progress = [line for line in lines if line.startswith("[CAPASimilarity]")]
    assert [line.split()[1] for line in progress] == ["lr", "knn", "nb"], result.stdout
    assert all(re.search(r", \d+\.\d\d s$", line) for line in progress), result.stdout
    rest = lines[len(progress):]
    assert rest[0].startswith("['lr', 'knn', 'nb'] [0.9"), result.stdout
    assert len(rest) == 4  # the names and accuracies, then three rows of the matrix


@pytest.mark.parametrize("k", range(1, len(_markdown_python_blocks(README))))
def test_other_readme_blocks_run(k, tmp_path):
    result = _run(_markdown_python_blocks(README)[k], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
