"""Figures with one readable style: labelled axes, legible fonts, colour-blind-safe colours. A figure has no title of
its own where the book gives it a caption (`Results.figure`): panels are titled, the figure is not."""

from __future__ import annotations

import math
import textwrap

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.layout_engine import PlaceHolderLayoutEngine

COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def style() -> None:
    """Book-wide matplotlib defaults."""
    plt.rcParams.update(
        {
            "figure.dpi": 110,
            "savefig.dpi": 150,
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "legend.fontsize": 10,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.prop_cycle": matplotlib.cycler(color=COLORS),
        }
    )


SMALLEST_TEXT = "Smallest text (px)"  # a PNG text entry: the smallest text's font size in the image's pixels (`smallest_text_px`)
PAGE_WIDTH = 7.5  # inches: a figure this wide is shown at about the text column's width, so its fonts print at their size
TALLEST = 1.45  # a grid's height over its width at most: more rows make flatter panels, not a figure of several screens


def grid(panels: int, columns: int = 2, panel_height: float = 3.0, **subplots):
    """A figure as wide as the text column (`PAGE_WIDTH`) with `panels` panels in rows of `columns` (fewer when there are
    fewer panels), spare cells removed: (figure, its panels in reading order). Rows are `panel_height` high until the
    figure would be taller than `TALLEST` times its width (a default edition's four models in Fig. 10.2 made it 1.8):
    then they share that height. Keyword arguments go to `plt.subplots`."""
    columns = max(1, min(columns, panels))
    rows = math.ceil(panels / columns)
    height = min(panel_height * rows + 0.3, TALLEST * PAGE_WIDTH)
    fig, axes = plt.subplots(rows, columns, figsize=(PAGE_WIDTH, height), squeeze=False, layout="constrained", **subplots)
    flat = list(axes.flat)
    for ax in flat[panels:]:
        ax.remove()
    return fig, flat[:panels]


def legend_above(fig, ax) -> None:
    """One legend for the figure, above its panels, with the entries of ax: in as many columns as fit the figure's width
    (one row when they fit; a default edition's longer model names would widen the figure past the column)."""
    handles, labels = ax.get_legend_handles_labels()
    for columns in range(len(labels), 0, -1):
        legend = fig.legend(handles, labels, loc="outside upper center", ncols=columns, frameon=False)
        if columns == 1 or legend.get_window_extent(fig.canvas.get_renderer()).width <= fig.bbox.width:
            return
        legend.remove()


def readable(fig) -> None:
    """Make a finished figure readable at the page's width: every text of a figure wider than `PAGE_WIDTH` scaled by
    its width over it (so that once the page shrinks the figure to the column, labels print at the sizes of `style`),
    the layout fitted again, titles and axis labels that outgrow their panel wrapped (`fit_labels`), then the point
    labels of each panel moved apart (`apart`)."""
    scale = fig.get_figwidth() / PAGE_WIDTH
    if scale > 1:
        for text in fig.findobj(matplotlib.text.Text):
            text.set_fontsize(text.get_fontsize() * scale)
    _layout(fig)
    for _ in range(3):  # wrapping changes the layout, and the layout the room: a few rounds settle it
        if not fit_labels(fig):
            break
        _layout(fig)
    for ax in fig.axes:
        apart([t for t in ax.texts if isinstance(t, matplotlib.text.Annotation) and t.anncoords == "offset points"])


def smallest_text_px(fig, dpi: float) -> float | None:
    """The font size of the figure's smallest visible text, in pixels of an image saved at `dpi`; None without text."""
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes) * dpi / 72 if sizes else None


TEXT_BOXES = "Text boxes (px)"  # a PNG text entry: JSON of `text_boxes` in the saved image's pixels


