"""The py:percent reader that runs chapters without jupytext agrees with jupytext on every chapter."""

from pathlib import Path

import jupytext
import pytest

from lib.core.percent import Cell, cells
from lib.core.sources import chapters, source_file
from lib.errors import BookError


@pytest.mark.parametrize("chapter", chapters())
def test_every_chapter_reads_as_jupytext_reads_it(chapter):
    ours = cells(source_file(chapter))
    theirs = [c for c in jupytext.read(source_file(chapter)).cells if c.source.strip() or c.metadata.get("tags")]
    assert [(c.kind, c.source, list(c.tags)) for c in ours if c.source.strip() or c.tags] == [
        (c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in theirs
    ]


def test_tags_and_markdown(tmp_path: Path):
    path = tmp_path / "c.py"
    path.write_text('# ---\n# jupyter: {}\n# ---\n\n# %% [markdown]\n# # Title\n#\n# text\n\n# %% tags=["parameters"]\nx = 1\n\n\n# %%\nprint(x)\n')
    assert cells(path) == [
        Cell("markdown", "# Title\n\ntext", (), 6),
        Cell("code", "x = 1", ("parameters",), 11),
        Cell("code", "print(x)", (), 15),
    ]
    path.write_text("# %% tags=[parameters]\nx = 1\n")
    with pytest.raises(BookError, match="cannot read the cell tags"):
        cells(path)
