"""Tiny books for the edition tests: chapters of a few lines in a notebooks folder of their own; and the one-chapter
page book (`PAGE_CHAPTER`) with a repository root of its own, which the page tests share (conftest.py: `page_book`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from lib.core import profiles, sources
from lib.edition import chapter_notes, commit, publishing, schedule, staging
from lib.edition.folders import Edition
from lib.settings import REPO_ROOT


def book_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chapters: dict[str, str]) -> Path:
    """A book whose chapters are `chapters` (name → py:percent text), with quick and paper profiles that change nothing,
    built into tmp_path/build with results in tmp_path/results; the notebooks folder."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name, text in chapters.items():
        (folder / f"{name}.py").write_text(text)
    (tmp_path / "profiles").mkdir()
    for profile in ("quick", "paper"):
        (tmp_path / "profiles" / f"{profile}.yaml").write_text("")
    return point_at(tmp_path, monkeypatch)


def point_at(base: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the library, and the processes a build starts, at the book in base (`book_of`): its notebooks, profiles,
    build and results folders; undone with monkeypatch. The notebooks folder."""
    folder = base / "notebooks"
    monkeypatch.setattr(sources, "NOTEBOOKS", folder)
    monkeypatch.setenv("BOOK_NOTEBOOKS_DIR", str(folder))  # for processes the build starts (`runner --jobs`)
    sources.declared_parameters.cache_clear()
    monkeypatch.setattr(profiles, "PROFILES", base / "profiles")
    monkeypatch.setenv("BOOK_PROFILES_DIR", str(base / "profiles"))
    monkeypatch.setenv("BOOK_BUILD_DIR", str(base / "build"))
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(base / "results"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "")  # recorded, so that the undo removes the "0" a run sets (delenv alone records nothing when unset)
    monkeypatch.delenv("SOURCE_DATE_EPOCH")  # the runner sets it; undone after the test
    return folder


PAGE_CHAPTER = """# %% [markdown]
# # A page chapter
#
# Prose; the scores are in {numref}`tbl-01-scores` and the line in {numref}`fig-01-line`.

# %% tags=["parameters"]
profile = "default"
n = 3  # a number the chapter shows

# %%
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from lib.book import figure_labels, tables
from lib.book.results import Results

frame = pd.DataFrame({"model": ["tiny model", "Biš"], "mean_cosine": [0.5, 0.25], "model_outlier": [True, False]})
tables.show(frame, "Scores of the models (✓ ◐ ≥)", name="scores")
tables.show(frame.head(1), "The first model")
display(Markdown(":::{table} Computed prose\\n:name: tbl-01-computed\\n\\n| computed | table |\\n|---|---|\\n| 1 | 2 |\\n:::"))
fig, ax = plt.subplots()
ax.plot([0, n])
Results("01_page", profile).figure(fig, "line", "A line that rises.")

# %%
for model in ("model a", "model b"):
    tables.show(frame.head(1), f"{model}: its row", tab=model)
    fig, ax = plt.subplots()
    ax.plot([n, ord(model[-1]) - 97])  # a different line per model
    Results("01_page", profile).figure(fig, f"fall {model}", f"{model}: a line that falls.", tab=model)
"""


def book_with_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chapter: str = PAGE_CHAPTER) -> Edition:
    """A one-chapter book (`chapter`, as 01_page) and a repository root of its own (config, table of contents, front
    page), executed in the quick edition."""
    book_of(tmp_path, monkeypatch, {"01_page": chapter})
    root = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "book" / "static", root / "book" / "static")  # the repository's, whatever a test has patched
    shutil.copy(REPO_ROOT / "_config.yml", root / "_config.yml")
    shutil.copy(REPO_ROOT / "book" / "references.bib", root / "book" / "references.bib")
    toc = {"format": "jb-book", "root": "book/intro", "parts": [{"caption": "Chapters", "numbered": True, "chapters": [{"file": "book/chapters/01_page"}]}]}
    (root / "book" / "intro.md").write_text("# A tiny book\n\nIntroduction first.\n\n<!-- edition and verdicts -->\n")
    (root / "book" / "rerun.md").write_text("# How to re-run\n\nRun it.\n")
    (root / "book" / "build_report.md").write_text("# placeholder\n")
    toc["parts"].append({"caption": "About", "chapters": [{"file": "book/rerun"}, {"file": "book/build_report"}]})
    (root / "_toc.yml").write_text(yaml.safe_dump(toc))
    _point_root_at(root, monkeypatch)
    schedule.build("quick", [("01_page", {"profile": "quick"})])
    return Edition("quick")


def _point_root_at(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (commit, chapter_notes, staging, publishing):
        monkeypatch.setattr(module, "REPO_ROOT", root)
    monkeypatch.setattr(staging, "STATIC", root / "book" / "static")


def built_page_book(base: Path) -> Path:
    """The page book (`book_with_pages` with `PAGE_CHAPTER`) executed and built to HTML in base, with every module
    attribute and variable it set undone: `open_page_book` points a test at it. base."""
    with pytest.MonkeyPatch.context() as patch:
        publishing.build_html(book_with_pages(base, patch))
    sources.declared_parameters.cache_clear()
    return base


def open_page_book(base: Path, monkeypatch: pytest.MonkeyPatch) -> Edition:
    """The quick edition of the page book built in base (`built_page_book`), with the library pointed at it for one
    test (undone with monkeypatch)."""
    point_at(base, monkeypatch)
    _point_root_at(base / "repo", monkeypatch)
    return Edition("quick")


def fingerprint(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file under folder with its size and modification time: what a test that only reads must leave as it was."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}