def text_boxes(fig, renderer) -> list[dict]:
    """Where the figure's legends and its panels' titles, axis labels and tick labels were drawn by `renderer`: one
    {"kind", "text", "box"} each, kind "legend", "title", "label" or "tick", box [left, top, right, bottom] in the
    renderer's pixels from the top left (called while a saved image is drawn: that image's pixels)."""
    found = [("legend", legend) for legend in fig.legends] + [("legend", ax.get_legend()) for ax in fig.axes if ax.get_legend()]
    for ax in fig.axes:
        found += [("title", ax.title), ("label", ax.xaxis.label), ("label", ax.yaxis.label)]
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            slack = 1e-9 * (high - low)  # a tick at an end of the axis, up to rounding: drawn (beyond it: not)
            ticks = [t for t in axis.get_major_ticks() + axis.get_minor_ticks() if low - slack <= t.get_loc() <= high + slack]
            found += [("tick", label) for t in ticks for label in (t.label1, t.label2)]
    boxes = []
    for kind, artist in found:
        text = "" if kind == "legend" else artist.get_text().strip()
        if artist.get_visible() and (kind == "legend" or text):
            box = artist.get_window_extent(renderer)
            boxes.append({"kind": kind, "text": text, "box": [round(v, 1) for v in (box.x0, renderer.height - box.y1, box.x1, renderer.height - box.y0)]})
    return boxes


def _layout(fig) -> None:
    engine = fig.get_layout_engine()
    if engine is None or isinstance(engine, PlaceHolderLayoutEngine):  # fig.tight_layout() leaves a placeholder that does nothing
        fig.tight_layout()
    else:
        engine.execute(fig)


def fit_labels(fig) -> bool:
    """Wrap each panel's title and x label that is wider than the panel, and its y label that is taller, onto as many
    lines as it needs (at spaces; never below 8 characters a line), so that it does not run into the neighbouring
    panel. True if any changed."""
    renderer = fig.canvas.get_renderer()
    changed = False
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        for text, room, along in ((ax.title, box.width, "width"), (ax.xaxis.label, box.width, "width"), (ax.yaxis.label, box.height, "height")):
            size = getattr(text.get_window_extent(renderer), along)
            if text.get_text() and size > room > 0:
                lines = text.get_text().split("\n")
                words = " ".join(lines)
                wrapped = textwrap.fill(words, max(8, int(max(map(len, lines)) * room / size)), break_long_words=False)
                changed |= wrapped != text.get_text()
                text.set_text(wrapped)
    return changed


def apart(labels: list) -> None:
    """Move point labels (annotations placed above or below their point) further out, one step at a time, until none
    overlaps a label placed before it."""
    if not labels:
        return
    labels[0].axes.autoscale_view()  # the axis limits the labels will be drawn in (autoscaling is otherwise lazy)
    renderer = labels[0].figure.canvas.get_renderer()
    placed = []
    for label in labels:
        x, y = label.xyann
        step = 10 if y >= 0 else -10
        for _ in range(8):
            box = label.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
            y += step
            label.xyann = (x, y)
        placed.append(label.get_window_extent(renderer))


def differences(ax, x, estimate, low, high, label: str, color: str, marker: str = "o", joined: bool = True) -> None:
    """Differences from a baseline with their 95% intervals, on `ax`: the estimates at the numeric positions `x` (joined
    by a line unless `joined` is false, for positions in no order such as tasks), each interval (`low` to `high`, the
    same length, in the axis's units) as an error bar, and a zero line ("no difference"), drawn once per panel.
    `label` is the series' legend entry, `color` one of `COLORS` (not the yellow, which is unreadable on white).
    Several series on one panel: shift each one's `x` a little so that intervals at one position do not hide each other."""
    x, estimate = np.asarray(x, dtype=float), np.asarray(estimate, dtype=float)
    below, above = np.maximum(estimate - np.asarray(low, dtype=float), 0), np.maximum(np.asarray(high, dtype=float) - estimate, 0)
    fmt = f"-{marker}" if joined else marker
    ax.errorbar(x, estimate, yerr=[below, above], fmt=fmt, color=color, ms=4, lw=1.2, elinewidth=1, capsize=2, label=label, zorder=3)
    if not any(line.get_gid() == "zero" for line in ax.lines):
        ax.axhline(0, color="0.4", lw=1.1, gid="zero", zorder=2)
