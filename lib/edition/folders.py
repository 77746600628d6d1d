"""One edition of the book per profile: its folders, lock and status, and the chapter runs its pages are made from.

_build/<profile>/notebooks/<chapter>.ipynb   executed chapters (a failed one is kept in notebooks/failed/)
_build/<profile>/cache/<chapter>.json        what the chapter's last execution depended on (`lib.edition.cache`)
_build/<profile>/build.json                  what the last runs did with each chapter (executed or reused, why)
_build/<profile>/source/                     the staged book source, generated: edit `book/` and `notebooks/`
_build/<profile>/html/                       the edition (open html/index.html, or upload the folder)
_build/<profile>/student/{source,html}/      the student edition: the same chapters without exercise solutions
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from ..errors import BookError, require
from ..io import write_atomic
from ..settings import build_dir
from .commit import now

_PROFILE_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Edition:
    """The folders of one profile's edition; two profiles never share a path. The student edition of a profile shares
    its executed chapters and builds its own source and HTML, without the exercises' solutions."""

    profile: str
    student: bool = False
    pdf: bool = False  # the source the PDF is typeset from (figures as vector PDFs): _build/<profile>[/student]/pdf

    def __post_init__(self) -> None:
        require(bool(_PROFILE_NAME.fullmatch(self.profile)), f"profile name {self.profile!r} must be letters, digits, '.', '_' or '-'")

    @property
    def root(self) -> Path:
        return build_dir() / self.profile

    @property
    def notebooks(self) -> Path:
        return self.root / "notebooks"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def _pages(self) -> Path:
        pages = self.root / "student" if self.student else self.root
        return pages / "pdf" if self.pdf else pages

    @property
    def latex(self) -> Path:
        return self._pages / "latex"

    @property
    def source(self) -> Path:
        return self._pages / "source"

    @property
    def html(self) -> Path:
        return self._pages / "html"

    @property
    def doctrees(self) -> Path:
        return self._pages / "doctrees"

    @property
    def status_file(self) -> Path:
        return self.root / "build.json"

    def notebook(self, chapter: str) -> Path:
        return self.notebooks / f"{chapter}.ipynb"

    def entry(self, chapter: str) -> Path:
        return self.cache / f"{chapter}.json"

    def running(self, chapter: str) -> Path:
        """The fresh folder a chapter being executed writes its results into ($BOOK_RESULTS_STAGING)."""
        return self.root / "running" / chapter

    @contextmanager
    def locked(self, what: str) -> Iterator[None]:
        """Hold this edition's lock (one writer per edition: the runner and the page builder); a second writer stops with
        one line naming the holder."""
        holder = self.root / ".lock-holder"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = FileLock(self.root / ".lock", timeout=0)
            lock.acquire()
        except Timeout:
            who = lock_holder(self.root)
            raise BookError(f"the {self.profile} edition is being written by {who}; wait for it to finish (or stop it), then run again") from None
        except OSError as err:
            raise BookError(f"cannot write the build folder {self.root} ({err.strerror}); make it writable or set BOOK_BUILD_DIR") from None
        try:
            holder.write_text(f"{what} (pid {os.getpid()}, since {now()})\n", encoding="utf-8")
            yield
        finally:
            holder.unlink(missing_ok=True)
            lock.release()

    def statuses(self) -> dict[str, dict[str, Any]]:
        """What the last runs did with each chapter: status (executed/reused), reason, seconds, at."""
        try:
            return json.loads(self.status_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def set_status(self, chapter: str, status: str, reason: str, seconds: float) -> None:
        """Record what a run did with a chapter (the runner and its workers write it: one at a time)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(self.root / ".status.lock"):
            statuses = self.statuses()
            statuses[chapter] = {"status": status, "reason": reason, "seconds": round(seconds, 1), "at": now()}
            write_atomic(self.status_file, lambda p: p.write_text(json.dumps(statuses, indent=1, sort_keys=True)))


def lock_holder(root: Path) -> str:
    """Who holds the lock of the edition in root, as its holder wrote it ("python -m lib.edition.runner (pid …, since …)")."""
    try:
        return (root / ".lock-holder").read_text(encoding="utf-8").strip()
    except OSError:
        return "another process"
