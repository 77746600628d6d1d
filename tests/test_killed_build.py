"""A `--jobs` build killed mid-chapter leaves no process behind and publishes nothing that its entries do not list."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lib import processes
from lib.core import sources
from lib.edition import cache, execute, schedule
from lib.edition.folders import Edition
from lib.errors import BookError
from lib.settings import REPO_ROOT
from tests.books import book_of

SLOW = """# %% [markdown]
# # Chapter {name}

# %% tags=["parameters"]
profile = "default"
models = "a,b"
pause = {pause}
hold = ""  # a file that must exist before the next table is written (the test's cue; at most 120 s)
stray = False  # also write a file that no run records, as an orphan kernel would

# %%
import os
import time
from pathlib import Path

import pandas as pd

from lib.book.results import Results
from lib.core.store import Schema

Path(os.environ["MARKS"], "{name}").write_text(str(os.getpid()))  # this kernel's process, for the test
for model in models.split(","):
    Results("{name}", profile).table(pd.DataFrame({{"value": [1]}}), Schema("{name}", "t", ("value",)), model, {{}})
    time.sleep(pause)
    asked = time.time()
    while hold and not Path(hold).exists():
        if time.time() - asked > 120:
            raise RuntimeError(f"{{hold}} did not appear within 120 s")
        time.sleep(0.05)
if stray:
    folder = Path(os.environ["BOOK_RESULTS_STAGING"], profile, "zz", "{name}")
    folder.mkdir(parents=True)
    (folder / "t.csv").write_text("value\\n999\\n")
"""


@pytest.fixture
def slow_book(tmp_path, monkeypatch):
    book_of(tmp_path, monkeypatch, {"01_slow": SLOW.format(name="01_slow", pause=3), "02_quick": SLOW.format(name="02_quick", pause=0)})
    monkeypatch.setattr(cache, "prerequisites", lambda name, params: set())
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("MARKS", str(marks))
    yield tmp_path
    sources.declared_parameters.cache_clear()


def start_runner(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "lib.edition.runner", "--profile", "quick", *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def wait_for(condition, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.2)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone too (waiting for its parent to reap it)
        return f.read().split(")")[-1].split()[0] == "Z"


def kill_mid_chapter(root: Path) -> tuple[int, int]:
    """Start a --jobs 2 build whose kernels wait after their first table for a cue that never comes, SIGKILL its runner
    once 01_slow's first table is written; the worker's and the kernel's process ids."""
    killed = start_runner("--jobs", "2", "-p", "hold", str(root / "never"))
    first = Edition("quick").running("01_slow") / "quick" / "a" / "01_slow" / "t.csv"  # after the mark with the kernel's id
    wait_for(lambda: first.is_file() and (root / "build/quick/running/01_slow.pid").is_file())
    worker = int((root / "build/quick/running/01_slow.pid").read_text().split()[0])
    kernel = int((root / "marks" / "01_slow").read_text())
    assert {killed.pid, worker, kernel} <= set(started_by_the_build(root / "marks"))  # what the check after the kill looks for
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    return worker, kernel


def started_by_the_build(marks: Path) -> list[int]:
    """The live processes (not zombies) whose environment names this test's marks folder: its runners, their workers and
    kernels, and whatever those started."""
    needle = f"\0MARKS={marks}\0".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        pid = int(environ.parent.name)
        try:
            if pid != os.getpid() and needle in b"\0" + environ.read_bytes() and not gone(pid):
                found.append(pid)
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile, or another user's
    return found


def plan_lines(*args: str) -> list[str]:
    done = start_runner("--plan", *args)
    out, _ = done.communicate(timeout=120)
    return [line for line in out.splitlines() if line.startswith("== ")]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_killed_parallel_build_leaves_no_process_and_publishes_nothing_unlisted(slow_book):
    root = slow_book
    worker, kernel = kill_mid_chapter(root)
    try:
        wait_for(lambda: gone(worker) and gone(kernel), 15)  # (a) left alone: the worker and its kernel end with the runner
        wait_for(lambda: not started_by_the_build(root / "marks"), 15)  # and all else it started: no orphan is left to write later
    finally:
        for pid in started_by_the_build(root / "marks"):  # a failed check leaves no kernel waiting for its cue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    edition = Edition("quick")
    assert not edition.entry("01_slow").exists() and not (root / "results/quick/b/01_slow").exists()
    assert "== 01_slow: would be executed, no earlier run" in plan_lines()
    assert edition.statuses().get("01_slow", {}).get("status") != "executed"
    # (b) at once a second build with fewer models: it runs, and only what it lists is published
    again = start_runner("--jobs", "2", "-p", "models", "a")
    out, _ = again.communicate(timeout=300)
    assert again.returncode == 0, out
    assert sorted(p.parent.name for p in (root / "results/quick").glob("*/01_slow")) == ["a"]
    entry = json.loads(edition.entry("01_slow").read_text())
    assert {o["label"] for o in entry["outputs"]} == {"quick/a/01_slow/t.csv", "quick/a/01_slow/meta.json"}
    assert edition.statuses()["01_slow"]["status"] == "executed" and "== 01_slow: would be reused" in plan_lines("-p", "models", "a")


