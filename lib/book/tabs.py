"""Per-model content in tabs. A chapter that shows a table or a figure once per model marks each with its model
(`show(..., tab=name)`, `Results.figure(..., tab=name)`); on the book's pages the edition puts every run of such
outputs of one cell into one set of tabs, a tab per model, so that eight models do not make a wall of repeated
figures. Tables and figures keep their numbers and labels; the PDF prints them one after the other."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from . import figure_labels
from .markdown import escape

if TYPE_CHECKING:
    import nbformat  # notebook tooling: staging only, not where a chapter executes (`lib.edition.headless`)

KEY = "book_tab"  # output metadata: the tab (model name) an output belongs to
FOLDER = "figures"  # beside the staged chapters: the images of figures that moved into tabs


def _figure(output: nbformat.NotebookNode, folder: Path, write: Callable[[Path, bytes], None]) -> str:
    """A marked figure output as a MyST figure directive whose image is written into folder."""
    meta = output["metadata"][figure_labels.KEY]
    image = folder / f"{meta['name']}.png"
    write(image, base64.b64decode(output["data"]["image/png"]))
    alt = figure_labels.alt_text(meta.get("alt") or meta["caption"])
    return f":::{{figure}} {FOLDER}/{image.name}\n:name: {meta['name']}\n:alt: {alt}\n\n{meta['caption']}\n:::\n"


def _content(output: nbformat.NotebookNode, folder: Path, write: Callable[[Path, bytes], None]) -> str:
    if figure_labels.KEY in output.get("metadata", {}):
        return _figure(output, folder, write)
    return output["data"]["text/markdown"]


def group(nb: nbformat.NotebookNode, folder: Path, write: Callable[[Path, bytes], None]) -> int:
    """Replace every run of consecutive tab-marked outputs of a cell (two tabs or more) by one output holding a MyST
    tab set; figure images go into folder (`write(path, bytes)`). The number of tab sets made."""
    made = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs, run = [], []
        for output in [*cell.get("outputs", []), None]:  # None closes the last run
            meta = {} if output is None else output.get("metadata", {})
            marked = KEY in meta and (figure_labels.KEY in meta or "text/markdown" in output.get("data", {}))
            if marked:
                run.append(output)
                continue
            if len({o["metadata"][KEY] for o in run}) >= 2:
                outputs.append(_tab_set(run, folder, write))
                made += 1
            else:
                outputs.extend(run)
            run = []
            if output is not None:
                outputs.append(output)
        cell.outputs = outputs
    return made


def _tab_set(run: list[nbformat.NotebookNode], folder: Path, write: Callable[[Path, bytes], None]) -> nbformat.NotebookNode:
    names = list(dict.fromkeys(o["metadata"][KEY] for o in run))
    items = []
    for name in names:
        body = "\n".join(_content(o, folder, write) for o in run if o["metadata"][KEY] == name)
        items.append(f"::::{{tab-item}} {escape(name)}\n{body}\n::::")  # a model's name, as text
    text = ":::::{tab-set}\n" + "\n".join(items) + "\n:::::\n"
    import nbformat

    return nbformat.v4.new_output("display_data", data={"text/markdown": text, "text/plain": f"[{len(names)} tabs: {', '.join(names)}]"})
