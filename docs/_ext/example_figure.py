"""``.. example-figure:: <example name>``: a gallery example's figure on a user-guide page.

The directive shows the figure of ``examples/<name>.py`` with a caption and a link to the
example. The figure is the committed image ``docs/_static/figures/<name>.png``, so every
build shows it, the fast one (``make docs-fast``, no example run) included; the full build
(``make docs``) runs the examples and refreshes the images (:mod:`gallery_figures`). An
example without its image is a warning (an error under ``-W``).
"""

from docutils.parsers.rst import directives
from gallery_figures import FIGURES
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


class ExampleFigure(SphinxDirective):
    """Show the figure of one gallery example and link the example."""

    required_arguments = 1
    optional_arguments = 0
    has_content = True
    option_spec = {"width": directives.unchanged, "index": directives.nonnegative_int}

    def run(self):
        name = self.arguments[0]
        index = self.options.get("index", 1)
        stem = name if index == 1 else f"{name}_{index}"
        image = FIGURES / f"{stem}.png"
        caption = " ".join(line.strip() for line in self.content)
        caption = caption or f"The figure of the example ``{name}``."
        link = f":ref:`sphx_glr_auto_examples_{name}.py`"
        if not image.exists():
            logger.warning(
                "example-figure: %s has no image %s (run `make docs`, or "
                "`python docs/_ext/gallery_figures.py examples/%s.py`)",
                name, image.relative_to(FIGURES.parents[1]), name,
                location=self.get_location(),
            )
            text = f"The figure of this section is drawn by the example {link}.\n"
            return self.parse_text_to_nodes(text)
        self.env.note_dependency(str(image))
        # at its own size (100 pixels per inch of the figure), never wider than the page
        width = f"   :width: {self.options['width']}\n" if "width" in self.options else ""
        text = (
            f".. figure:: /_static/figures/{stem}.png\n{width}"
            f"   :alt: {caption}\n\n"
            f"   {caption} Code: {link}.\n"
        )
        return self.parse_text_to_nodes(text)


def setup(app):
    app.add_directive("example-figure", ExampleFigure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
