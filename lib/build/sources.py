"""The chapter sources (`notebooks/NN_name.py`, jupytext percent format) and their papermill `parameters` cells."""

from __future__ import annotations

import ast
import os
from functools import cache
from pathlib import Path
from typing import Any

import jupytext

from ..errors import require
from ..settings import REPO_ROOT

NOTEBOOKS = Path(os.environ.get("BOOK_NOTEBOOKS_DIR") or REPO_ROOT / "notebooks")  # another folder of chapters: $BOOK_NOTEBOOKS_DIR


def chapters() -> list[str]:
    """Chapter names, in book order (file names sort by their number)."""
    return sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def source_file(chapter: str) -> Path:
    """A chapter's source, `notebooks/<chapter>.py`; one line naming the chapters when there is none."""
    source = NOTEBOOKS / f"{chapter}.py"
    require(source.is_file(), f"no chapter {chapter!r}; chapters are: {', '.join(chapters())}")
    return source


@cache
def declared_parameters(chapter: str) -> dict[str, Any]:
    """The names and values assigned in a chapter's `parameters` cell, in order: the chapter's defaults."""
    source = source_file(chapter)
    cells = [c for c in jupytext.read(source).cells if "parameters" in c.metadata.get("tags", [])]
    require(len(cells) == 1, f"{source.name} must have exactly one cell tagged `parameters`")
    values = {}
    for node in ast.parse(cells[0].source).body:
        require(
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name),
            f"{source.name}: the parameters cell may only assign literal values to names (line {node.lineno})",
        )
        values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


# What a chapter calls that reads other chapters' results: those chapters run first (`python -m lib.build.runner --jobs N`).
READS = {
    "outliers_of(": ("02_outlier_neurons",),  # chapter 02's outlier set
    "scorecard.scorecard(": None,  # every other chapter's result tables
}
TRAINED = ("chapter05:", "trained:")  # a parameter naming chapter 05's models


def prerequisites(chapter: str, parameters: dict[str, Any]) -> set[str]:
    """The chapters whose results this one reads with these parameters: chapter 02 where it reads the outlier set,
    chapter 05 where a parameter names its trained models, every other chapter for the scorecard."""
    text, others = source_file(chapter).read_text(encoding="utf-8"), set(chapters()) - {chapter}
    needs: set[str] = set()
    for call, read in READS.items():
        if call in text:
            needs |= others if read is None else set(read)
    if any(isinstance(v, str) and any(t in v for t in TRAINED) for v in parameters.values()):
        needs.add("05_pretraining")
    return needs & others
