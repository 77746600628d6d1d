"""Chapter times: a build writes what it measured beside its edition, never into the committed `profiles/costs`
(a reader's checkout stays clean); `make costs` copies them there on purpose."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lib.core import sources
from lib.edition import costs, schedule
from lib.errors import BookError
from lib.settings import REPO_ROOT
from tests.books import book_of

CHAPTER = """# %% [markdown]
# # Chapter {name}

# %% tags=["parameters"]
profile = "default"

# %%
import time

time.sleep({pause})
"""

COMMITTED = "01_slow: {seconds: 900, measured: elsewhere}\n"


@pytest.fixture
def timed(tmp_path, monkeypatch):
    book_of(tmp_path, monkeypatch, {"01_slow": CHAPTER.format(name="01_slow", pause=1), "02_new": CHAPTER.format(name="02_new", pause=0)})
    (tmp_path / "profiles" / "costs").mkdir()
    (tmp_path / "profiles" / "costs" / "quick.yaml").write_text(COMMITTED)
    yield tmp_path
    sources.declared_parameters.cache_clear()


def test_a_build_records_its_times_beside_the_edition_and_leaves_the_committed_file_alone(timed):
    schedule.build("quick", [(c, {"profile": "quick"}) for c in sources.chapters()])
    assert (timed / "profiles" / "costs" / "quick.yaml").read_text() == COMMITTED  # byte for byte
    measured = costs.measured("quick")
    assert costs.measured_path("quick") == timed / "build" / "quick" / "costs.yaml" and set(measured) == {"01_slow", "02_new"}
    assert 1 <= measured["01_slow"]["seconds"] < 900 and "CPU" in measured["01_slow"]["measured"]
    assert costs.load("quick") == {"01_slow": {"seconds": 900.0, "measured": "elsewhere"}}  # the rerun page's times: committed
    assert costs.expected("quick") == {name: row["seconds"] for name, row in measured.items()}  # ordering: what this machine measured
    assert costs.commit_measured("quick") == ["01_slow", "02_new"]  # `make costs`
    assert costs.load("quick") == measured and costs.commit_measured("quick") == []


def test_make_costs_without_a_build_is_one_line(tmp_path):
    env = {**os.environ, "BOOK_BUILD_DIR": str(tmp_path / "build"), "BOOK_PROFILES_DIR": str(tmp_path / "profiles")}
    done = subprocess.run([sys.executable, "-m", "lib.edition.costs", "quick"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "no measured times for the quick edition" in done.stderr and "make book PROFILE=quick" in done.stderr
    assert not (tmp_path / "profiles").exists()
    with pytest.raises(BookError, match="build it first"):
        costs.commit_measured("no-such-profile")
