"""`python -m lib.edition.runner --jobs N`: independent chapters side by side, the order kept where one reads another."""

from __future__ import annotations

import os
import sys
import time

import pandas as pd
import pytest

from lib.core import sources
from lib.edition import cache, costs, execute, planning, schedule
from lib.edition.folders import Edition
from lib.errors import BookError
from tests.books import book_of

TIMED = """# %% [markdown]
# # Chapter {name}

# %% tags=["parameters"]
profile = "default"
pause = {pause}  # seconds the chapter takes
awaits = ""  # a chapter whose start this one waits for before it ends (at most 120 s)

# %%
import os
import time
from pathlib import Path

import pandas as pd

from lib.book.results import Results
from lib.core.store import Schema

started = time.time()
if "MARKS" in os.environ:  # the test's folder of start marks
    Path(os.environ["MARKS"], "{name}").write_text(str(started))
if pause < 0:
    raise RuntimeError("asked to fail")
time.sleep(pause)
while awaits and not Path(os.environ["MARKS"], awaits).exists():
    if time.time() - started > 120:
        raise RuntimeError(f"chapter {{awaits}} did not start within 120 s of chapter {name}: they did not run side by side")
    time.sleep(0.05)
frame = pd.DataFrame({{"value": [len("{name}") * 7], "started": [started], "ended": [time.time()]}})
Results("{name}", profile).table(frame, Schema("{name}", "t", ("value", "started", "ended")), "m", {{}})
"""


@pytest.fixture
def timed_book(tmp_path, monkeypatch):
    """01_slow, which 03_after reads, and 02_fast; each chapter marks its start in tmp_path/marks (`MARKS`)."""
    chapters = {"01_slow": 0, "02_fast": 0, "03_after": 0}
    book_of(tmp_path, monkeypatch, {name: TIMED.format(name=name, pause=pause) for name, pause in chapters.items()})
    monkeypatch.setattr(cache, "prerequisites", lambda name, params: {"01_slow"} if name == "03_after" else set())
    (tmp_path / "marks").mkdir()
    monkeypatch.setenv("MARKS", str(tmp_path / "marks"))
    yield tmp_path
    sources.declared_parameters.cache_clear()


def _tables(root) -> dict[str, pd.Series]:
    return {p.parent.name: pd.read_csv(p).iloc[0] for p in sorted((root / "results" / "quick").glob("m/*/t.csv"))}


def _plans(**awaits: str):
    """Every chapter in the quick profile; `awaits`: chapter → the chapter whose start it waits for before it ends."""
    return [(c, {"profile": "quick", **({"awaits": awaits[c]} if c in awaits else {})}) for c in sources.chapters()]


def test_two_jobs_overlap_independent_chapters_and_wait_for_prerequisites(timed_book, capsys, monkeypatch):
    """01_slow ends only once 02_fast has started (a build that ran them one after the other fails after 120 s)."""
    monkeypatch.delenv(execute.BUILD_STARTED, raising=False)
    side_by_side = _plans(**{"01_slow": "02_fast"})
    schedule.build("quick", side_by_side, jobs=2)
    parallel = _tables(timed_book)
    slow, fast, after = parallel["01_slow"], parallel["02_fast"], parallel["03_after"]
    assert fast["started"] < slow["ended"]  # side by side
    assert after["started"] >= slow["ended"]  # after the chapter it reads
    statuses = Edition("quick").statuses()
    assert {s["status"] for s in statuses.values()} == {"executed"}
    assert "executing in job 2 of 2" in capsys.readouterr().out
    assert execute.BUILD_STARTED not in os.environ  # a build's start marks only its own chapters' work
    schedule.build("quick", side_by_side, jobs=2)  # nothing changed: all reused, as in a serial build
    assert {s["status"] for s in Edition("quick").statuses().values()} == {"reused"}
    schedule.build("quick", _plans(), force=True)  # serially (01_slow waits for nothing): the same values
    serial = _tables(timed_book)
    assert {k: v["value"] for k, v in serial.items()} == {k: v["value"] for k, v in parallel.items()}
    assert serial["02_fast"]["started"] >= serial["01_slow"]["ended"]


