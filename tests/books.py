"""Tiny books for the edition tests: chapters of a few lines in a notebooks folder of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.core import profiles, sources


def book_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chapters: dict[str, str]) -> Path:
    """A book whose chapters are `chapters` (name → py:percent text), with quick and paper profiles that change nothing,
    built into tmp_path/build with results in tmp_path/results; the notebooks folder."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name, text in chapters.items():
        (folder / f"{name}.py").write_text(text)
    monkeypatch.setattr(sources, "NOTEBOOKS", folder)
    monkeypatch.setenv("BOOK_NOTEBOOKS_DIR", str(folder))  # for processes the build starts (`runner --jobs`)
    sources.declared_parameters.cache_clear()
    (tmp_path / "profiles").mkdir()
    for profile in ("quick", "paper"):
        (tmp_path / "profiles" / f"{profile}.yaml").write_text("")
    monkeypatch.setattr(profiles, "PROFILES", tmp_path / "profiles")
    monkeypatch.setenv("BOOK_PROFILES_DIR", str(tmp_path / "profiles"))
    monkeypatch.setenv("BOOK_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)  # the runner sets it; undone after the test
    return folder
