"""The gallery's figures as committed images, so that every build shows them.

The full build (``make docs``) runs the examples; this module's image scraper, used by
sphinx-gallery in place of its own matplotlib scraper, also writes two small images of each
example's first figure under ``docs/_static/figures/``:

* ``<example>.png``, the whole figure, which ``.. example-figure::`` shows on the user-guide
  page (:mod:`example_figure`);
* ``<example>_thumb.png``, the first panel alone, which the example names as its gallery
  thumbnail (``# sphinx_gallery_thumbnail_path = "_static/figures/<example>_thumb.png"``).

The images are committed: the fast build (``make docs-fast``, part of ``make test``) runs no
example and shows them as the last full build left them. They are written only when their
content changed, as 256-colour PNGs (tens of kB each).

``HeadlineOrder`` orders the gallery as the user guide does: the methods a data scientist
reaches for first come first.

To refresh the images of a few examples without the full build::

    python docs/_ext/gallery_figures.py examples/capa_similarity.py ...
"""

import io
import runpy
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
FIGURES = DOCS / "_static" / "figures"

#: the examples in the order of the user guide's table (headline methods first); an example
#: not listed here comes after these, by file name
ORDER = [
    # tabular data
    "stump_forest_gam",
    "ptib_clustering",
    "capa_similarity",
    # differential privacy
    "dp_stratified_sampling",
    "privacy_amplification_partitioning",
    # online experiments and bandits
    "bandits_with_interference",
    "multi_agent_bai",
    # language models and adapters
    "lora_joint_compression",
    "flat_lora",
    "data_weighting_model",
    "offline_preference_losses",
    "mas_gpt",
    # other data and research methods
    "lwi_continual_learning",
    "serlic_reflectance_compression",
    "serlic_real_lidar",
    "f16_high_frame_rate_video",
    "cellflux_flow_matching",
    "evo_constrained_rl",
    "icl_multihead_attention",
    "streaming_parity_rnn",
]

# widest image kept for a page (pixels); a wider figure is scaled down before it is stored
MAX_WIDTH = 1300

#: the panel of the first figure that makes an example's thumbnail, where the first panel (0)
#: is not the one that tells the story: an index into the figure's axes that hold data, or
#: "figure" for the whole figure (a grid of images reads better whole)
THUMBNAIL_PANEL = {
    "cellflux_flow_matching": "figure",
    "icl_multihead_attention": -1,
    "offline_preference_losses": 6,
    "serlic_real_lidar": 1,
}


class HeadlineOrder:
    """sphinx-gallery's ``within_subsection_order``: the order of :data:`ORDER`."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        stem = Path(filename).stem
        return (ORDER.index(stem), "") if stem in ORDER else (len(ORDER), stem)

    def __repr__(self):
        return "HeadlineOrder"


def _compressed_png(png_bytes, max_width=MAX_WIDTH):
    from PIL import Image

    image = Image.open(io.BytesIO(png_bytes)).convert("RGB")
    if image.width > max_width:
        height = round(image.height * max_width / image.width)
        image = image.resize((max_width, height), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
        buffer, format="PNG", optimize=True
    )
    return buffer.getvalue()


def _write_if_changed(path, data):
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def save_figure_images(fig, name, index=1, out_dir=FIGURES):
    """Write ``<name>.png`` (the figure) and, for the first figure, ``<name>_thumb.png``."""
    stem = name if index == 1 else f"{name}_{index}"
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, facecolor="white")
    written = [out_dir / f"{stem}.png"] if _write_if_changed(
        out_dir / f"{stem}.png", _compressed_png(buffer.getvalue())) else []
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.has_data()]
    panel = THUMBNAIL_PANEL.get(name, 0)
    if index == 1 and axes:
        # one panel with its labels and title, padded a little, as a single-panel figure
        if panel == "figure":
            box = "tight"
        else:
            renderer = fig.canvas.get_renderer()
            box = axes[panel].get_tightbbox(renderer).transformed(
                fig.dpi_scale_trans.inverted()).padded(0.08)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=150, facecolor="white", bbox_inches=box)
        thumb = out_dir / f"{name}_thumb.png"
        if _write_if_changed(thumb, _compressed_png(buffer.getvalue(), max_width=700)):
            written.append(thumb)
    return written


class FigureScraper:
    """sphinx-gallery's matplotlib scraper that also stores the figures under ``_static``."""

    def __call__(self, block, block_vars, gallery_conf):
        import matplotlib.pyplot as plt
        from sphinx_gallery.scrapers import matplotlib_scraper

        name = Path(block_vars["src_file"]).stem
        done = block_vars.setdefault("_figures_saved", 0)
        for k, number in enumerate(plt.get_fignums(), start=done + 1):
            save_figure_images(plt.figure(number), name, index=k)
            block_vars["_figures_saved"] = k
        return matplotlib_scraper(block, block_vars, gallery_conf)

    def __repr__(self):
        return "FigureScraper"


def _get_sg_image_scraper():
    """sphinx-gallery looks this name up for ``image_scrapers = ("gallery_figures",)``."""
    return FigureScraper()


def _run_example(path):
    """Run one example as the gallery does (its output path under docs/_build) and store
    the images of its figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path).resolve()
    out = DOCS / "_build" / "example-output" / f"{path.stem}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    sys.argv = [str(path), str(out)]
    plt.show = lambda *args, **kwargs: None
    runpy.run_path(str(path), run_name="__main__")
    for k, number in enumerate(plt.get_fignums(), start=1):
        for written in save_figure_images(plt.figure(number), path.stem, index=k):
            print(f"wrote {written.relative_to(DOCS)} ({written.stat().st_size // 1024} kB)")
    plt.close("all")


if __name__ == "__main__":
    for example in sys.argv[1:]:
        _run_example(example)
