"""The repository's licence and citation files: present, consistent with each other and with the package metadata."""

from __future__ import annotations

import datetime as dt
import re

import tomllib
import yaml

from lib.settings import REPO_ROOT


def _citation() -> dict:
    return yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def test_citation_file_has_what_cff_1_2_requires_and_matches_the_package():
    cff, project = _citation(), tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0"
    assert {"cff-version", "message", "title", "authors"} <= set(cff) and cff["message"].strip() and cff["title"].strip()
    assert all(isinstance(a, dict) and (a.get("name") or a.get("family-names")) for a in cff["authors"])
    assert str(cff["version"]) == project["version"] and cff["license"] == project["license"]["text"]
    released = cff["date-released"]
    assert isinstance(released, dt.date) or re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(released))
    assert cff["type"] in ("software", "dataset")


def test_cited_papers_are_the_books_references():
    """The three papers the book re-runs appear in CITATION.cff with the titles and years of book/references.bib."""
    bib = (REPO_ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    entries = {
        re.sub(r"[{}]", "", m.group("title")).lower(): int(m.group("year"))
        for m in re.finditer(r"title = \{(?P<title>.+?)\},\n(?:.*\n)*?\s*year = \{(?P<year>\d{4})\}", bib)
    }
    references = _citation()["references"]
    assert len(references) == 3
    for ref in references:
        assert ref["type"] and ref["authors"] and all(a.get("family-names") and a.get("given-names") for a in ref["authors"])
        assert entries.get(ref["title"].lower()) == ref["year"], ref["title"]


def test_licence_files_name_the_licences():
    assert (REPO_ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    content = (REPO_ROOT / "LICENSE-CONTENT.md").read_text(encoding="utf-8")
    assert "CC BY 4.0" in content and "creativecommons.org/licenses/by/4.0/legalcode" in content