def test_a_live_process_still_executing_a_chapter_stops_a_new_run_with_one_line(slow_book):
    edition = Edition("quick")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        execute.pid_file(edition, "01_slow").parent.mkdir(parents=True)
        execute.pid_file(edition, "01_slow").write_text(f"{holder.pid} 1 {processes.start_time(holder.pid)}\n")  # as the process wrote it
        (edition.running("01_slow") / "quick").mkdir(parents=True)
        with pytest.raises(
            BookError, match=rf"chapter 01_slow is still being executed by process {holder.pid}, left by a build that was stopped; .*kill {holder.pid}"
        ):
            schedule.build("quick", [("01_slow", {"profile": "quick", "pause": 0})])
        assert edition.running("01_slow").is_dir()  # its folders are left to it
    finally:
        holder.kill()
        holder.wait()
    schedule.build("quick", [("01_slow", {"profile": "quick", "pause": 0})])  # once it has ended, the chapter runs
    assert not execute.pid_file(edition, "01_slow").exists() and edition.entry("01_slow").exists()


def test_a_pid_file_whose_id_now_names_another_process_is_a_leftover(slow_book):
    edition = Edition("quick")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # alive, but not the one that wrote the file
    try:
        file = execute.pid_file(edition, "01_slow")
        file.parent.mkdir(parents=True)
        file.write_text(f"{other.pid} 1 1\n")  # another start time: the id was given to a new process
        assert processes.pid_file_holder(file) is None
        file.write_text(f"{other.pid}\n")  # an older build's file, no start time: a process that is not the runner
        assert processes.pid_file_holder(file) is None
        schedule.build("quick", [("01_slow", {"profile": "quick", "pause": 0})])
        assert edition.statuses()["01_slow"]["status"] == "executed" and not file.exists() and other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_only_the_files_a_run_recorded_are_published(slow_book):
    schedule.build("quick", [("01_slow", {"profile": "quick", "pause": 0, "stray": True})])
    assert sorted(p.parent.name for p in (slow_book / "results/quick").glob("*/01_slow")) == ["a", "b"]
    assert not Edition("quick").running("01_slow").exists()


POOL = """# %% [markdown]
# # Chapter with a pool

# %% tags=["parameters"]
profile = "default"  # the edition

# %%
import os
import time
from pathlib import Path

from lib.train.workers import pool

Path(os.environ["MARKS"], "kernel").write_text(str(os.getpid()))
with pool("cores") as runs:
    list(runs.map(time.sleep, [(120,), (120,)]))
"""


def children(pid: int) -> list[int]:
    """The processes whose parent is pid."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_killed_build_leaves_no_pool_worker_behind(tmp_path, monkeypatch):
    book_of(tmp_path, monkeypatch, {"01_pool": POOL, "02_other": SLOW.format(name="02_other", pause=0)})
    (tmp_path / "marks").mkdir()
    monkeypatch.setenv("MARKS", str(tmp_path / "marks"))
    try:
        killed = start_runner("--jobs", "2")
        wait_for(lambda: (tmp_path / "marks" / "kernel").is_file())
        kernel = int((tmp_path / "marks" / "kernel").read_text())
        wait_for(lambda: len(children(kernel)) >= 3, 60)  # two pool workers and multiprocessing's resource tracker
        started = children(kernel)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        wait_for(lambda: all(gone(p) for p in [kernel, *started]), 20)
    finally:
        sources.declared_parameters.cache_clear()


def test_make_clean_is_refused_while_a_build_writes_an_edition(slow_book):
    build = slow_book / "build"
    clean = lambda: subprocess.run([sys.executable, "-m", "lib.edition.clean"], cwd=REPO_ROOT, capture_output=True, text=True)
    running = start_runner("--jobs", "1", "--chapters", "01_slow")
    try:
        wait_for(lambda: (slow_book / "marks" / "01_slow").is_file())
        refused = clean()
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.count("\n") == 1 and "the quick edition is being written by python -m lib.edition.runner (pid" in refused.stderr
        assert (build / "quick" / ".lock").is_file() and execute.pid_file(Edition("quick"), "01_slow").is_file()
        out, _ = running.communicate(timeout=120)
        assert running.returncode == 0, out  # the build was left alone and finished
    finally:
        running.kill()
    done = clean()
    assert done.returncode == 0 and f"deleted {build}" in done.stdout and not build.exists()
    assert not list(slow_book.glob("build.deleting-*"))
