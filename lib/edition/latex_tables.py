"""A Sphinx extension for the PDF's long tables: a table that may not fit on one page breaks across pages.

Sphinx typesets a table as `tabulary`, which cannot break, so a table taller than the page runs over the footer and
off it; from 31 rows on it uses `longtable`, but with columns that never wrap, so a table of sentences runs off the
right edge. In the LaTeX build this extension makes every long table (more than `ROWS` rows, or more than `CHARACTERS`
characters of text) a `longtable` whose columns wrap, each as wide as its content asks (the longest cell, at most
`WIDEST` characters' worth; a word never breaks). A short table of a class in `WRAPPED` (the scorecard's evidence
tables and verdict matrices, whose columns wrap on the web too) gets the same widths: left to `tabulary`, its model
column shrank below one word ("all-MiniLM-L6-v2" ran 22 pt past it), and a matrix's badge "? 0.102 (0.065 to 0.103)"
below its interval. The web pages are unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

ROWS = 30  # Sphinx's own limit for tabulary
CHARACTERS = 2500  # about a page of table text
WIDEST = 40
WRAPPED = ("wrap", "book-verdicts")  # short tables that get their content's widths: the scorecard's evidence and its matrices
LINE = 90  # characters on a line of the PDF's text: 469 pt of 10 pt FreeSerif, 5.2 pt a character (its average is about 4.6)


def column_widths(rows: list[list[str]]) -> list[int]:
    """Relative column widths for wrapped columns, in characters of a `LINE`-character line. Each column asks for its
    longest cell, capped at `WIDEST` (a column of sentences wraps, a column of numbers keeps its width), and at least
    its longest word (split at breakable spaces only: "◐\u00a0mixed" is one word) plus a margin for bold headers and
    padding. Where the asks add up to more than a line, each column keeps its word and the rest of the line goes to
    the columns in proportion to how much longer their longest cell is than that word, as `tabulary` would share it
    (relative widths far over a line would shrink a column below its word)."""
    words, longest = [], []
    for column in zip(*rows):
        words.append(max(4, max((len(w) for text in column for w in re.split(r"[ \t\n]+", text)), default=1) + 3))
        longest.append(max((len(text) for text in column), default=1))
    asks = [max(word, min(long, WIDEST)) for word, long in zip(words, longest)]
    spare, beyond = LINE - sum(words), [max(0, long - word) for word, long in zip(words, longest)]
    if sum(asks) <= LINE:
        return asks
    if spare <= 0 or not sum(beyond):  # not even the words fit on a line
        return words
    return [word + round(extra * spare / sum(beyond)) for word, extra in zip(words, beyond)]


def _wrap_long_tables(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "latex":
        return
    for table in doctree.findall(nodes.table):
        rows = [[entry.astext() for entry in row.findall(nodes.entry)] for row in table.findall(nodes.row)]
        long = len(rows) > ROWS or sum(len(text) for row in rows for text in row) > CHARACTERS
        if not long and not set(WRAPPED) & set(table["classes"]):
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
