"""Numbered figures. A chapter shows each figure as an output marked with its label and caption (`Results.figure`); the
edition moves each marked output into a cell of its own whose metadata asks MyST-NB for a figure, so the page numbers
it, puts the caption under it and lets prose point to it with {numref}`fig-05-training-curves`."""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import nbformat  # notebook tooling: staging only, not where a chapter executes (`lib.edition.headless`)


KEY = "book_figure"  # output metadata: {"name": label, "caption": MyST text, "alt": what it shows (optional)}
CONTINUED = "# (continued)"  # the hidden input of a cell that holds the outputs after a figure


def label(chapter: str, name: str) -> str:
    """A figure's reference target, fig-<chapter number>-<name>: label("05_pretraining", "training_curves") is
    "fig-05-training-curves"."""
    return f"fig-{chapter[:2]}-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}"


def number_figures(nb: nbformat.NotebookNode) -> None:
    """Split every code cell at its marked figure outputs: the outputs before a figure stay with the cell, the figure gets
    a cell of its own (input hidden) with MyST-NB's figure options, later outputs follow in a cell with hidden input. The
    order of everything on the page is unchanged."""
    cells = []
    for cell in nb.cells:
        outputs = cell.get("outputs", []) if cell.cell_type == "code" else []
        if not any(KEY in output.get("metadata", {}) for output in outputs):
            cells.append(cell)
            continue
        current = copy.deepcopy(cell)
        current.outputs = []
        base = cell.get("id", "cell")[:40]
        for n, output in enumerate(outputs):
            figure = output.get("metadata", {}).get(KEY)
            if figure is None:
                current.outputs.append(output)
                continue
            if _worth_keeping(current):
                cells.append(current)
            options = {"figure": {"name": figure["name"], "caption": figure["caption"]}, "image": {"alt": alt_text(figure.get("alt") or figure["caption"])}}
            cells.append(_cell(f"{base}-figure-{n}", f"# {figure['name']}", {"tags": ["remove-input"], "mystnb": options}, [output]))
            current = _cell(f"{base}-after-{n}", CONTINUED, {"tags": ["remove-input"]}, [])
        if _worth_keeping(current):
            cells.append(current)
    nb.cells = cells


def alt_text(caption: str) -> str:
    """A figure's alternative text: its caption without MyST markup (roles keep their text, marks and math signs go)."""
    text = re.sub(r"\{[a-z:]+\}`([^`<]*?)\s*(?:<[^`]*>)?`", r"\1", caption)  # {numref}`Fig. 2 <fig-x>` -> Fig. 2
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](link) -> text
    return re.sub(r"\s+", " ", re.sub(r"[`*_$\\]", "", text)).strip()


def _worth_keeping(cell: nbformat.NotebookNode) -> bool:
    """A cell with outputs, or the original cell's code (a continuation cell without outputs is dropped)."""
    return bool(cell.outputs) or cell.source not in ("", CONTINUED)


def _cell(cell_id: str, comment: str, metadata: dict, outputs: list) -> nbformat.NotebookNode:
    """A code cell holding only a comment (MyST-NB skips empty cells; the page hides the input) with a fixed id (a random
    one would change the staged page on every build)."""
    import nbformat

    cell = nbformat.v4.new_code_cell(comment, metadata=metadata, outputs=outputs)
    cell.id = cell_id
    return cell