def test_the_longest_chapter_of_the_last_build_starts_first(tmp_path, monkeypatch, capsys):
    chapters = {"01_fast": 0, "02_new": 0, "03_slow": 3}
    book_of(tmp_path, monkeypatch, {name: TIMED.format(name=name, pause=pause) for name, pause in chapters.items()})
    monkeypatch.setattr(cache, "prerequisites", lambda name, params: set())
    first = [p for p in _plans() if p[0] != "02_new"]
    schedule.build("quick", first, jobs=2)  # in chapter order: nothing is known yet
    assert planning.longest_first(Edition("quick"), [name for name, _ in first]) == ["03_slow", "01_fast"]
    # chapters that never ran keep their order, after those with a time
    assert planning.longest_first(Edition("quick"), [name for name, _ in _plans()]) == ["03_slow", "01_fast", "02_new"]
    capsys.readouterr()
    schedule.build("quick", _plans(), jobs=2, force=True)
    started = [line.split()[1] for line in capsys.readouterr().out.splitlines() if "executing in job" in line]
    assert started == ["03_slow", "01_fast", "02_new"]
    sources.declared_parameters.cache_clear()


def test_a_first_build_starts_the_longest_by_the_committed_times_and_records_what_it_measured(tmp_path, monkeypatch, capfd):
    chapters = {"01_fast": 0, "02_new": 0, "03_slow": 2}
    book_of(tmp_path, monkeypatch, {name: TIMED.format(name=name, pause=pause) for name, pause in chapters.items()})
    monkeypatch.setattr(cache, "prerequisites", lambda name, params: set())
    (tmp_path / "profiles" / "costs").mkdir()
    (tmp_path / "profiles" / "costs" / "quick.yaml").write_text("03_slow: {seconds: 900, measured: elsewhere}\n01_fast: {seconds: 5, measured: elsewhere}\n")
    assert planning.longest_first(Edition("quick"), [name for name, _ in _plans()]) == ["03_slow", "01_fast", "02_new"]
    start = time.time()
    schedule.build("quick", _plans(), jobs=2)
    took = time.time() - start
    out = capfd.readouterr().out.splitlines()  # the jobs' processes print to the file descriptor
    started = [line.split()[1] for line in out if "executing in job" in line]
    assert started == ["03_slow", "01_fast", "02_new"]
    printed = {line.split()[1].rstrip(":"): float(line.split()[-2]) for line in out if ": done in " in line}  # by each chapter's worker
    recorded = costs.measured("quick")  # by the runner, from the entry the worker wrote
    measured = costs.expected("quick")
    # the committed 900 s is replaced by what this build measured (a kernel's start varies, so no order between them)
    assert set(measured) == set(recorded) == set(chapters) and measured == {name: row["seconds"] for name, row in recorded.items()}
    tables = _tables(tmp_path)
    for name, pause in chapters.items():
        inside = tables[name]["ended"] - tables[name]["started"]  # the chapter's own clock, around its pause
        assert pause <= inside and inside - 0.5 <= recorded[name]["seconds"] <= took + 0.5, (name, inside, recorded[name], took)
        assert printed[name] == recorded[name]["seconds"], (name, printed, recorded)  # the line said what was recorded
    assert "CPU" in recorded["03_slow"]["measured"] and "2 at once" in recorded["03_slow"]["measured"]
    schedule.build("quick", _plans(), jobs=2, force=True, timed=False)  # a scaled smoke run: the times stay
    assert costs.expected("quick") == measured
    sources.declared_parameters.cache_clear()


