"""Check that the API reference lists every public name, and nothing that is not public.

Each ``docs/api/<subpackage>.rst`` lists the names of ``sklearn_icml.<subpackage>.__all__`` in
``autosummary`` blocks. A name added to ``__all__`` and not to the reference (or listed but no
longer public) is reported: as a Sphinx warning during the build (an error under ``-W``), or by
``python docs/_ext/api_coverage.py``, which exits with status 1.
"""

import importlib
import re
import sys
from pathlib import Path

API_DIR = Path(__file__).resolve().parents[1] / "api"
# names listed in the reference that are public without being in ``__all__``
EXTRA_PUBLIC = {"bandits": {"BAIClPlusPlus"}}  # behind sklearn_icml.experimental


def _listed_names(rst_text):
    """Return the entries of the autosummary blocks of one reference page."""
    names, in_block = set(), False
    for line in rst_text.splitlines():
        if line.startswith(".. autosummary::"):
            in_block = True
            continue
        if in_block:
            if not line.strip() or line.lstrip().startswith(":"):
                continue
            if line.startswith("   "):
                names.add(line.strip())
                continue
            in_block = False
    return names


def public_subpackages():
    """Return the documented modules: every subpackage of ``__all__`` and ``base``."""
    import sklearn_icml

    return [name for name in sklearn_icml.__all__ if not name.startswith("_")] + ["base"]


def coverage_problems():
    """Return one message per public name missing from the reference, or listed but not public."""
    problems = []
    for sub in public_subpackages():
        module = importlib.import_module(f"sklearn_icml.{sub}")
        public = set(getattr(module, "__all__", ())) | EXTRA_PUBLIC.get(sub, set())
        page = API_DIR / f"{sub}.rst"
        if not page.exists():
            problems.append(f"docs/api/{sub}.rst is missing: sklearn_icml.{sub} has no page")
            continue
        listed = _listed_names(page.read_text())
        for name in sorted(public - listed):
            problems.append(f"sklearn_icml.{sub}.{name} is public but not in docs/api/{sub}.rst")
        for name in sorted(listed - public):
            problems.append(f"docs/api/{sub}.rst lists {name}, not exported by sklearn_icml.{sub}")
    index = (API_DIR / "index.rst").read_text()
    for sub in public_subpackages():
        if not re.search(rf"^\s+{re.escape(sub)}$", index, re.MULTILINE):
            problems.append(f"docs/api/index.rst does not link docs/api/{sub}.rst")
    return problems


def _check(app):
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa: F401

    for message in coverage_problems():
        logger.warning("API reference: %s", message, type="api_coverage")


def setup(app):
    app.connect("builder-inited", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    sys.path.insert(0, str(API_DIR.parents[1]))
    found = coverage_problems()
    print("\n".join(found) or "every public name is in the API reference")
    sys.exit(1 if found else 0)
