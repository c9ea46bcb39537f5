"""ARCHITECTURE.md's tables agree with the code: the layout and the method map name modules that
exist and every private module of a method's subpackage; the base table names the bases of
``sklearn_icml.base``; the extras table is pyproject.toml's optional dependencies; the glossary
has a row for every name ``tests/test_vocabulary.py`` enforces.
"""

import importlib
import re
import tomllib
from pathlib import Path

import pytest

import sklearn_icml
import sklearn_icml.base

from .test_vocabulary import SYNONYMS

ROOT = Path(sklearn_icml.__file__).resolve().parent.parent
PACKAGE = ROOT / "sklearn_icml"
TEXT = (ROOT / "ARCHITECTURE.md").read_text()


def _section(title):
    """The text of the ``## title`` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", TEXT, re.M | re.S)
    assert match, f"ARCHITECTURE.md has no section {title!r}"
    return match.group(1)


def _table(title):
    """The rows (lists of cells) of the first table of a section, header and rule left out."""
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in _section(title).splitlines()
        if line.startswith("|")
    ]
    return rows[2:]


def _ticked(cell):
    return re.findall(r"`([^`]+)`", cell)


def _layout_paths():
    """(path relative to the repository, line) of every file or folder the layout names."""
    block = re.search(r"```\n(.*?)```", _section("Layout"), re.S).group(1)
    stack = []  # (indent, folder)
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.split()[0]
        if indent == 0 and "," in line.split("  ")[0]:  # "LICENSE, CHANGELOG.md, ..."
            for name in line.split("  ")[0].split(","):
                yield name.strip(), line
            stack = []
            continue
        is_path = re.fullmatch(r"[\w.<>-]+(/[\w.<>-]+)*/?", first) and (
            first.endswith("/") or "." in first or first == "Makefile"
        )
        if not is_path:
            continue  # a continuation line of a description
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([folder for _, folder in stack] + [first.rstrip("/")])
        if first.endswith("/"):
            stack.append((indent, first.rstrip("/")))
        if "<" not in path:
            yield path, line


def test_layout_names_existing_paths():
    paths = list(_layout_paths())
    assert any(p == "sklearn_icml/utils/_param_validation.py" for p, _ in paths)
    missing = [f"{path}  ({line.strip()})" for path, line in paths if not (ROOT / path).exists()]
    assert not missing, "ARCHITECTURE.md's layout names paths that do not exist:\n" + "\n".join(
        missing
    )


def test_layout_names_every_utils_module():
    named = {path for path, _ in _layout_paths()}
    unnamed = [
        f"sklearn_icml/utils/{p.name}"
        for p in sorted((PACKAGE / "utils").glob("*.py"))
        if p.name != "__init__.py" and f"sklearn_icml/utils/{p.name}" not in named
    ]
    assert not unnamed, "utils modules missing from ARCHITECTURE.md's layout: " + ", ".join(
        unnamed
    )


def _method_map():
    """{subpackage: (set of private modules named, list of public names named)}."""
    out = {}
    for row in _table("Method map"):
        _, sub, modules, public = row
        (sub,) = _ticked(sub)
        named, names = out.setdefault(sub, (set(), []))
        named.update(m for m in _ticked(modules) if re.fullmatch(r"_\w+", m))
        names.extend(n for n in _ticked(public) if re.fullmatch(r"[A-Za-z]\w*", n))
    return out


def test_method_map_names_existing_modules():
    missing = [
        f"sklearn_icml/{sub}/{module}.py"
        for sub, (modules, _) in sorted(_method_map().items())
        for module in sorted(modules)
        if not (PACKAGE / sub / f"{module}.py").is_file()
    ]
    assert not missing, "the method map names modules that do not exist:\n" + "\n".join(missing)


def test_method_map_names_every_private_module():
    unnamed = [
        f"sklearn_icml/{sub}/{path.name}"
        for sub, (modules, _) in sorted(_method_map().items())
        for path in sorted((PACKAGE / sub).glob("_*.py"))
        if path.name != "__init__.py" and path.stem not in modules
    ]
    assert not unnamed, (
        "private modules of a method's subpackage that the method map does not name (add them "
        "to their method's row, or fold them into a module it names):\n" + "\n".join(unnamed)
    )


def test_method_map_public_names_exist():
    from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa: F401

    missing = []
    for sub, (_, names) in sorted(_method_map().items()):
        module = importlib.import_module(f"sklearn_icml.{sub}")
        public = set(getattr(module, "__all__", ()))
        missing += [f"{sub}.{name}" for name in names if name not in public]
    assert not missing, "the method map names public names that are not in __all__: " + (
        ", ".join(missing)
    )


def test_base_table_names_the_bases():
    named = set()
    for row in _table("Base classes (`sklearn_icml/base.py`)"):
        named.update(n for n in _ticked(row[0]) if "." not in n)
    absent = sorted(n for n in named if not hasattr(sklearn_icml.base, n))
    assert not absent, f"the base table names classes sklearn_icml.base lacks: {absent}"
    bases = {
        n
        for n in sklearn_icml.base.__all__
        if isinstance(getattr(sklearn_icml.base, n), type)
        and (n.startswith("Base") or n.endswith("Mixin"))
    }
    assert bases <= named, f"bases missing from the base table: {sorted(bases - named)}"


def _pyproject_extras():
    """{extra: set of distributions, or ('extras', set of extras) for a nested reference}."""
    raw = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out = {}
    for extra, requirements in raw["optional-dependencies"].items():
        dists, nested = set(), set()
        for requirement in requirements:
            ref = re.fullmatch(r"sklearn-icml\[(.+)\]", requirement)
            if ref:
                nested.update(x.strip() for x in ref.group(1).split(","))
            else:
                dists.add(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower())
        out[extra] = (dists, nested)
    return out


def _extras_table():
    table = {}
    for row in _table("Extras"):
        (extra,) = _ticked(row[0])
        table[extra] = {name.lower() for name in _ticked(row[1])}
    return table


def test_extras_table_names_every_extra():
    assert sorted(_extras_table()) == sorted(_pyproject_extras())


@pytest.mark.parametrize("extra", sorted(_pyproject_extras()))
def test_extras_table_names_the_packages(extra):
    dists, nested = _pyproject_extras()[extra]
    assert _extras_table().get(extra) == dists | nested, (
        f"ARCHITECTURE.md's row of the extra {extra!r} must name what pyproject.toml installs"
    )


def test_glossary_has_the_enforced_names():
    words = {name for row in _table("Glossary") for name in _ticked(row[0])}
    enforced = {target for target in SYNONYMS.values() if "*" not in target}
    assert enforced <= words, f"glossary rows missing: {sorted(enforced - words)}"


def test_layout_parser_reads_nested_folders():
    paths = dict(_layout_paths())
    assert "sklearn_icml/utils/_deprecation.py" in paths
    assert "sklearn_icml/base.py" in paths
    assert "CONTRIBUTING.md" in paths
    assert not any("<" in path for path in paths)
