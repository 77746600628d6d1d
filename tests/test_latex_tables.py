"""Long tables in the PDF (lib/edition/latex_tables.py): a table of many rows, or of much text, becomes a longtable
(which breaks across pages) with wrapped columns as wide as their content asks; a short table of class `wrap` gets
the same widths without breaking; another short table and the web are left alone."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from docutils import nodes

from lib.edition import latex_tables


def _table(rows: list[list[str]]) -> nodes.table:
    table, group = nodes.table(), nodes.tgroup(cols=len(rows[0]))
    group += [nodes.colspec(colwidth=1) for _ in rows[0]]
    body = nodes.tbody()
    for cells in rows:
        row = nodes.row()
        row += [nodes.entry("", nodes.paragraph(text=text)) for text in cells]
        body += row
    group += body
    table += group
    return table


def _document(*tables: nodes.table) -> nodes.document:
    from docutils.frontend import get_default_settings
    from docutils.utils import new_document

    document = new_document("test", get_default_settings())
    for table in tables:
        document += table
    return document


def test_column_widths_follow_the_content_within_bounds():
    rows = [["layer", "a claim " * 20, "0.5"], ["12", "short", "0.25"]]
    assert latex_tables.column_widths(rows) == [8, latex_tables.WIDEST, 7]


def test_a_long_table_breaks_across_pages_and_a_short_one_stays():
    long = _table([["claim " * 30, "holds"]] * 20)  # 20 rows of ~180 characters: more than a page of text
    short = _table([["1", "2"]] * 5)
    document = _document(long, short)
    latex_tables._wrap_long_tables(SimpleNamespace(builder=SimpleNamespace(format="html")), document, "x")
    assert "longtable" not in long["classes"]  # the web pages are unchanged
    latex_tables._wrap_long_tables(SimpleNamespace(builder=SimpleNamespace(format="latex")), document, "x")
    assert {"longtable", "colwidths-given"} <= set(long["classes"])
    assert [spec["colwidth"] for spec in long.findall(nodes.colspec)] == [latex_tables.WIDEST, 8]
    assert "longtable" not in short["classes"]


def test_a_short_wrapped_table_gets_its_content_widths_but_stays_one_block():
    wrapped = _table([["model", "verdict", "ours"], ["all-MiniLM-L6-v2", "holds", "0.31 [0.2, 0.4] " * 4]])
    wrapped["classes"].append("wrap")
    latex_tables._wrap_long_tables(SimpleNamespace(builder=SimpleNamespace(format="latex")), _document(wrapped), "x")
    assert "longtable" not in wrapped["classes"] and "colwidths-given" in wrapped["classes"]
    assert [spec["colwidth"] for spec in wrapped.findall(nodes.colspec)] == [len("all-MiniLM-L6-v2") + 3, 10, latex_tables.WIDEST]


def test_a_verdict_matrix_keeps_each_badge_interval_whole():
    badge = "?\u00a00.102\u00a0(0.065\u00a0to\u00a00.103)"  # a badge breaks only between its figures
    matrix = _table([["claim", "all-MiniLM-L6-v2", "quick-roberta-pe"], ["Centering raises I(W) substantially. " * 3, badge, "✓\u00a00.212"]])
    matrix["classes"].append("book-verdicts")
    latex_tables._wrap_long_tables(SimpleNamespace(builder=SimpleNamespace(format="latex")), _document(matrix), "x")
    assert "longtable" not in matrix["classes"] and "colwidths-given" in matrix["classes"]
    assert [spec["colwidth"] for spec in matrix.findall(nodes.colspec)][1] == len(badge) + 3


def test_columns_asking_for_more_than_a_line_each_keep_their_longest_word():
    rows = [["model", "verdict", "ours", "control", "margins", "p"], ["all-MiniLM-L6-v2", "\u25d0\u00a0mixed", "x " * 200, "y " * 50, "z " * 30, "3.2e-08"]]
    widths = latex_tables.column_widths(rows)
    assert sum(widths) == pytest.approx(latex_tables.LINE, abs=len(widths))  # relative widths over about one line
    assert widths[:2] == [len("all-MiniLM-L6-v2") + 3, len("\u25d0\u00a0mixed") + 3]  # a word (NBSP-joined too) fits
    assert widths[5] == len("3.2e-08") + 3  # a column that asks no more than its word gets its word
    assert widths[2] > widths[3] > widths[4] > len("margins") + 3  # the rest of the line shared by how long each runs
