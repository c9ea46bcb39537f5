"""``.. example-figure:: <example name>``: a gallery example's figure on a user-guide page.

The full build (``make docs``) runs the examples, and the directive shows the first figure of
``examples/<name>.py`` with a link to the example; a figure that is missing there is a
warning (an error under ``-W``). The fast build (``plot_gallery=0``) runs no example and has
no figure: the directive then shows only the link, unless an earlier full build left the
figure in ``docs/auto_examples/images``.
"""

from pathlib import Path

from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


def _gallery_executed(config):
    value = config.plot_gallery
    return str(value).strip().lower() not in {"0", "false", "no", "off", ""}


class ExampleFigure(SphinxDirective):
    """Show the figure of one gallery example and link the example."""

    required_arguments = 1
    optional_arguments = 0
    has_content = True
    option_spec = {"width": directives.unchanged, "index": directives.nonnegative_int}

    def run(self):
        name = self.arguments[0]
        index = self.options.get("index", 1)
        image = f"auto_examples/images/sphx_glr_{name}_{index:03d}.png"
        exists = (Path(self.env.srcdir) / image).exists()
        caption = " ".join(line.strip() for line in self.content)
        caption = caption or f"The figure of the example ``{name}``."
        link = f":ref:`sphx_glr_auto_examples_{name}.py`"
        if exists:
            text = (
                f".. figure:: /{image}\n   :width: {self.options.get('width', '100%')}\n\n"
                f"   {caption} Code: {link}.\n"
            )
        else:
            if _gallery_executed(self.config):
                logger.warning(
                    "example-figure: %s has no figure %s (did the example run?)",
                    name, image, location=self.get_location(),
                )
            text = (
                f".. note::\n\n   The figure of this section is drawn by the example {link}; "
                f"``make docs`` runs it and shows it here.\n"
            )
        return self.parse_text_to_nodes(text)


def setup(app):
    app.add_directive("example-figure", ExampleFigure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
