"""A chapter reads of the others' results only what their current runs vouch for, and what it read is digested as it
is read: a folder planted by hand never reaches a page, a lost entry takes its readers' pages with it, and an input
edited while a chapter runs makes that run stale."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from lib.core import sources
from lib.edition import cache, runner, schedule
from lib.edition.folders import Edition
from lib.edition.vouching import unvouched, verified_entries
from tests.books import book_of

SOURCE = """# %% [markdown]
# # Source chapter

# %% tags=["parameters"]
profile = "default"  # the edition

# %%
import pandas as pd

from lib.book.results import Results
from lib.core.store import Schema

for model in ("a", "b"):
    Results("01_source", profile).table(pd.DataFrame({"value": [len(model)]}), Schema("01_source", "t", ("value",)), model, {}, {"name": model})
"""

CARD = """# %% [markdown]
# # Card

# %% tags=["parameters"]
profile = "default"  # the edition

# %%
import pandas as pd

from lib.book.results import Results
from lib.core import store
from lib.experiments.verdicts import Tables

tables = Tables(profile)  # as the scorecard reads the edition
names = [store.model_name(profile, m, "01_source") for m in tables.models("01_source", "t")]
Results("02_card", profile).table(pd.DataFrame({"models": [",".join(names)]}), store.Schema("02_card", "n", ("models",)), "chapter", {})
"""

SLOW_READER = """# %% [markdown]
# # Slow reader

# %% tags=["parameters"]
profile = "default"  # the edition
source = ""  # the input file
hold = ""  # a file that must exist before the chapter writes its table

# %%
import time
from pathlib import Path

import pandas as pd

from lib.book.results import Results
from lib.core.store import Schema
from lib.provenance import record

record("data", source, "the registry")
value = Path(source).read_text().strip()
Path(hold + ".read").write_text("")
asked = time.time()
while not Path(hold).exists():
    if time.time() - asked > 120:
        raise RuntimeError(f"{hold} did not appear within 120 s")
    time.sleep(0.02)
Results("01_slow", profile).table(pd.DataFrame({"value": [value]}), Schema("01_slow", "v", ("value",)), "chapter", {})
"""


@pytest.fixture
def card_book(tmp_path, monkeypatch):
    book_of(tmp_path, monkeypatch, {"01_source": SOURCE, "02_card": CARD})
    reads = {"01_source": set(), "02_card": {"01_source"}}
    monkeypatch.setattr(cache, "prerequisites", lambda name, params: set(reads[name]))
    yield tmp_path
    sources.declared_parameters.cache_clear()


def card_models() -> str:
    return (Path(os.environ["BOOK_RESULTS_DIR"]) / "quick" / "chapter" / "02_card" / "n.csv").read_text().splitlines()[1].strip('"')


def test_a_planted_folder_never_reaches_the_card(card_book):
    edition = Edition("quick")
    runner.main(["--profile", "quick", "--jobs", "1"])
    assert card_models() == "a,b"
    results = Path(os.environ["BOOK_RESULTS_DIR"]) / "quick"
    planted = results / "bert-base-uncased" / "01_source"
    shutil.copytree(results / "a" / "01_source", planted)
    meta = json.loads((planted / "meta.json").read_text())
    (planted / "meta.json").write_text(json.dumps({**meta, "model_info": {"name": "bert-base-uncased (PLANTED)"}}))
    runner.main(["--profile", "quick", "--jobs", "1"])  # as `make book` again: nothing any run vouches for changed
    assert card_models() == "a,b" and unvouched(edition) == {}
    runner.main(["--profile", "quick", "--jobs", "1", "--chapters", "02_card", "--force"])  # executed, it reads afresh
    assert card_models() == "a,b"  # the planted folder is written by no run: the card does not see it
    assert unvouched(edition) == {}


def test_a_lost_entry_takes_the_pages_that_read_its_results(card_book, capsys):
    edition = Edition("quick")
    runner.main(["--profile", "quick", "--jobs", "1"])
    edition.entry("01_source").unlink()  # as a kill between a chapter's entry removal and its new entry leaves it
    assert "02_card" not in verified_entries(edition)
    assert unvouched(edition)["02_card"].startswith("what it read as results of the quick edition is no longer what a current run")
    capsys.readouterr()
    runner.main(["--profile", "quick", "--jobs", "1"])  # 01 runs again; its results are byte-identical, so the card is reused
    assert "01_source (quick): executing" in capsys.readouterr().out
    assert set(verified_entries(edition)) == {"01_source", "02_card"}


def test_an_input_edited_while_the_chapter_runs_makes_its_run_stale(tmp_path, monkeypatch):
    book_of(tmp_path, monkeypatch, {"01_slow": SLOW_READER})
    edition, source, hold = Edition("quick"), tmp_path / "claims.yaml", tmp_path / "hold"
    source.write_text("margin: 50\n")

    def edit_after_it_was_read() -> None:
        deadline = time.time() + 120
        while not Path(str(hold) + ".read").exists() and time.time() < deadline:
            time.sleep(0.02)
        source.write_text("margin: 25\n")
        hold.write_text("")

    thread = threading.Thread(target=edit_after_it_was_read)
    thread.start()
    plan = [("01_slow", {"profile": "quick", "source": str(source), "hold": str(hold)})]
    schedule.build("quick", plan, force=True)
    thread.join()
    assert (Path(os.environ["BOOK_RESULTS_DIR"]) / "quick" / "chapter" / "01_slow" / "v.csv").read_text().splitlines()[1] == "margin: 50"  # what it read
    entry = cache.Entry.load(edition.entry("01_slow"))
    parts = cache.key_parts(sources.source_file("01_slow"), plan[0][1])
    assert cache.stale(entry, parts, edition.notebook("01_slow")) == "data the registry changed"
    assert unvouched(edition) == {"01_slow": "what it read as the registry has changed since"}
    sources.declared_parameters.cache_clear()
