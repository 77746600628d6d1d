"""Expected chapter times. The committed ones (`profiles/costs/<profile>.yaml`) let a first build start the longest
chapters first and the rerun page say what each edition costs; a profile not yet built may hold estimates, marked as
such. Every chapter a build executes writes its measured time, with where it was measured, into the edition's own
untracked file (`_build/<profile>/costs.yaml`), so a build leaves the checkout clean; `make costs PROFILE=<name>`
(`python -m lib.edition.costs <name>`) copies those into the committed file, on purpose. For ordering, a measured time
comes before the committed one, and a chapter's own last run in an edition before both (`planning.longest_first`)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import yaml

from ..core import profiles
from ..core.sources import chapters
from ..errors import BookError, cli
from ..io import write_atomic
from ..settings import build_dir
from .cache import Entry
from .commit import now

HEADER = (
    "# Seconds each chapter of this profile took when a build last executed it (wall clock, on the machine named with\n"
    "# it), or an estimate where `measured` says so: the runner starts the longest first and the rerun page shows them.\n"
    "# Builds write their times to _build/<profile>/costs.yaml; `make costs PROFILE=<profile>` copies them here.\n"
)
MEASURED_HEADER = "# Seconds each chapter took when this machine's builds last executed it; `make costs` commits them to profiles/costs.\n"
BUILD_STARTED = "BOOK_BUILD_STARTED"  # set by a build: work cached since then is this build's, not earlier work
STAMPS = ("build", "finished")  # a time's build (when it started) and the end of the job, UTC: the build report's wall time


def path(profile: str) -> Path:
    """The committed times of a profile."""
    return profiles.PROFILES / "costs" / f"{profile}.yaml"


def measured_path(profile: str) -> Path:
    """The times this machine's builds measured for a profile: untracked, beside the edition."""
    return build_dir() / profile / "costs.yaml"


def _read(file: Path) -> dict[str, dict[str, Any]]:
    """chapter → {"seconds", "measured"} and the `STAMPS` a build wrote; empty where there is no file (or an unreadable
    one: times are hints)."""
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    rows = data if isinstance(data, dict) else {}
    return {
        str(k): {"seconds": float(v["seconds"]), "measured": str(v.get("measured", ""))} | {s: str(v[s]) for s in STAMPS if v.get(s)}
        for k, v in rows.items()
        if isinstance(v, dict) and isinstance(v.get("seconds"), (int, float))
    }


def load(profile: str) -> dict[str, dict[str, Any]]:
    """The committed times of a profile (what the rerun page shows)."""
    return _read(path(profile))


def measured(profile: str) -> dict[str, dict[str, Any]]:
    """The times this machine's builds measured for a profile (not committed)."""
    return _read(measured_path(profile))


def expected(profile: str) -> dict[str, float]:
    """chapter → expected seconds: measured here where a build measured it, else committed."""
    return {chapter: row["seconds"] for chapter, row in {**load(profile), **measured(profile)}.items()}


def device() -> str:
    """The computing device in a few words: the GPU's name, else "CPU"."""
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"


def where(facts: dict[str, Any], jobs: int) -> str:
    """Where a chapter's time was measured, from its entry's facts: commit, device, threads, chapters at once."""
    threads = facts.get("threads", "?")
    return f"commit {str(facts.get('commit', 'unknown'))[:7]}, {facts.get('device', 'CPU')}, {threads} thread{'' if threads == 1 else 's'}, {jobs} at once"


def record_unless_reused(profile: str, chapter: str, facts: dict[str, Any], where: str) -> None:
    """Record a chapter run's seconds (`record`), unless the run took cached results of earlier work (a pre-training
    checkpoint, cached fine-tuning runs: facts["reused"]), whose time is not what the chapter costs; say which."""
    if facts.get("reused"):
        print(f"== {chapter}: its time ({facts['seconds']:.0f} s) is not recorded as what it costs: it reused {facts['reused']} cached run(s)")
        return
    record(profile, chapter, facts["seconds"], where)


def _write(file: Path, header: str, rows: dict[str, dict[str, Any]]) -> None:
    stamps = {name: {s: row[s] for s in STAMPS if s in row} for name, row in rows.items()}
    rows = {name: {"seconds": round(row["seconds"]), "measured": row["measured"], **stamps[name]} for name, row in sorted(rows.items())}
    text = header + yaml.safe_dump(rows, sort_keys=False, allow_unicode=True)
    write_atomic(file, lambda p: p.write_text(text, encoding="utf-8"))


def record(profile: str, chapter: str, seconds: float, where: str) -> None:
    """Write a chapter's (or a job ahead's) measured seconds into the edition's untracked file, stamped with its build
    (`build_stamps`; atomically: the runner is its only writer)."""
    rows = measured(profile)
    rows[chapter] = {"seconds": round(float(seconds)), "measured": f"{dt.date.today().isoformat()}, {where}"} | build_stamps()
    _write(measured_path(profile), MEASURED_HEADER, rows)


