"""The chapter sources (`notebooks/NN_name.py`, jupytext percent format) and their papermill `parameters` cells."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import require
from ..settings import REPO_ROOT
from .percent import cells as percent_cells

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
    cells = [c for c in percent_cells(source) if "parameters" in c.tags]
    require(len(cells) == 1, f"{source.name} must have exactly one cell tagged `parameters`")
    values = {}
    for node in ast.parse(cells[0].source).body:
        require(
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name),
            f"{source.name}: the parameters cell may only assign literal values to names (line {node.lineno})",
        )
        values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


def comma_list(value: object) -> list[str]:
    """The items of a comma-separated parameter or option (`"sst2, imdb"` -> ["sst2", "imdb"]), blanks dropped."""
    return [item.strip() for item in str(value).split(",") if item.strip()]


def names(value: object, what: str, allowed: Iterable[str] | None = None) -> list[str]:
    """The items of a comma-separated parameter (e.g. `tasks = "sst2,imdb"`), in order; at least one, each
    among `allowed` when given."""
    items = comma_list(value)
    require(len(items) > 0, f"{what} is empty: give one or more comma-separated names")
    if allowed is not None:
        known = list(allowed)
        unknown = [item for item in items if item not in known]
        require(not unknown, f"{what}: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(known)}")
    return items
