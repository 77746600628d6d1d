"""Which chapter runs still vouch for their pages: the executed notebook is the one the run recorded, and nothing it read
or wrote has changed since."""

from __future__ import annotations

import hashlib
import json

from ..core.sources import chapters
from .cache import Entry, changed_file, digest
from .folders import Edition


def unvouched(edition: Edition) -> dict[str, str]:
    """The chapters whose last run no longer vouches for a page, with why, in a few words: the executed notebook is not
    the one the run recorded (edited or re-run by hand), or a file the run read or wrote has changed since (another
    chapter's results it read, a data file, a model folder, its own results: `cache.changed_file`)."""
    why = {}
    for chapter in chapters():
        entry, notebook = Entry.load(edition.entry(chapter)), edition.notebook(chapter)
        if entry is None or not notebook.is_file():
            continue
        if digest(str(notebook)) != entry.notebook:
            why[chapter] = "its executed notebook differs from the one its run recorded (edited or re-run by hand)"
        elif (changed := changed_file(entry)) is not None:
            item, state = changed
            what = f"its result {item['label']}" if item["kind"] == "output" else f"what it read as {item['label']}"
            why[chapter] = f"{what} {'is missing' if state == 'missing' else 'has changed since'}"
    return why


def verified_entries(edition: Edition, say: bool = False) -> dict[str, Entry]:
    """The cache entries whose run still vouches for its page (`unvouched` names the others; one line each, when say)."""
    left_out = unvouched(edition)
    if say:
        for chapter, why in left_out.items():
            print(
                f"{chapter}: {why}; its page says it was not executed: run `python -m lib.edition.runner --profile {edition.profile} "
                f"--chapters {chapter}` again",
                flush=True,
            )
    entries = {}
    for chapter in chapters():
        entry = Entry.load(edition.entry(chapter))
        if entry is not None and edition.notebook(chapter).is_file() and chapter not in left_out:
            entries[chapter] = entry
    return entries


def entries_digest(entries: dict[str, Entry]) -> str:
    """One checksum of the chapter runs an edition's pages (or PDF) are made from: each chapter's cache key and notebook."""
    runs = sorted((chapter, entry.key, entry.notebook) for chapter, entry in entries.items())
    return hashlib.sha256(json.dumps(runs).encode()).hexdigest()
