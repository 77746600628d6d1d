"""Expected chapter times, committed with the book (`profiles/costs/<profile>.yaml`), so that a first build starts the
longest chapters first too, and the rerun page can say what each edition costs. Every chapter a build executes writes
its measured time there, with where it was measured (commit the file to share it); a profile not yet built may hold
estimates, marked as such. A chapter's own last run in an edition, where there is one, is a better guess for ordering
and comes first (`runner.longest_first`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import torch
import yaml

from ..core import profiles
from ..io import write_atomic

HEADER = (
    "# Seconds each chapter of this profile took when a build last executed it (wall clock, on the machine named with\n"
    "# it), or an estimate where `measured` says so: the runner starts the longest first and the rerun page shows them.\n"
    "# Written by `python -m lib.edition.runner`; commit it to share it.\n"
)


def path(profile: str) -> Path:
    return profiles.PROFILES / "costs" / f"{profile}.yaml"


def load(profile: str) -> dict[str, dict[str, Any]]:
    """chapter → {"seconds", "measured"}; empty where the profile has no file (or an unreadable one: times are hints)."""
    try:
        data = yaml.safe_load(path(profile).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    rows = data if isinstance(data, dict) else {}
    return {
        str(k): {"seconds": float(v["seconds"]), "measured": str(v.get("measured", ""))}
        for k, v in rows.items()
        if isinstance(v, dict) and isinstance(v.get("seconds"), (int, float))
    }


def expected(profile: str) -> dict[str, float]:
    """chapter → expected seconds."""
    return {chapter: row["seconds"] for chapter, row in load(profile).items()}


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
        print(f"== {chapter}: its time ({facts['seconds']:.0f} s) is not recorded in {path(profile).name}: it reused {facts['reused']} cached run(s)")
        return
    record(profile, chapter, facts["seconds"], where)


def record(profile: str, chapter: str, seconds: float, where: str) -> None:
    """Write a chapter's measured seconds into the profile's file (atomically; the runner is its only writer)."""
    rows = load(profile)
    rows[chapter] = {"seconds": round(float(seconds)), "measured": f"{dt.date.today().isoformat()}, {where}"}
    rows = {name: {"seconds": round(row["seconds"]), "measured": row["measured"]} for name, row in sorted(rows.items())}
    text = HEADER + yaml.safe_dump(rows, sort_keys=False, allow_unicode=True)
    write_atomic(path(profile), lambda p: p.write_text(text, encoding="utf-8"))