def build_stamps() -> dict[str, str]:
    """When the build running now started (`BUILD_STARTED`) and now, UTC, as `STAMPS`; none outside a build."""
    started = os.environ.get(BUILD_STARTED)
    if not started:
        return {}
    return {"build": dt.datetime.fromtimestamp(float(started), dt.timezone.utc).isoformat(timespec="seconds"), "finished": now()}


def commit_measured(profile: str) -> list[str]:
    """Copy the times this machine measured into the committed file (`make costs`); the chapters whose times changed."""
    rows = measured(profile)
    if not rows:
        raise BookError(f"no measured times for the {profile} edition ({measured_path(profile)}): build it first (make book PROFILE={profile})")
    committed = load(profile)
    changed = sorted(name for name, row in rows.items() if committed.get(name) != row)
    _write(path(profile), HEADER, {**committed, **rows})
    return changed


def duration(seconds: float) -> str:
    seconds = float(seconds)
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


COST_PROFILES = ("quick", "default", "gpu")  # the editions whose expected times the rerun page shows


def chapter_costs() -> str:
    """The rerun page's table of what each chapter costs in each edition, from the times committed with the book
    (`profiles/costs/`): measured ones as they are, estimates marked ≈, and under the table where each was measured."""
    rows = {profile: load(profile) for profile in COST_PROFILES}
    marks: dict[str, int] = {}

    def cell(row: dict | None) -> str:
        if row is None:
            return "–"
        estimate = row["measured"].startswith("estimate")
        if not estimate:
            marks.setdefault(row["measured"], len(marks) + 1)
        return ("≈ " if estimate else "") + duration(row["seconds"]) + ("" if estimate else f" ({marks[row['measured']]})")

    lines = ["| chapter | " + " | ".join(f"{p} edition" for p in COST_PROFILES) + " |", "|---|" + "---:|" * len(COST_PROFILES)]
    for c in chapters():
        lines.append(f"| {c} | " + " | ".join(cell(rows[p].get(c)) for p in COST_PROFILES) + " |")
        ahead = [{k: r for k, r in rows[p].items() if k.startswith(c + ":")} for p in COST_PROFILES]
        if any(ahead):  # work a parallel build runs as jobs of its own before the chapter (`planning.AHEAD`)
            lines.append("| ↳ its work ahead, in jobs | " + " | ".join(_jobs(a, cell) for a in ahead) + " |")
    totals = [sum(r["seconds"] for r in rows[p].values()) for p in COST_PROFILES]
    lines.append("| **all jobs, in turn** | " + " | ".join(f"**{duration(t)}**" if t else "–" for t in totals) + " |")
    where = "; ".join(f"({n}) {text}" for text, n in marks.items())
    note = "≈: an estimate (`profiles/costs/<profile>.yaml` says from what), until a build measures it."
    return "\n".join(lines) + f"\n\nMeasured: {where or 'nothing yet'}. {note}\n"


def _jobs(rows: dict[str, dict], cell: Callable[[dict | None], str]) -> str:
    """A chapter's work ahead in one cell: how many jobs, the longest, and their sum (Σ)."""
    if not rows:
        return "–"
    longest = max(rows.values(), key=lambda r: r["seconds"])
    total = {**longest, "seconds": sum(r["seconds"] for r in rows.values())}
    return f"{len(rows)} × ≤ {duration(longest['seconds'])}, Σ {cell(total)}"


def edition_time(entries: dict[str, Entry], profile: str) -> str:
    """How long this edition's chapters ran in their last runs, from their entries (a page states times only from the
    build it belongs to); a line saying there is none yet otherwise."""
    if not entries:
        return f"The {profile} edition has no executed chapter yet, so this page cannot say how long it takes."
    total = sum(float(e.facts["seconds"]) for e in entries.values())
    threads = sorted({str(e.facts.get("threads", "?")) for e in entries.values()})
    return (
        f"In this ({profile}) edition, the {len(entries)} executed chapters ran for {duration(total)} in their last runs, "
        f"on {' or '.join(threads)} CPU thread{'' if threads == ['1'] else 's'} each (the {{doc}}`build report <build_report>` gives each chapter's time)."
    )


@cli
def main() -> None:
    """`make costs PROFILE=<name>`: this machine's measured times into the committed file, to commit on purpose."""
    parser = argparse.ArgumentParser(description="Copy a profile's measured chapter times into profiles/costs/<profile>.yaml (to commit).")
    parser.add_argument("profile")
    profile = parser.parse_args().profile
    changed = commit_measured(profile)
    print(f"{path(profile)}: {len(changed)} chapter time(s) updated from {measured_path(profile)}" + (f": {', '.join(changed)}" if changed else ""))


if __name__ == "__main__":
    main()
