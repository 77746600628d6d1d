"""The book is citable per release: Zenodo's metadata (.zenodo.json) agrees with CITATION.cff and names the papers by
the DOIs the bibliography records; the release workflow attaches the editions' downloads to a published release; a DOI
set in $BOOK_DOI reaches the front page, and a malformed one stops with one line."""

from __future__ import annotations

import json
import re

import pytest
import tomllib
import yaml

from lib.edition import front_page
from lib.errors import BookError
from lib.settings import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
DOI = re.compile(r"10\.\d{4,9}/[-._;()/:A-Za-z0-9]+")  # Crossref's pattern, as edition_note checks $BOOK_DOI


def _zenodo() -> dict:
    return json.loads((REPO_ROOT / ".zenodo.json").read_text(encoding="utf-8"))


def _citation() -> dict:
    return yaml.safe_load((REPO_ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def _bibliography() -> dict[str, str]:
    """Title (lower case, without braces) -> DOI, for every entry of book/references.bib that records a DOI."""
    bib = (REPO_ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    out = {}
    for entry in re.split(r"\n(?=@)", bib):
        title, doi = re.search(r"^\s*title = \{(.+)\},?$", entry, re.M), re.search(r"^\s*doi = \{(.+?)\},?$", entry, re.M)
        if title and doi:
            out[re.sub(r"[{}]", "", title.group(1)).lower()] = doi.group(1)
    return out


def _workflow(name: str) -> dict:
    workflow = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads the key `on` as true
    return workflow


def test_zenodo_metadata_has_what_zenodo_requires_and_matches_the_citation_file():
    zenodo, cff = _zenodo(), _citation()
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert zenodo["title"] == cff["title"] == "The geometry of transformer embeddings, re-run"
    assert zenodo["description"] == cff["abstract"] and len(zenodo["description"]) > 100
    assert zenodo["upload_type"] == "software"
    assert [c["name"] for c in zenodo["creators"]] == [a["name"] for a in cff["authors"]] == ["The book's contributors"]
    assert zenodo["license"] == cff["license"] == project["license"]["text"] == "MIT"  # the code's licence
    assert "MIT" in zenodo["notes"] and "CC BY 4.0" in zenodo["notes"] and "LICENSE-CONTENT.md" in zenodo["notes"]  # and the content's
    assert zenodo["keywords"] == cff["keywords"] and zenodo["access_right"] == "open"
    assert "doi" not in zenodo  # Zenodo mints it; a DOI written here would be a guess
    if "doi" in cff:  # once minted, CITATION.cff names it as a bare DOI
        assert DOI.fullmatch(str(cff["doi"])), cff["doi"]


def test_zenodo_names_the_three_papers_by_the_dois_the_bibliography_records():
    dois = _bibliography()
    papers = {dois[ref["title"].lower()] for ref in _citation()["references"]}  # a paper without a recorded DOI: KeyError
    assert papers == {"10.18653/v1/2021.acl-long.413", "10.18653/v1/2021.naacl-main.403", "10.18653/v1/2022.insights-1.1"}
    related = _zenodo()["related_identifiers"]
    assert {r["identifier"] for r in related} == papers and len(related) == 3
    for r in related:
        assert r["relation"] in ("isSupplementTo", "references") and r.get("scheme", "doi") == "doi"
        assert DOI.fullmatch(r["identifier"]) and r["identifier"] in dois.values()


def test_the_release_workflow_attaches_the_editions_downloads_to_a_published_release():
    workflow, book = _workflow("release.yml"), _workflow("book.yml")
    assert workflow["on"]["release"]["types"] == ["published"]
    assert workflow["on"]["workflow_dispatch"]["inputs"]["tag"]["required"] is True
    assert workflow["permissions"] == {"contents": "write"}
    assert workflow["env"]["GH_TOKEN"] == "${{ secrets.GITHUB_TOKEN }}"
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    runs = "\n".join(s.get("run", "") for s in steps)
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["ref"] == "refs/tags/${{ env.TAG }}"  # the book as it is at the release's tag
    assert "make pdf PROFILE=$p" in runs and "make publish PROFILE=$p" in runs
    assert re.search(r'cp "\$downloads/book\.pdf" "_build/release/book-\$name\$suffix\.pdf"', runs)  # each edition's PDF
    assert 'cp "$downloads/notebooks.zip"' in runs
    upload = [s["run"] for s in steps if "gh release upload" in s.get("run", "")]
    assert upload == ['gh release upload "$TAG" _build/release/* --repo "$GITHUB_REPOSITORY" --clobber']
    # the same pinned actions as book.yml, and only make targets the Makefile has
    pinned = {s["uses"] for job in book["jobs"].values() for s in job["steps"] if "uses" in s}
    assert {s["uses"] for s in steps if "uses" in s} <= pinned
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    targets = {line.split(":")[0] for line in makefile.splitlines() if line and not line[0].isspace() and ":" in line}
    assert set(re.findall(r"\bmake (\w+)", runs)) <= targets


NOTE_DOI = "10.5281/zenodo.1234567"


def test_a_doi_in_book_doi_reaches_the_front_page_with_its_link(monkeypatch):
    monkeypatch.setenv("BOOK_DOI", f"  {NOTE_DOI}\n")  # as pasted: surrounding spaces are not part of it
    note = front_page.edition_note("quick")
    assert note.endswith(f":::\n\nCite this book: [doi:{NOTE_DOI}](https://doi.org/{NOTE_DOI})\n")
    monkeypatch.setenv("BOOK_DOI", "10.1002/(SICI)1097-4571(199806)49:8")  # a DOI's parentheses must not end the link early
    note = front_page.edition_note("quick")
    assert "(https://doi.org/10.1002/%28SICI%291097-4571%28199806%2949:8)" in note


def test_without_book_doi_the_front_page_names_no_doi(monkeypatch):
    monkeypatch.delenv("BOOK_DOI", raising=False)
    unset = front_page.edition_note("quick")
    assert "Cite this book" not in unset and "doi.org" not in unset and unset.endswith("it read.\n:::\n")
    for empty in ("", "  "):  # an unset repository variable reaches the workflow as an empty string
        monkeypatch.setenv("BOOK_DOI", empty)
        assert front_page.edition_note("quick") == unset


@pytest.mark.parametrize(
    "value",
    ["https://doi.org/10.5281/zenodo.1234567", "doi:10.5281/zenodo.1234567", "10.5281", "10.5281/", "11.5281/zenodo.1", "10.52/zenodo.1", "10.5281/zenodo 1"],
)
def test_a_malformed_book_doi_stops_with_one_line(monkeypatch, value):
    monkeypatch.setenv("BOOK_DOI", value)
    with pytest.raises(BookError) as err:
        front_page.edition_note("quick")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"BOOK_DOI={value!r} is not a DOI")
    assert "10.<registrant digits>/<suffix>" in message and "unset it" in message


def test_the_container_image_is_pinned_by_digest_with_its_tag():
    line = next(line for line in (REPO_ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines() if line.startswith("FROM "))
    assert re.fullmatch(r"FROM python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", line), line
