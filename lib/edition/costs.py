"""Expected chapter times, committed with the book (`profiles/costs/<profile>.yaml`), so that a first build starts the
longest chapters first too; every chapter a build executes writes its measured time there (commit the file to share
it). A chapter's own last run in an edition, where there is one, is a better guess and comes first (`runner`)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..core import profiles
from ..io import write_atomic

HEADER = (
    "# Seconds each chapter of this profile took when a build last executed it (wall clock, the build's machine and\n"
    "# jobs): the runner starts the longest first. Written by `python -m lib.edition.runner`; commit it to share it.\n"
)


def path(profile: str) -> Path:
    return profiles.PROFILES / "costs" / f"{profile}.yaml"


def expected(profile: str) -> dict[str, float]:
    """chapter → expected seconds; empty where the profile has no file (or an unreadable one: the order is a hint)."""
    try:
        data = yaml.safe_load(path(profile).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float))} if isinstance(data, dict) else {}


def record(profile: str, chapter: str, seconds: float) -> None:
    """Write a chapter's measured seconds into the profile's file (atomically; the runner is its only writer)."""
    costs = {name: round(value) for name, value in {**expected(profile), chapter: seconds}.items()}
    text = HEADER + yaml.safe_dump(dict(sorted(costs.items())), sort_keys=False)
    write_atomic(path(profile), lambda p: p.write_text(text))
