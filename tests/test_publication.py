"""Publishing a chapter's results (issue 73, item 6): all of them or none, on whatever file system the results folder is,
and a publication that fails leaves the last good run (results, executed notebook, cache entry) as it was, with one
line naming the file. The chapter is not executed: papermill is replaced by a stand-in that plants the staged files
and records them as the chapter's outputs, so the runner's own publication step runs as in a build."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import papermill
import pytest

from lib import provenance
from lib.core import sources
from lib.edition import execute
from lib.edition.folders import Edition
from lib.errors import BookError
from lib.settings import STAGING, results_dir
from tests.books import book_of

CHAPTER = "01_tiny"
SOURCE = """# %% tags=["parameters"]
profile = "default"

# %%
print(profile)
"""
RUN_1 = {"quick/a/01_tiny/t.csv": "value\n1\n", "quick/a/01_tiny/meta.json": '{"run": 1}', "quick/b/01_tiny/meta.json": '{"run": 1}'}
RUN_1 |= {"quick/figures/01_tiny/f.png": "png 1"}
RUN_2 = {"quick/a/01_tiny/t.csv": "value\n2\n", "quick/a/01_tiny/meta.json": '{"run": 2}', "quick/c/01_tiny/meta.json": '{"run": 2}'}
RUN_2 |= {"quick/figures/01_tiny/f.png": "png 2"}


@pytest.fixture
def book(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    book_of(tmp_path, monkeypatch, {CHAPTER: SOURCE})
    yield tmp_path
    sources.declared_parameters.cache_clear()


def run(monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    """Run the chapter through the runner with a stand-in for papermill that writes `files` (label -> text) where the
    chapter writes its results, as the chapter's recorded outputs."""

    def execute_notebook(source: str, executed: str, **_: object) -> None:
        staged = Path(os.environ[STAGING])
        for label, text in files.items():
            (staged / label).parent.mkdir(parents=True, exist_ok=True)
            (staged / label).write_text(text)
            provenance.record("output", staged / label, label)
        shutil.copyfile(source, executed)

    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)
    execute.run_chapter(CHAPTER, {"profile": "quick"}, Edition("quick"), {"source": "tiny"})


def state() -> dict[str, bytes]:
    """Every file of the results folder and the edition's entry and executed notebook, by path (hidden ones included)."""
    edition = Edition("quick")
    files = [p for p in results_dir().rglob("*") if p.is_file()] + [edition.entry(CHAPTER), edition.notebook(CHAPTER)]
    return {str(p): p.read_bytes() for p in files if p.is_file()}


def published(files: dict[str, str]) -> bool:
    """Whether the results folder holds exactly these files (label -> text)."""
    return files == {str(p.relative_to(results_dir())): p.read_text() for p in results_dir().rglob("*") if p.is_file()}


@contextmanager
def refuse_changes(path: Path) -> Iterator[None]:
    """Make path refuse changes for the test's process: immutable (chattr +i) as root, whom permissions do not stop;
    otherwise read-only (a folder, or the folder of a file: chmod 0o555). Skips the test when neither can be made."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("root, and chattr +i does not work here: nothing can be made unwritable")
        undo = ["chattr", "-i", str(path)]
    else:
        folder = path if path.is_dir() else path.parent
        folder.chmod(0o555)
        undo = ["chmod", "0755", str(folder)]
    try:
        yield
    finally:
        subprocess.run(undo, check=True)


def assert_kept(before: dict[str, bytes], err: pytest.ExceptionInfo[BookError], path: Path) -> None:
    message = str(err.value)
    assert "\n" not in message and str(path) in message and f"run chapter {CHAPTER} again" in message
    assert "keeps its last good run" in message
    assert state() == before  # old results, entry and executed notebook byte for byte
    assert not list(results_dir().rglob(".*")) and not (results_dir() / "quick" / "c").exists()  # nothing temporary or new left
    assert not Edition("quick").running(CHAPTER).exists()


def test_a_result_folder_that_cannot_be_replaced_keeps_the_last_good_run(book, monkeypatch):
    run(monkeypatch, RUN_1)
    before = state()
    locked = results_dir() / "quick" / "b" / CHAPTER
    with refuse_changes(locked):
        with pytest.raises(BookError) as err:
            run(monkeypatch, RUN_2)
        assert_kept(before, err, locked)
    run(monkeypatch, RUN_2)  # once it can be replaced, the next run publishes
    assert published(RUN_2)


def test_an_unwritable_meta_json_keeps_the_last_good_run(book, monkeypatch):
    run(monkeypatch, RUN_1)
    before = state()
    meta = results_dir() / "quick" / "a" / CHAPTER / "meta.json"
    with refuse_changes(meta):
        with pytest.raises(BookError) as err:
            run(monkeypatch, RUN_2)
        assert_kept(before, err, meta if os.geteuid() == 0 else meta.parent)


def test_a_results_folder_that_takes_no_new_folder_keeps_the_last_good_run(book, monkeypatch):
    run(monkeypatch, RUN_1)
    before = state()
    edition_results = results_dir() / "quick"  # run 2 writes for a new model, c: its folder would be made here
    with refuse_changes(edition_results):
        with pytest.raises(BookError) as err:
            run(monkeypatch, RUN_2)
        assert_kept(before, err, edition_results)


def test_a_swap_that_fails_midway_puts_back_every_folder_and_the_entry(book, monkeypatch):
    run(monkeypatch, RUN_1)
    before = state()
    new = results_dir() / "quick" / "c" / CHAPTER
    rename = os.rename

    def failing(src, dst, *args, **kwargs):
        if Path(dst) == new:  # the last folder swapped in (a model's the last run did not have): the others are swapped already
            raise OSError(errno.EIO, "Input/output error", str(dst))
        return rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", failing)
    with pytest.raises(BookError) as err:
        run(monkeypatch, RUN_2)
    assert_kept(before, err, new)
    assert "Input/output error" in str(err.value)


def cross_device(monkeypatch: pytest.MonkeyPatch, build: Path, results: Path) -> None:
    """Renames between the build folder and the results folder fail as between two file systems."""

    def across(rename):
        def moved(src, dst, *args, **kwargs):
            if {Path(src).resolve().is_relative_to(build), Path(dst).resolve().is_relative_to(build)} == {True, False}:
                raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(src), None, str(dst))
            return rename(src, dst, *args, **kwargs)

        return moved

    monkeypatch.setattr(os, "rename", across(os.rename))
    monkeypatch.setattr(os, "replace", across(os.replace))


def test_results_on_another_file_system_than_the_build_are_published(book, monkeypatch):
    cross_device(monkeypatch, (book / "build").resolve(), results_dir())
    run(monkeypatch, RUN_1)
    run(monkeypatch, RUN_2)
    assert published(RUN_2)
    assert Edition("quick").entry(CHAPTER).is_file() and not Edition("quick").running(CHAPTER).exists()


def test_results_on_a_real_second_file_system_are_published(book, monkeypatch):
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK) or os.stat(shm).st_dev == os.stat(book).st_dev:
        pytest.skip("no writable /dev/shm on another file system than the test's folder")
    build = shm / f"book-publication-{uuid.uuid4().hex}"
    monkeypatch.setenv("BOOK_BUILD_DIR", str(build))
    try:
        run(monkeypatch, RUN_1)
        run(monkeypatch, RUN_2)
        assert published(RUN_2)
        assert Edition("quick").entry(CHAPTER).is_file()
    finally:
        shutil.rmtree(build, ignore_errors=True)
