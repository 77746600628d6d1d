"""What a build calls before it reads data (`make data`, `make book`): the pinned files fetched per file (`fetch`) or
from the release archive (`release`), and one line when that fails. It sits above both, so neither imports the other."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import BookError
from ..settings import data_dir
from . import fetch, release
from .pins import SOURCES, Source


def require_data(root: Path | None = None, sources: dict[str, Source] | None = None) -> list[str]:
    """Before a build (`make data`, `make book`): fetch what the data folder lacks (per file, or from the archive
    $BOOK_DATA_URL names) and return the paths installed; when a download fails, one line saying what happened, which
    files are still missing, and the two ways out."""
    root, sources = Path(root or data_dir()), SOURCES if sources is None else sources
    try:
        if os.environ.get("BOOK_DATA_URL"):
            return release.fetch(root, pins=sources)
        return fetch.fetch(root, sources)
    except fetch.DownloadFailed as err:
        absent, _ = fetch.missing(root, sources) if root.exists() else (sorted(sources), [])
        raise BookError(
            f"{len(absent)} of {len(sources)} data files are still missing in {root} ({names(absent)}): {err.url} could not be downloaded "
            f"({err.reason}). Set BOOK_DATA_DIR to a folder that holds the data sets, or BOOK_DATA_MIRROR to a mirror of the per-file layout, "
            "then run `make data` again (files already verified are kept)"
        ) from None


def names(paths: list[str]) -> str:
    """A short listing of paths by data folder, e.g. 'sst2 (3), wic (4)'."""
    counts: dict[str, int] = {}
    for p in paths:
        counts[p.split("/")[0]] = counts.get(p.split("/")[0], 0) + 1
    return ", ".join(f"{k} ({v})" for k, v in sorted(counts.items()))
