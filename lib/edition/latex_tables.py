"""A Sphinx extension for the PDF's long tables: a table that may not fit on one page breaks across pages.

Sphinx typesets a table as `tabulary`, which cannot break, so a table taller than the page runs over the footer and
off it; from 31 rows on it uses `longtable`, but with columns that never wrap, so a table of sentences runs off the
right edge. In the LaTeX build this extension makes every long table (more than `ROWS` rows, or more than `CHARACTERS`
characters of text) a `longtable` whose columns wrap, each as wide as its content asks (the longest cell, at most
`WIDEST` characters' worth; a word never breaks). A short table of class `wrap` (the scorecard's evidence tables,
whose columns wrap on the web too) gets the same widths: left to `tabulary`, its model column shrank below one word
("all-MiniLM-L6-v2" ran 22 pt past it). The web pages are unchanged.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

ROWS = 30  # Sphinx's own limit for tabulary
CHARACTERS = 2500  # about a page of table text
WIDEST = 40


def column_widths(rows: list[list[str]]) -> list[int]:
    """Relative column widths for wrapped columns: each column's longest cell, at least its longest word and a margin
    for bold headers and padding, capped at `WIDEST` (a column of sentences wraps, a column of numbers keeps its width)."""
    widths = []
    for column in zip(*rows):
        longest = max((len(text) for text in column), default=1)
        word = max((len(w) for text in column for w in text.split()), default=1)
        widths.append(max(4, word + 3, min(longest, WIDEST)))
    return widths


def _wrap_long_tables(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "latex":
        return
    for table in doctree.findall(nodes.table):
        rows = [[entry.astext() for entry in row.findall(nodes.entry)] for row in table.findall(nodes.row)]
        long = len(rows) > ROWS or sum(len(text) for row in rows for text in row) > CHARACTERS
        if not long and "wrap" not in table["classes"]:
            continue
        if long:
            table["classes"] = [*table["classes"], "longtable"]
        if "colwidths-given" in table["classes"] or any(len(row) != len(rows[0]) for row in rows):
            continue
        for spec, width in zip(table.findall(nodes.colspec), column_widths(rows)):
            spec["colwidth"] = width
        table["classes"].append("colwidths-given")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", _wrap_long_tables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
