"""Sphinx configuration of the sklearn-icml documentation.

``make docs`` builds the site with the example gallery executed; ``make docs-fast`` (part of
``make test``) builds it without running the examples (``-D plot_gallery=0``), with warnings
as errors, so that a broken reference, a malformed or missing docstring section, or a public
name missing from the API reference fails.
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

os.environ.setdefault("MPLBACKEND", "Agg")
# the examples and the doctests of some names bound torch to few threads themselves; the
# gallery runs examples one after another on a 2-core machine
os.environ.setdefault("OMP_NUM_THREADS", "2")

import sklearn_icml  # noqa: E402
from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa: E402, F401

project = "sklearn-icml"
author = "sklearn-icml developers"
copyright = "2026, sklearn-icml developers"
version = release = sklearn_icml.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "api_coverage",
    "example_figure",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**/sg_execution_times.rst"]
default_role = "literal"
# every cross-reference must resolve, except those to other projects (no intersphinx: the
# build runs offline), to private names, and bare method / attribute names written inside a
# docstring (``:meth:`fit```), which autodoc resolves only where it documents that member
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|scipy|sklearn|torch|skorch|gymnasium|joblib|dask|pandas|peft)(\..*)?"),
    (r"py:.*", r"numpy:.*"),
    (r"py:.*", r".*\._\w+.*"),
    (r"py:(meth|attr|obj)", r"_?[A-Za-z]\w*"),
]
# private helpers that docstrings name without their module
nitpick_ignore = [
    ("py:func", "kd_loss"),
    ("py:func", "importance_weights"),
    ("py:func", "direction_bayes_accuracy"),
    ("py:func", "adapter_affinity"),
    ("py:class", "MultiHeadMLP"),
]
suppress_warnings = [
    # the results files start at "#" and some jump to "###"; that is their own layout
    "myst.header",
]

# -- autodoc / autosummary / numpydoc -------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
# a member without a docstring of its own is left out, rather than shown with the docstring of
# a torch, gymnasium or skorch parent written for another context and in another style
autodoc_inherit_docstrings = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# a docstring that lacks what every public name must have fails the fast build:
# GL08 no docstring, PR01 a parameter not documented, PR02 an unknown parameter documented,
# RT01 a function that returns without a Returns section, SS01 no summary, YD01 no Yields;
# (numpydoc itself warns on an unknown or malformed section)
numpydoc_validation_checks = {"GL08", "PR01", "PR02", "RT01", "SS01", "YD01"}
numpydoc_validation_exclude = {
    # inherited from scikit-learn, skorch and torch: their docstrings are theirs
    r"\.get_params$",
    r"\.set_params$",
    r"\.set_output$",
    r"\.set_.*_request$",
    r"\.get_metadata_routing$",
    r"\.__init__$",
    # methods and attributes: their docstrings are parsed (a malformed section still fails),
    # but only the public names themselves must have every section
    r"^sklearn_icml\.\w+\.\w+\.\w+$",
    # records (dataclasses): their fields are documented under Attributes, not Parameters
    r"^sklearn_icml\.bandits\.SEResult$",
    r"^sklearn_icml\.mas\.MASResult$",
    r"^sklearn_icml\.mas\.ProgramCheck$",
}

# -- sphinx-gallery ---------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    # every script of examples/ is executed in the full build, not only plot_*.py
    "filename_pattern": r"\.py$",
    # the headline methods first, in the user guide's order (docs/_ext/gallery_figures.py)
    "within_subsection_order": "gallery_figures.HeadlineOrder",
    "ignore_pattern": r"(__init__|_harness)\.py$",
    "reset_argv": "example_argv.example_argv",
    "doc_module": ("sklearn_icml",),
    "backreferences_dir": "api/generated/backreferences",
    "reference_url": {"sklearn_icml": None},
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 5,
    "matplotlib_animations": False,
    # matplotlib's scraper, which also stores each example's figure and first panel under
    # _static/figures/: the user-guide pages and the gallery's thumbnails show them in every
    # build, the fast one included (docs/_ext/gallery_figures.py)
    "image_scrapers": ("gallery_figures",),
    "capture_repr": (),
    "show_memory": False,
}

# -- HTML --------------------------------------------------------------------------------------
toc_object_entries_show_parents = "hide"
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-icml {version}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "header_links_before_dropdown": 7,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "getting_started": []}
html_context = {"default_mode": "light"}


# -- docstring hooks ---------------------------------------------------------------------------
import pkgutil  # noqa: E402
import re  # noqa: E402

# a fitted attribute named in running text, ``(n_features_in_,)`` say, ends with "_", which
# reStructuredText reads as a link to a target of that name; escape the underscore outside
# literals, doctests and literal blocks (the library writes attributes that way throughout)
_TRAILING_UNDERSCORE = re.compile(r"(?<![\w`\\])([A-Za-z]\w*?)_(?=[\s,.;:)\]]|$)")


def _escape_outside_literals(text):
    parts = re.split(r"(``.*?``|`[^`]*`_?)", text)
    return "".join(p if k % 2 else _TRAILING_UNDERSCORE.sub(r"\1\\_", p)
                   for k, p in enumerate(parts))


def _escape_attribute_names(app, what, name, obj, options, lines):
    in_literal, literal_indent = False, 0
    # inside an inline ``literal`` that a docstring wraps onto the next line
    # (``F(x) = intercept_ + sum_t`` / ``s_t(x)``): nothing there is escaped
    in_inline = False
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if not stripped:
            in_inline = False
        if in_literal:
            if stripped and indent <= literal_indent:
                in_literal = False
            else:
                continue
        if stripped.startswith((">>>", "...")) or stripped.startswith(".. "):
            if stripped.startswith((".. code", ".. math")):
                in_literal, literal_indent = True, indent
            continue
        head, rest = "", line
        if in_inline:
            close = line.find("``")
            if close < 0:
                continue
            head, rest, in_inline = line[:close + 2], line[close + 2:], False
        tail = ""
        opened = [m for m in re.finditer(r"``.*?``|``", rest)]
        if opened and opened[-1].group() == "``":
            rest, tail, in_inline = rest[:opened[-1].start()], rest[opened[-1].start():], True
        lines[i] = head + _escape_outside_literals(rest) + tail
        if line.rstrip().endswith("::"):
            in_literal, literal_indent = True, indent


def _data_docstring(app, what, name, obj, options, lines):
    """Document a module-level constant by its ``#:`` comment, not its type's docstring."""
    if what != "data" or "\n".join(lines).strip() != (type(obj).__doc__ or "").strip():
        return
    from sphinx.pycode import ModuleAnalyzer

    package, attr = name.rsplit(".", 1)
    package_module = sys.modules[package]
    for info in pkgutil.iter_modules(package_module.__path__, package + "."):
        try:
            docs = ModuleAnalyzer.for_module(info.name).find_attr_docs()
        except Exception:  # a module the analyzer cannot read has no attribute comments
            continue
        if ("", attr) in docs:
            lines[:] = list(docs[("", attr)])
            return
    lines[:] = []


def _skip_metadata_routing(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated ``set_*_request`` methods (documented there) and
    the old names in their deprecation cycle (CHANGELOG.md lists them with their new ones)."""
    if re.fullmatch(r"set_\w+_request|get_metadata_routing", name):
        return True
    function = getattr(obj, "__func__", obj)
    if getattr(function, "__deprecated__", None) is not None:
        return True
    if (getattr(function, "__doc__", None) or "").lstrip().startswith("Deprecated"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_routing)
    app.connect("autodoc-process-docstring", _data_docstring, priority=100)
    app.connect("autodoc-process-docstring", _escape_attribute_names, priority=600)
