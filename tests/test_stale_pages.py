"""A page is never published from a run whose inputs changed since: chapters that read another's results are executed
again after it (or shown as not executed, and publishing refuses), and a failed run keeps the last good one."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from lib.core import sources
from lib.edition import cache, publishing, runner, schedule, staging
from lib.edition.folders import Edition
from lib.edition.vouching import entries_digest, unvouched, verified_entries
from lib.errors import BookError
from tests.books import book_of

SOURCE = """# %% [markdown]
# # Source chapter

# %% tags=["parameters"]
profile = "default"  # the edition
models = "a,b"  # the models, comma-separated
hold = ""  # a file that must exist before the next table is written (the test's cue; at most 120 s)

# %%
import os
import time
from pathlib import Path

import pandas as pd

from lib.book.results import Results
from lib.core.store import Schema

for model in models.split(","):
    Results("01_source", profile).table(pd.DataFrame({"value": [len(model)]}), Schema("01_source", "t", ("value",)), model, {})
    Path(os.environ["MARKS"], "01_source").write_text(model)
    asked = time.time()
    while hold and not Path(hold).exists():
        if time.time() - asked > 120:
            raise RuntimeError(f"{hold} did not appear within 120 s")
        time.sleep(0.02)
"""

READER = """# %% [markdown]
# # Reader {name}

# %% tags=["parameters"]
profile = "default"  # the edition

# %%
import pandas as pd

from lib.book.results import Results
from lib.core.store import Schema
from lib.provenance import record
from lib.settings import results_dir

read = sorted(results_dir().joinpath(profile).glob("*/01_source/t.csv"))
for table in read:
    record("data", table, f"chapter 01's table of {{table.parent.parent.name}}")
record("data", results_dir() / profile / "b" / "01_source", "chapter 01's folder of model b")
Results("{name}", profile).table(pd.DataFrame({{"models": [len(read)]}}), Schema("{name}", "n", ("models",)), "chapter", {{}})
"""


@pytest.fixture
def reading_book(tmp_path, monkeypatch):
    """01 writes a table per model; 02 reads 01's tables (as 03-09 read 02's outlier set); 03 reads 01's and 02's (as
    the scorecard reads every chapter's)."""
    book_of(tmp_path, monkeypatch, {"01_source": SOURCE, "02_reader": READER.format(name="02_reader"), "03_card": READER.format(name="03_card")})
    reads = {"01_source": set(), "02_reader": {"01_source"}, "03_card": {"01_source", "02_reader"}}
    monkeypatch.setattr(cache, "prerequisites", lambda name, params: set(reads[name]))
    (tmp_path / "marks").mkdir()
    monkeypatch.setenv("MARKS", str(tmp_path / "marks"))
    yield tmp_path
    sources.declared_parameters.cache_clear()


def run(*args: str) -> None:
    runner.main(["--profile", "quick", "--jobs", "1", *args])


def built_as_make_book_would(edition: Edition) -> None:
    """Stage the edition and stamp an HTML folder as a passing Sphinx build does (the build itself is tested elsewhere)."""
    staging.stage(edition)
    (edition.html / "book" / "chapters").mkdir(parents=True)
    for page in ["index", *(f"book/chapters/{c}" for c in sources.chapters())]:
        (edition.html / f"{page}.html").write_text("<p>page</p>")
    (edition.html / publishing.HTML_STAMP).write_text(json.dumps({"entries": entries_digest(verified_entries(edition))}))


def test_a_reader_is_not_published_after_the_results_it_read_changed(reading_book, capsys):
    edition = Edition("quick")
    run()
    assert unvouched(edition) == {} and verified_entries(edition).keys() == {"01_source", "02_reader", "03_card"}
    # the rerun page's recipe: the source chapter alone, with fewer models and --only
    run("--chapters", "01_source", "-p", "models", "a", "--only")
    why = unvouched(edition)
    assert set(why) == {"02_reader", "03_card"} and why["02_reader"] == "what it read as chapter 01's table of b is missing"
    assert set(verified_entries(edition)) == {"01_source"}
    built_as_make_book_would(edition)
    page = (edition.source / "book" / "chapters" / "02_reader.md").read_text()
    assert "Not executed in this edition" in page and "is not shown: what it read as chapter 01's table of b is missing, so its page" in page
    assert not (edition.source / "book" / "chapters" / "02_reader.ipynb").exists()
    with pytest.raises(BookError, match=r"2 chapter\(s\) of the quick edition have a last run that no longer vouches .*--chapters 02_reader,03_card"):
        publishing.publish(edition)
    # without --only the runner executes the readers again, each after the chapters it reads
    capsys.readouterr()
    run("--chapters", "01_source", "-p", "models", "a")
    out = capsys.readouterr().out
    assert "== also 02_reader, 03_card: run before in this edition" in out
    assert out.index("01_source: reused") < out.index("02_reader (quick): executing") < out.index("03_card (quick): executing")
    assert unvouched(edition) == {}
    card = Path(os.environ["BOOK_RESULTS_DIR"]) / "quick" / "chapter" / "03_card" / "n.csv"
    assert card.read_text().splitlines()[1] == "1"  # it read the one table there is now


def test_a_run_named_with_force_forces_only_the_chapters_named(reading_book, capsys):
    run()
    capsys.readouterr()
    run("--chapters", "01_source", "--force")
    out = capsys.readouterr().out
    assert "01_source (quick): executing, forced" in out and "02_reader: reused" in out and "03_card: reused" in out


def test_a_failed_publish_of_results_keeps_the_last_good_run(reading_book):
    edition = Edition("quick")
    run("--chapters", "01_source", "--only")
    entry, notebook = edition.entry("01_source").read_bytes(), edition.notebook("01_source").read_bytes()
    table = Path(os.environ["BOOK_RESULTS_DIR"]) / "quick" / "b" / "01_source" / "t.csv"
    before = table.read_bytes()
    marks, cue = reading_book / "marks" / "01_source", reading_book / "staging-removed"
    marks.unlink()

    def remove_staging_mid_run() -> None:
        """Once the chapter has written model a's table, and before it writes b's (it waits for the cue)."""
        deadline = time.time() + 120
        while not (marks.is_file() and marks.read_text() == "a") and time.time() < deadline:
            time.sleep(0.02)
        import shutil

        shutil.rmtree(edition.running("01_source"), ignore_errors=True)
        cue.write_text("")

    thread = threading.Thread(target=remove_staging_mid_run)
    thread.start()
    with pytest.raises(BookError, match=r"chapter 01_source recorded writing quick/a/01_source/t.csv but its run left no such file .* keeps its last good run"):
        schedule.build("quick", [("01_source", {"profile": "quick", "hold": str(cue)})], force=True)
    thread.join()
    assert edition.entry("01_source").read_bytes() == entry and edition.notebook("01_source").read_bytes() == notebook
    assert table.read_bytes() == before and unvouched(edition) == {} and not edition.running("01_source").exists()
