"""Which chapter runs still vouch for their pages: the executed notebook is the one the run recorded, and nothing it read
or wrote has changed since."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..core.sources import chapters
from .cache import Entry, changed_file, digest
from .folders import Edition


def _own_checks(edition: Edition) -> tuple[dict[str, Entry], dict[str, str]]:
    """The chapters with an entry and an executed notebook, and those whose notebook is not the one the run recorded."""
    entries, why = {}, {}
    for chapter in chapters():
        entry, notebook = Entry.load(edition.entry(chapter)), edition.notebook(chapter)
        if entry is None or not notebook.is_file():
            continue
        entries[chapter] = entry
        if digest(str(notebook)) != entry.notebook:
            why[chapter] = "its executed notebook differs from the one its run recorded (edited or re-run by hand)"
    return entries, why


def _outputs(entries: dict[str, Entry], but: str | None = None) -> dict[str, str]:
    return {o["path"]: o["sha256"] for chapter, entry in entries.items() if chapter != but for o in entry.outputs}


def _vouching(edition: Edition) -> tuple[dict[str, Entry], dict[str, str]]:
    """The vouched entries and, for the others, why not. A run vouches while its notebook and every file it read or
    wrote are as it recorded them, and the other chapters' results it read are still vouched for by their current runs:
    one chapter's stale run takes with it every run that read its results, directly or through another."""
    entries, why = _own_checks(edition)
    while True:
        vouched = {c: e for c, e in entries.items() if c not in why}
        newly = {}
        for chapter, entry in vouched.items():
            if (changed := changed_file(entry, _outputs(vouched, but=chapter))) is not None:
                item, state = changed
                if item["kind"] == "output":
                    newly[chapter] = f"its result {item['label']} {'is missing' if state == 'missing' else 'has changed since'}"
                elif item["kind"] == "results" and Path(item["path"]).exists():
                    newly[chapter] = f"what it read as {item['label']} is no longer what a current run of its chapter vouches for"
                else:
                    newly[chapter] = f"what it read as {item['label']} {'is missing' if state == 'missing' else 'has changed since'}"
        if not newly:
            return vouched, why
        why |= newly


def unvouched(edition: Edition) -> dict[str, str]:
    """The chapters whose last run no longer vouches for a page, with why, in a few words: the executed notebook is not
    the one the run recorded (edited or re-run by hand), a file the run read or wrote has changed since (a data file, a
    model folder, its own results: `cache.changed_file`), or the other chapters' results it read are no longer vouched
    for (their entry is gone, or their run no longer vouches)."""
    return _vouching(edition)[1]


def vouched_outputs(edition: Edition, but: str | None = None) -> dict[str, str]:
    """Every result file (path -> SHA-256) the edition's vouched runs wrote, but those of chapter `but`: what a chapter
    may read of the others' results (`provenance.VOUCHED`), and what its entry is checked against."""
    return _outputs(_vouching(edition)[0], but)


def verified_entries(edition: Edition, say: bool = False) -> dict[str, Entry]:
    """The cache entries whose run still vouches for its page (`unvouched` names the others; one line each, when say)."""
    vouched, left_out = _vouching(edition)
    if say:
        for chapter, why in left_out.items():
            print(
                f"{chapter}: {why}; its page says it was not executed: run `python -m lib.edition.runner --profile {edition.profile} "
                f"--chapters {chapter}` again",
                flush=True,
            )
    return vouched


def entries_digest(entries: dict[str, Entry]) -> str:
    """One checksum of the chapter runs an edition's pages (or PDF) are made from: each chapter's cache key and notebook."""
    runs = sorted((chapter, entry.key, entry.notebook) for chapter, entry in entries.items())
    return hashlib.sha256(json.dumps(runs).encode()).hexdigest()