def test_a_run_that_reused_cached_work_keeps_the_committed_time(tmp_path, monkeypatch, capsys):
    """A chapter that took a cached pre-training checkpoint or fine-tuning run (provenance kind "reused") ran faster
    than it costs: its committed time stays, in a parallel and in a serial build, and the runner says why."""
    reuse = 'from lib.provenance import record\nrecord("reused", "fine-tuning run x", "fine-tuning run x")\n'
    sources_ = {"01_cached": TIMED.format(name="01_cached", pause=0).replace("started = time.time()", reuse + "started = time.time()")}
    sources_["02_fresh"] = TIMED.format(name="02_fresh", pause=0)
    book_of(tmp_path, monkeypatch, sources_)
    monkeypatch.setattr(cache, "prerequisites", lambda name, params: set())
    (tmp_path / "profiles" / "costs").mkdir()
    (tmp_path / "profiles" / "costs" / "quick.yaml").write_text("01_cached: {seconds: 900, measured: elsewhere}\n")
    for jobs in (2, 1):
        schedule.build("quick", _plans(), jobs=jobs, force=True)
        assert costs.load("quick")["01_cached"] == {"seconds": 900, "measured": "elsewhere"}  # the committed file is never written by a build
        assert "02_fresh" in costs.measured("quick") and "01_cached" not in costs.measured("quick")
        assert "01_cached: its time" in capsys.readouterr().out
        assert cache.Entry.load(Edition("quick").entry("01_cached")).inputs == []  # a cached run is not an input
    sources.declared_parameters.cache_clear()


def test_default_jobs_follow_the_cores(monkeypatch):
    monkeypatch.setattr(planning.os, "cpu_count", lambda: 2)
    assert planning.default_jobs() == 2
    monkeypatch.setattr(planning.os, "cpu_count", lambda: 64)
    assert planning.default_jobs() == planning.MAX_JOBS
    monkeypatch.setattr(planning.os, "cpu_count", lambda: None)
    assert planning.default_jobs() == 1


def test_a_failing_chapter_stops_what_needs_it_and_says_so(timed_book, tmp_path):
    source = tmp_path / "notebooks" / "01_slow.py"
    source.write_text(source.read_text().replace("pause = 0  #", "pause = -1  #"))
    sources.declared_parameters.cache_clear()
    start = time.time()
    with pytest.raises(BookError, match=r"chapter 01_slow failed \(its message is above\)"):
        schedule.build("quick", _plans(), jobs=2)
    statuses = Edition("quick").statuses()
    assert statuses["01_slow"]["status"] == "failed" and statuses["02_fast"]["status"] == "executed" and "03_after" not in statuses
    assert time.time() - start < 120


def test_prerequisites_are_read_from_what_a_chapter_calls_and_its_parameters():
    everything = set(sources.chapters())
    assert cache.prerequisites("03_positional_origin", {}) == {"02_outlier_neurons"}  # it reads the outlier set
    # chapter 01 draws its sentences outside chapter 02's selection sample: it reads chapter 02's definition of it
    assert cache.prerequisites("01_anisotropy", sources.declared_parameters("01_anisotropy")) == {"02_outlier_neurons"}
    assert cache.prerequisites("06_clipping_whitening", sources.declared_parameters("06_clipping_whitening")) == {"02_outlier_neurons"}
    assert cache.prerequisites("10_common_direction", sources.declared_parameters("10_common_direction")) == {"05_pretraining"}
    assert cache.prerequisites("10_common_direction", {"models": "minilm,mpnet"}) == set()
    assert cache.prerequisites("10_common_direction", {}) == {"05_pretraining"}  # a profile that keeps the cell's models (a first default build)
    assert cache.prerequisites("14_scorecard", sources.declared_parameters("14_scorecard")) == everything - {"14_scorecard"}


