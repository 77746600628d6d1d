"""A cell tagged `page-text` (chapter 14's claims) becomes the page's own text: its headings are sections."""

from __future__ import annotations

import nbformat

from lib.edition import staging


def test_a_page_text_cells_markdown_becomes_markdown_cells_after_it():
    shown = nbformat.v4.new_output("display_data", data={"text/markdown": "(x)=\n### A claim\n\nits verdicts", "text/plain": "x"})
    kept = nbformat.v4.new_output("stream", name="stdout", text="a line")
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("ch.say(a)", outputs=[shown], metadata={"tags": ["remove-input", "page-text"]}),
            nbformat.v4.new_code_cell("ch.say(b)", outputs=[shown, kept], metadata={"tags": ["page-text"]}),
            nbformat.v4.new_code_cell("ch.say(c)", outputs=[shown], metadata={"tags": ["hide-input"]}),
        ]
    )
    staging._as_page_text(nb)
    kinds = [(c.cell_type, c.metadata.get("tags", []), c.source if c.cell_type == "markdown" else len(c.outputs)) for c in nb.cells]
    assert kinds == [
        ("code", ["remove-input", "page-text", "remove-cell"], 0),
        ("markdown", [], "(x)=\n### A claim\n\nits verdicts"),
        ("code", ["page-text"], 1),  # its other output stays in the cell
        ("markdown", [], "(x)=\n### A claim\n\nits verdicts"),
        ("code", ["hide-input"], 1),  # untagged: its heading stays an output's (a rubric)
    ]
