"""The command line sphinx-gallery gives each example (``reset_argv``)."""

from pathlib import Path

EXAMPLE_OUTPUT = Path(__file__).resolve().parents[1] / "_build" / "example-output"


def example_argv(gallery_conf, script_vars):
    """Give every example an output path under docs/_build instead of its own folder."""
    EXAMPLE_OUTPUT.mkdir(parents=True, exist_ok=True)
    return [str(EXAMPLE_OUTPUT / (Path(script_vars["src_file"]).stem + ".png"))]