def test_every_committed_cost_file_reads_and_covers_every_chapter():
    """A costs file that does not parse would be ignored (times are hints): the runner's order and the rerun page's
    table would silently lose that edition."""
    import yaml

    from lib.core.sources import chapters
    from lib.edition.costs import chapter_costs

    for path in sorted(costs.path("quick").parent.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert set(costs.load(path.stem)) == set(raw), path.name
        assert {name.split(":")[0] for name in raw} <= set(chapters()), path.name  # chapters, and runs ahead of them
    assert {name.split(":")[0] for name in costs.load("quick")} == set(chapters())  # CI's edition: every chapter timed (a new one, once built)
    table = chapter_costs()
    gpu = [line.split(" | ")[3] for line in table.splitlines() if line.startswith("| 05_pretraining")]
    assert gpu and gpu[0].startswith("≈ "), table  # the gpu edition's times are estimates until a build measures them


AHEAD_RUN = "import pathlib, sys, time; time.sleep({pause}); sys.exit({code}) if {code} else pathlib.Path('{path}').write_text(str(time.time()))"


def test_work_ahead_of_a_chapter_runs_as_jobs_of_its_own_before_it(tmp_path, monkeypatch, capfd):
    """A chapter's long work (`planning.AHEAD`: chapter 05's pre-training runs) runs as jobs beside the other chapters;
    the chapter starts once all of it is done, and each job's time is recorded under "<chapter>:<run>"."""
    chapters = {"01_other": 2, "02_trained": 0}
    book_of(tmp_path, monkeypatch, {name: TIMED.format(name=name, pause=pause) for name, pause in chapters.items()})
    monkeypatch.setattr(cache, "prerequisites", lambda name, params: set())
    (tmp_path / "profiles" / "costs").mkdir()
    runs = {f"02_trained:{r}": [sys.executable, "-c", AHEAD_RUN.format(pause=1, code=0, path=tmp_path / r)] for r in ("a", "b")}
    monkeypatch.setitem(planning.AHEAD, "02_trained", lambda profile, params: runs)
    (tmp_path / "profiles" / "costs" / "quick.yaml").write_text("01_other: {seconds: 100, measured: x}\n02_trained: {seconds: 20, measured: x}\n")
    order = planning.longest_first(Edition("quick"), ["01_other", "02_trained", *runs])
    assert order == ["01_other", "02_trained", "02_trained:a", "02_trained:b"]  # 20 s: the chapter, its runs' times unknown
    (tmp_path / "profiles" / "costs" / "quick.yaml").write_text(
        "01_other: {seconds: 100, measured: x}\n02_trained: {seconds: 20, measured: x}\n02_trained:a: {seconds: 50, measured: x}\n"
        "02_trained:b: {seconds: 60, measured: x}\n"
    )
    order = planning.longest_first(Edition("quick"), ["01_other", "02_trained", *runs])
    assert order == ["02_trained:a", "02_trained:b", "01_other", "02_trained"]  # the chain of 130 s before the chapter of 100
    schedule.build("quick", _plans(), jobs=2)
    out = capfd.readouterr().out
    assert "02_trained:a (quick): executing in job" in out and "work ahead of chapter 02_trained" in out
    trained = _tables(tmp_path)["02_trained"]
    assert trained["started"] >= max(float((tmp_path / r).read_text()) for r in ("a", "b"))
    assert {"01_other", "02_trained", "02_trained:a", "02_trained:b"} == set(costs.expected("quick"))
    assert 1 <= costs.expected("quick")["02_trained:a"] < 50
    runs["02_trained:b"] = [sys.executable, "-c", AHEAD_RUN.format(pause=0, code=3, path=tmp_path / "b")]
    with pytest.raises(BookError, match=r"^02_trained:b failed \(its message is above\)"):
        schedule.build("quick", _plans(), jobs=2, force=True)
    assert Edition("quick").statuses()["02_trained"]["status"] == "executed"  # the last run's; this build did not start it
    assert "02_trained:b" not in Edition("quick").statuses()
    sources.declared_parameters.cache_clear()


def test_work_cached_by_this_build_is_part_of_its_cost(tmp_path, monkeypatch, capsys):
    """The 'reused' rule counts only work cached before the build started: a chapter that reused a run it (or a job
    ahead of it) cached in this build has its time recorded; one that took older cached work does not."""
    older = tmp_path / "older.json"
    older.write_text("{}")
    os.utime(older, (time.time() - 3600, time.time() - 3600))
    reuse = (
        "import pathlib\nfrom lib.provenance import record\nfresh = pathlib.Path({folder!r}) / 'fresh.json'\nfresh.write_text('{{}}')\n"
        "record('reused', {which}, 'a cached run')\n"
    )
    text = {}
    for name, which in (("01_fresh", "fresh"), ("02_older", repr(str(older)))):
        head = reuse.format(folder=str(tmp_path), which=which)
        text[name] = TIMED.format(name=name, pause=0).replace("started = time.time()", head + "started = time.time()")
    book_of(tmp_path, monkeypatch, text)
    monkeypatch.setattr(cache, "prerequisites", lambda name, params: set())
    (tmp_path / "profiles" / "costs").mkdir()
    schedule.build("quick", _plans(), jobs=1)
    assert set(costs.expected("quick")) == {"01_fresh"}
    assert "02_older: its time" in capsys.readouterr().out
    sources.declared_parameters.cache_clear()
