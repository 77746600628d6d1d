"""The build report page: when and how each chapter ran, with the work run ahead of it, its parameters, and the data
files and models it read."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import nbformat

from ..core.sources import chapters, declared_parameters
from ..datasets.pins import SOURCES
from . import costs
from .cache import Entry
from .chapter_notes import changed_parameters, hide_paths, shown_value
from .costs import duration
from .folders import Edition

REPORT = "book/build_report"


def slowest_cells(notebook: Path, n: int = 3) -> list[dict[str, Any]]:
    """The n code cells of an executed notebook that took longest (papermill records each cell's duration), each with
    the heading of its section and its first line."""
    cells, section = [], ""
    for cell in nbformat.read(notebook, as_version=4).cells:
        lines = [line for line in cell.source.splitlines() if line.strip()]
        if cell.cell_type == "markdown":
            section = next((line.lstrip("#").strip() for line in lines if line.startswith("#")), section)
        seconds = cell.get("metadata", {}).get("papermill", {}).get("duration")
        if cell.cell_type == "code" and seconds is not None:
            cells.append({"seconds": float(seconds), "section": section, "first_line": lines[0] if lines else ""})
    return sorted(cells, key=lambda c: -c["seconds"])[:n]


def build_report(edition: Edition, entries: dict[str, Entry]) -> str:
    """The build report page: per chapter, how long it took, whether this build reused it, what it read."""
    statuses = edition.statuses()
    lines = [
        f"# Build report: the {edition.profile} edition\n",
        "Every chapter of this edition was executed by the code of the commit named beside it; a chapter is executed "
        "again only when its source, the library code it imports, its parameters, the packages, or the data and model "
        "files it read have changed (see {doc}`How to re-run this book <rerun>`). Times are wall-clock seconds on the machine that "
        "built the edition. Each data file a chapter read links to the file at the public commit it is fetched from.\n",
        "## Chapters\n",
        "| chapter | last build | wall time | CPU threads | executed (UTC) | commit |",
        "|---|---|---|---|---|---|",
    ]
    total, dirty, reasons, slow = 0.0, False, [], ["| chapter | slowest cell | in section |", "|---|---|---|"]
    measured, ahead_total = costs.measured(edition.profile), 0.0
    for chapter in chapters():
        entry, status = entries.get(chapter), statuses.get(chapter, {})
        if status.get("status") in ("executed", "failed"):
            reasons.append(f"{chapter} ({status['status']}: {status['reason']})")
        if entry is None:
            lines.append(f"| {chapter} | {'failed' if status.get('status') == 'failed' else 'not executed'} | – | – | – | – |")
            continue
        facts = entry.facts
        total += float(facts["seconds"])
        dirty = dirty or bool(facts.get("dirty"))
        sha = f"`{facts.get('commit', 'unknown')[:7]}`" + ("\\*" if facts.get("dirty") else "")
        when = facts["finished"][5:16].replace("T", " ")
        slowest = (slowest_cells(edition.notebook(chapter), 1) or [{"seconds": 0.0, "section": ""}])[0]
        threads = facts.get("threads", "–")
        lines.append(f"| {{ref}}`{chapter} <build-{chapter}>` | {status.get('status', '–')} | {duration(facts['seconds'])} | {threads} | {when} | {sha} |")
        if ahead := work_ahead(measured, chapter):  # jobs a build ran before the chapter (`planning.AHEAD`), as last measured here
            seconds = sum(r["seconds"] for r in ahead.values())
            ahead_total += seconds
            last = max((r.get("finished", "") for r in ahead.values()), default="")[5:16].replace("T", " ") or "–"
            lines.append(f"| ↳ work run ahead of it, {len(ahead)} job{'s' * (len(ahead) > 1)} | – | {duration(seconds)} | – | {last} | – |")
        slow.append(f"| {chapter} | {duration(slowest['seconds'])} | {_table_text(slowest['section'])} |")
    lines.append("\n" + time_spent(total, ahead_total, build_wall_time(entries, measured)))
    if reasons:
        lines.append("Executed by the last build, and why: " + "; ".join(reasons) + ".")
    if dirty:
        lines.append("\n\\* executed from a checkout with uncommitted changes to tracked files.")
    lines += ["\n## Where the time goes\n", "The code cell of each chapter that took longest (papermill times every cell), and the section it belongs to.\n"]
    lines += slow
    for chapter, entry in entries.items():
        lines += [f"\n({'build-' + chapter})=", f"## {chapter}\n"]
        values = {**declared_parameters(chapter), **entry.parts["parameters"]}
        changed = changed_parameters(chapter, entry.parts["parameters"])
        lines += ["| parameter | value in this edition | chapter default |", "|---|---|---|"]
        defaults = declared_parameters(chapter)
        lines += [
            f"| `{k}` | `{_table_text(repr(shown_value(k, v)))}`{' (changed)' if k in changed else ''} | `{_table_text(repr(defaults.get(k)))}` |"
            for k, v in values.items()
        ]
        reads = [i for i in entry.inputs if i["kind"] in ("data", "model", "results")]
        if reads:
            lines += _reads_table(reads)
        lines += [f"\nWrote {len(entry.outputs)} result files (tables and figures) under `$BOOK_RESULTS_DIR/{edition.profile}/`."]
    if entries:
        environment = next(iter(entries.values())).parts["environment"]
        lines += ["\n## Software\n", "| package | version |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in environment.items()]
    return "\n".join(lines) + "\n"


def work_ahead(measured: dict[str, dict[str, Any]], chapter: str) -> dict[str, dict[str, Any]]:
    """The measured times of the jobs run ahead of a chapter ("05_pretraining:roberta-pe", …)."""
    return {name: row for name, row in measured.items() if name.startswith(chapter + ":")}


def build_wall_time(entries: dict[str, Entry], measured: dict[str, dict[str, Any]]) -> float | None:
    """Seconds from the start of the one build that executed every chapter shown and ran all their work ahead to the end
    of its last job (`costs.STAMPS`); None where they come from several builds, or from a build that stamped no times."""
    rows = [measured.get(c) for c in entries] + [r for c in entries for r in work_ahead(measured, c).values()]
    if not rows or any(r is None or "build" not in r for r in rows) or len({r["build"] for r in rows}) > 1:
        return None
    start = rows[0]["build"]
    if any(not start <= e.facts.get("started", "") <= e.facts["finished"] <= measured[c]["finished"] for c, e in entries.items()):
        return None  # an entry from another run than the one whose time was recorded (a run with -p values records none)
    return (dt.datetime.fromisoformat(max(r["finished"] for r in rows)) - dt.datetime.fromisoformat(start)).total_seconds()


def time_spent(in_chapters: float, ahead: float, wall: float | None) -> str:
    """What executing the edition took: the sum of its chapters' times and their work ahead's, and where one build ran
    them all, its wall time."""
    parts = f": {duration(in_chapters)} in the chapters and {duration(ahead)} in the work run ahead of them" if ahead else ""
    text = f"Executing every chapter once took {duration(in_chapters + ahead)} in all{parts} (the sum of the times above)."
    return text + (f" The build that ran all of it took {duration(wall)} of wall time, from its start to its end." if wall is not None else "")


FOLDED = 12  # a chapter that read more files than this from one folder (a corpus) lists them in a closed dropdown


def _reads_table(reads: list[dict[str, str]]) -> list[str]:
    """The files and models a chapter read with their checksums; the files of a folder it read many of (a corpus's
    hundreds) folded into one dropdown under a line that counts them."""
    folders: dict[str, list[dict[str, str]]] = {}
    for item in reads:
        folders.setdefault(item["label"].rsplit("/", 1)[0] if "/" in item["label"] else "", []).append(item)
    many = {f for f, items in folders.items() if f and len(items) > FOLDED}
    head = ["| read | what | SHA-256 |", "|---|---|---|"]
    rows = [f"| {i['kind']} | {_what(i['label'])} | `{i['sha256'][:16]}…` |" for i in reads if i["label"].rsplit("/", 1)[0] not in many]
    lines = ["", *head, *rows] if rows else []
    for folder in sorted(many):
        items = folders[folder]
        lines += [f"\n:::{{dropdown}} {len(items)} files of `{_table_text(hide_paths(folder))}/` with their checksums", *head]
        lines += [f"| {i['kind']} | {_what(i['label'])} | `{i['sha256'][:16]}…` |" for i in items] + [":::"]
    return lines


def _what(label: str) -> str:
    """What a chapter read, as code; a pinned data file linked to the file at the public commit it is fetched from."""
    text, source = f"`{_table_text(hide_paths(label))}`", SOURCES.get(label)
    return f"[{text}]({source.page})" if source else text


def _table_text(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")[:120]
