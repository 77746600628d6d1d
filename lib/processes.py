"""The processes a build starts: whether one is alive and still the one a file names, tying a child to its parent, and
the running-chapter protocol: while a chapter executes, its process holds `<folder>/<chapter>.pid` ("pid threads
start") and its environment names the folder and the chapter, so that a chapter's own workers see which cores the
other chapters of the build hold (`free_cores`)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import BookError

RUNNING = "BOOK_RUNNING_DIR"  # set while a chapter executes: the folder of one `<chapter>.pid` file per chapter executing
CHAPTER = "BOOK_CHAPTER"  # set while a chapter executes: the chapter this process executes


def alive(pid: int) -> bool:
    """Whether a process with this id exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_time(pid: int) -> str:
    """When the process started, in clock ticks since boot (Linux's /proc/<pid>/stat, field 22); '' where unknown. With
    its id it names one process: an id the system gave to a new process after the first ended has another start."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def die_with_parent(parent: int) -> None:
    """In a child process, first thing: Linux sends it SIGKILL when its parent ends (PR_SET_PDEATHSIG), so no process a
    build starts outlives it; a parent already gone (the child's is no longer `parent`) ends it at once."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def write_pid_file(file: Path, threads: int) -> Path:
    """Say that this process runs a chapter with `threads` CPU threads (the cores it holds)."""
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f".{file.name}.{os.getpid()}")
    tmp.write_text(f"{os.getpid()} {threads} {start_time(os.getpid())}\n", encoding="ascii")
    os.replace(tmp, file)  # whole or not at all: a reader never sees half a line
    return file


def pid_file_holder(file: Path) -> tuple[int, int] | None:
    """(pid, threads) of the live process that wrote the file; None when the file is unreadable, the process has ended,
    or its id now names another process (a different start time; a file without one: a process that is not the runner)."""
    try:
        fields = Path(file).read_text(encoding="ascii").split()
        pid, threads = int(fields[0]), int(fields[1]) if len(fields) > 1 else 1
    except (OSError, ValueError, IndexError):
        return None
    if not alive(pid):
        return None
    now = start_time(pid)
    if len(fields) > 2 and now:
        return (pid, threads) if fields[2] == now else None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return (pid, threads)  # no /proc (not Linux): alive is all that can be known
    return (pid, threads) if b"lib.edition.runner" in command else None


def pid_file(folder: Path, chapter: str) -> Path:
    """The file that names the process executing a chapter while it runs."""
    return Path(folder) / f"{chapter}.pid"


@contextmanager
def executing(folder: Path, chapter: str, threads: int) -> Iterator[Path]:
    """Hold the chapter's pid file (with the `threads` CPU threads it computes with) and name it in the environment
    (`RUNNING`, `CHAPTER`: processes started meanwhile inherit them) until the block ends. A live process of an earlier
    build that still executes the chapter (its runner was killed) stops this one with a line naming it, instead of
    having the chapter's folders deleted under it; a file whose process has ended, or whose id now names an unrelated
    process, is a leftover and is replaced."""
    file = pid_file(folder, chapter)
    holder = pid_file_holder(file)
    if holder is not None and holder[0] != os.getpid():
        raise BookError(
            f"chapter {chapter} is still being executed by process {holder[0]}, left by a build that was stopped; "
            f"wait for it to end or stop it (kill {holder[0]}), then run again"
        )
    write_pid_file(file, threads)
    os.environ[RUNNING], os.environ[CHAPTER] = str(file.parent), chapter
    try:
        yield file
    finally:
        for var in (RUNNING, CHAPTER):
            os.environ.pop(var, None)
        file.unlink(missing_ok=True)


def free_cores() -> int:
    """CPU cores that no other chapter of the running build holds (at least 1; all of them outside a build): a chapter
    left running alone gets the cores the others freed."""
    total, folder = os.cpu_count() or 1, os.environ.get(RUNNING)
    if not folder:
        return total
    held = [pid_file_holder(file) for file in Path(folder).glob("*.pid") if file.stem != os.environ.get(CHAPTER)]
    return max(1, total - sum(h[1] for h in held if h is not None))  # a file whose process is gone (or not ours) holds none
