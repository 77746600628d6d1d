"""What a chapter run read and wrote, recorded for the book build (which data files, which model weights, which results).

The runner sets $BOOK_PROVENANCE to a file before it executes a chapter; the code that opens a data file, resolves a
model or writes a result calls `record`, which appends one JSON line there. Outside a book build it does nothing.
The runner turns the lines into checksums (`lib.edition.cache`) so that a chapter is re-executed when what it read changed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

ENV = "BOOK_PROVENANCE"
Kind = Literal["data", "model", "output", "reused"]


def record(kind: Kind, path: Path | str, label: str | None = None) -> None:
    """Note that the running chapter read (`data`, `model`) or wrote (`output`) path, or took the result of earlier
    work from a cache instead of computing it (`reused`: a pre-training checkpoint or saved run, a cached fine-tuning
    run; the run's time is then not what the chapter costs); `label` names it on the build report (e.g. a data set split
    or a model spec). A path that is not on this machine (a hub id) is kept as given."""
    log = os.environ.get(ENV)
    if not log:
        return
    where = Path(path)
    line = {"kind": kind, "path": str(where.resolve()) if where.exists() else str(path), "label": label or str(path)}
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def read(log: Path) -> list[dict[str, str]]:
    """The records of one run, in order, without repeats; a torn last line (a killed kernel) is skipped."""
    seen, out = set(), []
    if not Path(log).is_file():
        return out
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        key = (item.get("kind"), item.get("path"))
        if key not in seen and all(isinstance(item.get(k), str) for k in ("kind", "path", "label")):
            seen.add(key)
            out.append(item)
    return out
