"""What a chapter run read and wrote, recorded for the book build (which data files, which model weights, which results).

The runner sets $BOOK_PROVENANCE to a file before it executes a chapter; the code that opens a data file, resolves a
model or writes a result calls `record`, which appends one JSON line there. Outside a book build it does nothing.
What a chapter reads is digested when it is read, so a file edited while the chapter runs makes its entry stale
(`lib.edition.cache`); what it writes is digested by the runner once the results are in place.

Other chapters' results are read only where a current run vouches for them: the runner sets $BOOK_VOUCHED to a JSON
file of every result file the other chapters' vouched runs wrote (path -> SHA-256; `lib.edition.vouching`), and
`vouched_digest` is what a chapter saw of a path in results: a file's digest if vouched, else "missing".
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Literal

from .io import sha256
from .settings import results_dir

ENV = "BOOK_PROVENANCE"
VOUCHED = "BOOK_VOUCHED"
MISSING = "missing"
Kind = Literal["data", "model", "output", "reused", "results"]

_memo: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    stat = path.stat()
    memo = (str(path), stat.st_size, stat.st_mtime_ns)
    if memo not in _memo:
        _memo[memo] = sha256(path)
    return _memo[memo]


def digest(path: str) -> str | None:
    """SHA-256 of a file, or of a folder (each file's relative path and SHA-256, in order); a name that is not on this
    machine (a hub id) is its own digest; None when a recorded file or folder no longer exists."""
    where = Path(path)
    if where.is_file():
        return _file_digest(where)
    if where.is_dir():
        files = sorted(p for p in where.rglob("*") if p.is_file())
        lines = "".join(f"{p.relative_to(where)}\0{_file_digest(p)}\n" for p in files)
        return hashlib.sha256(lines.encode()).hexdigest()
    return None if where.is_absolute() else f"name:{path}"


def vouched_digest(path: str, outputs: Mapping[str, str]) -> str:
    """What a chapter sees of a path in the results folder, given the vouched result files (path -> SHA-256): a vouched
    file's digest; for a folder, one digest of the vouched files under it; "missing" when no vouched file is there (an
    unvouched file is as good as absent)."""
    if path in outputs:
        return outputs[path]
    under = sorted((p, d) for p, d in outputs.items() if p.startswith(path.rstrip("/") + "/"))
    return hashlib.sha256(json.dumps(under).encode()).hexdigest() if under else MISSING


def vouched() -> dict[str, str] | None:
    """The result files the running chapter may read (path -> SHA-256), or None outside a book build (then every file
    in the results folder is read as it is)."""
    where = os.environ.get(VOUCHED)
    return _vouched_file(where) if where else None


@lru_cache(maxsize=4)
def _vouched_file(where: str) -> dict[str, str]:
    """The runner writes the file once, before the chapter starts; unreadable, it vouches for nothing."""
    try:
        return json.loads(Path(where).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def is_vouched(path: Path) -> bool:
    """Whether a result file may be read: it exists and, inside a book build, a current run of its chapter vouches for
    these very bytes."""
    outputs = vouched()
    if outputs is None:
        return path.is_file()
    key = str(path.resolve())
    return path.is_file() and key in outputs and digest(key) == outputs[key]


def record(kind: Kind, path: Path | str, label: str | None = None) -> None:
    """Note that the running chapter read (`data`, `model`; `results`: other chapters' results, a file or a folder, as
    far as vouched runs wrote them) or wrote (`output`) path, or took the result of earlier work from a cache instead of
    computing it (`reused`: a pre-training checkpoint or saved run, a cached fine-tuning run; the run's time is then not
    what the chapter costs); `label` names it on the build report (e.g. a data set split or a model spec). What it read
    is digested now, as it is read. A path that is not on this machine (a hub id) is kept as given."""
    log = os.environ.get(ENV)
    if not log:
        return
    where = Path(path)
    name = str(where.resolve()) if where.exists() or where.is_absolute() else str(path)
    if kind == "data" and Path(name).is_relative_to(results_dir()):
        kind = "results"  # another chapter's results, however the code calls it
    line = {"kind": kind, "path": name, "label": label or str(path)}
    if kind in ("data", "model"):
        line["sha256"] = digest(name) or MISSING
    elif kind == "results":
        line["sha256"] = vouched_digest(name, vouched() or {})
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


CHANGED = "changed while the chapter ran"  # the digest of an input read twice with different contents: never current


def read(log: Path) -> list[dict[str, str]]:
    """The records of one run, in order, without repeats; a torn last line (a killed kernel) is skipped. An input read
    more than once with different contents keeps the digest `CHANGED`, which no file has."""
    seen: dict[tuple, dict[str, str]] = {}
    if not Path(log).is_file():
        return []
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not all(isinstance(item.get(k), str) for k in ("kind", "path", "label")):
            continue
        key = (item["kind"], item["path"])
        if key not in seen:
            seen[key] = item
        elif item.get("sha256") != seen[key].get("sha256"):
            seen[key]["sha256"] = CHANGED
    return list(seen.values())
