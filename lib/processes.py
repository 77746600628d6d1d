"""The processes a build starts: whether one is alive and still the one a file names, tying a child to its parent, and
the running-chapter files (`<chapter>.pid`: "pid threads start") that the runner writes and `settings.free_cores` reads."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


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
