"""A page is built from its current source whatever the clock said when Sphinx last read it (issue 73, item 4): what
Sphinx reads again is decided by content digests (lib/edition/source_digests.py), not by times."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lib.edition import publishing, source_digests, staging
from lib.edition.folders import Edition

DAY_NS = 86_400 * 10**9

CLOCK_AHEAD = f"""import time

_time, _time_ns = time.time, time.time_ns
time.time = lambda: _time() + {DAY_NS / 1e9}
time.time_ns = lambda: _time_ns() + {DAY_NS}
"""


def built_with_the_clock_ahead(edition: Edition, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Build the edition's HTML with the processes it starts (jupyter-book, sphinx-build) seeing the clock a day ahead
    (a sitecustomize module), and its files dated a day ahead, as a machine whose clock ran ahead would leave them."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(CLOCK_AHEAD)
    ahead = time.time_ns() + DAY_NS  # before the times Sphinx stores as it reads, as on that machine
    with monkeypatch.context() as patch:
        patch.setenv("PYTHONPATH", str(folder))
        publishing.build_html(edition)
    for path in [*edition.html.rglob("*"), *edition.doctrees.rglob("*"), *edition.source.rglob("*")]:
        if path.is_file():
            os.utime(path, ns=(ahead, ahead))


def test_a_page_changed_after_a_build_with_the_clock_ahead_is_built_from_its_new_source(own_page_book, monkeypatch, tmp_path):
    rerun = staging.REPO_ROOT / "book" / "rerun.md"
    rerun.write_text("# How to re-run\n\nThe first wording.\n")
    built_with_the_clock_ahead(own_page_book, tmp_path / "clock", monkeypatch)
    env = pickle.loads((own_page_book.doctrees / "environment.pickle").read_bytes())
    assert env.all_docs["book/rerun"] > (time.time_ns() + DAY_NS // 2) // 1000  # Sphinx stored a read time a day ahead
    page = own_page_book.html / "book" / "rerun.html"
    assert "The first wording." in page.read_text()
    rerun.write_text("# How to re-run\n\nThe second wording.\n")  # staged with today's time: older than the stored read time
    publishing.build_html(own_page_book)
    assert "The second wording." in page.read_text() and "The first wording." not in page.read_text()
    now = time.time_ns()
    ahead = sorted(p.relative_to(own_page_book.html).as_posix() for p in own_page_book.html.rglob("*") if p.stat().st_mtime_ns > now)
    assert ahead == []  # nothing left dated ahead: such a page would look newer than any later change to its templates


def test_pages_read_in_parallel_keep_their_digests(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    (source / "conf.py").write_text('extensions = ["lib.edition.source_digests"]\n')
    pages = [f"page{i}" for i in range(8)]  # Sphinx reads in parallel from 6 pages on
    (source / "index.rst").write_text("Index\n=====\n\n.. toctree::\n\n   " + "\n   ".join(pages) + "\n")
    for name in pages:
        (source / f"{name}.rst").write_text(f"{name}\n{'=' * len(name)}\n\nText of {name}.\n")
    sphinx = Path(sys.executable).parent / "sphinx-build"
    subprocess.run([sphinx, "-j", "2", "-q", "-d", tmp_path / "doctrees", source, tmp_path / "html"], check=True)
    env = pickle.loads((tmp_path / "doctrees" / "environment.pickle").read_bytes())
    assert set(getattr(env, source_digests.ATTRIBUTE)) == {"index", *pages}  # merged from the processes that read them
