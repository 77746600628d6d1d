"""When and at which commit a chapter ran, as the edition's pages and entries record it."""

from __future__ import annotations

import datetime as dt
import subprocess
from typing import Any

from ..settings import REPO_ROOT


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def commit() -> dict[str, Any]:
    """The checkout's commit and whether it has uncommitted changes (`unknown` outside a git checkout)."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
        # the chapter times the build itself writes (profiles/costs) change no result
        status = ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)profiles/costs"]
        dirty = subprocess.run(status, cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": False}
    return {"commit": sha, "dirty": bool(dirty.strip())}


def commit_text(facts: dict[str, Any]) -> str:
    sha = facts.get("commit", "unknown")
    return f"`{sha[:10]}`" + (" with uncommitted changes" if facts.get("dirty") else "")
