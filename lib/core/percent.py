"""A chapter source's cells, read from its jupytext py:percent text without jupytext: the headless executor
(`lib.edition.headless`) runs chapters where no notebook tooling is installed (a borrowed GPU machine)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BookError, require

MARKER = re.compile(r"^# %%(?P<rest>.*)$")


@dataclass(frozen=True)
class Cell:
    kind: str  # "code" or "markdown"
    source: str  # code as written; markdown with its "# " comment prefixes removed
    tags: tuple[str, ...] = field(default=())
    line: int = 0  # the file's line (from 1) on which the cell's source starts


def _metadata(rest: str, where: str) -> tuple[str, tuple[str, ...]]:
    """(kind, tags) from what follows a `# %%` marker: `[markdown]` and `tags=[...]` (JSON), as jupytext writes them."""
    kind = "markdown" if "[markdown]" in rest else "code"
    found = re.search(r"tags=(\[.*?\])", rest)
    try:
        tags = tuple(json.loads(found.group(1))) if found else ()
    except json.JSONDecodeError as err:
        raise BookError(f'{where}: cannot read the cell tags {found.group(1)!r} ({err}); write them as jupytext does: tags=["name"]') from err
    return kind, tags


def _uncomment(lines: list[str]) -> str:
    return "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in lines)


def cells(path: Path) -> list[Cell]:
    """The cells of a py:percent file in order (its YAML header left out), each without trailing blank lines."""
    lines, skipped = path.read_text(encoding="utf-8").splitlines(), 0
    if lines and lines[0] == "# ---":
        end = lines.index("# ---", 1) if "# ---" in lines[1:] else -1
        require(end > 0, f"{path.name}: its '# ---' header is not closed")
        lines, skipped = lines[end + 1 :], end + 1
    out: list[Cell] = []
    kind, tags, body, first = None, (), [], 0
    for number, line in enumerate([*lines, "# %% end"], start=skipped + 1):
        found = MARKER.match(line)
        if not found:
            body.append(line)
            continue
        while body and not body[-1].strip():
            body.pop()
        if kind is not None:
            out.append(Cell(kind, _uncomment(body) if kind == "markdown" else "\n".join(body), tags, first))
        else:
            require(not any(b.strip() for b in body), f"{path.name}: text before its first '# %%' cell marker")
        kind, tags = _metadata(found.group("rest"), f"{path.name} line {number}")
        body, first = [], number + 1
    return out
